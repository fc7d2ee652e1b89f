//! Safetensors headers: the tensors a checkpoint stores, read without
//! touching the weights.
//!
//! A `.safetensors` file is an 8-byte little-endian header length `N`, `N`
//! bytes of JSON (`{"__metadata__": {…}, "name": {"dtype": "BF16", "shape":
//! […], "data_offsets": [begin, end]}, …}`), then the tensor data
//! (<https://github.com/huggingface/safetensors>, "Format"). [`parse_header`]
//! is pure and checks what the format promises: a bounded header, known
//! dtypes, element counts that fit in `u64`, offsets that match
//! dtype × shape and tile the data without holes or overlaps.
//!
//! [`read_file_header`] reads one file's header and [`read_index`], for a
//! sharded checkpoint, the
//! `model.safetensors.index.json` and every shard's header, through
//! [`crate::probe::files`]; [`infer_spec`] guesses an architecture from
//! Llama-style tensor names when no config.json is beside them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{FormatError, ModelError, StoredWeights};
use crate::plan::arch::{MlpKind, ModelSpec, Moe, NormKind};
use crate::probe::files::Opened;

/// Largest header accepted (the reference implementation's limit).
pub const MAX_HEADER_BYTES: u64 = 100 * 1024 * 1024;

/// Largest `model.safetensors.index.json` read.
pub const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;

/// Most shards an index may name.
pub const MAX_SHARDS: usize = 100_000;

/// A tensor's storage type, as the format names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs, reason = "the variants are the format's dtype names")]
pub enum Dtype {
    Bool,
    U8,
    I8,
    F8E4M3,
    F8E5M2,
    F8E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    I64,
    U64,
    F64,
    C64,
    /// 4-bit float (E2M1), two per byte.
    F4,
    /// 6-bit float (E2M3).
    F6E2M3,
    /// 6-bit float (E3M2).
    F6E3M2,
}

/// Every dtype with its name in the header and its width in bits (the
/// `safetensors` crate's `Dtype` and `Dtype::bitsize`).
const DTYPES: &[(Dtype, &str, u64)] = &[
    (Dtype::Bool, "BOOL", 8),
    (Dtype::U8, "U8", 8),
    (Dtype::I8, "I8", 8),
    (Dtype::F8E4M3, "F8_E4M3", 8),
    (Dtype::F8E5M2, "F8_E5M2", 8),
    (Dtype::F8E8M0, "F8_E8M0", 8),
    (Dtype::I16, "I16", 16),
    (Dtype::U16, "U16", 16),
    (Dtype::F16, "F16", 16),
    (Dtype::BF16, "BF16", 16),
    (Dtype::I32, "I32", 32),
    (Dtype::U32, "U32", 32),
    (Dtype::F32, "F32", 32),
    (Dtype::I64, "I64", 64),
    (Dtype::U64, "U64", 64),
    (Dtype::F64, "F64", 64),
    (Dtype::C64, "C64", 64),
    (Dtype::F4, "F4", 4),
    (Dtype::F6E2M3, "F6_E2M3", 6),
    (Dtype::F6E3M2, "F6_E3M2", 6),
];

impl Dtype {
    /// The dtype named `s` in a header.
    pub fn from_name(s: &str) -> Option<Dtype> {
        DTYPES.iter().find(|(_, n, _)| *n == s).map(|(d, _, _)| *d)
    }

    /// The name a header uses (`BF16`, `F8_E4M3`).
    pub fn name(self) -> &'static str {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or("?", |(_, n, _)| n)
    }

    /// Bits per element.
    pub fn bits(self) -> u64 {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or(8, |(_, _, b)| *b)
    }
}

/// One tensor of a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Tensor name (`model.layers.0.self_attn.q_proj.weight`).
    pub name: String,
    /// Storage type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Byte range in the data section, `[begin, end)`.
    pub data_offsets: (u64, u64),
    /// Elements (product of the shape).
    pub elements: u64,
}

