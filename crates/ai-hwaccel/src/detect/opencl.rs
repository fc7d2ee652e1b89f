//! The `opencl` backend: every OpenCL device of every platform, from one run
//! of `clinfo --raw` (Oblomov's clinfo: one `[PLATFORM/DEVICE] KEY value`
//! line per property). The parser also reads clinfo's default report (what
//! users paste: `  Device Name    value` lines under `Number of devices`) and
//! the older AMD APP SDK `clinfo`, whose report is `Key:<tabs> value` lines.
//!
//! CPU devices (pocl, Intel's CPU runtime, AMD APP's CPU device) run on the
//! host CPU: like Vulkan's software devices they become a note on the `cpu`
//! device (extra key `opencl_cpu_devices`) and never count as accelerators.
//!
//! A GPU or accelerator joins the device other backends reported for the
//! same PCI function: by its PCI address when clinfo prints one
//! (`CL_DEVICE_PCI_BUS_INFO_KHR`, `CL_DEVICE_TOPOLOGY_AMD`,
//! `CL_DEVICE_PCI_BUS_ID_NV`, or the APP SDK's `Device Topology: PCI[ B#b,
//! D#d, F#f ]`), else when it is its platform's only device of a PCI vendor
//! and the PCI scan has exactly one accelerator of that vendor. Otherwise it
//! is listed as `opencl:<platform>:<device>`.

use crate::model::{Device, Family, PciAddress};

use super::formats::ParseOutput;
use super::pci::PciScan;
use super::pci_ids::vendor;
use super::vulkan::{cpu_note_device, run_tool};
use super::{BackendOutput, Context};

const SOURCE: &str = "clinfo";

/// `CL_DEVICE_TYPE` as clinfo prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClDeviceType {
    /// `CL_DEVICE_TYPE_CPU`.
    Cpu,
    /// `CL_DEVICE_TYPE_GPU`.
    Gpu,
    /// `CL_DEVICE_TYPE_ACCELERATOR` (FPGAs, DSPs, AI ASICs).
    Accelerator,
    /// `CL_DEVICE_TYPE_CUSTOM` or unrecognised.
    Other,
}

impl ClDeviceType {
    fn parse(s: &str) -> Self {
        let u = s.to_ascii_uppercase();
        if u.contains("GPU") {
            Self::Gpu
        } else if u.contains("ACCELERATOR") {
            Self::Accelerator
        } else if u.contains("CPU") {
            Self::Cpu
        } else {
            Self::Other
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
            Self::Accelerator => "accelerator",
            Self::Other => "other",
        }
    }
}

/// One OpenCL device. Absent properties are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClDevice {
    /// Index of its platform in the report (0-based).
    pub platform_index: u32,
    /// Index of the device within its platform.
    pub device_index: u32,
    /// `CL_PLATFORM_NAME` of its platform.
    pub platform_name: Option<String>,
    /// `CL_DEVICE_NAME`.
    pub name: Option<String>,
    /// `CL_DEVICE_BOARD_NAME_AMD` (marketing name on AMD).
    pub board_name: Option<String>,
    /// `CL_DEVICE_VENDOR`.
    pub vendor: Option<String>,
    /// `CL_DEVICE_VENDOR_ID` (a PCI vendor id for GPUs).
    pub vendor_id: Option<u32>,
    /// `CL_DEVICE_TYPE`.
    pub device_type: Option<ClDeviceType>,
    /// `CL_DEVICE_MAX_COMPUTE_UNITS`.
    pub compute_units: Option<u32>,
    /// `CL_DEVICE_GLOBAL_MEM_SIZE` in bytes.
    pub global_mem_bytes: Option<u64>,
    /// `CL_DEVICE_HOST_UNIFIED_MEMORY`.
    pub host_unified_memory: Option<bool>,
    /// `CL_DEVICE_VERSION` (`OpenCL 3.0 …`).
    pub version: Option<String>,
    /// `CL_DRIVER_VERSION`.
    pub driver_version: Option<String>,
    /// `CL_DEVICE_AVAILABLE`.
    pub available: Option<bool>,
    /// PCI address when clinfo prints one.
    pub pci_address: Option<PciAddress>,
    /// NVIDIA's compute capability (`cl_nv_device_attribute_query`:
    /// `CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV` / `_MINOR_NV`, which clinfo's
    /// default report joins as `Compute Capability (NV)  7.5`).
    pub compute_capability_nv: (Option<u32>, Option<u32>),
}

