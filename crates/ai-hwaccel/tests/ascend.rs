//! Ascend backend: real `npu-smi info` captures (910B3, 910A, 310 with the
//! `Device` column, a redacted capture followed by the process table),
//! truncated and corrupted copies, and fake-root runs with the Ascend PCI
//! ids, `/dev/davinci*` nodes and a fake npu-smi.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake, fixture, write_script};

use std::path::Path;

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

const B3: &str = "npu-smi/ms-swift-doc__8x-910b3__npu-smi-24.1.rc1.b030.txt";
const A910: &str = "npu-smi/gpustack__atlas-800-9010__8x-910a__npu-smi-22.0.3.1.txt";
const C310: &str = "npu-smi/gpustack__atlas-800-3000__4x-310__npu-smi-21.0.4.txt";
const REDACTED: &str = "npu-smi/gpustack__atlas-800-9010__8x-redacted__npu-smi-24.1.RC2.txt";
const MIB: u64 = 1 << 20;

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("npu-smi").expect("format registered").parse)(bytes)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixture(rel)).unwrap()
}

fn spec_id(d: &ai_hwaccel::Device) -> Option<&'static str> {
    ai_hwaccel::spec::match_device(d).map(|e| e.id.as_str())
}

#[test]
fn capture_8x_910b3() {
    let out = parse(&read(B3));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 8);
    let d = &out.devices[0];
    assert_eq!(d.id, "pci:0000:c1:00.0");
    assert_eq!(d.name, "Huawei Ascend 910B3");
    assert_eq!((d.vendor.as_str(), d.family), ("huawei", Family::AiAsic));
    assert_eq!(d.memory_bytes, Some(65_536 * MIB), "HBM total in MiB");
    assert_eq!(d.memory_free_bytes, Some((65_536 - 3_318) * MIB));
    assert_eq!(d.temperature_celsius, Some(43.0));
    assert_eq!(d.driver_version.as_deref(), Some("24.1.rc1.b030"));
    assert_eq!(d.index, Some(0));
    assert_eq!(d.extra["memory_kind"], "HBM");
    assert_eq!(d.extra["health"], "OK");
    assert_eq!(d.extra["power_draw_watts"], "101.8");
    assert!(
        !d.extra.contains_key("ddr_memory_bytes"),
        "0 / 0 DDR is none"
    );
    let last = &out.devices[7];
    assert_eq!(last.id, "pci:0000:42:00.0");
    assert_eq!(last.memory_free_bytes, Some((65_536 - 3_315) * MIB));
    assert_eq!(last.index, Some(7));
    assert_eq!(spec_id(d), Some("ascend-910b"));
}

/// An Atlas 200 DK: the Ascend 310 is a SoC with no PCI function, and
/// npu-smi prints its Bus-Id as `NA`: no address, no warning.
#[test]
fn capture_atlas_200dk_bus_id_na() {
    let out = parse(&read(
        "npu-smi/mindxsdk-referenceapps__atlas-200dk-1x-310-bus-na__npu-smi-21.0.3.1.txt",
    ));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.name, "Huawei Ascend 310");
    assert_eq!(d.pci_address, None);
    assert_eq!(d.memory_bytes, Some(8192 * MIB));
    assert_eq!(d.memory_free_bytes, Some((8192 - 5324) * MIB));
    assert_eq!(d.temperature_celsius, Some(58.0));
    assert_eq!(d.driver_version.as_deref(), Some("21.0.3.1"));
}

#[test]
fn capture_8x_910a_with_ddr_and_hbm() {
    let out = parse(&read(A910));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 8);
    let d = &out.devices[1];
    assert_eq!(d.id, "pci:0000:db:00.0", "uppercase bus id read as hex");
    assert_eq!(d.name, "Huawei Ascend 910A");
    assert_eq!(d.memory_bytes, Some(32_768 * MIB));
    assert_eq!(d.memory_free_bytes, Some(32_768 * MIB), "0 MiB of HBM used");
    assert_eq!(d.extra["ddr_memory_bytes"], (15_077 * MIB).to_string());
    assert_eq!(d.driver_version.as_deref(), Some("22.0.3.1"));
    assert_eq!(out.devices[3].extra["power_draw_watts"], "191.7");
    assert_eq!(spec_id(d), Some("ascend-910"));
}

#[test]
fn capture_310_with_device_column() {
    let out = parse(&read(C310));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 4);
    for (i, d) in out.devices.iter().enumerate() {
        assert_eq!(d.name, "Huawei Ascend 310");
        assert_eq!(d.extra["npu_id"], "6", "four chips on NPU 6");
        assert_eq!(d.extra["chip_id"], i.to_string());
        assert_eq!(d.extra["device_id"], (i + 3).to_string());
        assert_eq!(d.memory_bytes, Some(8_192 * MIB));
        assert_eq!(d.extra["memory_kind"], "DDR");
    }
    assert_eq!(
        out.devices[0].memory_free_bytes,
        Some((8_192 - 2_703) * MIB)
    );
    assert_eq!(out.devices[2].id, "pci:0000:8b:00.0");
    assert_eq!(out.devices[3].temperature_celsius, Some(65.0));
    assert_eq!(
        out.devices[0].driver_version.as_deref(),
        Some("21.0.4.B030")
    );
    assert_eq!(spec_id(&out.devices[0]), Some("ascend-310"));
}

