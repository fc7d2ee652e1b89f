//! SGLang's memory rule (`python/sglang/srt/server_args.py`,
//! `ServerArgs.__post_init__`, 2025 releases): the weights and the KV pool
//! get `mem_fraction_static` of the GPU; activations and CUDA-graph buffers
//! live in the rest. Unless given, the fraction is
//! `(gpu_mem − reserved) / gpu_mem` with `reserved`, in GiB, by GPU memory
//! (`parallel = tp × pp`): under 35 GiB (T4, 4080, A10, L40, 4090, 5090)
//! `2.8 + parallel / 10`; under 90 GiB (H100, A100) `9.5 + parallel / 2`;
//! under 160 GiB (H20, H200) `12 + parallel / 2`; else (B200, MI300) 32.
//! (Earlier releases used 0.88, 0.87, 0.85, 0.81, 0.79 by TP size.)
//!
//! Not modelled yet: SGLang 0.5.23 (PyPI, late 2026) sizes the reserve from
//! the prefill chunk instead (`sglang/srt/arg_groups/overrides.py`,
//! `pre_capture_activation_reserve_mb_of`: 512 MiB + 1.5 MiB per activation
//! token + TP × PP / 8 GiB, at least 10 GiB on GPUs above 60 GiB) plus the
//! CUDA-graph buffers measured at capture; its arguments moved to
//! `sglang/srt/arg_groups/`, so its flags are not pinned yet either.
//! `--memory-utilization` is not read: SGLang's fraction is its own.
//!
//! A hybrid model's pool (linear-attention state beside the token cache)
//! is shared as the pinned release shares it ([`SglangHybridSplit`]).

use super::{DeviceContext, GIB, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// SGLang's reserved memory for a GPU of `gpu_bytes` at `parallel` ranks.
pub fn sglang_reserved_bytes(gpu_bytes: u64, parallel: u32) -> u64 {
    let g = gpu_bytes as f64 / GIB;
    let p = f64::from(parallel);
    let gib = if g < 35.0 {
        2.8 + p / 10.0
    } else if g < 90.0 {
        9.5 + p / 2.0
    } else if g < 160.0 {
        12.0 + p / 2.0
    } else {
        32.0
    };
    (gib * GIB) as u64
}

/// SGLang's default `mem_fraction_static` on a GPU of `gpu_bytes` at
/// `parallel` ranks: `1 − reserved ÷ gpu_bytes` ([`sglang_reserved_bytes`]).
pub fn sglang_default_fraction(gpu_bytes: u64, parallel: u32) -> f64 {
    1.0 - sglang_reserved_bytes(gpu_bytes, parallel) as f64 / gpu_bytes.max(1) as f64
}

/// What a GPU has lost before SGLang's model runner measures the memory its
/// pool rule works from: the CUDA context and the torch-distributed set-up
/// (its log's `Init torch distributed ends. mem usage=`). The rule is
/// `rest = free_after_load − total × (1 − mem_fraction_static)` with
/// `total` the free memory just before the weights load
/// (`profile_max_num_token`, `python/sglang/srt/model_executor/`
/// `model_runner.py`, 2025 releases, later
/// `model_runner_kv_cache_mixin.py`; `get_available_gpu_memory` is
/// `torch.cuda.mem_get_info`'s free bytes ÷ 2^30, printed as "GB"), so
/// weights and pool share `mem_fraction_static` of that free memory, not of
/// the GPU's total. The mean of what two real start-up logs lost before
/// `Load weight begin. avail mem=` against the total CUDA reports for the
/// GPU (`cuda_visible_bytes`): 0.37 GiB on an H100 SXM at TP 1 (78.81 of
/// 79.18; SGLang's documentation, January 2025) and 0.321 GiB on each L4 at
/// TP 4 (21.63 of 21.951; SGLang 0.4.3, March 2025); a test recomputes it
/// from the logs (`tests/runtime_logs.rs`).
pub const SGLANG_INIT_BYTES: u64 = 371_070_075;

/// SGLang's KV pool on a GPU whose CUDA total is `visible_bytes`, at
/// `mem_fraction_static` `fraction`, after `weights_bytes` loaded (see
/// [`SGLANG_INIT_BYTES`]); 0 where the weights leave none.
pub fn sglang_pool_bytes(visible_bytes: u64, fraction: f64, weights_bytes: u64) -> u64 {
    let total = visible_bytes.saturating_sub(SGLANG_INIT_BYTES) as f64;
    (total * fraction - weights_bytes as f64).max(0.0) as u64
}

/// How SGLang shares a hybrid model's pool (full attention beside Gated
/// DeltaNet layers: Qwen3-Next, Qwen3.5) between the linear layers'
/// per-request state and the attention layers' token cache, read in the
/// PyPI packages of 0.5.9 (`model_executor/model_runner_kv_cache_mixin.py`,
/// `handle_max_mamba_cache`, `init_memory_pool`) and 0.5.23 (the pinned
/// release; `mem_cache/kv_cache_configurator.py`): of the pool `rest`,
/// `rest × r ÷ (1 + r)` goes to state slots (`--mamba-full-memory-ratio`
/// `r`, 0.9 by default), `K = ⌊that ÷ state per request⌋` slots (0.5.23:
/// one fewer, its padding slot now paid for), and the token cache gets
/// what is left over the attention layers' bytes per token. The scheduler
/// runs at most `K ÷ 3` requests (0.5.9's default `no_buffer` strategy)
/// or `K ÷ 5` (0.5.23, whose default is `extra_buffer` with the overlap
/// schedule), and at most half the tokens (0.5.23). The pools allocate
/// `K + 1` state slots (slot 0 is padding), which the 0.5.9 logs print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SglangHybridSplit {
    /// State slots (`max_mamba_cache_size`).
    pub state_slots: u64,
    /// Token cache (`max_total_num_tokens`).
    pub tokens: u64,
    /// Requests the scheduler runs at once at most, before the request
    /// estimate (`max_running_requests`'s cap by the state cache).
    pub max_running: u64,
}

