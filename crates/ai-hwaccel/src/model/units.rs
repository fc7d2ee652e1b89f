//! Sizes as tools print them: one pure parser for "a number with a unit"
//! (`81559 MiB`, `512Mib`, `16368 MB`, `31.25 GiB`, `192 GB`, `8116MB`,
//! `33538048 KB`) that every detection parser uses, so a spelling learnt from
//! one tool is understood in all of them.
//!
//! # Binary or decimal
//!
//! Every accelerator tool this crate reads prints memory in binary units,
//! whatever the label says, so `KB`/`MB`/`GB`/`TB` are read as KiB/MiB/GiB/TiB
//! ([`Labels::Binary`]) unless a caller says otherwise. Per tool:
//!
//! | tool | prints | meaning | evidence |
//! | --- | --- | --- | --- |
//! | nvidia-smi (`-q`, `-x`, csv) | `81559 MiB` | MiB | the nvidia-smi manual gives memory in MiB; an H100 80GB shows 81559 MiB (80 GiB less the reserve) |
//! | rocm-smi (JSON) | bytes, `(MiB)` in DTK forks | bytes / MiB | `VRAM Total Memory (B)`; Hygon DTK prints `vram Total Memory (MiB): 65520` for a 64 GiB K100 |
//! | amd-smi | `16368 MB`, `196592 MB` | MiB | 16368 on a 16 GiB board, 196592 (= 192 GiB − 16 MiB) on MI300X |
//! | hl-smi table / csv / `-q` | `98304MiB`, older `32768Mib`, `98304 MB` | MiB | 98304 = 96 GiB (Gaudi2 HBM2e), 32768 = 32 GiB (Gaudi HL-205) |
//! | npu-smi | bare `65536` under `HBM-Usage(MB)` | MiB | 65536 = 64 GiB on Ascend 910B |
//! | neuron-ls | `32 GB`, `96 GB` | GiB | 32 GiB HBM per Inferentia2 / Trainium device |
//! | qaic-util | `8116 MB` | MiB | Cloud AI 100 reports DDR in MiB |
//! | tpu-info | `31.25 GiB` | GiB | explicit binary label |
//! | system_profiler | `16 GB`, `1536 MB` | GiB / MiB | macOS sizes VRAM in binary units |
//! | clinfo, xpu-smi, vulkaninfo | bytes | bytes | `CL_DEVICE_GLOBAL_MEM_SIZE`, `memory_physical_size_byte`, heap `size` |
//!
//! The unit may be written in any case and with or without a space
//! (`512Mib`, `512 MiB`, `512 mib`); `B`, `byte` and `bytes` are bytes.

/// A binary size unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {
    /// Bytes.
    B,
    /// 2^10 bytes.
    KiB,
    /// 2^20 bytes.
    MiB,
    /// 2^30 bytes.
    GiB,
    /// 2^40 bytes.
    TiB,
}

impl SizeUnit {
    /// Bytes in one unit.
    pub const fn bytes(self) -> u64 {
        match self {
            Self::B => 1,
            Self::KiB => 1 << 10,
            Self::MiB => 1 << 20,
            Self::GiB => 1 << 30,
            Self::TiB => 1 << 40,
        }
    }

    /// The unit a label names (any case; `MB` is read as MiB, as the tools
    /// mean it), e.g. the `[MiB]` of an nvidia-smi CSV header.
    pub fn from_label(label: &str) -> Option<Self> {
        Some(match label.trim().to_ascii_lowercase().as_str() {
            "b" | "byte" | "bytes" => Self::B,
            "k" | "kb" | "kib" => Self::KiB,
            "m" | "mb" | "mib" => Self::MiB,
            "g" | "gb" | "gib" => Self::GiB,
            "t" | "tb" | "tib" => Self::TiB,
            _ => return None,
        })
    }
}

/// How the decimal-looking labels `KB`/`MB`/`GB`/`TB` are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Labels {
    /// As powers of 1024, which is what every accelerator tool means by them
    /// (see the module table).
    Binary,
    /// As powers of 1000 (SI), for a source documented to use them.
    Decimal,
}

