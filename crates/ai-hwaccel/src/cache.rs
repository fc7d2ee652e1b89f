//! A detection cache that knows when it is stale.
//!
//! [`detect_cached`] (and `ai-hwaccel detect --cached`) reuses the registry
//! the last detection stored under `$XDG_CACHE_HOME/ai-hwaccel/` (else
//! `~/.cache/ai-hwaccel/`) as long as what detection depends on is
//! unchanged. That is the [`Fingerprint`], read fresh on every call (a few
//! dozen small sysfs reads, well under a millisecond):
//!
//! - the tool version and the options of the detection (root, tools,
//!   timeout, backends, families) — each set of options has its own file;
//! - the boot id (`/proc/sys/kernel/random/boot_id`): a reboot, a new kernel
//!   or new firmware always re-detects;
//! - every PCI function and the driver bound to it (`/sys/bus/pci/devices`);
//! - the DRM and accel device nodes (`/sys/class/drm`, `/sys/class/accel`),
//!   which cover platform GPUs and NPUs that are not on PCI;
//! - the versions of the accelerator drivers (`/sys/module/<driver>/version`
//!   for every bound PCI driver and the known accelerator modules, and
//!   `/proc/driver/nvidia/version`), so a driver upgrade without a reboot
//!   (a reloaded module) re-detects;
//! - every environment variable detection read (recorded while it ran: the
//!   device visibility variables such as `CUDA_VISIBLE_DEVICES`, `TPU_*`,
//!   `ZE_AFFINITY_MASK`), the visibility variables of
//!   the environment module's list (`VISIBILITY_VARS`), and `PATH` (which tools run).
//!
//! Values that change while the machine runs (free memory, temperature,
//! current PCIe link, error counters) are not refreshed: a registry served
//! from the cache carries [`CacheInfo`] with its age and the list of those
//! fields, so a caller knows they are as old as `age_seconds`.
//! [`CacheOptions::max_age`] bounds that age.
//!
//! The cache file is untrusted input: it is read through
//! [`crate::probe::cache_file`] (a plain file name inside the cache
//! directory, no symbolic link followed, at most [`MAX_CACHE_FILE_BYTES`]),
//! parsed and checked (format version, registry schema version, the whole
//! fingerprint); anything else is ignored with a debug log and detection
//! runs. Writes are atomic (temporary file + rename).
//!
//! Compared with the 1.2.0 crate's `CachedRegistry` / `DiskCachedRegistry`
//! (a time-to-live only): the same in-process `Arc` sharing and
//! `invalidate`, plus staleness from what the registry depends on rather
//! than the clock, a per-options file, the age and the stale fields in the
//! output, and a file that is validated and written atomically under a
//! unique temporary name.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::detect::{DetectOptions, detect_with};
use crate::model::{CacheInfo, Registry, SCHEMA_VERSION};
use crate::probe::{LiveProbe, Probe, ProbeError, ProbeExt, ProbeOptions, ToolOutput, cache_file};

/// Version of the cache file layout; a file of another version is ignored.
const CACHE_FORMAT: u32 = 1;

/// Largest cache file read (a registry of a large server is ~100 KiB).
pub const MAX_CACHE_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Most environment variable names taken from a cache file.
const MAX_ENV_NAMES: usize = 256;

/// Kernel modules of accelerator drivers whose `version` is part of the
/// fingerprint even when no PCI function is bound to them (yet).
const DRIVER_MODULES: &[&str] = &[
    "nvidia",
    "amdgpu",
    "i915",
    "xe",
    "habanalabs",
    "neuron",
    "qaic",
    "intel_vpu",
    "amdxdna",
    "tenstorrent",
    "xocl",
];

/// Fields of a registry whose values change while the machine runs.
pub const DYNAMIC_FIELDS: &[&str] = &[
    "devices[].memory_free_bytes",
    "devices[].temperature_celsius",
    "devices[].utilization_percent",
    "devices[].power_draw_watts",
    "devices[].ecc_uncorrected_errors",
    "devices[].pci.link.current_speed_gts",
    "devices[].pci.link.current_width",
    "system.memory.available_bytes",
    "system.memory.usable_available_bytes",
    "system.numa_nodes[].memory_free_bytes",
    "system.cgroup.memory_current_bytes",
    "system.network[].operstate",
    "system.network[].speed_bits_per_s",
];

