//! A real llama.cpp, end to end: small GGUF models written with PyPI's
//! `gguf` (scripts/make-test-gguf.py), planned for this machine's CPU with
//! `--runtime llama.cpp --emit llama.cpp`, launched with exactly the emitted
//! arguments (plus the address to listen on and `-lv 4`), asked for a completion, and
//! the buffers llama.cpp logs compared with the plan by `check`.
//!
//! Needs `AI_HWACCEL_LLAMA_SERVER` (scripts/test.sh builds llama-server from
//! the llama-cpp-python 0.3.36 source distribution) and a Python with `gguf`
//! and `numpy` (`AI_HWACCEL_TEST_PYTHON`); says it skipped otherwise.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run the binary, llama-server and Python"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
}

fn requirements() -> Option<(PathBuf, String)> {
    let Some(server) = std::env::var_os("AI_HWACCEL_LLAMA_SERVER").map(PathBuf::from) else {
        eprintln!(
            "skipped: AI_HWACCEL_LLAMA_SERVER is not set (scripts/test.sh builds llama-server)"
        );
        return None;
    };
    let py = std::env::var("AI_HWACCEL_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import gguf, numpy"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: no Python with gguf and numpy (PyPI) to write test models");
        return None;
    }
    Some((server, py))
}

/// A llama.cpp tool scripts/test.sh builds, from its environment variable,
/// or why a test that needs it is skipped.
fn tool(var: &str, name: &str) -> Option<PathBuf> {
    let t = std::env::var_os(var).map(PathBuf::from);
    if t.is_none() {
        eprintln!("skipped: {var} is not set (scripts/test.sh builds {name})");
    }
    t
}

/// llama.cpp's `llama-quantize`, or why a test that needs it is skipped.
fn quantize_tool() -> Option<PathBuf> {
    tool("AI_HWACCEL_LLAMA_QUANTIZE", "llama-quantize")
}

fn make_model(py: &str, dir: &Path, dtype: &str) -> PathBuf {
    make_model_with(py, dir, dtype, &[])
}

