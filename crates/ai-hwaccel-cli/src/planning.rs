//! `ai-hwaccel model` and `ai-hwaccel plan`: argument handling and output
//! around the library's planner (`ai_hwaccel::plan`).

use ai_hwaccel::plan::inference::{InferencePlan, human_bytes};
use ai_hwaccel::plan::{
    InferenceOptions, KvDtype, LoadedModel, PlanDevice, Quant, RuntimeKind, load_model,
    plan_inference,
};
use ai_hwaccel::{DetectOptions, ProbeOptions};
use anyhow::{Context as _, Result};
use clap::Args;
use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use serde_json::json;

/// The most tokens per sequence `plan` takes (`--context`).
pub const MAX_CONTEXT: u64 = 100_000_000;
/// The most sequences per replica `plan` takes (`--batch`).
pub const MAX_BATCH: u64 = 1_000_000;

/// Arguments of `plan`.
#[derive(Args)]
pub struct PlanArgs {
    /// Catalog name, path (config.json, model directory, .safetensors, index json, .gguf) or size (`7b`).
    pub model: String,
    /// Devices to plan for, e.g. `8xh100-sxm` or `2xa100-80gb,1xl4`, at most
    /// 4096 in all; names as `ai-hwaccel specs` finds them (default: this
    /// machine's accelerators). `[N x]cpu:ID@SIZE` is a CPU of `specs --cpu`
    /// with N sockets and SIZE of memory (`768g`), alone or as the
    /// `--offload` host.
    #[arg(long, value_name = "SPEC", conflicts_with = "registry", value_parser = parse_devices)]
    pub devices: Option<DeviceList>,
    /// Plan for the accelerators of a saved `detect --json` registry (another
    /// node, or a snapshot), with tensor-parallel domains from its topology.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<std::path::PathBuf>,
    /// Weight format (fp32, bf16, fp16, fp8 (block-scaled FP8 too), int8, nvfp4 (FP4 devices
    /// only), mxfp4, int4, nf4; GGUF mixes as llama-quantize makes
    /// them: q8_0, q6_k, q5_k (= q5_k_m), q5_k_s, q4_k (= q4_k_m), q4_k_s, q4_0, iq4_nl, iq4_xs,
    /// q3_k_l, q3_k (= q3_k_m), q3_k_s, iq3_m, iq3_s, iq3_xs, iq3_xxs, q2_k, q2_k_s, iq2_m,
    /// iq2_s, iq2_xs, iq2_xxs, iq1_m, iq1_s, and the legacy q5_1, q5_0, q4_1); default: the
    /// suggested one.
    #[arg(long, value_name = "Q", value_parser = parse_quant)]
    pub quant: Option<Quant>,
    /// KV cache type (fp32, bf16, fp16, fp8, int8); default: the model's 16-bit type.
    #[arg(long, value_name = "Q", value_parser = parse_kv)]
    pub kv_dtype: Option<KvDtype>,
    /// Tokens per sequence, at most 100000000 (default: the model's maximum, at most 4096).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_CONTEXT))]
    pub context: Option<u64>,
    /// Concurrent sequences per replica, at most 1000000.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_BATCH))]
    pub batch: u64,
    /// Prompt tokens of one request, at most 100000000: prefill speed and
    /// time to first token (TTFT) are for a prompt this long (default: the
    /// context). With an output length and no context given, the context is
    /// their sum.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub input_len: Option<u64>,
    /// Tokens one request generates, at most 100000000: each plan then shows
    /// the request's latency (TTFT + the other tokens at the time per output
    /// token its batch serves: above one sequence, the other requests'
    /// prompts prefilled within the decode steps, or under SGLang in
    /// passes of their own between them); with `--tpot-ms`, that
    /// served time per output token is held to the target.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub output_len: Option<u64>,
    /// Target time to first token in milliseconds: layouts that miss it
    /// are rejected. With a target plans rank by decode tokens/s per device.
    #[arg(long, value_name = "MS", value_parser = parse_millis, conflicts_with_all = ["batch", "offload"])]
    pub ttft_ms: Option<f64>,
    /// Target time per output token in milliseconds: each layout runs the
    /// most sequences per replica that meet it (instead of the batch), and
    /// layouts that miss it at one sequence are rejected.
    #[arg(long, value_name = "MS", value_parser = parse_millis, conflicts_with_all = ["batch", "offload"])]
    pub tpot_ms: Option<f64>,
    /// Spread a mixture-of-experts model's routed experts whole over the
    /// tensor-parallel ranks (expert parallelism of size TP, which the
    /// emitted vLLM, SGLang and TensorRT-LLM commands pass on); layouts
    /// whose TP does not divide the experts are rejected.
    #[arg(long)]
    pub expert_parallel: bool,
    /// Plan for attention that writes its scores to memory (llama.cpp with
    /// flash attention off, which llama-bench runs by default): prefill also
    /// pays for writing and reading every score, at the fitted bytes per
    /// score, and the emitted llama.cpp command turns flash attention off.
    #[arg(long)]
    pub unfused_attention: bool,
    /// The runtime's build: its month (YYYY-MM), or a llama.cpp release
    /// tag (b5997, the number `llama-server --version` prints), dated
    /// between the builds whose month the calibration sources print. It
    /// sets the per-layer decode time (llama.cpp's builds have cut it year
    /// by year: fitted on the calibration rows' build dates,
    /// docs/accuracy.md) and which prompt kernels a build ran (int8 MMQ on
    /// NVIDIA from 2024-07, matrix cores on AMD CDNA from 2025-02).
    /// Default: the newest build those rows measure.
    #[arg(long, value_name = "YYYY-MM|bNNNN", value_parser = parse_build_month)]
    pub runtime_build: Option<ai_hwaccel::plan::speed::BuildMonth>,
    /// llama.cpp was built with GGML_CUDA_FORCE_MMQ (LLAMA_CUDA_FORCE_MMQ
    /// before June 2024): quantized prompts always run its MMQ kernels. It
    /// changes the plan where that build's MMQ has no int8 tensor-core
    /// kernels (Volta, or a build before 2024-07): the prompt is planned on
    /// the DP4A kernels.
    #[arg(long)]
    pub cuda_force_mmq: bool,
    /// GGUF levels as llama-quantize makes them with an importance matrix
    /// (`--imatrix`): IQ4_NL and IQ4_XS keep the first eighth of `ffn_down`
    /// at their type, Q4_0 and Q5_0 raise it to Q4_1 and Q5_1 (a GGUF file
    /// whose metadata names its importance matrix is planned so anyway; the
    /// i-quants below IQ4 always are).
    #[arg(long)]
    pub imatrix: bool,
    /// Plan SGLang launched with `--enable-mixed-chunk` (which `--emit
    /// sglang` then passes): the other requests' prompts prefilled within
    /// the decode steps' batches, as vLLM does, instead of in prefill passes
    /// of their own that the decode steps wait for. It changes the served
    /// TPOT; other runtimes mix them anyway.
    #[arg(long)]
    pub mixed_prefill: bool,
    /// Plan a runtime run without CUDA graphs, each kernel of a decode step
    /// launched from the host: vLLM `--enforce-eager`, SGLang's graph
    /// backends `disabled`, llama.cpp with GGML_CUDA_DISABLE_GRAPHS (the
    /// emitted commands pass it). Tensor-parallel vLLM and SGLang plans take
    /// the per-layer decode time fitted on eager runs, llama.cpp plans on
    /// NVIDIA GPUs that of its builds before CUDA graphs; SGLang reserves no
    /// memory for graphs.
    #[arg(long)]
    pub enforce_eager: bool,
    /// llama.cpp's micro-batch (`-ub`, n_ubatch): the tokens of a prompt
    /// computed together (at most n_batch, 2048; default 512). It sizes
    /// the compute buffers and the prompt's passes, each of which reads the
    /// weights (every expert its tokens route to) once; `--emit llama.cpp`
    /// passes it. Read under the llama.cpp rule only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=2048))]
    pub ubatch: Option<u64>,
    /// The ggml backend llama.cpp runs the GPUs with (cuda, hip, metal,
    /// sycl, vulkan, opencl; default: the vendor's own). It changes the
    /// plan where that backend's kernels run a device at another rate:
    /// Vulkan multiplies on a discrete Intel GPU (Arc A- and B-series, Data
    /// Center GPU Max) at its vector engines' rate, not its matrix engines'.
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    pub backend: Option<ai_hwaccel::plan::runtime::GgmlBackend>,
    /// Tokens per prefill step (activation workspace), at most 10000000.
    #[arg(long, value_name = "N", default_value_t = ai_hwaccel::plan::inference::DEFAULT_PREFILL_CHUNK, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub prefill_chunk: u64,
    /// vLLM's `--max-num-seqs` (at most 1000000): the requests its start-up
    /// profile samples at once, so the sampler workspace the vLLM rule
    /// keeps; `--emit vllm` passes it. Default: vLLM's for the GPU (1024 on
    /// GPUs of 70 GiB or more other than the A100, else 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_num_seqs: Option<u64>,
    /// vLLM's `--max-num-batched-tokens` (at most 10000000): the tokens of
    /// its profiled forward pass; `--emit vllm` passes it. Default: vLLM's
    /// for the GPU (8192 on GPUs of 70 GiB or more other than the A100,
    /// 16384 from 160 GiB, else 2048).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_num_batched_tokens: Option<u64>,
    /// SGLang's `--mem-fraction-static` (0 to 1): the share of the memory
    /// free before the weights load that weights and KV pool take;
    /// `--emit sglang` passes it. Default: SGLang 0.5.23's for the GPU,
    /// parallel sizes and model (0.830 on an H100 80GB at TP 1).
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub mem_fraction_static: Option<f64>,
    /// Fraction of device memory the model may use (the rest is runtime reserve).
    #[arg(long, value_name = "F", default_value_t = ai_hwaccel::plan::inference::DEFAULT_MEMORY_UTILIZATION, value_parser = parse_fraction)]
    pub memory_utilization: f64,
    /// Achieved fraction of peak memory bandwidth in decoding, for every
    /// device (default: fitted per device class, runtime and format, see
    /// docs/accuracy.md; 0.6 where no fit applies).
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub decode_efficiency: Option<f64>,
    /// Achieved fraction of peak FLOPS in prefill, for every device
    /// (default: fitted as for decode; 0.5 where no fit applies).
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub prefill_efficiency: Option<f64>,
    /// Achieved fraction of peak memory bandwidth reading the KV cache in
    /// decoding (attention's kernels), for every device (default: fitted
    /// per runtime and attention kind on batched runs, docs/accuracy.md;
    /// the decode fraction where none is fitted).
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub kv_read_efficiency: Option<f64>,
    /// How many ranked plans to show, at most 10000.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_plans: u64,
    /// Rank plans by `latency` (fastest decode per sequence; the default,
    /// for one user at batch 1) or `throughput` (most tokens/s over all
    /// replicas).
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Latency)]
    pub objective: ObjectiveArg,
    /// Whose memory rule to follow: generic (the default), vllm, sglang,
    /// llama.cpp, trtllm. `--memory-utilization` applies to generic and
    /// vllm; the others use their own fraction or margin.
    /// Default: llama.cpp when planning for the host CPU, else generic.
    #[arg(long, value_name = "R", value_parser = parse_runtime)]
    pub runtime: Option<RuntimeKind>,
    /// When planning for this machine's CPU (no accelerator), measure its
    /// memory read bandwidth first (about a second: 1 GiB read by every
    /// usable CPU, best of 3) so decode speeds can be estimated.
    #[arg(long)]
    pub measure: bool,
    /// Print the launch command of the best plan (or `--plan N`) for a
    /// runtime: vllm, sglang, trtllm or llama.cpp (the plan then follows that runtime's
    /// memory rule). With --json, an object {runtime, version, argv, env,
    /// files, notes}.
    #[arg(long, value_name = "R", value_parser = parse_runtime)]
    pub emit: Option<RuntimeKind>,
    /// Which plan `--emit` launches, 1 = the best (at most 10000).
    #[arg(long = "plan", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub plan_index: u64,
    /// Partial offload as llama.cpp runs it (`-ngl`): the most last layers
    /// that fit on the GPUs (of --devices, --registry or this machine; with
    /// several, split over them in order, `--tensor-split`), the rest in host
    /// memory (this machine's, or the registry's); on one GPU a MoE model
    /// keeps the routed experts of its first layers in host memory instead
    /// (`--n-cpu-moe`). Only when the model does not fit the GPUs alone.
    #[arg(long)]
    pub offload: bool,
    /// Plan on every instance of the cloud table (AWS, GCP, Azure, OCI,
    /// Lambda, RunPod) instead of devices, and rank those the model fits by
    /// on-demand price per hour with the price per million output tokens;
    /// prices are shown with the date they were read, never as current.
    #[arg(long, conflicts_with_all = ["devices", "registry", "offload", "emit", "measure"])]
    pub cloud: bool,
    /// With --cloud: only these providers, comma-separated (aws, gcp, azure,
    /// oci, lambda, runpod).
    #[arg(long, value_name = "P[,P]", requires = "cloud")]
    pub provider: Option<String>,
    /// With --cloud: a price file (.toml or .csv, see README) whose rows
    /// override the table's price of an instance or add instances.
    #[arg(long, value_name = "FILE", requires = "cloud")]
    pub price_file: Option<std::path::PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn parse_runtime(s: &str) -> Result<RuntimeKind, String> {
    RuntimeKind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = RuntimeKind::all().map(|r| r.name()).collect();
        format!(
            "unknown runtime {s:?}{} (known: {})",
            ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(s, names.iter().copied())),
            names.join(", ")
        )
    })
}

