//! Modules a quantized checkpoint keeps at 16 bits.
//!
//! A `quantization_config` names the modules its quantizer left alone:
//! `llm_int8_skip_modules` (bitsandbytes, in 8 and 4 bits alike),
//! `modules_to_not_convert` (AWQ, GPTQ and the quantizers transformers
//! wraps), `ignore` (compressed-tensors, ModelOpt), `ignored_layers`
//! (FP8) and `exclude_modules` (ModelOpt). Unsloth's "dynamic" 4-bit checkpoints use
//! it to keep a few layers' MLPs and attention in BF16; DeepSeek-R1-FP4
//! keeps every attention. [`resolve`] matches such a list against the
//! module names of the decoder's projections, the way the runtime that
//! loads the checkpoint matches them, and says which projections of which
//! layers stay at 16 bits ([`UnquantizedLayer`]); [`apply`] records them on
//! the [`ModelSpec`], where the planner counts them at 16 bits.
//!
//! Matching, as vLLM does it (vllm 0.27.1, the last release that loads
//! bitsandbytes checkpoints; vllm 0.33.0 for the others):
//! - bitsandbytes (`quantization/bitsandbytes.py`, `is_layer_skipped_bnb`):
//!   an entry equal to one dot-separated component of the module's name
//!   (`lm_head`, `mlp`) or to a dot-prefix of it (`model.layers.0.mlp`);
//! - compressed-tensors (`compressed_tensors/utils.py`,
//!   `should_ignore_layer`): a `re:` entry is a regular expression matched
//!   at the start of the name (Python's `re.match`), any other the whole
//!   name; FP8 (`fp8.py`, `ignored_layers` or else `modules_to_not_convert`,
//!   `is_layer_skipped` in its `exact` mode) the whole name;
//! - the others (`modelopt.py` `is_layer_excluded`, AWQ's
//!   `is_layer_skipped_awq`, `humming.py`): a `re:` entry as above, an
//!   entry with `*`, `?` or `[` a shell wildcard over the whole name
//!   (`fnmatch`) or over a module containing it (gpt-oss's
//!   `model.layers.*.self_attn`, which names the attention's modules),
//!   any other a substring of the name.
//!
//! Names are Hugging Face's unfused ones (`model.layers.N.self_attn.q_proj`,
//! `mlp.gate_proj`, `mlp.experts.N.up_proj`, Mixtral's
//! `block_sparse_moe.experts.N.w1`), under the prefixes multimodal
//! checkpoints add (`model.language_model.layers`,
//! `language_model.model.layers`). An entry that names a routed expert
//! counts for every expert of the layer only when it names them all
//! (`mlp.experts`); an entry for expert 0 alone matches expert 0's names
//! here and so counts for all of them — no checkpoint seen keeps a single
//! expert.

use std::collections::{BTreeMap, BTreeSet};

use crate::plan::arch::{MlpKind, ModelSpec, Projection, UnquantizedLayer};

/// At most this many entries are read from one list (a hostile config's
/// list is cut there, and the rest reported as not read).
pub const MAX_ENTRIES: usize = 1024;
/// Entries longer than this are not matched.
pub const MAX_ENTRY_LEN: usize = 512;
/// Entry-name comparisons one list may cost (entries naming one layer
/// cost that layer's names; others every layer's): past it, the remaining
/// entries are reported as not matched.
const MATCH_BUDGET: usize = 2_000_000;
/// Compiled size bound of one `re:` entry or wildcard.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The prefixes a decoder layer's modules have: text models, and the text
/// part of multimodal checkpoints under transformers' two layouts.
const LAYER_PREFIXES: &[&str] = &[
    "model.layers",
    "model.language_model.layers",
    "language_model.model.layers",
];

