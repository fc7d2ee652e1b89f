//! What a model costs to run in the cloud: the model planned on every
//! instance of the cloud table ([`crate::spec::cloud`]) as `count ×
//! accelerator` (what `--devices` plans), the instances it fits ranked by
//! price per hour, and the price per million output tokens at the best
//! plan's decode speed.
//!
//! # Arithmetic
//!
//! `usd_per_million_output_tokens = price_per_hour_usd ÷ (tokens_per_s ×
//! 3600) × 10⁶`, where `tokens_per_s` is the best plan's
//! [`Plan::decode_tokens_per_s`]: decode tokens per second summed over all
//! the plan's replicas at the requested batch (`InferenceOptions::batch`
//! sequences per replica). At batch 1 that is one user's stream per
//! replica; a serving fleet batches more and pays less per token. Unknown
//! speed (a device without a bandwidth figure) gives `None`, never a guess.
//!
//! # Prices
//!
//! Table prices are on-demand list prices as read on their `price_date`;
//! they are never current. A price file ([`parse_price_file`], TOML or CSV)
//! overrides them per instance (a negotiated rate, a newer price) or adds
//! instances the table lacks.
//!
//! Everything here is pure: the caller reads the price file.

use serde::{Deserialize, Serialize};

use super::arch::ModelSpec;
use super::devices::PlanDevice;
use super::inference::{InferenceOptions, Plan, plan_inference};
use super::quant::Quant;
use crate::spec::cloud::{CloudInstance, is_iso_date};

/// Seconds per hour, for prices per hour against speeds per second.
const SECONDS_PER_HOUR: f64 = 3600.0;

/// Largest price file the CLI and the bindings read, bytes (bounded memory
/// when a wrong path names a large file).
pub const MAX_PRICE_FILE_BYTES: u64 = 4 << 20;

/// Most rows a price file may hold (bounded work on hostile input).
pub const MAX_PRICE_ROWS: usize = 10_000;

/// Price per million output tokens: `price_per_hour ÷ (tokens_per_s × 3600)
/// × 10⁶`; `None` when the speed is not a positive finite number.
///
/// ```
/// use ai_hwaccel::plan::cost::usd_per_million_tokens;
/// // $36/hour at 1000 tokens/s: 3.6 M tokens an hour, $10 per million.
/// assert_eq!(usd_per_million_tokens(36.0, 1000.0), Some(10.0));
/// assert_eq!(usd_per_million_tokens(36.0, 0.0), None);
/// ```
pub fn usd_per_million_tokens(price_per_hour_usd: f64, tokens_per_s: f64) -> Option<f64> {
    (tokens_per_s.is_finite() && tokens_per_s > 0.0 && price_per_hour_usd.is_finite())
        .then(|| price_per_hour_usd / (tokens_per_s * SECONDS_PER_HOUR) * 1e6)
}

/// One row of a price file: a price for an instance of the table
/// (`provider` and `instance` match it, case-insensitively; with `region`,
/// only that region's row), or a new instance (then `accelerator` and
/// `count` are required).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Provider id (`aws`).
    pub provider: String,
    /// Instance type (`p5.48xlarge`).
    pub instance: String,
    /// USD per instance-hour.
    pub price_per_hour_usd: f64,
    /// The day the price holds for, `YYYY-MM-DD`.
    pub price_date: String,
    /// Where the price comes from (a URL, "contract 2026-Q4"); default: the
    /// price file's name.
    #[serde(default)]
    pub source: Option<String>,
    /// Region the price is for.
    #[serde(default)]
    pub region: Option<String>,
    /// Spec database id of the accelerator (new instances only).
    #[serde(default)]
    pub accelerator: Option<String>,
    /// Accelerators per instance (new instances only).
    #[serde(default)]
    pub count: Option<u32>,
}

/// The format of a price file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriceFormat {
    /// `[[price]]` tables with [`PriceEntry`]'s keys.
    Toml,
    /// A header row naming [`PriceEntry`]'s keys, then one row per price;
    /// columns are read by header name; `"..."` quotes a field with commas.
    Csv,
}

impl PriceFormat {
    /// The format a file name's extension names (`.toml`, `.csv`).
    pub fn from_file_name(name: &str) -> Option<PriceFormat> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "toml" => Some(PriceFormat::Toml),
            "csv" => Some(PriceFormat::Csv),
            _ => None,
        }
    }
}

