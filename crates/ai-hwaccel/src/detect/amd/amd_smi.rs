//! `amd-smi` output (ROCm's AMD SMI CLI): `static`, `list`, `topology` and
//! `metric` in JSON (`--json`) or the default indented text.
//!
//! Both spellings are turned into one tree (a JSON value with lowercase keys:
//! the text's `ASIC:` / `MARKET_NAME: MI300A` become `asic.market_name`), and
//! one reader takes the facts from that tree, so a field is read the same way
//! from either. Values may be plain (`"64289 MB"`) or `{"value": 64289, "unit": "MB"}`.

use serde_json::{Map, Value};

use crate::model::{Device, DeviceLink, PciAddress};

use super::sysfs::is_placeholder;
use super::{ToolGpu, amd_name, parse_size_bytes};
use crate::detect::formats::ParseOutput;

/// Source name of facts from amd-smi.
pub const SOURCE: &str = "amd-smi";

/// The per-GPU records of amd-smi JSON: a top-level array, an object with a
/// `gpu_data` array (newer releases), or one object.
fn json_records(v: Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(mut o) => match o.remove("gpu_data") {
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err("`gpu_data` is not an array".to_string()),
            None => Ok(vec![Value::Object(o)]),
        },
        _ => Err("not a JSON array or object".to_string()),
    }
}

fn lowercase_keys(v: Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), lowercase_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(lowercase_keys).collect()),
        other => other,
    }
}

/// Parse amd-smi JSON into per-GPU trees (lowercase keys).
pub fn parse_json_tree(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let v: Value = serde_json::from_slice(&crate::model::text::utf8_bytes(bytes))
        .map_err(|e| format!("not JSON: {e}"))?;
    Ok(json_records(v)?
        .into_iter()
        .map(lowercase_keys)
        .filter(|r| r.get("gpu").is_some())
        .collect())
}

/// The record a header line opens: `GPU: N` / `CPU: N` (ROCm's amd-smi), or
/// `GPU N:` / `CPU N:` (the host-side amd-smi of AMD's MxGPU virtualization
/// package, Linux and Windows), as `("gpu", N)`.
fn record_header(key: &str, value: &str) -> Option<(&'static str, u64)> {
    for kind in ["gpu", "cpu"] {
        if key == kind {
            return value.parse().ok().map(|n| (kind, n));
        }
        if value.is_empty()
            && let Some(n) = key.strip_prefix(kind).and_then(|r| r.strip_prefix('_'))
        {
            return n.parse().ok().map(|n| (kind, n));
        }
    }
    None
}

