//! `xpu-smi discovery -j` (Intel XPU Manager): a `device_list` array with one
//! object per GPU (`device_id`, `device_name`, `pci_bdf_address`,
//! `pci_device_id`, `uuid`, …). Per-device queries (`discovery -d N -j`)
//! return one such object with more fields; memory is read from it when present.

use serde_json::Value;

use crate::detect::formats::ParseOutput;
use crate::model::{Device, Family, PciAddress};

/// Source name of facts from xpu-smi.
pub const SOURCE: &str = "xpu-smi";

/// One GPU as xpu-smi reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct XpuGpu {
    /// xpu-smi's device index.
    pub index: Option<u32>,
    /// `device_name` (pre-release parts read `Intel(R) Graphics [0x020a]`).
    pub name: Option<String>,
    /// `pci_bdf_address`.
    pub address: Option<PciAddress>,
    /// `pci_device_id`.
    pub pci_device_id: Option<u16>,
    /// `uuid`.
    pub uuid: Option<String>,
    /// Physical memory in bytes, when the object has it.
    pub memory_bytes: Option<u64>,
    /// `driver_version`, when present.
    pub driver_version: Option<String>,
    /// `Serial Number` (not `unknown`).
    pub serial: Option<String>,
    /// The GFX firmware's version (`GFX Firmware Version`; `Firmware
    /// Version` after `Firmware Name: GFX` in older tables).
    pub firmware_version: Option<String>,
    /// `ECC State` (`enabled` / `disabled`).
    pub ecc_enabled: Option<bool>,
    /// `Number of EUs` (execution units; kept in `extra.eu_count`).
    pub eu_count: Option<u32>,
}

impl XpuGpu {
    /// Whether the name is only the placeholder `Intel(R) Graphics [0x....]`.
    pub fn name_is_placeholder(&self) -> bool {
        self.name
            .as_deref()
            .is_none_or(|n| n.contains("[0x") || n.trim().is_empty())
    }
}

fn text(o: &Value, key: &str) -> Option<String> {
    match o.get(key)? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn gpu(o: &Value) -> XpuGpu {
    XpuGpu {
        index: o
            .get("device_id")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok()),
        name: text(o, "device_name"),
        address: text(o, "pci_bdf_address").and_then(|s| s.parse().ok()),
        pci_device_id: text(o, "pci_device_id")
            .and_then(|s| crate::detect::sysfs::parse_hex_u16(&s)),
        uuid: text(o, "uuid"),
        // `memory_physical_size_byte` (a string, or a number since xpu-smi
        // promotes it to an integer); `memory_physical_size` is the same size
        // printed `"{:.2f} MiB"` (ial/cmn/cmd_discovery.cpp), read when the
        // byte field is missing.
        memory_bytes: text(o, "memory_physical_size_byte")
            .and_then(|s| s.parse::<u64>().ok())
            .or_else(|| {
                text(o, "memory_physical_size")
                    .and_then(|s| crate::model::parse_size(&s, None, crate::model::Labels::Binary))
            })
            .filter(|&b| b > 0),
        driver_version: text(o, "driver_version"),
        // `discovery -d N -j` (xpumanager's device properties; the table
        // prints the same values as `Serial Number`, `GFX Firmware
        // Version`, `ECC State`, `Number of EUs`).
        serial: text(o, "serial_number").filter(|s| !s.eq_ignore_ascii_case("unknown")),
        firmware_version: text(o, "gfx_firmware_version")
            .filter(|s| !s.eq_ignore_ascii_case("unknown")),
        ecc_enabled: text(o, "memory_ecc_state").and_then(|s| ecc_state(&s)),
        eu_count: text(o, "number_of_eus")
            .and_then(|s| s.parse().ok())
            .filter(|&n| n > 0),
    }
}

/// `enabled` / `disabled` (xpu-smi's ECC state); anything else unknown.
fn ecc_state(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "enabled" => Some(true),
        "disabled" => Some(false),
        _ => None,
    }
}

