//! Intel GPU backend tests: the xpu-smi JSON fixture through the `parse`
//! format, and end-to-end detection over a fake root (integrated + discrete
//! GPU, xe tile memory files, a fake `xpu-smi` printing the fixture).
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::FakePci;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::format;
use ai_hwaccel::probe::ProbeOptions;
use ai_hwaccel::{BackendSet, DetectOptions, Registry, detect};

const JSON: &str = "xpu-smi/xpumanager-doc__discovery-j__pvc-0x020a.json";

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

#[test]
fn xpu_smi_json_fixture() {
    let out = (format("xpu-smi-json").unwrap().parse)(&std::fs::read(fixture(JSON)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.id, "pci:0000:4d:00.0");
    assert_eq!(d.name, "Intel(R) Graphics [0x020a]");
    assert_eq!(d.vendor, "intel");
    assert_eq!(d.index, Some(0));
    assert_eq!(
        d.uuid.as_deref(),
        Some("00000000-0000-0000-0000-020a00008086")
    );
    assert_eq!(d.memory_bytes, None, "discovery -j has no memory");
}

/// `xpu-smi discovery -d N` tables: the serial (`unknown` is none), the
/// GFX firmware's version (`Firmware Name: GFX` then `Firmware Version` in
/// these older tables), `ECC State` and `Number of EUs` (kept in extra).
#[test]
fn xpu_smi_discovery_table_details() {
    let parse =
        |rel: &str| (format("xpu-smi-text").unwrap().parse)(&std::fs::read(fixture(rel)).unwrap());
    let out = parse("xpu-smi/xpumanager-doc__discovery-d__pvc-0x020a-32768mib.txt");
    let d = &out.devices[0];
    assert_eq!(d.serial, None, "Serial Number: unknown");
    assert_eq!(d.firmware_version.as_deref(), Some("ATS0_1.1"));
    assert_eq!(d.ecc_enabled, Some(true));
    assert_eq!(d.extra["eu_count"], "512");
    // The Windows guide's Flex 170: two firmware pairs, GFX first.
    let out = parse("xpu-smi/xpumanager-win-guide__discovery-d__flex-170-14336mib.txt");
    let d = &out.devices[0];
    assert_eq!(d.firmware_version.as_deref(), Some("DG02_1.3185"));
    assert_eq!(d.extra["eu_count"], "512");
}

proptest::proptest! {
    #[test]
    fn corrupted_json_never_panics(cut in 0usize..600, flip in 0usize..600, byte in proptest::num::u8::ANY) {
        let b = support::damaged(std::fs::read(fixture(JSON)).unwrap(), cut, flip, byte);
        let _ = (format("xpu-smi-json").unwrap().parse)(&b);
    }
}

fn mkpci(root: &Path, addr: &str, device: &str, class: &str, driver: &str, numa: i32) -> PathBuf {
    let vendor = "8086";
    FakePci {
        vendor,
        device,
        class,
        driver: Some(driver),
        numa: Some(numa),
        link: false,
    }
    .write(root, addr)
}

fn drm_card(root: &Path, card: &str, addr: &str) {
    let c = root.join("sys/class/drm").join(card);
    std::fs::create_dir_all(&c).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../devices/pci0000:00/{addr}"),
        c.join("device"),
    )
    .unwrap();
}

fn fake_xpu_smi(root: &Path) {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let p = bin.join("xpu-smi");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\ncat '{}'\n",
            bin.join("ran").display(),
            fixture(JSON).display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run(root: &Path) -> Registry {
    let opts = ProbeOptions {
        root: root.to_path_buf(),
        tool_path: Some(vec![root.join("bin")]),
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    };
    detect(
        &opts,
        &DetectOptions {
            backends: BackendSet::parse("intel,pci").unwrap(),
            families: None,
        },
    )
}

#[test]
fn integrated_and_discrete_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    mkpci(root, "0000:00:02.0", "a780", "030000", "i915", 0);
    drm_card(root, "card0", "0000:00:02.0");
    let pvc = mkpci(root, "0000:4d:00.0", "020a", "038000", "xe", 1);
    drm_card(root, "card1", "0000:4d:00.0");
    // xe's per-tile VRAM files (drivers/gpu/drm/xe/xe_tile_sysfs.c), 2 tiles of 16 GiB.
    for tile in ["tile0", "tile1"] {
        std::fs::create_dir_all(pvc.join(tile)).unwrap();
        std::fs::write(
            pvc.join(tile).join("physical_vram_size_bytes"),
            "17179869184\n",
        )
        .unwrap();
    }
    fake_xpu_smi(root);
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(root.join("proc/meminfo"), "MemTotal:       32653488 kB\n").unwrap();
    let r = run(root);
    assert_eq!(
        std::fs::read_to_string(root.join("bin/ran"))
            .unwrap()
            .trim(),
        "discovery -j"
    );
    let parsed = (format("xpu-smi-json").unwrap().parse)(&std::fs::read(fixture(JSON)).unwrap());

    let igpu = r.device("pci:0000:00:02.0").unwrap();
    assert_eq!(igpu.extra["integrated"], "true");
    assert_eq!(
        igpu.memory_bytes, None,
        "its share of the host's memory is unknown"
    );
    let shared = igpu.shared_memory.as_ref().expect("marked shared");
    assert_eq!(shared.pool_bytes, Some(32_653_488 * 1024), "MemTotal");
    assert_eq!(shared.device_limit_bytes, None);
    assert!(
        shared
            .source
            .starts_with("pool: /proc/meminfo MemTotal; GPU limit: unknown")
    );
    assert_eq!(igpu.driver.as_deref(), Some("i915"));
    assert_eq!(igpu.numa_node, Some(0));
    assert_eq!(igpu.source, "i915-sysfs+pci-sysfs");
    assert_eq!(igpu.name, "Intel GPU [8086:a780]");

    let d = r.device("pci:0000:4d:00.0").unwrap();
    let p = &parsed.devices[0];
    assert_eq!(d.name, p.name);
    assert_eq!(d.uuid, p.uuid);
    assert_eq!(d.extra["integrated"], "false");
    assert_eq!(d.shared_memory, None, "local memory");
    assert_eq!(d.extra["tiles"], "2");
    assert_eq!(d.memory_bytes, Some(32 << 30));
    assert_eq!(d.numa_node, Some(1), "from PCI sysfs");
    assert_eq!(d.source, "xe-sysfs+xpu-smi+pci-sysfs");
    assert_eq!(r.devices.iter().filter(|d| d.vendor == "intel").count(), 2);
}

#[test]
fn no_intel_gpu_runs_no_tool() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    // An Intel NPU (class 0x12) is not a display device.
    let d = root.join("sys/devices/pci0000:00/0000:00:0b.0");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("vendor"), "0x8086\n").unwrap();
    std::fs::write(d.join("device"), "0x7d1d\n").unwrap();
    std::fs::write(d.join("class"), "0x120000\n").unwrap();
    std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:00:0b.0",
        root.join("sys/bus/pci/devices/0000:00:0b.0"),
    )
    .unwrap();
    fake_xpu_smi(root);
    let r = run(root);
    assert!(!root.join("bin/ran").exists());
    assert!(
        r.devices
            .iter()
            .all(|d| d.family != ai_hwaccel::Family::Gpu)
    );
}
