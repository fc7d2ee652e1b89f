//! The `topo` command: its JSON contract (numa_nodes, links, domains,
//! affinity), the terminal report's width, and `plan --registry`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run the binary and read fixtures"
)]

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
}

fn root(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ai-hwaccel/tests/fixtures/roots")
        .join(name)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> (String, String, i32) {
    let o = bin().args(args).output().unwrap();
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn topo_json_has_the_documented_fields() {
    let r = root("two-socket-pci");
    let (out, err, code) = run(&["topo", "--json", "--no-exec", "--root", &r]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nodes = v["numa_nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["id"], 0);
    let cpus: Vec<u64> = nodes[0]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(cpus, [0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(nodes[1]["memory_bytes"], 131_072_000u64 * 1024);
    // Four accelerators on PCI (two H100, an MI300X, a passthrough H100).
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 4);
    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len(), 6, "one edge per pair");
    for l in links {
        for k in ["a", "b", "type", "bandwidth_bytes_per_s"] {
            assert!(l.get(k).is_some(), "link lacks {k}: {l}");
        }
    }
    // The fake root's functions sit directly on pci0000:00: through the host bridge.
    assert!(links.iter().all(|l| l["type"] == "phb"), "{links:?}");
    let domains = v["domains"].as_array().unwrap();
    assert!(!domains.is_empty());
    assert!(
        domains
            .iter()
            .all(|d| d.as_array().unwrap().iter().all(|x| x.is_string()))
    );
    let aff = v["affinity"].as_array().unwrap();
    assert_eq!(aff.len(), 4);
    for a in aff {
        for k in ["device", "numa_node", "cpus", "nics"] {
            assert!(a.get(k).is_some(), "affinity lacks {k}: {a}");
        }
    }
    let h100 = aff
        .iter()
        .find(|a| a["device"] == "pci:0000:1b:00.0")
        .unwrap();
    assert_eq!(h100["numa_node"], 0);
    assert_eq!(h100["cpus"].as_array().unwrap().len(), 8, "node 0's CPUs");
    for k in ["environment", "storage", "network", "rdma", "cloud"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
}

#[test]
fn topo_report_fits_100_columns() {
    let r = root("two-socket-pci");
    let (out, _, code) = run(&["topo", "--no-exec", "--root", &r]);
    assert_eq!(code, 0);
    assert!(out.contains("Interconnect domains"), "{out}");
    assert!(out.contains("PHB"), "{out}");
    for line in out.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
}

#[test]
fn plan_reads_a_saved_registry_and_bad_files_name_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let r = root("two-socket-pci");
    let (reg, _, code) = run(&["detect", "--json", "--no-exec", "--root", &r]);
    assert_eq!(code, 0);
    let file = dir.path().join("node7.json");
    std::fs::write(&file, &reg).unwrap();
    let f = file.display().to_string();
    let (out, err, code) = run(&["plan", "llama-3.1-8b", "--registry", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v.get("plans").is_some() || v.get("best").is_some(),
        "{out:.300}"
    );

    let (topo_out, err, code) = run(&["topo", "--registry", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(topo_out.contains("\"domains\""));

    std::fs::write(&file, "{\"schema_version\": 1, \"devices\": 3}").unwrap();
    let (_, err, code) = run(&["plan", "llama-3.1-8b", "--registry", &f]);
    assert_ne!(code, 0);
    assert!(
        err.contains("node7.json") && err.contains("devices"),
        "{err}"
    );
}
