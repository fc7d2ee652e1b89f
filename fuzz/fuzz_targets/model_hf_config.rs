//! Fuzzes the config.json reader (`hf_config::parse`) and, on the same
//! JSON inputs, the sentence-transformers `modules.json` reader
//! (`modules_have_pooling`) read beside it in a model directory.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ai_hwaccel::plan::source::hf_config::parse(text, "config.json");
        let _ = ai_hwaccel::plan::source::modules_have_pooling(text);
    }
});
