//! One detected device (accelerator or CPU) and the facts planners need about it.

use serde::{Deserialize, Serialize};

use super::PciAddress;

/// Broad kind of a device. Serialized in snake_case (`ai_asic`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// The host CPU; never counts as an accelerator.
    Cpu,
    /// Graphics processors used for compute.
    Gpu,
    /// Neural processing units in the client sense: NPUs integrated beside a
    /// CPU that share host memory (Intel NPU, AMD XDNA, Apple Neural Engine, …).
    Npu,
    /// Google Tensor Processing Units.
    Tpu,
    /// Other AI ASICs: discrete accelerators with their own memory (Gaudi,
    /// Inferentia/Trainium, Cloud AI 100, Tenstorrent, Huawei Ascend, …).
    ///
    /// Huawei calls Ascend chips "NPUs" (`npu-smi`), but they are PCIe/OAM
    /// cards with their own HBM or DDR, planned for like Gaudi or Trainium;
    /// `npu` is kept for integrated client NPUs that share host memory, so a
    /// family answers "what kind of memory and role", not "what the vendor
    /// calls it". Huawei's term stays in device names, `extra.npu_id` and the
    /// `npu-smi` source.
    AiAsic,
    /// Field-programmable gate arrays.
    Fpga,
    /// Offload engines that are not general AI compute (QAT, DPUs).
    Offload,
}

impl Family {
    /// Every family, in display order.
    pub const ALL: [Family; 7] = [
        Family::Cpu,
        Family::Gpu,
        Family::Npu,
        Family::Tpu,
        Family::AiAsic,
        Family::Fpga,
        Family::Offload,
    ];

    /// The JSON / CLI spelling of this family.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Cpu => "cpu",
            Family::Gpu => "gpu",
            Family::Npu => "npu",
            Family::Tpu => "tpu",
            Family::AiAsic => "ai_asic",
            Family::Fpga => "fpga",
            Family::Offload => "offload",
        }
    }

    /// Whether devices of this family count as AI accelerators in the summary.
    /// The CPU and offload engines (QAT, DPUs) do not.
    pub fn is_accelerator(self) -> bool {
        !matches!(self, Family::Cpu | Family::Offload)
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Family {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        Family::ALL
            .into_iter()
            .find(|f| f.as_str() == norm)
            .ok_or_else(|| {
                let names = Family::ALL.map(|f| f.as_str());
                format!(
                    "unknown family {s:?}{} (expected one of: {})",
                    crate::suggest::hint(&crate::suggest::suggest(s, names)),
                    names.join(", ")
                )
            })
    }
}

/// PCIe link state as sysfs or a vendor tool reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PcieLink {
    /// Current link speed per lane in GT/s (e.g. 16.0 for PCIe 4.0).
    pub current_speed_gts: Option<f64>,
    /// Current number of lanes.
    pub current_width: Option<u32>,
    /// Maximum link speed per lane in GT/s the device supports.
    pub max_speed_gts: Option<f64>,
    /// Maximum number of lanes the device supports.
    pub max_width: Option<u32>,
}

/// Per-lane rates of PCIe generations 1–6 in GT/s (PCI-SIG base
/// specifications).
const PCIE_RATES: [(f64, u32); 6] = [
    (2.5, 1),
    (5.0, 2),
    (8.0, 3),
    (16.0, 4),
    (32.0, 5),
    (64.0, 6),
];

impl PcieLink {
    /// PCIe generation implied by a per-lane rate in GT/s (PCI-SIG base
    /// specifications: 2.5, 5, 8, 16, 32, 64 GT/s for gen 1–6).
    pub fn generation_for_speed(gts: f64) -> Option<u32> {
        PCIE_RATES
            .iter()
            .find(|(r, _)| (gts - r).abs() < 0.01)
            .map(|&(_, g)| g)
    }

    /// Per-lane rate in GT/s of a PCIe generation (the inverse of
    /// [`PcieLink::generation_for_speed`]).
    pub fn speed_for_generation(generation: u32) -> Option<f64> {
        PCIE_RATES
            .iter()
            .find(|&&(_, g)| g == generation)
            .map(|&(r, _)| r)
    }

