//! The `ascend` backend: Huawei Ascend NPUs (Atlas cards and modules).
//! They are reported with family `ai_asic`, not `npu` (see [`Family::AiAsic`]
//! for why); the spec database and the planner use the same family.
//!
//! Runs only when the machine suggests Ascend hardware: a PCI function of
//! vendor 0x19e5 with an Ascend device id (or the processing-accelerator
//! class) in the shared scan, or `/dev/davinci<N>` nodes (the driver's
//! per-chip nodes; `davinci_manager`, `devmm_svm` and `hisi_hdc` are control
//! nodes, not devices). Facts come from one `npu-smi info` run, read by its
//! two-line table header (`NPU Name | Health | Power(W) Temp(C) …` over
//! `Chip [Device|Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB)`),
//! joined to the PCI scan by bus id. npu-smi prints memory in MB that are
//! MiB (a 64 GB 910B3 shows `65536`).
//!
//! Ascend PCI ids are not in pci.ids; the table below comes from
//! Ascend/ascend-deployer @739a52c3 `packages/resources/npu_info.py`
//! (`CHIPS_DICT`), which also tells the Atlas 300I Pro (subsystem 0x0100)
//! from the Atlas 300I Duo (0x0110) among 310P functions.
//!
//! Visibility: `ASCEND_VISIBLE_DEVICES` (the Ascend Docker runtime's list of
//! physical ids, the `N` of `/dev/davinci<N>`; ranges and `Ascend910-N`
//! spellings accepted) and `ASCEND_RT_VISIBLE_DEVICES` (the CANN runtime's
//! list of logical ids, which number the chips in the order npu-smi lists
//! them) mark the other chips unavailable. A chip's physical id is the
//! `Phy-ID` or `Device` column when shown, else its NPU id when every NPU
//! holds one chip; when it stays unknown a warning says so.

use crate::model::{Device, Family, Labels, PciAddress, SizeUnit, parse_size};
use crate::probe::ProbeExt;

use super::formats::ParseOutput;
use super::pci::PciDevice;
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

/// PCI vendor id of Huawei.
pub const HUAWEI_VENDOR_ID: u16 = 0x19e5;
#[cfg(test)]
const MIB: u64 = 1 << 20;

/// The Ascend chip a Huawei PCI device id names (module doc source).
pub fn chip_of_pci(device_id: u16) -> Option<&'static str> {
    match device_id {
        0xd100 => Some("310"),
        0xd500 => Some("310P"),
        0xd801 => Some("910"),
        0xd802 => Some("910B"),
        _ => None,
    }
}

/// The card a 310P function sits on, from its subsystem device id
/// (ascend-deployer `CHIPS_DICT`: 0x0100 Atlas 300I Pro, 0x0110 Atlas 300I Duo).
pub fn board_of_pci(device_id: u16, subsystem_device: Option<u16>) -> Option<&'static str> {
    match (device_id, subsystem_device?) {
        (0xd500, 0x0100) => Some("Atlas 300I Pro"),
        (0xd500, 0x0110) => Some("Atlas 300I Duo"),
        _ => None,
    }
}

/// One chip as `npu-smi info` shows it. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NpuChip {
    /// `NPU` column (card or module id; several chips can share it).
    pub npu_id: u32,
    /// `Chip` column (chip within the NPU).
    pub chip_id: Option<u32>,
    /// `Device` column of the Atlas 300/310 layout.
    pub device_id: Option<u32>,
    /// `Phy-ID` column of the Atlas A3 layout.
    pub phy_id: Option<u32>,
    /// `Name` as printed (`910B3`, `310P3`, `Ascend910`).
    pub name: Option<String>,
    /// `Health` (`OK`, `Warning`, `Alarm`, `Critical`).
    pub health: Option<String>,
    /// `Power(W)` draw.
    pub power_watts: Option<f64>,
    /// `Temp(C)`.
    pub temperature_celsius: Option<f64>,
    /// `AICore(%)` utilization.
    pub aicore_percent: Option<f64>,
    /// `Memory-Usage(MB)` used, in bytes (DDR; `0 / 0` on HBM parts).
    pub memory_used_bytes: Option<u64>,
    /// `Memory-Usage(MB)` total, in bytes.
    pub memory_total_bytes: Option<u64>,
    /// `HBM-Usage(MB)` used, in bytes.
    pub hbm_used_bytes: Option<u64>,
    /// `HBM-Usage(MB)` total, in bytes.
    pub hbm_total_bytes: Option<u64>,
    /// `Bus-Id`.
    pub bus_id: Option<PciAddress>,
}

