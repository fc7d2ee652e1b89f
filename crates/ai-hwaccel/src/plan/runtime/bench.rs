//! llama.cpp's `llama-bench` results read back, in every output it has
//! printed: the Markdown table (default; `pp 512`/`tg 128` tests until
//! early 2024, `pp512`/`tg128` since, `pp4096+tg128` combined tests and
//! `tg128 @ d8192` depths since 2025; any set of parameter columns;
//! `±` also as the mis-decoded `Â±`), `-o csv`, `-o json` and `-o jsonl`
//! (`model_type`, `model_size`, `model_n_params`, `n_prompt`, `n_gen`,
//! `n_depth`, `avg_ts`, `stddev_ts`). Pure: text in, rows out; `check`
//! compares them with the planner's speeds.

use serde::{Deserialize, Serialize};

/// One benchmark result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchRow {
    /// llama.cpp's model description (`llama 7B Q4_0`, `qwen3 0.6B F16`).
    pub model: String,
    /// Model file size in bytes (the table prints it to 0.01 MiB/GiB).
    pub size_bytes: Option<u64>,
    /// Parameters (the table prints them to 0.01 M/B).
    pub params: Option<u64>,
    /// Backends as printed (`CUDA`, `Metal,BLAS`, `Vulkan`, `CPU`).
    pub backend: Option<String>,
    /// `-ngl` when the output shows it.
    pub n_gpu_layers: Option<i64>,
    /// `--n-cpu-moe` (`n_cpu_moe` column and field, 2026 builds): the
    /// layers whose routed experts stayed in host memory and ran on the
    /// CPU; 0 or `None` where none did.
    #[serde(default)]
    pub n_cpu_moe: Option<u32>,
    /// llama.cpp's micro-batch (`n_ubatch` column and field, shown where a
    /// run set `-ub`); `None` where not shown (the default, 512).
    pub n_ubatch: Option<u64>,
    /// CPU threads (`threads` column, JSON/CSV `n_threads`) when shown.
    #[serde(default)]
    pub threads: Option<u32>,
    /// Prompt tokens processed (`pp512`: 512).
    pub n_prompt: u64,
    /// Tokens generated (`tg128`: 128).
    pub n_gen: u64,
    /// Tokens already in the context (`@ d8192`: 8192).
    pub n_depth: u64,
    /// The mean tokens per second.
    pub tokens_per_s: f64,
    /// Its standard deviation, when printed.
    pub stddev: Option<f64>,
    /// Flash attention as the run set it (`fa` column, JSON `flash_attn`:
    /// 0/1, `on`/`off`, `true`/`false`; `auto`, -1, resolves on for GPUs);
    /// `None` where the output does not show it (the build's default).
    #[serde(default)]
    pub flash_attn: Option<bool>,
    /// llama.cpp's build number (`build: 32d9f7d9 (1786)` under a table,
    /// JSON/CSV `build_number`); `None` where not printed or 0 (a build
    /// outside llama.cpp's tree, such as a vendored copy).
    #[serde(default)]
    pub build_number: Option<u64>,
    /// The month the run was made (JSON/CSV `test_time`), an upper bound on
    /// the build's month.
    #[serde(default)]
    pub run_month: Option<crate::plan::speed::BuildMonth>,
    /// The KV cache's K and V types (`-ctk`/`-ctv`: `type_k`/`type_v`
    /// columns and fields, as `ggml_type_name` prints them: `f16`, `q8_0`,
    /// `q4_0`, …); `None` where the output does not show them (the default,
    /// f16: the Markdown table prints the columns only when set).
    #[serde(default)]
    pub type_k: Option<String>,
    /// See [`Self::type_k`].
    #[serde(default)]
    pub type_v: Option<String>,
    /// `-ot` tensor buffer overrides as printed (`ot` column, JSON/CSV
    /// `tensor_buft_overrides`: `pattern=BUFFER` pairs joined by `;`, such
    /// as `blk\.1[5-9]\.ffn_.*_exps\.=CPU`); `None` for none (`none`).
    #[serde(default)]
    pub tensor_overrides: Option<String>,
}

impl BenchRow {
    /// Whether the row's `-ot` overrides put some tensors in host memory
    /// (a buffer type named `CPU`, or `CPU_…` such as `CPU_REPACK`), where
    /// the CPU computes with them: a partial offload. llama-bench prints
    /// one test's overrides joined by `;`; its command line separates
    /// tests' groups by `,`, which a pasted value may keep: either splits.
    pub fn overrides_to_host(&self) -> bool {
        self.tensor_overrides.as_deref().is_some_and(|o| {
            o.split([';', ',']).any(|p| {
                p.rsplit_once('=').is_some_and(|(_, b)| {
                    let b = b.trim().to_ascii_uppercase();
                    b == "CPU" || b.starts_with("CPU_")
                })
            })
        })
    }

    /// The test's name as llama-bench prints it today (`pp512`, `tg128`,
    /// `pp4096+tg128`, `tg128 @ d8192`).
    pub fn test_name(&self) -> String {
        let base = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        if self.n_depth > 0 {
            format!("{base} @ d{}", self.n_depth)
        } else {
            base
        }
    }
}

/// Most rows read from one output.
const MAX_ROWS: usize = 10_000;

/// `3.56 GiB`, `636.18 MiB` → bytes.
fn size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("GiB") {
        (n, 1_073_741_824.0)
    } else if let Some(n) = s.strip_suffix("MiB") {
        (n, 1_048_576.0)
    } else if let Some(n) = s.strip_suffix("KiB") {
        (n, 1024.0)
    } else if let Some(n) = s.strip_suffix("TiB") {
        (n, 1_099_511_627_776.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && (0.0..1e6).contains(&v)).then(|| (v * mult).round() as u64)
}

/// `6.74 B`, `751.63 M`, `1.10 B` → parameters.
fn params(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix('B') {
        (n, 1e9)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('K') {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('T') {
        (n, 1e12)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && (0.0..1e6).contains(&v)).then(|| (v * mult).round() as u64)
}

/// `pp512`, `pp 512`, `tg128`, `pp4096+tg128`, `tg128 @ d8192`,
/// `pp2048@d4096` → (prompt, gen, depth).
fn test(s: &str) -> Option<(u64, u64, u64)> {
    let (t, depth) = match s.split_once('@') {
        Some((t, d)) => (t, d.trim().strip_prefix('d')?.trim().parse().ok()?),
        None => (s, 0),
    };
    let (mut pp, mut tg) = (0u64, 0u64);
    for part in t.split('+') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("pp") {
            pp = n.trim().parse().ok()?;
        } else if let Some(n) = part.strip_prefix("tg") {
            tg = n.trim().parse().ok()?;
        } else {
            return None;
        }
    }
    (pp > 0 || tg > 0).then_some((pp, tg, depth))
}

/// `4035.47 ± 157.68` (also `Â±`, `+/-`) → (mean, stddev).
fn rate(s: &str) -> Option<(f64, Option<f64>)> {
    let s = s.replace("Â±", "±").replace("+/-", "±");
    let (m, d) = match s.split_once('±') {
        Some((m, d)) => (m, Some(d)),
        None => (s.as_str(), None),
    };
    let m: f64 = m.trim().parse().ok()?;
    let d = d.and_then(|d| d.trim().parse::<f64>().ok());
    (m.is_finite() && m >= 0.0).then_some((m, d.filter(|d| d.is_finite() && *d >= 0.0)))
}

/// `0`/`1`, `off`/`on`, `false`/`true`, `disabled`/`enabled`, `auto`/`-1`
/// (llama-bench's `fa` column and `flash_attn` field, llama.cpp's
/// `llama_context: flash_attn = …` log line) → whether flash attention ran
/// (auto: on, as llama.cpp resolves it where the backend supports it).
pub fn flash(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "enabled" | "auto" | "-1" => Some(true),
        "0" | "off" | "false" | "disabled" => Some(false),
        _ => None,
    }
}

