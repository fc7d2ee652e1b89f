//! Parsers for the NVIDIA kernel driver's procfs files:
//! `/proc/driver/nvidia/gpus/<bus>/information` (`Key:  value` lines such as
//! `Model`, `GPU UUID`, `Bus Location`, `IRQ`, `Video BIOS`, `Device Minor`,
//! `GPU Excluded`) and `/proc/driver/nvidia/version`.

use crate::model::PciAddress;

use super::known;

/// Facts of one `information` file. Unknown lines are ignored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuInformation {
    /// `Model`.
    pub model: Option<String>,
    /// `GPU UUID` (`GPU-…`).
    pub uuid: Option<String>,
    /// `Bus Location`.
    pub bus_location: Option<PciAddress>,
    /// `IRQ`.
    pub irq: Option<String>,
    /// `Video BIOS`.
    pub video_bios: Option<String>,
    /// `Device Minor` (the N of `/dev/nvidiaN`).
    pub device_minor: Option<u32>,
    /// `GPU Excluded` (`Yes` when the driver keeps the GPU from use).
    pub excluded: Option<bool>,
}

/// Parse an `information` file. Values like `??.??.??.??.??` (no VBIOS read
/// yet) and `N/A` are unknown.
pub fn parse_information(text: &str) -> GpuInformation {
    let mut g = GpuInformation::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let v = value.trim();
        let Some(v) = known(v).filter(|v| !v.contains("??")) else {
            continue;
        };
        match key.trim() {
            "Model" => g.model = Some(v.to_string()),
            "GPU UUID" => g.uuid = Some(v.to_string()),
            "Bus Location" => g.bus_location = v.parse().ok(),
            "IRQ" => g.irq = Some(v.to_string()),
            "Video BIOS" => g.video_bios = Some(v.to_string()),
            "Device Minor" => g.device_minor = v.parse().ok(),
            "GPU Excluded" => {
                g.excluded = match v {
                    "Yes" => Some(true),
                    "No" => Some(false),
                    _ => None,
                }
            }
            _ => {}
        }
    }
    g
}

/// The driver version in `/proc/driver/nvidia/version`
/// (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  …`, or the
/// `Open Kernel Module for x86_64` spelling): the first dotted number on
/// the `NVRM` line.
pub fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM"))?;
    let rest = line.split_once(':')?.1;
    rest.split_whitespace()
        .find(|t| {
            t.contains('.')
                && t.chars().all(|c| c.is_ascii_digit() || c == '.')
                && t.chars().next().is_some_and(|c| c.is_ascii_digit())
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn information_file() {
        // Layout of the driver's information file (tabs after the colon).
        let text = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 154\nGPU UUID: \t GPU-5c4e3a1b-0000-1111-2222-333344445555\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nBus Location: \t 0000:1B:00.0\nDevice Minor: \t 3\nGPU Excluded:\t No\n";
        let g = parse_information(text);
        assert_eq!(g.model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(
            g.uuid.as_deref(),
            Some("GPU-5c4e3a1b-0000-1111-2222-333344445555")
        );
        assert_eq!(g.bus_location.unwrap().to_string(), "0000:1b:00.0");
        assert_eq!(g.irq.as_deref(), Some("154"));
        assert_eq!(g.video_bios.as_deref(), Some("96.00.99.00.01"));
        assert_eq!(g.device_minor, Some(3));
        assert_eq!(g.excluded, Some(false));
        let unread = parse_information("Video BIOS: \t ??.??.??.??.??\nModel:\n");
        assert_eq!(unread, GpuInformation::default());
    }

    #[test]
    fn version_file() {
        assert_eq!(
            parse_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\nGCC version:  gcc version 12.2.0\n")
                .as_deref(),
            Some("535.54.03")
        );
        assert_eq!(
            parse_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build\n").as_deref(),
            Some("550.90.07")
        );
        assert_eq!(parse_version("garbage"), None);
    }
}
