//! Inference planner: published parameter counts, KV-cache formulas, and
//! plans for known cases.

use ai_hwaccel::plan::{
    InferenceOptions, KvDtype, PlanDevice, Quant, catalog, load_model, plan_inference,
};
use proptest::prelude::*;

fn spec(id: &str) -> ai_hwaccel::plan::ModelSpec {
    catalog::find(id)
        .unwrap_or_else(|| panic!("{id} in catalog"))
        .spec
        .clone()
}

fn devices(s: &str) -> Vec<PlanDevice> {
    PlanDevice::from_device_string(s).unwrap()
}

fn with_quant(q: Quant) -> InferenceOptions {
    InferenceOptions {
        quant: Some(q),
        ..Default::default()
    }
}

/// Totals the Hugging Face Hub reports (safetensors.total) for each model.
#[test]
fn parameter_counts_equal_published_totals() {
    let expected: &[(&str, u64)] = &[
        ("llama-2-7b", 6_738_415_616),
        ("llama-2-13b", 13_015_864_320),
        ("llama-2-70b", 68_976_648_192),
        ("llama-3-8b", 8_030_261_248),
        ("llama-3-70b", 70_553_706_496),
        ("llama-3.1-405b", 405_853_388_800),
        ("llama-3.2-1b", 1_235_814_400),
        ("llama-3.2-3b", 3_212_749_824),
        ("mistral-7b", 7_241_732_096),
        ("mixtral-8x7b", 46_702_792_704),
        ("mixtral-8x22b", 140_620_634_112),
        ("qwen2.5-0.5b", 494_032_768),
        ("qwen2.5-7b", 7_615_616_512),
        ("qwen2.5-72b", 72_706_203_648),
        ("qwen3-8b", 8_190_735_360),
        ("qwen3-30b-a3b", 30_532_122_624),
        ("qwen3-235b-a22b", 235_093_634_560),
        ("gemma-2-2b", 2_614_341_888),
        ("gemma-2-9b", 9_241_705_984),
        ("gemma-2-27b", 27_227_128_320),
        ("gemma-3-1b", 999_885_952),
        ("phi-3-mini", 3_821_079_552),
        ("phi-4", 14_659_507_200),
        ("deepseek-v3", 671_026_419_200),
        ("opt-125m", 125_239_296),
        ("opt-6.7b", 6_658_473_984),
    ];
    for &(id, n) in expected {
        assert_eq!(spec(id).parameters(), n, "{id}");
    }
    // Active parameters: Mixtral's "12.9B active", DeepSeek-V3's "37B activated",
    // Qwen3's "A3B"/"A22B".
    assert_eq!(spec("mixtral-8x7b").active_parameters(), 12_879_925_248);
    let ds = spec("deepseek-v3").active_parameters() as f64 / 1e9;
    assert!((37.0..38.0).contains(&ds), "{ds}");
    let q = spec("qwen3-30b-a3b").active_parameters() as f64 / 1e9;
    assert!((3.0..3.5).contains(&q), "{q}");
    let q = spec("qwen3-235b-a22b").active_parameters() as f64 / 1e9;
    assert!((22.0..22.5).contains(&q), "{q}");
}

#[test]
fn kv_cache_bytes_per_token() {
    // MHA: 2 (K,V) × 32 heads × 128 × 32 layers × 2 bytes.
    assert_eq!(
        spec("llama-2-7b").kv_cache_bytes_per_token(2.0),
        2 * 32 * 128 * 32 * 2
    );
    // GQA: 8 KV heads.
    assert_eq!(
        spec("llama-3.1-8b").kv_cache_bytes_per_token(2.0),
        2 * 8 * 128 * 32 * 2
    );
    assert_eq!(
        spec("llama-3.1-70b").kv_cache_bytes_per_token(2.0),
        2 * 8 * 128 * 80 * 2
    );
    // MLA: latent 512 + rope key 64 per layer, 61 layers.
    assert_eq!(
        spec("deepseek-v3").kv_cache_bytes_per_token(2.0),
        (512 + 64) * 61 * 2
    );
    // fp8 cache halves it.
    assert_eq!(
        spec("llama-3.1-8b").kv_cache_bytes_per_token(1.0),
        8 * 128 * 32 * 2
    );
    // Sliding windows: Mistral 7B v0.1 caches at most 4096 tokens per layer.
    let m = spec("mistral-7b");
    let per_token = 2 * 8 * 128 * 32 * 2;
    assert_eq!(m.kv_cache_bytes(1000, 1, 2.0), 1000 * per_token);
    assert_eq!(m.kv_cache_bytes(32768, 1, 2.0), 4096 * per_token);
    // Gemma 2 9B: 21 global layers hold the context, 21 sliding hold ≤ 4096.
    let g = spec("gemma-2-9b");
    let per_layer = 2 * 8 * 256 * 2;
    assert_eq!(
        g.kv_cache_bytes(8192, 1, 2.0),
        (21 * 8192 + 21 * 4096) * per_layer
    );
    assert_eq!(
        g.kv_cache_bytes(8192, 3, 2.0),
        3 * (21 * 8192 + 21 * 4096) * per_layer
    );
    // Gemma 3 1B: 4 global layers of 26, window 512, 1 KV head of 256.
    let g = spec("gemma-3-1b");
    assert_eq!(
        g.kv_cache_bytes(32768, 1, 2.0),
        (4 * 32768 + 22 * 512) * 2 * 256 * 2
    );
}

/// A decode step reads and rewrites the whole linear-attention state: with
/// uncalibrated speeds at the KV cache's fraction (so halving that fraction
/// adds the cache's bytes and twice the state's over the bandwidth), with
/// calibrated ones at the runtime's fitted fraction, which the plan names;
/// a model without such layers names none.
#[test]
fn decode_reads_and_rewrites_the_linear_attention_state() {
    use ai_hwaccel::plan::runtime::RuntimeKind;
    let m = spec("qwen3-next-80b-a3b");
    let one = devices("1xh200");
    let bw = one[0].bandwidth_bytes_per_s.unwrap() as f64;
    let run = |calibrated: bool, kv: Option<f64>, model: &ai_hwaccel::plan::ModelSpec| {
        plan_inference(
            model,
            &one,
            &InferenceOptions {
                context: Some(4096),
                quant: Some(Quant::Q4K),
                runtime: RuntimeKind::LlamaCpp,
                calibrated_speed: calibrated,
                decode_efficiency: 1.0,
                kv_read_efficiency: kv,
                ..Default::default()
            },
        )
    };
    let step = |p: &ai_hwaccel::plan::InferencePlan| {
        1.0 / p.plans[0].decode_tokens_per_s_per_sequence.unwrap()
    };
    let (full, half) = (run(false, Some(1.0), &m), run(false, Some(0.5), &m));
    let state = ai_hwaccel::plan::inference::linear_state_bytes(&m, RuntimeKind::LlamaCpp);
    // 36 layers × (conv window 3 × 8192 + state 32 × 128 × 128), F32.
    assert_eq!(state, (36 * (3 * 8192 + 32 * 128 * 128) * 4) as f64);
    let cache = full.plans[0].per_device[0].kv_cache_bytes as f64 - state;
    let extra = (step(&half) - step(&full)) * bw;
    assert!(
        (extra / (cache + 2.0 * state) - 1.0).abs() < 1e-6,
        "{extra} vs {cache} + 2 x {state}"
    );
    assert_eq!(full.linear_state_efficiency, None);
    let fitted = ai_hwaccel::plan::speed::LINEAR_STATE
        .iter()
        .find(|(r, ..)| *r == RuntimeKind::LlamaCpp)
        .map(|(_, f, _)| *f)
        .expect("fitted for llama.cpp");
    assert!(fitted > 0.0 && fitted < 1.0, "{fitted}");
    assert_eq!(run(true, None, &m).linear_state_efficiency, Some(fitted));
    assert_eq!(
        run(true, None, &spec("llama-3-8b")).linear_state_efficiency,
        None
    );
}