/// The build number of a build line in any spelling llama.cpp's tools
/// print: llama-bench's `build: <commit> (<number>)` under a table, the
/// 2023-2024 tools' `main: build = <number> (<commit>)` and today's
/// `build: <number> (<commit>) with <compiler> for <target>`; `None` for
/// another line, 0 (a build outside llama.cpp's tree), or a number past any
/// build llama.cpp has tagged.
fn build_line(line: &str) -> Option<u64> {
    let t = line.trim();
    // 2026 builds: `common_params_print_info: build 9284 (afcda09d1) with
    // GNU 11.4.0 for Linux x86_64` after a time and level prefix (June
    // 2026 on, at -lv 4), `version: 9209 (0caf2a1d4)` (`--version`).
    if let Some(i) = t.find("common_params_print_info: build ") {
        return build_number_first(&t[i + "common_params_print_info: build ".len()..]);
    }
    if let Some(rest) = t.strip_prefix("version:") {
        return build_number_first(rest);
    }
    let t = t.strip_prefix("main:").map_or(t, str::trim_start);
    let rest = t.strip_prefix("build")?.trim_start();
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix('='))?
        .trim();
    let (head, tail) = rest.split_once('(')?;
    let inner = tail.split_once(')')?.0.trim();
    let n: u64 = inner.parse().ok().or_else(|| head.trim().parse().ok())?;
    (n > 0 && n < 1_000_000).then_some(n)
}

/// `9284 (afcda09d1) …` → 9284: a build number followed by its commit in
/// parentheses.
fn build_number_first(rest: &str) -> Option<u64> {
    let (head, tail) = rest.trim().split_once(' ')?;
    tail.trim_start().starts_with('(').then_some(())?;
    let n: u64 = head.parse().ok()?;
    (n > 0 && n < 1_000_000).then_some(n)
}

/// The first build month whose llama-bench runs with flash attention
/// `auto` (on wherever the backend runs it) when `-fa` is not given:
/// llama-bench kept `-fa <0|1>`, default 0, through the build vendored in
/// llama-cpp-python 0.3.23 (llama.cpp 7d442abf, May 2026), and has `-fa
/// <on|off|auto>`, default `auto`, with an integer `flash_attn` field
/// (-1/0/1) in the one of 0.3.24 (af6528e6d, b9445, 2026-06-01), PR
/// 23714 ("Support `-fa auto` in llama-bench", opened 2026-05-26). The
/// server and CLI took `auto` in August 2025 (PR 15434); llama-bench did
/// not.
pub const LLAMA_BENCH_FA_AUTO_SINCE: crate::plan::speed::BuildMonth =
    crate::plan::speed::BuildMonth::ym(2026, 6);

/// Whether a llama.cpp CUDA or HIP build forced its MMQ kernels
/// (`GGML_CUDA_FORCE_MMQ`, [`crate::plan::InferenceOptions::cuda_force_mmq`]),
/// as its start-up lines print it on every run: `ggml_cuda_init:
/// GGML_CUDA_FORCE_MMQ:    yes` (June 2024 on), `ggml_init_cublas:
/// GGML_CUDA_FORCE_MMQ:   yes` (before; the make option was then named
/// `LLAMA_CUDA_FORCE_MMQ`, which is read too). `None` where the text holds
/// no such line, or its lines disagree (outputs of several builds pasted
/// together). Pure; looks at the first [`MAX_FORCE_MMQ_LINES`] such lines
/// only (a run prints one).
pub fn cuda_force_mmq(text: &str) -> Option<bool> {
    const KEY: &str = "CUDA_FORCE_MMQ:";
    let mut seen = None;
    for (at, _) in text.match_indices(KEY).take(MAX_FORCE_MMQ_LINES) {
        let prefix = &text[..at];
        if !(prefix.ends_with("GGML_") || prefix.ends_with("LLAMA_")) {
            continue;
        }
        let value = text[at + KEY.len()..]
            .split('\n')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("");
        let is = |words: &[&str]| words.iter().any(|w| value.eq_ignore_ascii_case(w));
        let v = if is(&["yes", "true", "on", "1"]) {
            true
        } else if is(&["no", "false", "off", "0"]) {
            false
        } else {
            continue;
        };
        match seen {
            None => seen = Some(v),
            Some(s) if s != v => return None,
            Some(_) => {}
        }
    }
    seen
}

/// The matrix path llama.cpp's Vulkan backend took, as a run's device
/// lines print it: `ggml_vulkan: 0 = NVIDIA GeForce RTX 5090 (NVIDIA) |
/// uma: 0 | fp16: 1 | bf16: 1 | warp size: 32 | shared memory: 49152 | int
/// dot: 1 | matrix cores: NV_coopmat2` (`ggml_vk_print_gpu_info`; `matrix
/// cores: KHR_coopmat` or `none` on other devices; builds before
/// cooperative matrices print no such field). `None` where no device line
/// prints it, or the devices' lines disagree (several GPUs, or outputs
/// pasted together). Pure; looks at the first [`MAX_FORCE_MMQ_LINES`]
/// device lines only.
pub fn vulkan_matrix_cores(text: &str) -> Option<super::VulkanMatrixCores> {
    use super::VulkanMatrixCores as M;
    const KEY: &str = "matrix cores:";
    let mut seen = None;
    for line in text
        .lines()
        .filter(|l| l.contains("ggml_vulkan:") && l.contains(KEY))
        .take(MAX_FORCE_MMQ_LINES)
    {
        let at = line.rfind(KEY).unwrap_or_default();
        let value = line[at + KEY.len()..]
            .split(['|', ' ', '\t'])
            .find(|w| !w.is_empty())
            .unwrap_or("");
        let v = match value {
            "NV_coopmat2" => M::NvCoopmat2,
            "KHR_coopmat" => M::KhrCoopmat,
            "none" => M::None,
            _ => continue,
        };
        match seen {
            None => seen = Some(v),
            Some(s) if s != v => return None,
            Some(_) => {}
        }
    }
    seen
}

/// Lines naming the option that [`cuda_force_mmq`] looks at: a run prints
/// one; a text holding more (many runs pasted, or a hostile file) is not
/// searched past them.
pub const MAX_FORCE_MMQ_LINES: usize = 1024;

/// `2026-11-26T19:06:47Z` → its month.
fn run_month(v: &str) -> Option<crate::plan::speed::BuildMonth> {
    crate::plan::speed::BuildMonth::parse(v.get(..7)?)
}

