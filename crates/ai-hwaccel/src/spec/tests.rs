//! Invariants of the embedded data and of the lookups.

use std::collections::HashMap;

use super::*;

#[test]
fn embedded_database_parses() {
    let entries = parse_database(DEVICES_TOML).expect("devices.toml parses");
    assert!(entries.len() >= 60, "only {} entries", entries.len());
    assert_eq!(all().len(), entries.len());
}

#[test]
fn unknown_fields_are_rejected() {
    let text = "[[device]]\nid = \"x\"\nname = \"X\"\nvendor = \"nvidia\"\nfamily = \"gpu\"\nsource = \"https://example.com\"\nmemory_gb = 80\n";
    assert!(parse_database(text).is_err());
}

#[test]
fn tflops_keys_are_dtypes() {
    // `Tflops` ignores unknown keys (JSON forward compatibility), so a typo in
    // the data file would silently drop a rate: check the raw keys.
    let raw: toml::Table = toml::from_str(DEVICES_TOML).unwrap();
    let devices = raw["device"].as_array().unwrap();
    for d in devices {
        let configs = d.get("configs").and_then(|c| c.as_array());
        let tables = std::iter::once(d.get("tflops"))
            .chain(configs.into_iter().flatten().map(|c| c.get("tflops")))
            .flatten();
        for t in tables {
            for k in t.as_table().unwrap().keys() {
                assert!(
                    Dtype::ALL.iter().any(|d| d.as_str() == k) || k == "fp16_acc32",
                    "{}: tflops key {k:?} is not a dtype",
                    d["id"]
                );
            }
        }
    }
}

#[test]
fn every_entry_cites_a_source_url() {
    for e in all() {
        assert!(
            e.source.starts_with("https://") && !e.source.contains(' '),
            "{}: source {:?} is not a URL",
            e.id,
            e.source
        );
    }
}

#[test]
fn ids_are_short_names() {
    for e in all() {
        let ok = !e.id.is_empty()
            && e.id.split('-').all(|w| {
                !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            });
        assert!(ok, "id {:?} is not lowercase words joined by '-'", e.id);
        assert!(
            !e.id.starts_with(|c: char| c.is_ascii_digit()),
            "{}: an id starting with a digit would read as a count in device strings",
            e.id
        );
    }
}

#[test]
fn ids_aliases_and_pci_ids_are_unique() {
    let shared = by_pci_id_all(0x1002, 0x740c);
    let ids: Vec<&str> = shared.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["mi250", "mi250x"], "MI250 and MI250X share 1002:740c");
    assert!(
        by_pci_id(0x1002, 0x740c).is_none(),
        "a shared id names no single part"
    );
    let mut ids = HashMap::new();
    let mut names: HashMap<String, &str> = HashMap::new();
    for e in all() {
        assert!(ids.insert(&e.id, ()).is_none(), "id {} duplicated", e.id);
        for n in std::iter::once(&e.name).chain(&e.aliases) {
            if let Some(other) = names.insert(squash(n), &e.id) {
                assert_eq!(other, e.id, "name {n:?} of {} also names {other}", e.id);
            }
        }
        // An id may be shared by products (listed in each); not twice in one.
        let mut own: Vec<&str> = e.pci_ids.iter().map(String::as_str).collect();
        own.sort_unstable();
        own.dedup();
        assert_eq!(
            own.len(),
            e.pci_ids.len(),
            "{}: a PCI id listed twice",
            e.id
        );
    }
    // An id must not be another entry's name, or resolve() would be ambiguous.
    for e in all() {
        if let Some(other) = names.get(&squash(&e.id)) {
            assert_eq!(*other, e.id, "id {} is a name of {other}", e.id);
        }
    }
}

#[test]
fn pci_ids_are_well_formed_and_match_the_vendor() {
    for e in all() {
        for p in &e.pci_ids {
            assert!(
                p.len() == 9 && *p == p.to_ascii_lowercase(),
                "{}: {p:?} is not lowercase vvvv:dddd",
                e.id
            );
            let (v, _) = parse_pci_id(p).unwrap_or_else(|| panic!("{}: {p:?} unparsable", e.id));
            let key = crate::detect::pci_ids::vendor(v)
                .unwrap_or_else(|| panic!("{}: unknown PCI vendor in {p}", e.id))
                .key;
            // Habana's PCI vendor id belongs to Intel now.
            let key = if key == "habana" { "intel" } else { key };
            assert_eq!(key, e.vendor, "{}: {p} is not a {} id", e.id, e.vendor);
        }
    }
}

#[test]
fn units_are_consistent() {
    const GIB: u64 = 1 << 30;
    for e in all() {
        if let Some(bw) = e.memory_bandwidth_bytes_per_s {
            // Catches TB/s stored as GB/s (1e3 too small) and GB/s as bytes.
            assert!(
                (1e10..1e14).contains(&(bw as f64)),
                "{}: memory bandwidth {bw} B/s out of range",
                e.id
            );
        }
        if let Some(m) = e.memory_bytes {
            assert!(
                (GIB..=1024 * GIB).contains(&m),
                "{}: memory {m} B out of range",
                e.id
            );
            assert_eq!(m % GIB, 0, "{}: memory is not whole GiB", e.id);
        }
        if let Some(ic) = &e.interconnect {
            if let Some(bw) = ic.bandwidth_bytes_per_s {
                assert!(
                    (1e9..1e14).contains(&(bw as f64)),
                    "{}: link bandwidth {bw} out of range",
                    e.id
                );
            }
            assert!(ic.domain_size.is_none_or(|n| n >= 1), "{}", e.id);
        }
        if let Some(w) = e.tdp_watts {
            assert!((1..=2000).contains(&w), "{}: TDP {w} W", e.id);
        }
        if let Some(y) = e.launch_year {
            assert!((2015..=2026).contains(&y), "{}: year {y}", e.id);
        }
        for d in Dtype::ALL {
            if let Some(r) = e.tflops.rate(d) {
                assert!(
                    r > 0.0 && r < 20_000.0,
                    "{}: {d} rate {r} out of range",
                    e.id
                );
            }
        }
    }
}

#[test]
fn low_precision_is_not_slower_than_fp32() {
    for e in all() {
        let t = &e.tflops;
        for (lo, name) in [(t.bf16, "bf16"), (t.fp16, "fp16"), (t.tf32, "tf32")] {
            if let (Some(lo), Some(fp32)) = (lo, t.fp32) {
                assert!(lo >= fp32, "{}: {name} {lo} < fp32 {fp32}", e.id);
            }
        }
        if let (Some(fp8), Some(bf16)) = (t.fp8, t.bf16) {
            assert!(fp8 >= bf16, "{}: fp8 {fp8} < bf16 {bf16}", e.id);
        }
    }
}

/// `major.minor` of an NVIDIA compute capability.
fn cc(e: &SpecEntry) -> (u32, u32) {
    let a = e.architecture.as_deref().unwrap_or("");
    let (maj, min) = a.split_once('.').unwrap_or_else(|| {
        panic!(
            "{}: NVIDIA architecture {a:?} is not a compute capability",
            e.id
        )
    });
    (maj.parse().unwrap(), min.parse().unwrap())
}

#[test]
fn native_dtypes_agree_with_rates_and_architecture() {
    for e in all() {
        let native = |d: Dtype| e.native_dtypes.contains(&d);
        for d in Dtype::ALL {
            if e.tflops.rate(d).is_some() {
                assert!(native(d), "{}: has a {d} rate but {d} is not native", e.id);
            }
        }
        let mut sorted = e.native_dtypes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            e.native_dtypes.len(),
            "{}: duplicate dtypes",
            e.id
        );
        if e.vendor == "nvidia" {
            let cc = cc(e);
            // FP8 from Ada/Hopper (8.9, 9.0); FP4 from Blackwell (10.0).
            assert_eq!(
                native(Dtype::Fp8),
                cc >= (8, 9),
                "{}: fp8 vs cc {cc:?}",
                e.id
            );
            assert_eq!(
                native(Dtype::Fp4),
                cc >= (10, 0),
                "{}: fp4 vs cc {cc:?}",
                e.id
            );
            assert_eq!(
                native(Dtype::Bf16),
                cc >= (8, 0),
                "{}: bf16 vs cc {cc:?}",
                e.id
            );
        }
        if e.vendor == "amd" && e.family == Family::Gpu {
            let arch = e.architecture.as_deref().unwrap_or("");
            assert!(arch.starts_with("gfx"), "{}: AMD GPU arch {arch:?}", e.id);
            let fp8 = matches!(arch, "gfx942" | "gfx950");
            assert_eq!(native(Dtype::Fp8), fp8, "{}: fp8 vs {arch}", e.id);
            assert_eq!(
                native(Dtype::Fp4),
                arch == "gfx950",
                "{}: fp4 vs {arch}",
                e.id
            );
        }
    }
}

#[test]
fn required_short_ids_exist() {
    for id in [
        "h100-sxm",
        "h100-pcie",
        "h200",
        "a100-80gb",
        "a100-40gb",
        "l4",
        "t4",
        "rtx-4090",
        "rtx-a6000",
        "mi300x",
        "mi250x",
        "tpu-v5e",
        "gaudi3",
        "trn2",
    ] {
        let e = by_id(id).unwrap_or_else(|| panic!("no entry {id}"));
        assert_eq!(e.id, id);
        assert_eq!(resolve(id).map(|e| e.id.as_str()), Some(id));
    }
    assert_eq!(by_id(" H100-SXM ").map(|e| e.id.as_str()), Some("h100-sxm"));
}

