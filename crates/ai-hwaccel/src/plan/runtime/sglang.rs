//! SGLang's memory rule: the weights and the KV pool get
//! `mem_fraction_static` of the GPU; activations and CUDA-graph buffers
//! live in the rest. Unless given, the fraction is
//! `round((gpu_mem − reserved) ÷ gpu_mem, 3)` with `gpu_mem` what
//! `nvidia-smi` prints as the memory total, and `reserved` follows the
//! pinned release, 0.5.23 ([`SglangMemoryDefaults`]: a reserve from the
//! prefill chunk, the decode CUDA-graph batch, the parallel size and the
//! prefill CUDA graphs' buckets).
//!
//! History, read in the PyPI packages: 0.5.2 and earlier 2025 releases
//! reserved a flat amount by GPU size (under 35 GiB `2.8 + tp × pp / 10`
//! GiB, under 90 GiB `9.5 + tp × pp / 2`, under 160 GiB `12 + tp × pp / 2`,
//! else 32; `ServerArgs.__post_init__`); from 0.5.4 (October 2025,
//! `_handle_gpu_memory_settings`) the reserve is
//! `512 + 1.5 × max(chunk, 2048) + 2 × cuda_graph_max_bs + tp × pp / 8 ×
//! 1024` MiB, at least 10 GiB above 60 GiB (the cards of 20–35 GiB took a
//! 2048-token chunk and 16 (0.5.4) or 24 (0.5.6–0.5.16) graphs); 0.5.16 added
//! 8 MiB per prefill CUDA-graph bucket, and by 0.5.20 those cards take a
//! 4096-token chunk and 48 graphs. A log that prints its
//! `mem_fraction_static` (every `server_args=` line does) is compared at
//! that fraction (`ai-hwaccel check`).
//!
//! `--memory-utilization` is not read: SGLang's fraction is its own.
//! Multimodal checkpoints (a `…ForConditionalGeneration` with a
//! `vision_config`: Gemma 3, Llama 4, Qwen3.5) get the lower fraction
//! SGLang gives them for the image encoder's work
//! ([`sglang_vlm_fraction`]).
//!
//! A hybrid model's pool (linear-attention state beside the token cache)
//! is shared as the pinned release shares it ([`SglangHybridSplit`]).

use super::{DeviceContext, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::PlanDevice;
use crate::plan::arch::MultimodalEncoder;
use crate::plan::inference::InferenceOptions;

/// The platform SGLang runs on, as its memory defaults tell them apart
/// (`is_cuda`, `is_hip`, `is_xpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SglangPlatform {
    /// NVIDIA GPUs: prefill CUDA graphs (breakable) by default.
    Cuda,
    /// AMD GPUs (ROCm): no prefill graphs by default.
    Hip,
    /// Intel GPUs: no prefill graphs; 2 GiB more for oneDNN's scratch.
    Xpu,
    /// Anything else.
    Other,
}

impl SglangPlatform {
    /// The platform of a planned device: its spec entry's vendor, else
    /// its name.
    pub fn of(d: &PlanDevice) -> SglangPlatform {
        let vendor = d
            .spec_id
            .as_deref()
            .and_then(crate::spec::by_id)
            .filter(|e| e.family == crate::model::Family::Gpu)
            .map(|e| e.vendor.clone());
        let name = d.name.to_ascii_lowercase();
        match vendor.as_deref() {
            Some("nvidia") => SglangPlatform::Cuda,
            Some("amd") => SglangPlatform::Hip,
            Some("intel") => SglangPlatform::Xpu,
            Some(_) => SglangPlatform::Other,
            None if d.host => SglangPlatform::Other,
            None if name.contains("nvidia") || name.contains("geforce") => SglangPlatform::Cuda,
            None if name.contains("radeon") || name.contains("instinct") => SglangPlatform::Hip,
            None if name.contains("intel") && name.contains("arc")
                || name.contains("data center gpu max") =>
            {
                SglangPlatform::Xpu
            }
            None => SglangPlatform::Other,
        }
    }
}