/// An error of cost planning: a bad price file or provider name.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CostError {
    /// The price file is not valid TOML/CSV of the expected shape.
    #[error("{message}")]
    Syntax {
        /// What the parser said (with line and key where it knows them).
        message: String,
    },
    /// A field of one row is missing or wrong.
    #[error("{at}: field {field:?}: {message}")]
    Field {
        /// Which row (`line 3`, `[[price]] #2`).
        at: String,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A `--provider` name no row has.
    #[error("unknown provider {name:?}{} (known: {})", crate::suggest::hint(suggestions), known.join(", "))]
    UnknownProvider {
        /// The name given.
        name: String,
        /// Close names.
        suggestions: Vec<String>,
        /// Every provider.
        known: Vec<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceTable {
    #[serde(default)]
    price: Vec<PriceEntry>,
}

/// Parse a price file (pure: the caller reads it). Every row is checked:
/// a positive finite price, a `YYYY-MM-DD` date, non-empty names, and for
/// `accelerator` an id of the spec database; errors name the row and the
/// field.
///
/// ```
/// use ai_hwaccel::plan::cost::{PriceFormat, parse_price_file};
/// let csv = "provider,instance,price_per_hour_usd,price_date\naws,p5.48xlarge,40.5,2026-11-01\n";
/// let p = parse_price_file(csv, PriceFormat::Csv)?;
/// assert_eq!((p[0].instance.as_str(), p[0].price_per_hour_usd), ("p5.48xlarge", 40.5));
/// let bad = parse_price_file("provider,instance,price_per_hour_usd,price_date\naws,p5,-1,2026-11-01\n", PriceFormat::Csv);
/// assert!(bad.unwrap_err().to_string().contains("line 2: field \"price_per_hour_usd\""));
/// # Ok::<(), ai_hwaccel::plan::cost::CostError>(())
/// ```
pub fn parse_price_file(text: &str, format: PriceFormat) -> Result<Vec<PriceEntry>, CostError> {
    let rows: Vec<(String, PriceEntry)> = match format {
        PriceFormat::Toml => {
            let t: PriceTable = toml::from_str(text).map_err(|e| CostError::Syntax {
                message: e.to_string().trim_end().to_string(),
            })?;
            t.price
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("[[price]] #{}", i + 1), p))
                .collect()
        }
        PriceFormat::Csv => parse_csv(text)?,
    };
    if rows.len() > MAX_PRICE_ROWS {
        return Err(CostError::Syntax {
            message: format!(
                "{} rows is more than a price file may hold ({MAX_PRICE_ROWS})",
                rows.len()
            ),
        });
    }
    for (at, p) in &rows {
        check_entry(at, p)?;
    }
    Ok(rows.into_iter().map(|(_, p)| p).collect())
}

fn field(at: &str, field: &str, message: impl Into<String>) -> CostError {
    CostError::Field {
        at: at.to_string(),
        field: field.to_string(),
        message: message.into(),
    }
}

fn check_entry(at: &str, p: &PriceEntry) -> Result<(), CostError> {
    for (name, v) in [("provider", &p.provider), ("instance", &p.instance)] {
        if v.trim().is_empty() {
            return Err(field(at, name, "empty"));
        }
    }
    if !(p.price_per_hour_usd.is_finite() && p.price_per_hour_usd > 0.0) {
        return Err(field(
            at,
            "price_per_hour_usd",
            format!(
                "{} is not a positive number of USD per hour",
                p.price_per_hour_usd
            ),
        ));
    }
    if !is_iso_date(&p.price_date) {
        return Err(field(
            at,
            "price_date",
            format!("{:?} is not a date written YYYY-MM-DD", p.price_date),
        ));
    }
    if let Some(a) = &p.accelerator
        && crate::spec::by_id(a).is_none()
    {
        let ids = crate::spec::all().iter().map(|e| e.id.as_str());
        return Err(field(
            at,
            "accelerator",
            format!(
                "{a:?} is no id of the spec database{} (see `ai-hwaccel specs`)",
                crate::suggest::hint(&crate::suggest::suggest(a, ids))
            ),
        ));
    }
    if let Some(c) = p.count
        && !(1..=crate::spec::MAX_DEVICES).contains(&c)
    {
        return Err(field(
            at,
            "count",
            format!("{c} is not in 1..={}", crate::spec::MAX_DEVICES),
        ));
    }
    Ok(())
}

