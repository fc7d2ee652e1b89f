//! The health-event stream: what changed between two observations of a
//! machine (a registry and its telemetry), as events — devices added,
//! removed or become unavailable, ECC counters that grew, throttling that
//! began, and threshold rules (`--alert temperature_celsius>85`) that began
//! or stopped holding. Pure: the CLI's `watch` observes and prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{DeviceSample, Telemetry};
use crate::model::Registry;

/// Version of the event object; bumped when a field changes meaning.
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// What an event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The whole state (first observation; `data` holds registry and telemetry).
    Snapshot,
    /// A device present now that was not before (hot-plug, driver load).
    DeviceAdded,
    /// A device present before and missing now.
    DeviceRemoved,
    /// A device this process could use and now cannot.
    BecameUnavailable,
    /// A device that was unavailable and is usable now.
    BecameAvailable,
    /// ECC counters grew, or throttling for a thermal or power reason began.
    Health,
    /// A threshold rule began (`state: firing`) or stopped (`resolved`) holding.
    Alert,
}

/// One event, one JSON line of `watch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// [`EVENT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// RFC 3339 UTC time of the observation (`2026-11-24T06:40:00.123Z`).
    pub time: String,
    /// Host name.
    pub host: String,
    /// What happened.
    pub kind: EventKind,
    /// The device concerned, when one is.
    pub device: Option<String>,
    /// Details (kind-specific).
    pub data: serde_json::Value,
}

/// A metric a rule can test, per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertMetric {
    /// Memory used / total.
    MemoryUsedRatio,
    /// Memory used, bytes.
    MemoryUsedBytes,
    /// The hottest sensor, °C.
    TemperatureCelsius,
    /// Power draw, watts.
    PowerWatts,
    /// Power draw / enforced limit.
    PowerRatio,
    /// Compute busy fraction.
    UtilizationRatio,
    /// Corrected ECC errors since the driver loaded.
    EccCorrectedTotal,
    /// Uncorrected ECC errors since the driver loaded.
    EccUncorrectedTotal,
}

impl AlertMetric {
    /// Every metric with its rule spelling.
    pub const ALL: [(&'static str, AlertMetric); 8] = [
        ("memory_used_ratio", AlertMetric::MemoryUsedRatio),
        ("memory_used_bytes", AlertMetric::MemoryUsedBytes),
        ("temperature_celsius", AlertMetric::TemperatureCelsius),
        ("power_watts", AlertMetric::PowerWatts),
        ("power_ratio", AlertMetric::PowerRatio),
        ("utilization_ratio", AlertMetric::UtilizationRatio),
        ("ecc_corrected_total", AlertMetric::EccCorrectedTotal),
        ("ecc_uncorrected_total", AlertMetric::EccUncorrectedTotal),
    ];

    /// The value of this metric in a sample; `None` when unknown (a rule
    /// on an unknown value never fires).
    pub fn value(self, s: &DeviceSample) -> Option<f64> {
        match self {
            AlertMetric::MemoryUsedRatio => s.memory_used_ratio(),
            AlertMetric::MemoryUsedBytes => s.memory_used_bytes.map(|v| v as f64),
            AlertMetric::TemperatureCelsius => s.max_temperature_celsius(),
            AlertMetric::PowerWatts => s.power_watts,
            AlertMetric::PowerRatio => {
                Some(s.power_watts? / s.power_limit_watts.filter(|l| *l > 0.0)?)
            }
            AlertMetric::UtilizationRatio => s.utilization_ratio,
            AlertMetric::EccCorrectedTotal => s.ecc_corrected_total.map(|v| v as f64),
            AlertMetric::EccUncorrectedTotal => s.ecc_uncorrected_total.map(|v| v as f64),
        }
    }

    fn name(self) -> &'static str {
        AlertMetric::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

/// A threshold rule: `metric OP number`.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertRule {
    /// The rule as written.
    pub text: String,
    /// What it tests.
    pub metric: AlertMetric,
    /// `>`, `>=`, `<`, `<=`, `==`, `!=`.
    pub op: String,
    /// The threshold.
    pub threshold: f64,
}

impl AlertRule {
    /// Parse `memory_used_ratio>0.9`, `temperature_celsius >= 85`.
    pub fn parse(text: &str) -> Result<AlertRule, String> {
        let t = text.trim();
        let pos = t
            .find(['>', '<', '=', '!'])
            .ok_or_else(|| format!("alert rule {t:?}: no comparison (>, >=, <, <=, ==, !=)"))?;
        let (name, rest) = t.split_at(pos);
        let name = name.trim();
        let op_len = if rest[1..].starts_with('=') { 2 } else { 1 };
        let (op, num) = rest.split_at(op_len);
        if !matches!(op, ">" | ">=" | "<" | "<=" | "==" | "!=") {
            return Err(format!("alert rule {t:?}: unknown comparison {op:?}"));
        }
        let metric = AlertMetric::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = AlertMetric::ALL.iter().map(|(n, _)| *n).collect();
                format!(
                    "alert rule {t:?}: unknown metric {name:?} (one of {})",
                    names.join(", ")
                )
            })?;
        let threshold: f64 = num
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("alert rule {t:?}: {:?} is not a number", num.trim()))?;
        Ok(AlertRule {
            text: t.to_string(),
            metric,
            op: op.to_string(),
            threshold,
        })
    }

    /// Whether the rule holds for a sample (never for an unknown value).
    pub fn holds(&self, s: &DeviceSample) -> Option<(bool, f64)> {
        let v = self.metric.value(s)?;
        let t = self.threshold;
        let b = match self.op.as_str() {
            ">" => v > t,
            ">=" => v >= t,
            "<" => v < t,
            "<=" => v <= t,
            "==" => v == t,
            _ => v != t,
        };
        Some((b, v))
    }
}

