//! Hugging Face `config.json` → [`ModelSpec`].
//!
//! A pure parser: text in, architecture out. Each supported `model_type` maps
//! the fields its `transformers` configuration class reads onto the tensors
//! its modelling code creates, so that [`ModelSpec::parameters`] equals the
//! sum of the checkpoint's tensor sizes. Fields a configuration class
//! defaults are defaulted the same way (family defaults differ: Gemma and
//! OPT tie the LM head to the embedding, Llama and Qwen do not).
//!
//! Sliding windows follow each family's modelling code:
//! - Mistral/Mixtral: every layer when `sliding_window` is set (non-null).
//! - Qwen2/Qwen3 (and their MoE variants): only when `use_sliding_window` is
//!   true, on the layers from `max_window_layers` on.
//! - Gemma 2: alternate layers (`ceil(L/2)` of them slide).
//! - Gemma 3: all but every `sliding_window_pattern`-th layer (default 6).
//! - a `layer_types` list, where a config has one, is authoritative.
//! - Phi-3: its `sliding_window` (2047 on the 4k models) is not applied, as
//!   in the catalog: the KV cache is sized for the full context, which never
//!   under-estimates it.
//!
//! A multimodal Gemma 3 config's `vision_config` (SigLIP) becomes
//! [`ModelSpec::vision`]: the Hub's total counts the tower, the plans do not.
//! BERT and XLM-RoBERTa (`BertModel`, `XLMRobertaModel`) are encoders
//! ([`ModelSpec::encoder`]).
//!
//! For multi-head latent attention (DeepSeek-V2/V3), `head_dim` is set to
//! `v_head_dim` (what the catalog records); MLA's own dimensions live in
//! [`Mla`].

use serde_json::{Map, Value};

use super::ModelError;
use crate::plan::arch::{
    LinearAttention, Mla, MlpKind, ModelSpec, Moe, MultimodalEncoder, NormKind, SlidingWindow,
    VisionKind, VisionTower,
};

/// The `model_type`s this parser understands.
pub const SUPPORTED_MODEL_TYPES: &[&str] = &[
    "llama",
    "granite",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_5_text",
    "qwen3_5_moe_text",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "gpt_oss",
    "opt",
    "bert",
    "xlm-roberta",
    "llama4",
    "llama4_text",
    "glm4_moe",
    "cohere",
    "nomic_bert",
];

/// Weight quantization a `quantization_config` declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantization {
    /// `quant_method` (`gptq`, `awq`, `fp8`, `bitsandbytes`, …).
    pub method: String,
    /// Bits per quantized weight, when the config says.
    pub bits: Option<u32>,
    /// The short name [`StoredWeights::quantization`](super::StoredWeights)
    /// records: the method for 4-bit GPTQ/AWQ (`gptq`), `int8` for 8-bit
    /// integer weights, the 4-bit type for bitsandbytes (`nf4`), `fp8`
    /// (also ModelOpt's and compressed-tensors' FP8), `nvfp4` (ModelOpt
    /// `quant_algo: NVFP4`, compressed-tensors NVFP4), `mxfp4` (gpt-oss's
    /// `quant_method`, compressed-tensors MXFP4).
    pub label: String,
    /// Human-readable summary (`gptq 4-bit, group 128`).
    pub description: String,
    /// The first entry of [`Self::unquantized_modules`] that names
    /// attention (`self_attn`, `attn`, `attention`), if any.
    pub unquantized_attention: Option<String>,
    /// Every entry of those lists that names attention.
    pub attention_entries: Vec<String>,
    /// Every entry of the config's lists of modules left unquantized
    /// (`llm_int8_skip_modules`, `modules_to_not_convert`, `ignore`,
    /// `ignored_layers`, `exclude_modules`), as written, and GPTQModel's
    /// `dynamic` `-:` keys as `re:` entries.
    pub unquantized_modules: Vec<String>,
    /// `group_size`, as written (`-1`: one group per output row).
    pub group_size: Option<i64>,
    /// Whether int4 groups store a zero point, where the config says
    /// (compressed-tensors' `symmetric`); `None`: the format's own packing
    /// (GPTQ and AWQ always store one).
    pub zero_points: Option<bool>,
    /// GPTQModel `dynamic` keys that override a module's bits or group
    /// (`+:…` or bare), which the plan does not model (its `-:` keys are
    /// in [`Self::unquantized_modules`]).
    pub dynamic_overrides: Vec<String>,
    /// The activations are quantized to MXFP4 too (W4A4: an AMD Quark
    /// export: `quant_method: quark`, fp4 weights and inputs).
    pub activations_mxfp4: bool,
}

/// Everything read from a config.json.
#[derive(Clone, Debug, PartialEq)]
pub struct HfConfig {
    /// The architecture.
    pub spec: ModelSpec,
    /// Fields defaulted or ignored, things the checkpoint stores that the
    /// spec does not count.
    pub warnings: Vec<String>,
    /// The declared weight quantization, if any.
    pub quantization: Option<Quantization>,
}

/// Parse a config.json's text; `path` names the file in errors and becomes
/// the spec's name. Returns the spec and warnings.
pub fn parse(text: &str, path: &str) -> Result<(ModelSpec, Vec<String>), ModelError> {
    parse_config(text, path).map(|c| (c.spec, c.warnings))
}

/// Parse a config.json's text, keeping the declared quantization.
pub fn parse_config(text: &str, path: &str) -> Result<HfConfig, ModelError> {
    let root: Value = serde_json::from_str(crate::model::text::strip_bom(text))
        .map_err(|e| malformed(path, "(json)", e))?;
    let Value::Object(root) = root else {
        return Err(malformed(path, "(json)", "not a JSON object"));
    };
    let mut warnings = Vec::new();
    let top = Fields {
        obj: &root,
        path,
        prefix: "",
        defaults: &[],
    };
    let model_type = top
        .str_opt("model_type")?
        .ok_or_else(|| malformed(path, "model_type", "missing"))?
        .to_string();
    let quantization = top.quantization()?;
    if let Some(q) = &quantization {
        warnings.push(format!(
            "config.json declares quantized weights ({}); parameter counts are unaffected",
            q.description
        ));
    }

    let mut spec = match model_type.as_str() {
        "opt" => opt(&top)?,
        "bert" | "xlm-roberta" => bert(&top, &model_type, &root)?,
        // Kimi K2 is the DeepSeek-V3 architecture under its own model_type
        // (the MoonshotAI Kimi-K2 deployment guide: it reuses the
        // DeepSeekV3CausalLM architecture and sets model_type "kimi_k2" only
        // so engines can tell them apart; its config names
        // DeepseekV3ForCausalLM).
        "deepseek_v2" | "deepseek_v3" | "kimi_k2" => deepseek(&top, &model_type, &mut warnings)?,
        "gemma3" => {
            let Some(Value::Object(text_config)) = root.get("text_config") else {
                return Err(malformed(
                    path,
                    "text_config",
                    "missing: a gemma3 config nests its language model there",
                ));
            };
            let f = Fields {
                obj: text_config,
                path,
                prefix: "text_config.",
                defaults: GEMMA3_TEXT_DEFAULTS,
            };
            let mut spec = decoder(&f, "gemma3_text", &mut warnings)?;
            note_defaults(&f, &mut warnings);
            if text_config.get("tie_word_embeddings").is_none() {
                spec.tied_embeddings = top.bool_opt("tie_word_embeddings")?.unwrap_or(true);
            }
            if spec.torch_dtype.is_none() {
                spec.torch_dtype = top.dtype()?;
            }
            match gemma3_vision(&root, path)? {
                Ok(v) => spec.vision = Some(v),
                Err(missing) => warnings.push(format!(
                    "gemma3: the checkpoint also stores a vision tower and projector, not counted \
                     (vision_config lacks {missing})"
                )),
            }
            spec
        }
        "llama4" => {
            let Some(Value::Object(text_config)) = root.get("text_config") else {
                return Err(malformed(
                    path,
                    "text_config",
                    "missing: a llama4 config nests its language model there",
                ));
            };
            let f = Fields {
                obj: text_config,
                path,
                prefix: "text_config.",
                defaults: &[],
            };
            let mut spec = llama4(&f)?;
            if spec.torch_dtype.is_none() {
                spec.torch_dtype = top.dtype()?;
            }
            match llama4_vision(&root, path)? {
                Ok(v) => spec.vision = Some(v),
                Err(missing) => warnings.push(format!(
                    "llama4: the checkpoint also stores a vision tower and projector, not counted \
                     (vision_config lacks {missing})"
                )),
            }
            spec
        }
        "qwen3_5" | "qwen3_5_moe" => {
            let Some(Value::Object(text_config)) = root.get("text_config") else {
                return Err(malformed(
                    path,
                    "text_config",
                    format!("missing: a {model_type} config nests its language model there"),
                ));
            };
            let (text_type, defaults) = qwen3_5_text_type(&model_type);
            let f = Fields {
                obj: text_config,
                path,
                prefix: "text_config.",
                defaults,
            };
            let mut spec = qwen3_5_text(&f, text_type, &mut warnings)?;
            if text_config.get("tie_word_embeddings").is_none() {
                spec.tied_embeddings = top.bool_opt("tie_word_embeddings")?.unwrap_or(false);
            }
            if spec.torch_dtype.is_none() {
                spec.torch_dtype = top.dtype()?;
            }
            if root.get("vision_config").is_some_and(|v| !v.is_null()) {
                match qwen3_5_vision(&root, path, spec.hidden_size)? {
                    Ok(v) => spec.vision = Some(v),
                    Err(missing) => warnings.push(format!(
                        "{model_type}: the checkpoint also stores a vision tower and merger, not \
                         counted (vision_config lacks {missing})"
                    )),
                }
            }
            spec
        }
        "qwen3_5_text" | "qwen3_5_moe_text" => {
            let defaults = qwen3_5_text_type(&model_type).1;
            let f = Fields { defaults, ..top };
            qwen3_5_text(&f, &model_type, &mut warnings)?
        }
        "llama4_text" => llama4(&top)?,
        "glm4_moe" => glm4_moe(&top, &mut warnings)?,
        "cohere" => cohere(&top)?,
        "nomic_bert" => nomic_bert(&top)?,
        "gemma3_text" => {
            let f = Fields {
                defaults: GEMMA3_TEXT_DEFAULTS,
                ..top
            };
            let spec = decoder(&f, "gemma3_text", &mut warnings)?;
            note_defaults(&f, &mut warnings);
            spec
        }
        t if SUPPORTED_MODEL_TYPES.contains(&t) => decoder(&top, t, &mut warnings)?,
        other => {
            return Err(ModelError::Unsupported {
                path: path.to_string(),
                what: format!(
                    "model_type {other:?} (supported: {})",
                    SUPPORTED_MODEL_TYPES.join(", ")
                ),
            });
        }
    };
    spec.name = path.to_string();
    spec.multimodal_encoder = multimodal_encoder(&root);
    spec.validate().map_err(|source| ModelError::Arch {
        path: path.to_string(),
        source,
    })?;
    if let Some(q) = &quantization {
        note_stored(&mut spec, q, path, &mut warnings);
    }
    Ok(HfConfig {
        spec,
        warnings,
        quantization,
    })
}

/// A multimodal checkpoint's image encoder as SGLang reads it
/// ([`crate::plan::arch::MultimodalEncoder`]): where the config names a
/// `…ForConditionalGeneration` architecture and carries a `vision_config`
/// object, its `num_hidden_layers` (Qwen-VL's `depth`, which transformers
/// 5 aliases to it), else 24, and its `hidden_size`, else 1024 — SGLang's
/// own defaults. Figures past any encoder (over 4096 layers, a width over
/// 1 << 20) are not read.
fn multimodal_encoder(root: &serde_json::Map<String, Value>) -> Option<MultimodalEncoder> {
    let conditional = root.get("architectures")?.as_array()?.iter().any(|a| {
        a.as_str()
            .is_some_and(|a| a.ends_with("ForConditionalGeneration"))
    });
    let Some(Value::Object(v)) = root.get("vision_config") else {
        return None;
    };
    if !conditional {
        return None;
    }
    let num = |k: &str| v.get(k).and_then(Value::as_u64);
    let layers = num("num_hidden_layers")
        .or_else(|| num("depth"))
        .unwrap_or(24);
    let hidden_size = num("hidden_size").unwrap_or(1024);
    (layers <= 4096 && hidden_size <= 1 << 20).then_some(MultimodalEncoder {
        layers: layers as u32,
        hidden_size,
    })
}

/// The type whole checkpoints declaring `q` store their matrices in, as a
/// level's name: FP8 (DeepSeek-V3/R1, ModelOpt FP8), NVFP4 (ModelOpt,
/// compressed-tensors), MXFP4 (compressed-tensors; gpt-oss's `mxfp4`
/// covers only its experts), int4 (GPTQ, AWQ), int8 or NF4
/// (bitsandbytes), whatever torch_dtype names (the dtype activations run
/// in): the plan is at that level and no level with more bits is
/// suggested.
fn stored_dtype(q: &Quantization) -> Option<String> {
    if matches!(q.label.as_str(), "fp8" | "nvfp4")
        || (q.label == "mxfp4" && matches!(q.method.as_str(), "compressed-tensors" | "quark"))
    {
        return Some(q.label.clone());
    }
    // GPTQ and AWQ 4-bit integers, bitsandbytes NF4, 8-bit integers: what
    // vLLM, SGLang and transformers load them as (they never dequantize
    // the checkpoint to its torch_dtype on load).
    match crate::plan::Quant::parse(&q.label)? {
        l @ (crate::plan::Quant::Int4 | crate::plan::Quant::Int8 | crate::plan::Quant::Nf4) => {
            Some(l.to_string())
        }
        _ => None,
    }
}