/// Bytes from a size as a tool printed it: a non-negative decimal number
/// (`512`, `31.25`), optional spaces, and an optional unit in any case
/// (`B`, `K`/`KB`/`KiB`, `M`/`MB`/`MiB`, `G`/`GB`/`GiB`, `T`/`TB`/`TiB`,
/// `byte(s)`). A bare number is in `bare` units (`None`: a bare number is
/// not accepted). Unknown units, negative, non-finite or out-of-range values
/// are `None`. Fractions of a byte are rounded.
pub fn parse_size(text: &str, bare: Option<SizeUnit>, labels: Labels) -> Option<u64> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let n: f64 = num.parse().ok()?;
    let mult = match unit_multiplier(unit.trim(), labels) {
        Some(m) => m,
        None if unit.trim().is_empty() => bare?.bytes() as f64,
        None => return None,
    };
    let b = n * mult;
    // 2^64 is not representable as u64; stay strictly below it.
    (b.is_finite() && (0.0..1.8e19).contains(&b)).then(|| b.round() as u64)
}

fn unit_multiplier(unit: &str, labels: Labels) -> Option<f64> {
    if unit.is_empty() {
        return None;
    }
    let u = unit.to_ascii_lowercase();
    let dec = |p: i32| match labels {
        Labels::Binary => 1024f64.powi(p),
        Labels::Decimal => 1000f64.powi(p),
    };
    Some(match u.as_str() {
        "b" | "byte" | "bytes" => 1.0,
        "kib" => 1024f64,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        "k" | "kb" => dec(1),
        "m" | "mb" => dec(2),
        "g" | "gb" => dec(3),
        "t" | "tb" => dec(4),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn every_spelling_tools_used() {
        let p = |s| parse_size(s, None, Labels::Binary);
        // hl-smi 1.4-1.6 (Gaudi HL-205) and later.
        assert_eq!(p("32768Mib"), Some(32_768 * MIB));
        assert_eq!(p("32768MiB"), Some(32_768 * MIB));
        assert_eq!(p("98304 MB"), Some(98_304 * MIB));
        // nvidia-smi.
        assert_eq!(p("81559 MiB"), Some(81_559 * MIB));
        // amd-smi, AMD's "MB" is MiB.
        assert_eq!(p("16368 MB"), Some(16_368 * MIB));
        assert_eq!(p("32768.00 MiB"), Some(32_768 * MIB));
        // tpu-info, neuron-ls, system_profiler.
        assert_eq!(p("31.25 GiB"), Some(33_554_432_000));
        assert_eq!(p("32 GB"), Some(32 << 30));
        assert_eq!(p("32gb"), Some(32 << 30));
        assert_eq!(p("1536 MB"), Some(1536 * MIB));
        // rocminfo pool sizes, /proc style.
        assert_eq!(p("33538048 KB"), Some(33_538_048 << 10));
        assert_eq!(p("512 kB"), Some(512 << 10));
        assert_eq!(p("512 KiB"), Some(512 << 10));
        assert_eq!(p("512Kib"), Some(512 << 10));
        assert_eq!(p("2 TB"), Some(2 << 40));
        assert_eq!(p("2 TiB"), Some(2 << 40));
        assert_eq!(p("4096 B"), Some(4096));
        assert_eq!(p("4096 bytes"), Some(4096));
        assert_eq!(p("  17163091968 b "), Some(17_163_091_968));
    }

    #[test]
    fn bare_numbers_take_the_callers_unit() {
        assert_eq!(
            parse_size("65536", Some(SizeUnit::MiB), Labels::Binary),
            Some(65_536 * MIB)
        );
        assert_eq!(
            parse_size("17163091968", Some(SizeUnit::B), Labels::Binary),
            Some(17_163_091_968)
        );
        assert_eq!(parse_size("65536", None, Labels::Binary), None);
        // An explicit unit wins over the bare default.
        assert_eq!(
            parse_size("1 GiB", Some(SizeUnit::MiB), Labels::Binary),
            Some(1 << 30)
        );
    }

    #[test]
    fn decimal_labels_when_asked() {
        assert_eq!(
            parse_size("16 GB", None, Labels::Decimal),
            Some(16_000_000_000)
        );
        assert_eq!(parse_size("16 GiB", None, Labels::Decimal), Some(16 << 30));
    }

    #[test]
    fn rejects_what_is_not_a_size() {
        let p = |s| parse_size(s, Some(SizeUnit::MiB), Labels::Binary);
        for bad in [
            "",
            "N/A",
            "[N/A]",
            "-1 MiB",
            "12 parsecs",
            "MiB",
            ".",
            "1.2.3 MiB",
            "1e3 MiB",
            "99999999999999999999 TiB",
            "0x10 MiB",
            "inf",
            "NaN",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        assert_eq!(p("0"), Some(0));
    }
}
