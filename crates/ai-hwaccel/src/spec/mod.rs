//! The accelerator spec database: datasheet facts about accelerator products
//! (memory, bandwidth, dense peak rates per data type, interconnect, power),
//! each entry citing the datasheet its numbers come from.
//!
//! The data lives in `devices.toml` next to this file, compiled into the
//! library and parsed once on first use. This module owns the lookups over it
//! ([`by_id`], [`by_pci_id`], [`by_name`], [`resolve`]), the device strings a
//! planner takes for hardware that is not installed ([`parse_device_set`]),
//! and [`attach`], which detection calls to link detected devices to entries.
//! Everything here is pure: no machine access.
//!
//! # Unit rules
//!
//! - **Capacity is binary.** A datasheet's "N GB" of device memory is stored
//!   as `N × 2^30` bytes in `memory_bytes`: DRAM parts (HBM stacks, GDDR
//!   chips) come in power-of-two sizes, so an "80 GB" H100 carries 80 GiB.
//! - **Rates are decimal.** Bandwidth is bytes per second with SI prefixes:
//!   "3.35 TB/s" is `3_350_000_000_000`. Interconnect bandwidth is per device
//!   with both directions added, as NVIDIA, AMD and Google quote it.
//! - **Peak rates are dense.** [`Tflops`] holds dense peak TFLOPS (TOPS for
//!   int8) on the fastest unit that runs the type (Tensor/Matrix cores where
//!   they apply). NVIDIA quotes tensor rates "with sparsity": those are halved.
//!   For GeForce cards, fp16/bf16 rates are those with FP32 accumulation;
//!   [`Tflops::fp16_acc32`] states that rate explicitly for every part whose
//!   whitepaper gives it.
//! - **Unknown is `None`.** A value that the cited source does not give is
//!   absent, never estimated.
//!
//! # Short names
//!
//! An entry's `id` is lowercase words joined by `-` (`h100-sxm`, `mi300x`,
//! `tpu-v5e`). Where a product comes in form factors, the bare memory-size id
//! is the SXM part (`a100-80gb`) and other forms carry a suffix
//! (`a100-80gb-pcie`).

pub mod cloud;

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::model::{Device, Family};

pub mod cpu;

/// The database text, compiled in.
const DEVICES_TOML: &str = include_str!("devices.toml");

/// A numeric data type a peak rate is quoted for.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// IEEE double precision.
    Fp64,
    /// IEEE single precision.
    Fp32,
    /// NVIDIA TensorFloat-32 (and equivalents such as AMD XF32).
    Tf32,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    Fp16,
    /// 8-bit floating point (E4M3/E5M2 or the vendor's equivalent).
    Fp8,
    /// 8-bit integer (rates in TOPS).
    Int8,
    /// 4-bit floating point (NVFP4/MXFP4).
    Fp4,
}

impl Dtype {
    /// Every data type, widest first.
    pub const ALL: [Dtype; 8] = [
        Dtype::Fp64,
        Dtype::Fp32,
        Dtype::Tf32,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Int8,
        Dtype::Fp4,
    ];

    /// The JSON / TOML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Fp4 => "fp4",
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Dense peak rates in TFLOPS (TOPS for `int8`); `None` where the source
/// gives no figure or the hardware lacks the type. Part of the registry JSON
/// contract, so unknown keys are ignored on read (a test keeps them out of
/// `devices.toml`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tflops {
    /// fp64 (FP64 Tensor/Matrix core rate where it exists).
    pub fp64: Option<f64>,
    /// fp32 (Matrix core rate where it exists; TF32 is separate).
    pub fp32: Option<f64>,
    /// tf32.
    pub tf32: Option<f64>,
    /// bf16.
    pub bf16: Option<f64>,
    /// fp16.
    pub fp16: Option<f64>,
    /// fp8.
    pub fp8: Option<f64>,
    /// int8, in TOPS.
    pub int8: Option<f64>,
    /// fp4.
    pub fp4: Option<f64>,
    /// 16-bit (fp16/bf16) Tensor rate with FP32 accumulation, dense: what
    /// framework GEMMs run (cuBLAS and llama.cpp accumulate 16-bit products
    /// in FP32). NVIDIA's architecture whitepapers list it separately from
    /// the FP16-accumulate rate: on GeForce parts it is half of that, on
    /// data-center and RTX workstation parts the two are equal. `None` where
    /// the cited source gives no separate figure (then `fp16` is the best
    /// figure known). Not a [`Dtype`], so [`Tflops::rate`] does not return it.
    #[serde(default)]
    pub fp16_acc32: Option<f64>,
}

