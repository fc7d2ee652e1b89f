//! The `ai-hwaccel` command: wires arguments to the library and prints.
//! Data goes to stdout, diagnostics to stderr (`RUST_LOG` controls logs).
//!
//! Exit codes: 0 success, 1 error (one line naming what was wrong), 2 usage error.

mod planning;
mod render;
mod specs;
mod topo;
mod training;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ai_hwaccel::probe::ProbeOptions;
use ai_hwaccel::{
    BackendSet, DetectOptions, Family, LiveProbe, RecordingProbe, Registry, ReplayProbe,
};
use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ai-hwaccel",
    version,
    about = "Detect AI accelerators and the facts planners need about them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Detect devices and print them (a table, or JSON with --json).
    Detect(DetectArgs),
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
    },
    /// Show a model's architecture: parameters, active parameters, KV cache
    /// bytes per token and per-layer sizes. MODEL is a catalog name, a path
    /// (config.json, model directory, .safetensors, index json, .gguf) or a size (`7b`).
    Model {
        /// Catalog name, path or size.
        model: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Plan inference of MODEL on devices: memory per device, quantization,
    /// TP/PP/DP layouts ranked by estimated throughput.
    Plan(planning::PlanArgs),
    /// Plan training of MODEL: memory per device (parameters, gradients,
    /// optimizer, activations), whether it fits, tokens/s.
    Train(training::TrainArgs),
    /// Run one parser on a saved tool output (FILE, or - for stdin) and print
    /// `{"devices": [...], "warnings": [...]}`. `parse --list` names the formats.
    Parse {
        /// Format name (see --list).
        #[arg(required_unless_present = "list")]
        format: Option<String>,
        /// The saved output; `-` reads standard input.
        #[arg(required_unless_present = "list")]
        file: Option<PathBuf>,
        /// List the formats and exit.
        #[arg(long)]
        list: bool,
    },
}

#[derive(Args)]
struct ProbeArgs {
    /// Read the machine under this directory instead of / (a fake root or a host mount).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Never run external tools; read files only.
    #[arg(long)]
    no_exec: bool,
    /// Seconds a tool may run before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    timeout: f64,
    /// Directories to search for tools (colon-separated); default: PATH when the root is /.
    #[arg(long, value_name = "DIRS")]
    tool_path: Option<String>,
    /// Only these backends (comma-separated names; see --help for the list).
    /// Named backends always run, `vulkan` and `opencl` included.
    #[arg(long, value_name = "LIST")]
    backends: Option<String>,
    /// Run every backend: also Vulkan and OpenCL enumeration, which by
    /// default run only where a GPU no vendor backend described could add facts.
    #[arg(long, conflicts_with = "backends")]
    full: bool,
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
        if !(self.timeout.is_finite() && self.timeout > 0.0 && self.timeout <= 3600.0) {
            bail!(
                "--timeout must be between 0 and 3600 seconds, got {}",
                self.timeout
            );
        }
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

    fn backends(&self) -> Result<BackendSet> {
        match &self.backends {
            Some(list) => BackendSet::parse(list).map_err(anyhow::Error::msg),
            None if self.full => Ok(BackendSet::full()),
            None => Ok(BackendSet::all()),
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
    tracing_subscriber::fmt()
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
            ExitCode::from(1)
        }
    }
}

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
                backends: args.probe.backends()?,
                families: (!families.is_empty()).then_some(families),
            };
            let reg = match &args.from {
                Some(dir) => {
                    let replay = ReplayProbe::open(dir).context("--from")?;
                    ai_hwaccel::detect_with(&replay, &opts)
                }
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
                backends: probe.backends()?,
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
        Command::Parse { format, file, list } => {
            if list {
                let mut s = String::new();
                for f in ai_hwaccel::detect::FORMATS {
                    s += &format!("{:<22} {}\n", f.name, f.produced_by);
                }
                return out(&s);
            }
            let (Some(name), Some(file)) = (format, file) else {
                bail!("parse needs FORMAT and FILE");
            };
            let Some(fmt) = ai_hwaccel::detect::format(&name) else {
                let names: Vec<_> = ai_hwaccel::detect::FORMATS.iter().map(|f| f.name).collect();
                bail!("unknown format {name:?} (known: {})", names.join(", "));
            };
            #[allow(
                clippy::disallowed_methods,
                reason = "a user-named input file, not machine probing"
            )]
            let bytes = if file.as_os_str() == "-" {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut b)
                    .context("reading stdin")?;
                b
            } else {
                std::fs::read(&file).with_context(|| format!("{}", file.display()))?
            };
            let mut parsed = fmt.run(&bytes);
            // The same plausibility pass `detect` applies to every backend.
            ai_hwaccel::model::plausible::check_devices(&mut parsed.devices, &mut parsed.warnings);
            // The same datasheet entry `detect` attaches.
            ai_hwaccel::spec::attach(&mut parsed.devices);
            out(&format!("{}\n", serde_json::to_string_pretty(&parsed)?))
        }
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
                            backends: args.probe.backends()?,
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
        Command::Specs { query, json } => out(&specs::run(query, json)?),
        Command::Model { model, json } => out(&planning::model(&model, json)?),
        Command::Plan(args) => out(&planning::plan(&args)?),
        Command::Train(args) => out(&training::train(&args)?),
        Command::Schema => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&Registry::json_schema())?
        )),
    }
}