/// Everything one clinfo output held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClReport {
    /// Platform names in order.
    pub platforms: Vec<String>,
    /// Devices in platform, then device order.
    pub devices: Vec<ClDevice>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "CL_TRUE" | "Yes" | "1" => Some(true),
        "CL_FALSE" | "No" | "0" => Some(false),
        _ => None,
    }
}

/// A vendor id as `0x10de`, `4318` or the APP SDK's `1002h`.
fn parse_vendor_id(v: &str) -> Option<u32> {
    let t = v.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok();
    }
    if let Some(h) = t.strip_suffix('h') {
        return u32::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

/// `PCI-E, 0000:01:00.0`, `PCI-E, 01:00.0` or `PCI[ B#0, D#1, F#0 ]`.
fn parse_topology(v: &str) -> Option<PciAddress> {
    let t = v.trim();
    if let Some(rest) = t.strip_prefix("PCI[") {
        let mut bdf = [None; 3];
        for part in rest.trim_end_matches(']').split(',') {
            let p = part.trim();
            for (i, tag) in ["B#", "D#", "F#"].iter().enumerate() {
                if let Some(n) = p.strip_prefix(tag) {
                    bdf[i] = n.trim().parse::<u8>().ok();
                }
            }
        }
        let [Some(bus), Some(device), Some(function)] = bdf else {
            return None;
        };
        return (device <= 0x1f && function <= 7).then_some(PciAddress {
            domain: 0,
            bus,
            device,
            function,
        });
    }
    let addr = t.rsplit(',').next()?.trim();
    addr.parse()
        .ok()
        .or_else(|| sign_extended_bus(addr)?.parse().ok())
}

/// `0000:ffffffc3:00.0` → `0000:c3:00.0`. The AMD topology struct
/// (`cl_device_topology_amd`) keeps the bus in a signed `cl_char`; clinfo
/// widens it to an int before printing it in hex, so every bus from 0x80 up
/// comes out as `ffffff80`..`ffffffff` (seen on a Strix Halo APU at bus
/// 0xc3 with AMD APP 3625.0). Only that exact widening is undone.
fn sign_extended_bus(addr: &str) -> Option<String> {
    let mut parts = addr.splitn(3, ':');
    let (a, b, rest) = (parts.next()?, parts.next()?, parts.next());
    // `domain:bus:dev.fn` or `bus:dev.fn`.
    let (domain, bus, tail) = match rest {
        Some(tail) => (Some(a), b, tail),
        None => (None, a, b),
    };
    let low = bus
        .strip_prefix("ffffff")
        .or_else(|| bus.strip_prefix("FFFFFF"))?;
    if low.len() != 2 {
        return None;
    }
    let byte = u8::from_str_radix(low, 16).ok().filter(|&v| v >= 0x80)?;
    Some(match domain {
        Some(d) => format!("{d}:{byte:02x}:{tail}"),
        None => format!("{byte:02x}:{tail}"),
    })
}

fn parse_u64(v: &str) -> Option<u64> {
    v.split_whitespace().next()?.parse().ok()
}

/// Apply one property (raw `CL_*` key or APP SDK label) to a device.
/// Returns false when the value of a known key did not parse.
fn apply(d: &mut ClDevice, key: &str, v: &str) -> bool {
    let v = v.trim();
    let s = |slot: &mut Option<String>| {
        if slot.is_none() && !v.is_empty() {
            *slot = Some(v.to_string());
        }
        true
    };
    match key {
        "CL_DEVICE_NAME" | "Name" => s(&mut d.name),
        "CL_DEVICE_BOARD_NAME_AMD" | "Board name" => s(&mut d.board_name),
        "CL_DEVICE_VENDOR" | "Vendor" => s(&mut d.vendor),
        "CL_DEVICE_VERSION" | "Version" => s(&mut d.version),
        "CL_DRIVER_VERSION" | "Driver version" => s(&mut d.driver_version),
        "CL_DEVICE_TYPE" | "Device Type" => {
            d.device_type = Some(ClDeviceType::parse(v));
            true
        }
        "CL_DEVICE_VENDOR_ID" | "Vendor ID" => {
            d.vendor_id = parse_vendor_id(v);
            d.vendor_id.is_some()
        }
        "CL_DEVICE_MAX_COMPUTE_UNITS" | "Max compute units" => {
            d.compute_units = v.parse().ok();
            d.compute_units.is_some()
        }
        "CL_DEVICE_GLOBAL_MEM_SIZE" | "Global memory size" => {
            d.global_mem_bytes = parse_u64(v);
            d.global_mem_bytes.is_some()
        }
        "CL_DEVICE_HOST_UNIFIED_MEMORY" | "Unified memory for Host and Device" => {
            d.host_unified_memory = parse_bool(v);
            d.host_unified_memory.is_some()
        }
        "CL_DEVICE_AVAILABLE" | "Available" => {
            d.available = parse_bool(v);
            d.available.is_some()
        }
        "CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV" => {
            d.compute_capability_nv.0 = v.parse().ok();
            d.compute_capability_nv.0.is_some()
        }
        "CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV" => {
            d.compute_capability_nv.1 = v.parse().ok();
            d.compute_capability_nv.1.is_some()
        }
        // The default report's joined form: `7.5`.
        "Compute Capability (NV)" => {
            let parsed = v
                .split_once('.')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
            if let Some((a, b)) = parsed {
                d.compute_capability_nv = (Some(a), Some(b));
            }
            parsed.is_some()
        }
        "CL_DEVICE_PCI_BUS_INFO_KHR"
        | "CL_DEVICE_TOPOLOGY_AMD"
        | "CL_DEVICE_PCI_BUS_ID_NV"
        | "Device Topology" => {
            if d.pci_address.is_none() {
                d.pci_address = parse_topology(v);
            }
            // `n/a`/empty topology is normal for CPU devices.
            d.pci_address.is_some() || !v.starts_with("PCI")
        }
        _ => true,
    }
}

/// Parse `clinfo --raw`, clinfo's default human-readable report, or the AMD
/// APP SDK clinfo report. Never panics.
pub fn parse_clinfo(text: &str) -> ClReport {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first = first.trim_start();
    if first.starts_with("Number of platforms:") {
        parse_app_sdk(text)
    } else if first.starts_with("Number of platforms") {
        parse_human(text)
    } else {
        parse_raw(text)
    }
}

/// The `CL_*` key (as `--raw` prints it) of a label of clinfo's default
/// report (`Device Name`, `Global memory size`, …: the names clinfo's
/// `src/clinfo.c` gives each property for human output, unchanged since
/// clinfo 2.x; `Device PCI bus info (KHR)` since 3.0).
fn human_key(label: &str) -> Option<&'static str> {
    Some(match label {
        "Device Name" => "CL_DEVICE_NAME",
        "Device Board Name (AMD)" => "CL_DEVICE_BOARD_NAME_AMD",
        "Device Vendor" => "CL_DEVICE_VENDOR",
        "Device Vendor ID" => "CL_DEVICE_VENDOR_ID",
        "Device Version" => "CL_DEVICE_VERSION",
        "Driver Version" => "CL_DRIVER_VERSION",
        "Device Type" => "CL_DEVICE_TYPE",
        "Max compute units" => "CL_DEVICE_MAX_COMPUTE_UNITS",
        "Global memory size" => "CL_DEVICE_GLOBAL_MEM_SIZE",
        "Unified memory for Host and Device" => "CL_DEVICE_HOST_UNIFIED_MEMORY",
        "Device Available" => "CL_DEVICE_AVAILABLE",
        "Device Topology (AMD)" => "CL_DEVICE_TOPOLOGY_AMD",
        "Device Topology (NV)" => "CL_DEVICE_PCI_BUS_ID_NV",
        "Compute Capability (NV)" => "Compute Capability (NV)",
        "Device PCI bus info (KHR)" => "CL_DEVICE_PCI_BUS_INFO_KHR",
        _ => return None,
    })
}

