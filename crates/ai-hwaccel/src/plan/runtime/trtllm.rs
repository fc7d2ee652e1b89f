//! TensorRT-LLM's memory rule (`tensorrt_llm/llmapi/llm_args.py`:
//! `KvCacheConfig.free_gpu_memory_fraction` default 0.9; `BuildConfig`
//! `max_num_tokens` default 8192): after the engine's weights and runtime
//! buffers are allocated, the KV cache takes 0.9 of the memory still free;
//! the other 0.1 stays free. `--memory-utilization` is not read.

use super::{DeviceContext, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// `KvCacheConfig.free_gpu_memory_fraction` default.
pub const FREE_GPU_MEMORY_FRACTION: f64 = 0.9;

/// `max_num_tokens` default: the runtime buffers are sized for this many
/// tokens per step.
pub const MAX_NUM_TOKENS: u64 = 8192;

/// The name of the LLM API options file the command passes with `--config`.
pub const CONFIG_FILE: &str = "extra-llm-api-config.yml";

/// The argument definitions the emitted flags are checked against
/// (`tests/fixtures/runtimes/trtllm.json`: the click options of
/// `trtllm-serve`, `tensorrt_llm/commands/serve.py` at commit
/// 00209af149e7 of NVIDIA/TensorRT-LLM, read from GitHub; PyPI's
/// `tensorrt-llm` is a stub that installs from NVIDIA's own index).
pub const PINNED_DEFINITIONS: &str =
    "NVIDIA/TensorRT-LLM@00209af149e7 (trtllm-serve options, tensorrt_llm/commands/serve.py)";

/// The TensorRT-LLM rule.
pub struct TrtLlm;

impl Runtime for TrtLlm {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Trtllm
    }
    fn name(&self) -> &'static str {
        "trtllm"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["tensorrt-llm", "tensorrtllm", "trt-llm"]
    }
    /// `max_num_tokens` ([`MAX_NUM_TOKENS`]): the tokens one iteration of
    /// the in-flight batching scheduler takes.
    fn prompt_tokens_per_pass(&self, _at: &super::PassDevice, _opts: &InferenceOptions) -> u64 {
        MAX_NUM_TOKENS
    }
    fn source(&self) -> &'static str {
        "TensorRT-LLM tensorrt_llm/llmapi/llm_args.py (KvCacheConfig.free_gpu_memory_fraction 0.9, max_num_tokens 8192)"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        _opts: &InferenceOptions,
        forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        let act = forward(MAX_NUM_TOKENS);
        // The fraction is of what CUDA reports free: the driver's reserve
        // is never part of it.
        let cap = ctx.capacity_bytes;
        let visible = super::cuda_visible_bytes(ctx.device.spec_id.as_deref(), cap);
        let free = visible
            .saturating_sub(ctx.weights_bytes)
            .saturating_sub(act);
        RuntimeMemory {
            reserve_bytes: (cap - visible)
                + (free as f64 * (1.0 - FREE_GPU_MEMORY_FRACTION)).ceil() as u64,
            activation_bytes: act,
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
            "TensorRT-LLM needs a Hugging Face repository or a model directory: a bare size names neither",
        )?;
        if choice.data_parallel > 1 {
            return Err(format!(
                "the plan has {} replicas: trtllm-serve runs one per server; choose a plan with DP 1",
                choice.data_parallel
            ));
        }
        if plan.quantization.is_gguf() {
            return Err(format!(
                "{} is a llama.cpp (GGUF) level: use --emit llama.cpp",
                plan.quantization
            ));
        }
        if plan.kv_dtype == KvDtype::Int8 {
            return Err(
                "plan with --kv-dtype fp8 or a 16-bit type: the int8 KV cache is not emitted"
                    .into(),
            );
        }
        // The LLM API options trtllm-serve has no flag for, in the YAML file
        // `--config` (alias `--extra_llm_api_options`) reads: the KV cache's
        // type (`KvCacheConfig.dtype`, "auto" = the model's) and fraction.
        let kv_type = if plan.kv_dtype == KvDtype::Fp8 {
            "fp8"
        } else {
            "auto"
        };
        let config = format!(
            "kv_cache_config:\n  free_gpu_memory_fraction: {FREE_GPU_MEMORY_FRACTION}\n  dtype: {kv_type}\n"
        );
        let mut argv: Vec<String> = vec![
            "trtllm-serve".into(),
            model,
            "--tp_size".into(),
            choice.tensor_parallel.to_string(),
            "--pp_size".into(),
            choice.pipeline_parallel.to_string(),
            "--ep_size".into(),
            choice.expert_parallel.to_string(),
            "--max_seq_len".into(),
            plan.context.to_string(),
            "--max_batch_size".into(),
            super::admitted_sequences(plan, choice).to_string(),
            "--max_num_tokens".into(),
            MAX_NUM_TOKENS.to_string(),
            "--kv_cache_free_gpu_memory_fraction".into(),
            format!("{FREE_GPU_MEMORY_FRACTION}"),
        ];
        argv.extend(["--config".into(), CONFIG_FILE.into()]);
        let mut notes = Vec::new();
        if plan.quantization != Quant::Bf16 && plan.quantization != Quant::Fp16 {
            notes.push(format!(
                "{}: TensorRT-LLM reads the quantization from the checkpoint; serve a checkpoint stored at it",
                plan.quantization
            ));
        }
        notes.push(format!(
            "{CONFIG_FILE} (in files) holds the KV cache's type and fraction: write it beside the command"
        ));
        Ok(super::Launch {
            runtime: RuntimeKind::Trtllm,
            version: Some(PINNED_DEFINITIONS.to_string()),
            argv,
            env: Default::default(),
            files: [(CONFIG_FILE.to_string(), config)].into_iter().collect(),
            notes,
        })
    }
}
