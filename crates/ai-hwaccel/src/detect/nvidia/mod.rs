//! The `nvidia` backend: NVIDIA GPUs and their MIG instances.
//!
//! Sources, best first: NVML loaded at run time (only on the live machine,
//! see [`Probe::allows_native_libraries`]); else one run of `nvidia-smi -q -x`
//! (plus `nvidia-smi topo -m` when there are two or more GPUs); else the PCI
//! scan joined with `/proc/driver/nvidia/gpus/*/information`, with
//! `extra["missing"]` saying what could not be asked.
//!
//! When to ask ([`presence`]): any of an NVIDIA GPU in the PCI scan,
//! `/proc/driver/nvidia`, a `/dev/nvidiactl` or `/dev/nvidia<N>` node (a
//! container given GPUs without PCI sysfs) or `/dev/dxg` (WSL 2, where the
//! GPU is not on the guest's PCI bus and `nvidia-smi` / NVML come from
//! `/usr/lib/wsl/lib`) makes NVML and nvidia-smi run. Without any of them
//! only `nvidia-smi` is tried (its absence is silent), so a sandbox that
//! passes the tool through but hides `/dev` and `/sys` still answers.
//! A Jetson is read from its device tree instead ([`tegra`]).
//!
//! Unified memory: a GPU whose memory NVML or nvidia-smi reports as not
//! available (`[N/A]`, `Not Supported`: GB10 / DGX Spark, whose "nvidia-smi
//! reports memory usage Not Supported" NVIDIA lists as a known issue with
//! `/proc/meminfo` as the place to read) uses the system memory: its pool is
//! `MemTotal`, its free memory `MemAvailable`, marked shared.
//!
//! The parsers (`smi_xml`, `smi_csv`, `smi_topo`, `procfs`, and `smi_q` /
//! `smi_nvlink` for saved `nvidia-smi -q` and `nvidia-smi nvlink -s` reports)
//! are pure and also serve `ai-hwaccel parse`. `CUDA_VISIBLE_DEVICES` and
//! `NVIDIA_VISIBLE_DEVICES` hide devices (they stay listed, unavailable).

mod nvml;
pub(crate) mod procfs;
pub(crate) mod smi_csv;
pub(crate) mod smi_nvlink;
pub(crate) mod smi_q;
pub(crate) mod smi_topo;
pub(crate) mod smi_xml;
pub(crate) mod tegra;

use std::collections::BTreeMap;

use crate::model::{
    Device, DeviceLink, Family, Labels, MEMORY_RESERVED_KEY, PciAddress, PciInfo, PcieLink,
    SharedMemory, SizeUnit, parse_size,
};
use crate::probe::{Probe, ProbeExt, join};

use super::memory::parse_meminfo;
use super::pci::PciDevice;
use super::pci_ids::known_device;
use super::{BackendOutput, Context};

/// PCI vendor id of NVIDIA.
pub(crate) const NVIDIA_VENDOR_ID: u16 = 0x10de;
/// Vendor key used in device records.
pub(crate) const VENDOR: &str = "nvidia";
/// Directory the NVIDIA kernel driver publishes per-GPU facts under.
const PROC_GPUS_DIR: &str = "/proc/driver/nvidia/gpus";
/// Root of the NVIDIA driver's procfs tree; its presence means the driver is loaded.
const PROC_DRIVER_DIR: &str = "/proc/driver/nvidia";
/// Driver version file of the NVIDIA kernel module.
const PROC_VERSION: &str = "/proc/driver/nvidia/version";

/// Name of NVML's answer in a snapshot (`Probe::record_native`).
pub(crate) const NVML_RECORD: &str = "nvml";

/// Bytes in one MiB: nvidia-smi and NVML report memory in MiB (2^20 bytes).
#[cfg(test)]
pub(crate) const MIB: u64 = 1 << 20;

/// The `nvidia` backend entry point.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    detect_using(ctx, nvml::DEFAULT_LIBRARIES)
}

