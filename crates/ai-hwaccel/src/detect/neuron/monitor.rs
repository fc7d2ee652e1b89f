//! `neuron-monitor` reports: the dynamic values of Neuron devices.
//!
//! `neuron-monitor` (package `aws-neuronx-tools`) runs until stopped and
//! writes one JSON report per line to stdout whenever a metric group is due
//! (every 5 s for all groups when no `-c` configuration file is given, AWS
//! Neuron Monitor User Guide). Detection reads only the first line (see
//! [`crate::probe::Probe::run_first_line`]); [`parse_neuron_monitor`] reads
//! the first JSON value of any text, one line or pretty-printed.
//!
//! Layouts accepted, by the keys AWS documented for each (aws-neuron/aws-neuron-sdk
//! `docs/neuron-tools/neuron-monitor-user-guide.md` at 4bd60a0d2ec4, 2020-09;
//! `neuron-guide/neuron-tools/neuron-tools-v1/neuron-monitor-user-guide_v1.rst`
//! at 98d57f183387, 1.x; `tools/neuron-sys-tools/neuron-monitor-user-guide.rst`
//! at 81ce03ae261e, 2.x):
//! - runtimes: `neuron_runtime_data` (1.x later, 2.x) or `runtime_data`
//!   (2020), each with `error` and a `report` of metric groups, each group
//!   with its own `error`;
//! - NeuronCore utilization: `report.neuroncore_counters.neuroncores_in_use`
//!   → `{"<core>": {"neuroncore_utilization": percent}}`. The 2020 layout's
//!   `nc_counters.neuron_cores.<core>.matmul_utilization` is the matrix
//!   engine's share, a different measure: it is kept apart, never read as
//!   the core's utilization;
//! - device memory in use: `report.memory_used.neuron_runtime_used_bytes`
//!   (`neuron_device`; `device` accepted too) with, in 2.x,
//!   `usage_breakdown.neuroncore_memory_usage.<core>` (`constants`,
//!   `model_code`, `model_shared_scratchpad`, `runtime_memory`, `tensors`),
//!   or the 2020 `report.memory.runtime_memory.device`;
//! - ECC: `system_data.neuron_hw_counters.neuron_devices[]` (2.x) or a
//!   runtime's `report.hw_counters`, listed under `neuron_devices` (1.x) or
//!   `devices` (2020), indexed by `neuron_device_index` / `device_index`,
//!   with `mem_ecc_corrected`, `mem_ecc_uncorrected`,
//!   `sram_ecc_uncorrected` and (2.x) `sram_ecc_corrected`. The 1.x guide
//!   says they count events "for the captured period", and AWS's
//!   `neuron-monitor-prometheus.py` adds each report's values to a counter
//!   (`process_neuron_hw_counters`: `Counter(...).inc(device[counter])`, as
//!   in the copies of the script indexed by code search, e.g. file ids
//!   10181912804 and 39520268906): they are per-report counts, not totals
//!   since the driver loaded;
//! - `neuron_hardware_info` (1.16+): `neuron_device_count`,
//!   `neuroncore_per_device_count`, and in 2.x `neuron_device_type`,
//!   `neuron_device_version`, `neuroncore_version`,
//!   `neuron_device_memory_size`, `logical_neuroncore_config`;
//! - `instance_info` (`instance_data` before 2.x): `instance_type`.
//!
//! NeuronCore keys are global indexes over all devices (the 2.x guide
//! counts `"0"`–`"64"` on a trn2.48xlarge); device `d` owns cores
//! `d × c … d × c + c − 1` for `c` cores per device. Only cores that were
//! in use appear, so a device's utilization is the mean over its cores only
//! when every one of them is listed; otherwise it stays unknown.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::{Device, Family};

use super::chip_of_instance;
use crate::detect::formats::{MAX_WARNINGS_PER_OUTPUT, ParseOutput, device_cap_reached};

/// Most NeuronCore entries read from one report (a trn2.48xlarge has 128
/// physical cores); further ones are ignored with a warning.
const MAX_CORES: usize = 8192;

/// Most runtimes read from one report; further ones are ignored with a warning.
const MAX_RUNTIMES: usize = 1024;

/// ECC event counts of one device in one report. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EccCounts {
    /// `period` of the group: the seconds the counts cover.
    pub period_seconds: Option<f64>,
    /// `mem_ecc_corrected`: corrected events in device DRAM.
    pub mem_corrected: Option<u64>,
    /// `mem_ecc_uncorrected`: uncorrected events in device DRAM.
    pub mem_uncorrected: Option<u64>,
    /// `sram_ecc_corrected` (2.x): corrected events in on-chip SRAM.
    pub sram_corrected: Option<u64>,
    /// `sram_ecc_uncorrected`: uncorrected events in on-chip SRAM.
    pub sram_uncorrected: Option<u64>,
}

