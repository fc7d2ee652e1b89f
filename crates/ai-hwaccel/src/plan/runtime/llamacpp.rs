//! llama.cpp's memory rule (`llama-server`; `common/arg.cpp` and
//! `src/llama-context.cpp`, releases from late 2025 with `--fit`): no
//! fraction of the device is held back. Weights are stored by tensor type,
//! the KV cache holds `n_ctx` cells in the cache type, the compute buffer is
//! reserved for a graph of `n_ubatch` tokens (default 512;
//! [`compute_buffer_bytes`]) and the output buffer holds `n_vocab` fp32
//! logits per sequence ([`output_buffer_bytes`]). `--fit` (on by default)
//! fits the model leaving `--fit-target` MiB free per device (default 1024);
//! host memory (the CPU as a device) has no such margin — its capacity is
//! already what the process may still allocate. `--memory-utilization` is
//! not read.

use super::{DeviceContext, MIB, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// The matrix path llama.cpp's Vulkan backend takes on a device, as its
/// device line prints it (`matrix cores: NV_coopmat2`, `KHR_coopmat` or
/// `none`; `ggml/src/ggml-vulkan/ggml-vulkan.cpp`, `ggml_vk_print_gpu_info`
/// and `ggml_vk_get_device`). Without a cooperative-matrix extension the
/// matrix shaders run on the vector units, whatever matrix engines the
/// chip has.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub enum VulkanMatrixCores {
    /// `VK_NV_cooperative_matrix2` (NVIDIA drivers from the 565 series,
    /// and Mesa drivers that implement it).
    #[serde(rename = "NV_coopmat2")]
    NvCoopmat2,
    /// `VK_KHR_cooperative_matrix`, where llama.cpp allows it.
    #[serde(rename = "KHR_coopmat")]
    KhrCoopmat,
    /// Neither: the vector units.
    #[serde(rename = "none")]
    None,
}

impl VulkanMatrixCores {
    /// The path llama.cpp takes on a detected device: from the
    /// cooperative-matrix extensions its Vulkan driver lists (the
    /// `vulkan_matrix_extensions` extra key, `detect::vulkan`), under
    /// llama.cpp's vendor rule (`ggml_vk_khr_cooperative_matrix_support`):
    /// on Intel only Xe2 and later, or an integrated GPU under Intel's
    /// Windows driver, use `VK_KHR_cooperative_matrix` ("older hardware (ex.
    /// Arc A770) has performance regressions"); under AMD's own drivers
    /// (proprietary and AMDVLK, which report it on every GPU) only the
    /// generations llama.cpp classes as RDNA3 (those with accelerated
    /// mixed-signedness int8 dot products: RDNA3 and later); anyone else
    /// whenever the driver lists it. `VK_NV_cooperative_matrix2` is taken
    /// wherever it is listed. `None` when no extension list was read.
    pub fn of_detected(
        extensions: Option<&str>,
        vendor: &str,
        architecture: Option<&str>,
        driver_id: Option<&str>,
        integrated: bool,
    ) -> Option<VulkanMatrixCores> {
        let list: Vec<&str> = extensions?.split_whitespace().collect();
        if list.contains(&"VK_NV_cooperative_matrix2") {
            return Some(VulkanMatrixCores::NvCoopmat2);
        }
        if !list.contains(&"VK_KHR_cooperative_matrix") {
            return Some(VulkanMatrixCores::None);
        }
        let arch = architecture.unwrap_or("");
        let allowed = match vendor {
            "intel" => {
                arch.starts_with("Xe2")
                    || arch.starts_with("Xe3")
                    || (integrated && driver_id == Some("DRIVER_ID_INTEL_PROPRIETARY_WINDOWS"))
            }
            "amd"
                if matches!(
                    driver_id,
                    Some("DRIVER_ID_AMD_PROPRIETARY" | "DRIVER_ID_AMD_OPEN_SOURCE")
                ) =>
            {
                arch.starts_with("gfx11") || arch.starts_with("gfx12")
            }
            _ => true,
        };
        Some(if allowed {
            VulkanMatrixCores::KhrCoopmat
        } else {
            VulkanMatrixCores::None
        })
    }

    /// As llama.cpp's device line prints it.
    pub fn printed(self) -> &'static str {
        match self {
            VulkanMatrixCores::NvCoopmat2 => "NV_coopmat2",
            VulkanMatrixCores::KhrCoopmat => "KHR_coopmat",
            VulkanMatrixCores::None => "none",
        }
    }
}

/// The ggml backend llama.cpp runs a GPU with (the build's, or the
/// device `-dev` picks; llama-bench prints it in its `backend` column).
/// `None` in the options: the vendor's own (CUDA, HIP, Metal, SYCL). A
/// backend changes the plan only where its kernels run the device at
/// another rate ([`crate::plan::speed::reference_tflops`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GgmlBackend {
    /// NVIDIA CUDA (also MUSA's CUDA-derived build).
    Cuda,
    /// AMD HIP (ROCm).
    Hip,
    /// Apple Metal.
    Metal,
    /// SYCL (oneAPI: Intel GPUs).
    Sycl,
    /// Vulkan.
    Vulkan,
    /// OpenCL (Adreno, Intel).
    Opencl,
}

