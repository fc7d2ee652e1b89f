//! Serving runtimes' own memory rules: how much of a device each runtime
//! keeps for itself and how large an activation workspace it reserves
//! before it sizes the KV cache. One file per runtime, one table
//! ([`RUNTIMES`]); the inference planner calls through [`Runtime`], as
//! detection calls through its backend table.
//!
//! | runtime | reserve | activation workspace |
//! | --- | --- | --- |
//! | `generic` (default) | `(1 − memory_utilization) × capacity` | one layer over a prefill chunk + logits |
//! | `vllm` | `(1 − gpu_memory_utilization) × capacity` + non-torch memory | the profile run: max(forward at `max_num_batched_tokens`, sampler at `max_num_seqs`) |
//! | `sglang` | `capacity − mem_fraction_static × capacity` (its reserved-memory tiers) | inside the reserve |
//! | `llama.cpp` | `--fit-target` margin (1024 MiB) | compute buffer at `n_ubatch` + output buffer |
//! | `trtllm` | `(1 − free_gpu_memory_fraction)` of what is free after weights and buffers | runtime buffers at `max_num_tokens` |
//!
//! `generic` is the default because it is the one rule that is not any
//! runtime's: it keeps the planner's earlier results (vLLM's 10 % reserve
//! and a per-layer workspace) for users who have not said where the model
//! will run. Name the runtime (`--runtime`) to get its own rule.

pub mod bench;
mod generic;
pub(crate) mod llamacpp;
pub mod log;
pub mod serve_bench;
mod sglang;
mod trtllm;
mod vllm;

use serde::{Deserialize, Serialize};

use super::devices::PlanDevice;
use super::inference::{InferenceOptions, InferencePlan, Plan};
use super::source::ModelOrigin;

/// A serving runtime whose memory rule the planner follows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum RuntimeKind {
    /// The runtime-neutral estimate (the default).
    #[default]
    #[serde(rename = "generic")]
    Generic,
    /// vLLM (V1 engine).
    #[serde(rename = "vllm")]
    Vllm,
    /// SGLang.
    #[serde(rename = "sglang")]
    Sglang,
    /// llama.cpp (`llama-server`).
    #[serde(rename = "llama.cpp", alias = "llamacpp")]
    LlamaCpp,
    /// TensorRT-LLM (LLM API / `trtllm-serve`).
    #[serde(rename = "trtllm", alias = "tensorrt-llm")]
    Trtllm,
}

impl RuntimeKind {
    /// The name in JSON and on the command line.
    pub fn name(self) -> &'static str {
        runtime(self).name()
    }

    /// Every runtime, in table order.
    pub fn all() -> impl Iterator<Item = RuntimeKind> {
        RUNTIMES.iter().map(|r| r.kind())
    }

    /// A runtime by name (`vllm`, `sglang`, `llama.cpp` or `llamacpp`,
    /// `trtllm` or `tensorrt-llm`, `generic`), case-insensitive.
    pub fn parse(s: &str) -> Option<RuntimeKind> {
        let t = s.trim().to_ascii_lowercase();
        RUNTIMES
            .iter()
            .find(|r| r.name() == t || r.aliases().contains(&t.as_str()))
            .map(|r| r.kind())
    }
}

impl std::fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a runtime's rule needs to know about one device of a layout.
#[derive(Clone, Copy, Debug)]
pub struct DeviceContext<'a> {
    /// The device.
    pub device: &'a PlanDevice,
    /// Its memory in bytes (what the planner counts as capacity).
    pub capacity_bytes: u64,
    /// Tensor-parallel degree of the layout.
    pub tensor_parallel: u32,
    /// Pipeline stages of the layout.
    pub pipeline_parallel: u32,
    /// Whether the device holds the last stage (the LM head and logits).
    pub last_stage: bool,
    /// The model's vocabulary size.
    pub vocab_size: u64,
    /// Weight bytes on this device.
    pub weights_bytes: u64,
    /// The model's architecture (dimensions for runtimes that size their
    /// buffers from them).
    pub spec: &'a super::arch::ModelSpec,
    /// Context per sequence the plan holds.
    pub context: u64,
    /// Sequences served together (the batch).
    pub sequences: u64,
    /// Every stage of the layout is an accelerator: no layers or tensors
    /// kept in host memory (llama.cpp runs a layer split over such stages
    /// with pipeline parallelism, whose input copies take memory).
    pub stages_on_accelerators: bool,
}