/// clinfo's default report: `Number of platforms  N`, the platforms'
/// properties, then per platform `  Platform Name  X`, `Number of devices  N`
/// and each device's properties as two-space-indented `Label<spaces>value`
/// lines (sub-properties are indented further). The closing `NULL platform
/// behavior` and `ICD loader properties` sections repeat names and are not
/// read.
fn parse_human(text: &str) -> ClReport {
    let mut rep = ClReport::default();
    let mut listed: Option<usize> = None;
    let mut headers = 0usize;
    let mut platform: Option<u32> = None;
    let mut dev_in_platform = 0u32;
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let t = line.trim_end();
        if t.starts_with("NULL platform behavior") || t.starts_with("ICD loader properties") {
            break;
        }
        let indent = t.len() - t.trim_start().len();
        let body = t.trim_start();
        let (label, value) = match body.find("  ") {
            Some(i) => (&body[..i], body[i..].trim()),
            None => (body, ""),
        };
        if indent == 0 {
            match label {
                "Number of platforms" => listed = value.parse().ok(),
                "Number of devices" => dev_in_platform = 0,
                _ => {}
            }
            continue;
        }
        if indent != 2 {
            continue;
        }
        if label == "Platform Name" {
            headers += 1;
            match listed {
                // The platform list names each platform once; the device
                // sections follow in the same order.
                Some(n) if headers <= n => rep.platforms.push(value.to_string()),
                Some(n) => platform = Some((headers - n - 1) as u32),
                None => {
                    platform = Some(match rep.platforms.iter().position(|p| p == value) {
                        Some(i) => i as u32,
                        None => {
                            rep.platforms.push(value.to_string());
                            (rep.platforms.len() - 1) as u32
                        }
                    })
                }
            }
            continue;
        }
        let Some(pi) = platform else { continue };
        let Some(key) = human_key(label) else {
            continue;
        };
        if key == "CL_DEVICE_NAME" {
            rep.devices.push(ClDevice {
                platform_index: pi,
                device_index: dev_in_platform,
                platform_name: rep.platforms.get(pi as usize).cloned(),
                ..Default::default()
            });
            dev_in_platform += 1;
        }
        // `0x1002 (AMD)`: the id is the first word.
        let value = if key == "CL_DEVICE_VENDOR_ID" {
            value.split_whitespace().next().unwrap_or("")
        } else {
            value
        };
        if let Some(d) = rep.devices.last_mut()
            && !apply(d, key, value)
        {
            rep.warnings
                .push(format!("{label}: cannot parse {value:?}"));
        }
    }
    crate::detect::formats::cap_records(&mut rep.devices, "clinfo", &mut rep.warnings);
    if rep.devices.is_empty() && listed.is_some_and(|n| n > 0) {
        rep.warnings
            .push("clinfo: platforms listed but no device section read".to_string());
    }
    rep
}