impl GgmlBackend {
    /// A backend by its name, case-insensitively, as llama-bench prints it
    /// or a user writes it (`CUDA`, `ROCm`/`HIP`, `Metal`, `SYCL`, `Vulkan`,
    /// `OpenCL`); in a comma-separated list (`Metal,BLAS`, `RPC,Vulkan`)
    /// the first GPU backend. `None` for anything else (`CPU`, `BLAS`,
    /// `RPC` alone).
    pub fn parse(s: &str) -> Option<GgmlBackend> {
        s.split(',')
            .find_map(|b| match b.trim().to_ascii_lowercase().as_str() {
                "cuda" => Some(GgmlBackend::Cuda),
                "hip" | "rocm" => Some(GgmlBackend::Hip),
                "metal" | "mtl" => Some(GgmlBackend::Metal),
                "sycl" => Some(GgmlBackend::Sycl),
                "vulkan" | "vk" => Some(GgmlBackend::Vulkan),
                "opencl" => Some(GgmlBackend::Opencl),
                _ => None,
            })
    }

    /// The name as llama-bench prints it in its `backend` column (`CUDA`,
    /// `ROCm` for HIP, `Metal`, `SYCL`, `Vulkan`, `OpenCL`).
    pub fn printed(self) -> &'static str {
        match self {
            GgmlBackend::Cuda => "CUDA",
            GgmlBackend::Hip => "ROCm",
            GgmlBackend::Metal => "Metal",
            GgmlBackend::Sycl => "SYCL",
            GgmlBackend::Vulkan => "Vulkan",
            GgmlBackend::Opencl => "OpenCL",
        }
    }

    /// Lowercase name, as JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            GgmlBackend::Cuda => "cuda",
            GgmlBackend::Hip => "hip",
            GgmlBackend::Metal => "metal",
            GgmlBackend::Sycl => "sycl",
            GgmlBackend::Vulkan => "vulkan",
            GgmlBackend::Opencl => "opencl",
        }
    }
}

/// `n_ubatch` default (`common/common.h`, `n_ubatch = 512`).
pub const N_UBATCH: u64 = 512;

/// The micro-batch a plan's llama.cpp runs: `-ub` as given
/// ([`InferenceOptions::ubatch`]), else [`N_UBATCH`]; at most `n_batch`
/// ([`N_BATCH`]), as llama.cpp caps it (`cparams.n_ubatch =
/// std::min(cparams.n_batch, params.n_ubatch)`, src/llama-context.cpp).
pub fn n_ubatch(opts: &InferenceOptions) -> u64 {
    opts.ubatch.map_or(N_UBATCH, |u| u.clamp(1, N_BATCH))
}

/// `n_batch` default: the logical batch a prompt is processed in
/// (`common/common.h`, `n_batch = 2048`; llama-bench's default too).
pub const N_BATCH: u64 = 2048;

/// The argument definitions the emitted flags are checked against: the
/// llama.cpp vendored in this llama-cpp-python source distribution
/// (`tests/fixtures/runtimes/llama.cpp.json`, written by
/// `scripts/runtime-defs.py`; a test fails when a flag is not there).
pub const PINNED_DEFINITIONS: &str = "llama-cpp-python 0.3.36 (vendored llama.cpp common/arg.cpp)";

/// `--fit-target` default: 1024 MiB left free per device.
pub const FIT_TARGET_BYTES: u64 = (1024.0 * MIB) as u64;