/// Parse `xpu-smi discovery -j` (or `discovery -d N -j`).
pub fn parse_gpus(bytes: &[u8]) -> (Vec<XpuGpu>, Vec<String>) {
    let v: Value = match serde_json::from_slice(&crate::model::text::utf8_bytes(bytes)) {
        Ok(v) => v,
        Err(e) => return (Vec::new(), vec![format!("xpu-smi JSON: {e}")]),
    };
    let list: Vec<XpuGpu> = match v.get("device_list") {
        Some(Value::Array(a)) => a
            .iter()
            .filter(|o| o.is_object())
            .take(crate::detect::formats::MAX_DEVICES_PER_OUTPUT + 1)
            .map(gpu)
            .collect(),
        Some(_) => {
            return (
                Vec::new(),
                vec!["xpu-smi JSON: device_list is not an array".into()],
            );
        }
        None if v.get("device_name").is_some() || v.get("pci_bdf_address").is_some() => {
            vec![gpu(&v)]
        }
        None => Vec::new(),
    };
    let mut list = list;
    let mut warnings = if list.is_empty() {
        vec!["xpu-smi JSON lists no device".to_string()]
    } else {
        Vec::new()
    };
    crate::detect::formats::cap_records(&mut list, "xpu-smi", &mut warnings);
    (list, warnings)
}

/// An xpu-smi GPU in device form (used by the `xpu-smi-json` format).
pub fn to_device(g: &XpuGpu) -> Device {
    let id = match (g.address, g.index) {
        (Some(a), _) => format!("pci:{a}"),
        (None, Some(i)) => format!("xpu-smi:{i}"),
        (None, None) => "xpu-smi:?".to_string(),
    };
    let name = super::intel_name(g.name.as_deref(), g.pci_device_id, g.name_is_placeholder());
    let mut d = Device::new(id, name, "intel", Family::Gpu, SOURCE);
    d.pci_address = g.address;
    d.index = g.index;
    d.uuid.clone_from(&g.uuid);
    d.memory_bytes = g.memory_bytes;
    d.driver_version.clone_from(&g.driver_version);
    d.serial.clone_from(&g.serial);
    d.firmware_version.clone_from(&g.firmware_version);
    d.ecc_enabled = g.ecc_enabled;
    if let Some(n) = g.eu_count {
        d.extra.insert("eu_count".into(), n.to_string());
    }
    d
}

/// The `xpu-smi-json` format.
pub fn parse_format(bytes: &[u8]) -> ParseOutput {
    let (gpus, warnings) = parse_gpus(bytes);
    ParseOutput {
        devices: gpus.iter().map(to_device).collect(),
        warnings,
    }
}

