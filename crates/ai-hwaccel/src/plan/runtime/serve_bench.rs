//! Serving benchmarks' results: the "Serving Benchmark Result" block that
//! vLLM's `vllm bench serve` (earlier `benchmarks/benchmark_serving.py`)
//! and SGLang's `python -m sglang.bench_serving` print, and the JSON or
//! JSONL records they save (`--save-result`, `--output-file`). A pure
//! parser: text in, one [`ServeBench`] per result out.
//!
//! The text is `Key: value` lines between a title line and a rule of `=`.
//! vLLM prints its traffic settings (`Traffic request rate`, `Maximum
//! request concurrency`) before the block until 2025 and inside it after;
//! SGLang prints them inside, with `Backend`, its measured mean
//! `Concurrency` and end-to-end latencies. Keys are read by name (either
//! spelling), lines may carry a `# ` prefix (a result pasted into a shell
//! script), and a record with no request completed is not a result.

use serde::{Deserialize, Serialize};

/// One serving benchmark's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServeBench {
    /// The client's backend as printed (`sglang`, `vllm`, `openai-chat`);
    /// `None` where not printed (vLLM's text block names none).
    pub backend: Option<String>,
    /// Requests per second the client sent at; `None` for `inf` (every
    /// request at once) or where not printed.
    pub request_rate: Option<f64>,
    /// Whether the rate was printed as `inf`.
    pub request_rate_inf: bool,
    /// `--max-concurrency`: requests in flight at most; `None` where not
    /// set or not printed.
    pub max_concurrency: Option<u64>,
    /// Requests that completed.
    pub completed: u64,
    /// Seconds the benchmark ran.
    pub duration_s: Option<f64>,
    /// Prompt tokens over all completed requests.
    pub total_input_tokens: Option<u64>,
    /// Generated tokens over all completed requests.
    pub total_output_tokens: Option<u64>,
    /// Generated tokens per second over the run.
    pub output_tokens_per_s: Option<f64>,
    /// Mean requests in flight, as SGLang measures it (`Concurrency`).
    pub measured_concurrency: Option<f64>,
    /// Time to first token, ms: mean, median, 99th percentile.
    pub mean_ttft_ms: Option<f64>,
    /// See [`Self::mean_ttft_ms`].
    pub median_ttft_ms: Option<f64>,
    /// See [`Self::mean_ttft_ms`].
    pub p99_ttft_ms: Option<f64>,
    /// Time per output token after the first, ms: mean, median.
    pub mean_tpot_ms: Option<f64>,
    /// See [`Self::mean_tpot_ms`].
    pub median_tpot_ms: Option<f64>,
    /// Inter-token latency, ms (mean).
    pub mean_itl_ms: Option<f64>,
    /// End-to-end request latency, ms (mean; SGLang).
    pub mean_e2e_ms: Option<f64>,
}

impl ServeBench {
    /// Requests the run kept in flight: `--max-concurrency`, else every
    /// completed request where the rate was `inf` (all sent at once);
    /// `None` for a finite arrival rate without a cap (the running batch
    /// varies with arrivals).
    pub fn concurrency(&self) -> Option<u64> {
        self.max_concurrency
            .or_else(|| self.request_rate_inf.then_some(self.completed))
            .filter(|&c| c > 0)
    }

    /// Mean prompt tokens per request.
    pub fn mean_input_tokens(&self) -> Option<u64> {
        self.total_input_tokens
            .filter(|_| self.completed > 0)
            .map(|t| (t as f64 / self.completed as f64).round() as u64)
    }

    /// Mean generated tokens per request.
    pub fn mean_output_tokens(&self) -> Option<u64> {
        self.total_output_tokens
            .filter(|_| self.completed > 0)
            .map(|t| (t as f64 / self.completed as f64).round() as u64)
    }
}

/// At most this many results are read from one text.
pub const MAX_RESULTS: usize = 1000;

/// A finite, non-negative number (`-0.00`, which SGLang prints for an
/// empty percentile, is 0).
fn number(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x.max(0.0))
}

fn count(v: &str) -> Option<u64> {
    number(v)
        .filter(|x| x.fract() == 0.0 && *x < 1e15)
        .map(|x| x as u64)
}