fn parse_raw(text: &str) -> ClReport {
    let mut rep = ClReport::default();
    // Bracket prefixes of the platforms, in the order their `[P/*]` lines come.
    let mut prefixes: Vec<String> = Vec::new();
    let mut keys: Vec<(u32, u32)> = Vec::new();
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let t = line.trim();
        let Some(rest) = t.strip_prefix('[') else {
            // Unprefixed platform block: `  CL_PLATFORM_NAME  name`.
            if let Some(v) = t.strip_prefix("CL_PLATFORM_NAME") {
                rep.platforms.push(v.trim().to_string());
            }
            continue;
        };
        let Some((tag, body)) = rest.split_once(']') else {
            continue;
        };
        let Some((plat, dev)) = tag.rsplit_once('/') else {
            continue;
        };
        let body = body.trim();
        let (key, value) = match body.split_once(char::is_whitespace) {
            Some((k, v)) => (k, v.trim()),
            None => (body, ""),
        };
        if dev == "*" {
            if key == "CL_PLATFORM_NAME" && !prefixes.iter().any(|p| p == plat) {
                prefixes.push(plat.to_string());
            }
            continue;
        }
        let Ok(dev_index) = dev.parse::<u32>() else {
            continue;
        };
        let Some(pi) = prefixes.iter().position(|p| p == plat) else {
            continue; // a device line before its platform header: not clinfo's order
        };
        let pi = pi as u32;
        let idx = match keys.iter().position(|&k| k == (pi, dev_index)) {
            Some(i) => i,
            None => {
                keys.push((pi, dev_index));
                rep.devices.push(ClDevice {
                    platform_index: pi,
                    device_index: dev_index,
                    platform_name: rep.platforms.get(pi as usize).cloned(),
                    ..Default::default()
                });
                rep.devices.len() - 1
            }
        };
        if !apply(&mut rep.devices[idx], key, value) {
            rep.warnings
                .push(format!("[{tag}] {key}: cannot parse {value:?}"));
        }
    }
    crate::detect::formats::cap_records(&mut rep.devices, "clinfo", &mut rep.warnings);
    rep
}

