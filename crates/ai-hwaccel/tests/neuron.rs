//! Neuron backend: every neuron-ls capture (old and new layouts, rst
//! indentation), a JSON document derived from one of them, fake-root /
//! fake-tool end-to-end runs with real PCI ids, and corrupted inputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{detect_fake, write_script};

use std::path::{Path, PathBuf};

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

const GIB: u64 = 1 << 30;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/neuron-ls")
        .join(rel)
}

fn parse(name: &str, bytes: &[u8]) -> ParseOutput {
    (format(name).expect("format registered").parse)(bytes)
}

fn parse_file(rel: &str) -> ParseOutput {
    let out = parse("neuron-ls", &std::fs::read(fixture(rel)).unwrap());
    assert!(out.warnings.is_empty(), "{rel}: {:?}", out.warnings);
    out
}

/// (file, devices, NeuronCores each, GiB each, name, first BDF, first device's peers)
type Case = (
    &'static str,
    usize,
    u32,
    u64,
    &'static str,
    &'static str,
    &'static [&'static str],
);
const CASES: &[Case] = &[
    (
        "aws-neuron-sdk-doc-old__inf1.6xlarge__neuron-ls.txt",
        4,
        4,
        8,
        "AWS Neuron device",
        "0000:00:1c.0",
        &["pci:0000:00:1d.0"],
    ),
    (
        "aws-neuron-sdk-doc-old__inf1.6xlarge__neuron-ls-show-all-procs.txt",
        4,
        4,
        8,
        "AWS Neuron device",
        "0000:00:1c.0",
        &["pci:0000:00:1d.0"],
    ),
    (
        "aws-neuron-sdk-doc-old__trn1.32xlarge__neuron-ls-topology.txt",
        16,
        2,
        32,
        "AWS Neuron device",
        "0000:00:04.0",
        &[
            "pci:0000:00:10.0",
            "pci:0000:00:07.0",
            "pci:0000:00:08.0",
            "pci:0000:00:05.0",
        ],
    ),
    (
        "aws-neuron-sdk-doc__trn1.2xlarge__neuron-ls.txt",
        1,
        2,
        32,
        "AWS Trainium",
        "0000:00:1e.0",
        &[],
    ),
    (
        "aws-neuron-sdk-doc__trn1.32xlarge__neuron-ls-topology.txt",
        16,
        2,
        32,
        "AWS Trainium",
        "0000:10:1c.0",
        &[
            "pci:0000:10:1e.0",
            "pci:0000:a0:1d.0",
            "pci:0000:20:1b.0",
            "pci:0000:10:1d.0",
        ],
    ),
    (
        "aws-neuron-sdk-doc__trn2n.48xlarge__neuron-ls-topology.txt",
        16,
        4,
        96,
        "AWS Trainium2",
        "0000:cc:00.0",
        &[
            "pci:0000:f8:00.0",
            "pci:0000:cb:00.0",
            "pci:0000:6f:00.0",
            "pci:0000:b5:00.0",
        ],
    ),
    (
        "aws-neuron-sdk-doc__trn2n.48xlarge__neuron-ls-wide.txt",
        16,
        4,
        96,
        "AWS Trainium2",
        "0000:cc:00.0",
        &[
            "pci:0000:f8:00.0",
            "pci:0000:cb:00.0",
            "pci:0000:6f:00.0",
            "pci:0000:b5:00.0",
        ],
    ),
    (
        "aws-neuron-sdk-doc__trn2n.48xlarge__neuron-ls.txt",
        16,
        4,
        96,
        "AWS Trainium2",
        "0000:cc:00.0",
        &[
            "pci:0000:f8:00.0",
            "pci:0000:cb:00.0",
            "pci:0000:6f:00.0",
            "pci:0000:b5:00.0",
        ],
    ),
];

