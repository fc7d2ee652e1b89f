//! Intel GPU facts from the DRM sysfs files of the `i915` and `xe` drivers:
//! whether a GPU is integrated or discrete, and the local memory (VRAM) of
//! discrete parts where the kernel exposes it.
//!
//! Files read (only these, and only where they exist):
//! - `xe`: `/sys/class/drm/cardN/device/tileT/physical_vram_size_bytes`
//!   (one per tile; `drivers/gpu/drm/xe/xe_tile_sysfs.c`).
//! - `i915` (Intel's out-of-tree backport driver): `/sys/class/drm/cardN/lmem_total_bytes`
//!   and `lmem_avail_bytes`.

use crate::model::PciAddress;
use crate::probe::{Probe, ProbeExt, join};

use crate::detect::amd::sysfs::{DrmCard, parse_bytes};

/// What the DRM sysfs says about one Intel GPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntelCard {
    /// The DRM card.
    pub card: Option<DrmCard>,
    /// Local memory in bytes (sum over tiles), when exposed.
    pub lmem_total_bytes: Option<u64>,
    /// Free local memory in bytes, when exposed.
    pub lmem_avail_bytes: Option<u64>,
    /// Number of tiles with VRAM (`xe`), when exposed.
    pub tiles: Option<u32>,
}

/// Whether a GPU is the integrated one: Intel puts its integrated graphics
/// at bus 0, device 2 (`00:02.0`) on every client and server platform, and an
/// integrated GPU has no local memory of its own.
pub fn is_integrated(address: PciAddress, lmem_total_bytes: Option<u64>) -> bool {
    address.bus == 0 && address.device == 2 && lmem_total_bytes.is_none()
}

/// Read the memory files of one card (`xe` tile files, else i915 `lmem_*`).
pub fn read_intel_card(probe: &dyn Probe, card: &DrmCard) -> IntelCard {
    let mut out = IntelCard {
        card: Some(card.clone()),
        ..Default::default()
    };
    let tiles: Vec<u64> = probe
        .list_or_empty(&card.device_dir)
        .iter()
        .filter(|n| {
            n.strip_prefix("tile")
                .is_some_and(|i| i.parse::<u32>().is_ok())
        })
        .filter_map(|t| {
            let path = join(&join(&card.device_dir, t), "physical_vram_size_bytes");
            probe.read_trimmed(&path).and_then(|s| parse_bytes(&s))
        })
        .collect();
    if !tiles.is_empty() {
        out.lmem_total_bytes = Some(tiles.iter().fold(0u64, |a, b| a.saturating_add(*b)));
        out.tiles = u32::try_from(tiles.len()).ok();
        return out;
    }
    out.lmem_total_bytes = probe
        .read_trimmed(&join(&card.dir, "lmem_total_bytes"))
        .and_then(|s| parse_bytes(&s));
    out.lmem_avail_bytes = probe
        .read_trimmed(&join(&card.dir, "lmem_avail_bytes"))
        .and_then(|s| s.trim().parse().ok());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrated_rule() {
        let igpu: PciAddress = "0000:00:02.0".parse().unwrap();
        let dgpu: PciAddress = "0000:03:00.0".parse().unwrap();
        assert!(is_integrated(igpu, None));
        assert!(!is_integrated(igpu, Some(1 << 30)));
        assert!(!is_integrated(dgpu, None));
    }
}
