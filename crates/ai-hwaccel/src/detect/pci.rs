//! The shared PCI layer: one scan of /sys/bus/pci/devices per detection, and
//! the `pci` backend that reports every accelerator seen there, whether or
//! not a vendor backend or driver can use it.

use crate::model::{
    Device, EXCERPT_CHARS, Family, PciAddress, PciInfo, PciPath, PcieLink, excerpt,
};
use crate::probe::{ATTRIBUTE_READ_LIMIT, Probe, ProbeExt, join};

use super::pci_ids::{classify, known_device, lookup_pci_ids, vendor};
use super::sysfs::{parse_cpulist, parse_hex, parse_link_speed, parse_link_width, parse_numa_node};
use super::{BackendOutput, Context};

const PCI_DIR: &str = "/sys/bus/pci/devices";

/// System copies of the PCI ID Repository, first found wins.
const PCI_IDS_PATHS: &[&str] = &["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"];

/// One PCI function that is an AI-relevant device.
#[derive(Clone, Debug, PartialEq)]
pub struct PciDevice {
    /// Its address.
    pub address: PciAddress,
    /// Vendor id.
    pub vendor_id: u16,
    /// Device id.
    pub device_id: u16,
    /// Class code (24 bits).
    pub class: Option<u32>,
    /// Family from [`classify`].
    pub family: Family,
    /// Subsystem vendor id.
    pub subsystem_vendor_id: Option<u16>,
    /// Subsystem device id.
    pub subsystem_device_id: Option<u16>,
    /// Revision.
    pub revision: Option<u8>,
    /// Bound kernel driver (last component of the `driver` link).
    pub driver: Option<String>,
    /// NUMA node (`numa_node`, -1 = none).
    pub numa_node: Option<u32>,
    /// CPUs local to the device (`local_cpulist`).
    pub local_cpus: Option<Vec<u32>>,
    /// Link speed and width.
    pub link: PcieLink,
    /// Host bridge and bridges above the function, from the sysfs link.
    pub path: Option<PciPath>,
    /// The sysfs directory (`/sys/bus/pci/devices/<address>`).
    pub sysfs_path: String,
}

impl PciDevice {
    /// The PCI identity in the registry's form.
    pub fn info(&self) -> PciInfo {
        let hex4 = |v: u16| format!("{v:04x}");
        PciInfo {
            vendor_id: hex4(self.vendor_id),
            device_id: hex4(self.device_id),
            subsystem_vendor_id: self.subsystem_vendor_id.map(hex4),
            subsystem_device_id: self.subsystem_device_id.map(hex4),
            class: self.class.map(|c| format!("{c:06x}")),
            revision: self.revision.map(|r| format!("{r:02x}")),
            link: (self.link != PcieLink::default()).then(|| self.link.clone()),
        }
    }
}

/// Result of scanning the PCI bus.
#[derive(Clone, Debug, Default)]
pub struct PciScan {
    /// AI-relevant devices, by address.
    pub devices: Vec<PciDevice>,
    /// Problems met (odd directory names, unreadable or garbled files).
    pub warnings: Vec<String>,
}

impl PciScan {
    /// The device at `addr`.
    pub fn by_address(&self, addr: PciAddress) -> Option<&PciDevice> {
        self.devices.iter().find(|d| d.address == addr)
    }

    /// Devices of one PCI vendor.
    pub fn by_vendor(&self, vendor_id: u16) -> impl Iterator<Item = &PciDevice> {
        self.devices
            .iter()
            .filter(move |d| d.vendor_id == vendor_id)
    }
}

/// Read one hex id file; a missing file is `None` silently, garbage is a warning.
fn hex_file(probe: &dyn Probe, dir: &str, name: &str, warnings: &mut Vec<String>) -> Option<u32> {
    let path = join(dir, name);
    let bytes = probe.read_limited(&path, ATTRIBUTE_READ_LIMIT).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let v = parse_hex(&text);
    if v.is_none() {
        warnings.push(format!(
            "{path}: not a hex id: {}",
            excerpt(&text, EXCERPT_CHARS)
        ));
    }
    v
}

