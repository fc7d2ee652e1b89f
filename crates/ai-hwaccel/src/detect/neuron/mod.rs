//! The `neuron` backend: AWS Inferentia and Trainium (Neuron) devices.
//!
//! Runs only when the machine suggests Neuron hardware: a Neuron PCI
//! function (vendor 0x1d0f, ids of the `aws-neuron-driver` PCI table) in
//! the shared scan, or entries under `/sys/class/neuron_device`. Facts come
//! from `neuron-ls --json-output`, else the `neuron-ls` table, else sysfs
//! (`/sys/class/neuron_device/neuron<N>/device` → the PCI function).
//! When `neuron-ls` listed devices, the first report of `neuron-monitor`
//! adds their dynamic values ([`monitor`]).
//!
//! `neuron-ls` prints memory as `32 GB` per device: the driver's byte count
//! divided by 2^30 (Trainium1 carries 32 GiB of HBM), so GB is read as GiB.
//! NeuronCores per device become `compute_units`; with
//! `logical-neuroncore-config: 2` (Trn2) these are logical cores.
//!
//! Accepted JSON shape (`neuron-ls --json-output`): an array (or an object
//! with a `neuron_devices`/`devices` array) of objects with
//! `neuron_device` (index), `bdf` (PCI address, domain optional),
//! `connected_to` (array of indexes or null), `nc_count` (NeuronCores),
//! `memory_size` (bytes), and optionally `numa_node`, `cpu_affinity`,
//! `instance_type`. Unknown keys are ignored.
//!
//! Visibility ([`neuron_visibility`]): `AWS_NEURON_VISIBLE_DEVICES` lists
//! device indexes (`ALL`, `0,1`, `2-3`) — the Neuron OCI hook's variable,
//! "a set of contiguous comma-separated inferentia logical ids"
//! (awsdocs-neuron `containers/tutorial-docker-runtime1.0`,
//! `containers/tutorials/tutorial-oci-hook`). `NEURON_RT_VISIBLE_CORES`
//! lists NeuronCore indexes: "a single NeuronCore index or an inclusive
//! range", numbered from 0 to devices × cores − 1 across devices
//! (awsdocs-neuron `neuron-runtime/nrt-configurable-parameters`, notes 3 and
//! 5), and since runtime 2.16.18 a comma-separated list of indexes and
//! ranges (aws-neuron/aws-neuron-sdk PR #1024). Device `i` in index order
//! owns cores `[s, s + c)` where `c` is its core count and `s` the sum of
//! the counts before it (`i × c` when every device has `c`); a device is
//! visible when any of its cores is. Cores are numbered over the devices
//! `AWS_NEURON_VISIBLE_DEVICES` leaves, since the hook mounts only those
//! into the container. Hidden devices stay listed, unavailable, with
//! `hidden by <VAR>`. An empty value is treated as unset (neither document
//! gives it a meaning); a value that is not an index list is not applied
//! and becomes a warning.

pub mod monitor;

use crate::model::{Device, DeviceLink, Family, Labels, PciAddress, SizeUnit, parse_size};
use crate::probe::{ProbeExt, join};

use super::formats::ParseOutput;
use super::pci_ids::known_device;
use super::sysfs::{parse_cpulist, parse_numa_node};
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

/// PCI vendor id of Amazon (Annapurna Labs).
pub const AMAZON_VENDOR_ID: u16 = 0x1d0f;
const SYSFS_CLASS: &str = "/sys/class/neuron_device";

/// One Neuron device as neuron-ls shows it. Unknown values are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeuronDevice {
    /// `NEURON DEVICE` index.
    pub index: u32,
    /// NeuronCores on the device.
    pub cores: Option<u32>,
    /// `NEURON CORE IDS` (`0-3`).
    pub core_ids: Option<String>,
    /// Device memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Indexes of directly connected devices.
    pub connected: Vec<u32>,
    /// PCI address.
    pub bdf: Option<PciAddress>,
    /// `CPU AFFINITY`.
    pub cpu_affinity: Option<String>,
    /// `NUMA NODE` (-1 = none).
    pub numa_node: Option<u32>,
}

