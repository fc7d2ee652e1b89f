//! Parser for `nvidia-smi --query-gpu=FIELDS --format=csv`: columns are
//! found by their header names (`memory.total [MiB]` is column
//! `memory.total` with unit `MiB`), never by position, so any field list
//! and order works. `[N/A]`, `[Not Supported]` and the like are unknown.

use std::collections::HashMap;

use crate::detect::ParseOutput;
use crate::model::{Device, Family, MEMORY_RESERVED_KEY, PciAddress, PcieLink};

use super::{
    VENDOR, enabled, gen_to_gts, gpu_id, known, parse_enabled, parse_memory, parse_uint,
    parse_with_unit, tool_pci_info,
};

/// Source name of devices from this parser.
const SOURCE: &str = "nvidia-smi";

/// One header column: its field name and the unit in brackets, if any.
struct Column {
    name: String,
    unit: Option<String>,
}

fn parse_header(line: &str) -> Vec<Column> {
    line.split(',')
        .map(|h| {
            let h = h.trim();
            match h.split_once(" [") {
                Some((n, u)) => Column {
                    name: n.trim().to_string(),
                    unit: Some(u.trim_end_matches(']').trim().to_string()),
                },
                None => Column {
                    name: h.to_string(),
                    unit: None,
                },
            }
        })
        .collect()
}

/// Fields that identify a query-gpu header (at least one must be present).
const IDENTIFYING: &[&str] = &["name", "uuid", "pci.bus_id", "index", "serial"];

/// Parse `--query-gpu … --format=csv` output (with its header line).
/// Never panics; rows whose field count differs from the header are
/// skipped with a warning.
pub fn parse(bytes: &[u8]) -> ParseOutput {
    let mut out = ParseOutput::default();
    let text = crate::model::text::decode(bytes);
    let mut lines = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        out.warnings.push("nvidia-smi csv: empty input".to_string());
        return out;
    };
    let cols = parse_header(header);
    if !cols.iter().any(|c| IDENTIFYING.contains(&c.name.as_str())) {
        out.warnings.push(format!(
            "nvidia-smi csv: no header naming name, uuid, pci.bus_id or index: {:?}",
            header.chars().take(120).collect::<String>()
        ));
        return out;
    }
    let pos: HashMap<&str, usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    for (row_no, line) in lines.enumerate() {
        if crate::detect::formats::past_cap(out.devices.len()) {
            break;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != cols.len() {
            out.warnings.push(format!(
                "nvidia-smi csv: row {}: {} fields, header has {}; skipped",
                row_no + 1,
                fields.len(),
                cols.len()
            ));
            continue;
        }
        let row = Row {
            fields: &fields,
            cols: &cols,
            pos: &pos,
        };
        row.warn_unreadable(row_no, &mut out.warnings);
        out.devices.push(row.device(row_no));
    }
    crate::detect::formats::cap_records(&mut out.devices, "nvidia-smi", &mut out.warnings);
    if out.devices.is_empty() {
        out.warnings.push("nvidia-smi csv: no GPU rows".to_string());
    }
    out
}

struct Row<'a> {
    fields: &'a [&'a str],
    cols: &'a [Column],
    pos: &'a HashMap<&'a str, usize>,
}

