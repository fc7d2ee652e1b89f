//! The topology layer: how a registry's accelerators reach each other, their
//! CPUs and their NICs, across vendors. Pure: built from a [`Registry`]
//! (what detection found) and the spec database, never from the machine.
//!
//! - **Links**: one edge per pair of accelerators, the best path between
//!   them. Direct links reported by a vendor library or tool (NVLink from
//!   NVML or `nvidia-smi topo -m`, xGMI from KFD `io_links`, NeuronLink from
//!   `neuron-ls`) win; GPUs that reach the same NVSwitch chips are linked
//!   `nvlink` via `nvswitch`; otherwise the PCIe relation (`pix` … `sys`,
//!   see [`pcie`]) computed from both functions' sysfs PCI paths, or the one
//!   a tool reported.
//! - **Bandwidth** per edge, one direction: what the tool reported, else the
//!   spec database's per-link figure × link count (`interconnect.bandwidth /
//!   links / 2`), else for PCIe paths the slower end's negotiated PCIe link
//!   ([`pcie::link_bandwidth`]). `bandwidth_source` says which.
//! - **Domains**: groups of available devices that can form a
//!   tensor-parallel group over a scale-up fabric — connected components of
//!   the direct links. TPU chips of one host form one `ici` domain (their
//!   slice). Other devices with no direct link form one `pcie` domain per
//!   vendor and NUMA node, so a group never spans the SMP interconnect
//!   between sockets. The planner takes its tensor-parallel domains from
//!   here ([`crate::plan::PlanDevice::from_registry`]).
//! - **Affinity**: each device's NUMA node, local CPUs (`local_cpulist`,
//!   else its node's CPUs, else the tool's CPU affinity) and the NICs under
//!   the same PCIe switch or root port (`pix`/`pxb`: GPUDirect RDMA
//!   candidates).

pub mod pcie;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::detect::sysfs::parse_cpulist;
use crate::model::{Device, Family, PciAddress, PciPath, Registry};
use crate::spec;

use pcie::{PcieEnd, PcieRelation};

/// An accelerator as the topology lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopoDevice {
    /// Registry id.
    pub id: String,
    /// Short label for the matrix (`GPU0`, `NPU1`, `ACC3`), numbered per family in registry order.
    pub label: String,
    /// Device name.
    pub name: String,
    /// Vendor.
    pub vendor: String,
    /// Family.
    pub family: Family,
    /// Whether this process may use it.
    pub available: bool,
    /// PCI address.
    pub pci_address: Option<PciAddress>,
}

/// A NUMA node: id, CPUs, memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopoNumaNode {
    /// Node number.
    pub id: u32,
    /// Logical CPUs of the node.
    pub cpus: Vec<u32>,
    /// Memory of the node in bytes.
    pub memory_bytes: Option<u64>,
}

/// The best path between two accelerators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Link {
    /// One device id.
    pub a: String,
    /// The other device id.
    pub b: String,
    /// `nvlink`, `xgmi`, `neuronlink`, … for direct links; `pix`, `pxb`,
    /// `phb`, `node`, `sys` (or `pcie` when only "over PCIe" is known) for PCIe paths.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Number of links (NVLink count), when known.
    pub count: Option<u32>,
    /// Bandwidth in one direction, bytes per second, when known.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// Where the bandwidth comes from: `reported`, `spec` or `pcie-link`.
    pub bandwidth_source: Option<String>,
    /// A switch the path goes through (`nvswitch`).
    pub via: Option<String>,
    /// Where the link type comes from: `device` (a backend reported it),
    /// `pci-path` (computed from sysfs) or `tool` (a tool's PCIe matrix).
    pub source: String,
}

impl Link {
    /// Whether this is a direct (scale-up) link rather than a PCIe path.
    pub fn is_direct(&self) -> bool {
        !is_pcie_kind(&self.link_type)
    }

