//! The cloud instance table: accelerator instances of public clouds (AWS,
//! GCP, Azure, OCI, Lambda, RunPod) with the accelerator of the spec
//! database they carry, how many, the host around them and their on-demand
//! price, each row with the date its price was read and the source it was
//! read from.
//!
//! The data lives in `cloud.toml` next to this file (its header states the
//! rules), compiled into the library and parsed once on first use. Prices
//! are facts of a day, not current: every consumer shows them with their
//! date. [`crate::plan::cost`] plans a model on these instances and ranks
//! them; it also reads user price files that override or extend the table.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The table text, compiled in.
const CLOUD_TOML: &str = include_str!("cloud.toml");

/// One instance type of one provider in one region.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloudInstance {
    /// Lowercase provider id (`aws`, `gcp`, `azure`, `oci`, `lambda`, `runpod`).
    pub provider: String,
    /// The provider's instance type name (`p5.48xlarge`, `BM.GPU.H100.8`).
    pub instance: String,
    /// Region the price is for; `None` where the source states none.
    #[serde(default)]
    pub region: Option<String>,
    /// Id of the accelerator's entry in the spec database (`h100-sxm`).
    pub accelerator: String,
    /// Accelerators per instance.
    pub count: u32,
    /// Scale-up interconnect as the source prints it (`900 GB/s NVSwitch`);
    /// `None` where the source names none.
    #[serde(default)]
    pub interconnect: Option<String>,
    /// Network bandwidth as the source prints it (`Up to 10 Gigabit`).
    #[serde(default)]
    pub network: Option<String>,
    /// Network bandwidth in Gbit/s where the source gives a fixed figure
    /// (none for "up to" burst rates).
    #[serde(default)]
    pub network_gbit_per_s: Option<f64>,
    /// Virtual CPUs.
    #[serde(default)]
    pub vcpus: Option<u32>,
    /// Host memory in GiB.
    #[serde(default)]
    pub host_memory_gib: Option<f64>,
    /// On-demand price in USD per instance-hour.
    pub price_per_hour_usd: f64,
    /// The day the price was read, `YYYY-MM-DD` (see `cloud.toml`).
    pub price_date: String,
    /// Where the row was read (a dated copy: repository at a commit).
    pub source: String,
    /// The provider's price page the copy comes from.
    #[serde(default)]
    pub provider_url: Option<String>,
    /// How a value was read where it is not one printed figure.
    #[serde(default)]
    pub notes: Option<String>,
}

impl CloudInstance {
    /// The device string of the instance's accelerators (`8xh100-sxm`), as
    /// `--devices` takes it.
    pub fn device_string(&self) -> String {
        format!("{}x{}", self.count, self.accelerator)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    instance: Vec<CloudInstance>,
}

/// Parse table text (the embedded file, or another in tests).
pub fn parse_instances(text: &str) -> Result<Vec<CloudInstance>, toml::de::Error> {
    toml::from_str::<Table>(text).map(|t| t.instance)
}

static INSTANCES: LazyLock<Vec<CloudInstance>> =
    LazyLock::new(|| parse_instances(CLOUD_TOML).expect("embedded cloud.toml parses (tested)"));

/// Every instance of the table, in file order.
///
/// ```
/// let p5 = ai_hwaccel::spec::cloud::instances()
///     .iter()
///     .find(|i| i.instance == "p5.48xlarge")
///     .unwrap();
/// assert_eq!((p5.device_string().as_str(), p5.price_date.len()), ("8xh100-sxm", 10));
/// ```
pub fn instances() -> &'static [CloudInstance] {
    &INSTANCES
}

/// The providers of the table, sorted, each once.
pub fn providers() -> Vec<&'static str> {
    let mut p: Vec<&str> = INSTANCES.iter().map(|i| i.provider.as_str()).collect();
    p.sort_unstable();
    p.dedup();
    p
}