#[test]
fn linear_attention_layers_hold_a_fixed_state_not_a_kv_cache() {
    // Qwen3-Next 80B-A3B: layers 3, 7, … 47 (12) attend fully with 2 KV heads
    // of 256; the 36 Gated DeltaNet layers cache no tokens but hold, per
    // sequence, a conv window of (4 − 1) × (2·16·128 + 32·128) and a
    // recurrent state of 32 × 128 × 128 (vLLM gated_delta_net_state_shape).
    let m = spec("qwen3-next-80b-a3b");
    assert_eq!(m.linear_layers(), 36);
    assert_eq!(m.kv_cache_bytes_per_token(2.0), 12 * 2 * 2 * 256 * 2);
    assert_eq!(m.kv_cache_bytes(32768, 1, 2.0), 12 * 32768 * 1024 * 2);
    let state = 36 * (3 * 8192 + 32 * 128 * 128);
    assert_eq!(m.linear_state_elements_per_sequence(), state);
    // The plan holds both: KV for the full layers and the state per
    // sequence at 16 bits, whatever the context.
    let one = devices("1xh200");
    for batch in [1u64, 4] {
        let p = plan_inference(
            &m,
            &one,
            &InferenceOptions {
                context: Some(32768),
                batch,
                quant: Some(Quant::Fp8),
                ..Default::default()
            },
        );
        assert!(p.feasible, "{:?}", p.rejected);
        // Their prompt kernels are planned by FLOPs only: the plan says so.
        assert!(
            p.warnings.iter().any(|w| w.contains("Gated DeltaNet")),
            "{:?}",
            p.warnings
        );
        let kv = p.plans[0].per_device[0].kv_cache_bytes;
        assert_eq!(
            kv,
            batch * (12 * 32768 * 1024 * 2 + state * 2),
            "batch {batch}"
        );
        // llama.cpp holds the recurrent state in F32
        // (llama_memory_recurrent's recurrent_type_r/s): 4 bytes an element.
        let l = plan_inference(
            &m,
            &one,
            &InferenceOptions {
                context: Some(32768),
                batch,
                quant: Some(Quant::Q4K),
                runtime: ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp,
                ..Default::default()
            },
        );
        assert!(l.feasible, "{:?}", l.rejected);
        assert_eq!(
            l.plans[0].per_device[0].kv_cache_bytes,
            batch * (12 * 32768 * 1024 * 2 + state * 4),
            "llama.cpp, batch {batch}"
        );
    }
    // SGLang holds the recurrent state in float32 (--mamba-ssm-dtype's
    // default), the convolution window at 16 bits.
    let conv = 36 * 3 * 8192;
    let ssm = 36 * 32 * 128 * 128;
    let g = plan_inference(
        &m,
        &one,
        &InferenceOptions {
            context: Some(32768),
            quant: Some(Quant::Fp8),
            runtime: ai_hwaccel::plan::runtime::RuntimeKind::Sglang,
            ..Default::default()
        },
    );
    assert!(g.feasible, "{:?}", g.rejected);
    assert_eq!(
        g.plans[0].per_device[0].kv_cache_bytes,
        12 * 32768 * 1024 * 2 + conv * 2 + ssm * 4
    );
    // Qwen3.5's config asks for the recurrent state in float32
    // (mamba_ssm_dtype), which vLLM follows: 30 DeltaNet layers of
    // 3 × 8192 window and 32 × 128 × 128 state elements.
    let q = spec("qwen3.5-35b-a3b");
    assert_eq!(
        q.linear_attention
            .as_ref()
            .unwrap()
            .ssm_state_dtype
            .as_deref(),
        Some("fp32")
    );
    let v = plan_inference(
        &q,
        &one,
        &InferenceOptions {
            context: Some(4096),
            quant: Some(Quant::Bf16),
            runtime: ai_hwaccel::plan::runtime::RuntimeKind::Vllm,
            ..Default::default()
        },
    );
    assert!(v.feasible, "{:?}", v.rejected);
    let kv_tokens = 10 * 4096 * (2 * 2 * 256) * 2;
    assert_eq!(
        v.plans[0].per_device[0].kv_cache_bytes,
        kv_tokens + 30 * (3 * 8192 * 2 + 32 * 128 * 128 * 4)
    );
}

/// A model no suggested level fits (DeepSeek-R1 under llama.cpp on 8 × 24
/// GB, which Q3_K_S misses by about 100 GB) is advised the level with the
/// most bits among those planned only when asked for that fits, with why
/// it is not suggested; on 4 of the cards not even IQ1_S fits and no such
/// advice is given.
#[test]
fn advice_names_an_i_quant_where_no_suggested_level_fits() {
    let m = spec("deepseek-r1");
    let opts = InferenceOptions {
        runtime: ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp,
        ..Default::default()
    };
    let eight = plan_inference(&m, &devices("8xrtx-4090"), &opts);
    assert!(!eight.feasible);
    let advice = eight
        .advice
        .iter()
        .find(|a| a.contains("below the suggested levels"))
        .unwrap_or_else(|| panic!("{:?}", eight.advice));
    let level = advice
        .split(": ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(Quant::parse)
        .unwrap();
    assert!(level.bits_per_weight() < 3.0, "{advice}");
    assert!(advice.contains("importance matrix"), "{advice}");
    let fits = plan_inference(
        &m,
        &devices("8xrtx-4090"),
        &InferenceOptions {
            quant: Some(level),
            ..opts.clone()
        },
    );
    assert!(fits.feasible, "{advice}");
    // Its decode estimate says it is not calibrated for i-quants; a
    // K-quant plan says nothing of the kind.
    let uncalibrated = |p: &ai_hwaccel::plan::InferencePlan| {
        p.warnings
            .iter()
            .any(|w| w.contains("i-quant below IQ4 is not calibrated"))
    };
    assert!(uncalibrated(&fits), "{:?}", fits.warnings);
    assert!(!uncalibrated(&eight), "{:?}", eight.warnings);
    // One level up from it no longer fits.
    let above = Quant::ALL[Quant::ALL.iter().position(|&q| q == level).unwrap() - 1];
    let above_plan = plan_inference(
        &m,
        &devices("8xrtx-4090"),
        &InferenceOptions {
            quant: Some(above),
            ..opts.clone()
        },
    );
    assert!(!above_plan.feasible, "{advice}: {above} fits too");
    let four = plan_inference(&m, &devices("4xrtx-4090"), &opts);
    assert!(
        !four
            .advice
            .iter()
            .any(|a| a.contains("below the suggested levels")),
        "{:?}",
        four.advice
    );
}

#[test]
fn seventy_b_needs_4bit_on_one_80gb_gpu() {
    let m = spec("llama-3.1-70b");
    let one = devices("1xh100-sxm");
    let bf16 = plan_inference(&m, &one, &with_quant(Quant::Bf16));
    assert!(!bf16.feasible);
    assert!(
        bf16.rejected[0].reason.contains("needs"),
        "{:?}",
        bf16.rejected
    );
    assert!(
        bf16.advice
            .iter()
            .any(|a| a.contains("smaller quantization")),
        "{:?}",
        bf16.advice
    );
    assert!(
        bf16.advice.iter().any(|a| a.contains("more devices: 2 ×")),
        "{:?}",
        bf16.advice
    );
    let int4 = plan_inference(&m, &one, &with_quant(Quant::Int4));
    assert!(int4.feasible);
    let p = &int4.plans[0];
    assert_eq!(
        (p.tensor_parallel, p.pipeline_parallel, p.data_parallel),
        (1, 1, 1)
    );
    let d = &p.per_device[0];
    // 4.16-bit projections + 16-bit embeddings and head: about 38 GiB.
    let gib = d.weights_bytes as f64 / (1u64 << 30) as f64;
    assert!((36.0..40.0).contains(&gib), "{gib}");
    assert_eq!(
        d.total_bytes,
        d.weights_bytes + d.kv_cache_bytes + d.activation_bytes + d.overhead_bytes
    );
    // KV at the default 4096 context: 320 KiB per token.
    assert_eq!(d.kv_cache_bytes, 4096 * 327_680);
    // Two H100s hold it at bf16 with TP=2 the fastest layout.
    let two = plan_inference(&m, &devices("2xh100-sxm"), &with_quant(Quant::Bf16));
    assert!(two.feasible);
    assert_eq!(two.plans[0].tensor_parallel, 2);
}

#[test]
fn suggestion_is_highest_fidelity_that_fits_and_runs() {
    let m = spec("llama-3.1-70b");
    // H100 runs fp8: fp8 weights (~68 GB) fit one 80 GB part.
    let p = plan_inference(&m, &devices("1xh100-sxm"), &InferenceOptions::default());
    assert_eq!(p.suggested_quantization, Some(Quant::Fp8));
    assert!(p.feasible);
    // A100 has no fp8: int8 is the next 8-bit level it runs.
    let p = plan_inference(&m, &devices("1xa100-80gb"), &InferenceOptions::default());
    assert_eq!(p.suggested_quantization, Some(Quant::Int8));
    // Enough memory: the model's own bf16.
    let p = plan_inference(&m, &devices("4xh100-sxm"), &InferenceOptions::default());
    assert_eq!(p.suggested_quantization, Some(Quant::Bf16));
    // V100 has no bf16: fp16.
    let p = plan_inference(
        &spec("llama-3.1-8b"),
        &devices("1xv100-sxm2-32gb"),
        &InferenceOptions::default(),
    );
    assert_eq!(p.suggested_quantization, Some(Quant::Fp16));
    // An explicit fp8 request on an A100 is refused with the reason.
    let p = plan_inference(&m, &devices("2xa100-80gb"), &with_quant(Quant::Fp8));
    assert!(!p.feasible);
    assert!(
        p.rejected[0].reason.contains("does not run fp8"),
        "{:?}",
        p.rejected
    );
}

#[test]
fn no_plan_uses_an_illegal_tensor_parallel_degree() {
    // Qwen2.5-7B: 28 query heads, 4 KV heads.
    let m = spec("qwen2.5-7b");
    let p = plan_inference(
        &m,
        &devices("8xh100-sxm"),
        &InferenceOptions {
            max_plans: 1000,
            ..Default::default()
        },
    );
    assert!(p.feasible);
    for plan in &p.plans {
        assert_eq!(28 % plan.tensor_parallel, 0, "tp {}", plan.tensor_parallel);
    }
    assert!(p.plans.iter().any(|x| x.tensor_parallel == 4));
    assert!(
        p.rejected
            .iter()
            .any(|r| r.tensor_parallel == 8 && r.reason.contains("28 attention heads"))
    );
    // KV heads replicate beyond their count: Llama-3.1-70B (8 KV heads) at TP 16
    // is legal on paper but no NVLink domain has 16 H100s.
    let m = spec("llama-3.1-70b");
    assert!(m.tensor_parallel_legal(16).is_ok());
    let p = plan_inference(
        &m,
        &devices("16xh100-sxm"),
        &InferenceOptions {
            max_plans: 1000,
            ..Default::default()
        },
    );
    assert!(p.plans.iter().all(|x| x.tensor_parallel <= 8));
}

#[test]
fn heterogeneous_pipeline_balances_memory() {
    let m = spec("llama-3.1-70b");
    let devs = devices("1xh100-sxm,1xl4");
    let p = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            quant: Some(Quant::Int4),
            max_plans: 100,
            ..Default::default()
        },
    );
    let pipe = p
        .plans
        .iter()
        .find(|x| x.pipeline_parallel == 2)
        .expect("a 2-stage plan");
    let h100 = pipe
        .per_device
        .iter()
        .find(|d| d.device.starts_with("h100"))
        .unwrap();
    let l4 = pipe
        .per_device
        .iter()
        .find(|d| d.device.starts_with("l4"))
        .unwrap();
    let layers = |d: &ai_hwaccel::plan::inference::DeviceMemory| d.layers.1 - d.layers.0;
    assert_eq!(layers(h100) + layers(l4), 80);
    // 80 GiB vs 24 GiB: the L4 gets roughly 24/104 of the layers.
    assert!(layers(l4) < layers(h100));
    let fill = |d: &ai_hwaccel::plan::inference::DeviceMemory| {
        d.total_bytes as f64 / d.capacity_bytes as f64
    };
    assert!(
        (fill(h100) - fill(l4)).abs() < 0.15,
        "{} vs {}",
        fill(h100),
        fill(l4)
    );
}

