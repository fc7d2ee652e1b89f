//! Training planner: ZeRO's Figure 1, Korthikanti et al.'s activation
//! formulas and their FlashAttention variant, the pipeline bubble and 1F1B
//! in-flight micro-batches, expert parallelism, exact LoRA counts, QLoRA
//! sanity, and monotonicity properties.

use ai_hwaccel::plan::training::{
    ActivationShape, AttentionImpl, Method, Module, Objective, Offload, Recompute, TrainingOptions,
    activation_bytes_layer, lora_tensors, model_states, pipeline_bubble_fraction,
    routed_expert_elements,
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
            let shape = |sp, recompute, attention| ActivationShape {
                seq,
                micro_batch: b,
                tensor_parallel: t,
                sequence_parallel: sp,
                recompute,
                attention,
            };
            let act = |sp, recompute| {
                activation_bytes_layer(&m, 0, &shape(sp, recompute, AttentionImpl::Eager))
            };
            let flash = |sp, recompute| {
                activation_bytes_layer(&m, 0, &shape(sp, recompute, AttentionImpl::Flash))
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
            // FlashAttention: the 5·a·s²·b/t term becomes the fp32
            // logsumexp, 4·a·s·b/t.
            let lse = 4.0 * a * s * bf / tf;
            assert_eq!(
                flash(false, Recompute::None),
                sbh * (10.0 + 24.0 / tf) + lse
            );
            assert_eq!(flash(true, Recompute::None), sbh / tf * 34.0 + lse);
            // Selective recomputation already drops the whole core: no
            // double subtraction, and no logsumexp either.
            for sp in [false, true] {
                assert_eq!(
                    flash(sp, Recompute::Selective),
                    act(sp, Recompute::Selective)
                );
                assert_eq!(flash(sp, Recompute::Full), act(sp, Recompute::Full));
            }
        }
    }
}

/// Llama-3.1-8B, s = 4096, b = 1, t = 1 (h 4096, a 32, 8 KV heads of 128,
/// gated MLP of 14336), per layer: linear part
/// `s·(10h + 2·a·d + 4·n_kv·d + 2·a·d + 6·i)` = 4096 · 147456 = 603,979,776;
/// eager adds `5·a·s²` = 2,684,354,560; flash adds `4·a·s` = 524,288. The
/// plan adds the fp32 logits `4·s·V` = 4·4096·128256 = 2,101,346,304.
#[test]
fn flash_attention_llama_3_1_8b_figures() {
    let m = spec("llama-3.1-8b");
    let shape = |recompute, attention| ActivationShape {
        seq: 4096,
        micro_batch: 1,
        tensor_parallel: 1,
        sequence_parallel: false,
        recompute,
        attention,
    };
    let layer = |r, at| activation_bytes_layer(&m, 0, &shape(r, at));
    assert_eq!(
        layer(Recompute::None, AttentionImpl::Eager),
        3_288_334_336.0
    );
    assert_eq!(layer(Recompute::None, AttentionImpl::Flash), 604_504_064.0);
    assert_eq!(
        layer(Recompute::Selective, AttentionImpl::Eager),
        603_979_776.0
    );
    assert_eq!(
        layer(Recompute::Selective, AttentionImpl::Flash),
        603_979_776.0
    );
    let acts = |attention| {
        let o = TrainingOptions {
            seq: 4096,
            attention,
            ..TrainingOptions::default()
        };
        let p = plan_training(&m, &[], &o).unwrap();
        assert_eq!(p.options.attention, attention);
        p.per_device[0].activations_bytes
    };
    // 32 layers + logits.
    assert_eq!(acts(AttentionImpl::Eager), 107_328_045_056);
    assert_eq!(acts(AttentionImpl::Flash), 21_445_476_352);
    // Flash is the default.
    assert_eq!(TrainingOptions::default().attention, AttentionImpl::Flash);
}

#[test]
fn suggestion_tries_flash_attention_first() {
    // Eager attention at s = 8192 needs 8 × 5·32·8192² bytes per layer;
    // FlashAttention alone brings it under 80 GB with ZeRO 3 over 8.
    let m = spec("llama-3.1-8b");
    let o = TrainingOptions {
        seq: 8192,
        zero_stage: 3,
        attention: AttentionImpl::Eager,
        ..TrainingOptions::default()
    };
    let p = plan_training(&m, &devices("8xh100-sxm"), &o).unwrap();
    assert_eq!(p.fits, Some(false));
    let s = p.suggestion.unwrap();
    assert_eq!(s.change, "FlashAttention");
    assert_eq!(s.options.attention, AttentionImpl::Flash);
}

