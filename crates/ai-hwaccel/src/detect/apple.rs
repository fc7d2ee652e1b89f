//! The `apple` backend: the GPU and Neural Engine of Apple silicon Macs
//! (and the GPUs of Intel Macs, which only macOS's profiler lists).
//!
//! On macOS (no `/proc`): one `system_profiler SPDisplaysDataType
//! SPHardwareDataType -json` run (`sppci_model` such as `Apple M2 Max`,
//! `sppci_cores` the GPU core count, `spdisplays_vendor`, the Metal support
//! keys, `spdisplays_vram` of discrete GPUs; `chip_type` and
//! `physical_memory` of the hardware overview) and, when it shows Apple
//! silicon, one `sysctl hw.memsize iogpu.wired_limit_mb` run. On Linux
//! (Asahi): the SoC from the device tree's root `compatible`
//! (`apple,j314c\0apple,t6001\0apple,arm-platform`), the GPU from a
//! `/sys/class/drm` card bound to `asahi`, memory from `/proc/meminfo`.
//!
//! Apple silicon memory is unified. The GPU's [`SharedMemory`] pool is
//! `hw.memsize` (else the profiler's `physical_memory`); its limit is
//! `iogpu.wired_limit_mb` when that is set (non-zero), the ceiling on
//! memory the GPU may wire (MLX documents raising it with `sudo sysctl
//! iogpu.wired_limit_mb=<MiB>`, `mlx.core.set_wired_limit`, and `0` as the
//! system default). Without it the limit is unknown: Metal's
//! `recommendedMaxWorkingSetSize` is the default ceiling, and Apple documents
//! no fraction of memory for it (reported measurements differ: about 75 % of
//! 16 GB machines, 107.5 GiB of 128 GiB ones), so `memory_bytes` is then
//! the pool and the device says so. The Neural Engine shares the same pool
//! and reports no memory of its own, so the summary counts the pool once. The Neural Engine is its own `npu`
//! device; its core count comes only from the spec database entry its name
//! matches (no tool reports it), else it stays unknown.
//!
//! SoC ids (lowercase, as device trees spell them) and their marketing
//! names: torvalds/linux `Documentation/devicetree/bindings/arm/apple.yaml`
//! @007c9b75 (t8103 M1, t8112 M2, t6000/t6001/t6002 M1 Pro/Max/Ultra), the
//! `arch/arm64/boot/dts/apple/t602x` headers (t6020/t6021/t6022 M2
//! Pro/Max/Ultra), Asahi's t8122 PMGR tree (M3) and AsahiLinux/linux
//! 396331c (t6031 and t6034, both M3 Max).

use std::collections::BTreeMap;

use crate::model::{Device, Family, Labels, SharedMemory};
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
    /// `SPHardwareDataType` `chip_type` (`Apple M2 Ultra`), Apple silicon only.
    pub chip_type: Option<String>,
    /// `SPHardwareDataType` `physical_memory` (`64 GB`) in bytes.
    pub physical_memory_bytes: Option<u64>,
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

/// Parse `system_profiler SPDisplaysDataType [SPHardwareDataType] -json`
/// (either data type, or both). Never panics.
pub fn parse_system_profiler(text: &str) -> SpReport {
    use serde_json::Value;
    let mut rep = SpReport::default();
    let v: Value = match serde_json::from_str(crate::model::text::strip_bom(text)) {
        Ok(v) => v,
        Err(e) => {
            rep.warnings.push(format!("system_profiler JSON: {e}"));
            return rep;
        }
    };
    let hardware = v
        .get("SPHardwareDataType")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    if let Some(hw) = hardware {
        let text = |k: &str| hw.get(k).and_then(Value::as_str).map(str::trim);
        rep.chip_type = text("chip_type")
            .filter(|c| apple_chip(c).is_some())
            .map(str::to_string);
        if let Some(m) = text("physical_memory") {
            rep.physical_memory_bytes = parse_size(m);
            if rep.physical_memory_bytes.is_none() {
                rep.warnings.push(format!(
                    "system_profiler SPHardwareDataType: physical_memory {m:?} not understood"
                ));
            }
        }
    }
    let Some(list) = v.get("SPDisplaysDataType").and_then(Value::as_array) else {
        if hardware.is_none() {
            rep.warnings.push(
                "system_profiler JSON: no SPDisplaysDataType or SPHardwareDataType array".into(),
            );
        }
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
        if crate::detect::formats::past_cap(rep.gpus.len()) {
            break;
        }
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
    crate::detect::formats::cap_records(&mut rep.gpus, "system_profiler", &mut rep.warnings);
    rep
}

/// The unified-memory facts of `sysctl hw.memsize iogpu.wired_limit_mb`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysctlFacts {
    /// `hw.memsize`: physical (unified) memory in bytes.
    pub memsize_bytes: Option<u64>,
    /// `iogpu.wired_limit_mb` in MiB; `Some(0)` is the system default (no
    /// limit set), `None` when the key is absent (older macOS, Intel Macs).
    pub wired_limit_mb: Option<u64>,
    /// `machdep.cpu.brand_string` (`Apple M2 Max`), when printed.
    pub brand: Option<String>,
}

