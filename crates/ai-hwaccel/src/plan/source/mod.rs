//! Where a model's architecture comes from: the [`catalog`](super::catalog),
//! a Hugging Face `config.json` (or the model directory holding it), a
//! `.safetensors` file or a sharded model's `model.safetensors.index.json`,
//! a `.gguf` file, or a bare size such as `7b`.
//!
//! [`load_model`] takes what the user typed and tries those in that order.
//! Parsers of the file formats are pure (bytes in, [`ModelSpec`] out) and
//! bound every length and count a file declares; only [`load_model`] reads
//! files, through [`crate::probe::files`].

use serde::{Deserialize, Serialize};

use super::arch::{ArchError, ModelSpec};
use super::catalog;

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

/// Parse a bare size: a number with a `k`/`m`/`b`/`t` suffix (`7b`,
/// `1.5B`, `405b`, `125m`); returns the parameter count.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, suffix) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let scale = match suffix.to_ascii_lowercase().as_str() {
        "k" => 1e3,
        "m" => 1e6,
        "b" => 1e9,
        "t" => 1e12,
        _ => return None,
    };
    let n: f64 = num.trim().parse().ok()?;
    let total = n * scale;
    (n.is_finite() && n > 0.0 && (1e6..=1e14).contains(&total)).then_some(total.round() as u64)
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

/// Resolve what the user typed: a catalog name, then an existing path,
/// then a bare size.
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
    let hint = match catalog::suggestions(arg).as_slice() {
        [] => String::new(),
        s => format!(" (did you mean {}?)", s.join(", ")),
    };
    Err(ModelError::Unknown {
        name: arg.to_string(),
        hint,
    })
}

/// A path argument: `None` when nothing exists there.
fn load_path(_arg: &str) -> Result<Option<LoadedModel>, ModelError> {
    Ok(None)
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
