//! Dynamic values of DRM cards from sysfs: amdgpu's `gpu_busy_percent`,
//! `mem_busy_percent`, `mem_info_vram_{used,total}` and RAS error counts
//! (`ras/*_err_count`), the PCIe link in use (`current_link_{speed,width}`),
//! the hwmon directory under the device ([`super::hwmon`]), and Intel's
//! throttle reasons (xe: `tile*/gt*/freq0/throttle/reason_*`; i915:
//! `cardN/gt/gt*/throttle_reason_*`).
//!
//! File meanings: the kernel's `Documentation/gpu/amdgpu/driver-misc.rst`,
//! `amdgpu_ras.c` (`"ue: %lu\nce: %lu\n"`, later kernels add `de:` for
//! deferred errors), `Documentation/ABI/testing/sysfs-driver-intel-xe-*`
//! and `sysfs-driver-intel-i915-*`, `Documentation/PCI/sysfs-pci.rst`.

use crate::detect::amd::sysfs::{DrmCard, drm_cards};
use crate::model::Warning;
use crate::probe::{Probe, ProbeExt, join};

use super::DeviceSample;
use super::hwmon::parse_hwmon;

/// At most this many hwmon directories per card and files per directory
/// are read (a real card has one directory of under 200 files).
const MAX_HWMON_DIRS: usize = 8;
const MAX_HWMON_FILES: usize = 512;
/// Largest `gpu_metrics` read (the tables are a few hundred bytes; some
/// kernels pad the read to a page).
const MAX_GPU_METRICS_BYTES: u64 = 64 * 1024;

/// Error counts of one amdgpu RAS block file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RasCount {
    /// `ue:` uncorrectable errors.
    pub uncorrected: Option<u64>,
    /// `ce:` correctable errors.
    pub corrected: Option<u64>,
}

/// Parse an amdgpu `ras/<block>_err_count` file (`ue: 0\nce: 2\n`).
pub fn parse_ras_count(text: &str) -> RasCount {
    let mut c = RasCount::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().parse::<u64>().ok();
        match k.trim() {
            "ue" => c.uncorrected = v,
            "ce" => c.corrected = v,
            _ => {}
        }
    }
    c
}

/// Parse a percentage file (`gpu_busy_percent`) into a 0–1 ratio; values
/// above 100 are refused.
pub fn parse_percent_ratio(text: &str) -> Option<f64> {
    let v: u32 = text.trim().parse().ok()?;
    (v <= 100).then(|| f64::from(v) / 100.0)
}

/// Parse `current_link_speed` (`16.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s PCIe`;
/// `Unknown` → `None`) into GT/s.
pub fn parse_link_speed_gts(text: &str) -> Option<f64> {
    let v: f64 = text.split_whitespace().next()?.parse().ok()?;
    (v.is_finite() && v > 0.0 && v <= 256.0).then_some(v)
}

/// Active throttle reasons from `reason_<name>` / `throttle_reason_<name>`
/// files holding `0` or `1` (`status` files are the OR of the rest and
/// are skipped). `None` when no reason file was readable.
pub fn parse_throttle_reasons<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<Vec<String>> {
    let mut seen = false;
    let mut active = Vec::new();
    for (name, value) in files {
        let Some(reason) = name
            .strip_prefix("throttle_reason_")
            .or_else(|| name.strip_prefix("reason_"))
        else {
            continue;
        };
        if reason == "status" || reason.is_empty() {
            continue;
        }
        match value.trim() {
            "0" => seen = true,
            "1" => {
                seen = true;
                active.push(reason.to_string());
            }
            _ => {}
        }
    }
    active.sort();
    seen.then_some(active)
}

