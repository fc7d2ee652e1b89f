//! Telemetry, exposition, labels and events on real sysfs captures
//! (`tests/fixtures/sysfs-gpu-telemetry`, LACT's snapshots of real cards;
//! provenance in SOURCES.md) placed in fake roots.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ai_hwaccel::model::{Device, Family, Registry};
use ai_hwaccel::telemetry::events::{AlertRule, EventKind, Observation, diff};
use ai_hwaccel::telemetry::labels::{LabelOptions, is_valid_label, node_labels};
use ai_hwaccel::telemetry::metrics::{Options, encode_openmetrics, to_text_004};
use ai_hwaccel::telemetry::{DeviceSample, Telemetry, sample_with};
use ai_hwaccel::{LiveProbe, ProbeOptions};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs-gpu-telemetry")
        .join(rel)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A fake root holding one capture's `cardN` under `/sys/class/drm`.
fn root_with(capture: &str, card: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_tree(
        &fixture(&format!("{capture}/{card}")),
        &t.path().join("sys/class/drm").join(card),
    );
    t
}

fn gpu(id: &str, vendor: &str, name: &str) -> Device {
    let mut d = Device::new(id, name, vendor, Family::Gpu, "test");
    d.pci_address = id.strip_prefix("pci:").and_then(|a| a.parse().ok());
    d
}

fn registry(devices: Vec<Device>) -> Registry {
    let mut r = Registry {
        devices,
        ..Registry::default()
    };
    r.refresh_summary();
    r
}

