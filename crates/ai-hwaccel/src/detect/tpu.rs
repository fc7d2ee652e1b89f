//! The `tpu` backend: Google Cloud TPU chips attached to this host.
//!
//! Evidence, cheapest first: PCI functions of vendor 0x1ae0 with a TPU
//! device id (generation from the id, and for 0x0027 from the subsystem id:
//! the table of `TpuChip.from_pci_device_id` in AI-Hypercomputer/
//! cloud-accelerator-diagnostics `tpu_info/tpu_info/device.py` at
//! 2cbfaa9d228bf76874ed1a83e2b10f11ff8e4178; TPU v4 lite 0x0056 from
//! google/gvisor `pkg/abi/tpu/tpu.go`), the `/dev/accel<N>` nodes of the
//! v2–v4 driver, and the `TPU_*` environment Cloud TPU VMs and GKE set
//! (`TPU_ACCELERATOR_TYPE` such as `v5litepod-8`). Only when one of them is
//! present does it run `tpu-info` and read chips, types and HBM from it.
//! `/dev/vfio/<N>` (v5e and later) is counted only alongside PCI or
//! environment evidence, since any VFIO passthrough device creates one.
//!
//! Chips are paired with the PCI functions in address order when both
//! counts agree (a host carries one TPU generation, so the pairing cannot
//! mislabel a model).
//!
//! `TPU_VISIBLE_CHIPS` (libtpu's chip mask: comma-separated chip indexes,
//! as vLLM's TPU platform `device_control_env_var` and torch_xla's
//! `configure_topology` set it, e.g. `0,1,2,3`) hides the chips it does not
//! list: they stay listed, unavailable, `hidden by TPU_VISIBLE_CHIPS`.
//! libtpu applies the mask only when the value is non-empty, so an empty
//! value hides nothing; a value that is not an index list is not applied
//! and becomes a warning ([`tpu_visibility`]).

use crate::model::{Device, Family, Labels, PciAddress, parse_size};
use crate::probe::ProbeExt;

use super::formats::ParseOutput;
use super::sysfs::parse_cpulist;
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

/// PCI vendor id of Google.
pub const GOOGLE_VENDOR_ID: u16 = 0x1ae0;

/// Environment variables recorded on TPU devices when set.
const TPU_ENV: &[&str] = &[
    "TPU_ACCELERATOR_TYPE",
    "TPU_WORKER_ID",
    "TPU_TOPOLOGY",
    "TPU_CHIPS_PER_HOST_BOUNDS",
    "TPU_HOST_BOUNDS",
    "TPU_NAME",
];

/// TPU generation of a Google PCI device id (and subsystem device id for
/// 0x0027, shared by v2 and v3). Sources in the module doc.
pub fn generation_of_pci(device_id: u16, subsystem_device: Option<u16>) -> Option<&'static str> {
    match (device_id, subsystem_device) {
        (0x0027, Some(0x004e)) => Some("v2"),
        (0x0027, Some(0x004f)) => Some("v3"),
        (0x0027, _) => Some("v2/v3"),
        (0x005e, _) => Some("v4"),
        (0x0056, _) => Some("v4lite"),
        (0x0063, _) => Some("v5e"),
        (0x0062, _) => Some("v5p"),
        (0x006f, _) => Some("v6e"),
        (0x0076, _) => Some("7x"),
        _ => None,
    }
}

/// TPU generation from an accelerator type (`v5litepod-8` → `v5e`,
/// `v4-8` → `v4`, `v6e-4` → `v6e`, `tpu7x-8` → `7x`).
pub fn generation_of_accelerator_type(t: &str) -> Option<String> {
    let t = t.trim().to_ascii_lowercase();
    let head = t.split('-').next()?;
    let g = match head {
        "v5litepod" | "v5lite" | "v5e" => "v5e",
        "v5p" => "v5p",
        "v6e" => "v6e",
        "tpu7x" | "7x" | "v7x" => "7x",
        h if h.starts_with('v')
            && h[1..].chars().all(|c| c.is_ascii_alphanumeric())
            && h.len() > 1 =>
        {
            h
        }
        _ => return None,
    };
    Some(g.to_string())
}

