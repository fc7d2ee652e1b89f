//! Cloud cost planning (`plan --cloud`): ranking on fixed prices from a
//! price file, the per-million-token arithmetic, the provider filter, a
//! model that fits nowhere, and bad price files.

use ai_hwaccel::plan::cost::{
    CloudReport, PriceFormat, apply_prices, filter_providers, parse_price_file, plan_cloud,
    usd_per_million_tokens,
};
use ai_hwaccel::plan::{InferenceOptions, Quant, load_model};

const FIXED_TOML: &str = include_str!("fixtures/prices/fixed.toml");
const FIXED_CSV: &str = include_str!("fixtures/prices/fixed.csv");

fn report(model: &str, prices: &str, providers: &[&str], opts: &InferenceOptions) -> CloudReport {
    let entries = parse_price_file(prices, PriceFormat::Toml).unwrap();
    let table = apply_prices(ai_hwaccel::spec::cloud::instances(), &entries, "fixed.toml").unwrap();
    let providers: Vec<String> = providers.iter().map(|p| p.to_string()).collect();
    let table = filter_providers(table, &providers).unwrap();
    let m = load_model(model).unwrap();
    plan_cloud(&m.spec, &table, opts)
}

#[test]
fn per_million_tokens_hand_computed() {
    // $2.00/hour at 50 tokens/s: 180,000 tokens an hour, $11.11 per million.
    let v = usd_per_million_tokens(2.0, 50.0).unwrap();
    assert!((v - 11.111_111_111).abs() < 1e-6, "{v}");
    // $55.04/hour (p5.48xlarge) at 2,000 tokens/s: 7.2 M tokens an hour, $7.644 per million.
    let v = usd_per_million_tokens(55.04, 2000.0).unwrap();
    assert!((v - 7.644_444_444).abs() < 1e-6, "{v}");
    assert_eq!(usd_per_million_tokens(1.0, f64::NAN), None);
    assert_eq!(usd_per_million_tokens(1.0, -3.0), None);
}

#[test]
fn ranks_by_price_per_hour_on_fixed_prices() {
    // Each instance at its suggested quantization (A10G runs no fp8).
    let opts = InferenceOptions {
        context: Some(4096),
        ..Default::default()
    };
    let r = report("llama-3.1-8b", FIXED_TOML, &["aws", "testcloud"], &opts);
    // The rows the fixture prices, in ranked order.
    let order: Vec<(&str, f64)> = r
        .rows
        .iter()
        .filter(|x| x.from_price_file)
        .map(|x| (x.instance.as_str(), x.price_per_hour_usd))
        .collect();
    // The fixture's prices, cheapest first: they reverse the table's order of
    // g6 (0.8048), g5 (1.006) and g6e (1.861).
    assert_eq!(
        order,
        [
            ("g6e.xlarge", 0.5),
            ("one-h100", 1.0),
            ("g6.xlarge", 2.0),
            ("g5.xlarge", 3.0),
            ("one-a800", 4.0)
        ]
    );
    for row in &r.rows {
        assert!(row.price_date.len() == 10 && !row.source_url.is_empty());
        // $/M tokens is the price over the plan's total decode rate.
        // Unknown speed: no price per token, never a guess.
        let Some(tps) = row.plan.decode_tokens_per_s else {
            assert_eq!(row.usd_per_million_output_tokens, None, "{}", row.instance);
            continue;
        };
        let want = row.price_per_hour_usd / (tps * 3600.0) * 1e6;
        let got = row.usd_per_million_output_tokens.unwrap();
        assert!(
            (got - want).abs() < 1e-9 * want,
            "{}: {got} vs {want}",
            row.instance
        );
    }
    // The A800's spec entry has no bandwidth (no NVIDIA figure of it was
    // readable), so its speed and price per token are unknown; the other
    // rows have both (the A10G's since its entry took NVIDIA's figures).
    for x in r.rows.iter().filter(|x| x.from_price_file) {
        let a800 = x.devices == "1xa800-80gb";
        assert_eq!(x.usd_per_million_output_tokens.is_none(), a800, "{x:?}");
    }
    // Between them, the table's own prices (inf2.xlarge at 0.7582 sits
    // between 0.5 and 1.0).
    let names: Vec<&str> = r.rows.iter().map(|x| x.instance.as_str()).collect();
    let at = |i: &str| {
        names
            .iter()
            .position(|x| *x == i)
            .unwrap_or_else(|| panic!("{i} not in {names:?}"))
    };
    assert!(at("g6e.xlarge") < at("inf2.xlarge") && at("inf2.xlarge") < at("one-h100"));
    assert!(
        r.rows
            .windows(2)
            .all(|w| w[0].price_per_hour_usd <= w[1].price_per_hour_usd)
    );
    assert_eq!(r.batch, 1);
    assert!(r.speed_basis.contains("summed over all"));
}

