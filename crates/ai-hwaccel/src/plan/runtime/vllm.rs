//! vLLM's memory rule (V1 engine; `vllm/v1/worker/gpu_worker.py`
//! `Worker.determine_available_memory` and `vllm/engine/arg_utils.py`
//! `EngineArgs.get_batch_defaults`, v0.10–v0.11):
//!
//! 1. vLLM may use `gpu_memory_utilization` (default 0.9) of the total
//!    memory CUDA reports, which is less than the datasheet size;
//! 2. it profiles one forward pass at `max_num_batched_tokens` and one
//!    sampler pass at `max_num_seqs` requests and keeps their peak;
//! 3. memory allocated outside PyTorch (CUDA context growth, NCCL buffers)
//!    is "non-torch" memory;
//! 4. the KV cache gets `utilization × total − weights − peak − non-torch`.
//!
//! The batch defaults depend on the GPU ([`vllm_batch_defaults`]).
//!
//! vLLM 0.20.0 changed two things the rule does not predict (read in the
//! PyPI source distributions: 0.19.0 and earlier have neither, 0.20.0,
//! 0.20.2, 0.21.0 and the pinned 0.33.0 both): `gpu_memory_utilization`
//! defaults to 0.92, not 0.9 (`vllm/config/cache.py`), and the KV cache
//! also loses a CUDA-graph memory estimate (`vllm/envs.py`
//! `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to "1"; 0.18 and
//! 0.19 had it as an opt-in): `Worker.determine_available_memory`
//! subtracts `profile_cudagraph_memory()`, which captures the first two
//! graphs of each mode and counts the rest at the second one's size, so
//! the figure is measured at start-up and depends on the model, the
//! capture sizes and the attention backend (0.17 to 4.38 GiB per GPU in
//! published logs: `tests/fixtures/runtime-logs/vllm-*cudagraph*`). The
//! planner keeps 0.9 and no estimate, which is what vLLM 0.10-0.19 do;
//! the two changes pull in opposite directions (on the RTX A5000 of
//! `tests/calibration/runtime_memory.csv`: 2 % of 23.5 GiB is 0.47 GiB,
//! the logged estimate 0.52 GiB). `check` reads both from a log
//! ([`default_memory_utilization`], [`subtracts_cudagraph_estimate`]),
//! and `--emit vllm` says the KV cache will be smaller by the estimate.
//!
//! The sampler's peak is fitted: in the profiled logs of
//! llm-d-benchmark (`config_explorer/empirical-vllm-memory-results.md`,
//! H100, vLLM V1 defaults; rows in `tests/calibration/runtime_memory.csv`)
//! the peak activation is proportional to the vocabulary (4.76 GiB for
//! Llama-3.1-8B's 128,256 tokens, 5.56 GiB for Qwen3's 151,936, 7.38 GiB for
//! gpt-oss's 201,088) and not to the hidden size: the sampler's fp32 logits
//! for 1024 requests and its temporaries (softmax, sorting for top-k/top-p)
//! dominate. [`SAMPLER_BYTES_PER_LOGIT`] is the least-squares fit through
//! the origin of peak ÷ (max_num_seqs × vocabulary) over those rows
//! (`scripts/fit-vllm-sampler.py`; a test refits it from the CSV).

use super::{DeviceContext, GIB, Runtime, RuntimeKind, RuntimeMemory};
use crate::plan::inference::InferenceOptions;

/// The argument definitions the emitted flags are checked against
/// (`tests/fixtures/runtimes/vllm.json`, written by `scripts/runtime-defs.py`
/// from vLLM's PyPI source distribution).
pub const PINNED_DEFINITIONS: &str = "vllm 0.33.0 (EngineArgs fields)";

/// The last vLLM release that loads bitsandbytes (NF4 and int8)
/// checkpoints: `quantization/bitsandbytes.py` and the `"bitsandbytes"`
/// entry of `QuantizationMethods` (`quantization/__init__.py`) are in the
/// 0.27.1 wheel and gone from 0.28.0's (both read from PyPI's wheels). The
/// pinned release cannot load an NF4 checkpoint, so the planner never
/// suggests NF4 for vLLM and warns when it is asked for.
pub const LAST_BITSANDBYTES: &str = "0.27.1";

/// The pinned release's name without the definitions' description
/// (`vllm 0.33.0`), as the notes and warnings quote it.
fn pinned_release() -> &'static str {
    PINNED_DEFINITIONS
        .split(" (")
        .next()
        .unwrap_or(PINNED_DEFINITIONS)
}

/// The warning for an NF4 plan under vLLM ([`LAST_BITSANDBYTES`]).
pub fn bitsandbytes_removed() -> String {
    let pinned = pinned_release();
    format!(
        "nf4 is a bitsandbytes format, which vLLM loads only up to {LAST_BITSANDBYTES} (0.28.0 \
         removed it; the pinned {pinned} cannot load it): the memory is planned as \
         {LAST_BITSANDBYTES} ran it; for a current vLLM plan --quant awq, gptq or fp8, or \
         --runtime sglang (which still loads bitsandbytes)"
    )
}