/// One chip as tpu-info shows it. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TpuChip {
    /// Chip index (from `/dev/vfio/<N>`, `/dev/accel<N>` or the `Chip` column).
    pub index: u32,
    /// Device path when shown.
    pub path: Option<String>,
    /// Generation from the `Type` column (`TPU v6e chip` → `v6e`).
    pub generation: Option<String>,
    /// TensorCores (`Devices` column).
    pub cores: Option<u32>,
    /// HBM total in bytes.
    pub hbm_total_bytes: Option<u64>,
    /// HBM in use in bytes.
    pub hbm_used_bytes: Option<u64>,
    /// Duty cycle in percent (the share of the sampling period the chip's
    /// TensorCores were busy, as libtpu reports it to tpu-info).
    pub duty_cycle_percent: Option<f64>,
}

/// What one tpu-info output held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TpuInfoReport {
    /// `Accelerator type:` header.
    pub accelerator_type: Option<String>,
    /// `Libtpu version:` header.
    pub libtpu_version: Option<String>,
    /// Chips in index order.
    pub chips: Vec<TpuChip>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

fn chip_index(cell: &str) -> Option<(u32, Option<String>)> {
    let c = cell.trim();
    if let Ok(n) = c.parse() {
        return Some((n, None));
    }
    let digits: String = c
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let is_dev = c.starts_with("/dev/vfio/") || c.starts_with("/dev/accel");
    (is_dev && !digits.is_empty())
        .then(|| digits.parse().ok().map(|n| (n, Some(c.to_string()))))
        .flatten()
}

/// `18.45 GiB / 31.25 GiB` → (used, total) bytes.
fn parse_hbm(v: &str) -> (Option<u64>, Option<u64>) {
    let one = |s: &str| parse_size(s, None, Labels::Binary);
    match v.split_once('/') {
        Some((u, t)) => (one(u), one(t)),
        None => (None, None),
    }
}

/// `100.00%` → 100.0; `None` for anything that is not a percentage in
/// 0–100.
fn parse_percent(v: &str) -> Option<f64> {
    let n: f64 = v.trim().trim_end_matches('%').trim().parse().ok()?;
    (n.is_finite() && (0.0..=100.0).contains(&n)).then_some(n)
}

/// Whether a header cell names the duty cycle (`Duty cycle`, `Duty Cycle (%)`).
fn is_duty_col(k: &str) -> bool {
    k.to_ascii_lowercase().starts_with("duty cycle")
}

/// Column separators of tpu-info tables: `|` (Markdown, as the README
/// prints them) and the box-drawing bars of the `rich` tables the tool
/// prints on a terminal (`┃` in the header, `│` in rows).
const TABLE_BARS: &[char] = &['|', '│', '┃'];

/// Whether `t` is a rule line of a `rich` table (`┏━━┳━━┓`, `┡━━╇━━┩`,
/// `└──┴──┘`): box-drawing characters only.
fn is_box_rule(t: &str) -> bool {
    !t.is_empty()
        && t.chars()
            .all(|c| ('\u{2500}'..='\u{257f}').contains(&c) && !TABLE_BARS.contains(&c))
}

