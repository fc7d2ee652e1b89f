//! Weight quantization levels and KV-cache data types: their bits per
//! weight (including the scales and zero points of group-quantized formats)
//! and what a device must run natively to use them.

use serde::{Deserialize, Serialize};

use crate::spec::Dtype;

/// A weight format for the projection and expert matrices. Embeddings, the
/// LM head, norms and routers stay 16-bit (32-bit for `fp32`), as GPTQ, AWQ,
/// bitsandbytes and vLLM's fp8 path leave them.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Quant {
    /// IEEE single precision.
    Fp32,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    Fp16,
    /// 8-bit float (E4M3) weights and activations, per-tensor scales.
    Fp8,
    /// 8-bit integer weights and activations (SmoothQuant-style W8A8).
    Int8,
    /// GGUF Q8_0 (weight-only).
    Q8_0,
    /// GGUF Q6_K (weight-only).
    Q6K,
    /// GGUF Q5_K (weight-only): llama.cpp's Q5_K_M mix.
    Q5K,
    /// GGUF Q5_K_S: Q5_K everywhere but the Q6_K head.
    Q5KS,
    /// 4-bit integer weights in groups of 128 with fp16 scales and 4-bit
    /// zero points (GPTQ, AWQ), weight-only.
    Int4,
    /// GGUF Q4_K (weight-only): llama.cpp's Q4_K_M mix.
    Q4K,
    /// GGUF Q4_K_S: Q4_K with the first attn_v and ffn_down tensors at Q5_K.
    Q4KS,
    /// GGUF Q5_1 (weight-only): llama.cpp's legacy 5-bit type with a
    /// minimum per block of 32.
    Q5_1,
    /// GGUF Q5_0 (weight-only): legacy 5-bit, blocks of 32.
    Q5_0,
    /// GGUF Q4_1 (weight-only): legacy 4-bit with a minimum per block of 32.
    Q4_1,
    /// GGUF Q4_0 (weight-only).
    Q4_0,
    /// GGUF IQ4_NL: 4-bit non-linear, blocks of 32 (weight-only).
    Iq4Nl,
    /// NVFP4 (NVIDIA ModelOpt `quant_algo: NVFP4`): E2M1 weights and
    /// activations, one FP8 E4M3 scale per 16 values and one FP32 scale per
    /// tensor; runs natively where the device has FP4 matrix units
    /// (Blackwell).
    Nvfp4,
    /// GGUF IQ4_XS: 4-bit non-linear, super-blocks of 256 (weight-only).
    Iq4Xs,
    /// MXFP4 (OCP Microscaling): E2M1 weights, one E8M0 scale per 32
    /// values, dequantized to 16 bits for the matrix multiply (weight-only).
    Mxfp4,
    /// 4-bit NormalFloat with double-quantized constants (QLoRA), weight-only.
    Nf4,
    /// GGUF Q3_K_L: Q3_K with attn_v, attn_output and ffn_down at Q5_K.
    Q3KL,
    /// GGUF Q3_K (weight-only): llama.cpp's Q3_K_M mix.
    Q3K,
    /// GGUF Q3_K_S: Q3_K everywhere but the Q6_K head.
    Q3KS,
    /// GGUF Q2_K (weight-only).
    Q2K,
    /// GGUF Q2_K_S: Q2_K with fewer raised tensors (attn_v at Q4_K only
    /// with grouped-query attention of 4 or more, the first eighth of
    /// ffn_down at Q4_K; llama-quant.cpp `LLAMA_FTYPE_MOSTLY_Q2_K_S`).
    Q2KS,
    /// GGUF IQ3_M: IQ3_S with attn_v, attn_output and the first eighth of
    /// ffn_down at Q4_K (llama-quantize's "IQ3_S mix").
    Iq3M,
    /// GGUF IQ3_S: 3.4375-bit i-quant, super-blocks of 256.
    Iq3S,
    /// GGUF IQ3_XS: IQ3_S with attn_q, attn_k and the middle ffn_gate and
    /// ffn_up at IQ3_XXS.
    Iq3Xs,
    /// GGUF IQ3_XXS: 3.0625-bit i-quant (made with an importance matrix).
    Iq3Xxs,
    /// GGUF IQ2_M: IQ2_S weights (made with an importance matrix).
    Iq2M,
    /// GGUF IQ2_S: IQ2_XS weights with IQ3_S where IQ2_M has them (made
    /// with an importance matrix).
    Iq2S,
    /// GGUF IQ2_XS: 2.3125-bit i-quant (made with an importance matrix).
    Iq2Xs,
    /// GGUF IQ2_XXS: 2.0625-bit i-quant (made with an importance matrix).
    Iq2Xxs,
    /// GGUF IQ1_M: 1.75-bit i-quant (made with an importance matrix).
    Iq1M,
    /// GGUF IQ1_S: 1.5625-bit i-quant (made with an importance matrix).
    Iq1S,
}

impl Quant {
    /// Every level, highest fidelity first (the order `suggest` tries):
    /// by bits per weight, so a format with more bits (block scales
    /// included) counts as the higher fidelity.
    /// Mixes of one base type follow their per-tensor extras (M before S).
    pub const ALL: [Quant; 36] = [
        Quant::Fp32,
        Quant::Bf16,
        Quant::Fp16,
        Quant::Q8_0,
        Quant::Fp8,
        Quant::Int8,
        Quant::Q6K,
        Quant::Q5_1,
        Quant::Q5K,
        Quant::Q5KS,
        Quant::Q5_0,
        Quant::Q4_1,
        Quant::Q4K,
        Quant::Q4KS,
        Quant::Q4_0,
        Quant::Iq4Nl,
        Quant::Nvfp4,
        Quant::Iq4Xs,
        Quant::Mxfp4,
        Quant::Int4,
        Quant::Nf4,
        Quant::Q3KL,
        Quant::Q3K,
        Quant::Q3KS,
        Quant::Iq3M,
        Quant::Iq3S,
        Quant::Iq3Xs,
        Quant::Iq3Xxs,
        Quant::Q2K,
        Quant::Q2KS,
        Quant::Iq2M,
        Quant::Iq2S,
        Quant::Iq2Xs,
        Quant::Iq2Xxs,
        Quant::Iq1M,
        Quant::Iq1S,
    ];