#[test]
fn datasheet_spot_checks() {
    let h100 = by_id("h100-sxm").unwrap();
    assert_eq!(h100.memory_bytes, Some(80 << 30));
    assert_eq!(h100.memory_bandwidth_bytes_per_s, Some(3_350_000_000_000));
    // 1,979 TFLOPS bf16 "with sparsity" on the datasheet: dense is half.
    assert!((h100.tflops.bf16.unwrap() - 989.5).abs() < 1.0);
    assert_eq!(h100.architecture.as_deref(), Some("9.0"));
    let mi300x = by_id("mi300x").unwrap();
    assert_eq!(mi300x.architecture.as_deref(), Some("gfx942"));
    assert_eq!(mi300x.memory_bytes, Some(192 << 30));
    assert_eq!(by_id("a100-80gb").unwrap().pci_ids, ["10de:20b2"]);
}

/// Jetson modules: GPU-only dense rates from the module data sheets (the
/// DLA's TOPS taken out where the module has one), at MAXN_SUPER for the
/// Orin NX and Nano as for the Orin Nano 8GB.
#[test]
fn jetson_modules_carry_their_gpu_share() {
    // (id, memory GiB, bandwidth B/s, fp16 = bf16, int8, fp32, tdp)
    for (id, gib, bw, fp16, int8, fp32, tdp) in [
        (
            "jetson-agx-orin-32gb",
            32,
            204_800_000_000,
            27.0,
            54.0,
            3.365,
            40,
        ),
        (
            "jetson-orin-nx-16gb",
            16,
            102_000_000_000,
            19.0,
            38.0,
            2.4,
            40,
        ),
        (
            "jetson-orin-nx-8gb",
            8,
            102_000_000_000,
            19.0,
            38.0,
            2.4,
            40,
        ),
        (
            "jetson-orin-nano-4gb",
            4,
            51_000_000_000,
            8.5,
            17.0,
            1.04,
            25,
        ),
    ] {
        let e = by_id(id).unwrap();
        assert_eq!(e.memory_bytes, Some(gib << 30), "{id}");
        assert_eq!(e.memory_bandwidth_bytes_per_s, Some(bw), "{id}");
        assert_eq!(e.tflops.fp16, Some(fp16), "{id}");
        assert_eq!(e.tflops.bf16, Some(fp16), "{id}");
        assert_eq!(e.tflops.int8, Some(int8), "{id}");
        assert_eq!(e.tflops.fp32, Some(fp32), "{id}");
        assert_eq!(e.tdp_watts, Some(tdp), "{id}");
        assert!(e.unified_memory, "{id}");
        assert_eq!(e.architecture.as_deref(), Some("8.7"), "{id}");
    }
    // The NX GPU's dense INT8 is the module's minus the DLAs' (sparse / 2).
    let nx16 = by_id("jetson-orin-nx-16gb").unwrap();
    assert_eq!(nx16.tflops.int8, Some(78.0 - 80.0 / 2.0));
    // A GPU share never exceeds the module's dense TOPS.
    assert!(by_id("jetson-orin-nx-8gb").unwrap().tflops.int8.unwrap() <= 58.0);
}

/// Jetson T5000 (AGX Thor): NVIDIA's 2070 FP4 TFLOPS are sparse; the dense
/// rates follow the gb10 convention (FP4 : FP8 : FP16 = 4 : 2 : 1), and
/// RidgeRun's reproduction of NVIDIA's table gives FP8 as half of FP4 on the
/// same basis. fp32 is its 20 SMs x 128 cores x 2 x 1.575 GHz.
#[test]
fn jetson_t5000_dense_rates_are_the_sparse_fp4_figure_scaled() {
    let e = by_id("jetson-t5000").unwrap();
    let t = &e.tflops;
    let sparse_fp4 = 2070.0;
    assert_eq!(t.fp4, Some(sparse_fp4 / 2.0));
    assert_eq!(t.fp8, Some(sparse_fp4 / 4.0));
    assert_eq!(t.fp16, Some(sparse_fp4 / 8.0));
    assert_eq!(t.bf16, t.fp16);
    assert_eq!(t.fp16_acc32, None);
    assert!((t.fp32.unwrap() - 20.0 * 128.0 * 2.0 * 1.575 / 1000.0).abs() < 0.01);
    // gb10 follows the same ratios from its 1000 sparse FP4 TFLOPS.
    let g = &by_id("gb10").unwrap().tflops;
    assert_eq!(
        (g.fp4, g.fp8, g.fp16),
        (Some(500.0), Some(250.0), Some(125.0))
    );
    assert_eq!(e.memory_bytes, Some(128 << 30));
    assert_eq!(e.memory_bandwidth_bytes_per_s, Some(273_000_000_000));
    assert!(e.unified_memory);
    assert_eq!(
        by_name("NVIDIA Jetson AGX Thor").map(|x| x.id.as_str()),
        Some("jetson-t5000")
    );
}

/// Apple M3 and M4: the 16-bit rate is the 32-bit one, as measured (the
/// M4 Pro's vkpeak ALU rates, the M3 Max's and M4 Max's PyTorch GEMMs);
/// the M4 Max's and M4's fp32 from their measured 1578 MHz top state, the
/// M3 Ultra's (two M3 Max dies) from the M3 Max's 1380 MHz.
#[test]
fn apple_sixteen_bit_rate_is_the_fp32_rate() {
    let e = by_id("m4-pro-gpu").unwrap();
    assert_eq!(e.tflops.fp32, Some(8.08));
    for id in [
        "m4-pro-gpu",
        "m3-gpu",
        "m3-pro-gpu",
        "m3-max-gpu",
        "m4-max-gpu",
        "m3-max-36gb",
        "m4-max-36gb",
    ] {
        let e = by_id(id).unwrap();
        assert!(e.tflops.fp32.is_some(), "{id}");
        assert_eq!(e.tflops.fp16, e.tflops.fp32, "{id}");
    }
    // 40 cores x 128 x 2 x 1.578 GHz; the 32-core bin of the 36 GB model.
    assert_eq!(by_id("m4-max-gpu").unwrap().tflops.fp32, Some(16.16));
    assert_eq!(by_id("m4-max-36gb").unwrap().tflops.fp32, Some(12.93));
    // The M4's 10-core GPU at its measured 1578 MHz top state; the M3
    // Ultra's 80 and 60 cores at the M3 Max's measured 1380 MHz.
    assert_eq!(by_id("m4-gpu").unwrap().tflops.fp32, Some(4.04));
    assert_eq!(by_id("m3-ultra-512gb").unwrap().tflops.fp32, Some(28.26));
    let bin = by_id("m3-ultra-60core-96gb").unwrap();
    assert_eq!((bin.tflops.fp32, bin.compute_units), (Some(21.2), Some(60)));
    for id in ["m4-gpu", "m3-ultra-gpu", "m3-ultra-60core-96gb"] {
        let e = by_id(id).unwrap();
        assert_eq!(e.tflops.fp16, e.tflops.fp32, "{id}");
    }
}

