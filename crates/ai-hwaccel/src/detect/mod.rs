//! Detection: a static table of backends, run in parallel over one probe,
//! merged into a [`Registry`].
//!
//! A backend is an entry of [`BACKENDS`]: an id, the device families it can
//! report, and a function from the shared [`Context`] to a [`BackendOutput`].
//! Backends never fail: problems become warnings. The PCI scan is shared
//! (computed once, on first use) so vendor backends join their facts to the
//! PCI device instead of probing sysfs again.

pub(crate) mod amd;
mod apple;
mod ascend;
mod asic;
mod cgroup;
mod cloud;
mod cpu;
mod environment;
mod formats;
mod fpga;
mod gate;
mod gaudi;
mod intel;
mod membw;
mod memory;
mod net;
mod neuron;
mod npu;
mod numa;
mod nvidia;
mod offload;
mod opencl;
mod pci;
pub mod pci_ids;
mod qaic;
mod storage;
pub mod sysfs;
mod system;
mod tpu;
mod vulkan;

use std::sync::OnceLock;
use std::time::Instant;

use crate::model::{BackendTiming, Device, Family, Registry, SystemInfo, Warning};
use crate::probe::{LiveProbe, Probe, ProbeOptions};

/// NVML library names tried on the live machine.
pub(crate) fn nvml_default_libraries() -> &'static [&'static str] {
    nvidia::nvml_default_libraries()
}

pub(crate) use nvidia::{NvmlEvent, NvmlEventWatcher};

/// Dynamic values of every NVIDIA GPU, from one NVML session (telemetry).
pub(crate) fn nvml_samples(
    libraries: &[&str],
) -> Result<Vec<crate::telemetry::DeviceSample>, String> {
    nvidia::nvml_samples(libraries)
}

/// The NVML samples a replayed snapshot recorded, when it recorded NVML's
/// answer (`None`: it did not; `Err`: the recording is unusable).
pub(crate) fn nvml_samples_recorded(
    probe: &dyn crate::probe::Probe,
) -> Option<Result<Vec<crate::telemetry::DeviceSample>, String>> {
    let bytes = probe.native_answer(nvidia::NVML_RECORD)?;
    Some(nvidia::nvml_samples_recorded(&bytes))
}

pub use apple::{SysctlFacts, parse_sysctl as parse_macos_sysctl};
pub use cgroup::parse_cgroup_paths;
pub use cpu::{CpuinfoFacts, parse_cpuinfo};
pub(crate) use environment::VISIBILITY_VARS;
pub use formats::{
    FORMATS, Format, MAX_DEVICES_PER_OUTPUT, MAX_WARNINGS_PER_OUTPUT, ParseOutput, format,
};
pub use membw::measure_read_bandwidth;
pub use memory::{Meminfo, parse_meminfo};
pub use net::{IbstatCa, IbstatPort, parse_ibstat, parse_net_speed, parse_port_state, parse_rate};
pub use pci::{PciDevice, PciScan};
pub use storage::{filesystem_of, model_cache_dir, model_cache_filesystem};

