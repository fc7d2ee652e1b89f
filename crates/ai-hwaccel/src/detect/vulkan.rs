//! The `vulkan` backend: every Vulkan physical device `vulkaninfo` reports.
//!
//! One run of `vulkaninfo --summary` lists the devices (name, type, API and
//! driver versions, vendor/device ids). The summary has no memory heaps and
//! no PCI address, so when it lists at least one GPU (not a CPU device) the
//! backend runs the full text report (`vulkaninfo`, once) and takes the
//! `memoryHeaps` and `VkPhysicalDevicePCIBusInfoPropertiesEXT` blocks from it,
//! and from its `Device Extensions` list the extensions a compute runtime
//! picks its matrix path by ([`MATRIX_EXTENSIONS`]: llama.cpp's Vulkan
//! backend multiplies on the matrix engines only through a
//! cooperative-matrix extension, and prints which as `matrix cores:`).
//!
//! **CPU devices** (`PHYSICAL_DEVICE_TYPE_CPU`: Mesa llvmpipe/lavapipe,
//! SwiftShader) are software rasterizers running on the host CPU. They are
//! not accelerators and not separate hardware, so they are never listed as
//! devices of their own: the backend reports them as a note on the CPU
//! device (id `cpu`, extra key `vulkan_cpu_devices`), which merges into the
//! system backend's CPU device. `summary.has_accelerator` is unaffected.
//!
//! **GPUs** join the device another backend reported for the same hardware:
//! by the PCI address of the full report when it has one, else by matching
//! the vendor/device id against the shared PCI scan (the k-th Vulkan device
//! with an id pairs with the k-th PCI function with that id; identical
//! boards give identical Vulkan facts, so the pairing cannot mislabel a
//! model). A GPU that cannot be paired is listed as `vulkan:<index>`.

use std::collections::BTreeMap;

use crate::model::{Device, Family, PciAddress};

use super::formats::ParseOutput;
use super::pci::PciScan;
use super::pci_ids::vendor;
use super::{BackendOutput, Context};

/// Source tag of devices this backend reports.
const SOURCE: &str = "vulkaninfo";

/// The device extensions kept from a full report's `Device Extensions`
/// list: those llama.cpp's Vulkan backend chooses its matrix-multiply path
/// by (`ggml/src/ggml-vulkan/ggml-vulkan.cpp`, `ggml_vk_get_device`: its
/// device line prints `matrix cores: NV_coopmat2`, `KHR_coopmat` or `none`,
/// and `int dot:` for the integer dot product). `VK_NV_cooperative_matrix`,
/// NVIDIA's 2019 extension that Turing drivers exposed before the KHR one
/// existed (the RTX 2080 Ti report of driver 440.59 lists it alone), is
/// kept to tell such a driver apart: llama.cpp does not use it.
pub const MATRIX_EXTENSIONS: [&str; 4] = [
    "VK_KHR_cooperative_matrix",
    "VK_NV_cooperative_matrix",
    "VK_NV_cooperative_matrix2",
    "VK_KHR_shader_integer_dot_product",
];

/// `VkPhysicalDeviceType` as vulkaninfo prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VulkanDeviceType {
    /// `PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU`.
    IntegratedGpu,
    /// `PHYSICAL_DEVICE_TYPE_DISCRETE_GPU`.
    DiscreteGpu,
    /// `PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU` (a GPU seen through a hypervisor).
    VirtualGpu,
    /// `PHYSICAL_DEVICE_TYPE_CPU`: a software implementation on the host CPU.
    Cpu,
    /// `PHYSICAL_DEVICE_TYPE_OTHER` or anything unrecognised.
    Other,
}

impl VulkanDeviceType {
    fn parse(s: &str) -> Self {
        let t = s.trim().trim_start_matches("PHYSICAL_DEVICE_TYPE_");
        match t.split_whitespace().next().unwrap_or("") {
            "INTEGRATED_GPU" => Self::IntegratedGpu,
            "DISCRETE_GPU" => Self::DiscreteGpu,
            "VIRTUAL_GPU" => Self::VirtualGpu,
            "CPU" => Self::Cpu,
            _ => Self::Other,
        }
    }

