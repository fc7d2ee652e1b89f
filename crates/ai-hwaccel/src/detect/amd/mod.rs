//! The `amd` backend: AMD GPUs from amdgpu's sysfs files, the KFD topology
//! (what ROCm enumerates: gfx target, compute units, partitions, xGMI links)
//! and, when installed, one vendor tool run (`amd-smi static --json`, else
//! `rocm-smi ... --json`) for marketing names, driver and firmware versions.
//!
//! Hygon DCUs (PCI vendor 0x1d94, a ROCm fork: same KFD, `rocm-smi` forked
//! as hyhal's `hy-smi`) are read the same way and reported with vendor
//! `hygon`; their tool is `hy-smi` (then DTK's `rocm-smi`), which also runs
//! when the PCI scan and KFD show nothing, since a container may be given
//! `/opt/hyhal` without them.
//!
//! Facts are joined by PCI address. On MI300-class parts split into compute
//! partitions (CPX, …) the physical GPU is listed with `partition` set and
//! `available = false`, and each partition (one KFD node, one HIP device) is
//! listed as its own device whose `parent` is the GPU. `HIP_VISIBLE_DEVICES`,
//! `ROCR_VISIBLE_DEVICES` and `CUDA_VISIBLE_DEVICES` hide devices the way the
//! ROCm runtime does.

pub mod amd_smi;
pub mod kfd;
pub mod rocm_smi;
pub mod rocminfo;
pub mod sysfs;

use std::collections::BTreeMap;

use crate::model::{
    Device, DeviceLink, Family, Labels, PciAddress, SharedMemory, SizeUnit, parse_size,
};
use crate::probe::{Probe, ProbeError, ProbeExt};

use super::pci_ids::{HYGON_VENDOR_ID, known_device};
use super::{BackendOutput, Context};
use kfd::KfdNode;
use sysfs::AmdgpuCard;

/// AMD's PCI vendor id.
pub const AMD_VENDOR_ID: u16 = 0x1002;

/// One GPU as a vendor tool reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolGpu {
    /// Marketing name, when the tool gave one (the device's name falls back to `AMD GPU`).
    pub name: Option<String>,
    /// Everything else, in device form.
    pub device: Device,
}

fn hex_id(t: &str) -> Option<u16> {
    let h = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    u16::from_str_radix(h, 16).ok()
}

/// A marketing name from a tool's name and/or the PCI device id: the
/// embedded PCI table's name when the device is in it, else the tool's name
/// (pci.ids style `Codename [Marketing name]` becomes the bracketed part),
/// with `AMD ` in front when it lacks the vendor. When the table's name lists
/// several products for a shared id (`RX 7900 XT/7900 XTX`) and the tool
/// names one without a `/` (`Radeon RX 7900 XT`), the tool's name is kept.
pub fn amd_name(tool_name: Option<&str>, device_id: Option<u16>) -> Option<String> {
    if let Some(k) = device_id.and_then(|d| known_device(AMD_VENDOR_ID, d)) {
        let specific_tool_name = tool_name
            .map(str::trim)
            .is_some_and(|t| !t.is_empty() && !t.contains(['/', '[']) && hex_id(t).is_none());
        if !(k.name.contains('/') && specific_tool_name) {
            return Some(k.name.to_string());
        }
    }
    let t = tool_name.map(str::trim).filter(|s| !s.is_empty())?;
    let t = match (t.rfind('['), t.ends_with(']')) {
        (Some(open), true) if open + 1 < t.len() - 1 => t[open + 1..t.len() - 1].trim(),
        _ => t,
    };
    Some(if t.starts_with("AMD") {
        t.to_string()
    } else {
        format!("AMD {t}")
    })
}

/// A size as AMD tools print it (`64289 MB`, `192 GB`, `32768.00 MiB`,
/// `512 KB`; a bare number is bytes). AMD tools print binary units with
/// decimal labels (`16368 MB` on a 16 GiB board), so `MB` is read as MiB
/// ([`crate::model::units`]). Zero is `None` (no memory reported).
pub fn parse_size_bytes(s: &str) -> Option<u64> {
    parse_size(s, Some(SizeUnit::B), Labels::Binary).filter(|&b| b > 0)
}

