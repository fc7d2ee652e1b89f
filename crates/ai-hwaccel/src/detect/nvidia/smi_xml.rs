//! Parser for `nvidia-smi -q -x` (the `nvsmi_device_v10`…`v13` DTDs, and
//! files without a DOCTYPE): one device per `<gpu>`, one per MIG instance.
//!
//! Elements moved between DTD versions (power limits under `power_readings`
//! or `gpu_power_readings`; volatile ECC as `double_bit/total` or as
//! `*_uncorrectable*` counters), so each fact is looked up along every path
//! it has had. Absent and `N/A` values stay `None`.

use crate::detect::sysfs::parse_hex;
use roxmltree::{Document, Node};

use crate::detect::ParseOutput;
use crate::model::{Device, DeviceLink, Family, MEMORY_RESERVED_KEY, PciAddress, PcieLink};

use super::{
    VENDOR, enabled, gen_to_gts, gpu_id, known, mig_device, mig_profile_from_name, parse_enabled,
    parse_memory, parse_uint, parse_with_unit, read_checked, sort_gpus_then_migs, tool_pci_address,
    tool_pci_info,
};

/// Source name of devices from this parser.
const SOURCE: &str = "nvidia-smi";

/// Deepest element nesting accepted. Real `nvidia-smi -q -x` reports nest
/// at most 5 levels (`nvidia_smi_log/gpu/mig_devices/mig_device/…/total`);
/// roxmltree parses nested elements by recursion, so a document nested
/// thousands deep would overflow the stack and abort the process. 64 is far
/// above any real report and far below what the stack holds.
pub const MAX_XML_DEPTH: usize = 64;

/// Most XML nodes accepted (elements, text, comments): a real report has a
/// few thousand per GPU; this bounds the node table for garbage input of the
/// largest size a tool run may return.
const MAX_XML_NODES: u32 = 4_000_000;

/// Parse the XML of `nvidia-smi -q -x`. Never panics: malformed or
/// truncated input yields the devices read so far (none when the XML does
/// not parse) and warnings.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let mut out = ParseOutput::default();
    let text = crate::model::text::decode(bytes);
    if let Some(line) = too_deep(&text, MAX_XML_DEPTH) {
        out.warnings.push(format!(
            "nvidia-smi -q -x: elements nest deeper than {MAX_XML_DEPTH} levels (line {line}); not parsed"
        ));
        return out;
    }
    let doc = match roxmltree::Document::parse_with_options(
        &text,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            nodes_limit: MAX_XML_NODES,
        },
    ) {
        Ok(d) => d,
        Err(e) => {
            out.warnings
                .push(format!("nvidia-smi -q -x: not well-formed XML: {e}"));
            return out;
        }
    };
    parse_doc(&doc, &mut out);
    out
}