/// How the cache is used. `Default`: the default directory, no age limit.
#[derive(Clone, Debug, Default)]
pub struct CacheOptions {
    /// Directory of the cache files; `None`: `$XDG_CACHE_HOME/ai-hwaccel`,
    /// else `~/.cache/ai-hwaccel` (no caching when neither is set).
    pub dir: Option<PathBuf>,
    /// Re-detect when the stored registry is older than this, even if
    /// nothing it depends on changed (bounds the age of dynamic values).
    pub max_age: Option<Duration>,
    /// Ignore the stored registry: detect, then store the result.
    pub refresh: bool,
}

/// What a stored registry depends on (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The tool that detected (`ai-hwaccel 0.1.0`).
    pub tool: String,
    /// The detection options, as text.
    pub options: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: Option<String>,
    /// PCI functions and their bound drivers.
    pub pci: Vec<(String, Option<String>)>,
    /// Entries of `/sys/class/drm` and `/sys/class/accel`.
    pub device_nodes: Vec<String>,
    /// Driver module versions and the NVIDIA procfs version line.
    pub driver_versions: Vec<(String, String)>,
    /// Environment variables detection reads, with their values.
    pub env: Vec<(String, Option<String>)>,
}

impl Fingerprint {
    /// Read the fingerprint through `probe`; `env_names` are the variables
    /// to include besides the visibility list and `PATH`.
    pub fn read(
        probe: &dyn Probe,
        probe_opts: &ProbeOptions,
        opts: &DetectOptions,
        env_names: &BTreeSet<String>,
    ) -> Fingerprint {
        let mut pci = Vec::new();
        let mut drivers: BTreeSet<String> = DRIVER_MODULES.iter().map(|s| s.to_string()).collect();
        for name in probe.list_or_empty("/sys/bus/pci/devices") {
            let driver = probe.link_name(&format!("/sys/bus/pci/devices/{name}/driver"));
            drivers.extend(driver.clone());
            pci.push((name, driver));
        }
        let mut device_nodes = Vec::new();
        for class in ["drm", "accel"] {
            for n in probe.list_or_empty(&format!("/sys/class/{class}")) {
                device_nodes.push(format!("{class}/{n}"));
            }
        }
        let mut driver_versions = Vec::new();
        for d in &drivers {
            if let Some(v) = probe.read_trimmed(&format!("/sys/module/{d}/version")) {
                driver_versions.push((d.clone(), v));
            }
        }
        if let Some(v) = probe.read_trimmed("/proc/driver/nvidia/version") {
            let first = v.lines().next().unwrap_or_default().to_string();
            driver_versions.push(("proc:nvidia".into(), first));
        }
        let mut names = env_names.clone();
        names.extend(
            crate::detect::VISIBILITY_VARS
                .iter()
                .map(|(n, _)| n.to_string()),
        );
        let env = names
            .into_iter()
            .map(|n| (n.clone(), probe.env(&n)))
            .collect();
        let mut env: Vec<(String, Option<String>)> = env;
        if probe_opts.tool_path.is_none() {
            let path = match &probe_opts.env {
                Some(e) => e.get("PATH").cloned(),
                None => std::env::var("PATH").ok(),
            };
            env.push(("<search PATH>".into(), path));
        }
        Fingerprint {
            tool: crate::model::Registry::default().generator,
            options: options_text(probe_opts, opts),
            boot_id: probe.read_trimmed("/proc/sys/kernel/random/boot_id"),
            pci,
            device_nodes,
            driver_versions,
            env,
        }
    }

    /// The first input that differs from `old`, in words; `None` when equal.
    pub fn changed_since(&self, old: &Fingerprint) -> Option<&'static str> {
        if self.tool != old.tool {
            Some("tool version changed")
        } else if self.options != old.options {
            Some("detection options changed")
        } else if self.boot_id != old.boot_id {
            Some("boot id changed")
        } else if self.pci != old.pci {
            Some("PCI functions or bound drivers changed")
        } else if self.device_nodes != old.device_nodes {
            Some("DRM or accel device nodes changed")
        } else if self.driver_versions != old.driver_versions {
            Some("driver version changed")
        } else if self.env != old.env {
            Some("environment (visibility variables or PATH) changed")
        } else {
            None
        }
    }
}

fn options_text(p: &ProbeOptions, o: &DetectOptions) -> String {
    format!(
        "root={:?} no_exec={} timeout={:?} output_cap={} tool_path={:?} env_given={} backends={:?} families={:?}",
        p.root,
        p.no_exec,
        p.timeout,
        p.output_cap,
        p.tool_path,
        p.env.is_some(),
        o.backends,
        o.families
    )
}