/// `(major, minor, patch)` of a vLLM version as logs print it: `0.10.1.1`,
/// `0.8.5.post1`, `0.20.2rc1.dev9+g01d4d1ad3`; `None` for `dev` and other
/// text that does not start with numbers.
pub fn parse_version(v: &str) -> Option<(u32, u32, u32)> {
    let v = v.trim().trim_start_matches('v');
    let mut parts = v.split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next()??;
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// The first release whose `gpu_memory_utilization` defaults to 0.92 and
/// that subtracts its CUDA-graph estimate from the KV cache by default
/// (module documentation).
pub const CUDAGRAPH_ESTIMATE_DEFAULT_SINCE: (u32, u32, u32) = (0, 20, 0);

/// vLLM's default `gpu_memory_utilization` in release `version` (0.92 from
/// [`CUDAGRAPH_ESTIMATE_DEFAULT_SINCE`], 0.9 before); `None` when the
/// version cannot be read.
pub fn default_memory_utilization(version: &str) -> Option<f64> {
    let v = parse_version(version)?;
    Some(if v >= CUDAGRAPH_ESTIMATE_DEFAULT_SINCE {
        0.92
    } else {
        0.9
    })
}

/// Whether vLLM took its CUDA-graph estimate off the KV cache: as the log
/// says where it says (`logged`: [`super::log::VllmLog::cudagraph_estimate_subtracted`]),
/// else by release (on by default from [`CUDAGRAPH_ESTIMATE_DEFAULT_SINCE`];
/// an unknown release: no).
pub fn subtracts_cudagraph_estimate(version: Option<&str>, logged: Option<bool>) -> bool {
    logged.unwrap_or_else(|| {
        version
            .and_then(parse_version)
            .is_some_and(|v| v >= CUDAGRAPH_ESTIMATE_DEFAULT_SINCE)
    })
}

/// The note `--emit vllm` adds: the launched release subtracts a
/// CUDA-graph estimate the plan does not predict.
pub fn cudagraph_estimate_note() -> String {
    let pinned = pinned_release();
    format!(
        "vLLM 0.20 and later ({pinned} too) take a CUDA-graph memory estimate they measure at start-up \
         off the KV cache (`Estimated CUDA graph memory: X GiB total`; 0.17 to 4.38 GiB per GPU in \
         published logs), which this plan does not predict: expect that much less KV cache than \
         planned, and `ai-hwaccel check` the start-up log to see it"
    )
}

/// The note `--emit vllm` adds for an eager plan
/// ([`crate::plan::InferenceOptions::eager`]).
pub fn eager_note() -> String {
    let pinned = pinned_release();
    format!(
        "--enforce-eager: vLLM sets its CUDA-graph mode to NONE and captures no graph (read in \
         {pinned}: `config/vllm.py`), so 0.20 and later take no CUDA-graph estimate off the KV \
         cache (`profile_cudagraph_memory` returns 0 without graphs to capture); every decode \
         step launches its kernels from the host"
    )
}

/// How vLLM lays out a hybrid model's KV cache (full-attention layers
/// beside Gated DeltaNet ones: Qwen3-Next, Qwen3.5) on one GPU. Read in
/// the PyPI sources of 0.21.0 and the pinned 0.33.0 (the same shape in
/// both; differences named):
///
/// - the attention block is enlarged until an attention page (one layer's
///   `block_size` tokens) holds one sequence's state of one linear layer:
///   `block_size = A × ⌈state ÷ (A × attention bytes per token)⌉`, `A` the
///   smallest kernel block (16) or, in 0.33.0 with prefix caching and
///   FlashInfer's GDN prefill, lcm(16, 64) = 64
///   (`Platform._align_hybrid_block_size`, `platforms/interface.py`); the
///   state's page is padded up to the attention page;
/// - the layers are grouped `g` at a time, `g` the smaller of the two
///   layer counts (the larger when it is under 1.5 times the smaller;
///   `_get_kv_cache_groups_uniform_page_size`), and the GPU's KV memory is
///   one pool of `num_blocks = memory ÷ (g × page)` blocks that every group
///   draws on (`get_kv_cache_config_from_groups`);
/// - a request of `L` tokens takes `⌈L ÷ block_size⌉` blocks in each
///   attention group and, in each linear group, 1 block without prefix
///   caching, 2 with it ("align" mode), 3 in 0.33.0 with FlashInfer's GDN
///   prefill (its checkpoint block; `MambaSpec.max_memory_usage_bytes`,
///   `v1/kv_cache_interface.py`);
/// - vLLM logs `GPU KV cache size: int(num_blocks ÷ blocks per request ×
///   L) tokens` (0.20.1 on; `get_kv_cache_capacity`), and from 0.20.0
///   refuses to start when `max_num_seqs` exceeds `num_blocks` with full
///   CUDA graphs on (the default): "max_num_seqs (N) exceeds available
///   Mamba cache blocks (M)" (`CompilationConfig.resolve_cudagraph_mode_and_sizes`;
///   0.18-0.19 capped the graph sizes instead).
///
/// Three published logs are reproduced exactly by these rules (tests in
/// this module's file and `tests/runtime_logs.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HybridBlocks {
    /// Tokens per attention block after the enlargement.
    pub block_size: u64,
    /// Bytes of one layer's page (attention: `block_size` tokens).
    pub page_bytes: u64,
    /// Layers per group.
    pub group_size: u64,
    /// Groups of full-attention layers.
    pub attention_groups: u64,
    /// Groups of linear-attention layers.
    pub linear_groups: u64,
    /// Blocks one request holds in each linear group.
    pub linear_blocks_per_group: u64,
}

/// What decides a hybrid layout beside the model: whether prefix caching
/// is on (vLLM's default for hybrid models from 0.26.0; off before) and
/// whether the GDN prefill runs FlashInfer's kernel with its checkpoints
/// (0.33.0 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HybridMode {
    /// Prefix caching on ("align" mode for the linear layers' state).
    pub prefix_caching: bool,
    /// FlashInfer's GDN prefill with checkpoints (0.33.0).
    pub prefill_checkpoint: bool,
}