fn paper_layer(seq: u64) -> f64 {
    activation_bytes_layer(
        &paper_model(),
        0,
        &ActivationShape {
            seq,
            micro_batch: 1,
            tensor_parallel: 1,
            sequence_parallel: false,
            recompute: Recompute::None,
            attention: AttentionImpl::Flash,
        },
    )
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
    let one = paper_layer(1024);
    let first = &p.per_device[0];
    assert_eq!(first.role, "first stage");
    // 32 layers / 4 stages × 4 micro-batches in flight = 32 layers.
    assert_eq!(p.micro_batches, 4);
    assert_eq!(first.activations_bytes, (32.0 * one).ceil() as u64);
    let last = &p.per_device[1];
    let logits = 4.0 * 1024.0 * m.vocab_size as f64;
    assert_eq!(last.activations_bytes, (8.0 * one + logits).ceil() as u64);
}

#[test]
fn pipeline_in_flight_micro_batches_are_capped_by_the_step() {
    // 1F1B: stage 0 of 4 holds min(4, m) micro-batches of its 8 layers.
    let m = paper_model();
    let one = paper_layer(1024);
    for (mb, first_layers) in [(1u64, 8.0), (2, 16.0), (3, 24.0), (4, 32.0), (16, 32.0)] {
        let o = TrainingOptions {
            pipeline_parallel: 4,
            seq: 1024,
            gradient_accumulation: Some(mb),
            ..TrainingOptions::default()
        };
        let p = plan_training(&m, &[], &o).unwrap();
        assert_eq!(
            p.per_device[0].activations_bytes,
            (first_layers * one).ceil() as u64,
            "m {mb}"
        );
        assert_eq!(p.warnings.iter().any(|w| w.contains("idle")), mb < 4);
    }
}

#[test]
fn pipeline_bubble_stretches_the_step() {
    assert_eq!(pipeline_bubble_fraction(1, 1), 0.0);
    assert_eq!(pipeline_bubble_fraction(1, 64), 0.0);
    assert_eq!(pipeline_bubble_fraction(4, 4), 3.0 / 7.0);
    assert_eq!(pipeline_bubble_fraction(8, 32), 7.0 / 39.0);
    // Llama-3.1-8B on 8 × H100 SXM (989.5 dense bf16 TFLOPS), p = 4,
    // N_d = 2: FLOPs = 6 × 8,030,261,248 × (2048 · m · 2) tokens; busy
    // time = FLOPs / (8 × 989.5e12 × 0.462); step = busy × (m + 3)/m.
    let m = spec("llama-3.1-8b");
    let devs = devices("8xh100-sxm");
    for (mb, bubble) in [
        (None, 3.0 / 7.0),
        (Some(4u64), 3.0 / 7.0),
        (Some(12), 3.0 / 15.0),
    ] {
        let o = TrainingOptions {
            pipeline_parallel: 4,
            gradient_accumulation: mb,
            zero_stage: 1,
            ..TrainingOptions::default()
        };
        let p = plan_training(&m, &devs, &o).unwrap();
        let micro = mb.unwrap_or(4);
        assert_eq!(p.micro_batches, micro);
        assert_eq!(p.data_parallel, 2);
        assert_eq!(p.pipeline_bubble_fraction, bubble);
        let tokens = 2048 * micro * 2;
        assert_eq!(p.tokens_per_step, tokens);
        let flops = 6.0 * 8_030_261_248.0 * tokens as f64;
        assert_eq!(p.flops_per_step, flops);
        let busy = flops / (8.0 * 989.5e12 * 0.462);
        let step = busy * (micro + 3) as f64 / micro as f64;
        let got = p.step_seconds.unwrap();
        assert!((got - step).abs() <= 1e-12 * step, "{got} vs {step}");
    }
    // No pipeline: no bubble, busy time only.
    let p = plan_training(&m, &devs, &TrainingOptions::default()).unwrap();
    assert_eq!(p.pipeline_bubble_fraction, 0.0);
    let busy = 6.0 * 8_030_261_248.0 * (2048.0 * 8.0) / (8.0 * 989.5e12 * 0.462);
    let got = p.step_seconds.unwrap();
    assert!((got - busy).abs() <= 1e-12 * busy, "{got} vs {busy}");
}

