//! Apple backend: real `system_profiler SPDisplaysDataType -json` captures
//! (headless M3 Max, M1 Pro with three displays), real `SPHardwareDataType`
//! captures (M1 16 GB, M5 Max 128 GB, a macOS 26 runner VM; without a chip:
//! an Intel iMac Pro, the macOS 15 Intel runner, an M1 under Rosetta), the
//! two runners' real `sysctl` outputs, four Macs' full `sysctl hw` outputs
//! (M1, M2, a 128 GiB M3, M4 Pro), corrupted copies, fake macOS machines (no
//! `/proc`, fake system_profiler and sysctl printing the captures) and a
//! fake Asahi Linux root (device-tree `compatible`, an `asahi` DRM card,
//! `/proc/meminfo`).
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

const M3MAX: &str = "system-profiler-json/joulewise-test__apple-m3-max-40core-gpu__headless.json";
const M1PRO: &str = "system-profiler-json/tirekick__apple-m1-pro-14core-gpu__3-displays.json";
const M1PRO_16: &str =
    "system-profiler-json/btt-mock__apple-m1-pro-16core-gpu__dell-builtin-sidecar.json";
const HW_M5MAX: &str = "system-profiler-hardware-json/tirekick__apple-m5-max-128gb.json";
const HW_M1: &str = "system-profiler-hardware-json/tirekick__apple-m1-16gb.json";
const HW_RUNNER: &str =
    "system-profiler-hardware-json/tirekick__macos-26-runner__apple-m1-virtual-7gb.json";
const SYSCTL_RUNNER: &str = "sysctl/tirekick__macos-26-runner__apple-m1-virtual.txt";
const HW_ROSETTA: &str = "system-profiler-hardware-json/tirekick__apple-m1-under-rosetta-16gb.json";
const HW_IMAC_PRO: &str = "system-profiler-hardware-json/tirekick__intel-imac-pro-xeon-w-32gb.json";
const HW_INTEL_RUNNER: &str =
    "system-profiler-hardware-json/tirekick__macos-15-intel-runner__macmini6-2-14gb.json";
const SYSCTL_INTEL_RUNNER: &str = "sysctl/tirekick__macos-15-intel-runner__i7-8700b.txt";
const HW_M4MAX: &str =
    "system-profiler-hardware-json/cnquery-test__apple-m4-max-macbook-pro-48gb.json";
const HW_M4MAX_VM: &str =
    "system-profiler-hardware-json/cnquery-test__apple-m4-max-virtual-vm-4gb.json";
const HW_ANKA_ROSETTA: &str =
    "system-profiler-hardware-json/anka-docs__vm-under-rosetta__chip-type-unknown-14gb.json";
const GIB: u64 = 1 << 30;

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("system-profiler-json")
        .expect("format registered")
        .parse)(bytes)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

fn spec_id(d: &ai_hwaccel::Device) -> Option<&'static str> {
    ai_hwaccel::spec::match_device(d).map(|e| e.id.as_str())
}

#[test]
fn m3_max_capture() {
    let out = parse(read(M3MAX).as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2, "GPU and Neural Engine");
    let gpu = &out.devices[0];
    assert_eq!(gpu.id, "apple:gpu");
    assert_eq!(gpu.name, "Apple M3 Max GPU");
    assert_eq!((gpu.vendor.as_str(), gpu.family), ("apple", Family::Gpu));
    assert_eq!(gpu.compute_units, Some(40), "sppci_cores");
    assert_eq!(
        gpu.memory_bytes, None,
        "SPDisplaysDataType alone has no memory size: it comes from sysctl or SPHardwareDataType"
    );
    assert_eq!(gpu.extra["integrated"], "true");
    let shared = gpu.shared_memory.as_ref().expect("marked shared");
    assert_eq!((shared.pool_bytes, shared.device_limit_bytes), (None, None));
    assert!(
        shared.source.starts_with("pool: unknown"),
        "{}",
        shared.source
    );
    assert_eq!(gpu.extra["metal_support"], "supported");
    assert_eq!(spec_id(gpu), Some("m3-max-gpu"));
    let ane = &out.devices[1];
    assert_eq!(ane.name, "Apple M3 Max Neural Engine");
    assert_eq!(ane.family, Family::Npu);
    assert_eq!(ane.compute_units, Some(16), "from the m3-ane spec entry");
    assert_eq!(ane.extra["compute_units_from"], "spec:m3-ane");
    assert_eq!(ane.memory_bytes, None, "shares the GPU's unified pool");
    assert!(ane.shared_memory.is_some());
    assert_eq!(spec_id(ane), Some("m3-ane"));
}