    /// The CLI / JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Quant::Fp32 => "fp32",
            Quant::Bf16 => "bf16",
            Quant::Fp16 => "fp16",
            Quant::Fp8 => "fp8",
            Quant::Int8 => "int8",
            Quant::Q8_0 => "q8_0",
            Quant::Q6K => "q6_k",
            Quant::Q5K => "q5_k",
            Quant::Q5KS => "q5_k_s",
            Quant::Int4 => "int4",
            Quant::Q4K => "q4_k",
            Quant::Q4KS => "q4_k_s",
            Quant::Q5_1 => "q5_1",
            Quant::Q5_0 => "q5_0",
            Quant::Q4_1 => "q4_1",
            Quant::Q4_0 => "q4_0",
            Quant::Iq4Nl => "iq4_nl",
            Quant::Nvfp4 => "nvfp4",
            Quant::Iq4Xs => "iq4_xs",
            Quant::Mxfp4 => "mxfp4",
            Quant::Nf4 => "nf4",
            Quant::Q3KL => "q3_k_l",
            Quant::Q3K => "q3_k",
            Quant::Q3KS => "q3_k_s",
            Quant::Q2K => "q2_k",
            Quant::Q2KS => "q2_k_s",
            Quant::Iq3M => "iq3_m",
            Quant::Iq3S => "iq3_s",
            Quant::Iq3Xs => "iq3_xs",
            Quant::Iq3Xxs => "iq3_xxs",
            Quant::Iq2M => "iq2_m",
            Quant::Iq2S => "iq2_s",
            Quant::Iq2Xs => "iq2_xs",
            Quant::Iq2Xxs => "iq2_xxs",
            Quant::Iq1M => "iq1_m",
            Quant::Iq1S => "iq1_s",
        }
    }

    /// Parse a spelling (case-insensitive; `float16`, `half`, `e4m3`,
    /// `gptq`, `awq`, `q4_k_m` and similar accepted; `modelopt_fp4`, vLLM's
    /// method name for NVFP4 checkpoints; `mxfp4_moe`, llama.cpp's file type
    /// for MXFP4 experts).
    pub fn parse(s: &str) -> Option<Quant> {
        let s = s.trim().to_ascii_lowercase().replace('-', "_");
        Some(match s.as_str() {
            "fp32" | "f32" | "float32" => Quant::Fp32,
            "bf16" | "bfloat16" => Quant::Bf16,
            "fp16" | "f16" | "float16" | "half" => Quant::Fp16,
            "fp8" | "f8" | "e4m3" | "fp8_e4m3" | "f8_e4m3" => Quant::Fp8,
            "int8" | "i8" | "w8a8" => Quant::Int8,
            "q8_0" | "q8" => Quant::Q8_0,
            "q6_k" => Quant::Q6K,
            "q5_k" | "q5_k_m" => Quant::Q5K,
            "q5_k_s" => Quant::Q5KS,
            // TensorRT-LLM and ModelOpt spell AWQ's 4-bit weights
            // `int4_awq` / "INT4 AWQ" and `w4a16_awq`.
            "int4" | "i4" | "gptq" | "awq" | "w4a16" | "int4_awq" | "int4 awq" | "w4a16_awq" => {
                Quant::Int4
            }
            "q4_k" | "q4_k_m" => Quant::Q4K,
            "q4_k_s" => Quant::Q4KS,
            "q4_0" => Quant::Q4_0,
            "q4_1" => Quant::Q4_1,
            "q5_0" => Quant::Q5_0,
            "q5_1" => Quant::Q5_1,
            "iq4_nl" => Quant::Iq4Nl,
            "iq4_xs" => Quant::Iq4Xs,
            "nvfp4" | "modelopt_fp4" => Quant::Nvfp4,
            "mxfp4" | "mxfp4_moe" => Quant::Mxfp4,
            "nf4" | "bnb4" => Quant::Nf4,
            "q3_k_l" => Quant::Q3KL,
            "q3_k" | "q3_k_m" => Quant::Q3K,
            "q3_k_s" => Quant::Q3KS,
            // `Q2_K_M`: llama-bench's "Q2_K - Medium" as llama.cpp PR tables
            // print it (e.g. ggml-org/llama.cpp PR 7921).
            "q2_k" | "q2_k_m" => Quant::Q2K,
            "q2_k_s" => Quant::Q2KS,
            "iq3_m" => Quant::Iq3M,
            "iq3_s" => Quant::Iq3S,
            "iq3_xs" => Quant::Iq3Xs,
            "iq3_xxs" => Quant::Iq3Xxs,
            "iq2_m" => Quant::Iq2M,
            "iq2_s" => Quant::Iq2S,
            "iq2_xs" => Quant::Iq2Xs,
            "iq2_xxs" => Quant::Iq2Xxs,
            "iq1_m" => Quant::Iq1M,
            "iq1_s" => Quant::Iq1S,
            _ => return None,
        })
    }

    /// Bits one quantized weight occupies, scales and zero points included.
    ///
    /// - fp8/int8: one byte; per-tensor or per-channel scales are below 0.1%,
    ///   and so are the block scales of block-quantized FP8 (DeepSeek-V3's
    ///   `weight_block_size: [128, 128]`: one FP32 `weight_scale_inv` per
    ///   128×128 block, `32 / 16384` = 0.002 bits, 0.024 % more), which is
    ///   this level too (vLLM and SGLang load both as `fp8`).
    /// - nvfp4: 4-bit E2M1 values plus one FP8 E4M3 scale per 16 values,
    ///   `4 + 8/16` = 4.5 (NVIDIA, "Introducing NVFP4 for Efficient and
    ///   Accurate Low-Precision Inference", 2025-06-24,
    ///   <https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/>:
    ///   16-value micro-blocks, an E4M3 scale each and an FP32 scale per
    ///   tensor, and the footprint it gives, "3.5x" below FP16 and "1.8x"
    ///   below FP8, is 16/4.5 and 8/4.5 rounded; the same in llama.cpp's
    ///   `block_nvfp4`, 4 E4M3 scales and 32 bytes of E2M1 per 64 values,
    ///   36 B/64). The per-tensor FP32 scales (`weight_scale_2`,
    ///   `input_scale`) are a few bytes per matrix.
    /// - mxfp4: 4-bit E2M1 values plus one E8M0 scale per 32,
    ///   `4 + 8/32` = 4.25 (OCP Microscaling Formats (MX) v1.0 §5.3,
    ///   <https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf>;
    ///   llama.cpp's `block_mxfp4`, 17 B/32): [`super::arch::MXFP4_BITS_PER_WEIGHT`].
    /// - int4 (GPTQ/AWQ, group 128): 4 bits + an fp16 scale and a 4-bit zero
    ///   point per group: `4 + (16 + 4) / 128` (AutoGPTQ/AutoAWQ packing).
    /// - nf4 with double quantization (QLoRA, Dettmers et al. 2023,
    ///   arXiv:2305.14314 §3): `4 + 8/64 + 32/(64·256)`.
    /// - GGUF types: bytes per block over weights per block, from ggml's block
    ///   structs (`ggml-common.h`): Q8_0 34 B/32, Q6_K 210 B/256, Q5_K
    ///   176 B/256, Q4_K 144 B/256, Q4_0 18 B/32, Q3_K 110 B/256, Q2_K 84 B/256,
    ///   IQ4_NL 18 B/32, IQ4_XS 136 B/256, IQ3_S 110 B/256, IQ3_XXS
    ///   98 B/256, IQ2_S 82 B/256, IQ2_XS 74 B/256, IQ2_XXS 66 B/256,
    ///   IQ1_M 56 B/256, IQ1_S 50 B/256, and the legacy Q4_1 20 B/32,
    ///   Q5_0 22 B/32, Q5_1 24 B/32 (two or one fp16 per block, the fifth
    ///   bits in 4 bytes). A mix's figure is its base type's, the type
    ///   `llama_ftype_get_default_type` gives its file type (IQ3_XS and
    ///   IQ3_M are IQ3_S, IQ2_S is IQ2_XS, IQ2_M is IQ2_S); the per-tensor
    ///   extras are [`GgufMix`]'s.
    pub fn bits_per_weight(self) -> f64 {
        match self {
            Quant::Fp32 => 32.0,
            Quant::Bf16 | Quant::Fp16 => 16.0,
            Quant::Fp8 | Quant::Int8 => 8.0,
            Quant::Q8_0 => 34.0 * 8.0 / 32.0,
            Quant::Q6K => 210.0 * 8.0 / 256.0,
            Quant::Q5K | Quant::Q5KS => 176.0 * 8.0 / 256.0,
            Quant::Int4 => 4.0 + (16.0 + 4.0) / 128.0,
            Quant::Q4K | Quant::Q4KS => 144.0 * 8.0 / 256.0,
            Quant::Q4_0 | Quant::Iq4Nl => 18.0 * 8.0 / 32.0,
            Quant::Q4_1 => 20.0 * 8.0 / 32.0,
            Quant::Q5_0 => 22.0 * 8.0 / 32.0,
            Quant::Q5_1 => 24.0 * 8.0 / 32.0,
            Quant::Iq4Xs => 136.0 * 8.0 / 256.0,
            Quant::Nvfp4 => 4.0 + 8.0 / 16.0,
            Quant::Mxfp4 => super::arch::MXFP4_BITS_PER_WEIGHT,
            Quant::Nf4 => 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0),
            Quant::Q3KL | Quant::Q3K | Quant::Q3KS => 110.0 * 8.0 / 256.0,
            Quant::Q2K | Quant::Q2KS => 84.0 * 8.0 / 256.0,
            Quant::Iq3M | Quant::Iq3S | Quant::Iq3Xs => 110.0 * 8.0 / 256.0,
            Quant::Iq3Xxs => 98.0 * 8.0 / 256.0,
            Quant::Iq2M => 82.0 * 8.0 / 256.0,
            Quant::Iq2S | Quant::Iq2Xs => 74.0 * 8.0 / 256.0,
            Quant::Iq2Xxs => 66.0 * 8.0 / 256.0,
            Quant::Iq1M => 56.0 * 8.0 / 256.0,
            Quant::Iq1S => 50.0 * 8.0 / 256.0,
        }
    }

    /// Whether this is a GGUF (llama.cpp) block format.
    pub fn is_gguf(self) -> bool {
        matches!(
            self,
            Quant::Q8_0
                | Quant::Q6K
                | Quant::Q5K
                | Quant::Q5KS
                | Quant::Q4K
                | Quant::Q4KS
                | Quant::Q5_1
                | Quant::Q5_0
                | Quant::Q4_1
                | Quant::Q4_0
                | Quant::Iq4Nl
                | Quant::Iq4Xs
                | Quant::Q3KL
                | Quant::Q3K
                | Quant::Q3KS
                | Quant::Q2K
                | Quant::Q2KS
                | Quant::Iq3M
                | Quant::Iq3S
                | Quant::Iq3Xs
                | Quant::Iq3Xxs
                | Quant::Iq2M
                | Quant::Iq2S
                | Quant::Iq2Xs
                | Quant::Iq2Xxs
                | Quant::Iq1M
                | Quant::Iq1S
        )
    }

    /// The GGUF i-quant levels below IQ4 (IQ3_M down to IQ1_S).
    pub fn low_bit_i_quant(self) -> bool {
        matches!(
            self,
            Quant::Iq3M
                | Quant::Iq3S
                | Quant::Iq3Xs
                | Quant::Iq3Xxs
                | Quant::Iq2M
                | Quant::Iq2S
                | Quant::Iq2Xs
                | Quant::Iq2Xxs
                | Quant::Iq1M
                | Quant::Iq1S
        )
    }

    /// The GGUF levels below IQ4 that llama.cpp calls very low-bit: their
    /// main types need an importance matrix (`llama-quant.cpp`
    /// `tensor_requires_imatrix`: IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_M,
    /// IQ1_S; IQ3_XS holds IQ3_XXS tensors), so every such file was made
    /// with one, and the type rules take their with-imatrix branches.
    pub fn needs_imatrix(self) -> bool {
        matches!(
            self,
            Quant::Iq3Xs
                | Quant::Iq3Xxs
                | Quant::Iq2M
                | Quant::Iq2S
                | Quant::Iq2Xs
                | Quant::Iq2Xxs
                | Quant::Iq1M
                | Quant::Iq1S
        )
    }

    /// Bytes per element of the tensors that stay unquantized (embeddings,
    /// LM head, norms, routers).
    pub fn unquantized_bytes(self) -> f64 {
        if self == Quant::Fp32 { 4.0 } else { 2.0 }
    }

    /// Whether only weights are quantized (dequantized to 16-bit for the
    /// matrix multiply) rather than weights and activations. NVFP4 as
    /// ModelOpt exports it quantizes the activations too (W4A4, the
    /// checkpoint's `input_activations` at 4 bits in groups of 16).
    pub fn weight_only(self) -> bool {
        !matches!(
            self,
            Quant::Fp32 | Quant::Bf16 | Quant::Fp16 | Quant::Fp8 | Quant::Int8 | Quant::Nvfp4
        )
    }

    /// The data type the matrix multiplies run in, for peak-rate lookups.
    /// Weight-only formats compute in `half` (the model's 16-bit type).
    pub fn compute_dtype(self, half: Dtype) -> Dtype {
        match self {
            Quant::Fp32 => Dtype::Fp32,
            Quant::Bf16 => Dtype::Bf16,
            Quant::Fp16 => Dtype::Fp16,
            Quant::Fp8 => Dtype::Fp8,
            Quant::Int8 => Dtype::Int8,
            Quant::Nvfp4 => Dtype::Fp4,
            _ => half,
        }
    }

    /// Whether a device executing `native` types runs this level: fp8 and
    /// int8 need native fp8/int8 matrix units (e.g. no fp8 before NVIDIA
    /// compute capability 8.9 or AMD gfx942), nvfp4 FP4 ones (the spec
    /// entries with an fp4 rate: Blackwell; the inference planner also
    /// requires them to be NVIDIA's, `inference::runs`); bf16 and fp16 need their type;
    /// weight-only formats (mxfp4 among them) need fp16 or bf16 to compute
    /// in. fp32 runs everywhere. (vLLM also runs FP8 and NVFP4 checkpoints
    /// weight-only through its Marlin kernels on NVIDIA GPUs from compute
    /// capability 7.5; the inference planner allows that under the vLLM
    /// rule, `inference::marlin`.)
    pub fn supported_by(self, native: &[Dtype]) -> bool {
        match self {
            Quant::Fp32 => true,
            Quant::Bf16 => native.contains(&Dtype::Bf16),
            Quant::Fp16 => native.contains(&Dtype::Fp16),
            Quant::Fp8 => native.contains(&Dtype::Fp8),
            Quant::Int8 => native.contains(&Dtype::Int8),
            Quant::Nvfp4 => native.contains(&Dtype::Fp4),
            _ => native.contains(&Dtype::Fp16) || native.contains(&Dtype::Bf16),
        }
    }
}

