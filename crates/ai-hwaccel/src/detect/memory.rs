//! /proc/meminfo and per-NUMA-node meminfo parsing.

use std::collections::BTreeMap;

/// Values of a meminfo file, in bytes (sizes) or counts (`HugePages_*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meminfo {
    /// Every `Key: value [kB]` line; sizes converted from kB to bytes.
    pub values: BTreeMap<String, u64>,
}

impl Meminfo {
    /// A value by its meminfo key (`MemTotal`, `MemAvailable`, …).
    pub fn get(&self, key: &str) -> Option<u64> {
        self.values.get(key).copied()
    }
}

/// Parse /proc/meminfo or /sys/devices/system/node/nodeN/meminfo
/// (`Node 0 MemTotal:  65845116 kB`). Lines that do not parse are skipped;
/// `kB` values are KiB (the kernel's `show_val_kb` prints pages << (PAGE_SHIFT-10)).
pub fn parse_meminfo(text: &str) -> Meminfo {
    let mut values = BTreeMap::new();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        // Per-node files prefix each key with "Node N ".
        let key = match key.strip_prefix("Node ") {
            Some(k) => k.split_once(' ').map_or(k, |(_, k)| k).trim(),
            None => key,
        };
        let mut it = rest.split_whitespace();
        let Some(Ok(n)) = it.next().map(str::parse::<u64>) else {
            continue;
        };
        let v = match it.next() {
            Some(u) if u.eq_ignore_ascii_case("kb") => n.checked_mul(1024),
            Some(_) => None,
            None => Some(n),
        };
        if let Some(v) = v {
            values.insert(key.to_string(), v);
        }
    }
    Meminfo { values }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_and_node_forms() {
        let m = parse_meminfo(
            "MemTotal:       24684092 kB\nMemAvailable:   24480632 kB\nHugePages_Total:    2048\nbogus line\nX: y kB\n",
        );
        assert_eq!(m.get("MemTotal"), Some(24684092 * 1024));
        assert_eq!(m.get("MemAvailable"), Some(24480632 * 1024));
        assert_eq!(m.get("HugePages_Total"), Some(2048));
        assert_eq!(m.get("X"), None);
        let n = parse_meminfo(
            "Node 1 MemTotal:        5073108 kB\nNode 1 MemFree:         4935156 kB\n",
        );
        assert_eq!(n.get("MemTotal"), Some(5073108 * 1024));
        assert_eq!(n.get("MemFree"), Some(4935156 * 1024));
    }

    #[test]
    fn overflow_is_dropped_not_wrapped() {
        let m = parse_meminfo("MemTotal: 18446744073709551615 kB\n");
        assert_eq!(m.get("MemTotal"), None);
    }
}