impl NpuChip {
    /// The chip's model from its printed name (`910B3`, `Ascend910` → `910`);
    /// `None` when the name is not a chip model (redacted, empty).
    pub fn model(&self) -> Option<&str> {
        let n = self.name.as_deref()?.trim();
        let n = n.strip_prefix("Ascend").unwrap_or(n).trim();
        n.starts_with(|c: char| c.is_ascii_digit()).then_some(n)
    }

    /// Device memory: HBM where the chip has it, else its DDR (total, used).
    fn memory(&self) -> (Option<u64>, Option<u64>, &'static str) {
        match self.hbm_total_bytes {
            Some(t) => (Some(t), self.hbm_used_bytes, "HBM"),
            None => (self.memory_total_bytes, self.memory_used_bytes, "DDR"),
        }
    }
}

/// What one npu-smi output held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NpuSmiReport {
    /// `Version:` of the table header (the driver version).
    pub version: Option<String>,
    /// Chips in output order (the order logical ids number them).
    pub chips: Vec<NpuChip>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

fn number<T: std::str::FromStr>(v: &str) -> Option<T> {
    let v = v.trim();
    if v.is_empty() || v == "-" || v.eq_ignore_ascii_case("NA") || v.eq_ignore_ascii_case("N/A") {
        return None;
    }
    v.parse().ok()
}

fn finite(v: &str) -> Option<f64> {
    number::<f64>(v).filter(|x| x.is_finite())
}

/// The values of one table cell: whitespace-separated, with `a / b`,
/// `a/ b`, `a /b` and `a/b` kept together as one value.
fn cell_values(cell: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut join_next = false;
    for tok in cell.split_whitespace() {
        if join_next || tok.starts_with('/') {
            match out.last_mut() {
                Some(last) => last.push_str(tok),
                None => out.push(tok.to_string()),
            }
        } else {
            out.push(tok.to_string());
        }
        join_next = tok.ends_with('/');
    }
    out
}

/// `3318/65536` → (used, total) bytes. The column header says `(MB)`; the
/// numbers are MiB ([`crate::model::units`]: 65536 on a 64 GiB 910B). A `0`
/// total means "none".
fn usage_pair(v: &str) -> Option<(Option<u64>, Option<u64>)> {
    let (u, t) = v.split_once('/')?;
    let mib = |s: &str| parse_size(s, Some(SizeUnit::MiB), Labels::Binary);
    let total = mib(t)?;
    if total == 0 {
        return Some((None, None));
    }
    Some((mib(u), Some(total)))
}

fn cells_of(line: &str) -> Vec<&str> {
    line.trim().trim_matches('|').split('|').collect()
}

