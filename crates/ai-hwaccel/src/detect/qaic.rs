//! The `qaic` backend: Qualcomm Cloud AI accelerators (AIC080, AIC100, AIC200).
//!
//! Runs only when the machine suggests one: a PCI function of vendor 0x17cb
//! with a Cloud AI device id (Linux `drivers/accel/qaic/qaic_drv.c`:
//! 0xa080 AIC080, 0xa100 AIC100, 0xa110 AIC200) in the shared scan, or a
//! `/sys/class/accel/accel<N>` device bound to the `qaic` driver. Facts come
//! from one `qaic-util -q` run (the Platform SDK's query: a `QID <n>` block
//! of `Key:Value` lines per SoC), joined to the PCI scan by `PCI Address`.
//!
//! `qaic-util` prints DRAM in MB that are MiB: a 32 GB card shows
//! `Dram Total:32692 MB` (32768 MiB less the firmware's share). NSPs (the
//! SoC's AI cores) become `compute_units`. One Cloud AI 100 Ultra card holds
//! four SoCs, each its own PCI function and device here; nothing in the
//! output names the card's SKU, so names stay at the SoC level.

use crate::model::{Device, Family, Labels, PciAddress, parse_size};
use crate::probe::{ProbeExt, join};

use super::formats::ParseOutput;
use super::pci::PciDevice;
use super::pci_ids::known_device;
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

/// PCI vendor id of Qualcomm.
pub const QUALCOMM_VENDOR_ID: u16 = 0x17cb;
const ACCEL_CLASS: &str = "/sys/class/accel";
#[cfg(test)]
const MIB: u64 = 1 << 20;

/// Cloud AI PCI device ids (qaic_drv.c).
pub const QAIC_DEVICE_IDS: &[u16] = &[0xa080, 0xa100, 0xa110];

/// One SoC as `qaic-util -q` shows it. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QaicDevice {
    /// `QID` (the SDK's device index).
    pub qid: u32,
    /// `Status` (`Ready`, `Error`, …).
    pub status: Option<String>,
    /// `PCI Address`.
    pub pci_address: Option<PciAddress>,
    /// `HW Version`.
    pub hw_version: Option<String>,
    /// `HW Serial` (per SoC).
    pub hw_serial: Option<String>,
    /// `Board serial` (per card).
    pub board_serial: Option<String>,
    /// `FW Version`.
    pub fw_version: Option<String>,
    /// `NSP Version`.
    pub nsp_version: Option<String>,
    /// `SBL Image`.
    pub sbl_image: Option<String>,
    /// `FW IMAGE_VARIANT` (`AIC100.REL`).
    pub fw_variant: Option<String>,
    /// `Dram Total` in bytes.
    pub dram_total_bytes: Option<u64>,
    /// `Dram Free` in bytes.
    pub dram_free_bytes: Option<u64>,
    /// `Nsp Total`.
    pub nsp_total: Option<u32>,
    /// `Nsp Free`.
    pub nsp_free: Option<u32>,
}

/// What one qaic-util output held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QaicReport {
    /// `LRT QC_IMAGE_VERSION` (the runtime).
    pub lrt_version: Option<String>,
    /// `Number of devices`.
    pub device_count: Option<u32>,
    /// Devices in QID order.
    pub devices: Vec<QaicDevice>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

fn text(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && !v.eq_ignore_ascii_case("N/A")).then(|| v.to_string())
}

/// `8116 MB` (MiB, see the module doc), or `33554432 KB` (KiB) → bytes.
fn parse_mb(v: &str) -> Option<u64> {
    parse_size(v, None, Labels::Binary)
}

