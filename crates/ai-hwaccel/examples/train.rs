//! Plan training in one call: a bare parameter count and a catalog model,
//! full fine-tuning with ZeRO 3 and QLoRA, memory per device by component.
//!
//! `cargo run -p ai-hwaccel --example train`

use ai_hwaccel::plan::{Method, PlanError, TrainingOptions, TrainingPlan, plan_training_for};

fn show(what: &str, p: &TrainingPlan) {
    println!("{what}: fits {:?}, {:?} tokens/s", p.fits, p.tokens_per_s);
    for d in &p.per_device {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        println!(
            "  {}: params {:.1} GiB, grads {:.1}, optimizer {:.1}, activations {:.1}, total {:.1} of {:?} bytes",
            d.role,
            gib(d.parameters_bytes),
            gib(d.gradients_bytes),
            gib(d.optimizer_bytes),
            gib(d.activations_bytes),
            gib(d.total_bytes),
            d.capacity_bytes
        );
    }
    for w in &p.warnings {
        println!("  warning: {w}");
    }
}

fn main() -> Result<(), PlanError> {
    let zero3 = TrainingOptions {
        zero_stage: 3,
        ..TrainingOptions::default()
    };
    show(
        "7e9 parameters, full, ZeRO 3 on 8 × A100 80GB",
        &plan_training_for(7_000_000_000u64, "8xa100-80gb", &zero3)?,
    );
    let qlora = TrainingOptions {
        method: Method::Qlora,
        ..TrainingOptions::default()
    };
    show(
        "llama-3.1-8b, QLoRA on one RTX 4090",
        &plan_training_for("llama-3.1-8b", "1xrtx-4090", &qlora)?,
    );
    Ok(())
}
