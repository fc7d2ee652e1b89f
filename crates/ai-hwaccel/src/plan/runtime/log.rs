//! What a runtime logged at start-up, read back: llama.cpp's buffer sizes
//! and context options, in every spelling its releases have printed —
//! `llm_load_tensors: CUDA0 buffer size = … MiB` and
//! `llama_new_context_with_model: KV self size = …` (2024), then
//! `load_tensors: CUDA0 model buffer size`, `llama_kv_cache_unified:` /
//! `llama_kv_cache: size = … MiB (… cells, … layers, …/… seqs), K (f16): …`,
//! `llama_context:` (2025) or `sched_reserve:` (2026) `CUDA0 compute buffer
//! size` — with whatever
//! prefix a logger added (timestamps, ANSI colours, `kernel:`-style tags).
//! vLLM's ([`parse_vllm_log`]) and SGLang's ([`parse_sglang_log`]) start-up
//! figures too. Pure: text in, figures out; `check` compares them with a plan.

use serde::{Deserialize, Serialize};

/// One named buffer (`CPU`, `CUDA0`, `CPU_Mapped`, `CUDA_Host`, …) and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoggedBuffer {
    /// The backend buffer's name as printed.
    pub buffer: String,
    /// Size in bytes (the log prints MiB with two decimals: ±5 KiB).
    pub bytes: u64,
}

/// What a llama.cpp start-up log says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlamaCppLog {
    /// `n_ctx` (all sequences together).
    pub n_ctx: Option<u64>,
    /// `n_seq_max` (parallel sequences, `-np`).
    pub n_seq_max: Option<u64>,
    /// `n_batch`.
    pub n_batch: Option<u64>,
    /// `n_ubatch`.
    pub n_ubatch: Option<u64>,
    /// `flash_attn` as printed (`0`, `1`, `auto`, `enabled`).
    pub flash_attn: Option<String>,
    /// KV cache types from the size line (`f16`, `q8_0`, …).
    pub type_k: Option<String>,
    /// Value cache type.
    pub type_v: Option<String>,
    /// `offloaded N/M layers to GPU`.
    pub offloaded_layers: Option<(u32, u32)>,
    /// Model weights per buffer.
    pub model_buffers: Vec<LoggedBuffer>,
    /// KV cache per buffer.
    pub kv_buffers: Vec<LoggedBuffer>,
    /// The KV cache total the log states (`KV self size`, `llama_kv_cache: size`).
    pub kv_total_bytes: Option<u64>,
    /// Recurrent-state buffers of hybrid and recurrent models
    /// (`llama_memory_recurrent: CUDA0 RS buffer size = … MiB`): the
    /// convolution windows (R) and states (S) of linear-attention layers.
    #[serde(default)]
    pub rs_buffers: Vec<LoggedBuffer>,
    /// The recurrent state's total (`llama_memory_recurrent: size = … MiB
    /// (… cells, … layers, … seqs), R (f32): …, S (f32): …`).
    #[serde(default)]
    pub rs_total_bytes: Option<u64>,
    /// Compute buffers.
    pub compute_buffers: Vec<LoggedBuffer>,
    /// Output (logits) buffers.
    pub output_buffers: Vec<LoggedBuffer>,
    /// A multimodal projector's (`--mmproj`) weights, as its CLIP loader
    /// prints them: `load_hparams: model size: X MiB` (2025 on;
    /// `tools/mtmd/clip.cpp`), `clip_model_load: model size: X MB`
    /// (2023-24, MB there being MiB). Not the text model's: the plans leave
    /// the encoder out under llama.cpp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder_model_bytes: Option<u64>,
    /// The projector's compute buffers (`alloc_compute_meta:` 2025,
    /// `reserve_compute_meta:` 2026: `CUDA0 compute buffer size = X MiB`),
    /// kept apart from the text model's [`Self::compute_buffers`]; the
    /// largest per buffer name (the warmup reserves again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encoder_compute_buffers: Vec<LoggedBuffer>,
    /// The weights' format as printed (`print_info: file type = Q4_0`;
    /// `llm_load_print_meta: model ftype = Q4_K - Medium` before 2025).
    #[serde(default)]
    pub file_type: Option<String>,
    /// The devices the model runs on, in llama.cpp's order (`using device
    /// RPC1 (127.0.0.1:50153) …`, `using device CUDA0 (NVIDIA H200) …`):
    /// name and description. Buffers are listed in no fixed device order
    /// (by buffer type), so this order pairs them with a plan's stages.
    #[serde(default)]
    pub devices: Vec<(String, String)>,
    /// Model hyper-parameters printed by `print_info:` / `llm_load_print_meta:`
    /// (`n_layer`, `n_embd`, `n_head`, `n_head_kv`, `n_ff`, `n_vocab`, …):
    /// the first model's (a draft model's, `-md`, loaded after, is not
    /// read into them).
    pub hparams: std::collections::BTreeMap<String, String>,
    /// The log level the run printed at (`verbosity = 3 (adjust with the
    /// `-lv N` CLI arg)`, builds from May 2026). Below 4 these builds
    /// print none of the loader's and the context's lines (llama.cpp PR
    /// 23021): no buffer sizes to read.
    #[serde(default)]
    pub verbosity: Option<u32>,
    /// Per-slot context of llama-server (`initializing, n_slots = N,
    /// n_ctx_slot = M, kv_unified = '…'`, June 2026 builds), the one figure
    /// of the context such a run prints at its default verbosity.
    #[serde(default)]
    pub n_ctx_slot: Option<u64>,
    /// llama.cpp's own memory breakdown table (`memory breakdown [MiB] |
    /// total free self model context compute unaccounted`), printed at exit
    /// and by every `--fit` dry run: the last table measured after the
    /// allocation, or else the `--fit` projection the fit kept unchanged
    /// (`… no changes needed`). `None` where the log prints neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_breakdown: Option<MemoryBreakdown>,
}

/// llama.cpp's memory breakdown table (llama.cpp PR 15860, September 2025:
/// `llama_print_memory_breakdown:`; then the pipe table of
/// `llama_memory_breakdown_print:`; from April 2026 `common_memory_breakdown_print:`
/// in common/fit.cpp, with `--log-jsonl` also a `fit_memory_breakdown`
/// JSON record): per device, its total and free memory and what llama.cpp
/// holds there; the host's and other buffer types' holdings. MiB, floored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryBreakdown {
    /// The rows in the order printed: devices in llama.cpp's device order,
    /// then the host, then other buffer types (`CPU_REPACK`, `HTP0-REPACK`).
    pub rows: Vec<BreakdownRow>,
    /// A `--fit` projection (printed while fitting, before the allocation,
    /// so `free` does not yet reflect it), not the table printed at exit.
    pub projected: bool,
}

/// One row of [`MemoryBreakdown`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BreakdownRow {
    /// `device`, `host` or `buffer_type`.
    pub kind: String,
    /// The device or buffer type (`CUDA0`, `Host`, `CPU_REPACK`).
    pub name: String,
    /// The device's description as printed (llama.cpp strips `NVIDIA `,
    /// `GeForce `, `AMD `, `Radeon `, … from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The device's memory as its backend reports it (devices only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_mib: Option<u64>,
    /// Its free memory when the table was printed (devices only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_mib: Option<u64>,
    /// model + context + compute.
    pub self_mib: u64,
    /// Weights.
    pub model_mib: u64,
    /// KV cache and recurrent state.
    pub context_mib: u64,
    /// Compute (scheduler) buffers; the output buffer is in none of these.
    pub compute_mib: u64,
    /// total − free − self: memory of the device used by neither (the
    /// driver's context, other processes); negative in a projection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unaccounted_mib: Option<i64>,
}

impl LlamaCppLog {
    /// The ggml GPU backend the model ran on: from the devices llama.cpp
    /// names (`using device Vulkan0 (…)`) or, in builds that print none, its
    /// weights' buffers (`CUDA0 model buffer size`, `Metal_Mapped model
    /// buffer size`), the first whose name without its index and suffix is
    /// one ([`super::GgmlBackend::parse`]). `None` on the CPU alone, over
    /// RPC alone, or when nothing names one.
    pub fn backend(&self) -> Option<super::GgmlBackend> {
        self.devices
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(self.model_buffers.iter().map(|b| b.buffer.as_str()))
            .find_map(|n| {
                let base = n
                    .split(['_', ' '])
                    .next()
                    .unwrap_or(n)
                    .trim_end_matches(|c: char| c.is_ascii_digit());
                super::GgmlBackend::parse(base)
            })
    }

    /// Sum of a buffer list.
    pub fn total(list: &[LoggedBuffer]) -> Option<u64> {
        (!list.is_empty()).then(|| list.iter().map(|b| b.bytes).sum())
    }

    /// Whether anything llama.cpp-like was found.
    pub fn is_empty(&self) -> bool {
        self.model_buffers.is_empty()
            && self.kv_buffers.is_empty()
            && self.kv_total_bytes.is_none()
            && self.compute_buffers.is_empty()
            && self.n_ctx.is_none()
            && self.n_ctx_slot.is_none()
            && self.memory_breakdown.is_none()
            && self.encoder_model_bytes.is_none()
            && self.encoder_compute_buffers.is_empty()
    }
}

/// `1536.00 MiB` → bytes.
fn mib(s: &str) -> Option<u64> {
    let s = s.trim();
    let num = s
        .strip_suffix("MiB")
        .or_else(|| s.strip_suffix("MB"))?
        .trim();
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && (0.0..1e12).contains(&v)).then(|| (v * 1_048_576.0).round() as u64)
}

/// Most text of a log read: start-up lines come first.
const MAX_LOG_TEXT: usize = 1 << 20;

/// The lines of a log, ANSI colours removed, up to [`MAX_LOG_TEXT`] bytes.
fn log_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut read = 0usize;
    text.lines()
        .take_while(move |raw| {
            read += raw.len() + 1;
            read <= MAX_LOG_TEXT
        })
        .map(strip_ansi)
}

/// Keep the first value a log gives (every rank prints the same lines).
fn set_first(slot: &mut Option<u64>, v: Option<u64>) {
    if slot.is_none() {
        *slot = v;
    }
}

/// Remove ANSI escape sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The part of a line from a llama.cpp function tag on (`load_tensors: …`),
/// dropping any logger prefix before it.
fn from_tag(line: &str) -> Option<(&str, &str)> {
    const TAGS: [&str; 19] = [
        // A multimodal projector's CLIP loader (`--mmproj`,
        // tools/mtmd/clip.cpp): its weights (`load_hparams: model size:`;
        // `clip_model_load:` before 2025) and compute buffers
        // (`alloc_compute_meta:` 2025, `reserve_compute_meta:` 2026).
        "alloc_compute_meta:",
        "reserve_compute_meta:",
        "load_hparams:",
        "clip_model_load:",
        // DeepSeek-V4's compressor states (2026: `llama_dsv4_comp_state:
        // CUDA0 DSV4 CSA state buffer size = … MiB`).
        "llama_dsv4_comp_state:",
        // The devices the model runs on (`using device …`): 2025's
        // `llama_model_load_from_file_impl:`, today's
        // `llama_prepare_model_devices:`.
        "llama_prepare_model_devices:",
        "llama_model_load_from_file_impl:",
        "llm_load_tensors:",
        "load_tensors:",
        "llama_new_context_with_model:",
        "llama_context:",
        "llama_kv_cache_init:",
        "llama_kv_cache_unified:",
        "llama_kv_cache:",
        "llama_memory_recurrent:",
        "sched_reserve:",
        // Flash attention's resolution in builds from July 2026.
        "resolve_fused_ops:",
        "llm_load_print_meta:",
        "print_info:",
    ];
    TAGS.iter()
        .find_map(|t| {
            // A whole tag: not `common_params_print_info:` for `print_info:`.
            let i = line
                .match_indices(t)
                .find(|(i, _)| {
                    line[..*i]
                        .chars()
                        .next_back()
                        .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
                })?
                .0;
            Some((&t[..t.len() - 1], line[i + t.len()..].trim()))
        })
        .or_else(|| {
            // The KV cache's own `init:` of April-May 2025 builds
            // (`init:    Vulkan0 KV buffer size = …`), as a whole word: not
            // `ggml_cuda_init:` and the like.
            let i = line.find("init:")?;
            let before = line[..i].chars().next_back();
            before
                .is_none_or(|c| c.is_whitespace() || c == ']')
                .then(|| ("init", line[i + 5..].trim()))
        })
}

/// `NAME kind buffer size = X MiB` → (NAME, bytes).
fn buffer(rest: &str, marker: &str) -> Option<LoggedBuffer> {
    let i = rest.find(marker)?;
    let name = rest[..i].trim();
    let size = rest[i + marker.len()..].trim().strip_prefix('=')?;
    Some(LoggedBuffer {
        buffer: name.to_string(),
        bytes: mib(size.split(',').next()?)?,
    })
}

/// `K (f16): …` → `f16`.
fn cache_type(rest: &str, which: &str) -> Option<String> {
    let i = rest.find(&format!("{which} ("))?;
    let t = &rest[i + which.len() + 2..];
    Some(t[..t.find(')')?].trim().to_string())
}