/// What one neuron-ls output held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeuronReport {
    /// `instance-type:` header.
    pub instance_type: Option<String>,
    /// `logical-neuroncore-config:` header.
    pub logical_neuroncore_config: Option<u32>,
    /// Devices in index order.
    pub devices: Vec<NeuronDevice>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

/// `8 GB`, `96 GB` (GiB, see the module doc) or a byte count.
fn parse_memory(v: &str) -> Option<u64> {
    parse_size(v, Some(SizeUnit::B), Labels::Binary)
}

fn parse_list(v: &str) -> Option<Vec<u32>> {
    let v = v.trim();
    if v.is_empty() || v == "NA" {
        return Some(Vec::new());
    }
    v.split(',').map(|s| s.trim().parse().ok()).collect()
}

/// Parse the `neuron-ls` table (old and new layouts, any rst indentation,
/// extra columns such as PID/COMMAND). Columns are found by their two-line
/// header names. The Neuron 1.x (Inf1) layout names the index `LOGICAL ID`
/// and splits memory into `MEMORY CHANNEL 0` / `MEMORY CHANNEL 1`, which are
/// summed. Never panics.
pub fn parse_neuron_ls(text: &str) -> NeuronReport {
    let mut rep = NeuronReport::default();
    let mut header: Vec<String> = Vec::new();
    let mut in_header = false;
    let mut header_done = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("instance-type:") {
            rep.instance_type = Some(v.trim().to_string()).filter(|s| !s.is_empty());
            continue;
        }
        if let Some(v) = t.strip_prefix("logical-neuroncore-config:") {
            rep.logical_neuroncore_config = v.trim().parse().ok();
            continue;
        }
        if t.starts_with('+') {
            if !header.is_empty() && in_header {
                in_header = false;
                header_done = true;
            } else if header.is_empty() {
                in_header = true;
            }
            continue;
        }
        if !t.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = t.trim_matches('|').split('|').map(str::trim).collect();
        if in_header && !header_done {
            if header.is_empty() {
                header = cells.iter().map(|c| c.to_string()).collect();
            } else {
                for (h, c) in header.iter_mut().zip(&cells) {
                    if !c.is_empty() {
                        h.push(' ');
                        h.push_str(c);
                    }
                }
            }
            continue;
        }
        if !header_done || cells.len() != header.len() {
            continue;
        }
        let col = |name: &str| header.iter().position(|h| h == name).map(|i| cells[i]);
        let Some(idx) = col("NEURON DEVICE").or_else(|| col("LOGICAL ID")) else {
            continue;
        };
        if idx.is_empty() {
            continue; // a continuation row of another process on the same device
        }
        let Ok(index) = idx.parse::<u32>() else {
            rep.warnings
                .push(format!("neuron-ls: device index {idx:?} is not a number"));
            continue;
        };
        if crate::detect::formats::device_cap_reached(
            rep.devices.len(),
            "neuron-ls",
            &mut rep.warnings,
        ) {
            break;
        }
        let mut d = NeuronDevice {
            index,
            ..Default::default()
        };
        d.cores = col("NEURON CORES").and_then(|c| c.parse().ok());
        d.core_ids = col("NEURON CORE IDS").map(str::to_string);
        if let Some(m) = col("NEURON MEMORY") {
            d.memory_bytes = parse_memory(m);
            if d.memory_bytes.is_none() {
                rep.warnings.push(format!(
                    "neuron-ls device {index}: memory {m:?} not understood"
                ));
            }
        } else if let (Some(a), Some(b)) = (col("MEMORY CHANNEL 0"), col("MEMORY CHANNEL 1")) {
            d.memory_bytes = parse_memory(a)
                .zip(parse_memory(b))
                .and_then(|(a, b)| a.checked_add(b));
            if d.memory_bytes.is_none() {
                rep.warnings.push(format!(
                    "neuron-ls device {index}: memory channels {a:?} + {b:?} not understood"
                ));
            }
        }
        if let Some(c) = col("CONNECTED DEVICES") {
            match parse_list(c) {
                Some(l) => d.connected = l,
                None => rep
                    .warnings
                    .push(format!("neuron-ls device {index}: connected devices {c:?}")),
            }
        }
        if let Some(b) = col("PCI BDF") {
            d.bdf = b.parse().ok();
            if d.bdf.is_none() {
                rep.warnings.push(format!(
                    "neuron-ls device {index}: PCI BDF {b:?} not understood"
                ));
            }
        }
        d.cpu_affinity = col("CPU AFFINITY")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        d.numa_node = col("NUMA NODE").and_then(parse_numa_node);
        rep.devices.push(d);
    }
    if !header.is_empty()
        && !header
            .iter()
            .any(|h| h == "NEURON DEVICE" || h == "LOGICAL ID")
    {
        rep.warnings
            .push("neuron-ls: table has no NEURON DEVICE column".into());
    }
    rep
}

