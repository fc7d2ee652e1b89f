//! The devices a plan runs on: what the planner needs of each (capacity,
//! bandwidth, peak rates, native types, interconnect) and which scale-up
//! domain it sits in. Built from a device string (`8xh100-sxm`, resolved by
//! the spec database) or from a detected [`Registry`].

use serde::{Deserialize, Serialize};

use super::runtime::VulkanMatrixCores;
use crate::model::{Device, MEMORY_RESERVED_KEY, Registry};
use crate::spec::{self, Dtype, SpecEntry, SpecError, Tflops};

/// One device as the planner sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanDevice {
    /// Device id (`gpu0`, or `h100-sxm#3` for a device string).
    pub id: String,
    /// Product name.
    pub name: String,
    /// Spec database entry, if matched.
    pub spec_id: Option<String>,
    /// Memory in bytes (detected, else the datasheet's).
    pub capacity_bytes: Option<u64>,
    /// Peak memory bandwidth (datasheet).
    pub bandwidth_bytes_per_s: Option<u64>,
    /// Dense peak rates (datasheet).
    pub tflops: Tflops,
    /// Natively executed types; `None` when unknown (no spec entry).
    pub native_dtypes: Option<Vec<Dtype>>,
    /// Scale-up link name.
    pub link: Option<String>,
    /// Scale-up bandwidth per device, both directions (datasheet).
    pub link_bandwidth_bytes_per_s: Option<u64>,
    /// Index of the scale-up domain (devices sharing it may form a
    /// tensor-parallel group).
    pub domain: u32,
    /// PCIe bandwidth to the host, both directions (the detected link,
    /// else the datasheet's interface); what tensor parallelism across
    /// scale-up domains, or without a scale-up link, runs over.
    #[serde(default)]
    pub pcie_bandwidth_bytes_per_s: Option<u64>,
    /// The host CPU, whose memory is the host's RAM ([`PlanDevice::host_cpu`]).
    #[serde(default)]
    pub host: bool,
    /// The host CPU's instruction-set features (`avx2`, `avx512f`,
    /// `dotprod`, `i8mm`, … as detection normalizes them); empty for
    /// accelerators and unknown CPUs.
    #[serde(default)]
    pub cpu_features: Vec<String>,
    /// The host CPU's entry in the CPU table (`spec/cpus.toml`,
    /// [`crate::spec::cpu`]) when its model name matched one.
    #[serde(default)]
    pub cpu_spec_id: Option<String>,
    /// Where a host CPU's `bandwidth_bytes_per_s` comes from:
    /// `"theoretical"` (the CPU table: channels × transfer rate × 8 bytes ×
    /// sockets) or `"measured"` (`plan --measure`). `None` for accelerators
    /// (their datasheet's) and where the bandwidth is unknown.
    #[serde(default)]
    pub bandwidth_basis: Option<String>,
    /// Where a host CPU's peak rates (`tflops`) come from, in words: its
    /// CPU table entry at the entry's base clock, or — for a model name the
    /// table lacks — its core design named by CPUID family and model
    /// ([`crate::spec::cpu::microarchitecture_by_cpuid`]) at a clock read
    /// from the machine. `None` for accelerators and where no rate is known.
    #[serde(default)]
    pub compute_basis: Option<String>,
    /// Which machine of the set the device sits in. 0: the one machine a
    /// detected registry describes, and in a device string the PCIe cards
    /// (NVLink-bridged pairs included) and the host CPU, which share one
    /// host. A board of a larger scale-up domain (eight SXM GPUs on
    /// NVSwitch) and a unified-memory system on a chip (two GB10 are two
    /// computers) in a device string are machines of their own (their
    /// domain + 1): a layer split across them runs over the network, as
    /// llama.cpp's RPC backend does.
    #[serde(default)]
    pub machine: u32,
    /// The matrix path llama.cpp's Vulkan backend would take on this
    /// device, from the cooperative-matrix extensions its Vulkan driver
    /// lists ([`VulkanMatrixCores::of_detected`]); `None` where no driver
    /// was read (a device string, or a registry without a full
    /// `vulkaninfo` report).
    #[serde(default)]
    pub vulkan_matrix_cores: Option<VulkanMatrixCores>,
}