impl Tflops {
    /// The rate for `dtype`.
    pub fn rate(&self, dtype: Dtype) -> Option<f64> {
        match dtype {
            Dtype::Fp64 => self.fp64,
            Dtype::Fp32 => self.fp32,
            Dtype::Tf32 => self.tf32,
            Dtype::Bf16 => self.bf16,
            Dtype::Fp16 => self.fp16,
            Dtype::Fp8 => self.fp8,
            Dtype::Int8 => self.int8,
            Dtype::Fp4 => self.fp4,
        }
    }
}

/// The scale-up link between devices of this product.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interconnect {
    /// Link name (`NVLink 4.0`, `Infinity Fabric`, `ICI`, `PCIe 4.0 x16`, …).
    pub name: String,
    /// Per-device bandwidth in bytes/s, both directions added.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// How many devices one scale-up domain joins (8 for an HGX board).
    pub domain_size: Option<u32>,
    /// How many links of this kind one device has (18 NVLinks on H100 SXM):
    /// `bandwidth_bytes_per_s / links` is one link's bandwidth, which a
    /// topology edge of `count` links multiplies.
    #[serde(default)]
    pub links: Option<u32>,
}

/// A product's PCIe host interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PcieInterface {
    /// PCIe generation (4 for "PCIe Gen4").
    pub generation: u32,
    /// Lanes (16 for "x16").
    pub lanes: u32,
}

impl PcieInterface {
    /// Payload bandwidth, both directions added
    /// ([`crate::model::PcieLink::bandwidth_bytes_per_s`]).
    pub fn bandwidth_bytes_per_s(&self) -> Option<u64> {
        let gts = crate::model::PcieLink::speed_for_generation(self.generation)?;
        crate::model::PcieLink::bandwidth_bytes_per_s(gts, self.lanes)
    }
}

impl SpecEntry {
    /// PCIe bandwidth (both directions): the `pcie` field's, else a scale-up
    /// interconnect that is itself PCIe (`PCIe 4.0 x16`).
    pub fn pcie_bandwidth_bytes_per_s(&self) -> Option<u64> {
        self.pcie
            .and_then(|p| p.bandwidth_bytes_per_s())
            .or_else(|| {
                self.interconnect
                    .as_ref()
                    .filter(|i| i.name.starts_with("PCIe"))
                    .and_then(|i| i.bandwidth_bytes_per_s)
            })
    }
}

/// One memory configuration a product is sold in (Apple silicon: one chip
/// with 36, 48, 64 or 128 GB of unified memory), which its own id picks
/// (`m3-max-128gb`). [`by_id`] and [`lookup`] return it as an entry of its
/// own: the product's entry with this memory (and, where the configuration
/// differs, bandwidth and cores).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Id that picks this configuration (`m3-max-128gb`).
    pub id: String,
    /// Memory in bytes (the source's "N GB" read as N GiB).
    pub memory_bytes: u64,
    /// Memory bandwidth of this configuration, where it differs from the
    /// entry's (the 30-core M3 Max: 300 GB/s against 400).
    #[serde(default)]
    pub memory_bandwidth_bytes_per_s: Option<u64>,
    /// GPU cores of this configuration, where the source states them.
    #[serde(default)]
    pub compute_units: Option<u32>,
    /// Peak rates of this configuration, where its GPU differs from the
    /// entry's (the 24-core M1 Max); the entry's rates otherwise.
    #[serde(default)]
    pub tflops: Option<Tflops>,
}

/// One product of the database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecEntry {
    /// Short name: lowercase words joined by `-` (`h100-sxm`).
    pub id: String,
    /// Canonical product name.
    pub name: String,
    /// Names vendor tools print for it (`NVIDIA H100 80GB HBM3`, `HL-225`, …).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Lowercase vendor (`nvidia`, `amd`, `intel`, `google`, `aws`, …).
    pub vendor: String,
    /// Device family.
    pub family: Family,
    /// PCI ids, `vvvv:dddd` lowercase hex, that name exactly this product.
    #[serde(default)]
    pub pci_ids: Vec<String>,
    /// Compute capability (`9.0`), gfx target (`gfx942`) or generation name.
    pub architecture: Option<String>,
    /// Device memory in bytes (datasheet "N GB" read as N GiB).
    pub memory_bytes: Option<u64>,
    /// Memory technology (`HBM3`, `GDDR6X`, …).
    pub memory_type: Option<String>,
    /// The memory is the system's, shared with the host CPU (Apple silicon,
    /// Jetson, GB10, Strix Halo): `memory_bytes` is a system configuration,
    /// not memory of the device's own, so detection keeps reading the pool
    /// from the host when a tool reports no size.
    #[serde(default)]
    pub unified_memory: bool,
    /// Peak memory bandwidth in bytes per second (decimal).
    pub memory_bandwidth_bytes_per_s: Option<u64>,
    /// Dense peak rates per data type.
    #[serde(default)]
    pub tflops: Tflops,
    /// Data types the hardware executes natively.
    #[serde(default)]
    pub native_dtypes: Vec<Dtype>,
    /// Compute units the cited source states (Neural Engine cores, …);
    /// `None` where it states none. Detection copies it to a device only
    /// where no tool reports the count.
    #[serde(default)]
    pub compute_units: Option<u32>,
    /// Scale-up interconnect.
    pub interconnect: Option<Interconnect>,
    /// Host interface (PCIe generation and lanes) as the datasheet states
    /// it; `None` where the cited source states none.
    #[serde(default)]
    pub pcie: Option<PcieInterface>,
    /// Thermal design power (or board power) in watts.
    pub tdp_watts: Option<u32>,
    /// Year of launch.
    pub launch_year: Option<u16>,
    /// URL of the datasheet or vendor page the numbers come from.
    pub source: String,
    /// What the numbers mean where the datasheet is ambiguous.
    pub notes: Option<String>,
    /// The memory configurations the product is sold in, each with its own
    /// id ([`MemoryConfig`]); empty for products sold in one. The entry's own
    /// `memory_bytes` is then the default configuration its `notes` states.
    #[serde(default)]
    pub configs: Vec<MemoryConfig>,
}

