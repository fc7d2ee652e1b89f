//! The `offload` backend: Intel QuickAssist (QAT) endpoints and NVIDIA
//! BlueField DPUs. They are not AI compute (family `offload`, never counted
//! as accelerators) but pipelines use them for compression, crypto and
//! networking, so they are reported with their driver, NUMA node and link.
//!
//! QAT: the PF and VF ids of pci.ids and Linux `drivers/crypto/intel/qat/
//! qat_common/adf_accel_devices.h` @f5419a42 (DH895XCC 0x0435/0x0443, C62x
//! 0x37c8/0x37c9, C3000 0x19e2/0x19e3, Xeon D 0x6f54/0x6f55, C4xxx
//! 0x18a0/0x18a1, 200xx 0x18ee/0x18ef, 4xxx 0x4940/0x4941, 401xx
//! 0x4942/0x4943, 402xx 0x4944/0x4945, 420xx 0x4946/0x4947). The in-kernel
//! PCI drivers are named after the device (`4xxx`, `420xx`, `c6xx`,
//! `c6xxvf`, `dh895xcc`, `c3xxx`, …; modules `qat_4xxx`, `qat_c62x`, …), so
//! any driver bound counts; a VF bound to `vfio-pci` is how qatlib and DPDK
//! use it from user space, so that is available too. A PF reports
//! `sriov_numvfs`/`sriov_totalvfs` (PCI sysfs) and the QAT driver's
//! `qat/state`, `qat/cfg_services` (ABI `sysfs-driver-qat`); a VF names its
//! PF through its `physfn` link.
//!
//! BlueField: the host-side functions of pci.ids — the integrated ConnectX
//! network functions (0xa2d2 BlueField, 0xa2d6 BlueField-2, 0xa2d9
//! BlueField-3 Lx, 0xa2dc BlueField-3; driver `mlx5_core`) and the SoC
//! management interfaces (0xc2d2-0xc2d5). Plain ConnectX NICs are not listed.

use crate::model::{Device, Family, PciAddress};
use crate::probe::{ProbeExt, join};

use super::pci::{PciDevice, driver_unavailable_reason, pci_address_in_path, read_number};
use super::pci_ids::known_device;
use super::{BackendOutput, Context};

const INTEL_VENDOR_ID: u16 = 0x8086;
const MELLANOX_VENDOR_ID: u16 = 0x15b3;
/// The mlx5 driver of BlueField's network functions.
pub const MLX5_DRIVER: &str = "mlx5_core";

/// QAT PCI ids: (device id, series, is a virtual function). Source in the module doc.
pub const QAT_IDS: &[(u16, &str, bool)] = &[
    (0x0435, "DH895XCC", false),
    (0x0443, "DH895XCC", true),
    (0x37c8, "C62x", false),
    (0x37c9, "C62x", true),
    (0x19e2, "C3xxx", false),
    (0x19e3, "C3xxx", true),
    (0x6f54, "Xeon D", false),
    (0x6f55, "Xeon D", true),
    (0x18a0, "C4xxx", false),
    (0x18a1, "C4xxx", true),
    (0x18ee, "200xx", false),
    (0x18ef, "200xx", true),
    (0x4940, "4xxx", false),
    (0x4941, "4xxx", true),
    (0x4942, "401xx", false),
    (0x4943, "401xx", true),
    (0x4944, "402xx", false),
    (0x4945, "402xx", true),
    (0x4946, "420xx", false),
    (0x4947, "420xx", true),
];

/// BlueField host functions: (device id, generation, role). From pci.ids.
pub const BLUEFIELD_IDS: &[(u16, &str, &str)] = &[
    (0xa2d2, "BlueField", "network"),
    (0xa2d6, "BlueField-2", "network"),
    (0xa2d9, "BlueField-3 Lx", "network"),
    (0xa2dc, "BlueField-3", "network"),
    (0xc2d2, "BlueField", "management"),
    (0xc2d3, "BlueField-2", "management"),
    (0xc2d4, "BlueField-3 Lx", "management"),
    (0xc2d5, "BlueField-3", "management"),
];

/// QAT series and whether the id is a VF.
pub fn qat_kind(device_id: u16) -> Option<(&'static str, bool)> {
    QAT_IDS
        .iter()
        .find(|(id, _, _)| *id == device_id)
        .map(|&(_, s, vf)| (s, vf))
}

/// BlueField generation and function role.
pub fn bluefield_kind(device_id: u16) -> Option<(&'static str, &'static str)> {
    BLUEFIELD_IDS
        .iter()
        .find(|(id, _, _)| *id == device_id)
        .map(|&(_, g, r)| (g, r))
}