fn sample(capture: &str, card: &str, id: &str, vendor: &str) -> DeviceSample {
    let root = root_with(capture, card);
    let probe = LiveProbe::new(ProbeOptions {
        root: root.path().to_path_buf(),
        ..ProbeOptions::default()
    });
    let r = registry(vec![gpu(id, vendor, "GPU")]);
    let t = sample_with(&probe, &r, &["libnvidia-ml-absent.so.1"]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    t.device(id)
        .unwrap_or_else(|| panic!("no sample of {id}: {:?}", t.devices))
        .clone()
}

#[test]
fn amdgpu_rdna3_discrete() {
    let s = sample("lact__amd-rx7900xtx", "card0", "pci:0000:03:00.0", "amd");
    assert_eq!(s.utilization_ratio, Some(0.03));
    assert_eq!(s.temperatures_celsius["edge"], 53.0);
    assert_eq!(s.temperatures_celsius["junction"], 61.0);
    assert_eq!(s.temperatures_celsius["mem"], 68.0);
    assert_eq!(s.power_watts, Some(68.0));
    assert_eq!(s.power_limit_watts, Some(290.0));
    assert_eq!(s.clocks_hertz["graphics"], 31e6);
    assert_eq!(s.clocks_hertz["memory"], 1249e6);
    assert_eq!(s.pcie_link_speed_gts, Some(16.0));
    assert_eq!(s.pcie_link_width, Some(16));
    // Not in this capture: unknown, not zero.
    assert_eq!(s.memory_used_bytes, None);
    assert_eq!(s.ecc_corrected_total, None);
    assert_eq!(s.throttle_reasons, None);
    assert!(s.source.contains("hwmon"), "{}", s.source);
}

#[test]
fn amdgpu_polaris_and_apu() {
    let s = sample("lact__amd-rx580", "card0", "pci:0000:09:00.0", "amd");
    assert_eq!(s.utilization_ratio, Some(0.11));
    assert_eq!(s.memory_utilization_ratio, Some(0.02));
    assert_eq!(s.memory_used_bytes, Some(536_870_912));
    assert_eq!(s.memory_total_bytes, Some(4_294_967_296));
    assert_eq!(s.memory_free_bytes, Some(4_294_967_296 - 536_870_912));
    assert_eq!(s.power_watts, Some(41.045));
    assert_eq!(s.power_limit_watts, Some(155.0));
    assert_eq!(s.memory_used_ratio(), Some(0.125));

    // Phoenix APU: both power1_average and power1_input; the average wins
    // (what rocm-smi reports); no power cap.
    let s = sample("lact__amd-phoenix", "card1", "pci:0000:64:00.0", "amd");
    assert_eq!(s.power_watts, Some(3.103));
    assert_eq!(s.power_limit_watts, None);
    assert_eq!(s.memory_used_bytes, Some(1_272_893_440));
    assert_eq!(s.temperatures_celsius["edge"], 25.0);
}

#[test]
fn intel_xe_and_i915() {
    let s = sample("lact__intel-b580", "card1", "pci:0000:09:00.0", "intel");
    assert_eq!(s.power_limit_watts, Some(190.0));
    assert_eq!(s.energy_joules, Some(11_031.745_544));
    assert_eq!(s.temperatures_celsius["pkg"], 54.0);
    assert_eq!(s.throttle_reasons, Some(vec![]), "reason files all 0");
    assert_eq!(s.pcie_link_speed_gts, Some(2.5));

    let s = sample(
        "lact__intel-a380-i915",
        "card1",
        "pci:0000:0b:00.0",
        "intel",
    );
    assert_eq!(s.power_limit_watts, Some(55.0), "i915 power1_max (PL1)");
    assert_eq!(s.energy_joules, Some(25_637.161_804));
    assert_eq!(s.temperatures_celsius["temp1"], 55.0);
    assert_eq!(s.throttle_reasons, Some(vec![]));
}

#[test]
fn throttle_reason_files_that_say_one_are_reported() {
    let root = root_with("lact__intel-a380-i915", "card1");
    let gt = root.path().join("sys/class/drm/card1/gt/gt0");
    std::fs::write(gt.join("throttle_reason_pl1"), "1\n").unwrap();
    std::fs::write(gt.join("throttle_reason_thermal"), "1\n").unwrap();
    let probe = LiveProbe::new(ProbeOptions {
        root: root.path().to_path_buf(),
        ..ProbeOptions::default()
    });
    let r = registry(vec![gpu("pci:0000:0b:00.0", "intel", "Arc A380")]);
    let t = sample_with(&probe, &r, &[]);
    assert_eq!(
        t.devices[0].throttle_reasons,
        Some(vec!["pl1".to_string(), "thermal".to_string()])
    );
}

#[test]
fn devices_not_in_the_registry_are_not_sampled_and_detection_fills_the_rest() {
    let root = root_with("lact__amd-rx580", "card0");
    let probe = LiveProbe::new(ProbeOptions {
        root: root.path().to_path_buf(),
        ..ProbeOptions::default()
    });
    // A Gaudi device only a vendor tool knows: its detected values carry over.
    let mut hl = Device::new(
        "pci:0000:b3:00.0",
        "HL-225",
        "habana",
        Family::AiAsic,
        "hl-smi",
    );
    hl.memory_bytes = Some(100);
    hl.memory_free_bytes = Some(40);
    hl.temperature_celsius = Some(31.0);
    hl.power_limit_watts = Some(600.0);
    let r = registry(vec![hl]);
    let t = sample_with(&probe, &r, &[]);
    assert_eq!(t.devices.len(), 1, "{:?}", t.devices);
    let s = &t.devices[0];
    assert_eq!(s.device_id, "pci:0000:b3:00.0");
    assert_eq!(s.memory_used_bytes, Some(60));
    assert_eq!(s.temperatures_celsius["gpu"], 31.0);
    assert_eq!(s.power_limit_watts, Some(600.0));
    assert_eq!(s.source, "detection");
}

#[test]
fn used_beyond_total_is_a_warning_not_a_value() {
    let root = root_with("lact__amd-rx580", "card0");
    let dev = root.path().join("sys/class/drm/card0/device");
    std::fs::write(dev.join("mem_info_vram_used"), "99999999999999\n").unwrap();
    let probe = LiveProbe::new(ProbeOptions {
        root: root.path().to_path_buf(),
        ..ProbeOptions::default()
    });
    let r = registry(vec![gpu("pci:0000:09:00.0", "amd", "RX 580")]);
    let t = sample_with(&probe, &r, &[]);
    assert_eq!(t.devices[0].memory_used_bytes, None);
    assert!(
        t.warnings[0].message.contains("mem_info_vram_used"),
        "{:?}",
        t.warnings
    );
}

fn rx580_telemetry() -> (Registry, Telemetry) {
    let root = root_with("lact__amd-rx580", "card0");
    let probe = LiveProbe::new(ProbeOptions {
        root: root.path().to_path_buf(),
        ..ProbeOptions::default()
    });
    let mut d = gpu("pci:0000:09:00.0", "amd", "Radeon RX 580");
    d.memory_bytes = Some(4_294_967_296);
    d.driver_version = Some("6.8.0".to_string());
    let r = registry(vec![d]);
    let t = sample_with(&probe, &r, &[]);
    (r, t)
}

#[test]
fn exposition_has_the_sampled_series_and_no_unknown_ones() {
    let (r, t) = rx580_telemetry();
    let om = encode_openmetrics(
        &r,
        &t,
        &Options {
            up: true,
            age_seconds: Some(1.5),
            ..Options::default()
        },
    );
    assert!(om.ends_with("# EOF\n"));
    for line in [
        "ai_hwaccel_up 1.0",
        "ai_hwaccel_collection_age_seconds 1.5",
        "ai_hwaccel_device_memory_used_bytes{id=\"pci:0000:09:00.0\"} 536870912.0",
        "ai_hwaccel_device_utilization_ratio{id=\"pci:0000:09:00.0\"} 0.11",
        "ai_hwaccel_device_power_watts{id=\"pci:0000:09:00.0\"} 41.045",
        "ai_hwaccel_device_power_limit_watts{id=\"pci:0000:09:00.0\"} 155.0",
        "ai_hwaccel_device_temperature_celsius{id=\"pci:0000:09:00.0\",sensor=\"edge\"} 44.0",
        "ai_hwaccel_device_clock_hertz{id=\"pci:0000:09:00.0\",domain=\"memory\"} 1750000000.0",
    ] {
        assert!(om.lines().any(|l| l == line), "missing {line:?} in\n{om}");
    }
    assert!(om.contains("ai_hwaccel_device_info{id=\"pci:0000:09:00.0\",vendor=\"amd\",family=\"gpu\",name=\"Radeon RX 580\",pci_address=\"0000:09:00.0\",driver_version=\"6.8.0\"} 1.0"), "{om}");
    // Unknown values are absent series, not zeros.
    for absent in [
        "ai_hwaccel_device_energy_joules_total{",
        "ai_hwaccel_device_ecc_errors_total{",
        "ai_hwaccel_device_throttled{",
        "DCGM_FI_DEV",
    ] {
        assert!(!om.contains(absent), "{absent} should be absent:\n{om}");
    }
    let text = to_text_004(&om);
    assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
    assert!(
        text.contains("# TYPE ai_hwaccel_collections_total counter"),
        "{text}"
    );
    assert!(text.contains("ai_hwaccel_collections_total 0.0"), "{text}");
}

#[test]
fn dcgm_names_for_nvidia() {
    let mut d = gpu("pci:0000:3b:00.0", "nvidia", "NVIDIA H100 80GB HBM3");
    d.index = Some(0);
    d.uuid = Some("GPU-5c3e".to_string());
    let r = registry(vec![d]);
    let mut s = DeviceSample::new("pci:0000:3b:00.0", "nvml");
    s.utilization_ratio = Some(0.87);
    s.memory_used_bytes = Some(3 << 30);
    s.power_watts = Some(512.25);
    s.clocks_hertz.insert("sm".into(), 1980e6);
    s.temperatures_celsius.insert("gpu".into(), 61.0);
    let t = Telemetry {
        devices: vec![s],
        ..Telemetry::default()
    };
    let om = encode_openmetrics(
        &r,
        &t,
        &Options {
            dcgm: true,
            hostname: Some("node-1".into()),
            ..Options::default()
        },
    );
    let labels = "gpu=\"0\",UUID=\"GPU-5c3e\",pci_bus_id=\"00000000:3B:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"";
    for (name, v) in [
        ("DCGM_FI_DEV_GPU_UTIL", "87.0"),
        ("DCGM_FI_DEV_FB_USED", "3072.0"),
        ("DCGM_FI_DEV_POWER_USAGE", "512.25"),
        ("DCGM_FI_DEV_SM_CLOCK", "1980.0"),
        ("DCGM_FI_DEV_GPU_TEMP", "61.0"),
    ] {
        let line = format!("{name}{{{labels}}} {v}");
        assert!(om.lines().any(|l| l == line), "missing {line}\n{om}");
    }
}

#[test]
fn labels_are_valid_and_say_what_gfd_says() {
    let mut devices = Vec::new();
    for i in 0..8u8 {
        let mut d = gpu(
            &format!("pci:0000:{:02x}:00.0", 0x18 + i),
            "nvidia",
            "NVIDIA H100 80GB HBM3",
        );
        d.memory_bytes = Some(85_520_809_984);
        d.architecture = Some("Hopper".into());
        d.compute_capability = Some("9.0".into());
        d.driver_version = Some("550.54.15".into());
        d.extra.insert("cuda_driver_version".into(), "12.4".into());
        devices.push(d);
    }
    let r = registry(devices);
    let l = node_labels(&r, &LabelOptions::default());
    let get = |k: &str| l.get(&format!("ai-hwaccel.io/{k}")).map(String::as_str);
    assert_eq!(get("accelerator.count"), Some("8"));
    assert_eq!(get("accelerator.product"), Some("NVIDIA-H100-80GB-HBM3"));
    assert_eq!(
        get("accelerator.memory"),
        Some("81559"),
        "MiB, as GFD's gpu.memory"
    );
    assert_eq!(get("accelerator.architecture"), Some("hopper"));
    assert_eq!(get("accelerator.compute.major"), Some("9"));
    assert_eq!(get("accelerator.compute.minor"), Some("0"));
    assert_eq!(get("driver.major"), Some("550"));
    assert_eq!(get("driver.minor"), Some("54"));
    assert_eq!(get("driver.rev"), Some("15"));
    assert_eq!(get("partition.strategy"), Some("none"));
    assert_eq!(get("vendor.nvidia.count"), Some("8"));
    assert_eq!(get("accelerator.mixed"), None);
    for (k, v) in &l {
        assert!(is_valid_label(k, v), "{k}={v}");
        assert!(k.starts_with("ai-hwaccel.io/"));
    }

    // Hostile names and versions still give valid labels.
    let mut d = gpu(
        "pci:0000:01:00.0",
        "amd",
        &format!("{}\u{1F525} \"x\"=\n", "é".repeat(80)),
    );
    d.driver_version = Some("../../..;rm -rf".into());
    d.compute_capability = Some("gfx942".into());
    let l = node_labels(&registry(vec![d]), &LabelOptions::default());
    for (k, v) in &l {
        assert!(is_valid_label(k, v), "{k}={v}");
    }
    assert_eq!(l["ai-hwaccel.io/accelerator.compute"], "gfx942");
}

#[test]
fn plan_labels_name_the_largest_model_that_fits() {
    let mut devices = Vec::new();
    for i in 0..8u8 {
        let mut d = gpu(
            &format!("pci:0000:{:02x}:00.0", 0x18 + i),
            "nvidia",
            "NVIDIA H100 80GB HBM3",
        );
        d.memory_bytes = Some(85_520_809_984);
        devices.push(d);
    }
    let r = registry(devices);
    let q = ai_hwaccel::plan::Quant::parse("int4").unwrap();
    let l = node_labels(
        &r,
        &LabelOptions {
            fit_quants: vec![q],
        },
    );
    let m = &l["ai-hwaccel.io/plan.largest-model.int4"];
    assert!(!m.is_empty(), "{l:?}");
    // 640 GB of HBM holds far more than a 7-8B model at 4 bits.
    let p = ai_hwaccel::plan::catalog::all()
        .iter()
        .find(|c| &c.id == m)
        .unwrap();
    assert!(p.spec.parameters() > 100_000_000_000, "{m}");
}

/// The largest-model label names a generative model: on cards where an
/// embedding model larger than every generative one that fits also fits,
/// the embedding model is not the answer.
#[test]
fn plan_labels_skip_embedding_models() {
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, catalog, plan_inference};
    let mut encoder_would_win = 0;
    for gib in [8u64, 12, 16, 24] {
        let mut d = gpu("pci:0000:01:00.0", "nvidia", "NVIDIA GeForce RTX 4080");
        d.memory_bytes = Some(gib << 30);
        let r = registry(vec![d]);
        for level in ["bf16", "int4"] {
            let q = Quant::parse(level).unwrap();
            let l = node_labels(
                &r,
                &LabelOptions {
                    fit_quants: vec![q],
                },
            );
            let got = &l[&format!("ai-hwaccel.io/plan.largest-model.{level}")];
            let devices = PlanDevice::from_registry(&r);
            let o = InferenceOptions {
                quant: Some(q),
                max_plans: 1,
                ..Default::default()
            };
            let fits = |m: &&catalog::CatalogModel| {
                let p = plan_inference(&m.spec, &devices, &o);
                p.feasible && !p.plans.is_empty()
            };
            let best = |enc: bool| {
                catalog::all()
                    .iter()
                    .filter(|m| m.spec.encoder == enc)
                    .filter(fits)
                    .max_by_key(|m| m.spec.parameters())
            };
            let gen_best = best(false);
            assert_eq!(
                got,
                &gen_best.map(|m| m.id.clone()).unwrap_or_default(),
                "{gib} GiB {level}"
            );
            if let (Some(e), Some(g)) = (best(true), gen_best) {
                encoder_would_win += usize::from(e.spec.parameters() > g.spec.parameters());
            }
        }
    }
    assert!(encoder_would_win > 0, "no case where the filter matters");
}