impl SpecEntry {
    /// The PCI ids as `(vendor, device)` pairs (malformed strings skipped;
    /// a test keeps the data free of them).
    pub fn pci_id_pairs(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        self.pci_ids.iter().filter_map(|s| parse_pci_id(s))
    }

    /// The reference a detected device carries.
    pub fn to_ref(&self) -> SpecRef {
        SpecRef {
            id: self.id.clone(),
            name: self.name.clone(),
            memory_bytes: self.memory_bytes,
            memory_bandwidth_bytes_per_s: self.memory_bandwidth_bytes_per_s,
            tflops: self.tflops.clone(),
            tdp_watts: self.tdp_watts,
            source: self.source.clone(),
        }
    }
}

/// The datasheet facts a detected [`Device`] carries once matched to an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpecRef {
    /// Entry id (look the rest up with [`by_id`]).
    pub id: String,
    /// Entry's canonical name.
    pub name: String,
    /// Datasheet device memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Datasheet memory bandwidth in bytes per second.
    pub memory_bandwidth_bytes_per_s: Option<u64>,
    /// Dense peak rates per data type.
    pub tflops: Tflops,
    /// Thermal design power in watts.
    pub tdp_watts: Option<u32>,
    /// Datasheet URL.
    pub source: String,
}

/// An error of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// The device string had no devices.
    #[error("empty device list (expected e.g. \"4xh100-sxm\" or \"2xa100-80gb,1xl4\")")]
    EmptyDeviceSet,
    /// A count was not a positive integer.
    #[error("bad count in {token:?}: expected a positive integer before 'x' (e.g. \"4xh100-sxm\")")]
    BadCount {
        /// The offending token.
        token: String,
    },
    /// No entry matches the device name.
    #[error(
        "unknown device {name:?} in {token:?}{} (see `ai-hwaccel specs` for known ids)",
        crate::suggest::hint(suggestions)
    )]
    UnknownDevice {
        /// The offending token.
        token: String,
        /// The device part of it.
        name: String,
        /// Ids of the entries it may have meant ([`crate::suggest`]).
        suggestions: Vec<String>,
    },
    /// The device string names more devices than [`MAX_DEVICES`].
    #[error("{count} devices is more than the planner takes (at most {max})")]
    TooManyDevices {
        /// Devices named, summed over the tokens.
        count: u64,
        /// [`MAX_DEVICES`].
        max: u32,
    },
    /// The device name fits several entries; the token must pick one.
    #[error("device {name:?} in {token:?} is ambiguous: it matches {}", candidates.join(", "))]
    AmbiguousDevice {
        /// The offending token.
        token: String,
        /// The device part of it.
        name: String,
        /// Ids of every entry it matches.
        candidates: Vec<String>,
    },
    /// A host-CPU token (`cpu:ID@SIZE`) that cannot be planned: an unknown
    /// CPU-table id, a missing or bad memory size, or a second CPU.
    #[error("host CPU {token:?}: {reason}{}", crate::suggest::hint(suggestions))]
    HostCpu {
        /// The offending token.
        token: String,
        /// What is wrong with it.
        reason: String,
        /// CPU-table ids it may have meant.
        suggestions: Vec<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Database {
    device: Vec<SpecEntry>,
}

/// Parse database text (the embedded file, or another in tests).
fn parse_database(text: &str) -> Result<Vec<SpecEntry>, toml::de::Error> {
    toml::from_str::<Database>(text).map(|d| d.device)
}

struct Index {
    entries: Vec<SpecEntry>,
    by_id: HashMap<String, usize>,
    /// One entry per [`MemoryConfig`] of every entry, and their ids.
    configs: Vec<SpecEntry>,
    by_config_id: HashMap<String, usize>,
    /// Per configuration (index into `configs`): its product (into `entries`).
    config_base: Vec<usize>,
    /// Entries listing each PCI id (more than one when products share an id).
    by_pci: HashMap<(u16, u16), Vec<usize>>,
    by_exact_name: HashMap<String, usize>,
    /// Per entry: its name signatures (name and aliases).
    signatures: Vec<Vec<NameSig>>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let entries = parse_database(DEVICES_TOML).expect("embedded devices.toml parses (tested)");
    let mut by_id = HashMap::new();
    let mut by_pci = HashMap::new();
    let mut by_exact_name = HashMap::new();
    let mut signatures = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        by_id.entry(e.id.clone()).or_insert(i);
        for p in e.pci_id_pairs() {
            let owners: &mut Vec<usize> = by_pci.entry(p).or_default();
            if !owners.contains(&i) {
                owners.push(i);
            }
        }
        let names = std::iter::once(&e.name).chain(&e.aliases);
        let mut sigs = Vec::new();
        for n in names {
            by_exact_name.entry(squash(n)).or_insert(i);
            sigs.push(NameSig::of(n));
        }
        signatures.push(sigs);
    }
    let configs: Vec<SpecEntry> = entries
        .iter()
        .flat_map(|e| e.configs.iter().map(move |c| config_entry(e, c)))
        .collect();
    let config_base = entries
        .iter()
        .enumerate()
        .flat_map(|(i, e)| std::iter::repeat_n(i, e.configs.len()))
        .collect();
    let by_config_id = configs
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    Index {
        entries,
        by_id,
        configs,
        by_config_id,
        config_base,
        by_pci,
        by_exact_name,
        signatures,
    }
});

