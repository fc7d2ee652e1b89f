//! The `ai-hwaccel` command: wires arguments to the library and prints.
//! Data goes to stdout, diagnostics to stderr (`RUST_LOG` controls logs).
//!
//! Exit codes, one rule for every command:
//! - **0**: an answer (including "does not fit" or "no accelerator");
//! - **1**: a runtime error, in one line naming what failed (the file, the
//!   tool, the field; a model that is not found; options that do not fit the
//!   model or the devices);
//! - **2**: a usage error: an unknown command or option, a missing argument,
//!   or any option value that is invalid on its own (a non-positive timeout,
//!   an unknown backend, device, format or quantization, a number out of its
//!   documented bounds).

mod check;
mod cloud;
mod fit;
mod input;
mod kubelet;
mod planning;
mod render;
mod serve;
mod specs;
mod topo;
mod training;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ai_hwaccel::detect::Format;
use ai_hwaccel::probe::ProbeOptions;
use ai_hwaccel::{
    BackendSet, DetectOptions, Family, LiveProbe, RecordingProbe, Registry, ReplayProbe,
};
use anyhow::{Context as _, Result, bail};
use clap::{Args, CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ai-hwaccel",
    version,
    about = "Detect AI accelerators and the facts planners need about them",
    after_help = "Exit status: 0 an answer, 1 a runtime error (one line naming what failed), \
                  2 a usage error (including any invalid option value)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Detect devices and print them (a table, or JSON with --json).
    Detect(DetectArgs),
    /// Serve Prometheus metrics (/metrics), readiness (/-/ready, /-/healthy)
    /// and the registry, topology and telemetry as JSON (/v1/registry,
    /// /v1/topology, /v1/telemetry) over HTTP, from collections on a schedule.
    Serve(serve::ServeArgs),
    /// Print Kubernetes node labels (GPU Feature Discovery meanings, every
    /// vendor), or write them into Node Feature Discovery's features.d.
    Labels(serve::LabelsArgs),
    /// Stream events as JSON lines: a snapshot, then devices added/removed/
    /// unavailable, health (ECC growth, throttling) and threshold alerts.
    Watch(serve::WatchArgs),
    /// Compare a runtime's start-up log (llama.cpp, vLLM, SGLang), llama-bench
    /// results or serving benchmark results with the planner's prediction for
    /// the same model and options, component by component.
    Check(check::CheckArgs),
    /// Record everything detection reads into DIR, for replay with `detect --from DIR`.
    Snapshot {
        /// Directory to create (must not exist or be empty).
        dir: PathBuf,
        #[command(flatten)]
        probe: ProbeArgs,
    },
    /// Show how devices connect: the link matrix across vendors (NVLink, xGMI,
    /// PCIe paths), interconnect domains, NUMA/CPU/NIC affinity, network
    /// fabric, storage, environment (container, Kubernetes, Slurm) and cloud.
    Topo(TopoArgs),
    /// Print the JSON Schema of `detect --json` output.
    Schema,
    /// Show datasheet facts from the spec database (all entries, or those QUERY
    /// names: an id, a tool-reported name, a PCI id or a word to filter by).
    Specs {
        /// Entry id (`h100-sxm`), product name, PCI id (`10de:2330`) or filter word.
        query: Option<String>,
        /// Print JSON (an array of entries) instead of a table.
        #[arg(long)]
        json: bool,
        /// The CPU table instead (host CPUs: cores, clocks, memory channels,
        /// theoretical bandwidth, peak rates); QUERY is then a CPU id, a model
        /// name or a filter word (`zen4`, `xeon`).
        #[arg(long)]
        cpu: bool,
    },
    /// Show a model's architecture: parameters, active parameters, KV cache
    /// bytes per token and per-layer sizes. MODEL is a catalog name, a path
    /// (config.json, model directory, .safetensors, index json, .gguf) or a size (`7b`).
    Model {
        /// Catalog name, path or size (1m to 100t parameters).
        #[arg(required_unless_present = "list")]
        model: Option<String>,
        /// List the catalog: every model with its parameters, active
        /// parameters, maximum context, KV bytes per token and source.
        #[arg(long, conflicts_with = "model")]
        list: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Plan inference of MODEL on devices: memory per device, quantization,
    /// TP/PP/DP layouts ranked by estimated throughput.
    Plan(planning::PlanArgs),
    /// Which catalog models run on this machine's devices (or --devices):
    /// each at the highest-fidelity level that fits, largest first.
    Fit(fit::FitArgs),
    /// Plan training of MODEL: memory per device (parameters, gradients,
    /// optimizer, activations), whether it fits, tokens/s.
    Train(training::TrainArgs),
    /// Run one parser on a saved tool output (FILE, or - for stdin) and print
    /// `{"devices": [...], "warnings": [...]}`. `parse --list` names the formats.
    /// Exits 1 when the parser finds no device (the input is not that format).
    Parse {
        /// Format name (see --list).
        #[arg(required_unless_present = "list", value_parser = parse_format)]
        format: Option<&'static Format>,
        /// The saved output; `-` reads standard input.
        #[arg(required_unless_present = "list")]
        file: Option<PathBuf>,
        /// List the formats and exit.
        #[arg(long)]
        list: bool,
    },
    /// Print a shell completion script for SHELL to standard output
    /// (e.g. `ai-hwaccel completions bash > /etc/bash_completion.d/ai-hwaccel`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write man pages: `ai-hwaccel.1` to standard output, or with DIR one
    /// page per command into DIR (`ai-hwaccel.1`, `ai-hwaccel-detect.1`, …).
    Man {
        /// Directory to write the pages into (created if absent).
        dir: Option<PathBuf>,
    },
}

#[derive(Args, Clone)]
struct ProbeArgs {
    /// Read the machine under this directory instead of / (a fake root or a host mount).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Never run external tools; read files only.
    #[arg(long)]
    no_exec: bool,
    /// Seconds a tool may run before it is killed (more than 0, at most 3600).
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = parse_timeout)]
    timeout: f64,
    /// Directories to search for tools (colon-separated); default: PATH when the root is /.
    #[arg(long, value_name = "DIRS")]
    tool_path: Option<String>,
    /// Only these backends, comma-separated.
    #[arg(long, value_name = "LIST", value_parser = parse_backends, help = backends_help())]
    backends: Option<BackendSet>,
    /// Run every backend: also Vulkan and OpenCL enumeration, which by
    /// default run only where a GPU no vendor backend described could add facts.
    #[arg(long, conflicts_with = "backends")]
    full: bool,
}