/// Names of modules outside the decoder layers that quantizers commonly
/// leave at 16 bits: the plan already counts the head and the embeddings
/// at 16 bits and does not count a vision tower, projector or audio
/// encoder (they are `--mmproj`-style companions), so such entries change
/// nothing.
const OUTSIDE_LAYERS: &[&str] = &[
    "lm_head",
    "embed",
    "wte",
    "vision",
    "visual",
    "multi_modal",
    "mm_projector",
    "projector",
    "merger",
    "modality",
    "audio",
    "patch",
    "norm",
];

/// Whether an entry names something the plan already counts at 16 bits or
/// does not count: [`OUTSIDE_LAYERS`], or a MoE router (`mlp.gate`,
/// `mlp.router`, `shared_expert_gate`), which the plan keeps at 16 bits
/// with the norms.
fn outside_layers(entry: &str) -> bool {
    let e = entry.to_ascii_lowercase();
    let last = e
        .trim_end_matches(['*', '$'])
        .rsplit('.')
        .next()
        .unwrap_or("");
    OUTSIDE_LAYERS.iter().any(|o| e.contains(o))
        || matches!(last, "gate" | "router" | "shared_expert_gate")
}

/// How a list's entries are matched against module names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchRule {
    /// vLLM's bitsandbytes rule: a dot-component or dot-prefix.
    Component,
    /// compressed-tensors: `re:` regular expressions, else the whole name.
    Exact,
    /// `re:` regular expressions, wildcards, else a substring.
    Substring,
}

impl MatchRule {
    /// The rule for a `quant_method`.
    pub fn of(method: &str) -> MatchRule {
        match method.to_ascii_lowercase().as_str() {
            "bitsandbytes" => MatchRule::Component,
            // AMD Quark's `exclude`: vllm 0.11.0 `quark/utils.py`,
            // `check_equal_or_regex_match` (the whole name, or `re:`).
            "compressed-tensors" | "fp8" | "quark" => MatchRule::Exact,
            _ => MatchRule::Substring,
        }
    }
}

/// What a list of unquantized modules comes to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Projections of single layers kept at 16 bits (attention left out
    /// when `all_attention`).
    pub layers: Vec<UnquantizedLayer>,
    /// Every layer's whole attention is kept at 16 bits.
    pub all_attention: bool,
    /// Entries that matched a decoder projection.
    pub matched: Vec<String>,
    /// Entries naming modules outside the decoder layers (head,
    /// embeddings, vision tower, norms), which the plan already counts at
    /// 16 bits or does not count.
    pub outside: Vec<String>,
    /// Entries that matched nothing this reads (another naming, a single
    /// expert, part of a multi-head latent attention), with the reason
    /// when there is one.
    pub unmatched: Vec<String>,
}

impl Resolved {
    /// Whether anything is kept at 16 bits in the decoder layers.
    pub fn any(&self) -> bool {
        self.all_attention || !self.layers.is_empty()
    }

    /// Number of projections kept at 16 bits, and of the layers they are in
    /// (every layer's attention counted when `all_attention`).
    pub fn counts(&self, spec: &ModelSpec) -> (usize, usize) {
        let mut layers: BTreeSet<u32> = self.layers.iter().map(|l| l.layer).collect();
        let mut n: usize = self.layers.iter().map(|l| l.parts.len()).sum();
        if self.all_attention {
            layers.extend(0..spec.num_layers);
            n += spec.num_layers as usize * if spec.mla.is_some() { 1 } else { 4 };
        }
        (n, layers.len())
    }
}

enum Pattern {
    Regex(regex::Regex),
    Glob(regex::Regex),
    Plain(String),
}

fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            e.to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string()
        })
}