/// Sample every DRM card with a PCI address. The device id is
/// `pci:<address>`, as detection names PCI devices.
pub fn sample_drm_cards(probe: &dyn Probe, warnings: &mut Vec<Warning>) -> Vec<DeviceSample> {
    let mut out: Vec<DeviceSample> = Vec::new();
    for card in drm_cards(probe) {
        let Some(addr) = card.address else { continue };
        let id = format!("pci:{addr}");
        // Two cards (render + display nodes of one function) share a device.
        if out.iter().any(|s| s.device_id == id) {
            continue;
        }
        let s = sample_card(probe, &card, id, warnings);
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

fn sample_card(
    probe: &dyn Probe,
    card: &DrmCard,
    id: String,
    warnings: &mut Vec<Warning>,
) -> DeviceSample {
    let d = &card.device_dir;
    let text = |name: &str| probe.read_trimmed(&join(d, name));
    let mut s = DeviceSample::new(id, "sysfs");
    s.utilization_ratio = text("gpu_busy_percent").and_then(|t| parse_percent_ratio(&t));
    s.memory_utilization_ratio = text("mem_busy_percent").and_then(|t| parse_percent_ratio(&t));
    s.memory_used_bytes = text("mem_info_vram_used").and_then(|t| t.parse().ok());
    s.memory_total_bytes = text("mem_info_vram_total")
        .and_then(|t| t.parse().ok())
        .filter(|v| *v > 0);
    if let (Some(t), Some(u)) = (s.memory_total_bytes, s.memory_used_bytes) {
        if u > t {
            warnings.push(Warning {
                backend: "telemetry".to_string(),
                message: format!(
                    "{d}/mem_info_vram_used: {u} is more than mem_info_vram_total {t}"
                ),
            });
            s.memory_used_bytes = None;
        } else {
            s.memory_free_bytes = Some(t - u);
        }
    }
    s.pcie_link_speed_gts = text("current_link_speed").and_then(|t| parse_link_speed_gts(&t));
    s.pcie_link_width = text("current_link_width")
        .and_then(|t| t.parse().ok())
        .filter(|w: &u32| *w > 0 && *w <= 64);

    // RAS error counters (data-center amdgpu parts).
    let ras_dir = join(d, "ras");
    let mut ras = RasCount::default();
    for f in probe.list_or_empty(&ras_dir).iter().take(64) {
        if !f.ends_with("_err_count") {
            continue;
        }
        if let Some(t) = probe.read_trimmed(&join(&ras_dir, f)) {
            let c = parse_ras_count(&t);
            let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            ras.uncorrected = add(ras.uncorrected, c.uncorrected);
            ras.corrected = add(ras.corrected, c.corrected);
        }
    }
    s.ecc_uncorrected_total = ras.uncorrected;
    s.ecc_corrected_total = ras.corrected;

    // hwmon: temperatures, power, energy, clocks.
    let hwmon_dir = join(d, "hwmon");
    let mut dirs: Vec<String> = probe
        .list_or_empty(&hwmon_dir)
        .into_iter()
        .filter(|n| n.starts_with("hwmon"))
        .collect();
    dirs.sort();
    for h in dirs.iter().take(MAX_HWMON_DIRS) {
        let dir = join(&hwmon_dir, h);
        let wanted = |n: &str| {
            n == "name"
                || ((n.starts_with("temp")
                    || n.starts_with("power1_")
                    || n.starts_with("energy")
                    || n.starts_with("freq"))
                    && (n.ends_with("_input")
                        || n.ends_with("_label")
                        || n.ends_with("_average")
                        || n.ends_with("_cap")
                        || n.ends_with("_max")))
        };
        let files: Vec<(String, String)> = probe
            .list_or_empty(&dir)
            .into_iter()
            .filter(|n| wanted(n))
            .take(MAX_HWMON_FILES)
            .filter_map(|n| {
                let v = probe.read_trimmed(&join(&dir, &n))?;
                Some((n, v))
            })
            .collect();
        let r = parse_hwmon(files.iter().map(|(a, b)| (a.as_str(), b.as_str())));
        s.source = "sysfs+hwmon".to_string();
        for (k, v) in r.temperatures_celsius {
            s.temperatures_celsius.entry(k).or_insert(v);
        }
        for (k, v) in r.clocks_hertz {
            s.clocks_hertz.entry(k).or_insert(v);
        }
        s.power_watts = s.power_watts.or(r.power_watts);
        s.power_limit_watts = s.power_limit_watts.or(r.power_limit_watts);
        s.energy_joules = s.energy_joules.or(r.energy_joules);
    }

    s.throttle_reasons = intel_throttle(probe, card);

    // amdgpu's firmware table fills what the text files did not give, and
    // is the only source of AMD's throttle reasons.
    if let Ok(bytes) = probe.read_limited(&join(d, "gpu_metrics"), MAX_GPU_METRICS_BYTES) {
        match super::gpu_metrics::parse_gpu_metrics(&bytes) {
            Ok(m) => {
                for (k, v) in &m.temperatures_celsius {
                    s.temperatures_celsius.entry(k.clone()).or_insert(*v);
                }
                for (k, v) in &m.clocks_hertz {
                    s.clocks_hertz.entry(k.clone()).or_insert(*v);
                }
                s.utilization_ratio = s.utilization_ratio.or(m.gfx_activity_ratio);
                s.memory_utilization_ratio = s.memory_utilization_ratio.or(m.memory_activity_ratio);
                s.power_watts = s.power_watts.or(m.socket_power_watts);
                s.pcie_link_width = s.pcie_link_width.or(m.pcie_link_width);
                s.pcie_link_speed_gts = s.pcie_link_speed_gts.or(m.pcie_link_speed_gts);
                if s.throttle_reasons.is_none() {
                    s.throttle_reasons = m.throttle_reasons();
                }
            }
            Err(e) => warnings.push(Warning {
                backend: "telemetry".to_string(),
                message: format!("{d}/gpu_metrics: {e}"),
            }),
        }
    }
    s
}

/// Intel throttle reasons: xe's `device/tile*/gt*/freq0/throttle/`, else
/// i915's `cardN/gt/gt*/`. A reason is active when any GT reports it.
fn intel_throttle(probe: &dyn Probe, card: &DrmCard) -> Option<Vec<String>> {
    let mut dirs = Vec::new();
    for tile in probe.list_or_empty(&card.device_dir) {
        if !tile.starts_with("tile") {
            continue;
        }
        let tile_dir = join(&card.device_dir, &tile);
        for gt in probe.list_or_empty(&tile_dir) {
            if gt.starts_with("gt") {
                dirs.push(join(&join(&join(&tile_dir, &gt), "freq0"), "throttle"));
            }
        }
    }
    let gt_root = join(&card.dir, "gt");
    for gt in probe.list_or_empty(&gt_root) {
        if gt.starts_with("gt") {
            dirs.push(join(&gt_root, &gt));
        }
    }
    let mut all: Option<Vec<String>> = None;
    for dir in dirs.iter().take(16) {
        let files: Vec<(String, String)> = probe
            .list_or_empty(dir)
            .into_iter()
            .filter(|n| n.starts_with("reason_") || n.starts_with("throttle_reason_"))
            .take(64)
            .filter_map(|n| Some((n.clone(), probe.read_trimmed(&join(dir, &n))?)))
            .collect();
        if let Some(r) = parse_throttle_reasons(files.iter().map(|(a, b)| (a.as_str(), b.as_str())))
        {
            let v = all.get_or_insert_with(Vec::new);
            v.extend(r);
            v.sort();
            v.dedup();
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ras_counts() {
        assert_eq!(
            parse_ras_count("ue: 0\nce: 2\n"),
            RasCount {
                uncorrected: Some(0),
                corrected: Some(2)
            }
        );
        let c = parse_ras_count("ue: 1\nce: x\nde: 4\n");
        assert_eq!((c.uncorrected, c.corrected), (Some(1), None));
    }

    #[test]
    fn link_speeds_and_percentages() {
        assert_eq!(parse_link_speed_gts("16.0 GT/s PCIe"), Some(16.0));
        assert_eq!(parse_link_speed_gts("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_link_speed_gts("Unknown"), None);
        assert_eq!(parse_percent_ratio("37"), Some(0.37));
        assert_eq!(parse_percent_ratio("101"), None);
        assert_eq!(parse_percent_ratio("-1"), None);
    }

    #[test]
    fn throttle_reasons_need_a_reason_file() {
        assert_eq!(parse_throttle_reasons([("status", "1")]), None);
        assert_eq!(
            parse_throttle_reasons([
                ("reason_pl1", "1"),
                ("reason_thermal", "0"),
                ("reason_status", "1")
            ]),
            Some(vec!["pl1".to_string()])
        );
        assert_eq!(
            parse_throttle_reasons([("throttle_reason_pl2", "0")]),
            Some(vec![])
        );
    }
}
