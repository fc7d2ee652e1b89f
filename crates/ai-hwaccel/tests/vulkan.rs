//! Vulkan backend: the real llvmpipe captures, fake-tool end-to-end runs
//! with real PCI ids, the real `vulkaninfo` when installed, and corrupted
//! inputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools, read fixtures and run the real tool"
)]

mod support;
use support::{detect_fake, fixture, write_script};

use std::path::PathBuf;

use ai_hwaccel::detect::format;
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, BackendSet, DetectOptions, ProbeOptions, Registry, detect};

const SUMMARY: &str = "vulkaninfo/debian12-mesa-22.3.6__vulkaninfo-summary__llvmpipe.txt";
const FULL: &str = "vulkaninfo/debian12-mesa-22.3.6__vulkaninfo-text__llvmpipe.txt";

fn parse(name: &str, bytes: &[u8]) -> ai_hwaccel::detect::ParseOutput {
    (format(name).expect("format registered").parse)(bytes)
}

#[test]
fn llvmpipe_summary_is_a_cpu_note_not_a_device() {
    let text = std::fs::read(fixture(SUMMARY)).unwrap();
    let out = parse("vulkaninfo-summary", &text);
    assert_eq!(out, parse("vulkaninfo", &text));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    let cpu = &out.devices[0];
    assert_eq!((cpu.id.as_str(), cpu.family), ("cpu", Family::Cpu));
    assert!(!cpu.is_accelerator());
    // Values as the capture shows them.
    assert_eq!(
        cpu.extra["vulkan_cpu_devices"],
        "llvmpipe (LLVM 15.0.6, 256 bits) (Mesa 22.3.6 (LLVM 15.0.6), Vulkan 1.3.230)"
    );
}

#[test]
fn llvmpipe_full_report_parses_the_same_device() {
    let text = std::fs::read(fixture(FULL)).unwrap();
    let out = parse("vulkaninfo", &text);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 1);
    assert_eq!(
        out.devices[0].extra["vulkan_cpu_devices"],
        "llvmpipe (LLVM 15.0.6, 256 bits) (Mesa 22.3.6 (LLVM 15.0.6), Vulkan 1.3.230)",
        "the full report's `1.3.230 (4206822)` is read as 1.3.230"
    );
}

// ---- fake root + fake tool ------------------------------------------------

struct Fake {
    root: tempfile::TempDir,
    bin: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        Fake {
            root: tempfile::tempdir().unwrap(),
            bin: tempfile::tempdir().unwrap(),
        }
    }

    /// A PCI function under /sys/bus/pci/devices with a bound driver.
    fn pci(&self, addr: &str, vendor: &str, device: &str, class: &str, driver: &str) {
        let dir = self.root.path().join("sys/bus/pci/devices").join(addr);
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

    /// A tool printing `summary` for `--summary` and `full` otherwise.
    fn vulkaninfo(&self, summary: &str, full: &str) {
        let s = self.bin.path().join("summary.txt");
        let f = self.bin.path().join("full.txt");
        std::fs::write(&s, summary).unwrap();
        std::fs::write(&f, full).unwrap();
        write_script(
            self.bin.path(),
            "vulkaninfo",
            &format!(
                "if [ \"$1\" = --summary ]; then cat '{}'; else cat '{}'; fi\n",
                s.display(),
                f.display()
            ),
        );
    }

    fn detect(&self) -> Registry {
        detect_fake(
            self.root.path(),
            self.bin.path(),
            &[],
            &[BackendId::System, BackendId::Vulkan, BackendId::Pci],
        )
    }
}