/// ModelOpt's `hf_quant_config.json` beside a config.json
/// (`{"producer": {"name": "modelopt", …}, "quantization": {"quant_algo":
/// "NVFP4", "group_size": 16, "exclude_modules": […], …}}`; exports whose
/// config.json has no `quantization_config` carry the format only there):
/// read as that quantization when the config.json declares none. `path`
/// names the file in errors.
pub fn apply_hf_quant_config(
    config: &mut HfConfig,
    text: &str,
    path: &str,
) -> Result<(), ModelError> {
    if config.quantization.is_some() {
        return Ok(());
    }
    let root: Value = serde_json::from_str(crate::model::text::strip_bom(text))
        .map_err(|e| malformed(path, "(json)", e))?;
    let Value::Object(root) = root else {
        return Err(malformed(path, "(json)", "not a JSON object"));
    };
    let f = Fields {
        obj: &root,
        path,
        prefix: "",
        defaults: &[],
    };
    let Some(q) = f.quantization_in("quantization", "quantization.", Some("modelopt"))? else {
        return Ok(());
    };
    config.warnings.push(format!(
        "{path} declares quantized weights ({}); parameter counts are unaffected",
        q.description
    ));
    note_stored(&mut config.spec, &q, path, &mut config.warnings);
    config.quantization = Some(q);
    Ok(())
}

/// The stored type of a checkpoint declaring `q` becomes the spec's
/// ([`stored_dtype`]). The modules its quantizer left alone
/// ([`Quantization::unquantized_modules`]) are matched against the
/// decoder's projections ([`super::unquantized`]): every layer's attention
/// (DeepSeek-R1-FP4 keeps its MLA projections in BF16) sets
/// [`ModelSpec::attention_unquantized`], single layers' projections
/// (Unsloth's dynamic 4-bit keeps a few MLPs in BF16) go to
/// [`ModelSpec::unquantized_layers`]; the plan counts them at 16 bits and a
/// note gives what that adds over the level.
fn note_stored(spec: &mut ModelSpec, q: &Quantization, path: &str, warnings: &mut Vec<String>) {
    let stored = stored_dtype(q);
    // GPTQ's and AWQ's scale groups size their int4 bytes.
    if stored.as_deref() == Some("int4")
        && let Some(g) = q.group_size
    {
        spec.quant_group_size = Some(u32::try_from(g).unwrap_or(0));
    }
    if stored.as_deref() == Some("int4") {
        spec.quant_zero_points = q.zero_points;
    }
    // The level the checkpoint's matrices are at: its stored type, else its
    // label (`nf4`, `int8`).
    let dtype = stored.clone().unwrap_or_else(|| q.label.clone());
    spec.activations_mxfp4 = q.activations_mxfp4;
    // gpt-oss's `mxfp4` list names everything but its experts (attention,
    // router, embeddings, head): the spec's `Moe::mxfp4_experts` already
    // plans the experts at MXFP4 and the rest at the plan's level.
    if q.method == "mxfp4" {
        return;
    }
    let r = super::unquantized::resolve(spec, &q.method, &q.unquantized_modules);
    if let Some(level) = crate::plan::Quant::parse(&dtype)
        && level.bits_per_weight() < 16.0
        && r.any()
    {
        let params = super::unquantized::params(spec, &r);
        let extra = params as f64 * (16.0 - level.bits_per_weight()) / 8.0;
        let (n, layers) = r.counts(spec);
        let names = |v: &[String]| {
            let mut s: Vec<String> = v.iter().take(4).map(|e| format!("{e:?}")).collect();
            if v.len() > 4 {
                s.push(format!("{} more", v.len() - 4));
            }
            s.join(", ")
        };
        if r.all_attention && r.layers.is_empty() {
            warnings.push(format!(
                "{path}: the quantization leaves attention modules unquantized ({}); \
                 planned with the attention weights at 16 bits, {:.2} GB more than at {dtype}",
                names(&r.matched),
                extra / 1e9
            ));
        } else {
            warnings.push(format!(
                "{path}: the quantization keeps {n} projections of {layers} layer{} at 16 bits \
                 ({}); planned with them at 16 bits, {:.2} GB more than at {dtype}",
                if layers == 1 { "" } else { "s" },
                names(&r.matched),
                extra / 1e9
            ));
        }
        super::unquantized::apply(spec, &r);
    }
    if !r.unmatched.is_empty() {
        warnings.push(format!(
            "{path}: modules the quantization leaves unquantized that name no decoder \
             projection this reads, not counted at 16 bits: {}",
            r.unmatched.join(", ")
        ));
    }
    if !q.dynamic_overrides.is_empty() {
        warnings.push(format!(
            "{path}: the quantization's `dynamic` overrides some modules' bits or group ({}); \
             planned with every module at the config's own",
            q.dynamic_overrides.join(", ")
        ));
    }
    if let Some(d) = stored {
        spec.torch_dtype = Some(d);
    }
}

/// The `vision_config` object of a multimodal config, as [`Fields`] named
/// under `vision_config.`; `None` where it is absent or null, an error
/// naming the field where it is not an object.
fn vision_fields<'a>(
    root: &'a Map<String, Value>,
    path: &'a str,
) -> Result<Option<Fields<'a>>, ModelError> {
    match root.get("vision_config") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(v)) => Ok(Some(Fields {
            obj: v,
            path,
            prefix: "vision_config.",
            defaults: &[],
        })),
        Some(v) => Err(malformed(
            path,
            "vision_config",
            format!("expected an object, found {}", kind(v)),
        )),
    }
}

/// Gemma 3's SigLIP vision tower from `vision_config`
/// (`siglip_vision_model`): `Err(field)` naming the first size field the
/// config leaves out (the tower is then not counted); `num_channels`
/// defaults to 3 (RGB, what every Gemma 3 config sets).
fn gemma3_vision(
    root: &Map<String, Value>,
    path: &str,
) -> Result<Result<VisionTower, &'static str>, ModelError> {
    let Some(f) = vision_fields(root, path)? else {
        return Ok(Err("vision_config"));
    };
    if let Some(t) = f.str_opt("model_type")?
        && t != "siglip_vision_model"
    {
        return Err(f.unsupported(format!(
            "vision_config.model_type {t:?} (only siglip_vision_model is modelled)"
        )));
    }
    if f.bool_opt("vision_use_head")?.unwrap_or(false) {
        return Err(f.unsupported("vision_config.vision_use_head true".into()));
    }
    let sizes = match f.required_u64s([
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "image_size",
        "patch_size",
    ])? {
        Ok(v) => v,
        Err(key) => return Ok(Err(key)),
    };
    let [
        hidden_size,
        intermediate_size,
        layers,
        image_size,
        patch_size,
    ] = sizes;
    if patch_size == 0 {
        return Err(f.err("patch_size", "zero"));
    }
    Ok(Ok(VisionTower {
        kind: VisionKind::Siglip,
        hidden_size,
        intermediate_size,
        num_layers: u32::try_from(layers).map_err(|_| f.err("num_hidden_layers", "too large"))?,
        image_size: Some(image_size),
        patch_size,
        num_channels: f.u64_opt("num_channels")?.unwrap_or(3),
        projector_input_dim: None,
        projector_output_dim: None,
        vision_output_dim: None,
        temporal_patch_size: None,
        spatial_merge_size: None,
        num_position_embeddings: None,
    }))
}

/// Llama 4's text model (transformers `models/llama4/modeling_llama4.py`,
/// `Llama4TextConfig`): GQA attention (its q/k norm is an L2 norm without
/// weights); MoE layers every `interleave_moe_layer_step` (default 1) —
/// `num_local_experts` routed experts of `intermediate_size` (one per
/// token), a router without bias and one shared expert of
/// `intermediate_size` — and dense MLPs of `intermediate_size_mlp` between
/// them. Three layers in four use RoPE with chunked attention: a token
/// attends within its `attention_chunk_size` chunk, so those layers cache
/// at most one chunk (vLLM `ChunkedLocalAttention`, llama.cpp
/// `LLAMA_SWA_TYPE_CHUNKED`), modelled as a window of the chunk size; every
/// fourth layer (`no_rope_layers`, interval 4) attends globally without
/// RoPE.
fn llama4(f: &Fields) -> Result<ModelSpec, ModelError> {
    let mut spec = base(f, "llama4")?;
    let expert = spec.intermediate_size;
    let layers = spec.num_layers;
    let step = f.u32_opt("interleave_moe_layer_step")?.unwrap_or(1);
    if step == 0 || step > layers {
        return Err(f.err("interleave_moe_layer_step", "outside 1..=num_hidden_layers"));
    }
    if let Some(list) = f.obj.get("moe_layers").filter(|v| !v.is_null()) {
        let expected: Vec<u64> = (0..layers)
            .filter(|i| (i + 1) % step == 0)
            .map(u64::from)
            .collect();
        let given: Option<Vec<u64>> = list
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect());
        if given.as_ref() != Some(&expected) {
            return Err(f.unsupported(format!(
                "moe_layers other than every {step}th layer ({list})"
            )));
        }
    }
    if step > 1 {
        spec.intermediate_size = f.u64_req("intermediate_size_mlp")?;
    }
    let bias = f.bool_opt("attention_bias")?.unwrap_or(false);
    spec.qkv_bias = bias;
    spec.attention_output_bias = bias;
    spec.tied_embeddings = f.bool_opt("tie_word_embeddings")?.unwrap_or(false);
    spec.moe = Some(Moe {
        num_experts: f.u32_req("num_local_experts")?,
        experts_per_token: f.u32_opt("num_experts_per_tok")?.unwrap_or(1),
        expert_intermediate_size: expert,
        shared_experts: 1,
        shared_expert_intermediate_size: Some(expert),
        shared_expert_gate: false,
        dense_layers: 0,
        layer_step: (step > 1).then_some(step),
        router_bias: false,
        mxfp4_experts: false,
    });
    const NO_ROPE_INTERVAL: u32 = 4;
    if let Some(list) = f.obj.get("no_rope_layers").filter(|v| !v.is_null()) {
        let expected: Vec<u64> = (0..layers)
            .map(|i| u64::from((i + 1) % NO_ROPE_INTERVAL != 0))
            .collect();
        let given: Option<Vec<u64>> = list
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect());
        if given.as_ref() != Some(&expected) {
            return Err(
                f.unsupported("no_rope_layers other than a global layer every fourth".into())
            );
        }
    }
    spec.sliding_window = f
        .u64_opt("attention_chunk_size")?
        .map(|window| SlidingWindow {
            window,
            layers: layers - layers / NO_ROPE_INTERVAL,
        });
    Ok(spec)
}

/// GLM-4.5 (transformers `models/glm4_moe/modeling_glm4_moe.py`): GQA
/// with biases on q/k/v only (`attention_bias`; `o_proj` has none), per-head
/// q/k RMSNorms when `use_qk_norm`, `first_k_dense_replace` dense layers,
/// then MoE layers of `n_routed_experts` experts with a sigmoid router and
/// its `e_score_correction_bias`, and `n_shared_experts` shared experts.
/// The multi-token-prediction layers the checkpoint stores
/// (`num_nextn_predict_layers`) are not counted.
fn glm4_moe(f: &Fields, warnings: &mut Vec<String>) -> Result<ModelSpec, ModelError> {
    let mut spec = base(f, "glm4_moe")?;
    spec.qkv_bias = f.bool_opt("attention_bias")?.unwrap_or(false);
    spec.qk_norm = f.bool_opt("use_qk_norm")?.unwrap_or(false);
    spec.tied_embeddings = f.bool_opt("tie_word_embeddings")?.unwrap_or(false);
    spec.moe = Some(Moe {
        num_experts: f.u32_req("n_routed_experts")?,
        experts_per_token: f.u32_req("num_experts_per_tok")?,
        expert_intermediate_size: f.u64_req("moe_intermediate_size")?,
        shared_experts: f.u32_opt("n_shared_experts")?.unwrap_or(1),
        shared_expert_intermediate_size: None,
        shared_expert_gate: false,
        dense_layers: f.u32_opt("first_k_dense_replace")?.unwrap_or(1),
        layer_step: None,
        router_bias: true,
        mxfp4_experts: false,
    });
    if let Some(n) = f.u64_opt("num_nextn_predict_layers")?.filter(|&n| n > 0) {
        warnings.push(format!(
            "the checkpoint also stores {n} multi-token-prediction layer(s) (num_nextn_predict_layers), not counted"
        ));
    }
    Ok(spec)
}

/// Command R (transformers `models/cohere/modeling_cohere.py`,
/// `CohereConfig`): a parallel block — attention and a gated MLP both read
/// the one `input_layernorm`'s output — LayerNorms without bias, the LM
/// head tied to the embedding by default. `use_qk_norm` (Command R+) adds
/// per-head q/k LayerNorms without bias (`CohereLayerNorm((n_h, d))` and
/// `((n_kv, d))`): [`ModelSpec::qk_norm_per_head`], `n_h·d + n_kv·d`
/// weights per layer.
fn cohere(f: &Fields) -> Result<ModelSpec, ModelError> {
    let mut spec = base(f, "cohere")?;
    let bias = f.bool_opt("attention_bias")?.unwrap_or(false);
    spec.qkv_bias = bias;
    spec.attention_output_bias = bias;
    spec.norm = NormKind::LayerNoBias;
    spec.norms_per_layer = 1;
    spec.qk_norm = f.bool_opt("use_qk_norm")?.unwrap_or(false);
    spec.qk_norm_per_head = spec.qk_norm;
    spec.tied_embeddings = f.bool_opt("tie_word_embeddings")?.unwrap_or(true);
    Ok(spec)
}