/// Whether each device (or scale-up domain) of a product is a machine of
/// its own in a device string: a unified-memory system on a chip (Apple
/// M-series, GB10, Jetson, Ryzen AI Max: a whole computer), or a board of a
/// scale-up domain larger than an NVLink-bridged pair (eight SXM GPUs on
/// NVSwitch). Everything else is a PCIe card sharing the one host.
pub(crate) fn own_machine(entry: &SpecEntry) -> bool {
    entry.unified_memory
        || entry
            .interconnect
            .as_ref()
            .and_then(|i| i.domain_size)
            .is_some_and(|n| n > 2)
}

impl PlanDevice {
    /// Devices of a spec entry, `count` of them, with domains numbered from
    /// `first_domain`: the entry's scale-up domain size groups them (eight
    /// per NVLink board); products without a scale-up link (PCIe cards)
    /// form one PCIe domain. A unified-memory system on a chip without one
    /// (Apple M-series, GB10, Jetson, Ryzen AI Max) is a computer of its
    /// own: each is its own domain, joined to the others by the network.
    fn from_entry(
        entry: &SpecEntry,
        count: u32,
        first_domain: u32,
        ids_from: u32,
    ) -> Vec<PlanDevice> {
        let stated = entry
            .interconnect
            .as_ref()
            .and_then(|i| i.domain_size)
            .filter(|&n| n > 1);
        let domain_size = stated.unwrap_or(if entry.unified_memory {
            1
        } else {
            count.max(1)
        });
        let own_machine = own_machine(entry);
        (0..count)
            .map(|k| PlanDevice {
                id: format!("{}#{}", entry.id, ids_from + k),
                name: entry.name.clone(),
                spec_id: Some(entry.id.clone()),
                capacity_bytes: entry.memory_bytes,
                bandwidth_bytes_per_s: entry.memory_bandwidth_bytes_per_s,
                tflops: entry.tflops.clone(),
                native_dtypes: Some(entry.native_dtypes.clone()),
                link: entry.interconnect.as_ref().map(|i| i.name.clone()),
                link_bandwidth_bytes_per_s: entry
                    .interconnect
                    .as_ref()
                    .and_then(|i| i.bandwidth_bytes_per_s),
                domain: first_domain + k / domain_size,
                machine: if own_machine {
                    first_domain + k / domain_size + 1
                } else {
                    0
                },
                pcie_bandwidth_bytes_per_s: entry.pcie_bandwidth_bytes_per_s(),
                host: false,
                cpu_features: Vec::new(),
                cpu_spec_id: None,
                bandwidth_basis: None,
                compute_basis: None,
                vulkan_matrix_cores: None,
            })
            .collect()
    }