/// As [`make_model`], with more options of scripts/make-test-gguf.py
/// (`--experts 4` for a mixture of experts, `--arch qwen35` for a hybrid).
fn make_model_with(py: &str, dir: &Path, dtype: &str, extra: &[&str]) -> PathBuf {
    let arch = extra
        .iter()
        .position(|a| *a == "--arch")
        .and_then(|i| extra.get(i + 1));
    let tag = match arch {
        Some(a) => format!("-{a}"),
        None if extra.is_empty() => String::new(),
        None => "-moe".into(),
    };
    let out = dir.join(format!("test-{dtype}{tag}.gguf"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-test-gguf.py");
    let o = Command::new(py)
        .arg(script)
        .arg(&out)
        .arg(dtype)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http(method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let r = match body {
        Some(b) => agent
            .post(url)
            .header("Content-Type", "application/json")
            .send(b),
        None if method == "GET" => agent.get(url).call(),
        None => unreachable!(),
    };
    match r {
        Ok(mut r) => (
            r.status().as_u16(),
            r.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(_) => (0, String::new()),
    }
}

/// Start llama-server with `args` (an emitted command, whose `-lv 4` makes
/// this llama.cpp log its buffer sizes: the default verbosity, 3, hides
/// them) and `extra`, listening on a free port and logging to `log_path`;
/// wait until it is
/// healthy (panicking with the log if it exits or never is), ask for a
/// short completion, stop it as a user would (SIGINT, Ctrl+C: llama-server
/// then prints its memory breakdown table on the way out; killed if it has
/// not exited within 20 s); returns the completion's status and body.
fn serve(server: &Path, args: &[String], extra: &[&str], log_path: &Path) -> (u16, String) {
    let port = free_port();
    let log = std::fs::File::create(log_path).unwrap();
    let mut child = Command::new(server)
        .args(args)
        .args(extra)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut healthy = false;
    while Instant::now() < deadline {
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "llama-server exited ({st}) with the arguments {args:?} {extra:?}:\n{}",
                std::fs::read_to_string(log_path).unwrap_or_default()
            );
        }
        if http("GET", &format!("{base}/health"), None).0 == 200 {
            healthy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let completion = healthy.then(|| {
        http(
            "POST",
            &format!("{base}/completion"),
            Some(r#"{"prompt": "hello", "n_predict": 8}"#),
        )
    });
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let stop = Instant::now() + Duration::from_secs(20);
    while Instant::now() < stop && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let log_text = std::fs::read_to_string(log_path).unwrap_or_default();
    assert!(healthy, "llama-server never became healthy:\n{log_text}");
    completion.unwrap()
}

/// Plan, emit, run, complete, check; returns `check --json`.
fn run_model(server: &Path, model: &Path, dir: &Path) -> serde_json::Value {
    run_model_with(server, model, dir, "2048", &[])
}

/// As [`run_model`], at a context and with more `plan` options.
fn run_model_with(
    server: &Path,
    model: &Path,
    dir: &Path,
    context: &str,
    plan: &[&str],
) -> serde_json::Value {
    let o = bin()
        .args(["plan"])
        .arg(model)
        .args([
            "--runtime",
            "llama.cpp",
            "--context",
            context,
            "--kv-dtype",
            "fp16",
        ])
        .args(plan)
        .args(["--emit", "llama.cpp", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let launch: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let argv: Vec<String> = launch["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(argv[0], "llama-server");
    let log_path = dir.join(format!(
        "{}.log",
        model.file_stem().unwrap().to_string_lossy()
    ));
    assert!(
        argv.windows(2).any(|w| w == ["-lv", "4"]),
        "the emitted command logs at verbosity 4: {argv:?}"
    );
    let (code, body) = serve(server, &argv[1..], &[], &log_path);
    assert_eq!(code, 200, "{body}");
    let c: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(c["tokens_predicted"].as_u64().unwrap_or(0) > 0, "{body}");

    let o = bin()
        .arg("check")
        .arg(&log_path)
        .arg("--model")
        .arg(model)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    eprintln!(
        "{}: {}",
        model.display(),
        serde_json::to_string(&report["rows"]).unwrap()
    );
    report
}

/// `ai-hwaccel check FILE ARGS… --json`, which must succeed: its report.
fn check_json(file: &Path, args: &[&str]) -> serde_json::Value {
    let o = bin()
        .arg("check")
        .arg(file)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn row<'a>(report: &'a serde_json::Value, component: &str) -> &'a serde_json::Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == component)
        .unwrap_or_else(|| panic!("no {component} row in {report}"))
}

fn ratio(report: &serde_json::Value, component: &str) -> f64 {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == component)
        .and_then(|r| r["ratio"].as_f64())
        .unwrap_or_else(|| panic!("no {component} ratio in {report}"))
}

#[test]
fn emitted_llama_server_commands_run_and_the_plan_matches_the_log() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for dtype in ["F16", "Q8_0"] {
        let model = make_model(&py, dir.path(), dtype);
        let report = run_model(&server, &model, dir.path());
        // The options check read back are the ones the plan emitted.
        assert_eq!(report["context_per_sequence"], 2048, "{report}");
        assert_eq!(report["log"]["type_k"], "f16", "{report}");
        let w = ratio(&report, "weights");
        let kv = ratio(&report, "kv_cache");
        let buf = ratio(&report, "compute_and_output_buffers");
        assert!(
            (w - 1.0).abs() <= 0.02,
            "{dtype}: weights predicted/logged {w}"
        );
        assert!(
            (kv - 1.0).abs() <= 0.02,
            "{dtype}: KV predicted/logged {kv}"
        );
        assert!(
            (buf - 1.0).abs() <= 0.10,
            "{dtype}: buffers predicted/logged {buf}"
        );
    }
}

/// llama.cpp's memory breakdown table (printed on the way out, and by the
/// `--fit` run before the load) read in place of the buffer lines: a log
/// of the table alone (what a default-verbosity run of the Dec 2025 to
/// Apr 2026 builds, or an excerpt, gives) is checked as the full log is,
/// each figure the lines' floored to whole MiB; the `--fit` projection the
/// fit kept unchanged gives the same.
#[test]
fn check_reads_the_memory_breakdown_table() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model(&py, dir.path(), "F16");
    let full = run_model(&server, &model, dir.path());
    let log_path = dir.path().join(format!(
        "{}.log",
        model.file_stem().unwrap().to_string_lossy()
    ));
    let text = std::fs::read_to_string(&log_path).unwrap();
    let table = &full["log"]["memory_breakdown"];
    assert_eq!(table["projected"], false, "the exit table is kept: {table}");
    let host = &table["rows"][0];
    assert_eq!(host["kind"], "host", "{table}");
    // The lines' figures, floored to MiB, are the table's.
    let floor = |component: &str| row(&full, component)["logged_bytes"].as_u64().unwrap() >> 20;
    assert_eq!(
        host["model_mib"].as_u64().unwrap(),
        floor("weights"),
        "{table}"
    );
    assert_eq!(
        host["context_mib"].as_u64().unwrap(),
        floor("kv_cache"),
        "{table}"
    );
    // Keep only the table's lines, the fit's and the slots' line.
    let lines: Vec<&str> = text.lines().collect();
    let exit_start = lines
        .iter()
        .position(|l| l.contains("cleaning up before exit"))
        .expect("llama-server logged its exit");
    let only = |keep: &dyn Fn(usize, &str) -> bool, name: &str| {
        let kept: Vec<&str> = (0..lines.len())
            .filter(|&i| keep(i, lines[i]))
            .map(|i| lines[i])
            .collect();
        let p = dir.path().join(name);
        std::fs::write(&p, kept.join("\n")).unwrap();
        check_json(&p, &["--model", model.to_str().unwrap()])
    };
    let exit_table = only(
        &|i, l| {
            l.contains("n_ctx_slot") || (l.contains("memory_breakdown_print") && i > exit_start)
        },
        "exit-table.log",
    );
    let fit_table = only(
        &|i, l| {
            l.contains("n_ctx_slot")
                || l.contains("_fit_impl:")
                || l.contains("common_fit_params:")
                || (l.contains("memory_breakdown_print") && i < exit_start)
        },
        "fit-table.log",
    );
    assert_eq!(
        fit_table["log"]["memory_breakdown"]["projected"], true,
        "{fit_table}"
    );
    for report in [&exit_table, &fit_table] {
        assert_eq!(report["context_per_sequence"], 2048, "{report}");
        assert!(
            report["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("memory breakdown table")),
            "{report}"
        );
        for component in ["weights", "kv_cache", "compute_and_output_buffers"] {
            let logged = row(report, component)["logged_bytes"].as_u64().unwrap();
            let lines = row(&full, component)["logged_bytes"].as_u64().unwrap();
            // The table floors each figure; the lines' compute row holds
            // the output buffer too (CPU only), which the table does not.
            assert!(
                logged <= lines && lines - logged < 2 << 20,
                "{component}: table {logged} against lines {lines}"
            );
            assert_eq!(
                row(report, component)["predicted_bytes"],
                row(&full, component)["predicted_bytes"],
                "{component}: the same plan"
            );
        }
        let w = ratio(report, "weights");
        assert!((w - 1.0).abs() <= 0.03, "weights from the table: {w}");
    }
}

/// Planned with `--unfused-attention`, the emitted command runs llama.cpp
/// with flash attention off (`-fa off`), whose compute buffer holds every
/// attention score (KQ: heads × context × micro-batch f32) and an f32 mask:
/// `check` reads `flash_attn = disabled` from the log and plans the same.
/// At `-c 8192` the scores are most of the buffer (83 MiB against 14.5
/// with flash attention).
#[test]
fn flash_attention_off_buffers_match_too() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model(&py, dir.path(), "F16");
    let report = run_model_with(
        &server,
        &model,
        dir.path(),
        "8192",
        &["--unfused-attention"],
    );
    assert_eq!(report["log"]["flash_attn"], "disabled", "{report}");
    assert_eq!(report["context_per_sequence"], 8192, "{report}");
    let logged = row(&report, "compute_and_output_buffers")["logged_bytes"]
        .as_u64()
        .unwrap();
    assert!(logged > 80 << 20, "scores in the buffer: {logged}");
    let buf = ratio(&report, "compute_and_output_buffers");
    assert!(
        (buf - 1.0).abs() <= 0.02,
        "fa off buffers predicted/logged {buf}"
    );
}

/// A mixture of experts (Mixtral's layout: 4 experts, 2 per token, a
/// router per layer) planned and run the same way: llama.cpp loads it and
/// its logged weights, KV cache and buffers match the plan as a dense
/// model's do.
#[test]
fn a_mixture_of_experts_model_matches_too() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model_with(
        &py,
        dir.path(),
        "F16",
        &["--experts", "4", "--experts-used", "2"],
    );
    let report = run_model(&server, &model, dir.path());
    assert_eq!(report["log"]["hparams"]["n_expert"], "4", "{report}");
    let w = ratio(&report, "weights");
    let kv = ratio(&report, "kv_cache");
    let buf = ratio(&report, "compute_and_output_buffers");
    assert!((w - 1.0).abs() <= 0.02, "MoE weights predicted/logged {w}");
    assert!((kv - 1.0).abs() <= 0.02, "MoE KV predicted/logged {kv}");
    assert!(
        (buf - 1.0).abs() <= 0.10,
        "MoE buffers predicted/logged {buf}"
    );
}

/// A hybrid of gated DeltaNet linear attention and full attention (llama.cpp's
/// qwen35 architecture, Qwen3.5's layout: 8 layers, every fourth full
/// attention; qwen35moe, Qwen3.5-MoE's, with 8 routed experts, 2 per
/// token, and a shared one; qwen3next, Qwen3-Next's, the same with its
/// fused beta/alpha projection), planned from the file and run four
/// sequences at a time:
/// llama.cpp keeps a KV cache for the two attention layers only and a
/// recurrent state (`RS buffer`) per sequence for the six linear ones, and
/// its logged weights, KV cache with the state, and buffers match the plan.
/// The state is also checked against its formula on the log's own figure:
/// per linear layer and sequence, the convolution window ((kernel − 1) ×
/// (2 × key dim + value dim)) and the state (value heads × head dim²), F32.
#[test]
fn a_hybrid_linear_attention_model_matches_too() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let moe: &[&str] = &[
        "--arch",
        "qwen35moe",
        "--experts",
        "8",
        "--experts-used",
        "2",
        "--ff",
        "256",
    ];
    let next: Vec<&str> = moe
        .iter()
        .map(|a| if *a == "qwen35moe" { "qwen3next" } else { a })
        .collect();
    for (dtype, arch) in [
        ("F16", &["--arch", "qwen35"][..]),
        ("Q8_0", &["--arch", "qwen35"][..]),
        ("Q8_0", moe),
        ("Q8_0", &next[..]),
    ] {
        let model = make_model_with(&py, dir.path(), dtype, &[arch, &["--layers", "8"]].concat());
        let report = run_model_with(&server, &model, dir.path(), "8192", &["--batch", "4"]);
        assert_eq!(report["log"]["hparams"]["arch"], arch[1], "{report}");
        assert_eq!(report["log"]["n_seq_max"], 4, "{report}");
        // The script's defaults: 2 key heads and 4 value heads of 32, a
        // 4-tap convolution; layers 3 and 7 are full attention.
        let (key, value, head, taps, linear, seqs) = (64.0, 128.0, 32.0, 4.0, 6.0, 4.0);
        let state = linear * seqs * 4.0 * ((taps - 1.0) * (2.0 * key + value) + 4.0 * head * head);
        let rs = report["log"]["rs_total_bytes"].as_f64().unwrap();
        // The log prints MiB to two decimals: ±0.005 MiB.
        assert!(
            (rs - state).abs() <= 0.005 * 1048576.0 + 1.0,
            "RS {rs} vs {state}"
        );
        // The attention layers' cache alone: 2 layers × K and V × 2 heads ×
        // 64 × 32768 cells × 2 bytes.
        assert_eq!(
            report["log"]["kv_total_bytes"],
            2 * 2 * 2 * 64 * 32768 * 2,
            "{report}"
        );
        assert!(
            report["notes"]
                .to_string()
                .contains("linear-attention layers' convolution windows and states"),
            "{report}"
        );
        let w = ratio(&report, "weights");
        let kv = ratio(&report, "kv_cache");
        let buf = ratio(&report, "compute_and_output_buffers");
        assert!(
            (w - 1.0).abs() <= 0.02,
            "{dtype} {}: weights predicted/logged {w}",
            arch[1]
        );
        assert!(
            (kv - 1.0).abs() <= 0.02,
            "{dtype} {}: KV + state predicted/logged {kv}",
            arch[1]
        );
        assert!(
            (buf - 1.0).abs() <= 0.10,
            "{dtype} {}: buffers predicted/logged {buf}",
            arch[1]
        );
    }
}

/// Interleaved sliding-window attention (llama.cpp's gemma2 architecture:
/// layers 0 and 2 of 4 attend to the last 256 tokens, 1 and 3 to the whole
/// 2048-token context), planned and run the same way: llama.cpp keeps two
/// KV caches (`llama_kv_cache_iswa`), the non-SWA one of the full context
/// and the SWA one of the window plus a micro-batch, padded to 256 cells
/// (`GGML_PAD(min(n_ctx, n_swa × n_seq + n_ubatch), 256)`: 768 cells here,
/// src/llama-kv-cache-iswa.cpp), and prints each cache's `size =` line.
/// `check` reads the two together; their sum, read here from the log's
/// own lines, is the logged KV cache, and the plan's KV cache and weights
/// are within 2 % of the log's.
#[test]
fn a_sliding_window_model_matches_too() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model_with(
        &py,
        dir.path(),
        "F16",
        &["--arch", "gemma2", "--window", "256"],
    );
    let report = run_model_with(&server, &model, dir.path(), "2048", &[]);
    let log_path = dir.path().join("test-F16-gemma2.log");
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(report["log"]["hparams"]["arch"], "gemma2", "{report}");
    assert_eq!(report["context_per_sequence"], 2048, "{report}");
    assert_eq!(report["log"]["n_seq_max"], 1, "{report}");

    // The log's two caches: their cell counts, and each one's `size =`
    // total in MiB (two decimals).
    let cells = |what: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("creating {what} KV cache, size = ")))
            .unwrap_or_else(|| panic!("no {what} cache in the log:\n{text}"));
        let n = line.split("size = ").nth(1).unwrap();
        n.trim().trim_end_matches("cells").trim().parse().unwrap()
    };
    let (full_cells, swa_cells) = (cells("non-SWA"), cells("    SWA"));
    assert_eq!(full_cells, 2048);
    // 256 × 1 sequence + a 512-token micro-batch, padded to 256.
    assert_eq!(swa_cells, 768);
    let sizes: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("llama_kv_cache: size = ").nth(1))
        .map(|s| s.split("MiB").next().unwrap().trim().parse().unwrap())
        .collect();
    assert_eq!(sizes.len(), 2, "a size line per cache:\n{text}");
    let logged_sum = sizes.iter().sum::<f64>() * 1048576.0;
    let kv_total = report["log"]["kv_total_bytes"].as_f64().unwrap();
    assert!(
        (kv_total - logged_sum).abs() <= 2.0 * 0.005 * 1048576.0 + 1.0,
        "check's KV {kv_total} vs the log's size lines {sizes:?} MiB"
    );
    assert_eq!(report["log"]["kv_buffers"].as_array().unwrap().len(), 2);
    // Each cache: 2 layers × K and V × 2 heads × 64 × 2 bytes per cell.
    assert_eq!(
        kv_total as u64,
        (full_cells + swa_cells) * 2 * 2 * 2 * 64 * 2
    );

    let w = ratio(&report, "weights");
    assert!(
        (w - 1.0).abs() <= 0.02,
        "gemma2 weights predicted/logged {w}"
    );
    let buf = ratio(&report, "compute_and_output_buffers");
    assert!(
        (buf - 1.0).abs() <= 0.10,
        "gemma2 buffers predicted/logged {buf}"
    );
    let kv = row(&report, "kv_cache");
    let r = ratio(&report, "kv_cache");
    assert!(
        (r - 1.0).abs() <= 0.02,
        "gemma2 KV predicted/logged {r}: predicted {} B, logged {} B \
         ({full_cells} + {swa_cells} cells)",
        kv["predicted_bytes"],
        kv["logged_bytes"]
    );
}

