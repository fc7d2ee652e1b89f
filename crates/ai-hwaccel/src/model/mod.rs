//! The data model: devices, system facts, PCI addresses and the registry that
//! holds one detection's results. Nothing here reads the machine.

mod device;
mod excerpt;
mod host;
mod pci_address;
pub mod plausible;
mod registry;
mod system;
pub mod text;
pub mod units;

pub use device::{
    Device, DeviceLink, Family, MEMORY_RESERVED_KEY, PciInfo, PcieLink, SharedMemory,
    VULKAN_MATRIX_EXTENSIONS_KEY,
};
pub use excerpt::{EXCERPT_CHARS, excerpt};
pub use host::{
    BlockDevice, CloudInstance, ContainerInfo, EnvironmentInfo, FilesystemInfo, KubernetesInfo,
    NetworkInterface, PciPath, RdmaDevice, RdmaPort, SlurmInfo, StorageInfo, VisibilityVar,
    WslInfo,
};
pub use pci_address::{PciAddress, PciAddressError};
pub use registry::{
    BackendTiming, CacheInfo, Registry, RegistryError, Requirement, SCHEMA_VERSION, Summary,
    Warning,
};
pub use system::{CgroupLimits, CpuInfo, MemoryInfo, NumaNode, SystemInfo};
pub use units::{Labels, SizeUnit, parse_size};