/// Whether `s` is a calendar date written `YYYY-MM-DD` (the form of
/// [`CloudInstance::price_date`]).
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if !s.is_ascii() || b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    y >= 1970 && (1..=days).contains(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_resolves_and_is_dated_and_sourced() {
        let all = instances();
        assert!(all.len() >= 40, "{} rows", all.len());
        for i in all {
            let what = format!("{}/{}", i.provider, i.instance);
            assert!(
                crate::spec::by_id(&i.accelerator).is_some(),
                "{what}: accelerator {:?} is no id of devices.toml",
                i.accelerator
            );
            assert!(
                (1..=crate::spec::MAX_DEVICES).contains(&i.count),
                "{what}: count"
            );
            assert!(is_iso_date(&i.price_date), "{what}: price_date");
            assert!(i.source.starts_with("https://"), "{what}: source");
            assert!(
                i.provider_url
                    .as_deref()
                    .is_some_and(|u| u.starts_with("https://")),
                "{what}: provider_url"
            );
            assert!(
                i.price_per_hour_usd.is_finite() && i.price_per_hour_usd > 0.0,
                "{what}: price"
            );
            assert!(i.region.is_some(), "{what}: region");
            // A dated copy pinned at a commit, never a moving branch.
            if i.source.contains("github.com") {
                let commit = i.source.split('/').nth(6).unwrap_or("");
                assert!(
                    commit.len() == 40 && commit.bytes().all(|c| c.is_ascii_hexdigit()),
                    "{what}: source is not pinned to a commit"
                );
            }
        }
        // One row per (provider, instance, region).
        let mut keys: Vec<_> = all
            .iter()
            .map(|i| (&i.provider, &i.instance, &i.region))
            .collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "duplicate rows");
    }

    #[test]
    fn covers_the_required_providers_and_instances() {
        assert_eq!(
            providers(),
            ["aws", "azure", "gcp", "lambda", "oci", "runpod"]
        );
        for (p, i) in [
            ("aws", "p5.48xlarge"),
            ("aws", "p4d.24xlarge"),
            ("aws", "p4de.24xlarge"),
            ("aws", "g5.xlarge"),
            ("aws", "g6.xlarge"),
            ("aws", "g6e.xlarge"),
            ("aws", "inf2.48xlarge"),
            ("aws", "trn1.32xlarge"),
            ("gcp", "a3-highgpu-8g"),
            ("gcp", "a2-highgpu-8g"),
            ("gcp", "g2-standard-8"),
            ("azure", "Standard_ND96isr_H100_v5"),
            ("azure", "Standard_ND96asr_v4"),
            ("azure", "Standard_NC24ads_A100_v4"),
            ("oci", "BM.GPU.H100.8"),
            ("oci", "BM.GPU4.8"),
            ("lambda", "gpu_1x_h100_sxm5"),
            ("runpod", "1x_A100-80GB_SECURE"),
        ] {
            assert!(
                instances()
                    .iter()
                    .any(|x| x.provider == p && x.instance == i),
                "{p}/{i} missing"
            );
        }
    }

    #[test]
    fn values_are_the_sources_figures() {
        let get = |i: &str| instances().iter().find(|x| x.instance == i).unwrap();
        // tsaol/aws-gpu@77fcd9f data/p5_instances.js: onDemand 55.04 in us-east-1.
        let p5 = get("p5.48xlarge");
        assert_eq!(
            (p5.price_per_hour_usd, p5.vcpus, p5.network_gbit_per_s),
            (55.04, Some(192), Some(3200.0))
        );
        // An "Up to" rate has no fixed figure.
        assert_eq!(get("g5.xlarge").network_gbit_per_s, None);
        // GCP: machine row + GPU row of the same region.
        let a2 = get("a2-highgpu-8g");
        assert!((a2.price_per_hour_usd - (5.91582 + 23.47126)).abs() < 1e-9);
    }

    #[test]
    fn dates() {
        assert!(is_iso_date("2026-01-21"));
        assert!(is_iso_date("2024-02-29"));
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-1-21",
            "21-01-2026",
            "2026-01-32",
            "20260121xx",
            "",
            "２０２６-01-21",
            "é026-01-21",
            "2026-0é-1",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = parse_instances(
            "[[instance]]\nprovider='x'\ninstance='y'\naccelerator='l4'\ncount=1\nprice_per_hour_usd=1.0\nprice_date='2026-01-01'\nsource='s'\nspot=1.0\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("spot"), "{e}");
    }
}