    /// The matrix cell: `NV18`, `XGMI`, `PIX`, … (`nvidia-smi topo -m` spelling).
    pub fn cell(&self) -> String {
        match (self.link_type.as_str(), self.count) {
            ("nvlink", Some(n)) => format!("NV{n}"),
            ("nvlink", None) => "NV".to_string(),
            (t, _) => t.to_ascii_uppercase(),
        }
    }
}

/// A NIC: an RDMA device, or a network interface without one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Nic {
    /// RDMA device name (`mlx5_0`) or interface name (`eth0`).
    pub name: String,
    /// `infiniband`, `roce`, `efa`, `iwarp`, `ethernet`, …
    pub kind: String,
    /// Network interfaces on the same function.
    pub netdevs: Vec<String>,
    /// PCI address.
    pub pci_address: Option<PciAddress>,
    /// NUMA node.
    pub numa_node: Option<u32>,
    /// Fastest port rate / link speed in bits per second.
    pub rate_bits_per_s: Option<u64>,
    /// State of the first port or the interface (`ACTIVE`, `up`).
    pub state: Option<String>,
}

/// The PCIe relation of a device to a NIC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NicPath {
    /// NIC name.
    pub nic: String,
    /// `pix`, `pxb`, `phb`, `node` or `sys`.
    #[serde(rename = "type")]
    pub path_type: String,
}

/// Where a device sits relative to CPUs and NICs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Affinity {
    /// Device id.
    pub device: String,
    /// NUMA node of the device.
    pub numa_node: Option<u32>,
    /// CPUs local to the device.
    pub cpus: Vec<u32>,
    /// Where `cpus` comes from: `local_cpulist`, `numa-node`, `tool`, or `None` when unknown.
    pub cpus_source: Option<String>,
    /// NICs under the same PCIe switch or root port (`pix`/`pxb`), nearest first.
    pub nics: Vec<String>,
    /// The relation to every NIC with a known PCI path.
    pub nic_paths: Vec<NicPath>,
}

/// The topology of one registry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Topology {
    /// Accelerators (partitions left out), in registry order.
    pub devices: Vec<TopoDevice>,
    /// NUMA nodes.
    pub numa_nodes: Vec<TopoNumaNode>,
    /// One edge per pair of devices whose path is known.
    pub links: Vec<Link>,
    /// Groups of available device ids that can form a tensor-parallel group.
    pub domains: Vec<Vec<String>>,
    /// The link type of each domain (`nvlink`, `xgmi`, `pcie`, …), aligned with `domains`.
    pub domain_types: Vec<String>,
    /// Per-device NUMA, CPU and NIC affinity.
    pub affinity: Vec<Affinity>,
    /// NICs of the host.
    pub nics: Vec<Nic>,
    /// What could not be shown and why.
    pub notes: Vec<String>,
}

/// Link kinds that describe a PCIe path rather than a direct link.
fn is_pcie_kind(kind: &str) -> bool {
    kind == "pcie" || kind == "pci" || PcieRelation::parse(kind).is_some()
}

/// Prefix of matrix labels per family.
fn label_prefix(f: Family) -> &'static str {
    match f {
        Family::Gpu => "GPU",
        Family::Npu => "NPU",
        Family::Tpu => "TPU",
        Family::AiAsic => "ACC",
        Family::Fpga => "FPGA",
        Family::Cpu | Family::Offload => "DEV",
    }
}

/// The device a link's `peer` names: a device id, a PCI address (`pci:` or
/// bare), or a vendor index (`gpu3`, `neuron2`) of the same vendor.
fn resolve_peer(devs: &[&Device], from: &Device, peer: &str) -> Option<usize> {
    if let Some(i) = devs.iter().position(|d| d.id == peer) {
        return Some(i);
    }
    let addr = peer.strip_prefix("pci:").unwrap_or(peer);
    if let Ok(a) = addr.parse::<PciAddress>() {
        return devs.iter().position(|d| d.pci_address == Some(a));
    }
    let digits = peer.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if digits.len() < peer.len() && !digits.is_empty() {
        let n: u32 = digits.parse().ok()?;
        return devs
            .iter()
            .position(|d| d.vendor == from.vendor && d.index == Some(n));
    }
    None
}

