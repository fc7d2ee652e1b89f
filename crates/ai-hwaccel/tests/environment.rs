//! The environment the process runs in (container, Kubernetes, Slurm,
//! visibility variables), visibility applied by the Neuron, TPU and Intel
//! backends, and the cloud instance from DMI — all over fake roots in temp
//! directories with an explicit environment.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake, fixture, write_script};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ai_hwaccel::model::{CloudInstance, ContainerInfo, VisibilityVar};
use ai_hwaccel::{BackendId, Registry};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Copy a directory tree (files and directories; the roots used here have no links).
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

fn vis(variable: &str, value: &str, vendor: &str) -> VisibilityVar {
    VisibilityVar {
        variable: variable.into(),
        value: value.into(),
        vendor: vendor.into(),
    }
}

fn reason(r: &Registry, id: &str) -> Option<String> {
    let d = r
        .device(id)
        .unwrap_or_else(|| panic!("{id} missing: {:?}", r.devices));
    assert_eq!(d.available, d.unavailable_reason.is_none(), "{id}");
    d.unavailable_reason.clone()
}

// ---- NVIDIA GPUs in a Kubernetes pod --------------------------------------

const NV_ADDRS: [&str; 4] = [
    "0000:1b:00.0",
    "0000:3b:00.0",
    "0000:9b:00.0",
    "0000:bb:00.0",
];

fn nv_uuid(i: usize) -> String {
    format!("GPU-5c4e3a1b-0000-1111-2222-33334444555{i}")
}

/// Four H100 (10de:2330) bound to `nvidia`, each with the driver's procfs
/// `information` file (format of `nvidia/procfs.rs`'s tests); no nvidia-smi,
/// so the backend lists them from PCI + procfs.
fn nvidia_gpus(root: &Path) {
    for (i, addr) in NV_ADDRS.iter().enumerate() {
        FakePci {
            vendor: "10de",
            device: "2330",
            class: "030200",
            driver: Some("nvidia"),
            numa: Some(0),
            link: true,
        }
        .write(root, addr);
        write(
            root,
            &format!("proc/driver/nvidia/gpus/{addr}/information"),
            &format!(
                "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 154\nGPU UUID: \t {}\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nBus Location: \t {addr}\nDevice Minor: \t {i}\nGPU Excluded:\t No\n",
                nv_uuid(i)
            ),
        );
    }
}

const POD_CGROUP: &str = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f5e1a2b_4c6d_7e8f_9a0b_1c2d3e4f5a6b.slice/cri-containerd-1207db63eaeb133a85d2b614d12d95d4dff3f29af60d7a7b3c7d39abdf4bd119.scope";

/// `roots/container-cgroup-v2` (8 GiB, 1.5 CPUs, cpuset 0-3) moved under a
/// containerd CRI cgroup path as the systemd cgroup driver lays it out, with
/// the pod's service-account mount and four GPUs on the host's PCI bus.
fn k8s_pod_root(root: &Path) {
    copy_tree(&fixture("roots/container-cgroup-v2"), root);
    write(root, "proc/self/cgroup", &format!("0::{POD_CGROUP}\n"));
    let pod = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f5e1a2b_4c6d_7e8f_9a0b_1c2d3e4f5a6b.slice";
    write(root, &format!("{pod}/memory.max"), "8589934592\n");
    let ctr = format!("{}{POD_CGROUP}", "sys/fs/cgroup");
    write(root, &format!("{ctr}/memory.max"), "max\n");
    write(root, &format!("{ctr}/memory.current"), "1073741824\n");
    write(root, &format!("{ctr}/cpu.max"), "150000 100000\n");
    write(root, &format!("{ctr}/cpuset.cpus.effective"), "0-3\n");
    let sa = "var/run/secrets/kubernetes.io/serviceaccount";
    write(root, &format!("{sa}/namespace"), "ml-team");
    write(root, &format!("{sa}/token"), "eyJhbGciOi.fake.token");
    nvidia_gpus(root);
}