/// The compute buffer llama.cpp reserves on a device: the worst-case graph
/// of one micro-batch of `n_ubatch` tokens over the full per-sequence
/// context, as `ggml-alloc` lays it out (tensors reuse freed memory, so the
/// buffer is the peak of what is live at once). From the graph llama.cpp
/// builds (`src/llama-graph.cpp`: `build_attn`, `build_ffn`,
/// `build_inp_kq_mask`; `src/llama-context.cpp`: `graph_reserve`), with
/// flash attention on (`-fa auto` turns it on for the CPU and where the
/// backend supports it; the emitted GPU commands pass `-fa on`):
/// - the attention mask, live for the whole graph: `n_ctx_seq × n_ubatch`
///   f16 values (one stream per sequence: `kv_unified` is off by default);
/// - plus the larger of one layer's FFN, `n_ubatch × 4 B × (4·n_embd +
///   3·n_ff)` for a gated MLP (`2·n_ff` for a plain one), and its
///   attention, `n_ubatch × 4 B × (n_embd_q + 2·n_embd_kv + 4·n_embd)`.
///
/// The reserved graph computes logits only for the sequences' last tokens,
/// so they are not in it (the output buffer holds them). Checked against
/// the buffers a real llama-server logs (the llama.cpp vendored in
/// llama-cpp-python 0.3.36, built by scripts/test.sh): 8.51 MiB logged for
/// a 256-wide, 768-FFN model at `-c 2048 -ub 512`, 14.51 at `-c 8192`, 4.26
/// at `-ub 256`, 15.01 for a 512-wide, 1536-FFN model, 7.51 at `-c 4096
/// -np 4` (the per-sequence mask), and unchanged by a 32,000-token
/// vocabulary — the formula gives 8.50, 14.50, 4.25, 15.00 and 7.50 MiB
/// (`tests/llamacpp.rs` runs the first two on every test run).
///
/// Without flash attention (`-fa off`; llama-bench's default before its
/// `auto`), the attention materialises every score: the mask stays f32
/// (`n_ctx_seq × n_ubatch` × 4 B; flash attention casts it to f16) and one
/// layer's `KQ` product, `n_head × n_ctx_seq × n_ubatch` f32, is live beside
/// the attention's other tensors (`soft_max_ext` runs in place on it), so
/// the attention term becomes `n_ctx_seq × n_ubatch × 4 B × n_head` plus the
/// one above. Checked on the same llama-server with `-fa off`: 23.01 MiB
/// logged for the 256-wide model (4 heads) at `-c 2048`, 83.01 at `-c 8192`,
/// 13.01 at `-c 4096 -np 4`, and for a 512-wide, 8-head model 79.01 at
/// `-c 4096`, 39.50 at `-ub 256` and 25.01 at `-c 1024`; the formula gives
/// 23.00, 83.00, 13.00, 79.00, 39.50 and 25.00 MiB.
///
/// A mixture-of-experts layer (`build_moe_ffn`) holds the gate, up and
/// gated products of every expert a token uses at once
/// (`mul_mat_id` outputs of `n_ff_exp × n_expert_used × n_ubatch`), so its
/// FFN term is `n_ubatch × 4 B × (4·n_embd + 3·n_ff_exp·n_expert_used)`;
/// leading dense layers keep the dense term, and the larger one counts.
/// Checked on the same llama-server: a 4-expert, 2-per-token variant of the
/// 256-wide model logs 13.006 MiB; the formula gives 13.000 (the router's
/// logits and selection, a few KiB, are not counted).
pub fn compute_buffer_bytes(ctx: &DeviceContext, fused_attention: bool, n_ubatch: u64) -> u64 {
    let m = ctx.spec;
    let (ub, mask) = ubatch_and_mask(ctx, fused_attention, n_ubatch);
    let cells = ctx.context.saturating_mul(ub);
    let e = m.hidden_size;
    let ff_mats = match m.mlp {
        crate::plan::arch::MlpKind::Gated => 3,
        crate::plan::arch::MlpKind::Plain => 2,
    };
    let dense = ub * 4 * (4 * e + ff_mats * m.intermediate_size);
    let ffn = match &m.moe {
        Some(moe) => {
            let routed = ub
                * 4
                * (4 * e
                    + ff_mats
                        * moe.expert_intermediate_size
                        * u64::from(moe.experts_per_token.max(1)));
            if moe.dense_layers > 0 {
                routed.max(dense)
            } else {
                routed
            }
        }
        None => dense,
    };
    let q = u64::from(m.num_attention_heads) * m.head_dim;
    let kv = u64::from(m.num_kv_heads) * m.head_dim;
    let mut attn = ub * 4 * (q + 2 * kv + 4 * e);
    if !fused_attention {
        attn = attn.saturating_add(
            cells
                .saturating_mul(4)
                .saturating_mul(u64::from(m.num_attention_heads)),
        );
    }
    mask.saturating_add(ffn.max(attn))
}

/// The micro-batch of the reserved graph (`n_ubatch`, at most the tokens
/// the context holds) and the attention mask's bytes: `n_ctx_seq ×
/// n_ubatch`, f16 with flash attention, f32 without.
fn ubatch_and_mask(ctx: &DeviceContext, fused_attention: bool, n_ubatch: u64) -> (u64, u64) {
    let ub = n_ubatch.min(ctx.context.saturating_mul(ctx.sequences).max(1));
    let mask = ctx
        .context
        .saturating_mul(ub)
        .saturating_mul(if fused_attention { 2 } else { 4 });
    (ub, mask)
}

/// Graph-input copies ggml's scheduler keeps per device for pipeline
/// parallelism: `GGML_SCHED_MAX_COPIES` (4) copies of every input a
/// device's split reads, each flagged so the allocator never reuses it
/// (`ggml/src/ggml-backend.cpp`, `ggml_backend_sched_split_graph` with
/// more than one copy). llama.cpp turns pipeline parallelism on for a layer split over
/// several accelerators with every layer and the output offloaded, no
/// tensor overrides and backends with async compute and events (CUDA, HIP,
/// Vulkan, SYCL, RPC; `src/llama-context.cpp`).
pub const SCHED_COPIES: u64 = 4;

