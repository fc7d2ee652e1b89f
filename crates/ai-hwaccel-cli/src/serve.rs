//! `serve`, `labels` and `watch`: thin layers over the library's detection,
//! telemetry, exposition, labels and events (`ai_hwaccel::telemetry`).
//!
//! `serve` collects on its own schedule in one thread (detection under its
//! tool deadline, then a telemetry sample) and answers HTTP from the last
//! collection in a few worker threads, so a scrape never waits on hardware
//! and a hung tool never blocks `/metrics`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ai_hwaccel::telemetry::events::{AlertRule, Observation, diff, rfc3339_utc};
use ai_hwaccel::telemetry::labels::{LabelOptions, node_labels, to_feature_file};
use ai_hwaccel::telemetry::metrics::{Options as MetricOptions, encode_openmetrics, to_text_004};
use ai_hwaccel::telemetry::{Telemetry, sample};
use ai_hwaccel::topology::Topology;
use ai_hwaccel::{DetectOptions, LiveProbe, Probe, Registry, ReplayProbe};
use anyhow::{Context as _, Result, bail};
use clap::Args;

use crate::{ProbeArgs, Usage, out};

/// Default listen address: loopback only (`--listen 0.0.0.0:9842` to expose).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9842";

/// Where devices come from for serve/labels/watch.
#[derive(Args, Clone)]
pub struct SourceArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Replay a snapshot directory instead of reading the machine.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["root", "tool_path"])]
    pub from: Option<PathBuf>,
}

/// One collection: detection, then telemetry, through the same probe.
pub struct Collected {
    pub registry: Registry,
    pub telemetry: Telemetry,
    pub pods: Vec<ai_hwaccel::telemetry::pods::PodDevice>,
    pub host: String,
    pub finished: Instant,
    pub seconds: f64,
}

impl SourceArgs {
    /// Check the options once, before any loop starts (usage errors exit 2).
    fn check(&self) -> Result<()> {
        if let Some(dir) = &self.from {
            ReplayProbe::open(dir).context("--from")?;
        } else {
            self.probe.options()?;
        }
        Ok(())
    }

    /// Detect and sample now.
    pub fn collect(&self) -> Result<Collected> {
        let start = Instant::now();
        let opts = DetectOptions {
            backends: self.probe.backends(),
            families: None,
        };
        let (registry, telemetry, host) = match &self.from {
            Some(dir) => {
                let p = ReplayProbe::open(dir).context("--from")?;
                let r = ai_hwaccel::detect_with(&p, &opts);
                let t = sample(&p, &r);
                let h = hostname(&p);
                (r, t, h)
            }
            None => {
                let po = self.probe.options()?;
                let r = ai_hwaccel::detect(&po, &opts);
                let p = LiveProbe::new(po);
                let t = sample(&p, &r);
                let h = hostname(&p);
                (r, t, h)
            }
        };
        Ok(Collected {
            registry,
            telemetry,
            pods: Vec::new(),
            host,
            finished: Instant::now(),
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}

fn hostname(p: &dyn Probe) -> String {
    use ai_hwaccel::probe::ProbeExt;
    p.read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| p.read_trimmed("/etc/hostname"))
        .unwrap_or_default()
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && (0.1..=86_400.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0.1 to 86400"
        )),
    }
}

fn parse_alert(s: &str) -> Result<AlertRule, String> {
    AlertRule::parse(s)
}

// ---------------------------------------------------------------------------
// serve

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Address to listen on (loopback by default; `0.0.0.0:9842` for all interfaces).
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// Seconds between collections (0.1 to 86400).
    #[arg(long, value_name = "SECS", default_value_t = 15.0, value_parser = parse_interval)]
    pub interval: f64,
    /// Also expose NVIDIA GPUs under dcgm-exporter's metric names and labels.
    #[arg(long)]
    pub dcgm_names: bool,
    /// The kubelet's pod-resources socket: when it exists, each device's
    /// pod, namespace and container are exported (`ai_hwaccel_device_pod_info`).
    #[arg(long, value_name = "SOCKET", default_value = crate::kubelet::DEFAULT_SOCKET)]
    pub pod_resources: PathBuf,
    /// HTTP worker threads.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
}

struct ServeState {
    last: Option<Arc<Collected>>,
    collections: u64,
    errors: u64,
    last_error: Option<String>,
}

