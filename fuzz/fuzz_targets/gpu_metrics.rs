//! Fuzzes amdgpu's binary `gpu_metrics` reader: any bytes are a table or
//! an error; values it returns are in range.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(m) = ai_hwaccel::telemetry::gpu_metrics::parse_gpu_metrics(data) {
        assert!(
            m.gfx_activity_ratio
                .is_none_or(|r| (0.0..=1.0).contains(&r))
        );
        assert!(
            m.temperatures_celsius
                .values()
                .all(|t| (-50.0..=250.0).contains(t))
        );
        assert!(m.pcie_link_width.is_none_or(|w| (1..=32).contains(&w)));
        let _ = m.throttle_reasons();
    }
});
