//! The AMD KFD topology (`/sys/class/kfd/kfd/topology`): one node per CPU
//! socket and per GPU (or per GPU compute partition), each with a
//! `properties` file of `key value` lines, memory banks, direct I/O links
//! (`io_links/M`) and, on kernels with "drm/amdkfd: Extend KFD device topology
//! to surface peer-to-peer links" (Linux 6.2), indirect peer links (`p2p_links/M`).
//!
//! Pure parsers ([`parse_properties`], [`gfx_target_name`], [`location_to_pci`],
//! [`parse_io_link`]) plus [`read_topology`], which reads the tree through a probe.
//! Field meanings follow the kernel's `drivers/gpu/drm/amd/amdkfd/kfd_topology.c`
//! (`node_show`, `iolink_show`, `mem_show`). `p2p_links` come from
//! `kfd_create_indirect_link_prop` (GPU → the CPU nodes it does not attach to)
//! and `kfd_add_peer_prop` (GPU ↔ GPU outside one xGMI hive, through the
//! host's PCIe): each is a copy of the GPU's link to its CPU with the weights
//! of the hops added and the bandwidth the minimum of the hops, so a path that
//! crosses a CPU ↔ CPU link (bandwidth 0) has no known bandwidth.

use std::collections::BTreeMap;

use crate::model::PciAddress;
use crate::probe::{Probe, ProbeExt, join};

/// Where the KFD topology lives.
pub const TOPOLOGY_DIR: &str = "/sys/class/kfd/kfd/topology";

/// KFD I/O link type for xGMI (`CRAT_IOLINK_TYPE_XGMI` in the kernel's `kfd_crat.h`).
pub const IOLINK_TYPE_XGMI: u64 = 11;
/// KFD I/O link type for PCI Express (`CRAT_IOLINK_TYPE_PCIEXPRESS`).
pub const IOLINK_TYPE_PCIE: u64 = 2;

/// Parse a KFD `properties` file: one `key value` pair per line, values are
/// unsigned decimal (64-bit: `hive_id` and `unique_id` use the whole range).
/// Lines that do not have that shape are skipped and reported by key.
pub fn parse_properties(text: &str) -> (BTreeMap<String, u64>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut bad = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            bad.push(line.chars().take(60).collect());
            continue;
        };
        match value.parse::<u64>() {
            Ok(v) => {
                map.insert(key.to_string(), v);
            }
            Err(_) => bad.push(key.chars().take(60).collect()),
        }
    }
    (map, bad)
}

/// The LLVM target name of a KFD `gfx_target_version` (e.g. 90402 → `gfx942`,
/// 90010 → `gfx90a`, 110000 → `gfx1100`). The kernel encodes
/// `major * 10000 + minor * 100 + stepping`; LLVM prints minor and stepping as
/// one hex digit each. `None` for 0 (CPU nodes) or digits that do not fit.
pub fn gfx_target_name(version: u64) -> Option<String> {
    if version == 0 {
        return None;
    }
    let major = version / 10_000;
    let minor = (version / 100) % 100;
    let step = version % 100;
    if major == 0 || major > 99 || minor > 15 || step > 15 {
        return None;
    }
    Some(format!("gfx{major}{minor:x}{step:x}"))
}

/// The PCI address a KFD node names: `location_id` is
/// `bus << 8 | device << 3 | function` (the kernel's `pci_dev_id()`), `domain`
/// the PCI segment.
pub fn location_to_pci(domain: u64, location_id: u64) -> Option<PciAddress> {
    if location_id > 0xffff {
        return None;
    }
    Some(PciAddress {
        domain: u32::try_from(domain).ok()?,
        bus: (location_id >> 8) as u8,
        device: ((location_id >> 3) & 0x1f) as u8,
        function: (location_id & 0x7) as u8,
    })
}

/// One KFD I/O link (`nodes/N/io_links/M/properties`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KfdIoLink {
    /// Link type (`11` xGMI, `2` PCIe, …).
    pub kind: u64,
    /// Source node.
    pub node_from: u64,
    /// Destination node.
    pub node_to: u64,
    /// Minimum bandwidth in MB/s, when nonzero.
    pub min_bandwidth_mbs: Option<u64>,
    /// Maximum bandwidth in MB/s, when nonzero.
    pub max_bandwidth_mbs: Option<u64>,
    /// Link weight (relative distance).
    pub weight: Option<u64>,
}