/// Parse amd-smi's text output into per-GPU trees. Records start at
/// `GPU: N` (or `GPU N:`) lines (`CPU: N` records of ESMI sockets are
/// skipped); nesting is by indentation; `KEY:` with no value opens a
/// section, and so does `KEY: N` when deeper lines follow it (the host-side
/// tool's `VF: 0` block under a GPU becomes section `vf_0`, so the VF's
/// `BDF` is not taken for the GPU's).
pub fn parse_text_tree(text: &str) -> Vec<Value> {
    let mut records: Vec<Value> = Vec::new();
    // Current record (None inside a CPU record or before the first GPU).
    let mut cur: Option<Map<String, Value>> = None;
    // Open sections: (indent, path of keys from the record root).
    let mut stack: Vec<(usize, Vec<String>)> = Vec::new();
    // `(indent, key, value)` of every `KEY: value` line, so a line can see
    // the indentation of the next one.
    let lines: Vec<(usize, String, &str)> = text
        .lines()
        .filter_map(|raw| {
            let line = raw.trim_end();
            let indent = line.len() - line.trim_start().len();
            let (key, value) = line.trim().split_once(':')?;
            Some((
                indent,
                key.trim().to_ascii_lowercase().replace(' ', "_"),
                value.trim(),
            ))
        })
        .collect();
    for (i, (indent, key, value)) in lines.iter().enumerate() {
        let (indent, key, value) = (*indent, key.clone(), *value);
        if let Some((kind, n)) = record_header(&key, value) {
            if let Some(r) = cur.take() {
                records.push(Value::Object(r));
            }
            stack.clear();
            if kind == "gpu" {
                // One record past the cap, so callers see that it was passed.
                if records.len() > crate::detect::formats::MAX_DEVICES_PER_OUTPUT {
                    return records;
                }
                let mut m = Map::new();
                m.insert("gpu".into(), Value::from(n));
                cur = Some(m);
            }
            continue;
        }
        let Some(rec) = cur.as_mut() else { continue };
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let parent: Vec<String> = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
        let Some(obj) = object_at(rec, &parent) else {
            continue;
        };
        let opens_numbered =
            !value.is_empty() && lines.get(i + 1).is_some_and(|(next, _, _)| *next > indent);
        if value.is_empty() || opens_numbered {
            let name = if value.is_empty() {
                key.clone()
            } else {
                format!("{key}_{}", value.to_ascii_lowercase().replace(' ', "_"))
            };
            let mut section = Map::new();
            if opens_numbered {
                section.insert(key, Value::String(value.to_string()));
            }
            obj.insert(name.clone(), Value::Object(section));
            let mut p = parent;
            p.push(name);
            stack.push((indent, p));
        } else {
            obj.insert(key, Value::String(value.to_string()));
        }
    }
    if let Some(r) = cur.take() {
        records.push(Value::Object(r));
    }
    records
}

fn object_at<'a>(
    root: &'a mut Map<String, Value>,
    path: &[String],
) -> Option<&'a mut Map<String, Value>> {
    let mut m = root;
    for k in path {
        m = m.get_mut(k)?.as_object_mut()?;
    }
    Some(m)
}

/// A value at `a.b` as text (numbers printed; `{value, unit}` joined with a space).
fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    let s = match cur {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(o) => {
            let value = o.get("value")?;
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            match o.get("unit").and_then(Value::as_str) {
                Some(u) if !u.is_empty() => format!("{value} {u}"),
                _ => value,
            }
        }
        _ => return None,
    };
    (!s.is_empty() && !s.eq_ignore_ascii_case("n/a")).then_some(s)
}

fn first_text(v: &Value, paths: &[&[&str]]) -> Option<String> {
    paths.iter().find_map(|p| text_at(v, p))
}

/// Watts from `550 W` / `550`.
fn watts(s: &str) -> Option<f64> {
    let n = s.trim().trim_end_matches('W').trim();
    n.parse::<f64>().ok().filter(|w| w.is_finite() && *w > 0.0)
}

/// The driver version amd-smi printed, or, where it printed the kernel's
/// `/proc/version` banner instead (with an in-tree amdgpu, which has no
/// module version, amd-smi of ROCm 6.4/7.0 prints e.g.
/// `Linuxversion6.14.0-24-generic(buildd@…)…`, spaces removed), the kernel
/// release from it: the in-tree driver's version is the kernel's.
fn driver_version_of(v: &str) -> String {
    let t = v.trim();
    let rest = t
        .strip_prefix("Linux version ")
        .or_else(|| t.strip_prefix("Linuxversion"));
    match rest {
        Some(r) => {
            let release: String = r
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '(')
                .collect();
            if release.is_empty() {
                t.to_string()
            } else {
                release
            }
        }
        None => t.to_string(),
    }
}

