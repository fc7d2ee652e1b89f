//! AMD backend tests: every amd-smi / rocm-smi fixture through the `parse`
//! formats, and end-to-end detection over fake roots built from the sysfs
//! and KFD fixtures (plus fake `amd-smi` / `rocm-smi` scripts printing fixtures).
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::FakePci;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::format;
use ai_hwaccel::probe::ProbeOptions;
use ai_hwaccel::{BackendSet, DetectOptions, Device, Registry, detect};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn parse(fmt: &str, rel: &str) -> Vec<Device> {
    let out = (format(fmt).expect("format registered").parse)(&read(rel));
    assert!(out.warnings.is_empty(), "{rel}: {:?}", out.warnings);
    out.devices
}

fn files_in(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixture(dir))
        .unwrap()
        .map(|e| format!("{dir}/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------- formats

#[test]
fn rocm_smi_fixtures_device_counts() {
    let expected = [
        ("telegraf__mi100_rocm571.json", 6),
        ("telegraf__mi100_rocm602.json", 4),
        ("telegraf__rx6700xt_rocm430.json", 1),
        ("telegraf__rx6700xt_rocm571.json", 1),
        ("telegraf__rx6700xt_rocm602.json", 1),
        ("telegraf__rx6700xt_rocm612.json", 1),
        ("telegraf__vega-10-XT.json", 1),
        ("telegraf__vega-20-WKS-GL-XE.json", 1),
    ];
    // The telegraf captures; the others are checked by tests/corpus.rs.
    let telegraf = files_in("rocm-smi-json")
        .into_iter()
        .filter(|f| f.contains("/telegraf__"))
        .count();
    assert_eq!(telegraf, expected.len());
    for (f, n) in expected {
        let d = parse("rocm-smi-json", &format!("rocm-smi-json/{f}"));
        assert_eq!(d.len(), n, "{f}");
        for dev in &d {
            assert_eq!(dev.vendor, "amd");
            assert!(dev.pci_address.is_some(), "{f}");
            assert!(dev.memory_bytes.is_some(), "{f}");
        }
    }
}

#[test]
fn rocm_smi_values() {
    let d = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__mi100_rocm602.json",
    );
    assert_eq!(d[0].id, "pci:0000:83:00.0");
    assert_eq!(d[1].id, "pci:0000:a3:00.0");
    assert_eq!(d[0].name, "AMD Instinct MI100");
    assert_eq!(d[0].memory_bytes, Some(34_342_961_152));
    assert_eq!(d[0].memory_free_bytes, Some(34_342_961_152 - 6_750_208));
    assert_eq!(d[0].driver_version.as_deref(), Some("6.3.6"));
    assert_eq!(d[0].firmware_version.as_deref(), Some("113-D3431401-101"));
    assert_eq!(d[0].power_limit_watts, Some(290.0));
    assert_eq!(d[0].numa_node, Some(1));
    assert_eq!(d[0].extra["fw_ta_xgmi"], "32.00.00.17");
    assert_eq!(d[0].extra["unique_id"], "0x79ccd55167a2124a");
    // Pairwise topology from the system section: PCIe to the three others.
    assert_eq!(d[0].links.len(), 3);
    assert!(d[0].links.iter().all(|l| l.kind == "pcie"));
    assert!(d[0].links.iter().any(|l| l.peer == "pci:0000:e3:00.0"));

    let d = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__rx6700xt_rocm612.json",
    );
    assert_eq!(d[0].name, "AMD Radeon RX 6700/6700 XT / 6800M");
    assert_eq!(d[0].compute_capability.as_deref(), Some("gfx1031"));
    assert_eq!(d[0].memory_bytes, Some(12_868_124_672));
    assert_eq!(d[0].numa_node, Some(0));
    // ROCm 4.3 printed the vendor id as the card series: no name from it.
    let d = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__rx6700xt_rocm430.json",
    );
    assert_eq!(d[0].name, "AMD GPU");
    assert_eq!(d[0].id, "pci:0000:07:00.0");
    // Old upper-case bus, serial present, trimmed system topology names peers by card.
    let d = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__vega-20-WKS-GL-XE.json",
    );
    assert_eq!(d[0].name, "AMD Radeon Instinct MI50 32GB");
    assert_eq!(d[0].serial.as_deref(), Some("692024000810"));
    assert_eq!(d[0].driver_version.as_deref(), Some("5.9.17"));
    assert_eq!(d[0].links.len(), 7);
    assert!(d[0].links.iter().any(|l| l.peer == "card7"));
    let d = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__mi100_rocm571.json",
    );
    assert_eq!(d[0].id, "pci:0000:1e:00.0");
    assert_eq!(d[0].serial, None, "serial 0 is a placeholder");
}

#[test]
fn amd_smi_json_fixtures() {
    // The named captures below; later ones are checked by the corpus test
    // (tests/corpus.rs) from their expect files.
    assert!(files_in("amd-smi-json").len() >= 4);
    let d = parse(
        "amd-smi-json",
        "amd-smi-json/amdsmi-changelog__metric-p-json__1gpu.json",
    );
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].index, Some(0));
    assert_eq!(d[0].extra["socket_power"], "10 W");
    let d = parse(
        "amd-smi-json",
        "amd-smi-json/amdsmi-changelog__topology-json__2gpu.json",
    );
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].links.len(), 1);
    assert_eq!(d[0].links[0].peer, "gpu1");
    assert_eq!(d[0].links[0].kind, "pcie");
    assert_eq!(d[1].links[0].peer, "gpu0");
    // ROCm 6.2+ layout: a `links` array per GPU; the SELF entry is skipped
    // and the peer is named by its bus address.
    let d = parse(
        "amd-smi-json",
        "amd-smi-json/amdsmi-changelog__topology-a-t-json-links__2gpu-pcie.json",
    );
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].id, "pci:0000:08:00.0");
    assert_eq!(d[0].links.len(), 1);
    assert_eq!(d[0].links[0].peer, "pci:0000:44:00.0");
    assert_eq!(d[0].links[0].kind, "pcie");
    assert_eq!(d[1].links[0].peer, "pci:0000:08:00.0");
    // `gpu_data` wrapper of ROCm 6.4+; the driver version printed as the
    // kernel banner keeps the kernel release.
    let d = parse(
        "amd-smi-json",
        "amd-smi-json/device-metrics-exporter__static-json__mi210-gpu-data__kernel-banner-driver.json",
    );
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].driver_version.as_deref(), Some("6.14.0-24-generic"));
    assert_eq!(d[0].compute_units, Some(104));
    assert_eq!(d[0].numa_node, Some(1));
    assert_eq!(d[0].extra["vram_vendor"], "HYNIX");
}

