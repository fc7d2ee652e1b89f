//! Hostile input at the probe boundary (issue 14): fake roots whose files are
//! symlinks to the host or FIFOs, PCI attributes linked to endless or huge
//! files, tools that leave a `setsid` daemon holding stdout, snapshots with
//! linked, FIFO, repeated or oversized blobs, model directories whose files
//! lead elsewhere, and snapshot targets that cannot be proved empty.
//!
//! Every case builds its input in a tempdir (a copy of the `two-socket-pci`
//! fake root). Time bounds here are generous hang checks (a hang would take
//! 30 s or forever), not performance assertions.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots, FIFOs and links"
)]

mod support;
use support::write_script;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ai_hwaccel::probe::{
    LiveProbe, Probe, ProbeError, ProbeOptions, RecordingProbe, ReplayProbe, SnapshotError,
    check_snapshot_dir,
};
use ai_hwaccel::{DetectOptions, Registry, detect, detect_with};

fn fixture_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roots/two-socket-pci")
}

/// Copy a tree, recreating symlinks as links (sysfs's relative links).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if ft.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A fresh copy of the two-socket fake root.
fn fake_root() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_tree(&fixture_root(), d.path());
    d
}

fn opts(root: &Path) -> ProbeOptions {
    ProbeOptions {
        root: root.to_path_buf(),
        env: Some(BTreeMap::new()),
        ..ProbeOptions::default()
    }
}

fn detect_root(root: &Path) -> Registry {
    detect(&opts(root), &DetectOptions::default())
}

/// Replace `path` (a file) by a link to `target`.
fn relink(path: &Path, target: &str) {
    let _ = std::fs::remove_file(path);
    symlink(target, path).unwrap();
}

/// Replace `path` by a FIFO.
fn make_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path we own.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

fn warnings(r: &Registry) -> String {
    r.warnings
        .iter()
        .map(|w| format!("[{}] {}\n", w.backend, w.message))
        .collect()
}

const PCI_DEV: &str = "sys/devices/pci0000:00/0000:3b:00.0";
/// The same function as detection names it (through sysfs's bus link).
const PCI_BUS: &str = "sys/bus/pci/devices/0000:3b:00.0";

#[test]
fn links_out_of_the_root_read_the_roots_own_files_never_the_hosts() {
    let base = detect_root(&fixture_root());
    assert_eq!(base.system.os.as_deref(), Some("Linux 6.8.0-test"));
    let host_cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();

    for target in ["/etc/hostname", "../../../../../../../../../etc/hostname"] {
        let d = fake_root();
        let r = d.path();
        std::fs::create_dir_all(r.join("etc")).unwrap();
        std::fs::write(r.join("etc/hostname"), "release-inside-the-root\n").unwrap();
        relink(&r.join("proc/sys/kernel/osrelease"), target);
        // The host's /proc/cpuinfo by absolute name: inside the root it is
        // this very link again (a loop), so there is no CPU model at all.
        relink(&r.join("proc/cpuinfo"), "/proc/cpuinfo");
        let reg = detect_root(r);
        // `..` stops at the root and `/` is the root: the root's own file.
        assert_eq!(
            reg.system.os.as_deref(),
            Some("Linux release-inside-the-root"),
            "{target}"
        );
        let model = reg.system.cpu.model.clone().unwrap_or_default();
        assert!(
            model.is_empty(),
            "{target}: CPU model {model:?} read through the link"
        );
        assert!(
            !host_cpu.is_empty() && !reg.to_json_pretty().contains("model name"),
            "no host cpuinfo text"
        );
        // sysfs's own relative links still work inside the root.
        assert_eq!(reg.devices.len(), base.devices.len(), "{target}");
        assert!(reg.device("pci:0000:3b:00.0").is_some());
    }
}

#[test]
fn fifos_where_files_should_be_are_refused_with_a_warning_not_waited_on() {
    let d = fake_root();
    let r = d.path();
    let fifos = [
        format!("{PCI_BUS}/vendor"),
        "proc/cpuinfo".to_string(),
        "proc/meminfo".to_string(),
        "sys/fs/cgroup/memory.max".to_string(),
    ];
    for f in &fifos {
        make_fifo(&r.join(f));
    }
    let o = ProbeOptions {
        timeout: Duration::from_secs(2),
        ..opts(r)
    };
    let t = Instant::now();
    let reg = detect(&o, &DetectOptions::default());
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let w = warnings(&reg);
    for f in &fifos {
        assert!(
            w.contains(&format!("/{f}: a FIFO, not a regular file; not read")),
            "no warning naming /{f}:\n{w}"
        );
    }
    assert_eq!(reg.system.memory.total_bytes, None);
    assert_eq!(reg.system.cpu.model, None);
    // The other PCI functions are still there.
    assert!(reg.device("pci:0000:1b:00.0").is_some());

    // Recorded and replayed, the refusals (and everything else) are the same.
    let rec = RecordingProbe::new(LiveProbe::new(opts(r)));
    let live = detect_with(&rec, &DetectOptions::default());
    let snap = tempfile::tempdir().unwrap();
    rec.save(&snap.path().join("s"), &[]).unwrap();
    let replay = ReplayProbe::open(&snap.path().join("s")).unwrap();
    let again = detect_with(&replay, &DetectOptions::default());
    assert_eq!(again.without_timings(), live.without_timings());
}