#[test]
fn events_report_changes_and_alert_transitions() {
    let (r, t) = rx580_telemetry();
    let first = Observation {
        registry: r.clone(),
        telemetry: t.clone(),
        kernel_errors: Vec::new(),
    };
    let rules = vec![
        AlertRule::parse("memory_used_ratio>0.1").unwrap(),
        AlertRule::parse("temperature_celsius>85").unwrap(),
    ];
    let mut firing = BTreeMap::new();
    let ev = diff(
        None,
        &first,
        &rules,
        &mut firing,
        "2026-11-24T06:00:00.000Z",
        "h",
    );
    assert_eq!(ev[0].kind, EventKind::Snapshot);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[1].kind, EventKind::Alert);
    assert_eq!(ev[1].data["state"], "firing");
    assert_eq!(ev[1].data["value"], 0.125);

    // Same state: nothing new.
    assert!(diff(Some(&first), &first, &rules, &mut firing, "t", "h").is_empty());

    // ECC grew, memory fell, a device went away and one came.
    let mut second = first.clone();
    let s = &mut second.telemetry.devices[0];
    s.memory_used_bytes = Some(1);
    let mut before = first.clone();
    before.telemetry.devices[0].ecc_uncorrected_total = Some(0);
    second.telemetry.devices[0].ecc_uncorrected_total = Some(3);
    second
        .registry
        .devices
        .push(gpu("pci:0000:0a:00.0", "amd", "new"));
    let ev = diff(Some(&before), &second, &rules, &mut firing, "t", "h");
    let kinds: Vec<EventKind> = ev.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::DeviceAdded, EventKind::Health, EventKind::Alert],
        "{ev:?}"
    );
    assert_eq!(ev[1].data["new_errors"], 3);
    assert_eq!(ev[2].data["state"], "resolved");

    let mut third = second.clone();
    third.registry.devices.remove(0);
    third.registry.devices[0].available = false;
    let mut avail = second.clone();
    avail.registry.devices[1].available = true;
    let ev = diff(Some(&avail), &third, &[], &mut firing, "t", "h");
    let kinds: Vec<EventKind> = ev.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::BecameUnavailable, EventKind::DeviceRemoved],
        "{ev:?}"
    );
}

