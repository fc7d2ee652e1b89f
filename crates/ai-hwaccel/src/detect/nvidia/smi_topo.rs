//! Parser for `nvidia-smi topo -m`: the GPU connection matrix (tab
//! separated, with ANSI underline escapes in the header) and each GPU's CPU
//! and NUMA affinity.
//!
//! Cells: `X` (self), `NV#` (a bonded set of # NVLinks), `PIX`, `PXB`,
//! `PHB`, `NODE`, `SYS` (PCIe paths of increasing distance). Rows and
//! columns for NICs are skipped. Error outputs (no matrix) give a warning.

use crate::detect::ParseOutput;
use crate::model::{Device, DeviceLink, Family};

use super::VENDOR;

/// One GPU row of the matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopoGpu {
    /// nvidia-smi index (`GPU3` → 3).
    pub index: u32,
    /// Links to the other GPUs; `peer` is `gpu<index>`.
    pub links: Vec<DeviceLink>,
    /// The `CPU Affinity` cell (a CPU list such as `0-23`), if given.
    pub cpu_affinity: Option<String>,
    /// The `NUMA Affinity` cell, if a single node number.
    pub numa_affinity: Option<u32>,
}

/// The parsed matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopoMatrix {
    /// GPU rows, in output order.
    pub gpus: Vec<TopoGpu>,
    /// Problems met.
    pub warnings: Vec<String>,
}

/// Remove ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c2 in chars.by_ref() {
                    if c2.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The fields of one matrix line. nvidia-smi separates columns with tabs;
/// copies pasted through terminals and web pages often have the tabs turned
/// into spaces, so a document without tabs is split on runs of two or more
/// spaces (single spaces occur inside `CPU Affinity`). A line that starts
/// with blanks (the header) keeps its empty first field either way.
fn split_fields(line: &str, tabbed: bool) -> Vec<&str> {
    if tabbed {
        return line.split('\t').collect();
    }
    let mut out = Vec::new();
    if line.starts_with(' ') {
        out.push("");
    }
    let mut rest = line.trim();
    while !rest.is_empty() {
        match rest.find("  ") {
            Some(i) => {
                out.push(&rest[..i]);
                rest = rest[i..].trim_start();
            }
            None => {
                out.push(rest);
                break;
            }
        }
    }
    out
}

/// `GPU12` → 12.
fn gpu_index(label: &str) -> Option<u32> {
    label.trim().strip_prefix("GPU")?.parse().ok()
}

/// Link kind and NVLink count of one matrix cell; `None` for `X` and unknown cells.
fn cell_link(cell: &str) -> Option<(String, Option<u32>)> {
    let c = cell.trim();
    if let Some(n) = c.strip_prefix("NV") {
        return n
            .parse::<u32>()
            .ok()
            .map(|n| ("nvlink".to_string(), Some(n)));
    }
    let kind = match c {
        "PIX" => "pcie-pix",
        "PXB" => "pcie-pxb",
        "PHB" => "pcie-phb",
        "NODE" => "node",
        "SYS" => "sys",
        _ => return None,
    };
    Some((kind.to_string(), None))
}

/// Parse the text of `nvidia-smi topo -m`.
pub fn parse_matrix(text: &str) -> TopoMatrix {
    let mut m = TopoMatrix::default();
    let clean = strip_ansi(text);
    let tabbed = clean.contains('\t');
    let mut lines = clean.lines();
    let header = lines.by_ref().find(|l| {
        let f = split_fields(l, tabbed);
        f.first().is_some_and(|first| gpu_index(first).is_none())
            && f.iter().any(|c| gpu_index(c).is_some())
    });
    let Some(header) = header else {
        let first = clean.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        m.warnings.push(format!(
            "no GPU matrix found: {:?}",
            first.trim().chars().take(120).collect::<String>()
        ));
        return m;
    };
    let cols: Vec<&str> = split_fields(header, tabbed)
        .into_iter()
        .map(str::trim)
        .collect();
    let cpu_col = cols.iter().position(|c| *c == "CPU Affinity");
    let numa_col = cols.iter().position(|c| *c == "NUMA Affinity");
    for line in lines {
        if line.trim().is_empty() || line.trim_start().starts_with("Legend") {
            break;
        }
        let fields: Vec<&str> = split_fields(line, tabbed);
        let Some(index) = fields.first().and_then(|f| gpu_index(f)) else {
            continue;
        };
        let mut g = TopoGpu {
            index,
            ..Default::default()
        };
        for (i, col) in cols.iter().enumerate() {
            let Some(peer) = gpu_index(col) else { continue };
            if peer == index {
                continue;
            }
            let Some(cell) = fields.get(i) else {
                m.warnings
                    .push(format!("GPU{index}: row too short for column {col}"));
                break;
            };
            match cell_link(cell) {
                Some((kind, count)) => g.links.push(DeviceLink {
                    peer: format!("gpu{peer}"),
                    kind,
                    count,
                    bandwidth_bytes_per_s: None,
                }),
                None => m.warnings.push(format!(
                    "GPU{index}: unknown cell {:?} for {col}",
                    cell.trim()
                )),
            }
        }
        let cell = |c: Option<usize>| {
            c.and_then(|i| fields.get(i))
                .map(|s| s.trim())
                .filter(|s| !s.is_empty() && *s != "N/A")
        };
        g.cpu_affinity = cell(cpu_col).and_then(|c| {
            let ok = is_cpu_list(c);
            if !ok {
                m.warnings.push(format!(
                    "GPU{index}: CPU Affinity {c:?} is not a CPU list (clipped output?); left out"
                ));
            }
            ok.then(|| c.to_string())
        });
        g.numa_affinity = cell(numa_col).and_then(|s| s.parse().ok());
        m.gpus.push(g);
    }
    if m.gpus.is_empty() {
        m.warnings.push("no GPU rows in the matrix".to_string());
    }
    m
}

/// The `nvidia-smi-topo` format: one bare device per GPU row, id `gpu<index>`
/// (the tool gives no PCI address or name), with `index`, `numa_node` from
/// the NUMA Affinity column, `links` to peers named `gpu<index>` and
/// `extra["cpu_affinity"]`.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let m = parse_matrix(&crate::model::text::decode(bytes));
    let devices = m
        .gpus
        .into_iter()
        .map(|g| {
            let mut d = Device::new(
                format!("gpu{}", g.index),
                format!("GPU{}", g.index),
                VENDOR,
                Family::Gpu,
                "nvidia-smi-topo",
            );
            d.index = Some(g.index);
            d.numa_node = g.numa_affinity;
            d.links = g.links;
            if let Some(c) = g.cpu_affinity {
                d.extra.insert("cpu_affinity".to_string(), c);
            }
            d
        })
        .collect();
    ParseOutput {
        devices,
        warnings: m.warnings,
    }
}

/// Whether `s` is a CPU list as the kernel and nvidia-smi print them:
/// comma-separated CPU numbers and `first-last` ranges (`0-31,64-95`).
fn is_cpu_list(s: &str) -> bool {
    let num = |n: &str| !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit());
    s.split(',').all(|part| match part.trim().split_once('-') {
        Some((a, b)) => num(a) && num(b) && a.parse::<u32>().ok() <= b.parse::<u32>().ok(),
        None => num(part.trim()),
    })
}
