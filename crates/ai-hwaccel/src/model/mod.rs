//! The data model: devices, system facts, PCI addresses and the registry that
//! holds one detection's results. Nothing here reads the machine.

mod device;
mod host;
mod pci_address;
mod registry;
mod system;

pub use device::{Device, DeviceLink, Family, PciInfo, PcieLink};
pub use host::{
    BlockDevice, CloudInstance, ContainerInfo, EnvironmentInfo, FilesystemInfo, KubernetesInfo,
    NetworkInterface, PciPath, RdmaDevice, RdmaPort, SlurmInfo, StorageInfo, VisibilityVar,
};
pub use pci_address::{PciAddress, PciAddressError};
pub use registry::{
    BackendTiming, CacheInfo, Registry, RegistryError, Requirement, SCHEMA_VERSION, Summary,
    Warning,
};
pub use system::{CgroupLimits, CpuInfo, MemoryInfo, NumaNode, SystemInfo};
