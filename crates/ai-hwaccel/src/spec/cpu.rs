//! The CPU spec database: datasheet facts about host CPUs (cores, clocks,
//! memory channels and transfer rate) and, per microarchitecture, the
//! FLOPs one core retires per cycle, each figure citing its source: the
//! vendor's specification (`source`) and the public copy of it the figure
//! was read from, pinned to a commit (`copy`, [`is_pinned_copy`]). A row
//! without both does not load; a figure no such copy gives is left out
//! (unknown) rather than recalled.
//!
//! The data lives in `cpus.toml` next to this file, compiled in and parsed
//! once. From it this module derives what the planner needs of a host CPU
//! when nothing was measured: the theoretical memory bandwidth (channels ×
//! transfer rate × 8 bytes per socket) and peak matrix rates (cores × base
//! clock × FLOPs per cycle per core of the widest unit: AVX2/AVX-512 FMA,
//! Intel AMX tiles). [`match_model_name`] links the model name detection
//! reads from `/proc/cpuinfo` to an entry. Pure: no machine access.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::Tflops;

/// The database text, compiled in.
const CPUS_TOML: &str = include_str!("cpus.toml");

/// Bytes one 64-bit DDR channel moves per transfer (JEDEC DDR4/DDR5 DIMMs
/// have a 64-bit data bus; DDR5 splits it into two 32-bit subchannels).
pub const BYTES_PER_TRANSFER_PER_CHANNEL: u64 = 8;

/// A core design and the work its vector and matrix units retire per cycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Microarchitecture {
    /// Short id (`zen4`, `sapphire-rapids`).
    pub id: String,
    /// Name.
    pub name: String,
    /// FP32 FLOPs per cycle per core on the widest FMA unit (FMA = 2 FLOPs
    /// per lane); `None` where the source gives no single figure.
    #[serde(default)]
    pub fp32_flops_per_cycle: Option<u32>,
    /// BF16 FLOPs per cycle per core on a matrix unit (Intel AMX TMUL).
    #[serde(default)]
    pub amx_bf16_flops_per_cycle: Option<u32>,
    /// INT8 operations per cycle per core on a matrix unit (Intel AMX TMUL).
    #[serde(default)]
    pub amx_int8_ops_per_cycle: Option<u32>,
    /// Where the per-cycle figures come from (the vendor's document).
    pub source: String,
    /// The public copy the per-cycle figures were read from,
    /// `owner/repo@commit:path` ([`is_pinned_copy`]); required when the
    /// entry has any figure (tested).
    #[serde(default)]
    pub copy: Option<String>,
    /// Free text.
    #[serde(default)]
    pub notes: Option<String>,
    /// The x86 CPUID family and model numbers of this core design, as the
    /// Linux kernel assigns them (`cpuid_source`): what identifies the core
    /// of a CPU whose model name is masked or matches no [`CpuSpec`] (a
    /// cloud VM's `AMD EPYC`, QEMU's `Intel Xeon Processor (SapphireRapids)`).
    #[serde(default)]
    pub cpuid: Vec<CpuidRange>,
    /// The document the `cpuid` ranges come from; set with `cpuid_copy`
    /// whenever `cpuid` is not empty (tested).
    #[serde(default)]
    pub cpuid_source: Option<String>,
    /// The public copy of `cpuid_source` the ranges were read from,
    /// `owner/repo@commit:path` ([`is_pinned_copy`]).
    #[serde(default)]
    pub cpuid_copy: Option<String>,
}

/// CPUID family and model ranges of one vendor (`/proc/cpuinfo`'s
/// `vendor_id`, `cpu family` and `model`, decimal there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuidRange {
    /// Lowercase vendor as detection reports it (`amd`, `intel`; `arm` for
    /// Arm Ltd's cores, whose family is the MIDR implementer 0x41 and model
    /// the part number).
    pub vendor: String,
    /// CPUID family (`cpu family`, e.g. 25 = 0x19 for AMD Zen 3/4).
    pub family: u32,
    /// Inclusive model ranges `[first, last]` within the family.
    pub models: Vec<[u32; 2]>,
}

impl CpuidRange {
    /// Whether `vendor`, `family` and `model` fall in this range.
    pub fn contains(&self, vendor: &str, family: u32, model: u32) -> bool {
        self.vendor == vendor
            && self.family == family
            && self.models.iter().any(|&[a, b]| (a..=b).contains(&model))
    }
}