/// Parse `tpu-info` output (plain or `--metric`/`--process` views; Markdown
/// or box-drawn tables). Tables whose first column is `Chip` (or, in the
/// 2024 releases, `Device` holding `/dev/accel<N>`) add or fill chips; the
/// 2024 releases' per-device `Memory usage` tables (first column `Device` or
/// `Core ID`) fill chips holding one device each. Never panics.
pub fn parse_tpu_info(text: &str) -> TpuInfoReport {
    let mut rep = TpuInfoReport::default();
    let mut header: Option<Vec<String>> = None;
    // (device index, used, total) of per-device memory rows.
    let mut device_hbm: Vec<(u32, Option<u64>, Option<u64>)> = Vec::new();
    // (device index, duty cycle %) of per-device (per-core) duty rows.
    let mut device_duty: Vec<(u32, f64)> = Vec::new();
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.chips.len()) {
            break;
        }
        let t = line.trim();
        if is_box_rule(t) {
            // The rule under a header row keeps the header; the top and
            // bottom rules end a table.
            if !(t.starts_with('┡') || t.starts_with('├') || t.starts_with('╞')) {
                header = None;
            }
            continue;
        }
        if !t.starts_with(TABLE_BARS) {
            header = None;
            let kv = t.trim_start_matches("- ");
            if let Some((k, v)) = kv.split_once(':') {
                let v = v.trim();
                match k.trim().to_ascii_lowercase().as_str() {
                    "accelerator type" if !v.is_empty() => {
                        rep.accelerator_type = Some(v.to_string())
                    }
                    "libtpu version" if !v.is_empty() => rep.libtpu_version = Some(v.to_string()),
                    _ => {}
                }
            }
            continue;
        }
        let cells: Vec<String> = t
            .trim_matches(TABLE_BARS)
            .split(TABLE_BARS)
            .map(|c| c.trim().to_string())
            .collect();
        let Some(h) = &header else {
            header = Some(cells);
            continue;
        };
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue;
        }
        if cells.len() != h.len() {
            continue;
        }
        let first = h.first().map(String::as_str).unwrap_or("");
        // `Memory usage` (2024), `HBM usage` (2025), `HBM Usage (GiB)` (2026).
        let memory_col = h.iter().position(|k| {
            let k = k.to_ascii_lowercase();
            k.starts_with("memory usage") || k.starts_with("hbm usage")
        });
        let duty_col = h.iter().position(|k| is_duty_col(k));
        // A runtime table headed `Chip` whose rows are libtpu device ids
        // (`8`, `9`, `12`, `13` on a v6e host whose chips are /dev/vfio/0-3,
        // tpu-info of October 2025) names no listed chip: its rows are
        // device rows, not new chips.
        let bare_unlisted_chip = first == "Chip"
            && cells[0].parse::<u32>().is_ok_and(|i| {
                !rep.chips.is_empty()
                    && rep.chips.iter().all(|c| c.path.is_some())
                    && !rep.chips.iter().any(|c| c.index == i)
            });
        if (matches!(first, "Device" | "Core ID") || bare_unlisted_chip)
            && cells[0].parse::<u32>().is_ok()
        {
            let i = cells[0].parse::<u32>().unwrap_or(0);
            if let Some(col) = memory_col {
                if device_hbm.len() <= crate::detect::formats::MAX_DEVICES_PER_OUTPUT {
                    let (u, tot) = parse_hbm(&cells[col]);
                    device_hbm.push((i, u, tot));
                }
            }
            if let Some(col) = duty_col {
                match parse_percent(&cells[col]) {
                    Some(p)
                        if device_duty.len() <= crate::detect::formats::MAX_DEVICES_PER_OUTPUT =>
                    {
                        device_duty.push((i, p))
                    }
                    Some(_) => {}
                    None => rep.warnings.push(format!(
                        "tpu-info device {i}: duty cycle {:?} not understood",
                        cells[col]
                    )),
                }
            }
            continue;
        }
        let dev_path_first = first == "Device" && cells[0].starts_with("/dev/");
        if first != "Chip" && !dev_path_first {
            continue;
        }
        let Some((index, path)) = chip_index(&cells[0]) else {
            rep.warnings
                .push(format!("tpu-info: chip {:?} not understood", cells[0]));
            continue;
        };
        let pos = match rep.chips.iter().position(|c| c.index == index) {
            Some(p) => p,
            None => {
                rep.chips.push(TpuChip {
                    index,
                    ..Default::default()
                });
                rep.chips.len() - 1
            }
        };
        let chip = &mut rep.chips[pos];
        if chip.path.is_none() {
            chip.path = path;
        }
        for (k, v) in h.iter().zip(&cells).skip(1) {
            if k == "Type" {
                chip.generation = v
                    .split_whitespace()
                    .find(|w| *w != "TPU" && *w != "chip")
                    .map(|g| g.trim_start_matches("TPU").to_string());
            } else if k == "Devices" || k == "Cores" {
                chip.cores = v.parse().ok();
            } else if is_duty_col(k) {
                chip.duty_cycle_percent = parse_percent(v);
                if chip.duty_cycle_percent.is_none() {
                    rep.warnings.push(format!(
                        "tpu-info chip {index}: duty cycle {v:?} not understood"
                    ));
                }
            } else if k.to_ascii_lowercase().starts_with("hbm usage") {
                let (u, tot) = parse_hbm(v);
                if tot.is_none() {
                    rep.warnings
                        .push(format!("tpu-info chip {index}: HBM {v:?} not understood"));
                }
                chip.hbm_used_bytes = u;
                chip.hbm_total_bytes = tot;
            }
        }
    }
    crate::detect::formats::cap_records(&mut rep.chips, "tpu-info", &mut rep.warnings);
    rep.chips.sort_by_key(|c| c.index);
    if !device_hbm.is_empty() || !device_duty.is_empty() {
        // Device i is chip i only when every chip holds one device: v4 and
        // v5e print `Devices`/`Cores` 1, or (no count printed) the rows
        // number exactly the chips, index for index — every chip holds at
        // least one device, so n devices on n chips is one each. Otherwise
        // the rows cannot be attributed to chips.
        let rows: std::collections::BTreeSet<u32> = device_hbm
            .iter()
            .map(|r| r.0)
            .chain(device_duty.iter().map(|r| r.0))
            .collect();
        let chips: std::collections::BTreeSet<u32> = rep.chips.iter().map(|c| c.index).collect();
        let one_each = rep.chips.iter().all(|c| c.cores == Some(1))
            || (rep.chips.iter().all(|c| c.cores.is_none()) && rows == chips);
        // Rows keyed by libtpu device ids (8, 9, 12, 13) rather than chip
        // indices (0-3) cannot say which chip is which; when there is one
        // row per chip and every row gives the same HBM total, that total
        // is each chip's (it is the chip type's), and usage and duty cycle
        // stay unattributed.
        let ids_differ = one_each && !rows.is_subset(&chips);
        if ids_differ {
            let totals: std::collections::BTreeSet<Option<u64>> =
                device_hbm.iter().map(|r| r.2).collect();
            let n_hbm_rows: std::collections::BTreeSet<u32> =
                device_hbm.iter().map(|r| r.0).collect();
            match totals.into_iter().collect::<Vec<_>>().as_slice() {
                [Some(total)] if n_hbm_rows.len() == rep.chips.len() => {
                    for c in &mut rep.chips {
                        c.hbm_total_bytes.get_or_insert(*total);
                    }
                }
                _ => rep.warnings.push(
                    "tpu-info: per-device rows are keyed by device ids that name no chip; not attributed"
                        .to_string(),
                ),
            }
        } else if one_each {
            for (i, used, total) in device_hbm {
                if let Some(c) = rep.chips.iter_mut().find(|c| c.index == i) {
                    if c.hbm_total_bytes.is_none() {
                        c.hbm_total_bytes = total;
                        c.hbm_used_bytes = used;
                    }
                }
            }
            for (i, duty) in device_duty {
                if let Some(c) = rep.chips.iter_mut().find(|c| c.index == i) {
                    c.duty_cycle_percent.get_or_insert(duty);
                }
            }
        } else {
            rep.warnings.push(
                "tpu-info: per-device memory and duty-cycle rows not attributed: a chip holds more than one device, or the output does not say how many"
                    .to_string(),
            );
        }
    }
    rep
}

