//! OpenCL backend: the real pocl capture, the AMD APP SDK clinfo capture,
//! fake-tool end-to-end runs with real PCI ids, the real `clinfo` when
//! installed, and corrupted inputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools, read fixtures and run the real tool"
)]

mod support;
use support::{detect_fake, fixture, write_script};

use std::path::Path;

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, BackendSet, DetectOptions, ProbeOptions, Registry, detect};

const POCL: &str = "clinfo/debian12-pocl-3.1__clinfo-raw__pocl-cpu.txt";
const APP_SDK: &str = "clinfo/hsa-microbench__amd-app-sdk-clinfo__a10-7850k-apu-spectre.txt";

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("clinfo").expect("format registered").parse)(bytes)
}

#[test]
fn pocl_raw_capture_is_a_cpu_note() {
    let out = parse(&std::fs::read(fixture(POCL)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let cpu = &out.devices[0];
    assert_eq!((cpu.id.as_str(), cpu.family), ("cpu", Family::Cpu));
    assert_eq!(
        cpu.extra["opencl_cpu_devices"],
        "pthread-skylake-avx512-AMD EPYC (Portable Computing Language, \
         OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512, driver 3.1+debian)"
    );
}

/// clinfo's default report on a GTX 1650 (NVIDIA's OpenCL, driver
/// 525.60.11): the PCI address from `Device Topology (NV)`, the SMs, and the
/// compute capability from `Compute Capability (NV)`.
#[test]
fn nvidia_report_gives_the_compute_capability() {
    let out = parse(
        &std::fs::read(fixture(
            "clinfo/bgs99-parallelprocessing__clinfo__gtx1650-nvidia-525.60.11.txt",
        ))
        .unwrap(),
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.name, "NVIDIA GeForce GTX 1650");
    assert_eq!(d.id, "pci:0000:01:00.0");
    assert_eq!(d.compute_units, Some(16));
    assert_eq!(d.compute_capability.as_deref(), Some("7.5"));
    assert_eq!(d.extra["opencl_driver_version"], "525.60.11");
}

#[test]
fn amd_app_sdk_report_gives_the_apu_gpu_and_a_cpu_note() {
    let out = parse(&std::fs::read(fixture(APP_SDK)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    let gpu = &out.devices[0];
    // `Device Topology: PCI[ B#0, D#1, F#0 ]`
    assert_eq!(gpu.id, "pci:0000:00:01.0");
    assert_eq!(gpu.family, Family::Gpu);
    assert_eq!(
        gpu.name, "AMD Radeon(TM) R7 Graphics",
        "board name preferred"
    );
    assert_eq!(gpu.vendor, "amd", "Vendor ID 1002h");
    assert_eq!(gpu.compute_units, Some(8));
    // `Unified memory for Host and Device: 1`: the 3063939072 bytes are host RAM.
    assert_eq!(gpu.memory_bytes, None);
    assert_eq!(gpu.extra["opencl_global_mem_bytes"], "3063939072");
    assert_eq!(gpu.extra["opencl_device_name"], "Spectre");
    assert_eq!(gpu.extra["opencl_driver_version"], "1598.5 (VM)");
    assert_eq!(gpu.extra["opencl_version"], "OpenCL 2.0 AMD-APP (1598.5)");
    assert_eq!(
        gpu.extra["opencl_platform"],
        "AMD Accelerated Parallel Processing"
    );
    let cpu = &out.devices[1];
    assert_eq!(cpu.id, "cpu");
    assert!(
        cpu.extra["opencl_cpu_devices"]
            .starts_with("AMD A10-7850K APU with Radeon(TM) R7 Graphics (")
    );
}

// ---- fake root + fake tool ------------------------------------------------

fn pci(root: &Path, addr: &str, vendor: &str, device: &str, class: &str, driver: &str) {
    let dir = root.join("sys/bus/pci/devices").join(addr);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, v) in [("vendor", vendor), ("device", device), ("class", class)] {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    std::os::unix::fs::symlink(
        format!("../../../bus/pci/drivers/{driver}"),
        dir.join("driver"),
    )
    .unwrap();
}

fn detect_opencl(root: &Path, bin: &Path) -> Registry {
    detect_fake(
        root,
        bin,
        &[],
        &[BackendId::System, BackendId::OpenCl, BackendId::Pci],
    )
}

/// `clinfo --raw` in clinfo 3.0's layout (that of the real pocl capture)
/// with a ROCm MI300X (1002:74a1, `CL_DEVICE_TOPOLOGY_AMD` without domain)
/// in front of the real pocl block.
fn rocm_plus_pocl() -> String {
    let pocl = std::fs::read_to_string(fixture(POCL)).unwrap();
    let pocl_platform_and_devices = pocl
        .split_once("#PLATFORMS")
        .unwrap()
        .1
        .split_once('\n')
        .unwrap()
        .1;
    let (pocl_platform, pocl_devices) = pocl_platform_and_devices.split_once("\n\n").unwrap();
    format!(
        "#PLATFORMS                                        2\n\
  CL_PLATFORM_NAME                                AMD Accelerated Parallel Processing\n\
  CL_PLATFORM_VERSION                             OpenCL 2.1 AMD-APP (3614.0)\n\
  CL_PLATFORM_ICD_SUFFIX_KHR                      AMD\n\
\n{pocl_platform}\n\n\
[AMD/*]     CL_PLATFORM_NAME                                AMD Accelerated Parallel Processing\n\
[AMD/*]   #DEVICES                                          1\n\
[AMD/0]     CL_DEVICE_NAME                                  gfx942:sramecc+:xnack-\n\
[AMD/0]     CL_DEVICE_VENDOR                                Advanced Micro Devices, Inc.\n\
[AMD/0]     CL_DEVICE_VENDOR_ID                             0x1002\n\
[AMD/0]     CL_DEVICE_VERSION                               OpenCL 2.0 \n\
[AMD/0]     CL_DRIVER_VERSION                               3614.0 (HSA1.1,LC)\n\
[AMD/0]     CL_DEVICE_TYPE                                  CL_DEVICE_TYPE_GPU\n\
[AMD/0]     CL_DEVICE_BOARD_NAME_AMD                        AMD Instinct MI300X\n\
[AMD/0]     CL_DEVICE_TOPOLOGY_AMD                          PCI-E, 03:00.0\n\
[AMD/0]     CL_DEVICE_MAX_COMPUTE_UNITS                     304\n\
[AMD/0]     CL_DEVICE_GLOBAL_MEM_SIZE                       206141652992\n\
[AMD/0]     CL_DEVICE_HOST_UNIFIED_MEMORY                   CL_FALSE\n\
[AMD/0]     CL_DEVICE_AVAILABLE                             CL_TRUE\n\
\n{pocl_devices}"
    )
}

#[test]
fn gpu_merges_into_its_pci_device_by_topology() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // The domain is not 0: the scan's address wins over clinfo's domain-less one.
    pci(
        root.path(),
        "0001:03:00.0",
        "0x1002",
        "0x74a1",
        "0x120000",
        "amdgpu",
    );
    let out = bin.path().join("out.txt");
    std::fs::write(&out, rocm_plus_pocl()).unwrap();
    write_script(bin.path(), "clinfo", &format!("cat '{}'\n", out.display()));
    let r = detect_opencl(root.path(), bin.path());
    let mine: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| w.backend == "opencl")
        .collect();
    assert!(mine.is_empty(), "{mine:?}");
    let accs: Vec<_> = r.devices.iter().filter(|d| d.is_accelerator()).collect();
    assert_eq!(accs.len(), 1, "listed once: {:?}", r.devices);
    let g = accs[0];
    assert_eq!(g.id, "pci:0001:03:00.0");
    assert_eq!(g.name, "AMD Instinct MI300X");
    assert_eq!(g.family, Family::Gpu, "the PCI scan's family wins");
    assert_eq!(g.memory_bytes, Some(206_141_652_992));
    assert_eq!(g.compute_units, Some(304));
    assert_eq!(g.extra["opencl_device_name"], "gfx942:sramecc+:xnack-");
    assert_eq!(g.source, "clinfo+pci-sysfs");
    assert!(r.device("cpu").unwrap().extra["opencl_cpu_devices"].starts_with("pthread-"));
    assert_eq!(r.summary.accelerator_count, 1);
}

#[test]
fn gpu_without_address_pairs_only_when_unique() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    pci(
        root.path(),
        "0000:03:00.0",
        "0x1002",
        "0x74a1",
        "0x120000",
        "amdgpu",
    );
    let text = rocm_plus_pocl().replace("PCI-E, 03:00.0", "");
    let out = bin.path().join("out.txt");
    std::fs::write(&out, &text).unwrap();
    write_script(bin.path(), "clinfo", &format!("cat '{}'\n", out.display()));
    let r = detect_opencl(root.path(), bin.path());
    assert!(
        r.device("pci:0000:03:00.0")
            .unwrap()
            .source
            .contains("clinfo")
    );

    // A second AMD function: no longer unique, so listed apart with a warning.
    pci(
        root.path(),
        "0000:83:00.0",
        "0x1002",
        "0x74a1",
        "0x120000",
        "amdgpu",
    );
    let r = detect_opencl(root.path(), bin.path());
    assert!(r.device("opencl:0:0").is_some(), "{:?}", r.devices);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "opencl" && w.message.contains("opencl:0:0"))
    );
}

