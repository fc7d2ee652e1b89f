//! The capture corpus: every file in every `tests/fixtures/<format>/` folder
//! is parsed with its `parse` format, and checked against the values written
//! down for it in `tests/fixtures/expect/<folder>/<file>.json`.
//!
//! Adding a captured output is adding files, not test code: drop the capture
//! into the folder of its format (provenance in `tests/fixtures/SOURCES.md`)
//! and, after reading the capture, write its expect file. A capture without
//! one must still give at least one device without panicking; it is listed
//! as unchecked. The expect files live in a parallel tree, not next to the
//! captures, because the per-backend tests walk the capture folders.
//!
//! Expect file keys (all optional except `devices`):
//! - `devices`: number of devices (MIG/partition children included);
//! - `names`, `vendors`, `memory_bytes`, `pci_addresses`: one entry per device
//!   in output order, `null` where the capture shows nothing;
//! - `extra`: one entry per device, an object of `extra` keys and the
//!   values the capture gives them (`null`: the key must be absent), or
//!   `null` to check nothing of that device's;
//! - `format`: the `parse` format when it is not the folder's;
//! - `read`: how the values were read from the capture (for the reviewer).
#![allow(clippy::disallowed_methods, reason = "the corpus test reads fixtures")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::{FORMATS, format};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Fixture folders that hold something other than one tool's output.
const NOT_FORMATS: &[(&str, &str)] = &[
    ("expect", "this corpus's expected values"),
    (
        "ibstat",
        "host network facts, not devices (tests/host_network.rs)",
    ),
    ("models", "model configs (tests/model_files.rs)"),
    (
        "scoreboards",
        "the source of tests/calibration/scoreboard.csv (scripts/scoreboard.py)",
    ),
    (
        "model-configs",
        "configs of models outside the catalog (tests/model_files.rs)",
    ),
    (
        "cpu-model-names",
        "CPU model names and their CPU table entries (tests/cpu_spec.rs)",
    ),
    ("prices", "cloud price files (tests/cost.rs)"),
    (
        "spec-captures",
        "device-query captures behind derived spec entries (tests/spec_captures.rs)",
    ),
    (
        "lent-h200",
        "this project's measurements on a lent H200 (tests/runtime_memory.rs, tests/accuracy.rs)",
    ),
    (
        "snapshots",
        "snapshots of real machines for `detect --from` (crates/ai-hwaccel-cli/tests/cli.rs)",
    ),
    (
        "lent-h100",
        "this project's measurement on a lent H100 (tests/runtime_memory.rs)",
    ),
    (
        "cpuinfo",
        "/proc/cpuinfo of hosts (src/detect/cpu.rs, tests/runtime_memory.rs)",
    ),
    (
        "runtime-logs",
        "runtime start-up logs (tests/runtime_logs.rs)",
    ),
    (
        "kernel-log",
        "kernel log lines with device errors (tests/telemetry.rs)",
    ),
    (
        "sysfs-gpu-telemetry",
        "DRM card sysfs/hwmon trees, dynamic values (tests/telemetry.rs)",
    ),
    (
        "runtimes",
        "pinned runtime argument definitions (tests/emit.rs)",
    ),
    (
        "roots",
        "fake sysfs/procfs trees (tests/foundation.rs and others)",
    ),
    (
        "sysctl",
        "macOS host facts read by the apple backend, not a parse format (tests/apple.rs)",
    ),
    (
        "system-profiler-hardware-json",
        "macOS SPHardwareDataType host facts, not devices (tests/apple.rs)",
    ),
    (
        "nv-tegra-release",
        "Jetson Linux release files, not a tool output (detect/nvidia/tegra.rs, tests/platforms.rs)",
    ),
    (
        "amdgpu-top-json",
        "amdgpu_top --dump --json captures: the PCIe link facts of spec entries (src/spec/devices.toml notes, tests/spec.rs)",
    ),
    (
        "sysfs-drm-amdgpu",
        "sysfs trees read through a fake root (tests/amd.rs)",
    ),
    (
        "sysfs-kfd-topology",
        "sysfs trees read through a fake root (tests/amd.rs)",
    ),
];

/// Folders named after a tool rather than a `parse` format.
const FOLDER_FORMATS: &[(&str, &str)] = &[("xpu-smi", "xpu-smi-json")];

