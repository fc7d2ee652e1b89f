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
    // 15 names match a sourced row (one an Ampere Altra's firmware string);
    // 12 match none (cloud custom parts, masked names, an arm64 core name,
    // and EPYC 9005 / Ryzen desktop parts the table leaves out for want of
    // a checkable copy of AMD's figures).
    assert!(
        rows >= 27 && matched >= 15,
        "{rows} rows, {matched} matched"
    );
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
    // A CPU-only plan on it: decode = weight bytes per token ÷ (614.4 GB/s
    // × 0.6) with the fixed efficiency (no fit applies to CPUs), then
    // attention.
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
    let weights = (d.weights_bytes - embedding) as f64 + embedding as f64 / 128_256.0;
    // Attention after the GEMMs: the KV cache's bytes, or its FLOPs (2 ×
    // 32 layers × 1024 tokens × 4096 query width) at the FP32 rate llama.cpp's
    // CPU kernels run at and the default prefill fraction of 0.5, whichever
    // takes longer: here the FLOPs (0.52 ms against 0.36 ms).
    let attention = (d.kv_cache_bytes as f64 / (614.4e9 * 0.6))
        .max(2.0 * 32.0 * 1024.0 * 4096.0 / (1.024e12 * 0.5));
    assert!(attention > d.kv_cache_bytes as f64 / (614.4e9 * 0.6));
    let want = 1.0 / (weights / (614.4e9 * 0.6) + attention);
    let got = p.plans[0].decode_tokens_per_s.unwrap();
    assert!((got - want).abs() / want < 1e-6, "{got} vs {want}");
}

/// One line of a CSV file without embedded line breaks (the vendor-spec
/// fixtures have none): fields split on commas outside double quotes, `""`
/// inside quotes is a quote.
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().unwrap().push(ch),
        }
    }
    out
}

