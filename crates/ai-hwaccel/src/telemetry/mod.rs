//! Telemetry: the values of detected devices that change while they run —
//! utilization, memory in use, temperatures, power, energy, clocks, ECC
//! counters, throttle reasons, the PCIe link in use.
//!
//! [`sample`] reads them for the devices of a [`Registry`]: NVML (loaded at
//! run time, live machine only) for NVIDIA GPUs; the DRM cards' sysfs and
//! hwmon files for amdgpu, i915 and xe ([`gpu_sysfs`], [`hwmon`]). For
//! every other device (Gaudi, Neuron, TPU, Ascend, … read through their
//! vendor tools by detection) the values detection read — free memory,
//! temperature, power limit, ECC — are carried over by [`merge_detected`],
//! so a fresh detection plus a sample covers every backend. Unknown is
//! `None`; nothing here guesses.
//!
//! This module reads the machine only through the probe boundary, like
//! detection; the exporter, labels and watch stream (CLI `serve`, `watch`)
//! only call it.

pub mod events;
pub mod gpu_metrics;
pub mod gpu_sysfs;
pub mod hwmon;
pub mod kernel_log;
pub mod labels;
pub mod metrics;
pub mod nvml_events;
pub mod pods;

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::model::{Registry, Warning};
use crate::probe::Probe;

/// Dynamic values of one device at one time. `None` / empty: unknown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceSample {
    /// The registry id of the device (`pci:0000:3b:00.0`, …).
    pub device_id: String,
    /// Where the values came from, joined with `+` (`nvml`, `amdgpu-sysfs`,
    /// `hwmon`, `detection`).
    pub source: String,
    /// Fraction of the last sample period the compute engines were busy,
    /// 0–1 (NVML utilization.gpu, amdgpu `gpu_busy_percent`).
    pub utilization_ratio: Option<f64>,
    /// Fraction of time device memory was read or written, 0–1 (NVML
    /// utilization.memory, amdgpu `mem_busy_percent`).
    pub memory_utilization_ratio: Option<f64>,
    /// Device memory in use, bytes.
    pub memory_used_bytes: Option<u64>,
    /// Device memory free, bytes.
    pub memory_free_bytes: Option<u64>,
    /// Device memory in all, bytes (as the sampled source reports it).
    pub memory_total_bytes: Option<u64>,
    /// Temperatures by sensor (`gpu`, `edge`, `junction`, `mem`, …), °C.
    pub temperatures_celsius: BTreeMap<String, f64>,
    /// Power draw, watts.
    pub power_watts: Option<f64>,
    /// Enforced power limit, watts.
    pub power_limit_watts: Option<f64>,
    /// Energy consumed since the driver loaded, joules (a counter).
    pub energy_joules: Option<f64>,
    /// Current clocks by domain (`graphics`, `sm`, `memory`, …), hertz.
    pub clocks_hertz: BTreeMap<String, f64>,
    /// Corrected ECC errors since the driver loaded (a counter).
    pub ecc_corrected_total: Option<u64>,
    /// Uncorrected ECC errors since the driver loaded (a counter).
    pub ecc_uncorrected_total: Option<u64>,
    /// Reasons the clocks are held down now (`sw_power_cap`,
    /// `hw_thermal_slowdown`, `pl1`, `thermal`, …); empty list: none;
    /// `None`: the driver does not say.
    pub throttle_reasons: Option<Vec<String>>,
    /// Current PCIe link speed per lane, GT/s.
    pub pcie_link_speed_gts: Option<f64>,
    /// Current PCIe link width, lanes.
    pub pcie_link_width: Option<u32>,
}

impl DeviceSample {
    /// An empty sample of one device.
    pub fn new(device_id: impl Into<String>, source: impl Into<String>) -> DeviceSample {
        DeviceSample {
            device_id: device_id.into(),
            source: source.into(),
            ..DeviceSample::default()
        }
    }

    /// Fill what this sample does not know from `other` (a lower-priority
    /// source), and join the sources.
    pub fn fill_from(&mut self, other: &DeviceSample) {
        macro_rules! fill {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f.clone_from(&other.$f); } )* };
        }
        fill!(
            utilization_ratio,
            memory_utilization_ratio,
            memory_used_bytes,
            memory_free_bytes,
            memory_total_bytes,
            power_watts,
            power_limit_watts,
            energy_joules,
            ecc_corrected_total,
            ecc_uncorrected_total,
            throttle_reasons,
            pcie_link_speed_gts,
            pcie_link_width
        );
        for (k, v) in &other.temperatures_celsius {
            self.temperatures_celsius.entry(k.clone()).or_insert(*v);
        }
        for (k, v) in &other.clocks_hertz {
            self.clocks_hertz.entry(k.clone()).or_insert(*v);
        }
        if !other.source.is_empty() && !self.source.split('+').any(|s| s == other.source) {
            if !self.source.is_empty() {
                self.source.push('+');
            }
            self.source.push_str(&other.source);
        }
    }

    /// Whether the sample holds any value at all.
    pub fn is_empty(&self) -> bool {
        let blank = DeviceSample::new(self.device_id.clone(), self.source.clone());
        *self == blank
    }

    /// Memory used over total, 0–1, when both are known.
    pub fn memory_used_ratio(&self) -> Option<f64> {
        let total = self.memory_total_bytes.filter(|t| *t > 0)? as f64;
        Some(self.memory_used_bytes? as f64 / total)
    }

    /// The hottest sensor, °C.
    pub fn max_temperature_celsius(&self) -> Option<f64> {
        self.temperatures_celsius.values().copied().reduce(f64::max)
    }
}