/// The backend with an explicit NVML library list (tests point it at missing
/// or wrong libraries).
pub(crate) fn detect_using(ctx: &Context, nvml_libraries: &[&str]) -> BackendOutput {
    let mut out = BackendOutput::default();
    if let Some(gpu) = tegra::detect(ctx.probe, &mut out.warnings) {
        out.devices = vec![gpu];
        apply_visibility(&mut out.devices, ctx.probe);
        return out;
    }
    let pci_gpus: Vec<&PciDevice> = ctx
        .pci()
        .by_vendor(NVIDIA_VENDOR_ID)
        .filter(|d| d.family == Family::Gpu)
        .collect();
    let evidence = presence(ctx.probe, pci_gpus.len());

    let mut missing: Vec<String> = Vec::new();
    let mut devices = None;
    if evidence.is_empty() {
        // No sign of an NVIDIA GPU: only a tool on the search path can say
        // more (its absence is no warning).
    } else if ctx.probe.allows_native_libraries() {
        match nvml::query(nvml_libraries) {
            Ok(snapshot) => {
                // A snapshot keeps the answer: NVML is no file or tool a
                // replay could read again.
                ctx.probe.record_native(NVML_RECORD, &|| snapshot.to_json());
                devices = Some(devices_from_nvml(&snapshot));
            }
            Err(e) => {
                tracing::debug!(error = %e, "NVML not usable; trying nvidia-smi");
                missing.push(format!("NVML: {e}"));
            }
        }
    } else if let Some(bytes) = ctx.probe.native_answer(NVML_RECORD) {
        match nvml::Snapshot::from_recorded(&bytes) {
            Ok(snapshot) => devices = Some(devices_from_nvml(&snapshot)),
            Err(e) => {
                out.warnings.push(format!(
                    "the snapshot's recorded NVML answer is unusable: {e}"
                ));
                missing.push("NVML: recorded answer unusable".to_string());
            }
        }
    } else {
        missing.push("NVML not loaded (not the live machine)".to_string());
    }
    if devices.is_none() {
        devices = run_smi(ctx, &mut out.warnings, &mut missing);
    }
    let mut devices = match devices {
        Some(mut d) => {
            fill_unified_memory(&mut d, ctx.probe);
            d
        }
        None if evidence.is_empty() => return out,
        None => {
            let found = fallback_devices(ctx, &pci_gpus, &missing, &mut out.warnings);
            // Driver nodes but nothing listed: say so (a `/dev/dxg` alone
            // may be any vendor's GPU under WSL 2, and PCI GPUs without the
            // driver are the `pci` backend's to report).
            let driver_signs: Vec<&str> = evidence
                .iter()
                .map(String::as_str)
                .filter(|e| e.starts_with("/dev/nvidia") || *e == PROC_DRIVER_DIR)
                .collect();
            if found.is_empty() && !driver_signs.is_empty() {
                out.warnings.push(format!(
                    "{} present but no GPU listed: {}",
                    driver_signs.join(", "),
                    missing.join("; ")
                ));
            }
            found
        }
    };
    join_pci(&mut devices, ctx);
    apply_visibility(&mut devices, ctx.probe);
    out.devices = devices;
    out
}

/// What shows an NVIDIA GPU may be there, each naming its evidence (empty:
/// nothing does). Device nodes are looked up in `/dev`'s listing, never opened.
pub(crate) fn presence(probe: &dyn Probe, pci_gpus: usize) -> Vec<String> {
    let mut evidence = Vec::new();
    if pci_gpus > 0 {
        evidence.push(format!("PCI: {pci_gpus} NVIDIA GPU function(s)"));
    }
    if probe.list_dir(PROC_DRIVER_DIR).is_ok() {
        evidence.push(PROC_DRIVER_DIR.to_string());
    }
    for name in probe.list_or_empty("/dev") {
        let gpu_node = name
            .strip_prefix("nvidia")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if name == "nvidiactl" || gpu_node {
            evidence.push(format!("/dev/{name}"));
        } else if name == "dxg" {
            evidence.push("/dev/dxg (WSL 2 GPU paravirtualization)".to_string());
        }
    }
    evidence
}

/// GPUs that NVML or nvidia-smi listed without a memory size use the
/// system memory (see the module doc): pool `MemTotal`, free `MemAvailable`.
/// A GPU whose datasheet entry gives it memory of its own is left unknown
/// (a discrete GPU whose tool failed to answer is not a unified one).
fn fill_unified_memory(devices: &mut [Device], probe: &dyn Probe) {
    let mut meminfo = None;
    let dedicated = |d: &Device| {
        crate::spec::match_device(d).is_some_and(|e| e.memory_bytes.is_some() && !e.unified_memory)
    };
    for d in devices
        .iter_mut()
        .filter(|d| d.parent.is_none() && d.memory_bytes.is_none() && !dedicated(d))
    {
        let m = meminfo.get_or_insert_with(|| {
            probe
                .read_text("/proc/meminfo")
                .ok()
                .map(|t| parse_meminfo(&t))
        });
        let pool = m.as_ref().and_then(|m| m.get("MemTotal"));
        d.memory_bytes = pool;
        d.memory_free_bytes = d
            .memory_free_bytes
            .or_else(|| m.as_ref().and_then(|m| m.get("MemAvailable")));
        d.shared_memory = Some(SharedMemory {
            pool_bytes: pool,
            device_limit_bytes: None,
            source: format!(
                "pool: {}; GPU limit: unknown ({} reported no memory size of the GPU's own: \
                 a unified-memory part)",
                if pool.is_some() {
                    "/proc/meminfo MemTotal"
                } else {
                    "unknown"
                },
                d.source
            ),
        });
    }
}