fn header_of(cells: &[&str]) -> Vec<Vec<String>> {
    cells
        .iter()
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Parse `npu-smi info` (the default table; the process table that may
/// follow it is ignored). Never panics: rows that do not fit the header
/// become warnings.
pub fn parse_npu_smi(text: &str) -> NpuSmiReport {
    let mut rep = NpuSmiReport::default();
    let mut h1: Option<Vec<Vec<String>>> = None;
    let mut h2: Option<Vec<Vec<String>>> = None;
    let mut first_row: Option<Vec<Vec<String>>> = None;
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.chips.len()) {
            break;
        }
        let t = line.trim();
        if t.contains("Process id") || t.contains("Process name") {
            break;
        }
        if t.starts_with('+') {
            if let Some(row) = first_row.take() {
                let chip = chip_from(&row, None, h1.as_deref(), h2.as_deref(), &mut rep);
                if let Some(c) = chip {
                    rep.warnings.push(format!(
                        "npu-smi NPU {}: table row cut after its first line",
                        c.npu_id
                    ));
                    rep.chips.push(c);
                }
            }
            continue;
        }
        if !t.starts_with('|') {
            continue;
        }
        let cells = cells_of(t);
        let first = cells[0].trim();
        if first.starts_with("npu-smi") {
            rep.version = first
                .split_once("Version:")
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty());
            continue;
        }
        if first.starts_with("NPU") && first.contains("Name") {
            h1 = Some(header_of(&cells));
            continue;
        }
        if first.starts_with("Chip") && h1.is_some() {
            h2 = Some(header_of(&cells));
            continue;
        }
        if h1.is_none() || h2.is_none() {
            continue;
        }
        let values: Vec<Vec<String>> = cells.iter().map(|c| cell_values(c)).collect();
        match first_row.take() {
            None => {
                if values
                    .first()
                    .and_then(|v| v.first())
                    .and_then(|v| v.parse::<u32>().ok())
                    .is_none()
                {
                    rep.warnings
                        .push(format!("npu-smi: row {t:?} does not start with an NPU id"));
                    continue;
                }
                first_row = Some(values);
            }
            Some(row) => {
                if let Some(c) =
                    chip_from(&row, Some(&values), h1.as_deref(), h2.as_deref(), &mut rep)
                {
                    rep.chips.push(c);
                }
            }
        }
    }
    if let Some(row) = first_row {
        if let Some(c) = chip_from(&row, None, h1.as_deref(), h2.as_deref(), &mut rep) {
            rep.warnings.push(format!(
                "npu-smi NPU {}: table row cut after its first line",
                c.npu_id
            ));
            rep.chips.push(c);
        }
    }
    if h1.is_none() && !text.trim().is_empty() {
        rep.warnings
            .push("npu-smi: no `NPU Name | Health` table header found".into());
    }
    crate::detect::formats::cap_records(&mut rep.chips, "npu-smi", &mut rep.warnings);
    rep
}

/// One chip from its two table lines, each cell read by the header words
/// above it. A cell whose value count differs from its header is skipped
/// with a warning rather than read by position.
fn chip_from(
    row1: &[Vec<String>],
    row2: Option<&Vec<Vec<String>>>,
    h1: Option<&[Vec<String>]>,
    h2: Option<&[Vec<String>]>,
    rep: &mut NpuSmiReport,
) -> Option<NpuChip> {
    let npu_id = row1.first()?.first()?.parse::<u32>().ok()?;
    let mut c = NpuChip {
        npu_id,
        ..Default::default()
    };
    let mut apply = |header: &[Vec<String>], row: &[Vec<String>], c: &mut NpuChip| {
        for (i, (names, vals)) in header.iter().zip(row).enumerate() {
            // The first cell's last column (Name) may hold spaces: join the rest.
            let vals: Vec<String> = if i == 0 && vals.len() > names.len() && !names.is_empty() {
                let mut v = vals[..names.len() - 1].to_vec();
                v.push(vals[names.len() - 1..].join(" "));
                v
            } else {
                vals.clone()
            };
            if vals.is_empty() {
                continue;
            }
            if vals.len() != names.len() {
                rep.warnings.push(format!(
                    "npu-smi NPU {npu_id}: {} values under the {} columns {:?}",
                    vals.len(),
                    names.len(),
                    names.join(" ")
                ));
                continue;
            }
            for (name, v) in names.iter().zip(&vals) {
                match name.as_str() {
                    "Name" => c.name = Some(v.clone()),
                    "Chip" => c.chip_id = number(v),
                    "Device" => c.device_id = number(v),
                    "Phy-ID" => c.phy_id = number(v),
                    "Health" => c.health = Some(v.clone()),
                    "Power(W)" => c.power_watts = finite(v),
                    "Temp(C)" => c.temperature_celsius = finite(v),
                    "AICore(%)" => c.aicore_percent = finite(v),
                    "Bus-Id" => {
                        c.bus_id = v.parse().ok();
                        // `NA`: a chip with no PCI function of its own (the
                        // Ascend 310 SoC of an Atlas 200 DK).
                        if c.bus_id.is_none() && !v.eq_ignore_ascii_case("NA") {
                            rep.warnings
                                .push(format!("npu-smi NPU {npu_id}: Bus-Id {v:?} not understood"));
                        }
                    }
                    "Memory-Usage(MB)" | "HBM-Usage(MB)" => match usage_pair(v) {
                        Some((u, t)) if name.starts_with("HBM") => {
                            c.hbm_used_bytes = u;
                            c.hbm_total_bytes = t;
                        }
                        Some((u, t)) => {
                            c.memory_used_bytes = u;
                            c.memory_total_bytes = t;
                        }
                        None => rep
                            .warnings
                            .push(format!("npu-smi NPU {npu_id}: {name} {v:?} not understood")),
                    },
                    _ => {}
                }
            }
        }
    };
    if let Some(h) = h1 {
        apply(h, row1, &mut c);
    }
    if let (Some(h), Some(r)) = (h2, row2) {
        apply(h, r, &mut c);
    }
    Some(c)
}

