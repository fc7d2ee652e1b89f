//! Detection where the GPU is not on the guest's PCI bus or has no memory of
//! its own: WSL 2 (`/dev/dxg`, the tools in `/usr/lib/wsl/lib`), containers
//! without PCI sysfs, sandboxes that pass only the tool, NVIDIA Jetson
//! (device tree, `/etc/nv_tegra_release`, unified memory) and GB10-like
//! parts whose `nvidia-smi` prints `N/A` for memory. Fake roots are built
//! from real captures (provenance in tests/fixtures/SOURCES.md, "Fake roots
//! of tests/platforms.rs").
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake, fixture, write_script};

use std::path::Path;

use ai_hwaccel::{BackendId, Registry};

const MIB: u64 = 1 << 20;
const KIB: u64 = 1024;

/// A fake `nvidia-smi` that prints `capture` for `-q -x` and fails otherwise.
fn fake_smi(bin: &Path, capture: &Path) {
    write_script(
        bin,
        "nvidia-smi",
        &format!(
            "[ \"$1 $2\" = '-q -x' ] && exec cat '{}'\nexit 9",
            capture.display()
        ),
    );
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn nvidia(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Nvidia])
}

// ---- WSL 2 -----------------------------------------------------------------

/// A WSL 2 guest: the kernel release of the andweng/wsl-rocm guide,
/// `/dev/dxg`, `/usr/lib/wsl/lib`, and the only PCI function sysfs shows,
/// Microsoft's virtual render device 1414:008e.
fn wsl2_root(root: &Path) {
    write(
        root,
        "proc/sys/kernel/osrelease",
        b"6.6.87.2-microsoft-standard-WSL2\n",
    );
    write(root, "proc/sys/kernel/ostype", b"Linux\n");
    write(root, "dev/dxg", b"");
    std::fs::create_dir_all(root.join("usr/lib/wsl/lib")).unwrap();
    FakePci {
        vendor: "1414",
        device: "008e",
        class: "030200",
        driver: None,
        numa: None,
        link: false,
    }
    .write(root, "c3a5:00:00.0");
}

#[test]
fn wsl2_gpu_comes_from_nvidia_smi_without_pci() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    wsl2_root(root.path());
    // On WSL 2 nvidia-smi is the Windows driver's: a Windows capture.
    fake_smi(
        bin.path(),
        &fixture("nvidia-smi-xml/netdata-godplugin__rtx-2080-win.xml"),
    );
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[],
        &[BackendId::System, BackendId::Nvidia, BackendId::Pci],
    );
    let gpus: Vec<_> = r.devices.iter().filter(|d| d.vendor == "nvidia").collect();
    assert_eq!(gpus.len(), 1, "{:?}", r.devices);
    let g = gpus[0];
    assert_eq!(g.name, "NVIDIA GeForce RTX 2080");
    assert_eq!(g.id, "pci:0000:0a:00.0", "the bus id Windows gives it");
    assert_eq!(g.memory_bytes, Some(8192 * MIB));
    assert_eq!(g.driver_version.as_deref(), Some("516.59"));
    assert_eq!(g.shared_memory, None, "dedicated VRAM");
    assert!(
        r.devices.iter().all(|d| d.vendor != "microsoft"
            || d.family != ai_hwaccel::Family::Gpu
            || !d.available),
        "the virtual render device is not an accelerator: {:?}",
        r.devices
    );
    let wsl = r.system.environment.wsl.as_ref().expect("WSL reported");
    assert_eq!(wsl.version, Some(2));
    assert_eq!(
        wsl.kernel_release.as_deref(),
        Some("6.6.87.2-microsoft-standard-WSL2")
    );
    assert!(wsl.gpu_paravirtualization && wsl.driver_libraries);
}

#[test]
fn wsl2_without_the_tool_lists_nothing_and_says_nothing() {
    // /dev/dxg alone may be an AMD or Intel GPU's: no NVIDIA warning.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    wsl2_root(root.path());
    let r = nvidia(root.path(), bin.path());
    assert!(r.devices.is_empty());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

// ---- containers without PCI sysfs ---------------------------------------

#[test]
fn container_with_device_nodes_and_no_sysfs() {
    // What the NVIDIA container runtime passes: /dev/nvidiactl and
    // /dev/nvidia0, and nvidia-smi; no /sys/bus/pci, no /proc/driver/nvidia.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write(root.path(), "dev/nvidiactl", b"");
    write(root.path(), "dev/nvidia0", b"");
    write(root.path(), "dev/nvidia-uvm", b"");
    fake_smi(bin.path(), &fixture("nvidia-smi-xml/telegraf__a10g.xml"));
    let r = nvidia(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 1);
    let g = &r.devices[0];
    assert_eq!(g.name, "NVIDIA A10G");
    assert_eq!(g.id, "pci:0000:00:1e.0");
    assert_eq!(g.memory_bytes, Some(23028 * MIB));
    assert_eq!(g.source, "nvidia-smi");
    assert_eq!(g.pci, None, "no sysfs to join");
}

#[test]
fn sandbox_with_only_the_tool() {
    // No /dev, /proc or /sys at all: the tool on the search path still answers.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    fake_smi(bin.path(), &fixture("nvidia-smi-xml/telegraf__a10g.xml"));
    let r = nvidia(root.path(), bin.path());
    assert_eq!(r.devices.len(), 1);
    assert_eq!(r.devices[0].memory_bytes, Some(23028 * MIB));
}

#[test]
fn device_nodes_without_any_answer_are_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write(root.path(), "dev/nvidiactl", b"");
    write(root.path(), "dev/nvidia0", b"");
    let r = nvidia(root.path(), bin.path());
    assert!(r.devices.is_empty());
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    let w = &r.warnings[0].message;
    assert!(
        w.contains("/dev/nvidia0") && w.contains("nvidia-smi: not found"),
        "{w}"
    );
}