#[test]
fn every_capture_parses_with_its_values() {
    for &(file, n, cores, gib, name, bdf, peers) in CASES {
        let out = parse_file(file);
        assert_eq!(out.devices.len(), n, "{file}");
        for (i, d) in out.devices.iter().enumerate() {
            assert_eq!(d.index, Some(i as u32), "{file}");
            assert_eq!(d.compute_units, Some(cores), "{file}");
            assert_eq!(d.memory_bytes, Some(gib * GIB), "{file}");
            assert_eq!((d.vendor.as_str(), d.family), ("aws", Family::AiAsic));
            assert_eq!(d.name, name, "{file}");
            assert!(d.links.iter().all(|l| l.kind == "neuronlink"));
        }
        let first = &out.devices[0];
        assert_eq!(first.pci_address.unwrap().to_string(), bdf, "{file}");
        let got: Vec<&str> = first.links.iter().map(|l| l.peer.as_str()).collect();
        assert_eq!(got, peers, "{file}");
    }
}

#[test]
fn new_layout_extras() {
    let out = parse_file("aws-neuron-sdk-doc__trn2n.48xlarge__neuron-ls.txt");
    let d = &out.devices[4];
    assert_eq!(d.pci_address.unwrap().to_string(), "0000:6f:00.0");
    assert_eq!(d.numa_node, Some(0));
    assert_eq!(d.extra["neuroncore_ids"], "16-19");
    assert_eq!(d.extra["cpu_affinity"], "0-47,96-143");
    assert_eq!(d.extra["instance_type"], "trn2n.48xlarge");
    assert_eq!(d.extra["logical_neuroncore_config"], "2");
    assert_eq!(d.architecture.as_deref(), Some("Trainium2"));
    // `NUMA NODE -1` is unknown, not node 0.
    let one = parse_file("aws-neuron-sdk-doc__trn1.2xlarge__neuron-ls.txt");
    assert_eq!(one.devices[0].numa_node, None);
}

/// No published `neuron-ls --json-output` capture exists in the fixtures;
/// this document carries the trn1.32xlarge topology capture's first two
/// rows in the JSON shape documented in `detect/neuron.rs`.
const DERIVED_JSON: &str = r#"[
  {"neuron_device": 0, "bdf": "10:1c.0", "connected_to": [12, 3, 4, 1], "nc_count": 2,
   "memory_size": 34359738368, "neuron_processes": []},
  {"neuron_device": 1, "bdf": "10:1d.0", "connected_to": [13, 0, 5, 2], "nc_count": 2,
   "memory_size": 34359738368, "neuron_processes": []}
]"#;

#[test]
fn json_shape() {
    let out = parse("neuron-ls-json", DERIVED_JSON.as_bytes());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    let d = &out.devices[0];
    assert_eq!(d.id, "pci:0000:10:1c.0");
    assert_eq!(d.memory_bytes, Some(32 * GIB));
    assert_eq!(d.compute_units, Some(2));
    let peers: Vec<&str> = d.links.iter().map(|l| l.peer.as_str()).collect();
    assert_eq!(
        peers,
        ["neuron12", "neuron3", "neuron4", "pci:0000:10:1d.0"]
    );
    let wrapped = format!("{{\"neuron_devices\": {DERIVED_JSON}}}");
    assert_eq!(parse("neuron-ls-json", wrapped.as_bytes()).devices.len(), 2);
    assert!(!parse("neuron-ls-json", b"{\"x\": 1}").warnings.is_empty());
}

// ---- fake root + fake tool ------------------------------------------------

/// A trn1.2xlarge: one Trainium (1d0f:7164) at 0000:00:1e.0 bound to `neuron`.
fn trn1_root(root: &Path, driver: Option<&str>) {
    let dir = root.join("sys/bus/pci/devices/0000:00:1e.0");
    std::fs::create_dir_all(&dir).unwrap();
    for (f, v) in [
        ("vendor", "0x1d0f"),
        ("device", "0x7164"),
        ("class", "0x088000"),
    ] {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    if let Some(d) = driver {
        std::os::unix::fs::symlink(format!("../../../bus/pci/drivers/{d}"), dir.join("driver"))
            .unwrap();
        let cls = root.join("sys/class/neuron_device/neuron0");
        std::fs::create_dir_all(&cls).unwrap();
        std::os::unix::fs::symlink(
            "../../../devices/pci0000:00/0000:00:1e.0",
            cls.join("device"),
        )
        .unwrap();
    }
}

fn run(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Neuron, BackendId::Pci])
}

