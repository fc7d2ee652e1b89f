//! Weight bytes of quantized formats against published sizes (issue 16
//! item 2): every row of `tests/calibration/weights.csv` is planned at its
//! level and the weights on one device compared with the size the source
//! printed (rounded as printed: a GiB or GB figure to two decimals). Each
//! row must be within 2 %.
#![allow(clippy::disallowed_methods, reason = "the test reads its data file")]

use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, load_model, plan_inference};

#[test]
fn gguf_mixes_match_published_sizes() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/calibration/weights.csv");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut worst: f64 = 0.0;
    let mut n = 0;
    for line in lines {
        let c: Vec<&str> = line.split(',').collect();
        assert_eq!(c.len(), header.len(), "{line}");
        let value: f64 = c[col("value")].parse().unwrap();
        let bytes = match c[col("unit")] {
            "GiB" => value * (1u64 << 30) as f64,
            "GB" => value * 1e9,
            u => panic!("unit {u}"),
        };
        let spec = load_model(c[col("catalog_model")]).unwrap().spec;
        let q = Quant::parse(c[col("quant")]).unwrap();
        let p = plan_inference(
            &spec,
            &PlanDevice::from_device_string("1xh100-sxm").unwrap(),
            &InferenceOptions {
                quant: Some(q),
                ..Default::default()
            },
        );
        let w = p.plans[0].per_device[0].weights_bytes as f64;
        let err = (w - bytes) / bytes;
        println!(
            "{} {} ({}): predicted {:.3} GB, published {value} {} ({:+.2} %)",
            c[col("model")],
            c[col("format")],
            c[col("figure")],
            w / 1e9,
            c[col("unit")],
            100.0 * err
        );
        worst = worst.max(err.abs());
        n += 1;
    }
    assert!(n >= 3);
    assert!(worst <= 0.02, "worst {:.2} %", 100.0 * worst);
}

fn weights_on_one(model: &str, devices: &str, q: Quant) -> Result<u64, String> {
    let spec = load_model(model).unwrap().spec;
    let p = plan_inference(
        &spec,
        &PlanDevice::from_device_string(devices).unwrap(),
        &InferenceOptions {
            quant: Some(q),
            context: Some(4096),
            ..Default::default()
        },
    );
    match p.plans.first() {
        Some(best) => Ok(best.per_device.iter().map(|d| d.weights_bytes).sum()),
        None => Err(format!("{:?}", p.rejected)),
    }
}

/// Phi-3-mini at Q4_K_M, tensor by tensor as the pinned llama.cpp's
/// `llama_tensor_get_type_impl` types its GGUF (h 3072, 32 layers, MLP
/// 8192, vocabulary 32064, untied): phi3 stores the query, key and value
/// projections as one `attn_qkv` (3072 × 9216) and gate and up as one
/// `ffn_up` (3072 × 16384). `attn_qkv` takes the `attn_v` rules whole
/// (`category_is_attn_v`): Q6_K where `use_more_bits`, like `ffn_down`;
/// the head Q6_K; every other matrix Q4_K; norms F32. (llama.cpp builds
/// before the tensor categories, such as the one llama-cpp-python 0.3.16
/// vendors, raised every `attn_qkv` of a Q4_K_M file to Q5_K instead.)
#[test]
fn fused_qkv_takes_the_attn_v_rules() {
    let (n, h, f, vocab) = (32u64, 3072u64, 8192u64, 32064u64);
    let more = |i: u64| i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    let bytes = |elements: u64, bits: f64| elements as f64 * bits / 8.0;
    let (q4, q6) = (4.5, 6.5625);
    let mut want = bytes(vocab * h, q4) + bytes(vocab * h, q6) + bytes(h, 32.0);
    for i in 0..n {
        let raised = if more(i) { q6 } else { q4 };
        want += bytes(h * 3 * h, raised)
            + bytes(h * h, q4)
            + bytes(h * 2 * f, q4)
            + bytes(f * h, raised)
            + bytes(2 * h, 32.0);
    }
    let got = weights_on_one("phi-3-mini", "1xh100-sxm", Quant::Q4K).unwrap();
    assert_eq!(got as f64, want);
}