/// llama.cpp build numbers whose month a calibration source prints beside
/// them (`tests/calibration/builds.csv`: b1786 in PR 4812, b2701 and b2725
/// in lhl's W7900 notes, b3891 and b4418 in his MI300X and DeepSeek notes,
/// b4276 and b4327 in his RDNA3 and SYCL notes, b5376 in PR 12972, b5583 in
/// PR 14001, b5863 in lhl's strix-halo-testing, b6413 in his RTX PRO 6000
/// notes, b6918 in llama.cpp's benches/dgx-spark.md, b7199 in
/// anant-pathak's A30 runs, b8038 in visorcraft's strix-halo-llm-perf,
/// b10298 in issue 26663), increasing.
const BUILD_MONTHS: &[(u64, u32, u32)] = &[
    (1786, 2024, 1),
    (2701, 2024, 4),
    (2725, 2024, 4),
    (3891, 2024, 10),
    (4276, 2024, 12),
    (4327, 2024, 12),
    (4418, 2025, 1),
    (5376, 2025, 5),
    (5583, 2025, 6),
    (5863, 2025, 7),
    (6413, 2025, 9),
    (6918, 2025, 11),
    (7199, 2025, 12),
    (8038, 2026, 2),
    (10298, 2026, 8),
];

/// The month of llama.cpp build `number`: linear in the build number
/// between the two anchors of `BUILD_MONTHS` around it (llama.cpp tags
/// a build per merged commit, so numbers grow steadily with time), the
/// first anchor's month before it (at least that old) and the last's after
/// it (at least that new).
pub fn build_month(number: u64) -> Option<crate::plan::speed::BuildMonth> {
    use crate::plan::speed::BuildMonth;
    let month = |(_, y, m): (u64, u32, u32)| f64::from(y * 12 + m - 1);
    let first = *BUILD_MONTHS.first()?;
    let last = *BUILD_MONTHS.last()?;
    let index = if number <= first.0 {
        month(first)
    } else if number >= last.0 {
        month(last)
    } else {
        let w = BUILD_MONTHS.windows(2).find(|w| number <= w[1].0)?;
        let (a, b) = (w[0], w[1]);
        let t = (number - a.0) as f64 / (b.0 - a.0) as f64;
        month(a) + t * (month(b) - month(a))
    };
    let index = index.round() as u32;
    BuildMonth::parse(&format!("{:04}-{:02}", index / 12, index % 12 + 1))
}

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

fn markdown(text: &str, out: &mut Vec<BenchRow>) {
    let mut header: Option<Vec<String>> = None;
    // The first row of the table being read: llama-bench prints its build
    // line under each table.
    let mut table_start = out.len();
    // The last build line: a paste that puts it above the table instead
    // (the only one in the text) still dates the rows below it.
    let mut last_build = None;
    for line in text.lines() {
        if out.len() >= MAX_ROWS {
            break;
        }
        let t = line.trim();
        if let Some(n) = build_line(t) {
            for r in &mut out[table_start..] {
                r.build_number.get_or_insert(n);
            }
            table_start = out.len();
            last_build = Some(n);
            continue;
        }
        // A table row: `| … |` as llama-bench prints it, or `a | b | c`
        // without the outer pipes, as GitHub's rendered table reads when
        // copied and pasted back (`-- | --` under its header).
        if !t.starts_with('|') && !t.contains(" | ") {
            header = None;
            continue;
        }
        let c = cells(t);
        if c.iter().any(|x| x == "model") && c.iter().any(|x| x == "t/s") {
            header = Some(c);
            continue;
        }
        let Some(h) = &header else { continue };
        if c.len() != h.len()
            || c.iter()
                .all(|x| x.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        }
        let col = |name: &str| h.iter().position(|x| x == name).map(|i| c[i].as_str());
        let Some((n_prompt, n_gen, n_depth)) = col("test").and_then(test) else {
            continue;
        };
        let Some((tokens_per_s, stddev)) = col("t/s").and_then(rate) else {
            continue;
        };
        out.push(BenchRow {
            model: col("model").unwrap_or_default().to_string(),
            size_bytes: col("size").and_then(size),
            params: col("params").and_then(params),
            // `be` and `th`: the short column names of later llama-bench
            // printers (forks that add `cyc` and `ipc` columns).
            backend: col("backend")
                .or_else(|| col("be"))
                .map(str::to_string)
                .filter(|b| !b.is_empty()),
            n_gpu_layers: col("ngl").and_then(|v| v.parse().ok()),
            n_cpu_moe: col("n_cpu_moe").and_then(|v| v.parse().ok()),
            n_ubatch: col("n_ubatch").and_then(|v| v.parse().ok()),
            threads: col("threads")
                .or_else(|| col("th"))
                .and_then(|v| v.parse().ok()),
            n_prompt,
            n_gen,
            n_depth,
            tokens_per_s,
            stddev,
            flash_attn: col("fa").and_then(flash),
            build_number: None,
            run_month: None,
            type_k: col("type_k").and_then(cache_type),
            type_v: col("type_v").and_then(cache_type),
            tensor_overrides: col("ot").and_then(overrides),
        });
    }
    if let Some(n) = last_build {
        for r in &mut out[table_start..] {
            r.build_number.get_or_insert(n);
        }
    }
}

/// One JSON object of `-o json`/`-o jsonl`.
fn from_object(o: &serde_json::Map<String, serde_json::Value>) -> Option<BenchRow> {
    let u = |k: &str| o.get(k).and_then(serde_json::Value::as_u64);
    let f = |k: &str| o.get(k).and_then(serde_json::Value::as_f64);
    let s = |k: &str| {
        o.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let tokens_per_s = f("avg_ts").filter(|v| v.is_finite() && *v >= 0.0)?;
    let (n_prompt, n_gen) = (u("n_prompt").unwrap_or(0), u("n_gen").unwrap_or(0));
    if n_prompt == 0 && n_gen == 0 {
        return None;
    }
    Some(BenchRow {
        model: s("model_type").unwrap_or_default(),
        size_bytes: u("model_size"),
        params: u("model_n_params"),
        backend: s("backends").or_else(|| s("backend")),
        n_gpu_layers: o.get("n_gpu_layers").and_then(serde_json::Value::as_i64),
        n_cpu_moe: u("n_cpu_moe").and_then(|t| u32::try_from(t).ok()),
        n_ubatch: u("n_ubatch"),
        threads: u("n_threads").and_then(|t| u32::try_from(t).ok()),
        n_prompt,
        n_gen,
        n_depth: u("n_depth").unwrap_or(0),
        tokens_per_s,
        stddev: f("stddev_ts").filter(|v| v.is_finite() && *v >= 0.0),
        flash_attn: match o.get("flash_attn") {
            Some(serde_json::Value::Bool(b)) => Some(*b),
            Some(serde_json::Value::Number(n)) => flash(&n.to_string()),
            Some(serde_json::Value::String(v)) => flash(v),
            _ => None,
        },
        build_number: u("build_number").filter(|n| *n > 0 && *n < 1_000_000),
        run_month: s("test_time").as_deref().and_then(run_month),
        type_k: s("type_k").as_deref().and_then(cache_type),
        type_v: s("type_v").as_deref().and_then(cache_type),
        tensor_overrides: s("tensor_buft_overrides").as_deref().and_then(overrides),
    })
}

/// A KV cache type as `ggml_type_name` prints it (lowercase letters,
/// digits and `_`, at most 16); anything else is not one.
fn cache_type(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty()
        && v.len() <= 16
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
    .then(|| v.to_string())
}

/// An `-ot` value as printed; `none` (or empty) is no override. At most
/// 1 KiB is kept.
fn overrides(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && v != "none").then(|| v.chars().take(1024).collect())
}

