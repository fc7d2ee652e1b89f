//! GGUF headers (llama.cpp's model files): metadata and tensor infos,
//! streamed from any [`Read`] and never the tensor data.
//!
//! Layout (ggml `docs/gguf.md`, versions 2 and 3; version 1 used 32-bit
//! lengths and is refused): magic `GGUF`, `u32` version, `u64` tensor
//! count, `u64` metadata count, the metadata key/values (strings are a
//! `u64` length and bytes; arrays an element type, a `u64` count and the
//! elements, possibly arrays again), then per tensor its name, `u32` number
//! of dimensions, `u64` dimensions (innermost first), `u32` ggml type and
//! `u64` offset into the data section, which starts at the next multiple of
//! `general.alignment` (default 32).
//!
//! Every count and length is checked against the limits below before
//! anything is allocated or skipped, and against the file's size when it is
//! known; tokenizer arrays (hundreds of thousands of strings) are skipped
//! and only counted.
//!
//! [`to_model`] turns the metadata (`{arch}.block_count`,
//! `.embedding_length`, `.attention.head_count`, …) and the tensors present
//! (`blk.0.attn_q.bias`, `output.weight`, …) into a [`ModelSpec`] and the
//! exact [`StoredWeights`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};

use super::{FormatError, ModelError, StoredWeights};
use crate::plan::arch::{LinearAttention, Mla, MlpKind, ModelSpec, Moe, NormKind, SlidingWindow};

/// Most header bytes read (metadata and tensor infos together).
pub const MAX_HEADER_BYTES: u64 = 512 * 1024 * 1024;
/// Longest string accepted anywhere in the header.
pub const MAX_STRING_BYTES: u64 = 16 * 1024 * 1024;
/// Most metadata key/values.
pub const MAX_KV: u64 = 1 << 20;
/// Most tensors.
pub const MAX_TENSORS: u64 = 1 << 20;
/// Most dimensions of a tensor (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// Strings longer than this are skipped, only their length kept (chat
/// templates, licenses).
const KEEP_STRING_BYTES: u64 = 64 * 1024;
/// Integer arrays up to this length keep their values.
const KEEP_ARRAY_INTS: u64 = 1 << 16;
/// Deepest nesting of arrays in arrays.
const MAX_NESTING: u32 = 8;

/// A ggml tensor type: how many elements a block holds and its bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct GgmlType {
    /// `enum ggml_type` value.
    pub id: u32,
    /// Name (`Q4_K`).
    pub name: &'static str,
    /// Elements per block.
    pub block: u64,
    /// Bytes per block.
    pub block_bytes: u64,
}

const fn t(id: u32, name: &'static str, block: u64, block_bytes: u64) -> GgmlType {
    GgmlType {
        id,
        name,
        block,
        block_bytes,
    }
}

/// `enum ggml_type` (ggml `include/ggml.h`) with each block's size from the
/// `block_*` structs of `ggml-common.h` (their `static_assert`s): `QK_K` =
/// 256-element super-blocks for the K, IQ and TQ types. Types 4, 5 were
/// removed long ago; 31–33 and 36–38 (repacked Q4_0/IQ4_NL) were written to
/// files for a while and keep their base types' blocks.
pub const GGML_TYPES: &[GgmlType] = &[
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 18),
    t(3, "Q4_1", 32, 20),
    t(6, "Q5_0", 32, 22),
    t(7, "Q5_1", 32, 24),
    t(8, "Q8_0", 32, 34),
    t(9, "Q8_1", 32, 36),
    t(10, "Q2_K", 256, 84),
    t(11, "Q3_K", 256, 110),
    t(12, "Q4_K", 256, 144),
    t(13, "Q5_K", 256, 176),
    t(14, "Q6_K", 256, 210),
    t(15, "Q8_K", 256, 292),
    t(16, "IQ2_XXS", 256, 66),
    t(17, "IQ2_XS", 256, 74),
    t(18, "IQ3_XXS", 256, 98),
    t(19, "IQ1_S", 256, 50),
    t(20, "IQ4_NL", 32, 18),
    t(21, "IQ3_S", 256, 110),
    t(22, "IQ2_S", 256, 82),
    t(23, "IQ4_XS", 256, 136),
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", 256, 56),
    t(30, "BF16", 1, 2),
    t(31, "Q4_0_4_4", 32, 18),
    t(32, "Q4_0_4_8", 32, 18),
    t(33, "Q4_0_8_8", 32, 18),
    t(34, "TQ1_0", 256, 54),
    t(35, "TQ2_0", 256, 66),
    t(36, "IQ4_NL_4_4", 32, 18),
    t(37, "IQ4_NL_4_8", 32, 18),
    t(38, "IQ4_NL_8_8", 32, 18),
    t(39, "MXFP4", 32, 17),
    t(40, "NVFP4", 64, 36),
    t(41, "Q1_0", 128, 18),
    t(42, "Q2_0", 64, 18),
];

/// The ggml type with value `id`.
pub fn ggml_type(id: u32) -> Option<&'static GgmlType> {
    GGML_TYPES.iter().find(|t| t.id == id)
}

/// `enum llama_ftype` (llama.cpp `include/llama.h`), the value of
/// `general.file_type`: the quantization mix a file was made with.
const FILE_TYPES: &[(u32, &str)] = &[
    (0, "ALL_F32"),
    (1, "MOSTLY_F16"),
    (2, "MOSTLY_Q4_0"),
    (3, "MOSTLY_Q4_1"),
    (4, "MOSTLY_Q4_1_SOME_F16"),
    (7, "MOSTLY_Q8_0"),
    (8, "MOSTLY_Q5_0"),
    (9, "MOSTLY_Q5_1"),
    (10, "MOSTLY_Q2_K"),
    (11, "MOSTLY_Q3_K_S"),
    (12, "MOSTLY_Q3_K_M"),
    (13, "MOSTLY_Q3_K_L"),
    (14, "MOSTLY_Q4_K_S"),
    (15, "MOSTLY_Q4_K_M"),
    (16, "MOSTLY_Q5_K_S"),
    (17, "MOSTLY_Q5_K_M"),
    (18, "MOSTLY_Q6_K"),
    (19, "MOSTLY_IQ2_XXS"),
    (20, "MOSTLY_IQ2_XS"),
    (21, "MOSTLY_Q2_K_S"),
    (22, "MOSTLY_IQ3_XS"),
    (23, "MOSTLY_IQ3_XXS"),
    (24, "MOSTLY_IQ1_S"),
    (25, "MOSTLY_IQ4_NL"),
    (26, "MOSTLY_IQ3_S"),
    (27, "MOSTLY_IQ3_M"),
    (28, "MOSTLY_IQ2_S"),
    (29, "MOSTLY_IQ2_M"),
    (30, "MOSTLY_IQ4_XS"),
    (31, "MOSTLY_IQ1_M"),
    (32, "MOSTLY_BF16"),
    (33, "MOSTLY_Q4_0_4_4"),
    (34, "MOSTLY_Q4_0_4_8"),
    (35, "MOSTLY_Q4_0_8_8"),
    (36, "MOSTLY_TQ1_0"),
    (37, "MOSTLY_TQ2_0"),
    (38, "MOSTLY_MXFP4_MOE"),
    (39, "MOSTLY_NVFP4"),
    (40, "MOSTLY_Q1_0"),
];