/// What SGLang 0.5.23 (the pinned release; `sglang/srt/arg_groups/`
/// `memory_hook.py`, `handle_gpu_memory_settings` and
/// `reserve_for_graph_mb`; `cuda_graph_hook.py`,
/// `generate_prefill_cuda_graph_batch_sizes`; `model_executor/`
/// `cuda_graph_config.py`, `default_prefill_backend`) sets when a server is
/// started without `--chunked-prefill-size`, `--cuda-graph-max-bs` or
/// `--mem-fraction-static`, on one data-parallel rank without speculative
/// decoding, DeepEP or disaggregation:
///
/// | `gpu_mem` (MiB) | chunk | decode graphs (tp < 4 / tp ≥ 4) |
/// | --- | --- | --- |
/// | < 20480 (T4, 4080) | 2048 | 8 |
/// | < 35840 (A10, 4090, 5090) | 4096 | 48 / 160 |
/// | < 61440 (A100 40GB, L40) | 4096 | 32 / 160 |
/// | < 163840 (H100, A100 80GB, H20, H200) | 8192 | 256 / 512 |
/// | else (B200, MI300) | 16384 | 512 |
///
/// `reserved = 512 + 1.5 × max(chunk, 2048) + tp × pp / 8 × 1024 + 2 ×
/// decode graphs + prefill graphs` MiB, at least 10240 where `gpu_mem` is
/// above 61440, plus 2048 on Intel GPUs; the prefill graphs (CUDA only,
/// one pipeline stage) cost 8 MiB per captured token bucket up to the
/// chunk (58 buckets at 8192) or, for latent attention (MLA), 1.5 GiB.
/// `mem_fraction_static = round((gpu_mem − reserved) ÷ gpu_mem, 3)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SglangMemoryDefaults {
    /// `chunked_prefill_size`.
    pub chunked_prefill_size: u64,
    /// The decode CUDA graphs' largest batch (`cuda_graph_max_bs`).
    pub decode_graph_max_bs: u64,
    /// Prefill CUDA-graph token buckets captured (0: none by default).
    pub prefill_graph_buckets: u64,
    /// The reserve, MiB.
    pub reserved_mib: f64,
    /// The default `mem_fraction_static`.
    pub mem_fraction_static: f64,
}

/// The prefill CUDA-graph token buckets up to `max_tokens`
/// (`generate_prefill_cuda_graph_batch_sizes`): every 4 to 32, 16 to 256,
/// 32 to 512, 64 to 1024, 256 to 4096, then 512 up to the chunk.
pub fn sglang_prefill_graph_buckets(max_tokens: u64) -> u64 {
    let steps: [(u64, u64, u64); 6] = [
        (4, 32, 4),
        (48, 256, 16),
        (288, 512, 32),
        (576, 1024, 64),
        (1280, 4096, 256),
        (4608, u64::MAX, 512),
    ];
    steps
        .iter()
        .map(|&(from, to, step)| {
            let top = to.min(max_tokens);
            if top < from {
                0
            } else {
                (top - from) / step + 1
            }
        })
        .sum()
}

impl SglangMemoryDefaults {
    /// The defaults on a GPU whose `nvidia-smi` total is `gpu_bytes`
    /// ([`super::vllm::nvidia_smi_total_bytes`]), at `tp` × `pp` ranks, for
    /// a model with latent attention (`mla`) or not.
    pub fn new(gpu_bytes: u64, tp: u32, pp: u32, platform: SglangPlatform, mla: bool) -> Self {
        Self::with_graphs(gpu_bytes, tp, pp, platform, mla, true)
    }

    /// [`SglangMemoryDefaults::new`] for a server whose CUDA graphs are on
    /// (`graphs`, the default) or disabled (`--cuda-graph-backend-decode
    /// disabled --cuda-graph-backend-prefill disabled`,
    /// [`InferenceOptions::eager`]): `reserve_for_graph_mb` then adds
    /// neither the decode graphs' 2 MiB per batch nor the prefill graphs'
    /// buckets (it checks each phase's backend against `DISABLED`).
    pub fn with_graphs(
        gpu_bytes: u64,
        tp: u32,
        pp: u32,
        platform: SglangPlatform,
        mla: bool,
        graphs: bool,
    ) -> Self {
        let gpu_mem = gpu_bytes as f64 / (1u64 << 20) as f64;
        let small_tp = tp < 4;
        let (chunk, max_bs): (u64, u64) = if gpu_mem < 20.0 * 1024.0 {
            (2048, 8)
        } else if gpu_mem < 35.0 * 1024.0 {
            (4096, if small_tp { 48 } else { 160 })
        } else if gpu_mem < 60.0 * 1024.0 {
            (4096, if small_tp { 32 } else { 160 })
        } else if gpu_mem < 160.0 * 1024.0 {
            (8192, if small_tp { 256 } else { 512 })
        } else {
            (16384, 512)
        };
        let prefill_graphs = graphs && platform == SglangPlatform::Cuda && pp <= 1;
        let prefill_graph_buckets = if prefill_graphs {
            sglang_prefill_graph_buckets(if mla { chunk.min(8192) } else { chunk })
        } else {
            0
        };
        let mut reserved = 512.0
            + chunk.max(2048) as f64 * 1.5
            + f64::from(tp.max(1)) * f64::from(pp.max(1)) / 8.0 * 1024.0
            + if graphs { max_bs as f64 * 2.0 } else { 0.0 };
        if prefill_graphs {
            reserved += if mla {
                1.5 * 1024.0
            } else {
                prefill_graph_buckets as f64 * 8.0
            };
        }
        if gpu_mem > 60.0 * 1024.0 {
            reserved = reserved.max(10.0 * 1024.0);
        }
        if platform == SglangPlatform::Xpu {
            reserved += 2.0 * 1024.0;
        }
        let fraction = if gpu_mem > 0.0 {
            ((gpu_mem - reserved) / gpu_mem * 1000.0).round() / 1000.0
        } else {
            0.0
        };
        SglangMemoryDefaults {
            chunked_prefill_size: chunk,
            decode_graph_max_bs: max_bs,
            prefill_graph_buckets,
            reserved_mib: reserved,
            mem_fraction_static: fraction.max(0.0),
        }
    }

