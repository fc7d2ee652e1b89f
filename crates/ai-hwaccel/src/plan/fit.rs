//! What runs here: every catalog model planned on the same devices with the
//! same options, each at the highest-fidelity level that fits
//! ([`super::InferencePlan::suggested_quantization`]), ranked — models that fit
//! first; among them the larger model, then the higher-fidelity level, then
//! the faster decode. [`FitFilter`] narrows the catalog by use and size
//! (`fit --use`, `--min-params`, `--max-params`).

use serde::{Deserialize, Serialize};

use super::catalog::{self, CatalogModel, Use};
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
    /// device's bandwidth is unknown, and for an encoder.
    pub decode_tokens_per_s_per_sequence: Option<f64>,
    /// The model is an encoder (an embedding model), which never decodes:
    /// `encode_tokens_per_s` is its speed.
    #[serde(default)]
    pub encoder: bool,
    /// An encoder's rate encoding one input in the best plan (the plan's
    /// prefill rate); `None` for decoders and when the rate is unknown.
    #[serde(default)]
    pub encode_tokens_per_s: Option<f64>,
    /// Memory left on the tightest device of the best plan at the planned
    /// context.
    pub memory_left_bytes: Option<u64>,
    /// The model runs only with part of it in host memory (llama.cpp's
    /// `-ngl` or `--n-cpu-moe`): listed by [`fit_with_offload`] after the
    /// models that fit whole; `fits` stays false.
    #[serde(default)]
    pub offload: bool,
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
                encoder: m.spec.encoder,
                encode_tokens_per_s: best
                    .filter(|_| m.spec.encoder)
                    .and_then(|b| b.prefill_tokens_per_s),
                memory_left_bytes: best.and_then(memory_left),
                offload: false,
            }
        })
        .collect();
    rank(&mut rows);
    rows
}

fn memory_left(p: &super::inference::Plan) -> Option<u64> {
    p.per_device
        .iter()
        .map(|d| d.capacity_bytes.saturating_sub(d.total_bytes))
        .min()
}

/// Models that fit whole first, then those that run with part of the
/// model in host memory, then the rest; within each, the larger model,
/// the higher-fidelity level, the faster decode.
fn rank(rows: &mut [FitRow]) {
    let fidelity = |q: Option<Quant>| {
        q.and_then(|q| Quant::ALL.iter().position(|&x| x == q))
            .unwrap_or(usize::MAX)
    };
    rows.sort_by(|a, b| {
        b.fits
            .cmp(&a.fits)
            .then(b.offload.cmp(&a.offload))
            .then(b.parameters.cmp(&a.parameters))
            .then(fidelity(a.quantization).cmp(&fidelity(b.quantization)))
            .then(
                b.decode_tokens_per_s_per_sequence
                    .unwrap_or(0.0)
                    .total_cmp(&a.decode_tokens_per_s_per_sequence.unwrap_or(0.0)),
            )
            .then(a.model.cmp(&b.model))
    });
}

/// [`fit_filtered`], and every model that does not fit the accelerators
/// alone tried with llama.cpp's partial offload onto `host` (the host CPU
/// and its memory: [`super::plan_offload_gpus`], the most layers — or, for
/// a mixture of experts, all layers but the routed experts of the first
/// ones — on the accelerators), at the highest-fidelity level llama.cpp
/// stores that runs that way. Follows llama.cpp's memory rule whatever
/// `opts.runtime` says: offload is llama.cpp's.
pub fn fit_with_offload(
    devices: &[PlanDevice],
    host: &PlanDevice,
    opts: &InferenceOptions,
    filter: &FitFilter,
) -> Vec<FitRow> {
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        ..opts.clone()
    };
    let gpus: Vec<PlanDevice> = devices.iter().filter(|d| !d.host).cloned().collect();
    let mut rows = fit_filtered(devices, &opts, filter);
    if gpus.is_empty() {
        return rows;
    }
    // Encoders are small and never decode: no partial offload for them.
    for row in rows.iter_mut().filter(|r| !r.fits && !r.encoder) {
        let Some(m) = catalog::find(&row.model) else {
            continue;
        };
        let levels = super::inference::candidate_levels(&m.spec, false, RuntimeKind::LlamaCpp);
        let found = levels.into_iter().find_map(|q| {
            let o = InferenceOptions {
                quant: Some(q),
                max_plans: 1,
                ..opts.clone()
            };
            super::plan_offload_gpus(&m.spec, &gpus, host, &o).map(|p| (q, p))
        });
        if let Some((q, p)) = found {
            row.offload = true;
            row.quantization = Some(q);
            row.devices_used = Some(p.devices_used);
            row.max_context_tokens = Some(p.max_context_tokens);
            row.decode_tokens_per_s_per_sequence = p.decode_tokens_per_s_per_sequence;
            row.memory_left_bytes = memory_left(&p);
        }
    }
    rank(&mut rows);
    rows
}

