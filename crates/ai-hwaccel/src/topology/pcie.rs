//! PCIe relations between two functions, computed from where each sits in the
//! PCI hierarchy (host bridge, bridge chain) and its NUMA node, in the
//! vocabulary of `nvidia-smi topo -m` and NVML's `nvmlGpuTopologyLevel_t`
//! so that users read one scale across vendors:
//!
//! | type   | meaning (NVML documentation)                                            |
//! |--------|-------------------------------------------------------------------------|
//! | `pix`  | at most a single PCIe switch/bridge between the two (`TOPOLOGY_SINGLE`) |
//! | `pxb`  | multiple bridges, without the host bridge (`TOPOLOGY_MULTIPLE`)         |
//! | `phb`  | through one PCIe host bridge (`TOPOLOGY_HOSTBRIDGE`)                    |
//! | `node` | between host bridges of one NUMA node (`TOPOLOGY_NODE`)                 |
//! | `sys`  | across the SMP interconnect between NUMA nodes (`TOPOLOGY_SYSTEM`)      |
//!
//! A PCIe switch appears in sysfs as an upstream port with one downstream
//! port per slot, each a bridge. Two functions whose chains meet at a bridge
//! and go down at most one more bridge each sit under one switch (`pix`);
//! deeper splits cross several switches (`pxb`); chains that only share the
//! host bridge meet there (`phb`).

use crate::model::{PciPath, PcieLink};

/// How two PCI functions reach each other over PCIe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PcieRelation {
    /// At most one switch between them.
    Pix,
    /// Several bridges, not through the host bridge.
    Pxb,
    /// Through their common host bridge.
    Phb,
    /// Between host bridges of one NUMA node.
    Node,
    /// Across NUMA nodes.
    Sys,
}

impl PcieRelation {
    /// The lowercase name used in JSON (`pix`, `pxb`, `phb`, `node`, `sys`).
    pub fn as_str(self) -> &'static str {
        match self {
            PcieRelation::Pix => "pix",
            PcieRelation::Pxb => "pxb",
            PcieRelation::Phb => "phb",
            PcieRelation::Node => "node",
            PcieRelation::Sys => "sys",
        }
    }

    /// The relation a tool names (`PIX`, `pcie-pix`, `NODE`, …).
    pub fn parse(s: &str) -> Option<PcieRelation> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("pcie-").unwrap_or(&t);
        Some(match t {
            "pix" => PcieRelation::Pix,
            "pxb" => PcieRelation::Pxb,
            "phb" => PcieRelation::Phb,
            "node" => PcieRelation::Node,
            "sys" => PcieRelation::Sys,
            _ => return None,
        })
    }
}

/// One end of a PCIe relation: where the function sits and its NUMA node.
#[derive(Clone, Copy, Debug)]
pub struct PcieEnd<'a> {
    /// Host bridge and bridges above the function.
    pub path: &'a PciPath,
    /// NUMA node of the function.
    pub numa_node: Option<u32>,
}

/// The relation between two functions. Different host bridges are `node`
/// when both NUMA nodes are known and equal, or when the host has at most one
/// NUMA node (`single_node`); otherwise `sys` — locality that cannot be shown
/// is not assumed.
pub fn relation(a: PcieEnd, b: PcieEnd, single_node: bool) -> PcieRelation {
    if a.path.host_bridge != b.path.host_bridge {
        return match (a.numa_node, b.numa_node) {
            (Some(x), Some(y)) if x == y => PcieRelation::Node,
            (Some(_), Some(_)) => PcieRelation::Sys,
            _ if single_node => PcieRelation::Node,
            _ => PcieRelation::Sys,
        };
    }
    let common = a
        .path
        .bridges
        .iter()
        .zip(&b.path.bridges)
        .take_while(|(x, y)| x == y)
        .count();
    if common == 0 {
        return PcieRelation::Phb;
    }
    let below_a = a.path.bridges.len() - common;
    let below_b = b.path.bridges.len() - common;
    if below_a <= 1 && below_b <= 1 {
        PcieRelation::Pix
    } else {
        PcieRelation::Pxb
    }
}

