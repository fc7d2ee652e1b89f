//! When the generic GPU APIs (Vulkan, OpenCL) can add facts to what the
//! vendor backends found: the [`super::Gate`] of the `vulkan` and `opencl`
//! backends.
//!
//! Enumerating them is the slow part of a cold start: `clinfo` makes pocl
//! compile its kernel library on an empty cache (≈ 640 ms), `vulkaninfo`
//! loads every ICD (≈ 55 ms), and on a machine whose GPUs a vendor backend
//! already described they find nothing new. Both APIs can only list a
//! device that a kernel driver exposes, so they can add facts only where
//! one of these exists and no vendor backend described it:
//!
//! - a **DRM render node** (`/sys/class/drm/renderD*`): of a PCI function
//!   no vendor backend reported with its memory size, or of a platform
//!   device (Mali, Adreno, PowerVR, Asahi, … from the device tree) whose
//!   driver no vendor backend reported;
//! - a **GPU-class PCI function** (class `0x03xxxx`) bound to a driver
//!   that exposes no DRM node at all (NVIDIA's driver without `nvidia-drm`:
//!   Vulkan and OpenCL reach it through `/dev/nvidia*`), not described by a
//!   vendor backend.
//!
//! A GPU-class function with no driver bound is invisible to both APIs, and
//! one whose driver only exposes a display node (`card*` without `renderD*`:
//! cirrus, bochs, ast, mgag200 — virtual machines' consoles and BMCs) has no
//! Vulkan or OpenCL driver; neither makes the gate pass. Software devices
//! (llvmpipe, pocl) add no facts about hardware, so a machine with no GPU
//! skips both backends; they still report them whenever they run (asked by
//! name with `--backends`, or `--full`).

use std::collections::BTreeSet;

use crate::model::{Device, PciAddress};
use crate::probe::{ProbeExt, join};

use super::pci::pci_address_in_path;
use super::{BackendId, Context};

const DRM_CLASS: &str = "/sys/class/drm";

/// DRM drivers whose render nodes are not GPUs: `vgem` is the kernel's
/// virtual GEM provider for software rendering (no Vulkan/OpenCL driver).
const NOT_GPU_RENDER_DRIVERS: &[&str] = &["vgem"];

/// Backends whose devices say nothing a GPU API could add to: host facts,
/// the bare PCI listing, and the GPU APIs themselves.
fn is_vendor_backend(id: BackendId) -> bool {
    !matches!(
        id,
        BackendId::System | BackendId::Pci | BackendId::Vulkan | BackendId::OpenCl
    )
}

/// What the vendor backends described: the PCI functions they reported with
/// a memory size, and the drivers of every device they reported.
struct Described {
    addresses: BTreeSet<PciAddress>,
    drivers: BTreeSet<String>,
}

impl Described {
    fn from(found: &[(BackendId, &[Device])]) -> Self {
        let mut addresses = BTreeSet::new();
        let mut drivers = BTreeSet::new();
        let vendor_devices = found
            .iter()
            .filter(|(id, _)| is_vendor_backend(*id))
            .flat_map(|(_, devs)| devs.iter())
            .filter(|d| d.parent.is_none());
        for d in vendor_devices {
            if let (Some(a), Some(_)) = (d.pci_address, d.memory_bytes) {
                addresses.insert(a);
            }
            if let Some(drv) = &d.driver {
                drivers.insert(drv.clone());
            }
        }
        Described { addresses, drivers }
    }
}

/// Why the GPU APIs can add facts here (for the debug log), or `None`.
pub(super) fn reason_to_run(ctx: &Context, found: &[(BackendId, &[Device])]) -> Option<String> {
    let described = Described::from(found);
    let probe = ctx.probe;
    for node in probe
        .list_or_empty(DRM_CLASS)
        .into_iter()
        .filter(|n| n.starts_with("renderD"))
    {
        let dev = join(&join(DRM_CLASS, &node), "device");
        let Ok(target) = probe.read_link(&dev) else {
            continue;
        };
        match pci_address_in_path(&target) {
            Some(a) if described.addresses.contains(&a) => {}
            Some(a) => {
                return Some(format!(
                    "{node} on PCI {a}, not described by a vendor backend"
                ));
            }
            None => {
                let driver = probe.link_name(&join(&dev, "driver"));
                match driver {
                    Some(d) if NOT_GPU_RENDER_DRIVERS.contains(&d.as_str()) => {}
                    Some(d) if described.drivers.contains(&d) => {}
                    other => {
                        return Some(format!(
                            "{node}: a platform GPU (driver {}) no vendor backend reported",
                            other.as_deref().unwrap_or("unknown")
                        ));
                    }
                }
            }
        }
    }
    for p in &ctx.pci().devices {
        let gpu_class = p.class.is_some_and(|c| c >> 16 == 0x03);
        if !gpu_class || p.driver.is_none() || described.addresses.contains(&p.address) {
            continue;
        }
        // Its DRM nodes: none at all (a driver reached through its own
        // device files), or a render node, make the APIs useful; a display
        // node alone (`card*`) does not.
        let why = match probe.list_dir(&join(&p.sysfs_path, "drm")) {
            Err(_) => "without a DRM node",
            Ok(nodes) if nodes.iter().any(|n| n.starts_with("renderD")) => "with a render node",
            Ok(_) => continue,
        };
        return Some(format!(
            "GPU {} bound to {} {why}, not described by a vendor backend",
            p.address,
            p.driver.as_deref().unwrap_or_default()
        ));
    }
    None
}

/// The gate of the `vulkan` and `opencl` backends (see the module doc).
pub(super) fn gpu_api_can_add_facts(ctx: &Context, found: &[(BackendId, &[Device])]) -> bool {
    match reason_to_run(ctx, found) {
        Some(why) => {
            tracing::debug!(%why, "running the GPU API backends");
            true
        }
        None => false,
    }
}