#[test]
fn csv_and_toml_price_files_plan_the_same() {
    let a = parse_price_file(FIXED_TOML, PriceFormat::Toml).unwrap();
    let b = parse_price_file(FIXED_CSV, PriceFormat::Csv).unwrap();
    assert_eq!(a, b);
}

#[test]
fn batch_raises_tokens_per_dollar() {
    let one = InferenceOptions {
        quant: Some(Quant::Fp8),
        ..Default::default()
    };
    let many = InferenceOptions {
        batch: 32,
        ..one.clone()
    };
    let a = report("llama-3.1-8b", "", &["lambda"], &one);
    let b = report("llama-3.1-8b", "", &["lambda"], &many);
    let cost = |r: &CloudReport, i: &str| {
        r.rows
            .iter()
            .find(|x| x.instance == i)
            .and_then(|x| x.usd_per_million_output_tokens)
            .unwrap()
    };
    assert!(cost(&b, "gpu_1x_h100_sxm5") < cost(&a, "gpu_1x_h100_sxm5") / 4.0);
    assert_eq!(b.batch, 32);
}

#[test]
fn provider_filter_keeps_only_those_providers() {
    let r = report("llama-3.1-8b", "", &["oci"], &InferenceOptions::default());
    assert!(!r.rows.is_empty());
    assert!(r.rows.iter().all(|x| x.provider == "oci"));
    let n_oci = ai_hwaccel::spec::cloud::instances()
        .iter()
        .filter(|i| i.provider == "oci")
        .count();
    assert_eq!(r.instances_considered, n_oci);
    assert_eq!(r.rows.len() + r.does_not_fit.len(), n_oci);
}

#[test]
fn a_model_that_fits_nowhere() {
    // Two trillion parameters at fp8 are 2 TB of weights: more than any
    // instance of the table holds (the largest, 8 x B200, has 1.4 TiB).
    let opts = InferenceOptions {
        quant: Some(Quant::Fp8),
        ..Default::default()
    };
    let r = report("2t", "", &[], &opts);
    assert!(r.rows.is_empty());
    assert_eq!(r.does_not_fit.len(), r.instances_considered);
    assert!(r.instances_considered >= 40);
    assert!(r.does_not_fit.iter().all(|m| !m.reason.is_empty()));
}

#[test]
fn a_big_model_fits_only_big_instances() {
    let opts = InferenceOptions {
        quant: Some(Quant::Bf16),
        ..Default::default()
    };
    // 70B at bf16 is 141 GB of weights: no single 80 GB GPU holds it.
    let r = report("llama-3.1-70b", "", &["lambda", "aws"], &opts);
    assert!(r.rows.iter().all(|x| x.devices != "1xh100-sxm"));
    assert!(r.rows.iter().any(|x| x.instance == "p5.48xlarge"));
    assert!(
        r.does_not_fit
            .iter()
            .any(|x| x.instance == "gpu_1x_h100_sxm5")
    );
}

#[test]
fn bad_price_files_are_errors_naming_the_field() {
    let e = parse_price_file(
        include_str!("fixtures/prices/bad-price.csv"),
        PriceFormat::Csv,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "line 2: field \"price_per_hour_usd\": \"cheap\" is not a number"
    );
    let e = parse_price_file(
        include_str!("fixtures/prices/bad-date.toml"),
        PriceFormat::Toml,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "[[price]] #1: field \"price_date\": \"01/11/2026\" is not a date written YYYY-MM-DD"
    );
    assert_eq!(
        PriceFormat::from_file_name("x/prices.CSV"),
        Some(PriceFormat::Csv)
    );
    assert_eq!(PriceFormat::from_file_name("prices.json"), None);
}
