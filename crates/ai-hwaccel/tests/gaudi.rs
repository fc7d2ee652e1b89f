//! Gaudi backend: the real hl-smi table capture, a header-driven CSV derived
//! from it, fake-root/fake-tool end-to-end runs with real PCI ids, and
//! corrupted inputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{detect_fake, fixture, write_script};

use std::path::Path;

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

const TABLE: &str = "hl-smi/intel-openshift-doc__hl-smi__2x-gaudi2-hl225__1.17.1.txt";
const MIB: u64 = 1_048_576;

fn parse(name: &str, bytes: &[u8]) -> ParseOutput {
    (format(name).expect("format registered").parse)(bytes)
}

/// No real CSV capture is published; this is the CSV hl-smi prints for the
/// query this backend runs, filled with the table fixture's values (module
/// ids and serials are made up: the table does not show them).
const CSV: &str = "index, module_id, bus_id, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], driver_version, serial, uuid\n\
0, 2, 0000:4d:00.0, HL-225, 98304 MiB, 768 MiB, 97536 MiB, 1.17.1-78932ae, AM00000001, 01-00000001\n\
1, 5, 0000:b4:00.0, HL-225, 98304 MiB, 768 MiB, 97536 MiB, 1.17.1-78932ae, AM00000002, 01-00000002\n";

#[test]
fn table_capture_values() {
    let out = parse("hl-smi", &std::fs::read(fixture(TABLE)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    let (a, b) = (&out.devices[0], &out.devices[1]);
    assert_eq!(a.id, "pci:0000:4d:00.0");
    assert_eq!(b.id, "pci:0000:b4:00.0");
    assert_eq!((a.index, b.index), (Some(0), Some(1)));
    assert_eq!(a.name, "Intel Gaudi2 (HL-225)");
    assert_eq!((a.vendor.as_str(), a.family), ("habana", Family::AiAsic));
    assert_eq!(a.architecture.as_deref(), Some("Gaudi2"));
    assert_eq!(a.memory_bytes, Some(98_304 * MIB));
    assert_eq!(a.memory_free_bytes, Some((98_304 - 768) * MIB));
    assert_eq!(a.temperature_celsius, Some(31.0));
    assert_eq!(b.temperature_celsius, Some(28.0));
    assert_eq!(a.power_limit_watts, Some(600.0));
    assert_eq!(a.ecc_uncorrected_errors, Some(0));
    assert_eq!(a.driver_version.as_deref(), Some("1.17.1-78932ae"));
    assert_eq!(a.firmware_version.as_deref(), Some("51.5.0"));
}

#[test]
fn csv_columns_by_header_name() {
    let out = parse("hl-smi-csv", CSV.as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    let d = &out.devices[1];
    assert_eq!(d.id, "pci:0000:b4:00.0");
    assert_eq!(d.memory_bytes, Some(98_304 * MIB));
    assert_eq!(d.memory_free_bytes, Some(97_536 * MIB));
    assert_eq!(d.serial.as_deref(), Some("AM00000002"));
    assert_eq!(d.extra["module_id"], "5");

    // Reordered columns, no units: still by name.
    let csv = "bus_id, memory.total [MiB], index\n0000:4d:00.0, 98304, 0\n";
    let out = parse("hl-smi-csv", csv.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, Some(98_304 * MIB));
    assert_eq!(out.devices[0].index, Some(0));
    // A row with the wrong number of fields is a warning, not a device.
    let out = parse("hl-smi-csv", b"index, bus_id\n0, 0000:4d:00.0, extra\n");
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
}

// ---- fake root + fake tool ------------------------------------------------

/// Two Gaudi2 functions (1da3:1020, pci.ids) bound to habanalabs, with the
/// accel class entries the driver creates.
fn gaudi_root(root: &Path) {
    for (i, addr) in ["0000:4d:00.0", "0000:b4:00.0"].iter().enumerate() {
        let dir = root.join("sys/bus/pci/devices").join(addr);
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in [
            ("vendor", "0x1da3"),
            ("device", "0x1020"),
            ("class", "0x120000"),
            ("numa_node", "0"),
        ] {
            std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
        }
        std::os::unix::fs::symlink("../../../bus/pci/drivers/habanalabs", dir.join("driver"))
            .unwrap();
        let acc = root.join(format!("sys/class/accel/accel{i}/device"));
        std::fs::create_dir_all(&acc).unwrap();
        std::os::unix::fs::symlink("../../../../bus/pci/drivers/habanalabs", acc.join("driver"))
            .unwrap();
        for (f, v) in [
            ("pci_addr", *addr),
            ("device_type", "GAUDI2"),
            ("status", if i == 0 { "operational" } else { "in reset" }),
            ("module_id", if i == 0 { "2" } else { "5" }),
            ("max_power", "600000"),
        ] {
            std::fs::write(acc.join(f), format!("{v}\n")).unwrap();
        }
    }
}

fn run(root: &Path, bin: &Path, env: &[(&str, &str)]) -> Registry {
    detect_fake(root, bin, env, &[BackendId::Gaudi, BackendId::Pci])
}

#[test]
fn csv_tool_plus_sysfs_end_to_end() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    gaudi_root(root.path());
    let csv = bin.path().join("out.csv");
    std::fs::write(&csv, CSV).unwrap();
    write_script(
        bin.path(),
        "hl-smi",
        &format!(
            "[ \"$1\" = -Q ] && [ \"$4\" = csv ] && cat '{}'\n",
            csv.display()
        ),
    );
    let r = run(
        root.path(),
        bin.path(),
        &[("HABANA_VISIBLE_DEVICES", "2,5")],
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(
        r.devices.len(),
        2,
        "hl-smi and PCI views merged: {:?}",
        r.devices
    );
    let a = r.device("pci:0000:4d:00.0").unwrap();
    assert_eq!(a.name, "Intel Gaudi2 (HL-225)", "PCI table name plus board");
    assert_eq!(a.memory_bytes, Some(98_304 * MIB));
    assert_eq!(a.numa_node, Some(0));
    assert_eq!(a.source, "hl-smi+pci-sysfs");
    assert_eq!(a.power_limit_watts, Some(600.0), "sysfs max_power is in mW");
    assert!(a.available);
    let b = r.device("pci:0000:b4:00.0").unwrap();
    assert!(!b.available);
    assert_eq!(
        b.unavailable_reason.as_deref(),
        Some("habanalabs status: in reset")
    );
    assert_eq!(r.summary.accelerator_count, 1);
}

#[test]
fn table_fallback_and_visible_devices() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    gaudi_root(root.path());
    write_script(
        bin.path(),
        "hl-smi",
        &format!(
            "[ \"$1\" = -Q ] && exit 3\ncat '{}'\n",
            fixture(TABLE).display()
        ),
    );
    // Only module 2 (the device at 4d:00.0) is visible.
    let r = run(root.path(), bin.path(), &[("HABANA_VISIBLE_DEVICES", "2")]);
    assert_eq!(r.devices.len(), 2);
    let a = r.device("pci:0000:4d:00.0").unwrap();
    assert_eq!(a.temperature_celsius, Some(31.0), "from the table");
    assert!(a.available);
    let b = r.device("pci:0000:b4:00.0").unwrap();
    assert!(!b.available);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("exited with 3"))
    );
}

