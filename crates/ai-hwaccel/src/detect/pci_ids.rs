//! Naming and classifying PCI devices: vendor keys, the embedded table of
//! known accelerator device ids, class-code rules, and a parser for the
//! system's `pci.ids` database as the fallback for names.
//!
//! Device ids come from the PCI ID Repository (pci.ids, as shipped by
//! Debian's `pci.ids` package) and, for parts newer than that file, the
//! vendors' kernel drivers and driver READMEs (NVIDIA Linux driver README
//! appendix A "Supported NVIDIA GPU Products"; `amdgpu_drv.c`; `amdxdna`,
//! `intel_vpu` (`ivpu_drv.c`) and `habanalabs` PCI tables).

use crate::model::Family;

/// A vendor we know: PCI id, lowercase key used in JSON, display name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vendor {
    /// PCI vendor id.
    pub id: u16,
    /// Lowercase key (`nvidia`, `amd`, …).
    pub key: &'static str,
    /// Display name.
    pub name: &'static str,
}

/// Vendors of AI-capable devices.
pub static VENDORS: &[Vendor] = &[
    Vendor {
        id: 0x10de,
        key: "nvidia",
        name: "NVIDIA",
    },
    Vendor {
        id: 0x1002,
        key: "amd",
        name: "AMD",
    },
    Vendor {
        id: 0x1022,
        key: "amd",
        name: "AMD",
    },
    Vendor {
        id: 0x8086,
        key: "intel",
        name: "Intel",
    },
    Vendor {
        id: 0x1da3,
        key: "habana",
        name: "Habana Labs",
    },
    Vendor {
        id: 0x1ae0,
        key: "google",
        name: "Google",
    },
    Vendor {
        id: 0x1d0f,
        key: "aws",
        name: "AWS",
    },
    Vendor {
        id: 0x17cb,
        key: "qualcomm",
        name: "Qualcomm",
    },
    Vendor {
        id: 0x19e5,
        key: "huawei",
        name: "Huawei",
    },
    Vendor {
        id: 0x1e52,
        key: "tenstorrent",
        name: "Tenstorrent",
    },
    Vendor {
        id: 0x1de0,
        key: "groq",
        name: "Groq",
    },
    Vendor {
        id: 0x10ee,
        key: "xilinx",
        name: "Xilinx",
    },
    Vendor {
        id: 0x1172,
        key: "intel",
        name: "Intel (Altera)",
    },
    Vendor {
        id: 0x15b3,
        key: "nvidia",
        name: "NVIDIA (Mellanox)",
    },
    Vendor {
        id: 0x106b,
        key: "apple",
        name: "Apple",
    },
    Vendor {
        id: 0x1ed5,
        key: "mthreads",
        name: "Moore Threads",
    },
];

/// The vendor entry of a PCI vendor id.
pub fn vendor(id: u16) -> Option<&'static Vendor> {
    VENDORS.iter().find(|v| v.id == id)
}

/// A known accelerator model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownDevice {
    /// PCI vendor id.
    pub vendor: u16,
    /// PCI device id.
    pub device: u16,
    /// Marketing name.
    pub name: &'static str,
    /// Family.
    pub family: Family,
}

const fn k(vendor: u16, device: u16, name: &'static str, family: Family) -> KnownDevice {
    KnownDevice {
        vendor,
        device,
        name,
        family,
    }
}

use Family::{AiAsic, Gpu, Npu, Offload};