#[test]
fn kubernetes_pod_with_restricted_gpu_visibility() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    k8s_pod_root(root.path());
    let nv_value = format!("{},{}", nv_uuid(2), nv_uuid(3));
    let cuda_value = nv_uuid(3);
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
            ("POD_NAMESPACE", "not-this-one"),
            ("POD_NAME", "trainer-0"),
            ("HOSTNAME", "trainer-0-hostname"),
            ("NODE_NAME", "gpu-node-7"),
            ("NVIDIA_VISIBLE_DEVICES", &nv_value),
            ("CUDA_VISIBLE_DEVICES", &cuda_value),
        ],
        &[BackendId::System, BackendId::Nvidia],
    );
    let env = &r.system.environment;
    assert_eq!(
        env.container,
        Some(ContainerInfo {
            runtime: "containerd".into(),
            evidence: format!("/proc/self/cgroup: {POD_CGROUP}"),
        }),
        "the cri-containerd scope names the engine; there is no /.dockerenv"
    );
    let k = env.kubernetes.as_ref().expect("a pod");
    assert_eq!(
        k.namespace.as_deref(),
        Some("ml-team"),
        "the service-account file wins over POD_NAMESPACE"
    );
    assert_eq!(k.pod_name.as_deref(), Some("trainer-0"));
    assert_eq!(k.node_name.as_deref(), Some("gpu-node-7"));
    assert_eq!(
        k.allocations,
        [format!("NVIDIA_VISIBLE_DEVICES={nv_value}")]
    );
    assert_eq!(
        env.visibility,
        [
            vis("CUDA_VISIBLE_DEVICES", &cuda_value, "nvidia"),
            vis("NVIDIA_VISIBLE_DEVICES", &nv_value, "nvidia"),
        ]
    );
    assert_eq!(env.slurm, None);

    // The container's limits are still read on the new path.
    let cg = r.system.cgroup.as_ref().unwrap();
    assert_eq!(cg.path, POD_CGROUP);
    assert_eq!(cg.cpuset_cpus.as_deref(), Some(&[0, 1, 2, 3][..]));
    assert_eq!(cg.memory_limit_bytes, Some(8 << 30));
    assert_eq!(r.system.cpu.usable_cpus, Some(2));

    // Hidden GPUs stay listed, unavailable, with the variable that hid them.
    let nv: Vec<_> = r.devices.iter().filter(|d| d.vendor == "nvidia").collect();
    assert_eq!(nv.len(), 4, "{:?}", r.devices);
    assert_eq!(reason(&r, "pci:0000:bb:00.0"), None);
    // The runtime's selection hides GPUs 0 and 1; CUDA's hides GPU 2 of the two left.
    for a in &NV_ADDRS[..2] {
        assert_eq!(
            reason(&r, &format!("pci:{a}")).as_deref(),
            Some("hidden by NVIDIA_VISIBLE_DEVICES"),
            "{a}"
        );
    }
    assert_eq!(
        reason(&r, &format!("pci:{}", NV_ADDRS[2])).as_deref(),
        Some("hidden by CUDA_VISIBLE_DEVICES")
    );
    assert_eq!(r.summary.accelerator_count, 1);
}

#[test]
fn kubernetes_without_engine_evidence_and_hostname_fallback() {
    // The old layout of the fixture root (cgroupfs driver: `/kubepods/pod1/ctr`)
    // does not name the engine; only the service account says "pod".
    let root = tempfile::tempdir().unwrap();
    copy_tree(&fixture("roots/container-cgroup-v2"), root.path());
    write(
        root.path(),
        "run/secrets/kubernetes.io/serviceaccount/namespace",
        "default\n",
    );
    let r = detect_fake(
        root.path(),
        root.path(),
        &[("HOSTNAME", "web-5d8f7c9b4-x2x7q"), ("POD_NAMESPACE", "x")],
        &[BackendId::System],
    );
    let env = &r.system.environment;
    assert_eq!(
        env.container.as_ref().map(|c| c.runtime.as_str()),
        Some("kubernetes")
    );
    assert_eq!(
        env.container.as_ref().unwrap().evidence,
        "/proc/self/cgroup: /kubepods/pod1/ctr"
    );
    let k = env.kubernetes.as_ref().unwrap();
    assert_eq!(k.namespace.as_deref(), Some("default"));
    assert_eq!(k.pod_name.as_deref(), Some("web-5d8f7c9b4-x2x7q"));
    assert_eq!(k.node_name, None);
    assert!(k.allocations.is_empty());
    assert!(env.visibility.is_empty());
}