    /// Payload bandwidth of a link in one direction, bytes per second,
    /// unrounded: per-lane rate × lanes × line-code efficiency ÷ 8 bits. The
    /// line code is 8b/10b for gen 1–2, 128b/130b for gen 3–5 (PCI-SIG base
    /// specifications 2.0 and 3.0) and, for gen 6, FLIT mode's 242 payload
    /// bytes in 256 (PCIe 6.0 base specification). `None` for a rate that is
    /// no PCIe generation's or zero lanes.
    fn payload_one_way(gts: f64, lanes: u32) -> Option<f64> {
        let efficiency = match Self::generation_for_speed(gts)? {
            1 | 2 => 8.0 / 10.0,
            3..=5 => 128.0 / 130.0,
            _ => 242.0 / 256.0,
        };
        (lanes > 0).then(|| gts * 1e9 * f64::from(lanes) * efficiency / 8.0)
    }

    /// Payload bandwidth of a link in one direction, bytes per second
    /// (see [`PcieLink::bandwidth_bytes_per_s`] for the line codes).
    pub fn one_way_bytes_per_s(gts: f64, lanes: u32) -> Option<u64> {
        Self::payload_one_way(gts, lanes).map(|b| b.round() as u64)
    }

    /// Payload bandwidth of a link, bytes per second with both directions
    /// added (the convention of datasheets' "PCIe Gen4: 64 GB/s"): the
    /// one-way payload rate × 2.
    pub fn bandwidth_bytes_per_s(gts: f64, lanes: u32) -> Option<u64> {
        Self::payload_one_way(gts, lanes).map(|b| (b * 2.0).round() as u64)
    }

    /// Bandwidth this link carries in use: the device's maximum rate (an
    /// idle GPU trains its link down to a lower rate, so the current rate
    /// understates it) over the current width when known (a card in a
    /// narrower slot keeps that width), else the maximum width.
    pub fn usable_bandwidth_bytes_per_s(&self) -> Option<u64> {
        let gts = self.max_speed_gts.or(self.current_speed_gts)?;
        let lanes = self.current_width.or(self.max_width)?;
        Self::bandwidth_bytes_per_s(gts, lanes)
    }
}

/// Identity of a device on the PCI bus.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PciInfo {
    /// Vendor id, lowercase hex without `0x` (e.g. `10de`).
    pub vendor_id: String,
    /// Device id, lowercase hex without `0x`.
    pub device_id: String,
    /// Subsystem vendor id, if known.
    pub subsystem_vendor_id: Option<String>,
    /// Subsystem device id, if known.
    pub subsystem_device_id: Option<String>,
    /// Class code, 6 lowercase hex digits (base class, subclass, prog-if).
    pub class: Option<String>,
    /// Revision id, 2 lowercase hex digits.
    pub revision: Option<String>,
    /// Link speed and width.
    pub link: Option<PcieLink>,
}

/// `extra` key of the device memory the driver keeps for itself, in bytes
/// (NVIDIA: `nvmlMemory_v2_t.reserved`, nvidia-smi's "FB Memory Usage /
/// Reserved", `memory.reserved`). CUDA, and so every CUDA runtime, sees
/// `memory_bytes` less this as the device's total.
pub const MEMORY_RESERVED_KEY: &str = "memory_reserved_bytes";

/// `extra` key of the cooperative-matrix and integer-dot-product device
/// extensions a GPU's Vulkan driver lists (`detect::vulkan`, from the full
/// `vulkaninfo` report), space-separated, or `none`; absent when no
/// extension list was read.
pub const VULKAN_MATRIX_EXTENSIONS_KEY: &str = "vulkan_matrix_extensions";

