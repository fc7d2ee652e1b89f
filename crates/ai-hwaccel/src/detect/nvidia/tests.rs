//! Unit tests of the backend glue: value helpers, visibility rules, the
//! topology join and the NVML → nvidia-smi → procfs fallback chain.

use std::collections::BTreeMap;
use std::sync::Mutex;

mod fake_nvml;

use super::*;
use crate::probe::{ProbeError, ToolOutput};

const XML_A100_MIG: &[u8] =
    include_bytes!("../../../tests/fixtures/nvidia-smi-xml/telegraf__a100-sxm4-v12.xml");

/// An in-memory machine: files, tool outputs by command line, environment,
/// and whether native libraries may be loaded.
#[derive(Default)]
struct FakeProbe {
    files: BTreeMap<String, Vec<u8>>,
    tools: BTreeMap<String, ToolOutput>,
    env: BTreeMap<String, String>,
    native: bool,
    runs: Mutex<Vec<String>>,
}

impl FakeProbe {
    fn file(mut self, path: &str, text: &str) -> Self {
        self.files
            .insert(path.to_string(), text.as_bytes().to_vec());
        self
    }

    fn tool(mut self, cmd: &str, stdout: &[u8]) -> Self {
        self.tools.insert(
            cmd.to_string(),
            ToolOutput {
                status: Some(0),
                stdout: stdout.to_vec(),
                ..Default::default()
            },
        );
        self
    }

    /// A PCI function under /sys/bus/pci/devices.
    fn pci(self, addr: &str, device: &str, numa: i32, driver: Option<&str>) -> Self {
        let dir = format!("/sys/bus/pci/devices/{addr}");
        let mut p = self
            .file(&format!("{dir}/vendor"), "0x10de\n")
            .file(&format!("{dir}/device"), &format!("0x{device}\n"))
            .file(&format!("{dir}/class"), "0x030200\n")
            .file(&format!("{dir}/numa_node"), &format!("{numa}\n"));
        if let Some(d) = driver {
            p.files.insert(
                format!("{dir}/driver"),
                format!("LINK:../../drivers/{d}").into_bytes(),
            );
        }
        p
    }

    fn runs(&self) -> Vec<String> {
        self.runs.lock().unwrap().clone()
    }
}

impl Probe for FakeProbe {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.files
            .get(path)
            .filter(|b| !b.starts_with(b"LINK:"))
            .cloned()
            .ok_or_else(|| ProbeError::NotFound {
                path: path.to_string(),
            })
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or("").to_string())
            .collect();
        names.dedup();
        if names.is_empty() {
            return Err(ProbeError::NotFound {
                path: path.to_string(),
            });
        }
        Ok(names)
    }

    fn read_link(&self, path: &str) -> Result<String, ProbeError> {
        self.files
            .get(path)
            .and_then(|b| b.strip_prefix(b"LINK:"))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .ok_or_else(|| ProbeError::NotFound {
                path: path.to_string(),
            })
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        let cmd = std::iter::once(tool)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        self.runs.lock().unwrap().push(cmd.clone());
        self.tools
            .get(&cmd)
            .cloned()
            .ok_or_else(|| ProbeError::ToolNotFound {
                tool: tool.to_string(),
            })
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }

    fn allows_native_libraries(&self) -> bool {
        self.native
    }
}

fn run(p: &FakeProbe, libs: &[&str]) -> BackendOutput {
    let ctx = Context::new(p);
    detect_using(&ctx, libs)
}

#[test]
fn value_helpers() {
    assert_eq!(parse_memory("81559 MiB", "MiB"), Some(81_559 * 1_048_576));
    assert_eq!(parse_memory("16280", "MiB"), Some(16_280 * MIB));
    assert_eq!(parse_memory("[N/A]", "MiB"), None);
    assert_eq!(parse_memory("12 parsecs", "MiB"), None);
    assert_eq!(parse_with_unit("400.00 W", &["W"]), Some(400.0));
    assert_eq!(parse_with_unit("36 C", &["C"]), Some(36.0));
    assert_eq!(parse_with_unit("36 F", &["C"]), None);
    assert_eq!(parse_uint("16x"), Some(16));
    assert_eq!(parse_uint("0x233010DE"), Some(0x2330_10de));
    assert_eq!(known("[Not Supported]"), None);
    assert_eq!(known(" N/A "), None);
    assert_eq!(known(" Default "), Some("Default"));
    assert_eq!(gen_to_gts(5), Some(32.0));
    assert_eq!(gen_to_gts(0), None);
    let info = tool_pci_info(Some(0x2330_10de), Some(0x16c1_10de), PcieLink::default()).unwrap();
    assert_eq!(
        (info.vendor_id.as_str(), info.device_id.as_str()),
        ("10de", "2330")
    );
    assert_eq!(info.subsystem_device_id.as_deref(), Some("16c1"));
    assert_eq!(
        tool_pci_info(Some(0x0000_00de), None, PcieLink::default()),
        None,
        "a masked id (`000000DE`) is not an id"
    );
    assert_eq!(
        mig_profile_from_name("NVIDIA H100 80GB HBM3 MIG 3g.40gb").as_deref(),
        Some("3g.40gb")
    );
    assert_eq!(mig_profile_from_name("NVIDIA H100 80GB HBM3"), None);
}

