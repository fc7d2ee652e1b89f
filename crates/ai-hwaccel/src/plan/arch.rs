//! A transformer's architecture ([`ModelSpec`]) and the exact accounting
//! derived from it: parameter counts (total and active per token), bytes of
//! KV cache per token, and the size of every layer.
//!
//! # Parameter formulas
//!
//! Counts follow the tensors of the Hugging Face `transformers` modelling
//! code for each family (the tensors a checkpoint stores), so that the total
//! equals the sum of a safetensors header's tensor sizes:
//!
//! - attention (MHA/GQA): `q: h·(n_h·d)`, `k, v: h·(n_kv·d)`, `o: (n_h·d)·h`,
//!   plus biases where the family has them (`q,k,v` for Qwen2, all four for OPT);
//!   q/k norms of `d` each for Qwen3 and Gemma 3.
//! - multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434 §2.1,
//!   `modeling_deepseek_v3.py`): `q_a: h·r_q`, `q_a_norm: r_q`,
//!   `q_b: r_q·n_h·(d_nope+d_rope)` (or `q: h·n_h·(d_nope+d_rope)` without a
//!   query LoRA), `kv_a: h·(r_kv+d_rope)`, `kv_a_norm: r_kv`,
//!   `kv_b: r_kv·n_h·(d_nope+d_v)`, `o: n_h·d_v·h`.
//! - gated MLP (SwiGLU/GeGLU): `3·h·i`; plain MLP (OPT): `2·h·i + i + h`.
//! - MoE layer: router `h·E` (+`E` correction bias for DeepSeek-V3), `E`
//!   experts of `3·h·i_e`, shared experts of `3·h·i_s` each (+ a `h` gate for
//!   Qwen2-MoE's shared expert).
//! - norms: `h` per RMSNorm, `2h` per LayerNorm; embeddings `V·h`; the LM
//!   head `V·h` unless tied; OPT's learned positions `P·h`.
//! - encoders (BERT, `modeling_bert.py`; the embedding models built on it):
//!   word, position (`P·h`) and token-type (`T·h`) embeddings and their
//!   LayerNorm (`2h`, counted as the final norm); per layer q/k/v/o with
//!   biases, a plain MLP with biases and two LayerNorms; a pooler
//!   `h·h + h`; no LM head.
//!
//! Active parameters per token (Mixtral's "12.9B active of 46.7B",
//! DeepSeek-V3's "37B activated") count every non-expert tensor plus `k` of
//! the `E` routed experts.
//!
//! # KV cache
//!
//! Per token and layer, standard attention caches keys and values:
//! `2 · n_kv · d` elements (GQA, Ainslie et al. 2023, arXiv:2305.13245).
//! MLA caches the compressed latent and the decoupled RoPE key:
//! `r_kv + d_rope` elements (DeepSeek-V2 paper §2.1.4, Table 1), shared by all
//! heads and so never divided by tensor parallelism. A sliding-window layer
//! keeps at most `window` tokens (Mistral 7B paper, arXiv:2310.06825 §2).
//! An encoder caches nothing: each input attends bidirectionally over itself
//! in one forward pass and nothing is kept between requests.
//! A linear-attention layer (Qwen3-Next's Gated DeltaNet) caches no tokens:
//! it holds a fixed state per sequence, a causal-convolution window of
//! `(kernel − 1) × conv_dim` and a recurrent matrix of `n_v × d_k × d_v`
//! (vLLM `MambaStateShapeCalculator.gated_delta_net_state_shape`, v0.11).

use serde::{Deserialize, Serialize};

/// The feed-forward block of a dense layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MlpKind {
    /// Gate, up and down projections (SwiGLU, GeGLU): three `h × i` matrices.
    Gated,
    /// Up and down projections with biases (OPT, GPT-2 style): two matrices.
    Plain,
}

/// The normalisation layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NormKind {
    /// RMSNorm: a weight of `h`.
    Rms,
    /// LayerNorm: a weight and a bias of `h` each.
    Layer,
    /// LayerNorm without a bias: a weight of `h` (Cohere's
    /// `CohereLayerNorm`, `bias=False`).
    LayerNoBias,
}

impl NormKind {
    fn params(self, width: u64) -> u64 {
        match self {
            NormKind::Rms | NormKind::LayerNoBias => width,
            NormKind::Layer => 2 * width,
        }
    }
}

/// Mixture-of-experts feed-forward layers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub num_experts: u32,
    /// Routed experts each token uses.
    pub experts_per_token: u32,
    /// Intermediate size of one routed expert.
    pub expert_intermediate_size: u64,
    /// Shared experts every token uses (DeepSeek, Qwen2-MoE).
    #[serde(default)]
    pub shared_experts: u32,
    /// Intermediate size of one shared expert (defaults to the routed one).
    #[serde(default)]
    pub shared_expert_intermediate_size: Option<u64>,
    /// A sigmoid gate of `h` on the shared expert's output (Qwen2-MoE).
    #[serde(default)]
    pub shared_expert_gate: bool,
    /// Leading layers that stay dense (DeepSeek `first_k_dense_replace`).
    #[serde(default)]
    pub dense_layers: u32,
    /// Every `step`-th layer is a mixture of experts — layers `step − 1`,
    /// `2·step − 1`, … — and the others are dense MLPs of
    /// `intermediate_size` (Llama 4 `interleave_moe_layer_step`: 1 for
    /// Scout, 2 for Maverick; transformers `Llama4TextConfig.moe_layers`).
    /// `None`: every layer after `dense_layers`.
    #[serde(default)]
    pub layer_step: Option<u32>,
    /// A per-expert router bias (DeepSeek-V3 `e_score_correction_bias`,
    /// gpt-oss's router `bias`).
    #[serde(default)]
    pub router_bias: bool,
    /// The routed experts' matrices are published in MXFP4 (gpt-oss,
    /// `quantization_config.quant_method = "mxfp4"`): blocks of 32 FP4
    /// (E2M1) values sharing one E8M0 scale along the input dimension (OCP
    /// Microscaling Formats v1.0, §5.3; transformers `integrations/mxfp4.py`
    /// `*_blocks`/`*_scales` tensors), [`MXFP4_BITS_PER_WEIGHT`] bits per
    /// weight. Biases stay 16-bit.
    #[serde(default)]
    pub mxfp4_experts: bool,
}

/// Values sharing one E8M0 scale in an MXFP4 block (OCP MX v1.0, §5.3).
pub const MXFP4_BLOCK: u64 = 32;

/// Bits per MXFP4 weight: 32 four-bit values plus one 8-bit scale per block,
/// `(32·4 + 8) / 32 = 4.25`.
pub const MXFP4_BITS_PER_WEIGHT: f64 = (MXFP4_BLOCK as f64 * 4.0 + 8.0) / MXFP4_BLOCK as f64;

/// Multi-head latent attention (DeepSeek-V2/V3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    /// Rank of the query compression (`None`: a plain query projection).
    pub q_lora_rank: Option<u64>,
    /// Rank of the joint key/value compression (the cached latent).
    pub kv_lora_rank: u64,
    /// Per-head query/key dimension without rotary embedding.
    pub qk_nope_head_dim: u64,
    /// Per-head dimension of the decoupled rotary key (cached once per token).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension.
    pub v_head_dim: u64,
}