/// A K-quant made by llama.cpp's own `llama-quantize` (Q4_K_M: Q4_K and
/// Q6_K matrices): on a CPU with AVX2 or Arm dot products llama.cpp
/// repacks the Q4_K matrices into a second buffer (`CPU_REPACK`); the plan
/// counts that copy as the runtime's overhead on the host.
#[test]
fn a_k_quant_with_cpu_repacking() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let Some(quantize) = quantize_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f16 = make_model(&py, dir.path(), "F16");
    let q4 = dir.path().join("test-Q4_K_M.gguf");
    let o = Command::new(quantize)
        .arg(&f16)
        .arg(&q4)
        .arg("Q4_K_M")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = run_model(&server, &q4, dir.path());
    let kv = ratio(&report, "kv_cache");
    let buf = ratio(&report, "compute_and_output_buffers");
    assert!((kv - 1.0).abs() <= 0.02, "KV predicted/logged {kv}");
    assert!((buf - 1.0).abs() <= 0.10, "buffers predicted/logged {buf}");
    let repack = row(&report, "cpu_repacked_weights");
    let logged_repack = repack["logged_bytes"].as_u64().unwrap_or(0);
    let predicted_repack = repack["predicted_bytes"].as_u64().unwrap();
    if logged_repack == 0 {
        // A CPU without AVX2 or Arm dot products: nothing repacked, and
        // the plan says so.
        assert_eq!(predicted_repack, 0, "{report}");
    } else {
        let r = predicted_repack as f64 / logged_repack as f64;
        assert!((r - 1.0).abs() <= 0.02, "repacked predicted/logged {r}");
    }
    // The memory-mapped buffer llama.cpp logs spans the file's tensors up to
    // the last one it did not repack, so it can be a little less than all
    // of the file's tensor bytes that the plan counts (every page is read
    // once, to repack); weights and repacked copies together within 5 %.
    let w = row(&report, "weights");
    let total_pred = w["predicted_bytes"].as_u64().unwrap() + predicted_repack;
    let total_logged = w["logged_bytes"].as_u64().unwrap() + logged_repack;
    let r = total_pred as f64 / total_logged as f64;
    assert!(
        (r - 1.0).abs() <= 0.05,
        "weights and repacked copies predicted/logged {r}"
    );
}