/// Parse the table `xpu-smi discovery` (and `discovery -d N`) prints: a
/// `Device ID | Device Information` header, then per device a row whose
/// first cell holds the index and whose second holds `Key: Value`, the
/// following rows leaving the first cell empty. Read are `Device Name`,
/// `PCI BDF Address`, `PCI Device ID`, `UUID` (`SOC UUID` in xpu-smi 1.3+),
/// `Driver Version`, `Memory Physical Size` (`"{:.2f} MiB"`, the field
/// the JSON calls `memory_physical_size`), `Serial Number`, the GFX
/// firmware's version, `ECC State` and `Number of EUs`. Never panics.
pub fn parse_text(bytes: &[u8]) -> (Vec<XpuGpu>, Vec<String>) {
    let text = crate::model::text::decode(bytes);
    let mut list: Vec<XpuGpu> = Vec::new();
    let mut warnings = Vec::new();
    let mut in_table = false;
    let mut gfx_firmware_next = false;
    for line in text.lines() {
        if crate::detect::formats::past_cap(list.len()) {
            break;
        }
        let t = line.trim();
        let Some(inner) = t.strip_prefix('|').and_then(|r| r.strip_suffix('|')) else {
            continue;
        };
        let Some((id_cell, info)) = inner.split_once('|') else {
            continue;
        };
        let (id_cell, info) = (id_cell.trim(), info.trim());
        if id_cell == "Device ID" {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !id_cell.is_empty() {
            match id_cell.parse::<u32>() {
                Ok(i) => list.push(XpuGpu {
                    index: Some(i),
                    name: None,
                    address: None,
                    pci_device_id: None,
                    uuid: None,
                    memory_bytes: None,
                    driver_version: None,
                    serial: None,
                    firmware_version: None,
                    ecc_enabled: None,
                    eu_count: None,
                }),
                Err(_) => {
                    warnings.push(format!("xpu-smi: device id {id_cell:?} is not a number"));
                    continue;
                }
            }
        }
        let (Some(g), Some((key, value))) = (list.last_mut(), info.split_once(':')) else {
            continue;
        };
        let value = value.trim();
        let known = || Some(value.to_string()).filter(|v| !v.is_empty() && v != "unknown");
        match key.trim() {
            "Device Name" => g.name = known(),
            "PCI BDF Address" => g.address = value.parse().ok(),
            "PCI Device ID" => g.pci_device_id = crate::detect::sysfs::parse_hex_u16(value),
            "UUID" | "SOC UUID" => g.uuid = known(),
            "Driver Version" => g.driver_version = known(),
            "Serial Number" => g.serial = known(),
            // The GFX firmware: its own key in xpu-smi 1.2+, a `Firmware
            // Name: GFX` / `Firmware Version` pair before.
            "GFX Firmware Version" => g.firmware_version = known(),
            "Firmware Name" => gfx_firmware_next = value.eq_ignore_ascii_case("GFX"),
            "Firmware Version" if gfx_firmware_next => {
                g.firmware_version = known();
                gfx_firmware_next = false;
            }
            "ECC State" => g.ecc_enabled = ecc_state(value),
            "Number of EUs" => g.eu_count = value.parse().ok().filter(|&n| n > 0),
            "Memory Physical Size" => {
                g.memory_bytes =
                    crate::model::parse_size(value, None, crate::model::Labels::Binary)
                        .filter(|&b| b > 0);
            }
            _ => {}
        }
    }
    if list.is_empty() {
        warnings.push("xpu-smi discovery table lists no device".to_string());
    }
    crate::detect::formats::cap_records(&mut list, "xpu-smi", &mut warnings);
    (list, warnings)
}

/// The `xpu-smi-text` format.
pub fn parse_text_format(bytes: &[u8]) -> ParseOutput {
    let (gpus, warnings) = parse_text(bytes);
    ParseOutput {
        devices: gpus.iter().map(to_device).collect(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_from_either_field() {
        let (g, _) = parse_gpus(br#"{"device_id":0,"device_name":"Intel(R) Data Center GPU Flex 170","memory_physical_size_byte":14942253056}"#);
        assert_eq!(g[0].memory_bytes, Some(14_942_253_056));
        let (g, _) = parse_gpus(br#"{"device_id":0,"device_name":"Intel(R) Data Center GPU Flex 170","memory_physical_size_byte":"14942253056"}"#);
        assert_eq!(g[0].memory_bytes, Some(14_942_253_056));
        let (g, _) = parse_gpus(br#"{"device_id":0,"device_name":"Intel(R) Data Center GPU Flex 170","memory_physical_size":"14250.00 MiB"}"#);
        assert_eq!(g[0].memory_bytes, Some(14_250 << 20));
    }

    #[test]
    fn newer_tables_name_the_gfx_firmware_version_key() {
        // Rows of a Flex 170's `xpu-smi discovery -d 0` in Intel's
        // data-center GPU installation guide (dgpu-docs.intel.com,
        // "Installation"): xpu-smi 1.2's `GFX Firmware Version` key.
        let t = "\
| Device ID | Device Information |
| 0         | Device Name: Intel(R) Data Center GPU Flex 170 |
|           | Serial Number: LQAC13401787 |
|           | GFX Firmware Name: GFX |
|           | GFX Firmware Version: DG02_1.3267 |
|           | GFX Data Firmware Name: GFX_DATA |
|           | GFX Data Firmware Version: 0x46b |
|           | ECC State: enabled |
|           | Number of EUs: 512 |
";
        let (g, w) = parse_text(t.as_bytes());
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(g[0].serial.as_deref(), Some("LQAC13401787"));
        assert_eq!(g[0].firmware_version.as_deref(), Some("DG02_1.3267"));
        assert_eq!(g[0].ecc_enabled, Some(true));
        assert_eq!(g[0].eu_count, Some(512));
        // The same facts in `discovery -d 0 -j` (xpumanager's JSON keys).
        let (g, _) = parse_gpus(br#"{"device_id":0,"device_name":"X","serial_number":"unknown","gfx_firmware_version":"DG02_1.3267","memory_ecc_state":"disabled","number_of_eus":"512"}"#);
        assert_eq!(g[0].serial, None);
        assert_eq!(g[0].firmware_version.as_deref(), Some("DG02_1.3267"));
        assert_eq!(g[0].ecc_enabled, Some(false));
        assert_eq!(g[0].eu_count, Some(512));
    }

    #[test]
    fn discovery_table_rows() {
        // Rows of the Windows guide's `xpu-smi.exe discovery -d 0` (intel/
        // xpumanager doc/xpum_win_user_guide.md, the capture
        // xpumanager-win-guide__discovery-d__flex-170-14336mib.txt), with its
        // empty `PCI Slot:` value and blank separator rows.
        let t = "\
+-----------+--------------------------------------------------------------------------------------+
| Device ID | Device Information                                                                   |
+-----------+--------------------------------------------------------------------------------------+
| 0         | Device Type: GPU                                                                     |
|           | Device Name: Intel(R) Data Center GPU Flex Series 170                                |
|           | UUID: 01000000-0000-004d-0000-000856c08086                                           |
|           |                                                                                      |
|           | Driver Version: 16999259                                                             |
|           | PCI BDF Address: 0000:4d:00.0                                                        |
|           | PCI Slot:                                                                            |
|           | Memory Physical Size: 14336.00 MiB                                                   |
+-----------+--------------------------------------------------------------------------------------+
";
        let (g, w) = parse_text(t.as_bytes());
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(g.len(), 1);
        let g = &g[0];
        assert_eq!(g.index, Some(0));
        assert_eq!(
            g.name.as_deref(),
            Some("Intel(R) Data Center GPU Flex Series 170")
        );
        assert_eq!(g.address, "0000:4d:00.0".parse().ok());
        assert_eq!(
            g.uuid.as_deref(),
            Some("01000000-0000-004d-0000-000856c08086")
        );
        assert_eq!(g.driver_version.as_deref(), Some("16999259"));
        assert_eq!(g.memory_bytes, Some(14_336 << 20));
        // A second device starts at the next number in the first column.
        let two = "| Device ID | Device Information |\n| 0 | Device Name: A |\n| 1 | Device Name: B |\n|   | PCI BDF Address: 0000:9a:00.0 |\n";
        let (g, _) = parse_text(two.as_bytes());
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].name.as_deref(), Some("B"));
        assert_eq!(g[1].address, "0000:9a:00.0".parse().ok());
        assert_eq!(g[0].address, None);
        // No table, no device.
        let (g, w) = parse_text(b"xpu-smi: command not found\n");
        assert!(g.is_empty());
        assert_eq!(w, ["xpu-smi discovery table lists no device"]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,200}") {
            let _ = parse_format(s.as_bytes());
            let _ = parse_text_format(s.as_bytes());
        }
    }
}
