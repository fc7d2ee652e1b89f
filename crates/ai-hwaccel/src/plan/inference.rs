//! Inference plans: per-device memory (weights, KV cache, activations,
//! runtime reserve) for every legal tensor/pipeline/data-parallel layout,
//! the largest context and batch that fit, and decode/prefill throughput
//! estimates, ranked.
//!
//! # Memory (per device)
//!
//! - **Weights**: projection and expert matrices at the quantization's bits
//!   per weight ([`Quant::bits_per_weight`]); norms, routers, embeddings and
//!   the LM head at 16 bits — except GGUF levels, which are llama.cpp's mixes
//!   ([`super::quant::GgufMix`]: the head at Q6_K, the embedding at the base
//!   type, norms in F32, some attn_v/ffn_down/attn_output at more bits). Tensor parallelism divides the head-split
//!   projections, MLPs, experts and the (vocabulary-parallel) embedding and
//!   head by the degree (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053
//!   §3; vLLM's `VocabParallelEmbedding`); KV projections divide by the
//!   degree until each rank holds one KV head, then replicate; norms, routers
//!   and MLA's down-projections are whole on every rank. With pipeline
//!   parallelism the first stage holds the embedding, the last the head (a
//!   separate copy when tied).
//! - **KV cache**: [`ModelSpec::kv_elements_layer`] for the stage's layers ×
//!   batch × KV bytes, divided like the KV heads (MLA's latent is not split).
//!   Linear-attention layers cache no tokens; each sequence holds their fixed
//!   state ([`super::arch::LinearAttention::state_elements`]) at the model's
//!   16-bit width, split by tensor parallelism like their heads (vLLM
//!   `mamba_cache_dtype="auto"` follows the model dtype).
//! - **MXFP4 experts** (gpt-oss): routed experts published in MXFP4 are
//!   held at [`super::arch::MXFP4_BITS_PER_WEIGHT`] whatever the level, unless
//!   the level has fewer bits.
//! - **Activations**: the live tensors of one layer's forward pass over a
//!   prefill chunk of `T = min(chunk, batch × context)` tokens (an
//!   encoder's whole batch, `T = batch × context`: it is not chunked) — four
//!   `h`-wide tensors (residual, normed input, attention and MLP outputs)
//!   plus the wider of the q/k/v projections and the MLP's gate, up and
//!   product (`3·i/tp`; `3·k·i_e/tp` for routed experts) — at 16 bits, with
//!   FlashAttention's no `T×T` score matrix (Dao et al. 2022,
//!   arXiv:2205.14135), plus fp32 logits for one token per sequence on the
//!   last stage.
//! - **Overhead**: the fraction of the device a serving runtime keeps for
//!   itself, [`DEFAULT_MEMORY_UTILIZATION`].
//!
//! # Throughput
//!
//! - **Decode**: per step each device reads its weights (of routed
//!   experts, the expected fraction a batch touches) and its KV cache;
//!   time = bytes ÷ (bandwidth × [`DEFAULT_DECODE_EFFICIENCY`]), or the
//!   batch's FLOPs (every sequence's token over its whole context) at the
//!   prefill matrix rate and fraction where that is longer (the roofline:
//!   memory bound at small batches, compute bound at serving batches of
//!   hundreds; vLLM, SGLang and TensorRT-LLM above one sequence add the
//!   GEMMs' FLOPs to the weights' bytes instead,
//!   [`crate::plan::speed::decode_gemms_overlap`]), plus two ring
//!   all-reduces per layer under tensor parallelism, each its bytes over the link and a fixed latency measured
//!   on NVLink and on PCIe ([`allreduce_latency`]); stages run one after
//!   another (no micro-batch overlap, a lower bound).
//! - **Prefill** is compute bound: `2 × active parameters + 2 × layers ×
//!   context × attention width` FLOPs per token (Kaplan et al. 2020,
//!   arXiv:2001.08361, Table 1) ÷ (dense peak for the compute type ×
//!   [`DEFAULT_PREFILL_EFFICIENCY`]).
//! - **Calibrated** (the default, [`InferenceOptions::calibrated_speed`]):
//!   where [`crate::plan::speed::FITTED`] has a cell for the device class,
//!   runtime and format width (SGLang and TensorRT-LLM, with no rows of
//!   their own, use vLLM's: [`crate::plan::speed::fit_runtime`]; a width
//!   without a cell takes the 16-bit one), its fitted efficiencies replace the two
//!   defaults and its per-layer overhead is added per step (decode) and per
//!   token (prefill); prefill is measured against the matrix rate the
//!   runtime's kernels run at ([`crate::plan::speed::reference_tflops`]).
//!   Fitted on published measurements; errors in `docs/accuracy.md`.
//! - Encoders (embedding models, [`ModelSpec::encoder`]) hold no KV cache
//!   and have no decode: their decode speeds are `None` and
//!   `prefill_tokens_per_s` is the encoding rate.
//! - Per sequence and total: `decode_tokens_per_s` is the total over all
//!   replicas and their batches, `decode_tokens_per_s_per_sequence` one
//!   sequence's rate (the same at batch 1); `prefill_tokens_per_s` is one
//!   prompt's rate.

use serde::{Deserialize, Serialize};

use super::arch::{AttentionKind, ModelSpec};
use super::devices::PlanDevice;
use super::quant::{KvDtype, Quant};
use super::runtime::{DeviceContext, RuntimeKind, runtime};
use crate::spec::Dtype;

/// Fraction of device memory a serving runtime lets the model use; the
/// rest is its own reserve (CUDA context, allocator, graphs). vLLM's default
/// `gpu_memory_utilization` is 0.9 (vLLM engine arguments documentation).
pub const DEFAULT_MEMORY_UTILIZATION: f64 = 0.9;

/// Achieved over peak memory bandwidth in decoding ("model bandwidth
/// utilization", MBU). Databricks, "LLM Inference Performance Engineering:
/// Best Practices" (2023, <https://www.databricks.com/blog/llm-inference-performance-engineering-best-practices>)
/// defines MBU and reports small-batch decoding on A100/H100 in this range.
pub const DEFAULT_DECODE_EFFICIENCY: f64 = 0.6;

/// Achieved over peak FLOPS in prefill ("model FLOPs utilization", MFU).
/// Pope et al., "Efficiently Scaling Transformer Inference" (2022,
/// arXiv:2211.05102) reach 76% MFU on large prefill batches with tuned
/// partitioning; that is the ceiling. 0.5 is a conservative default below
/// it that no measurement of ours backs — override it with
/// `--prefill-efficiency` for the serving stack at hand.
pub const DEFAULT_PREFILL_EFFICIENCY: f64 = 0.5;

/// Tokens processed per prefill step: vLLM's chunked-prefill budget
/// `max_num_batched_tokens` default of 2048 in its V0 scheduler.
pub const DEFAULT_PREFILL_CHUNK: u64 = 2048;

/// Context assumed when none is given.
pub const DEFAULT_CONTEXT: u64 = 4096;

/// What plans are ranked by.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Fastest decode per sequence (time per output token) first, then the
    /// fewest devices. The default: the planner's default batch is one
    /// sequence, a user waiting for an answer, for whom a layout that
    /// splits every layer over all devices (TP8 for a 70B model on 8×H100)
    /// answers fastest.
    #[default]
    Latency,
    /// Most decode tokens per second over all replicas at the requested
    /// batch first (a serving fleet's figure), then the fewest devices.
    Throughput,
}

/// What to plan for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InferenceOptions {
    /// Weight format; `None`: the suggested one.
    pub quant: Option<Quant>,
    /// KV cache type; `None`: the model's 16-bit type.
    pub kv_dtype: Option<KvDtype>,
    /// Tokens per sequence (prompt + generated); `None`: the model's maximum
    /// capped at [`DEFAULT_CONTEXT`].
    pub context: Option<u64>,
    /// Concurrent sequences per replica.
    pub batch: u64,
    /// Tokens per prefill step.
    pub prefill_chunk: u64,
    /// Fraction of memory the model may use.
    pub memory_utilization: f64,
    /// Decode bandwidth efficiency.
    pub decode_efficiency: f64,
    /// Prefill compute efficiency.
    pub prefill_efficiency: f64,
    /// Exact stored weight bytes (from file headers) at the given level:
    /// weights are scaled to this total.
    pub stored_weights: Option<(Quant, u64)>,
    /// GGUF files: the bytes of the matrices llama.cpp multiplies, by type
    /// and row multiple ([`crate::plan::StoredWeights::matmul_bytes`]), for
    /// llama.cpp's CPU repacking.
    #[serde(default)]
    pub gguf_matmul_bytes: Vec<(String, u32, u64)>,
    /// How many ranked plans to return.
    pub max_plans: usize,
    /// Whether `suggest` may pick GGUF block formats (a llama.cpp model).
    pub gguf_levels: bool,
    /// Plan GGUF levels as `llama-quantize` makes them with an importance
    /// matrix (`--imatrix`; [`ModelSpec::gguf_imatrix`]).
    #[serde(default)]
    pub gguf_imatrix: bool,
    /// What the plans are ranked by.
    #[serde(default)]
    pub objective: Objective,
    /// Whose memory rule sizes the reserve and activation workspace
    /// ([`crate::plan::runtime`]); `generic` by default.
    #[serde(default)]
    pub runtime: RuntimeKind,
    /// Use the fitted fractions of [`crate::plan::speed::FITTED`] for the
    /// device class, runtime and format where the table has them (the
    /// default); `false`: `decode_efficiency` and `prefill_efficiency` apply
    /// to every device.
    #[serde(default = "calibrated_default")]
    pub calibrated_speed: bool,
    /// Prompt tokens of one request: prefill speed and time to first token
    /// are for a prompt of this length. `None`: the context.
    #[serde(default)]
    pub input_len: Option<u64>,
    /// Tokens one request generates: with it each plan gives the request's
    /// latency (time to first token + the other tokens at the time per
    /// output token). With `input_len` it sets the context when that is
    /// not given (prompt + output).
    #[serde(default)]
    pub output_len: Option<u64>,
    /// Target time to first token, milliseconds: layouts that miss it at
    /// one sequence are rejected (see [`Plan::ttft_ms`]); with
    /// `output_len`, each layout also runs no more concurrent sequences
    /// per replica than keep the served time to first token
    /// ([`Plan::served_ttft_ms`]: a request arriving in that closed loop
    /// waits for the decode steps in progress) within it.
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// Target time per output token, milliseconds: each layout runs the
    /// most concurrent sequences per replica that still meets it (and
    /// fits), and layouts that miss it at one sequence are rejected. With
    /// either target, `batch` is not used and plans rank by decode tokens/s
    /// per device (the measure NVIDIA's aiconfigurator ranks by), then
    /// per sequence.
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    /// Place a mixture-of-experts model's routed experts whole on the
    /// tensor-parallel ranks (expert parallelism of size TP: vLLM
    /// `--enable-expert-parallel`, SGLang `--ep-size`, TensorRT-LLM
    /// `--ep_size`) instead of slicing every expert. The routed experts
    /// must divide by the degree. Bytes per device are the same either
    /// way (a TP rank holds 1/TP of the experts' weights; under the vLLM
    /// rule 1/(TP × DP), with or without this option, as vLLM's fused-MoE
    /// layers span every data-parallel rank); dense models ignore it.
    #[serde(default)]
    pub expert_parallel: bool,
    /// Whether attention runs fused (FlashAttention: the scores stay on
    /// chip), as the emitted llama.cpp commands ask for (`-fa on`) and
    /// vLLM, SGLang and TensorRT-LLM do. `false` (llama.cpp `-fa off`, the
    /// llama-bench default the calibration rows ran with): prefill also
    /// pays for writing and reading every attention score, at the bytes per
    /// score fitted in [`crate::plan::speed::SCORE_BYTES`].
    #[serde(default = "fused_default")]
    pub fused_attention: bool,
    /// The month of the runtime's build (`YYYY-MM`), for the per-layer
    /// decode time, which llama.cpp's builds have cut year by year
    /// ([`crate::plan::speed::build_factor`]); `None`: the newest build
    /// the calibration rows measure on the device's vendor
    /// ([`crate::plan::speed::newest_build`]).
    #[serde(default)]
    pub runtime_build: Option<super::speed::BuildMonth>,
    /// llama.cpp was built with `GGML_CUDA_FORCE_MMQ` (before June 2024
    /// `LLAMA_CUDA_FORCE_MMQ`): its CUDA backend multiplies every quantized
    /// prompt with the MMQ kernels, never dequantized for cuBLAS. It changes
    /// the plan where that build's MMQ has no int8 tensor-core kernels (a
    /// GPU of compute capability 7.0 to 7.4, or a build before July 2024):
    /// the prompt is then planned on the DP4A kernels
    /// ([`crate::plan::speed::dp4a_mmq`]). Default: off (llama.cpp's
    /// default build).
    #[serde(default)]
    pub cuda_force_mmq: bool,
    /// The runtime launches each kernel of a decode step from the host
    /// instead of replaying a captured CUDA graph: vLLM's `--enforce-eager`,
    /// SGLang's decode and prefill CUDA-graph backends `disabled`
    /// (`--disable-cuda-graph` before 0.5.23), llama.cpp with
    /// `GGML_CUDA_DISABLE_GRAPHS` set. The emitted commands pass it; the
    /// per-layer decode time is [`crate::plan::speed::eager_decode_layer_s`]
    /// where the planner has a term for it; SGLang reserves no memory for
    /// the graphs. Default: off (each runtime's default uses graphs).
    pub eager: bool,
    /// llama.cpp's `-ub` (`n_ubatch`): the tokens of one micro-batch a
    /// prompt is computed in (at most `n_batch`, 2048); `None`: llama.cpp's
    /// default, 512. It sizes the compute buffers, the sliding-window cells
    /// and the prompt passes (their weight reads, the layer split's
    /// pipeline, the host offload's copies), and the emitted command passes
    /// it. Read only under the llama.cpp rule.
    pub ubatch: Option<u64>,
    /// The runtime is told to prefill arriving prompts within the decode
    /// steps' own batches where it would otherwise run them in passes of
    /// their own (SGLang's `--enable-mixed-chunk`, which `--emit sglang`
    /// then passes): its served TPOT is then the mixed batch's, as vLLM's
    /// ([`prompts_in_own_passes`]). No effect on a runtime that mixes them
    /// anyway. Default: off (the runtime's default).
    #[serde(default)]
    pub mixed_prefill: bool,
    /// Fraction of memory bandwidth a decode step reaches reading the KV
    /// cache (attention's kernels), overriding the runtime's fitted one
    /// ([`crate::plan::speed::KV_READ`]); `None`: the fitted one, else the
    /// decode efficiency.
    #[serde(default)]
    pub kv_read_efficiency: Option<f64>,
    /// The ggml backend llama.cpp runs the GPUs with; `None`: the vendor's
    /// own (CUDA, HIP, Metal, SYCL). Read only under the llama.cpp rule,
    /// and only where the backend's kernels run a device at another rate
    /// ([`crate::plan::speed::reference_tflops`]: Vulkan on Intel GPUs
    /// other than Xe2).
    #[serde(default)]
    pub backend: Option<super::runtime::GgmlBackend>,
    /// vLLM's `--max-num-seqs`: the requests its profile run samples at
    /// once (and the most it schedules together); `None`: vLLM's default
    /// for the GPU ([`crate::plan::runtime::vllm_batch_defaults`]). Read
    /// only under the vLLM rule; an emitted `vllm serve` passes it.
    #[serde(default)]
    pub max_num_seqs: Option<u64>,
    /// vLLM's `--max-num-batched-tokens`: the tokens of one scheduler step,
    /// so of its profiled forward pass; `None`: vLLM's default for the GPU.
    /// Read only under the vLLM rule; an emitted `vllm serve` passes it.
    #[serde(default)]
    pub max_num_batched_tokens: Option<u64>,
    /// SGLang's `--mem-fraction-static`: the share of the memory free
    /// before the weights load that weights and KV pool may take; `None`:
    /// SGLang's default for the GPU, the parallel sizes and the model
    /// ([`crate::plan::runtime::SglangMemoryDefaults`]). Read only under the
    /// SGLang rule; an emitted `sglang.launch_server` passes it.
    #[serde(default)]
    pub mem_fraction_static: Option<f64>,
}

impl InferenceOptions {
    /// Whether a latency target (`ttft_ms`, `tpot_ms`) is set.
    pub fn has_targets(&self) -> bool {
        self.ttft_ms.is_some() || self.tpot_ms.is_some()
    }
}

fn calibrated_default() -> bool {
    true
}

fn fused_default() -> bool {
    true
}

impl Default for InferenceOptions {
    fn default() -> Self {
        InferenceOptions {
            quant: None,
            kv_dtype: None,
            context: None,
            batch: 1,
            prefill_chunk: DEFAULT_PREFILL_CHUNK,
            memory_utilization: DEFAULT_MEMORY_UTILIZATION,
            decode_efficiency: DEFAULT_DECODE_EFFICIENCY,
            prefill_efficiency: DEFAULT_PREFILL_EFFICIENCY,
            stored_weights: None,
            gguf_matmul_bytes: Vec::new(),
            max_plans: 10,
            gguf_levels: false,
            gguf_imatrix: false,
            objective: Objective::default(),
            runtime: RuntimeKind::default(),
            calibrated_speed: true,
            input_len: None,
            output_len: None,
            ttft_ms: None,
            tpot_ms: None,
            expert_parallel: false,
            fused_attention: true,
            runtime_build: None,
            cuda_force_mmq: false,
            eager: false,
            ubatch: None,
            mixed_prefill: false,
            kv_read_efficiency: None,
            backend: None,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            mem_fraction_static: None,
        }
    }
}

/// One device's memory in a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceMemory {
    /// Device id.
    pub device: String,
    /// Data-parallel replica.
    pub replica: u32,
    /// Pipeline stage.
    pub stage: u32,
    /// Layers of the stage: first and one past the last.
    pub layers: (u32, u32),
    /// Weights held.
    pub weights_bytes: u64,
    /// KV cache at the requested context and batch.
    pub kv_cache_bytes: u64,
    /// Activation workspace.
    pub activation_bytes: u64,
    /// Runtime reserve.
    pub overhead_bytes: u64,
    /// Sum of the above.
    pub total_bytes: u64,
    /// Device memory.
    pub capacity_bytes: u64,
    /// `total_bytes <= capacity_bytes`.
    pub fits: bool,
}

/// One layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Tensor-parallel degree.
    pub tensor_parallel: u32,
    /// Pipeline stages.
    pub pipeline_parallel: u32,
    /// Replicas.
    pub data_parallel: u32,
    /// Devices used.
    pub devices_used: u32,
    /// Weight format.
    pub quantization: Quant,
    /// KV cache type.
    pub kv_dtype: KvDtype,
    /// Memory per device used.
    pub per_device: Vec<DeviceMemory>,
    /// Largest context one sequence may have (batch 1), capped at the
    /// model's maximum.
    pub max_context_tokens: u64,
    /// Largest batch per replica at the requested context: what the
    /// memory holds, and under vLLM at most the `max_num_seqs` the plan was
    /// made with ([`InferenceOptions::max_num_seqs`]), which its scheduler
    /// never exceeds.
    pub max_batch: u64,
    /// Decode throughput over all replicas at the requested batch (total);
    /// `None` when a device's bandwidth is unknown.
    pub decode_tokens_per_s: Option<f64>,
    /// Decode speed one sequence sees at the requested batch (the slowest
    /// replica's): 1 ÷ time per output token.
    #[serde(default)]
    pub decode_tokens_per_s_per_sequence: Option<f64>,
    /// Sequences the plan holds at the requested context over all replicas
    /// (`max_batch × data_parallel`).
    #[serde(default)]
    pub max_concurrent_sequences: u64,
    /// What the tensor-parallel all-reduces run over (`NVLink 4.0`, `PCIe`);
    /// `None` without tensor parallelism.
    #[serde(default)]
    pub tensor_parallel_link: Option<String>,
    /// Prefill throughput over all replicas; `None` when a device's peak
    /// rate for the compute type is unknown.
    pub prefill_tokens_per_s: Option<f64>,
    /// Tensor-parallel communication per decode step, seconds (at link
    /// peak; `None` when the link bandwidth is unknown).
    pub tp_comm_seconds_per_step: Option<f64>,
    /// Pipeline hand-off bytes per decode step (activations between stages).
    pub pp_comm_bytes_per_step: u64,
    /// Tokens of KV cache one replica can hold after weights, the
    /// runtime's reserve and its activation workspace (what vLLM logs as
    /// "GPU KV cache size: N tokens"; the tightest device decides).
    #[serde(default)]
    pub kv_cache_capacity_tokens: Option<u64>,
    /// Under vLLM, for a model with linear-attention layers (Qwen3-Next,
    /// Qwen3.5): the blocks of the KV pool one GPU holds (vLLM's
    /// `num_blocks`; [`crate::plan::runtime::VllmHybridBlocks`]), which
    /// also bound the sequences it runs at once: from vLLM 0.20 a
    /// `max_num_seqs` above it does not start. `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_blocks: Option<u64>,
    /// Weights the runtime keeps in host memory beside the plan's devices,
    /// per replica: llama.cpp's token embedding when an accelerator holds
    /// the first stage (its input layer always stays on the CPU); 0 for
    /// other runtimes and host-CPU plans.
    #[serde(default)]
    pub host_weights_bytes: u64,
    /// MoE expert offload ([`plan_offload`] on a mixture-of-experts model):
    /// which layers keep their routed experts in host memory and the bytes
    /// on each side; `None` for every other plan.
    #[serde(default)]
    pub moe_offload: Option<MoeOffload>,
    /// Concurrent sequences per replica that the decode figures are for:
    /// the requested batch, or under a time-per-output-token target the
    /// most that meets it.
    #[serde(default = "one")]
    pub batch: u64,
    /// Time to first token, milliseconds, for one prompt of
    /// [`InferenceOptions::input_len`] tokens (default: the context) on an
    /// idle replica: the prompt over one replica's prefill rate at that
    /// length (the slowest replica). Queueing behind other requests'
    /// prefills is not included. `None` when the prefill rate is unknown.
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// Time per output token, milliseconds, at `batch` sequences per
    /// replica: 1000 ÷ the decode speed one sequence sees.
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    /// One request's latency, milliseconds, with
    /// [`InferenceOptions::output_len`]: time to first token + (output − 1)
    /// × the served time per output token (`served_tpot_ms`, the plain one
    /// at batch 1). `None` without an output length.
    #[serde(default)]
    pub request_latency_ms: Option<f64>,
    /// Mean time per output token, milliseconds, that `batch` requests see
    /// served together in a closed loop, each finished request replaced by
    /// a new one of [`InferenceOptions::input_len`] prompt tokens: the time
    /// per output token plus the other requests' prompts prefilled within
    /// the decode steps, or, under a runtime that prefills them in passes
    /// of their own (SGLang), those passes (`served_tpot`). Equal to
    /// `tpot_ms` at batch 1;
    /// `None` without an output length.
    #[serde(default)]
    pub served_tpot_ms: Option<f64>,
    /// Mean time to first token, milliseconds, that a request arriving in
    /// that closed loop sees once it runs steadily (`served_ttft`): the
    /// idle replica's `ttft_ms` plus the served decode steps it waits
    /// for (the step in progress when it arrives and, where the runtime
    /// puts prompts into the decode steps' batches, the step that carries
    /// its prompt beside the others' decodes). Equal to `ttft_ms` at batch
    /// 1; `None` without an output length. A benchmark's mean also holds
    /// its first burst of prompts (`closed_loop_ttft_ms`).
    #[serde(default)]
    pub served_ttft_ms: Option<f64>,
    /// Expert-parallel degree: the ranks a MoE layer's routed experts are
    /// spread over whole ([`InferenceOptions::expert_parallel`]): the
    /// tensor-parallel degree, or with vLLM TP × DP (its MoE layers span
    /// every data-parallel rank); 1 when experts are sliced by tensor
    /// parallelism or the model is dense.
    #[serde(default = "one_u32")]
    pub expert_parallel: u32,
}

impl Plan {
    /// Output tokens per second over all replicas that `batch` requests per
    /// replica deliver served as a closed loop: the decode total scaled by
    /// the plain over the served time per output token (each step also
    /// prefills the other requests' prompts). `None` where either time is
    /// unknown; the decode total at batch 1.
    pub fn served_tokens_per_s(&self) -> Option<f64> {
        let (t, s) = (self.tpot_ms?, self.served_tpot_ms?);
        (s > 0.0).then(|| self.decode_tokens_per_s.map(|d| d * t / s))?
    }
}

fn one_u32() -> u32 {
    1
}

fn one() -> u64 {
    1
}

/// The context a request plans at: `opts.context`, else prompt + output
/// when both lengths are given, else the model's maximum capped at
/// [`DEFAULT_CONTEXT`] (raised to the prompt when only a longer prompt
/// is given); at least 1.
pub(crate) fn requested_context(spec: &ModelSpec, opts: &InferenceOptions) -> u64 {
    opts.context
        .or_else(|| {
            opts.input_len
                .zip(opts.output_len)
                .map(|(i, o)| i.saturating_add(o))
        })
        .unwrap_or_else(|| {
            spec.max_context
                .unwrap_or(DEFAULT_CONTEXT)
                .min(DEFAULT_CONTEXT)
                .max(opts.input_len.unwrap_or(0))
        })
        .max(1)
}