/// Read a llama.cpp (llama-server, llama-cli, llama-bench -v) start-up log.
/// Lines that are not llama.cpp's are skipped; at most 1 MiB of lines is read.
pub fn parse_llamacpp_log(text: &str) -> LlamaCppLog {
    let mut l = LlamaCppLog::default();
    // The cache's size in cells where no `n_ctx =` line is printed: the
    // 2025 cache's `size = X MiB ( N cells, …)` and the April 2025 `kv_size
    // = N` of its init line (both n_ctx, padded as the context is).
    let mut cells: Option<u64> = None;
    // A `--fit` dry run (`print_info: no_alloc = 1`, builds from late
    // 2025 at `-v`) prints buffers of a context never allocated: what it
    // printed is dropped when the next load begins (its `file type` line).
    let mut dry_run = false;
    // Models loaded so far (`print_info: file type` opens one): a draft
    // model's (`-md`) hyper-parameters are not the model's.
    let mut models = 0u32;
    let mut tables = BreakdownTables::default();
    for raw in log_lines(text) {
        // `--log-jsonl` (2026): `{"type":"log",…,"msg":"load_tensors: …\n"}`.
        let line = jsonl_message(&raw).unwrap_or(raw);
        // The memory breakdown table, its `--log-jsonl` record, and the
        // `--fit` lines that say whether a table is a projection.
        if tables.read(&line) {
            continue;
        }
        if let Some(v) = after(&line, "kv_size = ", &[',', ' ']) {
            cells = count(v).or(cells);
        }
        if let Some(v) = after(&line, "verbosity = ", &[' ', ',']) {
            l.verbosity = v.trim().parse().ok().filter(|v: &u32| *v < 100);
        }
        // llama-server's slots: `initializing, n_slots = N, n_ctx_slot = M`
        // (June 2026 on), `initializing slots, n_slots = N` (before).
        if line.contains("initializing") && line.contains("n_slots = ") {
            if l.n_seq_max.is_none() {
                l.n_seq_max = after(&line, "n_slots = ", &[',', ' ']).and_then(count);
            }
            if let Some(c) = after(&line, "n_ctx_slot = ", &[',', ' ']).and_then(count) {
                l.n_ctx_slot = Some(c);
            }
        }
        let Some((tag, rest)) = from_tag(&line) else {
            continue;
        };
        // A multimodal projector's CLIP loader (`--mmproj`): its weights and
        // compute buffers are not the text model's.
        if tag == "alloc_compute_meta" || tag == "reserve_compute_meta" {
            if let Some(b) = buffer(rest, "compute buffer size") {
                keep_largest(&mut l.encoder_compute_buffers, b);
            }
            continue;
        }
        if (tag == "load_hparams" || tag == "clip_model_load")
            && let Some(v) = rest.trim_start().strip_prefix("model size:")
        {
            // `MiB` (2025 on) and the older loader's `MB`, both 2^20 bytes.
            l.encoder_model_bytes = mib(v).or(l.encoder_model_bytes);
            continue;
        }
        if tag == "print_info" || tag == "llm_load_print_meta" {
            if let Some((k, v)) = rest.split_once('=') {
                let k = k.trim();
                if k == "no_alloc" {
                    dry_run = v.trim() == "1";
                }
                // `file type` opens a model's load (the loader prints it
                // before the model's own `print_info:` lines).
                if k == "file type" || k == "model ftype" {
                    if dry_run {
                        drop_dry_run(&mut l);
                        dry_run = false;
                    } else {
                        models += 1;
                    }
                    if l.file_type.is_none() {
                        l.file_type = Some(v.trim().chars().take(64).collect());
                    }
                }
                if models <= 1
                    && l.hparams.len() < 256
                    && !k.is_empty()
                    && !k.contains(' ')
                    && !l.hparams.contains_key(k)
                {
                    l.hparams.insert(k.to_string(), v.trim().to_string());
                }
            }
            continue;
        }
        // Flash attention as resolved: `Flash Attention was auto, set to
        // disabled` (August 2025 on), `Flash Attention not supported, set
        // to disabled` / `Flash Attention enabled` (July 2026 on).
        if let Some(r) = rest
            .strip_prefix("Flash Attention was auto, set to ")
            .or_else(|| rest.strip_prefix("Flash Attention not supported, set to "))
        {
            let v = r.trim().trim_end_matches('.');
            if v == "enabled" || v == "disabled" {
                l.flash_attn = Some(v.to_string());
            }
            continue;
        }
        if rest.trim_end_matches('.') == "Flash Attention enabled" {
            l.flash_attn = Some("enabled".into());
            continue;
        }
        if let Some(d) = rest.strip_prefix("using device ") {
            let (name, after) = d.split_once(' ').unwrap_or((d, ""));
            let desc = after
                .trim_start()
                .strip_prefix('(')
                .map_or("", balanced_prefix);
            // `--split-mode tensor` (April 2026 on): one `Meta(CUDA0,CUDA1)`
            // device over the GPUs, described `Meta(NVIDIA H200,NVIDIA
            // H200)`: its members.
            let names = meta_members(name).unwrap_or_else(|| vec![name]);
            let descs = meta_members(desc)
                .filter(|d| d.len() == names.len())
                .unwrap_or_else(|| vec![if names.len() == 1 { desc } else { "" }; names.len()]);
            for (n, d) in names.into_iter().zip(descs) {
                if l.devices.len() < 64 && !l.devices.iter().any(|(x, _)| x == n) {
                    l.devices.push((n.to_string(), d.to_string()));
                }
            }
            continue;
        }
        // DeepSeek-V4's compressor states beside its caches (src/llama-kv-
        // cache-dsv4.cpp): counted with the recurrent state, as llama.cpp's
        // memory breakdown counts them with the context.
        if tag == "llama_dsv4_comp_state" {
            if let Some(mut b) = buffer(rest, "state buffer size") {
                b.buffer = b.buffer.split_whitespace().next().unwrap_or("").to_string();
                if !b.buffer.is_empty() {
                    push_capped(&mut l.rs_buffers, meta_split(b));
                }
            }
            continue;
        }
        if tag == "llama_memory_recurrent" {
            if let Some(b) = buffer(rest, "RS buffer size") {
                push_capped(&mut l.rs_buffers, [b]);
            } else if rest.starts_with("size =") {
                let after = rest.split_once('=').map(|(_, v)| v).unwrap_or("");
                l.rs_total_bytes = after.split([',', '(']).next().and_then(mib);
            }
            continue;
        }
        if let Some(b) = buffer(rest, "KV buffer size") {
            push_capped(&mut l.kv_buffers, meta_split(b));
        } else if let Some(b) = buffer(rest, "compute buffer size") {
            // A graph reserved again (a LoRA or sampler change) prints
            // its buffers again: one per buffer name, the largest.
            for b in meta_split(b) {
                keep_largest(&mut l.compute_buffers, b);
            }
        } else if let Some(b) = buffer(rest, "output buffer size") {
            push_capped(&mut l.output_buffers, meta_split(b));
        } else if let Some(b) = buffer(rest, "model buffer size") {
            push_capped(&mut l.model_buffers, meta_split(b));
        } else if tag == "llm_load_tensors" || tag == "load_tensors" {
            if rest.starts_with("ggml ctx size") {
                continue;
            }
            if let Some(b) = buffer(rest, "buffer size") {
                push_capped(&mut l.model_buffers, [b]);
            } else if let Some(x) = rest.strip_prefix("offloaded ") {
                let frac = x.split_whitespace().next().unwrap_or("");
                if let Some((a, b)) = frac.split_once('/') {
                    if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                        l.offloaded_layers = Some((a, b));
                    }
                }
            }
        } else if rest.starts_with("KV self size") || rest.starts_with("size =") {
            // A model with several caches (sliding-window beside full
            // attention: `creating non-SWA KV cache` then `creating SWA KV
            // cache`, each with its own size line) holds their sum; the
            // types are the first (full-attention) cache's, the context its
            // cells (the largest).
            let after = rest.split_once('=').map(|(_, v)| v).unwrap_or("");
            if let Some(b) = after.split([',', '(']).next().and_then(mib) {
                l.kv_total_bytes = Some(l.kv_total_bytes.map_or(b, |t| t.saturating_add(b)));
            }
            if l.type_k.is_none() {
                l.type_k = cache_type(rest, "K");
            }
            if l.type_v.is_none() {
                l.type_v = cache_type(rest, "V");
            }
            if let Some(n) = rest
                .split_once('(')
                .and_then(|(_, r)| r.split_once(" cells"))
                .and_then(|(n, _)| count(n))
            {
                cells = Some(cells.map_or(n, |c| c.max(n)));
            }
        } else if let Some((k, v)) = rest.split_once('=') {
            let v = v.trim();
            match k.trim() {
                "n_ctx" => l.n_ctx = v.parse().ok(),
                "n_seq_max" => l.n_seq_max = v.parse().ok(),
                "n_batch" => l.n_batch = v.parse().ok(),
                "n_ubatch" => l.n_ubatch = v.parse().ok(),
                "flash_attn" => l.flash_attn = Some(v.to_string()),
                _ => {}
            }
        }
    }
    if l.n_ctx.is_none() {
        l.n_ctx = cells;
    }
    l.memory_breakdown = tables.finish();
    l
}

/// The tags llama.cpp has printed its memory breakdown table under: PR
/// 15860's (September 2025), src/llama-context.cpp's until April 2026,
/// common/fit.cpp's since.
const BREAKDOWN_TAGS: [&str; 3] = [
    "common_memory_breakdown_print:",
    "llama_memory_breakdown_print:",
    "llama_print_memory_breakdown:",
];

/// Most rows one breakdown table keeps (a device per row; ggml knows at
/// most 16 devices of a kind).
const MAX_BREAKDOWN_ROWS: usize = 256;

/// The memory breakdown tables of a log as it is read.
#[derive(Default)]
struct BreakdownTables {
    /// Between a `--fit` run's first line and its last: tables printed then
    /// are projections.
    fitting: bool,
    /// The table being read.
    open: Option<MemoryBreakdown>,
    /// The last table printed after an allocation (at exit).
    measured: Option<MemoryBreakdown>,
    /// The last projection.
    projection: Option<MemoryBreakdown>,
    /// The projection a fit kept (`… no changes needed`): the allocation.
    kept: Option<MemoryBreakdown>,
}

impl BreakdownTables {
    /// Read one line; `true` when it was the table's or the fit's.
    fn read(&mut self, line: &str) -> bool {
        if let Some(rest) = BREAKDOWN_TAGS
            .iter()
            .find_map(|t| line.find(t).map(|i| &line[i + t.len()..]))
        {
            if rest.contains("memory breakdown") {
                self.close();
                self.open = Some(MemoryBreakdown::default());
            } else if let Some(row) = breakdown_row(rest) {
                let t = self.open.get_or_insert_with(MemoryBreakdown::default);
                if t.rows.len() < MAX_BREAKDOWN_ROWS {
                    t.rows.push(row);
                }
            }
            return true;
        }
        self.close();
        if let Some(record) = jsonl_record(line, "fit_memory_breakdown") {
            if let Some(rows) = breakdown_json(&record) {
                self.open = Some(MemoryBreakdown {
                    rows,
                    projected: false,
                });
                self.close();
            }
            return true;
        }
        // The fit's end (common/fit.cpp: `successfully fit params`, `failed
        // to fit params`, `fitting params to free memory took`), or the
        // model in service.
        if line.contains("fit params to free")
            || line.contains("fitting params to free memory took")
            || line.contains("model loaded")
        {
            self.fitting = false;
        } else if line.contains("_fit_impl:")
            || line.contains("fitting params to device memory")
            || line.contains("common_fit_params:")
            || line.contains("llama_params_fit:")
        {
            self.fitting = true;
        }
        // The fit changed nothing: its last projection is the allocation.
        if line.contains("no changes needed") {
            self.kept = self.projection.clone();
        }
        false
    }

    /// The table read so far is complete: a projection when printed while
    /// fitting, or when a device's free memory and llama.cpp's own share
    /// add to more than the device has (free was read before allocating).
    fn close(&mut self) {
        let Some(mut t) = self.open.take() else {
            return;
        };
        if t.rows.is_empty() {
            return;
        }
        t.projected = self.fitting
            || t.rows.iter().any(|r| match (r.total_mib, r.free_mib) {
                (Some(total), Some(free)) => {
                    free.saturating_add(r.self_mib) > total.saturating_add((total / 100).max(64))
                }
                _ => false,
            });
        if t.projected {
            self.projection = Some(t);
        } else {
            self.measured = Some(t);
        }
    }

    fn finish(mut self) -> Option<MemoryBreakdown> {
        self.close();
        self.measured.or(self.kept)
    }
}

/// A row of the table after its tag: `|   - CUDA0 (RTX 5090)   | 32606 =
/// 1057 + (29365 = 28609 +     397 +     358) +        2183 |` (a device:
/// total, free, self, model, context, compute, unaccounted), `|   - Host
/// |   30956 = 30940 +       0 +      16   |` (the host or another buffer
/// type: self, model, context, compute); PR 15860's spelling has no pipes
/// and a colon after the name.
fn breakdown_row(rest: &str) -> Option<BreakdownRow> {
    let r = rest
        .trim_start_matches(|c: char| c == '|' || c.is_whitespace())
        .strip_prefix('-')?
        .trim_start();
    let name_end = r
        .find(|c: char| c.is_whitespace() || matches!(c, '(' | ':' | '|'))
        .unwrap_or(r.len());
    let name = &r[..name_end];
    if name.is_empty() || name.len() > 128 {
        return None;
    }
    let mut tail = r[name_end..].trim_start();
    let mut description = None;
    if let Some(d) = tail.strip_prefix('(') {
        let desc = balanced_prefix(d);
        description = Some(desc.chars().take(256).collect::<String>());
        tail = d.get(desc.len() + 1..).unwrap_or("");
    }
    // The figures: whole MiB, the last one signed.
    let mut nums: Vec<i64> = Vec::new();
    for tok in tail.split(|c: char| !(c.is_ascii_digit() || c == '-')) {
        if tok.is_empty() || tok == "-" {
            continue;
        }
        let v: i64 = tok.parse().ok()?;
        nums.push(v);
        if nums.len() > 7 {
            return None;
        }
    }
    // Sizes are below 2^40 MiB; the unaccounted figure of early builds is
    // an unsigned difference that wrapped (2^64 bytes − x, in MiB: 2^44 −
    // x), read back as the negative figure it stands for.
    let size = |v: i64| u64::try_from(v).ok().filter(|v| *v < 1 << 40);
    let mut row = BreakdownRow {
        name: name.to_string(),
        description,
        ..BreakdownRow::default()
    };
    match nums[..] {
        [total, free, own, model, context, compute, unacc] => {
            row.kind = "device".into();
            row.total_mib = Some(size(total)?);
            row.free_mib = Some(size(free)?);
            row.self_mib = size(own)?;
            row.model_mib = size(model)?;
            row.context_mib = size(context)?;
            row.compute_mib = size(compute)?;
            row.unaccounted_mib = Some(if unacc >= 1 << 43 {
                unacc - (1 << 44)
            } else {
                unacc
            });
        }
        [own, model, context, compute] => {
            row.kind = if name == "Host" {
                "host"
            } else {
                "buffer_type"
            }
            .into();
            row.self_mib = size(own)?;
            row.model_mib = size(model)?;
            row.context_mib = size(context)?;
            row.compute_mib = size(compute)?;
        }
        _ => return None,
    }
    Some(row)
}

