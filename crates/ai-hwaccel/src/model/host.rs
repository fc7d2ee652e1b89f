//! Host facts around the accelerators: where devices sit on PCI, the network
//! fabric (NICs and RDMA devices), storage, the environment the process runs
//! in (container, Kubernetes, Slurm, visibility variables) and the cloud
//! instance. Unknown values are `None`.

use serde::{Deserialize, Serialize};

use super::PciAddress;

/// Where a PCI function sits in the PCI hierarchy, read from its sysfs path
/// (`/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0`): the host bridge
/// (root complex) and the bridges (root port, switch ports) above it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PciPath {
    /// The host bridge's sysfs name (`pci0000:3a`).
    pub host_bridge: String,
    /// Bridges from the root port down to the function's parent, in order.
    pub bridges: Vec<PciAddress>,
}

impl PciPath {
    /// The path and the function's own address from a sysfs path or link
    /// target: the first `pciDDDD:BB` component names the host bridge, the
    /// PCI addresses after it are the chain, the last of them is the
    /// function itself; trailing non-address components (`net/eth0`,
    /// `infiniband/mlx5_0`) are ignored. `None` when the path is not under a
    /// PCI host bridge (virtual and platform devices).
    pub fn from_sysfs(path: &str) -> Option<(PciPath, PciAddress)> {
        let mut comps = path.split('/');
        let host = comps.find(|c| is_host_bridge(c))?;
        let chain: Vec<PciAddress> = comps
            .take_while(|c| !c.is_empty())
            .map_while(|c| c.parse::<PciAddress>().ok())
            .collect();
        let (&dev, bridges) = chain.split_last()?;
        Some((
            PciPath {
                host_bridge: host.to_string(),
                bridges: bridges.to_vec(),
            },
            dev,
        ))
    }
}

/// `pci0000:3a`: `pci`, a hex domain, `:`, a hex bus.
fn is_host_bridge(c: &str) -> bool {
    c.strip_prefix("pci")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(d, b)| {
            !d.is_empty()
                && !b.is_empty()
                && d.bytes().all(|x| x.is_ascii_hexdigit())
                && b.bytes().all(|x| x.is_ascii_hexdigit())
        })
}

/// A physical network interface (`/sys/class/net/<name>` with a `device`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkInterface {
    /// Interface name (`eth0`, `ens1f0np0`, `ib0`).
    pub name: String,
    /// Link type from the `type` file: `ethernet` (1), `infiniband` (32), or `arp<N>` for others.
    pub kind: String,
    /// Kernel driver of the device (`mlx5_core`, `ena`, `ice`).
    pub driver: Option<String>,
    /// PCI address of the device behind the interface.
    pub pci_address: Option<PciAddress>,
    /// Where that device sits on PCI.
    pub pci_path: Option<PciPath>,
    /// NUMA node of the device.
    pub numa_node: Option<u32>,
    /// Link speed in bits per second (`speed` is Mb/s; `-1`/unreadable = unknown).
    pub speed_bits_per_s: Option<u64>,
    /// `operstate` (`up`, `down`, `unknown`, …).
    pub operstate: Option<String>,
    /// MTU in bytes.
    pub mtu: Option<u32>,
    /// The RDMA device on the same PCI function (`mlx5_0`), if any.
    pub rdma_device: Option<String>,
}

/// One port of an RDMA device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RdmaPort {
    /// Port number (1-based, as sysfs names it).
    pub port: u32,
    /// Logical state without its number (`ACTIVE`, `DOWN`, `INIT`, `ARMED`).
    pub state: Option<String>,
    /// Physical state without its number (`LinkUp`, `Disabled`, `Polling`).
    pub physical_state: Option<String>,
    /// Signalling rate in bits per second (`400 Gb/sec (4X NDR)` → 400e9).
    pub rate_bits_per_s: Option<u64>,
    /// The rate as the kernel wrote it.
    pub rate: Option<String>,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: Option<String>,
}

