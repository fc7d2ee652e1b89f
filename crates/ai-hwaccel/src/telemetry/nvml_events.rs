//! Xid and ECC error events from NVML's event API (`nvmlEventSetCreate`,
//! `nvmlDeviceRegisterEvents`, `nvmlEventSetWait_v2`; NVML API Reference,
//! "Event Handling Methods"), the channel DCGM and the Kubernetes device
//! plugin read Xids from. Unlike the kernel log it needs no privilege to
//! read `/dev/kmsg`, works in containers that see only the driver's
//! library, and attributes an Xid to a MIG instance.
//!
//! [`NvmlEvents`] keeps NVML initialised and the event set open while it
//! lives; [`NvmlEvents::poll`] drains what NVML queued since the last call
//! without waiting. The events have the shape of the kernel log's
//! ([`KernelDeviceError`], `source` `nvml`), so `watch` reports both the
//! same way.

use super::kernel_log::KernelDeviceError;

/// Events queued in one poll beyond which the rest wait for the next (a
/// storm of Xids cannot stall an observation).
pub const MAX_EVENTS_PER_POLL: usize = 1024;

/// An open NVML event set with every GPU's Xid and ECC events registered.
pub struct NvmlEvents {
    inner: crate::detect::NvmlEventWatcher,
}

impl std::fmt::Debug for NvmlEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlEvents")
            .field("gpus", &self.inner.gpus)
            .field("xid_gpus", &self.inner.xid_gpus)
            .finish()
    }
}

impl NvmlEvents {
    /// Open on the driver's library (the names detection tries).
    pub fn open() -> Result<NvmlEvents, String> {
        Self::open_with(crate::detect::nvml_default_libraries())
    }

    /// Open on the first loadable library of `libraries`. Fails, with the
    /// reason, when NVML does not load or start, has no event API, or no
    /// GPU takes Xid or ECC events.
    pub fn open_with(libraries: &[&str]) -> Result<NvmlEvents, String> {
        crate::detect::NvmlEventWatcher::open(libraries)
            .map(|inner| NvmlEvents { inner })
            .map_err(|e| e.to_string())
    }

    /// GPUs NVML enumerates.
    pub fn gpus(&self) -> usize {
        self.inner.gpus
    }

    /// GPUs registered for Xid events: when it equals [`Self::gpus`], the
    /// kernel log's Xid lines say nothing NVML does not.
    pub fn xid_gpus(&self) -> usize {
        self.inner.xid_gpus
    }

    /// The events NVML queued since the last poll, at most
    /// [`MAX_EVENTS_PER_POLL`], without waiting.
    pub fn poll(&mut self) -> Vec<KernelDeviceError> {
        self.inner
            .poll(MAX_EVENTS_PER_POLL)
            .into_iter()
            .map(to_error)
            .collect()
    }
}

fn to_error(e: crate::detect::NvmlEvent) -> KernelDeviceError {
    let mut message = match e.kind {
        "nvidia_xid" => "Xid critical error (NVML event)".to_string(),
        "nvidia_ecc_double_bit" => "double-bit ECC error (NVML event)".to_string(),
        _ => "single-bit ECC error (NVML event)".to_string(),
    };
    if let Some(gi) = e.gpu_instance_id {
        message.push_str(&format!("; MIG GPU instance {gi}"));
        if let Some(ci) = e.compute_instance_id {
            message.push_str(&format!(", compute instance {ci}"));
        }
    }
    if let Some(u) = &e.uuid {
        message.push_str(&format!("; {u}"));
    }
    KernelDeviceError {
        kind: e.kind.to_string(),
        pci_address: e.pci_address,
        code: e.xid.and_then(|x| u32::try_from(x).ok()),
        message,
        source: "nvml".into(),
    }
}