/// A summary in vulkaninfo 1.3's layout (the layout of the real capture)
/// for a discrete NVIDIA H100 PCIe (10de:2331) plus llvmpipe.
fn h100_summary(gpus: usize) -> String {
    let mut s = String::from(
        "==========\nVULKANINFO\n==========\n\nVulkan Instance Version: 1.3.239\n\nDevices:\n========\n",
    );
    for i in 0..gpus {
        s.push_str(&format!(
            "GPU{i}:\n\tapiVersion         = 1.3.260\n\tdriverVersion      = 550.54.15.0\n\tvendorID           = 0x10de\n\tdeviceID           = 0x2331\n\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU\n\tdeviceName         = NVIDIA H100 PCIe\n\tdriverID           = DRIVER_ID_NVIDIA_PROPRIETARY\n\tdriverName         = NVIDIA\n\tdriverInfo         = 550.54.15\n\tdeviceUUID         = 4c3f0a8e-0000-0000-0000-00000000000{i}\n"
        ));
    }
    s.push_str(&format!(
        "GPU{gpus}:\n\tapiVersion         = 1.3.230\n\tdriverVersion      = 0.0.1\n\tvendorID           = 0x10005\n\tdeviceID           = 0x0000\n\tdeviceType         = PHYSICAL_DEVICE_TYPE_CPU\n\tdeviceName         = llvmpipe (LLVM 15.0.6, 256 bits)\n\tdriverName         = llvmpipe\n\tdriverInfo         = Mesa 22.3.6 (LLVM 15.0.6)\n"
    ));
    s
}

/// The full report's blocks this backend reads, in vulkaninfo 1.3's layout.
fn h100_full(gpus: usize, with_bus_info: bool) -> String {
    let mut s =
        String::from("Device Properties and Extensions:\n=================================\n");
    for i in 0..gpus {
        s.push_str(&format!(
            "GPU{i}:\nVkPhysicalDeviceProperties:\n---------------------------\n\tapiVersion        = 1.3.260 (4206852)\n\tvendorID          = 0x10de\n\tdeviceID          = 0x2331\n\tdeviceType        = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU\n\tdeviceName        = NVIDIA H100 PCIe\n\n"
        ));
        if with_bus_info {
            s.push_str(&format!(
                "VkPhysicalDevicePCIBusInfoPropertiesEXT:\n----------------------------------------\n\tpciDomain   = 0\n\tpciBus      = {}\n\tpciDevice   = 0\n\tpciFunction = 0\n\n",
                [0x5e, 0x3b][i % 2]
            ));
        }
        s.push_str("VkPhysicalDeviceMemoryProperties:\n=================================\nmemoryHeaps: count = 2\n\tmemoryHeaps[0]:\n\t\tsize   = 85520809984 (0x13e8000000) (79.65 GiB)\n\t\tflags: count = 1\n\t\t\tMEMORY_HEAP_DEVICE_LOCAL_BIT\n\tmemoryHeaps[1]:\n\t\tsize   = 67435630592 (0xfb3800000) (62.80 GiB)\n\t\tflags:\n\t\t\tNone\nmemoryTypes: count = 1\n\tmemoryTypes[0]:\n\t\theapIndex     = 0\n\t\tpropertyFlags = 0x0001: count = 1\n\t\t\tMEMORY_PROPERTY_DEVICE_LOCAL_BIT\n");
    }
    s
}

#[test]
fn gpu_merges_into_its_pci_device_by_id() {
    let f = Fake::new();
    f.pci("0000:3b:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.vulkaninfo(&h100_summary(1), &h100_full(1, false));
    let r = f.detect();
    let mine: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| w.backend == "vulkan")
        .collect();
    assert!(mine.is_empty(), "{mine:?}");
    let gpus: Vec<_> = r.by_family(Family::Gpu).collect();
    assert_eq!(gpus.len(), 1, "listed once: {:?}", r.devices);
    let g = gpus[0];
    assert_eq!(g.id, "pci:0000:3b:00.0");
    assert_eq!(g.name, "NVIDIA H100 PCIe");
    assert_eq!(g.vendor, "nvidia");
    assert_eq!(
        g.memory_bytes,
        Some(85_520_809_984),
        "device-local heap only"
    );
    assert_eq!(g.extra["vulkan_api_version"], "1.3.260");
    assert_eq!(g.extra["vulkan_driver_version"], "550.54.15.0");
    assert_eq!(g.extra["vulkan_device_type"], "discrete_gpu");
    assert_eq!(
        g.extra["vulkan_device_uuid"],
        "4c3f0a8e-0000-0000-0000-000000000000"
    );
    assert_eq!(
        g.driver.as_deref(),
        Some("nvidia"),
        "filled from the PCI scan"
    );
    assert_eq!(g.source, "vulkaninfo+pci-sysfs");
    let cpu = r.device("cpu").unwrap();
    assert!(cpu.extra["vulkan_cpu_devices"].starts_with("llvmpipe"));
    assert!(r.summary.has_accelerator);
    assert_eq!(r.summary.accelerator_count, 1);
}