pub fn serve(args: ServeArgs) -> Result<()> {
    args.source.check()?;
    let server = tiny_http::Server::http(&args.listen)
        .map_err(|e| anyhow::anyhow!("--listen {}: {e}", args.listen))?;
    let addr = server
        .server_addr()
        .to_ip()
        .map(|a| a.to_string())
        .unwrap_or_else(|| args.listen.clone());
    eprintln!("ai-hwaccel serve: listening on http://{addr}/metrics");
    let state = Arc::new(Mutex::new(ServeState {
        last: None,
        collections: 0,
        errors: 0,
        last_error: None,
    }));
    let interval = Duration::from_secs_f64(args.interval);
    {
        let state = state.clone();
        let source = args.source.clone();
        let socket = args.pod_resources.clone();
        std::thread::Builder::new()
            .name("collector".into())
            .spawn(move || {
                loop {
                    let started = Instant::now();
                    let r = source.collect().map(|mut c| {
                        attribute_pods(&mut c, &socket);
                        c
                    });
                    {
                        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                        match r {
                            Ok(c) => {
                                s.last = Some(Arc::new(c));
                                s.collections += 1;
                                s.last_error = None;
                            }
                            Err(e) => {
                                s.errors += 1;
                                s.last_error = Some(format!("{e:#}"));
                                tracing::warn!(error = %format!("{e:#}"), "collection failed");
                            }
                        }
                    }
                    std::thread::sleep(interval.saturating_sub(started.elapsed()));
                }
            })?;
    }
    let server = Arc::new(server);
    let opts = Arc::new((args.dcgm_names, interval));
    let mut workers = Vec::new();
    for i in 0..args.threads {
        let server = server.clone();
        let state = state.clone();
        let opts = opts.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("http-{i}"))
                .spawn(move || {
                    for req in server.incoming_requests() {
                        let resp = respond(&req, &state, opts.0, opts.1);
                        let _ = req.respond(resp);
                    }
                })?,
        );
    }
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// Ask the kubelet which container holds each device, when its socket is
/// there; a failure is a telemetry warning, never a failed collection.
fn attribute_pods(c: &mut Collected, socket: &std::path::Path) {
    if !std::fs::metadata(socket).is_ok_and(|m| !m.is_dir()) {
        return;
    }
    let rows = crate::kubelet::list(socket, Duration::from_secs(2)).and_then(|b| {
        ai_hwaccel::telemetry::pods::parse_list_response(&b)
            .map_err(|e| anyhow::anyhow!("kubelet pod-resources {}: {e}", socket.display()))
    });
    match rows {
        Ok(mut rows) => {
            ai_hwaccel::telemetry::pods::attribute(&c.registry, &mut rows);
            c.pods = rows;
        }
        Err(e) => c.telemetry.warnings.push(ai_hwaccel::model::Warning {
            backend: "pod-resources".to_string(),
            message: format!("{e:#}"),
        }),
    }
}

type Resp = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn response(code: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Resp {
    let mut r = tiny_http::Response::from_data(body.into()).with_status_code(code);
    if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()) {
        r.add_header(h);
    }
    r
}