/// Which catalog models `fit` lists: those with every use in `uses` and a
/// parameter total within the bounds. The default keeps every model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FitFilter {
    /// Uses a model must all have (`fit --use code,reasoning`); empty: any.
    pub uses: Vec<Use>,
    /// Smallest parameter total kept (inclusive).
    pub min_params: Option<u64>,
    /// Largest parameter total kept (inclusive).
    pub max_params: Option<u64>,
}

impl FitFilter {
    /// Whether `m` passes.
    pub fn matches(&self, m: &CatalogModel) -> bool {
        let n = m.spec.parameters();
        self.uses.iter().all(|u| m.uses.contains(u))
            && self.min_params.is_none_or(|lo| n >= lo)
            && self.max_params.is_none_or(|hi| n <= hi)
    }
}

/// A parameter bound as `fit --max-params` takes it: a size with a suffix
/// (`8b`, `1.5B`, `500m`, the sizes `model` accepts) or a plain count.
pub fn parse_param_bound(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map_err(|_| format!("parameter count {s:?} is too large"));
    }
    super::source::parse_size(t).ok_or_else(|| {
        format!("{s:?} is not a parameter count (a number with k, m, b or t: 8b, 1.5b, 500m)")
    })
}

/// [`fit`] keeping the models `filter` passes, in the same order.
pub fn fit_filtered(
    devices: &[PlanDevice],
    opts: &InferenceOptions,
    filter: &FitFilter,
) -> Vec<FitRow> {
    let mut rows = fit(devices, opts);
    rows.retain(|r| catalog::find(&r.model).is_some_and(|m| filter.matches(m)));
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

    #[test]
    fn filters_keep_models_by_use_and_size() {
        let devices = PlanDevice::from_device_string("1xh100-sxm").unwrap();
        let opts = InferenceOptions::default();
        let all = fit(&devices, &opts);
        let filter = FitFilter {
            uses: vec![Use::Code],
            min_params: Some(parse_param_bound("8b").unwrap()),
            max_params: Some(parse_param_bound("40000000000").unwrap()),
        };
        let rows = fit_filtered(&devices, &opts, &filter);
        let ids: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        assert_eq!(ids, ["codellama-34b", "qwen2.5-coder-32b"]);
        // Same rows as the unfiltered fit, in the same order.
        let filter = FitFilter {
            uses: vec![Use::Reasoning],
            ..FitFilter::default()
        };
        let rows = fit_filtered(&devices, &opts, &filter);
        let expected: Vec<_> = all
            .iter()
            .filter(|r| {
                catalog::find(&r.model)
                    .unwrap()
                    .uses
                    .contains(&Use::Reasoning)
            })
            .cloned()
            .collect();
        assert_eq!(rows, expected);
        assert!(
            rows.iter()
                .any(|r| r.model == "deepseek-r1-distill-qwen-7b")
        );
        assert!(!rows.iter().any(|r| r.model == "llama-3.1-8b"));
        assert_eq!(
            fit_filtered(&devices, &opts, &FitFilter::default()).len(),
            catalog::all().len()
        );
        // Bounds are inclusive: exactly Llama 3.1 8B's total keeps it.
        let n = catalog::find("llama-3.1-8b").unwrap().spec.parameters();
        let filter = FitFilter {
            min_params: Some(n),
            max_params: Some(n),
            ..FitFilter::default()
        };
        let ids: Vec<_> = fit_filtered(&devices, &opts, &filter)
            .into_iter()
            .map(|r| r.model)
            .collect();
        assert!(ids.contains(&"llama-3.1-8b".to_string()), "{ids:?}");
        assert!(
            ids.iter()
                .all(|id| catalog::find(id).unwrap().spec.parameters() == n)
        );
        assert_eq!(parse_param_bound("1.5B").unwrap(), 1_500_000_000);
        assert!(parse_param_bound("lots").unwrap_err().contains("\"lots\""));
        assert!(parse_param_bound("99999999999999999999999").is_err());
    }

    #[test]
    fn embedding_models_are_listed_as_encoders() {
        let devices = PlanDevice::from_device_string("1xrtx-4090").unwrap();
        let filter = FitFilter {
            uses: vec![Use::Embedding],
            ..FitFilter::default()
        };
        let rows = fit_filtered(&devices, &InferenceOptions::default(), &filter);
        let ids: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        // Largest first; the Qwen3-Embedding decoders rank with the encoders.
        assert_eq!(
            ids,
            [
                "qwen3-embedding-8b",
                "qwen3-embedding-4b",
                "qwen3-embedding-0.6b",
                "bge-m3",
                "multilingual-e5-large",
                "nomic-embed-text-v1.5",
                "bge-base-en-v1.5",
                "bge-small-en-v1.5",
                "all-minilm-l6-v2",
            ]
        );
        for r in &rows {
            assert!(r.fits && r.encoder, "{}", r.model);
            assert_eq!(r.decode_tokens_per_s_per_sequence, None, "{}", r.model);
            assert!(r.encode_tokens_per_s.is_some(), "{}", r.model);
        }
    }
}
