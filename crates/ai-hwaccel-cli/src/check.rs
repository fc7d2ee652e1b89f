//! `check LOG`: what a runtime logged at start-up against what the planner
//! predicts for the same model and options: llama.cpp logs (`llama-server`,
//! `llama-cli`, `llama-bench -v`), vLLM's and SGLang's, read by
//! `ai_hwaccel::plan::runtime::log`.

use std::path::PathBuf;

use ai_hwaccel::plan::runtime::log::{
    LlamaCppLog, SglangLog, VllmLog, parse_llamacpp_log, parse_sglang_log, parse_vllm_log,
};
use ai_hwaccel::plan::speed::BuildMonth;
use ai_hwaccel::plan::{InferenceOptions, KvDtype, RuntimeKind, plan_inference};
use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;

use crate::planning::{DeviceList, devices_from, parse_devices};

#[derive(Args)]
pub struct CheckArgs {
    /// The runtime's start-up log (`-` for standard input).
    pub log: PathBuf,
    /// The model the log is of (a GGUF file, catalog id, config): with it,
    /// the planner's prediction for the logged options is shown beside the log.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Devices the run used (default: this machine; the host CPU when the
    /// log's buffers are all CPU buffers).
    #[arg(long, value_name = "SPEC", value_parser = parse_devices)]
    pub devices: Option<DeviceList>,
    /// The weights' format, where the output does not name it
    /// (llama-batched-bench prints no model description) or names a type
    /// the planner has no format for (llama-bench's `TQ2_0 - 2.06 bpw ternary`:
    /// without it such rows get no prediction), and the model is not a GGUF
    /// file: `q4_0`, `q4_k_m`, `fp16`, … as `plan --quant`.
    #[arg(long, value_name = "Q")]
    pub quant: Option<String>,
    /// Serving benchmark results of an SGLang server launched with
    /// `--enable-mixed-chunk`: planned with the other requests' prompts
    /// within the decode steps' batches, as `plan --mixed-prefill`, instead
    /// of in prefill passes of their own.
    #[arg(long)]
    pub mixed_prefill: bool,
    /// Serving benchmark results of a server run without CUDA graphs (vLLM
    /// `--enforce-eager`, SGLang's graph backends disabled): planned as
    /// `plan --enforce-eager`.
    #[arg(long)]
    pub enforce_eager: bool,
    /// The server's runtime for serving benchmark results (vllm, sglang,
    /// trtllm), where the result's `Backend` names the client's API instead
    /// (`sglang.bench_serving --backend vllm` against a TensorRT-LLM server
    /// prints `vllm`). Default: the runtime the backend names.
    #[arg(long, value_name = "R", value_parser = crate::planning::parse_runtime)]
    pub runtime: Option<RuntimeKind>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One component: logged against predicted.
#[derive(Serialize)]
pub struct Row {
    pub component: &'static str,
    pub logged_bytes: Option<u64>,
    pub predicted_bytes: Option<u64>,
    /// predicted ÷ logged.
    pub ratio: Option<f64>,
}

#[derive(Serialize)]
pub struct Report {
    pub runtime: &'static str,
    /// What a llama.cpp log says (empty for other runtimes).
    pub log: LlamaCppLog,
    /// What a vLLM log says, when the log is vLLM's.
    pub vllm_log: Option<VllmLog>,
    /// What an SGLang log says, when the log is SGLang's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sglang_log: Option<SglangLog>,
    /// What a TensorRT-LLM log says, when the log is TensorRT-LLM's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trtllm_log: Option<ai_hwaccel::plan::runtime::log::TrtllmLog>,
    /// Options read from the log and used for the prediction.
    pub context_per_sequence: Option<u64>,
    pub sequences: Option<u64>,
    pub kv_dtype: Option<KvDtype>,
    pub rows: Vec<Row>,
    /// A llama.cpp log of several devices: each device's buffers beside
    /// the planned stage in the same order (a layer split).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_device: Vec<DeviceCheck>,
    pub notes: Vec<String>,
}

/// One device of a multi-device llama.cpp log against its planned stage.
#[derive(Serialize)]
pub struct DeviceCheck {
    /// The backend device as logged (`CUDA1`, `RPC0[127.0.0.1:50052]`).
    pub device: String,
    /// The planned device it is compared with.
    pub planned_device: String,
    /// The planned stage's layers (first, one past the last).
    pub planned_layers: (u32, u32),
    pub rows: Vec<Row>,
}

/// Whether a llama.cpp buffer is host memory: the CPU's (`CPU`,
/// `CPU_Mapped`, `CPU_REPACK`) or an accelerator's pinned host buffer
/// (`CUDA_Host`, `ROCm_Host`).
fn host_buffer(name: &str) -> bool {
    name.starts_with("CPU") || name.ends_with("_Host") || name == "Host"
}

/// A log whose buffer lines are missing (a default-verbosity run, an
/// excerpt) but whose memory breakdown table is usable: the table's
/// figures as buffers (device rows by device name, the host's as `Host`,
/// other buffer types by theirs) and its devices, when the log names none.
/// `true` when the table was used.
fn buffers_from_breakdown(log: &mut LlamaCppLog) -> bool {
    if !log.model_buffers.is_empty()
        || !log.kv_buffers.is_empty()
        || log.kv_total_bytes.is_some()
        || !log.compute_buffers.is_empty()
    {
        return false;
    }
    let Some(table) = log.memory_breakdown.clone() else {
        return false;
    };
    let buf = |name: &str, mib: u64| ai_hwaccel::plan::runtime::log::LoggedBuffer {
        buffer: name.to_string(),
        bytes: mib << 20,
    };
    for r in &table.rows {
        // A device's three figures even at 0 (it holds no cache, say);
        // the host's and other buffer types' where they hold something.
        let device = r.kind == "device";
        if device || r.model_mib > 0 {
            log.model_buffers.push(buf(&r.name, r.model_mib));
        }
        if device || r.context_mib > 0 {
            log.kv_buffers.push(buf(&r.name, r.context_mib));
        }
        if device || r.compute_mib > 0 {
            log.compute_buffers.push(buf(&r.name, r.compute_mib));
        }
        if device && log.devices.iter().all(|(n, _)| n != &r.name) && log.devices.len() < 64 {
            log.devices
                .push((r.name.clone(), r.description.clone().unwrap_or_default()));
        }
    }
    true
}

/// The accelerator devices a llama.cpp log allocated buffers on (host
/// buffers left out), in llama.cpp's device order: llama.cpp prints
/// buffers by buffer type, in no fixed device order, so each is placed by
/// the `using device NAME (DESCRIPTION)` line it belongs to (its buffer is
/// `NAME`, or `…[DESCRIPTION]` for an RPC device, `RPC0[host:port]`); a log
/// without those lines is ordered by the number ending the device name
/// (`CUDA2` before `CUDA10`).
fn logged_devices(log: &LlamaCppLog) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for b in log
        .model_buffers
        .iter()
        .chain(&log.kv_buffers)
        .chain(&log.compute_buffers)
    {
        if !host_buffer(&b.buffer) && !out.contains(&b.buffer) {
            out.push(b.buffer.clone());
        }
    }
    let listed = |b: &str| {
        log.devices.iter().position(|(name, desc)| {
            b == name || (!desc.is_empty() && b.ends_with(&format!("[{desc}]")))
        })
    };
    let number = |b: &str| -> Option<u64> {
        let head = b.split('[').next().unwrap_or(b);
        let digits: String = head
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse().ok()
    };
    if out.iter().all(|b| listed(b).is_some()) {
        out.sort_by_key(|b| listed(b));
    } else if out.iter().all(|b| number(b).is_some()) {
        out.sort_by_key(|b| number(b));
    }
    out
}

/// `--quant` as a weight format; an error naming it when it is none.
fn given_quant(args: &CheckArgs) -> Result<Option<ai_hwaccel::plan::Quant>> {
    args.quant
        .as_deref()
        .map(|q| {
            ai_hwaccel::plan::Quant::parse(&q.to_ascii_lowercase())
                .ok_or_else(|| anyhow::anyhow!("--quant {q}: not a weight format plan knows"))
        })
        .transpose()
}

/// The model and devices a benchmark's results are planned on (`--model`,
/// `--devices`; this machine's CPU where `cpu_only` and none is given),
/// with a note where either is missing; `ran_on` says what the devices
/// should be ("the benchmark", "the server").
fn bench_model_and_devices(
    args: &CheckArgs,
    notes: &mut Vec<String>,
    ran_on: &str,
    cpu_only: bool,
) -> Result<(
    Option<ai_hwaccel::plan::LoadedModel>,
    Vec<ai_hwaccel::plan::PlanDevice>,
)> {
    let Some(name) = &args.model else {
        notes.push(
            "pass --model (and --devices, --quant) to compare with the planner's speeds".into(),
        );
        return Ok((None, Vec::new()));
    };
    let model = crate::planning::load(name)?;
    let devices = devices_from(args.devices.as_ref(), None, cpu_only)?.0;
    if devices.is_empty() {
        notes.push(format!(
            "no accelerator to plan for: pass --devices (what {ran_on} ran on)"
        ));
    }
    Ok((Some(model), devices))
}

/// llama.cpp's cache type name as the planner's KV dtype.
fn kv_dtype(t: &str) -> Option<KvDtype> {
    Some(match t {
        "f16" => KvDtype::Fp16,
        "bf16" => KvDtype::Bf16,
        "f32" => KvDtype::Fp32,
        "q8_0" => KvDtype::Int8,
        _ => return None,
    })
}

pub fn check(args: &CheckArgs) -> Result<String> {
    // A start-up log is kilobytes; a log file that keeps growing is read up
    // to this bound (the parsers stop after 1 MiB of lines anyway).
    const MAX_LOG: u64 = 64 << 20;
    let bytes = crate::input::read_prefix(&args.log, MAX_LOG)?;
    let text = ai_hwaccel::model::text::decode(&bytes);
    // A CUDA or HIP build's start-up lines say whether it forced its MMQ
    // kernels; the speeds are planned for that build.
    let force_mmq = ai_hwaccel::plan::runtime::bench::cuda_force_mmq(&text) == Some(true);
    let serve = ai_hwaccel::plan::runtime::serve_bench::parse_serve_bench(&text);
    let batched = ai_hwaccel::plan::runtime::bench::parse_batched_bench(&text);
    // --runtime and --mixed-prefill describe a serving benchmark's server;
    // every other input names its runtime itself (llama-batched-bench,
    // llama-bench, a start-up log), where they would be silently wrong.
    if batched.is_some() || serve.is_empty() {
        let given = match (args.runtime, args.mixed_prefill, args.enforce_eager) {
            (Some(r), ..) => Some(format!("--runtime {r}")),
            (None, true, _) => Some("--mixed-prefill".to_string()),
            (None, false, true) => Some("--enforce-eager".to_string()),
            (None, false, false) => None,
        };
        if let Some(g) = given {
            bail!(
                "{}: {g} describes a serving benchmark's server; this is not serving benchmark output (llama-batched-bench, llama-bench or a runtime's start-up log names its runtime itself)",
                args.log.display()
            );
        }
    }
    if let Some(b) = batched {
        return check_batched(args, b, force_mmq);
    }
    if !serve.is_empty() {
        return check_serve(args, serve);
    }
    let bench = ai_hwaccel::plan::runtime::bench::parse_llama_bench(&text);
    let log = parse_llamacpp_log(&text);
    if !bench.is_empty() {
        let speeds = check_bench(
            args,
            bench,
            force_mmq,
            ai_hwaccel::plan::runtime::bench::vulkan_matrix_cores(&text),
        )?;
        // `llama-bench -v`: its start-up lines too (buffers of the last
        // model loaded), the JSON under `startup`.
        if log.model_buffers.is_empty() {
            return Ok(speeds);
        }
        let memory = check_llamacpp(args, log)?;
        if !args.json {
            return Ok(format!("{memory}\n{speeds}"));
        }
        let mut v: serde_json::Value = serde_json::from_str(&speeds)?;
        v["startup"] = serde_json::from_str(&memory)?;
        return Ok(format!("{}\n", serde_json::to_string_pretty(&v)?));
    }
    if log.is_empty() {
        let sg = parse_sglang_log(&text);
        if !sg.is_empty() {
            return check_sglang(args, sg);
        }
        let trt = ai_hwaccel::plan::runtime::log::parse_trtllm_log(&text);
        if !trt.is_empty() {
            return check_trtllm(args, trt);
        }
        let v = parse_vllm_log(&text);
        if v.is_empty() {
            bail!(
                "{}: no llama.cpp, vLLM or SGLang start-up lines, no llama-bench results and no serving benchmark results found (buffer sizes, n_ctx; weights, KV cache size; KV Cache is allocated; a pp/tg table, CSV or JSON; a \"Serving Benchmark Result\" block or its saved JSON)",
                args.log.display()
            );
        }
        return check_vllm(args, v);
    }
    check_llamacpp(args, log)
}