/// The GGUF mixes as llama.cpp's own `llama-quantize` makes them: a
/// 16-layer F16 model quantized to each mix the planner names, the bytes of
/// tensor data in each file (read from its header) against the planner's
/// weights for the F16 model's architecture at that level. 16 layers make
/// the per-layer rules show (the first eighth, the first four `attn_v`,
/// `use_more_bits`); grouped KV heads (2 per KV head) keep `attn_v` below
/// the n_gqa ≥ 4 rule, so IQ4's base type shows too, and a third model of
/// 4 query heads per KV head takes the rules above it; a fourth is a
/// Qwen3.5-MoE hybrid (below).
///
/// The i-quants below IQ4 are quantized with an importance matrix, as
/// llama-quantize requires for most of them and as every such file is
/// made: `llama-imatrix` computes it for each model over a short text
/// (`AI_HWACCEL_LLAMA_IMATRIX`; without it that part says it skipped).
/// IQ4_XS, IQ4_NL, Q4_0 and Q5_0, whose mixes an importance matrix changes,
/// are quantized both ways and planned with `--imatrix` for the second.
#[test]
fn gguf_mixes_match_llama_quantize() {
    let Some((_, py)) = requirements() else {
        return;
    };
    let Some(quantize) = quantize_tool() else {
        return;
    };
    let imatrix_tool = tool("AI_HWACCEL_LLAMA_IMATRIX", "llama-imatrix");
    let dir = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let o = bin().args(args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // Calibration text for the importance matrix: words in a seeded order
    // (the test models' byte vocabulary reads any text).
    let words = [
        "the", "model", "runs", "on", "a", "small", "machine", "of", "layers",
    ];
    let mut x: u64 = 1;
    let text: Vec<&str> = (0..3000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            words[(x >> 33) as usize % words.len()]
        })
        .collect();
    let calibration = dir.path().join("calibration.txt");
    std::fs::write(&calibration, text.join(" ")).unwrap();
    let mut worst: f64 = 0.0;
    let mut quantized = 0;
    // Dense, then 8 experts (Mixtral's rule: attn_k and attn_v at Q8_0,
    // attn_output at Q5_K), then dense with 4 query heads per KV head,
    // then a Qwen3.5-MoE hybrid: linear-attention layers whose fused
    // attn_qkv takes the attn_v rules and whose convolution stays F32,
    // gated full-attention layers (attn_q twice attn_output), and a
    // shared expert beside 4 routed ones (two ffn_down tensors a layer for
    // the very-low-bit mixes' count); its widths are multiples of 256, so
    // no tensor falls back to another type for its row length.
    for extra in [
        &["--layers", "16"][..],
        &["--layers", "16", "--experts", "8"][..],
        &["--layers", "16", "--heads", "8", "--kv-heads", "2"][..],
        &[
            "--layers",
            "16",
            "--arch",
            "qwen35moe",
            "--experts",
            "4",
            "--linear-heads-k",
            "2",
            "--linear-heads-v",
            "4",
            "--linear-head-dim",
            "64",
        ][..],
    ] {
        let f16 = make_model_with(&py, dir.path(), "F16", extra);
        let f16s = f16.to_str().unwrap();
        let imatrix = imatrix_tool.as_ref().map(|t| {
            let out = dir.path().join(format!("imatrix-{}.gguf", extra.len()));
            let o = Command::new(t)
                .arg("-m")
                .arg(&f16)
                .arg("-f")
                .arg(&calibration)
                .arg("-o")
                .arg(&out)
                .args(["-c", "128", "--chunks", "4"])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "llama-imatrix: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            out
        });
        let levels = [
            ("Q8_0", "q8_0", false),
            ("Q6_K", "q6_k", false),
            ("Q5_K_M", "q5_k", false),
            ("Q5_K_S", "q5_k_s", false),
            ("Q4_K_M", "q4_k", false),
            ("Q4_K_S", "q4_k_s", false),
            ("Q4_0", "q4_0", false),
            ("Q4_1", "q4_1", false),
            ("Q5_0", "q5_0", false),
            ("Q5_1", "q5_1", false),
            ("IQ4_NL", "iq4_nl", false),
            ("IQ4_XS", "iq4_xs", false),
            ("Q3_K_L", "q3_k_l", false),
            ("Q3_K_M", "q3_k", false),
            ("Q3_K_S", "q3_k_s", false),
            ("Q2_K", "q2_k", false),
            ("IQ3_M", "iq3_m", true),
            ("IQ3_S", "iq3_s", true),
            ("IQ3_XS", "iq3_xs", true),
            ("IQ3_XXS", "iq3_xxs", true),
            ("IQ2_M", "iq2_m", true),
            ("IQ2_S", "iq2_s", true),
            ("IQ2_XS", "iq2_xs", true),
            ("IQ2_XXS", "iq2_xxs", true),
            ("IQ1_M", "iq1_m", true),
            ("IQ1_S", "iq1_s", true),
            // With an importance matrix these four change their mixes too
            // (`plan --imatrix`).
            ("IQ4_XS", "iq4_xs", true),
            ("IQ4_NL", "iq4_nl", true),
            ("Q4_0", "q4_0", true),
            ("Q5_0", "q5_0", true),
        ];
        // i-quant quantization searches its grids: seconds a file even at
        // this size, where the planning takes a tenth of one.
        for (name, level, with_imatrix) in levels {
            let mut cmd = Command::new(&quantize);
            if with_imatrix {
                let Some(m) = &imatrix else {
                    continue;
                };
                cmd.arg("--imatrix").arg(m);
            }
            let out = dir.path().join(format!(
                "test-{name}-{}{}.gguf",
                extra.len(),
                if with_imatrix { "-imatrix" } else { "" }
            ));
            let o = cmd.arg(&f16).arg(&out).arg(name).output().unwrap();
            assert!(
                o.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let stored = json(&["model", out.to_str().unwrap(), "--json"]);
            let file_bytes = stored["stored_weights"]["bytes"].as_u64().unwrap() as f64;
            let mut args = vec![
                "plan",
                f16s,
                "--devices",
                "1xh100-sxm",
                "--quant",
                level,
                "--json",
            ];
            if with_imatrix {
                args.push("--imatrix");
            }
            let plan = json(&args);
            // The file records its importance matrix (`model` shows it in
            // the spec), and the file planned at another level takes the
            // imatrix rules from there without `--imatrix`.
            if with_imatrix && name == "Q4_0" {
                assert_eq!(stored["spec"]["gguf_imatrix"], true, "{stored}");
                let at_q5_0 = |model: &str, flags: &[&str]| {
                    let mut args = vec![
                        "plan",
                        model,
                        "--devices",
                        "1xh100-sxm",
                        "--quant",
                        "q5_0",
                        "--json",
                    ];
                    args.extend_from_slice(flags);
                    json(&args)["plans"][0]["per_device"][0]["weights_bytes"].as_u64()
                };
                let file = at_q5_0(out.to_str().unwrap(), &[]);
                let flagged = at_q5_0(f16s, &["--imatrix"]);
                let plain = at_q5_0(f16s, &[]);
                assert_eq!(file, flagged);
                assert!(plain < flagged, "{plain:?} {flagged:?}");
            }
            let planned = plan["plans"][0]["per_device"][0]["weights_bytes"]
                .as_u64()
                .unwrap() as f64;
            let r = planned / file_bytes;
            eprintln!(
                "{name} {extra:?}: planned {planned} B, llama-quantize wrote {file_bytes} B ({r:.5})"
            );
            worst = worst.max((r - 1.0).abs());
            quantized += 1;
        }
    }
    eprintln!("{quantized} files quantized");
    assert!(quantized >= 80, "{quantized}");
    assert!(worst <= 0.001, "worst planned/written {worst}");
}

/// `check` on real vLLM logs from public threads: the logged figures are
/// read, the prediction for the same model/GPU/context is beside them, and
/// a log of vLLM refusing the context says so.
#[test]
fn check_reads_vllm_logs_and_compares() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let r = check_json(
        &dir.join("vllm-issue10517__rtx3090-llama3.1-8b-29k-too-long.log"),
        &["--model", "llama-3.1-8b", "--devices", "1xrtx-3090"],
    );
    assert_eq!(r["runtime"], "vllm");
    assert_eq!(r["context_per_sequence"], 29_000);
    // Weights: 14.9888 GiB logged; the plan's bf16 weights of Llama-3.1-8B.
    let w = ratio(&r, "weights_per_gpu");
    assert!((w - 1.0).abs() <= 0.01, "weights {w}");
    assert_eq!(row(&r, "kv_cache_capacity_tokens")["logged_bytes"], 23_648);
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("refused to start") && notes.contains("V0 engine"),
        "{notes}"
    );
    // Not a log at all: a clear error.
    let o = bin().args(["check", "Cargo.toml"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no llama.cpp, vLLM or SGLang start-up lines")
    );
}