#[test]
fn moe_and_mla_plans() {
    // DeepSeek-V3 at fp8 on 8×H200 (141 GB each): fits with TP=8.
    let m = spec("deepseek-v3");
    let p = plan_inference(&m, &devices("8xh200"), &with_quant(Quant::Fp8));
    assert!(p.feasible, "{:?} {:?}", p.rejected, p.advice);
    // MLA's KV is not split by TP: every rank holds the whole latent.
    let d = &p
        .plans
        .iter()
        .find(|x| x.tensor_parallel == 8)
        .unwrap()
        .per_device[0];
    assert_eq!(d.kv_cache_bytes, 4096 * (512 + 64) * 61 * 2);
    // Mixtral decodes faster than a dense model of its total size.
    let mix = plan_inference(
        &spec("mixtral-8x7b"),
        &devices("2xh100-sxm"),
        &with_quant(Quant::Bf16),
    );
    let dense = plan_inference(
        &spec("llama-2-70b"),
        &devices("2xh100-sxm"),
        &with_quant(Quant::Bf16),
    );
    assert!(
        mix.plans[0].decode_tokens_per_s.unwrap() > dense.plans[0].decode_tokens_per_s.unwrap()
    );
}

#[test]
fn throughput_follows_the_formulas() {
    // Llama-3.1-8B bf16 on one H100 SXM (3.35 TB/s): decode at batch 1 reads
    // the weights and the KV once per token.
    let m = spec("llama-3.1-8b");
    let p = plan_inference(&m, &devices("1xh100-sxm"), &with_quant(Quant::Bf16));
    let plan = &p.plans[0];
    let d = &plan.per_device[0];
    let bytes = d.weights_bytes as f64
        - (m.embedding_params() as f64 * 2.0) * (1.0 - 1.0 / m.vocab_size as f64)
        + d.kv_cache_bytes as f64;
    let expect = 1.0 / (bytes / (3.35e12 * 0.6));
    let got = plan.decode_tokens_per_s.unwrap();
    assert!((got - expect).abs() / expect < 0.01, "{got} vs {expect}");
    // Prefill of a prompt filling the 4096-token context: (2N + 2·L·c·d_attn)
    // FLOPs per token at 989.4 dense bf16 TFLOPS × 0.5, c = 2048 the mean
    // context a prompt token attends to (half the prompt; d_attn = 4096; the
    // embedding is a lookup, not a matmul).
    assert_eq!(p.context, 4096);
    let n = (m.parameters() - m.embedding_params()) as f64;
    let flops = 2.0 * n + 2.0 * 32.0 * 2048.0 * 4096.0;
    let rate = ai_hwaccel::spec::by_id("h100-sxm")
        .unwrap()
        .tflops
        .bf16
        .unwrap();
    let expect = rate * 1e12 * 0.5 / flops;
    let got = plan.prefill_tokens_per_s.unwrap();
    assert!((got - expect).abs() / expect < 0.01, "{got} vs {expect}");
}

#[test]
fn kv_dtype_and_context_limits() {
    let m = spec("llama-3.1-8b");
    let d = devices("1xl4");
    let bf16 = plan_inference(&m, &d, &with_quant(Quant::Bf16));
    let fp8kv = plan_inference(
        &m,
        &d,
        &InferenceOptions {
            quant: Some(Quant::Bf16),
            kv_dtype: Some(KvDtype::Fp8),
            ..Default::default()
        },
    );
    assert!(fp8kv.plans[0].max_context_tokens > bf16.plans[0].max_context_tokens);
    // The cap is the model's maximum.
    let big = plan_inference(&m, &devices("1xh200"), &with_quant(Quant::Int4));
    assert_eq!(big.plans[0].max_context_tokens, 131_072);
    // Too long a context: advice names a context that fits.
    let long = plan_inference(
        &m,
        &d,
        &InferenceOptions {
            quant: Some(Quant::Bf16),
            context: Some(131_072),
            batch: 8,
            ..Default::default()
        },
    );
    assert!(!long.feasible);
    assert!(
        long.advice.iter().any(|a| a.contains("shorter context")),
        "{:?}",
        long.advice
    );
}

#[test]
fn bare_size_plans_are_flagged() {
    let m = load_model("70b").unwrap();
    let p = plan_inference(
        &m.spec,
        &devices("1xh100-sxm"),
        &InferenceOptions::default(),
    );
    assert!(p.approximate);
    assert!(p.warnings.iter().any(|w| w.contains("approximate")));
}

/// A feasible plan without a speed says which spec entry lacks what: the M5
/// Max entry has bandwidth but no 16-bit rate (prefill unknown, decode
/// estimated), the A800 80GB SXM entry neither; an entry with both gets no
/// such warning, and two devices of one entry give one warning.
#[test]
fn unknown_speeds_name_the_spec_entry_that_lacks_a_rate() {
    let m = spec("llama-3.1-8b");
    let opts = with_quant(Quant::Q4K);
    let mac = plan_inference(&m, &devices("2xm5-max"), &opts);
    let best = &mac.plans[0];
    assert!(best.decode_tokens_per_s.is_some() && best.prefill_tokens_per_s.is_none());
    let said: Vec<&String> = mac
        .warnings
        .iter()
        .filter(|w| w.contains("spec entry m5-max-gpu states no"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", mac.warnings);
    assert!(said[0].contains("bf16 matrix rate") && said[0].contains("prefill speed"));
    assert!(!said[0].contains("memory bandwidth"), "{}", said[0]);

    let a800 = plan_inference(&m, &devices("1xa800-80gb"), &opts);
    assert!(a800.plans[0].decode_tokens_per_s.is_none());
    assert!(
        a800.warnings
            .iter()
            .any(|w| w.contains("a800-80gb states no memory bandwidth and")
                && w.contains("decode and prefill speeds")),
        "{:?}",
        a800.warnings
    );

    let h100 = plan_inference(&m, &devices("1xh100-sxm"), &opts);
    assert!(h100.plans[0].prefill_tokens_per_s.is_some());
    assert!(!h100.warnings.iter().any(|w| w.contains("states no")));
    // The M4 Max, with its measured rates, gets a prefill speed now.
    let m4 = plan_inference(&m, &devices("1xm4-max"), &opts);
    assert!(m4.plans[0].prefill_tokens_per_s.is_some());
    assert!(!m4.warnings.iter().any(|w| w.contains("states no")));
}
fn model_strategy() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "llama-3.2-1b",
        "llama-3.1-8b",
        "qwen2.5-7b",
        "mixtral-8x7b",
        "gemma-2-9b",
        "mistral-7b",
        "deepseek-v3",
        "phi-3-mini",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn memory_grows_with_context_and_batch(id in model_strategy(), c1 in 1u64..65_536, c2 in 1u64..65_536, b1 in 1u64..64, b2 in 1u64..64) {
        let m = spec(id);
        let devs = devices("8xh200");
        let run = |c: u64, b: u64| {
            let p = plan_inference(&m, &devs, &InferenceOptions { quant: Some(Quant::Int4), context: Some(c), batch: b, max_plans: 1000, ..Default::default() });
            // Layout tp=8, pp=1 when feasible; compare the per-device need.
            p.plans.iter().find(|x| x.tensor_parallel == p.plans.iter().map(|y| y.tensor_parallel).max().unwrap() && x.pipeline_parallel == 1)
                .map(|x| x.per_device[0].total_bytes)
        };
        let (lo_c, hi_c) = (c1.min(c2), c1.max(c2));
        let (lo_b, hi_b) = (b1.min(b2), b1.max(b2));
        if let (Some(a), Some(b)) = (run(lo_c, lo_b), run(hi_c, lo_b)) { prop_assert!(a <= b); }
        if let (Some(a), Some(b)) = (run(lo_c, lo_b), run(lo_c, hi_b)) { prop_assert!(a <= b); }
    }

    #[test]
    fn more_devices_never_make_a_plan_infeasible(id in model_strategy(), n in 1u32..8, kind in prop::sample::select(vec!["h100-sxm", "l4", "a100-40gb", "mi300x"]), q in prop::sample::select(vec![Quant::Bf16, Quant::Int4, Quant::Q4K])) {
        let m = spec(id);
        let opts = InferenceOptions { quant: Some(q), context: Some(8192), batch: 4, ..Default::default() };
        let a = plan_inference(&m, &devices(&format!("{n}x{kind}")), &opts);
        let b = plan_inference(&m, &devices(&format!("{}x{kind}", n + 1)), &opts);
        if a.feasible { prop_assert!(b.feasible); }
        // A heterogeneous extra device never hurts either.
        let c = plan_inference(&m, &devices(&format!("{n}x{kind},1xl4")), &opts);
        if a.feasible { prop_assert!(c.feasible); }
    }
}

#[test]
fn latency_objective_ranks_tp8_first_for_70b_on_8xh100_and_throughput_ranks_by_total() {
    use ai_hwaccel::plan::inference::Objective;
    let m = catalog::find("llama-3.1-70b").unwrap().spec.clone();
    let devs = PlanDevice::from_device_string("8xh100-sxm").unwrap();
    let latency = plan_inference(&m, &devs, &InferenceOptions::default());
    let best = &latency.plans[0];
    assert_eq!(
        (
            best.tensor_parallel,
            best.pipeline_parallel,
            best.data_parallel
        ),
        (8, 1, 1)
    );
    assert_eq!(best.tensor_parallel_link.as_deref(), Some("NVLink 4.0"));
    // Per sequence at batch 1 and one replica: the total.
    let seq = best.decode_tokens_per_s_per_sequence.unwrap();
    assert!((seq - best.decode_tokens_per_s.unwrap()).abs() < 1e-9);
    for p in &latency.plans[1..] {
        assert!(p.decode_tokens_per_s_per_sequence.unwrap() <= seq * 1.01);
    }
    let throughput = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            objective: Objective::Throughput,
            batch: 8,
            ..InferenceOptions::default()
        },
    );
    let top = throughput.plans[0].decode_tokens_per_s.unwrap();
    for p in &throughput.plans {
        assert!(p.decode_tokens_per_s.unwrap() <= top * 1.01);
        // Total = per sequence × batch × replicas.
        let per = p.decode_tokens_per_s_per_sequence.unwrap();
        let total = p.decode_tokens_per_s.unwrap();
        assert!((per * 8.0 * f64::from(p.data_parallel) - total).abs() <= total * 1e-9);
        assert_eq!(
            p.max_concurrent_sequences,
            p.max_batch * u64::from(p.data_parallel)
        );
    }
}

