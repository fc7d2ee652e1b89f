//! NVIDIA backend: the nvidia-smi parsers on every captured fixture (counts
//! and values read from the files), truncated/corrupted inputs, and
//! end-to-end detection over a fake sysfs root with a fake `nvidia-smi`.
#![allow(clippy::disallowed_methods, reason = "tests build fake roots")]

mod support;
use support::{FakePci, scattered};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::{Device, Family};
use ai_hwaccel::{DetectOptions, ProbeOptions, detect};

const MIB: u64 = 1_048_576;

fn fixtures(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The `devices` count of the corpus expect file of capture `name` in `dir`.
fn expect_devices(dir: &str, name: &str) -> Option<usize> {
    let p = fixtures("expect").join(dir).join(format!("{name}.json"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
    v["devices"].as_u64().map(|n| n as usize)
}

fn parse(fmt: &str, dir: &str, name: &str) -> ParseOutput {
    let bytes = std::fs::read(fixtures(dir).join(name)).unwrap();
    (format(fmt).unwrap().parse)(&bytes)
}

fn dev<'a>(out: &'a ParseOutput, id: &str) -> &'a Device {
    out.devices.iter().find(|d| d.id == id).unwrap_or_else(|| {
        panic!(
            "no {id} in {:?}",
            out.devices.iter().map(|d| &d.id).collect::<Vec<_>>()
        )
    })
}

/// GPUs and MIG instances per fixture; every fixture of the folder must be listed.
#[test]
fn every_fixture_parses_with_the_right_device_count() {
    let expected: BTreeMap<(&str, &str), usize> = [
        (("xml", "netdata-godplugin__a100-sxm4-mig.xml"), 3),
        (("xml", "netdata-godplugin__rtx-2080-win.xml"), 1),
        (("xml", "netdata-godplugin__rtx-3060.xml"), 1),
        (("xml", "netdata-godplugin__rtx-4090-driver-535.xml"), 1),
        (("xml", "netdata-godplugin__tesla-p100.xml"), 1),
        (("xml", "telegraf__a100-sxm4-v12.xml"), 5),
        (("xml", "telegraf__a10g.xml"), 1),
        (("xml", "telegraf__gtx-1070-ti.xml"), 1),
        (("xml", "telegraf__gtx-1660-ti.xml"), 1),
        (("xml", "telegraf__quadro-p2000-v12.xml"), 1),
        (("xml", "telegraf__quadro-p400.xml"), 1),
        (("xml", "telegraf__rtx-3060-v12.xml"), 1),
        (("xml", "telegraf__rtx-3080-v12.xml"), 1),
        (("xml", "telegraf__rtx-3080-v13.xml"), 1),
        (("xml", "telegraf__rtx-3090-v12.xml"), 1),
        (("xml", "telegraf__rtx-4000-sff-ada-v13.xml"), 1),
        (("xml", "telegraf__tesla-t4.xml"), 1),
        (
            (
                "csv",
                "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.csv",
            ),
            1,
        ),
        (
            (
                "csv",
                "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.csv",
            ),
            1,
        ),
        (
            (
                "csv",
                "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05__idle.csv",
            ),
            1,
        ),
        (
            (
                "csv",
                "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.csv",
            ),
            1,
        ),
        (
            ("csv", "linux-x86_64__nvidia-h100-mig__590.48.01__idle.csv"),
            1,
        ),
        (
            ("csv", "linux-x86_64__nvidia-h200-mig__590.48.01__idle.csv"),
            1,
        ),
        (("csv", "linux-x86_64__nvidia-h200__590.48.01__idle.csv"), 1),
        (("csv", "linux-x86_64__nvidia-l40s__595.80__idle.csv"), 1),
        (("csv", "netdata-godplugin__tesla-p100.csv"), 1),
        (
            (
                "csv",
                "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__idle.csv",
            ),
            1,
        ),
        (
            (
                "csv",
                "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__idle.csv",
            ),
            1,
        ),
        (
            (
                "topo",
                "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
            ),
            1,
        ),
        (
            (
                "topo",
                "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt",
            ),
            1,
        ),
        (
            (
                "topo",
                "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt",
            ),
            1,
        ),
        (
            ("topo", "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"),
            1,
        ),
        (("topo", "linux-x86_64__nvidia-h100-mig__590.48.01.txt"), 1),
        (("topo", "linux-x86_64__nvidia-h200-mig__590.48.01.txt"), 1),
        (("topo", "linux-x86_64__nvidia-h200__590.48.01.txt"), 1),
        (("topo", "linux-x86_64__nvidia-l40s__595.80.txt"), 1),
        (("xml", "icsw__tesla-k20m__340.24__dtd-v6.xml"), 1),
        (
            ("xml", "check-nvidia-smi__4x-tesla-m10__390.94__dtd-v9.xml"),
            4,
        ),
        (
            (
                "csv",
                "unsloth-pr-10703__nvidia-gb10-dgx-spark__memory-n-a.csv",
            ),
            1,
        ),
        (("topo", "thunderkittens-167__8x-h100-nv18.txt"), 8),
        (("topo", "go-gpuallocator-17__8x-rtx-4090-pcie.txt"), 8),
        (
            (
                "topo",
                "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt",
            ),
            0,
        ),
        (
            (
                "topo",
                "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt",
            ),
            1,
        ),
    ]
    .into_iter()
    .collect();
    for kind in ["xml", "csv", "topo"] {
        let dir = format!("nvidia-smi-{kind}");
        for path in files(&dir) {
            let name = path.file_name().unwrap().to_str().unwrap();
            // A capture added later needs no entry here: its count is the
            // `devices` of its corpus expect file (tests/corpus.rs).
            let want = expected
                .get(&(kind, name))
                .copied()
                .or_else(|| expect_devices(&dir, name))
                .unwrap_or_else(|| panic!("{dir}/{name} has no expected count"));
            let out = (format(&dir).unwrap().parse)(&std::fs::read(&path).unwrap());
            assert_eq!(out.devices.len(), want, "{dir}/{name}: {:?}", out.warnings);
            if want == 0 {
                assert!(
                    !out.warnings.is_empty(),
                    "{dir}/{name}: an error output must warn"
                );
            } else if name == "llm-action__8x-h800-nv8-4nic-clipped.txt" {
                // Its author's terminal clipped the CPU Affinity column.
                assert!(
                    out.warnings.iter().all(|w| w.contains("is not a CPU list")),
                    "{dir}/{name}: {:?}",
                    out.warnings
                );
            } else {
                assert!(out.warnings.is_empty(), "{dir}/{name}: {:?}", out.warnings);
            }
            for d in &out.devices {
                assert_eq!(
                    (d.vendor.as_str(), d.family),
                    ("nvidia", Family::Gpu),
                    "{name}"
                );
                assert!(
                    d.memory_bytes != Some(0),
                    "{name}: unknown memory must be None, not 0"
                );
            }
        }
    }
}

#[test]
fn xml_a100_80gb_with_four_mig_instances() {
    let out = parse(
        "nvidia-smi-xml",
        "nvidia-smi-xml",
        "telegraf__a100-sxm4-v12.xml",
    );
    let g = dev(&out, "pci:0000:01:00.0");
    assert_eq!(g.name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(g.pci_address.unwrap().to_string(), "0000:01:00.0");
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-513536b6-7d19-9063-b049-1e69664bb298")
    );
    assert_eq!(g.serial.as_deref(), Some("1650522003820"));
    assert_eq!(g.memory_bytes, Some(81_920 * MIB));
    assert_eq!(g.driver_version.as_deref(), Some("535.54.03"));
    assert_eq!(g.extra["cuda_driver_version"], "12.2");
    assert_eq!(g.extra["mig_mode"], "Enabled");
    assert_eq!(g.extra["minor_number"], "1");
    assert_eq!(g.extra["persistence_mode"], "Disabled");
    assert_eq!(g.extra["compute_mode"], "Default");
    assert_eq!(g.firmware_version.as_deref(), Some("92.00.36.00.02"));
    assert_eq!(g.architecture.as_deref(), Some("Ampere"));
    assert_eq!(g.temperature_celsius, Some(27.0));
    assert_eq!(g.ecc_enabled, Some(true));
    assert_eq!(g.ecc_uncorrected_errors, Some(0));
    assert_eq!(g.source, "nvidia-smi");
    let link = g.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.current_width),
        (Some(16.0), Some(16))
    );
    let migs: Vec<&Device> = out.devices.iter().filter(|d| d.parent.is_some()).collect();
    assert_eq!(migs.len(), 4);
    let gis: Vec<&str> = migs
        .iter()
        .map(|m| m.extra["gpu_instance_id"].as_str())
        .collect();
    assert_eq!(gis, ["3", "4", "5", "6"]);
    for m in migs {
        assert_eq!(m.parent.as_deref(), Some("pci:0000:01:00.0"));
        assert!(m.id.starts_with("pci:0000:01:00.0/mig-"), "{}", m.id);
        assert_eq!(m.memory_bytes, Some(19_968 * MIB));
        assert_eq!(m.memory_free_bytes, Some(19_955 * MIB));
        assert_eq!(m.compute_units, Some(14));
        assert_eq!(
            m.pci_address, None,
            "a MIG instance is not its own PCI function"
        );
        assert_eq!(m.driver_version.as_deref(), Some("535.54.03"));
    }
    assert_eq!(dev(&out, "pci:0000:01:00.0/mig-3-0").index, Some(0));
}