/// `nvidia-smi -q -x`, and `nvidia-smi topo -m` when there are two or more GPUs.
fn run_smi(
    ctx: &Context,
    warnings: &mut Vec<String>,
    missing: &mut Vec<String>,
) -> Option<Vec<Device>> {
    let out = match ctx.probe.run("nvidia-smi", &["-q", "-x"]) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_absent() {
                warnings.push(e.to_string());
            }
            missing.push(e.to_string());
            return None;
        }
    };
    if !out.success() {
        let msg = format!(
            "nvidia-smi -q -x: exit status {:?}: {}",
            out.status,
            out.stderr_line()
        );
        warnings.push(msg.clone());
        missing.push(msg);
        return None;
    }
    let parsed = smi_xml::parse(&out.stdout);
    warnings.extend(parsed.warnings);
    if parsed.devices.is_empty() {
        missing.push("nvidia-smi -q -x listed no GPU".to_string());
        return None;
    }
    let mut devices = parsed.devices;
    let gpus = devices.iter().filter(|d| d.parent.is_none()).count();
    if gpus >= 2 {
        match ctx.probe.run("nvidia-smi", &["topo", "-m"]) {
            Ok(o) if o.success() => {
                let topo = smi_topo::parse_matrix(&o.stdout_text());
                warnings.extend(
                    topo.warnings
                        .iter()
                        .map(|w| format!("nvidia-smi topo -m: {w}")),
                );
                apply_topology(&mut devices, &topo.gpus);
            }
            Ok(o) => warnings.push(format!(
                "nvidia-smi topo -m: exit status {:?}: {}",
                o.status,
                o.stderr_line()
            )),
            Err(e) => warnings.push(e.to_string()),
        }
    }
    Some(devices)
}

/// Links and NUMA affinity from `topo -m`, matched to devices by nvidia-smi index.
fn apply_topology(devices: &mut [Device], gpus: &[smi_topo::TopoGpu]) {
    let id_of_index: BTreeMap<u32, String> = devices
        .iter()
        .filter(|d| d.parent.is_none())
        .filter_map(|d| Some((d.index?, d.id.clone())))
        .collect();
    for g in gpus {
        let Some(dev) = devices
            .iter_mut()
            .find(|d| d.parent.is_none() && d.index == Some(g.index))
        else {
            continue;
        };
        if dev.numa_node.is_none() {
            dev.numa_node = g.numa_affinity;
        }
        if let Some(cpus) = &g.cpu_affinity {
            dev.extra.insert("cpu_affinity".to_string(), cpus.clone());
        }
        for link in &g.links {
            let peer = link
                .peer
                .strip_prefix("gpu")
                .and_then(|i| i.parse::<u32>().ok())
                .and_then(|i| id_of_index.get(&i).cloned())
                .unwrap_or_else(|| link.peer.clone());
            let known = dev
                .links
                .iter()
                .any(|l| l.peer == peer && l.kind == link.kind);
            if !known {
                dev.links.push(DeviceLink {
                    peer,
                    ..link.clone()
                });
            }
        }
    }
}

/// Devices when neither NVML nor nvidia-smi answered: the NVIDIA GPUs of the
/// PCI scan bound to the `nvidia` driver, plus any GPU the driver lists in
/// procfs, each marked with what could not be asked. GPUs bound to another
/// driver (or none) are left to the `pci` backend, which says why.
fn fallback_devices(
    ctx: &Context,
    pci_gpus: &[&PciDevice],
    missing: &[String],
    warnings: &mut Vec<String>,
) -> Vec<Device> {
    let mut infos: BTreeMap<PciAddress, procfs::GpuInformation> = BTreeMap::new();
    for name in ctx.probe.list_or_empty(PROC_GPUS_DIR) {
        let path = join(&join(PROC_GPUS_DIR, &name), "information");
        let Ok(text) = ctx.probe.read_text(&path) else {
            continue;
        };
        let info = procfs::parse_information(&text);
        let addr = info
            .bus_location
            .or_else(|| name.parse::<PciAddress>().ok());
        match addr {
            Some(a) => {
                infos.insert(a, info);
            }
            None => warnings.push(format!("{path}: no bus location")),
        }
    }
    let driver_version = ctx
        .probe
        .read_text(PROC_VERSION)
        .ok()
        .and_then(|t| procfs::parse_version(&t));
    let mut addrs: Vec<PciAddress> = pci_gpus
        .iter()
        .filter(|p| p.driver.as_deref() == Some("nvidia"))
        .map(|p| p.address)
        .chain(infos.keys().copied())
        .collect();
    addrs.sort();
    addrs.dedup();
    let missing_text = if missing.is_empty() {
        "nvidia-smi not found and NVML not loadable".to_string()
    } else {
        missing.join("; ")
    };
    addrs
        .into_iter()
        .enumerate()
        .map(|(i, addr)| {
            let info = infos.get(&addr);
            let pci = pci_gpus.iter().find(|p| p.address == addr);
            let name = info
                .and_then(|i| i.model.clone())
                .or_else(|| {
                    pci.and_then(|p| known_device(p.vendor_id, p.device_id))
                        .map(|k| k.name.to_string())
                })
                .unwrap_or_else(|| match pci {
                    Some(p) => format!("NVIDIA GPU {:04x}", p.device_id),
                    None => "NVIDIA GPU".to_string(),
                });
            let source = if info.is_some() {
                "nvidia-procfs"
            } else {
                "nvidia"
            };
            let mut d = Device::new(format!("pci:{addr}"), name, VENDOR, Family::Gpu, source);
            d.pci_address = Some(addr);
            d.index = Some(i as u32);
            d.driver_version.clone_from(&driver_version);
            if let Some(info) = info {
                d.uuid.clone_from(&info.uuid);
                d.firmware_version.clone_from(&info.video_bios);
                if let Some(irq) = &info.irq {
                    d.extra.insert("irq".to_string(), irq.clone());
                }
                if let Some(minor) = info.device_minor {
                    d.extra
                        .insert("minor_number".to_string(), minor.to_string());
                }
                if info.excluded == Some(true) {
                    d.available = false;
                    d.unavailable_reason = Some("excluded by the NVIDIA driver".to_string());
                }
            }
            d.extra.insert("missing".to_string(), missing_text.clone());
            d
        })
        .collect()
}

