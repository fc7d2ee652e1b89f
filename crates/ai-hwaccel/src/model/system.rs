//! Host facts: CPU, memory, NUMA layout and the limits a container imposes.

use serde::{Deserialize, Serialize};

use super::{CloudInstance, EnvironmentInfo, NetworkInterface, RdmaDevice, StorageInfo};

/// The host CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuInfo {
    /// Model name as the kernel reports it (`model name` in /proc/cpuinfo).
    pub model: Option<String>,
    /// Lowercase vendor (`intel`, `amd`, `arm`, `apple`, …) where known.
    pub vendor: Option<String>,
    /// CPU architecture of the running kernel (`x86_64`, `aarch64`, …).
    pub architecture: Option<String>,
    /// Online logical CPUs of the machine.
    pub logical_cpus: Option<u32>,
    /// Physical cores (distinct package/core pairs).
    pub physical_cores: Option<u32>,
    /// Populated sockets (distinct physical packages).
    pub sockets: Option<u32>,
    /// Logical CPUs this process may run on (affinity mask and cpuset).
    pub usable_cpus: Option<u32>,
    /// ISA features that matter for inference, normalized names
    /// (`avx2`, `avx512f`, `avx512_bf16`, `avx512_vnni`, `amx_tile`, `amx_bf16`, `neon`, `sve`, …).
    pub features: Vec<String>,
    /// x86 CPUID family (`cpu family` in /proc/cpuinfo, decimal); arm64:
    /// the MIDR implementer code (`CPU implementer`, 65 = 0x41 = Arm Ltd).
    /// With `cpuid_model` it names the core design when the model name is
    /// masked (`crate::spec::cpu::microarchitecture_by_cpuid`).
    #[serde(default)]
    pub cpuid_family: Option<u32>,
    /// x86 CPUID model (`model` in /proc/cpuinfo, decimal); arm64: the MIDR
    /// part number (`CPU part`, 3340 = 0xd0c = Neoverse N1).
    #[serde(default)]
    pub cpuid_model: Option<u32>,
    /// A clock read from this machine, in MHz: the cpufreq `base_frequency`
    /// where the scaling driver exports it, else ACPI CPPC's
    /// `nominal_freq`, else (only without a cpufreq driver, as on most
    /// virtual machines) `cpu MHz` of /proc/cpuinfo.
    #[serde(default)]
    pub clock_mhz: Option<f64>,
    /// Which of the three `clock_mhz` is: `"cpufreq base_frequency"`,
    /// `"ACPI CPPC nominal_freq"` or `"/proc/cpuinfo cpu MHz"`.
    #[serde(default)]
    pub clock_source: Option<String>,
}

/// Host memory. `*_bytes` are bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryInfo {
    /// `MemTotal` of /proc/meminfo.
    pub total_bytes: Option<u64>,
    /// `MemAvailable` of /proc/meminfo.
    pub available_bytes: Option<u64>,
    /// What this process may use: the smaller of `total_bytes` and the cgroup memory limit.
    pub usable_bytes: Option<u64>,
    /// What this process may still allocate: the smaller of `available_bytes`
    /// and the cgroup limit minus the cgroup's current usage.
    pub usable_available_bytes: Option<u64>,
    /// Size of one huge page (`Hugepagesize`).
    pub hugepage_size_bytes: Option<u64>,
    /// Total huge pages reserved (`HugePages_Total`).
    pub hugepages_total: Option<u64>,
}

/// One NUMA node from /sys/devices/system/node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NumaNode {
    /// Node number.
    pub id: u32,
    /// Logical CPUs on the node (empty for memory-only nodes such as GH200 HBM).
    pub cpus: Vec<u32>,
    /// Memory on the node (`MemTotal` of the node's meminfo).
    pub memory_bytes: Option<u64>,
    /// Free memory on the node (`MemFree` of the node's meminfo).
    pub memory_free_bytes: Option<u64>,
    /// ACPI SLIT distances to every node, in node order.
    pub distances: Vec<u32>,
}

/// Limits a control group imposes on this process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CgroupLimits {
    /// 1 or 2.
    pub version: u8,
    /// The process's cgroup path within the hierarchy (`/` at the root).
    pub path: String,
    /// The tightest memory limit on the path (`memory.max` / `memory.limit_in_bytes`); None = unlimited.
    pub memory_limit_bytes: Option<u64>,
    /// Current memory usage of the cgroup (`memory.current` / `memory.usage_in_bytes`).
    pub memory_current_bytes: Option<u64>,
    /// CPU bandwidth limit in CPUs (`quota / period` of `cpu.max` / `cpu.cfs_quota_us`); None = unlimited.
    pub cpu_quota: Option<f64>,
    /// CPUs allowed by the cpuset controller (`cpuset.cpus.effective`), if restricted.
    pub cpuset_cpus: Option<Vec<u32>>,
}

/// Everything about the host that is not an accelerator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SystemInfo {
    /// Kernel name and release (`Linux 6.1.0`), where known.
    pub os: Option<String>,
    /// The CPU.
    pub cpu: CpuInfo,
    /// Host memory.
    pub memory: MemoryInfo,
    /// NUMA nodes; empty when the kernel exposes none.
    pub numa_nodes: Vec<NumaNode>,
    /// Control group limits, when the process runs in a limited cgroup or container.
    pub cgroup: Option<CgroupLimits>,
    /// Physical network interfaces.
    #[serde(default)]
    pub network: Vec<NetworkInterface>,
    /// RDMA devices (InfiniBand, RoCE, EFA).
    #[serde(default)]
    pub rdma: Vec<RdmaDevice>,
    /// Block devices and the model cache's filesystem.
    #[serde(default)]
    pub storage: StorageInfo,
    /// Container, Kubernetes, Slurm and visibility variables.
    #[serde(default)]
    pub environment: EnvironmentInfo,
    /// The cloud instance, when DMI names one.
    #[serde(default)]
    pub cloud: Option<CloudInstance>,
}
