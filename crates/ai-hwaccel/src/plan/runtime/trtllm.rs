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
        let free = ctx
            .capacity_bytes
            .saturating_sub(ctx.weights_bytes)
            .saturating_sub(act);
        RuntimeMemory {
            reserve_bytes: (free as f64 * (1.0 - FREE_GPU_MEMORY_FRACTION)).ceil() as u64,
            activation_bytes: act,
        }
    }
}