/// Read one decimal attribute file of a device (a driver's sysfs value such
/// as `npu_busy_time_us`): a missing or empty file is `None` silently,
/// garbage is `None` and a warning naming the file.
pub(crate) fn read_number<T: std::str::FromStr>(
    probe: &dyn Probe,
    dir: &str,
    name: &str,
    warnings: &mut Vec<String>,
) -> Option<T> {
    read_parsed(probe, &join(dir, name), "a number", warnings, |s| {
        s.parse::<T>().ok()
    })
}

/// Read `path` and parse it; absent, unreadable or empty is `None` silently
/// (the kernel answers EINVAL for some attributes of a link that is down),
/// text the parser rejects is `None` and a warning naming the file.
pub(crate) fn read_parsed<T>(
    probe: &dyn Probe,
    path: &str,
    what: &str,
    warnings: &mut Vec<String>,
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let text = probe.read_trimmed(path)?;
    let v = parse(&text);
    if v.is_none() {
        warnings.push(format!(
            "{path}: not {what}: {}",
            excerpt(&text, EXCERPT_CHARS)
        ));
    }
    v
}

/// The PCI address a sysfs link or path leads to: the last path component
/// that is a PCI address (`../../devices/pci0000:00/0000:00:01.0/0000:3b:00.0/fpga_region/region0`
/// → `0000:3b:00.0`). `None` for devices not on PCI.
pub(crate) fn pci_address_in_path(path: &str) -> Option<PciAddress> {
    path.rsplit('/').find_map(|c| c.parse::<PciAddress>().ok())
}

/// Scan /sys/bus/pci/devices (entries may be symlinks or directories).
pub(crate) fn scan(probe: &dyn Probe) -> PciScan {
    let mut out = PciScan::default();
    let names = match probe.list_dir(PCI_DIR) {
        Ok(n) => n,
        Err(e) if e.is_absent() => return out,
        Err(e) => {
            out.warnings.push(e.to_string());
            return out;
        }
    };
    for name in names {
        let Ok(address) = name.parse::<PciAddress>() else {
            out.warnings
                .push(format!("{PCI_DIR}/{name}: not a PCI address; skipped"));
            continue;
        };
        let dir = join(PCI_DIR, &name);
        let w = &mut out.warnings;
        let vendor_id = hex_file(probe, &dir, "vendor", w).and_then(|v| u16::try_from(v).ok());
        let device_id = hex_file(probe, &dir, "device", w).and_then(|v| u16::try_from(v).ok());
        let (Some(vendor_id), Some(device_id)) = (vendor_id, device_id) else {
            w.push(format!("{dir}: no readable vendor/device id; skipped"));
            continue;
        };
        let class = hex_file(probe, &dir, "class", w).filter(|&c| c <= 0xff_ffff);
        let Some(family) = classify(vendor_id, device_id, class) else {
            continue;
        };
        let link = PcieLink {
            current_speed_gts: probe
                .read_trimmed(&join(&dir, "current_link_speed"))
                .and_then(|s| parse_link_speed(&s)),
            current_width: probe
                .read_trimmed(&join(&dir, "current_link_width"))
                .and_then(|s| parse_link_width(&s)),
            max_speed_gts: probe
                .read_trimmed(&join(&dir, "max_link_speed"))
                .and_then(|s| parse_link_speed(&s)),
            max_width: probe
                .read_trimmed(&join(&dir, "max_link_width"))
                .and_then(|s| parse_link_width(&s)),
        };
        out.devices.push(PciDevice {
            address,
            vendor_id,
            device_id,
            class,
            family,
            subsystem_vendor_id: hex_file(probe, &dir, "subsystem_vendor", w)
                .and_then(|v| u16::try_from(v).ok()),
            subsystem_device_id: hex_file(probe, &dir, "subsystem_device", w)
                .and_then(|v| u16::try_from(v).ok()),
            revision: hex_file(probe, &dir, "revision", w).and_then(|v| u8::try_from(v).ok()),
            driver: probe.link_name(&join(&dir, "driver")),
            numa_node: probe
                .read_trimmed(&join(&dir, "numa_node"))
                .and_then(|s| parse_numa_node(&s)),
            local_cpus: probe
                .read_trimmed(&join(&dir, "local_cpulist"))
                .and_then(|s| parse_cpulist(&s)),
            link,
            // The entry is a link into /sys/devices whose target spells the
            // bridge chain; a real directory (some fake roots) has none.
            path: probe
                .read_link(&dir)
                .ok()
                .and_then(|t| PciPath::from_sysfs(&t))
                .filter(|(_, a)| *a == address)
                .map(|(p, _)| p),
            sysfs_path: dir,
        });
    }
    out.devices.sort_by_key(|d| d.address);
    out
}