/// What pipeline parallelism adds to one device's compute buffer: the
/// three extra copies of the inputs its split reads, the attention mask
/// (the size [`compute_buffer_bytes`] counts), the hidden state handed
/// over from the previous device (`n_ubatch × n_embd` f32) and, without
/// flash attention (V cache stored transposed), the V rows' scatter
/// indices (`n_ubatch × n_embd_v` int64). Checked on the pinned llama.cpp
/// built with `GGML_RPC` (two and three `rpc-server` devices on this
/// machine, `--split-mode layer`, `pipeline parallelism enabled` logged):
/// 16.04 MiB per device logged for the 256-wide test model at `-c 2048`
/// (8.51 without pipeline parallelism), 40.04 at `-c 8192`, 38.02 with
/// `-fa off`, 12.04 at `-c 4096 -np 4`, and 32.04 for a 512-wide model at
/// `-c 4096`; with this term the plan gives 16.00, 40.00, 38.00, 12.00 and
/// 32.00 MiB (the last of three devices logs 15.54 against 16.00).
pub fn pipeline_copy_bytes(ctx: &DeviceContext, fused_attention: bool, n_ubatch: u64) -> u64 {
    let m = ctx.spec;
    let (ub, mask) = ubatch_and_mask(ctx, fused_attention, n_ubatch);
    let hidden = ub * 4 * m.hidden_size;
    let v_rows = if fused_attention {
        0
    } else {
        ub * 8 * u64::from(m.num_kv_heads) * m.head_dim
    };
    (SCHED_COPIES - 1).saturating_mul(mask + hidden + v_rows)
}

/// The output buffer: `n_vocab` fp32 logits for each of `n_seq_max`
/// sequences (`src/llama-context.cpp`, `output_reserve`; 0.12 MiB logged for
/// a 32,000-token vocabulary and one sequence, 0.49 MiB for four).
pub fn output_buffer_bytes(ctx: &DeviceContext) -> u64 {
    ctx.sequences
        .max(1)
        .saturating_mul(ctx.vocab_size)
        .saturating_mul(4)
}

/// The row multiple a weight type needs for llama.cpp's CPU backend to
/// repack it into an interleaved layout on a CPU with these features, or
/// `None` when it is used as stored. From `ggml/src/ggml-cpu/repack.cpp`,
/// `ggml_repack_get_optimal_repack_type` (the llama.cpp vendored in
/// llama-cpp-python 0.3.36): x86 with AVX2 repacks Q4_0, Q4_K, IQ4_NL and
/// MXFP4 (rows a multiple of 8), with AVX-512 also Q2_K; Arm with the
/// dot-product or int8 matrix extensions repacks Q4_0, IQ4_NL, MXFP4 and
/// Q8_0 (rows a multiple of 4) and Q4_K, Q5_K, Q6_K (multiple of 8).
pub fn repack_row_multiple(ggml_type: &str, cpu_features: &[String]) -> Option<u32> {
    let has = |f: &str| cpu_features.iter().any(|x| x == f);
    let x86 = has("avx2");
    let arm = has("dotprod") || has("i8mm");
    match ggml_type {
        "Q4_0" | "IQ4_NL" | "MXFP4" if x86 => Some(8),
        "Q4_0" | "IQ4_NL" | "MXFP4" | "Q8_0" if arm => Some(4),
        "Q4_K" if x86 || arm => Some(8),
        "Q5_K" | "Q6_K" if arm => Some(8),
        "Q2_K" if has("avx512f") => Some(8),
        _ => None,
    }
}

/// Bytes llama.cpp's CPU backend repacks (a second copy, in the
/// `CPU_REPACK` buffer, beside the memory-mapped file): the matrices
/// ([`crate::plan::StoredWeights::matmul_bytes`]) whose type it repacks on
/// a CPU with these features and whose row count is a multiple it needs.
/// Checked on a real llama-server: a Q4_K_M test model on AVX2 logs
/// `CPU_REPACK model buffer size = 1.44 MiB`, every Q4_K matrix but the
/// token embedding.
pub fn llamacpp_repack_bytes(matmul_bytes: &[(String, u32, u64)], cpu_features: &[String]) -> u64 {
    matmul_bytes
        .iter()
        .filter(|(ty, rows, _)| {
            repack_row_multiple(ty, cpu_features).is_some_and(|m| rows % m == 0)
        })
        .map(|(_, _, b)| *b)
        .sum()
}

