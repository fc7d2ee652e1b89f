//! The NVML path against a real shared library: `tests/fake-nvml/fake_nvml.c`
//! built with the system C compiler into `libnvidia-ml.so.1` and loaded by
//! the backend exactly as the driver's library would be (dlopen, versioned
//! symbol lookup, struct layouts, MIG and NVLink enumeration). Each scenario
//! reports the values of a real capture (see the C file), and the tests
//! check the devices against those values.
#![allow(
    clippy::disallowed_methods,
    reason = "the test builds the fake library with the C compiler"
)]

use std::path::{Path, PathBuf};

use super::*;
use crate::model::Registry;
use crate::topology::Topology;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-nvml/fake_nvml.c");

/// A fake NVML built for `scenario` in its own directory (so parallel tests
/// never share a loaded library), or `None`, with the reason printed, when
/// no C compiler is available.
fn build(scenario: u32, dir: &Path) -> Option<PathBuf> {
    let out = dir.join("libnvidia-ml.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-O0", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-DSCENARIO={scenario}"))
        .arg("-o")
        .arg(&out)
        .arg(SOURCE)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} failed on {SOURCE}: {s}"),
        Err(e) => {
            eprintln!("skipped: no C compiler ({cc}: {e}) to build the fake NVML library");
            None
        }
    }
}

/// Detect with the fake library of `scenario` over `probe`.
fn detect_with(scenario: u32, probe: &FakeProbe) -> Option<BackendOutput> {
    let dir = tempfile::tempdir().unwrap();
    let lib = build(scenario, dir.path())?;
    let lib = lib.to_str().unwrap().to_string();
    Some(run(probe, &[lib.as_str()]))
}

fn native() -> FakeProbe {
    FakeProbe {
        native: true,
        ..Default::default()
    }
}

fn extra<'a>(d: &'a Device, key: &str) -> Option<&'a str> {
    d.extra.get(key).map(String::as_str)
}

const MIB: u64 = 1 << 20;

