//! Parser for `nvidia-smi nvlink -s` (`nvidia-smi nvlink --status`): one
//! device per `GPU N: NAME (UUID: GPU-…)` line with the per-link speeds
//! indented under it (`Link 3: 25 GB/s`, `Link 3: <inactive>`), or a message
//! from nvidia-smi in their place (`Device does not have or support Nvlink`,
//! `NVML: Unable to retrieve Nvlink information as all links are inActive`,
//! `Nvlink queries are not supported for Devices in MIG mode`).
//!
//! The output names no peers, so `links` stays empty (peers come from
//! `nvidia-smi topo -m` or the XML); the facts go in `extra`:
//! `nvlink_links_total`, `nvlink_links_active`,
//! `nvlink_link_speed_bytes_per_s` (when all active links share one speed),
//! `nvlink_bandwidth_bytes_per_s` (the sum over active links) and
//! `nvlink_status` (the message, when one was printed).
//!
//! Speeds are as printed, in decimal units (1 GB/s = 10^9 B/s). nvidia-smi
//! prints the per-direction signalling rate of a link: 26.562 GB/s on H100
//! and H200, where NVIDIA quotes 25 GB/s per direction per NVLink 4 link
//! (900 GB/s for 18 links, both directions). So these figures describe the
//! link as the tool reports it and are not used for bandwidth claims.

use crate::detect::ParseOutput;
use crate::model::{Device, Family};

use super::{VENDOR, gpu_id, number_and_unit};

/// Source name of devices from this parser.
const SOURCE: &str = "nvidia-smi";

/// One `GPU N:` block of the output.
#[derive(Debug, Default)]
struct GpuBlock {
    /// Position among the GPU lines (used when the index does not parse).
    pos: usize,
    index: Option<u32>,
    name: Option<String>,
    uuid: Option<String>,
    /// Speed of each listed link in bytes/s; `None` for an inactive link.
    links: Vec<Option<u64>>,
    /// The message printed instead of links, if any.
    status: Option<String>,
    /// Link counts implied by the message: (total, active).
    status_counts: (Option<u64>, Option<u64>),
}

/// Parse the output of `nvidia-smi nvlink -s`. Never panics; lines that are
/// neither a GPU line, a link line nor a message under a GPU are warnings.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let text = crate::model::text::decode(bytes);
    let mut out = ParseOutput::default();
    let mut gpus: Vec<GpuBlock> = Vec::new();
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw).trim();
        if line.is_empty() {
            continue;
        }
        let lineno = n + 1;
        if let Some(g) = gpu_line(line, gpus.len()) {
            if crate::detect::formats::device_cap_reached(
                gpus.len(),
                "nvidia-smi nvlink",
                &mut out.warnings,
            ) {
                break;
            }
            gpus.push(g);
            continue;
        }
        let Some(g) = gpus.last_mut() else {
            out.warnings.push(format!(
                "nvidia-smi nvlink: line {lineno}: not under a GPU line: {line:?}"
            ));
            continue;
        };
        if line.starts_with("Link ") {
            match link_line(line) {
                Some(speed) => g.links.push(speed),
                None => out.warnings.push(format!(
                    "nvidia-smi nvlink: line {lineno}: unparsable link line: {line:?}"
                )),
            }
            continue;
        }
        // An elision a person put in a pasted report (`...`, `…`): not a
        // message of nvidia-smi's.
        if line.chars().all(|c| c == '.' || c == '…') {
            out.warnings.push(format!(
                "nvidia-smi nvlink: line {lineno}: elided output ({line:?}): the report is incomplete"
            ));
            continue;
        }
        let counts = status_counts(line);
        if counts.is_none() {
            out.warnings.push(format!(
                "nvidia-smi nvlink: line {lineno}: unrecognised message for GPU {}: {line:?}",
                g.index.map_or_else(|| g.pos.to_string(), |i| i.to_string())
            ));
        }
        g.status_counts = counts.unwrap_or((None, None));
        // Appended in place: rebuilding the string per line was quadratic.
        match &mut g.status {
            Some(prev) => {
                prev.push_str("; ");
                prev.push_str(line);
            }
            None => g.status = Some(line.to_string()),
        }
    }
    if gpus.is_empty() {
        out.warnings
            .push("nvidia-smi nvlink: no `GPU N: …` line".to_string());
    }
    out.devices = gpus.into_iter().map(device).collect();
    out
}

/// `GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-…)`.
fn gpu_line(line: &str, pos: usize) -> Option<GpuBlock> {
    let rest = line.strip_prefix("GPU ")?;
    let (idx, tail) = rest.split_once(':')?;
    let index = idx.trim().parse::<u32>().ok()?;
    let tail = tail.trim();
    let (name, uuid) = match tail.strip_suffix(')').and_then(|t| t.rsplit_once("(UUID:")) {
        Some((name, uuid)) => (name.trim(), Some(uuid.trim())),
        None => (tail, None),
    };
    Some(GpuBlock {
        pos,
        index: Some(index),
        name: (!name.is_empty()).then(|| name.to_string()),
        // nvidia-smi's UUIDs are `GPU-…` (`MIG-…` for MIG devices); anything
        // else (`...`, `<redacted>`) is a person's redaction, not an identity.
        uuid: uuid
            .filter(|u| {
                let l = u.to_ascii_uppercase();
                l.len() > 4 && (l.starts_with("GPU-") || l.starts_with("MIG-"))
            })
            .map(str::to_string),
        ..GpuBlock::default()
    })
}