/// Rates computed as units x a per-unit rate per clock x clock, where the
/// per-unit rate is read off a sibling's vendor figures (each entry's notes
/// give the arithmetic): Xe2 XMX engines at 256 FP16 and 512 INT8 ops per
/// clock (Intel's B580 launch figures: 117 / 233 at 160 engines and
/// 2.85 GHz), Xe2 vector engines (8 per Xe-core) at 32 FP32 FLOP per clock,
/// RDNA 4 compute units at 256 FP32 and 1024 FP16 matrix FLOP per clock
/// (AMD's RX 9070 XT row: 48.66 / 195 at 64 compute units and 2.97 GHz),
/// and RDNA 3(.5) compute units at 256 and 512 (AMD's W7900 row);
/// the Arc A-series laptop parts and the Flex 170 use the arc-a770
/// per-engine formula.
#[test]
fn unit_count_times_clock_rates_recompute() {
    let near = |id: &str, got: Option<f64>, want: f64| {
        let got = got.unwrap_or_else(|| panic!("{id}: no rate"));
        assert!(
            (got - want).abs() <= 0.01 * want,
            "{id}: stored {got}, computed {want:.2}"
        );
    };
    // The per-unit rates, from the sibling entries' own figures.
    let b580 = by_id("arc-b580").unwrap();
    let xmx_fp16 = b580.tflops.fp16.unwrap() * 1e3 / (160.0 * 2.85);
    let xmx_int8 = b580.tflops.int8.unwrap() * 1e3 / (160.0 * 2.85);
    assert!((xmx_fp16 - 256.0).abs() < 1.0 && (xmx_int8 - 512.0).abs() < 2.0);
    let xt = by_id("rx-9070-xt").unwrap();
    let cu_fp32 = xt.tflops.fp32.unwrap() * 1e3 / (64.0 * 2.97);
    let cu_fp16 = xt.tflops.fp16.unwrap() * 1e3 / (64.0 * 2.97);
    // AMD prints the 9070 XT's matrix figure rounded (195, not 194.66).
    assert!((cu_fp32 - 256.0).abs() < 0.5 && (cu_fp16 - 1024.0).abs() < 3.0);

    // Intel Arc Pro: (id, Xe-cores, XMX engines, GHz).
    for (id, xe_cores, xmx, ghz) in [
        ("arc-pro-b60", 20.0, 160.0, 2.4),
        ("arc-pro-b50", 16.0, 128.0, 2.6),
    ] {
        let t = &by_id(id).unwrap().tflops;
        near(id, t.fp16, xmx * 256.0 * ghz / 1e3);
        near(id, t.bf16, xmx * 256.0 * ghz / 1e3);
        near(id, t.int8, xmx * 512.0 * ghz / 1e3);
        near(id, t.fp32, xe_cores * 8.0 * 32.0 * ghz / 1e3);
    }
    // Intel Arc A-series laptop GPUs and the Flex 170: Xe-HPG, 16 XMX engines of 128 FP16 /
    // 256 INT8 ops and 16 vector engines of 16 FP32 ops per Xe-core, at
    // Intel's stated graphics clock (the arc-a770 formula). (id, Xe-cores, GHz).
    for (id, xe_cores, ghz) in [
        // The Flex 170 at its xpu-smi capture's 512 EUs and 2050 MHz
        // (tests/spec_captures.rs reads them from the capture).
        ("flex-170", 32.0, 2.05),
        ("arc-a770m", 32.0, 1.65),
        ("arc-a730m", 24.0, 1.1),
        ("arc-a550m", 16.0, 0.9),
        ("arc-a370m", 8.0, 1.55),
    ] {
        let t = &by_id(id).unwrap().tflops;
        near(id, t.fp16, xe_cores * 16.0 * 128.0 * ghz / 1e3);
        near(id, t.bf16, xe_cores * 16.0 * 128.0 * ghz / 1e3);
        near(id, t.int8, xe_cores * 16.0 * 256.0 * ghz / 1e3);
        near(id, t.fp32, xe_cores * 16.0 * 16.0 * ghz / 1e3);
    }
    // RDNA 4: (id, compute units, boost GHz).
    for (id, cus, ghz) in [
        ("rx-9070-gre", 48.0, 2.79),
        ("radeon-ai-pro-r9700", 64.0, 2.92),
    ] {
        let t = &by_id(id).unwrap().tflops;
        near(id, t.fp32, cus * 256.0 * ghz / 1e3);
        near(id, t.fp16, cus * 1024.0 * ghz / 1e3);
    }
    // Every RDNA 4 (gfx12) entry records the matrix rate: twice the packed
    // vector rate, 2 x fp32.
    for e in all().iter().filter(|e| {
        e.vendor == "amd"
            && e.architecture
                .as_deref()
                .is_some_and(|a| a.starts_with("gfx12"))
    }) {
        let (fp32, fp16) = (e.tflops.fp32.unwrap(), e.tflops.fp16.unwrap());
        near(&e.id, Some(fp16), 4.0 * fp32);
    }
    // RDNA 3.5 integrated GPUs take the RDNA 3 per-CU rate of AMD's W7900
    // row (122.6 FP16 matrix / 61.3 FP32 at 96 compute units, 2.495 GHz).
    let w7900 = by_id("radeon-pro-w7900").unwrap();
    let r3_fp16 = w7900.tflops.fp16.unwrap() * 1e3 / (96.0 * 2.495);
    let r3_fp32 = w7900.tflops.fp32.unwrap() * 1e3 / (96.0 * 2.495);
    assert!((r3_fp16 - 512.0).abs() < 1.0 && (r3_fp32 - 256.0).abs() < 0.5);
    for (id, cus, ghz) in [
        ("radeon-8060s", 40.0, 2.9),
        ("radeon-8050s", 32.0, 2.8),
        ("radeon-890m", 16.0, 2.9),
        ("radeon-880m", 12.0, 2.9),
        // Phoenix / Hawk Point (RDNA 3): AMD's Ryzen 7040U figures as reported.
        ("radeon-780m", 12.0, 2.7),
        ("radeon-760m", 8.0, 2.6),
    ] {
        let t = &by_id(id).unwrap().tflops;
        near(id, t.fp32, cus * 256.0 * ghz / 1e3);
        near(id, t.fp16, cus * 512.0 * ghz / 1e3);
    }
}

#[test]
fn name_normalization() {
    let cases = [
        ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
        ("NVIDIA H100 PCIe", Some("h100-pcie")),
        ("nvidia   h100-pcie", Some("h100-pcie")),
        ("GH100 [H100 PCIe]", Some("h100-pcie")),
        ("H100 SXM5 80GB", Some("h100-sxm")),
        ("NVIDIA A100-SXM4-80GB", Some("a100-80gb")),
        ("NVIDIA A100-SXM4-40GB", Some("a100-40gb")),
        ("NVIDIA A100-PCIE-40GB", Some("a100-40gb-pcie")),
        ("NVIDIA A100 80GB PCIe", Some("a100-80gb-pcie")),
        ("Tesla T4", Some("t4")),
        ("Tesla V100-SXM2-32GB", Some("v100-sxm2-32gb")),
        ("NVIDIA A10", Some("a10")),
        ("NVIDIA A10G", Some("a10g")),
        ("AMD Instinct MI300X", Some("mi300x")),
        ("MI300X", Some("mi300x")),
        ("Instinct MI210", Some("mi210")),
        ("HL-225", Some("gaudi2")),
        ("hl225", Some("gaudi2")),
        ("TPU v6e chip", Some("tpu-v6e")),
        ("trn2n.48xlarge", Some("trn2")),
        // Names that do not decide between products resolve to nothing.
        ("NVIDIA H100", None),
        ("AMD Instinct MI250X/MI250", None),
        ("NVIDIA A100", None),
        ("NVIDIA GeForce RTX 3070 Ti", Some("rtx-3070-ti")),
        // Two memory sizes under one printed name: the memory size decides.
        ("NVIDIA GeForce RTX 4060 Ti", None),
        ("NVIDIA GeForce RTX 3070", Some("rtx-3070")),
        ("", None),
        ("NVIDIA", None),
    ];
    for (name, want) in cases {
        assert_eq!(by_name(name).map(|e| e.id.as_str()), want, "{name:?}");
    }
}

#[test]
fn resolve_order() {
    assert_eq!(resolve("l4").map(|e| e.id.as_str()), Some("l4"));
    assert_eq!(resolve("NVIDIA L40S").map(|e| e.id.as_str()), Some("l40s"));
    assert_eq!(
        resolve("10de:2330").map(|e| e.id.as_str()),
        Some("h100-sxm")
    );
    assert_eq!(
        resolve("0x1002:0x74a1").map(|e| e.id.as_str()),
        Some("mi300x")
    );
    assert_eq!(resolve("10de:ffff"), None);
    assert_eq!(resolve("nonsense"), None);
    assert_eq!(
        by_pci_id(0x10de, 0x2331).map(|e| e.id.as_str()),
        Some("h100-pcie")
    );
}

#[test]
fn pci_id_parsing() {
    assert_eq!(parse_pci_id("10de:2330"), Some((0x10de, 0x2330)));
    assert_eq!(parse_pci_id("0x10DE:0x2330"), Some((0x10de, 0x2330)));
    assert_eq!(parse_pci_id("10de"), None);
    assert_eq!(parse_pci_id("10de:12345"), None);
    assert_eq!(parse_pci_id(":2330"), None);
    assert_eq!(parse_pci_id("zz:2330"), None);
}

#[test]
fn device_sets() {
    let ids = |s: &str| -> Vec<(u32, String)> {
        parse_device_set(s)
            .unwrap()
            .into_iter()
            .map(|(n, e)| (n, e.id.clone()))
            .collect()
    };
    assert_eq!(ids("4xh100-sxm"), [(4, "h100-sxm".to_string())]);
    assert_eq!(ids("8xmi300x"), [(8, "mi300x".to_string())]);
    assert_eq!(
        ids("2xa100-80gb,1xl4"),
        [(2, "a100-80gb".to_string()), (1, "l4".to_string())]
    );
    assert_eq!(
        ids(" 2 x A100-80GB , l4 ,"),
        [(2, "a100-80gb".to_string()), (1, "l4".to_string())]
    );
    assert_eq!(ids("16xtpu-v5e"), [(16, "tpu-v5e".to_string())]);
}

#[test]
fn device_set_errors_name_the_bad_token() {
    assert_eq!(parse_device_set(""), Err(SpecError::EmptyDeviceSet));
    assert_eq!(parse_device_set(" , "), Err(SpecError::EmptyDeviceSet));
    let e = parse_device_set("2xa100-80gb,4xh999").unwrap_err();
    assert!(
        matches!(&e, SpecError::UnknownDevice { token, name, .. } if token == "4xh999" && name == "h999"),
        "{e:?}"
    );
    assert!(e.to_string().contains("\"4xh999\""), "{e}");
    let e = parse_device_set("0xh100-sxm").unwrap_err();
    assert!(matches!(&e, SpecError::BadCount { token } if token == "0xh100-sxm"));
    assert!(e.to_string().contains("0xh100-sxm"));
    let e = parse_device_set("99999999999xh100-sxm").unwrap_err();
    assert!(matches!(e, SpecError::BadCount { .. }));
    let e = parse_device_set("4").unwrap_err();
    assert!(matches!(&e, SpecError::UnknownDevice { token, .. } if token == "4"));
}

#[test]
fn attach_matches_pci_then_name_and_skips_cpu_and_partitions() {
    use crate::model::PciInfo;
    let mut by_pci = Device::new(
        "pci:0000:1b:00.0",
        "3D controller",
        "nvidia",
        Family::Gpu,
        "t",
    );
    by_pci.pci = Some(PciInfo {
        vendor_id: "10de".into(),
        device_id: "2330".into(),
        ..Default::default()
    });
    let by_name = Device::new("gpu0", "NVIDIA L40S", "nvidia", Family::Gpu, "t");
    let cpu = Device::new("cpu", "NVIDIA H100 PCIe", "nvidia", Family::Cpu, "t");
    let mut mig = Device::new("mig0", "NVIDIA H100 80GB HBM3", "nvidia", Family::Gpu, "t");
    mig.parent = Some("gpu0".into());
    let unknown = Device::new("gpu9", "Mystery GPU", "acme", Family::Gpu, "t");
    let mut devs = vec![by_pci, by_name, cpu, mig, unknown];
    attach(&mut devs);
    let got: Vec<_> = devs
        .iter()
        .map(|d| d.spec.as_ref().map(|s| s.id.as_str()))
        .collect();
    assert_eq!(got, [Some("h100-sxm"), Some("l40s"), None, None, None]);
    let s = devs[0].spec.as_ref().unwrap();
    assert_eq!(s.memory_bandwidth_bytes_per_s, Some(3_350_000_000_000));
    assert!(s.source.starts_with("https://"));
}

