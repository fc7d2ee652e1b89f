//! `rocminfo` output (ROCm's HSA runtime report): an `HSA Agents` list of
//! `Agent N` blocks, one per CPU socket and per GPU, each a run of
//! `Key:   value` lines, then `Cache Info:`, `Pool Info:` (`Pool N` blocks
//! with `Segment:` and `Size:`) and `ISA Info:` sections.
//!
//! Only GPU agents become devices: `Device Type: GPU` (AMD), `Device Type:
//! DCU` (Hygon's DTK fork, `Vendor Name: HYGON`) and `Device Type: HCU`
//! (later DTK runtimes, `Vendor Name: C-3000`). Facts read:
//! `Name` (the gfx target, kept as `compute_capability`), `Marketing Name`,
//! `Chip ID` (the PCI device id), `Uuid` (`GPU-<16 hex>`, the id
//! `ROCR_VISIBLE_DEVICES` takes; `GPU-XX` means none), `Compute Unit`,
//! `Node` (the KFD node) and `BDFID`. Memory is the first `GLOBAL` pool
//! flagged `COARSE GRAINED` (device memory; rocminfo prints the HSA pool
//! size in bytes divided by 1024 with the label `KB`, so the figure is KiB).
//!
//! `BDFID` is `bus << 8 | device << 3 | function` without the PCI domain, so
//! it is kept as `extra.pci_bdf` (`03:00.0`) and `pci_address` stays null:
//! the domain cannot be read from the output.
//!
//! Lines are read by key, not by indentation (some saved copies lose it), and
//! ANSI colour codes (`ROCk module is loaded` is printed in colour) are dropped.

use crate::detect::formats::ParseOutput;
use crate::model::{Device, Family};

use super::rocm_smi::{hygon_name, is_hygon};
use super::sysfs::is_placeholder;
use super::{AMD_VENDOR_ID, amd_name};

/// Source name of facts from rocminfo.
pub const SOURCE: &str = "rocminfo";

/// One agent block, before it is turned into a device.
#[derive(Default)]
struct Agent {
    number: Option<u32>,
    fields: Vec<(String, String)>,
    /// `(segment line, size line)` of each pool.
    pools: Vec<(String, Option<String>)>,
}