    /// The devices a device string names (`4xh100-sxm`, `2xa100-80gb,1xl4`;
    /// names resolve as [`spec::lookup`] does, at most [`spec::MAX_DEVICES`]
    /// in all), with capacities, rates and scale-up domains from the spec
    /// database.
    ///
    /// ```
    /// use ai_hwaccel::plan::PlanDevice;
    /// let d = PlanDevice::from_device_string("16xh100-sxm")?;
    /// assert_eq!((d.len(), d[0].capacity_bytes), (16, Some(80 << 30)));
    /// assert_eq!((d[7].domain, d[8].domain), (0, 1)); // eight per NVLink board
    /// // An ambiguous name lists the entries it could mean.
    /// let e = PlanDevice::from_device_string("2xh100").unwrap_err();
    /// assert!(e.to_string().contains("h100-sxm, h100-pcie, h100-nvl"));
    /// # Ok::<(), ai_hwaccel::spec::SpecError>(())
    /// ```
    pub fn from_device_string(s: &str) -> Result<Vec<PlanDevice>, SpecError> {
        // Host-CPU tokens (`[N x]cpu:ID@SIZE`) first; the rest are
        // accelerators of the spec database.
        let mut host: Option<PlanDevice> = None;
        let mut accel: Vec<&str> = Vec::new();
        for token in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match cpu_token(token) {
                None => accel.push(token),
                Some(Err(e)) => return Err(e),
                Some(Ok(_)) if host.is_some() => {
                    return Err(SpecError::HostCpu {
                        token: token.to_string(),
                        reason: "a second host CPU (a device string names one host; its \
                                 sockets are the count, `2xcpu:ID@SIZE`)"
                            .into(),
                        suggestions: Vec::new(),
                    });
                }
                Some(Ok(d)) => host = Some(d),
            }
        }
        let mut out = if accel.is_empty() && host.is_some() {
            Vec::new()
        } else {
            Self::from_accelerator_string(&accel.join(","))?
        };
        if let Some(mut h) = host {
            h.domain = out.iter().map(|d| d.domain + 1).max().unwrap_or(0);
            out.insert(0, h);
        }
        Ok(out)
    }

    /// [`PlanDevice::from_device_string`] for accelerator tokens only.
    fn from_accelerator_string(s: &str) -> Result<Vec<PlanDevice>, SpecError> {
        let set = spec::parse_device_set(s)?;
        let mut out: Vec<PlanDevice> = Vec::new();
        for (count, entry) in set {
            let first_domain = out.iter().map(|d| d.domain + 1).max().unwrap_or(0);
            let ids_from = out
                .iter()
                .filter(|d| d.spec_id.as_deref() == Some(&entry.id))
                .count() as u32;
            out.extend(Self::from_entry(entry, count, first_domain, ids_from));
        }
        Ok(out)
    }

    /// A detected device: capacity from detection (the datasheet's when
    /// detection had none), rates from its spec entry. Devices of one host
    /// sharing a product form one domain. The capacity is what a runtime
    /// can see: the total less what the driver reserves where detection
    /// read that ([`MEMORY_RESERVED_KEY`]): CUDA reports an H100 80GB
    /// HBM3's 81559 MiB less its 479 MiB reserve, the 79.18 GiB vLLM logs
    /// (see `runtime::cuda_visible_bytes`), and an H200's 143771 MiB less
    /// 616 MiB (`torch.cuda.mem_get_info` on a lent H200, driver 580.159.04).
    pub fn from_device(d: &Device) -> PlanDevice {
        let entry = d.spec.as_ref().and_then(|s| spec::by_id(&s.id));
        let reserved = d
            .extra
            .get(MEMORY_RESERVED_KEY)
            .and_then(|v| v.parse::<u64>().ok());
        let visible = d
            .memory_bytes
            .map(|total| total.saturating_sub(reserved.filter(|&r| r < total).unwrap_or(0)));
        PlanDevice {
            id: d.id.clone(),
            name: d.name.clone(),
            spec_id: entry.map(|e| e.id.clone()),
            capacity_bytes: visible.or(entry.and_then(|e| e.memory_bytes)),
            bandwidth_bytes_per_s: entry.and_then(|e| e.memory_bandwidth_bytes_per_s),
            tflops: entry.map(|e| e.tflops.clone()).unwrap_or_default(),
            native_dtypes: entry.map(|e| e.native_dtypes.clone()),
            link: entry
                .and_then(|e| e.interconnect.as_ref())
                .map(|i| i.name.clone()),
            link_bandwidth_bytes_per_s: entry
                .and_then(|e| e.interconnect.as_ref())
                .and_then(|i| i.bandwidth_bytes_per_s),
            domain: 0,
            pcie_bandwidth_bytes_per_s: d
                .pci
                .as_ref()
                .and_then(|p| p.link.as_ref())
                .and_then(|l| l.usable_bandwidth_bytes_per_s())
                .or_else(|| entry.and_then(|e| e.pcie_bandwidth_bytes_per_s())),
            host: false,
            cpu_features: Vec::new(),
            cpu_spec_id: None,
            bandwidth_basis: None,
            compute_basis: None,
            machine: 0,
            vulkan_matrix_cores: VulkanMatrixCores::of_detected(
                d.extra
                    .get(crate::model::VULKAN_MATRIX_EXTENSIONS_KEY)
                    .map(String::as_str),
                &d.vendor,
                entry.and_then(|e| e.architecture.as_deref()),
                d.extra.get("vulkan_driver_id").map(String::as_str),
                d.extra.get("vulkan_device_type").map(String::as_str) == Some("integrated_gpu"),
            ),
        }
    }

    /// The host CPU of a registry as a planning device (what llama.cpp runs
    /// on without an accelerator): its memory is what this process may
    /// still allocate — `MemAvailable` of /proc/meminfo (the kernel's
    /// estimate of memory available for new work without swapping,
    /// Documentation/filesystems/proc.rst) within the cgroup limit
    /// ([`crate::model::MemoryInfo::usable_available_bytes`]).
    ///
    /// When the detected model name matches the CPU table
    /// ([`crate::spec::cpu::match_model_name`]), the bandwidth is the
    /// table's theoretical figure per socket × the detected sockets (1 when
    /// unknown), `bandwidth_basis` `"theoretical"`, and the peak rates are
    /// [`crate::spec::cpu::CpuSpec::peak_tflops`] of the cores this process
    /// may use ([`usable_cores`]). Otherwise both are `None` unless measured
    /// ([`crate::detect::measure_read_bandwidth`]), and the plan's speeds
    /// say so. `None` without an available CPU or a memory figure.
    pub fn host_cpu(r: &Registry) -> Option<PlanDevice> {
        let cpu = r
            .devices
            .iter()
            .find(|d| d.family == crate::model::Family::Cpu && d.available)?;
        let mem = &r.system.memory;
        let capacity = mem
            .usable_available_bytes
            .or(mem.available_bytes)
            .or(cpu.memory_free_bytes)?;
        let info = &r.system.cpu;
        let entry = info
            .model
            .as_deref()
            .and_then(crate::spec::cpu::match_model_name);
        let sockets = info.sockets.unwrap_or(1).max(1);
        // The table entry's figures over the cores this process may use;
        // else the core design CPUID names, at the clock detection read.
        let mut d = match entry {
            Some(e) => Self::from_cpu_entry(
                e,
                sockets,
                usable_cores(info, Some(e.cores)),
                Some(capacity),
            ),
            None => {
                let mut d = Self::host_base(Some(capacity));
                if let (Some(v), Some(f), Some(m), Some(mhz)) = (
                    info.vendor.as_deref(),
                    info.cpuid_family,
                    info.cpuid_model,
                    info.clock_mhz,
                ) && let Some(u) = crate::spec::cpu::microarchitecture_by_cpuid(v, f, m)
                {
                    let cores = usable_cores(info, None);
                    d.tflops = u.peak_tflops(cores, mhz / 1000.0);
                    d.compute_basis = (d.tflops != Tflops::default()).then(|| {
                        format!(
                            "core design {} (CPUID family {f}, model {m}): {cores} cores at \
                             {mhz:.0} MHz ({})",
                            u.id,
                            info.clock_source.as_deref().unwrap_or("detected clock")
                        )
                    });
                }
                d
            }
        };
        d.id = cpu.id.clone();
        d.name = cpu.name.clone();
        d.cpu_features = info.features.clone();
        Some(d)
    }

    /// A host CPU with nothing known of it but the memory it may use.
    fn host_base(capacity_bytes: Option<u64>) -> PlanDevice {
        PlanDevice {
            id: "cpu".into(),
            name: "cpu".into(),
            spec_id: None,
            capacity_bytes,
            bandwidth_bytes_per_s: None,
            tflops: Tflops::default(),
            native_dtypes: None,
            link: None,
            link_bandwidth_bytes_per_s: None,
            domain: 0,
            pcie_bandwidth_bytes_per_s: None,
            host: true,
            cpu_features: Vec::new(),
            cpu_spec_id: None,
            bandwidth_basis: None,
            compute_basis: None,
            machine: 0,
            vulkan_matrix_cores: None,
        }
    }

    /// A CPU of the CPU table as the host device, without detecting it:
    /// the entry's theoretical bandwidth × `sockets` (`bandwidth_basis`
    /// `"theoretical"`) and the peak rates of `cores` cores at its base
    /// clock; `capacity_bytes` is the memory the plan may use (the table
    /// has none: it depends on the DIMMs). Id `cpu`, the entry's name.
    pub fn from_cpu_entry(
        e: &crate::spec::cpu::CpuSpec,
        sockets: u32,
        cores: u32,
        capacity_bytes: Option<u64>,
    ) -> PlanDevice {
        let mut d = Self::host_base(capacity_bytes);
        d.name = e.name.clone();
        d.bandwidth_bytes_per_s =
            Some(e.memory_bandwidth_bytes_per_s() * u64::from(sockets.max(1)));
        d.bandwidth_basis = Some("theoretical".into());
        d.cpu_spec_id = Some(e.id.clone());
        d.tflops = e.peak_tflops(cores);
        d.compute_basis = (d.tflops != Tflops::default()).then(|| {
            format!(
                "CPU table entry {}: {cores} cores at its base clock {} GHz",
                e.id, e.base_clock_ghz
            )
        });
        d
    }

    /// Whether a device list holds a host CPU beside accelerators: what
    /// only llama.cpp's offload plans (the CLI and the JSON API refuse it
    /// otherwise).
    pub fn mixes_host_and_accelerators(devices: &[PlanDevice]) -> bool {
        devices.iter().any(|d| d.host) && devices.iter().any(|d| !d.host)
    }

    /// The host of an offload plan and the accelerators: the devices' own
    /// host CPU (a device string's `cpu:ID@SIZE`), else the host CPU of
    /// `registry` (called only then; the caller's registry, or this machine
    /// detected). The flag says the host came from `registry`, where a
    /// measurement of this machine may apply. `None` when the registry has
    /// no host memory figure.
    pub fn offload_host(
        devices: &[PlanDevice],
        registry: impl FnOnce() -> Registry,
    ) -> Option<(PlanDevice, Vec<PlanDevice>, bool)> {
        let gpus: Vec<PlanDevice> = devices.iter().filter(|d| !d.host).cloned().collect();
        match devices.iter().find(|d| d.host) {
            Some(h) => Some((h.clone(), gpus, false)),
            None => Self::host_cpu(&registry()).map(|h| (h, gpus, true)),
        }
    }

    /// [`PlanDevice::from_registry`], or the host CPU when the registry has
    /// no available accelerator.
    pub fn from_registry_or_host(r: &Registry) -> Vec<PlanDevice> {
        let accel = PlanDevice::from_registry(r);
        if accel.is_empty() {
            PlanDevice::host_cpu(r).into_iter().collect()
        } else {
            accel
        }
    }

    /// The available accelerators of a registry (partitions such as MIG
    /// instances included, their parents then excluded), with domains from
    /// the registry's interconnect graph ([`crate::topology::Topology`]).
    pub fn from_registry(r: &Registry) -> Vec<PlanDevice> {
        let accel: Vec<&Device> = r.available_accelerators().collect();
        let parents: std::collections::HashSet<&str> =
            accel.iter().filter_map(|d| d.parent.as_deref()).collect();
        let mut out: Vec<PlanDevice> = accel
            .into_iter()
            .filter(|d| !parents.contains(d.id.as_str()))
            .map(PlanDevice::from_device)
            .collect();
        // Tensor-parallel domains from the interconnect graph; a partition
        // sits in its parent's domain.
        let topo = crate::topology::Topology::from_registry(r);
        let by_id: std::collections::HashMap<&str, &Device> =
            r.devices.iter().map(|d| (d.id.as_str(), d)).collect();
        let fallback = topo.domains.len();
        for d in &mut out {
            let parent = by_id.get(d.id.as_str()).and_then(|x| x.parent.as_deref());
            let domain = topo
                .domain_of(&d.id)
                .or_else(|| parent.and_then(|p| topo.domain_of(p)));
            d.domain = domain.unwrap_or(fallback) as u32;
        }
        out
    }

    /// Peak rate for `dtype`, falling back from fp16 to bf16 and back (the
    /// same tensor-core rate on every GPU that has both).
    pub fn tflops_for(&self, dtype: Dtype) -> Option<f64> {
        self.tflops.rate(dtype).or(match dtype {
            Dtype::Fp16 => self.tflops.bf16,
            Dtype::Bf16 => self.tflops.fp16,
            _ => None,
        })
    }

    /// Whether two devices are interchangeable for a tensor-parallel group.
    pub fn same_kind(&self, other: &PlanDevice) -> bool {
        self.spec_id == other.spec_id
            && self.name == other.name
            && self.capacity_bytes == other.capacity_bytes
    }
}