/// Mixtral-8x7B: 32 MoE layers of 8 experts of 3 × 4096 × 14336, so
/// E = 45,097,156,608 routed-expert parameters of 46,702,792,704.
const MIXTRAL_E: u64 = 32 * 8 * 3 * 4096 * 14336;
const MIXTRAL_N: u64 = 46_702_792_704;

#[test]
fn expert_parallel_divides_routed_experts_of_mixtral() {
    let m = spec("mixtral-8x7b");
    assert_eq!(routed_expert_elements(&m), MIXTRAL_E);
    assert_eq!(MIXTRAL_E, 45_097_156_608);
    let plan = |e: u32, dp: u32, zero: u8| {
        let o = TrainingOptions {
            expert_parallel: e,
            data_parallel: Some(dp),
            zero_stage: zero,
            ..TrainingOptions::default()
        };
        plan_training(&m, &[], &o).unwrap().per_device[0].clone()
    };
    // ZeRO 0, mixed-precision AdamW: 16 bytes per parameter, experts / e.
    let whole = plan(1, 8, 0);
    assert_eq!(whole.expert_states_bytes, 16 * MIXTRAL_E);
    for e in [1u32, 2, 4, 8] {
        let d = plan(e, 8, 0);
        assert_eq!(
            d.expert_states_bytes,
            16 * MIXTRAL_E / u64::from(e),
            "e {e}"
        );
        assert_eq!(
            d.expert_states_bytes * u64::from(e),
            whole.expert_states_bytes
        );
        // Non-expert parameters are untouched.
        assert_eq!(
            d.parameters_bytes,
            2 * (MIXTRAL_N - MIXTRAL_E) + 2 * MIXTRAL_E / u64::from(e)
        );
    }
    assert_eq!(plan(8, 8, 0).expert_states_bytes, 90_194_313_216);
    assert_eq!(plan(8, 8, 0).parameters_bytes, 14_485_561_344);
    // ZeRO 1 over N_d = 16 with e = 8: expert master weights and moments
    // shard over the N_d/e = 2 ranks holding the same experts,
    // the rest over 16.
    let d = plan(8, 16, 1);
    assert_eq!(
        d.expert_states_bytes,
        4 * MIXTRAL_E / 8 + 12 * MIXTRAL_E / 16
    );
    let rest = MIXTRAL_N - MIXTRAL_E;
    assert_eq!(
        d.optimizer_bytes + d.master_weights_bytes,
        12 * rest / 16 + 12 * MIXTRAL_E / 16
    );
    // ZeRO 3 already shards experts over all N_d ranks: EP changes nothing.
    assert_eq!(plan(8, 8, 3).expert_states_bytes, 16 * MIXTRAL_E / 8);
    assert_eq!(plan(1, 8, 3).expert_states_bytes, 16 * MIXTRAL_E / 8);
}

#[test]
fn expert_parallel_divides_routed_experts_of_deepseek_v3() {
    // 58 MoE layers (3 dense) × 256 routed experts × 3 × 7168 × 2048;
    // the shared expert is not split.
    let m = spec("deepseek-v3");
    let e_total: u64 = 58 * 256 * 3 * 7168 * 2048;
    assert_eq!(routed_expert_elements(&m), e_total);
    assert_eq!(e_total, 653_908_770_816);
    let plan = |e: u32| {
        let o = TrainingOptions {
            expert_parallel: e,
            ..TrainingOptions::default()
        };
        plan_training(&m, &[], &o).unwrap()
    };
    let whole = plan(1).per_device[0].clone();
    for e in [1u32, 8, 16, 64, 256] {
        let p = plan(e);
        // Without devices N_d defaults to e.
        assert_eq!(p.data_parallel, e);
        let d = &p.per_device[0];
        assert_eq!(d.expert_states_bytes, 16 * e_total / u64::from(e), "e {e}");
        assert_eq!(
            d.parameters_bytes,
            whole.parameters_bytes - 2 * e_total + 2 * e_total / u64::from(e)
        );
    }
    assert_eq!(plan(64).per_device[0].expert_states_bytes, 163_477_192_704);
}

