//! `ai-hwaccel parse` with the plain-text nvidia-smi formats (`nvidia-smi-q`,
//! `nvidia-smi-nvlink`) on captured fixtures of the library crate.
#![allow(clippy::disallowed_methods, reason = "tests run the binary")]

use std::path::PathBuf;
use std::process::Command;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures")
        .join(rel)
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn parse_json(format: &str, rel: &str) -> serde_json::Value {
    let path = fixture(rel);
    let o = run(&["parse", format, path.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "{format} {rel}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

#[test]
fn parse_list_names_the_text_formats() {
    let o = run(&["parse", "--list"]);
    assert!(o.status.success());
    let list = String::from_utf8(o.stdout).unwrap();
    for name in ["nvidia-smi-q", "nvidia-smi-nvlink"] {
        assert!(
            list.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing from:\n{list}"
        );
    }
}

#[test]
fn parse_nvidia_smi_q_h100_mig() {
    let v = parse_json(
        "nvidia-smi-q",
        "nvidia-smi-q/linux-x86_64__nvidia-h100-mig__590.48.01__idle.txt",
    );
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 5, "one GPU and four MIG devices");
    assert_eq!(devs[0]["id"], "pci:0000:00:09.0");
    assert_eq!(devs[0]["memory_bytes"], 81_559u64 * 1_048_576);
    assert_eq!(devs[1]["parent"], "pci:0000:00:09.0");
    assert_eq!(devs[1]["compute_units"], 60);
    assert!(v["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn parse_nvidia_smi_nvlink_a100() {
    let v = parse_json(
        "nvidia-smi-nvlink",
        "nvidia-smi-nvlink/gpud__nvlink-status__a100-sxm4-80gb-x8.txt",
    );
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 8);
    assert_eq!(devs[0]["extra"]["nvlink_links_active"], "12");
    assert_eq!(
        devs[0]["extra"]["nvlink_bandwidth_bytes_per_s"],
        "300000000000"
    );
}