/// The device for one npu-smi chip (`index`: its position in npu-smi's list).
fn device_from(c: &NpuChip, index: Option<u32>, version: Option<&str>) -> Device {
    let id = match c.bus_id {
        Some(a) => format!("pci:{a}"),
        None => format!("ascend:{}-{}", c.npu_id, c.chip_id.unwrap_or(0)),
    };
    let name = c.model().map_or_else(
        || "Huawei Ascend NPU".to_string(),
        |m| format!("Huawei Ascend {m}"),
    );
    let mut d = Device::new(id, name, "huawei", Family::AiAsic, "npu-smi");
    d.pci_address = c.bus_id;
    d.index = index;
    let (total, used, kind) = c.memory();
    d.memory_bytes = total;
    d.memory_free_bytes = match (total, used) {
        (Some(t), Some(u)) => t.checked_sub(u),
        _ => None,
    };
    d.temperature_celsius = c.temperature_celsius;
    d.power_draw_watts = c.power_watts;
    d.utilization_percent = c.aicore_percent;
    d.driver_version = version.map(str::to_string);
    let x = &mut d.extra;
    x.insert("npu_id".into(), c.npu_id.to_string());
    if let Some(v) = c.chip_id {
        x.insert("chip_id".into(), v.to_string());
    }
    if let Some(v) = c.device_id {
        x.insert("device_id".into(), v.to_string());
    }
    if let Some(v) = c.phy_id {
        x.insert("phy_id".into(), v.to_string());
    }
    if let Some(v) = &c.name {
        x.insert("npu_smi_name".into(), v.clone());
    }
    if let Some(v) = &c.health {
        x.insert("health".into(), v.clone());
    }
    if let Some(v) = c.power_watts {
        x.insert("power_draw_watts".into(), v.to_string());
    }
    if total.is_some() {
        x.insert("memory_kind".into(), kind.into());
    }
    if kind == "HBM" {
        if let Some(t) = c.memory_total_bytes {
            x.insert("ddr_memory_bytes".into(), t.to_string());
        }
    }
    if let Some(h) = &c.health {
        if h.eq_ignore_ascii_case("alarm") || h.eq_ignore_ascii_case("critical") {
            d.available = false;
            d.unavailable_reason = Some(format!("npu-smi health: {h}"));
        }
    }
    d
}

