//! NUMA nodes from /sys/devices/system/node: CPUs, memory and distances.

use crate::model::NumaNode;
use crate::probe::{Probe, ProbeExt, join};

use super::memory::parse_meminfo;
use super::sysfs::parse_cpulist;

const NODE_DIR: &str = "/sys/devices/system/node";

/// Every `nodeN` directory, sorted by N. An absent directory (kernel built
/// without NUMA) gives no nodes and no warning.
pub(crate) fn detect_numa(probe: &dyn Probe, warnings: &mut Vec<String>) -> Vec<NumaNode> {
    let mut nodes: Vec<NumaNode> = Vec::new();
    for name in probe.list_or_empty(NODE_DIR) {
        let Some(id) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = join(NODE_DIR, &name);
        let cpus = match probe.read_text(&join(&dir, "cpulist")) {
            Ok(t) => parse_cpulist(&t).unwrap_or_else(|| {
                warnings.push(format!("{dir}/cpulist: cannot parse {:?}", t.trim()));
                Vec::new()
            }),
            Err(e) => {
                warnings.push(e.to_string());
                Vec::new()
            }
        };
        let mi = probe
            .read_text(&join(&dir, "meminfo"))
            .map(|t| parse_meminfo(&t));
        let (memory_bytes, memory_free_bytes) = match &mi {
            Ok(m) => (m.get("MemTotal"), m.get("MemFree")),
            Err(_) => (None, None),
        };
        if memory_bytes.is_none() {
            warnings.push(format!("{dir}/meminfo: no MemTotal"));
        }
        let distances = probe
            .read_trimmed(&join(&dir, "distance"))
            .map(|d| {
                d.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        nodes.push(NumaNode {
            id,
            cpus,
            memory_bytes,
            memory_free_bytes,
            distances,
        });
    }
    nodes.sort_by_key(|n| n.id);
    nodes
}