/// Time to first token, time per output token and one request's latency
/// (all milliseconds) from one replica's prefill rate at the prompt length
/// and the decode speed one sequence sees. `own_pass` is whether the
/// runtime prefills arriving prompts in passes of their own
/// ([`super::runtime::Runtime::prompts_between_decode_steps`]).
pub(crate) fn latencies(
    prefill_one_replica: Option<f64>,
    per_sequence: Option<f64>,
    prompt: u64,
    output_len: Option<u64>,
    request_s: f64,
    batch: u64,
    own_pass: bool,
) -> Latencies {
    let ttft = prefill_one_replica
        .filter(|&r| r > 0.0)
        .map(|r| (prompt as f64 / r + request_s) * 1000.0);
    let tpot = per_sequence.filter(|&r| r > 0.0).map(|r| 1000.0 / r);
    let pass_s = own_pass.then_some(request_s);
    let served = served_tpot(tpot, prefill_one_replica, batch, prompt, output_len, pass_s);
    let served_ttft = output_len.and_then(|_| served_ttft(ttft, served, batch, own_pass));
    // The request waits for its first token as the loop serves it, then
    // each later token at the TPOT its batch serves (both the idle and
    // plain ones at batch 1).
    let latency = output_len.and_then(|n| {
        served_ttft
            .zip(served)
            .map(|(f, t)| f + n.saturating_sub(1) as f64 * t)
    });
    Latencies {
        ttft_ms: ttft,
        tpot_ms: tpot,
        request_latency_ms: latency,
        served_tpot_ms: served,
        served_ttft_ms: served_ttft,
    }
}

/// Mean time to first token, ms, over a closed-loop serving benchmark of
/// `requests` requests sent by `clients` clients at once (`vllm bench
/// serve` or `sglang.bench_serving` with `--max-concurrency clients`),
/// planned by `plan` (made with `opts`, whose `input_len` is the mean
/// prompt), `prompt_tokens_per_pass` the runtime's prompt budget per
/// forward pass (`runtime::prompt_tokens_per_pass`). Per replica:
///
/// - The first burst: the requests admitted at once (the clients, at most
///   the sequences the plan's KV cache holds, `plan.max_batch`) arrive
///   together on an idle replica, whose passes take their prompts in
///   order, `prompt_tokens_per_pass` tokens each; a request's first token
///   comes at the end of the pass that finishes its prompt, at the plan's
///   prompt rate (its idle TTFT less the runtime's fixed seconds per
///   request, which every request also waits). The decode steps of the
///   requests already started are left out.
/// - Every later request: the steady loop's [`Plan::served_ttft_ms`], and
///   where more clients wait than the plan's KV cache holds, the wait for a
///   slot: by Little's law a closed loop of `C` clients over `H` slots,
///   each request holding one for the request's latency `L`, queues each
///   request `(C − H) ÷ H × L`.
///
/// `None` where the plan has no time to first token (no prefill rate) or,
/// with more clients than its batch, no request latency.
pub fn closed_loop_ttft_ms(
    plan: &Plan,
    opts: &InferenceOptions,
    prompt_tokens_per_pass: u64,
    clients: u64,
    requests: u64,
) -> Option<f64> {
    let replicas = u64::from(plan.data_parallel.max(1));
    let clients = clients.div_ceil(replicas).max(1);
    let requests = requests.div_ceil(replicas).max(1);
    let prompt = opts.input_len.unwrap_or(1).max(1);
    let idle = plan.ttft_ms?;
    let steady = plan.served_ttft_ms.unwrap_or(idle);
    let fixed_ms = super::speed::request_seconds(opts, plan.tensor_parallel) * 1000.0;
    let per_token_ms = (idle - fixed_ms).max(0.0) / prompt as f64;
    let held = plan.max_batch.max(1).min(clients);
    let burst = held.min(requests);
    let pass = prompt_tokens_per_pass.max(1);
    let all = burst.saturating_mul(prompt);
    // Request i's prompt ends at token i × prompt, its pass at the next
    // multiple of the budget (the last pass holds what is left). Past
    // 65,536 requests the mean of a uniform spread over the passes.
    let burst_sum: f64 = if burst <= 1 << 16 {
        (1..=burst)
            .map(|i| {
                let done = i
                    .saturating_mul(prompt)
                    .div_ceil(pass)
                    .saturating_mul(pass)
                    .min(all);
                fixed_ms + done as f64 * per_token_ms
            })
            .sum()
    } else {
        burst as f64 * (fixed_ms + (all + pass.min(all)) as f64 / 2.0 * per_token_ms)
    };
    let wait = if clients > held {
        (clients - held) as f64 / held as f64 * plan.request_latency_ms?
    } else {
        0.0
    };
    let later = (requests - burst) as f64 * (steady + wait);
    Some((burst_sum + later) / requests as f64)
}

/// A plan's latency figures, milliseconds ([`latencies`]; the [`Plan`]
/// fields of the same names).
pub(crate) struct Latencies {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub request_latency_ms: Option<f64>,
    pub served_tpot_ms: Option<f64>,
    pub served_ttft_ms: Option<f64>,
}

/// Served decode steps a request arriving in a closed loop waits before
/// its first token beyond an idle replica's time to first token, where the
/// runtime puts arriving prompts into the decode steps' own batches (vLLM,
/// llama.cpp, TensorRT-LLM): the step in progress when it arrives (in a
/// closed loop a request is sent as another finishes, at the end of a
/// step, so it arrives just after the next one began and waits almost all
/// of it), then the step that carries its prompt, which also decodes the
/// other `batch − 1` requests. A runtime that prefills the arrived prompts
/// in a pass of their own (SGLang) waits only for the step in progress:
/// [`SERVED_TTFT_STEPS_OWN_PASS`].
pub const SERVED_TTFT_STEPS_MIXED: f64 = 2.0;
/// See [`SERVED_TTFT_STEPS_MIXED`].
pub const SERVED_TTFT_STEPS_OWN_PASS: f64 = 1.0;

/// Mean time to first token, ms, of a request arriving in a closed loop of
/// `batch` requests once it runs steadily: the idle replica's `ttft_ms`
/// plus [`SERVED_TTFT_STEPS_MIXED`] (or, with `own_pass`,
/// [`SERVED_TTFT_STEPS_OWN_PASS`]) steps at the served time per output
/// token. `ttft_ms` at batch 1 (no other request: the replica is idle when
/// it arrives).
pub(crate) fn served_ttft(
    ttft_ms: Option<f64>,
    served_tpot_ms: Option<f64>,
    batch: u64,
    own_pass: bool,
) -> Option<f64> {
    let ttft = ttft_ms?;
    if batch <= 1 {
        return Some(ttft);
    }
    let steps = if own_pass {
        SERVED_TTFT_STEPS_OWN_PASS
    } else {
        SERVED_TTFT_STEPS_MIXED
    };
    Some(ttft + steps * served_tpot_ms?)
}

/// Whether the plan's runtime prefills arriving prompts in passes of their
/// own between decode steps ([`super::runtime::Runtime::prompts_between_decode_steps`])
/// and is not told to mix them (`InferenceOptions::mixed_prefill`).
pub fn prompts_in_own_passes(opts: &InferenceOptions) -> bool {
    super::runtime::runtime(opts.runtime).prompts_between_decode_steps() && !opts.mixed_prefill
}

/// Mean time per output token, ms, of `batch` requests served together in
/// a closed loop (each finished request replaced by a new one, as a serving
/// benchmark at `--max-concurrency batch` runs): the time per output token
/// at that batch (`tpot_ms`) plus the prompts of the other requests, which
/// arrive while a request decodes. In the steady state `batch − 1` others
/// each start once per `output` of its decode steps, so `λ = (batch − 1) ÷
/// output` prompts arrive per step and every step also carries `λ ×
/// prompt` prompt tokens, at the replica's prefill rate: vLLM's chunked
/// prefill puts them in the decode steps' own batches and SGLang runs them
/// between decode steps, and either way the decode waits for them (the
/// "generation stalls" of Agrawal et al., "Taming Throughput-Latency
/// Tradeoff in LLM Inference with Sarathi-Serve", OSDI 2024,
/// arXiv:2403.02310).
///
/// A runtime that runs the arrived prompts as a pass of their own
/// (`pass_s`: SGLang) also waits for that pass's fixed part, the seconds a
/// request's first token takes beyond its prompt's prefill
/// ([`super::speed::request_seconds`]: scheduling and a forward over every
/// layer, fitted on single-request TTFT), once per step in which at least
/// one prompt arrives: with arrivals spread as a Poisson process, a
/// fraction `1 − e^(−λ)` of the steps (the prompts arriving within one
/// step share one pass). `tpot_ms` at batch 1; `None` without an output
/// length or, above batch 1, a prefill rate.
pub(crate) fn served_tpot(
    tpot_ms: Option<f64>,
    prefill_one_replica: Option<f64>,
    batch: u64,
    prompt: u64,
    output_len: Option<u64>,
    pass_s: Option<f64>,
) -> Option<f64> {
    let tpot = tpot_ms?;
    let out = output_len.filter(|&o| o > 0)?;
    if batch <= 1 {
        return Some(tpot);
    }
    let rate = prefill_one_replica.filter(|&r| r > 0.0)?;
    let arrivals = (batch - 1) as f64 / out as f64;
    let prompt_tokens_per_step = arrivals * prompt as f64;
    let passes = pass_s.map_or(0.0, |s| (1.0 - (-arrivals).exp()) * s);
    Some(tpot + (prompt_tokens_per_step / rate + passes) * 1000.0)
}

/// A layout that was considered and rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rejected {
    /// Tensor-parallel degree.
    pub tensor_parallel: u32,
    /// Pipeline stages.
    pub pipeline_parallel: u32,
    /// Why.
    pub reason: String,
}

/// The planner's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InferencePlan {
    /// Model name.
    pub model: String,
    /// Model parameters.
    pub parameters: u64,
    /// Parameters per token.
    pub active_parameters: u64,
    /// Whether the architecture is approximate (a bare size).
    pub approximate: bool,
    /// The model is an encoder (an embedding model): no KV cache, no
    /// decode; `prefill_tokens_per_s` is its encoding rate.
    #[serde(default)]
    pub encoder: bool,
    /// The model compresses its KV cache into a latent (multi-head latent
    /// attention: DeepSeek-V2/V3, Kimi K2), which some runtimes size
    /// buffers by (SGLang's prefill CUDA-graph reserve).
    #[serde(default)]
    pub latent_attention: bool,
    /// The image encoder of a multimodal checkpoint, where the model has
    /// one (not in the plans' weights): SGLang lowers its default memory
    /// fraction by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multimodal_encoder: Option<crate::plan::arch::MultimodalEncoder>,
    /// Devices planned for.
    pub devices: Vec<PlanDevice>,
    /// Context planned for.
    pub context: u64,
    /// Batch per replica planned for.
    pub batch: u64,
    /// Whether any plan fits at the chosen quantization.
    pub feasible: bool,
    /// Highest-fidelity level that fits and every device runs.
    pub suggested_quantization: Option<Quant>,
    /// Level the plans use.
    pub quantization: Quant,
    /// KV cache type.
    pub kv_dtype: KvDtype,
    /// Whose memory rule the plans follow.
    #[serde(default)]
    pub runtime: RuntimeKind,
    /// Feasible plans, best first.
    pub plans: Vec<Plan>,
    /// Feasible plans found before truncating to `max_plans`.
    pub feasible_plans: usize,
    /// Rejected layouts with reasons (at most 20).
    pub rejected: Vec<Rejected>,
    /// When nothing fits: what would.
    pub advice: Vec<String>,
    /// Things to know (unknown device facts, approximations).
    pub warnings: Vec<String>,
    /// The month of the runtime build the fitted decode speeds are for:
    /// `options.runtime_build` within the builds the calibration rows
    /// measure on the [`basis_device`]'s vendor, else the newest of them; `None` where no build-date
    /// term applies (other runtimes, host CPUs, uncalibrated speeds).
    #[serde(default)]
    pub speed_build: Option<super::speed::BuildMonth>,
    /// The month of the build whose per-layer decode time the
    /// [`basis_device`] takes instead, where llama.cpp runs it without CUDA
    /// graphs (an NVIDIA GPU below compute capability 8.0:
    /// [`super::speed::without_cuda_graphs`]): the month before graphs
    /// (2024-04), or `runtime_build` if older; `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_build_without_cuda_graphs: Option<super::speed::BuildMonth>,
    /// The fraction of memory bandwidth decode reads the KV cache at on
    /// the [`basis_device`]: `options.kv_read_efficiency`, else the runtime's
    /// fitted one for its attention (`speed::KV_READ`); `None` where
    /// neither applies (the decode fraction reads the cache).
    #[serde(default)]
    pub kv_read_efficiency: Option<f64>,
    /// For a model with linear-attention layers: the fraction of memory
    /// bandwidth at which decode reads and rewrites their recurrent state
    /// on the [`basis_device`], the runtime's fitted one
    /// (`speed::LINEAR_STATE`); `None` for other models, uncalibrated
    /// speeds and runtimes without a fit (the KV cache's fraction moves
    /// the state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_state_efficiency: Option<f64>,
    /// Where the [`basis_device`]'s fitted decode and prefill fractions
    /// come from (its class's cell or the pool of every GPU class, the rows
    /// behind it, its own factor); `None` with uncalibrated speeds.
    #[serde(default)]
    pub speed_basis: Option<SpeedBasis>,
    /// The efficiencies and reserve used.
    pub options: InferenceOptions,
}

/// Where a plan's fitted speed fractions come from ([`InferencePlan::speed_basis`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpeedBasis {
    /// The decode fraction of memory bandwidth (`None`: no cell fitted, the
    /// options' `decode_efficiency` applies).
    pub decode: Option<super::speed::FitBasis>,
    /// The prefill fraction of the matrix rate (`None`: no cell fitted, the
    /// options' `prefill_efficiency` applies).
    pub prefill: Option<super::speed::FitBasis>,
    /// For a mixture-of-experts model: the fitted factor on its routed
    /// experts' prefill time on the [`basis_device`] (`None` for a dense model
    /// or where none is fitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_prefill: Option<MoePrefillBasis>,
    /// The served time per output token (`Plan::served_tpot_ms`) against
    /// the runtime's published closed-loop serving benchmarks
    /// (`speed::SERVING_ACCURACY`, serving.csv; compared, never fitted);
    /// `None` for a runtime without such runs (llama.cpp, the generic
    /// rule) or SGLang told to mix its prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_tpot: Option<super::speed::Accuracy>,
    /// The closed-loop mean time to first token
    /// (`inference::closed_loop_ttft_ms`, built on `Plan::served_ttft_ms`)
    /// against the same runs' printed means
    /// (`speed::SERVING_TTFT_ACCURACY`); `None` where `served_tpot` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_ttft: Option<super::speed::Accuracy>,
}

/// The factor a plan puts on a mixture of experts' routed prefill GEMMs
/// ([`SpeedBasis::moe_prefill`]; `plan::speed`, "Mixture-of-experts
/// prefill").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MoePrefillBasis {
    /// The factor on the routed experts' share of the prefill time.
    pub factor: f64,
    /// The llama.cpp backend it was fitted for
    /// (`speed::MOE_PREFILL_BACKEND`); `None`: the runtime's factor over
    /// all its rows (`speed::MOE_PREFILL`).
    pub backend: Option<super::runtime::GgmlBackend>,
}

/// Per-(model, quantization, TP degree) sizes of one rank, with prefix sums
/// over layers so a stage's bytes cost O(1).
struct Sizer<'a> {
    spec: &'a ModelSpec,
    tp: u32,
    /// Prefix sums of weight bytes per layer.
    weight_prefix: Vec<f64>,
    /// Prefix sums of weight bytes read per decode step (routed experts
    /// scaled to the fraction the batch touches).
    read_prefix: Vec<f64>,
    /// Prefix sums of active parameters (for prefill FLOPs) on one rank.
    active_prefix: Vec<f64>,
    /// Prefix sums of the routed experts' active parameters per token (the
    /// part of `active_prefix` that runs as per-expert GEMMs).
    routed_prefix: Vec<f64>,
    /// Prefix sums of routed-expert weight bytes alone, stored and read per
    /// decode step (what MoE expert offload moves to host memory).
    expert_prefix: Vec<f64>,
    expert_read_prefix: Vec<f64>,
    /// Prefix counts of sliding-window layers.
    sliding_prefix: Vec<u32>,
    /// llama.cpp's micro-batch where its rule sizes the sliding-window
    /// cache (see [`Sizer::sliding_cells`]); `None`: the window alone.
    sliding_ubatch: Option<u64>,
    /// Prefix counts of linear-attention layers.
    linear_prefix: Vec<u32>,
    /// Fixed state bytes one sequence holds per linear layer on one rank.
    linear_state_bytes: f64,
    /// Linear-attention convolution-window and recurrent-state elements
    /// per layer and sequence on one rank.
    linear_conv_elements: f64,
    linear_ssm_elements: f64,
    /// KV elements per token per layer on one rank.
    kv_per_layer: f64,
    unq: f64,
    embed_first: f64,
    /// What the last stage reads per decode step beyond its layers: the
    /// output head (the embedding matrix itself when they are tied and one
    /// stage holds both) and the final norm.
    head_read_last: f64,
    /// The head is stored as the embedding (tied, one stage).
    head_last_is_tied: bool,
    head_last: f64,
    kv_bytes: f64,
}

impl<'a> Sizer<'a> {
    fn new(
        spec: &'a ModelSpec,
        quant: Quant,
        kv: KvDtype,
        tp: u32,
        pp: u32,
        batch: u64,
        scale: f64,
    ) -> Self {
        Self::with_expert_ranks(spec, quant, kv, tp, pp, batch, scale, tp)
    }

    /// As [`Sizer::new`], with the routed experts spread over
    /// `expert_ranks` ranks (vLLM's expert parallelism over TP × DP ranks)
    /// instead of the TP group.
    #[allow(clippy::too_many_arguments)]
    fn with_expert_ranks(
        spec: &'a ModelSpec,
        quant: Quant,
        kv: KvDtype,
        tp: u32,
        pp: u32,
        batch: u64,
        scale: f64,
        expert_ranks: u32,
    ) -> Self {
        let t = f64::from(tp);
        let te = f64::from(expert_ranks.max(tp));
        let q = spec.level_bits(quant) / 8.0 * scale;
        let unq = quant.unquantized_bytes() * scale;
        // GGUF levels are llama.cpp's mixes (`GgufMix`): norms in F32,
        // the embedding at the base type, the head and some attn_v /
        // ffn_down / attn_output tensors at more bits.
        let facts = super::quant::GgufFacts::of(spec);
        let gguf = super::quant::GgufMix::of(quant, &facts);
        let norm_bytes = if gguf.is_some() { 4.0 * scale } else { unq };
        let gated = spec.mlp == super::arch::MlpKind::Gated;
        let kv_share = if spec.mla.is_some() {
            1.0
        } else {
            f64::from(spec.kv_heads_per_rank(tp)) / f64::from(spec.num_kv_heads)
        };
        // Expected fraction of E experts a batch of B tokens touches with
        // uniform top-k routing: 1 − (1 − k/E)^B. Experts spread over the
        // ranks of several replicas take every replica's tokens.
        let routed = batch.max(1) * u64::from((expert_ranks / tp.max(1)).max(1));
        let touched = spec.moe.as_ref().map_or(1.0, |m| {
            let p = f64::from(m.experts_per_token) / f64::from(m.num_experts);
            1.0 - (1.0 - p).powf(routed as f64)
        });
        let n = spec.num_layers as usize;
        let kept = spec.unquantized_by_layer();
        let mut weight_prefix = Vec::with_capacity(n + 1);
        let mut read_prefix = Vec::with_capacity(n + 1);
        let mut active_prefix = Vec::with_capacity(n + 1);
        let mut routed_prefix = vec![0.0];
        let mut sliding_prefix = Vec::with_capacity(n + 1);
        let mut linear_prefix = Vec::with_capacity(n + 1);
        let mut lin = 0u32;
        linear_prefix.push(lin);
        let mut expert_prefix = vec![0.0];
        let mut expert_read_prefix = vec![0.0];
        let (mut w, mut r, mut a, mut s) = (0.0, 0.0, 0.0, 0u32);
        weight_prefix.push(w);
        read_prefix.push(r);
        active_prefix.push(a);
        sliding_prefix.push(s);
        for i in 0..spec.num_layers {
            let p = spec.layer_params(i);
            let split = (p.attention_sharded + p.mlp) as f64 / t;
            let experts = p.experts as f64 / te;
            let other = p.attention_kv as f64 * kv_share + p.attention_replicated as f64;
            // A checkpoint that keeps attention at 16 bits
            // (`ModelSpec::attention_unquantized`): those projections at
            // the unquantized bytes, the rest at the level's.
            let attention_extra = if spec.attention_unquantized && q < unq {
                (p.attention_sharded as f64 / t + other) * (unq - q)
            } else {
                0.0
            };
            // Single layers' projections kept at 16 bits
            // (`ModelSpec::unquantized_layers`), split as their groups are.
            // A GGUF level is llama.cpp's own mix of the original weights.
            let (layer_extra, experts_extra) = if q < unq && gguf.is_none() {
                let u = spec.projection_params(&p, kept[i as usize]);
                let attention = if spec.attention_unquantized {
                    0.0
                } else {
                    u.attention_sharded / t + u.attention_kv * kv_share + u.attention_replicated
                };
                (
                    (attention + u.mlp / t) * (unq - q),
                    u.experts / te * (unq - q),
                )
            } else {
                (0.0, 0.0)
            };
            let (mut fixed, mut expert_bytes) = (
                (split + other) * q
                    + attention_extra
                    + layer_extra
                    + p.replicated as f64 * norm_bytes,
                experts * q + experts_extra,
            );
            if gguf.is_some() {
                let lb = super::quant::GgufMix::layer_bits(quant, i, &facts);
                let base = quant.bits_per_weight();
                // ffn_down is a third of a gated MLP (gate, up, down) and
                // half of a plain one (up, down); the rest is gate and up.
                let down = |m: u64| m as f64 / if gated { 3.0 } else { 2.0 };
                let extra = |m: u64| {
                    down(m) * (lb.down - base) + (m as f64 - down(m)) * (lb.gate_up - base)
                };
                // attn_k and attn_v share the KV projections; attn_q and
                // attn_output make the sharded attention, as halves (biases
                // aside). A linear-attention layer has neither: its GGUF holds
                // q, k and v as one attn_qkv, which llama.cpp types as
                // attn_v (its other matrices keep the base type).
                let linear = spec
                    .linear_attention
                    .as_ref()
                    .filter(|_| spec.attention_kind(i) == AttentionKind::Linear);
                // With an output gate (Qwen3-Next, Qwen3.5) attn_q holds
                // the query and its gate, twice attn_output.
                let (kv_half, q, o) = if spec.mla.is_none() && linear.is_none() {
                    let thirds = if spec.attention_output_gate { 3.0 } else { 2.0 };
                    let o = p.attention_sharded as f64 / thirds / t;
                    (
                        p.attention_kv as f64 / 2.0 * kv_share,
                        p.attention_sharded as f64 / t - o,
                        o,
                    )
                } else {
                    (0.0, 0.0, 0.0)
                };
                if let Some(l) = linear {
                    fixed += (l.qkv_params(spec.hidden_size) as f64 * (lb.v - base)
                        + l.gguf_f32_params() as f64 * (32.0 - base))
                        / t
                        / 8.0
                        * scale;
                }
                // A fused attn_qkv (phi3) is typed as attn_v whole.
                let (q_bits, k_bits) = if facts.fused_qkv {
                    (lb.v, lb.v)
                } else {
                    (lb.q, lb.k)
                };
                fixed += (kv_half * (k_bits - base + lb.v - base)
                    + extra(p.mlp) / t
                    + q * (q_bits - base)
                    + o * (lb.output - base))
                    / 8.0
                    * scale;
                expert_bytes += extra(p.experts) / te / 8.0 * scale;
            }
            if let Some(m) = spec
                .moe
                .as_ref()
                .filter(|m| m.mxfp4_experts && spec.is_moe_layer(i))
            {
                // Experts published in MXFP4 are served as stored (vLLM
                // `Mxfp4MoEMethod`, llama.cpp `GGML_TYPE_MXFP4`): a level
                // with more bits never widens them. Their biases stay 16-bit.
                let h = spec.hidden_size;
                let inter = m.expert_intermediate_size;
                let bias_per_expert = match (spec.mlp_bias, gated) {
                    (false, _) => 0,
                    (true, true) => 2 * inter + h,
                    (true, false) => inter + h,
                };
                let bias = (u64::from(m.num_experts) * bias_per_expert) as f64 / te;
                let matrices = experts - bias;
                let mx = matrices * super::arch::MXFP4_BITS_PER_WEIGHT / 8.0 * scale + bias * unq;
                expert_bytes = expert_bytes.min(mx);
            }
            w += fixed + expert_bytes;
            r += fixed + expert_bytes * touched;
            expert_prefix.push(expert_prefix[i as usize] + expert_bytes);
            expert_read_prefix.push(expert_read_prefix[i as usize] + expert_bytes * touched);
            a += split + other + p.replicated as f64 + p.experts_active as f64 / t;
            routed_prefix.push(routed_prefix[i as usize] + p.experts_active as f64 / t);
            match spec.attention_kind(i) {
                AttentionKind::Sliding => s += 1,
                AttentionKind::Linear => lin += 1,
                AttentionKind::Global => {}
            }
            linear_prefix.push(lin);
            weight_prefix.push(w);
            read_prefix.push(r);
            active_prefix.push(a);
            sliding_prefix.push(s);
        }
        let h = spec.hidden_size as f64;
        let embed_unit = gguf.map_or(unq, |g| g.embedding_bits / 8.0 * scale);
        let head_unit = gguf.map_or(unq, |g| g.output_bits / 8.0 * scale);
        let embed_first = (spec.embedding_params() as f64 / t
            + spec.extra_embedding_rows() as f64 * h)
            * embed_unit;
        // An encoder has no output head (ModelSpec::encoder).
        let head = if (spec.tied_embeddings && pp == 1) || spec.encoder {
            0.0
        } else {
            (spec.vocab_size * spec.hidden_size) as f64 / t
        };
        // The final norm, and an encoder's pooler.
        let final_norm =
            (spec.other_params() - spec.extra_embedding_rows() * spec.hidden_size) as f64;
        Sizer {
            spec,
            tp,
            weight_prefix,
            read_prefix,
            active_prefix,
            routed_prefix,
            expert_prefix,
            expert_read_prefix,
            sliding_prefix,
            sliding_ubatch: None,
            linear_prefix,
            // The recurrent state at the width the config asks for
            // (Qwen3.5: fp32), else the model's; the convolution window at
            // the model's.
            linear_state_bytes: spec.linear_attention.as_ref().map_or(0.0, |l| {
                let ssm = match l.ssm_state_dtype.as_deref() {
                    Some("fp32") => 4.0,
                    Some("bf16" | "fp16") => 2.0,
                    _ => unq,
                };
                (l.conv_state_elements() as f64 * unq + l.ssm_state_elements() as f64 * ssm) / t
            }),
            linear_conv_elements: spec
                .linear_attention
                .as_ref()
                .map_or(0.0, |l| l.conv_state_elements() as f64 / t),
            linear_ssm_elements: spec
                .linear_attention
                .as_ref()
                .map_or(0.0, |l| l.ssm_state_elements() as f64 / t),
            kv_per_layer: spec.kv_elements_per_token_layer() as f64 * kv_share,
            unq,
            embed_first,
            head_last: head * head_unit + final_norm * norm_bytes,
            head_last_is_tied: spec.tied_embeddings && pp == 1 && !spec.encoder,
            // Tied and on one stage: stored once (as the embedding), but the
            // head still reads the whole matrix every step.
            head_read_last: if spec.tied_embeddings && pp == 1 && !spec.encoder {
                (spec.vocab_size * spec.hidden_size) as f64 / t * embed_unit
            } else {
                head * head_unit
            } + final_norm * norm_bytes,
            kv_bytes: kv.bytes(),
        }
    }