fn parse_quant(s: &str) -> Result<Quant, String> {
    Quant::parse(s).ok_or_else(|| {
        let names: Vec<_> = Quant::ALL.iter().map(|q| q.as_str()).collect();
        format!(
            "unknown quantization {s:?}{} (known: {})",
            ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(s, names.iter().copied())),
            names.join(", ")
        )
    })
}

fn parse_kv(s: &str) -> Result<KvDtype, String> {
    const NAMES: [&str; 5] = ["fp32", "bf16", "fp16", "fp8", "int8"];
    KvDtype::parse(s).ok_or_else(|| {
        format!(
            "unknown KV cache type {s:?}{} (known: {})",
            ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(s, NAMES)),
            NAMES.join(", ")
        )
    })
}

/// Devices named by `--devices`, resolved while arguments are parsed so a
/// bad name is a usage error.
#[derive(Clone, Debug)]
pub struct DeviceList(pub Vec<PlanDevice>);

/// A clap value parser for device strings (`8xh100-sxm`).
pub fn parse_devices(s: &str) -> Result<DeviceList, String> {
    PlanDevice::from_device_string(s)
        .map(DeviceList)
        .map_err(|e| e.to_string())
}

/// A clap value parser for fractions in (0, 1].
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("{s:?} is not a fraction in (0, 1]")),
    }
}