#[test]
fn docker_podman_and_plain_hosts() {
    // cgroup v1 without a namespace: `/docker/abc`.
    let r = detect_fake(
        &fixture("roots/container-cgroup-v1"),
        Path::new("/nonexistent"),
        &[],
        &[BackendId::System],
    );
    assert_eq!(
        r.system.environment.container,
        Some(ContainerInfo {
            runtime: "docker".into(),
            evidence: "/proc/self/cgroup: /docker/abc".into()
        })
    );

    // cgroup v2 with a namespace (`0::/`): only /.dockerenv tells.
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "proc/self/cgroup", "0::/\n");
    write(root.path(), ".dockerenv", "");
    let r = detect_fake(root.path(), root.path(), &[], &[BackendId::System]);
    assert_eq!(
        r.system.environment.container,
        Some(ContainerInfo {
            runtime: "docker".into(),
            evidence: "/.dockerenv".into()
        })
    );

    // Podman: /run/.containerenv (podman-run(1)) and container=podman.
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "proc/self/cgroup", "0::/\n");
    write(
        root.path(),
        "run/.containerenv",
        "engine=\"podman-4.9.3\"\nname=\"web\"\nid=\"8f3c2a\"\nrootless=1\n",
    );
    let r = detect_fake(
        root.path(),
        root.path(),
        &[("container", "podman")],
        &[BackendId::System],
    );
    assert_eq!(
        r.system.environment.container,
        Some(ContainerInfo {
            runtime: "podman".into(),
            evidence: "/run/.containerenv: engine=\"podman-4.9.3\"".into()
        })
    );

    // A host: nothing at all.
    let root = tempfile::tempdir().unwrap();
    write(
        root.path(),
        "proc/self/cgroup",
        "0::/user.slice/user-1000.slice/session-3.scope\n",
    );
    let r = detect_fake(root.path(), root.path(), &[], &[BackendId::System]);
    assert_eq!(r.system.environment, Default::default());
    assert_eq!(r.system.cloud, None, "no /sys/class/dmi/id");
}

// ---- Slurm ----------------------------------------------------------------