/// Per-link bandwidth in one direction from a device's spec entry, when the
/// entry's interconnect is the kind of link `kind` names.
fn spec_link_bandwidth(d: &Device, kind: &str) -> Option<f64> {
    let e = spec::by_id(&d.spec.as_ref()?.id)?;
    let ic = e.interconnect.as_ref()?;
    let name = ic.name.to_ascii_lowercase();
    let matches = match kind {
        "nvlink" => name.contains("nvlink"),
        "xgmi" => name.contains("infinity fabric") || name.contains("xgmi"),
        _ => false,
    };
    if !matches {
        return None;
    }
    Some(ic.bandwidth_bytes_per_s? as f64 / f64::from(ic.links?) / 2.0)
}

/// Both ends' per-link figure agree to the slower one.
fn spec_pair_bandwidth(a: &Device, b: &Device, kind: &str, count: u32) -> Option<u64> {
    let x = spec_link_bandwidth(a, kind)?;
    let y = spec_link_bandwidth(b, kind)?;
    Some((x.min(y) * f64::from(count)).round() as u64)
}

/// Minimal union-find over indices.
struct Sets(Vec<usize>);

impl Sets {
    fn find(&mut self, i: usize) -> usize {
        let mut r = i;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut c = i;
        while self.0[c] != r {
            let next = self.0[c];
            self.0[c] = r;
            c = next;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb)] = ra.min(rb);
        }
    }
}

impl Topology {
    /// Build the topology of `r`.
    pub fn from_registry(r: &Registry) -> Topology {
        let devs: Vec<&Device> = r
            .devices
            .iter()
            .filter(|d| d.is_accelerator() && d.parent.is_none())
            .collect();
        let mut t = Topology::default();

        let mut per_family: BTreeMap<Family, u32> = BTreeMap::new();
        for d in &devs {
            let n = per_family.entry(d.family).or_default();
            t.devices.push(TopoDevice {
                id: d.id.clone(),
                label: format!("{}{}", label_prefix(d.family), n),
                name: d.name.clone(),
                vendor: d.vendor.clone(),
                family: d.family,
                available: d.available,
                pci_address: d.pci_address,
            });
            *n += 1;
        }
        t.numa_nodes = r
            .system
            .numa_nodes
            .iter()
            .map(|n| TopoNumaNode {
                id: n.id,
                cpus: n.cpus.clone(),
                memory_bytes: n.memory_bytes,
            })
            .collect();
        let single_node = r.system.numa_nodes.len() <= 1;

        t.links = pair_links(&devs, single_node);
        let (domains, types) = domains(&devs, &t.links);
        t.domains = domains;
        t.domain_types = types;
        t.nics = nics(r);
        t.affinity = devs
            .iter()
            .map(|d| affinity(d, r, &t.nics, single_node))
            .collect();
        t.notes = notes(&devs, &t.links);
        t
    }

