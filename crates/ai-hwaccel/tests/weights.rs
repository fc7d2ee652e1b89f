//! Weight bytes of quantized formats against published sizes (issue 16
//! item 2): every row of `tests/calibration/weights.csv` is planned at its
//! level and the weights on one device compared with the size the source
//! printed (rounded as printed: a GiB or GB figure to two decimals). Each
//! row must be within 2 %.
#![allow(clippy::disallowed_methods, reason = "the test reads its data file")]

use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, load_model, plan_inference};

#[test]
fn gguf_mixes_match_published_sizes() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/calibration/weights.csv");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut worst: f64 = 0.0;
    let mut n = 0;
    for line in lines {
        let c: Vec<&str> = line.split(',').collect();
        assert_eq!(c.len(), header.len(), "{line}");
        let value: f64 = c[col("value")].parse().unwrap();
        let bytes = match c[col("unit")] {
            "GiB" => value * (1u64 << 30) as f64,
            "GB" => value * 1e9,
            u => panic!("unit {u}"),
        };
        let spec = load_model(c[col("catalog_model")]).unwrap().spec;
        let q = Quant::parse(c[col("quant")]).unwrap();
        let p = plan_inference(
            &spec,
            &PlanDevice::from_device_string("1xh100-sxm").unwrap(),
            &InferenceOptions {
                quant: Some(q),
                ..Default::default()
            },
        );
        let w = p.plans[0].per_device[0].weights_bytes as f64;
        let err = (w - bytes) / bytes;
        println!(
            "{} {} ({}): predicted {:.3} GB, published {value} {} ({:+.2} %)",
            c[col("model")],
            c[col("format")],
            c[col("figure")],
            w / 1e9,
            c[col("unit")],
            100.0 * err
        );
        worst = worst.max(err.abs());
        n += 1;
    }
    assert!(n >= 3);
    assert!(worst <= 0.02, "worst {:.2} %", 100.0 * worst);
}