    fn weights(&self, a: u32, b: u32, first: bool, last: bool) -> f64 {
        self.weight_prefix[b as usize] - self.weight_prefix[a as usize]
            + if first { self.embed_first } else { 0.0 }
            + if last { self.head_last } else { 0.0 }
    }

    /// [`Self::weights`] on `device` under `runtime`: llama.cpp keeps the
    /// input layer (the token embedding) in host memory whatever `-ngl`
    /// says (`llama-model.cpp`, `load_tensors`: the input layer's device is
    /// the CPU, "very little benefit to offloading the input layer"), so an
    /// accelerator holding the first stage does not hold it. A tied output
    /// head is a duplicate of that matrix on the output's device, so the
    /// accelerator keeps its size then.
    fn device_weights(
        &self,
        a: u32,
        b: u32,
        first: bool,
        last: bool,
        device: &PlanDevice,
        runtime: RuntimeKind,
    ) -> f64 {
        let w = self.weights(a, b, first, last);
        if runtime == RuntimeKind::LlamaCpp && first && !device.host && !self.head_tied_here(last) {
            w - self.embed_first
        } else {
            w
        }
    }

    /// What the runtime keeps in host memory when `first_device` holds the
    /// first stage (`single_stage`: it is also the last): llama.cpp's token
    /// embedding, whole (every tensor-parallel share), beside an accelerator.
    fn host_weights(
        &self,
        first_device: &PlanDevice,
        single_stage: bool,
        runtime: RuntimeKind,
    ) -> u64 {
        let kept = self.weights(0, 0, true, single_stage)
            - self.device_weights(0, 0, true, single_stage, first_device, runtime);
        (kept * f64::from(self.tp)).ceil() as u64
    }

    /// Whether the output head is the embedding matrix itself on this
    /// stage (tied embeddings, one stage holding both).
    fn head_tied_here(&self, last: bool) -> bool {
        last && self.spec.tied_embeddings && self.head_last_is_tied
    }

    fn weights_read(&self, a: u32, b: u32, first: bool, last: bool) -> f64 {
        self.read_prefix[b as usize] - self.read_prefix[a as usize]
            // The embedding is a lookup: one row per token, negligible.
            + if first { self.embed_first / self.spec.vocab_size as f64 } else { 0.0 }
            + if last { self.head_read_last } else { 0.0 }
    }

    /// The KV cache (and linear-attention state) `batch` sequences of
    /// `context` tokens hold in layers `a..b`: a sliding-window layer the
    /// cells its runtime gives it ([`Sizer::sliding_cells`]).
    fn kv(&self, a: u32, b: u32, context: u64, batch: u64) -> f64 {
        self.kv_cells(a, b, context, batch, self.sliding_cells(context))
    }

    /// The KV a decode step attends to: a sliding-window layer's window
    /// (at most the context), whatever room the runtime's cache has beyond
    /// it (the measure the decode fractions were fitted with).
    fn kv_attended(&self, a: u32, b: u32, context: u64, batch: u64) -> f64 {
        let window = self
            .spec
            .sliding_window
            .as_ref()
            .map_or(context, |w| w.window.min(context));
        self.kv_cells(a, b, context, batch, window)
    }

    fn kv_cells(&self, a: u32, b: u32, context: u64, batch: u64, window: u64) -> f64 {
        let sliding = self.sliding_prefix[b as usize] - self.sliding_prefix[a as usize];
        let linear = self.linear_prefix[b as usize] - self.linear_prefix[a as usize];
        let global = (b - a) - sliding - linear;
        let tokens = f64::from(global) * context as f64 + f64::from(sliding) * window as f64;
        tokens * self.kv_per_layer * batch as f64 * self.kv_bytes + self.linear_state(a, b, batch)
    }

    /// Cells a sliding-window layer caches for one sequence of `context`
    /// tokens: the window (at most the context), or under llama.cpp
    /// `GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256)`: room for a
    /// micro-batch beyond the window, padded to 256 cells
    /// (`llama_kv_cache_iswa`, src/llama-kv-cache-iswa.cpp of the llama.cpp
    /// vendored in llama-cpp-python 0.3.36, one stream per sequence as
    /// `-np` runs them; a real llama-server run of a gemma2 test model:
    /// window 256, `-ub 512`, 768 cells).
    fn sliding_cells(&self, context: u64) -> u64 {
        match (&self.spec.sliding_window, self.sliding_ubatch) {
            (None, _) => context,
            (Some(w), None) => w.window.min(context),
            (Some(w), Some(ub)) => w
                .window
                .saturating_add(ub)
                .min(context)
                .div_ceil(256)
                .saturating_mul(256),
        }
    }

    /// The sizes as `runtime` holds them. Linear-attention state:
    /// llama.cpp keeps both the convolution window and the recurrent state
    /// in F32 whatever the weights' width (`llama_memory_recurrent` with
    /// `recurrent_type_r`/`recurrent_type_s` = `GGML_TYPE_F32`,
    /// `llama_model::create_memory` in src/llama-model.cpp); SGLang the
    /// recurrent state in its `--mamba-ssm-dtype`, float32 by default
    /// (`server_args.py`), the window at the model's width; vLLM as the
    /// config asks (`mamba_ssm_dtype`, which `mamba_ssm_cache_dtype=auto`
    /// follows for Qwen3.5, `model_executor/models/config.py`), else the
    /// model's width.
    fn for_runtime(mut self, runtime: RuntimeKind) -> Self {
        match runtime {
            RuntimeKind::LlamaCpp => {
                self.linear_state_bytes =
                    (self.linear_conv_elements + self.linear_ssm_elements) * 4.0;
                self.sliding_ubatch = Some(super::runtime::LLAMA_CPP_N_UBATCH);
            }
            RuntimeKind::Sglang => {
                self.linear_state_bytes =
                    self.linear_conv_elements * self.unq + self.linear_ssm_elements * 4.0;
            }
            _ => {}
        }
        self
    }

    /// [`Sizer::for_runtime`] with the plan's options: llama.cpp's
    /// sliding-window cells at its micro-batch ([`InferenceOptions::ubatch`]).
    fn for_options(self, opts: &InferenceOptions) -> Self {
        let mut s = self.for_runtime(opts.runtime);
        if s.sliding_ubatch.is_some() {
            s.sliding_ubatch = Some(super::runtime::llamacpp::n_ubatch(opts));
        }
        s
    }

    /// Fixed linear-attention state of `batch` sequences in layers `a..b`.
    fn linear_state(&self, a: u32, b: u32, batch: u64) -> f64 {
        let linear = self.linear_prefix[b as usize] - self.linear_prefix[a as usize];
        f64::from(linear) * self.linear_state_bytes * batch as f64
    }

    fn activations(&self, context: u64, batch: u64, chunk: u64, last: bool) -> f64 {
        let s = self.spec;
        let t = f64::from(self.tp);
        // An encoder's bidirectional attention needs each input whole in
        // one forward pass, and it encodes its batch together: no chunked
        // prefill bounds its tokens.
        let tokens = if s.encoder {
            batch.saturating_mul(context).max(1) as f64
        } else {
            chunk.min(batch.saturating_mul(context)).max(1) as f64
        };
        let h = s.hidden_size as f64;
        let qkv = match &s.mla {
            Some(m) => {
                f64::from(s.num_attention_heads)
                    * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) as f64
                    / t
                    + (m.kv_lora_rank + m.qk_rope_head_dim) as f64
            }
            None => {
                (f64::from(s.num_attention_heads)
                    + 2.0 * f64::from(s.kv_heads_per_rank(self.tp)) * t)
                    * s.head_dim as f64
                    / t
            }
        };
        let dense = 3.0 * s.intermediate_size as f64 / t;
        let moe = s.moe.as_ref().map_or(0.0, |m| {
            let shared = f64::from(m.shared_experts)
                * m.shared_expert_intermediate_size
                    .unwrap_or(m.expert_intermediate_size) as f64;
            3.0 * (f64::from(m.experts_per_token) * m.expert_intermediate_size as f64 + shared) / t
        });
        let act_bytes = if self.unq >= 4.0 { 4.0 } else { 2.0 };
        let layer = tokens * (4.0 * h + qkv.max(dense).max(moe)) * act_bytes;
        // An encoder returns hidden states (pooled or per token), no logits.
        let logits = if last && !s.encoder {
            batch.max(1) as f64 * s.vocab_size as f64 / t * 4.0
        } else {
            0.0
        };
        layer + logits
    }

    /// The routed experts' share of [`Sizer::flops_per_token`]: FLOPs per
    /// token of their GEMMs on one rank of the stage.
    fn routed_flops_per_token(&self, a: u32, b: u32) -> f64 {
        2.0 * (self.routed_prefix[b as usize] - self.routed_prefix[a as usize])
    }

    /// FLOPs per token on one rank of the stage.
    fn flops_per_token(&self, a: u32, b: u32, context: u64, last: bool) -> f64 {
        let s = self.spec;
        let active = self.active_prefix[b as usize] - self.active_prefix[a as usize]
            + if last && !s.encoder {
                (s.vocab_size * s.hidden_size) as f64 / f64::from(self.tp)
            } else {
                0.0
            };
        let d_attn = match &s.mla {
            Some(m) => {
                f64::from(s.num_attention_heads) * (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64
            }
            None => f64::from(s.num_attention_heads) * s.head_dim as f64,
        };
        2.0 * active + 2.0 * f64::from(b - a) * context as f64 * d_attn / f64::from(self.tp)
    }
}

/// FLOPs per prompt token of the whole model on one device at a mean
/// attention context, and the routed experts' part of them (0 for a dense
/// model): what the prefill estimate divides by the matrix rate
/// (`tests/accuracy.rs` and `scripts/fit-speed.py` fit the routed part's
/// own factor, [`crate::plan::speed::MOE_PREFILL`]).
pub fn prefill_flops_per_token(spec: &ModelSpec, mean_context: u64) -> (f64, f64) {
    let sizer = Sizer::new(spec, Quant::Bf16, KvDtype::Bf16, 1, 1, 1, 1.0);
    let layers = spec.num_layers;
    (
        sizer.flops_per_token(0, layers, mean_context, true),
        sizer.routed_flops_per_token(0, layers),
    )
}

/// MoE expert offload (llama.cpp `--n-cpu-moe`): see [`moe_offload`].
mod moe_offload;
pub use moe_offload::MoeOffload;

/// Partial offload over several GPUs: see [`layer_offload`].
mod layer_offload;
pub use layer_offload::plan_offload_gpus;

/// A pipeline of TP groups: one replica.
struct Replica<'d> {
    stages: Vec<Vec<&'d PlanDevice>>,
    /// Ranks the routed experts are spread over (the TP group, or with
    /// vLLM's expert parallelism every TP × DP rank).
    expert_ranks: u32,
}

struct StageLayout {
    layers: Vec<(u32, u32)>,
}

/// Split layers over stages in proportion to the memory each stage has for
/// them (capacity × utilization minus what only it holds: embedding, head,
/// activations); every stage gets at least one layer. `None` when the
/// stages have no room at all.
fn split_layers(
    sizer: &Sizer,
    replica: &Replica,
    opts: &InferenceOptions,
    context: u64,
) -> Option<StageLayout> {
    let stages: Vec<(u64, &PlanDevice)> = replica
        .stages
        .iter()
        .map(|g| {
            let d = g
                .iter()
                .min_by_key(|d| d.capacity_bytes.unwrap_or(0))
                .copied()?;
            Some((d.capacity_bytes.unwrap_or(0), d))
        })
        .collect::<Option<Vec<_>>>()?;
    let n = stages.len() as u32;
    let layers = sizer.spec.num_layers;
    if n == 0 || n > layers {
        return None;
    }
    let on_accelerators = stages.iter().all(|(_, d)| !d.host);
    let room: Vec<f64> = stages
        .iter()
        .enumerate()
        .map(|(k, &(cap, d))| {
            let first = k == 0;
            let last = k + 1 == stages.len();
            let fixed_weights = sizer.device_weights(0, 0, first, last, d, opts.runtime);
            let m = runtime_memory(
                sizer,
                d,
                cap,
                (n, on_accelerators),
                last,
                fixed_weights,
                opts,
                context,
                opts.batch,
            );
            (cap as f64 - m.reserve_bytes as f64 - m.activation_bytes as f64 - fixed_weights)
                .max(0.0)
        })
        .collect();
    let total: f64 = room.iter().sum();
    let mut counts: Vec<u32> = if total <= 0.0 {
        vec![layers / n; n as usize]
    } else {
        room.iter()
            .map(|r| ((r / total) * f64::from(layers)).floor() as u32)
            .collect()
    };
    // Largest remainders get the leftover layers; no stage stays empty.
    for c in &mut counts {
        *c = (*c).max(1);
    }
    while counts.iter().sum::<u32>() > layers {
        let k = (0..counts.len())
            .filter(|&k| counts[k] > 1)
            .max_by(|&a, &b| counts[a].cmp(&counts[b]))?;
        counts[k] -= 1;
    }
    while counts.iter().sum::<u32>() < layers {
        let share = |k: usize| {
            if total <= 0.0 {
                -(counts[k] as f64)
            } else {
                room[k] / total * f64::from(layers) - f64::from(counts[k])
            }
        };
        let k = (0..counts.len()).max_by(|&a, &b| share(a).total_cmp(&share(b)))?;
        counts[k] += 1;
    }
    let mut start = 0;
    let layers = counts
        .iter()
        .map(|&c| {
            let r = (start, start + c);
            start += c;
            r
        })
        .collect();
    Some(StageLayout { layers })
}

/// Memory of each device of a replica at (context, batch); `None` when a
/// device's capacity is unknown.
fn replica_memory(
    sizer: &Sizer,
    replica: &Replica,
    layout: &StageLayout,
    opts: &InferenceOptions,
    context: u64,
    batch: u64,
) -> Vec<(u64, u64, u64, u64, u64)> {
    let n = replica.stages.len();
    let on_accelerators = replica.stages.iter().flatten().all(|d| !d.host);
    let mut out = Vec::new();
    for (k, group) in replica.stages.iter().enumerate() {
        let (a, b) = layout.layers[k];
        let first = k == 0;
        let last = k + 1 == n;
        for d in group {
            let cap = d.capacity_bytes.unwrap_or(0);
            let wf = sizer.device_weights(a, b, first, last, d, opts.runtime)
                + if first {
                    served_encoder_bytes(sizer.spec, sizer.tp, opts)
                } else {
                    0.0
                };
            let w = wf.ceil() as u64;
            let kv = sizer.kv(a, b, context, batch).ceil() as u64;
            let m = runtime_memory(
                sizer,
                d,
                cap,
                (n as u32, on_accelerators),
                last,
                wf,
                opts,
                context,
                batch,
            );
            out.push((w, kv, m.activation_bytes, m.reserve_bytes, cap));
        }
    }
    out
}

/// The image encoder a serving runtime loads beside the text model, per
/// rank of the first stage: vLLM and SGLang load a multimodal checkpoint
/// whole (Gemma 3's SigLIP, Llama 4's encoder, Qwen3.5's vision
/// transformer, where the spec describes it), and split the encoder's
/// layers over tensor-parallel ranks (vLLM 0.8.5 and 0.33.0 `siglip.py`:
/// QKVParallelLinear, Column- and RowParallelLinear; SGLang 0.5.23
/// `siglip.py` the same), and Qwen3.5's merger too (`qwen3_vl.py` of both),
/// the embeddings and other projectors whole on each
/// ([`crate::plan::arch::VisionTower::tp_split_params`]). At 16 bits, as checkpoints store it. Not
/// for llama.cpp (the encoder is a separate mmproj file) or a checkpoint
/// read from its files (its stored bytes hold the encoder already).
fn served_encoder_bytes(spec: &ModelSpec, tp: u32, opts: &InferenceOptions) -> f64 {
    if !matches!(opts.runtime, RuntimeKind::Vllm | RuntimeKind::Sglang)
        || opts.stored_weights.is_some()
    {
        return 0.0;
    }
    spec.vision.as_ref().map_or(0.0, |v| {
        let split = v.tp_split_params(spec.hidden_size) as f64;
        let whole = v.params(spec.hidden_size) as f64 - split;
        (split / f64::from(tp.max(1)) + whole) * 2.0
    })
}

/// The runtime's reserve and activation workspace on one device.
/// `stages`: the layout's pipeline stages and whether all of them are
/// accelerators (no host-CPU stage or host-kept tensors).
#[allow(clippy::too_many_arguments)]
fn runtime_memory(
    sizer: &Sizer,
    device: &PlanDevice,
    cap: u64,
    stages: (u32, bool),
    last: bool,
    weights: f64,
    opts: &InferenceOptions,
    context: u64,
    batch: u64,
) -> super::runtime::RuntimeMemory {
    let (stages, stages_on_accelerators) = stages;
    let ctx = DeviceContext {
        device,
        capacity_bytes: cap,
        tensor_parallel: sizer.tp,
        pipeline_parallel: stages,
        last_stage: last,
        vocab_size: sizer.spec.vocab_size,
        weights_bytes: weights.ceil() as u64,
        spec: sizer.spec,
        context,
        sequences: batch.max(1),
        stages_on_accelerators,
    };
    let forward = |tokens: u64| sizer.activations(context, batch, tokens, last).ceil() as u64;
    runtime(opts.runtime).memory(&ctx, opts, &forward)
}

fn replica_fits(
    sizer: &Sizer,
    replica: &Replica,
    layout: &StageLayout,
    opts: &InferenceOptions,
    context: u64,
    batch: u64,
) -> bool {
    replica_memory(sizer, replica, layout, opts, context, batch)
        .iter()
        .all(|&(w, kv, act, over, cap)| {
            w.saturating_add(kv)
                .saturating_add(act)
                .saturating_add(over)
                <= cap
        })
}

/// Every pipeline degree up to this many is tried; past it, only powers of
/// two and divisors of the layer count (the degrees that split layers evenly,
/// which deployments use: Megatron-LM and vLLM configurations pick them).
/// Trying every degree up to the number of device groups made planning a
/// 10T-parameter model (3,136 layers) on 4,096 devices take minutes (issue
/// 14); this keeps the search to O(log) degrees past the first few.
pub const EXHAUSTIVE_PIPELINE_DEGREES: u32 = 16;

/// The pipeline degrees tried when up to `max_pp` stages are possible.
fn pipeline_degrees(max_pp: u32, layers: u32) -> Vec<u32> {
    (1..=max_pp)
        .filter(|&pp| pp <= EXHAUSTIVE_PIPELINE_DEGREES || pp.is_power_of_two() || layers % pp == 0)
        .collect()
}

/// Largest `x` in `1..=hi` with `ok(x)`, assuming monotonicity; 0 if none.
fn largest(hi: u64, ok: impl Fn(u64) -> bool) -> u64 {
    if hi == 0 || !ok(1) {
        return 0;
    }
    let (mut lo, mut hi) = (1u64, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) { lo = mid } else { hi = mid - 1 }
    }
    lo
}

/// Ring all-reduce time for `bytes` over `tp` ranks: each rank sends
/// `2(tp−1)/tp × bytes` (Patarasuk & Yuan 2009; NCCL's bus-bandwidth
/// definition) at the per-direction link bandwidth (half the quoted
/// bidirectional figure).
fn allreduce_seconds(bytes: f64, tp: u32, link_bidirectional: f64) -> f64 {
    if tp <= 1 {
        return 0.0;
    }
    let t = f64::from(tp);
    2.0 * (t - 1.0) / t * bytes / (link_bidirectional / 2.0)
}

/// Seconds one all-reduce takes beyond its bytes (the α of the α-β cost
/// model) over a scale-up link (NVLink, NVSwitch): the median, 4.9 µs, of
/// the 48 measurements of messages of at most 16 KiB (a decode step's
/// activations up to batch 1 at hidden size 8192) in NVIDIA's
/// aiconfigurator tables of vLLM 0.14.0's custom all-reduce under CUDA
/// graphs on 2, 4 and 8 A100 SXM and H100 SXM GPUs
/// (`tests/calibration/allreduce.csv`, which the `allreduce_latency_is_the_measured_median`
/// test recomputes it from): 4.3 to 14.8 µs, flat in the message size up
/// to 16 KiB and in the GPU count. Other vendors' scale-up links (AMD's
/// Infinity Fabric, Gaudi's RoCE, TPU ICI) take it too, for want of
/// measurements of their own.
pub const ALLREDUCE_LATENCY_SCALE_UP_S: f64 = 4.9e-6;

/// Seconds one all-reduce over PCIe takes beyond its bytes per further
/// rank (α = this × (TP − 1)): the median, 5.4 µs, of the per-rank
/// latency of the 21 measurements of messages of at most 16 KiB in
/// NVIDIA's aiconfigurator table of NCCL 2.27.3 all-reduces (fp16) on 2, 4
/// and 8 L40S GPUs, which have no NVLink (`tests/calibration/allreduce.csv`):
/// 6.0-9.1 µs at TP 2, 12-20 µs at TP 4, 23-90 µs at TP 8. Larger
/// messages on that machine ran far below the nominal PCIe bandwidth (a
/// 1 MiB all-reduce at TP 8 took 2.6 ms); that is its topology's and is
/// not modelled: the bytes go at the link's bandwidth.
pub const ALLREDUCE_LATENCY_PCIE_RANK_S: f64 = 5.4e-6;

/// The fixed time of one all-reduce over `tp` ranks
/// ([`ALLREDUCE_LATENCY_SCALE_UP_S`], [`ALLREDUCE_LATENCY_PCIE_RANK_S`]).
pub fn allreduce_latency(tp: u32, over_pcie: bool) -> f64 {
    match tp {
        0 | 1 => 0.0,
        _ if over_pcie => f64::from(tp - 1) * ALLREDUCE_LATENCY_PCIE_RANK_S,
        _ => ALLREDUCE_LATENCY_SCALE_UP_S,
    }
}

#[derive(Clone)]
struct Evaluated {
    plan_devices: Vec<DeviceMemory>,
    max_context: u64,
    max_batch: u64,
    decode: Option<f64>,
    prefill: Option<f64>,
    tp_comm: Option<f64>,
    tp_link: Option<String>,
    pp_bytes: u64,
    kv_tokens: Option<u64>,
    /// vLLM's hybrid KV pool in blocks per GPU ([`Plan::kv_cache_blocks`]).
    kv_blocks: Option<u64>,
    /// Weights the runtime keeps in host memory beside the devices.
    host_weights: u64,
}

/// A replica's memory, context, batch and speeds, with the stages' layers
/// given (`None`: split by memory room).
#[allow(clippy::too_many_arguments)]
fn evaluate_replica_with(
    spec: &ModelSpec,
    replica: &Replica,
    quant: Quant,
    kv: KvDtype,
    opts: &InferenceOptions,
    context: u64,
    scale: f64,
    replica_index: u32,
    layout: Option<StageLayout>,
) -> Result<Evaluated, String> {
    let sizer = replica_sizer(spec, replica, quant, kv, opts, scale);
    evaluate_sized(
        spec,
        &sizer,
        replica,
        (quant, kv),
        opts,
        context,
        scale,
        replica_index,
        layout,
    )
}

/// The type `quant`'s matrix multiplies run in on `devices`
/// ([`Quant::compute_dtype`], `half` for weight-only formats), but FP4 for a
/// W4A4 MXFP4 checkpoint where the runtime has FP4 GEMMs for it on every
/// one of them ([`super::speed::mxfp4_activations_run_fp4`]).
fn matrix_dtype<'d>(
    spec: &ModelSpec,
    quant: Quant,
    half: Dtype,
    runtime: RuntimeKind,
    devices: impl IntoIterator<Item = &'d PlanDevice>,
) -> Dtype {
    if quant == Quant::Mxfp4
        && devices
            .into_iter()
            .all(|d| super::speed::mxfp4_activations_run_fp4(spec, d, runtime))
    {
        Dtype::Fp4
    } else {
        quant.compute_dtype(half)
    }
}

