//! Where a model's architecture comes from: the [`super::catalog`],
//! a Hugging Face `config.json` (or the model directory holding it), a
//! `.safetensors` file or a sharded model's `model.safetensors.index.json`,
//! a `.gguf` file, or a bare size such as `7b`.
//!
//! [`load_model`] takes what the user typed and tries those in that order.
//! Parsers of the file formats are pure (bytes in, [`ModelSpec`] out) and
//! bound every length and count a file declares; only [`load_model`] reads
//! files, through [`crate::probe::files`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::arch::{ArchError, ModelSpec};
use super::catalog;
use crate::probe::files::{self, Opened, PathKind};

pub mod gguf;
pub mod hf_config;
pub mod safetensors;
pub mod unquantized;

/// Where a loaded model's architecture came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelOrigin {
    /// The embedded catalog.
    Catalog {
        /// Catalog id.
        id: String,
        /// URL of the config.json the entry was copied from.
        source: String,
    },
    /// A Hugging Face config.json.
    HfConfig {
        /// The file read.
        path: String,
    },
    /// Safetensors headers (with the config.json beside them, if any).
    Safetensors {
        /// The file read (a .safetensors file or the index json).
        path: String,
    },
    /// A GGUF file.
    Gguf {
        /// The file read.
        path: String,
    },
    /// A bare size: a generic architecture, approximate.
    Size {
        /// The size as typed (`7b`).
        size: String,
        /// Catalog model whose shape was scaled to the size.
        shape_of: String,
    },
}

/// Weights as a checkpoint stores them (exact, from file headers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoredWeights {
    /// Parameters: the sum of the tensors' element counts.
    pub parameters: u64,
    /// Bytes of tensor data.
    pub bytes: u64,
    /// Storage type → bytes of data in it (`BF16`, `F8_E4M3`, `Q4_K`, …).
    pub bytes_by_dtype: Vec<(String, u64)>,
    /// Tensors counted.
    pub tensors: u64,
    /// Quantization the file's own metadata names (GGUF file type, a
    /// `quantization_config` method), if any.
    pub quantization: Option<String>,
    /// GGUF only: bytes of the matrices llama.cpp multiplies (every 2-D
    /// tensor but `token_embd.weight`, which is only looked up), by
    /// storage type and by the largest of 8 and 4 that divides their row
    /// count (`ne[1]`): `(type, 8 | 4, bytes)`. llama.cpp's CPU backend
    /// repacks some of them ([`crate::plan::runtime::llamacpp_repack_bytes`]).
    pub matmul_bytes: Vec<(String, u32, u64)>,
}

/// A resolved model.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedModel {
    /// The architecture.
    pub spec: ModelSpec,
    /// Where it came from.
    pub origin: ModelOrigin,
    /// Exact stored weights, when read from file headers.
    pub weights: Option<StoredWeights>,
    /// Things the user should know (fields defaulted, tensors not
    /// recognised, a size that is approximate).
    pub warnings: Vec<String>,
}

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Not a catalog name, an existing path or a size.
    #[error(
        "unknown model {name:?}: not a catalog model, an existing file or directory, or a size like \"7b\"{hint}"
    )]
    Unknown {
        /// What was typed.
        name: String,
        /// ` (did you mean …?)` or empty.
        hint: String,
    },
    /// A bare size (`1000000b`) outside the sizes planned.
    #[error(
        "model size {name:?} is out of range: {parameters:.3e} parameters, sizes from {MIN_SIZE_PARAMETERS:.0e} (\"1m\") to {MAX_SIZE_PARAMETERS:.0e} (\"100t\") are planned"
    )]
    SizeOutOfRange {
        /// What was typed.
        name: String,
        /// The count it reads as.
        parameters: f64,
    },
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A file is malformed: names the file and the field.
    #[error("{path}: {field}: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// The field or structure at fault (`num_hidden_layers`, `header length`).
        field: String,
        /// Why.
        reason: String,
    },
    /// A well-formed file describes something we do not model.
    #[error("{path}: unsupported: {what}")]
    Unsupported {
        /// The file.
        path: String,
        /// What is unsupported.
        what: String,
    },
    /// The architecture read is unusable.
    #[error("{path}: {source}")]
    Arch {
        /// The file (or catalog id).
        path: String,
        /// The field at fault.
        source: ArchError,
    },
}

