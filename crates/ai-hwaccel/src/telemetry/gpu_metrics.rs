//! amdgpu's `gpu_metrics` sysfs file (`/sys/class/drm/cardN/device/gpu_metrics`):
//! a binary table the power-management firmware fills, one C struct per
//! revision, declared in the kernel's
//! `drivers/gpu/drm/amd/include/kgd_pp_interface.h` (`struct
//! metrics_table_header` then `gpu_metrics_vX_Y`). Every revision of that
//! header is described here as its list of fields; offsets follow the C
//! layout rules (natural alignment, tail padding), and a table whose
//! `structure_size` does not match the layout is refused rather than
//! misread. Fields the firmware does not fill hold all ones (`0xffff`) and
//! are unknown.
//!
//! Units, as the header and the drivers that fill it state: revisions 1.x
//! (discrete GPUs) in °C, %, W and MHz; 2.x (APUs) in centi-°C, centi-%
//! (hundredths of a percent; checked on a Phoenix APU whose
//! `gpu_busy_percent` read 0 while the table held 79) and mW; 3.0 activity
//! in % and power in mW (its temperatures' unit is not stated: not read).
//!
//! The ASIC-independent throttle bits (`indep_throttle_status`, revisions
//! 1.3 and 2.2 on) are named after `SMU_THROTTLER_*_BIT` in
//! `drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h`. Pure: bytes in, values out.

use std::collections::BTreeMap;