fn kernel_log(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kernel-log")
            .join(name),
    )
    .unwrap()
}

#[test]
fn xid_lines_from_real_logs() {
    use ai_hwaccel::telemetry::kernel_log::parse_kernel_log;
    // dmesg --ctime, as quoted in a README (a "> " prefix on each line).
    let e = parse_kernel_log(&kernel_log("gpud-pr46__dmesg-ctime.txt"));
    assert_eq!(e.len(), 4, "the nvidia-peermem line is not an Xid: {e:?}");
    assert_eq!(e[0].code, Some(13));
    assert_eq!(e[0].pci_address.unwrap().to_string(), "0000:cb:00.0");
    assert!(
        e[0].message
            .starts_with("pid='<unknown>', name=<unknown>, Graphics SM Warp Exception")
    );
    assert_eq!(e[3].code, Some(109));
    // journald lines.
    let e = parse_kernel_log(&kernel_log("open-gpu-kernel-modules-1150__journal.txt"));
    let addrs: Vec<String> = e
        .iter()
        .map(|x| x.pci_address.unwrap().to_string())
        .collect();
    assert_eq!(
        addrs,
        [
            "0000:dc:00.0",
            "0000:ed:00.0",
            "0000:ba:00.0",
            "0000:97:00.0"
        ]
    );
    assert!(e.iter().all(|x| x.code == Some(45)));
    // A 2015 driver's lines (no pid/name).
    let e = parse_kernel_log(&kernel_log("bumblebee-677__dmesg.txt"));
    assert_eq!(
        e.iter().map(|x| x.code.unwrap()).collect::<Vec<_>>(),
        [32, 32, 31]
    );
    assert_eq!(e[0].message, "Channel ID 00000000 intr 00004000");
    // NVLink Xids with a non-zero PCI domain.
    let e = parse_kernel_log(&kernel_log("gpud-pr1174__kmsg.txt"));
    assert_eq!(e[0].pci_address.unwrap().to_string(), "0019:01:00.0");
    assert_eq!(
        e.iter().map(|x| x.code.unwrap()).collect::<Vec<_>>(),
        [149, 149, 145, 94]
    );
    // Fallen off the bus without an Xid (570 driver), reported once.
    let e = parse_kernel_log(&kernel_log("nvsentinel-155__dmesg.txt"));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].kind, "nvidia_fallen_off_bus");
    assert_eq!(e[0].pci_address.unwrap().to_string(), "0000:b3:00.0");
    // Hostile: no panic, nothing invented.
    for l in [
        "NVRM: Xid (PCI:",
        "NVRM: Xid (PCI:zz): x",
        "NVRM: The NVIDIA GPU ",
    ] {
        let _ = parse_kernel_log(l);
    }
    assert_eq!(
        parse_kernel_log("NVRM: Xid (PCI:zz): 7, m")[0].pci_address,
        None
    );
}