/// The entry one memory configuration of `base` stands for: `base` with the
/// configuration's id, memory, and (where given) bandwidth and cores.
fn config_entry(base: &SpecEntry, c: &MemoryConfig) -> SpecEntry {
    let gib = c.memory_bytes >> 30;
    let cores = c
        .compute_units
        .map(|n| format!("{n}-core, "))
        .unwrap_or_default();
    SpecEntry {
        id: c.id.clone(),
        name: format!("{} ({cores}{gib} GB)", base.name),
        aliases: Vec::new(),
        memory_bytes: Some(c.memory_bytes),
        memory_bandwidth_bytes_per_s: c
            .memory_bandwidth_bytes_per_s
            .or(base.memory_bandwidth_bytes_per_s),
        compute_units: c.compute_units.or(base.compute_units),
        tflops: c.tflops.clone().unwrap_or_else(|| base.tflops.clone()),
        notes: Some(format!(
            "The {gib} GB configuration of {} ({}). {}",
            base.id,
            base.name,
            base.notes.as_deref().unwrap_or_default()
        )),
        configs: Vec::new(),
        ..base.clone()
    }
}

/// Every entry, in file order (memory configurations are not listed
/// separately: see each entry's `configs`).
pub fn all() -> &'static [SpecEntry] {
    &INDEX.entries
}

/// The entry with this id (exact, case-insensitive), or the memory
/// configuration with this id ([`MemoryConfig`], `m3-max-128gb`).
pub fn by_id(id: &str) -> Option<&'static SpecEntry> {
    let ix = &*INDEX;
    let key = id.trim().to_ascii_lowercase();
    ix.by_id
        .get(&key)
        .map(|&i| &ix.entries[i])
        .or_else(|| ix.by_config_id.get(&key).map(|&i| &ix.configs[i]))
}

/// The product entry `id` belongs to: the entry itself, or the entry one of
/// whose memory configurations ([`MemoryConfig`]) has that id
/// (`m3-max-128gb` is a configuration of `m3-max-gpu`).
pub fn base_of(id: &str) -> Option<&'static SpecEntry> {
    let ix = &*INDEX;
    let key = id.trim().to_ascii_lowercase();
    if let Some(&i) = ix.by_id.get(&key) {
        return Some(&ix.entries[i]);
    }
    ix.by_config_id
        .get(&key)
        .map(|&c| &ix.entries[ix.config_base[c]])
}