fn respond(
    req: &tiny_http::Request,
    state: &Mutex<ServeState>,
    dcgm: bool,
    interval: Duration,
) -> Resp {
    if !matches!(
        req.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    ) {
        return response(405, "text/plain; charset=utf-8", "only GET and HEAD\n");
    }
    let (last, collections, errors, last_error) = {
        let s = state.lock().unwrap_or_else(|p| p.into_inner());
        (
            s.last.clone(),
            s.collections,
            s.errors,
            s.last_error.clone(),
        )
    };
    let path = req.url().split('?').next().unwrap_or("");
    let json = "application/json";
    match path {
        "/metrics" => {
            let openmetrics = req.headers().iter().any(|h| {
                h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
            });
            let empty_r = Registry::default();
            let empty_t = Telemetry::default();
            let (r, t, opts) = match &last {
                Some(c) => (
                    &c.registry,
                    &c.telemetry,
                    MetricOptions {
                        up: last_error.is_none(),
                        age_seconds: Some(c.finished.elapsed().as_secs_f64()),
                        collection_seconds: Some(c.seconds),
                        collections,
                        collection_errors: errors,
                        dcgm,
                        hostname: Some(c.host.clone()).filter(|h| !h.is_empty()),
                        pods: c.pods.clone(),
                    },
                ),
                None => (
                    &empty_r,
                    &empty_t,
                    MetricOptions {
                        collection_errors: errors,
                        ..MetricOptions::default()
                    },
                ),
            };
            let om = encode_openmetrics(r, t, &opts);
            if openmetrics {
                response(
                    200,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    om,
                )
            } else {
                response(
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    to_text_004(&om),
                )
            }
        }
        "/-/healthy" => {
            // Unhealthy when collections have stopped: none finished for ten intervals
            // (plus the tool deadline a collection may take).
            let stale = last
                .as_ref()
                .is_some_and(|c| c.finished.elapsed() > interval * 10 + Duration::from_secs(60));
            if stale {
                response(503, "text/plain; charset=utf-8", "collections stopped\n")
            } else {
                response(200, "text/plain; charset=utf-8", "healthy\n")
            }
        }
        "/-/ready" => match &last {
            Some(_) => response(200, "text/plain; charset=utf-8", "ready\n"),
            None => response(503, "text/plain; charset=utf-8", "no collection yet\n"),
        },
        "/v1/registry" | "/v1/topology" | "/v1/telemetry" => {
            let Some(c) = &last else {
                return response(503, "text/plain; charset=utf-8", "no collection yet\n");
            };
            let body = match path {
                "/v1/registry" => c.registry.to_json_pretty(),
                "/v1/topology" => {
                    serde_json::to_string_pretty(&Topology::from_registry(&c.registry))
                        .unwrap_or_default()
                }
                _ => serde_json::to_string_pretty(&c.telemetry).unwrap_or_default(),
            };
            response(200, json, body + "\n")
        }
        "/" => response(
            200,
            "text/html; charset=utf-8",
            "<html><body><h1>ai-hwaccel</h1><a href=\"/metrics\">/metrics</a> \
             <a href=\"/v1/registry\">/v1/registry</a> <a href=\"/v1/topology\">/v1/topology</a> \
             <a href=\"/v1/telemetry\">/v1/telemetry</a></body></html>\n",
        ),
        _ => response(404, "text/plain; charset=utf-8", "not found\n"),
    }
}

// ---------------------------------------------------------------------------
// labels

#[derive(Args)]
pub struct LabelsArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Read a saved `detect --json` registry instead of detecting.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["root", "tool_path", "from"])]
    pub registry: Option<PathBuf>,
    /// Write the labels into this Node Feature Discovery `features.d`
    /// directory (file `ai-hwaccel`, replaced atomically) instead of printing.
    #[arg(long, value_name = "DIR")]
    pub nfd_dir: Option<PathBuf>,
    /// Add `plan.largest-model.<Q>`: the largest catalog model that fits
    /// the node's accelerators at this quantization (repeatable).
    #[arg(long, value_name = "Q")]
    pub fit_quant: Vec<String>,
    /// Print JSON (an object of label → value).
    #[arg(long)]
    pub json: bool,
}

pub fn labels(args: LabelsArgs) -> Result<()> {
    let mut quants = Vec::new();
    for q in &args.fit_quant {
        match ai_hwaccel::plan::Quant::parse(q) {
            Some(q) => quants.push(q),
            None => bail!(Usage(format!("--fit-quant {q:?}: unknown quantization"))),
        }
    }
    let registry = match &args.registry {
        Some(f) => crate::planning::read_registry(f)?,
        None => {
            args.source.check()?;
            args.source.collect()?.registry
        }
    };
    let l = node_labels(&registry, &LabelOptions { fit_quants: quants });
    if let Some(dir) = &args.nfd_dir {
        let text = to_feature_file(&l);
        ai_hwaccel::probe::cache_file::write_atomic_with(
            dir,
            "ai-hwaccel",
            text.as_bytes(),
            0o644,
            None,
        )
        .with_context(|| format!("--nfd-dir {}", dir.display()))?;
        eprintln!(
            "{} labels written to {}",
            l.len(),
            dir.join("ai-hwaccel").display()
        );
        return Ok(());
    }
    if args.json {
        out(&format!("{}\n", serde_json::to_string_pretty(&l)?))
    } else {
        let mut s = String::new();
        for (k, v) in &l {
            s += &format!("{k}={v}\n");
        }
        out(&s)
    }
}

// ---------------------------------------------------------------------------
// watch

