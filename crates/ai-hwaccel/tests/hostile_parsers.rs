//! Parsers stay linear and bounded on forged tool outputs (issue 14): repeated
//! device headers stop at the shared per-output device cap with one warning,
//! and a table whose rows all name peers parses in one pass. Only outcomes
//! are asserted (device counts, warnings); time and memory figures are in
//! docs/robustness.md.

use ai_hwaccel::detect::{MAX_DEVICES_PER_OUTPUT, format};

fn run(name: &str, text: &str) -> ai_hwaccel::detect::ParseOutput {
    format(name)
        .expect("registered format")
        .run(text.as_bytes())
}

fn assert_capped(name: &str, text: &str) {
    let out = run(name, text);
    assert_eq!(out.devices.len(), MAX_DEVICES_PER_OUTPUT, "{name}");
    let caps: Vec<_> = out
        .warnings
        .iter()
        .filter(|w| w.contains("more than 1024 devices"))
        .collect();
    assert_eq!(
        caps.len(),
        1,
        "{name}: {:?}",
        &out.warnings[..3.min(out.warnings.len())]
    );
}

#[test]
fn repeated_device_headers_stop_at_the_cap() {
    // 1 MiB of `GPU: 0` lines made 150,000 devices and 508 MiB before the cap.
    assert_capped("amd-smi-text", &"GPU: 0\n".repeat(150_000));
    assert_capped(
        "nvidia-smi-nvlink",
        &"GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n\t Link 0: 25 GB/s\n".repeat(5_000),
    );
    assert_capped(
        "nvidia-smi-q",
        &format!(
            "Attached GPUs : 1\n{}",
            "GPU 00000000:01:00.0\n    Product Name : NVIDIA A100\n".repeat(5_000)
        ),
    );
    assert_capped(
        "nvidia-smi-xml",
        &format!(
            "<nvidia_smi_log>{}</nvidia_smi_log>",
            "<gpu id=\"00000000:01:00.0\"><product_name>A100</product_name></gpu>".repeat(5_000)
        ),
    );
    assert_capped(
        "amd-smi-json",
        &format!("[{}{{\"gpu\":0}}]", "{\"gpu\":0},".repeat(5_000)),
    );
}

#[test]
fn neuron_ls_with_many_linked_rows_is_capped() {
    let head = "+--------+--------+--------+---------------+---------+\n\
                | NEURON | NEURON | NEURON |   CONNECTED   |   PCI   |\n\
                | DEVICE | CORES  | MEMORY |    DEVICES    |   BDF   |\n\
                +--------+--------+--------+---------------+---------+\n";
    let rows: String = (0..20_000)
        .map(|i| format!("| {i} | 2 | 32 GB | {}, {} | 10:1c.0 |\n", i + 1, i + 2))
        .collect();
    let out = run("neuron-ls", &format!("{head}{rows}"));
    assert_eq!(out.devices.len(), MAX_DEVICES_PER_OUTPUT);
    // Links still name the peers the table lists (by PCI address).
    assert_eq!(out.devices[0].links.len(), 2);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("neuron-ls: more than 1024"))
    );
}

#[test]
fn below_the_cap_nothing_is_dropped() {
    let out = run("amd-smi-text", &"GPU: 0\n".repeat(MAX_DEVICES_PER_OUTPUT));
    assert_eq!(out.devices.len(), MAX_DEVICES_PER_OUTPUT);
    assert!(!out.warnings.iter().any(|w| w.contains("more than")));
}