#[test]
fn h100_in_mig_mode() {
    let p = native().pci("0000:00:09.0", "2330", 1, Some("nvidia"));
    let Some(out) = detect_with(1, &p) else {
        return;
    };
    assert!(p.runs().is_empty(), "NVML answered: no tool runs");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 5, "the GPU and its 4 MIG devices");
    let g = &out.devices[0];
    assert_eq!(g.id, "pci:0000:00:09.0");
    assert_eq!(g.source, "nvml");
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-00000000-0000-0000-0000-000000000000")
    );
    assert_eq!(g.serial.as_deref(), Some("0000000000000"));
    assert_eq!(g.index, Some(0));
    assert_eq!(g.memory_bytes, Some(81_559 * MIB));
    assert_eq!(g.memory_free_bytes, Some(81_022 * MIB));
    // nvmlMemory_v2_t: the 479 MiB the driver reserves apart from the 59 MiB used.
    assert_eq!(extra(g, "memory_used_bytes"), Some("61865984"), "59 MiB");
    assert_eq!(
        extra(g, "memory_reserved_bytes"),
        Some("502267904"),
        "479 MiB"
    );
    assert_eq!(g.power_draw_watts, Some(71.27));
    assert_eq!(g.utilization_percent, None, "N/A in MIG mode");
    assert_eq!(g.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(g.architecture.as_deref(), Some("Hopper"));
    assert_eq!(g.driver_version.as_deref(), Some("590.48.01"));
    assert_eq!(extra(g, "cuda_driver_version"), Some("13.1"));
    assert_eq!(g.firmware_version.as_deref(), Some("96.00.A5.00.01"));
    assert_eq!(g.power_limit_watts, Some(700.0));
    assert_eq!(g.temperature_celsius, Some(42.0));
    assert_eq!(g.ecc_enabled, Some(true));
    assert_eq!(g.ecc_uncorrected_errors, Some(0));
    assert_eq!(extra(g, "persistence_mode"), Some("Enabled"));
    assert_eq!(extra(g, "compute_mode"), Some("Default"));
    assert_eq!(extra(g, "mig_mode"), Some("Enabled"));
    assert_eq!(extra(g, "minor_number"), Some("0"));
    let pci = g.pci.as_ref().unwrap();
    assert_eq!(
        (pci.vendor_id.as_str(), pci.device_id.as_str()),
        ("10de", "2330")
    );
    let link = pci.link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.current_width),
        (Some(32.0), Some(16)),
        "PCIe 5.0 x16"
    );
    assert_eq!(g.numa_node, Some(1), "joined from the PCI function");
    assert!(g.links.is_empty(), "NVLink queries fail in MIG mode");

    let migs = &out.devices[1..];
    let got: Vec<_> = migs
        .iter()
        .map(|m| {
            (
                m.partition.as_deref().unwrap_or(""),
                extra(m, "gpu_instance_id").unwrap_or(""),
                m.memory_bytes.unwrap() / MIB,
                m.memory_free_bytes.unwrap() / MIB,
                m.compute_units.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("3g.40gb", "2", 40_448, 40_423, 60),
            ("2g.20gb", "3", 20_096, 20_080, 32),
            ("1g.10gb", "9", 9_984, 9_976, 16),
            ("1g.10gb", "10", 9_984, 9_976, 16),
        ]
    );
    for (i, m) in migs.iter().enumerate() {
        assert_eq!(m.parent.as_deref(), Some("pci:0000:00:09.0"));
        assert_eq!(m.index, Some(i as u32));
        assert_eq!(
            m.id,
            format!(
                "pci:0000:00:09.0/mig-{}-0",
                extra(m, "gpu_instance_id").unwrap()
            )
        );
        assert_eq!(
            m.uuid.as_deref(),
            Some(format!("MIG-00000000-0000-0000-0000-00000000000{}", i + 1).as_str())
        );
        assert_eq!(m.numa_node, Some(1));
        assert_eq!(m.compute_capability.as_deref(), Some("9.0"));
    }
    assert_eq!(migs[0].name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
}

#[test]
fn hgx_h100_nvswitch_links_make_one_domain() {
    let buses = ["53", "64", "75", "86", "97", "a8", "b9", "ca"];
    let mut p = native();
    for (i, b) in buses.iter().enumerate() {
        p = p.pci(
            &format!("0000:{b}:00.0"),
            "2330",
            i32::from(i >= 4),
            Some("nvidia"),
        );
    }
    let Some(out) = detect_with(2, &p) else {
        return;
    };
    assert!(p.runs().is_empty(), "NVML answered: no tool runs");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 8);
    // No nvmlDeviceGetMemoryInfo_v2 (as before r510): v1's figures, and the
    // reserved memory unknown rather than zero.
    for d in &out.devices {
        assert_eq!(extra(d, "memory_reserved_bytes"), None, "{}", d.id);
        let used: u64 = extra(d, "memory_used_bytes").unwrap().parse().unwrap();
        assert_eq!(
            Some(used),
            d.memory_bytes.zip(d.memory_free_bytes).map(|(t, f)| t - f),
            "v1's used is total - free"
        );
    }
    let switches: Vec<(String, String, Option<u32>)> = (0x83..=0x86)
        .zip([5, 4, 4, 5])
        .map(|(bus, n)| {
            (
                format!("pci:0000:{bus:02x}:00.0"),
                "nvswitch".to_string(),
                Some(n),
            )
        })
        .collect();
    for (i, d) in out.devices.iter().enumerate() {
        assert_eq!(d.id, format!("pci:0000:{}:00.0", buses[i]));
        assert_eq!(d.index, Some(i as u32));
        assert_eq!(d.numa_node, Some(u32::from(i >= 4)));
        assert_eq!(extra(d, "minor_number"), Some(i.to_string().as_str()));
        assert_eq!(d.driver_version.as_deref(), Some("535.183.01"));
        assert_eq!(extra(d, "cuda_driver_version"), Some("12.2"));
        assert_eq!(extra(d, "mig_mode"), Some("Disabled"));
        let links: Vec<_> = d
            .links
            .iter()
            .map(|l| (l.peer.clone(), l.kind.clone(), l.count))
            .collect();
        assert_eq!(links, switches, "{}: 18 links to 4 NVSwitch chips", d.id);
    }
    assert_eq!(
        out.devices[0].uuid.as_deref(),
        Some("GPU-566e6f65-c38e-b12f-4824-6944218668b9")
    );
    assert_eq!(out.devices[0].serial.as_deref(), Some("1655022005478"));
    assert_eq!(out.devices[2].memory_free_bytes, Some(71_786 * MIB));

    // The topology built from these devices: every pair over NVSwitch, one domain.
    let mut devices = out.devices;
    for d in &mut devices {
        d.spec = crate::spec::by_name(&d.name).map(|e| e.to_ref());
    }
    let registry = Registry {
        devices,
        ..Default::default()
    };
    let topo = Topology::from_registry(&registry);
    assert_eq!(topo.links.len(), 28);
    assert!(
        topo.links
            .iter()
            .all(|l| l.link_type == "nvlink" && l.via.as_deref() == Some("nvswitch"))
    );
    assert_eq!(topo.domains.len(), 1);
    assert_eq!(topo.domains[0].len(), 8);
}