/// The `name: value` lines `sysctl NAME…` and `sysctl -a` print (later
/// duplicates win; lines without a separator are skipped).
pub fn parse_sysctl_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ").or_else(|| l.split_once(" = "))?;
            let k = k.trim();
            (!k.is_empty() && !k.contains(' ')).then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The facts of a `sysctl` output in `name: value` form. A value that is
/// present but not a number is a warning naming the key.
pub fn parse_sysctl(text: &str, warnings: &mut Vec<String>) -> SysctlFacts {
    let kv = parse_sysctl_lines(text);
    let mut number = |key: &str| {
        let v = kv.get(key)?;
        let n = v.parse::<u64>().ok();
        if n.is_none() {
            warnings.push(format!("sysctl {key}: {v:?} is not a number"));
        }
        n
    };
    SysctlFacts {
        memsize_bytes: number("hw.memsize").filter(|&m| m > 0),
        wired_limit_mb: number("iogpu.wired_limit_mb"),
        brand: kv
            .get("machdep.cpu.brand_string")
            .filter(|b| !b.is_empty())
            .cloned(),
    }
}

/// The unified memory of an Apple silicon GPU: the pool (`hw.memsize`, else
/// the profiler's `physical_memory`) and the limit `iogpu.wired_limit_mb`
/// sets, with where each came from (rules in the module doc). Either may be
/// unknown; the device is still marked as using shared memory.
pub fn unified_memory(
    memsize: Option<u64>,
    physical_memory: Option<u64>,
    wired_limit_mb: Option<u64>,
) -> SharedMemory {
    let (pool, pool_from) = match (memsize, physical_memory) {
        (Some(m), _) => (Some(m), "pool: sysctl hw.memsize"),
        (None, Some(p)) => (Some(p), "pool: system_profiler physical_memory"),
        (None, None) => (None, "pool: unknown"),
    };
    let limit = wired_limit_mb
        .filter(|&mb| mb > 0)
        .and_then(|mb| mb.checked_mul(1 << 20))
        .map(|b| pool.map_or(b, |p| b.min(p)));
    let limit_from = match (limit, wired_limit_mb) {
        (Some(_), _) => "GPU limit: sysctl iogpu.wired_limit_mb".to_string(),
        (None, Some(0)) => "GPU limit: unknown (iogpu.wired_limit_mb is 0, the default: \
             Metal's recommendedMaxWorkingSetSize, which Apple documents no fraction for)"
            .to_string(),
        (None, _) => "GPU limit: unknown (no iogpu.wired_limit_mb; Metal's \
             recommendedMaxWorkingSetSize has no documented fraction)"
            .to_string(),
    };
    SharedMemory {
        pool_bytes: pool,
        device_limit_bytes: limit,
        source: format!("{pool_from}; {limit_from}"),
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
    let mut ane = Device::new(
        "apple:ane",
        format!("{label} Neural Engine"),
        "apple",
        Family::Npu,
        source,
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

/// Give the SoC's GPU and Neural Engine their unified memory: the GPU's
/// `memory_bytes` is what it can use; the Neural Engine reports none of its
/// own (the pool is counted once, on the GPU).
fn set_unified(gpu: &mut Device, ane: &mut Device, memory: SharedMemory) {
    gpu.memory_bytes = memory.usable_bytes();
    ane.shared_memory = Some(SharedMemory {
        device_limit_bytes: None,
        ..memory.clone()
    });
    gpu.shared_memory = Some(memory);
}

/// Devices of a system_profiler report; `memory` is the SoC's unified memory.
fn devices_from_profiler(rep: &SpReport, memory: SharedMemory, source: &str) -> Vec<Device> {
    let mut out = Vec::new();
    let mut soc_done = false;
    for (i, g) in rep.gpus.iter().enumerate() {
        let model = g.model.as_deref().unwrap_or("GPU");
        let chip = (g.vendor.as_deref() == Some("apple"))
            .then(|| apple_chip(model))
            .flatten();
        if let (Some(chip), false) = (chip, soc_done) {
            soc_done = true;
            let (mut gpu, mut ane) = soc_devices(Some(chip), None, source);
            gpu.compute_units = g.cores;
            set_unified(&mut gpu, &mut ane, memory.clone());
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
            // An Intel Mac's integrated GPU: no memory of its own; macOS
            // states how much of the host's it may use (`spdisplays_vram_shared`).
            d.extra.insert("integrated".into(), "true".into());
            let shared = SharedMemory {
                pool_bytes: rep.physical_memory_bytes,
                device_limit_bytes: g.vram_shared_bytes,
                source: format!(
                    "pool: {}; GPU limit: {}",
                    if rep.physical_memory_bytes.is_some() {
                        "system_profiler physical_memory"
                    } else {
                        "unknown"
                    },
                    if g.vram_shared_bytes.is_some() {
                        "system_profiler spdisplays_vram_shared"
                    } else {
                        "unknown"
                    }
                ),
            };
            d.memory_bytes = shared.usable_bytes();
            d.shared_memory = Some(shared);
        }
        if let Some(m) = &g.metal {
            d.extra.insert("metal_support".into(), m.clone());
        }
        if let Some(id) = &g.device_id {
            d.extra.insert("pci_device_id".into(), id.clone());
        }
        out.push(d);
    }
    // Only the hardware overview was given: the SoC's GPU and Neural Engine
    // from its chip, without a GPU core count.
    if let (false, Some(chip)) = (soc_done, rep.chip_type.as_deref().and_then(apple_chip)) {
        let (mut gpu, mut ane) = soc_devices(Some(chip), None, source);
        set_unified(&mut gpu, &mut ane, memory);
        out.push(gpu);
        out.push(ane);
    }
    out
}

/// Parser for `ai-hwaccel parse system-profiler-json`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_system_profiler(&crate::model::text::decode(bytes));
    let memory = unified_memory(None, rep.physical_memory_bytes, None);
    let devices = devices_from_profiler(&rep, memory, "system-profiler");
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
    let pool = ctx
        .probe
        .read_text("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo(&t).get("MemTotal"));
    let memory = SharedMemory {
        pool_bytes: pool,
        device_limit_bytes: None,
        source: format!(
            "pool: {}; GPU limit: unknown (the asahi driver publishes none)",
            if pool.is_some() {
                "/proc/meminfo MemTotal"
            } else {
                "unknown"
            }
        ),
    };
    set_unified(&mut gpu, &mut ane, memory);
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
        &["SPDisplaysDataType", "SPHardwareDataType", "-json"],
        &mut out.warnings,
    ) else {
        return out;
    };
    let rep = parse_system_profiler(&text);
    out.warnings.extend(rep.warnings.iter().cloned());
    let apple = rep.chip_type.is_some()
        || rep.gpus.iter().any(|g| {
            g.vendor.as_deref() == Some("apple")
                && g.model.as_deref().and_then(apple_chip).is_some()
        });
    let mut facts = SysctlFacts::default();
    let mut source = "system-profiler";
    if apple {
        // One run for both keys; a macOS without `iogpu.wired_limit_mb`
        // still prints `hw.memsize` (stdout is read whatever the exit status).
        match ctx
            .probe
            .run("sysctl", &["hw.memsize", "iogpu.wired_limit_mb"])
        {
            Ok(o) => facts = parse_sysctl(&o.stdout_text(), &mut out.warnings),
            Err(e) if !e.is_absent() => out.warnings.push(e.to_string()),
            Err(_) => {}
        }
        if facts.memsize_bytes.is_some() {
            source = "system-profiler+sysctl";
        }
    }
    let memory = unified_memory(
        facts.memsize_bytes,
        rep.physical_memory_bytes,
        facts.wired_limit_mb,
    );
    out.devices = devices_from_profiler(&rep, memory, source);
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
        let f = parse_sysctl("hw.memsize: 68719476736\niogpu.wired_limit_mb: 0\n", &mut w);
        assert_eq!(f.memsize_bytes, Some(64 << 30));
        assert_eq!(f.wired_limit_mb, Some(0));
        assert!(w.is_empty());
        let f = parse_sysctl("hw.memsize: lots\nsysctl: unknown oid 'x'\n", &mut w);
        assert_eq!(f.memsize_bytes, None);
        assert_eq!(f.wired_limit_mb, None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("hw.memsize"));
    }

    #[test]
    fn unified_memory_rules() {
        let gib = 1u64 << 30;
        let m = unified_memory(Some(64 * gib), None, Some(57344));
        assert_eq!(m.pool_bytes, Some(64 * gib));
        assert_eq!(m.device_limit_bytes, Some(56 * gib));
        assert_eq!(m.usable_bytes(), Some(56 * gib));
        assert!(m.source.contains("iogpu.wired_limit_mb"));
        let m = unified_memory(Some(64 * gib), Some(32 * gib), Some(0));
        assert_eq!((m.pool_bytes, m.device_limit_bytes), (Some(64 * gib), None));
        assert!(m.source.contains("is 0, the default"));
        // A limit above the pool is capped at the pool.
        let m = unified_memory(None, Some(16 * gib), Some(1 << 20));
        assert_eq!(m.device_limit_bytes, Some(16 * gib));
        assert!(
            m.source
                .starts_with("pool: system_profiler physical_memory")
        );
        let m = unified_memory(None, None, None);
        assert_eq!((m.pool_bytes, m.usable_bytes()), (None, None));
        assert!(m.source.starts_with("pool: unknown"));
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