/// One detection backend. The discriminant is its bit in a [`BackendSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum BackendId {
    /// CPU, memory, NUMA and cgroup limits (procfs/sysfs); reports the CPU device.
    System = 0,
    /// Accelerators seen on the PCI bus (sysfs), whatever their driver.
    Pci = 1,
    /// AMD GPUs and Hygon DCUs: amdgpu sysfs, KFD topology, one amd-smi /
    /// rocm-smi / hy-smi run.
    Amd = 30,
    /// Intel GPUs: i915/xe sysfs, one `xpu-smi discovery -j` run.
    Intel = 31,
    /// NVIDIA GPUs and MIG instances (NVML, else nvidia-smi, else procfs).
    Nvidia = 2,
    /// Vulkan physical devices (`vulkaninfo`); CPU implementations become a note on the CPU.
    Vulkan = 20,
    /// OpenCL devices (`clinfo --raw`); CPU devices become a note on the CPU.
    OpenCl = 21,
    /// Intel Gaudi (habanalabs): PCI 0x1da3, sysfs, `hl-smi`.
    Gaudi = 22,
    /// AWS Inferentia/Trainium: PCI 0x1d0f, `/sys/class/neuron_device`, `neuron-ls`.
    Neuron = 23,
    /// Google TPU: PCI 0x1ae0, `/dev/accel*`, `TPU_*` environment, `tpu-info`.
    Tpu = 24,
    /// Huawei Ascend: PCI 0x19e5 Ascend ids, `/dev/davinci*`, `npu-smi info`.
    Ascend = 25,
    /// Qualcomm Cloud AI: PCI 0x17cb, `qaic` accel devices, `qaic-util -q`.
    Qaic = 26,
    /// Apple silicon GPU and Neural Engine: `system_profiler` + `sysctl` on macOS, device tree + asahi DRM on Linux.
    Apple = 27,
    /// Client NPUs: Intel NPU (`intel_vpu`) and AMD XDNA (`amdxdna`), by PCI id and `/sys/class/accel`.
    Npu = 28,
    /// Other AI ASICs: Tenstorrent (`/sys/class/tenstorrent`), Groq, Graphcore, … by PCI id.
    Asic = 29,
    /// FPGAs: Xilinx Alveo (xocl/xclmgmt, `xbutil examine`), Intel DFL (`fpgainfo fme`), `/sys/class/fpga_*`.
    Fpga = 32,
    /// Offload engines: Intel QuickAssist endpoints and NVIDIA BlueField DPUs.
    Offload = 33,
}

impl BackendId {
    /// The backend's name in JSON, warnings and `--backends`.
    pub fn name(self) -> &'static str {
        entry(self).name
    }
}

/// A set of backends.
///
/// The default set, [`BackendSet::all`], runs gated backends (those with a
/// [`BackendEntry::needed`] gate: Vulkan and OpenCL) only when their gate
/// says they can add facts. A set that names backends ([`BackendSet::parse`],
/// [`BackendSet::empty`] + [`BackendSet::with`]) asks for each of them, so
/// they run ungated; [`BackendSet::full`] runs every backend ungated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendSet(u64);

/// Bit of a [`BackendSet`] meaning "gated backends run only when needed"
/// (no [`BackendId`] uses it).
const GATED: u64 = 1 << 63;

impl BackendSet {
    /// Every backend; gated ones run only when they can add facts.
    pub fn all() -> Self {
        let named = BACKENDS.iter().fold(BackendSet(0), |s, e| s.with(e.id));
        BackendSet(named.0 | GATED)
    }

    /// Every backend, gated ones included whatever their gate says (`--full`).
    pub fn full() -> Self {
        BackendSet(Self::all().0 & !GATED)
    }

    /// No backend.
    pub fn empty() -> Self {
        BackendSet(0)
    }

    /// This set plus `id`.
    pub fn with(self, id: BackendId) -> Self {
        BackendSet(self.0 | 1 << id as u32)
    }

    /// This set without `id`.
    pub fn without(self, id: BackendId) -> Self {
        BackendSet(self.0 & !(1 << id as u32))
    }

    /// Whether `id` is in the set.
    pub fn contains(self, id: BackendId) -> bool {
        self.0 & (1 << id as u32) != 0
    }

    /// Whether gated backends in this set run only when their gate passes
    /// (true for [`BackendSet::all`] and sets derived from it).
    pub fn is_gated(self) -> bool {
        self.0 & GATED != 0
    }

