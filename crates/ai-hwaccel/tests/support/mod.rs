//! Helpers shared by the integration tests: fixture paths, fake tools, fake
//! PCI functions in a fake sysfs root, and detection over such a root.
//! Each test file includes it with `mod support;` and uses what it needs.
#![allow(dead_code, reason = "each test binary uses a different subset")]
#![allow(clippy::disallowed_methods, reason = "tests build fake roots")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::BackendId;
use ai_hwaccel::probe::ProbeOptions;
use ai_hwaccel::{BackendSet, DetectOptions, Registry, detect};

/// A file or folder under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Every vendor tool a detection backend may run (fake ones replace them in
/// hang and daemon tests).
pub const VENDOR_TOOLS: [&str; 13] = [
    "nvidia-smi",
    "amd-smi",
    "rocm-smi",
    "xpu-smi",
    "hl-smi",
    "neuron-ls",
    "tpu-info",
    "npu-smi",
    "vulkaninfo",
    "clinfo",
    "xbutil",
    "fpgainfo",
    "qaic-util",
];

/// An executable `/bin/sh` script named `name` in `dir` running `body`.
pub fn write_script(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A fake PCI function: ids as lowercase hex without `0x`, as sysfs prints them after it.
pub struct FakePci<'a> {
    /// Vendor id (`10de`).
    pub vendor: &'a str,
    /// Device id (`2330`).
    pub device: &'a str,
    /// Class code (`030200`).
    pub class: &'a str,
    /// Bound driver, if any.
    pub driver: Option<&'a str>,
    /// `numa_node` file content, if written.
    pub numa: Option<i32>,
    /// Write a 16 GT/s x16 current link.
    pub link: bool,
}

impl FakePci<'_> {
    /// Write the function under `root` at `addr` the way the kernel lays it
    /// out: a directory under `/sys/devices/pci0000:00`, a symlink to it in
    /// `/sys/bus/pci/devices`, and a `driver` symlink. Returns the directory.
    pub fn write(&self, root: &Path, addr: &str) -> PathBuf {
        let d = root.join("sys/devices/pci0000:00").join(addr);
        std::fs::create_dir_all(&d).unwrap();
        let mut files = vec![
            ("vendor", format!("0x{}\n", self.vendor)),
            ("device", format!("0x{}\n", self.device)),
            ("class", format!("0x{}\n", self.class)),
        ];
        if let Some(n) = self.numa {
            files.push(("numa_node", format!("{n}\n")));
        }
        if self.link {
            files.push(("current_link_speed", "16.0 GT/s PCIe\n".to_string()));
            files.push(("current_link_width", "16\n".to_string()));
        }
        for (f, v) in files {
            std::fs::write(d.join(f), v).unwrap();
        }
        if let Some(drv) = self.driver {
            std::fs::create_dir_all(root.join("sys/bus/pci/drivers").join(drv)).unwrap();
            std::os::unix::fs::symlink(
                format!("../../../../bus/pci/drivers/{drv}"),
                d.join("driver"),
            )
            .unwrap();
        }
        std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../devices/pci0000:00/{addr}"),
            root.join("sys/bus/pci/devices").join(addr),
        )
        .unwrap();
        d
    }
}

/// Detection over the fake `root` with tools from `bin`, the given
/// environment and only the given backends.
pub fn detect_fake(
    root: &Path,
    bin: &Path,
    env: &[(&str, &str)],
    backends: &[BackendId],
) -> Registry {
    let opts = ProbeOptions {
        root: root.to_path_buf(),
        tool_path: Some(vec![bin.to_path_buf()]),
        env: Some(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..ProbeOptions::default()
    };
    let backends = backends.iter().fold(BackendSet::empty(), |s, &b| s.with(b));
    detect(
        &opts,
        &DetectOptions {
            backends,
            families: None,
        },
    )
}

/// `bytes` damaged the way the robustness property tests damage captures:
/// cut to `cut` bytes, then the byte at `flip` (modulo the length) set to
/// `byte`.
pub fn damaged(mut bytes: Vec<u8>, cut: usize, flip: usize, byte: u8) -> Vec<u8> {
    bytes.truncate(cut.min(bytes.len()));
    if !bytes.is_empty() {
        let i = flip % bytes.len();
        bytes[i] = byte;
    }
    bytes
}

/// `bytes` with each `(position, byte)` edit applied, positions given as a
/// fraction of the length (a property test's scattered corruption).
pub fn scattered(bytes: &[u8], edits: &[(f64, u8)]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if !b.is_empty() {
        for &(pos, byte) in edits {
            let i = ((b.len() as f64) * pos) as usize % b.len();
            b[i] = byte;
        }
    }
    b
}
