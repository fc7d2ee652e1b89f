//! Impossible physical values (issue 14) become null with a warning naming
//! the field and the value: through `detect` over a fake root (host facts)
//! and through the formats table as `ai-hwaccel parse` runs it (devices).
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::{detect_fake, fixture};

use std::path::Path;

use ai_hwaccel::BackendId;
use ai_hwaccel::detect::format;
use ai_hwaccel::model::plausible::check_devices;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

#[test]
fn impossible_host_facts_from_a_fake_root_are_dropped() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    copy_tree(&fixture("roots/container-cgroup-v2"), root.path());
    let r = root.path();
    // cpu.max with u64::MAX as the quota: 1.8e19 CPUs.
    std::fs::write(
        r.join("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max"),
        "18446744073709551615 1\n",
    )
    .unwrap();
    // MemAvailable of 16 EiB (in kB) against the fixture's 16 GB MemTotal.
    let meminfo = std::fs::read_to_string(r.join("proc/meminfo")).unwrap();
    let meminfo = meminfo.replace(
        "MemAvailable:   14221924 kB",
        "MemAvailable:   18014398509481983 kB",
    );
    assert!(meminfo.contains("18014398509481983"));
    std::fs::write(r.join("proc/meminfo"), meminfo).unwrap();

    let reg = detect_fake(r, bin.path(), &[], &[BackendId::System]);
    let sys = &reg.system;
    assert_eq!(sys.memory.total_bytes, Some(16_201_888 * 1024));
    assert_eq!(sys.memory.available_bytes, None);
    let cg = sys.cgroup.as_ref().expect("the fixture's cgroup");
    assert_eq!(cg.cpu_quota, None);
    let msgs: Vec<&str> = reg
        .warnings
        .iter()
        .filter(|w| w.backend == "system")
        .map(|w| w.message.as_str())
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("cgroup.cpu_quota: 18446744073709552000 is implausible")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.starts_with(
            "memory.available_bytes (MemAvailable): 18446744073709550592 is implausible"
        )),
        "{msgs:?}"
    );
}

/// A two-GPU `nvidia-smi --query-gpu` CSV: the first GPU with the issue's
/// values, the second with real ones (an H100 SXM's 700 W).
const CSV: &str = "name, pci.bus_id, memory.total [MiB], temperature.gpu, power.limit [W]
NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, -81559, 99999999999999999999999 W
NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559 MiB, 31, 700.00 W
";

#[test]
fn impossible_device_values_through_the_formats_table_are_dropped() {
    let mut out = (format("nvidia-smi-csv").unwrap().parse)(CSV.as_bytes());
    assert_eq!(out.devices.len(), 2, "{:?}", out.warnings);
    // The parser reads faithfully; the plausibility pass (as `parse` and
    // `detect` run it) judges.
    assert_eq!(out.devices[0].temperature_celsius, Some(-81559.0));
    check_devices(&mut out.devices, &mut out.warnings);
    let (bad, good) = (&out.devices[0], &out.devices[1]);
    assert_eq!(bad.temperature_celsius, None);
    assert_eq!(bad.power_limit_watts, None);
    assert_eq!(bad.memory_bytes, Some(81_559 << 20));
    assert_eq!(good.temperature_celsius, Some(31.0));
    assert_eq!(good.power_limit_watts, Some(700.0));
    let w = &out.warnings;
    assert!(
        w.iter()
            .any(|m| m.contains("temperature_celsius: -81559 is implausible")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|m| m.contains("power_limit_watts: 100000000000000000000000 is implausible")),
        "{w:?}"
    );
    for p in ["-1 W", "18000000000000000000 W"] {
        let csv = format!(
            "name, pci.bus_id, power.limit [W]\nNVIDIA H100 80GB HBM3, 00000000:18:00.0, {p}\n"
        );
        let mut out = (format("nvidia-smi-csv").unwrap().parse)(csv.as_bytes());
        check_devices(&mut out.devices, &mut out.warnings);
        assert_eq!(out.devices[0].power_limit_watts, None, "{p}");
        assert!(
            out.warnings.iter().any(|m| m.contains("power_limit_watts")),
            "{p}: {:?}",
            out.warnings
        );
    }
}

/// A negative memory size is not a size: null, and said so (issue 14 saw it
/// become null silently).
#[test]
fn a_negative_memory_size_is_null_with_a_warning() {
    let csv = "name, pci.bus_id, memory.total [MiB], memory.free [MiB]\nNVIDIA H100 80GB HBM3, 00000000:18:00.0, -81559 MiB, 81000 MiB\n";
    let out = (format("nvidia-smi-csv").unwrap().parse)(csv.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, None);
    assert_eq!(out.devices[0].memory_free_bytes, Some(81_000 << 20));
    assert!(
        out.warnings
            .iter()
            .any(|w| w == "nvidia-smi csv: row 1: memory.total \"-81559 MiB\" is not a memory size; left null"),
        "{:?}",
        out.warnings
    );
}

/// The same rule in the `-q` and `-q -x` readers and rocm-smi: a value the
/// tool printed that is not a size or number (here a real capture with its
/// figure replaced by a negative one) is null with a warning naming the GPU
/// and field; values around it still read.
#[test]
#[allow(clippy::disallowed_methods, reason = "the test reads fixtures")]
fn unreadable_values_warn_in_every_nvidia_format_and_rocm_smi() {
    let fixture = |p: &str| {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(p),
        )
        .expect("fixture")
    };
    let q = fixture("nvidia-smi-q/gpud__a10__535.129.03.txt")
        .replacen("23028 MiB", "-23028 MiB", 1)
        .replacen("33 C", "-x C", 1);
    let out = (format("nvidia-smi-q").unwrap().parse)(q.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, None);
    assert!(out.devices[0].memory_free_bytes.is_some());
    assert_eq!(out.devices[0].temperature_celsius, None);
    for want in [
        "nvidia-smi -q GPU 0: FB Memory Usage / Total \"-23028 MiB\" is not understood",
        "nvidia-smi -q GPU 0: Temperature / GPU Current Temp \"-x C\" is not understood",
    ] {
        assert!(
            out.warnings.iter().any(|w| w.contains(want)),
            "{want}: {:?}",
            out.warnings
        );
    }

    let x = fixture("nvidia-smi-xml/netdata-godplugin__rtx-3060.xml");
    assert!(x.contains("<total>"), "fixture has an fb total");
    let start = x.find("<total>").unwrap() + "<total>".len();
    let end = start + x[start..].find("</total>").unwrap();
    let x = format!("{}-1 MiB{}", &x[..start], &x[end..]);
    let out = (format("nvidia-smi-xml").unwrap().parse)(x.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, None);
    assert!(
        out.warnings.iter().any(|w| w.contains(
            "nvidia-smi -q -x GPU 0: fb_memory_usage/total \"-1 MiB\" is not understood"
        )),
        "{:?}",
        out.warnings
    );

    let r = fixture("rocm-smi-json/marimo-issue-9237__rx7900xt__showproductname-use-meminfo.json")
        .replacen("\"21458059264\"", "\"-1\"", 1);
    let out = (format("rocm-smi-json").unwrap().parse)(r.as_bytes());
    assert_eq!(out.devices[0].memory_bytes, None);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("VRAM Total Memory (B) \"-1\" is not a memory size; left null")),
        "{:?}",
        out.warnings
    );
}