/// The line where element nesting first exceeds `max`, if it does. A linear
/// scan that skips comments, CDATA, processing instructions, the DOCTYPE and
/// quoted attribute values, so it counts elements as the parser will; on
/// malformed input it may over- or under-count, which only decides whether
/// the parser (which then rejects the input itself) is called.
fn too_deep(text: &str, max: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0usize;
    let skip_to = |from: usize, pat: &[u8]| -> usize {
        b[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map_or(b.len(), |p| from + p + pat.len())
    };
    while let Some(p) = b[i..].iter().position(|&c| c == b'<') {
        let at = i + p;
        let rest = &b[at..];
        i = if rest.starts_with(b"<!--") {
            skip_to(at + 4, b"-->")
        } else if rest.starts_with(b"<![CDATA[") {
            skip_to(at + 9, b"]]>")
        } else if rest.starts_with(b"<?") {
            skip_to(at + 2, b"?>")
        } else if rest.starts_with(b"<!") {
            // DOCTYPE, with an internal subset in brackets.
            let mut j = at + 2;
            let mut bracket = 0usize;
            while j < b.len() {
                match b[j] {
                    b'[' => bracket += 1,
                    b']' => bracket = bracket.saturating_sub(1),
                    b'>' if bracket == 0 => break,
                    _ => {}
                }
                j += 1;
            }
            j + 1
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            skip_to(at + 2, b">")
        } else {
            // A start tag: find its end outside quoted attribute values.
            let mut j = at + 1;
            let mut quote = None;
            while j < b.len() {
                match (quote, b[j]) {
                    (None, b'"' | b'\'') => quote = Some(b[j]),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if j < b.len() && b[j - 1] != b'/' {
                depth += 1;
                if depth > max {
                    return Some(text[..at].matches('\n').count() + 1);
                }
            }
            j + 1
        };
        if i >= b.len() {
            break;
        }
    }
    None
}

fn parse_doc(doc: &Document, out: &mut ParseOutput) {
    let root = doc.root_element();
    if root.tag_name().name() != "nvidia_smi_log" {
        out.warnings.push(format!(
            "nvidia-smi -q -x: root element is <{}>, expected <nvidia_smi_log>",
            root.tag_name().name()
        ));
        return;
    }
    let driver_version = text_of(root, &["driver_version"]);
    let cuda_version = text_of(root, &["cuda_version"]);
    let mut gpus: Vec<Device> = Vec::new();
    let mut migs: Vec<Device> = Vec::new();
    for (pos, g) in root
        .children()
        .filter(|n| n.has_tag_name("gpu"))
        .enumerate()
    {
        if crate::detect::formats::device_cap_reached(pos, "nvidia-smi -q -x", &mut out.warnings) {
            break;
        }
        let Some(mut d) = parse_gpu(g, pos, &mut out.warnings) else {
            continue;
        };
        d.driver_version.clone_from(&driver_version);
        if let Some(c) = &cuda_version {
            d.extra.insert("cuda_driver_version".to_string(), c.clone());
        }
        migs.extend(parse_migs(g, &d));
        gpus.push(d);
    }
    // NVLink peers are given by PCI address; name the peer by device id.
    for d in &mut gpus {
        for l in &mut d.links {
            if let Ok(a) = l.peer.parse::<PciAddress>() {
                l.peer = format!("pci:{a}");
            }
        }
    }
    if gpus.is_empty() {
        out.warnings
            .push("nvidia-smi -q -x: no <gpu> element".to_string());
    }
    out.devices.extend(gpus);
    out.devices.extend(migs);
    sort_gpus_then_migs(&mut out.devices);
    out.cap_devices("nvidia-smi -q -x");
}

/// Text of the element at `path` under `node`, if known (not `N/A`).
fn text_of(node: Node, path: &[&str]) -> Option<String> {
    let n = child_path(node, path)?;
    known(n.text().unwrap_or("")).map(str::to_string)
}

fn child_path<'a, 'i>(node: Node<'a, 'i>, path: &[&str]) -> Option<Node<'a, 'i>> {
    path.iter()
        .try_fold(node, |n, name| n.children().find(|c| c.has_tag_name(*name)))
}

fn raw_of<'a>(node: Node<'a, '_>, path: &[&str]) -> Option<&'a str> {
    child_path(node, path)?.text()
}

fn parse_gpu(g: Node, pos: usize, warnings: &mut Vec<String>) -> Option<Device> {
    let id_attr = g.attribute("id");
    let bus_text = text_of(g, &["pci", "pci_bus_id"]).or_else(|| id_attr.map(str::to_string));
    let addr = tool_pci_address(bus_text.as_deref(), "nvidia-smi -q -x", pos, warnings);
    let uuid = text_of(g, &["uuid"]);
    let id = gpu_id(addr, uuid.as_deref(), pos as u64);
    let name = text_of(g, &["product_name"]).unwrap_or_else(|| "NVIDIA GPU".to_string());
    let mut d = Device::new(id, name, VENDOR, Family::Gpu, SOURCE);
    d.pci_address = addr;
    d.index = u32::try_from(pos).ok();
    d.uuid = uuid;
    d.serial = text_of(g, &["serial"]);
    d.architecture = text_of(g, &["product_architecture"]);
    d.firmware_version = text_of(g, &["vbios_version"]);
    d.compute_capability = text_of(g, &["cuda_compute_capability"])
        .or_else(|| text_of(g, &["compute_capability"]))
        .or_else(|| text_of(g, &["compute_cap"]));
    let mut checked = |path: &[&str], parse: &dyn Fn(&str) -> Option<u64>| {
        read_checked(
            raw_of(g, path),
            parse,
            || format!("nvidia-smi -q -x GPU {pos}: {}", path.join("/")),
            warnings,
        )
    };
    let mib = |v: &str| parse_memory(v, "MiB");
    d.memory_bytes = checked(&["fb_memory_usage", "total"], &mib);
    d.memory_free_bytes = checked(&["fb_memory_usage", "free"], &mib);
    if let Some(used) = checked(&["fb_memory_usage", "used"], &mib) {
        d.extra
            .insert("memory_used_bytes".to_string(), used.to_string());
    }
    if let Some(r) = checked(&["fb_memory_usage", "reserved"], &mib) {
        d.extra
            .insert(MEMORY_RESERVED_KEY.to_string(), r.to_string());
    }
    let link_info = ["pci", "pci_gpu_link_info"];
    let sub = |a: &str, b: &str| -> Option<u32> {
        let p = [link_info[0], link_info[1], a, b];
        raw_of(g, &p).and_then(parse_uint)
    };
    let link = PcieLink {
        current_speed_gts: sub("pcie_gen", "current_link_gen").and_then(gen_to_gts),
        current_width: sub("link_widths", "current_link_width").filter(|&w| w > 0),
        max_speed_gts: sub("pcie_gen", "max_link_gen").and_then(gen_to_gts),
        max_width: sub("link_widths", "max_link_width").filter(|&w| w > 0),
    };
    let dev_id = raw_of(g, &["pci", "pci_device_id"]).and_then(|v| known(v).and_then(parse_hex));
    let subsys =
        raw_of(g, &["pci", "pci_sub_system_id"]).and_then(|v| known(v).and_then(parse_hex));
    d.pci = tool_pci_info(dev_id, subsys, link);
    d.power_limit_watts = ["power_readings", "gpu_power_readings"]
        .iter()
        .flat_map(|sec| {
            ["enforced_power_limit", "current_power_limit", "power_limit"]
                .iter()
                .map(move |f| [*sec, *f])
        })
        .find_map(|p| raw_of(g, &p).and_then(|v| parse_with_unit(v, &["W"])));
    d.temperature_celsius = read_checked(
        raw_of(g, &["temperature", "gpu_temp"]),
        |v| parse_with_unit(v, &["C"]),
        || format!("nvidia-smi -q -x GPU {pos}: temperature/gpu_temp"),
        warnings,
    );
    // <utilization><gpu_util>37 %</gpu_util>; the draw: <power_draw>
    // (older drivers), <average_power_draw> / <instant_power_draw> (535+).
    d.utilization_percent =
        raw_of(g, &["utilization", "gpu_util"]).and_then(|v| parse_with_unit(v, &["%"]));
    d.power_draw_watts = ["gpu_power_readings", "power_readings"]
        .iter()
        .flat_map(|sec| {
            ["average_power_draw", "power_draw", "instant_power_draw"]
                .iter()
                .map(move |f| [*sec, *f])
        })
        .find_map(|p| raw_of(g, &p).and_then(|v| parse_with_unit(v, &["W"])));
    d.ecc_enabled = raw_of(g, &["ecc_mode", "current_ecc"]).and_then(parse_enabled);
    d.ecc_uncorrected_errors = volatile_uncorrected(g);
    if let Some(v) = raw_of(g, &["persistence_mode"]).and_then(parse_enabled) {
        d.extra
            .insert("persistence_mode".to_string(), enabled(v).to_string());
    }
    if let Some(v) = text_of(g, &["compute_mode"]) {
        d.extra.insert("compute_mode".to_string(), v);
    }
    if let Some(v) = raw_of(g, &["mig_mode", "current_mig"]).and_then(parse_enabled) {
        d.extra
            .insert("mig_mode".to_string(), enabled(v).to_string());
    }
    if let Some(v) = text_of(g, &["minor_number"]) {
        d.extra.insert("minor_number".to_string(), v);
    }
    if let Some(v) = text_of(g, &["gpu_virtualization_mode", "virtualization_mode"]) {
        d.extra.insert("virtualization_mode".to_string(), v);
    }
    d.links = nvlinks(g);
    Some(d)
}

/// Volatile uncorrected ECC errors: `volatile/double_bit/total` (DTD v10/v11
/// on older GPUs) or the sum of the `volatile/*uncorrectable*` counters
/// (newer DTDs). `None` when no counter is known.
fn volatile_uncorrected(g: Node) -> Option<u64> {
    let vol = child_path(g, &["ecc_errors", "volatile"])?;
    if let Some(total) = raw_of(vol, &["double_bit", "total"]) {
        return known(total)?.parse().ok();
    }
    let mut sum: Option<u64> = None;
    for c in vol.children().filter(|c| c.is_element()) {
        if c.tag_name().name().contains("uncorrectable") {
            if let Some(n) = c.text().and_then(known).and_then(|t| t.parse::<u64>().ok()) {
                sum = Some(sum.unwrap_or(0).saturating_add(n));
            }
        }
    }
    sum
}

/// NVLink links when the XML lists them (`<nvlink>` entries with a remote
/// PCI bus id and an active state); grouped by peer with a link count.
fn nvlinks(g: Node) -> Vec<DeviceLink> {
    let mut by_peer: std::collections::BTreeMap<String, u32> = Default::default();
    for sec in g.descendants().filter(|n| n.has_tag_name("nvlink")) {
        let active = raw_of(sec, &["state"])
            .or_else(|| raw_of(sec, &["link_state"]))
            .is_none_or(|s| matches!(known(s), Some(s) if s.eq_ignore_ascii_case("active") || s.eq_ignore_ascii_case("up")));
        let remote = text_of(sec, &["remote_pci_bus_id"])
            .or_else(|| text_of(sec, &["remote_pci_info", "bus_id"]));
        if let (true, Some(r)) = (active, remote) {
            *by_peer.entry(r).or_default() += 1;
        }
    }
    by_peer
        .into_iter()
        .map(|(peer, count)| DeviceLink {
            peer,
            kind: "nvlink".to_string(),
            count: Some(count),
            bandwidth_bytes_per_s: None,
        })
        .collect()
}

/// MIG instances under `<mig_devices>` (a text `None` means MIG is off).
fn parse_migs(g: Node, parent: &Device) -> Vec<Device> {
    let Some(list) = child_path(g, &["mig_devices"]) else {
        return Vec::new();
    };
    list.children()
        .filter(|n| n.has_tag_name("mig_device"))
        .map(|m| {
            let gi = raw_of(m, &["gpu_instance_id"]).and_then(parse_uint);
            let ci = raw_of(m, &["compute_instance_id"]).and_then(parse_uint);
            let mut d = mig_device(parent, gi, ci, SOURCE);
            d.index = raw_of(m, &["index"]).and_then(parse_uint);
            d.uuid = text_of(m, &["uuid"]);
            if let Some(profile) = text_of(m, &["profile_name"])
                .or_else(|| text_of(m, &["name"]).and_then(|n| mig_profile_from_name(&n)))
            {
                d.name = format!("{} MIG {profile}", parent.name);
                d.partition = Some(profile);
            }
            d.memory_bytes =
                raw_of(m, &["fb_memory_usage", "total"]).and_then(|v| parse_memory(v, "MiB"));
            d.memory_free_bytes =
                raw_of(m, &["fb_memory_usage", "free"]).and_then(|v| parse_memory(v, "MiB"));
            d.compute_units = raw_of(m, &["device_attributes", "shared", "multiprocessor_count"])
                .and_then(parse_uint);
            d.ecc_uncorrected_errors = child_path(m, &["ecc_error_count", "volatile_count"])
                .and_then(|v| {
                    v.children()
                        .filter(|c| c.tag_name().name().contains("uncorrectable"))
                        .filter_map(|c| {
                            c.text().and_then(known).and_then(|t| t.parse::<u64>().ok())
                        })
                        .reduce(u64::saturating_add)
                });
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log><gpu id=\"00000000:01:00.0\"><product_name>{}x{}</product_name></gpu></nvidia_smi_log>",
            "<a>".repeat(depth),
            "</a>".repeat(depth)
        )
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        // 5,000 levels (35 KB) aborted the process before the depth bound.
        let out = parse(nested(5_000).as_bytes());
        assert!(out.devices.is_empty());
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(
            out.warnings[0].contains("nest deeper than 64"),
            "{:?}",
            out.warnings
        );
        // A million levels: still one warning, no abort.
        let out = parse(nested(1_000_000).as_bytes());
        assert!(out.warnings[0].contains("nest deeper"));
    }

    #[test]
    fn depth_scan_counts_like_the_parser() {
        // Within the bound the document parses (product_name holds elements,
        // so it has no text of its own and the default name is used).
        let out = parse(nested(MAX_XML_DEPTH - 3).as_bytes());
        assert_eq!(out.devices.len(), 1, "{:?}", out.warnings);
        // Self-closing tags, comments, CDATA and `>` inside attribute values
        // do not nest.
        let flat = format!(
            "<r>{}</r>",
            "<e a=\"x>y\"/><!-- <a><a> --><![CDATA[<a><a>]]><?pi <a> ?>".repeat(1000)
        );
        assert_eq!(too_deep(&flat, 2), None);
        assert_eq!(too_deep("<a>\n<b>\n<c>", 2), Some(3));
        assert_eq!(too_deep("<a></a><b></b><c></c>", 1), None);
    }
}
