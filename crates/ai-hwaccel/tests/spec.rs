//! The spec database against the outside world: product names as vendor
//! tools print them (taken from the captured outputs under
//! /work/shared/fixtures, copied into `tests/fixtures/`), the detection PCI
//! table, and a detection run over a fake root.
#![allow(
    clippy::disallowed_methods,
    reason = "the test reads the fixture files"
)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use ai_hwaccel::detect::pci_ids::KNOWN_DEVICES;
use ai_hwaccel::spec::{self, by_name, by_pci_id};
use ai_hwaccel::{DetectOptions, Family, ProbeOptions};

/// Product names exactly as captured tool outputs print them, with the tool
/// output they come from and the entry they must resolve to.
const TOOL_NAMES: &[(&str, &str, &str)] = &[
    ("nvidia-smi -q", "NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("nvidia-smi -q", "NVIDIA H200", "h200"),
    ("nvidia-smi -q", "NVIDIA H800", "h800-sxm"),
    ("nvidia-smi -q", "NVIDIA L40S", "l40s"),
    ("nvidia-smi -q", "NVIDIA A10", "a10"),
    ("nvidia-smi -q", "NVIDIA TITAN V", "titan-v"),
    ("nvidia-smi -q", "NVIDIA GeForce RTX 4090", "rtx-4090"),
    (
        "nvidia-smi -q",
        "NVIDIA GeForce RTX 2080 SUPER",
        "rtx-2080-super",
    ),
    (
        "nvidia-smi -q",
        "NVIDIA GeForce RTX 4080 SUPER",
        "rtx-4080-super",
    ),
    ("nvidia-smi -L", "NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("nvidia-smi nvlink --status", "NVIDIA B300 SXM6 AC", "b300"),
    (
        "nvidia-smi --query-gpu=name --format=csv",
        "NVIDIA B300 SXM6 AC",
        "b300",
    ),
    ("nvidia-smi -x -q", "NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("nvidia-smi -x -q", "NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("nvidia-smi -x -q", "NVIDIA A10G", "a10g"),
    ("nvidia-smi -x -q", "NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("nvidia-smi -x -q", "Tesla T4", "t4"),
    (
        "nvidia-smi -x -q",
        "Tesla P100-PCIE-16GB",
        "tesla-p100-pcie-16gb",
    ),
    ("nvidia-smi -x -q", "Quadro P400", "quadro-p400"),
    ("nvidia-smi -x -q", "Quadro P2000", "quadro-p2000"),
    ("nvidia-smi -x -q", "GeForce GTX 1070 Ti", "gtx-1070-ti"),
    ("nvidia-smi -x -q", "NVIDIA GeForce RTX 2080", "rtx-2080"),
    ("nvidia-smi -x -q", "NVIDIA GeForce RTX 3060", "rtx-3060"),
    (
        "nvidia-smi -x -q",
        "NVIDIA GeForce RTX 3060 Laptop GPU",
        "rtx-3060-laptop",
    ),
    ("nvidia-smi -x -q", "NVIDIA GeForce RTX 3080", "rtx-3080"),
    (
        "nvidia-smi -x -q",
        "NVIDIA RTX 4000 SFF Ada Generation",
        "rtx-4000-sff-ada",
    ),
    ("rocm-smi --json", "Radeon Instinct MI50 32GB", "mi50-32gb"),
    ("npu-smi info", "910A", "ascend-910"),
    ("npu-smi info", "910B3", "ascend-910b"),
    ("hl-smi", "HL-225", "gaudi2"),
    ("hl-smi", "Intel Gaudi2 (HL-225)", "gaudi2"),
    ("amd-smi static", "MI300A", "mi300a"),
    ("amd-smi static", "MI308X", "mi308x"),
    (
        "amd-smi static",
        "Aqua Vanjaram [Instinct MI300A]",
        "mi300a",
    ),
    (
        "rocm-smi --json",
        "Arcturus GL-XL [Instinct MI100]",
        "mi100",
    ),
    ("amd-smi (docs)", "AMD Instinct MI300X", "mi300x"),
    ("rocm-smi (docs)", "Instinct MI210", "mi210"),
    (
        "xpu-smi discovery",
        "Intel(R) Graphics [0x56c0]",
        "flex-170",
    ),
    (
        "xpu-smi discovery -j",
        "Intel(R) Data Center GPU Flex Series 170",
        "flex-170",
    ),
    ("tpu-info", "TPU v6e chip", "tpu-v6e"),
    ("neuron-ls", "trn1.2xlarge", "trn1"),
    ("neuron-ls", "trn1.32xlarge", "trn1"),
    ("neuron-ls", "trn2n.48xlarge", "trn2"),
    ("neuron-ls", "inf1.6xlarge", "inf1"),
];

#[test]
fn tool_reported_names_resolve() {
    for (tool, name, want) in TOOL_NAMES {
        let got = by_name(name).map(|e| e.id.as_str());
        assert_eq!(got, Some(*want), "{tool} prints {name:?}");
    }
}

/// Ids of the detection table that deliberately have no entry: the id is
/// shared by products with different specs, or the product is not an
/// accelerator we describe.
const UNLISTED_PCI_IDS: &[(u16, u16, &str)] = &[
    (
        0x10de,
        0x2322,
        "H800 PCIe: export part, not in the database",
    ),
    (
        0x1002,
        0x740c,
        "shared by MI250 and MI250X: listed in both, so no single entry",
    ),
    (
        0x1002,
        0x744c,
        "shared by RX 7900 XT, XTX, GRE and the RX 7900M: listed in each, so no single entry",
    ),
    (
        0x1002,
        0x66a1,
        "shared by the MI50 32GB and the Radeon Pro VII: listed in both, so no single entry",
    ),
    (
        0x1002,
        0x687f,
        "shared by RX Vega 56, 64 and 64 Liquid Cooled: listed in each, so no single entry",
    ),
    (
        0x1002,
        0x73ef,
        "shared by RX 6650 XT, 6800S, 6700S, 6650M XT and 6650M: listed in each, so no single entry",
    ),
    (
        0x1002,
        0x7483,
        "shared by RX 7600M and 7600M XT: listed in both, so no single entry",
    ),
    (
        0x1002,
        0x73bf,
        "shared by RX 6800, 6800 XT and 6900 XT: listed in each, so no single entry",
    ),
    (0x8086, 0xad1d, "Arrow Lake NPU: not in the database"),
    (0x8086, 0x56c1, "Flex 140: not in the database"),
    (0x1da3, 0x0001, "Goya: not in the database"),
    (0x1de0, 0x0000, "Groq: not in the database"),
    (0x1ae0, 0x0027, "shared by TPU v2 and v3"),
    (0x1ae0, 0x0056, "TPU v4 lite: not in the database"),
    (
        0x19e5,
        0xd100,
        "Ascend 310 modules and cards differ in memory; matched by name",
    ),
    (
        0x19e5,
        0xd500,
        "shared by Atlas 300I Pro and Duo (the subsystem id decides)",
    ),
    (
        0x19e5,
        0xd801,
        "shared by the 910 variants (910A, 910 Pro); matched by name",
    ),
    (
        0x19e5,
        0xd802,
        "shared by the 910B1-910B4 SKUs, which differ; matched by name",
    ),
    (0x17cb, 0xa080, "Cloud AI 80: not in the database"),
    (
        0x17cb,
        0xa100,
        "shared by every Cloud AI 100 SKU (Standard, Pro, Ultra)",
    ),
    (0x17cb, 0xa110, "AIC200: not in the database"),
    (0x8086, 0xb03e, "Panther Lake NPU: not in the database"),
    (0x8086, 0xfd3e, "Wildcat Lake NPU: not in the database"),
    (0x1e52, 0xfaca, "Grayskull: not in the database"),
    (
        0x1e52,
        0x401e,
        "shared by Wormhole n150 and n300 (tt_card_type decides)",
    ),
    (
        0x1e52,
        0xb140,
        "shared by Blackhole p100, p150 and p300 (tt_card_type decides)",
    ),
    (0x1d95, 0x0001, "Graphcore C2: not in the database"),
    (0x1d95, 0x0002, "Graphcore GC1: not in the database"),
    (0x1e60, 0x2864, "Hailo-8: not in the database"),
    (0x1e38, 0x0102, "Blaize X1600: not in the database"),
    (0x1e67, 0x0002, "runAI200: not in the database"),
    (0x1ed2, 0x0000, "Warboy: not in the database"),
    (
        0x10ee,
        0x5000,
        "Alveo U200 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5001, "Alveo U200: FPGAs are not in the database"),
    (
        0x10ee,
        0x5004,
        "Alveo U250 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5005, "Alveo U250: FPGAs are not in the database"),
    (
        0x10ee,
        0x500c,
        "Alveo U280 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x500d, "Alveo U280: FPGAs are not in the database"),
    (
        0x10ee,
        0x5020,
        "Alveo U50 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5021, "Alveo U50: FPGAs are not in the database"),
    (
        0x10ee,
        0x505c,
        "Alveo U55C (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x505d, "Alveo U55C: FPGAs are not in the database"),
    (
        0x10ee,
        0x5050,
        "Alveo U25 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5051, "Alveo U25: FPGAs are not in the database"),
    (
        0x10ee,
        0x513c,
        "Alveo U30 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x513d, "Alveo U30: FPGAs are not in the database"),
    (
        0x10ee,
        0x5094,
        "Alveo V70 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5095, "Alveo V70: FPGAs are not in the database"),
    (
        0x10ee,
        0x5048,
        "VCK5000 (management): FPGAs are not in the database",
    ),
    (0x10ee, 0x5049, "VCK5000: FPGAs are not in the database"),
    (
        0x10ee,
        0xd000,
        "Alveo U200 golden image: FPGAs are not in the database",
    ),
    (
        0x10ee,
        0xd004,
        "Alveo U250 golden image: FPGAs are not in the database",
    ),
    (
        0x10ee,
        0xd00c,
        "Alveo U280 golden image: FPGAs are not in the database",
    ),
    (
        0x10ee,
        0xd020,
        "Alveo U50 golden image: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbcbd,
        "Intel DFL FPGA: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbcbf,
        "Intel DFL FPGA VF: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbcc0,
        "Intel DFL FPGA: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbcc1,
        "Intel DFL FPGA VF: FPGAs are not in the database",
    ),
    (
        0x8086,
        0x09c4,
        "Intel FPGA PAC: FPGAs are not in the database",
    ),
    (
        0x8086,
        0x09c5,
        "Intel FPGA PAC VF: FPGAs are not in the database",
    ),
    (
        0x8086,
        0x0b30,
        "Intel FPGA PAC N3000: FPGAs are not in the database",
    ),
    (
        0x8086,
        0x0b2b,
        "Intel FPGA PAC D5005: FPGAs are not in the database",
    ),
    (
        0x8086,
        0x0b2c,
        "Intel FPGA PAC D5005 VF: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbcce,
        "Intel OFS FPGA: FPGAs are not in the database",
    ),
    (
        0x8086,
        0xbccf,
        "Intel OFS FPGA VF: FPGAs are not in the database",
    ),
    (
        0x1c2c,
        0x1000,
        "Silicom N5010: FPGAs are not in the database",
    ),
    (
        0x1c2c,
        0x1001,
        "Silicom N5011: FPGAs are not in the database",
    ),
];

#[test]
fn detection_pci_table_resolves() {
    for k in KNOWN_DEVICES {
        if !k.family.is_accelerator() {
            continue;
        }
        let unlisted = UNLISTED_PCI_IDS
            .iter()
            .any(|&(v, d, _)| v == k.vendor && d == k.device);
        let hit = by_pci_id(k.vendor, k.device);
        if unlisted {
            assert!(
                hit.is_none(),
                "{:04x}:{:04x} is listed now",
                k.vendor,
                k.device
            );
            continue;
        }
        let e = hit.unwrap_or_else(|| {
            panic!(
                "{:04x}:{:04x} ({}) has no spec entry",
                k.vendor, k.device, k.name
            )
        });
        assert_eq!(e.family, k.family, "{}: family", e.id);
        // Where the table's name decides a product, it is the same one.
        if let Some(named) = by_name(k.name) {
            assert_eq!(named.id, e.id, "{:?} by name vs by PCI id", k.name);
        }
    }
}

#[test]
fn every_entry_is_found_by_its_own_names_and_pci_ids() {
    for e in spec::all() {
        for n in std::iter::once(&e.name).chain(&e.aliases) {
            assert_eq!(
                by_name(n).map(|x| x.id.as_str()),
                Some(e.id.as_str()),
                "{n:?}"
            );
        }
        for p in &e.pci_ids {
            // A shared id (MI250/MI250X) resolves to no single entry, but lists this one.
            let (v, d) = spec::parse_pci_id(p).unwrap();
            let all = spec::by_pci_id_all(v, d);
            assert!(all.iter().any(|x| x.id == e.id), "{p}");
            if all.len() == 1 {
                assert_eq!(spec::resolve(p).map(|x| x.id.as_str()), Some(e.id.as_str()));
            }
        }
    }
}

#[test]
fn detection_attaches_specs() {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roots/two-socket-pci");
    let opts = ProbeOptions {
        root,
        env: Some(BTreeMap::new()),
        no_exec: true,
        ..ProbeOptions::default()
    };
    let reg = ai_hwaccel::detect(&opts, &DetectOptions::default());
    let spec_of = |id: &str| {
        let d = reg
            .devices
            .iter()
            .find(|d| d.id == id)
            .unwrap_or_else(|| panic!("no device {id}: {:?}", reg.devices));
        d.spec.as_ref().map(|s| s.id.clone())
    };
    assert_eq!(spec_of("pci:0000:1b:00.0").as_deref(), Some("h100-sxm"));
    assert_eq!(spec_of("pci:0000:9b:00.0").as_deref(), Some("mi300x"));
    for d in &reg.devices {
        if d.family == Family::Cpu {
            assert!(d.spec.is_none(), "the CPU got a spec");
        }
    }
    // The attached facts survive the JSON contract.
    let json = reg.to_json_pretty();
    assert!(json.contains("\"memory_bandwidth_bytes_per_s\": 3350000000000"));
}

/// Fixture folders and the `parse` format of their files (`None`: by extension).
const FIXTURE_FORMATS: &[(&str, &str)] = &[
    ("amd-smi-json", "amd-smi-json"),
    ("amd-smi-text", "amd-smi-text"),
    ("clinfo", "clinfo"),
    ("hl-smi", "hl-smi"),
    ("neuron-ls", "neuron-ls"),
    ("neuron-monitor", "neuron-monitor"),
    ("npu-smi", "npu-smi"),
    ("nvidia-smi-csv", "nvidia-smi-csv"),
    ("nvidia-smi-q", "nvidia-smi-q"),
    ("nvidia-smi-xml", "nvidia-smi-xml"),
    ("qaic-util", "qaic-util"),
    ("rocm-smi-json", "rocm-smi-json"),
    ("rocminfo", "rocminfo"),
    ("system-profiler-json", "system-profiler-json"),
    ("tpu-info", "tpu-info"),
    ("vulkaninfo", "vulkaninfo"),
    ("xpu-smi", "xpu-smi-json"),
];

/// Device names in the fixtures that name no single product, and why.
const UNRESOLVABLE_NAMES: &[(&str, &str)] = &[
    ("AMD GPU", "the capture prints no product name"),
    (
        "Intel(R) Graphics (RPL-S)",
        "Raptor Lake-S integrated graphics; Intel publishes no memory or rate figures for it",
    ),
    (
        "AMD Radeon(TM) Graphics",
        "an APU's integrated GPU named without its model; AMD publishes no figures for it",
    ),
    (
        "AMD Radeon RX 6800/6800 XT/6900 XT",
        "one PCI id and one name for three products",
    ),
    (
        "AMD Radeon RX 6700/6700 XT / 6800M",
        "one PCI id and one name for three products",
    ),
    (
        "AMD Radeon(TM) R7 Graphics",
        "an APU's integrated GPU; AMD publishes no figures for it",
    ),
    ("Huawei Ascend NPU", "the capture redacts the chip name"),
    (
        "Huawei Ascend 310P3",
        "the 310P chip of both the Atlas 300I Pro (one chip) and the Atlas 300I Duo (two; ascend-deployer CHIPS_DICT subsystems 0x0100 / 0x0110); the ascend-310p entry holds the 300I Pro card's figures and npu-smi's name does not say which card",
    ),
    ("Hygon DCU xxxx", "the capture redacts the DCU model"),
    (
        "Hygon BW",
        "hy-smi prints only the series `BW`; the spec database has no entry for it (no public datasheet figures found)",
    ),
    (
        "AMD Radeon RX 7700 XT / 7800 XT",
        "one PCI id and one name for two products",
    ),
    (
        "NVIDIA GeForce GTX 1650",
        "one name for GDDR5 and GDDR6 boards on TU117, TU116 and TU106 (docs/spec-database.md: left out)",
    ),
    (
        "NVIDIA GeForce GTX 1050 Ti",
        "Pascal GP107: not in the database (docs/spec-database.md: GTX 1080 / 1060 and smaller not read)",
    ),
    (
        "AMD INSTINCT MI250 (MCM) OAM AC MBA",
        "rocm-smi's board string; its PCI id 0x740c is both the MI250's and the MI250X's",
    ),
    (
        "Quadro K620",
        "a 2014 Maxwell workstation card: no AI rates; not in the database",
    ),
    (
        "AWS Neuron device",
        "older neuron-ls prints neither the chip nor the instance type (detection reads the PCI id)",
    ),
    (
        "Google TPU",
        "tpu-info's process view prints no TPU version",
    ),
    (
        "Qualcomm Cloud AI 100",
        "qaic-util does not print the SKU (Standard, Pro, Ultra)",
    ),
    (
        "Intel(R) Graphics [0x020a]",
        "a pre-release Ponte Vecchio id from Intel's documentation",
    ),
    (
        "Intel(R) HD Graphics",
        "an integrated Haswell GPU that Intel's OpenCL runtime names without its model number",
    ),
    (
        "Tesla K20m",
        "Kepler (compute capability 3.5), which CUDA 12.0 dropped: no current ML runtime plans on it",
    ),
    (
        "Tesla M10",
        "a GRID virtual-desktop board (four Maxwell GM107 GPUs); no spec entry yet, reported by the captures helper to the specs owner",
    ),
    (
        "Intel(R) Iris(R) Xe Graphics",
        "Intel's Windows driver names every Xe-LP integrated GPU so (the capture's is Alder Lake-P, 8086:46a6); shared memory, and Intel publishes no bandwidth or rate figures for it",
    ),
    (
        "Intel(R) Iris(R) Xe Graphics (RPL-U)",
        "Raptor Lake-U's integrated GPU (Xe-LP, 8086:a7a1) under Mesa's name; it has shared memory and Intel publishes no bandwidth or rate figures for it",
    ),
    (
        "Intel(R) Xe Graphics (TGL GT2)",
        "Tiger Lake's integrated GPU under Mesa's name; no spec entry yet, reported by the captures helper to the specs owner",
    ),
    (
        "AMD Vega 20",
        "rocminfo prints the chip codename for 1002:66a1, an id pci.ids gives to both the Radeon Pro VII and the Instinct MI50 32GB",
    ),
    ("Hygon K1xx_AI", "the capture redacts the DCU model"),
    (
        "Qualcomm Cloud AI",
        "the generic name when qaic-util -q shows no FW IMAGE_VARIANT line (output filtered by grep), so the SoC is not known",
    ),
    (
        "Apple Paravirtualized Graphics Device",
        "a macOS virtual machine's paravirtual display device (Apple's ParavirtualizedGraphics), no GPU of its own",
    ),
    (
        "AMD Radeon Graphics",
        "the generic name amd-smi and rocminfo print for APU GPUs (here 1002:150e, Strix Point's Radeon 880M/890M)",
    ),
    (
        "NVIDIA GeForce GTX 680",
        "Kepler (compute capability 3.0), which CUDA 11 already dropped: no current ML runtime plans on it",
    ),
    (
        "AMD Radeon Graphics (radeonsi, gfx1151, LLVM 19.1.7, DRM 3.63, 6.15.5-arch1-1)",
        "rusticl's name for the Strix Halo iGPU (1002:1586) with Mesa's driver string; without it, the generic APU name above",
    ),
    (
        "NVIDIA RTX A5000 Laptop GPU",
        "no spec entry yet; reported by the captures helper to the specs owner",
    ),
    (
        "NVIDIA GeForce GT 1030",
        "no spec entry yet (entry-level Pascal, 2 GB); reported by the captures helper to the specs owner",
    ),
    (
        "GRID P4-1Q",
        "a vGPU profile (a 1 GiB slice of a Tesla P4), not a physical GPU: spec::is_vgpu_profile",
    ),
    (
        "AMD Radeon RX 470 Graphics",
        "no spec entry yet (Polaris 10, 1002:67df, an id shared with the RX 480/570/580); reported by the captures helper to the specs owner",
    ),
    (
        "Mali-T860 (Panfrost)",
        "an RK3399's Mali under Mesa's panvk; the database has no mobile GPUs",
    ),
    (
        "AMD Radeon RX 5500 XT",
        "no spec entry yet (Navi 14); reported by the captures helper to the specs owner",
    ),
    (
        "AMD Radeon RX 5500 XT (navi14, LLVM 15.0.7, DRM 3.52, 6.3.9-arch1-1)",
        "Mesa Clover's name with its driver string; the card has no spec entry yet",
    ),
    (
        "Mali-LODX r0p0",
        "the RK3588's Mali-G610 under the codename ARM's libmali reports; the database has no mobile GPUs",
    ),
];

/// Every accelerator model in every captured tool output resolves to its
/// datasheet entry (by the name the tool printed, and by its PCI id when the
/// tool printed one), unless it is on the explained list above.
#[test]
fn every_accelerator_in_the_fixtures_resolves() {
    let mut seen = 0;
    let mut failures = Vec::new();
    for (dir, format) in FIXTURE_FORMATS {
        let format = ai_hwaccel::detect::format(format).expect("format");
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            // JSON captures of table tools have their own format.
            let format = match (dir, file.extension().and_then(|e| e.to_str())) {
                (&"neuron-ls", Some("json")) => {
                    ai_hwaccel::detect::format("neuron-ls-json").unwrap()
                }
                (&"xpu-smi", Some("json")) => format,
                (&"xpu-smi", Some("txt")) => ai_hwaccel::detect::format("xpu-smi-text").unwrap(),
                (&"xpu-smi", _) => continue,
                _ => format,
            };
            let mut devices = (format.parse)(&std::fs::read(&file).unwrap()).devices;
            spec::attach(&mut devices);
            for d in devices.iter().filter(|d| d.parent.is_none()) {
                if !d.family.is_accelerator() || d.family == Family::Fpga {
                    continue;
                }
                seen += 1;
                let file = file.file_name().unwrap().to_string_lossy();
                if UNRESOLVABLE_NAMES.iter().any(|(n, _)| *n == d.name) {
                    assert!(d.spec.is_none(), "{file}: {} resolved now", d.name);
                    continue;
                }
                let Some(s) = &d.spec else {
                    failures.push(format!("{file}: {:?} has no entry", d.name));
                    continue;
                };
                if let Some(p) = &d.pci {
                    let (v, id) = (
                        u16::from_str_radix(&p.vendor_id, 16).unwrap(),
                        u16::from_str_radix(&p.device_id, 16).unwrap(),
                    );
                    let shared = UNLISTED_PCI_IDS.iter().any(|&(a, b, _)| (a, b) == (v, id));
                    if !shared {
                        // A memory configuration's device (an 8 or 12 GB
                        // RTX 3060) belongs to the product its PCI id names.
                        match by_pci_id(v, id) {
                            Some(e) if spec::base_of(&s.id).is_some_and(|b| b.id == e.id) => {}
                            other => failures.push(format!(
                                "{file}: {} ({v:04x}:{id:04x}) is {} by name but {:?} by PCI id",
                                d.name,
                                s.id,
                                other.map(|e| &e.id)
                            )),
                        }
                    }
                }
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} devices read: a parser or the list broke"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every spec entry's `pcie` agrees with the real `nvidia-smi -q` and
/// `-q -x` captures of its part that report the GPU's own maximum ("Device
/// Max", `<max_device_link_gen>`; drivers from 2023 on): the generation
/// equals it, and the lanes are at least the link's maximum width (a card in
/// a narrower slot reports less). Entries whose notes cite a capture for
/// their `pcie` must have one here.
#[test]
fn spec_pcie_agrees_with_nvidia_smi_captures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = std::collections::BTreeSet::new();
    for (sub, format) in [
        ("nvidia-smi-q", "nvidia-smi-q"),
        ("nvidia-smi-xml", "nvidia-smi-xml"),
    ] {
        let q = ai_hwaccel::detect::format(format).unwrap();
        for f in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = f.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            // The GPU's own maximum generation: the first "Device Max" line
            // under "PCIe Generation" (every GPU of a capture is one part here).
            let mut device_max = text
                .split("<max_device_link_gen>")
                .nth(1)
                .and_then(|r| r.split('<').next())
                .and_then(|v| v.trim().parse::<u32>().ok());
            let mut in_gen = false;
            for line in text.lines() {
                let t = line.trim();
                if t == "PCIe Generation" {
                    in_gen = true;
                } else if in_gen && t.starts_with("Device Max") {
                    device_max = t
                        .split(':')
                        .nth(1)
                        .and_then(|v| v.trim().parse::<u32>().ok());
                    break;
                } else if in_gen
                    && !t.starts_with("Max")
                    && !t.starts_with("Current")
                    && !t.starts_with("Device")
                    && !t.starts_with("Host")
                {
                    in_gen = false;
                }
            }
            let Some(generation) = device_max else {
                continue;
            };
            for d in q.run(text.as_bytes()).devices {
                let Some(e) = ai_hwaccel::spec::by_name(&d.name) else {
                    continue;
                };
                let Some(p) = &e.pcie else { continue };
                assert_eq!(p.generation, generation, "{}: {}", e.id, path.display());
                if let Some(w) = d
                    .pci
                    .as_ref()
                    .and_then(|p| p.link.as_ref())
                    .and_then(|l| l.max_width)
                {
                    assert!(p.lanes >= w, "{}: {} lanes, link {w}", e.id, p.lanes);
                }
                checked.insert(e.id.clone());
            }
        }
    }
    for e in ai_hwaccel::spec::all() {
        if e.pcie.is_some()
            && e.notes.as_deref().is_some_and(|n| {
                n.contains("nvidia-smi -q capture") || n.contains("nvidia-smi -q -x capture")
            })
        {
            assert!(
                checked.contains(&e.id),
                "{}: cites a capture the test did not check",
                e.id
            );
        }
    }
    assert!(checked.len() >= 18, "{checked:?}");
}

/// `pcie` against captured sysfs PCI trees of a named part: the GPU
/// function's `max_link_speed` / `max_link_width` (its PCIe LnkCap). The
/// capture's PCI id (`uevent`) must be one the entry lists.
#[test]
fn spec_pcie_agrees_with_sysfs_link_captures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    // (capture, entry): the part each capture's source names.
    let captures = [("sysfs-drm-amdgpu/lact__rx6900xt-card0/device", "rx-6900-xt")];
    let read = |dir: &std::path::Path, f: &str| {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        // sysfs values end at the newline; LACT pads its copies with NULs.
        let text = String::from_utf8_lossy(&bytes).into_owned();
        text.split(['\n', '\0']).next().unwrap().trim().to_string()
    };
    for (capture, id) in captures {
        let dir = root.join(capture);
        let speed = read(&dir, "max_link_speed");
        let generation = match speed.as_str() {
            "2.5 GT/s PCIe" => 1,
            "5.0 GT/s PCIe" => 2,
            "8.0 GT/s PCIe" => 3,
            "16.0 GT/s PCIe" => 4,
            "32.0 GT/s PCIe" => 5,
            "64.0 GT/s PCIe" => 6,
            other => panic!("{capture}: max_link_speed {other:?}"),
        };
        let lanes: u32 = read(&dir, "max_link_width").parse().unwrap();
        let uevent =
            String::from_utf8_lossy(&std::fs::read(dir.join("uevent")).unwrap()).into_owned();
        let pci_id = uevent
            .lines()
            .find_map(|l| l.strip_prefix("PCI_ID="))
            .unwrap()
            .to_ascii_lowercase();
        let e = ai_hwaccel::spec::by_id(id).unwrap();
        assert!(
            e.pci_ids.iter().any(|p| p.eq_ignore_ascii_case(&pci_id)),
            "{id}: {pci_id}"
        );
        let p = e.pcie.as_ref().unwrap_or_else(|| panic!("{id}: no pcie"));
        assert_eq!(
            (p.generation, p.lanes),
            (generation, lanes),
            "{id}: {capture}"
        );
    }
    for e in ai_hwaccel::spec::all() {
        if let Some(n) = e
            .notes
            .as_deref()
            .filter(|n| n.contains("tests/fixtures/sysfs-"))
        {
            assert!(
                captures
                    .iter()
                    .any(|(c, id)| *id == e.id && n.contains(c.trim_end_matches("/device"))),
                "{}: cites a sysfs capture the test does not check",
                e.id
            );
        }
    }
}

/// `pcie` against `amd-smi static` captures: each GPU record's BUS block
/// gives the device's maximum link (`MAX_PCIE_SPEED`, a transfer rate, and
/// `MAX_PCIE_WIDTH` or, in older and Windows builds, `MAX_PCIE_LANES`); its
/// `DEVICE_ID` names the part when one entry alone lists that id.
#[test]
fn spec_pcie_agrees_with_amd_smi_static_captures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/amd-smi-text");
    let generation_of = |rate: &str| match rate.trim() {
        "2.5 GT/s" => Some(1),
        "5 GT/s" => Some(2),
        "8 GT/s" => Some(3),
        "16 GT/s" => Some(4),
        "32 GT/s" => Some(5),
        "64 GT/s" => Some(6),
        _ => None,
    };
    let mut checked = std::collections::BTreeSet::new();
    let mut records = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // One record per GPU: "GPU: N" (Linux) or "GPU N:" (Windows) at the
        // start of a line, up to the next record of any kind.
        let mut blocks: Vec<Vec<&str>> = Vec::new();
        let mut in_gpu = false;
        for line in text.lines() {
            let t = line.trim_start();
            let indent = line.len() - t.len();
            if indent <= 4
                && (t.starts_with("GPU: ") || (t.starts_with("GPU ") && t.ends_with(':')))
            {
                blocks.push(Vec::new());
                in_gpu = true;
            } else if indent <= 4 && t.starts_with("CPU") {
                in_gpu = false;
            } else if in_gpu {
                blocks.last_mut().unwrap().push(t);
            }
        }
        for b in blocks {
            let field = |k: &str| {
                b.iter()
                    .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix(':')))
                    .map(str::trim)
            };
            let (Some(id), Some(speed)) = (field("DEVICE_ID"), field("MAX_PCIE_SPEED")) else {
                continue;
            };
            // An APU's record has no PCIe link ("N/A").
            if speed == "N/A" {
                continue;
            }
            let device = u16::from_str_radix(id.trim_start_matches("0x"), 16).unwrap();
            let generation =
                generation_of(speed).unwrap_or_else(|| panic!("{speed}: {}", path.display()));
            let lanes: u32 = field("MAX_PCIE_WIDTH")
                .or_else(|| field("MAX_PCIE_LANES"))
                .and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("no width: {}", path.display()));
            records += 1;
            let Some(e) = ai_hwaccel::spec::by_pci_id(0x1002, device) else {
                continue;
            };
            let Some(p) = &e.pcie else { continue };
            assert_eq!(
                (p.generation, p.lanes),
                (generation, lanes),
                "{}: {}",
                e.id,
                path.display()
            );
            checked.insert(e.id.clone());
        }
    }
    assert_cited_captures_checked("amd-smi static capture", &checked);
    assert!(records >= 7, "{records} GPU records with a maximum link");
    assert!(
        checked.contains("mi300x") && checked.contains("mi300a"),
        "{checked:?}"
    );
}

/// `pcie` against `xpu-smi discovery -d` captures: each device block's
/// `PCIe Generation` and `PCIe Max Link Width` are Level Zero's
/// `maxSpeed.gen` / `maxSpeed.width`, the device's maximum link; its
/// `Device Name` names the part.
#[test]
fn spec_pcie_agrees_with_xpu_smi_discovery_captures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xpu-smi");
    let mut checked = std::collections::BTreeSet::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Table rows: "| <id> | Key: value |"; a new device starts at its
        // "Device Type" row.
        let mut devices: Vec<std::collections::BTreeMap<String, String>> = Vec::new();
        for line in text.lines() {
            let Some(cell) = line.split('|').nth(2).map(str::trim) else {
                continue;
            };
            let Some((k, v)) = cell.split_once(": ") else {
                continue;
            };
            if k == "Device Type" || devices.is_empty() {
                devices.push(Default::default());
            }
            let d = devices.last_mut().unwrap();
            d.insert(k.trim().to_string(), v.trim().to_string());
        }
        for d in devices {
            let (Some(name), Some(generation), Some(width)) = (
                d.get("Device Name"),
                d.get("PCIe Generation").and_then(|g| g.parse::<u32>().ok()),
                d.get("PCIe Max Link Width")
                    .and_then(|w| w.parse::<u32>().ok()),
            ) else {
                continue;
            };
            let Some(e) = ai_hwaccel::spec::by_name(name) else {
                continue;
            };
            let Some(p) = &e.pcie else { continue };
            assert_eq!(
                (p.generation, p.lanes),
                (generation, width),
                "{}: {}",
                e.id,
                path.display()
            );
            checked.insert(e.id.clone());
        }
    }
    assert_cited_captures_checked("xpu-smi discovery capture", &checked);
    assert!(checked.contains("flex-170"), "{checked:?}");
}

/// `pcie` against `amdgpu_top --json --dump` captures: a device's
/// `PCIe Link`.`max_gpu_link` is the maximum speed and width of the card's
/// own PCIe port (above the GPU's internal switch on Navi parts, not the
/// host's `max_system_link`). The capture names a product shared by memory
/// variants, so each is tied to its entry here and its `VRAM Size` must be
/// the entry's memory (within 1 %).
#[test]
fn spec_pcie_agrees_with_amdgpu_top_dumps() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/amdgpu-top-json");
    // (capture, DeviceName, entry)
    let captures = [
        (
            "amdgpu-top-docs__dump__rx-9060-xt-16gb.json",
            "AMD Radeon RX 9060 XT",
            "rx-9060-xt-16gb",
        ),
        (
            "amdgpu-top-docs__dump__rx-6600.json",
            "AMD Radeon RX 6600",
            "rx-6600",
        ),
    ];
    for (file, name, id) in captures {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap();
        let d = v
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["DeviceName"] == name)
            .unwrap_or_else(|| panic!("{file}: no {name}"));
        let e = ai_hwaccel::spec::by_id(id).unwrap();
        let vram = d["VRAM Size"].as_u64().unwrap();
        let mem = e.memory_bytes.unwrap();
        assert!(
            vram.abs_diff(mem) * 100 < mem,
            "{id}: {file} has {vram} B of VRAM"
        );
        let link = &d["PCIe Link"]["max_gpu_link"];
        let got = (
            link["gen"].as_u64().unwrap() as u32,
            link["width"].as_u64().unwrap() as u32,
        );
        let p = e.pcie.as_ref().unwrap_or_else(|| panic!("{id}: no pcie"));
        assert_eq!((p.generation, p.lanes), got, "{id}: {file}");
    }
    for e in ai_hwaccel::spec::all() {
        if let Some(n) = e
            .notes
            .as_deref()
            .filter(|n| n.contains("tests/fixtures/amdgpu-top-json/"))
        {
            assert!(
                captures
                    .iter()
                    .any(|(f, _, id)| *id == e.id && n.contains(f)),
                "{}: cites an amdgpu_top capture the test does not check",
                e.id
            );
        }
    }
}

/// Every entry whose `pcie` notes cite a capture of this kind (`marker`)
/// was checked against one: a figure cannot cite a capture the test skips.
fn assert_cited_captures_checked(marker: &str, checked: &std::collections::BTreeSet<String>) {
    for e in ai_hwaccel::spec::all() {
        if e.pcie.is_some() && e.notes.as_deref().is_some_and(|n| n.contains(marker)) {
            assert!(
                checked.contains(&e.id),
                "{}: cites a capture the test did not check",
                e.id
            );
        }
    }
}

/// The Tesla V100S PCIe 32GB holds its datasheet column (NVIDIA's V100
/// datasheet r5, read through the pinned copies its notes name), resolves by
/// the name nvidia-smi prints and by its PCI id, and leaves the V100 PCIe
/// 32GB, whose name it extends, where it was.
#[test]
fn v100s_pcie_holds_its_datasheet_figures() {
    let e = spec::by_id("v100s-pcie-32gb").expect("v100s-pcie-32gb");
    assert_eq!(e.memory_bytes, Some(32 << 30));
    assert_eq!(e.memory_bandwidth_bytes_per_s, Some(1_134_000_000_000));
    assert_eq!(e.tflops.fp16, Some(130.0));
    assert_eq!(e.tflops.fp32, Some(16.4));
    assert_eq!(e.tflops.fp64, Some(8.2));
    assert_eq!(e.tflops.bf16, None, "Volta has no BF16");
    assert_eq!(e.tdp_watts, Some(250));
    for name in [
        "Tesla V100S-PCIE-32GB",
        "NVIDIA Tesla V100S PCIe 32GB",
        "GV100GL [Tesla V100S PCIe 32GB]",
    ] {
        assert_eq!(
            by_name(name).map(|x| x.id.as_str()),
            Some("v100s-pcie-32gb"),
            "{name:?}"
        );
    }
    assert_eq!(
        by_pci_id(0x10de, 0x1df6).map(|x| x.id.as_str()),
        Some("v100s-pcie-32gb")
    );
    assert_eq!(
        spec::resolve("v100s").map(|x| x.id.as_str()),
        Some("v100s-pcie-32gb")
    );
    // The V100 PCIe 32GB's own names still find it.
    for name in ["Tesla V100-PCIE-32GB", "NVIDIA Tesla V100 PCIe 32GB"] {
        assert_eq!(
            by_name(name).map(|x| x.id.as_str()),
            Some("v100-pcie-32gb"),
            "{name:?}"
        );
    }
    assert_eq!(
        by_pci_id(0x10de, 0x1db6).map(|x| x.id.as_str()),
        Some("v100-pcie-32gb")
    );
}
