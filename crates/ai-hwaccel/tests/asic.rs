//! AI ASIC backend: fake roots with Tenstorrent's PCI ids (tt-kmd
//! `enumerate.h`) and the class attributes tt-kmd documents
//! (`docs/sysfs-attributes.md`, `telemetry.c`), garbled attributes, and the
//! PCI ids of other AI ASIC vendors (pci.ids).
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
    detect_fake(root, bin.path(), &[], &[BackendId::Asic, BackendId::Pci])
}

fn tt(device: &'static str, driver: Option<&'static str>) -> FakePci<'static> {
    FakePci {
        vendor: "1e52",
        device,
        class: "120000",
        driver,
        numa: Some(1),
        link: true,
    }
}

/// `/sys/class/tenstorrent/tenstorrent!<n>` linked to the PCI function at
/// `addr`, with attribute files, and `/dev/tenstorrent/<n>`.
fn tt_class(root: &Path, n: u32, addr: &str, files: &[(&str, &str)]) {
    let dir = root.join(format!("sys/class/tenstorrent/tenstorrent!{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../devices/pci0000:00/{addr}"),
        dir.join("device"),
    )
    .unwrap();
    for (f, v) in files {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    std::fs::create_dir_all(root.join("dev/tenstorrent")).unwrap();
    std::fs::write(root.join(format!("dev/tenstorrent/{n}")), "").unwrap();
}

#[test]
fn wormhole_n300_with_tt_kmd_attributes() {
    let root = tempfile::tempdir().unwrap();
    let addr = "0000:3b:00.0";
    tt("401e", Some("tenstorrent")).write(root.path(), addr);
    tt_class(
        root.path(),
        0,
        addr,
        &[
            ("tt_card_type", "n300"),
            ("tt_serial", "0000046131925001"),
            ("tt_asic_id", "5A3C00E1B2C3D4E5"),
            ("tt_aiclk", "1000"),
            ("tt_axiclk", "900"),
            ("tt_arcclk", "540"),
            ("tt_fw_bundle_ver", "80.15.0.0"),
            ("tt_arc_fw_ver", "2.32.0.0"),
            ("tt_eth_fw_ver", "6.14.0"),
        ],
    );
    let r = run(root.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 1, "{:?}", r.devices);
    let d = r.device("pci:0000:3b:00.0").unwrap();
    assert_eq!(d.name, "Tenstorrent Wormhole n300");
    assert_eq!(
        (d.vendor.as_str(), d.family),
        ("tenstorrent", Family::AiAsic)
    );
    assert_eq!(d.architecture.as_deref(), Some("Wormhole"));
    assert_eq!(d.serial.as_deref(), Some("0000046131925001"));
    assert_eq!(d.firmware_version.as_deref(), Some("80.15.0.0"));
    assert_eq!(d.index, Some(0));
    assert_eq!(d.numa_node, Some(1));
    assert_eq!(d.driver.as_deref(), Some("tenstorrent"));
    assert_eq!(d.source, "tenstorrent-sysfs+pci-sysfs");
    assert!(d.available);
    assert_eq!(
        d.memory_bytes, None,
        "no file says how much memory the card has"
    );
    assert_eq!(d.extra["card_type"], "n300");
    assert_eq!(d.extra["aiclk_mhz"], "1000");
    assert_eq!(d.extra["arcclk_mhz"], "540");
    assert_eq!(d.extra["arc_fw_ver"], "2.32.0.0");
    assert_eq!(d.extra["eth_fw_ver"], "6.14.0");
    assert_eq!(d.extra["asic_id"], "5A3C00E1B2C3D4E5");
    assert_eq!(d.extra["device_path"], "/dev/tenstorrent/0");
    let link = d.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(link.current_speed_gts, Some(16.0));
    // The card type tells an n300 from an n150 (same PCI id).
    assert_eq!(
        d.spec.as_ref().map(|s| s.id.as_str()),
        Some("wormhole-n300")
    );
}

#[test]
fn blackhole_p150a_and_a_card_without_driver() {
    let root = tempfile::tempdir().unwrap();
    tt("b140", Some("tenstorrent")).write(root.path(), "0000:41:00.0");
    tt_class(root.path(), 1, "0000:41:00.0", &[("tt_card_type", "p150a")]);
    tt("b140", None).write(root.path(), "0000:c1:00.0");
    let r = run(root.path());
    assert_eq!(r.devices.len(), 2);
    let a = r.device("pci:0000:41:00.0").unwrap();
    assert_eq!(a.name, "Tenstorrent Blackhole p150a");
    assert_eq!(
        a.spec.as_ref().map(|s| s.id.as_str()),
        Some("blackhole-p150")
    );
    let b = r.device("pci:0000:c1:00.0").unwrap();
    assert_eq!(b.name, "Tenstorrent Blackhole");
    assert_eq!(b.architecture.as_deref(), Some("Blackhole"));
    assert!(!b.available);
    assert_eq!(
        b.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    assert_eq!(b.spec, None, "a bare chip name does not pick a board");
    assert_eq!(r.summary.accelerator_count, 1);
}

#[test]
fn garbled_attributes_are_warnings() {
    let root = tempfile::tempdir().unwrap();
    tt("401e", Some("tenstorrent")).write(root.path(), "0000:3b:00.0");
    tt_class(
        root.path(),
        0,
        "0000:3b:00.0",
        &[
            ("tt_card_type", "unknown"),
            ("tt_serial", "not hex!"),
            ("tt_aiclk", "fast"),
            ("tt_fw_bundle_ver", "80..0"),
        ],
    );
    let r = run(root.path());
    let d = r.device("pci:0000:3b:00.0").unwrap();
    assert_eq!(
        d.name, "Tenstorrent Wormhole",
        "tt-kmd's 'unknown' card type names nothing"
    );
    assert_eq!(d.serial, None);
    assert_eq!(d.firmware_version, None);
    assert!(!d.extra.contains_key("aiclk_mhz"));
    let msgs: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    for f in ["tt_serial", "tt_aiclk", "tt_fw_bundle_ver"] {
        assert!(msgs.iter().any(|m| m.contains(f)), "{f}: {msgs:?}");
    }
}

#[test]
fn class_device_without_pci_function() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sys/class/tenstorrent/tenstorrent!2");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tt_card_type"), "n150\n").unwrap();
    let r = run(root.path());
    assert_eq!(r.devices.len(), 1);
    let d = &r.devices[0];
    assert_eq!(d.id, "tenstorrent:2");
    assert_eq!(d.name, "Tenstorrent Wormhole n150");
    assert_eq!(d.architecture.as_deref(), Some("Wormhole"));
    assert!(d.available);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("no PCI address"))
    );
}