#[test]
fn expert_parallel_splits_frozen_experts_and_adapters() {
    // QLoRA on Mixtral: the NF4 experts are divided by e like trainable ones.
    let m = spec("mixtral-8x7b");
    let nf4 = ai_hwaccel::plan::Quant::Nf4.bits_per_weight() / 8.0;
    let o = TrainingOptions {
        method: Method::Qlora,
        expert_parallel: 2,
        ..TrainingOptions::default()
    };
    let d = plan_training(&m, &[], &o).unwrap().per_device[0].clone();
    assert_eq!(
        d.expert_states_bytes,
        (MIXTRAL_E as f64 * nf4 / 2.0).ceil() as u64
    );
    // DPO with a full reference: both copies' experts split.
    let o = TrainingOptions {
        objective: Objective::Dpo,
        expert_parallel: 8,
        ..TrainingOptions::default()
    };
    let d = plan_training(&m, &[], &o).unwrap().per_device[0].clone();
    assert_eq!(d.expert_states_bytes, (16 + 2) * MIXTRAL_E / 8);
    // Offloaded optimizer states leave the device, experts' included.
    let o = TrainingOptions {
        offload: Offload::Optimizer,
        expert_parallel: 8,
        ..TrainingOptions::default()
    };
    let d = plan_training(&m, &[], &o).unwrap().per_device[0].clone();
    assert_eq!(d.expert_states_bytes, 4 * MIXTRAL_E / 8);
    // A dense model holds no routed experts.
    let d = plan_training(&spec("llama-3.1-8b"), &[], &TrainingOptions::default()).unwrap();
    assert_eq!(d.per_device[0].expert_states_bytes, 0);
}

#[test]
fn expert_parallel_rejects_illegal_degrees() {
    let reject = |id: &str, o: TrainingOptions, devs: &[PlanDevice], why: &str| {
        let e = plan_training(&spec(id), devs, &o).unwrap_err();
        assert_eq!(e.option, "expert_parallel", "{e}");
        assert!(e.reason.contains(why), "{e}");
    };
    let ep = |e| TrainingOptions {
        expert_parallel: e,
        ..TrainingOptions::default()
    };
    reject("llama-3.1-8b", ep(2), &[], "no routed experts");
    reject(
        "mixtral-8x7b",
        ep(3),
        &[],
        "does not divide the 8 routed experts",
    );
    reject("deepseek-v3", ep(512), &[], "256 routed experts");
    reject("mixtral-8x7b", ep(0), &[], "0");
    reject(
        "mixtral-8x7b",
        TrainingOptions {
            data_parallel: Some(2),
            ..ep(4)
        },
        &[],
        "data-parallel degree 2",
    );
    // 8 devices at TP 2 leave N_d = 4: EP 8 does not fit in it.
    reject(
        "mixtral-8x7b",
        TrainingOptions {
            tensor_parallel: 2,
            ..ep(8)
        },
        &devices("8xh100-sxm"),
        "data-parallel degree 4",
    );
    // EP 4 does: two expert-data-parallel replicas of each expert shard.
    let p = plan_training(
        &spec("mixtral-8x7b"),
        &devices("8xh100-sxm"),
        &TrainingOptions {
            tensor_parallel: 2,
            ..ep(4)
        },
    )
    .unwrap();
    assert_eq!(p.devices_used, 8);
    assert_eq!(
        p.per_device[0].expert_states_bytes,
        16 * MIXTRAL_E / (2 * 4)
    );
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
        let act = |r, attention| (0..m.num_layers).map(|i| activation_bytes_layer(&m, i, &ActivationShape {
            seq, micro_batch: b, tensor_parallel: t, sequence_parallel: sp, recompute: r, attention,
        })).sum::<f64>();
        for at in [AttentionImpl::Flash, AttentionImpl::Eager] {
            let (n, s, f) = (act(Recompute::None, at), act(Recompute::Selective, at), act(Recompute::Full, at));
            prop_assert!(s <= n && f <= s, "{id} {at:?}: {n} {s} {f}");
        }
        // FlashAttention stores 4·a·s·b/t against eager's 5·a·s²·b/t.
        let (fl, ea) = (act(Recompute::None, AttentionImpl::Flash), act(Recompute::None, AttentionImpl::Eager));
        prop_assert!(fl <= ea, "{id}: flash {fl} > eager {ea}");
    }
}