/// `LLAMA_FTYPE_GUESSED`: set when llama.cpp guessed the type.
const FILE_TYPE_GUESSED: u64 = 1024;

/// The name of a `general.file_type` value (`MOSTLY_Q4_K_M`).
pub fn file_type_name(v: u64) -> String {
    let guessed = v & FILE_TYPE_GUESSED != 0;
    let base = v & !FILE_TYPE_GUESSED;
    let name = FILE_TYPES
        .iter()
        .find(|(id, _)| u64::from(*id) == base)
        .map_or_else(|| format!("file type {base}"), |(_, n)| (*n).to_string());
    if guessed {
        format!("{name} (guessed)")
    } else {
        name
    }
}

/// A metadata value. Long strings and arrays are summarized, not kept.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    /// Any unsigned integer type.
    Uint(u64),
    /// Any signed integer type.
    Int(i64),
    /// `f32` or `f64`.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string (up to 64 KiB, lossily UTF-8).
    Str(String),
    /// A longer string, skipped.
    LongStr {
        /// Its length in bytes.
        len: u64,
    },
    /// An array.
    Array {
        /// The GGUF type of its elements.
        elem_type: u32,
        /// Elements.
        len: u64,
        /// The values, for integer and boolean arrays of up to 65536.
        ints: Option<Vec<i64>>,
    },
}

/// One tensor info.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufTensor {
    /// Name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Dimensions, innermost first (`token_embd.weight`: `[width, vocab]`).
    pub dims: Vec<u64>,
    /// Storage type.
    pub ggml_type: &'static GgmlType,
    /// Offset in the data section.
    pub offset: u64,
    /// Elements.
    pub elements: u64,
    /// Bytes of data: `elements / block × block_bytes`.
    pub bytes: u64,
}