fn parse_app_sdk(text: &str) -> ClReport {
    let mut rep = ClReport::default();
    let mut cur_platform: Option<String> = None;
    let mut platform_index: u32 = 0;
    let mut dev_in_platform: u32 = 0;
    let mut seen_devices_header = false;
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "Platform Name" => {
                // Named once in the platform list, again before its devices.
                if !rep.platforms.iter().any(|p| p == v) {
                    rep.platforms.push(v.to_string());
                }
                cur_platform = Some(v.to_string());
                continue;
            }
            "Number of devices" => {
                seen_devices_header = true;
                platform_index = cur_platform
                    .as_ref()
                    .and_then(|p| rep.platforms.iter().position(|x| x == p))
                    .unwrap_or(0) as u32;
                dev_in_platform = 0;
                continue;
            }
            "Device Type" if seen_devices_header => {
                rep.devices.push(ClDevice {
                    platform_index,
                    device_index: dev_in_platform,
                    platform_name: cur_platform.clone(),
                    ..Default::default()
                });
                dev_in_platform += 1;
            }
            _ => {}
        }
        if let Some(d) = rep.devices.last_mut() {
            if !apply(d, k, v) {
                rep.warnings.push(format!("{k}: cannot parse {v:?}"));
            }
        }
    }
    crate::detect::formats::cap_records(&mut rep.devices, "clinfo", &mut rep.warnings);
    rep
}

fn vendor_key(d: &ClDevice) -> String {
    if let Some(v) = d
        .vendor_id
        .filter(|&v| v <= 0xffff)
        .and_then(|v| vendor(v as u16))
    {
        return v.key.to_string();
    }
    let name = d.vendor.as_deref().unwrap_or("").to_ascii_lowercase();
    for (needle, key) in [
        ("nvidia", "nvidia"),
        ("advanced micro devices", "amd"),
        ("amd", "amd"),
        ("intel", "intel"),
        ("xilinx", "xilinx"),
    ] {
        if name.contains(needle) {
            return key.to_string();
        }
    }
    d.vendor_id
        .map_or_else(|| "unknown".into(), |v| format!("{v:04x}"))
}

/// Where a device sits on PCI: its own address (fixed up to the scan's
/// domain when clinfo printed none), or the only accelerator of its vendor.
fn locate(d: &ClDevice, all: &[ClDevice], scan: &PciScan) -> Option<PciAddress> {
    if let Some(a) = d.pci_address {
        if a.domain == 0 && scan.by_address(a).is_none() {
            let same: Vec<_> = scan
                .devices
                .iter()
                .filter(|p| {
                    p.address.bus == a.bus
                        && p.address.device == a.device
                        && p.address.function == a.function
                })
                .collect();
            if let [one] = same.as_slice() {
                return Some(one.address);
            }
        }
        return Some(a);
    }
    let v = u16::try_from(d.vendor_id?).ok()?;
    let peers = all
        .iter()
        .filter(|x| {
            x.platform_index == d.platform_index
                && x.device_type != Some(ClDeviceType::Cpu)
                && x.vendor_id == d.vendor_id
        })
        .count();
    let on_pci: Vec<_> = scan.by_vendor(v).collect();
    (peers == 1 && on_pci.len() == 1).then(|| on_pci[0].address)
}

