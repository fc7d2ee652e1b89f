//! The registry: everything one detection found, its warnings and timings,
//! queries over the devices, and the versioned JSON form.

use serde::{Deserialize, Serialize};

use super::{Device, Family, SystemInfo};

/// Major version of the JSON form. Readers refuse a newer major version and
/// ignore fields they do not know, so minor additions keep this number.
pub const SCHEMA_VERSION: u32 = 1;

/// A problem one backend met; detection went on without that fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Warning {
    /// The backend (or stage) that met the problem.
    pub backend: String,
    /// What went wrong, naming the file, tool or field.
    pub message: String,
}

/// How long one backend took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackendTiming {
    /// Backend name.
    pub backend: String,
    /// Wall-clock milliseconds.
    pub millis: f64,
}

/// Totals over the available accelerators (the CPU and offload engines never count).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// At least one available device is an accelerator.
    pub has_accelerator: bool,
    /// How many available accelerators there are.
    pub accelerator_count: u64,
    /// Their memory summed; `null` when the memory of any of them is
    /// unknown (the total is then unknown: see the two fields below). 0
    /// only when there is no accelerator. Devices that use the host's memory
    /// (`Device::shared_memory`) share one pool, counted once: the largest of
    /// their `memory_bytes`; one of them without a size of its own (a Neural
    /// Engine) is in that pool, not of unknown memory.
    pub accelerator_memory_bytes: Option<u64>,
    /// How many of them have unknown memory.
    #[serde(default)]
    pub accelerator_memory_unknown_count: u64,
    /// The memory of those whose memory is known, summed (a shared pool
    /// once): a lower bound of
    /// the total when `accelerator_memory_unknown_count` is not 0.
    #[serde(default)]
    pub accelerator_memory_known_bytes: u64,
}

impl Default for Summary {
    /// The summary of no devices: no accelerator, 0 bytes (known).
    fn default() -> Self {
        Summary {
            has_accelerator: false,
            accelerator_count: 0,
            accelerator_memory_bytes: Some(0),
            accelerator_memory_unknown_count: 0,
            accelerator_memory_known_bytes: 0,
        }
    }
}

/// What a caller needs from a device; every field set must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirement {
    /// At least this much device memory (unknown memory never satisfies it).
    pub min_memory_bytes: Option<u64>,
    /// Only this family.
    pub family: Option<Family>,
    /// Only this vendor (lowercase).
    pub vendor: Option<String>,
    /// Only accelerators (not the CPU, not offload engines).
    pub accelerator_only: bool,
    /// Only devices whose datasheet entry (the attached `spec`) says the
    /// hardware executes this data type natively. A device with no matched
    /// spec never satisfies it: unknown is not "yes".
    pub dtype: Option<crate::spec::Dtype>,
}

impl Requirement {
    /// Whether `d` is available and meets every constraint.
    pub fn matches(&self, d: &Device) -> bool {
        d.available
            && self
                .min_memory_bytes
                .is_none_or(|m| d.memory_bytes.is_some_and(|b| b >= m))
            && self.family.is_none_or(|f| d.family == f)
            && self.vendor.as_deref().is_none_or(|v| d.vendor == v)
            && (!self.accelerator_only || d.is_accelerator())
            && self.dtype.is_none_or(|t| {
                d.spec
                    .as_ref()
                    .and_then(|s| crate::spec::by_id(&s.id))
                    .is_some_and(|e| e.native_dtypes.contains(&t))
            })
    }
}

/// Errors reading a registry from JSON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The text is not valid JSON for a registry; `path` names the field.
    #[error("malformed registry JSON at {path} (line {line}, column {column}): {message}")]
    Malformed {
        /// JSON path of the offending field (`devices[0].memory_bytes`), `.` for the document.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde found wrong.
        message: String,
    },
    /// `schema_version` is absent or not an integer.
    #[error("registry JSON has no integer `schema_version`")]
    MissingVersion,
    /// Written by a newer major version of this tool.
    #[error(
        "registry JSON has schema_version {found}, newer than {supported} which this build reads; upgrade ai-hwaccel"
    )]
    NewerVersion {
        /// The version in the document.
        found: u64,
        /// The version this build supports.
        supported: u32,
    },
}

