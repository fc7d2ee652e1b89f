//! The `npu` backend: client NPUs on the PCI bus — Intel NPU (`intel_vpu`)
//! and AMD XDNA (`amdxdna`), both compute-accelerator (`/sys/class/accel`)
//! drivers.
//!
//! Evidence: a PCI function with an id of the drivers' tables (Intel: Linux
//! `drivers/accel/ivpu/ivpu_drv.h` @0089d6ee, `PCI_DEVICE_ID_MTL` 0x7d1d,
//! `_ARL` 0xad1d, `_LNL` 0x643e, `_PTL_P` 0xb03e, `_WCL` 0xfd3e; AMD:
//! `drivers/accel/amdxdna/amdxdna_pci_drv.c` @063db451, 0x1502 and 0x17f0),
//! a function bound to one of the two drivers, or a `/sys/class/accel/accel<N>`
//! entry whose `device/driver` is one of them. The accel entry's `device`
//! link names the PCI function, so every NPU is one device per PCI address.
//!
//! Facts read when the driver exposes them (a missing file is unknown, a
//! garbled one a warning):
//! - `intel_vpu` (`ivpu_sysfs.c`): `npu_busy_time_us`, `npu_memory_utilization`
//!   (bytes of resident NPU buffers), `sched_mode` (`HW`/`OS`),
//!   `npu_max_frequency_mhz` (else `freq/hw_max_freq`) and
//!   `npu_current_frequency_mhz` (0 while the NPU is idle).
//! - `amdxdna` (`amdxdna_sysfs.c`): `vbnv` (`RyzenAI-npu4`), `device_type`,
//!   `fw_version`.
//!
//! The generation comes from the PCI id: the Intel NPU IP (`ivpu_hw_ip_gen`:
//! 37xx for Meteor/Arrow Lake, 40xx for Lunar Lake, 50xx for Panther/Wildcat
//! Lake) and, for AMD, the (device, revision) pairs of `amdxdna_ids`
//! (0x1502 rev 0 npu1; 0x17f0 rev 0 npu2, 0x10 npu4, 0x11 npu5, 0x20 npu6).
//! An NPU works out of system memory: `memory_bytes` stays unknown.

use crate::model::{Device, Family, PciAddress};
use crate::probe::{ProbeExt, join};

use super::pci::{PciDevice, driver_unavailable_reason, read_number};
use super::pci_ids::known_device;
use super::{BackendOutput, Context};

const INTEL_VENDOR_ID: u16 = 0x8086;
const AMD_VENDOR_ID: u16 = 0x1022;
const ACCEL_CLASS: &str = "/sys/class/accel";
/// Kernel driver name of the Intel NPU (`DRIVER_NAME` in `ivpu_drv.h`).
pub const INTEL_NPU_DRIVER: &str = "intel_vpu";
/// Kernel driver name of AMD XDNA (`AMDXDNA_DRIVER_NAME`).
pub const AMD_NPU_DRIVER: &str = "amdxdna";

/// Intel NPU PCI ids: (device id, platform, NPU IP generation). Source in the module doc.
pub const INTEL_NPU_IDS: &[(u16, &str, &str)] = &[
    (0x7d1d, "Meteor Lake", "37xx"),
    (0xad1d, "Arrow Lake", "37xx"),
    (0x643e, "Lunar Lake", "40xx"),
    (0xb03e, "Panther Lake", "50xx"),
    (0xfd3e, "Wildcat Lake", "50xx"),
];

/// Platform and NPU IP generation of an Intel NPU PCI device id.
pub fn intel_npu_generation(device_id: u16) -> Option<(&'static str, &'static str)> {
    INTEL_NPU_IDS
        .iter()
        .find(|(id, _, _)| *id == device_id)
        .map(|&(_, platform, ip)| (platform, ip))
}

/// XDNA architecture of an AMD NPU PCI device id (the names of the
/// detection table and the spec database: 0x1502 XDNA, 0x17f0 XDNA 2).
pub fn amd_npu_architecture(device_id: u16) -> Option<&'static str> {
    match device_id {
        0x1502 => Some("XDNA"),
        0x17f0 => Some("XDNA 2"),
        _ => None,
    }
}

/// The amdxdna device info a (device id, revision) pair selects (`amdxdna_ids`).
pub fn amd_npu_generation(device_id: u16, revision: Option<u8>) -> Option<&'static str> {
    match (device_id, revision?) {
        (0x1502, 0x00) => Some("npu1"),
        (0x17f0, 0x00) => Some("npu2"),
        (0x17f0, 0x10) => Some("npu4"),
        (0x17f0, 0x11) => Some("npu5"),
        (0x17f0, 0x20) => Some("npu6"),
        _ => None,
    }
}