/// One observation of the machine.
#[derive(Clone, Debug, Default)]
pub struct Observation {
    /// Detection at that time.
    pub registry: Registry,
    /// Telemetry at that time.
    pub telemetry: Telemetry,
    /// Device errors the kernel logged since the previous observation
    /// ([`super::kernel_log`]).
    pub kernel_errors: Vec<super::kernel_log::KernelDeviceError>,
}

/// Throttle reasons that mean a thermal or power problem (NVIDIA's
/// clock-event names, Intel's `reason_*` names).
const HEALTH_THROTTLE: [&str; 9] = [
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "thermal",
    "prochot",
    "vr_thermalert",
    "vr_tdc",
    "ratl",
];

/// The events between `prev` (none: the first observation, which yields a
/// `snapshot`) and `now`. `firing` carries which (rule, device) pairs hold
/// from one call to the next, so a rule is reported when it begins and
/// when it stops holding, not at every observation.
pub fn diff(
    prev: Option<&Observation>,
    now: &Observation,
    rules: &[AlertRule],
    firing: &mut BTreeMap<(String, String), bool>,
    time: &str,
    host: &str,
) -> Vec<Event> {
    let ev = |kind, device: Option<&str>, data| Event {
        schema_version: EVENT_SCHEMA_VERSION,
        time: time.to_string(),
        host: host.to_string(),
        kind,
        device: device.map(str::to_string),
        data,
    };
    let mut out = Vec::new();
    match prev {
        None => out.push(ev(
            EventKind::Snapshot,
            None,
            serde_json::json!({
                "registry": now.registry,
                "telemetry": now.telemetry,
            }),
        )),
        Some(p) => {
            for d in &now.registry.devices {
                match p.registry.device(&d.id) {
                    None => out.push(ev(
                        EventKind::DeviceAdded,
                        Some(&d.id),
                        serde_json::json!({"name": d.name, "vendor": d.vendor, "family": d.family}),
                    )),
                    Some(old) if old.available && !d.available => out.push(ev(
                        EventKind::BecameUnavailable,
                        Some(&d.id),
                        serde_json::json!({"name": d.name, "reason": d.unavailable_reason}),
                    )),
                    Some(old) if !old.available && d.available => out.push(ev(
                        EventKind::BecameAvailable,
                        Some(&d.id),
                        serde_json::json!({"name": d.name}),
                    )),
                    _ => {}
                }
            }
            for old in &p.registry.devices {
                if now.registry.device(&old.id).is_none() {
                    out.push(ev(
                        EventKind::DeviceRemoved,
                        Some(&old.id),
                        serde_json::json!({"name": old.name, "vendor": old.vendor, "family": old.family}),
                    ));
                }
            }
            for s in &now.telemetry.devices {
                let Some(o) = p.telemetry.device(&s.device_id) else {
                    continue;
                };
                for (kind, a, b) in [
                    (
                        "ecc_corrected",
                        o.ecc_corrected_total,
                        s.ecc_corrected_total,
                    ),
                    (
                        "ecc_uncorrected",
                        o.ecc_uncorrected_total,
                        s.ecc_uncorrected_total,
                    ),
                ] {
                    if let (Some(a), Some(b)) = (a, b) {
                        if b > a {
                            out.push(ev(
                                EventKind::Health,
                                Some(&s.device_id),
                                serde_json::json!({"check": kind, "before": a, "now": b, "new_errors": b - a}),
                            ));
                        }
                    }
                }
                let bad = |r: &Option<Vec<String>>| -> Vec<String> {
                    r.iter()
                        .flatten()
                        .filter(|x| HEALTH_THROTTLE.contains(&x.as_str()))
                        .cloned()
                        .collect()
                };
                let before = bad(&o.throttle_reasons);
                let began: Vec<String> = bad(&s.throttle_reasons)
                    .into_iter()
                    .filter(|r| !before.contains(r))
                    .collect();
                if !began.is_empty() {
                    out.push(ev(
                        EventKind::Health,
                        Some(&s.device_id),
                        serde_json::json!({"check": "throttle", "reasons": began}),
                    ));
                }
            }
        }
    }
    for k in &now.kernel_errors {
        // An Xid names domain:bus:device; the device is function 0, or a
        // partition's parent.
        let id = k.pci_address.and_then(|a| {
            now.registry
                .devices
                .iter()
                .find(|d| d.pci_address == Some(a) && d.parent.is_none())
                .map(|d| d.id.clone())
        });
        out.push(ev(
            EventKind::Health,
            id.as_deref(),
            serde_json::json!({
                "check": k.kind,
                "code": k.code,
                "pci_address": k.pci_address.map(|a| a.to_string()),
                "message": k.message,
                "source": k.source,
            }),
        ));
    }
    for rule in rules {
        for s in &now.telemetry.devices {
            let key = (rule.text.clone(), s.device_id.clone());
            let was = firing.get(&key).copied().unwrap_or(false);
            let Some((holds, value)) = rule.holds(s) else {
                continue;
            };
            if holds != was {
                firing.insert(key, holds);
                out.push(ev(
                    EventKind::Alert,
                    Some(&s.device_id),
                    serde_json::json!({
                        "rule": rule.text,
                        "metric": rule.metric.name(),
                        "value": value,
                        "threshold": rule.threshold,
                        "state": if holds { "firing" } else { "resolved" },
                    }),
                ));
            }
        }
    }
    out
}