/// Parse `neuron-ls --json-output` (shape in the module doc). Never panics.
pub fn parse_neuron_ls_json(text: &str) -> NeuronReport {
    use serde_json::Value;
    let mut rep = NeuronReport::default();
    let v: Value = match serde_json::from_str(crate::model::text::strip_bom(text)) {
        Ok(v) => v,
        Err(e) => {
            rep.warnings.push(format!("neuron-ls JSON: {e}"));
            return rep;
        }
    };
    let list = match &v {
        Value::Array(a) => Some(a),
        Value::Object(o) => ["neuron_devices", "devices"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_array)),
        _ => None,
    };
    let Some(list) = list else {
        rep.warnings
            .push("neuron-ls JSON: no array of devices".into());
        return rep;
    };
    let num = |o: &Value, k: &str| o.get(k).and_then(Value::as_u64);
    for (n, o) in list.iter().enumerate() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        if crate::detect::formats::device_cap_reached(
            rep.devices.len(),
            "neuron-ls JSON",
            &mut rep.warnings,
        ) {
            break;
        }
        let Some(index) = num(o, "neuron_device").and_then(|i| u32::try_from(i).ok()) else {
            rep.warnings
                .push(format!("neuron-ls JSON entry {n}: no neuron_device index"));
            continue;
        };
        if rep.instance_type.is_none() {
            rep.instance_type = o
                .get("instance_type")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        rep.devices.push(NeuronDevice {
            index,
            cores: num(o, "nc_count").and_then(|c| u32::try_from(c).ok()),
            core_ids: None,
            memory_bytes: num(o, "memory_size"),
            connected: o
                .get("connected_to")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
                        .collect()
                })
                .unwrap_or_default(),
            bdf: o
                .get("bdf")
                .and_then(Value::as_str)
                .and_then(|b| b.parse().ok()),
            cpu_affinity: o
                .get("cpu_affinity")
                .and_then(Value::as_str)
                .map(str::to_string),
            numa_node: o
                .get("numa_node")
                .and_then(Value::as_i64)
                .and_then(|n| parse_numa_node(&n.to_string())),
        });
    }
    crate::detect::formats::cap_records(&mut rep.devices, "neuron-ls", &mut rep.warnings);
    rep
}

/// Chip generation from the EC2 instance type (`trn1.32xlarge` → Trainium).
pub fn chip_of_instance(instance_type: &str) -> Option<&'static str> {
    let family = instance_type.split('.').next()?.to_ascii_lowercase();
    match family.as_str() {
        "inf1" => Some("Inferentia"),
        "inf2" => Some("Inferentia2"),
        "trn1" | "trn1n" => Some("Trainium"),
        "trn2" | "trn2n" | "trn2u" => Some("Trainium2"),
        // The Neuron driver's Trainium3 instance names (aws-neuron-driver
        // v4/neuron_dhal_v4.c @4b5e49d6: `trn3.48xlarge`,
        // `trn3p.48xlarge`, `trn3s.48xlarge`, `trn3pd98.3xlarge`).
        "trn3" | "trn3p" | "trn3s" | "trn3pd98" => Some("Trainium3"),
        _ => None,
    }
}