/// A shell wildcard as Python's `fnmatch` reads it (`*`, `?`, `[seq]`,
/// `[!seq]`), over the whole name, as a regular expression.
fn glob_regex(glob: &str) -> String {
    let mut out = String::from("^(?s:");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '[' => {
                let mut class = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == ']' && !class.is_empty() && class != "!" {
                        closed = true;
                        break;
                    }
                    class.push(d);
                }
                if closed {
                    out.push('[');
                    let body = class.strip_prefix('!').map_or_else(
                        || class.clone(),
                        |rest| {
                            out.push('^');
                            rest.to_string()
                        },
                    );
                    for d in body.chars() {
                        if matches!(d, '\\' | '[' | ']' | '^' | '&' | '~') {
                            out.push('\\');
                        }
                        out.push(d);
                    }
                    out.push(']');
                } else {
                    out.push_str(&regex::escape(&format!("[{class}")));
                }
            }
            _ => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out.push_str(")$");
    out
}

fn pattern(entry: &str, rule: MatchRule) -> Result<Pattern, String> {
    if rule != MatchRule::Component
        && let Some(re) = entry.strip_prefix("re:")
    {
        // Python's re.match: anchored at the start only.
        return compile(&format!("^(?:{re})")).map(Pattern::Regex);
    }
    if rule == MatchRule::Substring && entry.contains(['*', '?', '[']) {
        return compile(&glob_regex(entry)).map(Pattern::Glob);
    }
    Ok(Pattern::Plain(entry.to_string()))
}