/// Split one CSV line into fields: commas separate, `"..."` quotes (with
/// `""` for a quote inside).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cur.push(c),
            (false, '"') if cur.trim().is_empty() && !was_quoted => {
                cur.clear();
                quoted = true;
                was_quoted = true;
            }
            (false, '"') => return Err("a quote inside an unquoted field".into()),
            (false, ',') => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                was_quoted = false;
            }
            (false, c) if was_quoted && !c.is_whitespace() => {
                return Err("text after a closing quote".into());
            }
            (false, c) => cur.push(c),
        }
    }
    if quoted {
        return Err("an unclosed quote".into());
    }
    out.push(cur.trim().to_string());
    Ok(out)
}

const CSV_COLUMNS: [&str; 8] = [
    "provider",
    "instance",
    "price_per_hour_usd",
    "price_date",
    "source",
    "region",
    "accelerator",
    "count",
];

fn parse_csv(text: &str) -> Result<Vec<(String, PriceEntry)>, CostError> {
    let syntax = |message: String| CostError::Syntax { message };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Err(syntax("empty price file: expected a header row (provider,instance,price_per_hour_usd,price_date[,source,region,accelerator,count])".into()));
    };
    let header = csv_fields(header.trim_start_matches('\u{feff}'))
        .map_err(|e| syntax(format!("line {hline}: {e}")))?;
    let mut col = std::collections::HashMap::new();
    for (i, h) in header.iter().enumerate() {
        let h = h.to_ascii_lowercase();
        if !CSV_COLUMNS.contains(&h.as_str()) {
            return Err(syntax(format!(
                "line {hline}: unknown column {h:?}{} (known: {})",
                crate::suggest::hint(&crate::suggest::suggest(&h, CSV_COLUMNS)),
                CSV_COLUMNS.join(", ")
            )));
        }
        if col.insert(h.clone(), i).is_some() {
            return Err(syntax(format!("line {hline}: column {h:?} twice")));
        }
    }
    for required in &CSV_COLUMNS[..4] {
        if !col.contains_key(*required) {
            return Err(syntax(format!(
                "line {hline}: the header has no column {required:?}"
            )));
        }
    }
    let mut out = Vec::new();
    for (n, line) in lines {
        if out.len() >= MAX_PRICE_ROWS {
            return Err(syntax(format!(
                "more than {MAX_PRICE_ROWS} rows: a price file may hold at most that many"
            )));
        }
        let at = format!("line {n}");
        let f = csv_fields(line).map_err(|e| syntax(format!("{at}: {e}")))?;
        if f.len() != header.len() {
            return Err(syntax(format!(
                "{at}: {} fields where the header has {}",
                f.len(),
                header.len()
            )));
        }
        let get = |name: &str| -> Option<&str> {
            col.get(name)
                .map(|&i| f[i].as_str())
                .filter(|s| !s.is_empty())
        };
        let text = |name: &str| get(name).map(str::to_string);
        let price =
            get("price_per_hour_usd").ok_or_else(|| field(&at, "price_per_hour_usd", "empty"))?;
        let price_per_hour_usd = price.trim_start_matches('$').parse::<f64>().map_err(|_| {
            field(
                &at,
                "price_per_hour_usd",
                format!("{price:?} is not a number"),
            )
        })?;
        let count = get("count")
            .map(|c| {
                c.parse::<u32>()
                    .map_err(|_| field(&at, "count", format!("{c:?} is not a whole number")))
            })
            .transpose()?;
        out.push((
            at.clone(),
            PriceEntry {
                provider: text("provider").ok_or_else(|| field(&at, "provider", "empty"))?,
                instance: text("instance").ok_or_else(|| field(&at, "instance", "empty"))?,
                price_per_hour_usd,
                price_date: text("price_date").ok_or_else(|| field(&at, "price_date", "empty"))?,
                source: text("source"),
                region: text("region"),
                accelerator: text("accelerator"),
                count,
            },
        ));
    }
    Ok(out)
}

/// An instance with the price that applies to it.
#[derive(Clone, Debug, PartialEq)]
pub struct PricedInstance {
    /// The instance (its price fields replaced by a price file's).
    pub instance: CloudInstance,
    /// Whether a price file set the price (or added the instance).
    pub from_price_file: bool,
}

