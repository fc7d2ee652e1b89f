//! amdgpu's sysfs files under `/sys/class/drm/cardN/device`: VRAM sizes,
//! memory clock levels, board identity, VBIOS and MI300-style partition
//! modes. Also the DRM card listing ([`drm_cards`]) the Intel backend reuses.
//!
//! File meanings follow the kernel's amdgpu documentation
//! (`Documentation/gpu/amdgpu/driver-misc.rst`, `thermal.rst`).

use crate::model::PciAddress;
use crate::probe::{Probe, ProbeExt, join};

/// Where DRM cards are listed.
pub const DRM_DIR: &str = "/sys/class/drm";

/// One DRM card (`/sys/class/drm/cardN`), with the PCI device it sits on.
#[derive(Clone, Debug, PartialEq)]
pub struct DrmCard {
    /// `card0`, `card1`, …
    pub name: String,
    /// `/sys/class/drm/cardN`.
    pub dir: String,
    /// `/sys/class/drm/cardN/device` (the PCI device directory).
    pub device_dir: String,
    /// PCI address, from the `device` link or `device/uevent`.
    pub address: Option<PciAddress>,
    /// Bound driver, from the `device/driver` link or `device/uevent`.
    pub driver: Option<String>,
}

/// Parse a `uevent` file into `(DRIVER, PCI_SLOT_NAME)`.
pub fn parse_uevent(text: &str) -> (Option<String>, Option<PciAddress>) {
    let mut driver = None;
    let mut slot = None;
    for line in text.lines() {
        match line.trim().split_once('=') {
            Some(("DRIVER", v)) if !v.trim().is_empty() => driver = Some(v.trim().to_string()),
            Some(("PCI_SLOT_NAME", v)) => slot = v.trim().parse().ok(),
            _ => {}
        }
    }
    (driver, slot)
}

/// List DRM cards (`cardN`, not connectors like `card0-DP-1`).
pub fn drm_cards(probe: &dyn Probe) -> Vec<DrmCard> {
    let mut cards: Vec<(u32, String)> = probe
        .list_or_empty(DRM_DIR)
        .into_iter()
        .filter_map(|n| {
            let num = n.strip_prefix("card")?.parse::<u32>().ok()?;
            Some((num, n))
        })
        .collect();
    cards.sort();
    cards
        .into_iter()
        .map(|(_, name)| {
            let dir = join(DRM_DIR, &name);
            let device_dir = join(&dir, "device");
            let (ue_driver, ue_slot) = probe
                .read_text(&join(&device_dir, "uevent"))
                .map(|t| parse_uevent(&t))
                .unwrap_or_default();
            let address = probe
                .link_name(&device_dir)
                .and_then(|n| n.parse().ok())
                .or(ue_slot);
            let driver = probe.link_name(&join(&device_dir, "driver")).or(ue_driver);
            DrmCard {
                name,
                dir,
                device_dir,
                address,
                driver,
            }
        })
        .collect()
}

/// The highest clock of a `pp_dpm_*` file (`0: 167Mhz *`, one level per
/// line, `*` marks the current one), in MHz.
pub fn parse_dpm_max_mhz(text: &str) -> Option<u32> {
    text.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once(':')?;
            let v = rest.trim().trim_end_matches('*').trim();
            let lower = v.to_ascii_lowercase();
            let num = lower.strip_suffix("mhz")?.trim();
            num.parse::<u32>().ok()
        })
        .max()
        .filter(|&m| m > 0)
}

/// A partition list file (`SPX, DPX, QPX, CPX`) into its modes.
pub fn parse_partition_list(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(str::to_string)
        .collect()
}

/// Parse a byte count file (`8573157376`); 0 and garbage are `None`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&v| v > 0)
}