/// Which devices `AWS_NEURON_VISIBLE_DEVICES` and `NEURON_RT_VISIBLE_CORES`
/// hide (rules in the module doc). `devices` holds each device's index and
/// NeuronCore count; the answer gives, in the same order, the variable that
/// hides each device (`None` = visible), plus warnings for values that
/// could not be applied.
pub fn neuron_visibility(
    devices: &[(u32, Option<u32>)],
    visible_devices: Option<&str>,
    visible_cores: Option<&str>,
) -> (Vec<Option<&'static str>>, Vec<String>) {
    const DEVS: &str = "AWS_NEURON_VISIBLE_DEVICES";
    const CORES: &str = "NEURON_RT_VISIBLE_CORES";
    let mut hidden: Vec<Option<&'static str>> = vec![None; devices.len()];
    let mut warnings = Vec::new();
    fn set(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    if let Some(v) = set(visible_devices).filter(|v| !v.eq_ignore_ascii_case("all")) {
        match parse_cpulist(v) {
            Some(list) => {
                for (h, (index, _)) in hidden.iter_mut().zip(devices) {
                    if !list.contains(index) {
                        *h = Some(DEVS);
                    }
                }
            }
            None => warnings.push(format!(
                "{DEVS}={v:?}: not a list of device indexes; not applied"
            )),
        }
    }
    if let Some(v) = set(visible_cores) {
        match parse_cpulist(v) {
            Some(list) => {
                let mut order: Vec<usize> = (0..devices.len())
                    .filter(|&i| hidden[i].is_none())
                    .collect();
                order.sort_by_key(|&i| devices[i].0);
                let mut start: u64 = 0;
                for i in order {
                    let (index, cores) = devices[i];
                    let Some(c) = cores.filter(|&c| c > 0) else {
                        warnings.push(format!(
                            "{CORES}: NeuronCore count of device {index} unknown; not applied to it or later devices"
                        ));
                        break;
                    };
                    let end = start + u64::from(c);
                    if !list.iter().any(|&k| (start..end).contains(&u64::from(k))) {
                        hidden[i] = Some(CORES);
                    }
                    start = end;
                }
            }
            None => warnings.push(format!(
                "{CORES}={v:?}: not a list of NeuronCore indexes; not applied"
            )),
        }
    }
    (hidden, warnings)
}

/// Devices of a report. `pci_name` names a device from its PCI id when known.
fn devices_from(
    rep: &NeuronReport,
    pci_name: &dyn Fn(PciAddress) -> Option<String>,
) -> Vec<Device> {
    let chip = rep.instance_type.as_deref().and_then(chip_of_instance);
    let id_of = |d: &NeuronDevice| match d.bdf {
        Some(a) => format!("pci:{a}"),
        None => format!("neuron:{}", d.index),
    };
    // Peer ids by index, built once: a linear search per link was
    // quadratic in the number of rows (8 MiB of rows took 34 s).
    let mut by_index: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    for d in &rep.devices {
        by_index.entry(d.index).or_insert_with(|| id_of(d));
    }
    rep.devices
        .iter()
        .map(|n| {
            let name = n
                .bdf
                .and_then(pci_name)
                .or_else(|| chip.map(|c| format!("AWS {c}")))
                .unwrap_or_else(|| "AWS Neuron device".into());
            let mut d = Device::new(id_of(n), name, "aws", Family::AiAsic, "neuron-ls");
            d.pci_address = n.bdf;
            d.index = Some(n.index);
            d.memory_bytes = n.memory_bytes;
            d.compute_units = n.cores;
            d.numa_node = n.numa_node;
            d.architecture = chip.map(str::to_string);
            d.links = n
                .connected
                .iter()
                .map(|peer| DeviceLink {
                    peer: by_index
                        .get(peer)
                        .cloned()
                        .unwrap_or_else(|| format!("neuron{peer}")),
                    kind: "neuronlink".into(),
                    count: None,
                    bandwidth_bytes_per_s: None,
                })
                .collect();
            if let Some(t) = &rep.instance_type {
                d.extra.insert("instance_type".into(), t.clone());
            }
            if let Some(c) = rep.logical_neuroncore_config {
                d.extra
                    .insert("logical_neuroncore_config".into(), c.to_string());
            }
            if let Some(c) = &n.core_ids {
                d.extra.insert("neuroncore_ids".into(), c.clone());
            }
            if let Some(c) = &n.cpu_affinity {
                d.extra.insert("cpu_affinity".into(), c.clone());
            }
            d
        })
        .collect()
}

fn parse_output(rep: NeuronReport) -> ParseOutput {
    let devices = devices_from(&rep, &|_| None);
    let mut warnings = rep.warnings;
    if devices.is_empty() {
        warnings.push("no Neuron device rows found".into());
    }
    ParseOutput { devices, warnings }
}

/// Parser for `ai-hwaccel parse neuron-ls` (the table).
pub(crate) fn parse_format_table(bytes: &[u8]) -> ParseOutput {
    parse_output(parse_neuron_ls(&crate::model::text::decode(bytes)))
}

/// Parser for `ai-hwaccel parse neuron-ls-json`.
pub(crate) fn parse_format_json(bytes: &[u8]) -> ParseOutput {
    parse_output(parse_neuron_ls_json(&crate::model::text::decode(bytes)))
}

/// The `neuron` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let on_pci: Vec<_> = ctx.pci().by_vendor(AMAZON_VENDOR_ID).collect();
    let in_sysfs: Vec<String> = ctx
        .probe
        .list_or_empty(SYSFS_CLASS)
        .into_iter()
        .filter(|n| n.starts_with("neuron"))
        .collect();
    if on_pci.is_empty() && in_sysfs.is_empty() {
        return out;
    }
    let mut rep = run_tool(ctx, "neuron-ls", &["--json-output"], &mut out.warnings)
        .map(|t| parse_neuron_ls_json(&t))
        .filter(|r| !r.devices.is_empty());
    if rep.is_none() {
        rep = run_tool(ctx, "neuron-ls", &[], &mut out.warnings).map(|t| parse_neuron_ls(&t));
    }
    let mut rep = rep.unwrap_or_default();
    out.warnings.append(&mut rep.warnings);
    let listed_by_tool = !rep.devices.is_empty();
    // Devices the tool did not list: from sysfs, then from PCI.
    for name in &in_sysfs {
        let Ok(index) = name.trim_start_matches("neuron").parse::<u32>() else {
            continue;
        };
        let dir = join(SYSFS_CLASS, name);
        let bdf = ctx
            .probe
            .link_name(&join(&dir, "device"))
            .and_then(|a| a.parse::<PciAddress>().ok());
        if !rep
            .devices
            .iter()
            .any(|d| d.index == index || (bdf.is_some() && d.bdf == bdf))
        {
            rep.devices.push(NeuronDevice {
                index,
                bdf,
                cores: ctx
                    .probe
                    .read_trimmed(&join(&dir, "core_count"))
                    .and_then(|c| c.parse().ok()),
                ..Default::default()
            });
        }
    }
    let pci_name = |a: PciAddress| {
        ctx.pci()
            .by_address(a)
            .and_then(|p| known_device(p.vendor_id, p.device_id))
            .map(|k| k.name.to_string())
    };
    let mut devices = devices_from(&rep, &pci_name);
    for d in &mut devices {
        // The table prints bus:dev.fn; take the scan's domain when only one matches.
        if let Some(a) = d.pci_address {
            if ctx.pci().by_address(a).is_none() {
                let same: Vec<_> = on_pci
                    .iter()
                    .filter(|p| {
                        (p.address.bus, p.address.device, p.address.function)
                            == (a.bus, a.device, a.function)
                    })
                    .collect();
                if let [one] = same.as_slice() {
                    d.pci_address = Some(one.address);
                    d.id = format!("pci:{}", one.address);
                }
            }
        }
        if let Some(p) = d.pci_address.and_then(|a| ctx.pci().by_address(a)) {
            d.pci = Some(p.info());
            d.driver.clone_from(&p.driver);
            if d.numa_node.is_none() {
                d.numa_node = p.numa_node;
            }
        }
        if rep.devices.iter().all(|n| n.memory_bytes.is_none()) {
            d.source = "neuron-sysfs".into();
        }
    }
    apply_visibility(ctx, &mut devices, &mut out.warnings);
    if listed_by_tool {
        read_monitor(ctx, &mut devices, &mut out.warnings);
    }
    for p in &on_pci {
        if !devices.iter().any(|d| d.pci_address == Some(p.address)) {
            let name = known_device(p.vendor_id, p.device_id)
                .map_or_else(|| "AWS Neuron device".to_string(), |k| k.name.to_string());
            let mut d = Device::new(
                format!("pci:{}", p.address),
                name,
                "aws",
                Family::AiAsic,
                "pci-sysfs",
            );
            d.pci_address = Some(p.address);
            d.pci = Some(p.info());
            d.driver.clone_from(&p.driver);
            d.numa_node = p.numa_node;
            if p.driver.as_deref() != Some("neuron") {
                d.available = false;
                d.unavailable_reason = Some(match &p.driver {
                    Some(drv) => format!("bound to {drv}, not neuron"),
                    None => "no kernel driver bound (aws-neuron-dkms not loaded)".into(),
                });
            }
            devices.push(d);
        }
    }
    out.devices = devices;
    out
}

