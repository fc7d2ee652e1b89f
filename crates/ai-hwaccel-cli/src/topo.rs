//! `ai-hwaccel topo`: the interconnect matrix, domains, NUMA/CPU/NIC affinity,
//! network fabric, storage, environment and cloud instance of a registry.

use ai_hwaccel::Registry;
use ai_hwaccel::detect::sysfs::format_cpulist;
use ai_hwaccel::topology::Topology;
use anyhow::Result;

/// Most devices the matrix shows before it would pass 100 columns.
const MATRIX_MAX_DEVICES: usize = 18;

/// The JSON document: the topology plus the host facts around it.
pub fn json(reg: &Registry) -> Result<String> {
    let topo = Topology::from_registry(reg);
    let mut v = serde_json::to_value(&topo)?;
    let sys = &reg.system;
    let obj = v
        .as_object_mut()
        .expect("a topology serializes to an object");
    obj.insert("rdma".into(), serde_json::to_value(&sys.rdma)?);
    obj.insert("network".into(), serde_json::to_value(&sys.network)?);
    obj.insert("storage".into(), serde_json::to_value(&sys.storage)?);
    obj.insert(
        "environment".into(),
        serde_json::to_value(&sys.environment)?,
    );
    obj.insert("cloud".into(), serde_json::to_value(&sys.cloud)?);
    obj.insert("cgroup".into(), serde_json::to_value(&sys.cgroup)?);
    Ok(format!("{}\n", serde_json::to_string_pretty(&v)?))
}

fn rate(bits: Option<u64>) -> String {
    match bits {
        Some(b) if b >= 1_000_000_000 => format!("{} Gb/s", b as f64 / 1e9),
        Some(b) => format!("{} Mb/s", b as f64 / 1e6),
        None => "-".to_string(),
    }
}