/// A parsed header.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufHeader {
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata by key.
    pub metadata: BTreeMap<String, MetaValue>,
    /// Tensor infos, in file order.
    pub tensors: Vec<GgufTensor>,
    /// `general.alignment` (default 32).
    pub alignment: u64,
    /// Bytes of header read.
    pub header_bytes: u64,
    /// Where the data section starts.
    pub data_start: u64,
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> FormatError {
    FormatError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// A reader that counts what it consumed and refuses to go past the header
/// budget or the end of a file of known length.
struct Counted<R> {
    inner: R,
    read: u64,
    limit: u64,
}

impl<R: Read> Counted<R> {
    fn reserve(&self, n: u64, what: &str) -> Result<(), FormatError> {
        match self.read.checked_add(n) {
            Some(end) if end <= self.limit => Ok(()),
            _ if self.limit < MAX_HEADER_BYTES => Err(err(
                what,
                format!(
                    "needs {n} bytes at offset {}, past the end of the file",
                    self.read
                ),
            )),
            _ => Err(err(
                what,
                format!(
                    "needs {n} bytes at offset {}, past the {MAX_HEADER_BYTES}-byte header limit",
                    self.read
                ),
            )),
        }
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), FormatError> {
        self.reserve(buf.len() as u64, what)?;
        self.inner.read_exact(buf).map_err(|e| io_err(e, what))?;
        self.read += buf.len() as u64;
        Ok(())
    }

    fn u8(&mut self, what: &str) -> Result<u8, FormatError> {
        let mut b = [0u8; 1];
        self.fill(&mut b, what)?;
        Ok(b[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        let mut b = [0u8; 4];
        self.fill(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &str) -> Result<u64, FormatError> {
        let mut b = [0u8; 8];
        self.fill(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), FormatError> {
        self.reserve(n, what)?;
        let copied = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())
            .map_err(|e| io_err(e, what))?;
        if copied != n {
            return Err(err(what, "the file ends inside it"));
        }
        self.read += n;
        Ok(())
    }

    /// A length-prefixed string: kept when at most `keep` bytes.
    fn string(&mut self, keep: u64, what: &str) -> Result<MetaValue, FormatError> {
        let len = self.u64(what)?;
        if len > MAX_STRING_BYTES {
            return Err(err(
                what,
                format!("string of {len} bytes, more than {MAX_STRING_BYTES}"),
            ));
        }
        if len > keep {
            self.skip(len, what)?;
            return Ok(MetaValue::LongStr { len });
        }
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf, what)?;
        Ok(MetaValue::Str(String::from_utf8_lossy(&buf).into_owned()))
    }

    fn value(&mut self, ty: u32, depth: u32, what: &str) -> Result<MetaValue, FormatError> {
        Ok(match ty {
            0 => MetaValue::Uint(u64::from(self.u8(what)?)),
            1 => MetaValue::Int(i64::from(self.u8(what)? as i8)),
            2 | 3 => {
                let mut b = [0u8; 2];
                self.fill(&mut b, what)?;
                if ty == 2 {
                    MetaValue::Uint(u64::from(u16::from_le_bytes(b)))
                } else {
                    MetaValue::Int(i64::from(i16::from_le_bytes(b)))
                }
            }
            4 => MetaValue::Uint(u64::from(self.u32(what)?)),
            5 => MetaValue::Int(i64::from(self.u32(what)? as i32)),
            6 => MetaValue::Float(f64::from(f32::from_bits(self.u32(what)?))),
            7 => MetaValue::Bool(self.u8(what)? != 0),
            8 => self.string(KEEP_STRING_BYTES, what)?,
            9 => self.array(depth, what)?,
            10 => MetaValue::Uint(self.u64(what)?),
            11 => MetaValue::Int(self.u64(what)? as i64),
            12 => MetaValue::Float(f64::from_bits(self.u64(what)?)),
            other => return Err(err(what, format!("unknown value type {other}"))),
        })
    }

    fn array(&mut self, depth: u32, what: &str) -> Result<MetaValue, FormatError> {
        if depth >= MAX_NESTING {
            return Err(err(
                what,
                format!("arrays nested more than {MAX_NESTING} deep"),
            ));
        }
        let elem_type = self.u32(what)?;
        let len = self.u64(what)?;
        let fixed = match elem_type {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            8 => None,
            9 => None,
            other => return Err(err(what, format!("array of unknown value type {other}"))),
        };
        // The smallest an element can be: its size, a string's length
        // prefix, a nested array's type and count.
        let min = fixed.unwrap_or(if elem_type == 8 { 8 } else { 12 });
        self.reserve(len.saturating_mul(min), what)?;
        match fixed {
            Some(size) if len <= KEEP_ARRAY_INTS && !matches!(elem_type, 6 | 12) => {
                let mut ints = Vec::new();
                for _ in 0..len {
                    ints.push(match self.value(elem_type, depth + 1, what)? {
                        MetaValue::Uint(v) => i64::try_from(v).unwrap_or(i64::MAX),
                        MetaValue::Int(v) => v,
                        MetaValue::Bool(b) => i64::from(b),
                        _ => 0,
                    });
                }
                let _ = size;
                Ok(MetaValue::Array {
                    elem_type,
                    len,
                    ints: Some(ints),
                })
            }
            Some(size) => {
                self.skip(len * size, what)?;
                Ok(MetaValue::Array {
                    elem_type,
                    len,
                    ints: None,
                })
            }
            None => {
                for _ in 0..len {
                    if elem_type == 8 {
                        self.string(0, what)?;
                    } else {
                        self.array(depth + 1, what)?;
                    }
                }
                Ok(MetaValue::Array {
                    elem_type,
                    len,
                    ints: None,
                })
            }
        }
    }
}

fn io_err(e: io::Error, what: &str) -> FormatError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        err(what, "the file ends inside it")
    } else {
        err(what, e.to_string())
    }
}

/// Parse a GGUF header from `reader`; `file_len`, when known, bounds every
/// read and lets the tensors' data ranges be checked against the file.
pub fn parse<R: Read>(reader: R, file_len: Option<u64>) -> Result<GgufHeader, FormatError> {
    let mut r = Counted {
        inner: reader,
        read: 0,
        limit: file_len.map_or(MAX_HEADER_BYTES, |n| n.min(MAX_HEADER_BYTES)),
    };
    let mut magic = [0u8; 4];
    r.fill(&mut magic, "magic")?;
    if &magic != b"GGUF" {
        return Err(err(
            "magic",
            format!("{magic:02x?} is not \"GGUF\": not a GGUF file"),
        ));
    }
    let version = r.u32("version")?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(err(
                "version",
                "GGUF version 1 (32-bit lengths) is not supported; re-convert the model with a current llama.cpp",
            ));
        }
        v if (1..=3).contains(&v.swap_bytes()) => {
            return Err(err("version", "a big-endian GGUF file is not supported"));
        }
        v => {
            return Err(err(
                "version",
                format!("GGUF version {v} is not supported (2 and 3 are)"),
            ));
        }
    }
    let tensor_count = r.u64("tensor_count")?;
    if tensor_count > MAX_TENSORS {
        return Err(err(
            "tensor_count",
            format!("{tensor_count} tensors, more than {MAX_TENSORS}"),
        ));
    }
    let kv_count = r.u64("metadata_kv_count")?;
    if kv_count > MAX_KV {
        return Err(err(
            "metadata_kv_count",
            format!("{kv_count} entries, more than {MAX_KV}"),
        ));
    }

    let mut metadata = BTreeMap::new();
    for i in 0..kv_count {
        let key = match r.string(KEEP_STRING_BYTES, &format!("metadata key #{i}"))? {
            MetaValue::Str(k) => k,
            _ => return Err(err(format!("metadata key #{i}"), "longer than 64 KiB")),
        };
        let ty = r.u32(&key)?;
        let value = r.value(ty, 0, &key)?;
        if metadata.insert(key.clone(), value).is_some() {
            return Err(err(key, "appears twice"));
        }
    }

    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(MetaValue::Uint(a)) if a.is_power_of_two() && *a <= 1 << 30 => *a,
        Some(other) => {
            return Err(err(
                "general.alignment",
                format!("{other:?} is not a power of two"),
            ));
        }
    };

    let mut tensors: Vec<GgufTensor> = Vec::new();
    let mut names = BTreeSet::new();
    for i in 0..tensor_count {
        let what = format!("tensor info #{i}");
        let name = match r.string(KEEP_STRING_BYTES, &what)? {
            MetaValue::Str(n) => n,
            _ => return Err(err(what, "name longer than 64 KiB")),
        };
        let field = format!("tensor {name}");
        let n_dims = r.u32(&field)?;
        if n_dims > MAX_DIMS {
            return Err(err(
                field,
                format!("{n_dims} dimensions, more than {MAX_DIMS}"),
            ));
        }
        let mut dims = Vec::new();
        for _ in 0..n_dims {
            let d = r.u64(&field)?;
            if d > i64::MAX as u64 {
                return Err(err(
                    field,
                    format!("dimension {d} exceeds ggml's int64 range"),
                ));
            }
            dims.push(d);
        }
        let type_id = r.u32(&field)?;
        let ggml_type = ggml_type(type_id)
            .ok_or_else(|| err(&field, format!("unknown ggml type {type_id}")))?;
        let offset = r.u64(&field)?;
        let elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| {
                err(
                    &field,
                    format!("dimensions {dims:?} overflow the element count"),
                )
            })?;
        let row = dims.first().copied().unwrap_or(1);
        if row % ggml_type.block != 0 {
            return Err(err(
                &field,
                format!(
                    "first dimension {row} is not a multiple of {}'s block of {}",
                    ggml_type.name, ggml_type.block
                ),
            ));
        }
        let bytes = (elements / ggml_type.block)
            .checked_mul(ggml_type.block_bytes)
            .ok_or_else(|| err(&field, "byte size overflows"))?;
        if offset % alignment != 0 {
            return Err(err(
                &field,
                format!("offset {offset} is not a multiple of the alignment {alignment}"),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(err(field, "appears twice"));
        }
        tensors.push(GgufTensor {
            name,
            dims,
            ggml_type,
            offset,
            elements,
            bytes,
        });
    }
    let header_bytes = r.read;
    let data_start = header_bytes.div_ceil(alignment) * alignment;

    let mut order: Vec<&GgufTensor> = tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    let mut end = 0u64;
    let mut prev = "";
    for t in &order {
        if t.offset < end {
            return Err(err(
                format!("tensor {}", t.name),
                format!("data at offset {} overlaps tensor {prev}", t.offset),
            ));
        }
        end = t
            .offset
            .checked_add(t.bytes)
            .ok_or_else(|| err(format!("tensor {}", t.name), "offset + size overflows"))?;
        prev = &t.name;
    }
    if let Some(len) = file_len {
        let available = len.saturating_sub(data_start);
        if end > available {
            return Err(err(
                format!("tensor {prev}"),
                format!(
                    "data ends at byte {end} of the data section but the file holds {available}"
                ),
            ));
        }
    }
    Ok(GgufHeader {
        version,
        metadata,
        tensors,
        alignment,
        header_bytes,
        data_start,
    })
}

/// `general.architecture` values [`to_model`] understands.
pub const SUPPORTED_ARCHITECTURES: &[&str] = &[
    "llama",
    "granite",
    "qwen2",
    "qwen2moe",
    "qwen3",
    "qwen3moe",
    "gemma",
    "gemma2",
    "gemma3",
    "phi3",
    "deepseek2",
    "qwen3next",
    "qwen35",
    "qwen35moe",
    "gpt-oss",
    "glm4moe",
    "command-r",
    "llama4",
];

/// Buffers llama.cpp stores that are not model parameters (precomputed
/// RoPE frequency factors; transformers keeps them as non-persistent
/// buffers): counted in bytes only.
fn is_rope_buffer(name: &str) -> bool {
    name.ends_with("rope_freqs.weight") || name.contains("rope_factors_")
}

/// Typed access to metadata, naming the key on error.
struct Meta<'a> {
    map: &'a BTreeMap<String, MetaValue>,
    arch: &'a str,
    path: &'a str,
}