#[test]
fn m1_pro_capture_with_displays() {
    let out = parse(read(M1PRO).as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let gpu = &out.devices[0];
    assert_eq!(gpu.name, "Apple M1 Pro GPU");
    assert_eq!(gpu.compute_units, Some(14), "sppci_cores");
    assert_eq!(gpu.extra["metal_support"], "mtlgpufamilyapple7");
    assert_eq!(out.devices[1].name, "Apple M1 Pro Neural Engine");
}

#[test]
fn m1_pro_16_core_capture_with_a_sidecar_display() {
    // The 16-core M1 Pro, with `_spdisplays_airplay` on the GPU and a Sidecar
    // iPad (`spdisplays_virtualdevice`) among its displays: the displays are
    // not devices, and the Metal key is the macOS 13+ `mtlgpufamilysupport`.
    let out = parse(read(M1PRO_16).as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2, "GPU and Neural Engine");
    let gpu = &out.devices[0];
    assert_eq!(gpu.name, "Apple M1 Pro GPU");
    assert_eq!(gpu.compute_units, Some(16), "sppci_cores");
    assert_eq!(gpu.extra["metal_support"], "Metal 3");
    assert_eq!(gpu.extra["integrated"], "true");
    assert_eq!(gpu.memory_bytes, None);
    assert_eq!(out.devices[1].name, "Apple M1 Pro Neural Engine");
}

#[test]
fn hardware_overview_gives_the_unified_pool() {
    // SPHardwareDataType alone: the SoC from chip_type, the pool from physical_memory.
    for (rel, chip, gib) in [
        (HW_M5MAX, "Apple M5 Max", 128),
        (HW_M1, "Apple M1", 16),
        (HW_RUNNER, "Apple M1 (Virtual)", 7),
        (HW_M4MAX, "Apple M4 Max", 48),
        (HW_M4MAX_VM, "Apple M4 Max (Virtual)", 4),
    ] {
        let out = parse(read(rel).as_bytes());
        assert!(out.warnings.is_empty(), "{rel}: {:?}", out.warnings);
        assert_eq!(out.devices.len(), 2, "{rel}");
        let gpu = &out.devices[0];
        assert_eq!(gpu.name, format!("{chip} GPU"));
        assert_eq!(
            gpu.compute_units, None,
            "{rel}: no core count without SPDisplaysDataType"
        );
        assert_eq!(gpu.memory_bytes, Some(gib * GIB), "{rel}");
        let shared = gpu.shared_memory.as_ref().unwrap();
        assert_eq!(shared.pool_bytes, Some(gib * GIB));
        assert_eq!(
            shared.device_limit_bytes, None,
            "{rel}: no wired limit known"
        );
        assert!(
            shared
                .source
                .starts_with("pool: system_profiler physical_memory"),
            "{}",
            shared.source
        );
        assert_eq!(
            out.devices[1].memory_bytes, None,
            "the Neural Engine adds nothing"
        );
    }
}

#[test]
fn hardware_overviews_without_an_apple_chip_make_no_soc() {
    // An Intel iMac Pro, the macOS 15 Intel runner VM, and an M1 MacBook Air
    // profiled under Rosetta (`cpu_type: Unknown`, no `chip_type`), and an
    // Anka macOS VM on Apple silicon whose profile ran under Rosetta
    // (`chip_type: Unknown`): no chip is named, so no Apple-silicon GPU or
    // Neural Engine is made up.
    for rel in [HW_IMAC_PRO, HW_INTEL_RUNNER, HW_ROSETTA, HW_ANKA_ROSETTA] {
        let out = parse(read(rel).as_bytes());
        assert!(out.devices.is_empty(), "{rel}: {:?}", out.devices);
        assert_eq!(out.warnings, ["no GPU entries found"], "{rel}");
    }
}

#[test]
fn intel_runner_sysctl_capture() {
    let mut w = Vec::new();
    let f = ai_hwaccel::detect::parse_macos_sysctl(&read(SYSCTL_INTEL_RUNNER), &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(f.memsize_bytes, Some(14 * GIB), "hw.memsize: 15032385536");
    assert_eq!(f.wired_limit_mb, None, "no iogpu key on an Intel Mac");
    assert_eq!(
        f.brand.as_deref(),
        Some("Intel(R) Core(TM) i7-8700B CPU @ 3.20GHz")
    );
}

#[test]
fn sysctl_capture() {
    let mut w = Vec::new();
    let f = ai_hwaccel::detect::parse_macos_sysctl(&read(SYSCTL_RUNNER), &mut w);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(f.memsize_bytes, Some(7_516_192_768));
    assert_eq!(
        f.wired_limit_mb, None,
        "the runner's capture has no iogpu key"
    );
    assert_eq!(f.brand.as_deref(), Some("Apple M1 (Virtual)"));
}

/// Full `sysctl hw` outputs of four Apple silicon Macs (zacky1972's Qiita
/// articles; provenance in SOURCES.md): the `hw.memsize` each prints, read
/// by eye. `sysctl hw` lists no `machdep.` or `iogpu.` key, so the brand and
/// the wired limit stay unknown; `hw.memsize_usable` (a smaller figure on
/// the M3 and M4 Pro) must not be taken for the pool, and the
/// `hw.osenvironment: ` line with an empty value is no warning.
#[test]
fn full_sysctl_hw_captures() {
    for (rel, memsize) in [
        (
            "sysctl/zacky1972-qiita__sysctl-hw__m1-8core-16gb-j313.txt",
            17_179_869_184u64,
        ),
        (
            "sysctl/zacky1972-qiita__sysctl-hw__m2-8core-24gb-j413.txt",
            25_769_803_776,
        ),
        (
            "sysctl/zacky1972-qiita__sysctl-hw__m3-family-16core-128gb-j516c.txt",
            137_438_953_472,
        ),
        (
            "sysctl/zacky1972-qiita__sysctl-hw__m4-pro-14core-64gb-j773s.txt",
            68_719_476_736,
        ),
    ] {
        let mut w = Vec::new();
        let f = ai_hwaccel::detect::parse_macos_sysctl(&read(rel), &mut w);
        assert!(w.is_empty(), "{rel}: {w:?}");
        assert_eq!(f.memsize_bytes, Some(memsize), "{rel}");
        assert_eq!(f.wired_limit_mb, None, "{rel}");
        assert_eq!(f.brand, None, "{rel}");
    }
}

#[test]
fn corrupted_profiles_warn() {
    let text = read(M3MAX);
    let out = parse(&text.as_bytes()[..text.len() / 2]);
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
    let out = parse(text.replace("\"40\"", "\"forty\"").as_bytes());
    assert_eq!(out.devices[0].compute_units, None, "unknown, never 0");
    assert!(out.warnings.iter().any(|w| w.contains("sppci_cores")));
    let out = parse(
        text.replace("sppci_model", "sppci_modle")
            .replace(
                "\"_name\" : \"Apple M3 Max\"",
                "\"_name\" : \"kHW_AppleM3Item\"",
            )
            .as_bytes(),
    );
    assert!(out.devices.is_empty());
    assert!(
        out.warnings.iter().any(|w| w.contains("no sppci_model")),
        "{:?}",
        out.warnings
    );
    let out = parse(br#"{"SPDisplaysDataType": "text"}"#);
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
}

#[test]
fn intel_mac_gpus_are_listed_with_their_own_memory() {
    // Shaped like an Intel Mac's profile (keys as in the capture; values made up).
    let json = r#"{"SPDisplaysDataType" : [
      {"_name" : "kHW_IntelUHDGraphics630Item", "sppci_model" : "Intel UHD Graphics 630",
       "spdisplays_vendor" : "sppci_vendor_intel", "spdisplays_vram_shared" : "1536 MB",
       "sppci_bus" : "spdisplays_builtin"},
      {"_name" : "AMD Radeon Pro 5500M", "sppci_model" : "AMD Radeon Pro 5500M",
       "spdisplays_vendor" : "sppci_vendor_amd", "spdisplays_vram" : "8 GB",
       "spdisplays_device-id" : "0x7340", "spdisplays_mtlgpufamilysupport" : "spdisplays_metal3"}
    ]}"#;
    let out = parse(json.as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2, "no Neural Engine on an Intel Mac");
    let igpu = &out.devices[0];
    assert_eq!(
        (igpu.id.as_str(), igpu.vendor.as_str()),
        ("macos:gpu0", "intel")
    );
    assert_eq!(
        igpu.memory_bytes,
        Some(1536 << 20),
        "spdisplays_vram_shared"
    );
    let shared = igpu.shared_memory.as_ref().unwrap();
    assert_eq!(
        (shared.pool_bytes, shared.device_limit_bytes),
        (None, Some(1536 << 20))
    );
    assert_eq!(igpu.extra["integrated"], "true");
    let dgpu = &out.devices[1];
    assert_eq!(dgpu.vendor, "amd");
    assert_eq!(dgpu.memory_bytes, Some(8 * GIB));
    assert_eq!(dgpu.shared_memory, None, "dedicated VRAM");
    assert_eq!(dgpu.extra["metal_support"], "Metal 3");
}

// ---- fake machines --------------------------------------------------------

fn run(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Apple])
}