    /// Lowercase name (`discrete_gpu`, `cpu`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IntegratedGpu => "integrated_gpu",
            Self::DiscreteGpu => "discrete_gpu",
            Self::VirtualGpu => "virtual_gpu",
            Self::Cpu => "cpu",
            Self::Other => "other",
        }
    }
}

/// One `memoryHeaps[i]` of the full report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanHeap {
    /// Heap size in bytes.
    pub size_bytes: u64,
    /// Flagged `MEMORY_HEAP_DEVICE_LOCAL_BIT`.
    pub device_local: bool,
}

/// One physical device as vulkaninfo reports it. Absent keys are `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanDevice {
    /// The `GPU<n>` index.
    pub index: u32,
    /// `deviceName`.
    pub name: Option<String>,
    /// `deviceType`; `None` when the key is missing.
    pub device_type: Option<VulkanDeviceType>,
    /// `apiVersion` (`1.3.230`).
    pub api_version: Option<String>,
    /// `driverVersion` as vulkaninfo decodes it.
    pub driver_version: Option<String>,
    /// `driverName` (`llvmpipe`, `radv`, `NVIDIA`).
    pub driver_name: Option<String>,
    /// `driverInfo` (`Mesa 22.3.6 (LLVM 15.0.6)`).
    pub driver_info: Option<String>,
    /// `driverID` (`DRIVER_ID_MESA_LLVMPIPE`).
    pub driver_id: Option<String>,
    /// `vendorID`: a PCI vendor id, or a Khronos id above 0xffff (0x10005 = Mesa).
    pub vendor_id: Option<u32>,
    /// `deviceID`.
    pub device_id: Option<u32>,
    /// `deviceUUID`.
    pub device_uuid: Option<String>,
    /// Memory heaps (full report only; empty from the summary).
    pub heaps: Vec<VulkanHeap>,
    /// PCI address from `VkPhysicalDevicePCIBusInfoPropertiesEXT` (full report only).
    pub pci_address: Option<PciAddress>,
    /// Which of [`MATRIX_EXTENSIONS`] the `Device Extensions` list names,
    /// in that order (full report only); `None` when the report listed no
    /// device extensions.
    pub matrix_extensions: Option<Vec<String>>,
}

impl VulkanDevice {
    fn new(index: u32) -> Self {
        VulkanDevice {
            index,
            name: None,
            device_type: None,
            api_version: None,
            driver_version: None,
            driver_name: None,
            driver_info: None,
            driver_id: None,
            vendor_id: None,
            device_id: None,
            device_uuid: None,
            heaps: Vec::new(),
            pci_address: None,
            matrix_extensions: None,
        }
    }

    /// Sum of the device-local heaps; `None` when no heap is known.
    pub fn device_local_bytes(&self) -> Option<u64> {
        let local: Vec<u64> = self
            .heaps
            .iter()
            .filter(|h| h.device_local)
            .map(|h| h.size_bytes)
            .collect();
        (!local.is_empty()).then(|| local.iter().fold(0u64, |a, b| a.saturating_add(*b)))
    }
}

/// What one vulkaninfo output held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VulkanReport {
    /// `Vulkan Instance Version`.
    pub instance_version: Option<String>,
    /// Devices in `GPU<n>` order.
    pub devices: Vec<VulkanDevice>,
    /// Lines that looked like facts but did not parse.
    pub warnings: Vec<String>,
}

/// A version as vulkaninfo prints it: `1.3.230`, `1.3.230 (4206822)` or the
/// older `4202671 (1.2.175)`: the dotted part.
fn dotted_version(v: &str) -> String {
    let v = v.trim();
    let first = v.split_whitespace().next().unwrap_or("");
    if first.contains('.') {
        return first.to_string();
    }
    if let (Some(a), Some(b)) = (v.find('('), v.rfind(')')) {
        if a < b && v[a + 1..b].contains('.') {
            return v[a + 1..b].trim().to_string();
        }
    }
    v.to_string()
}