/// Whether two ids (entries or memory configurations) name the same chip:
/// configurations of one product whose bandwidth, compute units and rates
/// are the same, the memory size aside (`ryzen-ai-max-395-64gb` and
/// `-128gb`; not the 24- and 32-core M1 Max).
pub fn same_chip(a: &str, b: &str) -> bool {
    match (base_of(a), base_of(b), by_id(a), by_id(b)) {
        (Some(ba), Some(bb), Some(ea), Some(eb)) => {
            ba.id == bb.id
                && ea.memory_bandwidth_bytes_per_s == eb.memory_bandwidth_bytes_per_s
                && ea.compute_units == eb.compute_units
                && ea.tflops == eb.tflops
        }
        _ => false,
    }
}

/// The memory configuration of `entry` with exactly `memory_bytes`, when the
/// product is sold in several (a detected 36 GB M3 Max is `m3-max-36gb`).
pub fn config_for(entry: &SpecEntry, memory_bytes: u64) -> Option<&'static SpecEntry> {
    config_for_cores(entry, memory_bytes, None)
}

/// [`config_for`], where the GPU's core count is known too: among the
/// configurations with that memory, the one with those cores (a 32 GB M1 Max
/// with 24 GPU cores is `m1-max-24core-32gb`), else the first listed.
pub fn config_for_cores(
    entry: &SpecEntry,
    memory_bytes: u64,
    cores: Option<u32>,
) -> Option<&'static SpecEntry> {
    let with_memory = || {
        entry
            .configs
            .iter()
            .filter(move |c| c.memory_bytes == memory_bytes)
    };
    let c = cores
        .and_then(|n| with_memory().find(|c| c.compute_units == Some(n)))
        .or_else(|| with_memory().next())?;
    by_id(&c.id)
}

/// The entry whose `pci_ids` contain `vendor:device`, when exactly one does.
/// An id that several products share (`1002:740c`, MI250 and MI250X) names
/// none of them alone: `None` here, the candidates in [`by_pci_id_all`].
pub fn by_pci_id(vendor: u16, device: u16) -> Option<&'static SpecEntry> {
    match by_pci_id_all(vendor, device).as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Every entry whose `pci_ids` contain `vendor:device`, in file order.
pub fn by_pci_id_all(vendor: u16, device: u16) -> Vec<&'static SpecEntry> {
    let ix = &*INDEX;
    ix.by_pci
        .get(&(vendor, device))
        .map(|v| v.iter().map(|&i| &ix.entries[i]).collect())
        .unwrap_or_default()
}

/// Parse `vvvv:dddd` (hex, optional `0x` on each half).
pub fn parse_pci_id(s: &str) -> Option<(u16, u16)> {
    let (v, d) = s.trim().split_once(':')?;
    let hex = |x: &str| {
        let x = x.trim();
        let x = x
            .strip_prefix("0x")
            .or_else(|| x.strip_prefix("0X"))
            .unwrap_or(x);
        if x.is_empty() || x.len() > 4 {
            return None;
        }
        u16::from_str_radix(x, 16).ok()
    };
    Some((hex(v)?, hex(d)?))
}

/// Lowercase alphanumerics only: the key for exact name matches.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Words that vendor tools put around a product name without changing which
/// product it is (vendor names, brands, trademark marks, filler).
const NOISE_WORDS: &[&str] = &[
    "nvidia",
    "tesla",
    "geforce",
    "quadro",
    "amd",
    "ati",
    "instinct",
    "radeon",
    "intel",
    "r",
    "tm",
    "habana",
    "labs",
    "google",
    "cloud",
    "aws",
    "amazon",
    "qualcomm",
    "huawei",
    "apple",
    "tenstorrent",
    "graphics",
    "generation",
    "gpu",
    "data",
    "center",
    "chip",
    "accelerator",
    "corporation",
];

/// Form-factor words, folded to one spelling.
fn form_of(word: &str) -> Option<&'static str> {
    match word {
        "sxm" | "sxm2" | "sxm3" | "sxm4" | "sxm5" | "sxm6" => Some("sxm"),
        "pcie" | "pci" | "pcie4" | "pcie5" => Some("pcie"),
        _ => None,
    }
}

/// What a product name says: the model words (squashed together) and the
/// optional qualifiers that tell variants apart.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NameSig {
    model: String,
    form: Option<&'static str>,
    memory_gib: Option<u64>,
    memory_type: Option<String>,
}

impl NameSig {
    fn of(name: &str) -> NameSig {
        let lower = name.to_ascii_lowercase();
        let mut sig = NameSig {
            model: String::new(),
            form: None,
            memory_gib: None,
            memory_type: None,
        };
        for word in lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            if NOISE_WORDS.contains(&word) {
                continue;
            }
            if let Some(f) = form_of(word) {
                sig.form = Some(f);
                continue;
            }
            if let Some(n) = word
                .strip_suffix("gb")
                .or_else(|| word.strip_suffix("g").filter(|n| n.len() >= 2))
                .and_then(|n| n.parse::<u64>().ok())
            {
                sig.memory_gib = Some(n);
                continue;
            }
            if ["hbm", "gddr", "lpddr"].iter().any(|p| word.starts_with(p)) {
                sig.memory_type = Some(word.to_string());
                continue;
            }
            sig.model.push_str(word);
        }
        sig
    }
}