/// Facts an NPU driver publishes in sysfs. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NpuSysfs {
    /// `npu_busy_time_us`: microseconds spent executing jobs since boot.
    pub busy_time_us: Option<u64>,
    /// `npu_memory_utilization`: bytes of resident NPU buffers (system memory).
    pub memory_utilization_bytes: Option<u64>,
    /// `sched_mode`: `HW` or `OS`.
    pub sched_mode: Option<String>,
    /// `npu_max_frequency_mhz` (or `freq/hw_max_freq`).
    pub max_frequency_mhz: Option<u32>,
    /// `npu_current_frequency_mhz` (0 while idle).
    pub current_frequency_mhz: Option<u32>,
    /// amdxdna `vbnv`.
    pub vbnv: Option<String>,
    /// amdxdna `device_type`.
    pub device_type: Option<String>,
    /// amdxdna `fw_version` (`major.minor.sub.build`).
    pub fw_version: Option<String>,
}

/// A short printable token (`HW`, `RyzenAI-npu4`, `1.5.2.380`); anything
/// else is `None`.
fn token(v: Option<String>) -> Option<String> {
    v.filter(|s| {
        s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
    })
}

/// Read the NPU driver attributes under `dir` (the PCI function's sysfs
/// directory). Garbled numbers become warnings.
fn read_npu_sysfs(ctx: &Context, dir: &str, warnings: &mut Vec<String>) -> NpuSysfs {
    let p = ctx.probe;
    let text = |name: &str, warnings: &mut Vec<String>| {
        let raw = p.read_trimmed(&join(dir, name));
        let t = token(raw.clone());
        if raw.is_some() && t.is_none() {
            warnings.push(format!("{}: unexpected value", join(dir, name)));
        }
        t
    };
    NpuSysfs {
        busy_time_us: read_number(p, dir, "npu_busy_time_us", warnings),
        memory_utilization_bytes: read_number(p, dir, "npu_memory_utilization", warnings),
        sched_mode: text("sched_mode", warnings),
        max_frequency_mhz: read_number(p, dir, "npu_max_frequency_mhz", warnings)
            .or_else(|| read_number(p, dir, "freq/hw_max_freq", warnings)),
        current_frequency_mhz: read_number(p, dir, "npu_current_frequency_mhz", warnings),
        vbnv: text("vbnv", warnings),
        device_type: text("device_type", warnings),
        fw_version: text("fw_version", warnings),
    }
}

/// One NPU found: its PCI function (when the scan has it) and its accel node.
struct Found<'a> {
    address: Option<PciAddress>,
    pci: Option<&'a PciDevice>,
    accel: Option<String>,
    /// Driver named by the accel entry (when there is no PCI view).
    accel_driver: Option<String>,
}

fn is_npu_pci(p: &PciDevice) -> bool {
    let drv = p.driver.as_deref();
    (p.vendor_id == INTEL_VENDOR_ID
        && (intel_npu_generation(p.device_id).is_some() || drv == Some(INTEL_NPU_DRIVER)))
        || (p.vendor_id == AMD_VENDOR_ID
            && (amd_npu_architecture(p.device_id).is_some() || drv == Some(AMD_NPU_DRIVER)))
}

/// The `npu` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let scan = ctx.pci();
    let mut found: Vec<Found> = scan
        .devices
        .iter()
        .filter(|p| is_npu_pci(p))
        .map(|p| Found {
            address: Some(p.address),
            pci: Some(p),
            accel: None,
            accel_driver: None,
        })
        .collect();
    for name in ctx.probe.list_or_empty(ACCEL_CLASS) {
        if !name
            .strip_prefix("accel")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let dir = join(&join(ACCEL_CLASS, &name), "device");
        let Some(driver) = ctx.probe.link_name(&join(&dir, "driver")) else {
            continue;
        };
        if driver != INTEL_NPU_DRIVER && driver != AMD_NPU_DRIVER {
            continue;
        }
        let address = ctx.probe.link_name(&dir).and_then(|a| a.parse().ok());
        if address.is_none() {
            out.warnings.push(format!(
                "{dir}: {driver} device without a PCI address; listed as npu:{name}"
            ));
        }
        match found
            .iter_mut()
            .find(|f| address.is_some() && f.address == address)
        {
            Some(f) => f.accel = Some(name),
            None => found.push(Found {
                address,
                pci: address.and_then(|a| scan.by_address(a)),
                accel: Some(name),
                accel_driver: Some(driver),
            }),
        }
    }
    for f in &found {
        out.devices.push(device_for(ctx, f, &mut out.warnings));
    }
    out
}