/// One device: an accelerator, an offload engine or the CPU.
///
/// Every measured value is an `Option`: `None` means unknown, never zero.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Device {
    /// Stable identifier: `pci:<address>` for PCI devices, `cpu` for the host CPU,
    /// or a backend-specific stable name for devices without a PCI address.
    pub id: String,
    /// Human-readable name (marketing name where known).
    pub name: String,
    /// Lowercase vendor: nvidia, amd, intel, google, aws, habana, qualcomm, apple, …
    pub vendor: String,
    /// Broad kind.
    pub family: Family,
    /// Whether this process can use the device now.
    pub available: bool,
    /// Why `available` is false (missing driver, passthrough, hidden, …).
    #[serde(default)]
    pub unavailable_reason: Option<String>,
    /// Device memory in bytes (for the CPU: usable system memory). For a
    /// device that draws on the host's memory (`shared_memory` set)
    /// this is what it can use: its limit when one is known, else the pool.
    pub memory_bytes: Option<u64>,
    /// Free device memory in bytes at detection time.
    pub memory_free_bytes: Option<u64>,
    /// PCI address, lowercase `dddd:bb:dd.f`.
    pub pci_address: Option<PciAddress>,
    /// NUMA node the device is attached to.
    pub numa_node: Option<u32>,
    /// CPUs local to the device (`local_cpulist` of its PCI function).
    #[serde(default)]
    pub local_cpus: Option<Vec<u32>>,
    /// Where the device sits on PCI: host bridge and the bridges above it.
    #[serde(default)]
    pub pci_path: Option<super::PciPath>,
    /// Kernel driver bound to the device.
    pub driver: Option<String>,
    /// Version of that driver (or of the vendor stack).
    pub driver_version: Option<String>,
    /// Compute capability / architecture version (`9.0`, `gfx942`, …).
    pub compute_capability: Option<String>,
    /// Vendor UUID of the device.
    pub uuid: Option<String>,
    /// Which probe(s) found the device, joined with `+` (e.g. `pci-sysfs`).
    pub source: String,
    /// PCI identity and link, when the device is on PCI.
    #[serde(default)]
    pub pci: Option<PciInfo>,
    /// Index the vendor tool/library gives the device (nvidia-smi index, KFD node, …).
    #[serde(default)]
    pub index: Option<u32>,
    /// Serial number.
    #[serde(default)]
    pub serial: Option<String>,
    /// Architecture name (`Hopper`, `CDNA3`, `Xe-HPC`, …).
    #[serde(default)]
    pub architecture: Option<String>,
    /// Firmware / VBIOS version.
    #[serde(default)]
    pub firmware_version: Option<String>,
    /// Compute units (NVIDIA SMs, AMD CUs, Intel Xe cores, NeuronCores, …).
    #[serde(default)]
    pub compute_units: Option<u32>,
    /// Enforced power limit in watts.
    #[serde(default)]
    pub power_limit_watts: Option<f64>,
    /// Compute utilization in percent at detection time, as the vendor tool
    /// printed it (nvidia-smi `utilization.gpu`, hl-smi `AIP-Util`, npu-smi
    /// `AICore(%)`, rocm-smi `GPU use (%)`, tpu-info duty cycle).
    #[serde(default)]
    pub utilization_percent: Option<f64>,
    /// Power draw in watts at detection time, as the vendor tool printed it.
    #[serde(default)]
    pub power_draw_watts: Option<f64>,
    /// Temperature in °C at detection time.
    #[serde(default)]
    pub temperature_celsius: Option<f64>,
    /// Whether ECC is enabled on device memory.
    #[serde(default)]
    pub ecc_enabled: Option<bool>,
    /// Uncorrected ECC errors (volatile, since driver load).
    #[serde(default)]
    pub ecc_uncorrected_errors: Option<u64>,
    /// For a partition (NVIDIA MIG instance, AMD compute partition): the id of its parent device.
    #[serde(default)]
    pub parent: Option<String>,
    /// Partition profile or mode (`3g.40gb`, `CPX`, …).
    #[serde(default)]
    pub partition: Option<String>,
    /// Direct links to other devices (NVLink, xGMI, …).
    #[serde(default)]
    pub links: Vec<DeviceLink>,
    /// Other vendor facts worth keeping (`persistence_mode`, `compute_mode`,
    /// `cuda_driver_version`, `mig_mode`, [`MEMORY_RESERVED_KEY`], …), as
    /// strings.
    #[serde(default)]
    pub extra: std::collections::BTreeMap<String, String>,
    /// Datasheet facts from the spec database (`crate::spec`), when the
    /// device matched an entry by PCI id or name.
    #[serde(default)]
    pub spec: Option<crate::spec::SpecRef>,
    /// Set when the device has no memory of its own and uses the host's
    /// (Apple silicon, Jetson, GB10, integrated GPUs, APUs): the pool, the
    /// device's limit in it and where both were read. `None`: dedicated
    /// memory, or not known to be shared.
    #[serde(default)]
    pub shared_memory: Option<SharedMemory>,
}

/// Host memory a device uses instead of (or besides) memory of its own.
///
/// Devices that share the host's memory share one pool: the registry's
/// summary counts that pool once, however many devices draw on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SharedMemory {
    /// Bytes of the pool (the host's physical memory), when known.
    pub pool_bytes: Option<u64>,
    /// Bytes of the pool the device may use when a limit is known (Metal's
    /// wired limit, the amdgpu GTT size); `None` when no limit is known,
    /// which does not mean the whole pool is usable.
    pub device_limit_bytes: Option<u64>,
    /// Where these figures were read (`sysctl hw.memsize`, `/proc/meminfo MemTotal`, …)
    /// and what is not known.
    pub source: String,
}