/// The entry a tool-reported product name means, or `None` when no entry or
/// more than one fits.
///
/// Deterministic: first an exact match of the name or an alias (compared on
/// lowercase letters and digits only); then a match on the model words,
/// ignoring vendor and brand words (`NVIDIA`, `Tesla`, `GeForce`, `AMD
/// Instinct`, …), where the qualifiers the name carries (form factor `SXM4`
/// / `PCIe`, memory size `80GB`, memory type `HBM3`) must agree with the
/// entry. A name with brackets (pci.ids style, `GH100 [H100 PCIe]`) or a
/// board name in parentheses (hl-smi style, `Intel Gaudi2 (HL-225)`) is also
/// tried by that inner part.
pub fn by_name(name: &str) -> Option<&'static SpecEntry> {
    let ix = &*INDEX;
    let exact_or_fuzzy = |n: &str| {
        ix.by_exact_name
            .get(&squash(n))
            .map(|&i| &ix.entries[i])
            .or_else(|| fuzzy(ix, n))
    };
    exact_or_fuzzy(name).or_else(|| {
        [('[', ']'), ('(', ')')].iter().find_map(|&(open, close)| {
            let inner = name.split_once(open)?.1.split_once(close)?.0;
            exact_or_fuzzy(inner)
        })
    })
}

fn fuzzy(ix: &'static Index, name: &str) -> Option<&'static SpecEntry> {
    let q = NameSig::of(name);
    if q.model.is_empty() {
        return None;
    }
    let fits = |i: usize| {
        let e = &ix.entries[i];
        let entry_form = ix.signatures[i][0].form;
        let form_ok = match (q.form, entry_form) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let mem_ok = match (q.memory_gib, e.memory_bytes) {
            (Some(g), Some(b)) => {
                b == g << 30 || e.configs.iter().any(|c| c.memory_bytes == g << 30)
            }
            _ => true,
        };
        let type_ok = match (&q.memory_type, &e.memory_type) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => true,
        };
        form_ok && mem_ok && type_ok
    };
    let mut hits = (0..ix.entries.len())
        .filter(|&i| ix.signatures[i].iter().any(|s| s.model == q.model))
        .filter(|&i| fits(i));
    match (hits.next(), hits.next()) {
        // A memory size naming one of the product's configurations picks it
        // (`Apple M3 Max 128GB` is `m3-max-128gb`).
        (Some(i), None) => {
            let e = &ix.entries[i];
            Some(
                q.memory_gib
                    .and_then(|g| config_for(e, g << 30))
                    .unwrap_or(e),
            )
        }
        _ => None,
    }
}

/// Look a user query up: an id first, then a name or alias ([`by_name`]),
/// then a PCI id string (`10de:2330`).
pub fn resolve(query: &str) -> Option<&'static SpecEntry> {
    by_id(query)
        .or_else(|| by_name(query))
        .or_else(|| parse_pci_id(query).and_then(|(v, d)| by_pci_id(v, d)))
}

/// Most devices a device string may name (summed over its items).
///
/// Why 4096: planning enumerates tensor × pipeline layouts over the devices
/// and keeps per-device memory for each, so its time and memory grow a
/// little faster than linearly with the count (measured on a release build,
/// `plan llama-3.1-70b`: 1,024 devices 1.1 s, 4,096 devices 4 s and 170 MB,
/// 16,384 devices 21 s and 670 MB; see docs/benchmarks.md). 4096 keeps the
/// worst case interactive while covering every scale-up domain (an NVL72
/// rack is 72 GPUs) and many scale-out replicas: past a few domains, more
/// devices add data-parallel replicas of a layout already found.
pub const MAX_DEVICES: u32 = 4096;