/// Join each device (and MIG instance, through its parent) to its PCI
/// function in the shared scan: NUMA node, driver and the PCI identity
/// (vendor tools only know the link generation; sysfs knows the rest).
fn join_pci(devices: &mut [Device], ctx: &Context) {
    let scan = ctx.pci();
    let parents: BTreeMap<String, PciAddress> = devices
        .iter()
        .filter_map(|d| Some((d.id.clone(), d.pci_address?)))
        .collect();
    for d in devices.iter_mut() {
        let addr = d
            .pci_address
            .or_else(|| d.parent.as_ref().and_then(|p| parents.get(p).copied()));
        let Some(p) = addr.and_then(|a| scan.by_address(a)) else {
            continue;
        };
        if p.numa_node.is_some() {
            d.numa_node = p.numa_node;
        }
        if d.driver.is_none() {
            d.driver.clone_from(&p.driver);
        }
        let mut info = p.info();
        if let Some(tool) = d.pci.take() {
            let link = info.link.get_or_insert_with(PcieLink::default);
            let tl = tool.link.unwrap_or_default();
            link.current_speed_gts = link.current_speed_gts.or(tl.current_speed_gts);
            link.current_width = link.current_width.or(tl.current_width);
            link.max_speed_gts = link.max_speed_gts.or(tl.max_speed_gts);
            link.max_width = link.max_width.or(tl.max_width);
            if *link == PcieLink::default() {
                info.link = None;
            }
        }
        d.pci = Some(info);
    }
}

// ---------------------------------------------------------------------------
// Visibility (CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES)

/// One entry of a visible-devices list.
#[derive(Clone, Debug, PartialEq)]
enum VisibleEntry {
    /// A GPU index (nvidia-smi / NVML order, which is PCI bus order).
    Index(u32),
    /// `GPU:MIG` indices (container toolkit spelling).
    MigIndex(u32, u32),
    /// A UUID or UUID prefix (`GPU-…`, `MIG-…`, or bare hex).
    Uuid(String),
}

/// What a visible-devices variable allows.
#[derive(Clone, Debug, PartialEq)]
enum Visibility {
    /// Every device.
    All,
    /// No device.
    Nothing,
    /// Only these.
    Only(Vec<VisibleEntry>),
}

/// Parse `CUDA_VISIBLE_DEVICES`. Unset: no filter (`None`). Empty: nothing.
/// Entries are indices or UUIDs; like CUDA, the list stops at the first
/// entry that is not valid (so `-1` hides everything after it).
fn parse_cuda_visible(value: Option<&str>) -> Option<Visibility> {
    let v = value?.trim();
    if v.is_empty() {
        return Some(Visibility::Nothing);
    }
    let mut entries = Vec::new();
    for part in v.split(',').map(str::trim) {
        match parse_entry(part) {
            Some(e) => entries.push(e),
            None => break,
        }
    }
    Some(Visibility::Only(entries))
}

/// Parse `NVIDIA_VISIBLE_DEVICES` (NVIDIA Container Toolkit semantics):
/// unset, empty or `void` mean the runtime did nothing (no filter here),
/// `all` every GPU, `none` no GPU, else a list of indices, `GPU:MIG`
/// indices or UUIDs.
fn parse_nvidia_visible(value: Option<&str>) -> Option<Visibility> {
    let v = value?.trim();
    match v {
        "" | "void" => None,
        "all" => Some(Visibility::All),
        "none" => Some(Visibility::Nothing),
        _ => Some(Visibility::Only(
            v.split(',')
                .map(str::trim)
                .filter_map(parse_entry)
                .collect(),
        )),
    }
}

fn parse_entry(part: &str) -> Option<VisibleEntry> {
    if part.is_empty() {
        return None;
    }
    if let Ok(i) = part.parse::<u32>() {
        return Some(VisibleEntry::Index(i));
    }
    if let Some((g, m)) = part.split_once(':') {
        if let (Ok(g), Ok(m)) = (g.parse::<u32>(), m.parse::<u32>()) {
            return Some(VisibleEntry::MigIndex(g, m));
        }
    }
    let lower = part.to_ascii_lowercase();
    let hexish = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_hexdigit())
            && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
    };
    if lower.starts_with("gpu-") || lower.starts_with("mig-") || hexish(&lower) {
        return Some(VisibleEntry::Uuid(lower));
    }
    None
}

/// Whether a UUID (`GPU-…`/`MIG-…`) matches an entry that may be a prefix
/// or omit the `GPU-`/`MIG-` prefix.
fn uuid_matches(uuid: &str, entry: &str) -> bool {
    let u = uuid.to_ascii_lowercase();
    let bare = u
        .strip_prefix("gpu-")
        .or_else(|| u.strip_prefix("mig-"))
        .unwrap_or(&u);
    u.starts_with(entry) || bare.starts_with(entry)
}