/// Accelerators named by exact vendor:device id.
pub static KNOWN_DEVICES: &[KnownDevice] = &[
    // NVIDIA data-center and workstation GPUs (pci.ids; driver README appendix A).
    k(0x10de, 0x1db1, "NVIDIA Tesla V100 SXM2 16GB", Gpu),
    k(0x10de, 0x1db4, "NVIDIA Tesla V100 PCIe 16GB", Gpu),
    k(0x10de, 0x1db5, "NVIDIA Tesla V100 SXM2 32GB", Gpu),
    k(0x10de, 0x1db6, "NVIDIA Tesla V100 PCIe 32GB", Gpu),
    k(0x10de, 0x1eb8, "NVIDIA Tesla T4", Gpu),
    k(0x10de, 0x20b0, "NVIDIA A100 SXM4 40GB", Gpu),
    k(0x10de, 0x20b2, "NVIDIA A100 SXM4 80GB", Gpu),
    k(0x10de, 0x20b5, "NVIDIA A100 PCIe 80GB", Gpu),
    k(0x10de, 0x20f1, "NVIDIA A100 PCIe 40GB", Gpu),
    k(0x10de, 0x20b7, "NVIDIA A30", Gpu),
    k(0x10de, 0x2235, "NVIDIA A40", Gpu),
    k(0x10de, 0x2236, "NVIDIA A10", Gpu),
    k(0x10de, 0x2237, "NVIDIA A10G", Gpu),
    k(0x10de, 0x2230, "NVIDIA RTX A6000", Gpu),
    k(0x10de, 0x2204, "NVIDIA GeForce RTX 3090", Gpu),
    k(0x10de, 0x2684, "NVIDIA GeForce RTX 4090", Gpu),
    k(0x10de, 0x2b85, "NVIDIA GeForce RTX 5090", Gpu),
    k(0x10de, 0x26b1, "NVIDIA RTX 6000 Ada Generation", Gpu),
    k(0x10de, 0x26b5, "NVIDIA L40", Gpu),
    k(0x10de, 0x26b9, "NVIDIA L40S", Gpu),
    k(0x10de, 0x27b8, "NVIDIA L4", Gpu),
    k(0x10de, 0x2321, "NVIDIA H100 NVL", Gpu),
    k(0x10de, 0x2322, "NVIDIA H800 PCIe", Gpu),
    k(0x10de, 0x2324, "NVIDIA H800", Gpu),
    k(0x10de, 0x2330, "NVIDIA H100 SXM5 80GB", Gpu),
    k(0x10de, 0x2331, "NVIDIA H100 PCIe", Gpu),
    k(0x10de, 0x2335, "NVIDIA H200", Gpu),
    k(0x10de, 0x2342, "NVIDIA GH200", Gpu),
    k(0x10de, 0x2901, "NVIDIA B200", Gpu),
    k(0x10de, 0x2941, "NVIDIA GB200", Gpu),
    // AMD Instinct and Radeon (pci.ids; amdgpu_drv.c).
    k(0x1002, 0x738c, "AMD Instinct MI100", Gpu),
    k(0x1002, 0x740f, "AMD Instinct MI210", Gpu),
    k(0x1002, 0x7408, "AMD Instinct MI250X", Gpu),
    k(0x1002, 0x740c, "AMD Instinct MI250X/MI250", Gpu),
    k(0x1002, 0x74a0, "AMD Instinct MI300A", Gpu),
    k(0x1002, 0x74a1, "AMD Instinct MI300X", Gpu),
    k(0x1002, 0x74a2, "AMD Instinct MI308X", Gpu),
    k(0x1002, 0x74a5, "AMD Instinct MI325X", Gpu),
    k(0x1002, 0x744c, "AMD Radeon RX 7900 XT/7900 XTX", Gpu),
    k(0x1002, 0x7448, "AMD Radeon PRO W7900", Gpu),
    k(0x1002, 0x73bf, "AMD Radeon RX 6800/6800 XT/6900 XT", Gpu),
    // Client NPUs (ivpu_drv.c, amdxdna PCI table).
    k(0x8086, 0x7d1d, "Intel NPU (Meteor Lake)", Npu),
    k(0x8086, 0xad1d, "Intel NPU (Arrow Lake)", Npu),
    k(0x8086, 0x643e, "Intel NPU (Lunar Lake)", Npu),
    k(0x1022, 0x1502, "AMD XDNA NPU (Phoenix/Hawk Point)", Npu),
    k(0x1022, 0x17f0, "AMD XDNA2 NPU (Strix/Krackan)", Npu),
    // Intel data-center GPUs (pci.ids).
    k(0x8086, 0x0bd5, "Intel Data Center GPU Max 1550", Gpu),
    k(0x8086, 0x0bd6, "Intel Data Center GPU Max 1550", Gpu),
    k(0x8086, 0x0bd9, "Intel Data Center GPU Max 1100", Gpu),
    k(0x8086, 0x0bda, "Intel Data Center GPU Max 1100", Gpu),
    k(0x8086, 0x0bdb, "Intel Data Center GPU Max 1100", Gpu),
    k(0x8086, 0x56c0, "Intel Data Center GPU Flex 170", Gpu),
    k(0x8086, 0x56c1, "Intel Data Center GPU Flex 140", Gpu),
    k(0x8086, 0x56a0, "Intel Arc A770", Gpu),
    // Intel QuickAssist (pci.ids): offload engines, not AI compute.
    k(0x8086, 0x37c8, "Intel QuickAssist C62x", Offload),
    k(0x8086, 0x19e2, "Intel QuickAssist C3000", Offload),
    k(0x8086, 0x6f54, "Intel QuickAssist Xeon D", Offload),
    // AI ASICs (pci.ids).
    k(0x1da3, 0x0001, "Habana Goya HL-1000", AiAsic),
    k(0x1da3, 0x1000, "Intel Gaudi (HL-2000)", AiAsic),
    k(0x1da3, 0x1010, "Intel Gaudi (HL-2000, secured)", AiAsic),
    k(0x1da3, 0x1020, "Intel Gaudi2", AiAsic),
    k(0x1d0f, 0x7064, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7164, "AWS Trainium", AiAsic),
    k(0x1d0f, 0x7264, "AWS Inferentia2", AiAsic),
    // More Neuron functions: aws-neuron-driver `neuron_device.h` PCI table
    // (INF1_DEVICE_ID1..3 0x7065-0x7067, TRN2_DEVICE_ID0 0x7364).
    k(0x1d0f, 0x7065, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7066, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7067, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7364, "AWS Trainium2", AiAsic),
    // Google TPUs: AI-Hypercomputer/cloud-accelerator-diagnostics
    // tpu_info/tpu_info/device.py @2cbfaa9d (TpuChip.from_pci_device_id);
    // v4 lite 0x0056: google/gvisor pkg/abi/tpu/tpu.go.
    k(0x1ae0, 0x0027, "Google TPU v2/v3", Family::Tpu),
    k(0x1ae0, 0x005e, "Google TPU v4", Family::Tpu),
    k(0x1ae0, 0x0056, "Google TPU v4 lite", Family::Tpu),
    k(0x1ae0, 0x0063, "Google TPU v5e", Family::Tpu),
    k(0x1ae0, 0x0062, "Google TPU v5p", Family::Tpu),
    k(0x1ae0, 0x006f, "Google TPU v6e", Family::Tpu),
    k(0x1ae0, 0x0076, "Google TPU7x", Family::Tpu),
    k(0x1de0, 0x0000, "Groq GroqChip", AiAsic),
];