/// The rows of a `--log-jsonl` `{"type":"fit_memory_breakdown","data":
/// {"unit":"MiB","rows":[{"kind":"device","name":…,"total":…},…]}}` record
/// (common/fit.cpp, 2026).
fn breakdown_json(v: &serde_json::Value) -> Option<Vec<BreakdownRow>> {
    let data = v.get("data")?;
    if data.get("unit").and_then(|u| u.as_str()) != Some("MiB") {
        return None;
    }
    let size = |r: &serde_json::Value, k: &str| r.get(k)?.as_u64().filter(|v| *v < 1 << 40);
    let rows: Vec<BreakdownRow> = data
        .get("rows")?
        .as_array()?
        .iter()
        .take(MAX_BREAKDOWN_ROWS)
        .filter_map(|r| {
            let kind = r.get("kind")?.as_str()?;
            if !matches!(kind, "device" | "host" | "buffer_type") {
                return None;
            }
            let text = |k: &str| {
                r.get(k)
                    .and_then(|v| v.as_str())
                    .map(|s| s.chars().take(256).collect::<String>())
            };
            Some(BreakdownRow {
                kind: kind.to_string(),
                name: text("name")?,
                description: text("description"),
                total_mib: size(r, "total"),
                free_mib: size(r, "free"),
                self_mib: size(r, "self")?,
                model_mib: size(r, "model")?,
                context_mib: size(r, "context")?,
                compute_mib: size(r, "compute")?,
                unaccounted_mib: r.get("unaccounted").and_then(|v| v.as_i64()),
            })
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// Most buffers one list keeps: a start-up prints a few per device; a
/// hostile or concatenated log (a `Meta(…)` name of 64 members on every
/// line) cannot grow a list past this.
const MAX_BUFFERS: usize = 256;

/// Append `bs` to `list` up to [`MAX_BUFFERS`].
/// A compute buffer printed again (its graph reserved again): one per
/// buffer name, the largest.
fn keep_largest(list: &mut Vec<LoggedBuffer>, b: LoggedBuffer) {
    match list.iter_mut().find(|c| c.buffer == b.buffer) {
        Some(c) => c.bytes = c.bytes.max(b.bytes),
        None => push_capped(list, [b]),
    }
}

fn push_capped(list: &mut Vec<LoggedBuffer>, bs: impl IntoIterator<Item = LoggedBuffer>) {
    let room = MAX_BUFFERS.saturating_sub(list.len());
    list.extend(bs.into_iter().take(room));
}

/// The members of a tensor-parallel `Meta(a,b,…)` device or buffer name
/// (`Meta(CUDA0,CUDA1)`, `Meta(NVIDIA H200,NVIDIA H200)`; ggml's
/// ggml-backend-meta.cpp, April 2026 on); `None` for any other name.
fn meta_members(name: &str) -> Option<Vec<&str>> {
    let inner = name.strip_prefix("Meta(")?.strip_suffix(')')?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    (parts.len() <= 64 && parts.iter().all(|p| !p.is_empty())).then_some(parts)
}

/// A buffer of a `Meta(…)` buffer type as its members' buffers: the size
/// printed is the largest member's (`ggml-backend-meta.cpp` reports the
/// maximum, not the sum), so each member is given that size, an upper
/// bound of its share (the tensor split is even).
fn meta_split(b: LoggedBuffer) -> Vec<LoggedBuffer> {
    match meta_members(&b.buffer) {
        Some(m) => m
            .into_iter()
            .map(|n| LoggedBuffer {
                buffer: n.to_string(),
                bytes: b.bytes,
            })
            .collect(),
        None => vec![b],
    }
}

/// What a `--fit` dry run printed, forgotten: its buffers (weights and
/// cache at 0 MiB, compute buffers at what they would take) and its cache
/// lines; the real load prints its own.
fn drop_dry_run(l: &mut LlamaCppLog) {
    l.model_buffers.clear();
    l.kv_buffers.clear();
    l.kv_total_bytes = None;
    l.rs_buffers.clear();
    l.rs_total_bytes = None;
    l.compute_buffers.clear();
    l.output_buffers.clear();
    l.type_k = None;
    l.type_v = None;
    l.n_ctx = None;
}

/// The message of a `--log-jsonl` line (`{"type":"log",…,"msg":"…"}`,
/// llama.cpp 2026), its line end trimmed; `None` for any other line.
fn jsonl_message(line: &str) -> Option<String> {
    let v = jsonl_record(line, "log")?;
    Some(v.get("msg")?.as_str()?.trim_end().to_string())
}

/// A `--log-jsonl` record of `kind` (`{"type":"log",…}`,
/// `{"type":"fit_memory_breakdown","data":…}`), whatever order its keys
/// are written in; `None` for any other line.
fn jsonl_record(line: &str, kind: &str) -> Option<serde_json::Value> {
    let t = line.trim();
    if !(t.starts_with('{') && t.ends_with('}') && t.contains("\"type\"") && t.contains(kind)) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    (v.get("type")?.as_str()? == kind).then_some(v)
}

/// The text up to the parenthesis that closes one already open (`Intel(R)
/// Arc(TM) A770 Graphics) (0000:03:00.0)` → `Intel(R) Arc(TM) A770
/// Graphics`); all of it where none closes.
fn balanced_prefix(s: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return &s[..i],
            ')' => depth -= 1,
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spellings of 2025-2026 llama.cpp builds, as their format strings
    /// print them (llama.cpp vendored in llama-cpp-python 0.3.36:
    /// src/llama-kv-cache-iswa.cpp, src/llama-kv-cache.cpp,
    /// src/llama-context.cpp `resolve_fused_ops`, src/llama.cpp `using
    /// device`, common/log.cpp's JSONL lines, a `--fit` dry run).
    #[test]
    fn llamacpp_2026_spellings() {
        // Two caches (full attention, then the sliding window): their sum;
        // types and cells of the first.
        let iswa = "llama_kv_cache_iswa: creating non-SWA KV cache, size = 32768 cells
llama_kv_cache:      CUDA0 KV buffer size =   544.00 MiB
llama_kv_cache: size =  544.00 MiB ( 32768 cells,   8 layers,  1/1 seqs), K (q8_0):  272.00 MiB, V (q8_0):  272.00 MiB
llama_kv_cache_iswa: creating     SWA KV cache, size = 1536 cells
llama_kv_cache:      CUDA0 KV buffer size =   132.00 MiB
llama_kv_cache: size =  132.00 MiB (  1536 cells,  40 layers,  1/1 seqs), K (f16):   66.00 MiB, V (f16):   66.00 MiB";
        let l = parse_llamacpp_log(iswa);
        assert_eq!(l.kv_total_bytes, Some(676 << 20));
        assert_eq!(LlamaCppLog::total(&l.kv_buffers), Some(676 << 20));
        assert_eq!(l.type_k.as_deref(), Some("q8_0"));
        assert_eq!(l.n_ctx, Some(32768));
        // Flash attention as resolved, in both spellings.
        let fa = "llama_context: flash_attn    = auto
sched_reserve: Flash Attention was auto, set to disabled";
        assert_eq!(
            parse_llamacpp_log(fa).flash_attn.as_deref(),
            Some("disabled")
        );
        let fa26 = "llama_context: flash_attn    = auto
resolve_fused_ops: Flash Attention not supported, set to disabled";
        assert_eq!(
            parse_llamacpp_log(fa26).flash_attn.as_deref(),
            Some("disabled")
        );
        let on = "llama_context: flash_attn    = auto\nresolve_fused_ops: Flash Attention enabled";
        assert_eq!(
            parse_llamacpp_log(on).flash_attn.as_deref(),
            Some("enabled")
        );
        // A description with its own parentheses, and the device id after it.
        let dev = "llama_prepare_model_devices: using device Vulkan0 (Intel(R) Arc(TM) A770 Graphics) (0000:03:00.0) - 15976 MiB free";
        assert_eq!(
            parse_llamacpp_log(dev).devices,
            vec![(
                "Vulkan0".to_string(),
                "Intel(R) Arc(TM) A770 Graphics".to_string()
            )]
        );
        // `--log-jsonl`: each message a JSON string.
        let jsonl = r#"{"type":"log","time":1,"level":"info","msg":"load_tensors:        CUDA0 model buffer size =  1234.00 MiB\n"}
{"type":"log","time":2,"level":"info","msg":"llama_context: n_ctx         = 4096\n"}"#;
        let j = parse_llamacpp_log(jsonl);
        assert_eq!(LlamaCppLog::total(&j.model_buffers), Some(1234 << 20));
        assert_eq!(j.n_ctx, Some(4096));
        // A `--fit` dry run, then the real load: only the real load's.
        let fit = "print_info: file type   = Q4_K - Medium
print_info: n_layer = 64
print_info: no_alloc = 1
load_tensors:        CUDA0 model buffer size =     0.00 MiB
llama_context: n_ctx         = 262144
sched_reserve:      CUDA0 compute buffer size =  1000.00 MiB
print_info: file type   = Q4_K - Medium
print_info: n_layer = 64
print_info: no_alloc = 0
load_tensors:        CUDA0 model buffer size =  7000.00 MiB
llama_context: n_ctx         = 65536
sched_reserve:      CUDA0 compute buffer size =   300.00 MiB
print_info: file type   = Q8_0
print_info: n_layer = 28
load_tensors:        CUDA0 model buffer size =   500.00 MiB";
        let f = parse_llamacpp_log(fit);
        assert_eq!(LlamaCppLog::total(&f.compute_buffers), Some(300 << 20));
        assert_eq!(f.n_ctx, Some(65536));
        // The draft model after it (`-md`) adds its weights but not its
        // file type or hyper-parameters.
        assert_eq!(LlamaCppLog::total(&f.model_buffers), Some(7500 << 20));
        assert_eq!(f.file_type.as_deref(), Some("Q4_K - Medium"));
        assert_eq!(f.hparams.get("n_layer").map(String::as_str), Some("64"));
        // `--split-mode tensor`: the Meta device and buffers as their
        // members, each at the size printed (the largest member's).
        let meta = "llama_prepare_model_devices: using device Meta(CUDA0,CUDA1) (Meta(NVIDIA H200,NVIDIA H200)) (unknown id) - 280000 MiB free
load_tensors: Meta(CUDA0,CUDA1) model buffer size =  7000.00 MiB
llama_kv_cache: Meta(CUDA0,CUDA1) KV buffer size =   512.00 MiB";
        let m = parse_llamacpp_log(meta);
        assert_eq!(
            m.devices,
            vec![
                ("CUDA0".to_string(), "NVIDIA H200".to_string()),
                ("CUDA1".to_string(), "NVIDIA H200".to_string())
            ]
        );
        assert_eq!(m.backend(), Some(crate::plan::runtime::GgmlBackend::Cuda));
        assert_eq!(m.model_buffers.len(), 2);
        assert_eq!(m.model_buffers[1].buffer, "CUDA1");
        assert_eq!(LlamaCppLog::total(&m.model_buffers), Some(14000 << 20));
        assert_eq!(LlamaCppLog::total(&m.kv_buffers), Some(1024 << 20));
        // However many buffers a log repeats, a list keeps at most
        // MAX_BUFFERS of them.
        let many = "load_tensors: Meta(CUDA0,CUDA1,CUDA2,CUDA3) model buffer size =     1.00 MiB\n"
            .repeat(200);
        assert_eq!(parse_llamacpp_log(&many).model_buffers.len(), MAX_BUFFERS);
        // DeepSeek-V4's compressor states (llama-kv-cache-dsv4.cpp's
        // format strings): state buffers beside its caches, its summary
        // line not counted again.
        let dsv4 = "llama_kv_cache:      CUDA0 KV buffer size =   100.00 MiB
llama_dsv4_comp_state:      CUDA0 DSV4 CSA state buffer size =    12.00 MiB
llama_dsv4_comp_state: CSA ratio = 4, state = 8 x 512, streams = 1, rs_seq = 1, layers = 30, size =   12.00 MiB
llama_dsv4_comp_state:      CUDA0 DSV4 HCA state buffer size =     3.50 MiB";
        let d = parse_llamacpp_log(dsv4);
        assert_eq!(
            d.rs_buffers
                .iter()
                .map(|b| b.buffer.as_str())
                .collect::<Vec<_>>(),
            ["CUDA0", "CUDA0"]
        );
        assert_eq!(
            LlamaCppLog::total(&d.rs_buffers),
            Some(((12 << 20) + (7 << 19)) as u64)
        );
        assert_eq!(d.rs_total_bytes, None);
        assert_eq!(LlamaCppLog::total(&d.kv_buffers), Some(100 << 20));
        // A graph reserved again prints its compute buffer again: once.
        let again = "sched_reserve:      CUDA0 compute buffer size =   300.00 MiB
sched_reserve:      CUDA0 compute buffer size =   300.00 MiB
sched_reserve:  CUDA_Host compute buffer size =    12.00 MiB";
        assert_eq!(
            LlamaCppLog::total(&parse_llamacpp_log(again).compute_buffers),
            Some(312 << 20)
        );
    }

    /// llama.cpp's memory breakdown table in its spellings (common/fit.cpp
    /// of llama.cpp vendored in llama-cpp-python 0.3.36; PR 15860's first
    /// form), as projection and as measured at exit.
    #[test]
    fn llamacpp_memory_breakdown_tables() {
        // A `--fit` projection the fit kept, then the exit table (with
        // timestamps and level letters before the tag, as `--log-prefix`
        // prints them).
        let log = "0.00.100.000 I common_params_fit_impl: getting device memory data for initial parameters:
0.00.200.000 I common_memory_breakdown_print: | memory breakdown [MiB] | total    free     self   model   context   compute    unaccounted |
0.00.200.001 I common_memory_breakdown_print: |   - CUDA0 (RTX 5090)   | 32606 = 30330 + (21832 = 16386 +    4950 +     495) +      -19555 |
0.00.200.002 I common_memory_breakdown_print: |   - Host               |                    958 =   682 +       0 +     276                |
0.00.300.000 I common_params_fit_impl: will leave 8497 >= 1024 MiB of free device memory, no changes needed
0.00.300.001 I common_fit_params: successfully fit params to free device memory";
        let b = parse_llamacpp_log(log).memory_breakdown.unwrap();
        assert!(b.projected);
        assert_eq!(b.rows.len(), 2);
        let d = &b.rows[0];
        assert_eq!(
            (d.kind.as_str(), d.name.as_str(), d.description.as_deref()),
            ("device", "CUDA0", Some("RTX 5090"))
        );
        assert_eq!(
            (
                d.total_mib,
                d.free_mib,
                d.self_mib,
                d.model_mib,
                d.context_mib,
                d.compute_mib
            ),
            (Some(32606), Some(30330), 21832, 16386, 4950, 495)
        );
        assert_eq!(d.unaccounted_mib, Some(-19555));
        assert_eq!(
            (
                b.rows[1].kind.as_str(),
                b.rows[1].model_mib,
                b.rows[1].compute_mib
            ),
            ("host", 682, 276)
        );
        // The exit table after it is the one kept.
        let exit = format!(
            "{log}
main: model loaded
common_memory_breakdown_print: | memory breakdown [MiB] | total    free     self   model   context   compute    unaccounted |
common_memory_breakdown_print: |   - CUDA0 (RTX 5090)   | 32606 =  9000 + (21832 = 16386 +    4950 +     495) +        1774 |
common_memory_breakdown_print: |   - Host               |                    958 =   682 +       0 +     276                |
common_memory_breakdown_print: |   - CPU_REPACK         |                    100 =   100 +       0 +       0                |"
        );
        let e = parse_llamacpp_log(&exit).memory_breakdown.unwrap();
        assert!(!e.projected);
        assert_eq!(e.rows.len(), 3);
        assert_eq!(e.rows[0].unaccounted_mib, Some(1774));
        assert_eq!(e.rows[2].kind, "buffer_type");
        assert_eq!(e.rows[2].name, "CPU_REPACK");
        // A fit that changed the parameters: its projections are of other
        // parameters, none is kept.
        let changed = "llama_params_fit_impl: getting device memory data for initial parameters:
llama_memory_breakdown_print: | memory breakdown [MiB] | total    free     self   model   context   compute    unaccounted |
llama_memory_breakdown_print: |   - CUDA0 (RTX 5060 Ti) | 15841 = 15630 + (15302 = 14736 +      72 +     493) + 17592186029324 |
llama_params_fit_impl: context size reduced from 262144 to 65536 -> need 4000 MiB less memory in total
llama_params_fit: successfully fit params to free device memory";
        let c = parse_llamacpp_log(changed);
        assert_eq!(c.memory_breakdown, None);
        // The wrapped unsigned figure of such builds, read back signed.
        let row = breakdown_row("|   - CUDA0 (RTX 5060 Ti) | 15841 = 15630 + (15302 = 14736 +      72 +     493) + 17592186029324 |").unwrap();
        assert_eq!(row.unaccounted_mib, Some(17592186029324 - (1 << 44)));
        // A projection without its fit lines (an excerpt): free and self
        // add to more than the device has.
        let cut = "common_memory_breakdown_print: |   - CUDA0 (RTX PRO 6000 Blackwell Max-Q Workstation Edition) | 97288 = 96727 + ( 74016 =  19485 +   49406 +    5124) +      -73454 |";
        assert!(parse_llamacpp_log(cut).memory_breakdown.is_none());
        // PR 15860's first spelling: no pipes, a colon after the name; a
        // description with its own parentheses.
        let first = "llama_print_memory_breakdown: memory breakdown:      total   free     self   model   context   compute    unaccounted
llama_print_memory_breakdown:   - CUDA0 (RTX 4090):  24080 = 9436 + (14193 = 13169 +      38 +     985) +         451
llama_print_memory_breakdown:   - Vulkan0 (Intel(R) Arc(TM) A770 Graphics):  16032 = 8000 + (7000 = 6000 +      500 +     500) +         1032";
        let f = parse_llamacpp_log(first).memory_breakdown.unwrap();
        assert_eq!(f.rows.len(), 2);
        assert_eq!(f.rows[0].model_mib, 13169);
        assert_eq!(
            f.rows[1].description.as_deref(),
            Some("Intel(R) Arc(TM) A770 Graphics")
        );
        assert_eq!(f.rows[1].unaccounted_mib, Some(1032));
        // `--log-jsonl`: the table as a JSON record, at any verbosity.
        let jsonl = r#"{"type":"fit_memory_breakdown","data":{"unit":"MiB","rows":[{"kind":"device","name":"CUDA0","description":"RTX 4090","total":24080,"free":9436,"self":14193,"model":13169,"context":38,"compute":985,"unaccounted":451},{"kind":"host","name":"Host","self":300,"model":250,"context":0,"compute":50}]}}"#;
        let j = parse_llamacpp_log(jsonl);
        assert!(!j.is_empty());
        let jb = j.memory_breakdown.unwrap();
        assert_eq!(jb.rows.len(), 2);
        // The same record with its keys in another order (a JSON writer
        // that sorts them), and a log record likewise.
        let sorted = r#"{"data":{"rows":[{"compute":985,"context":38,"description":"RTX 4090","free":9436,"kind":"device","model":13169,"name":"CUDA0","self":14193,"total":24080,"unaccounted":451}],"unit":"MiB"},"type":"fit_memory_breakdown"}
{"level":"info","msg":"llama_context: n_ctx         = 4096\n","time":2,"type":"log"}"#;
        let sl = parse_llamacpp_log(sorted);
        assert_eq!(sl.memory_breakdown.unwrap().rows[0].model_mib, 13169);
        assert_eq!(sl.n_ctx, Some(4096));
        assert_eq!(jb.rows[0].compute_mib, 985);
        assert_eq!(jb.rows[1].kind, "host");
        // Hostile rows: too many figures, sizes past any memory, a name
        // too long, garbage: skipped, never a panic.
        for bad in [
            "|   - CUDA0 (x) | 1 = 2 + (3 = 4 + 5 + 6) + 7 + 8 |",
            "|   - CUDA0 (x) | 99999999999999999 = 1 + (1 = 1 + 0 + 0) + 0 |",
            "|   - CUDA0 (x) | 999999999999999999999999 = 1 + (1 = 1 + 0 + 0) + 0 |",
            "|   - Host | 1 = 1 + 0 |",
            "| - ",
            "|   - CUDA0 (unclosed | 1 = 1 + 0 + 0 |",
        ] {
            assert!(breakdown_row(bad).is_none(), "{bad}");
        }
        let long = format!("|   - {} | 1 = 1 + 0 + 0 |", "X".repeat(500));
        assert!(breakdown_row(&long).is_none());
        let many = format!(
            "common_memory_breakdown_print: | memory breakdown [MiB] |\n{}",
            "common_memory_breakdown_print: |   - Host | 1 = 1 + 0 + 0 |\n".repeat(1000)
        );
        assert_eq!(
            parse_llamacpp_log(&many)
                .memory_breakdown
                .unwrap()
                .rows
                .len(),
            MAX_BREAKDOWN_ROWS
        );
    }

    /// vLLM 0.24-0.33 spellings, as their format strings print them (the
    /// PyPI sdists: `v1/core/kv_cache_utils.py` `update_kv_cache_capacity`,
    /// `v1/worker/gpu_worker.py`, `v1/core/kv_cache_planning.py`,
    /// `vllm/logger.py`'s 0.31 format with the process tag after
    /// `VLLM_LOGGING_PREFIX`).
    #[test]
    fn vllm_2026_spellings() {
        // The merged capacity line on another device and with host pools.
        let x = parse_vllm_log(
            "(EngineCore pid=107) INFO 07-09 02:58:11 [kv_cache_utils.py:1147] XPU KV cache size: 569,878 tokens, Maximum concurrency for 32,768 tokens per request: 17.39x",
        );
        assert_eq!(x.kv_cache_tokens, Some(569_878));
        assert_eq!(x.kv_cache_pools.as_deref(), Some("XPU"));
        assert_eq!(x.max_concurrency, Some((32_768, 17.39)));
        assert_eq!(x.engine.as_deref(), Some("v1"));
        let h = parse_vllm_log(
            "INFO 07-09 02:58:11 [kv_cache_utils.py:1147] GPU + host KV cache size: 1,569,878 tokens, Maximum concurrency for 131,072 tokens per request: 11.98x",
        );
        assert_eq!(h.kv_cache_tokens, Some(1_569_878));
        assert_eq!(h.kv_cache_pools.as_deref(), Some("GPU + host"));
        // The second model runner prints the estimate only in the pool line;
        // rank 0's is kept, with a logging prefix before the tags.
        let g = parse_vllm_log(
            "[node0] (Worker_TP1 pid=148) INFO 09-04 11:00:17 [gpu_worker.py:1003] CUDA graph pool memory: 0.6 GiB (actual), 0.55 GiB (estimated), difference: 0.05 GiB (9.1%).
[node0] (Worker_TP0 pid=147) INFO 09-04 11:00:17 [gpu_worker.py:1003] CUDA graph pool memory: 0.52 GiB (actual), 0.5 GiB (estimated), difference: 0.02 GiB (3.8%).
[node0] (Worker_TP1 pid=148) INFO 09-04 11:00:18 [gpu_worker.py:1003] CUDA graph pool memory: 0.6 GiB (actual), 0.55 GiB (estimated), difference: 0.05 GiB (9.1%).",
        );
        assert_eq!(
            g.cudagraph_estimate_bytes,
            Some((0.5 * 1_073_741_824.0) as u64)
        );
        assert_eq!(
            super::worker_rank("[n] (Worker_PCP1_TP0 pid=9) INFO x"),
            Some(1)
        );
        assert_eq!(super::worker_rank("(APIServer pid=1) INFO x"), None);
        // `Free memory on device` (0.27+): total, utilization, rank 0's KV.
        let f = parse_vllm_log(
            "(Worker_TP1 pid=1160) INFO 09-04 11:00:17 [gpu_worker.py:855] Free memory on device (91.64/94.97 GiB) on startup. Desired GPU memory utilization is (0.91, 86.42 GiB). Actual usage is 64.5 GiB for consumed memory (weights + non-torch), 4.19 GiB for peak activation, and 0.25 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=18676332626` (17.39 GiB) to fit into requested memory, or `--kv-cache-memory=24274632704` (22.61 GiB) to fully utilize gpu memory. Current kv cache memory in use is 17.73 GiB.
(Worker_TP0 pid=1159) INFO 09-04 11:00:17 [gpu_worker.py:855] Free memory on device (91.64/94.97 GiB) on startup. Desired GPU memory utilization is (0.91, 86.42 GiB). Actual usage is 64.44 GiB for consumed memory (weights + non-torch), 4.19 GiB for peak activation, and 0.25 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=18676332626` (17.39 GiB) to fit into requested memory, or `--kv-cache-memory=24274632704` (22.61 GiB) to fully utilize gpu memory. Current kv cache memory in use is 17.79 GiB.",
        );
        assert_eq!(
            f.total_gpu_memory_bytes,
            Some((94.97 * 1_073_741_824.0_f64).round() as u64)
        );
        assert_eq!(f.gpu_memory_utilization, Some(0.91));
        assert_eq!(
            f.kv_cache_bytes,
            Some((17.79 * 1_073_741_824.0_f64).round() as u64)
        );
        // `--kv-cache-memory-bytes`, and multimodal decoding's reduction.
        let k = parse_vllm_log(
            "(EngineCore pid=9) INFO 09-01 10:00:00 [gpu_worker.py:676] Initial free memory 139.2 GiB, reserved 40.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config.",
        );
        assert_eq!(k.kv_cache_bytes, Some(40 << 30));
        let r = parse_vllm_log(
            "INFO [gpu_worker.py:773] Available KV cache memory: 20.5 GiB
INFO [gpu_ipc_memory.py:255] Reserving 2.0 GiB of GPU memory for frontend multimodal decoding (1.5 GiB raw-frame semaphore budget, 0.5 GiB decoder+CUDA-context across 1 API server(s) @ 0.5 GiB/server); KV cache memory reduced to 18.5 GiB.",
        );
        assert_eq!(r.kv_cache_bytes, Some((18.5 * 1_073_741_824.0) as u64));
        // An auto-fitted context, after the config line's native one.
        let a = parse_vllm_log(
            "INFO [core.py:140] Initializing a V1 LLM engine (v0.30.0) with config: model='m', max_seq_len=40960, tensor_parallel_size=1
INFO [kv_cache_utils.py:2567] Auto-fit max_model_len: reduced from 40960 to 12288 to fit in available GPU memory (3.5 GiB available for KV cache)",
        );
        assert_eq!(a.max_model_len, Some(12288));
        // The V1 refusal.
        let e = parse_vllm_log(
            "ValueError: To serve at least one request with the model's max seq len (196608), (23.25 GiB KV cache is needed, which is larger than the available KV cache memory (22.5 GiB). Based on the available memory, the estimated maximum model length is 190272. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        );
        assert_eq!(e.max_model_len, Some(196_608));
        assert_eq!(e.max_tokens_in_kv_cache, Some(190_272));
        assert_eq!(e.kv_cache_bytes, Some((22.5 * 1_073_741_824.0) as u64));
        // A draft model's keys nested in `non-default args` are not the model's.
        let n = parse_vllm_log(
            "(APIServer pid=1) INFO 08-22 00:08:58 [api_utils.py:273] non-default args: {'model_tag': 'Qwen/Qwen3-32B', 'max_model_len': 65536, 'speculative_config': {'model': 'Qwen/Qwen3-32B-FP8-draft', 'quantization': 'fp8', 'kv_cache_dtype': 'fp8', 'num_speculative_tokens': 3}}",
        );
        assert_eq!(n.quantization, None);
        assert_eq!(n.kv_cache_dtype, None);
        // 0.21-0.27's second model runner (`… GiB and …`): no estimate
        // measured, none taken off; the first runner's (`GiB memory`) says
        // nothing either way.
        let v2 = parse_vllm_log(
            "INFO [startup.py:38] vLLM server version 0.25.0, serving model m
(EngineCore pid=5) INFO [model_runner.py:303] Model loading took 15.0 GiB and 4.2 seconds",
        );
        assert_eq!(v2.cudagraph_estimate_subtracted, Some(false));
        assert_eq!(v2.weights_bytes, Some(15 << 30));
        let v1 = parse_vllm_log(
            "INFO [startup.py:38] vLLM server version 0.25.0, serving model m
(EngineCore pid=5) INFO [gpu_model_runner.py:5088] Model loading took 15.0 GiB memory and 4.2 seconds",
        );
        assert_eq!(v1.cudagraph_estimate_subtracted, None);
        // Weights printed by every pipeline stage: rank 0's.
        let pp = parse_vllm_log(
            "(Worker_PP0 pid=5) INFO [model_runner.py:429] Model loading took 7.5 GiB memory and 3.0 seconds
(Worker_PP1 pid=6) INFO [model_runner.py:429] Model loading took 8.49 GiB memory and 3.0 seconds",
        );
        assert_eq!(pp.weights_bytes, Some((7.5 * 1_073_741_824.0) as u64));
        // A DEBUG memory snapshot's `non_torch_memory=` is the CUDA context.
        let d = parse_vllm_log(
            "DEBUG [gpu_worker.py:545] worker init memory snapshot: torch_peak=0.0GiB, free_memory=139.2GiB, total_memory=139.72GiB, non_torch_memory=0.52GiB",
        );
        assert_eq!(d.non_torch_bytes, None);
    }

    /// TensorRT-LLM 1.x's PyTorch backend, as its format strings print a
    /// start-up (`_torch/pyexecutor/model_loader.py`, `_util.py`
    /// `KvCacheCreator`, the C++ `KVCacheManager::allocatePools`): the
    /// temporary cache of the profiling run comes first and is not the
    /// cache; the weights, fraction, per-token size and ranks are read
    /// from the Python lines.
    #[test]
    fn trtllm_pytorch_backend_start_up() {
        let log = "[TensorRT-LLM] TensorRT-LLM version: 1.1.0rc3
[12/20/2025-04:20:21] [TRT-LLM] [I] Use 63.32 GB for model weights.
[TensorRT-LLM][INFO] Number of tokens per block: 32.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.56 GiB for max tokens in paged KV cache (8224).
[12/20/2025-04:21:51] [TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 113.65 GiB, available KV cache memory when calculating max tokens: 5.95 GiB, fraction is set 0.8999999761581421, kv size is 73728. device total memory 119.70 GiB, , tmp kv_mem 0.56 GiB
[12/20/2025-04:21:51] [TRT-LLM] [I] Estimated max memory in KV cache : 5.95 GiB
[TensorRT-LLM][INFO] Number of tokens per block: 32.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 5.95 GiB for max tokens in paged KV cache (86720).
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.40 GiB for max tokens in paged KV cache (5000).";
        let l = parse_trtllm_log(log);
        assert_eq!(l.kv_cache_tokens, Some(86_720));
        assert_eq!(
            l.kv_cache_bytes,
            Some((5.95 * 1_073_741_824.0_f64).round() as u64)
        );
        assert_eq!(
            l.weights_bytes,
            Some((63.32 * 1_073_741_824.0_f64).round() as u64)
        );
        assert_eq!(l.logged_kv_bytes_per_token, Some(73_728));
        assert_eq!(l.free_gpu_memory_fraction, Some(0.9));
        assert_eq!(
            l.total_bytes,
            Some((119.70 * 1_073_741_824.0_f64).round() as u64)
        );
        assert_eq!(l.tokens_per_block, Some(32));
        assert!(!l.is_empty());
        // 2026's wording, ranks from the tags, and early 2024's spelling.
        let r = parse_trtllm_log(
            "[TRT-LLM] [RANK 1] [I] Use 30.0 GB for model weights.
[TRT-LLM] [RANK 0] [I] Use 31.0 GB for model weights.
[TRT-LLM] [RANK 0] [I] Peak memory during memory usage profiling (torch + non-torch): 40.00 GiB, available KV cache memory when calculating max tokens: 35.00 GiB, fraction is set 0.9, kv size per token is 131072 bytes/token. device total memory 79.19 GiB, temporary kv cache memory during profiling 1.00 GiB
[TRT-LLM] [RANK 3] [I] Estimated max memory in KV cache : 35.00 GiB",
        );
        assert_eq!(r.world_size, Some(4));
        assert_eq!(r.weights_bytes, Some(31 << 30));
        // Two ranks interleaved: rank 1's profiling lines after rank 0's
        // real cache do not drop it, nor does rank 1's temporary cache
        // printed after it replace it.
        let two = parse_trtllm_log(
            "[TRT-LLM] [RANK 0] [I] Use 30.0 GB for model weights.
[TRT-LLM] [RANK 1] [I] Use 30.0 GB for model weights.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.56 GiB for max tokens in paged KV cache (8224).
[TRT-LLM] [RANK 0] [I] Peak memory during memory usage profiling (torch + non-torch): 40.00 GiB, available KV cache memory when calculating max tokens: 35.00 GiB, fraction is set 0.9, kv size per token is 131072 bytes/token. device total memory 79.19 GiB, temporary kv cache memory during profiling 1.00 GiB
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.56 GiB for max tokens in paged KV cache (8224).
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 35.00 GiB for max tokens in paged KV cache (286720).
[TRT-LLM] [RANK 1] [I] Peak memory during memory usage profiling (torch + non-torch): 40.10 GiB, available KV cache memory when calculating max tokens: 34.90 GiB, fraction is set 0.9, kv size per token is 131072 bytes/token. device total memory 79.19 GiB, temporary kv cache memory during profiling 1.00 GiB
[TRT-LLM] [RANK 1] [I] Estimated max memory in KV cache : 34.90 GiB
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 35.00 GiB for max tokens in paged KV cache (286720).",
        );
        assert_eq!(two.world_size, Some(2));
        assert_eq!(two.kv_cache_tokens, Some(286_720));
        assert_eq!(two.kv_cache_bytes, Some(35 << 30));
        assert_eq!(
            two.total_bytes,
            Some((79.19 * 1_073_741_824.0_f64).round() as u64)
        );
        assert_eq!(r.logged_kv_bytes_per_token, Some(131_072));
        let q = parse_trtllm_log(
            "[TRT-LLM] [I] Use 10.0 GB for model weights.
[TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 20.00 GiB, available KV cache memory when calculating max tokens: 54.19 GiB, fraction is set 0.9, kv size per token is 131072 bytes/token. device total memory 79.19 GiB, temporary kv cache memory during profiling 1.00 GiB
[TRT-LLM] [I] KV cache manager v2 device quota set to 54.18999996781349GiB",
        );
        assert_eq!(
            q.kv_cache_bytes,
            Some((54.18999996781349 * 1_073_741_824.0_f64).round() as u64)
        );
        let o = parse_trtllm_log(
            "[TensorRT-LLM][INFO] Max tokens in paged KV cache: 117760. Allocating 54022635520 bytes.",
        );
        assert_eq!(
            (o.kv_cache_tokens, o.kv_cache_bytes),
            (Some(117_760), Some(54_022_635_520))
        );
    }

    /// SGLang 0.5.20+'s dict of server arguments: top-level keys only,
    /// strings with commas, quotes and braces inside, nested dicts and
    /// lists, and a dict cut short.
    #[test]
    fn python_dict_top_level_keys() {
        let d = r#"{'model_path': '/m/a, b', 'model_loader_extra_config': {'tp_size': 99}, 'note': "it's {'tp_size': 7}", 'bs': [1, 2, 4], 'tp_size': 2, 'quantization': None, 'mem_fraction_static': 0.83}"#;
        assert_eq!(dict_top_arg(d, "tp_size"), Some("2"));
        assert_eq!(dict_top_arg(d, "model_path"), Some("/m/a, b"));
        assert_eq!(dict_top_arg(d, "quantization"), Some("None"));
        assert_eq!(dict_top_arg(d, "mem_fraction_static"), Some("0.83"));
        assert_eq!(dict_top_arg(d, "bs"), Some("[1, 2, 4]"));
        assert_eq!(dict_top_arg(d, "note"), Some("it's {'tp_size': 7}"));
        assert_eq!(dict_top_arg(d, "absent"), None);
        // Cut short, or not a dict: nothing, never a panic.
        assert_eq!(dict_top_arg(&d[..40], "tp_size"), None);
        assert_eq!(dict_top_arg("{'tp_size", "tp_size"), None);
        assert_eq!(dict_top_arg("(tp_size=2)", "tp_size"), None);
        assert_eq!(dict_top_arg("{}}", "tp_size"), None);
        for cut in 0..d.len() {
            if d.is_char_boundary(cut) {
                let _ = dict_top_arg(&d[..cut], "mem_fraction_static");
            }
        }
        // The log line: a dict-form line sets what a ServerArgs line does.
        let line = format!("[2026-09-24 01:50:02] server_args={d}");
        let l = parse_sglang_log(&line);
        assert_eq!(l.tp_size, Some(2));
        assert_eq!(l.mem_fraction_static, Some(0.83));
        assert_eq!(l.model_path.as_deref(), Some("/m/a, b"));
    }

    #[test]
    fn backend_from_devices_else_weight_buffers() {
        use crate::plan::runtime::GgmlBackend;
        // 2024 format: no device lines, `CUDA0 buffer size`.
        let old = include_str!(
            "../../../tests/fixtures/runtime-logs/llama.cpp-pr6122__2x-cuda-old-format.log"
        );
        assert_eq!(parse_llamacpp_log(old).backend(), Some(GgmlBackend::Cuda));
        // RPC servers and the host's mapped buffer name no GPU backend.
        let rpc = include_str!(
            "../../../tests/fixtures/runtime-logs/llama-server-local__2x-rpc-layer-split-reversed-buffers.log"
        );
        assert_eq!(parse_llamacpp_log(rpc).backend(), None);
        let l = parse_llamacpp_log(
            "llama_prepare_model_devices: using device Vulkan0 (Intel(R) Arc(TM) A770 Graphics) - 15976 MiB free\n\
             load_tensors:   CPU_Mapped model buffer size =    70.31 MiB\n",
        );
        assert_eq!(l.backend(), Some(GgmlBackend::Vulkan));
        let l = parse_llamacpp_log("load_tensors: Metal_Mapped model buffer size =  3820.93 MiB\n");
        assert_eq!(l.backend(), Some(GgmlBackend::Metal));
        assert_eq!(parse_llamacpp_log("nothing here\n").backend(), None);
    }

    #[test]
    fn recurrent_state_buffers_of_hybrid_models() {
        // Lines as llama.cpp prints them for a hybrid model (the format
        // strings of src/llama-memory-recurrent.cpp; these values from a
        // llama-server log of a 64-layer Qwen3.6 model with 4 sequences):
        // the attention layers' KV cache, then the linear layers' state.
        let l = parse_llamacpp_log(
            "2026-05-16 22:21:45.593 | llama_kv_cache:      CUDA0 KV buffer size =  4352.00 MiB\n\
             2026-05-16 22:21:45.621 | llama_kv_cache: size = 4352.00 MiB (131072 cells,  16 layers,  4/1 seqs), K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB\n\
             2026-05-16 22:21:45.629 | llama_memory_recurrent:      CUDA0 RS buffer size =   598.50 MiB\n\
             2026-05-16 22:21:45.629 | llama_memory_recurrent: size =  598.50 MiB (     4 cells,  65 layers,  4 seqs), R (f32):   22.50 MiB, S (f32):  576.00 MiB\n",
        );
        let mib = |b: Option<u64>| b.map(|b| b as f64 / 1_048_576.0);
        assert_eq!(mib(l.kv_total_bytes), Some(4352.0));
        assert_eq!(mib(LlamaCppLog::total(&l.kv_buffers)), Some(4352.0));
        assert_eq!(mib(l.rs_total_bytes), Some(598.5));
        assert_eq!(l.rs_buffers.len(), 1);
        assert_eq!(l.rs_buffers[0].buffer, "CUDA0");
        // The state's line is not read as the KV cache's (types, cells).
        assert_eq!(l.type_k.as_deref(), Some("q8_0"));
        assert_eq!(l.n_ctx, Some(131_072));
    }

    #[test]
    fn sizes_and_prefixes() {
        assert_eq!(mib("1536.00 MiB"), Some(1536 << 20));
        assert_eq!(mib(" 0.19 MiB"), Some(199_229));
        assert_eq!(mib("x MiB"), None);
        assert_eq!(mib("-1 MiB"), None);
        let l = parse_llamacpp_log(
            "\u{1b}[34m0.00.612.795\u{1b}[0m \u{1b}[32mI \u{1b}[0mllama_context:      CUDA0 compute buffer size =   560.00 MiB\n",
        );
        assert_eq!(l.compute_buffers[0].buffer, "CUDA0");
        assert_eq!(l.compute_buffers[0].bytes, 560 << 20);
        let l = parse_llamacpp_log(
            "llama_kv_cache: size = 1024.00 MiB (  8192 cells,  32 layers,  1/1 seqs), K (q8_0):  512.00 MiB, V (f16):  512.00 MiB\n",
        );
        assert_eq!(l.kv_total_bytes, Some(1024 << 20));
        assert_eq!(
            (l.type_k.as_deref(), l.type_v.as_deref()),
            (Some("q8_0"), Some("f16"))
        );
    }
}

/// What a vLLM start-up log says (V0 and V1 engines, 2024–2026 spellings).
/// vLLM prints GiB (2^30 bytes) even where the text says "GB"
/// (`gpu_model_runner.py`: `"Loading model weights took %.4f GB", bytes / GiB_bytes`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VllmLog {
    /// Weights on one GPU: `Loading model weights took X GB`, `Model
    /// loading took X GiB`, `model weights take X GiB`.
    pub weights_bytes: Option<u64>,
    /// Memory for the KV cache on one GPU: `Available KV cache memory: X
    /// GiB`, `kv_cache_size=X GiB`, `the rest of the memory reserved for KV
    /// Cache is X GiB`.
    pub kv_cache_bytes: Option<u64>,
    /// KV cache capacity in tokens: `GPU KV cache size: N tokens` (V1).
    pub kv_cache_tokens: Option<u64>,
    /// `# GPU blocks: N` (older logs, 16 tokens per block by default).
    pub gpu_blocks: Option<u64>,
    /// `Maximum concurrency for N tokens per request: X x`.
    pub max_concurrency: Option<(u64, f64)>,
    /// `total_gpu_memory` as vLLM saw it.
    pub total_gpu_memory_bytes: Option<u64>,
    /// `gpu_memory_utilization`.
    pub gpu_memory_utilization: Option<f64>,
    /// Non-torch memory (`non_torch_memory`, `non-torch forward increase memory`).
    pub non_torch_bytes: Option<u64>,
    /// Activation peak (`PyTorch activation peak memory takes`, `torch peak memory increase`).
    pub activation_peak_bytes: Option<u64>,
    /// `max_seq_len=` of the engine config line, or the one the
    /// "larger than the maximum number of tokens" error names.
    pub max_model_len: Option<u64>,
    /// The error's token capacity when the context does not fit.
    pub max_tokens_in_kv_cache: Option<u64>,
    /// `tensor_parallel_size=` of the engine config line.
    pub tensor_parallel_size: Option<u64>,
    /// `pipeline_parallel_size=` of the engine config line (or
    /// `non-default args`): the log's figures are then rank 0's, on the
    /// first stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_parallel_size: Option<u64>,
    /// The weights' dtype of the engine config line (`dtype=torch.bfloat16`)
    /// or of `non-default args` (`'dtype': 'float16'`), as printed.
    #[serde(default)]
    pub dtype: Option<String>,
    /// The quantization method of the engine config line (`quantization=fp8`;
    /// `None` there is no quantization) or of `non-default args`.
    #[serde(default)]
    pub quantization: Option<String>,
    /// `max_num_seqs` the user set (`'max_num_seqs': N` of `non-default
    /// args`, or `max_num_seqs=N` of an args line); `None`: vLLM's default.
    #[serde(default)]
    pub max_num_seqs: Option<u64>,
    /// `max_num_batched_tokens` as set (`non-default args`, an args line)
    /// or as the scheduler reports it (`Chunked prefill is enabled with
    /// max_num_batched_tokens=N.`).
    #[serde(default)]
    pub max_num_batched_tokens: Option<u64>,
    /// `v0` or `v1`, from lines only one engine prints (V0: `Memory
    /// profiling results`, `# CPU blocks`, `worker.py`; V1: `GPU KV cache
    /// size: … tokens`, `V1 LLM engine`, `gpu_model_runner.py`).
    pub engine: Option<String>,
    /// The checkpoint's `llm_int8_skip_modules`, the modules its
    /// bitsandbytes quantization left at 16 bits, where the log prints them
    /// (Unsloth's `vLLM Bitsandbytes config using kwargs = {…}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_modules: Vec<String>,
    /// The vLLM version the log prints, as printed: `vLLM API server
    /// version X` (2024-2025), `vLLM server version X, serving model …`
    /// and the start-up logo's `version X` (2026), `Initializing a V1 LLM
    /// engine (vX) with config` (also `an LLM engine`, `a V0 LLM engine`),
    /// `Launching vLLM (vX) headless`.
    #[serde(default)]
    pub version: Option<String>,
    /// `Estimated CUDA graph memory: X GiB total` (vLLM 0.18 on): what
    /// vLLM measured its CUDA graphs to take on one GPU before sizing the
    /// KV cache; rank 0's where the lines carry rank tags (ranks differ a
    /// little).
    #[serde(default)]
    pub cudagraph_estimate_bytes: Option<u64>,
    /// Whether vLLM took that estimate off the KV cache: `true` from
    /// `CUDA graph memory profiling is enabled`, `false` from `CUDA graph
    /// memory profiling is disabled` (0.20 on) and `In v0.19, CUDA graph
    /// memory profiling will be enabled by default` (0.18-0.19, where it
    /// was off unless asked for); `None` where the log says neither
    /// ([`super::vllm_subtracts_cudagraph_estimate`] then goes by the
    /// version).
    #[serde(default)]
    pub cudagraph_estimate_subtracted: Option<bool>,
    /// `enable_prefix_caching` as set (`non-default args`, an args line):
    /// `True`/`False`; `None`: the release's default.
    #[serde(default)]
    pub enable_prefix_caching: Option<bool>,
    /// `kv_cache_dtype` as set or as the engine line prints it (`auto`,
    /// `fp8`, `fp8_e5m2`, …).
    #[serde(default)]
    pub kv_cache_dtype: Option<String>,
    /// The pools the token capacity counts, as the capacity line names
    /// them (`GPU`, `XPU`, `CPU`; `GPU + host` where vLLM 0.32+'s HiSparse
    /// keeps part of the cache in host memory), from 0.30's `<pools> KV
    /// cache size: N tokens, Maximum concurrency …`.
    #[serde(default)]
    pub kv_cache_pools: Option<String>,
}

impl VllmLog {
    /// Whether anything vLLM-like was found.
    pub fn is_empty(&self) -> bool {
        self.weights_bytes.is_none()
            && self.kv_cache_bytes.is_none()
            && self.kv_cache_tokens.is_none()
            && self.gpu_blocks.is_none()
            && self.max_concurrency.is_none()
    }
}

/// The quoted entries of the list after `llm_int8_skip_modules` on a line
/// that prints a bitsandbytes config, as a Python dict (`'…': ['lm_head',
/// 'model.layers.0.mlp']`) or as JSON (`"…": ["lm_head"]`); `None` when
/// the line has no such list (or it is cut before its `]`).
fn skip_modules(line: &str) -> Option<Vec<String>> {
    const KEY: &str = "llm_int8_skip_modules";
    let rest = &line[line.find(KEY)? + KEY.len()..];
    let rest = rest.trim_start_matches(['\'', '"', ':', '=', ' ']);
    let mut body = rest.strip_prefix('[')?;
    let mut out = Vec::new();
    loop {
        body = body.trim_start_matches([' ', ',']);
        let quote = body.chars().next()?;
        if quote == ']' {
            return Some(out);
        }
        if quote != '\'' && quote != '"' {
            return None;
        }
        let end = body[1..].find(quote)?;
        out.push(body[1..1 + end].to_string());
        body = &body[2 + end..];
    }
}

/// `14.9888 GB`, `23.58GiB`, `0.35 GiB` → bytes (GiB either way).
fn gib(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches(['.', ',', ';', ')']);
    let num = s
        .strip_suffix("GiB")
        .or_else(|| s.strip_suffix("GB"))?
        .trim();
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && (0.0..1e6).contains(&v)).then(|| (v * 1_073_741_824.0).round() as u64)
}

/// The text after `key` up to the next `stop` character.
fn after<'a>(line: &'a str, key: &str, stops: &[char]) -> Option<&'a str> {
    let i = line.find(key)?;
    let rest = &line[i + key.len()..];
    Some(match rest.find(|c| stops.contains(&c)) {
        Some(j) => &rest[..j],
        None => rest,
    })
}

fn count(s: &str) -> Option<u64> {
    s.trim().replace(',', "").parse().ok()
}

/// The count of `# <device> blocks: N` for any device but the CPU (whose
/// blocks are swap space): `GPU`, `cuda`, `CUDA`, `rocm`, `xpu`, ….
fn device_blocks(line: &str) -> Option<&str> {
    let mut rest = line;
    while let Some(i) = rest.find("# ") {
        let tail = &rest[i + 2..];
        if let Some((device, after_word)) = tail.split_once(' ')
            && let Some(v) = after_word.strip_prefix("blocks: ")
            && !device.eq_ignore_ascii_case("CPU")
            && !device.is_empty()
            && device.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Some(v.split([',', ' ']).next().unwrap_or(v));
        }
        rest = tail;
    }
    None
}

/// The value of `'key': value` in a printed Python dict (vLLM's
/// `non-default args: {…}`), quotes removed.
fn dict_arg<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let k = format!("'{key}': ");
    let at = line.find(k.as_str())? + k.len();
    let rest = &line[at..];
    let v = match rest.find([',', '}']) {
        Some(j) => &rest[..j],
        None => rest,
    };
    Some(v.trim().trim_matches('\''))
}

