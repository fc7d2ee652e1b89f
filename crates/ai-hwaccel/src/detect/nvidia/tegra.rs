//! NVIDIA Jetson (Tegra) integrated GPUs, which `nvidia-smi` does not
//! describe: on JetPack 5 there is no `nvidia-smi`, and the one of JetPack 6
//! (driver 540.4.0) prints `Orin (nvgpu)` with every field `N/A` and memory
//! `Not Supported` (captures in public issue threads:
//! dusty-nv/jetson-containers#1403, ultralytics/ultralytics#20680,
//! anduril/jetpack-nixos#371).
//!
//! What is read instead, all from files:
//! - the SoC from the device tree's root `compatible`
//!   (`nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0…`);
//!   only the SoCs of [`SOCS`] are handled here (a Tegra this table does not
//!   know, such as Thor's tegra264 with its OpenRM driver and working
//!   `nvidia-smi`, goes through the usual NVML / nvidia-smi path);
//! - the board name from the device tree's `model`;
//! - the Jetson Linux (L4T) release from `/etc/nv_tegra_release`
//!   (`# R36 (release), REVISION: 4.4, GCID: …, BOARD: generic, EABI: aarch64, DATE: …`);
//! - the GPU's platform device under `/sys/devices/platform` (or its `bus@0`)
//!   and the driver bound to it (`nvgpu`);
//! - memory: the GPU has none of its own and uses the system memory, so its
//!   pool is `/proc/meminfo` `MemTotal` (CUDA on a Jetson reports the same
//!   total as the device's memory), marked shared.

use crate::model::{Device, Family, SharedMemory};
use crate::probe::{Probe, ProbeExt, join};

use super::super::apple::parse_dt_strings;
use super::super::memory::parse_meminfo;
use super::{VENDOR, gpu_id};

/// Device-tree files of the root node, first found wins.
const DT_ROOTS: &[&str] = &["/proc/device-tree", "/sys/firmware/devicetree/base"];
/// Jetson Linux release file.
const NV_TEGRA_RELEASE: &str = "/etc/nv_tegra_release";
/// Where the GPU's platform device sits (L4T r35 lists it at the top,
/// r36 kernels under `bus@0`).
const PLATFORM_DIRS: &[&str] = &["/sys/devices/platform", "/sys/devices/platform/bus@0"];

/// A Tegra SoC with an integrated GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TegraSoc {
    /// Device-tree SoC id (`tegra234`).
    pub soc: &'static str,
    /// Jetson family built on it.
    pub family: &'static str,
    /// GPU architecture.
    pub architecture: &'static str,
    /// Device-tree node name of the GPU (`ga10b`).
    pub gpu_node: &'static str,
    /// CUDA compute capability.
    pub compute_capability: &'static str,
}

/// Jetson SoCs. Compute capabilities: NVIDIA "CUDA GPUs" list
/// (developer.nvidia.com/cuda-gpus: Jetson AGX Orin / Orin NX / Orin Nano
/// 8.7, AGX Xavier / Xavier NX 7.2, TX2 6.2, Nano / TX1 5.3). GPU node
/// names: the `gpu@…` nodes of the Linux device trees (`nvidia,gm20b` in
/// tegra210.dtsi, `nvidia,gp10b` in tegra186.dtsi, `nvidia,gv11b` in
/// tegra194.dtsi) and L4T's `ga10b` for tegra234.
pub const SOCS: &[TegraSoc] = &[
    TegraSoc {
        soc: "tegra234",
        family: "Jetson Orin",
        architecture: "Ampere",
        gpu_node: "ga10b",
        compute_capability: "8.7",
    },
    TegraSoc {
        soc: "tegra194",
        family: "Jetson Xavier",
        architecture: "Volta",
        gpu_node: "gv11b",
        compute_capability: "7.2",
    },
    TegraSoc {
        soc: "tegra186",
        family: "Jetson TX2",
        architecture: "Pascal",
        gpu_node: "gp10b",
        compute_capability: "6.2",
    },
    TegraSoc {
        soc: "tegra210",
        family: "Jetson Nano / TX1",
        architecture: "Maxwell",
        gpu_node: "gm20b",
        compute_capability: "5.3",
    },
];

/// The known Tegra SoC a root `compatible` list names, if any.
pub fn tegra_soc(compatible: &[String]) -> Option<&'static TegraSoc> {
    compatible.iter().find_map(|c| {
        let id = c.strip_prefix("nvidia,")?;
        SOCS.iter().find(|s| s.soc == id)
    })
}