#[test]
fn amd_smi_text_fixtures() {
    let expected = [
        ("amdsmi-changelog__list__2gpu.txt", 2),
        ("amdsmi-changelog__static-asic__mi308x.txt", 1),
        ("amdsmi-changelog__static-limit__2gpu.txt", 2),
        ("amdsmi-readme-2023__static__navi21-0x73bf.txt", 1),
        ("amdsmi-readme__static__mi300a-x4.txt", 4),
        (
            "ojitha-blog__list__strix-point-890m-gfx1150__rocm-7.2.txt",
            1,
        ),
        (
            "ojitha-blog__static__strix-point-890m-gfx1150__rocm-7.2-indented.txt",
            1,
        ),
        ("rocprofiler-sdk-readme__static-a__w7500-navi33.txt", 1),
    ];
    // Every capture named above is present; later ones are checked by the
    // corpus test (tests/corpus.rs) from their expect files.
    let present = files_in("amd-smi-text");
    for (f, _) in expected {
        assert!(present.iter().any(|p| p.ends_with(f)), "{f} is missing");
    }
    for (f, n) in expected {
        let d = parse("amd-smi-text", &format!("amd-smi-text/{f}"));
        assert_eq!(d.len(), n, "{f}");
    }
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-changelog__list__2gpu.txt",
    );
    assert_eq!(d[1].id, "pci:0000:26:00.0");
    assert_eq!(d[1].uuid, None, "redacted UUID is not a UUID");
    assert_eq!(d[1].extra["kfd_id"], "59881");
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-changelog__static-asic__mi308x.txt",
    );
    assert_eq!(d[0].name, "AMD Instinct MI308X");
    assert_eq!(d[0].compute_capability.as_deref(), Some("gfx942"));
    assert_eq!(d[0].compute_units, Some(20));
    assert_eq!(d[0].serial, None);
    // ROCm 7 amd-smi on an MI350X prints the VBIOS section as `IFWI:`.
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/rocm-systems-pr2987__static-bus-ifwi-asic-board-vbios-driver-vram-ras-g0__mi350x-excerpt.txt",
    );
    assert_eq!(d[0].name, "AMD Instinct MI350X");
    assert_eq!(d[0].firmware_version.as_deref(), Some("00154951"));
    assert_eq!(d[0].extra["vbios_part_number"], "113-M350-01-1K0-920A");
    assert_eq!(d[0].compute_capability.as_deref(), Some("gfx950"));
    assert_eq!(d[0].compute_units, Some(128));
    assert_eq!(d[0].serial, None, "redacted");
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-changelog__static-limit__2gpu.txt",
    );
    assert_eq!(d[0].power_limit_watts, Some(203.0));
    assert_eq!(d[1].power_limit_watts, Some(213.0));
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-readme-2023__static__navi21-0x73bf.txt",
    );
    assert_eq!(d[0].name, "AMD Radeon RX 6800/6800 XT/6900 XT");
    assert_eq!(d[0].id, "pci:0000:23:00.0");
    assert_eq!(d[0].memory_bytes, Some(16368 << 20));
    assert_eq!(
        d[0].firmware_version.as_deref(),
        Some("020.001.000.038.015720")
    );
    assert_eq!(d[0].driver_version.as_deref(), Some("6.1.10"));
    assert_eq!(d[0].serial, None, "all-f serial is a placeholder");
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-readme__static__mi300a-x4.txt",
    );
    let ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pci:0000:01:00.0",
            "pci:0001:01:00.0",
            "pci:0002:01:00.0",
            "pci:0003:01:00.0"
        ]
    );
    assert_eq!(d[0].name, "AMD Instinct MI300A");
    assert_eq!(d[0].serial.as_deref(), Some("0x7E8F7E20764E2714"));
    assert_eq!(d[0].memory_bytes, Some(64289 << 20));
    assert_eq!(d[0].driver_version.as_deref(), Some("6.9.0-rc5+"));
    assert_eq!(d[0].partition.as_deref(), Some("SPX"));
    assert_eq!(d[0].extra["memory_partition"], "NPS1");
    assert_eq!(d[0].power_limit_watts, Some(550.0));
    assert_eq!(d[3].numa_node, Some(3));
    // amd-smi 26.2 (ROCm 7.2) on a Strix Point APU, pasted with a markdown
    // indent: the kernel banner as driver version, VRAM DDR5 65536 MB.
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/ojitha-blog__static__strix-point-890m-gfx1150__rocm-7.2-indented.txt",
    );
    assert_eq!(d[0].id, "pci:0000:c5:00.0");
    assert_eq!(d[0].driver_version.as_deref(), Some("6.17.0-1012-oem"));
    assert_eq!(d[0].memory_bytes, Some(65536 << 20));
    assert_eq!(d[0].extra["vram_type"], "DDR5");
    assert_eq!(d[0].serial, None, "an all-zero serial is a placeholder");
    assert_eq!(d[0].power_limit_watts, None, "PPT0 limits are N/A");
    // A `-a` run prints the ASIC section only; the pci.ids-style name keeps
    // its bracketed marketing part.
    let d = parse(
        "amd-smi-text",
        "amd-smi-text/rocprofiler-sdk-readme__static-a__w7500-navi33.txt",
    );
    assert_eq!(d[0].name, "AMD Radeon Pro W7500");
    assert_eq!(d[0].index, Some(2));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn truncated_and_corrupted_outputs_never_panic(cut in 0usize..20_000, flip in 0usize..20_000, byte in proptest::num::u8::ANY) {
        for (fmt, rel) in [
            ("rocm-smi-json", "rocm-smi-json/telegraf__mi100_rocm602.json"),
            ("amd-smi-json", "amd-smi-json/amdsmi-changelog__topology-json__2gpu.json"),
            ("amd-smi-text", "amd-smi-text/amdsmi-readme__static__mi300a-x4.txt"),
        ] {
            let b = support::damaged(read(rel), cut, flip, byte);
            let _ = (format(fmt).unwrap().parse)(&b);
        }
    }
}