/// A fake `system_profiler` that prints `json` for
/// `SPDisplaysDataType SPHardwareDataType -json`, and a fake `sysctl` that
/// prints `sysctl_out` for `hw.memsize iogpu.wired_limit_mb`.
fn fake_mac(bin: &Path, json: &str, sysctl_out: &str) {
    let profile = bin.join("profile.json");
    std::fs::write(&profile, json).unwrap();
    write_script(
        bin,
        "system_profiler",
        &format!(
            "[ \"$1 $2 $3\" = 'SPDisplaysDataType SPHardwareDataType -json' ] && cat '{}'",
            profile.display()
        ),
    );
    let out = bin.join("sysctl.txt");
    std::fs::write(&out, sysctl_out).unwrap();
    write_script(
        bin,
        "sysctl",
        &format!(
            "[ \"$1 $2\" = 'hw.memsize iogpu.wired_limit_mb' ] && cat '{}'",
            out.display()
        ),
    );
}

#[test]
fn macos_runner_hardware_overview_and_sysctl() {
    // The macOS 26 runner's own captures: SPHardwareDataType and sysctl
    // (no iogpu.wired_limit_mb key in its output). A macOS root has no /proc.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    fake_mac(bin.path(), &read(HW_RUNNER), &read(SYSCTL_RUNNER));
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let gpu = r.device("apple:gpu").unwrap();
    assert_eq!(gpu.name, "Apple M1 (Virtual) GPU");
    assert_eq!(gpu.memory_bytes, Some(7_516_192_768), "hw.memsize");
    assert_eq!(gpu.source, "system-profiler+sysctl");
    let shared = gpu.shared_memory.as_ref().unwrap();
    assert_eq!(shared.pool_bytes, Some(7_516_192_768));
    assert_eq!(shared.device_limit_bytes, None);
    assert!(
        shared
            .source
            .starts_with("pool: sysctl hw.memsize; GPU limit: unknown")
    );
    assert_eq!(r.summary.accelerator_count, 2);
    assert_eq!(
        r.summary.accelerator_memory_bytes,
        Some(7_516_192_768),
        "one pool, once"
    );
}