/// Nomic BERT (`NomicBertModel`, the remote code of nomic-embed-text;
/// GPT-2-style keys `n_embd`, `n_layer`, `n_head`, `n_inner`): a post-norm
/// BERT encoder with rotary positions (no position table), a fused `Wqkv`
/// and `out_proj` (biases when `qkv_proj_bias`), a SwiGLU MLP (`fc11`,
/// `fc12`, `fc2`; biases per `mlp_fc1_bias`/`mlp_fc2_bias`), LayerNorms with
/// biases, token-type embeddings, no pooler. Pre-norm and mixture-of-experts
/// variants are refused.
fn nomic_bert(f: &Fields) -> Result<ModelSpec, ModelError> {
    if f.bool_opt("prenorm")?.unwrap_or(false) {
        return Err(f.unsupported("prenorm true".into()));
    }
    if f.u64_opt("num_experts")?.is_some_and(|e| e > 0) {
        return Err(f.unsupported("num_experts (Nomic MoE)".into()));
    }
    if let Some(a) = f.str_opt("activation_function")?
        && a != "swiglu"
    {
        return Err(f.unsupported(format!(
            "activation_function {a:?} (only swiglu is modelled)"
        )));
    }
    let fc1 = f.bool_opt("mlp_fc1_bias")?.unwrap_or(true);
    let fc2 = f.bool_opt("mlp_fc2_bias")?.unwrap_or(true);
    if fc1 != fc2 {
        return Err(f.unsupported("a bias on one MLP projection only".into()));
    }
    let hidden = f.u64_req("n_embd")?;
    let heads = f.u32_req("n_head")?;
    let bias = f.bool_opt("qkv_proj_bias")?.unwrap_or(true);
    Ok(ModelSpec {
        name: String::new(),
        architecture: "nomic_bert".into(),
        approximate: false,
        num_layers: f.u32_req("n_layer")?,
        hidden_size: hidden,
        intermediate_size: f.u64_req("n_inner")?,
        num_attention_heads: heads,
        num_kv_heads: heads,
        head_dim: default_head_dim(f, hidden, heads)?,
        vocab_size: f.u64_req("vocab_size")?,
        tied_embeddings: false,
        mlp: MlpKind::Gated,
        norm: NormKind::Layer,
        norms_per_layer: 2,
        qk_norm: false,
        qk_norm_per_head: false,
        qkv_bias: bias,
        attention_output_bias: bias,
        attention_sinks: false,
        attention_output_gate: false,
        mlp_bias: fc1,
        learned_positions: None,
        encoder: true,
        token_types: Some(f.u64_opt("type_vocab_size")?.unwrap_or(2)).filter(|&t| t > 0),
        pooler: false,
        vision: None,
        moe: None,
        mla: None,
        sliding_window: None,
        linear_attention: None,
        max_context: f.u64_opt("n_positions")?,
        torch_dtype: f.dtype()?,
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: false,
        multimodal_encoder: None,
    })
}

/// Llama 4's vision tower from `vision_config` (`llama4_vision_model`):
/// `Err(field)` naming the first size field the config leaves out.
fn llama4_vision(
    root: &Map<String, Value>,
    path: &str,
) -> Result<Result<VisionTower, &'static str>, ModelError> {
    let Some(f) = vision_fields(root, path)? else {
        return Ok(Err("vision_config"));
    };
    if f.bool_opt("multi_modal_projector_bias")?.unwrap_or(false) {
        return Err(f.unsupported("vision_config.multi_modal_projector_bias true".into()));
    }
    let sizes = match f.required_u64s([
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "image_size",
        "patch_size",
        "projector_input_dim",
        "projector_output_dim",
        "vision_output_dim",
    ])? {
        Ok(v) => v,
        Err(key) => return Ok(Err(key)),
    };
    let [
        hidden_size,
        intermediate_size,
        layers,
        image_size,
        patch_size,
        p_in,
        p_out,
        out,
    ] = sizes;
    if patch_size == 0 {
        return Err(f.err("patch_size", "zero"));
    }
    Ok(Ok(VisionTower {
        kind: VisionKind::Llama4,
        hidden_size,
        intermediate_size,
        num_layers: u32::try_from(layers).map_err(|_| f.err("num_hidden_layers", "too large"))?,
        image_size: Some(image_size),
        patch_size,
        num_channels: f.u64_opt("num_channels")?.unwrap_or(3),
        projector_input_dim: Some(p_in),
        projector_output_dim: Some(p_out),
        vision_output_dim: Some(out),
        temporal_patch_size: None,
        spatial_merge_size: None,
        num_position_embeddings: None,
    }))
}

/// Qwen3.5's vision transformer from `vision_config` (transformers 5.24
/// `Qwen3_5VisionConfig`, which names the layer count `depth`):
/// `Err(field)` naming the first size field the config leaves out (the
/// tower is then not counted). `in_channels` defaults to 3. Its merger maps
/// to the text model's width: an `out_hidden_size` other than
/// `text_hidden`, or deepstack mergers (Qwen3-VL's
/// `deepstack_visual_indexes`, which Qwen3.5's model does not build), are
/// not modelled.
fn qwen3_5_vision(
    root: &Map<String, Value>,
    path: &str,
    text_hidden: u64,
) -> Result<Result<VisionTower, &'static str>, ModelError> {
    let Some(f) = vision_fields(root, path)? else {
        return Ok(Err("vision_config"));
    };
    match f.obj.get("deepstack_visual_indexes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(_) => {
            return Err(f.unsupported(
                "vision_config.deepstack_visual_indexes (Qwen3-VL's deepstack mergers)".into(),
            ));
        }
    }
    let layers = match (f.u64_opt("depth")?, f.u64_opt("num_hidden_layers")?) {
        (Some(d), _) | (None, Some(d)) => d,
        (None, None) => return Ok(Err("depth")),
    };
    let sizes = match f.required_u64s([
        "hidden_size",
        "intermediate_size",
        "patch_size",
        "temporal_patch_size",
        "spatial_merge_size",
        "num_position_embeddings",
    ])? {
        Ok(v) => v,
        Err(key) => return Ok(Err(key)),
    };
    let [
        hidden_size,
        intermediate_size,
        patch_size,
        temporal_patch_size,
        spatial_merge_size,
        num_position_embeddings,
    ] = sizes;
    if let Some(out) = f.u64_opt("out_hidden_size")?
        && out != text_hidden
    {
        return Err(f.unsupported(format!(
            "vision_config.out_hidden_size {out} (the merger is modelled mapping to the text \
             model's width, {text_hidden})"
        )));
    }
    Ok(Ok(VisionTower {
        kind: VisionKind::Qwen3Vl,
        hidden_size,
        intermediate_size,
        num_layers: u32::try_from(layers).map_err(|_| f.err("depth", "too large"))?,
        image_size: None,
        patch_size,
        num_channels: f.u64_opt("in_channels")?.unwrap_or(3),
        projector_input_dim: None,
        projector_output_dim: None,
        vision_output_dim: None,
        temporal_patch_size: Some(temporal_patch_size),
        spatial_merge_size: Some(spatial_merge_size),
        num_position_embeddings: Some(num_position_embeddings),
    }))
}

/// `Gemma3TextConfig`'s defaults (transformers
/// `models/gemma3/configuration_gemma3.py`): multimodal Gemma 3 configs
/// leave most text fields out and rely on them.
const GEMMA3_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 262_208),
    ("hidden_size", 2304),
    ("intermediate_size", 9216),
    ("num_hidden_layers", 26),
    ("num_attention_heads", 8),
    ("num_key_value_heads", 4),
    ("head_dim", 256),
    ("max_position_embeddings", 131_072),
    ("sliding_window", 4096),
    ("sliding_window_pattern", 6),
];

/// `Qwen3_5TextConfig`'s defaults (transformers 5.24
/// `models/qwen3_5/configuration_qwen3_5.py`; `full_attention_interval`,
/// which `__post_init__` reads when `layer_types` is absent, defaults to 4
/// as Qwen3-Next's does).
const QWEN3_5_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 248_320),
    ("hidden_size", 4096),
    ("intermediate_size", 12_288),
    ("num_hidden_layers", 32),
    ("num_attention_heads", 16),
    ("num_key_value_heads", 4),
    ("max_position_embeddings", 32_768),
    ("head_dim", 256),
    ("linear_conv_kernel_dim", 4),
    ("linear_key_head_dim", 128),
    ("linear_value_head_dim", 128),
    ("linear_num_key_heads", 16),
    ("linear_num_value_heads", 32),
];

/// `Qwen3_5MoeTextConfig`'s defaults (transformers 5.24
/// `models/qwen3_5_moe/configuration_qwen3_5_moe.py`): no dense MLP, every
/// layer routes over `num_experts` with one gated shared expert.
const QWEN3_5_MOE_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 248_320),
    ("hidden_size", 2048),
    ("num_hidden_layers", 40),
    ("num_attention_heads", 16),
    ("num_key_value_heads", 2),
    ("max_position_embeddings", 32_768),
    ("head_dim", 256),
    ("linear_conv_kernel_dim", 4),
    ("linear_key_head_dim", 128),
    ("linear_value_head_dim", 128),
    ("linear_num_key_heads", 16),
    ("linear_num_value_heads", 32),
    ("moe_intermediate_size", 512),
    ("shared_expert_intermediate_size", 512),
    ("num_experts_per_tok", 8),
    ("num_experts", 256),
];