#[test]
fn nothing_nvidia_runs_nothing() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write(root.path(), "dev/null", b"");
    let r = nvidia(root.path(), bin.path());
    assert!(r.devices.is_empty() && r.warnings.is_empty());
}

// ---- GB10-like: memory N/A -------------------------------------------------

/// `nvidia-smi -q -x` shaped as on a DGX Spark: product name and bus id of
/// the GB10 `nvidia-smi` table in NVIDIA/k8s-device-plugin#1482, every
/// framebuffer field `N/A` as nvitop#208 reports for driver 580.173.02.
const GB10_XML: &str = r#"<?xml version="1.0" ?>
<nvidia_smi_log>
	<driver_version>580.95.05</driver_version>
	<cuda_version>13.0</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="0000000F:01:00.0">
		<product_name>NVIDIA GB10</product_name>
		<product_architecture>Blackwell</product_architecture>
		<uuid>GPU-2dee1e25-b3b5-007e-2b55-79f2d0f2ebe5</uuid>
		<fb_memory_usage>
			<total>N/A</total>
			<reserved>N/A</reserved>
			<used>N/A</used>
			<free>N/A</free>
		</fb_memory_usage>
	</gpu>
</nvidia_smi_log>
"#;

#[test]
fn gb10_memory_is_the_system_memory() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write(root.path(), "dev/nvidiactl", b"");
    write(root.path(), "dev/nvidia0", b"");
    // nvitop#208: MemTotal / MemAvailable of a DGX Spark.
    write(
        root.path(),
        "proc/meminfo",
        b"MemTotal:       127600748 kB\nMemAvailable:   118566368 kB\n",
    );
    let xml = bin.path().join("gb10.xml");
    std::fs::write(&xml, GB10_XML).unwrap();
    fake_smi(bin.path(), &xml);
    let r = nvidia(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let g = &r.devices[0];
    assert_eq!(g.name, "NVIDIA GB10");
    assert_eq!(g.id, "pci:000f:01:00.0");
    assert_eq!(g.memory_bytes, Some(127_600_748 * KIB), "MemTotal");
    assert_eq!(g.memory_free_bytes, Some(118_566_368 * KIB), "MemAvailable");
    let shared = g.shared_memory.as_ref().expect("marked shared");
    assert_eq!(shared.pool_bytes, Some(127_600_748 * KIB));
    assert_eq!(shared.device_limit_bytes, None);
    assert!(
        shared.source.starts_with("pool: /proc/meminfo MemTotal")
            && shared.source.contains("nvidia-smi reported no memory size"),
        "{}",
        shared.source
    );
    assert_eq!(r.summary.accelerator_memory_bytes, Some(127_600_748 * KIB));
}

#[test]
fn a_discrete_gpu_with_memory_na_is_not_called_unified() {
    // The same report for a part whose datasheet lists its own memory.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    write(root.path(), "dev/nvidia0", b"");
    write(
        root.path(),
        "proc/meminfo",
        b"MemTotal:       127600748 kB\n",
    );
    let xml = bin.path().join("a10g-na.xml");
    std::fs::write(&xml, GB10_XML.replace("NVIDIA GB10", "NVIDIA A10G")).unwrap();
    fake_smi(bin.path(), &xml);
    let r = nvidia(root.path(), bin.path());
    let g = &r.devices[0];
    assert_eq!(g.memory_bytes, None, "unknown, not the host's memory");
    assert_eq!(g.shared_memory, None);
}

// ---- Jetson ----------------------------------------------------------------

