//! Cross-check against hwloc: on this machine, the NUMA nodes, their CPUs
//! and memory, the logical CPU count and the sockets that detection (and the
//! topology built from it) reports must agree with `lstopo --of xml`
//! (Debian `hwloc` / `hwloc-nox`). Skipped, with the reason printed, when
//! lstopo is not installed.
#![allow(clippy::disallowed_methods, reason = "the test runs lstopo")]

use std::process::Command;

use ai_hwaccel::topology::Topology;
use ai_hwaccel::{DetectOptions, ProbeOptions, detect};

/// One NUMA node as hwloc reports it.
#[derive(Debug)]
struct HwlocNode {
    os_index: u32,
    cpus: Vec<u32>,
    memory: u64,
}

/// The value of `name="…"` in an XML start tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')?;
    Some(&tag[start..start + end])
}

/// hwloc's bitmap spelling: comma-separated 32-bit hex words, most
/// significant first, an empty word meaning zero (`0xff,,0x1`).
fn bitmap(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, word) in s.split(',').rev().enumerate() {
        let hex = word.trim_start_matches("0x");
        let v = if hex.is_empty() {
            0
        } else {
            u32::from_str_radix(hex, 16).expect("hex word")
        };
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                out.push(w as u32 * 32 + bit);
            }
        }
    }
    out
}

/// NUMA nodes, PU count and package count from lstopo's XML.
fn parse_lstopo(xml: &str) -> (Vec<HwlocNode>, usize, usize) {
    let mut nodes = Vec::new();
    let (mut pus, mut packages) = (0, 0);
    let mut current: Option<HwlocNode> = None;
    for line in xml.lines().map(str::trim) {
        if line.starts_with("<object ") {
            if let Some(n) = current.take() {
                nodes.push(n);
            }
            match attr(line, "type") {
                Some("PU") => pus += 1,
                Some("Package") => packages += 1,
                Some("NUMANode") => {
                    current = Some(HwlocNode {
                        os_index: attr(line, "os_index").unwrap().parse().unwrap(),
                        cpus: bitmap(attr(line, "cpuset").unwrap()),
                        memory: attr(line, "local_memory").map_or(0, |m| m.parse().unwrap()),
                    });
                }
                _ => {}
            }
        } else if line.starts_with("<page_type ") {
            // Huge pages are reported apart from local_memory; MemTotal counts them.
            if let Some(n) = current.as_mut() {
                let size: u64 = attr(line, "size").unwrap().parse().unwrap();
                let count: u64 = attr(line, "count").unwrap().parse().unwrap();
                if size > 4096 {
                    n.memory += size * count;
                }
            }
        }
    }
    if let Some(n) = current {
        nodes.push(n);
    }
    nodes.sort_by_key(|n| n.os_index);
    (nodes, pus, packages)
}

fn lstopo_xml() -> Option<String> {
    for tool in ["lstopo-no-graphics", "lstopo"] {
        // --whole-system: ignore cgroup/cpuset restrictions, as the node
        // cpulists in sysfs do.
        let out = Command::new(tool)
            .args(["--whole-system", "--of", "xml", "-"])
            .output();
        if let Ok(o) = out {
            if o.status.success() {
                return Some(String::from_utf8_lossy(&o.stdout).into_owned());
            }
        }
    }
    None
}

#[test]
fn bitmaps_decode() {
    assert_eq!(bitmap("0x00000003"), [0, 1]);
    assert_eq!(bitmap("0x00000001,,0x80000000"), [31, 64]);
    assert_eq!(
        bitmap("0x0000ffff,0x00000000"),
        (32..48).collect::<Vec<_>>()
    );
}

#[test]
fn detection_agrees_with_lstopo() {
    let Some(xml) = lstopo_xml() else {
        eprintln!("skipped: lstopo (Debian package hwloc or hwloc-nox) is not installed");
        return;
    };
    let (hw_nodes, pus, packages) = parse_lstopo(&xml);
    assert!(pus > 0, "lstopo reported no PU: {xml:.400}");
    let reg = detect(&ProbeOptions::default(), &DetectOptions::default());
    let sys = &reg.system;

    assert_eq!(sys.cpu.logical_cpus, Some(pus as u32), "logical CPUs");
    if packages > 0 {
        assert_eq!(sys.cpu.sockets, Some(packages as u32), "sockets");
    }
    if sys.numa_nodes.is_empty() {
        // A kernel without NUMA: hwloc shows one node holding every CPU.
        assert_eq!(hw_nodes.len(), 1, "{hw_nodes:?}");
        eprintln!("note: no /sys/devices/system/node; hwloc's single node not compared");
        return;
    }
    let topo = Topology::from_registry(&reg);
    assert_eq!(topo.numa_nodes.len(), hw_nodes.len());
    for ((ours, topo_node), hw) in sys.numa_nodes.iter().zip(&topo.numa_nodes).zip(&hw_nodes) {
        assert_eq!(ours.id, hw.os_index);
        assert_eq!(ours.cpus, hw.cpus, "node {} CPUs", hw.os_index);
        assert_eq!(
            topo_node.cpus, hw.cpus,
            "topology node {} CPUs",
            hw.os_index
        );
        // Both read the node's MemTotal; a balloon driver may move it between
        // the two reads, so allow 1%.
        let mine = ours.memory_bytes.expect("node memory") as f64;
        let theirs = hw.memory as f64;
        assert!(
            (mine - theirs).abs() <= theirs * 0.01,
            "node {} memory: ours {mine}, hwloc {theirs}",
            hw.os_index
        );
    }
}
