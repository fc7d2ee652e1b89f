//! The `ai-hwaccel` commands as JSON-in, JSON-out calls, shared by the C
//! ABI (`ai-hwaccel-c`) and the Python package (`ai-hwaccel-py`).
//!
//! Each command takes a JSON object whose keys are the CLI's long options
//! with `_` for `-` (`{"model": "llama-3.1-8b", "devices": "8xh100-sxm",
//! "max_plans": 3}`), with the CLI's defaults and bounds, and returns the
//! JSON text the CLI prints with `--json` for the same options. Unknown keys
//! and values out of bounds are [`ErrorKind::InvalidArgument`] (the CLI's
//! exit 2), a named file or directory that does not exist is
//! [`ErrorKind::NotFound`], anything else that fails is [`ErrorKind::Failed`]
//! (the CLI's exit 1).
//!
//! [`COMMANDS`] is the one option table: every command, its keys, and the
//! function that runs it. A binding exposes a command by name, so a new CLI
//! option is one key here plus one read in the command's function.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ai_hwaccel::plan::training::{
    AttentionImpl, Method, Module, Objective, Offload, Optimizer, Precision, Recompute,
    TrainingOptions,
};
use ai_hwaccel::plan::{
    InferenceOptions, InferencePlan, KvDtype, LoadedModel, ModelError, PlanDevice, Quant,
    RuntimeKind, load_model, plan_inference, plan_training,
};
use ai_hwaccel::{BackendSet, DetectOptions, Family, LiveProbe, ProbeOptions, Registry};
use serde_json::{Map, Value, json};

/// What kind of failure an [`Error`] is; the C ABI returns it as the error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ErrorKind {
    /// A runtime failure (the CLI's exit 1): a model that cannot be loaded,
    /// options that do not fit the model or the devices, a malformed file.
    Failed = 1,
    /// An invalid request (the CLI's exit 2): not a JSON object, an unknown
    /// key, a value of the wrong type or out of its documented bounds, an
    /// unknown device, backend, quantization or runtime name.
    InvalidArgument = 2,
    /// A file or directory the request names does not exist.
    NotFound = 3,
}

/// A failed call: its kind and a one-line message naming what failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The kind.
    pub kind: ErrorKind,
    /// The message, as the CLI would print it after `ai-hwaccel: error: `.
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

fn invalid(message: impl Into<String>) -> Error {
    Error {
        kind: ErrorKind::InvalidArgument,
        message: message.into(),
    }
}

fn failed(message: impl Into<String>) -> Error {
    Error {
        kind: ErrorKind::Failed,
        message: message.into(),
    }
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error {
        kind: if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Failed
        },
        message: format!("{what} {}: {e}", path.display()),
    }
}

/// A command: its name, its option keys, and what runs it.
pub struct Command {
    /// The CLI subcommand (`plan`), or `models` for `model --list` and
    /// `topology` for `topo`.
    pub name: &'static str,
    /// The keys its request object may hold (the CLI's long options, `_` for `-`).
    pub keys: &'static [&'static str],
    run: fn(&mut Request) -> Result<Value, Error>,
}

/// Every command the bindings expose, with its keys.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "detect",
        keys: &[
            "root",
            "no_exec",
            "timeout",
            "tool_path",
            "backends",
            "full",
            "from",
            "cached",
            "family",
        ],
        run: detect,
    },
    Command {
        name: "topology",
        keys: &[
            "root",
            "no_exec",
            "timeout",
            "tool_path",
            "backends",
            "full",
            "from",
            "registry",
            "cache_dir",
        ],
        run: topology,
    },
    Command {
        name: "specs",
        keys: &["query", "cpu"],
        run: specs,
    },
    Command {
        name: "model",
        keys: &["model"],
        run: model,
    },
    Command {
        name: "models",
        keys: &[],
        run: models,
    },
    Command {
        name: "plan",
        keys: &[
            "model",
            "devices",
            "registry",
            "quant",
            "kv_dtype",
            "context",
            "batch",
            "prefill_chunk",
            "memory_utilization",
            "decode_efficiency",
            "prefill_efficiency",
            "kv_read_efficiency",
            "max_num_seqs",
            "max_num_batched_tokens",
            "mem_fraction_static",
            "max_plans",
            "objective",
            "runtime",
            "input_len",
            "output_len",
            "ttft_ms",
            "tpot_ms",
            "expert_parallel",
            "unfused_attention",
            "runtime_build",
            "cuda_force_mmq",
            "imatrix",
            "mixed_prefill",
            "enforce_eager",
            "ubatch",
            "backend",
            "measure",
            "emit",
            "plan",
            "offload",
            "cloud",
            "provider",
            "price_file",
        ],
        run: plan,
    },
    Command {
        name: "fit",
        keys: &[
            "devices",
            "registry",
            "runtime",
            "context",
            "use",
            "min_params",
            "max_params",
            "offload",
        ],
        run: fit,
    },
    Command {
        name: "train",
        keys: &[
            "model",
            "method",
            "optimizer",
            "precision",
            "zero",
            "dp",
            "tp",
            "pp",
            "sequence_parallel",
            "micro_batch",
            "seq",
            "grad_accum",
            "expert_parallel",
            "recompute",
            "attention",
            "offload",
            "lora_rank",
            "lora_targets",
            "lora_experts",
            "teacher",
            "mfu",
            "fragmentation",
            "framework_overhead",
            "devices",
            "emit",
        ],
        run: train,
    },
];

/// The command named `name`.
pub fn command(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Run command `name` on a request (JSON object text; empty means `{}`) and
/// return its JSON text, as the CLI prints it with `--json` (pretty, no
/// trailing newline).
pub fn call(name: &str, request: &str) -> Result<String, Error> {
    let cmd = command(name).ok_or_else(|| {
        let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        invalid(format!(
            "unknown command {name:?} (known: {})",
            names.join(", ")
        ))
    })?;
    let value: Value = if request.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(request)
            .map_err(|e| invalid(format!("{name}: the request is not valid JSON: {e}")))?
    };
    let Value::Object(map) = value else {
        return Err(invalid(format!(
            "{name}: the request must be a JSON object"
        )));
    };
    let mut req = Request {
        command: cmd.name,
        map,
    };
    for key in req.map.keys() {
        if !cmd.keys.contains(&key.as_str()) {
            let hint = ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(
                key,
                cmd.keys.iter().copied(),
            ));
            return Err(invalid(format!(
                "{name}: unknown option {key:?}{hint} (known: {})",
                cmd.keys.join(", ")
            )));
        }
    }
    let out = (cmd.run)(&mut req)?;
    serde_json::to_string_pretty(&out).map_err(|e| failed(format!("{name}: {e}")))
}