#[test]
fn xid_events_name_the_device() {
    use ai_hwaccel::telemetry::kernel_log::parse_kernel_log;
    let r = registry(vec![gpu("pci:0000:cb:00.0", "nvidia", "H100")]);
    let obs = Observation {
        registry: r,
        telemetry: Telemetry::default(),
        kernel_errors: parse_kernel_log(&kernel_log("gpud-pr46__dmesg-ctime.txt")),
    };
    let mut firing = BTreeMap::new();
    let ev = diff(Some(&obs.clone()), &obs, &[], &mut firing, "t", "h");
    assert_eq!(ev.len(), 4);
    assert!(ev.iter().all(|e| e.kind == EventKind::Health));
    assert_eq!(ev[3].device.as_deref(), Some("pci:0000:cb:00.0"));
    assert_eq!(ev[3].data["check"], "nvidia_xid");
    assert_eq!(ev[3].data["code"], 109);
}

/// Utilization and power draw that vendor tools print reach the registry
/// and, through `detected_sample`, the exporter (real captures).
#[test]
fn vendor_tools_utilization_and_power_draw() {
    use ai_hwaccel::telemetry::detected_sample;
    let parse = |fmt: &str, rel: &str| {
        let f = ai_hwaccel::detect::format(fmt).unwrap();
        let bytes = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(rel),
        )
        .unwrap();
        f.run(&bytes).devices
    };
    let cases: [(&str, &str, Option<f64>, Option<f64>); 6] = [
        (
            "nvidia-smi-csv",
            "nvidia-smi-csv/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.csv",
            Some(0.0),
            Some(69.85),
        ),
        (
            "nvidia-smi-q",
            "nvidia-smi-q/gpud__a10__535.129.03.txt",
            Some(0.0),
            Some(43.89),
        ),
        (
            "hl-smi",
            "hl-smi/denvr-llama2-gaudi2-guide__hl-smi__8x-gaudi2-hl225__1.16.0.txt",
            Some(0.0),
            Some(82.0),
        ),
        (
            "npu-smi",
            "npu-smi/gpustack__atlas-800-3000__4x-310__npu-smi-20.2.0.txt",
            Some(0.0),
            Some(12.8),
        ),
        (
            "rocm-smi-json",
            "rocm-smi-json/gpustack__rx7700xt-7800xt-navi32__rocm-6.2.4.json",
            Some(100.0),
            Some(53.0),
        ),
        (
            "amd-smi-json",
            "amd-smi-json/amdsmi-changelog__metric-p-json__1gpu.json",
            None,
            Some(10.0),
        ),
    ];
    for (fmt, rel, util, power) in cases {
        let d = &parse(fmt, rel)[0];
        assert_eq!(
            (d.utilization_percent, d.power_draw_watts),
            (util, power),
            "{rel}"
        );
        let s = detected_sample(d);
        assert_eq!(s.power_watts, power, "{rel}");
        assert_eq!(s.utilization_ratio, util.map(|u| u / 100.0), "{rel}");
    }
}

