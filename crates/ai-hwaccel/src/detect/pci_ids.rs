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
    // pci.ids 2023.04.10: `1d94  Chengdu Haiguang IC Design Co., Ltd.`, the
    // vendor of Hygon's CPUs' own functions and of its DCUs.
    Vendor {
        id: 0x1d94,
        key: "hygon",
        name: "Hygon",
    },
    // pci.ids 2023.04.10: `1c2c  Silicom Denmark`, maker of the FPGA
    // SmartNICs N5010/N5011 that Linux's dfl-pci.c drives.
    Vendor {
        id: 0x1c2c,
        key: "silicom",
        name: "Silicom Denmark",
    },
    // AI ASIC vendors of pci.ids (2023.04.10).
    Vendor {
        id: 0x1d95,
        key: "graphcore",
        name: "Graphcore",
    },
    Vendor {
        id: 0x1e60,
        key: "hailo",
        name: "Hailo",
    },
    Vendor {
        id: 0x1e38,
        key: "blaize",
        name: "Blaize",
    },
    Vendor {
        id: 0x1e67,
        key: "untether",
        name: "Untether AI",
    },
    Vendor {
        id: 0x1ed2,
        key: "furiosa",
        name: "FuriosaAI",
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
    // (INF1_DEVICE_ID1..3 0x7065-0x7067, TRN2_DEVICE_ID0 0x7364,
    // TRN3_DEVICE_ID0/1 0x7564-0x7565 @9ff8921d; pci.ids names both
    // `NeuronDevice (Trainium3)`).
    k(0x1d0f, 0x7065, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7066, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7067, "AWS Inferentia", AiAsic),
    k(0x1d0f, 0x7364, "AWS Trainium2", AiAsic),
    k(0x1d0f, 0x7564, "AWS Trainium3", AiAsic),
    k(0x1d0f, 0x7565, "AWS Trainium3", AiAsic),
    // Huawei Ascend NPUs (not in pci.ids): Ascend/ascend-deployer @739a52c3
    // packages/resources/npu_info.py CHIPS_DICT (d100 Atlas 300 = Ascend 310,
    // d500 Atlas 300I Pro/Duo = 310P, d801 Atlas 300T = 910, d802 A900T = 910B).
    k(0x19e5, 0xd100, "Huawei Ascend 310", AiAsic),
    k(0x19e5, 0xd500, "Huawei Ascend 310P", AiAsic),
    k(0x19e5, 0xd801, "Huawei Ascend 910", AiAsic),
    k(0x19e5, 0xd802, "Huawei Ascend 910B", AiAsic),
    // Qualcomm Cloud AI (not in pci.ids): Linux drivers/accel/qaic/qaic_drv.c
    // (PCI_DEVICE_ID_QCOM_AIC080/AIC100/AIC200) and Documentation/accel/qaic.
    k(0x17cb, 0xa080, "Qualcomm Cloud AI 80", AiAsic),
    k(0x17cb, 0xa100, "Qualcomm Cloud AI 100", AiAsic),
    k(0x17cb, 0xa110, "Qualcomm AIC200", AiAsic),
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
    // Intel NPU: Linux drivers/accel/ivpu/ivpu_drv.h @0089d6ee
    // (PCI_DEVICE_ID_PTL_P 0xb03e, PCI_DEVICE_ID_WCL 0xfd3e).
    k(0x8086, 0xb03e, "Intel NPU (Panther Lake)", Npu),
    k(0x8086, 0xfd3e, "Intel NPU (Wildcat Lake)", Npu),
    // Tenstorrent: tenstorrent/tt-kmd enumerate.h (PCI_DEVICE_ID_GRAYSKULL,
    // _WORMHOLE, _BLACKHOLE). One id per chip; the board (n150, n300, p150a,
    // ...) comes from the driver's `tt_card_type`.
    k(0x1e52, 0xfaca, "Tenstorrent Grayskull", AiAsic),
    k(0x1e52, 0x401e, "Tenstorrent Wormhole", AiAsic),
    k(0x1e52, 0xb140, "Tenstorrent Blackhole", AiAsic),
    // Other AI ASICs (pci.ids 2023.04.10).
    k(0x1d95, 0x0001, "Graphcore Colossus GC2 (C2)", AiAsic),
    k(0x1d95, 0x0002, "Graphcore Colossus GC1 (S1)", AiAsic),
    k(0x1e60, 0x2864, "Hailo-8 AI Processor", AiAsic),
    k(0x1e38, 0x0102, "Blaize Xplorer X1600", AiAsic),
    k(0x1e67, 0x0002, "Untether AI runAI200", AiAsic),
    k(0x1ed2, 0x0000, "FuriosaAI Warboy", AiAsic),
    // Xilinx/AMD Alveo: management and user physical functions of XRT's
    // xocl/xclmgmt tables (Xilinx/XRT @0d89b698 src/runtime_src/core/pcie/
    // driver/linux/xocl/devices.h: XOCL_MGMT_PCI_IDS, XOCL_USER_XDMA_PCI_IDS,
    // XOCL_DSA_DYNAMIC_MAP names) and pci.ids; d0xx are golden images.
    k(0x10ee, 0x5000, "Xilinx Alveo U200", Family::Fpga),
    k(0x10ee, 0x5001, "Xilinx Alveo U200", Family::Fpga),
    k(0x10ee, 0x5004, "Xilinx Alveo U250", Family::Fpga),
    k(0x10ee, 0x5005, "Xilinx Alveo U250", Family::Fpga),
    k(0x10ee, 0x500c, "Xilinx Alveo U280", Family::Fpga),
    k(0x10ee, 0x500d, "Xilinx Alveo U280", Family::Fpga),
    k(0x10ee, 0x5020, "Xilinx Alveo U50", Family::Fpga),
    k(0x10ee, 0x5021, "Xilinx Alveo U50", Family::Fpga),
    k(0x10ee, 0x505c, "Xilinx Alveo U55C", Family::Fpga),
    k(0x10ee, 0x505d, "Xilinx Alveo U55C", Family::Fpga),
    k(0x10ee, 0x5050, "Xilinx Alveo U25", Family::Fpga),
    k(0x10ee, 0x5051, "Xilinx Alveo U25", Family::Fpga),
    k(0x10ee, 0x513c, "Xilinx Alveo U30", Family::Fpga),
    k(0x10ee, 0x513d, "Xilinx Alveo U30", Family::Fpga),
    k(0x10ee, 0x5094, "Xilinx Alveo V70", Family::Fpga),
    k(0x10ee, 0x5095, "Xilinx Alveo V70", Family::Fpga),
    k(0x10ee, 0x5048, "Xilinx Versal VCK5000", Family::Fpga),
    k(0x10ee, 0x5049, "Xilinx Versal VCK5000", Family::Fpga),
    k(
        0x10ee,
        0xd000,
        "Xilinx Alveo U200 (golden image)",
        Family::Fpga,
    ),
    k(
        0x10ee,
        0xd004,
        "Xilinx Alveo U250 (golden image)",
        Family::Fpga,
    ),
    k(
        0x10ee,
        0xd00c,
        "Xilinx Alveo U280 (golden image)",
        Family::Fpga,
    ),
    k(
        0x10ee,
        0xd020,
        "Xilinx Alveo U50 (golden image)",
        Family::Fpga,
    ),
    // Intel FPGA cards of the DFL driver (Linux drivers/fpga/dfl-pci.c
    // @031616c4: PCIE_DEVICE_ID_PF/VF_INT_5_X, _INT_6_X, _DSC_1_X,
    // _INTEL_PAC_N3000). Listed so their 0x12 class does not read as an NPU.
    k(
        0x8086,
        0xbcbd,
        "Intel FPGA (DFL integrated 5.x)",
        Family::Fpga,
    ),
    k(
        0x8086,
        0xbcbf,
        "Intel FPGA (DFL integrated 5.x, VF)",
        Family::Fpga,
    ),
    k(
        0x8086,
        0xbcc0,
        "Intel FPGA (DFL integrated 6.x)",
        Family::Fpga,
    ),
    k(
        0x8086,
        0xbcc1,
        "Intel FPGA (DFL integrated 6.x, VF)",
        Family::Fpga,
    ),
    k(
        0x8086,
        0x09c4,
        "Intel FPGA PAC (DFL discrete 1.x)",
        Family::Fpga,
    ),
    k(
        0x8086,
        0x09c5,
        "Intel FPGA PAC (DFL discrete 1.x, VF)",
        Family::Fpga,
    ),
    k(0x8086, 0x0b30, "Intel FPGA PAC N3000", Family::Fpga),
    // dfl-pci.c since Linux 6.0/6.9: PCIE_DEVICE_ID_INTEL_PAC_D5005 (and
    // _VF), the generic OFS ids PCIE_DEVICE_ID_INTEL_DFL / _DFL_VF (the board
    // is in the subsystem id: fpga.rs `ofs_board`), and Silicom Denmark's
    // N5010 / N5011 (PCI_VENDOR_ID_SILICOM_DENMARK 0x1c2c).
    k(0x8086, 0x0b2b, "Intel FPGA PAC D5005", Family::Fpga),
    k(0x8086, 0x0b2c, "Intel FPGA PAC D5005 (VF)", Family::Fpga),
    k(0x8086, 0xbcce, "Intel FPGA (OFS DFL)", Family::Fpga),
    k(0x8086, 0xbccf, "Intel FPGA (OFS DFL, VF)", Family::Fpga),
    k(0x1c2c, 0x1000, "Silicom FPGA SmartNIC N5010", Family::Fpga),
    k(0x1c2c, 0x1001, "Silicom FPGA SmartNIC N5011", Family::Fpga),
    // More Intel QuickAssist endpoints: pci.ids (DH895XCC 0435/0443, VFs of
    // C62x/C3000/Xeon D, C4xxx, 200xx) and Linux drivers/crypto/intel/qat/
    // qat_common/adf_accel_devices.h @f5419a42 (0x4940-0x4947).
    k(0x8086, 0x37c9, "Intel QuickAssist C62x (VF)", Offload),
    k(0x8086, 0x19e3, "Intel QuickAssist C3000 (VF)", Offload),
    k(0x8086, 0x6f55, "Intel QuickAssist Xeon D (VF)", Offload),
    k(0x8086, 0x0435, "Intel QuickAssist DH895XCC", Offload),
    k(0x8086, 0x0443, "Intel QuickAssist DH895XCC (VF)", Offload),
    k(0x8086, 0x18a0, "Intel QuickAssist C4xxx", Offload),
    k(0x8086, 0x18a1, "Intel QuickAssist C4xxx (VF)", Offload),
    k(0x8086, 0x18ee, "Intel QuickAssist 200xx", Offload),
    k(0x8086, 0x18ef, "Intel QuickAssist 200xx (VF)", Offload),
    k(0x8086, 0x4940, "Intel QuickAssist 4xxx", Offload),
    k(0x8086, 0x4941, "Intel QuickAssist 4xxx (VF)", Offload),
    k(0x8086, 0x4942, "Intel QuickAssist 401xx", Offload),
    k(0x8086, 0x4943, "Intel QuickAssist 401xx (VF)", Offload),
    k(0x8086, 0x4944, "Intel QuickAssist 402xx", Offload),
    k(0x8086, 0x4945, "Intel QuickAssist 402xx (VF)", Offload),
    k(0x8086, 0x4946, "Intel QuickAssist 420xx", Offload),
    k(0x8086, 0x4947, "Intel QuickAssist 420xx (VF)", Offload),
    // NVIDIA BlueField DPUs as the host sees them (pci.ids): the integrated
    // ConnectX network functions and the SoC management interfaces. Plain
    // ConnectX NICs (e.g. 15b3:1021) stay unclassified.
    k(
        0x15b3,
        0xa2d2,
        "NVIDIA BlueField (integrated ConnectX-5)",
        Offload,
    ),
    k(
        0x15b3,
        0xa2d6,
        "NVIDIA BlueField-2 (integrated ConnectX-6 Dx)",
        Offload,
    ),
    k(
        0x15b3,
        0xa2d9,
        "NVIDIA BlueField-3 Lx (integrated ConnectX-7)",
        Offload,
    ),
    k(
        0x15b3,
        0xa2dc,
        "NVIDIA BlueField-3 (integrated ConnectX-7)",
        Offload,
    ),
    k(
        0x15b3,
        0xc2d2,
        "NVIDIA BlueField SoC management interface",
        Offload,
    ),
    k(
        0x15b3,
        0xc2d3,
        "NVIDIA BlueField-2 SoC management interface",
        Offload,
    ),
    k(
        0x15b3,
        0xc2d4,
        "NVIDIA BlueField-3 Lx SoC management interface",
        Offload,
    ),
    k(
        0x15b3,
        0xc2d5,
        "NVIDIA BlueField-3 SoC management interface",
        Offload,
    ),
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
const GPU_VENDORS: &[u16] = &[0x10de, 0x1002, 0x8086, 0x1ed5, HYGON_VENDOR_ID];

/// Hygon (Chengdu Haiguang). Its DCUs enumerate as co-processors (class
/// 0x0b40): `37:00.0 Co-processor: Chengdu Haiguang IC Design Co., Ltd.
/// Device 6210 (rev 01)` for a K100_AI (PaddlePaddle/PaddleNLP@af062ede
/// `llm/docs/dcu_install.md`, the lspci check it asks for, which greps for
/// display controllers as well). The same vendor id
/// carries the host bridges, IOMMU, PSP/CCP and NTB functions of Hygon CPUs
/// (other classes), which are left out.
pub const HYGON_VENDOR_ID: u16 = 0x1d94;

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
        (0x0b, 0x40) | (0x12, _) if vendor == HYGON_VENDOR_ID => Some(Family::Gpu),
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
        // A Hygon DCU is a co-processor (0x0b40) that is a GPU, not an
        // offload engine; the host bridge and PSP/CCP functions of Hygon CPUs
        // (14c0 0x0600, 14c6 0x1080) are nothing of ours.
        assert_eq!(classify(0x1d94, 0x6210, Some(0x0b4000)), Some(Gpu));
        assert_eq!(classify(0x1d94, 0x14c0, Some(0x060000)), None);
        assert_eq!(classify(0x1d94, 0x14c6, Some(0x108000)), None);
        assert_eq!(vendor(0x1d94).map(|v| v.key), Some("hygon"));
    }

    #[test]
    fn npu_asic_fpga_offload_ids() {
        // An Intel FPGA PAC has the 0x12 class Intel NPUs have: the id decides.
        assert_eq!(classify(0x8086, 0x0b30, Some(0x120000)), Some(Family::Fpga));
        assert_eq!(classify(0x8086, 0xb03e, Some(0x120000)), Some(Npu));
        assert_eq!(classify(0x10ee, 0x5005, Some(0x058000)), Some(Family::Fpga));
        assert_eq!(classify(0x1e52, 0x401e, Some(0x120000)), Some(AiAsic));
        assert_eq!(classify(0x1d95, 0x0001, None), Some(AiAsic));
        assert_eq!(classify(0x8086, 0x4941, Some(0x0b4000)), Some(Offload));
        assert_eq!(classify(0x15b3, 0xa2dc, Some(0x020000)), Some(Offload));
        // A plain ConnectX-7 NIC is not an offload engine of ours.
        assert_eq!(classify(0x15b3, 0x1021, Some(0x020000)), None);
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