impl Meta<'_> {
    fn malformed(&self, key: &str, reason: impl Into<String>) -> ModelError {
        ModelError::Malformed {
            path: self.path.to_string(),
            field: key.to_string(),
            reason: reason.into(),
        }
    }

    fn uint_key(&self, key: &str) -> Result<Option<u64>, ModelError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(MetaValue::Uint(v)) => Ok(Some(*v)),
            Some(MetaValue::Int(v)) if *v >= 0 => Ok(Some(*v as u64)),
            Some(MetaValue::Array { .. }) => Err(ModelError::Unsupported {
                path: self.path.to_string(),
                what: format!("{key} varies per layer"),
            }),
            Some(other) => Err(self.malformed(
                key,
                format!("expected a non-negative integer, found {other:?}"),
            )),
        }
    }

    fn uint(&self, suffix: &str) -> Result<Option<u64>, ModelError> {
        self.uint_key(&format!("{}.{suffix}", self.arch))
    }

    fn req(&self, suffix: &str) -> Result<u64, ModelError> {
        let key = format!("{}.{suffix}", self.arch);
        self.uint_key(&key)?
            .ok_or_else(|| self.malformed(&key, "missing"))
    }

    fn u32(&self, suffix: &str, v: u64) -> Result<u32, ModelError> {
        u32::try_from(v).map_err(|_| {
            self.malformed(
                &format!("{}.{suffix}", self.arch),
                format!("{v} is too large"),
            )
        })
    }
}

