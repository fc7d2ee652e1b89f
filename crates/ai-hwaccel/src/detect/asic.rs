//! The `asic` backend: AI ASICs that have no vendor tool of their own here —
//! Tenstorrent cards through the `tenstorrent` kernel driver (tt-kmd), and
//! the PCI ids of Groq, Graphcore, Hailo, Blaize, Untether AI and FuriosaAI.
//!
//! Tenstorrent: PCI vendor 0x1e52 with the device ids of tt-kmd's
//! `enumerate.h` (Grayskull 0xfaca, Wormhole 0x401e, Blackhole 0xb140), and
//! the driver's class devices `/sys/class/tenstorrent/tenstorrent!<N>` (one
//! per `/dev/tenstorrent/<N>`; their `device` link names the PCI function).
//! The class device carries the firmware telemetry attributes of tt-kmd's
//! `docs/sysfs-attributes.md` and `telemetry.c` (tenstorrent/tt-kmd
//! @13dabc76): `tt_card_type` (`n150`, `n300`, `galaxy-wormhole`, `p100`,
//! `p100a`, `p150a`, `p150b`, `p150c`, `p300a`/`b`/`c`, `galaxy-blackhole`,
//! `unknown`), `tt_serial` and `tt_asic_id` (16 hex digits), `tt_aiclk`,
//! `tt_axiclk`, `tt_arcclk` (MHz), `tt_fw_bundle_ver`, `tt_m3app_fw_ver`,
//! `tt_m3bl_fw_ver`, `tt_arc_fw_ver`, `tt_eth_fw_ver`, `tt_ttflash_ver`
//! (dotted versions). An attribute appears only when the firmware reports
//! it. The card type names the board (`Tenstorrent Wormhole n300`), which is
//! how the spec database tells an n150 from an n300: they share a PCI id.
//!
//! The other vendors' ids (pci.ids 2023.04.10) only name the chip; their
//! drivers publish nothing this backend reads. Cerebras systems are reached
//! over the network, and Samsung/MediaTek NPUs are SoC blocks, not PCI
//! functions: none of them shows up on a host's PCI bus.

use crate::model::{Device, Family, PciAddress};
use crate::probe::{ProbeExt, join};

use super::pci::{PciDevice, driver_unavailable_reason, read_number};
use super::pci_ids::{known_device, vendor};
use super::{BackendOutput, Context};

/// PCI vendor id of Tenstorrent.
pub const TENSTORRENT_VENDOR_ID: u16 = 0x1e52;
/// tt-kmd's PCI driver name (`TENSTORRENT` in `enumerate.h`).
pub const TENSTORRENT_DRIVER: &str = "tenstorrent";
const TT_CLASS: &str = "/sys/class/tenstorrent";
const TT_DEV: &str = "/dev/tenstorrent";

/// AI ASICs of other vendors known by PCI id: (vendor, device, chip). From
/// pci.ids 2023.04.10, as in the detection table.
pub const OTHER_ASICS: &[(u16, u16, &str)] = &[
    (0x1de0, 0x0000, "GroqChip"),
    (0x1d95, 0x0001, "Colossus GC2"),
    (0x1d95, 0x0002, "Colossus GC1"),
    (0x1e60, 0x2864, "Hailo-8"),
    (0x1e38, 0x0102, "Xplorer X1600"),
    (0x1e67, 0x0002, "runAI200"),
    (0x1ed2, 0x0000, "Warboy"),
];

/// Tenstorrent chip generation of a PCI device id (tt-kmd `enumerate.h`).
pub fn tenstorrent_architecture(device_id: u16) -> Option<&'static str> {
    match device_id {
        0xfaca => Some("Grayskull"),
        0x401e => Some("Wormhole"),
        0xb140 => Some("Blackhole"),
        _ => None,
    }
}

/// Board name of a tt-kmd `tt_card_type` value (`n300` → `Wormhole n300`).
/// `unknown` and values tt-kmd does not print are `None`.
pub fn tenstorrent_board(card_type: &str) -> Option<String> {
    let t = card_type.trim();
    let arch = match t {
        "n150" | "n300" => "Wormhole",
        "galaxy-wormhole" => return Some("Galaxy (Wormhole)".into()),
        "galaxy-blackhole" => return Some("Galaxy (Blackhole)".into()),
        "p100" | "p100a" | "p150a" | "p150b" | "p150c" | "p300a" | "p300b" | "p300c" => "Blackhole",
        _ => return None,
    };
    Some(format!("{arch} {t}"))
}