#[test]
fn huge_and_endless_attributes_are_bounded_and_quoted_short() {
    // The issue's reproducer linked three PCI attributes to /dev/zero (1 GB
    // RSS, 400 MB of JSON). In a fake root /dev/zero is the root's own
    // (absent) file; the device itself is refused when read at root `/`.
    let live = LiveProbe::new(ProbeOptions::default());
    assert!(matches!(
        live.read("/dev/zero"),
        Err(ProbeError::NotRegular { ref path, ref what }) if path == "/dev/zero" && what == "a character device"
    ));

    let d = fake_root();
    let r = d.path();
    // A 1 GiB sparse file (no disk used) and a 1 MiB file of garbage text.
    let big = r.join("huge");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    std::fs::write(r.join("garbage"), "z".repeat(1 << 20)).unwrap();
    relink(&r.join(PCI_DEV).join("vendor"), "/huge");
    relink(&r.join(PCI_DEV).join("device"), "/garbage");
    relink(&r.join(PCI_DEV).join("class"), "/dev/zero");
    relink(&r.join(PCI_DEV).join("numa_node"), "/garbage");
    let reg = detect_root(r);
    let json = reg.to_json_pretty();
    assert!(json.len() < 256 * 1024, "JSON is {} bytes", json.len());
    let w = warnings(&reg);
    assert!(
        w.contains(&format!(
            "/{PCI_BUS}/vendor: larger than 65536 bytes; not read"
        )),
        "{w}"
    );
    assert!(
        w.contains(&format!(
            "/{PCI_BUS}/device: larger than 65536 bytes; not read"
        )),
        "{w}"
    );
    // No warning quotes more than a short excerpt.
    assert!(reg.warnings.iter().all(|w| w.message.len() < 400), "{w}");
}

#[test]
fn a_short_garbage_attribute_is_quoted_as_a_short_excerpt() {
    let d = fake_root();
    let r = d.path();
    std::fs::write(r.join(PCI_DEV).join("vendor"), "q".repeat(60_000)).unwrap();
    let reg = detect_root(r);
    let w = reg
        .warnings
        .iter()
        .find(|w| {
            w.message
                .contains(&format!("/{PCI_BUS}/vendor: not a hex id"))
        })
        .unwrap_or_else(|| panic!("{}", warnings(&reg)));
    assert!(w.message.contains("… (60000 bytes)"), "{}", w.message);
    assert!(w.message.len() < 200, "{}", w.message);
}

fn tool_opts(root: &Path, tools: &Path, timeout: Duration) -> ProbeOptions {
    ProbeOptions {
        tool_path: Some(vec![tools.to_path_buf()]),
        timeout,
        ..opts(root)
    }
}

