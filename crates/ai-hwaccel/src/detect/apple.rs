//! The `apple` backend: the GPU and Neural Engine of Apple silicon Macs
//! (and the GPUs of Intel Macs, which only macOS's profiler lists).
//!
//! On macOS (no `/proc`): one `system_profiler SPDisplaysDataType -json` run
//! (`sppci_model` such as `Apple M2 Max`, `sppci_cores` the GPU core count,
//! `spdisplays_vendor`, the Metal support keys, `spdisplays_vram` of
//! discrete GPUs) and, when it lists an Apple silicon GPU, one
//! `sysctl -n hw.memsize machdep.cpu.brand_string` run for the unified
//! memory total. On Linux (Asahi): the SoC from the device tree's root
//! `compatible` (`apple,j314c\0apple,t6001\0apple,arm-platform`), the GPU
//! from a `/sys/class/drm` card bound to `asahi`, memory from
//! `/proc/meminfo`.
//!
//! Apple silicon memory is unified: the GPU's `memory_bytes` is the system's
//! memory total, marked `integrated` with `memory` = `unified …` in `extra`
//! (the Neural Engine shares the same pool and reports none of its own, so
//! the summary does not count it twice). The Neural Engine is its own `npu`
//! device; its core count comes only from the spec database entry its name
//! matches (no tool reports it), else it stays unknown.
//!
//! SoC ids (lowercase, as device trees spell them) and their marketing
//! names: torvalds/linux `Documentation/devicetree/bindings/arm/apple.yaml`
//! @007c9b75 (t8103 M1, t8112 M2, t6000/t6001/t6002 M1 Pro/Max/Ultra), the
//! `arch/arm64/boot/dts/apple/t602x` headers (t6020/t6021/t6022 M2
//! Pro/Max/Ultra), Asahi's t8122 PMGR tree (M3) and AsahiLinux/linux
//! 396331c (t6031 and t6034, both M3 Max).

use crate::model::{Device, Family, Labels};
use crate::probe::{Probe, ProbeExt, join};

use super::amd::sysfs::drm_cards;
use super::formats::ParseOutput;
use super::memory::parse_meminfo;
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

/// Device-tree `compatible` of the root node, first found wins.
const DT_COMPATIBLE: &[&str] = &[
    "/proc/device-tree/compatible",
    "/sys/firmware/devicetree/base/compatible",
];
const ACCEL_CLASS: &str = "/sys/class/accel";

/// Marketing name of an Apple SoC id (sources in the module doc).
pub fn chip_of_soc(soc: &str) -> Option<&'static str> {
    match soc.trim().to_ascii_lowercase().as_str() {
        "t8103" => Some("M1"),
        "t6000" => Some("M1 Pro"),
        "t6001" => Some("M1 Max"),
        "t6002" => Some("M1 Ultra"),
        "t8112" => Some("M2"),
        "t6020" => Some("M2 Pro"),
        "t6021" => Some("M2 Max"),
        "t6022" => Some("M2 Ultra"),
        "t8122" => Some("M3"),
        "t6031" | "t6034" => Some("M3 Max"),
        _ => None,
    }
}