/// One NeuronCore as one runtime reported it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoreSample {
    /// `neuroncore_utilization`, percent over the group's period.
    pub utilization_percent: Option<f64>,
    /// `matmul_utilization` (2020 layout), percent.
    pub matmul_utilization_percent: Option<f64>,
    /// Device memory the runtime holds for this core: the sum of its
    /// `neuroncore_memory_usage` fields.
    pub device_memory_used_bytes: Option<u64>,
}

/// One monitored Neuron application (runtime).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorRuntime {
    /// `pid`.
    pub pid: Option<u64>,
    /// `neuron_runtime_tag`.
    pub tag: Option<String>,
    /// `neuron_runtime_index` / `runtime_index` (1.x configuration order).
    pub index: Option<u64>,
    /// Host memory the runtime uses, bytes.
    pub host_memory_used_bytes: Option<u64>,
    /// Device memory the runtime uses over all devices, bytes.
    pub device_memory_used_bytes: Option<u64>,
    /// NeuronCores by global index.
    pub cores: BTreeMap<u32, CoreSample>,
}

/// What one neuron-monitor report held. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorReport {
    /// `instance_type` of `instance_info` / `instance_data`.
    pub instance_type: Option<String>,
    /// `neuron_device_type` (`trainium`, `inferentia2`, …).
    pub device_type: Option<String>,
    /// `neuron_device_version` (`v2`, …).
    pub device_version: Option<String>,
    /// `neuroncore_version` (`v2`, `v3d`, …).
    pub neuroncore_version: Option<String>,
    /// `neuron_device_count`.
    pub device_count: Option<u32>,
    /// `neuron_device_memory_size`: memory of each device, bytes.
    pub device_memory_bytes: Option<u64>,
    /// `neuroncore_per_device_count`.
    pub cores_per_device: Option<u32>,
    /// `logical_neuroncore_config`.
    pub logical_neuroncore_config: Option<u32>,
    /// The monitored runtimes, in report order.
    pub runtimes: Vec<MonitorRuntime>,
    /// ECC counts by device index.
    pub ecc: BTreeMap<u32, EccCounts>,
    /// Problems met.
    pub warnings: Vec<String>,
}

/// The dynamic values of one Neuron device, from a report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceLoad {
    /// Neuron device index.
    pub index: u32,
    /// Mean `neuroncore_utilization` of the device's cores, when every core
    /// of the device is in the report.
    pub utilization_percent: Option<f64>,
    /// Utilization of each of the device's cores that is in the report
    /// (global index, percent; the highest where several runtimes list it).
    pub core_utilization: Vec<(u32, f64)>,
    /// Device memory the monitored runtimes use on this device, bytes.
    pub memory_used_bytes: Option<u64>,
    /// ECC counts of the report.
    pub ecc: Option<EccCounts>,
}

/// Keep a warning while fewer than [`MAX_WARNINGS_PER_OUTPUT`] are kept, and
/// say once that the rest are not shown (a forged report of a million bad
/// core keys must not become a million warnings).
fn note(warnings: &mut Vec<String>, msg: String) {
    if warnings.len() < MAX_WARNINGS_PER_OUTPUT {
        warnings.push(msg);
    } else if warnings.len() == MAX_WARNINGS_PER_OUTPUT {
        warnings.push("further warnings not shown".into());
    }
}

fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key)?.as_object()
}

fn first<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| v.get(*k).filter(|x| !x.is_null()))
}

/// A count or byte size: a non-negative integer (an integral float too).
fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
    })
}

fn small(v: Option<&Value>) -> Option<u32> {
    count(v).and_then(|n| u32::try_from(n).ok())
}

fn percent(v: Option<&Value>) -> Option<f64> {
    v?.as_f64()
        .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
}

fn string(v: Option<&Value>) -> Option<String> {
    v?.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The group's `error` when it is a non-empty string.
fn group_error(g: &Value) -> Option<&str> {
    g.get("error")?.as_str().filter(|e| !e.trim().is_empty())
}

/// Read the group `name` of `report`, unless it is absent, not an object or
/// reports an error (that becomes a warning).
fn group<'a>(
    report: &'a Value,
    names: &[&str],
    who: &str,
    warnings: &mut Vec<String>,
) -> Option<&'a Value> {
    let (name, g) = names
        .iter()
        .find_map(|n| report.get(*n).filter(|g| !g.is_null()).map(|g| (*n, g)))?;
    if !g.is_object() {
        note(warnings, format!("{who}{name} is not an object"));
        return None;
    }
    if let Some(e) = group_error(g) {
        note(
            warnings,
            format!(
                "{who}{name}: {}",
                crate::model::excerpt(e, crate::model::EXCERPT_CHARS)
            ),
        );
        return None;
    }
    Some(g)
}