#[test]
fn intel_mac_runner_gets_no_apple_silicon_devices() {
    // The macOS 15 Intel runner's own SPHardwareDataType and sysctl captures.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    fake_mac(
        bin.path(),
        &read(HW_INTEL_RUNNER),
        &read(SYSCTL_INTEL_RUNNER),
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.device("apple:gpu").is_none());
    assert!(r.device("apple:ane").is_none());
    assert_eq!(r.summary.accelerator_count, 0);
}

#[test]
fn macos_wired_limit_is_the_gpu_share() {
    // The M3 Max's real SPDisplaysDataType; sysctl says a 64 GiB Mac whose
    // GPU wired limit was raised to 56 GiB (values made up, format as the
    // runner's capture).
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    fake_mac(
        bin.path(),
        &read(M3MAX),
        "hw.memsize: 68719476736\niogpu.wired_limit_mb: 57344\n",
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let gpu = r.device("apple:gpu").unwrap();
    assert_eq!(gpu.memory_bytes, Some(56 * GIB), "iogpu.wired_limit_mb");
    let shared = gpu.shared_memory.as_ref().unwrap();
    assert_eq!(shared.pool_bytes, Some(64 * GIB));
    assert_eq!(shared.device_limit_bytes, Some(56 * GIB));
    assert_eq!(gpu.spec.as_ref().map(|s| s.id.as_str()), Some("m3-max-gpu"));
    let ane = r.device("apple:ane").unwrap();
    assert_eq!(ane.memory_bytes, None);
    assert_eq!(ane.spec.as_ref().map(|s| s.id.as_str()), Some("m3-ane"));
    assert_eq!(r.summary.accelerator_count, 2);
    assert_eq!(
        r.summary.accelerator_memory_bytes,
        Some(56 * GIB),
        "one unified pool, counted once, at the GPU's share"
    );
    // The planner sees the GPU's share.
    let plan = ai_hwaccel::plan::PlanDevice::from_registry(&r);
    let g = plan.iter().find(|d| d.id == "apple:gpu").unwrap();
    assert_eq!(g.capacity_bytes, Some(56 * GIB));
}

#[test]
fn macos_wired_limit_default_leaves_the_share_unknown() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    fake_mac(
        bin.path(),
        &read(M3MAX),
        "hw.memsize: 68719476736\niogpu.wired_limit_mb: 0\n",
    );
    let r = run(root.path(), bin.path());
    let gpu = r.device("apple:gpu").unwrap();
    assert_eq!(
        gpu.memory_bytes,
        Some(64 * GIB),
        "the pool, said to be the pool"
    );
    let shared = gpu.shared_memory.as_ref().unwrap();
    assert_eq!(shared.device_limit_bytes, None);
    assert!(
        shared.source.contains("iogpu.wired_limit_mb is 0"),
        "{}",
        shared.source
    );
    // The Neural Engine has no size of its own: it is in the shared pool,
    // not of unknown memory.
    assert_eq!(r.summary.accelerator_memory_unknown_count, 0);
}

