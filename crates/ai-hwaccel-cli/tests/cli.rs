//! End-to-end tests of the `ai-hwaccel` binary: the JSON contract on this
//! machine (checked against /proc/meminfo, `nproc` and hwloc), the published
//! schema, exit codes, snapshot/replay through the CLI.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run the binary and reference tools"
)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Standard output of a run that must succeed (its stderr shown when not).
fn success_text(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Every line of a human report fits 100 columns.
fn assert_narrow(text: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

fn fixture_root(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/roots")
        .join(name)
}

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema/registry.schema.json")
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
    })
}

#[test]
fn detect_json_matches_this_machine() {
    let v = json(&["detect", "--json"]);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(v["system"]["memory"]["total_bytes"], total_kb * 1024);
    let nproc = Command::new("nproc").output().unwrap();
    let n: u64 = String::from_utf8_lossy(&nproc.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(v["system"]["cpu"]["usable_cpus"], n, "usable CPUs = nproc");
    // Without a cgroup CPU limit the machine's logical CPUs equal nproc too.
    let cg = &v["system"]["cgroup"];
    if cg["cpu_quota"].is_null() && cg["cpuset_cpus"].is_null() {
        assert_eq!(v["system"]["cpu"]["logical_cpus"], n);
    }
    assert_eq!(v["schema_version"], 1);
    for key in [
        "has_accelerator",
        "accelerator_count",
        "accelerator_memory_bytes",
    ] {
        assert!(v["summary"].get(key).is_some(), "summary.{key}");
    }
    let cpu = &v["devices"][0];
    assert_eq!(cpu["family"], "cpu");
    for key in [
        "id",
        "name",
        "vendor",
        "family",
        "available",
        "memory_bytes",
        "memory_free_bytes",
        "pci_address",
        "numa_node",
        "driver",
        "driver_version",
        "compute_capability",
        "uuid",
        "source",
    ] {
        assert!(cpu.get(key).is_some(), "device field {key}");
    }
}

#[test]
fn numa_layout_agrees_with_hwloc() {
    let Some(calc) = which("hwloc-calc") else {
        eprintln!(
            "SKIPPED numa_layout_agrees_with_hwloc: hwloc-calc not installed (Debian hwloc-nox)"
        );
        return;
    };
    let v = json(&["detect", "--json"]);
    let count = |what: &str| -> u64 {
        let o = Command::new(&calc)
            .args(["--number-of", what, "machine:0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let nodes = v["system"]["numa_nodes"].as_array().unwrap();
    assert_eq!(nodes.len() as u64, count("numanode"));
    assert_eq!(v["system"]["cpu"]["logical_cpus"], count("pu"));
    assert_eq!(v["system"]["cpu"]["physical_cores"], count("core"));
    assert_eq!(v["system"]["cpu"]["sockets"], count("package"));
    for n in nodes {
        let id = n["id"].as_u64().unwrap();
        let o = Command::new(&calc)
            .args(["--intersect", "pu", &format!("numa:{id}")])
            .output()
            .unwrap();
        let hw: Vec<u64> = String::from_utf8_lossy(&o.stdout)
            .trim()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let ours: Vec<u64> = n["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(ours, hw, "CPUs of NUMA node {id}");
    }
}

#[test]
fn output_validates_against_the_published_schema() {
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let generated = json(&["schema"]);
    assert_eq!(
        published, generated,
        "schema/registry.schema.json is stale: run `ai-hwaccel schema > schema/registry.schema.json`"
    );
    let validator = jsonschema::validator_for(&published).unwrap();
    let mut outputs = vec![json(&["detect", "--json"])];
    for root in ["two-socket-pci", "container-cgroup-v2", "malformed"] {
        let r = fixture_root(root);
        outputs.push(json(&["detect", "--json", "--root", r.to_str().unwrap()]));
    }
    for out in &outputs {
        let errors: Vec<String> = validator.iter_errors(out).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert!(!validator.is_valid(&serde_json::json!({"schema_version": "one"})));
}

#[test]
fn table_output_is_readable_and_fits_100_columns() {
    let root = fixture_root("two-socket-pci");
    let o = run(&["detect", "--root", root.to_str().unwrap(), "--timings"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("AMD Instinct MI300X"), "{text}");
    assert!(
        text.contains("pci:0000:3b:00.0: unavailable: no kernel driver bound"),
        "{text}"
    );
    assert!(
        text.contains("2 socket(s), 8 cores, 16 logical CPUs"),
        "{text}"
    );
    assert!(text.contains("BACKEND"), "{text}");
    assert_narrow(&text);
}

#[test]
fn exit_codes_and_one_line_errors() {
    let o = run(&["detect", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2), "usage error");
    let o = run(&["detect", "--family", "quantum"]);
    assert_eq!(o.status.code(), Some(2), "bad family is a usage error");
    let o = run(&["detect", "--root", "/nonexistent/root"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent/root") && err.lines().count() == 1,
        "{err}"
    );
    let o = run(&["detect", "--from", "/nonexistent/snap"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("manifest.json"));
    // Invalid option values are usage errors.
    let o = run(&["detect", "--backends", "warp"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["parse", "no-such-format", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["detect", "--timeout=0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn family_filter_on_the_cli() {
    let root = fixture_root("two-socket-pci");
    let v = json(&[
        "detect",
        "--json",
        "--root",
        root.to_str().unwrap(),
        "--family",
        "gpu",
    ]);
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 4);
    assert!(devs.iter().all(|d| d["family"] == "gpu"));
    assert_eq!(devs[0]["pci_address"], "0000:1b:00.0");
}

#[test]
fn snapshot_and_replay_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap");
    let root = fixture_root("two-socket-pci");
    let (snap_s, root_s) = (snap.to_str().unwrap(), root.to_str().unwrap());
    let o = run(&["snapshot", snap_s, "--root", root_s]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(snap.join("manifest.json").is_file() && snap.join("registry.json").is_file());
    let mut a = json(&["detect", "--json", "--root", root_s]);
    let mut b = json(&["detect", "--json", "--from", snap_s]);
    for v in [&mut a, &mut b] {
        v["timings"] = serde_json::Value::Null;
        v["total_millis"] = serde_json::Value::Null;
    }
    assert_eq!(a, b);
    // A second snapshot into the same directory must not overwrite it.
    let o = run(&["snapshot", snap_s, "--root", root_s]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
    let live_snap = dir.path().join("live");
    let o = run(&["snapshot", live_snap.to_str().unwrap()]);
    assert!(o.status.success());
    let replayed = json(&["detect", "--json", "--from", live_snap.to_str().unwrap()]);
    let text = std::fs::read_to_string(live_snap.join("registry.json")).unwrap();
    let recorded: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(replayed["devices"], recorded["devices"]);
    assert_eq!(replayed["system"], recorded["system"]);
    assert_eq!(replayed["warnings"], recorded["warnings"]);
}

/// A snapshot recorded on a real NVML machine (a lent H100 80GB HBM3 in a
/// Firecracker VM, driver 580.159.04; `tests/fixtures/snapshots`): the
/// replay, which loads no library, gives the registry recorded live, NVML's
/// answer included (its v2 memory call's 480 MiB reserve, the power it
/// read), and a plan from it sizes the GPU as CUDA does.
#[test]
fn a_real_nvml_machine_snapshot_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/snapshots/lent-h100-firecracker");
    let replayed = json(&["detect", "--json", "--from", dir.to_str().unwrap()]);
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("registry.json")).unwrap()).unwrap();
    assert_eq!(replayed["devices"], recorded["devices"]);
    assert_eq!(replayed["system"], recorded["system"]);
    // The recording binary had no NUMA check; this one warns that the VM's
    // node 0 counts 4.8 GiB of the machine's 125.9 GiB.
    let warnings = replayed["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0]["message"].as_str().unwrap();
    assert!(w.contains("4.8 GiB") && w.contains("125.9 GiB"), "{w}");
    let gpu = &replayed["devices"][1];
    assert_eq!(gpu["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu["source"], "nvml+pci-sysfs");
    assert_eq!(gpu["memory_bytes"], 81_559u64 << 20);
    assert_eq!(
        gpu["extra"]["memory_reserved_bytes"], "503316480",
        "480 MiB"
    );
    assert_eq!(gpu["extra"]["memory_used_bytes"], "0");
    assert_eq!(gpu["power_draw_watts"], 75.418);
    assert_eq!(gpu["spec"]["id"], "h100-sxm");
    assert_eq!(gpu["pci"]["link"]["current_speed_gts"], 32.0);
    assert_eq!(gpu["pci"]["link"]["current_width"], 16);
    let reg = dir.join("registry.json");
    let plan = json(&[
        "plan",
        "llama-3-8b",
        "--registry",
        reg.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        plan["plans"][0]["per_device"][0]["capacity_bytes"],
        (81_559u64 - 480) << 20,
        "CUDA's total: 79.18 GiB"
    );
    // The same registry as Windows PowerShell 5.1's `detect --json >
    // registry.json` saves it: UTF-16LE with a byte-order mark.
    let utf16 = dir.join("registry-utf16.json");
    let mut bytes = b"\xFF\xFE".to_vec();
    for u in std::fs::read_to_string(&reg).unwrap().encode_utf16() {
        bytes.extend(u.to_le_bytes());
    }
    std::fs::write(&utf16, &bytes).unwrap();
    let again = json(&[
        "plan",
        "llama-3-8b",
        "--registry",
        utf16.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(again["plans"], plan["plans"]);
    // Cut in the middle of a code unit: an error naming the file.
    bytes.pop();
    std::fs::write(&utf16, &bytes).unwrap();
    let o = run(&["plan", "llama-3-8b", "--registry", utf16.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("registry-utf16.json") && err.contains("not UTF-16 text"),
        "{err}"
    );
}

#[test]
fn broken_pipe_is_not_an_error() {
    use std::process::Stdio;
    let mut child = bin()
        .args(["detect", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn model_reports_exact_counts() {
    let v = json(&["model", "llama-3.1-8b", "--json"]);
    assert_eq!(v["parameters"], 8_030_261_248u64);
    assert_eq!(v["active_parameters"], 8_030_261_248u64);
    assert_eq!(v["kv_cache_bytes_per_token"], 131_072);
    assert_eq!(v["layers"].as_array().unwrap().len(), 32);
    assert_eq!(v["origin"]["kind"], "catalog");
    let v = json(&["model", "mixtral-8x7b", "--json"]);
    assert_eq!(v["active_parameters"], 12_879_925_248u64);
    let o = run(&["model", "deepseek-v3"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("671026419200"), "{text}");
    assert!(text.contains("MLA: KV rank 512"), "{text}");
    // A size is approximate and says so.
    let v = json(&["model", "13b", "--json"]);
    assert_eq!(v["approximate"], true);
    // Unknown model: exit 1, one line, a hint.
    let o = run(&["model", "llama-3.1-9b"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("did you mean") && err.contains("llama-3.1-8b"),
        "{err}"
    );
}

#[test]
fn plan_json_contract() {
    let v = json(&[
        "plan",
        "llama-3.1-70b",
        "--devices",
        "2xh100-sxm",
        "--quant",
        "bf16",
        "--context",
        "8192",
        "--json",
    ]);
    assert_eq!(v["feasible"], true);
    assert_eq!(v["context"], 8192);
    let p = &v["plans"][0];
    for key in [
        "tensor_parallel",
        "pipeline_parallel",
        "data_parallel",
        "quantization",
        "max_context_tokens",
        "decode_tokens_per_s",
        "prefill_tokens_per_s",
    ] {
        assert!(p.get(key).is_some(), "plans[0].{key}");
    }
    assert_eq!(p["tensor_parallel"], 2);
    assert_eq!(p["quantization"], "bf16");
    let d = &p["per_device"][0];
    let sum: u64 = [
        "weights_bytes",
        "kv_cache_bytes",
        "activation_bytes",
        "overhead_bytes",
    ]
    .iter()
    .map(|k| d[*k].as_u64().unwrap())
    .sum();
    assert_eq!(d["total_bytes"].as_u64().unwrap(), sum);
    assert!(d["total_bytes"].as_u64() <= d["capacity_bytes"].as_u64());
    // One 80 GB GPU at bf16: infeasible, with advice; still exit 0 (an answer).
    let v = json(&[
        "plan",
        "llama-3.1-70b",
        "--devices",
        "h100-sxm",
        "--quant",
        "bf16",
        "--json",
    ]);
    assert_eq!(v["feasible"], false);
    assert!(v["plans"].as_array().unwrap().is_empty());
    assert!(!v["advice"].as_array().unwrap().is_empty());
    assert_eq!(v["suggested_quantization"], "fp8");
    // Usage errors exit 2, an unknown device too, naming it.
    assert_eq!(
        run(&["plan", "llama-3.1-8b", "--quant", "q9"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&["plan", "llama-3.1-8b", "--batch", "0"]).status.code(),
        Some(2)
    );
    assert_eq!(
        run(&["plan", "llama-3.1-8b", "--memory-utilization", "1.5"])
            .status
            .code(),
        Some(2)
    );
    let o = run(&["plan", "llama-3.1-8b", "--devices", "2xnot-a-gpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not-a-gpu"));
}

#[test]
fn plan_table_fits_100_columns() {
    for args in [
        &["plan", "llama-3.1-405b", "--devices", "16xh100-sxm"][..],
        &[
            "plan",
            "deepseek-v3",
            "--devices",
            "8xh200",
            "--context",
            "32768",
            "--batch",
            "8",
        ][..],
        &[
            "plan",
            "llama-3.1-70b",
            "--devices",
            "1xl4",
            "--quant",
            "bf16",
        ][..],
        &["model", "gemma-2-9b"][..],
    ] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&o.stdout);
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "too wide: {line}");
        }
    }
}

#[test]
fn train_json_contract() {
    let v = json(&[
        "train",
        "llama-3.1-8b",
        "--method",
        "full",
        "--devices",
        "8xh100-sxm",
        "--zero",
        "3",
        "--json",
    ]);
    let d = &v["per_device"][0];
    for k in [
        "parameters_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "master_weights_bytes",
        "activations_bytes",
        "other_bytes",
        "total_bytes",
        "capacity_bytes",
    ] {
        assert!(d[k].is_u64(), "{k}: {d}");
    }
    assert_eq!(d["fits"], true);
    assert_eq!(v["fits"], true);
    assert_eq!(v["trainable_parameters"], 8_030_261_248u64);
    // ZeRO-3 over 8: 2 bytes × Ψ / 8 of parameters.
    assert_eq!(d["parameters_bytes"], 8_030_261_248u64 * 2 / 8);
    assert!(v["tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["step_seconds"].as_f64().unwrap() > 0.0);
    assert!(v["suggestion"].is_null());
    let q = json(&[
        "train",
        "llama-3.1-70b",
        "--method",
        "qlora",
        "--devices",
        "1xl40s",
        "--json",
    ]);
    assert_eq!(q["fits"], false);
    assert!(q["suggestion"]["change"].is_string(), "{}", q["suggestion"]);
}

#[test]
fn train_table_and_errors() {
    let o = run(&[
        "train",
        "llama-3.1-70b",
        "--method",
        "lora",
        "--devices",
        "8xh100-sxm",
        "--zero",
        "3",
        "--recompute",
        "full",
    ]);
    let text = success_text(o);
    assert!(
        text.contains("optimizer") && text.contains("fits: yes"),
        "{text}"
    );
    assert_narrow(&text);
    for bad in [
        ["--zero", "4"],
        ["--optimizer", "adam9"],
        ["--lora-targets", "q,x"],
        ["--tp", "0"],
    ] {
        let o = run(&["train", "llama-3.1-8b", bad[0], bad[1]]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
    let o = run(&["train", "no-such-model-xyz", "--devices", "1xh100-sxm"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn train_attention_mode_in_json() {
    // Llama-3.1-8B at s = 4096: 32 layers × (603,979,776 + the attention
    // core) + 4·s·V fp32 logits (2,101,346,304). Flash keeps 4·a·s bytes
    // of logsumexp per layer, eager 5·a·s² of scores and softmax.
    let acts = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "llama-3.1-8b",
            "--seq",
            "4096",
            "--devices",
            "1xh100-sxm",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v = json(&args);
        (
            v["options"]["attention"].as_str().unwrap().to_string(),
            v["per_device"][0]["activations_bytes"].as_u64().unwrap(),
        )
    };
    assert_eq!(acts(&[]), ("flash".into(), 21_445_476_352));
    assert_eq!(
        acts(&["--attention", "flash"]),
        ("flash".into(), 21_445_476_352)
    );
    assert_eq!(
        acts(&["--attention", "eager"]),
        ("eager".into(), 107_328_045_056)
    );
    let o = run(&["train", "llama-3.1-8b", "--attention", "sdpa"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn train_pipeline_bubble_and_micro_batches() {
    // 8 devices at PP 4: N_d = 2; bubble (p − 1)/(m + p − 1).
    let v = json(&[
        "train",
        "llama-3.1-8b",
        "--devices",
        "8xh100-sxm",
        "--pp",
        "4",
        "--zero",
        "1",
        "--json",
    ]);
    assert_eq!(v["micro_batches"], 4);
    assert_eq!(v["pipeline_bubble_fraction"].as_f64().unwrap(), 3.0 / 7.0);
    assert_eq!(v["tokens_per_step"], 2048 * 4 * 2);
    let w = json(&[
        "train",
        "llama-3.1-8b",
        "--devices",
        "8xh100-sxm",
        "--pp",
        "4",
        "--zero",
        "1",
        "--micro-batches",
        "12",
        "--json",
    ]);
    assert_eq!(w["micro_batches"], 12);
    assert_eq!(w["pipeline_bubble_fraction"].as_f64().unwrap(), 0.2);
    // Three times the tokens in (12 + 3)/(4 + 3) of the time.
    let ratio = w["step_seconds"].as_f64().unwrap() / v["step_seconds"].as_f64().unwrap();
    assert!(
        (ratio - 3.0 * 15.0 / 12.0 * 4.0 / 7.0).abs() < 1e-12,
        "{ratio}"
    );
    let o = run(&[
        "train",
        "llama-3.1-8b",
        "--devices",
        "8xh100-sxm",
        "--pp",
        "4",
        "--grad-accum",
        "12",
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("bubble 20.0%"), "{text}");
}

#[test]
fn train_expert_parallel() {
    // Mixtral-8x7B: E = 32 × 8 × 3 × 4096 × 14336 routed-expert
    // parameters; ZeRO 1 over N_d = 8 = e leaves one rank per expert
    // shard, so its 16 bytes per parameter are divided by 8 exactly.
    let e = 32u64 * 8 * 3 * 4096 * 14336;
    let v = json(&[
        "train",
        "mixtral-8x7b",
        "--devices",
        "8xh100-sxm",
        "--zero",
        "1",
        "--expert-parallel",
        "8",
        "--json",
    ]);
    assert_eq!(v["options"]["expert_parallel"], 8);
    assert_eq!(v["per_device"][0]["expert_states_bytes"], 16 * e / 8);
    assert_eq!(v["per_device"][0]["expert_states_bytes"], 90_194_313_216u64);
    let o = run(&[
        "train",
        "mixtral-8x7b",
        "--devices",
        "8xh100-sxm",
        "--ep",
        "8",
    ]);
    let text = success_text(o);
    assert!(
        text.contains("ep 8") && text.contains("expert parallel 8"),
        "{text}"
    );
    assert_narrow(&text);
    // Illegal degrees: exit 1 naming the option and the reason.
    for (model, ep, why) in [
        ("llama-3.1-8b", "2", "no routed experts"),
        ("mixtral-8x7b", "3", "routed experts"),
        ("mixtral-8x7b", "16", "routed experts"),
    ] {
        let o = run(&["train", model, "--devices", "8xh100-sxm", "--ep", ep]);
        assert_eq!(o.status.code(), Some(1), "{model} --ep {ep}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("expert_parallel") && err.contains(why),
            "{err}"
        );
    }
    let o = run(&[
        "train",
        "mixtral-8x7b",
        "--devices",
        "8xh100-sxm",
        "--tp",
        "2",
        "--ep",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("data-parallel degree 4"));
    let o = run(&["train", "mixtral-8x7b", "--ep", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn model_and_plan_from_a_config_file() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/models/llama-3.3-70b");
    let cfg = dir.join("config.json");
    for arg in [&dir, &cfg] {
        let v = json(&["model", arg.to_str().unwrap(), "--json"]);
        assert_eq!(v["parameters"], 70_553_706_496u64, "{arg:?}");
        assert_eq!(v["origin"]["kind"], "hf_config");
    }
    let v = json(&[
        "plan",
        cfg.to_str().unwrap(),
        "--devices",
        "4xa100-80gb",
        "--json",
    ]);
    assert_eq!(v["feasible"], true);
    assert_eq!(v["suggested_quantization"], "bf16");
    // A file that is not a model: exit 1 naming it.
    let o = run(&[
        "model",
        cfg.parent()
            .unwrap()
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("SOURCES.md")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("SOURCES.md"));
}

#[test]
fn train_reserves_are_user_set_and_land_in_other() {
    let base = json(&[
        "train",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--framework-overhead",
        "0",
        "--json",
    ]);
    let default = json(&["train", "llama-3.1-8b", "--devices", "1xh100-sxm", "--json"]);
    // Without the flag an NVIDIA device reserves the measured 1343 MiB.
    let other = |v: &serde_json::Value| v["per_device"][0]["other_bytes"].as_u64().unwrap();
    assert_eq!(other(&default) - other(&base), 1343 << 20);
    let more = json(&[
        "train",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--fragmentation",
        "0.1",
        "--framework-overhead",
        "1000000000",
        "--json",
    ]);
    let total = |v: &serde_json::Value| v["per_device"][0]["total_bytes"].as_u64().unwrap();
    let base_total = total(&base) as f64;
    let grew = other(&more) - other(&base);
    // 10 % of states + activations + buffers (the whole base total, whose
    // `other` is only the buffers) plus the 1 GB given.
    let expect = base_total * 0.1 + 1e9;
    assert!(
        (grew as f64 - expect).abs() <= 2.0 + expect * 1e-9,
        "grew {grew}, expected {expect}"
    );
    assert_eq!(total(&more) - total(&base), grew);
    let o = run(&["train", "llama-3.1-8b", "--fragmentation", "1.5"]);
    assert!(!o.status.success());
}

#[test]
fn parse_prints_devices_with_their_datasheet_entry() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/nvidia-smi-xml/telegraf__a100-sxm4-v12.xml");
    let v = json(&["parse", "nvidia-smi-xml", file.to_str().unwrap()]);
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 5, "the A100 and its 4 MIG instances");
    assert_eq!(devices[0]["name"], "NVIDIA A100-SXM4-80GB");
    assert_eq!(devices[0]["memory_bytes"], 81_920u64 * 1_048_576);
    assert_eq!(
        devices[0]["spec"]["id"], "a100-80gb",
        "as detect attaches it"
    );
    assert!(
        devices[1..].iter().all(|m| m["spec"].is_null()),
        "no datasheet entry describes a MIG slice"
    );
    let o = run(&["parse", "nvidia-smi-xml", "/nonexistent/file.xml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/file.xml"));
}

/// The code a run exits with, and its stderr.
fn code(args: &[&str]) -> (Option<i32>, String) {
    let o = run(args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn one_exit_code_rule_for_every_command() {
    let root = fixture_root("two-socket-pci");
    let root = root.to_str().unwrap();
    let xml = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/nvidia-smi-xml/telegraf__a100-sxm4-v12.xml");
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/nvidia-smi-csv/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.csv",
    );
    let (xml, csv) = (xml.to_str().unwrap(), csv.to_str().unwrap());
    let cases: &[(&[&str], i32)] = &[
        // detect
        (&["detect", "--root", root, "--no-exec"], 0),
        (&["detect", "--timeout", "0"], 2),
        (&["detect", "--timeout", "-1"], 2),
        (&["detect", "--timeout", "nan"], 2),
        (&["detect", "--timeout", "3601"], 2),
        (&["detect", "--backends", ""], 2),
        (&["detect", "--backends", ","], 2),
        (&["detect", "--backends", "nvida"], 2),
        (&["detect", "--family", "gpus"], 2),
        (&["detect", "--root", "/nonexistent/root"], 1),
        // snapshot
        (&["snapshot"], 2),
        (&["snapshot", "/tmp/x", "--timeout", "0"], 2),
        (&["snapshot", "/tmp/x", "--backends", "warp"], 2),
        // topo
        (&["topo", "--root", root, "--no-exec"], 0),
        (&["topo", "--timeout", "0"], 2),
        (&["topo", "--registry", "/nonexistent/registry.json"], 1),
        // schema
        (&["schema"], 0),
        (&["schema", "extra"], 2),
        // specs
        (&["specs", "h100"], 0),
        (&["specs", "no-such-device-xyz"], 1),
        (&["specs", "--cpu", "zen4"], 0),
        (&["specs", "--cpu", "no-such-cpu-xyz"], 1),
        // model
        (&["model", "llama-3.1-8b"], 0),
        (&["model", "lama-3.1-8b"], 1),
        (&["model", "1000000b"], 2),
        (&["model", "0.1k"], 2),
        // plan
        (&["plan", "llama-3.1-8b", "--devices", "1xh100-sxm"], 0),
        (&["plan", "llama-3.1-8b", "--devices", "2xh100"], 2),
        (&["plan", "llama-3.1-8b", "--devices", "4097xh100-sxm"], 2),
        (
            &["plan", "llama-3.1-8b", "--devices", "4000000000xh100-sxm"],
            2,
        ),
        (&["plan", "llama-3.1-8b", "--devices", ""], 2),
        (&["plan", "llama-3.1-8b", "--quant", "int3"], 2),
        (&["plan", "llama-3.1-8b", "--kv-dtype", "fp4"], 2),
        (&["plan", "llama-3.1-8b", "--context", "100000001"], 2),
        (&["plan", "llama-3.1-8b", "--batch", "1000001"], 2),
        (&["plan", "llama-3.1-8b", "--prefill-chunk", "10000001"], 2),
        (&["plan", "llama-3.1-8b", "--max-plans", "10001"], 2),
        (&["plan", "llama-3.1-8b", "--decode-efficiency", "0"], 2),
        (&["plan", "no-such-model-xyz", "--devices", "1xh100-sxm"], 1),
        // train
        (&["train", "llama-3.1-8b", "--devices", "1xh100-sxm"], 0),
        (&["train", "llama-3.1-8b", "--devices", "2x4090x"], 2),
        (&["train", "llama-3.1-8b", "--seq", "100000001"], 2),
        (&["train", "llama-3.1-8b", "--micro-batch", "65537"], 2),
        (&["train", "llama-3.1-8b", "--grad-accum", "65537"], 2),
        (&["train", "llama-3.1-8b", "--dp", "4097"], 2),
        (&["train", "llama-3.1-8b", "--ep", "4097"], 2),
        (&["train", "llama-3.1-8b", "--tp", "1025"], 2),
        (&["train", "llama-3.1-8b", "--lora-rank", "65537"], 2),
        (
            &[
                "train",
                "llama-3.1-8b",
                "--framework-overhead",
                "1099511627777",
            ],
            2,
        ),
        (&["train", "llama-3.1-8b", "--mfu", "2"], 2),
        // An option that does not fit the model: a runtime error naming it.
        (
            &[
                "train",
                "llama-3.1-8b",
                "--devices",
                "8xh100-sxm",
                "--tp",
                "3",
            ],
            1,
        ),
        // parse
        (&["parse", "nvidia-smi-xml", xml], 0),
        (&["parse", "nvidia-smi-xm", xml], 2),
        (&["parse", "nvidia-smi-xml"], 2),
        (&["parse", "nvidia-smi-xml", csv], 1),
        (&["parse", "nvidia-smi-xml", "/nonexistent/file.xml"], 1),
        // completions, man
        (&["completions", "bash"], 0),
        (&["completions", "tcsh"], 2),
        (&["man"], 0),
    ];
    for (args, want) in cases {
        let (got, err) = code(args);
        assert_eq!(got, Some(*want), "{args:?}: {err}");
        if *want == 1 {
            let lines: Vec<_> = err
                .lines()
                .filter(|l| l.starts_with("ai-hwaccel: error"))
                .collect();
            assert_eq!(lines.len(), 1, "{args:?}: one error line: {err}");
        }
    }
}

#[test]
fn parse_refuses_input_that_is_not_the_format() {
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/nvidia-smi-csv/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.csv",
    );
    let (c, err) = code(&["parse", "nvidia-smi-xml", csv.to_str().unwrap()]);
    assert_eq!(c, Some(1));
    assert!(
        err.contains("not nvidia-smi-xml output") && err.contains("nvidia-smi -q -x"),
        "{err}"
    );
    // The right format for the same file answers.
    let v = json(&["parse", "nvidia-smi-csv", csv.to_str().unwrap()]);
    assert_eq!(v["devices"].as_array().unwrap().len(), 1);
}

#[test]
fn unknown_memory_stays_unknown() {
    // A fake root where the accelerator is seen on the PCI bus only: its
    // memory is unknown.
    let root = fixture_root("two-socket-pci");
    let root = root.to_str().unwrap();
    let v = json(&["detect", "--root", root, "--no-exec", "--json"]);
    let s = &v["summary"];
    assert_eq!(s["accelerator_count"], 1);
    assert!(s["accelerator_memory_bytes"].is_null(), "{s}");
    assert_eq!(s["accelerator_memory_unknown_count"], 1);
    assert_eq!(s["accelerator_memory_known_bytes"], 0);
    let text = success_text(run(&["detect", "--root", root, "--no-exec"]));
    let line = text.lines().find(|l| l.starts_with("Summary")).unwrap();
    assert_eq!(
        line,
        "Summary 1 accelerator(s) available, accelerator memory unknown"
    );
    assert!(!text.contains("0.0 GiB accelerator"), "{text}");
}

#[test]
fn plan_on_a_registry_without_accelerators_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("saved.json");
    let reg = success_text(run(&["detect", "--backends", "system", "--json"]));
    std::fs::write(&file, reg).unwrap();
    let o = run(&["plan", "llama-3.1-8b", "--registry", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Without an accelerator the plan is for the registry's host CPU, and
    // the note names the file it came from.
    assert!(
        err.contains(&format!("no accelerator in {}", file.display()))
            && err.contains("planning for the host CPU")
            && !err.contains("on this machine"),
        "{err}"
    );
    // A registry with no CPU device either: nothing to plan on, said so.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["devices"] = serde_json::json!([]);
    std::fs::write(&file, v.to_string()).unwrap();
    let o = run(&["plan", "llama-3.1-8b", "--registry", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("read {}", file.display()))
            && err.contains("no available accelerator"),
        "{err}"
    );
}

#[test]
fn suggestions_for_every_typed_name() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["plan", "x", "--devices", "2xh100"],
            "h100-sxm, h100-pcie, h100-nvl",
        ),
        (&["plan", "x", "--devices", "2xa100"], "a100-80gb"),
        (&["plan", "x", "--devices", "2xmi300"], "did you mean mi300"),
        (&["model", "lama-3.1-8b"], "did you mean llama-3.1-8b"),
        (&["model", "llama-3-8b-instruct"], "did you mean llama-3-8b"),
        (&["model", "1000000b"], "out of range"),
        (
            &["parse", "nvidia-smi-xm", "f"],
            "did you mean nvidia-smi-xml",
        ),
        (&["detect", "--backends", "nvida"], "did you mean nvidia"),
        (&["detect", "--family", "gpus"], "did you mean gpu"),
        (&["plan", "x", "--quant", "q4k_m"], "did you mean q4_k"),
        (&["plan", "x", "--kv-dtype", "bf15"], "did you mean bf16"),
        (
            &["train", "x", "--lora-targets", "gat"],
            "did you mean gate",
        ),
    ];
    for (args, want) in cases {
        let (_, err) = code(args);
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    }
    assert!(!code(&["model", "1000000b"]).1.contains("a size like"));
    // A name that fits one entry resolves as `specs` resolves it.
    let v = json(&["plan", "llama-3.1-8b", "--devices", "2x4090", "--json"]);
    assert_eq!(v["devices"][0]["spec_id"], "rtx-4090");
    let specs: serde_json::Value = json(&["specs", "4090", "--json"]);
    assert_eq!(specs[0]["id"], "rtx-4090");
}

#[test]
fn train_warns_when_the_sequence_passes_the_model_context() {
    let text = success_text(run(&[
        "train",
        "phi-3-mini",
        "--seq",
        "10000000",
        "--devices",
        "1xh100-sxm",
    ]));
    assert!(
        text.contains("warning: sequence length 10000000 exceeds the model's maximum of 4096"),
        "{text}"
    );
}

#[test]
fn help_is_wrapped_and_names_the_backends() {
    for cmd in [
        &["--help"][..],
        &["detect", "--help"],
        &["snapshot", "--help"],
        &["topo", "--help"],
        &["plan", "--help"],
        &["train", "--help"],
        &["parse", "--help"],
        &["man", "--help"],
    ] {
        let text = success_text(run(cmd));
        assert_narrow(&text);
    }
    let text = success_text(run(&["detect", "--help"]));
    assert!(!text.contains("see --help"), "{text}");
    for b in ["system", "nvidia", "amd", "vulkan", "pci"] {
        assert!(text.contains(b), "--backends help lists {b}");
    }
}

#[test]
fn logs_carry_no_colour_into_a_pipe() {
    let root = fixture_root("two-socket-pci");
    let o = bin()
        .args(["detect", "--no-exec", "--root", root.to_str().unwrap()])
        .env("RUST_LOG", "debug")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DEBUG"), "debug logs are on: {err}");
    assert!(!err.contains('\x1b'), "no escape codes into a pipe");
}

#[test]
fn completions_and_man_pages_come_from_the_clap_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = success_text(run(&["completions", shell]));
        for word in [
            "ai-hwaccel",
            "detect",
            "plan",
            "train",
            "devices",
            "backends",
        ] {
            assert!(text.contains(word), "{shell}: {word}");
        }
    }
    let page = success_text(run(&["man"]));
    assert!(page.contains(".TH ai-hwaccel"), "{page}");
    assert!(page.contains("completions"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = run(&["man", out.to_str().unwrap()]);
    assert!(o.status.success());
    let plan = std::fs::read_to_string(out.join("ai-hwaccel-plan.1")).unwrap();
    assert!(plan.contains(".TH ai-hwaccel-plan") && plan.contains("memory\\-utilization"));
    let n = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(n, 17, "the top page and one per command");
}

#[test]
fn plan_runtime_names_its_rule_and_rejects_unknown_runtimes() {
    let v = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--runtime",
        "vllm",
        "--context",
        "16000",
        "--json",
    ]);
    assert_eq!(v["runtime"], "vllm");
    let p = &v["plans"][0];
    assert!(p["kv_cache_capacity_tokens"].as_u64().unwrap() > 100_000);
    let d = &p["per_device"][0];
    // vLLM's profiled workspace: the sampler's 1024 × 128,256 logits.
    assert!(d["activation_bytes"].as_u64().unwrap() > 4 << 30);
    let g = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--context",
        "16000",
        "--json",
    ]);
    assert_eq!(g["runtime"], "generic");
    assert!(
        g["plans"][0]["per_device"][0]["activation_bytes"]
            .as_u64()
            .unwrap()
            < 1 << 30
    );
    let o = run(&["plan", "7b", "--devices", "1xh100-sxm", "--runtime", "vlm"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("did you mean") && err.contains("vllm"),
        "{err}"
    );
}

#[test]
fn plan_without_accelerators_plans_for_the_host_cpu_with_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("registry.json");
    let o = run(&[
        "detect",
        "--root",
        fixture_root("container-cgroup-v2").to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success());
    std::fs::write(&reg, &o.stdout).unwrap();
    let o = run(&[
        "plan",
        "llama-3.2-1b",
        "--registry",
        reg.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runtime"], "llama.cpp");
    assert_eq!(v["devices"][0]["host"], true);
    assert_eq!(v["devices"][0]["capacity_bytes"], 7_516_192_768u64);
    assert_eq!(v["feasible"], true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("planning for the host CPU"), "{err}");
    // An explicit runtime is kept.
    let v = json(&[
        "plan",
        "llama-3.2-1b",
        "--registry",
        reg.to_str().unwrap(),
        "--runtime",
        "generic",
        "--json",
    ]);
    assert_eq!(v["runtime"], "generic");
}

#[test]
fn plan_emit_prints_a_launch_command_or_says_why_not() {
    let o = run(&[
        "plan",
        "llama-3.1-70b",
        "--devices",
        "8xh100-sxm",
        "--emit",
        "vllm",
    ]);
    let out = success_text(o);
    assert!(
        out.starts_with("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size "),
        "{out}"
    );
    let v = json(&[
        "plan",
        "llama-3.1-70b",
        "--devices",
        "8xh100-sxm",
        "--emit",
        "vllm",
        "--plan",
        "2",
        "--json",
    ]);
    assert_eq!(v["runtime"], "vllm");
    assert_eq!(v["version"], "vllm 0.33.0 (EngineArgs fields)");
    assert!(v["argv"].as_array().unwrap().len() > 5);
    // llama.cpp needs a GGUF file: an error, exit 1.
    let o = run(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--emit",
        "llama.cpp",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(".gguf"));
    // A runtime that contradicts --emit is a usage error.
    let o = run(&[
        "plan",
        "7b",
        "--devices",
        "1xh100-sxm",
        "--emit",
        "vllm",
        "--runtime",
        "sglang",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn fit_ranks_the_catalog_on_given_devices() {
    let v = json(&["fit", "--devices", "1xrtx-4090", "--json"]);
    assert_eq!(v["runtime"], "generic");
    let models = v["models"].as_array().unwrap();
    assert!(models.len() >= 39);
    let fits: Vec<bool> = models
        .iter()
        .map(|m| m["fits"].as_bool().unwrap())
        .collect();
    let first_no = fits.iter().position(|f| !f).unwrap();
    assert!(
        fits[first_no..].iter().all(|f| !f),
        "fitting models come first"
    );
    let big = models
        .iter()
        .find(|m| m["model"] == "llama-3.1-405b")
        .unwrap();
    assert_eq!(big["fits"], false);
    // With llama.cpp's rule only the formats llama.cpp stores are suggested.
    let v = json(&[
        "fit",
        "--devices",
        "1xrtx-4090",
        "--runtime",
        "llama.cpp",
        "--json",
    ]);
    for m in v["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["fits"] == true)
    {
        let q = m["quantization"].as_str().unwrap();
        assert!(
            q.starts_with('q') || ["bf16", "fp16", "fp32"].contains(&q),
            "{}: {q}",
            m["model"]
        );
    }
    let text = success_text(run(&["fit", "--devices", "1xrtx-4090"]));
    assert!(text.contains("catalog models fit"), "{text}");
    assert_narrow(&text);
}

/// `fit --offload`: on a registry of GPUs and a two-socket host, models
/// the GPUs cannot hold whole come after those that fit, marked offload,
/// each with a plan that uses the host as well (one more device) and a
/// level llama.cpp stores; without the flag they are listed as not fitting.
#[test]
fn fit_offload_adds_the_models_that_run_with_host_memory() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("reg.json");
    let out = run(&[
        "detect",
        "--root",
        fixture_root("two-socket-pci").to_str().unwrap(),
        "--no-exec",
        "--json",
    ]);
    std::fs::write(&reg, &out.stdout).unwrap();
    let r = reg.to_str().unwrap();
    let plain = json(&["fit", "--registry", r, "--runtime", "llama.cpp", "--json"]);
    let with = json(&["fit", "--registry", r, "--offload", "--json"]);
    assert_eq!(with["runtime"], "llama.cpp");
    let rows = with["models"].as_array().unwrap();
    let tier = |m: &serde_json::Value| match (m["fits"].as_bool(), m["offload"].as_bool()) {
        (Some(true), _) => 0,
        (_, Some(true)) => 1,
        _ => 2,
    };
    let tiers: Vec<i32> = rows.iter().map(tier).collect();
    assert!(tiers.windows(2).all(|w| w[0] <= w[1]), "{tiers:?}");
    let offloaded: Vec<&serde_json::Value> = rows.iter().filter(|m| tier(m) == 1).collect();
    assert!(!offloaded.is_empty(), "{with}");
    for m in &offloaded {
        let q = m["quantization"].as_str().unwrap();
        assert!(
            q.starts_with('q') || ["bf16", "fp16", "fp32"].contains(&q),
            "{m}"
        );
        assert!(m["devices_used"].as_u64().unwrap() >= 2, "{m}");
        let id = m["model"].as_str().unwrap();
        let before = plain["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["model"] == id)
            .unwrap();
        assert_eq!(before["fits"], false, "{id} did not fit without offload");
        assert_eq!(before["offload"], false);
    }
}

#[test]
fn model_list_shows_the_catalog_with_each_models_figures() {
    let v = json(&["model", "--list", "--json"]);
    let rows = v.as_array().unwrap();
    assert!(rows.len() >= 39);
    let row = rows.iter().find(|r| r["id"] == "llama-3.1-8b").unwrap();
    let one = json(&["model", "llama-3.1-8b", "--json"]);
    assert_eq!(row["parameters"], one["parameters"]);
    assert_eq!(
        row["kv_cache_bytes_per_token"],
        one["kv_cache_bytes_per_token"]
    );
    assert_eq!(
        row["kv_cache_bytes_per_token"], 131_072,
        "32 layers × 8 KV heads × 128 × 2 × 2 bytes"
    );
    let text = success_text(run(&["model", "--list"]));
    assert!(
        text.contains("llama-3.1-8b") && text.contains("128 KiB"),
        "{text}"
    );
    assert_narrow(&text);
    assert_eq!(run(&["model"]).status.code(), Some(2));
    // Family and uses from the model card.
    let coder = rows
        .iter()
        .find(|r| r["id"] == "qwen2.5-coder-32b")
        .unwrap();
    assert_eq!(coder["family"], "Qwen2.5-Coder");
    assert_eq!(coder["uses"], serde_json::json!(["chat", "code"]));
    assert_eq!(
        coder["card"],
        "https://huggingface.co/Qwen/Qwen2.5-Coder-32B-Instruct"
    );
    assert!(
        text.contains("Qwen2.5-Coder") && text.contains("chat, code"),
        "{text}"
    );
}

#[test]
fn fit_filters_by_use_and_size() {
    let v = json(&[
        "fit",
        "--devices",
        "1xrtx-4090",
        "--use",
        "reasoning",
        "--max-params",
        "16b",
        "--min-params",
        "7000000000",
        "--json",
    ]);
    let ids: Vec<&str> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "deepseek-r1-distill-qwen-14b",
            "phi-4",
            "qwen3-8b",
            "deepseek-r1-distill-llama-8b",
            "deepseek-r1-distill-qwen-7b"
        ]
    );
    let text = success_text(run(&["fit", "--devices", "1xrtx-4090", "--use", "code"]));
    assert!(text.contains("catalog models (filtered) fit"), "{text}");
    assert!(
        text.contains("qwen2.5-coder-7b") && !text.contains("llama-3.1-8b"),
        "{text}"
    );
    // A misspelt use is a usage error with a suggestion.
    let o = run(&["fit", "--devices", "1xrtx-4090", "--use", "chatt"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean chat?"), "{err}");
    let o = run(&["fit", "--devices", "1xrtx-4090", "--max-params", "big"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn plan_offload_splits_between_the_host_cpu_and_the_gpu() {
    let v = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xrtx-3060",
        "--offload",
        "--quant",
        "bf16",
        "--json",
    ]);
    assert_eq!(v["runtime"], "llama.cpp");
    let p = &v["plans"][0];
    assert_eq!(p["pipeline_parallel"], 2);
    let d = p["per_device"].as_array().unwrap();
    assert_eq!(d[0]["device"], "cpu", "the host CPU holds the first layers");
    assert_eq!(d[1]["device"], "rtx-3060#0");
    assert_eq!(d[1]["layers"][1], 32, "the GPU holds the last layers");
    assert_eq!(d[0]["layers"][1], d[1]["layers"][0]);
    for x in d {
        assert!(x["total_bytes"].as_u64() <= x["capacity_bytes"].as_u64());
    }
    assert_eq!(d[0]["overhead_bytes"], 0, "no fit margin in host memory");
    assert_eq!(
        d[1]["overhead_bytes"],
        1u64 << 30,
        "llama.cpp's --fit-target on the GPU"
    );
}

/// A FIFO or an oversized file where a command reads a named input
/// (`parse FORMAT FILE`, `check LOG`, `plan --registry FILE`) is a clear
/// error within seconds, never a wait for a writer that never comes.
#[test]
fn named_inputs_that_are_fifos_or_too_large_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = dir.path().join("big.xml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let f = fifo.to_str().unwrap();
    let b = big.to_str().unwrap();
    for (args, says) in [
        (vec!["parse", "nvidia-smi-xml", f], "FIFO"),
        (vec!["check", f], "FIFO"),
        (vec!["plan", "7b", "--registry", f], "FIFO"),
        (vec!["parse", "nvidia-smi-xml", b], "larger than"),
        (vec!["plan", "7b", "--registry", b], "larger than"),
    ] {
        let mut child = bin()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if start.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().unwrap();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let status = status.unwrap_or_else(|| panic!("{args:?} still waiting after 20 s"));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `--input-len/--output-len` add request latencies (JSON fields and a
/// latency table within 100 columns); `--tpot-ms` chooses each plan's batch;
/// contradictory options are usage errors (exit 2).
#[test]
fn plan_latencies_and_targets() {
    let v = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xl4",
        "--input-len",
        "1000",
        "--output-len",
        "200",
        "--json",
    ]);
    assert_eq!(v["context"], 1200);
    let best = &v["plans"][0];
    let (ttft, tpot) = (
        best["ttft_ms"].as_f64().unwrap(),
        best["tpot_ms"].as_f64().unwrap(),
    );
    let req = best["request_latency_ms"].as_f64().unwrap();
    assert!((req - (ttft + 199.0 * tpot)).abs() < 1e-6 * req);
    assert_eq!(best["batch"], 1);
    let v = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "1xl4",
        "--tpot-ms",
        "150",
        "--json",
    ]);
    let best = &v["plans"][0];
    assert!(best["tpot_ms"].as_f64().unwrap() <= 150.0);
    assert!(best["batch"].as_u64().unwrap() > 1, "{best}");
    // Llama 3.1 70B on 8 × H100 at 2048/256 and a 30 ms TPOT target.
    let targeted = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "llama-3.1-70b",
            "--devices",
            "8xh100-sxm",
            "--input-len",
            "2048",
            "--output-len",
            "256",
            "--tpot-ms",
            "30",
        ];
        args.extend_from_slice(extra);
        success_text(run(&args))
    };
    let text = targeted(&["--ttft-ms", "500"]);
    assert_narrow(&text);
    assert!(
        text.contains("TTFT ms") && text.contains("request ms"),
        "{text}"
    );
    // The generic rule has no serving runs to be measured against; SGLang's
    // plan says where prompts are prefilled and how far its served TPOT is
    // from its published serving benchmarks.
    assert!(!text.contains("serving benchmarks"), "{text}");
    assert!(text.contains("prefilled within the decode steps"), "{text}");
    let sglang = targeted(&["--runtime", "sglang"]);
    assert_narrow(&sglang);
    assert!(
        sglang.contains("prefilled in passes of their own between the decode steps"),
        "{sglang}"
    );
    let (_, a) = ai_hwaccel::plan::speed::SERVING_ACCURACY
        .iter()
        .find(|(r, _)| *r == ai_hwaccel::plan::runtime::RuntimeKind::Sglang)
        .unwrap();
    let line = format!(
        "served TPOT against {} published sglang serving benchmarks (closed loops, never fitted):\n  median error {:.0} %, worst {:.0} %",
        a.rows,
        100.0 * a.median,
        100.0 * a.worst
    );
    assert!(sglang.contains(&line), "{sglang}");
    // And its served TTFT (a request arriving in the loop), with how far
    // the closed loop's mean is from those runs' printed means.
    assert!(sglang.contains("served TTFT"), "{sglang}");
    let (_, f) = ai_hwaccel::plan::speed::SERVING_TTFT_ACCURACY
        .iter()
        .find(|(r, _)| *r == ai_hwaccel::plan::runtime::RuntimeKind::Sglang)
        .unwrap();
    let line = format!(
        "the steady loop) against their mean TTFT: median error {:.0} %, worst {:.0} %",
        100.0 * f.median,
        100.0 * f.worst
    );
    assert!(sglang.contains(&line), "{sglang}");
    for args in [
        &[
            "plan",
            "7b",
            "--devices",
            "1xl4",
            "--tpot-ms",
            "30",
            "--batch",
            "4",
        ][..],
        &[
            "plan",
            "7b",
            "--devices",
            "1xl4",
            "--input-len",
            "5000",
            "--context",
            "4096",
        ][..],
        &["plan", "7b", "--devices", "1xl4", "--ttft-ms", "0"][..],
        &[
            "plan",
            "7b",
            "--devices",
            "1xl4",
            "--tpot-ms",
            "50",
            "--offload",
        ][..],
    ] {
        assert_eq!(run(args).status.code(), Some(2), "{args:?}");
    }
}

/// `specs --cpu`: the CPU table with the bandwidth and peak the planner
/// derives (EPYC 9654: 12 x DDR5-4800 x 8 bytes = 460.8 GB/s; 96 cores x
/// 2.4 GHz x 32 FP32 FLOPs per cycle = 7.37 TFLOPS), a near miss suggests.
#[test]
fn specs_table_shows_the_16_bit_rate_each_entry_states() {
    // A Radeon entry states FP16 only (AMD's FP16 Matrix figure for RDNA 4),
    // a TPU BF16 only, an H100 both: the 16-bit column shows each.
    let row = |id: &str| {
        let text = success_text(run(&["specs", id]));
        assert_narrow(&text);
        assert!(text.contains("16-BIT (FP16, else BF16)"), "{text}");
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("{id}: {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let cells = |id: &str, n: usize| row(id)[row(id).len() - n].clone();
    // Columns from the right: border, W, FP8, 16-BIT.
    assert_eq!(cells("rx-9070-xt", 4), "195");
    assert_eq!(cells("tpu-v5e", 4), "197");
    assert_eq!(cells("h100-sxm", 4), "990");
}

#[test]
fn specs_cpu_lists_the_cpu_table() {
    let text = success_text(run(&["specs", "--cpu", "epyc-9654"]));
    assert!(
        text.contains("epyc-9654") && text.contains("460.8"),
        "{text}"
    );
    assert!(text.contains("7.37"), "{text}");
    let v = json(&[
        "specs",
        "--cpu",
        "AMD EPYC 9654 96-Core Processor",
        "--json",
    ]);
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["memory_bandwidth_bytes_per_s"], 460_800_000_000u64);
    assert_eq!(v[0]["microarchitecture"], "zen4");
    let all = json(&["specs", "--cpu", "--json"]);
    assert!(all.as_array().unwrap().len() >= 24);
    let out = run(&["specs", "--cpu", "epyc-9655x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did you mean") && err.contains("epyc-9654"),
        "{err}"
    );
}

/// `--devices cpu:ID@SIZE`: plan and fit for a CPU-table CPU without the
/// machine (its theoretical bandwidth: EPYC 9654, 460.8 GB/s per socket),
/// offload with a GPU and that CPU as the host, and the usage errors.
#[test]
fn a_cpu_of_the_table_is_a_device_string() {
    let v = json(&[
        "plan",
        "llama-3.1-8b",
        "--devices",
        "2xcpu:epyc-9654@768g",
        "--quant",
        "q4_k",
        "--json",
    ]);
    let d = &v["devices"][0];
    assert_eq!(d["host"], true);
    assert_eq!(d["bandwidth_bytes_per_s"], 921_600_000_000u64);
    assert_eq!(d["capacity_bytes"], 768u64 << 30);
    assert!(v["plans"][0]["decode_tokens_per_s"].as_f64().unwrap() > 1.0);
    assert!(v["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap() > 1.0);
    // Offload: the GPU and the device string's CPU (not this machine's).
    let v = json(&[
        "plan",
        "llama-3.1-70b",
        "--devices",
        "1xrtx-4090,cpu:epyc-9654@256g",
        "--offload",
        "--quant",
        "q4_k",
        "--json",
    ]);
    let host = &v["plans"][0]["per_device"][0];
    assert_eq!(host["device"], "cpu:epyc-9654", "{host}");
    let fit = json(&["fit", "--devices", "cpu:epyc-9654@64g", "--json"]);
    assert_eq!(fit["devices"][0]["id"], "cpu:epyc-9654");
    assert!(!fit["models"].as_array().unwrap().is_empty());
    for (args, want) in [
        (
            &[
                "plan",
                "llama-3.1-8b",
                "--devices",
                "1xrtx-4090,cpu:epyc-9654@64g",
            ][..],
            "add --offload",
        ),
        (
            &["plan", "llama-3.1-8b", "--devices", "cpu:epyc-9654"][..],
            "no memory size",
        ),
        (
            &["train", "llama-3.1-8b", "--devices", "cpu:epyc-9654@64g"][..],
            "host CPU",
        ),
    ] {
        let out = run(args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// A GPU below compute capability 8.0 decodes under llama.cpp's CUDA
/// backend without CUDA graphs: its plan takes the per-layer time of the
/// builds before them (April 2024) and says so; Turing from the builds of
/// 2026-08 on, and Vulkan, do not.
#[test]
fn plan_on_a_gpu_llama_cpp_runs_without_cuda_graphs() {
    let base = |dev: &str| {
        [
            "plan",
            "llama-3-8b",
            "--devices",
            dev,
            "--runtime",
            "llama.cpp",
            "--quant",
            "q4_0",
            "--context",
            "512",
        ]
        .map(String::from)
        .to_vec()
    };
    let with = |dev: &str, more: &[&str]| {
        let mut a = base(dev);
        a.extend(more.iter().map(|s| s.to_string()));
        a
    };
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let pascal = json(&args(&with("1xgtx-1080-ti", &["--json"])));
    assert_eq!(pascal["decode_build_without_cuda_graphs"], "2024-04");
    // Its quantized prompt runs DP4A MMQ: planned at the int8 DP4A rate
    // with the fitted DP4A fraction, and the table says so.
    assert_eq!(pascal["speed_basis"]["prefill"]["dp4a"], true, "{pascal}");
    assert!(pascal["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap() > 0.0);
    let text = String::from_utf8(run(&args(&base("1xgtx-1080-ti"))).stdout).unwrap();
    assert!(
        text.contains("decode per-layer time of builds of 2024-04: llama.cpp runs this GPU without CUDA graphs"),
        "{text}"
    );
    assert!(text.contains("of the int8 DP4A rate"), "{text}");
    // An older build than that keeps its own month.
    let old = json(&args(&with(
        "1xgtx-1080-ti",
        &["--json", "--runtime-build", "2023-12"],
    )));
    assert_eq!(old["decode_build_without_cuda_graphs"], "2023-12");
    // Turing: the same before PR 25749, nothing after; Ampere and Vulkan never.
    let turing = json(&args(&with("1xrtx-2080-ti", &["--json"])));
    assert_eq!(turing["decode_build_without_cuda_graphs"], "2024-04");
    for v in [
        json(&args(&with(
            "1xrtx-2080-ti",
            &["--json", "--runtime-build", "2026-08"],
        ))),
        json(&args(&with("1xrtx-3090", &["--json"]))),
        json(&args(&with(
            "1xgtx-1080-ti",
            &["--json", "--backend", "vulkan"],
        ))),
    ] {
        assert!(v.get("decode_build_without_cuda_graphs").is_none(), "{v}");
    }
    let ampere = String::from_utf8(run(&args(&base("1xrtx-3090"))).stdout).unwrap();
    assert!(!ampere.contains("without CUDA graphs"), "{ampere}");
}

/// A plan on a device with published runs of its own says how far the
/// estimates fell from them too: the JSON's `speed_basis.*.device_runs` is
/// the library's table for that device, runtime and backend, the text
/// prints it under the class's line naming the backend, and the RTX 2080
/// Ti's Vulkan prompts, far off, are warned about.
#[test]
fn plans_report_the_calibration_error_of_their_device() {
    use ai_hwaccel::plan::runtime::{GgmlBackend, RuntimeKind};
    use ai_hwaccel::plan::speed::{DeviceClass, device_runs};
    let args = [
        "plan",
        "tinyllama",
        "--devices",
        "1xrtx-2080-ti",
        "--runtime",
        "llama.cpp",
        "--backend",
        "vulkan",
        "--quant",
        "q4_k_m",
    ];
    let j = json(&[&args[..], &["--json"]].concat());
    let text = String::from_utf8(run(&args).stdout).unwrap();
    let a = device_runs(
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaConsumer,
        Some(GgmlBackend::Vulkan),
        "rtx-2080-ti",
        true,
    )
    .expect("the 2080 Ti's Vulkan prompts in the corpus");
    let got = &j["speed_basis"]["prefill"]["device_runs"];
    assert_eq!(got["rows"].as_u64(), Some(u64::from(a.rows)), "{j}");
    assert_eq!(got["median"].as_f64(), Some(a.median), "{j}");
    assert_eq!(got["worst"].as_f64(), Some(a.worst), "{j}");
    let line = format!(
        "prefill estimates against {} published llama.cpp runs of this device under Vulkan:\n      median error {:.0} %, worst {:.0} %",
        a.rows,
        100.0 * a.median,
        100.0 * a.worst
    );
    assert!(text.contains(&line), "{line}\n{text}");
    assert!(
        text.contains("RTX 2080 Ti: its published llama.cpp runs under Vulkan fell far"),
        "{text}"
    );
    // A part the corpus has no run of carries none.
    let none = json(&[
        "plan",
        "tinyllama",
        "--devices",
        "1xrtx-2050",
        "--runtime",
        "llama.cpp",
        "--json",
    ]);
    assert!(
        none["speed_basis"]["prefill"].get("device_runs").is_none(),
        "{none}"
    );
}

/// A plan says how far its fitted speeds fell from the published runs of
/// the device's class: the JSON's `speed_basis.*.accuracy` is the
/// library's table for that class and runtime, the text prints it under
/// each fitted fraction, under the plan's own runtime (vLLM's figures for
/// a vLLM plan), and a class without runs under that runtime has none.
#[test]
fn plans_report_the_calibration_error_of_their_class() {
    use ai_hwaccel::plan::runtime::RuntimeKind;
    use ai_hwaccel::plan::speed::{DeviceClass, accuracy};
    let args = [
        "plan",
        "llama-3-8b",
        "--devices",
        "1xrtx-4090",
        "--runtime",
        "llama.cpp",
        "--quant",
        "q4_k_m",
    ];
    let j = json(&[&args[..], &["--json"]].concat());
    let text = String::from_utf8(run(&args).stdout).unwrap();
    for (q, prefill) in [("decode", false), ("prefill", true)] {
        let a = accuracy(RuntimeKind::LlamaCpp, DeviceClass::NvidiaConsumer, prefill)
            .expect("GeForce rows in the corpus");
        assert!(
            a.rows >= 50 && a.median > 0.0 && a.median <= a.worst,
            "{a:?}"
        );
        assert!(a.held_out_rows > 0 && a.held_out_rows < a.rows, "{a:?}");
        let got = &j["speed_basis"][q]["accuracy"];
        assert_eq!(got["rows"].as_u64(), Some(u64::from(a.rows)), "{j}");
        assert_eq!(got["median"].as_f64(), Some(a.median), "{j}");
        assert_eq!(got["worst"].as_f64(), Some(a.worst), "{j}");
        assert_eq!(got["held_out_median"].as_f64(), a.held_out_median, "{j}");
        let line = format!(
            "{q} estimates against {} published llama.cpp runs of this class:\n      median error {:.0} %",
            a.rows,
            100.0 * a.median
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
    // An Apple part's plan takes the Apple class's figures, not the GeForce ones.
    let m = json(&[
        "plan",
        "llama-3-8b",
        "--devices",
        "1xm2-ultra-192gb",
        "--runtime",
        "llama.cpp",
        "--quant",
        "q4_k_m",
        "--json",
    ]);
    let apple = accuracy(RuntimeKind::LlamaCpp, DeviceClass::Apple, false).unwrap();
    assert_eq!(
        m["speed_basis"]["decode"]["accuracy"]["rows"].as_u64(),
        Some(u64::from(apple.rows)),
        "{m}"
    );
    let v = json(&[
        "plan",
        "llama-3-8b",
        "--devices",
        "1xh100-sxm",
        "--runtime",
        "vllm",
        "--json",
    ]);
    let vllm = accuracy(RuntimeKind::Vllm, DeviceClass::NvidiaDatacenter, false).unwrap();
    assert_eq!(
        v["speed_basis"]["decode"]["accuracy"]["rows"].as_u64(),
        Some(u64::from(vllm.rows)),
        "{v}"
    );
    assert_ne!(
        Some(vllm),
        accuracy(RuntimeKind::LlamaCpp, DeviceClass::NvidiaDatacenter, false)
    );
    // No vLLM row ran on a Radeon: the plan borrows the pooled cell and
    // reports no error of its own.
    assert_eq!(accuracy(RuntimeKind::Vllm, DeviceClass::Amd, false), None);
    let r = json(&[
        "plan",
        "llama-3-8b",
        "--devices",
        "1xrx-7900-xtx",
        "--runtime",
        "vllm",
        "--json",
    ]);
    assert!(r["speed_basis"]["decode"].is_object(), "{r}");
    assert!(r["speed_basis"]["decode"].get("accuracy").is_none(), "{r}");
}

/// `--cuda-force-mmq`: a June 2024 build with GGML_CUDA_FORCE_MMQ runs an
/// RTX 3090's Q6_K prompt on the DP4A kernels (at 4 x FP32, the fitted DP4A
/// fraction), not dequantized for cuBLAS; a current build is unchanged; the
/// JSON options and the prefill basis say so.
#[test]
fn plan_for_a_llama_cpp_build_with_forced_mmq() {
    let base = [
        "plan",
        "llama-3-8b",
        "--devices",
        "1xrtx-3090",
        "--runtime",
        "llama.cpp",
        "--quant",
        "q6_k",
        "--context",
        "2048",
        "--json",
    ];
    let p = |v: &serde_json::Value| v["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap();
    let june = json(&[&base[..], &["--runtime-build", "2024-06"]].concat());
    let forced = json(
        &[
            &base[..],
            &["--runtime-build", "2024-06", "--cuda-force-mmq"],
        ]
        .concat(),
    );
    assert_eq!(forced["options"]["cuda_force_mmq"], true);
    assert_eq!(june["options"]["cuda_force_mmq"], false);
    assert_eq!(forced["speed_basis"]["prefill"]["dp4a"], true);
    assert!(june["speed_basis"]["prefill"].get("dp4a").is_none());
    // PR 7860's master (such a build) ran this prompt at 2002 tok/s; the
    // default build of that month is planned far faster.
    assert!(p(&forced) < p(&june), "{} vs {}", p(&forced), p(&june));
    // From July 2024 MMQ runs on the int8 tensor cores: nothing changes.
    let now = json(&base);
    let now_forced = json(&[&base[..], &["--cuda-force-mmq"]].concat());
    assert_eq!(p(&now), p(&now_forced));
    // Another runtime's plan ignores llama.cpp's build options, and says so.
    let vllm = |extra: &[&str]| {
        json(
            &[
                &[
                    "plan",
                    "llama-3-8b",
                    "--devices",
                    "1xrtx-3090",
                    "--runtime",
                    "vllm",
                    "--json",
                ][..],
                extra,
            ]
            .concat(),
        )
    };
    let warned = |v: &serde_json::Value| {
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str())
            .filter(|w| w.contains("describe") && w.contains("llama.cpp build"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let plain = vllm(&[]);
    assert!(warned(&plain).is_empty());
    let both = vllm(&["--cuda-force-mmq", "--runtime-build", "2024-06"]);
    assert_eq!(
        warned(&both),
        [
            "the runtime build and GGML_CUDA_FORCE_MMQ describe a llama.cpp build: the vllm plan ignores them"
        ]
    );
    assert_eq!(p(&both), p(&plain));
}

/// `--runtime-build`: an older llama.cpp build pays more per layer in
/// decode (the fitted build-date term), a quantized prompt of a build
/// before int8 MMQ (July 2024) takes the fitted era factor while one of
/// August 2024 does not, the plan's options echo the month, the table
/// names the build its speeds are for, and a malformed month is a usage
/// error.
#[test]
fn plan_for_an_older_llama_cpp_build() {
    let base = [
        "plan",
        "llama-3-8b",
        "--devices",
        "1xrtx-4090",
        "--runtime",
        "llama.cpp",
        "--quant",
        "q4_k_m",
        "--context",
        "512",
    ];
    let now = json(&[&base[..], &["--json"]].concat());
    let old = json(&[&base[..], &["--json", "--runtime-build", "2024-05"]].concat());
    let d = |v: &serde_json::Value| {
        v["plans"][0]["decode_tokens_per_s_per_sequence"]
            .as_f64()
            .unwrap()
    };
    let p = |v: &serde_json::Value| v["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap();
    assert!(d(&old) < d(&now), "{} vs {}", d(&old), d(&now));
    let era = ai_hwaccel::plan::speed::PREFILL_MMQ_ERA
        .iter()
        .find(|(r, _)| *r == ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp)
        .map_or(1.0, |(_, f)| *f);
    assert!(era > 1.0, "{era}");
    // The factor scales the time at the matrix rate, not the per-layer
    // time: the whole prompt slows by less.
    let ratio = p(&now) / p(&old);
    assert!(
        ratio > 1.2 && ratio <= era + 1e-9,
        "{} vs {} (factor {era})",
        p(&old),
        p(&now)
    );
    let after = json(&[&base[..], &["--json", "--runtime-build", "2024-08"]].concat());
    assert_eq!(p(&after), p(&now));
    // The plan says so: the prefill basis names the factor, and only there.
    let factor = |v: &serde_json::Value| v["speed_basis"]["prefill"]["mmq_era_factor"].as_f64();
    assert_eq!(factor(&old), Some(era));
    assert_eq!(factor(&now), None);
    assert!(old["speed_basis"]["decode"].get("mmq_era_factor").is_none());
    let old_text =
        String::from_utf8(run(&[&base[..], &["--runtime-build", "2024-05"]].concat()).stdout)
            .unwrap();
    assert!(
        old_text.contains("(llama.cpp without int8 MMQ: a build before 2024-07"),
        "{old_text}"
    );
    assert_eq!(old["options"]["runtime_build"], "2024-05");
    assert!(now["options"]["runtime_build"].is_null());
    // The plan says which build its speeds are for: the option's, else the
    // newest the calibration rows measure.
    assert_eq!(old["speed_build"], "2024-05");
    let newest = now["speed_build"].as_str().unwrap().to_string();
    assert!(newest.as_str() > "2025-01", "{newest}");
    // A build after the newest the rows measure is planned as the newest.
    let later = json(&[&base[..], &["--json", "--runtime-build", "2999-01"]].concat());
    assert_eq!(d(&later), d(&now));
    assert_eq!(later["speed_build"], newest.as_str());
    let text = String::from_utf8(run(&base).stdout).unwrap();
    assert!(
        text.contains("decode speeds for llama.cpp builds of 20"),
        "{text}"
    );
    // And the fraction of bandwidth its KV cache is read at: llama.cpp's
    // fitted one (fused attention), or the option's.
    let fitted = ai_hwaccel::plan::speed::kv_read(
        ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        ai_hwaccel::plan::speed::DeviceClass::NvidiaConsumer,
        true,
    )
    .unwrap();
    assert_eq!(now["kv_read_efficiency"].as_f64(), Some(fitted));
    assert!(
        text.contains(&format!(
            "decode reads the KV cache at {fitted:.2} of memory bandwidth (fitted"
        )),
        "{text}"
    );
    let over = json(&[&base[..], &["--json", "--kv-read-efficiency", "0.2"]].concat());
    assert_eq!(over["kv_read_efficiency"].as_f64(), Some(0.2));
    assert!(d(&over) < d(&now), "a slower cache read, a slower decode");
    let generic_args: Vec<&str> = base
        .iter()
        .map(|a| if *a == "llama.cpp" { "generic" } else { a })
        .chain(["--json"])
        .collect();
    let generic = json(&generic_args);
    assert!(
        generic["kv_read_efficiency"].is_null(),
        "no fit for the generic rule"
    );
    // Where the fitted fractions come from: the RTX 4090's class cell and
    // its own factor; the same fractions the plan applies.
    let basis = &now["speed_basis"];
    for q in ["decode", "prefill"] {
        assert_eq!(basis[q]["class"], "nvidia-consumer", "{basis}");
        assert!(basis[q]["rows"].as_u64().unwrap() > 0, "{basis}");
        assert!(basis[q]["device_rows"].as_u64().unwrap() > 0, "{basis}");
    }
    assert!(
        text.contains("fitted fractions on NVIDIA GeForce RTX 4090:\n  decode ")
            && text.contains(" of bandwidth: nvidia-consumer 4-7 bit cell (")
            && text.contains(" x device ("),
        "{text}"
    );
    let uncalibrated = json(&[&base[..], &["--json", "--decode-efficiency", "0.5"]].concat());
    assert!(uncalibrated["speed_basis"].is_null(), "{uncalibrated}");
    // `--backend`: only where the backend's kernels run the device at
    // another rate. The RTX 4090 under Vulkan decodes as under CUDA, and
    // its quantized prompt takes the factor of prompts without int8 MMQ
    // (Vulkan's shaders are not MMQ); an Arc A770 under Vulkan runs its
    // prompt on its vector engines and says so.
    let vulkan = json(&[&base[..], &["--json", "--backend", "vulkan"]].concat());
    assert_eq!(vulkan["options"]["backend"], "vulkan");
    let first = |v: &serde_json::Value, k: &str| v["plans"][0][k].as_f64().unwrap();
    assert_eq!(
        first(&vulkan, "decode_tokens_per_s_per_sequence"),
        first(&now, "decode_tokens_per_s_per_sequence")
    );
    assert!(
        first(&vulkan, "prefill_tokens_per_s") < 0.8 * first(&now, "prefill_tokens_per_s"),
        "{} vs {}",
        first(&vulkan, "prefill_tokens_per_s"),
        first(&now, "prefill_tokens_per_s")
    );
    assert!(
        vulkan["speed_basis"]["prefill"]["mmq_era_factor"]
            .as_f64()
            .is_some()
    );
    let arc: Vec<&str> = base
        .iter()
        .map(|a| if *a == "1xrtx-4090" { "1xarc-a770" } else { a })
        .chain(["--json"])
        .collect();
    let sycl = json(&[&arc[..], &["--backend", "SYCL"]].concat());
    let vk = json(&[&arc[..], &["--backend", "vulkan"]].concat());
    assert_eq!(p(&sycl), p(&json(&arc)));
    assert!(p(&vk) < 0.3 * p(&sycl), "{} vs {}", p(&vk), p(&sycl));
    assert_eq!(d(&vk), d(&sycl), "decode reads the same bytes");
    assert!(
        vk["warnings"].to_string().contains("vector engines"),
        "{vk}"
    );
    // A Radeon with cooperative matrices under Vulkan: a build before the
    // matmul tuning of February 2026 (PR 18749) takes the fitted factor on
    // its quantized prompt and says so; a later build, ROCm, a 16-bit
    // prompt and an RDNA 2 card (no cooperative matrices) take none.
    let radeon = |dev: &str, quant: &str, backend: &str, build: &str| {
        let mut a: Vec<&str> = base
            .iter()
            .map(|a| match *a {
                "1xrtx-4090" => dev,
                "q4_k_m" => quant,
                a => a,
            })
            .collect();
        a.extend(["--json", "--backend", backend, "--runtime-build", build]);
        json(&a)
    };
    let era = ai_hwaccel::plan::speed::PREFILL_VULKAN_AMD_ERA
        .iter()
        .find(|(r, _)| *r == ai_hwaccel::plan::runtime::RuntimeKind::LlamaCpp)
        .map_or(1.0, |(_, f)| *f);
    assert!(era > 1.0, "{era}");
    let vk_factor =
        |v: &serde_json::Value| v["speed_basis"]["prefill"]["vulkan_amd_era_factor"].as_f64();
    let untuned = radeon("1xradeon-8060s", "q4_k_m", "vulkan", "2026-01");
    let tuned = radeon("1xradeon-8060s", "q4_k_m", "vulkan", "2026-02");
    assert_eq!(vk_factor(&untuned), Some(era));
    assert_eq!(vk_factor(&tuned), None);
    let ratio = p(&tuned) / p(&untuned);
    assert!(ratio > 1.2 && ratio <= era + 1e-9, "{ratio} (factor {era})");
    for other in [
        radeon("1xradeon-8060s", "q4_k_m", "rocm", "2026-01"),
        radeon("1xradeon-8060s", "f16", "vulkan", "2026-01"),
        radeon("1xrx-6800-xt", "q4_k_m", "vulkan", "2026-01"),
    ] {
        assert_eq!(vk_factor(&other), None, "{other}");
    }
    let untuned_text = String::from_utf8(
        run(&[
            "plan",
            "llama-3-8b",
            "--devices",
            "1xradeon-8060s",
            "--runtime",
            "llama.cpp",
            "--quant",
            "q4_k_m",
            "--backend",
            "vulkan",
            "--runtime-build",
            "2026-01",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        untuned_text.contains(
            "(llama.cpp Vulkan on an AMD GPU with cooperative matrices: a build before 2026-02"
        ),
        "{untuned_text}"
    );
    for bad in ["directml", "cuda,vulkan"] {
        let o = run(&[&base[..], &["--backend", bad]].concat());
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    // A bare number is a year or a build: refused; "b" alone, a signed or
    // zero tag too.
    for bad in [
        "2024-13", "May 2024", "24-05", "2025", "b", "b-5", "b0", "b12x",
    ] {
        let o = run(&[&base[..], &["--runtime-build", bad]].concat());
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("YYYY-MM") && err.contains("b<number>"),
            "{bad}: {err}"
        );
    }
    // A llama.cpp release tag is dated between the builds whose month the
    // calibration sources print: b3891 is lhl's Oct 2024 MI300X build,
    // b3141 falls between b2725 (Apr 2024) and b3891 (Oct 2024).
    let month = |tag: &str| {
        json(&[&base[..], &["--json", "--runtime-build", tag]].concat())["options"]["runtime_build"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(month("b3891"), "2024-10");
    assert_eq!(month("B3891"), "2024-10");
    assert_eq!(month("b3141"), "2024-06");
    assert_eq!(month("2024-10"), "2024-10");
}

#[test]
fn moe_plans_say_which_routed_prefill_factor_they_take() {
    let plan = |model: &str, extra: &[&str]| {
        let base = [
            "plan",
            model,
            "--devices",
            "1xrtx-4090",
            "--runtime",
            "llama.cpp",
        ];
        json(&[&base[..], extra, &["--json"]].concat())
    };
    let moe = |v: &serde_json::Value| v["speed_basis"]["moe_prefill"].clone();
    let cuda = plan("qwen3-30b-a3b", &["--quant", "q4_k_m"]);
    let vulkan = plan(
        "qwen3-30b-a3b",
        &["--quant", "q4_k_m", "--backend", "vulkan"],
    );
    assert_eq!(moe(&cuda)["backend"], "cuda");
    assert_eq!(moe(&vulkan)["backend"], "vulkan");
    let (fc, fv) = (
        moe(&cuda)["factor"].as_f64().unwrap(),
        moe(&vulkan)["factor"].as_f64().unwrap(),
    );
    assert!(fc > 1.0 && fv > 1.0 && fc != fv, "{fc} {fv}");
    // A dense model has none.
    let dense = plan("llama-3.1-8b", &["--quant", "q4_k_m"]);
    assert!(dense["speed_basis"].get("moe_prefill").is_none());
    let text = String::from_utf8(
        run(&[
            "plan",
            "qwen3-30b-a3b",
            "--devices",
            "1xrtx-4090",
            "--runtime",
            "llama.cpp",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("routed experts' prefill time x")
            && text.contains("llama.cpp's CUDA mixture-of-experts rows"),
        "{text}"
    );
}

#[test]
fn cdna_prompts_of_old_llama_cpp_builds_take_the_vector_rate() {
    let base = [
        "plan",
        "llama-2-7b",
        "--devices",
        "1xmi300x",
        "--runtime",
        "llama.cpp",
        "--quant",
        "q4_0",
        "--context",
        "512",
        "--runtime-build",
    ];
    let plan = |build: &str| json(&[&base[..], &[build, "--json"]].concat());
    let basis = |v: &serde_json::Value| v["speed_basis"]["prefill"].clone();
    let old = plan("2024-10");
    let new = plan("2025-08");
    assert_eq!(basis(&old)["vector_reference_ratio"].as_f64(), Some(0.0625));
    assert!(basis(&new).get("vector_reference_ratio").is_none());
    let pre = |v: &serde_json::Value| v["plans"][0]["prefill_tokens_per_s"].as_f64().unwrap();
    assert!(pre(&old) < pre(&new), "{} {}", pre(&old), pre(&new));
    let text = String::from_utf8(run(&[&base[..], &["2024-10"]].concat()).stdout).unwrap();
    assert!(
        text.contains("ran CDNA's quantized prompts on the vector ALUs"),
        "{text}"
    );
}

#[test]
fn data_center_quantized_llama_cpp_prompts_take_the_per_sm_reference() {
    let plan = |dev: &str, quant: &str| {
        json(&[
            "plan",
            "llama-2-7b",
            "--devices",
            dev,
            "--runtime",
            "llama.cpp",
            "--quant",
            quant,
            "--context",
            "512",
            "--json",
        ])
    };
    let basis = |v: &serde_json::Value| v["speed_basis"]["prefill"].clone();
    // A100: datasheet 312 TFLOPS, SMs x clock x 1024 = 4 x 19.5 x 2 = 156.
    let a100 = plan("1xa100-80gb", "q4_0");
    assert_eq!(basis(&a100)["mmq_reference_ratio"].as_f64(), Some(0.5));
    assert_eq!(basis(&a100)["class"], "nvidia-workstation");
    // 16-bit weights (cuBLAS) and GeForce cards keep the datasheet reference.
    let f16 = plan("1xa100-80gb", "f16");
    assert!(basis(&f16).get("mmq_reference_ratio").is_none());
    assert_eq!(basis(&f16)["class"], "nvidia-datacenter");
    let rtx = plan("1xrtx-4090", "q4_0");
    assert!(basis(&rtx).get("mmq_reference_ratio").is_none());
    // The table says so.
    let text = String::from_utf8(
        run(&[
            "plan",
            "llama-2-7b",
            "--devices",
            "1xh100-sxm",
            "--runtime",
            "llama.cpp",
            "--quant",
            "q4_0",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("(llama.cpp's int8 MMQ on a data-center GPU"),
        "{text}"
    );
}

/// `check` on an `-ngl` sweep (llama-bench's README table of September 2023,
/// a 7B Q4_0 on an RTX 3090 Ti): the builds of that time counted the
/// output and the V and K caches in `-ngl`, so only `-ngl 35` (32 layers +
/// 3) is a whole offload and gets a prediction; the other rows are named by
/// their `-ngl` and a note says why they have none.
#[test]
fn check_leaves_partial_offload_rows_unpredicted() {
    let log = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/runtime-logs/llamacpp-llama-bench-readme-2023__rtx3090ti-ngl-sweep.md",
    );
    let log = log.to_str().unwrap();
    let base = [
        "check",
        log,
        "--model",
        "llama-2-7b",
        "--devices",
        "1xrtx-3090-ti",
    ];
    let j = json(&[&base[..], &["--json"]].concat());
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 16);
    for r in rows {
        let whole = r["n_gpu_layers"] == 35;
        assert_eq!(!r["predicted_tokens_per_s"].is_null(), whole, "{r}");
    }
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("14 row(s) ran with -ngl below a whole offload"),
        "{notes}"
    );
    let text = String::from_utf8(run(&base).stdout).unwrap();
    assert!(text.contains("pp512 ngl 10"), "{text}");
}

/// `check` on vLLM logs predicts at what the log ran: the utilization of
/// vLLM 0.10's `non-default args` (0.5 on two A100 40GB, Qwen2-7B), and the
/// weights' format of the engine line (`quantization=bitsandbytes`: NF4),
/// unless `--quant` says otherwise.
#[test]
fn check_predicts_vllm_logs_at_their_own_settings() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let row = |j: &serde_json::Value, name: &str| -> (f64, f64) {
        let r = check_row(j, name);
        (
            r["logged_bytes"].as_f64().unwrap_or(f64::NAN),
            r["predicted_bytes"].as_f64().unwrap_or(f64::NAN),
        )
    };
    let log =
        dir.join("dennislee22-vllm-benchmarking__vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log");
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "qwen2.5-7b",
        "--devices",
        "2xa100-40gb",
        "--json",
    ]);
    assert_eq!(j["vllm_log"]["gpu_memory_utilization"], 0.5);
    let (logged, predicted) = row(&j, "kv_cache_memory_per_gpu");
    assert!(
        (predicted / logged - 1.0).abs() < 0.15,
        "{logged} {predicted}"
    );
    let log =
        dir.join("rldecisionagent-art-mcp-rl__rtx4090d-qwen2.5-0.5b-bnb4-v0.8.5-cuda-blocks.log");
    let args = [
        "check",
        log.to_str().unwrap(),
        "--model",
        "qwen2.5-0.5b",
        "--devices",
        "1xrtx-4090",
        "--json",
    ];
    let j = json(&args);
    let (logged, nf4) = row(&j, "weights_per_gpu");
    let (_, bf16) = row(
        &json(&[&args[..], &["--quant", "bf16"]].concat()),
        "weights_per_gpu",
    );
    assert!(nf4 < 0.6 * bf16, "{nf4} {bf16}");
    // Unsloth's skip list (printed in the log) keeps layer 0's attention
    // and four MLPs in BF16: with them the weights are within 5 % of the
    // logged 0.52 GiB (all at NF4 they were 0.82 of it).
    assert!((nf4 / logged - 1.0).abs() < 0.05, "{nf4} {logged}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("llm_int8_skip_modules keep 16 projections of 4 layers at 16 bits"),
        "{notes}"
    );
}

/// `check` on a vLLM 0.20+ log: the utilization the CUDA-graph line prints
/// (vLLM's default 0.92 there) is the one predicted at, and the estimate
/// vLLM took off the KV cache (0.17 GiB) comes off the prediction too,
/// where the log prints it; where it does not, the note says so.
#[test]
fn check_takes_a_logged_cudagraph_estimate_off_the_predicted_kv_cache() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    let log = dir.join("vllm-club3090-issue127__4x-rtx3090-tp4-cudagraph-estimate-rank1-only.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let without = tempfile::tempdir().unwrap();
    let cut = without.path().join("no-estimate.log");
    std::fs::write(
        &cut,
        text.lines()
            .filter(|l| !l.contains("Estimated CUDA graph memory"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let kv = |path: &std::path::Path| {
        let j = json(&[
            "check",
            path.to_str().unwrap(),
            "--model",
            "qwen3-32b",
            "--devices",
            "4xrtx-3090",
            "--json",
        ]);
        assert_eq!(j["vllm_log"]["gpu_memory_utilization"], 0.92, "{j}");
        let r = j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["component"] == "kv_cache_memory_per_gpu")
            .unwrap()
            .clone();
        (
            r["predicted_bytes"].as_f64().unwrap(),
            j["notes"].to_string(),
        )
    };
    let (with, notes) = kv(&log);
    assert!(
        notes.contains("took its CUDA-graph memory estimate, 0.17 GiB per GPU"),
        "{notes}"
    );
    let (plain, notes) = kv(&cut);
    assert!(notes.contains("this log does not print it"), "{notes}");
    let diff = (plain - with) / 1_073_741_824.0;
    assert!((diff - 0.17).abs() < 1e-3, "{plain} {with}");
}

/// `check` on a vLLM log of a hybrid model (club-3090 issue 652: vLLM
/// 0.24.0, one RTX 5090, Qwen3.6-35B-A3B — the Qwen3.5-35B-A3B
/// architecture — with an fp8 KV cache and prefix caching on): the block
/// pool of that release turns the logged 6.01 GiB into the 569,878 tokens
/// the log prints, and the predicted capacity follows the same pool.
#[test]
fn check_reads_a_hybrid_vllm_log_by_its_release_block_pool() {
    let log = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/runtime-logs/vllm-club3090-issue652__rtx5090-qwen3.6-35b-a3b-hybrid-0.24.0.log",
    );
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "qwen3.5-35b-a3b",
        "--devices",
        "1xrtx-5090",
        "--quant",
        "nvfp4",
        "--json",
    ]);
    assert_eq!(j["vllm_log"]["version"], "0.24.0");
    assert_eq!(j["vllm_log"]["enable_prefix_caching"], true);
    assert_eq!(j["vllm_log"]["kv_cache_dtype"], "fp8");
    let row = |name: &str| check_row(&j, name).clone();
    let r = row("kv_cache_tokens_from_logged_memory");
    assert_eq!(r["logged_bytes"], 569_878);
    assert_eq!(r["predicted_bytes"], 569_878);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains(
            "pool of blocks of 2096 tokens, 69 per request of 131072 tokens (prefix caching on)"
        ),
        "{notes}"
    );
    // The predicted capacity is the same pool over the predicted memory.
    let kv = row("kv_cache_memory_per_gpu")["predicted_bytes"]
        .as_f64()
        .unwrap();
    let tokens = row("kv_cache_capacity_tokens")["predicted_bytes"]
        .as_f64()
        .unwrap();
    let blocks = (kv / (10.0 * 2096.0 * 1024.0)).floor();
    assert_eq!(tokens, (blocks / 69.0 * 131_072.0).floor());
}

/// `check` on a table whose every row ran on the CPU backend (llama-bench's
/// README threads sweep, September 2023) plans for this machine's CPU when
/// no --devices is given, and says so.
#[test]
fn check_plans_a_cpu_table_for_the_host_cpu() {
    let log = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/runtime-logs/llamacpp-llama-bench-readme-2023__i9-13900k-cpu-threads-sweep.md",
    );
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "llama-2-7b",
        "--json",
    ]);
    assert_eq!(j["rows"].as_array().unwrap().len(), 12, "{j}");
    // The sweep's threads, row by row (1, 1, 2, 2, … 32, 32), and the
    // table labels them.
    let threads: Vec<u64> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 1, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32]);
    let text = String::from_utf8(run(&["check", log.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("pp64 t 16"), "{text}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("every row ran on the CPU backend"),
        "{notes}"
    );
    assert!(!notes.contains("no accelerator to plan for"), "{notes}");
}

/// `check` on a llama-server log that offloaded no layer (a Jetson Orin,
/// `offloaded 0/29 layers to GPU`) says that its weights and cache are in
/// host memory, unlike the prediction's devices.
#[test]
fn check_names_a_partial_offload_in_a_log() {
    let log = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/runtime-logs/sunofhomeboy-blog__orin-llama-server-qwen3-0.6b-cpu-offload0.log",
    );
    let j = json(&["check", log.to_str().unwrap(), "--json"]);
    assert_eq!(
        j["log"]["offloaded_layers"],
        serde_json::json!([0, 29]),
        "{j}"
    );
    let notes = j["notes"].to_string();
    assert!(notes.contains("offloaded 0 of 29 layers"), "{notes}");
}

/// `check` on a hybrid model's llama.cpp log: the attention layers' KV
/// cache and the linear layers' recurrent state (`RS buffer`) together
/// against the plan's cache, whose state llama.cpp holds in F32. The lines
/// are llama.cpp's own formats (src/llama-kv-cache.cpp,
/// src/llama-memory-recurrent.cpp) with the sizes its arithmetic gives
/// Qwen3-Next 80B-A3B at 4096 tokens and one sequence: 12 attention layers
/// × 4096 × 2 KV heads × 256 × (K, V) × 2 bytes = 96 MiB; 36 Gated
/// DeltaNet layers × (3 × 8192 conv + 32 × 128 × 128 state) × 4 bytes =
/// 75.375 MiB (R 3.375, S 72).
#[test]
fn check_compares_a_hybrid_models_recurrent_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("qwen3next.log");
    std::fs::write(
        &log,
        "llama_context: n_ctx         = 4096\n\
         llama_context: n_seq_max     = 1\n\
         llama_context: flash_attn    = enabled\n\
         llama_kv_cache:      CUDA0 KV buffer size =    96.00 MiB\n\
         llama_kv_cache: size =   96.00 MiB (  4096 cells,  12 layers,  1/1 seqs), K (f16):   48.00 MiB, V (f16):   48.00 MiB\n\
         llama_memory_recurrent:      CUDA0 RS buffer size =    75.38 MiB\n\
         llama_memory_recurrent: size =   75.38 MiB (     1 cells,  48 layers,  1 seqs), R (f32):    3.38 MiB, S (f32):   72.00 MiB\n",
    )
    .unwrap();
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "qwen3-next-80b-a3b",
        "--devices",
        "1xh200",
        "--quant",
        "q4_k_m",
        "--json",
    ]);
    assert_eq!(j["log"]["rs_total_bytes"], 79_041_659, "{j}");
    let kv = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == "kv_cache")
        .unwrap_or_else(|| panic!("{j}"))
        .clone();
    // Logged: 96 MiB + 75.38 MiB as printed (two decimals); the state at
    // 16 bits would have been 37.69 MiB, the ratio 0.79.
    assert_eq!(kv["logged_bytes"], 100_663_296 + 79_041_659, "{kv}");
    assert_eq!(kv["predicted_bytes"], 100_663_296 + 79_036_416, "{kv}");
    assert!(
        j["notes"]
            .to_string()
            .contains("linear-attention layers' convolution windows and states"),
        "{j}"
    );
}

/// `check` on serving benchmark results: SGLang's blocks of sgl-cookbook's
/// Qwen3-235B on 8 × B200 (TP 8) at concurrency 1, 16 and 100. Each is
/// planned with the SGLang rule (its `Backend` line) at its concurrency
/// and mean lengths: the TPOT is the library plan's for the same options,
/// TTFT is compared at concurrency 1 only, the output throughput is the
/// plan's closed loop. vLLM's 2024-2025 blocks (no concurrency printed)
/// get no prediction and a note.
#[test]
fn check_compares_serving_benchmark_results() {
    use ai_hwaccel::plan::runtime::RuntimeKind;
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, load_model, plan_inference};
    let fx =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ai-hwaccel/tests/fixtures/runtime-logs");
    // `check FILE --model M --devices D --json` and more options.
    let check = |file: &str, model: &str, devices: &str, extra: &[&str]| {
        let path = fx.join(file);
        let mut args = vec![
            "check",
            path.to_str().unwrap(),
            "--model",
            model,
            "--devices",
            devices,
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&args)
    };
    let check_qwen3 = |extra: &[&str]| {
        check(
            "sgl-cookbook-qwen3__8xb200-tp8-qwen3-235b-bench-serving-c1-c16-c100.md",
            "qwen3-235b-a22b",
            "8xb200",
            extra,
        )
    };
    let j = check_qwen3(&[]);
    let res = j["results"].as_array().unwrap();
    assert_eq!(res.len(), 3, "{j}");
    // The library's best plan for a result, as check makes it (one
    // sequence, the catalog model's options).
    let best_plan = |model: &str, devices: &str, opts: InferenceOptions| {
        let m = load_model(model).unwrap();
        let o = InferenceOptions {
            batch: 1,
            max_plans: 1,
            ..opts
        };
        let o = ai_hwaccel::plan::options_for(&m, &o);
        let d = PlanDevice::from_device_string(devices).unwrap();
        plan_inference(&m.spec, &d, &o).plans.remove(0)
    };
    let best = &best_plan(
        "qwen3-235b-a22b",
        "8xb200",
        InferenceOptions {
            runtime: RuntimeKind::Sglang,
            input_len: Some(610),
            output_len: Some(421),
            context: Some(1031),
            ..InferenceOptions::default()
        },
    );
    let c1 = &res[0];
    assert_eq!(c1["planned_batch"], 1);
    assert_eq!(c1["planned_runtime"], "sglang");
    assert_eq!(c1["predicted_tpot_ms"].as_f64(), best.tpot_ms, "{c1}");
    assert_eq!(c1["predicted_ttft_ms"].as_f64(), best.ttft_ms, "{c1}");
    assert_eq!(c1["result"]["mean_tpot_ms"], 10.12);
    for r in &res[1..] {
        assert!(r["predicted_tpot_ms"].as_f64().is_some(), "{r}");
        assert!(r["predicted_output_tokens_per_s"].as_f64().is_some(), "{r}");
        // The TTFT of the run's closed loop: its first burst of prompts in
        // SGLang's prompt passes, then the steady loop's.
        let u = |v: &serde_json::Value| v.as_u64().unwrap();
        let (b, i, o) = (
            u(&r["planned_batch"]),
            u(&r["planned_input_tokens"]),
            u(&r["planned_output_tokens"]),
        );
        let m = load_model("qwen3-235b-a22b").unwrap();
        let opts = ai_hwaccel::plan::options_for(
            &m,
            &InferenceOptions {
                runtime: RuntimeKind::Sglang,
                batch: b,
                input_len: Some(i),
                output_len: Some(o),
                context: Some(i + o),
                max_plans: 1,
                ..InferenceOptions::default()
            },
        );
        let d = PlanDevice::from_device_string("8xb200").unwrap();
        let p = plan_inference(&m.spec, &d, &opts).plans.remove(0);
        let pass = ai_hwaccel::plan::runtime::prompt_tokens_per_pass(
            RuntimeKind::Sglang,
            &d[0],
            p.tensor_parallel,
            p.pipeline_parallel,
            m.spec.mla.is_some(),
            &opts,
        );
        let want = ai_hwaccel::plan::inference::closed_loop_ttft_ms(
            &p,
            &opts,
            pass,
            u(&r["result"]["max_concurrency"]),
            u(&r["result"]["completed"]),
        )
        .unwrap();
        let got = r["predicted_ttft_ms"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9 * want, "{got} {want} {r}");
        assert!(got > p.served_ttft_ms.unwrap(), "{got} {p:?}");
        assert!(p.served_ttft_ms.unwrap() > p.ttft_ms.unwrap(), "{p:?}");
    }
    // SGLang measured 90.50 requests in flight on average under the cap of 100.
    assert_eq!(res[2]["planned_batch"], 91);
    assert_eq!(res[2]["result"]["max_concurrency"], 100);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("the TTFT the mean over the run's requests of its closed loop"),
        "{notes}"
    );
    // SGLang's default scheduler prefills arriving prompts in passes of
    // their own; a server launched with --enable-mixed-chunk is checked with
    // --mixed-prefill, whose steps carry them: a lower TPOT at 100.
    assert!(notes.contains("pass --mixed-prefill"), "{notes}");
    let mixed = check_qwen3(&["--mixed-prefill"]);
    let m100 = mixed["results"][2]["predicted_tpot_ms"].as_f64().unwrap();
    let d100 = res[2]["predicted_tpot_ms"].as_f64().unwrap();
    assert!(m100 < d100, "{m100} {d100}");
    assert_eq!(
        mixed["results"][0]["predicted_tpot_ms"], res[0]["predicted_tpot_ms"],
        "one request at a time: nothing to mix"
    );
    assert!(!mixed["notes"].to_string().contains("pass --mixed-prefill"));
    // A server run without CUDA graphs (SGLang's graph backends disabled):
    // --enforce-eager plans its TP 8 decode steps at the eager per-layer
    // time, a longer TPOT from one request on.
    let eager = check_qwen3(&["--enforce-eager"]);
    let e1 = eager["results"][0]["predicted_tpot_ms"].as_f64().unwrap();
    let g1 = res[0]["predicted_tpot_ms"].as_f64().unwrap();
    assert!(e1 > g1, "{e1} {g1}");
    // A loop of 512 (400 in flight on average) of 1024-token requests on one
    // 96 GB card holds more than the KV cache does: planned at the most the
    // plan holds, which a note says.
    let check_lukallm = |extra: &[&str]| {
        let mut args = vec!["--quant", "fp8"];
        args.extend_from_slice(extra);
        check(
            "lukallm-benchmarks__rtx-pro-6000-trtllm-qwen3-32b-fp8-c512-bench-serving.jsonl",
            "qwen3-32b",
            "1xrtx-pro-6000",
            &args,
        )
    };
    let full = check_lukallm(&[]);
    let r = &full["results"][0];
    let held = r["planned_batch"].as_u64().unwrap();
    assert!(held > 1 && held < 400, "{r}");
    let one = best_plan(
        "qwen3-32b",
        "1xrtx-pro-6000",
        InferenceOptions {
            runtime: RuntimeKind::Vllm,
            quant: Some(ai_hwaccel::plan::Quant::Fp8),
            input_len: Some(513),
            output_len: Some(511),
            context: Some(1024),
            ..InferenceOptions::default()
        },
    );
    assert_eq!(held, one.max_batch, "{r}");
    assert!(r["predicted_tpot_ms"].as_f64().is_some(), "{r}");
    assert!(
        full["notes"]
            .to_string()
            .contains("more requests in flight than the plan's KV cache holds"),
        "{full}"
    );
    // Its client printed backend `vllm` (the API it spoke); the server was
    // TensorRT-LLM, which --runtime says: planned under that runtime's rule.
    assert_eq!(r["planned_runtime"], "vllm", "{r}");
    let trt = check_lukallm(&["--runtime", "trtllm"]);
    assert_eq!(trt["results"][0]["planned_runtime"], "trtllm", "{trt}");
    assert!(
        !trt["notes"].to_string().contains("names no backend"),
        "{trt}"
    );
    // Any other input names its runtime itself: --runtime is refused.
    let o = run(&[
        "check",
        fx.join("vllm-pr13596__v1-kv-cache-tokens.log")
            .to_str()
            .unwrap(),
        "--runtime",
        "sglang",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not serving benchmark output"),
        "{o:?}"
    );
    // So is --mixed-prefill, which describes an SGLang server too.
    let o = run(&[
        "check",
        fx.join("vllm-pr13596__v1-kv-cache-tokens.log")
            .to_str()
            .unwrap(),
        "--mixed-prefill",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--mixed-prefill describes a serving benchmark's server"),
        "{o:?}"
    );
    let o = run(&[
        "check",
        fx.join("vllm-pr13596__v1-kv-cache-tokens.log")
            .to_str()
            .unwrap(),
        "--enforce-eager",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--enforce-eager describes a serving benchmark's server"),
        "{o:?}"
    );
    let old = json(&[
        "check",
        fx.join("learning-project-benchmarks-readme__vllm-benchmark-serving-2-runs.md")
            .to_str()
            .unwrap(),
        "--model",
        "qwen2.5-72b",
        "--devices",
        "4xh100-sxm",
        "--json",
    ]);
    let res = old["results"].as_array().unwrap();
    assert_eq!(res.len(), 2, "{old}");
    assert!(
        res.iter().all(|r| r["predicted_tpot_ms"].is_null()),
        "{old}"
    );
    let notes = old["notes"].to_string();
    assert!(notes.contains("2 result(s) print neither"), "{notes}");
    assert!(notes.contains("planned with the vLLM rule"), "{notes}");
    // A finite request rate under a concurrency cap: the TPOT is planned at
    // the cap, but the first requests do not arrive at once, so no
    // closed-loop TTFT is compared.
    let dir = tempfile::tempdir().unwrap();
    let paced = dir.path().join("paced.txt");
    std::fs::write(
        &paced,
        "============ Serving Benchmark Result ============\n\
         Successful requests:                     100\n\
         Maximum request concurrency:             8\n\
         Request rate configured (RPS):           2.00\n\
         Benchmark duration (s):                  60.0\n\
         Total input tokens:                      50000\n\
         Total generated tokens:                  20000\n\
         Mean TTFT (ms):                          80.0\n\
         Mean TPOT (ms):                          9.0\n\
         ==================================================\n",
    )
    .unwrap();
    let j = json(&[
        "check",
        paced.to_str().unwrap(),
        "--model",
        "llama-3.1-8b",
        "--devices",
        "1xh100-sxm",
        "--json",
    ]);
    let r = &j["results"][0];
    assert_eq!(r["result"]["request_rate"], 2.0, "{j}");
    assert!(r["predicted_tpot_ms"].as_f64().is_some(), "{j}");
    assert!(r["predicted_ttft_ms"].is_null(), "{j}");
    assert!(
        j["notes"]
            .to_string()
            .contains("sent its requests at a finite rate"),
        "{j}"
    );
}

/// `check` on llama-bench rows with `-ot` overrides and cache types: a row
/// whose overrides keep tensors in host memory (`=CPU`) gets no prediction
/// and a note of its own (not the note for tests the planner has no speed
/// for); a q8_0 cache is planned as the planner's 8-bit cache, so the same
/// deep decode test is predicted faster than at f16; K and V of different
/// types are noted. The override value is that of a published run (see
/// `cache_types_overrides_and_short_column_names_are_read` in bench.rs).
#[test]
fn check_reads_overrides_and_cache_types_of_llama_bench_rows() {
    let table = "| model                          |       size |     params | backend    | ngl | type_k | type_v | fa | ot                    |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -----: | -----: | -: | --------------------- | --------------: | -------------------: |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |    f16 |    f16 |  1 | blk.1[5-9].ffn_.*=CPU |           pp512 |        546.77 ± 0.00 |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |    f16 |    f16 |  1 | none                  |   tg128 @ d32768 |         57.06 ± 0.00 |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |   q8_0 |   q8_0 |  1 | none                  |   tg128 @ d32768 |         60.00 ± 0.00 |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 |    f16 |   q8_0 |  1 | none                  |           tg128 |         44.70 ± 0.00 |
";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.md");
    std::fs::write(&path, table).unwrap();
    let j = json(&[
        "check",
        path.to_str().unwrap(),
        "--model",
        "llama-3.1-8b",
        "--devices",
        "1xrtx-4090",
        "--json",
    ]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{j}");
    assert!(rows[0]["predicted_tokens_per_s"].is_null(), "{j}");
    let f16 = rows[1]["predicted_tokens_per_s"].as_f64().unwrap();
    let q8 = rows[2]["predicted_tokens_per_s"].as_f64().unwrap();
    assert!(q8 > f16 * 1.05, "q8_0 cache {q8} against f16 {f16}");
    assert!(!rows[3]["predicted_tokens_per_s"].is_null(), "{j}");
    let notes = j["notes"].to_string();
    assert!(notes.contains("1 row(s) ran with -ot overrides"), "{notes}");
    assert!(
        notes.contains("K and V caches differ (f16 / q8_0)"),
        "{notes}"
    );
    assert!(!notes.contains("tests without a prediction"), "{notes}");
}

/// `check` on llama-bench rows whose file type the planner has no format
/// for (`TQ2_0 - 2.06 bpw ternary`, as llama.cpp's `llama_model_ftype_name`
/// prints it) against a catalog model: no prediction (the plan would be
/// for the model's default format) and a note, while rows of known types
/// in the same table are predicted, each at its own format (an i-quant
/// mix, `IQ2_XXS - 2.0625 bpw`, is planned to decode faster than
/// Q4_K_M: fewer bytes per token); `--quant` picks the format to compare the unknown type at.
/// `(guessed)`, which the loader appends to a type it inferred from the
/// tensors, is read through.
#[test]
fn check_leaves_rows_of_unknown_file_types_unpredicted() {
    let table = "| model                          |       size |     params | backend    | ngl |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |
| qwen3moe 30B.A3B IQ2_XXS - 2.0625 bpw |   9.63 GiB |    30.53 B | Vulkan     |  -1 |           pp512 |      1099.27 ± 12.57 |
| qwen3moe 30B.A3B IQ2_XXS - 2.0625 bpw |   9.63 GiB |    30.53 B | Vulkan     |  -1 |           tg128 |        105.35 ± 0.22 |
| qwen3moe 30B.A3B Q4_K - Medium (guessed) |  17.28 GiB |    30.53 B | Vulkan     |  -1 |           tg128 |        100.00 ± 0.22 |
| qwen3moe 30B.A3B TQ2_0 - 2.06 bpw ternary |   8.00 GiB |    30.53 B | Vulkan     |  -1 |           tg128 |        110.00 ± 0.22 |
";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.md");
    std::fs::write(&path, table).unwrap();
    let check = |extra: &[&str]| {
        let mut a = vec![
            "check",
            path.to_str().unwrap(),
            "--model",
            "qwen3-30b-a3b",
            "--devices",
            "1xrtx-4090",
            "--json",
        ];
        a.extend_from_slice(extra);
        json(&a)
    };
    let j = check(&[]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{j}");
    let predicted = |i: usize| rows[i]["predicted_tokens_per_s"].as_f64();
    assert!(predicted(0).is_some(), "{j}");
    let (iq2, q4) = (predicted(1).unwrap(), predicted(2).unwrap());
    // A 3B-active MoE on an RTX 4090 spends much of a step on per-layer
    // work, so half the bytes gain less than twice the speed.
    assert!(iq2 > 1.05 * q4, "IQ2_XXS {iq2} against Q4_K_M {q4}: {j}");
    assert!(predicted(3).is_none(), "{j}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("no weight format the planner knows"),
        "{notes}"
    );
    assert!(notes.contains("TQ2_0"), "{notes}");
    // The IQ2_XXS decode test's prediction comes with the i-quant caveat.
    assert!(
        notes.contains("1 decode test(s) at i-quants below IQ4")
            && notes.contains("not calibrated"),
        "{notes}"
    );
    assert!(!notes.contains("tests without a prediction"), "{notes}");
    let given = check(&["--quant", "q2_k"]);
    let rows = given["rows"].as_array().unwrap();
    assert!(
        rows.iter().all(|r| !r["predicted_tokens_per_s"].is_null()),
        "{given}"
    );
    assert!(
        !given["notes"].to_string().contains("no weight format"),
        "{given}"
    );
}

/// `check` on a llama-bench prompt test of a build inside a window of slow
/// prompt kernels (`speed::SLOW_PROMPT_KERNELS`) notes that the prompt
/// prediction is an upper bound for that build; the same test of a build
/// after the window does not. The device lines and the Qwen3 30B-A3B row
/// are the RTX 5090's "5090 before" block of llama.cpp PR 15427 (opened
/// 2025-08-19; https://github.com/ggml-org/llama.cpp/pull/15427), which
/// prints no build line: the `build:` lines are this test's, numbers of
/// August 2025 (b6200) and of after the window (b7000, November 2025).
#[test]
fn check_notes_builds_with_slow_prompt_kernels() {
    let block = "ggml_vulkan: Found 1 Vulkan devices:
ggml_vulkan: 0 = NVIDIA GeForce RTX 5090 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32 | shared memory: 49152 | int dot: 1 | matrix cores: NV_coopmat2
| model                          |       size |     params | backend    | ngl | fa |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -: | --------------: | -------------------: |
| qwen3moe 30B.A3B Q2_K - Medium |  10.15 GiB |    30.53 B | Vulkan     |  99 |  1 |           pp512 |      4530.43 ± 31.16 |
";
    let dir = tempfile::tempdir().unwrap();
    let check = |build: &str| {
        let path = dir.path().join(format!("{build}.md"));
        std::fs::write(&path, format!("{block}\nbuild: 0000000 ({build})\n")).unwrap();
        json(&[
            "check",
            path.to_str().unwrap(),
            "--model",
            "qwen3-30b-a3b",
            "--devices",
            "1xrtx-5090",
            "--json",
        ])
    };
    let inside = check("6200");
    assert!(
        !inside["rows"][0]["predicted_tokens_per_s"].is_null(),
        "{inside}"
    );
    let notes = inside["notes"].to_string();
    assert!(notes.contains("upper bounds for that build"), "{notes}");
    assert!(notes.contains("15427"), "{notes}");
    let after = check("7000");
    assert!(
        !after["rows"][0]["predicted_tokens_per_s"].is_null(),
        "{after}"
    );
    let notes = after["notes"].to_string();
    assert!(!notes.contains("upper bounds for that build"), "{notes}");
}

/// `check` on a Vulkan llama-bench run whose device line prints `matrix
/// cores: none` (geerlingguy/ai-benchmarks issue 25: an RX 9070 XT under a
/// RADV that listed no cooperative matrix, pp512 2086.07 tok/s): the
/// prompt tests run on the vector units, which no published runs
/// calibrate, so they have no prediction and a note says why; the same run
/// with the card's matrix path printed (`KHR_coopmat`, this test's edit) is
/// predicted.
#[test]
fn check_plans_vulkan_rows_on_the_printed_matrix_path() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../ai-hwaccel/tests/fixtures/runtime-logs/llama-bench-geerlingguy-ai-benchmarks-issue25__rx9070xt-vulkan-matrix-cores-none.md",
    );
    let text = std::fs::read_to_string(src).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        json(&[
            "check",
            path.to_str().unwrap(),
            "--model",
            "llama-3.2-3b",
            "--devices",
            "1xrx-9070-xt",
            "--json",
        ])
    };
    let none = check("none.md", &text);
    let rows = none["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{none}");
    assert_eq!(rows[0]["logged_tokens_per_s"], 2086.07);
    assert!(
        rows.iter().all(|r| r["predicted_tokens_per_s"].is_null()),
        "{none}"
    );
    let notes = none["notes"].to_string();
    assert!(notes.contains("matrix cores: none"), "{notes}");
    assert!(
        notes.contains("2 prompt test(s) have no prediction"),
        "{notes}"
    );
    // Saved as Windows PowerShell 5.1's `>` writes: UTF-16LE, CRLF.
    let dir16 = tempfile::tempdir().unwrap();
    let path16 = dir16.path().join("bench-utf16.md");
    let mut bytes = b"\xFF\xFE".to_vec();
    for u in text.replace('\n', "\r\n").encode_utf16() {
        bytes.extend(u.to_le_bytes());
    }
    std::fs::write(&path16, bytes).unwrap();
    let utf16 = json(&[
        "check",
        path16.to_str().unwrap(),
        "--model",
        "llama-3.2-3b",
        "--devices",
        "1xrx-9070-xt",
        "--json",
    ]);
    assert_eq!(utf16["rows"], none["rows"]);
    assert_eq!(utf16["notes"], none["notes"]);
    let khr = check(
        "khr.md",
        &text.replace("matrix cores: none", "matrix cores: KHR_coopmat"),
    );
    let rows = khr["rows"].as_array().unwrap();
    assert!(
        rows.iter().all(|r| r["predicted_tokens_per_s"]
            .as_f64()
            .is_some_and(|p| p > 0.0)),
        "{khr}"
    );
    assert!(!khr["notes"].to_string().contains("matrix cores"), "{khr}");
}

/// `check` on llama-bench JSON whose rows set `n_cpu_moe` (2026 builds:
/// `--n-cpu-moe N` keeps the routed experts of N layers on the CPU): such
/// a row ran partly on the CPU and gets no prediction, a note says so, and
/// the row with `n_cpu_moe` 0 is predicted as before. The rows are a real
/// llama-bench run on a lent H200 (llama.cpp of llama-cpp-python 0.3.36),
/// the second one's `n_cpu_moe` set to 4 here.
#[test]
fn check_leaves_expert_offload_rows_unpredicted() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/lent-h200/llama-bench__l7b-q4_k_m.json");
    let mut rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    assert_eq!(rows[1]["n_cpu_moe"], 0);
    rows[1]["n_cpu_moe"] = 4.into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.json");
    std::fs::write(&path, serde_json::to_string(&rows).unwrap()).unwrap();
    let j = json(&[
        "check",
        path.to_str().unwrap(),
        "--model",
        "llama-2-7b",
        "--devices",
        "1xh200",
        "--json",
    ]);
    let out = j["rows"].as_array().unwrap();
    assert_eq!(out.len(), 2);
    assert!(!out[0]["predicted_tokens_per_s"].is_null(), "{j}");
    assert!(out[1]["predicted_tokens_per_s"].is_null(), "{j}");
    let notes = j["notes"].to_string();
    assert!(notes.contains("1 row(s) ran with --n-cpu-moe"), "{notes}");
    assert!(!notes.contains("below a whole offload"), "{notes}");
}

/// `check` of a pipeline-parallel vLLM log (the engine config line's
/// `pipeline_parallel_size=2`, vLLM 0.33's spellings; no published log of
/// a sliding-window model over stages was found, so the figures are this
/// test's): the log's memory is rank 0's, on the first stage, whose block
/// spans five of Gemma 3 27B's layers (layers 0-31 of two L40S), so the
/// tokens its memory gives are 10 GiB over five pages a block; the
/// predicted capacity is the PP 2 plan's.
#[test]
fn check_reads_a_pipeline_parallel_vllm_log_by_rank_0s_stage() {
    use ai_hwaccel::plan::runtime::{
        RuntimeKind, VllmSlidingBlocks, cuda_visible_bytes, vllm_batch_defaults,
    };
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, load_model, plan_inference};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("vllm.log");
    std::fs::write(
        &log,
        "INFO 11-29 10:00:01 [core.py:114] Initializing a V1 LLM engine (v0.33.0) with config: model='google/gemma-3-27b-it', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, pipeline_parallel_size=2, quantization=None
(Worker_PP0 pid=10) INFO 11-29 10:02:00 [gpu_worker.py:508] Available KV cache memory: 10.00 GiB
INFO 11-29 10:02:01 [kv_cache_utils.py:1300] GPU KV cache size: 123,456 tokens
",
    )
    .unwrap();
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "gemma-3-27b",
        "--devices",
        "2xl40s",
        "--json",
    ]);
    let m = load_model("gemma-3-27b").unwrap();
    let devices = PlanDevice::from_device_string("2xl40s").unwrap();
    let p = plan_inference(
        &m.spec,
        &devices,
        &ai_hwaccel::plan::options_for(
            &m,
            &InferenceOptions {
                runtime: RuntimeKind::Vllm,
                context: Some(8192),
                max_plans: 64,
                // 0.33.0's default, which check takes from the log's release.
                memory_utilization: 0.92,
                ..Default::default()
            },
        ),
    );
    let plan = p
        .plans
        .iter()
        .find(|b| b.pipeline_parallel == 2 && b.tensor_parallel == 1)
        .unwrap();
    let d0 = &devices[0];
    let batched = vllm_batch_defaults(
        cuda_visible_bytes(d0.spec_id.as_deref(), d0.capacity_bytes.unwrap()),
        &d0.name,
    )
    .0;
    let s = VllmSlidingBlocks::new(&m.spec, 1, 2.0, batched, Some("0.33.0")).unwrap();
    let s_stage_layers = |spec: &ai_hwaccel::plan::ModelSpec, z: u32| {
        s.stage_bytes_per_block(spec, 0, z) / s.page_bytes
    };
    // The planner's first stage: layers 0-31 (five of the full group, at
    // most five of any sliding group).
    let (a, z) = plan.per_device[0].layers;
    assert_eq!(a, 0);
    assert!((28..=34).contains(&z), "{z}");
    assert_eq!(s_stage_layers(&m.spec, z), 5);
    let row = |name: &str| check_row(&j, name).clone();
    let pool = row("kv_cache_tokens_from_logged_memory");
    assert_eq!(
        pool["predicted_bytes"],
        s.capacity_tokens((10u64 << 30) / (5 * s.page_bytes), 8192),
        "{pool}"
    );
    assert_eq!(
        row("kv_cache_capacity_tokens")["predicted_bytes"],
        plan.kv_cache_capacity_tokens.unwrap(),
    );
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("pipeline parallelism 2: the log's figures are rank 0's, compared with the plan's first stage"),
        "{notes}"
    );
    // A log of more stages than the devices allow: said, not claimed.
    let many = dir.path().join("vllm8.log");
    std::fs::write(
        &many,
        std::fs::read_to_string(&log)
            .unwrap()
            .replace("pipeline_parallel_size=2", "pipeline_parallel_size=8"),
    )
    .unwrap();
    let j8 = json(&[
        "check",
        many.to_str().unwrap(),
        "--model",
        "gemma-3-27b",
        "--devices",
        "2xl40s",
        "--json",
    ]);
    assert!(
        j8["notes"]
            .to_string()
            .contains("the planner has no plan with 8 stages on these devices"),
        "{}",
        j8["notes"]
    );
    assert!(
        notes.contains(&format!(
            "rank 0 holds layers 0-{}: a block there spans 5 layers' pages (of 10 on one GPU)",
            z - 1
        )),
        "{notes}"
    );
}

/// `check` of a vLLM log of a sliding-window model: the token capacity
/// vLLM's block pool gives for the logged KV memory stands beside the
/// logged count. The lines are those a published gpt-oss-120b start-up of
/// vLLM 0.11.2 printed (blog.huikang.dev/2025/12/28/vllm-logs.html:
/// `Available KV cache memory: 8.99 GiB`, `GPU KV cache size: 130,960
/// tokens`, `max_model_len` 98304, `max_num_batched_tokens` 2048), in the
/// release's spellings; the memory is printed to 0.01 GiB, so the pool
/// from it is within a few blocks (16,365 blocks and 130,912 tokens at
/// exactly 8.99 GiB; 16,370 give the logged count).
#[test]
fn check_reads_a_sliding_window_vllm_log_through_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("vllm.log");
    std::fs::write(
        &log,
        "INFO 12-28 10:00:00 [api_server.py:1] vLLM API server version 0.11.2
INFO 12-28 10:00:01 [core.py:77] Initializing a V1 LLM engine (v0.11.2) with config: model='openai/gpt-oss-120b', dtype=torch.bfloat16, max_seq_len=98304, tensor_parallel_size=1, quantization=mxfp4, enable_prefix_caching=True
INFO 12-28 10:00:01 [scheduler.py:1] Chunked prefill is enabled with max_num_batched_tokens=2048.
INFO 12-28 10:02:00 [gpu_worker.py:298] Available KV cache memory: 8.99 GiB
INFO 12-28 10:02:00 [kv_cache_utils.py:1087] GPU KV cache size: 130,960 tokens
",
    )
    .unwrap();
    let j = json(&[
        "check",
        log.to_str().unwrap(),
        "--model",
        "gpt-oss-120b",
        "--devices",
        "1xh200",
        "--json",
    ]);
    let row = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == "kv_cache_tokens_from_logged_memory")
        .unwrap_or_else(|| panic!("no pool row: {j}"))
        .clone();
    assert_eq!(row["logged_bytes"], 130_960, "{row}");
    assert_eq!(row["predicted_bytes"], 130_912, "{row}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("1 full and 1 sliding groups of 18 layers"),
        "{notes}"
    );
}

/// The row of a `check --json` report whose `component` is `name`.
fn check_row<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["component"] == name)
        .unwrap_or_else(|| panic!("no {name} row: {report}"))
}