/// The architecture and exact weights of a GGUF model: `metadata` from its
/// (first) file, `tensors` from all its split files.
pub fn to_model(
    metadata: &BTreeMap<String, MetaValue>,
    tensors: &[GgufTensor],
    path: &str,
) -> Result<(ModelSpec, StoredWeights, Vec<String>), ModelError> {
    let mut warnings = Vec::new();
    let arch = match metadata.get("general.architecture") {
        Some(MetaValue::Str(a)) => a.as_str(),
        Some(_) => {
            return Err(ModelError::Malformed {
                path: path.into(),
                field: "general.architecture".into(),
                reason: "not a string".into(),
            });
        }
        None => {
            return Err(ModelError::Malformed {
                path: path.into(),
                field: "general.architecture".into(),
                reason: "missing".into(),
            });
        }
    };
    if !SUPPORTED_ARCHITECTURES.contains(&arch) {
        return Err(ModelError::Unsupported {
            path: path.into(),
            what: format!(
                "general.architecture {arch:?} (supported: {})",
                SUPPORTED_ARCHITECTURES.join(", ")
            ),
        });
    }
    let m = Meta {
        map: metadata,
        arch,
        path,
    };
    let by_name: BTreeMap<&str, &GgufTensor> =
        tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let has = |n: &str| by_name.contains_key(n);

    let block_count = m.u32("block_count", m.req("block_count")?)?;
    // Multi-token-prediction layers (`nextn_predict_layers`) follow the
    // trunk's blocks in `block_count` (llama.cpp `n_layer()` = n_layer_all
    // − n_layer_nextn); llama.cpp skips their tensors unless MTP is on.
    let nextn = match m.uint("nextn_predict_layers")? {
        Some(n) if n >= u64::from(block_count) => {
            return Err(m.malformed(
                &format!("{arch}.nextn_predict_layers"),
                format!("{n} is not below block_count {block_count}"),
            ));
        }
        Some(n) => n as u32,
        None => 0,
    };
    let num_layers = block_count - nextn;
    let hidden = m.req("embedding_length")?;
    let heads = m.u32("attention.head_count", m.req("attention.head_count")?)?;
    let kv_heads = match m.uint("attention.head_count_kv")? {
        Some(v) => m.u32("attention.head_count_kv", v)?,
        None => heads,
    };
    let ffn = m.uint("feed_forward_length")?.filter(|&v| v > 0);

    let vocab = match by_name.get("token_embd.weight").map(|t| t.dims.as_slice()) {
        Some([_, v]) => *v,
        _ => match metadata.get("tokenizer.ggml.tokens") {
            Some(MetaValue::Array { len, .. }) => *len,
            _ => m.uint("vocab_size")?.ok_or_else(|| {
                m.malformed(
                    "tokenizer.ggml.tokens",
                    "no token_embd.weight, token list or vocab_size",
                )
            })?,
        },
    };

    // MoE: experts, the first MoE layer, shared experts.
    let experts = m.uint("expert_count")?.filter(|&e| e > 0);
    let moe = match experts {
        None => None,
        Some(e) => {
            let dense_layers = m.uint("leading_dense_block_count")?.unwrap_or(0);
            let dense_layers = m.u32("leading_dense_block_count", dense_layers)?;
            // Llama 4: layer i routes when (i + 1) % step == 0
            // (interleave_moe_layer_step; llama.cpp src/models/llama4.cpp).
            let step = match m.uint("interleave_moe_layer_step")? {
                Some(k) if k == 0 || k > u64::from(num_layers) => {
                    return Err(m.malformed(
                        &format!("{arch}.interleave_moe_layer_step"),
                        format!("{k} is outside 1..={num_layers}"),
                    ));
                }
                Some(k) => k as u32,
                None => 1,
            };
            let first = format!("blk.{}.", dense_layers.max(step - 1));
            let expert_ffn = match m.uint("expert_feed_forward_length")? {
                Some(v) => v,
                None => ffn.ok_or_else(|| {
                    m.malformed(&format!("{arch}.expert_feed_forward_length"), "missing")
                })?,
            };
            let has_shared = has(&format!("{first}ffn_up_shexp.weight"));
            let shared_experts = match m.uint("expert_shared_count")? {
                Some(n) => m.u32("expert_shared_count", n)?,
                None => u32::from(has_shared),
            };
            let shared_inter = match m.uint("expert_shared_feed_forward_length")? {
                Some(v) => Some(v),
                // DeepSeek stores n_shared experts of expert_ffn each.
                None if m.uint("expert_shared_count")?.is_some() => None,
                None => by_name
                    .get(format!("{first}ffn_up_shexp.weight").as_str())
                    .and_then(|t| t.dims.get(1).copied()),
            };
            Some(Moe {
                num_experts: m.u32("expert_count", e)?,
                experts_per_token: m.u32("expert_used_count", m.req("expert_used_count")?)?,
                expert_intermediate_size: expert_ffn,
                shared_experts,
                shared_expert_intermediate_size: shared_inter.filter(|_| shared_experts > 0),
                shared_expert_gate: has(&format!("{first}ffn_gate_inp_shexp.weight")),
                dense_layers,
                layer_step: (step > 1).then_some(step),
                // DeepSeek-V3's selection bias, or gpt-oss's router bias.
                router_bias: has(&format!("{first}exp_probs_b.bias"))
                    || has(&format!("{first}ffn_gate_inp.bias")),
                // gpt-oss's experts as published (ggml MXFP4, type 39).
                mxfp4_experts: by_name
                    .get(format!("{first}ffn_gate_exps.weight").as_str())
                    .is_some_and(|t| t.ggml_type.name == "MXFP4"),
            })
        }
    };
    let intermediate = match (ffn, &moe) {
        (Some(f), _) => f,
        (None, Some(m)) => m.expert_intermediate_size,
        (None, None) => {
            return Err(m.malformed(&format!("{arch}.feed_forward_length"), "missing"));
        }
    };

    // Multi-head latent attention (DeepSeek-V2/V3).
    let mla = match m.uint("attention.kv_lora_rank")? {
        None => None,
        Some(kv_lora_rank) => {
            let rope = m.req("rope.dimension_count")?;
            let key = match m.uint("attention.key_length_mla")? {
                Some(k) => k,
                None => m.req("attention.key_length")?,
            };
            let value = match m.uint("attention.value_length_mla")? {
                Some(v) => v,
                None => m.req("attention.value_length")?,
            };
            let nope = key.checked_sub(rope).filter(|&n| n > 0).ok_or_else(|| {
                m.malformed(
                    &format!("{arch}.attention.key_length"),
                    format!("{key} is not larger than rope.dimension_count {rope}"),
                )
            })?;
            Some(Mla {
                q_lora_rank: m.uint("attention.q_lora_rank")?.filter(|&r| r > 0),
                kv_lora_rank,
                qk_nope_head_dim: nope,
                qk_rope_head_dim: rope,
                v_head_dim: value,
            })
        }
    };
    let head_dim = match (&mla, m.uint("attention.key_length")?) {
        (Some(mla), _) => mla.v_head_dim,
        (None, Some(d)) => d,
        (None, None) => {
            if heads == 0 || hidden % u64::from(heads) != 0 {
                return Err(m.malformed(
                    &format!("{arch}.attention.key_length"),
                    format!("absent, and embedding_length {hidden} does not divide by head_count {heads}"),
                ));
            }
            hidden / u64::from(heads)
        }
    };

    let window = m.uint("attention.sliding_window")?.filter(|&w| w > 0);
    let sliding_window = match (arch, window) {
        ("llama4", window) => {
            // llama.cpp's llama4 loader: chunked attention of 8192 tokens
            // unless the file sets sliding_window 0, on 3 of every 4 layers
            // (`load_swa_pattern(ml, 4)`); the planner holds a chunk like
            // a window (at most one chunk of cache per chunked layer).
            let off = window.is_none()
                && metadata.contains_key(&format!("{arch}.attention.sliding_window"));
            if off {
                None
            } else {
                let layers = swa_layers(&m, num_layers, 4)?;
                (layers > 0).then_some(SlidingWindow {
                    window: 8192,
                    layers,
                })
            }
        }
        (_, None) => None,
        // llama.cpp: Gemma 2 alternates sliding and global layers; Gemma 3
        // has five sliding layers per global one.
        ("gemma2", Some(w)) => Some(SlidingWindow {
            window: w,
            layers: num_layers.div_ceil(2),
        }),
        ("gemma3", Some(w)) => {
            let pattern = m
                .uint("attention.sliding_window_pattern")?
                .filter(|&p| p > 0)
                .unwrap_or(6);
            Some(SlidingWindow {
                window: w,
                layers: num_layers - u32::try_from(u64::from(num_layers) / pattern).unwrap_or(0),
            })
        }
        // llama.cpp's gpt-oss loader: `load_swa_pattern(ml, 2)`, every
        // other layer from the first (src/models/openai-moe.cpp), unless
        // the file records the pattern.
        ("gpt-oss", Some(w)) => {
            let layers = swa_layers(&m, num_layers, 2)?;
            (layers > 0).then_some(SlidingWindow { window: w, layers })
        }
        (_, Some(w)) => {
            warnings.push(format!(
                "{arch}.attention.sliding_window {w} not applied: which layers slide is not recorded for {arch}"
            ));
            None
        }
    };

    // Gated DeltaNet layers (llama.cpp's qwen3next, qwen35 and qwen35moe
    // loaders, `src/models/qwen3next.cpp`): the ssm.* keys give the
    // shapes (state_size: key and value head dim; group_count: key heads;
    // time_step_rank: value heads; inner_size: their product), and
    // attention.recurrent_layers, else full_attention_interval (default
    // 4), which layers attend fully.
    let linear_attention = if matches!(arch, "qwen3next" | "qwen35" | "qwen35moe") {
        Some(gguf_linear_attention(&m, num_layers)?)
    } else {
        None
    };
    // The first layer with attention tensors (a hybrid's first layers are
    // linear).
    let attn = linear_attention
        .as_ref()
        .map_or(0, |l| l.full_attention_interval - 1);
    let attn_tensor = |n: &str| has(&format!("blk.{attn}.{n}"));

    let file_type = m.uint_key("general.file_type")?;
    // llama-quantize records the importance matrix it used
    // (tools/quantize/quantize.cpp `LLM_KV_QUANTIZE_IMATRIX_*`).
    let imatrix = [
        "quantize.imatrix.file",
        "quantize.imatrix.dataset",
        "quantize.imatrix.entries_count",
        "quantize.imatrix.chunks_count",
    ]
    .iter()
    .any(|k| m.map.contains_key(*k));
    let architecture = match arch {
        "llama" if moe.is_some() => "mixtral",
        "qwen2moe" => "qwen2_moe",
        "qwen3moe" => "qwen3_moe",
        "gemma3" => "gemma3_text",
        "deepseek2" if moe.as_ref().is_some_and(|m| m.router_bias) => "deepseek_v3",
        "deepseek2" => "deepseek_v2",
        "qwen3next" => "qwen3_next",
        "qwen35" => "qwen3_5_text",
        "qwen35moe" => "qwen3_5_moe_text",
        "gpt-oss" => "gpt_oss",
        "glm4moe" => "glm4_moe",
        "command-r" => "cohere",
        other => other,
    };
    let spec = ModelSpec {
        name: path.to_string(),
        architecture: architecture.to_string(),
        approximate: false,
        num_layers,
        hidden_size: hidden,
        intermediate_size: intermediate,
        num_attention_heads: heads,
        // MLA caches one latent for all heads; like the Hugging Face config,
        // count every head as a KV head.
        num_kv_heads: if mla.is_some() { heads } else { kv_heads },
        head_dim,
        vocab_size: vocab,
        tied_embeddings: !has("output.weight"),
        mlp: MlpKind::Gated,
        // Command R: one bias-free LayerNorm before the parallel attention
        // and MLP (llama.cpp src/models/command-r.cpp: attn_norm only).
        norm: if arch == "command-r" {
            NormKind::LayerNoBias
        } else {
            NormKind::Rms
        },
        norms_per_layer: match arch {
            "gemma2" | "gemma3" => 4,
            "command-r" => 1,
            _ => 2,
        },
        qk_norm: attn_tensor("attn_q_norm.weight"),
        // Command R+'s per-head norms: {head_dim, n_head}.
        qk_norm_per_head: by_name
            .get(format!("blk.{attn}.attn_q_norm.weight").as_str())
            .is_some_and(|t| t.dims.len() == 2 && t.dims[1] > 1),
        qkv_bias: attn_tensor("attn_q.bias") || attn_tensor("attn_qkv.bias"),
        attention_output_bias: attn_tensor("attn_output.bias"),
        attention_sinks: attn_tensor("attn_sinks.weight"),
        // Qwen3-Next and Qwen3.5's attention: the query projection also
        // yields an output gate (llama.cpp: n_embd_head_k · n_head · 2).
        attention_output_gate: linear_attention.is_some(),
        mlp_bias: has("blk.0.ffn_down.bias") || has("blk.0.ffn_down_exps.bias"),
        learned_positions: None,
        encoder: false,
        token_types: None,
        pooler: false,
        vision: None,
        moe,
        mla,
        sliding_window,
        linear_attention,
        max_context: m.uint("context_length")?,
        torch_dtype: match file_type {
            Some(0) => Some("fp32".into()),
            Some(1) => Some("fp16".into()),
            Some(32) => Some("bf16".into()),
            _ => None,
        },
        attention_unquantized: false,
        unquantized_layers: Vec::new(),
        quant_group_size: None,
        quant_zero_points: None,
        activations_mxfp4: false,
        gguf_imatrix: imatrix,
        multimodal_encoder: None,
    };
    spec.validate().map_err(|source| ModelError::Arch {
        path: path.to_string(),
        source,
    })?;

    let mut by_type: BTreeMap<&str, u64> = BTreeMap::new();
    let mut matmul: BTreeMap<(&str, u32), u64> = BTreeMap::new();
    let (mut parameters, mut bytes, mut buffers) = (0u64, 0u64, 0u64);
    let (mut mtp_tensors, mut mtp_bytes) = (0u64, 0u64);
    for t in tensors {
        if nextn > 0 && is_mtp_tensor(&t.name, num_layers) {
            mtp_tensors += 1;
            mtp_bytes = mtp_bytes.saturating_add(t.bytes);
            continue;
        }
        bytes = bytes.saturating_add(t.bytes);
        if t.dims.len() == 2 && t.name != "token_embd.weight" {
            let rows = t.dims[1];
            let multiple = if rows % 8 == 0 {
                8
            } else if rows % 4 == 0 {
                4
            } else {
                1
            };
            *matmul.entry((t.ggml_type.name, multiple)).or_default() += t.bytes;
        }
        *by_type.entry(t.ggml_type.name).or_default() += t.bytes;
        if is_rope_buffer(&t.name) {
            buffers += 1;
        } else {
            parameters = parameters.saturating_add(t.elements);
        }
    }
    if buffers > 0 {
        warnings.push(format!(
            "{buffers} RoPE frequency tensor(s) (rope_freqs/rope_factors) are counted in bytes, not parameters"
        ));
    }
    if nextn > 0 {
        warnings.push(format!(
            "{arch}.nextn_predict_layers {nextn}: the {mtp_tensors} multi-token-prediction tensor(s) \
             ({:.2} GiB) are not counted (llama.cpp loads them only for MTP speculative decoding)",
            mtp_bytes as f64 / f64::from(1u32 << 30)
        ));
    }
    let mut bytes_by_dtype: Vec<(String, u64)> = by_type
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    bytes_by_dtype.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let weights = StoredWeights {
        parameters,
        bytes,
        bytes_by_dtype,
        tensors: tensors.len() as u64,
        quantization: file_type.map(file_type_name),
        matmul_bytes: matmul
            .into_iter()
            .map(|((ty, m), b)| (ty.to_string(), m, b))
            .collect(),
    };
    Ok((spec, weights, warnings))
}