/// The text model type and class defaults of a Qwen3.5 `model_type`
/// (the multimodal wrapper's or the text config's own).
fn qwen3_5_text_type(model_type: &str) -> (&'static str, &'static [(&'static str, u64)]) {
    if model_type.contains("moe") {
        ("qwen3_5_moe_text", QWEN3_5_MOE_TEXT_DEFAULTS)
    } else {
        ("qwen3_5_text", QWEN3_5_TEXT_DEFAULTS)
    }
}

/// Qwen3.5 / Qwen3.6 text models (`Qwen3_5TextModel`,
/// `Qwen3_5MoeTextModel`): Qwen3-Next's hybrid layout (Gated DeltaNet
/// layers, full attention every `full_attention_interval`-th layer, gated
/// query projection, QK norms) with the DeltaNet projections stored
/// unfused (`in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`: the same
/// parameters as Qwen3-Next's fused `in_proj_qkvz` and `in_proj_ba`).
/// Absent fields take the configuration class's defaults, with a warning.
/// The checkpoint's multi-token-prediction layers (`mtp.*`, which
/// transformers ignores on load and vLLM loads only for speculative
/// decoding) are not counted.
fn qwen3_5_text(
    f: &Fields,
    model_type: &str,
    warnings: &mut Vec<String>,
) -> Result<ModelSpec, ModelError> {
    let spec = decoder(f, model_type, warnings)?;
    let absent = f.defaulted();
    if !absent.is_empty() {
        let class = if model_type == "qwen3_5_moe_text" {
            "Qwen3_5MoeTextConfig"
        } else {
            "Qwen3_5TextConfig"
        };
        warnings.push(format!(
            "{}{} absent: using {class}'s defaults",
            f.prefix,
            absent.join(", ")
        ));
    }
    if let Some(n) = f.u64_opt("mtp_num_hidden_layers")?.filter(|&n| n > 0) {
        warnings.push(format!(
            "{}mtp_num_hidden_layers {n}: the checkpoint's multi-token-prediction layers \
             (mtp.*) are not counted (loaded only for speculative decoding)",
            f.prefix
        ));
    }
    Ok(spec)
}

fn note_defaults(f: &Fields, warnings: &mut Vec<String>) {
    let mut absent = f.defaulted();
    if f.obj.contains_key("layer_types") {
        absent.retain(|k| *k != "sliding_window_pattern");
    }
    if !absent.is_empty() {
        warnings.push(format!(
            "{}{} absent: using Gemma3TextConfig's defaults",
            f.prefix,
            absent.join(", ")
        ));
    }
}

/// The decoder families with Llama-style tensors (all but OPT and DeepSeek).
fn decoder(
    f: &Fields,
    model_type: &str,
    warnings: &mut Vec<String>,
) -> Result<ModelSpec, ModelError> {
    let gemma = matches!(model_type, "gemma" | "gemma2" | "gemma3_text");
    let mut spec = base(f, model_type)?;
    spec.tied_embeddings = f.bool_opt("tie_word_embeddings")?.unwrap_or(gemma);

    match model_type {
        "llama" | "granite" | "qwen3" | "qwen3_moe" | "qwen3_next" | "qwen3_5_text"
        | "qwen3_5_moe_text" | "gemma" | "gemma2" | "gemma3_text" | "gpt_oss" => {
            let bias = f.bool_opt("attention_bias")?.unwrap_or(false);
            spec.qkv_bias = bias;
            spec.attention_output_bias = bias;
        }
        "qwen2" | "qwen2_moe" => {
            // Qwen2Attention / Qwen2MoeAttention: q/k/v always carry a
            // bias, o_proj never.
            spec.qkv_bias = true;
        }
        _ => {}
    }
    if matches!(model_type, "llama" | "granite") {
        spec.mlp_bias = f.bool_opt("mlp_bias")?.unwrap_or(false);
    }
    if model_type == "gpt_oss" {
        // GptOssAttention.sinks (one logit per head); GptOssExperts carry
        // gate_up_proj_bias and down_proj_bias (transformers
        // models/gpt_oss/modeling_gpt_oss.py).
        spec.attention_sinks = true;
        spec.mlp_bias = true;
    }
    spec.qk_norm = matches!(
        model_type,
        "qwen3" | "qwen3_moe" | "qwen3_next" | "qwen3_5_text" | "qwen3_5_moe_text" | "gemma3_text"
    );
    if matches!(
        model_type,
        "qwen3_next" | "qwen3_5_text" | "qwen3_5_moe_text"
    ) {
        // Qwen3NextAttention and Qwen3_5(Moe)Attention: q_proj yields the
        // query and an output gate (num_attention_heads · head_dim · 2).
        spec.attention_output_gate = true;
        spec.linear_attention = Some(qwen3_next_linear(f, spec.num_layers)?);
    }
    if matches!(model_type, "gemma2" | "gemma3_text") {
        spec.norms_per_layer = 4;
    }

    spec.moe = match model_type {
        "mixtral" => Some(Moe {
            num_experts: f.u32_req("num_local_experts")?,
            experts_per_token: f.u32_req("num_experts_per_tok")?,
            expert_intermediate_size: spec.intermediate_size,
            shared_experts: 0,
            shared_expert_intermediate_size: None,
            shared_expert_gate: false,
            dense_layers: 0,
            layer_step: None,
            router_bias: false,
            mxfp4_experts: false,
        }),
        "qwen2_moe" | "qwen3_moe" | "qwen3_next" | "qwen3_5_moe_text" => {
            qwen_moe(f, spec.num_layers)?
        }
        // GptOssMLP: a router with a bias (GptOssTopKRouter) over
        // num_local_experts experts of intermediate_size; the published
        // checkpoints store the experts in MXFP4 (quantization_config).
        "gpt_oss" => Some(Moe {
            num_experts: f.u32_req("num_local_experts")?,
            experts_per_token: match f.u32_opt("num_experts_per_tok")? {
                Some(k) => k,
                None => f.u32_req("experts_per_token")?,
            },
            expert_intermediate_size: spec.intermediate_size,
            shared_experts: 0,
            shared_expert_intermediate_size: None,
            shared_expert_gate: false,
            dense_layers: 0,
            layer_step: None,
            router_bias: true,
            mxfp4_experts: f.quantization()?.is_some_and(|q| q.method == "mxfp4"),
        }),
        _ => None,
    };
    spec.sliding_window = sliding_window(f, model_type, spec.num_layers, warnings)?;
    Ok(spec)
}

/// Fields every family shares.
fn base(f: &Fields, model_type: &str) -> Result<ModelSpec, ModelError> {
    let num_layers = f.u32_req("num_hidden_layers")?;
    let hidden_size = f.u64_req("hidden_size")?;
    let num_attention_heads = f.u32_req("num_attention_heads")?;
    let num_kv_heads = f
        .u32_opt("num_key_value_heads")?
        .unwrap_or(num_attention_heads);
    let head_dim = match f.u64_opt("head_dim")? {
        Some(d) => d,
        // GemmaConfig, Gemma2Config and Gemma3TextConfig default head_dim to 256.
        None if model_type.starts_with("gemma") => 256,
        None => default_head_dim(f, hidden_size, num_attention_heads)?,
    };
    Ok(ModelSpec {
        name: String::new(),
        architecture: model_type.to_string(),
        approximate: false,
        num_layers,
        hidden_size,
        intermediate_size: match f.u64_opt("intermediate_size")? {
            Some(v) => v,
            // Qwen3_5MoeTextConfig has no dense MLP (every layer routes):
            // no intermediate_size field.
            None if model_type == "qwen3_5_moe_text" => f.u64_req("moe_intermediate_size")?,
            None => return Err(f.err("intermediate_size", "missing")),
        },
        num_attention_heads,
        num_kv_heads,
        head_dim,
        vocab_size: f.u64_req("vocab_size")?,
        tied_embeddings: false,
        mlp: MlpKind::Gated,
        norm: NormKind::Rms,
        norms_per_layer: 2,
        qk_norm: false,
        qk_norm_per_head: false,
        qkv_bias: false,
        attention_output_bias: false,
        attention_sinks: false,
        attention_output_gate: false,
        mlp_bias: false,
        learned_positions: None,
        encoder: false,
        token_types: None,
        pooler: false,
        vision: None,
        moe: None,
        mla: None,
        sliding_window: None,
        linear_attention: None,
        max_context: f.u64_opt("max_position_embeddings")?,
        torch_dtype: f.dtype()?,
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: false,
        multimodal_encoder: None,
    })
}

fn default_head_dim(f: &Fields, hidden: u64, heads: u32) -> Result<u64, ModelError> {
    let heads = u64::from(heads);
    if heads == 0 || hidden % heads != 0 {
        return Err(f.err(
            "head_dim",
            format!(
                "absent, and hidden_size {hidden} does not divide by num_attention_heads {heads}"
            ),
        ));
    }
    Ok(hidden / heads)
}

/// Qwen2-MoE / Qwen3-MoE: `decoder_sparse_step` and `mlp_only_layers` pick
/// the dense layers; only leading dense layers are modelled.
fn qwen_moe(f: &Fields, num_layers: u32) -> Result<Option<Moe>, ModelError> {
    let num_experts = f.u32_req("num_experts")?;
    if num_experts == 0 {
        return Ok(None);
    }
    let step = f.u64_opt("decoder_sparse_step")?.unwrap_or(1);
    if step != 1 {
        return Err(f.unsupported(format!(
            "decoder_sparse_step {step} (only every layer sparse, step 1, is modelled)"
        )));
    }
    let mut dense: Vec<u64> = match f.obj.get("mlp_only_layers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| f.err("mlp_only_layers", "expected a list of layer indices"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(f.err("mlp_only_layers", "expected a list of layer indices")),
    };
    dense.sort_unstable();
    dense.dedup();
    if dense.iter().enumerate().any(|(i, &l)| l != i as u64)
        || dense.len() as u64 > u64::from(num_layers)
    {
        return Err(f.unsupported(format!(
            "mlp_only_layers {dense:?}: only leading dense layers (0, 1, …) are modelled"
        )));
    }
    let shared = f.u64_opt("shared_expert_intermediate_size")?.unwrap_or(0);
    Ok(Some(Moe {
        num_experts,
        experts_per_token: f.u32_req("num_experts_per_tok")?,
        expert_intermediate_size: f.u64_req("moe_intermediate_size")?,
        shared_experts: u32::from(shared > 0),
        shared_expert_intermediate_size: (shared > 0).then_some(shared),
        // Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1).
        shared_expert_gate: shared > 0,
        dense_layers: dense.len() as u32,
        layer_step: None,
        router_bias: false,
        mxfp4_experts: false,
    }))
}

/// Qwen3-Next's Gated DeltaNet layers (transformers `Qwen3NextConfig`):
/// every `full_attention_interval`-th layer (default 4) attends fully, or
/// as `layer_types` lists, which must follow that pattern.
fn qwen3_next_linear(f: &Fields, num_layers: u32) -> Result<LinearAttention, ModelError> {
    let l = LinearAttention {
        num_key_heads: f.u32_req("linear_num_key_heads")?,
        num_value_heads: f.u32_req("linear_num_value_heads")?,
        key_head_dim: f.u64_req("linear_key_head_dim")?,
        value_head_dim: f.u64_req("linear_value_head_dim")?,
        conv_kernel: f.u64_req("linear_conv_kernel_dim")?,
        full_attention_interval: f.u32_opt("full_attention_interval")?.unwrap_or(4),
        // Qwen3.5's configs: `mamba_ssm_dtype: float32` (vLLM holds the
        // recurrent state in it, model_executor/models/config.py).
        ssm_state_dtype: match f.str_opt("mamba_ssm_dtype")? {
            None => None,
            Some(raw) => match dtype_name(raw) {
                None => None,
                Some(d) if matches!(d.as_str(), "fp32" | "bf16" | "fp16") => Some(d),
                Some(_) => {
                    return Err(f.err(
                        "mamba_ssm_dtype",
                        format!("{raw:?} (expected float32, bfloat16 or float16)"),
                    ));
                }
            },
        },
    };
    if l.full_attention_interval == 0 {
        return Err(f.err("full_attention_interval", "zero"));
    }
    if let Some(types) = f.obj.get("layer_types").filter(|v| !v.is_null()) {
        let Value::Array(types) = types else {
            return Err(f.err("layer_types", "expected a list of strings"));
        };
        if types.len() != num_layers as usize {
            return Err(f.err(
                "layer_types",
                format!("{} entries for {num_layers} layers", types.len()),
            ));
        }
        for (i, t) in types.iter().enumerate() {
            let full = (i as u32 + 1) % l.full_attention_interval == 0;
            match (t.as_str(), full) {
                (Some("full_attention"), true) | (Some("linear_attention"), false) => {}
                _ => {
                    return Err(f.unsupported(format!(
                        "layer_types[{i}] {t}: only full attention every {} layers is modelled",
                        l.full_attention_interval
                    )));
                }
            }
        }
    }
    Ok(l)
}

fn sliding_window(
    f: &Fields,
    model_type: &str,
    num_layers: u32,
    warnings: &mut Vec<String>,
) -> Result<Option<SlidingWindow>, ModelError> {
    let window = f.u64_opt("sliding_window")?;
    let sliding_layers = if model_type == "phi3" {
        if let Some(w) = window {
            warnings.push(format!(
                "sliding_window {w} not applied (phi3): the KV cache is sized for the full context"
            ));
        }
        return Ok(None);
    } else if let Some(types) = f.obj.get("layer_types").filter(|v| !v.is_null()) {
        let Value::Array(types) = types else {
            return Err(f.err("layer_types", "expected a list of strings"));
        };
        if types.len() != num_layers as usize {
            return Err(f.err(
                "layer_types",
                format!("{} entries for {num_layers} layers", types.len()),
            ));
        }
        let mut n = 0u32;
        for t in types {
            match t.as_str() {
                Some("sliding_attention") => n += 1,
                Some(_) => {}
                None => return Err(f.err("layer_types", "expected a list of strings")),
            }
        }
        n
    } else {
        let use_sliding = f.bool_opt("use_sliding_window")?.unwrap_or(false);
        match model_type {
            "mistral" | "mixtral" => num_layers,
            // Qwen2Attention: sliding from layer max_window_layers on.
            "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" if use_sliding => {
                let from = f.u64_opt("max_window_layers")?.unwrap_or(0);
                num_layers.saturating_sub(u32::try_from(from).unwrap_or(u32::MAX))
            }
            // Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2).
            "gemma2" => num_layers.div_ceil(2),
            "gemma3_text" => {
                let pattern = f.u64_opt("sliding_window_pattern")?.unwrap_or(6);
                if pattern == 0 {
                    return Err(f.err("sliding_window_pattern", "zero"));
                }
                // Layer i slides unless (i + 1) % pattern == 0.
                num_layers - u32::try_from(u64::from(num_layers) / pattern).unwrap_or(0)
            }
            _ => 0,
        }
    };
    Ok(match window {
        Some(window) if sliding_layers > 0 => Some(SlidingWindow {
            window,
            layers: sliding_layers,
        }),
        _ => None,
    })
}

/// DeepSeek-V2/V3 (`modeling_deepseek.py`): MLA attention, MoE after
/// `first_k_dense_replace` dense layers.
fn deepseek(
    f: &Fields,
    model_type: &str,
    warnings: &mut Vec<String>,
) -> Result<ModelSpec, ModelError> {
    if f.bool_opt("attention_bias")?.unwrap_or(false) {
        return Err(f.unsupported("attention_bias true with multi-head latent attention".into()));
    }
    let mla = Mla {
        q_lora_rank: f.u64_opt("q_lora_rank")?,
        kv_lora_rank: f.u64_req("kv_lora_rank")?,
        qk_nope_head_dim: f.u64_req("qk_nope_head_dim")?,
        qk_rope_head_dim: f.u64_req("qk_rope_head_dim")?,
        v_head_dim: f.u64_req("v_head_dim")?,
    };
    let mut spec = ModelSpec {
        // Recent transformers write head_dim = qk_rope_head_dim; the catalog
        // (and this spec) records the value head size.
        head_dim: mla.v_head_dim,
        ..base(f, model_type)?
    };
    spec.tied_embeddings = f.bool_opt("tie_word_embeddings")?.unwrap_or(false);
    spec.mla = Some(mla);
    if let Some(experts) = f.u32_opt("n_routed_experts")? {
        let freq = f.u64_opt("moe_layer_freq")?.unwrap_or(1);
        if freq != 1 {
            return Err(f.unsupported(format!("moe_layer_freq {freq} (only 1 is modelled)")));
        }
        spec.moe = Some(Moe {
            num_experts: experts,
            experts_per_token: f.u32_req("num_experts_per_tok")?,
            expert_intermediate_size: f.u64_req("moe_intermediate_size")?,
            // DeepseekV3MoE.shared_experts: one MLP of n_shared × moe_intermediate_size,
            // the same count as n_shared experts of moe_intermediate_size.
            shared_experts: f.u32_opt("n_shared_experts")?.unwrap_or(0),
            shared_expert_intermediate_size: None,
            shared_expert_gate: false,
            dense_layers: f.u32_opt("first_k_dense_replace")?.unwrap_or(0),
            layer_step: None,
            // The per-expert e_score_correction_bias exists with the
            // "noaux_tc" router: DeepSeek's modeling_deepseek.py creates it
            // for that topk_method, which DeepseekV3Config defaults to, and
            // transformers' DeepseekV3TopkRouter registers it always. A V3
            // config without topk_method (Kimi K2 copies trimmed to the
            // architecture fields) therefore has it; V2 defaults to "greedy".
            router_bias: match f.str_opt("topk_method")? {
                Some(m) => m == "noaux_tc",
                None => model_type != "deepseek_v2",
            },
            mxfp4_experts: false,
        });
    }
    if let Some(n) = f.u64_opt("num_nextn_predict_layers")?.filter(|&n| n > 0) {
        warnings.push(format!(
            "the checkpoint also stores {n} multi-token-prediction layer(s) (num_nextn_predict_layers), not counted"
        ));
    }
    Ok(spec)
}

/// OPT (`modeling_opt.py`): LayerNorm, a plain ReLU MLP (`fc1`, `fc2`),
/// biases everywhere (`enable_bias`), learned positions with an offset of 2,
/// LM head tied (the `PretrainedConfig` default; `OPTConfig` does not
/// override it).
fn opt(f: &Fields) -> Result<ModelSpec, ModelError> {
    let hidden = f.u64_req("hidden_size")?;
    match f.u64_opt("word_embed_proj_dim")? {
        Some(proj) if proj != hidden => {
            return Err(f.unsupported(format!(
                "word_embed_proj_dim {proj} differs from hidden_size {hidden} (project_in/project_out, as in opt-350m)"
            )));
        }
        _ => {}
    }
    if !f.bool_opt("do_layer_norm_before")?.unwrap_or(true) {
        return Err(
            f.unsupported("do_layer_norm_before false (post-norm OPT, as in opt-350m)".into())
        );
    }
    if !f.bool_opt("layer_norm_elementwise_affine")?.unwrap_or(true) {
        return Err(f.unsupported("layer_norm_elementwise_affine false".into()));
    }
    if f.bool_opt("_remove_final_layer_norm")?.unwrap_or(false) {
        return Err(f.unsupported("_remove_final_layer_norm true".into()));
    }
    let heads = f.u32_req("num_attention_heads")?;
    let bias = f.bool_opt("enable_bias")?.unwrap_or(true);
    let positions = f.u64_req("max_position_embeddings")?;
    Ok(ModelSpec {
        name: String::new(),
        architecture: "opt".into(),
        approximate: false,
        num_layers: f.u32_req("num_hidden_layers")?,
        hidden_size: hidden,
        intermediate_size: f.u64_req("ffn_dim")?,
        num_attention_heads: heads,
        num_kv_heads: heads,
        head_dim: default_head_dim(f, hidden, heads)?,
        vocab_size: f.u64_req("vocab_size")?,
        tied_embeddings: f.bool_opt("tie_word_embeddings")?.unwrap_or(true),
        mlp: MlpKind::Plain,
        norm: NormKind::Layer,
        norms_per_layer: 2,
        qk_norm: false,
        qk_norm_per_head: false,
        qkv_bias: bias,
        attention_output_bias: bias,
        attention_sinks: false,
        attention_output_gate: false,
        mlp_bias: bias,
        // OPTLearnedPositionalEmbedding: num_embeddings + offset 2.
        learned_positions: Some(positions + 2),
        encoder: false,
        token_types: None,
        pooler: false,
        vision: None,
        moe: None,
        mla: None,
        sliding_window: None,
        linear_attention: None,
        max_context: Some(positions),
        torch_dtype: f.dtype()?,
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: false,
        multimodal_encoder: None,
    })
}

/// BERT and XLM-RoBERTa encoders as `BertModel` / `XLMRobertaModel` store
/// them (transformers `modeling_bert.py`, `modeling_xlm_roberta.py`):
/// word, absolute position (`max_position_embeddings` rows) and token-type
/// (`type_vocab_size` rows, default 2; XLM-R configs say 1) embeddings with
/// a LayerNorm; per layer q/k/v/o with biases, LayerNorm, a plain MLP
/// (`intermediate`, `output`) with biases, LayerNorm; the pooler, which
/// both model classes build unless told not to. Other heads (masked LM,
/// classification) store other tensors and are refused, as are relative
/// position embeddings (`position_embedding_type` other than `absolute`).
fn bert(f: &Fields, model_type: &str, root: &Map<String, Value>) -> Result<ModelSpec, ModelError> {
    let base_class = if model_type == "bert" {
        "BertModel"
    } else {
        "XLMRobertaModel"
    };
    match root.get("architectures") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            if let Some(other) = a
                .iter()
                .filter_map(Value::as_str)
                .find(|&c| c != base_class)
            {
                return Err(f.unsupported(format!(
                    "architecture {other} (only the bare encoder, {base_class}, is modelled)"
                )));
            }
        }
        Some(_) => return Err(f.err("architectures", "expected a list of strings")),
    }
    if let Some(p) = f.str_opt("position_embedding_type")?
        && p != "absolute"
    {
        return Err(f.unsupported(format!(
            "position_embedding_type {p:?} (only absolute positions are modelled)"
        )));
    }
    let hidden = f.u64_req("hidden_size")?;
    let heads = f.u32_req("num_attention_heads")?;
    let positions = f.u64_opt("max_position_embeddings")?.unwrap_or(512);
    Ok(ModelSpec {
        name: String::new(),
        architecture: model_type.to_string(),
        approximate: false,
        num_layers: f.u32_req("num_hidden_layers")?,
        hidden_size: hidden,
        intermediate_size: f.u64_req("intermediate_size")?,
        num_attention_heads: heads,
        num_kv_heads: heads,
        head_dim: default_head_dim(f, hidden, heads)?,
        vocab_size: f.u64_req("vocab_size")?,
        tied_embeddings: false,
        mlp: MlpKind::Plain,
        norm: NormKind::Layer,
        norms_per_layer: 2,
        qk_norm: false,
        qk_norm_per_head: false,
        qkv_bias: true,
        attention_output_bias: true,
        attention_sinks: false,
        attention_output_gate: false,
        mlp_bias: true,
        learned_positions: Some(positions),
        encoder: true,
        token_types: Some(f.u64_opt("type_vocab_size")?.unwrap_or(2)).filter(|&t| t > 0),
        pooler: true,
        vision: None,
        moe: None,
        mla: None,
        sliding_window: None,
        linear_attention: None,
        // XLM-R reserves two position rows (padding_idx + 1 offset).
        max_context: Some(if model_type == "xlm-roberta" {
            positions.saturating_sub(2)
        } else {
            positions
        }),
        torch_dtype: f.dtype()?,
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: false,
        multimodal_encoder: None,
    })
}