/// `check` on a real SGLang start-up log (the SGLang documentation's
/// executed quick-start, Llama-3.1-8B on an H100, mem_fraction_static
/// 0.88): weights, the KV pool and its capacity within 2 % of the
/// planner, and the pool's bytes per token exactly the model's.
#[test]
fn check_reads_sglang_logs_and_compares() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let r = check_json(
        &dir.join("sglang-docs-send-request-2025-01__h100-llama3.1-8b.log"),
        &["--model", "llama-3.1-8b", "--devices", "1xh100-sxm"],
    );
    assert_eq!(r["runtime"], "sglang");
    assert_eq!(r["context_per_sequence"], 131_072);
    assert_eq!(r["sglang_log"]["mem_fraction_static"], 0.88);
    for (component, tolerance) in [
        ("weights_per_gpu", 0.02),
        ("kv_cache_memory_per_gpu", 0.02),
        ("kv_cache_capacity_tokens", 0.02),
        ("kv_bytes_per_token_per_gpu", 0.001),
    ] {
        let x = ratio(&r, component);
        assert!(
            (x - 1.0).abs() <= tolerance,
            "{component}: predicted/logged {x}"
        );
    }
    assert_eq!(row(&r, "kv_cache_capacity_tokens")["logged_bytes"], 444_500);
    // SGLang 0.4.3 on 4 × L4 (QwQ-32B, the Qwen2.5-32B architecture, at
    // 0.85): a pool of 2.84 GiB beside 15.54 GiB of weights, where taking
    // the fraction of the GPU's total instead of the free memory before the
    // load (runtime::SGLANG_INIT_BYTES) would predict 20 % more.
    let l4 = check_json(
        &dir.join("llms-in-clouds-sglang-doc__4xl4-qwq-32b-tp4-sglang-0.4.3.log"),
        &["--model", "qwen2.5-32b", "--devices", "4xl4"],
    );
    assert!((ratio(&l4, "weights_per_gpu") - 1.0).abs() <= 0.02, "{l4}");
    let kv = ratio(&l4, "kv_cache_memory_per_gpu");
    assert!((kv - 1.0).abs() <= 0.15, "predicted/logged {kv}");
    // Without --model: the log's own figures, and a note asking for it.
    let o = bin()
        .arg("check")
        .arg(dir.join("sglang-ktransformers-issue1870__qwen3.5-moe-tp2-hybrid.log"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["sglang_log"]["tp_size"], 2);
    assert_eq!(row(&r, "kv_cache_capacity_tokens")["logged_bytes"], 580_364);
    assert!(row(&r, "weights_per_gpu")["predicted_bytes"].is_null());
    assert!(r["notes"].to_string().contains("pass --model"));
    // With the model (its KV and Mamba pools fit Qwen3.5-397B-A17B: 15 of
    // 60 layers attend fully, 2 KV heads of 256, one per GPU at TP 2): the
    // token pool's bytes per token count the full-attention layers only,
    // 15 × 2 × 256 × 2 bytes = 15360 against 15356 logged.
    let q = check_json(
        &dir.join("sglang-ktransformers-issue1870__qwen3.5-moe-tp2-hybrid.log"),
        &["--model", "qwen3.5-397b-a17b", "--devices", "2xrtx-4090"],
    );
    assert_eq!(
        row(&q, "kv_bytes_per_token_per_gpu")["predicted_bytes"],
        15_360,
        "{q}"
    );
    assert!(q["notes"].to_string().contains("(15 of 60)"), "{q}");
}