/// The strings of a device-tree string list (NUL-separated).
pub fn parse_dt_strings(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The Apple board and SoC ids of a root `compatible` list
/// (`["apple,j314c", "apple,t6001", "apple,arm-platform"]` → `("j314c", "t6001")`);
/// `None` unless the list ends in `apple,arm-platform`.
pub fn apple_board_soc(compatible: &[String]) -> Option<(Option<String>, Option<String>)> {
    if !compatible.iter().any(|c| c == "apple,arm-platform") {
        return None;
    }
    let ids: Vec<&str> = compatible
        .iter()
        .filter_map(|c| c.strip_prefix("apple,"))
        .filter(|c| *c != "arm-platform")
        .collect();
    let soc = ids
        .iter()
        .find(|c| c.starts_with('t') && c[1..].bytes().all(|b| b.is_ascii_digit()))
        .map(|s| s.to_string());
    let board = ids
        .iter()
        .find(|c| Some(**c) != soc.as_deref())
        .map(|s| s.to_string());
    Some((board, soc))
}

/// The chip of an Apple silicon model name (`Apple M2 Max` → `M2 Max`).
pub fn apple_chip(model: &str) -> Option<&str> {
    let chip = model.trim().strip_prefix("Apple ")?.trim();
    let mut chars = chip.chars();
    (chars.next() == Some('M') && chars.next().is_some_and(|c| c.is_ascii_digit())).then_some(chip)
}

/// One GPU as `system_profiler SPDisplaysDataType -json` lists it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpGpu {
    /// `sppci_model` (`Apple M2 Max`, `AMD Radeon Pro 5500M`).
    pub model: Option<String>,
    /// Lowercase vendor key from `spdisplays_vendor` (`apple`, `amd`, `intel`, `nvidia`).
    pub vendor: Option<String>,
    /// `sppci_cores`: GPU cores (Apple silicon).
    pub cores: Option<u32>,
    /// Metal support (`Metal 3`), from whichever Metal key the macOS release prints.
    pub metal: Option<String>,
    /// `spdisplays_vram`: dedicated video memory in bytes.
    pub vram_bytes: Option<u64>,
    /// `spdisplays_vram_shared`: memory an integrated GPU borrows, in bytes.
    pub vram_shared_bytes: Option<u64>,
    /// `sppci_bus` says built-in.
    pub builtin: Option<bool>,
    /// `spdisplays_device-id` (`0x6860`).
    pub device_id: Option<String>,
    /// Displays attached (`spdisplays_ndrvs`).
    pub displays: usize,
}

/// What one system_profiler output held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpReport {
    /// GPUs in output order.
    pub gpus: Vec<SpGpu>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

/// `16 GB`, `1536 MB` → bytes (binary units, as macOS sizes VRAM).
fn parse_size(v: &str) -> Option<u64> {
    crate::model::parse_size(v, None, Labels::Binary)
}

fn vendor_key(v: &str) -> String {
    let v = v.trim();
    let v = v.strip_prefix("sppci_vendor_").unwrap_or(v);
    let word = v
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or(v)
        .to_ascii_lowercase();
    match word.as_str() {
        "ati" => "amd".to_string(),
        _ => word,
    }
}

fn metal_of(v: &str) -> String {
    let v = v.trim().strip_prefix("spdisplays_").unwrap_or(v.trim());
    match v.strip_prefix("metal") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => format!("Metal {n}"),
        _ => v.to_string(),
    }
}

/// Parse `system_profiler SPDisplaysDataType -json`. Never panics.
pub fn parse_system_profiler(text: &str) -> SpReport {
    use serde_json::Value;
    let mut rep = SpReport::default();
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            rep.warnings.push(format!("system_profiler JSON: {e}"));
            return rep;
        }
    };
    let Some(list) = v.get("SPDisplaysDataType").and_then(Value::as_array) else {
        rep.warnings
            .push("system_profiler JSON: no SPDisplaysDataType array".into());
        return rep;
    };
    let s = |o: &Value, k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    for (i, o) in list.iter().enumerate() {
        if !o.is_object() {
            rep.warnings
                .push(format!("system_profiler entry {i}: not an object"));
            continue;
        }
        // `_name` is `kHW_…Item` on some releases; the model key is the name.
        let model =
            s(o, "sppci_model").or_else(|| s(o, "_name").filter(|n| !n.starts_with("kHW_")));
        let cores = match o.get("sppci_cores") {
            Some(Value::String(c)) => c.trim().parse().ok(),
            Some(Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        };
        if o.get("sppci_cores").is_some() && cores.is_none() {
            rep.warnings.push(format!(
                "system_profiler entry {i}: sppci_cores {} not understood",
                o["sppci_cores"]
            ));
        }
        let mut vram = |k: &str| {
            let raw = s(o, k)?;
            let b = parse_size(&raw);
            if b.is_none() {
                rep.warnings.push(format!(
                    "system_profiler entry {i}: {k} {raw:?} not understood"
                ));
            }
            b
        };
        let vram_bytes = match vram("spdisplays_vram") {
            Some(b) => Some(b),
            None => vram("_spdisplays_vram"),
        };
        let vram_shared_bytes = vram("spdisplays_vram_shared");
        let gpu = SpGpu {
            model,
            vendor: s(o, "spdisplays_vendor").map(|v| vendor_key(&v)),
            cores,
            metal: [
                "spdisplays_mtlgpufamilysupport",
                "spdisplays_metalfamily",
                "spdisplays_metal",
            ]
            .iter()
            .find_map(|k| s(o, k))
            .map(|m| metal_of(&m)),
            vram_bytes,
            vram_shared_bytes,
            builtin: s(o, "sppci_bus").map(|b| b.to_ascii_lowercase().contains("builtin")),
            device_id: s(o, "spdisplays_device-id"),
            displays: o
                .get("spdisplays_ndrvs")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
        };
        if gpu.model.is_none() {
            rep.warnings
                .push(format!("system_profiler entry {i}: no sppci_model"));
            continue;
        }
        rep.gpus.push(gpu);
    }
    rep
}

