//! nvidia-smi reports as people pasted them: elided lines (`...`), redacted
//! UUIDs, clipped terminal columns and `-q -i N` reports of one GPU of many
//! (provenance of each capture in tests/fixtures/SOURCES.md).
#![allow(clippy::disallowed_methods, reason = "the tests read fixtures")]

mod support;
use support::fixture;

use ai_hwaccel::detect::{ParseOutput, format};

fn parse(fmt: &str, rel: &str) -> ParseOutput {
    let bytes = std::fs::read(fixture(rel)).unwrap();
    (format(fmt).expect("format registered").parse)(&bytes)
}

/// An 8 × H800 `nvlink --status` whose author cut GPUs 2-6 with a `...`
/// line: a warning, and the line is no GPU's status message.
#[test]
fn elided_nvlink_report_keeps_no_elision_as_status() {
    let out = parse(
        "nvidia-smi-nvlink",
        "nvidia-smi-nvlink/llm-action__8x-h800-8links-elided.txt",
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("elided output")),
        "{:?}",
        out.warnings
    );
    assert!(!out.devices.is_empty());
    for d in &out.devices {
        assert_eq!(d.extra.get("nvlink_status"), None, "{}", d.id);
    }
    let d = &out.devices[0];
    assert_eq!(d.extra["nvlink_links_total"], "8");
    assert_eq!(d.extra["nvlink_link_speed_bytes_per_s"], "26562000000");
}

/// A V100 whose UUID the author redacted as `...`: no UUID, an id from the
/// index; the links (2 of 6 inactive) as printed.
#[test]
fn redacted_uuid_is_not_an_identity() {
    let out = parse(
        "nvidia-smi-nvlink",
        "nvidia-smi-nvlink/azhpc-diagnostics-issue73__v100-sxm2-32gb-2-inactive-elided.txt",
    );
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.uuid, None);
    assert_eq!(d.id, "nvidia:gpu3");
    assert_eq!(d.index, Some(3));
    assert_eq!(d.name, "Tesla V100-SXM2-32GB");
    assert_eq!(d.extra["nvlink_links_total"], "6");
    assert_eq!(d.extra["nvlink_links_active"], "4");
    assert_eq!(d.extra["nvlink_bandwidth_bytes_per_s"], "103124000000");
}

/// A `topo -m` whose terminal clipped the CPU Affinity column to `-31,64-95`
/// on GPU0-3: those are no CPU lists (warned, left out); GPU4-6's
/// `32-63,96-127` stays; links and NUMA nodes are read.
#[test]
fn clipped_cpu_affinity_is_left_out_with_a_warning() {
    let out = parse(
        "nvidia-smi-topo",
        "nvidia-smi-topo/llm-action__8x-h800-nv8-4nic-clipped.txt",
    );
    assert_eq!(out.devices.len(), 8);
    let clipped: Vec<&String> = out
        .warnings
        .iter()
        .filter(|w| w.contains("is not a CPU list"))
        .collect();
    assert_eq!(clipped.len(), 4, "{:?}", out.warnings);
    for d in &out.devices[..4] {
        assert_eq!(d.extra.get("cpu_affinity"), None, "{}", d.id);
        assert_eq!(d.numa_node, Some(0));
    }
    assert_eq!(out.devices[4].extra["cpu_affinity"], "32-63,96-127");
    assert_eq!(out.devices[4].numa_node, Some(1));
}

/// `nvidia-smi -q -i 0` on an 8-GPU H800 host: `Attached GPUs : 8` over one
/// GPU block; every value of that block is read.
#[test]
fn one_gpu_report_of_an_eight_gpu_host() {
    let out = parse(
        "nvidia-smi-q",
        "nvidia-smi-q/llm-action__h800-i0-of-8__525.105.17.txt",
    );
    assert_eq!(out.devices.len(), 1);
    let d = &out.devices[0];
    assert_eq!(d.name, "NVIDIA H800");
    assert_eq!(d.memory_bytes, Some(81559 << 20));
    assert_eq!(d.driver_version.as_deref(), Some("525.105.17"));
    assert_eq!(d.id, "pci:0000:18:00.0");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("says 8") && w.contains("-i")),
        "{:?}",
        out.warnings
    );
}