/// The first number in `s` ("Up to 3.7GHz", "2.10 GHz", "Up to DDR5 4800
/// MT/s 1DPC", "DDR5(6400MHz) MRDIMM(8800MHz)", "460.80 GB/s") with at
/// least `min_digits` digits before the point.
fn first_number(s: &str, min_digits: usize) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let int_digits = i - start;
            if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if int_digits >= min_digits {
                return s[start..i].parse().ok();
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Every figure of every CPU row equals the vendor's figure in the rows of
/// its `copy` vendored byte for byte under
/// `tests/fixtures/cpu-model-names/vendor-specs/` (AMD's specification
/// table export, Intel's product pages as scraped), and every row has such
/// a fixture row: a figure typed from memory, or a row added without its
/// source, fails here.
#[test]
fn every_row_matches_the_vendor_figures_it_cites() {
    use std::collections::HashMap;
    struct Source {
        text: &'static str,
        name_col: &'static str,
        cols: [&'static str; 5],
        base_fallback: Option<&'static str>,
        url_col: Option<&'static str>,
        bandwidth_col: Option<&'static str>,
    }
    let sources: HashMap<&str, Source> = HashMap::from([
        (
            "felixsteinke/cpu-spec-dataset@4c08d8873c33a2d1054a40ae305eec22073463a7:dataset/amd-cpus.csv",
            Source {
                text: include_str!(
                    "fixtures/cpu-model-names/vendor-specs/amd-cpus.felixsteinke-4c08d88.csv"
                ),
                name_col: "Model",
                cols: [
                    "# of CPU Cores",
                    "Base Clock",
                    "Max. Boost Clock ¹ ²",
                    "Memory Channels",
                    "System Memory Specification",
                ],
                base_fallback: None,
                url_col: None,
                bandwidth_col: Some("Per Socket Mem BW"),
            },
        ),
        (
            "JosuaCarl/cpu-spec-dataset@edf12ad53dcbfaa2f03044b559c9440ab7d63ee4:dataset/amd-cpus.csv",
            Source {
                text: include_str!(
                    "fixtures/cpu-model-names/vendor-specs/amd-cpus.josuacarl-edf12ad.csv"
                ),
                name_col: "Name",
                cols: [
                    "# of CPU Cores",
                    "Base Clock",
                    "Max. Boost Clock",
                    "Memory Channels",
                    "System Memory Specification",
                ],
                base_fallback: None,
                url_col: None,
                bandwidth_col: None,
            },
        ),
        (
            "JosuaCarl/cpu-spec-dataset@edf12ad53dcbfaa2f03044b559c9440ab7d63ee4:dataset/intel-cpus.csv",
            Source {
                text: include_str!(
                    "fixtures/cpu-model-names/vendor-specs/intel-cpus.josuacarl-edf12ad.csv"
                ),
                name_col: "CpuName",
                cols: [
                    "Total Cores",
                    "Processor Base Frequency",
                    "Max Turbo Frequency",
                    "Max # of Memory Channels",
                    "Memory Types",
                ],
                base_fallback: Some("Performance-core Base Frequency"),
                url_col: Some("SourceUrl"),
                bandwidth_col: None,
            },
        ),
    ]);
    // Vendor rows by source and normalized product name.
    let mut rows: HashMap<(&str, String), HashMap<String, String>> = HashMap::new();
    for (copy, s) in &sources {
        let mut lines = s.text.lines();
        let header: Vec<String> = csv_fields(lines.next().unwrap().trim_start_matches('\u{feff}'));
        let mut n = 0;
        for line in lines.filter(|l| !l.is_empty()) {
            let fields = csv_fields(line);
            assert_eq!(fields.len(), header.len(), "{copy}: {line}");
            let row: HashMap<String, String> = header.iter().cloned().zip(fields).collect();
            let name = cpu::normalize_model_name(&row[s.name_col]);
            assert!(
                rows.insert((copy, name), row).is_none(),
                "{copy}: duplicate"
            );
            n += 1;
        }
        assert!(n >= 6, "{copy}: {n} rows");
    }
    let mut checked = 0;
    let mut code_names = 0;
    let mut zen_named = 0;
    let mut arm = 0;
    for c in cpu::all() {
        if ARM_COPIES.contains(&c.copy.as_str()) {
            // Checked by arm_rows_match_their_vendor_copies.
            arm += 1;
            continue;
        }
        assert!(
            c.memory_copy.is_none(),
            "{}: memory_copy is checked for Arm rows only",
            c.id
        );
        let s = sources
            .get(c.copy.as_str())
            .unwrap_or_else(|| panic!("{}: no vendored copy of {}", c.id, c.copy));
        let key = (c.copy.as_str(), cpu::normalize_model_name(&c.name));
        let row = rows
            .get(&key)
            .unwrap_or_else(|| panic!("{}: not in {}", c.id, c.copy));
        let num = |col: &str, min_digits| {
            first_number(&row[col], min_digits)
                .unwrap_or_else(|| panic!("{}: {col} = {:?}", c.id, row[col]))
        };
        let [cores, base, boost, channels, rate] = s.cols;
        assert_eq!(num(cores, 1), f64::from(c.cores), "{}: cores", c.id);
        let base_col = match (s.base_fallback, row[base].is_empty()) {
            (Some(f), true) => f,
            _ => base,
        };
        assert_eq!(num(base_col, 1), c.base_clock_ghz, "{}: base clock", c.id);
        assert_eq!(Some(num(boost, 1)), c.boost_clock_ghz, "{}: boost", c.id);
        assert_eq!(num(channels, 1), f64::from(c.memory_channels), "{}", c.id);
        // Transfer rates have four digits ("DDR5 4800", "Up to 5200 MT/s").
        assert_eq!(num(rate, 4), f64::from(c.memory_mt_per_s), "{}: MT/s", c.id);
        let memory_type = row.get("System Memory Type").unwrap_or(&row[rate]);
        assert!(
            memory_type.contains(&c.memory_type),
            "{}: {memory_type}",
            c.id
        );
        if let Some(col) = s.url_col {
            assert_eq!(row[col], c.source, "{}: source is the page scraped", c.id);
        }
        if let Some(col) = s.bandwidth_col {
            // AMD states the per-socket bandwidth; the derivation lands on it.
            let gb_s = num(col, 1);
            assert_eq!(
                (gb_s * 1e9).round() as u64,
                c.memory_bandwidth_bytes_per_s(),
                "{}",
                c.id
            );
        }
        // Intel rows: the microarchitecture follows the page's code name.
        if let Some(code) = row.get("Code Name") {
            let want = match code.as_str() {
                "Products formerly Sapphire Rapids" => "sapphire-rapids",
                "Products formerly Emerald Rapids" | "Products formerly Granite Rapids" => {
                    "emerald-granite-rapids"
                }
                "Products formerly Arrow Lake" => "intel-hybrid",
                "Products formerly Ice Lake" => "icelake-server",
                other => panic!("{}: code name {other:?} has no entry", c.id),
            };
            assert_eq!(c.microarchitecture, want, "{}", c.id);
            code_names += 1;
        }
        // AMD rows whose table row names the core ("AMD Zen 3 Core
        // Architecture", "AMD \"Zen 3\" Core Architecture"): the row's
        // microarchitecture is that core.
        if let Some(tech) = row.get("Supported Technologies") {
            let zen = tech
                .replace('"', "")
                .split_once("Zen ")
                .map(|(_, rest)| {
                    rest.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .filter(|n| !n.is_empty());
            if let Some(n) = zen {
                assert_eq!(c.microarchitecture, format!("zen{n}"), "{}: {tech}", c.id);
                zen_named += 1;
            }
        }
        // Intel rows: the FP32 rate of the microarchitecture is the page's
        // AVX-512 FMA units × 16 FP32 lanes × 2 FLOPs per FMA.
        if let Some(units) = row.get("# of AVX-512 FMA Units").filter(|u| !u.is_empty()) {
            let units: u32 = units.parse().unwrap();
            let m = c.microarchitecture().unwrap();
            assert_eq!(m.fp32_flops_per_cycle, Some(units * 16 * 2), "{}", c.id);
        }
        checked += 1;
    }
    assert_eq!(checked + arm, cpu::all().len());
    assert!(checked >= 111 && arm >= 13, "{checked} + {arm}");
    // The Threadripper PRO 5000 WX rows name their core (Zen 3).
    assert!(zen_named >= 5, "{zen_named}");
    let intel = cpu::all().iter().filter(|c| c.vendor == "intel").count();
    assert_eq!(code_names, intel, "every Intel row's code name was read");
}

/// The copies the Arm server rows cite: Ampere's Altra brief as scraped
/// (CSV), AWS's Graviton guide (a Markdown table).
const ARM_COPIES: [&str; 2] = [
    "JosuaCarl/cpu-spec-dataset@edf12ad53dcbfaa2f03044b559c9440ab7d63ee4:dataset/ampere-cpus.csv",
    "aws/aws-graviton-getting-started@83d74f4cd59be0db948a23fef62e34b8926546fa:README.md",
];

/// The one line of a vendored copy that contains `needle` (exactly one).
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    let hits: Vec<&str> = text.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(hits.len(), 1, "{needle:?}: {hits:?}");
    hits[0]
}

/// `DDR4-3200` → ("DDR4", 3200), read from the text after `at`.
fn ddr_rate(text: &str) -> (String, u32) {
    let i = text
        .find("DDR")
        .unwrap_or_else(|| panic!("no DDR in {text:?}"));
    let (kind, rest) = text[i..].split_at(4);
    let rate: String = rest
        .trim_start_matches('-')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (kind.to_string(), rate.parse().unwrap())
}

/// Every Ampere and AWS row equals the figures of the copies it cites,
/// vendored byte for byte under `tests/fixtures/cpu-model-names/vendor-specs/`:
/// cores and clock from the SKU table (Ampere's brief as scraped, AWS's
/// Graviton guide), channels, type and transfer rate from the family's
/// memory statement (`memory_copy`: Ampere's brief, AWS's M8g page, as
/// heslabs/arm-server quotes them; channels from AWS's guide for Graviton).
#[test]
fn arm_rows_match_their_vendor_copies() {
    use std::collections::HashMap;
    let ampere =
        include_str!("fixtures/cpu-model-names/vendor-specs/ampere-cpus.josuacarl-edf12ad.csv");
    let ampere_memory = include_str!(
        "fixtures/cpu-model-names/vendor-specs/heslabs-arm-server.fe8bfe3.Ampere-readme.md"
    );
    let aws = include_str!(
        "fixtures/cpu-model-names/vendor-specs/aws-graviton-getting-started.83d74f4.README-table.md"
    );
    let aws_memory = include_str!(
        "fixtures/cpu-model-names/vendor-specs/heslabs-arm-server.fe8bfe3.Graviton-readme-m8g.md"
    );
    const AMPERE_MEMORY_COPY: &str =
        "heslabs/arm-server@fe8bfe343524ec0799859fa89e6bd140c04d241e:Ampere/readme.md";
    const AWS_MEMORY_COPY: &str =
        "heslabs/arm-server@fe8bfe343524ec0799859fa89e6bd140c04d241e:Graviton/readme.md";

    // Ampere: one memory statement for the family, under the brief's URL.
    let brief = line_with(ampere_memory, "https://amperecomputing.com/briefs/");
    let mem = line_with(ampere_memory, "Channels 72-bit DDR");
    let ampere_channels: u32 = mem
        .trim_start_matches([' ', '*'])
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{mem:?}"));
    let (ampere_type, ampere_rate) = ddr_rate(mem);
    let mut lines = ampere.lines();
    let header = csv_fields(lines.next().unwrap());
    let mut skus: HashMap<String, HashMap<String, String>> = HashMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let row: HashMap<String, String> = header.iter().cloned().zip(csv_fields(line)).collect();
        skus.insert(row["CpuName"].clone(), row);
    }
    assert!(skus.len() >= 12, "{}", skus.len());

    // AWS: the guide's table, one column per Graviton generation.
    let cell = |label: &str, generation: &str| -> String {
        let split = |l: &str| -> Vec<String> {
            l.split(['|', '\t'])
                .map(|f| f.trim().to_string())
                .filter(|f| !f.is_empty())
                .collect()
        };
        let head = split(line_with(aws, "Processor|"));
        let col = head
            .iter()
            .position(|h| h == generation)
            .unwrap_or_else(|| panic!("{generation}: {head:?}"));
        let row = aws
            .lines()
            .map(split)
            .find(|r| r.first().map(String::as_str) == Some(label))
            .unwrap_or_else(|| panic!("no {label} row"));
        row[col].clone()
    };

    let mut checked = 0;
    for c in cpu::all()
        .iter()
        .filter(|c| ARM_COPIES.contains(&c.copy.as_str()))
    {
        assert_eq!(
            c.boost_clock_ghz, None,
            "{}: these cores do not boost",
            c.id
        );
        match c.vendor.as_str() {
            "ampere" => {
                let sku = c.name.rsplit(' ').next().unwrap();
                let row = skus
                    .get(sku)
                    .unwrap_or_else(|| panic!("{}: {sku} not in the brief", c.id));
                assert_eq!(row["Cores"].parse::<u32>().unwrap(), c.cores, "{}", c.id);
                assert_eq!(
                    row["ClockSpeed"].parse::<f64>().unwrap(),
                    c.base_clock_ghz,
                    "{}",
                    c.id
                );
                assert_eq!(
                    row["SourceUrl"], c.source,
                    "{}: source is the brief scraped",
                    c.id
                );
                // Altra Max: the 96- and 128-core SKUs (M); Altra: up to 80 (Q).
                let max = c.name.starts_with("Ampere Altra Max ");
                assert_eq!(max, sku.starts_with('M'), "{}", c.id);
                assert_eq!(max, c.cores > 80, "{}", c.id);
                assert!(
                    brief.contains(c.memory_source.as_deref().unwrap()),
                    "{}",
                    c.id
                );
                assert_eq!(
                    c.memory_copy.as_deref(),
                    Some(AMPERE_MEMORY_COPY),
                    "{}",
                    c.id
                );
                assert_eq!(
                    (c.memory_channels, c.memory_type.as_str(), c.memory_mt_per_s),
                    (ampere_channels, ampere_type.as_str(), ampere_rate),
                    "{}",
                    c.id
                );
                assert_eq!(c.microarchitecture, "neoverse-n1", "{}", c.id);
            }
            "aws" => {
                let generation = c.name.strip_prefix("AWS ").unwrap();
                let first = |label: &str| -> u32 {
                    let v = cell(label, generation);
                    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().unwrap_or_else(|_| panic!("{label}: {v:?}"))
                };
                assert_eq!(first("Cores"), c.cores, "{}", c.id);
                assert_eq!(
                    f64::from(first("Frequency")) / 1000.0,
                    c.base_clock_ghz,
                    "{}",
                    c.id
                );
                assert_eq!(cell("Turbo supported", generation), "No", "{}", c.id);
                let dram = cell("DRAM", generation);
                assert_eq!(first("DRAM"), c.memory_channels, "{}: {dram}", c.id);
                assert!(dram.contains(&c.memory_type), "{}: {dram}", c.id);
                let core = cell("Core", generation);
                assert!(
                    core.to_lowercase()
                        .starts_with(&format!("[{}]", c.microarchitecture)),
                    "{}: {core}",
                    c.id
                );
                // The rate: AWS's M8g page as quoted under its URL.
                let url = c.memory_source.as_deref().unwrap();
                line_with(aws_memory, url);
                assert!(
                    line_with(aws_memory, "Graviton4 processors").contains(generation),
                    "{}",
                    c.id
                );
                let (kind, rate) = ddr_rate(line_with(aws_memory, "instances include"));
                assert_eq!(
                    (kind.as_str(), rate),
                    (c.memory_type.as_str(), c.memory_mt_per_s),
                    "{}",
                    c.id
                );
                assert_eq!(c.memory_copy.as_deref(), Some(AWS_MEMORY_COPY), "{}", c.id);
            }
            v => panic!("{}: vendor {v} has no check", c.id),
        }
        checked += 1;
    }
    assert!(checked >= 13, "{checked}");
}