/// A request object, read one typed key at a time; `null` is the same as
/// an absent key (the CLI's default).
struct Request {
    command: &'static str,
    map: Map<String, Value>,
}

impl Request {
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn bad(&self, key: &str, expected: &str) -> Error {
        let got = self.get(key).map_or("nothing".to_string(), |v| {
            let s = v.to_string();
            if s.chars().count() > 60 {
                format!("{}…", s.chars().take(60).collect::<String>())
            } else {
                s
            }
        });
        invalid(format!(
            "{}: option {key:?}: expected {expected}, got {got}",
            self.command
        ))
    }

    fn flag(&self, key: &str) -> Result<bool, Error> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(key, "true or false")),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(key, "a string")),
        }
    }

    fn path(&self, key: &str) -> Result<Option<PathBuf>, Error> {
        Ok(self.string(key)?.map(PathBuf::from))
    }

    /// A string, or a list of strings joined by commas (`"q,k"` or `["q", "k"]`).
    fn list(&self, key: &str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.bad(key, "a list of strings")))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| Some(v.join(","))),
            Some(_) => Err(self.bad(key, "a string or a list of strings")),
        }
    }

    fn int(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.bad(key, &format!("an integer from {min} to {max}"))),
            },
        }
    }

    /// A number in `(lo, hi]` (`lo_inclusive`: `[lo, hi]`).
    fn number(
        &self,
        key: &str,
        lo: f64,
        lo_inclusive: bool,
        hi: f64,
    ) -> Result<Option<f64>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(f) if f.is_finite() && (f > lo || (lo_inclusive && f == lo)) && f <= hi => {
                    Ok(Some(f))
                }
                _ => Err(self.bad(
                    key,
                    &format!(
                        "a number in {}{lo}, {hi}]",
                        if lo_inclusive { "[" } else { "(" }
                    ),
                )),
            },
        }
    }

    /// A name read by `parse`; the error lists `known`.
    fn named<T>(
        &self,
        key: &str,
        what: &str,
        known: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, Error> {
        let Some(s) = self.string(key)? else {
            return Ok(None);
        };
        parse(&s).map(Some).ok_or_else(|| {
            invalid(format!(
                "{}: option {key:?}: unknown {what} {s:?}{} (known: {})",
                self.command,
                ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(&s, known.iter().copied())),
                known.join(", ")
            ))
        })
    }
}

// ---- shared option groups -------------------------------------------------

/// The probe options (`root`, `no_exec`, `timeout`, `tool_path`), as the
/// CLI's `ProbeArgs::options`.
fn probe_options(r: &Request) -> Result<ProbeOptions, Error> {
    let mut o = ProbeOptions {
        no_exec: r.flag("no_exec")?,
        timeout: Duration::from_secs_f64(r.number("timeout", 0.0, false, 3600.0)?.unwrap_or(5.0)),
        ..ProbeOptions::default()
    };
    if let Some(root) = r.path("root")? {
        let meta = std::fs::metadata(&root).map_err(|e| io_error("root", &root, &e))?;
        if !meta.is_dir() {
            return Err(failed(format!("root {}: not a directory", root.display())));
        }
        o.root = root;
    }
    // A colon-separated string as on the command line, or a list of directories.
    o.tool_path = match r.get("tool_path") {
        None => None,
        Some(Value::String(s)) => Some(std::env::split_paths(s).collect()),
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|v| v.as_str().map(PathBuf::from))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| r.bad("tool_path", "a string or a list of strings"))?,
        ),
        Some(_) => return Err(r.bad("tool_path", "a string or a list of strings")),
    };
    Ok(o)
}

/// `backends` (a comma list or a list) and `full`.
fn backends(r: &Request) -> Result<BackendSet, Error> {
    let full = r.flag("full")?;
    match r.list("backends")? {
        Some(_) if full => Err(invalid(format!(
            "{}: options \"backends\" and \"full\" conflict",
            r.command
        ))),
        Some(list) => BackendSet::parse(&list)
            .map_err(|e| invalid(format!("{}: option \"backends\": {e}", r.command))),
        None if full => Ok(BackendSet::full()),
        None => Ok(BackendSet::all()),
    }
}

fn conflict(r: &Request, a: &str, others: &[&str]) -> Result<(), Error> {
    if r.get(a).is_some()
        && let Some(b) = others.iter().find(|b| r.get(b).is_some())
    {
        return Err(invalid(format!(
            "{}: options {a:?} and {b:?} conflict",
            r.command
        )));
    }
    Ok(())
}

fn replay(dir: &Path) -> Result<ai_hwaccel::ReplayProbe, Error> {
    std::fs::metadata(dir).map_err(|e| io_error("from", dir, &e))?;
    ai_hwaccel::ReplayProbe::open(dir).map_err(|e| failed(format!("from: {e}")))
}

/// A registry saved by `detect --json`; errors name the file and field.
fn read_registry(file: &Path) -> Result<Registry, Error> {
    // As the CLI reads it: only a regular file (a FIFO is an error, not a
    // wait), at most 64 MiB.
    const MAX_REGISTRY_BYTES: u64 = 64 << 20;
    let f =
        ai_hwaccel::probe::files::Opened::open(file).map_err(|e| io_error("registry", file, &e))?;
    let text = f
        .read_text_capped(MAX_REGISTRY_BYTES)
        .map_err(|e| io_error("registry", file, &e))?;
    Registry::from_json(&text).map_err(|e| failed(format!("{}: {e}", file.display())))
}