    /// The defaults for a planned device (its `nvidia-smi` total where a
    /// capture gives one, else `capacity_bytes`), the fraction lowered for
    /// a multimodal checkpoint's `encoder` ([`sglang_vlm_fraction`]).
    pub fn for_device(
        d: &PlanDevice,
        capacity_bytes: u64,
        tp: u32,
        pp: u32,
        mla: bool,
        encoder: Option<&MultimodalEncoder>,
    ) -> Self {
        Self::for_device_with(d, capacity_bytes, tp, pp, mla, encoder, true)
    }

    /// [`SglangMemoryDefaults::for_device`] with its CUDA graphs on or
    /// disabled ([`SglangMemoryDefaults::with_graphs`]).
    pub fn for_device_with(
        d: &PlanDevice,
        capacity_bytes: u64,
        tp: u32,
        pp: u32,
        mla: bool,
        encoder: Option<&MultimodalEncoder>,
        graphs: bool,
    ) -> Self {
        let total = super::vllm::nvidia_smi_total_bytes(d.spec_id.as_deref(), capacity_bytes);
        let mut m =
            SglangMemoryDefaults::with_graphs(total, tp, pp, SglangPlatform::of(d), mla, graphs);
        if let Some(e) = encoder {
            m.mem_fraction_static = sglang_vlm_fraction(m.mem_fraction_static, e);
        }
        m
    }
}