/// Apply `ROCR_VISIBLE_DEVICES`, then `HIP_VISIBLE_DEVICES` (or, when it is
/// unset, `CUDA_VISIBLE_DEVICES`, which HIP also reads), the order the ROCm
/// stack applies them, to `n` devices in enumeration order.
/// `uuids[i]` is device i's ROCm UUID (`GPU-<16 hex>`), matched
/// case-insensitively. A list is read up to its first invalid entry (as the
/// runtimes do); an empty value hides everything. Returns, per device, the
/// `VAR=value` that hid it, or `None` when visible.
pub fn apply_visibility(
    uuids: &[Option<String>],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Option<String>> {
    let mut visible: Vec<usize> = (0..uuids.len()).collect();
    let mut hidden: Vec<Option<String>> = vec![None; uuids.len()];
    let hip_var = if env("HIP_VISIBLE_DEVICES").is_some() {
        "HIP_VISIBLE_DEVICES"
    } else {
        "CUDA_VISIBLE_DEVICES"
    };
    for var in ["ROCR_VISIBLE_DEVICES", hip_var] {
        let Some(spec) = env(var) else { continue };
        let mut keep: Vec<usize> = Vec::new();
        for tok in spec.split(',').map(str::trim) {
            let pick = if let Ok(i) = tok.parse::<usize>() {
                visible.get(i).copied()
            } else if tok.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("gpu-")) {
                visible.iter().copied().find(|&i| {
                    uuids[i]
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(tok))
                })
            } else {
                None
            };
            match pick {
                Some(i) if !keep.contains(&i) => keep.push(i),
                Some(_) => {}
                None => break,
            }
        }
        for &i in &visible {
            if !keep.contains(&i) {
                hidden[i] = Some(format!("{var}={spec}"));
            }
        }
        visible = keep;
    }
    hidden
}

/// A tool output parser: GPUs and warnings.
type ToolParser = fn(&[u8]) -> (Vec<ToolGpu>, Vec<String>);