/// Llama-3.1-8B (models.toml: h 4096, 32 layers, 32 heads of 128, 8 KV
/// heads, MLP 14336, vocabulary 128256, untied) at the 4-bit float levels,
/// by hand: the projection and MLP matrices at the format's bits, the
/// embedding, head and norms at 16 bits.
#[test]
fn fp4_levels_by_hand() {
    let layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336; // q, o, k, v, gate, up, down
    let matrices: u64 = 32 * layer;
    assert_eq!(matrices, 6_979_321_856);
    let sixteen: u64 = 2 * (2 * 128_256 * 4096 + 32 * 2 * 4096 + 4096); // embedding, head, norms
    // NVFP4: 4 bits + one E4M3 scale per 16 = 9 bytes per 16 weights.
    let nvfp4 = matrices / 16 * 9 + sixteen;
    assert_eq!(nvfp4, 6_027_747_328);
    assert_eq!(
        weights_on_one("llama-3.1-8b", "1xb200", Quant::Nvfp4),
        Ok(nvfp4)
    );
    // MXFP4: 4 bits + one E8M0 scale per 32 = 17 bytes per 32 weights.
    let mxfp4 = matrices / 32 * 17 + sixteen;
    assert_eq!(mxfp4, 5_809_643_520);
    assert_eq!(
        weights_on_one("llama-3.1-8b", "1xh100-sxm", Quant::Mxfp4),
        Ok(mxfp4)
    );
    // Hopper has no FP4 matrix units: NVFP4 is rejected, MXFP4 (weight-only)
    // is not.
    let e = weights_on_one("llama-3.1-8b", "1xh100-sxm", Quant::Nvfp4).unwrap_err();
    assert!(e.contains("does not run nvfp4 natively"), "{e}");
}

/// DeepSeek-V3's config.json declares block-scaled FP8
/// (`quant_method: fp8`, `weight_block_size: [128, 128]`): planned at the
/// fp8 level, every projection and expert matrix one byte per weight and
/// the embedding, head, norms, routers and router biases at 16 bits. The
/// checkpoint's FP32 scale per 128×128 block adds 4 bytes per 16384
/// weights (0.024 %), which the level leaves out.
#[test]
fn block_fp8_config_is_planned_at_fp8() {
    let m = load_model(&support_path("models/deepseek-v3/config.json")).unwrap();
    assert_eq!(m.spec.torch_dtype.as_deref(), Some("fp8"));
    let devices = PlanDevice::from_device_string("8xb200").unwrap();
    let p = plan_inference(
        &m.spec,
        &devices,
        &InferenceOptions {
            context: Some(4096),
            ..Default::default()
        },
    );
    assert_eq!(p.suggested_quantization, Some(Quant::Fp8));
    // A layout without tensor parallelism holds each tensor once.
    let tp1 = p.plans.iter().find(|c| c.tensor_parallel == 1).unwrap();
    let total: u64 = tp1.per_device.iter().map(|d| d.weights_bytes).sum();
    let h: u64 = 7168;
    let embedding_and_head = 2 * 129_280 * h;
    // Per layer the input and post-attention norms (h), then the final
    // norm. (MLA's q_a_layernorm (1536) and kv_a_layernorm (512) are held
    // with the down-projections they follow, at the level's byte: 125 KB of
    // 673 GB.)
    let norms = 61 * 2 * h + h;
    // 58 MoE layers (61 − first_k_dense_replace 3): a 256 × h router and
    // 256 correction biases.
    let routers = 58 * (256 * h + 256);
    let sixteen = embedding_and_head + norms + routers;
    let parameters = m.spec.parameters();
    assert_eq!(total, (parameters - sixteen) + 2 * sixteen);
}

fn support_path(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// A ModelOpt NVFP4 checkpoint that keeps attention in BF16 (its
/// `quantization_config.ignore` names the self-attention modules, as
/// DeepSeek-R1-FP4's `exclude_modules` do) is planned with the attention
/// projections at 16 bits: Llama-3.1-8B's 32 × (2 × 4096² + 2 × 4096 × 1024)
/// = 1,342,177,280 attention weights at 2 bytes instead of 9/16.
#[test]
fn nvfp4_checkpoint_with_bf16_attention() {
    let plan = |ignore: &str| {
        let (bytes, _, warnings) = plan_llama31_config(
            &format!(
                r#""torch_dtype": "bfloat16", "quantization_config": {{"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "ignore": [{ignore}]}}"#
            ),
            "1xb200",
            Some(Quant::Nvfp4),
            ai_hwaccel::plan::RuntimeKind::Generic,
        );
        let flag = warnings
            .iter()
            .any(|w| w.contains("leaves attention modules unquantized"));
        (bytes, warnings, flag)
    };
    let (all, _, flag) = plan(r#""lm_head""#);
    assert!(!flag);
    assert_eq!(
        all, 6_027_747_328,
        "every projection at nvfp4 (fp4_levels_by_hand)"
    );
    let (bf16_attention, warnings, flag) = plan(r#""lm_head", "model.layers.*.self_attn*""#);
    assert!(flag);
    let attention: u64 = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024);
    assert_eq!(attention, 1_342_177_280);
    assert_eq!(bf16_attention - all, attention * 2 - attention / 16 * 9);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("planned with the attention weights at 16 bits")),
        "{warnings:?}"
    );
}

