//! Fuzzes the config.json reader (`hf_config::parse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ai_hwaccel::plan::source::hf_config::parse(text, "config.json");
    }
});