/// A torch dtype's name in the catalog's short form (`torch.bfloat16` →
/// `bf16`); `auto` is unknown.
fn dtype_name(s: &str) -> Option<String> {
    match s.trim_start_matches("torch.") {
        "bfloat16" | "bf16" => Some("bf16".into()),
        "float16" | "fp16" | "half" => Some("fp16".into()),
        "float32" | "fp32" | "float" => Some("fp32".into()),
        "auto" | "" => None,
        other => Some(other.to_ascii_lowercase()),
    }
}

/// The fields of one JSON object (the root, or `text_config`), with
/// typed getters whose errors name the field.
#[derive(Clone, Copy)]
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    path: &'a str,
    /// Printed before field names (`text_config.`).
    prefix: &'static str,
    /// Configuration-class defaults for absent fields (Gemma 3 only).
    defaults: &'static [(&'static str, u64)],
}

impl Fields<'_> {
    fn err(&self, field: &str, reason: impl std::fmt::Display) -> ModelError {
        malformed(self.path, &format!("{}{field}", self.prefix), reason)
    }

    fn unsupported(&self, what: String) -> ModelError {
        ModelError::Unsupported {
            path: self.path.to_string(),
            what,
        }
    }

    fn default_u64(&self, key: &str) -> Option<u64> {
        self.defaults
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// A non-negative integer; `None` when null, or absent without a
    /// configuration-class default.
    /// Several required integers at once: their values, or the first key
    /// that is missing (`Ok(Err(key))`); a malformed value is an error.
    fn required_u64s<const N: usize>(
        &self,
        keys: [&'static str; N],
    ) -> Result<Result<[u64; N], &'static str>, ModelError> {
        let mut out = [0u64; N];
        for (slot, key) in out.iter_mut().zip(keys) {
            match self.u64_opt(key)? {
                Some(v) => *slot = v,
                None => return Ok(Err(key)),
            }
        }
        Ok(Ok(out))
    }

    fn u64_opt(&self, key: &str) -> Result<Option<u64>, ModelError> {
        match self.obj.get(key) {
            None => Ok(self.default_u64(key)),
            Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.err(
                    key,
                    format!("expected a non-negative integer, found {}", kind(v)),
                )
            }),
        }
    }

    fn u64_req(&self, key: &str) -> Result<u64, ModelError> {
        self.u64_opt(key)?.ok_or_else(|| self.err(key, "missing"))
    }

    fn u32_opt(&self, key: &str) -> Result<Option<u32>, ModelError> {
        match self.u64_opt(key)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| self.err(key, format!("{v} is too large"))),
        }
    }

    /// Configuration-class defaults this object relies on (absent keys).
    fn defaulted(&self) -> Vec<&'static str> {
        self.defaults
            .iter()
            .filter(|(k, _)| !self.obj.contains_key(*k))
            .map(|(k, _)| *k)
            .collect()
    }

    fn u32_req(&self, key: &str) -> Result<u32, ModelError> {
        self.u32_opt(key)?.ok_or_else(|| self.err(key, "missing"))
    }

    fn bool_opt(&self, key: &str) -> Result<Option<bool>, ModelError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(key, format!("expected a boolean, found {}", kind(v)))),
        }
    }

    fn str_opt(&self, key: &str) -> Result<Option<&str>, ModelError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(key, format!("expected a string, found {}", kind(v)))),
        }
    }

    /// `torch_dtype` (or `dtype`, transformers ≥ 4.56) in the catalog's
    /// short form; `auto` is unknown.
    fn dtype(&self) -> Result<Option<String>, ModelError> {
        let raw = match self.str_opt("torch_dtype")? {
            Some(s) => Some(s),
            None => self.str_opt("dtype")?,
        };
        Ok(raw.and_then(dtype_name))
    }

    /// `quantization_config`: method and bits.
    fn quantization(&self) -> Result<Option<Quantization>, ModelError> {
        self.quantization_in("quantization_config", "quantization_config.", None)
    }

    /// The quantization object under `key` (fields named with `prefix`);
    /// `method` stands in for a `quant_method` the object does not have.
    fn quantization_in(
        &self,
        key: &str,
        prefix: &'static str,
        method: Option<&str>,
    ) -> Result<Option<Quantization>, ModelError> {
        let q = match self.obj.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(q)) => q,
            Some(v) => {
                return Err(self.err(key, format!("expected an object, found {}", kind(v))));
            }
        };
        let f = Fields {
            obj: q,
            path: self.path,
            prefix,
            defaults: &[],
        };
        let method = f
            .str_opt("quant_method")?
            .or(method)
            .unwrap_or("unknown")
            .to_ascii_lowercase();
        let mut bits = f.u32_opt("bits")?.or(f.u32_opt("w_bit")?);
        let mut details = Vec::new();
        let mut ct_format = None;
        let mut ct_group = None;
        let mut zero_points = None;
        let mut activations_mxfp4 = false;
        let mut quark_excludes = Vec::new();
        match method.as_str() {
            "bitsandbytes" => {
                if f.bool_opt("load_in_4bit")?.unwrap_or(false) {
                    bits = Some(4);
                    if let Some(t) = f.str_opt("bnb_4bit_quant_type")? {
                        details.push(t.to_string());
                    }
                } else if f.bool_opt("load_in_8bit")?.unwrap_or(false) {
                    bits = Some(8);
                }
            }
            "fp8" => {
                bits = Some(8);
                if let Some(fmt) = f.str_opt("fmt")? {
                    details.push(fmt.to_string());
                }
                if let Some(Value::Array(b)) = q.get("weight_block_size") {
                    let dims: Vec<String> = b.iter().map(|v| v.to_string()).collect();
                    details.push(format!("blocks {}", dims.join("×")));
                }
            }
            // NVIDIA ModelOpt exports (`quant_method: modelopt`): the format
            // is `quant_algo` (NVFP4, FP8, W4A16_NVFP4, MIXED_PRECISION, …).
            "modelopt" => {
                if let Some(algo) = f.str_opt("quant_algo")? {
                    details.push(algo.to_string());
                    match algo.to_ascii_uppercase().as_str() {
                        "NVFP4" => bits = Some(4),
                        "FP8" => bits = Some(8),
                        _ => {}
                    }
                }
            }
            // AMD Quark exports: the global weight and input formats;
            // `exclude` lists the modules left unquantized.
            "quark" => {
                if let Some((format, b, a4)) = quark_format(q) {
                    details.push(if a4 {
                        "W4A4 MXFP4 (activations MXFP4 too)".to_string()
                    } else {
                        format.to_string()
                    });
                    bits = Some(b);
                    ct_format = Some(format);
                    activations_mxfp4 = a4;
                }
                if q.get("layer_quant_config")
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
                {
                    details.push("per-layer formats not read".to_string());
                }
                quark_excludes = q
                    .get("exclude")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
            }
            "compressed-tensors" => {
                if let Some((format, b, g, z)) = compressed_tensors_format(q) {
                    details.push(format.to_string());
                    bits = Some(b);
                    ct_format = Some(format);
                    ct_group = g;
                    zero_points = z;
                }
            }
            _ => {}
        }
        let group_size = q.get("group_size").and_then(Value::as_i64).or(ct_group);
        if let Some(g) = group_size {
            details.push(format!("group {g}"));
        }
        let label = match (method.as_str(), bits) {
            ("fp8", _) | ("modelopt", Some(8)) => "fp8".to_string(),
            ("modelopt", Some(4)) => "nvfp4".to_string(),
            ("compressed-tensors" | "quark", _) if ct_format.is_some() => {
                ct_format.unwrap_or_default().to_string()
            }
            (_, Some(8)) => "int8".to_string(),
            ("bitsandbytes", Some(4)) => f
                .str_opt("bnb_4bit_quant_type")?
                .unwrap_or("fp4")
                .to_ascii_lowercase(),
            (m, None | Some(4)) => m.to_string(),
            (m, Some(b)) => format!("{m}-{b}bit"),
        };
        let mut description = method.clone();
        if let Some(b) = bits {
            description.push_str(&format!(" {b}-bit"));
        }
        if !details.is_empty() {
            description.push_str(&format!(", {}", details.join(", ")));
        }
        let mut unquantized_modules: Vec<String> = [
            "ignore",
            "ignored_layers",
            "exclude_modules",
            "modules_to_not_convert",
            "llm_int8_skip_modules",
        ]
        .iter()
        .filter_map(|k| q.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .chain(quark_excludes)
        .collect();
        // GPTQModel's per-module `dynamic` overrides, as vLLM reads them
        // (vllm 0.33.0 `quantization/utils/gptq_utils.py`,
        // `get_dynamic_override`): a `-:` key is a regular expression
        // (`re.match`) of modules left unquantized; others (`+:` or bare)
        // change a module's bits or group, which is not modelled.
        let mut dynamic_overrides = Vec::new();
        if let Some(Value::Object(d)) = q.get("dynamic") {
            for key in d.keys() {
                match key.strip_prefix("-:") {
                    Some(re) => unquantized_modules.push(format!("re:{re}")),
                    None => dynamic_overrides.push(key.clone()),
                }
            }
        }
        let attention_entries: Vec<String> = unquantized_modules
            .iter()
            .filter(|m| m.contains("attn") || m.contains("attention"))
            .cloned()
            .collect();
        Ok(Some(Quantization {
            method,
            bits,
            label,
            description,
            unquantized_attention: attention_entries.first().cloned(),
            attention_entries,
            unquantized_modules,
            group_size,
            zero_points,
            dynamic_overrides,
            activations_mxfp4,
        }))
    }
}

