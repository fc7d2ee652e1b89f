//! The environment the process runs in: the container runtime, the
//! Kubernetes pod, the Slurm job and every device-visibility variable that is
//! set. Everything comes through the probe (files and `probe.env`); the
//! classifiers are pure and tested on lines in the shapes each runtime
//! documents.
//!
//! Container evidence, strongest first (the first that names a runtime
//! wins):
//! 1. a runtime-specific cgroup path in `/proc/self/cgroup` (or the cgroup
//!    path the cgroup reader found): [`classify_cgroup_path`];
//! 2. `/run/.containerenv` (podman writes it into every container; its
//!    `engine="podman-…"` line is quoted in the evidence);
//! 3. the `container` variable, `/run/systemd/container` and
//!    `/run/host/container-manager` (podman sets `container=podman`,
//!    systemd-nspawn and LXC set theirs; systemd reads the same three in
//!    `detect_container()`, systemd/systemd `src/basic/virt.c`);
//! 4. `/.dockerenv` (the docker engine creates it; systemd checks it last
//!    because an image can carry a stale copy);
//! 5. the overlay root filesystem in `/proc/self/mountinfo`, whose layer
//!    paths name the engine's storage ([`classify_overlay_root`]) — the only
//!    runtime evidence left inside a cgroup namespace;
//! 6. a `kubepods` cgroup path or the Kubernetes environment → `kubernetes`.
//!
//! WSL ([`classify_wsl`]): the kernel release of a WSL 2 guest ends in
//! `-microsoft-standard-WSL2` (WSL 1 reports `…-Microsoft`), the GPU is
//! reached through `/dev/dxg` (Microsoft's GPU paravirtualization; the
//! ROCm-on-WSL documentation names it as what stands for `/dev/kfd` there)
//! and the Windows drivers' user-mode libraries and tools are mapped into
//! `/usr/lib/wsl/lib` (NVIDIA, "CUDA on WSL User Guide").

use crate::model::{
    CgroupLimits, ContainerInfo, EnvironmentInfo, KubernetesInfo, SlurmInfo, VisibilityVar, WslInfo,
};
use crate::probe::{Probe, ProbeExt, join};

use super::cgroup::parse_cgroup_paths;

/// Every device-visibility variable and the vendor stack that reads it, in
/// the order [`EnvironmentInfo::visibility`] lists them.
pub const VISIBILITY_VARS: &[(&str, &str)] = &[
    ("CUDA_VISIBLE_DEVICES", "nvidia"),
    ("NVIDIA_VISIBLE_DEVICES", "nvidia"),
    ("HIP_VISIBLE_DEVICES", "amd"),
    ("ROCR_VISIBLE_DEVICES", "amd"),
    ("GPU_DEVICE_ORDINAL", "amd"),
    ("HABANA_VISIBLE_DEVICES", "habana"),
    ("HABANA_VISIBLE_MODULES", "habana"),
    ("NEURON_RT_VISIBLE_CORES", "aws"),
    ("AWS_NEURON_VISIBLE_DEVICES", "aws"),
    ("TPU_VISIBLE_CHIPS", "google"),
    ("ASCEND_VISIBLE_DEVICES", "huawei"),
    ("ASCEND_RT_VISIBLE_DEVICES", "huawei"),
    ("ZE_AFFINITY_MASK", "intel"),
    ("ONEAPI_DEVICE_SELECTOR", "intel"),
    ("SLURM_JOB_GPUS", "slurm"),
    ("SLURM_STEP_GPUS", "slurm"),
];