fn core_index(key: &str) -> Option<u32> {
    key.trim().parse().ok()
}

/// The documented fields of one `neuroncore_memory_usage` entry, summed.
fn core_memory(v: &Value) -> Option<u64> {
    const FIELDS: [&str; 5] = [
        "constants",
        "model_code",
        "model_shared_scratchpad",
        "runtime_memory",
        "tensors",
    ];
    let vals: Vec<u64> = FIELDS.iter().filter_map(|f| count(v.get(*f))).collect();
    if vals.is_empty() {
        return None;
    }
    vals.iter().try_fold(0u64, |a, b| a.checked_add(*b))
}

fn read_ecc(g: &Value, into: &mut BTreeMap<u32, EccCounts>, warnings: &mut Vec<String>) {
    let Some(list) = first(g, &["neuron_devices", "devices"]) else {
        return;
    };
    let Some(list) = list.as_array() else {
        note(
            warnings,
            "hardware counters: the device list is not an array".into(),
        );
        return;
    };
    let period = g.get("period").and_then(Value::as_f64);
    for (n, d) in list.iter().enumerate() {
        if device_cap_reached(n, "neuron-monitor", warnings) {
            break;
        }
        let Some(index) = small(first(d, &["neuron_device_index", "device_index"])) else {
            note(
                warnings,
                "hardware counters: an entry without a device index".into(),
            );
            continue;
        };
        let c = EccCounts {
            period_seconds: period.filter(|p| p.is_finite() && *p >= 0.0),
            mem_corrected: count(d.get("mem_ecc_corrected")),
            mem_uncorrected: count(d.get("mem_ecc_uncorrected")),
            sram_corrected: count(d.get("sram_ecc_corrected")),
            sram_uncorrected: count(d.get("sram_ecc_uncorrected")),
        };
        // Several 1.x runtimes may list the same device: keep the largest counts.
        let e = into.entry(index).or_default();
        fn most(a: &mut Option<u64>, b: Option<u64>) {
            *a = match (*a, b) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
        }
        most(&mut e.mem_corrected, c.mem_corrected);
        most(&mut e.mem_uncorrected, c.mem_uncorrected);
        most(&mut e.sram_corrected, c.sram_corrected);
        most(&mut e.sram_uncorrected, c.sram_uncorrected);
        if e.period_seconds.is_none() {
            e.period_seconds = c.period_seconds;
        }
    }
}

fn read_runtime(
    r: &Value,
    pos: usize,
    ecc: &mut BTreeMap<u32, EccCounts>,
    warnings: &mut Vec<String>,
) -> Option<MonitorRuntime> {
    let mut rt = MonitorRuntime {
        pid: count(r.get("pid")),
        tag: string(r.get("neuron_runtime_tag")),
        index: count(first(r, &["neuron_runtime_index", "runtime_index"])),
        ..MonitorRuntime::default()
    };
    let who = match (&rt.tag, rt.pid, rt.index) {
        (Some(t), ..) => format!("runtime {t}: "),
        (None, Some(p), _) => format!("runtime pid {p}: "),
        (None, None, Some(i)) => format!("runtime {i}: "),
        _ => format!("runtime #{pos}: "),
    };
    if let Some(e) = group_error(r) {
        note(
            warnings,
            format!(
                "{who}{}",
                crate::model::excerpt(e, crate::model::EXCERPT_CHARS)
            ),
        );
        return None;
    }
    let report = r.get("report").filter(|v| v.is_object())?;
    if let Some(g) = group(report, &["neuroncore_counters"], &who, warnings) {
        if let Some(cores) = obj(g, "neuroncores_in_use") {
            for (k, v) in cores {
                if rt.cores.len() >= MAX_CORES {
                    note(
                        warnings,
                        format!("{who}more than {MAX_CORES} NeuronCores; the rest are ignored"),
                    );
                    break;
                }
                let Some(i) = core_index(k) else {
                    note(
                        warnings,
                        format!("{who}NeuronCore key {k:?} is not an index"),
                    );
                    continue;
                };
                let u = v.get("neuroncore_utilization");
                let p = percent(u);
                if p.is_none() && u.is_some_and(|u| !u.is_null()) {
                    note(
                        warnings,
                        format!(
                            "{who}NeuronCore {i}: utilization {u:?} is not a percentage",
                            u = u.map(Value::to_string).unwrap_or_default()
                        ),
                    );
                }
                rt.cores.entry(i).or_default().utilization_percent = p;
            }
        }
    }
    if let Some(g) = group(report, &["nc_counters"], &who, warnings) {
        if let Some(cores) = obj(g, "neuron_cores") {
            for (k, v) in cores.iter().take(MAX_CORES) {
                if let Some(i) = core_index(k) {
                    rt.cores.entry(i).or_default().matmul_utilization_percent =
                        percent(v.get("matmul_utilization"));
                }
            }
        }
    }
    if let Some(g) = group(report, &["memory_used"], &who, warnings) {
        if let Some(used) = g.get("neuron_runtime_used_bytes") {
            rt.host_memory_used_bytes = count(used.get("host"));
            rt.device_memory_used_bytes = count(first(used, &["neuron_device", "device"]));
            let per_core = used
                .get("usage_breakdown")
                .and_then(|b| obj(b, "neuroncore_memory_usage"));
            for (k, v) in per_core.into_iter().flatten() {
                if rt.cores.len() >= MAX_CORES {
                    break;
                }
                if let Some(i) = core_index(k) {
                    rt.cores.entry(i).or_default().device_memory_used_bytes = core_memory(v);
                }
            }
        }
    } else if let Some(g) = group(report, &["memory"], &who, warnings) {
        if let Some(used) = g.get("runtime_memory") {
            rt.host_memory_used_bytes = count(used.get("host"));
            rt.device_memory_used_bytes = count(first(used, &["device", "neuron_device"]));
        }
    }
    if let Some(g) = group(report, &["hw_counters"], &who, warnings) {
        read_ecc(g, ecc, warnings);
    }
    Some(rt)
}