/// A prompt token's activations are all-reduced twice per layer under
/// tensor parallelism, as a decode step's are: with the fitted fractions
/// off (efficiency 1, no per-layer time), TP 2 over two RTX 4090s' PCIe
/// links takes half the single card's time per prompt token plus
/// 2 × layers × the all-reduce of one token's hidden state (ring: 2 (t − 1)
/// / t of the bytes each way over half the bidirectional link).
#[test]
fn tensor_parallel_prefill_pays_its_all_reduces() {
    let m = spec("llama-3.1-8b");
    let opts = InferenceOptions {
        quant: Some(Quant::Bf16),
        calibrated_speed: false,
        decode_efficiency: 1.0,
        prefill_efficiency: 1.0,
        fused_attention: true,
        input_len: Some(512),
        ..Default::default()
    };
    let one = plan_inference(&m, &devices("1xrtx-4090"), &opts);
    let devs = devices("2xrtx-4090");
    let link = devs[0].pcie_bandwidth_bytes_per_s.unwrap() as f64;
    let two = plan_inference(&m, &devs, &opts);
    let tp2 = two.plans.iter().find(|p| p.tensor_parallel == 2).unwrap();
    assert_eq!(tp2.tensor_parallel_link.as_deref(), Some("PCIe"));
    let t1 = 1.0 / one.plans[0].prefill_tokens_per_s.unwrap();
    let t2 = 1.0 / tp2.prefill_tokens_per_s.unwrap();
    let bytes = m.hidden_size as f64 * 2.0;
    let comm = 2.0 * f64::from(m.num_layers) * (2.0 * 0.5 * bytes / (link / 2.0));
    assert!(
        ((t2 - (t1 / 2.0 + comm)) / t2).abs() < 0.02,
        "TP2 {t2} s/token against {} + {comm}",
        t1 / 2.0
    );
}

/// A unified-memory system on a chip is a computer of its own: two M4 Max
/// or two GB10 are two hosts, so their plans split layers or replicate,
/// never tensor-parallel "over PCIe"; MI300A APUs on one Infinity Fabric
/// board still form TP groups.
#[test]
fn unified_memory_systems_are_separate_hosts() {
    let m = spec("llama-3.1-70b");
    for set in ["2xm4-max-128gb", "2xgb10", "4xjetson-agx-orin-64gb"] {
        let p = plan_inference(&m, &devices(set), &with_quant(Quant::Q4K));
        assert!(!p.plans.is_empty(), "{set}");
        assert!(
            p.plans.iter().all(|p| p.tensor_parallel == 1),
            "{set}: {:?}",
            p.plans
                .iter()
                .map(|p| (p.tensor_parallel, p.tensor_parallel_link.clone()))
                .collect::<Vec<_>>()
        );
    }
    let apu = plan_inference(&m, &devices("4xmi300a"), &with_quant(Quant::Bf16));
    assert!(
        apu.plans.iter().any(|p| p.tensor_parallel == 4
            && p.tensor_parallel_link.as_deref() == Some("Infinity Fabric"))
    );
}

#[test]
fn tensor_parallel_spans_nvlink_bridged_pairs_over_pcie_with_a_speed() {
    // A100 PCIe cards are NVLink-bridged in pairs; TP4 runs over PCIe Gen4
    // x16 (the A100 datasheet's host interface).
    let m = catalog::find("llama-3.1-70b").unwrap().spec.clone();
    let devs = PlanDevice::from_device_string("4xa100-80gb-pcie").unwrap();
    assert_eq!(devs[0].pcie_bandwidth_bytes_per_s, Some(63_015_384_615));
    let p = plan_inference(&m, &devs, &InferenceOptions::default());
    let tp4 = p
        .plans
        .iter()
        .find(|p| p.tensor_parallel == 4)
        .expect("TP4 offered");
    assert_eq!(tp4.tensor_parallel_link.as_deref(), Some("PCIe"));
    assert!(tp4.decode_tokens_per_s.is_some());
    assert!(tp4.tp_comm_seconds_per_step.unwrap() > 0.0);
    let tp2 = p.plans.iter().find(|p| p.tensor_parallel == 2).unwrap();
    assert_eq!(
        tp2.tensor_parallel_link.as_deref(),
        Some("NVLink 3.0 bridge")
    );
    // PCIe carries ~1/10 of the bridge: TP4's all-reduces cost more per layer.
    assert!(tp4.tp_comm_seconds_per_step.unwrap() > 2.0 * tp2.tp_comm_seconds_per_step.unwrap());
    // Cards whose scale-up link is PCIe itself (L4) get a TP speed too.
    let l4 = plan_inference(
        &catalog::find("llama-3.1-8b").unwrap().spec.clone(),
        &PlanDevice::from_device_string("4xl4").unwrap(),
        &InferenceOptions::default(),
    );
    let tp = l4.plans.iter().find(|p| p.tensor_parallel == 4).unwrap();
    assert!(tp.decode_tokens_per_s.is_some());
    // Without a known PCIe bandwidth the plan is offered, unestimated, and
    // said so (the rtx-2080-ti entry has no `pcie`); the rtx-4090 entry's link
    // (gen 4 x16, from a real nvidia-smi capture) gives TP 2 a speed.
    let two = |id: &str| {
        plan_inference(
            &catalog::find("llama-3.1-8b").unwrap().spec.clone(),
            &PlanDevice::from_device_string(&format!("2x{id}")).unwrap(),
            &InferenceOptions {
                max_plans: 100,
                ..InferenceOptions::default()
            },
        )
    };
    let rtx = two("rtx-2080-ti");
    let tp2 = rtx.plans.iter().find(|p| p.tensor_parallel == 2).unwrap();
    assert_eq!(tp2.decode_tokens_per_s, None);
    assert!(rtx.warnings.iter().any(|w| w.contains("PCIe bandwidth")));
    let ada = two("rtx-4090");
    let tp2 = ada.plans.iter().find(|p| p.tensor_parallel == 2).unwrap();
    assert_eq!(tp2.tensor_parallel_link.as_deref(), Some("PCIe"));
    assert!(tp2.decode_tokens_per_s.is_some());
    assert!(!ada.warnings.iter().any(|w| w.contains("PCIe bandwidth")));
}

#[test]
fn pcie_payload_bandwidth_per_generation() {
    use ai_hwaccel::model::PcieLink;
    // 8b/10b: 2.5 GT/s × 16 × 0.8 ÷ 8 = 4 GB/s each way.
    assert_eq!(
        PcieLink::bandwidth_bytes_per_s(2.5, 16),
        Some(8_000_000_000)
    );
    // 128b/130b: 16 GT/s × 16 × 128/130 ÷ 8 = 31.5 GB/s each way.
    assert_eq!(
        PcieLink::bandwidth_bytes_per_s(16.0, 16),
        Some(63_015_384_615)
    );
    assert_eq!(
        PcieLink::bandwidth_bytes_per_s(32.0, 16),
        Some(126_030_769_231)
    );
    assert_eq!(PcieLink::bandwidth_bytes_per_s(16.0, 0), None);
    assert_eq!(PcieLink::bandwidth_bytes_per_s(7.0, 16), None);
    // An idle GPU trained down to 2.5 GT/s still carries its maximum rate.
    let idle = PcieLink {
        current_speed_gts: Some(2.5),
        current_width: Some(16),
        max_speed_gts: Some(16.0),
        max_width: Some(16),
    };
    assert_eq!(idle.usable_bandwidth_bytes_per_s(), Some(63_015_384_615));
    // A x16 card in a x8 slot keeps x8.
    let narrow = PcieLink {
        current_width: Some(8),
        ..idle
    };
    assert_eq!(narrow.usable_bandwidth_bytes_per_s(), Some(31_507_692_308));
}