/// RFC 3339 UTC text of a Unix time in milliseconds
/// (`2026-11-24T06:40:00.123Z`), by the days-to-civil algorithm of
/// H. Hinnant, "chrono-Compatible Low-Level Date Algorithms".
pub fn rfc3339_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let ms = unix_ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 12:34:56.789 UTC (a leap day).
        assert_eq!(rfc3339_utc(951_827_696_789), "2000-02-29T12:34:56.789Z");
        assert_eq!(rfc3339_utc(1_795_500_000_000), "2026-11-24T06:00:00.000Z");
    }

    #[test]
    fn rules_parse() {
        let r = AlertRule::parse("memory_used_ratio>0.9").unwrap();
        assert_eq!(
            (r.metric, r.op.as_str(), r.threshold),
            (AlertMetric::MemoryUsedRatio, ">", 0.9)
        );
        let r = AlertRule::parse(" temperature_celsius >= 85 ").unwrap();
        assert_eq!((r.op.as_str(), r.threshold), (">=", 85.0));
        assert!(AlertRule::parse("temperature_celsius").is_err());
        assert!(
            AlertRule::parse("bogus>1")
                .unwrap_err()
                .contains("unknown metric")
        );
        assert!(AlertRule::parse("power_watts>x").is_err());
        assert!(AlertRule::parse("power_watts=<1").is_err());
        assert!(AlertRule::parse("power_watts>inf").is_err());
    }
}
