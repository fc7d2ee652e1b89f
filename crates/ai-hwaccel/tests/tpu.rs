//! TPU backend: every tpu-info capture, fake-root / fake-tool end-to-end runs
//! with real PCI ids and the TPU environment, and corrupted inputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{detect_fake, write_script};

use std::path::{Path, PathBuf};

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

const PLAIN: &str = "cloud-accelerator-diagnostics-readme__tpu-info__v6e-4chips.txt";
const METRIC: &str = "cloud-accelerator-diagnostics-readme__tpu-info-metric-duty-hbm__8chips.txt";
const PROCESS: &str = "cloud-accelerator-diagnostics-readme__tpu-info-process__8chips.txt";
const VERSION: &str = "cloud-accelerator-diagnostics-readme__tpu-info-version__v6e.txt";

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tpu-info")
        .join(rel)
}

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("tpu-info").expect("format registered").parse)(bytes)
}

fn parse_file(rel: &str) -> ParseOutput {
    parse(&std::fs::read(fixture(rel)).unwrap())
}

/// 31.25 GiB exactly.
const HBM: u64 = 33_554_432_000;
const GIB: f64 = 1_073_741_824.0;

#[test]
fn plain_view_values() {
    let out = parse_file(PLAIN);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 4);
    for (i, d) in out.devices.iter().enumerate() {
        assert_eq!(d.id, format!("tpu:{i}"));
        assert_eq!(d.name, "Google TPU v6e");
        assert_eq!((d.vendor.as_str(), d.family), ("google", Family::Tpu));
        assert_eq!(d.compute_units, Some(1), "Devices column");
        assert_eq!(d.memory_bytes, Some(HBM));
        assert_eq!(d.extra["device_path"], format!("/dev/vfio/{i}"));
        assert_eq!(d.extra["libtpu_version"], "0.0.19.dev20250721+nightly");
        assert_eq!(d.extra["accelerator_type"], "v6e");
    }
    let used0 = (18.45 * GIB).round() as u64;
    assert_eq!(out.devices[0].memory_free_bytes, Some(HBM - used0));
    // `Duty cycle` column of the `Chip` table.
    assert!(
        out.devices
            .iter()
            .all(|d| d.utilization_percent == Some(100.0))
    );
}

#[test]
fn metric_process_and_version_views() {
    let m = parse_file(METRIC);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(
        m.devices.len(),
        8,
        "chips of the HBM table; cores are not chips"
    );
    assert!(m.devices.iter().all(|d| d.memory_bytes == Some(HBM)));
    let used0 = (29.50 * GIB).round() as u64;
    assert_eq!(m.devices[0].memory_free_bytes, Some(HBM - used0));
    // The `Core ID` duty table: 8 cores on 8 chips, so one core per chip.
    assert!(
        m.devices
            .iter()
            .all(|d| d.utilization_percent == Some(100.0))
    );

    let p = parse_file(PROCESS);
    assert_eq!(p.devices.len(), 8);
    assert_eq!(p.devices[7].extra["device_path"], "/dev/vfio/7");
    assert_eq!(p.devices[7].memory_bytes, None);

    let v = parse_file(VERSION);
    assert!(v.devices.is_empty(), "the version view lists no chips");
    assert_eq!(v.warnings, ["no TPU chip rows found"]);
}

// ---- fake root + fake tool ------------------------------------------------

fn tpu_pci(root: &Path, addr: &str, device: &str) {
    let dir = root.join("sys/bus/pci/devices").join(addr);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, v) in [
        ("vendor", "0x1ae0"),
        ("device", device),
        ("class", "0x120000"),
    ] {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", dir.join("driver")).unwrap();
}

fn run(root: &Path, bin: &Path, env: &[(&str, &str)]) -> Registry {
    detect_fake(root, bin, env, &[BackendId::Tpu, BackendId::Pci])
}