/// Everything one detection found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Registry {
    /// Major version of this JSON form ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it (`ai-hwaccel 0.1.0`).
    #[serde(default)]
    pub generator: String,
    /// Every device found, the CPU first, then accelerators by PCI address.
    pub devices: Vec<Device>,
    /// Host facts.
    pub system: SystemInfo,
    /// Problems met on the way; each names its backend.
    pub warnings: Vec<Warning>,
    /// Totals over available accelerators.
    pub summary: Summary,
    /// Per-backend wall-clock time.
    #[serde(default)]
    pub timings: Vec<BackendTiming>,
    /// Wall-clock time of the whole detection in milliseconds.
    #[serde(default)]
    pub total_millis: f64,
    /// Set when the registry came from the detection cache
    /// (`detect --cached`, `ai_hwaccel::cache`): when it was detected, how
    /// old it is, and which values are as old as that. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheInfo>,
}

/// Where a cached registry came from and how old its values are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheInfo {
    /// Whether this registry was read from the cache (`false`: it was just
    /// detected, because the cache was missing or stale, and stored).
    pub hit: bool,
    /// When the registry was detected, in milliseconds since the Unix epoch.
    pub cached_at_unix_ms: u64,
    /// Seconds between that detection and the moment the cache was read.
    pub age_seconds: f64,
    /// Why detection ran again (`boot id changed`, `PCI functions or bound
    /// drivers changed`, …); absent on a hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_reason: Option<String>,
    /// Fields whose values change while the machine runs (free memory,
    /// temperature, current PCIe link, error counters): on a hit they are
    /// as old as `age_seconds`, not current. JSON paths with `[]` for
    /// every element (`devices[].memory_free_bytes`).
    pub dynamic_fields: Vec<String>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            schema_version: SCHEMA_VERSION,
            generator: concat!("ai-hwaccel ", env!("CARGO_PKG_VERSION")).to_string(),
            devices: Vec::new(),
            system: SystemInfo::default(),
            warnings: Vec::new(),
            summary: Summary::default(),
            timings: Vec::new(),
            total_millis: 0.0,
            cache: None,
        }
    }
}

impl Registry {
    /// Recompute [`Summary`] from the devices.
    pub fn refresh_summary(&mut self) {
        let acc: Vec<&Device> = self.available_accelerators().collect();
        let known = memory_counted_once(acc.iter().copied());
        let unknown = acc
            .iter()
            .filter(|d| d.memory_bytes.is_none() && d.shared_memory.is_none())
            .count() as u64;
        self.summary = Summary {
            has_accelerator: !acc.is_empty(),
            accelerator_count: acc.len() as u64,
            accelerator_memory_bytes: (unknown == 0).then_some(known),
            accelerator_memory_unknown_count: unknown,
            accelerator_memory_known_bytes: known,
        };
    }