/// An RDMA device from `/sys/class/infiniband` (InfiniBand HCA, RoCE NIC, AWS EFA).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RdmaDevice {
    /// Device name (`mlx5_0`, `efa_0`, `rdmap0s6`).
    pub name: String,
    /// `infiniband`, `roce`, `efa`, `iwarp` or `unknown`: from the driver and the ports' link layer.
    pub kind: String,
    /// Kernel driver of the PCI function.
    pub driver: Option<String>,
    /// PCI address.
    pub pci_address: Option<PciAddress>,
    /// Where it sits on PCI.
    pub pci_path: Option<PciPath>,
    /// NUMA node.
    pub numa_node: Option<u32>,
    /// `hca_type` (`MT4129`).
    pub hca_type: Option<String>,
    /// `board_id`.
    pub board_id: Option<String>,
    /// `fw_ver`.
    pub firmware_version: Option<String>,
    /// `node_guid`.
    pub node_guid: Option<String>,
    /// Network interfaces on the same PCI function.
    pub netdevs: Vec<String>,
    /// Ports.
    pub ports: Vec<RdmaPort>,
}

/// A block device from `/sys/block` (partitions and loop/ram devices are left out).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlockDevice {
    /// Kernel name (`nvme0n1`, `sda`, `vda`).
    pub name: String,
    /// `nvme`, `ssd`, `hdd`, `virtual` or `unknown`.
    pub kind: String,
    /// Size in bytes (`size` counts 512-byte sectors).
    pub size_bytes: Option<u64>,
    /// `device/model`, trimmed.
    pub model: Option<String>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// `removable`.
    pub removable: Option<bool>,
    /// PCI address of the controller, when on PCI.
    pub pci_address: Option<PciAddress>,
    /// NUMA node of the controller.
    pub numa_node: Option<u32>,
}

/// The filesystem holding a directory (the model cache), from `/proc/self/mountinfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FilesystemInfo {
    /// The directory asked about.
    pub path: String,
    /// Mount point of the filesystem holding it.
    pub mount_point: String,
    /// Filesystem type (`ext4`, `xfs`, `nfs4`, `overlay`, `lustre`, …).
    pub fs_type: String,
    /// Mount source (`/dev/nvme0n1p2`, `server:/export`, `overlay`).
    pub source: String,
    /// Whether the filesystem is a network filesystem (nfs, cifs, lustre, gpfs, …).
    pub network: bool,
}

/// Storage of the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StorageInfo {
    /// Block devices.
    pub block_devices: Vec<BlockDevice>,
    /// The filesystem of the model cache directory, when one was found or given.
    pub model_cache: Option<FilesystemInfo>,
}

/// The container the process runs in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContainerInfo {
    /// `docker`, `podman`, `containerd`, `cri-o`, `lxc`, `kubernetes` or `unknown`.
    pub runtime: String,
    /// The file or variable that showed it (`/.dockerenv`, `/proc/self/cgroup: /docker/…`).
    pub evidence: String,
}

/// Kubernetes pod facts, from the environment and the service-account mount.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KubernetesInfo {
    /// Namespace (service-account `namespace` file or `POD_NAMESPACE`).
    pub namespace: Option<String>,
    /// Pod name (`POD_NAME`, else `HOSTNAME`).
    pub pod_name: Option<String>,
    /// Node name (`NODE_NAME`, when the pod spec exports it).
    pub node_name: Option<String>,
    /// Device-plugin allocations seen in the environment, `VAR=value`.
    pub allocations: Vec<String>,
}

/// Slurm job facts from the `SLURM_*` environment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SlurmInfo {
    /// `SLURM_JOB_ID`.
    pub job_id: Option<String>,
    /// `SLURM_STEP_ID`.
    pub step_id: Option<String>,
    /// `SLURM_JOB_GPUS`: GPU indices allocated to the job on this node.
    pub job_gpus: Option<Vec<u32>>,
    /// `SLURM_STEP_GPUS`: GPU indices allocated to the step.
    pub step_gpus: Option<Vec<u32>>,
    /// `GPU_DEVICE_ORDINAL`: ordinals Slurm exported for the step.
    pub gpu_device_ordinal: Option<Vec<u32>>,
    /// `SLURM_CPUS_ON_NODE`.
    pub cpus_on_node: Option<u32>,
    /// `SLURM_JOB_NODELIST`.
    pub nodelist: Option<String>,
}

