//! The plain-text nvidia-smi parsers on every captured fixture: `nvidia-smi
//! -q` (`nvidia-smi-q`) and `nvidia-smi nvlink -s` (`nvidia-smi-nvlink`).
//! Values are read from the files; the `-q` parser is cross-checked against
//! the CSV parser on captures of the same machine and against the fields
//! the XML parser fills; truncated and corrupted copies never panic.
#![allow(clippy::disallowed_methods, reason = "tests read fixtures")]

mod support;
use support::{damaged, fixture, scattered};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::{Device, Family};

const MIB: u64 = 1_048_576;
const Q: &str = "nvidia-smi-q";
const NVLINK: &str = "nvidia-smi-nvlink";

const H100_MIG: &str = "linux-x86_64__nvidia-h100-mig__590.48.01__idle.txt";
const H200_MIG: &str = "linux-x86_64__nvidia-h200-mig__590.48.01__idle.txt";
const H100X8_183: &str = "gpud__h100-80gb-hbm3-x8__535.183.01.txt";
const H100X8_161: &str = "gpud__h100-80gb-hbm3-x8__535.161.08.txt";
const INVALID: &str = "gpud__h100-80gb-hbm3__535.183.01__invalid-truncated.txt";
/// Captures of `nvidia-smi -q -i N`: one GPU of several.
const SELECTED_GPU_REPORTS: &[&str] = &["llm-action__h800-i0-of-8__525.105.17.txt"];

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixture(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn read(dir: &str, name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("{dir}/{name}"))).unwrap()
}

fn parse(fmt: &str, name: &str) -> ParseOutput {
    (format(fmt).unwrap().parse)(&read(fmt, name))
}

fn gpus(out: &ParseOutput) -> Vec<&Device> {
    out.devices.iter().filter(|d| d.parent.is_none()).collect()
}

fn migs(out: &ParseOutput) -> Vec<&Device> {
    out.devices.iter().filter(|d| d.parent.is_some()).collect()
}

fn dev<'a>(out: &'a ParseOutput, id: &str) -> &'a Device {
    out.devices.iter().find(|d| d.id == id).unwrap_or_else(|| {
        panic!(
            "no {id} in {:?}",
            out.devices.iter().map(|d| &d.id).collect::<Vec<_>>()
        )
    })
}

fn bus_ids(out: &ParseOutput) -> Vec<String> {
    gpus(out)
        .iter()
        .map(|d| d.pci_address.unwrap().to_string())
        .collect()
}

