//! Parser for the plain-text report of `nvidia-smi -q` (`--query`): one
//! device per `GPU <bus id>` block, one per `MIG Device` block, with the
//! same fields as the XML parser ([`super::smi_xml`]) fills.
//!
//! The report is an indentation tree: `Key : value` lines and section
//! headers without a value, nested by indentation. Indentation and the key
//! column width differ between driver versions, so the tree is read by
//! relative indentation ([`Tree::read`]) and facts are looked up by key path.
//! Keys moved between driver versions (power limits under `Power Readings`,
//! `GPU Power Readings` or, from driver 610, `GPU Power Readings` → `GPU
//! Ceiling Power Limit`; volatile ECC as `Double Bit` → `Total` or as
//! `… Uncorrectable …` counters), so each fact is looked up along every
//! path it has had. Absent and `N/A` values stay `None`.

use crate::detect::ParseOutput;
use crate::detect::sysfs::parse_hex;
use crate::model::{Device, Family, MEMORY_RESERVED_KEY, PcieLink};

use super::{
    VENDOR, enabled, gen_to_gts, gpu_id, known, mig_device, mig_profile_from_name, parse_enabled,
    parse_memory, parse_uint, parse_with_unit, read_checked, sort_gpus_then_migs, tool_pci_address,
    tool_pci_info,
};

/// Source name of devices from this parser (the same tool as the XML parser).
const SOURCE: &str = "nvidia-smi";

/// Width a tab counts for when measuring indentation (nvidia-smi indents
/// with spaces; a tab only appears in hand-edited copies).
const TAB_WIDTH: usize = 4;

/// One line of the report: a key, its value (`None` for a section header)
/// and the lines indented under it, in input order (repeated keys such as
/// `MIG Device` or `GPU 0000…` stay separate entries).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry<'a> {
    /// The key, trimmed.
    pub key: &'a str,
    /// The text after the key's colon, trimmed; `None` for a header line.
    pub value: Option<&'a str>,
    /// Index (into [`Tree::entries`]) of the first entry nested under this one.
    first_child: Option<usize>,
    /// Index of the last entry nested under this one (where the next one is linked).
    last_child: Option<usize>,
    /// Index of the next entry with the same parent.
    next_sibling: Option<usize>,
}

impl<'a> Entry<'a> {
    fn new(key: &'a str, value: Option<&'a str>) -> Self {
        Entry {
            key,
            value,
            first_child: None,
            last_child: None,
            next_sibling: None,
        }
    }
}

/// A generic indentation tree over borrowed text. Entry 0 is a synthetic
/// root holding the top-level lines.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tree<'a> {
    /// Every entry; index 0 is the root.
    pub entries: Vec<Entry<'a>>,
}

/// Index of the root entry of a [`Tree`].
pub(crate) const ROOT: usize = 0;

impl<'a> Tree<'a> {
    /// Read `text` into a tree. A line is a child of the nearest earlier
    /// line with less indentation, so any indentation step works (4 spaces
    /// in nvidia-smi, other widths in copies). Blank lines are skipped;
    /// `\r` before `\n` is dropped. Never fails: every non-blank line
    /// becomes an entry.
    pub(crate) fn read(text: &'a str) -> Self {
        // Children are linked lists (first child, next sibling), so reading
        // allocates once for the entries rather than once per section.
        let mut entries = Vec::with_capacity(text.len() / 48 + 1);
        entries.push(Entry::new("", None));
        // (indentation, entry index) of the open ancestors; the root is below every line.
        let mut open: Vec<(usize, usize)> = Vec::new();
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let body = line.trim_start_matches([' ', '\t']);
            if body.trim_ascii().is_empty() {
                continue;
            }
            let indent: usize = line[..line.len() - body.len()]
                .chars()
                .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
                .sum();
            let (key, value) = split_key_value(body);
            while open.last().is_some_and(|&(i, _)| i >= indent) {
                open.pop();
            }
            let parent = open.last().map_or(ROOT, |&(_, e)| e);
            let idx = entries.len();
            entries.push(Entry::new(key, value));
            match entries[parent].last_child.replace(idx) {
                Some(prev) => entries[prev].next_sibling = Some(idx),
                None => entries[parent].first_child = Some(idx),
            }
            open.push((indent, idx));
        }
        Tree { entries }
    }

    /// The children of entry `at` (none for an index out of range).
    pub(crate) fn children(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self.entries.get(at).and_then(|e| e.first_child);
        std::iter::successors(first, |&c| self.entries.get(c).and_then(|e| e.next_sibling))
    }

    /// The key of entry `at` (empty for an index out of range).
    pub(crate) fn key(&self, at: usize) -> &'a str {
        self.entries.get(at).map_or("", |e| e.key)
    }

    /// The value of entry `at`, if it has one.
    pub(crate) fn value(&self, at: usize) -> Option<&'a str> {
        self.entries.get(at).and_then(|e| e.value)
    }

    /// The first child of `at` whose key is `key` (ASCII case-insensitive:
    /// `Gpu` and `GPU` both occur across driver versions).
    pub(crate) fn child(&self, at: usize, key: &str) -> Option<usize> {
        self.children(at)
            .find(|&c| self.key(c).eq_ignore_ascii_case(key))
    }

    /// The entry at `path` below `at`, following the first match at each step.
    pub(crate) fn path(&self, at: usize, path: &[&str]) -> Option<usize> {
        path.iter().try_fold(at, |n, k| self.child(n, k))
    }

    /// The raw value at `path` below `at`.
    pub(crate) fn raw(&self, at: usize, path: &[&str]) -> Option<&'a str> {
        self.value(self.path(at, path)?)
    }

    /// The value at `path` below `at`, if known (not `N/A` and the like).
    pub(crate) fn text(&self, at: usize, path: &[&str]) -> Option<String> {
        known(self.raw(at, path)?).map(str::to_string)
    }
}