    /// The link between devices `a` and `b` (ids), either order.
    pub fn link(&self, a: &str, b: &str) -> Option<&Link> {
        self.links
            .iter()
            .find(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
    }

    /// Index of the domain holding device `id`.
    pub fn domain_of(&self, id: &str) -> Option<usize> {
        self.domains.iter().position(|d| d.iter().any(|x| x == id))
    }
}

/// A direct link as the two ends reported it.
struct Reported {
    kind: String,
    count: Option<u32>,
    bandwidth: Option<u64>,
}

/// The best known path for every pair.
fn pair_links(devs: &[&Device], single_node: bool) -> Vec<Link> {
    // Direct links reported by either end, keyed by (low, high) index.
    let mut direct: BTreeMap<(usize, usize), Reported> = BTreeMap::new();
    let mut tool_pcie: BTreeMap<(usize, usize), String> = BTreeMap::new();
    let mut switches: Vec<(BTreeSet<String>, u32)> = vec![(BTreeSet::new(), 0); devs.len()];
    for (i, d) in devs.iter().enumerate() {
        for l in &d.links {
            if l.kind == "nvswitch" {
                switches[i].0.insert(l.peer.clone());
                switches[i].1 += l.count.unwrap_or(1);
                continue;
            }
            let Some(j) = resolve_peer(devs, d, &l.peer).filter(|&j| j != i) else {
                continue;
            };
            let key = (i.min(j), i.max(j));
            if is_pcie_kind(&l.kind) {
                let k = PcieRelation::parse(&l.kind)
                    .map_or_else(|| "pcie".to_string(), |r| r.as_str().to_string());
                tool_pcie.entry(key).or_insert(k);
                continue;
            }
            let e = direct.entry(key).or_insert_with(|| Reported {
                kind: l.kind.clone(),
                count: None,
                bandwidth: None,
            });
            e.count = e.count.max(l.count);
            e.bandwidth = e.bandwidth.max(l.bandwidth_bytes_per_s);
        }
    }

    let mut out = Vec::new();
    for i in 0..devs.len() {
        for j in i + 1..devs.len() {
            let (a, b) = (devs[i], devs[j]);
            let mut link = Link {
                a: a.id.clone(),
                b: b.id.clone(),
                link_type: String::new(),
                count: None,
                bandwidth_bytes_per_s: None,
                bandwidth_source: None,
                via: None,
                source: "device".to_string(),
            };
            if let Some(Reported {
                kind,
                count,
                bandwidth: bw,
            }) = direct.get(&(i, j))
            {
                link.link_type = kind.clone();
                link.count = *count;
                link.bandwidth_bytes_per_s = *bw;
                if bw.is_some() {
                    link.bandwidth_source = Some("reported".into());
                } else if let Some(s) = spec_pair_bandwidth(a, b, kind, count.unwrap_or(1)) {
                    // One xGMI link per reported peer when no count is given.
                    if count.is_some() || kind == "xgmi" {
                        link.bandwidth_bytes_per_s = Some(s);
                        link.bandwidth_source = Some("spec".into());
                    }
                }
                out.push(link);
                continue;
            }
            if !switches[i].0.is_disjoint(&switches[j].0) {
                let count = switches[i].1.min(switches[j].1);
                link.link_type = "nvlink".into();
                link.count = Some(count);
                link.via = Some("nvswitch".into());
                if let Some(s) = spec_pair_bandwidth(a, b, "nvlink", count) {
                    link.bandwidth_bytes_per_s = Some(s);
                    link.bandwidth_source = Some("spec".into());
                }
                out.push(link);
                continue;
            }
            let computed = match (&a.pci_path, &b.pci_path) {
                (Some(pa), Some(pb)) => Some(pcie::relation(
                    PcieEnd {
                        path: pa,
                        numa_node: a.numa_node,
                    },
                    PcieEnd {
                        path: pb,
                        numa_node: b.numa_node,
                    },
                    single_node,
                )),
                _ => None,
            };
            if let Some(rel) = computed {
                link.link_type = rel.as_str().into();
                link.source = "pci-path".into();
            } else if let Some(k) = tool_pcie.get(&(i, j)) {
                link.link_type = k.clone();
                link.source = "tool".into();
            } else {
                continue;
            }
            let bw = |d: &Device| {
                d.pci
                    .as_ref()
                    .and_then(|p| p.link.as_ref())
                    .and_then(pcie::link_bandwidth)
            };
            if let (Some(x), Some(y)) = (bw(a), bw(b)) {
                link.bandwidth_bytes_per_s = Some(x.min(y));
                link.bandwidth_source = Some("pcie-link".into());
            }
            out.push(link);
        }
    }
    out
}

/// Connected components over direct links among available devices; the
/// rest grouped per vendor and NUMA node as `pcie` domains.
fn domains(devs: &[&Device], links: &[Link]) -> (Vec<Vec<String>>, Vec<String>) {
    let idx: BTreeMap<&str, usize> = devs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let mut sets = Sets((0..devs.len()).collect());
    let mut linked = vec![false; devs.len()];
    let mut kinds: BTreeMap<usize, BTreeMap<String, u32>> = BTreeMap::new();
    for l in links.iter().filter(|l| l.is_direct()) {
        let (Some(&i), Some(&j)) = (idx.get(l.a.as_str()), idx.get(l.b.as_str())) else {
            continue;
        };
        if !devs[i].available || !devs[j].available {
            continue;
        }
        sets.union(i, j);
        linked[i] = true;
        linked[j] = true;
    }
    for l in links.iter().filter(|l| l.is_direct()) {
        if let Some(&i) = idx.get(l.a.as_str()) {
            if linked[i] {
                let root = sets.find(i);
                *kinds
                    .entry(root)
                    .or_default()
                    .entry(l.link_type.clone())
                    .or_default() += 1;
            }
        }
    }
    // Groups in order of their first device.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    let mut key_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, d) in devs.iter().enumerate() {
        if !d.available {
            continue;
        }
        let key = if linked[i] {
            format!("direct:{}", sets.find(i))
        } else if d.family == Family::Tpu {
            // The chips of one TPU VM are joined by ICI links of their slice
            // (Cloud TPU system architecture: every chip of a host is in the
            // slice); no tool lists the links, so the chips form one `ici`
            // domain without per-pair edges.
            "ici".to_string()
        } else {
            let numa = d.numa_node.map_or("?".to_string(), |n| n.to_string());
            format!("pcie:{}:{numa}", d.vendor)
        };
        match key_of.get(&key) {
            Some(&g) => groups[g].1.push(i),
            None => {
                let kind = if linked[i] {
                    kinds
                        .get(&sets.find(i))
                        .and_then(|k| k.iter().max_by_key(|(_, n)| **n))
                        .map_or_else(|| "direct".to_string(), |(k, _)| k.clone())
                } else if d.family == Family::Tpu {
                    "ici".to_string()
                } else {
                    "pcie".to_string()
                };
                key_of.insert(key, groups.len());
                groups.push((kind, vec![i]));
            }
        }
    }
    let types = groups.iter().map(|(k, _)| k.clone()).collect();
    let lists = groups
        .into_iter()
        .map(|(_, v)| v.into_iter().map(|i| devs[i].id.clone()).collect())
        .collect();
    (lists, types)
}

