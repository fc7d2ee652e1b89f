//! What runs here: every catalog model planned on the same devices with the
//! same options, each at the highest-fidelity level that fits
//! ([`super::InferencePlan::suggested_quantization`]), ranked — models that fit
//! first; among them the larger model, then the higher-fidelity level, then
//! the faster decode.

use serde::{Deserialize, Serialize};

use super::catalog;
use super::devices::PlanDevice;
use super::inference::{InferenceOptions, plan_inference};
use super::quant::Quant;
use super::runtime::RuntimeKind;

/// One catalog model on the devices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FitRow {
    /// Catalog id.
    pub model: String,
    /// Parameters.
    pub parameters: u64,
    /// Whether a plan fits at some level the devices run.
    pub fits: bool,
    /// The level planned (the suggested one when it fits).
    pub quantization: Option<Quant>,
    /// Devices the best plan uses.
    pub devices_used: Option<u32>,
    /// Longest context one sequence may have in the best plan.
    pub max_context_tokens: Option<u64>,
    /// Decode speed one sequence sees in the best plan; `None` when a
    /// device's bandwidth is unknown.
    pub decode_tokens_per_s_per_sequence: Option<f64>,
    /// Memory left on the tightest device of the best plan at the planned
    /// context.
    pub memory_left_bytes: Option<u64>,
}

/// Every catalog model on `devices`, ranked (see the module documentation).
/// `opts.quant` is ignored: each model gets its own suggested level.
pub fn fit(devices: &[PlanDevice], opts: &InferenceOptions) -> Vec<FitRow> {
    let mut rows: Vec<FitRow> = catalog::all()
        .iter()
        .map(|m| {
            let o = InferenceOptions {
                quant: None,
                max_plans: 1,
                ..opts.clone()
            };
            let p = plan_inference(&m.spec, devices, &o);
            let best = p.plans.first().filter(|_| p.feasible);
            FitRow {
                model: m.id.clone(),
                parameters: p.parameters,
                fits: best.is_some(),
                quantization: best.map(|_| p.quantization),
                devices_used: best.map(|b| b.devices_used),
                max_context_tokens: best.map(|b| b.max_context_tokens),
                decode_tokens_per_s_per_sequence: best
                    .and_then(|b| b.decode_tokens_per_s_per_sequence),
                memory_left_bytes: best.and_then(|b| {
                    b.per_device
                        .iter()
                        .map(|d| d.capacity_bytes.saturating_sub(d.total_bytes))
                        .min()
                }),
            }
        })
        .collect();
    let fidelity = |q: Option<Quant>| {
        q.and_then(|q| Quant::ALL.iter().position(|&x| x == q))
            .unwrap_or(usize::MAX)
    };
    rows.sort_by(|a, b| {
        b.fits
            .cmp(&a.fits)
            .then(b.parameters.cmp(&a.parameters))
            .then(fidelity(a.quantization).cmp(&fidelity(b.quantization)))
            .then(
                b.decode_tokens_per_s_per_sequence
                    .unwrap_or(0.0)
                    .total_cmp(&a.decode_tokens_per_s_per_sequence.unwrap_or(0.0)),
            )
            .then(a.model.cmp(&b.model))
    });
    rows
}

/// The runtime `fit` plans with when none is named: llama.cpp on the host
/// CPU (what runs models there), else the generic rule.
pub fn default_runtime(devices: &[PlanDevice]) -> RuntimeKind {
    if !devices.is_empty() && devices.iter().all(|d| d.host) {
        RuntimeKind::LlamaCpp
    } else {
        RuntimeKind::Generic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_models_rank_first_and_agree_with_their_plans() {
        let devices = PlanDevice::from_device_string("1xrtx-4090").unwrap();
        let rows = fit(&devices, &InferenceOptions::default());
        assert_eq!(rows.len(), catalog::all().len());
        let first_misfit = rows.iter().position(|r| !r.fits).unwrap();
        assert!(rows[first_misfit..].iter().all(|r| !r.fits));
        assert!(
            rows[..first_misfit]
                .windows(2)
                .all(|w| w[0].parameters >= w[1].parameters)
        );
        // Each row is its model's own plan.
        let r = rows.iter().find(|r| r.model == "llama-3.1-8b").unwrap();
        let p = plan_inference(
            &catalog::find("llama-3.1-8b").unwrap().spec,
            &devices,
            &InferenceOptions::default(),
        );
        assert!(r.fits && p.feasible);
        assert_eq!(r.quantization, Some(p.quantization));
        assert_eq!(r.max_context_tokens, Some(p.plans[0].max_context_tokens));
        // A 405B model does not fit one 24 GB card at any level.
        assert!(
            !rows
                .iter()
                .find(|r| r.model == "llama-3.1-405b")
                .unwrap()
                .fits
        );
    }
}
