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

/// The argument definitions the emitted flags are checked against: the
/// llama.cpp vendored in this llama-cpp-python source distribution
/// (`tests/fixtures/runtimes/llama.cpp.json`, written by
/// `scripts/runtime-defs.py`; a test fails when a flag is not there).
pub const PINNED_DEFINITIONS: &str = "llama-cpp-python 0.3.36 (vendored llama.cpp common/arg.cpp)";

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
    fn emit(
        &self,
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
    ) -> Result<super::Launch, String> {
        LlamaCpp::launch(plan, choice, origin)
    }
}

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
    /// hold them (`--split-mode layer`, `--tensor-split` by layer count),
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
        if choice.tensor_parallel > 1 {
            return Err(format!(
                "llama.cpp splits models by layers, not by tensor parallelism: choose a plan with TP 1 (this one has TP {})",
                choice.tensor_parallel
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
        let layers: u32 = devices.iter().map(|d| d.layers.1 - d.layers.0).sum();
        let np = plan.batch.max(1);
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
            N_UBATCH.to_string(),
            "-ngl".into(),
            if host {
                "0".into()
            } else {
                (layers + 1).to_string()
            },
        ];
        if !host {
            argv.extend(["-fa".into(), "on".into(), "--fit".into(), "off".into()]);
            if devices.len() > 1 {
                let split: Vec<String> = devices
                    .iter()
                    .map(|d| (d.layers.1 - d.layers.0).to_string())
                    .collect();
                argv.extend([
                    "--split-mode".into(),
                    "layer".into(),
                    "--tensor-split".into(),
                    split.join(","),
                ]);
            }
        }
        Ok(super::Launch {
            runtime: RuntimeKind::LlamaCpp,
            version: Some(PINNED_DEFINITIONS.into()),
            argv,
            env: Default::default(),
            files: Default::default(),
            notes: vec![
                format!("flags checked against {PINNED_DEFINITIONS}"),
                format!(
                    "-c {} is {} tokens for each of {} sequences (llama.cpp divides the context among -np slots)",
                    plan.context * np,
                    plan.context,
                    np
                ),
            ],
        })
    }
}
