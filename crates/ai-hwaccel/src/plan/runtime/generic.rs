//! The runtime-neutral rule the planner has always used: the model may use
//! `memory_utilization` of each device (default 0.9, vLLM's
//! `gpu_memory_utilization` default), and the activation workspace is one
//! layer's live tensors over a prefill chunk plus the batch's logits (see
//! the inference module's documentation).

use super::{DeviceContext, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// The generic rule.
pub struct Generic;

impl Runtime for Generic {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Generic
    }
    fn name(&self) -> &'static str {
        "generic"
    }
    fn source(&self) -> &'static str {
        "no runtime: memory_utilization (default 0.9, vLLM's gpu_memory_utilization default) and the planner's activation estimate"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        RuntimeMemory {
            reserve_bytes: (ctx.capacity_bytes as f64 * (1.0 - opts.memory_utilization)).ceil()
                as u64,
            activation_bytes: forward(opts.prefill_chunk),
        }
    }
}