/// The table with a price file applied: an entry naming a table row (same
/// provider and instance, case-insensitively, and the same region when the
/// entry gives one) replaces its price, date and source; any other entry is
/// a new instance, which needs `accelerator` and `count`. `default_source`
/// (the file's name) stands for entries without a source.
pub fn apply_prices(
    table: &[CloudInstance],
    prices: &[PriceEntry],
    default_source: &str,
) -> Result<Vec<PricedInstance>, CostError> {
    let mut out: Vec<PricedInstance> = table
        .iter()
        .map(|i| PricedInstance {
            instance: i.clone(),
            from_price_file: false,
        })
        .collect();
    for (n, p) in prices.iter().enumerate() {
        let at = format!("price entry #{}", n + 1);
        let source = p
            .source
            .clone()
            .unwrap_or_else(|| default_source.to_string());
        let mut matched = false;
        for row in out.iter_mut().filter(|r| {
            r.instance.provider.eq_ignore_ascii_case(&p.provider)
                && r.instance.instance.eq_ignore_ascii_case(&p.instance)
                && p.region.as_deref().is_none_or(|want| {
                    r.instance
                        .region
                        .as_deref()
                        .is_some_and(|r| r.eq_ignore_ascii_case(want))
                })
        }) {
            matched = true;
            row.instance.price_per_hour_usd = p.price_per_hour_usd;
            row.instance.price_date.clone_from(&p.price_date);
            row.instance.source.clone_from(&source);
            row.instance.provider_url = None;
            row.from_price_file = true;
            if let Some(a) = &p.accelerator {
                row.instance.accelerator.clone_from(a);
            }
            if let Some(c) = p.count {
                row.instance.count = c;
            }
        }
        if matched {
            continue;
        }
        let (Some(accelerator), Some(count)) = (&p.accelerator, p.count) else {
            let missing = if p.accelerator.is_none() {
                "accelerator"
            } else {
                "count"
            };
            return Err(field(
                &at,
                missing,
                format!(
                    "{}/{}{} is not in the table, so the entry adds it and needs accelerator and count",
                    p.provider,
                    p.instance,
                    p.region
                        .as_deref()
                        .map(|r| format!(" in region {r}"))
                        .unwrap_or_default()
                ),
            ));
        };
        out.push(PricedInstance {
            instance: CloudInstance {
                provider: p.provider.to_ascii_lowercase(),
                instance: p.instance.clone(),
                region: p.region.clone(),
                accelerator: accelerator.clone(),
                count,
                interconnect: None,
                network: None,
                network_gbit_per_s: None,
                vcpus: None,
                host_memory_gib: None,
                price_per_hour_usd: p.price_per_hour_usd,
                price_date: p.price_date.clone(),
                source,
                provider_url: None,
                notes: None,
            },
            from_price_file: true,
        });
    }
    Ok(out)
}

/// Keep the instances of the named providers (case-insensitive); an empty
/// list keeps all. A name no instance has is an error with suggestions.
pub fn filter_providers(
    instances: Vec<PricedInstance>,
    providers: &[String],
) -> Result<Vec<PricedInstance>, CostError> {
    if providers.is_empty() {
        return Ok(instances);
    }
    let mut known: Vec<String> = instances
        .iter()
        .map(|i| i.instance.provider.to_ascii_lowercase())
        .collect();
    known.sort();
    known.dedup();
    for name in providers {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            let suggestions = crate::suggest::suggest(
                &name.to_ascii_lowercase(),
                known.iter().map(String::as_str),
            )
            .into_iter()
            .map(String::from)
            .collect();
            return Err(CostError::UnknownProvider {
                name: name.clone(),
                suggestions,
                known,
            });
        }
    }
    Ok(instances
        .into_iter()
        .filter(|i| {
            providers
                .iter()
                .any(|p| p.eq_ignore_ascii_case(&i.instance.provider))
        })
        .collect())
}