/// A Jetson AGX Orin 64GB developer kit on JetPack 6.2.1: `compatible` of
/// NVIDIA/jetson-gpio#125 (NULs restored), `model` and `nv_tegra_release`
/// of rbonghi/jetson_stats#677, the GPU platform device `17000000.gpu`
/// under `bus@0` bound to `nvgpu` (as the tinygrad Orin report names it).
fn jetson_root(root: &Path) {
    write(
        root,
        "proc/device-tree/compatible",
        b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0nvidia,tegra23x\0",
    );
    write(
        root,
        "proc/device-tree/model",
        b"NVIDIA Jetson AGX Orin Developer Kit\0",
    );
    write(
        root,
        "etc/nv_tegra_release",
        b"# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025\n",
    );
    write(
        root,
        "proc/meminfo",
        b"MemTotal:       64335836 kB\nMemFree:        60000000 kB\nMemAvailable:   61000000 kB\n",
    );
    let gpu = root.join("sys/devices/platform/bus@0/17000000.gpu");
    std::fs::create_dir_all(&gpu).unwrap();
    std::fs::create_dir_all(root.join("sys/bus/platform/drivers/nvgpu")).unwrap();
    std::os::unix::fs::symlink("../../../../bus/platform/drivers/nvgpu", gpu.join("driver"))
        .unwrap();
}

#[test]
fn jetson_orin_from_the_device_tree() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    jetson_root(root.path());
    let marker = bin.path().join("ran");
    write_script(
        bin.path(),
        "nvidia-smi",
        &format!("touch '{}'", marker.display()),
    );
    let r = nvidia(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(!marker.exists(), "nvidia-smi is not asked on a Jetson");
    assert_eq!(r.devices.len(), 1);
    let g = &r.devices[0];
    assert_eq!(g.id, "nvidia:gpu0");
    assert_eq!(g.name, "NVIDIA Jetson Orin GPU");
    assert_eq!(g.source, "devicetree+tegra");
    assert_eq!(g.compute_capability.as_deref(), Some("8.7"));
    assert_eq!(g.architecture.as_deref(), Some("Ampere"));
    assert_eq!(g.driver.as_deref(), Some("nvgpu"));
    assert_eq!(g.driver_version.as_deref(), Some("L4T R36.4.4"));
    assert_eq!(g.extra["board"], "NVIDIA Jetson AGX Orin Developer Kit");
    assert_eq!(g.extra["soc"], "tegra234");
    assert_eq!(g.extra["compatible"], "nvidia,p3737-0000+p3701-0005");
    assert_eq!(
        g.extra["platform_device"],
        "/sys/devices/platform/bus@0/17000000.gpu"
    );
    assert!(g.available);
    assert_eq!(g.memory_bytes, Some(64_335_836 * KIB));
    assert_eq!(g.memory_free_bytes, Some(61_000_000 * KIB));
    let shared = g.shared_memory.as_ref().unwrap();
    assert_eq!(shared.pool_bytes, Some(64_335_836 * KIB));
    assert!(shared.source.starts_with("pool: /proc/meminfo MemTotal"));
    assert_eq!(r.summary.accelerator_memory_bytes, Some(64_335_836 * KIB));
}

#[test]
fn jetson_with_the_whole_release_file_of_jetpack_6_2_1() {
    // The four-line `/etc/nv_tegra_release` an AGX Orin on JetPack 6.2.1
    // printed (boxcutter/kvm docs): only the first line names the release.
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    jetson_root(root.path());
    let capture = std::fs::read(fixture(
        "nv-tegra-release/boxcutter-kvm__agx-orin-jetpack-6.2.1__r36.4.4.txt",
    ))
    .unwrap();
    assert_eq!(capture.iter().filter(|&&b| b == b'\n').count(), 4);
    write(root.path(), "etc/nv_tegra_release", &capture);
    let r = nvidia(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices[0].driver_version.as_deref(), Some("L4T R36.4.4"));
}

#[test]
fn jetson_visibility_and_a_bad_release_file() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    jetson_root(root.path());
    write(root.path(), "etc/nv_tegra_release", b"garbage\n");
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[("CUDA_VISIBLE_DEVICES", "")],
        &[BackendId::Nvidia],
    );
    let g = &r.devices[0];
    assert_eq!(g.driver_version, None);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("/etc/nv_tegra_release")),
        "{:?}",
        r.warnings
    );
    assert!(!g.available);
    assert_eq!(
        g.unavailable_reason.as_deref(),
        Some("hidden by CUDA_VISIBLE_DEVICES")
    );
    assert_eq!(r.summary.accelerator_memory_bytes, Some(0));
}

#[test]
fn jetson_without_its_gpu_device_is_unavailable() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    jetson_root(root.path());
    let gpu = root.path().join("sys/devices/platform/bus@0/17000000.gpu");
    std::fs::remove_file(gpu.join("driver")).unwrap();
    std::fs::remove_dir(&gpu).unwrap();
    let r = nvidia(root.path(), bin.path());
    let g = &r.devices[0];
    assert!(!g.available);
    assert_eq!(
        g.unavailable_reason.as_deref(),
        Some("no ga10b GPU platform device under /sys/devices/platform")
    );
    assert_eq!(g.driver, None);
}
