#![allow(missing_docs, reason = "criterion macros")]
//! Planner benchmarks: the largest catalog dense model across 64 devices,
//! and an MoE/MLA model across a node.

use ai_hwaccel::plan::{InferenceOptions, PlanDevice, catalog, plan_inference};
use criterion::{Criterion, criterion_group, criterion_main};

fn plan(c: &mut Criterion) {
    let cases = [
        (
            "plan/llama-3.1-405b/64xh100-sxm",
            "llama-3.1-405b",
            "64xh100-sxm",
        ),
        ("plan/deepseek-v3/8xh200", "deepseek-v3", "8xh200"),
        ("plan/llama-3.1-8b/1xl4", "llama-3.1-8b", "1xl4"),
    ];
    for (name, model, devices) in cases {
        let spec = catalog::find(model).expect("catalog model").spec.clone();
        let devs = PlanDevice::from_device_string(devices).expect("device string");
        let opts = InferenceOptions::default();
        c.bench_function(name, |b| {
            b.iter(|| plan_inference(std::hint::black_box(&spec), &devs, &opts))
        });
    }
}

criterion_group!(benches, plan);
criterion_main!(benches);