/// What `sysctl -n hw.memsize machdep.cpu.brand_string` printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysctlFacts {
    /// `hw.memsize`: physical (unified) memory in bytes.
    pub memsize_bytes: Option<u64>,
    /// `machdep.cpu.brand_string` (`Apple M2 Max`).
    pub brand: Option<String>,
}

/// Parse the two lines of `sysctl -n hw.memsize machdep.cpu.brand_string`.
pub fn parse_sysctl(text: &str, warnings: &mut Vec<String>) -> SysctlFacts {
    let mut lines = text.lines().map(str::trim);
    let mem = lines.next().unwrap_or("");
    let memsize_bytes = mem.parse::<u64>().ok().filter(|&m| m > 0);
    if memsize_bytes.is_none() {
        warnings.push(format!("sysctl hw.memsize: {mem:?} is not a byte count"));
    }
    SysctlFacts {
        memsize_bytes,
        brand: lines.next().filter(|b| !b.is_empty()).map(str::to_string),
    }
}

/// Apple silicon GPU and Neural Engine devices for `chip` (`M2 Max`).
fn soc_devices(chip: Option<&str>, soc: Option<&str>, source: &str) -> (Device, Device) {
    let label = chip.map_or_else(
        || format!("Apple silicon ({})", soc.unwrap_or("unknown SoC")),
        |c| format!("Apple {c}"),
    );
    let mut gpu = Device::new(
        "apple:gpu",
        format!("{label} GPU"),
        "apple",
        Family::Gpu,
        source,
    );
    gpu.extra.insert("integrated".into(), "true".into());
    gpu.extra.insert(
        "memory".into(),
        "unified: the system memory, shared with the CPU and Neural Engine".into(),
    );
    let mut ane = Device::new(
        "apple:ane",
        format!("{label} Neural Engine"),
        "apple",
        Family::Npu,
        source,
    );
    ane.extra.insert(
        "memory".into(),
        "unified: the system memory, shared with the CPU and GPU".into(),
    );
    for d in [&mut gpu, &mut ane] {
        if let Some(c) = chip {
            d.extra.insert("chip".into(), format!("Apple {c}"));
        }
        if let Some(s) = soc {
            d.extra.insert("soc".into(), s.to_string());
        }
    }
    // The Neural Engine's core count: the datasheet's, via the spec entry.
    if let Some(e) = crate::spec::by_name(&ane.name).filter(|e| e.family == Family::Npu) {
        if let Some(n) = e.compute_units {
            ane.compute_units = Some(n);
            ane.extra
                .insert("compute_units_from".into(), format!("spec:{}", e.id));
        }
    }
    (gpu, ane)
}