/// The `Attached GPUs` count as the file prints it, read without the parser.
fn attached_gpus(bytes: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(bytes)
        .lines()
        .find(|l| l.starts_with("Attached GPUs"))
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// The `devices` count of the corpus expect file of capture `name` in `folder`.
fn expect_devices(folder: &str, name: &str) -> Option<usize> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/expect")
        .join(folder)
        .join(format!("{name}.json"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
    v["devices"].as_u64().map(|n| n as usize)
}

/// GPUs and MIG devices per `-q` fixture; a fixture not listed takes its
/// counts from its corpus expect file.
#[test]
fn every_q_fixture_gives_one_device_per_gpu_block() {
    let expected: BTreeMap<&str, (usize, usize)> = [
        ("gpud__a10__535.129.03.txt", (1, 0)),
        (H100X8_161, (8, 0)),
        (H100X8_183, (8, 0)),
        (INVALID, (1, 0)),
        ("gpud__rtx4090-multi__535.154.05__0.txt", (8, 0)),
        ("gpud__rtx4090-multi__535.154.05__4090.txt", (8, 0)),
        ("gpud__titan-v__560.35.03.txt", (1, 0)),
        ("thamada-gls__8x-v100-sxm2-16gb__550.127.05.txt", (8, 0)),
        ("thamada-gls__gh200-480gb-ats__550.127.05.txt", (1, 0)),
        ("thamada-gls__gtx-680-kepler__470.256.02.txt", (1, 0)),
        ("thamada-gls__rtx-5090-hmm__570.124.06.txt", (1, 0)),
        ("thamada-nvsim__10x-a40__550.127.05.txt", (10, 0)),
        ("thamada-nvsim__2x-h100-nvl__550.54.14.txt", (2, 0)),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.txt",
            (1, 0),
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.txt",
            (1, 0),
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05__idle.txt",
            (1, 0),
        ),
        (
            "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.txt",
            (1, 0),
        ),
        (H100_MIG, (1, 4)),
        (H200_MIG, (1, 5)),
        ("linux-x86_64__nvidia-h200__590.48.01__idle.txt", (1, 0)),
        ("linux-x86_64__nvidia-l40s__595.80__idle.txt", (1, 0)),
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__idle.txt",
            (1, 0),
        ),
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__idle.txt",
            (1, 0),
        ),
    ]
    .into_iter()
    .collect();
    let all = files(Q);
    assert!(all.len() >= expected.len(), "a listed capture is missing");
    for path in all {
        let name = path.file_name().unwrap().to_str().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // A capture added later needs no entry here: its GPU count is the
        // `Attached GPUs` it prints and its MIG count the rest of the
        // devices its corpus expect file names (tests/corpus.rs).
        // `-q -i N` prints the machine's `Attached GPUs` over the blocks of
        // the selected GPUs: the expect file's count is then the blocks'.
        let selected = SELECTED_GPU_REPORTS.contains(&name);
        let (want_gpus, want_migs) = expected.get(name).copied().unwrap_or_else(|| {
            let exp = expect_devices(Q, name)
                .unwrap_or_else(|| panic!("{name}: no expected count and no expect file"));
            let gpus = if selected {
                exp
            } else {
                attached_gpus(&bytes).expect("every capture prints Attached GPUs")
            };
            (gpus, exp - gpus)
        });
        let out = (format(Q).unwrap().parse)(&bytes);
        assert_eq!(gpus(&out).len(), want_gpus, "{name}: {:?}", out.warnings);
        assert_eq!(migs(&out).len(), want_migs, "{name}");
        let attached = attached_gpus(&bytes).expect("every capture prints Attached GPUs");
        if name == INVALID {
            assert_eq!(attached, 8, "the header claims eight GPUs");
            assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        } else if selected {
            assert!(attached > want_gpus, "{name}");
            assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
            assert!(
                out.warnings[0].contains("selected GPUs"),
                "{:?}",
                out.warnings
            );
        } else {
            assert_eq!(attached, want_gpus, "{name}: GPU blocks = Attached GPUs");
            assert!(out.warnings.is_empty(), "{name}: {:?}", out.warnings);
        }
        for d in &out.devices {
            assert_eq!(
                (d.vendor.as_str(), d.family, d.source.as_str()),
                ("nvidia", Family::Gpu, "nvidia-smi"),
                "{name}"
            );
            assert!(d.memory_bytes != Some(0), "{name}: unknown memory is None");
            assert!(d.links.is_empty(), "{name}: -q prints no NVLink peers");
            if name != INVALID {
                assert!(d.memory_bytes.is_some(), "{name}: {} has memory", d.id);
            }
        }
        for (i, g) in gpus(&out).iter().enumerate() {
            assert_eq!(g.index, Some(i as u32), "{name}: index is the block order");
            assert_eq!(g.id, format!("pci:{}", g.pci_address.unwrap()), "{name}");
            assert!(g.uuid.as_deref().unwrap().starts_with("GPU-"), "{name}");
            assert!(g.driver_version.is_some(), "{name}");
            assert!(g.extra.contains_key("cuda_driver_version"), "{name}");
        }
    }
}

#[test]
fn q_h100_in_mig_mode() {
    let out = parse(Q, H100_MIG);
    let g = dev(&out, "pci:0000:00:09.0");
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(g.memory_bytes, Some(81_559 * MIB));
    assert_eq!(g.memory_bytes, Some(85_520_809_984));
    assert_eq!(g.memory_free_bytes, Some(81_022 * MIB));
    assert_eq!(g.extra["memory_used_bytes"], (59 * MIB).to_string());
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-00000000-0000-0000-0000-000000000000")
    );
    assert_eq!(g.driver_version.as_deref(), Some("590.48.01"));
    assert_eq!(g.extra["cuda_driver_version"], "13.1");
    assert_eq!(g.architecture.as_deref(), Some("Hopper"));
    assert_eq!(g.firmware_version.as_deref(), Some("96.00.A5.00.01"));
    assert_eq!(g.compute_capability, None, "-q does not print it");
    assert_eq!(g.power_limit_watts, Some(700.0));
    assert_eq!(g.temperature_celsius, Some(42.0));
    assert_eq!(
        (g.ecc_enabled, g.ecc_uncorrected_errors),
        (Some(true), Some(0))
    );
    for (k, v) in [
        ("mig_mode", "Enabled"),
        ("persistence_mode", "Enabled"),
        ("compute_mode", "Default"),
        ("minor_number", "0"),
        ("virtualization_mode", "Pass-Through"),
    ] {
        assert_eq!(g.extra[k], v, "{k}");
    }
    let info = g.pci.as_ref().unwrap();
    assert_eq!(
        (info.vendor_id.as_str(), info.device_id.as_str()),
        ("10de", "2330")
    );
    assert_eq!(
        (
            info.subsystem_vendor_id.as_deref(),
            info.subsystem_device_id.as_deref()
        ),
        (Some("10de"), Some("16c1"))
    );
    let link = info.link.as_ref().unwrap();
    assert_eq!(
        (
            link.current_speed_gts,
            link.current_width,
            link.max_speed_gts,
            link.max_width
        ),
        (Some(32.0), Some(16), Some(32.0), Some(16)),
        "PCIe gen 5 x16"
    );

    let m = migs(&out);
    let ids: Vec<&str> = m.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pci:0000:00:09.0/mig-2-0",
            "pci:0000:00:09.0/mig-3-0",
            "pci:0000:00:09.0/mig-9-0",
            "pci:0000:00:09.0/mig-10-0"
        ]
    );
    let mem: Vec<Option<u64>> = m.iter().map(|d| d.memory_bytes).collect();
    let want: Vec<Option<u64>> = [40_448, 20_096, 9_984, 9_984]
        .iter()
        .map(|&n| Some(n * MIB))
        .collect();
    assert_eq!(mem, want);
    let free: Vec<Option<u64>> = m.iter().map(|d| d.memory_free_bytes).collect();
    let want: Vec<Option<u64>> = [40_423, 20_080, 9_976, 9_976]
        .iter()
        .map(|&n| Some(n * MIB))
        .collect();
    assert_eq!(free, want);
    let sms: Vec<Option<u32>> = m.iter().map(|d| d.compute_units).collect();
    assert_eq!(sms, [Some(60), Some(32), Some(16), Some(16)]);
    for (i, d) in m.iter().enumerate() {
        assert_eq!(d.index, Some(i as u32));
        assert_eq!(d.parent.as_deref(), Some("pci:0000:00:09.0"));
        assert_eq!(d.pci_address, None, "not its own PCI function");
        assert_eq!(d.partition, None, "the profile is not printed");
        assert_eq!(d.name, "NVIDIA H100 80GB HBM3 MIG instance");
        assert_eq!(d.driver_version.as_deref(), Some("590.48.01"));
        assert_eq!(d.ecc_uncorrected_errors, Some(0));
        assert_eq!(d.extra["compute_instance_id"], "0");
    }
}