    /// The names of the backends in the set, in table order.
    pub fn member_names(self) -> Vec<&'static str> {
        BACKENDS
            .iter()
            .filter(|e| self.contains(e.id))
            .map(|e| e.name)
            .collect()
    }

    /// Parse a comma-separated list of backend names ([`BackendSet::names`]).
    /// An empty list is an error: detection with no backend reports nothing,
    /// not even the CPU.
    ///
    /// ```
    /// use ai_hwaccel::{BackendId, BackendSet};
    /// let set = BackendSet::parse("system,nvidia").unwrap();
    /// assert!(set.contains(BackendId::Nvidia) && !set.contains(BackendId::Amd));
    /// assert!(BackendSet::parse("nvida").unwrap_err().contains("did you mean nvidia"));
    /// assert!(BackendSet::parse("").is_err());
    /// ```
    pub fn parse(list: &str) -> Result<Self, String> {
        let set = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(BackendSet::empty(), |set, name| {
                BACKENDS
                    .iter()
                    .find(|e| e.name == name)
                    .map(|e| set.with(e.id))
                    .ok_or_else(|| {
                        format!(
                            "unknown backend {name:?}{} (known: {})",
                            crate::suggest::hint(&crate::suggest::suggest(name, Self::names())),
                            Self::names().collect::<Vec<_>>().join(", ")
                        )
                    })
            })?;
        if set == BackendSet::empty() {
            return Err(format!(
                "empty backend list (name at least one of: {})",
                Self::names().collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(set)
    }

    /// Every backend's name, in detection order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        BACKENDS.iter().map(|e| e.name)
    }
}

impl Default for BackendSet {
    fn default() -> Self {
        BackendSet::all()
    }
}

/// What to detect. `Default` runs every backend and reports every family.
#[derive(Clone, Debug, Default)]
pub struct DetectOptions {
    /// Backends to run.
    pub backends: BackendSet,
    /// Report only these families (`None`: all). System facts are always filled.
    pub families: Option<Vec<Family>>,
}

impl DetectOptions {
    fn wants(&self, fams: &[Family]) -> bool {
        self.families
            .as_ref()
            .is_none_or(|want| fams.iter().any(|f| want.contains(f)))
    }
}

/// What a backend sees: the probe and the shared, lazily computed PCI scan.
pub struct Context<'a> {
    /// The machine.
    pub probe: &'a dyn Probe,
    pci: OnceLock<PciScan>,
}

impl<'a> Context<'a> {
    /// A context over `probe`.
    pub fn new(probe: &'a dyn Probe) -> Self {
        Context {
            probe,
            pci: OnceLock::new(),
        }
    }

    /// The PCI devices of the machine (scanned once, on first call).
    pub fn pci(&self) -> &PciScan {
        self.pci.get_or_init(|| pci::scan(self.probe))
    }
}

/// What one backend found.
#[derive(Debug, Default)]
pub struct BackendOutput {
    /// Devices found.
    pub devices: Vec<Device>,
    /// Host facts (only the system backend sets this).
    pub system: Option<SystemInfo>,
    /// Problems met, each naming the file, tool or field.
    pub warnings: Vec<String>,
}

/// An entry of the backend table.
pub struct BackendEntry {
    /// Which backend.
    pub id: BackendId,
    /// Its name.
    pub name: &'static str,
    /// Families it can report (used by `--family` to skip it).
    pub families: &'static [Family],
    /// Always run, whatever the family filter (it fills system facts).
    pub always: bool,
    /// A gate for backends that only add facts to what others found (the
    /// generic GPU APIs): evaluated after every ungated backend has run, on
    /// their devices; the backend runs when it returns true, or when the
    /// [`BackendSet`] names it. `None`: always runs (first phase).
    pub needed: Option<Gate>,
    /// The detector.
    pub run: fn(&Context) -> BackendOutput,
}

/// A backend's gate: the context and what the first phase found (each
/// backend with its devices), to whether the backend can add facts.
pub type Gate = fn(&Context, &[(BackendId, &[Device])]) -> bool;

