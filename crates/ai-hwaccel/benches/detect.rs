#![allow(missing_docs, reason = "criterion macros generate undocumented items")]
//! Detection speed on a fixture root and on the live machine.
//! Figures are recorded in docs/benchmarks.md.

use std::path::PathBuf;

use ai_hwaccel::{DetectOptions, ProbeOptions, detect};
use criterion::{Criterion, criterion_group, criterion_main};

fn fixture_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roots/two-socket-pci")
}

fn bench_detect(c: &mut Criterion) {
    let fixture = ProbeOptions {
        root: fixture_root(),
        ..ProbeOptions::default()
    };
    c.bench_function("detect/fixture_root(two-socket-pci)", |b| {
        b.iter(|| detect(&fixture, &DetectOptions::default()))
    });
    c.bench_function("detect/live", |b| {
        b.iter(|| detect(&ProbeOptions::default(), &DetectOptions::default()))
    });
}

criterion_group!(benches, bench_detect);
criterion_main!(benches);