/// SGLang 0.5.23's default fraction for a multimodal model
/// (`arg_groups/memory_hook.py`, `adjust_mem_fraction_for_vlm`, on the
/// default path where graphs are reserved before capture): `fraction ×
/// 0.95 × clamp(1 − 0.1 × (r − 1), 0.8, 1.05)` with `r` the encoder's
/// `layers × hidden_size²` over a ViT-L/14's (24 × 1024²). Gemma 3's and
/// Qwen3.5's encoders (27 layers of 1152) take 0.95 × 0.958; Llama 4's (34
/// of 1408) 0.95 × 0.832. Rounded to three decimals, as the emitted
/// `--mem-fraction-static` passes it.
pub fn sglang_vlm_fraction(fraction: f64, encoder: &MultimodalEncoder) -> f64 {
    let ratio =
        f64::from(encoder.layers) * (encoder.hidden_size as f64).powi(2) / (24.0 * 1024.0 * 1024.0);
    let dynamic = (1.0 - 0.1 * (ratio - 1.0)).clamp(0.8, 1.05);
    (fraction * 0.95 * dynamic * 1000.0).round() / 1000.0
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

/// The `--mem-fraction-static` a plan was made with, where it is a
/// fraction in (0, 1] (else SGLang's default applies and the plan warns).
pub fn given_fraction(opts: &InferenceOptions) -> Option<f64> {
    opts.mem_fraction_static
        .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1.0)
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
    /// SGLang runs a batch of newly arrived prompts as a prefill
    /// ("extend") pass of its own before the next decode step:
    /// `Scheduler.get_next_batch_to_run` (`sglang/srt/managers/scheduler.py`)
    /// takes `get_new_batch_prefill()` first ("Run prefill first if
    /// possible") and decodes only when no prompt waits; mixing the two is
    /// `--enable-mixed-chunk`, off by default (`enable_mixed_chunk = False`
    /// in 0.5.6's `server_args.py` and 0.5.23's
    /// `arg_groups/fields/schedule.py`).
    fn prompts_between_decode_steps(&self) -> bool {
        true
    }
    /// `chunked_prefill_size` as SGLang defaults it for the device
    /// ([`SglangMemoryDefaults`]): the prompt tokens one extend pass takes.
    fn prompt_tokens_per_pass(&self, at: &super::PassDevice, _opts: &InferenceOptions) -> u64 {
        SglangMemoryDefaults::for_device(
            at.device,
            at.capacity_bytes,
            at.tensor_parallel,
            at.pipeline_parallel,
            at.latent_attention,
            None,
        )
        .chunked_prefill_size
    }
    fn source(&self) -> &'static str {
        "SGLang 0.5.23 sglang/srt/arg_groups/memory_hook.py (handle_gpu_memory_settings: mem_fraction_static from the prefill chunk, CUDA-graph and parallel reserves; reserve_for_graph_mb)"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        _forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        // What CUDA does not report is out of reach; the default fraction
        // divides by nvidia-smi's `memory.total`, which counts the
        // driver's reserve too (SglangMemoryDefaults).
        let visible =
            super::vllm::cuda_visible_bytes(ctx.device.spec_id.as_deref(), ctx.capacity_bytes);
        let fraction = given_fraction(opts).unwrap_or_else(|| {
            SglangMemoryDefaults::for_device_with(
                ctx.device,
                ctx.capacity_bytes,
                ctx.tensor_parallel,
                ctx.pipeline_parallel,
                ctx.spec.mla.is_some(),
                ctx.spec.multimodal_encoder.as_ref(),
                !opts.eager,
            )
            .mem_fraction_static
        });
        // Weights and pool share the default fraction of the free memory
        // the model runner measures (SGLANG_INIT_BYTES).
        let shared = sglang_pool_bytes(visible, fraction, 0);
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
        let fraction = given_fraction(&plan.options).unwrap_or_else(|| {
            plan.devices
                .iter()
                .find(|p| p.id == d.device)
                .or(plan.devices.first())
                .map_or(0.0, |p| {
                    SglangMemoryDefaults::for_device_with(
                        p,
                        d.capacity_bytes,
                        choice.tensor_parallel,
                        choice.pipeline_parallel,
                        plan.latent_attention,
                        plan.multimodal_encoder.as_ref(),
                        !plan.options.eager,
                    )
                    .mem_fraction_static
                })
        });
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
        // Arriving prompts mixed into the decode steps' batches, as the
        // plan's served TPOT assumed (`InferenceOptions::mixed_prefill`).
        if plan.options.mixed_prefill {
            argv.push("--enable-mixed-chunk".into());
        }
        // No CUDA graphs (`InferenceOptions::eager`): both phases' graph
        // backends disabled, the pinned release's spelling of the
        // deprecated `--disable-cuda-graph`.
        if plan.options.eager {
            argv.extend([
                "--cuda-graph-backend-decode".into(),
                "disabled".into(),
                "--cuda-graph-backend-prefill".into(),
                "disabled".into(),
            ]);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The reserves of SGLang 0.5.23's `handle_gpu_memory_settings`,
    /// worked by hand from its source for each branch.
    #[test]
    fn default_fraction_follows_each_branch_of_the_pinned_release() {
        let mib = |m: u64| m << 20;
        // Prefill buckets as `generate_prefill_cuda_graph_batch_sizes` lists them.
        assert_eq!(sglang_prefill_graph_buckets(2048), 42);
        assert_eq!(sglang_prefill_graph_buckets(4096), 50);
        assert_eq!(sglang_prefill_graph_buckets(8192), 58);
        assert_eq!(sglang_prefill_graph_buckets(16384), 74);
        assert_eq!(sglang_prefill_graph_buckets(3), 0);
        // A 16 GiB card: 2048 tokens, 8 graphs: 512 + 3072 + 128 + 16 + 8 × 42.
        let s = SglangMemoryDefaults::new(mib(16_376), 1, 1, SglangPlatform::Cuda, false);
        assert_eq!((s.chunked_prefill_size, s.decode_graph_max_bs), (2048, 8));
        assert_eq!(s.reserved_mib, 4064.0);
        assert_eq!(s.mem_fraction_static, 0.752);
        // The same card under ROCm: no prefill graphs by default.
        let r = SglangMemoryDefaults::new(mib(16_376), 1, 1, SglangPlatform::Hip, false);
        assert_eq!((r.prefill_graph_buckets, r.reserved_mib), (0, 3728.0));
        // An Intel GPU: no prefill graphs, 2 GiB for oneDNN's scratch.
        let x = SglangMemoryDefaults::new(mib(16_376), 1, 1, SglangPlatform::Xpu, false);
        assert_eq!(x.reserved_mib, 3728.0 + 2048.0);
        // Latent attention on an H200 (143771 MiB) at TP 8: 1.5 GiB for
        // the prefill graphs instead of 8 MiB per bucket.
        let m = SglangMemoryDefaults::new(mib(143_771), 8, 1, SglangPlatform::Cuda, true);
        assert_eq!(m.reserved_mib, 512.0 + 12288.0 + 1024.0 + 1024.0 + 1536.0);
        assert_eq!(m.mem_fraction_static, 0.886);
        // Two pipeline stages: prefill graphs are off by default.
        let p = SglangMemoryDefaults::new(mib(81_559), 1, 2, SglangPlatform::Cuda, false);
        assert_eq!(p.prefill_graph_buckets, 0);
        assert_eq!(p.reserved_mib, 512.0 + 12288.0 + 256.0 + 512.0);
        // A B200 (183 GiB class): a 16384-token chunk and 512 graphs.
        let b = SglangMemoryDefaults::new(mib(183_359), 1, 1, SglangPlatform::Cuda, false);
        assert_eq!(
            (b.chunked_prefill_size, b.decode_graph_max_bs),
            (16384, 512)
        );
        assert_eq!(
            b.reserved_mib,
            512.0 + 24576.0 + 128.0 + 1024.0 + 74.0 * 8.0
        );
        // Tiers switch at 20, 35 and 60 GiB and by TP below and from 4.
        let t = |g: u64, tp: u32| {
            let d = SglangMemoryDefaults::new(mib(g), tp, 1, SglangPlatform::Cuda, false);
            (d.chunked_prefill_size, d.decode_graph_max_bs)
        };
        assert_eq!(t(20_479, 1), (2048, 8));
        assert_eq!(t(20_480, 1), (4096, 48));
        assert_eq!(t(24_564, 4), (4096, 160));
        assert_eq!(t(46_068, 2), (4096, 32));
        assert_eq!(t(46_068, 8), (4096, 160));
        assert_eq!(t(61_440, 1), (8192, 256));
        // The platform follows the spec entry's vendor.
        let platform = |s: &str| SglangPlatform::of(&PlanDevice::from_device_string(s).unwrap()[0]);
        assert_eq!(platform("1xh100-sxm"), SglangPlatform::Cuda);
        assert_eq!(platform("1xmi300x"), SglangPlatform::Hip);
        assert_eq!(platform("1xarc-a770"), SglangPlatform::Xpu);
        // Nothing known: no fraction above zero.
        assert_eq!(
            SglangMemoryDefaults::new(0, 1, 1, SglangPlatform::Cuda, false).mem_fraction_static,
            0.0
        );
    }

    /// `adjust_mem_fraction_for_vlm` of SGLang 0.5.23, worked by hand: the
    /// encoder's `layers × width²` against a ViT-L/14's, 10 % off per
    /// doubling, within 0.8 to 1.05, times 0.95.
    #[test]
    fn multimodal_fraction_follows_the_encoder() {
        let enc = |layers, hidden_size| MultimodalEncoder {
            layers,
            hidden_size,
        };
        // Gemma 3 / Qwen3.5 (27 × 1152²: r = 1.4238): 0.830 × 0.95 × 0.95762.
        assert_eq!(sglang_vlm_fraction(0.830, &enc(27, 1152)), 0.755);
        // Llama 4 (34 × 1408²: r = 2.6784): × 0.95 × 0.83216.
        assert_eq!(sglang_vlm_fraction(0.819, &enc(34, 1408)), 0.647);
        // A ViT-L/14 itself: 0.95 alone; a tiny encoder is held at 1.05,
        // a huge one at 0.8.
        assert_eq!(sglang_vlm_fraction(0.8, &enc(24, 1024)), 0.76);
        assert_eq!(sglang_vlm_fraction(0.8, &enc(1, 64)), 0.798);
        assert_eq!(sglang_vlm_fraction(0.8, &enc(64, 4096)), 0.608);
        // The planned device's default takes it: an H100 at TP 1.
        let h100 = &PlanDevice::from_device_string("1xh100-sxm").unwrap()[0];
        let text = SglangMemoryDefaults::for_device(h100, 80 << 30, 1, 1, false, None);
        let vlm =
            SglangMemoryDefaults::for_device(h100, 80 << 30, 1, 1, false, Some(&enc(27, 1152)));
        assert_eq!(text.mem_fraction_static, 0.830);
        assert_eq!(vlm.mem_fraction_static, 0.755);
    }
}