/// Parser for `ai-hwaccel parse npu-smi`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_npu_smi(&crate::model::text::decode(bytes));
    let devices: Vec<Device> = rep
        .chips
        .iter()
        .enumerate()
        .map(|(i, c)| device_from(c, u32::try_from(i).ok(), rep.version.as_deref()))
        .collect();
    let mut warnings = rep.warnings;
    if devices.is_empty() {
        warnings.push("no Ascend chip rows found".into());
    }
    ParseOutput { devices, warnings }
}

/// Parse a visible-devices list (`0,1`, `0-3,6`, `Ascend910-2`); `None`
/// when unset, empty or `all`. Entries that are not ids are skipped.
pub fn parse_visible_devices(v: Option<&str>) -> Option<Vec<u32>> {
    let v = v?.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("all") {
        return None;
    }
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        let part = part.rsplit_once('-').map_or(part, |(head, tail)| {
            // `Ascend910-2` names chip 2; `0-3` is a range.
            if head.parse::<u32>().is_err() {
                tail
            } else {
                part
            }
        });
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    if a <= b && b - a < 4096 {
                        out.extend(a..=b);
                    }
                }
            }
            None => {
                if let Ok(n) = part.parse() {
                    out.push(n);
                }
            }
        }
    }
    Some(out)
}

/// Driver-state reason a PCI function is unusable.
fn pci_unavailable(p: &PciDevice) -> Option<String> {
    match p.driver.as_deref() {
        None => Some("no kernel driver bound".into()),
        Some(d @ ("vfio-pci" | "pci-stub" | "pciback" | "xen-pciback")) => {
            Some(format!("bound to {d}: reserved for passthrough to a VM"))
        }
        Some(_) => None,
    }
}

