//! Qualcomm Cloud AI backend: real `qaic-util -q` captures (an AEDK with one
//! 8-NSP AIC100, a server with eight 16-NSP AIC100 cards), truncated and
//! corrupted copies, and fake-root runs with the qaic PCI id (class 0xff00,
//! as the AEDK capture shows), `qaic` accel devices and a fake qaic-util.
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

const AEDK: &str = "qaic-util/ck-qaic-setup-aedk__1x-aic100-8nsp__platform-sdk-1.6.txt";
const SERVER: &str = "qaic-util/ck-qaic-audit-v1.1__8x-aic100-16nsp__platform-sdk-1.5.9.txt";
const MIB: u64 = 1 << 20;
const SERVER_ADDRS: [&str; 8] = [
    "0000:01:00.0",
    "0000:81:00.0",
    "0000:a1:00.0",
    "0000:a2:00.0",
    "0000:c1:00.0",
    "0000:c2:00.0",
    "0000:21:00.0",
    "0000:22:00.0",
];

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("qaic-util").expect("format registered").parse)(bytes)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

#[test]
fn aedk_capture_values() {
    let out = parse(read(AEDK).as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.id, "pci:0002:01:00.0");
    assert_eq!(
        d.name, "Qualcomm Cloud AI 100",
        "from FW IMAGE_VARIANT AIC100.REL"
    );
    assert_eq!((d.vendor.as_str(), d.family), ("qualcomm", Family::AiAsic));
    assert_eq!(d.memory_bytes, Some(8_116 * MIB));
    assert_eq!(d.memory_free_bytes, Some(8_116 * MIB));
    assert_eq!(d.compute_units, Some(8), "NSPs");
    assert_eq!(d.serial.as_deref(), Some("0x2b36e75d"));
    assert_eq!(d.firmware_version.as_deref(), Some("1.6.36"));
    assert_eq!(d.driver_version.as_deref(), Some("LRT.AIC.6.7.1.6.52"));
    assert_eq!(d.index, Some(0));
    assert!(d.available);
    assert!(!d.extra.contains_key("board_serial"), "empty is unknown");
    assert_eq!(d.extra["nsp_version"], "1.6.18");
    assert!(
        ai_hwaccel::spec::match_device(d).is_none(),
        "nothing in the output names the SKU (Standard/Pro/Ultra)"
    );
}

#[test]
fn server_capture_values() {
    let out = parse(read(SERVER).as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 8);
    for (d, addr) in out.devices.iter().zip(SERVER_ADDRS) {
        assert_eq!(d.id, format!("pci:{addr}"));
        assert_eq!(d.memory_bytes, Some(32_692 * MIB));
        assert_eq!(d.compute_units, Some(16));
        assert_eq!(d.firmware_version.as_deref(), Some("1.5.6"));
    }
    assert_eq!(out.devices[5].serial.as_deref(), Some("0xd55e8219"));
    assert_eq!(out.devices[0].extra["board_serial"], "PN471-12-343016");
    assert_eq!(out.devices[7].index, Some(7));
}

#[test]
fn truncated_and_garbled_outputs_warn() {
    let text = read(SERVER);
    let cut = text.find("QID 4").unwrap();
    let out = parse(&text.as_bytes()[..cut]);
    assert_eq!(out.devices.len(), 4);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("8 devices, 4 listed")),
        "{:?}",
        out.warnings
    );
    let garbled = text
        .replacen("Dram Total:32692 MB", "Dram Total:lots MB", 1)
        .replacen("PCI Address:0000:81:00.0", "PCI Address:0000:81:00", 1);
    let out = parse(garbled.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, None, "unknown, never 0");
    assert_eq!(out.devices[1].pci_address, None);
    assert_eq!(out.devices[1].id, "qaic:1");
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    let out = parse(b"qaic-util: no devices\n");
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
}

// ---- fake root + fake tool ------------------------------------------------

/// The eight AIC100 functions of the server capture (17cb:a100 with the
/// unassigned class 0xff0000), bound to qaic, and one `/sys/class/accel`
/// entry pointing at the first.
fn qaic_root(root: &Path, driver: Option<&str>) {
    for (i, a) in SERVER_ADDRS.iter().enumerate() {
        FakePci {
            vendor: "17cb",
            device: "a100",
            class: "ff0000",
            driver,
            numa: Some(i32::from(i >= 4)),
            link: true,
        }
        .write(root, a);
    }
    let acc = root.join("sys/class/accel/accel0");
    std::fs::create_dir_all(&acc).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:01:00.0",
        acc.join("device"),
    )
    .unwrap();
}

fn run(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Qaic, BackendId::Pci])
}

fn fake_qaic_util(bin: &Path, text: &str) {
    let f = bin.join("out.txt");
    std::fs::write(&f, text).unwrap();
    write_script(
        bin,
        "qaic-util",
        &format!("[ \"$1\" = -q ] && cat '{}'", f.display()),
    );
}

#[test]
fn tool_sysfs_and_pci_merge() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    qaic_root(root.path(), Some("qaic"));
    fake_qaic_util(bin.path(), &read(SERVER));
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 8, "tool, accel and PCI views merged");
    let d = r.device("pci:0000:01:00.0").unwrap();
    assert_eq!(d.source, "qaic-util+qaic-sysfs+pci-sysfs");
    assert_eq!(d.name, "Qualcomm Cloud AI 100");
    assert_eq!(d.extra["accel_node"], "accel0");
    assert_eq!(d.driver.as_deref(), Some("qaic"));
    assert_eq!(d.memory_bytes, Some(32_692 * MIB));
    let far = r.device("pci:0000:c2:00.0").unwrap();
    assert_eq!(far.numa_node, Some(1));
    assert_eq!(far.pci.as_ref().unwrap().class.as_deref(), Some("ff0000"));
    assert_eq!(r.summary.accelerator_count, 8);
    assert_eq!(r.summary.accelerator_memory_bytes, Some(8 * 32_692 * MIB));
}

#[test]
fn error_status_and_missing_driver() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    qaic_root(root.path(), None);
    fake_qaic_util(
        bin.path(),
        &read(AEDK)
            .replace("0002:01:00.0", "0000:01:00.0")
            .replace("Status:Ready", "Status:Error"),
    );
    let r = run(root.path(), bin.path());
    assert_eq!(r.devices.len(), 8);
    let d = r.device("pci:0000:01:00.0").unwrap();
    assert!(!d.available);
    assert_eq!(
        d.unavailable_reason.as_deref(),
        Some("qaic-util status: Error")
    );
    let other = r.device("pci:0000:81:00.0").unwrap();
    assert_eq!(other.source, "pci-sysfs");
    assert_eq!(
        other.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    assert_eq!(other.memory_bytes, None);
}

#[test]
fn no_qaic_hardware_means_no_tool_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A Qualcomm Wi-Fi adapter (17cb:1103, network class) is not a Cloud AI card.
    FakePci {
        vendor: "17cb",
        device: "1103",
        class: "028000",
        driver: Some("ath11k_pci"),
        numa: None,
        link: false,
    }
    .write(root.path(), "0000:03:00.0");
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "qaic-util",
        &format!("touch '{}'", marker.display()),
    );
    let r = run(root.path(), bin.path());
    assert!(r.devices.is_empty());
    assert!(
        !marker.exists(),
        "qaic-util must not run without Cloud AI hardware"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..11000, flip in 0usize..11000, byte in 0u8..=255) {
        for rel in [AEDK, SERVER] {
            let b = support::damaged(std::fs::read(fixture(rel)).unwrap(), cut, flip, byte);
            let _ = parse(&b);
        }
    }
}
