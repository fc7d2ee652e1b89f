//! Fuzzes the TensorRT-LLM start-up log reader behind `ai-hwaccel check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let l = ai_hwaccel::plan::runtime::log::parse_trtllm_log(&String::from_utf8_lossy(data));
    assert!(l.world_size.is_none_or(|n| n > 0 && n < 65_536));
    // One pool per window, at most 64, each window once.
    assert!(l.kv_windows.len() <= 64);
    for (i, w) in l.kv_windows.iter().enumerate() {
        assert!(l.kv_windows[..i].iter().all(|x| x.window_tokens != w.window_tokens));
    }
    let _ = l.kv_bytes_per_token();
});