#[test]
fn q_h200_mig_instances_share_gpu_instance_memory() {
    let out = parse(Q, H200_MIG);
    let g = dev(&out, "pci:0000:83:00.0");
    assert_eq!(g.name, "NVIDIA H200");
    assert_eq!(g.memory_bytes, Some(143_771 * MIB));
    assert_eq!(g.memory_free_bytes, Some(143_103 * MIB));
    assert_eq!(g.extra["mig_mode"], "Enabled");
    assert_eq!(g.firmware_version.as_deref(), Some("96.00.A5.00.03"));
    let m = migs(&out);
    assert_eq!(m.len(), 5);
    let got: Vec<(String, String, Option<u64>, Option<u32>)> = m
        .iter()
        .map(|d| {
            (
                d.extra["gpu_instance_id"].clone(),
                d.extra["compute_instance_id"].clone(),
                d.memory_bytes.map(|b| b / MIB),
                d.compute_units,
            )
        })
        .collect();
    let s = |v: &str| v.to_string();
    assert_eq!(
        got,
        [
            (s("2"), s("0"), Some(71_424), Some(16)),
            (s("2"), s("1"), Some(71_424), Some(32)),
            (s("3"), s("0"), Some(33_280), Some(32)),
            (s("9"), s("0"), Some(16_384), Some(16)),
            (s("10"), s("0"), Some(16_384), Some(16)),
        ],
        "two compute instances of GPU instance 2 report the same shared memory"
    );
    assert_eq!(
        m.iter().map(|d| d.index).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(3), Some(4)]
    );
}

#[test]
fn q_eight_h100_bus_ids_and_values() {
    for (file, driver, buses, fw, first_uuid) in [
        (
            H100X8_183,
            "535.183.01",
            [
                "0000:53:00.0",
                "0000:64:00.0",
                "0000:75:00.0",
                "0000:86:00.0",
                "0000:97:00.0",
                "0000:a8:00.0",
                "0000:b9:00.0",
                "0000:ca:00.0",
            ],
            "96.00.74.00.01",
            "GPU-566e6f65-c38e-b12f-4824-6944218668b9",
        ),
        (
            H100X8_161,
            "535.161.08",
            [
                "0000:19:00.0",
                "0000:3b:00.0",
                "0000:4c:00.0",
                "0000:5d:00.0",
                "0000:9b:00.0",
                "0000:bb:00.0",
                "0000:cb:00.0",
                "0000:db:00.0",
            ],
            "96.00.74.00.0D",
            "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa",
        ),
    ] {
        let out = parse(Q, file);
        assert_eq!(bus_ids(&out), buses, "{file}");
        let g = gpus(&out);
        assert_eq!(g[0].uuid.as_deref(), Some(first_uuid), "{file}");
        let uuids: BTreeSet<_> = g.iter().map(|d| d.uuid.clone()).collect();
        assert_eq!(uuids.len(), 8, "{file}: distinct UUIDs");
        for (i, d) in g.iter().enumerate() {
            assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
            assert_eq!(d.memory_bytes, Some(81_559 * MIB), "{file}");
            assert_eq!(d.driver_version.as_deref(), Some(driver));
            assert_eq!(d.extra["cuda_driver_version"], "12.2");
            assert_eq!(d.firmware_version.as_deref(), Some(fw));
            assert_eq!(d.power_limit_watts, Some(700.0));
            assert_eq!(
                (d.ecc_enabled, d.ecc_uncorrected_errors),
                (Some(true), Some(0))
            );
            assert_eq!(d.extra["mig_mode"], "Disabled");
            assert_eq!(d.extra["minor_number"], i.to_string());
            let link = d.pci.as_ref().unwrap().link.as_ref().unwrap();
            assert_eq!(
                (link.current_speed_gts, link.current_width),
                (Some(32.0), Some(16))
            );
        }
    }
    let out = parse(Q, H100X8_183);
    let busy = dev(&out, "pci:0000:75:00.0");
    assert_eq!(busy.extra["memory_used_bytes"], (9_221 * MIB).to_string());
    assert_eq!(busy.serial.as_deref(), Some("1654922018857"));
    assert_eq!(busy.temperature_celsius, Some(39.0));
}