impl HybridMode {
    /// The pinned release's defaults on an NVIDIA GPU of compute
    /// capability `cc` for linear layers of key head dimension
    /// `key_head_dim`: prefix caching on; FlashInfer's GDN prefill on
    /// Hopper, and on Blackwell (10.x, 12.x) for key heads of 128 with a
    /// CUDA 13 runtime (`_resolve_gdn_prefill_backend`,
    /// `model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py`), which
    /// vLLM's 2026 installs run (torch 2.13.0+cu130 on B200s in vllm issue
    /// 57936).
    pub fn pinned(cc: Option<(u32, u32)>, key_head_dim: u64) -> Self {
        let flashinfer = match cc {
            Some((9, 0)) => true,
            Some((10 | 12, _)) => key_head_dim == 128,
            _ => false,
        };
        HybridMode {
            prefix_caching: true,
            prefill_checkpoint: flashinfer,
        }
    }
}

impl HybridMode {
    /// The layout of release `version` (as a log prints it) with prefix
    /// caching as the log sets it (`None`: the release's default, on for
    /// hybrid models from 0.26.0; read in the 0.25.0 and 0.26.0 sdists'
    /// `ModelConfig.is_prefix_caching_supported`), on a GPU of compute
    /// capability `cc`; FlashInfer's GDN checkpoints from 0.33.0 (absent in
    /// 0.30.0-0.32.0). An unreadable release is taken as the pinned one.
    pub fn of_release(
        version: Option<&str>,
        prefix_caching: Option<bool>,
        cc: Option<(u32, u32)>,
        key_head_dim: u64,
    ) -> Self {
        let pinned = HybridMode::pinned(cc, key_head_dim);
        let Some(v) = version.and_then(parse_version) else {
            return HybridMode {
                prefix_caching: prefix_caching.unwrap_or(pinned.prefix_caching),
                prefill_checkpoint: pinned.prefill_checkpoint,
            };
        };
        let prefix_caching = prefix_caching.unwrap_or(v >= (0, 26, 0));
        HybridMode {
            prefix_caching,
            prefill_checkpoint: prefix_caching && v >= (0, 33, 0) && pinned.prefill_checkpoint,
        }
    }
}

impl HybridBlocks {
    /// The layout for `spec` at tensor parallelism `tp` with a KV cache of
    /// `kv_bytes` per element and weights of `model_bytes` per element
    /// (the convolution state's width; the recurrent state's is the
    /// config's `mamba_ssm_dtype` where it names one); `None` for a model
    /// without both kinds of layers or with MLA.
    pub fn new(
        spec: &crate::plan::ModelSpec,
        tp: u32,
        kv_bytes: f64,
        model_bytes: f64,
        mode: HybridMode,
    ) -> Option<Self> {
        let l = spec.linear_attention.as_ref()?;
        if spec.mla.is_some() {
            return None;
        }
        let tp = u64::from(tp.max(1));
        let linear = u64::from(spec.linear_layers());
        let attention = u64::from(spec.num_layers).checked_sub(linear)?;
        if linear == 0 || attention == 0 {
            return None;
        }
        // In floating point and then checked: a model file's sizes are
        // not trusted to keep u64 products in range.
        let kv_heads = (u64::from(spec.num_kv_heads) / tp).max(1) as f64;
        let attn_token = (kv_heads * 2.0 * spec.head_dim as f64 * kv_bytes).ceil();
        let conv_dim = ((2.0 * f64::from(l.num_key_heads) * l.key_head_dim as f64
            + f64::from(l.num_value_heads) * l.value_head_dim as f64)
            / tp as f64)
            .floor();
        let ssm_bytes = match l.ssm_state_dtype.as_deref() {
            Some("fp32") => 4.0,
            Some("bf16" | "fp16") => 2.0,
            _ => model_bytes,
        };
        let state = (l.conv_kernel.saturating_sub(1) as f64 * conv_dim * model_bytes
            + (u64::from(l.num_value_heads) / tp) as f64
                * l.value_head_dim as f64
                * l.key_head_dim as f64
                * ssm_bytes)
            .ceil();
        let align = if mode.prefix_caching && mode.prefill_checkpoint {
            64.0
        } else {
            16.0
        };
        let block_size = (align * (state / (align * attn_token)).ceil()).max(16.0);
        let page_bytes = block_size * attn_token;
        let (lo, hi) = (attention.min(linear), attention.max(linear));
        let group_size = if (hi as f64) < lo as f64 * 1.5 {
            hi
        } else {
            lo
        };
        // 2^50 bytes of one block: far beyond any GPU, and within u64.
        if !(attn_token >= 1.0 && page_bytes * group_size as f64 <= (1u64 << 50) as f64) {
            return None;
        }
        let block_size = block_size as u64;
        Some(HybridBlocks {
            block_size,
            page_bytes: page_bytes as u64,
            group_size,
            attention_groups: attention.div_ceil(group_size),
            linear_groups: linear.div_ceil(group_size),
            linear_blocks_per_group: match (mode.prefix_caching, mode.prefill_checkpoint) {
                (false, _) => 1,
                (true, false) => 2,
                (true, true) => 3,
            },
        })
    }

    /// Bytes one block of the pool takes on the GPU (a page in each layer
    /// of a group).
    pub fn bytes_per_block(&self) -> u64 {
        self.group_size * self.page_bytes
    }