#[test]
fn identical_gpus_pair_by_bus_info_else_by_order() {
    // With bus info the full report's addresses win (given in reverse order).
    let f = Fake::new();
    f.pci("0000:3b:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.pci("0000:5e:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.vulkaninfo(&h100_summary(2), &h100_full(2, true));
    let r = f.detect();
    let gpus: Vec<_> = r.by_family(Family::Gpu).collect();
    assert_eq!(gpus.len(), 2);
    let on_5e = r.device("pci:0000:5e:00.0").unwrap();
    assert_eq!(on_5e.extra["vulkan_index"], "0");
    assert_eq!(
        on_5e.extra["vulkan_device_uuid"],
        "4c3f0a8e-0000-0000-0000-000000000000"
    );

    // Without it, the k-th Vulkan device takes the k-th address; the UUID is
    // left out because the pairing is a guess among identical boards.
    let f = Fake::new();
    f.pci("0000:3b:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.pci("0000:5e:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.vulkaninfo(&h100_summary(2), &h100_full(2, false));
    let r = f.detect();
    let gpus: Vec<_> = r.by_family(Family::Gpu).collect();
    assert_eq!(gpus.len(), 2, "{:?}", r.devices);
    assert!(gpus.iter().all(|g| g.source.contains("vulkaninfo")));
    assert!(
        gpus.iter()
            .all(|g| !g.extra.contains_key("vulkan_device_uuid"))
    );
    assert_eq!(
        r.device("pci:0000:3b:00.0").unwrap().extra["vulkan_index"],
        "0"
    );
}

#[test]
fn unmatched_gpu_keeps_a_vulkan_id_and_a_warning() {
    // Two H100 functions on PCI, Vulkan sees only one: which one is unknown.
    let f = Fake::new();
    f.pci("0000:3b:00.0", "0x10de", "0x2331", "0x030200", "nvidia");
    f.pci("0000:5e:00.0", "0x10de", "0x2331", "0x030200", "vfio-pci");
    f.vulkaninfo(&h100_summary(1), &h100_full(1, false));
    let r = f.detect();
    assert!(r.device("vulkan:0").is_some());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "vulkan" && w.message.contains("cannot tell"))
    );
}

#[test]
fn failing_tool_is_a_warning() {
    let f = Fake::new();
    write_script(
        f.bin.path(),
        "vulkaninfo",
        "echo 'ERROR: vkCreateInstance failed' >&2; exit 1\n",
    );
    let r = f.detect();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "vulkan" && w.message.contains("vkCreateInstance"))
    );
    let cpu = r.device("cpu").unwrap();
    assert!(!cpu.extra.contains_key("vulkan_cpu_devices"));
}

// ---- the real tool --------------------------------------------------------

fn real_tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