/// The variable that hides the chips of a TPU host.
pub const TPU_VISIBLE_CHIPS: &str = "TPU_VISIBLE_CHIPS";

/// Which chips `TPU_VISIBLE_CHIPS` (the value given) hides: per chip index,
/// `true` when hidden. Chips of unknown index are never hidden. An unset or
/// empty value hides nothing; a value that is not a list of indexes (ranges
/// such as `0-3` are accepted) hides nothing and returns a warning.
pub fn tpu_visibility(indexes: &[Option<u32>], value: Option<&str>) -> (Vec<bool>, Option<String>) {
    let none = vec![false; indexes.len()];
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return (none, None);
    };
    match parse_cpulist(v) {
        Some(list) => (
            indexes
                .iter()
                .map(|i| i.is_some_and(|i| !list.contains(&i)))
                .collect(),
            None,
        ),
        None => (
            none,
            Some(format!(
                "{TPU_VISIBLE_CHIPS}={v:?}: not a list of chip indexes; not applied"
            )),
        ),
    }
}

fn chip_device(c: &TpuChip, rep: &TpuInfoReport, addr: Option<PciAddress>) -> Device {
    let generation = c.generation.clone().or_else(|| {
        rep.accelerator_type
            .as_deref()
            .and_then(generation_of_accelerator_type)
    });
    let name = generation
        .as_deref()
        .map_or_else(|| "Google TPU".to_string(), |g| format!("Google TPU {g}"));
    let id = addr.map_or_else(|| format!("tpu:{}", c.index), |a| format!("pci:{a}"));
    let mut d = Device::new(id, name, "google", Family::Tpu, "tpu-info");
    d.pci_address = addr;
    d.index = Some(c.index);
    d.architecture = generation;
    d.compute_units = c.cores;
    d.memory_bytes = c.hbm_total_bytes;
    d.utilization_percent = c.duty_cycle_percent;
    d.memory_free_bytes = match (c.hbm_total_bytes, c.hbm_used_bytes) {
        (Some(t), Some(u)) => t.checked_sub(u),
        _ => None,
    };
    if let Some(p) = &c.path {
        d.extra.insert("device_path".into(), p.clone());
    }
    if let Some(v) = &rep.libtpu_version {
        d.extra.insert("libtpu_version".into(), v.clone());
    }
    if let Some(v) = &rep.accelerator_type {
        d.extra.insert("accelerator_type".into(), v.clone());
    }
    d
}