#[test]
fn xml_values_across_dtd_versions() {
    let a100 = parse(
        "nvidia-smi-xml",
        "nvidia-smi-xml",
        "netdata-godplugin__a100-sxm4-mig.xml",
    );
    let g = dev(&a100, "pci:0000:00:04.0");
    assert_eq!(g.name, "NVIDIA A100-SXM4-40GB");
    assert_eq!(g.memory_bytes, Some(40_960 * MIB));
    assert_eq!(g.memory_free_bytes, Some(40_315 * MIB));
    assert_eq!(g.power_limit_watts, Some(400.0));
    assert_eq!(g.firmware_version.as_deref(), Some("92.00.45.00.03"));
    assert_eq!(
        g.ecc_uncorrected_errors, None,
        "every volatile counter is N/A"
    );
    let info = g.pci.as_ref().unwrap();
    assert_eq!(
        (info.vendor_id.as_str(), info.device_id.as_str()),
        ("10de", "20b0")
    );
    assert_eq!(info.subsystem_device_id.as_deref(), Some("134f"));
    let mig = dev(&a100, "pci:0000:00:04.0/mig-2-0");
    assert_eq!(
        (mig.memory_bytes, mig.compute_units),
        (Some(19_968 * MIB), Some(42))
    );

    let p100 = parse(
        "nvidia-smi-xml",
        "nvidia-smi-xml",
        "netdata-godplugin__tesla-p100.xml",
    );
    let g = &p100.devices[0];
    assert_eq!(g.name, "Tesla P100-PCIE-16GB");
    assert_eq!(
        g.ecc_uncorrected_errors,
        Some(0),
        "v11 volatile/double_bit/total"
    );
    assert_eq!(g.power_limit_watts, Some(250.0));

    let old = parse(
        "nvidia-smi-xml",
        "nvidia-smi-xml",
        "telegraf__gtx-1070-ti.xml",
    );
    let g = &old.devices[0];
    assert_eq!(
        (g.id.as_str(), g.name.as_str()),
        ("pci:0000:01:00.0", "GeForce GTX 1070 Ti")
    );
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665")
    );
    assert_eq!(g.memory_bytes, Some(4_096 * MIB));
    assert_eq!(g.temperature_celsius, Some(39.0));
    assert_eq!(
        (g.driver_version.as_deref(), g.power_limit_watts),
        (None, None),
        "v10 has neither"
    );

    let v13 = parse(
        "nvidia-smi-xml",
        "nvidia-smi-xml",
        "telegraf__rtx-3080-v13.xml",
    );
    let g = &v13.devices[0];
    assert_eq!(g.pci_address.unwrap().to_string(), "0000:0c:00.0");
    assert_eq!(g.serial, None, "REDACTED is not a serial");
    assert_eq!(g.driver_version.as_deref(), Some("595.58.03"));
    assert_eq!(g.extra["cuda_driver_version"], "13.2");
    assert_eq!(g.memory_bytes, Some(10_240 * MIB));
    assert_eq!(g.memory_free_bytes, Some(660 * MIB));
    assert_eq!(g.extra.get("mig_mode"), None, "N/A mig mode is unknown");
}