/// NICs: RDMA devices, then interfaces that have none.
fn nics(r: &Registry) -> Vec<Nic> {
    let sys = &r.system;
    let mut out: Vec<Nic> = sys
        .rdma
        .iter()
        .map(|d| Nic {
            name: d.name.clone(),
            kind: d.kind.clone(),
            netdevs: d.netdevs.clone(),
            pci_address: d.pci_address,
            numa_node: d.numa_node,
            rate_bits_per_s: d.ports.iter().filter_map(|p| p.rate_bits_per_s).max(),
            state: d.ports.first().and_then(|p| p.state.clone()),
        })
        .collect();
    for n in &sys.network {
        let covered = n.rdma_device.is_some()
            || (n.pci_address.is_some() && out.iter().any(|x| x.pci_address == n.pci_address));
        if covered {
            continue;
        }
        out.push(Nic {
            name: n.name.clone(),
            kind: n.kind.clone(),
            netdevs: vec![n.name.clone()],
            pci_address: n.pci_address,
            numa_node: n.numa_node,
            rate_bits_per_s: n.speed_bits_per_s,
            state: n.operstate.clone(),
        });
    }
    out
}

/// The PCI path of a NIC, from the RDMA device or interface it came from.
fn nic_path<'a>(r: &'a Registry, nic: &Nic) -> Option<&'a PciPath> {
    let sys = &r.system;
    sys.rdma
        .iter()
        .find(|d| d.name == nic.name)
        .and_then(|d| d.pci_path.as_ref())
        .or_else(|| {
            sys.network
                .iter()
                .find(|n| n.name == nic.name)
                .and_then(|n| n.pci_path.as_ref())
        })
}