/// Resolve a model as the CLI's `planning::load` does: a size out of range
/// is an invalid argument; a name with a path separator that names nothing
/// is a missing file.
fn load(key: &str, name: &str) -> Result<LoadedModel, Error> {
    load_model(name).map_err(|e| {
        let kind = match &e {
            ModelError::SizeOutOfRange { .. } => ErrorKind::InvalidArgument,
            ModelError::Unknown { .. } if name.contains(std::path::MAIN_SEPARATOR) => {
                ErrorKind::NotFound
            }
            ModelError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            _ => ErrorKind::Failed,
        };
        let message = match kind {
            ErrorKind::InvalidArgument => e.to_string(),
            _ => format!("{key} {name:?}: {e}"),
        };
        Error { kind, message }
    })
}

fn required(r: &Request, key: &str) -> Result<String, Error> {
    r.string(key)?
        .ok_or_else(|| invalid(format!("{}: option {key:?} is required", r.command)))
}

fn to_value<T: serde::Serialize>(r: &Request, v: &T) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(|e| failed(format!("{}: {e}", r.command)))
}

fn device_list(r: &Request) -> Result<Option<Vec<PlanDevice>>, Error> {
    match r.list("devices")? {
        None => Ok(None),
        Some(s) => PlanDevice::from_device_string(&s)
            .map(Some)
            .map_err(|e| invalid(format!("{}: option \"devices\": {e}", r.command))),
    }
}

/// A device string's host CPU (`cpu:ID@SIZE`) is planned alone, or with
/// accelerators under llama.cpp's offload (`offload`), as the CLI checks.
fn check_host_mix(r: &Request, devices: &[PlanDevice], offload: bool) -> Result<(), Error> {
    if PlanDevice::mixes_host_and_accelerators(devices) && !offload {
        return Err(invalid(format!(
            "{}: a host CPU (`cpu:ID@SIZE`) with accelerators plans llama.cpp's offload: set \"offload\"",
            r.command
        )));
    }
    Ok(())
}

/// The devices to plan for and the registry they came from, as the CLI's
/// `planning::devices_and_registry`.
fn devices_and_registry(
    r: &Request,
    host_fallback: bool,
) -> Result<(Vec<PlanDevice>, Option<Registry>, bool), Error> {
    conflict(r, "devices", &["registry"])?;
    let from = |reg: &Registry| {
        if host_fallback {
            PlanDevice::from_registry_or_host(reg)
        } else {
            PlanDevice::from_registry(reg)
        }
    };
    if let Some(d) = device_list(r)? {
        return Ok((d, None, false));
    }
    if let Some(file) = r.path("registry")? {
        let reg = read_registry(&file)?;
        let d = from(&reg);
        if d.len() > ai_hwaccel::plan::MAX_DEVICES as usize {
            return Err(failed(format!(
                "{}: {} accelerators, more than the planner takes (at most {})",
                file.display(),
                d.len(),
                ai_hwaccel::plan::MAX_DEVICES
            )));
        }
        return Ok((d, Some(reg), false));
    }
    let reg = ai_hwaccel::detect(&ProbeOptions::default(), &DetectOptions::default());
    let mut d = from(&reg);
    d.truncate(ai_hwaccel::plan::MAX_DEVICES as usize);
    Ok((d, Some(reg), true))
}

fn runtime(r: &Request, key: &str) -> Result<Option<RuntimeKind>, Error> {
    let names: Vec<&str> = RuntimeKind::all().map(|k| k.name()).collect();
    r.named(key, "runtime", &names, RuntimeKind::parse)
}

// ---- commands -------------------------------------------------------------