/// 64-bit FNV-1a: a stable short name for an options set.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The file one options set is cached in (inside the cache directory).
fn file_name(probe_opts: &ProbeOptions, opts: &DetectOptions) -> String {
    format!(
        "registry-{:016x}.json",
        fnv1a(&options_text(probe_opts, opts))
    )
}

/// The cache directory [`CacheOptions`] names.
pub fn cache_dir(cache: &CacheOptions) -> Option<PathBuf> {
    cache.dir.clone().or_else(cache_file::default_dir)
}

/// The stored form.
#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    cached_at_unix_ms: u64,
    /// Environment variable names detection read.
    env_names: BTreeSet<String>,
    fingerprint: Fingerprint,
    registry: Registry,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A probe that records the names of the environment variables read.
struct EnvTracking<'a> {
    inner: &'a dyn Probe,
    names: Mutex<BTreeSet<String>>,
}

impl Probe for EnvTracking<'_> {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.inner.read(path)
    }
    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError> {
        self.inner.list_dir(path)
    }
    fn read_link(&self, path: &str) -> Result<String, ProbeError> {
        self.inner.read_link(path)
    }
    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        self.inner.run(tool, args)
    }
    fn run_first_line(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        self.inner.run_first_line(tool, args)
    }
    fn env(&self, name: &str) -> Option<String> {
        if let Ok(mut n) = self.names.lock() {
            n.insert(name.to_string());
        }
        self.inner.env(name)
    }
    fn allows_native_libraries(&self) -> bool {
        self.inner.allows_native_libraries()
    }
    fn record_native(&self, library: &str, answer: &dyn Fn() -> Vec<u8>) {
        self.inner.record_native(library, answer);
    }
    fn native_answer(&self, library: &str) -> Option<Vec<u8>> {
        self.inner.native_answer(library)
    }
}

/// A stored registry that is still valid for `current`, or why not.
fn load(
    dir: &std::path::Path,
    name: &str,
    probe: &dyn Probe,
    probe_opts: &ProbeOptions,
    opts: &DetectOptions,
    cache: &CacheOptions,
) -> Result<(CacheFile, Fingerprint), String> {
    let bytes = cache_file::read(dir, name, MAX_CACHE_FILE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "no cached registry".to_string()
        } else {
            format!("cache file unreadable: {e}")
        }
    })?;
    let file: CacheFile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("cache file {name} is not a valid cache: {e}"))?;
    if file.format != CACHE_FORMAT {
        return Err(format!(
            "cache file format {} is not {CACHE_FORMAT}",
            file.format
        ));
    }
    if file.registry.schema_version != SCHEMA_VERSION {
        return Err("cached registry has another schema version".into());
    }
    if file.env_names.len() > MAX_ENV_NAMES {
        return Err("cache file names too many environment variables".into());
    }
    let now = Fingerprint::read(probe, probe_opts, opts, &file.env_names);
    if let Some(why) = now.changed_since(&file.fingerprint) {
        return Err(why.to_string());
    }
    let age_ms = now_ms().saturating_sub(file.cached_at_unix_ms);
    if cache
        .max_age
        .is_some_and(|max| Duration::from_millis(age_ms) > max)
    {
        return Err("older than the maximum age".into());
    }
    Ok((file, now))
}

fn info(hit: bool, cached_at_unix_ms: u64, stale_reason: Option<String>) -> CacheInfo {
    CacheInfo {
        hit,
        cached_at_unix_ms,
        age_seconds: now_ms().saturating_sub(cached_at_unix_ms) as f64 / 1e3,
        stale_reason,
        dynamic_fields: DYNAMIC_FIELDS.iter().map(|s| s.to_string()).collect(),
    }
}

