//! Offload backend: a fake QAT 4xxx PF with VFs (ids of Linux
//! `adf_accel_devices.h`, attributes of `sysfs-driver-qat` and PCI SR-IOV
//! sysfs), a fake BlueField-3 (pci.ids), garbled files, and the rule that
//! offload engines never count as accelerators.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake};

use std::path::Path;

use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

fn run(root: &Path) -> Registry {
    let bin = tempfile::tempdir().unwrap();
    detect_fake(root, bin.path(), &[], &[BackendId::Offload, BackendId::Pci])
}

fn qat(device: &'static str, driver: Option<&'static str>) -> FakePci<'static> {
    FakePci {
        vendor: "8086",
        device,
        class: "0b4000",
        driver,
        numa: Some(0),
        link: true,
    }
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (f, v) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    }
}

/// A QAT 4xxx PF with SR-IOV on and two VFs: one for user space (vfio-pci),
/// one with no driver.
fn qat_root(root: &Path, pf_files: &[(&str, &str)]) {
    let pf = qat("4940", Some("4xxx")).write(root, "0000:6b:00.0");
    write(&pf, pf_files);
    for (addr, drv) in [("0000:6b:00.1", Some("vfio-pci")), ("0000:6b:00.2", None)] {
        let vf = qat("4941", drv).write(root, addr);
        std::os::unix::fs::symlink("../0000:6b:00.0", vf.join("physfn")).unwrap();
    }
}

#[test]
fn qat_4xxx_pf_with_vfs() {
    let root = tempfile::tempdir().unwrap();
    qat_root(
        root.path(),
        &[
            ("sriov_numvfs", "2"),
            ("sriov_totalvfs", "16"),
            ("qat/state", "up"),
            ("qat/cfg_services", "sym;asym"),
        ],
    );
    let r = run(root.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 3, "{:?}", r.devices);
    let pf = r.device("pci:0000:6b:00.0").unwrap();
    assert_eq!(pf.name, "Intel QuickAssist 4xxx");
    assert_eq!((pf.vendor.as_str(), pf.family), ("intel", Family::Offload));
    assert_eq!(pf.architecture.as_deref(), Some("QAT 4xxx"));
    assert_eq!(pf.driver.as_deref(), Some("4xxx"));
    assert_eq!(pf.numa_node, Some(0));
    let link = pf.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.current_width),
        (Some(16.0), Some(16))
    );
    assert!(pf.available);
    assert_eq!(pf.extra["function"], "pf");
    assert_eq!(pf.extra["sriov_numvfs"], "2");
    assert_eq!(pf.extra["sriov_totalvfs"], "16");
    assert_eq!(pf.extra["qat_state"], "up");
    assert_eq!(pf.extra["qat_services"], "sym;asym");
    assert_eq!(pf.spec, None, "offload engines have no spec entry");
    let vf1 = r.device("pci:0000:6b:00.1").unwrap();
    assert_eq!(vf1.name, "Intel QuickAssist 4xxx (VF)");
    assert_eq!(vf1.extra["function"], "vf");
    assert_eq!(vf1.extra["physfn"], "0000:6b:00.0");
    assert!(vf1.available, "qatlib/DPDK drive VFs through vfio-pci");
    assert_eq!(vf1.extra["vfio"], "true");
    let vf2 = r.device("pci:0000:6b:00.2").unwrap();
    assert!(!vf2.available);
    assert_eq!(
        vf2.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    assert!(!r.summary.has_accelerator, "QAT is not AI compute");
    assert_eq!(r.summary.accelerator_count, 0);
}