/// Layers with a sliding (or chunked) window as llama.cpp's
/// `load_swa_pattern(ml, n)` sets them: the file's
/// `attention.sliding_window_pattern` array of flags, else its number `n`
/// (default `default`), layer `i` sliding when `i % n < n − 1`.
fn swa_layers(m: &Meta, num_layers: u32, default: u64) -> Result<u32, ModelError> {
    let key = format!("{}.attention.sliding_window_pattern", m.arch);
    Ok(match m.map.get(&key) {
        Some(MetaValue::Array {
            ints: Some(flags), ..
        }) => flags
            .iter()
            .take(num_layers as usize)
            .filter(|&&f| f != 0)
            .count() as u32,
        Some(MetaValue::Array { .. }) => {
            return Err(m.malformed(&key, "expected an array of booleans"));
        }
        _ => {
            let n = m
                .uint("attention.sliding_window_pattern")?
                .unwrap_or(default)
                .max(1);
            (0..num_layers)
                .filter(|&i| u64::from(i) % n < n - 1)
                .count() as u32
        }
    })
}

/// A multi-token-prediction tensor: one of the blocks after the trunk's
/// `layers`, or a `nextn.` tensor.
fn is_mtp_tensor(name: &str, layers: u32) -> bool {
    if name.starts_with("nextn.") {
        return true;
    }
    name.strip_prefix("blk.")
        .and_then(|rest| rest.split_once('.'))
        .and_then(|(i, _)| i.parse::<u32>().ok())
        .is_some_and(|i| i >= layers)
}

/// The Gated DeltaNet shapes and layer pattern of a hybrid GGUF.
fn gguf_linear_attention(m: &Meta, num_layers: u32) -> Result<LinearAttention, ModelError> {
    let arch = m.arch;
    let state = m.req("ssm.state_size")?;
    let value_heads = m.u32("ssm.time_step_rank", m.req("ssm.time_step_rank")?)?;
    let inner = m.req("ssm.inner_size")?;
    if inner != state.saturating_mul(u64::from(value_heads)) {
        return Err(m.malformed(
            &format!("{arch}.ssm.inner_size"),
            format!("{inner} is not ssm.state_size {state} × ssm.time_step_rank {value_heads}"),
        ));
    }
    let interval = match m.map.get(&format!("{arch}.attention.recurrent_layers")) {
        Some(MetaValue::Array {
            ints: Some(flags), ..
        }) => {
            let key = format!("{arch}.attention.recurrent_layers");
            let trunk = flags.get(..num_layers as usize).ok_or_else(|| {
                m.malformed(
                    &key,
                    format!("{} entries for {num_layers} layers", flags.len()),
                )
            })?;
            let first = trunk
                .iter()
                .position(|&r| r == 0)
                .ok_or_else(|| m.malformed(&key, "no layer attends fully"))?;
            let interval = first as u32 + 1;
            if let Some(i) =
                (0..num_layers).find(|&i| (trunk[i as usize] == 0) != ((i + 1) % interval == 0))
            {
                return Err(ModelError::Unsupported {
                    path: m.path.to_string(),
                    what: format!(
                        "{key}[{i}]: only full attention every {interval} layers is modelled"
                    ),
                });
            }
            interval
        }
        Some(MetaValue::Array { .. }) | Some(_) => {
            return Err(m.malformed(
                &format!("{arch}.attention.recurrent_layers"),
                "expected an array of booleans",
            ));
        }
        None => match m.uint("full_attention_interval")? {
            Some(v) if v == 0 || v > u64::from(num_layers) => {
                return Err(m.malformed(
                    &format!("{arch}.full_attention_interval"),
                    format!("{v} is outside 1..={num_layers}"),
                ));
            }
            Some(v) => v as u32,
            None => 4,
        },
    };
    Ok(LinearAttention {
        num_key_heads: m.u32("ssm.group_count", m.req("ssm.group_count")?)?,
        num_value_heads: value_heads,
        key_head_dim: state,
        value_head_dim: state,
        conv_kernel: m.req("ssm.conv_kernel")?,
        full_attention_interval: interval,
        ssm_state_dtype: None,
    })
}