#[test]
fn spec_ref_serializes_every_dtype_key() {
    let r = by_id("l4").unwrap().to_ref();
    let v = serde_json::to_value(&r).unwrap();
    for d in Dtype::ALL {
        assert!(v["tflops"].get(d.as_str()).is_some(), "{d} missing");
    }
    assert!(v["tflops"]["fp64"].is_null());
    let back: SpecRef = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn lookup_resolves_like_specs_and_lists_ambiguity() {
    // A whole word of one entry resolves.
    assert!(matches!(lookup("4090"), Lookup::Found(e) if e.id == "rtx-4090"));
    assert!(matches!(lookup("RTX 4090"), Lookup::Found(e) if e.id == "rtx-4090"));
    // A word several entries share is ambiguous, listing them.
    let Lookup::Ambiguous(h100) = lookup("h100") else {
        panic!("h100 is ambiguous")
    };
    let ids: Vec<&str> = h100.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["h100-sxm", "h100-pcie", "h100-nvl"]);
    assert!(matches!(lookup("a100"), Lookup::Ambiguous(v) if v.len() == 4));
    // Not a word of any entry: suggestions by the shared matcher.
    let Lookup::NotFound(s) = lookup("mi300") else {
        panic!("mi300 is no entry's word")
    };
    assert!(s.iter().any(|e| e.id == "mi300x"), "{s:?}");
    assert!(
        matches!(lookup("p4"), Lookup::Found(e) if e.id == "tesla-p4"),
        "tesla-p4, not quadro-p400"
    );
    // Device strings use the same lookup.
    let e = parse_device_set("2xh100").unwrap_err();
    assert!(matches!(&e, SpecError::AmbiguousDevice { candidates, .. } if candidates.len() == 3));
    assert!(
        e.to_string().contains("h100-sxm, h100-pcie, h100-nvl"),
        "{e}"
    );
    assert_eq!(parse_device_set("2x4090").unwrap()[0].1.id, "rtx-4090");
    // Model words alone that two products' names carry are ambiguous (the
    // Quadro RTX 6000 and the RTX 6000 Ada); spelled out, each resolves.
    let Lookup::Ambiguous(rtx6000) = lookup("rtx 6000") else {
        panic!("rtx 6000 is ambiguous")
    };
    let mut ids: Vec<&str> = rtx6000.iter().map(|e| e.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["quadro-rtx-6000", "rtx-6000-ada"]);
    assert!(matches!(lookup("Quadro RTX 6000"), Lookup::Found(e) if e.id == "quadro-rtx-6000"));
    assert!(matches!(lookup("rtx 6000 ada"), Lookup::Found(e) if e.id == "rtx-6000-ada"));
    // A laptop part is not what a desktop name without an entry means.
    assert!(matches!(lookup("3080 ti"), Lookup::NotFound(s) if s[0].id == "rtx-3080-ti-laptop"));
    assert!(matches!(lookup("3080 ti laptop"), Lookup::Found(e) if e.id == "rtx-3080-ti-laptop"));
    // A PCI id several products share lists them; one product's resolves.
    let Lookup::Ambiguous(navi31) = lookup("1002:744c") else {
        panic!("1002:744c is shared")
    };
    let mut ids: Vec<&str> = navi31.iter().map(|e| e.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["rx-7900-gre", "rx-7900-xt", "rx-7900-xtx", "rx-7900m"]
    );
    assert!(matches!(lookup("10de:2684"), Lookup::Found(e) if e.id == "rtx-4090"));
}

#[test]
fn device_strings_are_bounded() {
    assert!(parse_device_set("4096xh100-sxm").is_ok());
    for s in [
        "4097xh100-sxm",
        "4000xh100-sxm,97xl4",
        "4000000000xh100-sxm",
    ] {
        let e = parse_device_set(s).unwrap_err();
        assert!(
            matches!(
                e,
                SpecError::TooManyDevices {
                    max: MAX_DEVICES,
                    ..
                }
            ),
            "{s}: {e:?}"
        );
    }
}

/// GPU entries whose cited sources give no memory bandwidth or no 16-bit
/// rate, each with the reason. Every other GPU must carry both (the planner
/// reads them); an id listed here that has both fails the test, so the list
/// shrinks as sources are found.
const GPU_GAPS: &[(&str, &str)] = &[
    (
        "quadro-p400",
        "Pascal, no Tensor cores; datasheet gives no FP16 rate",
    ),
    (
        "quadro-p2000",
        "Pascal, no Tensor cores; datasheet gives no FP16 rate",
    ),
    ("gtx-1070-ti", "product page gives no TFLOPS"),
    (
        "tesla-p40",
        "Pascal GP102, no Tensor cores; NVIDIA states FP32 and INT8 but no FP16 rate",
    ),
    (
        "tesla-p4",
        "Pascal GP104, no Tensor cores; NVIDIA states FP32 and INT8 but no FP16 rate",
    ),
    (
        "gtx-1080-ti",
        "Pascal GP102, no Tensor cores; NVIDIA's Turing table lists its FP16 rate as NA",
    ),
    (
        "titan-xp",
        "Pascal GP102, no Tensor cores; NVIDIA states FP32 but no FP16 rate",
    ),
    (
        "gtx-1070",
        "Pascal GP104, no Tensor cores and no 16-bit rate NVIDIA states (fp32 from its cores and boost clock, bandwidth from its stated bus width and data rate)",
    ),
    (
        "rtx-5060-laptop",
        "no report of NVIDIA's AI TOPS or boost clock for it read (bandwidth from NVIDIA's figures as reported)",
    ),
    ("mi308x", "no public datasheet"),
    (
        "rtx-2070-super-laptop",
        "no report of NVIDIA's boost clock or bus width for it read (cores, memory and data rate from NVIDIA's figures as reported)",
    ),
    (
        "rtx-2080-super-laptop",
        "no report of NVIDIA's boost clock or bus width for it read (cores, memory and data rate from NVIDIA's figures as reported)",
    ),
    (
        "rtx-5050-laptop",
        "no report of NVIDIA's memory data rate, AI TOPS or boost clock for it read (cores, memory and power from NVIDIA's figures as reported)",
    ),
    (
        "rtx-pro-4500",
        "no NVIDIA datasheet or product page readable here: name, PCI id, compute capability and memory from NVIDIA's driver table, CUDA GPUs page and MIG guide",
    ),
    (
        "rtx-pro-4000",
        "no NVIDIA datasheet or product page readable here: name, PCI id and compute capability from NVIDIA's driver table and CUDA GPUs page",
    ),
    (
        "rtx-pro-4000-sff",
        "no NVIDIA datasheet or product page readable here: name, PCI id and compute capability from NVIDIA's driver table and CUDA GPUs page",
    ),
    (
        "rtx-pro-2000",
        "no NVIDIA datasheet or product page readable here: name, PCI id and compute capability from NVIDIA's driver table and CUDA GPUs page",
    ),
    (
        "a2",
        "no NVIDIA datasheet readable here: name, PCI id and compute capability from NVIDIA's driver table and CUDA GPUs page",
    ),
    (
        "a16",
        "no NVIDIA datasheet readable here (its product brief's figures were not): name, PCI id and compute capability from NVIDIA's driver table and CUDA GPUs page",
    ),
    (
        "a800-80gb",
        "no NVIDIA document or NVIDIA-authored table of its bandwidth or rates readable",
    ),
    (
        "a800-80gb-pcie",
        "no NVIDIA document or NVIDIA-authored table of its bandwidth or rates readable",
    ),
    (
        "a800-40gb-active",
        "NVIDIA's product page not readable; no NVIDIA-authored table lists it",
    ),
    (
        "radeon-890m",
        "system memory: its type and speed are the laptop maker's; no AMD memory figure read",
    ),
    (
        "radeon-880m",
        "system memory: its type and speed are the laptop maker's; no AMD memory figure read",
    ),
    (
        "radeon-780m",
        "system memory: its type and speed are the system maker's; no AMD memory figure read",
    ),
    (
        "radeon-760m",
        "system memory: its type and speed are the system maker's; no AMD memory figure read",
    ),
    (
        "m5-gpu",
        "Apple states no rate; the Neural Accelerators' matrix rate is measured on no M5 read, and the one measured clock is article-grade",
    ),
    (
        "m5-pro-gpu",
        "Apple states no rate; no measured clock, and the Neural Accelerators' matrix rate is measured on no M5 read",
    ),
    (
        "m5-max-gpu",
        "Apple states no rate; a measured clock gives the vector FP32 rate only, and the Neural Accelerators' matrix rate (prompts) is measured on no M5 read",
    ),
];