/// One GPU record (a tree from [`parse_json_tree`] or [`parse_text_tree`]) as a device.
pub fn gpu_from_tree(rec: &Value) -> ToolGpu {
    let index = rec
        .get("gpu")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok());
    let address: Option<PciAddress> =
        first_text(rec, &[&["bus", "bdf"], &["bdf"]]).and_then(|s| s.parse().ok());
    let device_id =
        text_at(rec, &["asic", "device_id"]).and_then(|s| crate::detect::sysfs::parse_hex_u16(&s));
    let market = text_at(rec, &["asic", "market_name"])
        .filter(|s| crate::detect::sysfs::parse_hex_u16(s).is_none());
    let product = text_at(rec, &["board", "product_name"]).filter(|s| !is_placeholder(s));
    let name = amd_name(market.as_deref().or(product.as_deref()), device_id);
    let id = match address {
        Some(a) => format!("pci:{a}"),
        None => format!(
            "amd-smi:gpu{}",
            index.map_or("?".to_string(), |i| i.to_string())
        ),
    };
    let mut d = Device::new(
        id,
        name.clone().unwrap_or_else(|| "AMD GPU".to_string()),
        "amd",
        crate::model::Family::Gpu,
        SOURCE,
    );
    d.pci_address = address;
    d.index = index;
    d.compute_capability = text_at(rec, &["asic", "target_graphics_version"]);
    d.compute_units = text_at(rec, &["asic", "num_compute_units"])
        .and_then(|s| s.parse().ok())
        .filter(|&c| c > 0);
    d.serial = first_text(
        rec,
        &[
            &["asic", "asic_serial"],
            &["board", "product_serial"],
            &["board", "serial_number"],
        ],
    )
    .filter(|s| !is_placeholder(s) && !s.starts_with('<'));
    d.uuid = text_at(rec, &["uuid"]).filter(|s| !s.starts_with('<'));
    // ROCm 7's amd-smi names the VBIOS section `IFWI` (integrated
    // firmware image) on Instinct parts, with the same keys.
    d.firmware_version = first_text(rec, &[&["vbios", "version"], &["ifwi", "version"]]);
    // ROCm 6.0's amd-smi passed the library's dict through: `driver_name`,
    // `driver_version`; ROCm 6.1 renamed them `name`, `version`.
    d.driver_version = first_text(
        rec,
        &[&["driver", "version"], &["driver", "driver_version"]],
    )
    .map(|v| driver_version_of(&v));
    d.driver = first_text(rec, &[&["driver", "name"], &["driver", "driver_name"]]);
    d.memory_bytes = text_at(rec, &["vram", "size"])
        .and_then(|s| parse_size_bytes(&s))
        .or_else(|| {
            // ROCm 6.0 JSON: `vram_size_mb` is a bare number of MiB (the text
            // form of the same release prints `65520 MB`).
            text_at(rec, &["vram", "vram_size_mb"]).and_then(|s| {
                let s = s.trim();
                if s.bytes().all(|b| b.is_ascii_digit()) {
                    parse_size_bytes(&format!("{s} MiB"))
                } else {
                    parse_size_bytes(s)
                }
            })
        });
    d.power_limit_watts = first_text(
        rec,
        &[
            &["limit", "socket_power"],
            // amd-smi 26.x (ROCm 7.x) nests the limits per power rail:
            // `LIMIT: PPT0: SOCKET_POWER_LIMIT` (PPT1 is the second rail).
            &["limit", "ppt0", "socket_power_limit"],
            &["limit", "current_power"],
            &["limit", "max_power"],
            &["limit", "ppt0", "max_power_limit"],
        ],
    )
    .and_then(|s| watts(&s));
    // `amd-smi metric`: POWER: SOCKET_POWER (older: AVERAGE_SOCKET_POWER),
    // USAGE: GFX_ACTIVITY (percent).
    d.power_draw_watts = first_text(
        rec,
        &[
            &["power", "socket_power"],
            &["power", "average_socket_power"],
        ],
    )
    .and_then(|s| watts(&s));
    d.utilization_percent = first_text(rec, &[&["usage", "gfx_activity"]])
        .and_then(|s| s.trim().trim_end_matches('%').trim().parse::<f64>().ok());
    d.numa_node =
        text_at(rec, &["numa", "node"]).and_then(|s| crate::detect::sysfs::parse_numa_node(&s));
    d.partition = text_at(rec, &["partition", "compute_partition"]);
    let extras: &[(&str, &[&str])] = &[
        ("memory_partition", &["partition", "memory_partition"]),
        ("vram_type", &["vram", "type"]),
        ("vram_type", &["vram", "vram_type"]),
        ("vram_vendor", &["vram", "vendor"]),
        ("vram_vendor", &["vram", "vram_vendor"]),
        ("oam_id", &["asic", "oam_id"]),
        ("vbios_part_number", &["vbios", "part_number"]),
        ("vbios_part_number", &["ifwi", "part_number"]),
        ("kfd_id", &["kfd_id"]),
        ("kfd_node", &["node_id"]),
        ("partition_id", &["partition_id"]),
        ("socket_power", &["power", "socket_power"]),
    ];
    for (k, path) in extras {
        if d.extra.contains_key(*k) {
            continue;
        }
        if let Some(v) = text_at(rec, path) {
            d.extra.insert((*k).to_string(), v);
        }
    }
    if let Some(Value::Object(types)) = rec.get("link_type") {
        for (peer, t) in types {
            let Some(t) = t.as_str() else { continue };
            let kind = t.to_ascii_lowercase();
            if kind == "self" || kind.is_empty() {
                continue;
            }
            let hops = rec
                .get("hops")
                .and_then(|h| h.get(peer))
                .and_then(Value::as_u64);
            if hops == Some(0) {
                continue;
            }
            d.links.push(DeviceLink {
                peer: peer.replace('_', ""),
                kind,
                count: None,
                bandwidth_bytes_per_s: None,
            });
        }
    }
    // ROCm 6.2+ `topology --json`: a `links` array, one object per peer
    // (`gpu`, `bdf`, `link_type`, `num_hops`, `link_status`, …; CHANGELOG
    // "Updated `amd-smi topology --json` to align with host/guest").
    if let Some(Value::Array(links)) = rec.get("links") {
        for l in links {
            let Some(kind) = text_at(l, &["link_type"]).map(|t| t.to_ascii_lowercase()) else {
                continue;
            };
            if kind == "self" || l.get("num_hops").and_then(Value::as_u64) == Some(0) {
                continue;
            }
            let peer = match text_at(l, &["bdf"]).and_then(|b| b.parse::<PciAddress>().ok()) {
                Some(a) => format!("pci:{a}"),
                None => match l.get("gpu").and_then(Value::as_u64) {
                    Some(g) => format!("gpu{g}"),
                    None => continue,
                },
            };
            if d.links.iter().any(|x| x.peer == peer) {
                continue;
            }
            d.links.push(DeviceLink {
                peer,
                kind,
                count: None,
                bandwidth_bytes_per_s: None,
            });
        }
    }
    ToolGpu { name, device: d }
}