#[test]
fn q_eight_rtx_4090_two_captures() {
    for (file, buses, minors, fw) in [
        (
            "gpud__rtx4090-multi__535.154.05__0.txt",
            ["01", "23", "41", "61", "81", "a1", "c1", "e1"],
            ["3", "2", "1", "0", "7", "6", "5", "4"],
            "95.02.18.C0.09",
        ),
        (
            "gpud__rtx4090-multi__535.154.05__4090.txt",
            ["01", "21", "41", "61", "81", "a1", "c1", "e1"],
            ["2", "3", "1", "0", "6", "7", "5", "4"],
            "95.02.3C.00.02",
        ),
    ] {
        let out = parse(Q, file);
        let want: Vec<String> = buses.iter().map(|b| format!("0000:{b}:00.0")).collect();
        assert_eq!(bus_ids(&out), want, "{file}");
        let got_minors: Vec<&str> = gpus(&out)
            .iter()
            .map(|d| d.extra["minor_number"].as_str())
            .collect();
        assert_eq!(
            got_minors, minors,
            "{file}: minor numbers are not bus order"
        );
        for d in gpus(&out) {
            assert_eq!(d.name, "NVIDIA GeForce RTX 4090");
            assert_eq!(d.memory_bytes, Some(24_564 * MIB));
            assert_eq!(d.architecture.as_deref(), Some("Ada Lovelace"));
            assert_eq!(d.power_limit_watts, Some(450.0));
            assert_eq!(d.firmware_version.as_deref(), Some(fw));
            assert_eq!(d.serial, None, "N/A");
            assert_eq!(
                (d.ecc_enabled, d.ecc_uncorrected_errors),
                (Some(false), None),
                "ECC off, every counter N/A"
            );
            assert_eq!(d.extra.get("mig_mode"), None, "N/A");
            let info = d.pci.as_ref().unwrap();
            assert_eq!(info.device_id, "2684");
            assert_eq!(info.link.as_ref().unwrap().max_speed_gts, Some(16.0));
        }
    }
    let out = parse(Q, "gpud__rtx4090-multi__535.154.05__0.txt");
    let idle = dev(&out, "pci:0000:81:00.0");
    let link = idle.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(link.current_speed_gts, Some(2.5), "gen 1 while idle");
    assert_eq!(idle.memory_free_bytes, Some(4 * MIB));
}