/// Every backend, in merge priority order: a device reported by an earlier
/// entry wins over the same PCI device reported by a later one.
pub static BACKENDS: &[BackendEntry] = &[
    BackendEntry {
        id: BackendId::System,
        name: "system",
        families: &[Family::Cpu],
        always: true,
        needed: None,
        run: system::detect,
    },
    BackendEntry {
        id: BackendId::Amd,
        name: "amd",
        families: &[Family::Gpu],
        always: false,
        needed: None,
        run: amd::detect,
    },
    BackendEntry {
        id: BackendId::Intel,
        name: "intel",
        families: &[Family::Gpu],
        always: false,
        needed: None,
        run: intel::detect,
    },
    BackendEntry {
        id: BackendId::Nvidia,
        name: "nvidia",
        families: &[Family::Gpu],
        always: false,
        needed: None,
        run: nvidia::detect,
    },
    BackendEntry {
        id: BackendId::Gaudi,
        name: "gaudi",
        families: &[Family::AiAsic],
        always: false,
        needed: None,
        run: gaudi::detect,
    },
    BackendEntry {
        id: BackendId::Neuron,
        name: "neuron",
        families: &[Family::AiAsic],
        always: false,
        needed: None,
        run: neuron::detect,
    },
    BackendEntry {
        id: BackendId::Tpu,
        name: "tpu",
        families: &[Family::Tpu],
        always: false,
        needed: None,
        run: tpu::detect,
    },
    BackendEntry {
        id: BackendId::Ascend,
        name: "ascend",
        families: &[Family::AiAsic],
        always: false,
        needed: None,
        run: ascend::detect,
    },
    BackendEntry {
        id: BackendId::Qaic,
        name: "qaic",
        families: &[Family::AiAsic],
        always: false,
        needed: None,
        run: qaic::detect,
    },
    BackendEntry {
        id: BackendId::Apple,
        name: "apple",
        families: &[Family::Gpu, Family::Npu],
        always: false,
        needed: None,
        run: apple::detect,
    },
    BackendEntry {
        id: BackendId::Npu,
        name: "npu",
        families: &[Family::Npu],
        always: false,
        needed: None,
        run: npu::detect,
    },
    BackendEntry {
        id: BackendId::Asic,
        name: "asic",
        families: &[Family::AiAsic],
        always: false,
        needed: None,
        run: asic::detect,
    },
    BackendEntry {
        id: BackendId::Fpga,
        name: "fpga",
        families: &[Family::Fpga],
        always: false,
        needed: None,
        run: fpga::detect,
    },
    BackendEntry {
        id: BackendId::Offload,
        name: "offload",
        families: &[Family::Offload],
        always: false,
        needed: None,
        run: offload::detect,
    },
    BackendEntry {
        id: BackendId::Vulkan,
        name: "vulkan",
        families: &[Family::Gpu, Family::Cpu],
        always: false,
        needed: Some(gate::gpu_api_can_add_facts),
        run: vulkan::detect,
    },
    BackendEntry {
        id: BackendId::OpenCl,
        name: "opencl",
        families: &[Family::Gpu, Family::AiAsic, Family::Fpga, Family::Cpu],
        always: false,
        needed: Some(gate::gpu_api_can_add_facts),
        run: opencl::detect,
    },
    BackendEntry {
        id: BackendId::Pci,
        name: "pci",
        families: &[
            Family::Gpu,
            Family::Npu,
            Family::Tpu,
            Family::AiAsic,
            Family::Fpga,
            Family::Offload,
        ],
        always: false,
        needed: None,
        run: pci::detect,
    },
];

fn entry(id: BackendId) -> &'static BackendEntry {
    BACKENDS
        .iter()
        .find(|e| e.id == id)
        .expect("every BackendId has a table entry")
}

/// Detect on the live machine (or the root/tools the options name).
///
/// ```no_run
/// use ai_hwaccel::{BackendSet, DetectOptions, Family, ProbeOptions, detect};
/// use std::time::Duration;
/// // Only GPUs, through the NVIDIA and AMD backends, tools killed after 2 s.
/// let probe = ProbeOptions { timeout: Duration::from_secs(2), ..ProbeOptions::default() };
/// let opts = DetectOptions {
///     backends: BackendSet::parse("system,pci,nvidia,amd").unwrap(),
///     families: Some(vec![Family::Gpu]),
/// };
/// let registry = detect(&probe, &opts);
/// for w in &registry.warnings {
///     eprintln!("[{}] {}", w.backend, w.message);
/// }
/// ```
pub fn detect(probe: &ProbeOptions, opts: &DetectOptions) -> Registry {
    // One deadline for every tool run: the whole detection ends within the
    // timeout plus a small constant, however many tools run in sequence.
    let deadline = Instant::now() + probe.timeout;
    detect_with(&LiveProbe::new(probe.clone()).with_deadline(deadline), opts)
}