/// One C field: a name (empty for padding the header declares), the size
/// of one element in bytes and the element count.
type Field = (&'static str, usize, usize);

const U8: usize = 1;
const U16: usize = 2;
const U32: usize = 4;
const U64: usize = 8;

// Array sizes of the header (NUM_HBM_INSTANCES, NUM_XGMI_LINKS,
// MAX_GFX_CLKS, MAX_CLKS, NUM_VCN, NUM_JPEG_ENG).
const HBM: usize = 4;
const XGMI: usize = 8;
const GFX_CLKS: usize = 8;
const CLKS: usize = 4;
const VCN: usize = 4;
const JPEG: usize = 32;

const V1_TEMPS: [Field; 6] = [
    ("temperature_edge", U16, 1),
    ("temperature_hotspot", U16, 1),
    ("temperature_mem", U16, 1),
    ("temperature_vrgfx", U16, 1),
    ("temperature_vrsoc", U16, 1),
    ("temperature_vrmem", U16, 1),
];

const V1_ACTIVITY: [Field; 4] = [
    ("average_gfx_activity", U16, 1),
    ("average_umc_activity", U16, 1),
    ("average_mm_activity", U16, 1),
    ("average_socket_power", U16, 1),
];

const V1_CLOCKS: [Field; 14] = [
    ("average_gfxclk_frequency", U16, 1),
    ("average_socclk_frequency", U16, 1),
    ("average_uclk_frequency", U16, 1),
    ("average_vclk0_frequency", U16, 1),
    ("average_dclk0_frequency", U16, 1),
    ("average_vclk1_frequency", U16, 1),
    ("average_dclk1_frequency", U16, 1),
    ("current_gfxclk", U16, 1),
    ("current_socclk", U16, 1),
    ("current_uclk", U16, 1),
    ("current_vclk0", U16, 1),
    ("current_dclk0", U16, 1),
    ("current_vclk1", U16, 1),
    ("current_dclk1", U16, 1),
];

/// The fields of revision `format.content`, or `None` for one this table
/// does not know.
fn layout(format: u8, content: u8) -> Option<Vec<Field>> {
    let mut f: Vec<Field> = Vec::new();
    match (format, content) {
        (1, 0) => {
            f.push(("system_clock_counter", U64, 1));
            f.extend(V1_TEMPS);
            f.extend(V1_ACTIVITY);
            f.push(("energy_accumulator", U32, 1));
            f.extend(V1_CLOCKS);
            f.push(("throttle_status", U32, 1));
            f.push(("current_fan_speed", U16, 1));
            f.push(("pcie_link_width8", U8, 1));
            f.push(("pcie_link_speed8", U8, 1));
        }
        (1, 1..=3) => {
            f.extend(V1_TEMPS);
            f.extend(V1_ACTIVITY);
            f.push(("energy_accumulator", U64, 1));
            f.push(("system_clock_counter", U64, 1));
            f.extend(V1_CLOCKS);
            f.push(("throttle_status", U32, 1));
            f.push(("current_fan_speed", U16, 1));
            f.push(("pcie_link_width", U16, 1));
            f.push(("pcie_link_speed", U16, 1));
            f.push(("", U16, 1));
            f.push(("gfx_activity_acc", U32, 1));
            f.push(("mem_activity_acc", U32, 1));
            f.push(("temperature_hbm", U16, HBM));
            if content >= 2 {
                f.push(("firmware_timestamp", U64, 1));
            }
            if content >= 3 {
                f.push(("voltage_soc", U16, 1));
                f.push(("voltage_gfx", U16, 1));
                f.push(("voltage_mem", U16, 1));
                f.push(("", U16, 1));
                f.push(("indep_throttle_status", U64, 1));
            }
        }
        (1, 4..=6) => {
            f.push(("temperature_hotspot", U16, 1));
            f.push(("temperature_mem", U16, 1));
            f.push(("temperature_vrsoc", U16, 1));
            f.push(("curr_socket_power", U16, 1));
            f.push(("average_gfx_activity", U16, 1));
            f.push(("average_umc_activity", U16, 1));
            f.push(("vcn_activity", U16, VCN));
            if content >= 5 {
                f.push(("jpeg_activity", U16, JPEG));
            }
            f.push(("energy_accumulator", U64, 1));
            f.push(("system_clock_counter", U64, 1));
            if content >= 6 {
                f.push(("accumulation_counter", U32, 1));
                f.push(("throttler_residencies", U32, 5));
            }
            f.push(("throttle_status", U32, 1));
            f.push(("gfxclk_lock_status", U32, 1));
            f.push(("pcie_link_width", U16, 1));
            f.push(("pcie_link_speed", U16, 1));
            f.push(("xgmi_link_width", U16, 1));
            f.push(("xgmi_link_speed", U16, 1));
            f.push(("gfx_activity_acc", U32, 1));
            f.push(("mem_activity_acc", U32, 1));
            f.push(("pcie_bandwidth_acc", U64, 1));
            f.push(("pcie_bandwidth_inst", U64, 1));
            f.push(("pcie_l0_to_recov_count_acc", U64, 1));
            f.push(("pcie_replay_count_acc", U64, 1));
            f.push(("pcie_replay_rover_count_acc", U64, 1));
            if content >= 5 {
                f.push(("pcie_nak_sent_count_acc", U32, 1));
                f.push(("pcie_nak_rcvd_count_acc", U32, 1));
            }
            f.push(("xgmi_read_data_acc", U64, XGMI));
            f.push(("xgmi_write_data_acc", U64, XGMI));
            f.push(("firmware_timestamp", U64, 1));
            f.push(("current_gfxclk", U16, GFX_CLKS));
            f.push(("current_socclk", U16, CLKS));
            f.push(("current_vclk0", U16, CLKS));
            f.push(("current_dclk0", U16, CLKS));
            f.push(("current_uclk", U16, 1));
            f.push(("", U16, 1));
        }
        (2, 0..=4) => {
            if content == 0 {
                f.push(("system_clock_counter", U64, 1));
            }
            f.push(("temperature_gfx", U16, 1));
            f.push(("temperature_soc", U16, 1));
            f.push(("temperature_core", U16, 8));
            f.push(("temperature_l3", U16, 2));
            f.push(("average_gfx_activity", U16, 1));
            f.push(("average_mm_activity", U16, 1));
            if content >= 1 {
                f.push(("system_clock_counter", U64, 1));
            }
            f.push(("average_socket_power", U16, 1));
            f.push(("average_cpu_power", U16, 1));
            f.push(("average_soc_power", U16, 1));
            f.push(("average_gfx_power", U16, 1));
            f.push(("average_core_power", U16, 8));
            f.push(("average_gfxclk_frequency", U16, 1));
            f.push(("average_socclk_frequency", U16, 1));
            f.push(("average_uclk_frequency", U16, 1));
            f.push(("average_fclk_frequency", U16, 1));
            f.push(("average_vclk_frequency", U16, 1));
            f.push(("average_dclk_frequency", U16, 1));
            f.push(("current_gfxclk", U16, 1));
            f.push(("current_socclk", U16, 1));
            f.push(("current_uclk", U16, 1));
            f.push(("current_fclk", U16, 1));
            f.push(("current_vclk", U16, 1));
            f.push(("current_dclk", U16, 1));
            f.push(("current_coreclk", U16, 8));
            f.push(("current_l3clk", U16, 2));
            f.push(("throttle_status", U32, 1));
            f.push(("fan_pwm", U16, 1));
            f.push(("", U16, if content == 0 { 1 } else { 3 }));
            if content >= 2 {
                f.push(("indep_throttle_status", U64, 1));
            }
            if content >= 3 {
                f.push(("average_temperature_gfx", U16, 1));
                f.push(("average_temperature_soc", U16, 1));
                f.push(("average_temperature_core", U16, 8));
                f.push(("average_temperature_l3", U16, 2));
            }
            if content >= 4 {
                f.push(("average_voltages", U16, 3));
                f.push(("average_currents", U16, 3));
            }
        }
        (3, 0) => {
            f.push(("temperature_gfx", U16, 1));
            f.push(("temperature_soc", U16, 1));
            f.push(("temperature_core", U16, 16));
            f.push(("temperature_skin", U16, 1));
            f.push(("average_gfx_activity", U16, 1));
            f.push(("average_vcn_activity", U16, 1));
            f.push(("average_ipu_activity", U16, 8));
            f.push(("average_core_c0_activity", U16, 16));
            f.push(("average_dram_reads", U16, 1));
            f.push(("average_dram_writes", U16, 1));
            f.push(("average_ipu_reads", U16, 1));
            f.push(("average_ipu_writes", U16, 1));
            f.push(("system_clock_counter", U64, 1));
            f.push(("average_socket_power", U32, 1));
            f.push(("average_ipu_power", U16, 1));
            f.push(("average_apu_power", U32, 1));
            f.push(("average_gfx_power", U32, 1));
            f.push(("average_dgpu_power", U32, 1));
            f.push(("average_all_core_power", U32, 1));
            f.push(("average_core_power", U16, 16));
            f.push(("average_sys_power", U16, 1));
            f.push(("stapm_power_limit", U16, 1));
            f.push(("current_stapm_power_limit", U16, 1));
            f.push(("average_clocks", U16, 8));
            f.push(("current_coreclk", U16, 16));
            f.push(("current_core_maxfreq", U16, 1));
            f.push(("current_gfx_maxfreq", U16, 1));
            f.push(("throttle_residency", U32, 7));
            f.push(("time_filter_alphavalue", U32, 1));
        }
        _ => return None,
    }
    Some(f)
}

/// Field offsets after the 4-byte header (which the struct starts with),
/// and the struct's size, by C layout rules.
fn offsets(fields: &[Field]) -> (BTreeMap<&'static str, usize>, usize) {
    let mut at = 4usize; // struct metrics_table_header
    let mut max_align = 2usize; // the header's uint16_t
    let mut map = BTreeMap::new();
    for (name, size, count) in fields {
        at = at.div_ceil(*size) * size;
        max_align = max_align.max(*size);
        if !name.is_empty() {
            map.insert(*name, at);
        }
        at += size * count;
    }
    (map, at.div_ceil(max_align) * max_align)
}

/// What one `gpu_metrics` table says, in base units; `None` where the
/// revision has no such field or the firmware left it unfilled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuMetrics {
    /// `format_revision.content_revision` of the header (`1.3`, `2.1`, …).
    pub revision: (u8, u8),
    /// Temperatures by the hwmon label they correspond to (`edge`,
    /// `junction`, `mem`, `gfx`, `soc`).
    pub temperatures_celsius: BTreeMap<String, f64>,
    /// Graphics engine busy, 0–1.
    pub gfx_activity_ratio: Option<f64>,
    /// Memory controller busy, 0–1 (1.x only).
    pub memory_activity_ratio: Option<f64>,
    /// Socket (board or APU package) power.
    pub socket_power_watts: Option<f64>,
    /// Current clocks by the names hwmon readings use (`graphics`, `memory`).
    pub clocks_hertz: BTreeMap<String, f64>,
    /// `throttle_status`: ASIC-specific bits, as read.
    pub throttle_status: Option<u32>,
    /// `indep_throttle_status`: the ASIC-independent bits.
    pub indep_throttle_status: Option<u64>,
    /// PCIe link in use: lanes.
    pub pcie_link_width: Option<u32>,
    /// PCIe link in use: GT/s.
    pub pcie_link_speed_gts: Option<f64>,
}