#[test]
fn csv_values_by_header_name() {
    let h100 = parse(
        "nvidia-smi-csv",
        "nvidia-smi-csv",
        "linux-x86_64__nvidia-h100-mig__590.48.01__idle.csv",
    );
    let g = dev(&h100, "pci:0000:00:09.0");
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(g.memory_bytes, Some(81_559 * MIB));
    assert_eq!(g.memory_free_bytes, Some(81_022 * MIB));
    assert_eq!(g.extra["memory_used_bytes"], (59 * MIB).to_string());
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-00000000-0000-0000-0000-000000000000")
    );
    assert_eq!(g.driver_version.as_deref(), Some("590.48.01"));
    assert_eq!(g.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(g.firmware_version.as_deref(), Some("96.00.A5.00.01"));
    assert_eq!(g.power_limit_watts, Some(700.0));
    assert_eq!(g.temperature_celsius, Some(42.0));
    assert_eq!(
        (g.ecc_enabled, g.ecc_uncorrected_errors),
        (Some(true), Some(0))
    );
    assert_eq!(g.extra["mig_mode"], "Enabled");
    assert_eq!(g.extra["persistence_mode"], "Enabled");
    assert_eq!(g.index, Some(0));
    let info = g.pci.as_ref().unwrap();
    assert_eq!(info.device_id, "2330");
    let link = info.link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.max_width),
        (Some(32.0), Some(16))
    );

    let h200 = parse(
        "nvidia-smi-csv",
        "nvidia-smi-csv",
        "linux-x86_64__nvidia-h200__590.48.01__idle.csv",
    );
    assert_eq!(h200.devices[0].id, "pci:0000:83:00.0");
    assert_eq!(h200.devices[0].name, "NVIDIA H200");

    let p100 = parse(
        "nvidia-smi-csv",
        "nvidia-smi-csv",
        "netdata-godplugin__tesla-p100.csv",
    );
    let g = &p100.devices[0];
    assert_eq!(
        g.id, "nvidia:GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6",
        "no bus id column: named by UUID"
    );
    assert_eq!(g.memory_bytes, None, "no memory.total column");
    assert_eq!(
        g.memory_free_bytes,
        Some(16_280 * MIB),
        "bare number in the header's unit"
    );
    assert_eq!(g.temperature_celsius, Some(37.0));

    let reordered =
        b"uuid, memory.total [MiB], name\nGPU-1, 1024 MiB, Test GPU\nGPU-2, [N/A], Other\n";
    let out = (format("nvidia-smi-csv").unwrap().parse)(reordered);
    assert_eq!(out.devices[0].name, "Test GPU");
    assert_eq!(out.devices[0].memory_bytes, Some(1024 * MIB));
    assert_eq!(out.devices[1].memory_bytes, None);
    let bad = (format("nvidia-smi-csv").unwrap().parse)(b"No devices were found\n");
    assert!(bad.devices.is_empty() && !bad.warnings.is_empty());
}

