//! The gate of the Vulkan and OpenCL backends: by default they run only
//! where a GPU that no vendor backend described could gain facts from them;
//! named with `--backends` (a set that names them) or `--full`, they always run.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools"
)]

mod support;
use support::{FakePci, write_script};

use std::path::Path;

use ai_hwaccel::{BackendId, BackendSet, DetectOptions, ProbeOptions, Registry, detect};

/// A fake root and a bin dir with `vulkaninfo` and `clinfo` that print
/// nothing useful: whether they ran shows in the registry's timings.
struct Fake {
    root: tempfile::TempDir,
    bin: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        let f = Fake {
            root: tempfile::tempdir().unwrap(),
            bin: tempfile::tempdir().unwrap(),
        };
        write_script(f.bin.path(), "vulkaninfo", "echo 'Devices:'\n");
        write_script(f.bin.path(), "clinfo", "echo 'Number of platforms 0'\n");
        f
    }

    fn pci(&self, addr: &str, vendor: &str, device: &str, class: &str, driver: Option<&str>) {
        FakePci {
            vendor,
            device,
            class,
            driver,
            numa: None,
            link: false,
        }
        .write(self.root.path(), addr);
    }

    /// A DRM node `name` (`renderD128`, `card0`) of the device at `dev`
    /// (a directory under the fake root), linked from /sys/class/drm.
    fn drm_node(&self, dev: &Path, name: &str) {
        let node = dev.join("drm").join(name);
        std::fs::create_dir_all(&node).unwrap();
        let class = self.root.path().join("sys/class/drm");
        std::fs::create_dir_all(&class).unwrap();
        std::os::unix::fs::symlink(self.inside(&node), class.join(name)).unwrap();
        std::os::unix::fs::symlink(self.inside(dev), node.join("device")).unwrap();
    }

    /// `path` as the fake machine sees it: absolute from its root (reads
    /// under a root resolve links as a chroot would).
    fn inside(&self, path: &Path) -> std::path::PathBuf {
        Path::new("/").join(path.strip_prefix(self.root.path()).unwrap())
    }

    /// A platform (device-tree) GPU bound to `driver` with a render node.
    fn platform_gpu(&self, name: &str, driver: &str) {
        let dev = self.root.path().join("sys/devices/platform").join(name);
        std::fs::create_dir_all(&dev).unwrap();
        let drv = self
            .root
            .path()
            .join("sys/bus/platform/drivers")
            .join(driver);
        std::fs::create_dir_all(&drv).unwrap();
        std::os::unix::fs::symlink(self.inside(&drv), dev.join("driver")).unwrap();
        self.drm_node(&dev, "renderD128");
    }

    fn detect(&self, backends: BackendSet) -> Registry {
        let opts = ProbeOptions {
            root: self.root.path().to_path_buf(),
            tool_path: Some(vec![self.bin.path().to_path_buf()]),
            env: Some(Default::default()),
            ..ProbeOptions::default()
        };
        detect(
            &opts,
            &DetectOptions {
                backends,
                ..Default::default()
            },
        )
    }

    /// Which of vulkan/opencl ran under the default (gated) selection.
    fn ran(&self, backends: BackendSet) -> Vec<String> {
        let r = self.detect(backends);
        r.timings
            .iter()
            .map(|t| t.backend.clone())
            .filter(|b| b == "vulkan" || b == "opencl")
            .collect()
    }
}

const BOTH: [&str; 2] = ["vulkan", "opencl"];

#[test]
fn no_gpu_class_device_skips_both() {
    let f = Fake::new();
    // A NIC and a virtio device: nothing for a GPU API to describe.
    f.pci("0000:00:03.0", "1af4", "1041", "020000", Some("virtio-pci"));
    assert!(f.ran(BackendSet::all()).is_empty());
    // Asked for: they run anyway, by name or with --full.
    assert_eq!(f.ran(BackendSet::parse("vulkan,opencl").unwrap()), BOTH);
    assert_eq!(f.ran(BackendSet::parse("vulkan").unwrap()), ["vulkan"]);
    assert_eq!(f.ran(BackendSet::full()), BOTH);
    // Removing an unrelated backend keeps the default gating.
    assert!(
        f.ran(BackendSet::all().without(BackendId::Nvidia))
            .is_empty()
    );
}