/// The providers of a comma-separated list (`"aws, gcp"`), trimmed, empty
/// names dropped.
pub fn provider_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `plan --cloud` after the price file is read: the embedded table with
/// `prices` applied ([`apply_prices`], `price_source` naming the file),
/// filtered to `providers` ([`filter_providers`]), planned ([`plan_cloud`]).
/// What the CLI and the bindings both call.
pub fn plan_cloud_priced(
    spec: &ModelSpec,
    prices: &[PriceEntry],
    price_source: &str,
    providers: &[String],
    opts: &InferenceOptions,
) -> Result<CloudReport, CostError> {
    let table = apply_prices(crate::spec::cloud::instances(), prices, price_source)?;
    let table = filter_providers(table, providers)?;
    Ok(plan_cloud(spec, &table, opts))
}

/// The best plan of an instance, in brief.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloudPlanSummary {
    /// Weight format.
    pub quantization: Quant,
    /// Tensor-parallel degree.
    pub tensor_parallel: u32,
    /// Pipeline stages.
    pub pipeline_parallel: u32,
    /// Replicas.
    pub data_parallel: u32,
    /// Devices the plan uses (of the instance's).
    pub devices_used: u32,
    /// Decode tokens per second over all replicas at the requested batch
    /// ([`Plan::decode_tokens_per_s`]); what the price per token uses.
    pub decode_tokens_per_s: Option<f64>,
    /// One sequence's decode speed.
    pub decode_tokens_per_s_per_sequence: Option<f64>,
    /// Sequences the plan holds at the requested context over all replicas.
    pub max_concurrent_sequences: u64,
    /// Largest context one sequence may have.
    pub max_context_tokens: u64,
    /// Sequences per replica the decode figures are at ([`Plan::batch`]:
    /// the requested batch, or under a latency target the most that meet it).
    #[serde(default = "one_batch")]
    pub batch: u64,
    /// Time to first token, ms ([`Plan::ttft_ms`]).
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// Time per output token, ms ([`Plan::tpot_ms`]).
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    /// Output tokens per second over all replicas with each replica's
    /// `batch` served as a closed loop, the other requests' prompts
    /// prefilled within the decode steps (under SGLang, in passes of their
    /// own) ([`Plan::served_tokens_per_s`]):
    /// what the price per token uses where it is known. `None` at batch 1
    /// or without an output length.
    #[serde(default)]
    pub served_tokens_per_s: Option<f64>,
}

fn one_batch() -> u64 {
    1
}

impl CloudPlanSummary {
    fn of(p: &Plan) -> Self {
        CloudPlanSummary {
            quantization: p.quantization,
            tensor_parallel: p.tensor_parallel,
            pipeline_parallel: p.pipeline_parallel,
            data_parallel: p.data_parallel,
            devices_used: p.devices_used,
            decode_tokens_per_s: p.decode_tokens_per_s,
            decode_tokens_per_s_per_sequence: p.decode_tokens_per_s_per_sequence,
            max_concurrent_sequences: p.max_concurrent_sequences,
            batch: p.batch,
            ttft_ms: p.ttft_ms,
            tpot_ms: p.tpot_ms,
            served_tokens_per_s: p.served_tokens_per_s().filter(|_| p.batch > 1),
            max_context_tokens: p.max_context_tokens,
        }
    }
}

/// An instance the model fits, with its cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloudCostRow {
    /// Provider id.
    pub provider: String,
    /// Instance type.
    pub instance: String,
    /// Region the price is for.
    pub region: Option<String>,
    /// The instance's accelerators as a device string (`8xh100-sxm`).
    pub devices: String,
    /// USD per instance-hour, on-demand, as read on `price_date`.
    pub price_per_hour_usd: f64,
    /// The day the price was read (`YYYY-MM-DD`); not current.
    pub price_date: String,
    /// Where the price was read.
    pub source_url: String,
    /// Whether the price came from `--price-file`.
    pub from_price_file: bool,
    /// The best plan on the instance.
    pub plan: CloudPlanSummary,
    /// USD per million output tokens at `plan.served_tokens_per_s` where
    /// known, else `plan.decode_tokens_per_s`; `None` when that speed is
    /// unknown.
    pub usd_per_million_output_tokens: Option<f64>,
}

/// An instance the model does not fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloudMiss {
    /// Provider id.
    pub provider: String,
    /// Instance type.
    pub instance: String,
    /// The instance's accelerators.
    pub devices: String,
    /// Why (the planner's first advice or rejection).
    pub reason: String,
}