fn affinity(d: &Device, r: &Registry, nics: &[Nic], single_node: bool) -> Affinity {
    let (cpus, cpus_source) = if let Some(c) = d.local_cpus.clone().filter(|c| !c.is_empty()) {
        (c, Some("local_cpulist".to_string()))
    } else if let Some(n) = d
        .numa_node
        .and_then(|id| r.system.numa_nodes.iter().find(|n| n.id == id))
        .filter(|n| !n.cpus.is_empty())
    {
        (n.cpus.clone(), Some("numa-node".to_string()))
    } else if let Some(c) = d.extra.get("cpu_affinity").and_then(|s| parse_cpulist(s)) {
        (c, Some("tool".to_string()))
    } else {
        (Vec::new(), None)
    };
    let mut paths: Vec<(PcieRelation, &Nic)> = Vec::new();
    if let Some(dp) = &d.pci_path {
        for nic in nics {
            let Some(np) = nic_path(r, nic) else { continue };
            let rel = pcie::relation(
                PcieEnd {
                    path: dp,
                    numa_node: d.numa_node,
                },
                PcieEnd {
                    path: np,
                    numa_node: nic.numa_node,
                },
                single_node,
            );
            paths.push((rel, nic));
        }
    }
    paths.sort_by_key(|(rel, _)| *rel);
    Affinity {
        device: d.id.clone(),
        numa_node: d.numa_node,
        cpus,
        cpus_source,
        nics: paths
            .iter()
            .filter(|(rel, _)| matches!(rel, PcieRelation::Pix | PcieRelation::Pxb))
            .map(|(_, n)| n.name.clone())
            .collect(),
        nic_paths: paths
            .iter()
            .map(|(rel, n)| NicPath {
                nic: n.name.clone(),
                path_type: rel.as_str().to_string(),
            })
            .collect(),
    }
}

/// Devices whose datasheet lists a scale-up interconnect but which show no
/// direct link: the library or tool that reports links did not answer.
fn notes(devs: &[&Device], links: &[Link]) -> Vec<String> {
    let mut out = Vec::new();
    let direct: BTreeSet<&str> = links
        .iter()
        .filter(|l| l.is_direct())
        .flat_map(|l| [l.a.as_str(), l.b.as_str()])
        .collect();
    let mut missing: BTreeMap<String, u32> = BTreeMap::new();
    for d in devs.iter().filter(|d| !direct.contains(d.id.as_str())) {
        let ic = d
            .spec
            .as_ref()
            .and_then(|s| spec::by_id(&s.id))
            .and_then(|e| e.interconnect.as_ref())
            .filter(|ic| ic.domain_size.unwrap_or(1) > 1);
        if let Some(ic) = ic {
            *missing
                .entry(format!("{} ({})", d.name, ic.name))
                .or_default() += 1;
        }
    }
    if devs.len() > 1 {
        for (what, n) in missing {
            out.push(format!(
                "{n} device(s) {what} report no direct link: the vendor library or tool that \
                 reports links did not answer, or the links are absent; they are grouped over PCIe"
            ));
        }
    }
    if let Some(t) = devs.iter().find(|d| d.family == Family::Tpu) {
        let get = |k: &str| t.extra.get(k).map(String::as_str);
        let ty = get("tpu_accelerator_type").or(get("accelerator_type"));
        let topo = get("tpu_topology");
        if ty.is_some() || topo.is_some() {
            out.push(format!(
                "TPU slice {} topology {} (TPU_* environment); ICI links are not listed per pair",
                ty.unwrap_or("?"),
                topo.unwrap_or("?")
            ));
        }
    }
    let unknown = devs
        .iter()
        .filter(|d| d.pci_path.is_none() && !direct.contains(d.id.as_str()))
        .count();
    if unknown > 0 && devs.len() > 1 {
        out.push(format!(
            "{unknown} device(s) have no sysfs PCI path: their PCIe relations are unknown unless a tool reported them"
        ));
    }
    out
}
