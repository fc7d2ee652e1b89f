//! The embedded catalog of popular open models with their exact
//! architectures (`models.toml` next to this file, compiled in and parsed
//! once). Each entry cites the `config.json` it was copied from and, where
//! the Hub publishes one, the exact parameter total a test reproduces.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::arch::ModelSpec;

const MODELS_TOML: &str = include_str!("models.toml");

/// What a model is made for, as its model card (the catalog's `card` URL)
/// states it.
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
#[serde(rename_all = "snake_case")]
pub enum Use {
    /// Dialogue and instruction following (an instruct/chat variant exists).
    Chat,
    /// Writing and completing code (a code model, or a card that names
    /// coding as a primary use).
    Code,
    /// Long step-by-step reasoning (a thinking mode or a card that names
    /// reasoning as a primary use).
    Reasoning,
    /// Text embeddings for retrieval.
    Embedding,
    /// Image input.
    Vision,
}

impl Use {
    /// Every use, in display order.
    pub const ALL: [Use; 5] = [
        Use::Chat,
        Use::Code,
        Use::Reasoning,
        Use::Embedding,
        Use::Vision,
    ];

    /// The name used in options and JSON (`chat`).
    pub fn as_str(self) -> &'static str {
        match self {
            Use::Chat => "chat",
            Use::Code => "code",
            Use::Reasoning => "reasoning",
            Use::Embedding => "embedding",
            Use::Vision => "vision",
        }
    }

    /// The use named `s` (case-insensitive), if any.
    pub fn parse(s: &str) -> Option<Use> {
        let s = s.trim();
        Use::ALL
            .into_iter()
            .find(|u| u.as_str().eq_ignore_ascii_case(s))
    }

    /// Parse a comma-separated list of uses (`code,reasoning`); an unknown
    /// name is an error with a "did you mean" hint and the known names.
    pub fn parse_list(s: &str) -> Result<Vec<Use>, String> {
        let mut uses = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let u = Use::parse(part).ok_or_else(|| {
                let names = Use::ALL.map(Use::as_str);
                format!(
                    "unknown use {part:?}{} (known: {})",
                    crate::suggest::hint(&crate::suggest::suggest(part, names)),
                    names.join(", ")
                )
            })?;
            if !uses.contains(&u) {
                uses.push(u);
            }
        }
        if uses.is_empty() {
            return Err(format!(
                "no use given (known: {})",
                Use::ALL.map(Use::as_str).join(", ")
            ));
        }
        Ok(uses)
    }
}