/// Split `Key   : value` at the first colon followed by a space or the end
/// of the line (a colon inside a bus id such as `GPU 00000000:53:00.0` is
/// followed by a digit and belongs to the key). No such colon: a header.
fn split_key_value(body: &str) -> (&str, Option<&str>) {
    let bytes = body.as_bytes();
    let sep = body
        .match_indices(':')
        .map(|(i, _)| i)
        .find(|&i| bytes.get(i + 1).is_none_or(|n| *n == b' ' || *n == b'\t'));
    match sep {
        Some(i) => (body[..i].trim_ascii(), Some(body[i + 1..].trim_ascii())),
        None => (body.trim_ascii(), None),
    }
}

/// The leading version number of a value such as `13.3 [Deprecated; will be
/// removed in CUDA 14.0. Use CUDA UMD Version instead]` (driver 610 and
/// later append that note to `Driver Version` and `CUDA Version`).
fn version_number(v: &str) -> Option<String> {
    let first = known(v)?.split_whitespace().next()?;
    (!first.starts_with('[')).then(|| first.to_string())
}

/// Parse the text of `nvidia-smi -q`. Never panics: a truncated report
/// yields the devices read so far, and a report whose `Attached GPUs` count
/// differs from the GPU blocks present gets a warning.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let text = crate::model::text::decode(bytes);
    let tree = Tree::read(&text);
    let mut out = ParseOutput::default();
    parse_tree(&tree, &mut out);
    out
}

fn parse_tree(t: &Tree, out: &mut ParseOutput) {
    let version = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| t.raw(ROOT, &[k]).and_then(version_number))
    };
    let driver_version = version(&["Driver Version", "KMD Version"]);
    let cuda_version = version(&["CUDA Version", "CUDA UMD Version"]);
    let attached = t.raw(ROOT, &["Attached GPUs"]).and_then(parse_uint);
    let blocks: Vec<usize> = t
        .children(ROOT)
        .filter(|&c| t.value(c).is_none() && t.key(c).starts_with("GPU "))
        .collect();
    let mut gpus: Vec<Device> = Vec::new();
    let mut migs: Vec<Device> = Vec::new();
    for (pos, &g) in blocks.iter().enumerate() {
        if crate::detect::formats::device_cap_reached(pos, "nvidia-smi -q", &mut out.warnings) {
            break;
        }
        let mut d = parse_gpu(t, g, pos, &mut out.warnings);
        d.driver_version.clone_from(&driver_version);
        if let Some(c) = &cuda_version {
            d.extra.insert("cuda_driver_version".to_string(), c.clone());
        }
        migs.extend(parse_migs(t, g, &d));
        gpus.push(d);
    }
    if gpus.is_empty() {
        let first = t
            .children(ROOT)
            .next()
            .map_or(String::new(), |c| match t.value(c) {
                Some(v) => format!("{}: {v}", t.key(c)),
                None => t.key(c).to_string(),
            });
        out.warnings.push(format!(
            "nvidia-smi -q: no `GPU <bus id>` block (first line: {first:?})"
        ));
    }
    if let Some(n) = attached {
        // Fewer blocks than attached GPUs: a report of selected GPUs (`-q -i
        // N`, which still prints the machine's count) or a truncated one;
        // the output cannot tell which. More blocks is no report of nvidia-smi's.
        if usize::try_from(n).ok() != Some(gpus.len()) {
            let why = if usize::try_from(n).is_ok_and(|n| n > gpus.len()) {
                "a report of selected GPUs (`-i`) or a truncated one: only these are known"
            } else {
                "incomplete or inconsistent report"
            };
            out.warnings.push(format!(
                "nvidia-smi -q: `Attached GPUs` says {n}, {} GPU block(s) present ({why})",
                gpus.len()
            ));
        }
    }
    out.devices.extend(gpus);
    out.devices.extend(migs);
    sort_gpus_then_migs(&mut out.devices);
    out.cap_devices("nvidia-smi -q");
}