/// The format an AMD Quark `quantization_config` (`quant_method: quark`)
/// quantizes every layer to, from its `global_quant_config`'s `weight` and
/// `input_tensors`, as vLLM's `QuarkConfig` recognises them (vllm 0.11.0
/// `model_executor/layers/quantization/quark/quark.py`: `_is_mx_fp4`,
/// `_is_fp8_w8a8`, `_is_static_tensor_w8a8`; SGLang 0.5.23's `quark.py`
/// checks MXFP4 the same way): MXFP4 W4A4 is `fp4` weights and inputs,
/// `per_group` in groups of 32 with `e8m0` scales, inputs not static;
/// FP8 W8A8 is `fp8_e4m3` weights (static, per tensor or channel) and
/// inputs (dynamic, or per tensor); INT8 W8A8 symmetric `int8` weights per
/// tensor or channel and static per-tensor inputs. Its level's name,
/// bits and whether the activations are MXFP4; `None` for anything else
/// (a weight given as a list of progressive stages, int4 weight-only, no
/// global format).
fn quark_format(q: &Map<String, Value>) -> Option<(&'static str, u32, bool)> {
    let g = q.get("global_quant_config")?.as_object()?;
    let weight = g.get("weight")?.as_object()?;
    let input = g.get("input_tensors").and_then(Value::as_object);
    fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
        m.get(k).and_then(Value::as_str)
    }
    let both = |k: &str, v: &str| {
        str_of(weight, k) == Some(v) && input.is_some_and(|i| str_of(i, k) == Some(v))
    };
    let group_32 = |m: &Map<String, Value>| m.get("group_size").and_then(Value::as_u64) == Some(32);
    let dynamic = |m: &Map<String, Value>| m.get("is_dynamic").and_then(Value::as_bool);
    if both("dtype", "fp4")
        && both("qscheme", "per_group")
        && group_32(weight)
        && input.is_some_and(group_32)
        && input.and_then(dynamic) != Some(false)
        && both("scale_format", "e8m0")
    {
        return Some(("mxfp4", 4, true));
    }
    let per_tensor_or_channel = matches!(
        str_of(weight, "qscheme"),
        Some("per_tensor" | "per_channel")
    );
    let input_per_tensor = input.and_then(|i| str_of(i, "qscheme")) == Some("per_tensor");
    let input_dynamic = input.and_then(dynamic) == Some(true);
    if both("dtype", "fp8_e4m3")
        && dynamic(weight) != Some(true)
        && per_tensor_or_channel
        && (input_dynamic || input_per_tensor)
    {
        return Some(("fp8", 8, false));
    }
    if both("dtype", "int8")
        && per_tensor_or_channel
        && input_per_tensor
        && dynamic(weight) != Some(true)
        && !input_dynamic
        && weight.get("symmetric").and_then(Value::as_bool) == Some(true)
    {
        return Some(("int8", 8, false));
    }
    None
}