/// `check` on llama-bench output: a real llama-bench (built with
/// llama-server by scripts/test.sh) run on the F16 test model in its
/// Markdown and JSON outputs; both read to the same tests, and a model and
/// device string give each row the planner's speed beside it.
#[test]
fn check_reads_a_real_llama_bench_run() {
    let Some((_server, py)) = requirements() else {
        return;
    };
    let Some(bench) = std::env::var_os("AI_HWACCEL_LLAMA_BENCH").map(PathBuf::from) else {
        eprintln!(
            "skipped: AI_HWACCEL_LLAMA_BENCH is not set (scripts/test.sh builds llama-bench)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model(&py, dir.path(), "F16");
    let mut tests = Vec::new();
    for format in ["md", "json"] {
        let o = Command::new(&bench)
            .arg("-m")
            .arg(&model)
            .args(["-p", "32", "-n", "8", "-r", "1", "-t", "2", "-o", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = dir.path().join(format!("bench.{format}"));
        std::fs::write(&out, &o.stdout).unwrap();
        let c = bin().arg("check").arg(&out).arg("--json").output().unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        let r: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
        assert_eq!(r["runtime"], "llama-bench");
        let names: Vec<String> = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                assert!(x["logged_tokens_per_s"].as_f64().unwrap() > 0.0);
                x["test"].as_str().unwrap().to_string()
            })
            .collect();
        tests.push(names);
    }
    assert_eq!(tests[0], ["pp32", "tg8"]);
    assert_eq!(tests[0], tests[1], "Markdown and JSON read alike");
}

/// `check` on llama-batched-bench output: a real llama-batched-bench
/// (built by scripts/test.sh) run on the F16 test model in its Markdown and
/// JSONL outputs; every line it printed is read, with its settings.
#[test]
fn check_reads_a_real_batched_bench_run() {
    let Some((_server, py)) = requirements() else {
        return;
    };
    let Some(bench) = std::env::var_os("AI_HWACCEL_LLAMA_BATCHED_BENCH").map(PathBuf::from) else {
        eprintln!(
            "skipped: AI_HWACCEL_LLAMA_BATCHED_BENCH is not set (scripts/test.sh builds llama-batched-bench)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model(&py, dir.path(), "F16");
    for format in ["md", "jsonl"] {
        let o = Command::new(&bench)
            .arg("-m")
            .arg(&model)
            .args([
                "-c", "512", "-npp", "32", "-ntg", "8", "-npl", "1,2", "-t", "2", "-fa", "off",
            ])
            .args(["--output-format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = dir.path().join(format!("batched.{format}"));
        let mut text = o.stdout.clone();
        text.extend_from_slice(&o.stderr);
        std::fs::write(&out, &text).unwrap();
        // The lines the tool printed: llama.cpp's logger writes from its own
        // thread and at times loses the last line at exit, so the count
        // comes from the text, not from -npl.
        let text = String::from_utf8_lossy(&text);
        let printed = text
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("{\"n_kv_max\"")
                    || (l.starts_with('|') && l[1..].trim_start().starts_with("32 "))
            })
            .count();
        assert!(printed >= 1, "{text}");
        let r = check_json(&out, &[]);
        assert_eq!(r["runtime"], "llama-batched-bench");
        assert_eq!(r["bench"]["flash_attn"], false);
        let rows = r["rows"].as_array().unwrap();
        assert_eq!(rows.len(), printed, "{format}: {text}");
        for (x, batch) in rows.iter().zip([1, 2]) {
            assert_eq!(
                (&x["pp"], &x["tg"], &x["batch"]),
                (&32.into(), &8.into(), &batch.into())
            );
            assert!(
                x["logged_decode_tokens_per_s"].as_f64().unwrap() > 0.0,
                "{x}"
            );
            assert!(
                x["predicted_decode_tokens_per_s"].is_null(),
                "no --model: {x}"
            );
        }
        assert!(r["notes"].to_string().contains("pass --model"));
    }
}

/// `check` on this project's llama-batched-bench run on a lent H100
/// (`tests/fixtures/lent-h100`): each line's decode over all sequences
/// beside the planner's at that batch and the steps' mean context, and one
/// sequence's share no more than the total.
#[test]
fn check_compares_a_batched_bench_run_with_the_planner() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/lent-h100/batched-bench__l7b-f16.txt");
    let r = check_json(
        &path,
        &[
            "--model",
            "llama-2-7b",
            "--devices",
            "1xh100-sxm",
            "--quant",
            "fp16",
        ],
    );
    assert_eq!(r["bench"]["n_ubatch"], 512);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let mut last = 0.0;
    for x in rows {
        let b = x["batch"].as_f64().unwrap();
        let total = x["predicted_decode_tokens_per_s"].as_f64().unwrap();
        let one = x["predicted_decode_tokens_per_s_per_sequence"]
            .as_f64()
            .unwrap();
        assert!((total - b * one).abs() <= 1e-6 * total, "{x}");
        assert!(total > last, "more sequences, more tokens per step: {x}");
        last = total;
        let ratio = x["decode_ratio"].as_f64().unwrap();
        let logged = x["logged_decode_tokens_per_s"].as_f64().unwrap();
        assert!((ratio - total / logged).abs() < 1e-9, "{x}");
    }
    assert_eq!(rows[7]["logged_decode_tokens_per_s"], 2807.81);
    // Without --quant the output names no format: said so.
    let r = check_json(&path, &["--model", "llama-2-7b", "--devices", "1xh100-sxm"]);
    assert!(
        r["notes"].to_string().contains("names no weight format"),
        "{}",
        r["notes"]
    );
    // A format plan does not know is an error naming it.
    let o = bin()
        .arg("check")
        .arg(&path)
        .args([
            "--model",
            "llama-2-7b",
            "--devices",
            "1xh100-sxm",
            "--quant",
            "q9_9",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("q9_9"));
    // Hostile lines (lengths and batches at u64::MAX): read, no
    // prediction, no overflow.
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("evil.txt");
    let max = u64::MAX;
    std::fs::write(
        &evil,
        format!(
            "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n\
             |-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n\
             | {max} | {max} | {max} | 0 | 1 | 1 | 1 | 1 | 1 | 1 |\n"
        ),
    )
    .unwrap();
    let r = check_json(
        &evil,
        &[
            "--model",
            "llama-2-7b",
            "--devices",
            "1xh100-sxm",
            "--quant",
            "q4_0",
        ],
    );
    assert_eq!(r["rows"][0]["batch"], max);
    assert!(r["rows"][0]["predicted_decode_tokens_per_s"].is_null());
    // A forged file of many distinct lines: one plan per distinct (PP, TG,
    // B), at most 256 of them; the rest unpredicted, and said so.
    let mut text = String::from(
        "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n",
    );
    for b in 1..=300 {
        text += &format!("| 512 | 128 | {b} | 0 | 1 | 1 | 1 | 1 | 1 | 1 |\n");
    }
    text += "| 512 | 128 | 1 | 0 | 1 | 1 | 1 | 1 | 1 | 1 |\n";
    std::fs::write(&evil, text).unwrap();
    let r = check_json(
        &evil,
        &[
            "--model",
            "llama-2-7b",
            "--devices",
            "1xh100-sxm",
            "--quant",
            "q4_0",
        ],
    );
    let rows = r["rows"].as_array().unwrap();
    let predicted = |x: &serde_json::Value| !x["predicted_decode_tokens_per_s"].is_null();
    assert_eq!(rows.len(), 301);
    assert_eq!(
        rows.iter().filter(|x| predicted(x)).count(),
        257,
        "256 plans, the repeat shares one"
    );
    assert_eq!(
        rows[0]["predicted_decode_tokens_per_s"],
        rows[300]["predicted_decode_tokens_per_s"]
    );
    assert!(
        r["notes"].to_string().contains("more than 256 distinct"),
        "{}",
        r["notes"]
    );
}

/// `check` on a published llama-bench table (2024 test names) with a
/// catalog model and device: the planner's decode beside the measured one,
/// within 25 % where the run kept the KV cache on the GPU, and the prompt
/// rate beside the measured one too, within 35 % (the RTX 3090 Ti's spec
/// entry carries rates derived from NVIDIA's launch figures: 4456 planned
/// against 4035 measured tokens/s when this was written; 5077 since the
/// first prompts of fresh `main` processes left the fit in Nov 2026, and
/// the prefill cells, now those of repeated llama-bench tests, put this
/// January 2024 build's prompt 26 % over; 31 % over since the Vulkan AMD
/// era factor's refit of Nov 28 2026 moved the GeForce prefill cell).
#[test]
fn check_compares_a_published_llama_bench_table() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let r = check_json(
        &dir.join("llama-bench-pr4812__rtx3090ti-2024-old-test-names.md"),
        &["--model", "llama-2-7b", "--devices", "1xrtx-3090-ti"],
    );
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(
        (rows[0]["test"].as_str(), rows[1]["test"].as_str()),
        (Some("pp512"), Some("tg128"))
    );
    let pp_ratio = rows[0]["ratio"].as_f64().unwrap();
    assert!((pp_ratio - 1.0).abs() <= 0.35, "{}", rows[0]);
    let ratio = rows[1]["ratio"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() <= 0.25, "{}", rows[1]);
    // Planned for the printed build (b1786: January 2024) with llama-bench's
    // default of then, `-fa 0`, and said so.
    assert_eq!(rows[1]["planned_build"], "2024-01");
    assert_eq!(rows[1]["planned_flash_attention"], false);
    let notes = r["notes"].to_string();
    assert!(notes.contains("builds of 2024-01"), "{notes}");
    assert!(notes.contains("planned off"), "{notes}");
}

/// `check` reads a build's `GGML_CUDA_FORCE_MMQ` start-up line. The
/// published January 2024 llama-bench output of PR 4766 (a default build,
/// `no`) is planned as a default build and says nothing of it; the same
/// output with the line reading `yes` (changed here, the only change) is
/// planned as a forced-MMQ build and says so. Planned on a V100, where such
/// a build runs quantized prompts on the DP4A kernels at any build date:
/// the Q8_0 and Q4_0 prompts change, the F16 prompt and every decode do not.
#[test]
fn check_plans_a_forced_mmq_build_from_its_start_up_line() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/runtime-logs/llama-bench-pr4766__rtx4090-2024-01-force-mmq-no.md");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let forced = dir.path().join("forced.md");
    let yes = text.replace("GGML_CUDA_FORCE_MMQ:   no", "GGML_CUDA_FORCE_MMQ:   yes");
    assert_ne!(yes, text);
    std::fs::write(&forced, yes).unwrap();
    let args = ["--model", "llama-2-7b", "--devices", "1xv100-sxm2-32gb"];
    let plain = check_json(&fixture, &args);
    let with = check_json(&forced, &args);
    let note = |r: &serde_json::Value| r["notes"].to_string().contains("GGML_CUDA_FORCE_MMQ");
    assert!(!note(&plain), "{}", plain["notes"]);
    assert!(note(&with), "{}", with["notes"]);
    let rows = |r: &serde_json::Value| r["rows"].as_array().unwrap().clone();
    let (a, b) = (rows(&plain), rows(&with));
    assert_eq!(a.len(), 5, "{plain}");
    assert_eq!(b.len(), 5, "{with}");
    let p = |v: &serde_json::Value| v["predicted_tokens_per_s"].as_f64().unwrap();
    for (x, y) in a.iter().zip(&b) {
        let quantized_prompt =
            x["test"] == "pp512" && !x["model"].as_str().unwrap().contains("F16");
        if quantized_prompt {
            assert_ne!(p(x), p(y), "{x} {y}");
        } else {
            assert_eq!(p(x), p(y), "{x} {y}");
        }
    }
}

/// `check` on a ROCm run of a GGML_CUDA_FORCE_MMQ build on an MI100 (a
/// llama-bench table written here in a 2026 build's format, with PR
/// 22051's master IQ4_NL prompt rate): the default build sends IQ4_NL
/// micro-batches of 512 tokens to rocBLAS there, so a note says the
/// prediction is the default build's; without the option, or for Q4_0
/// (MMQ in the default build too), no such note, and the prediction is the
/// same either way.
#[test]
fn check_says_a_forced_mmq_prompt_on_cdna_is_planned_as_the_default_build() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, force: &str, model: &str| {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    {force}\n\
                 ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no\n\
                 ggml_cuda_init: found 1 ROCm devices:\n\
                 \x20 Device 0: AMD Instinct MI100, gfx908:sramecc+:xnack- (0x908), VMM: no, Wave Size: 64\n\
                 | model                          |       size |     params | backend    | ngl |            test |                  t/s |\n\
                 | ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n\
                 | {model} |   4.35 GiB |     8.03 B | ROCm       |  99 |           pp512 |      3158.92 ± 5.00 |\n\
                 \n\
                 build: db3370a3 (8840)\n"
            ),
        )
        .unwrap();
        file
    };
    let iq4 = "llama 8B IQ4_NL - 4.5 bpw     ";
    let q4 = "llama 8B Q4_0                 ";
    let args = ["--model", "llama-3-8b", "--devices", "1xmi100"];
    let forced = check_json(&write("forced.md", "yes", iq4), &args);
    let plain = check_json(&write("plain.md", "no", iq4), &args);
    let legacy = check_json(&write("legacy.md", "yes", q4), &args);
    let said = |r: &serde_json::Value| r["notes"].to_string().contains("rocBLAS");
    assert!(said(&forced), "{}", forced["notes"]);
    assert!(!said(&plain), "{}", plain["notes"]);
    assert!(!said(&legacy), "{}", legacy["notes"]);
    let p = |r: &serde_json::Value| r["rows"][0]["predicted_tokens_per_s"].as_f64().unwrap();
    assert_eq!(p(&forced), p(&plain));
}