/// A vendor tool the backend may run: name, arguments, parser.
type ToolRun = (&'static str, &'static [&'static str], ToolParser);

const AMD_SMI: ToolRun = ("amd-smi", &["static", "--json"], amd_smi::parse_gpus);
const ROCM_SMI: ToolRun = ("rocm-smi", rocm_smi::ARGS, rocm_smi::parse_gpus);
const HY_SMI: ToolRun = ("hy-smi", rocm_smi::HY_SMI_ARGS, rocm_smi::parse_gpus);

/// The tools to try, in order, until one is found: AMD's own first; on a
/// machine with Hygon DCUs hyhal's `hy-smi` (installed with the driver),
/// then the DTK's `rocm-smi` fork.
fn tool_order(hygon: bool) -> &'static [ToolRun] {
    if hygon {
        &[HY_SMI, ROCM_SMI]
    } else {
        &[AMD_SMI, ROCM_SMI, HY_SMI]
    }
}

/// Run the first of `tools` that is installed. Devices from `hy-smi` carry
/// its name as their source (the parser is rocm-smi's).
fn run_tool(probe: &dyn Probe, tools: &[ToolRun], warnings: &mut Vec<String>) -> Vec<ToolGpu> {
    for &(tool, args, parse) in tools {
        match probe.run(tool, args) {
            Ok(out) if out.success() => {
                let (mut gpus, w) = parse(&out.stdout);
                warnings.extend(w.into_iter().map(|m| format!("{tool}: {m}")));
                if tool == HY_SMI.0 {
                    for g in &mut gpus {
                        g.device.source = tool.to_string();
                        if let Some(card) = g.device.id.strip_prefix("rocm-smi:") {
                            g.device.id = format!("{tool}:{card}");
                        }
                    }
                }
                return gpus;
            }
            Ok(out) => {
                warnings.push(format!(
                    "{tool} {} exited with {:?}: {}",
                    args.join(" "),
                    out.status,
                    out.stderr_line()
                ));
                return Vec::new();
            }
            Err(ProbeError::ToolNotFound { .. }) => continue,
            Err(e) if e.is_absent() => return Vec::new(),
            Err(e) => {
                warnings.push(e.to_string());
                return Vec::new();
            }
        }
    }
    Vec::new()
}

/// The ROCm UUID of a KFD node (`GPU-` and the 64-bit `unique_id` in hex).
fn kfd_uuid(n: &KfdNode) -> Option<String> {
    n.nonzero("unique_id").map(|u| format!("GPU-{u:016x}"))
}

/// Source tag from the mechanisms that contributed.
fn source_of(card: bool, kfd: bool, tool: Option<&str>) -> String {
    let mut parts = Vec::new();
    if card {
        parts.push("amdgpu-sysfs");
    }
    if kfd {
        parts.push("kfd");
    }
    if let Some(t) = tool {
        parts.push(t);
    }
    parts.join("+")
}

fn set_node_facts(d: &mut Device, n: &KfdNode) {
    d.compute_capability = n.gfx_target().or(d.compute_capability.take());
    d.extra.insert("kfd_node".into(), n.node.to_string());
    if let Some(g) = n.gpu_id {
        d.extra.insert("kfd_gpu_id".into(), g.to_string());
    }
    if let Some(m) = n.prop("drm_render_minor").filter(|&m| m >= 128) {
        d.extra.insert("drm_render_minor".into(), m.to_string());
    }
    if let Some(h) = n.nonzero("hive_id") {
        d.extra.insert("xgmi_hive_id".into(), format!("{h:x}"));
    }
    if let Some(c) = n.nonzero("max_engine_clk_fcompute") {
        d.extra.insert("max_engine_clock_mhz".into(), c.to_string());
    }
}

/// KFD `gfx_target_version`s of APUs, whose GPU has no memory of its own.
/// The products are the kernel's APU table
/// (torvalds/linux `Documentation/gpu/amdgpu/apu-asic-info-table.csv`:
/// Raven/Picasso/Raven2 GC 9.1.0/9.2.2, Renoir/Cezanne GC 9.3, Van Gogh
/// 10.3.1, Yellow Carp/Rembrandt 10.3.3, Raphael/Dragon Range 10.3.6,
/// Mendocino 10.3.7, Phoenix/Hawk Point 11.0.1/11.0.4, Strix Point 11.5.0),
/// plus Strix Halo (GC 11.5.1, the unified-memory APU of ROCm/rocm-systems#5596)
/// and MI300A (GC 9.4.3 with `AMD_IS_APU`); the versions are the ones
/// `kgd2kfd_probe` in `drivers/gpu/drm/amd/amdkfd/kfd_device.c` gives those
/// GC versions (90002, 90012, 100303, 100305, 100306, 110003, 110500, 110501, 90400).
pub const APU_GFX_TARGET_VERSIONS: &[u64] = &[
    90002, 90012, 100303, 100305, 100306, 110003, 110500, 110501, 90400,
];

/// Memory of an APU's GPU: VRAM is only the firmware's carve-out and GTT
/// the system memory it maps; the kernel lets KFD allocate from the larger
/// of the two (torvalds/linux 759e764f7d58, "apu_prefer_gtt"; amd-smi shows
/// the same choice since ROCm/rocm-systems#1967), so that is what the GPU
/// can use. Returns the share, its free part and the `SharedMemory`.
fn apu_memory(c: &AmdgpuCard, gfx_target_version: u64) -> (Option<u64>, Option<u64>, SharedMemory) {
    let vram = c.vram_total_bytes.unwrap_or(0);
    let gtt = c.gtt_total_bytes.unwrap_or(0);
    let (usable, free, which) = if gtt > vram {
        let free = c.gtt_used_bytes.map(|u| gtt.saturating_sub(u));
        (
            Some(gtt),
            free,
            "mem_info_gtt_total (GTT larger than the VRAM carve-out)",
        )
    } else {
        let free = c
            .vram_total_bytes
            .zip(c.vram_used_bytes)
            .map(|(t, u)| t.saturating_sub(u));
        (
            c.vram_total_bytes,
            free,
            "mem_info_vram_total (carve-out not smaller than GTT)",
        )
    };
    let shared = SharedMemory {
        pool_bytes: None,
        device_limit_bytes: usable.filter(|&u| u > 0),
        source: format!(
            "pool: unknown; GPU limit: {which}: an APU (gfx_target_version {gfx_target_version}), \
             whose GPU uses the larger of its VRAM carve-out and GTT"
        ),
    };
    (usable.filter(|&u| u > 0), free, shared)
}

/// Tool GPUs placed at PCI addresses. A tool that printed no `PCI Bus`
/// (rocm-smi and hy-smi without `--showbus`) cannot be joined card by card:
/// rocm-smi's card order is its library's, not the bus order (an 8-GPU MI60
/// server listed `GPU[0]` at `43:00.0` and `GPU[3]` at `03:00.0`,
/// ROCm/rccl deviceIdMapping README). Only a lone card on a machine whose
/// other sources know one device is placed there. Returns the tool GPUs that
/// have an address and those left without one.
pub fn place_tool_gpus(tool: &[ToolGpu], known: &[PciAddress]) -> (Vec<ToolGpu>, Vec<ToolGpu>) {
    let (mut placed, mut left): (Vec<ToolGpu>, Vec<ToolGpu>) = tool
        .iter()
        .cloned()
        .partition(|t| t.device.pci_address.is_some());
    if let ([one], [], [only]) = (known, placed.as_slice(), left.as_slice()) {
        let mut g = only.clone();
        g.device.pci_address = Some(*one);
        g.device.id = format!("pci:{one}");
        placed.push(g);
        left.clear();
    }
    (placed, left)
}

/// Whether the device at an address is a Hygon DCU: its PCI vendor, its KFD
/// node's `vendor_id`, or a tool that took it for one.
fn is_hygon_device(p: Option<&super::PciDevice>, nodes: &[&KfdNode], t: Option<&ToolGpu>) -> bool {
    p.map(|p| p.vendor_id == HYGON_VENDOR_ID)
        .or_else(|| {
            nodes
                .first()
                .and_then(|n| n.prop("vendor_id"))
                .map(|v| v == u64::from(HYGON_VENDOR_ID))
        })
        .unwrap_or(false)
        || t.is_some_and(|t| t.device.vendor == "hygon")
}

/// Build devices from the joined facts, and warnings. Pure apart from
/// nothing: every input is already read, so tests can call it on parsed
/// fixtures. Tool GPUs without an address are placed by
/// [`place_tool_gpus`]; those it cannot place are listed as their own
/// devices when no other source found any, and otherwise left out with a
/// warning (they would duplicate the devices found).
pub fn assemble(
    pci: &[&super::PciDevice],
    cards: &[AmdgpuCard],
    nodes: &[KfdNode],
    tool: &[ToolGpu],
    driver_version: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<Device>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut known: Vec<PciAddress> = pci.iter().map(|p| p.address).collect();
    known.extend(cards.iter().filter_map(|c| c.card.as_ref()?.address));
    known.extend(nodes.iter().filter_map(KfdNode::pci_address));
    known.sort();
    known.dedup();
    let (tool, unplaced) = place_tool_gpus(tool, &known);
    let tool = tool.as_slice();
    let tool_name = tool.iter().chain(&unplaced).next().map(|t| {
        t.device
            .source
            .split('+')
            .next()
            .unwrap_or_default()
            .to_string()
    });
    let mut addrs = known.clone();
    addrs.extend(tool.iter().filter_map(|t| t.device.pci_address));
    addrs.sort();
    addrs.dedup();

    // Devices in address order, and per KFD node the id of its device.
    let mut devices: Vec<Device> = Vec::new();
    let mut node_ids: BTreeMap<u64, String> = BTreeMap::new();
    for a in &addrs {
        let p = pci.iter().find(|p| p.address == *a);
        let card = cards
            .iter()
            .find(|c| c.card.as_ref().and_then(|c| c.address) == Some(*a));
        let my_nodes: Vec<&KfdNode> = nodes
            .iter()
            .filter(|n| n.pci_address() == Some(*a))
            .collect();
        let t = tool.iter().find(|t| t.device.pci_address == Some(*a));
        if card.is_none() && my_nodes.is_empty() && t.is_none() {
            continue; // only on the PCI bus: the pci backend reports it.
        }
        let pci_dev_id = p.map(|p| p.device_id).or_else(|| {
            my_nodes
                .first()
                .and_then(|n| n.prop("device_id"))
                .and_then(|d| u16::try_from(d).ok())
        });
        let hygon = is_hygon_device(p.copied(), &my_nodes, t);
        let name = if hygon {
            // Never the AMD id table: Hygon's device ids are its own.
            t.and_then(|t| t.name.clone())
                .or_else(|| {
                    card.and_then(|c| c.product_name.as_deref())
                        .map(rocm_smi::hygon_name)
                })
                .unwrap_or_else(|| match pci_dev_id {
                    Some(d) => format!("Hygon DCU [1d94:{d:04x}]"),
                    None => "Hygon DCU".to_string(),
                })
        } else {
            t.and_then(|t| t.name.clone())
                .or_else(|| {
                    card.and_then(|c| c.product_name.clone())
                        .map(|n| amd_name(Some(&n), None).unwrap_or(n))
                })
                .or_else(|| amd_name(None, pci_dev_id))
                .unwrap_or_else(|| match pci_dev_id {
                    Some(d) => format!("AMD GPU [1002:{d:04x}]"),
                    None => "AMD GPU".to_string(),
                })
        };
        let vendor = if hygon { "hygon" } else { "amd" };
        let id = format!("pci:{a}");
        let source = source_of(
            card.is_some(),
            !my_nodes.is_empty(),
            t.and(tool_name.as_deref()),
        );
        let mut d = Device::new(id.clone(), name, vendor, Family::Gpu, &source);
        d.pci_address = Some(*a);
        if let Some(p) = p {
            d.numa_node = p.numa_node;
            d.driver.clone_from(&p.driver);
            d.pci = Some(p.info());
        }
        if let Some(c) = card {
            d.memory_bytes = c.vram_total_bytes;
            d.memory_free_bytes = c
                .vram_total_bytes
                .zip(c.vram_used_bytes)
                .map(|(t, u)| t.saturating_sub(u));
            d.serial.clone_from(&c.serial_number);
            d.firmware_version.clone_from(&c.vbios_version);
            d.partition.clone_from(&c.compute_partition);
            if d.driver.is_none() {
                d.driver = c.card.as_ref().and_then(|c| c.driver.clone());
            }
            let extras = [
                (
                    "memory_clock_max_mhz",
                    c.max_mclk_mhz.map(|m| m.to_string()),
                ),
                (
                    "visible_vram_bytes",
                    c.vis_vram_total_bytes.map(|b| b.to_string()),
                ),
                ("gtt_total_bytes", c.gtt_total_bytes.map(|b| b.to_string())),
                ("unique_id", c.unique_id.clone()),
                ("product_number", c.product_number.clone()),
                ("vram_vendor", c.vram_vendor.clone()),
                ("memory_partition", c.memory_partition.clone()),
                ("drm_card", c.card.as_ref().map(|c| c.name.clone())),
                (
                    "available_compute_partitions",
                    (!c.available_compute_partitions.is_empty())
                        .then(|| c.available_compute_partitions.join(",")),
                ),
                (
                    "available_memory_partitions",
                    (!c.available_memory_partitions.is_empty())
                        .then(|| c.available_memory_partitions.join(",")),
                ),
            ];
            for (k, v) in extras {
                if let Some(v) = v {
                    d.extra.insert(k.to_string(), v);
                }
            }
        }
        if d.driver_version.is_none() {
            d.driver_version = driver_version.map(str::to_string);
        }
        let cus: u32 = my_nodes.iter().filter_map(|n| n.compute_units()).sum();
        d.compute_units = (cus > 0).then_some(cus);
        if let [n] = my_nodes.as_slice() {
            set_node_facts(&mut d, n);
            let apu = n
                .prop("gfx_target_version")
                .filter(|v| APU_GFX_TARGET_VERSIONS.contains(v));
            if let (Some(v), Some(c)) = (apu, card) {
                let (usable, free, shared) = apu_memory(c, v);
                d.memory_bytes = usable;
                d.memory_free_bytes = free;
                d.shared_memory = Some(shared);
                d.extra.insert("integrated".into(), "true".into());
            }
            if d.memory_bytes.is_none() {
                d.memory_bytes = n.mem_bytes;
            }
            d.uuid = kfd_uuid(n);
            node_ids.insert(n.node, id.clone());
        } else if let Some(n) = my_nodes.first() {
            d.compute_capability = n.gfx_target();
            if let Some(h) = n.nonzero("hive_id") {
                d.extra.insert("xgmi_hive_id".into(), format!("{h:x}"));
            }
        }
        if let Some(t) = t {
            d.fill_from(&t.device);
            if d.partition.is_none() {
                d.partition.clone_from(&t.device.partition);
            }
        }
        if my_nodes.len() > 1 {
            let mode = d.partition.clone();
            d.available = false;
            d.unavailable_reason = Some(format!(
                "split into {} compute partitions{}; each is listed as its own device",
                my_nodes.len(),
                mode.as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ));
            let parent = d.clone();
            devices.push(d);
            for (i, n) in my_nodes.iter().enumerate() {
                let idx = n.partition_index().unwrap_or(i as u32);
                let cid = format!("{id}/xcp{idx}");
                let mut c = Device::new(
                    cid.clone(),
                    parent.name.clone(),
                    parent.vendor.clone(),
                    Family::Gpu,
                    &parent.source,
                );
                // No `pci_address`: detection merges devices that share one, and
                // the partition is reached through `parent` (its PCI identity is in `pci`).
                c.extra.insert("parent_pci_address".into(), a.to_string());
                c.numa_node = parent.numa_node;
                c.driver.clone_from(&parent.driver);
                c.driver_version.clone_from(&parent.driver_version);
                c.pci.clone_from(&parent.pci);
                c.firmware_version.clone_from(&parent.firmware_version);
                c.parent = Some(id.clone());
                c.partition = mode.clone();
                c.memory_bytes = n.mem_bytes;
                c.compute_units = n.compute_units();
                c.uuid = kfd_uuid(n);
                set_node_facts(&mut c, n);
                c.extra.insert("partition_index".into(), idx.to_string());
                node_ids.insert(n.node, cid);
                devices.push(c);
            }
        } else {
            devices.push(d);
        }
    }

    // Links between GPU nodes, peers named by device id: direct io_links with
    // their own type, then p2p_links (indirect paths through the host's PCIe)
    // as `pcie`, whatever type they copied from the GPU's link to its CPU, to
    // peers without a direct link. Links to CPU nodes are left out. KFD
    // bandwidths are MB/s (10^6 bytes per second); 0 (unknown) is `None`.
    for n in nodes {
        let Some(from) = node_ids.get(&n.node) else {
            continue;
        };
        let mut links: Vec<DeviceLink> = Vec::new();
        let direct = n.io_links.iter().map(|l| (l, l.kind_name()));
        let indirect = n.p2p_links.iter().map(|l| (l, "pcie".to_string()));
        for (l, kind) in direct.chain(indirect) {
            let Some(peer) = node_ids.get(&l.node_to).filter(|p| *p != from) else {
                continue;
            };
            if links.iter().any(|x| &x.peer == peer) {
                continue;
            }
            links.push(DeviceLink {
                peer: peer.clone(),
                kind,
                count: None,
                bandwidth_bytes_per_s: l.max_bandwidth_mbs.map(|mb| mb.saturating_mul(1_000_000)),
            });
        }
        if !links.is_empty() {
            if let Some(d) = devices.iter_mut().find(|d| &d.id == from) {
                d.links = links;
            }
        }
    }

    if known.is_empty() {
        // Only the tool saw these GPUs: list them as it printed them.
        devices.extend(unplaced.into_iter().map(|t| t.device));
    } else if !unplaced.is_empty() {
        warnings.push(format!(
            "{}: {} GPU(s) printed without a PCI Bus, not matched to the {} device(s) found; their tool facts are left out",
            tool_name.as_deref().unwrap_or("tool"),
            unplaced.len(),
            known.len()
        ));
    }

    // Enumeration order the runtime uses: KFD GPU nodes in node order; without
    // KFD, the devices in address order.
    let order: Vec<usize> = if node_ids.is_empty() {
        (0..devices.len())
            .filter(|&i| devices[i].parent.is_none())
            .collect()
    } else {
        nodes
            .iter()
            .filter_map(|n| node_ids.get(&n.node))
            .filter_map(|id| devices.iter().position(|d| &d.id == id))
            .collect()
    };
    let uuids: Vec<Option<String>> = order.iter().map(|&i| devices[i].uuid.clone()).collect();
    let hidden = apply_visibility(&uuids, env);
    let mut hip = 0u32;
    for (k, &i) in order.iter().enumerate() {
        let d = &mut devices[i];
        d.index = Some(k as u32);
        match &hidden[k] {
            Some(reason) => {
                d.available = false;
                d.unavailable_reason = Some(format!("hidden by {reason}"));
            }
            None => {
                d.extra.insert("hip_device".into(), hip.to_string());
                hip += 1;
            }
        }
    }
    (devices, warnings)
}

/// The `amd` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let probe = ctx.probe;
    let scan = ctx.pci();
    let pci: Vec<&super::PciDevice> = scan
        .by_vendor(AMD_VENDOR_ID)
        .chain(scan.by_vendor(HYGON_VENDOR_ID))
        .filter(|d| d.family == Family::Gpu)
        .collect();
    let kfd_present = probe.list_dir("/sys/class/kfd").is_ok();
    let mut nodes = Vec::new();
    let mut cards = Vec::new();
    if !pci.is_empty() || kfd_present {
        let topo = kfd::read_topology(probe, kfd::TOPOLOGY_DIR);
        out.warnings.extend(topo.warnings);
        nodes = topo.gpus;
        let is_amd = |c: &sysfs::DrmCard| {
            c.driver.as_deref() == Some("amdgpu")
                || c.address
                    .is_some_and(|a| pci.iter().any(|p| p.address == a))
        };
        cards = sysfs::drm_cards(probe)
            .iter()
            .filter(|c| is_amd(c))
            .map(|c| sysfs::read_amdgpu_card(probe, c))
            .collect();
    }
    let found = !(pci.is_empty() && nodes.is_empty() && cards.is_empty());
    let hygon = pci.iter().any(|p| p.vendor_id == HYGON_VENDOR_ID)
        || nodes
            .iter()
            .any(|n| n.prop("vendor_id") == Some(u64::from(HYGON_VENDOR_ID)));
    // With nothing found, only hy-smi: it may be all a container was given
    // (`/opt/hyhal` mounted), and no other machine has it.
    let tools: &[ToolRun] = if found { tool_order(hygon) } else { &[HY_SMI] };
    let tool = run_tool(probe, tools, &mut out.warnings);
    if !found && tool.is_empty() {
        return out;
    }
    let driver_version = probe.read_trimmed("/sys/module/amdgpu/version");
    let env = |k: &str| probe.env(k);
    let (devices, warnings) =
        assemble(&pci, &cards, &nodes, &tool, driver_version.as_deref(), &env);
    out.devices = devices;
    out.warnings.extend(warnings);
    if out.devices.iter().any(|d| d.shared_memory.is_some()) {
        let pool = ctx
            .probe
            .read_text("/proc/meminfo")
            .ok()
            .and_then(|t| super::memory::parse_meminfo(&t).get("MemTotal"));
        for m in out
            .devices
            .iter_mut()
            .filter_map(|d| d.shared_memory.as_mut())
        {
            if let (Some(p), None) = (pool, m.pool_bytes) {
                m.pool_bytes = Some(p);
                m.source = m
                    .source
                    .replacen("pool: unknown", "pool: /proc/meminfo MemTotal", 1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| m.get(k).cloned()
    }

    #[test]
    fn visibility_rules() {
        let u: Vec<Option<String>> = (0..4).map(|i| Some(format!("GPU-{i:016x}"))).collect();
        let h = apply_visibility(&u, &env_of(&[("HIP_VISIBLE_DEVICES", "1,3")]));
        assert_eq!(h.iter().filter(|x| x.is_none()).count(), 2);
        assert_eq!(h[0].as_deref(), Some("HIP_VISIBLE_DEVICES=1,3"));
        // ROCr first, then HIP indexes into what is left: ROCr keeps 2,3; HIP 1 → device 3.
        let h = apply_visibility(
            &u,
            &env_of(&[
                ("ROCR_VISIBLE_DEVICES", "2,3"),
                ("HIP_VISIBLE_DEVICES", "1"),
            ]),
        );
        assert!(h[3].is_none());
        assert!(h[0].as_deref().unwrap().starts_with("ROCR_VISIBLE_DEVICES"));
        assert!(h[2].as_deref().unwrap().starts_with("HIP_VISIBLE_DEVICES"));
        // CUDA_VISIBLE_DEVICES only when HIP_VISIBLE_DEVICES is unset; UUIDs; stop at invalid.
        let h = apply_visibility(
            &u,
            &env_of(&[("CUDA_VISIBLE_DEVICES", "GPU-0000000000000002,x,0")]),
        );
        assert!(h[2].is_none() && h[0].is_some());
        let h = apply_visibility(&u, &env_of(&[("HIP_VISIBLE_DEVICES", "")]));
        assert!(h.iter().all(Option::is_some));
    }

    #[test]
    fn sizes_and_names() {
        assert_eq!(parse_size_bytes("64289 MB"), Some(64289 << 20));
        assert_eq!(parse_size_bytes("32768.00 MiB"), Some(32768 << 20));
        assert_eq!(parse_size_bytes("N/A"), None);
        assert_eq!(parse_size_bytes("12 parsecs"), None);
        assert_eq!(
            amd_name(Some("MI308X"), Some(0x74a2)).as_deref(),
            Some("AMD Instinct MI308X")
        );
        assert_eq!(
            amd_name(Some("MI300A"), None).as_deref(),
            Some("AMD MI300A")
        );
        assert_eq!(
            amd_name(
                Some("Navi 22 [Radeon RX 6700/6700 XT / 6800M]"),
                Some(0x73df)
            )
            .as_deref(),
            Some("AMD Radeon RX 6700/6700 XT / 6800M")
        );
        assert_eq!(
            amd_name(None, Some(0x740f)).as_deref(),
            Some("AMD Instinct MI210")
        );
    }

    fn kfd_node(props: &str) -> KfdNode {
        KfdNode {
            node: 1,
            props: kfd::parse_properties(props).0,
            gpu_id: Some(1),
            mem_bytes: None,
            io_links: Vec::new(),
            p2p_links: Vec::new(),
        }
    }

    fn tool_gpu(vendor: &str, address: Option<PciAddress>) -> ToolGpu {
        let mut d = Device::new("rocm-smi:card0", "x", vendor, Family::Gpu, "rocm-smi");
        d.pci_address = address;
        d.memory_bytes = Some(7);
        ToolGpu {
            name: None,
            device: d,
        }
    }

    /// A DCU seen only through KFD (no PCI scan): its node's vendor_id
    /// (0x1d94 = 7572) makes it Hygon's, and its device id (0x740f = 29711,
    /// an AMD Instinct MI210's) is not looked up in the AMD table.
    #[test]
    fn hygon_kfd_node_is_not_named_from_the_amd_table() {
        let n = kfd_node("simd_count 8\nvendor_id 7572\ndevice_id 29711\nlocation_id 14080\n");
        let (d, w) = assemble(&[], &[], &[n], &[], None, &|_: &str| None);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].id, "pci:0000:37:00.0");
        assert_eq!(d[0].vendor, "hygon");
        assert_eq!(d[0].name, "Hygon DCU [1d94:740f]");
        // The same node with AMD's vendor id is the MI210.
        let n = kfd_node("simd_count 8\nvendor_id 4098\ndevice_id 29711\nlocation_id 14080\n");
        let (d, _) = assemble(&[], &[], &[n], &[], None, &|_: &str| None);
        assert_eq!(
            (d[0].vendor.as_str(), d[0].name.as_str()),
            ("amd", "AMD Instinct MI210")
        );
    }

    #[test]
    fn only_a_lone_card_without_address_is_placed() {
        let a: PciAddress = "0000:37:00.0".parse().unwrap();
        let b: PciAddress = "0000:3a:00.0".parse().unwrap();
        let (placed, left) = place_tool_gpus(&[tool_gpu("hygon", None)], &[a]);
        assert_eq!((placed.len(), left.len()), (1, 0));
        assert_eq!(placed[0].device.pci_address, Some(a));
        assert_eq!(placed[0].device.id, "pci:0000:37:00.0");
        // Two devices, or two cards: no guess.
        let (placed, left) = place_tool_gpus(&[tool_gpu("hygon", None)], &[a, b]);
        assert_eq!((placed.len(), left.len()), (0, 1));
        let two = [tool_gpu("hygon", None), tool_gpu("hygon", None)];
        assert_eq!(place_tool_gpus(&two, &[a]).1.len(), 2);
        // A card with an address stays where it is.
        let (placed, left) = place_tool_gpus(&[tool_gpu("amd", Some(b))], &[a]);
        assert_eq!((placed[0].device.pci_address, left.len()), (Some(b), 0));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,60}", v in ".{0,30}") {
            let _ = parse_size_bytes(&s);
            let u = vec![Some("GPU-1".to_string()), None];
            let _ = apply_visibility(&u, &|k: &str| (k == "HIP_VISIBLE_DEVICES").then(|| v.clone()));
        }
    }
}
