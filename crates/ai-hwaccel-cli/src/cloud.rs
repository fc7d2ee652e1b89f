//! `ai-hwaccel plan MODEL --cloud [--provider P[,P]] [--price-file FILE]`:
//! argument handling and output around the library's cloud cost planner
//! (`ai_hwaccel::plan::cost`).

use ai_hwaccel::plan::RuntimeKind;
use ai_hwaccel::plan::cost::{
    CloudReport, CostError, MAX_PRICE_FILE_BYTES, PriceFormat, parse_price_file, plan_cloud_priced,
    provider_list,
};
use anyhow::{Context as _, Result, anyhow};
use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};

use crate::planning::{PlanArgs, load};

/// `plan MODEL --cloud`.
pub fn plan(args: &PlanArgs) -> Result<String> {
    let m = load(&args.model)?;
    let opts = ai_hwaccel::plan::options_for(
        &m,
        &crate::planning::inference_options(args, args.runtime.unwrap_or(RuntimeKind::Generic)),
    );
    let (entries, file_name) = match &args.price_file {
        Some(file) => {
            let name = file.display().to_string();
            (read_prices(file, &name)?, name)
        }
        None => (Vec::new(), String::new()),
    };
    let providers = provider_list(args.provider.as_deref().unwrap_or(""));
    let r = plan_cloud_priced(&m.spec, &entries, &file_name, &providers, &opts).map_err(
        |e| match e {
            CostError::UnknownProvider { .. } => anyhow!(crate::Usage(format!("--provider: {e}"))),
            e => anyhow!(e).context(format!("--price-file {file_name}")),
        },
    )?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&r)?));
    }
    let targets: Vec<String> = [("TTFT", args.ttft_ms), ("TPOT", args.tpot_ms)]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| format!("{n} ≤ {v} ms")))
        .collect();
    Ok(render(
        &r,
        &providers,
        (!targets.is_empty()).then(|| targets.join(" and ")),
    ))
}

/// Read and parse `--price-file` (format by extension); errors name the
/// file and the row and field.
fn read_prices(
    file: &std::path::Path,
    name: &str,
) -> Result<Vec<ai_hwaccel::plan::cost::PriceEntry>> {
    let format = PriceFormat::from_file_name(name).ok_or_else(|| {
        anyhow!("--price-file {name}: unknown format: the name must end in .toml or .csv")
    })?;
    // Only a regular file (a FIFO is an error, not a wait), at most
    // MAX_PRICE_FILE_BYTES.
    let bytes = crate::input::read_input(file, MAX_PRICE_FILE_BYTES)
        .map_err(|e| anyhow!("--price-file {e:#}"))?;
    // UTF-8, or the UTF-16 Windows PowerShell 5.1's `>` writes.
    let text = ai_hwaccel::model::text::decode_strict(&bytes)
        .map_err(|e| anyhow!("--price-file {name}: {e}"))?;
    parse_price_file(&text, format).with_context(|| format!("--price-file {name}"))
}

/// A GitHub file URL pinned at a commit as `owner/repo@commit:path`
/// (commit shortened to 10 digits) so a footnote fits 100 columns; `--json`
/// keeps the full URL. Other sources are shown whole.
fn short_source(url: &str) -> String {
    let Some(rest) = url.strip_prefix("https://github.com/") else {
        return url.to_string();
    };
    let mut parts = rest.splitn(5, '/');
    match (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) {
        (Some(owner), Some(repo), Some("blob"), Some(commit), Some(path)) => {
            let commit = commit.get(..10).unwrap_or(commit);
            format!("{owner}/{repo}@{commit}:{path}")
        }
        _ => url.to_string(),
    }
}

fn money(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn render(r: &CloudReport, providers: &[String], targets: Option<String>) -> String {
    // Under latency targets each plan runs the most sequences that meet
    // them; otherwise the requested batch.
    let at = targets.map_or_else(
        || format!("batch {} per replica", r.batch),
        |t| format!("\nper replica: the most sequences meeting {t}"),
    );
    let mut o = format!(
        "{} on {} cloud instances ({}): {} fit, {} do not{}{}\n",
        r.model,
        r.instances_considered,
        if providers.is_empty() {
            "all providers".to_string()
        } else {
            providers.join(", ")
        },
        r.rows.len(),
        r.does_not_fit.len(),
        if at.starts_with('\n') { "" } else { " · " },
        at
    );
    if r.rows.is_empty() {
        o += &format!("{} fits none of them", r.model);
        if let Some(m) = r.does_not_fit.last() {
            o += &format!(
                " (the last, {} {} = {}: {})",
                m.provider, m.instance, m.devices, m.reason
            );
        }
        o += "\n";
        return o;
    }
    // Footnotes: each distinct (date, region, source) once, numbered in row
    // order; the region lives there to keep the table within 100 columns.
    let mut notes: Vec<(&str, &str, &str)> = Vec::new();
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec![
        "instance",
        "devices",
        "$/hour",
        "quant",
        "TP·PP·DP",
        "tok/s",
        "$/M tok",
        "price",
    ]);
    for x in &r.rows {
        let key = (
            x.price_date.as_str(),
            x.region.as_deref().unwrap_or("region not stated"),
            x.source_url.as_str(),
        );
        let n = match notes.iter().position(|k| *k == key) {
            Some(i) => i + 1,
            None => {
                notes.push(key);
                notes.len()
            }
        };
        t.add_row(vec![
            format!("{} {}", x.provider, x.instance),
            x.devices.clone(),
            money(x.price_per_hour_usd),
            x.plan.quantization.to_string(),
            format!(
                "{}·{}·{}",
                x.plan.tensor_parallel, x.plan.pipeline_parallel, x.plan.data_parallel
            ),
            x.plan
                .served_tokens_per_s
                .or(x.plan.decode_tokens_per_s)
                .map_or("?".into(), |v| format!("{v:.0}")),
            x.usd_per_million_output_tokens.map_or("?".into(), money),
            format!("[{n}]"),
        ]);
    }
    let served = r.rows.iter().any(|x| x.plan.served_tokens_per_s.is_some());
    o += &format!(
        "ranked by on-demand price per hour; tok/s: {} tokens per second of the best plan, summed\n\
         over its replicas at {}; $/M tok = $/hour ÷ (tok/s × 3600) × 10⁶ (? where a device's\n\
         memory bandwidth is unknown){}:\n{t}\n",
        if served { "served output" } else { "decode" },
        if at.starts_with("batch") {
            format!("batch {}", r.batch)
        } else {
            "that batch".to_string()
        },
        if served {
            ";\nserved: each batch as a closed loop, the other requests' prompts prefilled within the \
             decode steps"
        } else {
            ""
        }
    );
    o += "prices as read on the date shown, for the region shown, from the source shown; not current:\n";
    for (i, (date, region, src)) in notes.iter().enumerate() {
        o += &format!("  [{}] {date} {region}: {}\n", i + 1, short_source(src));
    }
    if !r.does_not_fit.is_empty() {
        let names: Vec<String> = r
            .does_not_fit
            .iter()
            .map(|m| format!("{}/{}", m.provider, m.instance))
            .collect();
        // Wrapped to 100 columns.
        let mut line = format!("does not fit ({}; reasons in --json):", names.len());
        for n in names {
            if line.chars().count() + 1 + n.chars().count() > 100 {
                o += &line;
                o += "\n";
                line = " ".to_string();
            }
            line += " ";
            line += &n;
        }
        o += &line;
        o += "\n";
    }
    o
}
