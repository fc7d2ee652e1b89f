//! Fuzzes the llama.cpp start-up log reader behind `ai-hwaccel check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let l = ai_hwaccel::plan::runtime::log::parse_llamacpp_log(&String::from_utf8_lossy(data));
    assert!(l.hparams.len() <= 256);
    for list in [
        &l.model_buffers,
        &l.kv_buffers,
        &l.rs_buffers,
        &l.compute_buffers,
        &l.output_buffers,
        &l.encoder_compute_buffers,
    ] {
        assert!(list.len() <= 256);
    }
    // A projector's weights are read from a MiB figure below 10^12.
    assert!(l.encoder_model_bytes.is_none_or(|b| b < 1 << 60));
    // The memory breakdown table: at most 256 rows, sizes below 2^40 MiB.
    if let Some(t) = &l.memory_breakdown {
        assert!(!t.rows.is_empty() && t.rows.len() <= 256);
        for r in &t.rows {
            assert!(r.self_mib < 1 << 40 && r.model_mib < 1 << 40);
            assert!(r.context_mib < 1 << 40 && r.compute_mib < 1 << 40);
            assert!(matches!(r.kind.as_str(), "device" | "host" | "buffer_type"));
        }
    }
});