/// Split one CSV line (`-o csv` quotes every field; quotes inside are doubled).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv(text: &str, out: &mut Vec<BenchRow>) {
    let mut header: Option<Vec<String>> = None;
    for line in text.lines() {
        if out.len() >= MAX_ROWS {
            return;
        }
        let f = csv_fields(line.trim());
        if f.iter().any(|x| x == "avg_ts") && f.iter().any(|x| x == "n_prompt") {
            header = Some(f);
            continue;
        }
        let Some(h) = &header else { continue };
        if f.len() != h.len() {
            continue;
        }
        let obj: serde_json::Map<String, serde_json::Value> = h
            .iter()
            .zip(&f)
            .map(|(k, v)| {
                let value = v
                    .parse::<u64>()
                    .map(serde_json::Value::from)
                    .or_else(|_| v.parse::<i64>().map(serde_json::Value::from))
                    .or_else(|_| v.parse::<f64>().map(serde_json::Value::from))
                    .unwrap_or_else(|_| serde_json::Value::from(v.as_str()));
                (k.clone(), value)
            })
            .collect();
        if let Some(r) = from_object(&obj) {
            out.push(r);
        }
    }
}

/// Read llama-bench output (any of its formats; several tables, or
/// tables among other text, are all read). At most 4 MiB of text.
pub fn parse_llama_bench(text: &str) -> Vec<BenchRow> {
    let text = match text.char_indices().nth(4 << 20) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        if let Ok(serde_json::Value::Array(a)) = serde_json::from_str::<serde_json::Value>(trimmed)
        {
            out.extend(
                a.iter()
                    .filter_map(|v| v.as_object())
                    .filter_map(from_object)
                    .take(MAX_ROWS),
            );
            return out;
        }
    }
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('{') && out.len() < MAX_ROWS {
            if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(l) {
                out.extend(from_object(&o));
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    markdown(text, &mut out);
    if out.is_empty() {
        csv(text, &mut out);
    }
    out
}

/// The planner's quantization for llama.cpp's file-type name at the end of
/// a model description (`Q4_0`, `Q4_K - Medium`, `F16`, `BF16`): the names
/// of `llama_model_ftype_name` (`src/llama-model-loader.cpp`), which appends
/// ` (guessed)` to a type the loader inferred from the tensors (a file
/// without `general.file_type`); the 2023 builds' `mostly Q4_1, some F16`
/// is Q4_1. `None` for a type the planner has no format for (the i-quants
/// below 4 bits, the ternary TQ1_0 and TQ2_0, Q1_0).
pub fn quant_of_model(model: &str) -> Option<crate::plan::Quant> {
    use crate::plan::Quant;
    let upper = model.trim().to_ascii_uppercase();
    let m = upper.strip_suffix(" (GUESSED)").unwrap_or(&upper);
    let name = [
        ("Q4_1, SOME F16", Quant::Q4_1),
        ("MXFP4 MOE", Quant::Mxfp4),
        ("NVFP4", Quant::Nvfp4),
        ("Q4_K - MEDIUM", Quant::Q4K),
        ("Q4_K - SMALL", Quant::Q4KS),
        ("Q5_K - MEDIUM", Quant::Q5K),
        ("Q5_K - SMALL", Quant::Q5KS),
        ("Q3_K - MEDIUM", Quant::Q3K),
        ("Q3_K - SMALL", Quant::Q3KS),
        ("Q3_K - LARGE", Quant::Q3KL),
        ("Q2_K - MEDIUM", Quant::Q2K),
        ("Q2_K - SMALL", Quant::Q2KS),
        ("IQ4_NL - 4.5 BPW", Quant::Iq4Nl),
        ("IQ4_XS - 4.25 BPW", Quant::Iq4Xs),
        // `llama_model_ftype_name`: IQ3_M prints as "IQ3_S mix".
        ("IQ3_S MIX - 3.66 BPW", Quant::Iq3M),
        ("IQ3_S - 3.4375 BPW", Quant::Iq3S),
        ("IQ3_XS - 3.3 BPW", Quant::Iq3Xs),
        ("IQ3_XXS - 3.0625 BPW", Quant::Iq3Xxs),
        ("IQ2_M - 2.7 BPW", Quant::Iq2M),
        ("IQ2_S - 2.5 BPW", Quant::Iq2S),
        ("IQ2_XS - 2.3125 BPW", Quant::Iq2Xs),
        ("IQ2_XXS - 2.0625 BPW", Quant::Iq2Xxs),
        ("IQ1_M - 1.75 BPW", Quant::Iq1M),
        ("IQ1_S - 1.5625 BPW", Quant::Iq1S),
        ("Q6_K", Quant::Q6K),
        ("Q8_0", Quant::Q8_0),
        ("Q4_0", Quant::Q4_0),
        ("Q4_1", Quant::Q4_1),
        ("Q5_0", Quant::Q5_0),
        ("Q5_1", Quant::Q5_1),
        ("BF16", Quant::Bf16),
        ("F16", Quant::Fp16),
        ("F32", Quant::Fp32),
    ];
    name.iter().find(|(n, _)| m.ends_with(n)).map(|(_, q)| *q)
}

/// One line of llama.cpp's `llama-batched-bench` results: `B` sequences
/// each given a `PP`-token prompt (one shared prompt with `-pps`) and then
/// `TG` tokens decoded together, one token per sequence per step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchedRow {
    /// Prompt tokens per sequence (`PP`).
    pub pp: u64,
    /// Tokens each sequence generates (`TG`).
    pub tg: u64,
    /// Sequences decoded together (`B`; JSONL `pl`).
    pub batch: u64,
    /// KV cache cells the test filled (`N_KV`).
    pub n_kv: u64,
    /// Seconds of the prompts (`T_PP s`).
    pub pp_seconds: f64,
    /// Prompt tokens per second over all sequences (`S_PP t/s`; with a
    /// shared prompt, of that one prompt).
    pub pp_tokens_per_s: f64,
    /// Seconds of the decode steps (`T_TG s`).
    pub tg_seconds: f64,
    /// Tokens generated per second over all sequences (`S_TG t/s`):
    /// `B × TG ÷ T_TG`.
    pub tg_tokens_per_s: f64,
}