/// amdgpu's binary `gpu_metrics` tables from LACT's snapshots: a Navi 21
/// (revision 1.3, 4096 bytes read) and a Phoenix APU (2.1), every value
/// cross-checked with the text files of the same snapshot (hwmon
/// temperatures and power, `gpu_busy_percent`, `pp_dpm_sclk`/`mclk`,
/// `current_link_*`).
#[test]
fn amdgpu_gpu_metrics_tables() {
    use ai_hwaccel::telemetry::gpu_metrics::parse_gpu_metrics;
    let read = |rel: &str| std::fs::read(fixture(rel)).unwrap();
    let d = parse_gpu_metrics(&read("lact__amd-rx6900xt/card0/device/gpu_metrics")).unwrap();
    assert_eq!(d.revision, (1, 3));
    assert_eq!(d.temperatures_celsius["edge"], 56.0); // hwmon temp1_input 56000
    assert_eq!(d.temperatures_celsius["junction"], 59.0); // temp2_input
    assert_eq!(d.temperatures_celsius["mem"], 54.0); // temp3_input
    assert_eq!(d.gfx_activity_ratio, Some(0.03)); // gpu_busy_percent 3
    assert_eq!(d.memory_activity_ratio, Some(0.0));
    assert_eq!(d.socket_power_watts, Some(36.0)); // power1_average 36000000
    assert_eq!(d.clocks_hertz["graphics"], 500e6); // pp_dpm_sclk "500Mhz *"
    assert_eq!(d.clocks_hertz["memory"], 1000e6); // pp_dpm_mclk "1000Mhz *"
    assert_eq!(
        (d.pcie_link_width, d.pcie_link_speed_gts),
        (Some(16), Some(16.0))
    );
    assert_eq!(
        (d.throttle_status, d.indep_throttle_status),
        (Some(0), Some(0))
    );
    assert_eq!(d.throttle_reasons(), Some(vec![]), "reported, none active");

    let a = parse_gpu_metrics(&read("lact__amd-phoenix/card1/device/gpu_metrics")).unwrap();
    assert_eq!(a.revision, (2, 1));
    assert_eq!(a.temperatures_celsius["gfx"], 25.0); // hwmon temp1_input 25000
    assert!((a.temperatures_celsius["soc"] - 27.37).abs() < 1e-9);
    // Centi-percent: 79 is 0.79 %, which gpu_busy_percent prints as 0.
    assert!((a.gfx_activity_ratio.unwrap() - 0.0079).abs() < 1e-12);
    assert_eq!(a.socket_power_watts, Some(3.401)); // mW; hwmon averaged 3.103 W
    assert!(
        a.clocks_hertz.is_empty(),
        "current clocks not filled (0xffff)"
    );
    assert_eq!(a.throttle_status, Some(0));
    assert_eq!(
        (a.indep_throttle_status, a.throttle_reasons()),
        (None, None)
    );
    assert_eq!(a.pcie_link_width, None, "2.x tables carry no link");
}