impl Microarchitecture {
    /// Peak dense rates of `cores` cores at `clock_ghz`: `fp32` from the
    /// vector FMA units, `bf16` and `int8` from a matrix unit where the core
    /// has one; a rate this design gives no per-cycle figure for is `None`.
    /// TFLOPS = cores × GHz × FLOPs per cycle ÷ 1000.
    pub fn peak_tflops(&self, cores: u32, clock_ghz: f64) -> Tflops {
        let rate = |per_cycle: Option<u32>| {
            per_cycle.map(|f| f64::from(cores) * clock_ghz * f64::from(f) / 1000.0)
        };
        Tflops {
            fp32: rate(self.fp32_flops_per_cycle),
            bf16: rate(self.amx_bf16_flops_per_cycle),
            int8: rate(self.amx_int8_ops_per_cycle),
            ..Tflops::default()
        }
    }
}

/// The core design a CPU's CPUID vendor, family and model name
/// ([`Microarchitecture::cpuid`]); `None` for a design the table does not
/// list.
pub fn microarchitecture_by_cpuid(
    vendor: &str,
    family: u32,
    model: u32,
) -> Option<&'static Microarchitecture> {
    DB.microarchitectures
        .iter()
        .find(|m| m.cpuid.iter().any(|r| r.contains(vendor, family, model)))
}

/// One CPU product.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    /// Short id (`epyc-9654`, `xeon-platinum-8480-plus`).
    pub id: String,
    /// Product name without trademark marks (`Intel Xeon Platinum 8480+`).
    pub name: String,
    /// Other spellings of the name.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Lowercase vendor.
    pub vendor: String,
    /// Id of the [`Microarchitecture`] entry.
    pub microarchitecture: String,
    /// Cores per socket.
    pub cores: u32,
    /// Base clock in GHz (all cores active within the rated power).
    pub base_clock_ghz: f64,
    /// Highest single-core boost clock in GHz.
    #[serde(default)]
    pub boost_clock_ghz: Option<f64>,
    /// Memory channels per socket.
    pub memory_channels: u32,
    /// Memory type (`DDR5`).
    pub memory_type: String,
    /// Highest memory transfer rate the vendor page states, MT/s.
    pub memory_mt_per_s: u32,
    /// Launch year.
    #[serde(default)]
    pub launch_year: Option<u32>,
    /// The vendor's specification the figures come from: the product page,
    /// or the vendor's specification table the figures were exported from.
    pub source: String,
    /// The public copy of that specification the figures were read from,
    /// `owner/repo@commit:path` ([`is_pinned_copy`]), so a reviewer can
    /// re-read every figure byte for byte.
    pub copy: String,
    /// The vendor's document the memory figures (channels' transfer rate,
    /// type) come from when `source` states none: AWS gives Graviton4's
    /// DDR5-5600 on its instance page, not in its Graviton guide; Ampere
    /// states the Altra family's memory once in its product brief, not per
    /// SKU. Set with `memory_copy` or not at all (tested).
    #[serde(default)]
    pub memory_source: Option<String>,
    /// The public copy of `memory_source` the memory figures were read
    /// from, `owner/repo@commit:path` ([`is_pinned_copy`]).
    #[serde(default)]
    pub memory_copy: Option<String>,
    /// Free text.
    #[serde(default)]
    pub notes: Option<String>,
}

impl CpuSpec {
    /// Theoretical memory bandwidth of one socket: channels × transfer rate
    /// × [`BYTES_PER_TRANSFER_PER_CHANNEL`] (12 × 4800 MT/s × 8 B =
    /// 460.8 GB/s for an EPYC 9654, as AMD's page states it).
    pub fn memory_bandwidth_bytes_per_s(&self) -> u64 {
        u64::from(self.memory_channels)
            * u64::from(self.memory_mt_per_s)
            * 1_000_000
            * BYTES_PER_TRANSFER_PER_CHANNEL
    }