/// The first line of `/etc/nv_tegra_release`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct L4tRelease {
    /// Major release (`R36`).
    pub release: String,
    /// `REVISION` (`4.4`).
    pub revision: Option<String>,
    /// `BOARD` (`generic`, `t186ref`).
    pub board: Option<String>,
}

impl L4tRelease {
    /// `R36.4.4`.
    pub fn version(&self) -> String {
        match &self.revision {
            Some(r) => format!("{}.{r}", self.release),
            None => self.release.clone(),
        }
    }
}

/// Parse `/etc/nv_tegra_release`; `None` when its first line is not the
/// `# Rnn (release), REVISION: …` line.
pub fn parse_nv_tegra_release(text: &str) -> Option<L4tRelease> {
    let line = text.lines().next()?.trim().strip_prefix('#')?.trim();
    let mut fields = line.split(',').map(str::trim);
    let release = fields.next()?.strip_suffix("(release)")?.trim();
    let digits = release.strip_prefix('R')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut out = L4tRelease {
        release: release.to_string(),
        ..L4tRelease::default()
    };
    for f in fields {
        let Some((k, v)) = f.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "REVISION" if !v.is_empty() => out.revision = Some(v.to_string()),
            "BOARD" if !v.is_empty() => out.board = Some(v.to_string()),
            _ => {}
        }
    }
    Some(out)
}

/// The device tree's root `compatible` list, when the machine has one.
fn dt_file(probe: &dyn Probe, name: &str) -> Option<Vec<String>> {
    DT_ROOTS
        .iter()
        .find_map(|r| probe.read(&join(r, name)).ok())
        .map(|b| parse_dt_strings(&b))
}

/// The GPU's platform device (`17000000.ga10b`, `17000000.gpu`) and the
/// driver bound to it.
fn platform_gpu(probe: &dyn Probe, soc: &TegraSoc) -> Option<(String, Option<String>)> {
    PLATFORM_DIRS.iter().find_map(|dir| {
        probe.list_or_empty(dir).into_iter().find_map(|name| {
            let (_, node) = name.split_once('.')?;
            (node == soc.gpu_node || node == "gpu").then(|| {
                let path = join(dir, &name);
                let driver = probe.link_name(&join(&path, "driver"));
                (path, driver)
            })
        })
    })
}