/// A host-CPU token of a device string, `[N x]cpu:ID@SIZE`: the CPU-table
/// entry ID (an id, or a model name as /proc/cpuinfo prints it), N sockets
/// (1 without a count) and SIZE the memory the plan may use, `768g`,
/// `768gb` or `768gib` (GiB; `t`, `tb`, `tib`: TiB) — the table has no
/// memory size, which depends on the DIMMs. The device is
/// [`PlanDevice::from_cpu_entry`] with every core of every socket. `None`
/// when the token is not a `cpu:` token.
fn cpu_token(token: &str) -> Option<Result<PlanDevice, SpecError>> {
    let (count, rest) = match spec::split_count(token) {
        Some((n, rest)) => (n.parse::<u32>().ok(), rest),
        None => (Some(1), token),
    };
    let body = rest
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case("cpu:"))
        .map(|_| &rest[4..])?;
    let err = |reason: String, suggestions: Vec<String>| {
        Some(Err(SpecError::HostCpu {
            token: token.to_string(),
            reason,
            suggestions,
        }))
    };
    let sockets = match count {
        Some(n @ 1..=8) => n,
        _ => return err("the socket count must be 1 to 8".into(), Vec::new()),
    };
    let Some((id, size)) = body.rsplit_once('@') else {
        return err(
            "no memory size: the CPU table has none (it depends on the DIMMs); give the \
             memory the plan may use, e.g. cpu:epyc-9654@768g"
                .into(),
            Vec::new(),
        );
    };
    let Some(bytes) = parse_host_size(size) else {
        return err(
            format!("memory size {size:?} is not a size such as 512g or 1.5t (GiB, TiB)"),
            Vec::new(),
        );
    };
    let id = id.trim();
    let entry = crate::spec::cpu::by_id(&id.to_ascii_lowercase())
        .or_else(|| crate::spec::cpu::match_model_name(id));
    let Some(e) = entry else {
        let ids = crate::suggest::suggest(
            &id.to_ascii_lowercase(),
            crate::spec::cpu::all().iter().map(|e| e.id.as_str()),
        );
        return err(
            format!("{id:?} is no entry of the CPU table (`ai-hwaccel specs --cpu` lists them)"),
            ids.into_iter().map(str::to_string).collect(),
        );
    };
    let mut d = PlanDevice::from_cpu_entry(e, sockets, e.cores * sockets, Some(bytes));
    d.id = format!("cpu:{}", e.id);
    Some(Ok(d))
}

