//! Plan inference of a model on devices in one call, and show what a typo
//! gives: an error with a suggestion.
//!
//! `cargo run -p ai-hwaccel --example plan [MODEL] [DEVICES]`
//! (default `llama-3.1-70b` on `4xh100-sxm`; `DEVICES` may also be `this`
//! for this machine's accelerators).

use ai_hwaccel::Registry;
use ai_hwaccel::plan::{InferenceOptions, PlanError, plan_inference_for};

fn main() -> Result<(), PlanError> {
    let mut args = std::env::args().skip(1);
    let model = args.next().unwrap_or_else(|| "llama-3.1-70b".into());
    let devices = args.next().unwrap_or_else(|| "4xh100-sxm".into());
    let opts = InferenceOptions::default();
    let plan = if devices == "this" {
        plan_inference_for(model.as_str(), &Registry::detect(), &opts)?
    } else {
        plan_inference_for(model.as_str(), devices.as_str(), &opts)?
    };
    println!(
        "{}: {:.2}B parameters, suggested {:?}, planned at {}",
        plan.model,
        plan.parameters as f64 / 1e9,
        plan.suggested_quantization,
        plan.quantization
    );
    for p in &plan.plans {
        println!(
            "  TP {} PP {} DP {}: max batch {}, decode {:?} tokens/s",
            p.tensor_parallel,
            p.pipeline_parallel,
            p.data_parallel,
            p.max_batch,
            p.decode_tokens_per_s
        );
    }
    for a in &plan.advice {
        println!("  would fit: {a}");
    }
    for w in &plan.warnings {
        println!("  warning: {w}");
    }
    // A typo: the error names the closest catalog model.
    if let Err(e) = plan_inference_for("lama-3.1-8b", "1xh100-sxm", &opts) {
        println!("a typo gives: {e}");
    }
    Ok(())
}