/// The version a vLLM start-up line prints (see [`VllmLog::version`]).
fn vllm_version(line: &str) -> Option<&str> {
    let v = after(line, "vLLM API server version ", &[' ', ','])
        .or_else(|| after(line, "vLLM server version ", &[' ', ',']))
        .or_else(|| after(line, " LLM engine (v", &[')']))
        .or_else(|| after(line, "Launching vLLM (v", &[')']))
        .or_else(|| {
            // The logo of 2026 releases: `▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.21.0`.
            line.contains('█')
                .then(|| after(line, " version ", &[' ']))
                .flatten()
        })?;
    let v = v.trim();
    (!v.is_empty() && v.len() <= 64 && v.starts_with(|c: char| c.is_ascii_digit())).then_some(v)
}

/// The worker a vLLM line is tagged with, 0 for the first GPU's: the
/// sum of the ranks its tag names (`(Worker_TP1 pid=…)`,
/// `(Worker_PP1_TP0 pid=…)`, `(Worker_TP0_EP0 pid=…)`, `(VllmWorker
/// rank=1 pid=…)`), 1 for `(VllmWorkerProcess pid=…)` and
/// `(RayWorkerWrapper pid=…)` (the workers other than the driver, which
/// logs untagged); `None` for an untagged line, the engine's or the API
/// server's.
fn worker_rank(line: &str) -> Option<u32> {
    // The first `(Name pid=N)` group: at the line's start before vLLM 0.31,
    // after `VLLM_LOGGING_PREFIX` (or a collector's timestamp) since, when
    // the tag became part of vLLM's log format (`vllm/logger.py`).
    let tag = line
        .match_indices('(')
        .filter_map(|(i, _)| line[i + 1..].split(')').next())
        .find(|t| t.contains(" pid=") || t.starts_with("pid="))?;
    if !tag.contains("Worker") {
        return None;
    }
    if tag.contains("VllmWorkerProcess") || tag.contains("RayWorkerWrapper") {
        return Some(1);
    }
    let mut sum = None;
    // `Worker_DP1_PP0_PCP1_TP2_DCP0_EP3` (0.33): every group but DCP,
    // which subdivides TP.
    for key in ["TP", "PP", "PCP", "DP", "EP", "rank="] {
        let mut rest = tag;
        while let Some(i) = rest.find(key) {
            rest = &rest[i + key.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u32>() {
                sum = Some(sum.unwrap_or(0u32).saturating_add(n));
            }
        }
    }
    sum.or(Some(0))
}

/// Read a vLLM start-up log. At most 1 MiB of lines is read.
pub fn parse_vllm_log(text: &str) -> VllmLog {
    let mut l = VllmLog::default();
    // Whether the CUDA-graph estimate kept is rank 0's (or untagged).
    let mut estimate_from_rank0 = false;
    // Likewise the weights (vLLM's second model runner, the default from
    // 0.30, prints them on every rank: every pipeline stage its own).
    let mut weights_from_rank0 = false;
    // The second model runner's weights line of 0.21-0.27 (`Model loading
    // took X GiB and …`, without `memory`): it measured no CUDA-graph
    // estimate then.
    let mut runner_v2_weights = false;
    // `max_model_len` fitted to the memory (`Auto-fit max_model_len:
    // reduced from A to B`): B, whatever the config line printed.
    let mut auto_fit_len = None;
    let (mut saw_v0, mut saw_v1) = (false, false);
    for line in log_lines(text) {
        let line = line.as_str();
        let rank0 = worker_rank(line).is_none_or(|r| r == 0);
        // The `non-default args: {…}` dict: its top-level keys only (a
        // draft model's `speculative_config` has keys of its own).
        let nd = |key: &str| match line.find("non-default args: ") {
            Some(at) => dict_top_arg(line[at + "non-default args: ".len()..].trim(), key),
            None => dict_arg(line, key),
        };
        if let Some(v) = vllm_version(line) {
            l.version = Some(v.to_string());
        }
        // `Estimated CUDA graph memory: X GiB total` (the first model
        // runner), else `CUDA graph pool memory: A GiB (actual), E GiB
        // (estimated), …` (both runners, after capture; the second runner,
        // default from 0.30, prints only this one).
        let estimate = after(line, "Estimated CUDA graph memory: ", &['\n'])
            .map(|v| v.trim().trim_end_matches("total").trim())
            .or_else(|| {
                let v = after(line, "CUDA graph pool memory: ", &['\n'])?;
                let (_, rest) = v.split_once("(actual), ")?;
                Some(rest.split(" (estimated)").next()?.trim())
            });
        if let Some(v) = estimate {
            if let Some(b) = gib(v) {
                if rank0 {
                    l.cudagraph_estimate_bytes = Some(b);
                    estimate_from_rank0 = true;
                } else if !estimate_from_rank0 && l.cudagraph_estimate_bytes.is_none() {
                    l.cudagraph_estimate_bytes = Some(b);
                }
            }
        }
        if line.contains("CUDA graph memory profiling is enabled") {
            l.cudagraph_estimate_subtracted = Some(true);
        } else if line.contains("CUDA graph memory profiling is disabled")
            || line.contains("CUDA graph memory profiling will be enabled by default")
        {
            l.cudagraph_estimate_subtracted = Some(false);
        }
        // The utilization those lines print (`The current
        // --gpu-memory-utilization=0.9200 is equivalent to …`; disabled:
        // `increase --gpu-memory-utilization from 0.9000 to …`), also
        // where the user left vLLM's default.
        if let Some(v) = after(line, "current --gpu-memory-utilization=", &[' '])
            .or_else(|| after(line, "--gpu-memory-utilization from ", &[' ']))
        {
            l.gpu_memory_utilization = v.trim().parse().ok().or(l.gpu_memory_utilization);
        }
        if let Some(v) = after(line, "Loading model weights took ", &['\n'])
            .or_else(|| after(line, "Model loading took ", &['\n']))
            .or_else(|| after(line, "model weights take ", &[';']))
        {
            let v = v.split(" and ").next().unwrap_or(v);
            if line.contains("Model loading took ") && !v.contains("memory") {
                runner_v2_weights = true;
            }
            let b = gib(v
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
                .as_str());
            if b.is_some() && (rank0 || !weights_from_rank0) {
                l.weights_bytes = b;
                weights_from_rank0 |= rank0;
            }
        }
        // `Free memory on device (F/T GiB) on startup. Desired GPU memory
        // utilization is (U, R GiB). … Current kv cache memory in use is X
        // GiB.` (INFO from 0.26, every rank), and the refusal `Free memory
        // on device cuda:0 (F/T GiB) on startup is less than desired GPU
        // memory utilization (U, R GiB)`.
        if line.contains("Free memory on device") && line.contains(" on startup") {
            if let Some(total) = after(line, "Free memory on device", &[')'])
                .and_then(|v| v.split_once('(').map(|(_, r)| r))
                .and_then(|v| v.split_once('/').map(|(_, t)| t))
            {
                l.total_gpu_memory_bytes = l.total_gpu_memory_bytes.or(gib(total));
            }
            if let Some(u) = after(line, "memory utilization is (", &[','])
                .or_else(|| after(line, "desired GPU memory utilization (", &[',']))
            {
                l.gpu_memory_utilization = l.gpu_memory_utilization.or(u.trim().parse().ok());
            }
            if rank0 && let Some(v) = after(line, "Current kv cache memory in use is ", &['\n']) {
                l.kv_cache_bytes = l.kv_cache_bytes.or(gib(v));
            }
        }
        // `--kv-cache-memory-bytes` given: `Initial free memory F GiB,
        // reserved K GiB memory for KV Cache as specified by
        // kv_cache_memory_bytes config and skipped memory profiling.`
        if let Some(v) = after(line, "reserved ", &['\n'])
            && line.contains("for KV Cache as specified by kv_cache_memory_bytes")
        {
            let k = v.split(" memory for KV Cache").next().unwrap_or("");
            l.kv_cache_bytes = gib(k).or(l.kv_cache_bytes);
        }
        // Multimodal decoding on the GPU (0.25+): `… KV cache memory
        // reduced to X GiB.` after the `Available` line; what sizes the
        // cache.
        if let Some(v) = after(line, "KV cache memory reduced to ", &['\n']) {
            l.kv_cache_bytes = gib(v).or(l.kv_cache_bytes);
        }
        if let Some(v) = after(line, "Auto-fit max_model_len: reduced from ", &['\n']) {
            auto_fit_len = v
                .split_once(" to ")
                .and_then(|(_, b)| count(b.split_whitespace().next().unwrap_or("")));
        }
        // The V1 refusal: `To serve at least one request with the model's
        // max seq len (N), (X GiB KV cache is needed, which is larger than
        // the available KV cache memory (Y GiB). Based on the available
        // memory, the estimated maximum model length is M.` (`models's`
        // in 0.20-0.21).
        if let Some(v) = after(line, "max seq len (", &[')'])
            && line.contains("To serve at least one request with the model")
        {
            l.max_model_len = count(v).or(l.max_model_len);
            if let Some(a) = after(line, "available KV cache memory (", &[')']) {
                l.kv_cache_bytes = gib(a).or(l.kv_cache_bytes);
            }
            l.max_tokens_in_kv_cache =
                after(line, "estimated maximum model length is ", &['.', ' '])
                    .and_then(count)
                    .or(l.max_tokens_in_kv_cache);
        }
        if let Some(v) = after(line, "Available KV cache memory: ", &['\n'])
            .or_else(|| after(line, "kv_cache_size=", &[' ']))
            .or_else(|| after(line, "reserved for KV Cache is ", &['\n']))
        {
            l.kv_cache_bytes = gib(v
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
                .as_str())
            .or(l.kv_cache_bytes);
        }
        if let Some(v) = skip_modules(line) {
            l.skip_modules = v;
        }
        // `GPU KV cache size: N tokens` (to 0.27), `<pools> KV cache
        // size: N tokens, Maximum concurrency …` (0.30 on: `GPU`, `XPU`,
        // `CPU`, `GPU + host`).
        if let Some(at) = line.find(" KV cache size: ")
            && let Some(n) = after(&line[at..], " KV cache size: ", &['t']).and_then(count)
            && line[at..].contains(" tokens")
        {
            l.kv_cache_tokens = Some(n);
            let head = &line[..at];
            let pools = match head.rfind(" + host") {
                Some(i) if i + " + host".len() == head.len() => {
                    let dev = head[..i].split_whitespace().next_back().unwrap_or("");
                    format!("{dev} + host")
                }
                _ => head
                    .split_whitespace()
                    .next_back()
                    .unwrap_or("")
                    .to_string(),
            };
            if !pools.is_empty() && pools.len() <= 32 {
                l.kv_cache_pools = Some(pools);
            }
        }
        // `# GPU blocks: N` (2023-2025), `# cuda blocks: N` / `# CUDA
        // blocks` / `# rocm blocks: N` (V0 executors of 2025 name the
        // platform's device); `# CPU blocks` is the swap space.
        if let Some(v) = device_blocks(line).or_else(|| after(line, "GPU blocks: ", &[',', ' '])) {
            l.gpu_blocks = count(v).or(l.gpu_blocks);
        }
        if let Some(v) = after(line, "Maximum concurrency for ", &['\n']) {
            if let Some((tokens, x)) = v.split_once(" tokens per request: ") {
                if let (Some(t), Ok(x)) = (count(tokens), x.trim().trim_end_matches('x').parse()) {
                    l.max_concurrency = Some((t, x));
                }
            }
        }
        if let Some(v) = after(line, "total_gpu_memory=", &[' '])
            .or_else(|| after(line, "total_gpu_memory (", &[')']))
        {
            l.total_gpu_memory_bytes = gib(v).or(l.total_gpu_memory_bytes);
        }
        if let Some(v) = after(line, "gpu_memory_utilization=", &[' ', ','])
            .or_else(|| after(line, "gpu_memory_utilization (", &[')']))
            .or_else(|| nd("gpu_memory_utilization"))
        {
            l.gpu_memory_utilization = v.trim().parse().ok().or(l.gpu_memory_utilization);
        }
        // The engine config line (`… with config: model=…, dtype=…,
        // quantization=…`) and the `non-default args: {…}` dict of 2025+.
        if let Some(v) = server_arg(line, "dtype").or_else(|| nd("dtype")) {
            l.dtype = Some(v.to_string());
        }
        if let Some(v) = server_arg(line, "quantization").or_else(|| nd("quantization")) {
            l.quantization = Some(v.to_string());
        }
        // (Not a DEBUG start-up `memory snapshot`, whose `non_torch_memory=`
        // is the CUDA context.)
        if let Some(v) = after(line, "non_torch_memory=", &[' '])
            .filter(|_| !line.contains("memory snapshot"))
            .or_else(|| after(line, "non_torch_memory takes ", &[';']))
            .or_else(|| after(line, "non-torch forward increase memory: ", &[';', '\n']))
        {
            l.non_torch_bytes = gib(v).or(l.non_torch_bytes);
        }
        if let Some(v) = after(line, "PyTorch activation peak memory takes ", &[';'])
            .or_else(|| after(line, "torch peak memory increase: ", &[';']))
        {
            l.activation_peak_bytes = gib(v).or(l.activation_peak_bytes);
        }
        if let Some(v) =
            nd("enable_prefix_caching").or_else(|| server_arg(line, "enable_prefix_caching"))
        {
            match v {
                "True" | "true" => l.enable_prefix_caching = Some(true),
                "False" | "false" => l.enable_prefix_caching = Some(false),
                _ => {}
            }
        }
        if let Some(v) = nd("kv_cache_dtype").or_else(|| server_arg(line, "kv_cache_dtype"))
            && !v.is_empty()
            && v.len() <= 32
        {
            l.kv_cache_dtype = Some(v.to_string());
        }
        if let Some(v) = nd("max_num_seqs").or_else(|| server_arg(line, "max_num_seqs")) {
            l.max_num_seqs = count(v).or(l.max_num_seqs);
        }
        if let Some(v) = nd("max_num_batched_tokens")
            .or_else(|| server_arg(line, "max_num_batched_tokens"))
            .or_else(|| after(line, "enabled with max_num_batched_tokens=", &[',', ' ']))
        {
            l.max_num_batched_tokens = count(v.trim_end_matches('.')).or(l.max_num_batched_tokens);
        }
        if let Some(v) = after(line, "max_seq_len=", &[',', ' ']) {
            l.max_model_len = count(v).or(l.max_model_len);
        }
        if let Some(v) =
            after(line, "tensor_parallel_size=", &[',', ' ']).or_else(|| nd("tensor_parallel_size"))
        {
            l.tensor_parallel_size = count(v).or(l.tensor_parallel_size);
        }
        if let Some(v) = after(line, "pipeline_parallel_size=", &[',', ' '])
            .or_else(|| nd("pipeline_parallel_size"))
        {
            l.pipeline_parallel_size = count(v)
                .filter(|n| *n > 0 && *n < 65_536)
                .or(l.pipeline_parallel_size);
        }
        // A V1 mark anywhere wins (vllm-ascend's V1 worker logs from its
        // own `worker.py`).
        if line.contains("Memory profiling results")
            || line.contains("# CPU blocks")
            || line.contains("[worker.py:")
        {
            saw_v0 = true;
        } else if line.contains(" KV cache size:") && line.contains(" tokens")
            || line.contains("V1 LLM engine")
            || line.contains("gpu_model_runner.py")
            || line.contains("EngineCore")
        {
            saw_v1 = true;
        }
        if let Some(v) = after(line, "The model's max seq len (", &[')']) {
            l.max_model_len = count(v).or(l.max_model_len);
            l.max_tokens_in_kv_cache = after(line, "stored in KV cache (", &[')']).and_then(count);
        }
    }
    l.engine = if saw_v1 {
        Some("v1".into())
    } else if saw_v0 {
        Some("v0".into())
    } else {
        None
    };
    if let Some(n) = auto_fit_len {
        l.max_model_len = Some(n);
    }
    // 0.21-0.27's second model runner measured no CUDA-graph estimate
    // (`profile_cudagraph_memory` returned 0) and printed neither the
    // estimate nor the enabled line: nothing was taken off.
    let v2_era = l
        .version
        .as_deref()
        .and_then(super::vllm::parse_version)
        .is_some_and(|v| ((0, 21, 0)..(0, 28, 0)).contains(&v));
    if runner_v2_weights
        && v2_era
        && l.cudagraph_estimate_subtracted.is_none()
        && l.cudagraph_estimate_bytes.is_none()
    {
        l.cudagraph_estimate_subtracted = Some(false);
    }
    l
}

/// What an SGLang start-up log says (one GPU's figures: every tensor-parallel
/// rank prints the same lines; the first rank's are kept). SGLang's "GB"
/// is 2^30 bytes (`get_available_gpu_memory` divides by `1 << 30`;
/// `memory_pool.py`: `GB = 1024 * 1024 * 1024`). Spellings read, by release:
/// `Load weight end. type=…, dtype=…, avail mem=X GB` (2024–early 2025),
/// then `…, mem usage=Y GB.` and `Load weight end. elapsed=… s, type=…`
/// (2026); `KV Cache is allocated. K size: X GB, V size: Y GB.` (2024–early
/// 2025), then `#tokens: N, K size: …, V size: …` and, for MLA models,
/// `#tokens: N, KV size: X GB`; `max_total_num_tokens=N, … context_len=C`
/// with or without `chunked_prefill_size=` and `available_gpu_mem=`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SglangLog {
    /// Free GPU memory before the weights load (`Load weight begin. avail mem=`).
    pub avail_before_weights_bytes: Option<u64>,
    /// Free GPU memory after the weights load (`Load weight end. … avail mem=`).
    pub avail_after_weights_bytes: Option<u64>,
    /// Weights on one GPU: `mem usage=` of `Load weight end`, else the drop
    /// in free memory across the load.
    pub weights_bytes: Option<u64>,
    /// Key cache of one GPU (`K size:`).
    pub k_bytes: Option<u64>,
    /// Value cache of one GPU (`V size:`).
    pub v_bytes: Option<u64>,
    /// The whole KV pool of one GPU: K + V, or `KV size:` (MLA).
    pub kv_cache_bytes: Option<u64>,
    /// Tokens the pool holds: `#tokens:` of the allocation line, else
    /// `max_total_num_tokens=`.
    pub kv_cache_tokens: Option<u64>,
    /// Sliding-window pools (`Use sliding window memory pool.
    /// full_layer_tokens=F, swa_layer_tokens=S`): (F, S).
    pub sliding_window_tokens: Option<(u64, u64)>,
    /// State-space (Mamba/GDN) cache of one GPU: `conv_state size` +
    /// `ssm_state size` of `Mamba Cache is allocated`.
    pub mamba_cache_bytes: Option<u64>,
    /// `Using KV cache dtype: torch.X` (X), else the server arguments'
    /// `kv_cache_dtype`.
    pub kv_cache_dtype: Option<String>,
    /// `mem_fraction_static=` of the server arguments.
    pub mem_fraction_static: Option<f64>,
    /// `tp_size=` of the server arguments, else the number of ranks whose
    /// `TPn]` tags the lines carry.
    pub tp_size: Option<u64>,
    /// `context_len=` of the `max_total_num_tokens` line, else the server
    /// arguments' `context_length`.
    pub context_len: Option<u64>,
    /// `max_running_requests=` of the `max_total_num_tokens` line.
    pub max_running_requests: Option<u64>,
    /// `model_path=` of the server arguments.
    pub model_path: Option<String>,
    /// The weights' dtype `Load weight end` prints (`dtype=torch.bfloat16`),
    /// else the server arguments' `dtype` (`auto` there says nothing).
    #[serde(default)]
    pub dtype: Option<String>,
    /// The server arguments' `quantization` (`None`: none).
    #[serde(default)]
    pub quantization: Option<String>,
}