/// Devices of a system_profiler report; `memsize` is the unified memory total.
fn devices_from_profiler(rep: &SpReport, memsize: Option<u64>, source: &str) -> Vec<Device> {
    let mut out = Vec::new();
    let mut soc_done = false;
    for (i, g) in rep.gpus.iter().enumerate() {
        let model = g.model.as_deref().unwrap_or("GPU");
        let chip = (g.vendor.as_deref() == Some("apple"))
            .then(|| apple_chip(model))
            .flatten();
        if let (Some(chip), false) = (chip, soc_done) {
            soc_done = true;
            let (mut gpu, ane) = soc_devices(Some(chip), None, source);
            gpu.compute_units = g.cores;
            gpu.memory_bytes = memsize;
            if let Some(m) = &g.metal {
                gpu.extra.insert("metal_support".into(), m.clone());
            }
            out.push(gpu);
            out.push(ane);
            continue;
        }
        let vendor = g.vendor.clone().unwrap_or_else(|| "unknown".into());
        let mut d = Device::new(format!("macos:gpu{i}"), model, vendor, Family::Gpu, source);
        d.compute_units = g.cores;
        d.memory_bytes = g.vram_bytes;
        if g.vram_bytes.is_none() && (g.vram_shared_bytes.is_some() || g.builtin == Some(true)) {
            d.extra.insert("integrated".into(), "true".into());
            d.extra.insert(
                "memory".into(),
                match g.vram_shared_bytes {
                    Some(b) => format!("shared with the host ({} MiB reserved)", b >> 20),
                    None => "shared with the host".into(),
                },
            );
        }
        if let Some(m) = &g.metal {
            d.extra.insert("metal_support".into(), m.clone());
        }
        if let Some(id) = &g.device_id {
            d.extra.insert("pci_device_id".into(), id.clone());
        }
        out.push(d);
    }
    out
}

/// Parser for `ai-hwaccel parse system-profiler-json`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_system_profiler(&String::from_utf8_lossy(bytes));
    let devices = devices_from_profiler(&rep, None, "system-profiler");
    let mut warnings = rep.warnings.clone();
    if devices.is_empty() {
        warnings.push("no GPU entries found".into());
    }
    ParseOutput { devices, warnings }
}

/// The root `compatible` list, when the machine has a device tree.
fn dt_compatible(probe: &dyn Probe) -> Option<Vec<String>> {
    DT_COMPATIBLE
        .iter()
        .find_map(|p| probe.read(p).ok())
        .map(|b| parse_dt_strings(&b))
}