/// A model whose output head is its embedding matrix (tied) still reads
/// that matrix every decode step: one stage's bytes per token are the
/// whole stored weights (plus the KV cache), not the weights less the
/// head. Llama-3.2-1B (tied, 128,256 × 2,048 embedding) at 16 bits on one
/// GPU, decode at efficiency 1: tokens/s × bytes read = bandwidth.
#[test]
fn tied_embeddings_are_read_by_the_head_every_step() {
    let s = spec("llama-3.2-1b");
    assert!(s.tied_embeddings);
    let d = devices("1xrtx-4090");
    let opts = InferenceOptions {
        quant: Some(Quant::Bf16),
        context: Some(16),
        batch: 1,
        calibrated_speed: false,
        decode_efficiency: 1.0,
        ..Default::default()
    };
    let p = plan_inference(&s, &d, &opts);
    let best = &p.plans[0];
    let weights = best.per_device[0].weights_bytes as f64;
    let bw = d[0].bandwidth_bytes_per_s.unwrap() as f64;
    let read = bw / best.decode_tokens_per_s.unwrap();
    // The KV cache of 16 tokens adds under 0.1 %; without the head the
    // read would be 525,336,576 bytes (262,668,288 weights at 2 bytes) less, 21 %.
    assert!(
        (read / weights - 1.0).abs() < 0.01,
        "read {read} per token, weights {weights}"
    );
}

/// An encoder (BAAI/bge-base-en-v1.5, `BertModel`) has no LM head and no KV
/// cache and never decodes: its plan holds the weights and one batch's
/// activations, its context is capped at the 512 positions it has, and the
/// only speed is the encoding (prefill) rate.
#[test]
fn encoders_hold_no_kv_cache_and_do_not_decode() {
    let s = spec("bge-base-en-v1.5");
    assert!(s.encoder && s.pooler);
    // 12 layers × 7,087,872 + word/position/type embeddings
    // (30522 + 512 + 2) × 768 + embedding LayerNorm 1,536 + pooler 590,592.
    assert_eq!(s.parameters(), 109_482_240);
    assert_eq!(s.layer_params(0).total(), 7_087_872);
    assert_eq!(s.lm_head_params(), 0);
    assert_eq!(s.other_params(), 514 * 768 + 1_536 + 590_592);
    assert_eq!(s.kv_cache_bytes_per_token(2.0), 0);
    assert_eq!(s.kv_cache_bytes(512, 8, 2.0), 0);
    let opts = InferenceOptions {
        quant: Some(Quant::Bf16),
        calibrated_speed: false,
        prefill_efficiency: 0.5,
        ..Default::default()
    };
    let d = devices("1xrtx-4090");
    let p = plan_inference(&s, &d, &opts);
    assert!(p.feasible, "{:?}", p.rejected);
    assert!(
        p.warnings.iter().any(|w| w.contains("encoder")),
        "{:?}",
        p.warnings
    );
    let best = &p.plans[0];
    assert_eq!(best.decode_tokens_per_s, None);
    assert_eq!(best.decode_tokens_per_s_per_sequence, None);
    assert_eq!(best.kv_cache_capacity_tokens, None);
    assert_eq!(best.max_context_tokens, 512);
    let dev = &best.per_device[0];
    assert_eq!(dev.kv_cache_bytes, 0);
    // Every tensor at 2 bytes; no head, tied or not.
    assert!(
        dev.weights_bytes.abs_diff(2 * 109_482_240) <= 1,
        "{}",
        dev.weights_bytes
    );
    // An input is encoded whole (no chunked prefill): 512 tokens ×
    // (4 × 768 + 3 × 3072) × 2 bytes of live activations, no logits.
    assert_eq!(dev.activation_bytes, 512 * (4 * 768 + 3 * 3072) * 2);
    // Inputs encoded together: (24 GiB × 0.9 − weights) ÷ 12,582,912 bytes each.
    let room = (24.0 * (1u64 << 30) as f64 * 0.9) as u64 - dev.weights_bytes;
    assert_eq!(best.max_concurrent_sequences, room / dev.activation_bytes);
    assert_eq!(best.max_concurrent_sequences, 1825);
    // Encoding: 2 × (layer parameters) + 2 · L · ctx · d_attn FLOPs per
    // token, no vocabulary projection.
    let ctx = p.context as f64;
    let flops = 2.0 * 12.0 * 7_087_872.0 + 2.0 * 12.0 * ctx * 768.0;
    let rate = ai_hwaccel::spec::by_id("rtx-4090")
        .unwrap()
        .tflops
        .bf16
        .unwrap();
    let expect = rate * 1e12 * 0.5 / flops;
    let got = best.prefill_tokens_per_s.unwrap();
    assert!((got - expect).abs() / expect < 0.01, "{got} vs {expect}");
}

/// Qwen3-Embedding: a Qwen3 decoder published without its LM head and run
/// one forward pass per input, so it plans as an encoder; its totals are the
/// Hub's (catalog comment). XLM-RoBERTa encoders (bge-m3,
/// multilingual-e5-large) keep two of their position rows in reserve.
#[test]
fn decoder_embedding_models_and_xlm_roberta_encoders() {
    let e = catalog::find("Qwen/Qwen3-Embedding-8B").unwrap();
    assert!(e.decoder_embedding && e.spec.encoder && !e.spec.tied_embeddings);
    let s = &e.spec;
    // Per layer: attention 4096 × (4096 + 2 × 1024) + 4096 × 4096, q/k norms
    // 2 × 128, gated MLP 3 × 4096 × 12288, two RMSNorms; 36 layers, the
    // 151665-row embedding and the final norm, and no head although the
    // config leaves the embeddings untied.
    let layer = 4096 * 6144 + 4096 * 4096 + 256 + 3 * 4096 * 12288 + 2 * 4096;
    assert_eq!(s.layer_params(0).total(), layer);
    assert_eq!(s.lm_head_params(), 0);
    assert_eq!(s.parameters(), 36 * layer + 151_665 * 4096 + 4096);
    assert_eq!(s.parameters(), 7_567_295_488);
    assert_eq!(s.kv_cache_bytes(32768, 4, 2.0), 0);
    for (id, n) in [
        ("qwen3-embedding-0.6b", 595_776_512),
        ("qwen3-embedding-4b", 4_021_774_336),
    ] {
        assert_eq!(spec(id).parameters(), n, "{id}");
    }
    let p = plan_inference(s, &devices("1xrtx-4090"), &with_quant(Quant::Bf16));
    assert!(p.feasible, "{:?}", p.rejected);
    let best = &p.plans[0];
    assert_eq!(best.decode_tokens_per_s, None);
    assert_eq!(best.kv_cache_capacity_tokens, None);
    assert_eq!(best.per_device[0].kv_cache_bytes, 0);
    assert!(best.prefill_tokens_per_s.is_some());

    // bge-m3: 8194 position rows, inputs of up to 8192 tokens; one token
    // type; 24 layers of 12,596,224 and a pooler.
    let m3 = spec("BAAI/bge-m3");
    assert_eq!(m3.max_context, Some(8192));
    assert_eq!(m3.layer_params(0).total(), 12_596_224);
    assert_eq!(
        m3.parameters(),
        24 * 12_596_224 + (250_002 + 8194 + 1) * 1024 + 2048 + 1024 * 1024 + 1024
    );
    assert_eq!(m3.parameters(), 567_754_752);
    let e5 = catalog::find("intfloat/multilingual-e5-large").unwrap();
    assert_eq!(e5.spec.max_context, Some(512));
    // The Hub total also counts the 514-entry position_ids buffer.
    assert_eq!(e5.spec.parameters(), 559_890_432);
    assert_eq!(e5.hub_parameter_total(), 559_890_946);
}

/// Llama 4 Maverick: MoE every second layer (1, 3, …) with dense MLPs of
/// 16384 between; chunked-attention layers (three in four) cache at most one
/// 8192-token chunk, every fourth layer attends globally.
#[test]
fn llama4_interleaves_moe_and_caps_chunked_layers() {
    let m = spec("llama-4-maverick");
    assert!(!m.is_moe_layer(0) && m.is_moe_layer(1) && !m.is_moe_layer(46) && m.is_moe_layer(47));
    // Dense: attention 62,914,560 + MLP 3 × 5120 × 16384 + two norms.
    assert_eq!(m.layer_params(0).total(), 62_914_560 + 251_658_240 + 10_240);
    // MoE: + 128 experts and one shared expert of 3 × 5120 × 8192, router 5120 × 128.
    let moe = m.layer_params(1);
    assert_eq!(moe.experts, 128 * 125_829_120);
    assert_eq!(
        moe.total(),
        62_914_560 + 129 * 125_829_120 + 655_360 + 10_240
    );
    // "17B active": one routed and the shared expert per MoE layer.
    assert_eq!(m.active_parameters(), 17_184_691_200);
    use ai_hwaccel::plan::AttentionKind::{Global, Sliding};
    let kinds: Vec<_> = (0..8).map(|i| m.attention_kind(i)).collect();
    assert_eq!(
        kinds,
        [
            Sliding, Sliding, Sliding, Global, Sliding, Sliding, Sliding, Global
        ]
    );
    // 32768 tokens: 12 global layers hold them all, 36 chunked ones 8192;
    // 2 × 8 KV heads × 128 elements, 2 bytes.
    assert_eq!(
        m.kv_cache_bytes(32_768, 1, 2.0),
        (12 * 32_768 + 36 * 8_192) * 2048 * 2
    );
}

/// GLM-4.5: q/k/v biases without an o bias, q/k norms, 3 dense layers then
/// MoE with a shared expert and a corrected sigmoid router; the stored MTP
/// layer (its own embedding and head included) counts in the Hub total only.
#[test]
fn glm45_layers_and_its_mtp_layer() {
    let m = catalog::find("zai-org/GLM-4.5").unwrap();
    let s = &m.spec;
    // q 5120 × 12288 + bias, k/v 2 × 5120 × 1024 + biases, o 12288 × 5120,
    // q/k norms 2 × 128.
    let attention = 62_914_560 + 12_288 + 10_485_760 + 2_048 + 62_914_560 + 256;
    assert_eq!(
        s.layer_params(2).total(),
        attention + 3 * 5120 * 12288 + 2 * 5120
    );
    assert_eq!(
        s.layer_params(3).total(),
        attention + 161 * 3 * 5120 * 1536 + (5120 * 160 + 160) + 2 * 5120
    );
    assert_eq!(s.parameters(), 352_797_829_024);
    // MTP: a MoE layer, eh_proj 2h × h, three norms, embedding and head.
    assert_eq!(
        m.hub_parameter_total() - s.parameters(),
        s.layer_params(3).total() + 2 * 5120 * 5120 + 3 * 5120 + 2 * 151_552 * 5120
    );
    assert_eq!(m.hub_parameter_total(), 358_337_791_296);
}

