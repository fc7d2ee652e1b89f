//! Pure parsers for the small value formats of sysfs and procfs files,
//! shared by every backend.

/// Parse a kernel CPU list (`0-3,8,10-11`) into sorted, deduplicated CPU
/// numbers. Returns `None` on any malformed part. An empty string is an empty list.
/// Ranges are bounded (at most 65,536 CPUs in total) so a hostile file cannot
/// make us allocate without limit.
pub fn parse_cpulist(s: &str) -> Option<Vec<u32>> {
    const MAX_CPUS: usize = 65_536;
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        if b < a || (b - a) as usize >= MAX_CPUS || out.len() + ((b - a) as usize) > MAX_CPUS {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The kernel's CPU-list spelling of `cpus` (`0-3,8,10-11`): the inverse
/// of [`parse_cpulist`] for sorted, deduplicated input.
pub fn format_cpulist(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Parse a hexadecimal id as sysfs prints it (`0x10de`), with or without `0x`.
pub fn parse_hex(s: &str) -> Option<u32> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty() || t.len() > 8 {
        return None;
    }
    u32::from_str_radix(t, 16).ok()
}

/// [`parse_hex`] for 16-bit ids (PCI vendor/device ids); larger values are `None`.
pub fn parse_hex_u16(s: &str) -> Option<u16> {
    parse_hex(s).and_then(|v| u16::try_from(v).ok())
}

/// Parse a PCIe link speed file (`16.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s`) into
/// GT/s. `Unknown` and anything unparsable are `None`.
pub fn parse_link_speed(s: &str) -> Option<f64> {
    let t = s.trim();
    let num = t.split_whitespace().next()?;
    let unit_ok = t.contains("GT/s");
    let v: f64 = num.parse().ok()?;
    (unit_ok && v.is_finite() && v > 0.0 && v < 1000.0).then_some(v)
}

/// Parse a PCIe link width file (`16`, `x16`); 0 and garbage are `None`.
pub fn parse_link_width(s: &str) -> Option<u32> {
    let t = s.trim().trim_start_matches(['x', 'X']);
    t.parse::<u32>().ok().filter(|&w| w > 0 && w <= 32)
}

/// Parse a NUMA node file: `-1` (no affinity) and garbage are `None`.
pub fn parse_numa_node(s: &str) -> Option<u32> {
    s.trim()
        .parse::<i64>()
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n < 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_round_trip() {
        for text in ["0-47,96-143", "0", "", "1,3,5-7", "0-3,8,10-11"] {
            assert_eq!(format_cpulist(&parse_cpulist(text).unwrap()), text);
        }
    }

    #[test]
    fn cpulists() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("\n"), Some(vec![]));
        assert_eq!(parse_cpulist("5,1-2,2"), Some(vec![1, 2, 5]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a-b"), None);
        assert_eq!(parse_cpulist("0-4294967295"), None);
        assert_eq!(parse_cpulist("1,,2"), Some(vec![1, 2]));
    }

    #[test]
    fn hex_ids() {
        assert_eq!(parse_hex("0x10de\n"), Some(0x10de));
        assert_eq!(parse_hex("030200"), Some(0x030200));
        assert_eq!(parse_hex("0x"), None);
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex(""), None);
    }

    #[test]
    fn link_values() {
        assert_eq!(parse_link_speed("16.0 GT/s PCIe\n"), Some(16.0));
        assert_eq!(parse_link_speed("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_link_speed("8 GT/s"), Some(8.0));
        assert_eq!(parse_link_speed("Unknown"), None);
        assert_eq!(parse_link_speed("Unknown speed"), None);
        assert_eq!(parse_link_speed("NaN GT/s"), None);
        assert_eq!(parse_link_width("16\n"), Some(16));
        assert_eq!(parse_link_width("0"), None);
        assert_eq!(parse_link_width("255"), None);
        assert_eq!(parse_numa_node("-1\n"), None);
        assert_eq!(parse_numa_node("1"), Some(1));
        assert_eq!(parse_numa_node("x"), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,64}") {
            let _ = parse_cpulist(&s);
            let _ = parse_hex(&s);
            let _ = parse_link_speed(&s);
            let _ = parse_link_width(&s);
            let _ = parse_numa_node(&s);
        }
    }
}
