//! Human-readable tables (at most 100 columns wide).

use ai_hwaccel::Registry;
use comfy_table::{ColumnConstraint, ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};

/// Bytes per second as decimal GB/s with `decimals` digits, `-` when unknown.
pub fn gb_per_s(b: Option<u64>, decimals: usize) -> String {
    b.map_or("-".into(), |b| {
        format!("{:.decimals$} GB/s", b as f64 / 1e9)
    })
}

/// Bytes as GiB with one decimal, `-` when unknown.
pub fn gib(b: Option<u64>) -> String {
    match b {
        Some(b) => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        None => "-".to_string(),
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100)
        .set_header(header.to_vec());
    t
}

/// The detect report: devices, system facts, summary and optional timings.
pub fn registry(reg: &Registry, timings: bool) -> String {
    let mut s = String::new();
    let mut t = table(&[
        "ID", "NAME", "FAMILY", "MEMORY", "FREE", "NUMA", "DRIVER", "OK",
    ]);
    let mut notes = String::new();
    for d in &reg.devices {
        let status = if d.available { "yes" } else { "no" };
        if !d.available {
            let why = d.unavailable_reason.as_deref().unwrap_or("unknown reason");
            notes += &format!("{}: unavailable: {why}\n", d.id);
        }
        t.add_row(vec![
            d.id.clone(),
            d.name.clone(),
            d.family.to_string(),
            gib(d.memory_bytes),
            gib(d.memory_free_bytes),
            d.numa_node.map_or("-".into(), |n| n.to_string()),
            d.driver.clone().unwrap_or_else(|| "-".into()),
            status.to_string(),
        ]);
    }
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    s += &format!("{t}\n{notes}");

    let sys = &reg.system;
    let c = &sys.cpu;
    let num = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
    s += &format!(
        "CPU     {} — {} socket(s), {} cores, {} logical CPUs ({} usable)\n",
        c.model.as_deref().unwrap_or("unknown"),
        num(c.sockets),
        num(c.physical_cores),
        num(c.logical_cpus),
        num(c.usable_cpus),
    );
    if !c.features.is_empty() {
        s += &wrap("        features: ", &c.features, 100);
    }
    let m = &sys.memory;
    s += &format!(
        "Memory  {} total, {} available, {} usable by this process\n",
        gib(m.total_bytes),
        gib(m.available_bytes),
        gib(m.usable_bytes)
    );
    for n in &sys.numa_nodes {
        s += &format!(
            "NUMA    node {}: {} CPUs, {}\n",
            n.id,
            n.cpus.len(),
            gib(n.memory_bytes)
        );
    }
    if let Some(cg) = &sys.cgroup {
        s += &format!(
            "Cgroup  v{} {} — memory limit {}, CPU quota {}\n",
            cg.version,
            cg.path,
            cg.memory_limit_bytes
                .map_or("none".to_string(), |b| gib(Some(b))),
            cg.cpu_quota
                .map_or("none".to_string(), |q| format!("{q:.2} CPUs")),
        );
    }
    let sm = &reg.summary;
    s += &if sm.accelerator_count == 0 {
        "Summary no accelerator available\n".to_string()
    } else {
        format!(
            "Summary {} accelerator(s) available, {}\n",
            sm.accelerator_count,
            summary_memory(sm)
        )
    };
    if timings {
        let mut t = table(&["BACKEND", "MILLISECONDS"]);
        for b in &reg.timings {
            t.add_row(vec![b.backend.clone(), format!("{:.2}", b.millis)]);
        }
        t.add_row(vec![
            "total".to_string(),
            format!("{:.2}", reg.total_millis),
        ]);
        s += &format!("{t}\n");
    }
    s
}

/// The summary's memory phrase: unknown memory is said so, never summed as 0.
pub fn summary_memory(sm: &ai_hwaccel::model::Summary) -> String {
    match sm.accelerator_memory_bytes {
        Some(b) => format!("{} accelerator memory", gib(Some(b))),
        None if sm.accelerator_memory_unknown_count == sm.accelerator_count => {
            "accelerator memory unknown".into()
        }
        None => format!(
            "{} accelerator memory known, unknown for {} of them",
            gib(Some(sm.accelerator_memory_known_bytes)),
            sm.accelerator_memory_unknown_count
        ),
    }
}

/// `prefix` followed by `words`, wrapped to `width` columns with continuation
/// lines indented like the prefix.
pub fn wrap<S: AsRef<str>>(
    prefix: &str,
    words: impl IntoIterator<Item = S>,
    width: usize,
) -> String {
    let indent = " ".repeat(prefix.chars().count());
    let mut out = String::new();
    let mut line = prefix.to_string();
    let mut empty = true;
    for w in words {
        let w = w.as_ref();
        if !empty && line.chars().count() + 1 + w.chars().count() > width {
            out += &line;
            out.push('\n');
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += w;
        empty = false;
    }
    out += &line;
    out.push('\n');
    out
}
