//! Foundation tests over fake roots: system facts, PCI accelerators, cgroup
//! limits, malformed files, snapshot/replay and tool timeouts.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::write_script;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ai_hwaccel::model::Family;
use ai_hwaccel::probe::{LiveProbe, Probe, ProbeError, ProbeOptions, RecordingProbe, ReplayProbe};
use ai_hwaccel::{DetectOptions, Registry, detect, detect_with};

fn root(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/roots")
        .join(name)
}

fn opts(root: &Path) -> ProbeOptions {
    ProbeOptions {
        root: root.to_path_buf(),
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    }
}

fn detect_root(name: &str) -> Registry {
    detect(&opts(&root(name)), &DetectOptions::default())
}

/// `Key:  N kB` of a meminfo file, in bytes, read independently of the library.
fn meminfo_bytes(path: &Path, key: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{key}:")))
        .unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

#[test]
fn two_socket_numa_server_with_driverless_accelerators() {
    let r = detect_root("two-socket-pci");
    let meminfo = root("two-socket-pci").join("proc/meminfo");
    let sys = &r.system;
    assert_eq!(
        sys.memory.total_bytes,
        Some(meminfo_bytes(&meminfo, "MemTotal"))
    );
    assert_eq!(
        sys.memory.available_bytes,
        Some(meminfo_bytes(&meminfo, "MemAvailable"))
    );
    assert_eq!(sys.memory.hugepages_total, Some(2048));
    assert_eq!(
        sys.cpu.model.as_deref(),
        Some("Intel(R) Xeon(R) Platinum 8480+")
    );
    assert_eq!(sys.cpu.vendor.as_deref(), Some("intel"));
    assert_eq!(
        (
            sys.cpu.sockets,
            sys.cpu.physical_cores,
            sys.cpu.logical_cpus
        ),
        (Some(2), Some(8), Some(16))
    );
    assert!(sys.cpu.features.iter().any(|f| f == "amx_bf16"));
    assert_eq!(sys.numa_nodes.len(), 2);
    assert_eq!(sys.numa_nodes[0].cpus, [0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(sys.numa_nodes[1].cpus, [4, 5, 6, 7, 12, 13, 14, 15]);
    assert_eq!(sys.numa_nodes[1].memory_bytes, Some(131_072_000 * 1024));
    assert_eq!(sys.numa_nodes[0].distances, [10, 21]);

    let ids: Vec<&str> = r.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "cpu",
            "pci:0000:1b:00.0",
            "pci:0000:3b:00.0",
            "pci:0000:9b:00.0",
            "pci:0000:c1:00.0"
        ],
        "the ASPEED BMC VGA and the NIC are not accelerators"
    );
    let bound = r.device("pci:0000:1b:00.0").unwrap();
    assert!(bound.available);
    assert_eq!(bound.vendor, "nvidia");
    assert_eq!(bound.family, Family::Gpu);
    assert_eq!(bound.driver.as_deref(), Some("nvidia"));
    assert_eq!(bound.numa_node, Some(0));
    assert_eq!(
        bound.memory_bytes, None,
        "PCI alone does not know device memory"
    );
    let pci = bound.pci.as_ref().unwrap();
    assert_eq!(
        (pci.vendor_id.as_str(), pci.device_id.as_str()),
        ("10de", "2330")
    );
    assert_eq!(pci.subsystem_device_id.as_deref(), Some("16c1"));
    assert_eq!(pci.class.as_deref(), Some("030200"));
    let link = pci.link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.current_width),
        (Some(32.0), Some(16))
    );

    let nvidia = r.device("pci:0000:3b:00.0").unwrap();
    assert!(!nvidia.available);
    assert_eq!(
        nvidia.unavailable_reason.as_deref(),
        Some("no kernel driver bound")
    );
    let amd = r.device("pci:0000:9b:00.0").unwrap();
    assert_eq!(
        (amd.vendor.as_str(), amd.name.as_str()),
        ("amd", "AMD Instinct MI300X")
    );
    assert!(!amd.available);
    assert_eq!(amd.numa_node, Some(1));
    let vfio = r.device("pci:0000:c1:00.0").unwrap();
    assert!(!vfio.available);
    assert!(
        vfio.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("vfio-pci")
    );
    assert_eq!(
        vfio.pci.as_ref().unwrap().link,
        None,
        "Unknown speed and width 0 are unknown"
    );

    assert_eq!(r.summary.accelerator_count, 1);
    assert!(r.summary.has_accelerator);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn cgroup_v2_container_limits() {
    let r = detect_root("container-cgroup-v2");
    let meminfo = root("container-cgroup-v2").join("proc/meminfo");
    let cg = r.system.cgroup.as_ref().unwrap();
    assert_eq!(cg.version, 2);
    assert_eq!(cg.path, "/kubepods/pod1/ctr");
    assert_eq!(
        cg.memory_limit_bytes,
        Some(8 << 30),
        "the tightest limit on the path binds"
    );
    assert_eq!(cg.memory_current_bytes, Some(1 << 30));
    assert_eq!(cg.cpu_quota, Some(1.5));
    assert_eq!(cg.cpuset_cpus.as_deref(), Some(&[0, 1, 2, 3][..]));
    let m = &r.system.memory;
    assert_eq!(m.total_bytes, Some(meminfo_bytes(&meminfo, "MemTotal")));
    assert_eq!(m.usable_bytes, Some(8 << 30));
    let avail = meminfo_bytes(&meminfo, "MemAvailable");
    assert_eq!(
        m.usable_available_bytes,
        Some(avail.min((8u64 << 30) - (1 << 30)))
    );
    assert_eq!(
        r.system.cpu.logical_cpus,
        Some(16),
        "the machine's figure is kept"
    );
    assert_eq!(
        r.system.cpu.usable_cpus,
        Some(2),
        "1.5 CPUs of quota round up to 2"
    );
    let cpu = r.device("cpu").unwrap();
    assert_eq!(cpu.memory_bytes, Some(8 << 30));
    assert!(!r.summary.has_accelerator);
}