impl std::fmt::Display for Quant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The data type of the KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// 32-bit.
    Fp32,
    /// bfloat16.
    Bf16,
    /// IEEE half.
    Fp16,
    /// 8-bit float (vLLM `kv_cache_dtype=fp8`).
    Fp8,
    /// 8-bit integer.
    Int8,
}

impl KvDtype {
    /// Bytes per cached element.
    pub fn bytes(self) -> f64 {
        match self {
            KvDtype::Fp32 => 4.0,
            KvDtype::Bf16 | KvDtype::Fp16 => 2.0,
            KvDtype::Fp8 | KvDtype::Int8 => 1.0,
        }
    }

    /// Parse a spelling.
    pub fn parse(s: &str) -> Option<KvDtype> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "f32" | "float32" => KvDtype::Fp32,
            "bf16" | "bfloat16" => KvDtype::Bf16,
            "fp16" | "f16" | "float16" | "half" => KvDtype::Fp16,
            "fp8" | "fp8_e4m3" | "fp8_e5m2" | "e4m3" => KvDtype::Fp8,
            "int8" | "i8" => KvDtype::Int8,
            _ => return None,
        })
    }

    /// The CLI / JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KvDtype::Fp32 => "fp32",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Int8 => "int8",
        }
    }

    /// Whether a device executing `native` types can hold this cache. fp8
    /// caches are stored as bytes and upcast in the attention kernel, so any
    /// device with a 16-bit type can use them.
    pub fn supported_by(self, native: &[Dtype]) -> bool {
        match self {
            KvDtype::Fp32 => true,
            KvDtype::Bf16 => native.contains(&Dtype::Bf16),
            KvDtype::Fp16 => native.contains(&Dtype::Fp16),
            KvDtype::Fp8 | KvDtype::Int8 => {
                native.contains(&Dtype::Fp16) || native.contains(&Dtype::Bf16)
            }
        }
    }
}