#[test]
fn q_older_consumer_and_windows_layouts() {
    let a10 = parse(Q, "gpud__a10__535.129.03.txt");
    let g = &a10.devices[0];
    assert_eq!(
        (g.id.as_str(), g.name.as_str()),
        ("pci:0000:07:00.0", "NVIDIA A10")
    );
    assert_eq!(g.memory_bytes, Some(23_028 * MIB));
    assert_eq!(g.memory_free_bytes, Some(22_511 * MIB));
    assert_eq!(g.serial.as_deref(), Some("1324521052681"));
    assert_eq!(g.power_limit_watts, Some(150.0));
    assert_eq!(
        (g.ecc_enabled, g.ecc_uncorrected_errors),
        (Some(true), Some(0)),
        "`SRAM/DRAM Uncorrectable` counters summed"
    );
    assert_eq!(g.extra.get("mig_mode"), None, "N/A on an A10");
    assert_eq!(
        g.pci.as_ref().unwrap().subsystem_device_id.as_deref(),
        Some("1482")
    );
    let link = g.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.max_width),
        (Some(16.0), Some(16))
    );

    let titan = parse(Q, "gpud__titan-v__560.35.03.txt");
    let g = &titan.devices[0];
    assert_eq!(g.name, "NVIDIA TITAN V");
    assert_eq!(g.memory_bytes, Some(12_288 * MIB));
    assert_eq!(g.extra["cuda_driver_version"], "12.6");
    assert_eq!(g.power_limit_watts, Some(250.0));
    assert_eq!(
        (g.ecc_enabled, g.ecc_uncorrected_errors),
        (None, None),
        "ECC mode and `Double Bit` → `Total` are N/A"
    );
    let link = g.pci.as_ref().unwrap().link.as_ref().unwrap();
    assert_eq!(
        (link.current_speed_gts, link.max_speed_gts),
        (Some(2.5), Some(8.0))
    );

    let l40s = parse(Q, "linux-x86_64__nvidia-l40s__595.80__idle.txt");
    let g = &l40s.devices[0];
    assert_eq!(
        (g.name.as_str(), g.memory_bytes),
        ("NVIDIA L40S", Some(46_068 * MIB))
    );
    assert_eq!(g.driver_version.as_deref(), Some("595.80"));
    assert_eq!(g.power_limit_watts, Some(350.0));
    assert_eq!(
        (g.ecc_enabled, g.ecc_uncorrected_errors),
        (Some(true), Some(0))
    );
    assert_eq!(g.extra.get("mig_mode"), None);

    // Driver 610 appends a deprecation note to the versions and moves the
    // power limit under `GPU Ceiling Power Limit`.
    for (file, driver) in [
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__idle.txt",
            "610.62",
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.txt",
            "610.57.04",
        ),
    ] {
        let out = parse(Q, file);
        let g = &out.devices[0];
        assert_eq!(g.driver_version.as_deref(), Some(driver), "{file}");
        assert_eq!(g.extra["cuda_driver_version"], "13.3", "{file}");
        assert_eq!(g.power_limit_watts, Some(250.0), "{file}");
        assert_eq!(g.memory_bytes, Some(8_192 * MIB), "{file}");
        assert_eq!(g.pci_address.unwrap().to_string(), "0000:0c:00.0");
        let info = g.pci.as_ref().unwrap();
        assert_eq!(
            (info.device_id.as_str(), info.subsystem_vendor_id.as_deref()),
            ("1e81", Some("1458"))
        );
    }
    let win = parse(
        Q,
        "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__idle.txt",
    );
    let g = &win.devices[0];
    assert_eq!(g.firmware_version.as_deref(), Some("90.04.7a.40.73"));
    assert_eq!(
        (
            g.extra.get("minor_number"),
            g.extra.get("persistence_mode"),
            g.extra.get("virtualization_mode")
        ),
        (None, None, None),
        "N/A / None on Windows"
    );
    let win591 = parse(
        Q,
        "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__idle.txt",
    );
    assert_eq!(win591.devices[0].driver_version.as_deref(), Some("591.86"));
    assert_eq!(win591.devices[0].extra["cuda_driver_version"], "13.1");
}

#[test]
fn q_truncated_report_keeps_what_it_has_and_warns() {
    let out = parse(Q, INVALID);
    assert_eq!(out.devices.len(), 1);
    let g = &out.devices[0];
    assert_eq!(g.id, "pci:0000:53:00.0");
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-566e6f65-c38e-b12f-4824-6944218668b9")
    );
    assert_eq!(g.driver_version.as_deref(), Some("535.183.01"));
    assert_eq!(
        (g.memory_bytes, g.power_limit_watts, g.ecc_enabled),
        (None, None, None),
        "the report stops before those sections"
    );
    assert!(
        out.warnings[0].contains("says 8") && out.warnings[0].contains("1 GPU block"),
        "{:?}",
        out.warnings
    );
}

/// `-q` and `--query-gpu` CSV captured together on the same machine (the
/// nvidia_gpu_exporter bundles) agree on every field both print. The CSV
/// has `compute_cap` (-q does not print it); temperature is a live reading.
#[test]
fn q_agrees_with_csv_captured_on_the_same_machine() {
    let mut pairs = 0;
    for csv in files("nvidia-smi-csv") {
        let stem = csv.file_stem().unwrap().to_str().unwrap().to_string();
        let q = fixture(&format!("{Q}/{stem}.txt"));
        if !q.exists() {
            continue;
        }
        pairs += 1;
        let c = (format("nvidia-smi-csv").unwrap().parse)(&std::fs::read(&csv).unwrap());
        let t = (format(Q).unwrap().parse)(&std::fs::read(&q).unwrap());
        assert_eq!(c.devices.len(), 1, "{stem}");
        let cv = serde_json::to_value(&c.devices[0]).unwrap();
        let tv = serde_json::to_value(&t.devices[0]).unwrap();
        for (k, v) in cv.as_object().unwrap() {
            // Readings taken at different moments differ (temperature, power,
            // utilization); the -q report has no compute capability.
            if [
                "compute_capability",
                "temperature_celsius",
                "power_draw_watts",
                "utilization_percent",
            ]
            .contains(&k.as_str())
            {
                continue;
            }
            if k == "extra" {
                for (ek, ev) in v.as_object().unwrap() {
                    assert_eq!(Some(ev), tv["extra"].get(ek), "{stem}: extra.{ek}");
                }
            } else if !v.is_null() {
                assert_eq!(v, &tv[k], "{stem}: {k}");
            }
        }
    }
    assert_eq!(pairs, 12, "twelve machines have both captures");
}