fn device_for(ctx: &Context, f: &Found, warnings: &mut Vec<String>) -> Device {
    let driver = f
        .pci
        .and_then(|p| p.driver.clone())
        .or_else(|| f.accel_driver.clone());
    let intel = f
        .pci
        .map_or(driver.as_deref() == Some(INTEL_NPU_DRIVER), |p| {
            p.vendor_id == INTEL_VENDOR_ID
        });
    let (vendor, expected) = if intel {
        ("intel", INTEL_NPU_DRIVER)
    } else {
        ("amd", AMD_NPU_DRIVER)
    };
    let id = match (f.address, &f.accel) {
        (Some(a), _) => format!("pci:{a}"),
        (None, Some(n)) => format!("npu:{n}"),
        (None, None) => "npu:?".to_string(),
    };
    let name = f
        .pci
        .and_then(|p| known_device(p.vendor_id, p.device_id))
        .map(|k| k.name.to_string())
        .or_else(|| {
            f.pci.map(|p| {
                format!(
                    "{} NPU ({:04x}:{:04x})",
                    if intel { "Intel" } else { "AMD" },
                    p.vendor_id,
                    p.device_id
                )
            })
        })
        .unwrap_or_else(|| if intel { "Intel NPU" } else { "AMD NPU" }.to_string());
    let dir = match (&f.accel, f.pci) {
        (Some(n), _) => Some(join(&join(ACCEL_CLASS, n), "device")),
        (None, Some(p)) => Some(p.sysfs_path.clone()),
        (None, None) => None,
    };
    let facts = dir
        .as_deref()
        .map(|d| read_npu_sysfs(ctx, d, warnings))
        .unwrap_or_default();
    let from_driver = f.accel.is_some() || facts != NpuSysfs::default();
    let source = if from_driver {
        "npu-sysfs"
    } else {
        "pci-sysfs"
    };
    let mut d = Device::new(id, name, vendor, Family::Npu, source);
    d.pci_address = f.address;
    d.driver.clone_from(&driver);
    if let Some(p) = f.pci {
        d.numa_node = p.numa_node;
        d.pci = Some(p.info());
        if intel {
            if let Some((platform, ip)) = intel_npu_generation(p.device_id) {
                d.architecture = Some(format!("NPU {ip}"));
                d.extra.insert("platform".into(), platform.into());
            }
        } else {
            d.architecture = amd_npu_architecture(p.device_id).map(str::to_string);
            if let Some(g) = amd_npu_generation(p.device_id, p.revision) {
                d.extra.insert("npu_generation".into(), g.into());
            }
        }
    }
    if let Some(reason) = driver_unavailable_reason(driver.as_deref(), &[expected]) {
        d.available = false;
        d.unavailable_reason = Some(reason);
    }
    if let Some(n) = &f.accel {
        d.index = n.trim_start_matches("accel").parse().ok();
        d.extra
            .insert("device_path".into(), format!("/dev/accel/{n}"));
    }
    d.firmware_version.clone_from(&facts.fw_version);
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            d.extra.insert(k.into(), v);
        }
    };
    put(
        "npu_busy_time_us",
        facts.busy_time_us.map(|v| v.to_string()),
    );
    put(
        "npu_memory_utilization_bytes",
        facts.memory_utilization_bytes.map(|v| v.to_string()),
    );
    put("sched_mode", facts.sched_mode.clone());
    put(
        "npu_max_frequency_mhz",
        facts.max_frequency_mhz.map(|v| v.to_string()),
    );
    put(
        "npu_current_frequency_mhz",
        facts.current_frequency_mhz.map(|v| v.to_string()),
    );
    put("vbnv", facts.vbnv.clone());
    put("device_type", facts.device_type.clone());
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_from_ids() {
        assert_eq!(intel_npu_generation(0x7d1d), Some(("Meteor Lake", "37xx")));
        assert_eq!(intel_npu_generation(0x643e), Some(("Lunar Lake", "40xx")));
        assert_eq!(intel_npu_generation(0xb03e), Some(("Panther Lake", "50xx")));
        assert_eq!(intel_npu_generation(0x1234), None);
        assert_eq!(amd_npu_generation(0x17f0, Some(0x10)), Some("npu4"));
        assert_eq!(amd_npu_generation(0x1502, Some(0)), Some("npu1"));
        assert_eq!(amd_npu_generation(0x17f0, None), None);
        assert_eq!(amd_npu_generation(0x17f0, Some(0x99)), None);
        assert_eq!(amd_npu_architecture(0x17f0), Some("XDNA 2"));
    }

    #[test]
    fn every_intel_npu_id_is_named_and_classified() {
        for (id, platform, _) in INTEL_NPU_IDS {
            let k = known_device(INTEL_VENDOR_ID, *id).expect("in the PCI table");
            assert!(k.name.contains(platform), "{k:?}");
            assert_eq!(k.family, Family::Npu);
        }
        for id in [0x1502, 0x17f0] {
            assert_eq!(known_device(AMD_VENDOR_ID, id).unwrap().family, Family::Npu);
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(
            token(Some("RyzenAI-npu4".into())).as_deref(),
            Some("RyzenAI-npu4")
        );
        assert_eq!(token(Some("a b".into())), None);
        assert_eq!(token(Some("x".repeat(65))), None);
    }
}