impl KfdIoLink {
    /// The link type as the registry spells it (`xgmi`, `pcie`, or `type<N>`).
    pub fn kind_name(&self) -> String {
        match self.kind {
            IOLINK_TYPE_XGMI => "xgmi".to_string(),
            IOLINK_TYPE_PCIE => "pcie".to_string(),
            n => format!("type{n}"),
        }
    }
}

/// Parse an I/O link `properties` file. `None` when `type`, `node_from` or
/// `node_to` is missing.
pub fn parse_io_link(text: &str) -> Option<KfdIoLink> {
    let (p, _) = parse_properties(text);
    let nz = |k: &str| p.get(k).copied().filter(|&v| v > 0);
    Some(KfdIoLink {
        kind: *p.get("type")?,
        node_from: *p.get("node_from")?,
        node_to: *p.get("node_to")?,
        min_bandwidth_mbs: nz("min_bandwidth"),
        max_bandwidth_mbs: nz("max_bandwidth"),
        weight: nz("weight"),
    })
}

/// One GPU node of the KFD topology (CPU nodes are not kept).
#[derive(Clone, Debug, PartialEq)]
pub struct KfdNode {
    /// Node number (directory name).
    pub node: u64,
    /// Raw properties.
    pub props: BTreeMap<String, u64>,
    /// `gpu_id` file, when present and nonzero.
    pub gpu_id: Option<u64>,
    /// Sum of the node's memory banks (`mem_banks/*/properties` `size_in_bytes`), when nonzero.
    pub mem_bytes: Option<u64>,
    /// Direct I/O links from this node (`io_links/M`), in `M` order.
    pub io_links: Vec<KfdIoLink>,
    /// Indirect peer links from this node (`p2p_links/M`, absent on older
    /// kernels), in `M` order: paths through a CPU or the PCIe root, not links.
    pub p2p_links: Vec<KfdIoLink>,
}

impl KfdNode {
    /// A property, `None` when absent.
    pub fn prop(&self, key: &str) -> Option<u64> {
        self.props.get(key).copied()
    }

    /// A property, `None` when absent or zero (KFD prints 0 for unknown).
    pub fn nonzero(&self, key: &str) -> Option<u64> {
        self.prop(key).filter(|&v| v > 0)
    }

    /// Whether this is a GPU node (SIMDs present). CPU nodes have `simd_count 0`.
    pub fn is_gpu(&self) -> bool {
        self.nonzero("simd_count").is_some()
    }

    /// LLVM target (`gfx942`), when the kernel reports `gfx_target_version`.
    pub fn gfx_target(&self) -> Option<String> {
        self.prop("gfx_target_version").and_then(gfx_target_name)
    }

    /// Compute units: `simd_count / simd_per_cu`.
    pub fn compute_units(&self) -> Option<u32> {
        let simd = self.nonzero("simd_count")?;
        let per = self.nonzero("simd_per_cu")?;
        u32::try_from(simd / per).ok().filter(|&c| c > 0)
    }

    /// Whether the kernel ORs the partition index into `location_id`: it does
    /// for GC 9.4.x parts (MI300 family) in `kfd_topology_add_device`.
    fn location_has_partition(&self) -> bool {
        matches!(self.prop("gfx_target_version"), Some(v) if v / 100 == 904)
    }

    /// The PCI address exactly as `domain`/`location_id` spell it.
    pub fn raw_pci_address(&self) -> Option<PciAddress> {
        location_to_pci(self.prop("domain").unwrap_or(0), self.prop("location_id")?)
    }

    /// The PCI address of the physical device. On MI300-class parts the
    /// kernel adds the compute-partition index to `location_id`, so the
    /// function bits are the partition, not a PCI function.
    pub fn pci_address(&self) -> Option<PciAddress> {
        let mut a = self.raw_pci_address()?;
        if self.location_has_partition() {
            a.function = 0;
        }
        Some(a)
    }

    /// Index of the compute partition this node is, on MI300-class parts.
    pub fn partition_index(&self) -> Option<u32> {
        self.location_has_partition()
            .then(|| self.raw_pci_address().map(|a| u32::from(a.function)))
            .flatten()
    }
}