/// `Link 3: 25 GB/s` → `Some(Some(25e9))`; `Link 3: <inactive>` →
/// `Some(None)`; anything else → `None`.
fn link_line(line: &str) -> Option<Option<u64>> {
    let (label, value) = line.split_once(':')?;
    label.strip_prefix("Link ")?.trim().parse::<u32>().ok()?;
    let value = value.trim();
    if value.eq_ignore_ascii_case("<inactive>") {
        return Some(None);
    }
    let (n, unit) = number_and_unit(value)?;
    let scale = match unit {
        "B/s" => 1.0,
        "KB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "TB/s" => 1e12,
        _ => return None,
    };
    let b = n * scale;
    (0.0..1e18).contains(&b).then(|| Some(b.round() as u64))
}

/// Link counts (total, active) a known nvidia-smi message implies; `None`
/// for a message not recognised. A message that leaves the counts unknown
/// (MIG mode) gives `(None, None)`.
fn status_counts(line: &str) -> Option<(Option<u64>, Option<u64>)> {
    let l = line.to_ascii_lowercase();
    if l.contains("does not have or support nvlink") {
        Some((Some(0), Some(0)))
    } else if l.contains("all links are inactive") {
        Some((None, Some(0)))
    } else if l.contains("not supported") && l.contains("mig mode") {
        Some((None, None))
    } else {
        None
    }
}

fn device(g: GpuBlock) -> Device {
    let n = g.index.map_or(g.pos as u64, u64::from);
    let id = gpu_id(None, g.uuid.as_deref(), n);
    let name = g.name.clone().unwrap_or_else(|| "NVIDIA GPU".to_string());
    let mut d = Device::new(id, name, VENDOR, Family::Gpu, SOURCE);
    d.index = g.index;
    d.uuid = g.uuid;
    let mut put = |k: &str, v: u64| {
        d.extra.insert(k.to_string(), v.to_string());
    };
    let (total, active) = if g.links.is_empty() {
        g.status_counts
    } else {
        let active = g.links.iter().flatten().count() as u64;
        (Some(g.links.len() as u64), Some(active))
    };
    if let Some(t) = total {
        put("nvlink_links_total", t);
    }
    if let Some(a) = active {
        put("nvlink_links_active", a);
        let speeds: Vec<u64> = g.links.iter().flatten().copied().collect();
        put(
            "nvlink_bandwidth_bytes_per_s",
            speeds.iter().copied().fold(0, u64::saturating_add),
        );
        if let Some(&first) = speeds.first() {
            if speeds.iter().all(|&s| s == first) {
                put("nvlink_link_speed_bytes_per_s", first);
            }
        }
    }
    if let Some(s) = g.status {
        d.extra.insert("nvlink_status".to_string(), s);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_speeds_and_inactive_links() {
        let out = parse(
            b"GPU 0: Test GPU (UUID: GPU-1)\r\n\tLink 0: 25 GB/s\r\n\tLink 1: <inactive>\r\n\tLink 2: 20 GB/s\r\nGPU 1: Other\n",
        );
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let d = &out.devices[0];
        assert_eq!(
            (d.id.as_str(), d.name.as_str()),
            ("nvidia:GPU-1", "Test GPU")
        );
        assert_eq!(d.extra["nvlink_links_total"], "3");
        assert_eq!(d.extra["nvlink_links_active"], "2");
        assert_eq!(d.extra["nvlink_bandwidth_bytes_per_s"], "45000000000");
        assert_eq!(
            d.extra.get("nvlink_link_speed_bytes_per_s"),
            None,
            "speeds differ"
        );
        let e = &out.devices[1];
        assert_eq!(
            (e.id.as_str(), e.index, e.uuid.as_deref()),
            ("nvidia:gpu1", Some(1), None)
        );
        assert!(
            e.extra.is_empty(),
            "nothing printed, nothing known: {:?}",
            e.extra
        );
    }

    #[test]
    fn unparsable_lines_warn() {
        let out = parse(b"Link 0: 25 GB/s\nGPU 0: X (UUID: GPU-2)\n Link x: 25 GB/s\n Link 1: 25 parsecs\nSomething odd\n");
        assert_eq!(out.devices.len(), 1);
        assert_eq!(out.warnings.len(), 4, "{:?}", out.warnings);
        assert_eq!(out.devices[0].extra["nvlink_status"], "Something odd");
        assert_eq!(out.devices[0].extra.get("nvlink_links_active"), None);
        let empty = parse(b"");
        assert!(empty.devices.is_empty() && empty.warnings.len() == 1);
    }
}