/// The answer of [`plan_cloud`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloudReport {
    /// Model name.
    pub model: String,
    /// Sequences per replica the speeds are for.
    pub batch: u64,
    /// What `usd_per_million_output_tokens` is computed from.
    pub speed_basis: String,
    /// Instances the model fits, cheapest per hour first (ties: cheaper
    /// per token first, then provider and instance name).
    pub rows: Vec<CloudCostRow>,
    /// Instances the model does not fit, in table order.
    pub does_not_fit: Vec<CloudMiss>,
    /// Instances planned (after the provider filter).
    pub instances_considered: usize,
    /// Things to know (the planner's warnings, each once).
    pub warnings: Vec<String>,
}

/// What `speed_basis` says.
pub const SPEED_BASIS: &str = "decode_tokens_per_s of the best plan: tokens per second summed over all of the plan's replicas, each serving `batch` sequences";

/// What `speed_basis` says where a row's price uses its served output.
pub const SERVED_SPEED_BASIS: &str = "served_tokens_per_s of the best plan where known (each replica's `batch` sequences served as a closed loop of requests of the given prompt and output lengths, the other requests' prompts prefilled within the decode steps or, under SGLang, in passes of their own), else decode_tokens_per_s: tokens per second summed over all of the plan's replicas";

/// Plan `spec` on every instance (its accelerators as [`PlanDevice`]s from
/// the device string `count×accelerator`) with `opts`, and rank those it
/// fits by price per hour. An instance whose accelerator does not resolve
/// (a price-file row) counts as not fitting, with the reason.
///
/// ```
/// use ai_hwaccel::plan::cost::{PricedInstance, plan_cloud};
/// use ai_hwaccel::plan::{InferenceOptions, load_model};
/// let table: Vec<PricedInstance> = ai_hwaccel::spec::cloud::instances()
///     .iter()
///     .filter(|i| i.provider == "lambda")
///     .map(|i| PricedInstance { instance: i.clone(), from_price_file: false })
///     .collect();
/// let m = load_model("llama-3.1-8b")?;
/// let r = plan_cloud(&m.spec, &table, &InferenceOptions::default());
/// assert!(r.rows.windows(2).all(|w| w[0].price_per_hour_usd <= w[1].price_per_hour_usd));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_cloud(
    spec: &ModelSpec,
    instances: &[PricedInstance],
    opts: &InferenceOptions,
) -> CloudReport {
    let mut rows = Vec::new();
    let mut misses = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for pi in instances {
        let i = &pi.instance;
        let devices = i.device_string();
        let miss = |reason: String| CloudMiss {
            provider: i.provider.clone(),
            instance: i.instance.clone(),
            devices: devices.clone(),
            reason,
        };
        let devs = match PlanDevice::from_device_string(&devices) {
            Ok(d) => d,
            Err(e) => {
                misses.push(miss(e.to_string()));
                continue;
            }
        };
        let p = plan_inference(spec, &devs, opts);
        for w in &p.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        let Some(best) = p.plans.first().filter(|_| p.feasible) else {
            let reason = p
                .advice
                .first()
                .cloned()
                .or_else(|| p.rejected.first().map(|r| r.reason.clone()))
                .unwrap_or_else(|| "no layout fits".to_string());
            misses.push(miss(reason));
            continue;
        };
        let plan = CloudPlanSummary::of(best);
        let usd_per_million_output_tokens = plan
            .served_tokens_per_s
            .or(plan.decode_tokens_per_s)
            .and_then(|t| usd_per_million_tokens(i.price_per_hour_usd, t));
        rows.push(CloudCostRow {
            provider: i.provider.clone(),
            instance: i.instance.clone(),
            region: i.region.clone(),
            devices,
            price_per_hour_usd: i.price_per_hour_usd,
            price_date: i.price_date.clone(),
            source_url: i.source.clone(),
            from_price_file: pi.from_price_file,
            plan,
            usd_per_million_output_tokens,
        });
    }
    rows.sort_by(|a, b| {
        a.price_per_hour_usd
            .total_cmp(&b.price_per_hour_usd)
            .then_with(|| {
                let key = |r: &CloudCostRow| r.usd_per_million_output_tokens.unwrap_or(f64::MAX);
                key(a).total_cmp(&key(b))
            })
            .then_with(|| a.provider.cmp(&b.provider))
            .then_with(|| a.instance.cmp(&b.instance))
    });
    CloudReport {
        model: spec.name.clone(),
        batch: opts.batch,
        speed_basis: if rows.iter().any(|r| r.plan.served_tokens_per_s.is_some()) {
            SERVED_SPEED_BASIS
        } else {
            SPEED_BASIS
        }
        .to_string(),
        rows,
        does_not_fit: misses,
        instances_considered: instances.len(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(provider: &str, instance: &str, price: f64) -> PriceEntry {
        PriceEntry {
            provider: provider.into(),
            instance: instance.into(),
            price_per_hour_usd: price,
            price_date: "2026-11-01".into(),
            source: None,
            region: None,
            accelerator: None,
            count: None,
        }
    }

    #[test]
    fn csv_fields_quote_and_refuse_junk() {
        assert_eq!(
            csv_fields(r#"aws, "a, b" ,"say ""hi""",x"#).unwrap(),
            ["aws", "a, b", "say \"hi\"", "x"]
        );
        assert_eq!(csv_fields("a,,b").unwrap(), ["a", "", "b"]);
        assert!(csv_fields(r#""open"#).is_err());
        assert!(csv_fields(r#"a"b"#).is_err());
        assert!(csv_fields(r#""a"b"#).is_err());
    }

    #[test]
    fn toml_and_csv_give_the_same_entries() {
        let toml = r#"
[[price]]
provider = "aws"
instance = "p5.48xlarge"
price_per_hour_usd = 40.5
price_date = "2026-11-01"
source = "contract"

[[price]]
provider = "acme"
instance = "h100x2"
price_per_hour_usd = 3.0
price_date = "2026-11-02"
accelerator = "h100-sxm"
count = 2
"#;
        let csv = "# my prices\nprovider,instance,price_per_hour_usd,price_date,source,accelerator,count\r\naws,p5.48xlarge,$40.5,2026-11-01,contract,,\nacme,h100x2,3.0,2026-11-02,,h100-sxm,2\n";
        let a = parse_price_file(toml, PriceFormat::Toml).unwrap();
        let b = parse_price_file(csv, PriceFormat::Csv).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].count, Some(2));
    }

    #[test]
    fn bad_price_files_name_row_and_field() {
        let head = "provider,instance,price_per_hour_usd,price_date\n";
        for (body, want) in [
            (
                "aws,p5,abc,2026-11-01",
                "line 2: field \"price_per_hour_usd\"",
            ),
            (
                "aws,p5,0,2026-11-01",
                "line 2: field \"price_per_hour_usd\"",
            ),
            (
                "aws,p5,NaN,2026-11-01",
                "line 2: field \"price_per_hour_usd\"",
            ),
            (
                "aws,p5,inf,2026-11-01",
                "line 2: field \"price_per_hour_usd\"",
            ),
            ("aws,p5,1.0,11/01/2026", "line 2: field \"price_date\""),
            (",p5,1.0,2026-11-01", "line 2: field \"provider\""),
            ("aws,p5,1.0", "line 2: 3 fields where the header has 4"),
            ("aws,\"p5,1.0,2026-11-01", "line 2: an unclosed quote"),
        ] {
            let e = parse_price_file(&format!("{head}{body}\n"), PriceFormat::Csv).unwrap_err();
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
        let e = parse_price_file("provider,instance,price\n", PriceFormat::Csv).unwrap_err();
        assert!(e.to_string().contains("unknown column \"price\""), "{e}");
        let e = parse_price_file("provider,instance,price_per_hour_usd\n", PriceFormat::Csv)
            .unwrap_err();
        assert!(e.to_string().contains("no column \"price_date\""), "{e}");
        assert!(parse_price_file("", PriceFormat::Csv).is_err());
        let e = parse_price_file(
            "provider,instance,price_per_hour_usd,price_date,accelerator,count\nx,y,1,2026-01-01,h100-sxn,1\n",
            PriceFormat::Csv,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("field \"accelerator\"")
                && e.to_string().contains("did you mean h100-sxm"),
            "{e}"
        );
        let e = parse_price_file(
            "provider,instance,price_per_hour_usd,price_date,count\nx,y,1,2026-01-01,0\n",
            PriceFormat::Csv,
        )
        .unwrap_err();
        assert!(e.to_string().contains("field \"count\""), "{e}");
        // TOML: unknown keys and wrong types name the key.
        let e = parse_price_file(
            "[[price]]\nprovider='a'\ninstance='b'\nprice_per_hour_usd=1.0\nprice_date='2026-01-01'\nspot=0.5\n",
            PriceFormat::Toml,
        )
        .unwrap_err();
        assert!(e.to_string().contains("spot"), "{e}");
        let e = parse_price_file(
            "[[price]]\nprovider='a'\ninstance='b'\nprice_per_hour_usd='cheap'\nprice_date='2026-01-01'\n",
            PriceFormat::Toml,
        )
        .unwrap_err();
        assert!(e.to_string().contains("price_per_hour_usd"), "{e}");
        let e = parse_price_file(
            "[[price]]\nprovider='a'\ninstance='b'\nprice_per_hour_usd=-2.0\nprice_date='2026-01-01'\n",
            PriceFormat::Toml,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("[[price]] #1: field \"price_per_hour_usd\""),
            "{e}"
        );
    }

    #[test]
    fn too_many_rows_is_an_error_not_a_hang() {
        let mut s = String::from("provider,instance,price_per_hour_usd,price_date\n");
        for i in 0..=MAX_PRICE_ROWS {
            s += &format!("p,i{i},1,2026-01-01\n");
        }
        let e = parse_price_file(&s, PriceFormat::Csv).unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
    }

    #[test]
    fn apply_prices_overrides_and_extends() {
        let table = crate::spec::cloud::instances();
        let mut over = entry("AWS", "P5.48XLARGE", 40.0);
        over.source = Some("contract".into());
        let mut add = entry("acme", "box", 2.0);
        add.accelerator = Some("l4".into());
        add.count = Some(2);
        let out = apply_prices(table, &[over, add], "prices.toml").unwrap();
        assert_eq!(out.len(), table.len() + 1);
        let p5 = out
            .iter()
            .find(|r| r.instance.instance == "p5.48xlarge")
            .unwrap();
        assert_eq!(
            (
                p5.instance.price_per_hour_usd,
                p5.instance.price_date.as_str(),
                p5.instance.source.as_str(),
                p5.from_price_file
            ),
            (40.0, "2026-11-01", "contract", true)
        );
        let acme = out.last().unwrap();
        assert_eq!(
            (acme.instance.device_string(), acme.instance.source.as_str()),
            ("2xl4".to_string(), "prices.toml")
        );
        // Untouched rows keep the table's price.
        assert!(
            out.iter()
                .filter(|r| r.instance.instance != "p5.48xlarge" && r.instance.provider != "acme")
                .all(|r| !r.from_price_file)
        );
        // A region that matches no row makes a new instance, which needs a device.
        let mut elsewhere = entry("aws", "p5.48xlarge", 1.0);
        elsewhere.region = Some("eu-west-1".into());
        let e = apply_prices(table, &[elsewhere], "f").unwrap_err();
        assert!(e.to_string().contains("field \"accelerator\""), "{e}");
    }

    proptest::proptest! {
        // Hostile input: any text is a value or an error, never a panic.
        #[test]
        fn price_files_never_panic(s in "(?s).{0,400}") {
            let _ = parse_price_file(&s, PriceFormat::Csv);
            let _ = parse_price_file(&s, PriceFormat::Toml);
        }

        #[test]
        fn csv_rows_of_any_fields_never_panic(
            fields in proptest::collection::vec("[a-z0-9.,\"$ -]{0,12}", 0..10)
        ) {
            let text = format!(
                "provider,instance,price_per_hour_usd,price_date,count\n{}\n",
                fields.join(",")
            );
            let _ = parse_price_file(&text, PriceFormat::Csv);
        }
    }

    #[test]
    fn provider_filter() {
        let all = apply_prices(crate::spec::cloud::instances(), &[], "").unwrap();
        let n = all.len();
        let aws = filter_providers(all.clone(), &["AWS".into(), "lambda".into()]).unwrap();
        assert!(!aws.is_empty() && aws.len() < n);
        assert!(
            aws.iter()
                .all(|i| matches!(i.instance.provider.as_str(), "aws" | "lambda"))
        );
        assert_eq!(filter_providers(all.clone(), &[]).unwrap().len(), n);
        let e = filter_providers(all, &["lamda".into()]).unwrap_err();
        assert!(e.to_string().contains("did you mean lambda"), "{e}");
    }
}