#[test]
fn qat_down_and_garbled_files() {
    let root = tempfile::tempdir().unwrap();
    qat_root(
        root.path(),
        &[
            ("sriov_numvfs", "two"),
            ("qat/state", "down"),
            ("qat/cfg_services", "sym;;<script>"),
        ],
    );
    let r = run(root.path());
    let pf = r.device("pci:0000:6b:00.0").unwrap();
    assert!(!pf.available);
    assert_eq!(
        pf.unavailable_reason.as_deref(),
        Some("QAT device is down (qat/state)")
    );
    assert!(!pf.extra.contains_key("sriov_numvfs"));
    assert!(!pf.extra.contains_key("qat_services"));
    let msgs: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(msgs.iter().any(|m| m.contains("sriov_numvfs")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("cfg_services")), "{msgs:?}");

    let root = tempfile::tempdir().unwrap();
    qat_root(root.path(), &[("qat/state", "sideways")]);
    let r = run(root.path());
    assert!(r.warnings.iter().any(|w| w.message.contains("qat/state")));
    assert!(r.device("pci:0000:6b:00.0").unwrap().available);
}

#[test]
fn qat_pf_passed_through_and_older_generations() {
    let root = tempfile::tempdir().unwrap();
    qat("37c8", Some("vfio-pci")).write(root.path(), "0000:3d:00.0");
    qat("37c9", Some("c6xxvf")).write(root.path(), "0000:3d:01.0");
    let r = run(root.path());
    let pf = r.device("pci:0000:3d:00.0").unwrap();
    assert_eq!(pf.name, "Intel QuickAssist C62x");
    assert!(!pf.available, "a PF on vfio-pci belongs to a VM");
    let vf = r.device("pci:0000:3d:01.0").unwrap();
    assert_eq!(vf.architecture.as_deref(), Some("QAT C62x"));
    assert!(vf.available);
    assert!(
        !vf.extra.contains_key("physfn"),
        "no physfn link in this root"
    );
}

#[test]
fn bluefield_3_functions() {
    let root = tempfile::tempdir().unwrap();
    for (addr, device, class, driver) in [
        ("0000:ca:00.0", "a2dc", "020000", Some("mlx5_core")),
        ("0000:ca:00.1", "a2dc", "020000", Some("mlx5_core")),
        ("0000:ca:00.2", "c2d5", "080100", None),
        // A plain ConnectX-7 NIC on the same host is not a DPU.
        ("0000:4b:00.0", "1021", "020000", Some("mlx5_core")),
    ] {
        FakePci {
            vendor: "15b3",
            device,
            class,
            driver,
            numa: Some(1),
            link: true,
        }
        .write(root.path(), addr);
    }
    let r = run(root.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 3, "{:?}", r.devices);
    let p0 = r.device("pci:0000:ca:00.0").unwrap();
    assert_eq!(p0.name, "NVIDIA BlueField-3 (integrated ConnectX-7)");
    assert_eq!((p0.vendor.as_str(), p0.family), ("nvidia", Family::Offload));
    assert_eq!(p0.architecture.as_deref(), Some("BlueField-3"));
    assert_eq!(p0.extra["role"], "network");
    assert_eq!(p0.driver.as_deref(), Some("mlx5_core"));
    assert_eq!(p0.numa_node, Some(1));
    assert!(p0.available);
    let mgmt = r.device("pci:0000:ca:00.2").unwrap();
    assert_eq!(mgmt.name, "NVIDIA BlueField-3 SoC management interface");
    assert_eq!(mgmt.extra["role"], "management");
    assert!(!mgmt.available);
    assert!(r.device("pci:0000:4b:00.0").is_none());
    assert_eq!(r.summary.accelerator_count, 0);
}

#[test]
fn bluefield_nic_on_another_driver() {
    let root = tempfile::tempdir().unwrap();
    FakePci {
        vendor: "15b3",
        device: "a2d6",
        class: "020000",
        driver: Some("vfio-pci"),
        numa: None,
        link: false,
    }
    .write(root.path(), "0000:03:00.0");
    let r = run(root.path());
    let d = r.device("pci:0000:03:00.0").unwrap();
    assert_eq!(d.architecture.as_deref(), Some("BlueField-2"));
    assert!(!d.available);
    assert!(
        d.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("vfio-pci")
    );
}