#[test]
fn slurm_job_step_environment() {
    let root = tempfile::tempdir().unwrap();
    let r = detect_fake(
        root.path(),
        root.path(),
        &[
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_GPUS", "0,1,2,3"),
            ("SLURM_STEP_GPUS", "2,3"),
            ("GPU_DEVICE_ORDINAL", "0,1"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
            ("SLURM_CPUS_ON_NODE", "32"),
            ("SLURM_JOB_NODELIST", "gpu-[001-004]"),
        ],
        &[BackendId::System],
    );
    let env = &r.system.environment;
    let s = env.slurm.as_ref().expect("in a job");
    assert_eq!(s.job_id.as_deref(), Some("4242"));
    assert_eq!(s.step_id.as_deref(), Some("0"));
    assert_eq!(s.job_gpus.as_deref(), Some(&[0, 1, 2, 3][..]));
    assert_eq!(s.step_gpus.as_deref(), Some(&[2, 3][..]));
    assert_eq!(s.gpu_device_ordinal.as_deref(), Some(&[0, 1][..]));
    assert_eq!(s.cpus_on_node, Some(32));
    assert_eq!(s.nodelist.as_deref(), Some("gpu-[001-004]"));
    assert_eq!(
        env.visibility,
        [
            vis("CUDA_VISIBLE_DEVICES", "0,1", "nvidia"),
            vis("GPU_DEVICE_ORDINAL", "0,1", "amd"),
            vis("SLURM_JOB_GPUS", "0,1,2,3", "slurm"),
            vis("SLURM_STEP_GPUS", "2,3", "slurm"),
        ],
        "table order, not environment order"
    );
    assert_eq!(env.kubernetes, None);
    assert_eq!(env.container, None);
    assert!(
        r.warnings
            .iter()
            .all(|w| !w.message.contains("SLURM") && !w.message.contains("GPU_DEVICE_ORDINAL")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn slurm_garbage_is_unknown_and_named() {
    let root = tempfile::tempdir().unwrap();
    let r = detect_fake(
        root.path(),
        root.path(),
        &[
            ("SLURM_JOBID", "7"),
            ("SLURM_STEP_GPUS", "2,gpu3"),
            ("SLURM_CPUS_ON_NODE", "lots"),
        ],
        &[BackendId::System],
    );
    let s = r.system.environment.slurm.as_ref().unwrap();
    assert_eq!(s.job_id.as_deref(), Some("7"), "the old name is read too");
    assert_eq!(s.step_gpus, None);
    assert_eq!(s.cpus_on_node, None);
    assert_eq!(s.job_gpus, None, "unset");
    for var in ["SLURM_STEP_GPUS", "SLURM_CPUS_ON_NODE"] {
        assert!(
            r.warnings
                .iter()
                .any(|w| w.backend == "system" && w.message.contains(var)),
            "{var}: {:?}",
            r.warnings
        );
    }
    // GPU_DEVICE_ORDINAL alone (ROCm sets it too) is not a Slurm job.
    let r = detect_fake(
        root.path(),
        root.path(),
        &[("GPU_DEVICE_ORDINAL", "0")],
        &[BackendId::System],
    );
    assert_eq!(r.system.environment.slurm, None);
}

// ---- Neuron ---------------------------------------------------------------

const TRN1_32: &str = "neuron-ls/aws-neuron-sdk-doc__trn1.32xlarge__neuron-ls-topology.txt";

/// A trn1.32xlarge as the table-only neuron-ls shows it (16 devices × 2
/// NeuronCores), found through `/sys/class/neuron_device/neuron0`.
fn trn1_32xlarge(root: &Path, bin: &Path) {
    std::fs::create_dir_all(root.join("sys/class/neuron_device/neuron0")).unwrap();
    write_script(
        bin,
        "neuron-ls",
        &format!(
            "[ \"$1\" = --json-output ] && {{ echo 'unrecognized arguments' >&2; exit 2; }}\ncat '{}'\n",
            fixture(TRN1_32).display()
        ),
    );
}

fn neuron_devices(r: &Registry) -> Vec<(u32, Option<String>)> {
    let mut v: Vec<(u32, Option<String>)> = r
        .devices
        .iter()
        .filter(|d| d.vendor == "aws")
        .map(|d| (d.index.unwrap(), d.unavailable_reason.clone()))
        .collect();
    v.sort();
    v
}

#[test]
fn neuron_visible_cores_select_devices() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    trn1_32xlarge(root.path(), bin.path());
    // Cores 2-5 are devices 1 and 2; core 8 is device 4.
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[("NEURON_RT_VISIBLE_CORES", "2-5,8")],
        &[BackendId::Neuron],
    );
    let devs = neuron_devices(&r);
    assert_eq!(devs.len(), 16, "{:?}", r.warnings);
    for (i, why) in &devs {
        let want = if [1, 2, 4].contains(i) {
            None
        } else {
            Some("hidden by NEURON_RT_VISIBLE_CORES".to_string())
        };
        assert_eq!(why, &want, "device {i}");
    }
    assert_eq!(r.summary.accelerator_count, 3);

    // Devices first (the OCI hook's list), then cores numbered over them.
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[
            ("AWS_NEURON_VISIBLE_DEVICES", "8-11"),
            ("NEURON_RT_VISIBLE_CORES", "2"),
        ],
        &[BackendId::Neuron],
    );
    let devs = neuron_devices(&r);
    assert_eq!(devs[9].1, None, "container core 2 is device 9's first core");
    assert_eq!(
        devs[8].1.as_deref(),
        Some("hidden by NEURON_RT_VISIBLE_CORES")
    );
    assert_eq!(
        devs[0].1.as_deref(),
        Some("hidden by AWS_NEURON_VISIBLE_DEVICES")
    );

    // A value that is not an index list is not applied and is reported.
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[("NEURON_RT_VISIBLE_CORES", "nc0")],
        &[BackendId::Neuron],
    );
    assert!(neuron_devices(&r).iter().all(|(_, why)| why.is_none()));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "neuron" && w.message.contains("NEURON_RT_VISIBLE_CORES")),
        "{:?}",
        r.warnings
    );
}

// ---- TPU ------------------------------------------------------------------