#[test]
fn unknown_gpu_with_a_render_node_runs_both() {
    let f = Fake::new();
    // A Moore Threads MTT S80 (1ed5:0101): no vendor backend knows it.
    let dev = FakePci {
        vendor: "1ed5",
        device: "0101",
        class: "030000",
        driver: Some("mtgpu"),
        numa: None,
        link: false,
    }
    .write(f.root.path(), "0000:01:00.0");
    f.drm_node(&dev, "card0");
    f.drm_node(&dev, "renderD128");
    assert_eq!(f.ran(BackendSet::all()), BOTH);
}

#[test]
fn display_only_or_unbound_gpu_class_devices_skip_both() {
    // A BMC's display (ASPEED AST2500, 1a03:2000) has a card node, no render node.
    let f = Fake::new();
    let dev = FakePci {
        vendor: "1a03",
        device: "2000",
        class: "030000",
        driver: Some("ast"),
        numa: None,
        link: false,
    }
    .write(f.root.path(), "0000:02:00.0");
    f.drm_node(&dev, "card0");
    assert!(f.ran(BackendSet::all()).is_empty());
    // A GPU with no driver bound is invisible to both APIs.
    let f = Fake::new();
    f.pci("0000:3b:00.0", "10de", "2331", "030200", None);
    assert!(f.ran(BackendSet::all()).is_empty());
}

#[test]
fn gpu_bound_without_drm_node_runs_when_no_vendor_backend_described_it() {
    // nvidia bound, no nvidia-drm, and no nvidia-smi/NVML under the fake
    // root: the nvidia backend reports it from procfs/PCI without memory.
    let f = Fake::new();
    f.pci("0000:3b:00.0", "10de", "2331", "030200", Some("nvidia"));
    assert_eq!(f.ran(BackendSet::all()), BOTH);
}

#[test]
fn gpu_a_vendor_backend_described_skips_both() {
    // An RTX 4090 that nvidia-smi describes (a real `-q -x` capture).
    let f = Fake::new();
    f.pci("0000:84:00.0", "10de", "2684", "030000", Some("nvidia"));
    let xml = support::fixture("nvidia-smi-xml/netdata-godplugin__rtx-4090-driver-535.xml");
    write_script(
        f.bin.path(),
        "nvidia-smi",
        &format!(
            "if [ \"$1\" = -q ]; then cat '{}'; else exit 1; fi\n",
            xml.display()
        ),
    );
    let r = f.detect(BackendSet::all());
    let gpu = r.device("pci:0000:84:00.0").expect("the RTX 4090");
    assert_eq!(
        gpu.memory_bytes,
        Some(24564 * 1024 * 1024),
        "{:?}",
        r.warnings
    );
    assert!(
        !r.timings.iter().any(|t| BOTH.contains(&t.backend.as_str())),
        "{:?}",
        r.timings
    );
    // Named, they still run and merge into the same device.
    assert_eq!(f.ran(BackendSet::full()), BOTH);
}

#[test]
fn platform_gpu_without_a_dedicated_backend_runs_both() {
    // An Arm Mali (panfrost) from the device tree.
    let f = Fake::new();
    f.platform_gpu("fb000000.gpu", "panfrost");
    assert_eq!(f.ran(BackendSet::all()), BOTH);
}

#[test]
fn vgem_render_node_is_not_a_gpu() {
    let f = Fake::new();
    f.platform_gpu("vgem", "vgem");
    assert!(f.ran(BackendSet::all()).is_empty());
}
