#![allow(missing_docs, reason = "criterion macros")]
//! Parser benchmarks: each parser on the largest fixture of its format.

use criterion::{Criterion, criterion_group, criterion_main};

/// NVIDIA tool outputs: each nvidia-smi parser on its largest fixture.
fn parsers(c: &mut Criterion) {
    let cases: [(&str, &[u8]); 5] = [
        (
            "nvidia-smi-xml",
            include_bytes!(
                "../tests/fixtures/nvidia-smi-xml/netdata-godplugin__rtx-4090-driver-535.xml"
            ),
        ),
        (
            "nvidia-smi-csv",
            include_bytes!(
                "../tests/fixtures/nvidia-smi-csv/linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.csv"
            ),
        ),
        (
            "nvidia-smi-topo",
            include_bytes!(
                "../tests/fixtures/nvidia-smi-topo/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
            ),
        ),
        (
            "nvidia-smi-q",
            include_bytes!(
                "../tests/fixtures/nvidia-smi-q/gpud__h100-80gb-hbm3-x8__535.183.01.txt"
            ),
        ),
        (
            "nvidia-smi-nvlink",
            include_bytes!(
                "../tests/fixtures/nvidia-smi-nvlink/gpud__nvlink-status__a100-sxm4-80gb-x8.txt"
            ),
        ),
    ];
    for (name, input) in cases {
        let f = ai_hwaccel::detect::format(name).expect("registered format");
        c.bench_function(name, |b| b.iter(|| (f.parse)(std::hint::black_box(input))));
    }
}

/// AMD and Intel tool outputs through their `parse` formats.
fn amd_intel(c: &mut Criterion) {
    let cases: [(&str, &[u8]); 4] = [
        (
            "rocm-smi-json",
            include_bytes!("../tests/fixtures/rocm-smi-json/telegraf__mi100_rocm571.json"),
        ),
        (
            "amd-smi-json",
            include_bytes!(
                "../tests/fixtures/amd-smi-json/amdsmi-changelog__topology-json__2gpu.json"
            ),
        ),
        (
            "amd-smi-text",
            include_bytes!("../tests/fixtures/amd-smi-text/amdsmi-readme__static__mi300a-x4.txt"),
        ),
        (
            "xpu-smi-json",
            include_bytes!(
                "../tests/fixtures/xpu-smi/xpumanager-doc__discovery-j__pvc-0x020a.json"
            ),
        ),
    ];
    for (name, input) in cases {
        let f = ai_hwaccel::detect::format(name).expect("registered format");
        c.bench_function(name, |b| b.iter(|| (f.parse)(std::hint::black_box(input))));
    }
}

/// Vulkan, OpenCL, Gaudi, Neuron and TPU tool outputs through their `parse` formats.
fn other_families(c: &mut Criterion) {
    let cases: [(&str, &[u8]); 6] = [
        (
            "vulkaninfo",
            include_bytes!(
                "../tests/fixtures/vulkaninfo/debian12-mesa-22.3.6__vulkaninfo-text__llvmpipe.txt"
            ),
        ),
        (
            "clinfo",
            include_bytes!("../tests/fixtures/clinfo/debian12-pocl-3.1__clinfo-raw__pocl-cpu.txt"),
        ),
        (
            "clinfo",
            include_bytes!(
                "../tests/fixtures/clinfo/hsa-microbench__amd-app-sdk-clinfo__a10-7850k-apu-spectre.txt"
            ),
        ),
        (
            "hl-smi",
            include_bytes!(
                "../tests/fixtures/hl-smi/intel-openshift-doc__hl-smi__2x-gaudi2-hl225__1.17.1.txt"
            ),
        ),
        (
            "neuron-ls",
            include_bytes!(
                "../tests/fixtures/neuron-ls/aws-neuron-sdk-doc__trn2n.48xlarge__neuron-ls-wide.txt"
            ),
        ),
        (
            "tpu-info",
            include_bytes!(
                "../tests/fixtures/tpu-info/cloud-accelerator-diagnostics-readme__tpu-info__v6e-4chips.txt"
            ),
        ),
    ];
    for (i, (name, input)) in cases.into_iter().enumerate() {
        let f = ai_hwaccel::detect::format(name).expect("registered format");
        c.bench_function(&format!("{name}#{i}"), |b| {
            b.iter(|| (f.parse)(std::hint::black_box(input)))
        });
    }
}

criterion_group!(benches, parsers, amd_intel, other_families);
criterion_main!(benches);
