//! Fuzzes the GGUF header reader.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = ai_hwaccel::plan::source::gguf::parse(data, Some(data.len() as u64));
});
