#![allow(missing_docs, reason = "criterion macros generate undocumented items")]
//! The detection cache on the live machine: a hit through `detect_cached`
//! (fingerprint read + cache file read and checked), a hit through the
//! in-process `CachedRegistry` (fingerprint only), and the fingerprint alone.
//! Figures are recorded in docs/benchmarks.md.

use std::collections::BTreeSet;

use ai_hwaccel::cache::Fingerprint;
use ai_hwaccel::{
    CacheOptions, CachedRegistry, DetectOptions, LiveProbe, ProbeOptions, detect_cached,
};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench_cache(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = CacheOptions {
        dir: Some(dir.path().join("ai-hwaccel")),
        ..CacheOptions::default()
    };
    let probe = ProbeOptions::default();
    let opts = DetectOptions::default();
    // Fill the cache once.
    let first = detect_cached(&probe, &opts, &cache);
    assert!(!first.cache.expect("cache info").hit);
    c.bench_function("cache/detect_cached hit (live)", |b| {
        b.iter(|| {
            let r = detect_cached(&probe, &opts, &cache);
            assert!(r.cache.as_ref().is_some_and(|c| c.hit));
            r
        })
    });
    let handle = CachedRegistry::new(probe.clone(), opts.clone(), cache.clone());
    handle.get();
    c.bench_function("cache/CachedRegistry::get hit (live)", |b| {
        b.iter(|| handle.get())
    });
    let live = LiveProbe::new(probe.clone());
    let names = BTreeSet::new();
    c.bench_function("cache/fingerprint (live)", |b| {
        b.iter(|| Fingerprint::read(&live, &probe, &opts, &names))
    });
}

criterion_group!(benches, bench_cache);
criterion_main!(benches);