impl SglangLog {
    /// Whether anything SGLang-like was found.
    pub fn is_empty(&self) -> bool {
        self.kv_cache_bytes.is_none()
            && self.kv_cache_tokens.is_none()
            && self.avail_after_weights_bytes.is_none()
    }

    /// KV bytes one token takes on one GPU (the pool over its tokens).
    pub fn kv_bytes_per_token(&self) -> Option<f64> {
        match (self.kv_cache_bytes, self.kv_cache_tokens) {
            (Some(b), Some(t)) if t > 0 => Some(b as f64 / t as f64),
            _ => None,
        }
    }
}

/// `27.13 GB`, `0.13GB` → bytes (SGLang's GB is 2^30).
fn sglang_gb(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches(['.', ',', ';', ')']);
    let num = s.strip_suffix("GB")?.trim();
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && (0.0..1e6).contains(&v)).then(|| (v * 1_073_741_824.0).round() as u64)
}

/// The value of `key=` in a `ServerArgs(…)` dump: up to the next `, ` or
/// `)`, with quotes removed.
fn server_arg<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    // Match the key at an argument boundary (`, key=` or `(key=`).
    let at = [format!(", {key}="), format!("({key}=")]
        .iter()
        .filter_map(|k| line.find(k.as_str()).map(|i| i + k.len()))
        .min()?;
    let rest = &line[at..];
    let v = match rest.find([',', ')']) {
        Some(j) => &rest[..j],
        None => rest,
    };
    Some(v.trim().trim_matches('\''))
}