/// `check` plans each llama-bench line on the backend it printed: the same
/// A770 table with a SYCL and a Vulkan line (a llama-bench Markdown table
/// written here, in the format of a 2025 build) gets the Vulkan prompt
/// planned at the vector engines' rate, a quarter of the matrix engines'.
#[test]
fn check_plans_each_line_on_its_printed_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.md");
    std::fs::write(
        &file,
        "| model                          |       size |     params | backend    | ngl |            test |                  t/s |\n\
         | ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |\n\
         | llama 7B Q4_0                  |   3.56 GiB |     6.74 B | SYCL       |  99 |           pp512 |      1711.58 ± 10.00 |\n\
         | llama 7B Q4_0                  |   3.56 GiB |     6.74 B | RPC,Vulkan |  99 |           pp512 |        903.49 ± 5.00 |\n\
         \n\
         build: 26b79b6cb (5538)\n",
    )
    .unwrap();
    let r = check_json(&file, &["--model", "llama-2-7b", "--devices", "1xarc-a770"]);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{r}");
    let p = |i: usize| rows[i]["predicted_tokens_per_s"].as_f64().unwrap();
    let ratio = p(1) / p(0);
    assert!(ratio > 0.2 && ratio < 0.3, "{ratio}: {r}");
    assert_eq!(rows[0]["planned_backend"], "sycl");
    assert_eq!(rows[1]["planned_backend"], "vulkan");
}

/// `check` on llama-bench JSON of a real 2026 build (this project's lent
/// H200 run; `build_number` 0, so its `test_time` dates it): a month after
/// the newest the calibration rows measure is planned as that newest, and
/// the row says so; its `flash_attn` 0 is planned as printed.
#[test]
fn check_dates_a_json_run_by_its_test_time() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/lent-h200/llama-bench__l7b-q4_0-f16.json");
    let r = check_json(&path, &["--model", "llama-2-7b", "--devices", "1xh200"]);
    let newest = ai_hwaccel::plan::speed::newest_build(
        ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        ai_hwaccel::plan::speed::DeviceClass::NvidiaDatacenter,
    )
    .unwrap();
    for row in r["rows"].as_array().unwrap() {
        assert_eq!(row["planned_build"], newest.to_string(), "{row}");
        assert_eq!(row["planned_flash_attention"], false, "{row}");
    }
}

/// `check` on a `llama-bench -v` log of a real CUDA run (this project's,
/// on a lent H200: `tests/fixtures/lent-h200`): the start-up lines under
/// `startup` beside the speeds. The log names the weights' format (Q4_0),
/// at which the catalog model is planned; the CUDA0 buffers are compared
/// with the plan's device, the pinned host buffers (`CUDA_Host`) named
/// apart. On that GPU the weights and KV cache the planner predicts are the
/// bytes llama.cpp allocated, and its compute buffer within 1 %.
#[test]
fn check_reads_a_cuda_llama_bench_verbose_log() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/lent-h200/llama-bench-v__l7b-q4_0.log");
    let r = check_json(&log, &["--model", "llama-2-7b", "--devices", "1xh200"]);
    assert_eq!(r["runtime"], "llama-bench");
    assert_eq!(r["rows"][0]["test"], "pp512");
    assert_eq!(r["rows"][0]["logged_tokens_per_s"], 7586.82);
    let s = &r["startup"];
    assert_eq!(s["log"]["file_type"], "Q4_0");
    assert_eq!(
        row(s, "weights")["logged_bytes"],
        3_825_068_934u64,
        "3647.87 MiB"
    );
    assert!((ratio(s, "weights") - 1.0).abs() < 1e-5);
    assert_eq!(ratio(s, "kv_cache"), 1.0);
    assert_eq!(
        row(s, "compute_and_output_buffers")["logged_bytes"],
        102_246_646u64,
        "CUDA0's 97.51 MiB alone"
    );
    assert!((ratio(s, "compute_and_output_buffers") - 1.0).abs() < 0.01);
    let note = s["notes"].as_array().unwrap().iter().any(|n| {
        n.as_str()
            .is_some_and(|n| n.contains("CUDA_Host compute 33.01 MiB"))
    });
    assert!(note, "{s}");
    // The text report holds both tables.
    let o = bin()
        .arg("check")
        .arg(&log)
        .args(["--model", "llama-2-7b", "--devices", "1xh200"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("kv_cache") && text.contains("pp512"),
        "{text}"
    );
}

/// `check` of a llama.cpp run that loaded a multimodal projector
/// (`--mmproj`; yzma's README, Sep 2025): the projector's weights and
/// compute buffers are named in a note, apart from the text model's.
#[test]
fn check_names_a_multimodal_projectors_memory() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let r = check_json(
        &dir.join("yzma-readme__qwen2.5-vl-3b-mmproj-clip-2025-09.log"),
        &[],
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(
            "multimodal projector (--mmproj): 805.59 MiB of encoder weights, compute buffers CUDA0 3.60 MiB, CPU 0.16 MiB"
        ),
        "{notes}"
    );
    assert_eq!(r["log"]["encoder_model_bytes"], 844_722_340_u64);
}

