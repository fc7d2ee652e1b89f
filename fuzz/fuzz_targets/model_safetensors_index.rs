//! Fuzzes the `model.safetensors.index.json` reader (`parse_index`): shard
//! names must stay plain file names in the index's directory, at most
//! `MAX_SHARDS` of them.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(m) = ai_hwaccel::plan::source::safetensors::parse_index(text)
    {
        for shard in m.shards.keys() {
            assert!(!shard.is_empty() && !shard.contains(['/', '\\']) && shard != "." && shard != "..");
        }
    }
});
