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

/// Lines `range` (1-based, inclusive) of a fixture, each ending in `\n`.
#[allow(clippy::disallowed_methods, reason = "the test reads fixtures")]
fn fixture_lines(path: &str, range: std::ops::RangeInclusive<usize>) -> String {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(path),
    )
    .expect("fixture");
    text.lines()
        .skip(range.start() - 1)
        .take(range.end() - range.start() + 1)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A real capture's header followed by its first device block repeated
/// past the cap (or, for formats keyed by device number, a block per number).
#[test]
fn every_format_stops_at_the_cap() {
    const N: usize = MAX_DEVICES_PER_OUTPUT + 100;
    let npu = "npu-smi/ms-swift-doc__8x-910b3__npu-smi-24.1.rc1.b030.txt";
    let hl = "hl-smi/intel-openshift-doc__hl-smi__2x-gaudi2-hl225__1.17.1.txt";
    let csv = "nvidia-smi-csv/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.csv";
    let qaic = "qaic-util/ck-qaic-setup-aedk__1x-aic100-8nsp__platform-sdk-1.6.txt";
    let xb = "xbutil-examine/video-sdk-v1.0-doc__xbutil-examine__4x-u30__xrt-2.10.43.txt";
    let vk = "vulkaninfo/debian12-mesa-22.3.6__vulkaninfo-summary__llvmpipe.txt";
    let ri = "rocminfo/vbs-nn__rx6700xt__runtime-ext-1.4.txt";
    let fme = "fpgainfo-fme/lkml-dfl-pci-d5005-subdevice__fpgainfo-fme__d5005__ofs-2024.1-1.txt";
    let cases: Vec<(&str, String)> = vec![
        (
            "npu-smi",
            fixture_lines(npu, 1..=6) + &fixture_lines(npu, 7..=9).repeat(N),
        ),
        (
            "hl-smi",
            fixture_lines(hl, 1..=7) + &fixture_lines(hl, 8..=10).repeat(N),
        ),
        (
            "nvidia-smi-csv",
            fixture_lines(csv, 1..=1) + &fixture_lines(csv, 2..=2).repeat(N),
        ),
        (
            "qaic-util",
            fixture_lines(qaic, 1..=3) + &fixture_lines(qaic, 4..=47).repeat(N),
        ),
        (
            "xbutil-examine",
            fixture_lines(xb, 1..=20) + &fixture_lines(xb, 21..=21).repeat(N),
        ),
        ("fpgainfo-fme", fixture_lines(fme, 1..=17).repeat(N)),
        (
            "vulkaninfo-summary",
            fixture_lines(vk, 1..=38)
                + &(0..N)
                    .map(|i| {
                        // A GPU, not llvmpipe's CPU (CPU devices are summed into one note).
                        fixture_lines(vk, 39..=51)
                            .replacen("GPU0:", &format!("GPU{i}:"), 1)
                            .replace("TYPE_CPU", "TYPE_DISCRETE_GPU")
                    })
                    .collect::<String>(),
        ),
        (
            "rocminfo",
            fixture_lines(ri, 1..=72)
                + &(0..N)
                    .map(|i| {
                        fixture_lines(ri, 73..=167).replacen(
                            "Agent 2",
                            &format!("Agent {}", i + 2),
                            1,
                        )
                    })
                    .collect::<String>(),
        ),
        (
            "clinfo",
            "[P/*]    CL_PLATFORM_NAME    p\n[P/*]  #DEVICES  1\n".to_string()
                + &(0..N)
                    .map(|i| format!("[P/{i}]    CL_DEVICE_NAME    d{i}\n"))
                    .collect::<String>(),
        ),
        (
            "tpu-info",
            "| Chip | Type | Devices | PID |\n|---|---|---|---|\n".to_string()
                + &(0..N)
                    .map(|i| format!("| /dev/vfio/{i} | TPU v6e chip | 1 | 1 |\n"))
                    .collect::<String>(),
        ),
        (
            "xpu-smi-json",
            format!(
                "{{\"device_list\":[{}{{\"device_id\":0}}]}}",
                "{\"device_id\":0,\"device_name\":\"Intel(R) Data Center GPU Max 1550\"},"
                    .repeat(N)
            ),
        ),
        (
            "rocm-smi-json",
            format!(
                "{{{}}}",
                (0..N)
                    .map(|i| format!("\"card{i}\":{{\"Card series\":\"Instinct MI210\"}}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "neuron-ls-json",
            format!(
                "[{}]",
                (0..N)
                    .map(|i| format!("{{\"neuron_device\":{i},\"nc_count\":2}}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "system-profiler-json",
            format!(
                "{{\"SPDisplaysDataType\":[{}]}}",
                "{\"sppci_model\":\"Apple M3 Max\",\"sppci_cores\":\"40\"},"
                    .repeat(N)
                    .trim_end_matches(',')
            ),
        ),
    ];
    for (name, text) in &cases {
        assert_capped(name, text);
    }
    // The parsers stop reading at the cap rather than parse everything and
    // trim afterwards: a line past it that would otherwise warn is never read.
    let past: Vec<(&str, String, &str)> = vec![
        (
            "npu-smi",
            fixture_lines(npu, 1..=6)
                + &fixture_lines(npu, 7..=9).repeat(N)
                + "| zzz | OK | 1 |
",
            "zzz",
        ),
        (
            "qaic-util",
            fixture_lines(qaic, 1..=3)
                + &fixture_lines(qaic, 4..=47).repeat(N)
                + "QID zzz
",
            "zzz",
        ),
        (
            "tpu-info",
            "| Chip | Type | Devices | PID |\n|---|---|---|---|\n".to_string()
                + &(0..N)
                    .map(|i| format!("| /dev/vfio/{i} | TPU v6e chip | 1 | 1 |\n"))
                    .collect::<String>()
                + "| zzz | TPU v6e chip | 1 | 1 |\n",
            "zzz",
        ),
    ];
    for (name, text, marker) in &past {
        let out = run(name, text);
        assert!(
            !out.warnings.iter().any(|w| w.contains(marker)),
            "{name} read past the cap: {:?}",
            out.warnings
        );
    }
}

#[test]
fn warnings_per_output_are_capped() {
    use ai_hwaccel::detect::MAX_WARNINGS_PER_OUTPUT;
    // Every row lacks an NPU id: one warning per row before the cap.
    let npu = "npu-smi/ms-swift-doc__8x-910b3__npu-smi-24.1.rc1.b030.txt";
    let text = fixture_lines(npu, 1..=6) + &"| x | OK | 1 |\n".repeat(5_000);
    let out = run("npu-smi", &text);
    assert_eq!(out.warnings.len(), MAX_WARNINGS_PER_OUTPUT + 1);
    assert!(
        out.warnings
            .last()
            .is_some_and(|w| w.contains("more warnings not shown")),
        "{:?}",
        out.warnings.last()
    );
}