/// The [`Sizer`] of `replica`'s shape (TP degree, stages, expert ranks) at
/// the options' batch: every replica of one layout shares it.
fn replica_sizer<'a>(
    spec: &'a ModelSpec,
    replica: &Replica,
    quant: Quant,
    kv: KvDtype,
    opts: &InferenceOptions,
    scale: f64,
) -> Sizer<'a> {
    Sizer::with_expert_ranks(
        spec,
        quant,
        kv,
        replica.stages[0].len() as u32,
        replica.stages.len() as u32,
        opts.batch,
        scale,
        replica.expert_ranks,
    )
    .for_options(opts)
}

/// [`evaluate_replica_with`] with the replica's [`Sizer`] given
/// ([`replica_sizer`]).
#[allow(clippy::too_many_arguments)]
fn evaluate_sized(
    spec: &ModelSpec,
    sizer: &Sizer,
    replica: &Replica,
    (quant, kv): (Quant, KvDtype),
    opts: &InferenceOptions,
    context: u64,
    scale: f64,
    replica_index: u32,
    layout: Option<StageLayout>,
) -> Result<Evaluated, String> {
    let tp = replica.stages[0].len() as u32;
    let pp = replica.stages.len() as u32;
    let layout = match layout {
        Some(l) => l,
        None => split_layers(sizer, replica, opts, context).ok_or("more stages than layers")?,
    };
    let mem = replica_memory(sizer, replica, &layout, opts, context, opts.batch);
    // KV cells the replica holds: per device, the memory left after
    // weights, reserve and workspace over the KV bytes one token takes on
    // that device's layers; the tightest device decides.
    let mut kv_tokens: Option<u64> = None;
    {
        let mut idx = 0;
        for (k, group) in replica.stages.iter().enumerate() {
            let (a, b) = layout.layers[k];
            // Token cells only: the linear layers' fixed state is held per
            // sequence, whatever the context.
            let state = sizer.linear_state(a, b, opts.batch).ceil() as u64;
            let per_token = sizer.kv(a, b, 1, 1) - sizer.linear_state(a, b, 1);
            for _ in group {
                let (w, _, act, over, cap) = mem[idx];
                idx += 1;
                if per_token > 0.0 {
                    let free = cap
                        .saturating_sub(w)
                        .saturating_sub(act)
                        .saturating_sub(over)
                        .saturating_sub(state);
                    let t = (free as f64 / per_token).floor() as u64;
                    kv_tokens = Some(kv_tokens.map_or(t, |x| x.min(t)));
                }
            }
        }
    }
    let mut per_device = Vec::new();
    let mut idx = 0;
    let mut worst: Option<(String, u64, u64)> = None;
    for (k, group) in replica.stages.iter().enumerate() {
        for d in group {
            let (w, kvb, act, over, cap) = mem[idx];
            idx += 1;
            let total = w
                .saturating_add(kvb)
                .saturating_add(act)
                .saturating_add(over);
            if total > cap && worst.as_ref().is_none_or(|(_, t, c)| total - cap > t - c) {
                worst = Some((d.id.clone(), total, cap));
            }
            per_device.push(DeviceMemory {
                device: d.id.clone(),
                replica: replica_index,
                stage: k as u32,
                layers: layout.layers[k],
                weights_bytes: w,
                kv_cache_bytes: kvb,
                activation_bytes: act,
                overhead_bytes: over,
                total_bytes: total,
                capacity_bytes: cap,
                fits: total <= cap,
            });
        }
    }
    if let Some((id, total, cap)) = worst {
        return Err(format!(
            "{id} needs {} but has {}",
            human_bytes(total),
            human_bytes(cap)
        ));
    }
    // The KV memory of the tightest device: what it has left after the
    // weights, the runtime's reserve and its workspace.
    let kv_memory = mem
        .iter()
        .map(|&(w, _, act, over, cap)| {
            cap.saturating_sub(w)
                .saturating_sub(act)
                .saturating_sub(over)
        })
        .min()
        .unwrap_or(0);
    // vLLM holds a hybrid model's KV cache as a pool of blocks (see
    // `VllmHybridBlocks`): its own token count, longest request and
    // concurrency follow from the pool, whose pages are padded and whose
    // linear layers hold whole blocks per request. Over pipeline stages
    // the pool has the fewest blocks any stage holds, each stage's block
    // spanning its share of the model's groups (`stage_blocks`).
    let stage_blocks = |per_block: &dyn Fn(u32, u32) -> u64| {
        let mut idx = 0;
        let mut blocks = u64::MAX;
        for (k, group) in replica.stages.iter().enumerate() {
            let free = group
                .iter()
                .map(|_| {
                    let (w, _, act, over, cap) = mem[idx];
                    idx += 1;
                    cap.saturating_sub(w)
                        .saturating_sub(act)
                        .saturating_sub(over)
                })
                .min()
                .unwrap_or(0);
            let (a, b) = layout.layers[k];
            if let Some(n) = free.checked_div(per_block(a, b)) {
                blocks = blocks.min(n);
            }
        }
        if blocks == u64::MAX { 0 } else { blocks }
    };
    let hybrid = if opts.runtime == RuntimeKind::Vllm {
        let d0 = &replica.stages[0][0];
        let cc = d0
            .spec_id
            .as_deref()
            .and_then(crate::spec::by_id)
            .and_then(super::speed::nvidia_compute_capability);
        let key_dim = spec.linear_attention.as_ref().map_or(0, |l| l.key_head_dim);
        super::runtime::VllmHybridBlocks::new(
            spec,
            tp,
            kv.bytes(),
            quant.unquantized_bytes(),
            super::runtime::VllmHybridMode::pinned(cc, key_dim),
        )
        .map(|h| {
            let blocks = if pp == 1 {
                h.num_blocks(kv_memory)
            } else {
                stage_blocks(&|a, b| h.stage_bytes_per_block(spec, a, b))
            };
            (h, blocks)
        })
    } else {
        None
    };
    if let Some((h, blocks)) = hybrid {
        kv_tokens = Some(h.capacity_tokens(blocks, context));
    }
    // Likewise a model with sliding-window layers beside full-attention
    // ones (`VllmSlidingBlocks`): its sliding groups hold the window and
    // the tokens in flight, the full groups the whole request. Over
    // pipeline stages each stage's block spans its own layers of the
    // model's groups, and the pool has the fewest blocks any stage holds.
    let sliding = if opts.runtime == RuntimeKind::Vllm && hybrid.is_none() {
        let d0 = &replica.stages[0][0];
        let visible = super::runtime::cuda_visible_bytes(
            d0.spec_id.as_deref(),
            d0.capacity_bytes.unwrap_or(0),
        );
        let batched = opts
            .max_num_batched_tokens
            .unwrap_or_else(|| super::runtime::vllm_batch_defaults(visible, &d0.name).0);
        super::runtime::VllmSlidingBlocks::new(spec, tp, kv.bytes(), batched, None).map(|s| {
            let blocks = if pp == 1 {
                s.num_blocks(kv_memory)
            } else {
                stage_blocks(&|a, b| s.stage_bytes_per_block(spec, a, b))
            };
            (s, blocks)
        })
    } else {
        None
    };
    if let Some((s, blocks)) = sliding {
        kv_tokens = Some(s.capacity_tokens(blocks, context));
    }
    // SGLang shares a hybrid model's pool between state slots and tokens
    // (`SglangHybridSplit`, the pinned release's rule), one stage only.
    let sglang_split = if opts.runtime == RuntimeKind::Sglang && pp == 1 {
        let (a, b) = layout.layers[0];
        let state = sizer.linear_state(a, b, 1).ceil() as u64;
        let per_token = (sizer.kv(a, b, 1, 1) - sizer.linear_state(a, b, 1)).ceil() as u64;
        super::runtime::SglangHybridSplit::new(
            kv_memory,
            state,
            per_token,
            super::runtime::SglangRelease::V0_5_23,
        )
    } else {
        None
    };
    if let Some(split) = sglang_split {
        kv_tokens = Some(split.tokens);
    }
    let ctx_cap = spec.max_context.unwrap_or(1 << 24).max(context);
    let max_context = largest(ctx_cap, |c| {
        replica_fits(sizer, replica, &layout, opts, c, 1)
    })
    .min(spec.max_context.unwrap_or(u64::MAX))
    .min(hybrid.map_or(u64::MAX, |(h, blocks)| h.max_tokens(blocks)))
    .min(sliding.map_or(u64::MAX, |(s, blocks)| s.max_tokens(blocks)))
    .min(sglang_split.map_or(u64::MAX, |s| s.tokens));
    // vLLM schedules at most `max_num_seqs` sequences per replica however
    // many its KV cache would hold.
    let scheduler_cap = match opts.runtime {
        super::runtime::RuntimeKind::Vllm => opts.max_num_seqs.unwrap_or(u64::MAX),
        _ => u64::MAX,
    };
    let max_batch = largest(1 << 20, |b| {
        replica_fits(sizer, replica, &layout, opts, context, b)
    })
    .min(scheduler_cap)
    .min(hybrid.map_or(u64::MAX, |(h, blocks)| h.max_requests(blocks, context)))
    .min(sliding.map_or(u64::MAX, |(s, blocks)| s.max_requests(blocks, context)))
    .min(sglang_split.map_or(u64::MAX, |s| s.max_running.min(s.tokens / context.max(1))));

    // Decode: per stage, the slowest device's bytes ÷ effective bandwidth,
    // plus TP all-reduces (two per layer of batch × h 16-bit activations).
    let act_bytes = opts.batch as f64 * spec.hidden_size as f64 * 2.0;
    let mut decode_s = Some(0.0);
    let mut comm = Some(0.0);
    let mut prefill_s = Some(0.0);
    let mut stage_prefill: Vec<Option<f64>> = Vec::new();
    let half = if quant == Quant::Fp16 {
        Dtype::Fp16
    } else {
        Dtype::Bf16
    };
    let compute = matrix_dtype(
        spec,
        quant,
        half,
        opts.runtime,
        replica.stages.iter().flatten().copied(),
    );
    for (k, group) in replica.stages.iter().enumerate() {
        let (a, b) = layout.layers[k];
        let first = k == 0;
        let last = k + 1 == replica.stages.len();
        let weight_bytes = sizer.weights_read(a, b, first, last);
        // The linear-attention layers' recurrent state apart from the KV
        // cache: every decode step reads and rewrites all of it
        // ([`linear_state_seconds`]).
        let state_bytes = sizer.linear_state(a, b, opts.batch);
        let kv_bytes = sizer.kv_attended(a, b, context, opts.batch) - state_bytes;
        let slowest_bw = group
            .iter()
            .map(|d| d.bandwidth_bytes_per_s)
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().min());
        let (link, link_name) = tp_link(group);
        // Each of a step's all-reduces waits its fixed latency too (at
        // batch 1 most of its time: 16 KiB at hidden size 8192).
        let alpha = allreduce_latency(tp, link_name == "PCIe");
        let stage_comm = if tp > 1 {
            link.map(|l| {
                2.0 * f64::from(b - a) * (allreduce_seconds(act_bytes, tp, l as f64) + alpha)
            })
        } else {
            Some(0.0)
        };
        comm = comm.zip(stage_comm).map(|(x, y)| x + y);
        // Achieved fractions: fitted per device class, runtime and format
        // (plan::speed) unless overridden; the matrix rate is the one the
        // runtime's kernels run at (plan::speed::reference_tflops).
        let fit = if opts.calibrated_speed {
            fitted_under(group[0], opts, quant)
        } else {
            super::speed::Applied::NONE
        };
        let dec_eff = fit.decode.unwrap_or(opts.decode_efficiency);
        let pre_eff = fit.prefill.unwrap_or(opts.prefill_efficiency);
        let layers = f64::from(b - a);
        // Without CUDA graphs: the per-layer time of eager launches where
        // the planner has one (`speed::eager_decode_layer_s`).
        let layer_s = if opts.calibrated_speed && opts.eager {
            super::speed::eager_decode_layer_s(
                group[0],
                opts.runtime,
                quant,
                opts.backend,
                opts.runtime_build,
                tp,
            )
            .unwrap_or(fit.decode_layer_s)
        } else {
            fit.decode_layer_s
        };
        let rate = group
            .iter()
            .map(|d| {
                // Weight-only (vLLM's Marlin): the matrices multiply in 16 bits.
                let c = if marlin(quant, d, opts.runtime) {
                    half
                } else {
                    compute
                };
                prompt_rate_under(d, opts, quant, c)
            })
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().min_by(f64::total_cmp));
        // A decode step reads the stage's weights once for the whole batch
        // and runs every sequence's GEMM FLOPs: the slower of the two bounds
        // the GEMMs (the roofline; Williams, Waterman and Patterson,
        // "Roofline", CACM 52(4), 2009), or under vLLM, SGLang and
        // TensorRT-LLM above one sequence their sum
        // (`speed::decode_gemms_overlap`), the FLOPs at the rate and fraction
        // a prompt's GEMMs reach. Attention is its own kernels after them:
        // each sequence's KV cache read at the runtime's fitted fraction of
        // the bandwidth for it (`kv_read`; the decode fraction where none is
        // fitted), or its FLOPs where those take longer. At batch 1 and a
        // short context the weights' bytes dominate; at a serving batch of
        // hundreds the GEMMs' FLOPs and the sequences' caches do. Without a
        // rate, the bytes alone.
        let batch = opts.batch as f64;
        let gemm_flops = sizer.flops_per_token(a, b, 0, last)
            + (fit.moe_prefill - 1.0) * sizer.routed_flops_per_token(a, b);
        let attn_flops =
            sizer.flops_per_token(a, b, context, last) - sizer.flops_per_token(a, b, 0, last);
        let at_rate = |f: f64| rate.map_or(0.0, |r| batch * f / (r * 1e12 * pre_eff));
        let kv_eff = opts
            .kv_read_efficiency
            .or_else(|| {
                opts.calibrated_speed
                    .then(|| {
                        super::speed::kv_read(
                            opts.runtime,
                            super::speed::DeviceClass::of(group[0]),
                            opts.fused_attention,
                        )
                    })
                    .flatten()
            })
            .unwrap_or(dec_eff);
        decode_s = decode_s
            .zip(slowest_bw)
            .zip(stage_comm)
            .map(|((t, bw), c)| {
                let bw = bw as f64;
                let weights = weight_bytes / (bw * dec_eff);
                let gemms = if super::speed::decode_gemms_overlap(opts.runtime, opts.batch) {
                    weights.max(at_rate(gemm_flops))
                } else {
                    weights + at_rate(gemm_flops)
                };
                t + gemms
                    + (kv_bytes / (bw * kv_eff)).max(at_rate(attn_flops))
                    + linear_state_seconds(state_bytes, bw, group[0], opts, kv_eff)
                    + layers * layer_s
                    + c
            });
        // Prefill of a prompt of the input length (the context when none
        // is given): each of its tokens attends to the tokens before it, half
        // the prompt on average; an encoder's tokens attend to the whole
        // input.
        let prompt = opts.input_len.unwrap_or(context);
        let mean_context = if spec.encoder { prompt } else { prompt / 2 };
        // A mixture of experts' routed GEMMs run at their own fitted
        // fraction of the rate (`moe_prefill`, see plan::speed).
        let flops = sizer.flops_per_token(a, b, mean_context, last)
            + (fit.moe_prefill - 1.0) * sizer.routed_flops_per_token(a, b);
        let scores = fit.score_seconds(
            opts.fused_attention,
            layers,
            f64::from(spec.num_attention_heads) / f64::from(tp),
            mean_context as f64,
            slowest_bw,
        );
        // Tensor parallelism all-reduces each layer's output twice for every
        // prompt token too (the same bytes per token as a decode step's, at
        // the stage's link): a prompt's all-reduces are large, so their time
        // is the bytes over the link, their fixed latency spread over the
        // chunk's tokens (a request's own wait under tensor parallelism is
        // `speed::request_seconds`). Unknown link, unknown speed, as in decode.
        let stage_prefill_comm = if tp > 1 {
            link.map(|l| {
                2.0 * layers * allreduce_seconds(spec.hidden_size as f64 * 2.0, tp, l as f64)
            })
        } else {
            Some(0.0)
        };
        // Each of llama.cpp's micro-batches reads every expert its tokens
        // route to (uniform top-k, as a decode step of that many sequences)
        // once, at the decode fraction of the bandwidth, spread over its
        // tokens: a mixture of experts' micro-batch of few tokens per
        // expert waits on these reads (`prompt_pass_weight_seconds`). The
        // serving engines put several requests' prompts in one pass, whose
        // size the single request's rate here does not know: not applied
        // to them yet.
        let llama_cpp_passes = super::speed::fit_runtime(opts.runtime) == RuntimeKind::LlamaCpp;
        let pass_weights = slowest_bw.filter(|_| llama_cpp_passes).map(|bw| {
            prompt_pass_weight_seconds(
                spec,
                (quant, kv),
                replica,
                (a, b),
                opts,
                (prompt, scale),
                bw as f64 * dec_eff,
            )
        });
        let stage = match op_offload_target(replica, group, opts, prompt) {
            // A host CPU's layers in llama.cpp's partial offload: the whole
            // ubatch's computation runs on the GPU (`op_offload_target`).
            Some(gpu) => op_offload_prefill(
                sizer,
                spec,
                gpu,
                opts,
                (quant, compute),
                (a, b),
                (prompt, mean_context),
            ),
            None => rate.zip(stage_prefill_comm).map(|(r, c)| {
                flops / (r * 1e12 * pre_eff)
                    + layers * fit.prefill_layer_s
                    + scores
                    + c
                    + pass_weights.unwrap_or(0.0)
            }),
        };
        stage_prefill.push(stage);
        prefill_s = prefill_s.zip(stage).map(|(t, st)| t + st);
    }
    // llama.cpp pipelines a prompt over a layer split: each logical batch
    // (`n_batch` tokens) is cut into micro-batches of `n_ubatch`, and while
    // one stage works on a micro-batch the next works on the one before
    // (`src/llama-context.cpp`: "pipeline parallelism enabled" when the
    // model is split by layers over several GPUs with every layer
    // offloaded; `ggml_backend_sched` keeps up to GGML_SCHED_MAX_COPIES = 4
    // micro-batches in flight, as many as a default batch holds). A batch
    // of `T` tokens in `m` micro-batches of `T / m` takes the slowest
    // stage for all `T` tokens plus the other stages for one micro-batch,
    // instead of every stage for all `T`. A prompt of at most `n_ubatch`
    // tokens, or one stage, gains nothing.
    if opts.runtime == RuntimeKind::LlamaCpp
        && stage_prefill.len() > 1
        && replica.stages.iter().flatten().all(|d| !d.host)
        && let Some(times) = stage_prefill.iter().copied().collect::<Option<Vec<f64>>>()
    {
        use super::runtime::llamacpp::{N_BATCH, n_ubatch};
        let prompt = opts.input_len.unwrap_or(context).max(1);
        let sum: f64 = times.iter().sum();
        let slowest = times.iter().copied().fold(0.0, f64::max);
        let mut total = 0.0;
        let mut left = prompt;
        while left > 0 {
            let t = left.min(N_BATCH);
            let m = t.div_ceil(n_ubatch(opts));
            total += slowest * t as f64 + (sum - slowest) * t as f64 / m as f64;
            left -= t;
        }
        prefill_s = Some(total / prompt as f64);
    }
    // llama.cpp reaches the GPUs of other machines over its RPC backend
    // (`plan::devices::PlanDevice::machine`): each machine beyond the one
    // running the server adds the time its round trips and activation
    // copies take, per decode step and per prompt token
    // ([`super::speed::rpc_seconds`], from published runs of one model on
    // one machine and, the same way, on several).
    if opts.runtime == RuntimeKind::LlamaCpp && opts.calibrated_speed {
        let mut machines: Vec<u32> = replica.stages.iter().flatten().map(|d| d.machine).collect();
        machines.sort_unstable();
        machines.dedup();
        let remote = machines.len().saturating_sub(1) as f64;
        if remote > 0.0 {
            let (step, token) = super::speed::rpc_seconds(opts.runtime);
            decode_s = decode_s.map(|t| t + remote * step);
            prefill_s = prefill_s.map(|t| t + remote * token);
        }
    }
    Ok(Evaluated {
        plan_devices: per_device,
        max_context,
        max_batch,
        // An encoder has no decode step: it encodes each input in one
        // forward pass, whose rate is `prefill`.
        decode: decode_s
            .filter(|&t| t > 0.0 && !spec.encoder)
            .map(|t| opts.batch as f64 / t),
        prefill: prefill_s.filter(|&t| t > 0.0).map(|t| 1.0 / t),
        tp_comm: comm,
        tp_link: (tp > 1).then(|| tp_link(&replica.stages[0]).1),
        pp_bytes: (u64::from(pp) - 1) * (act_bytes as u64),
        kv_tokens,
        kv_blocks: hybrid.map(|(_, b)| b),
        host_weights: sizer.host_weights(replica.stages[0][0], pp == 1, opts.runtime),
    })
}

/// Whether a device is a card that shares its host with other cards over
/// PCIe: its product has no scale-up link, or one joining at most a pair
/// (an NVLink bridge). Domains of boards (eight SXM GPUs on NVSwitch, a TPU
/// slice) are separate hosts in a device string, joined by the network, not
/// PCIe; a device without a spec entry comes from one host's registry.
fn pcie_card(d: &PlanDevice) -> bool {
    // A unified-memory system on a chip is a whole computer and a board of
    // a larger domain a host of its own (`devices::own_machine`): two of
    // them are joined by the network, never PCIe peers.
    d.spec_id
        .as_deref()
        .and_then(crate::spec::by_id)
        .is_none_or(|e| !super::devices::own_machine(e))
}

/// The link a tensor-parallel group's all-reduces run over, with its
/// bandwidth (both directions; the slowest member's): the scale-up link when
/// every member shares one domain and has one, else PCIe (through the host,
/// as NCCL and RCCL fall back to), whose bandwidth may be unknown.
fn tp_link(group: &[&PlanDevice]) -> (Option<u64>, String) {
    let one_domain = group.iter().all(|d| d.domain == group[0].domain);
    let scale_up = group
        .iter()
        .map(|d| d.link_bandwidth_bytes_per_s)
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().min());
    match (one_domain, scale_up, group[0].link.as_deref()) {
        (true, Some(bw), Some(name)) => (Some(bw), name.to_string()),
        _ => (
            group
                .iter()
                .map(|d| d.pcie_bandwidth_bytes_per_s)
                .collect::<Option<Vec<_>>>()
                .and_then(|v| v.into_iter().min()),
            "PCIe".to_string(),
        ),
    }
}

/// Format bytes as GiB with two decimals.
pub fn human_bytes(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Tensor-parallel groups of `tp` identical devices within one domain,
/// best (largest capacity) first. When no domain holds `tp` of a kind,
/// groups of PCIe cards ([`pcie_card`]) span domains over PCIe (four A100
/// PCIe cards joined in NVLink-bridged pairs run TP4 that way under vLLM),
/// with the communication cost of PCIe ([`tp_link`]).
fn tp_groups(devices: &[PlanDevice], tp: u32) -> Vec<Vec<&PlanDevice>> {
    let bucket = |same_domain: bool| {
        let mut buckets: Vec<Vec<&PlanDevice>> = Vec::new();
        for d in devices {
            match buckets
                .iter_mut()
                .find(|b| (!same_domain || b[0].domain == d.domain) && b[0].same_kind(d))
            {
                Some(b) => b.push(d),
                None => buckets.push(vec![d]),
            }
        }
        buckets
            .iter()
            .flat_map(|b| b.chunks_exact(tp as usize).map(<[_]>::to_vec))
            .collect::<Vec<Vec<&PlanDevice>>>()
    };
    let mut groups = bucket(true);
    if groups.is_empty() {
        groups = bucket(false)
            .into_iter()
            .filter(|g| g.iter().all(|d| pcie_card(d)))
            .collect();
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g[0].capacity_bytes.unwrap_or(0)));
    groups
}

struct LevelResult {
    plans: Vec<Plan>,
    rejected: Vec<Rejected>,
}

/// One layout of [`plan_level`]: `pp` consecutive TP groups per replica.
struct Layout<'a, 'd> {
    groups: &'a [Vec<&'d PlanDevice>],
    tp: u32,
    pp: u32,
    /// See [`Replica::expert_ranks`].
    expert_ranks: u32,
    quant: Quant,
    kv: KvDtype,
    context: u64,
    scale: f64,
}