impl TensorInfo {
    /// Bytes of data.
    pub fn bytes(&self) -> u64 {
        self.data_offsets.1 - self.data_offsets.0
    }
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> FormatError {
    FormatError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The header length `N` from a file's first 8 bytes, bounded by
/// [`MAX_HEADER_BYTES`].
pub fn header_len(prefix: &[u8]) -> Result<u64, FormatError> {
    let Some(first) = prefix.get(..8) else {
        return Err(err(
            "header length",
            format!(
                "the file has {} bytes, fewer than the 8-byte length",
                prefix.len()
            ),
        ));
    };
    let n = u64::from_le_bytes(first.try_into().expect("8 bytes"));
    if n > MAX_HEADER_BYTES {
        return Err(err(
            "header length",
            format!("{n} bytes declared, more than the {MAX_HEADER_BYTES}-byte limit"),
        ));
    }
    if n < 2 {
        return Err(err(
            "header length",
            format!("{n} bytes cannot hold a JSON object"),
        ));
    }
    Ok(n)
}

/// Most tensors one header may describe (DeepSeek-V3, among the largest
/// checkpoints, has about 92,000 over all its shards).
pub const MAX_TENSORS: usize = 1 << 20;

/// Most dimensions a tensor may have.
pub const MAX_DIMS: usize = 64;

/// Parse a header: `bytes` starts at the file's first byte and holds at
/// least the 8-byte length and the JSON it declares (more is ignored).
/// Tensors come back sorted by name.
///
/// The JSON is streamed entry by entry into bounded values (at most
/// [`MAX_DIMS`] dimensions, [`MAX_TENSORS`] tensors, unknown fields
/// skipped unread), so memory stays proportional to the tensors described,
/// whatever the header holds.
pub fn parse_header(bytes: &[u8]) -> Result<Vec<TensorInfo>, FormatError> {
    let n = header_len(bytes)?;
    let available = bytes.len() as u64 - 8;
    if n > available {
        return Err(err(
            "header length",
            format!("{n} bytes declared but only {available} follow"),
        ));
    }
    let json = &bytes[8..8 + n as usize];
    if json.first() != Some(&b'{') {
        return Err(err("header", "does not start with '{'"));
    }
    let mut tensors = Vec::new();
    let mut failure = None;
    let mut de = serde_json::Deserializer::from_slice(json);
    let parsed = serde::de::DeserializeSeed::deserialize(
        raw::Entries {
            out: &mut tensors,
            failure: &mut failure,
        },
        &mut de,
    )
    .and_then(|()| de.end());
    if let Some(e) = failure {
        return Err(e);
    }
    parsed.map_err(|e| err("header", format!("not a JSON object: {e}")))?;
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = tensors.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(err(format!("tensor {}", w[0].name), "appears twice"));
    }
    check_tiling(&tensors)?;
    Ok(tensors)
}

/// Streaming deserialization of a header into bounded values.
mod raw {
    use std::fmt;

    use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{FormatError, MAX_DIMS, MAX_TENSORS, TensorInfo, err, tensor};

    /// A tensor entry as written, before validation.
    pub(super) struct RawEntry {
        pub dtype: Option<String>,
        pub shape: Option<Vec<u64>>,
        pub data_offsets: Option<Vec<u64>>,
    }

    /// The header object: each entry is validated as it is read; the first
    /// failure is kept in `failure` and stops the parse.
    pub(super) struct Entries<'a> {
        pub out: &'a mut Vec<TensorInfo>,
        pub failure: &'a mut Option<FormatError>,
    }

    impl<'de> DeserializeSeed<'de> for Entries<'_> {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Entries<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object of tensors")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(name) = map.next_key::<String>()? {
                if name == "__metadata__" {
                    if let Err(e) = map.next_value_seed(Metadata) {
                        *self.failure = Some(err(
                            "__metadata__",
                            format!("expected an object of strings ({e})"),
                        ));
                        return Err(e);
                    }
                    continue;
                }
                let mut field = "entry";
                let raw = match map.next_value_seed(Entry { field: &mut field }) {
                    Ok(raw) => raw,
                    Err(e) => {
                        *self.failure = Some(err(format!("tensor {name}: {field}"), e.to_string()));
                        return Err(e);
                    }
                };
                match tensor(&name, raw) {
                    Ok(t) => self.out.push(t),
                    Err(e) => {
                        *self.failure = Some(e);
                        return Err(de::Error::custom("invalid tensor"));
                    }
                }
                if self.out.len() > MAX_TENSORS {
                    *self.failure = Some(err("header", format!("more than {MAX_TENSORS} tensors")));
                    return Err(de::Error::custom("too many tensors"));
                }
            }
            Ok(())
        }
    }

    /// `__metadata__`: an object of strings, checked and dropped.
    struct Metadata;

    impl<'de> DeserializeSeed<'de> for Metadata {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Metadata {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while map.next_key::<IgnoredAny>()?.is_some() {
                map.next_value_seed(StrOnly)?;
            }
            Ok(())
        }
    }

    /// Any string, not kept.
    struct StrOnly;

    impl<'de> DeserializeSeed<'de> for StrOnly {
        type Value = ();
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for StrOnly {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
    }

    /// One tensor entry; `field` names the key being read, for errors.
    struct Entry<'a> {
        field: &'a mut &'static str,
    }

    impl<'de> DeserializeSeed<'de> for Entry<'_> {
        type Value = RawEntry;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawEntry, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Entry<'_> {
        type Value = RawEntry;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object with dtype, shape and data_offsets")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
            let mut raw = RawEntry {
                dtype: None,
                shape: None,
                data_offsets: None,
            };
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "dtype" => {
                        *self.field = "dtype";
                        raw.dtype = Some(map.next_value()?);
                    }
                    "shape" => {
                        *self.field = "shape";
                        raw.shape = Some(map.next_value_seed(Ints { max: MAX_DIMS })?);
                    }
                    "data_offsets" => {
                        *self.field = "data_offsets";
                        raw.data_offsets = Some(map.next_value_seed(Ints { max: 2 })?);
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            *self.field = "entry";
            Ok(raw)
        }
    }

    /// A list of at most `max` non-negative integers.
    struct Ints {
        max: usize,
    }

    impl<'de> DeserializeSeed<'de> for Ints {
        type Value = Vec<u64>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<u64>, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Ints {
        type Value = Vec<u64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "a list of at most {} non-negative integers", self.max)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u64>, A::Error> {
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<u64>()? {
                if out.len() == self.max {
                    return Err(de::Error::invalid_length(self.max + 1, &self));
                }
                out.push(v);
            }
            Ok(out)
        }
    }
}

