//! The `intel` backend: Intel GPUs (`i915` / `xe` drivers) from the PCI scan
//! and DRM sysfs (integrated or discrete, local memory where exposed), plus
//! one `xpu-smi discovery -j` run when XPU Manager is installed (names,
//! UUIDs). Skipped when the PCI bus has no Intel display device.
//! `ZE_AFFINITY_MASK` and `ONEAPI_DEVICE_SELECTOR` hide GPUs (they stay
//! listed, unavailable); the rules are in [`visibility`].

pub mod sysfs;
pub mod visibility;
pub mod xpu_smi;

use crate::model::{Device, Family, SharedMemory};
use crate::probe::{Probe, ProbeExt};

use super::amd::sysfs::drm_cards;
use super::memory::parse_meminfo;
use super::pci_ids::known_device;
use super::{BackendOutput, Context, PciDevice};
use sysfs::IntelCard;
use xpu_smi::XpuGpu;

/// Intel's PCI vendor id.
pub const INTEL_VENDOR_ID: u16 = 0x8086;

/// The name of an Intel GPU: xpu-smi's name unless it is the
/// `Intel(R) Graphics [0x....]` placeholder, else the embedded PCI table's,
/// else the placeholder, else `Intel GPU [8086:dddd]`.
pub fn intel_name(tool: Option<&str>, device_id: Option<u16>, placeholder: bool) -> String {
    let known = device_id.and_then(|d| known_device(INTEL_VENDOR_ID, d));
    match (tool, known) {
        (Some(t), _) if !placeholder => t.to_string(),
        (_, Some(k)) => k.name.to_string(),
        (Some(t), None) => t.to_string(),
        (None, None) => match device_id {
            Some(d) => format!("Intel GPU [8086:{d:04x}]"),
            None => "Intel GPU".to_string(),
        },
    }
}

fn run_xpu_smi(probe: &dyn Probe, warnings: &mut Vec<String>) -> Vec<XpuGpu> {
    match probe.run("xpu-smi", &["discovery", "-j"]) {
        Ok(out) if out.success() => {
            let (g, w) = xpu_smi::parse_gpus(&out.stdout);
            warnings.extend(w.into_iter().map(|m| format!("xpu-smi: {m}")));
            g
        }
        Ok(out) => {
            warnings.push(format!(
                "xpu-smi discovery -j exited with {:?}: {}",
                out.status,
                out.stderr_line()
            ));
            Vec::new()
        }
        Err(e) if e.is_absent() => Vec::new(),
        Err(e) => {
            warnings.push(e.to_string());
            Vec::new()
        }
    }
}

/// Build devices from the joined facts (pure; tests call it on parsed fixtures).
pub fn assemble(pci: &[&PciDevice], cards: &[IntelCard], tool: &[XpuGpu]) -> Vec<Device> {
    let mut out = Vec::new();
    for p in pci {
        let card = cards
            .iter()
            .find(|c| c.card.as_ref().and_then(|c| c.address) == Some(p.address));
        let t = tool.iter().find(|t| t.address == Some(p.address));
        let driver = p
            .driver
            .clone()
            .or_else(|| card.and_then(|c| c.card.as_ref()?.driver.clone()));
        let mut sources: Vec<String> = Vec::new();
        if card.is_some() {
            let drv = driver.as_deref().unwrap_or("drm");
            sources.push(format!("{drv}-sysfs"));
        }
        if t.is_some() {
            sources.push(xpu_smi::SOURCE.to_string());
        }
        if sources.is_empty() {
            continue; // only on the PCI bus: the pci backend reports it.
        }
        let lmem = card
            .and_then(|c| c.lmem_total_bytes)
            .or(t.and_then(|t| t.memory_bytes));
        let integrated = sysfs::is_integrated(p.address, lmem);
        let name = intel_name(
            t.and_then(|t| t.name.as_deref()),
            Some(p.device_id),
            t.is_none_or(XpuGpu::name_is_placeholder),
        );
        let mut d = Device::new(
            format!("pci:{}", p.address),
            name,
            "intel",
            Family::Gpu,
            &sources.join("+"),
        );
        d.pci_address = Some(p.address);
        d.numa_node = p.numa_node;
        d.driver = driver;
        d.pci = Some(p.info());
        d.memory_bytes = lmem;
        d.memory_free_bytes = card.and_then(|c| c.lmem_avail_bytes);
        d.extra.insert(
            "integrated".into(),
            if integrated { "true" } else { "false" }.into(),
        );
        if integrated {
            // No local memory: it uses the host's. i915/xe publish no limit
            // on its share, so `memory_bytes` stays unknown; the pool is
            // filled in by `detect` (from /proc/meminfo).
            d.shared_memory = Some(SharedMemory {
                pool_bytes: None,
                device_limit_bytes: None,
                source: "pool: unknown; GPU limit: unknown (an integrated GPU without local \
                         memory; i915/xe publish no limit on its share)"
                    .into(),
            });
        }
        if let Some(n) = card.and_then(|c| c.tiles) {
            d.extra.insert("tiles".into(), n.to_string());
        }
        if let Some(c) = card.and_then(|c| c.card.as_ref()) {
            d.extra.insert("drm_card".into(), c.name.clone());
        }
        if let Some(t) = t {
            d.uuid.clone_from(&t.uuid);
            d.index = t.index;
            d.driver_version.clone_from(&t.driver_version);
            d.serial.clone_from(&t.serial);
            d.firmware_version.clone_from(&t.firmware_version);
            d.ecc_enabled = t.ecc_enabled;
            if let Some(n) = t.eu_count {
                d.extra.insert("eu_count".into(), n.to_string());
            }
        }
        out.push(d);
    }
    out
}