#[test]
fn topo_affinity_and_error_outputs() {
    let out = parse(
        "nvidia-smi-topo",
        "nvidia-smi-topo",
        "linux-x86_64__nvidia-h200__590.48.01.txt",
    );
    let g = &out.devices[0];
    assert_eq!(
        (g.id.as_str(), g.index, g.numa_node),
        ("gpu0", Some(0), Some(0))
    );
    assert_eq!(g.extra["cpu_affinity"], "0-23");
    assert!(g.links.is_empty(), "one GPU has no peers");
    let l40s = parse(
        "nvidia-smi-topo",
        "nvidia-smi-topo",
        "linux-x86_64__nvidia-l40s__595.80.txt",
    );
    assert_eq!(l40s.devices[0].extra["cpu_affinity"], "0-7");
    let win = parse(
        "nvidia-smi-topo",
        "nvidia-smi-topo",
        "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt",
    );
    assert_eq!(
        (
            win.devices[0].numa_node,
            win.devices[0].extra.get("cpu_affinity")
        ),
        (None, None)
    );
    let err = parse(
        "nvidia-smi-topo",
        "nvidia-smi-topo",
        "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt",
    );
    assert!(
        err.warnings[0].contains("Option -m is missing its value"),
        "{:?}",
        err.warnings
    );
}