fn tensor(name: &str, raw: raw::RawEntry) -> Result<TensorInfo, FormatError> {
    let field = |what: &str| format!("tensor {name}: {what}");
    let dtype_name = raw.dtype.ok_or_else(|| err(field("dtype"), "missing"))?;
    let dtype = Dtype::from_name(&dtype_name)
        .ok_or_else(|| err(field("dtype"), format!("unknown dtype {dtype_name:?}")))?;
    let shape = raw.shape.ok_or_else(|| err(field("shape"), "missing"))?;
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            err(
                field("shape"),
                format!("{shape:?} has more elements than fit in 64 bits"),
            )
        })?;
    let bits = elements.checked_mul(dtype.bits()).ok_or_else(|| {
        err(
            field("shape"),
            format!("{shape:?} of {} overflows 64 bits of bits", dtype.name()),
        )
    })?;
    if bits % 8 != 0 {
        return Err(err(
            field("shape"),
            format!(
                "{elements} elements of {} do not fill whole bytes",
                dtype.name()
            ),
        ));
    }
    let (begin, end) = match raw.data_offsets.as_deref() {
        Some(&[b, e]) => (b, e),
        _ => {
            return Err(err(
                field("data_offsets"),
                "expected [begin, end] of non-negative integers",
            ));
        }
    };
    if end < begin {
        return Err(err(
            field("data_offsets"),
            format!("[{begin}, {end}] ends before it begins"),
        ));
    }
    if end - begin != bits / 8 {
        return Err(err(
            field("data_offsets"),
            format!(
                "[{begin}, {end}] holds {} bytes but {} × {shape:?} needs {}",
                end - begin,
                dtype.name(),
                bits / 8
            ),
        ));
    }
    Ok(TensorInfo {
        name: name.to_string(),
        dtype,
        shape,
        data_offsets: (begin, end),
        elements,
    })
}

/// The format requires the tensors to cover the data section from byte 0
/// with neither holes nor overlaps.
fn check_tiling(tensors: &[TensorInfo]) -> Result<(), FormatError> {
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.data_offsets);
    let mut at = 0u64;
    let mut prev: Option<&str> = None;
    for t in order {
        let (begin, end) = t.data_offsets;
        if begin < at {
            return Err(err(
                format!("tensor {}: data_offsets", t.name),
                format!("[{begin}, {end}] overlaps tensor {}", prev.unwrap_or("?")),
            ));
        }
        if begin > at {
            return Err(err(
                format!("tensor {}: data_offsets", t.name),
                format!("[{begin}, {end}] leaves a hole after byte {at}"),
            ));
        }
        at = end;
        prev = Some(&t.name);
    }
    Ok(())
}

/// Bytes of data the tensors cover (the largest end offset).
pub fn data_len(tensors: &[TensorInfo]) -> u64 {
    tensors.iter().map(|t| t.data_offsets.1).max().unwrap_or(0)
}

/// Names that hold quantization metadata rather than parameters:
/// GPTQ/AWQ zeros, scales and group indices, FP8 scales, the block and
/// per-tensor scales of NVFP4/MXFP4 (ModelOpt `weight_scale_2`,
/// compressed-tensors `weight_global_scale`/`input_global_scale`).
const AUX_SUFFIXES: &[&str] = &[
    ".qzeros",
    ".scales",
    ".g_idx",
    ".weight_scale_inv",
    ".weight_scale",
    ".weight_scale_2",
    ".weight_global_scale",
    ".input_global_scale",
    ".input_scale",
];

/// A tensor of two E2M1 values per byte: a `U8` matrix (`.weight`, ModelOpt;
/// `.weight_packed`, compressed-tensors) of a checkpoint the config declares
/// NVFP4 or MXFP4.
fn fp4_packed(t: &TensorInfo, quantization: Option<&str>) -> bool {
    matches!(quantization, Some("nvfp4" | "mxfp4"))
        && t.dtype == Dtype::U8
        && (t.name.ends_with(".weight") || t.name.ends_with(".weight_packed"))
}