/// Store one `key: value` pair; `false` for a key that is not a result's.
fn set(b: &mut ServeBench, key: &str, value: &str) -> bool {
    let v = value.trim();
    match key.trim().to_ascii_lowercase().as_str() {
        "backend" => {
            b.backend = Some(v.chars().take(64).collect()).filter(|s: &String| !s.is_empty())
        }
        // SGLang's and vLLM's 2024-2025 line, and vLLM's 2025-2026 one.
        "traffic request rate" | "request rate" | "request rate configured (rps)" => {
            if v.eq_ignore_ascii_case("inf") {
                b.request_rate_inf = true;
                b.request_rate = None;
            } else {
                b.request_rate = number(v);
            }
        }
        "maximum request concurrency" | "max request concurrency" | "max concurrency" => {
            b.max_concurrency = count(v)
        }
        "successful requests" => b.completed = count(v).unwrap_or(0),
        "benchmark duration (s)" => b.duration_s = number(v),
        "total input tokens" => b.total_input_tokens = count(v),
        "total generated tokens" => b.total_output_tokens = count(v),
        "output token throughput (tok/s)" => b.output_tokens_per_s = number(v),
        "concurrency" => b.measured_concurrency = number(v),
        "mean ttft (ms)" => b.mean_ttft_ms = number(v),
        "median ttft (ms)" => b.median_ttft_ms = number(v),
        "p99 ttft (ms)" => b.p99_ttft_ms = number(v),
        "mean tpot (ms)" => b.mean_tpot_ms = number(v),
        "median tpot (ms)" => b.median_tpot_ms = number(v),
        "mean itl (ms)" => b.mean_itl_ms = number(v),
        "mean e2e latency (ms)" => b.mean_e2e_ms = number(v),
        _ => return false,
    }
    true
}

/// Whether a parsed record is a result: a request completed and some
/// latency or throughput is printed.
fn is_result(b: &ServeBench) -> bool {
    b.completed > 0
        && (b.mean_tpot_ms.is_some()
            || b.mean_ttft_ms.is_some()
            || b.median_ttft_ms.is_some()
            || b.output_tokens_per_s.is_some())
}

