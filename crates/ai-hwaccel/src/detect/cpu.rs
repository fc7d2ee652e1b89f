//! CPU facts from /proc/cpuinfo (one read) and, where cpuinfo lacks the
//! topology (ARM), /sys/devices/system/cpu/cpuN/topology.

use std::collections::BTreeSet;

/// What one /proc/cpuinfo says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuinfoFacts {
    /// `model name` (x86) or a name derived from the ARM implementer/part.
    pub model: Option<String>,
    /// Lowercase vendor.
    pub vendor: Option<String>,
    /// Architecture inferred from the fields present (`x86_64`, `aarch64`, `x86`, …).
    pub architecture: Option<String>,
    /// Number of `processor` entries.
    pub processors: u32,
    /// Distinct `physical id` values (x86 only).
    pub packages: BTreeSet<u32>,
    /// Distinct (`physical id`, `core id`) pairs (x86 only).
    pub cores: BTreeSet<(u32, u32)>,
    /// Normalized inference-relevant ISA features.
    pub features: Vec<String>,
    /// x86 `cpu family` (CPUID family, decimal) of the first processor;
    /// arm64: its `CPU implementer` (MIDR implementer code).
    pub family: Option<u32>,
    /// x86 `model` (CPUID model, decimal) of the first processor; arm64:
    /// its `CPU part` (MIDR part number).
    pub model_number: Option<u32>,
    /// x86 `cpu MHz` of the first processor: the clock the kernel reports
    /// (the current frequency where it can read one; on a virtual machine
    /// without frequency scaling, the host's nominal TSC frequency).
    pub mhz: Option<f64>,
}

/// x86 flags that matter for inference, as the kernel names them.
const X86_FEATURES: &[&str] = &[
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_bf16",
    "avx512_vnni",
    "avx512_fp16",
    "avx_vnni",
    "avx_vnni_int8",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
];

/// arm64 hwcaps (`Features:` line) that matter, with our name for each.
const ARM_FEATURES: &[(&str, &str)] = &[
    ("asimd", "neon"),
    ("asimdhp", "neon_fp16"),
    ("asimddp", "dotprod"),
    ("i8mm", "i8mm"),
    ("bf16", "bf16"),
    ("sve", "sve"),
    ("sve2", "sve2"),
    ("svebf16", "sve_bf16"),
    ("svei8mm", "sve_i8mm"),
    ("sme", "sme"),
    ("sme2", "sme2"),
];

/// Vendor of an arm64 `CPU implementer` code (Linux arch/arm64/include/asm/cputype.h).
fn arm_implementer(code: u32) -> Option<&'static str> {
    Some(match code {
        0x41 => "arm",
        0x42 => "broadcom",
        0x43 => "cavium",
        0x46 => "fujitsu",
        0x48 => "hisilicon",
        0x4e => "nvidia",
        0x50 => "apm",
        0x51 => "qualcomm",
        0x61 => "apple",
        0x6d => "microsoft",
        0xc0 => "ampere",
        _ => return None,
    })
}

/// Core name of an Arm Ltd `CPU part` (Linux cputype.h, Arm TRMs).
fn arm_part(part: u32) -> Option<&'static str> {
    Some(match part {
        0xd03 => "Cortex-A53",
        0xd07 => "Cortex-A57",
        0xd08 => "Cortex-A72",
        0xd0b => "Cortex-A76",
        0xd0c => "Neoverse-N1",
        0xd40 => "Neoverse-V1",
        0xd41 => "Cortex-A78",
        0xd49 => "Neoverse-N2",
        0xd4f => "Neoverse-V2",
        0xd8e => "Neoverse-N3",
        0xd84 => "Neoverse-V3",
        _ => return None,
    })
}