/// A clap value parser for a ggml backend name.
pub fn parse_backend(s: &str) -> Result<ai_hwaccel::plan::runtime::GgmlBackend, String> {
    ai_hwaccel::plan::runtime::GgmlBackend::parse(s)
        .filter(|_| !s.contains(','))
        .ok_or_else(|| format!("{s:?}: one of cuda, hip (rocm), metal, sycl, vulkan, opencl"))
}

/// A clap value parser for a runtime build: a month `YYYY-MM`, or a
/// llama.cpp release tag `b<number>` dated by
/// [`ai_hwaccel::plan::runtime::bench::build_month`]. A bare number is
/// refused: `2025` could be a year or build 2025.
fn parse_build_month(s: &str) -> Result<ai_hwaccel::plan::speed::BuildMonth, String> {
    let t = s.trim();
    if let Some(m) = ai_hwaccel::plan::speed::BuildMonth::parse(t) {
        return Ok(m);
    }
    t.strip_prefix(['b', 'B'])
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|&n| n > 0)
        .and_then(ai_hwaccel::plan::runtime::bench::build_month)
        .ok_or_else(|| {
            format!(
                "{s:?} is not a month YYYY-MM (2000-01 to 2999-12) or a llama.cpp release tag b<number> (b5997)"
            )
        })
}

/// A clap value parser for a latency target: milliseconds in (0, 3600000].
pub fn parse_millis(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 3_600_000.0 => Ok(f),
        _ => Err(format!(
            "{s:?} is not a time in milliseconds in (0, 3600000]"
        )),
    }
}

/// Resolve MODEL (catalog, path, size), printing its warnings. A size out
/// of range is a usage error.
pub fn load(model: &str) -> Result<LoadedModel> {
    let m = match load_model(model) {
        Ok(m) => m,
        Err(e @ ai_hwaccel::plan::ModelError::SizeOutOfRange { .. }) => {
            return Err(crate::Usage(e.to_string()).into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("model {model:?}"))),
    };
    for w in &m.warnings {
        eprintln!("warning: {w}");
    }
    Ok(m)
}

/// `ai-hwaccel model MODEL [--json]`.
/// `ai-hwaccel model --list`: the catalog.
pub fn model_list(json_out: bool) -> Result<String> {
    let rows: Vec<serde_json::Value> = ai_hwaccel::plan::catalog::all()
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "architecture": m.spec.architecture,
                "parameters": m.spec.parameters(),
                "active_parameters": m.spec.active_parameters(),
                "max_context": m.spec.max_context,
                "kv_cache_bytes_per_token": m.spec.kv_cache_bytes_per_token(2.0),
                "published_parameters": m.published_parameters,
                "source": m.source,
                "aliases": m.aliases,
                "family": m.family,
                "uses": m.uses,
                "card": m.card,
            })
        })
        .collect();
    if json_out {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec![
        "model", "family", "params", "active", "max ctx", "KV/token", "uses",
    ]);
    for m in ai_hwaccel::plan::catalog::all() {
        let s = &m.spec;
        t.add_row(vec![
            m.id.clone(),
            m.family.clone(),
            format!("{:.2}B", s.parameters() as f64 / 1e9),
            format!("{:.2}B", s.active_parameters() as f64 / 1e9),
            s.max_context.map_or("-".into(), |c| c.to_string()),
            format!("{} KiB", s.kv_cache_bytes_per_token(2.0) / 1024),
            crate::fit::uses_text(&m.uses),
        ]);
    }
    Ok(format!(
        "{} catalog models (KV per token at 16 bits; `model NAME` for one):\n{t}\n",
        ai_hwaccel::plan::catalog::all().len()
    ))
}

pub fn model(name: &str, json_out: bool) -> Result<String> {
    let m = load(name)?;
    let s = &m.spec;
    if json_out {
        let v = json!({
            "name": s.name,
            "architecture": s.architecture,
            "approximate": s.approximate,
            "origin": m.origin,
            "parameters": s.parameters(),
            "active_parameters": s.active_parameters(),
            "kv_cache_bytes_per_token": s.kv_cache_bytes_per_token(2.0),
            "spec": s,
            "layers": s.layers(),
            "stored_weights": m.weights,
            "warnings": m.warnings,
        });
        return Ok(format!("{}\n", serde_json::to_string_pretty(&v)?));
    }
    let mut o = String::new();
    o += &format!(
        "{} ({}{})\n",
        s.name,
        s.architecture,
        if s.approximate { ", approximate" } else { "" }
    );
    o += &format!(
        "  parameters         {} ({:.2}B)\n",
        s.parameters(),
        s.parameters() as f64 / 1e9
    );
    o += &format!(
        "  active parameters  {} ({:.2}B)\n",
        s.active_parameters(),
        s.active_parameters() as f64 / 1e9
    );
    o += &format!(
        "  KV cache           {} bytes/token at 16 bits ({} per 1k tokens)\n",
        s.kv_cache_bytes_per_token(2.0),
        human_bytes(s.kv_cache_bytes_per_token(2.0) * 1024)
    );
    o += &format!(
        "  layers {} · hidden {} · intermediate {} · heads {}/{} KV · head dim {} · vocab {}{}\n",
        s.num_layers,
        s.hidden_size,
        s.intermediate_size,
        s.num_attention_heads,
        s.num_kv_heads,
        s.head_dim,
        s.vocab_size,
        if s.tied_embeddings { " (tied)" } else { "" }
    );
    if let Some(moe) = &s.moe {
        o += &format!(
            "  MoE: {} experts, {} per token, expert size {}, {} shared, first {} layers dense{}\n",
            moe.num_experts,
            moe.experts_per_token,
            moe.expert_intermediate_size,
            moe.shared_experts,
            moe.dense_layers,
            moe.layer_step
                .filter(|&k| k > 1)
                .map_or(String::new(), |k| format!(", then MoE every {k} layers"))
        );
    }
    if let Some(mla) = &s.mla {
        o += &format!(
            "  MLA: KV rank {}, RoPE dim {}, q rank {}\n",
            mla.kv_lora_rank,
            mla.qk_rope_head_dim,
            mla.q_lora_rank.map_or("-".into(), |r| r.to_string())
        );
    }
    if let Some(w) = &s.sliding_window {
        o += &format!(
            "  sliding window {} tokens on {} of {} layers\n",
            w.window, w.layers, s.num_layers
        );
    }
    if let Some(l) = &s.linear_attention {
        let layers = u64::from(s.linear_layers());
        let fp32 = l.ssm_state_dtype.as_deref() == Some("fp32");
        let bytes = layers
            * (l.conv_state_elements() * 2 + l.ssm_state_elements() * if fp32 { 4 } else { 2 });
        o += &format!(
            "  linear attention on {} of {} layers: no KV cache, {} state per sequence at 16 bits{} ({} in llama.cpp, which holds it in F32)\n",
            s.linear_layers(),
            s.num_layers,
            human_bytes(bytes),
            if fp32 {
                ", the recurrent part in fp32 as the config asks"
            } else {
                ""
            },
            human_bytes(s.linear_state_elements_per_sequence() * 4)
        );
    }
    if s.moe.as_ref().is_some_and(|m| m.mxfp4_experts) {
        o += &format!(
            "  experts stored in MXFP4 (4.25 bits); Hub total with scales {}\n",
            s.hub_parameter_total()
        );
    }
    if let Some(c) = s.max_context {
        o += &format!("  max context        {c}\n");
    }
    if let Some(w) = &m.weights {
        o += &format!(
            "  stored weights     {} in {} tensors ({} parameters){}\n",
            human_bytes(w.bytes),
            w.tensors,
            w.parameters,
            w.quantization
                .as_deref()
                .map(|q| format!(", {q}"))
                .unwrap_or_default()
        );
    }
    // Layers, consecutive identical ones collapsed.
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec![
        "layers",
        "attention",
        "ffn",
        "parameters",
        "active",
        "KV elems/token",
    ]);
    let layers = s.layers();
    let mut i = 0;
    while i < layers.len() {
        let l = &layers[i];
        let mut j = i;
        while j + 1 < layers.len() && {
            let n = &layers[j + 1];
            n.attention == l.attention && n.moe == l.moe && n.parameters == l.parameters
        } {
            j += 1;
        }
        t.add_row(vec![
            if i == j {
                format!("{i}")
            } else {
                format!("{i}-{j}")
            },
            format!("{:?}", l.attention).to_lowercase(),
            if l.moe { "moe".into() } else { "dense".into() },
            l.parameters.to_string(),
            l.active_parameters.to_string(),
            l.kv_elements_per_token.to_string(),
        ]);
        i = j + 1;
    }
    o += &format!("{t}\n");
    Ok(o)
}