/// An Asahi Linux MacBook Pro (14-inch, M1 Max): `apple,j314c`/`apple,t6001`
/// as torvalds/linux `Documentation/devicetree/bindings/arm/apple.yaml`
/// lists them, the GPU platform device bound to `asahi` behind `card0`.
fn asahi_root(root: &Path) {
    let dt = root.join("proc/device-tree");
    std::fs::create_dir_all(&dt).unwrap();
    std::fs::write(
        dt.join("compatible"),
        b"apple,j314c\0apple,t6001\0apple,arm-platform\0",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/ostype"), "Linux\n").unwrap();
    std::fs::write(
        root.join("proc/meminfo"),
        "MemTotal:       32653488 kB\nMemAvailable:   20000000 kB\n",
    )
    .unwrap();
    let gpu = root.join("sys/devices/platform/soc/206400000.gpu");
    std::fs::create_dir_all(&gpu).unwrap();
    std::fs::create_dir_all(root.join("sys/bus/platform/drivers/asahi")).unwrap();
    std::os::unix::fs::symlink("../../../../bus/platform/drivers/asahi", gpu.join("driver"))
        .unwrap();
    let card = root.join("sys/class/drm/card0");
    std::fs::create_dir_all(&card).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/platform/soc/206400000.gpu",
        card.join("device"),
    )
    .unwrap();
}