fn parse_gpu(t: &Tree, g: usize, pos: usize, warnings: &mut Vec<String>) -> Device {
    let header_bus = t.key(g).strip_prefix("GPU ").map(str::trim);
    let bus_text = t
        .text(g, &["PCI", "Bus Id"])
        .or_else(|| header_bus.and_then(known).map(str::to_string));
    let addr = tool_pci_address(bus_text.as_deref(), "nvidia-smi -q", pos, warnings);
    let uuid = t.text(g, &["GPU UUID"]);
    let id = gpu_id(addr, uuid.as_deref(), pos as u64);
    let name = t
        .text(g, &["Product Name"])
        .unwrap_or_else(|| "NVIDIA GPU".to_string());
    let mut d = Device::new(id, name, VENDOR, Family::Gpu, SOURCE);
    d.pci_address = addr;
    d.index = u32::try_from(pos).ok();
    d.uuid = uuid;
    d.serial = t.text(g, &["Serial Number"]);
    d.architecture = t.text(g, &["Product Architecture"]);
    d.firmware_version = t.text(g, &["VBIOS Version"]);
    d.compute_capability = ["CUDA Compute Capability", "Compute Capability"]
        .iter()
        .find_map(|k| t.text(g, &[k]));
    let mut mem = |f: &str| {
        read_checked(
            t.raw(g, &["FB Memory Usage", f]),
            |v| parse_memory(v, "MiB"),
            || format!("nvidia-smi -q GPU {pos}: FB Memory Usage / {f}"),
            warnings,
        )
    };
    d.memory_bytes = mem("Total");
    d.memory_free_bytes = mem("Free");
    if let Some(used) = mem("Used") {
        d.extra
            .insert("memory_used_bytes".to_string(), used.to_string());
    }
    // "Reserved" (drivers of 2022 on: r510+) is not counted in "Used".
    if let Some(r) = mem("Reserved") {
        d.extra
            .insert(MEMORY_RESERVED_KEY.to_string(), r.to_string());
    }
    let link_uint = |sec: &str, f: &str| {
        t.raw(g, &["PCI", "GPU Link Info", sec, f])
            .and_then(parse_uint)
    };
    let link = PcieLink {
        current_speed_gts: link_uint("PCIe Generation", "Current").and_then(gen_to_gts),
        current_width: link_uint("Link Width", "Current").filter(|&w| w > 0),
        max_speed_gts: link_uint("PCIe Generation", "Max").and_then(gen_to_gts),
        max_width: link_uint("Link Width", "Max").filter(|&w| w > 0),
    };
    // `Device Id : 0x233010DE` is device << 16 | vendor, as in the XML.
    let hex = |f: &str| {
        t.raw(g, &["PCI", f])
            .and_then(|v| known(v).and_then(parse_hex))
    };
    d.pci = tool_pci_info(hex("Device Id"), hex("Sub System Id"), link);
    d.power_limit_watts = power_limit(t, g);
    d.temperature_celsius = read_checked(
        t.raw(g, &["Temperature", "GPU Current Temp"]),
        |v| parse_with_unit(v, &["C"]),
        || format!("nvidia-smi -q GPU {pos}: Temperature / GPU Current Temp"),
        warnings,
    );
    // `Utilization / Gpu : 37 %`; the draw under `Power Readings` (older
    // drivers: `Power Draw`) or `GPU Power Readings` (535+: `Average Power
    // Draw`, `Instantaneous Power Draw`).
    d.utilization_percent = ["Gpu", "GPU"]
        .iter()
        .find_map(|k| t.raw(g, &["Utilization", k]))
        .and_then(|v| parse_with_unit(v, &["%"]));
    d.power_draw_watts = ["GPU Power Readings", "Power Readings"]
        .iter()
        .flat_map(|sec| {
            [
                "Average Power Draw",
                "Power Draw",
                "Instantaneous Power Draw",
            ]
            .into_iter()
            .map(move |f| [*sec, f])
        })
        .find_map(|path| t.raw(g, &path).and_then(|v| parse_with_unit(v, &["W"])));
    d.ecc_enabled = t.raw(g, &["ECC Mode", "Current"]).and_then(parse_enabled);
    d.ecc_uncorrected_errors = volatile_uncorrected(t, g);
    if let Some(v) = t.raw(g, &["Persistence Mode"]).and_then(parse_enabled) {
        d.extra
            .insert("persistence_mode".to_string(), enabled(v).to_string());
    }
    if let Some(v) = t.text(g, &["Compute Mode"]) {
        d.extra.insert("compute_mode".to_string(), v);
    }
    if let Some(v) = t.raw(g, &["MIG Mode", "Current"]).and_then(parse_enabled) {
        d.extra
            .insert("mig_mode".to_string(), enabled(v).to_string());
    }
    if let Some(v) = t.text(g, &["Minor Number"]) {
        d.extra.insert("minor_number".to_string(), v);
    }
    if let Some(v) = t.text(g, &["GPU Virtualization Mode", "Virtualization Mode"]) {
        d.extra.insert("virtualization_mode".to_string(), v);
    }
    // The text report lists no NVLink peers (`nvidia-smi nvlink -s` gives
    // per-link speeds, `topo -m` the peers), so `links` stays empty.
    d
}