/// Parse `qaic-util -q`. Never panics; lines that do not parse become warnings.
pub fn parse_qaic_util(text_in: &str) -> QaicReport {
    let mut rep = QaicReport::default();
    let mut cur: Option<QaicDevice> = None;
    for line in text_in.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(q) = t.strip_prefix("QID") {
            if let Some(d) = cur.take() {
                rep.devices.push(d);
            }
            match q.trim().parse::<u32>() {
                Ok(qid) => {
                    cur = Some(QaicDevice {
                        qid,
                        ..Default::default()
                    })
                }
                Err(_) => rep
                    .warnings
                    .push(format!("qaic-util: {t:?} has no device number")),
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let key = k.trim();
        let Some(d) = cur.as_mut() else {
            match key {
                "LRT QC_IMAGE_VERSION" => rep.lrt_version = text(v),
                "Number of devices" => rep.device_count = v.trim().parse().ok(),
                _ => {}
            }
            continue;
        };
        let mut bad = |what: &str| {
            rep.warnings.push(format!(
                "qaic-util QID {}: {what} {:?} not understood",
                d.qid,
                v.trim()
            ))
        };
        match key {
            "Status" => d.status = text(v),
            "PCI Address" => {
                d.pci_address = v.trim().parse().ok();
                if d.pci_address.is_none() {
                    bad("PCI Address");
                }
            }
            "HW Version" => d.hw_version = text(v),
            "HW Serial" => d.hw_serial = text(v),
            "Board serial" => d.board_serial = text(v),
            "FW Version" => d.fw_version = text(v),
            "FW IMAGE_VARIANT" => d.fw_variant = text(v),
            "NSP Version" => d.nsp_version = text(v),
            "SBL Image" => d.sbl_image = text(v),
            "Dram Total" | "Dram Free" => {
                let b = parse_mb(v);
                if b.is_none() {
                    bad(key);
                }
                if key == "Dram Total" {
                    d.dram_total_bytes = b;
                } else {
                    d.dram_free_bytes = b;
                }
            }
            "Nsp Total" | "Nsp Free" => {
                let n = v.trim().parse::<u32>().ok();
                if n.is_none() {
                    bad(key);
                }
                if key == "Nsp Total" {
                    d.nsp_total = n;
                } else {
                    d.nsp_free = n;
                }
            }
            _ => {}
        }
    }
    if let Some(d) = cur {
        rep.devices.push(d);
    }
    if let Some(n) = rep.device_count {
        if n as usize != rep.devices.len() {
            rep.warnings.push(format!(
                "qaic-util: header says {n} devices, {} listed (output cut?)",
                rep.devices.len()
            ));
        }
    }
    crate::detect::formats::cap_records(&mut rep.devices, "qaic-util", &mut rep.warnings);
    rep
}

/// The device for one qaic-util entry; `pci_name` names it from its PCI id.
fn device_from(q: &QaicDevice, rep: &QaicReport, pci_name: Option<&str>) -> Device {
    let id = q
        .pci_address
        .map_or_else(|| format!("qaic:{}", q.qid), |a| format!("pci:{a}"));
    let name = pci_name
        .map(str::to_string)
        .or_else(|| {
            // `AIC100.REL` → the AIC100 SoC.
            let soc = q
                .fw_variant
                .as_deref()?
                .split('.')
                .next()?
                .to_ascii_uppercase();
            let id = match soc.as_str() {
                "AIC080" => 0xa080,
                "AIC100" => 0xa100,
                "AIC200" => 0xa110,
                _ => return None,
            };
            known_device(QUALCOMM_VENDOR_ID, id).map(|k| k.name.to_string())
        })
        .unwrap_or_else(|| "Qualcomm Cloud AI".to_string());
    let mut d = Device::new(id, name, "qualcomm", Family::AiAsic, "qaic-util");
    d.pci_address = q.pci_address;
    d.index = Some(q.qid);
    d.memory_bytes = q.dram_total_bytes;
    d.memory_free_bytes = q.dram_free_bytes;
    d.compute_units = q.nsp_total;
    d.serial.clone_from(&q.hw_serial);
    d.firmware_version.clone_from(&q.fw_version);
    d.driver_version.clone_from(&rep.lrt_version);
    let x = &mut d.extra;
    for (k, v) in [
        ("status", &q.status),
        ("board_serial", &q.board_serial),
        ("hw_version", &q.hw_version),
        ("nsp_version", &q.nsp_version),
        ("sbl_image", &q.sbl_image),
        ("fw_image_variant", &q.fw_variant),
    ] {
        if let Some(v) = v {
            x.insert(k.into(), v.clone());
        }
    }
    if let Some(n) = q.nsp_free {
        x.insert("nsp_free".into(), n.to_string());
    }
    if let Some(s) = &q.status {
        if !s.eq_ignore_ascii_case("ready") {
            d.available = false;
            d.unavailable_reason = Some(format!("qaic-util status: {s}"));
        }
    }
    d
}

/// Parser for `ai-hwaccel parse qaic-util`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_qaic_util(&crate::model::text::decode(bytes));
    let devices: Vec<Device> = rep
        .devices
        .iter()
        .map(|q| device_from(q, &rep, None))
        .collect();
    let mut warnings = rep.warnings.clone();
    if devices.is_empty() {
        warnings.push("no QID device blocks found".into());
    }
    ParseOutput { devices, warnings }
}