/// Parse amd-smi output: JSON when it is JSON, the text form otherwise.
pub fn parse_gpus(bytes: &[u8]) -> (Vec<ToolGpu>, Vec<String>) {
    let trimmed = crate::model::text::decode(bytes);
    let t = trimmed.trim_start();
    let (trees, mut warnings) = if t.starts_with('[') || t.starts_with('{') {
        match parse_json_tree(bytes) {
            Ok(v) => (v, Vec::new()),
            Err(e) => (Vec::new(), vec![format!("amd-smi JSON: {e}")]),
        }
    } else {
        (parse_text_tree(&trimmed), Vec::new())
    };
    if trees.is_empty() && warnings.is_empty() {
        warnings.push("amd-smi output lists no GPU".to_string());
    }
    if trees.len() > crate::detect::formats::MAX_DEVICES_PER_OUTPUT {
        let _ = crate::detect::formats::device_cap_reached(
            crate::detect::formats::MAX_DEVICES_PER_OUTPUT,
            "amd-smi",
            &mut warnings,
        );
    }
    (
        trees
            .iter()
            .take(crate::detect::formats::MAX_DEVICES_PER_OUTPUT)
            .map(gpu_from_tree)
            .collect(),
        warnings,
    )
}

/// The `amd-smi-json` format (`amd-smi static|list|topology|metric --json`).
pub fn parse_json_format(bytes: &[u8]) -> ParseOutput {
    match parse_json_tree(bytes) {
        Ok(trees) => ParseOutput {
            devices: trees.iter().map(|t| gpu_from_tree(t).device).collect(),
            warnings: if trees.is_empty() {
                vec!["amd-smi JSON lists no GPU".to_string()]
            } else {
                Vec::new()
            },
        },
        Err(e) => ParseOutput {
            devices: Vec::new(),
            warnings: vec![format!("amd-smi JSON: {e}")],
        },
    }
}