// ---------------------------------------------------------------- fake roots

/// A PCI function under `root` the way sysfs lays it out (see roots/make-roots.sh).
fn mkpci(
    root: &Path,
    addr: &str,
    vendor: &str,
    device: &str,
    class: &str,
    driver: Option<&str>,
    numa: i32,
) -> PathBuf {
    FakePci {
        vendor,
        device,
        class,
        driver,
        numa: Some(numa),
        link: true,
    }
    .write(root, addr)
}

fn link_pci(root: &Path, addr: &str, driver: Option<&str>) {
    let d = root.join("sys/devices/pci0000:00").join(addr);
    std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    if let Some(drv) = driver {
        std::fs::create_dir_all(root.join("sys/bus/pci/drivers").join(drv)).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../../bus/pci/drivers/{drv}"),
            d.join("driver"),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink(
        format!("../../../devices/pci0000:00/{addr}"),
        root.join("sys/bus/pci/devices").join(addr),
    )
    .unwrap();
}

fn drm_card(root: &Path, card: &str, addr: &str) {
    let c = root.join("sys/class/drm").join(card);
    std::fs::create_dir_all(&c).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../devices/pci0000:00/{addr}"),
        c.join("device"),
    )
    .unwrap();
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// A tool script on `bin` that prints `fixture` (and records that it ran).
fn fake_tool(bin: &Path, name: &str, fixture_rel: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let p = bin.join(name);
    let marker = bin.join(format!("{name}.ran"));
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\ncat '{}'\n",
            marker.display(),
            fixture(fixture_rel).display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn run(root: &Path, env: &[(&str, &str)]) -> Registry {
    let opts = ProbeOptions {
        root: root.to_path_buf(),
        tool_path: Some(vec![root.join("bin")]),
        env: Some(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..ProbeOptions::default()
    };
    let backends = BackendSet::parse("amd,pci").unwrap();
    detect(
        &opts,
        &DetectOptions {
            backends,
            families: None,
        },
    )
}

fn dev<'a>(r: &'a Registry, id: &str) -> &'a Device {
    r.device(id).unwrap_or_else(|| {
        panic!(
            "{id} missing; have {:?}",
            r.devices.iter().map(|d| &d.id).collect::<Vec<_>>()
        )
    })
}

#[test]
fn drm_sysfs_card_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let addr = "0000:09:00.0";
    copy_tree(
        &fixture("sysfs-drm-amdgpu/procfs__vega10-card0/device"),
        &root.join("sys/devices/pci0000:00").join(addr),
    );
    link_pci(root, addr, None);
    drm_card(root, "card0", addr);
    let r = run(root, &[]);
    let gpus: Vec<&Device> = r.devices.iter().filter(|d| d.vendor == "amd").collect();
    assert_eq!(gpus.len(), 1);
    let d = dev(&r, "pci:0000:09:00.0");
    assert_eq!(d.name, "AMD GPU [1002:687f]");
    assert_eq!(d.memory_bytes, Some(8_573_157_376));
    assert_eq!(d.memory_free_bytes, Some(8_573_157_376 - 1_490_378_752));
    assert_eq!(d.firmware_version.as_deref(), Some("115-D050PIL-100"));
    assert_eq!(d.extra["memory_clock_max_mhz"], "945");
    assert_eq!(d.extra["unique_id"], "0123456789abcdef");
    assert_eq!(d.extra["visible_vram_bytes"], "8573157376");
    assert_eq!(
        d.extra["gtt_total_bytes"], "8573157376",
        "mem_info_gtt_total"
    );
    assert_eq!(d.shared_memory, None, "a discrete card's VRAM is its own");
    assert_eq!(d.extra["vram_vendor"], "samsung");
    assert_eq!(d.driver.as_deref(), Some("amdgpu"), "from uevent");
    assert_eq!(d.numa_node, None, "numa_node -1");
    assert_eq!(d.serial, None, "empty serial_number");
    let link = d.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(link.current_speed_gts, Some(8.0));
    assert_eq!(link.current_width, Some(16));
    assert_eq!(d.source, "amdgpu-sysfs+pci-sysfs");
    assert!(d.available);
}