/// Exact weights of a set of tensors. Parameters are element counts, except
/// packed GPTQ/AWQ `qweight` tensors (int32 holding `32 / bits` values each,
/// counted unpacked), packed FP4 matrices (two values per byte,
/// `fp4_packed`) and quantization metadata (`AUX_SUFFIXES`: stored
/// bytes, not parameters). `bits` is the config's quantization width.
pub fn summarize(
    tensors: &[TensorInfo],
    bits: Option<u32>,
    quantization: Option<String>,
    warnings: &mut Vec<String>,
) -> StoredWeights {
    let mut parameters = 0u64;
    let mut bytes = 0u64;
    let mut by_dtype: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut packed, mut aux, mut aux_elements, mut fp4) = (0u64, 0u64, 0u64, 0u64);
    let pack_bits = u64::from(bits.filter(|b| matches!(b, 2 | 3 | 4 | 8)).unwrap_or(4));
    for t in tensors {
        bytes = bytes.saturating_add(t.bytes());
        *by_dtype.entry(t.dtype.name()).or_default() += t.bytes();
        if t.name.ends_with(".qweight") && t.dtype == Dtype::I32 {
            packed += 1;
            parameters = parameters.saturating_add(t.elements.saturating_mul(32) / pack_bits);
        } else if fp4_packed(t, quantization.as_deref()) {
            fp4 += 1;
            parameters = parameters.saturating_add(t.elements.saturating_mul(2));
        } else if AUX_SUFFIXES.iter().any(|s| t.name.ends_with(s)) {
            aux += 1;
            aux_elements = aux_elements.saturating_add(t.elements);
        } else {
            parameters = parameters.saturating_add(t.elements);
        }
    }
    if packed > 0 {
        let assumed = if bits.is_some() {
            ""
        } else {
            " (assumed: the config does not say)"
        };
        warnings.push(format!(
            "{packed} packed qweight tensors: parameters count them unpacked at {pack_bits} bits per weight{assumed}, not as stored int32 elements"
        ));
    }
    if fp4 > 0 {
        warnings.push(format!(
            "{fp4} packed FP4 matrices (U8): parameters count two values per byte"
        ));
    }
    if aux > 0 {
        warnings.push(format!(
            "{aux} quantization metadata tensors (zeros, scales, group indices; {aux_elements} elements) are counted in bytes, not parameters"
        ));
    }
    let mut bytes_by_dtype: Vec<(String, u64)> = by_dtype
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    bytes_by_dtype.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    StoredWeights {
        parameters,
        bytes,
        bytes_by_dtype,
        tensors: tensors.len() as u64,
        quantization,
        matmul_bytes: Vec::new(),
    }
}

/// Read one `.safetensors` file's header (and nothing else).
pub fn read_file_header(file: &Opened) -> Result<Vec<TensorInfo>, ModelError> {
    let shown = file.path().display().to_string();
    let io = |source| ModelError::Io {
        path: shown.clone(),
        source,
    };
    let file_len = file.len();
    let prefix = file.read_range(0, 8).map_err(io)?;
    let n = header_len(&prefix).map_err(|e| e.at(&shown))?;
    if n > file_len.saturating_sub(8) {
        return Err(FormatError {
            field: "header length".into(),
            reason: format!("{n} bytes declared but the file has {file_len} bytes"),
        }
        .at(&shown));
    }
    let bytes = file.read_range(0, 8 + n).map_err(io)?;
    let tensors = parse_header(&bytes).map_err(|e| e.at(&shown))?;
    let available = file_len - 8 - n;
    let need = data_len(&tensors);
    if need > available {
        let last = tensors
            .iter()
            .max_by_key(|t| t.data_offsets.1)
            .map_or("?", |t| &t.name);
        return Err(FormatError {
            field: format!("tensor {last}: data_offsets"),
            reason: format!(
                "ends at data byte {need} but the file holds {available} bytes of data"
            ),
        }
        .at(&shown));
    }
    Ok(tensors)
}

/// `model.safetensors.index.json`.
#[derive(serde::Deserialize)]
struct Index {
    #[serde(default)]
    metadata: Option<IndexMetadata>,
    weight_map: BTreeMap<String, String>,
}

#[derive(serde::Deserialize)]
struct IndexMetadata {
    #[serde(default)]
    total_size: Option<serde_json::Number>,
}

/// What a `model.safetensors.index.json` says: the shards (file names in
/// the index's own directory) with the tensors mapped to each, and the
/// total size its metadata declares.
#[derive(Debug, Default, PartialEq)]
pub struct IndexMap {
    /// Shard file name → tensors the index maps to it.
    pub shards: BTreeMap<String, Vec<String>>,
    /// `metadata.total_size`, when given as an integer.
    pub declared_total_size: Option<u64>,
}

/// Parse an index's text (pure; a leading BOM is ignored): a shard name that
/// is not a plain file name (empty, `.`, `..`, a path separator) or more
/// than [`MAX_SHARDS`] shards is an error naming the field.
pub fn parse_index(text: &str) -> Result<IndexMap, (&'static str, String)> {
    let root: Index = serde_json::from_str(crate::model::text::strip_bom(text))
        .map_err(|e| ("(json)", e.to_string()))?;
    let mut shards: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (tensor, shard) in &root.weight_map {
        let shard = shard.as_str();
        if shard.is_empty() || shard.contains(['/', '\\']) || shard == "." || shard == ".." {
            return Err((
                "weight_map",
                format!("{tensor}: {shard:?} is not a file name in the index's directory"),
            ));
        }
        shards
            .entry(shard.to_string())
            .or_default()
            .push(tensor.clone());
        if shards.len() > MAX_SHARDS {
            return Err(("weight_map", format!("more than {MAX_SHARDS} shards")));
        }
    }
    Ok(IndexMap {
        shards,
        declared_total_size: root
            .metadata
            .and_then(|m| m.total_size)
            .and_then(|n| n.as_u64()),
    })
}