/// The end of a quoted string that opens at `b[open]` (a `'` or `"`),
/// backslash escapes skipped: the index of the closing quote.
fn quote_end(b: &[u8], open: usize) -> Option<usize> {
    let q = b[open];
    let mut j = open + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            c if c == q => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// The value of the top-level `'key': value` of a printed Python dict
/// that `text` starts with (SGLang 0.5.20+'s `server_args={…}`), quotes
/// removed. Keys of nested dicts (`'model_loader_extra_config': {'tp_size':
/// 99}`) and text inside strings are not matched; `None` where the dict is
/// cut short before the key.
fn dict_top_arg<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut want_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let end = quote_end(b, i)?;
                if depth == 1 && want_key {
                    want_key = false;
                    if &text[i + 1..end] == key {
                        let rest = text[end + 1..].strip_prefix(':')?.trim_start();
                        return Some(dict_value(rest));
                    }
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                want_key = depth == 1;
            }
            b'}' | b']' | b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
            }
            b',' if depth == 1 => want_key = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// A printed Python value at the start of `rest`: a quoted string's text,
/// else up to the next `,` or closing bracket at its own level.
fn dict_value(rest: &str) -> &str {
    let b = rest.as_bytes();
    if matches!(b.first(), Some(b'\'' | b'"')) {
        return match quote_end(b, 0) {
            Some(end) => &rest[1..end],
            None => &rest[1..],
        };
    }
    let mut depth = 0usize;
    for (i, c) in b.iter().enumerate() {
        match c {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' if depth == 0 => return rest[..i].trim(),
            b'}' | b']' | b')' => depth -= 1,
            b',' if depth == 0 => return rest[..i].trim(),
            _ => {}
        }
    }
    rest.trim()
}