fn all_fixture_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = Vec::new();
    for (fmt, dir) in [
        ("nvidia-smi-xml", "nvidia-smi-xml"),
        ("nvidia-smi-csv", "nvidia-smi-csv"),
        ("nvidia-smi-topo", "nvidia-smi-topo"),
    ] {
        for p in files(dir) {
            v.push((fmt, std::fs::read(p).unwrap()));
        }
    }
    v
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn truncated_fixtures_never_panic(which in 0usize..1000, cut in 0.0f64..1.0) {
        let inputs = all_fixture_inputs();
        let (fmt, bytes) = &inputs[which % inputs.len()];
        let n = (bytes.len() as f64 * cut) as usize;
        let _ = (format(fmt).unwrap().parse)(&bytes[..n]);
    }

    #[test]
    fn corrupted_fixtures_never_panic(
        which in 0usize..1000,
        edits in proptest::collection::vec((0.0f64..1.0, proptest::num::u8::ANY), 1..16),
    ) {
        let inputs = all_fixture_inputs();
        let (fmt, bytes) = &inputs[which % inputs.len()];
        let _ = (format(fmt).unwrap().parse)(&scattered(bytes, &edits));
    }
}

// ---------------------------------------------------------------------------
// End to end: fake sysfs root + fake nvidia-smi on the tool path.

/// A PCI function shaped like `roots/make-roots.sh` makes them.
fn mkpci(root: &Path, addr: &str, device: &str, numa: u32, driver: &str) {
    let numa = Some(numa as i32);
    let (vendor, class, driver) = ("10de", "030200", Some(driver));
    FakePci {
        vendor,
        device,
        class,
        driver,
        numa,
        link: true,
    }
    .write(root, addr);
}