/// The enforced power limit: `Enforced Power Limit`, `Current Power Limit`
/// or `Power Limit` under `Power Readings` (older drivers) or `GPU Power
/// Readings`, else the current limit under `GPU Power Readings` → `GPU
/// Ceiling Power Limit` (driver 610 and later).
fn power_limit(t: &Tree, g: usize) -> Option<f64> {
    let flat = ["Power Readings", "GPU Power Readings"]
        .into_iter()
        .flat_map(|sec| {
            ["Enforced Power Limit", "Current Power Limit", "Power Limit"]
                .into_iter()
                .map(move |f| vec![sec, f])
        });
    let ceiling = std::iter::once(vec![
        "GPU Power Readings",
        "GPU Ceiling Power Limit",
        "Current Power Limit",
    ]);
    flat.chain(ceiling)
        .find_map(|p| t.raw(g, &p).and_then(|v| parse_with_unit(v, &["W"])))
}

/// Volatile uncorrected ECC errors: `Volatile` → `Double Bit` → `Total` on
/// older layouts, else the sum of the `… Uncorrectable …` counters under
/// `Volatile` (the rule of the XML parser). `None` when no counter is known.
fn volatile_uncorrected(t: &Tree, g: usize) -> Option<u64> {
    let vol = t.path(g, &["ECC Errors", "Volatile"])?;
    if let Some(total) = t.raw(vol, &["Double Bit", "Total"]) {
        return known(total)?.parse().ok();
    }
    sum_uncorrectable(t, vol)
}

/// Sum of the known values of the children of `at` whose key mentions
/// `uncorrectable`; `None` when there is none.
fn sum_uncorrectable(t: &Tree, at: usize) -> Option<u64> {
    t.children(at)
        .filter(|&c| {
            const WORD: &[u8] = b"uncorrectable";
            t.key(c)
                .as_bytes()
                .windows(WORD.len())
                .any(|w| w.eq_ignore_ascii_case(WORD))
        })
        .filter_map(|c| t.value(c).and_then(known)?.parse::<u64>().ok())
        .reduce(u64::saturating_add)
}