/// GPU nodes of a topology, in node order, plus problems met.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KfdTopology {
    /// GPU nodes in node order (HIP/ROCr enumerate GPUs in this order).
    pub gpus: Vec<KfdNode>,
    /// Problems met.
    pub warnings: Vec<String>,
}

/// Read a KFD topology directory (`dir` holds `nodes/`). Absent → empty.
pub fn read_topology(probe: &dyn Probe, dir: &str) -> KfdTopology {
    let mut out = KfdTopology::default();
    let nodes_dir = join(dir, "nodes");
    let mut names: Vec<(u64, String)> = probe
        .list_or_empty(&nodes_dir)
        .into_iter()
        .filter_map(|n| n.parse::<u64>().ok().map(|i| (i, n)))
        .collect();
    names.sort();
    for (node, name) in names {
        let ndir = join(&nodes_dir, &name);
        let path = join(&ndir, "properties");
        let Ok(text) = probe.read_text(&path) else {
            out.warnings
                .push(format!("{path}: unreadable; node skipped"));
            continue;
        };
        let (props, bad) = parse_properties(&text);
        if !bad.is_empty() {
            out.warnings
                .push(format!("{path}: unparsable lines: {}", bad.join(", ")));
        }
        let mut n = KfdNode {
            node,
            props,
            gpu_id: None,
            mem_bytes: None,
            io_links: Vec::new(),
            p2p_links: Vec::new(),
        };
        if !n.is_gpu() {
            continue;
        }
        n.gpu_id = probe
            .read_trimmed(&join(&ndir, "gpu_id"))
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|&v| v > 0);
        let banks_dir = join(&ndir, "mem_banks");
        let mem: u64 = probe
            .list_or_empty(&banks_dir)
            .iter()
            .filter_map(|b| {
                probe
                    .read_text(&join(&join(&banks_dir, b), "properties"))
                    .ok()
            })
            .filter_map(|t| parse_properties(&t).0.get("size_in_bytes").copied())
            .fold(0u64, u64::saturating_add);
        n.mem_bytes = (mem > 0).then_some(mem);
        n.io_links = read_links(probe, &join(&ndir, "io_links"), &mut out.warnings);
        n.p2p_links = read_links(probe, &join(&ndir, "p2p_links"), &mut out.warnings);
        out.gpus.push(n);
    }
    out
}