/// Request latencies: time to first token is the prompt over one replica's
/// prefill rate at the prompt's length, time per output token the inverse
/// of what one sequence decodes, and a request both.
#[test]
fn request_latencies_follow_prefill_and_decode() {
    let m = spec("llama-3.1-8b");
    let opts = InferenceOptions {
        input_len: Some(2048),
        output_len: Some(256),
        ..Default::default()
    };
    let p = plan_inference(&m, &devices("1xh100-sxm"), &opts);
    // No context given: prompt + output.
    assert_eq!(p.context, 2048 + 256);
    // Only a prompt longer than the default context: the context holds it.
    let long = plan_inference(
        &m,
        &devices("1xh100-sxm"),
        &InferenceOptions {
            input_len: Some(10_000),
            ..Default::default()
        },
    );
    assert_eq!(long.context, 10_000);
    let best = &p.plans[0];
    assert_eq!(best.data_parallel, 1);
    let prefill = best.prefill_tokens_per_s.unwrap();
    let per_seq = best.decode_tokens_per_s_per_sequence.unwrap();
    let ttft = best.ttft_ms.unwrap();
    let tpot = best.tpot_ms.unwrap();
    assert!((ttft - 2048.0 / prefill * 1000.0).abs() < 1e-9 * ttft);
    assert!((tpot - 1000.0 / per_seq).abs() < 1e-9 * tpot);
    let req = best.request_latency_ms.unwrap();
    assert!((req - (ttft + 255.0 * tpot)).abs() < 1e-9 * req);
    // Prefill is at the prompt's length: a short prompt attends over fewer
    // tokens, so it runs faster per token than a prompt of the whole context.
    let short = plan_inference(
        &m,
        &devices("1xh100-sxm"),
        &InferenceOptions {
            input_len: Some(128),
            context: Some(32768),
            ..Default::default()
        },
    );
    let long = plan_inference(
        &m,
        &devices("1xh100-sxm"),
        &InferenceOptions {
            context: Some(32768),
            ..Default::default()
        },
    );
    assert!(
        short.plans[0].prefill_tokens_per_s.unwrap()
            > long.plans[0].prefill_tokens_per_s.unwrap() * 1.05
    );
    // Without an output length there is no request latency; with several
    // replicas time to first token uses one replica's rate, not the sum.
    let dp = plan_inference(
        &m,
        &devices("2xl4"),
        &InferenceOptions {
            input_len: Some(1000),
            objective: ai_hwaccel::plan::inference::Objective::Throughput,
            ..Default::default()
        },
    );
    let two = dp.plans.iter().find(|x| x.data_parallel == 2).unwrap();
    assert_eq!(two.request_latency_ms, None);
    let one_replica = two.prefill_tokens_per_s.unwrap() / 2.0;
    let ttft = two.ttft_ms.unwrap();
    assert!((ttft - 1000.0 / one_replica * 1000.0).abs() < 1e-6 * ttft);
}

/// A time-to-first-token target with an output length bounds the batch
/// too: a request arriving in the closed loop waits for the decode steps in
/// progress (`served_ttft_ms`), so each layout runs the most sequences whose
/// served TTFT meets the target, below what the TPOT target alone allows.
#[test]
fn ttft_target_bounds_the_batch_of_a_closed_loop() {
    let m = spec("llama-3.1-8b");
    let devs = devices("1xh100-sxm");
    let base = InferenceOptions {
        quant: Some(ai_hwaccel::plan::quant::Quant::Bf16),
        input_len: Some(1000),
        output_len: Some(200),
        tpot_ms: Some(60.0),
        max_plans: 1,
        ..Default::default()
    };
    let tpot_only = plan_inference(&m, &devs, &base).plans.remove(0);
    // A target between the idle TTFT and the served one at that batch.
    let idle = tpot_only.ttft_ms.unwrap();
    let loaded = tpot_only.served_ttft_ms.unwrap();
    assert!(loaded > idle + 1.0, "{idle} {loaded}");
    let target = (idle + loaded) / 2.0;
    let opts = InferenceOptions {
        ttft_ms: Some(target),
        ..base.clone()
    };
    let x = plan_inference(&m, &devs, &opts).plans.remove(0);
    assert!(x.batch < tpot_only.batch, "{} {}", x.batch, tpot_only.batch);
    assert!(x.served_ttft_ms.unwrap() <= target, "{x:?}");
    // One more sequence misses it.
    let more = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            batch: x.batch + 1,
            ttft_ms: None,
            tpot_ms: None,
            ..opts.clone()
        },
    )
    .plans
    .remove(0);
    assert!(more.served_ttft_ms.unwrap() > target, "{more:?}");
    // Below the idle TTFT nothing meets it, and the reason names it.
    let none = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            ttft_ms: Some(idle / 2.0),
            ..base.clone()
        },
    );
    assert!(!none.feasible, "{:?}", none.plans);
    assert!(
        none.rejected
            .iter()
            .any(|r| r.reason.contains("time to first token")),
        "{:?}",
        none.rejected
    );
}

/// A time-per-output-token target: each layout runs the most sequences that
/// meet it — one more would miss it (or not fit) — and plans rank by
/// tokens/s per device. With an output length the TPOT held to the target
/// is the served one (the other requests' prompts prefilled in the decode
/// steps), so the batch is smaller than the plain decode step allows.
#[test]
fn tpot_target_picks_the_largest_batch_that_meets_it() {
    let m = spec("llama-3.1-70b");
    let devs = devices("8xh100-sxm");
    let target = 30.0;
    let opts = InferenceOptions {
        input_len: Some(2048),
        output_len: Some(256),
        tpot_ms: Some(target),
        max_plans: 100,
        ..Default::default()
    };
    let p = plan_inference(&m, &devs, &opts);
    assert!(p.feasible);
    for x in &p.plans {
        assert!(x.served_tpot_ms.unwrap() <= target, "{x:?}");
        assert!(x.tpot_ms.unwrap() < x.served_tpot_ms.unwrap(), "{x:?}");
        assert!(x.batch >= 1 && x.batch <= x.max_batch);
        if x.batch < x.max_batch {
            // The same layout at one more sequence misses the target.
            let more = plan_inference(
                &m,
                &devs,
                &InferenceOptions {
                    batch: x.batch + 1,
                    tpot_ms: None,
                    ..opts.clone()
                },
            );
            let same = more
                .plans
                .iter()
                .find(|y| {
                    (y.tensor_parallel, y.pipeline_parallel, y.data_parallel)
                        == (x.tensor_parallel, x.pipeline_parallel, x.data_parallel)
                })
                .expect("layout still fits");
            assert!(
                same.served_tpot_ms.unwrap() > target,
                "{:?}",
                same.served_tpot_ms
            );
        }
    }
    // Without an output length there is no closed loop to serve: the plain
    // TPOT meets the target, at a larger batch on the same layout.
    let plain = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            output_len: None,
            context: Some(2048 + 256),
            ..opts.clone()
        },
    );
    let layout = |x: &ai_hwaccel::plan::inference::Plan| {
        (x.tensor_parallel, x.pipeline_parallel, x.data_parallel)
    };
    let first = &p.plans[0];
    let same = plain
        .plans
        .iter()
        .find(|y| layout(y) == layout(first))
        .expect("layout meets the plain target");
    assert!(same.tpot_ms.unwrap() <= target);
    assert!(same.batch > first.batch, "{} {}", same.batch, first.batch);
    // Ranked by served output per device (1 % steps): each replica's batch
    // over the served TPOT.
    let per_device = |x: &ai_hwaccel::plan::inference::Plan| {
        let served = x.served_tokens_per_s().unwrap();
        let want =
            (x.batch * u64::from(x.data_parallel)) as f64 * 1000.0 / x.served_tpot_ms.unwrap();
        assert!((served - want).abs() < 1e-6 * want, "{served} {want}");
        served / f64::from(x.devices_used)
    };
    for w in p.plans.windows(2) {
        assert!(per_device(&w[0]) >= per_device(&w[1]) / 1.01);
    }
    // TP8 serves many sequences within 30 ms per token; the batch-1 speed
    // alone would not show that.
    assert!(p.plans[0].batch > 16, "{}", p.plans[0].batch);
}