/// The vision encoder family of a [`VisionTower`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VisionKind {
    /// SigLIP (`SiglipVisionModel` without its head, transformers
    /// `models/siglip/modeling_siglip.py`) with Gemma 3's projector
    /// (`Gemma3MultiModalProjector`: a `v × h` matrix after an RMSNorm of
    /// `v`, `models/gemma3/modeling_gemma3.py`).
    Siglip,
    /// Llama 4's vision encoder and projector (transformers
    /// `models/llama4/modeling_llama4.py`: `Llama4VisionModel`,
    /// `Llama4MultiModalProjector`).
    Llama4,
    /// Qwen3.5's vision transformer and patch merger (transformers 5.24
    /// `models/qwen3_5/modeling_qwen3_5.py`: `Qwen3_5VisionModel`,
    /// `Qwen3_5VisionPatchMerger`; vLLM 0.33.0 and SGLang 0.5.23 run it as
    /// `qwen3_vl.py`'s `Qwen3_VisionTransformer`), without Qwen3-VL's
    /// deepstack mergers.
    Qwen3Vl,
}

/// An image encoder and projector the checkpoint stores beside the text
/// model (Gemma 3 4B/12B/27B). The Hub's parameter total counts them; the
/// plans do not ([`ModelSpec::vision`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VisionTower {
    /// Encoder family.
    pub kind: VisionKind,
    /// Encoder width `v`.
    pub hidden_size: u64,
    /// Encoder MLP width.
    pub intermediate_size: u64,
    /// Encoder layers.
    pub num_layers: u32,
    /// Input image side in pixels (SigLIP, Llama 4); `None` for an encoder
    /// that takes images of any size (Qwen3.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_size: Option<u64>,
    /// Patch side in pixels.
    pub patch_size: u64,
    /// Image channels (3).
    pub num_channels: u64,
    /// Llama 4: output width of the pixel-shuffle MLP's first matrix
    /// (`projector_input_dim`).
    #[serde(default)]
    pub projector_input_dim: Option<u64>,
    /// Llama 4: width of its second, square matrix (`projector_output_dim`).
    #[serde(default)]
    pub projector_output_dim: Option<u64>,
    /// Llama 4: width the projector maps to the text model (`vision_output_dim`).
    #[serde(default)]
    pub vision_output_dim: Option<u64>,
    /// Qwen3.5: frames one patch spans (`temporal_patch_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal_patch_size: Option<u64>,
    /// Qwen3.5: the merger's side of patches merged into one token
    /// (`spatial_merge_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spatial_merge_size: Option<u64>,
    /// Qwen3.5: rows of the learned position table
    /// (`num_position_embeddings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_position_embeddings: Option<u64>,
}

impl VisionTower {
    /// Parameters of the encoder's layers alone (attention, MLP and their
    /// norms): what a serving runtime's tensor parallelism splits (vLLM's
    /// and SGLang's SigLIP: QKV, column- and row-parallel linears); the
    /// embeddings, final norm and projector stay whole on each rank.
    pub fn layer_params(&self) -> u64 {
        let v = self.hidden_size;
        let i = self.intermediate_size;
        u64::from(self.num_layers) * (4 * v + 4 * (v * v + v) + (v * i + i) + (i * v + v))
    }

    /// Parameters a serving runtime's tensor parallelism splits: the
    /// encoder's layers ([`Self::layer_params`]) and, for Qwen3.5, its
    /// merger's two matrices (vLLM 0.33.0 and SGLang 0.5.23 `qwen3_vl.py`:
    /// `Qwen3_VisionPatchMerger`'s `linear_fc1` column- and `linear_fc2`
    /// row-parallel); the rest stays whole on each rank.
    pub fn tp_split_params(&self, text_hidden: u64) -> u64 {
        self.layer_params()
            + match self.kind {
                VisionKind::Qwen3Vl => {
                    let (m1, m2) = self.merger_matrices(text_hidden);
                    m1 + m2
                }
                VisionKind::Siglip | VisionKind::Llama4 => 0,
            }
    }

    /// Qwen3.5's merger matrices with their biases: `fc1` on the `m²·v`
    /// channels of `m × m` merged patches, `(m²v)² + m²v`, and `fc2` to the
    /// text width, `m²v·h + h`.
    fn merger_matrices(&self, text_hidden: u64) -> (u64, u64) {
        let m = self.spatial_merge_size.unwrap_or(0);
        let merged = self.hidden_size * m * m;
        (merged * merged + merged, merged * text_hidden + text_hidden)
    }

    /// Parameters of the encoder and projector, for a text model of width
    /// `text_hidden`. SigLIP: the patch convolution `c·p²·v + v`, learned
    /// positions `(image/patch)²·v`; per layer two LayerNorms `4v`, q/k/v/o
    /// with biases `4(v² + v)`, `fc1: v·i + i`, `fc2: i·v + v`; the final
    /// LayerNorm `2v`. Gemma 3's projector: `v·h + v`.
    ///
    /// Llama 4: the unfold patch projection `c·p²·v` (no bias), a class
    /// embedding `v`, positions `((image/patch)² + 1)·v`, LayerNorms before
    /// and after the encoder `2·2v`; per layer as SigLIP's; the pixel-shuffle
    /// MLP `i·p_in + p_out·p_out` (no biases; shuffling by 0.5 turns `v`
    /// into `4v = i` channels); the projector `o·h` (no bias).
    ///
    /// Qwen3.5: the patch convolution over `t` frames `c·t·p²·v + v`, the
    /// learned positions `n·v` (`num_position_embeddings`); per layer as
    /// SigLIP's (two LayerNorms, `qkv` and `proj` with biases, `fc1`,
    /// `fc2`); the merger's LayerNorm on `v` (`use_postshuffle_norm` off)
    /// `2v` and its two matrices ([`Self::tp_split_params`]). The rotary
    /// table is a buffer, not stored.
    pub fn params(&self, text_hidden: u64) -> u64 {
        let v = self.hidden_size;
        let i = self.intermediate_size;
        let patches = (self.image_size.unwrap_or(0) / self.patch_size).pow(2);
        let conv = self.num_channels * self.patch_size * self.patch_size * v;
        let layer = 4 * v + 4 * (v * v + v) + (v * i + i) + (i * v + v);
        let layers = u64::from(self.num_layers) * layer;
        match self.kind {
            VisionKind::Qwen3Vl => {
                let t = self.temporal_patch_size.unwrap_or(0);
                let (m1, m2) = self.merger_matrices(text_hidden);
                conv * t
                    + v
                    + self.num_position_embeddings.unwrap_or(0) * v
                    + layers
                    + 2 * v
                    + m1
                    + m2
            }
            VisionKind::Siglip => conv + v + patches * v + layers + 2 * v + v * text_hidden + v,
            VisionKind::Llama4 => {
                let p_in = self.projector_input_dim.unwrap_or(0);
                let p_out = self.projector_output_dim.unwrap_or(0);
                let out = self.vision_output_dim.unwrap_or(0);
                conv + v
                    + (patches + 1) * v
                    + 4 * v
                    + layers
                    + i * p_in
                    + p_out * p_out
                    + out * text_hidden
            }
        }
    }
}

/// Local attention over a window of recent tokens on some layers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindow {
    /// Tokens a sliding layer attends to (and caches).
    pub window: u64,
    /// How many layers use the window; the rest attend globally.
    pub layers: u32,
}