impl std::fmt::Display for KvDtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for q in Quant::ALL {
            assert_eq!(Quant::parse(q.as_str()), Some(q));
        }
        assert_eq!(Quant::parse("Q4_K_M"), Some(Quant::Q4K));
        assert_eq!(Quant::parse("GPTQ"), Some(Quant::Int4));
        assert_eq!(Quant::parse("INT4 AWQ"), Some(Quant::Int4));
        assert_eq!(Quant::parse("int4_awq"), Some(Quant::Int4));
        assert_eq!(Quant::parse("W4A16-AWQ"), Some(Quant::Int4));
        assert_eq!(Quant::parse("Q2_K_M"), Some(Quant::Q2K));
        assert_eq!(Quant::parse("bfloat16"), Some(Quant::Bf16));
        assert_eq!(Quant::parse("q9"), None);
        assert_eq!(Quant::parse("NVFP4"), Some(Quant::Nvfp4));
        assert_eq!(Quant::parse("modelopt_fp4"), Some(Quant::Nvfp4));
        assert_eq!(Quant::parse("MXFP4_MOE"), Some(Quant::Mxfp4));
        // "fp4" alone names neither block format.
        assert_eq!(Quant::parse("fp4"), None);
        assert_eq!(KvDtype::parse("fp8_e5m2"), Some(KvDtype::Fp8));
    }

    #[test]
    fn bits_include_group_overheads() {
        assert_eq!(Quant::Int4.bits_per_weight(), 4.15625);
        assert_eq!(Quant::Q4K.bits_per_weight(), 4.5);
        assert_eq!(Quant::Q8_0.bits_per_weight(), 8.5);
        assert!((Quant::Nf4.bits_per_weight() - 4.127).abs() < 1e-3);
        // NVFP4: 16 E2M1 values (64 bits) + one E4M3 scale (8 bits) = 72
        // bits per 16; llama.cpp's block_nvfp4 is 36 bytes per 64 values.
        assert_eq!(Quant::Nvfp4.bits_per_weight(), 72.0 / 16.0);
        assert_eq!(Quant::Nvfp4.bits_per_weight(), 36.0 * 8.0 / 64.0);
        // MXFP4: 32 E2M1 values + one E8M0 scale = 136 bits per 32; llama.cpp's
        // block_mxfp4 is 17 bytes per 32 values.
        assert_eq!(Quant::Mxfp4.bits_per_weight(), 136.0 / 32.0);
        assert_eq!(Quant::Mxfp4.bits_per_weight(), 17.0 * 8.0 / 32.0);
        // Fidelity order: bits never increase down the list.
        assert!(
            Quant::ALL
                .windows(2)
                .all(|w| w[0].bits_per_weight() >= w[1].bits_per_weight())
        );
    }

    #[test]
    fn native_support() {
        let hopper = [
            Dtype::Fp64,
            Dtype::Fp32,
            Dtype::Tf32,
            Dtype::Bf16,
            Dtype::Fp16,
            Dtype::Fp8,
            Dtype::Int8,
        ];
        let volta = [Dtype::Fp64, Dtype::Fp32, Dtype::Fp16, Dtype::Int8];
        assert!(Quant::Fp8.supported_by(&hopper));
        assert!(!Quant::Fp8.supported_by(&volta));
        assert!(!Quant::Bf16.supported_by(&volta));
        assert!(Quant::Int4.supported_by(&volta));
        assert!(Quant::Fp32.supported_by(&[]));
        assert!(!Quant::Int4.supported_by(&[Dtype::Fp32]));
        // NVFP4 needs FP4 matrix units (Blackwell); MXFP4 is dequantized.
        let blackwell = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp8, Dtype::Fp4];
        assert!(Quant::Nvfp4.supported_by(&blackwell));
        assert!(!Quant::Nvfp4.supported_by(&hopper));
        assert!(Quant::Mxfp4.supported_by(&hopper));
        assert!(Quant::Mxfp4.supported_by(&volta));
        assert_eq!(Quant::Nvfp4.compute_dtype(Dtype::Bf16), Dtype::Fp4);
        assert_eq!(Quant::Mxfp4.compute_dtype(Dtype::Bf16), Dtype::Bf16);
        assert!(!Quant::Nvfp4.weight_only() && Quant::Mxfp4.weight_only());
        assert!(!Quant::Nvfp4.is_gguf() && !Quant::Mxfp4.is_gguf());
    }
}