/// The text blocks.
fn text_blocks(text: &str, out: &mut Vec<ServeBench>) {
    // Settings printed before a block (vLLM until 2025) carry into it.
    let mut pending = ServeBench::default();
    let mut current: Option<ServeBench> = None;
    for line in text.lines() {
        if out.len() >= MAX_RESULTS {
            return;
        }
        let t = line.trim().trim_start_matches('#').trim();
        if t.contains("Serving Benchmark Result") {
            if let Some(b) = current.take().filter(is_result) {
                out.push(b);
            }
            current = Some(std::mem::take(&mut pending));
            continue;
        }
        if t.len() >= 10 && t.bytes().all(|c| c == b'=') {
            if let Some(b) = current.take().filter(is_result) {
                out.push(b);
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        match current.as_mut() {
            Some(b) => {
                set(b, k, v);
            }
            None => {
                // Only the traffic settings count before a block.
                let key = k.trim().to_ascii_lowercase();
                if key.contains("request rate") || key.contains("concurrency") {
                    set(&mut pending, k, v);
                }
            }
        }
    }
    if let Some(b) = current.take().filter(is_result) {
        out.push(b);
    }
}

/// One saved record (`--save-result` JSON, `--output-file` JSONL).
fn from_object(o: &serde_json::Map<String, serde_json::Value>) -> Option<ServeBench> {
    let f = |k: &str| {
        o.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|x| x.is_finite())
            .map(|x| x.max(0.0))
    };
    let u = |k: &str| {
        f(k).filter(|x| x.fract() == 0.0 && *x < 1e15)
            .map(|x| x as u64)
    };
    let s = |k: &str| o.get(k).and_then(serde_json::Value::as_str);
    let mut b = ServeBench {
        backend: s("backend").map(|v| v.chars().take(64).collect()),
        completed: u("completed").or_else(|| u("successful_requests"))?,
        duration_s: f("duration").or_else(|| f("benchmark_duration_s")),
        total_input_tokens: u("total_input_tokens"),
        total_output_tokens: u("total_output_tokens"),
        output_tokens_per_s: f("output_throughput"),
        measured_concurrency: f("concurrency"),
        max_concurrency: u("max_concurrency"),
        mean_ttft_ms: f("mean_ttft_ms"),
        median_ttft_ms: f("median_ttft_ms"),
        p99_ttft_ms: f("p99_ttft_ms"),
        mean_tpot_ms: f("mean_tpot_ms"),
        median_tpot_ms: f("median_tpot_ms"),
        mean_itl_ms: f("mean_itl_ms"),
        mean_e2e_ms: f("mean_e2e_latency_ms"),
        ..ServeBench::default()
    };
    match o.get("request_rate") {
        Some(serde_json::Value::String(v)) if v.eq_ignore_ascii_case("inf") => {
            b.request_rate_inf = true
        }
        _ => b.request_rate = f("request_rate"),
    }
    is_result(&b).then_some(b)
}

/// Python's `json.dumps` writes an infinite rate as `Infinity`, which is
/// not JSON: read it as the string `"inf"` (and `NaN` as null).
fn python_json(line: &str) -> Option<serde_json::Value> {
    let fixed = line
        .replace(": Infinity", ": \"inf\"")
        .replace(":Infinity", ":\"inf\"")
        .replace(": NaN", ": null")
        .replace(":NaN", ":null");
    serde_json::from_str(&fixed).ok()
}

/// Read serving benchmark results: the text blocks, or JSON / JSONL
/// records. At most 4 MiB of text and [`MAX_RESULTS`] results.
pub fn parse_serve_bench(text: &str) -> Vec<ServeBench> {
    let text = match text.char_indices().nth(4 << 20) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        match python_json(trimmed) {
            Some(serde_json::Value::Object(o)) => out.extend(from_object(&o)),
            Some(serde_json::Value::Array(a)) => out.extend(
                a.iter()
                    .filter_map(serde_json::Value::as_object)
                    .filter_map(from_object)
                    .take(MAX_RESULTS),
            ),
            _ => {
                for line in text.lines() {
                    if out.len() >= MAX_RESULTS {
                        break;
                    }
                    if let Some(serde_json::Value::Object(o)) = python_json(line.trim()) {
                        out.extend(from_object(&o));
                    }
                }
            }
        }
        if !out.is_empty() {
            return out;
        }
    }
    text_blocks(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runtime-logs")
            .join(name);
        #[allow(
            clippy::disallowed_methods,
            reason = "a test reading its own fixture file, not machine probing"
        )]
        std::fs::read_to_string(path).unwrap()
    }

    /// SGLang 0.5.6's blocks (sgl-cookbook's Qwen3-235B on 8 × B200): the
    /// traffic settings inside the block, `Concurrency`, end-to-end
    /// latencies; the markdown and commands around them are not results.
    #[test]
    fn sglang_result_blocks_are_read() {
        let r = parse_serve_bench(&fixture(
            "sgl-cookbook-qwen3__8xb200-tp8-qwen3-235b-bench-serving-c1-c16-c100.md",
        ));
        assert_eq!(r.len(), 3);
        let c1 = &r[0];
        assert_eq!(c1.backend.as_deref(), Some("sglang"));
        assert!(c1.request_rate_inf && c1.request_rate.is_none());
        assert_eq!((c1.max_concurrency, c1.completed), (Some(1), 10));
        assert_eq!(
            (c1.total_input_tokens, c1.total_output_tokens),
            (Some(6101), Some(4210))
        );
        assert_eq!(
            (c1.mean_input_tokens(), c1.mean_output_tokens()),
            (Some(610), Some(421))
        );
        assert_eq!(c1.mean_ttft_ms, Some(99.03));
        assert_eq!(c1.mean_tpot_ms, Some(10.12));
        assert_eq!(c1.output_tokens_per_s, Some(96.65));
        assert_eq!(c1.measured_concurrency, Some(1.0));
        assert_eq!(c1.mean_e2e_ms, Some(4353.63));
        assert_eq!(c1.concurrency(), Some(1));
        assert_eq!(
            (r[1].max_concurrency, r[1].mean_tpot_ms),
            (Some(16), Some(16.36))
        );
        assert_eq!(
            (r[2].concurrency(), r[2].p99_ttft_ms),
            (Some(100), Some(863.11))
        );
    }

    /// vLLM's layouts: 2025-2026 `vllm bench serve` (the concurrency in
    /// the block, `Failed requests`, peak lines), the 2024-2025
    /// benchmark_serving.py block without traffic settings (concurrency
    /// unknown), and SGLang blocks among shell output whose TPOT prints
    /// `-0.00`.
    #[test]
    fn vllm_and_pasted_result_blocks_are_read() {
        let r = parse_serve_bench(&fixture(
            "vllm-recipes-nemotron-nano__h200-fp8-bench-serve-c1024.md",
        ));
        assert_eq!(r.len(), 1);
        let b = &r[0];
        assert_eq!((b.completed, b.max_concurrency), (2048, Some(1024)));
        assert_eq!(b.backend, None);
        assert_eq!(
            (b.mean_tpot_ms, b.median_ttft_ms),
            (Some(59.45), Some(1534.84))
        );
        assert_eq!(b.output_tokens_per_s, Some(15828.3));
        assert_eq!(
            (b.mean_input_tokens(), b.mean_output_tokens()),
            (Some(1024), Some(1024))
        );
        let r = parse_serve_bench(&fixture(
            "learning-project-benchmarks-readme__vllm-benchmark-serving-2-runs.md",
        ));
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].completed, r[0].mean_tpot_ms), (10, Some(49.13)));
        assert_eq!((r[1].completed, r[1].mean_tpot_ms), (16, Some(173.70)));
        assert!(r.iter().all(|b| b.concurrency().is_none()));
        let r = parse_serve_bench(&fixture(
            "sglang-dlora-sglang-results__lora-bench-rates-2-to-64.md",
        ));
        assert_eq!(r.len(), 6);
        assert_eq!(r[0].request_rate, Some(2.0));
        assert_eq!((r[0].completed, r[0].mean_ttft_ms), (996, Some(1955.72)));
        assert_eq!(r[0].median_tpot_ms, Some(0.0));
        assert!(r.iter().all(|b| b.concurrency().is_none()));
    }

    /// vLLM 2025-2026 prints a finite rate as `Request rate configured
    /// (RPS)` (vllm-project/recipes' Kimi-K2 block) and an unbounded one as
    /// `inf`.
    #[test]
    fn vllm_configured_request_rate_is_read() {
        let block = |rate: &str| {
            format!(
                "============ Serving Benchmark Result ============\n\
                 Successful requests:                     8\n\
                 Maximum request concurrency:             4\n\
                 Request rate configured (RPS):           {rate}\n\
                 Benchmark duration (s):                  132.79\n\
                 Total input tokens:                      8000\n\
                 Total generated tokens:                  4096\n\
                 Mean TPOT (ms):                          30.78\n\
                 ==================================================\n"
            )
        };
        let r = parse_serve_bench(&block("1.00"));
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].request_rate, r[0].request_rate_inf),
            (Some(1.0), false)
        );
        assert_eq!(r[0].concurrency(), Some(4));
        let r = parse_serve_bench(&block("inf"));
        assert_eq!((r[0].request_rate, r[0].request_rate_inf), (None, true));
    }

    /// SGLang's `--output-file` JSONL record: `completed` and the
    /// latencies by their JSON names; `request_rate` a number.
    #[test]
    fn saved_records_are_read() {
        let r = parse_serve_bench(&fixture(
            "sglang-dlora-sglang-rate2__bench-output-file.jsonl",
        ));
        assert_eq!(r.len(), 1);
        let b = &r[0];
        assert_eq!((b.completed, b.request_rate), (996, Some(2.0)));
        assert_eq!(b.median_ttft_ms, Some(576.1044789978769));
        assert_eq!(b.output_tokens_per_s, Some(831.8340148261185));
        assert_eq!(b.duration_s, Some(262.38047027401626));
        // Python's `Infinity` for an unbounded rate, and vLLM's "inf".
        for rate in ["Infinity", "\"inf\""] {
            let r = parse_serve_bench(&format!(
                "{{\"completed\": 4, \"request_rate\": {rate}, \"max_concurrency\": null, \"mean_tpot_ms\": 7.5}}"
            ));
            assert!(r[0].request_rate_inf, "{rate}");
            assert_eq!(r[0].concurrency(), Some(4));
        }
        // A truncated copy yields the records it holds.
        let text =
            fixture("sgl-cookbook-qwen3__8xb200-tp8-qwen3-235b-bench-serving-c1-c16-c100.md");
        let cut = &text[..text.len() * 2 / 3];
        let r = parse_serve_bench(cut);
        assert!(!r.is_empty() && r.len() < 3, "{}", r.len());
    }

    #[test]
    fn hostile_text_reads_nothing() {
        for t in [
            "",
            "============ Serving Benchmark Result ============\n==========",
            "Successful requests: 10\nMean TPOT (ms): 5",
            "============ Serving Benchmark Result ============\nSuccessful requests: 0\nMean TPOT (ms): 5\n==========",
            "{\"completed\": -3, \"mean_tpot_ms\": 1}",
            "[1, 2, {\"completed\": 1e300}]",
        ] {
            assert!(parse_serve_bench(t).is_empty(), "{t:?}");
        }
        let b = &parse_serve_bench(
            "============ Serving Benchmark Result ============\nSuccessful requests: 3\nMean TPOT (ms): NaN\nMean TTFT (ms): -0.00\n==========",
        )[0];
        assert_eq!(b.mean_tpot_ms, None);
        assert_eq!(b.mean_ttft_ms, Some(0.0));
    }
}
