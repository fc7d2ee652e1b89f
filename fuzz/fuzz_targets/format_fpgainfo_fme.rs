//! Fuzzes the `fpgainfo-fme` parser of the formats table (`ai-hwaccel parse fpgainfo-fme`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let f = ai_hwaccel::detect::format("fpgainfo-fme").expect("registered format");
    let out = f.run(data);
    assert!(out.devices.len() <= ai_hwaccel::detect::MAX_DEVICES_PER_OUTPUT);
    assert!(out.warnings.len() <= ai_hwaccel::detect::MAX_WARNINGS_PER_OUTPUT + 1);
});