#[test]
fn other_vendors_by_pci_id() {
    let root = tempfile::tempdir().unwrap();
    FakePci {
        vendor: "1de0",
        device: "0000",
        class: "120000",
        driver: None,
        numa: Some(0),
        link: false,
    }
    .write(root.path(), "0000:05:00.0");
    FakePci {
        vendor: "1d95",
        device: "0001",
        class: "120000",
        driver: Some("ipu"),
        numa: Some(0),
        link: false,
    }
    .write(root.path(), "0000:06:00.0");
    let r = run(root.path());
    assert_eq!(r.devices.len(), 2);
    let groq = r.device("pci:0000:05:00.0").unwrap();
    assert_eq!(groq.name, "Groq GroqChip");
    assert_eq!(groq.vendor, "groq");
    assert_eq!(groq.architecture.as_deref(), Some("GroqChip"));
    assert!(!groq.available);
    let gc = r.device("pci:0000:06:00.0").unwrap();
    assert_eq!(gc.name, "Graphcore Colossus GC2 (C2)");
    assert_eq!(gc.vendor, "graphcore");
    assert!(gc.available, "any non-passthrough driver counts");
}

#[test]
fn nothing_to_report() {
    let root = tempfile::tempdir().unwrap();
    let r = run(root.path());
    assert!(r.devices.is_empty());
    assert!(r.warnings.is_empty());
}