#[test]
fn no_gaudi_hardware_means_no_tool_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "hl-smi",
        &format!("touch '{}'\n", marker.display()),
    );
    let r = run(root.path(), bin.path(), &[]);
    assert!(r.devices.is_empty());
    assert!(
        !marker.exists(),
        "hl-smi must not run without Gaudi hardware"
    );
}

#[test]
fn pci_only_without_tool_or_driver() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let dir = root.path().join("sys/bus/pci/devices/0000:19:00.0");
    std::fs::create_dir_all(&dir).unwrap();
    for (f, v) in [
        ("vendor", "0x1da3"),
        ("device", "0x1020"),
        ("class", "0x120000"),
    ] {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    let r = run(root.path(), bin.path(), &[]);
    let d = r.device("pci:0000:19:00.0").unwrap();
    assert_eq!(d.name, "Intel Gaudi2");
    assert!(!d.available);
    assert_eq!(
        d.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    assert_eq!(d.memory_bytes, None, "unknown, never 0");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..1600, flip in 0usize..1600, byte in 0u8..=255) {
        for (name, text) in [("hl-smi", std::fs::read(fixture(TABLE)).unwrap()), ("hl-smi-csv", CSV.as_bytes().to_vec())] {
            let b = support::damaged(text, cut, flip, byte);
            let _ = parse(name, &b);
        }
    }
}