#[test]
fn cgroup_v1_container_without_namespace() {
    let r = detect_root("container-cgroup-v1");
    let cg = r.system.cgroup.as_ref().unwrap();
    assert_eq!(cg.version, 1);
    assert_eq!(cg.path, "/docker/abc");
    assert_eq!(cg.memory_limit_bytes, Some(2 << 30));
    assert_eq!(cg.cpu_quota, Some(2.0));
    assert_eq!(r.system.memory.usable_bytes, Some(2 << 30));
    assert_eq!(r.system.cpu.usable_cpus, Some(2));
    assert_eq!(r.system.cpu.logical_cpus, Some(4));
}

#[test]
fn malformed_sysfs_gives_warnings_not_panics() {
    let r = detect_root("malformed");
    let w: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    let has = |s: &str| w.iter().any(|m| m.contains(s));
    assert!(has("node0/cpulist: cannot parse"), "{w:?}");
    assert!(has("/proc/meminfo: no MemTotal"), "{w:?}");
    assert!(has("0000:01:00.0/vendor: not a hex id"), "{w:?}");
    assert!(has("not-an-address: not a PCI address"), "{w:?}");
    assert!(has("0000:04:00.0: no readable vendor/device id"), "{w:?}");
    assert!(has("/proc/self/cgroup"), "{w:?}");
    assert_eq!(r.system.memory.total_bytes, None);
    assert_eq!(r.system.cpu.logical_cpus, None, "7-3 is not a CPU list");
    let a100 = r.device("pci:0000:03:00.0").unwrap();
    assert_eq!(a100.numa_node, None, "an absurd NUMA node is unknown");
    assert_eq!(a100.pci.as_ref().unwrap().link, None);
    assert!(r.device("pci:0000:01:00.0").is_none());
}