/// The Jetson's integrated GPU, or `None` when the device tree names no
/// known Tegra SoC (then the usual NVIDIA path runs).
pub(crate) fn detect(probe: &dyn Probe, warnings: &mut Vec<String>) -> Option<Device> {
    let compatible = dt_file(probe, "compatible")?;
    let soc = tegra_soc(&compatible)?;
    let model = dt_file(probe, "model").and_then(|m| m.into_iter().next());
    let mut d = Device::new(
        gpu_id(None, None, 0),
        format!("NVIDIA {} GPU", soc.family),
        VENDOR,
        Family::Gpu,
        "devicetree+tegra",
    );
    d.index = Some(0);
    d.architecture = Some(soc.architecture.to_string());
    d.compute_capability = Some(soc.compute_capability.to_string());
    d.extra.insert("soc".into(), soc.soc.to_string());
    d.extra.insert("integrated".into(), "true".into());
    if let Some(board) = compatible.first() {
        d.extra.insert("compatible".into(), board.clone());
    }
    if let Some(m) = model {
        d.extra.insert("board".into(), m);
    }
    match probe.read_text(NV_TEGRA_RELEASE) {
        Ok(text) => match parse_nv_tegra_release(&text) {
            Some(r) => {
                d.driver_version = Some(format!("L4T {}", r.version()));
                if let Some(b) = &r.board {
                    d.extra.insert("l4t_board".into(), b.clone());
                }
            }
            None => warnings.push(format!(
                "{NV_TEGRA_RELEASE}: first line is not a `# Rnn (release), REVISION: …` line"
            )),
        },
        Err(e) if !e.is_absent() => warnings.push(e.to_string()),
        Err(_) => {}
    }
    match platform_gpu(probe, soc) {
        Some((path, driver)) => {
            d.extra.insert("platform_device".into(), path);
            d.driver = driver;
        }
        None => {
            d.available = false;
            d.unavailable_reason = Some(format!(
                "no {} GPU platform device under /sys/devices/platform",
                soc.gpu_node
            ));
        }
    }
    let meminfo = probe
        .read_text("/proc/meminfo")
        .ok()
        .map(|t| parse_meminfo(&t));
    let pool = meminfo.as_ref().and_then(|m| m.get("MemTotal"));
    d.memory_bytes = pool;
    d.memory_free_bytes = meminfo.as_ref().and_then(|m| m.get("MemAvailable"));
    d.shared_memory = Some(SharedMemory {
        pool_bytes: pool,
        device_limit_bytes: None,
        source: format!(
            "pool: {}; GPU limit: none of its own (a Jetson's GPU uses the system memory)",
            if pool.is_some() {
                "/proc/meminfo MemTotal"
            } else {
                "unknown"
            }
        ),
    });
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l4t_release_lines() {
        // rbonghi/jetson_stats#677 (AGX Orin, JetPack 6.2.1).
        let r = parse_nv_tegra_release(
            "# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025\n",
        )
        .unwrap();
        assert_eq!(r.version(), "R36.4.4");
        assert_eq!(r.board.as_deref(), Some("generic"));
        // pokusew/ros-setup nvidia-jetson-tx2/L4T.md (TX2, L4T 32.5.1).
        let r = parse_nv_tegra_release(
            "# R32 (release), REVISION: 5.1, GCID: 26202423, BOARD: t186ref, EABI: aarch64, DATE: Fri Feb 19 16:50:29 UTC 2021",
        )
        .unwrap();
        assert_eq!(r.version(), "R32.5.1");
        assert_eq!(r.board.as_deref(), Some("t186ref"));
        assert_eq!(
            parse_nv_tegra_release("TARGET_USERSPACE_LIB_DIR=nvidia\n"),
            None
        );
        assert_eq!(parse_nv_tegra_release("# Rxx (release)"), None);
        assert_eq!(parse_nv_tegra_release(""), None);
    }

    /// Whole `/etc/nv_tegra_release` files as `cat` printed them on real
    /// Jetsons (provenance in tests/fixtures/SOURCES.md, "nv-tegra-release"):
    /// the release line first, then the JetPack 6/7 `KERNEL_VARIANT` and
    /// `TARGET_USERSPACE_LIB_DIR` lines, which say nothing of the release.
    #[test]
    fn l4t_release_files_of_real_jetsons() {
        macro_rules! capture {
            ($f:literal) => {
                include_str!(concat!("../../../tests/fixtures/nv-tegra-release/", $f))
            };
        }
        for (text, version, board) in [
            (
                capture!("boxcutter-kvm__agx-orin-jetpack-6.2.1__r36.4.4.txt"),
                "R36.4.4",
                "generic",
            ),
            (
                capture!("boxcutter-kvm__agx-orin-jetpack-6.2__r36.4.3.txt"),
                "R36.4.3",
                "generic",
            ),
            (
                capture!("boxcutter-kvm__agx-orin-jetpack-5.1.2__r35.4.1.txt"),
                "R35.4.1",
                "t186ref",
            ),
            (
                capture!("dokaben1003-readme__jetson-nano__r32.7.4.txt"),
                "R32.7.4",
                "t210ref",
            ),
            (
                capture!("sionna-rk-doc__agx-orin__r36.3.0-rst-indented.txt"),
                "R36.3.0",
                "generic",
            ),
            (
                capture!("sionna-rk-doc__jetson-thor__r38.2.1-rst-indented.txt"),
                "R38.2.1",
                "generic",
            ),
        ] {
            let r = parse_nv_tegra_release(text).unwrap_or_else(|| panic!("{text:?}"));
            assert_eq!(r.version(), version);
            assert_eq!(r.board.as_deref(), Some(board), "{version}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn release_lines_never_panic(text in ".{0,200}") {
            if let Some(r) = parse_nv_tegra_release(&text) {
                proptest::prop_assert!(r.release.starts_with('R'));
            }
        }
    }

    #[test]
    fn socs_from_compatible() {
        let c = parse_dt_strings(
            b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0nvidia,tegra23x\0",
        );
        assert_eq!(tegra_soc(&c).map(|s| s.soc), Some("tegra234"));
        let thor = parse_dt_strings(b"nvidia,p3971-0089+p3834-0008\0nvidia,tegra264\0");
        assert_eq!(tegra_soc(&thor), None, "Thor goes through nvidia-smi");
        let apple = parse_dt_strings(b"apple,j314c\0apple,t6001\0apple,arm-platform\0");
        assert_eq!(tegra_soc(&apple), None);
    }
}