/// The terminal report.
pub fn text(reg: &Registry) -> String {
    let t = Topology::from_registry(reg);
    let mut s = String::new();
    let label = |id: &str| {
        t.devices
            .iter()
            .find(|d| d.id == id)
            .map_or(id.to_string(), |d| d.label.clone())
    };

    if t.devices.is_empty() {
        s += "No accelerators.\n";
    } else {
        s += "Devices\n";
        for d in &t.devices {
            let ok = if d.available { "" } else { "  (unavailable)" };
            s += &format!("  {:<6} {:<22} {}{ok}\n", d.label, d.id, d.name);
        }
    }
    if t.devices.len() > 1 {
        if t.devices.len() <= MATRIX_MAX_DEVICES {
            s += "\n      ";
            for d in &t.devices {
                s += &format!("{:<6}", d.label);
            }
            s = s.trim_end().to_string() + "\n";
            for a in &t.devices {
                s += &format!("{:<6}", a.label);
                for b in &t.devices {
                    let cell = if a.id == b.id {
                        "X".to_string()
                    } else {
                        t.link(&a.id, &b.id).map_or("?".to_string(), |l| l.cell())
                    };
                    s += &format!("{cell:<6}");
                }
                s = s.trim_end().to_string() + "\n";
            }
            s += "\nLegend: X self · NV# # NVLinks · XGMI, NEURONLINK: direct links · ? unknown\n  \
                  PCIe paths as in nvidia-smi topo -m: PIX one switch · PXB several bridges ·\n  \
                  PHB host bridge · NODE host bridges of one NUMA node · SYS across NUMA nodes\n";
        } else {
            s += &format!(
                "\n({} devices: matrix omitted; links follow)\n",
                t.devices.len()
            );
            for l in &t.links {
                s += &format!("  {} - {}  {}\n", label(&l.a), label(&l.b), l.cell());
            }
        }
        let direct: Vec<_> = t.links.iter().filter(|l| l.is_direct()).collect();
        if let Some(l) = direct.first() {
            s += &format!(
                "Direct link bandwidth (one direction): {} per pair ({}).\n",
                crate::render::gb_per_s(l.bandwidth_bytes_per_s, 1),
                l.bandwidth_source.as_deref().unwrap_or("unknown")
            );
        }
    }

    if !t.domains.is_empty() {
        s += "\nInterconnect domains (tensor-parallel groups)\n";
        for (i, (d, k)) in t.domains.iter().zip(&t.domain_types).enumerate() {
            let members: Vec<String> = d.iter().map(|id| label(id)).collect();
            s += &format!("  {i:<3} {k:<10} {}\n", members.join(" "));
        }
    }

    if !t.affinity.is_empty() {
        s += "\nAffinity\n  DEVICE NUMA  CPUS                 NICS (same switch / root port)\n";
        for a in &t.affinity {
            let nics: Vec<String> = a
                .nic_paths
                .iter()
                .filter(|p| a.nics.contains(&p.nic))
                .map(|p| format!("{} ({})", p.nic, p.path_type.to_ascii_uppercase()))
                .collect();
            s += &format!(
                "  {:<6} {:<5} {:<20} {}\n",
                label(&a.device),
                a.numa_node.map_or("-".to_string(), |n| n.to_string()),
                if a.cpus.is_empty() {
                    "-".to_string()
                } else {
                    format_cpulist(&a.cpus)
                },
                if nics.is_empty() {
                    "-".to_string()
                } else {
                    nics.join(", ")
                }
            );
        }
    }

    if !t.numa_nodes.is_empty() {
        s += "\nNUMA nodes\n";
        for n in &t.numa_nodes {
            s += &format!(
                "  {:<3} CPUs {:<24} memory {}\n",
                n.id,
                if n.cpus.is_empty() {
                    "(none)".to_string()
                } else {
                    format_cpulist(&n.cpus)
                },
                crate::render::gib(n.memory_bytes)
            );
        }
    }

    if !t.nics.is_empty() {
        s += "\nNICs\n";
        for n in &t.nics {
            s += &format!(
                "  {:<12} {:<11} {:<10} {:<8} NUMA {:<3} {}\n",
                n.name,
                n.kind,
                rate(n.rate_bits_per_s),
                n.state.as_deref().unwrap_or("-"),
                n.numa_node.map_or("-".to_string(), |x| x.to_string()),
                n.netdevs.join(",")
            );
        }
    }

    let sys = &reg.system;
    let st = &sys.storage;
    if !st.block_devices.is_empty() || st.model_cache.is_some() {
        s += "\nStorage\n";
        for b in &st.block_devices {
            s += &format!(
                "  {:<10} {:<8} {:<12} {}\n",
                b.name,
                b.kind,
                crate::render::gib(b.size_bytes),
                b.model.as_deref().unwrap_or("")
            );
        }
        if let Some(fs) = &st.model_cache {
            s += &format!(
                "  model cache {} on {} ({}{}, mounted at {})\n",
                fs.path,
                fs.source,
                fs.fs_type,
                if fs.network { ", network" } else { "" },
                fs.mount_point
            );
        }
    }

    let env = &sys.environment;
    let mut e = Vec::new();
    if let Some(c) = &env.container {
        e.push(format!("container: {} ({})", c.runtime, c.evidence));
    }
    if let Some(k) = &env.kubernetes {
        e.push(format!(
            "kubernetes: pod {} in {}",
            k.pod_name.as_deref().unwrap_or("?"),
            k.namespace.as_deref().unwrap_or("?")
        ));
    }
    if let Some(j) = &env.slurm {
        e.push(format!(
            "slurm: job {} step {}",
            j.job_id.as_deref().unwrap_or("?"),
            j.step_id.as_deref().unwrap_or("-")
        ));
    }
    for v in &env.visibility {
        e.push(format!("{}={}", v.variable, v.value));
    }
    if let Some(c) = &sys.cgroup {
        if let Some(set) = &c.cpuset_cpus {
            e.push(format!("cpuset {}", format_cpulist(set)));
        }
    }
    if !e.is_empty() {
        s += "\nEnvironment\n";
        for line in e {
            s += &format!("  {line}\n");
        }
    }
    if let Some(c) = &sys.cloud {
        s += &format!(
            "\nCloud: {} {}\n",
            c.provider.as_deref().unwrap_or("not a known provider"),
            c.instance_type.as_deref().unwrap_or("")
        );
    }
    if !t.notes.is_empty() {
        s += "\nNotes\n";
        for n in &t.notes {
            s += &crate::render::wrap("  ", n.split_whitespace(), 98);
        }
    }
    s.lines().map(|l| l.trim_end().to_string() + "\n").collect()
}