#[derive(Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Seconds between observations (0.1 to 86400).
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_interval)]
    pub interval: f64,
    /// A threshold rule, `METRIC OP NUMBER` (repeatable): metrics
    /// memory_used_ratio, memory_used_bytes, temperature_celsius, power_watts,
    /// power_ratio, utilization_ratio, ecc_corrected_total, ecc_uncorrected_total;
    /// OP one of > >= < <= == !=.
    #[arg(long, value_name = "EXPR", value_parser = parse_alert)]
    pub alert: Vec<AlertRule>,
    /// POST each event as JSON to this http:// URL (3 tries, 5 s each).
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
    /// Stop after this many observations (default: run until killed).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Do not listen for kernel uevents (hot-plug); poll only.
    #[arg(long)]
    pub no_uevents: bool,
    /// Do not read device errors (NVIDIA Xid) from the kernel log (/dev/kmsg).
    #[arg(long)]
    pub no_kernel_log: bool,
    /// Do not read NVIDIA Xid and ECC error events from NVML's event API.
    #[arg(long)]
    pub no_nvml_events: bool,
}

pub fn watch(args: WatchArgs) -> Result<()> {
    args.source.check()?;
    if let Some(u) = &args.webhook {
        if !u.starts_with("http://") {
            bail!(Usage(format!(
                "--webhook {u:?}: only http:// URLs (put a TLS-terminating proxy in front for https)"
            )));
        }
    }
    let uevents =
        if args.no_uevents || args.source.from.is_some() || args.source.probe.root.is_some() {
            None
        } else {
            match ai_hwaccel::probe::uevent::UeventSocket::open() {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!(
                        "ai-hwaccel watch: no kernel uevents ({e}); polling every {} s",
                        args.interval
                    );
                    None
                }
            }
        };
    let live = args.source.from.is_none() && args.source.probe.root.is_none();
    let mut kmsg = if args.no_kernel_log || !live {
        None
    } else {
        match ai_hwaccel::probe::kmsg::KmsgReader::open() {
            Ok(k) => Some(k),
            Err(e) => {
                eprintln!("ai-hwaccel watch: no kernel log ({e}); Xid errors are not reported");
                None
            }
        }
    };
    // NVML's event API where the driver has one (no message otherwise: most
    // hosts have no NVIDIA GPU). When it covers every GPU, the kernel log's
    // Xid lines repeat what it reports and are left out.
    let mut nvml_events = if args.no_nvml_events || !live {
        None
    } else {
        ai_hwaccel::telemetry::nvml_events::NvmlEvents::open().ok()
    };
    let nvml_has_every_xid = nvml_events
        .as_ref()
        .is_some_and(|n| n.xid_gpus() > 0 && n.xid_gpus() == n.gpus());
    let interval = Duration::from_secs_f64(args.interval);
    let mut prev: Option<Observation> = None;
    let mut firing = BTreeMap::new();
    let mut n = 0u64;
    loop {
        let started = Instant::now();
        let c = args.source.collect()?;
        let mut kernel_errors: Vec<_> = kmsg
            .as_mut()
            .map(|k| ai_hwaccel::telemetry::kernel_log::parse_kernel_log(&k.read_new().join("\n")))
            .unwrap_or_default()
            .into_iter()
            .filter(|e| !(nvml_has_every_xid && e.kind == "nvidia_xid"))
            .collect();
        if let Some(n) = nvml_events.as_mut() {
            kernel_errors.extend(n.poll());
        }
        let now = Observation {
            registry: c.registry,
            telemetry: c.telemetry,
            kernel_errors,
        };
        let time = rfc3339_utc(now.telemetry.unix_ms);
        for e in diff(
            prev.as_ref(),
            &now,
            &args.alert,
            &mut firing,
            &time,
            &c.host,
        ) {
            let line = serde_json::to_string(&e)?;
            out(&format!("{line}\n"))?;
            if let Some(url) = &args.webhook {
                post(url, &line);
            }
        }
        prev = Some(now);
        n += 1;
        if args.count.is_some_and(|c| n >= c) {
            return Ok(());
        }
        let left = interval.saturating_sub(started.elapsed());
        match &uevents {
            // Wake early on a device add/remove/change event.
            Some(s) => {
                s.wait_for_device_event(left);
            }
            None => std::thread::sleep(left),
        }
    }
}

/// POST one event; three tries with a back-off, each bounded to 5 s. A
/// receiver that stays down loses the event (stderr says so); the stream
/// on stdout goes on.
fn post(url: &str, body: &str) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(true)
        .build()
        .into();
    let mut last = String::new();
    for attempt in 0..3u32 {
        match agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(body)
        {
            Ok(_) => return,
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(250 << attempt));
    }
    eprintln!("ai-hwaccel watch: webhook {url}: {last} (event dropped after 3 tries)");
}