/// Linear-attention layers interleaved with full attention (Qwen3-Next:
/// Gated DeltaNet, Yang et al. 2024, arXiv:2412.06464; transformers
/// `Qwen3NextGatedDeltaNet`). Every `full_attention_interval`-th layer
/// attends fully; the others are linear.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinearAttention {
    /// Key (and query) heads.
    pub num_key_heads: u32,
    /// Value heads.
    pub num_value_heads: u32,
    /// Per-head key dimension.
    pub key_head_dim: u64,
    /// Per-head value dimension.
    pub value_head_dim: u64,
    /// Width of the causal depthwise convolution over q, k and v.
    pub conv_kernel: u64,
    /// Layer `i` attends fully when `(i + 1) % interval == 0`.
    pub full_attention_interval: u32,
    /// The recurrent state's dtype the checkpoint's config asks for
    /// (`mamba_ssm_dtype`: Qwen3.5's `float32`, read as `fp32`); absent:
    /// the model's width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssm_state_dtype: Option<String>,
}

impl LinearAttention {
    /// Convolution-window elements one sequence holds in one linear layer:
    /// `(kernel − 1) · conv_dim`.
    pub fn conv_state_elements(&self) -> u64 {
        self.conv_kernel.saturating_sub(1) * self.conv_dim()
    }

    /// Recurrent-state elements one sequence holds in one linear layer:
    /// `n_v · d_k · d_v`.
    pub fn ssm_state_elements(&self) -> u64 {
        u64::from(self.num_value_heads) * self.key_head_dim * self.value_head_dim
    }

    fn key_dim(&self) -> u64 {
        u64::from(self.num_key_heads) * self.key_head_dim
    }

    fn value_dim(&self) -> u64 {
        u64::from(self.num_value_heads) * self.value_head_dim
    }

    /// Channels the convolution runs over: q, k and v.
    fn conv_dim(&self) -> u64 {
        2 * self.key_dim() + self.value_dim()
    }

    /// Parameters of the q, k and v part of `in_proj_qkvz`, the one matrix
    /// a GGUF stores as `attn_qkv` (llama.cpp's qwen3next and qwen35
    /// converters split off the z gate as `attn_gate`): `h · conv_dim`.
    pub fn qkv_params(&self, h: u64) -> u64 {
        h * self.conv_dim()
    }

    /// Parameters of the block that a GGUF keeps in F32 whatever the
    /// mix (llama.cpp's converters and `llama-quantize` leave 1-D and
    /// small tensors unquantized): the convolution (`ssm_conv1d`,
    /// `conv_dim · kernel`), `A_log` and `dt_bias` (`ssm_a`, `ssm_dt`,
    /// `n_v` each) and the gated norm (`ssm_norm`, `d_v`).
    pub fn gguf_f32_params(&self) -> u64 {
        self.conv_dim() * self.conv_kernel
            + 2 * u64::from(self.num_value_heads)
            + self.value_head_dim
    }

    /// Parameters of one linear-attention block (transformers
    /// `Qwen3NextGatedDeltaNet`): `in_proj_qkvz: h·(2·key_dim + 2·value_dim)`,
    /// `in_proj_ba: h·2·n_v`, `conv1d: conv_dim·kernel` (no bias),
    /// `dt_bias`, `A_log: n_v` each, the gated norm `d_v`,
    /// `out_proj: value_dim·h`.
    fn params(&self, h: u64) -> u64 {
        let nv = u64::from(self.num_value_heads);
        h * (2 * self.key_dim() + 2 * self.value_dim())
            + h * 2 * nv
            + self.conv_dim() * self.conv_kernel
            + 2 * nv
            + self.value_head_dim
            + self.value_dim() * h
    }

    /// State elements one sequence holds in one linear layer:
    /// the convolution window `(kernel − 1) · conv_dim` and the recurrent
    /// state `n_v · d_k · d_v`.
    pub fn state_elements(&self) -> u64 {
        self.conv_state_elements() + self.ssm_state_elements()
    }
}

/// A decoder-only transformer's architecture: everything memory and
/// throughput depend on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Display name (catalog id, or the file it was read from).
    #[serde(default)]
    pub name: String,
    /// Architecture family (`llama`, `qwen2`, `deepseek_v3`, … the Hugging
    /// Face `model_type`; `generic` for a bare size).
    pub architecture: String,
    /// True when the architecture is a guess from a bare size, not real.
    #[serde(default)]
    pub approximate: bool,
    /// Decoder layers.
    pub num_layers: u32,
    /// Model width `h`.
    pub hidden_size: u64,
    /// Intermediate size of a dense MLP.
    pub intermediate_size: u64,
    /// Query heads.
    pub num_attention_heads: u32,
    /// Key/value heads (equal to the query heads for MHA, 1 for MQA).
    pub num_kv_heads: u32,
    /// Per-head dimension (not always `h / heads`: Gemma, Qwen3).
    pub head_dim: u64,
    /// Vocabulary size (rows of the embedding).
    pub vocab_size: u64,
    /// Whether the LM head shares the embedding matrix.
    #[serde(default)]
    pub tied_embeddings: bool,
    /// Feed-forward kind.
    #[serde(default = "default_mlp")]
    pub mlp: MlpKind,
    /// Normalisation kind.
    #[serde(default = "default_norm")]
    pub norm: NormKind,
    /// Norm layers per decoder layer (2; 4 for Gemma 2/3's sandwich norms;
    /// 1 for Cohere's parallel block, whose attention and MLP read the same
    /// normed input).
    #[serde(default = "default_norms_per_layer")]
    pub norms_per_layer: u32,
    /// Per-head RMSNorm on queries and keys (Qwen3, Gemma 3).
    #[serde(default)]
    pub qk_norm: bool,
    /// The q/k norms hold one weight vector per head instead of one shared
    /// by all heads (Cohere's `use_qk_norm`, Command R+: transformers
    /// `CohereLayerNorm((num_heads, head_dim))` without bias): `n_h·d + n_kv·d`
    /// parameters per layer, not `2·d`. Only with [`Self::qk_norm`].
    #[serde(default)]
    pub qk_norm_per_head: bool,
    /// Biases on the q/k/v projections.
    #[serde(default)]
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    #[serde(default)]
    pub attention_output_bias: bool,
    /// A learned sink logit per attention head (gpt-oss `self_attn.sinks`,
    /// transformers `GptOssAttention`): `n_h` parameters per layer.
    #[serde(default)]
    pub attention_sinks: bool,
    /// The query projection also yields a per-head output gate
    /// (Qwen3-Next `Qwen3NextAttention`: `q_proj` is `h × 2·n_h·d`).
    #[serde(default)]
    pub attention_output_gate: bool,
    /// Biases on the MLP projections.
    #[serde(default)]
    pub mlp_bias: bool,
    /// Rows of a learned position embedding table (OPT, BERT), if any.
    #[serde(default)]
    pub learned_positions: Option<u64>,
    /// A bidirectional encoder (BERT and the embedding models built on it:
    /// `BertModel`), or a decoder run as an embedding model (Qwen3-Embedding,
    /// causal attention pooled on the last token): it outputs hidden states,
    /// not tokens — no LM head, no KV cache, no decode step; an input is
    /// encoded in one forward pass.
    #[serde(default)]
    pub encoder: bool,
    /// Rows of a token-type (segment) embedding (BERT `type_vocab_size`).
    #[serde(default)]
    pub token_types: Option<u64>,
    /// A pooler on the first token: a dense `h × h` layer with a bias
    /// (`BertPooler`, which `BertModel` builds by default).
    #[serde(default)]
    pub pooler: bool,
    /// An image encoder and projector the checkpoint stores beside the
    /// text model: counted by [`Self::hub_parameter_total`], not by
    /// [`Self::parameters`] — the plans are the text model's, as llama.cpp
    /// runs it (the vision tower is a separate `--mmproj` file there).
    #[serde(default)]
    pub vision: Option<VisionTower>,
    /// Mixture of experts, if any.
    #[serde(default)]
    pub moe: Option<Moe>,
    /// Multi-head latent attention, if used.
    #[serde(default)]
    pub mla: Option<Mla>,
    /// Sliding-window attention, if used.
    #[serde(default)]
    pub sliding_window: Option<SlidingWindow>,
    /// Linear-attention layers, if used.
    #[serde(default)]
    pub linear_attention: Option<LinearAttention>,
    /// Longest context the model is configured for.
    #[serde(default)]
    pub max_context: Option<u64>,
    /// Data type the weights were published in (`bf16`, `fp16`, `fp32`).
    #[serde(default)]
    pub torch_dtype: Option<String>,
    /// The checkpoint keeps its attention projections at 16 bits while its
    /// other matrices are quantized (a `quantization_config` whose list of
    /// unquantized modules names attention, as DeepSeek-R1-FP4's does): a
    /// plan at a quantized level counts them at 16 bits.
    #[serde(default)]
    pub attention_unquantized: bool,
    /// Projections of single layers the checkpoint keeps at 16 bits while
    /// the rest is quantized (a `quantization_config`'s list of modules not
    /// to convert, as Unsloth's dynamic 4-bit checkpoints keep a few
    /// layers' MLPs): a plan at a quantized level counts them at 16 bits.
    /// Attention covered by [`Self::attention_unquantized`] is not repeated
    /// here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unquantized_layers: Vec<UnquantizedLayer>,
    /// Weights per scale of the checkpoint's integer quantization (GPTQ's
    /// and AWQ's `group_size`; 0 for one scale per output row, their
    /// `-1`): the int4 level's bytes follow it ([`Self::level_bits`]).
    /// Unset: groups of 128, those formats' default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant_group_size: Option<u32>,
    /// Whether the int4 checkpoint stores a zero point per group: GPTQ and
    /// AWQ always pack one (4 bits, `qzeros`), compressed-tensors only for
    /// asymmetric weights (`symmetric: false`). Unset: stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant_zero_points: Option<bool>,
    /// The checkpoint quantizes activations to MXFP4 too (W4A4: an AMD
    /// Quark export whose weights and `input_tensors` are both `fp4` in
    /// groups of 32 with E8M0 scales), so a runtime with FP4 GEMMs for it
    /// multiplies in FP4 ([`crate::plan::speed::mxfp4_activations_run_fp4`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub activations_mxfp4: bool,
    /// GGUF levels are made with an importance matrix
    /// (`llama-quantize --imatrix`): a GGUF file whose metadata names one
    /// (`quantize.imatrix.file`), or a plan's
    /// [`crate::plan::InferenceOptions::gguf_imatrix`]. It changes the
    /// mixes of IQ4_NL, IQ4_XS, Q4_0 and Q5_0
    /// ([`crate::plan::quant::GgufMix`]); the levels that need one are
    /// planned with one either way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gguf_imatrix: bool,
    /// The image encoder of a multimodal checkpoint (a `vision_config`
    /// beside a `…ForConditionalGeneration` architecture), as serving
    /// runtimes size their memory by it: not counted in the plans' weights
    /// (see [`Self::vision`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multimodal_encoder: Option<MultimodalEncoder>,
}

