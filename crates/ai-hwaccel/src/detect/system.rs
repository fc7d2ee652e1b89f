//! The system backend: CPU, memory, NUMA and cgroup facts, and the CPU device.

use std::collections::BTreeSet;

use crate::model::{CpuInfo, Device, Family, MemoryInfo, SystemInfo};
use crate::probe::{Probe, ProbeExt};

use super::cgroup::detect_cgroup;
use super::cloud::detect_cloud;
use super::cpu::parse_cpuinfo;
use super::environment::detect_environment;
use super::memory::parse_meminfo;
use super::net::detect_network;
use super::numa::detect_numa;
use super::storage::detect_storage;
use super::sysfs::parse_cpulist;
use super::{BackendOutput, Context};

pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let probe = ctx.probe;
    let mut warnings = Vec::new();
    let cpu = detect_cpu(probe, &mut warnings);
    let numa_nodes = detect_numa(probe, &mut warnings);
    let cgroup = detect_cgroup(probe, &mut warnings);
    let (network, rdma) = detect_network(probe, &mut warnings);
    let storage = detect_storage(probe, &mut warnings);
    let environment = detect_environment(probe, cgroup.as_ref(), &mut warnings);
    let cloud = detect_cloud(probe, &mut warnings);

    let mut memory = MemoryInfo::default();
    match probe.read_text("/proc/meminfo") {
        Ok(t) => {
            let m = parse_meminfo(&t);
            memory.total_bytes = m.get("MemTotal");
            memory.available_bytes = m.get("MemAvailable");
            memory.hugepage_size_bytes = m.get("Hugepagesize");
            memory.hugepages_total = m.get("HugePages_Total");
            if memory.total_bytes.is_none() {
                warnings.push("/proc/meminfo: no MemTotal".into());
            }
        }
        Err(e) => warnings.push(e.to_string()),
    }
    if let Some(w) = numa_memory_shortfall(&numa_nodes, memory.total_bytes) {
        warnings.push(w);
    }
    let limit = cgroup.as_ref().and_then(|c| c.memory_limit_bytes);
    memory.usable_bytes = match (memory.total_bytes, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    };
    let headroom = limit.map(|l| {
        l.saturating_sub(
            cgroup
                .as_ref()
                .and_then(|c| c.memory_current_bytes)
                .unwrap_or(0),
        )
    });
    memory.usable_available_bytes = match (memory.available_bytes, headroom) {
        (Some(a), Some(h)) => Some(a.min(h)),
        (a, h) => a.or(h),
    };

    let mut cpu = cpu;
    // Usable CPUs: the affinity mask, narrowed by the cpuset and rounded-up CPU quota.
    let affinity = probe.read_text("/proc/self/status").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(parse_cpulist)
    });
    let mut usable: Option<u32> = affinity.as_ref().map(|a| a.len() as u32);
    if let Some(set) = cgroup.as_ref().and_then(|c| c.cpuset_cpus.as_ref()) {
        let n = match &affinity {
            Some(a) => set.iter().filter(|c| a.contains(c)).count() as u32,
            None => set.len() as u32,
        };
        usable = Some(usable.map_or(n, |u| u.min(n)));
    }
    if let Some(q) = cgroup.as_ref().and_then(|c| c.cpu_quota) {
        let n = q.ceil().max(1.0) as u32;
        usable = Some(usable.map_or(n, |u| u.min(n)));
    }
    cpu.usable_cpus = usable.or(cpu.logical_cpus);

    let os = match (
        probe.read_trimmed("/proc/sys/kernel/ostype"),
        probe.read_trimmed("/proc/sys/kernel/osrelease"),
    ) {
        (Some(t), Some(r)) => Some(format!("{t} {r}")),
        (t, r) => t.or(r),
    };

    let mut dev = Device::new(
        "cpu",
        cpu.model.clone().unwrap_or_else(|| "CPU".to_string()),
        cpu.vendor.clone().unwrap_or_else(|| "unknown".to_string()),
        Family::Cpu,
        "procfs",
    );
    dev.memory_bytes = memory.usable_bytes;
    dev.memory_free_bytes = memory.usable_available_bytes;
    if numa_nodes.len() == 1 {
        dev.numa_node = Some(numa_nodes[0].id);
    }

    BackendOutput {
        devices: vec![dev],
        system: Some(SystemInfo {
            os,
            cpu,
            memory,
            numa_nodes,
            cgroup,
            network,
            rdma,
            storage,
            environment,
            cloud,
        }),
        warnings,
    }
}