/// A registry saved by `detect --json`; errors name the file and field.
pub fn read_registry(file: &std::path::Path) -> Result<ai_hwaccel::Registry> {
    let bytes = crate::input::read_input(file, crate::input::MAX_INPUT_BYTES)?;
    // UTF-8, or the UTF-16 Windows PowerShell 5.1's `>` writes.
    let text = ai_hwaccel::model::text::decode_strict(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    ai_hwaccel::Registry::from_json(&text).with_context(|| format!("{}", file.display()))
}

/// Where the devices of a plan came from, for messages.
pub enum DeviceOrigin<'a> {
    /// `--devices`.
    String,
    /// `--registry FILE`.
    Registry(&'a std::path::Path),
    /// This machine.
    Machine,
}

/// The devices to plan for: a device string, a saved registry, or this
/// machine's accelerators. A registry naming more than the planner's bound
/// of devices is refused.
pub fn devices_from<'a>(
    list: Option<&DeviceList>,
    registry: Option<&'a std::path::Path>,
    host_fallback: bool,
) -> Result<(Vec<PlanDevice>, DeviceOrigin<'a>)> {
    devices_and_registry(list, registry, host_fallback).map(|(d, o, _)| (d, o))
}

/// [`devices_from`], with the registry the devices came from (read from the
/// file or detected) when they did not come from a device string.
pub fn devices_and_registry<'a>(
    list: Option<&DeviceList>,
    registry: Option<&'a std::path::Path>,
    host_fallback: bool,
) -> Result<(
    Vec<PlanDevice>,
    DeviceOrigin<'a>,
    Option<ai_hwaccel::Registry>,
)> {
    let from = |r: &ai_hwaccel::Registry| {
        if host_fallback {
            PlanDevice::from_registry_or_host(r)
        } else {
            PlanDevice::from_registry(r)
        }
    };
    match (list, registry) {
        (Some(l), _) if !host_fallback && l.0.iter().any(|d| d.host) => anyhow::bail!(
            "this command plans accelerators: a host CPU (`cpu:ID@SIZE`) is not one of its devices"
        ),
        (Some(l), _) => Ok((l.0.clone(), DeviceOrigin::String, None)),
        (None, Some(file)) => {
            let reg = read_registry(file)?;
            let d = from(&reg);
            if d.len() > ai_hwaccel::plan::MAX_DEVICES as usize {
                anyhow::bail!(
                    "{}: {} accelerators, more than the planner takes (at most {})",
                    file.display(),
                    d.len(),
                    ai_hwaccel::plan::MAX_DEVICES
                );
            }
            Ok((d, DeviceOrigin::Registry(file), Some(reg)))
        }
        (None, None) => {
            let reg = ai_hwaccel::detect(&ProbeOptions::default(), &DetectOptions::default());
            let mut d = from(&reg);
            d.truncate(ai_hwaccel::plan::MAX_DEVICES as usize);
            Ok((d, DeviceOrigin::Machine, Some(reg)))
        }
    }
}

/// The note printed when there is nothing to plan on.
pub fn no_devices_note(origin: &DeviceOrigin<'_>) -> String {
    match origin {
        DeviceOrigin::Registry(file) => format!(
            "note: read {} and found no available accelerator in it; pass --devices to plan for others",
            file.display()
        ),
        _ => "note: no accelerators detected on this machine; pass --devices to plan for others"
            .into(),
    }
}

/// What `plan` ranks by.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ObjectiveArg {
    /// Fastest decode per sequence first.
    Latency,
    /// Most decode tokens/s over all replicas first.
    Throughput,
}