/// `--backends` help: the names, from the library's one backend table.
fn backends_help() -> String {
    format!(
        "Only these backends, comma-separated; named backends always run, vulkan and \
         opencl included (of: {})",
        BackendSet::names().collect::<Vec<_>>().join(", ")
    )
}

fn parse_backends(s: &str) -> Result<BackendSet, String> {
    BackendSet::parse(s)
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 3600.0 => Ok(t),
        _ => Err(format!(
            "{s:?} is not a number of seconds above 0 and at most 3600"
        )),
    }
}

fn parse_format(s: &str) -> Result<&'static Format, String> {
    ai_hwaccel::detect::format(s).ok_or_else(|| {
        let names = ai_hwaccel::detect::FORMATS.iter().map(|f| f.name);
        format!(
            "unknown format {s:?}{} (`ai-hwaccel parse --list` names them)",
            ai_hwaccel::suggest::hint(&ai_hwaccel::suggest::suggest(s, names))
        )
    })
}

#[derive(Args)]
struct DetectArgs {
    #[command(flatten)]
    probe: ProbeArgs,
    /// Replay a snapshot directory instead of reading the machine.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["root", "tool_path"])]
    from: Option<PathBuf>,
    /// Print JSON (the documented contract) instead of a table.
    #[arg(long)]
    json: bool,
    /// Show how long each backend took.
    #[arg(long)]
    timings: bool,
    /// Reuse the registry the last `--cached` run stored (under
    /// $XDG_CACHE_HOME/ai-hwaccel) while the boot id, PCI functions and
    /// drivers, driver versions and visibility variables are unchanged;
    /// JSON gains a `cache` object with its age.
    #[arg(long, conflicts_with = "from")]
    cached: bool,
    /// Only devices of these families (repeat or comma-separate: gpu,npu,tpu,ai_asic,fpga,offload,cpu).
    #[arg(long, value_name = "F", value_delimiter = ',', value_parser = parse_family)]
    family: Vec<Family>,
}

