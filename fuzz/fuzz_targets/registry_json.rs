//! Fuzzes `Registry::from_json`, the reader of `plan --registry FILE` (a
//! saved `detect --json` from another node: untrusted).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ai_hwaccel::Registry::from_json(text);
    }
});