fn entry_selects(entry: &VisibleEntry, d: &Device, parent: Option<&Device>) -> bool {
    match entry {
        VisibleEntry::Index(i) => parent.is_none() && d.index == Some(*i),
        VisibleEntry::MigIndex(g, m) => {
            parent.is_some_and(|p| p.index == Some(*g)) && d.index == Some(*m)
        }
        VisibleEntry::Uuid(e) => {
            if d.uuid.as_deref().is_some_and(|u| uuid_matches(u, e)) {
                return true;
            }
            // Legacy MIG spelling: MIG-GPU-<parent uuid>/<gi>/<ci>.
            let legacy = parent.zip(e.strip_prefix("mig-").and_then(|r| r.split_once('/')));
            let Some((p, (puuid, ids))) = legacy else {
                return false;
            };
            if !p
                .uuid
                .as_deref()
                .is_some_and(|u| u.eq_ignore_ascii_case(puuid))
            {
                return false;
            }
            let gi = d.extra.get("gpu_instance_id").map(String::as_str);
            let ci = d.extra.get("compute_instance_id").map(String::as_str);
            let mut it = ids.split('/');
            it.next() == gi && it.next().is_none_or(|c| Some(c) == ci)
        }
    }
}

fn visible(vis: &Visibility, d: &Device, parent: Option<&Device>) -> bool {
    match vis {
        Visibility::All => true,
        Visibility::Nothing => false,
        Visibility::Only(entries) => {
            entries.iter().any(|e| entry_selects(e, d, parent))
                || parent.is_some_and(|p| entries.iter().any(|e| entry_selects(e, p, None)))
        }
    }
}

/// Mark devices hidden by the visible-devices variables as unavailable.
///
/// `NVIDIA_VISIBLE_DEVICES` (the container runtime's selection) counts GPUs
/// as the driver does, the numbering nvidia-smi and NVML show.
/// `CUDA_VISIBLE_DEVICES` counts only the GPUs the process can see: inside a
/// container that the runtime gave GPUs 2 and 3, `CUDA_VISIBLE_DEVICES=0`
/// means GPU 2. So its indices are matched against the GPUs left visible by
/// the first variable, renumbered from 0 in index order; UUIDs match as they are.
fn apply_visibility(devices: &mut [Device], probe: &dyn Probe) {
    hide_by(
        devices,
        "NVIDIA_VISIBLE_DEVICES",
        parse_nvidia_visible(probe.env("NVIDIA_VISIBLE_DEVICES").as_deref()),
    );
    let Some(cuda) = parse_cuda_visible(probe.env("CUDA_VISIBLE_DEVICES").as_deref()) else {
        return;
    };
    let mut order: Vec<(u32, usize)> = devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.parent.is_none() && d.available)
        .filter_map(|(i, d)| Some((d.index?, i)))
        .collect();
    order.sort_unstable();
    let mut renumbered: Vec<Device> = devices.to_vec();
    for d in &mut renumbered {
        if d.parent.is_none() {
            d.index = None;
        }
    }
    for (k, &(_, i)) in order.iter().enumerate() {
        renumbered[i].index = Some(k as u32);
    }
    let keep: Vec<bool> = renumbered
        .iter()
        .map(|d| {
            let parent = d
                .parent
                .as_ref()
                .and_then(|p| renumbered.iter().find(|x| &x.id == p));
            visible(&cuda, d, parent)
        })
        .collect();
    for (d, keep) in devices.iter_mut().zip(keep) {
        if !keep && d.available {
            d.available = false;
            d.unavailable_reason = Some("hidden by CUDA_VISIBLE_DEVICES".to_string());
        }
    }
}

/// Mark the devices `rule` does not select as hidden by `var`.
fn hide_by(devices: &mut [Device], var: &str, rule: Option<Visibility>) {
    let Some(rule) = rule else { return };
    let snapshot: Vec<Device> = devices.to_vec();
    for d in devices.iter_mut() {
        let parent = d
            .parent
            .as_ref()
            .and_then(|p| snapshot.iter().find(|x| &x.id == p));
        if !visible(&rule, d, parent) {
            d.available = false;
            d.unavailable_reason = Some(format!("hidden by {var}"));
        }
    }
}

// ---------------------------------------------------------------------------
// NVML snapshot → telemetry

pub(crate) use nvml::{EventWatcher as NvmlEventWatcher, NvmlEvent};

/// NVML library names tried on the live machine.
pub(crate) fn nvml_default_libraries() -> &'static [&'static str] {
    nvml::DEFAULT_LIBRARIES
}

/// Dynamic values of every GPU NVML reports, with the ids detection gives
/// them. One NVML session; an error when NVML cannot be loaded or started.
pub(crate) fn nvml_samples(
    libraries: &[&str],
) -> Result<Vec<crate::telemetry::DeviceSample>, String> {
    let s = nvml::query(libraries).map_err(|e| e.to_string())?;
    Ok(s.gpus
        .iter()
        .enumerate()
        .map(|(pos, g)| nvml_sample(g, pos))
        .collect())
}