/// Read every shard an index names (all in the index's directory).
pub fn read_index(
    index: &Opened,
    warnings: &mut Vec<String>,
) -> Result<Vec<TensorInfo>, ModelError> {
    let shown = index.path().display().to_string();
    let text = index
        .read_text_capped(MAX_INDEX_BYTES)
        .map_err(|source| ModelError::Io {
            path: shown.clone(),
            source,
        })?;
    let malformed = |field: &str, reason: String| ModelError::Malformed {
        path: shown.clone(),
        field: field.to_string(),
        reason,
    };
    let parsed = parse_index(&text).map_err(|(field, reason)| malformed(field, reason))?;
    let shards = &parsed.shards;
    let dir = index.path().parent().unwrap_or(Path::new(""));
    let mut all: Vec<TensorInfo> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut unlisted = 0usize;
    for (shard, listed) in shards {
        let Some(file) = super::found_if_any(dir, shard)? else {
            return Err(malformed(
                "weight_map",
                format!("shard {shard} (holding {}) is missing", listed[0]),
            ));
        };
        let tensors = read_file_header(&file)?;
        let names: BTreeSet<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
        if let Some(absent) = listed.iter().find(|t| !names.contains(t.as_str())) {
            return Err(malformed(
                "weight_map",
                format!("tensor {absent} is mapped to {shard}, which does not hold it"),
            ));
        }
        unlisted += tensors.len() - listed.len();
        for t in tensors {
            if !seen.insert(t.name.clone()) {
                return Err(malformed(
                    "weight_map",
                    format!("tensor {} is stored in more than one shard", t.name),
                ));
            }
            all.push(t);
        }
    }
    if unlisted > 0 {
        warnings.push(format!(
            "{shown}: {unlisted} tensors in the shards are not in weight_map (counted)"
        ));
    }
    let total: u64 = all.iter().map(TensorInfo::bytes).sum();
    if let Some(declared) = parsed.declared_total_size {
        if declared != total {
            warnings.push(format!(
                "{shown}: metadata.total_size is {declared} bytes but the shards' tensors hold {total}"
            ));
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(all)
}

/// Guess a Llama-style architecture from tensor names and shapes when no
/// config.json is beside the weights. Reads `model.embed_tokens.weight`
/// (vocabulary × width), `model.layers.N.` (layer count), the layer's q/k
/// projections, MLP or experts (Mixtral `block_sparse_moe.experts.N.w1`,
/// Qwen `mlp.experts.N.gate_proj`), biases, q/k norms and norms. Heads are
/// not stored anywhere: without q/k norms (which give the head size) the
/// head size is assumed to be 128 (or 64). Flagged approximate.
pub fn infer_spec(
    tensors: &[TensorInfo],
    path: &str,
) -> Result<(ModelSpec, Vec<String>), ModelError> {
    let mut warnings = vec![format!(
        "{path}: no config.json beside it; architecture inferred from tensor names (approximate)"
    )];
    let shapes: BTreeMap<&str, &[u64]> = tensors
        .iter()
        .map(|t| (t.name.as_str(), t.shape.as_slice()))
        .collect();
    let unsupported = |what: String| ModelError::Unsupported {
        path: path.to_string(),
        what,
    };
    let two = |name: &str| -> Option<(u64, u64)> {
        match shapes.get(name) {
            Some([a, b]) => Some((*a, *b)),
            _ => None,
        }
    };
    let (vocab, hidden) = two("model.embed_tokens.weight").ok_or_else(|| {
        unsupported("no config.json beside the weights, and no 2-D model.embed_tokens.weight to infer an architecture from".into())
    })?;
    // Layer index → tensor names under it (without the prefix).
    let mut layers: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for name in shapes.keys() {
        if let Some(rest) = name.strip_prefix("model.layers.") {
            if let Some((i, tail)) = rest.split_once('.') {
                if let Ok(i) = i.parse::<u32>() {
                    layers.entry(i).or_default().push(tail);
                }
            }
        }
    }
    let num_layers = layers.keys().next_back().map_or(0, |l| l + 1);
    if num_layers == 0 {
        return Err(unsupported(
            "no model.layers.N tensors to infer an architecture from".into(),
        ));
    }
    let l0 = |suffix: &str| format!("model.layers.0.{suffix}");
    let has = |name: &str| shapes.contains_key(name);
    let (q_rows, _) = two(&l0("self_attn.q_proj.weight")).ok_or_else(|| {
        unsupported("no model.layers.0.self_attn.q_proj.weight (not Llama-style attention)".into())
    })?;
    let (kv_rows, _) = two(&l0("self_attn.k_proj.weight"))
        .ok_or_else(|| unsupported("no model.layers.0.self_attn.k_proj.weight".into()))?;
    // q/k norms give the head size: one vector shared by the heads, or
    // one per head (Cohere's `[n_h, d]`).
    let (head_dim, qk_norm_per_head) = match shapes.get(l0("self_attn.q_norm.weight").as_str()) {
        Some([d]) => (*d, false),
        Some([_, d]) => (*d, true),
        _ => {
            let d = [128, 64]
                .into_iter()
                .find(|d| q_rows % d == 0 && kv_rows % d == 0)
                .ok_or_else(|| {
                    unsupported(format!(
                        "q/k projections of {q_rows}/{kv_rows} rows: head size unknown"
                    ))
                })?;
            warnings.push(format!(
                "attention heads are not stored: assumed a head size of {d}"
            ));
            (d, false)
        }
    };
    let heads = u32::try_from(q_rows / head_dim).unwrap_or(u32::MAX);
    let kv_heads = u32::try_from(kv_rows / head_dim).unwrap_or(u32::MAX);

    // The MoE layout of a layer, if any: (experts, expert intermediate, shared intermediate, shared gate).
    let moe_of = |i: u32| -> Option<(u32, u64, Option<u64>, bool)> {
        let p = |s: &str| format!("model.layers.{i}.{s}");
        let (experts, first_expert) = if let Some((e, _)) = two(&p("block_sparse_moe.gate.weight"))
        {
            (e, p("block_sparse_moe.experts.0.w1.weight"))
        } else if let Some((e, _)) = two(&p("mlp.gate.weight")) {
            (e, p("mlp.experts.0.gate_proj.weight"))
        } else {
            return None;
        };
        let (inter, _) = two(&first_expert)?;
        let shared = two(&p("mlp.shared_expert.gate_proj.weight"))
            .or_else(|| two(&p("mlp.shared_experts.gate_proj.weight")))
            .map(|(s, _)| s);
        let gate = has(&p("mlp.shared_expert_gate.weight"));
        Some((u32::try_from(experts).ok()?, inter, shared, gate))
    };
    let first_moe = (0..num_layers).find(|&i| moe_of(i).is_some());
    let dense_layer = (0..num_layers).find(|&i| moe_of(i).is_none());
    let intermediate = match dense_layer {
        Some(i) => two(&format!("model.layers.{i}.mlp.gate_proj.weight"))
            .or_else(|| two(&format!("model.layers.{i}.mlp.up_proj.weight")))
            .map(|(r, _)| r)
            .ok_or_else(|| unsupported(format!("layer {i}: no mlp.gate_proj/up_proj weight")))?,
        None => first_moe.and_then(moe_of).map_or(0, |m| m.1),
    };
    let moe = match first_moe {
        None => None,
        Some(i) => {
            let (experts, inter, shared, gate) = moe_of(i).expect("found above");
            warnings.push("experts per token are not stored: assumed 2".into());
            Some(Moe {
                num_experts: experts,
                experts_per_token: 2.min(experts),
                expert_intermediate_size: inter,
                shared_experts: u32::from(shared.is_some()),
                shared_expert_intermediate_size: shared,
                shared_expert_gate: gate,
                dense_layers: i,
                layer_step: None,
                router_bias: has(&format!(
                    "model.layers.{i}.mlp.gate.e_score_correction_bias"
                )),
                mxfp4_experts: false,
            })
        }
    };
    let norms = layers.get(&0).map_or(0, |names| {
        names
            .iter()
            .filter(|n| {
                // Layer-level norms only (`input_layernorm.weight`), not
                // attention-internal ones (`self_attn.q_norm.weight`).
                n.strip_suffix(".weight")
                    .is_some_and(|m| !m.contains('.') && m.contains("norm"))
            })
            .count()
    });
    let dtype = tensors
        .iter()
        .fold(BTreeMap::<Dtype, u64>::new(), |mut m, t| {
            *m.entry(t.dtype).or_default() += t.elements;
            m
        })
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .and_then(|(d, _)| match d {
            Dtype::BF16 => Some("bf16"),
            Dtype::F16 => Some("fp16"),
            Dtype::F32 => Some("fp32"),
            _ => None,
        });
    let spec = ModelSpec {
        name: path.to_string(),
        architecture: "inferred".into(),
        approximate: true,
        num_layers,
        hidden_size: hidden,
        intermediate_size: intermediate,
        num_attention_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        vocab_size: vocab,
        tied_embeddings: !has("lm_head.weight"),
        mlp: MlpKind::Gated,
        norm: NormKind::Rms,
        norms_per_layer: u32::try_from(norms).unwrap_or(2),
        qk_norm: has(&l0("self_attn.q_norm.weight")),
        qk_norm_per_head,
        qkv_bias: has(&l0("self_attn.q_proj.bias")),
        attention_output_bias: has(&l0("self_attn.o_proj.bias")),
        attention_sinks: has(&l0("self_attn.sinks")),
        attention_output_gate: false,
        mlp_bias: dense_layer.is_some_and(|i| has(&format!("model.layers.{i}.mlp.down_proj.bias"))),
        learned_positions: None,
        encoder: false,
        token_types: None,
        pooler: false,
        vision: None,
        moe,
        mla: None,
        sliding_window: None,
        linear_attention: None,
        max_context: None,
        torch_dtype: dtype.map(str::to_string),
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: false,
        multimodal_encoder: None,
    };
    spec.validate().map_err(|source| ModelError::Arch {
        path: path.to_string(),
        source,
    })?;
    Ok((spec, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_text_parses_to_shards_or_names_the_field() {
        let text = "\u{feff}{\"metadata\": {\"total_size\": 96}, \"weight_map\": {\"a\": \"m-1.safetensors\", \"b\": \"m-2.safetensors\", \"c\": \"m-1.safetensors\"}}";
        let m = parse_index(text).unwrap();
        assert_eq!(m.declared_total_size, Some(96));
        assert_eq!(m.shards.len(), 2);
        assert_eq!(m.shards["m-1.safetensors"], vec!["a", "c"]);
        for bad in ["../x.safetensors", "/etc/passwd", "a\\b", "", ".", ".."] {
            let t = format!("{{\"weight_map\": {{\"a\": {}}}}}", serde_json::json!(bad));
            let (field, _) = parse_index(&t).unwrap_err();
            assert_eq!(field, "weight_map", "{bad}");
        }
        assert_eq!(parse_index("[").unwrap_err().0, "(json)");
        let many: serde_json::Map<String, serde_json::Value> = (0..=MAX_SHARDS)
            .map(|k| {
                (
                    format!("t{k}"),
                    serde_json::json!(format!("s{k}.safetensors")),
                )
            })
            .collect();
        let t = serde_json::json!({ "weight_map": many }).to_string();
        assert!(parse_index(&t).unwrap_err().1.contains("shards"));
    }

    /// A file prefix: length + JSON.
    fn file(json: &str) -> Vec<u8> {
        let mut b = (json.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(json.as_bytes());
        b
    }

    fn field(e: FormatError) -> String {
        e.field
    }

    #[test]
    fn per_head_qk_norms_give_the_head_size_and_count_per_head() {
        // A one-layer Cohere-style checkpoint: 2 query heads and 1 KV head
        // of 4, q/k norms stored per head ([n_h, d], [n_kv, d]).
        let shapes: [(&str, &[u64]); 11] = [
            ("model.embed_tokens.weight", &[16, 8]),
            ("model.layers.0.input_layernorm.weight", &[8]),
            ("model.layers.0.self_attn.q_proj.weight", &[8, 8]),
            ("model.layers.0.self_attn.k_proj.weight", &[4, 8]),
            ("model.layers.0.self_attn.v_proj.weight", &[4, 8]),
            ("model.layers.0.self_attn.o_proj.weight", &[8, 8]),
            ("model.layers.0.self_attn.q_norm.weight", &[2, 4]),
            ("model.layers.0.self_attn.k_norm.weight", &[1, 4]),
            ("model.layers.0.mlp.gate_proj.weight", &[12, 8]),
            ("model.layers.0.mlp.up_proj.weight", &[12, 8]),
            ("model.layers.0.mlp.down_proj.weight", &[8, 12]),
        ];
        let mut header = serde_json::Map::new();
        let mut at = 0u64;
        for (name, shape) in shapes {
            let bytes = 2 * shape.iter().product::<u64>();
            header.insert(
                name.into(),
                serde_json::json!({"dtype": "BF16", "shape": shape, "data_offsets": [at, at + bytes]}),
            );
            at += bytes;
        }
        let t = parse_header(&file(&serde_json::Value::Object(header).to_string())).unwrap();
        let (spec, warnings) = infer_spec(&t, "m.safetensors").unwrap();
        assert_eq!(
            (spec.head_dim, spec.num_attention_heads, spec.num_kv_heads),
            (4, 2, 1)
        );
        assert!(spec.qk_norm && spec.qk_norm_per_head);
        assert!(
            !warnings.iter().any(|w| w.contains("head size")),
            "{warnings:?}"
        );
        let l = spec.layer_params(0);
        // q_proj, o_proj and the 2 × 4 q-norm weights; k, v and the 4 k-norm weights.
        assert_eq!(l.attention_sharded, 2 * 64 + 2 * 4);
        assert_eq!(l.attention_kv, 2 * 32 + 4);
    }

    #[test]
    fn parses_tensors_and_metadata() {
        let h = file(
            r#"{"__metadata__": {"format": "pt"},
               "b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
               "a": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
               "s": {"dtype": "F4", "shape": [6], "data_offsets": [32, 35]},
               "z": {"dtype": "I8", "shape": [0, 5], "data_offsets": [35, 35]}}   "#,
        );
        let t = parse_header(&h).unwrap();
        assert_eq!(
            t.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["a", "b", "s", "z"]
        );
        assert_eq!(t[1].elements, 6);
        assert_eq!(t[1].bytes(), 24);
        assert_eq!(t[2].dtype, Dtype::F4);
        assert_eq!(data_len(&t), 35);
        let mut w = Vec::new();
        let s = summarize(&t, None, None, &mut w);
        assert_eq!((s.parameters, s.bytes, s.tensors), (4 + 6 + 6, 35, 4));
        assert_eq!(s.bytes_by_dtype[0], ("F32".to_string(), 24));
        assert!(w.is_empty());
    }

    #[test]
    fn hostile_headers_are_errors() {
        // Length larger than what follows, absurd, zero.
        assert_eq!(
            field(parse_header(&[1, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap_err()),
            "header length"
        );
        assert_eq!(
            field(parse_header(&(1u64 << 63).to_le_bytes()).unwrap_err()),
            "header length"
        );
        assert_eq!(
            field(parse_header(&u64::MAX.to_le_bytes()).unwrap_err()),
            "header length"
        );
        assert_eq!(field(parse_header(&[0; 8]).unwrap_err()), "header length");
        assert_eq!(field(parse_header(&[0; 3]).unwrap_err()), "header length");
        // Not JSON, not an object.
        assert_eq!(field(parse_header(&file("{nope")).unwrap_err()), "header");
        assert_eq!(field(parse_header(&file("[1, 2]")).unwrap_err()), "header");
        assert_eq!(
            field(parse_header(&file("{\"__metadata__\": 3}")).unwrap_err()),
            "__metadata__"
        );
        let bad = |json: &str| parse_header(&file(json)).unwrap_err();
        // Unknown dtype names tensor and dtype.
        let e = bad(r#"{"w": {"dtype": "F12", "shape": [1], "data_offsets": [0, 2]}}"#);
        assert_eq!(e.field, "tensor w: dtype");
        assert!(e.reason.contains("F12"), "{e}");
        // Offsets inconsistent with dtype × shape.
        let e = bad(r#"{"w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}}"#);
        assert_eq!(e.field, "tensor w: data_offsets");
        // Overlap, hole, reversed.
        let e = bad(
            r#"{"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                        "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}"#,
        );
        assert!(e.reason.contains("overlaps tensor a"), "{e}");
        let e = bad(r#"{"a": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}}"#);
        assert!(e.reason.contains("hole"), "{e}");
        let e = bad(r#"{"a": {"dtype": "U8", "shape": [4], "data_offsets": [4, 0]}}"#);
        assert_eq!(e.field, "tensor a: data_offsets");
        // Huge dimensions: overflow of elements or of bits, never an allocation.
        let e = bad(
            r#"{"a": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}"#,
        );
        assert_eq!(e.field, "tensor a: shape");
        let e = bad(
            r#"{"a": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 0]}}"#,
        );
        assert_eq!(e.field, "tensor a: shape");
        let e = bad(r#"{"a": {"dtype": "F16", "shape": [-1], "data_offsets": [0, 0]}}"#);
        assert_eq!(e.field, "tensor a: shape");
        let e = bad(r#"{"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}"#);
        assert!(e.reason.contains("whole bytes"), "{e}");
        let e = bad(r#"{"a": {"dtype": "F16", "shape": [1], "data_offsets": [0]}}"#);
        assert_eq!(e.field, "tensor a: data_offsets");
        let e = bad(r#"{"a": 5}"#);
        assert_eq!(e.field, "tensor a: entry");
        // Bounded lists: more than 64 dimensions, three offsets.
        let dims = vec!["1"; 65].join(",");
        let e = bad(&format!(
            r#"{{"a": {{"dtype": "U8", "shape": [{dims}], "data_offsets": [0, 1]}}}}"#
        ));
        assert_eq!(e.field, "tensor a: shape");
        let e = bad(r#"{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}"#);
        assert_eq!(e.field, "tensor a: data_offsets");
        let e = bad(r#"{"a": {"dtype": 7, "shape": [1], "data_offsets": [0, 1]}}"#);
        assert_eq!(e.field, "tensor a: dtype");
        let e = bad(r#"{"a": {"shape": [1], "data_offsets": [0, 1]}}"#);
        assert_eq!(
            (e.field.as_str(), e.reason.as_str()),
            ("tensor a: dtype", "missing")
        );
        // A name twice.
        let e = bad(
            r#"{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                        "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}"#,
        );
        assert_eq!(e.field, "tensor a");
        // Unknown fields are skipped unread.
        let ok = parse_header(&file(
            r#"{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2], "x": [[{"y": 1}]]}}"#,
        ));
        assert_eq!(ok.unwrap()[0].elements, 2);
    }

    #[test]
    fn packed_gptq_tensors_count_unpacked() {
        // One 4096×4096 GPTQ layer, group 128: qweight int32 [512, 4096],
        // qzeros [32, 512], scales f16 [32, 4096], g_idx [4096], bias f16.
        let json = r#"{
            "l.qweight": {"dtype": "I32", "shape": [512, 4096], "data_offsets": [0, 8388608]},
            "l.qzeros": {"dtype": "I32", "shape": [32, 512], "data_offsets": [8388608, 8454144]},
            "l.scales": {"dtype": "F16", "shape": [32, 4096], "data_offsets": [8454144, 8716288]},
            "l.g_idx": {"dtype": "I32", "shape": [4096], "data_offsets": [8716288, 8732672]},
            "l.bias": {"dtype": "F16", "shape": [4096], "data_offsets": [8732672, 8740864]}}"#;
        let t = parse_header(&file(json)).unwrap();
        let mut w = Vec::new();
        let s = summarize(&t, Some(4), Some("gptq".into()), &mut w);
        assert_eq!(s.parameters, 4096 * 4096 + 4096);
        assert_eq!(s.bytes, 8_740_864);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("unpacked at 4 bits"));
        let mut w = Vec::new();
        assert_eq!(
            summarize(&t, Some(8), None, &mut w).parameters,
            4096 * 2048 + 4096
        );
        let mut w = Vec::new();
        summarize(&t, None, None, &mut w);
        assert!(w[0].contains("assumed"), "{w:?}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = parse_header(&bytes);
        }

        #[test]
        fn random_headers_never_panic(json in "\\{(\"[a-z]\": \\{\"dtype\": \"(F16|U8|F4|X)\", \"shape\": \\[[0-9]{0,12}(, [0-9]{0,20})?\\], \"data_offsets\": \\[[0-9]{1,3}, [0-9]{1,3}\\]\\}, ){0,3}\"z\": 1\\}") {
            let _ = parse_header(&file(&json));
        }
    }
}