#[test]
fn lora_base_costs_four_flops_per_parameter_and_adapters_six() {
    // Frozen base: forward 2N + input gradients 2N (Narayanan et al. 2021
    // §5.1); the adapters are trained: 6 per parameter.
    let m = spec("llama-3.1-8b");
    let o = TrainingOptions {
        method: Method::Lora,
        seq: 1024,
        ..TrainingOptions::default()
    };
    let p = plan_training(&m, &devices("1xh100-sxm"), &o).unwrap();
    let n = m.active_parameters() as f64;
    let adapters = p.trainable_parameters as f64;
    assert!(adapters > 0.0 && adapters < n / 100.0);
    let expected = (4.0 * n + 6.0 * adapters) * p.tokens_per_step as f64;
    assert!(
        (p.flops_per_step - expected).abs() <= expected * 1e-12,
        "{} vs {expected}",
        p.flops_per_step
    );
    // Full fine-tuning of the same model is 6N; full recomputation adds 2N.
    let full = plan_training(
        &m,
        &devices("8xh100-sxm"),
        &TrainingOptions {
            method: Method::Full,
            zero_stage: 3,
            seq: 1024,
            ..TrainingOptions::default()
        },
    )
    .unwrap();
    let per_token = full.flops_per_step / full.tokens_per_step as f64;
    assert!((per_token - 6.0 * n).abs() <= 6.0 * n * 1e-12);
    let lora_recompute = plan_training(
        &m,
        &devices("1xh100-sxm"),
        &TrainingOptions {
            recompute: Recompute::Full,
            ..o.clone()
        },
    )
    .unwrap();
    let per_token = lora_recompute.flops_per_step / lora_recompute.tokens_per_step as f64;
    let want = 6.0 * n + 6.0 * adapters;
    assert!((per_token - want).abs() <= want * 1e-12);
}

#[test]
fn framework_overhead_defaults_to_the_measured_cuda_figure_on_nvidia_only() {
    use ai_hwaccel::plan::training::CUDA_FRAMEWORK_OVERHEAD_BYTES;
    let m = spec("llama-3.1-8b");
    let o = TrainingOptions {
        method: Method::Lora,
        seq: 1024,
        ..TrainingOptions::default()
    };
    let other = |devs: &str, o: &TrainingOptions| {
        let p = plan_training(&m, &devices(devs), o).unwrap();
        (p.per_device[0].other_bytes, p.warnings)
    };
    let (nvidia, w) = other("1xh100-sxm", &o);
    let (zero, _) = other(
        "1xh100-sxm",
        &TrainingOptions {
            framework_overhead_bytes: Some(0),
            ..o.clone()
        },
    );
    assert_eq!(nvidia - zero, CUDA_FRAMEWORK_OVERHEAD_BYTES);
    assert_eq!(CUDA_FRAMEWORK_OVERHEAD_BYTES, 1343 << 20);
    assert!(!w.iter().any(|w| w.contains("framework overhead")), "{w:?}");
    // No cited measurement for other vendors: nothing reserved, and said so.
    let (amd, w) = other("1xmi300x", &o);
    let (amd_zero, _) = other(
        "1xmi300x",
        &TrainingOptions {
            framework_overhead_bytes: Some(0),
            ..o.clone()
        },
    );
    assert_eq!(amd, amd_zero);
    assert!(
        w.iter()
            .any(|w| w.contains("no measured framework overhead")),
        "{w:?}"
    );
}

#[test]
fn a_plan_above_ninety_percent_of_a_device_warns() {
    let m = spec("llama-3.1-8b");
    let base = TrainingOptions {
        method: Method::Lora,
        seq: 1024,
        framework_overhead_bytes: Some(0),
        ..TrainingOptions::default()
    };
    let p = plan_training(&m, &devices("1xh100-sxm"), &base).unwrap();
    let used = p.per_device[0].total_bytes;
    let cap = p.capacity_bytes.unwrap();
    // Pad the overhead so the plan lands at 95 % and then at 80 % of the card.
    let at = |fraction: f64| {
        let pad = (cap as f64 * fraction) as u64 - used;
        plan_training(
            &m,
            &devices("1xh100-sxm"),
            &TrainingOptions {
                framework_overhead_bytes: Some(pad),
                ..base.clone()
            },
        )
        .unwrap()
    };
    let tight = at(0.95);
    assert_eq!(tight.fits, Some(true));
    assert!(
        tight.warnings.iter().any(|w| w.contains("95%")),
        "{:?}",
        tight.warnings
    );
    let roomy = at(0.80);
    assert_eq!(roomy.fits, Some(true));
    assert!(
        !roomy
            .warnings
            .iter()
            .any(|w| w.contains("of a device's memory"))
    );
}
