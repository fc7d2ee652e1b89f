//! Fuzzes the SGLang start-up log reader: any text, never a panic; a KV
//! pool it reports is the sum of its parts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let l = ai_hwaccel::plan::runtime::log::parse_sglang_log(&text);
    if let (Some(k), Some(v), Some(kv)) = (l.k_bytes, l.v_bytes, l.kv_cache_bytes) {
        assert_eq!(k + v, kv);
    }
    let _ = l.kv_bytes_per_token();
});