#[test]
fn nvml_init_failure_falls_back_to_nvidia_smi() {
    let p = native()
        .pci("0000:01:00.0", "20b2", 0, Some("nvidia"))
        .tool("nvidia-smi -q -x", super::XML_A100_MIG);
    let Some(out) = detect_with(3, &p) else {
        return;
    };
    assert_eq!(p.runs(), ["nvidia-smi -q -x"]);
    assert_eq!(
        out.devices.len(),
        5,
        "the A100 and its MIG instances, from nvidia-smi"
    );
    assert!(out.devices.iter().all(|d| d.source == "nvidia-smi"));
}

#[test]
fn pre_r319_library_uses_the_unversioned_entry_points() {
    let p = native().pci("0000:00:04.0", "15f8", 0, Some("nvidia"));
    let Some(out) = detect_with(4, &p) else {
        return;
    };
    assert!(p.runs().is_empty(), "NVML answered: no tool runs");
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.source, "nvml");
    assert_eq!(d.name, "Tesla P100-PCIE-16GB");
    assert_eq!(d.memory_bytes, Some(16_384 * MIB));
    assert_eq!(d.memory_free_bytes, Some(16_280 * MIB));
    assert_eq!(
        d.index,
        Some(0),
        "the position, when nvmlDeviceGetIndex is missing"
    );
    // Every fact whose entry point the library lacks stays unknown.
    assert_eq!(d.id, "nvidia:gpu0", "no PCI info: named by index");
    assert_eq!(
        (
            d.uuid.as_ref(),
            d.compute_capability.as_ref(),
            d.driver_version.as_ref()
        ),
        (None, None, None)
    );
    assert_eq!((d.ecc_enabled, d.power_limit_watts), (None, None));
    assert!(d.links.is_empty());
}

/// The NVML path and the `nvidia-smi -q` parser give the same device for the
/// machine both describe (the fake serves that capture's values): every fact
/// both sources carry agrees, so a planner sees one GPU whichever path ran.
#[test]
fn nvml_agrees_with_nvidia_smi_q_of_the_same_gpu() {
    let p = native().pci("0000:00:09.0", "2330", 0, Some("nvidia"));
    let Some(out) = detect_with(1, &p) else {
        return;
    };
    let text = include_bytes!(
        "../../../../tests/fixtures/nvidia-smi-q/linux-x86_64__nvidia-h100-mig__590.48.01__idle.txt"
    );
    let q = super::super::smi_q::parse(text);
    assert!(q.warnings.is_empty(), "{:?}", q.warnings);
    assert_eq!(q.devices.len(), out.devices.len());
    for (n, s) in out.devices.iter().zip(&q.devices) {
        assert_eq!(n.id, s.id);
        assert_eq!(n.parent, s.parent, "{}", n.id);
        assert_eq!(n.index, s.index, "{}", n.id);
        assert_eq!(n.memory_bytes, s.memory_bytes, "{}", n.id);
        assert_eq!(n.memory_free_bytes, s.memory_free_bytes, "{}", n.id);
        assert_eq!(n.compute_units, s.compute_units, "{}", n.id);
        assert_eq!(n.driver_version, s.driver_version, "{}", n.id);
        assert_eq!(n.ecc_enabled, s.ecc_enabled, "{}", n.id);
        for key in [
            "gpu_instance_id",
            "compute_instance_id",
            "cuda_driver_version",
        ] {
            assert_eq!(extra(n, key), extra(s, key), "{}: {key}", n.id);
        }
        if n.parent.is_none() {
            assert_eq!(n.name, s.name);
            assert_eq!(n.uuid, s.uuid);
            assert_eq!(n.serial, s.serial);
            assert_eq!(n.architecture, s.architecture);
            assert_eq!(n.firmware_version, s.firmware_version);
            assert_eq!(n.power_limit_watts, s.power_limit_watts);
            assert_eq!(n.temperature_celsius, s.temperature_celsius);
            assert_eq!(n.ecc_uncorrected_errors, s.ecc_uncorrected_errors);
            // Detection keeps the sysfs identity (class, subsystem as sysfs
            // has them); the ids and the link agree.
            let (np, sp) = (n.pci.as_ref().unwrap(), s.pci.as_ref().unwrap());
            assert_eq!(
                (&np.vendor_id, &np.device_id),
                (&sp.vendor_id, &sp.device_id)
            );
            assert_eq!(np.link, sp.link);
            for key in [
                "persistence_mode",
                "compute_mode",
                "mig_mode",
                "minor_number",
            ] {
                assert_eq!(extra(n, key), extra(s, key), "{key}");
            }
            // nvmlMemory_v2_t keeps the reserved memory apart, as -q does.
            for key in ["memory_used_bytes", "memory_reserved_bytes"] {
                assert!(extra(n, key).is_some(), "{key}");
                assert_eq!(extra(n, key), extra(s, key), "{key}");
            }
            assert_eq!(n.power_draw_watts, s.power_draw_watts);
            assert_eq!(n.utilization_percent, s.utilization_percent);
        }
    }
}

