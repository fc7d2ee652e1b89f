//! NPU backend: fake sysfs roots with real PCI ids (Linux `ivpu_drv.h`,
//! `amdxdna_pci_drv.c`) and the attribute files of `ivpu_sysfs.c` and
//! `amdxdna_sysfs.c`; garbled attributes; NPUs without a usable driver.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake};

use std::path::Path;

use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (f, v) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    }
}

/// `/sys/class/accel/<name>/device` → the fake PCI function at `addr`.
fn accel_entry(root: &Path, name: &str, addr: &str) {
    let dir = root.join("sys/class/accel").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../devices/pci0000:00/{addr}"),
        dir.join("device"),
    )
    .unwrap();
}

fn run(root: &Path) -> Registry {
    let bin = tempfile::tempdir().unwrap();
    detect_fake(root, bin.path(), &[], &[BackendId::Npu, BackendId::Pci])
}

fn npu(
    vendor: &'static str,
    device: &'static str,
    driver: Option<&'static str>,
) -> FakePci<'static> {
    FakePci {
        vendor,
        device,
        class: "120000",
        driver,
        numa: Some(-1),
        link: false,
    }
}

#[test]
fn meteor_lake_npu_with_intel_vpu() {
    let root = tempfile::tempdir().unwrap();
    let addr = "0000:00:0b.0";
    let dir = npu("8086", "7d1d", Some("intel_vpu")).write(root.path(), addr);
    write(
        &dir,
        &[
            ("npu_busy_time_us", "1234567"),
            ("npu_memory_utilization", "41943040"),
            ("sched_mode", "HW"),
            ("npu_max_frequency_mhz", "1400"),
            ("npu_current_frequency_mhz", "0"),
        ],
    );
    accel_entry(root.path(), "accel0", addr);
    let r = run(root.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(
        r.devices.len(),
        1,
        "NPU and PCI views merged: {:?}",
        r.devices
    );
    let d = r.device("pci:0000:00:0b.0").unwrap();
    assert_eq!(d.name, "Intel NPU (Meteor Lake)");
    assert_eq!((d.vendor.as_str(), d.family), ("intel", Family::Npu));
    assert_eq!(d.architecture.as_deref(), Some("NPU 37xx"));
    assert_eq!(d.driver.as_deref(), Some("intel_vpu"));
    assert_eq!(d.source, "npu-sysfs+pci-sysfs");
    assert_eq!(d.index, Some(0));
    assert_eq!(d.numa_node, None, "numa_node -1 is unknown");
    assert_eq!(d.memory_bytes, None, "an NPU has no memory of its own");
    assert!(d.available);
    assert_eq!(d.extra["platform"], "Meteor Lake");
    assert_eq!(d.extra["device_path"], "/dev/accel/accel0");
    assert_eq!(d.extra["npu_busy_time_us"], "1234567");
    assert_eq!(d.extra["npu_memory_utilization_bytes"], "41943040");
    assert_eq!(d.extra["sched_mode"], "HW");
    assert_eq!(d.extra["npu_max_frequency_mhz"], "1400");
    assert_eq!(d.extra["npu_current_frequency_mhz"], "0");
    assert_eq!(
        d.spec.as_ref().map(|s| s.id.as_str()),
        Some("meteor-lake-npu")
    );
    assert!(r.summary.has_accelerator);
}

#[test]
fn strix_xdna2_revision_and_firmware() {
    let root = tempfile::tempdir().unwrap();
    let addr = "0000:c6:00.1";
    let dir = npu("1022", "17f0", Some("amdxdna")).write(root.path(), addr);
    write(
        &dir,
        &[
            ("revision", "0x10"),
            ("vbnv", "RyzenAI-npu4"),
            ("device_type", "1"),
            ("fw_version", "1.5.2.380"),
        ],
    );
    accel_entry(root.path(), "accel0", addr);
    let r = run(root.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let d = r.device("pci:0000:c6:00.1").unwrap();
    assert_eq!(d.name, "AMD XDNA2 NPU (Strix/Krackan)");
    assert_eq!(d.vendor, "amd");
    assert_eq!(d.architecture.as_deref(), Some("XDNA 2"));
    assert_eq!(d.firmware_version.as_deref(), Some("1.5.2.380"));
    assert_eq!(
        d.extra["npu_generation"], "npu4",
        "(0x17f0, rev 0x10) in amdxdna_ids"
    );
    assert_eq!(d.extra["vbnv"], "RyzenAI-npu4");
    assert_eq!(d.extra["device_type"], "1");
    assert_eq!(d.memory_bytes, None);
    assert_eq!(d.spec.as_ref().map(|s| s.id.as_str()), Some("xdna2"));
}

#[test]
fn garbled_attributes_are_warnings_not_values() {
    let root = tempfile::tempdir().unwrap();
    let addr = "0000:00:0b.0";
    let dir = npu("8086", "643e", Some("intel_vpu")).write(root.path(), addr);
    write(
        &dir,
        &[
            ("npu_busy_time_us", "lots"),
            ("sched_mode", "H W;rm -rf"),
            ("npu_max_frequency_mhz", "-5"),
            ("freq/hw_max_freq", "1950"),
        ],
    );
    std::fs::write(dir.join("npu_memory_utilization"), [0xff, 0xfe, 0x00]).unwrap();
    accel_entry(root.path(), "accel0", addr);
    let r = run(root.path());
    let d = r.device("pci:0000:00:0b.0").unwrap();
    assert_eq!(d.name, "Intel NPU (Lunar Lake)");
    assert_eq!(d.architecture.as_deref(), Some("NPU 40xx"));
    assert!(!d.extra.contains_key("npu_busy_time_us"));
    assert!(!d.extra.contains_key("sched_mode"));
    assert!(!d.extra.contains_key("npu_memory_utilization_bytes"));
    assert_eq!(
        d.extra["npu_max_frequency_mhz"], "1950",
        "falls back to freq/hw_max_freq"
    );
    let msgs: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    for file in [
        "npu_busy_time_us",
        "sched_mode",
        "npu_max_frequency_mhz",
        "npu_memory_utilization",
    ] {
        assert!(
            msgs.iter().any(|m| m.contains(file)),
            "a warning names {file}: {msgs:?}"
        );
    }
    assert!(r.warnings.iter().all(|w| w.backend == "npu"));
}

#[test]
fn npus_without_a_usable_driver() {
    let root = tempfile::tempdir().unwrap();
    npu("8086", "ad1d", Some("vfio-pci")).write(root.path(), "0000:00:0b.0");
    npu("1022", "1502", None).write(root.path(), "0000:c5:00.1");
    let r = run(root.path());
    assert_eq!(r.devices.len(), 2);
    let arl = r.device("pci:0000:00:0b.0").unwrap();
    assert_eq!(arl.name, "Intel NPU (Arrow Lake)");
    assert!(!arl.available);
    assert!(
        arl.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("vfio-pci")
    );
    assert_eq!(arl.source, "pci-sysfs");
    let phx = r.device("pci:0000:c5:00.1").unwrap();
    assert_eq!(phx.family, Family::Npu);
    assert_eq!(
        phx.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    assert_eq!(phx.spec.as_ref().map(|s| s.id.as_str()), Some("xdna"));
    assert!(!r.summary.has_accelerator);
}

#[test]
fn accel_entry_of_a_function_the_scan_does_not_list() {
    // The accel node's PCI function has no vendor/device files: the scan
    // skips it, the accel entry still yields the NPU at that address.
    let root = tempfile::tempdir().unwrap();
    let addr = "0000:00:0b.0";
    let dir = root.path().join("sys/devices/pci0000:00").join(addr);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.path().join("sys/bus/pci/drivers/intel_vpu")).unwrap();
    std::os::unix::fs::symlink("../../../../bus/pci/drivers/intel_vpu", dir.join("driver"))
        .unwrap();
    accel_entry(root.path(), "accel3", addr);
    // Another accel device of a different driver is not an NPU.
    let other = root.path().join("sys/devices/pci0000:00/0000:4d:00.0");
    std::fs::create_dir_all(&other).unwrap();
    std::os::unix::fs::symlink(
        "../../../../bus/pci/drivers/habanalabs",
        other.join("driver"),
    )
    .unwrap();
    accel_entry(root.path(), "accel4", "0000:4d:00.0");
    let r = run(root.path());
    assert_eq!(r.devices.len(), 1, "{:?}", r.devices);
    let d = &r.devices[0];
    assert_eq!(d.id, "pci:0000:00:0b.0");
    assert_eq!(d.name, "Intel NPU");
    assert_eq!(d.index, Some(3));
    assert!(d.available);
    assert_eq!(d.pci, None);
}

#[test]
fn no_npu_no_devices_no_warnings() {
    let root = tempfile::tempdir().unwrap();
    // An Intel GPU is not an NPU.
    FakePci {
        vendor: "8086",
        device: "56a0",
        class: "030000",
        driver: Some("i915"),
        numa: None,
        link: false,
    }
    .write(root.path(), "0000:03:00.0");
    let bin = tempfile::tempdir().unwrap();
    let r = detect_fake(root.path(), bin.path(), &[], &[BackendId::Npu]);
    assert!(r.devices.is_empty(), "{:?}", r.devices);
    assert!(r.warnings.is_empty());
}