/// A runtime's own share of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeMemory {
    /// Memory the runtime keeps out of the model's reach (its fraction's
    /// remainder, its margin, memory outside its allocator).
    pub reserve_bytes: u64,
    /// The activation workspace it reserves before sizing the KV cache.
    pub activation_bytes: u64,
}

/// One runtime's memory rule.
pub trait Runtime: Sync {
    /// Which runtime this is.
    fn kind(&self) -> RuntimeKind;
    /// Its name in JSON and on the command line.
    fn name(&self) -> &'static str;
    /// Other spellings accepted on the command line.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Where the rule was read: source files and the version.
    fn source(&self) -> &'static str;
    /// The runtime's share of a device. `forward(tokens)` is the planner's
    /// activation estimate for one forward pass over `tokens` tokens on
    /// this device (one layer's live tensors, plus logits for the batch on
    /// the last stage).
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory;
    /// Whether the runtime prefills newly arrived prompts in forward passes
    /// of their own, between decode steps that wait for them, instead of
    /// in the decode steps' own batches. A separate pass costs its fixed
    /// part (a forward over every layer, its scheduling) once more per
    /// step in which prompts arrive (`plan::inference::served_tpot`).
    /// The default, false, is the mixed batch: vLLM's V1 scheduler fills
    /// each step's token budget with the running requests' decode tokens
    /// first and the waiting requests' prompt tokens after them, in one
    /// step (`vllm/v1/core/sched/scheduler.py` `Scheduler.schedule`,
    /// v0.11.0: "First, schedule the RUNNING requests", "Next, schedule
    /// the WAITING requests"); llama.cpp's server adds the generating
    /// slots' sampled tokens to its batch and then, with continuous
    /// batching (its default), the pending prompts' tokens up to `n_batch`
    /// (`server_context::update_slots`: "next, batch any pending prompts
    /// without exceeding n_batch").
    fn prompts_between_decode_steps(&self) -> bool {
        false
    }
    /// Prompt tokens one forward pass takes at most: the budget in which
    /// a burst of arriving prompts is prefilled, pass after pass (each
    /// request's first token comes at the end of the pass that finishes
    /// its prompt; `plan::inference::closed_loop_ttft_ms`). The default is
    /// the planner's own chunk ([`InferenceOptions::prefill_chunk`]).
    fn prompt_tokens_per_pass(&self, _at: &PassDevice, opts: &InferenceOptions) -> u64 {
        opts.prefill_chunk.max(1)
    }
    /// The launch command for `choice` (one of `plan.plans`) of a model
    /// that came from `origin`; an error says why this runtime cannot run
    /// that plan as it stands.
    fn emit(
        &self,
        _plan: &InferencePlan,
        _choice: &Plan,
        _origin: &ModelOrigin,
    ) -> Result<Launch, String> {
        Err(format!(
            "emitting a {} launch command is not implemented yet",
            self.name()
        ))
    }
}

/// A runtime's launch command for one plan (`plan --emit`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Launch {
    /// The runtime.
    pub runtime: RuntimeKind,
    /// The runtime version whose argument definitions the flags were
    /// checked against; `None`: not checked against pinned definitions yet
    /// (the flags follow the runtime's documentation, named in `notes`).
    pub version: Option<String>,
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// Environment variables to set.
    pub env: std::collections::BTreeMap<String, String>,
    /// Config files the command reads, by name.
    pub files: std::collections::BTreeMap<String, String>,
    /// What the user must know (a placeholder to fill, what was assumed).
    pub notes: Vec<String>,
}

/// Prompt tokens one forward pass of `kind` takes at most on `device`
/// ([`Runtime::prompt_tokens_per_pass`]): vLLM's `max_num_batched_tokens`,
/// SGLang's `chunked_prefill_size`, TensorRT-LLM's `max_num_tokens` and
/// llama.cpp's `n_batch` as each defaults for that device.
pub fn prompt_tokens_per_pass(
    kind: RuntimeKind,
    device: &PlanDevice,
    tensor_parallel: u32,
    pipeline_parallel: u32,
    latent_attention: bool,
    opts: &InferenceOptions,
) -> u64 {
    let at = PassDevice {
        device,
        capacity_bytes: device.capacity_bytes.unwrap_or(0),
        tensor_parallel,
        pipeline_parallel,
        latent_attention,
    };
    runtime(kind).prompt_tokens_per_pass(&at, opts)
}