/// A device-visibility variable set for this process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VisibilityVar {
    /// The variable (`CUDA_VISIBLE_DEVICES`).
    pub variable: String,
    /// Its value as set.
    pub value: String,
    /// The vendor stack that reads it (`nvidia`, `amd`, `habana`, `aws`, `google`, `huawei`, `intel`, `slurm`).
    pub vendor: String,
}

/// The environment the process runs in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvironmentInfo {
    /// The container, when the process runs in one.
    pub container: Option<ContainerInfo>,
    /// Kubernetes pod facts, when in a pod.
    pub kubernetes: Option<KubernetesInfo>,
    /// Slurm job facts, when in a job.
    pub slurm: Option<SlurmInfo>,
    /// Every device-visibility variable that is set.
    pub visibility: Vec<VisibilityVar>,
    /// Windows Subsystem for Linux, when the process runs under it.
    #[serde(default)]
    pub wsl: Option<WslInfo>,
}

/// Windows Subsystem for Linux facts: GPUs reach a WSL 2 guest through
/// Microsoft's `/dev/dxg` paravirtualization, not PCI, and their vendor tools
/// and libraries through `/usr/lib/wsl/lib`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WslInfo {
    /// 2 or 1; `None` when the evidence does not say which.
    pub version: Option<u32>,
    /// The kernel release (`/proc/sys/kernel/osrelease`), e.g. `5.15.153.1-microsoft-standard-WSL2`.
    pub kernel_release: Option<String>,
    /// Whether `/dev/dxg` (GPU paravirtualization) exists.
    pub gpu_paravirtualization: bool,
    /// Whether `/usr/lib/wsl/lib` (the Windows drivers' user-mode libraries and tools) exists.
    pub driver_libraries: bool,
    /// What showed it (paths and values).
    pub evidence: Vec<String>,
}

/// The cloud instance, from DMI (`/sys/class/dmi/id`) without network calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloudInstance {
    /// `aws`, `gcp`, `azure`, `oci`, `alibaba`, `ibm`, `digitalocean`, `hetzner`, … or `None` when not recognised.
    pub provider: Option<String>,
    /// Instance type where the platform exposes it in DMI (`p5.48xlarge` on AWS Nitro).
    pub instance_type: Option<String>,
    /// `sys_vendor`.
    pub sys_vendor: Option<String>,
    /// `product_name`.
    pub product_name: Option<String>,
    /// `board_asset_tag`.
    pub board_asset_tag: Option<String>,
    /// `chassis_asset_tag`.
    pub chassis_asset_tag: Option<String>,
    /// `bios_vendor`.
    pub bios_vendor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_path_from_sysfs_links() {
        let (p, a) =
            PciPath::from_sysfs("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0").unwrap();
        assert_eq!(p.host_bridge, "pci0000:3a");
        assert_eq!(p.bridges, vec!["0000:3a:00.0".parse().unwrap()]);
        assert_eq!(a.to_string(), "0000:3b:00.0");

        let (p, a) = PciPath::from_sysfs(
            "../../devices/pci0000:00/0000:00:03.0/0000:01:00.0/0000:02:08.0/0000:4b:00.1/net/ens1f1",
        )
        .unwrap();
        assert_eq!(p.bridges.len(), 3);
        assert_eq!(a.to_string(), "0000:4b:00.1");

        let (p, a) = PciPath::from_sysfs("/sys/devices/pci0000:00/0000:00:04.0").unwrap();
        assert!(p.bridges.is_empty());
        assert_eq!(a.to_string(), "0000:00:04.0");

        assert_eq!(PciPath::from_sysfs("../../devices/virtual/net/lo"), None);
        assert_eq!(PciPath::from_sysfs("../../devices/pci0000:00"), None);
        assert_eq!(PciPath::from_sysfs(""), None);
        assert_eq!(PciPath::from_sysfs("pciZZ:00/0000:00:01.0"), None);
    }
}