#[test]
fn every_gpu_has_bandwidth_and_a_16_bit_rate_or_a_stated_gap() {
    let mut missing = Vec::new();
    for e in all().iter().filter(|e| e.family == Family::Gpu) {
        let complete = e.memory_bandwidth_bytes_per_s.is_some()
            && (e.tflops.fp16.is_some() || e.tflops.bf16.is_some());
        let gap = GPU_GAPS.iter().find(|(id, _)| *id == e.id);
        match (complete, gap) {
            (true, Some((id, why))) => {
                panic!("{id} is complete now: drop it from GPU_GAPS ({why})")
            }
            (false, None) => missing.push(e.id.as_str()),
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "GPUs without bandwidth or a 16-bit rate: {missing:?}"
    );
    for (id, _) in GPU_GAPS {
        assert!(by_id(id).is_some(), "GPU_GAPS lists unknown id {id}");
    }
}

/// Numbers before a suffix in `text` ("192-bit" -> 192 for "-bit"), as
/// written, distinct.
fn numbers_before(text: &str, suffix: &str) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for (i, _) in text.match_indices(suffix) {
        let head = &text[..i];
        let start = head
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(0, |j| j + 1);
        if let Ok(v) = head[start..].parse::<f64>() {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// Workstation entries whose 16-bit Tensor rate is derived from a stated
/// FP32 rate and the ratio of a sibling's vendor column of the same
/// architecture: Turing Quadro RTX 5000 / 4000 take 8 x FP32 (the Quadro RTX
/// 6000 column of NVIDIA's Turing table: 130.5 / 16.3, i.e. 1024 Tensor FLOPs
/// per SM per clock against 128 FP32), the RTX A5500 4 x FP32 (the GA102
/// whitepaper's RTX A6000 column: 154.8 / 38.7), and INT8 twice that (both
/// columns). Workstation parts run FP32 accumulate at the full rate, so
/// `fp16_acc32` equals `fp16`.
#[test]
fn workstation_rates_derived_from_a_sibling_ratio_hold() {
    let ratio = |id: &str| {
        let t = &by_id(id).unwrap().tflops;
        t.fp16_acc32.unwrap() / t.fp32.unwrap()
    };
    let turing = ratio("quadro-rtx-6000");
    assert!((turing / 8.0 - 1.0).abs() < 0.001, "{turing}");
    let ampere = ratio("rtx-a6000");
    assert!((ampere / 4.0 - 1.0).abs() < 0.001, "{ampere}");
    for id in ["quadro-rtx-6000", "rtx-a6000"] {
        let t = &by_id(id).unwrap().tflops;
        let int8_per_fp16 = t.int8.unwrap() / t.fp16.unwrap();
        assert!(
            (int8_per_fp16 / 2.0 - 1.0).abs() < 0.001,
            "{id}: {int8_per_fp16}"
        );
    }
    for (id, factor) in [
        ("quadro-rtx-5000", 8.0),
        ("quadro-rtx-4000", 8.0),
        ("rtx-a5500", 4.0),
        ("rtx-a1000", 4.0),
        ("rtx-a400", 4.0),
    ] {
        let t = &by_id(id).unwrap().tflops;
        let want = factor * t.fp32.unwrap();
        assert!((t.fp16.unwrap() - want).abs() < 0.006, "{id}: {want}");
        assert_eq!(t.fp16_acc32, t.fp16, "{id}");
        // INT8 Tensor is twice FP16 Tensor in both sibling columns.
        assert!(
            (t.int8.unwrap() - 2.0 * t.fp16.unwrap()).abs() < 0.006,
            "{id}"
        );
        if factor == 4.0 {
            assert_eq!(t.bf16, t.fp16, "{id}: Ampere bf16 runs at the fp16 rate");
        }
    }
    // The RTX A1000 and A400 take FP32 from NVIDIA's CUDA cores and clock as
    // reported: cores x 2 FLOPs x clock.
    for (id, cores, ghz) in [("rtx-a1000", 2304.0, 1.46), ("rtx-a400", 768.0, 1.755)] {
        let fp32 = by_id(id).unwrap().tflops.fp32.unwrap();
        let want = cores * 2.0 * ghz / 1e3;
        assert!((fp32 - want).abs() < 0.006, "{id}: {fp32}, {want:.3}");
    }
    // The Quadro RTX 8000's rates are the Quadro RTX 6000 column's per-SM
    // rates at the same 72 SMs and 1770 MHz (tests/spec_captures.rs checks
    // them against its nvbench header); both columns list FP32 accumulate at
    // the full rate.
    let (six, eight) = (
        &by_id("quadro-rtx-6000").unwrap().tflops,
        &by_id("quadro-rtx-8000").unwrap().tflops,
    );
    assert_eq!(eight.fp16, six.fp16);
    assert_eq!(eight.int8, six.int8);
    assert!((eight.fp32.unwrap() - six.fp32.unwrap()).abs() < 0.05);
}

/// Where an entry's notes state one memory bus width ("192-bit") and one
/// per-pin data rate ("12 Gbps"), its bandwidth is width x rate / 8: the
/// product-page derivation the GTX 16 entries use, and what every entry that
/// quotes both figures beside a stated bandwidth agrees with.
#[test]
fn bandwidth_agrees_with_stated_bus_width_and_data_rate() {
    let mut checked = Vec::new();
    for e in all() {
        let Some(n) = e.notes.as_deref() else {
            continue;
        };
        let (bits, gbps) = (numbers_before(n, "-bit"), numbers_before(n, " Gbps"));
        if bits.len() != 1 || gbps.len() != 1 {
            continue;
        }
        let want = bits[0] * gbps[0] / 8.0 * 1e9;
        let got = e.memory_bandwidth_bytes_per_s.unwrap_or_else(|| {
            panic!(
                "{}: states {bits:?}-bit and {gbps:?} Gbps but no bandwidth",
                e.id
            )
        });
        assert!(
            (got as f64 - want).abs() < 1.0,
            "{}: {got} B/s, {}-bit x {} Gbps / 8 = {want}",
            e.id,
            bits[0],
            gbps[0]
        );
        checked.push(e.id.as_str());
    }
    for id in [
        "gtx-1660",
        "gtx-1660-ti",
        "gtx-1660-super",
        "gtx-1070-ti",
        "rtx-3090-ti",
    ] {
        assert!(checked.contains(&id), "{id} not checked: {checked:?}");
    }
    assert_eq!(
        by_id("gtx-1660").unwrap().memory_bandwidth_bytes_per_s,
        Some(192_000_000_000)
    );
    assert_eq!(
        by_id("gtx-1660-ti").unwrap().memory_bandwidth_bytes_per_s,
        Some(288_000_000_000)
    );
    assert_eq!(
        by_id("gtx-1660-super")
            .unwrap()
            .memory_bandwidth_bytes_per_s,
        Some(336_000_000_000)
    );
}

#[test]
fn fp32_accumulate_rate_is_set_for_geforce_rtx_and_consistent() {
    for e in all() {
        let t = &e.tflops;
        if let Some(acc32) = t.fp16_acc32 {
            let sixteen = t.fp16.or(t.bf16).expect("fp16_acc32 without a 16-bit rate");
            assert!(
                acc32 > 0.0 && acc32 <= sixteen + 1e-9,
                "{}: fp16_acc32 {acc32} above the 16-bit rate {sixteen}",
                e.id
            );
        }
        // GeForce RTX parts are where the FP32-accumulate rate differs from the
        // FP16-accumulate one: every such entry with a 16-bit rate states it.
        if e.name.contains("GeForce RTX") && (t.fp16.is_some() || t.bf16.is_some()) {
            assert!(
                t.fp16_acc32.is_some(),
                "{}: GeForce RTX without fp16_acc32",
                e.id
            );
        }
    }
    let r4090 = by_id("rtx-4090").unwrap();
    assert_eq!(r4090.tflops.fp16_acc32, Some(165.2));
    assert_eq!(by_id("rtx-5080").unwrap().tflops.fp16_acc32, Some(112.6));
}

/// GeForce entries whose rates are derived from NVIDIA's SM count and boost
/// clock (as reported by the press) and the per-SM rates of the architecture
/// whitepaper's GeForce columns: GA102 v2 (RTX 3090/3080/3070) and Ada (RTX
/// 4090) both give, per SM per clock, 256 FP32 FLOPs, 512 FP16/BF16 Tensor
/// FLOPs with FP32 accumulate and 2048 INT8 Tensor operations (Ada: 1024 FP8),
/// dense. Each entry's notes state its SMs and clock; laptops are at the top
/// of NVIDIA's stated boost range.
#[test]
fn geforce_rates_derived_from_sms_and_boost_clock() {
    // (id, SMs, boost clock in GHz)
    const DERIVED: &[(&str, f64, f64)] = &[
        ("rtx-3060-laptop", 30.0, 1.703),
        ("rtx-3070-laptop", 40.0, 1.62),
        ("rtx-3080-laptop", 48.0, 1.71),
        ("rtx-3070-ti-laptop", 46.0, 1.485),
        ("rtx-3080-ti-laptop", 58.0, 1.59),
        ("rtx-3050-ti-laptop", 20.0, 1.695),
        ("rtx-3050-laptop", 16.0, 1.74),
        ("rtx-3080-12gb", 70.0, 1.71),
        ("rtx-3050-8gb", 20.0, 1.777),
        ("rtx-3050-6gb", 18.0, 1.47),
        ("rtx-2050", 16.0, 1.477),
        ("rtx-3090-ti", 84.0, 1.86),
        ("rtx-4090-d", 114.0, 2.52),
    ];
    let near = |got: Option<f64>, want: f64, what: &str, id: &str| {
        let got = got.unwrap_or_else(|| panic!("{id}: no {what}"));
        // Stored to two decimals (fp32 40.0 for 39.997).
        assert!(
            (got - want).abs() < 0.011,
            "{id}: {what} {got}, derived {want:.3}"
        );
    };
    for &(id, sms, ghz) in DERIVED {
        let e = by_id(id).unwrap_or_else(|| panic!("{id} missing"));
        let t = &e.tflops;
        let per_sm = |ops: f64| sms * ops * ghz / 1000.0;
        near(t.fp32, per_sm(256.0), "fp32", id);
        near(t.tf32, per_sm(256.0), "tf32", id);
        near(t.fp16, per_sm(512.0), "fp16", id);
        near(t.bf16, per_sm(512.0), "bf16", id);
        near(t.fp16_acc32, per_sm(512.0), "fp16_acc32", id);
        near(t.int8, per_sm(2048.0), "int8", id);
        if e.architecture.as_deref() == Some("8.9") {
            near(t.fp8, per_sm(1024.0), "fp8", id);
        }
        let notes = e.notes.as_deref().unwrap_or_default();
        let sm_text = format!("{} x 512 x {ghz} GHz", sms as u32);
        assert!(
            notes.contains(&sm_text),
            "{id}: notes do not state {sm_text:?}"
        );
    }
    // Turing (the RTX 20 laptop parts): 64 FP32 cores per SM, and the same
    // 512 / 2048 Tensor rates per SM (Turing whitepaper columns); no TF32 or
    // BF16.
    const TURING: &[(&str, f64, f64)] = &[
        ("rtx-2080-laptop", 46.0, 1.59),
        ("rtx-2070-laptop", 36.0, 1.44),
        ("rtx-2060-laptop", 30.0, 1.2),
    ];
    for &(id, sms, ghz) in TURING {
        let e = by_id(id).unwrap_or_else(|| panic!("{id} missing"));
        let t = &e.tflops;
        let per_sm = |ops: f64| sms * ops * ghz / 1000.0;
        near(t.fp32, per_sm(128.0), "fp32", id);
        near(t.fp16, per_sm(512.0), "fp16", id);
        near(t.fp16_acc32, per_sm(512.0), "fp16_acc32", id);
        near(t.int8, per_sm(2048.0), "int8", id);
        assert_eq!((t.tf32, t.bf16), (None, None), "{id}");
        let notes = e.notes.as_deref().unwrap_or_default();
        assert!(
            notes.contains(&format!("{} x 512 x {ghz} GHz", sms as u32)),
            "{id}"
        );
    }
    let r2080 = by_id("rtx-2080").unwrap();
    assert!((46.0 * 512.0 * 1.8 / 1000.0 - r2080.tflops.fp16.unwrap()).abs() < 0.1);
    // Turing without Tensor Cores (the GTX 16 cards, TU116): 64 FP32 cores
    // per SM, and FP16 arithmetic at twice the FP32 rate (CUDA Programming
    // Guide throughput table, compute capability 7.x: 128 FP16 against 64
    // FP32 results per clock per SM), so 256 FP16 FLOPs per SM per clock.
    // No Tensor, bf16, int8 or FP32-accumulate rate.
    const TURING_NO_TENSOR: &[(&str, f64, f64)] = &[
        ("gtx-1660-ti", 24.0, 1.77),
        ("gtx-1660", 22.0, 1.785),
        ("gtx-1660-super", 22.0, 1.785),
    ];
    for &(id, sms, ghz) in TURING_NO_TENSOR {
        let e = by_id(id).unwrap_or_else(|| panic!("{id} missing"));
        let t = &e.tflops;
        let per_sm = |ops: f64| sms * ops * ghz / 1000.0;
        near(t.fp32, per_sm(128.0), "fp32", id);
        near(t.fp16, per_sm(256.0), "fp16", id);
        assert_eq!(
            (t.tf32, t.bf16, t.int8, t.fp16_acc32),
            (None, None, None, None),
            "{id}"
        );
        let notes = e.notes.as_deref().unwrap_or_default();
        assert!(
            notes.contains(&format!("{} x 256 x {ghz} GHz", sms as u32)),
            "{id}"
        );
        assert!(notes.contains("128 FP16"), "{id}: the 2x ratio's source");
    }
    // Pascal (GP104, the GTX 1070): 128 FP32 cores per SM at NVIDIA's boost
    // clock; no Tensor Cores and no 16-bit rate NVIDIA states.
    let g1070 = by_id("gtx-1070").unwrap();
    near(
        g1070.tflops.fp32,
        15.0 * 256.0 * 1.683 / 1000.0,
        "fp32",
        "gtx-1070",
    );
    assert_eq!((g1070.tflops.fp16, g1070.tflops.bf16), (None, None));
    assert!(
        g1070
            .notes
            .as_deref()
            .unwrap_or_default()
            .contains("15 x 128 x 2 x 1.683 GHz")
    );
    // Turing laptop parts print the desktop card's name: by name that is the
    // desktop card, by PCI id the laptop part.
    assert_eq!(
        by_name("NVIDIA GeForce RTX 2060").map(|e| e.id.as_str()),
        Some("rtx-2060")
    );
    assert_eq!(
        by_pci_id(0x10de, 0x1f11).map(|e| e.id.as_str()),
        Some("rtx-2060-laptop")
    );
    // The whitepaper columns the per-SM rates come from reproduce themselves.
    let r3080 = by_id("rtx-3080").unwrap();
    assert!((68.0 * 512.0 * 1.71 / 1000.0 - r3080.tflops.fp16.unwrap()).abs() < 0.1);
    let r4090 = by_id("rtx-4090").unwrap();
    assert!((128.0 * 512.0 * 2.52 / 1000.0 - r4090.tflops.fp16.unwrap()).abs() < 0.1);
    // A 3080 12GB by name alone is the 10 GB card's name; its PCI id picks it.
    assert_eq!(
        by_name("NVIDIA GeForce RTX 3080").map(|e| e.id.as_str()),
        Some("rtx-3080")
    );
    assert_eq!(
        by_name("NVIDIA GeForce RTX 3080 12GB").map(|e| e.id.as_str()),
        Some("rtx-3080-12gb")
    );
    assert_eq!(
        by_pci_id(0x10de, 0x220a).map(|e| e.id.as_str()),
        Some("rtx-3080-12gb")
    );
    // Both RTX 3050 desktop cards print "NVIDIA GeForce RTX 3050": the name
    // alone names neither, the PCI id each.
    assert_eq!(by_name("NVIDIA GeForce RTX 3050"), None);
    assert_eq!(
        by_pci_id(0x10de, 0x2584).map(|e| e.id.as_str()),
        Some("rtx-3050-6gb")
    );
    assert_eq!(
        by_pci_id(0x10de, 0x2582).map(|e| e.id.as_str()),
        Some("rtx-3050-8gb")
    );
    // Parts added from NVIDIA's driver name table and system files (Nov
    // 2026): the names nvidia-smi prints and the PCI ids resolve to them,
    // and the 12 GB RTX 2060, which prints the 6 GB card's name, by its id.
    for (name, id) in [
        ("NVIDIA H20-3e", "h20-3e"),
        ("NVIDIA H20", "h20"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA A800-SXM4-80GB", "a800-80gb"),
        ("NVIDIA A800 80GB PCIe", "a800-80gb-pcie"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "rtx-pro-6000-server",
        ),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "rtx-pro-6000",
        ),
    ] {
        assert_eq!(by_name(name).map(|e| e.id.as_str()), Some(id), "{name}");
    }
    for (device, id) in [
        (0x232c, "h20-3e"),
        (0x2329, "h20"),
        (0x233b, "h200-nvl"),
        (0x20f3, "a800-80gb"),
        (0x20f6, "a800-40gb-active"),
        (0x2bb5, "rtx-pro-6000-server"),
        (0x2bb1, "rtx-pro-6000"),
        (0x1f03, "rtx-2060-12gb"),
        (0x2c02, "rtx-5080"),
        (0x2d83, "rtx-5050"),
        (0x2c58, "rtx-5090-laptop"),
    ] {
        assert_eq!(
            by_pci_id(0x10de, device).map(|e| e.id.as_str()),
            Some(id),
            "{device:04x}"
        );
    }
    // The 3080 Laptop GPU's 16 GB configuration plans with its own memory.
    assert_eq!(
        by_id("rtx-3080-laptop-16gb").and_then(|e| e.memory_bytes),
        Some(16 << 30)
    );
}

#[test]
fn model_numbers_pick_the_base_product_and_variants_stay_distinct() {
    // A bare model number is the base product, not its SUPER / Ti / laptop kin.
    for (q, id) in [
        ("4080", "rtx-4080"),
        ("rtx 4080", "rtx-4080"),
        ("4080 super", "rtx-4080-super"),
        ("rtx-4080-super", "rtx-4080-super"),
        ("4070", "rtx-4070"),
        ("4070 ti", "rtx-4070-ti"),
        ("4070 ti super", "rtx-4070-ti-super"),
        ("5070", "rtx-5070"),
        ("NVIDIA GeForce RTX 5070 Ti", "rtx-5070-ti"),
        ("3060", "rtx-3060"),
        ("rtx-3060-laptop", "rtx-3060-laptop"),
        ("4090", "rtx-4090"),
        ("4090 laptop", "rtx-4090-laptop"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "rtx-4090-laptop"),
        ("rtx-5070-ti-laptop", "rtx-5070-ti-laptop"),
        ("5070 ti", "rtx-5070-ti"),
        // Workstation parts: the name a tool prints, and short forms.
        ("rtx pro 6000", "rtx-pro-6000"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "rtx-pro-6000",
        ),
        ("rtx-pro-6000-max-q", "rtx-pro-6000-max-q"),
        ("NVIDIA RTX 5000 Ada Generation", "rtx-5000-ada"),
        ("NVIDIA RTX A2000 12GB", "rtx-a2000-12gb"),
        ("NVIDIA RTX A2000", "rtx-a2000-6gb"),
        ("a5000", "rtx-a5000"),
        // Radeon: the same rule.
        ("9070", "rx-9070"),
        ("9070 xt", "rx-9070-xt"),
        ("6800", "rx-6800"),
        ("AMD Radeon RX 7900 GRE", "rx-7900-gre"),
        ("w6800", "radeon-pro-w6800"),
        // Unified-memory systems.
        ("NVIDIA GB10", "gb10"),
        ("dgx spark", "gb10"),
        ("jetson agx orin 64gb", "jetson-agx-orin-64gb"),
        ("NVIDIA Jetson AGX Orin 32GB", "jetson-agx-orin-32gb"),
        ("jetson orin nano 8gb", "jetson-orin-nano-8gb"),
        ("NVIDIA Jetson Orin Nano 4GB", "jetson-orin-nano-4gb"),
        ("jetson-orin-nx-16gb", "jetson-orin-nx-16gb"),
        ("NVIDIA Jetson Orin NX 8GB", "jetson-orin-nx-8gb"),
        ("AMD Ryzen AI Max+ 395", "radeon-8060s"),
        ("ryzen-ai-max-395-128gb", "ryzen-ai-max-395-128gb"),
    ] {
        assert!(
            matches!(lookup(q), Lookup::Found(e) if e.id == id),
            "{q} -> {:?}",
            lookup(q)
        );
    }
    assert!(matches!(lookup("7900"), Lookup::Ambiguous(v) if v.len() == 3));
    // Jetson modules of one name differ in memory and GPU: the bare name lists them.
    for (q, want) in [
        ("agx orin", ["jetson-agx-orin-64gb", "jetson-agx-orin-32gb"]),
        (
            "orin nano",
            ["jetson-orin-nano-8gb", "jetson-orin-nano-4gb"],
        ),
        ("orin nx", ["jetson-orin-nx-16gb", "jetson-orin-nx-8gb"]),
    ] {
        let Lookup::Ambiguous(v) = lookup(q) else {
            panic!("{q} names two modules: {:?}", lookup(q))
        };
        let mut ids: Vec<&str> = v.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        let mut want = want.to_vec();
        want.sort_unstable();
        assert_eq!(ids, want, "{q}");
    }
    // Memory sizes of one model are distinct products: the bare name lists both.
    let Lookup::Ambiguous(v) = lookup("5060 ti") else {
        panic!("5060 ti has two memory sizes")
    };
    let ids: Vec<&str> = v.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["rtx-5060-ti-16gb", "rtx-5060-ti-8gb"]);
    assert_eq!(
        by_name("NVIDIA GeForce RTX 4060 Ti 16GB").map(|e| e.id.as_str()),
        Some("rtx-4060-ti-16gb")
    );
    let e = parse_device_set("2x4060-ti").unwrap_err();
    assert!(
        e.to_string().contains("rtx-4060-ti-8gb, rtx-4060-ti-16gb"),
        "{e}"
    );
}

#[test]
fn memory_configurations_have_unique_ids_and_resolve() {
    let mut seen: HashMap<String, String> = HashMap::new();
    for e in all() {
        for n in std::iter::once(&e.id).chain(&e.aliases) {
            seen.insert(n.to_ascii_lowercase(), e.id.clone());
        }
    }
    for e in all().iter().filter(|e| !e.configs.is_empty()) {
        let default = e
            .memory_bytes
            .expect("an entry with configurations states its default");
        assert!(
            e.configs.iter().any(|c| c.memory_bytes == default
                && c.memory_bandwidth_bytes_per_s
                    .is_none_or(|b| Some(b) == e.memory_bandwidth_bytes_per_s)),
            "{}: the default memory is none of its configurations",
            e.id
        );
        for c in &e.configs {
            assert!(
                c.id.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
                    && c.id.ends_with("gb"),
                "{}: config id {:?}",
                e.id,
                c.id
            );
            assert_eq!(c.memory_bytes % (1 << 30), 0, "{}", c.id);
            if let Some(prev) = seen.insert(c.id.clone(), e.id.clone()) {
                panic!("config id {} of {} is already {prev}", c.id, e.id);
            }
            let v = by_id(&c.id).unwrap();
            assert_eq!(v.memory_bytes, Some(c.memory_bytes));
            assert_eq!((v.vendor.as_str(), v.family), (e.vendor.as_str(), e.family));
            assert!(v.configs.is_empty());
        }
    }
}

#[test]
fn apple_ids_pick_a_memory_configuration() {
    const GIB: u64 = 1 << 30;
    // The bare id plans with the stated default configuration.
    let max = by_id("m3-max-gpu").unwrap();
    assert_eq!(max.memory_bytes, Some(48 * GIB));
    assert_eq!(max.memory_bandwidth_bytes_per_s, Some(400_000_000_000));
    assert!(matches!(lookup("m3 max"), Lookup::Found(e) if e.id == "m3-max-gpu"));
    // A suffix picks one; the 30-core M3 Max has less bandwidth.
    let big = by_id("m3-max-128gb").unwrap();
    assert_eq!(
        (big.memory_bytes, big.memory_bandwidth_bytes_per_s),
        (Some(128 * GIB), Some(400_000_000_000))
    );
    let small = by_id("M3-Max-36GB").unwrap();
    assert_eq!(
        (small.memory_bytes, small.memory_bandwidth_bytes_per_s),
        (Some(36 * GIB), Some(300_000_000_000))
    );
    assert_eq!(small.compute_units, Some(30));
    assert_eq!(small.name, "Apple M3 Max GPU (30-core, 36 GB)");
    // Device strings take them like any id.
    let set = parse_device_set("m4-max-128gb,2xm2-ultra-192gb").unwrap();
    assert_eq!(set[0].1.memory_bytes, Some(128 * GIB));
    assert_eq!(set[0].1.memory_bandwidth_bytes_per_s, Some(546_000_000_000));
    assert_eq!((set[1].0, set[1].1.memory_bytes), (2, Some(192 * GIB)));
    assert!(matches!(lookup("m3-max-128gb"), Lookup::Found(e) if e.id == "m3-max-128gb"));
    // A name with a memory size picks the configuration too.
    assert_eq!(
        by_name("Apple M3 Max 128GB").map(|e| e.id.as_str()),
        Some("m3-max-128gb")
    );
    assert!(matches!(lookup("M3 Max 36GB"), Lookup::Found(e) if e.id == "m3-max-36gb"));
    assert_eq!(by_name("Apple M3 Max 256GB"), None);
    // A size Apple does not sell is no id.
    assert!(by_id("m3-max-256gb").is_none());
    assert!(matches!(lookup("m3-max-256gb"), Lookup::NotFound(_)));
    // Detection: the detected memory picks the configuration.
    let mut d = Device::new("gpu0", "Apple M3 Max", "apple", Family::Gpu, "t");
    d.memory_bytes = Some(36 * GIB);
    assert_eq!(match_device(&d).map(|e| e.id.as_str()), Some("m3-max-36gb"));
    d.memory_bytes = Some(40 * GIB);
    assert_eq!(match_device(&d).map(|e| e.id.as_str()), Some("m3-max-gpu"));
    // Where the tool reports GPU cores, they pick among configurations of
    // one memory size; without them the first listed (the full GPU) stands.
    let mut d = Device::new("gpu0", "Apple M1 Max", "apple", Family::Gpu, "t");
    d.memory_bytes = Some(32 * GIB);
    assert_eq!(match_device(&d).map(|e| e.id.as_str()), Some("m1-max-32gb"));
    d.compute_units = Some(24);
    assert_eq!(
        match_device(&d).map(|e| e.id.as_str()),
        Some("m1-max-24core-32gb")
    );
    d.compute_units = Some(20);
    assert_eq!(match_device(&d).map(|e| e.id.as_str()), Some("m1-max-32gb"));
}

#[test]
fn unified_memory_is_marked() {
    for e in all() {
        let says = e
            .memory_type
            .as_deref()
            .is_some_and(|t| t.contains("(unified)"));
        assert_eq!(
            e.unified_memory, says,
            "{}: unified_memory vs memory_type",
            e.id
        );
    }
    for id in [
        "gb10",
        "jetson-agx-orin-64gb",
        "m3-max-gpu",
        "m3-max-128gb",
        "radeon-8060s",
    ] {
        assert!(by_id(id).unwrap().unified_memory, "{id}");
    }
    assert!(!by_id("rtx-4090").unwrap().unified_memory);
}

#[test]
fn gpu_core_variants_are_configurations_with_their_own_rate() {
    const GIB: u64 = 1 << 30;
    // The 24-core M1 Max: same memory sizes and bandwidth as the 32-core
    // one, its own id and rate (cores x 128 ALUs x 2 x 1.296 GHz).
    let small = by_id("m1-max-24core-32gb").unwrap();
    assert_eq!(small.memory_bytes, Some(32 * GIB));
    assert_eq!(small.memory_bandwidth_bytes_per_s, Some(400_000_000_000));
    assert_eq!(small.compute_units, Some(24));
    assert_eq!(small.tflops.fp16, Some(7.96));
    assert_eq!(small.name, "Apple M1 Max GPU (24-core, 32 GB)");
    let big = by_id("m1-max-32gb").unwrap();
    assert_eq!(
        (big.compute_units, big.tflops.fp16),
        (Some(32), Some(10.62))
    );
    // The bare id is the full GPU; a detected 32 GB M1 Max is the 32-core
    // configuration (listed first) unless a tool says otherwise.
    assert_eq!(by_id("m1-max-gpu").unwrap().tflops.fp32, Some(10.62));
    assert_eq!(
        config_for(by_id("m1-max-gpu").unwrap(), 32 * GIB).map(|e| e.id.as_str()),
        Some("m1-max-32gb")
    );
    // M3 Max: 30-core (36 / 96 GB) and 40-core GPUs, fp32 from the measured
    // 1.380 GHz clock (cores x 128 x 2 x 1.380 GHz), fp16 the same.
    let m3_30 = by_id("m3-max-36gb").unwrap();
    assert_eq!(
        (m3_30.compute_units, m3_30.tflops.fp32),
        (Some(30), Some(10.6))
    );
    assert_eq!(m3_30.tflops.fp16, Some(10.6));
    let m3_40 = by_id("m3-max-48gb").unwrap();
    assert_eq!(
        (m3_40.compute_units, m3_40.tflops.fp32),
        (Some(40), Some(14.13))
    );
    assert_eq!(by_id("m3-max-gpu").unwrap().tflops.fp32, Some(14.13));
    assert_eq!(by_id("m3-16gb").unwrap().tflops.fp32, Some(3.43));
    assert_eq!(by_id("m4-pro-48gb").unwrap().tflops.fp32, Some(8.08));
    let set = parse_device_set("1xm1-7core-8gb,2xm2-ultra-60core-192gb").unwrap();
    assert_eq!(set[0].1.tflops.fp32, Some(2.29));
    assert_eq!((set[1].0, set[1].1.tflops.fp32), (2, Some(21.47)));
}

#[test]
fn device_strings_resolve_every_name_exactly_as_specs_does() {
    // `ai-hwaccel specs QUERY` and `--devices 1xQUERY` both go through
    // `lookup`; check it over every id, configuration id, name and alias
    // and the short queries people type, so that they cannot drift apart
    // (issue 16: `specs rtx-4080` once found a part `--devices` rejected).
    let mut queries: Vec<String> = vec![
        "4080".into(),
        "rtx 4080".into(),
        "h100".into(),
        "5060 ti".into(),
        "m1 max".into(),
        "M1 Max 32GB".into(),
    ];
    for e in all() {
        queries.push(e.id.clone());
        queries.push(e.name.clone());
        queries.extend(e.aliases.iter().cloned());
        queries.extend(e.configs.iter().map(|c| c.id.clone()));
    }
    for q in &queries {
        // A name containing a comma cannot be one device-string item.
        if q.contains(',') {
            continue;
        }
        let set = parse_device_set(&format!("1x{q}"));
        match (lookup(q), set) {
            (Lookup::Found(e), Ok(set)) => {
                assert_eq!(set.len(), 1, "{q}");
                assert_eq!(set[0].1.id, e.id, "{q}");
            }
            (Lookup::Ambiguous(all), Err(SpecError::AmbiguousDevice { candidates, .. })) => {
                let ids: Vec<String> = all.iter().map(|e| e.id.clone()).collect();
                assert_eq!(candidates, ids, "{q}");
                assert!(ids.len() > 1, "{q}");
            }
            (l, s) => panic!("{q}: specs finds {l:?}, --devices gives {s:?}"),
        }
    }
    // Every id, configuration id and full name resolves to one entry.
    for e in all() {
        assert!(
            matches!(lookup(&e.id), Lookup::Found(f) if f.id == e.id),
            "{}",
            e.id
        );
        for c in &e.configs {
            assert!(
                matches!(lookup(&c.id), Lookup::Found(f) if f.id == c.id),
                "{}",
                c.id
            );
        }
    }
    assert!(matches!(lookup("rtx-4080"), Lookup::Found(e) if e.id == "rtx-4080"));
    let err = parse_device_set("2xh100").unwrap_err();
    assert!(err.to_string().contains("h100-sxm"), "{err}");
}

#[test]
fn memory_configurations_of_one_chip_are_the_same_chip() {
    assert_eq!(base_of("m3-max-128gb").unwrap().id, "m3-max-gpu");
    assert_eq!(base_of("M3-MAX-GPU").unwrap().id, "m3-max-gpu");
    assert!(base_of("no-such-part").is_none());
    assert!(same_chip("ryzen-ai-max-395-64gb", "ryzen-ai-max-395-128gb"));
    assert!(same_chip("radeon-8060s", "ryzen-ai-max-395-128gb"));
    assert!(same_chip("m1-max-32gb", "m1-max-64gb"));
    // Same product, another GPU core count: another chip.
    assert!(!same_chip("m1-max-24core-32gb", "m1-max-32gb"));
    // Different products.
    assert!(!same_chip("rtx-4090", "rtx-4080"));
    assert!(!same_chip("rtx-4090", "no-such-part"));
}

#[test]
fn vgpu_profiles_are_told_from_gpu_names() {
    for n in [
        "GRID P4-1Q",
        "GRID T4-16Q",
        "NVIDIA A100-4C",
        "NVIDIA L4-24Q",
        "GRID M60-0B",
        "GRID A100-2-10C",
        "GRID-T4-16Q",
        "grid t4-16q",
    ] {
        assert!(is_vgpu_profile(n), "{n}");
    }
    for n in [
        "Tesla P4",
        "NVIDIA A100-SXM4-40GB",
        "NVIDIA A100-SXM4-80GB MIG 1g.10gb",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA GeForce RTX 3050-A",
        "GRID K520",
        "NVIDIA A10-",
        "nvidia a100-sxm4-40gb",
        "Tesla V100-SXM2-32GB",
    ] {
        assert!(!is_vgpu_profile(n), "{n}");
    }
}

/// The parts added in Nov 2026 resolve by the names NVIDIA's driver prints
/// and by PCI id, and a name that contains another (the SFF Edition, the
/// Max-Q laptop SUPER parts) keeps its own entry; an 8 GB RTX 3060, which
/// tools name as the 12 GB card, takes its own bandwidth from the detected
/// memory.
#[test]
fn parts_added_in_nov_2026_resolve_apart() {
    for (name, id) in [
        ("NVIDIA RTX PRO 4000 Blackwell", "rtx-pro-4000"),
        (
            "NVIDIA RTX PRO 4000 Blackwell SFF Edition",
            "rtx-pro-4000-sff",
        ),
        ("NVIDIA RTX PRO 4500 Blackwell", "rtx-pro-4500"),
        ("NVIDIA RTX PRO 2000 Blackwell", "rtx-pro-2000"),
        ("NVIDIA A2", "a2"),
        ("NVIDIA A16", "a16"),
        ("NVIDIA RTX A2000", "rtx-a2000-6gb"),
        ("NVIDIA GeForce RTX 2050", "rtx-2050"),
        ("NVIDIA GeForce RTX 5050 Laptop GPU", "rtx-5050-laptop"),
        ("NVIDIA GeForce RTX 5050", "rtx-5050"),
        (
            "NVIDIA GeForce RTX 2070 Super with Max-Q Design",
            "rtx-2070-super-laptop",
        ),
        ("NVIDIA GeForce RTX 2080 SUPER", "rtx-2080-super"),
    ] {
        assert_eq!(by_name(name).map(|e| e.id.as_str()), Some(id), "{name}");
    }
    for (device, id) in [
        (0x2c34, "rtx-pro-4000"),
        (0x2c33, "rtx-pro-4000-sff"),
        (0x25a9, "rtx-2050"),
        (0x1e91, "rtx-2070-super-laptop"),
        (0x1ed3, "rtx-2080-super-laptop"),
        (0x2d98, "rtx-5050-laptop"),
    ] {
        assert_eq!(
            by_pci_id(0x10de, device).map(|e| e.id.as_str()),
            Some(id),
            "{device:04x}"
        );
    }
    // The A2 and A16 share one PCI id: the name the driver prints picks.
    let shared: Vec<&str> = by_pci_id_all(0x10de, 0x25b6)
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(shared, ["a2", "a16"]);
    let mut d = Device::new("gpu0", "NVIDIA A16", "nvidia", Family::Gpu, "t");
    d.pci = Some(crate::model::PciInfo {
        vendor_id: "10de".into(),
        device_id: "25b6".into(),
        ..Default::default()
    });
    assert_eq!(match_device(&d).map(|e| e.id.as_str()), Some("a16"));
    // A laptop SUPER part's driver name is the desktop card's but for
    // letter case: its PCI id picks the laptop entry.
    let mut d = Device::new(
        "gpu0",
        "NVIDIA GeForce RTX 2070 Super",
        "nvidia",
        Family::Gpu,
        "t",
    );
    d.pci = Some(crate::model::PciInfo {
        vendor_id: "10de".into(),
        device_id: "1e91".into(),
        ..Default::default()
    });
    assert_eq!(
        match_device(&d).map(|e| e.id.as_str()),
        Some("rtx-2070-super-laptop")
    );
    // An 8 GB RTX 3060: 240 GB/s, the 12 GB card's rates.
    let mut d = Device::new(
        "gpu0",
        "NVIDIA GeForce RTX 3060",
        "nvidia",
        Family::Gpu,
        "t",
    );
    d.memory_bytes = Some(8 << 30);
    let e = match_device(&d).unwrap();
    assert_eq!(e.id, "rtx-3060-8gb");
    assert_eq!(e.memory_bandwidth_bytes_per_s, Some(240_000_000_000));
    assert_eq!(e.tflops, by_id("rtx-3060").unwrap().tflops);
    d.memory_bytes = Some(12 << 30);
    assert_eq!(
        match_device(&d).and_then(|e| e.memory_bandwidth_bytes_per_s),
        Some(360_048_000_000)
    );
}