impl std::fmt::Display for Use {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One catalog model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    /// Short name: lowercase, `-`-joined (`llama-3.1-8b`).
    pub id: String,
    /// Other names it is known by (Hugging Face repository ids, …).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The parameter total the Hugging Face Hub reports for it (see
    /// [`Self::hub_parameter_total`] for what it counts).
    pub published_parameters: Option<u64>,
    /// Multi-token-prediction modules the published checkpoint stores
    /// beside the model (Qwen3-Next's `mtp.*`): counted by the Hub, not by
    /// the spec, since plain decoding never runs them.
    #[serde(default)]
    pub mtp_modules: u32,
    /// Each stored MTP module also holds its own token embedding and output
    /// head, `2·V·h` (GLM-4.5: `model.layers.N.embed_tokens` and
    /// `shared_head.head` beside `enorm`, `hnorm`, `eh_proj`,
    /// `shared_head.norm` and a decoder layer; lmdeploy and vLLM
    /// `glm4_moe_mtp.py`).
    #[serde(default)]
    pub mtp_embeddings: bool,
    /// The published checkpoint also stores BERT's `embeddings.position_ids`
    /// buffer (one int64 per position row, `1 × max_position_embeddings`),
    /// which transformers wrote into checkpoints before 4.31 and the Hub
    /// counts as elements: not a parameter.
    #[serde(default)]
    pub position_ids_buffer: bool,
    /// The vision tower and projector the published checkpoint stores,
    /// where the config.json copy the entry is checked against omits its
    /// `vision_config` (Llama 4: the copy keeps `text_config` only). Parsing
    /// the catalog makes it the spec's [`ModelSpec::vision`]; a spec that
    /// has its own is refused with it (counted twice).
    #[serde(default)]
    pub stored_vision: Option<crate::plan::arch::VisionTower>,
    /// A decoder published as an embedding model (Qwen3-Embedding): its
    /// config.json names the causal-LM class (`Qwen3ForCausalLM`), but the
    /// checkpoint stores the bare decoder without an LM head and it is run
    /// as sentence-transformers runs it, one forward pass per input pooled
    /// on the last token. The spec is the config's with
    /// [`ModelSpec::encoder`] set: no LM head, no KV cache, no decode.
    #[serde(default)]
    pub decoder_embedding: bool,
    /// URL of the config.json the architecture comes from.
    pub source: String,
    /// The model family as its publisher names it (`Llama 3.1`, `Qwen2.5-Coder`).
    pub family: String,
    /// What the model is for, from its model card (`card`); empty for base
    /// models whose card names no use beyond text generation (OPT).
    #[serde(default)]
    pub uses: Vec<Use>,
    /// URL of the model card `uses` are read from (the instruct/chat
    /// variant's card where the catalog entry is the base model).
    pub card: String,
    /// The architecture.
    pub spec: ModelSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalog {
    model: Vec<CatalogModel>,
}

impl CatalogModel {
    /// What the Hub's safetensors total counts for the published checkpoint:
    /// the spec's parameters, the MXFP4 scales
    /// ([`ModelSpec::hub_parameter_total`]) and the stored MTP modules
    /// ([`ModelSpec::mtp_module_params`]), and a stored `position_ids`
    /// buffer ([`Self::position_ids_buffer`]). Tests check it equals
    /// `published_parameters`.
    pub fn hub_parameter_total(&self) -> u64 {
        let buffer = if self.position_ids_buffer {
            self.spec.learned_positions.unwrap_or(0)
        } else {
            0
        };
        let mtp_embeddings = if self.mtp_embeddings {
            2 * self.spec.vocab_size * self.spec.hidden_size
        } else {
            0
        };
        // The stored tower is the spec's own once parsed (parse_catalog),
        // so the spec's total counts it.
        self.spec.hub_parameter_total()
            + u64::from(self.mtp_modules) * (self.spec.mtp_module_params() + mtp_embeddings)
            + buffer
    }
}

fn parse_catalog(text: &str) -> Result<Vec<CatalogModel>, toml::de::Error> {
    let mut models = toml::from_str::<Catalog>(text)?.model;
    for m in &mut models {
        m.spec.name = m.id.clone();
        // The published checkpoint's encoder where the catalog's copy of
        // its config keeps the text model only (Llama 4): the spec holds it
        // as a config with its vision_config would (vLLM and SGLang load
        // it; the plans say llama.cpp does not).
        if let Some(v) = &m.stored_vision {
            if m.spec.vision.is_some() {
                return Err(serde::de::Error::custom(format!(
                    "{}: stored_vision beside spec.vision counts the tower twice",
                    m.id
                )));
            }
            m.spec.vision = Some(v.clone());
            if m.spec.multimodal_encoder.is_none() {
                m.spec.multimodal_encoder = Some(crate::plan::arch::MultimodalEncoder {
                    layers: v.num_layers,
                    hidden_size: v.hidden_size,
                });
            }
        }
    }
    Ok(models)
}

static CATALOG: LazyLock<Vec<CatalogModel>> =
    LazyLock::new(|| parse_catalog(MODELS_TOML).expect("embedded models.toml parses (tested)"));

/// Every catalog model, in file order.
pub fn all() -> &'static [CatalogModel] {
    &CATALOG
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '/')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The model named `name`: its id or an alias, ignoring case and the
/// separators `-`, `_` and spaces (`Llama-3.1-8B`, `meta-llama/Llama-3.1-8B`,
/// `llama3.1-8b` all resolve). A repository id also matches without its
/// owner (`Llama-3.1-8B-Instruct`).
pub fn find(name: &str) -> Option<&'static CatalogModel> {
    let q = squash(name.trim());
    if q.is_empty() {
        return None;
    }
    let names = |m: &'static CatalogModel| std::iter::once(&m.id).chain(&m.aliases);
    all()
        .iter()
        .find(|m| names(m).any(|n| squash(n) == q))
        .or_else(|| {
            all().iter().find(|m| {
                names(m).any(|n| n.rsplit('/').next().is_some_and(|tail| squash(tail) == q))
            })
        })
}