    /// The entry's microarchitecture (`None` if the id names none; a test
    /// keeps every id resolvable).
    pub fn microarchitecture(&self) -> Option<&'static Microarchitecture> {
        DB.microarchitectures
            .iter()
            .find(|m| m.id == self.microarchitecture)
    }

    /// Peak dense rates of `cores` cores at the base clock: `fp32` from the
    /// vector FMA units, `bf16` and `int8` from a matrix unit where the core
    /// has one; a rate the microarchitecture gives no per-cycle figure for
    /// is `None`. TFLOPS = cores × GHz × FLOPs per cycle ÷ 1000.
    pub fn peak_tflops(&self, cores: u32) -> Tflops {
        self.microarchitecture()
            .map(|m| m.peak_tflops(cores, self.base_clock_ghz))
            .unwrap_or_default()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Database {
    microarchitecture: Vec<Microarchitecture>,
    cpu: Vec<CpuSpec>,
}

struct Db {
    microarchitectures: Vec<Microarchitecture>,
    cpus: Vec<CpuSpec>,
    /// Normalized name and aliases of every entry, with its index.
    names: Vec<(String, usize)>,
}

fn parse_database(text: &str) -> Result<Database, toml::de::Error> {
    toml::from_str::<Database>(text)
}

static DB: LazyLock<Db> = LazyLock::new(|| {
    let d = parse_database(CPUS_TOML).expect("embedded cpus.toml parses (tested)");
    let names = d
        .cpu
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            std::iter::once(&c.name)
                .chain(&c.aliases)
                .map(move |n| (normalize_model_name(n), i))
        })
        .collect();
    Db {
        microarchitectures: d.microarchitecture,
        cpus: d.cpu,
        names,
    }
});

/// Whether `s` names a file at a pinned commit of a public repository:
/// `owner/repo@<40 hex digits>:path`.
pub fn is_pinned_copy(s: &str) -> bool {
    let Some((repo, rest)) = s.split_once('@') else {
        return false;
    };
    let Some((commit, path)) = rest.split_once(':') else {
        return false;
    };
    let mut parts = repo.split('/');
    let owner_name_ok = matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(o), Some(n), None) if !o.is_empty() && !n.is_empty()
    );
    owner_name_ok
        && commit.len() == 40
        && commit.bytes().all(|b| b.is_ascii_hexdigit())
        && !path.is_empty()
        && !path.starts_with('/')
}

/// Every CPU entry, in file order.
pub fn all() -> &'static [CpuSpec] {
    &DB.cpus
}

/// Every microarchitecture entry.
pub fn microarchitectures() -> &'static [Microarchitecture] {
    &DB.microarchitectures
}

/// The entry with this id.
pub fn by_id(id: &str) -> Option<&'static CpuSpec> {
    DB.cpus.iter().find(|c| c.id == id)
}

/// Longest model name matched (x86 brand strings are 48 bytes; room for
/// other kernels' spellings).
pub const MAX_MODEL_NAME_BYTES: usize = 256;