/// Every replica the layout's groups make, evaluated at `opts.batch`
/// sequences each: the plan, or why the layout does not fit.
fn layout_plan(spec: &ModelSpec, l: &Layout, opts: &InferenceOptions) -> Result<Plan, String> {
    let (tp, pp, quant, kv, context) = (l.tp, l.pp, l.quant, l.kv, l.context);
    let dp_max = l.groups.len() / pp as usize;
    let mut per_device = Vec::new();
    let mut dp = 0u32;
    let mut first: Option<Evaluated> = None;
    let mut reason = None;
    let mut decode_sum = Some(0.0);
    let mut per_sequence: Option<Option<f64>> = None;
    let mut prefill_sum = Some(0.0);
    let mut prefill_slowest: Option<Option<f64>> = None;
    let mut max_ctx = u64::MAX;
    let mut max_batch = u64::MAX;
    // Every replica has the layout's shape: one sizer serves them all.
    let mut sizer = None;
    // A replica of the same devices as the first (their ids apart) fares
    // as the first did: its evaluation is the first's, renamed.
    let mut first_result: Option<Result<Evaluated, String>> = None;
    for r in 0..dp_max {
        let replica = Replica {
            stages: l.groups[r * pp as usize..(r + 1) * pp as usize].to_vec(),
            expert_ranks: l.expert_ranks,
        };
        let devices = || replica.stages.iter().flatten();
        let first_devices = l.groups[..pp as usize].iter().flatten();
        let result = match &first_result {
            Some(prev) if r > 0 && devices().zip(first_devices).all(|(a, b)| same_but_id(a, b)) => {
                prev.clone().map(|mut ev| {
                    for (m, d) in ev.plan_devices.iter_mut().zip(devices()) {
                        m.device.clone_from(&d.id);
                        m.replica = dp;
                    }
                    ev
                })
            }
            _ => {
                let sizer = sizer
                    .get_or_insert_with(|| replica_sizer(spec, &replica, quant, kv, opts, l.scale));
                evaluate_sized(
                    spec,
                    sizer,
                    &replica,
                    (quant, kv),
                    opts,
                    context,
                    l.scale,
                    dp,
                    None,
                )
            }
        };
        if r == 0 {
            first_result = Some(result.clone());
        }
        match result {
            Ok(ev) => {
                dp += 1;
                per_device.extend(ev.plan_devices.iter().cloned());
                decode_sum = decode_sum.zip(ev.decode).map(|(a, b)| a + b);
                let seq = ev.decode.map(|d| d / opts.batch.max(1) as f64);
                per_sequence = Some(match per_sequence {
                    None => seq,
                    Some(prev) => prev.zip(seq).map(|(a, b)| a.min(b)),
                });
                prefill_sum = prefill_sum.zip(ev.prefill).map(|(a, b)| a + b);
                prefill_slowest = Some(match prefill_slowest {
                    None => ev.prefill,
                    Some(prev) => prev.zip(ev.prefill).map(|(a, b)| a.min(b)),
                });
                max_ctx = max_ctx.min(ev.max_context);
                max_batch = max_batch.min(ev.max_batch);
                if first.is_none() {
                    first = Some(ev);
                }
            }
            Err(e) => {
                reason.get_or_insert(e);
            }
        }
    }
    let Some(ev) = first else {
        return Err(reason.unwrap_or_else(|| "no replica".into()));
    };
    // Experts sharded over every replica's ranks are all there only when
    // every replica runs.
    if l.expert_ranks > tp && dp as usize != dp_max {
        return Err(format!(
            "the experts are sharded over all {} ranks of {dp_max} replicas; only {dp} fit",
            l.expert_ranks
        ));
    }
    let per_sequence = per_sequence.flatten();
    let lat = latencies(
        prefill_slowest.flatten(),
        per_sequence,
        opts.input_len.unwrap_or(context),
        opts.output_len,
        super::speed::request_seconds(opts, tp),
        opts.batch,
        prompts_in_own_passes(opts),
    );
    Ok(Plan {
        tensor_parallel: tp,
        pipeline_parallel: pp,
        data_parallel: dp,
        devices_used: dp * tp * pp,
        quantization: quant,
        kv_dtype: kv,
        per_device,
        max_context_tokens: max_ctx,
        max_batch,
        decode_tokens_per_s: decode_sum,
        decode_tokens_per_s_per_sequence: per_sequence,
        max_concurrent_sequences: max_batch.saturating_mul(u64::from(dp)),
        tensor_parallel_link: ev.tp_link,
        prefill_tokens_per_s: prefill_sum,
        tp_comm_seconds_per_step: ev.tp_comm,
        pp_comm_bytes_per_step: ev.pp_bytes,
        kv_cache_capacity_tokens: ev.kv_tokens,
        kv_cache_blocks: ev.kv_blocks,
        host_weights_bytes: ev.host_weights,
        moe_offload: None,
        batch: opts.batch,
        ttft_ms: lat.ttft_ms,
        tpot_ms: lat.tpot_ms,
        request_latency_ms: lat.request_latency_ms,
        served_tpot_ms: lat.served_tpot_ms,
        served_ttft_ms: lat.served_ttft_ms,
        expert_parallel: if opts.expert_parallel && spec.moe.is_some() {
            l.expert_ranks
        } else {
            1
        },
    })
}

/// Two devices that differ in their ids alone.
fn same_but_id(a: &PlanDevice, b: &PlanDevice) -> bool {
    let unnamed = |d: &PlanDevice| PlanDevice {
        id: String::new(),
        ..d.clone()
    };
    unnamed(a) == unnamed(b)
}

/// Why a plan misses the latency targets, if it does.
fn missed_target(p: &Plan, opts: &InferenceOptions) -> Option<String> {
    let check = |what: &str, got: Option<f64>, target: Option<f64>, unknown: &str| {
        let target = target?;
        match got {
            None => Some(format!(
                "{what} unknown ({unknown}): the {target} ms target cannot be checked"
            )),
            Some(g) if g > target => Some(format!("{what} {g:.1} ms > the {target} ms target")),
            Some(_) => None,
        }
    };
    // With an output length the batch is a closed loop: a request that
    // arrives waits for the decode steps in progress (the served TTFT,
    // equal to the idle one at batch 1).
    let (ttft, what) = if opts.output_len.is_some() && p.batch > 1 {
        (
            p.served_ttft_ms,
            format!("time to first token served at batch {}", p.batch),
        )
    } else {
        (p.ttft_ms, "time to first token".to_string())
    };
    check(&what, ttft, opts.ttft_ms, "no prefill rate").or_else(|| {
        // With an output length the batch is a closed loop whose steps
        // also prefill the other requests' prompts: the TPOT its requests
        // see is the served one (equal to the plain one at batch 1).
        if opts.output_len.is_some() && p.batch > 1 {
            check(
                &format!("time per output token served at batch {}", p.batch),
                p.served_tpot_ms,
                opts.tpot_ms,
                "no decode or prefill rate",
            )
        } else {
            check(
                &format!("time per output token at batch {}", p.batch),
                p.tpot_ms,
                opts.tpot_ms,
                "no decode rate",
            )
        }
    })
}

/// [`layout_plan`] under latency targets: one sequence per replica must
/// meet them (else the layout is rejected with the figure that misses);
/// then the most sequences per replica that still meet the time per output
/// token (and, with an output length, the served time to first token) and fit (decode time per step grows with the sequences' KV
/// reads, so the largest such batch is found by bisection).
fn layout_under_targets(
    spec: &ModelSpec,
    l: &Layout,
    opts: &InferenceOptions,
) -> Result<Plan, String> {
    let at = |b: u64| {
        let o = InferenceOptions {
            batch: b,
            ..opts.clone()
        };
        layout_plan(spec, l, &o)
    };
    let one = at(1)?;
    if let Some(why) = missed_target(&one, opts) {
        return Err(why);
    }
    let ok = |p: &Result<Plan, String>| p.as_ref().is_ok_and(|p| missed_target(p, opts).is_none());
    let (mut good, mut lo, mut hi) = (one.clone(), 1u64, one.max_batch.max(1));
    if hi > 1 {
        let top = at(hi);
        if ok(&top) {
            return top;
        }
        // Invariant: `lo` meets the targets, `hi` does not.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let p = at(mid);
            if ok(&p) {
                lo = mid;
                good = p.expect("checked");
            } else {
                hi = mid;
            }
        }
    }
    Ok(good)
}

fn plan_level(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    quant: Quant,
    kv: KvDtype,
    opts: &InferenceOptions,
    context: u64,
) -> LevelResult {
    let mut plans = Vec::new();
    let mut rejected = Vec::new();
    let scale = match opts.stored_weights {
        Some((q, bytes)) if q == quant => {
            let s = Sizer::new(spec, quant, kv, 1, 1, 1, 1.0);
            let formula = s.weights(0, spec.num_layers, true, true);
            if formula > 0.0 {
                bytes as f64 / formula
            } else {
                1.0
            }
        }
        _ => 1.0,
    };
    for d in devices {
        if !runs(quant, d, opts.runtime) {
            rejected.push(Rejected {
                tensor_parallel: 0,
                pipeline_parallel: 0,
                reason: format!("{} ({}) does not run {quant} natively", d.id, d.name),
            });
            return LevelResult { plans, rejected };
        }
        if d.capacity_bytes.is_none() {
            rejected.push(Rejected {
                tensor_parallel: 0,
                pipeline_parallel: 0,
                reason: format!("{} ({}): memory size unknown", d.id, d.name),
            });
            return LevelResult { plans, rejected };
        }
    }
    let max_group = devices.len() as u32;
    for tp in 1..=max_group {
        // llama.cpp's tensor parallelism is `--split-mode tensor`, with its
        // own conditions (`llamacpp::tensor_split_allowed`).
        if tp > 1
            && opts.runtime == RuntimeKind::LlamaCpp
            && let Err(reason) = super::runtime::llamacpp::tensor_split_allowed(spec, kv, tp, opts)
        {
            rejected.push(Rejected {
                tensor_parallel: tp,
                pipeline_parallel: 0,
                reason,
            });
            continue;
        }
        if let Err(e) = spec.tensor_parallel_legal(tp) {
            if tp <= 8 || tp.is_power_of_two() {
                rejected.push(Rejected {
                    tensor_parallel: tp,
                    pipeline_parallel: 0,
                    reason: e,
                });
            }
            continue;
        }
        if opts.expert_parallel
            && let Some(m) = &spec.moe
            && m.num_experts % tp != 0
        {
            rejected.push(Rejected {
                tensor_parallel: tp,
                pipeline_parallel: 0,
                reason: format!(
                    "{} routed experts do not divide by expert-parallel degree {tp}",
                    m.num_experts
                ),
            });
            continue;
        }
        let groups = tp_groups(devices, tp);
        if groups.is_empty() {
            rejected.push(Rejected {
                tensor_parallel: tp,
                pipeline_parallel: 0,
                reason: format!("no {tp} identical devices"),
            });
            continue;
        }
        let max_pp = (groups.len() as u32).min(spec.num_layers);
        for pp in pipeline_degrees(max_pp, spec.num_layers) {
            // llama.cpp's tensor split puts every layer on its one meta
            // device: no pipeline beside it.
            if tp > 1 && pp > 1 && opts.runtime == RuntimeKind::LlamaCpp {
                rejected.push(Rejected {
                    tensor_parallel: tp,
                    pipeline_parallel: pp,
                    reason: "llama.cpp splits a model either by layers or by tensors (--split-mode tensor), not both".into(),
                });
                break;
            }
            // vLLM shards a MoE model's experts over every TP × DP rank:
            // with `--data-parallel-size` the fused-MoE layers flatten TP
            // across DP, sliced (TP = TP × DP) or, with
            // `--enable-expert-parallel`, whole (EP = TP × DP)
            // (`FusedMoEParallelConfig.make`,
            // vllm/model_executor/layers/fused_moe/config.py, vLLM 0.33.0).
            // Other runtimes keep the experts within the TP group.
            let dp_ranks = (groups.len() / pp as usize) as u32;
            let expert_ranks = if spec.moe.is_some() && opts.runtime == RuntimeKind::Vllm {
                tp * dp_ranks.max(1)
            } else {
                tp
            };
            let layout = Layout {
                groups: &groups,
                tp,
                pp,
                expert_ranks,
                quant,
                kv,
                context,
                scale,
            };
            let result = if opts.has_targets() {
                layout_under_targets(spec, &layout, opts)
            } else {
                layout_plan(spec, &layout, opts)
            };
            match result {
                Ok(plan) => plans.push(plan),
                Err(reason) => rejected.push(Rejected {
                    tensor_parallel: tp,
                    pipeline_parallel: pp,
                    reason,
                }),
            }
        }
    }
    // Speeds are compared in steps of 1 %: closer than that they are the
    // same estimate (the model is not that exact), and the next key decides;
    // steps keep the order total, as sorting requires.
    let step = |r: Option<f64>| {
        r.filter(|&r| r > 0.0)
            .map_or(i64::MIN, |r| (r.ln() / 1.01f64.ln()).round() as i64)
    };
    // With an output length each replica's batch is a closed loop of
    // requests: a sequence's speed and the total are as it is served (the
    // other requests' prompts prefilled within the decode steps, or in
    // passes of their own under SGLang; the same as the decode steps' at
    // batch 1), else the decode steps'.
    let served = opts.output_len.is_some();
    let key = |p: &Plan| {
        let (seq, total) = if served {
            // A plan without a prefill rate has no served figures: its
            // decode steps' (a target cannot pass it: it is unknown).
            (
                p.served_tpot_ms
                    .filter(|&t| t > 0.0)
                    .map(|t| 1000.0 / t)
                    .or(p.decode_tokens_per_s_per_sequence),
                p.served_tokens_per_s().or(p.decode_tokens_per_s),
            )
        } else {
            (p.decode_tokens_per_s_per_sequence, p.decode_tokens_per_s)
        };
        let seq_step = step(seq);
        if opts.has_targets() {
            let per_device = step(total.map(|t| t / f64::from(p.devices_used.max(1))));
            return (per_device, seq_step);
        }
        let (seq, total) = (seq_step, step(total));
        match opts.objective {
            Objective::Latency => (seq, total),
            Objective::Throughput => (total, seq),
        }
    };
    plans.sort_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then(a.devices_used.cmp(&b.devices_used))
            .then(a.tensor_parallel.cmp(&b.tensor_parallel))
            .then(a.pipeline_parallel.cmp(&b.pipeline_parallel))
    });
    LevelResult { plans, rejected }
}

/// Whether `runtime` runs level `q` on device `d` (true when the device's
/// types are unknown): [`Quant::supported_by`] its native types, with two
/// exceptions for NVFP4. Its FP8-scaled blocks are NVIDIA's: an AMD FP4 unit
/// takes OCP MX blocks with E8M0 scales (the MI355X entry of the spec
/// database: "fp4 is MXFP4", from AMD's product page), so NVFP4 is native
/// only on an NVIDIA device with FP4 (a device without a spec entry is
/// judged by its types alone). And llama.cpp multiplies NVFP4 blocks
/// (`GGML_TYPE_NVFP4`) on any GPU, dequantizing them where there are no FP4
/// units (the pinned llama.cpp's ggml-cuda `convert.cu` and `mmq.cu`, whose
/// FP4 tensor-core path needs `blackwell_mma_available`).
pub(crate) fn runs(q: Quant, d: &PlanDevice, runtime: RuntimeKind) -> bool {
    let Some(native) = d.native_dtypes.as_deref() else {
        return true;
    };
    if marlin(q, d, runtime) {
        return true;
    }
    if q != Quant::Nvfp4 {
        return q.supported_by(native);
    }
    if runtime == RuntimeKind::LlamaCpp {
        return Quant::Mxfp4.supported_by(native);
    }
    let nvidia = d
        .spec_id
        .as_deref()
        .and_then(crate::spec::by_id)
        .is_none_or(|e| e.vendor == "nvidia");
    nvidia && q.supported_by(native)
}

/// Whether vLLM runs level `q` on `d` weight-only through its Marlin
/// kernels, without the level's own matrix units: FP8 and NVFP4 checkpoints
/// on NVIDIA GPUs of compute capability 7.5 and up that lack FP8 or FP4
/// (vLLM 0.33.0: `MarlinFP8ScaledMMLinearKernel` "for GPUs that lack FP8
/// hardware support", `is_fp8_marlin_supported` and
/// `is_fp4_marlin_supported`: `has_device_capability(75)`,
/// `vllm/model_executor/layers/quantization/utils/marlin_utils_fp{8,4}.py`).
/// The weights keep their bytes; the matrices multiply in 16 bits.
pub(crate) fn marlin(q: Quant, d: &PlanDevice, runtime: RuntimeKind) -> bool {
    if runtime != RuntimeKind::Vllm || !matches!(q, Quant::Fp8 | Quant::Nvfp4) {
        return false;
    }
    let Some(native) = d.native_dtypes.as_deref() else {
        return false;
    };
    let capability = d
        .spec_id
        .as_deref()
        .and_then(crate::spec::by_id)
        .filter(|e| e.vendor == "nvidia")
        .and_then(|e| e.architecture.as_deref()?.parse::<f64>().ok());
    !q.supported_by(native)
        && capability.is_some_and(|c| c >= 7.5)
        && (native.contains(&Dtype::Fp16) || native.contains(&Dtype::Bf16))
}

/// Levels worth trying for this model, highest fidelity first: never more
/// bits than it was published in, the model's own 16-bit type before the
/// other, GGUF block formats only for a GGUF model (`gguf`) or llama.cpp,
/// for llama.cpp only what it stores (GGUF blocks and 16/32-bit floats,
/// not FP8, INT8, GPTQ/AWQ or NF4), for vLLM not NF4 (it no longer loads
/// bitsandbytes), and never Q2_K (see below).
pub(crate) fn candidate_levels(spec: &ModelSpec, gguf: bool, runtime: RuntimeKind) -> Vec<Quant> {
    let native = spec.torch_dtype.as_deref().and_then(Quant::parse);
    let ceiling = native.map_or(16.0, Quant::bits_per_weight);
    let llama = runtime == RuntimeKind::LlamaCpp;
    let mut levels: Vec<Quant> = Quant::ALL
        .into_iter()
        .filter(|q| q.bits_per_weight() <= ceiling)
        // vLLM no longer loads bitsandbytes (runtime::VLLM_LAST_BITSANDBYTES).
        .filter(|&q| !(runtime == RuntimeKind::Vllm && q == Quant::Nf4))
        .filter(|&q| gguf || llama || !q.is_gguf())
        .filter(|&q| !llama || q.is_gguf() || matches!(q, Quant::Fp32 | Quant::Bf16 | Quant::Fp16))
        // Q2_K is planned when asked for but never suggested: below 3 bits
        // quality falls steeply (llama-quantize's option table,
        // tools/quantize/quantize.cpp: Q2_K +3.5199 ppl on Llama-3-8B
        // against +0.1754 for Q4_K_M), so the lowest suggestion is Q3_K_S.
        .filter(|&q| !matches!(q, Quant::Q2K | Quant::Q2KS))
        // Nor the i-quants below IQ4: llama-quantize makes most of them
        // only with an importance matrix computed on calibration text
        // (`Quant::needs_imatrix`), which a plan cannot assume, and its
        // option table gives no quality figure for any of them (IQ3_S and
        // IQ3_M included) to rank them beside the K-quant mixes by; they
        // are planned when asked for.
        .filter(|&q| !q.low_bit_i_quant())
        // The legacy Q4_1, Q5_0 and Q5_1 are planned when asked for, never
        // suggested: a K-quant mix no larger is better on each (the same
        // table: Q4_1 4.78G +0.4511 ppl against Q4_K_M 4.58G +0.1754, Q5_0
        // 5.21G +0.1316 against Q5_K_S 5.21G +0.1049, Q5_1 5.65G +0.1062
        // against Q5_K_M 5.33G +0.0569).
        .filter(|&q| !matches!(q, Quant::Q4_1 | Quant::Q5_0 | Quant::Q5_1))
        .collect();
    if native == Some(Quant::Fp16)
        && let (Some(b), Some(f)) = (
            levels.iter().position(|&q| q == Quant::Bf16),
            levels.iter().position(|&q| q == Quant::Fp16),
        )
    {
        levels.swap(b, f);
    }
    levels
}