/// The SGLang releases whose hybrid split differs ([`SglangHybridSplit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SglangRelease {
    /// 0.5.9 (early 2026).
    V0_5_9,
    /// 0.5.23, the pinned release.
    V0_5_23,
}

/// The default `--mamba-full-memory-ratio` (0.5.9 `server_args.py`; 0.5.23
/// `arg_groups/fields/schedule.py`).
pub const SGLANG_MAMBA_FULL_MEMORY_RATIO: f64 = 0.9;

impl SglangHybridSplit {
    /// The split of `rest_bytes` for a model whose linear layers hold
    /// `state_per_request` bytes per request and whose attention layers
    /// take `bytes_per_token` per token on one GPU; `None` where either is
    /// zero or the state gets no slot (SGLang refuses to start there).
    pub fn new(
        rest_bytes: u64,
        state_per_request: u64,
        bytes_per_token: u64,
        release: SglangRelease,
    ) -> Option<Self> {
        if state_per_request == 0 || bytes_per_token == 0 {
            return None;
        }
        let r = SGLANG_MAMBA_FULL_MEMORY_RATIO;
        let budget = rest_bytes as f64 * r / (1.0 + r);
        let fit = (budget / state_per_request as f64).floor() as u64;
        let (slots, charged, ratio) = match release {
            SglangRelease::V0_5_9 => (fit, fit, 3),
            SglangRelease::V0_5_23 => (fit.checked_sub(1)?, fit, 5),
        };
        if slots == 0 {
            return None;
        }
        let tokens = rest_bytes.saturating_sub(charged * state_per_request) / bytes_per_token;
        let mut max_running = slots / ratio;
        if release == SglangRelease::V0_5_23 {
            max_running = max_running.min(tokens / 2);
        }
        Some(SglangHybridSplit {
            state_slots: slots,
            tokens,
            max_running,
        })
    }
}

/// The argument definitions the emitted flags are checked against
/// (`tests/fixtures/runtimes/sglang.json`, written by
/// `scripts/runtime-defs.py` from the sglang wheel on PyPI).
pub const PINNED_DEFINITIONS: &str = "sglang 0.5.23 (arg_groups fields and add_argument flags)";

/// The SGLang rule.
pub struct Sglang;

/// The config file `--emit sglang` writes beside the command line.
pub const CONFIG_FILE: &str = "sglang-config.yaml";