/// Decode at a serving batch is bounded by its FLOPs as well as its bytes:
/// a step of `b` sequences computes `b` tokens, so total decode cannot run
/// faster than the same tokens' GEMMs at the prefill rate, while at batch 1
/// the bytes decide alone (the compute floor is far below them). Under
/// llama.cpp the step is the longer of the two (the roofline), so past the
/// crossover more sequences add no tokens per second; under vLLM the two
/// add up (`speed::decode_gemms_overlap`), so the total only nears the
/// compute bound.
#[test]
fn serving_batches_decode_no_faster_than_their_flops() {
    let m = spec("llama-3-8b");
    let devs = devices("1xh100-sxm");
    let with = |runtime, batch: u64| {
        let p = plan_inference(
            &m,
            &devs,
            &InferenceOptions {
                runtime,
                batch,
                context: Some(256),
                input_len: Some(256),
                quant: Some(ai_hwaccel::plan::quant::Quant::Bf16),
                ..Default::default()
            },
        );
        assert!(p.feasible, "batch {batch}");
        p.plans[0].clone()
    };
    let at = |batch| with(ai_hwaccel::plan::runtime::RuntimeKind::Vllm, batch);
    let big = at(1024);
    let prefill = big.prefill_tokens_per_s.unwrap();
    let decode = big.decode_tokens_per_s.unwrap();
    // A decode token attends over the whole context (a prompt token over
    // half of it on average) and both pay the same rate and fraction; the
    // prompt also pays the per-layer time, so decode may pass it by that
    // much at most. Bytes alone gave 51.5 thousand tokens/s here, 1.6 x
    // the prompt rate of 32.9 thousand.
    assert!(decode <= prefill * 1.1, "decode {decode} prefill {prefill}");
    // Past the crossover, 37 % more sequences add a few per cent under
    // vLLM, never past the bound, and nothing under llama.cpp's roofline.
    let bigger = at(1400).decode_tokens_per_s.unwrap();
    assert!(
        bigger > decode && bigger < 1.1 * decode,
        "{bigger} vs {decode}"
    );
    assert!(bigger <= prefill * 1.1, "decode {bigger} prefill {prefill}");
    let llama = |batch| {
        with(ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp, batch)
            .decode_tokens_per_s
            .unwrap()
    };
    let (l, lb) = (llama(1024), llama(1400));
    assert!((lb / l - 1.0).abs() < 0.05, "{lb} vs {l}");
    // At batch 1 the step is the bytes' time: nearly batch-1 TPOT stays
    // where the memory bound puts it, well under the compute floor.
    let one = at(1);
    let per_token_compute = 1.0 / prefill;
    assert!(1.0 / one.decode_tokens_per_s.unwrap() > 50.0 * per_token_compute);
}

/// Targets no layout meets leave the request infeasible, each rejection
/// naming the figure that missed; a time-to-first-token target keeps only
/// the layouts whose prefill is fast enough.
#[test]
fn unmet_targets_reject_layouts_with_the_figure() {
    let m = spec("llama-3.1-70b");
    let devs = devices("8xh100-sxm");
    let p = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            tpot_ms: Some(0.5),
            ..Default::default()
        },
    );
    assert!(!p.feasible);
    assert!(
        p.rejected
            .iter()
            .any(|r| r.reason.contains("time per output token at batch 1")
                && r.reason.contains("> the 0.5 ms target")),
        "{:?}",
        p.rejected
    );
    // TTFT of each layout at batch 1, then a target between the fastest
    // and the slowest.
    let free = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            input_len: Some(4000),
            max_plans: 100,
            ..Default::default()
        },
    );
    let mut ttfts: Vec<f64> = free.plans.iter().map(|x| x.ttft_ms.unwrap()).collect();
    ttfts.sort_by(f64::total_cmp);
    let (lo, hi) = (ttfts[0], *ttfts.last().unwrap());
    assert!(hi > lo * 1.5, "{lo} {hi}");
    let target = (lo + hi) / 2.0;
    let p = plan_inference(
        &m,
        &devs,
        &InferenceOptions {
            input_len: Some(4000),
            ttft_ms: Some(target),
            max_plans: 100,
            ..Default::default()
        },
    );
    let kept = free
        .plans
        .iter()
        .filter(|x| x.ttft_ms.unwrap() <= target)
        .count();
    assert!(kept > 0 && kept < free.plans.len());
    assert_eq!(p.plans.len(), kept);
    assert!(p.plans.iter().all(|x| x.ttft_ms.unwrap() <= target));
    assert!(
        p.rejected
            .iter()
            .any(|r| r.reason.starts_with("time to first token")),
        "{:?}",
        p.rejected
    );
}

/// Qwen2.5-32B on one 32 GB card: FP8 does not fit, a 4-bit level does.
/// Blackwell (an fp4 rate in its spec entry) is suggested NVFP4, which it
/// runs natively; Ada, without FP4 units, keeps int4 (GPTQ/AWQ) and is not
/// offered MXFP4, which it could only run dequantized.
#[test]
fn fp4_levels_are_suggested_where_fp4_is_native() {
    let s = spec("qwen2.5-32b");
    let opts = InferenceOptions {
        context: Some(4096),
        ..Default::default()
    };
    let blackwell = plan_inference(&s, &devices("1xrtx-5090"), &opts);
    assert_eq!(blackwell.suggested_quantization, Some(Quant::Nvfp4));
    assert_eq!(blackwell.quantization, Quant::Nvfp4);
    let ada = plan_inference(&s, &devices("1xrtx-4090"), &opts);
    assert_eq!(ada.suggested_quantization, Some(Quant::Int4));
    // Asked for, MXFP4 is planned on Ada (weight-only), NVFP4 is not.
    assert!(plan_inference(&s, &devices("1xrtx-4090"), &with_quant(Quant::Mxfp4)).feasible);
    let nv = plan_inference(&s, &devices("1xrtx-4090"), &with_quant(Quant::Nvfp4));
    assert!(!nv.feasible);
    assert!(
        nv.rejected[0]
            .reason
            .contains("does not run nvfp4 natively"),
        "{:?}",
        nv.rejected
    );
    // llama.cpp multiplies NVFP4 GGUF blocks on any GPU (dequantized
    // without FP4 units): planned on Ada, prefill at its 16-bit rate.
    let llama = InferenceOptions {
        runtime: ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        ..with_quant(Quant::Nvfp4)
    };
    let on_ada = plan_inference(&s, &devices("1xrtx-4090"), &llama);
    assert!(on_ada.feasible, "{:?}", on_ada.rejected);
    assert!(on_ada.plans[0].prefill_tokens_per_s.is_some());
    // The MI355X's FP4 units take OCP MX blocks: MXFP4 is its 4-bit
    // suggestion for a model that needs one, NVFP4 is not native there.
    let big = spec("llama-3.1-405b");
    let mi = plan_inference(&big, &devices("1xmi355x"), &opts);
    assert_eq!(mi.suggested_quantization, Some(Quant::Mxfp4));
    let nv = plan_inference(&big, &devices("1xmi355x"), &with_quant(Quant::Nvfp4));
    assert!(
        nv.rejected[0]
            .reason
            .contains("does not run nvfp4 natively"),
        "{:?}",
        nv.rejected
    );
}

/// vLLM runs FP8 checkpoints weight-only on GPUs without FP8 units from
/// compute capability 7.5 (its FP8 Marlin kernel): an A100 plans fp8 under
/// the vLLM rule, with the weights at 8 bits, prefill at the 16-bit rate
/// and a warning saying so; the generic rule and a V100 (7.0) do not.
#[test]
fn vllm_runs_fp8_weight_only_on_ampere() {
    use ai_hwaccel::plan::RuntimeKind;
    let m = spec("llama-3.1-8b");
    // Uncalibrated: both plans at the default efficiencies (vLLM has
    // fitted cells for 16-bit formats only), so the rates compare.
    let opts = |runtime| InferenceOptions {
        quant: Some(Quant::Fp8),
        runtime,
        context: Some(4096),
        calibrated_speed: false,
        ..Default::default()
    };
    let a100 = devices("1xa100-80gb");
    let v = plan_inference(&m, &a100, &opts(RuntimeKind::Vllm));
    assert!(v.feasible, "{:?}", v.rejected);
    assert!(
        v.warnings.iter().any(|w| w.contains("Marlin")),
        "{:?}",
        v.warnings
    );
    // 8-bit weights: half the bf16 plan's matrix bytes.
    let bf16 = plan_inference(
        &m,
        &a100,
        &InferenceOptions {
            quant: Some(Quant::Bf16),
            ..opts(RuntimeKind::Vllm)
        },
    );
    let (w8, w16) = (
        v.plans[0].per_device[0].weights_bytes as f64,
        bf16.plans[0].per_device[0].weights_bytes as f64,
    );
    assert!(w8 < 0.6 * w16 && w8 > 0.5 * w16, "{w8} vs {w16}");
    // Prefill at the A100's dense bf16 rate, as the bf16 plan (same
    // FLOPs, same default efficiency).
    assert_eq!(
        v.plans[0].prefill_tokens_per_s.map(|p| p.round()),
        bf16.plans[0].prefill_tokens_per_s.map(|p| p.round())
    );
    let generic = plan_inference(&m, &a100, &opts(RuntimeKind::Generic));
    assert!(!generic.feasible);
    assert!(
        generic
            .rejected
            .iter()
            .any(|r| r.reason.contains("natively"))
    );
    let v100 = plan_inference(&m, &devices("1xv100-sxm2-32gb"), &opts(RuntimeKind::Vllm));
    assert!(!v100.feasible);
    // An H100 runs FP8 natively: no warning.
    let h100 = plan_inference(&m, &devices("1xh100-sxm"), &opts(RuntimeKind::Vllm));
    assert!(h100.feasible && !h100.warnings.iter().any(|w| w.contains("Marlin")));
}

/// The Marlin path is suggested for a checkpoint stored at that level only:
/// a bf16 model that does not fit an A100 at bf16 is not steered to
/// weight-only FP8 or NVFP4, an FP8 checkpoint (DeepSeek-V3) is planned at
/// fp8.
#[test]
fn marlin_levels_are_suggested_only_for_their_own_checkpoints() {
    use ai_hwaccel::plan::RuntimeKind;
    let o = InferenceOptions {
        runtime: RuntimeKind::Vllm,
        ..Default::default()
    };
    let p = plan_inference(&spec("llama-3.1-70b"), &devices("1xa100-80gb"), &o);
    let s = p.suggested_quantization.unwrap();
    assert!(!matches!(s, Quant::Fp8 | Quant::Nvfp4), "{s}");
    let d = spec("deepseek-v3");
    assert_eq!(d.torch_dtype.as_deref(), Some("fp8"));
    let p = plan_inference(&d, &devices("16xa100-80gb"), &o);
    assert_eq!(p.suggested_quantization, Some(Quant::Fp8), "{:?}", p.advice);
}

