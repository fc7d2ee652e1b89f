//! SGLang's memory rule (`python/sglang/srt/server_args.py`,
//! `ServerArgs.__post_init__`, 2025 releases): the weights and the KV pool
//! get `mem_fraction_static` of the GPU; activations and CUDA-graph buffers
//! live in the rest. Unless given, the fraction is
//! `(gpu_mem − reserved) / gpu_mem` with `reserved`, in GiB, by GPU memory
//! (`parallel = tp × pp`): under 35 GiB (T4, 4080, A10, L40, 4090, 5090)
//! `2.8 + parallel / 10`; under 90 GiB (H100, A100) `9.5 + parallel / 2`;
//! under 160 GiB (H20, H200) `12 + parallel / 2`; else (B200, MI300) 32.
//! (Earlier releases used 0.88, 0.87, 0.85, 0.81, 0.79 by TP size.)
//! `--memory-utilization` is not read: SGLang's fraction is its own.

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

/// The SGLang rule.
pub struct Sglang;

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
        RuntimeMemory {
            reserve_bytes: sglang_reserved_bytes(ctx.capacity_bytes, parallel)
                .min(ctx.capacity_bytes),
            activation_bytes: 0,
        }
    }
}