/// A malformed header, from a pure parser that does not know the file:
/// the field or structure at fault and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FormatError {
    /// The field or structure (`header length`, `tensor blk.0.attn_q.weight`).
    pub field: String,
    /// Why.
    pub reason: String,
}

impl FormatError {
    /// The error for the file at `path`.
    pub fn at(self, path: &str) -> ModelError {
        ModelError::Malformed {
            path: path.to_string(),
            field: self.field,
            reason: self.reason,
        }
    }
}

/// Smallest bare size planned: 1 M parameters (below it the generic
/// architecture's embedding alone is larger than the model).
pub const MIN_SIZE_PARAMETERS: u64 = 1_000_000;

/// Largest bare size planned: 100 T parameters, about 50 times the largest
/// published model, so its layer count stays within the 10,000 layers a
/// generic architecture may have.
pub const MAX_SIZE_PARAMETERS: u64 = 100_000_000_000_000;

/// What a bare size reads as, in range or not: `None` when `s` is no size.
fn size_value(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, suffix) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let scale = match suffix.to_ascii_lowercase().as_str() {
        "k" => 1e3,
        "m" => 1e6,
        "b" => 1e9,
        "t" => 1e12,
        _ => return None,
    };
    let num = num.trim();
    // Digits and at most one point: no signs, exponents, `inf` or `nan`.
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    (n.is_finite() && n > 0.0).then_some(n * scale)
}

/// Parse a bare size: a number with a `k`/`m`/`b`/`t` suffix (`7b`,
/// `1.5B`, `405b`, `125m`); returns the parameter count, `None` when `s` is
/// not a size or is outside [`MIN_SIZE_PARAMETERS`]..=[`MAX_SIZE_PARAMETERS`].
pub fn parse_size(s: &str) -> Option<u64> {
    let total = size_value(s)?;
    (MIN_SIZE_PARAMETERS as f64..=MAX_SIZE_PARAMETERS as f64)
        .contains(&total)
        .then_some(total.round() as u64)
}

/// A generic dense architecture of about `parameters`: the shape of the
/// dense Llama-family catalog model nearest in size, with its layer count
/// scaled to the size. Flagged approximate: the real model's width, heads
/// and vocabulary may differ.
pub fn generic_spec(size: &str, parameters: u64) -> (ModelSpec, String) {
    let shapes = [
        "llama-3.2-1b",
        "llama-3.2-3b",
        "llama-3.1-8b",
        "llama-2-13b",
        "llama-3.1-70b",
        "llama-3.1-405b",
    ];
    let base = shapes
        .iter()
        .filter_map(|id| catalog::find(id))
        .min_by_key(|m| m.spec.parameters().abs_diff(parameters))
        .expect("catalog has the llama shapes (tested)");
    let mut spec = base.spec.clone();
    let fixed = spec.embedding_params() + spec.lm_head_params() + spec.other_params();
    let per_layer = spec.layer_params(0).total();
    let layers = (parameters.saturating_sub(fixed) as f64 / per_layer as f64).round();
    spec.num_layers = (layers as u32).clamp(1, 10_000);
    spec.name = format!("generic-{}", size.to_ascii_lowercase());
    spec.architecture = "generic".into();
    spec.approximate = true;
    spec.max_context = None;
    (spec, base.id.clone())
}

/// Resolve what the user typed: a catalog name, then an existing path
/// (config.json, a model directory, .safetensors, an index json, .gguf),
/// then a bare size (`7b`, approximate). An unknown name is an error with
/// suggestions from the catalog.
///
/// ```
/// use ai_hwaccel::plan::load_model;
/// let m = load_model("meta-llama/Llama-3.1-8B-Instruct")?;
/// assert_eq!((m.spec.name.as_str(), m.spec.parameters()), ("llama-3.1-8b", 8_030_261_248));
/// assert!(load_model("7b")?.spec.approximate);
/// let e = load_model("lama-3.1-8b").unwrap_err();
/// assert!(e.to_string().contains("did you mean llama-3.1-8b"));
/// # Ok::<(), ai_hwaccel::plan::ModelError>(())
/// ```
pub fn load_model(arg: &str) -> Result<LoadedModel, ModelError> {
    if let Some(m) = catalog::find(arg) {
        return Ok(LoadedModel {
            spec: m.spec.clone(),
            origin: ModelOrigin::Catalog {
                id: m.id.clone(),
                source: m.source.clone(),
            },
            weights: None,
            warnings: Vec::new(),
        });
    }
    if let Some(loaded) = load_path(arg)? {
        return Ok(loaded);
    }
    if let Some(n) = parse_size(arg) {
        let (spec, shape_of) = generic_spec(arg, n);
        let warning = format!(
            "{arg} is a bare size: using a generic dense architecture ({} layers of {shape_of}'s shape, {} parameters); results are approximate",
            spec.num_layers,
            spec.parameters()
        );
        return Ok(LoadedModel {
            spec,
            origin: ModelOrigin::Size {
                size: arg.to_string(),
                shape_of,
            },
            weights: None,
            warnings: vec![warning],
        });
    }
    if let Some(parameters) = size_value(arg) {
        return Err(ModelError::SizeOutOfRange {
            name: arg.to_string(),
            parameters,
        });
    }
    let hint = crate::suggest::hint(&catalog::suggestions(arg));
    Err(ModelError::Unknown {
        name: arg.to_string(),
        hint,
    })
}