/// Split files: `split.count` and `split.no` of a header, if it is one of
/// several (`llama-gguf-split`).
pub fn split_info(h: &GgufHeader) -> Option<(u64, u64)> {
    let get = |k: &str| match h.metadata.get(k) {
        Some(MetaValue::Uint(v)) => Some(*v),
        _ => None,
    };
    let count = get("split.count")?;
    (count > 1).then(|| (get("split.no").unwrap_or(0), count))
}

/// A tiny GGUF writer for tests.
#[cfg(test)]
pub(crate) mod writer {
    /// A metadata value to write.
    pub enum W {
        U32(u32),
        U64(u64),
        Str(&'static str),
        Strings(u64),
        F32(f32),
        Raw(u32, Vec<u8>),
    }

    pub fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    /// A header (no data) with `kvs` and tensors `(name, dims, type, offset)`.
    pub fn header(
        version: u32,
        kvs: &[(&str, W)],
        tensors: &[(&str, Vec<u64>, u32, u64)],
    ) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
        for (k, v) in kvs {
            string(&mut out, k);
            match v {
                W::U32(x) => {
                    out.extend_from_slice(&4u32.to_le_bytes());
                    out.extend_from_slice(&x.to_le_bytes());
                }
                W::U64(x) => {
                    out.extend_from_slice(&10u32.to_le_bytes());
                    out.extend_from_slice(&x.to_le_bytes());
                }
                W::F32(x) => {
                    out.extend_from_slice(&6u32.to_le_bytes());
                    out.extend_from_slice(&x.to_le_bytes());
                }
                W::Str(s) => {
                    out.extend_from_slice(&8u32.to_le_bytes());
                    string(&mut out, s);
                }
                W::Strings(n) => {
                    out.extend_from_slice(&9u32.to_le_bytes());
                    out.extend_from_slice(&8u32.to_le_bytes());
                    out.extend_from_slice(&n.to_le_bytes());
                    for i in 0..*n {
                        string(&mut out, &format!("tok{i}"));
                    }
                }
                W::Raw(ty, bytes) => {
                    out.extend_from_slice(&ty.to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
        }
        for (name, dims, ty, offset) in tensors {
            string(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::writer::{W, header};
    use super::*;
    use std::io::Cursor;

    fn parse_bytes(b: &[u8]) -> Result<GgufHeader, FormatError> {
        parse(Cursor::new(b), None)
    }

    /// A two-layer Llama with Q4_K matrices.
    fn tiny_llama() -> Vec<u8> {
        let h = 256u64;
        let mut tensors = Vec::new();
        let mut offset = 0u64;
        let mut add = |name: String, dims: Vec<u64>, ty: u32| {
            let t = ggml_type(ty).unwrap();
            let bytes = dims.iter().product::<u64>() / t.block * t.block_bytes;
            tensors.push((name, dims, ty, offset));
            offset += bytes.div_ceil(32) * 32;
        };
        add("token_embd.weight".into(), vec![h, 1000], 12);
        for i in 0..2 {
            add(format!("blk.{i}.attn_norm.weight"), vec![h], 0);
            add(format!("blk.{i}.attn_q.weight"), vec![h, h], 12);
            add(format!("blk.{i}.attn_k.weight"), vec![h, 64], 12);
            add(format!("blk.{i}.attn_v.weight"), vec![h, 64], 14);
            add(format!("blk.{i}.attn_output.weight"), vec![h, h], 12);
            add(format!("blk.{i}.ffn_norm.weight"), vec![h], 0);
            add(format!("blk.{i}.ffn_gate.weight"), vec![h, 512], 12);
            add(format!("blk.{i}.ffn_up.weight"), vec![h, 512], 12);
            add(format!("blk.{i}.ffn_down.weight"), vec![512, h], 14);
        }
        add("output_norm.weight".into(), vec![h], 0);
        add("rope_freqs.weight".into(), vec![32], 0);
        let refs: Vec<(&str, Vec<u64>, u32, u64)> = tensors
            .iter()
            .map(|(n, d, t, o)| (n.as_str(), d.clone(), *t, *o))
            .collect();
        header(
            3,
            &[
                ("general.architecture", W::Str("llama")),
                ("general.file_type", W::U32(15)),
                ("llama.block_count", W::U32(2)),
                ("llama.embedding_length", W::U32(256)),
                ("llama.feed_forward_length", W::U32(512)),
                ("llama.attention.head_count", W::U32(4)),
                ("llama.attention.head_count_kv", W::U32(1)),
                ("llama.context_length", W::U64(4096)),
                ("llama.rope.freq_base", W::F32(500000.0)),
                ("tokenizer.ggml.tokens", W::Strings(1000)),
            ],
            &refs,
        )
    }

    #[test]
    fn tiny_llama_round_trip() {
        let b = tiny_llama();
        let h = parse_bytes(&b).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.tensors.len(), 21);
        assert_eq!(
            h.metadata["tokenizer.ggml.tokens"],
            MetaValue::Array {
                elem_type: 8,
                len: 1000,
                ints: None
            }
        );
        assert_eq!(h.data_start % 32, 0);
        let (spec, w, warnings) = to_model(&h.metadata, &h.tensors, "t.gguf").unwrap();
        assert_eq!(
            (spec.num_layers, spec.hidden_size, spec.intermediate_size),
            (2, 256, 512)
        );
        assert_eq!(
            (spec.num_attention_heads, spec.num_kv_heads, spec.head_dim),
            (4, 1, 64)
        );
        assert_eq!((spec.vocab_size, spec.max_context), (1000, Some(4096)));
        assert!(spec.tied_embeddings);
        assert_eq!(w.parameters, spec.parameters());
        assert_eq!(w.quantization.as_deref(), Some("MOSTLY_Q4_K_M"));
        // Q4_K: 144 bytes per 256 elements.
        let q4k: u64 = h
            .tensors
            .iter()
            .filter(|t| t.ggml_type.name == "Q4_K")
            .map(|t| t.elements / 256 * 144)
            .sum();
        assert_eq!(
            w.bytes_by_dtype
                .iter()
                .find(|(n, _)| n == "Q4_K")
                .unwrap()
                .1,
            q4k
        );
        assert_eq!(w.tensors, 21);
        assert!(warnings.iter().any(|w| w.contains("RoPE")), "{warnings:?}");
        // The data section is checked against the file length.
        let end = h.data_start + h.tensors.iter().map(|t| t.offset + t.bytes).max().unwrap();
        assert!(parse(Cursor::new(&b), Some(end)).is_ok());
        let e = parse(Cursor::new(&b), Some(end - 1)).unwrap_err();
        assert!(e.field.starts_with("tensor "), "{e}");
    }

    #[test]
    fn versions_and_magic() {
        let mut b = tiny_llama();
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(parse_bytes(&b).unwrap_err().reason.contains("version 1"));
        b[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(parse_bytes(&b).unwrap_err().reason.contains("big-endian"));
        b[4..8].copy_from_slice(&2u32.to_le_bytes());
        assert!(parse_bytes(&b).is_ok());
        b[0] = b'X';
        assert_eq!(parse_bytes(&b).unwrap_err().field, "magic");
        assert_eq!(parse_bytes(b"GG").unwrap_err().field, "magic");
    }

    #[test]
    fn hostile_counts_and_lengths_are_errors() {
        // Counts beyond the limits.
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        assert_eq!(parse_bytes(&b).unwrap_err().field, "tensor_count");
        let mut b = header(3, &[], &[]);
        b[16..24].copy_from_slice(&(MAX_KV + 1).to_le_bytes());
        assert_eq!(parse_bytes(&b).unwrap_err().field, "metadata_kv_count");
        // A KV count the file cannot hold fails at the end of the file.
        let mut b = header(3, &[], &[]);
        b[16..24].copy_from_slice(&1000u64.to_le_bytes());
        assert!(parse_bytes(&b).unwrap_err().reason.contains("ends"));
        // A string claiming 2^63 bytes.
        let b = header(
            3,
            &[("k", W::Raw(8, (1u64 << 63).to_le_bytes().to_vec()))],
            &[],
        );
        let e = parse_bytes(&b).unwrap_err();
        assert_eq!(e.field, "k");
        assert!(e.reason.contains("more than"), "{e}");
        // An array claiming 2^60 u8s, and 2^60 strings: refused before reading.
        let mut raw = 0u32.to_le_bytes().to_vec();
        raw.extend_from_slice(&(1u64 << 60).to_le_bytes());
        let e = parse_bytes(&header(3, &[("a", W::Raw(9, raw))], &[])).unwrap_err();
        assert!(e.reason.contains("limit"), "{e}");
        let mut raw = 8u32.to_le_bytes().to_vec();
        raw.extend_from_slice(&(1u64 << 60).to_le_bytes());
        let e = parse(
            Cursor::new(header(3, &[("a", W::Raw(9, raw))], &[])),
            Some(100),
        )
        .unwrap_err();
        assert!(e.reason.contains("end of the file"), "{e}");
        // Nested arrays beyond the depth limit.
        let mut raw = Vec::new();
        for _ in 0..20 {
            raw.extend_from_slice(&9u32.to_le_bytes());
            raw.extend_from_slice(&1u64.to_le_bytes());
        }
        let e = parse_bytes(&header(3, &[("n", W::Raw(9, raw))], &[])).unwrap_err();
        assert!(e.reason.contains("nested"), "{e}");
        // Unknown value type, duplicate key.
        assert!(
            parse_bytes(&header(3, &[("x", W::Raw(99, vec![]))], &[]))
                .unwrap_err()
                .reason
                .contains("unknown value type")
        );
        let e = parse_bytes(&header(3, &[("x", W::U32(1)), ("x", W::U32(2))], &[])).unwrap_err();
        assert_eq!(e.field, "x");
        // Tensors: too many dims, unknown type, overflow, block mismatch,
        // misaligned, overlapping, duplicate.
        let one = |dims: Vec<u64>, ty: u32, off: u64| {
            parse_bytes(&header(3, &[], &[("w", dims, ty, off)])).unwrap_err()
        };
        assert!(one(vec![1; 5], 0, 0).reason.contains("dimensions"));
        let e = one(vec![4], 99, 0);
        assert_eq!(e.field, "tensor w");
        assert!(e.reason.contains("unknown ggml type 99"), "{e}");
        assert!(
            one(vec![1 << 40, 1 << 40], 0, 0)
                .reason
                .contains("overflow")
        );
        assert!(one(vec![u64::MAX], 0, 0).reason.contains("int64"));
        assert!(one(vec![100], 12, 0).reason.contains("block"));
        assert!(one(vec![32], 0, 7).reason.contains("alignment"));
        let e = parse_bytes(&header(
            3,
            &[],
            &[("a", vec![64], 0, 0), ("b", vec![64], 0, 128)],
        ))
        .unwrap_err();
        assert!(e.reason.contains("overlaps"), "{e}");
        let e = parse_bytes(&header(
            3,
            &[],
            &[("a", vec![8], 0, 0), ("a", vec![8], 0, 64)],
        ))
        .unwrap_err();
        assert!(e.reason.contains("twice"), "{e}");
        // Alignment must be a power of two.
        let e = parse_bytes(&header(3, &[("general.alignment", W::U32(24))], &[])).unwrap_err();
        assert_eq!(e.field, "general.alignment");
    }

    #[test]
    fn model_errors_name_keys() {
        let h = parse_bytes(&header(
            3,
            &[("general.architecture", W::Str("mamba"))],
            &[],
        ))
        .unwrap();
        let e = to_model(&h.metadata, &h.tensors, "m.gguf").unwrap_err();
        assert!(
            matches!(e, ModelError::Unsupported { .. }) && e.to_string().contains("deepseek2"),
            "{e}"
        );
        let h = parse_bytes(&header(
            3,
            &[("general.architecture", W::Str("llama"))],
            &[],
        ))
        .unwrap();
        let e = to_model(&h.metadata, &h.tensors, "m.gguf").unwrap_err();
        assert!(
            e.to_string().contains("m.gguf: llama.block_count: missing"),
            "{e}"
        );
        let h = parse_bytes(&header(
            3,
            &[
                ("general.architecture", W::Str("llama")),
                ("llama.block_count", W::Str("x")),
            ],
            &[],
        ))
        .unwrap();
        let e = to_model(&h.metadata, &h.tensors, "m.gguf").unwrap_err();
        assert!(e.to_string().contains("llama.block_count: expected"), "{e}");
        let h = parse_bytes(&header(3, &[], &[])).unwrap();
        assert!(
            to_model(&h.metadata, &h.tensors, "m")
                .unwrap_err()
                .to_string()
                .contains("general.architecture")
        );
    }

    #[test]
    fn file_type_names() {
        assert_eq!(file_type_name(15), "MOSTLY_Q4_K_M");
        assert_eq!(file_type_name(38), "MOSTLY_MXFP4_MOE");
        assert_eq!(file_type_name(1024 | 7), "MOSTLY_Q8_0 (guessed)");
        assert_eq!(file_type_name(200), "file type 200");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let mut b = b"GGUF\x03\0\0\0".to_vec();
            b.extend_from_slice(&bytes);
            let _ = parse_bytes(&bytes);
            let _ = parse_bytes(&b);
        }

        #[test]
        fn corrupted_headers_never_panic(at in 0usize..4096, byte in proptest::num::u8::ANY, cut in 0usize..4096) {
            let mut b = tiny_llama();
            let at = at % b.len();
            b[at] = byte;
            b.truncate(cut.max(1).min(b.len()));
            if let Ok(h) = parse_bytes(&b) {
                let _ = to_model(&h.metadata, &h.tensors, "x");
            }
        }
    }
}
