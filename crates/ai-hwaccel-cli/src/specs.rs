//! `ai-hwaccel specs [QUERY] [--json]`: print entries of the spec database.
//!
//! QUERY is first resolved as one device (id, tool-reported name, or PCI id
//! `vvvv:dddd`); failing that, it filters entries whose id, name, aliases,
//! vendor, family or architecture contain it (case-insensitive).

use ai_hwaccel::spec::{self, SpecEntry};
use anyhow::{Result, bail};
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_BORDERS_ONLY};

/// The entries QUERY selects (all without one); an error when none match.
fn select(query: Option<&str>) -> Result<Vec<&'static SpecEntry>> {
    let Some(q) = query.map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(spec::all().iter().collect());
    };
    if let Some(e) = spec::resolve(q) {
        return Ok(vec![e]);
    }
    let needle = q.to_ascii_lowercase();
    let contains = |s: &str| s.to_ascii_lowercase().contains(&needle);
    let hits: Vec<_> = spec::all()
        .iter()
        .filter(|e| {
            contains(&e.id)
                || contains(&e.name)
                || e.aliases.iter().any(|a| contains(a))
                || contains(&e.vendor)
                || contains(e.family.as_str())
                || e.architecture.as_deref().is_some_and(contains)
        })
        .collect();
    if hits.is_empty() {
        bail!("no spec entry matches {q:?} (run `ai-hwaccel specs` for the list)");
    }
    Ok(hits)
}

/// Bytes as GiB without decimals where whole, `-` when unknown.
fn gib(b: Option<u64>) -> String {
    match b {
        Some(b) if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        Some(b) => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
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
            "ID",
            "NAME",
            "ARCH",
            "MEMORY",
            "BANDWIDTH",
            "BF16",
            "FP8",
            "TDP",
        ]);
    for e in &entries {
        t.add_row(vec![
            e.id.clone(),
            e.name.clone(),
            e.architecture.clone().unwrap_or_else(|| "-".into()),
            gib(e.memory_bytes),
            crate::render::gb_per_s(e.memory_bandwidth_bytes_per_s, 0),
            rate(e.tflops.bf16),
            rate(e.tflops.fp8),
            e.tdp_watts.map_or("-".into(), |w| format!("{w} W")),
        ]);
    }
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    if let Some(c) = t.column_mut(1) {
        c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(26)));
    }
    let mut s = format!("{t}\n");
    s += "BF16/FP8: dense peak TFLOPS. `specs ID --json` shows every field and its source.\n";
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