/// Three more real amdgpu DRM trees, from LACT's test snapshots (provenance
/// in SOURCES.md; LACT pads some files with NULs after the newline): each
/// card placed at the PCI address its `uevent` names, and the values its
/// files hold read back. Strix Point is an APU, but LACT kept no KFD
/// topology, and the KFD `gfx_target_version` is what marks an APU here, so
/// its memory is not checked (the tree alone cannot tell the 512 MiB
/// carve-out from a discrete card's VRAM); its GTT total is.
#[test]
fn lact_drm_cards_end_to_end() {
    // (capture, PCI_SLOT_NAME, (mem_info_vram_total, mem_info_vram_used) of a
    // discrete card, mem_info_gtt_total, vbios_version, current link)
    type Card<'a> = (
        &'a str,
        &'a str,
        Option<(u64, u64)>,
        &'a str,
        &'a str,
        (f64, u32),
    );
    let cards: [Card; 3] = [
        (
            "lact__vega56-card0",
            "0000:0b:00.0",
            Some((8_573_157_376, 16_613_376)),
            "8342863872",
            "115-D050PIL-100",
            (8.0, 16),
        ),
        (
            "lact__r7-240-card1",
            "0000:01:00.0",
            Some((2_147_483_648, 495_321_088)),
            "4069261312",
            "13-C86901_216",
            (5.0, 4),
        ),
        (
            "lact__strixpoint-card1",
            "0000:c1:00.0",
            None,
            "16441004032",
            "113-STRIXEMU-001",
            (16.0, 16),
        ),
    ];
    for (capture, addr, vram, gtt, vbios, (speed, width)) in cards {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        copy_tree(
            &fixture(&format!("sysfs-drm-amdgpu/{capture}/device")),
            &root.join("sys/devices/pci0000:00").join(addr),
        );
        link_pci(root, addr, None);
        drm_card(root, "card0", addr);
        let r = run(root, &[]);
        let d = dev(&r, &format!("pci:{addr}"));
        assert_eq!(d.vendor, "amd", "{capture}");
        if let Some((total, used)) = vram {
            assert_eq!(d.memory_bytes, Some(total), "{capture}");
            assert_eq!(d.memory_free_bytes, Some(total - used), "{capture}");
        }
        assert_eq!(d.extra["gtt_total_bytes"], gtt, "{capture}");
        assert_eq!(d.firmware_version.as_deref(), Some(vbios), "{capture}");
        assert_eq!(d.driver.as_deref(), Some("amdgpu"), "{capture}: uevent");
        let link = d.pci.as_ref().unwrap().link.as_ref().unwrap();
        assert_eq!(
            (link.current_speed_gts, link.current_width),
            (Some(speed), Some(width)),
            "{capture}"
        );
    }
}

/// KFD location_id of each MI210 node → PCI address (bus = location_id >> 8).
const MI210: [(u32, &str); 8] = [
    (2, "0000:63:00.0"),
    (3, "0000:43:00.0"),
    (4, "0000:03:00.0"),
    (5, "0000:26:00.0"),
    (6, "0000:e3:00.0"),
    (7, "0000:c3:00.0"),
    (8, "0000:83:00.0"),
    (9, "0000:a3:00.0"),
];

fn mi210_root(root: &Path) {
    let topo = root.join("sys/class/kfd/kfd/topology");
    copy_tree(&fixture("sysfs-kfd-topology/mi210-xgmi-pcie-8gpu"), &topo);
    for (i, (_, a)) in MI210.iter().enumerate() {
        mkpci(
            root,
            a,
            "1002",
            "740f",
            "038000",
            Some("amdgpu"),
            (i / 4) as i32,
        );
    }
}

#[test]
fn kfd_topology_end_to_end_with_visibility() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    mi210_root(root);
    let r = run(root, &[("HIP_VISIBLE_DEVICES", "0,2")]);
    let amd: Vec<&Device> = r.devices.iter().filter(|d| d.vendor == "amd").collect();
    assert_eq!(amd.len(), 8);
    for (k, (node, a)) in MI210.iter().enumerate() {
        let d = dev(&r, &format!("pci:{a}"));
        assert_eq!(d.name, "AMD Instinct MI210");
        assert_eq!(d.compute_capability.as_deref(), Some("gfx90a"));
        assert_eq!(d.compute_units, Some(104), "416 SIMDs / 4 per CU");
        assert_eq!(d.index, Some(k as u32), "KFD node order");
        assert_eq!(d.extra["kfd_node"], node.to_string());
        assert_eq!(d.numa_node, Some((k / 4) as u32), "from PCI sysfs");
        assert_eq!(d.source, "kfd+pci-sysfs");
        let hive = if k < 4 {
            "aefdf8293fefa6b7"
        } else {
            "fb11632c00f4d272"
        };
        assert_eq!(d.extra["xgmi_hive_id"], hive);
        if k == 0 || k == 2 {
            assert!(d.available, "{a}");
        } else {
            assert!(!d.available, "{a}");
            assert_eq!(
                d.unavailable_reason.as_deref(),
                Some("hidden by HIP_VISIBLE_DEVICES=0,2")
            );
        }
    }
    assert_eq!(dev(&r, "pci:0000:03:00.0").extra["hip_device"], "1");
    // Captured io_links (xGMI to nodes 3, 4, 5) and p2p_links (PCIe paths to nodes 6-9).
    let links = &dev(&r, "pci:0000:63:00.0").links;
    assert_eq!(links.len(), 7);
    assert_eq!(links[0].peer, "pci:0000:43:00.0");
    assert_eq!(links[0].kind, "xgmi");
    assert_eq!(links[0].bandwidth_bytes_per_s, Some(50_000_000_000));
    assert_eq!(links[3].peer, "pci:0000:e3:00.0");
    assert_eq!(links[3].kind, "pcie");
    assert_eq!(r.summary.accelerator_count, 2);

    // ROCR first, then HIP over what is left.
    let r = run(
        root,
        &[
            ("ROCR_VISIBLE_DEVICES", "GPU-51276ac12ce05db3,7"),
            ("CUDA_VISIBLE_DEVICES", "1"),
        ],
    );
    let vis: Vec<&str> = r
        .devices
        .iter()
        .filter(|d| d.vendor == "amd" && d.available)
        .map(|d| d.id.as_str())
        .collect();
    assert_eq!(vis, ["pci:0000:a3:00.0"]);
    assert!(
        dev(&r, "pci:0000:43:00.0")
            .unavailable_reason
            .as_deref()
            .unwrap()
            .contains("CUDA_VISIBLE_DEVICES=1")
    );
    assert!(
        dev(&r, "pci:0000:63:00.0")
            .unavailable_reason
            .as_deref()
            .unwrap()
            .contains("ROCR_VISIBLE_DEVICES")
    );
}