/// How llama.cpp stores a model quantized to a GGUF level: the per-tensor
/// type rules of `llama_tensor_get_type_impl` (`src/llama-quant.cpp`; read
/// in the llama.cpp vendored by llama-cpp-python 0.3.36, the version the
/// emitted flags are pinned to; the same rules since 2024) for the mixes
/// `llama-quantize` names by these levels (`Q4_K` is its `Q4_K_M`, `Q5_K`
/// `Q5_K_M`, `Q3_K` `Q3_K_M`). The levels of [`Quant::needs_imatrix`] are
/// as made with an importance matrix (the only way llama-quantize makes
/// them); the others as made without one unless the model says otherwise
/// ([`GgufFacts::imatrix`]). The base type is
/// `llama_ftype_get_default_type`'s ([`Quant::bits_per_weight`]).
///
/// - `output.weight` is Q6_K (Q8_0 in a Q8_0 model, Q5_K in IQ3_XXS, IQ2
///   and IQ1 models); a model with tied embeddings (no `output.weight`)
///   stores `token_embd` by that rule, else `token_embd` keeps the base
///   type but in IQ2_XXS, IQ2_XS and IQ1 models (Q2_K) and IQ2_S, IQ2_M
///   and IQ3_XXS models (IQ3_S);
/// - the very-low-bit mixes (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M)
///   have rules of their own: `attn_v` Q4_K where n_head/n_head_kv ≥ 4 or
///   with 4 or more experts, else IQ3_S (IQ2_S/M) or Q2_K; `attn_k` Q4_K
///   with exactly 8 experts; `ffn_down` IQ3_S (IQ2_S/M) or Q2_K while
///   fewer than an eighth of the layer count of `ffn_down` tensors came
///   before it (llama.cpp counts them in layer order: a layer with shared
///   experts holds two, [`GgufFacts::low_bit_down_layers`]);
///   `attn_output` Q5_K with exactly 8 experts, else IQ2_XXS (IQ1) or
///   IQ3_S (IQ2_S/M); everything else the base type;
/// - `attn_v`: Q2_K → Q4_K when n_head/n_head_kv ≥ 4 else Q3_K; Q2_K_S →
///   Q4_K when ≥ 4; IQ3_XXS → Q4_K when ≥ 4; IQ3_XS and IQ3_S → Q4_K when
///   ≥ 4; IQ3_M → Q4_K; IQ4_NL/XS → Q5_K when ≥ 4; Q3_K_M → Q5_K in the
///   first two layers then Q4_K; Q3_K_L → Q5_K; Q4_K_M/Q5_K_M → Q6_K where
///   `use_more_bits(i, n)`; Q4_K_S → Q5_K in the first four layers; then,
///   in a model llama.cpp types as 70B (80 layers of llama with grouped KV
///   heads, qwen2, olmo or deci), Q3_K or Q4_K becomes Q5_K, and with
///   exactly 8 experts everything is Q8_0;
/// - `attn_k`: Q8_0 with exactly 8 experts; else IQ3_XXS in IQ3_XS models
///   and IQ2_S in IQ3_XXS models; `attn_q`: the same two;
/// - `ffn_down` (dense and expert): Q2_K → Q3_K; Q2_K_S → Q4_K in the first
///   eighth; Q3_K_M → Q5_K in the first sixteenth of the layers then Q4_K;
///   IQ3_M → Q4_K in the first eighth (and where `use_more_bits` with
///   exactly 8 experts); Q3_K_L → Q5_K; Q4_K_M and Q5_K_M → Q6_K where
///   `use_more_bits`; Q4_K_S → Q5_K in the first eighth, and IQ4_NL/XS too
///   without an importance matrix; with one Q4_0 → Q4_1 and Q5_0 → Q5_1
///   there;
/// - `ffn_gate`, `ffn_up`: IQ3_XXS in IQ3_XS models between the first and
///   the last eighth of the layers;
/// - `attn_output`: with exactly 8 experts Q5_K for Q2_K, Q3_K_S/M, Q4_K_S/M,
///   IQ4_NL/XS and the IQ3 mixes (the base type for the others, Q3_K_L
///   included); otherwise Q2_K → Q3_K, IQ3_XXS → IQ3_S, Q3_K_M and IQ3_M →
///   Q4_K, Q3_K_L → Q5_K;
/// - a fused `attn_qkv` is typed as `attn_v` whole: phi3's
///   ([`GgufFacts::fused_qkv`]) and the q, k and v of a linear-attention
///   layer's `in_proj_qkvz` (Qwen3-Next, Qwen3.5; their convolution,
///   `A_log`, `dt_bias` and norm stay F32, the rest of the block takes the
///   base type); a gated attention's `attn_q` holds the query and its gate;
/// - norms are F32; every other tensor has the base type. Shape fallbacks
///   (a row length not divisible by the block) are not modelled, nor the
///   `attn_kv_b` of latent attention, which llama.cpp also types as
///   `attn_v`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GgufMix {
    /// The level's base type, bits per weight.
    pub base_bits: f64,
    /// Bits per weight of the LM head.
    pub output_bits: f64,
    /// Bits per weight of the token embedding.
    pub embedding_bits: f64,
}

/// What llama.cpp's type rules read of a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GgufFacts {
    /// Layers (`n_layer`).
    pub layers: u32,
    /// Query heads per KV head (`n_gqa()`).
    pub gqa: u32,
    /// Routed experts (`n_expert`; 0 for dense models).
    pub experts: u32,
    /// llama.cpp's `LLM_TYPE_70B`, which `load_hparams` sets by layer
    /// count per architecture (`src/models/*.cpp` of the pinned llama.cpp):
    /// llama with 80 layers and grouped KV heads (`llama.cpp`), and 80
    /// layers of qwen2, olmo or deci (Qwen2.5-72B is one).
    pub llama_70b: bool,
    /// No separate `output.weight` (the head is the embedding).
    pub tied: bool,
    /// The leading layers whose `ffn_down` the very-low-bit mixes raise:
    /// llama.cpp raises each `ffn_down` tensor while fewer than
    /// `n_layer / 8` came before it (`qs.i_ffn_down < qs.n_ffn_down/8`),
    /// visiting them in layer order (`weight_name_comparer`); a layer of
    /// routed and shared experts holds two (`ffn_down_exps`,
    /// `ffn_down_shexp`). A layer counts as raised when its first one is;
    /// of a layer whose second one is past the count, both are counted as
    /// raised.
    pub low_bit_down_layers: u32,
    /// The GGUF stores each layer's query, key and value projections as
    /// one `attn_qkv` tensor (llama.cpp's phi3 architecture, Phi-3 and
    /// Phi-4), which `llama_tensor_get_type_impl` types by the `attn_v`
    /// rules (`category_is_attn_v`): all three take [`LayerBits::v`].
    pub fused_qkv: bool,
    /// Made with an importance matrix ([`super::arch::ModelSpec::gguf_imatrix`],
    /// or a level that needs one, [`Quant::needs_imatrix`]): IQ4_NL and
    /// IQ4_XS then keep the first eighth of `ffn_down` at their type, and
    /// Q4_0 and Q5_0 raise it to Q4_1 and Q5_1 (`qs.has_imatrix`).
    pub imatrix: bool,
}

impl GgufFacts {
    /// The facts of a model architecture.
    pub fn of(spec: &super::arch::ModelSpec) -> GgufFacts {
        let limit = spec.num_layers / 8;
        let shared = spec.moe.as_ref().is_some_and(|m| m.shared_experts > 0);
        let (mut before, mut raised) = (0u32, 0u32);
        for i in 0..spec.num_layers {
            if before >= limit {
                break;
            }
            raised += 1;
            before += if shared && spec.is_moe_layer(i) { 2 } else { 1 };
        }
        GgufFacts {
            layers: spec.num_layers,
            gqa: spec.num_attention_heads / spec.num_kv_heads.max(1),
            experts: spec.moe.as_ref().map_or(0, |m| m.num_experts),
            llama_70b: spec.num_layers == 80
                && match spec.architecture.as_str() {
                    "llama" => spec.num_kv_heads != spec.num_attention_heads,
                    "qwen2" | "olmo" | "deci" => true,
                    _ => false,
                },
            tied: spec.tied_embeddings,
            low_bit_down_layers: raised,
            fused_qkv: spec.architecture == "phi3",
            imatrix: spec.gguf_imatrix,
        }
    }
}

/// Bits per weight of one layer's tensors whose type differs by role.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerBits {
    /// `attn_q`.
    pub q: f64,
    /// `attn_k`.
    pub k: f64,
    /// `attn_v`.
    pub v: f64,
    /// `ffn_down` (dense and expert).
    pub down: f64,
    /// `ffn_gate` and `ffn_up` (dense and expert).
    pub gate_up: f64,
    /// `attn_output`.
    pub output: f64,
}