    /// Bytes one block takes on a pipeline stage holding layers `a..b` of
    /// `spec` (the model the pool was made for): a page in each of the
    /// stage's layers of its largest group, as vLLM 0.33.0 projects the
    /// model's groups onto a stage (see `SlidingBlocks::stage_bytes_per_block`);
    /// the stages' block counts are then cut to the smallest.
    pub fn stage_bytes_per_block(&self, spec: &crate::plan::ModelSpec, a: u32, b: u32) -> u64 {
        use crate::plan::arch::AttentionKind;
        stage_group_layers(
            spec,
            (a, b),
            [
                (AttentionKind::Global, self.attention_groups),
                (AttentionKind::Linear, self.linear_groups),
            ],
        ) * self.page_bytes
    }

    /// The pool's blocks in `kv_bytes` of KV memory.
    pub fn num_blocks(&self, kv_bytes: u64) -> u64 {
        kv_bytes / self.bytes_per_block().max(1)
    }

    /// Blocks a request of `tokens` holds.
    pub fn blocks_per_request(&self, tokens: u64) -> u64 {
        self.attention_groups * tokens.div_ceil(self.block_size.max(1))
            + self.linear_groups * self.linear_blocks_per_group
    }

    /// Requests of `tokens` the pool holds at once (vLLM's "Maximum
    /// concurrency", rounded down).
    pub fn max_requests(&self, num_blocks: u64, tokens: u64) -> u64 {
        num_blocks / self.blocks_per_request(tokens).max(1)
    }

    /// vLLM's `GPU KV cache size: N tokens` for `max_model_len` (0.20.1 on).
    pub fn capacity_tokens(&self, num_blocks: u64, max_model_len: u64) -> u64 {
        (num_blocks as f64 / self.blocks_per_request(max_model_len).max(1) as f64
            * max_model_len as f64) as u64
    }

    /// The longest request the pool holds less the block vLLM keeps back
    /// (its null block), in whole attention blocks.
    pub fn max_tokens(&self, num_blocks: u64) -> u64 {
        let fixed = self.linear_groups * self.linear_blocks_per_group;
        num_blocks.saturating_sub(1).saturating_sub(fixed) / self.attention_groups.max(1)
            * self.block_size
    }
}

/// vLLM's KV pool for a model whose sliding-window layers sit beside
/// full-attention layers (Gemma 2 and 3, gpt-oss, Cohere2), read in the
/// PyPI sources of 0.11.0 to the pinned 0.33.0 (`v1/core/kv_cache_utils.py`,
/// 0.33's `v1/core/kv_cache_planning.py`; `v1/kv_cache_interface.py`):
///
/// - every layer's page is `16` tokens of its KV (one page size, the same
///   heads throughout); the layers are bucketed by kind and grouped `g` at
///   a time, `g` the smaller bucket (from 0.18 the larger when it is under
///   1.5 times the smaller; `_get_kv_cache_groups_uniform_page_size`), a
///   short group padded ("Add P padding layers");
/// - one pool of `num_blocks = memory ÷ (g × page)` blocks serves every
///   group (`get_kv_cache_config_from_groups`);
/// - a request of `L` tokens holds `⌈L ÷ 16⌉` blocks in each full group and
///   `⌈min(W − 1 + T, L) ÷ 16⌉ + 1` in each sliding group
///   (`SlidingWindowSpec`), `T` the tokens in flight: `max_num_batched_tokens`
///   to 0.25, twice that from 0.26 (asynchronous scheduling's two batches);
/// - vLLM logs the concurrency `num_blocks ÷ blocks per request` and
///   `GPU KV cache size: int(concurrency × L)` tokens from 0.20.1 (before:
///   `num_blocks ÷ groups × 16`).
///
/// Published logs this reproduces are in the tests of this module's file
/// (gpt-oss-120b on vLLM 0.11.2: 8.99 GiB, 130,960 tokens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingBlocks {
    /// Bytes of one layer's page (16 tokens).
    pub page_bytes: u64,
    /// Layers per group.
    pub group_size: u64,
    /// Groups of full-attention layers.
    pub full_groups: u64,
    /// Groups of sliding-window layers.
    pub sliding_groups: u64,
    /// The window.
    pub window: u64,
    /// Tokens in flight a sliding group keeps room for.
    pub in_flight: u64,
    /// The logged token count follows 0.20.1's rule (else the older one).
    pub concurrency_tokens: bool,
}

/// Tokens per vLLM KV block (`CacheConfig.block_size`'s default).
pub const BLOCK_SIZE: u64 = 16;