/// Keys of a device's JSON that hold a value, with `extra.*` keys.
fn filled(d: &Device) -> BTreeSet<String> {
    let v = serde_json::to_value(d).unwrap();
    let mut keys = BTreeSet::new();
    for (k, x) in v.as_object().unwrap() {
        match x {
            serde_json::Value::Null => {}
            serde_json::Value::Array(a) if a.is_empty() => {}
            serde_json::Value::Object(o) if k == "extra" => {
                keys.extend(o.keys().map(|e| format!("extra.{e}")));
            }
            _ => {
                keys.insert(k.clone());
            }
        }
    }
    keys
}

/// Every field the XML parser fills on any XML fixture (GPUs and MIG
/// devices separately) is filled by the -q parser on the H100 MIG capture,
/// except what `-q` never prints: compute capability and NVLink peers.
#[test]
fn q_fills_every_field_the_xml_parser_fills() {
    let (mut xml_gpu, mut xml_mig) = (BTreeSet::new(), BTreeSet::new());
    for p in files("nvidia-smi-xml") {
        let out = (format("nvidia-smi-xml").unwrap().parse)(&std::fs::read(p).unwrap());
        for d in &out.devices {
            let set = if d.parent.is_none() {
                &mut xml_gpu
            } else {
                &mut xml_mig
            };
            set.extend(filled(d));
        }
    }
    assert!(xml_gpu.contains("power_limit_watts") && xml_mig.contains("compute_units"));
    let q = parse(Q, H100_MIG);
    let q_gpu = filled(gpus(&q)[0]);
    let q_mig: BTreeSet<String> = migs(&q).iter().flat_map(|d| filled(d)).collect();
    // Utilization is `N/A` for a GPU in MIG mode (this capture's GPU).
    let not_printed: BTreeSet<String> = ["compute_capability", "links", "utilization_percent"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let missing: Vec<_> = xml_gpu
        .difference(&q_gpu)
        .filter(|k| !not_printed.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "GPU fields the -q parser misses: {missing:?}"
    );
    let missing: Vec<_> = xml_mig
        .difference(&q_mig)
        .filter(|k| !not_printed.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "MIG fields the -q parser misses: {missing:?}"
    );
}

// ---------------------------------------------------------------- nvlink -s

fn nvlink_extra<'a>(d: &'a Device, k: &str) -> Option<&'a str> {
    d.extra.get(k).map(String::as_str)
}