/// `ai-hwaccel plan MODEL ...`.
pub fn plan(args: &PlanArgs) -> Result<String> {
    if args.cloud {
        return crate::cloud::plan(args);
    }
    if let (Some(c), Some(i)) = (args.context, args.input_len) {
        let need = i.saturating_add(args.output_len.unwrap_or(0));
        if need > c {
            anyhow::bail!(crate::Usage(format!(
                "--input-len {i}{} needs a context of {need} tokens, more than --context {c}",
                args.output_len
                    .map_or(String::new(), |o| format!(" + --output-len {o}"))
            )));
        }
    }
    let m = load(&args.model)?;
    let (mut devices, origin, registry) =
        devices_and_registry(args.devices.as_ref(), args.registry.as_deref(), true)?;
    if PlanDevice::mixes_host_and_accelerators(&devices) && !args.offload {
        anyhow::bail!(crate::Usage(
            "a host CPU (`cpu:ID@SIZE`) with accelerators plans llama.cpp's offload: add --offload"
                .into()
        ));
    }
    let host = devices.len() == 1 && devices[0].host;
    if host {
        eprintln!(
            "note: {}planning for the host CPU ({}, {} of memory available)",
            match &origin {
                DeviceOrigin::Registry(f) => format!("no accelerator in {}: ", f.display()),
                DeviceOrigin::String => String::new(),
                _ => "no accelerator: ".to_string(),
            },
            devices[0].name,
            human_bytes(devices[0].capacity_bytes.unwrap_or(0))
        );
        if args.measure && matches!(origin, DeviceOrigin::Machine) {
            measure_host(&mut devices[0]);
        } else if devices[0].bandwidth_bytes_per_s.is_none() {
            eprintln!(
                "note: the CPU's memory bandwidth is unknown, so decode speed is too; --measure measures it"
            );
        }
    }
    let runtime = match (args.emit, args.runtime) {
        (Some(e), Some(r)) if e != r => anyhow::bail!(crate::Usage(format!(
            "--emit {e} launches a plan made with {e}'s memory rule; drop --runtime {r} or make them the same"
        ))),
        (Some(e), _) => e,
        (None, Some(r)) => r,
        (None, None) if host || args.offload => RuntimeKind::LlamaCpp,
        (None, None) => RuntimeKind::Generic,
    };
    let opts = inference_options(args, runtime);
    // The stored weights and GGUF levels, as the library's one-call planner sets them.
    let opts = ai_hwaccel::plan::options_for(&m, &opts);
    if args.quant.is_none()
        && let (Some(level), Some(w)) = (opts.quant, &m.weights)
    {
        eprintln!(
            "note: planning the weights as stored ({level}, {})",
            human_bytes(w.bytes)
        );
    }
    if args.quant.is_none() && devices.is_empty() {
        eprintln!("{}", no_devices_note(&origin));
    }
    let p = if args.offload {
        offload_plan(args, &m, &devices, registry, &opts)?
    } else {
        plan_inference(&m.spec, &devices, &opts)
    };
    if args.emit.is_some() {
        let launch = ai_hwaccel::plan::runtime::emit(&p, args.plan_index as usize - 1, &m.origin)
            .map_err(|e| anyhow::anyhow!("--emit {}: {e}", p.runtime))?;
        for n in &launch.notes {
            eprintln!("note: {n}");
        }
        if args.json {
            return Ok(format!("{}\n", serde_json::to_string_pretty(&launch)?));
        }
        return Ok(format!("{}\n", shell_words(&launch.argv)));
    }
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&p)?));
    }
    Ok(render_plan(&p))
}

/// The inference options `plan`'s arguments ask for, with `runtime`'s
/// memory rule (`plan` and `plan --cloud` share them).
pub fn inference_options(args: &PlanArgs, runtime: RuntimeKind) -> InferenceOptions {
    use ai_hwaccel::plan::inference as inf;
    InferenceOptions {
        quant: args.quant,
        kv_dtype: args.kv_dtype,
        context: args.context,
        batch: args.batch,
        prefill_chunk: args.prefill_chunk,
        memory_utilization: args.memory_utilization,
        decode_efficiency: args
            .decode_efficiency
            .unwrap_or(inf::DEFAULT_DECODE_EFFICIENCY),
        prefill_efficiency: args
            .prefill_efficiency
            .unwrap_or(inf::DEFAULT_PREFILL_EFFICIENCY),
        calibrated_speed: args.decode_efficiency.is_none() && args.prefill_efficiency.is_none(),
        input_len: args.input_len,
        output_len: args.output_len,
        ttft_ms: args.ttft_ms,
        tpot_ms: args.tpot_ms,
        expert_parallel: args.expert_parallel,
        fused_attention: !args.unfused_attention,
        runtime_build: args.runtime_build,
        cuda_force_mmq: args.cuda_force_mmq,
        mixed_prefill: args.mixed_prefill,
        eager: args.enforce_eager,
        ubatch: args.ubatch,
        kv_read_efficiency: args.kv_read_efficiency,
        backend: args.backend,
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        mem_fraction_static: args.mem_fraction_static,
        stored_weights: None,
        gguf_matmul_bytes: Vec::new(),
        max_plans: args.max_plans as usize,
        gguf_levels: false,
        gguf_imatrix: args.imatrix,
        objective: match args.objective {
            ObjectiveArg::Latency => inf::Objective::Latency,
            ObjectiveArg::Throughput => inf::Objective::Throughput,
        },
        runtime,
    }
}

/// `--measure`: this machine's memory read bandwidth (1 GiB read by every
/// usable CPU, best of 3) as the host CPU's bandwidth.
fn measure_host(cpu: &mut PlanDevice) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // 1 GiB, but never more than a quarter of what the process may still
    // allocate (a small container must not be pushed into swap or OOM).
    let bytes = cpu.capacity_bytes.map_or(1 << 30, |c| (c / 4).min(1 << 30)) as usize;
    match ai_hwaccel::detect::measure_read_bandwidth(bytes, threads, 3) {
        Some(bw) => {
            eprintln!(
                "note: measured host memory read bandwidth {:.1} GB/s ({threads} threads, {}, best of 3)",
                bw / 1e9,
                human_bytes(bytes as u64)
            );
            cpu.bandwidth_bytes_per_s = Some(bw as u64);
            cpu.bandwidth_basis = Some("measured".into());
        }
        None => eprintln!("note: the memory bandwidth measurement gave no figure"),
    }
}