/// The samples of an NVML answer a snapshot recorded (`serve`/`watch
/// --from`): the values read when it was recorded.
pub(crate) fn nvml_samples_recorded(
    bytes: &[u8],
) -> Result<Vec<crate::telemetry::DeviceSample>, String> {
    let s = nvml::Snapshot::from_recorded(bytes)?;
    Ok(s.gpus
        .iter()
        .enumerate()
        .map(|(pos, g)| nvml_sample(g, pos))
        .collect())
}

/// One GPU's NVML answer as a telemetry sample (pure).
fn nvml_sample(g: &nvml::GpuInfo, pos: usize) -> crate::telemetry::DeviceSample {
    let index = g.index.unwrap_or(pos as u32);
    let id = gpu_id(g.pci_address, g.uuid.as_deref(), u64::from(index));
    let mut s = crate::telemetry::DeviceSample::new(id, "nvml");
    let dy = &g.dynamic;
    s.utilization_ratio = dy.utilization_gpu_percent.map(|p| f64::from(p) / 100.0);
    s.memory_utilization_ratio = dy.utilization_memory_percent.map(|p| f64::from(p) / 100.0);
    s.memory_total_bytes = g.memory_total;
    s.memory_free_bytes = g.memory_free;
    s.memory_used_bytes = g.memory_used;
    if let Some(t) = g.temperature {
        s.temperatures_celsius
            .insert("gpu".to_string(), f64::from(t));
    }
    s.power_watts = dy.power_usage_mw.map(|mw| f64::from(mw) / 1000.0);
    s.power_limit_watts = g.power_limit_mw.map(|mw| f64::from(mw) / 1000.0);
    s.energy_joules = dy.energy_mj.map(|mj| mj as f64 / 1000.0);
    for (name, mhz) in [
        ("graphics", dy.clock_graphics_mhz),
        ("sm", dy.clock_sm_mhz),
        ("memory", dy.clock_memory_mhz),
    ] {
        if let Some(m) = mhz {
            s.clocks_hertz.insert(name.to_string(), f64::from(m) * 1e6);
        }
    }
    s.ecc_corrected_total = dy.ecc_corrected_volatile;
    s.ecc_uncorrected_total = g.ecc_uncorrected_volatile;
    s.throttle_reasons = dy.clock_event_reasons.map(nvml::clock_event_reason_names);
    s.pcie_link_speed_gts = g.pcie_gen_current.and_then(gen_to_gts);
    s.pcie_link_width = g.pcie_width_current.filter(|&w| w > 0);
    s
}

// ---------------------------------------------------------------------------
// NVML snapshot → devices

/// Devices from what NVML answered.
fn devices_from_nvml(s: &nvml::Snapshot) -> Vec<Device> {
    let mut out = Vec::new();
    let gpu_ids: BTreeMap<PciAddress, String> = s
        .gpus
        .iter()
        .filter_map(|g| g.pci_address.map(|a| (a, format!("pci:{a}"))))
        .collect();
    for (pos, g) in s.gpus.iter().enumerate() {
        let index = g.index.unwrap_or(pos as u32);
        let id = gpu_id(g.pci_address, g.uuid.as_deref(), u64::from(index));
        let mut d = Device::new(
            id.clone(),
            g.name.clone().unwrap_or_else(|| "NVIDIA GPU".to_string()),
            VENDOR,
            Family::Gpu,
            "nvml",
        );
        d.pci_address = g.pci_address;
        d.index = Some(index);
        d.uuid.clone_from(&g.uuid);
        d.serial.clone_from(&g.serial);
        d.memory_bytes = g.memory_total;
        d.memory_free_bytes = g.memory_free;
        d.compute_capability = g.compute_capability.map(|(a, b)| format!("{a}.{b}"));
        d.driver_version.clone_from(&s.driver_version);
        d.firmware_version.clone_from(&g.vbios);
        d.architecture.clone_from(&g.architecture);
        d.power_limit_watts = g.power_limit_mw.map(|mw| f64::from(mw) / 1000.0);
        d.temperature_celsius = g.temperature.map(f64::from);
        d.ecc_enabled = g.ecc_enabled;
        d.ecc_uncorrected_errors = g.ecc_uncorrected_volatile;
        let link = PcieLink {
            current_speed_gts: g.pcie_gen_current.and_then(gen_to_gts),
            current_width: g.pcie_width_current.filter(|&w| w > 0),
            max_speed_gts: g.pcie_gen_max.and_then(gen_to_gts),
            max_width: g.pcie_width_max.filter(|&w| w > 0),
        };
        d.pci = tool_pci_info(g.pci_device_id, g.pci_subsystem_id, link);
        if let Some(u) = g.memory_used {
            d.extra
                .insert("memory_used_bytes".to_string(), u.to_string());
        }
        if let Some(r) = g.memory_reserved {
            d.extra
                .insert(MEMORY_RESERVED_KEY.to_string(), r.to_string());
        }
        d.utilization_percent = g.dynamic.utilization_gpu_percent.map(f64::from);
        d.power_draw_watts = g.dynamic.power_usage_mw.map(|mw| f64::from(mw) / 1000.0);
        if let Some(v) = &s.cuda_driver_version {
            d.extra.insert("cuda_driver_version".to_string(), v.clone());
        }
        if let Some(p) = g.persistence_mode {
            d.extra
                .insert("persistence_mode".to_string(), enabled(p).to_string());
        }
        if let Some(m) = &g.compute_mode {
            d.extra.insert("compute_mode".to_string(), m.clone());
        }
        if let Some(m) = g.mig_mode {
            d.extra
                .insert("mig_mode".to_string(), enabled(m).to_string());
        }
        if let Some(m) = g.minor_number {
            d.extra.insert("minor_number".to_string(), m.to_string());
        }
        let mut links: BTreeMap<(String, &str), u32> = BTreeMap::new();
        for l in &g.nvlinks {
            let Some(remote) = l.remote else { continue };
            let peer = gpu_ids
                .get(&remote)
                .cloned()
                .unwrap_or_else(|| format!("pci:{remote}"));
            let kind = if l.remote_is_switch {
                "nvswitch"
            } else {
                "nvlink"
            };
            *links.entry((peer, kind)).or_default() += 1;
        }
        d.links = links
            .into_iter()
            .map(|((peer, kind), count)| DeviceLink {
                peer,
                kind: kind.to_string(),
                count: Some(count),
                // NVML's NVLink version numbering changed between driver
                // releases, so per-link bandwidth is left unknown.
                bandwidth_bytes_per_s: None,
            })
            .collect();
        out.push(d);
        let parent = out.len() - 1;
        for m in &g.migs {
            let mut md = mig_device(
                &out[parent],
                m.gpu_instance_id,
                m.compute_instance_id,
                "nvml",
            );
            if let Some(n) = &m.name {
                md.partition = mig_profile_from_name(n);
                md.name.clone_from(n);
            }
            md.index = m.index;
            md.uuid.clone_from(&m.uuid);
            md.memory_bytes = m.memory_total;
            md.memory_free_bytes = m.memory_free;
            md.compute_units = m.multiprocessor_count;
            out.push(md);
        }
    }
    out
}