/// A device of a layout, as a runtime's prompt budget per pass depends on
/// it ([`Runtime::prompt_tokens_per_pass`]).
pub struct PassDevice<'a> {
    /// The device.
    pub device: &'a PlanDevice,
    /// Its memory in bytes.
    pub capacity_bytes: u64,
    /// Tensor-parallel degree of the layout.
    pub tensor_parallel: u32,
    /// Pipeline stages of the layout.
    pub pipeline_parallel: u32,
    /// Whether the model compresses its KV cache into a latent (MLA).
    pub latent_attention: bool,
}

/// The launch command of `plan`'s plan number `index` (0 = best) for the
/// runtime whose rule the plan followed.
pub fn emit(plan: &InferencePlan, index: usize, origin: &ModelOrigin) -> Result<Launch, String> {
    let choice = plan.plans.get(index).ok_or_else(|| {
        if plan.plans.is_empty() {
            "no plan fits: nothing to launch".to_string()
        } else {
            format!(
                "there are {} plans; --plan takes 1 to {}",
                plan.plans.len(),
                plan.plans.len()
            )
        }
    })?;
    runtime(plan.runtime).emit(plan, choice, origin)
}

/// Sequences a server launched for `choice` admits at once: under latency
/// targets the concurrency the plan found meeting them (more would miss the
/// time per output token), else every sequence the memory holds.
pub(crate) fn admitted_sequences(plan: &InferencePlan, choice: &Plan) -> u64 {
    if plan.options.has_targets() {
        choice.batch.max(1)
    } else {
        choice.max_batch.max(1)
    }
}

/// A launch's options as the YAML mapping vLLM's and SGLang's `--config`
/// read back into flags (vLLM `FlexibleArgumentParser.load_config_file`,
/// SGLang `ConfigArgumentMerger`): one `long-name: value` line per flag of
/// `args` (flags with their values, or bare boolean flags, which become
/// `true`); numbers plain, other values as double-quoted (JSON) strings.
pub(crate) fn flags_yaml(args: &[String]) -> String {
    let mut yaml = String::new();
    let mut i = 0;
    while i < args.len() {
        let key = args[i].trim_start_matches("--");
        let value = args.get(i + 1).filter(|v| !v.starts_with("--"));
        let v = match value {
            None => "true".to_string(),
            Some(v) if v.parse::<f64>().is_ok_and(f64::is_finite) => v.clone(),
            Some(v) => serde_json::Value::String(v.clone()).to_string(),
        };
        yaml += &format!("{key}: {v}\n");
        i += if value.is_some() { 2 } else { 1 };
    }
    yaml
}

/// The Hugging Face repository id of a catalog model (from its config.json
/// URL), or the path the model was read from.
pub(crate) fn model_argument(origin: &ModelOrigin) -> Option<String> {
    match origin {
        ModelOrigin::Catalog { source, .. } => source
            .strip_prefix("https://huggingface.co/")
            .and_then(|rest| {
                let mut parts = rest.split('/');
                Some(format!("{}/{}", parts.next()?, parts.next()?))
            }),
        ModelOrigin::HfConfig { path } | ModelOrigin::Safetensors { path } => {
            // The directory holding config.json or the weights.
            Some(
                std::path::Path::new(path)
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| ".".to_string(), |p| p.display().to_string()),
            )
        }
        ModelOrigin::Gguf { path } => Some(path.clone()),
        _ => None,
    }
}

/// Every runtime, `generic` first.
pub static RUNTIMES: &[&dyn Runtime] = &[
    &generic::Generic,
    &vllm::Vllm,
    &sglang::Sglang,
    &llamacpp::LlamaCpp,
    &trtllm::TrtLlm,
];

/// The rule of `kind`.
pub fn runtime(kind: RuntimeKind) -> &'static dyn Runtime {
    RUNTIMES
        .iter()
        .copied()
        .find(|r| r.kind() == kind)
        .unwrap_or(&generic::Generic)
}

/// Bytes in a GiB, for rules the runtimes state in GiB or MiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Bytes in a MiB.
pub(crate) const MIB: f64 = 1024.0 * 1024.0;