/// The layer a plain entry names (`model.layers.12.mlp`,
/// `layers.3.self_attn.q_proj`), when the rule can match it only there:
/// the index must end at a dot (or, under the component and whole-name
/// rules, at the end of the entry) — `model.layers.1` as a substring also
/// names layers 10 to 19.
fn entry_layer(entry: &str, rule: MatchRule) -> Option<u32> {
    let at = entry.find("layers.")? + "layers.".len();
    let rest = &entry[at..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let ends = match rest.as_bytes().get(digits) {
        Some(b'.') => true,
        None => rule != MatchRule::Substring,
        Some(_) => false,
    };
    // Only the first `layers.` counts; an entry with a second one is tried
    // everywhere.
    (ends && !rest[digits..].contains("layers.")).then(|| rest[..digits].parse().ok())?
}

fn matches(p: &Pattern, rule: MatchRule, name: &str) -> bool {
    match p {
        // A wildcard naming a module names what is inside it: the name or
        // one of its dot-prefixes (gpt-oss's `model.layers.*.self_attn`).
        Pattern::Glob(r) => {
            r.is_match(name) || name.match_indices('.').any(|(i, _)| r.is_match(&name[..i]))
        }
        Pattern::Regex(r) => r.is_match(name),
        Pattern::Plain(e) => match rule {
            MatchRule::Exact => name == e,
            MatchRule::Substring => name.contains(e.as_str()),
            MatchRule::Component => {
                name.split('.').any(|c| c == e)
                    || (name.starts_with(e.as_str())
                        && (name.len() == e.len() || name.as_bytes()[e.len()] == b'.'))
            }
        },
    }
}

/// The projections of layer `i` with their module names (after a layer
/// prefix and the index). A multi-head latent attention's projections all
/// map to [`Projection::Attention`]: it counts only when every one matches.
fn layer_modules(spec: &ModelSpec, i: u32) -> Vec<(Projection, &'static str)> {
    use Projection::*;
    let mut v: Vec<(Projection, &'static str)> = Vec::new();
    if spec.mla.is_some() {
        let q: &[&'static str] = if spec.mla.as_ref().is_some_and(|m| m.q_lora_rank.is_some()) {
            &["self_attn.q_a_proj", "self_attn.q_b_proj"]
        } else {
            &["self_attn.q_proj"]
        };
        for n in q {
            v.push((Attention, n));
        }
        for n in [
            "self_attn.kv_a_proj_with_mqa",
            "self_attn.kv_b_proj",
            "self_attn.o_proj",
        ] {
            v.push((Attention, n));
        }
    } else {
        v.extend([
            (Q, "self_attn.q_proj"),
            (K, "self_attn.k_proj"),
            (V, "self_attn.v_proj"),
            (O, "self_attn.o_proj"),
        ]);
    }
    let gated = spec.mlp == MlpKind::Gated;
    let p = spec.layer_params(i);
    if spec.is_moe_layer(i) {
        v.extend([
            (ExpertUp, "mlp.experts.0.up_proj"),
            (ExpertDown, "mlp.experts.0.down_proj"),
            (ExpertUp, "block_sparse_moe.experts.0.w3"),
            (ExpertDown, "block_sparse_moe.experts.0.w2"),
        ]);
        if gated {
            v.extend([
                (ExpertGate, "mlp.experts.0.gate_proj"),
                (ExpertGate, "block_sparse_moe.experts.0.w1"),
            ]);
        }
        if p.mlp > 0 {
            for (part, n) in [
                (Up, "mlp.shared_expert.up_proj"),
                (Down, "mlp.shared_expert.down_proj"),
                (Up, "mlp.shared_experts.up_proj"),
                (Down, "mlp.shared_experts.down_proj"),
            ] {
                v.push((part, n));
            }
            if gated {
                v.push((Gate, "mlp.shared_expert.gate_proj"));
                v.push((Gate, "mlp.shared_experts.gate_proj"));
            }
        }
    } else {
        v.extend([(Up, "mlp.up_proj"), (Down, "mlp.down_proj")]);
        if gated {
            v.push((Gate, "mlp.gate_proj"));
        }
    }
    v
}

/// Match `entries` (a `quantization_config` list, read with `method`'s
/// rule) against `spec`'s decoder projections.
pub fn resolve(spec: &ModelSpec, method: &str, entries: &[String]) -> Resolved {
    let rule = MatchRule::of(method);
    let mut out = Resolved::default();
    // Every layer's projections with their names under each prefix, built
    // once: (layer, projection, suffix, names).
    type Module = (u32, Projection, &'static str, Vec<String>);
    let modules: Vec<Module> = (0..spec.num_layers)
        .flat_map(|i| {
            layer_modules(spec, i)
                .into_iter()
                .map(move |(part, suffix)| {
                    let names = LAYER_PREFIXES
                        .iter()
                        .map(|pre| format!("{pre}.{i}.{suffix}"))
                        .collect();
                    (i, part, suffix, names)
                })
        })
        .collect();
    // Where each layer's projections start in `modules`.
    let mut first = vec![modules.len(); spec.num_layers as usize + 1];
    for (k, (i, ..)) in modules.iter().enumerate().rev() {
        first[*i as usize] = k;
    }
    for i in (0..spec.num_layers as usize).rev() {
        first[i] = first[i].min(first[i + 1]);
    }
    let mut kept: BTreeMap<u32, BTreeSet<Projection>> = BTreeMap::new();
    // MLA projections matched per layer, and per entry the layers where it
    // matched one.
    let mut mla_hits: BTreeMap<u32, BTreeSet<&'static str>> = BTreeMap::new();
    let mut budget = MATCH_BUDGET;
    let mut read: Vec<(&String, bool, Vec<u32>)> = Vec::new();
    for e in entries.iter().take(MAX_ENTRIES) {
        if e.len() > MAX_ENTRY_LEN {
            let head: String = e.chars().take(40).collect();
            out.unmatched
                .push(format!("{head}… (longer than {MAX_ENTRY_LEN} bytes)"));
            continue;
        }
        let p = match pattern(e, rule) {
            Ok(p) => p,
            Err(why) => {
                out.unmatched
                    .push(format!("{e} (not a regular expression: {why})"));
                continue;
            }
        };
        // A plain entry naming one layer (`model.layers.12.mlp`) is tried
        // on that layer's names only.
        let range = match (&p, entry_layer(e, rule)) {
            (Pattern::Plain(_), Some(i)) if i < spec.num_layers => {
                first[i as usize]..first[i as usize + 1]
            }
            (Pattern::Plain(_), Some(_)) => 0..0,
            _ => 0..modules.len(),
        };
        let cost = range.len() * LAYER_PREFIXES.len();
        if cost > budget {
            out.unmatched.push(format!(
                "{e} (not matched: the list is too long to match against {} layers)",
                spec.num_layers
            ));
            continue;
        }
        budget -= cost;
        let (mut hit_kept, mut mla_layers) = (false, Vec::new());
        for (i, part, suffix, names) in &modules[range] {
            if !names.iter().any(|n| matches(&p, rule, n)) {
                continue;
            }
            if *part == Projection::Attention {
                mla_hits.entry(*i).or_default().insert(suffix);
                if mla_layers.last() != Some(i) {
                    mla_layers.push(*i);
                }
            } else {
                kept.entry(*i).or_default().insert(*part);
                hit_kept = true;
            }
        }
        read.push((e, hit_kept, mla_layers));
    }
    let mla_of = |i: u32| {
        layer_modules(spec, i)
            .iter()
            .filter(|(p, _)| *p == Projection::Attention)
            .count()
    };
    let mla: BTreeMap<u32, (usize, usize)> = mla_hits
        .iter()
        .map(|(i, hit)| (*i, (hit.len(), mla_of(*i))))
        .collect();
    for (i, (hit, of)) in mla {
        if hit == of {
            kept.entry(i).or_default().insert(Projection::Attention);
        }
    }
    let attention_of = |parts: &BTreeSet<Projection>| {
        parts.contains(&Projection::Attention)
            || [Projection::Q, Projection::K, Projection::V, Projection::O]
                .iter()
                .all(|p| parts.contains(p))
    };
    out.all_attention =
        spec.num_layers > 0 && (0..spec.num_layers).all(|i| kept.get(&i).is_some_and(attention_of));
    for (e, hit_kept, mla_layers) in read {
        let whole_mla = mla_layers.iter().any(|i| {
            kept.get(i)
                .is_some_and(|k| k.contains(&Projection::Attention))
        });
        if hit_kept || whole_mla {
            out.matched.push(e.clone());
        } else if !mla_layers.is_empty() {
            out.unmatched.push(format!(
                "{e} (part of a multi-head latent attention: counted only whole)"
            ));
        } else if outside_layers(e) {
            out.outside.push(e.clone());
        } else {
            out.unmatched.push(e.clone());
        }
    }
    if entries.len() > MAX_ENTRIES {
        out.unmatched.push(format!(
            "{} more entries (only the first {MAX_ENTRIES} are read)",
            entries.len() - MAX_ENTRIES
        ));
    }
    for (layer, mut parts) in kept {
        if out.all_attention {
            for p in [
                Projection::Q,
                Projection::K,
                Projection::V,
                Projection::O,
                Projection::Attention,
            ] {
                parts.remove(&p);
            }
        }
        if !parts.is_empty() {
            out.layers.push(UnquantizedLayer {
                layer,
                parts: parts.into_iter().collect(),
            });
        }
    }
    out
}

/// Record what [`resolve`] found on `spec`: every layer's attention as
/// [`ModelSpec::attention_unquantized`], the rest as
/// [`ModelSpec::unquantized_layers`].
pub fn apply(spec: &mut ModelSpec, r: &Resolved) {
    if r.all_attention {
        spec.attention_unquantized = true;
    }
    spec.unquantized_layers = r.layers.clone();
}

/// Parameters the decoder keeps at 16 bits by `r` (for messages).
pub fn params(spec: &ModelSpec, r: &Resolved) -> u64 {
    let mut with = spec.clone();
    with.attention_unquantized = r.all_attention;
    with.unquantized_layers = r.layers.clone();
    let kept = with.unquantized_by_layer();
    (0..with.num_layers)
        .map(|i| {
            let p = with.layer_params(i);
            let u = with.projection_params(&p, kept[i as usize]);
            let attention = if with.attention_unquantized {
                (p.attention_sharded + p.attention_kv + p.attention_replicated) as f64
            } else {
                u.attention_sharded + u.attention_kv + u.attention_replicated
            };
            (attention + u.mlp + u.experts).round() as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Projection::*;

    fn spec(id: &str) -> ModelSpec {
        crate::plan::catalog::find(id).unwrap().spec.clone()
    }

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn layers(r: &Resolved) -> Vec<(u32, Vec<Projection>)> {
        r.layers
            .iter()
            .map(|l| (l.layer, l.parts.clone()))
            .collect()
    }

    /// The `llm_int8_skip_modules` of Unsloth's
    /// qwen2.5-0.5b-instruct-unsloth-bnb-4bit, as a real vLLM 0.8.5 log
    /// printed them (its parse is checked entry by entry in
    /// tests/runtime_logs.rs).
    fn unsloth_qwen25_05b() -> Vec<String> {
        let text = include_str!(
            "../../../tests/fixtures/runtime-logs/rldecisionagent-art-mcp-rl__rtx4090d-qwen2.5-0.5b-bnb4-v0.8.5-cuda-blocks.log"
        );
        crate::plan::runtime::log::parse_vllm_log(text).skip_modules
    }

    #[test]
    fn unsloth_dynamic_4bit_keeps_four_mlps_and_one_attention() {
        let s = spec("qwen2.5-0.5b");
        let r = resolve(&s, "bitsandbytes", &unsloth_qwen25_05b());
        assert!(!r.all_attention);
        assert_eq!(
            layers(&r),
            vec![
                (0, vec![Q, K, V, O, Gate, Up, Down]),
                (2, vec![Gate, Up, Down]),
                (3, vec![Gate, Up, Down]),
                (21, vec![Gate, Up, Down]),
            ]
        );
        assert_eq!(
            r.outside,
            list(&[
                "lm_head",
                "multi_modal_projector",
                "merger",
                "modality_projection"
            ])
        );
        assert!(r.unmatched.is_empty(), "{:?}", r.unmatched);
        assert_eq!(r.counts(&s), (16, 4));
        // Qwen2.5-0.5B: h 896, intermediate 4864, 14 heads and 2 KV heads
        // of 64: an MLP is 3 × 896 × 4864 = 13,074,432 parameters, layer
        // 0's attention 2 × 896² + 2 × 896 × 128 plus the q, k, v biases
        // (896 + 2 × 128) = 1,836,160.
        assert_eq!(params(&s, &r), 4 * 13_074_432 + 1_836_160);
    }

    #[test]
    fn each_runtime_rule_matches_as_vllm_does() {
        let s = spec("llama-3-8b");
        let mlp_everywhere = |r: &Resolved| {
            r.layers.len() == 32 && r.layers.iter().all(|l| l.parts == vec![Gate, Up, Down])
        };
        // A component ("mlp") matches under bitsandbytes and as a
        // substring; compressed-tensors wants whole names.
        assert!(mlp_everywhere(&resolve(
            &s,
            "bitsandbytes",
            &list(&["mlp"])
        )));
        assert!(mlp_everywhere(&resolve(&s, "awq", &list(&["mlp"]))));
        let r = resolve(&s, "compressed-tensors", &list(&["mlp"]));
        assert!(r.layers.is_empty() && r.unmatched == ["mlp"]);
        // A dot-prefix under bitsandbytes stops at a dot: layer 1 only; a
        // substring also takes layers 10 to 19, as vLLM's AWQ rule does.
        let r = resolve(&s, "bitsandbytes", &list(&["model.layers.1"]));
        assert_eq!(r.layers.len(), 1);
        assert_eq!(r.layers[0].layer, 1);
        let r = resolve(&s, "awq", &list(&["model.layers.1"]));
        let idx: Vec<u32> = r.layers.iter().map(|l| l.layer).collect();
        assert_eq!(idx, [1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
        // Not a component nor a prefix: bitsandbytes skips nothing.
        let r = resolve(&s, "bitsandbytes", &list(&["layers.1.mlp"]));
        assert!(r.layers.is_empty());
        assert_eq!(r.unmatched, ["layers.1.mlp"]);
        // compressed-tensors: a whole name, and `re:` anchored at the start.
        let r = resolve(
            &s,
            "compressed-tensors",
            &list(&[
                "model.layers.0.mlp.down_proj",
                "re:.*mlp\\.down_proj$",
                "re:mlp",
            ]),
        );
        assert_eq!(r.layers.len(), 32);
        assert!(r.layers.iter().all(|l| l.parts == vec![Down]));
        assert_eq!(r.unmatched, ["re:mlp"]);
        // FP8's ignored_layers: whole names.
        let r = resolve(&s, "fp8", &list(&["model.layers.0.mlp.down_proj", "mlp"]));
        assert_eq!(layers(&r), vec![(0, vec![Down])]);
        assert_eq!(r.unmatched, ["mlp"]);
        // ModelOpt wildcards over the whole name, with a character class.
        let r = resolve(&s, "modelopt", &list(&["model.layers.[0-1].self_attn*"]));
        assert_eq!(
            layers(&r),
            vec![(0, vec![Q, K, V, O]), (1, vec![Q, K, V, O])]
        );
        assert!(resolve(&s, "modelopt", &list(&["*self_attn*"])).all_attention);
        // A multimodal checkpoint's text layers.
        let r = resolve(
            &s,
            "bitsandbytes",
            &list(&["language_model.model.layers.5.mlp"]),
        );
        assert_eq!(layers(&r), vec![(5, vec![Gate, Up, Down])]);
    }

    #[test]
    fn experts_and_latent_attention() {
        let s = spec("qwen3-30b-a3b");
        let r = resolve(&s, "awq", &list(&["mlp.experts", "mlp.gate"]));
        assert_eq!(r.layers.len(), s.num_layers as usize);
        assert!(
            r.layers
                .iter()
                .all(|l| l.parts == vec![ExpertGate, ExpertUp, ExpertDown])
        );
        // Qwen3-MoE has no shared expert, and the router is not a
        // projection the level quantizes.
        assert_eq!(r.outside, ["mlp.gate"]);
        assert!(r.unmatched.is_empty());
        let s = spec("mixtral-8x7b");
        let r = resolve(&s, "awq", &list(&["block_sparse_moe.experts"]));
        assert_eq!(r.layers.len(), 32);
        let u = {
            let mut m = s.clone();
            apply(&mut m, &r);
            m.unquantized_params(0)
        };
        assert_eq!(u.experts, s.layer_params(0).experts as f64);
        let s = spec("deepseek-v3");
        let r = resolve(&s, "modelopt", &list(&["model.layers.*.self_attn*"]));
        assert!(r.all_attention && r.layers.is_empty());
        let r = resolve(
            &s,
            "modelopt",
            &list(&["model.layers.0.self_attn.kv_b_proj"]),
        );
        assert!(!r.any());
        assert!(
            r.unmatched[0].contains("multi-head latent attention"),
            "{r:?}"
        );
    }

    /// gpt-oss's `modules_to_not_convert` (openai/gpt-oss-20b config.json):
    /// wildcards naming modules, the router and the embeddings.
    #[test]
    fn gpt_oss_keeps_attention_at_16_bits() {
        let s = spec("gpt-oss-20b");
        let r = resolve(
            &s,
            "mxfp4",
            &list(&[
                "model.layers.*.self_attn",
                "model.layers.*.mlp.router",
                "model.embed_tokens",
                "lm_head",
            ]),
        );
        assert!(r.all_attention && r.layers.is_empty());
        assert_eq!(r.matched, ["model.layers.*.self_attn"]);
        assert_eq!(
            r.outside,
            ["model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]
        );
        assert!(r.unmatched.is_empty());
    }

    /// The compressed-tensors `ignore` list of moonshotai/Kimi-K2-Thinking
    /// (int4 routed experts; as a public test of Kimi's remote config
    /// quotes it), on DeepSeek-V3's architecture, which Kimi K2 shares:
    /// every attention, the shared experts and the dense layers' MLPs stay
    /// in BF16, the routed experts are not touched.
    #[test]
    fn kimi_k2_thinking_keeps_all_but_the_routed_experts() {
        let s = spec("deepseek-v3");
        let r = resolve(
            &s,
            "compressed-tensors",
            &list(&[
                "lm_head",
                "re:.*self_attn.*",
                "re:.*shared_experts.*",
                "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
            ]),
        );
        assert!(r.all_attention);
        assert_eq!(r.outside, ["lm_head"]);
        assert!(r.unmatched.is_empty(), "{:?}", r.unmatched);
        assert_eq!(r.layers.len(), s.num_layers as usize);
        for l in &r.layers {
            // The three dense layers' MLPs and every MoE layer's shared
            // expert: gate, up and down; no routed expert.
            assert_eq!(l.parts, vec![Gate, Up, Down], "layer {}", l.layer);
            let mut m = s.clone();
            apply(&mut m, &r);
            let u = m.unquantized_params(l.layer);
            assert_eq!(u.mlp, s.layer_params(l.layer).mlp as f64);
            assert_eq!(u.experts, 0.0);
        }
    }

    #[test]
    fn hostile_lists_are_bounded_and_reported() {
        let s = spec("llama-3-8b");
        let r = resolve(
            &s,
            "compressed-tensors",
            &list(&["re:(", "re:a{1000}{1000}{1000}"]),
        );
        assert!(!r.any());
        assert_eq!(r.unmatched.len(), 2);
        assert!(
            r.unmatched
                .iter()
                .all(|u| u.contains("not a regular expression"))
        );
        let many: Vec<String> = (0..MAX_ENTRIES + 5).map(|i| format!("x{i}")).collect();
        let r = resolve(&s, "awq", &many);
        assert_eq!(r.unmatched.len(), MAX_ENTRIES + 1);
        assert!(r.unmatched.last().unwrap().starts_with("5 more entries"));
        let long = "é".repeat(MAX_ENTRY_LEN);
        let r = resolve(&s, "awq", &[long]);
        assert!(r.unmatched[0].contains("longer than"));
        // Expressions over a model of 10,000 layers: matched until the
        // budget is spent, the rest reported.
        let mut deep = s.clone();
        deep.num_layers = 10_000;
        let exprs: Vec<String> = (0..MAX_ENTRIES).map(|i| format!("re:.*x{i}")).collect();
        let r = resolve(&deep, "compressed-tensors", &exprs);
        let cut = r
            .unmatched
            .iter()
            .filter(|u| u.contains("too long to match against 10000 layers"))
            .count();
        assert!(cut > 0 && cut < MAX_ENTRIES, "{cut}");
        // Entries naming one layer each cost only that layer.
        let named: Vec<String> = (0..MAX_ENTRIES)
            .map(|i| format!("model.layers.{i}.mlp.down_proj"))
            .collect();
        let r = resolve(&deep, "compressed-tensors", &named);
        assert_eq!(r.layers.len(), MAX_ENTRIES);
        assert!(r.unmatched.is_empty());
        // A wildcard with an unclosed class is literal.
        assert!(!resolve(&s, "modelopt", &list(&["[mlp"])).any());
    }

    #[test]
    fn fnmatch_translation() {
        let m =
            |glob: &str, name: &str| regex::Regex::new(&glob_regex(glob)).unwrap().is_match(name);
        assert!(m("model.layers.*.mlp*", "model.layers.3.mlp.up_proj"));
        assert!(!m("model.layers.?.mlp", "model.layers.10.mlp"));
        assert!(m("model.layers.[!0].mlp", "model.layers.4.mlp"));
        assert!(!m("model.layers.[!0].mlp", "model.layers.0.mlp"));
        assert!(m("a.b", "a.b") && !m("a.b", "aXb"));
    }
}