/// Devices and (active, total) link counts per GPU for every nvlink fixture.
#[test]
fn every_nvlink_fixture_counts_links_honestly() {
    type Counts = (Option<&'static str>, Option<&'static str>);
    let none: Counts = (None, None);
    let inactive: Counts = (Some("0"), None);
    let absent: Counts = (Some("0"), Some("0"));
    let expected: BTreeMap<&str, (usize, Counts)> = [
        (
            "gpud__nvlink-status__a100-sxm4-80gb-x8.txt",
            (8, (Some("12"), Some("12"))),
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
            (1, inactive),
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt",
            (1, inactive),
        ),
        (
            "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt",
            (1, absent),
        ),
        (
            "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
            (1, (Some("18"), Some("18"))),
        ),
        ("linux-x86_64__nvidia-h100-mig__590.48.01.txt", (1, none)),
        ("linux-x86_64__nvidia-h200-mig__590.48.01.txt", (1, none)),
        (
            "linux-x86_64__nvidia-h200__590.48.01.txt",
            (1, (Some("18"), Some("18"))),
        ),
        ("linux-x86_64__nvidia-l40s__595.80.txt", (1, absent)),
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt",
            (1, inactive),
        ),
        (
            "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt",
            (1, inactive),
        ),
    ]
    .into_iter()
    .collect();
    let all = files(NVLINK);
    assert!(all.len() >= expected.len(), "a listed capture is missing");
    for path in all {
        let name = path.file_name().unwrap().to_str().unwrap();
        let out = (format(NVLINK).unwrap().parse)(&std::fs::read(&path).unwrap());
        // A capture added later needs no entry here: its count is the
        // `devices` of its corpus expect file, and its per-link values are
        // checked there by the reader of the capture, not here.
        let Some(&(n, (active, total))) = expected.get(name) else {
            let n = expect_devices(NVLINK, name)
                .unwrap_or_else(|| panic!("{name}: no expected count and no expect file"));
            assert_eq!(out.devices.len(), n, "{name}");
            // Captures whose author cut GPUs out with `...` lines warn of
            // that and of nothing else.
            if name.contains("elided") {
                assert!(!out.warnings.is_empty(), "{name}");
                assert!(
                    out.warnings
                        .iter()
                        .all(|w| w.contains("elided") || w.contains("not under a GPU line")),
                    "{name}: {:?}",
                    out.warnings
                );
            } else {
                assert!(out.warnings.is_empty(), "{name}: {:?}", out.warnings);
            }
            continue;
        };
        assert!(out.warnings.is_empty(), "{name}: {:?}", out.warnings);
        assert_eq!(out.devices.len(), n, "{name}");
        for (i, d) in out.devices.iter().enumerate() {
            assert_eq!((d.vendor.as_str(), d.family), ("nvidia", Family::Gpu));
            assert_eq!(d.source, "nvidia-smi");
            assert_eq!(d.index, Some(i as u32), "{name}");
            assert_eq!(d.id, format!("nvidia:{}", d.uuid.as_deref().unwrap()));
            assert!(d.links.is_empty(), "{name}: peers are not printed");
            assert_eq!(nvlink_extra(d, "nvlink_links_active"), active, "{name}");
            assert_eq!(nvlink_extra(d, "nvlink_links_total"), total, "{name}");
            if active == Some("0") {
                assert_eq!(nvlink_extra(d, "nvlink_bandwidth_bytes_per_s"), Some("0"));
                assert_eq!(nvlink_extra(d, "nvlink_link_speed_bytes_per_s"), None);
            }
            if active.is_none() || active == Some("0") {
                assert!(
                    d.extra.contains_key("nvlink_status"),
                    "{name}: the message is kept"
                );
            }
        }
    }
}