/// The image encoder's shape as SGLang reads it to lower its default
/// memory fraction (0.5.23 `arg_groups/memory_hook.py`,
/// `adjust_mem_fraction_for_vlm`: the `vision_config`'s
/// `num_hidden_layers`, default 24, and `hidden_size`, default 1024;
/// transformers 5 names Qwen-VL's `depth` `num_hidden_layers` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultimodalEncoder {
    /// Encoder layers.
    pub layers: u32,
    /// Encoder width.
    pub hidden_size: u64,
}

/// One layer's projections a quantized checkpoint keeps at 16 bits
/// ([`ModelSpec::unquantized_layers`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnquantizedLayer {
    /// The layer's index.
    pub layer: u32,
    /// Its projections kept at 16 bits.
    pub parts: Vec<Projection>,
}

/// A projection of a layer, as quantizers and runtimes name it
/// (`self_attn.q_proj`, `mlp.down_proj`, `mlp.experts.N.up_proj`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Projection {
    /// The query projection: half of [`LayerParams::attention_sharded`].
    Q,
    /// The key projection: half of [`LayerParams::attention_kv`].
    K,
    /// The value projection: the other half.
    V,
    /// The output projection: the other half of the sharded attention.
    O,
    /// The whole of a multi-head latent attention (its projections are
    /// not of the q/k/v/o shape).
    Attention,
    /// The MLP's (or shared experts') gate projection.
    Gate,
    /// The MLP's up projection.
    Up,
    /// The MLP's down projection.
    Down,
    /// Every routed expert's gate projection.
    ExpertGate,
    /// Every routed expert's up projection.
    ExpertUp,
    /// Every routed expert's down projection.
    ExpertDown,
}

/// Parameters of one layer's projections kept at 16 bits, in the groups
/// tensor parallelism splits differently.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UnquantizedParams {
    /// Of [`LayerParams::attention_sharded`].
    pub attention_sharded: f64,
    /// Of [`LayerParams::attention_kv`].
    pub attention_kv: f64,
    /// Of [`LayerParams::attention_replicated`] (a whole MLA).
    pub attention_replicated: f64,
    /// Of [`LayerParams::mlp`].
    pub mlp: f64,
    /// Of [`LayerParams::experts`].
    pub experts: f64,
}

fn default_mlp() -> MlpKind {
    MlpKind::Gated
}

fn default_norm() -> NormKind {
    NormKind::Rms
}

fn default_norms_per_layer() -> u32 {
    2
}

/// What kind of attention a layer has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// Attends to the whole context.
    Global,
    /// Attends to the sliding window.
    Sliding,
    /// Linear attention with a fixed-size state (no KV cache).
    Linear,
}

/// Parameters of one decoder layer, split the way sharding treats them.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LayerParams {
    /// Attention projections that tensor parallelism splits by heads.
    pub attention_sharded: u64,
    /// Key/value projections (split by KV heads, replicated beyond them).
    pub attention_kv: u64,
    /// Attention tensors every tensor-parallel rank holds whole (MLA's
    /// down-projections and their norms, biases of row-parallel outputs).
    pub attention_replicated: u64,
    /// Dense MLP or shared experts (split by tensor parallelism).
    pub mlp: u64,
    /// All routed experts (split by tensor or expert parallelism).
    pub experts: u64,
    /// Routed experts one token uses.
    pub experts_active: u64,
    /// Norms, router and other replicated tensors.
    pub replicated: u64,
}

impl LayerParams {
    /// Every parameter of the layer.
    pub fn total(&self) -> u64 {
        self.attention_sharded
            + self.attention_kv
            + self.attention_replicated
            + self.mlp
            + self.experts
            + self.replicated
    }

    /// Parameters one token uses.
    pub fn active(&self) -> u64 {
        self.total() - self.experts + self.experts_active
    }

    /// Parameters in matrices a weight quantizer converts: the attention
    /// projections (MLA's down-projections included) and the MLPs and
    /// experts; norms and routers stay 16-bit. Biases and the small MLA
    /// norms count with their projections (under 0.01% of them).
    pub fn quantizable(&self) -> u64 {
        self.total() - self.replicated
    }
}