/// MIG instances: one per `MIG Device` entry under the GPU block, in order.
/// Their memory is the `Shared FB Memory Usage` of the GPU instance (shared
/// by its compute instances). The text names no profile on the drivers
/// captured so far; a `Profile Name` or `Name` entry is used when present.
fn parse_migs(t: &Tree, g: usize, parent: &Device) -> Vec<Device> {
    t.children(g)
        .filter(|&c| t.value(c).is_none() && t.key(c).eq_ignore_ascii_case("MIG Device"))
        .map(|m| {
            let gi = t.raw(m, &["GPU Instance ID"]).and_then(parse_uint);
            let ci = t.raw(m, &["Compute Instance ID"]).and_then(parse_uint);
            let mut d = mig_device(parent, gi, ci, SOURCE);
            d.index = t.raw(m, &["Index"]).and_then(parse_uint);
            d.uuid = t.text(m, &["UUID"]);
            if let Some(profile) = t
                .text(m, &["Profile Name"])
                .or_else(|| t.text(m, &["Name"]).and_then(|n| mig_profile_from_name(&n)))
            {
                d.name = format!("{} MIG {profile}", parent.name);
                d.partition = Some(profile);
            }
            let mem = |f: &str| {
                ["Shared FB Memory Usage", "FB Memory Usage"]
                    .iter()
                    .find_map(|sec| t.raw(m, &[sec, f]))
                    .and_then(|v| parse_memory(v, "MiB"))
            };
            d.memory_bytes = mem("Total");
            d.memory_free_bytes = mem("Free");
            d.compute_units = t
                .raw(m, &["Device Attributes", "Shared", "Multiprocessor count"])
                .and_then(parse_uint);
            d.ecc_uncorrected_errors = t
                .path(m, &["ECC Errors", "Volatile"])
                .and_then(|v| sum_uncorrectable(t, v));
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_nests_by_relative_indentation_and_keeps_repeats() {
        let text = "Top : 1\r\nGPU 00000000:01:00.0\r\n  A\r\n      B : x : y\r\n  A\r\n   \r\n      B :\r\n  C : 2\r\n";
        let t = Tree::read(text);
        let top: Vec<&str> = t.children(ROOT).map(|c| t.key(c)).collect();
        assert_eq!(top, ["Top", "GPU 00000000:01:00.0"]);
        let g = t.child(ROOT, "gpu 00000000:01:00.0").unwrap();
        assert_eq!(t.value(g), None);
        let kids: Vec<&str> = t.children(g).map(|c| t.key(c)).collect();
        assert_eq!(kids, ["A", "A", "C"]);
        assert_eq!(
            t.raw(g, &["A", "B"]),
            Some("x : y"),
            "value keeps later colons"
        );
        let second_a = t.children(g).nth(1).unwrap();
        assert_eq!(t.raw(second_a, &["B"]), Some(""));
        assert_eq!(t.text(second_a, &["B"]), None);
        assert_eq!(t.raw(g, &["C"]), Some("2"));
    }

    #[test]
    fn a_value_line_can_have_children() {
        let t = Tree::read(
            "S\n    HW Slowdown : Not Active\n        HW Thermal : Active\n    Next : 1\n",
        );
        let s = t.child(ROOT, "S").unwrap();
        assert_eq!(t.raw(s, &["HW Slowdown"]), Some("Not Active"));
        assert_eq!(t.raw(s, &["HW Slowdown", "HW Thermal"]), Some("Active"));
        assert_eq!(t.raw(s, &["Next"]), Some("1"));
    }

    #[test]
    fn version_keeps_the_number() {
        assert_eq!(
            version_number("13.3 [Deprecated; will be removed in CUDA 14.0.]").as_deref(),
            Some("13.3")
        );
        assert_eq!(version_number("N/A"), None);
        assert_eq!(version_number("[N/A] x"), None);
        assert_eq!(version_number("535.183.01").as_deref(), Some("535.183.01"));
    }

    #[test]
    fn crlf_report_reads_like_lf() {
        let lf = "Driver Version : 1.2\nCUDA Version : 3.4\nAttached GPUs : 1\nGPU 00000000:01:00.0\n    Product Name : X\n    FB Memory Usage\n        Total : 10 MiB\n";
        let crlf = lf.replace('\n', "\r\n");
        let a = parse(lf.as_bytes());
        let b = parse(crlf.as_bytes());
        assert_eq!(a, b);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.devices[0].id, "pci:0000:01:00.0");
        assert_eq!(a.devices[0].memory_bytes, Some(10 << 20));
    }

    #[test]
    fn garbage_warns() {
        let out = parse(
            b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        );
        assert!(out.devices.is_empty());
        assert!(
            out.warnings[0].contains("NVIDIA-SMI has failed"),
            "{:?}",
            out.warnings
        );
        let out = parse(b"");
        assert!(out.devices.is_empty() && !out.warnings.is_empty());
        let out = parse(&[0xff, b':', b' ', 0xfe, b'\n', b' ', 0x80]);
        assert!(out.devices.is_empty());
    }
}