/// Read an SGLang start-up log. At most 1 MiB of lines is read.
pub fn parse_sglang_log(text: &str) -> SglangLog {
    let mut l = SglangLog::default();
    let mut tp_logged = None;
    let mut max_rank: Option<u64> = None;
    let first = set_first;
    for line in log_lines(text) {
        let line = line.as_str();
        // The server arguments: `server_args=ServerArgs(key=value, …)` to
        // 0.5.16, `server_args={'key': value, …}` (a dict of the resolved
        // arguments) from 0.5.20.
        let args = if line.contains("server_args=ServerArgs(") {
            Some((line, false))
        } else {
            line.find("server_args={")
                .map(|at| (&line[at + "server_args=".len()..], true))
        };
        if let Some((text, dict)) = args {
            let arg = |k: &str| {
                if dict {
                    dict_top_arg(text, k)
                } else {
                    server_arg(text, k)
                }
            };
            l.mem_fraction_static = arg("mem_fraction_static")
                .and_then(|v| v.parse().ok())
                .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f <= 1.0);
            tp_logged = arg("tp_size").and_then(count);
            if l.context_len.is_none() {
                l.context_len = arg("context_length").and_then(count);
            }
            if l.kv_cache_dtype.is_none() {
                l.kv_cache_dtype = arg("kv_cache_dtype").map(str::to_string);
            }
            l.model_path = arg("model_path").map(str::to_string);
            l.quantization = arg("quantization").map(str::to_string);
            if l.dtype.is_none() {
                l.dtype = arg("dtype").filter(|d| *d != "auto").map(str::to_string);
            }
            continue;
        }
        // `[2025-03-08 12:29:21 TP3] …`: the rank tag (`TP3 EP3`, `DP0 TP3` too).
        if let Some(tag) = line
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|t| t.0)
        {
            if let Some(n) = tag
                .split_whitespace()
                .find_map(|w| w.strip_prefix("TP").and_then(|n| n.parse::<u64>().ok()))
                .filter(|n| *n < 65_536)
            {
                max_rank = Some(max_rank.map_or(n, |m: u64| m.max(n)));
            }
        }
        if line.contains("Load weight begin.") {
            first(
                &mut l.avail_before_weights_bytes,
                after(line, "avail mem=", &[',']).and_then(sglang_gb),
            );
        }
        if line.contains("Load weight end.") {
            if let Some(d) = after(line, "dtype=", &[',']) {
                l.dtype = Some(d.trim().to_string());
            }
            first(
                &mut l.avail_after_weights_bytes,
                after(line, "avail mem=", &[',']).and_then(sglang_gb),
            );
            first(
                &mut l.weights_bytes,
                after(line, "mem usage=", &[',']).and_then(sglang_gb),
            );
        }
        if line.contains("KV Cache is allocated.") && l.kv_cache_bytes.is_none() {
            first(
                &mut l.kv_cache_tokens,
                after(line, "#tokens: ", &[',']).and_then(count),
            );
            let k = after(line, "K size: ", &[',']).and_then(sglang_gb);
            let v = after(line, "V size: ", &[',']).and_then(sglang_gb);
            let kv = after(line, "KV size: ", &[',']).and_then(sglang_gb);
            l.k_bytes = k;
            l.v_bytes = v;
            l.kv_cache_bytes = match (k, v) {
                (Some(k), Some(v)) => Some(k + v),
                _ => kv,
            };
        }
        if line.contains("Mamba Cache is allocated.") && l.mamba_cache_bytes.is_none() {
            let conv = after(line, "conv_state size: ", &[',']).and_then(sglang_gb);
            let ssm = after(line, "ssm_state size: ", &[',']).and_then(sglang_gb);
            l.mamba_cache_bytes = match (conv, ssm) {
                (Some(c), Some(s)) => Some(c + s),
                _ => None,
            };
        }
        if let (Some(f), Some(s)) = (
            after(line, "full_layer_tokens=", &[',']).and_then(count),
            after(line, "swa_layer_tokens=", &[',']).and_then(count),
        ) {
            l.sliding_window_tokens.get_or_insert((f, s));
        }
        if let Some(v) = after(line, "Using KV cache dtype: ", &[' ']) {
            l.kv_cache_dtype = Some(v.trim().trim_start_matches("torch.").to_string());
        }
        if let Some(v) = after(line, "max_total_num_tokens=", &[',']) {
            first(&mut l.kv_cache_tokens, count(v));
            if let Some(c) = after(line, "context_len=", &[',']).and_then(count) {
                l.context_len = Some(c);
            }
            first(
                &mut l.max_running_requests,
                after(line, "max_running_requests=", &[',']).and_then(count),
            );
        }
        if l.weights_bytes.is_none()
            && let (Some(b), Some(a)) = (l.avail_before_weights_bytes, l.avail_after_weights_bytes)
        {
            l.weights_bytes = b.checked_sub(a);
        }
    }
    l.tp_size = tp_logged.or(max_rank.map(|m| m + 1));
    l
}