#[test]
fn redacted_names_and_process_table() {
    let out = parse(&read(REDACTED));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 8, "process rows are not devices");
    let d = &out.devices[3];
    assert_eq!(d.name, "Huawei Ascend NPU", "`xxx` is not a chip model");
    assert_eq!(d.extra["npu_smi_name"], "xxx");
    assert_eq!(d.extra["health"], "Warning");
    assert!(d.available, "a warning is not an outage");
    assert_eq!(d.memory_bytes, Some(32_768 * MIB));
    assert_eq!(spec_id(d), None);
}

#[test]
fn truncated_and_garbled_tables_warn() {
    let text = String::from_utf8(read(B3)).unwrap();
    // Cut right after the first line of NPU 2's pair.
    let cut = text
        .find("| 0                         | 0000:81:00.0")
        .unwrap();
    let out = parse(&text.as_bytes()[..cut]);
    assert_eq!(out.devices.len(), 3);
    assert!(
        out.warnings.iter().any(|w| w.contains("NPU 2")),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.devices[2].memory_bytes, None, "unknown, never 0");

    let garbled =
        text.replacen("0000:C2:00.0", "0000:ZZ:00.0", 1)
            .replacen("3314 / 65536", "3314 / lots", 1);
    let out = parse(garbled.as_bytes());
    assert_eq!(out.devices.len(), 8);
    assert_eq!(out.devices[1].pci_address, None);
    assert!(
        out.warnings.iter().any(|w| w.contains("Bus-Id")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("HBM-Usage")),
        "{:?}",
        out.warnings
    );

    // An extra value in a cell is not read by position.
    let shifted = text.replacen("| 101.8       43 ", "| 101.8  7    43 ", 1);
    let out = parse(shifted.as_bytes());
    assert_eq!(out.devices[0].temperature_celsius, None);
    assert!(!out.warnings.is_empty());

    let out = parse(b"npu-smi: command not found\n");
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
}

// ---- fake root + fake tool ------------------------------------------------

/// The eight 910B functions of the 910B3 capture (19e5:d802, class 0x1200),
/// each with a driver bound (any driver; the backend does not require a
/// name), and their `/dev/davinci<N>` nodes plus the control nodes.
fn root_910b(root: &Path) {
    let addrs = [
        "0000:c1:00.0",
        "0000:c2:00.0",
        "0000:81:00.0",
        "0000:82:00.0",
        "0000:01:00.0",
        "0000:02:00.0",
        "0000:41:00.0",
        "0000:42:00.0",
    ];
    for (i, a) in addrs.iter().enumerate() {
        FakePci {
            vendor: "19e5",
            device: "d802",
            class: "120000",
            driver: Some("devdrv_device_driver"),
            numa: Some(if i < 4 { 1 } else { 0 }),
            link: true,
        }
        .write(root, a);
    }
    let dev = root.join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    for n in (0..8)
        .map(|i| format!("davinci{i}"))
        .chain(["davinci_manager", "devmm_svm", "hisi_hdc"].map(String::from))
    {
        std::fs::write(dev.join(n), "").unwrap();
    }
}

fn run(root: &Path, bin: &Path, env: &[(&str, &str)]) -> Registry {
    detect_fake(root, bin, env, &[BackendId::Ascend, BackendId::Pci])
}

fn fake_npu_smi(bin: &Path, rel: &str) {
    write_script(
        bin,
        "npu-smi",
        &format!(
            "[ \"$1\" = info ] && [ -z \"$2\" ] && cat '{}'",
            fixture(rel).display()
        ),
    );
}

#[test]
fn tool_and_pci_merge_with_runtime_visibility() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    root_910b(root.path());
    fake_npu_smi(bin.path(), B3);
    let r = run(
        root.path(),
        bin.path(),
        &[("ASCEND_RT_VISIBLE_DEVICES", "0,1")],
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 8, "npu-smi and PCI views merged");
    let d = r.device("pci:0000:c1:00.0").unwrap();
    assert_eq!(d.source, "npu-smi+pci-sysfs");
    assert_eq!(d.name, "Huawei Ascend 910B3");
    assert_eq!(d.numa_node, Some(1));
    assert_eq!(d.pci.as_ref().unwrap().device_id, "d802");
    assert_eq!(d.architecture.as_deref(), Some("Ascend 910B"));
    assert_eq!(d.spec.as_ref().map(|s| s.id.as_str()), Some("ascend-910b"));
    assert!(d.available);
    assert!(r.device("pci:0000:c2:00.0").unwrap().available);
    let hidden = r.device("pci:0000:81:00.0").unwrap();
    assert!(!hidden.available);
    assert_eq!(
        hidden.unavailable_reason.as_deref(),
        Some("not in ASCEND_RT_VISIBLE_DEVICES")
    );
    assert_eq!(r.summary.accelerator_count, 2);
}