fn fake_smi(bin: &Path, xml: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let p = bin.join("nvidia-smi");
    let body = format!(
        "#!/bin/sh\nif [ \"$1 $2\" = \"-q -x\" ]; then cat '{}'; exit 0; fi\necho \"unexpected: $*\" >&2; exit 2\n",
        xml.display()
    );
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn e2e(env: &[(&str, &str)]) -> (ai_hwaccel::Registry, ParseOutput) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    mkpci(&root, "0000:01:00.0", "20b2", 1, "nvidia");
    let xml = fixtures("nvidia-smi-xml").join("telegraf__a100-sxm4-v12.xml");
    fake_smi(&bin, &xml);
    let opts = ProbeOptions {
        root,
        tool_path: Some(vec![bin]),
        env: Some(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..ProbeOptions::default()
    };
    let reg = detect(&opts, &DetectOptions::default());
    let parsed = (format("nvidia-smi-xml").unwrap().parse)(&std::fs::read(xml).unwrap());
    (reg, parsed)
}

#[test]
fn detection_with_fake_nvidia_smi_matches_the_parser() {
    let (reg, parsed) = e2e(&[]);
    let nv: Vec<&Device> = reg
        .devices
        .iter()
        .filter(|d| d.vendor == "nvidia")
        .collect();
    assert_eq!(nv.len(), parsed.devices.len(), "{:?}", reg.warnings);
    for p in &parsed.devices {
        let d = reg
            .device(&p.id)
            .unwrap_or_else(|| panic!("{} missing", p.id));
        assert_eq!(
            (&d.name, d.memory_bytes, &d.uuid),
            (&p.name, p.memory_bytes, &p.uuid)
        );
        assert_eq!(
            (&d.parent, &d.partition, d.compute_units),
            (&p.parent, &p.partition, p.compute_units)
        );
        assert_eq!(
            d.numa_node,
            Some(1),
            "{}: NUMA node joined from sysfs",
            d.id
        );
        assert!(d.available, "{}", d.id);
    }
    let g = reg.device("pci:0000:01:00.0").unwrap();
    assert_eq!(g.source, "nvidia-smi+pci-sysfs");
    assert_eq!(g.driver.as_deref(), Some("nvidia"));
    assert_eq!(g.pci.as_ref().unwrap().device_id, "20b2", "sysfs identity");
    assert_eq!(g.driver_version.as_deref(), Some("535.54.03"));
    assert!(
        reg.warnings.iter().all(|w| w.backend != "nvidia"),
        "{:?}",
        reg.warnings
    );
}

#[test]
fn cuda_visible_devices_hides_but_keeps_devices() {
    let (reg, _) = e2e(&[("CUDA_VISIBLE_DEVICES", "1")]);
    let g = reg.device("pci:0000:01:00.0").unwrap();
    assert!(!g.available);
    assert_eq!(
        g.unavailable_reason.as_deref(),
        Some("hidden by CUDA_VISIBLE_DEVICES")
    );
    assert_eq!(
        reg.devices.iter().filter(|d| d.vendor == "nvidia").count(),
        5
    );
    assert!(
        reg.devices
            .iter()
            .filter(|d| d.vendor == "nvidia")
            .all(|d| !d.available)
    );

    let (reg, _) = e2e(&[("CUDA_VISIBLE_DEVICES", "GPU-513536b6")]);
    assert!(
        reg.devices
            .iter()
            .filter(|d| d.vendor == "nvidia")
            .all(|d| d.available)
    );
    let (reg, _) = e2e(&[("NVIDIA_VISIBLE_DEVICES", "none")]);
    let g = reg.device("pci:0000:01:00.0").unwrap();
    assert_eq!(
        g.unavailable_reason.as_deref(),
        Some("hidden by NVIDIA_VISIBLE_DEVICES")
    );
}

#[test]
fn without_nvidia_smi_the_bound_gpu_says_what_is_missing() {
    let root = fixtures("roots/two-socket-pci");
    let opts = ProbeOptions {
        root,
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    };
    let reg = detect(&opts, &DetectOptions::default());
    let bound = reg.device("pci:0000:1b:00.0").unwrap();
    assert!(
        bound.extra["missing"].contains("nvidia-smi"),
        "{:?}",
        bound.extra
    );
    assert!(bound.available);
    let driverless = reg.device("pci:0000:3b:00.0").unwrap();
    assert_eq!(
        driverless.extra.get("missing"),
        None,
        "left to the pci backend"
    );
    assert_eq!(
        driverless.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
}