const TPU_PLAIN: &str = "tpu-info/cloud-accelerator-diagnostics-readme__tpu-info__v6e-4chips.txt";
const TPU_ADDRS: [&str; 4] = [
    "0000:00:04.0",
    "0000:00:05.0",
    "0000:00:06.0",
    "0000:00:07.0",
];

/// A v6e-4 host: four 1ae0:006f functions on vfio-pci and tpu-info.
fn tpu_v6e_host(root: &Path, bin: &Path) {
    for a in TPU_ADDRS {
        let dir = root.join("sys/bus/pci/devices").join(a);
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in [
            ("vendor", "0x1ae0"),
            ("device", "0x006f"),
            ("class", "0x120000"),
        ] {
            std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
        }
        std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", dir.join("driver"))
            .unwrap();
    }
    write_script(
        bin,
        "tpu-info",
        &format!("cat '{}'\n", fixture(TPU_PLAIN).display()),
    );
}

#[test]
fn tpu_visible_chips_hide_the_others() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    tpu_v6e_host(root.path(), bin.path());
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[
            ("TPU_VISIBLE_CHIPS", "1,3"),
            ("TPU_ACCELERATOR_TYPE", "v6e-4"),
        ],
        &[BackendId::Tpu, BackendId::Pci],
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    for (i, a) in TPU_ADDRS.iter().enumerate() {
        let want = (i % 2 == 0).then(|| "hidden by TPU_VISIBLE_CHIPS".to_string());
        assert_eq!(reason(&r, &format!("pci:{a}")), want, "chip {i}");
    }
    assert_eq!(r.summary.accelerator_count, 2);

    // libtpu ignores an empty mask.
    let r = detect_fake(
        root.path(),
        bin.path(),
        &[("TPU_VISIBLE_CHIPS", "")],
        &[BackendId::Tpu, BackendId::Pci],
    );
    assert_eq!(r.summary.accelerator_count, 4);
}

// ---- Intel ----------------------------------------------------------------

const PVC: [&str; 2] = ["0000:4d:00.0", "0000:9a:00.0"];

/// Two Data Center GPU Max (8086:0bd5) on `xe`, each with two tiles of
/// 64 GiB (`tileN/physical_vram_size_bytes`, drivers/gpu/drm/xe/xe_tile_sysfs.c).
fn two_pvc(root: &Path) {
    for (n, addr) in PVC.iter().enumerate() {
        let dir = FakePci {
            vendor: "8086",
            device: "0bd5",
            class: "038000",
            driver: Some("xe"),
            numa: Some(n as i32),
            link: false,
        }
        .write(root, addr);
        for tile in ["tile0", "tile1"] {
            write(
                &dir,
                &format!("{tile}/physical_vram_size_bytes"),
                "68719476736\n",
            );
        }
        let card = root.join(format!("sys/class/drm/card{n}"));
        std::fs::create_dir_all(&card).unwrap();
        std::os::unix::fs::symlink(
            format!("../../../devices/pci0000:00/{addr}"),
            card.join("device"),
        )
        .unwrap();
    }
}

fn intel_reasons(r: &Registry) -> Vec<Option<String>> {
    PVC.iter().map(|a| reason(r, &format!("pci:{a}"))).collect()
}