/// Architectures whose `--split-mode tensor` llama.cpp refuses
/// ("LLAMA_SPLIT_MODE_TENSOR not implemented for architecture"): the
/// `false` cases of `llm_arch_supports_sm_tensor` (`src/llama-arch.cpp`,
/// the llama.cpp vendored in llama-cpp-python 0.3.36), under their GGUF
/// `general.architecture` names (`LLM_ARCH_NAMES`) and the Hugging Face
/// `model_type`s converted to them (`convert_hf_to_gguf.py`). Every
/// multi-head latent attention model is refused too (DeepSeek V2/V3,
/// Kimi K2, MiniCPM3, GLM-DSA, Mistral 4 are on the list; the rule below
/// does not depend on a name).
pub const TENSOR_SPLIT_UNSUPPORTED: &[&str] = &[
    // GGUF names.
    "grok",
    "mpt",
    "plamo2",
    "minicpm3",
    "gemma3n",
    "mamba",
    "mamba2",
    "jamba",
    "falcon-h1",
    "olmo2",
    "olmoe",
    "deepseek2",
    "deepseek32",
    "hy_v4",
    "dots3note",
    "glm-dsa",
    "bitnet",
    "t5",
    "nemotron_h",
    "nemotron_h_moe",
    "granitehybrid",
    "minimax-01",
    "minimax-m2",
    "minimax-m3",
    "mistral4",
    "kimi-linear",
    "bailingmoe3",
    "kimi-k3",
    "glm5-next",
    "qwen3tts",
    "qwen4exp",
    // Hugging Face model types of the same architectures.
    "grok-1",
    "gemma3n_text",
    "falcon_h1",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "kimi_k2",
    "granitemoehybrid",
    "minimax",
    "minimax_m2",
    "kimi_linear",
    // The `model_type`s vLLM 0.33.0's config classes declare for three of
    // them (`vllm/transformers_utils/configs`).
    "kimi_k3",
    "dots3_note",
    "minimax_m3_text",
];

/// Whether llama.cpp runs `spec` with tensor parallelism over `tp`
/// devices: `--split-mode tensor` (`docs/multi-gpu.md` and
/// `src/llama-model.cpp` of the llama.cpp vendored in llama-cpp-python
/// 0.3.36). It splits Q/K/V, the FFN and the output head by columns, the
/// attention output and FFN down projections by rows, and the KV cache by
/// heads ("splits both weights *and* KV"), evenly unless `-ts` says
/// otherwise, with two cross-device reductions per layer — the layout the
/// planner's tensor parallelism counts. Its conditions:
/// - flash attention on (`SPLIT_MODE_TENSOR requires flash_attn`,
///   `src/llama-context.cpp`);
/// - a KV cache that is not quantized ("simultaneous use of
///   SPLIT_MODE_TENSOR and KV cache quantization not implemented");
/// - an architecture it implements ([`TENSOR_SPLIT_UNSUPPORTED`]);
/// - no expert parallelism: expert tensors are sliced like the dense FFN
///   (`ffn_*_exps` split by their intermediate dimension);
/// - whole KV heads per device (`get_split_granularity`: a device gets
///   whole groups of query heads with their KV head, so KV heads are never
///   replicated); the planner splits evenly, so the degree divides them.
///
/// The older `--split-mode row` is not planned: the pinned llama.cpp
/// marks it deprecated and superseded by `tensor` (`docs/multi-gpu.md`),
/// and its CUDA backend no longer provides the split buffer it needs (only
/// the SYCL and Hexagon backends export `ggml_backend_split_buffer_type`).
pub fn tensor_split_allowed(
    spec: &crate::plan::ModelSpec,
    kv: crate::plan::KvDtype,
    tp: u32,
    opts: &InferenceOptions,
) -> Result<(), String> {
    if !opts.fused_attention {
        return Err(format!(
            "llama.cpp's tensor parallelism (--split-mode tensor, TP {tp}) requires flash attention; the plan has it off"
        ));
    }
    if matches!(kv, crate::plan::KvDtype::Int8 | crate::plan::KvDtype::Fp8) {
        return Err(format!(
            "llama.cpp's tensor parallelism (--split-mode tensor, TP {tp}) does not take a quantized KV cache ({kv}); plan with a 16-bit KV cache"
        ));
    }
    if opts.expert_parallel && spec.moe.is_some() {
        return Err(format!(
            "llama.cpp has no expert parallelism: its tensor split (TP {tp}) slices every expert by its intermediate dimension"
        ));
    }
    let arch = spec.architecture.to_ascii_lowercase();
    if spec.mla.is_some() || TENSOR_SPLIT_UNSUPPORTED.contains(&arch.as_str()) {
        return Err(format!(
            "llama.cpp does not implement tensor parallelism (--split-mode tensor) for architecture {}; it splits this model by layers",
            spec.architecture
        ));
    }
    if spec.num_kv_heads % tp != 0 {
        return Err(format!(
            "llama.cpp's tensor parallelism gives each device whole KV heads: {} KV heads do not divide by TP {tp}",
            spec.num_kv_heads
        ));
    }
    Ok(())
}

/// The llama.cpp rule.
pub struct LlamaCpp;