/// One sampling of every device of a registry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Telemetry {
    /// When the sample was taken, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// How long sampling took, milliseconds.
    pub millis: f64,
    /// One sample per device that has any dynamic value, in registry order.
    pub devices: Vec<DeviceSample>,
    /// What could not be read.
    pub warnings: Vec<Warning>,
}

impl Telemetry {
    /// The sample of one device.
    pub fn device(&self, id: &str) -> Option<&DeviceSample> {
        self.devices.iter().find(|s| s.device_id == id)
    }
}

/// What detection itself read of a device's dynamic values (free memory,
/// utilization, power draw and limit, temperature, ECC, the PCIe link, the `memory_used_bytes`
/// extra of NVML/nvidia-smi), as a sample with source `detection`.
pub fn detected_sample(d: &crate::model::Device) -> DeviceSample {
    let mut s = DeviceSample::new(d.id.clone(), "detection");
    s.memory_total_bytes = d.memory_bytes;
    s.memory_free_bytes = d.memory_free_bytes;
    s.memory_used_bytes = d
        .extra
        .get("memory_used_bytes")
        .and_then(|v| v.parse().ok())
        .or_else(|| d.memory_bytes?.checked_sub(d.memory_free_bytes?));
    if let Some(t) = d.temperature_celsius {
        s.temperatures_celsius.insert("gpu".to_string(), t);
    }
    s.power_limit_watts = d.power_limit_watts;
    s.power_watts = d.power_draw_watts;
    s.utilization_ratio = d.utilization_percent.map(|p| p / 100.0);
    s.ecc_uncorrected_total = d.ecc_uncorrected_errors;
    if let Some(link) = d.pci.as_ref().and_then(|p| p.link.as_ref()) {
        s.pcie_link_speed_gts = link.current_speed_gts;
        s.pcie_link_width = link.current_width;
    }
    s
}

/// Fill every sample from what detection read, and add a sample for each
/// device only detection knows dynamic values of (vendor-tool backends).
/// The CPU is left out: host metrics belong to node exporters.
pub fn merge_detected(t: &mut Telemetry, registry: &Registry) {
    let mut out = Vec::with_capacity(registry.devices.len());
    for d in &registry.devices {
        if d.family == crate::model::Family::Cpu {
            continue;
        }
        let detected = detected_sample(d);
        let mut s = match t.devices.iter().position(|s| s.device_id == d.id) {
            Some(i) => t.devices.swap_remove(i),
            None => DeviceSample::new(d.id.clone(), ""),
        };
        s.fill_from(&detected);
        if !s.is_empty() {
            out.push(s);
        }
    }
    t.devices = out;
}

/// Sample the dynamic values of a registry's devices now, through `probe`.
///
/// Bounded: one NVML session (live machine only; a replayed snapshot gives
/// the answer it recorded), a few small sysfs reads
/// per DRM card; no vendor tool runs here (detection runs those, under its
/// deadline). Detection's own values fill what sampling did not read
/// ([`merge_detected`]).
pub fn sample(probe: &dyn Probe, registry: &Registry) -> Telemetry {
    sample_with(probe, registry, crate::detect::nvml_default_libraries())
}

/// [`sample`] with an explicit NVML library list (tests name a missing one).
pub fn sample_with(probe: &dyn Probe, registry: &Registry, nvml_libraries: &[&str]) -> Telemetry {
    let start = Instant::now();
    let mut t = Telemetry {
        unix_ms: unix_ms(),
        ..Telemetry::default()
    };
    let has_nvidia = registry
        .devices
        .iter()
        .any(|d| d.vendor == "nvidia" && d.family == crate::model::Family::Gpu);
    // A replayed snapshot answers with what NVML read when it was recorded.
    let nvml = if !has_nvidia {
        None
    } else if probe.allows_native_libraries() {
        Some(crate::detect::nvml_samples(nvml_libraries))
    } else {
        crate::detect::nvml_samples_recorded(probe)
    };
    match nvml {
        Some(Ok(samples)) => t.devices.extend(samples),
        Some(Err(e)) => t.warnings.push(Warning {
            backend: "telemetry".to_string(),
            message: format!("NVML: {e}"),
        }),
        None => {}
    }
    for s in gpu_sysfs::sample_drm_cards(probe, &mut t.warnings) {
        let id = registry
            .devices
            .iter()
            .find(|d| d.id == s.device_id)
            .map(|d| d.id.clone());
        if let Some(id) = id {
            match t.devices.iter_mut().find(|x| x.device_id == id) {
                Some(x) => x.fill_from(&s),
                None => t.devices.push(s),
            }
        }
    }
    merge_detected(&mut t, registry);
    t.millis = start.elapsed().as_secs_f64() * 1000.0;
    t
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