/// The telemetry attributes of one `tenstorrent!<N>` class device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TtAttributes {
    /// `tt_card_type`.
    pub card_type: Option<String>,
    /// `tt_serial` (board id, hex).
    pub serial: Option<String>,
    /// `tt_asic_id` (hex).
    pub asic_id: Option<String>,
    /// `tt_aiclk` in MHz.
    pub aiclk_mhz: Option<u32>,
    /// `tt_axiclk` in MHz.
    pub axiclk_mhz: Option<u32>,
    /// `tt_arcclk` in MHz.
    pub arcclk_mhz: Option<u32>,
    /// Dotted firmware versions by attribute name (`tt_fw_bundle_ver`, …).
    pub versions: Vec<(&'static str, String)>,
}

const TT_VERSIONS: &[&str] = &[
    "tt_fw_bundle_ver",
    "tt_m3app_fw_ver",
    "tt_m3bl_fw_ver",
    "tt_arc_fw_ver",
    "tt_eth_fw_ver",
    "tt_ttflash_ver",
];

/// `1.2.3` or `80.15.0.0`: dot-separated decimal numbers.
fn is_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (2..=4).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_hex_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Read the tt-kmd attributes of a class device directory.
fn read_tt_attributes(ctx: &Context, dir: &str, warnings: &mut Vec<String>) -> TtAttributes {
    let p = ctx.probe;
    let mut checked = |name: &str, ok: &dyn Fn(&str) -> bool| -> Option<String> {
        let path = join(dir, name);
        let v = p.read_trimmed(&path)?;
        if ok(&v) {
            Some(v)
        } else {
            let shown: String = v.chars().take(40).collect();
            warnings.push(format!("{path}: unexpected value {shown:?}"));
            None
        }
    };
    let card_type = checked("tt_card_type", &|v| {
        v.len() <= 32 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    let serial = checked("tt_serial", &is_hex_id);
    let asic_id = checked("tt_asic_id", &is_hex_id);
    let versions = TT_VERSIONS
        .iter()
        .filter_map(|&n| checked(n, &is_version).map(|v| (n, v)))
        .collect();
    TtAttributes {
        card_type: card_type.filter(|c| c != "unknown"),
        serial,
        asic_id,
        aiclk_mhz: read_number(p, dir, "tt_aiclk", warnings),
        axiclk_mhz: read_number(p, dir, "tt_axiclk", warnings),
        arcclk_mhz: read_number(p, dir, "tt_arcclk", warnings),
        versions,
    }
}

/// One Tenstorrent class device: its index, PCI address and attributes.
struct TtClassDevice {
    index: Option<u32>,
    address: Option<PciAddress>,
    attrs: TtAttributes,
}

fn tt_class_devices(ctx: &Context, warnings: &mut Vec<String>) -> Vec<TtClassDevice> {
    ctx.probe
        .list_or_empty(TT_CLASS)
        .into_iter()
        .filter_map(|name| {
            let index = name.strip_prefix("tenstorrent!")?.parse::<u32>().ok();
            let dir = join(TT_CLASS, &name);
            let address = ctx
                .probe
                .link_name(&join(&dir, "device"))
                .and_then(|a| a.parse().ok());
            if address.is_none() {
                warnings.push(format!("{dir}/device: no PCI address"));
            }
            Some(TtClassDevice {
                index,
                address,
                attrs: read_tt_attributes(ctx, &dir, warnings),
            })
        })
        .collect()
}

fn tenstorrent_device(
    p: Option<&PciDevice>,
    class: Option<&TtClassDevice>,
    dev_nodes: &[String],
) -> Device {
    let address = p.map(|p| p.address).or(class.and_then(|c| c.address));
    let index = class.and_then(|c| c.index);
    let attrs = class.map(|c| c.attrs.clone()).unwrap_or_default();
    let board = attrs.card_type.as_deref().and_then(tenstorrent_board);
    let architecture = p
        .and_then(|p| tenstorrent_architecture(p.device_id))
        .map(str::to_string)
        .or_else(|| {
            board
                .as_deref()
                .and_then(|b| b.split_whitespace().next())
                .filter(|a| *a == "Wormhole" || *a == "Blackhole")
                .map(str::to_string)
        });
    let name = match (
        &board,
        p.and_then(|p| known_device(p.vendor_id, p.device_id)),
    ) {
        (Some(b), _) => format!("Tenstorrent {b}"),
        (None, Some(k)) => k.name.to_string(),
        (None, None) => "Tenstorrent".to_string(),
    };
    let id = match (address, index) {
        (Some(a), _) => format!("pci:{a}"),
        (None, Some(i)) => format!("tenstorrent:{i}"),
        (None, None) => "tenstorrent:?".to_string(),
    };
    let source = if class.is_some() {
        "tenstorrent-sysfs"
    } else {
        "pci-sysfs"
    };
    let mut d = Device::new(id, name, "tenstorrent", Family::AiAsic, source);
    d.pci_address = address;
    d.index = index;
    d.architecture = architecture;
    d.serial = attrs.serial.clone();
    d.firmware_version = attrs
        .versions
        .iter()
        .find(|(n, _)| *n == "tt_fw_bundle_ver")
        .map(|(_, v)| v.clone());
    let driver = p
        .and_then(|p| p.driver.clone())
        .or_else(|| class.is_some().then(|| TENSTORRENT_DRIVER.to_string()));
    if let Some(p) = p {
        d.numa_node = p.numa_node;
        d.pci = Some(p.info());
    }
    if let Some(reason) = driver_unavailable_reason(driver.as_deref(), &[TENSTORRENT_DRIVER]) {
        d.available = false;
        d.unavailable_reason = Some(reason);
    }
    d.driver = driver;
    if let Some(i) = index {
        if dev_nodes.iter().any(|n| n.parse::<u32>().ok() == Some(i)) {
            d.extra
                .insert("device_path".into(), format!("{TT_DEV}/{i}"));
        }
    }
    if let Some(c) = &attrs.card_type {
        d.extra.insert("card_type".into(), c.clone());
    }
    if let Some(a) = &attrs.asic_id {
        d.extra.insert("asic_id".into(), a.clone());
    }
    for (k, v) in [
        ("aiclk_mhz", attrs.aiclk_mhz),
        ("axiclk_mhz", attrs.axiclk_mhz),
        ("arcclk_mhz", attrs.arcclk_mhz),
    ] {
        if let Some(v) = v {
            d.extra.insert(k.into(), v.to_string());
        }
    }
    for (n, v) in &attrs.versions {
        d.extra
            .insert(n.trim_start_matches("tt_").to_string(), v.clone());
    }
    d
}

/// The `asic` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let scan = ctx.pci();
    let on_pci: Vec<&PciDevice> = scan.by_vendor(TENSTORRENT_VENDOR_ID).collect();
    let class = tt_class_devices(ctx, &mut out.warnings);
    if !on_pci.is_empty() || !class.is_empty() {
        let dev_nodes = ctx.probe.list_or_empty(TT_DEV);
        for p in &on_pci {
            let c = class.iter().find(|c| c.address == Some(p.address));
            out.devices.push(tenstorrent_device(Some(p), c, &dev_nodes));
        }
        for c in &class {
            let seen = c
                .address
                .is_some_and(|a| on_pci.iter().any(|p| p.address == a));
            if !seen {
                let p = c.address.and_then(|a| scan.by_address(a));
                out.devices.push(tenstorrent_device(p, Some(c), &dev_nodes));
            }
        }
    }
    for p in &scan.devices {
        let Some(&(_, _, chip)) = OTHER_ASICS
            .iter()
            .find(|(v, dev, _)| *v == p.vendor_id && *dev == p.device_id)
        else {
            continue;
        };
        let name = known_device(p.vendor_id, p.device_id).map_or(chip, |k| k.name);
        let key = vendor(p.vendor_id).map_or("unknown", |v| v.key);
        let mut d = Device::new(
            format!("pci:{}", p.address),
            name,
            key,
            Family::AiAsic,
            "pci-sysfs",
        );
        d.pci_address = Some(p.address);
        d.architecture = Some(chip.to_string());
        d.numa_node = p.numa_node;
        d.pci = Some(p.info());
        d.driver.clone_from(&p.driver);
        if let Some(reason) = driver_unavailable_reason(p.driver.as_deref(), &[]) {
            d.available = false;
            d.unavailable_reason = Some(reason);
        }
        out.devices.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_and_architectures() {
        assert_eq!(tenstorrent_board("n300").as_deref(), Some("Wormhole n300"));
        assert_eq!(
            tenstorrent_board("p150a\n").as_deref(),
            Some("Blackhole p150a")
        );
        assert_eq!(
            tenstorrent_board("galaxy-wormhole").as_deref(),
            Some("Galaxy (Wormhole)")
        );
        assert_eq!(tenstorrent_board("unknown"), None);
        assert_eq!(tenstorrent_board("e150"), None);
        assert_eq!(tenstorrent_architecture(0xb140), Some("Blackhole"));
        assert_eq!(tenstorrent_architecture(0x0001), None);
    }

    #[test]
    fn value_checks() {
        assert!(is_version("80.15.0.0"));
        assert!(is_version("6.14.0"));
        assert!(!is_version("6..0"));
        assert!(!is_version("v1.2"));
        assert!(is_hex_id("0000046131924112"));
        assert!(!is_hex_id("zz"));
    }

    #[test]
    fn other_asic_ids_are_in_the_pci_table() {
        for (v, d, chip) in OTHER_ASICS {
            let k = known_device(*v, *d).expect("named by the PCI table");
            assert_eq!(k.family, Family::AiAsic, "{chip}");
            assert!(vendor(*v).is_some());
        }
    }
}