/// Facts from one amdgpu card's sysfs files. `None`: the file is absent or empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AmdgpuCard {
    /// The card.
    pub card: Option<DrmCard>,
    /// `mem_info_vram_total`.
    pub vram_total_bytes: Option<u64>,
    /// `mem_info_vram_used`.
    pub vram_used_bytes: Option<u64>,
    /// `mem_info_vis_vram_total` (CPU-visible part of VRAM).
    pub vis_vram_total_bytes: Option<u64>,
    /// `mem_info_gtt_total`: system memory the GPU can map through its GART
    /// (the GTT domain). On an APU (Strix Halo and other Ryzen parts) VRAM is
    /// only the firmware's carve-out and GTT is the rest of what the GPU can
    /// use; on a discrete card it is host memory reachable over PCIe.
    pub gtt_total_bytes: Option<u64>,
    /// `mem_info_gtt_used`.
    pub gtt_used_bytes: Option<u64>,
    /// Highest level of `pp_dpm_mclk`.
    pub max_mclk_mhz: Option<u32>,
    /// `product_name` (board FRU).
    pub product_name: Option<String>,
    /// `product_number`.
    pub product_number: Option<String>,
    /// `serial_number`.
    pub serial_number: Option<String>,
    /// `unique_id` (hex, 64 bits).
    pub unique_id: Option<String>,
    /// `vbios_version`.
    pub vbios_version: Option<String>,
    /// `mem_info_vram_vendor`.
    pub vram_vendor: Option<String>,
    /// `current_compute_partition` (`SPX`, `CPX`, …).
    pub compute_partition: Option<String>,
    /// `available_compute_partition`.
    pub available_compute_partitions: Vec<String>,
    /// `current_memory_partition` (`NPS1`, `NPS4`, …).
    pub memory_partition: Option<String>,
    /// `available_memory_partition`.
    pub available_memory_partitions: Vec<String>,
}

/// Read the amdgpu files of one card's PCI device directory.
pub fn read_amdgpu_card(probe: &dyn Probe, card: &DrmCard) -> AmdgpuCard {
    let d = &card.device_dir;
    let text = |name: &str| probe.read_trimmed(&join(d, name));
    let list = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| text(n))
            .map(|t| parse_partition_list(&t))
            .unwrap_or_default()
    };
    AmdgpuCard {
        card: Some(card.clone()),
        vram_total_bytes: text("mem_info_vram_total").and_then(|t| parse_bytes(&t)),
        vram_used_bytes: text("mem_info_vram_used").and_then(|t| t.trim().parse().ok()),
        vis_vram_total_bytes: text("mem_info_vis_vram_total").and_then(|t| parse_bytes(&t)),
        gtt_total_bytes: text("mem_info_gtt_total").and_then(|t| parse_bytes(&t)),
        gtt_used_bytes: text("mem_info_gtt_used").and_then(|t| t.trim().parse().ok()),
        max_mclk_mhz: text("pp_dpm_mclk").and_then(|t| parse_dpm_max_mhz(&t)),
        product_name: text("product_name"),
        product_number: text("product_number"),
        serial_number: text("serial_number").filter(|s| !is_placeholder(s)),
        unique_id: text("unique_id").filter(|s| !is_placeholder(s)),
        vbios_version: text("vbios_version"),
        vram_vendor: text("mem_info_vram_vendor"),
        compute_partition: text("current_compute_partition"),
        available_compute_partitions: list(&[
            "available_compute_partition",
            "available_compute_partitions",
        ]),
        memory_partition: text("current_memory_partition"),
        available_memory_partitions: list(&[
            "available_memory_partition",
            "available_memory_partitions",
        ]),
    }
}

/// Values tools and sysfs print for "unknown": `N/A`, `0`, all-`f` ids.
pub fn is_placeholder(s: &str) -> bool {
    let t = s.trim();
    let hex = t.strip_prefix("0x").unwrap_or(t);
    t.is_empty()
        || t.eq_ignore_ascii_case("n/a")
        || t.eq_ignore_ascii_case("unknown")
        || hex.chars().all(|c| c == '0')
        || (hex.len() >= 4 && hex.chars().all(|c| c == 'f' || c == 'F'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpm_levels() {
        assert_eq!(
            parse_dpm_max_mhz("0: 167Mhz *\n1: 500Mhz \n2: 800Mhz \n3: 945Mhz \n"),
            Some(945)
        );
        assert_eq!(parse_dpm_max_mhz("0: 96Mhz\n1: 1000MHz *\n"), Some(1000));
        assert_eq!(parse_dpm_max_mhz("garbage"), None);
        assert_eq!(parse_dpm_max_mhz(""), None);
    }

    #[test]
    fn partitions_and_uevent() {
        assert_eq!(
            parse_partition_list("SPX, DPX, QPX, CPX\n"),
            vec!["SPX", "DPX", "QPX", "CPX"]
        );
        let (drv, slot) = parse_uevent("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:09:00.0\n");
        assert_eq!(drv.as_deref(), Some("amdgpu"));
        assert_eq!(slot.unwrap().to_string(), "0000:09:00.0");
        assert!(is_placeholder("0xffffffffffffffff"));
        assert!(is_placeholder("N/A"));
        assert!(!is_placeholder("0x7E8F7E20764E2714"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,120}") {
            let _ = parse_dpm_max_mhz(&s);
            let _ = parse_partition_list(&s);
            let _ = parse_uevent(&s);
            let _ = parse_bytes(&s);
            let _ = is_placeholder(&s);
        }
    }
}