#[test]
fn missing_root_is_empty_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let r = detect(&opts(dir.path()), &DetectOptions::default());
    assert_eq!(r.devices.len(), 1, "only a CPU placeholder");
    assert!(!r.summary.has_accelerator);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("/proc/cpuinfo"))
    );
}

#[test]
fn family_filter_and_backend_selection() {
    let o = opts(&root("two-socket-pci"));
    let only_gpu = DetectOptions {
        families: Some(vec![Family::Gpu]),
        ..Default::default()
    };
    let r = detect(&o, &only_gpu);
    assert!(r.devices.iter().all(|d| d.family == Family::Gpu));
    assert_eq!(r.devices.len(), 4);
    assert_eq!(
        r.system.cpu.sockets,
        Some(2),
        "system facts are always filled"
    );
    let only_cpu = DetectOptions {
        families: Some(vec![Family::Cpu]),
        ..Default::default()
    };
    let r = detect(&o, &only_cpu);
    assert!(
        r.timings.iter().all(|t| t.backend != "pci"),
        "the pci backend is skipped"
    );
    let set = ai_hwaccel::BackendSet::parse("system").unwrap();
    let r = detect(
        &o,
        &DetectOptions {
            backends: set,
            families: None,
        },
    );
    assert_eq!(r.devices.len(), 1);
    assert!(ai_hwaccel::BackendSet::parse("system,warp-drive").is_err());
}

fn tool_probe(dir: &Path, timeout: Duration, cap: usize) -> LiveProbe {
    LiveProbe::new(ProbeOptions {
        root: dir.to_path_buf(),
        tool_path: Some(vec![dir.to_path_buf()]),
        timeout,
        output_cap: cap,
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    })
}