/// Turn a report into devices (see the module doc for the rules).
pub fn devices_from_report(rep: &ClReport, scan: &PciScan) -> (Vec<Device>, Vec<String>) {
    let mut devices = Vec::new();
    let mut warnings = Vec::new();
    let mut cpu_notes = Vec::new();
    for d in &rep.devices {
        let name = d
            .board_name
            .clone()
            .or_else(|| d.name.clone())
            .unwrap_or_else(|| format!("OpenCL device {}:{}", d.platform_index, d.device_index));
        let ty = d.device_type.unwrap_or(ClDeviceType::Other);
        if ty == ClDeviceType::Cpu {
            let mut parts = Vec::new();
            if let Some(p) = &d.platform_name {
                parts.push(p.clone());
            }
            if let Some(v) = &d.version {
                parts.push(v.clone());
            }
            if let Some(v) = &d.driver_version {
                parts.push(format!("driver {v}"));
            }
            cpu_notes.push(format!("{name} ({})", parts.join(", ")));
            continue;
        }
        let addr = locate(d, &rep.devices, scan);
        let id = match addr {
            Some(a) => format!("pci:{a}"),
            None => format!("opencl:{}:{}", d.platform_index, d.device_index),
        };
        let vkey = vendor_key(d);
        let family = match (addr.and_then(|a| scan.by_address(a)), ty) {
            (Some(p), _) => p.family,
            (None, ClDeviceType::Gpu) => Family::Gpu,
            (None, _) if vkey == "xilinx" || d.vendor_id == Some(0x1172) => Family::Fpga,
            (None, _) => Family::AiAsic,
        };
        if addr.is_none() {
            warnings.push(format!(
                "OpenCL device {}:{} ({name}): no PCI address and no unique PCI match; listed as {id}",
                d.platform_index, d.device_index
            ));
        }
        let mut dev = Device::new(id, name, vkey.clone(), family, SOURCE);
        dev.pci_address = addr;
        if d.available == Some(false) {
            dev.available = false;
            dev.unavailable_reason = Some("OpenCL reports CL_DEVICE_AVAILABLE false".into());
        }
        match (d.host_unified_memory, d.global_mem_bytes) {
            // Unified memory is the host's RAM, not the device's own.
            (Some(true), Some(b)) => {
                dev.extra
                    .insert("opencl_global_mem_bytes".into(), b.to_string());
            }
            (_, b) => dev.memory_bytes = b,
        }
        // NVIDIA SMs and AMD CUs are what OpenCL counts; Intel counts EUs.
        if vkey == "nvidia" || vkey == "amd" {
            dev.compute_units = d.compute_units;
        }
        if let (Some(major), Some(minor)) = d.compute_capability_nv
            && vkey == "nvidia"
        {
            dev.compute_capability = Some(format!("{major}.{minor}"));
        }
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                dev.extra.insert(k.to_string(), v);
            }
        };
        put("opencl_platform", d.platform_name.clone());
        put("opencl_device_name", d.name.clone());
        put("opencl_version", d.version.clone());
        put("opencl_driver_version", d.driver_version.clone());
        put(
            "opencl_compute_units",
            d.compute_units.map(|c| c.to_string()),
        );
        put("opencl_device_type", Some(ty.as_str().to_string()));
        devices.push(dev);
    }
    if !cpu_notes.is_empty() {
        devices.push(cpu_note_device(SOURCE, "opencl_cpu_devices", &cpu_notes));
    }
    (devices, warnings)
}

/// Parser for `ai-hwaccel parse clinfo` (raw or APP SDK report).
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_clinfo(&crate::model::text::decode(bytes));
    let (devices, mut warnings) = devices_from_report(&rep, &PciScan::default());
    warnings.splice(0..0, rep.warnings);
    if rep.devices.is_empty() && rep.platforms.is_empty() {
        warnings.push("no OpenCL platform or device found in the input".into());
    }
    ParseOutput { devices, warnings }
}

/// The `opencl` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let Some(text) = run_tool(ctx, "clinfo", &["--raw"], &mut out.warnings) else {
        return out;
    };
    let rep = parse_clinfo(&text);
    let (devices, warnings) = devices_from_report(&rep, ctx.pci());
    out.warnings.extend(rep.warnings);
    out.warnings.extend(warnings);
    out.devices = devices;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clinfo prints the AMD topology's signed-char bus widened to an int:
    /// bus 0xc3 of a Strix Halo APU came out as `ffffffc3` and the device
    /// lost its PCI address.
    #[test]
    fn amd_topology_sign_extended_bus() {
        let a = |s: &str| parse_topology(s).map(|a| a.to_string());
        assert_eq!(
            a("PCI-E, 0000:ffffffc3:00.0").as_deref(),
            Some("0000:c3:00.0")
        );
        assert_eq!(a("PCI-E, ffffff80:00.0").as_deref(), Some("0000:80:00.0"));
        assert_eq!(a("PCI-E, 0000:c3:00.0").as_deref(), Some("0000:c3:00.0"));
        // Only the widening of a byte from 0x80 up is undone.
        assert_eq!(a("PCI-E, 0000:ffffff7f:00.0"), None);
        assert_eq!(a("PCI-E, 0000:ffffffffc3:00.0"), None);
    }
}