/// `SMU_THROTTLER_*_BIT` of `amdgpu_smu.h`: bit → reason.
const INDEP_THROTTLERS: &[(u32, &str)] = &[
    (0, "ppt0"),
    (1, "ppt1"),
    (2, "ppt2"),
    (3, "ppt3"),
    (4, "spl"),
    (5, "fppt"),
    (6, "sppt"),
    (7, "sppt_apu"),
    (16, "tdc_gfx"),
    (17, "tdc_soc"),
    (18, "tdc_mem"),
    (19, "tdc_vdd"),
    (20, "tdc_cvip"),
    (21, "edc_cpu"),
    (22, "edc_gfx"),
    (23, "apcc"),
    (32, "temp_gpu"),
    (33, "temp_core"),
    (34, "temp_mem"),
    (35, "temp_edge"),
    (36, "temp_hotspot"),
    (37, "temp_soc"),
    (38, "temp_vr_gfx"),
    (39, "temp_vr_soc"),
    (40, "temp_vr_mem0"),
    (41, "temp_vr_mem1"),
    (42, "temp_liquid0"),
    (43, "temp_liquid1"),
    (44, "vrhot0"),
    (45, "vrhot1"),
    (46, "prochot_cpu"),
    (47, "prochot_gfx"),
    (56, "ppm"),
    (57, "fit"),
];