/// The `amd-smi-text` format (`amd-smi static` / `amd-smi list` default output).
pub fn parse_text_format(bytes: &[u8]) -> ParseOutput {
    let trees = parse_text_tree(&crate::model::text::decode(bytes));
    let mut out = ParseOutput {
        warnings: if trees.is_empty() {
            vec!["amd-smi text lists no GPU".to_string()]
        } else {
            Vec::new()
        },
        devices: trees.iter().map(|t| gpu_from_tree(t).device).collect(),
    };
    out.cap_devices("amd-smi");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_tree_nesting() {
        let t = parse_text_tree(
            "CPU: 0\n    SMU:\n        FW_VERSION: 1\nGPU: 3\n    ASIC:\n        MARKET_NAME: MI300A\n    BUS:\n        BDF: 0000:01:00.0\n",
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["gpu"], 3);
        assert_eq!(t[0]["asic"]["market_name"], "MI300A");
        assert_eq!(t[0]["bus"]["bdf"], "0000:01:00.0");
    }

    /// The host-side amd-smi (AMD MxGPU virtualization package) nests a
    /// `VF: 0` block with its own `BDF` under the GPU; it used to overwrite
    /// the GPU's address (0000:0c:02.0 was reported for 0000:0c:00.0).
    #[test]
    fn mxgpu_vf_block_keeps_the_gpu_bdf() {
        let t = parse_text_tree(
            "GPU: 0\n    BDF: 0000:0c:00.0\n    UUID: 67ff74a1\n    VF: 0\n        BDF: 0000:0c:02.0\n        UUID: 670074a1\n",
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["bdf"], "0000:0c:00.0");
        assert_eq!(t[0]["vf_0"]["bdf"], "0000:0c:02.0");
        assert_eq!(t[0]["vf_0"]["vf"], "0");
        let d = gpu_from_tree(&t[0]).device;
        assert_eq!(
            d.pci_address.map(|a| a.to_string()).as_deref(),
            Some("0000:0c:00.0")
        );
    }

    /// The Windows host tool (`amd-smi.exe`) heads records `GPU 0:`, not
    /// `GPU: 0`; no record was found at all.
    #[test]
    fn windows_host_gpu_n_colon_header() {
        let t = parse_text_tree(
            "GPU 0:\n    ASIC:\n        MARKET_NAME: MI300\n        DEVICE_ID: 0x74A1\n    VRAM:\n        SIZE: 196592 MB\nGPU 1:\n    BUS:\n        BDF: 0000:83:00.0\n",
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t[0]["gpu"], 0);
        assert_eq!(t[1]["gpu"], 1);
        assert_eq!(t[0]["asic"]["market_name"], "MI300");
        assert_eq!(
            gpu_from_tree(&t[0]).device.memory_bytes,
            Some(196_592 * 1024 * 1024)
        );
        // `CPU N:` records are skipped like `CPU: N` ones.
        let t = parse_text_tree("CPU 0:\n    SMU:\n        FW_VERSION: 1\n");
        assert!(t.is_empty());
    }

    /// A value line followed by a wrapped continuation (no colon) is still a
    /// value, not a section.
    #[test]
    fn wrapped_list_value_is_not_a_section() {
        let t = parse_text_tree(
            "GPU 0:\n    USAGE:\n        JPEG_ACTIVITY: [ 0 %, 0 %,\n                         0 %, 0 % ]\n        GFX_ACTIVITY: 0 %\n",
        );
        assert_eq!(t[0]["usage"]["jpeg_activity"], "[ 0 %, 0 %,");
        assert_eq!(t[0]["usage"]["gfx_activity"], "0 %");
    }

    #[test]
    fn json_value_units() {
        let t = parse_json_tree(br#"[{"gpu":0,"vram":{"size":{"value":192,"unit":"GB"}},"bus":{"bdf":"0000:0a:00.0"}}]"#).unwrap();
        let g = gpu_from_tree(&t[0]);
        assert_eq!(g.device.memory_bytes, Some(192 << 30));
        assert_eq!(g.device.id, "pci:0000:0a:00.0");
        assert!(parse_json_tree(b"{\"gpu_data\": 3}").is_err());
    }

    /// ROCm 6.0's `amd-smi static --json` (amdsmi_cli/amdsmi_commands.py at
    /// tag rocm-6.0.0: the library dicts passed through) names the driver
    /// `driver_name`/`driver_version` and the memory `vram_size_mb`, a bare
    /// number of MiB; ROCm 6.1 renamed them `name`/`version` and `size`.
    #[test]
    fn rocm_6_0_key_names() {
        let t = parse_json_tree(br#"{"gpu":0,"driver":{"driver_name":"amdgpu","driver_version":"6.3.6","driver_date":"2015/01/01 00:00"},"vram":{"vram_type":"HBM","vram_vendor":"N/A","vram_size_mb":65520}}"#).unwrap();
        let d = gpu_from_tree(&t[0]).device;
        assert_eq!(d.memory_bytes, Some(65520 << 20));
        assert_eq!(d.driver.as_deref(), Some("amdgpu"));
        assert_eq!(d.driver_version.as_deref(), Some("6.3.6"));
        assert_eq!(d.extra.get("vram_type").map(String::as_str), Some("HBM"));
        // The text form of the same release prints the unit.
        let t = parse_text_tree("GPU: 0\n    VRAM:\n        VRAM_SIZE_MB: 65520 MB\n");
        assert_eq!(gpu_from_tree(&t[0]).device.memory_bytes, Some(65520 << 20));
    }

    /// amd-smi 26.x text (ROCm 7.2, as in the Strix Point capture, whose
    /// values are all N/A): limits nested under `PPT0`.
    #[test]
    fn ppt0_power_limit() {
        let t = parse_text_tree(
            "GPU: 0\n    LIMIT:\n        PPT0:\n            MAX_POWER_LIMIT: 400 W\n            SOCKET_POWER_LIMIT: 317 W\n        PPT1:\n            SOCKET_POWER_LIMIT: N/A\n",
        );
        assert_eq!(gpu_from_tree(&t[0]).device.power_limit_watts, Some(317.0));
        let t = parse_json_tree(br#"{"gpu_data":[{"gpu":0,"limit":{"ppt0":{"socket_power_limit":{"value":750,"unit":"W"}}}}]}"#).unwrap();
        assert_eq!(gpu_from_tree(&t[0]).device.power_limit_watts, Some(750.0));
    }

    #[test]
    fn kernel_banner_as_driver_version() {
        assert_eq!(
            driver_version_of("Linuxversion6.14.0-24-generic(buildd@lcy02-amd64-010)(x86_64)"),
            "6.14.0-24-generic"
        );
        assert_eq!(
            driver_version_of("Linux version 6.8.0-45-generic (buildd@lcy02) #45"),
            "6.8.0-45-generic"
        );
        assert_eq!(driver_version_of("6.10.5"), "6.10.5");
        assert_eq!(driver_version_of("Linuxversion"), "Linuxversion");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,300}") {
            let _ = parse_gpus(s.as_bytes());
            let _ = parse_json_format(s.as_bytes());
            let _ = parse_text_format(s.as_bytes());
        }
    }
}