/// The `parse` format of a file in `folder`, unless its expect file names one.
fn format_of(folder: &str, file: &Path) -> Option<&'static str> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    let name = match (folder, ext) {
        ("neuron-ls", "json") => "neuron-ls-json",
        ("hl-smi", "csv") => "hl-smi-csv",
        ("xpu-smi", "txt") => "xpu-smi-text",
        _ => FOLDER_FORMATS
            .iter()
            .find(|(f, _)| *f == folder)
            .map_or(folder, |(_, n)| n),
    };
    FORMATS.iter().find(|f| f.name == name).map(|f| f.name)
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// `Some(problem)` when `got` differs from the expected list `key`.
fn check_list(exp: &Value, key: &str, got: &[Value]) -> Option<String> {
    let want = exp.get(key)?.as_array()?;
    (want.as_slice() != got).then(|| format!("{key}: expected {want:?}, parsed {got:?}"))
}

#[test]
fn every_capture_parses_to_its_expected_devices() {
    let root = fixtures();
    let mut failures: Vec<String> = Vec::new();
    let mut unchecked: Vec<String> = Vec::new();
    let mut checked = 0usize;
    let mut expect_files_used: BTreeSet<PathBuf> = BTreeSet::new();
    let mut per_format: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for dir in folders {
        let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
        if NOT_FORMATS.iter().any(|(f, _)| *f == folder) {
            continue;
        }
        for file in files_in(&dir) {
            let fname = file.file_name().unwrap().to_string_lossy().into_owned();
            let rel = format!("{folder}/{fname}");
            let exp_path = root
                .join("expect")
                .join(&folder)
                .join(format!("{fname}.json"));
            let exp: Option<Value> = exp_path.is_file().then(|| {
                expect_files_used.insert(exp_path.clone());
                serde_json::from_slice(&std::fs::read(&exp_path).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", exp_path.display()))
            });
            let fmt_name = exp
                .as_ref()
                .and_then(|e| e.get("format")?.as_str().map(str::to_string))
                .or_else(|| format_of(&folder, &file).map(str::to_string));
            let Some(fmt) = fmt_name.as_deref().and_then(format) else {
                failures.push(format!(
                    "{rel}: folder {folder:?} is no parse format; add it to FOLDER_FORMATS or NOT_FORMATS"
                ));
                continue;
            };
            *per_format.entry(fmt.name).or_default() += 1;
            let bytes = std::fs::read(&file).unwrap();
            let out = match std::panic::catch_unwind(|| (fmt.parse)(&bytes)) {
                Ok(o) => o,
                Err(_) => {
                    failures.push(format!("{rel}: the {} parser panicked", fmt.name));
                    continue;
                }
            };
            let Some(exp) = exp else {
                if out.devices.is_empty() {
                    failures.push(format!(
                        "{rel}: no device and no expect file (warnings: {:?})",
                        out.warnings
                    ));
                }
                unchecked.push(rel);
                continue;
            };
            checked += 1;
            let want_n = exp["devices"]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: `devices` missing", exp_path.display()));
            let mut problems = Vec::new();
            if out.devices.len() as u64 != want_n {
                problems.push(format!(
                    "devices: expected {want_n}, parsed {} ({:?})",
                    out.devices.len(),
                    out.warnings
                ));
            } else {
                let d = &out.devices;
                let names: Vec<Value> = d.iter().map(|d| d.name.clone().into()).collect();
                let vendors: Vec<Value> = d.iter().map(|d| d.vendor.clone().into()).collect();
                let mem: Vec<Value> = d.iter().map(|d| d.memory_bytes.into()).collect();
                let pci: Vec<Value> = d
                    .iter()
                    .map(|d| d.pci_address.map(|a| a.to_string()).into())
                    .collect();
                for (key, got) in [
                    ("names", &names),
                    ("vendors", &vendors),
                    ("memory_bytes", &mem),
                    ("pci_addresses", &pci),
                ] {
                    problems.extend(check_list(&exp, key, got));
                }
                if let Some(want) = exp.get("extra").and_then(Value::as_array) {
                    if want.len() != d.len() {
                        problems.push(format!(
                            "extra: {} entries for {} devices",
                            want.len(),
                            d.len()
                        ));
                    }
                    for (i, (w, dev)) in want.iter().zip(d).enumerate() {
                        for (k, v) in w.as_object().into_iter().flatten() {
                            let got = dev.extra.get(k).map(|s| Value::from(s.as_str()));
                            if got.as_ref().unwrap_or(&Value::Null) != v {
                                problems.push(format!(
                                    "device {i} extra {k:?}: expected {v}, parsed {got:?}"
                                ));
                            }
                        }
                    }
                }
            }
            for p in problems {
                failures.push(format!("{rel}: {p}"));
            }
        }
    }
    // An expect file whose capture is gone is a mistake too.
    let expect_root = root.join("expect");
    if expect_root.is_dir() {
        for dir in std::fs::read_dir(&expect_root).unwrap() {
            for f in files_in(&dir.unwrap().path()) {
                if !expect_files_used.contains(&f) {
                    failures.push(format!("{}: no capture of that name", f.display()));
                }
            }
        }
    }
    eprintln!(
        "corpus: {} captures checked against expect files, {} unchecked; per format: {per_format:?}",
        checked,
        unchecked.len()
    );
    for u in &unchecked {
        eprintln!("  unchecked: {u}");
    }
    assert!(checked >= 20, "only {checked} captures have expect files");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every capture the formats table knows parses to the same result with a
/// UTF-8 byte-order mark prepended, with CRLF line endings (issue 14: a BOM
/// turned 2 amd-smi GPUs into 1 and gave zero devices from the JSON
/// formats, clinfo and nvlink), and saved as UTF-16 with a byte-order mark,
/// little-endian as Windows PowerShell 5.1's `>` writes it (and
/// big-endian). The variants are made from the capture's text, so a capture
/// saved as UTF-16 (the egakeru vulkaninfo report) is tried as UTF-8 too.
#[test]
fn a_byte_order_mark_or_crlf_changes_no_result() {
    let root = fixtures();
    let mut failures: Vec<String> = Vec::new();
    let mut tried = 0usize;
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for dir in folders {
        let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
        if NOT_FORMATS.iter().any(|(f, _)| *f == folder) {
            continue;
        }
        for file in files_in(&dir) {
            let fname = file.file_name().unwrap().to_string_lossy().into_owned();
            let exp_path = root
                .join("expect")
                .join(&folder)
                .join(format!("{fname}.json"));
            let named = exp_path.is_file().then(|| {
                let v: Value = serde_json::from_slice(&std::fs::read(&exp_path).unwrap()).unwrap();
                v.get("format").and_then(Value::as_str).map(str::to_string)
            });
            let Some(fmt) = named
                .flatten()
                .as_deref()
                .or_else(|| format_of(&folder, &file))
                .and_then(format)
            else {
                continue;
            };
            let raw = std::fs::read(&file).unwrap();
            let plain = (fmt.parse)(&raw);
            let bytes = ai_hwaccel::model::text::decode(&raw)
                .into_owned()
                .into_bytes();
            let utf16 = |little: bool| -> Vec<u8> {
                let text = String::from_utf8_lossy(&bytes);
                let mark: &[u8] = if little { b"\xFF\xFE" } else { b"\xFE\xFF" };
                let mut out = mark.to_vec();
                for u in text.encode_utf16() {
                    out.extend(if little {
                        u.to_le_bytes()
                    } else {
                        u.to_be_bytes()
                    });
                }
                out
            };
            let mut with_bom = b"\xEF\xBB\xBF".to_vec();
            with_bom.extend_from_slice(&bytes);
            let mut crlf = Vec::with_capacity(bytes.len() + bytes.len() / 16);
            for (i, &b) in bytes.iter().enumerate() {
                if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
                    crlf.push(b'\r');
                }
                crlf.push(b);
            }
            tried += 1;
            let (le, be) = (utf16(true), utf16(false));
            for (how, input) in [
                ("a BOM", &with_bom),
                ("CRLF", &crlf),
                ("UTF-8", &bytes),
                ("UTF-16LE", &le),
                ("UTF-16BE", &be),
            ] {
                let got = (fmt.parse)(input);
                if got.devices != plain.devices {
                    failures.push(format!(
                        "{folder}/{fname} ({}): devices differ with {how}: {} vs {}",
                        fmt.name,
                        got.devices.len(),
                        plain.devices.len()
                    ));
                }
            }
        }
    }
    assert!(tried > 50, "only {tried} captures tried");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every XML format refuses input nested 5,000 deep (35 KB) with a warning
/// naming the format instead of overflowing the stack (issue 14: SIGABRT).
#[test]
fn deeply_nested_xml_is_refused_not_a_stack_overflow() {
    let deep = format!(
        "<?xml version=\"1.0\"?>\n<nvidia_smi_log><gpu id=\"00000000:01:00.0\">{}{}</gpu></nvidia_smi_log>\n",
        "<a>".repeat(5_000),
        "</a>".repeat(5_000)
    );
    let xml_formats: Vec<_> = FORMATS
        .iter()
        .filter(|f| f.name.ends_with("-xml"))
        .collect();
    assert!(!xml_formats.is_empty());
    for f in xml_formats {
        let out = (f.parse)(deep.as_bytes());
        assert!(out.devices.is_empty(), "{}", f.name);
        assert!(
            out.warnings
                .iter()
                .any(|w| w.contains("nest deeper than 64")),
            "{}: {:?}",
            f.name,
            out.warnings
        );
    }
}