#[test]
fn a_tool_leaving_a_setsid_daemon_on_stdout_does_not_hold_up_detection() {
    let tools = tempfile::tempdir().unwrap();
    // Prints its report, then leaves a daemon in a new session (outside the
    // tool's process group, so the group kill cannot reach it) holding stdout.
    let body = "echo report-line; setsid sh -c 'sleep 20' & exit 0";
    write_script(tools.path(), "daemonizer", body);
    let live = LiveProbe::new(tool_opts(
        tools.path(),
        tools.path(),
        Duration::from_secs(2),
    ));
    let t = Instant::now();
    let out = live.run("daemonizer", &[]).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(out.stdout_text(), "report-line\n");
    assert_eq!(out.status, Some(0));

    // Every vendor tool does the same: `detect --timeout 2` returns in time.
    for n in support::VENDOR_TOOLS {
        write_script(tools.path(), n, body);
    }
    let t = Instant::now();
    let reg = detect(
        &tool_opts(&fixture_root(), tools.path(), Duration::from_secs(2)),
        &DetectOptions::default(),
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(reg.device("pci:0000:1b:00.0").is_some());
}

#[test]
fn one_deadline_bounds_tools_run_one_after_another() {
    let tools = tempfile::tempdir().unwrap();
    write_script(tools.path(), "hang", "sleep 20");
    let live = LiveProbe::new(tool_opts(
        tools.path(),
        tools.path(),
        Duration::from_secs(10),
    ))
    .with_deadline(Instant::now() + Duration::from_millis(500));
    let t = Instant::now();
    assert!(matches!(
        live.run("hang", &[]),
        Err(ProbeError::Timeout { .. })
    ));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    // Past the deadline a second run is refused at once, not given 10 s.
    let t = Instant::now();
    assert!(matches!(
        live.run("hang", &[]),
        Err(ProbeError::Timeout { .. })
    ));
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
}

/// A recorded snapshot of the two-socket root in `dir/snap`.
fn record(dir: &Path) -> PathBuf {
    let rec = RecordingProbe::new(LiveProbe::new(opts(&fixture_root())));
    let _ = detect_with(&rec, &DetectOptions::default());
    let snap = dir.join("snap");
    rec.save(&snap, &[]).unwrap();
    snap
}

fn manifest(snap: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(snap.join("manifest.json")).unwrap()).unwrap()
}

fn blob_of(snap: &Path, path: &str) -> String {
    manifest(snap)["files"][path]["ok"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn snapshot_blobs_must_be_regular_files_inside_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let snap = record(dir.path());
    let good = detect_with(
        &ReplayProbe::open(&snap).unwrap(),
        &DetectOptions::default(),
    );
    assert_eq!(good.system.os.as_deref(), Some("Linux 6.8.0-test"));

    // A blob replaced by a link to a host file; another by a FIFO.
    let rel = blob_of(&snap, "/proc/sys/kernel/osrelease");
    relink(&snap.join("blobs").join(&rel), "/etc/hostname");
    let fifo = blob_of(&snap, "/proc/meminfo");
    make_fifo(&snap.join("blobs").join(&fifo));
    let t = Instant::now();
    let replay = ReplayProbe::open(&snap).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    let reg = detect_with(&replay, &DetectOptions::default());
    assert_eq!(
        reg.system.os.as_deref(),
        Some("Linux"),
        "osrelease not read"
    );
    assert_eq!(reg.system.memory.total_bytes, None);
    let w = warnings(&reg);
    assert!(
        w.contains(&format!(
            "blobs/{rel}: a symbolic link, not a regular file; not read"
        )),
        "{w}"
    );
    assert!(
        w.contains(&format!(
            "blobs/{fifo}: a FIFO, not a regular file; not read"
        )),
        "{w}"
    );
}

#[test]
fn a_fifo_or_linked_manifest_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let snap = record(dir.path());
    let real = snap.join("real-manifest.json");
    std::fs::rename(snap.join("manifest.json"), &real).unwrap();
    symlink(&real, snap.join("manifest.json")).unwrap();
    let e = ReplayProbe::open(&snap).err().unwrap().to_string();
    assert!(
        e.contains("manifest.json") && e.contains("symbolic link"),
        "{e}"
    );
    make_fifo(&snap.join("manifest.json"));
    let t = Instant::now();
    let e = ReplayProbe::open(&snap).err().unwrap().to_string();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(e.contains("manifest.json") && e.contains("FIFO"), "{e}");
    // A blobs folder linked elsewhere is refused too.
    std::fs::rename(&real, snap.join("manifest.json")).unwrap();
    let blobs = snap.join("blobs");
    std::fs::rename(&blobs, dir.path().join("elsewhere")).unwrap();
    symlink(dir.path().join("elsewhere"), &blobs).unwrap();
    let replay = ReplayProbe::open(&snap).unwrap();
    let refused = replay.refusals().join("\n");
    assert!(
        refused.contains("/blobs/b000000: resolves outside its directory; not read"),
        "{refused}"
    );
    assert!(replay.read("/proc/meminfo").is_err());
}

