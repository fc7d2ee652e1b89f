//! Kubernetes node labels of a registry, with GPU Feature Discovery's
//! meanings (`nvidia.com/gpu.product`, `gpu.count`, `gpu.memory`,
//! `gpu.family`, `gpu.compute.major/minor`, `cuda.driver.major/minor/rev`,
//! `mig.strategy`, `gpu.clique`) for every vendor, under one prefix of ours
//! ([`PREFIX`]), never `nvidia.com/` or `amd.com/`.
//!
//! Validity follows Kubernetes' rules for label keys and values
//! (<https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set>):
//! a name of at most 63 characters of `[A-Za-z0-9-_.]` that starts and ends
//! alphanumeric, a prefix that is a DNS subdomain of at most 253
//! characters, and a value of at most 63 characters of the same set (or
//! empty). [`sanitize_value`] makes any text such a value.
//!
//! Node Feature Discovery reads `key=value` lines from files in its
//! `features.d` directory (the "local" feature source); [`to_feature_file`]
//! writes that form.

use std::collections::BTreeMap;

use crate::model::{Device, Registry};
use crate::topology::Topology;

/// The prefix of every label: a DNS subdomain of ours.
pub const PREFIX: &str = "ai-hwaccel.io";

/// The longest label name or value Kubernetes accepts.
pub const MAX_LABEL_LEN: usize = 63;

/// Labels of a node, by full key (`ai-hwaccel.io/accelerator.count`).
pub type Labels = BTreeMap<String, String>;

/// Whether `s` is a valid label name or non-empty value.
pub fn is_valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_LABEL_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
}

/// Whether `s` is a valid DNS subdomain (RFC 1123): lowercase
/// alphanumerics, `-` and `.`, each part starting and ending alphanumeric,
/// at most 253 characters.
pub fn is_valid_prefix(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.len() <= 63
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !p.starts_with('-')
                && !p.ends_with('-')
        })
}

/// Whether `key` (`prefix/name`) and `value` form a valid label.
pub fn is_valid_label(key: &str, value: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    prefix.is_none_or(is_valid_prefix)
        && is_valid_name(name)
        && (value.is_empty() || is_valid_name(value))
}

/// Any text as a label value: characters outside `[A-Za-z0-9-_.]` become
/// `-` (GPU Feature Discovery writes `NVIDIA-H100-80GB-HBM3` the same way),
/// runs of `-` collapse, the ends are trimmed to alphanumerics, and the
/// result is cut to 63 characters.
pub fn sanitize_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(128));
    for c in s.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            c
        } else {
            '-'
        };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
        if out.len() >= 4 * MAX_LABEL_LEN {
            break;
        }
    }
    let trim = |s: &str| -> String {
        s.trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string()
    };
    let mut v = trim(&out);
    if v.len() > MAX_LABEL_LEN {
        v = trim(&v[..MAX_LABEL_LEN]);
    }
    v
}

/// What to add besides the hardware labels.
#[derive(Clone, Debug, Default)]
pub struct LabelOptions {
    /// Plan-derived labels: for each level, the largest generative
    /// (not embedding) catalog model
    /// whose plan fits the node's accelerators
    /// (`ai-hwaccel.io/plan.largest-model.int4=llama-3.1-70b`).
    pub fit_quants: Vec<crate::plan::Quant>,
}