/// PCI addresses of `/sys/class/accel` devices bound to `qaic`.
fn sysfs_devices(ctx: &Context) -> Vec<(String, Option<PciAddress>)> {
    ctx.probe
        .list_or_empty(ACCEL_CLASS)
        .into_iter()
        .filter(|n| n.starts_with("accel") && !n.starts_with("accel_"))
        .filter_map(|n| {
            let dir = join(&join(ACCEL_CLASS, &n), "device");
            (ctx.probe.link_name(&join(&dir, "driver")).as_deref() == Some("qaic"))
                .then(|| (n, ctx.probe.link_name(&dir).and_then(|a| a.parse().ok())))
        })
        .collect()
}

/// The `qaic` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let on_pci: Vec<&PciDevice> = ctx
        .pci()
        .by_vendor(QUALCOMM_VENDOR_ID)
        .filter(|p| QAIC_DEVICE_IDS.contains(&p.device_id))
        .collect();
    let in_sysfs = sysfs_devices(ctx);
    if on_pci.is_empty() && in_sysfs.is_empty() {
        return out;
    }
    let mut rep = run_tool(ctx, "qaic-util", &["-q"], &mut out.warnings)
        .map(|t| parse_qaic_util(&t))
        .unwrap_or_default();
    out.warnings.append(&mut rep.warnings);
    let pci_name = |a: Option<PciAddress>| {
        a.and_then(|a| ctx.pci().by_address(a))
            .and_then(|p| known_device(p.vendor_id, p.device_id))
            .map(|k| k.name)
    };
    let mut devices: Vec<Device> = rep
        .devices
        .iter()
        .map(|q| device_from(q, &rep, pci_name(q.pci_address)))
        .collect();
    for p in &on_pci {
        if !devices.iter().any(|d| d.pci_address == Some(p.address)) {
            let name =
                known_device(p.vendor_id, p.device_id).map_or("Qualcomm Cloud AI", |k| k.name);
            let mut d = Device::new(
                format!("pci:{}", p.address),
                name,
                "qualcomm",
                Family::AiAsic,
                "pci-sysfs",
            );
            d.pci_address = Some(p.address);
            devices.push(d);
        }
    }
    for (accel, addr) in &in_sysfs {
        match devices
            .iter_mut()
            .find(|d| addr.is_some() && d.pci_address == *addr)
        {
            Some(d) => {
                d.extra.insert("accel_node".into(), accel.clone());
                if !d.source.contains("qaic-sysfs") {
                    d.source = format!("{}+qaic-sysfs", d.source);
                }
            }
            None => {
                let mut d = Device::new(
                    addr.map_or_else(|| format!("qaic:{accel}"), |a| format!("pci:{a}")),
                    "Qualcomm Cloud AI",
                    "qualcomm",
                    Family::AiAsic,
                    "qaic-sysfs",
                );
                d.pci_address = *addr;
                d.driver = Some("qaic".into());
                d.extra.insert("accel_node".into(), accel.clone());
                devices.push(d);
            }
        }
    }
    for d in &mut devices {
        let Some(p) = d.pci_address.and_then(|a| ctx.pci().by_address(a)) else {
            continue;
        };
        d.pci = Some(p.info());
        d.numa_node = p.numa_node;
        d.driver.clone_from(&p.driver);
        let reason = match p.driver.as_deref() {
            None => Some("no kernel driver bound".to_string()),
            Some("qaic") => None,
            Some(other) => Some(format!("bound to {other}, not qaic")),
        };
        if let Some(r) = reason {
            if d.available {
                d.available = false;
                d.unavailable_reason = Some(r);
            }
        }
    }
    out.devices = devices;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megabytes_are_mebibytes() {
        assert_eq!(parse_mb("8116 MB"), Some(8116 * MIB));
        // A newer Platform SDK prints KB (quic/cloud-ai-sdk tutorial
        // notebooks: `Dram Total:33554432 KB`, 32 GiB).
        assert_eq!(parse_mb("33554432 KB"), Some(32 * 1024 * MIB));
        assert_eq!(parse_mb("8116"), None);
        assert_eq!(parse_mb("lots MB"), None);
    }

    #[test]
    fn blocks_and_header() {
        let r = parse_qaic_util(
            "Number of devices: 2\nQID 0\n\tStatus:Error\n\tNsp Total:x\nQID 1\n\tPCI Address:zz\n",
        );
        assert_eq!(r.devices.len(), 2);
        assert_eq!(r.devices[0].status.as_deref(), Some("Error"));
        assert_eq!(r.devices[0].nsp_total, None);
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    }
}