#[test]
fn v6e_host_end_to_end() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    for a in [
        "0000:00:04.0",
        "0000:00:05.0",
        "0000:00:06.0",
        "0000:00:07.0",
    ] {
        tpu_pci(root.path(), a, "0x006f");
    }
    write_script(
        bin.path(),
        "tpu-info",
        &format!("cat '{}'\n", fixture(PLAIN).display()),
    );
    let r = run(
        root.path(),
        bin.path(),
        &[("TPU_ACCELERATOR_TYPE", "v6e-4")],
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 4, "{:?}", r.devices);
    let d = r.device("pci:0000:00:05.0").unwrap();
    assert_eq!(d.name, "Google TPU v6e");
    assert_eq!(d.index, Some(1));
    assert_eq!(d.memory_bytes, Some(HBM));
    assert!(d.available, "vfio-pci is how v5e and later TPUs are used");
    assert_eq!(d.source, "tpu-info+pci-sysfs");
    assert_eq!(d.extra["tpu_accelerator_type"], "v6e-4");
    assert_eq!(r.summary.accelerator_count, 4);
    assert_eq!(r.summary.accelerator_memory_bytes, Some(4 * HBM));
}

#[test]
fn v4_from_dev_nodes_and_environment_without_tool() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("dev")).unwrap();
    for i in 0..4 {
        std::fs::write(root.path().join(format!("dev/accel{i}")), "").unwrap();
    }
    let r = run(
        root.path(),
        bin.path(),
        &[("TPU_ACCELERATOR_TYPE", "v4-8"), ("TPU_TOPOLOGY", "2x2x1")],
    );
    assert_eq!(r.devices.len(), 4);
    // The host's chips are one ICI domain of their slice; the topology says which slice.
    let t = ai_hwaccel::topology::Topology::from_registry(&r);
    assert_eq!(t.domain_types, ["ici"]);
    assert_eq!(t.domains[0].len(), 4);
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("v4-8") && n.contains("2x2x1")),
        "{:?}",
        t.notes
    );
    let d = r.device("tpu:3").unwrap();
    assert_eq!(d.name, "Google TPU v4");
    assert_eq!(d.memory_bytes, None, "unknown without tpu-info");
    assert_eq!(d.source, "tpu-env");
}

#[test]
fn pci_generation_without_tool() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    tpu_pci(root.path(), "0000:00:04.0", "0x0062");
    let r = run(root.path(), bin.path(), &[]);
    let d = r.device("pci:0000:00:04.0").unwrap();
    assert_eq!(d.name, "Google TPU v5p");
    assert_eq!(d.family, Family::Tpu);
}

#[test]
fn no_tpu_evidence_means_no_tool_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // A VFIO group of some other passthrough device is not TPU evidence.
    std::fs::create_dir_all(root.path().join("dev/vfio")).unwrap();
    std::fs::write(root.path().join("dev/vfio/0"), "").unwrap();
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "tpu-info",
        &format!("touch '{}'\n", marker.display()),
    );
    let r = run(root.path(), bin.path(), &[]);
    assert!(r.devices.is_empty());
    assert!(!marker.exists());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..2400, flip in 0usize..2400, byte in 0u8..=255) {
        for f in [PLAIN, METRIC, PROCESS, VERSION] {
            let b = support::damaged(std::fs::read(fixture(f)).unwrap(), cut, flip, byte);
            let _ = parse(&b);
        }
    }
}

#[test]
fn duty_cycle_rows_attributed_only_when_one_core_per_chip() {
    // The box-drawn 2024 view: `Device` rows with `Cores` 1 → per chip.
    let b = parse_file(
        "cloud-accelerator-diagnostics-readme-2024-09__tpu-info-box-tables__v4-4chips.txt",
    );
    assert!(
        b.devices.iter().all(|d| d.utilization_percent == Some(0.0)),
        "{:?}",
        b.devices
    );
    // The metric view with one core row fewer than chips: not attributable.
    let text = std::fs::read_to_string(fixture(METRIC)).unwrap();
    let fewer = text.replacen("| 7       | 100.00%        |\n", "", 1);
    assert_ne!(fewer, text);
    let f = parse(fewer.as_bytes());
    assert!(f.devices.iter().all(|d| d.utilization_percent.is_none()));
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    // A value that is not a percentage is a warning, never a number.
    let bad = std::fs::read_to_string(fixture(PLAIN)).unwrap().replacen(
        "|    100.00% |",
        "|    250.00% |",
        1,
    );
    let o = parse(bad.as_bytes());
    assert_eq!(o.devices[0].utilization_percent, None);
    assert_eq!(o.devices[1].utilization_percent, Some(100.0));
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("duty cycle \"250.00%\"")),
        "{:?}",
        o.warnings
    );
}