#[test]
fn mi300_compute_partitions() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    copy_tree(
        &fixture("sysfs-kfd-topology/mi300-cpx/topology"),
        &root.join("sys/class/kfd/kfd/topology"),
    );
    let p = mkpci(
        root,
        "0000:05:00.0",
        "1002",
        "74a1",
        "120000",
        Some("amdgpu"),
        0,
    );
    drm_card(root, "card1", "0000:05:00.0");
    // Partition files as amdgpu writes them (not part of the captured fixture).
    std::fs::write(p.join("current_compute_partition"), "CPX\n").unwrap();
    std::fs::write(
        p.join("available_compute_partition"),
        "SPX, DPX, QPX, CPX\n",
    )
    .unwrap();
    std::fs::write(p.join("current_memory_partition"), "NPS1\n").unwrap();
    let r = run(root, &[]);
    let parent = dev(&r, "pci:0000:05:00.0");
    assert_eq!(parent.name, "AMD Instinct MI300X");
    assert!(!parent.available);
    assert_eq!(parent.partition.as_deref(), Some("CPX"));
    assert_eq!(parent.compute_units, Some(76));
    assert_eq!(
        parent.extra["available_compute_partitions"],
        "SPX,DPX,QPX,CPX"
    );
    assert_eq!(parent.extra["memory_partition"], "NPS1");
    for i in 0..2 {
        let c = dev(&r, &format!("pci:0000:05:00.0/xcp{i}"));
        assert_eq!(c.parent.as_deref(), Some("pci:0000:05:00.0"));
        assert_eq!(c.partition.as_deref(), Some("CPX"));
        assert_eq!(c.compute_capability.as_deref(), Some("gfx942"));
        assert_eq!(c.compute_units, Some(38));
        assert_eq!(c.index, Some(i));
        assert_eq!(c.numa_node, Some(0));
        assert_eq!(c.extra["parent_pci_address"], "0000:05:00.0");
        assert!(c.available);
    }
    assert_eq!(r.summary.accelerator_count, 2);
}

#[test]
fn mi308_partitions_memory_from_kfd() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    copy_tree(
        &fixture("sysfs-kfd-topology/mi308-cpx/topology"),
        &root.join("sys/class/kfd/kfd/topology"),
    );
    mkpci(
        root,
        "0000:0a:00.0",
        "1002",
        "74a2",
        "120000",
        Some("amdgpu"),
        0,
    );
    let r = run(root, &[]);
    assert_eq!(r.devices.iter().filter(|d| d.vendor == "amd").count(), 3);
    let c = dev(&r, "pci:0000:0a:00.0/xcp1");
    assert_eq!(c.memory_bytes, Some(51_539_607_552));
    assert_eq!(c.extra["kfd_gpu_id"], "41657");
    assert_eq!(c.compute_units, Some(20));
    assert_eq!(c.name, "AMD Instinct MI308X");
}

#[test]
fn vega10_kfd_without_gfx_version() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    copy_tree(
        &fixture("sysfs-kfd-topology/vega10-1gpu/topology"),
        &root.join("sys/class/kfd/kfd/topology"),
    );
    let r = run(root, &[]);
    let d = dev(&r, "pci:0000:19:00.0");
    assert_eq!(d.compute_units, Some(64));
    assert_eq!(d.compute_capability, None);
    assert_eq!(d.memory_bytes, Some(17_163_091_968));
    assert_eq!(d.source, "kfd");
}

#[test]
fn amd_smi_tool_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    for (i, a) in [
        "0000:01:00.0",
        "0001:01:00.0",
        "0002:01:00.0",
        "0003:01:00.0",
    ]
    .iter()
    .enumerate()
    {
        mkpci(root, a, "1002", "74a0", "038000", Some("amdgpu"), i as i32);
    }
    fake_tool(
        &root.join("bin"),
        "amd-smi",
        "amd-smi-text/amdsmi-readme__static__mi300a-x4.txt",
    );
    fake_tool(
        &root.join("bin"),
        "rocm-smi",
        "rocm-smi-json/telegraf__mi100_rocm602.json",
    );
    let r = run(root, &[("CUDA_VISIBLE_DEVICES", "1")]);
    assert_eq!(
        std::fs::read_to_string(root.join("bin/amd-smi.ran"))
            .unwrap()
            .trim(),
        "static --json"
    );
    assert!(
        !root.join("bin/rocm-smi.ran").exists(),
        "one tool per detection"
    );
    let parsed = parse(
        "amd-smi-text",
        "amd-smi-text/amdsmi-readme__static__mi300a-x4.txt",
    );
    let amd: Vec<&Device> = r.devices.iter().filter(|d| d.vendor == "amd").collect();
    assert_eq!(amd.len(), 4);
    for (k, p) in parsed.iter().enumerate() {
        let d = dev(&r, &p.id);
        assert_eq!(d.name, p.name);
        assert_eq!(d.memory_bytes, p.memory_bytes);
        assert_eq!(d.serial, p.serial);
        assert_eq!(d.driver_version, p.driver_version);
        assert_eq!(d.partition, p.partition);
        assert_eq!(d.numa_node, Some(k as u32));
        assert_eq!(d.source, "amd-smi+pci-sysfs");
        assert_eq!(d.available, k == 1, "{}", d.id);
    }
}

#[test]
fn rocm_smi_fallback_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    for a in [
        "0000:83:00.0",
        "0000:a3:00.0",
        "0000:c3:00.0",
        "0000:e3:00.0",
    ] {
        mkpci(root, a, "1002", "738c", "038000", Some("amdgpu"), 1);
    }
    fake_tool(
        &root.join("bin"),
        "rocm-smi",
        "rocm-smi-json/telegraf__mi100_rocm602.json",
    );
    let r = run(root, &[]);
    assert!(root.join("bin/rocm-smi.ran").exists());
    let parsed = parse(
        "rocm-smi-json",
        "rocm-smi-json/telegraf__mi100_rocm602.json",
    );
    for p in &parsed {
        let d = dev(&r, &p.id);
        assert_eq!(d.name, "AMD Instinct MI100");
        assert_eq!(d.memory_bytes, p.memory_bytes);
        assert_eq!(d.firmware_version, p.firmware_version);
        assert_eq!(d.driver_version.as_deref(), Some("6.3.6"));
        assert_eq!(d.links, p.links);
        assert_eq!(d.source, "rocm-smi+pci-sysfs");
    }
}