/// Usable bandwidth of a PCIe link in one direction, bytes per second, from
/// its current per-lane rate and width ([`PcieLink::one_way_bytes_per_s`]:
/// `GT/s × lanes × line code / 8`). `None` when speed or width is unknown or
/// the rate is no PCIe generation's.
pub fn link_bandwidth(link: &PcieLink) -> Option<u64> {
    PcieLink::one_way_bytes_per_s(link.current_speed_gts?, link.current_width?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(host: &str, bridges: &[&str]) -> PciPath {
        PciPath {
            host_bridge: host.to_string(),
            bridges: bridges.iter().map(|b| b.parse().unwrap()).collect(),
        }
    }

    fn end(p: &PciPath, numa: Option<u32>) -> PcieEnd<'_> {
        PcieEnd {
            path: p,
            numa_node: numa,
        }
    }

    #[test]
    fn relations_follow_the_bridge_chains() {
        // Root port 00:01.0 → switch upstream 01:00.0 → downstream 02:00.0 / 02:01.0.
        let gpu0 = path(
            "pci0000:00",
            &["0000:00:01.0", "0000:01:00.0", "0000:02:00.0"],
        );
        let gpu1 = path(
            "pci0000:00",
            &["0000:00:01.0", "0000:01:00.0", "0000:02:01.0"],
        );
        // Second-level switch under downstream 02:02.0.
        let nic = path(
            "pci0000:00",
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:02.0",
                "0000:05:00.0",
                "0000:06:00.0",
            ],
        );
        let other_rp = path("pci0000:00", &["0000:00:02.0"]);
        let other_host = path("pci0000:80", &["0000:80:01.0"]);
        let r = |a: &PciPath, b: &PciPath, na, nb| relation(end(a, na), end(b, nb), false);
        assert_eq!(r(&gpu0, &gpu1, Some(0), Some(0)), PcieRelation::Pix);
        assert_eq!(r(&gpu0, &gpu0, Some(0), Some(0)), PcieRelation::Pix);
        assert_eq!(r(&gpu0, &nic, Some(0), Some(0)), PcieRelation::Pxb);
        assert_eq!(r(&gpu0, &other_rp, Some(0), Some(0)), PcieRelation::Phb);
        assert_eq!(r(&gpu0, &other_host, Some(0), Some(0)), PcieRelation::Node);
        assert_eq!(r(&gpu0, &other_host, Some(0), Some(1)), PcieRelation::Sys);
        assert_eq!(r(&gpu0, &other_host, None, Some(1)), PcieRelation::Sys);
        assert_eq!(
            relation(end(&gpu0, None), end(&other_host, None), true),
            PcieRelation::Node
        );
        // Two functions directly on the root bus of one host bridge (VMs).
        let a = path("pci0000:00", &[]);
        assert_eq!(r(&a, &a, None, None), PcieRelation::Phb);
    }

    #[test]
    fn bandwidth_from_rate_and_width() {
        let l = |gts, w| PcieLink {
            current_speed_gts: Some(gts),
            current_width: Some(w),
            ..Default::default()
        };
        // Gen5 x16: 32 GT/s × 16 × 128/130 / 8 = 63.015… GB/s.
        assert_eq!(link_bandwidth(&l(32.0, 16)), Some(63_015_384_615));
        // Gen4 x16: 31.5 GB/s.
        assert_eq!(link_bandwidth(&l(16.0, 16)), Some(31_507_692_308));
        // Gen2 x8: 5 × 8 × 0.8 / 8 = 4 GB/s.
        assert_eq!(link_bandwidth(&l(5.0, 8)), Some(4_000_000_000));
        assert_eq!(link_bandwidth(&PcieLink::default()), None);
        assert_eq!(link_bandwidth(&l(16.0, 0)), None);
    }

    #[test]
    fn tool_spellings_parse() {
        assert_eq!(PcieRelation::parse("PIX"), Some(PcieRelation::Pix));
        assert_eq!(PcieRelation::parse("pcie-phb"), Some(PcieRelation::Phb));
        assert_eq!(PcieRelation::parse(" SYS "), Some(PcieRelation::Sys));
        assert_eq!(PcieRelation::parse("NV4"), None);
    }
}