#[test]
fn real_vulkaninfo_matches_detection() {
    let Some(tool) = real_tool("vulkaninfo") else {
        eprintln!("skipped: vulkaninfo is not installed");
        return;
    };
    let out = std::process::Command::new(&tool)
        .arg("--summary")
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!("skipped: vulkaninfo --summary failed (no Vulkan driver?)");
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // Count devices and CPU devices independently of the library.
    let n_dev = text
        .lines()
        .filter(|l| l.starts_with("GPU") && l.ends_with(':'))
        .count();
    let mut cpu_names: Vec<&str> = Vec::new();
    let mut section: Vec<&str> = Vec::new();
    for l in text.lines().chain(std::iter::once("GPU_END:")) {
        if l.starts_with("GPU") && l.ends_with(':') {
            let val = |k: &str| {
                section
                    .iter()
                    .find(|x| x.trim().starts_with(k))
                    .and_then(|x| x.split_once('='))
                    .map(|(_, v)| v.trim())
            };
            if val("deviceType") == Some("PHYSICAL_DEVICE_TYPE_CPU") {
                cpu_names.extend(val("deviceName"));
            }
            section.clear();
        } else {
            section.push(l);
        }
    }
    // Only the system and vulkan backends: accelerators can come from Vulkan alone.
    let only = DetectOptions {
        backends: BackendSet::empty()
            .with(BackendId::System)
            .with(BackendId::Vulkan),
        families: None,
    };
    let r = detect(&ProbeOptions::default(), &only);
    let vk_gpus = r
        .devices
        .iter()
        .filter(|d| d.extra.contains_key("vulkan_index"))
        .count();
    assert_eq!(vk_gpus + cpu_names.len(), n_dev, "{:?}", r.devices);
    let cpu = r.device("cpu").unwrap();
    for n in &cpu_names {
        assert!(
            cpu.extra["vulkan_cpu_devices"].contains(n),
            "{n} noted on the CPU"
        );
    }
    assert_eq!(
        r.summary.has_accelerator,
        vk_gpus > 0,
        "software Vulkan devices (llvmpipe) never count as accelerators"
    );
    eprintln!(
        "vulkaninfo: {n_dev} devices, {} CPU implementations: {cpu_names:?}",
        cpu_names.len()
    );
}

// ---- robustness -----------------------------------------------------------

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn truncated_or_corrupted_reports_never_panic(cut in 0usize..60_000, flip in 0usize..60_000, byte in 0u8..=255) {
        for rel in [SUMMARY, FULL] {
            let b = support::damaged(std::fs::read(fixture(rel)).unwrap(), cut, flip, byte);
            let _ = parse("vulkaninfo", &b);
        }
        let mut s = h100_full(2, true).into_bytes();
        s.truncate(cut % (s.len() + 1));
        let _ = parse("vulkaninfo", &s);
    }
}

// ---- the matrix path llama.cpp's Vulkan backend takes ---------------------

/// The accelerators of a real full report, as the planner sees them.
fn plan_devices_of(capture: &str) -> Vec<ai_hwaccel::plan::PlanDevice> {
    let mut out = parse("vulkaninfo", &std::fs::read(fixture(capture)).unwrap());
    // As detection does: each device's spec database entry.
    ai_hwaccel::spec::attach(&mut out.devices);
    out.devices
        .iter()
        .filter(|d| d.is_accelerator())
        .map(ai_hwaccel::plan::PlanDevice::from_device)
        .collect()
}

/// Each driver's extension list gives the path llama.cpp would print
/// (`matrix cores:`), under its vendor rule: NVIDIA 581.57 lists
/// `VK_NV_cooperative_matrix2` (RTX 2050), 550.144.03 only the KHR
/// extension (RTX 4060), 440.59 only NVIDIA's own 2019 extension, which
/// llama.cpp does not use (RTX 2080 Ti); AMD's Windows driver lists the KHR
/// extension on a Rembrandt iGPU, which llama.cpp refuses under AMD's own
/// drivers below RDNA3 (the GPU has no spec entry, so no architecture: the
/// rule sees none, as for any part it cannot class); Mesa 25.0.7 lists it on
/// an Xe-LP iGPU, which llama.cpp takes on Intel only from Xe2.
#[test]
fn the_drivers_extensions_give_llama_cpps_matrix_path() {
    use ai_hwaccel::plan::runtime::VulkanMatrixCores as M;
    let paths = |capture: &str| -> Vec<(String, Option<M>)> {
        plan_devices_of(capture)
            .into_iter()
            .map(|d| (d.name, d.vulkan_matrix_cores))
            .collect()
    };
    assert_eq!(
        paths(
            "vulkaninfo/varcon__vulkaninfo-text__rtx2050-nvidia-581.57-and-radeon-igpu-amd-25.9.1.txt"
        ),
        [
            ("NVIDIA GeForce RTX 2050".to_string(), Some(M::NvCoopmat2)),
            ("AMD Radeon(TM) Graphics".to_string(), Some(M::None)),
        ]
    );
    assert_eq!(
        paths("vulkaninfo/bushbot__vulkaninfo-text__rtx4060-nvidia-550.144.03-and-llvmpipe.txt"),
        [("NVIDIA GeForce RTX 4060".to_string(), Some(M::KhrCoopmat))]
    );
    assert_eq!(
        paths("vulkaninfo/griddly__vulkaninfo-text__rtx2080ti-nvidia-440.59.txt"),
        [("GeForce RTX 2080 Ti".to_string(), Some(M::None))]
    );
    assert_eq!(
        paths(
            "vulkaninfo/hrm-c-vulkan__vulkaninfo-text__iris-xe-rpl-u-mesa-25.0.7-and-llvmpipe.txt"
        ),
        [(
            "Intel(R) Iris(R) Xe Graphics (RPL-U)".to_string(),
            Some(M::None)
        )]
    );
    // A summary lists no extensions: unknown, not "none".
    assert_eq!(
        paths(
            "vulkaninfo/steamvr-compositor-bugreport__vulkaninfo-summary__rx7800xt-radv-mesa-26.0.8__validation-warnings.txt"
        ),
        [("AMD Radeon RX 7800 XT".to_string(), None)]
    );
    // A device string names no driver.
    assert_eq!(
        ai_hwaccel::plan::PlanDevice::from_device_string("1xrtx-2080-ti").unwrap()[0]
            .vulkan_matrix_cores,
        None
    );
}

