//! Training planner: ZeRO's Figure 1, Korthikanti et al.'s activation
//! formulas, exact LoRA counts, QLoRA sanity, and monotonicity properties.

use ai_hwaccel::plan::training::{
    ActivationShape, Method, Module, Recompute, TrainingOptions, activation_bytes_layer,
    lora_tensors, model_states,
};
use ai_hwaccel::plan::{MlpKind, ModelSpec, PlanDevice, catalog, plan_training};
use proptest::prelude::*;

fn spec(id: &str) -> ModelSpec {
    catalog::find(id)
        .unwrap_or_else(|| panic!("{id} in catalog"))
        .spec
        .clone()
}

fn devices(s: &str) -> Vec<PlanDevice> {
    PlanDevice::from_device_string(s).unwrap()
}

/// The paper's model: MHA, a plain `4h` MLP (h = 4096, a = 32).
fn paper_model() -> ModelSpec {
    let mut m = spec("llama-2-7b");
    m.mlp = MlpKind::Plain;
    m.intermediate_size = 4 * m.hidden_size;
    m.mlp_bias = false;
    m
}

#[test]
fn zero_figure_1() {
    // Ψ = 7.5B, N_d = 64, K = 12: 2 bytes params, 2 grads, 4 master,
    // 8 of moments.
    let psi = 7.5e9;
    let k = 12.0;
    let nd = 64.0;
    let gb = |stage| model_states(psi, 2.0, 4.0, 8.0 * psi, stage, 64).total();
    assert_eq!(gb(0), (2.0 + 2.0 + k) * psi);
    assert_eq!(gb(1), 2.0 * psi + 2.0 * psi + k * psi / nd);
    assert_eq!(gb(2), 2.0 * psi + (2.0 + k) * psi / nd);
    assert_eq!(gb(3), (2.0 + 2.0 + k) * psi / nd);
    let rounded: Vec<f64> = (0..4)
        .map(|s| (gb(s) / 1e9 * 10.0).round() / 10.0)
        .collect();
    assert_eq!(rounded, vec![120.0, 31.4, 16.6, 1.9]);
    let s1 = model_states(psi, 2.0, 4.0, 8.0 * psi, 1, 64);
    assert_eq!(s1.master_weights, 4.0 * psi / nd);
    assert_eq!(s1.optimizer, 8.0 * psi / nd);
}

#[test]
fn korthikanti_formulas() {
    let m = paper_model();
    let (h, a) = (m.hidden_size as f64, f64::from(m.num_attention_heads));
    for (seq, b) in [(2048u64, 1u64), (4096, 2), (512, 4)] {
        let (s, bf) = (seq as f64, b as f64);
        let sbh = s * bf * h;
        for t in [1u32, 2, 4, 8] {
            let tf = f64::from(t);
            let act = |sp, recompute| {
                activation_bytes_layer(
                    &m,
                    0,
                    &ActivationShape {
                        seq,
                        micro_batch: b,
                        tensor_parallel: t,
                        sequence_parallel: sp,
                        recompute,
                    },
                )
            };
            // eq. (1)/(2): no recomputation, tensor parallel.
            assert_eq!(
                act(false, Recompute::None),
                sbh * (10.0 + 24.0 / tf + 5.0 * a * s / (h * tf)),
                "s {seq} b {b} t {t}"
            );
            // eq. (4): with sequence parallelism.
            assert_eq!(
                act(true, Recompute::None),
                sbh / tf * (34.0 + 5.0 * a * s / h)
            );
            // eq. (5): selective recomputation.
            assert_eq!(act(true, Recompute::Selective), sbh * 34.0 / tf);
            assert_eq!(act(false, Recompute::Selective), sbh * (10.0 + 24.0 / tf));
            // Full recomputation: the input only.
            assert_eq!(act(false, Recompute::Full), 2.0 * sbh);
            assert_eq!(act(true, Recompute::Full), 2.0 * sbh / tf);
        }
    }
}

#[test]
fn pipeline_first_stage_holds_all_layers_worth() {
    let m = paper_model();
    let o = TrainingOptions {
        pipeline_parallel: 4,
        seq: 1024,
        ..TrainingOptions::default()
    };
    let p = plan_training(&m, &[], &o).unwrap();
    let one = activation_bytes_layer(
        &m,
        0,
        &ActivationShape {
            seq: 1024,
            micro_batch: 1,
            tensor_parallel: 1,
            sequence_parallel: false,
            recompute: Recompute::None,
        },
    );
    let first = &p.per_device[0];
    assert_eq!(first.role, "first stage");
    // 32 layers / 4 stages × 4 micro-batches in flight = 32 layers.
    assert_eq!(first.activations_bytes, (32.0 * one).ceil() as u64);
    let last = &p.per_device[1];
    let logits = 4.0 * 1024.0 * m.vocab_size as f64;
    assert_eq!(last.activations_bytes, (8.0 * one + logits).ceil() as u64);
}

