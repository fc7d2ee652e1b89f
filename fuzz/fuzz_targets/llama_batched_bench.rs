//! Fuzzes the llama-batched-bench results reader behind `ai-hwaccel
//! check`: any text, never a panic, at most its row cap, no negative or
//! non-finite time or rate.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(b) = ai_hwaccel::plan::runtime::bench::parse_batched_bench(&text) {
        assert!(!b.rows.is_empty() && b.rows.len() <= 10_000);
        for r in &b.rows {
            for x in [r.pp_seconds, r.pp_tokens_per_s, r.tg_seconds, r.tg_tokens_per_s] {
                assert!(x.is_finite() && x >= 0.0, "{r:?}");
            }
        }
    }
});