/// Read one neuron-monitor report: the first JSON value of `text`.
pub fn parse_neuron_monitor(text: &str) -> MonitorReport {
    let mut rep = MonitorReport::default();
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let root = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            note(
                &mut rep.warnings,
                format!("not a neuron-monitor JSON report: {e}"),
            );
            return rep;
        }
        None => {
            note(
                &mut rep.warnings,
                "no neuron-monitor report (empty output)".into(),
            );
            return rep;
        }
    };
    if !root.is_object() {
        note(
            &mut rep.warnings,
            "not a neuron-monitor report: the JSON value is not an object".into(),
        );
        return rep;
    }
    if let Some(i) = first(&root, &["instance_info", "instance_data"]) {
        rep.instance_type = string(i.get("instance_type"));
    }
    if let Some(h) = root.get("neuron_hardware_info").filter(|h| h.is_object()) {
        if let Some(e) = group_error(h) {
            note(
                &mut rep.warnings,
                format!(
                    "neuron_hardware_info: {}",
                    crate::model::excerpt(e, crate::model::EXCERPT_CHARS)
                ),
            );
        }
        rep.device_type = string(h.get("neuron_device_type"));
        rep.device_version = string(h.get("neuron_device_version"));
        rep.neuroncore_version = string(h.get("neuroncore_version"));
        rep.device_count = small(h.get("neuron_device_count"));
        rep.device_memory_bytes = count(h.get("neuron_device_memory_size")).filter(|b| *b > 0);
        rep.cores_per_device = small(h.get("neuroncore_per_device_count")).filter(|c| *c > 0);
        rep.logical_neuroncore_config = small(h.get("logical_neuroncore_config"));
    }
    match first(&root, &["neuron_runtime_data", "runtime_data"]) {
        None => {}
        Some(Value::Array(list)) => {
            if list.len() > MAX_RUNTIMES {
                note(
                    &mut rep.warnings,
                    format!("more than {MAX_RUNTIMES} runtimes; the rest are ignored"),
                );
            }
            for (pos, r) in list.iter().take(MAX_RUNTIMES).enumerate() {
                if let Some(rt) = read_runtime(r, pos, &mut rep.ecc, &mut rep.warnings) {
                    rep.runtimes.push(rt);
                }
            }
        }
        Some(_) => note(&mut rep.warnings, "the runtime list is not an array".into()),
    }
    if let Some(sys) = root.get("system_data").filter(|s| s.is_object()) {
        if let Some(g) = group(sys, &["neuron_hw_counters"], "", &mut rep.warnings) {
            read_ecc(g, &mut rep.ecc, &mut rep.warnings);
        }
    }
    rep
}