/// `detect --json`.
fn detect(r: &mut Request) -> Result<Value, Error> {
    conflict(r, "from", &["root", "tool_path", "cached"])?;
    let families = match r.list("family")? {
        None => None,
        Some(s) => Some(
            s.split(',')
                .map(|f| {
                    f.parse::<Family>()
                        .map_err(|e| invalid(format!("detect: option \"family\": {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let opts = DetectOptions {
        backends: backends(r)?,
        families: families.filter(|f| !f.is_empty()),
    };
    let reg = match r.path("from")? {
        Some(dir) => ai_hwaccel::detect_with(&replay(&dir)?, &opts),
        None if r.flag("cached")? => ai_hwaccel::detect_cached(
            &probe_options(r)?,
            &opts,
            &ai_hwaccel::CacheOptions::default(),
        ),
        None => ai_hwaccel::detect(&probe_options(r)?, &opts),
    };
    to_value(r, &reg)
}

/// `topo --json`: the topology of a registry plus the host facts around it.
fn topology(r: &mut Request) -> Result<Value, Error> {
    conflict(r, "from", &["root", "tool_path", "registry"])?;
    conflict(r, "registry", &["root", "tool_path", "cache_dir"])?;
    let cache = r.string("cache_dir")?;
    let cache = cache.as_deref();
    let reg = match (r.path("registry")?, r.path("from")?) {
        (Some(file), _) => read_registry(&file)?,
        (None, Some(dir)) => {
            let replay = replay(&dir)?;
            let mut reg = ai_hwaccel::detect_with(&replay, &DetectOptions::default());
            if cache.is_some() {
                reg.system.storage.model_cache =
                    ai_hwaccel::detect::model_cache_filesystem(&replay, cache);
            }
            reg
        }
        (None, None) => {
            let probe = LiveProbe::new(probe_options(r)?);
            let mut reg = ai_hwaccel::detect_with(
                &probe,
                &DetectOptions {
                    backends: backends(r)?,
                    families: None,
                },
            );
            if cache.is_some() {
                reg.system.storage.model_cache =
                    ai_hwaccel::detect::model_cache_filesystem(&probe, cache);
            }
            reg
        }
    };
    let topo = ai_hwaccel::topology::Topology::from_registry(&reg);
    let mut v = to_value(r, &topo)?;
    let sys = &reg.system;
    if let Some(obj) = v.as_object_mut() {
        obj.insert("rdma".into(), to_value(r, &sys.rdma)?);
        obj.insert("network".into(), to_value(r, &sys.network)?);
        obj.insert("storage".into(), to_value(r, &sys.storage)?);
        obj.insert("environment".into(), to_value(r, &sys.environment)?);
        obj.insert("cloud".into(), to_value(r, &sys.cloud)?);
        obj.insert("cgroup".into(), to_value(r, &sys.cgroup)?);
    }
    Ok(v)
}

/// `specs [QUERY] --json`: as the CLI's `specs::select`.
fn specs(r: &mut Request) -> Result<Value, Error> {
    use ai_hwaccel::spec;
    let query = r.string("query")?;
    if r.flag("cpu")? {
        return match spec::cpu::select(query.as_deref()) {
            Ok(entries) => {
                let views: Vec<_> = entries.iter().map(|e| e.view()).collect();
                to_value(r, &views)
            }
            Err(ids) => Err(failed(format!(
                "no CPU table entry matches {:?}{} (run `ai-hwaccel specs --cpu` for the list)",
                query.as_deref().unwrap_or_default(),
                ai_hwaccel::suggest::hint(&ids)
            ))),
        };
    }
    let Some(q) = query.as_deref().map(str::trim).filter(|q| !q.is_empty()) else {
        return to_value(r, &spec::all());
    };
    let suggestions = match spec::lookup(q) {
        spec::Lookup::Found(e) => return to_value(r, &[e]),
        spec::Lookup::Ambiguous(all) => return to_value(r, &all),
        spec::Lookup::NotFound(s) => s,
    };
    let needle = q.to_ascii_lowercase();
    let contains = |s: &str| s.to_ascii_lowercase().contains(&needle);
    let hits: Vec<_> = spec::all()
        .iter()
        .filter(|e| {
            contains(&e.vendor)
                || contains(e.family.as_str())
                || e.architecture.as_deref().is_some_and(contains)
        })
        .collect();
    if hits.is_empty() {
        let ids: Vec<&str> = suggestions.iter().map(|e| e.id.as_str()).collect();
        return Err(failed(format!(
            "no spec entry matches {q:?}{} (run `ai-hwaccel specs` for the list)",
            ai_hwaccel::suggest::hint(&ids)
        )));
    }
    to_value(r, &hits)
}

/// `model MODEL --json`.
fn model(r: &mut Request) -> Result<Value, Error> {
    let name = required(r, "model")?;
    let m = load("model", &name)?;
    let s = &m.spec;
    Ok(json!({
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
    }))
}

/// `model --list --json`.
fn models(_: &mut Request) -> Result<Value, Error> {
    Ok(Value::Array(
        ai_hwaccel::plan::catalog::all()
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
            .collect(),
    ))
}

/// `--measure`: as the CLI's `planning::measure_host`.
fn measure_host(cpu: &mut PlanDevice) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bytes = cpu.capacity_bytes.map_or(1 << 30, |c| (c / 4).min(1 << 30)) as usize;
    if let Some(bw) = ai_hwaccel::detect::measure_read_bandwidth(bytes, threads, 3) {
        cpu.bandwidth_bytes_per_s = Some(bw as u64);
        cpu.bandwidth_basis = Some("measured".into());
    }
}

/// `plan MODEL --json` (with `emit`: the launch object of `--emit R --json`).
fn plan(r: &mut Request) -> Result<Value, Error> {
    use ai_hwaccel::plan::inference as inf;
    let name = required(r, "model")?;
    let quants: Vec<&str> = Quant::ALL.iter().map(|q| q.as_str()).collect();
    let quant = r.named("quant", "quantization", &quants, Quant::parse)?;
    let kv_dtype = r.named(
        "kv_dtype",
        "KV cache type",
        &["fp32", "bf16", "fp16", "fp8", "int8"],
        KvDtype::parse,
    )?;
    let objective = r.named(
        "objective",
        "objective",
        &["latency", "throughput"],
        |s| match s {
            "latency" => Some(inf::Objective::Latency),
            "throughput" => Some(inf::Objective::Throughput),
            _ => None,
        },
    )?;
    let rt = runtime(r, "runtime")?;
    let emit = runtime(r, "emit")?;
    let measure = r.flag("measure")?;
    let offload = r.flag("offload")?;
    let plan_index = r.int("plan", 1, 10_000)?.unwrap_or(1);
    let context = r.int("context", 1, 100_000_000)?;
    let batch = r.int("batch", 1, 1_000_000)?.unwrap_or(1);
    let prefill_chunk = r
        .int("prefill_chunk", 1, 10_000_000)?
        .unwrap_or(inf::DEFAULT_PREFILL_CHUNK);
    let memory_utilization = r
        .number("memory_utilization", 0.0, false, 1.0)?
        .unwrap_or(inf::DEFAULT_MEMORY_UTILIZATION);
    let decode_efficiency = r.number("decode_efficiency", 0.0, false, 1.0)?;
    let prefill_efficiency = r.number("prefill_efficiency", 0.0, false, 1.0)?;
    let kv_read_efficiency = r.number("kv_read_efficiency", 0.0, false, 1.0)?;
    // As the CLI: the fitted speed model unless an efficiency is given.
    let calibrated_speed = decode_efficiency.is_none() && prefill_efficiency.is_none();
    let decode_efficiency = decode_efficiency.unwrap_or(inf::DEFAULT_DECODE_EFFICIENCY);
    let prefill_efficiency = prefill_efficiency.unwrap_or(inf::DEFAULT_PREFILL_EFFICIENCY);
    let max_plans = r.int("max_plans", 1, 10_000)?.unwrap_or(5);
    let max_num_seqs = r.int("max_num_seqs", 1, 1_000_000)?;
    let max_num_batched_tokens = r.int("max_num_batched_tokens", 1, 10_000_000)?;
    let mem_fraction_static = r.number("mem_fraction_static", 0.0, false, 1.0)?;
    let input_len = r.int("input_len", 1, 100_000_000)?;
    let output_len = r.int("output_len", 1, 100_000_000)?;
    let ttft_ms = r.number("ttft_ms", 0.0, false, 3_600_000.0)?;
    let tpot_ms = r.number("tpot_ms", 0.0, false, 3_600_000.0)?;
    let expert_parallel = r.flag("expert_parallel")?;
    let fused_attention = !r.flag("unfused_attention")?;
    let cuda_force_mmq = r.flag("cuda_force_mmq")?;
    let gguf_imatrix = r.flag("imatrix")?;
    let mixed_prefill = r.flag("mixed_prefill")?;
    let eager = r.flag("enforce_eager")?;
    let ubatch = r.int("ubatch", 1, 2048)?;
    let runtime_build = match r.string("runtime_build")? {
        Some(s) => Some(
            ai_hwaccel::plan::speed::BuildMonth::parse(&s)
                .ok_or_else(|| r.bad("runtime_build", "a month YYYY-MM"))?,
        ),
        None => None,
    };
    let backend = match r.string("backend")? {
        Some(s) => Some(
            ai_hwaccel::plan::runtime::GgmlBackend::parse(&s)
                .filter(|_| !s.contains(','))
                .ok_or_else(|| {
                    r.bad(
                        "backend",
                        "one of cuda, hip (rocm), metal, sycl, vulkan, opencl",
                    )
                })?,
        ),
        None => None,
    };
    // Targets choose each layout's batch; offload plans have no layouts.
    conflict(r, "ttft_ms", &["batch", "offload"])?;
    conflict(r, "tpot_ms", &["batch", "offload"])?;
    if let (Some(c), Some(i)) = (context, input_len)
        && i.saturating_add(output_len.unwrap_or(0)) > c
    {
        return Err(invalid(format!(
            "plan: input_len {i} + output_len {} exceeds context {c}",
            output_len.unwrap_or(0)
        )));
    }
    // As the CLI's options; the runtime is set below.
    let base = InferenceOptions {
        quant,
        kv_dtype,
        context,
        batch,
        prefill_chunk,
        memory_utilization,
        decode_efficiency,
        prefill_efficiency,
        calibrated_speed,
        input_len,
        output_len,
        ttft_ms,
        tpot_ms,
        expert_parallel,
        fused_attention,
        runtime_build,
        cuda_force_mmq,
        mixed_prefill,
        eager,
        ubatch,
        kv_read_efficiency,
        backend,
        max_num_seqs,
        max_num_batched_tokens,
        mem_fraction_static,
        stored_weights: None,
        gguf_matmul_bytes: Vec::new(),
        max_plans: max_plans as usize,
        gguf_levels: false,
        gguf_imatrix,
        objective: objective.unwrap_or(inf::Objective::Latency),
        runtime: RuntimeKind::Generic,
    };
    if let (Some(e), Some(rt)) = (emit, rt)
        && e != rt
    {
        return Err(invalid(format!(
            "plan: emit {e} launches a plan made with {e}'s memory rule; drop runtime {rt} or make them the same"
        )));
    }
    let cloud = r.flag("cloud")?;
    if !cloud {
        for key in ["provider", "price_file"] {
            if r.get(key).is_some() {
                return Err(invalid(format!(
                    "plan: option {key:?} needs \"cloud\": true"
                )));
            }
        }
    }
    if cloud {
        for key in ["devices", "registry", "offload", "emit", "measure"] {
            conflict(r, "cloud", &[key])?;
        }
        return plan_cloud(
            r,
            &name,
            InferenceOptions {
                runtime: rt.unwrap_or(RuntimeKind::Generic),
                ..base
            },
        );
    }
    // Options are checked before anything slow (loading, detection) runs.
    let devices_arg = device_list(r)?;
    let m = load("model", &name)?;
    let (mut devices, registry, machine) = match devices_arg {
        Some(d) => {
            conflict(r, "devices", &["registry"])?;
            (d, None, false)
        }
        None => devices_and_registry(r, true)?,
    };
    check_host_mix(r, &devices, offload)?;
    let host = devices.len() == 1 && devices[0].host;
    if host && measure && machine {
        measure_host(&mut devices[0]);
    }
    let opts = InferenceOptions {
        runtime: match (emit, rt) {
            (Some(e), _) => e,
            (None, Some(rt)) => rt,
            (None, None) if host || offload => RuntimeKind::LlamaCpp,
            (None, None) => RuntimeKind::Generic,
        },
        ..base
    };
    let opts = ai_hwaccel::plan::options_for(&m, &opts);
    let p = if offload {
        offload_plan(
            &m,
            &devices,
            registry,
            &opts,
            measure && r.get("registry").is_none(),
        )?
    } else {
        plan_inference(&m.spec, &devices, &opts)
    };
    if emit.is_some() {
        let launch = ai_hwaccel::plan::runtime::emit(&p, plan_index as usize - 1, &m.origin)
            .map_err(|e| failed(format!("emit {}: {e}", p.runtime)))?;
        return to_value(r, &launch);
    }
    to_value(r, &p)
}

/// `plan --cloud`: as the CLI's `cloud::plan` (the price file read and
/// parsed by its extension, the table priced, filtered and planned).
fn plan_cloud(r: &Request, name: &str, opts: InferenceOptions) -> Result<Value, Error> {
    use ai_hwaccel::plan::cost::{self, CostError, PriceFormat};
    let providers = cost::provider_list(&r.list("provider")?.unwrap_or_default());
    let (entries, file_name) = match r.path("price_file")? {
        Some(file) => {
            let shown = file.display().to_string();
            let format = PriceFormat::from_file_name(&shown).ok_or_else(|| {
                failed(format!(
                    "price_file {shown}: unknown format: the name must end in .toml or .csv"
                ))
            })?;
            // Only a regular file (a FIFO is an error, not a wait), read
            // through the checked handle, at most MAX_PRICE_FILE_BYTES.
            let opened = ai_hwaccel::probe::files::Opened::open(&file)
                .map_err(|e| io_error("price_file", &file, &e))?;
            if opened.len() > cost::MAX_PRICE_FILE_BYTES {
                return Err(failed(format!(
                    "price_file {shown}: {} bytes is more than a price file may have ({})",
                    opened.len(),
                    cost::MAX_PRICE_FILE_BYTES
                )));
            }
            let text = opened
                .read_text_capped(cost::MAX_PRICE_FILE_BYTES)
                .map_err(|e| io_error("price_file", &file, &e))?;
            let entries = cost::parse_price_file(&text, format)
                .map_err(|e| failed(format!("price_file {shown}: {e}")))?;
            (entries, shown)
        }
        None => (Vec::new(), String::new()),
    };
    let m = load("model", name)?;
    let opts = ai_hwaccel::plan::options_for(&m, &opts);
    let report = cost::plan_cloud_priced(&m.spec, &entries, &file_name, &providers, &opts)
        .map_err(|e| match e {
            CostError::UnknownProvider { .. } => invalid(format!("plan: provider: {e}")),
            e => failed(format!("price_file {file_name}: {e}")),
        })?;
    to_value(r, &report)
}

/// `plan --offload`: as the CLI's `planning::offload_plan`.
fn offload_plan(
    m: &LoadedModel,
    devices: &[PlanDevice],
    registry: Option<Registry>,
    opts: &InferenceOptions,
    measure: bool,
) -> Result<InferencePlan, Error> {
    if devices.iter().all(|d| d.host) {
        return Err(failed("offload needs a GPU: none among the devices"));
    }
    // The device string's host CPU, else the registry's (this machine's).
    let (mut cpu, gpus, from_registry) = PlanDevice::offload_host(devices, || {
        registry.unwrap_or_else(|| {
            ai_hwaccel::detect(&ProbeOptions::default(), &DetectOptions::default())
        })
    })
    .ok_or_else(|| failed("offload: no host memory figure for the CPU"))?;
    if from_registry && measure {
        measure_host(&mut cpu);
    }
    let mut all = vec![cpu.clone()];
    all.extend(gpus.iter().cloned());
    let mut p = plan_inference(&m.spec, &all, opts);
    match ai_hwaccel::plan::plan_offload_gpus(&m.spec, &gpus, &cpu, opts) {
        Some(plan) => {
            p.quantization = plan.quantization;
            p.plans = vec![plan];
            p.feasible = true;
            p.feasible_plans = 1;
        }
        None => p = plan_inference(&m.spec, &gpus, opts),
    }
    Ok(p)
}

/// `fit --json`.
fn fit(r: &mut Request) -> Result<Value, Error> {
    let rt = runtime(r, "runtime")?;
    let context = r.int("context", 1, 100_000_000)?;
    let offload = r.flag("offload")?;
    let (devices, registry, _) = devices_and_registry(r, true)?;
    check_host_mix(r, &devices, offload)?;
    let opts = InferenceOptions {
        context,
        runtime: if offload {
            RuntimeKind::LlamaCpp
        } else {
            rt.unwrap_or_else(|| ai_hwaccel::plan::fit::default_runtime(&devices))
        },
        ..Default::default()
    };
    let filter = ai_hwaccel::plan::fit::FitFilter {
        uses: match r.list("use")? {
            Some(s) => ai_hwaccel::plan::catalog::Use::parse_list(&s)
                .map_err(|e| invalid(format!("fit: option \"use\": {e}")))?,
            None => Vec::new(),
        },
        min_params: param_bound(r, "min_params")?,
        max_params: param_bound(r, "max_params")?,
    };
    let rows = if offload {
        // As the CLI's `fit --offload`: the device string's host CPU, else
        // the registry's, else this machine's.
        let (host, gpus, _) = PlanDevice::offload_host(&devices, || {
            registry.unwrap_or_else(|| {
                ai_hwaccel::detect(&ProbeOptions::default(), &DetectOptions::default())
            })
        })
        .ok_or_else(|| failed("fit: offload: no host memory figure for the CPU"))?;
        ai_hwaccel::plan::fit::fit_with_offload(&gpus, &host, &opts, &filter)
    } else {
        ai_hwaccel::plan::fit::fit_filtered(&devices, &opts, &filter)
    };
    Ok(json!({
        "runtime": opts.runtime,
        "devices": devices,
        "models": rows,
    }))
}

/// `min_params`/`max_params`: a size string (`"8b"`) or a count, as the
/// CLI's `--min-params`.
fn param_bound(r: &Request, key: &str) -> Result<Option<u64>, Error> {
    let s = match r.get(key) {
        None => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() => n.to_string(),
        Some(_) => return Err(r.bad(key, "a size such as \"8b\" or a parameter count")),
    };
    ai_hwaccel::plan::fit::parse_param_bound(&s)
        .map(Some)
        .map_err(|e| invalid(format!("fit: option {key:?}: {e}")))
}

/// `train MODEL --json`: options as the CLI's `training::options`.
fn train(r: &mut Request) -> Result<Value, Error> {
    let name = required(r, "model")?;
    let (method, objective) = r
        .named(
            "method",
            "method",
            &["full", "lora", "qlora", "dpo", "ppo", "distill"],
            |s| match s {
                "full" => Some((Method::Full, Objective::Sft)),
                "lora" => Some((Method::Lora, Objective::Sft)),
                "qlora" => Some((Method::Qlora, Objective::Sft)),
                "dpo" => Some((Method::Full, Objective::Dpo)),
                "ppo" => Some((Method::Full, Objective::Ppo)),
                "distill" => Some((Method::Full, Objective::Distill)),
                _ => None,
            },
        )?
        .unwrap_or((Method::Full, Objective::Sft));
    let optimizer = r
        .named(
            "optimizer",
            "optimizer",
            &[
                "adamw",
                "adamw8bit",
                "sgd",
                "sgd-momentum",
                "adafactor",
                "lion",
            ],
            |s| match s {
                "adamw" => Some(Optimizer::Adamw),
                "adamw8bit" => Some(Optimizer::Adamw8bit),
                "sgd" => Some(Optimizer::Sgd),
                "sgd-momentum" => Some(Optimizer::SgdMomentum),
                "adafactor" => Some(Optimizer::Adafactor),
                "lion" => Some(Optimizer::Lion),
                _ => None,
            },
        )?
        .unwrap_or(Optimizer::Adamw);
    let precision = r
        .named(
            "precision",
            "precision",
            &["fp32", "mixed", "bf16"],
            |s| match s {
                "fp32" => Some(Precision::Fp32),
                "mixed" => Some(Precision::Mixed),
                "bf16" => Some(Precision::Bf16),
                _ => None,
            },
        )?
        .unwrap_or(Precision::Mixed);
    let recompute = r
        .named(
            "recompute",
            "recompute mode",
            &["none", "selective", "full"],
            |s| match s {
                "none" => Some(Recompute::None),
                "selective" => Some(Recompute::Selective),
                "full" => Some(Recompute::Full),
                _ => None,
            },
        )?
        .unwrap_or(Recompute::None);
    let attention = r
        .named("attention", "attention", &["flash", "eager"], |s| match s {
            "flash" => Some(AttentionImpl::Flash),
            "eager" => Some(AttentionImpl::Eager),
            _ => None,
        })?
        .unwrap_or(AttentionImpl::Flash);
    let offload = r
        .named(
            "offload",
            "offload",
            &["none", "optimizer", "params", "both"],
            |s| match s {
                "none" => Some(Offload::None),
                "optimizer" => Some(Offload::Optimizer),
                "params" => Some(Offload::Params),
                "both" => Some(Offload::Both),
                _ => None,
            },
        )?
        .unwrap_or(Offload::None);
    let lora_targets = match r.list("lora_targets")? {
        None => "q,k,v,o,gate,up,down".to_string(),
        Some(s) => s,
    };
    let lora_targets = lora_targets
        .split(',')
        .map(|t| {
            Module::parse(t).ok_or_else(|| {
                invalid(format!(
                    "train: option \"lora_targets\": unknown LoRA target {t:?} (known: q, k, v, o, gate, up, down)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let zero_stage = r.int("zero", 0, 3)?.unwrap_or(0) as u8;
    let data_parallel = r.int("dp", 1, 4096)?.map(|n| n as u32);
    let tensor_parallel = r.int("tp", 1, 1024)?.unwrap_or(1) as u32;
    let pipeline_parallel = r.int("pp", 1, 1024)?.unwrap_or(1) as u32;
    let micro_batch = r.int("micro_batch", 1, 65_536)?.unwrap_or(1);
    let seq = r.int("seq", 1, 100_000_000)?.unwrap_or(2048);
    let gradient_accumulation = r.int("grad_accum", 1, 65_536)?;
    let expert_parallel = r.int("expert_parallel", 1, 4096)?.unwrap_or(1) as u32;
    let lora_rank = r.int("lora_rank", 1, 65_536)?.unwrap_or(16);
    let mfu = r
        .number("mfu", 0.0, false, 1.0)?
        .unwrap_or(ai_hwaccel::plan::training::DEFAULT_MFU);
    let fragmentation = r.number("fragmentation", 0.0, true, 1.0)?.unwrap_or(0.0);
    let framework_overhead = r.int("framework_overhead", 0, 1 << 40)?;
    let sequence_parallel = r.flag("sequence_parallel")?;
    let lora_experts = r.flag("lora_experts")?;
    let teacher_name = r.string("teacher")?;
    let emit = r.named(
        "emit",
        "launcher",
        &["deepspeed", "accelerate", "torchrun"],
        ai_hwaccel::plan::training_emit::TrainLauncher::parse,
    )?;
    let devices_arg = device_list(r)?;
    let m = load("model", &name)?;
    let teacher = match &teacher_name {
        Some(t) => Some(load("teacher", t)?.spec),
        None => None,
    };
    let devices = match devices_arg {
        Some(d) => d,
        None => devices_and_registry(r, false)?.0,
    };
    if devices.iter().any(|d| d.host) {
        return Err(invalid(
            "train: a host CPU (`cpu:ID@SIZE`) is not a training device",
        ));
    }
    let opts = TrainingOptions {
        method,
        objective,
        optimizer,
        precision,
        zero_stage,
        data_parallel,
        tensor_parallel,
        pipeline_parallel,
        sequence_parallel,
        micro_batch,
        seq,
        gradient_accumulation,
        expert_parallel,
        recompute,
        attention,
        offload,
        lora_rank,
        lora_targets,
        lora_experts,
        teacher,
        mfu,
        fragmentation_fraction: fragmentation,
        framework_overhead_bytes: framework_overhead,
        ..TrainingOptions::default()
    };
    let p = plan_training(&m.spec, &devices, &opts).map_err(|e| failed(e.to_string()))?;
    if let Some(l) = emit {
        let launch = ai_hwaccel::plan::training_emit::emit_training(&p, l)
            .map_err(|e| failed(format!("train: emit: {e}")))?;
        return to_value(r, &launch);
    }
    to_value(r, &p)
}

/// The queries of a registry the bindings answer as the library does: the
/// ids of the available accelerators ([`Registry::available_accelerators`],
/// in registry order) and of the best one ([`Registry::best_accelerator`]),
/// from a registry's JSON (as `detect` returns it).
pub fn accelerator_ids(registry_json: &str) -> Result<(Vec<String>, Option<String>), Error> {
    let reg = Registry::from_json(registry_json).map_err(|e| invalid(format!("registry: {e}")))?;
    let ids = reg.available_accelerators().map(|d| d.id.clone()).collect();
    Ok((ids, reg.best_accelerator().map(|d| d.id.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_read() {
        // A key listed but never read would be accepted and silently
        // ignored: give each one a value no reader accepts (an object) and
        // expect the error to name it.
        for c in COMMANDS {
            for k in c.keys {
                let mut req = Map::new();
                if c.keys.contains(&"model") {
                    req.insert("model".into(), json!("7b"));
                }
                req.insert((*k).into(), json!({"bad": 1}));
                let e = call(c.name, &Value::Object(req).to_string()).unwrap_err();
                assert_eq!(e.kind, ErrorKind::InvalidArgument, "{} {k}: {e}", c.name);
                assert!(e.message.contains(&format!("{k:?}")), "{} {k}: {e}", c.name);
            }
        }
    }

    #[test]
    fn plan_matches_the_library_defaults() {
        let out: Value = serde_json::from_str(
            &call(
                "plan",
                r#"{"model": "llama-3.1-8b", "devices": "1xh100-sxm"}"#,
            )
            .unwrap(),
        )
        .unwrap();
        let lib = ai_hwaccel::plan::plan_inference_for(
            "llama-3.1-8b",
            "1xh100-sxm",
            &InferenceOptions {
                // The CLI's default (the library's is 10).
                max_plans: 5,
                ..InferenceOptions::default()
            },
        )
        .unwrap();
        assert_eq!(out, serde_json::to_value(&lib).unwrap());
        assert_eq!(out["options"]["max_plans"], 5);
    }

    #[test]
    fn plan_takes_a_ggml_backend() {
        let req = |extra: &str| {
            format!(
                r#"{{"model": "llama-2-7b", "devices": "1xarc-a770", "runtime": "llama.cpp", "quant": "q4_0", "context": 512{extra}}}"#
            )
        };
        let prefill =
            |v: &serde_json::Value| v["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap();
        let native: serde_json::Value =
            serde_json::from_str(&call("plan", &req("")).unwrap()).unwrap();
        let vulkan: serde_json::Value =
            serde_json::from_str(&call("plan", &req(r#", "backend": "Vulkan""#)).unwrap()).unwrap();
        assert_eq!(vulkan["options"]["backend"], "vulkan");
        assert!(native["options"]["backend"].is_null());
        // The A770's vector engines (34.4 TFLOPS FP16) against its XMX
        // engines (137.6): a quarter of the prompt rate, less the same
        // per-layer time.
        let r = prefill(&vulkan) / prefill(&native);
        assert!(r > 0.2 && r < 0.3, "{r}");
        assert!(
            vulkan["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("vector engines")),
            "{vulkan}"
        );
        for bad in [r#""cuda,vulkan""#, r#""directml""#, "3"] {
            let e = call("plan", &req(&format!(r#", "backend": {bad}"#))).unwrap_err();
            assert!(e.message.contains("\"backend\""), "{bad}: {e}");
        }
    }

    #[test]
    fn plan_takes_a_runtime_build_month() {
        let req = |b: &str| {
            format!(
                r#"{{"model": "llama-3-8b", "devices": "1xrtx-4090", "runtime": "llama.cpp", "context": 512{b}}}"#
            )
        };
        let now: Value = serde_json::from_str(&call("plan", &req("")).unwrap()).unwrap();
        let old: Value =
            serde_json::from_str(&call("plan", &req(r#", "runtime_build": "2024-05""#)).unwrap())
                .unwrap();
        assert_eq!(old["options"]["runtime_build"], "2024-05");
        let d = |v: &Value| {
            v["plans"][0]["decode_tokens_per_s_per_sequence"]
                .as_f64()
                .unwrap()
        };
        assert!(d(&old) < d(&now));
        let e = call("plan", &req(r#", "runtime_build": "2024-13""#)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("\"runtime_build\""), "{e}");
    }

    #[test]
    fn errors_have_kinds_and_name_the_field() {
        let e = call("plan", r#"{"model": "7b", "batch": 0}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("\"batch\""), "{e}");
        let e = call("plan", r#"{"model": "7b", "tpot_ms": 30, "batch": 2}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("conflict"), "{e}");
        let e = call(
            "plan",
            r#"{"model": "7b", "input_len": 4000, "output_len": 200, "context": 4096}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        let e = call("plan", r#"{"model": "7b", "ttft_ms": -1}"#).unwrap_err();
        assert!(e.message.contains("\"ttft_ms\""), "{e}");
        let out: Value = serde_json::from_str(
            &call(
                "plan",
                r#"{"model": "7b", "devices": "1xh100-sxm", "input_len": 512, "output_len": 64, "tpot_ms": 40}"#,
            )
            .unwrap(),
        )
        .unwrap();
        assert!(out["plans"][0]["tpot_ms"].as_f64().unwrap() <= 40.0);
        assert!(out["plans"][0]["request_latency_ms"].is_number());
        let e = call("plan", r#"{"model": "7b", "devicez": "1xh100-sxm"}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("devices"), "{e}");
        let e = call(
            "plan",
            r#"{"model": "no-such-model-xyz", "devices": "1xh100-sxm"}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        let e = call(
            "plan",
            r#"{"model": "7b", "registry": "/nonexistent/reg.json"}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
        let e = call("detect", r#"{"root": "/nonexistent/root"}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
        let e = call("specs", "[1]").unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        let e = call(
            "plan",
            r#"{"model": "7b", "devices": "1xrtx-4090,cpu:epyc-9654@64g"}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
        assert!(e.message.contains("offload"), "{e}");
        let e = call(
            "train",
            r#"{"model": "7b", "devices": "cpu:epyc-9654@64g"}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
        let p: Value = serde_json::from_str(
            &call(
                "plan",
                r#"{"model": "llama-3.1-8b", "devices": "cpu:epyc-9654@64g", "quant": "q4_k"}"#,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(p["devices"][0]["cpu_spec_id"], "epyc-9654");
        assert!(p["plans"][0]["decode_tokens_per_s"].as_f64().unwrap() > 1.0);
        let e = call("specs", r#"{"cpu": "yes"}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        let e = call("specs", r#"{"cpu": true, "query": "no-such-cpu-xyz"}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        let zen4: Value =
            serde_json::from_str(&call("specs", r#"{"cpu": true, "query": "zen4"}"#).unwrap())
                .unwrap();
        let zen4 = zen4.as_array().unwrap();
        assert!(zen4.len() > 3);
        assert!(zen4.iter().all(|e| e["microarchitecture"] == "zen4"
            && e["memory_bandwidth_bytes_per_s"].as_u64().unwrap() > 0));
        let e = call("nope", "{}").unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        let e = call(
            "train",
            r#"{"model": "7b", "devices": "1xh100-sxm", "optimizer": "adam"}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("adamw"), "{e}");
    }

    #[test]
    fn train_reads_every_option() {
        let out: Value = serde_json::from_str(
            &call(
                "train",
                r#"{"model": "llama-3.1-8b", "devices": "8xh100-sxm", "zero": 3, "method": "lora",
                    "lora_targets": ["q", "v"], "seq": 4096, "micro_batch": 2}"#,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(out["options"]["zero_stage"], 3);
        assert_eq!(out["options"]["seq"], 4096);
        assert_eq!(out["options"]["micro_batch"], 2);
        assert_eq!(out["options"]["lora_targets"], json!(["q", "v"]));
    }
}