/// Variables a Kubernetes device plugin (or the container hook it drives)
/// puts into the container, recorded as [`KubernetesInfo::allocations`].
pub const DEVICE_PLUGIN_VARS: &[&str] = &[
    // NVIDIA/k8s-device-plugin internal/plugin/server.go: Allocate returns
    // `apiEnvs(deviceListEnvvar, ids)`; deviceListEnvvar defaults to
    // NVIDIA_VISIBLE_DEVICES (README, DEVICE_LIST_STRATEGY=envvar).
    "NVIDIA_VISIBLE_DEVICES",
    // Intel Gaudi device plugin for Kubernetes (docs.habana.ai, "Intel Gaudi
    // Device Plugin for Kubernetes"): allocations reach habana-container-runtime
    // through HABANA_VISIBLE_DEVICES, the variable that runtime reads. The
    // plugin's source is not public, so this follows the documentation only.
    "HABANA_VISIBLE_DEVICES",
    // AWS Neuron device plugin (awsdocs-neuron containers/tutorials/
    // k8s-neuron-device-plugin): `aws.amazon.com/neuron` allocates devices,
    // exposed through AWS_NEURON_VISIBLE_DEVICES (the Neuron OCI hook's
    // variable, containers/tutorials/tutorial-oci-hook);
    // `aws.amazon.com/neuroncore` allocates cores through NEURON_RT_VISIBLE_CORES.
    "AWS_NEURON_VISIBLE_DEVICES",
    "NEURON_RT_VISIBLE_CORES",
    // libtpu's chip mask; GKE TPU pods and launchers (vLLM
    // `vllm/platforms/tpu.py` device_control_env_var, torch_xla
    // `configure_topology`) set it. The GKE plugin's source is not public.
    "TPU_VISIBLE_CHIPS",
    // Ascend device plugin + Ascend Docker runtime: the runtime mounts the
    // /dev/davinci<N> listed in ASCEND_VISIBLE_DEVICES (constant
    // `AscendVisibleDevicesEnv` in coldzerofear/device-mounter
    // pkg/devices/ascend/npu/util.go, mirroring Ascend/ascend-device-plugin).
    "ASCEND_VISIBLE_DEVICES",
    // The AMD plugin (ROCm/k8s-device-plugin internal/pkg/plugin/plugin.go,
    // Allocate) returns only DeviceSpecs (/dev/kfd, /dev/dri/*) and no
    // environment, so there is no AMD variable here.
];

/// Slurm variables whose presence says the process runs in a Slurm job or
/// step (the probe cannot list the environment, so presence is checked by
/// name; names from the sbatch/srun "OUTPUT ENVIRONMENT VARIABLES" sections).
const SLURM_MARKERS: &[&str] = &[
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_STEP_ID",
    "SLURM_STEPID",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_CPUS_ON_NODE",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_JOB_NAME",
    "SLURM_CLUSTER_NAME",
];

/// The service-account mount of a pod (`/var/run` is normally a link to `/run`).
const SERVICE_ACCOUNT_DIRS: &[&str] = &[
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "/run/secrets/kubernetes.io/serviceaccount",
];

/// How strongly a piece of evidence names the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// Only says "some container".
    Unknown,
    /// Says "a Kubernetes pod" without naming the engine.
    Kubernetes,
    /// Names the engine.
    Runtime,
}

fn strength(runtime: &str) -> Strength {
    match runtime {
        "unknown" => Strength::Unknown,
        "kubernetes" => Strength::Kubernetes,
        _ => Strength::Runtime,
    }
}

/// The container runtime a cgroup path shows, or `None` when the path is
/// not a container's. Rules, per path component:
/// - `cri-containerd-<id>.scope` (containerd CRI, systemd driver) → `containerd`;
///   a `containerd` component with a child (cgroupfs layouts) → `containerd`;
/// - `crio-<id>.scope`, `crio-conmon-<id>.scope` → `cri-o`;
/// - `libpod-<id>.scope`, `libpod-conmon-…`, `libpod_parent` → `podman`;
/// - `docker-<id>.scope` (systemd driver) or a `docker` component with a
///   child (`/docker/<id>`, cgroupfs driver) → `docker`;
/// - `lxc.payload.<name>` (LXC 4+, LXD) or `lxc` with a child (older LXC) → `lxc`;
/// - a component containing `kubepods` (`/kubepods/…`,
///   `/kubepods.slice/…`, kind's `kubelet-kubepods.slice`) → `kubernetes`
///   when nothing more specific matched;
/// - `ecs` with a child (Amazon ECS / Fargate task cgroups) → `unknown`.
///
/// Host services (`docker.service`, `containerd.service`, `lxc.monitor.*`)
/// are not containers and do not match.
pub fn classify_cgroup_path(path: &str) -> Option<&'static str> {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let has_child = |i: usize| i + 1 < comps.len();
    let mut best: Option<&'static str> = None;
    let mut keep = |r: &'static str| {
        if best.is_none_or(|b| strength(r) > strength(b)) {
            best = Some(r);
        }
    };
    for (i, c) in comps.iter().enumerate() {
        let runtime = if c.starts_with("cri-containerd-") || (*c == "containerd" && has_child(i)) {
            Some("containerd")
        } else if c.starts_with("crio-") {
            Some("cri-o")
        } else if c.starts_with("libpod-") || *c == "libpod_parent" {
            Some("podman")
        } else if (c.starts_with("docker-") && c.ends_with(".scope"))
            || (*c == "docker" && has_child(i))
        {
            Some("docker")
        } else if c.starts_with("lxc.payload") || (*c == "lxc" && has_child(i)) {
            Some("lxc")
        } else if c.contains("kubepods") {
            Some("kubernetes")
        } else if *c == "ecs" && has_child(i) {
            Some("unknown")
        } else {
            None
        };
        if let Some(r) = runtime {
            keep(r);
        }
    }
    best
}