/// One layer as `ai-hwaccel model` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerInfo {
    /// Layer index.
    pub index: u32,
    /// Attention kind.
    pub attention: AttentionKind,
    /// Whether the feed-forward block is a mixture of experts.
    pub moe: bool,
    /// Parameters.
    pub parameters: u64,
    /// Parameters one token uses.
    pub active_parameters: u64,
    /// KV cache elements per token (multiply by the KV dtype's bytes).
    pub kv_elements_per_token: u64,
}

/// An architecture that cannot be used, with the field at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid model architecture: {field}: {reason}")]
pub struct ArchError {
    /// The offending field (`num_kv_heads`).
    pub field: &'static str,
    /// Why.
    pub reason: String,
}

fn arch_err(field: &'static str, reason: impl Into<String>) -> ArchError {
    ArchError {
        field,
        reason: reason.into(),
    }
}

/// Largest values accepted, far above any real model; they keep products
/// of fields well inside `u64`.
const MAX_DIM: u64 = 1 << 24;
const MAX_LAYERS: u32 = 10_000;
/// Largest width of a vision tower's layers and projector accepted.
const VISION_MAX_DIM: u64 = 1 << 20;
const MAX_VOCAB: u64 = 1 << 24;
const MAX_EXPERTS: u32 = 1 << 16;