/// A driverVersion that vulkaninfo printed as the packed integer (its
/// releases up to 1.3.2xx: `92274688 (0x5800000)`), decoded the way
/// vulkaninfo itself decodes it: NVIDIA packs 10.8.8.6 bits, everyone else
/// the core `VK_MAKE_VERSION` 10.10.12 layout (Mesa 22.0.0 is 0x5800000).
/// Intel's Windows driver packs 18.14 bits (`major.minor` of its
/// `31.0.101.3616` style version: 1658400 is 101.3616), as LunarG's Vulkan
/// Configurator formats it (LunarG/VulkanTools `vkconfig_core/util.cpp`,
/// `FormatIntelWindows`), while Mesa's Intel driver uses the core layout;
/// the `driverID` (`DRIVER_ID_INTEL_PROPRIETARY_WINDOWS`,
/// `DRIVER_ID_INTEL_OPEN_SOURCE_MESA`) says which, and an Intel value
/// without one stays as printed. `None` when `raw` is not a bare integer.
fn decode_driver_version(
    raw: &str,
    vendor: Option<u32>,
    driver_id: Option<&str>,
) -> Option<String> {
    let n: u32 = raw.split_whitespace().next()?.parse().ok()?;
    let core = || format!("{}.{}.{}", n >> 22, (n >> 12) & 0x3ff, n & 0xfff);
    match (vendor, driver_id) {
        (Some(0x10de), _) => Some(format!(
            "{}.{}.{}.{}",
            n >> 22,
            (n >> 14) & 0xff,
            (n >> 6) & 0xff,
            n & 0x3f
        )),
        (Some(0x8086), Some("DRIVER_ID_INTEL_PROPRIETARY_WINDOWS")) => {
            Some(format!("{}.{}", n >> 14, n & 0x3fff))
        }
        (Some(0x8086), Some("DRIVER_ID_INTEL_OPEN_SOURCE_MESA")) => Some(core()),
        (Some(0x8086), _) | (None, _) => None,
        (Some(_), _) => Some(core()),
    }
}

