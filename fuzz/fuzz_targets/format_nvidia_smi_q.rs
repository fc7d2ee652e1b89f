//! Fuzzes the `nvidia-smi-q` parser of the formats table (`ai-hwaccel parse nvidia-smi-q`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let f = ai_hwaccel::detect::format("nvidia-smi-q").expect("registered format");
    let out = f.run(data);
    assert!(out.devices.len() <= ai_hwaccel::detect::MAX_DEVICES_PER_OUTPUT);
});