impl Registry {
    /// Detect on this machine with the defaults: every backend, every
    /// family, tools on `PATH` with a 5 s timeout. The same as
    /// `detect(&ProbeOptions::default(), &DetectOptions::default())`.
    ///
    /// ```no_run
    /// let registry = ai_hwaccel::Registry::detect();
    /// match registry.best_accelerator() {
    ///     Some(d) => println!("best: {} ({:?} bytes)", d.name, d.memory_bytes),
    ///     None => println!("no accelerator"),
    /// }
    /// ```
    pub fn detect() -> Registry {
        detect(&ProbeOptions::default(), &DetectOptions::default())
    }
}

/// Detect through any probe (live, fake root, replay, recording).
///
/// ```
/// use ai_hwaccel::{DetectOptions, LiveProbe, ProbeOptions, detect_with};
/// // A fake root: read files under a directory, run no tools.
/// let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
///     .join("tests/fixtures/roots/two-socket-pci");
/// let probe = LiveProbe::new(ProbeOptions { root, no_exec: true, ..ProbeOptions::default() });
/// let registry = detect_with(&probe, &DetectOptions::default());
/// assert_eq!(registry.devices[0].id, "cpu");
/// ```
pub fn detect_with(probe: &dyn Probe, opts: &DetectOptions) -> Registry {
    let start = Instant::now();
    let ctx = Context::new(probe);
    let selected: Vec<&BackendEntry> = BACKENDS
        .iter()
        .filter(|e| opts.backends.contains(e.id) && (e.always || opts.wants(e.families)))
        .collect();
    let (first, gated): (Vec<&BackendEntry>, Vec<&BackendEntry>) = selected
        .iter()
        .partition(|e| e.needed.is_none() || !opts.backends.is_gated());

    let mut results = run_parallel(&ctx, &first);
    if !gated.is_empty() {
        let found: Vec<(BackendId, &[Device])> = results
            .iter()
            .map(|(e, out, _)| (e.id, out.devices.as_slice()))
            .collect();
        let second: Vec<&BackendEntry> = gated
            .into_iter()
            .filter(|e| {
                let run = e.needed.is_some_and(|gate| gate(&ctx, &found));
                if !run {
                    tracing::debug!(backend = e.name, "skipped: cannot add facts here");
                }
                run
            })
            .collect();
        results.extend(run_parallel(&ctx, &second));
        // Merge priority is table order, whichever phase ran a backend.
        results.sort_by_key(|(e, _, _)| BACKENDS.iter().position(|x| x.id == e.id));
    }

    let mut reg = Registry::default();
    let mut devices: Vec<Device> = Vec::new();
    for (e, mut out, ms) in results {
        reg.timings.push(BackendTiming {
            backend: e.name.to_string(),
            millis: ms,
        });
        // Values no hardware can have become None with a warning.
        crate::model::plausible::check_devices(&mut out.devices, &mut out.warnings);
        if let Some(sys) = out.system.as_mut() {
            crate::model::plausible::check_system(sys, &mut out.warnings);
        }
        if let Some(sys) = out.system {
            reg.system = sys;
        }
        // One backend's share of the report is bounded like one output's.
        formats::cap_records(&mut out.devices, e.name, &mut out.warnings);
        formats::cap_warnings(&mut out.warnings, e.name);
        reg.warnings
            .extend(out.warnings.into_iter().map(|message| Warning {
                backend: e.name.to_string(),
                message,
            }));
        merge_devices(&mut devices, out.devices);
    }
    // Reads refused for what was at the path (FIFOs, devices, oversized
    // files): their callers often treat any failure as "absent", so say it here.
    reg.warnings
        .extend(probe.refusals().into_iter().map(|message| Warning {
            backend: "probe".to_string(),
            message,
        }));
    if let Some(want) = &opts.families {
        devices.retain(|d| want.contains(&d.family));
    }
    crate::spec::attach(&mut devices);
    devices.sort_by(|a, b| (a.family, a.pci_address, &a.id).cmp(&(b.family, b.pci_address, &b.id)));
    reg.devices = devices;
    reg.refresh_summary();
    reg.total_millis = start.elapsed().as_secs_f64() * 1e3;
    reg
}