impl Row<'_> {
    /// The known value of a field.
    fn get(&self, name: &str) -> Option<&str> {
        let i = *self.pos.get(name)?;
        known(self.fields.get(i)?)
    }

    fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_string)
    }

    /// A warning for each value the tool printed (not `N/A`) that does not
    /// read as its column's quantity (`-81559 MiB`, `12x W`): without it the
    /// field would silently be null.
    fn warn_unreadable(&self, row_no: usize, warnings: &mut Vec<String>) {
        for name in ["memory.total", "memory.free"] {
            if let (Some(v), None) = (self.get(name), self.memory(name)) {
                warnings.push(format!(
                    "nvidia-smi csv: row {}: {name} {} is not a memory size; left null",
                    row_no + 1,
                    crate::model::excerpt(v, crate::model::EXCERPT_CHARS)
                ));
            }
        }
        for (name, units) in [
            ("power.limit", &["W"][..]),
            ("enforced.power.limit", &["W"][..]),
            ("temperature.gpu", &["C"][..]),
        ] {
            if let (Some(v), None) = (self.get(name), self.number(name, units)) {
                warnings.push(format!(
                    "nvidia-smi csv: row {}: {name} {} is not a number; left null",
                    row_no + 1,
                    crate::model::excerpt(v, crate::model::EXCERPT_CHARS)
                ));
            }
        }
    }

    /// Memory in bytes; the header's unit applies when the value has none.
    fn memory(&self, name: &str) -> Option<u64> {
        let i = *self.pos.get(name)?;
        let unit = self.cols[i].unit.as_deref().unwrap_or("MiB");
        parse_memory(self.fields.get(i)?, unit)
    }

    fn number(&self, name: &str, units: &[&str]) -> Option<f64> {
        parse_with_unit(self.get(name)?, units)
    }

    fn uint(&self, name: &str) -> Option<u32> {
        parse_uint(self.get(name)?)
    }

    fn device(&self, row_no: usize) -> Device {
        let addr = self
            .get("pci.bus_id")
            .and_then(|s| s.parse::<PciAddress>().ok());
        let uuid = self.string("uuid");
        let index = self.uint("index").or(u32::try_from(row_no).ok());
        let id = gpu_id(addr, uuid.as_deref(), u64::from(index.unwrap_or(0)));
        let name = self
            .string("name")
            .unwrap_or_else(|| "NVIDIA GPU".to_string());
        let mut d = Device::new(id, name, VENDOR, Family::Gpu, SOURCE);
        d.pci_address = addr;
        d.index = index;
        d.uuid = uuid;
        d.serial = self.string("serial");
        d.driver_version = self.string("driver_version");
        d.firmware_version = self.string("vbios_version");
        d.compute_capability = self.string("compute_cap");
        d.memory_bytes = self.memory("memory.total");
        d.memory_free_bytes = self.memory("memory.free");
        if let Some(u) = self.memory("memory.used") {
            d.extra
                .insert("memory_used_bytes".to_string(), u.to_string());
        }
        if let Some(r) = self.memory("memory.reserved") {
            d.extra
                .insert(MEMORY_RESERVED_KEY.to_string(), r.to_string());
        }
        let link = PcieLink {
            current_speed_gts: self.uint("pcie.link.gen.current").and_then(gen_to_gts),
            current_width: self.uint("pcie.link.width.current").filter(|&w| w > 0),
            max_speed_gts: self.uint("pcie.link.gen.max").and_then(gen_to_gts),
            max_width: self.uint("pcie.link.width.max").filter(|&w| w > 0),
        };
        d.pci = tool_pci_info(
            self.uint("pci.device_id"),
            self.uint("pci.sub_device_id"),
            link,
        );
        d.power_limit_watts = self
            .number("enforced.power.limit", &["W"])
            .or_else(|| self.number("power.limit", &["W"]));
        d.temperature_celsius = self.number("temperature.gpu", &["C"]);
        d.utilization_percent = self.number("utilization.gpu", &["%"]);
        // `power.draw` (the 1-second average on 535+, where
        // `power.draw.average` / `power.draw.instant` also exist).
        d.power_draw_watts = self
            .number("power.draw.average", &["W"])
            .or_else(|| self.number("power.draw", &["W"]))
            .or_else(|| self.number("power.draw.instant", &["W"]));
        d.ecc_enabled = self.get("ecc.mode.current").and_then(parse_enabled);
        d.ecc_uncorrected_errors = self
            .get("ecc.errors.uncorrected.volatile.total")
            .and_then(|v| v.parse().ok());
        if let Some(v) = self.get("persistence_mode").and_then(parse_enabled) {
            d.extra
                .insert("persistence_mode".to_string(), enabled(v).to_string());
        }
        if let Some(v) = self.string("compute_mode") {
            d.extra.insert("compute_mode".to_string(), v);
        }
        if let Some(v) = self.get("mig.mode.current").and_then(parse_enabled) {
            d.extra
                .insert("mig_mode".to_string(), enabled(v).to_string());
        }
        d
    }
}