#[test]
fn intel_affinity_mask_and_device_selector() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    two_pvc(root.path());
    let run = |env: &[(&str, &str)]| detect_fake(root.path(), bin.path(), env, &[BackendId::Intel]);
    let hidden = |v: &str| Some(format!("hidden by {v}"));

    let r = run(&[]);
    assert_eq!(r.device("pci:0000:4d:00.0").unwrap().extra["tiles"], "2");
    assert_eq!(intel_reasons(&r), [None, None]);

    // FLAT (default): root devices are tiles, 0-1 on the first GPU, 2-3 on the second.
    let r = run(&[("ZE_AFFINITY_MASK", "2")]);
    assert_eq!(intel_reasons(&r), [hidden("ZE_AFFINITY_MASK"), None]);
    let r = run(&[("ZE_AFFINITY_MASK", "1,2")]);
    assert_eq!(intel_reasons(&r), [None, None]);

    // COMPOSITE: root devices are GPUs, tiles are `.subdevice`.
    let r = run(&[
        ("ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"),
        ("ZE_AFFINITY_MASK", "0.1"),
    ]);
    assert_eq!(intel_reasons(&r), [None, hidden("ZE_AFFINITY_MASK")]);

    // The selector numbers what the mask left: tiles 2,3 → selector index 1 = tile 3.
    let r = run(&[
        ("ZE_AFFINITY_MASK", "0,3"),
        ("ONEAPI_DEVICE_SELECTOR", "level_zero:0"),
    ]);
    assert_eq!(intel_reasons(&r), [None, hidden("ONEAPI_DEVICE_SELECTOR")]);

    // Selectors beyond level_zero index lists are reported, not guessed.
    let r = run(&[("ONEAPI_DEVICE_SELECTOR", "opencl:gpu;!level_zero:1")]);
    assert_eq!(intel_reasons(&r), [None, None]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "intel" && w.message.contains("ONEAPI_DEVICE_SELECTOR")),
        "{:?}",
        r.warnings
    );
}

// ---- Cloud instance from DMI ---------------------------------------------

/// DMI strings in the shape each provider documents (field → value). The AWS
/// values follow the Nitro layout shown in gist verdimrc/1ba1387e ("Probe
/// ec2 instances without instance metadata": `product_name` is the instance
/// type, `board_asset_tag` the instance id); Azure's asset tag and OCI's are
/// the constants cloud-init's ds-identify matches; the bare-metal host
/// carries the usual AMI placeholders. Synthesized, not captured.
type Dmi = &'static [(&'static str, &'static str)];

const AWS_P5: Dmi = &[
    ("sys_vendor", "Amazon EC2"),
    ("product_name", "p5.48xlarge"),
    ("product_version", "Not Specified"),
    ("board_asset_tag", "i-0123456789abcdef0"),
    ("chassis_asset_tag", "Amazon EC2"),
    ("chassis_vendor", "Amazon EC2"),
    ("bios_vendor", "Amazon EC2"),
    ("bios_version", "1.0"),
];
const GCP: Dmi = &[
    ("sys_vendor", "Google"),
    ("product_name", "Google Compute Engine"),
    ("chassis_vendor", "Google"),
    ("bios_vendor", "Google"),
    ("bios_version", "Google"),
];
const AZURE: Dmi = &[
    ("sys_vendor", "Microsoft Corporation"),
    ("product_name", "Virtual Machine"),
    ("product_version", "7.0"),
    ("chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77"),
    ("chassis_vendor", "Microsoft Corporation"),
    ("bios_vendor", "Microsoft Corporation"),
];
const OCI: Dmi = &[
    ("sys_vendor", "QEMU"),
    ("product_name", "Standard PC (i440FX + PIIX, 1996)"),
    ("chassis_asset_tag", "OracleCloud.com"),
    ("bios_vendor", "SeaBIOS"),
];
const BARE_METAL: Dmi = &[
    ("sys_vendor", "Supermicro"),
    ("product_name", "SYS-821GE-TNHR"),
    ("product_version", "0123456789"),
    ("board_asset_tag", "Default string"),
    ("chassis_asset_tag", "To be filled by O.E.M."),
    ("chassis_vendor", "Supermicro"),
    ("bios_vendor", "American Megatrends International, LLC."),
];

fn dmi_root(fields: Dmi) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("sys/class/dmi/id")).unwrap();
    for (f, v) in fields {
        write(
            root.path(),
            &format!("sys/class/dmi/id/{f}"),
            &format!("{v}\n"),
        );
    }
    root
}

fn cloud_of(fields: Dmi) -> Option<CloudInstance> {
    let root = dmi_root(fields);
    let r = detect_fake(root.path(), root.path(), &[], &[BackendId::System]);
    r.system.cloud
}