/// Put the first `neuron-monitor` report's values (NeuronCore utilization,
/// device memory in use, ECC counts) on the devices neuron-ls listed,
/// matched by device index. The tool streams reports without end; only its
/// first line is read, under the run's deadline. It prints that line at
/// once: "emits a complete record immediately at t≈0 and then every 5 s",
/// measured on a trn1.2xlarge with aws-neuronx-tools 2.28.23.0
/// (lablup/all-smi@8c418345b0d5 `src/device/readers/neuron.rs`,
/// `MONITOR_FIRST_RECORD_TIMEOUT`).
fn read_monitor(ctx: &Context, devices: &mut [Device], warnings: &mut Vec<String>) {
    let o = match ctx.probe.run_first_line("neuron-monitor", &[]) {
        Err(e) if e.is_absent() => return,
        Err(e) => {
            warnings.push(e.to_string());
            return;
        }
        Ok(o) => o,
    };
    let text = o.stdout_text();
    if text.trim().is_empty() {
        if o.status != Some(0) {
            warnings.push(format!(
                "neuron-monitor: no report; exited with {}: {}",
                o.status
                    .map_or_else(|| "a signal".to_string(), |s| s.to_string()),
                o.stderr_line()
            ));
        }
        return;
    }
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let rep = monitor::parse_neuron_monitor(first);
    warnings.extend(rep.warnings.iter().map(|w| format!("neuron-monitor: {w}")));
    let cores = devices.iter().find_map(|d| d.compute_units);
    let count = u32::try_from(devices.iter().filter(|d| d.index.is_some()).count()).ok();
    let loads = monitor::device_loads(&rep, cores, count);
    for d in devices.iter_mut() {
        if let Some(l) = d.index.and_then(|i| loads.get(&i)) {
            monitor::apply_load(d, l);
        }
    }
}