fn parse_id(v: &str) -> Option<u32> {
    let t = v.split_whitespace().next()?;
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Parse `vulkaninfo --summary` or the full text report (`vulkaninfo`,
/// `vulkaninfo --text`). Devices start at `GPU<n>:` lines (`GPU<n>` in
/// vulkaninfo 1.1.7x); inside each,
/// the first `key = value` of each known key counts. Never panics.
pub fn parse_vulkaninfo(text: &str) -> VulkanReport {
    let mut rep = VulkanReport::default();
    let mut cur: Option<VulkanDevice> = None;
    let mut heap: Option<usize> = None;
    // Inside a device's `Device Extensions` list.
    let mut in_extensions = false;
    let mut pci: [Option<u32>; 4] = [None; 4];
    let finish =
        |cur: &mut Option<VulkanDevice>, pci: &mut [Option<u32>; 4], rep: &mut VulkanReport| {
            if let Some(mut d) = cur.take() {
                if let Some(v) = d
                    .driver_version
                    .as_deref()
                    .and_then(|raw| decode_driver_version(raw, d.vendor_id, d.driver_id.as_deref()))
                {
                    d.driver_version = Some(v);
                }
                if let [Some(dom), Some(bus), Some(dev), Some(fun)] = *pci {
                    if bus <= 0xff && dev <= 0x1f && fun <= 7 {
                        d.pci_address = Some(PciAddress {
                            domain: dom,
                            bus: bus as u8,
                            device: dev as u8,
                            function: fun as u8,
                        });
                    } else {
                        rep.warnings.push(format!(
                            "GPU{}: PCI bus info out of range: {dom}:{bus}:{dev}.{fun}",
                            d.index
                        ));
                    }
                }
                rep.devices.push(d);
            }
            *pci = [None; 4];
        };
    for raw in text.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let line = raw.trim_end();
        // A device header: `GPU0:` at the start of a line (`GPU0` alone in
        // the 1.1.7x reports of 2018-2019).
        if let Some(n) = line
            .strip_prefix("GPU")
            .map(|r| r.strip_suffix(':').unwrap_or(r))
            .and_then(|n| n.parse::<u32>().ok())
        {
            finish(&mut cur, &mut pci, &mut rep);
            cur = Some(VulkanDevice::new(n));
            heap = None;
            in_extensions = false;
            continue;
        }
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Vulkan Instance Version:") {
            rep.instance_version = Some(v.trim().to_string());
            continue;
        }
        let Some(d) = cur.as_mut() else { continue };
        // `Device Extensions: count = 152` (`Device Extensions\tcount = 34`
        // in the 1.1.7x reports), an underline in some releases, then one
        // `VK_… : extension revision N` line each up to a blank line.
        if t.starts_with("Device Extensions") {
            in_extensions = true;
            d.matrix_extensions.get_or_insert_with(Vec::new);
            continue;
        }
        if in_extensions {
            if !t.is_empty() && t.chars().all(|c| c == '-' || c == '=') {
                continue;
            }
            if let Some(name) = t
                .starts_with("VK_")
                .then(|| t.split([' ', '\t', ':']).next().unwrap_or(""))
            {
                if let Some(list) = d.matrix_extensions.as_mut()
                    && MATRIX_EXTENSIONS.contains(&name)
                    && !list.iter().any(|x| x == name)
                {
                    list.push(name.to_string());
                    list.sort_by_key(|x| MATRIX_EXTENSIONS.iter().position(|e| e == x));
                }
                continue;
            }
            in_extensions = false;
        }
        if let Some(rest) = t.strip_prefix("memoryHeaps[") {
            heap = rest
                .split(']')
                .next()
                .and_then(|i| i.parse::<usize>().ok())
                .filter(|&i| i < 64);
            if let Some(i) = heap {
                while d.heaps.len() <= i {
                    d.heaps.push(VulkanHeap {
                        size_bytes: 0,
                        device_local: false,
                    });
                }
            }
            continue;
        }
        if t.starts_with("memoryTypes") {
            heap = None;
            continue;
        }
        if let Some(i) = heap {
            if t.contains("MEMORY_HEAP_DEVICE_LOCAL_BIT") {
                d.heaps[i].device_local = true;
                continue;
            }
        }
        let Some((k, v)) = t.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let set = |slot: &mut Option<String>, val: String| {
            if slot.is_none() && !val.is_empty() {
                *slot = Some(val);
            }
        };
        match k {
            "size" if heap.is_some() => {
                let i = heap.unwrap_or_default();
                match v
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    Some(n) => d.heaps[i].size_bytes = n,
                    None => rep.warnings.push(format!(
                        "GPU{}: memoryHeaps[{i}] size {v:?} is not a number",
                        d.index
                    )),
                }
            }
            "deviceName" => set(&mut d.name, v.to_string()),
            "deviceType" if d.device_type.is_none() => {
                d.device_type = Some(VulkanDeviceType::parse(v));
            }
            "apiVersion" => set(&mut d.api_version, dotted_version(v)),
            "driverVersion" => set(&mut d.driver_version, dotted_version(v)),
            "driverName" => set(&mut d.driver_name, v.to_string()),
            "driverInfo" => set(&mut d.driver_info, v.to_string()),
            "driverID" => set(&mut d.driver_id, v.to_string()),
            "deviceUUID" => set(&mut d.device_uuid, v.to_string()),
            "vendorID" | "deviceID" => {
                let slot = if k == "vendorID" {
                    &mut d.vendor_id
                } else {
                    &mut d.device_id
                };
                if slot.is_none() {
                    *slot = parse_id(v);
                    if slot.is_none() {
                        rep.warnings
                            .push(format!("GPU{}: {k} {v:?} is not a number", d.index));
                    }
                }
            }
            "pciDomain" | "pciBus" | "pciDevice" | "pciFunction" => {
                let i = ["pciDomain", "pciBus", "pciDevice", "pciFunction"]
                    .iter()
                    .position(|x| *x == k)
                    .unwrap_or(0);
                if pci[i].is_none() {
                    pci[i] = parse_id(v);
                }
            }
            _ => {}
        }
    }
    finish(&mut cur, &mut pci, &mut rep);
    crate::detect::formats::cap_records(&mut rep.devices, "vulkaninfo", &mut rep.warnings);
    rep
}