    /// Devices this process can use.
    pub fn available(&self) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(|d| d.available)
    }

    /// Available accelerators (not the CPU, not offload engines).
    pub fn available_accelerators(&self) -> impl Iterator<Item = &Device> {
        self.available().filter(|d| d.is_accelerator())
    }

    /// Devices of one family, available or not.
    pub fn by_family(&self, family: Family) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(move |d| d.family == family)
    }

    /// Available devices that meet `req`.
    pub fn satisfying<'a>(&'a self, req: &'a Requirement) -> impl Iterator<Item = &'a Device> + 'a {
        self.devices.iter().filter(move |d| req.matches(d))
    }

    /// The device with id `id`.
    pub fn device(&self, id: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    /// Whether at least one available accelerator exists.
    pub fn has_accelerator(&self) -> bool {
        self.available_accelerators().next().is_some()
    }

    /// Memory of all available accelerators summed (unknown memory adds
    /// nothing, so this is a lower bound; [`Summary::accelerator_memory_bytes`]
    /// is `None` when any is unknown; the host memory that several devices
    /// share counts once).
    pub fn total_accelerator_memory_bytes(&self) -> u64 {
        memory_counted_once(self.available_accelerators())
    }

    /// The available accelerator with the most memory (known memory beats
    /// unknown), then the lowest id; `None` when there is no accelerator —
    /// never the CPU or an offload engine. Partitions (MIG instances) count
    /// as accelerators of their own size. A device with memory of its own
    /// beats one that borrows host memory ([`Device::shared_memory`]: an
    /// APU's GTT, an iGPU), whatever their sizes: an APU's share of 64 GB of
    /// system RAM is larger than a laptop GPU's 8 GB of VRAM, but the
    /// discrete GPU is the one frameworks run on (PyTorch's `cuda:0`) and the
    /// faster one. Machines with only shared-memory devices (Apple, Jetson,
    /// GB10, Strix Halo) still get theirs.
    ///
    /// ```
    /// use ai_hwaccel::{Device, Family, Registry};
    /// let mut r = Registry::default();
    /// r.devices.push(Device::new("cpu", "x86", "intel", Family::Cpu, "cpu"));
    /// assert!(r.best_accelerator().is_none());
    /// let mut gpu = Device::new("gpu0", "NVIDIA H100 80GB HBM3", "nvidia", Family::Gpu, "nvml");
    /// gpu.memory_bytes = Some(80 << 30);
    /// r.devices.push(gpu);
    /// assert_eq!(r.best_accelerator().unwrap().id, "gpu0");
    /// ```
    pub fn best_accelerator(&self) -> Option<&Device> {
        self.available_accelerators().max_by(|a, b| {
            let own = |d: &Device| d.shared_memory.is_none();
            own(a)
                .cmp(&own(b))
                .then_with(|| a.memory_bytes.cmp(&b.memory_bytes))
                .then_with(|| b.id.cmp(&a.id))
        })
    }

    /// The device to run on: [`Registry::best_accelerator`], or the CPU when
    /// there is no accelerator (the CPU is where work then runs). Use
    /// `best_accelerator` to ask whether there is an accelerator at all.
    #[deprecated(
        since = "0.1.0",
        note = "returns the CPU when there is no accelerator; use `best_accelerator()` (or `best_device()` to fall back to the CPU explicitly)"
    )]
    pub fn best(&self) -> Option<&Device> {
        self.best_device()
    }

    /// [`Registry::best_accelerator`], falling back to the available CPU
    /// device when there is no accelerator.
    pub fn best_device(&self) -> Option<&Device> {
        self.best_accelerator()
            .or_else(|| self.by_family(Family::Cpu).find(|d| d.available))
    }

    /// The registry without timing figures, for comparing two detections of the same machine.
    pub fn without_timings(&self) -> Registry {
        Registry {
            timings: Vec::new(),
            total_millis: 0.0,
            ..self.clone()
        }
    }

    /// Pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a registry always serializes")
    }

    /// Read a registry written by this or an older tool of the same major version.
    /// Unknown fields are ignored; errors name the field, line and column.
    ///
    /// ```
    /// use ai_hwaccel::Registry;
    /// let saved = Registry::default().to_json_pretty(); // or a `detect --json` file
    /// let r = Registry::from_json(&saved)?;
    /// assert!(r.best_accelerator().is_none());
    /// let bad = saved.replace("\"devices\": []", "\"devices\": 3");
    /// let e = Registry::from_json(&bad).unwrap_err();
    /// assert!(e.to_string().contains("devices"), "{e}");
    /// # Ok::<(), ai_hwaccel::model::RegistryError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Registry, RegistryError> {
        let text = crate::model::text::strip_bom(text);
        #[derive(Deserialize)]
        struct Head {
            schema_version: Option<serde_json::Value>,
        }
        let head: Head = serde_json::from_str(text).map_err(|e| malformed(String::from("."), e))?;
        let found = head
            .schema_version
            .and_then(|v| v.as_u64())
            .ok_or(RegistryError::MissingVersion)?;
        if found > u64::from(SCHEMA_VERSION) {
            return Err(RegistryError::NewerVersion {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let mut reg: Registry = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            malformed(path, e.into_inner())
        })?;
        // A saved registry is untrusted input like a tool output: the same
        // plausibility pass `detect` runs, its warnings under `registry`.
        let mut w = Vec::new();
        super::plausible::check_devices(&mut reg.devices, &mut w);
        super::plausible::check_system(&mut reg.system, &mut w);
        if !w.is_empty() {
            reg.warnings.extend(w.into_iter().map(|message| Warning {
                backend: "registry".to_string(),
                message,
            }));
            reg.refresh_summary();
        }
        Ok(reg)
    }

    /// The JSON Schema of the registry form, generated from the types.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Registry)).expect("schema serializes")
    }
}