/// `use_more_bits` of `llama-quant.cpp`: the first and last eighth of the
/// `n` layers and every third layer between.
pub fn gguf_use_more_bits(i: u32, n: u32) -> bool {
    let (i, n) = (i64::from(i), i64::from(n));
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// Bits per weight of a ggml type the mixes move tensors to, from the
/// block sizes of [`super::source::gguf::GGML_TYPES`] (`ggml-common.h`).
fn ggml_bits(name: &str) -> f64 {
    super::source::gguf::GGML_TYPES
        .iter()
        .find(|t| t.name == name)
        .map_or(f64::NAN, |t| t.block_bytes as f64 * 8.0 / t.block as f64)
}

/// The mixes `llama_tensor_get_type_impl` sends down its very-low-bit
/// branch (`LLAMA_FTYPE_MOSTLY_IQ2_XXS`, `_IQ2_XS`, `_IQ1_S`, `_IQ2_S`,
/// `_IQ2_M`, `_IQ1_M`).
fn very_low_bit(q: Quant) -> bool {
    matches!(
        q,
        Quant::Iq2Xxs | Quant::Iq2Xs | Quant::Iq1S | Quant::Iq2S | Quant::Iq2M | Quant::Iq1M
    )
}

impl GgufMix {
    /// The mix of a GGUF level; `None` for other formats.
    pub fn of(q: Quant, facts: &GgufFacts) -> Option<GgufMix> {
        if !q.is_gguf() {
            return None;
        }
        let output = if q == Quant::Q8_0 {
            Quant::Q8_0.bits_per_weight()
        } else if very_low_bit(q) || q == Quant::Iq3Xxs {
            Quant::Q5K.bits_per_weight()
        } else {
            Quant::Q6K.bits_per_weight()
        };
        let embedding = match q {
            _ if facts.tied => output,
            Quant::Iq2Xxs | Quant::Iq2Xs | Quant::Iq1S | Quant::Iq1M => {
                Quant::Q2K.bits_per_weight()
            }
            Quant::Iq2S | Quant::Iq2M | Quant::Iq3Xxs => ggml_bits("IQ3_S"),
            _ => q.bits_per_weight(),
        };
        Some(GgufMix {
            base_bits: q.bits_per_weight(),
            output_bits: output,
            embedding_bits: embedding,
        })
    }

    /// Bits per weight of layer `i`'s role-dependent tensors at level `q`.
    pub fn layer_bits(q: Quant, i: u32, facts: &GgufFacts) -> LayerBits {
        use Quant as Q;
        let n = facts.layers;
        let base = q.bits_per_weight();
        let b = |x: Quant| x.bits_per_weight();
        let eight = facts.experts == 8;
        if very_low_bit(q) {
            let s_or_m = matches!(q, Q::Iq2S | Q::Iq2M);
            let low = if s_or_m {
                ggml_bits("IQ3_S")
            } else {
                b(Q::Q2K)
            };
            return LayerBits {
                q: base,
                k: if eight { b(Q::Q4K) } else { base },
                v: if facts.gqa >= 4 || facts.experts >= 4 {
                    b(Q::Q4K)
                } else {
                    low
                },
                down: if i < facts.low_bit_down_layers {
                    low
                } else {
                    base
                },
                gate_up: base,
                output: if eight {
                    b(Q::Q5K)
                } else if matches!(q, Q::Iq1S | Q::Iq1M) {
                    ggml_bits("IQ2_XXS")
                } else if s_or_m {
                    ggml_bits("IQ3_S")
                } else {
                    base
                },
            };
        }
        let mut v = match q {
            Q::Q2K | Q::Q2KS if facts.gqa >= 4 => b(Q::Q4K),
            Q::Q2K => b(Q::Q3K),
            Q::Iq3Xxs | Q::Iq3Xs | Q::Iq3S if facts.gqa >= 4 => b(Q::Q4K),
            Q::Iq3M => b(Q::Q4K),
            Q::Iq4Nl | Q::Iq4Xs if facts.gqa >= 4 => b(Q::Q5K),
            Q::Q3K if i < 2 => b(Q::Q5K),
            Q::Q3K => b(Q::Q4K),
            Q::Q3KL => b(Q::Q5K),
            Q::Q4K | Q::Q5K if gguf_use_more_bits(i, n) => b(Q::Q6K),
            Q::Q4KS if i < 4 => b(Q::Q5K),
            _ => base,
        };
        if facts.llama_70b && (v == b(Q::Q3K) || v == b(Q::Q4K)) {
            v = b(Q::Q5K);
        }
        if eight {
            v = b(Q::Q8_0);
        }
        let q_bits = match q {
            Q::Iq3Xs => ggml_bits("IQ3_XXS"),
            Q::Iq3Xxs => ggml_bits("IQ2_S"),
            _ => base,
        };
        let k = if eight { b(Q::Q8_0) } else { q_bits };
        let down = match q {
            Q::Q2K => b(Q::Q3K),
            Q::Q2KS if i < n / 8 => b(Q::Q4K),
            Q::Q3K if i < n / 16 => b(Q::Q5K),
            Q::Q3K => b(Q::Q4K),
            Q::Iq3M if i < n / 8 || (eight && gguf_use_more_bits(i, n)) => b(Q::Q4K),
            Q::Q3KL => b(Q::Q5K),
            Q::Q4K | Q::Q5K if gguf_use_more_bits(i, n) => b(Q::Q6K),
            Q::Iq4Nl | Q::Iq4Xs if i < n / 8 && !facts.imatrix => b(Q::Q5K),
            Q::Q4KS if i < n / 8 => b(Q::Q5K),
            Q::Q4_0 if i < n / 8 && facts.imatrix => b(Q::Q4_1),
            Q::Q5_0 if i < n / 8 && facts.imatrix => b(Q::Q5_1),
            _ => base,
        };
        let gate_up = if q == Q::Iq3Xs && i >= n / 8 && i < 7 * n / 8 {
            ggml_bits("IQ3_XXS")
        } else {
            base
        };
        // With 8 experts only the listed mixes raise attn_output (Q3_K_L
        // keeps its base type there); otherwise the dense rules apply.
        let output = if eight {
            match q {
                Q::Q2K
                | Q::Q3KS
                | Q::Q3K
                | Q::Iq4Nl
                | Q::Q4KS
                | Q::Q4K
                | Q::Iq4Xs
                | Q::Iq3Xs
                | Q::Iq3Xxs
                | Q::Iq3S
                | Q::Iq3M => b(Q::Q5K),
                _ => base,
            }
        } else {
            match q {
                Q::Q2K => b(Q::Q3K),
                Q::Iq3Xxs => ggml_bits("IQ3_S"),
                Q::Q3K | Q::Iq3M => b(Q::Q4K),
                Q::Q3KL => b(Q::Q5K),
                _ => base,
            }
        };
        LayerBits {
            q: q_bits,
            k,
            v,
            down,
            gate_up,
            output,
        }
    }
}

#[cfg(test)]
mod gguf_mix_tests {
    use super::*;

    #[test]
    fn legacy_types_are_their_blocks_and_never_suggested() {
        // ggml-common.h: 20, 22 and 24 bytes per 32 weights.
        assert_eq!(Quant::Q4_1.bits_per_weight(), 5.0);
        assert_eq!(Quant::Q5_0.bits_per_weight(), 5.5);
        assert_eq!(Quant::Q5_1.bits_per_weight(), 6.0);
        for q in [Quant::Q4_1, Quant::Q5_0, Quant::Q5_1] {
            assert!(q.is_gguf());
            assert_eq!(Quant::parse(q.as_str()), Some(q));
            // Their own rules: the Q6_K head, nothing raised per layer.
            let f = facts(32, 4);
            assert_eq!(GgufMix::of(q, &f).unwrap().output_bits, 6.5625);
            let l = GgufMix::layer_bits(q, 0, &f);
            assert_eq!(
                (l.k, l.v, l.down, l.output),
                (
                    q.bits_per_weight(),
                    q.bits_per_weight(),
                    q.bits_per_weight(),
                    q.bits_per_weight()
                )
            );
        }
        let spec = crate::plan::catalog::find("llama-3-8b")
            .unwrap()
            .spec
            .clone();
        let levels = crate::plan::inference::candidate_levels(
            &spec,
            true,
            crate::plan::runtime::RuntimeKind::LlamaCpp,
        );
        assert!(levels.contains(&Quant::Q4_0));
        assert!(
            !levels
                .iter()
                .any(|q| matches!(q, Quant::Q4_1 | Quant::Q5_0 | Quant::Q5_1))
        );
        // NF4 (bitsandbytes) is offered to SGLang, which loads it, and not
        // to vLLM, which stopped after 0.27.1.
        use crate::plan::runtime::RuntimeKind::{Sglang, Vllm};
        let levels = |r| crate::plan::inference::candidate_levels(&spec, false, r);
        assert!(levels(Sglang).contains(&Quant::Nf4));
        assert!(!levels(Vllm).contains(&Quant::Nf4));
        assert!(levels(Vllm).contains(&Quant::Int4));
    }

    #[test]
    fn use_more_bits_is_llama_cpps_rule() {
        // 32 layers: 0–3, 28–31, and 4 + 3k + 2 = 6, 9, …, 27.
        let more: Vec<u32> = (0..32).filter(|&i| gguf_use_more_bits(i, 32)).collect();
        assert_eq!(
            more,
            vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }

    fn facts(layers: u32, gqa: u32) -> GgufFacts {
        GgufFacts {
            layers,
            gqa,
            ..Default::default()
        }
    }

    #[test]
    fn mixes_name_llama_cpps_types() {
        let f = facts(32, 4);
        let m = GgufMix::of(Quant::Q4K, &f).unwrap();
        assert_eq!(m.output_bits, 6.5625);
        assert_eq!(m.embedding_bits, 4.5);
        // Tied embeddings: the one tensor is stored as the head is.
        let tied = GgufFacts { tied: true, ..f };
        assert_eq!(
            GgufMix::of(Quant::Q4K, &tied).unwrap().embedding_bits,
            6.5625
        );
        assert_eq!(GgufMix::of(Quant::Q8_0, &f).unwrap().output_bits, 8.5);
        assert!(GgufMix::of(Quant::Int4, &f).is_none());
        let lb = |q, i, f: &GgufFacts| {
            let l = GgufMix::layer_bits(q, i, f);
            (l.k, l.v, l.down, l.output)
        };
        assert_eq!(lb(Quant::Q4K, 0, &f), (4.5, 6.5625, 6.5625, 4.5));
        assert_eq!(lb(Quant::Q4K, 4, &f), (4.5, 4.5, 4.5, 4.5));
        assert_eq!(lb(Quant::Q3K, 5, &f), (3.4375, 4.5, 4.5, 4.5));
        // Q4_K_S: attn_v at Q5_K in layers 0-3, ffn_down in the first eighth.
        assert_eq!(lb(Quant::Q4KS, 3, &f), (4.5, 5.5, 5.5, 4.5));
        assert_eq!(lb(Quant::Q4KS, 4, &f), (4.5, 4.5, 4.5, 4.5));
        // Q3_K_L: attn_v, ffn_down, attn_output at Q5_K; Q3_K_S: all Q3_K.
        assert_eq!(lb(Quant::Q3KL, 20, &f), (3.4375, 5.5, 5.5, 5.5));
        assert_eq!(lb(Quant::Q3KS, 0, &f), (3.4375, 3.4375, 3.4375, 3.4375));
        // IQ4_XS: attn_v at Q5_K only with n_gqa >= 4.
        assert_eq!(lb(Quant::Iq4Xs, 10, &f).1, 5.5);
        assert_eq!(lb(Quant::Iq4Xs, 10, &facts(32, 1)).1, 4.25);
        assert_eq!(lb(Quant::Iq4Xs, 3, &facts(32, 1)).2, 5.5);
        // Q2_K: attn_v Q4_K (GQA >= 4) or Q3_K, ffn_down Q3_K, attn_output Q3_K.
        assert_eq!(lb(Quant::Q2K, 9, &f), (2.625, 4.5, 3.4375, 3.4375));
        assert_eq!(lb(Quant::Q2K, 9, &facts(32, 1)).1, 3.4375);
        // Q2_K_S: attn_v Q4_K only with GQA >= 4 (else Q2_K), ffn_down
        // Q4_K in the first eighth of the layers, attn_output Q2_K.
        assert_eq!(lb(Quant::Q2KS, 3, &f), (2.625, 4.5, 4.5, 2.625));
        assert_eq!(lb(Quant::Q2KS, 9, &f), (2.625, 4.5, 2.625, 2.625));
        assert_eq!(lb(Quant::Q2KS, 9, &facts(32, 1)).1, 2.625);
        assert_eq!(Quant::parse("Q2_K_S"), Some(Quant::Q2KS));
        // Llama 70B: Q4_K attn_v becomes Q5_K.
        let l70 = GgufFacts {
            llama_70b: true,
            ..facts(80, 8)
        };
        assert_eq!(lb(Quant::Q4K, 40, &l70).1, 5.5);
        assert_eq!(lb(Quant::Q4K, 40, &facts(80, 8)).1, 4.5);
        // llama.cpp types 80-layer qwen2 as 70B too; a 64-layer model is not.
        let spec = |id: &str| &crate::plan::catalog::find(id).unwrap().spec;
        assert!(GgufFacts::of(spec("qwen2.5-72b")).llama_70b);
        assert!(GgufFacts::of(spec("llama-3.1-70b")).llama_70b);
        assert!(!GgufFacts::of(spec("qwen2.5-32b")).llama_70b);
        // Eight experts (Mixtral): attn_k and attn_v Q8_0, attn_output Q5_K.
        let moe = GgufFacts { experts: 8, ..f };
        assert_eq!(lb(Quant::Q4K, 5, &moe), (8.5, 8.5, 4.5, 5.5));
        // ... but Q3_K_L's attn_output keeps Q3_K there (llama-quantize wrote it so).
        assert_eq!(lb(Quant::Q3KL, 5, &moe).3, 3.4375);
    }

    /// The i-quant mixes below IQ4, rule by rule as `llama-quant.cpp`
    /// writes them (bits: IQ3_S 3.4375, IQ3_XXS 3.0625, IQ2_S 2.5625,
    /// IQ2_XS 2.3125, IQ2_XXS 2.0625, IQ1_M 1.75, IQ1_S 1.5625; Q2_K
    /// 2.625, Q4_K 4.5, Q5_K 5.5).
    #[test]
    fn i_quant_mixes_follow_llama_cpps_rules() {
        let l = |q, i, f: &GgufFacts| {
            let b = GgufMix::layer_bits(q, i, f);
            (b.q, b.k, b.v, b.down, b.gate_up, b.output)
        };
        // Base types: llama_ftype_get_default_type (IQ2_S files hold
        // IQ2_XS, IQ2_M files IQ2_S, IQ3_XS and IQ3_M files IQ3_S).
        let bits = |q: Quant| q.bits_per_weight();
        assert_eq!(bits(Quant::Iq2S), 2.3125);
        assert_eq!(bits(Quant::Iq2M), 2.5625);
        assert_eq!((bits(Quant::Iq3Xs), bits(Quant::Iq3M)), (3.4375, 3.4375));
        assert_eq!((bits(Quant::Iq1S), bits(Quant::Iq1M)), (1.5625, 1.75));
        let (dense, mha) = (facts(32, 4), facts(32, 1));
        let f = GgufFacts {
            low_bit_down_layers: 4,
            ..dense
        };
        let f1 = GgufFacts {
            low_bit_down_layers: 4,
            ..mha
        };
        // The very-low-bit branch: attn_v Q4_K with n_gqa >= 4, else
        // IQ3_S (IQ2_S/M) or Q2_K; ffn_down of the first eighth likewise;
        // attn_output IQ2_XXS for IQ1, IQ3_S for IQ2_S/M.
        assert_eq!(
            l(Quant::Iq2Xxs, 0, &f),
            (2.0625, 2.0625, 4.5, 2.625, 2.0625, 2.0625)
        );
        assert_eq!(
            l(Quant::Iq2Xxs, 4, &f1),
            (2.0625, 2.0625, 2.625, 2.0625, 2.0625, 2.0625)
        );
        assert_eq!(
            l(Quant::Iq2M, 3, &f1),
            (2.5625, 2.5625, 3.4375, 3.4375, 2.5625, 3.4375)
        );
        assert_eq!(l(Quant::Iq2S, 9, &f).5, 3.4375);
        assert_eq!(l(Quant::Iq1S, 9, &f).5, 2.0625);
        assert_eq!(l(Quant::Iq1M, 9, &f).5, 2.0625);
        // Four or more experts raise attn_v too; exactly 8 also attn_k
        // (Q4_K) and attn_output (Q5_K), never to Q8_0 in this branch.
        let moe = GgufFacts { experts: 8, ..f1 };
        assert_eq!(
            l(Quant::Iq1S, 9, &moe),
            (1.5625, 4.5, 4.5, 1.5625, 1.5625, 5.5)
        );
        // IQ3_XXS (with its importance matrix): attn_q and attn_k IQ2_S,
        // attn_v IQ3_XXS (Q4_K with n_gqa >= 4), attn_output IQ3_S.
        assert_eq!(
            l(Quant::Iq3Xxs, 9, &mha),
            (2.5625, 2.5625, 3.0625, 3.0625, 3.0625, 3.4375)
        );
        assert_eq!(l(Quant::Iq3Xxs, 9, &dense).2, 4.5);
        // IQ3_XS: attn_q, attn_k and the middle layers' ffn_gate/up at
        // IQ3_XXS; attn_v Q4_K with n_gqa >= 4.
        assert_eq!(
            l(Quant::Iq3Xs, 9, &dense),
            (3.0625, 3.0625, 4.5, 3.4375, 3.0625, 3.4375)
        );
        assert_eq!(l(Quant::Iq3Xs, 3, &mha).4, 3.4375);
        assert_eq!(l(Quant::Iq3Xs, 28, &mha).4, 3.4375);
        // IQ3_M: attn_v and attn_output Q4_K, ffn_down Q4_K in the first
        // eighth; IQ3_S: attn_v Q4_K only with n_gqa >= 4.
        assert_eq!(
            l(Quant::Iq3M, 3, &mha),
            (3.4375, 3.4375, 4.5, 4.5, 3.4375, 4.5)
        );
        assert_eq!(l(Quant::Iq3M, 4, &mha).3, 3.4375);
        assert_eq!(
            l(Quant::Iq3S, 4, &mha),
            (3.4375, 3.4375, 3.4375, 3.4375, 3.4375, 3.4375)
        );
        assert_eq!(l(Quant::Iq3S, 4, &dense).2, 4.5);
        // With 8 experts the IQ3 mixes take attn_k/attn_v Q8_0 and
        // attn_output Q5_K; IQ3_M raises ffn_down where use_more_bits.
        let moe3 = GgufFacts { experts: 8, ..mha };
        assert_eq!(
            l(Quant::Iq3M, 6, &moe3),
            (3.4375, 8.5, 8.5, 4.5, 3.4375, 5.5)
        );
        assert_eq!(l(Quant::Iq3Xs, 7, &moe3).1, 8.5);
        // Head and embedding.
        for (q, head, embedding) in [
            (Quant::Iq2Xxs, 5.5, 2.625),
            (Quant::Iq1M, 5.5, 2.625),
            (Quant::Iq2M, 5.5, 3.4375),
            (Quant::Iq3Xxs, 5.5, 3.4375),
            (Quant::Iq3M, 6.5625, 3.4375),
        ] {
            let m = GgufMix::of(q, &dense).unwrap();
            assert_eq!((m.output_bits, m.embedding_bits), (head, embedding), "{q}");
        }
        let tied = GgufFacts {
            tied: true,
            ..dense
        };
        assert_eq!(GgufMix::of(Quant::Iq1S, &tied).unwrap().embedding_bits, 5.5);
        // The ffn_down count: 61 layers, 3 dense then routed and shared
        // experts (DeepSeek-V3: two ffn_down tensors a layer), n/8 = 7:
        // layers 0-2 (one each) and 3-4 (two each) come first.
        let spec = |id: &str| &crate::plan::catalog::find(id).unwrap().spec;
        assert_eq!(GgufFacts::of(spec("deepseek-v3")).low_bit_down_layers, 5);
        assert_eq!(GgufFacts::of(spec("llama-3.1-8b")).low_bit_down_layers, 4);
        assert!(Quant::Iq2Xxs.needs_imatrix() && !Quant::Iq3S.needs_imatrix());
    }

    /// Each GGUF level's bits are its base type's block in the ggml type
    /// table the GGUF reader uses (`llama_ftype_get_default_type`).
    #[test]
    fn gguf_levels_are_their_base_types_blocks() {
        for (q, base) in [
            (Quant::Q8_0, "Q8_0"),
            (Quant::Q6K, "Q6_K"),
            (Quant::Q5K, "Q5_K"),
            (Quant::Q5KS, "Q5_K"),
            (Quant::Q4K, "Q4_K"),
            (Quant::Q4KS, "Q4_K"),
            (Quant::Q5_1, "Q5_1"),
            (Quant::Q5_0, "Q5_0"),
            (Quant::Q4_1, "Q4_1"),
            (Quant::Q4_0, "Q4_0"),
            (Quant::Iq4Nl, "IQ4_NL"),
            (Quant::Iq4Xs, "IQ4_XS"),
            (Quant::Q3KL, "Q3_K"),
            (Quant::Q3K, "Q3_K"),
            (Quant::Q3KS, "Q3_K"),
            (Quant::Iq3M, "IQ3_S"),
            (Quant::Iq3S, "IQ3_S"),
            (Quant::Iq3Xs, "IQ3_S"),
            (Quant::Iq3Xxs, "IQ3_XXS"),
            (Quant::Q2K, "Q2_K"),
            (Quant::Q2KS, "Q2_K"),
            (Quant::Iq2M, "IQ2_S"),
            (Quant::Iq2S, "IQ2_XS"),
            (Quant::Iq2Xs, "IQ2_XS"),
            (Quant::Iq2Xxs, "IQ2_XXS"),
            (Quant::Iq1M, "IQ1_M"),
            (Quant::Iq1S, "IQ1_S"),
        ] {
            assert_eq!(q.bits_per_weight(), ggml_bits(base), "{q}");
        }
        let gguf = Quant::ALL.iter().filter(|q| q.is_gguf()).count();
        assert_eq!(gguf, 27);
    }

    #[test]
    fn levels_are_ordered_by_bits() {
        for w in Quant::ALL.windows(2) {
            assert!(
                w[0].bits_per_weight() >= w[1].bits_per_weight(),
                "{} before {}",
                w[0],
                w[1]
            );
        }
        for q in Quant::ALL {
            assert_eq!(Quant::parse(q.as_str()), Some(q));
        }
        assert_eq!(Quant::parse("Q4_K_M"), Some(Quant::Q4K));
        assert_eq!(Quant::parse("IQ4_XS"), Some(Quant::Iq4Xs));
    }
}