/// Parser for `ai-hwaccel parse tpu-info`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_tpu_info(&crate::model::text::decode(bytes));
    let devices: Vec<Device> = rep
        .chips
        .iter()
        .map(|c| chip_device(c, &rep, None))
        .collect();
    let mut warnings = rep.warnings.clone();
    if devices.is_empty() {
        warnings.push("no TPU chip rows found".into());
    }
    ParseOutput { devices, warnings }
}

/// The `tpu` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let on_pci: Vec<_> = ctx
        .pci()
        .by_vendor(GOOGLE_VENDOR_ID)
        .filter(|p| p.family == Family::Tpu || generation_of_pci(p.device_id, None).is_some())
        .collect();
    let env: Vec<(&str, String)> = TPU_ENV
        .iter()
        .filter_map(|k| ctx.probe.env(k).map(|v| (*k, v)))
        .filter(|(_, v)| !v.trim().is_empty())
        .collect();
    let dev = ctx.probe.list_or_empty("/dev");
    let accel_nodes: Vec<&String> = dev
        .iter()
        .filter(|n| {
            n.strip_prefix("accel")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    if on_pci.is_empty() && env.is_empty() && accel_nodes.is_empty() {
        return out;
    }
    let mut rep = run_tool(ctx, "tpu-info", &[], &mut out.warnings)
        .map(|t| parse_tpu_info(&t))
        .unwrap_or_default();
    out.warnings.append(&mut rep.warnings);
    let env_type = env
        .iter()
        .find(|(k, _)| *k == "TPU_ACCELERATOR_TYPE")
        .map(|(_, v)| v.clone());
    if rep.accelerator_type.is_none() {
        rep.accelerator_type.clone_from(&env_type);
    }
    // No tool: one chip per PCI function, else per /dev node.
    if rep.chips.is_empty() {
        let n = if !on_pci.is_empty() {
            on_pci.len()
        } else if !accel_nodes.is_empty() {
            accel_nodes.len()
        } else {
            ctx.probe
                .list_or_empty("/dev/vfio")
                .iter()
                .filter(|n| n.parse::<u32>().is_ok())
                .count()
        };
        rep.chips = (0..n as u32)
            .map(|index| TpuChip {
                index,
                ..Default::default()
            })
            .collect();
    }
    let paired = rep.chips.len() == on_pci.len();
    if !paired && !on_pci.is_empty() {
        out.warnings.push(format!(
            "tpu-info lists {} chips but the PCI bus has {} TPU functions; chips listed without PCI addresses",
            rep.chips.len(),
            on_pci.len()
        ));
    }
    for (i, c) in rep.chips.iter().enumerate() {
        let p = paired.then(|| on_pci[i]);
        let mut c = c.clone();
        if c.generation.is_none() {
            c.generation = p
                .and_then(|p| generation_of_pci(p.device_id, p.subsystem_device_id))
                .map(str::to_string);
        }
        let mut d = chip_device(&c, &rep, p.map(|p| p.address));
        if rep.libtpu_version.is_none() && rep.chips.iter().all(|c| c.hbm_total_bytes.is_none()) {
            d.source = if p.is_some() { "pci-sysfs" } else { "tpu-env" }.into();
        }
        if let Some(p) = p {
            d.pci = Some(p.info());
            d.driver.clone_from(&p.driver);
            d.numa_node = p.numa_node;
        }
        for (k, v) in &env {
            d.extra.insert(k.to_ascii_lowercase(), v.clone());
        }
        out.devices.push(d);
    }
    let indexes: Vec<Option<u32>> = out.devices.iter().map(|d| d.index).collect();
    let (hidden, warning) = tpu_visibility(&indexes, ctx.probe.env(TPU_VISIBLE_CHIPS).as_deref());
    out.warnings.extend(warning);
    for (d, hide) in out.devices.iter_mut().zip(hidden) {
        if hide && d.available {
            d.available = false;
            d.unavailable_reason = Some(format!("hidden by {TPU_VISIBLE_CHIPS}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Per-core memory rows are not given to chips that hold two cores.
    /// tpu-info of July 2025: the runtime table is keyed by libtpu device
    /// ids (8, 9, 12, 13) under `Device`, with an `HBM usage` column, while
    /// the chips are /dev/vfio/0-3; October 2025 heads the same rows
    /// `Chip`, which used to add four chips that do not exist.
    #[test]
    fn runtime_rows_keyed_by_device_ids() {
        let chips = "┃ Chip        ┃ Type         ┃ Devices ┃ PID  ┃\n┡━━━╇━━━╇━━━╇━━━┩\n│ /dev/vfio/0 │ TPU v6e chip │ 1       │ 1052 │\n│ /dev/vfio/1 │ TPU v6e chip │ 1       │ 1052 │\n└───┴───┴───┴───┘\n";
        for key in ["Device", "Chip"] {
            let text = format!(
                "{chips}┃ {key} ┃ HBM usage             ┃ Duty cycle ┃\n┡━━━╇━━━╇━━━┩\n│ 8      │ 18.45 GiB / 31.25 GiB │    100.00% │\n│ 9      │ 10.40 GiB / 31.25 GiB │    100.00% │\n└───┴───┴───┘\n"
            );
            let r = parse_tpu_info(&text);
            assert_eq!(r.chips.len(), 2, "{key}: {:?}", r.chips);
            assert!(r.warnings.is_empty(), "{key}: {:?}", r.warnings);
            for c in &r.chips {
                // 31.25 GiB, the same on every row: each chip's total.
                assert_eq!(c.hbm_total_bytes, Some(33_554_432_000), "{key}");
                // Which chip used 18.45 GiB is not said.
                assert_eq!(c.hbm_used_bytes, None, "{key}");
                assert_eq!(c.duty_cycle_percent, None, "{key}");
            }
        }
        // Rows that disagree on the total are not attributed.
        let text = format!(
            "{chips}┃ Device ┃ HBM usage             ┃\n┡━━━╇━━━┩\n│ 8      │ 1.00 GiB / 31.25 GiB │\n│ 9      │ 1.00 GiB / 15.75 GiB │\n└───┴───┘\n"
        );
        let r = parse_tpu_info(&text);
        assert!(r.chips.iter().all(|c| c.hbm_total_bytes.is_none()));
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    }

    #[test]
    fn per_device_memory_needs_one_device_per_chip() {
        let text = "┃ Device      ┃ Type        ┃ Cores ┃ PID ┃\n┡━━━━╇━━━━╇━━━━╇━━━━┩\n│ /dev/accel0 │ TPU v4 chip │ 2     │ 1   │\n└────┴────┴────┴────┘\n┃ Core ID ┃ Memory usage         ┃ Duty cycle ┃\n┡━━━━╇━━━━╇━━━━┩\n│ 0       │ 0.00 GiB / 30.75 GiB │      0.00% │\n└────┴────┴────┘\n";
        let rep = parse_tpu_info(text);
        assert_eq!(rep.chips.len(), 1);
        assert_eq!(rep.chips[0].cores, Some(2));
        assert_eq!(rep.chips[0].hbm_total_bytes, None);
        assert!(
            rep.warnings.iter().any(|w| w.contains("not attributed")),
            "{:?}",
            rep.warnings
        );
    }

    use super::*;

    #[test]
    fn visible_chips_rules() {
        let four: Vec<Option<u32>> = (0..4).map(Some).collect();
        assert_eq!(tpu_visibility(&four, None), (vec![false; 4], None));
        assert_eq!(tpu_visibility(&four, Some("")), (vec![false; 4], None));
        assert_eq!(
            tpu_visibility(&four, Some("1,3")).0,
            [true, false, true, false]
        );
        assert_eq!(
            tpu_visibility(&four, Some(" 0-1 ")).0,
            [false, false, true, true]
        );
        assert_eq!(tpu_visibility(&[None, Some(1)], Some("0")).0, [false, true]);
        let (h, w) = tpu_visibility(&four, Some("chip0"));
        assert_eq!(h, [false; 4]);
        assert!(w.unwrap().contains(TPU_VISIBLE_CHIPS));
    }

    proptest::proptest! {
        #[test]
        fn any_value_never_panics(v in ".{0,40}", n in 0usize..10) {
            let idx: Vec<Option<u32>> = (0..n as u32).map(Some).collect();
            let (h, _) = tpu_visibility(&idx, Some(&v));
            proptest::prop_assert_eq!(h.len(), n);
        }
    }
}