impl ModelSpec {
    /// Check that the fields describe a usable model (non-zero dimensions,
    /// KV heads dividing query heads, experts per token within experts,
    /// sizes bounded), naming the field at fault.
    pub fn validate(&self) -> Result<(), ArchError> {
        let dim = |field: &'static str, v: u64| {
            if v == 0 || v > MAX_DIM {
                Err(arch_err(field, format!("{v} is outside 1..={MAX_DIM}")))
            } else {
                Ok(())
            }
        };
        if self.num_layers == 0 || self.num_layers > MAX_LAYERS {
            return Err(arch_err(
                "num_layers",
                format!("{} is outside 1..={MAX_LAYERS}", self.num_layers),
            ));
        }
        dim("hidden_size", self.hidden_size)?;
        dim("intermediate_size", self.intermediate_size)?;
        dim("head_dim", self.head_dim)?;
        dim("num_attention_heads", u64::from(self.num_attention_heads))?;
        dim("num_kv_heads", u64::from(self.num_kv_heads))?;
        if self.vocab_size == 0 || self.vocab_size > MAX_VOCAB {
            return Err(arch_err(
                "vocab_size",
                format!("{} is outside 1..={MAX_VOCAB}", self.vocab_size),
            ));
        }
        if self.num_attention_heads % self.num_kv_heads != 0 {
            return Err(arch_err(
                "num_kv_heads",
                format!(
                    "{} does not divide num_attention_heads {}",
                    self.num_kv_heads, self.num_attention_heads
                ),
            ));
        }
        if self.qk_norm_per_head && !self.qk_norm {
            return Err(arch_err("qk_norm_per_head", "set without qk_norm"));
        }
        if self.norms_per_layer > 8 {
            return Err(arch_err("norms_per_layer", "more than 8"));
        }
        if let Some(p) = self.learned_positions {
            dim("learned_positions", p)?;
        }
        if let Some(t) = self.token_types {
            dim("token_types", t)?;
        }
        if let Some(v) = &self.vision {
            // Bounds that keep the tower's parameter arithmetic within u64
            // (each term below 2^48; real towers: widths of 1152-1408,
            // 14-16 pixel patches, 27-34 layers).
            let within = |field: &'static str, x: u64, max: u64| {
                if x == 0 || x > max {
                    Err(arch_err(field, format!("{x} is outside 1..={max}")))
                } else {
                    Ok(())
                }
            };
            let need = |field: &'static str, x: Option<u64>, max: u64| match x {
                Some(x) => within(field, x, max),
                None => Err(arch_err(
                    field,
                    format!("missing: a {:?} tower needs it", v.kind),
                )),
            };
            within("vision.hidden_size", v.hidden_size, VISION_MAX_DIM)?;
            within(
                "vision.intermediate_size",
                v.intermediate_size,
                VISION_MAX_DIM,
            )?;
            within(
                "vision.num_layers",
                u64::from(v.num_layers),
                u64::from(MAX_LAYERS),
            )?;
            within("vision.patch_size", v.patch_size, 1024)?;
            within("vision.num_channels", v.num_channels, 16)?;
            for (field, x) in [
                ("vision.projector_input_dim", v.projector_input_dim),
                ("vision.projector_output_dim", v.projector_output_dim),
                ("vision.vision_output_dim", v.vision_output_dim),
            ] {
                if let Some(x) = x {
                    within(field, x, VISION_MAX_DIM)?;
                }
            }
            match v.kind {
                VisionKind::Siglip | VisionKind::Llama4 => {
                    need("vision.image_size", v.image_size, MAX_DIM)?;
                    let side = v.image_size.unwrap_or(0) / v.patch_size;
                    if side == 0 || side > 4096 {
                        return Err(arch_err(
                            "vision.image_size",
                            format!(
                                "{} patches a side (image {} / patch {}) is outside 1..=4096",
                                side,
                                v.image_size.unwrap_or(0),
                                v.patch_size
                            ),
                        ));
                    }
                }
                VisionKind::Qwen3Vl => {
                    need("vision.temporal_patch_size", v.temporal_patch_size, 16)?;
                    need("vision.spatial_merge_size", v.spatial_merge_size, 64)?;
                    need(
                        "vision.num_position_embeddings",
                        v.num_position_embeddings,
                        MAX_DIM,
                    )?;
                    let m = v.spatial_merge_size.unwrap_or(0);
                    within(
                        "vision.spatial_merge_size",
                        v.hidden_size * m * m,
                        VISION_MAX_DIM,
                    )?;
                }
            }
        }
        if self.encoder
            && (self.moe.is_some()
                || self.mla.is_some()
                || self.sliding_window.is_some()
                || self.linear_attention.is_some())
        {
            return Err(arch_err(
                "encoder",
                "an encoder with experts, latent, sliding or linear attention is not modelled",
            ));
        }
        if let Some(m) = &self.moe {
            if m.num_experts == 0 || m.num_experts > MAX_EXPERTS {
                return Err(arch_err(
                    "moe.num_experts",
                    format!("{} is outside 1..={MAX_EXPERTS}", m.num_experts),
                ));
            }
            if m.experts_per_token == 0 || m.experts_per_token > m.num_experts {
                return Err(arch_err(
                    "moe.experts_per_token",
                    format!(
                        "{} is outside 1..={} (num_experts)",
                        m.experts_per_token, m.num_experts
                    ),
                ));
            }
            dim("moe.expert_intermediate_size", m.expert_intermediate_size)?;
            if let Some(s) = m.shared_expert_intermediate_size {
                dim("moe.shared_expert_intermediate_size", s)?;
            }
            if m.shared_experts > 64 {
                return Err(arch_err("moe.shared_experts", "more than 64"));
            }
            if m.dense_layers > self.num_layers {
                return Err(arch_err("moe.dense_layers", "more than num_layers"));
            }
            if m.layer_step.is_some_and(|k| k == 0 || k > self.num_layers) {
                return Err(arch_err("moe.layer_step", "outside 1..=num_layers"));
            }
        }
        if let Some(m) = &self.mla {
            if let Some(r) = m.q_lora_rank {
                dim("mla.q_lora_rank", r)?;
            }
            dim("mla.kv_lora_rank", m.kv_lora_rank)?;
            dim("mla.qk_nope_head_dim", m.qk_nope_head_dim)?;
            dim("mla.qk_rope_head_dim", m.qk_rope_head_dim)?;
            dim("mla.v_head_dim", m.v_head_dim)?;
        }
        if let Some(l) = &self.linear_attention {
            dim("linear_attention.num_key_heads", u64::from(l.num_key_heads))?;
            dim(
                "linear_attention.num_value_heads",
                u64::from(l.num_value_heads),
            )?;
            dim("linear_attention.key_head_dim", l.key_head_dim)?;
            dim("linear_attention.value_head_dim", l.value_head_dim)?;
            if l.conv_kernel > 64 {
                return Err(arch_err("linear_attention.conv_kernel", "more than 64"));
            }
            if l.full_attention_interval == 0 || l.full_attention_interval > self.num_layers {
                return Err(arch_err(
                    "linear_attention.full_attention_interval",
                    format!("{} is outside 1..=num_layers", l.full_attention_interval),
                ));
            }
            if self.sliding_window.is_some() {
                return Err(arch_err(
                    "linear_attention",
                    "linear attention with sliding windows is not modelled",
                ));
            }
        }
        if let Some(w) = &self.sliding_window {
            if w.window == 0 {
                return Err(arch_err("sliding_window.window", "zero"));
            }
            if w.layers > self.num_layers {
                return Err(arch_err("sliding_window.layers", "more than num_layers"));
            }
        }
        Ok(())
    }

    /// Whether layer `i` feeds a mixture of experts.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        self.moe.as_ref().is_some_and(|m| {
            i >= m.dense_layers && m.layer_step.is_none_or(|k| (i + 1) % k.max(1) == 0)
        })
    }

    /// The attention of layer `i`. Sliding layers are spread as the families
    /// that use them place them: all layers when every layer slides (Mistral
    /// v0.1), otherwise every group of `L / global` layers ends in a global
    /// one (Gemma 2: alternate; Gemma 3: five local, one global).
    pub fn attention_kind(&self, i: u32) -> AttentionKind {
        if let Some(l) = &self.linear_attention {
            return if (i + 1) % l.full_attention_interval.max(1) == 0 {
                AttentionKind::Global
            } else {
                AttentionKind::Linear
            };
        }
        let Some(w) = &self.sliding_window else {
            return AttentionKind::Global;
        };
        let global = self.num_layers - w.layers;
        if global == 0 {
            return AttentionKind::Sliding;
        }
        // Layer i is global when it closes a group of `period` layers, for
        // the first `global` groups.
        let period = self.num_layers / global;
        let n = i + 1;
        if n % period == 0 && n / period <= global {
            AttentionKind::Global
        } else {
            AttentionKind::Sliding
        }
    }

    /// Parameters of layer `i`.
    pub fn layer_params(&self, i: u32) -> LayerParams {
        let h = self.hidden_size;
        let heads = u64::from(self.num_attention_heads);
        let kv = u64::from(self.num_kv_heads);
        let d = self.head_dim;
        let mut p = LayerParams::default();

        let linear = self
            .linear_attention
            .as_ref()
            .filter(|_| self.attention_kind(i) == AttentionKind::Linear);
        match (&self.mla, linear) {
            (_, Some(l)) => {
                // Split by heads under tensor parallelism, like attention.
                p.attention_sharded += l.params(h);
            }
            (Some(m), None) => {
                let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
                match m.q_lora_rank {
                    Some(r) => {
                        p.attention_replicated += h * r + r; // q_a_proj + q_a_layernorm
                        p.attention_sharded += r * heads * qk; // q_b_proj
                    }
                    None => p.attention_sharded += h * heads * qk,
                }
                // kv_a_proj_with_mqa + kv_a_layernorm
                p.attention_replicated +=
                    h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank;
                p.attention_sharded += m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim);
                p.attention_sharded += heads * m.v_head_dim * h; // o_proj
            }
            (None, None) => {
                p.attention_sharded += h * heads * d + heads * d * h; // q, o
                if self.attention_output_gate {
                    p.attention_sharded += h * heads * d; // the gate half of q_proj
                }
                p.attention_kv += 2 * h * kv * d; // k, v
                if self.qkv_bias {
                    p.attention_sharded += heads * d;
                    p.attention_kv += 2 * kv * d;
                }
                if self.qk_norm && self.qk_norm_per_head {
                    // One vector per head: split with the heads they norm.
                    p.attention_sharded += heads * d;
                    p.attention_kv += kv * d;
                } else if self.qk_norm {
                    p.replicated += 2 * d;
                }
            }
        }
        if self.attention_output_bias && linear.is_none() {
            p.attention_replicated += h;
        }
        if self.attention_sinks && linear.is_none() {
            p.attention_sharded += heads;
        }

        let mlp = |inter: u64| -> u64 {
            match self.mlp {
                MlpKind::Gated => 3 * h * inter + if self.mlp_bias { 2 * inter + h } else { 0 },
                MlpKind::Plain => 2 * h * inter + if self.mlp_bias { inter + h } else { 0 },
            }
        };
        match (&self.moe, self.is_moe_layer(i)) {
            (Some(m), true) => {
                let e = u64::from(m.num_experts);
                let per_expert = mlp(m.expert_intermediate_size);
                p.experts = e * per_expert;
                p.experts_active = u64::from(m.experts_per_token) * per_expert;
                let shared_inter = m
                    .shared_expert_intermediate_size
                    .unwrap_or(m.expert_intermediate_size);
                p.mlp = u64::from(m.shared_experts) * mlp(shared_inter);
                p.replicated += h * e; // router
                if m.router_bias {
                    p.replicated += e;
                }
                if m.shared_expert_gate {
                    p.replicated += h;
                }
            }
            _ => p.mlp = mlp(self.intermediate_size),
        }
        p.replicated += u64::from(self.norms_per_layer) * self.norm.params(h);
        p
    }

    /// Bits per weight of `q` as this checkpoint stores it: the int4
    /// level's 16-bit scale and 4-bit zero point (AutoGPTQ/AutoAWQ
    /// packing; no zero point where [`Self::quant_zero_points`] says so)
    /// per [`Self::quant_group_size`] weights — `4 + 20/32` = 4.625 for
    /// groups of 32, `4 + 16/32` = 4.5 symmetric, `4 + 20/h` for one per
    /// row of `h` inputs (the hidden size; the down projection's longer
    /// rows make it slightly less) — and
    /// [`crate::plan::Quant::bits_per_weight`] otherwise.
    pub fn level_bits(&self, q: crate::plan::Quant) -> f64 {
        if q != crate::plan::Quant::Int4
            || (self.quant_group_size.is_none() && self.quant_zero_points.is_none())
        {
            return q.bits_per_weight();
        }
        let g = match self.quant_group_size {
            Some(0) => self.hidden_size.max(1) as f64,
            Some(g) => f64::from(g),
            None => 128.0,
        };
        let per_group = if self.quant_zero_points == Some(false) {
            16.0
        } else {
            20.0
        };
        4.0 + per_group / g
    }

    /// Parameters of layer `i` that [`Self::unquantized_layers`] keeps at
    /// 16 bits. The q and o projections are each half of the sharded
    /// attention and k and v each half of the KV projections (q and o are
    /// both `h × heads·d`, k and v both `h × kv_heads·d`); a gated MLP's
    /// gate, up and down are each a third of it (all `h × intermediate`),
    /// an ungated one's up and down each a half. Biases go with their
    /// projections, as [`LayerParams`] counts them.
    ///
    /// One lookup; a loop over every layer takes
    /// [`Self::unquantized_by_layer`] once and [`Self::projection_params`].
    pub fn unquantized_params(&self, i: u32) -> UnquantizedParams {
        match self.unquantized_layers.iter().find(|l| l.layer == i) {
            Some(l) => self.projection_params(&self.layer_params(i), &l.parts),
            None => UnquantizedParams::default(),
        }
    }

    /// [`Self::unquantized_layers`] indexed by layer (an empty slice for a
    /// layer with none), built once for loops over every layer; entries
    /// past the last layer are ignored.
    pub fn unquantized_by_layer(&self) -> Vec<&[Projection]> {
        let mut v: Vec<&[Projection]> = vec![&[]; self.num_layers as usize];
        for l in &self.unquantized_layers {
            if let Some(slot) = v.get_mut(l.layer as usize) {
                *slot = &l.parts;
            }
        }
        v
    }

    /// The parameters of `parts` in a layer of parameters `p` (the shares
    /// [`Self::unquantized_params`] describes).
    pub fn projection_params(&self, p: &LayerParams, parts: &[Projection]) -> UnquantizedParams {
        let mut u = UnquantizedParams::default();
        if parts.is_empty() {
            return u;
        }
        let mlp_share = if self.mlp == MlpKind::Gated { 3.0 } else { 2.0 };
        for part in parts {
            match part {
                Projection::Q | Projection::O => {
                    u.attention_sharded += p.attention_sharded as f64 / 2.0
                }
                Projection::K | Projection::V => u.attention_kv += p.attention_kv as f64 / 2.0,
                Projection::Attention => {
                    u.attention_sharded = p.attention_sharded as f64;
                    u.attention_kv = p.attention_kv as f64;
                    u.attention_replicated = p.attention_replicated as f64;
                }
                Projection::Gate | Projection::Up | Projection::Down => {
                    u.mlp += p.mlp as f64 / mlp_share
                }
                Projection::ExpertGate | Projection::ExpertUp | Projection::ExpertDown => {
                    u.experts += p.experts as f64 / mlp_share
                }
            }
        }
        u.attention_sharded = u.attention_sharded.min(p.attention_sharded as f64);
        u.attention_kv = u.attention_kv.min(p.attention_kv as f64);
        u.mlp = u.mlp.min(p.mlp as f64);
        u.experts = u.experts.min(p.experts as f64);
        u
    }

    /// Parameters outside the decoder layers: embeddings, learned
    /// positions, final norm, LM head.
    pub fn embedding_params(&self) -> u64 {
        self.vocab_size * self.hidden_size
    }

    /// The LM head's parameters (0 when tied to the embedding, and for an
    /// encoder, which has none).
    pub fn lm_head_params(&self) -> u64 {
        if self.tied_embeddings || self.encoder {
            0
        } else {
            self.vocab_size * self.hidden_size
        }
    }

    /// Rows of the embedding tables beside the vocabulary that the first
    /// stage holds: learned positions and token types.
    pub fn extra_embedding_rows(&self) -> u64 {
        self.learned_positions.unwrap_or(0) + self.token_types.unwrap_or(0)
    }

    /// The pooler's parameters (`h·h + h`; 0 without one).
    pub fn pooler_params(&self) -> u64 {
        if self.pooler {
            self.hidden_size * self.hidden_size + self.hidden_size
        } else {
            0
        }
    }

    /// Learned positions, token types, the final norm (BERT: the
    /// embeddings' LayerNorm) and the pooler.
    pub fn other_params(&self) -> u64 {
        self.extra_embedding_rows() * self.hidden_size
            + self.norm.params(self.hidden_size)
            + self.pooler_params()
    }

    /// Every parameter.
    pub fn parameters(&self) -> u64 {
        (0..self.num_layers)
            .map(|i| self.layer_params(i).total())
            .sum::<u64>()
            + self.embedding_params()
            + self.lm_head_params()
            + self.other_params()
    }

    /// E8M0 scales stored beside MXFP4 expert matrices ([`Moe::mxfp4_experts`]):
    /// one per [`MXFP4_BLOCK`] weights along each matrix's input dimension
    /// (gate/up: `h` in, down: `i` in). 0 for other models.
    pub fn mxfp4_scale_elements(&self) -> u64 {
        let Some(m) = self.moe.as_ref().filter(|m| m.mxfp4_experts) else {
            return 0;
        };
        let h = self.hidden_size;
        let i = m.expert_intermediate_size;
        let rows_per_expert: u64 = match self.mlp {
            // gate and up (i rows of h inputs each), down (h rows of i inputs)
            MlpKind::Gated => 2 * i * h.div_ceil(MXFP4_BLOCK) + h * i.div_ceil(MXFP4_BLOCK),
            MlpKind::Plain => i * h.div_ceil(MXFP4_BLOCK) + h * i.div_ceil(MXFP4_BLOCK),
        };
        let moe_layers = (0..self.num_layers)
            .filter(|&l| self.is_moe_layer(l))
            .count() as u64;
        moe_layers * u64::from(m.num_experts) * rows_per_expert
    }

    /// The total the Hugging Face Hub reports for the published checkpoint
    /// (`safetensors.total`): every parameter, the vision tower, plus the MXFP4 scales, which
    /// the Hub counts as elements too (openai/gpt-oss-20b: 21,511,953,984 =
    /// 20,914,757,184 parameters + 597,196,800 scales).
    pub fn hub_parameter_total(&self) -> u64 {
        self.parameters() + self.mxfp4_scale_elements() + self.vision_params()
    }

    /// Parameters of the stored vision tower and projector
    /// ([`Self::vision`]); 0 without one.
    pub fn vision_params(&self) -> u64 {
        self.vision
            .as_ref()
            .map_or(0, |v| v.params(self.hidden_size))
    }

    /// Parameters one token uses (all but the unused routed experts).
    pub fn active_parameters(&self) -> u64 {
        (0..self.num_layers)
            .map(|i| self.layer_params(i).active())
            .sum::<u64>()
            + self.embedding_params()
            + self.lm_head_params()
            + self.other_params()
    }

    /// KV cache elements one token adds to a (non-linear) layer; 0 for an
    /// encoder, which keeps nothing between forward passes.
    pub fn kv_elements_per_token_layer(&self) -> u64 {
        if self.encoder {
            return 0;
        }
        match &self.mla {
            Some(m) => m.kv_lora_rank + m.qk_rope_head_dim,
            None => 2 * u64::from(self.num_kv_heads) * self.head_dim,
        }
    }

    /// Layers with linear attention (no KV cache).
    pub fn linear_layers(&self) -> u32 {
        (0..self.num_layers)
            .filter(|&i| self.attention_kind(i) == AttentionKind::Linear)
            .count() as u32
    }

    /// KV cache bytes per token over all layers at `bytes_per_element`
    /// (2 for a 16-bit cache), ignoring sliding windows (the cost of a token
    /// while the context is within the window); linear layers cache none.
    pub fn kv_cache_bytes_per_token(&self, bytes_per_element: f64) -> u64 {
        let layers = self.num_layers - self.linear_layers();
        let elems = self.kv_elements_per_token_layer() * u64::from(layers);
        (elems as f64 * bytes_per_element).ceil() as u64
    }

    /// Fixed state elements one sequence holds over all linear-attention
    /// layers ([`LinearAttention::state_elements`]); 0 without them.
    pub fn linear_state_elements_per_sequence(&self) -> u64 {
        self.linear_attention
            .as_ref()
            .map_or(0, |l| l.state_elements() * u64::from(self.linear_layers()))
    }

    /// Parameters of one multi-token-prediction module as Qwen3-Next's
    /// checkpoint stores it (`mtp.*`, loaded by vLLM's
    /// `model_executor/models/qwen3_next_mtp.py`): norms of the embedding and
    /// of the hidden state, a `2h → h` projection, one decoder layer with
    /// full attention and a final norm. Not part of [`Self::parameters`]:
    /// plain decoding never runs it.
    pub fn mtp_module_params(&self) -> u64 {
        let h = self.hidden_size;
        let layer = (0..self.num_layers)
            .find(|&i| self.attention_kind(i) == AttentionKind::Global && self.is_moe_layer(i))
            .or_else(|| {
                (0..self.num_layers).find(|&i| self.attention_kind(i) == AttentionKind::Global)
            })
            .unwrap_or(0);
        self.layer_params(layer).total() + 2 * h * h + 3 * self.norm.params(h)
    }

    /// KV cache elements held for one sequence of `context` tokens in layer
    /// `i` (sliding layers hold at most the window).
    pub fn kv_elements_layer(&self, i: u32, context: u64) -> u64 {
        let tokens = match (self.attention_kind(i), &self.sliding_window) {
            (AttentionKind::Linear, _) => 0,
            (AttentionKind::Sliding, Some(w)) => context.min(w.window),
            _ => context,
        };
        tokens.saturating_mul(self.kv_elements_per_token_layer())
    }

    /// KV cache bytes for `batch` sequences of `context` tokens.
    pub fn kv_cache_bytes(&self, context: u64, batch: u64, bytes_per_element: f64) -> u64 {
        let elems: u64 = (0..self.num_layers)
            .map(|i| self.kv_elements_layer(i, context))
            .fold(0u64, u64::saturating_add);
        (elems as f64 * batch as f64 * bytes_per_element).ceil() as u64
    }

    /// Every layer, for display.
    pub fn layers(&self) -> Vec<LayerInfo> {
        (0..self.num_layers)
            .map(|i| {
                let p = self.layer_params(i);
                LayerInfo {
                    index: i,
                    attention: self.attention_kind(i),
                    moe: self.is_moe_layer(i),
                    parameters: p.total(),
                    active_parameters: p.active(),
                    kv_elements_per_token: if self.attention_kind(i) == AttentionKind::Linear {
                        0
                    } else {
                        self.kv_elements_per_token_layer()
                    },
                }
            })
            .collect()
    }

    /// The dimension one attention "group" has for tensor-parallel checks:
    /// query heads must divide by the degree; KV heads must divide by it, or
    /// the degree must be a multiple of them (each rank then holds a copy).
    pub fn tensor_parallel_legal(&self, degree: u32) -> Result<(), String> {
        if degree == 0 {
            return Err("tensor-parallel degree 0".into());
        }
        if self.num_attention_heads % degree != 0 {
            return Err(format!(
                "{} attention heads do not divide by tensor-parallel degree {degree}",
                self.num_attention_heads
            ));
        }
        if self.mla.is_none() && self.num_kv_heads % degree != 0 && degree % self.num_kv_heads != 0
        {
            return Err(format!(
                "{} KV heads neither divide by tensor-parallel degree {degree} nor divide it",
                self.num_kv_heads
            ));
        }
        Ok(())
    }

    /// KV heads one tensor-parallel rank holds at `degree` (replicated once
    /// the degree exceeds their count).
    pub fn kv_heads_per_rank(&self, degree: u32) -> u32 {
        (self.num_kv_heads / degree.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama2_7b() -> ModelSpec {
        ModelSpec {
            name: "llama-2-7b".into(),
            architecture: "llama".into(),
            approximate: false,
            num_layers: 32,
            hidden_size: 4096,
            intermediate_size: 11008,
            num_attention_heads: 32,
            num_kv_heads: 32,
            head_dim: 128,
            vocab_size: 32000,
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
            max_context: Some(4096),
            torch_dtype: Some("fp16".into()),
            attention_unquantized: false,
            unquantized_layers: Vec::new(),
            quant_group_size: None,
            quant_zero_points: None,
            activations_mxfp4: false,
            gguf_imatrix: false,
            multimodal_encoder: None,
        }
    }

    #[test]
    fn llama2_7b_matches_published_count() {
        // meta-llama/Llama-2-7b-hf safetensors total.
        assert_eq!(llama2_7b().parameters(), 6_738_415_616);
        assert_eq!(llama2_7b().active_parameters(), 6_738_415_616);
        // 2 × 32 layers × 32 heads × 128 × 2 bytes = 512 KiB per token.
        assert_eq!(llama2_7b().kv_cache_bytes_per_token(2.0), 524_288);
    }

    #[test]
    fn sliding_layer_placement() {
        let mut m = llama2_7b();
        m.num_layers = 6;
        m.sliding_window = Some(SlidingWindow {
            window: 8,
            layers: 5,
        });
        let kinds: Vec<_> = (0..6).map(|i| m.attention_kind(i)).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == AttentionKind::Sliding)
                .count(),
            5
        );
        assert_eq!(kinds[5], AttentionKind::Global);
        m.num_layers = 26; // Gemma 3 1B: 26 layers, 5:1 local/global → 22 sliding
        m.sliding_window = Some(SlidingWindow {
            window: 512,
            layers: 22,
        });
        let sliding = (0..26)
            .filter(|&i| m.attention_kind(i) == AttentionKind::Sliding)
            .count();
        assert_eq!(sliding, 22);
        for i in [5, 11, 17, 23] {
            assert_eq!(m.attention_kind(i), AttentionKind::Global, "layer {i}");
        }
        m.num_layers = 42; // Gemma 2 9B: alternate
        m.sliding_window = Some(SlidingWindow {
            window: 4096,
            layers: 21,
        });
        assert_eq!(m.attention_kind(0), AttentionKind::Sliding);
        assert_eq!(m.attention_kind(1), AttentionKind::Global);
        assert_eq!(
            (0..42)
                .filter(|&i| m.attention_kind(i) == AttentionKind::Sliding)
                .count(),
            21
        );
    }

    #[test]
    fn validation_names_the_field() {
        let mut m = llama2_7b();
        m.num_kv_heads = 3;
        assert_eq!(m.validate().unwrap_err().field, "num_kv_heads");
        let mut m = llama2_7b();
        m.hidden_size = 0;
        assert_eq!(m.validate().unwrap_err().field, "hidden_size");
        assert!(llama2_7b().validate().is_ok());
    }

    #[test]
    fn tensor_parallel_legality() {
        let mut m = llama2_7b();
        m.num_kv_heads = 8;
        assert!(m.tensor_parallel_legal(8).is_ok());
        assert!(m.tensor_parallel_legal(16).is_ok()); // KV heads replicated
        assert!(m.tensor_parallel_legal(3).is_err());
        assert!(m.tensor_parallel_legal(0).is_err());
        assert_eq!(m.kv_heads_per_rank(16), 1);
        assert_eq!(m.kv_heads_per_rank(4), 2);
    }
}
