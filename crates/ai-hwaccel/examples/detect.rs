//! Detect this machine's accelerators with the defaults and print them,
//! the best one, and what detection could not read.
//!
//! `cargo run -p ai-hwaccel --example detect`

use ai_hwaccel::Registry;

fn main() {
    let registry = Registry::detect();
    println!("{} device(s):", registry.devices.len());
    for d in &registry.devices {
        let memory = d.memory_bytes.map_or("unknown".to_string(), |b| {
            format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
        });
        println!(
            "  {:<24} {:<40} {:<8} memory {memory}",
            d.id,
            d.name,
            d.family.as_str()
        );
    }
    match registry.best_accelerator() {
        Some(d) => println!("best accelerator: {} ({})", d.name, d.id),
        None => println!("no accelerator (the CPU is not counted as one)"),
    }
    let s = &registry.summary;
    match s.accelerator_memory_bytes {
        Some(b) => println!("accelerator memory: {b} bytes"),
        None => println!(
            "accelerator memory: unknown for {} of {} ({} bytes known)",
            s.accelerator_memory_unknown_count,
            s.accelerator_count,
            s.accelerator_memory_known_bytes
        ),
    }
    for w in &registry.warnings {
        eprintln!("warning: [{}] {}", w.backend, w.message);
    }
}