#[test]
fn hanging_tool_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    write_script(dir.path(), "hang", "echo started; sleep 30");
    let p = tool_probe(dir.path(), Duration::from_millis(300), 1 << 20);
    let t = Instant::now();
    let r = p.run("hang", &[]);
    assert!(
        matches!(
            r,
            Err(ProbeError::Timeout {
                timeout_ms: 300,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn a_streaming_tool_is_stopped_after_its_first_line() {
    let dir = tempfile::tempdir().unwrap();
    // A line in two writes, then a report every 30 s (neuron-monitor's shape).
    write_script(
        dir.path(),
        "stream",
        "printf '{\"a\":'; sleep 0.2; echo '1}'; while :; do sleep 30; echo next; done",
    );
    write_script(dir.path(), "silent", "sleep 30");
    let p = tool_probe(dir.path(), Duration::from_secs(20), 1 << 20);
    let t = Instant::now();
    let out = p.run_first_line("stream", &[]).unwrap();
    assert_eq!(out.stdout_text(), "{\"a\":1}\n");
    assert_eq!(out.status, None, "ended by our kill");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    // No line before the timeout: the timeout, as for `run`.
    let p = tool_probe(dir.path(), Duration::from_millis(300), 1 << 20);
    let r = p.run_first_line("silent", &[]);
    assert!(matches!(r, Err(ProbeError::Timeout { .. })), "{r:?}");
    // A tool that exits after writing is read to its end, like `run`.
    write_script(dir.path(), "two", "echo one; echo two");
    let out = p.run_first_line("two", &[]).unwrap();
    assert!(out.stdout_text().starts_with("one\n"));
}

#[test]
fn tool_leaving_a_background_child_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    write_script(dir.path(), "fork", "sleep 30 & echo done");
    let p = tool_probe(dir.path(), Duration::from_secs(20), 1 << 20);
    let t = Instant::now();
    let out = p.run("fork", &[]).unwrap();
    assert_eq!(out.stdout_text(), "done\n");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn tool_output_is_capped_and_args_pass_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "big",
        "head -c 200000 /dev/zero; echo err >&2; exit 3",
    );
    write_script(
        dir.path(),
        "args",
        "for a in \"$@\"; do echo \"[$a]\"; done",
    );
    let p = tool_probe(dir.path(), Duration::from_secs(20), 1000);
    let out = p.run("big", &[]).unwrap();
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.truncated);
    assert_eq!(out.status, Some(3));
    assert_eq!(out.stderr_line(), "err");
    let out = p.run("args", &["a b", "$HOME", ";ls"]).unwrap();
    assert_eq!(out.stdout_text(), "[a b]\n[$HOME]\n[;ls]\n");
}

#[test]
fn tool_resolution_ignores_relative_path_entries_and_no_exec() {
    let dir = tempfile::tempdir().unwrap();
    write_script(dir.path(), "t", "echo hi");
    let rel = LiveProbe::new(ProbeOptions {
        root: dir.path().to_path_buf(),
        tool_path: Some(vec![PathBuf::from("."), PathBuf::from("")]),
        ..ProbeOptions::default()
    });
    assert!(matches!(
        rel.run("t", &[]),
        Err(ProbeError::ToolNotFound { .. })
    ));
    let p = tool_probe(dir.path(), Duration::from_secs(5), 1000);
    assert!(matches!(
        p.run("../t", &[]),
        Err(ProbeError::ToolNotFound { .. })
    ));
    let no_exec = LiveProbe::new(ProbeOptions {
        no_exec: true,
        tool_path: Some(vec![dir.path().to_path_buf()]),
        ..ProbeOptions::default()
    });
    assert!(matches!(
        no_exec.run("t", &[]),
        Err(ProbeError::ExecDisabled { .. })
    ));
}

#[test]
fn snapshot_then_replay_gives_the_identical_registry() {
    for name in ["two-socket-pci", "container-cgroup-v2", "malformed"] {
        let rec = RecordingProbe::new(LiveProbe::new(opts(&root(name))));
        let live = detect_with(&rec, &DetectOptions::default());
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("snap");
        rec.save(
            &snap,
            &[("registry.json", live.to_json_pretty().as_bytes())],
        )
        .unwrap();
        let replay = ReplayProbe::open(&snap).unwrap();
        let again = detect_with(&replay, &DetectOptions::default());
        assert_eq!(again.without_timings(), live.without_timings(), "{name}");
        let saved =
            Registry::from_json(&std::fs::read_to_string(snap.join("registry.json")).unwrap())
                .unwrap();
        assert_eq!(saved, live);
    }
}

#[test]
fn snapshot_records_tool_runs_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    write_script(dir.path(), "tool", "echo \"out $1\"; echo oops >&2; exit 4");
    let mut env = BTreeMap::new();
    env.insert("CUDA_VISIBLE_DEVICES".to_string(), "1,0".to_string());
    let live = LiveProbe::new(ProbeOptions {
        env: Some(env),
        ..tool_probe_opts(dir.path())
    });
    let rec = RecordingProbe::new(live);
    let a = rec.run("tool", &["x"]).unwrap();
    assert!(matches!(
        rec.run("absent-tool", &[]),
        Err(ProbeError::ToolNotFound { .. })
    ));
    assert_eq!(rec.env("CUDA_VISIBLE_DEVICES").as_deref(), Some("1,0"));
    assert_eq!(rec.env("HIP_VISIBLE_DEVICES"), None);
    let snap = dir.path().join("snap");
    rec.save(&snap, &[]).unwrap();
    let replay = ReplayProbe::open(&snap).unwrap();
    assert_eq!(replay.run("tool", &["x"]).unwrap(), a);
    assert!(matches!(
        replay.run("absent-tool", &[]),
        Err(ProbeError::ToolNotFound { .. })
    ));
    assert!(
        replay.run("tool", &["y"]).is_err(),
        "a different invocation was not recorded"
    );
    assert_eq!(replay.env("CUDA_VISIBLE_DEVICES").as_deref(), Some("1,0"));
    assert!(matches!(
        replay.read("/etc/passwd"),
        Err(ProbeError::NotFound { .. })
    ));
}