/// A CPU model name as kernels and vendors spell it, reduced to the words
/// that name the product: lowercase; trademark marks (`(R)`, `(TM)`, `®`,
/// `™`) dropped; everything from `@` (Intel's `CPU @ 2.10GHz`) and from
/// ` w/ ` or ` with ` (`w/ Radeon 780M Graphics`) cut; the words
/// `processor` and `cpu`, core counts (`96-Core`, `24-Cores`) and Intel's
/// `13th Gen` prefix removed. `"Intel(R) Xeon(R) Platinum 8480+"` and
/// `"AMD EPYC 9654 96-Core Processor"` become `"intel xeon platinum 8480+"`
/// and `"amd epyc 9654"`.
pub fn normalize_model_name(name: &str) -> String {
    let mut s = name.to_lowercase();
    for mark in ["(r)", "(tm)", "®", "™"] {
        s = s.replace(mark, " ");
    }
    for cut in ["@", " w/ ", " with "] {
        if let Some(i) = s.find(cut) {
            s.truncate(i);
        }
    }
    let words: Vec<&str> = s.split_whitespace().collect();
    let mut out: Vec<&str> = Vec::new();
    for (k, w) in words.iter().enumerate() {
        let is_core_count = w
            .strip_suffix("-cores")
            .or_else(|| w.strip_suffix("-core"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let is_gen = (*w == "gen" && k > 0)
            || (words.get(k + 1) == Some(&"gen")
                && w.len() > 2
                && w.is_ascii()
                && w[..w.len() - 2].bytes().all(|b| b.is_ascii_digit())
                && ["st", "nd", "rd", "th"].contains(&&w[w.len() - 2..]));
        if is_core_count || is_gen || *w == "processor" || *w == "cpu" {
            continue;
        }
        out.push(w);
    }
    out.join(" ")
}

/// The entry a detected model name (`/proc/cpuinfo` `model name`, lscpu
/// `Model name`) names: its [`normalize_model_name`] equals an entry's
/// name or alias, normalized the same way. Exact after normalization, so a
/// cloud provider's custom part (`EPYC 9R14`, `Xeon Platinum 8573C`) or a
/// masked name (`Intel(R) Xeon(R) CPU @ 2.20GHz`) matches nothing rather
/// than a neighbour with other figures.
pub fn match_model_name(name: &str) -> Option<&'static CpuSpec> {
    // x86 brand strings are at most 48 bytes (CPUID 0x80000002-4); a longer
    // name is no product name, and the work stays bounded.
    if name.len() > MAX_MODEL_NAME_BYTES {
        return None;
    }
    let n = normalize_model_name(name);
    if n.is_empty() {
        return None;
    }
    DB.names
        .iter()
        .find(|(k, _)| *k == n)
        .map(|&(_, i)| &DB.cpus[i])
}

/// A CPU-table entry with what the planner derives from it, as
/// `ai-hwaccel specs --cpu --json` prints it: the entry's own fields, its
/// theoretical bandwidth per socket ([`CpuSpec::memory_bandwidth_bytes_per_s`])
/// and the peak rates of all its cores at the base clock
/// ([`CpuSpec::peak_tflops`]; `null` where the core design has no sourced
/// per-cycle figure).
#[derive(Clone, Debug, Serialize)]
pub struct CpuView<'a> {
    /// The entry, as stored.
    #[serde(flatten)]
    pub entry: &'a CpuSpec,
    /// Channels × transfer rate × 8 bytes, per socket.
    pub memory_bandwidth_bytes_per_s: u64,
    /// Dense peak rates of one socket's cores at the base clock.
    pub peak_tflops: Tflops,
}

impl CpuSpec {
    /// The entry with its derived figures ([`CpuView`]).
    pub fn view(&self) -> CpuView<'_> {
        CpuView {
            entry: self,
            memory_bandwidth_bytes_per_s: self.memory_bandwidth_bytes_per_s(),
            peak_tflops: self.peak_tflops(self.cores),
        }
    }
}