#[test]
fn nvlink_a100_eight_gpus_twelve_links_of_25_gb_s() {
    let out = parse(NVLINK, "gpud__nvlink-status__a100-sxm4-80gb-x8.txt");
    assert_eq!(out.devices.len(), 8);
    let d = &out.devices[0];
    assert_eq!(d.id, "nvidia:GPU-5269b708-678a-b1a8-60f0-c90406537486");
    assert_eq!(d.name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(
        out.devices[7].uuid.as_deref(),
        Some("GPU-754035b4-4708-efcd-b261-623aea38bcad")
    );
    for d in &out.devices {
        assert_eq!(d.name, "NVIDIA A100-SXM4-80GB");
        assert_eq!(nvlink_extra(d, "nvlink_links_active"), Some("12"));
        assert_eq!(
            nvlink_extra(d, "nvlink_link_speed_bytes_per_s"),
            Some("25000000000")
        );
        assert_eq!(
            nvlink_extra(d, "nvlink_bandwidth_bytes_per_s"),
            Some("300000000000")
        );
    }
}

#[test]
fn nvlink_h100_h200_eighteen_links_at_the_printed_rate() {
    for (file, name) in [
        (
            "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
            "NVIDIA H100 80GB HBM3",
        ),
        ("linux-x86_64__nvidia-h200__590.48.01.txt", "NVIDIA H200"),
    ] {
        let out = parse(NVLINK, file);
        let d = &out.devices[0];
        assert_eq!(d.name, name);
        assert_eq!(nvlink_extra(d, "nvlink_links_active"), Some("18"));
        assert_eq!(
            nvlink_extra(d, "nvlink_link_speed_bytes_per_s"),
            Some("26562000000"),
            "26.562 GB/s as printed (tab-indented lines)"
        );
        assert_eq!(
            nvlink_extra(d, "nvlink_bandwidth_bytes_per_s"),
            Some((18u64 * 26_562_000_000).to_string().as_str())
        );
    }
    let mig = parse(NVLINK, "linux-x86_64__nvidia-h100-mig__590.48.01.txt");
    assert_eq!(
        nvlink_extra(&mig.devices[0], "nvlink_status"),
        Some("Nvlink queries are not supported for Devices in MIG mode")
    );
    let none = parse(NVLINK, "linux-x86_64__nvidia-l40s__595.80.txt");
    assert_eq!(
        nvlink_extra(&none.devices[0], "nvlink_status"),
        Some("Device does not have or support Nvlink")
    );
}

/// Real captures: two H100 PCIe cards joined by NVLink bridges list 18 links
/// each, 12 of them at 26.562 GB/s and 6 `<inactive>` (hpe-japan-elearning);
/// seven B300 at NVLink 5's printed 53.125 GB/s; two A100 PCIe without links.
#[test]
fn nvlink_captures_with_inactive_links_and_nvlink5_rates() {
    let out = parse(
        NVLINK,
        "hpe-japan-elearning__nvlink-s__2x-h100-pcie-nvlink-bridge__555.42.02.txt",
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    assert_eq!(
        out.devices[1].uuid.as_deref(),
        Some("GPU-9b1446e2-8a89-4cf6-b68c-a98d99e958d3")
    );
    for d in &out.devices {
        assert_eq!(d.name, "NVIDIA H100 PCIe");
        assert_eq!(nvlink_extra(d, "nvlink_links_total"), Some("18"));
        assert_eq!(nvlink_extra(d, "nvlink_links_active"), Some("12"));
        assert_eq!(
            nvlink_extra(d, "nvlink_link_speed_bytes_per_s"),
            Some("26562000000")
        );
        assert_eq!(
            nvlink_extra(d, "nvlink_bandwidth_bytes_per_s"),
            Some((12u64 * 26_562_000_000).to_string().as_str())
        );
    }
    // Blackwell Ultra: 18 links at 53.125 GB/s each (Dell XE9780 log).
    let b300 = parse(
        NVLINK,
        "xe9780-perf-test__nvlink-status__7x-b300-sxm6-ac__610.57.04.txt",
    );
    assert!(b300.warnings.is_empty(), "{:?}", b300.warnings);
    assert_eq!(b300.devices.len(), 7);
    for d in &b300.devices {
        assert_eq!(nvlink_extra(d, "nvlink_links_active"), Some("18"));
        assert_eq!(
            nvlink_extra(d, "nvlink_link_speed_bytes_per_s"),
            Some("53125000000")
        );
        assert_eq!(
            nvlink_extra(d, "nvlink_bandwidth_bytes_per_s"),
            Some((18u64 * 53_125_000_000).to_string().as_str())
        );
    }
    // Two A100 PCIe cards without a bridge: the message in place of links.
    let none = parse(
        NVLINK,
        "hpe-japan-elearning__nvlink-s__2x-a100-pcie-40gb-no-links__555.42.02.txt",
    );
    assert_eq!(none.devices.len(), 2);
    for d in &none.devices {
        assert_eq!(nvlink_extra(d, "nvlink_links_active"), Some("0"));
        assert_eq!(
            nvlink_extra(d, "nvlink_status"),
            Some("NVML: Unable to retrieve NVLink information as all links are inActive")
        );
    }
}

#[test]
fn error_outputs_give_no_device_and_a_warning() {
    for fmt in [Q, NVLINK] {
        for input in [
            &b""[..],
            b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            b"No devices were found\n",
        ] {
            let out = (format(fmt).unwrap().parse)(input);
            assert!(out.devices.is_empty(), "{fmt}: {input:?}");
            assert!(!out.warnings.is_empty(), "{fmt}: {input:?}");
        }
    }
}

fn all_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = Vec::new();
    for fmt in [Q, NVLINK] {
        for p in files(fmt) {
            v.push((fmt, std::fs::read(p).unwrap()));
        }
    }
    v
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn truncated_or_corrupted_fixtures_never_panic(
        which in 0usize..1000,
        cut in 0.0f64..1.0,
        flip in 0usize..100_000,
        byte in proptest::num::u8::ANY,
    ) {
        let inputs = all_inputs();
        let (fmt, bytes) = &inputs[which % inputs.len()];
        let n = (bytes.len() as f64 * cut) as usize;
        let _ = (format(fmt).unwrap().parse)(&bytes[..n]);
        let _ = (format(fmt).unwrap().parse)(&damaged(bytes.clone(), n, flip, byte));
        let _ = (format(fmt).unwrap().parse)(&damaged(bytes.clone(), usize::MAX, flip, byte));
    }

    #[test]
    fn many_corruptions_never_panic(
        which in 0usize..1000,
        edits in proptest::collection::vec((0.0f64..1.0, proptest::num::u8::ANY), 1..32),
    ) {
        let inputs = all_inputs();
        let (fmt, bytes) = &inputs[which % inputs.len()];
        let _ = (format(fmt).unwrap().parse)(&scattered(bytes, &edits));
    }
}

/// Every cut point of the smaller captures (not a sample): the parsers see
/// each prefix, including ones that end inside a key, a value or a UTF-8
/// sequence, without panicking; the `-q` GPU count never exceeds the full one.
#[test]
fn every_prefix_of_small_captures_parses() {
    for (fmt, name) in [
        (Q, H100_MIG),
        (NVLINK, "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"),
        (NVLINK, "linux-x86_64__nvidia-l40s__595.80.txt"),
    ] {
        let bytes = read(fmt, name);
        let full = (format(fmt).unwrap().parse)(&bytes).devices.len();
        for n in 0..=bytes.len() {
            let out = (format(fmt).unwrap().parse)(&bytes[..n]);
            assert!(out.devices.len() <= full, "{name}[..{n}]");
        }
    }
}