/// `plan --offload`: the GPUs and the host CPU as llama.cpp's stages
/// ([`ai_hwaccel::plan::plan_offload_gpus`]).
fn offload_plan(
    args: &PlanArgs,
    m: &LoadedModel,
    devices: &[PlanDevice],
    registry: Option<ai_hwaccel::Registry>,
    opts: &InferenceOptions,
) -> Result<InferencePlan> {
    if devices.iter().all(|d| d.host) {
        anyhow::bail!("--offload needs a GPU: none among the devices");
    }
    // The host: the device string's `cpu:ID@SIZE`; else the registry's
    // (with a device string, this machine's).
    let (mut cpu, gpus, from_registry) = PlanDevice::offload_host(devices, || {
        registry.unwrap_or_else(|| {
            ai_hwaccel::detect(&ProbeOptions::default(), &DetectOptions::default())
        })
    })
    .ok_or_else(|| anyhow::anyhow!("--offload: no host memory figure for the CPU"))?;
    let gpu = gpus
        .iter()
        .max_by_key(|d| d.capacity_bytes.unwrap_or(0))
        .ok_or_else(|| anyhow::anyhow!("--offload needs a GPU: none among the devices"))?;
    if from_registry && args.measure && args.registry.is_none() {
        measure_host(&mut cpu);
    }
    let mut all = vec![cpu.clone()];
    all.extend(gpus.iter().cloned());
    let mut p = plan_inference(&m.spec, &all, opts);
    match ai_hwaccel::plan::plan_offload_gpus(&m.spec, &gpus, &cpu, opts) {
        Some(plan) => {
            if let Some(moe) = &plan.moe_offload {
                let on = if plan.per_device.len() > 2 {
                    let split: Vec<String> = plan.per_device[1..]
                        .iter()
                        .map(|d| (d.layers.1 - d.layers.0).to_string())
                        .collect();
                    format!(
                        "{} GPUs ({} layers each, in order)",
                        plan.per_device.len() - 1,
                        split.join(", ")
                    )
                } else {
                    gpu.name.clone()
                };
                eprintln!(
                    "note: MoE expert offload: all {} layers on {}, the routed experts of the first {} ({} GPU, {} host memory) in host memory (llama.cpp --n-cpu-moe {})",
                    m.spec.num_layers,
                    on,
                    moe.cpu_expert_layers,
                    human_bytes(moe.gpu_weights_bytes),
                    human_bytes(moe.host_weights_bytes),
                    moe.cpu_expert_layers
                );
            } else if plan.per_device.len() > 2 {
                let split: Vec<String> = plan.per_device[1..]
                    .iter()
                    .map(|d| (d.layers.1 - d.layers.0).to_string())
                    .collect();
                let on_gpus = plan.per_device[1..]
                    .iter()
                    .map(|d| d.layers.1 - d.layers.0)
                    .sum::<u32>();
                eprintln!(
                    "note: partial offload: {on_gpus} of {} layers and the output layer on {} GPUs ({} layers each, in order), the rest in host memory",
                    m.spec.num_layers,
                    plan.per_device.len() - 1,
                    split.join(", ")
                );
            } else {
                let on_gpu = plan.per_device[1].layers.1 - plan.per_device[1].layers.0;
                eprintln!(
                    "note: partial offload: {on_gpu} of {} layers and the output layer on {}, the rest in host memory",
                    m.spec.num_layers, gpu.name
                );
            }
            p.quantization = plan.quantization;
            p.plans = vec![plan];
            p.feasible = true;
            p.feasible_plans = 1;
        }
        None => {
            if gpus.len() > 1 {
                eprintln!(
                    "note: no offload plan: the model fits the {} GPUs, or no level leaves a layer on them with the rest in host memory",
                    gpus.len()
                );
            } else {
                eprintln!(
                    "note: no offload plan: the model fits {} whole, or no level leaves a layer on it",
                    gpu.name
                );
            }
            p = plan_inference(&m.spec, &gpus, opts);
        }
    }
    Ok(p)
}

/// A command line a POSIX shell reads back as `argv` (single quotes where
/// an argument has anything but safe characters).
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./,:=@+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn rate(r: Option<f64>) -> String {
    r.map_or("unknown".into(), |r| {
        if r >= 100.0 {
            format!("{r:.0}")
        } else {
            format!("{r:.1}")
        }
    })
}