/// The `intel` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let pci: Vec<&PciDevice> = ctx
        .pci()
        .by_vendor(INTEL_VENDOR_ID)
        .filter(|d| d.family == Family::Gpu)
        .collect();
    if pci.is_empty() {
        return out;
    }
    let cards: Vec<IntelCard> = drm_cards(ctx.probe)
        .iter()
        .filter(|c| {
            c.address
                .is_some_and(|a| pci.iter().any(|p| p.address == a))
        })
        .map(|c| sysfs::read_intel_card(ctx.probe, c))
        .collect();
    let tool = run_xpu_smi(ctx.probe, &mut out.warnings);
    out.devices = assemble(&pci, &cards, &tool);
    if out.devices.iter().any(|d| d.shared_memory.is_some()) {
        let pool = ctx
            .probe
            .read_text("/proc/meminfo")
            .ok()
            .and_then(|t| parse_meminfo(&t).get("MemTotal"));
        for m in out
            .devices
            .iter_mut()
            .filter_map(|d| d.shared_memory.as_mut())
        {
            if let Some(p) = pool {
                m.pool_bytes = Some(p);
                m.source = m
                    .source
                    .replacen("pool: unknown", "pool: /proc/meminfo MemTotal", 1);
            }
        }
    }
    apply_visibility(ctx.probe, &mut out.devices, &mut out.warnings);
    out
}

/// Mark the GPUs `ZE_AFFINITY_MASK` / `ONEAPI_DEVICE_SELECTOR` hide as
/// unavailable. GPUs are numbered in PCI address order, with the tile
/// counts the `xe` sysfs showed (see [`visibility`]).
fn apply_visibility(probe: &dyn Probe, devices: &mut [Device], warnings: &mut Vec<String>) {
    let mask = probe.env(visibility::ZE_AFFINITY_MASK);
    let selector = probe.env(visibility::ONEAPI_DEVICE_SELECTOR);
    if mask.is_none() && selector.is_none() {
        return;
    }
    let mut order: Vec<usize> = (0..devices.len()).collect();
    order.sort_by_key(|&i| devices[i].pci_address);
    let tiles: Vec<Option<u32>> = order
        .iter()
        .map(|&i| devices[i].extra.get("tiles").and_then(|t| t.parse().ok()))
        .collect();
    let hierarchy =
        visibility::Hierarchy::from_env(probe.env(visibility::ZE_FLAT_DEVICE_HIERARCHY).as_deref());
    let (hidden, w) =
        visibility::intel_visibility(&tiles, hierarchy, mask.as_deref(), selector.as_deref());
    warnings.extend(w);
    for (&i, var) in order.iter().zip(hidden) {
        if let Some(var) = var {
            let d = &mut devices[i];
            if d.available {
                d.available = false;
                d.unavailable_reason = Some(format!("hidden by {var}"));
            }
        }
    }
}