/// The values of each device the report speaks of, by device index.
/// `cores_per_device` and `device_count` come from the report's hardware
/// information when it has them, else from the caller (neuron-ls).
pub fn device_loads(
    rep: &MonitorReport,
    cores_per_device: Option<u32>,
    device_count: Option<u32>,
) -> BTreeMap<u32, DeviceLoad> {
    let per = rep.cores_per_device.or(cores_per_device).filter(|c| *c > 0);
    let n_devices = rep.device_count.or(device_count);
    let mut out: BTreeMap<u32, DeviceLoad> = BTreeMap::new();
    // Per core over all runtimes: the highest utilization, the memory summed.
    // Each runtime may list every core, with 0 for cores it does not use: a
    // report of four runtimes on an inf1.xlarge pasted into a copy of
    // neuron-monitor-prometheus.py (code-search file id 42733302911, a
    // Python literal, so no fixture) lists cores 0–3 under each runtime, one
    // of them non-zero in both `neuroncores_in_use` and
    // `neuroncore_memory_usage`.
    let mut util: BTreeMap<u32, f64> = BTreeMap::new();
    let mut mem: BTreeMap<u32, u64> = BTreeMap::new();
    for rt in &rep.runtimes {
        for (&c, s) in &rt.cores {
            if let Some(u) = s.utilization_percent {
                let e = util.entry(c).or_insert(u);
                *e = e.max(u);
            }
            if let Some(m) = s.device_memory_used_bytes {
                let e = mem.entry(c).or_insert(0);
                *e = e.saturating_add(m);
            }
        }
    }
    if let Some(per) = per {
        for (&c, &u) in &util {
            let d = out.entry(c / per).or_insert_with(|| DeviceLoad {
                index: c / per,
                ..DeviceLoad::default()
            });
            d.core_utilization.push((c, u));
        }
        for d in out.values_mut() {
            if d.core_utilization.len() == per as usize {
                let sum: f64 = d.core_utilization.iter().map(|(_, u)| u).sum();
                d.utilization_percent = Some(sum / f64::from(per));
            }
        }
        for (&c, &m) in &mem {
            let d = out.entry(c / per).or_insert_with(|| DeviceLoad {
                index: c / per,
                ..DeviceLoad::default()
            });
            d.memory_used_bytes = Some(d.memory_used_bytes.unwrap_or(0).saturating_add(m));
        }
    }
    // A runtime total without a per-core breakdown can only be placed on a
    // machine with one device.
    if n_devices == Some(1) && mem.is_empty() {
        let totals: Vec<u64> = rep
            .runtimes
            .iter()
            .filter_map(|r| r.device_memory_used_bytes)
            .collect();
        if !totals.is_empty() {
            let d = out.entry(0).or_insert_with(|| DeviceLoad {
                index: 0,
                ..DeviceLoad::default()
            });
            d.memory_used_bytes = Some(totals.iter().fold(0u64, |a, b| a.saturating_add(*b)));
        }
    }
    for (&i, e) in &rep.ecc {
        out.entry(i)
            .or_insert_with(|| DeviceLoad {
                index: i,
                ..DeviceLoad::default()
            })
            .ecc = Some(e.clone());
    }
    out
}

/// The chip name of a report: from the instance type as for neuron-ls, else
/// from `neuron_device_type`.
pub fn chip_of_report(rep: &MonitorReport) -> Option<&'static str> {
    rep.instance_type
        .as_deref()
        .and_then(chip_of_instance)
        .or_else(|| match rep.device_type.as_deref()? {
            "inferentia" => Some("Inferentia"),
            "inferentia2" => Some("Inferentia2"),
            "trainium" => Some("Trainium"),
            "trainium2" => Some("Trainium2"),
            "trainium3" => Some("Trainium3"),
            _ => None,
        })
}

/// Put a device's load on it: utilization and memory in use where the
/// device does not know them yet, the per-core values and the report's
/// ECC counts (with their period) as extras.
pub fn apply_load(d: &mut Device, load: &DeviceLoad) {
    if d.utilization_percent.is_none() {
        d.utilization_percent = load.utilization_percent;
    }
    if let Some(m) = load.memory_used_bytes {
        d.extra
            .entry("memory_used_bytes".into())
            .or_insert_with(|| m.to_string());
    }
    if !load.core_utilization.is_empty() {
        let v: Vec<String> = load
            .core_utilization
            .iter()
            .map(|(c, u)| format!("{c}:{u}"))
            .collect();
        d.extra
            .insert("neuroncore_utilization_percent".into(), v.join(","));
    }
    if let Some(e) = &load.ecc {
        for (k, v) in [
            ("mem_ecc_corrected", e.mem_corrected),
            ("mem_ecc_uncorrected", e.mem_uncorrected),
            ("sram_ecc_corrected", e.sram_corrected),
            ("sram_ecc_uncorrected", e.sram_uncorrected),
        ] {
            if let Some(v) = v {
                d.extra.insert(format!("neuron_monitor_{k}"), v.to_string());
            }
        }
        if let Some(p) = e.period_seconds {
            d.extra
                .insert("neuron_monitor_ecc_period_seconds".into(), p.to_string());
        }
    }
}

