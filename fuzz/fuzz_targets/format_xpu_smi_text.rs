//! Fuzzes the `xpu-smi-text` parser of the formats table (`ai-hwaccel parse xpu-smi-text`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let f = ai_hwaccel::detect::format("xpu-smi-text").expect("registered format");
    let out = f.run(data);
    assert!(out.devices.len() <= ai_hwaccel::detect::MAX_DEVICES_PER_OUTPUT);
});