/// The model as the options describe its files: with
/// [`InferenceOptions::gguf_imatrix`] its GGUF levels are made with an
/// importance matrix ([`ModelSpec::gguf_imatrix`]). Every public planning
/// entry (`plan_inference`, `plan_offload`, `plan_offload_gpus`) plans
/// this spec, so the sizers built below see the flag.
pub(crate) fn spec_for_options<'a>(
    spec: &'a ModelSpec,
    opts: &InferenceOptions,
) -> std::borrow::Cow<'a, ModelSpec> {
    if opts.gguf_imatrix && !spec.gguf_imatrix {
        std::borrow::Cow::Owned(ModelSpec {
            gguf_imatrix: true,
            ..spec.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(spec)
    }
}

/// Plan inference of `spec` on `devices`: the suggested quantization (the
/// highest-fidelity level that fits), memory per device, and every feasible
/// tensor × pipeline × data-parallel layout ranked by decode throughput; when
/// nothing fits, why (`rejected`) and what would (`advice`). Never fails: an
/// empty device list gives an infeasible plan with advice.
/// [`super::plan_inference_for`] does the loading steps in one call.
///
/// ```
/// use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, load_model, plan_inference};
/// let model = load_model("llama-3.1-8b")?;
/// let devices = PlanDevice::from_device_string("2xl4")?;
/// let opts = InferenceOptions { quant: Some(Quant::Fp8), context: Some(8192), ..Default::default() };
/// let plan = plan_inference(&model.spec, &devices, &opts);
/// assert!(plan.feasible);
/// let best = &plan.plans[0];
/// assert!(best.per_device.iter().all(|d| d.total_bytes <= d.capacity_bytes));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_inference(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    opts: &InferenceOptions,
) -> InferencePlan {
    let spec = &*spec_for_options(spec, opts);
    let mut warnings = Vec::new();
    if spec.approximate {
        warnings.push(
            "the architecture is approximate (a bare size): memory and speed are estimates".into(),
        );
    }
    if let Some(v) = Some(spec.vision_params()).filter(|&v| v > 0) {
        let served = matches!(opts.runtime, RuntimeKind::Vllm | RuntimeKind::Sglang);
        warnings.push(if served {
            format!(
                "the checkpoint also stores a vision tower and projector ({v} parameters, {} at \
                 16 bits): {} loads them with the model, so the first stage's weights hold them \
                 (their layers split over tensor parallelism, or within the checkpoint's stored \
                 bytes); llama.cpp would load them only with --mmproj",
                human_bytes(2 * v),
                opts.runtime.name()
            )
        } else {
            format!(
                "the checkpoint also stores a vision tower and projector ({v} parameters, {} at \
                 16 bits) that the plans leave out: llama.cpp loads them only with --mmproj; vLLM \
                 and SGLang load them with the model",
                human_bytes(2 * v)
            )
        });
    }
    if opts.runtime != RuntimeKind::Vllm
        && (opts.max_num_seqs.is_some() || opts.max_num_batched_tokens.is_some())
    {
        warnings.push(format!(
            "max_num_seqs and max_num_batched_tokens are vLLM's scheduler limits: the {} rule \
             does not read them (plan with runtime vllm)",
            opts.runtime.name()
        ));
    }
    if let Some(f) = opts.mem_fraction_static
        && super::runtime::sglang_given_fraction(opts).is_none()
    {
        warnings.push(format!(
            "mem_fraction_static {f} is not a fraction in (0, 1]: SGLang's default is used"
        ));
    }
    if opts.runtime != RuntimeKind::Sglang && opts.mem_fraction_static.is_some() {
        warnings.push(format!(
            "mem_fraction_static is SGLang's memory fraction: the {} rule does not read it \
             (plan with runtime sglang)",
            opts.runtime.name()
        ));
    }
    if let (RuntimeKind::Vllm, Some(n)) = (opts.runtime, opts.max_num_seqs)
        && opts.batch > n
    {
        warnings.push(format!(
            "batch {} is more than max_num_seqs {n}: vLLM's scheduler runs at most {n} sequences \
             per replica at once, so the speeds at batch {} are not what it reaches",
            opts.batch, opts.batch
        ));
    }
    if spec.linear_attention.is_some() {
        // speed.csv's prompts of such models on a Radeon 8060S, against
        // this planner's estimates for the same build month (Nov 28,
        // 2026; docs/accuracy.md, "linear-attention models' prompts"):
        // Qwen3-Coder-Next Q4_K_M at b8038, pp512 531.48 (Vulkan) and
        // 554.92 (ROCm) against 1194 and 1758; Qwen3.5-35B-A3B Q4_K_M at
        // b8460, pp512 1080 against 1649.
        warnings.push(
            "the linear-attention (Gated DeltaNet) layers: decode reads and rewrites their \
             recurrent state each token at a fraction of the bandwidth fitted on published \
             llama.cpp runs (linear_state_efficiency), but their prompt kernels are planned by \
             FLOPs only, so prompt speeds are upper bounds (published llama.cpp prompts of \
             Qwen3-Coder-Next and Qwen3.5-35B-A3B on a Radeon 8060S ran 35-68 % below such \
             estimates; docs/accuracy.md)"
                .into(),
        );
    }
    if spec.encoder {
        warnings.push(
            "an encoder (embedding model): no KV cache and no decode; the context is one input's \
             length, the batch the inputs encoded together, and prefill_tokens_per_s the rate \
             one input is encoded at"
                .into(),
        );
    }
    for d in devices {
        if d.host {
            let unknown: Vec<&str> = [
                ("memory bandwidth", d.bandwidth_bytes_per_s.is_none()),
                (
                    "peak compute rates",
                    super::speed::reference_tflops(d, opts.runtime, Dtype::Bf16, opts.backend)
                        .is_none(),
                ),
            ]
            .into_iter()
            .filter_map(|(what, missing)| missing.then_some(what))
            .collect();
            if d.bandwidth_basis.as_deref() == Some("theoretical") {
                warnings.push(format!(
                    "{} ({}) is the host CPU: its memory bandwidth ({:.1} GB/s) is the theoretical \
                     peak of its memory channels (CPU table entry {}), above what it sustains; \
                     `plan --measure` measures it",
                    d.id,
                    d.name,
                    d.bandwidth_bytes_per_s.unwrap_or(0) as f64 / 1e9,
                    d.cpu_spec_id.as_deref().unwrap_or("?")
                ));
            }
            if d.cpu_spec_id.is_none()
                && let Some(basis) = &d.compute_basis
            {
                warnings.push(format!(
                    "{} ({}) is the host CPU: its model name matches no entry of the CPU table, so \
                     its peak compute rates are those of its {basis}, a peak, not a measurement",
                    d.id, d.name
                ));
            }
            if !unknown.is_empty() {
                warnings.push(format!(
                    "{} ({}) is the host CPU; unknown: its {}, so {} not estimated{}",
                    d.id,
                    d.name,
                    unknown.join(" and "),
                    if unknown.len() == 2 {
                        "decode and prefill speeds are"
                    } else if d.bandwidth_bytes_per_s.is_none() {
                        "decode speed is"
                    } else {
                        "prefill speed is"
                    },
                    match (&d.cpu_spec_id, &d.compute_basis) {
                        (None, None) =>
                            " (its model name matches no entry of the CPU table, spec/cpus.toml, \
                             and its CPUID family and model name no core design the table has \
                             a per-cycle figure and a clock for)",
                        (None, Some(_)) => "",
                        (Some(_), _) =>
                            " (its CPU table entry has no per-cycle figure for its cores)",
                    }
                ));
            }
        } else if d.native_dtypes.is_none() {
            warnings.push(format!(
                "{} ({}) has no spec database entry: its native data types, bandwidth and peak rates are unknown; every level is allowed and throughput is not estimated",
                d.id, d.name
            ));
        }
    }
    let context = requested_context(spec, opts);
    if let Some(max) = spec.max_context
        && context > max
    {
        warnings.push(format!(
            "context {context} exceeds the model's maximum of {max} tokens"
        ));
    }
    let all_native = |f: &dyn Fn(&[Dtype]) -> bool| {
        devices
            .iter()
            .all(|d| d.native_dtypes.as_deref().is_none_or(f))
    };
    let kv = opts.kv_dtype.unwrap_or_else(|| {
        let prefer_fp16 = spec.torch_dtype.as_deref() == Some("fp16");
        if !prefer_fp16 && all_native(&|n| KvDtype::Bf16.supported_by(n)) {
            KvDtype::Bf16
        } else {
            KvDtype::Fp16
        }
    });
    if !all_native(&|n| kv.supported_by(n)) {
        warnings.push(format!("a device does not hold a {kv} KV cache natively"));
    }
    let levels = candidate_levels(spec, opts.gguf_levels, opts.runtime);
    let supported = |q: Quant| devices.iter().all(|d| runs(q, d, opts.runtime));
    // MXFP4 is suggested only where the devices have FP4 matrix units
    // (Blackwell): elsewhere it is one more weight-only 4-bit format, and
    // int4 (GPTQ/AWQ) stays the suggestion there, unless the checkpoint is
    // stored in MXFP4 (a Quark or compressed-tensors export), which the
    // runtime loads as it is.
    let fp4 = all_native(&|n| n.contains(&Dtype::Fp4));
    // vLLM's weight-only Marlin path is suggested only for a checkpoint
    // stored at that level (an FP8 model on an A100), not as a way down
    // from a model's own precision.
    let stored = spec.torch_dtype.as_deref().and_then(Quant::parse);
    let suggestible = |q: Quant| {
        supported(q)
            && (q != Quant::Mxfp4 || fp4 || Some(q) == stored)
            && (Some(q) == stored || !devices.iter().any(|d| marlin(q, d, opts.runtime)))
    };
    let mut suggested = None;
    let mut results = std::collections::HashMap::new();
    if !devices.is_empty() {
        for &q in levels.iter().filter(|&&q| suggestible(q)) {
            let r = plan_level(spec, devices, q, kv, opts, context);
            let ok = !r.plans.is_empty();
            results.insert(q, r);
            if ok {
                suggested = Some(q);
                break;
            }
        }
    }
    // Nothing fits: the best level the devices run, else the checkpoint's
    // own (an NF4 checkpoint under vLLM, which is offered no level), else
    // BF16.
    let quant = opts.quant.or(suggested).unwrap_or_else(|| {
        levels
            .iter()
            .copied()
            .find(|&q| supported(q))
            .or(stored)
            .unwrap_or(Quant::Bf16)
    });
    let result = match results.remove(&quant) {
        Some(r) => r,
        None => plan_level(spec, devices, quant, kv, opts, context),
    };
    if opts.runtime == RuntimeKind::Vllm && quant == Quant::Nf4 {
        warnings.push(super::runtime::vllm_bitsandbytes_removed());
    }
    if opts.mixed_prefill && !super::runtime::runtime(opts.runtime).prompts_between_decode_steps() {
        warnings.push(format!(
            "mixed prefill: the {} plan already prefills the arriving prompts within the decode steps' batches",
            opts.runtime
        ));
    }
    // Options that describe a llama.cpp build say nothing to another
    // runtime's plan.
    if super::speed::fit_runtime(opts.runtime) != RuntimeKind::LlamaCpp {
        let ignored: Vec<&str> = [
            (opts.backend.is_some(), "the ggml backend"),
            (opts.runtime_build.is_some(), "the runtime build"),
            (opts.cuda_force_mmq, "GGML_CUDA_FORCE_MMQ"),
        ]
        .into_iter()
        .filter_map(|(given, what)| given.then_some(what))
        .collect();
        if !ignored.is_empty() {
            warnings.push(format!(
                "{} describe{} a llama.cpp build: the {} plan ignores {}",
                ignored.join(" and "),
                if ignored.len() == 1 { "s" } else { "" },
                opts.runtime,
                if ignored.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    if let Some(d) = devices.iter().find(|d| {
        super::speed::forced_mmq_unmodelled(
            d,
            opts.runtime,
            quant,
            opts.backend,
            opts.runtime_build,
            opts.cuda_force_mmq,
        )
    }) {
        warnings.push(format!(
            "GGML_CUDA_FORCE_MMQ on {}: llama.cpp's default build multiplies this {quant} prompt's \
             512-token micro-batches with rocBLAS there, the forced build with its MMQ kernels; \
             the prompt is planned as the default build's (the forced path is not modelled on \
             AMD CDNA GPUs)",
            d.name
        ));
    }
    if opts.eager {
        match opts.runtime {
            RuntimeKind::Trtllm => warnings.push(
                "eager: TensorRT-LLM's plan keeps its CUDA-graph per-layer decode time, and the \
                 emitted command does not switch its graphs off"
                    .into(),
            ),
            RuntimeKind::Vllm | RuntimeKind::Sglang => warnings.push(format!(
                "eager: the per-layer decode time without CUDA graphs is fitted on tensor-parallel \
                 runs only (vLLM of October 2023 over 2 to 8 GPUs on PCIe); one-device layouts keep \
                 the {} CUDA-graph per-layer time, which an eager server exceeds",
                opts.runtime
            )),
            _ => {
                if super::speed::fit_runtime(opts.runtime) == RuntimeKind::LlamaCpp
                    && !devices.iter().any(|d| {
                        super::speed::eager_decode_layer_s(
                            d,
                            opts.runtime,
                            quant,
                            opts.backend,
                            opts.runtime_build,
                            1,
                        )
                        .is_some()
                    })
                {
                    warnings.push(
                        "eager: llama.cpp replays CUDA graphs only in its CUDA backend on NVIDIA \
                         GPUs of compute capability 8.0 and later (7.x from August 2026 builds): \
                         these devices already run without them"
                            .into(),
                    );
                }
            }
        }
    }
    let feasible_plans = result.plans.len();
    let feasible = feasible_plans > 0;
    let mut advice = Vec::new();
    if devices.is_empty() {
        advice.push("no accelerators to plan for: pass --devices (e.g. \"2xh100-sxm\")".into());
    } else if !feasible {
        advice = advise(spec, devices, quant, kv, opts, context, suggested);
    }
    if let Some(d) = devices.iter().find(|d| marlin(quant, d, opts.runtime)) {
        warnings.push(format!(
            "{} ({}) has no {quant} matrix units: vLLM runs {quant} weight-only there (its Marlin \
             kernels), with the weights at {quant} and the matrices multiplied in 16 bits",
            d.id, d.name
        ));
    }
    if quant == Quant::Mxfp4
        && spec.activations_mxfp4
        && matches!(opts.runtime, RuntimeKind::Vllm | RuntimeKind::Sglang)
        && let Some(d) = devices
            .iter()
            .find(|d| !d.host && !super::speed::mxfp4_activations_run_fp4(spec, d, opts.runtime))
    {
        warnings.push(format!(
            "{} ({}): the checkpoint quantizes activations to MXFP4 too (W4A4), which {} \
             multiplies in FP4 only on AMD gfx95x GPUs (MI350X, MI355X); here it emulates \
             them (quantize, dequantize, 16-bit matrix multiplies): prefill is planned at the \
             16-bit rate, the emulation's own cost not counted",
            d.id, d.name, opts.runtime
        ));
    }
    if quant.low_bit_i_quant() && devices.iter().any(|d| !d.host) {
        warnings.push(I_QUANT_DECODE_UNCALIBRATED.to_string());
    }
    if opts.runtime == RuntimeKind::LlamaCpp
        && opts.backend == Some(super::runtime::GgmlBackend::Vulkan)
    {
        if let Some(d) = devices
            .iter()
            .find(|d| super::speed::vulkan_without_matrix_engines(d))
        {
            warnings.push(format!(
                "{} ({}): llama.cpp's Vulkan backend multiplies on its vector engines, not its \
                 matrix engines (cooperative matrices only from Xe2, whose published Vulkan \
                 prompts run at the vector rate too): prefill is planned at their 16-bit rate{}",
                d.id,
                d.name,
                super::speed::reference_tflops(d, opts.runtime, Dtype::Fp16, opts.backend)
                    .map_or(String::new(), |r| format!(", {r:.1} TFLOPS"))
            ));
        }
        if let Some(d) = devices
            .iter()
            .find(|d| super::speed::vulkan_matrix_engines_unused(d))
        {
            warnings.push(format!(
                "{} ({}): its Vulkan driver lists no cooperative-matrix extension llama.cpp \
                 takes (llama.cpp prints 'matrix cores: none'), so llama.cpp's Vulkan backend \
                 multiplies on the vector units, not the matrix engines; no published runs \
                 calibrate that path, so prefill and time to first token are unknown (a driver \
                 that lists VK_KHR_cooperative_matrix enables the matrix path)",
                d.id, d.name
            ));
        }
    }
    let mut rejected = result.rejected;
    rejected.truncate(20);
    let mut plans = result.plans;
    if let Some(p) = plans.iter().find(|p| {
        p.tensor_parallel_link.as_deref() == Some("PCIe") && p.decode_tokens_per_s.is_none()
    }) {
        warnings.push(format!(
            "the PCIe bandwidth of these devices is unknown (neither detected nor in the spec \
             database): tensor parallelism over PCIe (TP {}) has no speed estimate",
            p.tensor_parallel
        ));
    }
    warnings.extend(unestimated_speeds(spec, devices, quant, opts, &plans));
    warnings.extend(unconfirmed_speed(devices, opts));
    warnings.extend(far_device_runs(devices, opts));
    warnings.extend(slow_prompt_kernels_warning(spec, devices, quant, opts));
    if let Some(w) = vllm_mamba_blocks_warning(opts, devices, &plans) {
        warnings.push(w);
    }
    plans.truncate(opts.max_plans.max(1));
    InferencePlan {
        model: spec.name.clone(),
        parameters: spec.parameters(),
        active_parameters: spec.active_parameters(),
        approximate: spec.approximate,
        encoder: spec.encoder,
        latent_attention: spec.mla.is_some(),
        multimodal_encoder: spec.multimodal_encoder,
        devices: devices.to_vec(),
        context,
        batch: opts.batch,
        feasible,
        suggested_quantization: suggested,
        quantization: quant,
        kv_dtype: kv,
        runtime: opts.runtime,
        plans,
        feasible_plans,
        rejected,
        advice,
        warnings,
        speed_build: basis_device(devices)
            .filter(|_| opts.calibrated_speed)
            .and_then(|d| {
                super::speed::planned_build(
                    opts.runtime,
                    super::speed::DeviceClass::of(d),
                    opts.runtime_build,
                )
            }),
        decode_build_without_cuda_graphs: basis_device(devices)
            .filter(|d| {
                opts.calibrated_speed
                    && super::speed::without_cuda_graphs(
                        d,
                        opts.runtime,
                        opts.backend,
                        opts.runtime_build,
                    )
            })
            .and_then(|d| {
                super::speed::planned_build(
                    opts.runtime,
                    super::speed::DeviceClass::of(d),
                    super::speed::decode_build(d, opts.runtime, opts.backend, opts.runtime_build),
                )
            }),
        kv_read_efficiency: opts.kv_read_efficiency.or_else(|| {
            basis_device(devices)
                .filter(|_| opts.calibrated_speed)
                .and_then(|d| {
                    super::speed::kv_read(
                        opts.runtime,
                        super::speed::DeviceClass::of(d),
                        opts.fused_attention,
                    )
                })
        }),
        linear_state_efficiency: basis_device(devices)
            .filter(|_| opts.calibrated_speed && spec.linear_attention.is_some())
            .and_then(|d| {
                super::speed::linear_state(opts.runtime, super::speed::DeviceClass::of(d))
            }),
        speed_basis: basis_device(devices)
            .filter(|_| opts.calibrated_speed)
            .map(|d| {
                let a = fitted_under(d, opts, quant);
                SpeedBasis {
                    decode: a.decode_basis,
                    prefill: a.prefill_basis,
                    moe_prefill: (spec.moe.is_some() && a.moe_prefill != 1.0).then_some(
                        MoePrefillBasis {
                            factor: a.moe_prefill,
                            backend: a.moe_prefill_backend,
                        },
                    ),
                    served_tpot: super::speed::serving_accuracy(opts),
                    served_ttft: super::speed::serving_ttft_accuracy(opts),
                }
            }),
        options: opts.clone(),
    }
}

/// A warning where a plan names a llama.cpp build whose prompt kernels for
/// one of its accelerators and the model's format ran far below the fitted
/// fractions (`speed::slow_prompt_kernels`): the planner has no term for
/// such a window, so the prefill it gives is an upper bound.
fn slow_prompt_kernels_warning(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    quant: Quant,
    opts: &InferenceOptions,
) -> Option<String> {
    if !opts.calibrated_speed {
        return None;
    }
    let build = opts.runtime_build?;
    devices.iter().find_map(|d| {
        super::speed::slow_prompt_kernels(
            d,
            opts.runtime,
            quant,
            spec.moe.is_some(),
            opts.backend,
            Some(build),
        )
        .map(|w| {
            format!(
                "{} ({}): in llama.cpp builds of {build}, {}; the planner has no term for it, \
                 so this plan's prefill is an upper bound for that build",
                d.id, d.name, w.why
            )
        })
    })
}

/// A warning where the plan's first accelerator has published runs under
/// the plan's runtime that the fit leaves out because the device runs the
/// runtime unlike its class's cell (`speed::device_accuracy`): the
/// estimates are its class's, and those runs say how far they fell.
fn unconfirmed_speed(devices: &[PlanDevice], opts: &InferenceOptions) -> Option<String> {
    if !opts.calibrated_speed {
        return None;
    }
    let d = basis_device(devices)?;
    let id = d.spec_id.as_deref()?;
    let say = |what: &str, prefill: bool| {
        super::speed::device_accuracy(opts.runtime, id, prefill).map(|a| {
            format!(
                "{what}: median error {:.0} %, worst {:.0} % over {} runs",
                100.0 * a.median,
                100.0 * a.worst,
                a.rows
            )
        })
    };
    let parts: Vec<String> = [say("decode", false), say("prefill", true)]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{}: its published {} runs fell far from the planner's estimates ({}), so the fit \
             leaves them out: the device runs {} unlike its class for a reason the planner has \
             no term for (docs/accuracy.md), and its speed here is not confirmed",
            d.name,
            opts.runtime.name(),
            parts.join("; "),
            opts.runtime.name()
        )
    })
}

/// A warning where the plan's first accelerator has published runs under
/// the plan's runtime (and llama.cpp backend) whose median error exceeds
/// the worst error the calibration aims at for that quantity
/// ([`super::speed::DEVICE_RUNS_WARN`]): even a typical run of this very
/// device fell that far from the planner's estimate
/// ([`super::speed::device_runs`]), so the estimate is not confirmed for
/// it. `None` otherwise.
fn far_device_runs(devices: &[PlanDevice], opts: &InferenceOptions) -> Option<String> {
    if !opts.calibrated_speed {
        return None;
    }
    let d = basis_device(devices)?;
    let id = d.spec_id.as_deref()?;
    let class = super::speed::DeviceClass::of(d);
    let (decode_bound, prefill_bound) = super::speed::DEVICE_RUNS_WARN;
    let parts: Vec<String> = [
        ("decode", false, decode_bound),
        ("prefill", true, prefill_bound),
    ]
    .into_iter()
    .filter_map(|(what, prefill, bound)| {
        super::speed::device_runs(opts.runtime, class, opts.backend, id, prefill)
            .filter(|a| a.median > bound)
            .map(|a| {
                format!(
                    "{what} {:.0} % (median of {} run{}, worst {:.0} %)",
                    100.0 * a.median,
                    a.rows,
                    if a.rows == 1 { "" } else { "s" },
                    100.0 * a.worst
                )
            })
    })
    .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{}: its published {} runs{} fell far from the planner's estimates: {}; \
             this plan's speeds for it may be as far off",
            d.name,
            opts.runtime.name(),
            if opts.runtime == RuntimeKind::LlamaCpp {
                opts.backend
                    .or_else(|| class.own_backend())
                    .map_or(String::new(), |b| format!(" under {}", b.printed()))
            } else {
                String::new()
            },
            parts.join("; ")
        )
    })
}

/// Where a host CPU stage's prompt runs in llama.cpp's partial offload:
/// ggml's scheduler hands an operation whose weights are in host memory to
/// the first GPU backend that wants it (`ggml_backend_sched_backend_id_from_cur`,
/// `ggml/src/ggml-backend.cpp`: "check if a backend with higher prio wants
/// to offload the op"), and the CUDA/HIP, Vulkan and SYCL backends want
/// every one of at least 32 rows (`min_batch_size = 32` in their
/// `*_device_offload_op`; never a `GET_ROWS`, the embedding lookup); the
/// rest of the layer's graph follows its inputs there (PR 6083, "the entire
/// computation of the batch is offloaded"). Metal never offloads (unified
/// memory). `Some(first GPU)` when `group` is a host CPU stage of a
/// llama.cpp replica with a GPU, the prompt's ubatch reaches 32 tokens and
/// the GPU's backend offloads; `None` otherwise (the stage computes on its
/// own device).
fn op_offload_target<'a>(
    replica: &Replica<'a>,
    group: &[&PlanDevice],
    opts: &InferenceOptions,
    prompt: u64,
) -> Option<&'a PlanDevice> {
    const MIN_BATCH: u64 = 32;
    if opts.runtime != RuntimeKind::LlamaCpp
        || !group.iter().all(|d| d.host)
        || prompt.min(super::runtime::llamacpp::n_ubatch(opts)) < MIN_BATCH
    {
        return None;
    }
    let gpu = replica.stages.iter().flatten().copied().find(|d| !d.host)?;
    offloads_host_ops(gpu, opts).then_some(gpu)
}

/// Whether llama.cpp's backend for `gpu` (`opts.backend`, else the
/// vendor's own) takes large batches of host-resident operations
/// (`op_offload_target`): every GPU backend but Metal.
pub fn offloads_host_ops(gpu: &PlanDevice, opts: &InferenceOptions) -> bool {
    let backend = opts
        .backend
        .or_else(|| super::speed::DeviceClass::of(gpu).own_backend());
    opts.runtime == RuntimeKind::LlamaCpp && backend != Some(super::runtime::GgmlBackend::Metal)
}

/// Prefill seconds per prompt token of host layers `a..b` run on `gpu`
/// ([`op_offload_target`]): their FLOPs at the GPU's matrix rate and fitted
/// fraction, its per-layer time, and the copy of what they read from host
/// memory over one direction of the GPU's PCIe link once per ubatch (each
/// offloaded operation's weights, and the layers' KV cache at the mean
/// context the prompt's tokens attend to; llama.cpp keeps a host layer's
/// cache in host memory). `None` when the GPU's rate or PCIe bandwidth is
/// unknown.
fn op_offload_prefill(
    sizer: &Sizer,
    spec: &ModelSpec,
    gpu: &PlanDevice,
    opts: &InferenceOptions,
    (quant, compute): (Quant, Dtype),
    (a, b): (u32, u32),
    (prompt, mean_context): (u64, u64),
) -> Option<f64> {
    let fit = if opts.calibrated_speed {
        fitted_under(gpu, opts, quant)
    } else {
        super::speed::Applied::NONE
    };
    let rate = prompt_rate_under(gpu, opts, quant, compute)?;
    let pcie = gpu.pcie_bandwidth_bytes_per_s? as f64 / 2.0;
    let ubatch = prompt.clamp(1, super::runtime::llamacpp::n_ubatch(opts)) as f64;
    let layers = f64::from(b - a);
    let flops = sizer.flops_per_token(a, b, mean_context, false)
        + (fit.moe_prefill - 1.0) * sizer.routed_flops_per_token(a, b);
    let scores = fit.score_seconds(
        opts.fused_attention,
        layers,
        f64::from(spec.num_attention_heads),
        mean_context as f64,
        gpu.bandwidth_bytes_per_s,
    );
    let copied = sizer.weights(a, b, false, false) + sizer.kv_attended(a, b, mean_context, 1);
    Some(
        flops / (rate * 1e12 * fit.prefill.unwrap_or(opts.prefill_efficiency))
            + layers * fit.prefill_layer_s
            + scores
            + copied / pcie / ubatch,
    )
}

/// The device a plan's [`InferencePlan::speed_basis`], `speed_build` and
/// `kv_read_efficiency` describe: the first accelerator, or the first
/// device where every one is a host CPU. With partial offload the host CPU
/// holds the first layers and comes first, but what was fitted (and what a
/// reader wants to know about) is the accelerator's; each stage's speed
/// takes its own device's fractions either way.
pub fn basis_device(devices: &[PlanDevice]) -> Option<&PlanDevice> {
    devices.iter().find(|d| !d.host).or_else(|| devices.first())
}