#[test]
fn asahi_device_tree_and_drm() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    asahi_root(root.path());
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "system_profiler",
        &format!("touch '{}'", marker.display()),
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(!marker.exists(), "no macOS tool on Linux");
    let gpu = r.device("apple:gpu").unwrap();
    assert_eq!(gpu.name, "Apple M1 Max GPU");
    assert_eq!(gpu.driver.as_deref(), Some("asahi"));
    assert_eq!(gpu.source, "devicetree+asahi-sysfs");
    assert_eq!(gpu.memory_bytes, Some(32_653_488 * 1024), "MemTotal");
    let shared = gpu.shared_memory.as_ref().unwrap();
    assert_eq!(shared.pool_bytes, Some(32_653_488 * 1024));
    assert!(shared.source.starts_with("pool: /proc/meminfo MemTotal"));
    assert_eq!(gpu.compute_units, None, "Linux does not report GPU cores");
    assert_eq!(gpu.extra["board"], "j314c");
    assert_eq!(gpu.extra["soc"], "t6001");
    assert!(gpu.available);
    assert_eq!(gpu.spec.as_ref().map(|s| s.id.as_str()), Some("m1-max-gpu"));
    let ane = r.device("apple:ane").unwrap();
    assert_eq!(ane.compute_units, Some(16), "m1-ane entry");
    assert!(!ane.available);
    assert_eq!(
        ane.unavailable_reason.as_deref(),
        Some("no accel device bound to the ane driver")
    );
}

#[test]
fn other_linux_machines_run_nothing() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("proc/sys/kernel")).unwrap();
    std::fs::write(root.path().join("proc/sys/kernel/ostype"), "Linux\n").unwrap();
    std::fs::create_dir_all(root.path().join("proc/device-tree")).unwrap();
    std::fs::write(
        root.path().join("proc/device-tree/compatible"),
        b"radxa,rock-5b\0rockchip,rk3588\0",
    )
    .unwrap();
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "system_profiler",
        &format!("touch '{}'", marker.display()),
    );
    let r = run(root.path(), bin.path());
    assert!(r.devices.is_empty() && r.warnings.is_empty());
    assert!(!marker.exists());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    #[test]
    fn damaged_sysctl_and_hardware_outputs_never_panic(cut in 0usize..600, flip in 0usize..600, byte in 0u8..=255) {
        let b = support::damaged(std::fs::read(fixture(SYSCTL_RUNNER)).unwrap(), cut, flip, byte);
        let mut w = Vec::new();
        let f = ai_hwaccel::detect::parse_macos_sysctl(&String::from_utf8_lossy(&b), &mut w);
        // Whatever survives is a number read from the text, never a default.
        proptest::prop_assert!(f.memsize_bytes.is_none_or(|m| m > 0));
        let b = support::damaged(std::fs::read(fixture(HW_M5MAX)).unwrap(), cut, flip, byte);
        let _ = parse(&b);
    }

    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..400, flip in 0usize..400, byte in 0u8..=255) {
        let b = support::damaged(std::fs::read(fixture(M3MAX)).unwrap(), cut, flip, byte);
        let _ = parse(&b);
    }
}