/// A `llama-batched-bench` run: the settings its header line prints and
/// its rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchedBench {
    /// KV cache cells (`n_kv_max`).
    pub n_kv_max: Option<u64>,
    /// Logical batch (`n_batch`; printed since 2024).
    pub n_batch: Option<u64>,
    /// Physical micro-batch (`n_ubatch`; printed since 2024).
    pub n_ubatch: Option<u64>,
    /// Flash attention (`flash_attn = 0/1`, `-1` auto since 2025; not
    /// printed by the 2023 builds, which had none).
    pub flash_attn: Option<bool>,
    /// One prompt shared by every sequence (`is_pp_shared`, `-pps`).
    pub pp_shared: Option<bool>,
    /// `n_gpu_layers` as printed.
    pub n_gpu_layers: Option<i64>,
    /// llama.cpp's build number, where a build line is in the text.
    pub build_number: Option<u64>,
    /// The weights' file type where the loader's log is in the text, as
    /// [`super::log::parse_llamacpp_log`] reads it (`print_info: file type
    /// = Q4_0`; `llm_load_print_meta: model ftype = Q4_K - Medium`).
    pub file_type: Option<String>,
    /// The ggml GPU backend, where the loader's log is in the text
    /// ([`super::log::LlamaCppLog::backend`]).
    pub backend: Option<super::GgmlBackend>,
    /// The result lines, in the printed order.
    pub rows: Vec<BatchedRow>,
}

/// The `key = value` pairs of batched-bench's settings line
/// (`main: n_kv_max = 2048, is_pp_shared = 0, n_gpu_layers = 99, …`;
/// `llama_batched_bench:` since 2025) into `b`.
fn batched_settings(line: &str, b: &mut BatchedBench) {
    let rest = line.split_once(':').map_or(line, |(_, r)| r);
    for kv in rest.split(',') {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "n_kv_max" => b.n_kv_max = v.parse().ok(),
            "n_batch" => b.n_batch = v.parse().ok(),
            "n_ubatch" => b.n_ubatch = v.parse().ok(),
            "flash_attn" => b.flash_attn = flash(v),
            "is_pp_shared" => b.pp_shared = v.parse::<u8>().ok().map(|x| x != 0),
            "n_gpu_layers" => b.n_gpu_layers = v.parse().ok(),
            _ => {}
        }
    }
}