/// Two logged sizes together: their sum, the one the log prints, or none.
fn add_logged(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// A llama.cpp start-up log against the llama.cpp rule's plan.
fn check_llamacpp(args: &CheckArgs, mut log: LlamaCppLog) -> Result<String> {
    let seqs = log.n_seq_max.unwrap_or(1).max(1);
    let ctx = log.n_ctx.map(|c| c / seqs).or(log.n_ctx_slot);
    let kv = log.type_k.as_deref().and_then(kv_dtype);
    let mut notes = Vec::new();
    if buffers_from_breakdown(&mut log) {
        let projected = log.memory_breakdown.as_ref().is_some_and(|t| t.projected);
        notes.push(format!(
            "the log prints no buffer lines: weights, cache and compute buffers are read from llama.cpp's memory breakdown table ({}; whole MiB, floored; `context` is the KV cache with any recurrent state, the output buffer is in none of its columns)",
            if projected {
                "the --fit projection, which the fit kept unchanged"
            } else {
                "printed at exit"
            }
        ));
    }
    // What the table printed at exit says of each device beside llama.cpp's
    // own buffers (the driver's context, other processes).
    if let Some(t) = log.memory_breakdown.as_ref().filter(|t| !t.projected) {
        for r in t.rows.iter().filter(|r| r.kind == "device") {
            if let (Some(total), Some(free), Some(u)) = (r.total_mib, r.free_mib, r.unaccounted_mib)
            {
                notes.push(format!(
                    "{}: {total} MiB total, {free} MiB free at exit; llama.cpp held {} MiB, {u} MiB were used by neither it nor the free pool (the driver's context, other processes)",
                    r.name, r.self_mib
                ));
            }
        }
    }
    // A multimodal projector (`--mmproj`) loaded beside the model: its
    // CLIP weights and compute buffers are the encoder's, which the plans
    // leave out under llama.cpp.
    if log.encoder_model_bytes.is_some() || !log.encoder_compute_buffers.is_empty() {
        let mib = |b: u64| format!("{:.2} MiB", b as f64 / 1_048_576.0);
        let buffers: Vec<String> = log
            .encoder_compute_buffers
            .iter()
            .map(|b| format!("{} {}", b.buffer, mib(b.bytes)))
            .collect();
        notes.push(format!(
            "the run also loaded a multimodal projector (--mmproj): {} of encoder weights{}; not the text model's, and not in the plan (llama.cpp loads the encoder only with --mmproj)",
            log.encoder_model_bytes.map_or("an unstated size".into(), mib),
            if buffers.is_empty() {
                String::new()
            } else {
                format!(", compute buffers {}", buffers.join(", "))
            }
        ));
    }
    // Builds from May 2026 print the loader's and the context's lines only
    // at verbosity 4 (llama.cpp PR 23021).
    if log.model_buffers.is_empty() && log.kv_buffers.is_empty() && log.kv_total_bytes.is_none() {
        notes.push(match log.verbosity {
            Some(v) if v < 4 => format!(
                "the run logged at verbosity {v}: this llama.cpp prints its buffer sizes and context only at verbosity 4 (since May 2026, PR 23021): run it again with -lv 4 to compare them"
            ),
            _ => "the log prints no buffer sizes: builds since May 2026 print them only with -lv 4 (llama.cpp PR 23021)".into(),
        });
    }
    // The planner's cache is one type for K and V, of those it models.
    match (log.type_k.as_deref(), log.type_v.as_deref()) {
        (Some(k), _) if kv.is_none() => notes.push(format!(
            "the log's K cache type {k:?} is none the planner models (f16, bf16, f32, q8_0): its KV cache is predicted at f16"
        )),
        (Some(k), Some(v)) if k != v => notes.push(format!(
            "the log's K and V caches differ ({k} / {v}): the KV cache is predicted with both at {k}"
        )),
        _ => {}
    }
    // `offloaded 0/29 layers to GPU`: what was not offloaded (with its KV
    // cache) is in host memory, while the prediction is for the devices.
    if let Some((a, b)) = log.offloaded_layers.filter(|(a, b)| a < b) {
        notes.push(format!(
            "the log offloaded {a} of {b} layers to the GPU (-ngl): the rest and their KV cache are in host memory, where the prediction puts every layer on the devices (`plan --offload` plans a partial offload)"
        ));
    }
    // The CPU backend's repacked copies (`CPU_REPACK`) are a second copy of
    // some matrices: their own row, not weights.
    let (repack_bufs, weight_bufs): (Vec<_>, Vec<_>) = log
        .model_buffers
        .iter()
        .cloned()
        .partition(|b| b.buffer.contains("REPACK"));
    let logged_weights = LlamaCppLog::total(&weight_bufs);
    let logged_repack = LlamaCppLog::total(&repack_bufs);
    // A hybrid model's recurrent state (`llama_memory_recurrent: … RS
    // buffer size`) is compared with the plan's cache, which holds the
    // linear-attention layers' state beside the attention layers' KV.
    let logged_rs = log.rs_total_bytes.or(LlamaCppLog::total(&log.rs_buffers));
    let logged_kv = add_logged(
        log.kv_total_bytes.or(LlamaCppLog::total(&log.kv_buffers)),
        logged_rs,
    );
    if let Some(r) = logged_rs {
        notes.push(format!(
            "kv_cache is the KV cache plus the state the log prints beside it ({:.2} MiB: linear-attention layers' convolution windows and states, F32, or DeepSeek-V4's compressor states)",
            r as f64 / 1_048_576.0
        ));
    }
    let cpu_only = log
        .model_buffers
        .iter()
        .chain(&log.kv_buffers)
        .chain(&log.compute_buffers)
        .all(|b| b.buffer.starts_with("CPU") || b.buffer == "Host");
    // With an accelerator, the planner's buffers are the device's: the
    // pinned host buffers (`CUDA_Host` compute and output buffers) are host
    // memory, named in a note instead.
    let on_host = |b: &&ai_hwaccel::plan::runtime::log::LoggedBuffer| host_buffer(&b.buffer);
    let (host_bufs, device_bufs): (Vec<_>, Vec<_>) = log
        .compute_buffers
        .iter()
        .map(|b| ("compute", b))
        .chain(log.output_buffers.iter().map(|b| ("output", b)))
        .partition(|(_, b)| on_host(b));
    let device_bufs: Vec<_> = device_bufs.into_iter().map(|(_, b)| b.clone()).collect();
    let logged_compute = if cpu_only {
        add_logged(
            LlamaCppLog::total(&log.compute_buffers),
            LlamaCppLog::total(&log.output_buffers),
        )
    } else {
        if !host_bufs.is_empty() {
            notes.push(format!(
                "host-side buffers not compared with the device's: {}",
                host_bufs
                    .iter()
                    .map(|(kind, b)| format!(
                        "{} {kind} {:.2} MiB",
                        b.buffer,
                        b.bytes as f64 / 1048576.0
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        LlamaCppLog::total(&device_bufs)
    };
    // The weights' format the log names (`print_info: file type = Q4_0`):
    // a catalog model or a config is planned at it, as the runtime ran it.
    let logged_quant = log
        .file_type
        .as_deref()
        .and_then(ai_hwaccel::plan::runtime::bench::quant_of_model);
    let mut predicted = (None, None, None, None);
    let mut per_device = Vec::new();
    if let Some(model) = &args.model {
        let m = crate::planning::load(model)?;
        let (devices, _) = devices_from(args.devices.as_ref(), None, true)?;
        if cpu_only && args.devices.is_none() && !devices.iter().all(|d| d.host) {
            notes.push("the log's buffers are all CPU buffers, but this machine has accelerators: pass --devices".into());
        }
        // Flash attention as the log prints it (`llama_context: flash_attn
        // = disabled`): without it the compute buffer holds every score.
        let fused = match log
            .flash_attn
            .as_deref()
            .and_then(ai_hwaccel::plan::runtime::bench::flash)
        {
            Some(f) => f,
            None => {
                notes.push(
                    "the log prints no flash_attn setting this reads: planned with flash attention on"
                        .into(),
                );
                true
            }
        };
        // The devices llama.cpp measured (its memory breakdown table at
        // exit) against the planned ones, in order: a card of another size
        // (a 20 GB conversion of a 10 GB part, MIG, another GPU) is said.
        if let Some(t) = log.memory_breakdown.as_ref().filter(|t| !t.projected) {
            let planned = devices.iter().filter(|d| !d.host);
            for (r, d) in t.rows.iter().filter(|r| r.kind == "device").zip(planned) {
                let (Some(total), Some(cap)) = (r.total_mib, d.capacity_bytes) else {
                    continue;
                };
                // Unified memory (Apple, GB10, Strix Halo): the backend
                // reports a working-set limit below the system's memory,
                // not another device's size.
                let unified = d
                    .spec_id
                    .as_deref()
                    .and_then(ai_hwaccel::spec::by_id)
                    .is_some_and(|e| e.unified_memory);
                if unified {
                    continue;
                }
                let visible =
                    ai_hwaccel::plan::runtime::cuda_visible_bytes(d.spec_id.as_deref(), cap);
                let seen = total << 20;
                if seen.abs_diff(visible) as f64 > 0.05 * visible as f64 {
                    notes.push(format!(
                        "{} has {total} MiB as llama.cpp measured it, where the planned {} has {:.0} MiB: the prediction is for the planned device (pass --devices for the card the log is of)",
                        r.name,
                        d.id,
                        visible as f64 / 1_048_576.0
                    ));
                }
            }
        }
        let host_ids: Vec<String> = devices
            .iter()
            .filter(|d| d.host)
            .map(|d| d.id.clone())
            .collect();
        let opts = InferenceOptions {
            context: ctx,
            batch: seqs,
            kv_dtype: kv,
            max_plans: 64,
            runtime: RuntimeKind::LlamaCpp,
            fused_attention: fused,
            ..InferenceOptions::default()
        };
        let mut opts = ai_hwaccel::plan::options_for(&m, &opts);
        if opts.quant.is_none() {
            opts.quant = logged_quant;
            if let (None, Some(t)) = (logged_quant, &log.file_type) {
                notes.push(format!(
                    "the log's file type {t:?} is no format the planner knows: planned at the model's default"
                ));
            }
        }
        let p = plan_inference(&m.spec, &devices, &opts);
        // Several devices in the log: llama.cpp's default layer split, one
        // stage per device, when the planner has that layout.
        let logged = logged_devices(&log);
        let stages = logged.len() as u32;
        let chosen = p
            .plans
            .iter()
            .find(|c| {
                stages > 1
                    && c.tensor_parallel == 1
                    && c.data_parallel == 1
                    && c.per_device
                        .iter()
                        .filter(|d| !host_ids.contains(&d.device))
                        .count()
                        == stages as usize
            })
            .or(p.plans.first());
        if let Some(c) = chosen {
            let planned: Vec<&ai_hwaccel::plan::inference::DeviceMemory> = c
                .per_device
                .iter()
                .filter(|d| d.replica == 0 && !host_ids.contains(&d.device))
                .collect();
            if logged.len() > 1 && logged.len() == planned.len() {
                let of = |list: &[ai_hwaccel::plan::runtime::log::LoggedBuffer], name: &str| {
                    let v: u64 = list
                        .iter()
                        .filter(|b| b.buffer == name)
                        .map(|b| b.bytes)
                        .sum();
                    list.iter().any(|b| b.buffer == name).then_some(v)
                };
                per_device = logged
                    .iter()
                    .zip(&planned)
                    .map(|(name, d)| DeviceCheck {
                        device: name.clone(),
                        planned_device: d.device.clone(),
                        planned_layers: d.layers,
                        rows: vec![
                            make_row(
                                "weights",
                                of(&log.model_buffers, name),
                                Some(d.weights_bytes),
                            ),
                            make_row(
                                "kv_cache",
                                add_logged(of(&log.kv_buffers, name), of(&log.rs_buffers, name)),
                                Some(d.kv_cache_bytes),
                            ),
                            make_row(
                                "compute_and_output_buffers",
                                add_logged(
                                    of(&log.compute_buffers, name),
                                    of(&log.output_buffers, name),
                                ),
                                Some(d.activation_bytes),
                            ),
                        ],
                    })
                    .collect();
            } else if logged.len() > 1 {
                notes.push(format!(
                    "the log has {} devices and the plan {} stages: devices not compared one by one",
                    logged.len(),
                    planned.len()
                ));
            }
        }
        match chosen {
            Some(best) => {
                let sum = |f: &dyn Fn(&ai_hwaccel::plan::inference::DeviceMemory) -> u64| {
                    Some(
                        best.per_device
                            .iter()
                            .filter(|d| d.replica == 0)
                            .map(f)
                            .sum::<u64>(),
                    )
                };
                let host: Vec<&str> = devices
                    .iter()
                    .filter(|d| d.host)
                    .map(|d| d.id.as_str())
                    .collect();
                predicted = (
                    // The log's CPU model buffer holds what llama.cpp keeps
                    // in host memory beside the GPUs (the token embedding).
                    sum(&|d| d.weights_bytes).map(|w| w + best.host_weights_bytes),
                    sum(&|d| d.kv_cache_bytes),
                    sum(&|d| d.activation_bytes),
                    sum(&|d| {
                        if host.contains(&d.device.as_str()) {
                            d.overhead_bytes
                        } else {
                            0
                        }
                    }),
                );
            }
            None => notes.push(format!(
                "the planner found no plan for {model} with these options: {}",
                p.advice.join("; ")
            )),
        }
    } else {
        notes.push("pass --model to compare with the planner's prediction".into());
    }
    let row = make_row;
    let report = Report {
        runtime: "llama.cpp",
        context_per_sequence: ctx,
        sequences: Some(seqs),
        kv_dtype: kv,
        vllm_log: None,
        sglang_log: None,
        trtllm_log: None,
        rows: vec![
            row("weights", logged_weights, predicted.0),
            row("kv_cache", logged_kv, predicted.1),
            row("compute_and_output_buffers", logged_compute, predicted.2),
            row(
                "cpu_repacked_weights",
                logged_repack.or(predicted.3.map(|_| 0)),
                predicted.3,
            ),
        ],
        log,
        per_device,
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let mib = |b: Option<u64>| match b {
        Some(b) => format!("{:.2} MiB", b as f64 / 1_048_576.0),
        None => "—".into(),
    };
    let mut s = format!(
        "llama.cpp log: n_ctx {} ({} per sequence × {} sequences), n_ubatch {}, cache {}/{}, offloaded {}\n",
        report.log.n_ctx.map_or("?".into(), |v| v.to_string()),
        ctx.map_or("?".into(), |v| v.to_string()),
        seqs,
        report.log.n_ubatch.map_or("?".into(), |v| v.to_string()),
        report.log.type_k.as_deref().unwrap_or("?"),
        report.log.type_v.as_deref().unwrap_or("?"),
        report
            .log
            .offloaded_layers
            .map_or("?".into(), |(a, b)| format!("{a}/{b} layers")),
    );
    s += &format!(
        "{:<28} {:>14} {:>14} {:>10}\n",
        "component", "logged", "predicted", "pred/log"
    );
    // One line per component, indented under a device of a split.
    let line = |indent: &str, r: &Row| {
        format!(
            "{indent}{:<w$} {:>14} {:>14} {:>10}\n",
            r.component,
            mib(r.logged_bytes),
            mib(r.predicted_bytes),
            r.ratio.map_or("—".into(), |x| format!("{x:.3}")),
            w = 28 - indent.len()
        )
    };
    for r in &report.rows {
        s += &line("", r);
    }
    for d in &report.per_device {
        s += &format!(
            "{} (planned {}, layers {}-{}):\n",
            d.device,
            d.planned_device,
            d.planned_layers.0,
            d.planned_layers.1.saturating_sub(1)
        );
        for r in &d.rows {
            s += &line("  ", r);
        }
    }
    for n in &report.notes {
        s += &format!("note: {n}\n");
    }
    Ok(s)
}

fn make_row(component: &'static str, logged: Option<u64>, pred: Option<u64>) -> Row {
    Row {
        component,
        logged_bytes: logged,
        predicted_bytes: pred,
        ratio: match (logged, pred) {
            (Some(l), Some(p)) if l > 0 => Some(p as f64 / l as f64),
            _ => None,
        },
    }
}

/// vLLM: weights and KV cache per GPU and the KV capacity in tokens, logged
/// against the vLLM rule's plan for the logged context, utilization and
/// tensor-parallel size.
/// The weights' format a vLLM or SGLang prediction is made at: `--quant`,
/// else what the log's dtype and quantization method name
/// (`runtime::log::serving_quant`), else the model's own (with a note).
fn serving_quant_for(
    args: &CheckArgs,
    dtype: Option<&str>,
    quantization: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<ai_hwaccel::plan::Quant>> {
    if let Some(q) = &args.quant {
        return ai_hwaccel::plan::Quant::parse(q)
            .map(Some)
            .ok_or_else(|| anyhow::anyhow!("--quant {q}: not a weight format plan knows"));
    }
    let logged = ai_hwaccel::plan::runtime::log::serving_quant(dtype, quantization);
    if logged.is_none() {
        notes.push(match (dtype, quantization.filter(|q| !q.eq_ignore_ascii_case("none"))) {
            (_, Some(q)) => format!(
                "the log's quantization {q:?} is no format the planner models: predicted at the model's default (pass --quant)"
            ),
            (Some(d), None) => format!(
                "the log's dtype {d:?} is no format the planner models: predicted at the model's default (pass --quant)"
            ),
            (None, None) => {
                "the log names no dtype or quantization: predicted at the model's default (pass --quant)"
                    .to_string()
            }
        });
    }
    Ok(logged)
}

fn check_vllm(args: &CheckArgs, v: VllmLog) -> Result<String> {
    let context = v.max_model_len.or(v.max_concurrency.map(|(t, _)| t));
    // Older logs give blocks; vLLM's default block is 16 tokens (CacheConfig.block_size).
    let logged_tokens = v.kv_cache_tokens.or(v.gpu_blocks.map(|b| b * 16));
    let mut notes = Vec::new();
    if let Some(p) = v.kv_cache_pools.as_deref().filter(|p| p.contains("host")) {
        notes.push(format!(
            "the logged token capacity counts the {p} pools (vLLM's HiSparse keeps part of the cache in host memory): the prediction is for the GPU's alone"
        ));
    }
    let mut predicted: (Option<u64>, Option<u64>, Option<u64>) = (None, None, None);
    let mut predicted_activation = None;
    // A hybrid model's token capacity computed from the logged KV memory
    // by vLLM's block rules (`VllmHybridBlocks`).
    let mut tokens_from_logged = None;
    if let Some(model) = &args.model {
        let mut m = crate::planning::load(model)?;
        let (devices, _) = devices_from(args.devices.as_ref(), None, false)?;
        if devices.is_empty() {
            notes.push(
                "no accelerator to plan for: pass --devices (the GPUs the log is from)".into(),
            );
        }
        // The checkpoint's bitsandbytes skip list, where the log prints it
        // (Unsloth's dynamic 4-bit keeps some layers at 16 bits).
        if !v.skip_modules.is_empty() {
            use ai_hwaccel::plan::source::unquantized;
            let r = unquantized::resolve(&m.spec, "bitsandbytes", &v.skip_modules);
            if r.any() {
                let (n, layers) = r.counts(&m.spec);
                notes.push(format!(
                    "the log's llm_int8_skip_modules keep {n} projections of {layers} layer{} at 16 bits ({}): predicted with them at 16 bits",
                    if layers == 1 { "" } else { "s" },
                    r.matched.join(", ")
                ));
                unquantized::apply(&mut m.spec, &r);
            }
            if !r.unmatched.is_empty() {
                notes.push(format!(
                    "llm_int8_skip_modules entries that name no decoder projection this reads, not counted: {}",
                    r.unmatched.join(", ")
                ));
            }
        }
        let quant = serving_quant_for(
            args,
            v.dtype.as_deref(),
            v.quantization.as_deref(),
            &mut notes,
        )?;
        // The release's own default where the log names the release.
        let release_default = v
            .version
            .as_deref()
            .and_then(ai_hwaccel::plan::runtime::vllm_default_memory_utilization);
        let opts = InferenceOptions {
            context,
            max_plans: 64,
            runtime: RuntimeKind::Vllm,
            memory_utilization: v
                .gpu_memory_utilization
                .or(release_default)
                .unwrap_or(ai_hwaccel::plan::inference::DEFAULT_MEMORY_UTILIZATION),
            max_num_seqs: v.max_num_seqs,
            max_num_batched_tokens: v.max_num_batched_tokens,
            // `fp8`, `fp8_e4m3`, `fp8_e5m2`: one byte; `auto`: the model's.
            kv_dtype: v
                .kv_cache_dtype
                .as_deref()
                .filter(|d| d.starts_with("fp8"))
                .map(|_| ai_hwaccel::plan::KvDtype::Fp8),
            ..InferenceOptions::default()
        };
        let mut opts = ai_hwaccel::plan::options_for(&m, &opts);
        if quant.is_some() {
            opts.quant = quant;
        }
        if v.gpu_memory_utilization.is_none() {
            notes.push(match (release_default, v.version.as_deref()) {
                (Some(u), Some(version)) => format!(
                    "the log prints no gpu_memory_utilization: predicted at vLLM {version}'s default {u}"
                ),
                _ => format!(
                    "the log prints no gpu_memory_utilization: predicted at vLLM's default {}",
                    ai_hwaccel::plan::inference::DEFAULT_MEMORY_UTILIZATION
                ),
            });
        }
        let p = plan_inference(&m.spec, &devices, &opts);
        let tp = v.tensor_parallel_size.map(|t| t as u32);
        let pp = v.pipeline_parallel_size.map_or(1, |n| n as u32);
        let best = p
            .plans
            .iter()
            .find(|b| tp.is_none_or(|t| b.tensor_parallel == t) && b.pipeline_parallel == pp)
            .or(p.plans.first());
        if pp > 1 {
            notes.push(if best.is_some_and(|b| b.pipeline_parallel == pp) {
                format!(
                    "pipeline parallelism {pp}: the log's figures are rank 0's, compared with \
                     the plan's first stage"
                )
            } else {
                format!(
                    "pipeline parallelism {pp}: the planner has no plan with {pp} stages on these \
                     devices, so the log's rank-0 figures are compared with another layout"
                )
            });
        }
        match best {
            Some(b) => {
                let d = &b.per_device[0];
                predicted = (Some(d.weights_bytes), None, b.kv_cache_capacity_tokens);
                predicted_activation = Some(d.activation_bytes);
                // The KV memory of one GPU: its capacity less what the rule keeps.
                predicted.1 = d
                    .capacity_bytes
                    .checked_sub(d.weights_bytes + d.activation_bytes + d.overhead_bytes);
                if b.tensor_parallel > 1 {
                    notes.push(format!(
                        "compared per GPU at tensor parallelism {} (capacity in tokens: all GPUs of one replica)",
                        b.tensor_parallel
                    ));
                }
                cudagraph_estimate(&v, &mut predicted, &mut notes);
                if let Some(c) = context {
                    tokens_from_logged =
                        hybrid_pool(&v, &m.spec, &devices, b, c, &mut predicted, &mut notes)
                            .or_else(|| {
                                sliding_pool(
                                    &v,
                                    &m.spec,
                                    &devices,
                                    b,
                                    c,
                                    &mut predicted,
                                    &mut notes,
                                )
                            });
                }
            }
            None => notes.push(format!(
                "the planner found no plan for {model}: {}",
                p.advice.join("; ")
            )),
        }
    } else {
        notes.push("pass --model and --devices to compare with the planner's prediction".into());
    }
    if v.engine.as_deref() == Some("v0") {
        notes.push(format!(
            "this log is from vLLM's V0 engine, which profiled activations at max_num_batched_tokens (the whole context without chunked prefill); the planner follows {} (V1, chunked prefill), so expect less KV memory in the log than predicted",
            ai_hwaccel::plan::runtime::VLLM_PINNED_DEFINITIONS
        ));
    }
    if let (Some(len), Some(cap)) = (v.max_model_len, v.max_tokens_in_kv_cache) {
        notes.push(format!(
            "vLLM refused to start: max_model_len {len} is more than the {cap} tokens its KV cache holds"
        ));
    }
    let report = Report {
        runtime: "vllm",
        log: LlamaCppLog::default(),
        context_per_sequence: context,
        sequences: None,
        kv_dtype: None,
        rows: vec![
            make_row("weights_per_gpu", v.weights_bytes, predicted.0),
            make_row("kv_cache_memory_per_gpu", v.kv_cache_bytes, predicted.1),
            make_row("kv_cache_capacity_tokens", logged_tokens, predicted.2),
            make_row(
                "activation_peak_per_gpu",
                v.activation_peak_bytes,
                predicted_activation,
            ),
        ]
        .into_iter()
        .chain(
            tokens_from_logged
                .map(|t| make_row("kv_cache_tokens_from_logged_memory", logged_tokens, Some(t))),
        )
        .collect(),
        vllm_log: Some(v),
        sglang_log: None,
        trtllm_log: None,
        per_device: Vec::new(),
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let title = format!(
        "vLLM log: context {}, gpu_memory_utilization {}",
        context.map_or("?".into(), |c| c.to_string()),
        report
            .vllm_log
            .as_ref()
            .and_then(|v| v.gpu_memory_utilization)
            .map_or("?".into(), |u| u.to_string())
    );
    Ok(render_rows(&title, &report))
}

/// vLLM 0.18 on measures the memory its CUDA graphs take before it sizes
/// the KV cache, and from 0.20 takes it off the cache by default
/// (`ai_hwaccel::plan::runtime::vllm_subtracts_cudagraph_estimate`). The
/// planner does not predict that figure, so where the log shows vLLM took
/// it off, the predicted KV memory and tokens lose the logged figure too
/// (the tokens in proportion), and the note says it is the log's.
fn cudagraph_estimate(
    v: &VllmLog,
    predicted: &mut (Option<u64>, Option<u64>, Option<u64>),
    notes: &mut Vec<String>,
) {
    let release = v
        .version
        .as_deref()
        .map_or("vLLM".to_string(), |v| format!("vLLM {v}"));
    if !ai_hwaccel::plan::runtime::vllm_subtracts_cudagraph_estimate(
        v.version.as_deref(),
        v.cudagraph_estimate_subtracted,
    ) {
        return;
    }
    let Some(g) = v.cudagraph_estimate_bytes else {
        notes.push(format!(
            "{release} takes a CUDA-graph memory estimate off the KV cache on CUDA GPUs, and this log does not print it (`Estimated CUDA graph memory`): on a CUDA GPU expect less KV memory in the log than predicted (on ROCm and XPU vLLM skips the estimate: `gpu_worker.py`, 0.21.0)"
        ));
        return;
    };
    if let Some(kv) = predicted.1 {
        let left = kv.saturating_sub(g);
        if let Some(t) = predicted.2 {
            predicted.2 = Some(if kv == 0 {
                0
            } else {
                (t as f64 * left as f64 / kv as f64).floor() as u64
            });
        }
        predicted.1 = Some(left);
    }
    notes.push(format!(
        "{release} took its CUDA-graph memory estimate, {:.2} GiB per GPU as the log prints it (measured at start-up, not predicted), off the KV cache: the predicted KV memory and tokens lose it too",
        g as f64 / 1_073_741_824.0
    ));
}

/// The device a plan's first rank runs on, among the planned devices.
fn first_planned_device<'a>(
    devices: &'a [ai_hwaccel::plan::PlanDevice],
    b: &ai_hwaccel::plan::inference::Plan,
) -> Option<&'a ai_hwaccel::plan::PlanDevice> {
    let first = &b.per_device.first()?.device;
    devices.iter().find(|d| &d.id == first)
}

/// A hybrid model (linear-attention layers beside full attention) under
/// vLLM: the KV pool in blocks of the log's release
/// (`VllmHybridMode::of_release`, prefix caching as the log sets it), so
/// the predicted token capacity is the one vLLM would print for the
/// predicted memory, and the capacity the block rules give for the
/// logged memory is returned beside the logged count (the logged memory
/// is rounded to 0.01 GiB, a block or so).
fn hybrid_pool(
    v: &VllmLog,
    spec: &ai_hwaccel::plan::ModelSpec,
    devices: &[ai_hwaccel::plan::PlanDevice],
    b: &ai_hwaccel::plan::inference::Plan,
    context: u64,
    predicted: &mut (Option<u64>, Option<u64>, Option<u64>),
    notes: &mut Vec<String>,
) -> Option<u64> {
    use ai_hwaccel::plan::runtime::{VllmHybridBlocks, VllmHybridMode};
    let l = spec.linear_attention.as_ref()?;
    let cc = first_planned_device(devices, b)
        .and_then(|d| d.spec_id.as_deref())
        .and_then(ai_hwaccel::spec::by_id)
        .and_then(ai_hwaccel::plan::speed::nvidia_compute_capability);
    let mode = VllmHybridMode::of_release(
        v.version.as_deref(),
        v.enable_prefix_caching,
        cc,
        l.key_head_dim,
    );
    let h = VllmHybridBlocks::new(
        spec,
        b.tensor_parallel,
        b.kv_dtype.bytes(),
        b.quantization.unquantized_bytes(),
        mode,
    )?;
    let per_block = rank0_block(
        b,
        (h.page_bytes, h.group_size),
        |a, z| h.stage_bytes_per_block(spec, a, z),
        predicted,
        notes,
    )
    .unwrap_or_else(|| {
        if let Some(kv) = predicted.1 {
            predicted.2 = Some(h.capacity_tokens(h.num_blocks(kv), context));
        }
        h.bytes_per_block()
    });
    notes.push(format!(
        "a hybrid model: vLLM{} holds its KV cache as a pool of blocks of {} tokens, {} per request of {context} tokens (prefix caching {}{}); the token capacities follow that pool",
        v.version
            .as_deref()
            .map_or(String::new(), |r| format!(" {r}")),
        h.block_size,
        h.blocks_per_request(context),
        if mode.prefix_caching { "on" } else { "off" },
        if mode.prefill_checkpoint {
            ", FlashInfer GDN checkpoints"
        } else {
            ""
        }
    ));
    v.kv_cache_bytes
        .and_then(|kv| kv.checked_div(per_block))
        .map(|blocks| h.capacity_tokens(blocks, context))
}

/// Over pipeline stages, the bytes of one block where rank 0 runs, for a
/// vLLM block pool of `(page bytes, layers per group)` whose block on the
/// layers `a..z` of a stage is `stage_block`; `None` for a plan of one
/// stage. The log's memory is rank 0's, on the first stage, whose block
/// spans its own layers of the model's groups: the predicted capacity is
/// then the plan's (the fewest blocks of any stage), and a note says so.
fn rank0_block(
    b: &ai_hwaccel::plan::inference::Plan,
    (page, group): (u64, u64),
    stage_block: impl Fn(u32, u32) -> u64,
    predicted: &mut (Option<u64>, Option<u64>, Option<u64>),
    notes: &mut Vec<String>,
) -> Option<u64> {
    let (a, z) = stage0_layers(b)?;
    let per_block = stage_block(a, z);
    predicted.2 = b.kv_cache_capacity_tokens;
    notes.push(format!(
        "rank 0 holds layers {a}-{}: a block there spans {} layers' pages (of {group} on one \
         GPU); vLLM cuts every stage to the fewest blocks any stage holds, which rank 0's memory \
         alone does not show",
        z.saturating_sub(1),
        per_block / page.max(1),
    ));
    Some(per_block)
}

/// The first stage's layers of a pipeline-parallel plan (`None` with one
/// stage): where rank 0, whose figures a log prints, runs.
fn stage0_layers(b: &ai_hwaccel::plan::inference::Plan) -> Option<(u32, u32)> {
    (b.pipeline_parallel > 1)
        .then(|| b.per_device.first().map(|d| d.layers))
        .flatten()
}

/// vLLM: the KV pool of a model with sliding-window layers beside full
/// attention in blocks of the log's release (`VllmSlidingBlocks`), at the
/// log's `max_num_batched_tokens` (else vLLM's default for the GPU): the
/// predicted token capacity is the one vLLM would print for the predicted
/// memory, and the capacity its rules give for the logged memory is
/// returned beside the logged count.
fn sliding_pool(
    v: &VllmLog,
    spec: &ai_hwaccel::plan::ModelSpec,
    devices: &[ai_hwaccel::plan::PlanDevice],
    b: &ai_hwaccel::plan::inference::Plan,
    context: u64,
    predicted: &mut (Option<u64>, Option<u64>, Option<u64>),
    notes: &mut Vec<String>,
) -> Option<u64> {
    use ai_hwaccel::plan::runtime::VllmSlidingBlocks;
    let d = first_planned_device(devices, b)?;
    let batched = v.max_num_batched_tokens.unwrap_or_else(|| {
        let visible = ai_hwaccel::plan::runtime::cuda_visible_bytes(
            d.spec_id.as_deref(),
            d.capacity_bytes.unwrap_or(0),
        );
        ai_hwaccel::plan::runtime::vllm_batch_defaults(visible, &d.name).0
    });
    let s = VllmSlidingBlocks::new(
        spec,
        b.tensor_parallel,
        b.kv_dtype.bytes(),
        batched,
        v.version.as_deref(),
    )?;
    let per_block = rank0_block(
        b,
        (s.page_bytes, s.group_size),
        |a, z| s.stage_bytes_per_block(spec, a, z),
        predicted,
        notes,
    )
    .unwrap_or_else(|| {
        if let Some(kv) = predicted.1 {
            predicted.2 = Some(s.capacity_tokens(s.num_blocks(kv), context));
        }
        s.bytes_per_block()
    });
    notes.push(format!(
        "sliding-window layers beside full attention: vLLM{} holds the KV cache as one pool of blocks, {} per request of {context} tokens ({} full and {} sliding groups of {} layers; a sliding group keeps the {}-token window and {} tokens in flight); the token capacities follow that pool",
        v.version
            .as_deref()
            .map_or(String::new(), |r| format!(" {r}")),
        s.blocks_per_request(context),
        s.full_groups,
        s.sliding_groups,
        s.group_size,
        s.window,
        s.in_flight
    ));
    v.kv_cache_bytes
        .and_then(|kv| kv.checked_div(per_block))
        .map(|blocks| s.capacity_tokens(blocks, context))
}

/// The text table of a vLLM or SGLang report: one row per component,
/// bytes in GiB, token counts and per-token bytes as such, then the notes.
fn render_rows(title: &str, report: &Report) -> String {
    let show = |r: &Row, b: Option<u64>| match (r.component, b) {
        ("kv_cache_capacity_tokens" | "kv_cache_tokens_from_logged_memory", Some(t)) => {
            format!("{t} tokens")
        }
        ("kv_bytes_per_token_per_gpu", Some(t)) => format!("{t} B"),
        (_, Some(b)) => format!("{:.2} GiB", b as f64 / 1_073_741_824.0),
        (_, None) => "—".into(),
    };
    let mut s = format!("{title}\n");
    s += &format!(
        "{:<28} {:>16} {:>16} {:>10}\n",
        "component", "logged", "predicted", "pred/log"
    );
    for r in &report.rows {
        s += &format!(
            "{:<28} {:>16} {:>16} {:>10}\n",
            r.component,
            show(r, r.logged_bytes),
            show(r, r.predicted_bytes),
            r.ratio.map_or("—".into(), |x| format!("{x:.3}"))
        );
    }
    for n in &report.notes {
        s += &format!("note: {n}\n");
    }
    s
}

/// KV cache bytes one token takes on one GPU at tensor parallelism `tp`
/// with `element_bytes` per value: `kv_heads ÷ tp × head_dim × 2 (K, V) ×
/// layers` values (the heads replicated past their count), or the MLA
/// latent on every rank — the cell size SGLang and TensorRT-LLM size
/// their pools by.
fn kv_bytes_per_token_per_gpu(
    spec: &ai_hwaccel::plan::ModelSpec,
    tp: u32,
    element_bytes: f64,
) -> f64 {
    let per_layer = match &spec.mla {
        Some(_) => spec.kv_elements_per_token_layer(),
        None => 2 * u64::from(spec.kv_heads_per_rank(tp)) * spec.head_dim,
    };
    // A hybrid model's linear-attention layers cache no tokens: SGLang's
    // token pool holds the full-attention layers only (its Mamba pool the
    // rest, sized apart).
    let layers = spec.num_layers - spec.linear_layers();
    (per_layer * u64::from(layers)) as f64 * element_bytes
}

/// Bytes per cache element for SGLang's `kv_cache_dtype` (`auto`: the
/// model's 16-bit type).
fn sglang_kv_element_bytes(dtype: Option<&str>) -> Option<f64> {
    match dtype.unwrap_or("auto") {
        "auto" | "bfloat16" | "float16" | "bf16" | "fp16" | "half" => Some(2.0),
        "float32" | "fp32" => Some(4.0),
        d if d.starts_with("fp8") || d.starts_with("float8") => Some(1.0),
        _ => None,
    }
}

/// SGLang: weights, the KV pool and its capacity per GPU, and the pool's
/// bytes per token, logged against the planner for the logged tensor
/// parallelism and `mem_fraction_static`. SGLang's pool is what is left of
/// `mem_fraction_static` of the GPU after the weights
/// (`model_runner.py`: `rest_memory = available_after_weights −
/// total_gpu_memory × (1 − mem_fraction_static)`), divided by the cell size
/// of one token (`kv_heads ÷ tp × head_dim × layers × 2 × element bytes`,
/// or the MLA latent).
fn check_sglang(args: &CheckArgs, l: SglangLog) -> Result<String> {
    let tp = l.tp_size.unwrap_or(1).max(1) as u32;
    let mut notes = Vec::new();
    let (mut w_pred, mut kv_pred, mut tok_pred, mut per_token_pred) = (None, None, None, None);
    if let Some(model) = &args.model {
        let m = crate::planning::load(model)?;
        let spec = &m.spec;
        match sglang_kv_element_bytes(l.kv_cache_dtype.as_deref()) {
            Some(b) => per_token_pred = Some(kv_bytes_per_token_per_gpu(spec, tp, b)),
            None => notes.push(format!(
                "KV cache dtype {:?} not known to the comparison",
                l.kv_cache_dtype
            )),
        }
        if l.sliding_window_tokens.is_some() {
            notes.push(
                "this pool has sliding-window parts: SGLang sizes them apart; the per-token comparison counts every layer as full attention".into(),
            );
        }
        if let Some(m) = l.mamba_cache_bytes {
            notes.push(format!(
                "SGLang holds the linear-attention layers' state in a pool of its own ({:.2} GiB logged per GPU); the per-token comparison counts the full-attention layers ({} of {})",
                m as f64 / f64::from(1u32 << 30),
                spec.num_layers - spec.linear_layers(),
                spec.num_layers
            ));
        }
        let (devices, _) = devices_from(args.devices.as_ref(), None, false)?;
        if devices.is_empty() {
            notes.push(
                "no accelerator to plan for: pass --devices (the GPUs the log is from)".into(),
            );
        } else {
            let quant = serving_quant_for(
                args,
                l.dtype.as_deref(),
                l.quantization.as_deref(),
                &mut notes,
            )?;
            // Planned at the log's fraction: whether the weights fit is
            // SGLang's rule at the fraction the server ran with.
            let opts = InferenceOptions {
                context: l.context_len,
                max_plans: 64,
                runtime: RuntimeKind::Sglang,
                mem_fraction_static: l.mem_fraction_static,
                ..InferenceOptions::default()
            };
            let mut opts = ai_hwaccel::plan::options_for(&m, &opts);
            if quant.is_some() {
                opts.quant = quant;
            }
            let mut p = plan_inference(spec, &devices, &opts);
            let at_tp = |p: &ai_hwaccel::plan::InferencePlan| {
                p.plans
                    .iter()
                    .any(|b| b.tensor_parallel == tp && b.pipeline_parallel == 1)
            };
            // SGLang starts with a pool smaller than one request of its
            // context length (the planner's plans must hold one): what is
            // compared, the weights per GPU and the pool from
            // mem_fraction_static, does not depend on the context.
            let short_context = ai_hwaccel::plan::inference::DEFAULT_CONTEXT;
            if !at_tp(&p) && l.context_len.is_some_and(|c| c > short_context) {
                let short = InferenceOptions {
                    context: Some(short_context),
                    ..opts.clone()
                };
                let retry = plan_inference(spec, &devices, &short);
                if at_tp(&retry) {
                    notes.push(format!(
                        "no plan holds one {}-token request at tensor parallelism {tp}: the weights are those of a plan at {short_context} tokens (the pool below is SGLang's rule, whatever the context)",
                        l.context_len.unwrap_or(0)
                    ));
                    p = retry;
                }
            }
            let pick = p
                .plans
                .iter()
                .find(|b| b.tensor_parallel == tp && b.pipeline_parallel == 1);
            match pick {
                Some(b) => {
                    let d = &b.per_device[0];
                    w_pred = Some(d.weights_bytes);
                    // SGLang's total is what CUDA reports.
                    let visible = ai_hwaccel::plan::runtime::cuda_visible_bytes(
                        devices[0].spec_id.as_deref(),
                        d.capacity_bytes,
                    );
                    let fraction = l.mem_fraction_static.unwrap_or_else(|| {
                        ai_hwaccel::plan::runtime::SglangMemoryDefaults::for_device(
                            &devices[0],
                            d.capacity_bytes,
                            tp,
                            1,
                            spec.mla.is_some(),
                            spec.multimodal_encoder.as_ref(),
                        )
                        .mem_fraction_static
                    });
                    if l.mem_fraction_static.is_none() {
                        notes.push(format!(
                            "mem_fraction_static not in the log: SGLang {}'s default for this GPU and TP, {fraction:.3} (older releases reserved differently)",
                            ai_hwaccel::plan::runtime::SGLANG_PINNED_DEFINITIONS
                                .split(' ')
                                .nth(1)
                                .unwrap_or("0.5.23")
                        ));
                    }
                    // Of the free memory before the weights load, not of
                    // the total (SGLANG_INIT_BYTES).
                    let kv = ai_hwaccel::plan::runtime::sglang_pool_bytes(
                        visible,
                        fraction,
                        d.weights_bytes,
                    ) as f64;
                    kv_pred = Some(kv as u64);
                    tok_pred = per_token_pred.filter(|t| *t > 0.0).map(|t| (kv / t) as u64);
                }
                None => notes.push(format!(
                    "the planner has no plan at tensor parallelism {tp} on these devices: {}",
                    p.advice.join("; ")
                )),
            }
        }
    } else {
        notes.push("pass --model (and --devices) to compare with the planner's prediction".into());
    }
    let per_token_logged = l.kv_bytes_per_token();
    let report = Report {
        runtime: "sglang",
        log: LlamaCppLog::default(),
        vllm_log: None,
        context_per_sequence: l.context_len,
        sequences: l.max_running_requests,
        kv_dtype: None,
        rows: vec![
            make_row("weights_per_gpu", l.weights_bytes, w_pred),
            make_row("kv_cache_memory_per_gpu", l.kv_cache_bytes, kv_pred),
            make_row("kv_cache_capacity_tokens", l.kv_cache_tokens, tok_pred),
            make_row(
                "kv_bytes_per_token_per_gpu",
                per_token_logged.map(|b| b.round() as u64),
                per_token_pred.map(|b| b.round() as u64),
            ),
        ],
        sglang_log: Some(l),
        trtllm_log: None,
        per_device: Vec::new(),
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let sg = report.sglang_log.as_ref();
    let title = format!(
        "SGLang log: tp {}, mem_fraction_static {}, context {}",
        tp,
        sg.and_then(|l| l.mem_fraction_static)
            .map_or("?".into(), |f| f.to_string()),
        report
            .context_per_sequence
            .map_or("?".into(), |c| c.to_string())
    );
    Ok(render_rows(&title, &report))
}

/// One llama-bench result beside the planner's speed for it.
#[derive(Serialize)]
pub struct BenchCheck {
    /// The test as llama-bench names it (`pp512`, `tg128 @ d8192`).
    pub test: String,
    /// `-ngl` of the row, where the output shows it.
    pub n_gpu_layers: Option<i64>,
    /// CPU threads of the row, where the output shows them.
    pub threads: Option<u32>,
    /// llama.cpp's model description.
    pub model: String,
    /// Backends as printed.
    pub backend: Option<String>,
    /// Tokens per second llama-bench measured.
    pub logged_tokens_per_s: f64,
    /// The planner's: prefill tokens/s for a `pp` test, decode tokens/s
    /// of one sequence for a `tg` test.
    pub predicted_tokens_per_s: Option<f64>,
    /// predicted ÷ logged.
    pub ratio: Option<f64>,
    /// The llama.cpp build month the prediction is for (from the printed
    /// build number or run time; `None`: the newest fitted build).
    pub planned_build: Option<BuildMonth>,
    /// Whether the prediction is for fused (flash) attention.
    pub planned_flash_attention: bool,
    /// The ggml backend the prediction is for: the printed one (`None`:
    /// none printed, or not one the planner names; the vendor's own).
    pub planned_backend: Option<ai_hwaccel::plan::runtime::GgmlBackend>,
}

/// `check` on llama-bench output.
#[derive(Serialize)]
pub struct BenchReport {
    pub runtime: &'static str,
    pub rows: Vec<BenchCheck>,
    pub notes: Vec<String>,
}

/// Most distinct plans one `check` of benchmark results makes (each line
/// of the same settings shares one): a real llama-bench or
/// llama-batched-bench run has tens of settings, and a forged file of
/// thousands on a device string of many GPUs would take minutes. Lines past
/// it are shown without a prediction, and a note says so.
const MAX_PLANNED: usize = 256;

/// The first llama-bench builds whose `-fa` default is `auto`.
const FA_AUTO_SINCE: BuildMonth = ai_hwaccel::plan::runtime::bench::LLAMA_BENCH_FA_AUTO_SINCE;

/// Before llama.cpp's ggml-backend integration (PR 4766, merged January
/// 2024) `-ngl` counted the KV cache too: `n_layer + 1` offloaded the
/// output, `+ 2` the V cache, `+ 3` the K cache (the loader's "offloading v
/// cache to GPU" / "offloading k cache to GPU" lines), so a whole offload
/// took `n_layer + 3`; since then `n_layer + 1`.
const NGL_COUNTS_KV_UNTIL: BuildMonth = BuildMonth::ym(2024, 1);

/// The note of a run whose start-up lines show a build with
/// `GGML_CUDA_FORCE_MMQ` (`bench::cuda_force_mmq`).
const FORCE_MMQ_NOTE: &str = "the start-up lines show a build with GGML_CUDA_FORCE_MMQ: planned as \
     one (plan --cuda-force-mmq; its prompts run the DP4A MMQ kernels on Volta and in builds \
     before 2024-07)";

/// llama-bench results against the planner's speeds for the same model,
/// format and devices at batch 1, the way `tests/accuracy.rs` compares the
/// published ones: a `ppN` test is prefill at a context of N/2 (plus the
/// depth), a `tgN` test decode at N/2 (plus the depth).
///
/// A Vulkan run's device line says which matrix path llama.cpp took
/// (`bench::vulkan_matrix_cores`); its rows are planned on that path.
fn check_bench(
    args: &CheckArgs,
    rows: Vec<ai_hwaccel::plan::runtime::bench::BenchRow>,
    force_mmq: bool,
    vulkan_matrix: Option<ai_hwaccel::plan::runtime::VulkanMatrixCores>,
) -> Result<String> {
    use ai_hwaccel::plan::runtime::bench::quant_of_model;
    let mut notes = Vec::new();
    if force_mmq {
        notes.push(FORCE_MMQ_NOTE.into());
    }
    // `--quant`: the format of rows whose description names none the
    // planner knows (an i-quant below 4 bits, a ternary type).
    let given_quant = given_quant(args)?;
    // Descriptions whose file type the planner has no format for, where
    // the model's file does not say either: shown without a prediction
    // (the plan would be for the model's default format, not the run's).
    let mut untyped = std::collections::BTreeSet::new();
    // A table whose every row ran on the CPU backend (`CPU`, `BLAS`) is
    // planned for this machine's CPU when no --devices is given.
    let cpu_only = !rows.is_empty()
        && rows.iter().all(|r| {
            r.backend.as_deref().is_some_and(|b| {
                b.split(',')
                    .all(|x| matches!(x.trim().to_ascii_uppercase().as_str(), "CPU" | "BLAS"))
            })
        });
    let (model, devices) = bench_model_and_devices(args, &mut notes, "the benchmark", cpu_only)?;
    // The devices as the Vulkan rows ran them: on the matrix path the
    // run's device line printed, whatever a registry's driver listed.
    let vk_devices: Vec<_> = devices
        .iter()
        .cloned()
        .map(|mut d| {
            if !d.host && vulkan_matrix.is_some() {
                d.vulkan_matrix_cores = vulkan_matrix;
            }
            d
        })
        .collect();
    let vector_path = vk_devices
        .iter()
        .find(|d| ai_hwaccel::plan::speed::vulkan_matrix_engines_unused(d))
        .map(|d| d.name.clone());
    let mut vector_path_rows = 0usize;
    // Decode tests predicted at an i-quant below IQ4, whose decode the
    // planner does not calibrate.
    let mut i_quant_decode_rows = 0usize;
    if !devices.is_empty() && cpu_only && args.devices.is_none() {
        notes.push(
            "every row ran on the CPU backend: planned for this machine's CPU (pass --devices cpu:ID for another)".into(),
        );
    }
    type Key = (
        String,
        u64,
        bool,
        Option<BuildMonth>,
        Option<&'static str>,
        Option<String>,
        (bool, Option<u64>),
    );
    let mut cache: std::collections::BTreeMap<Key, Option<ai_hwaccel::plan::inference::Plan>> =
        Default::default();
    let mut out = Vec::new();
    let mut assumed = std::collections::BTreeSet::new();
    let mut capped = false;
    let mut partial_rows = 0usize;
    let mut moe_host_rows = 0usize;
    let mut override_host_rows = 0usize;
    let mut unexplained_rows = 0usize;
    let mut kv_notes = std::collections::BTreeSet::new();
    // The devices' class, for the builds the fitted rows measure.
    let class = devices
        .first()
        .map(ai_hwaccel::plan::speed::DeviceClass::of);
    for r in rows {
        // The build the run used: its printed number's month, else the
        // month it ran (no older than its build); the planner's per-layer
        // decode time follows it.
        let build = r
            .build_number
            .and_then(ai_hwaccel::plan::runtime::bench::build_month)
            .or(r.run_month);
        // Flash attention as printed; where not, llama-bench's default of
        // that build: `-fa 0` until its `auto` default (June 2026,
        // LLAMA_BENCH_FA_AUTO_SINCE), unknown builds as the old.
        let fused = r.flash_attn.unwrap_or_else(|| {
            let auto = build.is_some_and(|b| b >= FA_AUTO_SINCE);
            assumed.insert(if auto {
                "flash attention not printed: planned on (llama-bench's default `-fa auto` from its June 2026 builds)"
            } else {
                "flash attention not printed: planned off (llama-bench's default `-fa 0` before June 2026)"
            });
            auto
        });
        // The backend the run printed (llama-bench's `backend` column):
        // Vulkan runs an older Intel GPU without its matrix engines
        // (plan::speed::reference_tflops).
        let backend = r
            .backend
            .as_deref()
            .and_then(ai_hwaccel::plan::runtime::GgmlBackend::parse);
        // `-ngl` below the model's layers and output (llama.cpp counts
        // `layers + 1` offloadable units): a partial offload, whose host
        // layers run on the CPU; the comparison is for a whole offload.
        // An output of the older loader: its build is before the change,
        // or none is printed and the model description has the `mostly`
        // of llama.cpp's 2023 type names (`llama 7B mostly Q4_0`).
        let counts_kv = build.map_or(r.model.contains(" mostly "), |b| b < NGL_COUNTS_KV_UNTIL);
        let partial = match (&model, r.n_gpu_layers) {
            (Some(m), Some(n)) => {
                n >= 0 && n < i64::from(m.spec.num_layers) + if counts_kv { 3 } else { 1 }
            }
            _ => false,
        };
        // `--n-cpu-moe N`: the routed experts of N layers ran on the CPU.
        let experts_on_host = r.n_cpu_moe.is_some_and(|n| n > 0);
        if experts_on_host {
            moe_host_rows += 1;
        }
        // `-ot PATTERN=CPU`: the tensors it names stayed in host memory.
        let overridden = !experts_on_host && r.overrides_to_host();
        if overridden {
            override_host_rows += 1;
        }
        let partial = partial || experts_on_host || overridden;
        if partial && !experts_on_host && !overridden {
            partial_rows += 1;
        }
        // The KV cache as the row ran it (`-ctk`/`-ctv`); the planner's is
        // one type for K and V, of those it models.
        let kv = match (r.type_k.as_deref(), r.type_v.as_deref()) {
            (None, None) => None,
            (k, v) => {
                let k = k.unwrap_or("f16");
                let v = v.unwrap_or("f16");
                match kv_dtype(k) {
                    None => {
                        kv_notes.insert(format!(
                            "a row's K cache type {k:?} is none the planner models (f16, bf16, f32, q8_0): its KV cache is planned at f16"
                        ));
                        None
                    }
                    Some(t) => {
                        if k != v {
                            kv_notes.insert(format!(
                                "a row's K and V caches differ ({k} / {v}): planned with both at {k}"
                            ));
                        }
                        Some(t)
                    }
                }
            }
        };
        let predicted = match &model {
            Some(m)
                if quant_of_model(&r.model).or(given_quant).is_none() && m.weights.is_none() =>
            {
                untyped.insert(r.model.clone());
                None
            }
            Some(m) if !devices.is_empty() && !partial && (r.n_prompt == 0) != (r.n_gen == 0) => {
                let quant = quant_of_model(&r.model).or(given_quant);
                // A prompt test from an empty context is planned as the
                // calibration plans one (tests/accuracy.rs): that prompt,
                // in micro-batches of the run's `n_ubatch`; the others at
                // the mean context of the test.
                let prompt_only = r.n_gen == 0 && r.n_depth == 0;
                let context = if prompt_only {
                    r.n_prompt.max(1)
                } else {
                    (r.n_depth + (r.n_prompt + r.n_gen) / 2).max(1)
                };
                let key = (
                    quant.map_or("-".to_string(), |q| q.to_string()),
                    context,
                    fused,
                    build,
                    backend.map(|b| b.as_str()),
                    kv.map(|k| format!("{k:?}")),
                    (prompt_only, r.n_ubatch),
                );
                if cache.len() >= MAX_PLANNED && !cache.contains_key(&key) {
                    capped = true;
                    None
                } else {
                    let plan = cache.entry(key).or_insert_with(|| {
                        let opts = InferenceOptions {
                            quant,
                            kv_dtype: kv,
                            context: Some(context),
                            batch: 1,
                            max_plans: 1,
                            runtime: RuntimeKind::LlamaCpp,
                            fused_attention: fused,
                            runtime_build: build,
                            cuda_force_mmq: force_mmq,
                            backend,
                            input_len: prompt_only.then_some(context),
                            ubatch: r.n_ubatch,
                            ..InferenceOptions::default()
                        };
                        let opts = ai_hwaccel::plan::options_for(m, &opts);
                        let on = if backend == Some(ai_hwaccel::plan::runtime::GgmlBackend::Vulkan)
                        {
                            &vk_devices
                        } else {
                            &devices
                        };
                        plan_inference(&m.spec, on, &opts).plans.into_iter().next()
                    });
                    let predicted = plan.as_ref().and_then(|p| {
                        if r.n_gen > 0 {
                            p.decode_tokens_per_s_per_sequence
                        } else {
                            p.prefill_tokens_per_s
                        }
                    });
                    // A prompt test of a build whose prompt kernels for
                    // this device and format were slow for a reason the
                    // planner has no term for (plan warns the same).
                    if r.n_prompt > 0 && predicted.is_some() {
                        let window = quant.and_then(|q| {
                            devices.iter().find(|d| !d.host).and_then(|d| {
                                ai_hwaccel::plan::speed::slow_prompt_kernels(
                                    d,
                                    RuntimeKind::LlamaCpp,
                                    q,
                                    m.spec.moe.is_some(),
                                    backend,
                                    build,
                                )
                            })
                        });
                        if let (Some(w), Some(b)) = (window, build) {
                            let note = format!(
                                "prompt tests: in llama.cpp builds of {b}, {}; the planner has no term for it, so the prompt predictions are upper bounds for that build",
                                w.why
                            );
                            if !notes.contains(&note) {
                                notes.push(note);
                            }
                        }
                        // A forced MMQ path the planner does not model
                        // (plan warns the same).
                        let forced = quant.and_then(|q| {
                            devices
                                .iter()
                                .find(|d| {
                                    ai_hwaccel::plan::speed::forced_mmq_unmodelled(
                                        d,
                                        RuntimeKind::LlamaCpp,
                                        q,
                                        backend,
                                        build,
                                        force_mmq,
                                    )
                                })
                                .map(|d| (d, q))
                        });
                        if let Some((d, q)) = forced {
                            let note = format!(
                                "prompt tests of {q} on {}: llama.cpp's default build sends 512-token micro-batches to rocBLAS there, this GGML_CUDA_FORCE_MMQ build to its MMQ kernels; the predictions are the default build's (the forced path is not modelled on AMD CDNA GPUs)",
                                d.name
                            );
                            if !notes.contains(&note) {
                                notes.push(note);
                            }
                        }
                    }
                    predicted
                }
            }
            _ => None,
        };
        // A Vulkan prompt test on matrix engines the run left unused.
        let on_vector_path = predicted.is_none()
            && r.n_prompt > 0
            && vector_path.is_some()
            && backend == Some(ai_hwaccel::plan::runtime::GgmlBackend::Vulkan);
        if on_vector_path && !partial {
            vector_path_rows += 1;
        }
        if predicted.is_some()
            && r.n_gen > 0
            && quant_of_model(&r.model)
                .or(given_quant)
                .is_some_and(|q| q.low_bit_i_quant())
        {
            i_quant_decode_rows += 1;
        }
        // A row without a prediction that no note above explains.
        if predicted.is_none()
            && !partial
            && !on_vector_path
            && (r.n_prompt == 0) != (r.n_gen == 0)
            && !untyped.contains(&r.model)
        {
            unexplained_rows += 1;
        }
        out.push(BenchCheck {
            n_gpu_layers: r.n_gpu_layers,
            threads: r.threads,
            test: r.test_name(),
            model: r.model.clone(),
            backend: r.backend.clone(),
            logged_tokens_per_s: r.tokens_per_s,
            predicted_tokens_per_s: predicted,
            ratio: predicted
                .filter(|_| r.tokens_per_s > 0.0)
                .map(|p| p / r.tokens_per_s),
            // Kept within the builds the calibration rows measure (no
            // extrapolation).
            planned_build: build.map(|b| {
                class
                    .and_then(|c| {
                        ai_hwaccel::plan::speed::planned_build(RuntimeKind::LlamaCpp, c, Some(b))
                    })
                    .unwrap_or(b)
            }),
            planned_flash_attention: fused,
            planned_backend: backend,
        });
    }
    if let (true, Some(name)) = (vector_path_rows > 0, &vector_path) {
        notes.push(format!(
            "the run's device line prints 'matrix cores: none': llama.cpp's Vulkan backend multiplied on the vector units of {name}, not its matrix engines; no published runs calibrate that path, so its {vector_path_rows} prompt test(s) have no prediction"
        ));
    }
    notes.extend(assumed.into_iter().map(str::to_string));
    if i_quant_decode_rows > 0 {
        notes.push(format!(
            "{i_quant_decode_rows} decode test(s) at i-quants below IQ4: {}",
            ai_hwaccel::plan::inference::I_QUANT_DECODE_UNCALIBRATED
        ));
    }
    if !untyped.is_empty() {
        notes.push(format!(
            "no weight format the planner knows in {}: those rows are shown without a prediction (pass --quant for the format to compare at, or the GGUF file as --model, whose tensor types the planner reads)",
            untyped.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ")
        ));
    }
    notes.extend(kv_notes);
    if override_host_rows > 0 {
        notes.push(format!(
            "{override_host_rows} row(s) ran with -ot overrides that keep tensors in host memory (`=CPU`), where the CPU computes with them: shown without a prediction (`plan --offload` plans an expert offload)"
        ));
    }
    if moe_host_rows > 0 {
        notes.push(format!(
            "{moe_host_rows} row(s) ran with --n-cpu-moe (routed experts of some layers on the CPU): shown without a prediction (`plan --offload` plans an expert offload)"
        ));
    }
    if partial_rows > 0 {
        notes.push(format!(
            "{partial_rows} row(s) ran with -ngl below a whole offload of the model's {} layers (a partial offload: the rest on the CPU; before 2024 builds -ngl also counted the output and the V and K caches): shown without a prediction (`plan --offload` plans that case)",
            model.as_ref().map_or(0, |m| m.spec.num_layers)
        ));
    }
    if model.is_some() && !devices.is_empty() && unexplained_rows > 0 && !capped {
        notes.push(
            "tests without a prediction: the planner has no speed for them on these devices (no plan holds the model at that test's context, or a device's bandwidth or matrix rate is unknown; `plan` with the same --model and --devices says which)".into(),
        );
    }
    if capped {
        notes.push(format!(
            "more than {MAX_PLANNED} distinct test settings: the rest are shown without a prediction"
        ));
    }
    let predicted: Vec<&BenchCheck> = out
        .iter()
        .filter(|r| r.predicted_tokens_per_s.is_some())
        .collect();
    let builds: std::collections::BTreeSet<String> = predicted
        .iter()
        .filter_map(|r| r.planned_build.map(|b| b.to_string()))
        .collect();
    if !builds.is_empty() {
        notes.push(format!(
            "decode planned for llama.cpp builds of {} (from the printed build number or run time; the per-layer time of older builds is longer: docs/accuracy.md)",
            builds.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if predicted.iter().any(|r| r.planned_build.is_none()) {
        notes.push(
            "no build number or run time printed: decode planned for the newest llama.cpp builds the calibration rows measure".into(),
        );
    }
    if out.iter().any(|r| r.test.contains('+')) {
        notes.push("combined pp+tg tests are shown without a prediction".into());
    }
    let report = BenchReport {
        runtime: "llama-bench",
        rows: out,
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    // The `-ngl` column where the rows differ in it (an offload sweep).
    let ngl_varies = report
        .rows
        .windows(2)
        .any(|w| w[0].n_gpu_layers != w[1].n_gpu_layers);
    // Likewise the threads (a CPU threads sweep).
    let threads_vary = report.rows.windows(2).any(|w| w[0].threads != w[1].threads);
    let mut s = format!(
        "{:<34} {:<16} {:>12} {:>12} {:>9}\n",
        "model", "test", "logged t/s", "predicted", "pred/log"
    );
    for r in &report.rows {
        let mut test = match r.n_gpu_layers.filter(|_| ngl_varies) {
            Some(n) => format!("{} ngl {n}", r.test),
            None => r.test.clone(),
        };
        if let Some(t) = r.threads.filter(|_| threads_vary) {
            test += &format!(" t {t}");
        }
        s += &format!(
            "{:<34} {:<16} {:>12.2} {:>12} {:>9}\n",
            r.model,
            test,
            r.logged_tokens_per_s,
            r.predicted_tokens_per_s
                .map_or("—".into(), |p| format!("{p:.2}")),
            r.ratio.map_or("—".into(), |x| format!("{x:.3}"))
        );
    }
    for n in &report.notes {
        s += &format!("note: {n}\n");
    }
    Ok(s)
}

/// One llama-batched-bench line beside the planner's speeds for it.
#[derive(Serialize)]
pub struct BatchedCheck {
    /// Prompt tokens per sequence.
    pub pp: u64,
    /// Tokens each sequence generated.
    pub tg: u64,
    /// Sequences decoded together.
    pub batch: u64,
    /// Prompt tokens per second over all sequences, as printed (`S_PP`).
    pub logged_prefill_tokens_per_s: f64,
    /// The planner's prompt tokens per second for a `pp`-token prompt.
    pub predicted_prefill_tokens_per_s: Option<f64>,
    /// Generated tokens per second over all sequences, as printed (`S_TG`).
    pub logged_decode_tokens_per_s: f64,
    /// The planner's decode tokens per second over `batch` sequences at
    /// the steps' mean context (`pp + tg/2`).
    pub predicted_decode_tokens_per_s: Option<f64>,
    /// The planner's decode tokens per second of one of those sequences.
    pub predicted_decode_tokens_per_s_per_sequence: Option<f64>,
    /// predicted ÷ logged decode.
    pub decode_ratio: Option<f64>,
}

/// `check` on llama-batched-bench output.
#[derive(Serialize)]
pub struct BatchedReport {
    pub runtime: &'static str,
    /// The run's settings and rows as read.
    pub bench: ai_hwaccel::plan::runtime::bench::BatchedBench,
    pub rows: Vec<BatchedCheck>,
    pub notes: Vec<String>,
}

/// One serving benchmark result beside the planner's figures for its
/// concurrency and mean lengths.
#[derive(Serialize)]
pub struct ServeCheck {
    /// The result as printed.
    pub result: ai_hwaccel::plan::runtime::serve_bench::ServeBench,
    /// The runtime whose rule and fitted cells the prediction uses.
    pub planned_runtime: Option<RuntimeKind>,
    /// The sequences the prediction decodes together: the run's measured
    /// mean in flight (SGLang's `Concurrency`) where printed, else its
    /// `--max-concurrency` (or every request, at an `inf` rate), and at
    /// most the sequences the plan's KV cache holds (the others wait for a
    /// slot); `None` where the run had no fixed concurrency.
    pub planned_batch: Option<u64>,
    /// Mean prompt and generated tokens per request the plan is for.
    pub planned_input_tokens: Option<u64>,
    /// See [`Self::planned_input_tokens`].
    pub planned_output_tokens: Option<u64>,
    /// The plan's mean time per output token of that many requests served
    /// together, ms (`Plan::served_tpot_ms`: the others' prompts prefilled
    /// within the decode steps).
    pub predicted_tpot_ms: Option<f64>,
    /// predicted ÷ the result's mean TPOT.
    pub tpot_ratio: Option<f64>,
    /// The plan's mean time to first token over the run's requests, ms
    /// (`inference::closed_loop_ttft_ms`): the clients' first burst of
    /// prompts in the runtime's prompt passes, then each later request's
    /// wait in the steady loop (`Plan::served_ttft_ms`) and, where the KV
    /// cache holds fewer requests than the clients, for a slot. At
    /// concurrency 1 the idle replica's TTFT.
    pub predicted_ttft_ms: Option<f64>,
    /// predicted ÷ the result's mean TTFT.
    pub ttft_ratio: Option<f64>,
    /// Generated tokens per second the plan gives a closed loop of that
    /// many requests: batch × output tokens ÷ one request's latency
    /// (TTFT + (output − 1) × the served TPOT).
    pub predicted_output_tokens_per_s: Option<f64>,
    /// predicted ÷ the result's output throughput.
    pub output_ratio: Option<f64>,
}

#[derive(Serialize)]
pub struct ServeReport {
    pub runtime: &'static str,
    pub results: Vec<ServeCheck>,
    pub notes: Vec<String>,
}

/// The runtime a serving benchmark's backend name points to: SGLang's
/// (`sglang`, `sglang-oai`, `sglang-oai-chat`), TensorRT-LLM's, else vLLM's
/// (its own client prints no backend in the text; `vllm`, `openai`,
/// `openai-chat` in its saved records).
fn serve_runtime(backend: Option<&str>) -> RuntimeKind {
    let b = backend.unwrap_or("").to_ascii_lowercase();
    if b.contains("sglang") {
        RuntimeKind::Sglang
    } else if b.contains("trt") || b.contains("tensorrt") {
        RuntimeKind::Trtllm
    } else {
        RuntimeKind::Vllm
    }
}

/// `check` of serving benchmark results (`vllm bench serve`,
/// `sglang.bench_serving`): each result's mean TPOT, its TTFT at
/// concurrency one and its output throughput beside the plan for its
/// concurrency and mean prompt and output lengths, under the runtime its
/// backend names.
fn check_serve(
    args: &CheckArgs,
    results: Vec<ai_hwaccel::plan::runtime::serve_bench::ServeBench>,
) -> Result<String> {
    let mut notes = Vec::new();
    let (model, devices) = bench_model_and_devices(args, &mut notes, "the server", false)?;
    let quant = given_quant(args)?;
    let mut unnamed_backend = false;
    let mut used_measured = false;
    let mut no_concurrency = 0usize;
    let mut capped = false;
    let mut kv_held = false;
    let mut paced_ttft = false;
    let mut cache: std::collections::HashMap<
        (RuntimeKind, u64, u64, u64),
        Option<ai_hwaccel::plan::inference::Plan>,
    > = Default::default();
    let mut out = Vec::new();
    for r in results {
        let runtime = args
            .runtime
            .unwrap_or_else(|| serve_runtime(r.backend.as_deref()));
        unnamed_backend |= r.backend.is_none() && args.runtime.is_none();
        // The batch the run's decode steps saw: SGLang's measured mean of
        // requests in flight (`Concurrency`) where printed, else the cap.
        let measured = r
            .measured_concurrency
            .filter(|c| *c >= 0.5)
            .map(|c| c.round() as u64);
        used_measured |= measured.is_some() && r.concurrency().is_some();
        let batch = r
            .concurrency()
            .map(|cap| measured.map_or(cap, |m| m.min(cap)));
        let (input, output) = (r.mean_input_tokens(), r.mean_output_tokens());
        if batch.is_none() {
            no_concurrency += 1;
        }
        let plan = match (&model, batch, input, output) {
            (Some(m), Some(b), Some(i), Some(o))
                if !devices.is_empty()
                    && (1..=crate::planning::MAX_BATCH).contains(&b)
                    && o > 0
                    && i.saturating_add(o) <= crate::planning::MAX_CONTEXT =>
            {
                let key = (runtime, b, i.max(1), o);
                if cache.len() >= MAX_PLANNED && !cache.contains_key(&key) {
                    capped = true;
                    None
                } else {
                    cache
                        .entry(key)
                        .or_insert_with(|| {
                            let opts = InferenceOptions {
                                quant,
                                runtime,
                                batch: b,
                                input_len: Some(i.max(1)),
                                output_len: Some(o),
                                context: Some(i.max(1).saturating_add(o)),
                                max_plans: 1,
                                mixed_prefill: args.mixed_prefill,
                                eager: args.enforce_eager,
                                ..InferenceOptions::default()
                            };
                            let opts = ai_hwaccel::plan::options_for(m, &opts);
                            let first = |batch| {
                                let o = InferenceOptions {
                                    batch,
                                    ..opts.clone()
                                };
                                plan_inference(&m.spec, &devices, &o)
                                    .plans
                                    .into_iter()
                                    .next()
                            };
                            // More requests in flight than the KV cache
                            // holds: the server runs the most it holds and
                            // the others wait for a slot (in their TTFT).
                            first(b).or_else(|| {
                                let held = first(1).map_or(0, |p| p.max_batch).min(b);
                                (held > 1).then(|| first(held)).flatten()
                            })
                        })
                        .clone()
                }
            }
            _ => None,
        };
        // The batch the plan decodes: fewer than the loop's where the KV
        // cache holds fewer.
        let held = plan
            .as_ref()
            .map(|p| p.batch)
            .filter(|h| batch.is_some_and(|b| *h < b));
        kv_held |= held.is_some();
        let batch = held.or(batch);
        let ratio =
            |p: Option<f64>, m: Option<f64>| p.zip(m.filter(|m| *m > 0.0)).map(|(p, m)| p / m);
        // The closed loop's TPOT: the others' prompts within the decode
        // steps (`Plan::served_tpot_ms`).
        let tpot = plan.as_ref().and_then(|p| p.served_tpot_ms);
        // The run's mean TTFT: its first burst, then the steady loop. A
        // finite request rate spreads the first requests out: no burst,
        // and no closed-loop TTFT to compare.
        let paced = r.request_rate.is_some() && plan.is_some();
        paced_ttft |= paced;
        let ttft = plan
            .as_ref()
            .zip(model.as_ref())
            .filter(|_| !paced)
            .and_then(|(p, m)| {
                let opts = InferenceOptions {
                    runtime,
                    input_len: input.map(|i| i.max(1)),
                    ..InferenceOptions::default()
                };
                let pass = ai_hwaccel::plan::runtime::prompt_tokens_per_pass(
                    runtime,
                    devices.first()?,
                    p.tensor_parallel,
                    p.pipeline_parallel,
                    m.spec.mla.is_some(),
                    &opts,
                );
                ai_hwaccel::plan::inference::closed_loop_ttft_ms(
                    p,
                    &opts,
                    pass,
                    r.concurrency()?,
                    r.completed,
                )
            });
        let throughput = plan.as_ref().and_then(|p| {
            let (b, o) = (batch?, output?);
            // TTFT + the later tokens at the served TPOT, per request.
            let latency_s = p.request_latency_ms? / 1000.0;
            (latency_s > 0.0).then(|| b as f64 * o as f64 / latency_s)
        });
        out.push(ServeCheck {
            planned_runtime: plan.as_ref().map(|_| runtime),
            planned_batch: batch,
            planned_input_tokens: input,
            planned_output_tokens: output,
            predicted_tpot_ms: tpot,
            tpot_ratio: ratio(tpot, r.mean_tpot_ms),
            predicted_ttft_ms: ttft,
            ttft_ratio: ratio(ttft, r.mean_ttft_ms),
            predicted_output_tokens_per_s: throughput,
            output_ratio: ratio(throughput, r.output_tokens_per_s),
            result: r,
        });
    }
    if unnamed_backend {
        notes.push(
            "a result names no backend (vLLM's client prints none): planned with the vLLM rule"
                .into(),
        );
    }
    let sglang_planned = out.iter().any(|c| {
        c.planned_runtime == Some(RuntimeKind::Sglang) && c.planned_batch.is_some_and(|b| b > 1)
    });
    if paced_ttft {
        notes.push(
            "a result sent its requests at a finite rate: its TTFT is not compared (the plan's closed loop sends every client's first request at once)".into(),
        );
    }
    if kv_held {
        notes.push(
            "a result kept more requests in flight than the plan's KV cache holds: planned at the most it holds (the others wait for a slot, which their TTFT pays, not the TPOT)".into(),
        );
    }
    if sglang_planned && !args.mixed_prefill {
        notes.push(
            "SGLang results are planned with its default scheduler, which prefills each step's arriving prompts in a pass of their own before the next decode step; for a server launched with --enable-mixed-chunk pass --mixed-prefill".into(),
        );
    }
    if used_measured {
        notes.push(
            "planned at the mean number of requests in flight the result measured (SGLang's `Concurrency`), which a warming or draining run keeps below its --max-concurrency".into(),
        );
    }
    if no_concurrency > 0 {
        notes.push(format!(
            "{no_concurrency} result(s) print neither --max-concurrency nor an `inf` request rate: the running batch followed the arrivals (or is not known), so they are shown without a prediction (compare a run with --max-concurrency)"
        ));
    }
    if out.iter().any(|r| r.planned_batch.is_some_and(|b| b > 1)) {
        notes.push(
            "above concurrency 1 the TPOT is the plan's for that many requests served together (the others' prompts prefilled within the decode steps, or under SGLang in passes of their own between them), the TTFT the mean over the run's requests of its closed loop (the clients' first burst of prompts in the runtime's prompt passes, then each later request's wait for the decode steps in progress and, where the KV cache holds fewer requests than the clients, for a slot), and the output throughput that loop's".into(),
        );
    }
    if capped {
        notes.push(format!(
            "more than {MAX_PLANNED} distinct settings: the rest are shown without a prediction"
        ));
    }
    if model.is_some() && !devices.is_empty() {
        notes.push(
            "planned on the best layout `plan` finds for these devices (pass --devices as the server ran: its GPUs, and so its tensor-parallel degree)".into(),
        );
    }
    let report = ServeReport {
        runtime: "serving benchmark",
        results: out,
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let opt = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:.2}"));
    let mut s = format!(
        "{:>5} {:>6} {:>6} {:>8} {:>8} {:>5} {:>9} {:>8} {:>5} {:>9} {:>9} {:>5}\n",
        "conc",
        "in",
        "out",
        "TPOT ms",
        "planned",
        "p/l",
        "TTFT ms",
        "planned",
        "p/l",
        "out t/s",
        "planned",
        "p/l"
    );
    for r in &report.results {
        let n = |x: Option<u64>| x.map_or("?".to_string(), |v| v.to_string());
        s += &format!(
            "{:>5} {:>6} {:>6} {:>8} {:>8} {:>5} {:>9} {:>8} {:>5} {:>9} {:>9} {:>5}\n",
            n(r.planned_batch),
            n(r.planned_input_tokens),
            n(r.planned_output_tokens),
            opt(r.result.mean_tpot_ms),
            opt(r.predicted_tpot_ms),
            opt(r.tpot_ratio),
            opt(r.result.mean_ttft_ms.or(r.result.median_ttft_ms)),
            opt(r.predicted_ttft_ms),
            opt(r.ttft_ratio),
            opt(r.result.output_tokens_per_s),
            opt(r.predicted_output_tokens_per_s),
            opt(r.output_ratio),
        );
    }
    for n in &report.notes {
        s += &format!("note: {n}\n");
    }
    Ok(s)
}

/// llama-batched-bench results against the planner at each line's batch:
/// decode over all sequences at the mean context of the decode steps, and
/// the prompts' rate. Each sequence's prompt is its own (the planner does
/// not share prompts), so `-pps` runs are shown without a prediction.
fn check_batched(
    args: &CheckArgs,
    b: ai_hwaccel::plan::runtime::bench::BatchedBench,
    force_mmq: bool,
) -> Result<String> {
    use ai_hwaccel::plan::runtime::bench::{build_month, quant_of_model};
    let mut notes = Vec::new();
    if force_mmq {
        notes.push(FORCE_MMQ_NOTE.into());
    }
    let (model, devices) = bench_model_and_devices(args, &mut notes, "the benchmark", false)?;
    let quant = given_quant(args)?.or_else(|| b.file_type.as_deref().and_then(quant_of_model));
    let build = b.build_number.and_then(build_month);
    // The 2023 builds print no flash-attention setting: they had none.
    let fused = b.flash_attn.unwrap_or(false);
    if b.flash_attn.is_none() {
        notes.push("flash attention not printed (the 2023 builds had none): planned off".into());
    }
    let shared = b.pp_shared == Some(true);
    if shared {
        notes.push("one prompt shared by every sequence (-pps): no prediction (the planner gives each sequence its own prompt)".into());
    }
    if model.is_some()
        && quant.is_none()
        && !args.model.as_deref().is_some_and(|m| m.ends_with(".gguf"))
    {
        notes.push(
            "the output names no weight format: planned at the suggested one (pass --quant)".into(),
        );
    }
    let mut rows = Vec::new();
    // One plan per distinct (PP, TG, B): the other settings are the run's.
    let mut cache: std::collections::HashMap<
        (u64, u64, u64),
        Option<ai_hwaccel::plan::inference::Plan>,
    > = Default::default();
    let (mut capped, mut missed) = (false, 0usize);
    for r in &b.rows {
        let key = (r.pp, r.tg, r.batch);
        let skipped = cache.len() >= MAX_PLANNED && !cache.contains_key(&key);
        capped |= skipped;
        let plan = match &model {
            _ if skipped => None,
            _ if cache.contains_key(&key) => cache[&key].clone(),
            // Within `plan`'s own bounds (--batch, --context): a line past
            // them is read but not planned.
            Some(m)
                if !devices.is_empty()
                    && !shared
                    && (1..=crate::planning::MAX_BATCH).contains(&r.batch)
                    && r.tg > 0
                    && r.pp.saturating_add(r.tg) <= crate::planning::MAX_CONTEXT =>
            {
                let opts = InferenceOptions {
                    quant,
                    context: Some(r.pp.saturating_add(r.tg / 2).max(1)),
                    input_len: Some(r.pp.max(1)),
                    batch: r.batch,
                    max_plans: 1,
                    runtime: RuntimeKind::LlamaCpp,
                    fused_attention: fused,
                    runtime_build: build,
                    cuda_force_mmq: force_mmq,
                    // The backend its loader's log names, where it is in
                    // the text.
                    backend: b.backend,
                    ..InferenceOptions::default()
                };
                let opts = ai_hwaccel::plan::options_for(m, &opts);
                let plan = plan_inference(&m.spec, &devices, &opts)
                    .plans
                    .into_iter()
                    .next();
                cache.insert(key, plan.clone());
                plan
            }
            _ => None,
        };
        let dec = plan.as_ref().and_then(|p| p.decode_tokens_per_s);
        missed += usize::from(dec.is_none() && !skipped);
        rows.push(BatchedCheck {
            pp: r.pp,
            tg: r.tg,
            batch: r.batch,
            logged_prefill_tokens_per_s: r.pp_tokens_per_s,
            predicted_prefill_tokens_per_s: plan.as_ref().and_then(|p| p.prefill_tokens_per_s),
            logged_decode_tokens_per_s: r.tg_tokens_per_s,
            predicted_decode_tokens_per_s: dec,
            predicted_decode_tokens_per_s_per_sequence: plan
                .as_ref()
                .and_then(|p| p.decode_tokens_per_s_per_sequence),
            decode_ratio: dec
                .filter(|_| r.tg_tokens_per_s > 0.0)
                .map(|d| d / r.tg_tokens_per_s),
        });
    }
    if model.is_some() && !devices.is_empty() && missed > 0 && !shared {
        notes.push("some lines have no prediction: no plan fits the batch at that context, or it is past plan's bounds (batch 1,000,000; context 100,000,000)".into());
    }
    if capped {
        notes.push(format!(
            "more than {MAX_PLANNED} distinct (PP, TG, B) lines: the rest are shown without a prediction"
        ));
    }
    let report = BatchedReport {
        runtime: "llama-batched-bench",
        bench: b,
        rows,
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let opt = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:.2}"));
    let mut s = format!(
        "llama-batched-bench: flash attention {}, n_ubatch {}\n{:>6} {:>6} {:>5} {:>12} {:>12} {:>12} {:>12} {:>9}\n",
        report
            .bench
            .flash_attn
            .map_or("?", |f| if f { "on" } else { "off" }),
        report.bench.n_ubatch.map_or("?".into(), |n| n.to_string()),
        "PP",
        "TG",
        "B",
        "S_PP t/s",
        "predicted",
        "S_TG t/s",
        "predicted",
        "pred/log"
    );
    for r in &report.rows {
        s += &format!(
            "{:>6} {:>6} {:>5} {:>12.2} {:>12} {:>12.2} {:>12} {:>9}\n",
            r.pp,
            r.tg,
            r.batch,
            r.logged_prefill_tokens_per_s,
            opt(r.predicted_prefill_tokens_per_s),
            r.logged_decode_tokens_per_s,
            opt(r.predicted_decode_tokens_per_s),
            r.decode_ratio.map_or("—".into(), |x| format!("{x:.3}"))
        );
    }
    for n in &report.notes {
        s += &format!("note: {n}\n");
    }
    Ok(s)
}

/// TensorRT-LLM: the engine, the paged KV cache and its tokens per GPU, and
/// the cache's bytes per token, against the TensorRT-LLM rule's plan at the
/// logged number of ranks (as tensor parallelism) and a 16-bit cache (the
/// log does not print the cache type; an FP8 cache halves the logged
/// bytes per token).
fn check_trtllm(args: &CheckArgs, l: ai_hwaccel::plan::runtime::log::TrtllmLog) -> Result<String> {
    let tp = l.world_size.unwrap_or(1).max(1) as u32;
    let mut notes = Vec::new();
    let (mut w_pred, mut kv_pred, mut tok_pred, mut per_token_pred) = (None, None, None, None);
    if let Some(model) = &args.model {
        let m = crate::planning::load(model)?;
        per_token_pred = Some(kv_bytes_per_token_per_gpu(&m.spec, tp, 2.0));
        let (devices, _) = devices_from(args.devices.as_ref(), None, false)?;
        if devices.is_empty() {
            notes.push(
                "no accelerator to plan for: pass --devices (the GPUs the log is from)".into(),
            );
        } else {
            let opts = InferenceOptions {
                max_plans: 64,
                runtime: RuntimeKind::Trtllm,
                ..InferenceOptions::default()
            };
            let opts = ai_hwaccel::plan::options_for(&m, &opts);
            let p = plan_inference(&m.spec, &devices, &opts);
            match p
                .plans
                .iter()
                .find(|b| b.tensor_parallel == tp && b.pipeline_parallel == 1)
            {
                Some(b) => {
                    let d = &b.per_device[0];
                    w_pred = Some(d.weights_bytes);
                    kv_pred = d
                        .capacity_bytes
                        .checked_sub(d.weights_bytes + d.activation_bytes + d.overhead_bytes);
                    tok_pred = match (kv_pred, per_token_pred) {
                        (Some(kv), Some(t)) if t > 0.0 => Some((kv as f64 / t) as u64),
                        _ => None,
                    };
                }
                None => notes.push(format!(
                    "the planner has no plan at tensor parallelism {tp} on these devices: {}",
                    p.advice.join("; ")
                )),
            }
        }
    } else {
        notes.push("pass --model (and --devices) to compare with the planner's prediction".into());
    }
    // The PyTorch backend (1.x) logs its weights; a TensorRT engine's size
    // counts TensorRT's own buffers too.
    let logged_weights = l.weights_bytes.or(l.engine_bytes);
    if l.weights_bytes.is_none() && l.engine_bytes.is_some() {
        notes.push("the engine size counts TensorRT's own buffers beside the weights".into());
    }
    // The backend's own per-token figure where it prints one (the
    // allocation line's bytes are rounded to 0.01 GiB). A cache of several
    // attention windows (VSWA) sums its pools' tokens: its bytes over them
    // are no layer's size, and its token count is not the tokens one
    // sequence can hold at full attention.
    let vswa = l.variable_windows();
    let logged_per_token = l
        .logged_kv_bytes_per_token
        .or(l.kv_bytes_per_token().map(|b| b.round() as u64))
        .filter(|_| !vswa || l.logged_kv_bytes_per_token.is_some());
    if vswa {
        let pools: Vec<String> = l
            .kv_windows
            .iter()
            .map(|w| {
                format!(
                    "window {}: {} blocks ({} a sequence)",
                    w.window_tokens, w.primary_blocks, w.blocks_per_sequence
                )
            })
            .collect();
        notes.push(format!(
            "the cache has one pool per attention window (VSWA; {}): its token count sums the \
             pools, so it is not compared with the planner's full-attention tokens",
            pools.join(", ")
        ));
        tok_pred = None;
    }
    let report = Report {
        runtime: "trtllm",
        log: LlamaCppLog::default(),
        vllm_log: None,
        context_per_sequence: None,
        sequences: None,
        kv_dtype: None,
        rows: vec![
            make_row("weights_per_gpu", logged_weights, w_pred),
            make_row("kv_cache_memory_per_gpu", l.kv_cache_bytes, kv_pred),
            make_row("kv_cache_capacity_tokens", l.kv_cache_tokens, tok_pred),
            make_row(
                "kv_bytes_per_token_per_gpu",
                logged_per_token,
                per_token_pred.map(|b| b.round() as u64),
            ),
        ],
        sglang_log: None,
        trtllm_log: Some(l),
        per_device: Vec::new(),
        notes,
    };
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    Ok(render_rows(
        &format!("TensorRT-LLM log: {tp} rank(s)"),
        &report,
    ))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "the tests read fixtures")]
mod tests {
    use super::*;

    fn log(name: &str) -> LlamaCppLog {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../ai-hwaccel/tests/fixtures/runtime-logs")
            .join(name);
        parse_llamacpp_log(&std::fs::read_to_string(path).unwrap())
    }

    #[test]
    fn logged_devices_follow_llama_cpps_device_order() {
        // Buffers printed second device first; the device lines decide.
        assert_eq!(
            logged_devices(&log(
                "llama-server-local__2x-rpc-layer-split-reversed-buffers.log"
            )),
            ["RPC0[127.0.0.1:50888]", "RPC0[127.0.0.1:50313]"]
        );
        // A 2024 log without device lines: by the number ending the name.
        assert_eq!(
            logged_devices(&log("llama.cpp-pr6122__2x-cuda-old-format.log")),
            ["CUDA0", "CUDA1"]
        );
        let mut l = LlamaCppLog::default();
        for name in ["CUDA10", "CUDA_Host", "CUDA2", "CPU"] {
            l.compute_buffers
                .push(ai_hwaccel::plan::runtime::log::LoggedBuffer {
                    buffer: name.into(),
                    bytes: 1,
                });
        }
        assert_eq!(logged_devices(&l), ["CUDA2", "CUDA10"]);
    }

    /// A real memory breakdown table alone (four 20 GB RTX 3080s): its
    /// figures as the devices' buffers, in device order, each device's
    /// measured size beside the planned card's.
    #[test]
    fn a_breakdown_table_alone_is_checked() {
        let name = "llama-server-benchmarks-glm46__4x-rtx3080-20gb-exit-memory-breakdown.log";
        let mut l = log(name);
        assert!(buffers_from_breakdown(&mut l));
        assert_eq!(logged_devices(&l), ["CUDA0", "CUDA1", "CUDA2", "CUDA3"]);
        assert_eq!(l.devices.len(), 4);
        assert_eq!(l.devices[0], ("CUDA0".to_string(), "RTX 3080".to_string()));
        assert_eq!(
            LlamaCppLog::total(&l.model_buffers),
            Some((15686 + 16603 + 16608 + 15331 + 78278) << 20)
        );
        assert_eq!(
            LlamaCppLog::total(&l.kv_buffers),
            Some((1584 + 1296 + 1368 + 2376) << 20)
        );
        // Lines win: a log with buffer lines keeps them.
        assert!(!buffers_from_breakdown(&mut l));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../ai-hwaccel/tests/fixtures/runtime-logs")
            .join(name);
        let args = |devices: &str| CheckArgs {
            log: path.clone(),
            model: Some("llama-3.1-70b".into()),
            devices: Some(parse_devices(devices).unwrap()),
            quant: None,
            mixed_prefill: false,
            enforce_eager: false,
            runtime: None,
            json: true,
        };
        let report: serde_json::Value =
            serde_json::from_str(&check(&args("4xrtx-3080")).unwrap()).unwrap();
        let notes: Vec<&str> = report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("memory breakdown table (printed at exit"))
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("CUDA3: 20181 MiB total, 1569 MiB free")
                    && n.contains("252 MiB were used by neither"))
        );
        // The planned 10 GB RTX 3080s are not the 20 GB cards the log measured.
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("has 20181 MiB as llama.cpp measured it"))
                .count(),
            4,
            "{notes:?}"
        );
        assert_eq!(report["log"]["memory_breakdown"]["rows"][4]["kind"], "host");
        // A unified-memory GPU's backend reports its working-set limit,
        // below the system's memory: not said to be another card.
        let dir = tempfile::tempdir().unwrap();
        let apple = dir.path().join("apple.log");
        std::fs::write(
            &apple,
            "llama_memory_breakdown_print: | memory breakdown [MiB] | total    free    self   model   context   compute    unaccounted |
llama_memory_breakdown_print: |   - MTL0 (Apple M4 Max)    | 27648 = 20000 + (7280 =  6095 +     786 +     398) +           368 |
llama_memory_breakdown_print: |   - Host               |                  5556 =  5440 +       0 +     116                |
",
        )
        .unwrap();
        let a = CheckArgs {
            log: apple,
            model: Some("llama-3.1-8b".into()),
            devices: Some(parse_devices("1xm4-max-36gb").unwrap()),
            quant: None,
            mixed_prefill: false,
            enforce_eager: false,
            runtime: None,
            json: true,
        };
        let report: serde_json::Value = serde_json::from_str(&check(&a).unwrap()).unwrap();
        let notes = report["notes"].to_string();
        assert!(notes.contains("MTL0: 27648 MiB total"), "{notes}");
        assert!(!notes.contains("as llama.cpp measured it"), "{notes}");
    }
}