#[test]
fn snapshot_records_a_first_line_run_and_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "stream",
        "echo '{\"r\":1}'; while :; do sleep 30; echo more; done",
    );
    let rec = RecordingProbe::new(LiveProbe::new(tool_probe_opts(dir.path())));
    let a = rec.run_first_line("stream", &[]).unwrap();
    assert_eq!(a.stdout_text(), "{\"r\":1}\n");
    let snap = dir.path().join("snap");
    rec.save(&snap, &[]).unwrap();
    let replay = ReplayProbe::open(&snap).unwrap();
    assert_eq!(replay.run_first_line("stream", &[]).unwrap(), a);
}

fn tool_probe_opts(dir: &Path) -> ProbeOptions {
    ProbeOptions {
        root: dir.to_path_buf(),
        tool_path: Some(vec![dir.to_path_buf()]),
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    }
}

#[test]
fn snapshot_refuses_to_overwrite_and_replay_rejects_bad_manifests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "user data").unwrap();
    let rec = RecordingProbe::new(LiveProbe::new(opts(&root("two-socket-pci"))));
    let _ = detect_with(&rec, &DetectOptions::default());
    let err = rec.save(dir.path(), &[]).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "user data"
    );

    let bad = tempfile::tempdir().unwrap();
    assert!(
        ReplayProbe::open(bad.path())
            .err()
            .unwrap()
            .to_string()
            .contains("manifest.json")
    );
    std::fs::write(
        bad.path().join("manifest.json"),
        r#"{"snapshot_version": 1, "files": {"/x": {"ok": "../../etc/passwd"}}}"#,
    )
    .unwrap();
    let e = ReplayProbe::open(bad.path()).err().unwrap().to_string();
    assert!(e.contains("invalid blob name"), "{e}");
    std::fs::write(
        bad.path().join("manifest.json"),
        r#"{"snapshot_version": 99}"#,
    )
    .unwrap();
    assert!(
        ReplayProbe::open(bad.path())
            .err()
            .unwrap()
            .to_string()
            .contains("not supported")
    );
    std::fs::write(
        bad.path().join("manifest.json"),
        r#"{"snapshot_version": 1, "files": 3}"#,
    )
    .unwrap();
    let e = ReplayProbe::open(bad.path()).err().unwrap().to_string();
    assert!(e.contains("files"), "{e}");
}

/// Every vendor tool a backend may run, replaced by a script that hangs:
/// detection must still return, with timeout warnings, and keep the PCI facts.
#[test]
fn detection_returns_when_every_tool_hangs() {
    let tools = tempfile::tempdir().unwrap();
    let names = support::VENDOR_TOOLS;
    for n in names {
        write_script(tools.path(), n, "sleep 30");
    }
    let o = ProbeOptions {
        root: root("two-socket-pci"),
        tool_path: Some(vec![tools.path().to_path_buf()]),
        timeout: Duration::from_millis(400),
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    };
    let t = Instant::now();
    let r = detect(&o, &DetectOptions::default());
    assert!(
        t.elapsed() < Duration::from_secs(25),
        "took {:?}",
        t.elapsed()
    );
    assert!(r.device("pci:0000:1b:00.0").is_some(), "PCI facts survive");
    assert_eq!(r.system.cpu.sockets, Some(2));
    let timeouts = r
        .warnings
        .iter()
        .filter(|w| w.message.contains("timeout"))
        .count();
    assert!(
        timeouts >= 1,
        "at least one backend ran a tool and reported its timeout: {:?}",
        r.warnings
    );

    // --no-exec: the same tools are never started.
    let r = detect(
        &ProbeOptions { no_exec: true, ..o },
        &DetectOptions::default(),
    );
    assert!(
        r.warnings.iter().all(|w| !w.message.contains("timeout")),
        "{:?}",
        r.warnings
    );
}