#[derive(Args)]
struct TopoArgs {
    #[command(flatten)]
    probe: ProbeArgs,
    /// Replay a snapshot directory instead of reading the machine.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["root", "tool_path", "registry"])]
    from: Option<PathBuf>,
    /// Read a saved `detect --json` registry instead of detecting.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["root", "tool_path"])]
    registry: Option<PathBuf>,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
    /// The model cache directory whose filesystem to report (default: the
    /// Hugging Face cache from HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME or HOME).
    #[arg(long, value_name = "DIR", conflicts_with = "registry")]
    cache_dir: Option<String>,
}

impl ProbeArgs {
    fn options(&self) -> Result<ProbeOptions> {
        let mut o = ProbeOptions {
            no_exec: self.no_exec,
            timeout: Duration::from_secs_f64(self.timeout),
            ..ProbeOptions::default()
        };
        if let Some(root) = &self.root {
            let meta =
                std::fs::metadata(root).with_context(|| format!("--root {}", root.display()))?;
            if !meta.is_dir() {
                bail!("--root {}: not a directory", root.display());
            }
            o.root = root.clone();
        }
        if let Some(tp) = &self.tool_path {
            o.tool_path = Some(std::env::split_paths(tp).collect());
        }
        Ok(o)
    }

    fn backends(&self) -> BackendSet {
        match self.backends {
            Some(b) => b,
            None if self.full => BackendSet::full(),
            None => BackendSet::all(),
        }
    }
}

