//! `ai-hwaccel specs [QUERY] [--json] [--cpu]`: print entries of the spec
//! database, or with `--cpu` of the CPU table.
//!
//! QUERY is first resolved as one device (id, tool-reported name, or PCI id
//! `vvvv:dddd`); failing that, it filters entries whose id, name, aliases,
//! vendor, family or architecture contain it (case-insensitive).

use ai_hwaccel::spec::{self, SpecEntry};
use anyhow::{Result, bail};
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_BORDERS_ONLY};

/// The entries QUERY selects (all without one): what the library's
/// [`spec::lookup`] finds (the same resolution `--devices` uses: one entry,
/// or every entry of an ambiguous name), else entries whose vendor, family
/// or architecture is the word; an error with suggestions when none match.
fn select(query: Option<&str>) -> Result<Vec<&'static SpecEntry>> {
    let Some(q) = query.map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(spec::all().iter().collect());
    };
    let suggestions = match spec::lookup(q) {
        spec::Lookup::Found(e) => return Ok(vec![e]),
        spec::Lookup::Ambiguous(all) => return Ok(all),
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
        bail!(
            "no spec entry matches {q:?}{} (run `ai-hwaccel specs` for the list)",
            ai_hwaccel::suggest::hint(&ids)
        );
    }
    Ok(hits)
}

/// Bytes as GiB (the unit is in the header) without decimals where whole,
/// `-` when unknown.
fn gib(b: Option<u64>) -> String {
    match b {
        Some(b) if b % (1 << 30) == 0 => format!("{}", b >> 30),
        Some(b) => format!("{:.1}", b as f64 / (1u64 << 30) as f64),
        None => "-".into(),
    }
}

fn rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.0}"))
}

/// The text `specs` prints: pretty JSON (an array of entries) or a table.
pub fn run(query: Option<String>, json: bool) -> Result<String> {
    let entries = select(query.as_deref())?;
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&entries)?));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100)
        .set_header(vec![
            "ID", "NAME", "ARCH", "GiB", "GB/s", "16-BIT", "FP8", "W",
        ]);
    for e in &entries {
        t.add_row(vec![
            e.id.clone(),
            e.name.clone(),
            e.architecture.clone().unwrap_or_else(|| "-".into()),
            gib(e.memory_bytes),
            e.memory_bandwidth_bytes_per_s
                .map_or("-".into(), |b| format!("{:.0}", b as f64 / 1e9)),
            // FP16 where stated (every GPU entry but BF16-only parts:
            // TPUs, Gaudi, NPUs); BF16 otherwise. Half the GPU entries
            // state no BF16 rate (Radeon, Apple, older NVIDIA).
            rate(e.tflops.fp16.or(e.tflops.bf16)),
            rate(e.tflops.fp8),
            e.tdp_watts.map_or("-".into(), |w| w.to_string()),
        ]);
    }
    // Ids and numbers never wrap. The architecture column is as wide as its
    // longest word (at least 15, for "Apple M1 Neural Engine" on two lines) and
    // the name takes what is left: both wrap at spaces, never inside a word.
    for i in [0, 3, 4, 5, 6, 7] {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    let archs = entries
        .iter()
        .map(|e| e.architecture.as_deref().unwrap_or("-"));
    let longest_word = archs
        .clone()
        .flat_map(str::split_whitespace)
        .map(str::len)
        .max()
        .unwrap_or(1);
    let longest = archs.map(str::len).max().unwrap_or(1);
    // Never narrower than the header "ARCH" (a lone `8.9` wrapped it).
    let arch_width = longest.min(longest_word.max(15)).max("ARCH".len());
    if let Some(c) = t.column_mut(2) {
        // The fixed width counts the column's padding, one space each side.
        c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(
            arch_width as u16 + 2,
        )));
    }
    let mut s = format!("{t}\n");
    s += "GiB: memory · GB/s: memory bandwidth · 16-BIT (FP16, else BF16), FP8: dense peak TFLOPS · W: TDP.\n";
    s += "`specs ID --json` shows every field and its source.\n";
    if let [one] = entries.as_slice() {
        if !one.configs.is_empty() {
            let mut configs: Vec<String> = one
                .configs
                .iter()
                .map(|c| {
                    let bw = c
                        .memory_bandwidth_bytes_per_s
                        .or(one.memory_bandwidth_bytes_per_s)
                        .map_or("-".into(), |b| format!("{:.0}", b as f64 / 1e9));
                    format!("{} ({} GiB, {bw} GB/s),", c.id, gib(Some(c.memory_bytes)))
                })
                .collect();
            if let Some(last) = configs.last_mut() {
                last.pop();
            }
            s += &crate::render::wrap("configs: ", configs, 100);
        }
        s += &format!("source: {}\n", one.source);
        if let Some(n) = &one.notes {
            s += &crate::render::wrap("notes:  ", n.split_whitespace(), 100);
        }
    }
    Ok(s)
}