/// Lowercase vendor key for a Vulkan vendor id: the PCI vendor table, or the
/// Khronos vendor ids above 0xffff (`VkVendorId` in the Vulkan registry).
/// Vendors of platform GPUs that only Vulkan reports, by PCI vendor id
/// (Debian `pci.ids`: 13b5 ARM, 5143 Qualcomm Inc, 1010 Video Logic =
/// Imagination, 14e4 Broadcom, 144d Samsung Electronics).
const PLATFORM_GPU_VENDORS: &[(u32, &str)] = &[
    (0x13b5, "arm"),
    (0x5143, "qualcomm"),
    (0x1010, "imagination"),
    (0x14e4, "broadcom"),
    (0x144d, "samsung"),
];

/// The vendor a platform GPU's name gives away, for drivers that report
/// vendorID 0 (panvk's Mali-T860 in 2022: `vendorID = 0x0000`).
fn vendor_from_name(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    [
        ("mali", "arm"),
        ("adreno", "qualcomm"),
        ("powervr", "imagination"),
        ("v3d", "broadcom"),
        ("apple", "apple"),
    ]
    .into_iter()
    .find(|(needle, _)| n.contains(needle))
    .map(|(_, key)| key)
}

fn vendor_key(id: Option<u32>, name: &str) -> String {
    match id {
        // 0 is no vendor: a driver that does not fill the field.
        Some(0) | None => vendor_from_name(name).unwrap_or("unknown").into(),
        Some(v) if v <= 0xffff => vendor(v as u16).map_or_else(
            || {
                PLATFORM_GPU_VENDORS
                    .iter()
                    .find(|(id, _)| *id == v)
                    .map_or_else(|| format!("{v:04x}"), |(_, k)| (*k).to_string())
            },
            |x| x.key.to_string(),
        ),
        Some(0x10001) => "vivante".into(),
        Some(0x10002) => "verisilicon".into(),
        Some(0x10003) => "kazan".into(),
        Some(0x10004) => "codeplay".into(),
        Some(0x10005) => "mesa".into(),
        Some(0x10006) => "pocl".into(),
        Some(0x10007) => "mobileye".into(),
        Some(v) => format!("{v:x}"),
    }
}

/// Pair each non-CPU Vulkan device with a PCI function: its own bus info
/// first, else the k-th device with a vendor:device id takes the k-th PCI
/// function with that id (only when both sides count the same). Returns the
/// address per device index and whether the pairing was by order among
/// several identical devices.
fn pair_with_pci(devs: &[VulkanDevice], scan: &PciScan) -> Vec<(Option<PciAddress>, bool)> {
    let mut out = Vec::with_capacity(devs.len());
    for (i, d) in devs.iter().enumerate() {
        if d.pci_address.is_some() {
            out.push((d.pci_address, false));
            continue;
        }
        let (Some(v), Some(id)) = (d.vendor_id, d.device_id) else {
            out.push((None, false));
            continue;
        };
        let same = |x: &VulkanDevice| {
            x.device_type != Some(VulkanDeviceType::Cpu)
                && x.pci_address.is_none()
                && x.vendor_id == Some(v)
                && x.device_id == Some(id)
        };
        if !same(d) || v > 0xffff || id > 0xffff {
            out.push((None, false));
            continue;
        }
        let rank = devs[..i].iter().filter(|x| same(x)).count();
        let total = devs.iter().filter(|x| same(x)).count();
        let cands: Vec<PciAddress> = scan
            .devices
            .iter()
            .filter(|p| u32::from(p.vendor_id) == v && u32::from(p.device_id) == id)
            .map(|p| p.address)
            .collect();
        if cands.len() == total {
            out.push((Some(cands[rank]), total > 1));
        } else {
            out.push((None, false));
        }
    }
    out
}