/// One row from JSONL (`"pp"`, `"tg"`, `"pl"`, `"n_kv"`, `"t_pp"`,
/// `"speed_pp"`, `"t_tg"`, `"speed_tg"`; llama.cpp's
/// `--output-format jsonl`), its settings into `b`.
fn batched_json(
    o: &serde_json::Map<String, serde_json::Value>,
    b: &mut BatchedBench,
) -> Option<BatchedRow> {
    let u = |k: &str| o.get(k).and_then(serde_json::Value::as_u64);
    let f = |k: &str| {
        o.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    let row = BatchedRow {
        pp: u("pp")?,
        tg: u("tg")?,
        batch: u("pl")?,
        n_kv: u("n_kv")?,
        pp_seconds: f("t_pp")?,
        pp_tokens_per_s: f("speed_pp")?,
        tg_seconds: f("t_tg")?,
        tg_tokens_per_s: f("speed_tg")?,
    };
    b.n_kv_max = b.n_kv_max.or(u("n_kv_max"));
    b.n_batch = b.n_batch.or(u("n_batch"));
    b.n_ubatch = b.n_ubatch.or(u("n_ubatch"));
    if let Some(fa) = o.get("flash_attn").and_then(serde_json::Value::as_i64) {
        b.flash_attn = b.flash_attn.or(flash(&fa.to_string()));
    }
    if let Some(s) = u("is_pp_shared") {
        b.pp_shared = b.pp_shared.or(Some(s != 0));
    }
    b.n_gpu_layers = b
        .n_gpu_layers
        .or(o.get("n_gpu_layers").and_then(serde_json::Value::as_i64));
    Some(row)
}

/// Read `llama-batched-bench` output: its Markdown table (columns found by
/// name: `PP`, `TG`, `B`, `N_KV`, `T_PP s`, `S_PP t/s`, `T_TG s`,
/// `S_TG t/s`, as every build since the tool's first in October 2023
/// prints them) or its JSONL lines, with the settings line, a build line
/// and the loader's file type where the text has them. At most 4 MiB of
/// text and 10,000 rows; `None` when no row is found.
pub fn parse_batched_bench(text: &str) -> Option<BatchedBench> {
    let text = match text.char_indices().nth(4 << 20) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let mut b = BatchedBench::default();
    let mut header: Option<Vec<String>> = None;
    for line in text.lines() {
        if b.rows.len() >= MAX_ROWS {
            break;
        }
        let t = line.trim();
        if let Some(n) = build_line(t) {
            b.build_number.get_or_insert(n);
            continue;
        }
        if t.contains("n_kv_max =") {
            batched_settings(t, &mut b);
            continue;
        }
        if t.starts_with('{') {
            if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(t) {
                if let Some(r) = batched_json(&o, &mut b) {
                    b.rows.push(r);
                }
            }
            continue;
        }
        if !t.starts_with('|') {
            header = None;
            continue;
        }
        let c = cells(t);
        if c.iter().any(|x| x == "S_TG t/s") && c.iter().any(|x| x == "B") {
            header = Some(c);
            continue;
        }
        let Some(h) = &header else { continue };
        let get = |name: &str| h.iter().position(|x| x == name).and_then(|i| c.get(i));
        let int = |name: &str| get(name).and_then(|v| v.parse::<u64>().ok());
        let num = |name: &str| {
            get(name)
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let row = (|| {
            Some(BatchedRow {
                pp: int("PP")?,
                tg: int("TG")?,
                batch: int("B")?,
                n_kv: int("N_KV")?,
                pp_seconds: num("T_PP s")?,
                pp_tokens_per_s: num("S_PP t/s")?,
                tg_seconds: num("T_TG s")?,
                tg_tokens_per_s: num("S_TG t/s")?,
            })
        })();
        b.rows.extend(row);
    }
    if b.rows.is_empty() {
        return None;
    }
    // The loader's lines, as `check` reads them from any llama.cpp log.
    let log = super::log::parse_llamacpp_log(text);
    b.file_type = log.file_type.clone();
    b.backend = log.backend();
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_mmq_is_read_from_every_spelling_of_the_start_up_lines() {
        let dir = |name: &str| -> &'static str {
            match name {
                "2024-yes" => include_str!(
                    "../../../tests/fixtures/runtime-logs/llamacpp-pr5631__rtx3090ti-2024-02-force-mmq-yes.log"
                ),
                "2025-yes" => include_str!(
                    "../../../tests/fixtures/runtime-logs/ik-llama-issue664__3x-rtx3090-2025-08-force-mmq-yes.log"
                ),
                "2024-no" => include_str!(
                    "../../../tests/fixtures/runtime-logs/llama-bench-pr4766__rtx4090-2024-01-force-mmq-no.md"
                ),
                _ => include_str!(
                    "../../../tests/fixtures/runtime-logs/llamacpp-pr14363__rtx4070super-2025-07-force-mmq-no.log"
                ),
            }
        };
        assert_eq!(cuda_force_mmq(dir("2024-yes")), Some(true));
        assert_eq!(cuda_force_mmq(dir("2025-yes")), Some(true));
        assert_eq!(cuda_force_mmq(dir("2024-no")), Some(false));
        assert_eq!(cuda_force_mmq(dir("2025-no")), Some(false));
        // The table of the 2024 output still reads as before.
        let rows = parse_llama_bench(dir("2024-no"));
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[4].tokens_per_s, 7979.85);
        // Windows line ends; the make option's old name.
        assert_eq!(
            cuda_force_mmq("x: LLAMA_CUDA_FORCE_MMQ: yes\r\n"),
            Some(true)
        );
        // No line, a cmake flag, another backend's option, a value it does
        // not know: no answer.
        assert_eq!(cuda_force_mmq("| llama 7B Q4_0 | 3.56 GiB |"), None);
        assert_eq!(cuda_force_mmq("cmake -DGGML_CUDA_FORCE_MMQ=ON"), None);
        assert_eq!(
            cuda_force_mmq("ggml_sycl_init: GGML_SYCL_FORCE_MMQ:   yes"),
            None
        );
        assert_eq!(
            cuda_force_mmq("ggml_cuda_init: GGML_CUDA_FORCE_MMQ: maybe"),
            None
        );
        assert_eq!(cuda_force_mmq("ggml_cuda_init: GGML_CUDA_FORCE_MMQ:"), None);
        // Two builds' outputs pasted together that disagree: no answer.
        let both = format!("{}{}", dir("2025-yes"), dir("2025-no"));
        assert_eq!(cuda_force_mmq(&both), None);
        let twice = format!("{}{}", dir("2025-yes"), dir("2024-yes"));
        assert_eq!(cuda_force_mmq(&twice), Some(true));
    }

    #[test]
    fn batched_bench_table_and_jsonl_are_read() {
        // The lent H100's run (tests/fixtures/lent-h100, SOURCES.md).
        let text = include_str!("../../../tests/fixtures/lent-h100/batched-bench__l7b-q4_0.txt");
        let b = parse_batched_bench(text).unwrap();
        assert_eq!(b.rows.len(), 8);
        assert_eq!(
            (
                b.n_kv_max,
                b.n_batch,
                b.n_ubatch,
                b.flash_attn,
                b.pp_shared,
                b.n_gpu_layers
            ),
            (
                Some(98304),
                Some(2048),
                Some(512),
                Some(false),
                Some(false),
                Some(99)
            )
        );
        let last = &b.rows[7];
        assert_eq!(
            (last.pp, last.tg, last.batch, last.n_kv),
            (512, 128, 128, 81920)
        );
        assert_eq!((last.pp_seconds, last.pp_tokens_per_s), (6.002, 10919.79));
        assert_eq!((last.tg_seconds, last.tg_tokens_per_s), (6.626, 2472.85));
        assert_eq!(
            b.rows.iter().map(|r| r.batch).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32, 64, 128]
        );
        // JSONL (`--output-format jsonl`), the settings in every line, with
        // a build line and a loader line around it; flash attention `-1`
        // (auto) resolves on.
        // The lent H100's output holds no loader lines: no backend named.
        assert_eq!(b.backend, None);
        let jsonl = "print_info: file type   = Q4_K - Medium\n\
            llama_prepare_model_devices: using device SYCL0 (Intel(R) Arc(TM) A770 Graphics) - 15976 MiB free\n\
            {\"n_kv_max\": 4096, \"n_batch\": 2048, \"n_ubatch\": 512, \"flash_attn\": -1, \"is_pp_shared\": 1, \"n_gpu_layers\": -1, \"n_threads\": 8, \"n_threads_batch\": 8, \"pp\": 128, \"tg\": 32, \"pl\": 4, \"n_kv\": 256, \"t_pp\": 0.012000, \"speed_pp\": 10666.666016, \"t_tg\": 0.300000, \"speed_tg\": 426.666656, \"t\": 0.312000, \"speed\": 820.512817}\n\
            {\"pp\": 128, \"tg\": 32, \"pl\": \"x\"}\n\
            build: 6918 (2f68ce7cf) with cc for x86_64-linux-gnu\n";
        let b = parse_batched_bench(jsonl).unwrap();
        assert_eq!(b.rows.len(), 1, "the malformed line is skipped");
        assert_eq!(b.backend, Some(crate::plan::runtime::GgmlBackend::Sycl));
        assert_eq!(
            (b.flash_attn, b.pp_shared, b.n_gpu_layers),
            (Some(true), Some(true), Some(-1))
        );
        assert_eq!(
            (b.rows[0].batch, b.rows[0].tg_tokens_per_s),
            (4, 426.666656)
        );
        assert_eq!(b.build_number, Some(6918));
        assert_eq!(b.file_type.as_deref(), Some("Q4_K - Medium"));
        // The 2023 builds' settings line (no n_batch, n_ubatch or flash
        // attention) and `ftype = mostly Q4_0`.
        let old = "llm_load_print_meta: model ftype = mostly Q4_0\n\
            main: n_kv_max = 2048, is_pp_shared = 0, n_gpu_layers = 999, mmq = 0, n_threads = 16, n_threads_batch = 16\n\n\
            |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n\
            |-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n\
            |   128 |    128 |    1 |    256 |    0.108 |  1186.64 |    3.079 |    41.57 |    3.187 |    80.32 |\n\
            |   128 |    128 |    2 |    nan |    0.108 |  1186.64 |    3.079 |    41.57 |    3.187 |    80.32 |\n";
        let b = parse_batched_bench(old).unwrap();
        assert_eq!(b.rows.len(), 1, "a row with a non-number is skipped");
        assert_eq!(
            (b.n_kv_max, b.n_batch, b.flash_attn),
            (Some(2048), None, None)
        );
        assert_eq!(b.file_type.as_deref(), Some("mostly Q4_0"), "as printed");
        assert_eq!(
            quant_of_model(b.file_type.as_deref().unwrap()),
            Some(crate::plan::Quant::Q4_0)
        );
        assert!(parse_batched_bench("| model | test | t/s |\n| --- | --- | --- |\n").is_none());
        assert!(parse_batched_bench("").is_none());
    }

    /// The columns llama-bench prints only when set (`type_k`, `type_v`,
    /// `ot`: `markdown_printer::print_header`), and the JSON fields behind
    /// them (`test::get_values`: `ggml_type_name` of each cache type;
    /// `tensor_buft_overrides` as `pattern=BUFFER` pairs joined by `;`, or
    /// `none`). The Markdown rows are those of a published run of a
    /// Qwen3.5-35B-A3B IQ2_XXS with its experts of layers 15-19 kept on the
    /// CPU (build bc7c2e3d3, April 2026), the `be`/`th` header that of a
    /// fork's printer (`get_field_display_name`: `backend` → `be`,
    /// `n_threads` → `th`).
    /// `n_ubatch`: the column llama-bench prints where a run set `-ub`
    /// (the GB10 table of llama.cpp's benches/dgx-spark.md), and the JSON
    /// field every record carries.
    #[test]
    fn micro_batch_column_and_field_are_read() {
        let md = "| model                          |       size |     params | backend    | ngl | n_ubatch | fa | mmap |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -------: | -: | ---: | --------------: | -------------------: |
| gpt-oss 20B MXFP4 MoE          |  11.27 GiB |    20.91 B | CUDA       |  99 |     2048 |  1 |    0 |          pp2048 |       3782.76 ± 9.90 |
";
        let r = &parse_llama_bench(md)[0];
        assert_eq!((r.n_ubatch, r.n_prompt), (Some(2048), 2048));
        let json = r#"[{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0, "n_ubatch": 512},
{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0}]"#;
        let rows = parse_llama_bench(json);
        assert_eq!((rows[0].n_ubatch, rows[1].n_ubatch), (Some(512), None));
        let without = "| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | pp512 | 9000.00 ± 1.00 |