/// The runtime a container-manager name means (the `container` variable,
/// `/run/systemd/container`, `/run/host/container-manager`). Names follow
/// systemd's `container_from_string` table; `oci` and anything else are
/// `unknown`.
pub fn runtime_from_manager_name(name: &str) -> &'static str {
    match name.trim().to_ascii_lowercase().as_str() {
        "docker" => "docker",
        "podman" => "podman",
        "lxc" | "lxc-libvirt" => "lxc",
        "systemd-nspawn" => "systemd-nspawn",
        _ => "unknown",
    }
}

/// The `engine="…"` value of `/run/.containerenv` (podman writes
/// `engine="podman-<version>"`), without quotes.
pub fn parse_containerenv_engine(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix("engine=")?.trim().trim_matches('"');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The engine whose storage holds the overlay root filesystem, from
/// `/proc/self/mountinfo`: the mount at `/` of type `overlay` whose
/// `lowerdir`/`upperdir` paths lie under `/var/lib/docker/` → `docker`,
/// under an `io.containerd.snapshotter` directory → `containerd` (k3s and
/// nerdctl included), under `/var/lib/containers/storage/` (containers/storage,
/// shared by podman and CRI-O) → `cri-o` when `in_kubernetes`, else `podman`.
/// Returns the runtime and the storage path that showed it.
pub fn classify_overlay_root(
    mountinfo: &str,
    in_kubernetes: bool,
) -> Option<(&'static str, String)> {
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        if pre.split_whitespace().nth(4) != Some("/") {
            continue;
        }
        let mut g = post.split_whitespace();
        if g.next() != Some("overlay") {
            continue;
        }
        let opts = g.nth(1).unwrap_or("");
        let dirs = opts
            .split(',')
            .filter_map(|o| {
                o.strip_prefix("lowerdir=")
                    .or_else(|| o.strip_prefix("upperdir="))
            })
            .flat_map(|v| v.split(':'));
        for d in dirs {
            let runtime = if d.contains("/var/lib/docker/") {
                "docker"
            } else if d.contains("io.containerd.snapshotter") {
                "containerd"
            } else if d.contains("/var/lib/containers/storage/") {
                if in_kubernetes { "cri-o" } else { "podman" }
            } else {
                continue;
            };
            return Some((runtime, d.to_string()));
        }
    }
    None
}

/// A comma-separated list of integers as Slurm writes its GPU and ordinal
/// variables (`0,1,3`), in order. Empty = an empty list; anything else that
/// is not a list of integers is `None`.
pub fn parse_int_list(v: &str) -> Option<Vec<u32>> {
    let v = v.trim();
    if v.is_empty() {
        return Some(Vec::new());
    }
    v.split(',').map(|s| s.trim().parse::<u32>().ok()).collect()
}

/// The variable's value when set; an empty value counts as set.
fn env(probe: &dyn Probe, name: &str) -> Option<String> {
    probe.env(name)
}