#[test]
fn no_amd_gpu_runs_no_tool() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    mkpci(
        root,
        "0000:3b:00.0",
        "10de",
        "2330",
        "030200",
        Some("nvidia"),
        0,
    );
    fake_tool(
        &root.join("bin"),
        "amd-smi",
        "amd-smi-json/amdsmi-changelog__topology-json__2gpu.json",
    );
    let r = run(root, &[]);
    assert!(!root.join("bin/amd-smi.ran").exists());
    assert!(r.devices.iter().all(|d| d.vendor != "amd"));
}

// ------------------------------------------------ Hygon DCUs (hy-smi, DTK rocm-smi)

const MIB: u64 = 1 << 20;
const HY_SMI_CAPTURE: &str =
    "rocm-smi-json/llm-monitor-test__hygon-bw-2cards__hy-smi-json-missing-commas.json";

fn amd_warnings(r: &Registry) -> Vec<&str> {
    r.warnings
        .iter()
        .filter(|w| w.backend == "amd")
        .map(|w| w.message.as_str())
        .collect()
}

/// Only hyhal's `hy-smi` (no PCI scan, no KFD, as in a container given
/// `/opt/hyhal`): its two BW cards, from the production capture with the
/// missing commas, are listed with their memory, use and power.
#[test]
fn hy_smi_alone_end_to_end() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    fake_tool(&root.join("bin"), "hy-smi", HY_SMI_CAPTURE);
    let r = run(root, &[]);
    let args = std::fs::read_to_string(root.join("bin/hy-smi.ran")).unwrap();
    assert_eq!(
        args.trim(),
        "--showproductname --showmeminfo vram --showbus --showuniqueid --showserial --showuse --json"
    );
    let w = amd_warnings(&r);
    assert!(
        w.iter()
            .any(|m| m.starts_with("hy-smi: ") && m.contains("inserting 4 missing comma(s)")),
        "{w:?}"
    );
    assert_eq!(r.devices.len(), 2, "{:?}", r.devices);
    for (id, used_mib, power, temp) in [
        ("hy-smi:card0", 64169, 91.0, 54.0),
        ("hy-smi:card1", 64104, 84.0, 52.0),
    ] {
        let d = dev(&r, id);
        assert_eq!(d.name, "Hygon BW");
        assert_eq!(d.vendor, "hygon");
        assert_eq!(d.family, ai_hwaccel::Family::Gpu);
        assert_eq!(d.source, "hy-smi");
        assert_eq!(d.memory_bytes, Some(65520 * MIB));
        assert_eq!(d.memory_free_bytes, Some((65520 - used_mib) * MIB));
        assert_eq!(d.utilization_percent, Some(0.0));
        assert_eq!(d.power_draw_watts, Some(power));
        assert_eq!(d.temperature_celsius, Some(temp));
        assert!(d.spec.is_none(), "{:?}", d.spec);
    }
}

/// A Hygon DCU on the PCI bus (co-processor class, as lspci shows the
/// K100_AI) with DTK's `rocm-smi`: AMD's `amd-smi` is not asked, and the one
/// card the tool printed without a PCI Bus is the one device found.
#[test]
fn hygon_dcu_from_pci_with_dtk_rocm_smi() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    mkpci(
        root,
        "0000:37:00.0",
        "1d94",
        "6210",
        "0b4000",
        Some("hycu"),
        0,
    );
    let bin = root.join("bin");
    fake_tool(
        &bin,
        "rocm-smi",
        "rocm-smi-json/gpustack__hygon-dcu-0x6210__dtk-24.04.3.json",
    );
    fake_tool(
        &bin,
        "amd-smi",
        "amd-smi-json/amdsmi-changelog__topology-json__2gpu.json",
    );
    let r = run(root, &[]);
    assert!(root.join("bin/rocm-smi.ran").exists());
    assert!(!root.join("bin/amd-smi.ran").exists());
    assert_eq!(r.devices.len(), 1, "{:?}", r.devices);
    let d = dev(&r, "pci:0000:37:00.0");
    assert_eq!(d.vendor, "hygon");
    assert_eq!(d.family, ai_hwaccel::Family::Gpu);
    assert_eq!(d.name, "Hygon DCU xxxx");
    assert_eq!(d.source, "rocm-smi+pci-sysfs");
    assert_eq!(d.memory_bytes, Some(65520 * MIB));
    assert_eq!(d.memory_free_bytes, Some(65518 * MIB));
    assert_eq!(d.utilization_percent, Some(0.0));
    assert_eq!(d.power_draw_watts, Some(80.0));
    assert_eq!(
        d.extra.get("unique_id").map(String::as_str),
        Some("7100fa8866904061")
    );
    assert!(d.spec.is_none(), "{:?}", d.spec);
    assert_eq!(amd_warnings(&r), ["rocm-smi: card0: no readable PCI Bus"]);
}

/// Two Hygon DCUs on the bus, `hy-smi` and `rocm-smi` installed: hy-smi runs
/// first; its two cards carry no PCI Bus, so they are not guessed onto the
/// devices (a warning says so) and the PCI facts stand.
#[test]
fn hygon_prefers_hy_smi_and_does_not_guess_card_order() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    for a in ["0000:37:00.0", "0000:3a:00.0"] {
        mkpci(root, a, "1d94", "6210", "0b4000", Some("hycu"), 0);
    }
    let bin = root.join("bin");
    fake_tool(&bin, "hy-smi", HY_SMI_CAPTURE);
    fake_tool(
        &bin,
        "rocm-smi",
        "rocm-smi-json/gpustack__hygon-dcu-0x6210__dtk-24.04.3.json",
    );
    let r = run(root, &[]);
    assert!(root.join("bin/hy-smi.ran").exists());
    assert!(!root.join("bin/rocm-smi.ran").exists());
    assert_eq!(r.devices.len(), 2, "{:?}", r.devices);
    for a in ["0000:37:00.0", "0000:3a:00.0"] {
        let d = dev(&r, &format!("pci:{a}"));
        assert_eq!(
            (d.vendor.as_str(), d.family),
            ("hygon", ai_hwaccel::Family::Gpu)
        );
        // No tool facts and no amdgpu sysfs: the pci backend's device.
        assert_eq!(d.source, "pci-sysfs");
        assert_eq!(d.memory_bytes, None);
        assert!(d.spec.is_none());
    }
    let w = amd_warnings(&r);
    assert!(
        w.iter().any(|m| m
            == &"hy-smi: 2 GPU(s) printed without a PCI Bus, not matched to the 2 device(s) found; their tool facts are left out"),
        "{w:?}"
    );
}