impl Runtime for LlamaCpp {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::LlamaCpp
    }
    fn name(&self) -> &'static str {
        "llama.cpp"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["llamacpp", "llama-cpp", "llama-server"]
    }
    /// `n_batch` ([`N_BATCH`]): the server batches pending prompts' tokens
    /// up to it in each `update_slots` pass.
    fn prompt_tokens_per_pass(&self, _at: &super::PassDevice, _opts: &InferenceOptions) -> u64 {
        N_BATCH
    }
    fn source(&self) -> &'static str {
        "llama.cpp common/arg.cpp (--fit on, --fit-target 1024 MiB, -ub 512) and src/llama-context.cpp (compute and output buffers), late-2025 releases"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        _forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        RuntimeMemory {
            reserve_bytes: if ctx.device.host {
                // The repacked copies of this device's share of the weights.
                let total = opts.stored_weights.map_or(0, |(_, b)| b);
                let repack =
                    llamacpp_repack_bytes(&opts.gguf_matmul_bytes, &ctx.device.cpu_features);
                if total == 0 {
                    0
                } else {
                    (repack as f64 * (ctx.weights_bytes as f64 / total as f64).min(1.0)).ceil()
                        as u64
                }
            } else {
                // Its fit starts from what CUDA reports free, so what CUDA
                // never reports (the driver's reserve) is outside too.
                let cap = ctx.capacity_bytes;
                let hidden = cap - super::cuda_visible_bytes(ctx.device.spec_id.as_deref(), cap);
                (hidden + FIT_TARGET_BYTES).min(cap)
            },
            activation_bytes: compute_buffer_bytes(ctx, opts.fused_attention, n_ubatch(opts))
                + if ctx.pipeline_parallel > 1
                    && ctx.tensor_parallel == 1
                    && ctx.stages_on_accelerators
                    && !ctx.device.host
                {
                    pipeline_copy_bytes(ctx, opts.fused_attention, n_ubatch(opts))
                } else {
                    0
                }
                + if ctx.last_stage {
                    output_buffer_bytes(ctx)
                } else {
                    0
                },
        }
    }
    fn emit(
        &self,
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
    ) -> Result<super::Launch, String> {
        LlamaCpp::launch(plan, choice, origin)
    }
}

/// The port `ggml-rpc-server` listens on by default (`tools/rpc/rpc-server.cpp`).
pub const RPC_PORT: u16 = 50052;

/// llama.cpp's name of a KV cache type (`-ctk`/`-ctv`): f32, f16, bf16,
/// q8_0 (its 8-bit cache); it has no FP8 cache.
fn cache_type(kv: crate::plan::KvDtype) -> Result<&'static str, String> {
    use crate::plan::KvDtype;
    Ok(match kv {
        KvDtype::Fp32 => "f32",
        KvDtype::Fp16 => "f16",
        KvDtype::Bf16 => "bf16",
        KvDtype::Int8 => "q8_0",
        KvDtype::Fp8 => {
            return Err(
                "llama.cpp has no FP8 KV cache: plan with --kv-dtype int8 (q8_0) or a 16-bit type"
                    .into(),
            );
        }
    })
}