/// `On`/`Off` spelling shared by NVML and nvidia-smi sources.
fn enabled(b: bool) -> &'static str {
    if b { "Enabled" } else { "Disabled" }
}

/// The profile at the end of a MIG device name (`NVIDIA A100-SXM4-40GB MIG 3g.20gb` → `3g.20gb`).
pub(crate) fn mig_profile_from_name(name: &str) -> Option<String> {
    let (_, tail) = name.rsplit_once(" MIG ")?;
    let p = tail.trim();
    (p.contains('g') && !p.contains(' ') && !p.is_empty()).then(|| p.to_string())
}

/// A MIG instance of `parent`, identified by its GPU and compute instance ids.
pub(crate) fn mig_device(
    parent: &Device,
    gi: Option<u32>,
    ci: Option<u32>,
    source: &str,
) -> Device {
    let suffix = match (gi, ci) {
        (Some(g), Some(c)) => format!("mig-{g}-{c}"),
        (Some(g), None) => format!("mig-{g}"),
        _ => "mig".to_string(),
    };
    let mut d = Device::new(
        format!("{}/{suffix}", parent.id),
        format!("{} MIG instance", parent.name),
        VENDOR,
        Family::Gpu,
        source,
    );
    d.parent = Some(parent.id.clone());
    d.driver_version.clone_from(&parent.driver_version);
    d.compute_capability.clone_from(&parent.compute_capability);
    d.architecture.clone_from(&parent.architecture);
    d.ecc_enabled = parent.ecc_enabled;
    if let Some(g) = gi {
        d.extra.insert("gpu_instance_id".to_string(), g.to_string());
    }
    if let Some(c) = ci {
        d.extra
            .insert("compute_instance_id".to_string(), c.to_string());
    }
    d
}

// ---------------------------------------------------------------------------
// Shared value helpers for the nvidia-smi parsers

/// A GPU's device id: `pci:<address>` when known, else `nvidia:<uuid>`, else
/// `nvidia:gpu<index>` (the rule of every NVIDIA source, so that NVML and
/// each nvidia-smi format name the same GPU alike).
pub(crate) fn gpu_id(addr: Option<PciAddress>, uuid: Option<&str>, index: u64) -> String {
    match (addr, uuid) {
        (Some(a), _) => format!("pci:{a}"),
        (None, Some(u)) => format!("nvidia:{u}"),
        (None, None) => format!("nvidia:gpu{index}"),
    }
}

/// Order GPUs by id, each followed by its MIG devices in index order.
pub(crate) fn sort_gpus_then_migs(devices: &mut [Device]) {
    devices.sort_by(|a, b| {
        let key = |d: &Device| d.parent.clone().unwrap_or_else(|| d.id.clone());
        (key(a), a.parent.is_some(), a.index).cmp(&(key(b), b.parent.is_some(), b.index))
    });
}