// ------------------------------------------- captured MI210 xGMI hives (KFD io_links)

/// The two xGMI hives of the MI210 capture, as its io_links define them:
/// type 11 (xGMI) links join every pair of nodes inside a set and none cross.
const MI210_HIVES: [[u64; 4]; 2] = [[2, 3, 4, 5], [6, 7, 8, 9]];
/// NUMA node of each hive's GPUs: the CPU node their PCIe io_link reaches
/// (GPU nodes 2-5 → CPU node 0, 6-9 → CPU node 1 in the capture).
const MI210_HIVE_NUMA: [u32; 2] = [0, 1];

/// A `key value` line of a KFD `properties` file.
fn kfd_prop(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The `properties` texts of a KFD node's `io_links` or `p2p_links`.
fn kfd_links(node_dir: &Path, kind: &str) -> Vec<String> {
    let dir = node_dir.join(kind);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    rd.map(|e| std::fs::read_to_string(e.unwrap().path().join("properties")).unwrap())
        .collect()
}

#[test]
fn mi210_capture_xgmi_hives_numa_and_pcie_paths() {
    use ai_hwaccel::detect::BackendId;
    use std::collections::BTreeSet;

    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let src = fixture("sysfs-kfd-topology/mi210-xgmi-pcie-8gpu");
    copy_tree(&src, &root.join("sys/class/kfd/kfd/topology"));
    // One PCI function per GPU node at the address its `domain`/`location_id`
    // encode (bus << 8 | devfn), on the NUMA node its PCIe io_link names: the
    // kernel's virtual CRAT makes one KFD CPU node per online NUMA node.
    let cpu_nodes: BTreeSet<u64> = (0..10)
        .filter(|n| {
            let p = std::fs::read_to_string(src.join(format!("nodes/{n}/properties"))).unwrap();
            kfd_prop(&p, "simd_count") == Some(0)
        })
        .collect();
    assert_eq!(cpu_nodes, BTreeSet::from([0, 1]));
    let mut id_of: BTreeMap<u64, String> = BTreeMap::new();
    for node in 2..=9u64 {
        let dir = src.join(format!("nodes/{node}"));
        let p = std::fs::read_to_string(dir.join("properties")).unwrap();
        let (domain, loc) = (
            kfd_prop(&p, "domain").unwrap(),
            kfd_prop(&p, "location_id").unwrap(),
        );
        let addr = format!(
            "{domain:04x}:{:02x}:{:02x}.{:x}",
            loc >> 8,
            (loc >> 3) & 0x1f,
            loc & 7
        );
        let numa = kfd_links(&dir, "io_links")
            .iter()
            .filter(|l| kfd_prop(l, "type") == Some(2))
            .filter_map(|l| kfd_prop(l, "node_to"))
            .find(|to| cpu_nodes.contains(to))
            .unwrap();
        FakePci {
            vendor: "1002",
            device: "740f",
            class: "038000",
            driver: Some("amdgpu"),
            numa: Some(i32::try_from(numa).unwrap()),
            link: true,
        }
        .write(root, &addr);
        id_of.insert(node, format!("pci:{addr}"));
    }
    // The same addresses the older MI210 table spells out.
    for (node, a) in MI210 {
        assert_eq!(id_of[&u64::from(node)], format!("pci:{a}"));
    }

    let r = support::detect_fake(
        root,
        &root.join("bin"),
        &[],
        &[BackendId::Amd, BackendId::Pci],
    );
    let gpus: Vec<&Device> = r.devices.iter().filter(|d| d.vendor == "amd").collect();
    assert_eq!(gpus.len(), 8);
    let hive_ids: BTreeSet<&str> = gpus
        .iter()
        .map(|d| d.extra["xgmi_hive_id"].as_str())
        .collect();
    assert_eq!(hive_ids.len(), 2);
    for (h, hive) in MI210_HIVES.iter().enumerate() {
        let other = &MI210_HIVES[1 - h];
        for node in hive {
            let d = dev(&r, &id_of[node]);
            assert_eq!(d.name, "AMD Instinct MI210");
            assert_eq!(d.numa_node, Some(MI210_HIVE_NUMA[h]), "node {node}");
            assert_eq!(
                d.extra["xgmi_hive_id"],
                dev(&r, &id_of[&hive[0]]).extra["xgmi_hive_id"]
            );
            // Exactly three xGMI links, 50000 MB/s each, to the other GPUs of the hive.
            let xgmi: Vec<_> = d.links.iter().filter(|l| l.kind == "xgmi").collect();
            assert_eq!(xgmi.len(), 3, "node {node}: {:?}", d.links);
            assert!(
                xgmi.iter()
                    .all(|l| l.bandwidth_bytes_per_s == Some(50_000_000_000))
            );
            let peers: BTreeSet<&str> = xgmi.iter().map(|l| l.peer.as_str()).collect();
            let want: BTreeSet<&str> = hive
                .iter()
                .filter(|n| *n != node)
                .map(|n| id_of[n].as_str())
                .collect();
            assert_eq!(peers, want, "node {node}");
            // p2p_links: PCIe paths through the hosts to the other hive's four
            // GPUs; they cross the CPU-CPU link (bandwidth 0), so none is known.
            let pcie: Vec<_> = d.links.iter().filter(|l| l.kind == "pcie").collect();
            let peers: BTreeSet<&str> = pcie.iter().map(|l| l.peer.as_str()).collect();
            let want: BTreeSet<&str> = other.iter().map(|n| id_of[n].as_str()).collect();
            assert_eq!(peers, want, "node {node}");
            assert!(pcie.iter().all(|l| l.bandwidth_bytes_per_s.is_none()));
            assert_eq!(d.links.len(), 7, "node {node}: no links to CPU nodes");
        }
    }
}

// ------------------------------------ derived 8x MI300X SPX root (make-mi300x-spx.sh)

/// PCI buses of the eight MI300X in `roots/mi300x-spx-8gpu`, in KFD node order
/// (nodes 2-9): the capture's `location_id` of each GPU's first CPX partition.
const MI300X_SPX_BUSES: [&str; 8] = ["05", "27", "47", "65", "85", "a7", "c7", "e5"];

#[test]
fn mi300x_spx_generated_root_xgmi_mesh() {
    use ai_hwaccel::detect::BackendId;
    use std::collections::BTreeSet;

    let root = fixture("roots/mi300x-spx-8gpu");
    let r = support::detect_fake(
        &root,
        &root.join("bin"),
        &[],
        &[BackendId::Amd, BackendId::Pci],
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let gpus: Vec<&Device> = r.devices.iter().filter(|d| d.vendor == "amd").collect();
    assert_eq!(gpus.len(), 8);
    let ids: Vec<String> = MI300X_SPX_BUSES
        .iter()
        .map(|b| format!("pci:0000:{b}:00.0"))
        .collect();
    for (k, id) in ids.iter().enumerate() {
        let d = dev(&r, id);
        assert_eq!(d.name, "AMD Instinct MI300X");
        assert_eq!(d.compute_capability.as_deref(), Some("gfx942"));
        assert_eq!(d.compute_units, Some(304), "1216 SIMDs / 4 per CU");
        assert!(d.available && d.parent.is_none(), "SPX: one device per GPU");
        assert_eq!(d.index, Some(k as u32));
        assert_eq!(d.extra["kfd_node"], (k + 2).to_string());
        assert_eq!(d.numa_node, Some((k / 4) as u32), "four GPUs per socket");
        assert_eq!(d.source, "kfd+pci-sysfs");
        // Seven xGMI peers (everyone else), 50000 MB/s each; no PCIe paths (one hive).
        assert_eq!(d.links.len(), 7, "{id}: {:?}", d.links);
        assert!(
            d.links
                .iter()
                .all(|l| l.kind == "xgmi" && l.bandwidth_bytes_per_s == Some(50_000_000_000))
        );
        let peers: BTreeSet<&str> = d.links.iter().map(|l| l.peer.as_str()).collect();
        let want: BTreeSet<&str> = ids
            .iter()
            .filter(|p| *p != id)
            .map(String::as_str)
            .collect();
        assert_eq!(peers, want);
    }
    assert_eq!(r.summary.accelerator_count, 8);
}

/// A Strix Halo APU (gfx1151): the GPU at `c4:00.0` as lspci shows it in
/// ollama/ollama#6282, KFD `gfx_target_version` 110501 (what
/// `kgd2kfd_probe` gives GC 11.5.1), GTT total/used as `cat` printed them in
/// apellegr/Strix-Halo-Models ROCM-MEMORY-LIMIT-INVESTIGATION.md; the
/// 512 MiB carve-out is the common BIOS default those reports name (values
/// of the carve-out files made up).
fn strix_halo_root(root: &Path, gtt_total: &str) {
    let addr = "0000:c4:00.0";
    let dev = mkpci(root, addr, "1002", "1586", "038000", Some("amdgpu"), -1);
    for (f, v) in [
        ("mem_info_vram_total", "536870912"),
        ("mem_info_vram_used", "104857600"),
        ("mem_info_gtt_total", gtt_total),
        ("mem_info_gtt_used", "18653184"),
    ] {
        std::fs::write(dev.join(f), format!("{v}\n")).unwrap();
    }
    drm_card(root, "card0", addr);
    let node = root.join("sys/class/kfd/kfd/topology/nodes/1");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(
        node.join("properties"),
        "cpu_cores_count 0\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\n\
         location_id 50176\ndomain 0\ngfx_target_version 110501\n",
    )
    .unwrap();
    std::fs::write(node.join("gpu_id"), "1234\n").unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(root.join("proc/meminfo"), "MemTotal:       131072000 kB\n").unwrap();
}

#[test]
fn strix_halo_apu_uses_the_larger_of_gtt_and_its_carve_out() {
    let t = tempfile::tempdir().unwrap();
    strix_halo_root(t.path(), "123480309760");
    let r = run(t.path(), &[]);
    let d = dev(&r, "pci:0000:c4:00.0");
    assert_eq!(d.compute_capability.as_deref(), Some("gfx1151"));
    assert_eq!(
        d.memory_bytes,
        Some(123_480_309_760),
        "GTT, not the 512 MiB carve-out"
    );
    assert_eq!(d.memory_free_bytes, Some(123_480_309_760 - 18_653_184));
    assert_eq!(d.extra["integrated"], "true");
    let shared = d
        .shared_memory
        .as_ref()
        .expect("an APU shares the host's memory");
    assert_eq!(shared.pool_bytes, Some(131_072_000 * 1024), "MemTotal");
    assert_eq!(shared.device_limit_bytes, Some(123_480_309_760));
    assert!(
        shared
            .source
            .starts_with("pool: /proc/meminfo MemTotal; GPU limit: mem_info_gtt_total"),
        "{}",
        shared.source
    );
    assert_eq!(d.extra["gtt_total_bytes"], "123480309760");

    // A carve-out larger than GTT: the kernel allocates from VRAM.
    let t = tempfile::tempdir().unwrap();
    strix_halo_root(t.path(), "268435456");
    let r = run(t.path(), &[]);
    let d = dev(&r, "pci:0000:c4:00.0");
    assert_eq!(d.memory_bytes, Some(536_870_912));
    assert_eq!(d.memory_free_bytes, Some(536_870_912 - 104_857_600));
    assert!(
        d.shared_memory
            .as_ref()
            .unwrap()
            .source
            .contains("mem_info_vram_total")
    );
}