/// Run `entries` in parallel (scoped threads) over `ctx`, each with its time.
fn run_parallel<'e>(
    ctx: &Context,
    entries: &[&'e BackendEntry],
) -> Vec<(&'e BackendEntry, BackendOutput, f64)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = entries
            .iter()
            .map(|&e| {
                let h = s.spawn(move || {
                    let t = Instant::now();
                    let out = (e.run)(ctx);
                    (out, t.elapsed().as_secs_f64() * 1e3)
                });
                (e, h)
            })
            .collect();
        handles
            .into_iter()
            .map(|(e, h)| match h.join() {
                Ok((out, ms)) => (e, out, ms),
                Err(_) => {
                    let out = BackendOutput {
                        warnings: vec!["backend panicked; its devices are missing".to_string()],
                        ..Default::default()
                    };
                    (e, out, 0.0)
                }
            })
            .collect()
    })
}

/// Add `new` devices (from a lower-priority backend) to `devices`: a new
/// device at a PCI address already reported only fills in what the earlier
/// reports did not know, and is not listed again. Partitions (devices with a
/// `parent`) share their parent's PCI address but are distinct devices: they
/// only merge with a partition of the same id.
fn merge_devices(devices: &mut Vec<Device>, new: Vec<Device>) {
    for d in new {
        let same: Vec<usize> = match (d.pci_address, &d.parent) {
            (Some(a), None) => devices
                .iter()
                .enumerate()
                .filter(|(_, x)| x.pci_address == Some(a) && x.parent.is_none())
                .map(|(i, _)| i)
                .collect(),
            _ => devices
                .iter()
                .position(|x| x.id == d.id)
                .into_iter()
                .collect(),
        };
        if same.is_empty() {
            devices.push(d);
        } else {
            for i in same {
                devices[i].fill_from(&d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(id: &str, addr: Option<&str>, parent: Option<&str>, source: &str) -> Device {
        let mut d = Device::new(id, id, "nvidia", Family::Gpu, source);
        d.pci_address = addr.map(|a| a.parse().unwrap());
        d.parent = parent.map(str::to_string);
        d
    }

    #[test]
    fn merge_by_pci_address_keeps_partitions_apart() {
        let a = "0000:3b:00.0";
        let mut devices = vec![
            dev("pci:0000:3b:00.0", Some(a), None, "nvml"),
            dev(
                "pci:0000:3b:00.0/mig-1",
                Some(a),
                Some("pci:0000:3b:00.0"),
                "nvml",
            ),
        ];
        let mut from_pci = dev("pci:0000:3b:00.0", Some(a), None, "pci-sysfs");
        from_pci.numa_node = Some(1);
        from_pci.driver = Some("nvidia".into());
        merge_devices(
            &mut devices,
            vec![
                from_pci,
                dev("pci:0000:5e:00.0", Some("0000:5e:00.0"), None, "pci-sysfs"),
            ],
        );
        assert_eq!(devices.len(), 3);
        assert_eq!(devices[0].numa_node, Some(1));
        assert_eq!(devices[0].source, "nvml+pci-sysfs");
        assert_eq!(
            devices[1].numa_node, None,
            "a partition is not the PCI device"
        );
        assert_eq!(devices[2].id, "pci:0000:5e:00.0");
    }
}