/// Apple silicon under Linux (Asahi).
fn detect_linux(ctx: &Context, board: Option<String>, soc: Option<String>) -> BackendOutput {
    let mut out = BackendOutput::default();
    let chip = soc.as_deref().and_then(chip_of_soc);
    if chip.is_none() {
        out.warnings.push(format!(
            "device tree names Apple SoC {:?}, which has no known marketing name",
            soc.as_deref().unwrap_or("(none)")
        ));
    }
    let (mut gpu, mut ane) = soc_devices(chip, soc.as_deref(), "devicetree");
    let memory = ctx
        .probe
        .read_text("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo(&t).get("MemTotal"));
    gpu.memory_bytes = memory;
    match drm_cards(ctx.probe)
        .into_iter()
        .find(|c| c.driver.as_deref() == Some("asahi"))
    {
        Some(card) => {
            gpu.driver = Some("asahi".into());
            gpu.source = "devicetree+asahi-sysfs".into();
            gpu.extra.insert("drm_card".into(), card.name);
        }
        None => {
            gpu.available = false;
            gpu.unavailable_reason = Some("no DRM card bound to the asahi driver".into());
        }
    }
    let ane_node = ctx
        .probe
        .list_or_empty(ACCEL_CLASS)
        .into_iter()
        .filter(|n| n.starts_with("accel"))
        .find(|n| {
            let dev = join(&join(ACCEL_CLASS, n), "device");
            ctx.probe.link_name(&join(&dev, "driver")).as_deref() == Some("ane")
        });
    match ane_node {
        Some(n) => {
            ane.driver = Some("ane".into());
            ane.extra.insert("accel_node".into(), n);
        }
        None => {
            ane.available = false;
            ane.unavailable_reason = Some("no accel device bound to the ane driver".into());
        }
    }
    if let Some(b) = board {
        gpu.extra.insert("board".into(), b.clone());
        ane.extra.insert("board".into(), b);
    }
    out.devices = vec![gpu, ane];
    out
}

/// The `apple` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    if let Some(compat) = dt_compatible(ctx.probe) {
        if let Some((board, soc)) = apple_board_soc(&compat) {
            return detect_linux(ctx, board, soc);
        }
    }
    let mut out = BackendOutput::default();
    // A Linux (or other procfs) host that is not Apple silicon: nothing to do.
    if ctx.probe.read_trimmed("/proc/sys/kernel/ostype").is_some() {
        return out;
    }
    let Some(text) = run_tool(
        ctx,
        "system_profiler",
        &["SPDisplaysDataType", "-json"],
        &mut out.warnings,
    ) else {
        return out;
    };
    let rep = parse_system_profiler(&text);
    out.warnings.extend(rep.warnings.iter().cloned());
    let apple = rep.gpus.iter().any(|g| {
        g.vendor.as_deref() == Some("apple") && g.model.as_deref().and_then(apple_chip).is_some()
    });
    let mut memsize = None;
    let mut source = "system-profiler";
    if apple {
        let args = ["-n", "hw.memsize", "machdep.cpu.brand_string"];
        if let Some(t) = run_tool(ctx, "sysctl", &args, &mut out.warnings) {
            let facts = parse_sysctl(&t, &mut out.warnings);
            memsize = facts.memsize_bytes;
            if memsize.is_some() {
                source = "system-profiler+sysctl";
            }
        }
    }
    out.devices = devices_from_profiler(&rep, memsize, source);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_tree_compatible() {
        let c = parse_dt_strings(b"apple,j314c\0apple,t6001\0apple,arm-platform\0");
        assert_eq!(c, ["apple,j314c", "apple,t6001", "apple,arm-platform"]);
        assert_eq!(
            apple_board_soc(&c),
            Some((Some("j314c".into()), Some("t6001".into())))
        );
        assert_eq!(chip_of_soc("t6001"), Some("M1 Max"));
        assert_eq!(chip_of_soc("T8112"), Some("M2"));
        assert_eq!(chip_of_soc("t9999"), None);
        let rk = parse_dt_strings(b"radxa,rock-5b\0rockchip,rk3588\0");
        assert_eq!(apple_board_soc(&rk), None);
    }

    #[test]
    fn names_and_sizes() {
        assert_eq!(apple_chip("Apple M2 Max"), Some("M2 Max"));
        assert_eq!(apple_chip("Apple A12Z"), None);
        assert_eq!(apple_chip("AMD Radeon Pro 5500M"), None);
        assert_eq!(parse_size("1536 MB"), Some(1536 << 20));
        assert_eq!(parse_size("16 GB"), Some(16 << 30));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(vendor_key("sppci_vendor_Apple"), "apple");
        assert_eq!(vendor_key("AMD (0x1002)"), "amd");
        assert_eq!(metal_of("spdisplays_metal3"), "Metal 3");
        assert_eq!(metal_of("spdisplays_supported"), "supported");
    }

    #[test]
    fn sysctl_lines() {
        let mut w = Vec::new();
        let f = parse_sysctl("68719476736\nApple M2 Max\n", &mut w);
        assert_eq!(f.memsize_bytes, Some(64 << 30));
        assert_eq!(f.brand.as_deref(), Some("Apple M2 Max"));
        assert!(w.is_empty());
        let f = parse_sysctl("sysctl: unknown oid\n", &mut w);
        assert_eq!(f.memsize_bytes, None);
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn neural_engine_cores_only_from_the_spec_database() {
        let (_, ane) = soc_devices(Some("M2 Max"), None, "t");
        assert_eq!(ane.compute_units, Some(16), "m2-ane lists 16 cores");
        // The Ultra has two engines and no entry: unknown, not 16 or 32.
        let (_, ane) = soc_devices(Some("M2 Ultra"), None, "t");
        assert_eq!(ane.compute_units, None);
    }
}