#[test]
fn lora_counts_are_exact() {
    let m = spec("llama-2-7b");
    let t = lora_tensors(&m, 8, &[Module::Q, Module::V], false);
    assert_eq!(t.elements(), 4_194_304);
    let m = spec("llama-3-8b");
    let t = lora_tensors(&m, 16, &Module::ALL_LINEAR, false);
    // 32 layers × 16 × [q,o: 2·(4096+4096), k,v: 2·(4096+1024),
    // gate,up,down: 3·(4096+14336)].
    let per_layer = 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336));
    assert_eq!(t.elements(), 32 * per_layer);
    assert_eq!(t.elements(), 41_943_040);
    let o = TrainingOptions {
        method: Method::Lora,
        lora_rank: 16,
        ..TrainingOptions::default()
    };
    assert_eq!(
        plan_training(&m, &[], &o).unwrap().trainable_parameters,
        41_943_040
    );
}

#[test]
fn qlora_70b_fits_one_48gb_device_and_full_needs_many() {
    let m = spec("llama-3.1-70b");
    // QLoRA trains with gradient checkpointing (Dettmers et al. 2023 §4).
    let o = TrainingOptions {
        method: Method::Qlora,
        lora_rank: 16,
        seq: 512,
        micro_batch: 1,
        recompute: Recompute::Full,
        ..TrainingOptions::default()
    };
    let p = plan_training(&m, &devices("1xl40s"), &o).unwrap();
    assert_eq!(p.fits, Some(true), "{:#?}", p.per_device);
    let full = TrainingOptions {
        method: Method::Full,
        zero_stage: 3,
        ..o.clone()
    };
    let p = plan_training(&m, &devices("8xl40s"), &full).unwrap();
    assert_eq!(p.fits, Some(false));
    assert!(p.suggestion.is_some());
    let p = plan_training(&m, &devices("32xl40s"), &full).unwrap();
    assert_eq!(p.fits, Some(true), "{:#?}", p.per_device);
}

#[test]
fn suggestion_comes_from_the_list() {
    let m = spec("llama-3.1-8b");
    let p = plan_training(&m, &devices("8xh100-sxm"), &TrainingOptions::default()).unwrap();
    assert_eq!(p.fits, Some(false));
    let s = p.suggestion.unwrap();
    assert!(s.change.starts_with("ZeRO stage"), "{}", s.change);
    assert!(s.total_bytes <= 80 * (1 << 30));
}

fn model_strategy() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "llama-3.2-1b",
        "llama-3.1-8b",
        "qwen2.5-7b",
        "mixtral-8x7b",
        "gemma-2-9b",
        "deepseek-v3",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn higher_zero_stage_never_increases_memory(
        id in model_strategy(), dp in 1u32..64, stage in 0u8..3,
        lora in any::<bool>(), seq in 1u64..8192,
    ) {
        let m = spec(id);
        let o = TrainingOptions {
            data_parallel: Some(dp),
            zero_stage: stage,
            seq,
            method: if lora { Method::Lora } else { Method::Full },
            ..TrainingOptions::default()
        };
        let a = plan_training(&m, &[], &o).unwrap().total_bytes;
        let up = TrainingOptions { zero_stage: stage + 1, ..o };
        let b = plan_training(&m, &[], &up).unwrap().total_bytes;
        prop_assert!(b <= a, "{id} dp {dp} stage {stage}: {b} > {a}");
    }

    #[test]
    fn more_recomputation_never_increases_activations(
        id in model_strategy(), seq in 1u64..16384, b in 1u64..16,
        tlog in 0u32..4, sp in any::<bool>(),
    ) {
        let m = spec(id);
        let t = 1u32 << tlog;
        prop_assume!(m.tensor_parallel_legal(t).is_ok());
        let act = |r| (0..m.num_layers).map(|i| activation_bytes_layer(&m, i, &ActivationShape {
            seq, micro_batch: b, tensor_parallel: t, sequence_parallel: sp, recompute: r,
        })).sum::<f64>();
        let (n, s, f) = (act(Recompute::None), act(Recompute::Selective), act(Recompute::Full));
        prop_assert!(s <= n && f <= s, "{id}: {n} {s} {f}");
    }
}