/// `check` on TensorRT-LLM logs from public threads: the 2024 spelling
/// (bytes and tokens) and the 2025 one (GiB and tokens in one line); the
/// pool's bytes per token equal the planner's for the model's shape.
#[test]
fn check_reads_tensorrt_llm_logs() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let r = check_json(
        &dir.join("trtllm-issue1400__a100-2024-bytes-and-tokens.log"),
        &["--model", "llama-2-7b", "--devices", "1xa100-80gb"],
    );
    assert_eq!(r["runtime"], "trtllm");
    assert_eq!(row(&r, "kv_cache_capacity_tokens")["logged_bytes"], 132_608);
    assert_eq!(ratio(&r, "kv_bytes_per_token_per_gpu"), 1.0);
    assert!(
        row(&r, "kv_cache_memory_per_gpu")["predicted_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    let o = bin()
        .arg("check")
        .arg(dir.join("trtllm-triton-tutorials-pr150__2025-allocated-gib.log"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        row(&r, "kv_cache_capacity_tokens")["logged_bytes"],
        3_731_744
    );
    // A variable-window cache (the 2026 kvCacheManager.cpp lines, two
    // pools): its summed tokens are not compared with the planner's
    // full-attention tokens, and the note lists the pools.
    let tmp = tempfile::tempdir().unwrap();
    let vswa = tmp.path().join("vswa.log");
    std::fs::write(
        &vswa,
        "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 32 [window size=1024], tokens per block=32, primary blocks=2048, secondary blocks=0, max sequence length=8192\n\
         [TensorRT-LLM][INFO] Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32, primary blocks=6144, secondary blocks=0, max sequence length=8192\n\
         [TensorRT-LLM][INFO] [MemUsageChange] Allocated 9.80 GiB for max tokens in paged KV cache (262144).\n",
    )
    .unwrap();
    let r = check_json(
        &vswa,
        &["--model", "gemma-3-27b", "--devices", "1xh100-sxm"],
    );
    let tokens = row(&r, "kv_cache_capacity_tokens");
    assert_eq!(tokens["logged_bytes"], 262_144);
    assert!(tokens["predicted_bytes"].is_null(), "{tokens}");
    assert!(
        row(&r, "kv_bytes_per_token_per_gpu")["logged_bytes"].is_null(),
        "{r}"
    );
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("window 1024: 2048 blocks (32 a sequence)"))),
        "{notes:?}"
    );
}

/// llama.cpp's `ggml-rpc-server`, or why a test that needs it is skipped.
fn rpc_server_tool() -> Option<PathBuf> {
    tool("AI_HWACCEL_LLAMA_RPC_SERVER", "ggml-rpc-server")
}

/// A layer split as llama.cpp runs it, on two devices: two `ggml-rpc-server`
/// processes on this machine are llama.cpp devices (`RPC0[host:port]`) with
/// async compute and events, so llama-server runs the emitted `--split-mode
/// layer --tensor-split` command over them with pipeline parallelism on,
/// as it would over two GPUs. `check` pairs each logged device with its
/// planned stage: the layers llama.cpp placed on each (its weights and KV
/// buffers) and each compute buffer, with the pipeline's input copies,
/// match the plan's.
#[test]
fn a_layer_split_over_two_devices_matches_each_stage() {
    let Some((server, py)) = requirements() else {
        return;
    };
    let Some(rpc) = rpc_server_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = make_model_with(&py, dir.path(), "F16", &["--layers", "8"]);
    // The planner's two-stage layout on two (any) equal devices.
    let plan_args = |extra: &[&str]| {
        let mut c = bin();
        c.args(["plan"]).arg(&model).args([
            "--devices",
            "2xl4",
            "--runtime",
            "llama.cpp",
            "--context",
            "2048",
            "--kv-dtype",
            "fp16",
            "--max-plans",
            "10",
        ]);
        c.args(extra);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let plan = plan_args(&["--json"]);
    let index = plan["plans"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p["pipeline_parallel"] == 2 && p["tensor_parallel"] == 1)
        .expect("a two-stage layout");
    let launch = plan_args(&[
        "--emit",
        "llama.cpp",
        "--plan",
        &(index + 1).to_string(),
        "--json",
    ]);
    let argv: Vec<String> = launch["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        argv.iter()
            .position(|a| a == "--tensor-split")
            .map(|i| argv[i + 1].as_str()),
        Some("4,5"),
        "4 layers each, the output layer on the second"
    );
    let ports = [free_port(), free_port()];
    // Stopped when the test ends, passing or not.
    struct Stop(Vec<std::process::Child>);
    impl Drop for Stop {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let rpcs = Stop(
        ports
            .iter()
            .map(|p| {
                Command::new(&rpc)
                    .args(["-H", "127.0.0.1", "-p", &p.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    // Each rpc-server listens once it has started.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ports
        .iter()
        .any(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_err())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let log_path = dir.path().join("split.log");
    let endpoints = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let (code, body) = serve(&server, &argv[1..], &["--rpc", &endpoints], &log_path);
    drop(rpcs);
    // The split model generates.
    assert_eq!(code, 200, "{body}");
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(text.contains("pipeline parallelism enabled"), "{text}");
    let o = bin()
        .arg("check")
        .arg(&log_path)
        .arg("--model")
        .arg(&model)
        .args(["--devices", "2xl4", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let per_device = report["per_device"].as_array().expect("per-device rows");
    assert_eq!(per_device.len(), 2, "{report}");
    for (i, d) in per_device.iter().enumerate() {
        assert!(d["device"].as_str().unwrap().starts_with("RPC"), "{report}");
        assert_eq!(d["planned_layers"][0], 4 * i, "{report}");
        for r in d["rows"].as_array().unwrap() {
            let ratio = r["ratio"].as_f64().unwrap_or_else(|| panic!("{report}"));
            assert!(
                (ratio - 1.0).abs() <= 0.01,
                "device {i} {}: predicted/logged {ratio}",
                r["component"]
            );
        }
    }
}

/// `check` plans a prompt line at the micro-batch its run printed
/// (llama-bench's `n_ubatch` column, shown where `-ub` was set): a mixture
/// of experts' prompt reads its experts once per micro-batch, so the same
/// gpt-oss 20B pp2048 line predicts faster at `-ub 2048` than at the
/// default 512.
#[test]
fn check_plans_a_prompt_at_its_printed_micro_batch() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, ub_col: &str, ub_sep: &str, ub: &str| {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "| model                          |       size |     params | backend    | ngl |{ub_col} fa |            test |                  t/s |\n\
                 | ------------------------------ | ---------: | ---------: | ---------- | --: |{ub_sep} -: | --------------: | -------------------: |\n\
                 | gpt-oss 20B MXFP4 MoE          |  11.27 GiB |    20.91 B | CUDA       |  99 |{ub}  1 |          pp2048 |       3782.76 ± 9.90 |\n\
                 \n\
                 build: 2f68ce7cf (6918)\n"
            ),
        )
        .unwrap();
        file
    };
    let args = ["--model", "gpt-oss-20b", "--devices", "1xgb10"];
    let big = check_json(
        &write("ub.md", " n_ubatch |", " -------: |", "     2048 |"),
        &args,
    );
    let default = check_json(&write("default.md", "", "", ""), &args);
    let p = |r: &serde_json::Value| r["rows"][0]["predicted_tokens_per_s"].as_f64().unwrap();
    assert!(p(&big) > p(&default), "{} {}", p(&big), p(&default));
}