/// Physical `/dev/davinci<N>` ids present.
fn davinci_nodes(ctx: &Context) -> Vec<u32> {
    let mut ids: Vec<u32> = ctx
        .probe
        .list_or_empty("/dev")
        .iter()
        .filter_map(|n| n.strip_prefix("davinci")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// The `ascend` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let on_pci: Vec<&PciDevice> = ctx
        .pci()
        .by_vendor(HUAWEI_VENDOR_ID)
        .filter(|p| chip_of_pci(p.device_id).is_some() || p.family == Family::AiAsic)
        .collect();
    let nodes = davinci_nodes(ctx);
    if on_pci.is_empty() && nodes.is_empty() {
        return out;
    }
    let mut rep = run_tool(ctx, "npu-smi", &["info"], &mut out.warnings)
        .map(|t| parse_npu_smi(&t))
        .unwrap_or_default();
    out.warnings.append(&mut rep.warnings);
    let one_chip_per_npu = rep
        .chips
        .iter()
        .all(|c| rep.chips.iter().filter(|x| x.npu_id == c.npu_id).count() == 1);
    // (device, physical id, logical id)
    let mut found: Vec<(Device, Option<u32>, Option<u32>)> = Vec::new();
    for (i, c) in rep.chips.iter().enumerate() {
        let logical = u32::try_from(i).ok();
        let phys = c
            .phy_id
            .or(c.device_id)
            .or(one_chip_per_npu.then_some(c.npu_id));
        found.push((
            device_from(c, logical, rep.version.as_deref()),
            phys,
            logical,
        ));
    }
    for p in &on_pci {
        if found
            .iter()
            .any(|(d, _, _)| d.pci_address == Some(p.address))
        {
            continue;
        }
        let name = match chip_of_pci(p.device_id) {
            Some(chip) => format!("Huawei Ascend {chip}"),
            None => format!("Huawei Ascend NPU [19e5:{:04x}]", p.device_id),
        };
        let mut d = Device::new(
            format!("pci:{}", p.address),
            name,
            "huawei",
            Family::AiAsic,
            "pci-sysfs",
        );
        d.pci_address = Some(p.address);
        found.push((d, None, None));
    }
    if found.is_empty() {
        // A SoC part (Atlas 200/500) without PCI functions: one chip per node.
        for n in &nodes {
            let mut d = Device::new(
                format!("ascend:davinci{n}"),
                "Huawei Ascend NPU",
                "huawei",
                Family::AiAsic,
                "davinci-dev",
            );
            d.extra.insert("phy_id".into(), n.to_string());
            found.push((d, Some(*n), None));
        }
    }
    let rules = [
        (
            "ASCEND_VISIBLE_DEVICES",
            parse_visible_devices(ctx.probe.env("ASCEND_VISIBLE_DEVICES").as_deref()),
            true,
        ),
        (
            "ASCEND_RT_VISIBLE_DEVICES",
            parse_visible_devices(ctx.probe.env("ASCEND_RT_VISIBLE_DEVICES").as_deref()),
            false,
        ),
    ];
    for (mut d, phys, logical) in found {
        if let Some(p) = d.pci_address.and_then(|a| ctx.pci().by_address(a)) {
            d.pci = Some(p.info());
            d.numa_node = p.numa_node;
            d.driver.clone_from(&p.driver);
            if let Some(board) = board_of_pci(p.device_id, p.subsystem_device_id) {
                d.extra.insert("board".into(), board.into());
                // The spec entry for the 310P carries Atlas 300I Pro figures.
                if board.ends_with("Duo") {
                    d.name = format!("{} ({board})", d.name);
                }
            }
            if d.architecture.is_none() {
                d.architecture = chip_of_pci(p.device_id).map(|c| format!("Ascend {c}"));
            }
            if let Some(reason) = pci_unavailable(p) {
                d.available = false;
                d.unavailable_reason = Some(reason);
            }
        }
        for (var, list, physical) in &rules {
            let Some(list) = list else { continue };
            let key = if *physical { phys } else { logical };
            match key {
                Some(k) if !list.contains(&k) => {
                    if d.available {
                        d.available = false;
                        d.unavailable_reason = Some(format!("not in {var}"));
                    }
                }
                Some(_) => {}
                None => out.warnings.push(format!(
                    "{var} is set but the {} id of {} is unknown; left available",
                    if *physical { "physical" } else { "logical" },
                    d.id
                )),
            }
        }
        out.devices.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_usage_pairs_together() {
        assert_eq!(
            cell_values("0           0    / 0          3318 / 65536"),
            ["0", "0/0", "3318/65536"]
        );
        assert_eq!(cell_values("58626/ 65536"), ["58626/65536"]);
        assert_eq!(
            cell_values("12.8  73  0       / 970"),
            ["12.8", "73", "0/970"]
        );
        assert_eq!(
            usage_pair("3318/65536"),
            Some((Some(3318 * MIB), Some(65536 * MIB)))
        );
        assert_eq!(usage_pair("0/0"), Some((None, None)));
        assert_eq!(usage_pair("x/y"), None);
    }

    #[test]
    fn visible_device_lists() {
        assert_eq!(parse_visible_devices(None), None);
        assert_eq!(parse_visible_devices(Some("all")), None);
        assert_eq!(parse_visible_devices(Some("0-2,5")), Some(vec![0, 1, 2, 5]));
        assert_eq!(
            parse_visible_devices(Some("Ascend910-3,Ascend910-1")),
            Some(vec![3, 1])
        );
        assert_eq!(parse_visible_devices(Some("junk")), Some(vec![]));
    }

    #[test]
    fn models_from_names() {
        let c = |n: &str| NpuChip {
            name: Some(n.into()),
            ..Default::default()
        };
        assert_eq!(c("910B3").model(), Some("910B3"));
        assert_eq!(c("Ascend910").model(), Some("910"));
        assert_eq!(c("xxx").model(), None);
        assert_eq!(chip_of_pci(0xd802), Some("910B"));
        assert_eq!(board_of_pci(0xd500, Some(0x0110)), Some("Atlas 300I Duo"));
    }
}