/// Drivers that hand a device to a VM or hold it away from compute stacks.
fn unusable_driver_reason(driver: &str) -> Option<String> {
    match driver {
        "vfio-pci" | "pci-stub" | "pciback" | "xen-pciback" => Some(format!(
            "bound to {driver}: reserved for passthrough to a VM"
        )),
        "nouveau" => Some("bound to nouveau, which has no CUDA support".to_string()),
        _ => None,
    }
}

/// Why a vendor backend's PCI function is unusable, judged by its bound
/// driver: none bound, a passthrough driver, or (when `expected` is not
/// empty) a driver other than the vendor's. `None` when it is usable.
pub(crate) fn driver_unavailable_reason(driver: Option<&str>, expected: &[&str]) -> Option<String> {
    let Some(drv) = driver else {
        return Some("no kernel driver bound".to_string());
    };
    if expected.contains(&drv) {
        return None;
    }
    unusable_driver_reason(drv).or_else(|| {
        (!expected.is_empty()).then(|| format!("bound to {drv}, not {}", expected.join(" or ")))
    })
}

/// The `pci` backend: one device per accelerator on the bus. Names come from
/// the embedded table, else the system pci.ids, else `vendor:device`.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let scan = ctx.pci();
    let mut out = BackendOutput {
        warnings: scan.warnings.clone(),
        ..Default::default()
    };
    let mut pci_ids: Option<Option<String>> = None;
    for p in &scan.devices {
        let v = vendor(p.vendor_id);
        let name = match known_device(p.vendor_id, p.device_id) {
            Some(k) => k.name.to_string(),
            None => {
                let text = pci_ids.get_or_insert_with(|| {
                    PCI_IDS_PATHS
                        .iter()
                        .find_map(|path| ctx.probe.read_text(path).ok())
                });
                match text
                    .as_deref()
                    .map(|t| lookup_pci_ids(t, p.vendor_id, p.device_id))
                {
                    Some((Some(vn), Some(dn))) => format!("{vn} {dn}"),
                    Some((Some(vn), None)) => format!("{vn} device {:04x}", p.device_id),
                    _ => format!("{:04x}:{:04x}", p.vendor_id, p.device_id),
                }
            }
        };
        let mut d = Device::new(
            format!("pci:{}", p.address),
            name,
            v.map_or_else(|| format!("{:04x}", p.vendor_id), |v| v.key.to_string()),
            p.family,
            "pci-sysfs",
        );
        d.pci_address = Some(p.address);
        d.numa_node = p.numa_node;
        d.local_cpus.clone_from(&p.local_cpus);
        d.pci_path.clone_from(&p.path);
        d.driver.clone_from(&p.driver);
        d.pci = Some(p.info());
        match p.driver.as_deref() {
            None => {
                d.available = false;
                d.unavailable_reason = Some("no kernel driver bound".to_string());
            }
            Some(drv) => {
                if let Some(reason) = unusable_driver_reason(drv) {
                    d.available = false;
                    d.unavailable_reason = Some(reason);
                }
            }
        }
        out.devices.push(d);
    }
    out
}