impl Agent {
    fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

#[derive(PartialEq)]
enum Section {
    Top,
    Nested,
    Pools,
    Isa,
}

/// `text` without ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The leading decimal number of `12566528(0xbfc000) KB` / `60`.
fn leading_u64(v: &str) -> Option<u64> {
    let digits: String = v.trim().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The hex id in parentheses of `29822(0x747e)`, else the decimal number.
fn chip_id(v: &str) -> Option<u16> {
    if let Some(open) = v.find("(0x").or_else(|| v.find("(0X")) {
        let rest = &v[open + 3..];
        let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
        if let Ok(id) = u16::from_str_radix(&hex, 16) {
            return Some(id);
        }
    }
    leading_u64(v).and_then(|n| u16::try_from(n).ok())
}

impl Agent {
    /// Whether the agent is a GPU (`GPU`, or `DCU` / `HCU` in Hygon's fork).
    fn is_gpu(&self) -> bool {
        let kind = self.get("Device Type").unwrap_or("").to_ascii_uppercase();
        kind == "GPU" || is_hygon_kind(&kind)
    }
}

/// Hygon's device types in its DTK fork of rocminfo: `DCU` (DTK 24.04) and
/// `HCU` (the runtime that prints "C-3000 hycu module is loaded").
fn is_hygon_kind(kind: &str) -> bool {
    kind == "DCU" || kind == "HCU"
}

/// Split `rocminfo` text into its GPU agent blocks (CPU agents are read and
/// dropped, so the device cap counts GPUs), with the number of agents seen.
fn agents(text: &str, warnings: &mut Vec<String>) -> (Vec<Agent>, usize) {
    let mut out: Vec<Agent> = Vec::new();
    let mut seen = 0usize;
    let mut cur: Option<Agent> = None;
    let mut section = Section::Top;
    for raw in text.lines() {
        let line = strip_ansi(raw);
        let t = line.trim();
        if let Some(n) = t.strip_prefix("Agent ") {
            if let Ok(n) = n.trim().parse::<u32>() {
                out.extend(cur.take().filter(Agent::is_gpu));
                if crate::detect::formats::past_cap(out.len()) {
                    break;
                }
                seen += 1;
                cur = Some(Agent {
                    number: Some(n),
                    ..Agent::default()
                });
                section = Section::Top;
                continue;
            }
        }
        let Some(a) = cur.as_mut() else { continue };
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match (k, v.is_empty()) {
            ("Pool Info", true) => {
                section = Section::Pools;
                continue;
            }
            ("ISA Info", true) => {
                section = Section::Isa;
                continue;
            }
            ("Cache Info", true) | (_, true) if section == Section::Top => {
                // `Cache Info:`, `Workgroup Max Size per Dimension:`: nested
                // lines follow (`L1: …`, `x 1024`); keys after them are
                // top-level again, so only the cache lines are skipped.
                section = Section::Nested;
                continue;
            }
            _ => {}
        }
        match section {
            Section::Top | Section::Nested => {
                if section == Section::Nested && (k.starts_with('L') && k.len() <= 3) {
                    continue;
                }
                section = Section::Top;
                if a.fields.len() < 256 && !a.fields.iter().any(|(f, _)| f == k) {
                    a.fields.push((k.to_string(), v.to_string()));
                }
            }
            Section::Pools => {
                if k.eq_ignore_ascii_case("Segment") {
                    if a.pools.len() < 64 {
                        a.pools.push((v.to_string(), None));
                    }
                } else if k.eq_ignore_ascii_case("Size") {
                    if let Some(p) = a.pools.last_mut().filter(|p| p.1.is_none()) {
                        p.1 = Some(v.to_string());
                    }
                }
            }
            Section::Isa => {}
        }
    }
    out.extend(cur.filter(Agent::is_gpu));
    crate::detect::formats::cap_records(&mut out, "rocminfo", warnings);
    (out, seen)
}

/// Bytes of the first `GLOBAL` coarse-grained pool (`Size: N(0x…) KB`).
fn device_memory(a: &Agent, label: &str, warnings: &mut Vec<String>) -> Option<u64> {
    let (_, size) = a.pools.iter().find(|(seg, size)| {
        let s = seg.to_ascii_uppercase();
        s.starts_with("GLOBAL") && s.contains("COARSE GRAINED") && size.is_some()
    })?;
    let size = size.as_deref()?;
    let kib = leading_u64(size);
    let unit_ok = size.trim_end().to_ascii_uppercase().ends_with("KB");
    match (kib, unit_ok) {
        (Some(k), true) if k > 0 => k.checked_mul(1024),
        _ => {
            warnings.push(format!(
                "rocminfo {label}: pool size {} is not `N(0x…) KB`; memory left null",
                crate::model::excerpt(size, crate::model::EXCERPT_CHARS)
            ));
            None
        }
    }
}

/// Parse `rocminfo` output into its GPU agents and warnings.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let text = crate::model::text::decode(bytes);
    let mut warnings = Vec::new();
    let (gpus, seen) = agents(&text, &mut warnings);
    if seen == 0 {
        warnings.push("rocminfo: no `Agent N` block found".to_string());
    }
    let mut devices = Vec::new();
    for a in &gpus {
        let kind = a.get("Device Type").unwrap_or("").to_ascii_uppercase();
        let n = a.number.unwrap_or(0);
        let label = format!("agent {n}");
        let vendor_name = a.get("Vendor Name").unwrap_or("");
        let hygon = is_hygon_kind(&kind) || is_hygon(vendor_name);
        let device_id = a.get("Chip ID").and_then(chip_id).filter(|&id| id != 0);
        let market = a
            .get("Marketing Name")
            .filter(|s| !is_placeholder(s))
            .map(str::to_string);
        let (name, vendor) = if hygon {
            (
                market
                    .as_deref()
                    .map(hygon_name)
                    .unwrap_or_else(|| "Hygon DCU".into()),
                "hygon",
            )
        } else {
            (
                amd_name(market.as_deref(), device_id).unwrap_or_else(|| "AMD GPU".into()),
                "amd",
            )
        };
        let mut d = Device::new(
            format!("rocminfo:agent{n}"),
            name,
            vendor,
            Family::Gpu,
            SOURCE,
        );
        d.compute_capability = a
            .get("Name")
            .filter(|s| s.starts_with("gfx"))
            .map(str::to_string);
        d.compute_units = a
            .get("Compute Unit")
            .and_then(leading_u64)
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c > 0);
        d.uuid = a
            .get("Uuid")
            .filter(|u| {
                u.get(4..)
                    .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            })
            .map(str::to_string);
        d.memory_bytes = device_memory(a, &label, &mut warnings);
        if d.memory_bytes.is_none() && !warnings.iter().any(|w| w.contains(&label)) {
            warnings.push(format!(
                "rocminfo {label}: no GLOBAL coarse-grained pool; memory left null"
            ));
        }
        if let Some(node) = a.get("Node").and_then(leading_u64) {
            d.extra.insert("kfd_node".into(), node.to_string());
        }
        if let Some(id) = device_id {
            let vendor_id = if hygon { None } else { Some(AMD_VENDOR_ID) };
            d.extra.insert("pci_device_id".into(), format!("{id:04x}"));
            if let Some(v) = vendor_id {
                d.extra.insert("pci_vendor_id".into(), format!("{v:04x}"));
            }
        }
        if let Some(bdf) = a
            .get("BDFID")
            .and_then(leading_u64)
            .filter(|&b| b > 0 && b <= 0xffff)
        {
            d.extra.insert(
                "pci_bdf".into(),
                format!("{:02x}:{:02x}.{:x}", bdf >> 8, (bdf >> 3) & 0x1f, bdf & 7),
            );
        }
        if let Some(mhz) = a.get("Max Clock Freq. (MHz)").and_then(leading_u64) {
            d.extra.insert("max_clock_mhz".into(), mhz.to_string());
        }
        // `Memory Properties: APU` (runtime 1.18+): the pool is host memory.
        if let Some(mp) = a.get("Memory Properties") {
            d.extra.insert("memory_properties".into(), mp.to_string());
        }
        if !vendor_name.is_empty() {
            d.extra
                .insert("vendor_name".into(), vendor_name.to_string());
        }
        devices.push(d);
    }
    if devices.is_empty() && seen > 0 {
        warnings.push("rocminfo lists no GPU agent".to_string());
    }
    ParseOutput { devices, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_sizes() {
        assert_eq!(chip_id("29822(0x747e)"), Some(0x747e));
        assert_eq!(chip_id("26273"), Some(26273));
        assert_eq!(leading_u64("16760832(0xffc000) KB"), Some(16_760_832));
        assert_eq!(
            strip_ansi("\u{1b}[37mROCk module is loaded\u{1b}[0m"),
            "ROCk module is loaded"
        );
    }

    #[test]
    fn gpu_agent_without_indentation() {
        let text = "Agent 2\nName: gfx1101\nUuid: GPU-5c88007d760374f3\nMarketing Name: AMD Radeon RX 7800 XT\nVendor Name: AMD\nDevice Type: GPU\nCache Info:\nL1: 32(0x20) KB\nChip ID: 29822(0x747e)\nBDFID: 768\nCompute Unit: 60\nPool Info:\nPool 1\nSegment: GLOBAL; FLAGS: COARSE GRAINED\nSize: 16760832(0xffc000) KB\nISA Info:\nISA 1\nName: amdgcn-amd-amdhsa--gfx1101\n";
        let out = parse(text.as_bytes());
        assert_eq!(out.devices.len(), 1, "{:?}", out.warnings);
        let d = &out.devices[0];
        assert_eq!(d.memory_bytes, Some(16_760_832 * 1024));
        assert_eq!(d.compute_capability.as_deref(), Some("gfx1101"));
        assert_eq!(d.compute_units, Some(60));
        assert_eq!(d.extra.get("pci_bdf").map(String::as_str), Some("03:00.0"));
        assert_eq!(d.uuid.as_deref(), Some("GPU-5c88007d760374f3"));
    }

    #[test]
    fn size_in_another_unit_is_a_warning() {
        let text = "Agent 1\nDevice Type: GPU\nPool Info:\nSegment: GLOBAL; FLAGS: COARSE GRAINED\nSize: 16(0x10) GB\n";
        let out = parse(text.as_bytes());
        assert_eq!(out.devices[0].memory_bytes, None);
        assert!(
            out.warnings.iter().any(|w| w.contains("not `N(0x…) KB`")),
            "{:?}",
            out.warnings
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,400}") {
            let _ = parse(s.as_bytes());
        }
    }
}