/// Parser for `ai-hwaccel parse neuron-monitor`: one device per Neuron
/// device the report counts (`neuron_device_count`, else the indexes its
/// counters name), with the report's values.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_neuron_monitor(&crate::model::text::decode(bytes));
    let mut warnings = rep.warnings.clone();
    let loads = device_loads(&rep, None, None);
    let count = rep
        .device_count
        .or_else(|| loads.keys().next_back().map(|i| i.saturating_add(1)))
        .unwrap_or(0);
    let chip = chip_of_report(&rep);
    let mut devices = Vec::new();
    for i in 0..count {
        if device_cap_reached(devices.len(), "neuron-monitor", &mut warnings) {
            break;
        }
        let name = chip.map_or_else(|| "AWS Neuron device".to_string(), |c| format!("AWS {c}"));
        let mut d = Device::new(
            format!("neuron:{i}"),
            name,
            "aws",
            Family::AiAsic,
            "neuron-monitor",
        );
        d.index = Some(i);
        d.memory_bytes = rep.device_memory_bytes;
        d.compute_units = rep.cores_per_device;
        d.architecture = chip.map(str::to_string);
        if let Some(t) = &rep.instance_type {
            d.extra.insert("instance_type".into(), t.clone());
        }
        for (k, v) in [
            ("neuron_device_type", &rep.device_type),
            ("neuron_device_version", &rep.device_version),
            ("neuroncore_version", &rep.neuroncore_version),
        ] {
            if let Some(v) = v {
                d.extra.insert(k.into(), v.clone());
            }
        }
        if let Some(c) = rep.logical_neuroncore_config {
            d.extra
                .insert("logical_neuroncore_config".into(), c.to_string());
        }
        if let Some(l) = loads.get(&i) {
            apply_load(&mut d, l);
        }
        devices.push(d);
    }
    if devices.is_empty() && warnings.is_empty() {
        note(&mut warnings, "the report names no Neuron device".into());
    }
    ParseOutput { devices, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real first report of a trn1.2xlarge with no runtime (all-smi).
    const NO_RUNTIME: &str = include_str!(
        "../../../tests/fixtures/neuron-monitor/all-smi__trn1.2xlarge__neuron-monitor-no-runtime.json"
    );

    #[test]
    fn the_trn1_capture_without_a_runtime() {
        let r = parse_neuron_monitor(NO_RUNTIME);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.instance_type.as_deref(), Some("trn1.2xlarge"));
        assert_eq!(r.device_type.as_deref(), Some("trainium"));
        assert_eq!(r.device_version.as_deref(), Some("v2"));
        assert_eq!(r.neuroncore_version.as_deref(), Some("v2"));
        assert_eq!(r.device_count, Some(1));
        assert_eq!(r.device_memory_bytes, Some(34_359_738_368));
        assert_eq!(r.cores_per_device, Some(2));
        assert_eq!(r.logical_neuroncore_config, Some(1));
        assert!(r.runtimes.is_empty());
        assert!(
            r.ecc.is_empty(),
            "the report has no neuron_hw_counters group"
        );
        // No runtime: nothing is known of the load; unknown, not 0 %.
        assert!(device_loads(&r, None, None).is_empty());
        let out = parse_format(NO_RUNTIME.as_bytes());
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let [d] = out.devices.as_slice() else {
            panic!("{:?}", out.devices)
        };
        assert_eq!(d.name, "AWS Trainium");
        assert_eq!(d.memory_bytes, Some(34_359_738_368));
        assert_eq!(d.compute_units, Some(2));
        assert_eq!(d.utilization_percent, None);
        assert!(!d.extra.contains_key("memory_used_bytes"));
        assert_eq!(d.extra["neuroncore_version"], "v2");
    }

    /// A 2.x report in the documented layout (keys of the 2.x user guide;
    /// values chosen here): two runtimes on a two-device, two-core machine.
    const V2: &str = r#"{"neuron_runtime_data":[
        {"pid":7,"neuron_runtime_tag":"a","error":"","report":{
          "neuroncore_counters":{"period":1.0,"neuroncores_in_use":{"0":{"neuroncore_utilization":50},"1":{"neuroncore_utilization":25.5},"2":{"neuroncore_utilization":10}},"error":""},
          "memory_used":{"period":1.0,"neuron_runtime_used_bytes":{"host":100,"neuron_device":60,"usage_breakdown":{"host":{},"neuroncore_memory_usage":{
             "0":{"constants":10,"model_code":5,"model_shared_scratchpad":0,"runtime_memory":1,"tensors":4},
             "2":{"constants":20,"model_code":20}}}},"error":""},
          "neuron_runtime_vcpu_usage":{"error":"open /proc/7/stat: no such file"}}},
        {"pid":8,"neuron_runtime_tag":"b","error":"","report":{
          "neuroncore_counters":{"neuroncores_in_use":{"1":{"neuroncore_utilization":75}},"error":""},
          "memory_used":{"neuron_runtime_used_bytes":{"host":1,"neuron_device":7,"usage_breakdown":{"neuroncore_memory_usage":{"1":{"tensors":7}}}},"error":""}}},
        {"pid":9,"error":"failed to connect"}],
      "system_data":{"neuron_hw_counters":{"period":1.5,"neuron_devices":[
        {"neuron_device_index":0,"mem_ecc_corrected":3,"mem_ecc_uncorrected":0,"sram_ecc_uncorrected":1,"sram_ecc_corrected":2},
        {"neuron_device_index":1,"mem_ecc_corrected":0,"mem_ecc_uncorrected":0,"sram_ecc_uncorrected":0,"sram_ecc_corrected":0}],"error":""}},
      "instance_info":{"instance_type":"trn1.32xlarge","error":""},
      "neuron_hardware_info":{"neuron_device_count":2,"neuroncore_per_device_count":2,"error":""}}"#;

    #[test]
    fn cores_map_to_devices_and_runtimes_add_up() {
        let r = parse_neuron_monitor(V2);
        assert_eq!(r.runtimes.len(), 2, "the runtime with an error is left out");
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].contains("failed to connect"));
        assert_eq!(r.runtimes[0].device_memory_used_bytes, Some(60));
        assert_eq!(r.runtimes[0].host_memory_used_bytes, Some(100));
        let l = device_loads(&r, None, None);
        // Device 0: cores 0 and 1, both listed (1 by the second runtime).
        assert_eq!(l[&0].core_utilization, vec![(0, 50.0), (1, 75.0)]);
        assert_eq!(l[&0].utilization_percent, Some(62.5));
        // 10+5+0+1+4 from runtime a, 7 from runtime b.
        assert_eq!(l[&0].memory_used_bytes, Some(27));
        // Device 1: only core 2 of cores 2–3 listed: no device figure.
        assert_eq!(l[&1].core_utilization, vec![(2, 10.0)]);
        assert_eq!(l[&1].utilization_percent, None);
        assert_eq!(l[&1].memory_used_bytes, Some(40));
        let e = l[&0].ecc.as_ref().unwrap();
        assert_eq!(
            (
                e.mem_corrected,
                e.mem_uncorrected,
                e.sram_corrected,
                e.sram_uncorrected
            ),
            (Some(3), Some(0), Some(2), Some(1))
        );
        assert_eq!(e.period_seconds, Some(1.5));
        let out = parse_format(V2.as_bytes());
        assert_eq!(out.devices.len(), 2);
        let d = &out.devices[0];
        assert_eq!(d.name, "AWS Trainium");
        assert_eq!(d.utilization_percent, Some(62.5));
        assert_eq!(d.extra["memory_used_bytes"], "27");
        assert_eq!(d.extra["neuroncore_utilization_percent"], "0:50,1:75");
        assert_eq!(d.extra["neuron_monitor_sram_ecc_uncorrected"], "1");
        assert_eq!(d.extra["neuron_monitor_ecc_period_seconds"], "1.5");
        assert_eq!(
            d.ecc_uncorrected_errors, None,
            "per-report counts are no totals"
        );
    }

    #[test]
    fn the_1x_and_2020_spellings() {
        // 1.x (neuron-tools v1 guide): per-runtime hw_counters, instance_data.
        let v1 = r#"{"neuron_runtime_data":[{"neuron_runtime_index":0,"error":"","report":{
            "neuroncore_counters":{"neuroncores_in_use":{"0":{"neuroncore_utilization":42.01,"loaded_models":["m:s"]}},"error":""},
            "memory_used":{"neuron_runtime_used_bytes":{"host":1000000,"neuron_device":2000000},"error":""},
            "hw_counters":{"period":1.03,"neuron_devices":[{"neuron_device_index":0,"mem_ecc_corrected":0,"mem_ecc_uncorrected":4,"sram_ecc_uncorrected":0}],"error":""}}}],
            "instance_data":{"instance_type":"inf1.xlarge"}}"#;
        let r = parse_neuron_monitor(v1);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.instance_type.as_deref(), Some("inf1.xlarge"));
        assert_eq!(r.runtimes[0].index, Some(0));
        assert_eq!(r.ecc[&0].mem_uncorrected, Some(4));
        assert_eq!(r.ecc[&0].sram_corrected, None, "not in 1.x");
        // No hardware info: neuron-ls gives 4 cores on 1 device.
        let l = device_loads(&r, Some(4), Some(1));
        assert_eq!(l[&0].core_utilization, vec![(0, 42.01)]);
        assert_eq!(l[&0].utilization_percent, None, "3 of 4 cores not listed");
        assert_eq!(
            l[&0].memory_used_bytes,
            Some(2_000_000),
            "one device: the total"
        );
        // With two devices the total cannot be placed.
        assert_eq!(
            device_loads(&r, Some(4), Some(2))[&0].memory_used_bytes,
            None
        );

        // 2020 (Neuron 1.x beta guide): runtime_data, nc_counters, memory, devices.
        let old = r#"{"runtime_data":[{"runtime_index":0,"error":"","report":{
            "nc_counters":{"neuron_cores":{"0":{"alignment_corrections":1,"matmul_utilization":42.01}},"error":""},
            "memory":{"runtime_memory":{"host":1000000,"device":2000000},"error":""},
            "hw_counters":{"devices":[{"device_index":0,"mem_ecc_corrected":5,"mem_ecc_uncorrected":0,"sram_ecc_uncorrected":0}],"error":""}}}],
            "instance_data":{"instance_id":"i-0","instance_type":"inf1.xlarge"}}"#;
        let r = parse_neuron_monitor(old);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let c = &r.runtimes[0].cores[&0];
        assert_eq!(c.matmul_utilization_percent, Some(42.01));
        assert_eq!(
            c.utilization_percent, None,
            "matmul share is not core utilization"
        );
        assert_eq!(r.runtimes[0].device_memory_used_bytes, Some(2_000_000));
        assert_eq!(r.ecc[&0].mem_corrected, Some(5));
        let out = parse_format(old.as_bytes());
        assert_eq!(out.devices.len(), 1);
        assert_eq!(out.devices[0].name, "AWS Inferentia");
    }

    #[test]
    fn hostile_reports_warn_and_never_panic() {
        for cut in 0..=NO_RUNTIME.len() {
            let r = parse_neuron_monitor(&NO_RUNTIME[..cut]);
            assert!(
                cut == NO_RUNTIME.len() || !r.warnings.is_empty(),
                "cut {cut}"
            );
            let _ = parse_format(&NO_RUNTIME.as_bytes()[..cut]);
        }
        for bad in [
            "[1,2]",
            "null",
            "{\"neuron_runtime_data\":5}",
            "{\"neuron_runtime_data\":[{\"report\":{\"neuroncore_counters\":[]}}]}",
            "{\"neuron_runtime_data\":[{\"report\":{\"neuroncore_counters\":{\"neuroncores_in_use\":{\"x\":{\"neuroncore_utilization\":1},\"0\":{\"neuroncore_utilization\":101}}}}}]}",
            "{\"system_data\":{\"neuron_hw_counters\":{\"neuron_devices\":{}}}}",
            "{\"system_data\":{\"neuron_hw_counters\":{\"neuron_devices\":[{\"mem_ecc_corrected\":1}]}}}",
        ] {
            let r = parse_neuron_monitor(bad);
            assert!(!r.warnings.is_empty(), "{bad}");
            assert!(
                device_loads(&r, Some(2), Some(1))
                    .values()
                    .all(|l| l.utilization_percent.is_none())
            );
        }
        // Nesting past serde_json's limit is an error, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(!parse_neuron_monitor(&deep).warnings.is_empty());
        // A million bad core keys are not a million warnings.
        let keys: String = (0..5000)
            .map(|i| format!("\"x{i}\":{{}}"))
            .collect::<Vec<_>>()
            .join(",");
        let r = parse_neuron_monitor(&format!(
            "{{\"neuron_runtime_data\":[{{\"report\":{{\"neuroncore_counters\":{{\"neuroncores_in_use\":{{{keys}}}}}}}}}]}}"
        ));
        assert_eq!(r.warnings.len(), MAX_WARNINGS_PER_OUTPUT + 1);
        // A forged device count is capped.
        let huge = r#"{"neuron_hardware_info":{"neuron_device_count":4000000000}}"#;
        let out = parse_format(huge.as_bytes());
        assert_eq!(
            out.devices.len(),
            crate::detect::formats::MAX_DEVICES_PER_OUTPUT
        );
        assert!(!out.warnings.is_empty());
        // Wrong types stay unknown.
        let r = parse_neuron_monitor(
            r#"{"neuron_hardware_info":{"neuron_device_count":"1","neuron_device_memory_size":-5,"neuroncore_per_device_count":2.5}}"#,
        );
        assert_eq!(
            (r.device_count, r.device_memory_bytes, r.cores_per_device),
            (None, None, None)
        );
        // A core index past u32 and a core at u32::MAX do not overflow.
        let r = parse_neuron_monitor(
            r#"{"neuron_runtime_data":[{"report":{"neuroncore_counters":{"neuroncores_in_use":{"4294967295":{"neuroncore_utilization":1}}}}}],"system_data":{"neuron_hw_counters":{"neuron_devices":[{"neuron_device_index":4294967295}]}}}"#,
        );
        let l = device_loads(&r, Some(1), None);
        assert_eq!(l[&u32::MAX].utilization_percent, Some(1.0));
        assert_eq!(parse_format(b"{\"system_data\":{\"neuron_hw_counters\":{\"neuron_devices\":[{\"neuron_device_index\":4294967295}]}}}").devices.len(), MAX_CORES.min(crate::detect::formats::MAX_DEVICES_PER_OUTPUT));
    }
}