impl LlamaCpp {
    /// `llama-server` for a plan: one replica (data parallelism is one
    /// server per replica), layers split over devices as the plan's stages
    /// hold them (`--split-mode layer`, `--tensor-split` by layer count, the
    /// output layer counted on the last stage),
    /// all layers offloaded (`-ngl` = layers + 1 for the output layer) or
    /// none on the host CPU, `-c` = context × sequences with `-np`
    /// sequences, the cache type, `-ub` 512 (the compute buffer the plan
    /// counted), `--fit off` because the plan already fits every buffer.
    pub fn launch(
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
    ) -> Result<super::Launch, String> {
        let crate::plan::ModelOrigin::Gguf { path } = origin else {
            return Err("llama.cpp loads GGUF files: pass the .gguf file as MODEL".into());
        };
        let tensor_split = choice.tensor_parallel > 1;
        if tensor_split && choice.pipeline_parallel > 1 {
            return Err(format!(
                "llama.cpp splits a model either by layers or by tensors (--split-mode tensor), not both: choose a plan with TP 1 or PP 1 (this one has TP {} PP {})",
                choice.tensor_parallel, choice.pipeline_parallel
            ));
        }
        if choice.data_parallel > 1 {
            return Err(format!(
                "the plan has {} replicas: llama.cpp runs one per server; choose a plan with DP 1",
                choice.data_parallel
            ));
        }
        let ctk = cache_type(plan.kv_dtype)?;
        let on_host = |id: &str| plan.devices.iter().any(|d| d.id == id && d.host);
        let all: Vec<&crate::plan::inference::DeviceMemory> = choice
            .per_device
            .iter()
            .filter(|d| d.replica == 0)
            .collect();
        // The GPU stages; the host CPU's layers are the ones not offloaded.
        let devices: Vec<&crate::plan::inference::DeviceMemory> = all
            .iter()
            .copied()
            .filter(|d| !on_host(&d.device))
            .collect();
        let host = devices.is_empty();
        if all.len() > devices.len() && all.first().is_some_and(|d| !on_host(&d.device)) {
            return Err("llama.cpp keeps the first layers on the CPU and offloads the last: the host CPU must be the first stage".into());
        }
        if tensor_split && all.len() > devices.len() {
            return Err("llama.cpp's tensor split (--split-mode tensor) keeps every layer on the GPUs: choose a plan without CPU layers".into());
        }
        // Machines: llama-server runs on the machine of the last stage;
        // the earlier stages' machines serve their GPUs over the network
        // (`ggml-rpc-server`, llama.cpp's RPC backend), and llama.cpp puts
        // the RPC devices at the front of its device list in `--rpc` order
        // (`src/llama.cpp`, "add RPC servers at the front of the list to
        // minimize network transfers"), before its own GPUs. So the stages
        // of each machine must be consecutive and the local ones last.
        let machine_of = |id: &str| {
            plan.devices
                .iter()
                .find(|d| d.id == id)
                .map_or(0, |d| d.machine)
        };
        let mut machines: Vec<u32> = Vec::new();
        for d in &devices {
            let m = machine_of(&d.device);
            if machines.last() != Some(&m) {
                if machines.contains(&m) {
                    return Err(format!(
                        "llama.cpp reaches other machines' GPUs over RPC as one block each: the plan returns to machine {m} after another; choose a plan whose stages keep each machine's devices together"
                    ));
                }
                machines.push(m);
            }
        }
        let remote = machines.len().saturating_sub(1);
        if remote > 0 && tensor_split {
            return Err("llama.cpp's tensor split (--split-mode tensor) runs on the GPUs of one machine; across machines it splits by layers over RPC: choose a plan with TP 1".into());
        }
        // Layers on the GPUs: each stage's range once (the devices of a
        // tensor-parallel stage share theirs).
        let ranges: std::collections::BTreeSet<(u32, u32)> =
            devices.iter().map(|d| d.layers).collect();
        let layers: u32 = ranges.iter().map(|(a, b)| b - a).sum();
        // The plan's sequences per replica (under latency targets, the
        // concurrency that meets them).
        let np = choice.batch.max(1);
        let mut argv: Vec<String> = vec![
            "llama-server".into(),
            "-m".into(),
            path.clone(),
            "-c".into(),
            (plan.context * np).to_string(),
            "-np".into(),
            np.to_string(),
            "-ctk".into(),
            ctk.into(),
            "-ctv".into(),
            ctk.into(),
            "-ub".into(),
            n_ubatch(&plan.options).to_string(),
            "-ngl".into(),
            if host {
                "0".into()
            } else {
                (layers + 1).to_string()
            },
        ];
        // Flash attention as planned (the unfused plan pays for its
        // scores); the host CPU's `auto` already turns it on.
        if !plan.options.fused_attention {
            argv.extend(["-fa".into(), "off".into()]);
        } else if !host {
            argv.extend(["-fa".into(), "on".into()]);
        }
        if !host {
            argv.extend(["--fit".into(), "off".into()]);
            if tensor_split {
                // Weights and KV split evenly over the devices (no `-ts`).
                argv.extend(["--split-mode".into(), "tensor".into()]);
            } else if devices.len() > 1 {
                // llama.cpp splits the offloaded layers and the output
                // layer (one unit more) by the cumulative `-ts` fractions:
                // unit `il` goes to the first device whose fraction exceeds
                // `il / (ngl)` (`src/llama-model.cpp`, `get_layer_buft_list`;
                // the output layer is unit `n_layer`). So the last stage's
                // share counts the output layer too: `-ts` by layer count
                // alone gives the first devices a layer more than planned.
                let last = devices.len() - 1;
                let split: Vec<String> = devices
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (d.layers.1 - d.layers.0 + u32::from(i == last)).to_string())
                    .collect();
                argv.extend([
                    "--split-mode".into(),
                    "layer".into(),
                    "--tensor-split".into(),
                    split.join(","),
                ]);
                if remote > 0 {
                    let servers: Vec<String> = (1..=remote)
                        .map(|k| format!("HOST{k}:{RPC_PORT}"))
                        .collect();
                    argv.extend(["--rpc".into(), servers.join(",")]);
                }
            }
        }
        // Builds from May 2026 print the loader's and the context's lines
        // (buffer sizes, n_ctx: what `check` compares) only at verbosity 4
        // (llama.cpp PR 23021; the default is 3).
        argv.extend(["-lv".into(), "4".into()]);
        let mut notes = vec![
            format!("flags checked against {PINNED_DEFINITIONS}"),
            "-lv 4 makes this build log its buffer sizes and context (what `ai-hwaccel check` reads); since May 2026 llama.cpp prints them only at verbosity 4".into(),
        ];
        if remote > 0 {
            notes.push(format!(
                "the plan spans {} machines: run this command on the machine of the last stage, after starting `ggml-rpc-server -H 0.0.0.0 -p {RPC_PORT}` (`rpc-server` in older builds; every machine's llama.cpp built with -DGGML_RPC=ON) on each other machine, in stage order, and put their addresses for {} in --rpc; each server offers all its GPUs (`-d` lists them), and their layers cross the network once per token",
                remote + 1,
                if remote == 1 {
                    "HOST1".to_string()
                } else {
                    format!("HOST1..HOST{remote}")
                }
            ));
        }
        if tensor_split {
            notes.push(format!(
                "--split-mode tensor (TP {}) is experimental in llama.cpp (docs/multi-gpu.md): it needs flash attention, a 16-bit KV cache and, for fast reductions, a build with NCCL (-DGGML_CUDA_NCCL=ON, the default; RCCL with -DGGML_HIP_RCCL=ON on ROCm)",
                choice.tensor_parallel
            ));
        }
        notes.push(format!(
            "-c {} is {} tokens for each of {} sequences (llama.cpp divides the context among -np slots)",
            plan.context * np,
            plan.context,
            np
        ));
        // MoE expert offload: the routed experts of the first N layers stay
        // in host memory (`--n-cpu-moe N`, common/arg.cpp; the same tensors
        // as the `-ot` pattern in the note).
        if let Some(m) = &choice.moe_offload
            && !host
        {
            let n = m.cpu_expert_layers;
            argv.extend(["--n-cpu-moe".into(), n.to_string()]);
            let blocks: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            notes.push(format!(
                "--n-cpu-moe {n} keeps the routed experts of layers 0-{} in host memory, as -ot \"blk\\.({})\\.ffn_(up|down|gate)_exps=CPU\" would",
                n.saturating_sub(1),
                blocks.join("|")
            ));
        }
        // No CUDA graphs (`InferenceOptions::eager`): ggml-cuda reads only
        // whether the variable exists (`common.cuh`).
        let mut env = std::collections::BTreeMap::new();
        if plan.options.eager {
            env.insert("GGML_CUDA_DISABLE_GRAPHS".to_string(), "1".to_string());
        }
        Ok(super::Launch {
            runtime: RuntimeKind::LlamaCpp,
            version: Some(PINNED_DEFINITIONS.into()),
            argv,
            env,
            files: Default::default(),
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::VulkanMatrixCores as M;

    /// llama.cpp's vendor rule over the listed extensions
    /// (`ggml_vk_khr_cooperative_matrix_support`).
    #[test]
    fn vulkan_matrix_path_follows_llama_cpps_vendor_rule() {
        let khr = Some("VK_KHR_cooperative_matrix VK_KHR_shader_integer_dot_product");
        let radv = Some("DRIVER_ID_MESA_RADV");
        let amdvlk = Some("DRIVER_ID_AMD_OPEN_SOURCE");
        let of = |ext, vendor, arch, driver, integrated| {
            M::of_detected(ext, vendor, arch, driver, integrated)
        };
        // No extension list read: unknown.
        assert_eq!(of(None, "nvidia", Some("8.9"), None, false), None);
        assert_eq!(
            of(Some("none"), "nvidia", Some("8.9"), None, false),
            Some(M::None)
        );
        // NVIDIA's own 2019 extension alone is not llama.cpp's.
        assert_eq!(
            of(
                Some("VK_NV_cooperative_matrix"),
                "nvidia",
                Some("7.5"),
                None,
                false
            ),
            Some(M::None)
        );
        assert_eq!(
            of(khr, "nvidia", Some("8.9"), None, false),
            Some(M::KhrCoopmat)
        );
        assert_eq!(
            of(
                Some("VK_KHR_cooperative_matrix VK_NV_cooperative_matrix2"),
                "nvidia",
                Some("12.0"),
                None,
                false
            ),
            Some(M::NvCoopmat2)
        );
        // AMD: RADV whenever listed; AMD's own drivers only from RDNA3.
        assert_eq!(
            of(khr, "amd", Some("gfx1201"), radv, false),
            Some(M::KhrCoopmat)
        );
        assert_eq!(
            of(khr, "amd", Some("gfx1201"), amdvlk, false),
            Some(M::KhrCoopmat)
        );
        assert_eq!(
            of(
                khr,
                "amd",
                Some("gfx1100"),
                Some("DRIVER_ID_AMD_PROPRIETARY"),
                false
            ),
            Some(M::KhrCoopmat)
        );
        assert_eq!(
            of(
                khr,
                "amd",
                Some("gfx1030"),
                Some("DRIVER_ID_AMD_PROPRIETARY"),
                false
            ),
            Some(M::None)
        );
        assert_eq!(of(khr, "amd", None, amdvlk, true), Some(M::None));
        // Intel: Xe2 and later, or an integrated GPU under the Windows driver.
        assert_eq!(
            of(khr, "intel", Some("Xe2-HPG"), None, false),
            Some(M::KhrCoopmat)
        );
        assert_eq!(of(khr, "intel", Some("Xe-HPG"), None, false), Some(M::None));
        assert_eq!(
            of(
                khr,
                "intel",
                None,
                Some("DRIVER_ID_INTEL_PROPRIETARY_WINDOWS"),
                true
            ),
            Some(M::KhrCoopmat)
        );
        assert_eq!(
            of(
                khr,
                "intel",
                None,
                Some("DRIVER_ID_INTEL_OPEN_SOURCE_MESA"),
                true
            ),
            Some(M::None)
        );
        assert_eq!(M::KhrCoopmat.printed(), "KHR_coopmat");
        assert_eq!(
            serde_json::to_string(&M::NvCoopmat2).unwrap(),
            "\"NV_coopmat2\""
        );
    }
}