/// What a device name a user typed stands for ([`lookup`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// Exactly one entry.
    Found(&'static SpecEntry),
    /// Several entries, none preferred (`h100`: SXM, PCIe and NVL).
    Ambiguous(Vec<&'static SpecEntry>),
    /// None; the entries it may have meant ([`crate::suggest`]), best first.
    NotFound(Vec<&'static SpecEntry>),
}

/// Look a device name up the way `ai-hwaccel specs` and device strings do:
/// [`resolve`] first (id, name or alias, PCI id); then the entries where the
/// query's words appear, in order, among the words of the id, the name or
/// an alias (`h100` fits three entries and is [`Lookup::Ambiguous`]). Where
/// several entries fit and exactly one of them *ends* with the query's words,
/// that base product is meant (`4080` is `rtx-4080`, not `rtx-4080-super` or
/// `rtx-4080-laptop`); failing all, suggestions.
pub fn lookup(query: &str) -> Lookup {
    let resolved = resolve(query);
    // An id, a PCI id, or a name or alias spelled out names its entry.
    let exact = by_id(query).is_some()
        || parse_pci_id(query).is_some()
        || INDEX.by_exact_name.contains_key(&squash(query));
    if let (Some(e), true) = (resolved, exact) {
        return Lookup::Found(e);
    }
    // A PCI id several products share (`1002:744c`: RX 7900 XT, XTX, GRE,
    // 7900M) names them all.
    if let Some((v, d)) = parse_pci_id(query) {
        let shared = by_pci_id_all(v, d);
        if shared.len() > 1 {
            return Lookup::Ambiguous(shared);
        }
    }
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    // Whether `run` appears, word for word, in an entry's id, name or an
    // alias.
    let runs_in = |run: &[String], e: &SpecEntry| {
        let within = |name: &str| {
            let w = words(name);
            !run.is_empty() && w.windows(run.len()).any(|win| win == run)
        };
        within(&e.id) || within(&e.name) || e.aliases.iter().any(|a| within(a))
    };
    let q = words(query);
    let hits: Vec<&'static SpecEntry> = all().iter().filter(|e| runs_in(&q, e)).collect();
    // A name matched by its model words alone (`by_name` drops brand words:
    // `rtx 6000` is the Quadro RTX 6000's) names its entry unless the words
    // also run in a product of the same family that does not hold that
    // entry's whole id or name (the RTX 6000 Ada): then the query is
    // ambiguous. (`m3 max` stays the GPU: the M3 Neural Engine's alias
    // "Apple M3 Max Neural Engine" is another family's.)
    if let Some(e) = resolved {
        let (id, name) = (words(&e.id), words(&e.name));
        let others: Vec<&'static SpecEntry> = hits
            .iter()
            .copied()
            .filter(|h| {
                h.id != e.id && h.family == e.family && !runs_in(&id, h) && !runs_in(&name, h)
            })
            .collect();
        if others.is_empty() {
            return Lookup::Found(e);
        }
        return Lookup::Ambiguous(std::iter::once(e).chain(others).collect());
    }
    // Several hits: the one entry whose id, name or an alias *ends* with the
    // query's words is the base product the others extend (`4080` is
    // `rtx-4080`, not `rtx-4080-super` or `rtx-4080-laptop`); without exactly
    // one such entry the query stays ambiguous (`h100`).
    let ends = |name: &str| {
        let w = words(name);
        !q.is_empty() && w.ends_with(q.as_slice())
    };
    let base: Vec<&'static SpecEntry> = hits
        .iter()
        .copied()
        .filter(|e| ends(&e.id) || ends(&e.name) || e.aliases.iter().any(|a| ends(a)))
        .collect();
    if let ([_, _, ..], [one]) = (hits.as_slice(), base.as_slice()) {
        return Lookup::Found(one);
    }
    // A laptop part found only because the desktop card has no entry (`3080
    // ti`: the RTX 3080 Ti Laptop GPU has other memory and bandwidth) is a
    // suggestion, not an answer, unless the query says laptop.
    let laptop_query = q.iter().any(|w| w == "laptop" || w == "mobile");
    match hits.as_slice() {
        [one] if one.id.ends_with("-laptop") && !laptop_query => Lookup::NotFound(vec![one]),
        [one] => Lookup::Found(one),
        [] => Lookup::NotFound(crate::suggest::suggest_keyed(
            query,
            all().iter().flat_map(|e| {
                [e.id.as_str(), e.name.as_str()]
                    .into_iter()
                    .chain(e.aliases.iter().map(String::as_str))
                    .map(move |n| (n, e))
            }),
        )),
        _ => Lookup::Ambiguous(hits),
    }
}

/// A device-string token's count prefix: `("4", "h100-sxm")` for
/// `4xh100-sxm` (also `4X`, `4*`, spaces around the sign); `None` without
/// one. The digits are not parsed (a count too large for `u32` is the
/// caller's error).
pub(crate) fn split_count(token: &str) -> Option<(&str, &str)> {
    let digits = token.chars().take_while(char::is_ascii_digit).count();
    let rest = token[digits..].trim_start().strip_prefix(['x', 'X', '*'])?;
    (digits > 0).then(|| (&token[..digits], rest.trim()))
}

/// Parse a device string naming hardware to plan for: comma-separated
/// `COUNTxDEVICE` items (`4xh100-sxm`, `2xa100-80gb,1xl4`; the count
/// defaults to 1), each DEVICE a name [`lookup`] finds exactly one entry for.
pub fn parse_device_set(s: &str) -> Result<Vec<(u32, &'static SpecEntry)>, SpecError> {
    let mut out = Vec::new();
    let mut total: u64 = 0;
    for token in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let digits = token.chars().take_while(char::is_ascii_digit).count();
        let (count, device) = match split_count(token) {
            Some((n, rest)) => {
                let n: u32 = n.parse().map_err(|_| SpecError::BadCount {
                    token: token.to_string(),
                })?;
                (n, rest)
            }
            _ if digits > 0 && token[digits..].trim().is_empty() => {
                return Err(SpecError::UnknownDevice {
                    token: token.to_string(),
                    name: String::new(),
                    suggestions: Vec::new(),
                });
            }
            _ => (1, token),
        };
        if count == 0 {
            return Err(SpecError::BadCount {
                token: token.to_string(),
            });
        }
        let entry = match lookup(device) {
            Lookup::Found(e) => e,
            Lookup::Ambiguous(all) => {
                return Err(SpecError::AmbiguousDevice {
                    token: token.to_string(),
                    name: device.to_string(),
                    candidates: all.iter().map(|e| e.id.clone()).collect(),
                });
            }
            Lookup::NotFound(suggestions) => {
                return Err(SpecError::UnknownDevice {
                    token: token.to_string(),
                    name: device.to_string(),
                    suggestions: suggestions.iter().map(|e| e.id.clone()).collect(),
                });
            }
        };
        total += u64::from(count);
        if total > u64::from(MAX_DEVICES) {
            return Err(SpecError::TooManyDevices {
                count: total,
                max: MAX_DEVICES,
            });
        }
        out.push((count, entry));
    }
    if out.is_empty() {
        return Err(SpecError::EmptyDeviceSet);
    }
    Ok(out)
}

/// The entry a detected device is: by PCI id first, then by name. When
/// products share the PCI id, the name must pick one of them. The CPU,
/// offload engines and partitions (MIG instances, compute partitions: their
/// resources are a fraction of the datasheet's) are never matched, nor are
/// NVIDIA vGPU profiles ([`is_vgpu_profile`]: a guest's slice of a GPU it
/// shares with other guests, which reports the physical GPU's PCI id).
pub fn match_device(d: &Device) -> Option<&'static SpecEntry> {
    if !d.is_accelerator()
        || d.parent.is_some()
        || (d.vendor == "nvidia" && is_vgpu_profile(&d.name))
    {
        return None;
    }
    let candidates = d
        .pci
        .as_ref()
        .and_then(|p| {
            let v = u16::from_str_radix(&p.vendor_id, 16).ok()?;
            let dev = u16::from_str_radix(&p.device_id, 16).ok()?;
            Some(by_pci_id_all(v, dev))
        })
        .unwrap_or_default();
    let entry = match candidates.as_slice() {
        [] => by_name(&d.name),
        [one] => Some(*one),
        shared => by_name(&d.name).filter(|e| shared.iter().any(|c| c.id == e.id)),
    }?;
    // A product sold in several memory configurations: the detected memory
    // (and, where the tool reports them, GPU cores) picks one (its bandwidth
    // and rate can differ), else the product's entry.
    Some(
        d.memory_bytes
            .and_then(|m| config_for_cores(entry, m, d.compute_units))
            .unwrap_or(entry),
    )
}