/// Largest config.json read.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Most split files a GGUF model may declare.
const MAX_GGUF_SPLITS: u64 = 10_000;

/// A path argument: `None` when nothing exists there. A directory is read
/// for its config.json, safetensors headers (`model.safetensors.index.json`,
/// `model.safetensors`, or a single other index or file) or a single GGUF
/// model; a file by its name: `*.safetensors.index.json`, `*.safetensors`,
/// `*.gguf`, `config.json` or any JSON with a `model_type`.
fn load_path(arg: &str) -> Result<Option<LoadedModel>, ModelError> {
    let path = Path::new(arg);
    let mut loaded = match files::path_kind(path) {
        None => return Ok(None),
        Some(PathKind::Dir) => load_dir(path)?,
        Some(PathKind::File(_)) => load_file(path)?,
        Some(PathKind::Other) => {
            return Err(ModelError::Unsupported {
                path: arg.to_string(),
                what: "not a regular file or a directory".into(),
            });
        }
    };
    loaded.spec.name = arg.to_string();
    Ok(Some(loaded))
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

fn io_at(p: &Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: shown(p),
        source,
    }
}

/// `dir/name` for a file the loader found by itself in a model directory,
/// opened: refused when a link leads it outside the directory
/// ([`files::within`]), and read through the handle that was checked.
pub(crate) fn found_in(dir: &Path, name: &str) -> Result<Opened, ModelError> {
    files::within(dir, name).map_err(|source| ModelError::Io {
        path: shown(&dir.join(name)),
        source,
    })
}

/// As [`found_in`], with a missing file as `None`.
pub(crate) fn found_if_any(dir: &Path, name: &str) -> Result<Option<Opened>, ModelError> {
    match files::within(dir, name) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ModelError::Io {
            path: shown(&dir.join(name)),
            source,
        }),
    }
}

