//! Fuzzes the llama-bench results reader behind `ai-hwaccel check`: any
//! text, never a panic, at most its row cap, rates never negative.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let rows = ai_hwaccel::plan::runtime::bench::parse_llama_bench(&String::from_utf8_lossy(data));
    assert!(rows.len() <= 10_000);
    for r in &rows {
        assert!(r.tokens_per_s >= 0.0);
        let _ = r.test_name();
    }
});