";
        assert_eq!(parse_llama_bench(without)[0].n_ubatch, None);
    }

    #[test]
    fn cache_types_overrides_and_short_column_names_are_read() {
        let md = "| model                          |       size |     params | backend    | ngl | type_k | type_v | fa | ot                    |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -----: | -----: | -: | --------------------- | --------------: | -------------------: |
| qwen35moe 35B.A3B IQ2_XXS - 2.0625 bpw |  10.01 GiB |    34.66 B | CUDA       |  99 |    f16 |    f16 |  1 | blk.1[5-9].ffn_.*_exps.=CPU |           pp512 |        546.77 ± 0.00 |
| qwen35moe 35B.A3B IQ2_XXS - 2.0625 bpw |  10.01 GiB |    34.66 B | CUDA       |  99 |    f16 |   q8_0 |  1 | blk.1[5-9].ffn_.*_exps.=CPU |           tg128 |         44.70 ± 0.00 |
";
        let rows = parse_llama_bench(md);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].type_k.as_deref(), Some("f16"));
        assert_eq!(rows[1].type_v.as_deref(), Some("q8_0"));
        assert_eq!(
            rows[0].tensor_overrides.as_deref(),
            Some("blk.1[5-9].ffn_.*_exps.=CPU")
        );
        assert!(rows.iter().all(BenchRow::overrides_to_host));
        let short = "| model | size | params | be | ngl | th | test | t/s |