#[test]
fn cloud_instances_from_dmi() {
    let aws = cloud_of(AWS_P5).unwrap();
    assert_eq!(aws.provider.as_deref(), Some("aws"));
    assert_eq!(aws.instance_type.as_deref(), Some("p5.48xlarge"));
    assert_eq!(aws.board_asset_tag.as_deref(), Some("i-0123456789abcdef0"));
    assert_eq!(aws.sys_vendor.as_deref(), Some("Amazon EC2"));

    let gcp = cloud_of(GCP).unwrap();
    assert_eq!(
        (gcp.provider.as_deref(), gcp.instance_type.as_deref()),
        (Some("gcp"), None)
    );
    assert_eq!(gcp.product_name.as_deref(), Some("Google Compute Engine"));

    let azure = cloud_of(AZURE).unwrap();
    assert_eq!(azure.provider.as_deref(), Some("azure"));
    assert_eq!(
        azure.chassis_asset_tag.as_deref(),
        Some("7783-7084-3265-9085-8269-3286-77")
    );

    let oci = cloud_of(OCI).unwrap();
    assert_eq!(oci.provider.as_deref(), Some("oci"));
    assert_eq!(oci.bios_vendor.as_deref(), Some("SeaBIOS"));

    let metal = cloud_of(BARE_METAL).unwrap();
    assert_eq!(
        metal,
        CloudInstance {
            provider: None,
            instance_type: None,
            sys_vendor: Some("Supermicro".into()),
            product_name: Some("SYS-821GE-TNHR".into()),
            board_asset_tag: None,
            chassis_asset_tag: None,
            bios_vendor: Some("American Megatrends International, LLC.".into()),
        },
        "placeholders are unknown, not values"
    );

    // A DMI directory with nothing readable still says "DMI exists".
    assert_eq!(cloud_of(&[]), Some(CloudInstance::default()));
}

// ---- Every visibility variable, any value ---------------------------------

/// One root with every backend that reads a visibility variable: NVIDIA,
/// Neuron, TPU, Intel (built once; detection only reads it).
fn everything_root() -> &'static (tempfile::TempDir, PathBuf) {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    ROOT.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let bin = t.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        nvidia_gpus(&root);
        trn1_32xlarge(&root, &bin);
        tpu_v6e_host(&root, &bin);
        two_pvc(&root);
        (t, bin)
    })
}

const ALL_VARS: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "HABANA_VISIBLE_DEVICES",
    "HABANA_VISIBLE_MODULES",
    "NEURON_RT_VISIBLE_CORES",
    "AWS_NEURON_VISIBLE_DEVICES",
    "TPU_VISIBLE_CHIPS",
    "ASCEND_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "ONEAPI_DEVICE_SELECTOR",
    "ZE_FLAT_DEVICE_HIERARCHY",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_CPUS_ON_NODE",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    #[test]
    fn any_visibility_values_never_panic(
        values in proptest::collection::vec("[0-9,.:;*!a-zA-Z_ -]{0,24}|.{0,12}", ALL_VARS.len())
    ) {
        let (t, bin) = everything_root();
        let env: Vec<(&str, &str)> = ALL_VARS
            .iter()
            .zip(&values)
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        let r = detect_fake(
            &t.path().join("root"),
            bin,
            &env,
            &[
                BackendId::System,
                BackendId::Nvidia,
                BackendId::Neuron,
                BackendId::Tpu,
                BackendId::Intel,
            ],
        );
        proptest::prop_assert!(r.warnings.iter().all(|w| !w.message.contains("panicked")), "{:?}", r.warnings);
        // Visibility never drops devices: 4 NVIDIA + 16 Neuron + 4 TPU + 2 Intel.
        let accel = r.devices.iter().filter(|d| d.is_accelerator()).count();
        proptest::prop_assert_eq!(accel, 26, "{:?}", r.devices);
        // Every device here is usable, so an unavailable one was hidden by a
        // variable, and says which.
        for d in r.devices.iter().filter(|d| !d.available) {
            let why = d.unavailable_reason.as_deref().unwrap_or("");
            proptest::prop_assert!(why.starts_with("hidden by "), "{}: {why}", d.id);
        }
        // Each visibility variable set is listed, in table order.
        let listed: Vec<&str> = r.system.environment.visibility.iter().map(|v| v.variable.as_str()).collect();
        let want: Vec<&str> = ALL_VARS.iter().copied().filter(|v| *v != "ZE_FLAT_DEVICE_HIERARCHY" && *v != "SLURM_CPUS_ON_NODE").collect();
        proptest::prop_assert_eq!(listed, want);
    }
}