impl SharedMemory {
    /// What the device can use: its limit when known, else the pool.
    pub fn usable_bytes(&self) -> Option<u64> {
        self.device_limit_bytes.or(self.pool_bytes)
    }
}

/// A direct link from a device to a peer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceLink {
    /// The peer: a device id, a PCI address or a vendor index (`gpu1`), as the source gives it.
    pub peer: String,
    /// Link type, lowercase (`nvlink`, `xgmi`, `pcie`, `nvswitch`, …).
    pub kind: String,
    /// Number of links (NVLink lanes / xGMI links) to the peer.
    pub count: Option<u32>,
    /// Bandwidth to the peer in bytes per second (one direction), when known.
    pub bandwidth_bytes_per_s: Option<u64>,
}

impl Device {
    /// A device with only the identifying fields set; everything measured is unknown.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        vendor: impl Into<String>,
        family: Family,
        source: &str,
    ) -> Self {
        Device {
            id: id.into(),
            name: name.into(),
            vendor: vendor.into(),
            family,
            available: true,
            unavailable_reason: None,
            memory_bytes: None,
            memory_free_bytes: None,
            pci_address: None,
            numa_node: None,
            local_cpus: None,
            pci_path: None,
            driver: None,
            driver_version: None,
            compute_capability: None,
            uuid: None,
            source: source.to_string(),
            pci: None,
            index: None,
            serial: None,
            architecture: None,
            firmware_version: None,
            compute_units: None,
            power_limit_watts: None,
            utilization_percent: None,
            power_draw_watts: None,
            temperature_celsius: None,
            ecc_enabled: None,
            ecc_uncorrected_errors: None,
            parent: None,
            partition: None,
            links: Vec::new(),
            extra: Default::default(),
            spec: None,
            shared_memory: None,
        }
    }

    /// Whether this device counts as an AI accelerator (not the CPU, not an offload engine).
    pub fn is_accelerator(&self) -> bool {
        self.family.is_accelerator()
    }

    /// Fill the fields this device does not know from `other` (a lower-priority
    /// view of the same physical device, e.g. the PCI scan), and record its source.
    pub fn fill_from(&mut self, other: &Device) {
        fn fill<T: Clone>(dst: &mut Option<T>, src: &Option<T>) {
            if dst.is_none() {
                dst.clone_from(src);
            }
        }
        fill(&mut self.memory_bytes, &other.memory_bytes);
        fill(&mut self.memory_free_bytes, &other.memory_free_bytes);
        fill(&mut self.pci_address, &other.pci_address);
        fill(&mut self.numa_node, &other.numa_node);
        fill(&mut self.local_cpus, &other.local_cpus);
        fill(&mut self.pci_path, &other.pci_path);
        fill(&mut self.driver, &other.driver);
        fill(&mut self.driver_version, &other.driver_version);
        fill(&mut self.compute_capability, &other.compute_capability);
        fill(&mut self.uuid, &other.uuid);
        fill(&mut self.pci, &other.pci);
        fill(&mut self.index, &other.index);
        fill(&mut self.serial, &other.serial);
        fill(&mut self.architecture, &other.architecture);
        fill(&mut self.firmware_version, &other.firmware_version);
        fill(&mut self.compute_units, &other.compute_units);
        fill(&mut self.power_limit_watts, &other.power_limit_watts);
        fill(&mut self.temperature_celsius, &other.temperature_celsius);
        fill(&mut self.utilization_percent, &other.utilization_percent);
        fill(&mut self.power_draw_watts, &other.power_draw_watts);
        fill(&mut self.ecc_enabled, &other.ecc_enabled);
        fill(
            &mut self.ecc_uncorrected_errors,
            &other.ecc_uncorrected_errors,
        );
        if self.links.is_empty() {
            self.links.clone_from(&other.links);
        }
        fill(&mut self.spec, &other.spec);
        fill(&mut self.shared_memory, &other.shared_memory);
        for (k, v) in &other.extra {
            self.extra.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if !self.source.split('+').any(|s| s == other.source) {
            self.source = format!("{}+{}", self.source, other.source);
        }
    }
}