/// The PCI address a tool printed for GPU number `pos`, a warning naming
/// `tool` when it does not parse.
pub(crate) fn tool_pci_address(
    text: Option<&str>,
    tool: &str,
    pos: usize,
    warnings: &mut Vec<String>,
) -> Option<PciAddress> {
    match text?.parse::<PciAddress>() {
        Ok(a) => Some(a),
        Err(e) => {
            warnings.push(format!("{tool}: GPU {pos}: {e}"));
            None
        }
    }
}

/// A tool value, or `None` for the placeholders nvidia-smi prints for
/// unknown values (`N/A`, `[N/A]`, `[Not Supported]`, `Unknown Error`, …).
pub(crate) fn known(v: &str) -> Option<&str> {
    let t = v.trim();
    if t.is_empty() || (t.starts_with('[') && t.ends_with(']')) {
        return None;
    }
    const UNKNOWN: &[&str] = &[
        "N/A",
        "Not Supported",
        "Unknown Error",
        "Insufficient Permissions",
        "Requested functionality has been deprecated",
        "REDACTED",
        "None",
    ];
    (!UNKNOWN.iter().any(|u| t.eq_ignore_ascii_case(u))).then_some(t)
}

/// Split `"81559 MiB"` into its number and unit (the unit may be absent).
fn number_and_unit(v: &str) -> Option<(f64, &str)> {
    let t = known(v)?;
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let n: f64 = t[..end].parse().ok()?;
    n.is_finite().then_some((n, t[end..].trim()))
}

/// Memory as bytes from `"81559 MiB"` (or a bare number in `default_unit`,
/// itself a unit spelling such as `"MiB"` from a CSV header). nvidia-smi's
/// units are binary ([`crate::model::units`]).
pub(crate) fn parse_memory(v: &str, default_unit: &str) -> Option<u64> {
    parse_size(
        known(v)?,
        SizeUnit::from_label(default_unit),
        Labels::Binary,
    )
}

/// `raw` read with `parse`; a value the tool printed (not `N/A` or another
/// [`known`] placeholder) that does not read (`-81559 MiB`, `12x C`) gives a
/// warning naming `what` instead of a silent null. Shared by the `-q`, `-q -x`
/// and CSV readers.
pub(crate) fn read_checked<T>(
    raw: Option<&str>,
    parse: impl FnOnce(&str) -> Option<T>,
    what: impl FnOnce() -> String,
    warnings: &mut Vec<String>,
) -> Option<T> {
    let v = raw?;
    known(v)?;
    let r = parse(v);
    if r.is_none() {
        warnings.push(format!(
            "{} {} is not understood; left null",
            what(),
            crate::model::excerpt(v.trim(), crate::model::EXCERPT_CHARS)
        ));
    }
    r
}

/// A number with an expected unit (`"400.00 W"`, `"36 C"`); a bare number is accepted.
pub(crate) fn parse_with_unit(v: &str, units: &[&str]) -> Option<f64> {
    let (n, unit) = number_and_unit(v)?;
    (unit.is_empty() || units.contains(&unit)).then_some(n)
}

/// An unsigned integer, allowing an `x` suffix (`16x`) or `0x` hex.
pub(crate) fn parse_uint(v: &str) -> Option<u32> {
    let t = known(v)?;
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok();
    }
    t.trim_end_matches(['x', 'X']).trim().parse().ok()
}

/// `Enabled` / `Disabled` (also `Yes`/`No`, `On`/`Off`).
pub(crate) fn parse_enabled(v: &str) -> Option<bool> {
    match known(v)?.to_ascii_lowercase().as_str() {
        "enabled" | "yes" | "on" | "true" => Some(true),
        "disabled" | "no" | "off" | "false" => Some(false),
        _ => None,
    }
}

/// Per-lane rate in GT/s of a PCIe generation (PCI-SIG base specifications).
pub(crate) fn gen_to_gts(generation: u32) -> Option<f64> {
    match generation {
        1 => Some(2.5),
        2 => Some(5.0),
        3 => Some(8.0),
        4 => Some(16.0),
        5 => Some(32.0),
        6 => Some(64.0),
        _ => None,
    }
}

/// PCI identity from a vendor tool: `pci_device_id` is `0xDDDDVVVV`
/// (device id high, vendor id low), the subsystem id likewise. `None`
/// without a device id (the `pci` backend's sysfs view fills it then).
pub(crate) fn tool_pci_info(
    device_id: Option<u32>,
    subsystem: Option<u32>,
    link: PcieLink,
) -> Option<PciInfo> {
    // `0xDDDDVVVV`: the low half must be NVIDIA's vendor id; anything else
    // is a masked or redacted capture (`000000DE`), not an id.
    let dev = device_id.filter(|&d| d & 0xffff == u32::from(NVIDIA_VENDOR_ID))?;
    let has_link = link != PcieLink::default();
    let hex4 = |v: u32| format!("{:04x}", v & 0xffff);
    Some(PciInfo {
        vendor_id: hex4(dev),
        device_id: hex4(dev >> 16),
        subsystem_vendor_id: subsystem.filter(|&s| s != 0).map(hex4),
        subsystem_device_id: subsystem.filter(|&s| s != 0).map(|s| hex4(s >> 16)),
        class: None,
        revision: None,
        link: has_link.then_some(link),
    })
}

#[cfg(test)]
mod tests;