#[test]
fn container_visibility_by_physical_id() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    root_910b(root.path());
    fake_npu_smi(bin.path(), B3);
    let r = run(
        root.path(),
        bin.path(),
        &[("ASCEND_VISIBLE_DEVICES", "0-2,7")],
    );
    let mut available: Vec<&str> = r
        .devices
        .iter()
        .filter(|d| d.available)
        .map(|d| d.id.as_str())
        .collect();
    available.sort_unstable();
    // NPU ids 0, 1, 2 and 7 (one chip per NPU: the NPU id is the device id).
    assert_eq!(
        available,
        [
            "pci:0000:42:00.0",
            "pci:0000:81:00.0",
            "pci:0000:c1:00.0",
            "pci:0000:c2:00.0"
        ]
    );
    let hidden = r.device("pci:0000:82:00.0").unwrap();
    assert_eq!(
        hidden.unavailable_reason.as_deref(),
        Some("not in ASCEND_VISIBLE_DEVICES")
    );
}

#[test]
fn pci_only_310p_boards_and_missing_driver() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    for (addr, sub, drv) in [
        ("0000:82:00.0", "0x0100", Some("devdrv_device_driver")),
        ("0000:89:00.0", "0x0110", None),
    ] {
        let dir = FakePci {
            vendor: "19e5",
            device: "d500",
            class: "120000",
            driver: drv,
            numa: None,
            link: false,
        }
        .write(root.path(), addr);
        std::fs::write(dir.join("subsystem_device"), format!("{sub}\n")).unwrap();
    }
    let r = run(root.path(), bin.path(), &[]);
    assert_eq!(r.devices.len(), 2);
    let pro = r.device("pci:0000:82:00.0").unwrap();
    assert_eq!(pro.name, "Huawei Ascend 310P");
    assert_eq!(pro.extra["board"], "Atlas 300I Pro");
    assert_eq!(
        pro.spec.as_ref().map(|s| s.id.as_str()),
        Some("ascend-310p")
    );
    assert_eq!(pro.memory_bytes, None, "unknown without npu-smi, never 0");
    let duo = r.device("pci:0000:89:00.0").unwrap();
    assert_eq!(duo.name, "Huawei Ascend 310P (Atlas 300I Duo)");
    assert!(
        duo.spec.is_none(),
        "the 310P entry holds Atlas 300I Pro figures"
    );
    assert!(!duo.available);
    assert_eq!(
        duo.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
}

#[test]
fn davinci_nodes_without_pci() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let dev = root.path().join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    for n in ["davinci0", "davinci_manager"] {
        std::fs::write(dev.join(n), "").unwrap();
    }
    let r = run(root.path(), bin.path(), &[("ASCEND_VISIBLE_DEVICES", "1")]);
    assert_eq!(r.devices.len(), 1, "control nodes are not devices");
    let d = &r.devices[0];
    assert_eq!(d.id, "ascend:davinci0");
    assert_eq!(d.source, "davinci-dev");
    assert!(!d.available);
}

#[test]
fn no_ascend_hardware_means_no_tool_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A Huawei NIC (19e5:1822, Ethernet class) is not an NPU.
    FakePci {
        vendor: "19e5",
        device: "1822",
        class: "020000",
        driver: Some("hinic"),
        numa: None,
        link: false,
    }
    .write(root.path(), "0000:05:00.0");
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "npu-smi",
        &format!("touch '{}'", marker.display()),
    );
    let r = run(root.path(), bin.path(), &[]);
    assert!(r.devices.is_empty());
    assert!(
        !marker.exists(),
        "npu-smi must not run without Ascend hardware"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..7000, flip in 0usize..7000, byte in 0u8..=255) {
        for rel in [B3, A910, C310, REDACTED] {
            let b = support::damaged(read(rel), cut, flip, byte);
            let _ = parse(&b);
        }
    }
}

/// Ascend is `ai_asic` everywhere (see `Family::AiAsic` for why): what
/// `npu-smi` detects, every Huawei spec entry, and the planner's view of a
/// device string naming one.
#[test]
fn ascend_family_is_ai_asic_in_detection_spec_and_planner() {
    let out = parse(&read(
        "npu-smi/ms-swift-doc__8x-910b3__npu-smi-24.1.rc1.b030.txt",
    ));
    assert_eq!(out.devices.len(), 8);
    assert!(out.devices.iter().all(|d| d.family == Family::AiAsic));
    let huawei: Vec<_> = ai_hwaccel::spec::all()
        .iter()
        .filter(|e| e.vendor == "huawei")
        .collect();
    assert!(huawei.len() >= 4, "{} Huawei entries", huawei.len());
    for e in huawei {
        assert_eq!(e.family, Family::AiAsic, "{}", e.id);
    }
    let plan = ai_hwaccel::plan::PlanDevice::from_device_string("8xascend-910b").unwrap();
    assert_eq!(plan.len(), 8);
    assert_eq!(plan[0].spec_id.as_deref(), Some("ascend-910b"));
    assert_eq!(
        ai_hwaccel::spec::by_id("ascend-910b").unwrap().family,
        Family::AiAsic
    );
}