/// Catalog ids closest to `name`, for "did you mean" messages: the shared
/// matcher ([`crate::suggest`]) over ids, aliases and repository names.
pub fn suggestions(name: &str) -> Vec<&'static str> {
    crate::suggest::suggest_keyed(
        name,
        all().iter().flat_map(|m| {
            std::iter::once(m.id.as_str())
                .chain(m.aliases.iter().flat_map(|a| {
                    // A repository id also by its tail (`Meta-Llama-3-8B`).
                    [a.as_str(), a.rsplit('/').next().unwrap_or(a)]
                }))
                .map(move |n| (n, m.id.as_str()))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_and_validates() {
        let models = parse_catalog(MODELS_TOML).unwrap();
        assert!(models.len() >= 25, "{} models", models.len());
        for m in &models {
            m.spec
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", m.id));
            assert!(m.source.starts_with("https://"), "{}", m.id);
            assert!(m.card.starts_with("https://huggingface.co/"), "{}", m.id);
            assert!(!m.family.is_empty(), "{}", m.id);
            assert_eq!(m.id, m.id.to_lowercase(), "{}", m.id);
            if m.stored_vision.is_some() {
                assert_eq!(m.spec.vision, m.stored_vision, "{}", m.id);
            }
            assert!(
                !m.decoder_embedding || (m.spec.encoder && m.uses == [Use::Embedding]),
                "{}: a decoder embedding model plans as an encoder and is for embeddings",
                m.id
            );
        }
        let mut ids: Vec<_> = models.iter().map(|m| &m.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), models.len(), "duplicate ids");
    }

    #[test]
    fn formula_reproduces_every_published_count() {
        for m in all() {
            if let Some(n) = m.published_parameters {
                assert_eq!(m.hub_parameter_total(), n, "{}", m.id);
            }
        }
    }

    #[test]
    fn unknown_catalog_fields_are_refused() {
        let text = "[[model]]\nid = \"x\"\nsource = \"https://x\"\nbogus = 1\n[model.spec]\n";
        assert!(parse_catalog(text).is_err());
    }

    #[test]
    fn uses_parse_with_suggestions() {
        assert_eq!(
            Use::parse_list("Code, reasoning,code").unwrap(),
            [Use::Code, Use::Reasoning]
        );
        let e = Use::parse_list("chatt").unwrap_err();
        assert!(e.contains("did you mean chat?"), "{e}");
        assert!(
            e.contains("known: chat, code, reasoning, embedding, vision"),
            "{e}"
        );
        assert!(Use::parse_list(" , ").is_err());
        // The catalog's uses as the cards state them.
        let uses = |id: &str| find(id).unwrap().uses.clone();
        assert_eq!(uses("qwen2.5-coder-7b"), [Use::Chat, Use::Code]);
        assert_eq!(uses("deepseek-r1"), [Use::Chat, Use::Reasoning]);
        assert!(uses("opt-125m").is_empty());
        assert_eq!(uses("bge-base-en-v1.5"), [Use::Embedding]);
        assert_eq!(uses("gpt-oss-20b"), [Use::Chat, Use::Reasoning]);
    }

    #[test]
    fn lookup_by_id_alias_and_repo_tail() {
        assert_eq!(find("llama-3.1-8b").unwrap().id, "llama-3.1-8b");
        assert_eq!(
            find("meta-llama/Llama-3.1-8B-Instruct").unwrap().id,
            "llama-3.1-8b"
        );
        assert_eq!(find("Llama-3.1-8B-Instruct").unwrap().id, "llama-3.1-8b");
        assert_eq!(find("LLAMA 3.1 8B").unwrap().id, "llama-3.1-8b");
        assert_eq!(find("Qwen/Qwen2.5-7B-Instruct").unwrap().id, "qwen2.5-7b");
        // Llama 3.3 is its own entry, no longer an alias of 3.1.
        let l33 = find("meta-llama/Llama-3.3-70B-Instruct").unwrap();
        assert_eq!(
            (l33.id.as_str(), l33.family.as_str()),
            ("llama-3.3-70b", "Llama 3.3")
        );
        assert_eq!(find("openai/gpt-oss-120b").unwrap().id, "gpt-oss-120b");
        assert!(find("llama-9-1b").is_none());
        assert!(find("").is_none());
        assert!(suggestions("llama-3.1-9b").contains(&"llama-3.1-8b"));
    }
}