/// Why a feasible plan has no decode or prefill speed: for each accelerator
/// whose spec entry lacks the memory bandwidth (decode) or the matrix rate
/// the runtime's kernels would run at (prefill), one warning naming the
/// entry, so that "unknown" in the table has its reason. Host CPUs and
/// devices without an entry have warnings of their own above.
fn unestimated_speeds(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    quant: Quant,
    opts: &InferenceOptions,
    plans: &[Plan],
) -> Vec<String> {
    let no_decode = plans.iter().any(|p| p.decode_tokens_per_s.is_none());
    let no_prefill = plans.iter().any(|p| p.prefill_tokens_per_s.is_none());
    if !(no_decode || no_prefill) {
        return Vec::new();
    }
    let half = if quant == Quant::Fp16 {
        Dtype::Fp16
    } else {
        Dtype::Bf16
    };
    let mut out: Vec<String> = Vec::new();
    for d in devices
        .iter()
        .filter(|d| !d.host && d.native_dtypes.is_some())
    {
        let compute = if marlin(quant, d, opts.runtime) {
            half
        } else {
            matrix_dtype(spec, quant, half, opts.runtime, [d])
        };
        let missing: Vec<String> = [
            (
                "memory bandwidth".to_string(),
                no_decode && d.bandwidth_bytes_per_s.is_none(),
            ),
            (
                format!("{compute} matrix rate"),
                no_prefill && prompt_rate_under(d, opts, quant, compute).is_none(),
            ),
        ]
        .into_iter()
        .filter_map(|(what, gap)| gap.then_some(what))
        .collect();
        if missing.is_empty() {
            continue;
        }
        let entry = d.spec_id.as_deref().unwrap_or(d.name.as_str());
        let what = match (
            no_decode && d.bandwidth_bytes_per_s.is_none(),
            missing.len(),
        ) {
            (true, 2) => "decode and prefill speeds (and the time to first token) are",
            (true, _) => "decode speed is",
            _ => "prefill speed and the time to first token are",
        };
        let w = format!(
            "{}: its spec entry {entry} states no {}, so {what} not estimated \
             (`ai-hwaccel specs {entry}` says why)",
            d.name,
            missing.join(" and ")
        );
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The warning on a plan at an i-quant below IQ4 on a GPU: its decode is
/// planned at the below-4-bit cells, fitted on K-quant rows, while
/// llama.cpp's i-quant kernels are bound by their arithmetic on many GPUs.
/// Measured (llama.cpp PR 8215, July 2024, llama 8B, one token per forward
/// pass, `-ub 1`): an RTX 3090 ran IQ3_S, IQ2_S and IQ1_M at 143.17,
/// 151.47 and 167.03 tok/s for weights of 3.42 to 2.01 GiB, nearly flat,
/// where the planner (at that build) says 97, 122 and 144; an RTX 4090 at
/// 221.34, 276.89 and 315.04 against 110, 137 and 159; an RX 6800 at
/// 38.16, 46.31 and 49.22 against 67, 81 and 91.
pub const I_QUANT_DECODE_UNCALIBRATED: &str = "decode at an i-quant below IQ4 is not calibrated: \
     it is planned as the K-quants below 4 bits measure, while llama.cpp's i-quant kernels are \
     bound by their arithmetic on many GPUs (llama.cpp PR 8215: an RTX 3090 decoded llama 8B at \
     IQ3_S, IQ2_S and IQ1_M at 143-167 tok/s whatever their size, an RTX 4090 at 221-315, an RX \
     6800 at 38-49, in July 2024 builds, which the planner put at 97-144, 110-159 and 67-91 when \
     this was written, 2026-11-30)";

/// The GGUF level with the most bits, among those planned only when asked
/// for ([`candidate_levels`] leaves out Q2_K, Q2_K_S and the i-quants below
/// IQ4) and with no more bits than the smallest suggested GGUF level, that
/// the devices run and the model fits at; `None` where GGUF
/// levels are not the runtime's (not llama.cpp and not a GGUF model) or
/// none fits.
fn unsuggested_gguf_level_that_fits(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    kv: KvDtype,
    opts: &InferenceOptions,
    context: u64,
) -> Option<Quant> {
    if !(opts.gguf_levels || opts.runtime == RuntimeKind::LlamaCpp) {
        return None;
    }
    let offered = candidate_levels(spec, opts.gguf_levels, opts.runtime);
    // No more bits than the smallest GGUF level suggested (Q3_K_S): the
    // legacy 4- and 5-bit types are not what a model too big for it needs.
    let floor = offered
        .iter()
        .filter(|q| q.is_gguf())
        .map(|q| q.bits_per_weight())
        .fold(f64::INFINITY, f64::min);
    Quant::ALL
        .into_iter()
        .filter(|q| q.is_gguf() && q.bits_per_weight() <= floor && !offered.contains(q))
        .filter(|&q| devices.iter().all(|d| runs(q, d, opts.runtime)))
        .find(|&q| {
            !plan_level(spec, devices, q, kv, opts, context)
                .plans
                .is_empty()
        })
}

/// What would make an infeasible request fit.
fn advise(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    quant: Quant,
    kv: KvDtype,
    opts: &InferenceOptions,
    context: u64,
    suggested: Option<Quant>,
) -> Vec<String> {
    let mut out = Vec::new();
    if opts.has_targets() {
        // Without the targets: when layouts fit, the targets are what
        // failed; say how close the fastest layout comes (at batch 1).
        let free = InferenceOptions {
            ttft_ms: None,
            tpot_ms: None,
            batch: 1,
            ..opts.clone()
        };
        let r = plan_level(spec, devices, quant, kv, &free, context);
        if !r.plans.is_empty() {
            let best = |f: fn(&Plan) -> Option<f64>| {
                r.plans
                    .iter()
                    .filter_map(|p| f(p).map(|v| (v, p)))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
            };
            let mut reach = Vec::new();
            if let (Some(t), Some((v, p))) = (opts.ttft_ms, best(|p| p.ttft_ms)) {
                reach.push(format!(
                    "time to first token {v:.1} ms (target {t} ms) with TP {} PP {}",
                    p.tensor_parallel, p.pipeline_parallel
                ));
            }
            if let (Some(t), Some((v, p))) = (opts.tpot_ms, best(|p| p.tpot_ms)) {
                reach.push(format!(
                    "time per output token {v:.1} ms at batch 1 (target {t} ms) with TP {} PP {}",
                    p.tensor_parallel, p.pipeline_parallel
                ));
            }
            out.push(format!(
                "the model fits at {quant} but misses the targets; the best layouts reach {}",
                if reach.is_empty() {
                    "no estimate (speeds unknown)".to_string()
                } else {
                    reach.join(" and ")
                }
            ));
            return out;
        }
        return advise(spec, devices, quant, kv, &free, context, suggested);
    }
    if let Some(q) = suggested
        && q != quant
    {
        out.push(format!("a smaller quantization: {q} fits on these devices"));
    } else if suggested.is_none() {
        // Lowest-fidelity level the devices run, to say whether
        // quantizing alone could help.
        if let Some(&q) = candidate_levels(spec, opts.gguf_levels, opts.runtime)
            .iter()
            .rev()
            .find(|&&q| devices.iter().all(|d| runs(q, d, opts.runtime)))
            && q != quant
            && !plan_level(spec, devices, q, kv, opts, context)
                .plans
                .is_empty()
        {
            out.push(format!("a smaller quantization: {q} fits"));
        } else if let Some(q) = unsuggested_gguf_level_that_fits(spec, devices, kv, opts, context)
            && q != quant
        {
            // Below what is suggested: the GGUF levels planned only when
            // asked for (Q2_K and the i-quants below IQ4), the one with
            // the most bits that fits.
            let mut why = Vec::new();
            if q.needs_imatrix() {
                why.push("llama-quantize makes it only with an importance matrix");
            }
            if q.bits_per_weight() < 3.0 {
                why.push("quality falls steeply below 3 bits");
            }
            out.push(format!(
                "a smaller quantization below the suggested levels: {q} fits{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                }
            ));
        }
    }
    // More of the largest device.
    if let Some(big) = devices.iter().max_by_key(|d| d.capacity_bytes.unwrap_or(0)) {
        let mut n = devices.len() as u32;
        let mut found = None;
        while n < 4096 {
            n = (n * 2).max(2);
            let more: Vec<PlanDevice> = match big.spec_id.as_deref().and_then(crate::spec::by_id) {
                Some(_) => PlanDevice::from_device_string(&format!(
                    "{n}x{}",
                    big.spec_id.as_deref().unwrap_or_default()
                ))
                .unwrap_or_default(),
                None => (0..n)
                    .map(|k| PlanDevice {
                        id: format!("{}#{k}", big.id),
                        ..big.clone()
                    })
                    .collect(),
            };
            let r = plan_level(spec, &more, quant, kv, opts, context);
            if !r.plans.is_empty() {
                found = Some(r.plans.iter().map(|p| p.devices_used).min().unwrap_or(n));
                break;
            }
        }
        if let Some(n) = found {
            out.push(format!("more devices: {n} × {} fit at {quant}", big.name));
        }
    }
    // A shorter context at the same level.
    let mut short = opts.clone();
    short.batch = 1;
    let r = plan_level(spec, devices, quant, kv, &short, 1);
    if let Some(best) = r.plans.iter().map(|p| p.max_context_tokens).max()
        && best > 0
    {
        out.push(format!(
            "a shorter context: up to {best} tokens fit at batch 1 with {quant}"
        ));
    }
    if out.is_empty() {
        out.push(format!("nothing tried fits: even the weights at the smallest level exceed these devices ({} parameters)", spec.parameters()));
    }
    out
}

/// llama.cpp's partial offload (`-ngl`): the host CPU `cpu` holds the
/// embedding and the first layers, the GPU `gpu` the last `n` layers and
/// the output layer (llama.cpp offloads from the last layer down), with `n`
/// the most layers that fit on the GPU under the runtime's rule (llama.cpp's
/// by default: its 1 GiB fit margin on the GPU, none on host memory). Both
/// stages keep the KV cache of their layers (llama.cpp's default
/// `--kv-offload`). Decode runs the stages one after the other: the CPU's
/// bytes at its bandwidth, then the GPU's (unknown when the CPU's bandwidth
/// is). The level is `opts.quant`, else the highest-fidelity llama.cpp level
/// that leaves at least one layer on the GPU. `None` when no level does, or
/// when the whole model fits the GPU (no offload needed).
///
/// A mixture-of-experts model is split by experts instead when it can be
/// (llama.cpp `--n-cpu-moe`, `plan::inference::moe_offload`): every layer on the GPU but
/// the routed experts of the fewest first layers, which stay in host memory;
/// the plan's [`Plan::moe_offload`] says which and the bytes on each side.
pub fn plan_offload(
    spec: &ModelSpec,
    gpu: &PlanDevice,
    cpu: &PlanDevice,
    opts: &InferenceOptions,
) -> Option<Plan> {
    let spec = &*spec_for_options(spec, opts);
    if spec.moe.is_some()
        && let Some(p) = moe_offload::plan(spec, &[gpu], cpu, opts)
    {
        return Some(p);
    }
    let layers = spec.num_layers;
    if layers < 2 {
        return None;
    }
    let context = requested_context(spec, opts);
    let kv = opts.kv_dtype.unwrap_or(KvDtype::Fp16);
    let levels = match opts.quant {
        Some(q) => vec![q],
        None => candidate_levels(spec, true, RuntimeKind::LlamaCpp),
    };
    let replica = Replica {
        stages: vec![vec![cpu], vec![gpu]],
        expert_ranks: 1,
    };
    let single = Replica {
        stages: vec![vec![gpu]],
        expert_ranks: 1,
    };
    for quant in levels {
        let sizer = Sizer::new(spec, quant, kv, 1, 2, opts.batch, 1.0).for_options(opts);
        let whole = StageLayout {
            layers: vec![(0, layers)],
        };
        let one = Sizer::new(spec, quant, kv, 1, 1, opts.batch, 1.0).for_options(opts);
        if replica_fits(&one, &single, &whole, opts, context, opts.batch) {
            return None;
        }
        let Some(n) = (1..layers).rev().find(|&n| {
            let layout = StageLayout {
                layers: vec![(0, layers - n), (layers - n, layers)],
            };
            replica_fits(&sizer, &replica, &layout, opts, context, opts.batch)
        }) else {
            continue;
        };
        let layout = StageLayout {
            layers: vec![(0, layers - n), (layers - n, layers)],
        };
        let ev = evaluate_replica_with(
            spec,
            &replica,
            quant,
            kv,
            opts,
            context,
            1.0,
            0,
            Some(layout),
        )
        .ok()?;
        return Some(offload_plan(ev, 2, quant, kv, opts, context));
    }
    None
}

/// The plan of an offload layout (one replica of `stages` pipeline stages,
/// host CPU first) from its evaluation.
fn offload_plan(
    ev: Evaluated,
    stages: u32,
    quant: Quant,
    kv: KvDtype,
    opts: &InferenceOptions,
    context: u64,
) -> Plan {
    let per_sequence = ev.decode.map(|d| d / opts.batch.max(1) as f64);
    let lat = latencies(
        ev.prefill,
        per_sequence,
        opts.input_len.unwrap_or(context),
        opts.output_len,
        super::speed::request_seconds(opts, 1),
        opts.batch,
        prompts_in_own_passes(opts),
    );
    Plan {
        tensor_parallel: 1,
        pipeline_parallel: stages,
        data_parallel: 1,
        devices_used: stages,
        quantization: quant,
        kv_dtype: kv,
        per_device: ev.plan_devices,
        max_context_tokens: ev.max_context,
        max_batch: ev.max_batch,
        decode_tokens_per_s: ev.decode,
        decode_tokens_per_s_per_sequence: per_sequence,
        max_concurrent_sequences: ev.max_batch,
        tensor_parallel_link: None,
        prefill_tokens_per_s: ev.prefill,
        tp_comm_seconds_per_step: None,
        pp_comm_bytes_per_step: ev.pp_bytes,
        kv_cache_capacity_tokens: ev.kv_tokens,
        kv_cache_blocks: ev.kv_blocks,
        host_weights_bytes: 0,
        moe_offload: None,
        batch: opts.batch,
        ttft_ms: lat.ttft_ms,
        tpot_ms: lat.tpot_ms,
        request_latency_ms: lat.request_latency_ms,
        served_tpot_ms: lat.served_tpot_ms,
        served_ttft_ms: lat.served_ttft_ms,
        expert_parallel: 1,
    }
}

/// Seconds a decode step spends on the linear-attention layers' recurrent
/// state of `state_bytes` (all its sequences) on a device of `bw` bytes/s:
/// the state is read and written back whole each token (the gated delta
/// rule updates every element: Yang et al., "Gated Delta Networks",
/// arXiv:2412.06464), at the runtime's fitted fraction of the bandwidth for
/// it ([`super::speed::linear_state`]) with calibrated speeds, else at the
/// KV cache's. Its kernels run a few dozen heads, too few to fill a GPU:
/// llama.cpp PR 20391 saw 16-32 thread blocks against 80+ SMs, and PR
/// 22587 timed the CUDA kernel alone at 28.3 µs a token for a 2 MiB state
/// (32 heads of 128 × 128, F32) on an RTX 5090: 4 MiB moved at 8 % of its
/// 1792 GB/s.
fn linear_state_seconds(
    state_bytes: f64,
    bw: f64,
    d: &PlanDevice,
    opts: &InferenceOptions,
    kv_eff: f64,
) -> f64 {
    if state_bytes <= 0.0 {
        return 0.0;
    }
    let eff = opts
        .calibrated_speed
        .then(|| super::speed::linear_state(opts.runtime, super::speed::DeviceClass::of(d)))
        .flatten()
        .unwrap_or(kv_eff);
    2.0 * state_bytes / (bw * eff)
}

/// vLLM 0.20 and later refuse to start a hybrid model whose `max_num_seqs`
/// (the plan's, else vLLM's default for the GPU) exceeds the blocks of its
/// KV pool ("max_num_seqs (N) exceeds available Mamba cache blocks (M)";
/// [`crate::plan::runtime::VllmHybridBlocks`]): the warning for the best
/// plan where that would happen.
fn vllm_mamba_blocks_warning(
    opts: &InferenceOptions,
    devices: &[PlanDevice],
    plans: &[Plan],
) -> Option<String> {
    let best = plans.first()?;
    let blocks = best.kv_cache_blocks?;
    let used = best.per_device.first()?;
    let (given, seqs) = match opts.max_num_seqs {
        Some(n) => (true, n),
        None => {
            let d = devices.iter().find(|d| d.id == used.device)?;
            let visible =
                super::runtime::cuda_visible_bytes(d.spec_id.as_deref(), used.capacity_bytes);
            (
                false,
                super::runtime::vllm_batch_defaults(visible, &d.name).1,
            )
        }
    };
    (seqs > blocks).then(|| {
        format!(
            "vLLM 0.20 and later refuse to start this hybrid model with max_num_seqs {seqs} ({}): \
             the KV pool of one GPU holds {blocks} blocks and each running sequence needs one of \
             them (\"max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({blocks})\"); \
             serve it with --max-num-seqs {blocks} or fewer{}",
            if given {
                "as given"
            } else {
                "vLLM's default for this GPU"
            },
            if given {
                ""
            } else {
                " (the command --emit vllm writes passes the sequences the plan holds)"
            }
        )
    })
}

/// Seconds per prompt token a stage (layers `a..b`) spends reading its
/// routed experts once per llama.cpp micro-batch
/// ([`super::runtime::llamacpp::n_ubatch`], at most the prompt): the
/// experts the pass's tokens route to (`1 − (1 − k/E)^n` of them for `n`
/// tokens, as `Sizer` counts a batch's), at `bandwidth` bytes/s, over the
/// pass's tokens. An expert's GEMM over the few tokens routed to it reads
/// its whole matrix for them: at 16 tokens an expert (gpt-oss-120b: 128
/// experts, 4 a token, in llama.cpp's 512-token micro-batch) the reads,
/// not the matrix units, bound it. The dense matrices' GEMMs run over the
/// whole pass and their reads hide under their FLOPs, which the fitted
/// fractions describe; they are not added.
fn prompt_pass_weight_seconds(
    spec: &ModelSpec,
    (quant, kv): (Quant, KvDtype),
    replica: &Replica,
    (a, b): (u32, u32),
    opts: &InferenceOptions,
    (prompt, scale): (u64, f64),
    bandwidth: f64,
) -> f64 {
    if spec.moe.is_none() || bandwidth <= 0.0 {
        return 0.0;
    }
    // llama.cpp's micro-batch, at most the prompt.
    let pass = prompt.clamp(1, super::runtime::llamacpp::n_ubatch(opts));
    let sizer = Sizer::with_expert_ranks(
        spec,
        quant,
        kv,
        replica.stages[0].len() as u32,
        replica.stages.len() as u32,
        pass,
        scale,
        replica.expert_ranks,
    )
    .for_options(opts);
    let routed = sizer.expert_read_prefix[b as usize] - sizer.expert_read_prefix[a as usize];
    routed / pass as f64 / bandwidth
}

/// The recurrent state one sequence holds in a model's linear-attention
/// layers, in bytes, as `runtime` keeps it (llama.cpp: F32; see
/// `Sizer::for_runtime`); 0 for a model without such layers.
pub fn linear_state_bytes(spec: &ModelSpec, runtime: RuntimeKind) -> f64 {
    let sizer = Sizer::new(spec, Quant::Bf16, KvDtype::Bf16, 1, 1, 1, 1.0).for_runtime(runtime);
    sizer.linear_state(0, spec.num_layers, 1)
}

/// [`super::speed::fitted_for`] on `d` for weights `quant` under a plan's
/// runtime, backend and build options.
pub(crate) fn fitted_under(
    d: &PlanDevice,
    opts: &InferenceOptions,
    quant: Quant,
) -> super::speed::Applied {
    super::speed::fitted_for(
        d,
        opts.runtime,
        quant,
        opts.backend,
        opts.runtime_build,
        opts.cuda_force_mmq,
    )
}

/// [`super::speed::prompt_rate`] on `d` for weights `quant` computed in
/// `compute` under a plan's runtime, backend and build options.
pub(crate) fn prompt_rate_under(
    d: &PlanDevice,
    opts: &InferenceOptions,
    quant: Quant,
    compute: Dtype,
) -> Option<f64> {
    super::speed::prompt_rate(
        d,
        opts.runtime,
        quant,
        compute,
        opts.backend,
        opts.runtime_build,
        opts.cuda_force_mmq,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_degrees_are_exhaustive_then_even_splits() {
        // 36 layers, up to 40 stage groups: 1–16, then 18 and 36 (divide
        // 36) and 32 (a power of two); never more stages than allowed.
        let mut want: Vec<u32> = (1..=16).collect();
        want.extend([18, 32, 36]);
        assert_eq!(pipeline_degrees(40, 36), want);
        assert_eq!(pipeline_degrees(3, 36), vec![1, 2, 3]);
        assert!(pipeline_degrees(0, 36).is_empty());
        // A 3,136-layer model on 4,096 groups: a few dozen degrees, not 3,136.
        let many = pipeline_degrees(3136, 3136);
        assert!(many.len() < 60, "{}", many.len());
        assert!(many.contains(&3136) && many.contains(&2048) && many.contains(&392));
    }
}

/// llama.cpp's partial offload runs a prompt's host layers on the GPU
/// (`op_offload_target`): their FLOPs at the GPU's rate plus their weights
/// and KV cache copied over PCIe once per 512-token ubatch; a prompt under
/// 32 tokens computes them on the CPU.
#[cfg(test)]
mod op_offload_tests {
    use super::*;

    fn host() -> PlanDevice {
        PlanDevice {
            id: "cpu".into(),
            name: "host".into(),
            spec_id: None,
            capacity_bytes: Some(32 << 30),
            bandwidth_bytes_per_s: Some(50_000_000_000),
            // No compute rate: a stage computed on this CPU has no prefill
            // speed, which tells the two paths apart.
            tflops: Default::default(),
            native_dtypes: None,
            link: None,
            link_bandwidth_bytes_per_s: None,
            domain: 9,
            pcie_bandwidth_bytes_per_s: None,
            host: true,
            cpu_features: vec!["avx2".into()],
            cpu_spec_id: None,
            bandwidth_basis: None,
            compute_basis: None,
            machine: 0,
            vulkan_matrix_cores: None,
        }
    }

    /// `InferenceOptions::gguf_imatrix` reaches every planner entry: the
    /// layer offload of Llama-3.1-8B at Q4_0 on an 8 GB card holds the
    /// first eighth of ffn_down at Q4_1 with it, as the whole-GPU plan
    /// does, and so weighs more than without it.
    #[test]
    fn the_imatrix_option_reaches_the_offload_plans() {
        let spec = crate::plan::load_model("llama-3.1-8b").unwrap().spec;
        let gpu = PlanDevice {
            id: "gpu0".into(),
            capacity_bytes: Some(4 << 30),
            ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
        };
        let opts = |imatrix| InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            quant: Some(Quant::Q4_0),
            gguf_imatrix: imatrix,
            ..Default::default()
        };
        let weights = |p: &Plan| -> u64 {
            p.per_device.iter().map(|d| d.weights_bytes).sum::<u64>() + p.host_weights_bytes
        };
        let offload = |imatrix| plan_offload(&spec, &gpu, &host(), &opts(imatrix)).unwrap();
        let (plain, with) = (weights(&offload(false)), weights(&offload(true)));
        assert!(with > plain, "{with} {plain}");
        let whole = |imatrix| {
            let p = plan_inference(
                &spec,
                &[PlanDevice::from_device_string("1xh100-sxm").unwrap()[0].clone()],
                &opts(imatrix),
            );
            weights(&p.plans[0])
        };
        assert_eq!(whole(true) - whole(false), with - plain);
    }

    #[test]
    fn prompt_of_host_layers_runs_on_the_gpu_over_pcie() {
        let spec = crate::plan::load_model("llama-3.1-8b").unwrap().spec;
        let gpu = PlanDevice {
            id: "gpu0".into(),
            capacity_bytes: Some(8 << 30),
            ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
        };
        let pcie = gpu
            .pcie_bandwidth_bytes_per_s
            .expect("the 4090's PCIe link") as f64;
        let cpu = host();
        let opts = InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            quant: Some(Quant::Bf16),
            // The options' 0.5 prefill fraction and no per-layer time.
            calibrated_speed: false,
            input_len: Some(4096),
            ..Default::default()
        };
        let p = plan_offload(&spec, &gpu, &cpu, &opts).expect("an offload plan");
        let (c, g) = (&p.per_device[0], &p.per_device[1]);
        let nc = f64::from(c.layers.1 - c.layers.0);
        let ng = f64::from(g.layers.1 - g.layers.0);
        assert!(nc >= 1.0 && ng >= 1.0);
        let rate = super::super::speed::reference_tflops(&gpu, opts.runtime, Dtype::Bf16, None)
            .unwrap()
            * 1e12
            * 0.5;
        // Per token: 2 × a layer's 218,112,000 parameters, and attention
        // over half the 4,096-token prompt (32 heads × 128); the GPU stage
        // also runs the output layer (128,256 × 4,096).
        let layer = 2.0 * 218_112_000.0 + 2.0 * 2048.0 * 4096.0;
        let head = 2.0 * 128_256.0 * 4096.0;
        // Copied per ubatch: the host layers' weights without the embedding
        // (a lookup, never offloaded) and their cache at 2,048 tokens (the
        // stage holds it at 4,096).
        let embedding = 128_256.0 * 4096.0 * 2.0;
        let copied = c.weights_bytes as f64 - embedding + c.kv_cache_bytes as f64 / 2.0;
        let t = nc * layer / rate + copied / (pcie / 2.0) / 512.0 + (ng * layer + head) / rate;
        let got = p.prefill_tokens_per_s.expect("a prefill speed");
        assert!((got - 1.0 / t).abs() * t < 0.02, "{got} vs {}", 1.0 / t);
        // The copy is most of the host layers' time on this PCIe link.
        assert!(copied / (pcie / 2.0) / 512.0 > nc * layer / rate);

        // A 16-token prompt stays on the CPU, whose rate is unknown here.
        let short = InferenceOptions {
            input_len: Some(16),
            ..opts.clone()
        };
        let p = plan_offload(&spec, &gpu, &cpu, &short).unwrap();
        assert_eq!(p.prefill_tokens_per_s, None);
        // An unknown PCIe link leaves the prompt's speed unknown.
        let unlinked = PlanDevice {
            pcie_bandwidth_bytes_per_s: None,
            ..gpu.clone()
        };
        let p = plan_offload(&spec, &unlinked, &cpu, &opts).unwrap();
        assert_eq!(p.prefill_tokens_per_s, None);
        // Other runtimes compute a host stage on the host.
        assert!(!offloads_host_ops(&gpu, &InferenceOptions::default()));
        assert!(offloads_host_ops(&gpu, &opts));
        let metal = InferenceOptions {
            backend: Some(super::super::runtime::GgmlBackend::Metal),
            ..opts.clone()
        };
        assert!(!offloads_host_ops(&gpu, &metal));
    }

    #[test]
    fn decode_gemms_add_up_under_vllm_above_one_sequence() {
        // Default fractions (0.6 of the bandwidth, 0.5 of the matrix rate),
        // one H100 SXM, Llama 3 8B in BF16 at a short context: at batch 1
        // vLLM's step is the generic runtime's (the roofline); at 256 it
        // also waits for the shorter of the two, the weights' bytes here.
        let spec = crate::plan::load_model("llama-3-8b").unwrap().spec;
        let devices = PlanDevice::from_device_string("1xh100-sxm").unwrap();
        let tpot = |runtime, batch| {
            plan_inference(
                &spec,
                &devices,
                &InferenceOptions {
                    runtime,
                    batch,
                    quant: Some(Quant::Bf16),
                    context: Some(256),
                    calibrated_speed: false,
                    ..Default::default()
                },
            )
            .plans
            .remove(0)
            .tpot_ms
            .unwrap()
        };
        let (v1, g1) = (tpot(RuntimeKind::Vllm, 1), tpot(RuntimeKind::Generic, 1));
        assert!((v1 - g1).abs() < 1e-9 * g1, "{v1} {g1}");
        let (v, g) = (
            tpot(RuntimeKind::Vllm, 256),
            tpot(RuntimeKind::Generic, 256),
        );
        let params = spec.parameters() as f64;
        let bw = devices[0].bandwidth_bytes_per_s.unwrap() as f64;
        let rate = devices[0].tflops_for(Dtype::Bf16).unwrap() * 1e12;
        let weights_ms = 2.0 * params / (bw * DEFAULT_DECODE_EFFICIENCY) * 1e3;
        let flops_ms = 256.0 * 2.0 * params / (rate * DEFAULT_PREFILL_EFFICIENCY) * 1e3;
        let want = weights_ms.min(flops_ms);
        assert!(
            (v - g - want).abs() < 0.1 * want,
            "{v} {g} {want} ({weights_ms} / {flops_ms})"
        );
        // llama.cpp keeps the roofline at every batch.
        let l = tpot(RuntimeKind::LlamaCpp, 256);
        assert!(l < g + 0.1 * want, "{l} {g}");
        assert!(!super::super::speed::decode_gemms_overlap(
            RuntimeKind::Sglang,
            2
        ));
        assert!(super::super::speed::decode_gemms_overlap(
            RuntimeKind::Trtllm,
            1
        ));
        assert!(super::super::speed::decode_gemms_overlap(
            RuntimeKind::LlamaCpp,
            64
        ));
    }

    #[test]
    fn served_tpot_adds_the_other_requests_prompts() {
        // Batch 1: no other request, the plain TPOT.
        assert_eq!(
            served_tpot(Some(20.0), Some(1600.0), 1, 500, Some(250), None),
            Some(20.0)
        );
        // Batch 9: 8 others start once per 250 steps, 8 × 500 ÷ 250 = 16
        // prompt tokens a step at 1600 tok/s = 10 ms more.
        let s = served_tpot(Some(20.0), Some(1600.0), 9, 500, Some(250), None).unwrap();
        assert!((s - 30.0).abs() < 1e-9, "{s}");
        // Prompts run in passes of their own (SGLang), each with a fixed
        // 50 ms: λ = 8 ÷ 250 arrive a step, so a fraction 1 − e^(−0.032)
        // of the steps waits 50 ms more (1.575 ms a step), on top of the
        // same 10 ms of prompt tokens.
        let p = served_tpot(Some(20.0), Some(1600.0), 9, 500, Some(250), Some(0.05)).unwrap();
        let want = 30.0 + (1.0 - (-0.032f64).exp()) * 50.0;
        assert!((p - want).abs() < 1e-9, "{p} {want}");
        assert!((p - 31.575).abs() < 1e-3, "{p}");
        // Many arrivals a step share one pass: the fixed part tends to one
        // pass a step, never one per prompt.
        let busy = served_tpot(Some(20.0), Some(1600.0), 201, 500, Some(25), Some(0.05)).unwrap();
        let tokens = 200.0 / 25.0 * 500.0 / 1600.0 * 1000.0;
        assert!(
            busy < 20.0 + tokens + 50.0 && busy > 20.0 + tokens + 49.9,
            "{busy}"
        );
        // At batch 1 no pass interrupts the request's own decode.
        assert_eq!(
            served_tpot(Some(20.0), Some(1600.0), 1, 500, Some(250), Some(0.05)),
            Some(20.0)
        );
        // No output length, or no prefill rate above batch 1: unknown.
        assert_eq!(
            served_tpot(Some(20.0), Some(1600.0), 9, 500, None, None),
            None
        );
        assert_eq!(served_tpot(Some(20.0), None, 9, 500, Some(250), None), None);
        // A plan carries it: equal to tpot_ms at batch 1, above it at 16.
        let spec = crate::plan::load_model("llama-3-8b").unwrap().spec;
        let plan = |batch| {
            plan_inference(
                &spec,
                &PlanDevice::from_device_string("1xh100-sxm").unwrap(),
                &InferenceOptions {
                    runtime: RuntimeKind::Vllm,
                    batch,
                    input_len: Some(2000),
                    output_len: Some(200),
                    context: Some(2200),
                    ..Default::default()
                },
            )
            .plans
            .remove(0)
        };
        let one = plan(1);
        assert_eq!(one.served_tpot_ms, one.tpot_ms);
        let many = plan(16);
        let (t, s) = (many.tpot_ms.unwrap(), many.served_tpot_ms.unwrap());
        let prefill = many.prefill_tokens_per_s.unwrap();
        let want = t + 15.0 * 2000.0 / 200.0 / prefill * 1000.0;
        assert!((s - want).abs() < 1e-6 * want, "{s} {want}");
        // 2000-token prompts arriving at 16 requests add about half a step.
        assert!(s > 1.4 * t, "{s} {t}");
        // A request arriving in the loop waits for the step in progress
        // and then the step that carries its prompt (vLLM mixes prompts
        // into the decode steps): two served steps beyond the idle TTFT;
        // its later tokens come at the served TPOT.
        assert_eq!(one.served_ttft_ms, one.ttft_ms);
        let f = many.served_ttft_ms.unwrap();
        let want = many.ttft_ms.unwrap() + 2.0 * s;
        assert!((f - want).abs() < 1e-9 * want, "{f} {want}");
        let req = many.request_latency_ms.unwrap();
        let want = f + 199.0 * s;
        assert!((req - want).abs() < 1e-6 * want, "{req} {want}");
    }

    #[test]
    fn served_ttft_waits_for_the_steps_in_progress() {
        // Batch 1: an idle replica.
        assert_eq!(served_ttft(Some(50.0), Some(20.0), 1, false), Some(50.0));
        // Mixed steps: the step in progress, then the one with the prompt.
        assert_eq!(served_ttft(Some(50.0), Some(20.0), 8, false), Some(90.0));
        // A pass of its own (SGLang): only the step in progress.
        assert_eq!(served_ttft(Some(50.0), Some(20.0), 8, true), Some(70.0));
        assert_eq!(served_ttft(None, Some(20.0), 8, true), None);
        assert_eq!(served_ttft(Some(50.0), None, 8, true), None);
    }

    #[test]
    fn closed_loop_ttft_holds_the_first_burst_and_the_wait_for_a_slot() {
        let spec = crate::plan::load_model("llama-3.1-8b").unwrap().spec;
        let opts = |batch| InferenceOptions {
            runtime: RuntimeKind::Vllm,
            batch,
            input_len: Some(1000),
            output_len: Some(100),
            context: Some(1100),
            ..Default::default()
        };
        let d = PlanDevice::from_device_string("1xh100-sxm").unwrap();
        let p = plan_inference(&spec, &d, &opts(4)).plans.remove(0);
        let fixed = crate::plan::speed::request_seconds(&opts(4), 1) * 1000.0;
        let idle = p.ttft_ms.unwrap();
        let per_token = (idle - fixed) / 1000.0;
        let steady = p.served_ttft_ms.unwrap();
        // Four clients, passes of 1500 tokens: the prompts end at 1000,
        // 2000, 3000 and 4000 tokens, their passes at 1500, 3000, 3000 and
        // 4000 (the last holds what is left); then 16 more requests at the
        // steady loop's TTFT.
        let burst = 4.0 * fixed + (1500.0 + 3000.0 + 3000.0 + 4000.0) * per_token;
        let want = (burst + 16.0 * steady) / 20.0;
        let got = closed_loop_ttft_ms(&p, &opts(4), 1500, 4, 20).unwrap();
        assert!((got - want).abs() < 1e-9 * want, "{got} {want}");
        // One client: the idle TTFT, whatever the budget.
        let one = plan_inference(&spec, &d, &opts(1)).plans.remove(0);
        let got = closed_loop_ttft_ms(&one, &opts(1), 512, 1, 50).unwrap();
        assert!((got - idle).abs() < 1e-9 * idle, "{got} {idle}");
        // More clients than the KV cache holds: H = max_batch at once, and
        // every later request also waits (C − H) ÷ H request latencies.
        let h = p.max_batch;
        let c = 3 * h;
        let n = 10 * c;
        let full = plan_inference(&spec, &d, &opts(h)).plans.remove(0);
        let got = closed_loop_ttft_ms(&full, &opts(h), 8192, c, n).unwrap();
        let wait = 2.0 * full.request_latency_ms.unwrap();
        let later = (n - h) as f64 * (full.served_ttft_ms.unwrap() + wait) / n as f64;
        assert!(got > later, "{got} {later}");
        assert!(got < later + full.ttft_ms.unwrap() * h as f64, "{got}");
    }

    #[test]
    fn sglang_serves_arriving_prompts_in_passes_of_their_own() {
        // The same model, devices and traffic under vLLM (prompts in the
        // decode steps' batches) and SGLang (a prefill pass before the next
        // decode step): SGLang's served TPOT also holds the pass's fixed
        // part, the runtime's per-request seconds, on the fraction
        // 1 − e^(−λ) of steps that a prompt arrives in.
        let spec = crate::plan::load_model("llama-3.1-70b").unwrap().spec;
        // The whole answer (its warnings too) and its TP8 plan.
        let planned = |runtime, mixed_prefill| {
            let p = plan_inference(
                &spec,
                &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
                &InferenceOptions {
                    runtime,
                    batch: 64,
                    input_len: Some(500),
                    output_len: Some(500),
                    context: Some(1000),
                    mixed_prefill,
                    ..Default::default()
                },
            );
            let tp8 = p.plans.iter().find(|x| x.tensor_parallel == 8).cloned();
            (p.warnings, tp8.expect("a TP8 plan"))
        };
        let plan = |runtime| planned(runtime, false).1;
        let sglang = plan(RuntimeKind::Sglang);
        assert_eq!(sglang.tensor_parallel, 8);
        let (t, s) = (sglang.tpot_ms.unwrap(), sglang.served_tpot_ms.unwrap());
        let prefill = sglang.prefill_tokens_per_s.unwrap();
        let opts = InferenceOptions {
            runtime: RuntimeKind::Sglang,
            ..Default::default()
        };
        let pass = crate::plan::speed::request_seconds(&opts, 8);
        assert!(pass > 0.0, "SGLang takes a fitted per-request time");
        let lambda: f64 = 63.0 / 500.0;
        let want = t + (lambda * 500.0 / prefill + (1.0 - (-lambda).exp()) * pass) * 1000.0;
        assert!((s - want).abs() < 1e-6 * want, "{s} {want}");
        // vLLM's steps carry the prompt tokens only.
        let vllm = plan(RuntimeKind::Vllm);
        let (vt, vs) = (vllm.tpot_ms.unwrap(), vllm.served_tpot_ms.unwrap());
        let vwant = vt + lambda * 500.0 / vllm.prefill_tokens_per_s.unwrap() * 1000.0;
        assert!((vs - vwant).abs() < 1e-6 * vwant, "{vs} {vwant}");
        assert!(
            s - t > vs - vt,
            "SGLang's stall {} ≤ vLLM's {}",
            s - t,
            vs - vt
        );
        // Launched with --enable-mixed-chunk (`mixed_prefill`), SGLang's
        // steps carry the prompt tokens as vLLM's do; vLLM is told nothing
        // new and says so.
        let (sw, smp) = planned(RuntimeKind::Sglang, true);
        let want =
            smp.tpot_ms.unwrap() + lambda * 500.0 / smp.prefill_tokens_per_s.unwrap() * 1000.0;
        let got = smp.served_tpot_ms.unwrap();
        assert!((got - want).abs() < 1e-6 * want, "{got} {want}");
        assert!(got < s, "{got} {s}");
        assert!(!sw.iter().any(|w| w.contains("mixed prefill")), "{sw:?}");
        let (vw, vmp) = planned(RuntimeKind::Vllm, true);
        assert_eq!(vmp.served_tpot_ms, vllm.served_tpot_ms);
        // Plans carry how far each runtime's served TPOT is from its
        // published serving runs (`speed::SERVING_ACCURACY`), and none where
        // the runtime has none or SGLang is told to mix its prompts.
        let basis = |runtime, mixed_prefill| {
            plan_inference(
                &spec,
                &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
                &InferenceOptions {
                    runtime,
                    mixed_prefill,
                    ..Default::default()
                },
            )
            .speed_basis
            .map(|b| (b.served_tpot, b.served_ttft))
            .unwrap_or_default()
        };
        let table = |runtime| {
            let find = |t: &[(RuntimeKind, crate::plan::speed::Accuracy)]| {
                t.iter().find(|(r, _)| *r == runtime).map(|(_, a)| *a)
            };
            (
                find(crate::plan::speed::SERVING_ACCURACY),
                find(crate::plan::speed::SERVING_TTFT_ACCURACY),
            )
        };
        for runtime in [RuntimeKind::Sglang, RuntimeKind::Vllm] {
            let (a, f) = basis(runtime, false);
            let (a, f) = (a.expect("serving runs"), f.expect("their TTFT"));
            assert_eq!((Some(a), Some(f)), table(runtime));
            assert!(a.rows >= 20 && a.held_out_rows == a.rows, "{a:?}");
            assert_eq!(f.rows, a.rows, "{f:?}");
        }
        assert_eq!(basis(RuntimeKind::Sglang, true), (None, None));
        assert_eq!(basis(RuntimeKind::Vllm, true), table(RuntimeKind::Vllm));
        assert_eq!(basis(RuntimeKind::LlamaCpp, false), (None, None));
        assert_eq!(basis(RuntimeKind::Generic, false), (None, None));
        assert!(vw.iter().any(|w| w.contains("mixed prefill")), "{vw:?}");
        assert!(super::super::runtime::runtime(RuntimeKind::Sglang).prompts_between_decode_steps());
        for kind in [
            RuntimeKind::Vllm,
            RuntimeKind::LlamaCpp,
            RuntimeKind::Trtllm,
            RuntimeKind::Generic,
        ] {
            assert!(
                !super::super::runtime::runtime(kind).prompts_between_decode_steps(),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn builds_with_slow_prompt_kernels_are_warned() {
        use super::super::runtime::GgmlBackend;
        use super::super::speed::BuildMonth;
        let plan = |model: &str,
                    devices: &str,
                    quant: Quant,
                    backend: Option<GgmlBackend>,
                    build: Option<BuildMonth>| {
            plan_inference(
                &crate::plan::load_model(model).unwrap().spec,
                &PlanDevice::from_device_string(devices).unwrap(),
                &InferenceOptions {
                    quant: Some(quant),
                    runtime: RuntimeKind::LlamaCpp,
                    backend,
                    runtime_build: build,
                    ..Default::default()
                },
            )
        };
        let warned = |p: &InferencePlan| {
            p.warnings
                .iter()
                .any(|w| w.contains("upper bound for that build"))
        };
        let aug = Some(BuildMonth::ym(2025, 8));
        let vk = Some(GgmlBackend::Vulkan);
        // The RTX 5090's Qwen3 30B-A3B Q4_K_M prompt of August 2025 under
        // Vulkan (speed.csv: 3971 tok/s where the plan gives over 9000).
        let moe = plan("qwen3-30b-a3b", "1xrtx-5090", Quant::Q4K, vk, aug);
        assert!(warned(&moe), "{:?}", moe.warnings);
        assert!(moe.warnings.iter().any(|w| w.contains("15427")));
        // The Max 1100's llama 7B Q4_0 prompt of May 2025 under SYCL (its
        // own backend).
        let may = Some(BuildMonth::ym(2025, 5));
        let q40 = plan("llama-2-7b", "1xmax-1100", Quant::Q4_0, None, may);
        assert!(warned(&q40), "{:?}", q40.warnings);
        assert!(q40.warnings.iter().any(|w| w.contains("13536")));
        // Outside the windows: a build of September 2025, the newest build,
        // CUDA or a dense model for the first; Q4_K, June 2025 or February
        // 2025 for the second.
        let m = |y, mo| Some(BuildMonth::ym(y, mo));
        for (model, devices, quant, backend, build) in [
            ("qwen3-30b-a3b", "1xrtx-5090", Quant::Q4K, vk, m(2025, 9)),
            ("qwen3-30b-a3b", "1xrtx-5090", Quant::Q4K, vk, None),
            ("qwen3-30b-a3b", "1xrtx-5090", Quant::Q4K, None, aug),
            ("llama-3-8b", "1xrtx-5090", Quant::Q4K, vk, aug),
            ("llama-2-7b", "1xmax-1100", Quant::Q4K, None, may),
            ("llama-2-7b", "1xmax-1100", Quant::Q4_0, None, m(2025, 6)),
            ("llama-2-7b", "1xmax-1100", Quant::Q4_0, None, m(2025, 2)),
        ] {
            let p = plan(model, devices, quant, backend, build);
            assert!(
                !warned(&p),
                "{model} {devices} {quant:?} {backend:?} {build:?}"
            );
        }
    }

    /// A W4A4 MXFP4 checkpoint (`ModelSpec::activations_mxfp4`) multiplies
    /// in FP4 under vLLM and SGLang on an MI355X (gfx950), and is emulated,
    /// with a warning, at the 16-bit rate elsewhere; llama.cpp has no such
    /// path; weight-only MXFP4 keeps the 16-bit rate everywhere.
    #[test]
    fn w4a4_mxfp4_multiplies_in_fp4_where_the_runtime_can() {
        let mut spec = crate::plan::load_model("llama-3.3-70b").unwrap().spec;
        let plan = |spec: &ModelSpec, devices: &str, runtime: RuntimeKind| {
            plan_inference(
                spec,
                &PlanDevice::from_device_string(devices).unwrap(),
                &InferenceOptions {
                    runtime,
                    quant: Some(Quant::Mxfp4),
                    input_len: Some(8192),
                    context: Some(9216),
                    ..Default::default()
                },
            )
        };
        let prefill = |p: &InferencePlan| p.plans[0].prefill_tokens_per_s.unwrap();
        let emulated = |p: &InferencePlan| p.warnings.iter().any(|w| w.contains("emulates"));
        // Weight-only MXFP4 (gpt-oss's kind): 16-bit multiplies everywhere.
        let w4a16 = plan(&spec, "1xmi355x", RuntimeKind::Vllm);
        spec.activations_mxfp4 = true;
        for runtime in [RuntimeKind::Vllm, RuntimeKind::Sglang] {
            let w4a4 = plan(&spec, "1xmi355x", runtime);
            // The MI355X's FP4 rate is twice its FP8 and four times its
            // 16-bit one; the fitted fraction and the attention FLOPs keep
            // the gain below 4×.
            let gain = prefill(&w4a4) / prefill(&w4a16);
            assert!(gain > 1.5 && gain < 4.0, "{runtime:?}: {gain}");
            assert!(!emulated(&w4a4), "{:?}", w4a4.warnings);
        }
        // Emulated elsewhere: the 16-bit plan, and a warning.
        let h100 = plan(&spec, "1xh100-sxm", RuntimeKind::Vllm);
        assert!(emulated(&h100), "{:?}", h100.warnings);
        spec.activations_mxfp4 = false;
        let h100_w4a16 = plan(&spec, "1xh100-sxm", RuntimeKind::Vllm);
        assert_eq!(prefill(&h100), prefill(&h100_w4a16));
        assert!(!emulated(&h100_w4a16));
        // llama.cpp has no such path.
        spec.activations_mxfp4 = true;
        let llama = plan(&spec, "1xmi355x", RuntimeKind::LlamaCpp);
        assert!(!emulated(&llama));
        spec.activations_mxfp4 = false;
        let llama_w4a16 = plan(&spec, "1xmi355x", RuntimeKind::LlamaCpp);
        assert_eq!(prefill(&llama), prefill(&llama_w4a16));
    }

    /// A checkpoint stored in MXFP4 is planned at MXFP4 on a GPU without
    /// FP4 units, as the runtime loads it; other models are not suggested
    /// MXFP4 there.
    #[test]
    fn a_stored_mxfp4_checkpoint_keeps_its_level_without_fp4_units() {
        let mut spec = crate::plan::load_model("llama-3.1-8b").unwrap().spec;
        let level = |spec: &ModelSpec| {
            plan_inference(
                spec,
                &PlanDevice::from_device_string("1xh100-sxm").unwrap(),
                &InferenceOptions {
                    runtime: RuntimeKind::Vllm,
                    ..Default::default()
                },
            )
            .quantization
        };
        assert_ne!(level(&spec), Quant::Mxfp4);
        spec.torch_dtype = Some("mxfp4".into());
        assert_eq!(level(&spec), Quant::Mxfp4);
    }

    /// A device whose own published runs' median error passes the worst
    /// error the calibration aims at is warned about, with those runs'
    /// figures, and every basis names its device's runs: the RTX 2080 Ti's
    /// Vulkan prompts (far off) apart from its CUDA ones (not), a memory
    /// configuration of the same chip takes the chip's runs, and one with
    /// another bandwidth (the 8 GB RTX 3060) does not.
    #[test]
    fn far_device_runs_are_warned() {
        use super::super::runtime::GgmlBackend;
        use super::super::speed::{DEVICE_RUNS_WARN, DeviceClass, device_runs};
        let spec = crate::plan::load_model("tinyllama-1.1b").unwrap().spec;
        let plan = |devices: &str, backend: Option<GgmlBackend>| {
            plan_inference(
                &spec,
                &PlanDevice::from_device_string(devices).unwrap(),
                &InferenceOptions {
                    runtime: RuntimeKind::LlamaCpp,
                    quant: Some(Quant::Q4K),
                    backend,
                    ..Default::default()
                },
            )
        };
        let warned = |p: &InferencePlan| p.warnings.iter().any(|w| w.contains("fell far"));
        let prefill_runs = |p: &InferencePlan| {
            p.speed_basis
                .and_then(|b| b.prefill)
                .and_then(|b| b.device_runs)
                .expect("the device's prefill runs")
        };
        let vulkan = plan("1xrtx-2080-ti", Some(GgmlBackend::Vulkan));
        assert!(warned(&vulkan), "{:?}", vulkan.warnings);
        let runs = prefill_runs(&vulkan);
        assert_eq!(
            Some(runs),
            device_runs(
                RuntimeKind::LlamaCpp,
                DeviceClass::NvidiaConsumer,
                Some(GgmlBackend::Vulkan),
                "rtx-2080-ti",
                true
            )
        );
        assert!(
            runs.rows >= 2 && runs.median > DEVICE_RUNS_WARN.1,
            "{runs:?}"
        );
        let w = vulkan
            .warnings
            .iter()
            .find(|w| w.contains("fell far"))
            .unwrap();
        assert!(
            w.contains("under Vulkan") && w.contains(&format!("{:.0} %", 100.0 * runs.median)),
            "{w}"
        );
        // Its CUDA runs (the vendor's own backend) are another key.
        let cuda = plan("1xrtx-2080-ti", None);
        assert!(!warned(&cuda), "{:?}", cuda.warnings);
        let cuda_runs = prefill_runs(&cuda);
        assert!(cuda_runs.median < DEVICE_RUNS_WARN.1 && cuda_runs != runs);
        // The 12 GB RTX 3060's configuration id is the same chip as the
        // entry its runs name; the 8 GB card's bandwidth is not.
        let same = |id: &str| {
            plan(&format!("1x{id}"), Some(GgmlBackend::Vulkan))
                .speed_basis
                .and_then(|b| b.decode)
                .and_then(|b| b.device_runs)
        };
        assert!(same("rtx-3060").is_some());
        assert_eq!(same("rtx-3060-12gb"), same("rtx-3060"));
        assert_eq!(same("rtx-3060-8gb"), None);
        // Every key names a spec entry.
        for (.., id, _, _) in super::super::speed::DEVICE_RUNS {
            assert!(crate::spec::by_id(id).is_some(), "{id}");
        }
    }

    /// A device whose published runs under the runtime the fit leaves out
    /// (latency.csv's `not fitted` rows) is warned about and its basis
    /// carries its own accuracy; the same device under another runtime, and
    /// a device of the same class without such rows, are not.
    #[test]
    fn unconfirmed_device_speed_is_warned() {
        let spec = crate::plan::load_model("llama-3-8b").unwrap().spec;
        let plan = |devices: &str, runtime: RuntimeKind| {
            plan_inference(
                &spec,
                &PlanDevice::from_device_string(devices).unwrap(),
                &InferenceOptions {
                    runtime,
                    ..Default::default()
                },
            )
        };
        let warned = |p: &InferencePlan| p.warnings.iter().any(|w| w.contains("not confirmed"));
        let h20 = plan("1xh20-3e", RuntimeKind::Vllm);
        assert!(warned(&h20), "{:?}", h20.warnings);
        let basis = h20.speed_basis.unwrap().decode.unwrap();
        let own = basis.device_accuracy.expect("the H20-3e's own runs");
        assert_eq!(
            Some(own),
            super::super::speed::device_accuracy(RuntimeKind::Vllm, "h20-3e", false)
        );
        assert!(own.rows >= 3 && own.median > 0.25, "{own:?}");
        let h200 = plan("1xh200", RuntimeKind::Vllm);
        assert!(!warned(&h200), "{:?}", h200.warnings);
        assert_eq!(
            h200.speed_basis.unwrap().decode.unwrap().device_accuracy,
            None
        );
        assert!(!warned(&plan("1xh20-3e", RuntimeKind::LlamaCpp)));
        // Uncalibrated speeds state no fitted cell, so nothing to warn of.
        let raw = plan_inference(
            &spec,
            &PlanDevice::from_device_string("1xh20-3e").unwrap(),
            &InferenceOptions {
                runtime: RuntimeKind::Vllm,
                calibrated_speed: false,
                ..Default::default()
            },
        );
        assert!(!warned(&raw));
    }

    #[test]
    fn basis_device_is_the_first_accelerator() {
        let gpu = PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone();
        let cpu = host();
        assert_eq!(
            basis_device(&[cpu.clone(), gpu.clone()]).map(|d| d.id.as_str()),
            Some(gpu.id.as_str())
        );
        assert_eq!(
            basis_device(std::slice::from_ref(&cpu)).map(|d| d.id.as_str()),
            Some("cpu")
        );
        assert!(basis_device(&[]).is_none());
        // A plan over the host and the GPU describes the GPU's fitted cell.
        let spec = crate::plan::load_model("llama-3.1-8b").unwrap().spec;
        let plan = plan_inference(
            &spec,
            &[cpu, gpu],
            &InferenceOptions {
                runtime: RuntimeKind::LlamaCpp,
                quant: Some(Quant::Q4K),
                ..Default::default()
            },
        );
        let b = plan.speed_basis.expect("calibrated");
        assert_eq!(
            b.decode.map(|f| f.class),
            Some(super::super::speed::DeviceClass::NvidiaConsumer)
        );
        assert!(plan.speed_build.is_some());
    }
}