| --- | ---: | ---: | --- | --: | --: | ---: | ---: |
| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | 8 | pp512@d4096 | 9000.00 ± 1.00 |
";
        let r = &parse_llama_bench(short)[0];
        assert_eq!(r.backend.as_deref(), Some("CUDA"));
        assert_eq!(r.threads, Some(8));
        assert_eq!((r.n_prompt, r.n_depth), (512, 4096));
        assert!(r.type_k.is_none() && r.tensor_overrides.is_none());
        // JSON: `none` is no override; another GPU's buffer is not the host.
        let json = r#"[{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0, "type_k": "q8_0", "type_v": "q8_0", "tensor_buft_overrides": "none"},
{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0, "type_k": "f16", "type_v": "f16", "tensor_buft_overrides": "blk\\.[0-9]\\.ffn_.*=CUDA1;output=CUDA1"},
{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0, "tensor_buft_overrides": "blk\\.0\\.ffn_up.*=CUDA0;exps=CPU_REPACK"},
{"model_type": "llama 8B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0, "type_k": "<script>", "tensor_buft_overrides": ""}]"#;
        let rows = parse_llama_bench(json);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].type_k.as_deref(), Some("q8_0"));
        assert!(rows[0].tensor_overrides.is_none());
        assert!(rows[1].tensor_overrides.is_some() && !rows[1].overrides_to_host());
        assert!(rows[2].overrides_to_host());
        assert!(rows[3].type_k.is_none() && rows[3].tensor_overrides.is_none());
        // A command line's `,`-separated groups pasted as one value; a
        // pattern's own `{1,2}` leaves its buffer after the last `=`.
        let with = |o: &str| BenchRow {
            tensor_overrides: Some(o.into()),
            ..rows[0].clone()
        };
        assert!(with("attn=CUDA0,exps=CPU").overrides_to_host());
        assert!(!with("blk\\.[0-9]{1,2}\\.ffn=CUDA1").overrides_to_host());
        assert!(with("blk\\.[0-9]{1,2}\\.ffn_.*_exps=CPU").overrides_to_host());
    }

    #[test]
    fn file_type_names_as_llama_model_ftype_name_prints_them() {
        use crate::plan::Quant;
        for (model, want) in [
            ("llama 8B Q4_K - Medium", Some(Quant::Q4K)),
            ("llama 7B Q4_0 (guessed)", Some(Quant::Q4_0)),
            ("gpt-oss 20B MXFP4 MoE", Some(Quant::Mxfp4)),
            ("llama 8B NVFP4", Some(Quant::Nvfp4)),
            ("llama 7B mostly Q4_1, some F16", Some(Quant::Q4_1)),
            ("llama 7B mostly Q4_0", Some(Quant::Q4_0)),
            ("llama 7B all F32", Some(Quant::Fp32)),
            ("llama 8B BF16", Some(Quant::Bf16)),
            ("qwen2 7B F16", Some(Quant::Fp16)),
            ("llama 8B IQ4_XS - 4.25 bpw", Some(Quant::Iq4Xs)),
            ("llama 8B IQ2_XXS - 2.0625 bpw", Some(Quant::Iq2Xxs)),
            ("llama 8B IQ2_XS - 2.3125 bpw", Some(Quant::Iq2Xs)),
            ("llama 8B IQ3_S mix - 3.66 bpw", Some(Quant::Iq3M)),
            ("llama 8B IQ3_S - 3.4375 bpw", Some(Quant::Iq3S)),
            ("llama 8B IQ3_XXS - 3.0625 bpw", Some(Quant::Iq3Xxs)),
            ("llama 8B IQ1_S - 1.5625 bpw", Some(Quant::Iq1S)),
            ("llama 8B IQ1_M - 1.75 bpw", Some(Quant::Iq1M)),
            ("llama 8B IQ2_M - 2.7 bpw", Some(Quant::Iq2M)),
            ("llama 8B IQ2_S - 2.5 bpw", Some(Quant::Iq2S)),
            ("llama 8B IQ3_XS - 3.3 bpw", Some(Quant::Iq3Xs)),
            // Types the planner has no format for.
            ("bitnet 3B TQ1_0 - 1.69 bpw ternary", None),
            ("llama 8B Q1_0", None),
            ("llama 8B unknown, may not work", None),
        ] {
            assert_eq!(quant_of_model(model), want, "{model}");
        }
    }

    #[test]
    fn build_numbers_date_their_builds() {
        use crate::plan::speed::BuildMonth;
        // Every anchor gives its own month.
        for &(n, y, m) in BUILD_MONTHS {
            assert_eq!(build_month(n), Some(BuildMonth::ym(y, m)), "b{n}");
        }
        // Between anchors: in between, and never decreasing.
        assert_eq!(build_month(3141), Some(BuildMonth::ym(2024, 6)));
        // Issue 22375's builds of spring 2026, between b8038 (Feb 13) and
        // b10298 (Aug): b8460 in March, b8933 in April (the issue that ran
        // both is of 2026-04-25).
        assert_eq!(build_month(8460), Some(BuildMonth::ym(2026, 3)));
        assert_eq!(build_month(8933), Some(BuildMonth::ym(2026, 4)));
        let mut last = build_month(1).unwrap();
        for n in (1..12_000).step_by(37) {
            let b = build_month(n).unwrap();
            assert!(b >= last, "b{n}");
            last = b;
        }
        // Outside the anchors: the nearest anchor's month.
        assert_eq!(build_month(1000), Some(BuildMonth::ym(2024, 1)));
        assert_eq!(build_month(99_999), Some(BuildMonth::ym(2026, 8)));
        assert!(BUILD_MONTHS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn build_lines_flash_columns_and_run_times() {
        assert_eq!(build_line("build: 32d9f7d9 (1786)"), Some(1786));
        assert_eq!(build_line("  build: unknown (0)"), None);
        assert_eq!(build_line("build: x (99999999)"), None);
        assert_eq!(build_line("rebuild: 1 (2)"), None);
        // The other tools' spellings: number first, commit in parentheses.
        assert_eq!(build_line("main: build = 1761 (cb1e281)"), Some(1761));
        assert_eq!(
            build_line("build: 6918 (2f68ce7cf) with cc (GCC) 13.3.0 for x86_64-linux-gnu"),
            Some(6918)
        );
        assert_eq!(build_line("main: build = 0 (unknown)"), None);
        assert_eq!(build_line("build: abc (def)"), None);
        // 2026 spellings: the common parameters' line and `--version`.
        assert_eq!(
            build_line(
                "0.00.047.566 I common_params_print_info: build 9284 (afcda09d1) with GNU 11.4.0 for Linux x86_64"
            ),
            Some(9284)
        );
        assert_eq!(build_line("version: 9209 (0caf2a1d4)"), Some(9209));
        assert_eq!(build_line("version: 0 (unknown)"), None);
        assert_eq!(build_line("common_params_print_info: verbosity = 3"), None);
        for (v, want) in [
            ("1", Some(true)),
            ("on", Some(true)),
            ("auto", Some(true)),
            ("-1", Some(true)),
            ("0", Some(false)),
            ("off", Some(false)),
            ("disabled", Some(false)),
            ("Enabled", Some(true)),
            ("2", None),
        ] {
            assert_eq!(flash(v), want, "{v}");
        }
        let md = "| model | test | fa | t/s |\n| --- | --- | -: | --: |\n\
                  | llama 7B Q4_0 | tg128 | 1 | 100.0 |\n\nbuild: abc (5000)\n\n\
                  | model | test | t/s |\n| --- | --- | --: |\n| llama 7B Q4_0 | pp512 | 9.0 |\n";
        let rows = parse_llama_bench(md);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].flash_attn, rows[0].build_number),
            (Some(true), Some(5000))
        );
        // The second table has no build line of its own: the last one.
        assert_eq!(
            (rows[1].flash_attn, rows[1].build_number),
            (None, Some(5000))
        );
        let json = r#"[{"model_type":"llama 7B Q4_0","n_prompt":0,"n_gen":128,"avg_ts":1.5,
            "flash_attn":false,"build_number":7340,"test_time":"2026-11-24T08:53:34Z"}]"#;
        let r = &parse_llama_bench(json)[0];
        assert_eq!(r.flash_attn, Some(false));
        assert_eq!(r.build_number, Some(7340));
        assert_eq!(
            r.run_month,
            Some(crate::plan::speed::BuildMonth::ym(2026, 11))
        );
        let json = r#"[{"model_type":"x","n_gen":1,"avg_ts":1,"flash_attn":-1,"build_number":0,"test_time":"bad"}]"#;
        let r = &parse_llama_bench(json)[0];
        assert_eq!(
            (r.flash_attn, r.build_number, r.run_month),
            (Some(true), None, None)
        );
    }

    #[test]
    fn tests_and_rates_in_every_spelling() {
        assert_eq!(test("pp512"), Some((512, 0, 0)));
        assert_eq!(test("pp 512"), Some((512, 0, 0)));
        assert_eq!(test("tg 128"), Some((0, 128, 0)));
        assert_eq!(test("pp4096+tg128"), Some((4096, 128, 0)));
        assert_eq!(test("tg128 @ d8192"), Some((0, 128, 8192)));
        assert_eq!(test("pp2048@d4096"), Some((2048, 0, 4096)));
        assert_eq!(test("x"), None);
        assert_eq!(test("pp0"), None);
        assert_eq!(rate("4035.47 ± 157.68"), Some((4035.47, Some(157.68))));
        assert_eq!(rate("66.68 Â± 6.00"), Some((66.68, Some(6.0))));
        assert_eq!(rate("12.5"), Some((12.5, None)));
        assert_eq!(rate("-1 ± 2"), None);
        assert_eq!(
            size("636.18 MiB"),
            Some((636.18f64 * 1_048_576.0).round() as u64)
        );
        assert_eq!(params("751.63 M"), Some(751_630_000));
        assert_eq!(csv_fields(r#""a","b,c","d""e""#), ["a", "b,c", "d\"e"]);
    }

    #[test]
    fn hostile_text_reads_nothing() {
        assert!(parse_llama_bench("").is_empty());
        assert!(parse_llama_bench("| model | t/s |\n| x |").is_empty());
        assert!(parse_llama_bench("[1, 2, {\"avg_ts\": -5, \"n_gen\": 1}]").is_empty());
        let many = "| model | test | t/s |\n".to_string() + &"| m | tg1 | 1 |\n".repeat(20_000);
        assert_eq!(parse_llama_bench(&many).len(), MAX_ROWS);
    }

    /// The matrix path a run's `ggml_vulkan` device line prints.
    #[test]
    fn vulkan_matrix_cores_of_device_lines() {
        use crate::plan::runtime::VulkanMatrixCores as M;
        // geerlingguy/ai-benchmarks issue 25: an RX 9070 XT whose RADV
        // listed no cooperative matrix.
        let none = include_str!(
            "../../../tests/fixtures/runtime-logs/llama-bench-geerlingguy-ai-benchmarks-issue25__rx9070xt-vulkan-matrix-cores-none.md"
        );
        assert_eq!(vulkan_matrix_cores(none), Some(M::None));
        // kyuz0/amd-strix-halo-toolboxes@d1a34bee,
        // benchmark/results-rpc/09-01-2026/*__vulkan_radv__rpc.log.
        let khr = "ggml_vulkan: 0 = AMD Radeon 8060S Graphics (RADV GFX1151) (radv) | uma: 1 | fp16: 1 | bf16: 0 | warp size: 64 | shared memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat";
        assert_eq!(vulkan_matrix_cores(khr), Some(M::KhrCoopmat));
        // llama.cpp PR 15427, jeffbolznv's "5090 before" block.
        let nv2 = "ggml_vulkan: 0 = NVIDIA GeForce RTX 5090 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32 | shared memory: 49152 | int dot: 1 | matrix cores: NV_coopmat2\r\n";
        assert_eq!(vulkan_matrix_cores(nv2), Some(M::NvCoopmat2));
        // Devices (or pasted runs) that disagree: not one path.
        assert_eq!(vulkan_matrix_cores(&format!("{khr}\n{none}")), None);
        // Builds before cooperative matrices print no such field
        // (geerlingguy/ai-benchmarks issue 1, November 2024).
        assert_eq!(
            vulkan_matrix_cores(
                "ggml_vulkan: 0 = AMD Radeon RX 6700 XT (RADV NAVI22) (radv) | uma: 0 | fp16: 1 | warp size: 64"
            ),
            None
        );
        // Not a device line, or a value no build prints.
        assert_eq!(vulkan_matrix_cores("matrix cores: none"), None);
        assert_eq!(
            vulkan_matrix_cores("ggml_vulkan: 0 = X | matrix cores: maybe"),
            None
        );
    }
}