/// The links of one `io_links` or `p2p_links` directory, in numeric order of
/// their directory names (`2` before `10`). Absent → empty.
fn read_links(probe: &dyn Probe, dir: &str, warnings: &mut Vec<String>) -> Vec<KfdIoLink> {
    let mut names: Vec<(u64, String)> = probe
        .list_or_empty(dir)
        .into_iter()
        .filter_map(|n| n.parse::<u64>().ok().map(|i| (i, n)))
        .collect();
    names.sort();
    let mut links = Vec::new();
    for (_, l) in names {
        let lpath = join(&join(dir, &l), "properties");
        if let Ok(t) = probe.read_text(&lpath) {
            match parse_io_link(&t) {
                Some(link) => links.push(link),
                None => warnings.push(format!("{lpath}: missing type/node_from/node_to")),
            }
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names() {
        assert_eq!(gfx_target_name(90402).as_deref(), Some("gfx942"));
        assert_eq!(gfx_target_name(90010).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_target_name(110000).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_target_name(100302).as_deref(), Some("gfx1032"));
        assert_eq!(gfx_target_name(0), None);
        assert_eq!(gfx_target_name(91600), None);
    }

    #[test]
    fn locations() {
        // 25344 = 0x6300: bus 0x63, device 0, function 0.
        assert_eq!(
            location_to_pci(0, 25344).unwrap().to_string(),
            "0000:63:00.0"
        );
        assert_eq!(
            location_to_pci(1, 0x1a0b).unwrap().to_string(),
            "0001:1a:01.3"
        );
        assert_eq!(location_to_pci(0, 0x1_0000), None);
    }

    #[test]
    fn properties_and_links() {
        let (p, bad) =
            parse_properties("simd_count 416\nhive_id 12609507387757274807\njunk\nx y\n");
        assert_eq!(p["simd_count"], 416);
        assert_eq!(p["hive_id"], 12_609_507_387_757_274_807);
        assert_eq!(bad, vec!["junk".to_string(), "x".to_string()]);
        // Hand-written in the kernel's iolink_show layout (captured files: `fixture_topologies`).
        let l = parse_io_link(
            "type 11\nversion_major 0\nversion_minor 0\nnode_from 2\nnode_to 3\nweight 15\n\
             min_latency 0\nmax_latency 0\nmin_bandwidth 50000\nmax_bandwidth 50000\n\
             recommended_transfer_size 0\nrecommended_sdma_engine_id_mask 0\nflags 1\n",
        )
        .unwrap();
        assert_eq!(l.kind_name(), "xgmi");
        assert_eq!((l.node_from, l.node_to), (2, 3));
        assert_eq!(l.max_bandwidth_mbs, Some(50_000));
        assert_eq!(parse_io_link("type 2\n"), None);
    }

    #[test]
    fn fixture_topologies() {
        let probe = crate::probe::LiveProbe::new(crate::probe::ProbeOptions {
            root: concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/sysfs-kfd-topology"
            )
            .into(),
            ..Default::default()
        });
        let read = |d: &str| read_topology(&probe, d);
        let t = read("/mi210-xgmi-pcie-8gpu");
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        assert_eq!(t.gpus.len(), 8);
        assert_eq!(t.gpus[0].node, 2);
        assert_eq!(t.gpus[0].pci_address().unwrap().to_string(), "0000:63:00.0");
        assert_eq!(t.gpus[0].gfx_target().as_deref(), Some("gfx90a"));
        assert_eq!(t.gpus[0].compute_units(), Some(104));
        // Node 2: PCIe to CPU node 0, xGMI to 3, 4, 5 (captured io_links);
        // indirect paths to CPU node 1 and to GPUs 6-9 (captured p2p_links).
        let io: Vec<(String, u64, Option<u64>)> = t.gpus[0]
            .io_links
            .iter()
            .map(|l| (l.kind_name(), l.node_to, l.max_bandwidth_mbs))
            .collect();
        assert_eq!(
            io,
            [
                ("pcie".to_string(), 0, Some(32_000)),
                ("xgmi".to_string(), 3, Some(50_000)),
                ("xgmi".to_string(), 4, Some(50_000)),
                ("xgmi".to_string(), 5, Some(50_000)),
            ]
        );
        let p2p: Vec<(u64, Option<u64>, Option<u64>)> = t.gpus[0]
            .p2p_links
            .iter()
            .map(|l| (l.node_to, l.weight, l.max_bandwidth_mbs))
            .collect();
        assert_eq!(
            p2p,
            [
                (1, Some(52), None),
                (6, Some(72), None),
                (7, Some(72), None),
                (8, Some(72), None),
                (9, Some(72), None),
            ]
        );
        let t = read("/mi300-cpx/topology");
        assert_eq!(t.gpus.len(), 2);
        assert_eq!(
            t.gpus[1].raw_pci_address().unwrap().to_string(),
            "0000:05:00.1"
        );
        assert_eq!(t.gpus[1].pci_address().unwrap().to_string(), "0000:05:00.0");
        assert_eq!(t.gpus[1].partition_index(), Some(1));
        assert_eq!(t.gpus[1].gfx_target().as_deref(), Some("gfx942"));
        let t = read("/mi308-cpx/topology");
        assert_eq!(t.gpus.len(), 2);
        assert_eq!(t.gpus[0].gpu_id, Some(24248));
        assert_eq!(t.gpus[0].mem_bytes, Some(51_539_607_552));
        assert_eq!(t.gpus[0].compute_units(), Some(20));
        let t = read("/vega10-1gpu/topology");
        assert_eq!(t.gpus.len(), 1);
        assert_eq!(t.gpus[0].gfx_target(), None);
        assert_eq!(t.gpus[0].pci_address().unwrap().to_string(), "0000:19:00.0");
        assert_eq!(read("/absent").gpus.len(), 0);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,200}", v in proptest::num::u64::ANY, d in proptest::num::u64::ANY) {
            let _ = parse_properties(&s);
            let _ = parse_io_link(&s);
            let _ = gfx_target_name(v);
            let _ = location_to_pci(d, v);
        }
    }
}
