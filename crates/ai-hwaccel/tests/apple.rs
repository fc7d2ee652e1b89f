//! Apple backend: a real `system_profiler SPDisplaysDataType -json` capture
//! (headless Mac with an M3 Max), corrupted copies, a fake macOS machine
//! (no `/proc`, fake system_profiler and sysctl) and a fake Asahi Linux
//! root (device-tree `compatible`, an `asahi` DRM card, `/proc/meminfo`).
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
        "the unified total comes from sysctl"
    );
    assert_eq!(gpu.extra["integrated"], "true");
    assert!(gpu.extra["memory"].starts_with("unified"));
    assert_eq!(gpu.extra["metal_support"], "supported");
    assert_eq!(spec_id(gpu), Some("m3-max-gpu"));
    let ane = &out.devices[1];
    assert_eq!(ane.name, "Apple M3 Max Neural Engine");
    assert_eq!(ane.family, Family::Npu);
    assert_eq!(ane.compute_units, Some(16), "from the m3-ane spec entry");
    assert_eq!(ane.extra["compute_units_from"], "spec:m3-ane");
    assert_eq!(ane.memory_bytes, None, "shares the GPU's unified pool");
    assert_eq!(spec_id(ane), Some("m3-ane"));
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
    assert_eq!(igpu.memory_bytes, None);
    assert_eq!(igpu.extra["integrated"], "true");
    let dgpu = &out.devices[1];
    assert_eq!(dgpu.vendor, "amd");
    assert_eq!(dgpu.memory_bytes, Some(8 * GIB));
    assert_eq!(dgpu.extra["metal_support"], "Metal 3");
}

// ---- fake machines --------------------------------------------------------

fn run(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Apple])
}

#[test]
fn macos_profiler_and_sysctl() {
    // A macOS root has no /proc: the backend asks the profiler.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write_script(
        bin.path(),
        "system_profiler",
        &format!(
            "[ \"$1\" = SPDisplaysDataType ] && [ \"$2\" = -json ] && cat '{}'",
            fixture(M3MAX).display()
        ),
    );
    write_script(
        bin.path(),
        "sysctl",
        "[ \"$2\" = hw.memsize ] && [ \"$3\" = machdep.cpu.brand_string ] && printf '68719476736\\nApple M3 Max\\n'",
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let gpu = r.device("apple:gpu").unwrap();
    assert_eq!(
        gpu.memory_bytes,
        Some(64 * GIB),
        "hw.memsize: unified memory"
    );
    assert_eq!(gpu.source, "system-profiler+sysctl");
    assert_eq!(gpu.spec.as_ref().map(|s| s.id.as_str()), Some("m3-max-gpu"));
    let ane = r.device("apple:ane").unwrap();
    assert_eq!(ane.spec.as_ref().map(|s| s.id.as_str()), Some("m3-ane"));
    assert_eq!(r.summary.accelerator_count, 2);
    assert_eq!(
        r.summary.accelerator_memory_known_bytes,
        64 * GIB,
        "one unified pool, counted once"
    );
    // The Neural Engine reports no memory of its own: the total is not
    // claimed, and the device is counted as of unknown memory.
    assert_eq!(r.summary.accelerator_memory_bytes, None);
    assert_eq!(r.summary.accelerator_memory_unknown_count, 1);
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
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..400, flip in 0usize..400, byte in 0u8..=255) {
        let b = support::damaged(std::fs::read(fixture(M3MAX)).unwrap(), cut, flip, byte);
        let _ = parse(&b);
    }
}