#[test]
fn a_blob_named_many_times_is_read_once_and_all_blobs_share_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap");
    std::fs::create_dir_all(snap.join("blobs")).unwrap();
    // 2,000 paths naming one blob, and five sparse 60 MiB blobs (300 MiB,
    // over the 256 MiB budget).
    let mut files = serde_json::Map::new();
    std::fs::write(snap.join("blobs/b000000"), "shared").unwrap();
    for i in 0..2000 {
        files.insert(format!("/f{i}"), serde_json::json!({"ok": "b000000"}));
    }
    for i in 1..=5 {
        let name = format!("b{i:06}");
        std::fs::File::create(snap.join("blobs").join(&name))
            .unwrap()
            .set_len(60 << 20)
            .unwrap();
        files.insert(format!("/big{i}"), serde_json::json!({"ok": name}));
    }
    let m = serde_json::json!({"snapshot_version": 1, "files": files});
    std::fs::write(snap.join("manifest.json"), m.to_string()).unwrap();
    let t = Instant::now();
    let replay = ReplayProbe::open(&snap).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(replay.read("/f1999").unwrap(), b"shared");
    let refused: Vec<String> = replay.refusals();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("blobs/b000005"), "{refused:?}");
    assert!(refused[0].contains("exceed 268435456 bytes"), "{refused:?}");
    assert!(replay.read("/big5").is_err());
    // Blobs under the budget are read; a file read is still bounded.
    assert!(matches!(
        replay.read("/big1"),
        Err(ProbeError::TooLarge { .. })
    ));
    assert_eq!(
        replay.read_limited("/big1", 60 << 20).unwrap().len(),
        60 << 20
    );
}

#[test]
fn snapshot_targets_must_be_provably_absent_or_empty() {
    let dir = tempfile::tempdir().unwrap();
    let rec = RecordingProbe::new(LiveProbe::new(opts(&fixture_root())));
    let _ = detect_with(&rec, &DetectOptions::default());

    // A file, a non-empty directory, a link to a directory: refused untouched.
    let file = dir.path().join("file");
    std::fs::write(&file, "keep").unwrap();
    assert!(matches!(
        rec.save(&file, &[]),
        Err(SnapshotError::NotEmpty { .. })
    ));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), "keep").unwrap();
    assert!(matches!(
        rec.save(&full, &[]),
        Err(SnapshotError::NotEmpty { .. })
    ));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let link = dir.path().join("link");
    symlink(&empty, &link).unwrap();
    assert!(rec.save(&link, &[]).is_err());
    assert!(std::fs::read_dir(&empty).unwrap().next().is_none());

    // Absent and empty both work, and leave no partial directory behind.
    rec.save(&empty, &[]).unwrap();
    assert!(empty.join("manifest.json").is_file());
    rec.save(&dir.path().join("new/deeper"), &[]).unwrap();
    assert!(ReplayProbe::open(&dir.path().join("new/deeper")).is_ok());
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A non-empty directory that cannot be listed (mode 0300): only an
    // unprivileged user is kept out of it (root lists anything).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::write(locked.join("x"), "keep").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o300)).unwrap();
        let e = check_snapshot_dir(&locked).unwrap_err().to_string();
        assert!(e.contains("cannot list it"), "{e}");
        assert!(rec.save(&locked, &[]).is_err());
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(std::fs::read_to_string(locked.join("x")).unwrap(), "keep");
    } else {
        eprintln!(
            "running as root: the unlistable-directory case needs an unprivileged user; skipped"
        );
    }
}

#[test]
fn model_files_that_are_fifos_or_lead_outside_are_errors_naming_them() {
    use ai_hwaccel::plan::load_model;
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("model");
    std::fs::create_dir(&m).unwrap();
    make_fifo(&m.join("config.json"));
    let t = Instant::now();
    let e = load_model(m.to_str().unwrap()).err().unwrap().to_string();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(e.contains("config.json") && e.contains("FIFO"), "{e}");

    make_fifo(&m.join("model.safetensors.index.json"));
    let e = load_model(m.join("model.safetensors.index.json").to_str().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("model.safetensors.index.json") && e.contains("not a regular file"),
        "{e}"
    );

    // An index whose shard is a link out of the directory.
    let m2 = dir.path().join("model2");
    std::fs::create_dir(&m2).unwrap();
    std::fs::write(
        m2.join("model.safetensors.index.json"),
        r#"{"weight_map": {"w": "model-00001-of-00001.safetensors"}}"#,
    )
    .unwrap();
    symlink("/etc/hostname", m2.join("model-00001-of-00001.safetensors")).unwrap();
    let e = load_model(m2.to_str().unwrap()).err().unwrap().to_string();
    assert!(
        e.contains("model-00001-of-00001.safetensors") && e.contains("outside the model directory"),
        "{e}"
    );
    // config.json linked out of the directory.
    let m3 = dir.path().join("model3");
    std::fs::create_dir(&m3).unwrap();
    symlink(
        "../model2/model.safetensors.index.json",
        m3.join("config.json"),
    )
    .unwrap();
    let e = load_model(m3.to_str().unwrap()).err().unwrap().to_string();
    assert!(e.contains("config.json") && e.contains("outside"), "{e}");
}