fn base_device(p: &PciDevice, vendor: &str, fallback: &str) -> Device {
    let name = known_device(p.vendor_id, p.device_id).map_or(fallback, |k| k.name);
    let mut d = Device::new(
        format!("pci:{}", p.address),
        name,
        vendor,
        Family::Offload,
        "pci-sysfs",
    );
    d.pci_address = Some(p.address);
    d.numa_node = p.numa_node;
    d.pci = Some(p.info());
    d.driver.clone_from(&p.driver);
    d
}

fn qat_device(ctx: &Context, p: &PciDevice, series: &str, vf: bool, w: &mut Vec<String>) -> Device {
    let mut d = base_device(p, "intel", "Intel QuickAssist");
    d.architecture = Some(format!("QAT {series}"));
    d.extra
        .insert("function".into(), if vf { "vf" } else { "pf" }.into());
    let dir = &p.sysfs_path;
    let reason = if vf && p.driver.as_deref() == Some("vfio-pci") {
        d.extra.insert("vfio".into(), "true".into());
        None
    } else {
        driver_unavailable_reason(p.driver.as_deref(), &[])
    };
    if let Some(r) = reason {
        d.available = false;
        d.unavailable_reason = Some(r);
    }
    if vf {
        let pf: Option<PciAddress> = ctx
            .probe
            .read_link(&join(dir, "physfn"))
            .ok()
            .and_then(|t| pci_address_in_path(&t));
        if let Some(pf) = pf {
            d.extra.insert("physfn".into(), pf.to_string());
        }
    } else {
        for name in ["sriov_numvfs", "sriov_totalvfs"] {
            if let Some(n) = read_number::<u32>(ctx.probe, dir, name, w) {
                d.extra.insert(name.into(), n.to_string());
            }
        }
        if let Some(s) = ctx.probe.read_trimmed(&join(dir, "qat/state")) {
            match s.as_str() {
                "up" | "down" => {
                    if s == "down" && d.available {
                        d.available = false;
                        d.unavailable_reason = Some("QAT device is down (qat/state)".into());
                    }
                    d.extra.insert("qat_state".into(), s);
                }
                _ => w.push(format!("{dir}/qat/state: unexpected value {s:?}")),
            }
        }
        if let Some(s) = ctx.probe.read_trimmed(&join(dir, "qat/cfg_services")) {
            let ok = s.len() <= 64
                && s.split(';')
                    .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_lowercase()));
            if ok {
                d.extra.insert("qat_services".into(), s);
            } else {
                w.push(format!("{dir}/qat/cfg_services: unexpected value"));
            }
        }
    }
    d
}

fn bluefield_device(p: &PciDevice, generation: &str, role: &str) -> Device {
    let mut d = base_device(p, "nvidia", "NVIDIA BlueField");
    d.architecture = Some(generation.to_string());
    d.extra.insert("role".into(), role.into());
    let expected: &[&str] = if role == "network" {
        &[MLX5_DRIVER]
    } else {
        &[]
    };
    if let Some(r) = driver_unavailable_reason(p.driver.as_deref(), expected) {
        d.available = false;
        d.unavailable_reason = Some(r);
    }
    d
}

/// The `offload` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    for p in &ctx.pci().devices {
        let d = match p.vendor_id {
            INTEL_VENDOR_ID => match qat_kind(p.device_id) {
                Some((series, vf)) => qat_device(ctx, p, series, vf, &mut out.warnings),
                None => continue,
            },
            MELLANOX_VENDOR_ID => match bluefield_kind(p.device_id) {
                Some((generation, role)) => bluefield_device(p, generation, role),
                None => continue,
            },
            _ => continue,
        };
        out.devices.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_named_and_offload() {
        for (id, series, _) in QAT_IDS {
            let k = known_device(INTEL_VENDOR_ID, *id).expect("in the PCI table");
            assert_eq!(k.family, Family::Offload, "{series}");
        }
        for (id, generation, _) in BLUEFIELD_IDS {
            let k = known_device(MELLANOX_VENDOR_ID, *id).expect("in the PCI table");
            assert_eq!(k.family, Family::Offload, "{generation}");
        }
        assert_eq!(qat_kind(0x4941), Some(("4xxx", true)));
        assert_eq!(qat_kind(0x37c8), Some(("C62x", false)));
        assert_eq!(bluefield_kind(0xa2dc), Some(("BlueField-3", "network")));
        assert_eq!(bluefield_kind(0x1021), None);
    }
}