fn malformed(path: String, e: serde_json::Error) -> RegistryError {
    RegistryError::Malformed {
        path,
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

/// Memory of `devices` summed: dedicated memory per device, plus the host
/// pool that shared-memory devices draw on, once (the largest share any of
/// them can use: the pool is one, whichever device uses it).
fn memory_counted_once<'a>(devices: impl Iterator<Item = &'a Device>) -> u64 {
    let (mut dedicated, mut shared) = (0u64, 0u64);
    for d in devices {
        let Some(m) = d.memory_bytes else { continue };
        if d.shared_memory.is_some() {
            shared = shared.max(m);
        } else {
            dedicated = dedicated.saturating_add(m);
        }
    }
    dedicated.saturating_add(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(id: &str, mem: Option<u64>, available: bool) -> Device {
        let mut d = Device::new(id, id, "nvidia", Family::Gpu, "test");
        d.memory_bytes = mem;
        d.available = available;
        d
    }

    fn sample() -> Registry {
        let mut r = Registry::default();
        let mut cpu = Device::new("cpu", "cpu", "amd", Family::Cpu, "test");
        cpu.memory_bytes = Some(1 << 40);
        r.devices = vec![
            cpu,
            gpu("pci:0000:01:00.0", Some(80 << 30), true),
            gpu("pci:0000:02:00.0", Some(40 << 30), true),
            gpu("pci:0000:03:00.0", None, true),
            gpu("pci:0000:04:00.0", Some(96 << 30), false),
        ];
        r.refresh_summary();
        r
    }

    #[test]
    fn summary_counts_available_accelerators_only() {
        let r = sample();
        assert_eq!(r.summary.accelerator_count, 3);
        // One of the three has unknown memory: the total is unknown, not 120 GiB.
        assert_eq!(r.summary.accelerator_memory_bytes, None);
        assert_eq!(r.summary.accelerator_memory_unknown_count, 1);
        assert_eq!(r.summary.accelerator_memory_known_bytes, 120 << 30);
        assert!(r.summary.has_accelerator);
        assert_eq!(r.best_accelerator().unwrap().id, "pci:0000:01:00.0");
        let mut all_known = r.clone();
        all_known.devices.retain(|d| d.memory_bytes.is_some());
        all_known.refresh_summary();
        assert_eq!(all_known.summary.accelerator_memory_bytes, Some(120 << 30));
        let req = Requirement {
            min_memory_bytes: Some(48 << 30),
            accelerator_only: true,
            ..Default::default()
        };
        let ids: Vec<_> = r.satisfying(&req).map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["pci:0000:01:00.0"]);
    }

    #[test]
    fn dtype_requirement_uses_the_datasheet() {
        use crate::spec::{Dtype, by_id};
        let mut r = sample();
        r.devices[1].spec = Some(by_id("h100-sxm").unwrap().to_ref());
        r.devices[2].spec = Some(by_id("a100-40gb").unwrap().to_ref());
        let fp8 = Requirement {
            dtype: Some(Dtype::Fp8),
            ..Default::default()
        };
        let ids: Vec<_> = r.satisfying(&fp8).map(|d| d.id.as_str()).collect();
        assert_eq!(
            ids,
            ["pci:0000:01:00.0"],
            "A100 has no native fp8; unknown spec never matches"
        );
        let bf16 = Requirement {
            dtype: Some(Dtype::Bf16),
            ..Default::default()
        };
        assert_eq!(r.satisfying(&bf16).count(), 2);
    }

    #[test]
    fn a_discrete_gpu_beats_an_apu_with_more_shared_memory() {
        use crate::model::SharedMemory;
        let mut r = Registry::default();
        let mut apu = Device::new("apu", "AMD Radeon 780M", "amd", Family::Gpu, "sysfs");
        apu.memory_bytes = Some(32 << 30);
        apu.shared_memory = Some(SharedMemory {
            pool_bytes: Some(64 << 30),
            device_limit_bytes: Some(32 << 30),
            source: "GTT".into(),
        });
        let mut dgpu = Device::new(
            "dgpu",
            "NVIDIA GeForce RTX 4070 Laptop GPU",
            "nvidia",
            Family::Gpu,
            "nvml",
        );
        dgpu.memory_bytes = Some(8 << 30);
        r.devices.push(apu);
        r.devices.push(dgpu);
        assert_eq!(r.best_accelerator().unwrap().id, "dgpu");
        // Alone, the APU is still the best accelerator.
        r.devices.retain(|d| d.id == "apu");
        assert_eq!(r.best_accelerator().unwrap().id, "apu");
    }

    #[test]
    fn cpu_only_registry_has_no_accelerator_and_best_is_cpu() {
        let mut r = sample();
        r.devices.retain(|d| d.family == Family::Cpu);
        r.refresh_summary();
        assert!(!r.has_accelerator());
        assert_eq!(r.summary, Summary::default());
        assert_eq!(r.summary.accelerator_memory_bytes, Some(0));
        assert!(r.best_accelerator().is_none(), "never the CPU");
        assert_eq!(r.best_device().unwrap().id, "cpu");
        #[allow(deprecated, reason = "the deprecated method keeps its behaviour")]
        let best = r.best();
        assert_eq!(best.unwrap().id, "cpu");
    }

    #[test]
    fn json_round_trips_exactly() {
        let r = sample();
        let back = Registry::from_json(&r.to_json_pretty()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn unknown_fields_are_ignored_and_newer_major_is_refused() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["future_field"] = serde_json::json!({"x": 1});
        v["devices"][1]["future_device_field"] = serde_json::json!(true);
        assert!(Registry::from_json(&v.to_string()).is_ok());
        v["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
        assert!(matches!(
            Registry::from_json(&v.to_string()),
            Err(RegistryError::NewerVersion { .. })
        ));
        v.as_object_mut().unwrap().remove("schema_version");
        assert!(matches!(
            Registry::from_json(&v.to_string()),
            Err(RegistryError::MissingVersion)
        ));
    }

    #[test]
    fn malformed_json_names_where() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["devices"][2]["memory_bytes"] = serde_json::json!("lots");
        let err = Registry::from_json(&v.to_string()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("devices[2].memory_bytes"), "{msg}");
        let err = Registry::from_json("{\"schema_version\": 1, ").unwrap_err();
        assert!(
            matches!(err, RegistryError::Malformed { line: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn from_json_drops_implausible_values_with_a_warning() {
        let mut r = sample();
        r.devices[0].temperature_celsius = Some(-81559.0);
        r.devices[0].power_limit_watts = Some(700.0);
        r.system.memory.total_bytes = Some(270_000_000_000);
        r.system.memory.available_bytes = Some(u64::MAX);
        let back = Registry::from_json(&r.to_json_pretty()).unwrap();
        assert_eq!(back.devices[0].temperature_celsius, None);
        assert_eq!(back.devices[0].power_limit_watts, Some(700.0));
        assert_eq!(back.system.memory.available_bytes, None);
        let msgs: Vec<&str> = back
            .warnings
            .iter()
            .filter(|w| w.backend == "registry")
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].contains("temperature_celsius: -81559"), "{msgs:?}");
        // A plausible registry reads back unchanged.
        let ok = sample();
        assert_eq!(Registry::from_json(&ok.to_json_pretty()).unwrap(), ok);
    }
}