impl Runtime for Sglang {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Sglang
    }
    fn name(&self) -> &'static str {
        "sglang"
    }
    fn source(&self) -> &'static str {
        "SGLang python/sglang/srt/server_args.py (ServerArgs.__post_init__: mem_fraction_static from reserved memory by GPU size, 2025 releases)"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        _opts: &InferenceOptions,
        _forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        let parallel = ctx.tensor_parallel * ctx.pipeline_parallel;
        // What CUDA does not report is out of reach. (SGLang's default
        // fraction divides by nvidia-smi's `memory.total`,
        // `get_nvgpu_memory_capacity`, which counts the driver's reserved
        // few hundred MiB too; taken from the CUDA total here, the fraction
        // differs in its third decimal.)
        let visible =
            super::vllm::cuda_visible_bytes(ctx.device.spec_id.as_deref(), ctx.capacity_bytes);
        // Weights and pool share the default fraction of the free memory
        // the model runner measures (SGLANG_INIT_BYTES).
        let shared = sglang_pool_bytes(visible, sglang_default_fraction(visible, parallel), 0);
        RuntimeMemory {
            reserve_bytes: ctx.capacity_bytes.saturating_sub(shared),
            activation_bytes: 0,
        }
    }
    fn emit(
        &self,
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
    ) -> Result<super::Launch, String> {
        use crate::plan::{KvDtype, Quant};
        let model = super::model_argument(origin).ok_or(
            "SGLang needs a Hugging Face repository or a model directory: a bare size names neither",
        )?;
        let d = choice.per_device.first().ok_or("the plan has no device")?;
        let fraction = sglang_default_fraction(
            d.capacity_bytes,
            choice.tensor_parallel * choice.pipeline_parallel,
        );
        let mut argv: Vec<String> = vec![
            "python3".into(),
            "-m".into(),
            "sglang.launch_server".into(),
            "--model-path".into(),
            model,
            "--tp-size".into(),
            choice.tensor_parallel.to_string(),
            "--pp-size".into(),
            choice.pipeline_parallel.to_string(),
            "--dp-size".into(),
            choice.data_parallel.to_string(),
            "--ep-size".into(),
            choice.expert_parallel.to_string(),
            "--context-length".into(),
            plan.context.to_string(),
            "--max-running-requests".into(),
            super::admitted_sequences(plan, choice).to_string(),
            "--mem-fraction-static".into(),
            format!("{:.3}", fraction),
        ];
        let mut notes = vec![format!("flags checked against {PINNED_DEFINITIONS}")];
        // Other levels are read from the checkpoint: a method flag names one
        // exporter's checkpoints (`modelopt_fp4` ModelOpt's NVFP4, `mxfp4`
        // OpenAI's MXFP4, `gptq` …) and one that differs from the
        // checkpoint's `quant_method` is refused.
        match plan.quantization {
            Quant::Bf16 => argv.extend(["--dtype".into(), "bfloat16".into()]),
            Quant::Fp16 => argv.extend(["--dtype".into(), "float16".into()]),
            Quant::Fp32 => argv.extend(["--dtype".into(), "float32".into()]),
            Quant::Fp8 => argv.extend(["--quantization".into(), "fp8".into()]),
            q if q.is_gguf() => return Err(format!("{q} is a llama.cpp (GGUF) level: use --emit llama.cpp")),
            q => notes.push(format!(
                "{q}: SGLang reads the quantization from the checkpoint's quantization_config; serve a checkpoint stored at {q}"
            )),
        }
        match plan.kv_dtype {
            KvDtype::Fp8 => argv.extend(["--kv-cache-dtype".into(), "fp8_e4m3".into()]),
            KvDtype::Int8 => {
                return Err(
                    "SGLang has no int8 KV cache: plan with --kv-dtype fp8 or a 16-bit type".into(),
                );
            }
            _ => {}
        }
        // The same options as a config file: SGLang's `--config` reads a
        // YAML mapping whose keys are the long flags' names and turns each
        // back into `--key value` (sglang/srt/utils/server_args_config_parser.py
        // of the pinned version).
        let yaml = super::flags_yaml(&argv[3..]);
        notes.push(format!(
            "the same options as a config file: python3 -m sglang.launch_server --config {CONFIG_FILE}"
        ));
        Ok(super::Launch {
            runtime: RuntimeKind::Sglang,
            version: Some(PINNED_DEFINITIONS.into()),
            argv,
            env: Default::default(),
            files: [(CONFIG_FILE.to_string(), yaml)].into_iter().collect(),
            notes,
        })
    }
}