/// The known device with this vendor:device id.
pub fn known_device(vendor: u16, device: u16) -> Option<&'static KnownDevice> {
    KNOWN_DEVICES
        .iter()
        .find(|d| d.vendor == vendor && d.device == device)
}

/// Vendors every one of whose PCI functions is an AI accelerator.
const ALL_ACCELERATOR_VENDORS: &[u16] = &[0x1da3, 0x1e52, 0x1de0];

/// Vendors whose display controllers are compute-capable GPUs (BMC and
/// virtual display adapters of other vendors are not accelerators).
const GPU_VENDORS: &[u16] = &[0x10de, 0x1002, 0x8086, 0x1ed5];

/// Decide whether a PCI function is an AI-relevant device and of which
/// family: the known table first, then whole-accelerator vendors, then the
/// class code (PCI Code and ID Assignment Specification: 0x03 display
/// controller, 0x12 processing accelerator, 0x0b40 co-processor).
pub fn classify(vendor: u16, device: u16, class: Option<u32>) -> Option<Family> {
    if let Some(k) = known_device(vendor, device) {
        return Some(k.family);
    }
    if ALL_ACCELERATOR_VENDORS.contains(&vendor) {
        return Some(Family::AiAsic);
    }
    let class = class?;
    let (base, sub) = ((class >> 16) & 0xff, (class >> 8) & 0xff);
    match (base, sub) {
        (0x03, _) if GPU_VENDORS.contains(&vendor) => Some(Family::Gpu),
        (0x12, _) if vendor == 0x8086 => Some(Family::Npu),
        (0x12, _) if vendor == 0x10ee || vendor == 0x1172 => Some(Family::Fpga),
        (0x12, _) => Some(Family::AiAsic),
        (0x0b, 0x40) => Some(Family::Offload),
        _ => None,
    }
}