/// Mesa's RADV names a device `<marketing name> (RADV <chip><compiler>)`
/// (`radv_physical_device.c`: `"%s (RADV %s%s)"`, the marketing name from
/// libdrm's `amdgpu.ids` or `AMD Unknown`): the marketing name and the chip
/// codename, or `None` for any other spelling (older RADV's `AMD RADV
/// NAVI10 (ACO)` has no marketing name; `AMD Unknown` is none either).
fn radv_name_parts(name: &str) -> Option<(&str, &str)> {
    let inner = name.strip_suffix(')')?;
    let at = inner.rfind(" (RADV ")?;
    let (marketing, chip) = (inner[..at].trim(), inner[at + 7..].trim());
    (!marketing.is_empty() && marketing != "AMD Unknown" && !chip.is_empty())
        .then_some((marketing, chip))
}

/// Turn a report into devices: GPUs (paired with `scan` where possible) and
/// one `cpu` device carrying the CPU implementations as a note.
pub fn devices_from_report(rep: &VulkanReport, scan: &PciScan) -> (Vec<Device>, Vec<String>) {
    let mut devices = Vec::new();
    let mut warnings = Vec::new();
    let pairing = pair_with_pci(&rep.devices, scan);
    let mut cpu_notes = Vec::new();
    for (d, (addr, by_order)) in rep.devices.iter().zip(pairing) {
        let name = d
            .name
            .clone()
            .unwrap_or_else(|| format!("Vulkan device {}", d.index));
        if d.device_type == Some(VulkanDeviceType::Cpu) {
            let mut parts = Vec::new();
            if let Some(i) = d.driver_info.as_ref().or(d.driver_name.as_ref()) {
                parts.push(i.clone());
            }
            if let Some(a) = &d.api_version {
                parts.push(format!("Vulkan {a}"));
            }
            cpu_notes.push(if parts.is_empty() {
                name
            } else {
                format!("{name} ({})", parts.join(", "))
            });
            continue;
        }
        let id = match addr {
            Some(a) => format!("pci:{a}"),
            None => format!("vulkan:{}", d.index),
        };
        if addr.is_none() && d.vendor_id.is_some_and(|v| v <= 0xffff) {
            let same_id = scan.devices.iter().any(|p| {
                Some(u32::from(p.vendor_id)) == d.vendor_id
                    && Some(u32::from(p.device_id)) == d.device_id
            });
            if same_id {
                warnings.push(format!(
                    "GPU{} ({name}): cannot tell which PCI device with id {:04x}:{:04x} it is; listed as {id}",
                    d.index,
                    d.vendor_id.unwrap_or_default(),
                    d.device_id.unwrap_or_default()
                ));
            }
        }
        let radv = radv_name_parts(&name).map(|(m, c)| (m.to_string(), c.to_string()));
        let shown = radv
            .as_ref()
            .map_or_else(|| name.clone(), |(m, _)| m.clone());
        let mut dev = Device::new(
            id,
            shown,
            vendor_key(d.vendor_id, &name),
            Family::Gpu,
            SOURCE,
        );
        if let Some((_, chip)) = radv {
            dev.extra.insert("vulkan_device_name".into(), name.clone());
            dev.extra.insert("radv_chip".into(), chip);
        }
        dev.pci_address = addr;
        let ty = d.device_type.unwrap_or(VulkanDeviceType::Other);
        let local = d.device_local_bytes();
        match ty {
            // Integrated GPUs' device-local heap is a share of system memory.
            VulkanDeviceType::IntegratedGpu => {
                if let Some(b) = local {
                    dev.extra
                        .insert("vulkan_device_local_heap_bytes".into(), b.to_string());
                }
            }
            _ => dev.memory_bytes = local,
        }
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                dev.extra.insert(k.to_string(), v.clone());
            }
        };
        put("vulkan_api_version", &d.api_version);
        put("vulkan_driver_version", &d.driver_version);
        put("vulkan_driver_name", &d.driver_name);
        put("vulkan_driver_info", &d.driver_info);
        put("vulkan_driver_id", &d.driver_id);
        put(
            crate::model::VULKAN_MATRIX_EXTENSIONS_KEY,
            &d.matrix_extensions.as_ref().map(|list| {
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(" ")
                }
            }),
        );
        if !by_order {
            put("vulkan_device_uuid", &d.device_uuid);
        }
        dev.extra
            .insert("vulkan_device_type".into(), ty.as_str().to_string());
        dev.extra.insert("vulkan_index".into(), d.index.to_string());
        devices.push(dev);
    }
    if !cpu_notes.is_empty() {
        devices.push(cpu_note_device(SOURCE, "vulkan_cpu_devices", &cpu_notes));
    }
    (devices, warnings)
}