/// Mark the devices the visibility variables hide as unavailable (they stay
/// listed). Devices without an index cannot be matched and stay as they are.
fn apply_visibility(ctx: &Context, devices: &mut [Device], warnings: &mut Vec<String>) {
    let vis_devices = ctx.probe.env("AWS_NEURON_VISIBLE_DEVICES");
    let vis_cores = ctx.probe.env("NEURON_RT_VISIBLE_CORES");
    if vis_devices.is_none() && vis_cores.is_none() {
        return;
    }
    let indexed: Vec<usize> = (0..devices.len())
        .filter(|&i| devices[i].index.is_some())
        .collect();
    let facts: Vec<(u32, Option<u32>)> = indexed
        .iter()
        .map(|&i| (devices[i].index.unwrap_or(0), devices[i].compute_units))
        .collect();
    let (hidden, w) = neuron_visibility(&facts, vis_devices.as_deref(), vis_cores.as_deref());
    warnings.extend(w);
    for (&i, var) in indexed.iter().zip(hidden) {
        if let Some(var) = var {
            let d = &mut devices[i];
            if d.available {
                d.available = false;
                d.unavailable_reason = Some(format!("hidden by {var}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(
        devices: &[(u32, Option<u32>)],
        devs: Option<&str>,
        cores: Option<&str>,
    ) -> Vec<Option<&'static str>> {
        neuron_visibility(devices, devs, cores).0
    }

    const C: &str = "NEURON_RT_VISIBLE_CORES";
    const D: &str = "AWS_NEURON_VISIBLE_DEVICES";

    /// The chip of each instance family, Trainium3's as its driver names them.
    #[test]
    fn instance_families_name_their_chip() {
        assert_eq!(chip_of_instance("trn1.32xlarge"), Some("Trainium"));
        assert_eq!(chip_of_instance("trn2u.48xlarge"), Some("Trainium2"));
        assert_eq!(chip_of_instance("trn3.48xlarge"), Some("Trainium3"));
        assert_eq!(chip_of_instance("trn3pd98.3xlarge"), Some("Trainium3"));
        assert_eq!(chip_of_instance("TRN3P.48XLARGE"), Some("Trainium3"));
        assert_eq!(chip_of_instance("p5.48xlarge"), None);
        // The spec database knows each chip by that name.
        for chip in ["Trainium2", "Trainium3"] {
            assert!(crate::spec::by_name(chip).is_some(), "{chip}");
        }
    }

    #[test]
    fn cores_select_their_devices() {
        // trn1.32xlarge: 16 devices of 2 NeuronCores.
        let trn1: Vec<(u32, Option<u32>)> = (0..16).map(|i| (i, Some(2))).collect();
        let h = hidden(&trn1, None, Some("4-7"));
        let visible: Vec<u32> = (0..16).filter(|&i| h[i as usize].is_none()).collect();
        assert_eq!(visible, [2, 3]);
        assert_eq!(h[0], Some(C));
        // A list of ranges and single cores (runtime 2.16.18+); core 3 is on
        // device 1, core 8 on device 4.
        let h = hidden(&trn1, None, Some("3,8-8"));
        let visible: Vec<u32> = (0..16).filter(|&i| h[i as usize].is_none()).collect();
        assert_eq!(visible, [1, 4]);
        // The documentation's inf1.6xlarge example: 4 devices × 4 cores, 3-5.
        let inf1: Vec<(u32, Option<u32>)> = (0..4).map(|i| (i, Some(4))).collect();
        assert_eq!(
            hidden(&inf1, None, Some("3-5")),
            [None, None, Some(C), Some(C)]
        );
        // Cores past the last device select nothing.
        assert!(hidden(&inf1, None, Some("99")).iter().all(|h| h.is_some()));
    }

    #[test]
    fn devices_then_cores_over_what_is_left() {
        let trn1: Vec<(u32, Option<u32>)> = (0..16).map(|i| (i, Some(2))).collect();
        let h = hidden(&trn1, Some("4-7"), None);
        let visible: Vec<u32> = (0..16).filter(|&i| h[i as usize].is_none()).collect();
        assert_eq!(visible, [4, 5, 6, 7]);
        assert_eq!(h[0], Some(D));
        // Inside that container core 0-1 is device 4's pair.
        let h = hidden(&trn1, Some("4,5,6,7"), Some("0-1"));
        assert_eq!(&h[4..8], [None, Some(C), Some(C), Some(C)]);
        assert_eq!(h[3], Some(D));
        assert!(hidden(&trn1, Some("ALL"), None).iter().all(Option::is_none));
        assert!(
            hidden(&trn1, Some("all"), Some(""))
                .iter()
                .all(Option::is_none)
        );
    }

    #[test]
    fn unusable_values_warn_and_hide_nothing() {
        let devs: Vec<(u32, Option<u32>)> = (0..2).map(|i| (i, Some(2))).collect();
        let (h, w) = neuron_visibility(&devs, Some("neuron0"), Some("x-y"));
        assert!(h.iter().all(Option::is_none));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains(D) && w[1].contains(C));
        // Unknown core counts stop the numbering.
        let (h, w) = neuron_visibility(&[(0, Some(2)), (1, None), (2, Some(2))], None, Some("0"));
        assert_eq!(h, [None, None, None]);
        assert_eq!(w.len(), 1);
        let (h, _) = neuron_visibility(&[(0, Some(2)), (1, None)], None, Some("5"));
        assert_eq!(h, [Some(C), None]);
        // Out-of-order input keeps its order in the answer.
        assert_eq!(
            hidden(&[(1, Some(2)), (0, Some(2))], None, Some("2")),
            [None, Some(C)]
        );
    }

    proptest::proptest! {
        #[test]
        fn any_values_never_panic(d in ".{0,40}", c in ".{0,40}", n in 0usize..20, cores in proptest::option::of(0u32..8)) {
            let devs: Vec<(u32, Option<u32>)> = (0..n as u32).map(|i| (i, cores)).collect();
            let (h, _) = neuron_visibility(&devs, Some(&d), Some(&c));
            proptest::prop_assert_eq!(h.len(), n);
        }
    }
}