/// Look up names in the text of a `pci.ids` file: the vendor's name and, if
/// listed, the device's. Pure; stops at the class section.
pub fn lookup_pci_ids(text: &str, vendor: u16, device: u16) -> (Option<String>, Option<String>) {
    let v = format!("{vendor:04x}");
    let d = format!("{device:04x}");
    let mut vendor_name = None;
    for line in text.lines() {
        if line.starts_with("C ") {
            break;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            if vendor_name.is_some() {
                break; // left our vendor's block without finding the device
            }
            if let Some(rest) = line.strip_prefix(v.as_str()) {
                if rest.starts_with("  ") {
                    vendor_name = Some(rest.trim().to_string());
                }
            }
        } else if vendor_name.is_some() && !line.starts_with("\t\t") {
            if let Some(rest) = line[1..].strip_prefix(d.as_str()) {
                if rest.starts_with("  ") {
                    return (vendor_name, Some(rest.trim().to_string()));
                }
            }
        }
    }
    (vendor_name, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_rules() {
        assert_eq!(classify(0x10de, 0x2330, Some(0x030200)), Some(Gpu));
        // An unknown NVIDIA 3D controller is still a GPU.
        assert_eq!(classify(0x10de, 0xffff, Some(0x030200)), Some(Gpu));
        // NVSwitch (bridge class) is not.
        assert_eq!(classify(0x10de, 0x22a3, Some(0x068000)), None);
        // ASPEED BMC VGA is not an accelerator.
        assert_eq!(classify(0x1a03, 0x2000, Some(0x030000)), None);
        assert_eq!(classify(0x1da3, 0x1060, Some(0x120000)), Some(AiAsic));
        assert_eq!(classify(0x8086, 0x7d1d, Some(0x120000)), Some(Npu));
        assert_eq!(classify(0x8086, 0x4940, Some(0x0b4000)), Some(Offload));
        // Amazon's NICs and NVMe share the vendor id with Neuron devices.
        assert_eq!(classify(0x1d0f, 0xec20, Some(0x020000)), None);
        assert_eq!(classify(0x1d0f, 0x7164, Some(0x088000)), Some(AiAsic));
    }

    #[test]
    fn known_ids_are_unique() {
        for (i, a) in KNOWN_DEVICES.iter().enumerate() {
            for b in &KNOWN_DEVICES[i + 1..] {
                assert!(
                    !(a.vendor == b.vendor && a.device == b.device),
                    "{a:?} duplicated"
                );
            }
            assert!(vendor(a.vendor).is_some(), "{a:?} has no vendor entry");
        }
    }

    #[test]
    fn pci_ids_lookup() {
        let text = "# comment\n10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n\t\t10de 16c1  H100 SXM5 80GB\n\t2331  GH100 [H100 PCIe]\n1af4  Red Hat, Inc.\n\t1041  Virtio network\nC 00  Unclassified device\n";
        assert_eq!(
            lookup_pci_ids(text, 0x10de, 0x2331),
            (
                Some("NVIDIA Corporation".into()),
                Some("GH100 [H100 PCIe]".into())
            )
        );
        assert_eq!(
            lookup_pci_ids(text, 0x10de, 0x16c1),
            (Some("NVIDIA Corporation".into()), None)
        );
        assert_eq!(lookup_pci_ids(text, 0x1234, 0x0001), (None, None));
        assert_eq!(
            lookup_pci_ids("\t\u{0}garbage\n10de", 0x10de, 1),
            (None, None)
        );
    }
}