/// The `cpu` device that carries a note about software (CPU) implementations
/// of a compute API; it merges into the system backend's CPU device.
pub(super) fn cpu_note_device(source: &str, key: &str, notes: &[String]) -> Device {
    let mut d = Device::new("cpu", "CPU", "unknown", Family::Cpu, source);
    d.extra.insert(key.to_string(), notes.join("; "));
    d
}

/// Run a tool through the probe; `None` (with a warning unless the tool is
/// simply absent) when it cannot run or printed nothing.
pub(super) fn run_tool(
    ctx: &Context,
    tool: &str,
    args: &[&str],
    warnings: &mut Vec<String>,
) -> Option<String> {
    let cmd = if args.is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {}", args.join(" "))
    };
    match ctx.probe.run(tool, args) {
        Err(e) if e.is_absent() => None,
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
        Ok(o) => {
            if o.truncated {
                warnings.push(format!("{cmd}: output cut at the output cap"));
            }
            if !o.success() {
                warnings.push(format!(
                    "{cmd}: exited with {}: {}",
                    o.status
                        .map_or_else(|| "a signal".to_string(), |s| s.to_string()),
                    o.stderr_line()
                ));
                if o.stdout.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
            }
            Some(o.stdout_text())
        }
    }
}

/// Parser for `ai-hwaccel parse vulkaninfo` (summary or full text).
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let text = crate::model::text::decode(bytes);
    let rep = parse_vulkaninfo(&text);
    let (devices, mut warnings) = devices_from_report(&rep, &PciScan::default());
    warnings.splice(0..0, rep.warnings);
    if rep.devices.is_empty() {
        warnings.push("no `GPU<n>:` device sections found".into());
    }
    ParseOutput { devices, warnings }
}

