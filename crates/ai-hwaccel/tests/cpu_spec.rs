//! The CPU spec table's matcher on real model names
//! (`tests/fixtures/cpu-model-names/names.tsv`: name, expected entry, source).

use ai_hwaccel::spec::cpu;

#[test]
fn real_model_names_match_their_entries() {
    let text = include_str!("fixtures/cpu-model-names/names.tsv");
    let mut rows = 0;
    let mut matched = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "three TAB-separated columns: {line:?}");
        let got = cpu::match_model_name(cols[0]).map(|c| c.id.as_str());
        let want = (cols[1] != "-").then_some(cols[1]);
        assert_eq!(got, want, "{:?} ({})", cols[0], cols[2]);
        rows += 1;
        matched += usize::from(want.is_some());
    }
    // 9 names match a sourced row; 7 match none (cloud custom parts, a
    // masked name, and EPYC 9005 / Ryzen desktop parts the table leaves
    // out for want of a checkable copy of AMD's figures).
    assert!(rows >= 16 && matched >= 9, "{rows} rows, {matched} matched");
}

#[test]
fn every_entry_matches_its_own_name_and_a_kernel_spelling() {
    for c in cpu::all() {
        assert_eq!(cpu::match_model_name(&c.name).map(|e| &e.id), Some(&c.id));
        // The kernel's spellings: trademark marks and a core count suffix.
        let kernel = c
            .name
            .replacen("Intel ", "Intel(R) ", 1)
            .replacen("Xeon ", "Xeon(R) ", 1)
            .replacen("Core ", "Core(TM) ", 1);
        let kernel = format!("{kernel} {}-Core Processor", c.cores);
        assert_eq!(
            cpu::match_model_name(&kernel).map(|e| &e.id),
            Some(&c.id),
            "{kernel}"
        );
    }
}

/// A registry from the fake root `two-socket-pci` (two "Intel(R) Xeon(R)
/// Platinum 8480+", 8 physical cores and 16 logical CPUs visible, all
/// usable): the host CPU gets the table's theoretical bandwidth per socket
/// × 2 sockets and the peak rates of its 8 usable cores.
#[test]
fn host_cpu_takes_bandwidth_and_rates_from_the_table() {
    use ai_hwaccel::plan::PlanDevice;
    use ai_hwaccel::{DetectOptions, ProbeOptions, detect};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/roots/two-socket-pci");
    let reg = detect(
        &ProbeOptions {
            root,
            env: Some(Default::default()),
            ..Default::default()
        },
        &DetectOptions::default(),
    );
    let c = &reg.system.cpu;
    assert_eq!(
        (c.sockets, c.physical_cores, c.logical_cpus, c.usable_cpus),
        (Some(2), Some(8), Some(16), Some(16))
    );
    let cpu = PlanDevice::host_cpu(&reg).unwrap();
    assert_eq!(cpu.cpu_spec_id.as_deref(), Some("xeon-platinum-8480-plus"));
    // 8 channels × 4800 MT/s × 8 B = 307.2 GB/s per socket, × 2 sockets.
    assert_eq!(cpu.bandwidth_bytes_per_s, Some(2 * 307_200_000_000));
    assert_eq!(cpu.bandwidth_basis.as_deref(), Some("theoretical"));
    // 8 cores × 2.0 GHz × 64 FP32 FLOPs/cycle = 1.024 TFLOPS;
    // AMX: × 1024 = 16.384 TFLOPS BF16, × 2048 = 32.768 TOPS INT8.
    assert!((cpu.tflops.fp32.unwrap() - 1.024).abs() < 1e-12);
    assert!((cpu.tflops.bf16.unwrap() - 16.384).abs() < 1e-12);
    assert!((cpu.tflops.int8.unwrap() - 32.768).abs() < 1e-12);
    // A CPU-only plan on it: decode = bytes per token ÷ (614.4 GB/s × 0.6)
    // with the fixed efficiency (no fit applies to CPUs).
    let spec = ai_hwaccel::plan::load_model("llama-3.1-8b").unwrap().spec;
    let opts = ai_hwaccel::plan::InferenceOptions {
        runtime: ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        quant: Some(ai_hwaccel::plan::Quant::Bf16),
        context: Some(1024),
        calibrated_speed: false,
        ..Default::default()
    };
    let p = ai_hwaccel::plan::plan_inference(&spec, std::slice::from_ref(&cpu), &opts);
    let d = &p.plans[0].per_device[0];
    // Read per token: the weights but the embedding (a lookup: 128,256 ×
    // 4,096 bf16, one row read; the untied head is read whole) and the KV
    // cache.
    let embedding = 128_256u64 * 4096 * 2;
    let bytes = (d.weights_bytes - embedding) as f64
        + embedding as f64 / 128_256.0
        + d.kv_cache_bytes as f64;
    let want = 614.4e9 * 0.6 / bytes;
    let got = p.plans[0].decode_tokens_per_s.unwrap();
    assert!((got - want).abs() / want < 1e-6, "{got} vs {want}");
}