/// A memory size with its unit, read as [`crate::model::units::parse_size`]
/// reads the tools' sizes (`768g`, `768 GB`, `768GiB`, `1.5t`: powers of
/// 1024, as DIMM capacities are); `None` without a unit or outside 1 GiB to
/// 64 TiB.
fn parse_host_size(s: &str) -> Option<u64> {
    use crate::model::units::{Labels, parse_size};
    parse_size(s, None, Labels::Binary).filter(|b| ((1u64 << 30)..=(64u64 << 40)).contains(b))
}

/// The physical cores this process may run on: the detected physical
/// cores (else the logical CPUs, an upper bound, else the table's cores ×
/// sockets, else 1) scaled by the share of logical CPUs it may use
/// (affinity mask and cpuset: 8 usable of 192 logical on a 96-core part
/// with SMT are 4 cores), rounded up, at least 1 and at most the table's
/// cores × sockets where the CPU has a table entry (`cores_per_socket`).
/// A virtual machine shows only its own vCPUs, so a 4-vCPU slice of a
/// 96-core part gets the rates of at most 4 cores.
pub fn usable_cores(info: &crate::model::CpuInfo, cores_per_socket: Option<u32>) -> u32 {
    let total = cores_per_socket.map(|c| c.saturating_mul(info.sockets.unwrap_or(1).max(1)));
    let physical = info
        .physical_cores
        .or(info.logical_cpus)
        .or(total)
        .unwrap_or(1)
        .min(total.unwrap_or(u32::MAX))
        .max(1);
    match (info.usable_cpus, info.logical_cpus) {
        (Some(u), Some(l)) if l > 0 && u < l => (u64::from(physical) * u64::from(u))
            .div_ceil(u64::from(l))
            .max(1) as u32,
        _ => physical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_cores_follow_the_cpus_this_process_may_use() {
        let e = Some(crate::spec::cpu::by_id("epyc-9654").unwrap().cores);
        let info = |physical, logical, usable, sockets| crate::model::CpuInfo {
            physical_cores: physical,
            logical_cpus: logical,
            usable_cpus: usable,
            sockets,
            ..Default::default()
        };
        // Whole two-socket machine: 2 × 96.
        assert_eq!(
            usable_cores(&info(Some(192), Some(384), Some(384), Some(2)), e),
            192
        );
        // A cpuset of 8 of 192 logical CPUs (SMT): 96 × 8 ÷ 192 = 4 cores.
        assert_eq!(
            usable_cores(&info(Some(96), Some(192), Some(8), Some(1)), e),
            4
        );
        // A 4-vCPU VM without core ids: at most its 4 vCPUs.
        assert_eq!(usable_cores(&info(None, Some(4), Some(4), Some(1)), e), 4);
        // Nothing known: the table's cores of one socket.
        assert_eq!(usable_cores(&info(None, None, None, None), e), 96);
        // Never more than the table's cores × sockets.
        assert_eq!(usable_cores(&info(Some(500), None, None, Some(1)), e), 96);
        // Without a table entry: what was detected, or 1.
        assert_eq!(
            usable_cores(&info(Some(2), Some(2), Some(2), Some(1)), None),
            2
        );
        assert_eq!(
            usable_cores(&info(Some(96), Some(192), Some(8), Some(1)), None),
            4
        );
        assert_eq!(usable_cores(&info(None, None, None, None), None), 1);
    }

    /// `[N x]cpu:ID@SIZE`: a CPU-table CPU as the host device, by id or
    /// model name, its sockets' bandwidth and cores, the memory given;
    /// each way a token can be wrong is an error naming it.
    #[test]
    fn host_cpu_tokens() {
        let d = PlanDevice::from_device_string("cpu:epyc-9654@768g").unwrap();
        assert_eq!(d.len(), 1);
        let h = &d[0];
        assert!(h.host);
        assert_eq!(h.id, "cpu:epyc-9654");
        assert_eq!(h.cpu_spec_id.as_deref(), Some("epyc-9654"));
        assert_eq!(h.capacity_bytes, Some(768 << 30));
        assert_eq!(h.bandwidth_bytes_per_s, Some(460_800_000_000));
        assert_eq!(h.bandwidth_basis.as_deref(), Some("theoretical"));
        assert!((h.tflops.fp32.unwrap() - 96.0 * 2.4 * 32.0 / 1000.0).abs() < 1e-9);
        // Two sockets: both sockets' channels and cores; TiB sizes.
        let two = PlanDevice::from_device_string("2xcpu:EPYC-9654@1.5tib").unwrap();
        assert_eq!(two[0].bandwidth_bytes_per_s, Some(921_600_000_000));
        assert_eq!(two[0].capacity_bytes, Some(3 << 39));
        assert!((two[0].tflops.fp32.unwrap() - 192.0 * 2.4 * 32.0 / 1000.0).abs() < 1e-9);
        // A model name as /proc/cpuinfo prints it; with accelerators the
        // host comes first, in a domain of its own.
        let mix =
            PlanDevice::from_device_string("2xrtx-4090, cpu:AMD EPYC 9654 96-Core Processor@256gb")
                .unwrap();
        assert_eq!(mix.len(), 3);
        assert!(mix[0].host && !mix[1].host && !mix[2].host);
        assert_ne!(mix[0].domain, mix[1].domain);
        let err = |s: &str| PlanDevice::from_device_string(s).unwrap_err().to_string();
        assert!(err("cpu:epyc-9654").contains("no memory size"));
        assert!(err("cpu:epyc-9654@lots").contains("not a size"));
        assert!(err("cpu:epyc-9654@0.5g").contains("not a size"));
        assert!(err("cpu:epyc-9655@64g").contains("did you mean epyc-9654"));
        assert!(err("9xcpu:epyc-9654@64g").contains("1 to 8"));
        assert!(err("cpu:epyc-9654@64g,cpu:epyc-9454@64g").contains("second host CPU"));
        // Not a cpu token: the accelerator rules apply.
        assert!(err("cpux:epyc-9654@64g").contains("unknown device"));
    }

    proptest::proptest! {
        /// Hostile device strings around the host-CPU syntax: an error or
        /// devices, never a panic (multibyte text at the `cpu:` boundary,
        /// huge counts and sizes, stray `@`s and commas).
        #[test]
        fn cpu_tokens_never_panic(
            s in "([0-9]{0,12}[xX*]?)?(cpu|CPU|cpü|c)?:?[a-zé0-9 \\-]{0,16}(@[0-9.]{0,20}(g|gb|gib|t|tb|tib|x)?)?(,[0-9a-z:@ ]{0,12})?"
        ) {
            let _ = PlanDevice::from_device_string(&s);
        }
    }

    #[test]
    fn device_strings_make_domains() {
        let d = PlanDevice::from_device_string("16xh100-sxm").unwrap();
        assert_eq!(d.len(), 16);
        assert_eq!(d[0].domain, 0);
        assert_eq!(d[7].domain, 0);
        assert_eq!(d[8].domain, 1);
        assert_eq!(d[15].id, "h100-sxm#15");
        let d = PlanDevice::from_device_string("2xa100-80gb,1xl4").unwrap();
        assert_eq!(d.len(), 3);
        assert_ne!(d[0].domain, d[2].domain);
        assert!(d[0].capacity_bytes.unwrap() > d[2].capacity_bytes.unwrap());
        assert!(PlanDevice::from_device_string("0xh100-sxm").is_err());
    }
}