/// The `vulkan` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let Some(text) = run_tool(ctx, "vulkaninfo", &["--summary"], &mut out.warnings) else {
        return out;
    };
    let mut rep = parse_vulkaninfo(&text);
    let wants_full = rep
        .devices
        .iter()
        .any(|d| d.device_type != Some(VulkanDeviceType::Cpu));
    if wants_full {
        if let Some(full) = run_tool(ctx, "vulkaninfo", &[], &mut out.warnings) {
            let full = parse_vulkaninfo(&full);
            let by_index: BTreeMap<u32, &VulkanDevice> =
                full.devices.iter().map(|d| (d.index, d)).collect();
            let gpus = rep
                .devices
                .iter_mut()
                .filter(|d| d.device_type != Some(VulkanDeviceType::Cpu));
            for d in gpus {
                match by_index.get(&d.index) {
                    Some(f) if f.name == d.name => {
                        d.heaps.clone_from(&f.heaps);
                        d.pci_address = f.pci_address;
                        d.matrix_extensions.clone_from(&f.matrix_extensions);
                    }
                    _ => out.warnings.push(format!(
                        "vulkaninfo: GPU{} missing or renamed in the full report; no heaps",
                        d.index
                    )),
                }
            }
        }
    }
    let (devices, warnings) = devices_from_report(&rep, ctx.pci());
    out.warnings.extend(rep.warnings);
    out.warnings.extend(warnings);
    out.devices = devices;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vulkaninfo up to 1.3.2xx printed driverVersion packed
    /// (`96477185 (0x5c02001)` for RADV of Mesa 23.2.1); it was kept raw.
    #[test]
    fn packed_driver_versions() {
        assert_eq!(
            decode_driver_version("96477185 (0x5c02001)", Some(0x1002), None).as_deref(),
            Some("23.2.1")
        );
        assert_eq!(
            decode_driver_version("92274688 (0x5800000)", Some(0), None).as_deref(),
            Some("22.0.0")
        );
        // NVIDIA 440.59: 440 << 22 | 59 << 14.
        let nv = (440u32 << 22) | (59 << 14);
        assert_eq!(
            decode_driver_version(&nv.to_string(), Some(0x10de), None).as_deref(),
            Some("440.59.0.0")
        );
        assert_eq!(decode_driver_version("1234", Some(0x8086), None), None);
        assert_eq!(decode_driver_version("23.2.1", Some(0x1002), None), None);
        // Intel: the driverID says which layout (the egakeru capture's
        // Windows driver: 1658400 = 101 << 14 | 3616).
        assert_eq!(
            decode_driver_version(
                "1658400 (0x194e20)",
                Some(0x8086),
                Some("DRIVER_ID_INTEL_PROPRIETARY_WINDOWS")
            )
            .as_deref(),
            Some("101.3616")
        );
        assert_eq!(
            decode_driver_version(
                "92274688 (0x5800000)",
                Some(0x8086),
                Some("DRIVER_ID_INTEL_OPEN_SOURCE_MESA")
            )
            .as_deref(),
            Some("22.0.0")
        );
    }

    /// panvk (Mali-T860, 2022) reports vendorID 0x0000, and platform GPUs
    /// report PCI vendor ids outside the accelerator table (ARM 0x13b5,
    /// Qualcomm 0x5143): those became vendors `0000` and `13b5`.
    #[test]
    fn platform_gpu_vendors() {
        assert_eq!(vendor_key(Some(0), "Mali-T860 (Panfrost)"), "arm");
        assert_eq!(vendor_key(Some(0x13b5), "Mali-G610"), "arm");
        assert_eq!(vendor_key(Some(0x5143), "Adreno (TM) 740"), "qualcomm");
        assert_eq!(
            vendor_key(Some(0x1010), "PowerVR B-Series BXE-4-32"),
            "imagination"
        );
        assert_eq!(vendor_key(Some(0), "some gpu"), "unknown");
        assert_eq!(vendor_key(None, "some gpu"), "unknown");
        assert_eq!(
            vendor_key(Some(0x10de), "NVIDIA GeForce RTX 4090"),
            "nvidia"
        );
        assert_eq!(vendor_key(Some(0x1234), "x"), "1234");
    }

    #[test]
    fn radv_names() {
        assert_eq!(
            radv_name_parts("AMD Radeon RX 7800 XT (RADV NAVI32)"),
            Some(("AMD Radeon RX 7800 XT", "NAVI32"))
        );
        assert_eq!(
            radv_name_parts("AMD Radeon Graphics (RADV RAPHAEL_MENDOCINO)"),
            Some(("AMD Radeon Graphics", "RAPHAEL_MENDOCINO"))
        );
        assert_eq!(radv_name_parts("AMD Unknown (RADV GFX1201)"), None);
        assert_eq!(radv_name_parts("AMD RADV NAVI10 (ACO)"), None);
        assert_eq!(radv_name_parts("NVIDIA GeForce RTX 2080 Ti"), None);
        assert_eq!(radv_name_parts("Intel(R) Xe Graphics (TGL GT2)"), None);
    }
}