// ---- the real tool --------------------------------------------------------

#[test]
fn real_clinfo_matches_detection() {
    let Some(_) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("clinfo"))
            .find(|f| f.is_file())
    }) else {
        eprintln!("skipped: clinfo is not installed");
        return;
    };
    let out = std::process::Command::new("clinfo")
        .arg("--raw")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let types: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("CL_DEVICE_TYPE "))
        .map(|(_, v)| v.trim())
        .collect();
    let cpus = types.iter().filter(|t| t.contains("CPU")).count();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("CL_DEVICE_NAME "))
        .map(|(_, v)| v.trim())
        .collect();
    let only = DetectOptions {
        backends: BackendSet::empty()
            .with(BackendId::System)
            .with(BackendId::OpenCl),
        families: None,
    };
    let r = detect(&ProbeOptions::default(), &only);
    let cl_devices = r
        .devices
        .iter()
        .filter(|d| d.extra.contains_key("opencl_device_type"))
        .count();
    assert_eq!(cl_devices + cpus, types.len(), "{:?}", r.devices);
    if cpus > 0 {
        let note = &r.device("cpu").unwrap().extra["opencl_cpu_devices"];
        assert!(note.matches(" (").count() >= cpus, "{note}");
        assert!(names.iter().any(|n| note.contains(n)), "{note}");
    }
    assert_eq!(
        r.summary.has_accelerator,
        cl_devices > 0,
        "pocl and other CPU devices never count as accelerators"
    );
    eprintln!("clinfo: {} devices, {cpus} CPU devices", types.len());
}

// ---- robustness -----------------------------------------------------------

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn truncated_or_corrupted_reports_never_panic(cut in 0usize..12_000, flip in 0usize..12_000, byte in 0u8..=255) {
        for rel in [POCL, APP_SDK] {
            let b = support::damaged(std::fs::read(fixture(rel)).unwrap(), cut, flip, byte);
            let _ = parse(&b);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(s in "(\\[[A-Z]{0,4}/[0-9*]{0,2}\\] ?[A-Z_ ]{0,30}[ -~]{0,20}\n){0,20}") {
        let _ = parse(s.as_bytes());
    }
}