/// NVML's event API: the set is created, every GPU registered for Xid and
/// ECC events, the queued Xid read once with its GPU (PCI address, UUID)
/// and, on a MIG GPU, its instance; the next poll is empty.
#[test]
fn nvml_events_report_xids_once_with_their_gpu() {
    use crate::telemetry::nvml_events::NvmlEvents;
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = build(2, dir.path()) else {
        return;
    };
    let mut ev = NvmlEvents::open_with(&[lib.to_str().unwrap()]).unwrap();
    assert_eq!((ev.gpus(), ev.xid_gpus()), (8, 8));
    let got = ev.poll();
    assert_eq!(got.len(), 1, "{got:?}");
    let e = &got[0];
    assert_eq!(e.kind, "nvidia_xid");
    assert_eq!(e.code, Some(13));
    assert_eq!(e.source, "nvml");
    assert_eq!(e.pci_address.unwrap().to_string(), "0000:ca:00.0");
    assert!(
        e.message
            .ends_with("; GPU-7e78e6c8-c71c-66c7-9ded-f8836cecab32"),
        "{}",
        e.message
    );
    assert!(
        !e.message.contains("MIG"),
        "not attributable: {}",
        e.message
    );
    assert!(ev.poll().is_empty(), "delivered once");

    // MIG: the Xid names the GPU instance and compute instance.
    let dir = tempfile::tempdir().unwrap();
    let lib = build(1, dir.path()).unwrap();
    let mut ev = NvmlEvents::open_with(&[lib.to_str().unwrap()]).unwrap();
    let got = ev.poll();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].pci_address.unwrap().to_string(), "0000:00:09.0");
    assert!(
        got[0]
            .message
            .contains("MIG GPU instance 2, compute instance 0"),
        "{}",
        got[0].message
    );

    // Without the event API (pre-r319 entry points only) or without a
    // driver, opening fails with the reason.
    for (scenario, want) in [(4, "nvmlEventSetCreate"), (3, "nvmlInit")] {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(scenario, dir.path()).unwrap();
        let e = NvmlEvents::open_with(&[lib.to_str().unwrap()]).unwrap_err();
        assert!(e.contains(want), "{scenario}: {e}");
    }
}

/// `snapshot` on an NVML machine: NVML is a library, not a file or a tool a
/// replay could read again, so the recording keeps its answer, and the
/// replay (which never loads a library) gives the same devices: memory,
/// reserve, MIG devices and all. A recorded answer that is not NVML's is a
/// warning naming it, and the GPUs fall back to what the files show.
#[test]
fn a_snapshot_keeps_what_nvml_answered() {
    use crate::probe::{RecordingProbe, ReplayProbe};
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = build(1, dir.path()) else {
        return;
    };
    let p = native().pci("0000:00:09.0", "2330", 1, Some("nvidia"));
    let rec = RecordingProbe::new(p);
    let live = detect_using(&Context::new(&rec), &[lib.to_str().unwrap()]);
    assert_eq!(live.devices.len(), 5);
    let snap = dir.path().join("snap");
    rec.save(&snap, &[]).unwrap();
    let replay = ReplayProbe::open(&snap).unwrap();
    assert!(!replay.allows_native_libraries());
    let again = detect_using(&Context::new(&replay), &["/nonexistent/libnvidia-ml.so.1"]);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(
        serde_json::to_value(&again.devices).unwrap(),
        serde_json::to_value(&live.devices).unwrap()
    );
    assert_eq!(
        extra(&again.devices[0], "memory_reserved_bytes"),
        Some("502267904")
    );

    // A hostile recording: the answer's blob replaced by something else.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(snap.join("manifest.json")).unwrap()).unwrap();
    let blob = manifest["native"]["nvml"].as_str().unwrap().to_string();
    for bad in [&b"{\"gpus\": 7}"[..], b"\xff\xfe not json"] {
        std::fs::write(snap.join("blobs").join(&blob), bad).unwrap();
        let replay = ReplayProbe::open(&snap).unwrap();
        let out = detect_using(&Context::new(&replay), &[]);
        assert!(
            out.warnings
                .iter()
                .any(|w| w.contains("recorded NVML answer is unusable")),
            "{:?}",
            out.warnings
        );
    }
}