/// The text `specs --cpu` prints: pretty JSON (an array of entries with
/// their derived bandwidth and peak rates) or a table.
pub fn run_cpu(query: Option<String>, json: bool) -> Result<String> {
    use ai_hwaccel::spec::cpu;
    let entries = cpu::select(query.as_deref()).map_err(|ids| {
        anyhow::anyhow!(
            "no CPU table entry matches {:?}{} (run `ai-hwaccel specs --cpu` for the list)",
            query.as_deref().unwrap_or_default(),
            ai_hwaccel::suggest::hint(&ids)
        )
    })?;
    if json {
        let views: Vec<_> = entries.iter().map(|e| e.view()).collect();
        return Ok(format!("{}\n", serde_json::to_string_pretty(&views)?));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100)
        .set_header(vec![
            "ID", "NAME", "CORE", "CORES", "GHz", "MEMORY", "GB/s", "FP32",
        ]);
    for e in &entries {
        let v = e.view();
        t.add_row(vec![
            e.id.clone(),
            e.name.clone(),
            e.microarchitecture.clone(),
            e.cores.to_string(),
            format!("{}", e.base_clock_ghz),
            format!(
                "{}x {}-{}",
                e.memory_channels, e.memory_type, e.memory_mt_per_s
            ),
            format!("{:.1}", v.memory_bandwidth_bytes_per_s as f64 / 1e9),
            v.peak_tflops.fp32.map_or("-".into(), |r| format!("{r:.2}")),
        ]);
    }
    for i in [0, 3, 4, 5, 6, 7] {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    let mut s = format!("{t}\n");
    s += &crate::render::wrap(
        "",
        "Per socket. GHz: base clock · MEMORY: channels x type-MT/s · GB/s: theoretical \
         bandwidth · FP32: peak TFLOPS of all cores at the base clock (- where the core design \
         has no sourced figure)."
            .split_whitespace(),
        100,
    );
    s += "`specs --cpu ID --json` shows every field and its source.\n";
    if let [one] = entries.as_slice() {
        s += &format!("source: {}\n", one.source);
        if let Some(n) = &one.notes {
            s += &crate::render::wrap("notes:  ", n.split_whitespace(), 100);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_fits_100_columns() {
        let s = run(None, false).unwrap();
        for line in s.lines() {
            assert!(line.chars().count() <= 100, "{line:?}");
        }
        let one = run(Some("gb200".into()), false).unwrap();
        assert!(one.contains("notes:"));
        for line in one.lines() {
            assert!(line.chars().count() <= 100, "{line:?}");
        }
        assert!(s.contains("h100-sxm"));
    }

    #[test]
    fn table_never_splits_a_word() {
        let text = run(None, false).unwrap();
        // Every cell token of the table, across wrapped lines.
        let tokens: std::collections::HashSet<&str> = text
            .lines()
            .flat_map(|l| l.split(|c: char| c == '│' || c.is_whitespace()))
            .filter(|t| !t.is_empty())
            .collect();
        for e in spec::all() {
            let arch = e.architecture.as_deref().unwrap_or("-");
            for word in [e.id.as_str()]
                .into_iter()
                .chain(e.name.split_whitespace())
                .chain(arch.split_whitespace())
            {
                assert!(
                    tokens.contains(word),
                    "{word:?} of {} split or missing",
                    e.id
                );
            }
            if let Some(m) = e.memory_bytes.filter(|m| m % (1 << 30) == 0) {
                assert!(tokens.contains((m >> 30).to_string().as_str()), "{}", e.id);
            }
        }
    }

    #[test]
    fn json_has_the_documented_keys() {
        let v: serde_json::Value = serde_json::from_str(&run(None, true).unwrap()).unwrap();
        let arr = v.as_array().unwrap();
        assert!(arr.len() >= 60);
        for e in arr {
            for k in [
                "id",
                "name",
                "vendor",
                "pci_ids",
                "architecture",
                "memory_bytes",
                "memory_bandwidth_bytes_per_s",
                "tflops",
                "tdp_watts",
                "source",
            ] {
                assert!(e.get(k).is_some(), "{k} missing in {e}");
            }
            for d in ["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"] {
                assert!(e["tflops"].get(d).is_some(), "tflops.{d} missing");
            }
        }
    }

    #[test]
    fn queries() {
        let one: serde_json::Value =
            serde_json::from_str(&run(Some("NVIDIA H100 80GB HBM3".into()), true).unwrap())
                .unwrap();
        assert_eq!(one.as_array().unwrap().len(), 1);
        assert_eq!(one[0]["id"], "h100-sxm");
        let amd: serde_json::Value =
            serde_json::from_str(&run(Some("gfx942".into()), true).unwrap()).unwrap();
        assert!(amd.as_array().unwrap().len() >= 3);
        let err = run(Some("no-such-device".into()), false).unwrap_err();
        assert!(!err.to_string().contains('\n'));
    }
}
