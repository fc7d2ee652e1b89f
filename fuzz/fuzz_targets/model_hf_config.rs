//! Fuzzes the config.json reader (`hf_config::parse`) and, on the same
//! JSON inputs, the sentence-transformers `modules.json` reader
//! (`modules_have_pooling`) read beside it in a model directory. A spec it
//! accepts is validated, so its parameter arithmetic (the text model's and
//! a vision tower's, split over tensor parallelism or not) must not
//! overflow: the fuzz build checks overflow.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok((spec, _)) = ai_hwaccel::plan::source::hf_config::parse(text, "config.json") {
            let total = spec.hub_parameter_total();
            if let Some(v) = &spec.vision {
                let all = v.params(spec.hidden_size);
                let split = v.tp_split_params(spec.hidden_size);
                assert!(split <= all && all <= total, "{split} {all} {total}");
            }
        }
        let _ = ai_hwaccel::plan::source::modules_have_pooling(text);
    }
});