pub use llamacpp::N_UBATCH as LLAMA_CPP_N_UBATCH;
pub use llamacpp::PINNED_DEFINITIONS as LLAMA_CPP_PINNED_DEFINITIONS;
pub use llamacpp::{GgmlBackend, VulkanMatrixCores};
pub use llamacpp::{llamacpp_repack_bytes, repack_row_multiple};
pub use sglang::CONFIG_FILE as SGLANG_CONFIG_FILE;
pub use sglang::PINNED_DEFINITIONS as SGLANG_PINNED_DEFINITIONS;
pub use sglang::{
    SGLANG_INIT_BYTES, SGLANG_MAMBA_FULL_MEMORY_RATIO, SglangHybridSplit, SglangMemoryDefaults,
    SglangPlatform, SglangRelease, given_fraction as sglang_given_fraction, sglang_pool_bytes,
    sglang_prefill_graph_buckets, sglang_vlm_fraction,
};
pub use trtllm::PINNED_DEFINITIONS as TRTLLM_PINNED_DEFINITIONS;
pub use vllm::CONFIG_FILE as VLLM_CONFIG_FILE;
pub use vllm::PINNED_DEFINITIONS as VLLM_PINNED_DEFINITIONS;
pub use vllm::{
    CUDAGRAPH_ESTIMATE_DEFAULT_SINCE as VLLM_CUDAGRAPH_ESTIMATE_DEFAULT_SINCE,
    HybridBlocks as VllmHybridBlocks, HybridMode as VllmHybridMode,
    SlidingBlocks as VllmSlidingBlocks,
    default_memory_utilization as vllm_default_memory_utilization,
    parse_version as parse_vllm_version,
    subtracts_cudagraph_estimate as vllm_subtracts_cudagraph_estimate,
};
pub use vllm::{
    LAST_BITSANDBYTES as VLLM_LAST_BITSANDBYTES, bitsandbytes_removed as vllm_bitsandbytes_removed,
};
pub use vllm::{
    NON_TORCH_BYTES_MULTI_GPU, NON_TORCH_BYTES_SINGLE_GPU, SAMPLER_BYTES_PER_LOGIT,
    vllm_batch_defaults,
};
pub use vllm::{NVIDIA_SMI_TOTAL_MIB, cuda_visible_bytes, nvidia_smi_total_bytes};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_budgets_per_pass_follow_each_runtime_s_defaults() {
        let d = |s: &str| PlanDevice::from_device_string(s).unwrap().remove(0);
        let opts = InferenceOptions::default();
        let pass = |k, dev: &PlanDevice, tp| prompt_tokens_per_pass(k, dev, tp, 1, false, &opts);
        let (h100, b200, rtx) = (d("1xh100-sxm"), d("1xb200"), d("1xrtx-4090"));
        // vLLM's get_batch_defaults tiers: 70 GiB and more, 160 and more.
        assert_eq!(pass(RuntimeKind::Vllm, &h100, 1), 8192);
        assert_eq!(pass(RuntimeKind::Vllm, &b200, 1), 16384);
        assert_eq!(pass(RuntimeKind::Vllm, &rtx, 1), 2048);
        let given = InferenceOptions {
            max_num_batched_tokens: Some(4096),
            ..InferenceOptions::default()
        };
        assert_eq!(
            prompt_tokens_per_pass(RuntimeKind::Vllm, &h100, 1, 1, false, &given),
            4096
        );
        // SGLang's chunked_prefill_size by GPU memory.
        assert_eq!(pass(RuntimeKind::Sglang, &h100, 8), 8192);
        assert_eq!(pass(RuntimeKind::Sglang, &b200, 8), 16384);
        assert_eq!(pass(RuntimeKind::Trtllm, &h100, 1), 8192);
        assert_eq!(pass(RuntimeKind::LlamaCpp, &rtx, 1), 2048);
        assert_eq!(pass(RuntimeKind::Generic, &rtx, 1), opts.prefill_chunk);
    }

    #[test]
    fn every_runtime_is_in_the_table_once_and_parses_by_name() {
        let kinds: Vec<RuntimeKind> = RuntimeKind::all().collect();
        assert_eq!(kinds.len(), 5);
        for k in &kinds {
            assert_eq!(RuntimeKind::parse(k.name()), Some(*k));
            assert_eq!(runtime(*k).kind(), *k);
            assert!(!runtime(*k).source().is_empty());
        }
        assert_eq!(RuntimeKind::parse("LlamaCpp"), Some(RuntimeKind::LlamaCpp));
        assert_eq!(
            RuntimeKind::parse("tensorrt-llm"),
            Some(RuntimeKind::Trtllm)
        );
        assert_eq!(RuntimeKind::parse("ollama"), None);
        assert_eq!(
            serde_json::to_string(&RuntimeKind::LlamaCpp).unwrap(),
            "\"llama.cpp\""
        );
    }

    fn ctx(device: &PlanDevice, gib: u64, tp: u32, weights_gib: u64) -> DeviceContext<'_> {
        DeviceContext {
            device,
            capacity_bytes: gib << 30,
            tensor_parallel: tp,
            pipeline_parallel: 1,
            last_stage: true,
            vocab_size: 128_256,
            weights_bytes: weights_gib << 30,
            spec: &crate::plan::catalog::all()[0].spec,
            context: 4096,
            sequences: 1,
            stages_on_accelerators: true,
        }
    }

    #[test]
    fn sglang_reserves_by_its_release_and_trtllm_a_tenth_of_what_is_free() {
        let d = PlanDevice::from_device_string("1xh100-sxm")
            .unwrap()
            .remove(0);
        let opts = InferenceOptions::default();
        let none = |_t: u64| 0u64;
        // SGLang 0.5.23 on an H100 80GB (nvidia-smi: 81559 MiB) at TP 8:
        // 512 + 1.5 × 8192 + 8 / 8 × 1024 + 2 × 512 decode graphs + 8 × 58
        // prefill buckets = 15312 MiB, so round(1 − 15312 / 81559, 3) =
        // 0.812 of what CUDA reports (79.18 GiB) less the set-up SGLang
        // never measures (SGLANG_INIT_BYTES); the 0.82 GiB CUDA does not
        // report is out of reach too.
        let init = sglang::SGLANG_INIT_BYTES as f64;
        let close = |got: u64, want: f64| {
            assert!((got as f64 - want).abs() < 2.0, "{got} vs {want}");
        };
        let h = SglangMemoryDefaults::new(81_559 << 20, 8, 1, SglangPlatform::Cuda, false);
        assert_eq!(
            (
                h.chunked_prefill_size,
                h.decode_graph_max_bs,
                h.prefill_graph_buckets
            ),
            (8192, 512, 58)
        );
        assert_eq!(h.reserved_mib, 15312.0);
        assert_eq!(h.mem_fraction_static, 0.812);
        let m = runtime(RuntimeKind::Sglang).memory(&ctx(&d, 80, 8, 10), &opts, &none);
        let visible = (79.18 * GIB) as u64;
        close(
            m.reserve_bytes,
            (80.0 * GIB) - (visible as f64 - init) * 0.812,
        );
        assert_eq!(m.activation_bytes, 0);
        // A 24 GiB card at TP 1: a 4096-token chunk and 48 decode graphs,
        // 512 + 6144 + 128 + 96 + 8 × 50 = 7280 MiB, 0.704.
        let c = SglangMemoryDefaults::new(24 << 30, 1, 1, SglangPlatform::Cuda, false);
        assert_eq!((c.reserved_mib, c.mem_fraction_static), (7280.0, 0.704));
        let m = runtime(RuntimeKind::Sglang).memory(&ctx(&d, 24, 1, 10), &opts, &none);
        close(m.reserve_bytes, 24.0 * GIB - (24.0 * GIB - init) * 0.704);
        // 80 GiB of which CUDA reports 79.18, 40 GiB of weights, 2 GiB of
        // buffers: the 0.82 GiB never reported, and 0.1 × 37.18 GiB stays free.
        let two = |_t: u64| 2u64 << 30;
        let m = runtime(RuntimeKind::Trtllm).memory(&ctx(&d, 80, 1, 40), &opts, &two);
        assert_eq!(m.activation_bytes, 2 << 30);
        let free = visible - (42u64 << 30);
        assert_eq!(
            m.reserve_bytes,
            ((80u64 << 30) - visible) + (free as f64 * 0.1).ceil() as u64
        );
        // llama.cpp: its 1 GiB fit margin below what CUDA reports.
        let m = runtime(RuntimeKind::LlamaCpp).memory(&ctx(&d, 80, 1, 40), &opts, &two);
        assert_eq!(m.reserve_bytes, ((80u64 << 30) - visible) + (1 << 30));
    }

    /// vLLM's pool for sliding-window models (`VllmSlidingBlocks`) against
    /// published start-up logs, from the logged KV memory: gpt-oss-120b on
    /// vLLM 0.11.2, one GPU, `max_model_len` 98304, `max_num_batched_tokens`
    /// 2048: `Available KV cache memory: 8.99 GiB`, `GPU KV cache size:
    /// 130,960 tokens` (blog.huikang.dev/2025/12/28/vllm-logs.html); and
    /// the rules by hand for gemma-3-27b on the pinned release.
    #[test]
    fn vllm_sliding_window_pool_reproduces_logged_capacity() {
        let oss = &crate::plan::catalog::find("gpt-oss-120b").unwrap().spec;
        let s = VllmSlidingBlocks::new(oss, 1, 2.0, 2048, Some("0.11.2")).unwrap();
        // 18 sliding and 18 full layers: two groups of 18; 16 tokens × 8
        // heads × 64 × K and V × 2 bytes per page.
        assert_eq!((s.group_size, s.full_groups, s.sliding_groups), (18, 1, 1));
        assert_eq!(s.page_bytes, 16 * 8 * 64 * 2 * 2);
        // The log prints the memory to 0.01 GiB: the blocks of [8.985,
        // 8.995) GiB, of which those giving the logged tokens (before
        // 0.20.1: blocks ÷ groups × 16).
        let lo = s.num_blocks((8.985 * GIB) as u64);
        let hi = s.num_blocks((8.995 * GIB) as u64 - 1);
        assert_eq!((lo, hi), (16_356, 16_374));
        let matching: Vec<u64> = (lo..=hi)
            .filter(|b| s.capacity_tokens(*b, 98_304) == 130_960)
            .collect();
        assert_eq!(matching, vec![16_370, 16_371]);
        // gemma-3-27b on 0.33: 52 sliding and 10 full layers, groups of 10
        // (6 sliding, 1 full); a 4096-token request holds 256 full blocks
        // and min(1023 + 2 × 8192, 4096) ÷ 16 + 1 = 257 in each sliding
        // group; N = int(blocks ÷ 1798 × 4096).
        let g = &crate::plan::catalog::find("gemma-3-27b").unwrap().spec;
        let s = VllmSlidingBlocks::new(g, 1, 2.0, 8192, None).unwrap();
        assert_eq!((s.group_size, s.full_groups, s.sliding_groups), (10, 1, 6));
        assert_eq!(s.in_flight, 16_384);
        assert_eq!(s.blocks_per_request(4096), 256 + 6 * 257);
        assert_eq!(
            s.capacity_tokens(89_994, 4096),
            (89_994.0 / 1798.0 * 4096.0) as u64
        );
        assert_eq!(s.max_requests(89_994, 4096), 50);
        // The longest request: the sliding groups' full share, the rest to
        // the full group (less the null block).
        assert_eq!(
            s.max_tokens(89_994),
            (89_993 - 6 * ((1023 + 16_384_u64).div_ceil(16) + 1)) * 16
        );
        // Over pipeline stages (0.33's projection of the model's groups):
        // the full layers are 5, 11, …, 59 and each sliding group takes
        // every sixth sliding layer, so layers 0-30 hold five of the full
        // group and five of sliding groups 0 and 1 (four of the others),
        // layers 31-61 five of the full group and of sliding groups 2
        // and 3, layers 0-20 three of every group.
        assert_eq!(s.stage_bytes_per_block(g, 0, 62), s.bytes_per_block());
        assert_eq!(s.stage_bytes_per_block(g, 0, 31), 5 * s.page_bytes);
        assert_eq!(s.stage_bytes_per_block(g, 31, 62), 5 * s.page_bytes);
        assert_eq!(s.stage_bytes_per_block(g, 0, 21), 3 * s.page_bytes);
        assert_eq!(s.stage_bytes_per_block(g, 62, 62), 0);
        // No sliding window, or linear attention beside it: not this pool.
        let dense = &crate::plan::catalog::find("llama-3.1-8b").unwrap().spec;
        assert!(VllmSlidingBlocks::new(dense, 1, 2.0, 8192, None).is_none());
    }

    /// nvidia-smi's total is CUDA's plus the driver's reserve: for every
    /// GPU of both tables, a few hundred MiB more (the same captures).
    #[test]
    fn nvidia_smi_totals_exceed_cuda_totals_by_the_reserve() {
        // Every GPU but the GB10, whose nvidia-smi prints no total.
        assert_eq!(
            NVIDIA_SMI_TOTAL_MIB.len() + 1,
            vllm::CUDA_VISIBLE_TOTAL.len()
        );
        let gb10 = 128u64 << 30;
        assert_eq!(nvidia_smi_total_bytes(Some("gb10"), gb10), 124_610 << 20);
        assert_eq!(cuda_visible_bytes(Some("gb10"), gb10), 124_610 << 20);
        for (id, mib) in NVIDIA_SMI_TOTAL_MIB {
            let cuda = vllm::CUDA_VISIBLE_TOTAL
                .iter()
                .find(|(s, _)| s == id)
                .map(|(_, gib)| gib * 1024.0)
                .unwrap_or_else(|| panic!("{id}: no CUDA total"));
            let reserve = *mib as f64 - cuda;
            assert!((200.0..800.0).contains(&reserve), "{id}: {reserve} MiB");
        }
        assert_eq!(
            nvidia_smi_total_bytes(Some("h100-sxm"), 80 << 30),
            81_559 << 20
        );
        assert_eq!(nvidia_smi_total_bytes(Some("h100-sxm"), 24 << 30), 24 << 30);
        assert_eq!(nvidia_smi_total_bytes(None, 24 << 30), 24 << 30);
    }

    #[test]
    fn vllm_uses_the_memory_cuda_reports_and_its_batch_defaults() {
        let d = PlanDevice::from_device_string("1xh100-sxm")
            .unwrap()
            .remove(0);
        let opts = InferenceOptions::default();
        let forward = |t: u64| t; // one byte per token: the sampler dominates
        let m = runtime(RuntimeKind::Vllm).memory(&ctx(&d, 80, 1, 15), &opts, &forward);
        // 80 − 79.18 GiB CUDA does not report, 10 % of 79.18, 0.13 non-torch.
        let want = (80.0 - 79.18) * GIB + (79.18 * GIB * 0.1).ceil() + (0.13 * GIB).floor();
        assert!(
            (m.reserve_bytes as f64 - want).abs() < 2.0,
            "{}",
            m.reserve_bytes
        );
        let sampler = (1024.0 * 128_256.0 * SAMPLER_BYTES_PER_LOGIT).ceil() as u64;
        assert_eq!(m.activation_bytes, sampler);
        assert_eq!(
            vllm_batch_defaults(80 << 30, "NVIDIA A100-SXM4-80GB"),
            (2048, 256)
        );
        assert_eq!(vllm_batch_defaults(24 << 30, "NVIDIA L4"), (2048, 256));
        assert_eq!(vllm_batch_defaults(140 << 30, "NVIDIA H200"), (8192, 1024));
        assert_eq!(vllm_batch_defaults(178 << 30, "NVIDIA B200"), (16384, 1024));
        assert_eq!(vllm_batch_defaults(119 << 30, "NVIDIA GB10"), (2048, 256));
        // `--max-num-seqs 16`: the sampler profiles 16 requests, not 1024.
        let sixteen = InferenceOptions {
            max_num_seqs: Some(16),
            ..InferenceOptions::default()
        };
        let m = runtime(RuntimeKind::Vllm).memory(&ctx(&d, 80, 1, 15), &sixteen, &forward);
        assert_eq!(
            m.activation_bytes,
            (16.0 * 128_256.0 * SAMPLER_BYTES_PER_LOGIT).ceil() as u64
        );
        // `--max-num-batched-tokens`: the forward pass is profiled at it.
        let tokens = InferenceOptions {
            max_num_batched_tokens: Some(1 << 40),
            ..InferenceOptions::default()
        };
        let m = runtime(RuntimeKind::Vllm).memory(&ctx(&d, 80, 1, 15), &tokens, &forward);
        assert_eq!(m.activation_bytes, 1 << 40);
    }
}