/// A Turing card whose driver lists no cooperative matrix llama.cpp takes
/// (the RTX 2080 Ti of driver 440.59): a llama.cpp Vulkan plan has no
/// prompt rate and says why, while its CUDA plan, the same card named by a
/// device string, and a driver that lists `VK_KHR_cooperative_matrix` (the
/// RTX 4060 of 550.144.03) keep theirs.
#[test]
fn a_driver_without_cooperative_matrices_leaves_vulkan_prefill_unknown() {
    use ai_hwaccel::plan::runtime::{GgmlBackend, RuntimeKind};
    use ai_hwaccel::plan::{InferenceOptions, load_model, plan_inference};
    let spec = load_model("llama-3.2-3b").unwrap().spec;
    let opts = |backend| InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        backend,
        context: Some(4096),
        input_len: Some(512),
        ..Default::default()
    };
    let turing =
        plan_devices_of("vulkaninfo/griddly__vulkaninfo-text__rtx2080ti-nvidia-440.59.txt");
    let vk = plan_inference(&spec, &turing, &opts(Some(GgmlBackend::Vulkan)));
    let best = &vk.plans[0];
    assert_eq!(best.prefill_tokens_per_s, None);
    assert_eq!(best.ttft_ms, None);
    assert!(
        best.decode_tokens_per_s.is_some(),
        "decode reads memory, not matrices"
    );
    let warning = vk
        .warnings
        .iter()
        .find(|w| w.contains("matrix cores: none"))
        .unwrap_or_else(|| panic!("{:#?}", vk.warnings));
    assert!(
        warning.starts_with("pci:0000:03:00.0 (GeForce RTX 2080 Ti)"),
        "{warning}"
    );
    let cuda = plan_inference(&spec, &turing, &opts(None));
    assert!(cuda.plans[0].prefill_tokens_per_s.is_some());
    assert!(!cuda.warnings.iter().any(|w| w.contains("matrix cores")));
    let named = ai_hwaccel::plan::PlanDevice::from_device_string("1xrtx-2080-ti").unwrap();
    let named_vk = plan_inference(&spec, &named, &opts(Some(GgmlBackend::Vulkan)));
    assert!(named_vk.plans[0].prefill_tokens_per_s.is_some());
    let ada = plan_devices_of(
        "vulkaninfo/bushbot__vulkaninfo-text__rtx4060-nvidia-550.144.03-and-llvmpipe.txt",
    );
    let ada_vk = plan_inference(&spec, &ada, &opts(Some(GgmlBackend::Vulkan)));
    assert!(ada_vk.plans[0].prefill_tokens_per_s.is_some());
    assert!(!ada_vk.warnings.iter().any(|w| w.contains("matrix cores")));
}