/// Detect through `probe` and store the result with its fingerprint.
fn detect_and_store(
    probe: &dyn Probe,
    probe_opts: &ProbeOptions,
    opts: &DetectOptions,
    dir: Option<&std::path::Path>,
    name: &str,
    reason: String,
) -> Cached {
    let tracking = EnvTracking {
        inner: probe,
        names: Mutex::new(BTreeSet::new()),
    };
    let mut reg = detect_with(&tracking, opts);
    let env_names = tracking.names.into_inner().unwrap_or_default();
    let cached_at_unix_ms = now_ms();
    let fingerprint = Fingerprint::read(probe, probe_opts, opts, &env_names);
    let env_names_kept = env_names.clone();
    if let Some(dir) = dir {
        let file = CacheFile {
            format: CACHE_FORMAT,
            cached_at_unix_ms,
            env_names: env_names.clone(),
            fingerprint: fingerprint.clone(),
            registry: reg.clone(),
        };
        match serde_json::to_vec(&file) {
            Ok(bytes) => {
                if let Err(e) = cache_file::write_atomic(dir, name, &bytes) {
                    tracing::debug!(dir = %dir.display(), error = %e, "cannot store the registry cache");
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot serialize the registry cache"),
        }
    }
    reg.cache = Some(info(false, cached_at_unix_ms, Some(reason)));
    (reg, fingerprint, env_names_kept)
}

/// A registry with the fingerprint it is valid for and the environment
/// variable names that fingerprint covers.
type Cached = (Registry, Fingerprint, BTreeSet<String>);

fn cached(probe_opts: &ProbeOptions, opts: &DetectOptions, cache: &CacheOptions) -> Cached {
    let probe = LiveProbe::new(probe_opts.clone());
    let dir = cache_dir(cache);
    let name = file_name(probe_opts, opts);
    let reason = match (&dir, cache.refresh) {
        (_, true) => "refresh asked".to_string(),
        (None, _) => "no cache directory (neither XDG_CACHE_HOME nor HOME is set)".to_string(),
        (Some(d), false) => match load(d, &name, &probe, probe_opts, opts, cache) {
            Ok((file, fp)) => {
                let mut reg = file.registry;
                reg.cache = Some(info(true, file.cached_at_unix_ms, None));
                return (reg, fp, file.env_names);
            }
            Err(why) => {
                tracing::debug!(%why, "registry cache not used");
                why
            }
        },
    };
    detect_and_store(&probe, probe_opts, opts, dir.as_deref(), &name, reason)
}

/// The registry of the last detection with these options when nothing it
/// depends on changed (see the module doc); else detect and store.
/// `registry.cache` says which, how old the values are and why it re-detected.
pub fn detect_cached(
    probe_opts: &ProbeOptions,
    opts: &DetectOptions,
    cache: &CacheOptions,
) -> Registry {
    cached(probe_opts, opts, cache).0
}

/// What a [`CachedRegistry`] holds: the fingerprint, the environment
/// names it covers, and the registry handed out.
type InMemory = (Fingerprint, BTreeSet<String>, Arc<Registry>);

/// An in-process handle over the cache for callers that ask repeatedly
/// (a scheduler, a server): [`CachedRegistry::get`] checks the fingerprint
/// on every call and hands out the same `Arc` while it is unchanged, reading
/// the disk cache or detecting only when it changed.
pub struct CachedRegistry {
    probe: ProbeOptions,
    opts: DetectOptions,
    cache: CacheOptions,
    memory: Mutex<Option<InMemory>>,
}

impl std::fmt::Debug for CachedRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedRegistry")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl CachedRegistry {
    /// A handle for detections with these options.
    pub fn new(probe: ProbeOptions, opts: DetectOptions, cache: CacheOptions) -> Self {
        CachedRegistry {
            probe,
            opts,
            cache,
            memory: Mutex::new(None),
        }
    }

    /// The current registry: the one in memory while its fingerprint holds
    /// (and it is within `max_age`), else from the disk cache or a new detection.
    pub fn get(&self) -> Arc<Registry> {
        let mut mem = match self.memory.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                let mut g = poisoned.into_inner();
                *g = None;
                g
            }
        };
        if let Some((fp, env_names, reg)) = mem.as_ref() {
            let probe = LiveProbe::new(self.probe.clone());
            let now = Fingerprint::read(&probe, &self.probe, &self.opts, env_names);
            let young = reg.cache.as_ref().is_none_or(|c| {
                self.cache.max_age.is_none_or(|max| {
                    Duration::from_millis(now_ms().saturating_sub(c.cached_at_unix_ms)) <= max
                })
            });
            if now.changed_since(fp).is_none() && young {
                return Arc::clone(reg);
            }
        }
        let (reg, fp, names) = cached(&self.probe, &self.opts, &self.cache);
        let reg = Arc::new(reg);
        *mem = Some((fp, names, Arc::clone(&reg)));
        reg
    }

    /// Forget the registry in memory and remove the stored one.
    pub fn invalidate(&self) {
        if let Ok(mut m) = self.memory.lock() {
            *m = None;
        }
        if let Some(dir) = cache_dir(&self.cache) {
            let _ = cache_file::remove(&dir, &file_name(&self.probe, &self.opts));
        }
    }

    /// The file this handle stores its registry in (`None`: no cache directory).
    pub fn cache_path(&self) -> Option<PathBuf> {
        cache_dir(&self.cache).map(|d| d.join(file_name(&self.probe, &self.opts)))
    }
}
