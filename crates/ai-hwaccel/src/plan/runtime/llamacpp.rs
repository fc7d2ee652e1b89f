//! llama.cpp's memory rule (`llama-server`; `common/arg.cpp` and
//! `src/llama-context.cpp`, releases from late 2025 with `--fit`): no
//! fraction of the device is held back. Weights are stored by tensor type,
//! the KV cache holds `n_ctx` cells in the cache type, and the compute
//! buffer is reserved for a graph of `n_ubatch` tokens (default 512) — on
//! the device with the output layer that graph ends in the logits of every
//! token of the micro-batch, `n_ubatch × n_vocab` fp32 — plus the output
//! buffer of `n_vocab` fp32 logits per sequence. `--fit` (on by default)
//! fits the model leaving `--fit-target` MiB free per device (default 1024);
//! host memory (the CPU as a device) has no such margin — its capacity is
//! already what the process may still allocate. `--memory-utilization` is
//! not read.

use super::{DeviceContext, MIB, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// `n_ubatch` default (`common/common.h`, `n_ubatch = 512`).
pub const N_UBATCH: u64 = 512;

/// `--fit-target` default: 1024 MiB left free per device.
pub const FIT_TARGET_BYTES: u64 = (1024.0 * MIB) as u64;

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
    fn source(&self) -> &'static str {
        "llama.cpp common/arg.cpp (--fit on, --fit-target 1024 MiB, -ub 512) and src/llama-context.cpp (compute and output buffers), late-2025 releases"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        let logits = if ctx.last_stage {
            N_UBATCH * ctx.vocab_size * 4 + opts.batch.max(1) * ctx.vocab_size * 4
        } else {
            0
        };
        RuntimeMemory {
            reserve_bytes: if ctx.device.host {
                0
            } else {
                FIT_TARGET_BYTES.min(ctx.capacity_bytes)
            },
            activation_bytes: forward(N_UBATCH).max(logits),
        }
    }
}