fn gpu(index: u32, uuid: &str) -> Device {
    let mut d = Device::new(
        format!("pci:0000:{index:02x}:00.0"),
        "GPU",
        VENDOR,
        Family::Gpu,
        "t",
    );
    d.index = Some(index);
    d.uuid = Some(uuid.to_string());
    d
}

fn visibility_of(env: &[(&str, &str)], devices: &mut [Device]) -> Vec<bool> {
    let p = FakeProbe {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    for d in devices.iter_mut() {
        d.available = true;
        d.unavailable_reason = None;
    }
    apply_visibility(devices, &p);
    devices.iter().map(|d| d.available).collect()
}

#[test]
fn visible_devices_rules() {
    let mut devs = vec![
        gpu(0, "GPU-aaaa1111-0000-0000-0000-000000000000"),
        gpu(1, "GPU-bbbb2222-0000-0000-0000-000000000000"),
    ];
    let mut mig = mig_device(&devs[1], Some(3), Some(0), "t");
    mig.uuid = Some("MIG-cccc3333-0000-0000-0000-000000000000".to_string());
    mig.index = Some(0);
    devs.push(mig);
    let cuda = "CUDA_VISIBLE_DEVICES";
    let nv = "NVIDIA_VISIBLE_DEVICES";
    assert_eq!(visibility_of(&[], &mut devs), [true, true, true]);
    assert_eq!(
        visibility_of(&[(cuda, "")], &mut devs),
        [false, false, false]
    );
    assert_eq!(
        visibility_of(&[(cuda, "0")], &mut devs),
        [true, false, false]
    );
    assert_eq!(
        visibility_of(&[(cuda, "1")], &mut devs),
        [false, true, true],
        "a GPU's MIG instances follow it"
    );
    assert_eq!(
        visibility_of(&[(cuda, "GPU-bbbb")], &mut devs),
        [false, true, true],
        "UUID prefixes"
    );
    assert_eq!(
        visibility_of(
            &[(cuda, "MIG-cccc3333-0000-0000-0000-000000000000")],
            &mut devs
        ),
        [false, false, true]
    );
    assert_eq!(
        visibility_of(
            &[(cuda, "MIG-GPU-bbbb2222-0000-0000-0000-000000000000/3/0")],
            &mut devs
        ),
        [false, false, true],
        "legacy MIG-GPU-<uuid>/<gi>/<ci>"
    );
    assert_eq!(
        visibility_of(&[(cuda, "-1,0")], &mut devs),
        [false, false, false],
        "CUDA stops at an invalid entry"
    );
    assert_eq!(
        visibility_of(&[(cuda, "1,bogus!,0")], &mut devs),
        [false, true, true]
    );
    assert_eq!(visibility_of(&[(nv, "all")], &mut devs), [true, true, true]);
    assert_eq!(
        visibility_of(&[(nv, "void")], &mut devs),
        [true, true, true]
    );
    assert_eq!(visibility_of(&[(nv, "")], &mut devs), [true, true, true]);
    assert_eq!(
        visibility_of(&[(nv, "none")], &mut devs),
        [false, false, false]
    );
    assert_eq!(
        visibility_of(&[(nv, "1:0")], &mut devs),
        [false, false, true]
    );
    assert_eq!(
        visibility_of(&[(nv, "0"), (cuda, "1")], &mut devs),
        [false, false, false]
    );
    visibility_of(&[(cuda, "0")], &mut devs);
    assert_eq!(
        devs[1].unavailable_reason.as_deref(),
        Some("hidden by CUDA_VISIBLE_DEVICES")
    );
    visibility_of(&[(nv, "none")], &mut devs);
    assert_eq!(
        devs[0].unavailable_reason.as_deref(),
        Some("hidden by NVIDIA_VISIBLE_DEVICES")
    );
}

#[test]
fn topology_links_are_joined_by_index() {
    // A two-GPU matrix as nvidia-smi prints it (written for this test).
    let topo = "\t\u{1b}[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u{1b}[0m\n\
                GPU0\t X \tNV12\tPXB\t0-31\t0\t\tN/A\n\
                GPU1\tNV12\t X \tSYS\t32-63\t1\t\tN/A\n\
                NIC0\tPXB\tSYS\t X \t\t\t\t\n\nLegend:\n";
    let m = smi_topo::parse_matrix(topo);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let mut devs = vec![gpu(0, "GPU-a"), gpu(1, "GPU-b")];
    apply_topology(&mut devs, &m.gpus);
    assert_eq!(devs[0].links.len(), 1);
    assert_eq!(devs[0].links[0].peer, "pci:0000:01:00.0");
    assert_eq!(
        (devs[0].links[0].kind.as_str(), devs[0].links[0].count),
        ("nvlink", Some(12))
    );
    assert_eq!(devs[1].numa_node, Some(1));
    assert_eq!(
        devs[1].extra.get("cpu_affinity").map(String::as_str),
        Some("32-63")
    );
}

#[test]
fn without_nvidia_hardware_only_the_tool_is_asked() {
    // No PCI GPU, driver directory or device node: NVML is not loaded (a
    // wrong library would otherwise be reported), but a tool on the search
    // path still answers (a sandbox that passes only nvidia-smi).
    let p = FakeProbe {
        native: true,
        ..Default::default()
    }
    .tool("nvidia-smi -q -x", XML_A100_MIG);
    let out = run(&p, &["libc.so.6"]);
    assert_eq!(p.runs(), ["nvidia-smi -q -x"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.iter().filter(|d| d.parent.is_none()).count(), 1);
    // Without the tool: nothing, silently.
    let p = FakeProbe {
        native: true,
        ..Default::default()
    };
    let out = run(&p, &["libc.so.6"]);
    assert!(out.devices.is_empty() && out.warnings.is_empty());
}

#[test]
fn missing_nvml_falls_back_to_nvidia_smi() {
    for libs in [&["libnvidia-ml-not-here.so.1"][..], &["libc.so.6"][..]] {
        let p = FakeProbe {
            native: true,
            ..Default::default()
        }
        .pci("0000:01:00.0", "20b2", 1, Some("nvidia"))
        .tool("nvidia-smi -q -x", XML_A100_MIG);
        let out = run(&p, libs);
        assert_eq!(
            p.runs(),
            ["nvidia-smi -q -x"],
            "one run, no topo for one GPU"
        );
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert_eq!(out.devices.len(), 5, "the A100 and its 4 MIG instances");
        let gpu = &out.devices[0];
        assert_eq!(gpu.source, "nvidia-smi");
        assert_eq!(
            gpu.uuid.as_deref(),
            Some("GPU-513536b6-7d19-9063-b049-1e69664bb298")
        );
        assert_eq!(gpu.numa_node, Some(1), "joined from the PCI function");
        assert!(
            out.devices[1..].iter().all(|m| m.numa_node == Some(1)),
            "MIG instances too"
        );
        assert_eq!(gpu.driver.as_deref(), Some("nvidia"));
        assert_eq!(
            gpu.pci.as_ref().unwrap().device_id,
            "20b2",
            "sysfs identity kept"
        );
    }
}

#[test]
fn without_nvml_and_smi_procfs_fills_in() {
    let info = "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 140\nGPU UUID: \t GPU-513536b6-7d19-9063-b049-1e69664bb298\nVideo BIOS: \t 92.00.36.00.10\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 0\n";
    let p = FakeProbe::default()
        .pci("0000:01:00.0", "20b2", 0, Some("nvidia"))
        .pci("0000:02:00.0", "20b2", 0, Some("vfio-pci"))
        .file("/proc/driver/nvidia/gpus/0000:01:00.0/information", info)
        .file(
            "/proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n",
        );
    let out = run(&p, &["libc.so.6"]);
    assert_eq!(p.runs(), ["nvidia-smi -q -x"]);
    assert!(
        out.warnings.is_empty(),
        "an absent tool is not a warning: {:?}",
        out.warnings
    );
    assert_eq!(
        out.devices.len(),
        1,
        "the vfio-bound GPU is left to the pci backend"
    );
    let d = &out.devices[0];
    assert_eq!(d.name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(d.source, "nvidia-procfs");
    assert_eq!(d.firmware_version.as_deref(), Some("92.00.36.00.10"));
    assert_eq!(d.driver_version.as_deref(), Some("535.54.03"));
    let missing = d.extra.get("missing").unwrap();
    assert!(
        missing.contains("NVML not loaded") && missing.contains("nvidia-smi"),
        "{missing}"
    );
    assert!(d.available);
}

#[test]
fn failing_nvidia_smi_is_a_warning() {
    let mut p = FakeProbe::default().pci("0000:01:00.0", "20b2", 0, Some("nvidia"));
    p.tools.insert(
        "nvidia-smi -q -x".to_string(),
        ToolOutput {
            status: Some(9),
            stdout:
                b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
                    .to_vec(),
            ..Default::default()
        },
    );
    let out = run(&p, &[]);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("exit status Some(9)"));
    assert_eq!(out.devices.len(), 1);
    assert!(out.devices[0].extra["missing"].contains("exit status"));
}