/// The entries a query names, for `specs --cpu`: every entry without a
/// query; the one entry whose id is the query or whose name a model name
/// matches ([`match_model_name`]); else the entries whose id, name, vendor
/// or microarchitecture contains it (case-insensitive). `Err` carries the
/// ids to suggest when nothing matches.
pub fn select(query: Option<&str>) -> Result<Vec<&'static CpuSpec>, Vec<&'static str>> {
    let Some(q) = query.map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(all().iter().collect());
    };
    if let Some(e) = by_id(&q.to_ascii_lowercase()).or_else(|| match_model_name(q)) {
        return Ok(vec![e]);
    }
    let needle = q.to_ascii_lowercase();
    let contains = |s: &str| s.to_ascii_lowercase().contains(&needle);
    let hits: Vec<&CpuSpec> = all()
        .iter()
        .filter(|e| {
            contains(&e.id)
                || contains(&e.name)
                || contains(&e.vendor)
                || contains(&e.microarchitecture)
        })
        .collect();
    if hits.is_empty() {
        Err(crate::suggest::suggest(
            &needle,
            all().iter().map(|e| e.id.as_str()),
        ))
    } else {
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_parses_and_is_consistent() {
        let d = parse_database(CPUS_TOML).unwrap();
        assert!(d.cpu.len() >= 24, "{}", d.cpu.len());
        let mut ids = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for c in &d.cpu {
            assert!(ids.insert(c.id.clone()), "duplicate id {}", c.id);
            assert!(
                names.insert(normalize_model_name(&c.name)),
                "duplicate name {}",
                c.name
            );
            assert!(c.microarchitecture().is_some(), "{}", c.id);
            assert!(c.source.starts_with("https://"), "{}", c.id);
            assert!(is_pinned_copy(&c.copy), "{}: {}", c.id, c.copy);
            assert!(c.cores > 0 && c.base_clock_ghz > 0.5 && c.base_clock_ghz < 6.0);
            assert!(c.boost_clock_ghz.is_none_or(|b| b >= c.base_clock_ghz));
            assert!((1..=16).contains(&c.memory_channels), "{}", c.id);
            match (&c.memory_source, &c.memory_copy) {
                (None, None) => {}
                (Some(s), Some(copy)) => {
                    assert!(s.starts_with("https://"), "{}", c.id);
                    assert!(is_pinned_copy(copy), "{}: {copy}", c.id);
                }
                _ => panic!("{}: memory_source and memory_copy go together", c.id),
            }
        }
        for m in &d.microarchitecture {
            assert!(m.source.starts_with("https://"), "{}", m.id);
            let has_figure = m.fp32_flops_per_cycle.is_some()
                || m.amx_bf16_flops_per_cycle.is_some()
                || m.amx_int8_ops_per_cycle.is_some();
            if has_figure {
                assert!(
                    m.copy.as_deref().is_some_and(is_pinned_copy),
                    "{}: a per-cycle figure needs the pinned copy it was read from",
                    m.id
                );
            }
            if !m.cpuid.is_empty() {
                assert!(
                    m.cpuid_source
                        .as_deref()
                        .is_some_and(|s| s.starts_with("https://"))
                        && m.cpuid_copy.as_deref().is_some_and(is_pinned_copy),
                    "{}: CPUID ranges need their source and pinned copy",
                    m.id
                );
            }
            for r in &m.cpuid {
                assert!(!r.models.is_empty(), "{}", m.id);
                for &[a, b] in &r.models {
                    // x86 models are 8 bits; an arm64 MIDR part number 12.
                    let max = if r.vendor == "arm" { 0xfff } else { 0xff };
                    assert!(a <= b && b <= max, "{}: model range {a:#x}-{b:#x}", m.id);
                    // No two designs claim one (vendor, family, model).
                    for model in a..=b {
                        let claims = d
                            .microarchitecture
                            .iter()
                            .filter(|o| {
                                o.cpuid
                                    .iter()
                                    .any(|x| x.contains(&r.vendor, r.family, model))
                            })
                            .count();
                        assert_eq!(claims, 1, "{} {:#x}/{model:#x}", r.vendor, r.family);
                    }
                }
            }
        }
    }

    /// `specs --cpu`: an id or a model name picks one entry, a word
    /// filters, a miss suggests ids; the view derives bandwidth and peaks.
    #[test]
    fn select_and_view() {
        assert_eq!(select(None).unwrap().len(), all().len());
        let one = select(Some("EPYC-9654")).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id, "epyc-9654");
        let named = select(Some("AMD EPYC 9654 96-Core Processor")).unwrap();
        assert_eq!(named[0].id, "epyc-9654");
        let zen4 = select(Some("zen4")).unwrap();
        assert!(zen4.len() > 3 && zen4.iter().all(|e| e.microarchitecture == "zen4"));
        let miss = select(Some("epyc-9655x")).unwrap_err();
        assert!(miss.contains(&"epyc-9654"), "{miss:?}");
        assert!(select(Some("zzzz-no-cpu")).is_err());
        let v = serde_json::to_value(by_id("epyc-9654").unwrap().view()).unwrap();
        // 12 channels x DDR5-4800 x 8 bytes; 96 cores x 2.4 GHz x 32.
        assert_eq!(v["memory_bandwidth_bytes_per_s"], 460_800_000_000u64);
        assert!(
            (v["peak_tflops"]["fp32"].as_f64().unwrap() - 96.0 * 2.4 * 32.0 / 1000.0).abs() < 1e-9
        );
        assert_eq!(v["id"], "epyc-9654");
        assert_eq!(v["memory_channels"], 12);
    }

    /// The Linux kernel's ranges (`cpuid_copy`): family 0x19 models
    /// 0x10-0x1f and 0x60-0xaf are Zen 4 (this build machine's masked
    /// "AMD EPYC" reads family 25, model 17), 0x00-0x0f and 0x20-0x5f
    /// Zen 3 (an EPYC 7763 reads 25/1); family 0x17 models 0x30-0x4f,
    /// 0x60-0x7f, 0x90-0x91, 0xa0-0xaf Zen 2 (an EPYC 7742 reads 23/49);
    /// family 0x1a models 0x00-0x2f, 0x40-0x4f, 0x60-0x7f Zen 5; Sapphire
    /// Rapids is 6/0x8f, ICELAKE_X 6/0x6a; Zen 1 (0x17/0x01), ICELAKE_D
    /// (6/0x6c, one AVX-512 FMA unit) and GRANITERAPIDS_D (6/0xae) have no
    /// entry.
    #[test]
    fn cpuid_names_the_core_design() {
        let id = |v, f, m| microarchitecture_by_cpuid(v, f, m).map(|m| m.id.as_str());
        assert_eq!(id("amd", 25, 17), Some("zen4"));
        assert_eq!(id("amd", 0x19, 0x61), Some("zen4"));
        assert_eq!(id("amd", 0x19, 0xa0), Some("zen4"));
        assert_eq!(id("amd", 25, 1), Some("zen3"));
        assert_eq!(id("amd", 0x19, 0x0f), Some("zen3"));
        assert_eq!(id("amd", 0x19, 0x21), Some("zen3"));
        assert_eq!(id("amd", 0x19, 0x5f), Some("zen3"));
        assert_eq!(id("amd", 0x19, 0xb0), None);
        assert_eq!(id("amd", 23, 49), Some("zen2"));
        assert_eq!(id("amd", 0x17, 0x71), Some("zen2"));
        assert_eq!(id("amd", 0x17, 0x01), None, "Zen 1");
        assert_eq!(id("amd", 0x17, 0x92), None);
        assert_eq!(id("amd", 0x1a, 0x02), Some("zen5"));
        assert_eq!(id("amd", 0x1a, 0x11), Some("zen5"));
        assert_eq!(id("amd", 0x1a, 0x44), Some("zen5"));
        assert_eq!(id("amd", 0x1a, 0x70), Some("zen5"));
        assert_eq!(id("amd", 0x1a, 0x50), None, "not Zen 5 by the kernel");
        assert_eq!(id("intel", 6, 0x8f), Some("sapphire-rapids"));
        assert_eq!(id("intel", 6, 0xcf), Some("emerald-granite-rapids"));
        assert_eq!(id("intel", 6, 0xad), Some("emerald-granite-rapids"));
        assert_eq!(id("intel", 6, 106), Some("icelake-server"));
        assert_eq!(id("intel", 6, 0x6c), None, "ICELAKE_D: 1 FMA unit");
        assert_eq!(id("intel", 6, 0xae), None);
        assert_eq!(id("intel", 0x19, 0x11), None, "the family counts");
        // arm64: MIDR implementer and part (Linux cputype.h).
        assert_eq!(id("arm", 0x41, 0xd0c), Some("neoverse-n1"));
        assert_eq!(id("arm", 0x41, 0xd4f), Some("neoverse-v2"));
        assert_eq!(id("arm", 0x41, 0xd40), None, "Neoverse V1 has no entry");
        assert_eq!(id("ampere", 0xc0, 0xd0c), None, "the implementer counts");
        assert_eq!(id("amd", 6, 0x8f), None, "the vendor counts");
        // 2 Zen 4 cores at 2.596 GHz: 2 x 2.596 x 32 / 1000 TFLOPS fp32.
        let t = microarchitecture_by_cpuid("amd", 25, 17)
            .unwrap()
            .peak_tflops(2, 2.596);
        assert!((t.fp32.unwrap() - 0.166_144).abs() < 1e-9, "{t:?}");
        assert_eq!((t.bf16, t.int8), (None, None));
        // A masked Zen 3 VM (AWS's EPYC 7R13 reads 25/1), 4 cores at
        // 2.65 GHz: 4 x 2.65 x 32 / 1000 TFLOPS fp32.
        let t = microarchitecture_by_cpuid("amd", 25, 1)
            .unwrap()
            .peak_tflops(4, 2.65);
        assert!((t.fp32.unwrap() - 0.3392).abs() < 1e-9, "{t:?}");
        // A Zen 5 one: the model's 32 per cycle, 8 cores at 3.0 GHz.
        let t = microarchitecture_by_cpuid("amd", 0x1a, 0x11)
            .unwrap()
            .peak_tflops(8, 3.0);
        assert!((t.fp32.unwrap() - 0.768).abs() < 1e-9, "{t:?}");
    }

    /// A row without its vendor source or without the pinned copy its
    /// figures were read from does not load: the table cannot hold an
    /// unsourced row.
    #[test]
    fn a_row_without_a_source_or_copy_is_rejected() {
        let first_cpu = CPUS_TOML.find("\n[[cpu]]\n").unwrap();
        for key in ["source = ", "copy = "] {
            let at = first_cpu + CPUS_TOML[first_cpu..].find(key).unwrap();
            let end = at + CPUS_TOML[at..].find('\n').unwrap();
            let text = format!("{}{}", &CPUS_TOML[..at], &CPUS_TOML[end..]);
            let err = match parse_database(&text) {
                Ok(_) => panic!("{key}: a row without it loaded"),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(key.trim_end_matches(" = ")), "{key}: {err}");
        }
        assert!(is_pinned_copy(
            "felixsteinke/cpu-spec-dataset@4c08d8873c33a2d1054a40ae305eec22073463a7:dataset/amd-cpus.csv"
        ));
        for bad in [
            "",
            "https://example.com/x.csv",
            "owner/repo:path",
            "owner/repo@main:path",
            "owner@4c08d8873c33a2d1054a40ae305eec22073463a7:path",
            "owner/repo@4c08d8873c33a2d1054a40ae305eec22073463a7:",
            "owner/repo@4c08d8873c33a2d1054a40ae305eec22073463a:path",
        ] {
            assert!(!is_pinned_copy(bad), "{bad:?}");
        }
    }

    #[test]
    fn bandwidth_is_channels_times_rate_times_eight() {
        // AMD's specification table gives "Per Socket Mem BW" 460.80 GB/s
        // for every Genoa row (felixsteinke/cpu-spec-dataset amd-cpus.csv);
        // the derivation must land on it: 12 × 4800 MT/s × 8 B.
        let genoa: Vec<_> = all()
            .iter()
            .filter(|c| c.id.starts_with("epyc-9"))
            .collect();
        assert_eq!(genoa.len(), 9);
        for c in genoa {
            assert_eq!(
                c.memory_bandwidth_bytes_per_s(),
                460_800_000_000,
                "{}",
                c.id
            );
        }
        // Xeon Platinum 8480+: 8 × 4800 MT/s × 8 B = 307.2 GB/s.
        assert_eq!(
            by_id("xeon-platinum-8480-plus")
                .unwrap()
                .memory_bandwidth_bytes_per_s(),
            307_200_000_000
        );
        // Threadripper PRO 7995WX: 8 × 5200 × 8 = 332.8 GB/s; the non-PRO
        // 7980X has 4 channels: 166.4 GB/s.
        assert_eq!(
            by_id("threadripper-pro-7995wx")
                .unwrap()
                .memory_bandwidth_bytes_per_s(),
            332_800_000_000
        );
        assert_eq!(
            by_id("threadripper-7980x")
                .unwrap()
                .memory_bandwidth_bytes_per_s(),
            166_400_000_000
        );
        // Xeon 6980P: 12 × 6400 × 8 = 614.4 GB/s (DDR5 RDIMMs, not MRDIMMs).
        assert_eq!(
            by_id("xeon-6980p").unwrap().memory_bandwidth_bytes_per_s(),
            614_400_000_000
        );
    }

    #[test]
    fn peak_rates_are_cores_times_clock_times_flops_per_cycle() {
        // Xeon 8480+ (Intel: FP32 64, AMX BF16 1024, INT8 2048 per cycle):
        // 56 × 2.0 × 64 = 7.168 TFLOPS, 56 × 2.0 × 1024 = 114.688 TFLOPS,
        // 56 × 2.0 × 2048 = 229.376 TOPS.
        let t = by_id("xeon-platinum-8480-plus").unwrap().peak_tflops(56);
        assert!((t.fp32.unwrap() - 7.168).abs() < 1e-9);
        assert!((t.bf16.unwrap() - 114.688).abs() < 1e-9);
        assert!((t.int8.unwrap() - 229.376).abs() < 1e-9);
        // Only 8 usable cores of it: 8 × 2.0 × 1024 = 16.384.
        let t = by_id("xeon-platinum-8480-plus").unwrap().peak_tflops(8);
        assert!((t.bf16.unwrap() - 16.384).abs() < 1e-9);
        // Xeon 6980P: FP32 from 2 AVX-512 FMA units (64/cycle):
        // 128 × 2.0 × 64 = 16.384 TFLOPS; its AMX rate is unsourced.
        let t = by_id("xeon-6980p").unwrap().peak_tflops(128);
        assert!((t.fp32.unwrap() - 16.384).abs() < 1e-9);
        assert_eq!((t.bf16, t.int8), (None, None));
        // EPYC 9654 (Zen 4: 2 FMA pipes × 8 FP32 lanes × 2 = 32/cycle, no
        // matrix unit): 96 × 2.4 GHz × 32 = 7.3728 TFLOPS.
        let t = by_id("epyc-9654").unwrap().peak_tflops(96);
        assert!((t.fp32.unwrap() - 7.3728).abs() < 1e-9);
        assert_eq!((t.bf16, t.int8), (None, None));
        // EPYC 7763 (Zen 3: 2 FMA pipes x 8 FP32 lanes x 2 = 32/cycle):
        // 64 x 2.45 GHz x 32 = 5.0176 TFLOPS; EPYC 7742 (Zen 2, 32/cycle):
        // 64 x 2.25 x 32 = 4.608.
        let t = by_id("epyc-7763").unwrap().peak_tflops(64);
        assert!((t.fp32.unwrap() - 5.0176).abs() < 1e-9);
        let t = by_id("epyc-7742").unwrap().peak_tflops(64);
        assert!((t.fp32.unwrap() - 4.608).abs() < 1e-9);
        // Xeon Platinum 8380 (Ice Lake: 2 AVX-512 FMA units, 64/cycle, no
        // AMX): 40 x 2.3 x 64 = 5.888 TFLOPS.
        let t = by_id("xeon-platinum-8380").unwrap().peak_tflops(40);
        assert!((t.fp32.unwrap() - 5.888).abs() < 1e-9);
        assert_eq!((t.bf16, t.int8), (None, None));
        // Arm: Neoverse N1 (2 pipes x 4 lanes x 2 = 16/cycle), Altra Q80-30:
        // 80 x 3.0 x 16 = 3.84; Neoverse V2 (4 x 4 x 2 = 32), Graviton4:
        // 96 x 2.8 x 32 = 8.6016.
        let t = by_id("altra-q80-30").unwrap().peak_tflops(80);
        assert!((t.fp32.unwrap() - 3.84).abs() < 1e-9);
        let t = by_id("graviton4").unwrap().peak_tflops(96);
        assert!((t.fp32.unwrap() - 8.6016).abs() < 1e-9);
        // Hybrid client parts: no sourced per-cycle figure, so unknown, not
        // guessed.
        assert_eq!(
            by_id("core-ultra-9-285k").unwrap().peak_tflops(24),
            Tflops::default()
        );
    }
    #[test]
    fn names_normalize() {
        assert_eq!(
            normalize_model_name("Intel(R) Xeon(R) Platinum 8480+"),
            "intel xeon platinum 8480+"
        );
        assert_eq!(
            normalize_model_name("AMD EPYC 9654 96-Core Processor    "),
            "amd epyc 9654"
        );
        assert_eq!(
            normalize_model_name("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"),
            "intel xeon gold 6338"
        );
        assert_eq!(
            normalize_model_name("13th Gen Intel(R) Core(TM) i9-13900K"),
            "intel core i9-13900k"
        );
        assert_eq!(
            normalize_model_name("AMD Ryzen 7 7840HS w/ Radeon 780M Graphics"),
            "amd ryzen 7 7840hs"
        );
        assert_eq!(normalize_model_name(""), "");
        assert_eq!(match_model_name("   "), None);
        // Hostile input: long or odd names match nothing, without panicking.
        assert_eq!(match_model_name(&"AMD EPYC 9654 ".repeat(100)), None);
        assert_eq!(match_model_name("gen 1st gen -core @@@ ®™"), None);
        assert_eq!(match_model_name("\u{0}AMD EPYC 9654"), None);
        // A multi-byte word before "gen" is not sliced inside a character.
        assert_eq!(normalize_model_name("€a gen x"), "€a x");
    }
}