fn render_plan(p: &InferencePlan) -> String {
    let mut o = String::new();
    o += &format!(
        "{}: {:.2}B parameters ({:.2}B active){} · context {} · batch {} · KV {}\n",
        p.model,
        p.parameters as f64 / 1e9,
        p.active_parameters as f64 / 1e9,
        if p.approximate { " [approximate]" } else { "" },
        p.context,
        p.batch,
        p.kv_dtype
    );
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for d in &p.devices {
        match kinds.iter_mut().find(|(n, _)| *n == d.name) {
            Some((_, c)) => *c += 1,
            None => kinds.push((d.name.clone(), 1)),
        }
    }
    let devs: Vec<String> = kinds.iter().map(|(n, c)| format!("{c} × {n}")).collect();
    o += &format!(
        "devices: {}\n",
        if devs.is_empty() {
            "none".into()
        } else {
            devs.join(", ")
        }
    );
    o += &format!(
        "suggested quantization: {} · planned at: {}\n",
        p.suggested_quantization
            .map_or("none fits".into(), |q| q.to_string()),
        p.quantization
    );
    if p.feasible {
        let o_ = &p.options;
        // Request latencies only when asked for (input/output lengths or
        // targets), so the default table stays as it was.
        let timed = o_.input_len.is_some() || o_.output_len.is_some() || o_.has_targets();
        let mut t = Table::new();
        t.load_preset(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(100);
        t.set_header(vec![
            "TP",
            "PP",
            "DP",
            "devices",
            "TP link",
            "max ctx",
            "sequences",
            "decode/seq",
            "decode total",
            "prefill",
        ]);
        // Request latencies, when asked for (input/output lengths or
        // targets), in a table of their own beside the plans.
        let mut lt = Table::new();
        lt.load_preset(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(100);
        let mut lh = vec!["plan", "TP×PP×DP", "batch", "TTFT ms", "TPOT ms"];
        // The closed loop's TPOT, where the batch has others' prompts to
        // prefill (an output length, batch above 1).
        let served = o_.output_len.is_some() && p.plans.iter().any(|x| x.batch > 1);
        if served {
            lh.push("served TTFT");
            lh.push("served TPOT");
        }
        if o_.output_len.is_some() {
            lh.push("request ms");
        }
        // Tokens/s per device as the plans rank under targets: served
        // (the closed loop's output) where a served TPOT is shown.
        lh.push(if served { "out/dev" } else { "decode/device" });
        lt.set_header(lh);
        for (k, x) in p.plans.iter().enumerate() {
            t.add_row(vec![
                x.tensor_parallel.to_string(),
                x.pipeline_parallel.to_string(),
                x.data_parallel.to_string(),
                x.devices_used.to_string(),
                x.tensor_parallel_link.clone().unwrap_or_else(|| "-".into()),
                x.max_context_tokens.to_string(),
                x.max_concurrent_sequences.to_string(),
                // An encoder never decodes (its speed is the prefill,
                // i.e. encoding, rate).
                if p.encoder {
                    "-".into()
                } else {
                    rate(x.decode_tokens_per_s_per_sequence)
                },
                if p.encoder {
                    "-".into()
                } else {
                    rate(x.decode_tokens_per_s)
                },
                rate(x.prefill_tokens_per_s),
            ]);
            let mut row = vec![
                (k + 1).to_string(),
                format!(
                    "{}×{}×{}",
                    x.tensor_parallel, x.pipeline_parallel, x.data_parallel
                ),
                x.batch.to_string(),
                rate(x.ttft_ms),
                rate(x.tpot_ms),
            ];
            if served {
                row.push(rate(x.served_ttft_ms));
                row.push(rate(x.served_tpot_ms));
            }
            if o_.output_len.is_some() {
                row.push(rate(x.request_latency_ms));
            }
            row.push(rate(
                if served {
                    x.served_tokens_per_s()
                } else {
                    x.decode_tokens_per_s
                }
                .map(|d| d / f64::from(x.devices_used.max(1))),
            ));
            lt.add_row(row);
        }
        let ranked = if o_.has_targets() {
            "tokens/s per device".to_string()
        } else {
            match o_.objective {
                ai_hwaccel::plan::inference::Objective::Latency => "latency".into(),
                ai_hwaccel::plan::inference::Objective::Throughput => "throughput".into(),
            }
        };
        let at = if o_.has_targets() {
            let mut t = Vec::new();
            if let Some(x) = o_.ttft_ms {
                t.push(format!("TTFT ≤ {x} ms"));
            }
            if let Some(x) = o_.tpot_ms {
                t.push(format!("TPOT ≤ {x} ms"));
            }
            format!(
                "the batch the latency table shows:\nper replica the most sequences meeting {}",
                t.join(" and ")
            )
        } else {
            format!("batch {} per replica", p.batch)
        };
        o += &format!(
            "plans ({} feasible, best {ranked} first, {} memory rule); tokens/s;{}sequences held at\n\
             context {} over all replicas; decode per sequence and total at {at}:\n{t}\n",
            p.feasible_plans,
            p.runtime,
            if o_.has_targets() { "\n" } else { " " },
            p.context,
        );
        // Whose build the fitted per-layer decode time is for (a runtime
        // with a build-date term only).
        if let Some(b) = p.speed_build {
            o += &format!(
                "decode speeds for {} builds of {b}{}\n",
                p.runtime,
                if o_.runtime_build.is_some() {
                    ""
                } else {
                    " (the newest the calibration rows measure; --runtime-build for another)"
                }
            );
        }
        if let Some(b) = p.decode_build_without_cuda_graphs {
            o += &format!(
                "decode per-layer time of builds of {b}: llama.cpp runs this GPU without CUDA graphs \
                 (it uses them from compute capability 8.0, on Volta and Turing from builds of {})\n",
                ai_hwaccel::plan::speed::LLAMA_CUDA_GRAPHS_VOLTA
            );
        }
        if let Some(f) = p.kv_read_efficiency {
            o += &format!(
                "decode reads the KV cache at {f:.2} of memory bandwidth{}
",
                if o_.kv_read_efficiency.is_some() {
                    ""
                } else {
                    " (fitted on published batched runs of this runtime; --kv-read-efficiency for another)"
                }
            );
        }
        if let Some(f) = p.linear_state_efficiency {
            o += &format!(
                "decode reads and rewrites the linear-attention state at {f:.3} of memory bandwidth \
                 (fitted on published runs of this runtime)\n"
            );
        }
        if let Some(b) = &p.speed_basis {
            o += &speed_basis_line(b, p);
        }
        if timed {
            o += &format!(
                "latency per plan: TTFT for a {}-token prompt on an idle replica (no queueing),\n\
                 TPOT = time per output token at the batch{};\n{} tokens/s per device{}:\n{lt}\n",
                o_.input_len.unwrap_or(p.context),
                o_.output_len.map_or(String::new(), |n| format!(
                    "; request: {} + {} × {}",
                    if served { "served TTFT" } else { "TTFT" },
                    n.saturating_sub(1),
                    if served { "served TPOT" } else { "TPOT" }
                )),
                if served {
                    "out/dev: served output"
                } else {
                    "decode"
                },
                if !served {
                    ""
                } else if ai_hwaccel::plan::inference::prompts_in_own_passes(o_) {
                    "; served TPOT = that batch served as a closed loop,\nthe other requests' \
                     prompts prefilled in passes of their own between the decode steps;\n\
                     served TTFT = a request arriving in it: the idle TTFT after the decode step \
                     in progress"
                } else {
                    "; served TPOT = that batch served as a closed loop,\nthe other requests' \
                     prompts prefilled within the decode steps;\nserved TTFT = a request \
                     arriving in it: the idle TTFT plus the step in progress\nand the step \
                     that carries its prompt"
                },
            );
            // How far the served figures are from the runtime's published
            // serving benchmarks, where it has some.
            let basis = p.speed_basis.as_ref().filter(|_| served);
            if let Some(a) = basis.and_then(|b| b.served_tpot) {
                o += &format!(
                    "served TPOT against {} published {} serving benchmarks (closed loops, never fitted):\n  \
                     median error {:.0} %, worst {:.0} %\n",
                    a.rows,
                    p.runtime,
                    100.0 * a.median,
                    100.0 * a.worst
                );
            }
            if let Some(a) = basis.and_then(|b| b.served_ttft) {
                o += &format!(
                    "served TTFT in those benchmarks' closed loops (their first burst of prompts, then\n  \
                     the steady loop) against their mean TTFT: median error {:.0} %, worst {:.0} %\n",
                    100.0 * a.median,
                    100.0 * a.worst
                );
            }
        }
        let best = &p.plans[0];
        let mut t = Table::new();
        t.load_preset(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(100);
        t.set_header(vec![
            "devices",
            "stage",
            "layers",
            "weights",
            "KV cache",
            "activations",
            "reserve",
            "total/capacity",
        ]);
        // Consecutive devices with the same numbers share a row.
        let rows = &best.per_device;
        let mut i = 0;
        let mut shown = 0;
        while i < rows.len() && shown < 16 {
            let d = &rows[i];
            let same = |e: &ai_hwaccel::plan::inference::DeviceMemory| {
                e.stage == d.stage
                    && e.layers == d.layers
                    && e.total_bytes == d.total_bytes
                    && e.capacity_bytes == d.capacity_bytes
                    && e.weights_bytes == d.weights_bytes
            };
            let mut j = i;
            while j + 1 < rows.len() && same(&rows[j + 1]) {
                j += 1;
            }
            let gib = |b: u64| format!("{:.1}", b as f64 / (1u64 << 30) as f64);
            t.add_row(vec![
                if i == j {
                    d.device.clone()
                } else {
                    format!("{} … {} ({})", d.device, rows[j].device, j - i + 1)
                },
                d.stage.to_string(),
                format!("{}-{}", d.layers.0, d.layers.1.saturating_sub(1)),
                gib(d.weights_bytes),
                gib(d.kv_cache_bytes),
                gib(d.activation_bytes),
                gib(d.overhead_bytes),
                format!("{}/{}", gib(d.total_bytes), gib(d.capacity_bytes)),
            ]);
            shown += 1;
            i = j + 1;
        }
        o += &format!("memory per device of the best plan (GiB):\n{t}\n");
        if i < rows.len() {
            o += &format!("  ({} more devices, see --json)\n", rows.len() - i);
        }
    } else {
        o += &format!("does not fit at {}\n", p.quantization);
        for r in p.rejected.iter().take(5) {
            if r.tensor_parallel == 0 {
                o += &format!("  - {}\n", r.reason);
            } else {
                o += &format!(
                    "  - TP {} PP {}: {}\n",
                    r.tensor_parallel, r.pipeline_parallel, r.reason
                );
            }
        }
        if !p.advice.is_empty() {
            o += "what would fit:\n";
            for a in &p.advice {
                o += &format!("  - {a}\n");
            }
        }
    }
    for w in &p.warnings {
        o += &format!("warning: {w}\n");
    }
    o
}

/// The line under a fitted fraction saying how far the planner's estimates
/// of that quantity fell from the published measurements of the device's
/// class (`FitBasis::accuracy`); empty where the corpus has none.
fn accuracy_line(
    what: &str,
    runtime: &str,
    under: &str,
    f: &ai_hwaccel::plan::speed::FitBasis,
) -> String {
    let Some(a) = f.accuracy else {
        return String::new();
    };
    let held = |a: &ai_hwaccel::plan::speed::Accuracy| match a.held_out_median {
        Some(m) => format!(
            "; on the {} the fit never saw, median {:.0} %",
            a.held_out_rows,
            100.0 * m
        ),
        None if a.held_out_rows == 0 => "; none of them held out of the fit".to_string(),
        None => format!(
            "; {} of them held out of the fit, too few for a median",
            a.held_out_rows
        ),
    };
    let runs = f.device_runs.map_or(String::new(), |d| {
        if d.rows == 1 {
            format!(
                "    {what} estimate against 1 published {runtime} run of this device{under}:\n      \
                 error {:.0} %{}\n",
                100.0 * d.median,
                if d.held_out_rows == 1 {
                    ", a run the fit never saw"
                } else {
                    ", a run of the fit"
                },
            )
        } else {
            format!(
                "    {what} estimates against {} published {runtime} runs of this device{under}:\n      \
                 median error {:.0} %, worst {:.0} %{}\n",
                d.rows,
                100.0 * d.median,
                100.0 * d.worst,
                held(&d),
            )
        }
    });
    let own = f.device_accuracy.map_or(String::new(), |d| {
        format!(
            "    {what} estimates against {} published {runtime} runs of this device, which the fit\n      \
             leaves out (it runs {runtime} unlike its class): median error {:.0} %, worst {:.0} %\n",
            d.rows,
            100.0 * d.median,
            100.0 * d.worst,
        )
    });
    format!(
        "    {what} estimates against {} published {runtime} runs of this class:\n      \
         median error {:.0} %, worst {:.0} %{}\n{runs}{own}",
        a.rows,
        100.0 * a.median,
        100.0 * a.worst,
        held(&a),
    )
}

/// Lines saying where the fitted decode and prefill fractions of the
/// plan's first accelerator (`inference::basis_device`) come from: its
/// class's cell or the pool of every GPU class, the rows behind it, "x
/// width ratio" where the class's coarser cell was scaled by the pool's
/// ratio of the format's width to it, and "x device" where the device's own
/// factor applied; then, where a host CPU holds layers too (partial
/// offload), what its stage runs at.
fn speed_basis_line(
    b: &ai_hwaccel::plan::inference::SpeedBasis,
    p: &ai_hwaccel::plan::inference::InferencePlan,
) -> String {
    use ai_hwaccel::plan::speed::{DeviceClass, FitBasis};
    let on = ai_hwaccel::plan::inference::basis_device(&p.devices)
        .map_or_else(|| "the first device".to_string(), |d| d.name.clone());
    // The ggml backend the device's own llama.cpp runs are of (the plan's,
    // else its vendor's own).
    let under = ai_hwaccel::plan::inference::basis_device(&p.devices)
        .filter(|_| p.options.runtime == ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp)
        .and_then(|d| {
            p.options
                .backend
                .or_else(|| DeviceClass::of(d).own_backend())
        })
        .map_or(String::new(), |b| format!(" under {}", b.printed()));
    // A host CPU beside an accelerator: no CPU cell is fitted (cpu.csv rows
    // are compared, not fitted), so its stage takes the options'
    // efficiencies, or its measured bandwidth as is.
    let host = p
        .devices
        .iter()
        .find(|d| d.host)
        .filter(|_| p.devices.iter().any(|d| !d.host))
        .map_or(String::new(), |d| {
            let decode = if d.bandwidth_basis.as_deref() == Some("measured") {
                "decode at its measured bandwidth".to_string()
            } else {
                format!(
                    "decode {:.2} of its table bandwidth (the options' efficiency: no CPU cell is fitted)",
                    p.options.decode_efficiency
                )
            };
            // llama.cpp runs a prompt's host layers on the GPU (op offload,
            // `inference::op_offload_target`); Metal shares the memory.
            let on_gpu = ai_hwaccel::plan::inference::basis_device(&p.devices)
                .is_some_and(|g| ai_hwaccel::plan::inference::offloads_host_ops(g, &p.options));
            let prefill = if on_gpu {
                "prompts of 32 tokens or more run its layers on the GPU, copying their \
                 weights and KV cache over PCIe once per 512-token ubatch (llama.cpp's op offload)"
                    .to_string()
            } else {
                format!(
                    "prefill {:.2} of its peak rate (the options' efficiency)",
                    p.options.prefill_efficiency
                )
            };
            format!(
                "host CPU {} (its layers): {decode}; {prefill}\n",
                d.name
            )
        });
    if b.decode.is_none() && b.prefill.is_none() {
        return format!(
            "no fitted fractions for {on} and this runtime: the options' efficiencies apply\n{host}"
        );
    }
    let part = |what: &str, of: &str, f: &Option<FitBasis>| match f {
        None => format!("  {what}: none fitted (the options' efficiency)\n"),
        Some(f) if f.dp4a => format!(
            "  {what} {:.2} of the int8 DP4A rate: llama.cpp's DP4A MMQ kernels (a GPU without \
             tensor cores, or a GGML_CUDA_FORCE_MMQ build without int8 tensor-core MMQ; fitted on \
             {} rows of such runs)\n",
            f.efficiency, f.rows
        ),
        Some(f) => {
            let cell = if f.class == DeviceClass::Any {
                format!("pooled {} cell of all GPUs", f.width.as_str())
            } else {
                format!("{} {} cell", f.class.as_str(), f.width.as_str())
            };
            format!(
                "  {what} {:.2} of {of}: {cell} ({} rows{}){}{}{}{}{}{}\n{}",
                f.efficiency,
                f.rows,
                if f.class == DeviceClass::Any {
                    "; none of this class"
                } else {
                    ""
                },
                if f.width_scaled { " x width ratio" } else { "" },
                f.device_rows
                    .map_or(String::new(), |n| format!(" x device ({n} rows)")),
                f.mmq_era_factor.map_or(String::new(), |k| format!(
                    " / {k:.2} (llama.cpp without int8 MMQ: a build before 2024-07, a GPU before Ampere or Vulkan)"
                )),
                f.vulkan_amd_era_factor.map_or(String::new(), |k| format!(
                    " / {k:.2} (llama.cpp Vulkan on an AMD GPU with cooperative matrices: a build before 2026-02, before its matmul tuning)"
                )),
                f.mmq_reference_ratio.map_or(String::new(), |k| format!(
                    " x {k:.2} (llama.cpp's int8 MMQ on a data-center GPU: its SMs x clock at GA102's per-SM rate over the datasheet rate)"
                )),
                f.vector_reference_ratio.map_or(String::new(), |k| format!(
                    " x {k:.3} (llama.cpp HIP before 2025-02 ran CDNA's quantized prompts on the vector ALUs: AMD's per-lane vector FP32 over matrix FP16 rate)"
                )),
                accuracy_line(what, p.options.runtime.name(), &under, f)
            )
        }
    };
    let moe = b.moe_prefill.map_or(String::new(), |m| {
        format!(
            "  routed experts' prefill time x {:.1} (few tokens per expert; fitted on {})\n",
            m.factor,
            m.backend.map_or(
                "all this runtime's mixture-of-experts rows".to_string(),
                |b| { format!("llama.cpp's {} mixture-of-experts rows", b.printed()) }
            )
        )
    });
    format!(
        "fitted fractions on {on}:\n{}{}{moe}{host}",
        part("decode", "bandwidth", &b.decode),
        part("prefill", "matrix rate", &b.prefill)
    )
}