/// A llama.cpp layer split over two GB10s (two machines, reached over its
/// RPC backend) decodes and prefills a short prompt as one GB10 does plus
/// the derived time per further machine (`speed::rpc_seconds`, none yet: no
/// published pair passed the corpus rules): at batch 1
/// the stages run one after another, so on identical machines only the
/// network adds. Two cards of one machine add nothing.
#[test]
fn each_further_machine_adds_the_rpc_time() {
    use ai_hwaccel::plan::runtime::RuntimeKind;
    let m = spec("llama-3.1-8b");
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Q4K),
        input_len: Some(512),
        max_plans: 100,
        ..Default::default()
    };
    let (step, token) = ai_hwaccel::plan::speed::rpc_seconds(RuntimeKind::LlamaCpp);
    // (0, 0) until published pairs are derived (docs/accuracy.md).
    assert!(step >= 0.0 && token >= 0.0, "{step} {token}");
    for (one, two, extra) in [
        ("1xgb10", "2xgb10", (step, token)),
        ("1xrtx-4090", "2xrtx-4090", (0.0, 0.0)),
    ] {
        let a = plan_inference(&m, &devices(one), &opts);
        let b = plan_inference(&m, &devices(two), &opts);
        let single = a.plans.iter().find(|p| p.devices_used == 1).unwrap();
        let split = b
            .plans
            .iter()
            .find(|p| p.pipeline_parallel == 2 && p.data_parallel == 1)
            .unwrap();
        let dec = |p: &ai_hwaccel::plan::inference::Plan| {
            1.0 / p.decode_tokens_per_s_per_sequence.unwrap()
        };
        let pre = |p: &ai_hwaccel::plan::inference::Plan| 1.0 / p.prefill_tokens_per_s.unwrap();
        assert!(
            (dec(split) - dec(single) - extra.0).abs() < 1e-9,
            "{two}: decode {} vs {} + {}",
            dec(split),
            dec(single),
            extra.0
        );
        assert!(
            (pre(split) - pre(single) - extra.1).abs() < 1e-9,
            "{two}: prefill {} vs {} + {}",
            pre(split),
            pre(single),
            extra.1
        );
    }
}

/// `mem_fraction_static` is SGLang's: a larger one holds more sequences
/// under the SGLang rule, another runtime's plan says it does not read it,
/// and a value outside (0, 1] falls back to SGLang's default with a warning.
#[test]
fn sglang_plans_at_a_given_mem_fraction_static() {
    use ai_hwaccel::plan::runtime::RuntimeKind;
    let m = load_model("llama-3.1-8b").unwrap();
    let devices = PlanDevice::from_device_string("1xh100-sxm").unwrap();
    let plan = |runtime, f: Option<f64>| {
        plan_inference(
            &m.spec,
            &devices,
            &InferenceOptions {
                runtime,
                mem_fraction_static: f,
                ..Default::default()
            },
        )
    };
    let default = plan(RuntimeKind::Sglang, None);
    let wide = plan(RuntimeKind::Sglang, Some(0.9));
    let kv = |p: &ai_hwaccel::plan::InferencePlan| p.plans[0].kv_cache_capacity_tokens.unwrap();
    assert!(
        kv(&wide) > kv(&default),
        "{} vs {}",
        kv(&wide),
        kv(&default)
    );
    assert!(
        default
            .warnings
            .iter()
            .all(|w| !w.contains("mem_fraction_static"))
    );
    let bad = plan(RuntimeKind::Sglang, Some(1.5));
    assert_eq!(kv(&bad), kv(&default));
    assert!(
        bad.warnings
            .iter()
            .any(|w| w.contains("mem_fraction_static 1.5 is not a fraction")),
        "{:?}",
        bad.warnings
    );
    let vllm = plan(RuntimeKind::Vllm, Some(0.9));
    assert!(
        vllm.warnings
            .iter()
            .any(|w| w.contains("the vllm rule does not read it")),
        "{:?}",
        vllm.warnings
    );
}

/// Under a TPOT target with an output length, plans rank by the output
/// their batches deliver served (batch × replicas ÷ served TPOT, per
/// device), not by their decode steps' rate: for Llama 3.1 8B on eight
/// H100 at 2048 / 256 and 30 ms, TP4×DP2 runs the fastest decode steps per
/// device (242 sequences) but each step also prefills 241 × 8 prompt
/// tokens, and TP2×DP4 serves more.
#[test]
fn targets_rank_by_served_output() {
    let p = plan_inference(
        &spec("llama-3.1-8b"),
        &devices("8xh100-sxm"),
        &InferenceOptions {
            input_len: Some(2048),
            output_len: Some(256),
            tpot_ms: Some(30.0),
            max_plans: 100,
            ..Default::default()
        },
    );
    assert!(p.feasible && p.plans.len() > 2);
    let per_device = |t: Option<f64>, x: &ai_hwaccel::plan::inference::Plan| {
        t.unwrap() / f64::from(x.devices_used)
    };
    let served: Vec<f64> = p
        .plans
        .iter()
        .map(|x| per_device(x.served_tokens_per_s(), x))
        .collect();
    for w in served.windows(2) {
        assert!(w[0] >= w[1] / 1.01, "{served:?}");
    }
    // The decode steps alone would order them otherwise.
    let decode: Vec<f64> = p
        .plans
        .iter()
        .map(|x| per_device(x.decode_tokens_per_s, x))
        .collect();
    assert!(decode.windows(2).any(|w| w[0] < w[1] / 1.01), "{decode:?}");
}

/// With an output length and a batch above one, `--objective throughput`
/// ranks by the output the batches deliver served and `latency` by a
/// sequence's served speed; without one, by the decode steps' (unchanged).
/// Under llama.cpp a pipeline's prompt runs over micro-batches while its
/// decode steps wait on each stage, so the two orders differ: Llama 3.1 8B
/// on eight H100 at batch 32 and 8192 / 64 tokens ranks PP2×DP4 above
/// TP2×DP4 served (long prompts, short outputs: the prompts decide), and
/// below it on decode steps alone.
#[test]
fn objectives_rank_by_served_speeds_with_an_output_length() {
    use ai_hwaccel::plan::inference::{Objective, Plan};
    let m = spec("llama-3.1-8b");
    let devs = devices("8xh100-sxm");
    let plans = |objective, output_len| {
        let p = plan_inference(
            &m,
            &devs,
            &InferenceOptions {
                runtime: ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp,
                input_len: Some(8192),
                output_len,
                context: Some(8192 + 64),
                batch: 32,
                objective,
                max_plans: 100,
                ..Default::default()
            },
        );
        assert!(p.feasible && p.plans.len() > 2);
        p.plans
    };
    let monotone = |v: &[f64]| v.windows(2).all(|w| w[0] >= w[1] / 1.01);
    let served_total = |x: &Plan| x.served_tokens_per_s().unwrap();
    let served_seq = |x: &Plan| 1000.0 / x.served_tpot_ms.unwrap();
    let through = plans(Objective::Throughput, Some(64));
    let v: Vec<f64> = through.iter().map(served_total).collect();
    assert!(monotone(&v), "{v:?}");
    // The decode steps' totals are not in that order.
    let d: Vec<f64> = through
        .iter()
        .map(|x| x.decode_tokens_per_s.unwrap())
        .collect();
    assert!(!monotone(&d), "{d:?}");
    let v: Vec<f64> = plans(Objective::Latency, Some(64))
        .iter()
        .map(served_seq)
        .collect();
    assert!(monotone(&v), "{v:?}");
    let plain = plans(Objective::Throughput, None);
    assert!(plain.iter().all(|x| x.served_tpot_ms.is_none()));
    let d: Vec<f64> = plain
        .iter()
        .map(|x| x.decode_tokens_per_s.unwrap())
        .collect();
    assert!(monotone(&d), "{d:?}");
}

/// A llama.cpp build with GGML_CUDA_FORCE_MMQ on an MI100 runs IQ4_NL
/// prompts on MMQ where the default build takes rocBLAS: the plan is the
/// default build's and a warning says so; it changes no number. Q4_0,
/// which the default build also runs on MMQ, and an NVIDIA GPU get none.
#[test]
fn forced_mmq_on_cdna_is_planned_as_the_default_build_and_said() {
    use ai_hwaccel::plan::RuntimeKind;
    let m = spec("llama-3-8b");
    let plan = |dev: &str, q: Quant, force: bool| {
        plan_inference(
            &m,
            &devices(dev),
            &InferenceOptions {
                quant: Some(q),
                runtime: RuntimeKind::LlamaCpp,
                cuda_force_mmq: force,
                ..Default::default()
            },
        )
    };
    let said = |p: &ai_hwaccel::plan::InferencePlan| {
        p.warnings
            .iter()
            .any(|w| w.contains("GGML_CUDA_FORCE_MMQ") && w.contains("rocBLAS"))
    };
    let forced = plan("1xmi100", Quant::Iq4Nl, true);
    let default = plan("1xmi100", Quant::Iq4Nl, false);
    assert!(said(&forced), "{:?}", forced.warnings);
    assert!(!said(&default), "{:?}", default.warnings);
    let prefill = |p: &ai_hwaccel::plan::InferencePlan| p.plans[0].prefill_tokens_per_s;
    assert!(prefill(&forced).is_some());
    assert_eq!(prefill(&forced), prefill(&default));
    assert!(!said(&plan("1xmi100", Quant::Q4_0, true)));
    assert!(!said(&plan("1xrtx-4090", Quant::Iq4Nl, true)));
}