/// A bitsandbytes NF4 checkpoint whose `llm_int8_skip_modules` keeps some
/// layers in BF16 (Unsloth's dynamic 4-bit) is planned with those
/// projections at 16 bits: on Llama-3.1-8B, layer 0's attention
/// (2 × 4096² plus 2 × 4096 × 1024, 41,943,040 weights) and layer 3's MLP
/// (3 × 4096 × 14336, 176,160,768) at 2 bytes instead of NF4's 4.127 bits.
#[test]
fn nf4_checkpoint_with_bf16_layers() {
    let plan = |skip: &str| {
        let (bytes, _, warnings) = plan_llama31_config(
            &format!(
                r#""torch_dtype": "bfloat16", "quantization_config": {{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true, "llm_int8_skip_modules": [{skip}]}}"#
            ),
            "1xrtx-4090",
            Some(Quant::Nf4),
            ai_hwaccel::plan::RuntimeKind::Sglang,
        );
        (bytes, warnings)
    };
    let (all, _) = plan(r#""lm_head""#);
    let (kept, warnings) = plan(r#""lm_head", "model.layers.0.self_attn", "model.layers.3.mlp""#);
    let params = 41_943_040.0 + 176_160_768.0;
    let expected = params * (2.0 - Quant::Nf4.bits_per_weight() / 8.0);
    assert!(
        ((kept - all) as f64 - expected).abs() < 2.0,
        "{kept} - {all} against {expected}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("keeps 7 projections of 2 layers at 16 bits")),
        "{warnings:?}"
    );
}

/// A GPTQ config.json alone (no safetensors) plans at the checkpoint's int4,
/// not at its torch_dtype, and its group_size sizes the scales: Llama-3.1-8B's
/// 6,979,321,856 projection weights take 4 + 20/32 bits in groups of 32 and
/// 4 + 20/128 in groups of 128 (a 16-bit scale and a 4-bit zero point per
/// group).
#[test]
fn gptq_config_plans_at_int4_with_its_group_size() {
    let plan = |group: i64| {
        let (bytes, level, _) = plan_llama31_config(
            &format!(
                r#""torch_dtype": "float16", "quantization_config": {{"quant_method": "gptq", "bits": 4, "group_size": {group}, "desc_act": true, "sym": true}}"#
            ),
            "1xrtx-4090",
            None,
            ai_hwaccel::plan::RuntimeKind::Vllm,
        );
        (level, bytes)
    };
    let (q32, g32) = plan(32);
    let (q128, g128) = plan(128);
    assert_eq!((q32, q128), (Quant::Int4, Quant::Int4));
    let projections = 6_979_321_856.0;
    let expected = projections * (20.0 / 32.0 - 20.0 / 128.0) / 8.0;
    assert!(
        ((g32 - g128) as f64 - expected).abs() < 2.0,
        "{g32} - {g128} against {expected}"
    );
}

/// Llama-3.1-8B's config.json with `fields` (a torch_dtype and a
/// quantization_config) in place of its torch_dtype, planned on `devices`
/// at `quant` under `runtime`: the first plan's weights per device, the
/// plan's level and the model's warnings.
fn plan_llama31_config(
    fields: &str,
    devices: &str,
    quant: Option<Quant>,
    runtime: ai_hwaccel::plan::RuntimeKind,
) -> (u64, Quant, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/models/llama-3.1-8b/config.json"
    );
    let text = std::fs::read_to_string(fixture).unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(
        &path,
        text.replacen(r#""torch_dtype": "bfloat16","#, &format!("{fields},"), 1),
    )
    .unwrap();
    let m = load_model(path.to_str().unwrap()).unwrap();
    let opts = ai_hwaccel::plan::options_for(
        &m,
        &InferenceOptions {
            quant,
            context: Some(4096),
            runtime,
            ..Default::default()
        },
    );
    let p = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string(devices).unwrap(),
        &opts,
    );
    (
        p.plans[0].per_device[0].weights_bytes,
        p.quantization,
        m.warnings,
    )
}