/// The variable's value when set and not blank.
fn env_nonblank(probe: &dyn Probe, name: &str) -> Option<String> {
    probe
        .env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn path_exists(probe: &dyn Probe, path: &str) -> bool {
    probe.read(path).is_ok() || probe.list_dir(path).is_ok()
}

/// `/dev/dxg`: the WSL 2 GPU paravirtualization device.
pub const WSL_DXG: &str = "/dev/dxg";
/// Where WSL maps the Windows drivers' user-mode libraries and tools.
pub const WSL_LIB_DIR: &str = "/usr/lib/wsl/lib";

/// WSL facts from the kernel release (`/proc/sys/kernel/osrelease`) and
/// whether `/dev/dxg` and `/usr/lib/wsl/lib` exist; `None` when nothing
/// says WSL. Version 2 when the release names `WSL2` or `/dev/dxg` exists
/// (WSL 1 has no Linux kernel and no `dxg`), 1 when the release ends in
/// `-Microsoft` without either.
pub fn classify_wsl(osrelease: Option<&str>, dxg: bool, wsl_lib: bool) -> Option<WslInfo> {
    let release = osrelease.map(str::trim).filter(|r| !r.is_empty());
    let microsoft = release.is_some_and(|r| r.to_ascii_lowercase().contains("microsoft"));
    if !microsoft && !dxg && !wsl_lib {
        return None;
    }
    let mut evidence = Vec::new();
    if let Some(r) = release.filter(|_| microsoft) {
        evidence.push(format!("/proc/sys/kernel/osrelease: {r}"));
    }
    if dxg {
        evidence.push(WSL_DXG.to_string());
    }
    if wsl_lib {
        evidence.push(WSL_LIB_DIR.to_string());
    }
    let wsl2_release = release.is_some_and(|r| r.contains("WSL2"));
    let version = if wsl2_release || dxg {
        Some(2)
    } else if release.is_some_and(|r| r.ends_with("-Microsoft")) {
        Some(1)
    } else {
        None
    };
    Some(WslInfo {
        version,
        kernel_release: release.map(str::to_string),
        gpu_paravirtualization: dxg,
        driver_libraries: wsl_lib,
        evidence,
    })
}

fn detect_wsl(probe: &dyn Probe) -> Option<WslInfo> {
    classify_wsl(
        probe.read_trimmed("/proc/sys/kernel/osrelease").as_deref(),
        // A character device: looked up in its directory, never opened.
        probe.list_or_empty("/dev").iter().any(|n| n == "dxg"),
        probe.list_dir(WSL_LIB_DIR).is_ok(),
    )
}

/// Container, Kubernetes, Slurm, WSL and visibility facts of this process.
pub(crate) fn detect_environment(
    probe: &dyn Probe,
    cgroup: Option<&CgroupLimits>,
    warnings: &mut Vec<String>,
) -> EnvironmentInfo {
    let kubernetes = detect_kubernetes(probe);
    EnvironmentInfo {
        container: detect_container(probe, cgroup, kubernetes.is_some()),
        kubernetes,
        slurm: detect_slurm(probe, warnings),
        visibility: VISIBILITY_VARS
            .iter()
            .filter_map(|(var, vendor)| {
                env(probe, var).map(|value| VisibilityVar {
                    variable: (*var).to_string(),
                    value,
                    vendor: (*vendor).to_string(),
                })
            })
            .collect(),
        wsl: detect_wsl(probe),
    }
}

fn detect_container(
    probe: &dyn Probe,
    cgroup: Option<&CgroupLimits>,
    in_kubernetes: bool,
) -> Option<ContainerInfo> {
    let mut found: Vec<ContainerInfo> = Vec::new();
    let mut add = |runtime: &str, evidence: String| {
        found.push(ContainerInfo {
            runtime: runtime.to_string(),
            evidence,
        })
    };

    // 1. cgroup paths.
    let mut paths: Vec<String> = probe
        .read_text("/proc/self/cgroup")
        .map(|t| parse_cgroup_paths(&t).into_iter().map(|(_, p)| p).collect())
        .unwrap_or_default();
    if let Some(c) = cgroup {
        if !paths.contains(&c.path) {
            paths.push(c.path.clone());
        }
    }
    let mut cgroup_hits: Vec<(&'static str, String)> = paths
        .iter()
        .filter_map(|p| classify_cgroup_path(p).map(|r| (r, p.clone())))
        .collect();
    cgroup_hits.sort_by_key(|(r, _)| std::cmp::Reverse(strength(r)));
    let cgroup_best = cgroup_hits.into_iter().next();
    if let Some((r, p)) = &cgroup_best {
        if strength(r) == Strength::Runtime {
            add(r, format!("/proc/self/cgroup: {p}"));
        }
    }

    // 2. /run/.containerenv.
    if let Ok(text) = probe.read_text("/run/.containerenv") {
        let evidence = match parse_containerenv_engine(&text) {
            Some(e) => format!("/run/.containerenv: engine=\"{e}\""),
            None => "/run/.containerenv".to_string(),
        };
        add("podman", evidence);
    }

    // 3. Container-manager names.
    if let Some(v) = env_nonblank(probe, "container") {
        add(runtime_from_manager_name(&v), format!("container={v}"));
    }
    for file in ["/run/systemd/container", "/run/host/container-manager"] {
        if let Some(v) = probe.read_trimmed(file) {
            add(runtime_from_manager_name(&v), format!("{file}: {v}"));
        }
    }

    // 4. /.dockerenv.
    if path_exists(probe, "/.dockerenv") {
        add("docker", "/.dockerenv".to_string());
    }

    // 5. The overlay root's storage.
    if let Ok(mi) = probe.read_text("/proc/self/mountinfo") {
        if let Some((r, dir)) = classify_overlay_root(&mi, in_kubernetes) {
            add(r, format!("/proc/self/mountinfo: overlay root on {dir}"));
        }
    }

    // 6. Kubernetes without an engine, and containers of unknown engine.
    if let Some((r, p)) = &cgroup_best {
        if strength(r) < Strength::Runtime {
            add(r, format!("/proc/self/cgroup: {p}"));
        }
    }
    if in_kubernetes {
        let evidence = if env(probe, "KUBERNETES_SERVICE_HOST").is_some() {
            "KUBERNETES_SERVICE_HOST".to_string()
        } else {
            SERVICE_ACCOUNT_DIRS
                .iter()
                .find(|d| probe.list_dir(d).is_ok())
                .map_or_else(
                    || "kubernetes service account".to_string(),
                    |d| d.to_string(),
                )
        };
        add("kubernetes", evidence);
    }

    // The strongest evidence; among equals the earliest (the order above).
    let best = found.iter().map(|c| strength(&c.runtime)).max()?;
    found.into_iter().find(|c| strength(&c.runtime) == best)
}

fn detect_kubernetes(probe: &dyn Probe) -> Option<KubernetesInfo> {
    let sa_dir = SERVICE_ACCOUNT_DIRS
        .iter()
        .find(|d| probe.list_dir(d).is_ok());
    if env(probe, "KUBERNETES_SERVICE_HOST").is_none() && sa_dir.is_none() {
        return None;
    }
    let namespace = sa_dir
        .and_then(|d| probe.read_trimmed(&join(d, "namespace")))
        .or_else(|| env_nonblank(probe, "POD_NAMESPACE"));
    let pod_name = env_nonblank(probe, "POD_NAME")
        .or_else(|| env_nonblank(probe, "HOSTNAME"))
        .or_else(|| probe.read_trimmed("/etc/hostname"));
    Some(KubernetesInfo {
        namespace,
        pod_name,
        node_name: env_nonblank(probe, "NODE_NAME"),
        allocations: DEVICE_PLUGIN_VARS
            .iter()
            .filter_map(|v| env(probe, v).map(|val| format!("{v}={val}")))
            .collect(),
    })
}

fn detect_slurm(probe: &dyn Probe, warnings: &mut Vec<String>) -> Option<SlurmInfo> {
    if !SLURM_MARKERS.iter().any(|v| env(probe, v).is_some()) {
        return None;
    }
    let mut list = |var: &str| -> Option<Vec<u32>> {
        let v = env(probe, var)?;
        let parsed = parse_int_list(&v);
        if parsed.is_none() {
            warnings.push(format!(
                "{var}={v:?}: not a comma-separated list of integers"
            ));
        }
        parsed
    };
    let job_gpus = list("SLURM_JOB_GPUS");
    let step_gpus = list("SLURM_STEP_GPUS");
    let gpu_device_ordinal = list("GPU_DEVICE_ORDINAL");
    let cpus_on_node = env(probe, "SLURM_CPUS_ON_NODE").and_then(|v| {
        let n = v.trim().parse::<u32>().ok();
        if n.is_none() {
            warnings.push(format!("SLURM_CPUS_ON_NODE={v:?}: not an integer"));
        }
        n
    });
    Some(SlurmInfo {
        job_id: env_nonblank(probe, "SLURM_JOB_ID").or_else(|| env_nonblank(probe, "SLURM_JOBID")),
        step_id: env_nonblank(probe, "SLURM_STEP_ID")
            .or_else(|| env_nonblank(probe, "SLURM_STEPID")),
        job_gpus,
        step_gpus,
        gpu_device_ordinal,
        cpus_on_node,
        nodelist: env_nonblank(probe, "SLURM_JOB_NODELIST")
            .or_else(|| env_nonblank(probe, "SLURM_NODELIST")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wsl_versions() {
        // Kernel releases as WSL 2 kernels print them (microsoft/WSL2-Linux-Kernel
        // tags `linux-msft-wsl-5.15.153.1`, `…-6.6.87.2`; the 6.6.87.2 release
        // string is the one quoted in the ROCm-on-WSL Strix Halo guide) and WSL 1's.
        let w = classify_wsl(Some("6.6.87.2-microsoft-standard-WSL2\n"), true, true).unwrap();
        assert_eq!(w.version, Some(2));
        assert_eq!(
            w.kernel_release.as_deref(),
            Some("6.6.87.2-microsoft-standard-WSL2")
        );
        assert!(w.gpu_paravirtualization && w.driver_libraries);
        assert_eq!(w.evidence.len(), 3);
        let w = classify_wsl(Some("4.4.0-19041-Microsoft"), false, false).unwrap();
        assert_eq!(w.version, Some(1));
        assert!(!w.gpu_paravirtualization);
        // A custom kernel without the suffix, but the device is there.
        let w = classify_wsl(Some("6.1.0-custom"), true, false).unwrap();
        assert_eq!(w.version, Some(2));
        assert_eq!(w.evidence, ["/dev/dxg"]);
        assert_eq!(classify_wsl(Some("6.1.0-13-amd64"), false, false), None);
        assert_eq!(classify_wsl(None, false, false), None);
    }

    // Lines in the shapes each runtime documents; ids shortened where the
    // documentation elides them.
    #[test]
    fn cgroup_paths_of_each_runtime() {
        let cases: &[(&str, Option<&str>)] = &[
            // Docker, cgroupfs driver (v1), Datadog container-tagging RFC examples.
            (
                "/docker/3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860",
                Some("docker"),
            ),
            // Docker, systemd driver.
            (
                "/system.slice/docker-9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d.scope",
                Some("docker"),
            ),
            // Kubernetes with dockershim and the systemd driver.
            (
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poddc380811_8168_4a9e_9b4a_56ded1b6fe9c.slice/docker-fa7f0ec4fbcbb70c69565a5b2d269926e04ec5601dff59235199d6e60198e95c.scope",
                Some("docker"),
            ),
            // containerd CRI, systemd driver.
            (
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3f5e1a2b_4c6d_7e8f_9a0b_1c2d3e4f5a6b.slice/cri-containerd-1207db63eaeb133a85d2b614d12d95d4dff3f29af60d7a7b3c7d39abdf4bd119.scope",
                Some("containerd"),
            ),
            ("/containerd/default/1207db63eaeb", Some("containerd")),
            // CRI-O, systemd driver (container and its conmon).
            (
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod05b3ee07_a2bd_47e7_9599_7961201f20dd.slice/crio-0e7c5b1f.scope",
                Some("cri-o"),
            ),
            ("/kubepods.slice/crio-conmon-0e7c5b1f.scope", Some("cri-o")),
            // Podman, root and rootless.
            (
                "/machine.slice/libpod-8f3c2a.scope/container",
                Some("podman"),
            ),
            (
                "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-8f3c2a.scope/container",
                Some("podman"),
            ),
            ("/libpod_parent/libpod-8f3c2a", Some("podman")),
            // LXC 4+/LXD and older LXC.
            ("/lxc.payload.web1", Some("lxc")),
            ("/lxc/web1", Some("lxc")),
            // Kubernetes cgroupfs driver: the engine is not named.
            (
                "/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/3e74d3fd9db4c9dd921ae05c2502fb984d0cde1b36e581b13f79c639da4518a1",
                Some("kubernetes"),
            ),
            (
                "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/x",
                Some("kubernetes"),
            ),
            // Amazon ECS / Fargate.
            (
                "/ecs/55091c13-b8cf-4801-b527-f4601742204d/432624d2150b349fe35ba397284dea788c2bf66b885d14dfc1569b01890ca7da",
                Some("unknown"),
            ),
            // Not containers.
            ("/", None),
            ("/user.slice/user-1000.slice/session-3.scope", None),
            ("/system.slice/docker.service", None),
            ("/system.slice/containerd.service", None),
            ("/lxc.monitor.web1", None),
            ("/docker", None),
            ("", None),
        ];
        for (path, want) in cases {
            assert_eq!(classify_cgroup_path(path), *want, "{path}");
        }
    }

    #[test]
    fn manager_names_and_containerenv() {
        assert_eq!(runtime_from_manager_name("podman"), "podman");
        assert_eq!(runtime_from_manager_name("lxc-libvirt"), "lxc");
        assert_eq!(
            runtime_from_manager_name("systemd-nspawn"),
            "systemd-nspawn"
        );
        assert_eq!(runtime_from_manager_name("oci"), "unknown");
        // podman's /run/.containerenv (containers/podman docs, podman-run(1)).
        let env = "engine=\"podman-4.9.3\"\nname=\"web\"\nid=\"8f3c2a\"\nimage=\"docker.io/library/alpine:latest\"\nimageid=\"05455a\"\nrootless=1\n";
        assert_eq!(
            parse_containerenv_engine(env).as_deref(),
            Some("podman-4.9.3")
        );
        assert_eq!(parse_containerenv_engine(""), None);
        assert_eq!(parse_containerenv_engine("engine=\"\"\n"), None);
    }

    #[test]
    fn overlay_roots() {
        let docker = "1190 1057 0:96 / / rw,relatime master:470 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,upperdir=/var/lib/docker/overlay2/0123/diff,workdir=/var/lib/docker/overlay2/0123/work\n1191 1190 0:99 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n";
        assert_eq!(classify_overlay_root(docker, false).unwrap().0, "docker");
        let containerd = "2460 2333 0:412 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/25/fs,upperdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/30/fs,workdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/30/work\n";
        assert_eq!(
            classify_overlay_root(containerd, true).unwrap().0,
            "containerd"
        );
        let storage = "600 500 0:50 / / rw - overlay overlay rw,lowerdir=/var/lib/containers/storage/overlay/l/X,upperdir=/var/lib/containers/storage/overlay/abc/diff\n";
        assert_eq!(classify_overlay_root(storage, true).unwrap().0, "cri-o");
        assert_eq!(classify_overlay_root(storage, false).unwrap().0, "podman");
        // A host: ext4 root; an overlay elsewhere does not count.
        let host = "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n900 26 0:60 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A\n";
        assert_eq!(classify_overlay_root(host, false), None);
        assert_eq!(classify_overlay_root("garbage", false), None);
        assert_eq!(classify_overlay_root("", false), None);
    }

    #[test]
    fn slurm_int_lists() {
        assert_eq!(parse_int_list("0,1,3"), Some(vec![0, 1, 3]));
        assert_eq!(parse_int_list(" 2 , 3 "), Some(vec![2, 3]));
        assert_eq!(parse_int_list(""), Some(vec![]));
        assert_eq!(parse_int_list("0,x"), None);
        assert_eq!(parse_int_list("0,,1"), None);
        assert_eq!(parse_int_list("-1"), None);
    }

    #[test]
    fn visibility_table_has_no_duplicates() {
        for (i, (a, _)) in VISIBILITY_VARS.iter().enumerate() {
            assert!(
                VISIBILITY_VARS[i + 1..].iter().all(|(b, _)| a != b),
                "{a} listed twice"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn classifiers_never_panic(s in ".{0,200}") {
            let _ = classify_cgroup_path(&s);
            let _ = classify_overlay_root(&s, true);
            let _ = parse_containerenv_engine(&s);
            let _ = parse_int_list(&s);
            let _ = runtime_from_manager_name(&s);
        }
    }
}