/// The node labels of a registry. Every key starts with [`PREFIX`] and
/// every key/value pair is valid ([`is_valid_label`]).
pub fn node_labels(registry: &Registry, opts: &LabelOptions) -> Labels {
    let mut l = Labels::new();
    let mut put = |k: &str, v: &str| {
        let v = sanitize_value(v);
        l.insert(format!("{PREFIX}/{k}"), v);
    };
    // Whole devices (a partitioned GPU counts once; its partitions describe
    // the strategy), available accelerators only.
    let accel: Vec<&Device> = registry
        .available_accelerators()
        .filter(|d| d.parent.is_none())
        .collect();
    put(
        "accelerator.present",
        if accel.is_empty() { "false" } else { "true" },
    );
    put("accelerator.count", &accel.len().to_string());
    let mut by_vendor: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_family: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &accel {
        *by_vendor.entry(d.vendor.as_str()).or_default() += 1;
        *by_family.entry(d.family.as_str()).or_default() += 1;
    }
    for (v, n) in &by_vendor {
        put(
            &format!("vendor.{}.count", sanitize_value(v)),
            &n.to_string(),
        );
    }
    for (f, n) in &by_family {
        put(&format!("family.{f}.count"), &n.to_string());
    }
    // The product: the devices of the best accelerator's name (GFD labels
    // the node with one product; a mixed node says so).
    let Some(best) = registry
        .best_accelerator()
        .and_then(|b| {
            accel
                .iter()
                .find(|d| d.id == b.id || Some(&d.id) == b.parent.as_ref())
        })
        .copied()
    else {
        return finish(l, registry, opts);
    };
    let same: Vec<&&Device> = accel.iter().filter(|d| d.name == best.name).collect();
    put("accelerator.product", &best.name);
    put("accelerator.product.count", &same.len().to_string());
    if by_vendor.len() + by_family.len() > 2 || same.len() != accel.len() {
        put("accelerator.mixed", "true");
    }
    put("accelerator.vendor", &best.vendor);
    put("accelerator.family", best.family.as_str());
    if let Some(m) = best.memory_bytes {
        // GFD's gpu.memory is MiB.
        put("accelerator.memory", &(m >> 20).to_string());
    }
    if let Some(a) = &best.architecture {
        put("accelerator.architecture", &a.to_ascii_lowercase());
    }
    if let Some(cc) = &best.compute_capability {
        match cc.split_once('.') {
            Some((a, b)) if a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok() => {
                put("accelerator.compute.major", a);
                put("accelerator.compute.minor", b);
            }
            _ => put("accelerator.compute", cc),
        }
    }
    if let Some(v) = &best.driver_version {
        put("driver.full", v);
        let mut parts = v.split(['.', '-']);
        for k in ["major", "minor", "rev"] {
            if let Some(p) = parts.next().filter(|p| !p.is_empty()) {
                put(&format!("driver.{k}"), p);
            }
        }
    }
    if let Some(cuda) = best.extra.get("cuda_driver_version") {
        put("cuda.driver.full", cuda);
    }
    // Partitions: GFD's mig.strategy (none / single / mixed).
    let parts: Vec<&Device> = registry
        .devices
        .iter()
        .filter(|d| d.parent.is_some() && d.family.is_accelerator())
        .collect();
    let profiles: std::collections::BTreeSet<&str> = parts
        .iter()
        .filter_map(|d| d.partition.as_deref())
        .collect();
    let strategy = match (parts.is_empty(), profiles.len()) {
        (true, _) => "none",
        (false, 0 | 1) => "single",
        _ => "mixed",
    };
    put("partition.strategy", strategy);
    if strategy != "none" {
        put("partition.count", &parts.len().to_string());
        if let [p] = profiles.iter().collect::<Vec<_>>()[..] {
            put("partition.profile", p);
        }
    }
    // Interconnect: the largest domain of devices with direct links.
    let topo = Topology::from_registry(registry);
    let direct = topo
        .domains
        .iter()
        .zip(&topo.domain_types)
        .filter(|(_, t)| *t != "pcie")
        .map(|(d, t)| (d.len(), t.clone()))
        .max_by_key(|(n, _)| *n);
    match direct {
        Some((n, t)) => {
            put("interconnect.domain-size", &n.to_string());
            put("interconnect.type", &t);
        }
        None => put("interconnect.domain-size", "1"),
    }
    if let Some(b) = best
        .spec
        .as_ref()
        .and_then(|s| s.memory_bandwidth_bytes_per_s)
    {
        // GB/s (10^9), a whole number a selector can compare.
        put(
            "accelerator.memory-bandwidth-gbps",
            &(b / 1_000_000_000).to_string(),
        );
    }
    finish(l, registry, opts)
}

fn finish(mut l: Labels, registry: &Registry, opts: &LabelOptions) -> Labels {
    if !opts.fit_quants.is_empty() {
        let devices = crate::plan::PlanDevice::from_registry(registry);
        for q in &opts.fit_quants {
            let o = crate::plan::InferenceOptions {
                quant: Some(*q),
                max_plans: 1,
                ..crate::plan::InferenceOptions::default()
            };
            let best = if devices.is_empty() {
                None
            } else {
                // Generative models: an embedding encoder of more
                // parameters says less about what the node can serve.
                crate::plan::catalog::all()
                    .iter()
                    .filter(|m| !m.spec.encoder)
                    .filter(|m| {
                        let p = crate::plan::plan_inference(&m.spec, &devices, &o);
                        p.feasible && !p.plans.is_empty()
                    })
                    .max_by_key(|m| m.spec.parameters())
            };
            let key = format!("{PREFIX}/plan.largest-model.{}", sanitize_value(q.as_str()));
            l.insert(key, best.map(|m| sanitize_value(&m.id)).unwrap_or_default());
        }
    }
    l.retain(|k, v| is_valid_label(k, v));
    l
}

/// The labels as a Node Feature Discovery feature file (`key=value` lines).
pub fn to_feature_file(labels: &Labels) -> String {
    let mut s = String::from("# ai-hwaccel node labels (Node Feature Discovery local source)\n");
    for (k, v) in labels {
        s.push_str(k);
        s.push('=');
        s.push_str(v);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_sanitized() {
        assert_eq!(
            sanitize_value("NVIDIA H100 80GB HBM3"),
            "NVIDIA-H100-80GB-HBM3"
        );
        assert_eq!(
            sanitize_value("  (AMD) Instinct™ MI300X  "),
            "AMD-Instinct-MI300X"
        );
        assert_eq!(sanitize_value("--"), "");
        let long = "x".repeat(100) + "-y";
        let v = sanitize_value(&long);
        assert_eq!(v.len(), 63);
        assert!(is_valid_name(&v));
        assert!(is_valid_name(&sanitize_value(&format!(
            "{}-{}",
            "a".repeat(62),
            "b"
        ))));
    }

    #[test]
    fn keys_and_prefixes() {
        assert!(is_valid_prefix(PREFIX));
        assert!(!is_valid_prefix("Ai.io"));
        assert!(!is_valid_prefix("-a.io"));
        assert!(is_valid_label("ai-hwaccel.io/accelerator.count", "8"));
        assert!(is_valid_label("ai-hwaccel.io/x", ""));
        assert!(!is_valid_label("ai-hwaccel.io/x", "a b"));
        assert!(!is_valid_label("ai-hwaccel.io/-x", "1"));
        assert!(!is_valid_label(
            &format!("ai-hwaccel.io/{}", "a".repeat(64)),
            "1"
        ));
    }
}