fn detect_cpu(probe: &dyn Probe, warnings: &mut Vec<String>) -> CpuInfo {
    let facts = match probe.read_text("/proc/cpuinfo") {
        Ok(t) => parse_cpuinfo(&t),
        Err(e) => {
            warnings.push(e.to_string());
            Default::default()
        }
    };
    let online = probe
        .read_trimmed("/sys/devices/system/cpu/online")
        .and_then(|s| parse_cpulist(&s));
    let logical = online
        .as_ref()
        .map(|v| v.len() as u32)
        .or((facts.processors > 0).then_some(facts.processors));

    let (mut sockets, mut cores) = (
        (!facts.packages.is_empty()).then_some(facts.packages.len() as u32),
        (!facts.cores.is_empty()).then_some(facts.cores.len() as u32),
    );
    if sockets.is_none() || cores.is_none() {
        // cpuinfo has no topology (arm64, some VMs): read sysfs per online CPU.
        let mut pkgs = BTreeSet::new();
        let mut pairs = BTreeSet::new();
        for cpu in online.iter().flatten() {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
            let pkg = probe
                .read_trimmed(&format!("{dir}/physical_package_id"))
                .and_then(|s| s.parse::<i64>().ok());
            let core = probe
                .read_trimmed(&format!("{dir}/core_id"))
                .and_then(|s| s.parse::<i64>().ok());
            if let (Some(p), Some(c)) = (pkg, core) {
                pkgs.insert(p);
                pairs.insert((p, c));
            }
        }
        if !pkgs.is_empty() {
            sockets = sockets.or(Some(pkgs.len() as u32));
            cores = cores.or(Some(pairs.len() as u32));
        }
    }

    // A clock of this machine: the base frequency the scaling driver
    // exports (intel_pstate's `base_frequency`, kHz;
    // Documentation/admin-guide/pm/intel_pstate.rst); without any cpufreq
    // driver (most virtual machines) the kernel's `cpu MHz`, which there is
    // the nominal TSC frequency. A scaling driver without either gives
    // none: its `cpu MHz` is whatever the clock was at that instant.
    // ACPI CPPC's `nominal_freq` (MHz; Documentation/ABI/testing/
    // sysfs-devices-system-cpu, "acpi_cppc"), the sustained all-core
    // frequency firmware states, comes next: amd-pstate and Arm servers'
    // cppc_cpufreq export no `base_frequency`.
    let cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq";
    let nominal = || {
        probe
            .read_trimmed("/sys/devices/system/cpu/cpu0/acpi_cppc/nominal_freq")
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|&mhz| (100..100_000).contains(&mhz))
    };
    let (clock_mhz, clock_source) = match probe
        .read_trimmed(&format!("{cpufreq}/base_frequency"))
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&khz| (1_000..100_000_000).contains(&khz))
    {
        Some(khz) => (Some(khz as f64 / 1000.0), Some("cpufreq base_frequency")),
        None if let Some(mhz) = nominal() => (Some(mhz as f64), Some("ACPI CPPC nominal_freq")),
        None if probe
            .read_trimmed(&format!("{cpufreq}/scaling_driver"))
            .is_none() =>
        {
            (facts.mhz, facts.mhz.map(|_| "/proc/cpuinfo cpu MHz"))
        }
        None => (None, None),
    };

    CpuInfo {
        model: facts.model,
        vendor: facts.vendor,
        architecture: facts.architecture,
        logical_cpus: logical,
        physical_cores: cores,
        sockets,
        usable_cpus: None,
        features: facts.features,
        cpuid_family: facts.family,
        cpuid_model: facts.model_number,
        clock_mhz,
        clock_source: clock_source.map(str::to_string),
    }
}

/// A warning when the NUMA nodes' memory falls far short of the machine's:
/// every node reports a `MemTotal`, yet they sum to less than nine tenths
/// of /proc/meminfo's. Seen on the lent Firecracker VMs (node 0: 4.8 GiB of
/// 125.9 GiB): memory the kernel does not count per node, so per-node
/// figures understate what a process placed there can use.
fn numa_memory_shortfall(nodes: &[crate::model::NumaNode], total: Option<u64>) -> Option<String> {
    let total = total?;
    let per_node: Option<Vec<u64>> = nodes.iter().map(|n| n.memory_bytes).collect();
    let sum: u64 = per_node.filter(|v| !v.is_empty())?.iter().sum();
    const GIB: f64 = (1u64 << 30) as f64;
    (sum.saturating_mul(10) < total.saturating_mul(9)).then(|| {
        format!(
            "NUMA nodes' MemTotal (/sys/devices/system/node/node*/meminfo) sums to {:.1} GiB, \
             /proc/meminfo's MemTotal is {:.1} GiB: the kernel does not count all memory per node \
             here, so per-node memory figures are low",
            sum as f64 / GIB,
            total as f64 / GIB
        )
    })
}

#[cfg(test)]
mod tests {
    use super::numa_memory_shortfall;
    use crate::model::NumaNode;

    fn node(id: u32, kib: Option<u64>) -> NumaNode {
        NumaNode {
            id,
            cpus: vec![id],
            memory_bytes: kib.map(|k| k * 1024),
            memory_free_bytes: None,
            distances: Vec::new(),
        }
    }

    #[test]
    fn numa_memory_far_below_the_machines_is_a_warning() {
        // The lent H100 VM's snapshot: node 0 MemTotal 5074416 kB,
        // /proc/meminfo MemTotal 131981020 kB.
        let total = Some(131_981_020 * 1024);
        let w = numa_memory_shortfall(&[node(0, Some(5_074_416))], total).unwrap();
        assert!(w.contains("4.8 GiB") && w.contains("125.9 GiB"), "{w}");
        // Nodes that account for the machine's memory (a 2-socket host's
        // nodes sum to a little less than the total: kernel reservations).
        let two = [node(0, Some(65_000_000)), node(1, Some(65_500_000))];
        assert_eq!(numa_memory_shortfall(&two, total), None);
        // Unknown node memory, no nodes, no total: nothing to compare.
        assert_eq!(numa_memory_shortfall(&[node(0, None)], total), None);
        assert_eq!(numa_memory_shortfall(&[], total), None);
        assert_eq!(numa_memory_shortfall(&two, None), None);
    }
}
