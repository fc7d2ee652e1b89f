//! `ai-hwaccel fit`: every catalog model on this machine's devices (or the
//! given ones), ranked by whether it fits, its size and its speed.

use ai_hwaccel::plan::catalog::Use;
use ai_hwaccel::plan::fit::{FitFilter, default_runtime, fit_filtered, parse_param_bound};
use ai_hwaccel::plan::inference::human_bytes;
use ai_hwaccel::plan::{InferenceOptions, RuntimeKind};
use anyhow::Result;
use clap::Args;
use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};

use crate::planning::{DeviceList, DeviceOrigin, devices_from, no_devices_note, parse_devices};

/// Arguments of `fit`.
#[derive(Args)]
pub struct FitArgs {
    /// Devices to fit models on (default: this machine's accelerators, else
    /// its CPU), names as `ai-hwaccel specs` finds them; `[N x]cpu:ID@SIZE`
    /// is a CPU of `specs --cpu` with N sockets and SIZE of memory.
    #[arg(long, value_name = "SPEC", conflicts_with = "registry", value_parser = parse_devices)]
    pub devices: Option<DeviceList>,
    /// The accelerators of a saved `detect --json` registry.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<std::path::PathBuf>,
    /// Whose memory rule to follow (default: llama.cpp on the host CPU, else generic).
    #[arg(long, value_name = "R", value_parser = crate::planning::parse_runtime)]
    pub runtime: Option<RuntimeKind>,
    /// Tokens per sequence, at most 100000000 (default: the model's maximum, at most 4096).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub context: Option<u64>,
    /// Only models made for every one of these uses (comma-separated: chat,
    /// code, reasoning, embedding, vision), as their model cards state.
    #[arg(long = "use", value_name = "USE", value_delimiter = ',', value_parser = parse_use)]
    pub uses: Vec<Use>,
    /// Only models with at least N parameters (`8b`, `1.5b`, `500m` or a count).
    #[arg(long, value_name = "N", value_parser = parse_param_bound)]
    pub min_params: Option<u64>,
    /// Only models with at most N parameters (`8b`, `1.5b`, `500m` or a count).
    #[arg(long, value_name = "N", value_parser = parse_param_bound)]
    pub max_params: Option<u64>,
    /// Also try, for each model that does not fit the accelerators alone,
    /// llama.cpp's partial offload to the host CPU's memory (`-ngl`, or
    /// `--n-cpu-moe` for a mixture of experts): the host of --registry, else
    /// of this machine. Such models are listed after those that fit whole.
    #[arg(long)]
    pub offload: bool,
    /// Also list the models that do not fit.
    #[arg(long)]
    pub all: bool,
    /// Print JSON (every model, fitting or not).
    #[arg(long)]
    pub json: bool,
}

/// `ai-hwaccel fit`.
pub fn run(args: &FitArgs) -> Result<String> {
    let (devices, origin) = devices_from(args.devices.as_ref(), args.registry.as_deref(), true)?;
    if ai_hwaccel::plan::PlanDevice::mixes_host_and_accelerators(&devices) && !args.offload {
        anyhow::bail!(crate::Usage(
            "a host CPU (`cpu:ID@SIZE`) with accelerators fits with llama.cpp's offload: add --offload"
                .into()
        ));
    }
    if devices.is_empty() {
        eprintln!("{}", no_devices_note(&origin));
    } else if devices.iter().all(|d| d.host) && matches!(origin, DeviceOrigin::Machine) {
        eprintln!(
            "note: no accelerator: fitting models to the host CPU ({})",
            devices[0].name
        );
    }
    let opts = InferenceOptions {
        context: args.context,
        runtime: args.runtime.unwrap_or_else(|| default_runtime(&devices)),
        ..Default::default()
    };
    let filter = FitFilter {
        uses: args.uses.clone(),
        min_params: args.min_params,
        max_params: args.max_params,
    };
    let rows = if args.offload {
        // The device string's host CPU (`cpu:ID@SIZE`), else the registry's
        // (this machine's without one).
        let reg = match &args.registry {
            Some(file) if !devices.iter().any(|d| d.host) => {
                Some(crate::planning::read_registry(file)?)
            }
            _ => None,
        };
        let (host, gpus, _) = ai_hwaccel::plan::PlanDevice::offload_host(&devices, || {
            reg.unwrap_or_else(|| {
                ai_hwaccel::detect(
                    &ai_hwaccel::ProbeOptions::default(),
                    &ai_hwaccel::DetectOptions::default(),
                )
            })
        })
        .ok_or_else(|| anyhow::anyhow!("--offload: no host memory figure for the CPU"))?;
        ai_hwaccel::plan::fit::fit_with_offload(&gpus, &host, &opts, &filter)
    } else {
        fit_filtered(&devices, &opts, &filter)
    };
    let opts = InferenceOptions {
        runtime: if args.offload {
            RuntimeKind::LlamaCpp
        } else {
            opts.runtime
        },
        ..opts
    };
    if args.json {
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "runtime": opts.runtime,
                "devices": devices,
                "models": rows,
            }))?
        ));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec![
        "model",
        "params",
        "fits",
        "level",
        "devices",
        "max ctx",
        "decode/seq",
        "memory left",
    ]);
    let shown: Vec<_> = rows
        .iter()
        .filter(|r| r.fits || r.offload || args.all)
        .collect();
    for r in &shown {
        t.add_row(vec![
            r.model.clone(),
            format!("{:.1}B", r.parameters as f64 / 1e9),
            match (r.fits, r.offload) {
                (true, _) => "yes",
                (false, true) => "offload",
                (false, false) => "no",
            }
            .into(),
            r.quantization.map_or("-".into(), |q| q.to_string()),
            r.devices_used.map_or("-".into(), |d| d.to_string()),
            r.max_context_tokens.map_or("-".into(), |c| c.to_string()),
            // An encoder (embedding model) never decodes: its encoding
            // rate is shown, marked.
            if r.encoder {
                r.encode_tokens_per_s
                    .map_or("encoder".into(), |s| format!("{s:.0} (enc)"))
            } else {
                r.decode_tokens_per_s_per_sequence
                    .map_or("unknown".into(), |s| format!("{s:.1}"))
            },
            r.memory_left_bytes.map_or("-".into(), human_bytes),
        ]);
    }
    let fitting = rows.iter().filter(|r| r.fits).count();
    let offloaded = rows.iter().filter(|r| r.offload).count();
    let filtered = if filter == FitFilter::default() {
        String::new()
    } else {
        " (filtered)".into()
    };
    let also = if args.offload {
        format!(", {offloaded} more with host-memory offload")
    } else {
        String::new()
    };
    Ok(format!(
        "{fitting} of {} catalog models{filtered} fit{also} ({} memory rule; largest first; tokens/s):\n{t}\n",
        rows.len(),
        opts.runtime
    ))
}

fn parse_use(s: &str) -> Result<Use, String> {
    Use::parse_list(s).map(|u| u[0])
}

/// `chat, code`, or `-` for none.
pub fn uses_text(uses: &[Use]) -> String {
    if uses.is_empty() {
        return "-".into();
    }
    uses.iter()
        .map(|u| u.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
