//! Fuzzes the llama-bench results reader behind `ai-hwaccel check`: any
//! text, never a panic, at most its row cap, rates never negative, cache
//! types and `-ot` overrides bounded (16 and 1024 characters).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let rows = ai_hwaccel::plan::runtime::bench::parse_llama_bench(&String::from_utf8_lossy(data));
    assert!(rows.len() <= 10_000);
    for r in &rows {
        assert!(r.tokens_per_s >= 0.0);
        let _ = r.test_name();
        for t in [&r.type_k, &r.type_v].into_iter().flatten() {
            assert!(!t.is_empty() && t.len() <= 16, "{t:?}");
        }
        assert!(r.tensor_overrides.as_ref().is_none_or(|o| o.chars().count() <= 1024));
        let _ = r.overrides_to_host();
    }
});