impl GpuMetrics {
    /// The active ASIC-independent throttle reasons (empty: none active),
    /// or `None` when the revision does not report them. Bits the header
    /// does not name are reported as `bit<N>`.
    pub fn throttle_reasons(&self) -> Option<Vec<String>> {
        let v = self.indep_throttle_status?;
        Some(
            (0..64u32)
                .filter(|b| v & (1u64 << b) != 0)
                .map(|b| {
                    INDEP_THROTTLERS
                        .iter()
                        .find(|(bit, _)| *bit == b)
                        .map_or_else(|| format!("bit{b}"), |(_, n)| (*n).to_string())
                })
                .collect(),
        )
    }
}

/// Parse a `gpu_metrics` table. A file longer than the table (amdgpu pads
/// the read to a page on some kernels) is read up to `structure_size`.
pub fn parse_gpu_metrics(bytes: &[u8]) -> Result<GpuMetrics, String> {
    if bytes.len() < 4 {
        return Err(format!(
            "{} bytes: shorter than the 4-byte header",
            bytes.len()
        ));
    }
    let size = usize::from(u16::from_le_bytes([bytes[0], bytes[1]]));
    let (format, content) = (bytes[2], bytes[3]);
    let fields = layout(format, content)
        .ok_or_else(|| format!("revision {format}.{content} is not one this reader knows"))?;
    let (at, expected) = offsets(&fields);
    if size != expected {
        return Err(format!(
            "revision {format}.{content}: structure_size {size} but the layout is {expected} bytes"
        ));
    }
    if bytes.len() < size {
        return Err(format!(
            "revision {format}.{content}: {} bytes, the table declares {size}",
            bytes.len()
        ));
    }
    let b = &bytes[..size];
    let u16_at = |name: &str| -> Option<u16> {
        let &o = at.get(name)?;
        let v = u16::from_le_bytes([b[o], b[o + 1]]);
        (v != u16::MAX).then_some(v)
    };
    let u32_at = |name: &str| -> Option<u32> {
        let &o = at.get(name)?;
        let v = u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        (v != u32::MAX).then_some(v)
    };
    let u64_at = |name: &str| -> Option<u64> {
        let &o = at.get(name)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[o..o + 8]);
        let v = u64::from_le_bytes(a);
        (v != u64::MAX).then_some(v)
    };
    let mut m = GpuMetrics {
        revision: (format, content),
        ..Default::default()
    };
    let apu = format == 2;
    // Temperatures: °C in 1.x; centi-°C in 2.x; not read in 3.0.
    let temp_scale = match format {
        1 => Some(1.0),
        2 => Some(0.01),
        _ => None,
    };
    if let Some(scale) = temp_scale {
        for (field, label) in [
            ("temperature_edge", "edge"),
            ("temperature_hotspot", "junction"),
            ("temperature_mem", "mem"),
            ("temperature_gfx", "gfx"),
            ("temperature_soc", "soc"),
        ] {
            if let Some(v) = u16_at(field).map(|v| f64::from(v) * scale) {
                if (-50.0..=250.0).contains(&v) {
                    m.temperatures_celsius.insert(label.to_string(), v);
                }
            }
        }
    }
    // Activity: % in 1.x and 3.0, centi-% in 2.x.
    let pct = if apu { 10_000.0 } else { 100.0 };
    let ratio = |v: u16| (f64::from(v) / pct <= 1.0).then_some(f64::from(v) / pct);
    m.gfx_activity_ratio = u16_at("average_gfx_activity").and_then(ratio);
    m.memory_activity_ratio = u16_at("average_umc_activity").and_then(ratio);
    // Power: W in 1.x, mW in 2.x and 3.0.
    m.socket_power_watts = match format {
        1 => u16_at("average_socket_power")
            .or_else(|| u16_at("curr_socket_power"))
            .map(f64::from),
        2 => u16_at("average_socket_power").map(|v| f64::from(v) / 1000.0),
        _ => u32_at("average_socket_power").map(|v| f64::from(v) / 1000.0),
    };
    for (field, label) in [("current_gfxclk", "graphics"), ("current_uclk", "memory")] {
        if let Some(mhz) = u16_at(field).filter(|v| *v > 0) {
            m.clocks_hertz
                .insert(label.to_string(), f64::from(mhz) * 1e6);
        }
    }
    m.throttle_status = u32_at("throttle_status");
    m.indep_throttle_status = u64_at("indep_throttle_status");
    let (width, speed) = match (at.get("pcie_link_width8"), at.get("pcie_link_speed8")) {
        (Some(&w), Some(&s)) => (
            (b[w] != u8::MAX).then_some(u16::from(b[w])),
            (b[s] != u8::MAX).then_some(u16::from(b[s])),
        ),
        _ => (u16_at("pcie_link_width"), u16_at("pcie_link_speed")),
    };
    m.pcie_link_width = width.map(u32::from).filter(|w| (1..=32).contains(w));
    m.pcie_link_speed_gts = speed
        .filter(|s| (1..=1280).contains(s))
        .map(|s| f64::from(s) / 10.0);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_sizes_the_header_gives() {
        // Sizes of the structs as C lays them out (checked against the
        // real 1.3 and 2.1 tables in tests/telemetry.rs: 120 bytes each).
        let size = |f, c| offsets(&layout(f, c).unwrap()).1;
        assert_eq!(size(1, 3), 120);
        assert_eq!(size(2, 1), 120);
        // 1.0: the u64 after the header is aligned to 8 (4 bytes of padding).
        let (at, _) = offsets(&layout(1, 0).unwrap());
        assert_eq!(at["system_clock_counter"], 8);
        assert_eq!(at["temperature_edge"], 16);
        // 2.0 likewise; 2.1 moved the counter after the utilization.
        assert_eq!(offsets(&layout(2, 0).unwrap()).0["system_clock_counter"], 8);
        assert_eq!(
            offsets(&layout(2, 1).unwrap()).0["system_clock_counter"],
            32
        );
        for (f, c) in [(1, 4), (1, 5), (1, 6), (2, 2), (2, 3), (2, 4), (3, 0)] {
            assert!(size(f, c) > 100, "{f}.{c}");
        }
        assert!(layout(1, 9).is_none() && layout(4, 0).is_none());
    }

    #[test]
    fn hostile_tables_are_errors_never_panics() {
        assert!(parse_gpu_metrics(&[]).is_err());
        assert!(parse_gpu_metrics(&[0x78, 0, 1]).is_err());
        // Known revision, wrong size.
        assert!(parse_gpu_metrics(&[0x10, 0, 1, 3]).is_err());
        // Right declared size, truncated file.
        let mut t = vec![0x78, 0, 1, 3];
        t.resize(60, 0);
        assert!(parse_gpu_metrics(&t).unwrap_err().contains("declares 120"));
        // Unknown revision.
        assert!(parse_gpu_metrics(&[0x78, 0, 9, 9]).is_err());
        // All ones everywhere: every value unknown.
        let mut ones = vec![0xff; 120];
        ones[..4].copy_from_slice(&[0x78, 0, 1, 3]);
        let m = parse_gpu_metrics(&ones).unwrap();
        assert!(m.temperatures_celsius.is_empty() && m.gfx_activity_ratio.is_none());
        assert_eq!((m.throttle_status, m.throttle_reasons()), (None, None));
    }

    #[test]
    fn independent_throttle_bits_are_named() {
        let m = GpuMetrics {
            indep_throttle_status: Some((1 << 0) | (1 << 36) | (1 << 63)),
            ..Default::default()
        };
        assert_eq!(
            m.throttle_reasons().unwrap(),
            ["ppt0", "temp_hotspot", "bit63"]
        );
        let none = GpuMetrics {
            indep_throttle_status: Some(0),
            ..Default::default()
        };
        assert_eq!(none.throttle_reasons(), Some(vec![]));
    }
}