/// The most layers of any one of the model's KV groups that the layers
/// `a..b` hold, vLLM 0.33.0's grouping (`v1/core/kv_cache_planning.py`):
/// each kind's layers, in model order, are dealt round-robin over that
/// kind's groups (`layers[i::num_groups]`,
/// `_get_kv_cache_groups_uniform_page_size`), and a pipeline stage keeps
/// its own layers of every group (`_project_kv_cache_groups_to_worker`).
/// A block spans a page in each layer of the stage's largest group
/// (`_get_kv_cache_bytes_per_block`).
fn stage_group_layers(
    spec: &crate::plan::ModelSpec,
    (a, b): (u32, u32),
    kinds: [(crate::plan::arch::AttentionKind, u64); 2],
) -> u64 {
    kinds
        .iter()
        .map(|&(kind, groups)| {
            let layers: Vec<u32> = (0..spec.num_layers)
                .filter(|&i| spec.attention_kind(i) == kind)
                .collect();
            let groups = groups.max(1) as usize;
            (0..groups)
                .map(|g| {
                    layers
                        .iter()
                        .skip(g)
                        .step_by(groups)
                        .filter(|&&x| x >= a && x < b)
                        .count() as u64
                })
                .max()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

impl SlidingBlocks {
    /// The pool of release `version` (a log's; `None`: the pinned 0.33.0)
    /// for `spec` at tensor parallelism `tp`, a KV cache of `kv_bytes` per
    /// element and `max_num_batched_tokens`; `None` for a model without
    /// both kinds of layers, with linear attention or MLA.
    pub fn new(
        spec: &crate::plan::ModelSpec,
        tp: u32,
        kv_bytes: f64,
        max_num_batched_tokens: u64,
        version: Option<&str>,
    ) -> Option<Self> {
        let w = spec.sliding_window.as_ref()?;
        if spec.linear_attention.is_some() || spec.mla.is_some() {
            return None;
        }
        let v = version.and_then(parse_version).unwrap_or((0, 33, 0));
        let sliding = u64::from(w.layers);
        let full = u64::from(spec.num_layers).checked_sub(sliding)?;
        if sliding == 0 || full == 0 || w.window == 0 {
            return None;
        }
        let tp = u64::from(tp.max(1));
        let kv_heads = (u64::from(spec.num_kv_heads) / tp).max(1) as f64;
        let token = (kv_heads * 2.0 * spec.head_dim as f64 * kv_bytes).ceil();
        let page = token * BLOCK_SIZE as f64;
        let (lo, hi) = (full.min(sliding), full.max(sliding));
        let group_size = if v >= (0, 18, 0) && (hi as f64) < lo as f64 * 1.5 {
            hi
        } else {
            lo
        };
        if !(token >= 1.0 && page * group_size as f64 <= (1u64 << 50) as f64) {
            return None;
        }
        let in_flight = if v >= (0, 26, 0) {
            max_num_batched_tokens.saturating_mul(2)
        } else {
            max_num_batched_tokens
        };
        Some(SlidingBlocks {
            page_bytes: page as u64,
            group_size,
            full_groups: full.div_ceil(group_size),
            sliding_groups: sliding.div_ceil(group_size),
            window: w.window,
            in_flight,
            concurrency_tokens: v >= (0, 20, 1),
        })
    }

    /// Bytes one block of the pool takes on the GPU.
    pub fn bytes_per_block(&self) -> u64 {
        self.group_size * self.page_bytes
    }

    /// Bytes one block takes on a pipeline stage holding layers `a..b` of
    /// `spec` (the model the pool was made for), as vLLM 0.33.0 lays the
    /// whole model's groups over its stages (`v1/core/kv_cache_planning.py`):
    /// the layers of each kind, in model order, go to that kind's groups
    /// round-robin (`layers[i::num_groups]`,
    /// `_get_kv_cache_groups_uniform_page_size`), each stage keeps its own
    /// layers of every group (`_project_kv_cache_groups_to_worker`), and a
    /// block spans the stage's largest group (`_get_kv_cache_bytes_per_block`).
    /// The stages' block counts are then cut to the smallest
    /// (`get_kv_cache_configs`). With every layer on one stage this is
    /// [`Self::bytes_per_block`].
    pub fn stage_bytes_per_block(&self, spec: &crate::plan::ModelSpec, a: u32, b: u32) -> u64 {
        use crate::plan::arch::AttentionKind;
        stage_group_layers(
            spec,
            (a, b),
            [
                (AttentionKind::Global, self.full_groups),
                (AttentionKind::Sliding, self.sliding_groups),
            ],
        ) * self.page_bytes
    }

    /// The pool's blocks in `kv_bytes` of KV memory.
    pub fn num_blocks(&self, kv_bytes: u64) -> u64 {
        kv_bytes / self.bytes_per_block().max(1)
    }

    /// Blocks a request of `tokens` holds.
    pub fn blocks_per_request(&self, tokens: u64) -> u64 {
        let window = (self.window - 1).saturating_add(self.in_flight).min(tokens);
        self.full_groups * tokens.div_ceil(BLOCK_SIZE)
            + self.sliding_groups * (window.div_ceil(BLOCK_SIZE) + 1)
    }

    /// Requests of `tokens` the pool holds at once.
    pub fn max_requests(&self, num_blocks: u64, tokens: u64) -> u64 {
        num_blocks / self.blocks_per_request(tokens).max(1)
    }

    /// The `GPU KV cache size: N tokens` vLLM logs for `max_model_len`.
    pub fn capacity_tokens(&self, num_blocks: u64, max_model_len: u64) -> u64 {
        if self.concurrency_tokens {
            (num_blocks as f64 / self.blocks_per_request(max_model_len).max(1) as f64
                * max_model_len as f64) as u64
        } else {
            num_blocks / (self.full_groups + self.sliding_groups).max(1) * BLOCK_SIZE
        }
    }

    /// The longest request the pool holds, less the null block.
    pub fn max_tokens(&self, num_blocks: u64) -> u64 {
        let usable = num_blocks.saturating_sub(1);
        let sliding_most = self.sliding_groups
            * ((self.window - 1)
                .saturating_add(self.in_flight)
                .div_ceil(BLOCK_SIZE)
                + 1);
        usable.saturating_sub(sliding_most) / self.full_groups.max(1) * BLOCK_SIZE
    }
}

/// Bytes the sampler's profile run holds per logit (one request × one
/// vocabulary entry): the fit described in the module documentation, 38.72
/// over the eight logged rows, each within 2.1 %.
pub const SAMPLER_BYTES_PER_LOGIT: f64 = 38.72;

/// Non-torch memory vLLM logged for one GPU (0.13 GiB for Llama-3.1-8B,
/// Qwen3-0.6B, gpt-oss-20b on an H100; llm-d-benchmark's log table).
pub const NON_TORCH_BYTES_SINGLE_GPU: u64 = (0.13 * GIB) as u64;

/// Non-torch memory vLLM logged per GPU with tensor parallelism (NCCL
/// buffers): 0.55 GiB for Llama-3.3-70B FP8 at TP=2 on H100s (same source).
pub const NON_TORCH_BYTES_MULTI_GPU: u64 = (0.55 * GIB) as u64;

/// Total memory CUDA reports (what vLLM multiplies by the utilization), in
/// GiB, by spec id, for planning from the datasheet (`--devices`; a
/// detected device's capacity already excludes the reserve detection
/// read). CUDA's total is the board's memory less what the driver reserves
/// (nvidia-smi "FB Memory Usage / Reserved", `nvmlMemory_v2_t.reserved`):
/// the H100 80GB's "Free memory on device: 78.57/79.18 GiB on startup" of a
/// vLLM log (llm-d-benchmark's log table) is the 81559 MiB less the 479 MiB
/// reserved of `tests/fixtures/nvidia-smi-q/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.txt`
/// (81080 MiB = 79.18 GiB), and on a lent H200 `torch.cuda.mem_get_info`
/// reported as its total NVML's total less its reserve to the byte. The
/// other rows are that difference in real captures: the H200's
/// 143771 − 614 MiB (`nvidia-smi-q/linux-x86_64__nvidia-h200__590.48.01__idle.txt`),
/// the L40S's 46068 − 609 MiB (`nvidia-smi-q/linux-x86_64__nvidia-l40s__595.80__idle.txt`),
/// and since Nov 2026 the other GPUs of the spec database with an
/// `nvidia-smi -q` capture in `tests/fixtures/nvidia-smi-q/` (FB Memory
/// Usage Total less Reserved, as the row's comment names the capture; the
/// reserve moves a little with the driver, so a newer Linux capture is
/// taken where there are several), and the GB10's total as CUDA reported
/// it in a real SGLang log; except the GH200, whose capture is of
/// one of its memory configurations with ATS (address translation over
/// NVLink-C2C), not what a plan of another configuration would see. Other
/// devices use their capacity as given.
pub const CUDA_VISIBLE_TOTAL: &[(&str, f64)] = &[
    ("h100-sxm", 79.18),
    ("h200", (143_771.0 - 614.0) / 1024.0),
    ("l40s", (46_068.0 - 609.0) / 1024.0),
    // gpud__a10__535.129.03.txt
    ("a10", (23_028.0 - 512.0) / 1024.0),
    // dcgm-issue-232__a10g__535.247.01.txt
    ("a10g", (23_028.0 - 304.0) / 1024.0),
    // xuesongtap-blog__8x-a100-sxm4-40gb__535.129.03.txt
    ("a100-40gb", (40_960.0 - 620.0) / 1024.0),
    // thamada-gls__4x-a100-sxm4-80gb__555.42.02.txt
    ("a100-80gb", (81_920.0 - 763.0) / 1024.0),
    // thamada-nvsim__10x-a40__550.127.05.txt
    ("a40", (46_068.0 - 665.0) / 1024.0),
    // thamada-gls__l4__550.90.07.txt
    ("l4", (23_034.0 - 556.0) / 1024.0),
    // thamada-nvsim__2x-h100-nvl__550.54.14.txt
    ("h100-nvl", (95_830.0 - 594.0) / 1024.0),
    // thamada-gls__9x-rtx-a6000__550.127.05.txt
    ("rtx-a6000", (46_068.0 - 450.0) / 1024.0),
    // gpud__rtx4090-multi__535.154.05__4090.txt
    ("rtx-4090", (24_564.0 - 346.0) / 1024.0),
    // thamada-gls__rtx-5090-hmm__570.124.06.txt
    ("rtx-5090", (32_607.0 - 487.0) / 1024.0),
    // linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05__idle.txt
    ("rtx-4080-super", (16_376.0 - 434.0) / 1024.0),
    // thamada-gls__rtx-3080__550.54.14.txt
    ("rtx-3080", (10_240.0 - 239.0) / 1024.0),
    // thamada-gls__rtx-3070__550.54.14.txt
    ("rtx-3070", (8_192.0 - 227.0) / 1024.0),
    // linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.txt
    ("rtx-2080-super", (8_192.0 - 400.0) / 1024.0),
    // multilanguagelearning__rtx-4070-laptop__566.36.txt
    ("rtx-4070-laptop", (8_188.0 - 240.0) / 1024.0),
    // gpud__titan-v__560.35.03.txt
    ("titan-v", (12_288.0 - 239.0) / 1024.0),
    // thamada-gls__8x-v100-sxm2-16gb__550.127.05.txt
    ("v100-sxm2-16gb", (16_384.0 - 240.0) / 1024.0),
    // GB10 (unified memory: nvidia-smi prints no total): the total
    // `torch.cuda.mem_get_info` reported on a DGX Spark, as SGLang logged
    // it (runtime-logs/sglang-dgx-sparks-dsv41__3x-gb10-tp3-dict-args.log:
    // "Reported total GPU memory per device (MiB): [124610]"); other
    // Sparks' logs print 124546 and 122570 MiB (driver and OS memory).
    ("gb10", 124_610.0 / 1024.0),
];

/// What `nvidia-smi --query-gpu=memory.total` prints (MiB) for the GPUs of
/// `CUDA_VISIBLE_TOTAL`: the "FB Memory Usage / Total" of the same
/// `nvidia-smi -q` captures (the H100 SXM's 81559 MiB of
/// `nvidia-smi-q/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.txt`,
/// whose 479 MiB reserve leaves CUDA's 79.18 GiB). SGLang sizes its default
/// `mem_fraction_static` from this figure (`get_nvgpu_memory_capacity`).
pub const NVIDIA_SMI_TOTAL_MIB: &[(&str, u64)] = &[
    ("h100-sxm", 81_559),
    ("h200", 143_771),
    ("l40s", 46_068),
    ("a10", 23_028),
    ("a10g", 23_028),
    ("a100-40gb", 40_960),
    ("a100-80gb", 81_920),
    ("a40", 46_068),
    ("l4", 23_034),
    ("h100-nvl", 95_830),
    ("rtx-a6000", 46_068),
    ("rtx-4090", 24_564),
    ("rtx-5090", 32_607),
    ("rtx-4080-super", 16_376),
    ("rtx-3080", 10_240),
    ("rtx-3070", 8_192),
    ("rtx-2080-super", 8_192),
    ("rtx-4070-laptop", 8_188),
    ("titan-v", 12_288),
    ("v100-sxm2-16gb", 16_384),
];

/// The memory total `nvidia-smi` prints for a device of spec `spec_id` and
/// planner capacity `capacity_bytes`: [`NVIDIA_SMI_TOTAL_MIB`] where a
/// capture gives it (never above the capacity), else the capacity.
pub fn nvidia_smi_total_bytes(spec_id: Option<&str>, capacity_bytes: u64) -> u64 {
    // A unified-memory GPU (GB10) has no framebuffer total in nvidia-smi:
    // SGLang falls back to what CUDA reports (`torch.cuda.mem_get_info`).
    let unified = spec_id
        .and_then(crate::spec::by_id)
        .is_some_and(|e| e.unified_memory);
    if unified {
        return cuda_visible_bytes(spec_id, capacity_bytes);
    }
    spec_id
        .and_then(|id| NVIDIA_SMI_TOTAL_MIB.iter().find(|(s, _)| *s == id))
        .map_or(capacity_bytes, |(_, mib)| (mib << 20).min(capacity_bytes))
}

/// What CUDA reports as the device's total for a device of spec `spec_id`
/// and planner capacity `capacity_bytes`: `CUDA_VISIBLE_TOTAL` where a
/// runtime log printed it, else the capacity. vLLM and SGLang both size
/// their share from this total.
pub fn cuda_visible_bytes(spec_id: Option<&str>, capacity_bytes: u64) -> u64 {
    spec_id
        .and_then(|id| CUDA_VISIBLE_TOTAL.iter().find(|(s, _)| *s == id))
        .map_or(capacity_bytes, |(_, gib)| {
            ((gib * GIB) as u64).min(capacity_bytes)
        })
}

/// vLLM's defaults for an OpenAI-compatible server on a device of
/// `visible_bytes` named `name`: (`max_num_batched_tokens`, `max_num_seqs`).
/// `EngineArgs.get_batch_defaults` of vLLM 0.33.0 (read from its PyPI
/// source distribution): 160 GiB or more (B200, B300) 16384 and 1024; 70
/// GiB or more except A100s and the GB10 8192 and 1024 (the tier of
/// v0.10–v0.11, whose logs fitted the sampler constant); else 2048 and 256.
pub fn vllm_batch_defaults(visible_bytes: u64, name: &str) -> (u64, u64) {
    let n = name.to_ascii_lowercase();
    let gib = visible_bytes as f64 / GIB;
    if gib >= 160.0 {
        (16384, 1024)
    } else if gib >= 70.0 && !n.contains("a100") && !n.contains("gb10") {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

/// The vLLM rule.
pub struct Vllm;

impl Runtime for Vllm {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Vllm
    }
    fn name(&self) -> &'static str {
        "vllm"
    }
    /// `max_num_batched_tokens`: as given, else vLLM's default for the
    /// device ([`vllm_batch_defaults`]); the V1 scheduler fills each step's
    /// token budget with it.
    fn prompt_tokens_per_pass(&self, at: &super::PassDevice, opts: &InferenceOptions) -> u64 {
        opts.max_num_batched_tokens.unwrap_or_else(|| {
            let visible = cuda_visible_bytes(at.device.spec_id.as_deref(), at.capacity_bytes);
            vllm_batch_defaults(visible, &at.device.name).0
        })
    }
    fn source(&self) -> &'static str {
        "vLLM V1 engine, v0.10-v0.11 (batch defaults as of 0.33.0): vllm/v1/worker/gpu_worker.py (determine_available_memory), vllm/engine/arg_utils.py (get_batch_defaults); sampler peak fitted on llm-d-benchmark's logged H100 profiles"
    }
    fn memory(
        &self,
        ctx: &DeviceContext,
        opts: &InferenceOptions,
        forward: &dyn Fn(u64) -> u64,
    ) -> RuntimeMemory {
        let cap = ctx.capacity_bytes;
        let visible = cuda_visible_bytes(ctx.device.spec_id.as_deref(), cap);
        let (batched, seqs) = vllm_batch_defaults(visible, &ctx.device.name);
        let batched = opts.max_num_batched_tokens.unwrap_or(batched);
        let seqs = opts.max_num_seqs.unwrap_or(seqs);
        let non_torch = if ctx.tensor_parallel * ctx.pipeline_parallel > 1 {
            NON_TORCH_BYTES_MULTI_GPU
        } else {
            NON_TORCH_BYTES_SINGLE_GPU
        };
        let sampler = if ctx.last_stage {
            (seqs as f64 * ctx.vocab_size as f64 * SAMPLER_BYTES_PER_LOGIT).ceil() as u64
        } else {
            0
        };
        let outside =
            (cap - visible) + (visible as f64 * (1.0 - opts.memory_utilization)).ceil() as u64;
        RuntimeMemory {
            reserve_bytes: outside + non_torch,
            activation_bytes: forward(batched).max(sampler),
        }
    }
    fn emit(
        &self,
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
    ) -> Result<super::Launch, String> {
        Vllm::launch(plan, choice, origin, plan.options.memory_utilization)
    }
}

/// The config file `--emit vllm` writes beside the command line.
pub const CONFIG_FILE: &str = "vllm-config.yaml";

impl Vllm {
    /// `vllm serve` for a plan: the parallel sizes, `--max-model-len` the
    /// planned context, `--max-num-seqs` the one the plan was made with
    /// ([`InferenceOptions::max_num_seqs`]) or else the sequences the plan
    /// holds per replica at that context (under latency targets, the
    /// concurrency that meets them), `--max-num-batched-tokens` where the
    /// plan was made with one, the utilization the plan used, and the
    /// weight and cache types.
    pub fn launch(
        plan: &crate::plan::InferencePlan,
        choice: &crate::plan::inference::Plan,
        origin: &crate::plan::ModelOrigin,
        memory_utilization: f64,
    ) -> Result<super::Launch, String> {
        use crate::plan::{KvDtype, Quant};
        let model = super::model_argument(origin).ok_or(
            "vLLM needs a Hugging Face repository or a model directory: a bare size names neither",
        )?;
        let mut notes = vec![
            format!("flags checked against {PINNED_DEFINITIONS}"),
            if plan.options.eager {
                eager_note()
            } else {
                cudagraph_estimate_note()
            },
        ];
        let mut argv: Vec<String> = vec![
            "vllm".into(),
            "serve".into(),
            model,
            "--tensor-parallel-size".into(),
            choice.tensor_parallel.to_string(),
            "--pipeline-parallel-size".into(),
            choice.pipeline_parallel.to_string(),
        ];
        if choice.data_parallel > 1 {
            argv.extend([
                "--data-parallel-size".into(),
                choice.data_parallel.to_string(),
            ]);
        }
        if choice.expert_parallel > 1 {
            argv.push("--enable-expert-parallel".into());
        }
        argv.extend([
            "--max-model-len".into(),
            plan.context.to_string(),
            "--max-num-seqs".into(),
            plan.options
                .max_num_seqs
                .unwrap_or_else(|| super::admitted_sequences(plan, choice))
                .to_string(),
            "--gpu-memory-utilization".into(),
            format!("{memory_utilization}"),
        ]);
        if let Some(t) = plan.options.max_num_batched_tokens {
            argv.extend(["--max-num-batched-tokens".into(), t.to_string()]);
        }
        if plan.options.eager {
            argv.push("--enforce-eager".into());
        }
        // Other levels are read from the checkpoint: a method flag names one
        // exporter's checkpoints (`modelopt_fp4` ModelOpt's NVFP4, `mxfp4`
        // OpenAI's MXFP4, `gptq` …) and one that differs from the
        // checkpoint's `quant_method` is refused.
        match plan.quantization {
            Quant::Bf16 => argv.extend(["--dtype".into(), "bfloat16".into()]),
            Quant::Fp16 => argv.extend(["--dtype".into(), "float16".into()]),
            Quant::Fp32 => argv.extend(["--dtype".into(), "float32".into()]),
            Quant::Fp8 => argv.extend(["--quantization".into(), "fp8".into()]),
            q if q.is_gguf() => {
                return Err(format!("{q} is a llama.cpp (GGUF) level: use --emit llama.cpp"));
            }
            Quant::Nf4 => return Err(bitsandbytes_removed()),
            q => notes.push(format!(
                "{q}: vLLM reads the quantization from the checkpoint's quantization_config; serve a checkpoint stored at {q}"
            )),
        }
        match plan.kv_dtype {
            KvDtype::Fp8 => argv.extend(["--kv-cache-dtype".into(), "fp8".into()]),
            KvDtype::Int8 => {
                return Err(
                    "vLLM has no int8 KV cache: plan with --kv-dtype fp8 or a 16-bit type".into(),
                );
            }
            _ => {}
        }
        // The same options as a config file for `vllm serve --config`
        // (FlexibleArgumentParser.load_config_file of the pinned version:
        // keys are the long flags' names, `model` the positional model).
        let mut yaml = format!("model: {}\n", serde_json::Value::String(argv[2].clone()));
        yaml += &super::flags_yaml(&argv[3..]);
        notes.push(format!(
            "the same options as a config file: vllm serve --config {CONFIG_FILE}"
        ));
        Ok(super::Launch {
            runtime: RuntimeKind::Vllm,
            version: Some(PINNED_DEFINITIONS.into()),
            argv,
            env: Default::default(),
            files: [(CONFIG_FILE.to_string(), yaml)].into_iter().collect(),
            notes,
        })
    }
}