fn parse_family(s: &str) -> Result<Family, String> {
    s.parse()
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // Colour only on a terminal, and never with NO_COLOR set (no-color.org).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_ansi(ansi)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("ai-hwaccel: error: {e:#}");
            let usage = e.chain().any(|c| c.downcast_ref::<Usage>().is_some());
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// A usage error found after argument parsing (exit 2).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn out(text: &str) -> Result<()> {
    let mut so = std::io::stdout().lock();
    so.write_all(text.as_bytes())?;
    so.flush()?;
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Detect(args) => {
            let families = args.family.clone();
            let opts = DetectOptions {
                backends: args.probe.backends(),
                families: (!families.is_empty()).then_some(families),
            };
            let reg = match &args.from {
                Some(dir) => {
                    let replay = ReplayProbe::open(dir).context("--from")?;
                    ai_hwaccel::detect_with(&replay, &opts)
                }
                None if args.cached => ai_hwaccel::detect_cached(
                    &args.probe.options()?,
                    &opts,
                    &ai_hwaccel::CacheOptions::default(),
                ),
                None => ai_hwaccel::detect(&args.probe.options()?, &opts),
            };
            if args.json {
                out(&format!("{}\n", reg.to_json_pretty()))
            } else {
                for w in &reg.warnings {
                    eprintln!("warning: [{}] {}", w.backend, w.message);
                }
                out(&render::registry(&reg, args.timings))
            }
        }
        Command::Snapshot { dir, probe } => {
            let opts = DetectOptions {
                backends: probe.backends(),
                families: None,
            };
            ai_hwaccel::probe::check_snapshot_dir(&dir).context("snapshot")?;
            let po = probe.options()?;
            // Like `detect`: one deadline for all tool runs of the detection.
            let deadline = std::time::Instant::now() + po.timeout;
            let rec = RecordingProbe::new(LiveProbe::new(po).with_deadline(deadline));
            let reg: Registry = ai_hwaccel::detect_with(&rec, &opts);
            rec.save(&dir, &[("registry.json", reg.to_json_pretty().as_bytes())])
                .context("snapshot")?;
            eprintln!(
                "snapshot written to {} ({} devices, {} warnings); replay with: ai-hwaccel detect --from {}",
                dir.display(),
                reg.devices.len(),
                reg.warnings.len(),
                dir.display()
            );
            Ok(())
        }
        Command::Check(args) => out(&check::check(&args)?),
        Command::Serve(args) => serve::serve(args),
        Command::Labels(args) => serve::labels(args),
        Command::Watch(args) => serve::watch(args),
        Command::Parse { format, file, list } => {
            if list {
                let mut s = String::new();
                for f in ai_hwaccel::detect::FORMATS {
                    s += &format!("{:<22} {}\n", f.name, f.produced_by);
                }
                return out(&s);
            }
            let (Some(fmt), Some(file)) = (format, file) else {
                bail!(Usage("parse needs FORMAT and FILE".into()));
            };
            #[allow(
                clippy::disallowed_methods,
                reason = "a user-named input file, not machine probing"
            )]
            let bytes = input::read_input(&file, input::MAX_INPUT_BYTES)?;
            let mut parsed = fmt.run(&bytes);
            // Every supported tool prints at least one device block when it
            // succeeds (with none it exits non-zero with a message instead),
            // so no device means the input is not this format.
            if parsed.devices.is_empty() {
                for w in &parsed.warnings {
                    eprintln!("warning: {w}");
                }
                bail!(
                    "{}: not {} output: the parser recognised no device in it (expected the output of `{}`)",
                    if file.as_os_str() == "-" {
                        "standard input".to_string()
                    } else {
                        file.display().to_string()
                    },
                    fmt.name,
                    fmt.produced_by
                );
            }
            // The same plausibility pass `detect` applies to every backend.
            ai_hwaccel::model::plausible::check_devices(&mut parsed.devices, &mut parsed.warnings);
            // The same datasheet entry `detect` attaches.
            ai_hwaccel::spec::attach(&mut parsed.devices);
            out(&format!("{}\n", serde_json::to_string_pretty(&parsed)?))
        }
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "ai-hwaccel", &mut buf);
            std::io::stdout().lock().write_all(&buf)?;
            Ok(())
        }
        Command::Man { dir } => man(dir.as_deref()),
        Command::Topo(args) => {
            let cache = args.cache_dir.as_deref();
            let reg = match (&args.registry, &args.from) {
                (Some(file), _) => planning::read_registry(file)?,
                (None, Some(dir)) => {
                    let replay = ReplayProbe::open(dir).context("--from")?;
                    let mut reg = ai_hwaccel::detect_with(&replay, &DetectOptions::default());
                    if cache.is_some() {
                        reg.system.storage.model_cache =
                            ai_hwaccel::detect::model_cache_filesystem(&replay, cache);
                    }
                    reg
                }
                (None, None) => {
                    let probe = LiveProbe::new(args.probe.options()?);
                    let mut reg = ai_hwaccel::detect_with(
                        &probe,
                        &DetectOptions {
                            backends: args.probe.backends(),
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
            if args.json {
                out(&topo::json(&reg)?)
            } else {
                for w in &reg.warnings {
                    eprintln!("warning: [{}] {}", w.backend, w.message);
                }
                out(&topo::text(&reg))
            }
        }
        Command::Specs { query, json, cpu } => out(&if cpu {
            specs::run_cpu(query, json)?
        } else {
            specs::run(query, json)?
        }),
        Command::Model {
            list: true, json, ..
        } => out(&planning::model_list(json)?),
        Command::Model { model, json, .. } => out(&planning::model(
            model.as_deref().unwrap_or_default(),
            json,
        )?),
        Command::Plan(args) => out(&planning::plan(&args)?),
        Command::Train(args) => out(&training::train(&args)?),
        Command::Fit(args) => out(&fit::run(&args)?),
        Command::Schema => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&Registry::json_schema())?
        )),
    }
}

/// `ai-hwaccel man [DIR]`: the top page to stdout, or every page into DIR.
fn man(dir: Option<&std::path::Path>) -> Result<()> {
    let mut cmd = Cli::command();
    cmd.build();
    let render = |c: clap::Command| -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c).render(&mut buf)?;
        Ok(buf)
    };
    let Some(dir) = dir else {
        std::io::stdout().lock().write_all(&render(cmd)?)?;
        return Ok(());
    };
    #[allow(
        clippy::disallowed_methods,
        reason = "writing where the user asked, not machine probing"
    )]
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("{}", path.display()))
    };
    let mut names = vec!["ai-hwaccel.1".to_string()];
    write("ai-hwaccel.1", &render(cmd.clone())?)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("ai-hwaccel-{}", sub.get_name());
        // Leaked: clap names are `&'static`; this runs once, just before exit.
        let page = sub.clone().name(&*name.clone().leak());
        write(&format!("{name}.1"), &render(page)?)?;
        names.push(format!("{name}.1"));
    }
    eprintln!("wrote {} man pages to {}", names.len(), dir.display());
    Ok(())
}
