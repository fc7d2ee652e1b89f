//! `plan MODEL --cloud`: output shape, the price file, the provider filter
//! and the exit codes of bad input, end to end through the binary.
#![allow(clippy::disallowed_methods, reason = "tests run the binary")]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../ai-hwaccel/tests/fixtures/prices/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn human_output_ranks_dates_and_fits_100_columns() {
    let o = run(&[
        "plan",
        "llama-3.1-70b",
        "--cloud",
        "--provider",
        "aws,lambda",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    assert!(text.contains("aws p5.48xlarge"), "{text}");
    assert!(text.contains("not current"), "{text}");
    assert!(text.contains("2026-01-21 us-east-1: tsaol/aws-gpu@77fcd9fe1d:data/p5_instances.js"));
    // Cheapest first: the first row's price is the smallest.
    let prices: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("│ aws ") || l.starts_with("│ lambda "))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('│').split_whitespace().collect();
            cells[3].parse::<f64>().unwrap()
        })
        .collect();
    assert!(prices.len() > 10, "{text}");
    assert!(prices.windows(2).all(|w| w[0] <= w[1]), "{prices:?}");
}

#[test]
fn json_rows_carry_price_date_source_and_cost() {
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--cloud",
        "--provider",
        "aws,testcloud",
        "--price-file",
        &fixture("fixed.csv"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let first = &rows[0];
    assert_eq!(first["instance"], "g6e.xlarge");
    assert_eq!(first["price_per_hour_usd"], 0.5);
    assert_eq!(first["price_date"], "2026-11-01");
    assert_eq!(first["source_url"], "test fixture");
    assert_eq!(first["from_price_file"], true);
    let tps = first["plan"]["decode_tokens_per_s"].as_f64().unwrap();
    let usd = first["usd_per_million_output_tokens"].as_f64().unwrap();
    assert!((usd - 0.5 / (tps * 3600.0) * 1e6).abs() < 1e-9);
    // The A800 has no bandwidth figure: its cost per token is null; the
    // A10G's is known.
    let a800 = rows.iter().find(|r| r["instance"] == "one-a800").unwrap();
    assert!(a800["usd_per_million_output_tokens"].is_null());
    let g5 = rows.iter().find(|r| r["instance"] == "g5.xlarge").unwrap();
    assert!(g5["usd_per_million_output_tokens"].as_f64().is_some());
    assert!(rows.iter().any(|r| r["provider"] == "testcloud"));
    assert!(
        rows.iter()
            .all(|r| r["provider"] == "aws" || r["provider"] == "testcloud")
    );
}

#[test]
fn bad_input_exit_codes() {
    // A bad price file: exit 1, naming the file, row and field.
    for (file, want) in [
        (
            "bad-price.csv",
            "bad-price.csv: line 2: field \"price_per_hour_usd\"",
        ),
        (
            "bad-date.toml",
            "bad-date.toml: [[price]] #1: field \"price_date\"",
        ),
    ] {
        let o = run(&["plan", "7b", "--cloud", "--price-file", &fixture(file)]);
        assert_eq!(o.status.code(), Some(1), "{file}");
        assert!(stderr(&o).contains(want), "{file}: {}", stderr(&o));
    }
    let o = run(&[
        "plan",
        "7b",
        "--cloud",
        "--price-file",
        "/nonexistent/prices.csv",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/prices.csv"));
    // An unknown provider and --cloud with --devices are usage errors.
    let o = run(&["plan", "7b", "--cloud", "--provider", "lamda"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean lambda"), "{}", stderr(&o));
    let o = run(&["plan", "7b", "--cloud", "--devices", "1xl4"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["plan", "7b", "--provider", "aws"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_model_that_fits_nowhere_says_so() {
    let o = run(&[
        "plan",
        "2t",
        "--cloud",
        "--quant",
        "fp8",
        "--provider",
        "lambda",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("0 fit, 10 do not"), "{text}");
    assert!(text.contains("fits none of them"), "{text}");
}

/// With a time-per-output-token target every instance's plan runs the most
/// sequences that meet it, and the report says so instead of "batch 1".
#[test]
fn latency_targets_rank_instances_at_the_concurrency_that_meets_them() {
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--cloud",
        "--provider",
        "aws",
        "--tpot-ms",
        "25",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("the most sequences meeting TPOT ≤ 25 ms") && !text.contains("batch 1"),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--cloud",
        "--provider",
        "aws",
        "--tpot-ms",
        "25",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .any(|r| r["plan"]["batch"].as_u64().unwrap() > 1)
    );
    for r in rows {
        if let Some(t) = r["plan"]["tpot_ms"].as_f64() {
            assert!(t <= 25.0, "{r}");
        }
    }
}

/// With prompt and output lengths each instance's price per token is at the
/// output its batch delivers served as a closed loop (the other requests'
/// prompts prefilled within the decode steps), below the decode steps'
/// rate, and the report says which it used.
#[test]
fn served_output_prices_the_tokens_where_lengths_are_given() {
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--cloud",
        "--provider",
        "aws",
        "--tpot-ms",
        "25",
        "--input-len",
        "1000",
        "--output-len",
        "200",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["speed_basis"]
            .as_str()
            .unwrap()
            .starts_with("served_tokens_per_s"),
        "{}",
        v["speed_basis"]
    );
    let mut served_rows = 0;
    for r in v["rows"].as_array().unwrap() {
        let p = &r["plan"];
        let Some(served) = p["served_tokens_per_s"].as_f64() else {
            assert!(
                p["batch"].as_u64().unwrap() == 1 || p["tpot_ms"].is_null(),
                "{r}"
            );
            continue;
        };
        served_rows += 1;
        let decode = p["decode_tokens_per_s"].as_f64().unwrap();
        assert!(served < decode, "{r}");
        let price = r["price_per_hour_usd"].as_f64().unwrap();
        let usd = r["usd_per_million_output_tokens"].as_f64().unwrap();
        let want = price / (served * 3600.0) * 1e6;
        assert!((usd - want).abs() < 1e-6 * want, "{usd} {want}");
    }
    assert!(served_rows > 5, "{served_rows}");
    // Without an output length there is no closed loop: decode prices it.
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--cloud",
        "--provider",
        "aws",
        "--tpot-ms",
        "25",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["speed_basis"]
            .as_str()
            .unwrap()
            .starts_with("decode_tokens_per_s")
    );
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["plan"]["served_tokens_per_s"].is_null())
    );
}