fn parse_int(v: &str) -> Option<u32> {
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Parse /proc/cpuinfo (x86 or arm64 layout). Unknown lines are ignored.
pub fn parse_cpuinfo(text: &str) -> CpuinfoFacts {
    let mut f = CpuinfoFacts::default();
    let mut flags: BTreeSet<String> = BTreeSet::new();
    let mut arm_features: BTreeSet<String> = BTreeSet::new();
    let (mut implementer, mut part, mut arm_arch) = (None, None, None);
    let mut phys: Option<u32> = None;
    let mut hardware = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" if v.parse::<u32>().is_ok() => {
                f.processors += 1;
                phys = None;
            }
            "model name" if f.model.is_none() && !v.is_empty() => f.model = Some(v.to_string()),
            "cpu family" if f.family.is_none() => f.family = v.parse().ok(),
            "model" if f.model_number.is_none() => f.model_number = v.parse().ok(),
            "cpu MHz" if f.mhz.is_none() => {
                f.mhz = v
                    .parse::<f64>()
                    .ok()
                    .filter(|m| m.is_finite() && (1.0..100_000.0).contains(m))
            }
            "vendor_id" if f.vendor.is_none() => {
                f.vendor = Some(
                    match v {
                        "GenuineIntel" => "intel",
                        "AuthenticAMD" => "amd",
                        "HygonGenuine" => "hygon",
                        "CentaurHauls" | "  Shanghai  " => "centaur",
                        other => other,
                    }
                    .to_ascii_lowercase(),
                )
            }
            "physical id" => {
                phys = parse_int(v);
                if let Some(p) = phys {
                    f.packages.insert(p);
                }
            }
            "core id" => {
                if let (Some(p), Some(c)) = (phys, parse_int(v)) {
                    f.cores.insert((p, c));
                }
            }
            "flags" if flags.is_empty() => {
                flags = v.split_whitespace().map(str::to_string).collect()
            }
            "Features" if arm_features.is_empty() => {
                arm_features = v.split_whitespace().map(str::to_string).collect()
            }
            "CPU implementer" if implementer.is_none() => implementer = parse_int(v),
            "CPU part" if part.is_none() => part = parse_int(v),
            "CPU architecture" if arm_arch.is_none() => arm_arch = Some(v.to_string()),
            "Hardware" if hardware.is_none() && !v.is_empty() => hardware = Some(v.to_string()),
            _ => {}
        }
    }
    if !flags.is_empty() {
        f.architecture = Some(
            if flags.contains("lm") {
                "x86_64"
            } else {
                "x86"
            }
            .to_string(),
        );
        f.features = X86_FEATURES
            .iter()
            .filter(|x| flags.contains(**x))
            .map(|x| x.to_string())
            .collect();
    } else if !arm_features.is_empty() || implementer.is_some() {
        f.architecture = Some(match arm_arch.as_deref() {
            Some("7") => "arm".to_string(),
            _ => "aarch64".to_string(),
        });
        f.features = ARM_FEATURES
            .iter()
            .filter(|(k, _)| arm_features.contains(*k))
            .map(|(_, n)| n.to_string())
            .collect();
        f.family = implementer;
        f.model_number = part;
        let vendor = implementer.and_then(arm_implementer);
        if f.vendor.is_none() {
            f.vendor = vendor.map(str::to_string);
        }
        if f.model.is_none() {
            f.model = match (vendor, part) {
                (Some("arm"), Some(p)) => arm_part(p).map(str::to_string),
                _ => None,
            }
            .or(hardware);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_two_sockets_with_smt() {
        let mut s = String::new();
        for cpu in 0..8u32 {
            let (pkg, core) = (cpu / 4, (cpu % 4) / 2);
            s += &format!(
                "processor\t: {cpu}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: {pkg}\ncore id\t\t: {core}\nflags\t\t: fpu lm avx2 avx512f avx512_bf16 amx_tile amx_bf16 foo\n\n"
            );
        }
        let f = parse_cpuinfo(&s);
        assert_eq!(f.processors, 8);
        assert_eq!(f.packages.len(), 2);
        assert_eq!(f.cores.len(), 4);
        assert_eq!(f.vendor.as_deref(), Some("intel"));
        assert_eq!(f.architecture.as_deref(), Some("x86_64"));
        assert_eq!(
            f.features,
            ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"]
        );
    }

    #[test]
    fn arm64_neoverse() {
        let s = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes asimddp sve sve2 i8mm bf16\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\n\nprocessor\t: 1\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n";
        let f = parse_cpuinfo(s);
        assert_eq!(f.processors, 2);
        assert_eq!(f.model.as_deref(), Some("Neoverse-V2"));
        assert_eq!(f.vendor.as_deref(), Some("arm"));
        assert_eq!(f.architecture.as_deref(), Some("aarch64"));
        assert_eq!(
            f.features,
            ["neon", "dotprod", "i8mm", "bf16", "sve", "sve2"]
        );
        assert!(f.packages.is_empty(), "arm cpuinfo has no topology");
    }

    /// A real capture: this project's build VM, whose model name is masked
    /// to "AMD EPYC"; the CPUID family and model still name the core.
    #[test]
    fn masked_vm_keeps_family_model_and_clock() {
        let f = parse_cpuinfo(include_str!(
            "../../tests/fixtures/cpuinfo/build-vm__amd-epyc-masked__zen4-2vcpu.txt"
        ));
        assert_eq!(f.model.as_deref(), Some("AMD EPYC"));
        assert_eq!(f.vendor.as_deref(), Some("amd"));
        assert_eq!((f.family, f.model_number), (Some(25), Some(17)));
        assert_eq!(f.mhz, Some(2596.15));
        assert_eq!((f.processors, f.cores.len()), (2, 2));
        assert!(f.features.contains(&"avx512f".to_string()));
        // arm64: the MIDR implementer and part number; no clock line.
        let arm = parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n");
        assert_eq!(
            (arm.family, arm.model_number, arm.mhz),
            (Some(0x41), Some(0xd0c), None)
        );
        // Garbage is no number.
        let bad = parse_cpuinfo("cpu family\t: x\nmodel\t\t: -1\ncpu MHz\t\t: NaN\n");
        assert_eq!((bad.family, bad.model_number, bad.mhz), (None, None, None));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(processor|flags|physical id|core id|CPU part|x)?[: \t]{0,2}[0-9a-zx ]{0,12}\n{0,2}") {
            let _ = parse_cpuinfo(&s);
        }
    }
}