#[test]
fn table_tool_end_to_end() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), Some("neuron"));
    // An old neuron-ls without --json-output: falls back to the table.
    write_script(
        bin.path(),
        "neuron-ls",
        &format!(
            "[ \"$1\" = --json-output ] && {{ echo 'unrecognized arguments' >&2; exit 2; }}\ncat '{}'\n",
            fixture("aws-neuron-sdk-doc__trn1.2xlarge__neuron-ls.txt").display()
        ),
    );
    let r = run(root.path(), bin.path());
    assert_eq!(r.devices.len(), 1, "{:?}", r.devices);
    let d = &r.devices[0];
    assert_eq!(d.id, "pci:0000:00:1e.0");
    assert_eq!(d.name, "AWS Trainium", "the PCI table name");
    assert_eq!(d.memory_bytes, Some(32 * GIB));
    assert_eq!(d.compute_units, Some(2));
    assert_eq!(d.driver.as_deref(), Some("neuron"));
    assert_eq!(d.source, "neuron-ls+pci-sysfs");
    assert!(r.summary.has_accelerator);
}

#[test]
fn json_tool_end_to_end() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), Some("neuron"));
    let json = r#"[{"neuron_device": 0, "bdf": "00:1e.0", "connected_to": null, "nc_count": 2, "memory_size": 34359738368}]"#;
    let f = bin.path().join("out.json");
    std::fs::write(&f, json).unwrap();
    write_script(
        bin.path(),
        "neuron-ls",
        &format!("[ \"$1\" = --json-output ] && cat '{}'\n", f.display()),
    );
    let r = run(root.path(), bin.path());
    assert_eq!(r.devices.len(), 1);
    assert_eq!(r.devices[0].memory_bytes, Some(32 * GIB));
    assert!(r.devices[0].links.is_empty());
}

/// A fake `neuron-monitor` that streams `report` as its first line and then
/// a report every 30 s, as the daemon does; `neuron-ls --json-output`
/// lists the trn1.2xlarge's one device with its 2 NeuronCores.
fn monitor_tools(bin: &Path, report: &str) {
    let ls = r#"[{"neuron_device": 0, "bdf": "00:1e.0", "connected_to": null, "nc_count": 2, "memory_size": 34359738368}]"#;
    std::fs::write(bin.join("ls.json"), ls).unwrap();
    std::fs::write(bin.join("report.json"), report).unwrap();
    write_script(
        bin,
        "neuron-ls",
        &format!(
            "[ \"$1\" = --json-output ] && cat '{}'\n",
            bin.join("ls.json").display()
        ),
    );
    write_script(
        bin,
        "neuron-monitor",
        &format!(
            "[ $# -eq 0 ] || exit 2\nwhile :; do cat '{}'; echo; sleep 30; done",
            bin.join("report.json").display()
        ),
    );
}

#[test]
fn monitor_without_a_runtime_adds_no_values() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), Some("neuron"));
    let capture = std::fs::read_to_string(support::fixture(
        "neuron-monitor/all-smi__trn1.2xlarge__neuron-monitor-no-runtime.json",
    ))
    .unwrap();
    monitor_tools(bin.path(), &capture);
    let t = std::time::Instant::now();
    let r = run(root.path(), bin.path());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        t.elapsed()
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let d = &r.devices[0];
    assert_eq!(d.utilization_percent, None, "no runtime: unknown, not 0 %");
    assert!(!d.extra.contains_key("memory_used_bytes"));
}

