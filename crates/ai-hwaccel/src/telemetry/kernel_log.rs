//! Device errors the kernel log reports: NVIDIA Xid lines
//! (`NVRM: Xid (PCI:0000:cb:00): 13, pid=…, name=…, <message>`, the form
//! NVIDIA's "Xid Errors" guide documents, older drivers without pid/name)
//! and the multi-line "has fallen off the bus" report newer drivers print
//! without an Xid. Pure: one line in, an event or nothing out; the line may
//! carry any prefix (`/dev/kmsg`'s `6,1234,5678,-;`, dmesg's
//! `[ 1399.140318]`, journald's `Feb 14 05:03:41 host kernel:`).

use serde::{Deserialize, Serialize};

use crate::model::PciAddress;

/// One device error from the kernel log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelDeviceError {
    /// What reported it: `nvidia_xid`, `nvidia_fallen_off_bus`.
    pub kind: String,
    /// The device, when the line names it (an Xid line names domain, bus
    /// and device; function 0 is meant).
    pub pci_address: Option<PciAddress>,
    /// The Xid number.
    pub code: Option<u32>,
    /// The rest of the line after the code.
    pub message: String,
    /// Where it was read: `kernel_log`, or `nvml` (NVML's event API,
    /// [`crate::telemetry::nvml_events`]).
    #[serde(default = "kernel_log_source")]
    pub source: String,
}

fn kernel_log_source() -> String {
    "kernel_log".into()
}

/// Parse the PCI part of an Xid line: `0000:cb:00` or `0000:cb:00.0`.
fn xid_address(s: &str) -> Option<PciAddress> {
    let s = s.trim();
    let full = if s.matches(':').count() == 2 && !s.contains('.') {
        format!("{s}.0")
    } else {
        s.to_string()
    };
    full.to_ascii_lowercase().parse().ok()
}

/// One kernel log line as a device error, if it is one.
pub fn parse_kernel_line(line: &str) -> Option<KernelDeviceError> {
    if let Some(i) = line.find("NVRM: Xid (PCI:") {
        let rest = &line[i + "NVRM: Xid (PCI:".len()..];
        let (addr, rest) = rest.split_once("):")?;
        let rest = rest.trim_start();
        let (code, message) = match rest.split_once(',') {
            Some((c, m)) => (c, m.trim()),
            None => (rest, ""),
        };
        return Some(KernelDeviceError {
            kind: "nvidia_xid".into(),
            pci_address: xid_address(addr),
            code: code.trim().parse().ok(),
            message: message.chars().take(512).collect(),
            source: kernel_log_source(),
        });
    }
    // "NVRM: The NVIDIA GPU 0000:b3:00.0" opens the fallen-off-the-bus report
    // (its next lines say so); the GPU is named only on this line.
    if let Some(i) = line.find("NVRM: The NVIDIA GPU ") {
        let addr = line[i + "NVRM: The NVIDIA GPU ".len()..]
            .split_whitespace()
            .next()?;
        return Some(KernelDeviceError {
            kind: "nvidia_fallen_off_bus".into(),
            pci_address: addr.to_ascii_lowercase().parse().ok(),
            code: None,
            message: "fallen off the bus and not responding (NVRM)".into(),
            source: kernel_log_source(),
        });
    }
    None
}

/// Every device error of a log text; a fallen-off-the-bus opener counts
/// only when a following line of the same report says "fallen off the bus".
pub fn parse_kernel_log(text: &str) -> Vec<KernelDeviceError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(e) = parse_kernel_line(l) else {
            continue;
        };
        if e.kind == "nvidia_fallen_off_bus"
            && !lines[i + 1..]
                .iter()
                .take(3)
                .any(|n| n.contains("fallen off the bus"))
        {
            continue;
        }
        out.push(e);
    }
    out
}
