//! Spec entries derived from real captures of NVIDIA's device-query tools
//! (`tests/fixtures/spec-captures`, provenance in `tests/fixtures/SOURCES.md`)
//! hold exactly what their notes' formulas give from those captures:
//! memory bandwidth = 2 × memory clock × bus width / 8 (NVIDIA's formula for
//! peak bandwidth from device properties), FP32 = SMs × FP32 cores per SM ×
//! 2 × clock, FP16 Tensor with FP32 accumulate = SMs × 512 × clock and INT8 =
//! SMs × 2048 × clock (the per-SM rates of the Turing and GA102 whitepaper
//! columns the database already carries, which this test also re-derives).

#![allow(
    clippy::disallowed_methods,
    reason = "a test reading its own fixture files, not machine probing"
)]

use ai_hwaccel::spec::by_id;
use std::path::Path;

/// What one capture says of its card.
#[derive(Debug, Default)]
struct Capture {
    name: String,
    sms: Option<f64>,
    cores_per_sm: Option<f64>,
    clock_mhz: Option<f64>,
    mem_clock_mhz: Option<f64>,
    bus_bits: Option<f64>,
}

/// The first number in `s` (digits and one dot).
fn number(s: &str) -> Option<f64> {
    let start = s.find(|c: char| c.is_ascii_digit())?;
    let rest = &s[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// deviceQuery / deviceQueryDrv (lines possibly inside a `// ` comment),
/// nvbench's device header and clpeak's device block.
fn parse(text: &str) -> Capture {
    let mut c = Capture::default();
    for raw in text.lines() {
        let l = raw.trim().trim_start_matches("//").trim();
        let after = |k: &str| l.strip_prefix(k).map(str::trim);
        if let Some(v) = l
            .strip_prefix("Device 0: \"")
            .and_then(|v| v.split('"').next())
        {
            c.name = v.to_string();
        } else if let Some(v) = l.strip_prefix("## [0] `").and_then(|v| v.split('`').next()) {
            c.name = v.to_string();
        } else if let Some(v) = after("Device:") {
            c.name = v.to_string();
        } else if l.contains("Multiprocessors,") && l.contains("CUDA Cores/MP") {
            // "(040) Multiprocessors, (064) CUDA Cores/MP:  2560 CUDA Cores"
            let mut parts = l.split(')');
            c.sms = parts.next().and_then(number);
            c.cores_per_sm = parts.next().and_then(number);
        } else if let Some(v) = after("GPU Max Clock rate:") {
            c.clock_mhz = number(v);
        } else if let Some(v) = after("Memory Clock rate:") {
            c.mem_clock_mhz = number(v);
        } else if let Some(v) = after("Memory Bus Width:") {
            c.bus_bits = number(v);
        } else if let Some(v) = after("* Number of SMs:") {
            c.sms = number(v);
        } else if let Some(v) = after("* SM Default Clock Rate:") {
            c.clock_mhz = number(v);
        } else if let Some(v) = after("* Global Memory Bus Peak:") {
            // "448 GB/sec (256-bit DDR @7001MHz)"
            let inside = v.split('(').nth(1).unwrap_or("");
            c.bus_bits = number(inside);
            c.mem_clock_mhz = inside.split('@').nth(1).and_then(number);
        } else if let Some(v) = after("Device Name:") {
            // A cudaGetDeviceProperties print: "Device Name: …",
            // "Multiprocessor Count: 16", "Clock Rate: 1500.00 MHz",
            // "Memory Clock Rate: 6001.00 MHz" (its bus width line is
            // deviceQuery's, read above).
            c.name = v.to_string();
        } else if let Some(v) = after("Multiprocessor Count:") {
            c.sms = number(v);
        } else if let Some(v) = after("Memory Clock Rate:") {
            c.mem_clock_mhz = number(v);
        } else if let Some(v) = after("Clock Rate:") {
            c.clock_mhz = number(v);
        } else if let Some(v) = after("Compute units   :") {
            c.sms = number(v);
        } else if let Some(v) = after("Clock frequency :") {
            c.clock_mhz = number(v);
        }
    }
    c
}

fn capture(file: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/spec-captures")
        .join(file);
    parse(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn bandwidth(c: &Capture) -> f64 {
    2.0 * c.mem_clock_mhz.unwrap() * 1e6 * c.bus_bits.unwrap() / 8.0
}

/// |a − b| within the two decimals the entries print.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.006
}

#[test]
fn captures_are_read() {
    let c = capture("deviceQuery__rtx-2060-super.txt");
    assert_eq!(c.name, "GeForce RTX 2060 SUPER");
    assert_eq!(
        (
            c.sms,
            c.cores_per_sm,
            c.clock_mhz,
            c.mem_clock_mhz,
            c.bus_bits
        ),
        (
            Some(34.0),
            Some(64.0),
            Some(1650.0),
            Some(7001.0),
            Some(256.0)
        )
    );
    let c = capture("nvbench__rtx-3060-ti.txt");
    assert_eq!(c.name, "NVIDIA GeForce RTX 3060 Ti");
    assert_eq!(
        (c.sms, c.clock_mhz, c.mem_clock_mhz, c.bus_bits),
        (Some(38.0), Some(1695.0), Some(7001.0), Some(256.0))
    );
    let c = capture("clpeak__rtx-2080-super.txt");
    assert_eq!((c.sms, c.clock_mhz), (Some(48.0), Some(1830.0)));
    let c = capture("deviceQuery__rtx-2060.txt");
    assert_eq!((c.sms, c.cores_per_sm), (Some(30.0), Some(64.0)));
    let c = capture("cudaprops__rtx-3050-laptop.txt");
    assert_eq!(c.name, "NVIDIA GeForce RTX 3050 Laptop GPU");
    assert_eq!(
        (c.sms, c.clock_mhz, c.mem_clock_mhz, c.bus_bits),
        (Some(16.0), Some(1500.0), Some(6001.0), Some(128.0))
    );
}

/// NVIDIA's bandwidth formula on a card the GA102 whitepaper states: the
/// RTX 3080's 320-bit bus at 9501 MHz gives 760.08 GB/s, the whitepaper's
/// 760 (the rtx-3080 entry).
#[test]
fn the_bandwidth_formula_reproduces_a_whitepaper_figure() {
    let c = capture("nvbench__rtx-3080.txt");
    assert_eq!(c.name, "NVIDIA GeForce RTX 3080");
    let e = by_id("rtx-3080").unwrap();
    let stated = e.memory_bandwidth_bytes_per_s.unwrap() as f64;
    assert!(
        (bandwidth(&c) / stated - 1.0).abs() < 0.001,
        "{}",
        bandwidth(&c)
    );
}

/// The per-SM rates the derived entries use, from the whitepaper columns
/// already in the database: GeForce FP16 Tensor with FP32 accumulate is 2 ×
/// FP32 on Ampere (128 FP32 cores per SM) and 4 × FP32 on Turing (64), so
/// 512 FLOPs per SM per clock on both; INT8 is 4 × that.
#[test]
fn per_sm_rates_follow_from_the_whitepaper_entries() {
    for (id, cores) in [
        ("rtx-3090", 128.0),
        ("rtx-3080", 128.0),
        ("rtx-3070", 128.0),
        ("rtx-2080", 64.0),
        ("rtx-2070", 64.0),
    ] {
        let t = by_id(id).unwrap().tflops.clone();
        let (fp32, acc32, int8) = (t.fp32.unwrap(), t.fp16_acc32.unwrap(), t.int8.unwrap());
        // FP32 = SMs × cores × 2 × clock, so acc32 / fp32 = 512 / (2 × cores).
        let want = 512.0 / (2.0 * cores);
        assert!(
            (acc32 / fp32 / want - 1.0).abs() < 0.01,
            "{id}: {acc32} / {fp32}"
        );
        assert!(
            (int8 / acc32 / 4.0 - 1.0).abs() < 0.01,
            "{id}: {int8} / {acc32}"
        );
    }
}

#[test]
fn derived_entries_hold_what_their_captures_give() {
    // (entry, capture, rates derived from it, bandwidth derived from it)
    for (id, file, rates, bw) in [
        ("rtx-2060", "nvbench__rtx-2060.txt", true, true),
        (
            "rtx-2060-super",
            "deviceQuery__rtx-2060-super.txt",
            true,
            true,
        ),
        (
            "rtx-2070-super",
            "deviceQueryDrv__rtx-2070-super.txt",
            true,
            true,
        ),
        ("rtx-2080-super", "clpeak__rtx-2080-super.txt", true, false),
        ("rtx-3060", "nvbench__rtx-3060.txt", false, true),
        ("rtx-3060", "deviceQuery__rtx-3060.txt", true, true),
        ("rtx-3060-ti", "nvbench__rtx-3060-ti.txt", true, true),
        ("rtx-3070-ti", "nvbench__rtx-3070-ti.txt", true, true),
        // Bandwidth only: its rates are NVIDIA's boost figure, above the
        // 1500 MHz this laptop's print states.
        (
            "rtx-3050-laptop",
            "cudaprops__rtx-3050-laptop.txt",
            false,
            true,
        ),
    ] {
        let e = by_id(id).unwrap_or_else(|| panic!("{id}"));
        let c = capture(file);
        assert!(
            e.name.ends_with(c.name.trim_start_matches("NVIDIA ")),
            "{id}: {} vs {}",
            e.name,
            c.name
        );
        if bw {
            assert_eq!(
                e.memory_bandwidth_bytes_per_s,
                Some(bandwidth(&c).round() as u64),
                "{id}"
            );
        }
        let t = &e.tflops;
        if !rates {
            continue;
        }
        // Compute capability 7.5: 64 FP32 cores per SM; 8.6: 128
        // (cuda-samples `_ConvertSMVer2Cores`), as deviceQuery prints them.
        let cores = match e.architecture.as_deref() {
            Some("7.5") => 64.0,
            Some("8.6") => 128.0,
            other => panic!("{id}: {other:?}"),
        };
        if let Some(printed) = c.cores_per_sm {
            assert_eq!(printed, cores, "{id}");
        }
        let (sms, ghz) = (c.sms.unwrap(), c.clock_mhz.unwrap() / 1000.0);
        let fp32 = sms * cores * 2.0 * ghz / 1000.0;
        let acc32 = sms * 512.0 * ghz / 1000.0;
        let int8 = sms * 2048.0 * ghz / 1000.0;
        assert!(close(t.fp32.unwrap(), fp32), "{id}: fp32 {fp32}");
        assert!(
            close(t.fp16_acc32.unwrap(), acc32),
            "{id}: fp16_acc32 {acc32}"
        );
        assert_eq!(
            t.fp16, t.fp16_acc32,
            "{id}: GeForce fp16 is the FP32-accumulate rate"
        );
        assert!(close(t.int8.unwrap(), int8), "{id}: int8 {int8}");
    }
}

/// The method on cards NVIDIA's GA102 whitepaper states: a reference-clocked
/// RTX 3080 (deviceQuery: 68 SMs, 1710 MHz, 320-bit at 9501 MHz) gives the
/// rtx-3080 entry's whitepaper figures (29.8 FP32, 59.5 FP16 Tensor with FP32
/// accumulate, 238 INT8 TOPS, 760 GB/s) within their rounding, and the GA104
/// RTX 3070 (46 SMs, 1725 MHz, 256-bit at 7001 MHz) the 3070's (20.3 / 40.6 /
/// 162.6, 448 GB/s): the chip of the derived 3060 Ti and 3070 Ti entries.
#[test]
fn the_method_reproduces_the_ga102_whitepaper_rtx_3080_and_3070() {
    for (file, id, sms_want) in [
        ("deviceQuery__rtx-3080__calibration.txt", "rtx-3080", 68.0),
        ("deviceQuery__rtx-3070__calibration.txt", "rtx-3070", 46.0),
    ] {
        let c = capture(file);
        let e = by_id(id).unwrap();
        assert_eq!(c.name, e.name, "{file}");
        let t = e.tflops.clone();
        let (sms, ghz) = (c.sms.unwrap(), c.clock_mhz.unwrap() / 1000.0);
        assert_eq!((sms, c.cores_per_sm), (sms_want, Some(128.0)), "{file}");
        let within = |stated: f64, derived: f64| (derived / stated - 1.0).abs() < 0.002;
        assert!(
            within(t.fp32.unwrap(), sms * 128.0 * 2.0 * ghz / 1000.0),
            "{id}"
        );
        assert!(
            within(t.fp16_acc32.unwrap(), sms * 512.0 * ghz / 1000.0),
            "{id}"
        );
        assert!(within(t.int8.unwrap(), sms * 2048.0 * ghz / 1000.0), "{id}");
        let stated = e.memory_bandwidth_bytes_per_s.unwrap() as f64;
        assert!(within(stated, bandwidth(&c)), "{id}");
    }
}

/// The RTX 4000 Ada (workstation, Ada): bandwidth from its capture, FP32 =
/// SMs x 128 x 2 x clock, and FP16 Tensor with FP32 accumulate 4 x FP32, the
/// ratio of the rtx-6000-ada datasheet entry (workstation parts run FP32
/// accumulate at the full rate).
#[test]
fn the_rtx_4000_ada_holds_what_its_capture_gives() {
    let c = capture("deviceQuery__rtx-4000-ada.txt");
    let e = by_id("rtx-4000-ada").unwrap();
    assert_eq!(
        format!("NVIDIA {}", c.name.trim_start_matches("NVIDIA ")),
        e.name
    );
    assert_eq!(
        e.memory_bandwidth_bytes_per_s,
        Some(bandwidth(&c).round() as u64)
    );
    let (sms, ghz) = (c.sms.unwrap(), c.clock_mhz.unwrap() / 1000.0);
    assert_eq!((sms, c.cores_per_sm), (48.0, Some(128.0)));
    let fp32 = sms * 128.0 * 2.0 * ghz / 1000.0;
    let six = by_id("rtx-6000-ada").unwrap().tflops.clone();
    let ratio = six.fp16_acc32.unwrap() / six.fp32.unwrap();
    assert!((ratio - 4.0).abs() < 0.01, "{ratio}");
    let t = &e.tflops;
    assert!(close(t.fp32.unwrap(), fp32), "{fp32}");
    assert!(close(t.fp16_acc32.unwrap(), 4.0 * fp32));
    assert_eq!(t.fp16, t.fp16_acc32);
    assert_eq!(t.bf16, t.fp16);
}

/// The Quadro RTX 8000 (workstation, Turing): NVIDIA's own nvbench
/// documentation prints its device header (72 SMs, 1770 MHz, 384-bit at
/// 7001 MHz), the SMs and boost clock of the Quadro RTX 6000 column of
/// NVIDIA's Turing table (the quadro-rtx-6000 entry), whose per-SM rates it
/// takes: 64 FP32 cores, 1024 FP16 Tensor FLOPs (FP16 or FP32 accumulate:
/// workstation parts run both at the full rate) and 2048 INT8 operations per
/// SM per clock.
#[test]
fn the_quadro_rtx_8000_holds_what_its_capture_gives() {
    let c = capture("nvbench__quadro-rtx-8000.txt");
    let e = by_id("quadro-rtx-8000").unwrap();
    assert_eq!(c.name, "Quadro RTX 8000");
    assert_eq!(e.name, format!("NVIDIA {}", c.name));
    assert_eq!(
        e.memory_bandwidth_bytes_per_s,
        Some(bandwidth(&c).round() as u64)
    );
    let (sms, ghz) = (c.sms.unwrap(), c.clock_mhz.unwrap() / 1000.0);
    assert_eq!((sms, ghz), (72.0, 1.77));
    // The per-SM rates of the stated column, at its 72 SMs and 1770 MHz.
    let six = by_id("quadro-rtx-6000").unwrap().tflops.clone();
    let per_sm = |stated: f64| stated * 1000.0 / (72.0 * 1.77);
    assert!((per_sm(six.fp16_acc32.unwrap()) / 1024.0 - 1.0).abs() < 0.001);
    assert!((per_sm(six.int8.unwrap()) / 2048.0 - 1.0).abs() < 0.001);
    assert!((per_sm(six.fp32.unwrap()) / 128.0 - 1.0).abs() < 0.001);
    let t = &e.tflops;
    assert!(close(t.fp32.unwrap(), sms * 64.0 * 2.0 * ghz / 1000.0));
    assert!(close(t.fp16_acc32.unwrap(), sms * 1024.0 * ghz / 1000.0));
    assert!(close(t.int8.unwrap(), sms * 2048.0 * ghz / 1000.0));
    assert_eq!(t.fp16, t.fp16_acc32);
}

/// The Flex 170's rates come from Intel's own `xpu-smi discovery -d` capture
/// of the card (tests/fixtures/xpu-smi, Intel's Windows guide): its EU count
/// and core clock with the Xe-HPG per-engine rates the arc-a770 entry uses
/// (16 vector and 16 XMX engines per Xe-core; 128 FP16 and 256 INT8 ops per
/// XMX engine, 16 FP32 FLOPs per 8-wide vector engine, per clock).
#[test]
fn the_flex_170_holds_what_its_xpu_smi_capture_gives() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/xpu-smi/xpumanager-win-guide__discovery-d__flex-170-14336mib.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| {
                l.split_once(key)
                    .map(|(_, v)| v.trim_end_matches('|').trim())
            })
            .and_then(number)
            .unwrap_or_else(|| panic!("{key} not in the capture"))
    };
    assert!(text.contains("Intel(R) Data Center GPU Flex Series 170"));
    let (eus, mhz, simd) = (
        field("Number of EUs:"),
        field("Core Clock Rate:"),
        field("Physical EU SIMD Width:"),
    );
    assert_eq!((eus, mhz, simd), (512.0, 2050.0, 8.0));
    let ghz = mhz / 1e3;
    let t = &by_id("flex-170").unwrap().tflops;
    // One XMX engine per vector engine (EU) on Xe-HPG.
    assert!(close(t.fp16.unwrap(), eus * 128.0 * ghz / 1e3), "{t:?}");
    assert_eq!(t.bf16, t.fp16);
    assert!(close(t.int8.unwrap(), eus * 256.0 * ghz / 1e3), "{t:?}");
    // An 8-wide EU: 8 lanes x one FMA (2 FLOPs) per clock.
    assert!(
        close(t.fp32.unwrap(), eus * simd * 2.0 * ghz / 1e3),
        "{t:?}"
    );
    // The arc-a770 entry's per-engine rates are the ones used here.
    let a770 = &by_id("arc-a770").unwrap().tflops;
    assert!(close(a770.fp16.unwrap(), 512.0 * 128.0 * 2.1 / 1e3));
}
