//! Fuzzes the safetensors header reader (length prefix and JSON header).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = ai_hwaccel::plan::source::safetensors::header_len(data);
    let _ = ai_hwaccel::plan::source::safetensors::parse_header(data);
});