fn load_dir(dir: &Path) -> Result<LoadedModel, ModelError> {
    let names = files::list_dir(dir).map_err(io_at(dir))?;
    let has = |n: &str| names.iter().any(|x| x == n);
    let config = if has("config.json") {
        Some(found_in(dir, "config.json")?)
    } else {
        None
    };
    let mut warnings = Vec::new();
    let weights = if has("model.safetensors.index.json") {
        Some("model.safetensors.index.json")
    } else if has("model.safetensors") {
        Some("model.safetensors")
    } else {
        let of = |suffix: &str| -> Vec<&String> {
            names.iter().filter(|n| n.ends_with(suffix)).collect()
        };
        match (
            of(".safetensors.index.json").as_slice(),
            of(".safetensors").as_slice(),
        ) {
            ([index], _) => Some(index.as_str()),
            ([], [file]) => Some(file.as_str()),
            ([], []) => None,
            (indexes, files) => {
                warnings.push(format!(
                    "{}: {} .safetensors files and {} indexes, none named model.safetensors[.index.json]: weights not read",
                    shown(dir),
                    files.len(),
                    indexes.len()
                ));
                None
            }
        }
    };
    let embedding = if has("modules.json") {
        sentence_transformers_pooling(&found_in(dir, "modules.json")?)?
    } else {
        false
    };
    if let Some(weights) = weights {
        let weights = found_in(dir, weights)?;
        let mut loaded = load_safetensors(&weights, config.as_ref(), warnings, embedding)?;
        if embedding {
            loaded.warnings.push(EMBEDDING_NOTE.into());
        }
        return Ok(loaded);
    }
    if let Some(config) = config {
        let mut loaded = load_config(&config)?;
        warnings.append(&mut loaded.warnings);
        loaded.warnings = warnings;
        if embedding && !loaded.spec.encoder {
            loaded.spec.encoder = true;
            loaded.warnings.push(EMBEDDING_NOTE.into());
        }
        return Ok(loaded);
    }
    let ggufs: Vec<&String> = names
        .iter()
        .filter(|n| n.to_ascii_lowercase().ends_with(".gguf"))
        .collect();
    let first_splits: Vec<&&String> = ggufs
        .iter()
        .filter(|n| split_name(n).is_some_and(|(_, no, _)| no == 1))
        .collect();
    let gguf = match (ggufs.as_slice(), first_splits.as_slice()) {
        ([one], _) => one.as_str(),
        (_, [first])
            if ggufs
                .iter()
                .all(|n| split_name(n).map(|s| s.0) == split_name(first).map(|s| s.0)) =>
        {
            first.as_str()
        }
        ([], _) => {
            return Err(ModelError::Unsupported {
                path: shown(dir),
                what: "no config.json, .safetensors or .gguf file in the directory".into(),
            });
        }
        (many, _) => {
            return Err(ModelError::Unsupported {
                path: shown(dir),
                what: format!(
                    "{} .gguf files ({}): name the one to use",
                    many.len(),
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    };
    let gguf = found_in(dir, gguf)?;
    let mut loaded = load_gguf(&gguf)?;
    warnings.append(&mut loaded.warnings);
    loaded.warnings = warnings;
    Ok(loaded)
}

fn load_file(path: &Path) -> Result<LoadedModel, ModelError> {
    let file = Opened::open(path).map_err(io_at(path))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".safetensors.index.json") || name.ends_with(".safetensors") {
        let config = found_if_any(path.parent().unwrap_or(Path::new("")), "config.json")?;
        return load_safetensors(&file, config.as_ref(), Vec::new(), false);
    }
    if name.ends_with(".gguf") {
        return load_gguf(&file);
    }
    if name.ends_with(".json") {
        if name != "config.json" {
            let text = file
                .read_text_capped(MAX_CONFIG_BYTES)
                .map_err(io_at(path))?;
            let value: serde_json::Value =
                serde_json::from_str(crate::model::text::strip_bom(&text)).map_err(|e| {
                    ModelError::Malformed {
                        path: shown(path),
                        field: "(json)".into(),
                        reason: e.to_string(),
                    }
                })?;
            if value.get("model_type").is_none() {
                return Err(ModelError::Unsupported {
                    path: shown(path),
                    what: "a JSON file without model_type: not a Hugging Face config.json".into(),
                });
            }
        }
        return load_config(&file);
    }
    Err(ModelError::Unsupported {
        path: shown(path),
        what: "not a model file (expected a directory, config.json, *.safetensors, *.safetensors.index.json or *.gguf)"
            .into(),
    })
}

/// A config.json, with the quantization of a ModelOpt `hf_quant_config.json`
/// beside it when the config declares none.
fn read_config(file: &Opened) -> Result<hf_config::HfConfig, ModelError> {
    let path = file.path();
    let text = file
        .read_text_capped(MAX_CONFIG_BYTES)
        .map_err(io_at(path))?;
    let mut config = hf_config::parse_config(&text, &shown(path))?;
    if config.quantization.is_none()
        && let Some(q) = found_if_any(path.parent().unwrap_or(Path::new("")), HF_QUANT_CONFIG)?
    {
        let text = q
            .read_text_capped(MAX_CONFIG_BYTES)
            .map_err(io_at(q.path()))?;
        hf_config::apply_hf_quant_config(&mut config, &text, &shown(q.path()))?;
    }
    Ok(config)
}

/// ModelOpt's quantization file beside a config.json.
const HF_QUANT_CONFIG: &str = "hf_quant_config.json";

fn load_config(file: &Opened) -> Result<LoadedModel, ModelError> {
    let config = read_config(file)?;
    Ok(LoadedModel {
        spec: config.spec,
        origin: ModelOrigin::HfConfig {
            path: shown(file.path()),
        },
        weights: None,
        warnings: config.warnings,
    })
}

/// Largest sentence-transformers `modules.json` read (a few hundred bytes).
const MAX_MODULES_BYTES: u64 = 64 * 1024;

/// What a model directory with a sentence-transformers pooling module is
/// planned as.
const EMBEDDING_NOTE: &str = "modules.json: a sentence-transformers model with a Pooling module, planned as an embedding model (one forward pass per input, no LM head, no KV cache, no decode)";

/// Whether a sentence-transformers `modules.json` (a JSON list of
/// `{"idx", "name", "path", "type"}` modules, the format
/// `SentenceTransformer.save` writes) has a pooling module: the model is
/// run as an embedding model, even when its config.json names a causal-LM
/// class (Qwen3-Embedding). A file of another shape is an error naming it.
fn sentence_transformers_pooling(file: &Opened) -> Result<bool, ModelError> {
    let path = file.path();
    let text = file
        .read_text_capped(MAX_MODULES_BYTES)
        .map_err(io_at(path))?;
    modules_have_pooling(&text).map_err(|e| ModelError::Malformed {
        path: shown(path),
        field: e.field,
        reason: e.reason,
    })
}

/// The pure part of reading a sentence-transformers `modules.json`:
/// whether its list of modules has a `sentence_transformers.*.Pooling` one.
pub fn modules_have_pooling(text: &str) -> Result<bool, FormatError> {
    let bad = |reason: String| FormatError {
        field: "modules".into(),
        reason,
    };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let list = v
        .as_array()
        .ok_or_else(|| bad("not a list of modules".into()))?;
    Ok(list.iter().any(|m| {
        m.get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.starts_with("sentence_transformers.") && t.ends_with(".Pooling"))
    }))
}

/// Safetensors headers (one file or an index) with the config.json beside
/// them, or an architecture inferred from the tensor names without one.
/// `embedding`: the directory is a sentence-transformers model with a
/// pooling module, planned as an encoder.
fn load_safetensors(
    weights: &Opened,
    config: Option<&Opened>,
    mut warnings: Vec<String>,
    embedding: bool,
) -> Result<LoadedModel, ModelError> {
    let weights_path = weights.path();
    let is_index = weights_path
        .to_string_lossy()
        .to_ascii_lowercase()
        .ends_with(".json");
    let tensors = if is_index {
        safetensors::read_index(weights, &mut warnings)?
    } else {
        safetensors::read_file_header(weights)?
    };
    let (mut spec, quantization) = match config {
        Some(c) => {
            let mut config = read_config(c)?;
            warnings.append(&mut config.warnings);
            (config.spec, config.quantization)
        }
        None => {
            let (spec, mut w) = safetensors::infer_spec(&tensors, &shown(weights_path))?;
            warnings.append(&mut w);
            (spec, None)
        }
    };
    spec.encoder |= embedding;
    let weights = safetensors::summarize(
        &tensors,
        quantization.as_ref().and_then(|q| q.bits),
        quantization.map(|q| q.label),
        &mut warnings,
    );
    cross_check(&spec, &weights, &shown(weights_path), &mut warnings);
    Ok(LoadedModel {
        spec,
        origin: ModelOrigin::Safetensors {
            path: shown(weights_path),
        },
        weights: Some(weights),
        warnings,
    })
}

/// `name-00001-of-00003.gguf` → (`name`, 1, 3).
fn split_name(name: &str) -> Option<(&str, u64, u64)> {
    let stem = name
        .strip_suffix(".gguf")
        .or_else(|| name.strip_suffix(".GGUF"))?;
    let cut = stem.len().checked_sub(15)?;
    let (prefix, tail) = (stem.get(..cut)?, stem.get(cut..)?);
    let (no, count) = tail.strip_prefix('-')?.split_once("-of-")?;
    let digits = |s: &str| {
        (s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    Some((prefix, digits(no)?, digits(count)?))
}

fn parse_gguf(file: &Opened) -> Result<gguf::GgufHeader, ModelError> {
    let path = file.path();
    let reader = file.reader().map_err(io_at(path))?;
    gguf::parse(reader, Some(file.len())).map_err(|e| e.at(&shown(path)))
}

/// A GGUF file, and its sibling split files when it is one of several.
fn load_gguf(file: &Opened) -> Result<LoadedModel, ModelError> {
    let path = file.path();
    let header = parse_gguf(file)?;
    let mut warnings = Vec::new();
    let mut metadata = header.metadata;
    let mut tensors = header.tensors;
    let split = match (metadata.get("split.count"), metadata.get("split.no")) {
        (Some(gguf::MetaValue::Uint(count)), no) if *count > 1 => {
            let no = match no {
                Some(gguf::MetaValue::Uint(n)) => *n,
                _ => 0,
            };
            Some((no, *count))
        }
        _ => None,
    };
    if let Some((no, count)) = split {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match split_name(&name) {
            Some((prefix, _, named_count)) if named_count == count && count <= MAX_GGUF_SPLITS => {
                let mut seen: std::collections::BTreeSet<String> = tensors.iter().map(|t| t.name.clone()).collect();
                for i in 1..=count {
                    if i == no + 1 {
                        continue;
                    }
                    let sibling = path.with_file_name(format!("{prefix}-{i:05}-of-{count:05}.gguf"));
                    let Some(part_file) = found_if_any(
                        path.parent().unwrap_or(Path::new("")),
                        &format!("{prefix}-{i:05}-of-{count:05}.gguf"),
                    )?
                    else {
                        return Err(ModelError::Malformed {
                            path: shown(path),
                            field: "split.count".into(),
                            reason: format!("{count} split files, but {} is missing", shown(&sibling)),
                        });
                    };
                    let part = parse_gguf(&part_file)?;
                    if i == 1 {
                        metadata = part.metadata;
                    }
                    for t in part.tensors {
                        if !seen.insert(t.name.clone()) {
                            return Err(ModelError::Malformed {
                                path: shown(&sibling),
                                field: format!("tensor {}", t.name),
                                reason: "also stored in another split file".into(),
                            });
                        }
                        tensors.push(t);
                    }
                }
            }
            _ => warnings.push(format!(
                "{}: split file {} of {count} whose name does not follow NAME-NNNNN-of-NNNNN.gguf: only its own tensors are counted",
                shown(path),
                no + 1
            )),
        }
    }
    let (spec, weights, mut w) = gguf::to_model(&metadata, &tensors, &shown(path))?;
    warnings.append(&mut w);
    cross_check(&spec, &weights, &shown(path), &mut warnings);
    Ok(LoadedModel {
        spec,
        origin: ModelOrigin::Gguf { path: shown(path) },
        weights: Some(weights),
        warnings,
    })
}

/// Warn when the stored tensors and the architecture disagree on the
/// parameter count (they agree for the supported families; a difference
/// means extra modules such as a vision tower or multi-token prediction
/// layers, or a config that does not describe these weights).
fn cross_check(
    spec: &ModelSpec,
    weights: &StoredWeights,
    source: &str,
    warnings: &mut Vec<String>,
) {
    let expected = spec.parameters();
    if weights.parameters != expected {
        let diff = i128::from(weights.parameters) - i128::from(expected);
        warnings.push(format!(
            "{source}: the tensors hold {} parameters but the architecture has {expected} ({diff:+})",
            weights.parameters
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("7b"), Some(7_000_000_000));
        assert_eq!(parse_size("1.5B"), Some(1_500_000_000));
        assert_eq!(parse_size("125m"), Some(125_000_000));
        assert_eq!(parse_size("7"), None);
        assert_eq!(parse_size("b"), None);
        assert_eq!(parse_size("-7b"), None);
        assert_eq!(parse_size("7x"), None);
        assert_eq!(parse_size("1e400b"), None);
        assert_eq!(parse_size("1k"), None); // below 1M: not a model size
    }

    #[test]
    fn generic_size_is_close_and_flagged() {
        for (s, n) in [("7b", 7e9), ("70b", 70e9), ("1b", 1e9), ("400b", 400e9)] {
            let m = load_model(s).unwrap();
            assert!(m.spec.approximate);
            let p = m.spec.parameters() as f64;
            assert!((p - n).abs() / n < 0.1, "{s}: {p}");
            assert!(!m.warnings.is_empty());
        }
    }

    #[test]
    fn catalog_first_then_unknown_with_hint() {
        let m = load_model("mixtral-8x7b").unwrap();
        assert!(matches!(m.origin, ModelOrigin::Catalog { .. }));
        let e = load_model("llama-3.1-9b").unwrap_err().to_string();
        assert!(e.contains("did you mean"), "{e}");
    }
}