/// A compressed-tensors format: its level's name, bits, scale group and
/// whether int4 groups store zero points.
type CtFormat = (&'static str, u32, Option<i64>, Option<bool>);

/// The format every `config_groups` entry of a compressed-tensors
/// `quantization_config` quantizes its weights to, with its bits and scale
/// group, as vLLM's `CompressedTensorsConfig` recognises them (vllm 0.33.0
/// `compressed_tensors.py`: `_is_nvfp4_format`, `_is_mxfp4`,
/// `_is_fp8_w8a8`, `_is_wNa16_group_channel`): NVFP4 is 4-bit float
/// weights in `tensor_group`s of 16 with 4-bit float activations (W4A4;
/// weight-only NVFP4, which vLLM also runs dequantized, is not this level),
/// MXFP4 4-bit float weights in `group`s of 32, FP8 8-bit float weights and
/// activations, int4 4-bit integer weights per `group` or `channel` (its
/// group `-1`) without quantized activations (W4A16), int8 8-bit integer
/// weights (W8A8, W8A16). `None` for anything else, or groups that differ.
fn compressed_tensors_format(q: &Map<String, Value>) -> Option<CtFormat> {
    let Some(Value::Object(groups)) = q.get("config_groups") else {
        return None;
    };
    let mut found = None;
    for g in groups.values() {
        let arg = |side: &str, key: &str| g.get(side).and_then(|a| a.get(key)).cloned();
        let float = |side: &str, bits: u64| {
            arg(side, "type").and_then(|t| t.as_str().map(|t| t == "float")) == Some(true)
                && arg(side, "num_bits").and_then(|b| b.as_u64()) == Some(bits)
        };
        let group = arg("weights", "group_size").and_then(|v| v.as_u64());
        let strategy = arg("weights", "strategy");
        let strategy = strategy.as_ref().and_then(Value::as_str);
        let int = |side: &str, bits: u64| {
            arg(side, "type").and_then(|t| t.as_str().map(|t| t == "int")) == Some(true)
                && arg(side, "num_bits").and_then(|b| b.as_u64()) == Some(bits)
        };
        let no_activations = arg("input_activations", "num_bits").is_none();
        // compressed-tensors' QuantizationArgs default `symmetric: true`:
        // symmetric weights store no zero point.
        let zero_points = arg("weights", "symmetric").and_then(|v| v.as_bool()) == Some(false);
        let this = if float("weights", 4)
            && float("input_activations", 4)
            && group == Some(16)
            && strategy == Some("tensor_group")
        {
            ("nvfp4", 4, None, None)
        } else if float("weights", 4) && group == Some(32) && strategy == Some("group") {
            ("mxfp4", 4, None, None)
        } else if float("weights", 8) && float("input_activations", 8) {
            ("fp8", 8, None, None)
        } else if int("weights", 4) && no_activations && strategy == Some("group") {
            // W4A16 (vLLM's CompressedTensorsWNA16, `_is_wNa16_group_channel`):
            // 4-bit integers in groups, or one group per row.
            (
                "int4",
                4,
                group.and_then(|g| i64::try_from(g).ok()),
                Some(zero_points),
            )
        } else if int("weights", 4) && no_activations && strategy == Some("channel") {
            ("int4", 4, Some(-1), Some(zero_points))
        } else if int("weights", 8) {
            // W8A8 (int8 activations too) and W8A16.
            ("int8", 8, None, None)
        } else {
            return None;
        };
        if found.is_some_and(|f| f != this) {
            return None;
        }
        found = Some(this);
    }
    found
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(_) => "a negative number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn malformed(path: &str, field: &str, reason: impl std::fmt::Display) -> ModelError {
    ModelError::Malformed {
        path: path.to_string(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalog;

    fn parse_ok(text: &str) -> ModelSpec {
        parse(text, "config.json").unwrap().0
    }

    #[test]
    fn qwen3_5_dense_text_model_has_no_experts() {
        // A dense Qwen3.5 wrapper (Qwen3_5ForConditionalGeneration): the
        // text model's MLP is intermediate_size wide on every layer.
        let types: Vec<&str> = (0..8)
            .map(|i| {
                if (i + 1) % 4 == 0 {
                    "full_attention"
                } else {
                    "linear_attention"
                }
            })
            .collect();
        let text = serde_json::json!({
            "model_type": "qwen3_5",
            "tie_word_embeddings": true,
            "text_config": {
                "model_type": "qwen3_5_text", "hidden_size": 1024, "intermediate_size": 3584,
                "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2,
                "head_dim": 256, "vocab_size": 248320, "layer_types": types,
                "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                "linear_num_value_heads": 16, "max_position_embeddings": 262144
            }
        })
        .to_string();
        let (spec, warnings) = parse(&text, "config.json").unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(spec.architecture, "qwen3_5_text");
        assert!(spec.moe.is_none() && spec.tied_embeddings && spec.attention_output_gate);
        assert_eq!((spec.intermediate_size, spec.linear_layers()), (3584, 6));
        // An absent intermediate_size takes Qwen3_5TextConfig's default
        // (only the MoE text config has no such field), with a warning.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["text_config"]
            .as_object_mut()
            .unwrap()
            .remove("intermediate_size");
        let defaulted = parse(&v.to_string(), "config.json").unwrap();
        assert_eq!(
            defaulted.0.intermediate_size, 12_288,
            "Qwen3_5TextConfig's default"
        );
        assert!(
            defaulted.1[0].contains("intermediate_size absent"),
            "{:?}",
            defaulted.1
        );
        // mamba_ssm_dtype in any torch spelling; an unknown one names the field.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["text_config"]["mamba_ssm_dtype"] = Value::from("torch.float32");
        let spec = parse(&v.to_string(), "config.json").unwrap().0;
        let l = spec.linear_attention.unwrap();
        assert_eq!(l.ssm_state_dtype.as_deref(), Some("fp32"));
        v["text_config"]["mamba_ssm_dtype"] = Value::from("int8");
        assert_eq!(
            field_of(parse(&v.to_string(), "config.json").unwrap_err()),
            "text_config.mamba_ssm_dtype"
        );
    }

    fn field_of(e: ModelError) -> String {
        match e {
            ModelError::Malformed { field, .. } => field,
            other => panic!("expected Malformed, got {other}"),
        }
    }

    const LLAMA: &str = r#"{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "intermediate_size": 11008, "num_attention_heads": 32, "vocab_size": 32000,
        "max_position_embeddings": 4096, "torch_dtype": "float16"}"#;

    #[test]
    fn llama_defaults_match_the_catalog() {
        let mut spec = parse_ok(LLAMA);
        let cat = &catalog::find("llama-2-7b").unwrap().spec;
        spec.name = cat.name.clone();
        assert_eq!(&spec, cat);
    }

    #[test]
    fn missing_and_mistyped_fields_are_named() {
        let no_layers = LLAMA.replace(r#""num_hidden_layers": 32,"#, "");
        assert_eq!(field_of(parse("{", "c").unwrap_err()), "(json)");
        assert_eq!(
            field_of(parse(&no_layers, "c").unwrap_err()),
            "num_hidden_layers"
        );
        let text = LLAMA.replace(r#""hidden_size": 4096"#, r#""hidden_size": "4096""#);
        let e = parse(&text, "c").unwrap_err();
        assert!(
            e.to_string()
                .contains("hidden_size: expected a non-negative integer, found a string"),
            "{e}"
        );
        let text = LLAMA.replace(r#""hidden_size": 4096"#, r#""hidden_size": 4096.5"#);
        assert_eq!(field_of(parse(&text, "c").unwrap_err()), "hidden_size");
        let text = LLAMA.replace(r#""hidden_size": 4096"#, r#""hidden_size": -1"#);
        assert_eq!(field_of(parse(&text, "c").unwrap_err()), "hidden_size");
        let text = LLAMA.replace(
            r#""num_attention_heads": 32"#,
            r#""num_attention_heads": 99999999999"#,
        );
        assert_eq!(
            field_of(parse(&text, "c").unwrap_err()),
            "num_attention_heads"
        );
        assert_eq!(field_of(parse("[]", "c").unwrap_err()), "(json)");
        assert_eq!(field_of(parse("{}", "c").unwrap_err()), "model_type");
        let text = LLAMA.replace(
            r#""max_position_embeddings": 4096,"#,
            r#""tie_word_embeddings": "yes","#,
        );
        assert_eq!(
            field_of(parse(&text, "c").unwrap_err()),
            "tie_word_embeddings"
        );
    }

    #[test]
    fn head_dim_must_divide_when_absent() {
        let text = LLAMA.replace(
            r#""num_attention_heads": 32"#,
            r#""num_attention_heads": 30"#,
        );
        assert_eq!(field_of(parse(&text, "c").unwrap_err()), "head_dim");
    }

    #[test]
    fn bert_encoders_parse_and_other_heads_are_refused() {
        let bert = r#"{"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 384,
            "intermediate_size": 1536, "num_attention_heads": 12, "num_hidden_layers": 6,
            "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2}"#;
        let s = parse_ok(bert);
        assert!(s.encoder && s.pooler && s.qkv_bias && s.mlp_bias);
        assert_eq!((s.learned_positions, s.token_types), (Some(512), Some(2)));
        assert_eq!((s.head_dim, s.max_context), (32, Some(512)));
        // all-MiniLM-L6-v2's shape: 22,713,216 parameters, no KV cache.
        assert_eq!(s.parameters(), 22_713_216);
        assert_eq!(s.kv_cache_bytes_per_token(2.0), 0);
        // XLM-RoBERTa: 514 position rows, two reserved; one token type.
        let xlmr = bert
            .replace("\"bert\"", "\"xlm-roberta\"")
            .replace("BertModel", "XLMRobertaModel")
            .replace(
                "\"max_position_embeddings\": 512, \"type_vocab_size\": 2",
                "\"max_position_embeddings\": 514, \"type_vocab_size\": 1",
            );
        let x = parse_ok(&xlmr);
        assert_eq!(
            (x.learned_positions, x.token_types, x.max_context),
            (Some(514), Some(1), Some(512))
        );
        for (from, to) in [
            ("BertModel", "BertForMaskedLM"),
            (
                "\"vocab_size\"",
                "\"position_embedding_type\": \"relative_key\", \"vocab_size\"",
            ),
        ] {
            let e = parse(&bert.replace(from, to), "b/config.json").unwrap_err();
            assert!(matches!(e, ModelError::Unsupported { .. }), "{e}");
        }
    }

    #[test]
    fn cohere_parallel_block_with_bias_free_layernorms() {
        let c = r#"{"architectures": ["CohereForCausalLM"], "model_type": "cohere",
            "hidden_size": 8192, "intermediate_size": 22528, "num_attention_heads": 64,
            "num_hidden_layers": 40, "num_key_value_heads": 64, "vocab_size": 256000,
            "max_position_embeddings": 8192}"#;
        let s = parse_ok(c);
        assert_eq!((s.norm, s.norms_per_layer), (NormKind::LayerNoBias, 1));
        assert!(s.tied_embeddings && !s.qkv_bias && !s.qk_norm);
        // Per layer q/k/v/o 4 × 8192², gated MLP 3 × 8192 × 22528, one norm;
        // tied embedding and the final norm.
        let layer = 4 * 8192 * 8192 + 3 * 8192 * 22528 + 8192;
        assert_eq!(s.parameters(), 40 * layer + 256_000 * 8192 + 8192);
        assert_eq!(s.parameters(), 34_980_831_232);
        // use_qk_norm (Command R+): one q vector per head and one k vector
        // per KV head in every layer, split with the heads they norm.
        let qk = parse_ok(&c.replace("\"max_position", "\"use_qk_norm\": true, \"max_position"));
        assert!(qk.qk_norm && qk.qk_norm_per_head);
        assert_eq!(qk.parameters() - s.parameters(), 40 * (64 + 64) * 128);
        let (plain, normed) = (s.layer_params(0), qk.layer_params(0));
        assert_eq!(normed.attention_sharded - plain.attention_sharded, 64 * 128);
        assert_eq!(normed.attention_kv - plain.attention_kv, 64 * 128);
        assert_eq!(normed.replicated, plain.replicated);
    }

    #[test]
    fn nomic_bert_is_a_swiglu_encoder_without_positions() {
        let c = r#"{"architectures": ["NomicBertModel"], "model_type": "nomic_bert",
            "n_embd": 768, "n_head": 12, "n_layer": 12, "n_inner": 3072, "vocab_size": 30528,
            "n_positions": 8192, "type_vocab_size": 2, "qkv_proj_bias": false,
            "mlp_fc1_bias": false, "mlp_fc2_bias": false, "activation_function": "swiglu",
            "prenorm": false}"#;
        let s = parse_ok(c);
        assert!(s.encoder && !s.pooler && !s.qkv_bias && !s.mlp_bias);
        assert_eq!((s.learned_positions, s.token_types), (None, Some(2)));
        // Per layer Wqkv + out_proj 4 × 768², SwiGLU 3 × 768 × 3072, two
        // LayerNorms 4 × 768; word and token-type embeddings and their
        // LayerNorm: nomic-ai/nomic-embed-text-v1.5's Hub total.
        assert_eq!(s.layer_params(0).total(), 9_440_256);
        assert_eq!(s.parameters(), 136_731_648);
        for (from, to) in [
            ("\"prenorm\": false", "\"prenorm\": true"),
            ("\"swiglu\"", "\"gelu\""),
            ("\"mlp_fc1_bias\": false", "\"mlp_fc1_bias\": true"),
        ] {
            let e = parse(&c.replace(from, to), "n").unwrap_err();
            assert!(matches!(e, ModelError::Unsupported { .. }), "{e}");
        }
    }

    #[test]
    fn unknown_model_type_lists_supported() {
        let e = parse(r#"{"model_type": "mamba"}"#, "m/config.json").unwrap_err();
        let s = e.to_string();
        assert!(matches!(e, ModelError::Unsupported { .. }), "{s}");
        assert!(
            s.contains("m/config.json") && s.contains("\"mamba\"") && s.contains("qwen2_moe"),
            "{s}"
        );
    }

    #[test]
    fn architecture_errors_name_the_file() {
        let text = LLAMA.replace(
            r#""num_attention_heads": 32,"#,
            r#""num_attention_heads": 32, "num_key_value_heads": 3,"#,
        );
        let e = parse(&text, "x/config.json").unwrap_err();
        assert!(
            matches!(&e, ModelError::Arch { path, source } if path == "x/config.json" && source.field == "num_kv_heads"),
            "{e}"
        );
    }

    /// AMD Quark exports as vLLM's `QuarkConfig` reads them (vllm 0.11.0
    /// `quark.py`): W4A4 MXFP4 (weights and inputs `fp4`, per group of 32,
    /// E8M0 scales, dynamic inputs), FP8 W8A8, and a format it has no
    /// scheme for.
    #[test]
    fn quark_formats() {
        let mx = |dynamic: bool| {
            format!(
                r#"{{"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "ch_axis": -1, "scale_format": "e8m0", "scale_type": "float", "is_dynamic": {dynamic}, "round_method": "half_even", "symmetric": null}}"#
            )
        };
        let quark = |weight: &str, input: &str| {
            LLAMA.replace(
                r#""torch_dtype": "float16""#,
                &format!(
                    r#""torch_dtype": "bfloat16", "quantization_config": {{"quant_method": "quark", "global_quant_config": {{"weight": {weight}, "input_tensors": {input}, "output_tensors": null, "bias": null}}, "exclude": ["lm_head"], "layer_quant_config": {{}}, "export": {{"weight_format": "real_quantized", "pack_method": "reorder"}}}}"#
                ),
            )
        };
        let c = parse_config(&quark(&mx(false), &mx(true)), "c").unwrap();
        let q = c.quantization.unwrap();
        assert_eq!((q.label.as_str(), q.bits), ("mxfp4", Some(4)));
        assert!(q.activations_mxfp4 && c.spec.activations_mxfp4);
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("mxfp4"));
        assert_eq!(q.unquantized_modules, ["lm_head"]);
        assert_eq!(
            q.description,
            "quark 4-bit, W4A4 MXFP4 (activations MXFP4 too)"
        );
        // Weights only (no input format), or static inputs: not vLLM's
        // W4A4 MXFP4 scheme.
        for input in ["null".to_string(), mx(false)] {
            let c = parse_config(&quark(&mx(false), &input), "c").unwrap();
            let q = c.quantization.unwrap();
            assert_eq!(q.label, "quark", "{input}");
            assert!(!c.spec.activations_mxfp4);
        }
        let fp8 = r#"{"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": false}"#;
        let c = parse_config(&quark(fp8, fp8), "c").unwrap();
        let q = c.quantization.unwrap();
        assert_eq!((q.label.as_str(), q.bits), ("fp8", Some(8)));
        assert!(!q.activations_mxfp4);
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("fp8"));
        // `exclude` entries name whole modules, or `re:` patterns, as
        // vLLM's Quark matching reads them: a wildcard names nothing.
        let kept = |exclude: &str| {
            let text = quark(&mx(false), &mx(true)).replace(
                r#""exclude": ["lm_head"]"#,
                &format!(r#""exclude": {exclude}"#),
            );
            parse_config(&text, "c")
                .unwrap()
                .spec
                .unquantized_layers
                .len()
        };
        assert_eq!(kept(r#"["model.layers.1.self_attn.q_proj"]"#), 1);
        assert_eq!(kept(r#"["re:model\\.layers\\.[12]\\.mlp\\.down_proj"]"#), 2);
        assert_eq!(kept(r#"["*.mlp.*"]"#), 0);
        // Static FP8 inputs must be per tensor (`_is_fp8_w8a8`).
        let per_channel = r#"{"dtype": "fp8_e4m3", "qscheme": "per_channel", "is_dynamic": false}"#;
        let c = parse_config(&quark(fp8, per_channel), "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "quark");
        // INT8 W8A8 needs symmetric weights and static per-tensor inputs
        // (`_is_static_tensor_w8a8`).
        let int8 = |sym: bool| {
            format!(
                r#"{{"dtype": "int8", "qscheme": "per_channel", "is_dynamic": false, "symmetric": {sym}}}"#
            )
        };
        let int8_in = r#"{"dtype": "int8", "qscheme": "per_tensor", "is_dynamic": false}"#;
        let c = parse_config(&quark(&int8(true), int8_in), "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "int8");
        let c = parse_config(&quark(&int8(false), int8_in), "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "quark");
        // A progressive weight list (FP8, then INT4): no scheme read.
        let c = parse_config(&quark(&format!("[{fp8}, {fp8}]"), fp8), "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "quark");
    }

    #[test]
    fn new_dtype_key_and_quantization() {
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""dtype": "bfloat16", "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false}"#,
        );
        // The newer `dtype` key names the 16-bit type.
        let plain = LLAMA.replace(r#""torch_dtype": "float16""#, r#""dtype": "bfloat16""#);
        assert_eq!(
            parse_config(&plain, "c")
                .unwrap()
                .spec
                .torch_dtype
                .as_deref(),
            Some("bf16")
        );
        // A GPTQ checkpoint is stored at int4, in groups of its group_size.
        let c = parse_config(&text, "c").unwrap();
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("int4"));
        assert_eq!(c.spec.quant_group_size, Some(128));
        let q = c.quantization.unwrap();
        assert_eq!((q.method.as_str(), q.bits), ("gptq", Some(4)));
        assert_eq!(q.description, "gptq 4-bit, group 128");
        assert_eq!(q.label, "gptq");
        assert!(c.warnings.iter().any(|w| w.contains("gptq 4-bit")));
        for (g, want, bits) in [("32", 32, 4.625), ("-1", 0, 4.0 + 20.0 / 4096.0)] {
            let c = parse_config(
                &text.replace(r#""group_size": 128"#, &format!(r#""group_size": {g}"#)),
                "c",
            )
            .unwrap();
            assert_eq!(c.spec.quant_group_size, Some(want));
            assert_eq!(c.spec.level_bits(crate::plan::Quant::Int4), bits);
            assert_eq!(
                c.spec.level_bits(crate::plan::Quant::Q4_0),
                crate::plan::Quant::Q4_0.bits_per_weight()
            );
        }
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("nf4"));
        assert_eq!(c.spec.quant_group_size, None);
        let q = c.quantization.unwrap();
        assert_eq!(q.description, "bitsandbytes 4-bit, nf4");
        assert_eq!(q.label, "nf4");
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "fp8");
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("fp8"));
        // ModelOpt's config.json form: the format is quant_algo.
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""torch_dtype": "bfloat16", "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "ignore": ["lm_head"]}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        let q = c.quantization.unwrap();
        assert_eq!((q.label.as_str(), q.bits), ("nvfp4", Some(4)));
        assert_eq!(q.description, "modelopt 4-bit, NVFP4, group 16");
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("nvfp4"));
        assert_eq!(q.unquantized_attention, None);
        assert!(!c.warnings.iter().any(|w| w.contains("unquantized")));
        // Attention left in BF16 (as DeepSeek-R1-FP4's exclude_modules do):
        // 32 layers × 4 × 4096² attention weights at 16 bits instead of 4.5
        // are 2,147,483,648 × 11.5 / 8 = 3,087,007,744 bytes more.
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head", "model.layers.*.self_attn*"]}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        assert_eq!(
            c.quantization.unwrap().unquantized_attention.as_deref(),
            Some("model.layers.*.self_attn*")
        );
        assert!(
            c.warnings.iter().any(|w| w.contains(
                "leaves attention modules unquantized (\"model.layers.*.self_attn*\"); planned with the attention weights at 16 bits, 3.09 GB more than at nvfp4"
            )),
            "{:?}",
            c.warnings
        );
        assert!(c.spec.attention_unquantized);
        assert!(c.spec.unquantized_layers.is_empty());
        // Only part of the attention left unquantized: one layer's four
        // projections (4 × 4096² × 11.5 / 8 = 96,468,992 bytes), or the q
        // projection of each layer (32 × 4096² × 11.5 / 8 = 771,751,936).
        for (ignore, projections, layers, gb) in [
            (
                r#""lm_head", "model.layers.0.self_attn""#,
                4,
                "1 layer ",
                "0.10",
            ),
            (
                r#""lm_head", "model.layers.*.self_attn.q_proj""#,
                32,
                "32 layers",
                "0.77",
            ),
        ] {
            let text = LLAMA.replace(
                r#""torch_dtype": "float16""#,
                &format!(
                    r#""quantization_config": {{"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": [{ignore}]}}"#
                ),
            );
            let c = parse_config(&text, "c").unwrap();
            assert!(!c.spec.attention_unquantized, "{ignore}");
            let kept: usize = c
                .spec
                .unquantized_layers
                .iter()
                .map(|l| l.parts.len())
                .sum();
            assert_eq!(kept, projections, "{ignore}");
            assert!(
                c.warnings.iter().any(|w| w
                    .contains(&format!("keeps {projections} projections of {layers}"))
                    && w.contains(&format!("{gb} GB more than at nvfp4"))),
                "{ignore}: {:?}",
                c.warnings
            );
        }
        // Every layer named one by one, or a regular expression: all of it.
        let every: Vec<String> = (0..32)
            .map(|i| format!("\"model.layers.{i}.self_attn*\""))
            .collect();
        for ignore in [every.join(", "), r#""re:.*self_attn.*""#.to_string()] {
            let text = LLAMA.replace(
                r#""torch_dtype": "float16""#,
                &format!(
                    r#""quantization_config": {{"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": [{ignore}]}}"#
                ),
            );
            assert!(
                parse_config(&text, "c").unwrap().spec.attention_unquantized,
                "{ignore}"
            );
        }
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""torch_dtype": "float16", "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4"}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        assert_eq!(c.quantization.unwrap().label, "modelopt");
        assert_eq!(c.spec.torch_dtype.as_deref(), Some("fp16"));
        // compressed-tensors (llm-compressor): the format is in config_groups.
        let ct = |groups: &str| {
            let text = LLAMA.replace(
                r#""torch_dtype": "float16""#,
                &format!(
                    r#""torch_dtype": "bfloat16", "quantization_config": {{"quant_method": "compressed-tensors", "config_groups": {{{groups}}}}}"#
                ),
            );
            let c = parse_config(&text, "c").unwrap();
            (c.quantization.unwrap().label, c.spec.torch_dtype)
        };
        let nvfp4 = r#""group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": true}, "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "dynamic": "local"}}"#;
        assert_eq!(ct(nvfp4), ("nvfp4".into(), Some("nvfp4".into())));
        let mxfp4 = r#""group_0": {"weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "symmetric": true}, "input_activations": null}"#;
        assert_eq!(ct(mxfp4), ("mxfp4".into(), Some("mxfp4".into())));
        let fp8 = r#""group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}"#;
        assert_eq!(ct(fp8), ("fp8".into(), Some("fp8".into())));
        // Weight-only NVFP4 (no 4-bit activations), int4 and mixed groups
        // keep the method's name and the model's dtype.
        let w4a16 = r#""group_0": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}, "input_activations": null}"#;
        assert_eq!(
            ct(w4a16),
            ("compressed-tensors".into(), Some("bf16".into()))
        );
        // GPTQModel's `dynamic`: `-:` keys are modules left unquantized,
        // others override bits (noted, not modelled).
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:model\\.layers\\.0\\..*": {}, "+:.*down_proj.*": {"bits": 8}}}"#,
        );
        let c = parse_config(&text, "c").unwrap();
        let layers: Vec<u32> = c.spec.unquantized_layers.iter().map(|l| l.layer).collect();
        assert_eq!(layers, [0]);
        assert_eq!(c.spec.unquantized_layers[0].parts.len(), 7);
        assert!(
            c.warnings
                .iter()
                .any(|w| w
                    .contains("`dynamic` overrides some modules' bits or group (+:.*down_proj.*)")),
            "{:?}",
            c.warnings
        );
        // W4A16 integers in groups (RedHatAI's quantized.w4a16) and W8A8.
        let int4 = r#""group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}"#;
        assert_eq!(ct(int4), ("int4".into(), Some("int4".into())));
        // Symmetric (compressed-tensors' default) stores no zero point:
        // 4 + 16/128 bits; asymmetric 4 + 20/128.
        let spec_of = |groups: &str| {
            let text = LLAMA.replace(
                r#""torch_dtype": "float16""#,
                &format!(
                    r#""quantization_config": {{"quant_method": "compressed-tensors", "config_groups": {{{groups}}}}}"#
                ),
            );
            parse_config(&text, "c").unwrap().spec
        };
        let s = spec_of(int4);
        assert_eq!(
            (s.quant_group_size, s.quant_zero_points),
            (Some(128), Some(false))
        );
        assert_eq!(s.level_bits(crate::plan::Quant::Int4), 4.125);
        let s = spec_of(&int4.replace(r#""type": "int""#, r#""type": "int", "symmetric": false"#));
        assert_eq!(s.level_bits(crate::plan::Quant::Int4), 4.15625);
        let int8 = r#""group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}, "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": true}}"#;
        assert_eq!(ct(int8), ("int8".into(), Some("int8".into())));
        // 4-bit integers with 8-bit activations (W4A8) are none of these.
        let w4a8 = int4.replace(
            "}}",
            r#"}, "input_activations": {"num_bits": 8, "type": "int"}}"#,
        );
        assert_eq!(ct(&w4a8).0, "compressed-tensors");
        assert_eq!(
            ct(&format!("{nvfp4}, {}", fp8.replace("group_0", "group_1"))).0,
            "compressed-tensors"
        );
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""quantization_config": {"quant_method": "compressed-tensors", "bits": 4}"#,
        );
        assert_eq!(
            parse_config(&text, "c")
                .unwrap()
                .quantization
                .unwrap()
                .label,
            "compressed-tensors"
        );
        let text = LLAMA.replace(
            r#""torch_dtype": "float16""#,
            r#""quantization_config": {"quant_method": "awq", "bits": 8}"#,
        );
        assert_eq!(
            parse_config(&text, "c")
                .unwrap()
                .quantization
                .unwrap()
                .label,
            "int8"
        );
    }

    #[test]
    fn qwen2_sliding_window_only_when_enabled() {
        let base = r#"{"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584,
            "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4,
            "vocab_size": 152064, "sliding_window": 131072, "max_window_layers": 21,
            "use_sliding_window": false}"#;
        let s = parse_ok(base);
        assert!(
            s.sliding_window.is_none()
                && s.qkv_bias
                && !s.attention_output_bias
                && !s.tied_embeddings
        );
        let s = parse_ok(&base.replace(
            "\"use_sliding_window\": false",
            "\"use_sliding_window\": true",
        ));
        assert_eq!(
            s.sliding_window,
            Some(SlidingWindow {
                window: 131072,
                layers: 7
            })
        );
        // layer_types, where present, decides.
        let mut types = vec!["\"full_attention\""; 28];
        types[27] = "\"sliding_attention\"";
        let t = base.replace(
            "\"use_sliding_window\": false",
            &format!("\"layer_types\": [{}]", types.join(",")),
        );
        assert_eq!(
            parse_ok(&t).sliding_window,
            Some(SlidingWindow {
                window: 131072,
                layers: 1
            })
        );
        let t = base.replace(
            "\"use_sliding_window\": false",
            "\"layer_types\": [\"full_attention\"]",
        );
        assert_eq!(field_of(parse(&t, "c").unwrap_err()), "layer_types");
    }

    #[test]
    fn qwen2_moe_shared_expert_and_dense_layers() {
        // Qwen/Qwen1.5-MoE-A2.7B config.json (fields the parser reads).
        let text = r#"{"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
            "max_position_embeddings": 8192, "moe_intermediate_size": 1408, "num_attention_heads": 16,
            "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
            "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1, "tie_word_embeddings": false,
            "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936}"#;
        let s = parse_ok(text);
        let m = s.moe.as_ref().unwrap();
        assert_eq!(
            (
                m.num_experts,
                m.experts_per_token,
                m.expert_intermediate_size
            ),
            (60, 4, 1408)
        );
        assert_eq!(
            (
                m.shared_experts,
                m.shared_expert_intermediate_size,
                m.shared_expert_gate
            ),
            (1, Some(5632), true)
        );
        assert!(s.qkv_bias);
        // Published total of Qwen1.5-MoE-A2.7B: 14.3B.
        assert_eq!(s.parameters(), 14_315_784_192);
        let t = text.replace(
            "\"decoder_sparse_step\": 1",
            "\"decoder_sparse_step\": 1, \"mlp_only_layers\": [0, 1]",
        );
        assert_eq!(parse_ok(&t).moe.unwrap().dense_layers, 2);
        let t = text.replace("\"decoder_sparse_step\": 1", "\"mlp_only_layers\": [3]");
        assert!(matches!(
            parse(&t, "c").unwrap_err(),
            ModelError::Unsupported { .. }
        ));
        let t = text.replace("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
        assert!(matches!(
            parse(&t, "c").unwrap_err(),
            ModelError::Unsupported { .. }
        ));
    }

    #[test]
    fn deepseek_v2_lite_without_query_lora() {
        // deepseek-ai/DeepSeek-V2-Lite config.json (fields the parser reads).
        let text = r#"{"model_type": "deepseek_v2", "first_k_dense_replace": 1, "hidden_size": 2048,
            "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
            "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_routed_experts": 64,
            "n_shared_experts": 2, "num_attention_heads": 16, "num_experts_per_tok": 6,
            "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": null,
            "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
            "topk_method": "greedy", "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 102400}"#;
        let s = parse_ok(text);
        let mla = s.mla.as_ref().unwrap();
        assert_eq!(mla.q_lora_rank, None);
        let m = s.moe.as_ref().unwrap();
        assert_eq!(
            (m.shared_experts, m.dense_layers, m.router_bias),
            (2, 1, false)
        );
        // DeepSeek-V2-Lite: "15.7B total parameters" (model card); the Hub's
        // safetensors total is 15,706,484,224.
        assert_eq!(s.parameters(), 15_706_484_224);
        let t = text.replace("\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2");
        assert!(matches!(
            parse(&t, "c").unwrap_err(),
            ModelError::Unsupported { .. }
        ));
    }

    #[test]
    fn gemma3_nested_text_config_uses_class_defaults() {
        // google/gemma-3-4b-it config.json: the text model leaves most fields
        // to Gemma3TextConfig's defaults.
        let text = r#"{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
            "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
              "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
              "sliding_window": 1024},
            "torch_dtype": "bfloat16", "vision_config": {"hidden_size": 1152}}"#;
        let c = parse_config(text, "c").unwrap();
        let s = &c.spec;
        assert_eq!(s.architecture, "gemma3_text");
        assert_eq!(
            (s.num_attention_heads, s.num_kv_heads, s.head_dim),
            (8, 4, 256)
        );
        assert_eq!((s.vocab_size, s.max_context), (262_208, Some(131_072)));
        assert!(s.tied_embeddings && s.qk_norm && s.norms_per_layer == 4);
        // 34 layers, 5 local : 1 global → 29 sliding.
        assert_eq!(
            s.sliding_window,
            Some(SlidingWindow {
                window: 1024,
                layers: 29
            })
        );
        assert_eq!(s.torch_dtype.as_deref(), Some("bf16"));
        assert!(c.warnings.iter().any(|w| w.contains("vision")));
        // The text model's parameters: keras-hub's gemma3_4b_text preset
        // counts 3,880,099,328 with a 262,144-row embedding; the Hugging Face
        // embedding has 262,208 rows (64 more for image tokens) of 2560.
        assert_eq!(s.parameters(), 3_880_099_328 + 64 * 2560);
        assert_eq!(s.vision, None);
        // With the whole vision_config (google/gemma-3-4b-it's SigLIP): the
        // tower and projector count in the Hub total, not in the plan's.
        let full = text.replace(
            r#""vision_config": {"hidden_size": 1152}"#,
            r#""vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
              "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
              "patch_size": 14, "vision_use_head": false}"#,
        );
        let (v, warnings) = parse(&full, "c").unwrap();
        assert!(
            !warnings.iter().any(|w| w.contains("vision")),
            "{warnings:?}"
        );
        assert_eq!(v.parameters(), s.parameters());
        // 678,528 patch conv + 4,718,592 positions + 27 × 15,239,504 layers
        // + 2,304 final LayerNorm; projector 1152 × 2560 + 1152.
        assert_eq!(v.vision_params(), 416_866_032 + 2_950_272);
        assert_eq!(v.hub_parameter_total(), 4_300_079_472);
        let head = full.replace(r#""vision_use_head": false"#, r#""vision_use_head": true"#);
        assert!(matches!(
            parse(&head, "c").unwrap_err(),
            ModelError::Unsupported { .. }
        ));
        let e = parse(r#"{"model_type": "gemma3"}"#, "c").unwrap_err();
        assert_eq!(field_of(e), "text_config");
        let e = parse(
            r#"{"model_type": "gemma3", "text_config": {"hidden_size": "x"}}"#,
            "c",
        )
        .unwrap_err();
        assert_eq!(field_of(e), "text_config.hidden_size");
    }

    #[test]
    fn opt_variants_we_do_not_model_are_refused() {
        let opt = r#"{"model_type": "opt", "ffn_dim": 4096, "hidden_size": 1024, "max_position_embeddings": 2048,
            "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 50272, "word_embed_proj_dim": 512,
            "do_layer_norm_before": false}"#;
        let e = parse(opt, "opt-350m/config.json").unwrap_err();
        assert!(matches!(e, ModelError::Unsupported { .. }), "{e}");
        let ok = opt.replace("512", "1024").replace("false", "true");
        let s = parse_ok(&ok);
        assert_eq!(s.learned_positions, Some(2050));
        assert!(
            s.tied_embeddings && s.mlp_bias && s.mlp == MlpKind::Plain && s.norm == NormKind::Layer
        );
    }

    #[test]
    fn mistral_window_covers_every_layer_and_null_means_none() {
        let m = r#"{"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
            "sliding_window": 4096, "vocab_size": 32000, "head_dim": null}"#;
        assert_eq!(
            parse_ok(m).sliding_window,
            Some(SlidingWindow {
                window: 4096,
                layers: 32
            })
        );
        assert_eq!(parse_ok(m).head_dim, 128);
        assert_eq!(
            parse_ok(&m.replace("\"sliding_window\": 4096", "\"sliding_window\": null"))
                .sliding_window,
            None
        );
    }
}
