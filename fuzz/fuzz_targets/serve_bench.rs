//! Fuzzes the serving benchmark results reader behind `ai-hwaccel check`
//! (`vllm bench serve`, `sglang.bench_serving`: text blocks and saved
//! JSON): any text, never a panic, at most its result cap, every result
//! with a completed request and no negative or non-finite figure.
#![no_main]

use ai_hwaccel::plan::runtime::serve_bench::{MAX_RESULTS, parse_serve_bench};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let r = parse_serve_bench(&text);
    assert!(r.len() <= MAX_RESULTS);
    for b in &r {
        assert!(b.completed > 0, "{b:?}");
        for x in [
            b.request_rate,
            b.duration_s,
            b.output_tokens_per_s,
            b.measured_concurrency,
            b.mean_ttft_ms,
            b.median_ttft_ms,
            b.p99_ttft_ms,
            b.mean_tpot_ms,
            b.median_tpot_ms,
            b.mean_itl_ms,
            b.mean_e2e_ms,
        ]
        .into_iter()
        .flatten()
        {
            assert!(x.is_finite() && x >= 0.0, "{b:?}");
        }
        assert!(b.backend.as_ref().is_none_or(|s| s.chars().count() <= 64));
    }
});