/// A report in the 2.x user guide's layout (values chosen here): one
/// runtime using both NeuronCores of device 0, and its ECC counts.
const MONITOR_2X: &str = r#"{"neuron_runtime_data":[{"pid":4242,"neuron_runtime_tag":"4242","error":"","report":{"neuroncore_counters":{"period":1.0,"neuroncores_in_use":{"0":{"neuroncore_utilization":80},"1":{"neuroncore_utilization":40}},"error":""},"memory_used":{"period":1.0,"neuron_runtime_used_bytes":{"host":1000,"neuron_device":300,"usage_breakdown":{"neuroncore_memory_usage":{"0":{"constants":100,"model_code":50,"model_shared_scratchpad":0,"runtime_memory":0,"tensors":50},"1":{"constants":100}}}},"error":""}}}],"system_data":{"neuron_hw_counters":{"period":1.0,"neuron_devices":[{"neuron_device_index":0,"mem_ecc_corrected":2,"mem_ecc_uncorrected":0,"sram_ecc_uncorrected":1,"sram_ecc_corrected":0}],"error":""}},"instance_info":{"instance_type":"trn1.2xlarge","error":""},"neuron_hardware_info":{"neuron_device_count":1,"neuroncore_per_device_count":2,"error":""}}"#;

#[test]
fn monitor_values_reach_the_device_and_the_exporter() {
    use ai_hwaccel::telemetry::{Telemetry, merge_detected, metrics};
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), Some("neuron"));
    monitor_tools(bin.path(), MONITOR_2X);
    let t = std::time::Instant::now();
    let r = run(root.path(), bin.path());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        t.elapsed()
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let d = r.device("pci:0000:00:1e.0").unwrap();
    assert_eq!(d.utilization_percent, Some(60.0));
    assert_eq!(d.extra["memory_used_bytes"], "300");
    assert_eq!(d.extra["neuroncore_utilization_percent"], "0:80,1:40");
    assert_eq!(d.extra["neuron_monitor_mem_ecc_corrected"], "2");
    assert_eq!(d.extra["neuron_monitor_sram_ecc_uncorrected"], "1");
    assert_eq!(d.ecc_uncorrected_errors, None);
    let mut tel = Telemetry::default();
    merge_detected(&mut tel, &r);
    let s = tel.device(&d.id).unwrap();
    assert_eq!(s.utilization_ratio, Some(0.6));
    assert_eq!(s.memory_used_bytes, Some(300));
    let om = metrics::encode_openmetrics(&r, &tel, &metrics::Options::default());
    for line in [
        "ai_hwaccel_device_utilization_ratio{id=\"pci:0000:00:1e.0\"} 0.6",
        "ai_hwaccel_device_memory_used_bytes{id=\"pci:0000:00:1e.0\"} 300.0",
    ] {
        assert!(om.contains(line), "{line} missing from\n{om}");
    }
}

#[test]
fn a_broken_monitor_is_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), Some("neuron"));
    monitor_tools(bin.path(), "{\"neuron_runtime_data\":[{\"report\"");
    let r = run(root.path(), bin.path());
    assert_eq!(
        r.devices[0].memory_bytes,
        Some(32 * GIB),
        "neuron-ls facts stay"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("neuron-monitor")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn driverless_device_without_tool() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_root(root.path(), None);
    let r = run(root.path(), bin.path());
    let d = r.device("pci:0000:00:1e.0").unwrap();
    assert!(!d.available);
    assert_eq!(d.memory_bytes, None);
    assert!(!r.summary.has_accelerator);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..4000, flip in 0usize..4000, byte in 0u8..=255) {
        for (file, ..) in CASES {
            let b = support::damaged(std::fs::read(fixture(file)).unwrap(), cut, flip, byte);
            let _ = parse("neuron-ls", &b);
        }
        let mut j = DERIVED_JSON.as_bytes().to_vec();
        j.truncate(cut % (j.len() + 1));
        let _ = parse("neuron-ls-json", &j);
        for report in [
            std::fs::read(support::fixture(
                "neuron-monitor/all-smi__trn1.2xlarge__neuron-monitor-no-runtime.json",
            ))
            .unwrap(),
            MONITOR_2X.as_bytes().to_vec(),
        ] {
            let out = parse("neuron-monitor", &support::damaged(report, cut, flip, byte));
            // One changed byte makes a count or index of two digits at most.
            proptest::prop_assert!(out.devices.len() < 100, "{}", out.devices.len());
        }
    }
}