/// What a TensorRT-LLM start-up log says (the C++ runtime's
/// `[TensorRT-LLM][INFO]` lines, one GPU's figures; every rank prints the
/// same and the first is kept). Spellings read, by release: `Loaded engine
/// size: N MiB` (the engine: weights and TensorRT's own buffers), `Allocate N
/// bytes for k/v cache.` and `Using N tokens in paged KV cache.` (2023–24),
/// `[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N).`
/// (2024 on), `Max KV cache blocks per sequence: … tokens per block=T,
/// primary blocks=B`, `Memory usage when calculating max tokens in paged kv
/// cache: total: X GiB, available: Y GiB`, `MPI size: N, rank: R`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrtllmLog {
    /// `Loaded engine size` of one rank.
    pub engine_bytes: Option<u64>,
    /// The KV cache of one GPU.
    pub kv_cache_bytes: Option<u64>,
    /// Tokens the KV cache holds.
    pub kv_cache_tokens: Option<u64>,
    /// Tokens per block.
    pub tokens_per_block: Option<u64>,
    /// Primary (GPU) blocks.
    pub primary_blocks: Option<u64>,
    /// Memory the GPU has, as the runtime saw it when sizing the cache.
    pub total_bytes: Option<u64>,
    /// Memory free when the cache was sized (after the engine and buffers).
    pub available_bytes: Option<u64>,
    /// Ranks (`MPI size`; the PyTorch backend's logs, without one: the
    /// highest `[RANK n]` + 1).
    pub world_size: Option<u64>,
    /// The PyTorch backend's weights on one rank (`Use X GB for model
    /// weights.`, 1.0 on; `Rank 0 uses X GB for model weights.`, 0.20; GB
    /// there is GiB).
    #[serde(default)]
    pub weights_bytes: Option<u64>,
    /// The PyTorch backend's own KV bytes per token of one rank (`kv size
    /// is N`, `kv size per token is N [bytes/token]` of its profiling line).
    #[serde(default)]
    pub logged_kv_bytes_per_token: Option<u64>,
    /// `free_gpu_memory_fraction` as the profiling line prints it
    /// (`fraction is set 0.8999999761581421`: float32), to 4 decimals.
    #[serde(default)]
    pub free_gpu_memory_fraction: Option<f64>,
    /// The real cache's pools, one per attention window (the C++
    /// `BlockManager` prints `Max KV cache blocks per sequence: N [window
    /// size=W], tokens per block=T, primary blocks=B, …` once per window,
    /// `kvCacheManager.cpp`): two or more for a model with variable
    /// sliding windows (VSWA: Gemma 2/3, gpt-oss), where
    /// [`Self::primary_blocks`] and the allocation line's token count are
    /// the sum over the windows and no one window's per-token size is the
    /// allocation's bytes over its tokens. At most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kv_windows: Vec<TrtllmKvWindow>,
}

/// One attention window's KV pool of a TensorRT-LLM cache
/// ([`TrtllmLog::kv_windows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrtllmKvWindow {
    /// The window, in tokens (`window size=`).
    pub window_tokens: u64,
    /// Blocks one sequence may hold in this pool (`blocks per sequence:`).
    pub blocks_per_sequence: u64,
    /// The pool's GPU blocks (`primary blocks=`).
    pub primary_blocks: u64,
}

impl TrtllmLog {
    /// Whether the cache has pools of more than one attention window
    /// (VSWA): its bytes over its tokens are then no one layer's size.
    pub fn variable_windows(&self) -> bool {
        self.kv_windows.len() > 1
    }

    /// Whether anything TensorRT-LLM-like was found.
    pub fn is_empty(&self) -> bool {
        self.kv_cache_bytes.is_none()
            && self.kv_cache_tokens.is_none()
            && self.engine_bytes.is_none()
            && self.weights_bytes.is_none()
    }

    /// KV bytes one token takes on one GPU.
    pub fn kv_bytes_per_token(&self) -> Option<f64> {
        match (self.kv_cache_bytes, self.kv_cache_tokens) {
            (Some(b), Some(t)) if t > 0 => Some(b as f64 / t as f64),
            _ => None,
        }
    }
}

/// Read a TensorRT-LLM start-up log. At most 1 MiB of lines is read.
pub fn parse_trtllm_log(text: &str) -> TrtllmLog {
    let mut l = TrtllmLog::default();
    let first = set_first;
    let mut max_rank: Option<u64> = None;
    // The window lines of the cache being built; kept once its allocation
    // line is read (a draft model's cache, built after, prints its own).
    let mut windows_done = false;
    for line in log_lines(text) {
        let line = line.as_str();
        // The C++ runtime's `[TensorRT-LLM][INFO]` lines and the PyTorch
        // backend's `[TRT-LLM] [I]` / `[TRT-LLM] [RANK n] [I]` ones.
        if !line.contains("TensorRT-LLM") && !line.contains("[TRT-LLM]") {
            continue;
        }
        let rank = after(line, "[RANK ", &[']']).and_then(count);
        if let Some(r) = rank.filter(|r| *r < 65_536) {
            max_rank = Some(max_rank.map_or(r, |m| m.max(r)));
        }
        let rank0 = rank.is_none_or(|r| r == 0);
        // The PyTorch backend sizes a temporary cache for its profiling
        // run first, then the real one after these lines: what the
        // temporary cache printed is not the cache.
        if line.contains("Peak memory during memory usage profiling")
            || line.contains("Estimated max memory in KV cache")
            || line.contains("Estimated max tokens in KV cache")
        {
            if rank0 && line.contains("Peak memory during memory usage profiling") {
                l.logged_kv_bytes_per_token = after(line, "kv size per token is ", &['.', ' '])
                    .or_else(|| after(line, "kv size is ", &['.', ' ', ',']))
                    .and_then(count)
                    .or(l.logged_kv_bytes_per_token);
                l.free_gpu_memory_fraction = after(line, "fraction is set ", &[',', ' '])
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1.0)
                    .map(|f| (f * 1e4).round() / 1e4)
                    .or(l.free_gpu_memory_fraction);
                l.total_bytes = after(line, "device total memory ", &[','])
                    .and_then(gib)
                    .or(l.total_bytes);
            }
            // Rank 0's (or an unranked) profiling line: other ranks'
            // arrive interleaved, after rank 0's real cache maybe.
            if rank0 {
                l.kv_cache_bytes = None;
                l.kv_cache_tokens = None;
                l.primary_blocks = None;
                l.kv_windows.clear();
                windows_done = false;
            }
            continue;
        }
        if !windows_done
            && let Some(w) = after(line, "[window size=", &[']']).and_then(count)
            && let Some(b) = after(line, "blocks per sequence: ", &[' ', '[']).and_then(count)
            && let Some(p) = after(line, "primary blocks=", &[',']).and_then(count)
            && l.kv_windows.len() < 64
            && !l.kv_windows.iter().any(|x| x.window_tokens == w)
        {
            l.kv_windows.push(TrtllmKvWindow {
                window_tokens: w,
                blocks_per_sequence: b,
                primary_blocks: p,
            });
        }
        if rank0
            && let Some(v) = after(line, "Use ", &['\n'])
                .filter(|_| line.contains("for model weights"))
                .or_else(|| after(line, " uses ", &['\n']).filter(|_| line.contains("Rank 0 uses")))
        {
            let v = v.split(" for model weights").next().unwrap_or(v);
            first(&mut l.weights_bytes, gib(v));
        }
        // Early 2024: `Max tokens in paged KV cache: N. Allocating B bytes.`
        if let Some(v) = after(line, "Max tokens in paged KV cache: ", &['.']) {
            first(&mut l.kv_cache_tokens, count(v));
            first(
                &mut l.kv_cache_bytes,
                after(line, "Allocating ", &[' ']).and_then(count),
            );
        }
        // The Python KV cache manager V2 (opt-in; Gemma 4 and some hybrid
        // models in 2026): `KV cache manager v2 device quota set to XGiB`,
        // its only size line.
        if let Some(v) = after(line, "KV cache manager v2 device quota set to ", &['\n']) {
            first(&mut l.kv_cache_bytes, gib(v));
        }
        // 2024-early 2025: `Number of blocks in KV cache primary pool: N`.
        if let Some(v) = after(
            line,
            "Number of blocks in KV cache primary pool: ",
            &[',', ' '],
        ) {
            first(&mut l.primary_blocks, count(v));
        }
        if let Some(v) = after(line, "Loaded engine size: ", &['\n']) {
            first(&mut l.engine_bytes, mib(v));
        }
        if let Some(v) = after(line, "Allocate ", &[' ']) {
            if line.contains("bytes for k/v cache") {
                first(&mut l.kv_cache_bytes, count(v));
            }
        }
        if let Some(v) = after(line, "Using ", &[' ']) {
            if line.contains("tokens in paged KV cache") {
                first(&mut l.kv_cache_tokens, count(v));
            }
        }
        if let Some(v) = after(line, "] Allocated ", &['f']) {
            if line.contains("for max tokens in paged KV cache") {
                let tokens = after(line, "paged KV cache (", &[')']).and_then(count);
                // The C++ lines carry no rank: with several ranks, one still
                // profiling may print its temporary cache after rank 0's
                // real one, which is the larger (every rank's real cache
                // holds the same tokens: the ranks agree on the minimum).
                let larger = max_rank.is_some_and(|m| m > 0)
                    && matches!((tokens, l.kv_cache_tokens), (Some(t), Some(k)) if t > k);
                if larger {
                    l.kv_cache_bytes = gib(v);
                    l.kv_cache_tokens = tokens;
                } else {
                    first(&mut l.kv_cache_bytes, gib(v));
                    first(&mut l.kv_cache_tokens, tokens);
                }
                windows_done = true;
            }
        }
        if let Some(v) = after(line, "tokens per block=", &[',']) {
            first(&mut l.tokens_per_block, count(v));
        }
        if let Some(v) = after(line, "Number of tokens per block: ", &['.']) {
            first(&mut l.tokens_per_block, count(v));
        }
        if let Some(v) = after(line, "primary blocks=", &[',']) {
            first(&mut l.primary_blocks, count(v));
        }
        if line.contains("max tokens in paged kv cache") {
            first(
                &mut l.total_bytes,
                after(line, "total: ", &[',']).and_then(gib),
            );
            first(
                &mut l.available_bytes,
                after(line, "available: ", &[',', '\n']).and_then(gib),
            );
        }
        if let Some(v) = after(line, "MPI size: ", &[',']) {
            first(
                &mut l.world_size,
                count(v).filter(|n| *n > 0 && *n < 65_536),
            );
        }
    }
    // Several windows: the cache's blocks are their sum, as
    // `BlockManager::getNumPrimaryBlocks` sums them for the allocation line.
    if l.variable_windows() {
        l.primary_blocks = l
            .kv_windows
            .iter()
            .try_fold(0u64, |a, w| a.checked_add(w.primary_blocks));
    }
    if l.kv_cache_tokens.is_none() {
        if let (Some(b), Some(t)) = (l.primary_blocks, l.tokens_per_block) {
            l.kv_cache_tokens = b.checked_mul(t);
        }
    }
    if l.world_size.is_none() {
        l.world_size = max_rank.map(|m| m + 1);
    }
    l
}

/// The weight format a serving log's dtype and quantization method name
/// (vLLM's `--dtype`/`--quantization`, SGLang's the same): a method wins
/// over the dtype; `None` where neither names a format the planner has
/// (`float32`, a method it does not model) or nothing was logged.
/// Methods: `fp8` (and ModelOpt's, FBGEMM's FP8) → FP8; `awq`, `gptq` and
/// their Marlin kernels → 4-bit groups of 128 (their common export);
/// `bitsandbytes` → NF4 (vLLM loads bitsandbytes checkpoints in 4 bits
/// unless the checkpoint says 8); `mxfp4` → MXFP4; `modelopt_fp4` → NVFP4;
/// `w8a8_int8`, `smoothquant` → INT8.
pub fn serving_quant(
    dtype: Option<&str>,
    quantization: Option<&str>,
) -> Option<super::super::Quant> {
    use super::super::Quant;
    let method = quantization
        .map(|q| q.trim().trim_matches('\'').to_ascii_lowercase())
        .filter(|q| !q.is_empty() && q != "none");
    if let Some(m) = method {
        return match m.as_str() {
            "fp8" | "modelopt" | "fbgemm_fp8" | "ptpc_fp8" => Some(Quant::Fp8),
            "awq" | "awq_marlin" | "gptq" | "gptq_marlin" | "marlin" => Some(Quant::Int4),
            "bitsandbytes" => Some(Quant::Nf4),
            "mxfp4" => Some(Quant::Mxfp4),
            "modelopt_fp4" | "nvfp4" => Some(Quant::Nvfp4),
            "w8a8_int8" | "smoothquant" => Some(Quant::Int8),
            _ => None,
        };
    }
    let d = dtype?.trim().trim_matches('\'').to_ascii_lowercase();
    match d.trim_start_matches("torch.") {
        "bfloat16" => Some(Quant::Bf16),
        "float16" | "half" => Some(Quant::Fp16),
        _ => None,
    }
}