/// The sampler reads `gpu_metrics` beside the text files: the Navi 21's
/// throttle state is reported (none active) where no text file gives one.
#[test]
fn amdgpu_throttle_state_from_gpu_metrics() {
    let s = sample("lact__amd-rx6900xt", "card0", "pci:0000:0c:00.0", "amd");
    assert_eq!(s.utilization_ratio, Some(0.03));
    assert_eq!(s.throttle_reasons, Some(vec![]));
    assert_eq!(s.temperatures_celsius["junction"], 59.0);
}

/// A snapshot of a real NVML machine (the lent H100): sampling through the
/// replay gives what NVML read when it was recorded (power, clocks, energy,
/// memory), the values `serve --from` and `watch --from` export.
#[test]
fn a_replayed_nvml_snapshot_samples_what_nvml_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/snapshots/lent-h100-firecracker");
    let replay = ai_hwaccel::ReplayProbe::open(&dir).unwrap();
    let reg = ai_hwaccel::detect::detect_with(&replay, &Default::default());
    let t = ai_hwaccel::telemetry::sample(&replay, &reg);
    let s = t
        .devices
        .iter()
        .find(|s| s.device_id == "pci:0000:00:06.0")
        .expect("the H100 sampled");
    assert!(s.source.starts_with("nvml"), "{}", s.source);
    assert_eq!(s.power_watts, Some(75.418));
    assert_eq!(s.memory_total_bytes, Some(81_559 << 20));
    assert_eq!(s.power_limit_watts, Some(700.0));
    assert!(
        s.clocks_hertz.contains_key("memory"),
        "{:?}",
        s.clocks_hertz
    );
    assert!(s.energy_joules.is_some_and(|j| j > 0.0));
}