/// Whether a device name is an NVIDIA vGPU profile's: NVIDIA names a
/// profile after its GPU, a dash, the frame buffer in GB and the series
/// letter (`GRID P4-1Q`, `GRID T4-16Q`, `NVIDIA A100-4C`, `NVIDIA L4-24Q`,
/// a MIG-backed `GRID A100-2-10C`, a `GRID-T4-16Q` node label;
/// series A, B, C and Q in NVIDIA's Virtual GPU Software User Guide). Such
/// a guest device shares the GPU in time with other guests, so the
/// datasheet's rates are not its own.
pub fn is_vgpu_profile(name: &str) -> bool {
    let Some((_, profile)) = name.trim().rsplit_once('-') else {
        return false;
    };
    // Any case: labels and inventories may lower-case the name.
    let Some(digits) = profile.strip_suffix(['A', 'B', 'C', 'Q', 'a', 'b', 'c', 'q']) else {
        return false;
    };
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Link each detected device to its spec entry (see [`match_device`]),
/// leaving devices that already carry one alone.
pub fn attach(devices: &mut [Device]) {
    for d in devices.iter_mut().filter(|d| d.spec.is_none()) {
        if let Some(e) = match_device(d) {
            tracing::debug!(device = %d.id, spec = %e.id, "spec attached");
            d.spec = Some(e.to_ref());
        }
    }
}

#[cfg(test)]
mod tests;
