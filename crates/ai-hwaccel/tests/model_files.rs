//! Loading a model's architecture from files: every catalog model's
//! config.json (`tests/fixtures/models/<id>/config.json`, provenance in
//! SOURCES.md) parses to exactly the catalog's spec; safetensors and GGUF
//! headers built here from catalog specs hold exactly `spec.parameters()`
//! (data sections are sparse files, so real sizes cost no disk); hostile
//! files are errors naming the file and the field.
#![allow(clippy::disallowed_methods, reason = "tests write model files")]

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use ai_hwaccel::plan::catalog;
use ai_hwaccel::plan::source::hf_config;
use ai_hwaccel::plan::{LoadedModel, ModelError, ModelOrigin, ModelSpec, load_model};
use serde_json::json;

fn load(p: &Path) -> Result<LoadedModel, ModelError> {
    load_model(p.to_str().unwrap())
}

fn catalog_spec(id: &str) -> ModelSpec {
    catalog::find(id)
        .unwrap_or_else(|| panic!("{id} in the catalog"))
        .spec
        .clone()
}

fn fixture_config(id: &str) -> PathBuf {
    support::fixture(&format!("models/{id}/config.json"))
}

// ---------------------------------------------------------------- config.json

#[test]
fn every_catalog_model_config_parses_to_its_catalog_spec() {
    let dir = support::fixture("models");
    let mut seen = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let config = entry.path().join("config.json");
        let model =
            catalog::find(&name).unwrap_or_else(|| panic!("fixture {name} is no catalog model"));
        // The directory and the config.json itself both load.
        for arg in [entry.path(), config.clone()] {
            let loaded = load(&arg).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                matches!(loaded.origin, ModelOrigin::HfConfig { .. }),
                "{name}"
            );
            assert!(loaded.weights.is_none());
            let mut spec = loaded.spec;
            assert_eq!(spec.name, arg.to_str().unwrap());
            spec.name = model.spec.name.clone();
            if model.decoder_embedding {
                // The config names the causal-LM class; the catalog plans
                // the published checkpoint, which has no LM head.
                assert!(!spec.encoder, "{name}");
                spec.encoder = true;
            }
            if let Some(v) = &model.stored_vision {
                // The fixture keeps the text config only; the catalog takes
                // the published checkpoint's encoder from its record.
                assert_eq!(spec.multimodal_encoder, None, "{name}");
                assert_eq!(spec.vision, None, "{name}");
                spec.multimodal_encoder = Some(ai_hwaccel::plan::arch::MultimodalEncoder {
                    layers: v.num_layers,
                    hidden_size: v.hidden_size,
                });
                spec.vision = Some(v.clone());
            }
            assert_eq!(spec, model.spec, "{name}");
            assert_eq!(spec.parameters(), model.spec.parameters(), "{name}");
            if let Some(n) = model.published_parameters {
                // spec == model.spec (above): the catalog's Hub total is the
                // config's.
                assert_eq!(model.hub_parameter_total(), n, "{name}");
            }
        }
        seen.push(model.id.clone());
    }
    for m in catalog::all() {
        assert!(
            seen.contains(&m.id),
            "no config.json fixture for catalog model {}",
            m.id
        );
    }
}

#[test]
fn config_warnings_name_what_is_not_counted() {
    let ds = load(&fixture_config("deepseek-v3")).unwrap();
    assert!(
        ds.warnings
            .iter()
            .any(|w| w.contains("fp8 8-bit, e4m3, blocks 128×128")),
        "{:?}",
        ds.warnings
    );
    assert!(
        ds.warnings
            .iter()
            .any(|w| w.contains("multi-token-prediction")),
        "{:?}",
        ds.warnings
    );
    let phi = load(&fixture_config("phi-3-mini")).unwrap();
    assert!(
        phi.warnings
            .iter()
            .any(|w| w.contains("sliding_window 2047 not applied")),
        "{:?}",
        phi.warnings
    );
    assert!(
        load(&fixture_config("llama-3.1-8b"))
            .unwrap()
            .warnings
            .is_empty()
    );
}

#[test]
fn json_files_that_are_not_configs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tokenizer_config.json");
    fs::write(&p, r#"{"bos_token": "<s>"}"#).unwrap();
    let e = load(&p).unwrap_err();
    assert!(matches!(e, ModelError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("tokenizer_config.json"), "{e}");
    // Any JSON with a model_type is a config.
    let p = dir.path().join("llama.json");
    fs::copy(fixture_config("llama-2-7b"), &p).unwrap();
    assert_eq!(load(&p).unwrap().spec.parameters(), 6_738_415_616);
    // Broken JSON names the file.
    let p = dir.path().join("config.json");
    fs::write(&p, "{\"model_type\": ").unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(e.contains("config.json: (json)"), "{e}");
}

#[test]
fn other_paths() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    fs::write(&p, "hello").unwrap();
    let e = load(&p).unwrap_err();
    assert!(
        matches!(e, ModelError::Unsupported { ref path, .. } if path.ends_with("notes.txt")),
        "{e}"
    );
    let e = load(dir.path()).unwrap_err();
    assert!(
        e.to_string()
            .contains("no config.json, .safetensors or .gguf"),
        "{e}"
    );
    // Nothing there: not a path, so the name is unknown.
    let e = load(&dir.path().join("absent")).unwrap_err();
    assert!(matches!(e, ModelError::Unknown { .. }), "{e}");
}

// ---------------------------------------------------------------- safetensors

/// The tensors (Hugging Face names, shapes) a checkpoint of `spec` stores:
/// Llama/Qwen naming, Mixtral's `block_sparse_moe` for experts.
fn hf_tensors(spec: &ModelSpec) -> Vec<(String, Vec<u64>)> {
    let (h, d, i) = (spec.hidden_size, spec.head_dim, spec.intermediate_size);
    let (q, kv) = (
        u64::from(spec.num_attention_heads) * d,
        u64::from(spec.num_kv_heads) * d,
    );
    let v = spec.vocab_size;
    let mut t = vec![("model.embed_tokens.weight".to_string(), vec![v, h])];
    for l in 0..spec.num_layers {
        let p = |s: &str| format!("model.layers.{l}.{s}");
        t.push((p("input_layernorm.weight"), vec![h]));
        t.push((p("post_attention_layernorm.weight"), vec![h]));
        if spec.norms_per_layer == 4 {
            t.push((p("pre_feedforward_layernorm.weight"), vec![h]));
            t.push((p("post_feedforward_layernorm.weight"), vec![h]));
        }
        t.push((p("self_attn.q_proj.weight"), vec![q, h]));
        t.push((p("self_attn.k_proj.weight"), vec![kv, h]));
        t.push((p("self_attn.v_proj.weight"), vec![kv, h]));
        t.push((p("self_attn.o_proj.weight"), vec![h, q]));
        if spec.qkv_bias {
            t.push((p("self_attn.q_proj.bias"), vec![q]));
            t.push((p("self_attn.k_proj.bias"), vec![kv]));
            t.push((p("self_attn.v_proj.bias"), vec![kv]));
        }
        if spec.qk_norm {
            t.push((p("self_attn.q_norm.weight"), vec![d]));
            t.push((p("self_attn.k_norm.weight"), vec![d]));
        }
        match &spec.moe {
            Some(m) => {
                let ie = m.expert_intermediate_size;
                t.push((
                    p("block_sparse_moe.gate.weight"),
                    vec![u64::from(m.num_experts), h],
                ));
                for e in 0..m.num_experts {
                    t.push((
                        p(&format!("block_sparse_moe.experts.{e}.w1.weight")),
                        vec![ie, h],
                    ));
                    t.push((
                        p(&format!("block_sparse_moe.experts.{e}.w2.weight")),
                        vec![h, ie],
                    ));
                    t.push((
                        p(&format!("block_sparse_moe.experts.{e}.w3.weight")),
                        vec![ie, h],
                    ));
                }
            }
            None => {
                t.push((p("mlp.gate_proj.weight"), vec![i, h]));
                t.push((p("mlp.up_proj.weight"), vec![i, h]));
                t.push((p("mlp.down_proj.weight"), vec![h, i]));
            }
        }
    }
    t.push(("model.norm.weight".into(), vec![h]));
    if !spec.tied_embeddings {
        t.push(("lm_head.weight".into(), vec![v, h]));
    }
    t
}

/// Write a `.safetensors` file: the header for `tensors` of `dtype` (2
/// bytes per element unless given in the tuple), then a sparse data
/// section of the right length.
fn write_safetensors(path: &Path, tensors: &[(String, Vec<u64>, &str, u64)]) {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut at = 0u64;
    for (name, shape, dtype, bytes_per) in tensors {
        let bytes = shape.iter().product::<u64>() * bytes_per;
        header.insert(
            name.clone(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + bytes]}),
        );
        at += bytes;
    }
    let json = serde_json::to_vec(&header).unwrap();
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    fs::write(path, &out).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(8 + json.len() as u64 + at)
        .unwrap();
}

fn bf16(tensors: Vec<(String, Vec<u64>)>) -> Vec<(String, Vec<u64>, &'static str, u64)> {
    tensors
        .into_iter()
        .map(|(n, s)| (n, s, "BF16", 2))
        .collect()
}

/// A model directory: the fixture config.json and one or more shards.
fn checkpoint(id: &str, shards: usize) -> (tempfile::TempDir, ModelSpec) {
    let spec = catalog_spec(id);
    let dir = tempfile::tempdir().unwrap();
    fs::copy(fixture_config(id), dir.path().join("config.json")).unwrap();
    let tensors = bf16(hf_tensors(&spec));
    if shards == 1 {
        write_safetensors(&dir.path().join("model.safetensors"), &tensors);
    } else {
        let per = tensors.len().div_ceil(shards);
        let mut map = serde_json::Map::new();
        for (k, chunk) in tensors.chunks(per).enumerate() {
            let name = format!("model-{:05}-of-{shards:05}.safetensors", k + 1);
            write_safetensors(&dir.path().join(&name), chunk);
            for (t, ..) in chunk {
                map.insert(t.clone(), json!(name));
            }
        }
        let total: u64 = tensors
            .iter()
            .map(|(_, s, _, b)| s.iter().product::<u64>() * b)
            .sum();
        let index = json!({"metadata": {"total_size": total}, "weight_map": map});
        fs::write(
            dir.path().join("model.safetensors.index.json"),
            index.to_string(),
        )
        .unwrap();
    }
    (dir, spec)
}

fn assert_exact(loaded: &LoadedModel, spec: &ModelSpec) {
    let w = loaded.weights.as_ref().expect("weights from headers");
    assert_eq!(w.parameters, spec.parameters());
    assert_eq!(w.bytes, 2 * spec.parameters());
    assert_eq!(w.bytes_by_dtype, vec![("BF16".to_string(), w.bytes)]);
    assert!(
        !loaded
            .warnings
            .iter()
            .any(|w| w.contains("the tensors hold")),
        "{:?}",
        loaded.warnings
    );
    let mut got = loaded.spec.clone();
    got.name = spec.name.clone();
    assert_eq!(&got, spec);
}

#[test]
fn dense_gqa_checkpoint_matches_its_config_exactly() {
    let (dir, spec) = checkpoint("llama-3.1-8b", 1);
    let loaded = load(dir.path()).unwrap();
    assert!(
        matches!(&loaded.origin, ModelOrigin::Safetensors { path } if path.ends_with("model.safetensors"))
    );
    assert_exact(&loaded, &spec);
    assert_eq!(loaded.weights.as_ref().unwrap().parameters, 8_030_261_248);
    assert_eq!(loaded.weights.as_ref().unwrap().tensors, 291);
    // The file itself (config.json found beside it) gives the same.
    let direct = load(&dir.path().join("model.safetensors")).unwrap();
    assert_eq!(direct.weights, loaded.weights);
}

#[test]
fn sharded_moe_checkpoint_matches_its_config_exactly() {
    let (dir, spec) = checkpoint("mixtral-8x7b", 4);
    let loaded = load(dir.path()).unwrap();
    assert!(
        matches!(&loaded.origin, ModelOrigin::Safetensors { path } if path.ends_with("model.safetensors.index.json"))
    );
    assert_exact(&loaded, &spec);
    assert_eq!(loaded.weights.as_ref().unwrap().parameters, 46_702_792_704);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn qwen2_biases_and_tied_or_untied_embeddings() {
    for (id, tied) in [
        ("qwen2.5-7b", false),
        ("qwen2.5-0.5b", true),
        ("llama-3.2-1b", true),
    ] {
        let (dir, spec) = checkpoint(id, 1);
        assert_eq!(spec.tied_embeddings, tied);
        let loaded = load(dir.path()).unwrap();
        assert_exact(&loaded, &spec);
    }
}

#[test]
fn without_config_the_architecture_is_inferred_and_flagged() {
    for id in ["llama-3.1-8b", "qwen2.5-0.5b", "mixtral-8x7b", "qwen3-8b"] {
        let spec = catalog_spec(id);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("model.safetensors");
        write_safetensors(&p, &bf16(hf_tensors(&spec)));
        let loaded = load(&p).unwrap();
        let s = &loaded.spec;
        assert!(s.approximate, "{id}");
        assert_eq!(
            loaded.weights.as_ref().unwrap().parameters,
            spec.parameters(),
            "{id}"
        );
        assert_eq!(
            s.parameters(),
            spec.parameters(),
            "{id}: inferred architecture holds the same parameters"
        );
        assert_eq!(
            (
                s.num_layers,
                s.hidden_size,
                s.vocab_size,
                s.tied_embeddings,
                s.qkv_bias,
                s.qk_norm
            ),
            (
                spec.num_layers,
                spec.hidden_size,
                spec.vocab_size,
                spec.tied_embeddings,
                spec.qkv_bias,
                spec.qk_norm
            ),
            "{id}"
        );
        assert!(
            loaded.warnings.iter().any(|w| w.contains("no config.json")),
            "{id}"
        );
        assert!(
            !loaded
                .warnings
                .iter()
                .any(|w| w.contains("the tensors hold")),
            "{id}: {:?}",
            loaded.warnings
        );
        if id == "llama-3.1-8b" {
            // Head size 128 assumed, and right here.
            assert_eq!(
                (s.num_attention_heads, s.num_kv_heads, s.head_dim),
                (32, 8, 128)
            );
            assert_eq!(s.intermediate_size, 14336);
            assert!(
                loaded
                    .warnings
                    .iter()
                    .any(|w| w.contains("assumed a head size of 128"))
            );
        }
        if id == "qwen3-8b" {
            // q/k norms give the head size: nothing assumed.
            assert_eq!(s.head_dim, 128);
            assert!(!loaded.warnings.iter().any(|w| w.contains("head size")));
        }
        if id == "mixtral-8x7b" {
            let m = s.moe.as_ref().unwrap();
            assert_eq!((m.num_experts, m.expert_intermediate_size), (8, 14336));
        }
    }
}

#[test]
fn a_config_that_does_not_describe_the_weights_is_reported_with_both_counts() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        fixture_config("llama-3.1-8b"),
        dir.path().join("config.json"),
    )
    .unwrap();
    let small = catalog_spec("llama-3.2-1b");
    write_safetensors(
        &dir.path().join("model.safetensors"),
        &bf16(hf_tensors(&small)),
    );
    let loaded = load(dir.path()).unwrap();
    let w = loaded
        .warnings
        .iter()
        .find(|w| w.contains("the tensors hold"))
        .expect("a mismatch warning");
    assert!(w.contains("1235814400") && w.contains("8030261248"), "{w}");
}

#[test]
fn gptq_checkpoint_counts_packed_weights_unpacked() {
    // A small Llama quantized with GPTQ (4-bit, group 128): every projection
    // becomes qweight/qzeros/scales/g_idx; norms and embeddings stay fp16.
    let dir = tempfile::tempdir().unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fixture_config("llama-2-7b")).unwrap()).unwrap();
    config["num_hidden_layers"] = json!(2);
    config["quantization_config"] = json!({"bits": 4, "group_size": 128, "desc_act": false, "quant_method": "gptq", "sym": true});
    fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let mut spec = catalog_spec("llama-2-7b");
    spec.num_layers = 2;
    let mut tensors = Vec::new();
    for (name, shape) in hf_tensors(&spec) {
        let is_proj = name.contains("_proj.weight");
        if !is_proj {
            tensors.push((name, shape, "F16", 2));
            continue;
        }
        let (out, inp) = (shape[0], shape[1]);
        let base = name.trim_end_matches(".weight");
        tensors.push((format!("{base}.qweight"), vec![inp / 8, out], "I32", 4));
        tensors.push((format!("{base}.qzeros"), vec![inp / 128, out / 8], "I32", 4));
        tensors.push((format!("{base}.scales"), vec![inp / 128, out], "F16", 2));
        tensors.push((format!("{base}.g_idx"), vec![inp], "I32", 4));
    }
    write_safetensors(&dir.path().join("model.safetensors"), &tensors);
    let loaded = load(dir.path()).unwrap();
    let w = loaded.weights.as_ref().unwrap();
    assert_eq!(w.parameters, spec.parameters());
    assert_eq!(w.quantization.as_deref(), Some("gptq"));
    assert!(w.bytes < 2 * spec.parameters(), "less than fp16");
    assert!(
        !loaded
            .warnings
            .iter()
            .any(|w| w.contains("the tensors hold")),
        "{:?}",
        loaded.warnings
    );
    assert!(
        loaded.warnings.iter().any(|w| w.contains("packed qweight")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn broken_indexes_name_the_shard() {
    let (dir, _) = checkpoint("qwen2.5-0.5b", 3);
    fs::remove_file(dir.path().join("model-00002-of-00003.safetensors")).unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains(
            "model.safetensors.index.json: weight_map: shard model-00002-of-00003.safetensors"
        ),
        "{e}"
    );
    let index = dir.path().join("model.safetensors.index.json");
    fs::write(&index, r#"{"weight_map": {"a": "../../etc/passwd"}}"#).unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("is not a file name"), "{e}");
    fs::write(
        &index,
        r#"{"weight_map": {"not.there": "model-00001-of-00003.safetensors"}}"#,
    )
    .unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("tensor not.there is mapped to model-00001-of-00003.safetensors"),
        "{e}"
    );
    fs::write(&index, "{}").unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("model.safetensors.index.json: (json): missing field `weight_map`"),
        "{e}"
    );
}

#[test]
fn hostile_safetensors_files_are_errors_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("model.safetensors");
    let expect = |bytes: &[u8], field: &str| {
        fs::write(&p, bytes).unwrap();
        let e = load(&p).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("model.safetensors") && s.contains(field), "{s}");
    };
    // Length beyond the file, 2^63, tiny file, not JSON.
    let mut b = 1000u64.to_le_bytes().to_vec();
    b.extend_from_slice(b"{}");
    expect(
        &b,
        "header length: 1000 bytes declared but the file has 10 bytes",
    );
    expect(&(1u64 << 63).to_le_bytes(), "header length");
    expect(b"abc", "header length");
    let mut b = 6u64.to_le_bytes().to_vec();
    b.extend_from_slice(b"nope!!");
    expect(&b, "header:");
    // Offsets beyond the data the file holds.
    let json = br#"{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}"#;
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json);
    b.extend_from_slice(&[0; 8]);
    expect(
        &b,
        "tensor w: data_offsets: ends at data byte 16 but the file holds 8 bytes of data",
    );
}

// ---------------------------------------------------------------- GGUF

/// A minimal GGUF writer: metadata values and tensor infos; the data
/// section is left sparse.
enum Meta {
    U32(u32),
    Str(String),
    Tokens(u64),
}

fn gguf_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A ggml type: id, elements per block, bytes per block.
type Ggml = (u32, u64, u64);
/// A tensor info to write: name, dimensions (innermost first), type.
type TensorInfo = (String, Vec<u64>, Ggml);

const F32: Ggml = (0, 1, 4);
const Q8_0: Ggml = (8, 32, 34);
const Q4_K: Ggml = (12, 256, 144);
const Q6_K: Ggml = (14, 256, 210);
const MXFP4: Ggml = (39, 32, 17);

/// Write a GGUF file; returns the header and the bytes of tensor data.
fn write_gguf(path: &Path, meta: &[(String, Meta)], tensors: &[TensorInfo]) -> (Vec<u8>, u64) {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    for (k, v) in meta {
        gguf_string(&mut out, k);
        match v {
            Meta::U32(x) => {
                out.extend_from_slice(&4u32.to_le_bytes());
                out.extend_from_slice(&x.to_le_bytes());
            }
            Meta::Str(s) => {
                out.extend_from_slice(&8u32.to_le_bytes());
                gguf_string(&mut out, s);
            }
            Meta::Tokens(n) => {
                out.extend_from_slice(&9u32.to_le_bytes());
                out.extend_from_slice(&8u32.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
                for i in 0..*n {
                    gguf_string(&mut out, &format!("<tok{i}>"));
                }
            }
        }
    }
    let mut offset = 0u64;
    for (name, dims, (ty, block, bytes)) in tensors {
        gguf_string(&mut out, name);
        out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset += (dims.iter().product::<u64>() / block * bytes).div_ceil(32) * 32;
    }
    let data_start = (out.len() as u64).div_ceil(32) * 32;
    fs::write(path, &out).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(data_start + offset)
        .unwrap();
    (out, offset)
}

/// llama.cpp's tensors for `spec` (dims innermost first), quantized the
/// way a Q4_K_M file is: Q4_K matrices, Q6_K for some, F32 vectors.
fn gguf_tensors(spec: &ModelSpec) -> Vec<TensorInfo> {
    let (h, d, i, v) = (
        spec.hidden_size,
        spec.head_dim,
        spec.intermediate_size,
        spec.vocab_size,
    );
    let (q, kv) = (
        u64::from(spec.num_attention_heads) * d,
        u64::from(spec.num_kv_heads) * d,
    );
    let quant = |dims: &[u64]| {
        if dims.len() == 1 {
            F32
        } else if dims[0] % 256 == 0 {
            Q4_K
        } else if dims[0] % 32 == 0 {
            Q8_0
        } else {
            F32
        }
    };
    let mut t: Vec<(String, Vec<u64>)> = vec![("token_embd.weight".into(), vec![h, v])];
    for l in 0..spec.num_layers {
        let p = |s: &str| format!("blk.{l}.{s}");
        t.push((p("attn_norm.weight"), vec![h]));
        if spec.norms_per_layer >= 2 {
            t.push((p("ffn_norm.weight"), vec![h]));
        }
        let linear = spec
            .linear_attention
            .as_ref()
            .filter(|la| (l + 1) % la.full_attention_interval != 0);
        if let Some(la) = linear {
            // llama.cpp's Gated DeltaNet tensors (src/models/qwen35moe.cpp).
            let (kd, vd, nv) = (
                u64::from(la.num_key_heads) * la.key_head_dim,
                u64::from(la.num_value_heads) * la.value_head_dim,
                u64::from(la.num_value_heads),
            );
            t.push((p("attn_qkv.weight"), vec![h, 2 * kd + vd]));
            t.push((p("attn_gate.weight"), vec![h, vd]));
            t.push((p("ssm_conv1d.weight"), vec![la.conv_kernel, 2 * kd + vd]));
            t.push((p("ssm_dt.bias"), vec![nv]));
            t.push((p("ssm_a"), vec![nv]));
            t.push((p("ssm_beta.weight"), vec![h, nv]));
            t.push((p("ssm_alpha.weight"), vec![h, nv]));
            t.push((p("ssm_norm.weight"), vec![la.value_head_dim]));
            t.push((p("ssm_out.weight"), vec![vd, h]));
        } else if let Some(m) = &spec.mla {
            let heads = u64::from(spec.num_attention_heads);
            let r = m.q_lora_rank.unwrap();
            t.push((p("attn_q_a.weight"), vec![h, r]));
            t.push((p("attn_q_a_norm.weight"), vec![r]));
            t.push((
                p("attn_q_b.weight"),
                vec![r, heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)],
            ));
            t.push((
                p("attn_kv_a_mqa.weight"),
                vec![h, m.kv_lora_rank + m.qk_rope_head_dim],
            ));
            t.push((p("attn_kv_a_norm.weight"), vec![m.kv_lora_rank]));
            t.push((
                p("attn_kv_b.weight"),
                vec![m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim)],
            ));
            t.push((p("attn_output.weight"), vec![heads * m.v_head_dim, h]));
        } else {
            let gate = if spec.attention_output_gate { 2 } else { 1 };
            t.push((p("attn_q.weight"), vec![h, q * gate]));
            t.push((p("attn_k.weight"), vec![h, kv]));
            t.push((p("attn_v.weight"), vec![h, kv]));
            t.push((p("attn_output.weight"), vec![q, h]));
            if spec.qkv_bias {
                t.push((p("attn_q.bias"), vec![q]));
                t.push((p("attn_k.bias"), vec![kv]));
                t.push((p("attn_v.bias"), vec![kv]));
            }
            if spec.attention_output_bias {
                t.push((p("attn_output.bias"), vec![h]));
            }
            if spec.attention_sinks {
                t.push((
                    p("attn_sinks.weight"),
                    vec![u64::from(spec.num_attention_heads)],
                ));
            }
        }
        if spec.qk_norm && linear.is_none() {
            if spec.qk_norm_per_head {
                t.push((
                    p("attn_q_norm.weight"),
                    vec![d, u64::from(spec.num_attention_heads)],
                ));
                t.push((
                    p("attn_k_norm.weight"),
                    vec![d, u64::from(spec.num_kv_heads)],
                ));
            } else {
                t.push((p("attn_q_norm.weight"), vec![d]));
                t.push((p("attn_k_norm.weight"), vec![d]));
            }
        }
        match &spec.moe {
            Some(m) if spec.is_moe_layer(l) => {
                let (e, ie) = (u64::from(m.num_experts), m.expert_intermediate_size);
                t.push((p("ffn_gate_inp.weight"), vec![h, e]));
                if m.router_bias {
                    // gpt-oss's router bias; DeepSeek-V3's selection bias.
                    let name = if spec.attention_sinks {
                        "ffn_gate_inp.bias"
                    } else {
                        "exp_probs_b.bias"
                    };
                    t.push((p(name), vec![e]));
                }
                t.push((p("ffn_gate_exps.weight"), vec![h, ie, e]));
                t.push((p("ffn_up_exps.weight"), vec![h, ie, e]));
                t.push((p("ffn_down_exps.weight"), vec![ie, h, e]));
                if spec.mlp_bias {
                    t.push((p("ffn_gate_exps.bias"), vec![ie, e]));
                    t.push((p("ffn_up_exps.bias"), vec![ie, e]));
                    t.push((p("ffn_down_exps.bias"), vec![h, e]));
                }
                if m.shared_expert_gate {
                    t.push((p("ffn_gate_inp_shexp.weight"), vec![h]));
                }
                if m.shared_experts > 0 {
                    let s = m
                        .shared_expert_intermediate_size
                        .unwrap_or(ie * u64::from(m.shared_experts));
                    t.push((p("ffn_gate_shexp.weight"), vec![h, s]));
                    t.push((p("ffn_up_shexp.weight"), vec![h, s]));
                    t.push((p("ffn_down_shexp.weight"), vec![s, h]));
                }
            }
            _ => {
                t.push((p("ffn_gate.weight"), vec![h, i]));
                t.push((p("ffn_up.weight"), vec![h, i]));
                t.push((p("ffn_down.weight"), vec![i, h]));
            }
        }
    }
    t.push(("output_norm.weight".into(), vec![h]));
    if !spec.tied_embeddings {
        t.push(("output.weight".into(), vec![h, v]));
    }
    t.into_iter()
        .map(|(n, dims)| {
            let ty = if n.ends_with("attn_v.weight") || n == "output.weight" {
                Q6_K
            } else if n.ends_with("_exps.weight")
                && spec.moe.as_ref().is_some_and(|m| m.mxfp4_experts)
            {
                MXFP4
            } else {
                quant(&dims)
            };
            let ty = if dims[0] % ty.1 == 0 { ty } else { F32 };
            (n, dims, ty)
        })
        .collect()
}

fn gguf_meta(arch: &str, spec: &ModelSpec, tokens: bool) -> Vec<(String, Meta)> {
    let k = |s: &str| format!("{arch}.{s}");
    let u = |v: u64| Meta::U32(u32::try_from(v).unwrap());
    let mut m = vec![
        ("general.architecture".to_string(), Meta::Str(arch.into())),
        ("general.name".to_string(), Meta::Str(spec.name.clone())),
        ("general.file_type".to_string(), Meta::U32(15)),
        (k("block_count"), u(spec.num_layers.into())),
        (k("embedding_length"), u(spec.hidden_size)),
        (k("feed_forward_length"), u(spec.intermediate_size)),
        (
            k("attention.head_count"),
            u(spec.num_attention_heads.into()),
        ),
        (k("attention.head_count_kv"), u(spec.num_kv_heads.into())),
    ];
    if let Some(c) = spec.max_context {
        m.push((k("context_length"), u(c)));
    }
    if spec.mla.is_none() {
        m.push((k("attention.key_length"), u(spec.head_dim)));
    }
    if let Some(e) = &spec.moe {
        m.push((k("expert_count"), u(e.num_experts.into())));
        m.push((k("expert_used_count"), u(e.experts_per_token.into())));
        if arch != "llama" {
            m.push((
                k("expert_feed_forward_length"),
                u(e.expert_intermediate_size),
            ));
        }
        if let Some(si) = e.shared_expert_intermediate_size {
            m.push((k("expert_shared_feed_forward_length"), u(si)));
        } else if e.shared_experts > 0 {
            m.push((k("expert_shared_count"), u(e.shared_experts.into())));
        }
        if e.dense_layers > 0 {
            m.push((k("leading_dense_block_count"), u(e.dense_layers.into())));
        }
        if let Some(step) = e.layer_step {
            m.push((k("interleave_moe_layer_step"), u(step.into())));
        }
    }
    if let Some(a) = &spec.mla {
        m.push((k("attention.q_lora_rank"), u(a.q_lora_rank.unwrap())));
        m.push((k("attention.kv_lora_rank"), u(a.kv_lora_rank)));
        m.push((
            k("attention.key_length"),
            u(a.qk_nope_head_dim + a.qk_rope_head_dim),
        ));
        m.push((k("attention.value_length"), u(a.v_head_dim)));
        m.push((k("rope.dimension_count"), u(a.qk_rope_head_dim)));
    }
    if let Some(w) = &spec.sliding_window {
        m.push((k("attention.sliding_window"), u(w.window)));
    }
    if let Some(la) = &spec.linear_attention {
        // The keys convert_hf_to_gguf.py writes for Qwen3-Next and Qwen3.5
        // (conversion/qwen.py), as a Qwen3.6-35B-A3B file's start-up log
        // prints them (llama.cpp issue 25121: conv_kernel 4, state_size
        // 128, group_count 16, time_step_rank 32, inner_size 4096,
        // full_attention_interval 4).
        m.push((k("ssm.conv_kernel"), u(la.conv_kernel)));
        m.push((k("ssm.state_size"), u(la.key_head_dim)));
        m.push((k("ssm.group_count"), u(la.num_key_heads.into())));
        m.push((k("ssm.time_step_rank"), u(la.num_value_heads.into())));
        m.push((
            k("ssm.inner_size"),
            u(la.value_head_dim * u64::from(la.num_value_heads)),
        ));
        m.push((
            k("full_attention_interval"),
            u(la.full_attention_interval.into()),
        ));
    }
    if tokens {
        m.push((
            "tokenizer.ggml.tokens".into(),
            Meta::Tokens(spec.vocab_size),
        ));
    }
    m
}

/// The catalog spec as a GGUF file states it (no publication dtype).
fn expected_from_gguf(id: &str, path: &Path) -> ModelSpec {
    let mut s = catalog_spec(id);
    s.name = path.to_str().unwrap().to_string();
    s.torch_dtype = None;
    // A GGUF holds the text model; the encoder is a separate mmproj file.
    s.multimodal_encoder = None;
    s.vision = None;
    s
}

/// Writes the catalog model `id` as a GGUF file of llama.cpp architecture
/// `arch` and loads it back, checking the spec and the parameter count match
/// the catalog's exactly. Returns the loaded model and the file's path (in a
/// directory that lives as long as the returned guard).
fn gguf_round_trip(id: &str, arch: &str, file: &str) -> (LoadedModel, PathBuf, tempfile::TempDir) {
    let spec = catalog_spec(id);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(file);
    write_gguf(&p, &gguf_meta(arch, &spec, false), &gguf_tensors(&spec));
    let loaded = load(&p).unwrap_or_else(|e| panic!("{id}: {e}"));
    assert_eq!(loaded.spec, expected_from_gguf(id, &p), "{id}");
    assert_eq!(
        loaded.weights.as_ref().unwrap().parameters,
        spec.parameters(),
        "{id}"
    );
    (loaded, p, dir)
}

#[test]
fn gguf_llama_matches_the_catalog_exactly() {
    let spec = catalog_spec("llama-3.1-8b");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("Meta-Llama-3.1-8B-Q4_K_M.gguf");
    let tensors = gguf_tensors(&spec);
    let (_, data) = write_gguf(&p, &gguf_meta("llama", &spec, true), &tensors);
    let loaded = load(&p).unwrap();
    assert!(matches!(&loaded.origin, ModelOrigin::Gguf { path } if path.ends_with(".gguf")));
    assert_eq!(loaded.spec, expected_from_gguf("llama-3.1-8b", &p));
    let w = loaded.weights.as_ref().unwrap();
    assert_eq!(w.parameters, 8_030_261_248);
    assert_eq!(w.quantization.as_deref(), Some("MOSTLY_Q4_K_M"));
    assert_eq!(w.tensors, tensors.len() as u64);
    // Exact bytes: elements / block × block bytes, per type.
    let exact: u64 = tensors
        .iter()
        .map(|(_, d, (_, b, s))| d.iter().product::<u64>() / b * s)
        .sum();
    assert_eq!(w.bytes, exact);
    assert!(w.bytes <= data);
    let q6: u64 = tensors
        .iter()
        .filter(|(_, _, t)| t.0 == 14)
        .map(|(_, d, _)| d.iter().product::<u64>() / 256 * 210)
        .sum();
    assert!(
        w.bytes_by_dtype.contains(&("Q6_K".to_string(), q6)),
        "{:?}",
        w.bytes_by_dtype
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // A directory holding one GGUF file loads it.
    let from_dir = load(dir.path()).unwrap();
    assert_eq!(from_dir.weights, loaded.weights);
}

#[test]
fn gguf_moe_models_match_the_catalog_exactly() {
    for (id, arch) in [
        ("mixtral-8x7b", "llama"),
        ("qwen3-30b-a3b", "qwen3moe"),
        ("deepseek-v3", "deepseek2"),
        ("glm-4.5-air", "glm4moe"),
        ("glm-4.5", "glm4moe"),
    ] {
        let (loaded, _, _dir) = gguf_round_trip(id, arch, &format!("{id}.gguf"));
        assert!(loaded.warnings.is_empty(), "{id}: {:?}", loaded.warnings);
    }
}

#[test]
fn gguf_hybrid_qwen_models_read_their_delta_net_layers() {
    // Qwen3-Next (catalog) and Qwen3.5 (the 397B config.json fixture) as
    // llama.cpp's qwen3next and qwen35moe GGUFs: the same spec (linear
    // layers, gated query, shared-expert gate) and parameters.
    let qwen35 = {
        let text = fs::read_to_string(support::fixture(
            "model-configs/qwen3.5-397b-a17b-config.json",
        ))
        .unwrap();
        hf_config::parse(&text, "x").unwrap().0
    };
    for (spec, arch) in [
        (catalog_spec("qwen3-next-80b-a3b"), "qwen3next"),
        (qwen35, "qwen35moe"),
        (catalog_spec("qwen3.5-27b"), "qwen35"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("{arch}.gguf"));
        let mut tensors = gguf_tensors(&spec);
        let mut meta = gguf_meta(arch, &spec, false);
        write_gguf(&p, &meta, &tensors);
        let loaded = load(&p).unwrap_or_else(|e| panic!("{arch}: {e}"));
        let mut want = spec.clone();
        want.name = p.to_str().unwrap().to_string();
        want.torch_dtype = None;
        want.multimodal_encoder = None;
        want.vision = None;
        // A GGUF records no state dtype (llama.cpp holds it in F32).
        if let Some(l) = want.linear_attention.as_mut() {
            l.ssm_state_dtype = None;
        }
        assert_eq!(loaded.spec, want, "{arch}");
        let w = loaded.weights.as_ref().unwrap();
        assert_eq!(w.parameters, spec.parameters(), "{arch}");
        assert!(loaded.warnings.is_empty(), "{arch}: {:?}", loaded.warnings);

        // One MTP block after the trunk (nextn_predict_layers 1, counted in
        // block_count): the same model, its tensors left out with a warning.
        let trunk = spec.num_layers;
        for (name, dims) in [
            ("attn_norm.weight", vec![spec.hidden_size]),
            (
                "nextn.eh_proj.weight",
                vec![2 * spec.hidden_size, spec.hidden_size],
            ),
        ] {
            tensors.push((format!("blk.{trunk}.{name}"), dims, F32));
        }
        for (k, v) in meta.iter_mut() {
            if k.ends_with(".block_count") {
                *v = Meta::U32(trunk + 1);
            }
        }
        meta.push((format!("{arch}.nextn_predict_layers"), Meta::U32(1)));
        let p2 = dir.path().join(format!("{arch}-mtp.gguf"));
        write_gguf(&p2, &meta, &tensors);
        let mtp = load(&p2).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(mtp.spec.num_layers, trunk, "{arch}");
        assert_eq!(mtp.weights.as_ref().unwrap().parameters, spec.parameters());
        assert_eq!(mtp.weights.as_ref().unwrap().bytes, w.bytes);
        assert!(
            mtp.warnings
                .iter()
                .any(|x| x
                    .contains("nextn_predict_layers 1: the 2 multi-token-prediction tensor(s)")),
            "{arch}: {:?}",
            mtp.warnings
        );
    }

    // Malformed hybrid metadata names the key.
    let spec = catalog_spec("qwen3-next-80b-a3b");
    let dir = tempfile::tempdir().unwrap();
    let mut meta = gguf_meta("qwen3next", &spec, false);
    for (k, v) in meta.iter_mut() {
        if k == "qwen3next.ssm.inner_size" {
            *v = Meta::U32(1000);
        }
    }
    let p = dir.path().join("bad.gguf");
    write_gguf(&p, &meta, &gguf_tensors(&spec));
    let e = load(&p).unwrap_err().to_string();
    assert!(e.contains("qwen3next.ssm.inner_size"), "{e}");
    let meta: Vec<_> = gguf_meta("qwen3next", &spec, false)
        .into_iter()
        .filter(|(k, _)| k != "qwen3next.ssm.state_size")
        .collect();
    write_gguf(&p, &meta, &gguf_tensors(&spec));
    let e = load(&p).unwrap_err().to_string();
    assert!(e.contains("qwen3next.ssm.state_size"), "{e}");
    // A full-attention interval of 0 (or beyond the layers) is an error
    // naming the key, not a panic.
    for bad in [0u32, 1000] {
        let mut meta = gguf_meta("qwen3next", &spec, false);
        for (k, v) in meta.iter_mut() {
            if k == "qwen3next.full_attention_interval" {
                *v = Meta::U32(bad);
            }
        }
        write_gguf(&p, &meta, &gguf_tensors(&spec));
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains("qwen3next.full_attention_interval"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn gguf_llama4_reads_interleaved_experts_and_chunked_attention() {
    // llama.cpp's llama4: MoE on every interleave_moe_layer_step-th layer
    // (Maverick 2, Scout 1) with a shared expert, chunked attention of 8192
    // tokens on 3 of every 4 layers. The vision tower is not in the GGUF.
    for id in ["llama-4-scout", "llama-4-maverick"] {
        let (_, p, _dir) = gguf_round_trip(id, "llama4", &format!("{id}.gguf"));
        let spec = catalog_spec(id);
        let mut meta = gguf_meta("llama4", &spec, false);
        // sliding_window 0: llama.cpp turns chunking off.
        for (k, v) in meta.iter_mut() {
            if k == "llama4.attention.sliding_window" {
                *v = Meta::U32(0);
            }
        }
        write_gguf(&p, &meta, &gguf_tensors(&spec));
        assert!(load(&p).unwrap().spec.sliding_window.is_none(), "{id}");
    }
}

#[test]
fn gguf_command_r_reads_its_single_layernorm_and_head_norms() {
    // llama.cpp's command-r: one bias-free LayerNorm per layer, tied
    // embeddings, and for Command R+ 08-2024 per-head Q/K norms.
    for id in ["command-r-v01", "command-r-plus-08-2024"] {
        gguf_round_trip(id, "command-r", &format!("{id}.gguf"));
    }
}

#[test]
fn gguf_gpt_oss_reads_sinks_biases_windows_and_mxfp4_experts() {
    // gpt-oss as llama.cpp's `gpt-oss` GGUF (src/models/openai-moe.cpp):
    // attention sinks, q/k/v/o biases, a router bias (ffn_gate_inp.bias),
    // expert biases, MXFP4 experts, every other layer sliding (128).
    for id in ["gpt-oss-20b", "gpt-oss-120b"] {
        let (loaded, _, _dir) = gguf_round_trip(id, "gpt-oss", &format!("{id}-mxfp4.gguf"));
        let w = loaded.weights.as_ref().unwrap();
        assert!(
            w.bytes_by_dtype.iter().any(|(t, _)| t == "MXFP4"),
            "{:?}",
            w.bytes_by_dtype
        );
        assert!(loaded.warnings.is_empty(), "{id}: {:?}", loaded.warnings);
    }
}

#[test]
fn gguf_split_files_are_read_together() {
    let spec = catalog_spec("qwen2.5-0.5b");
    let dir = tempfile::tempdir().unwrap();
    let tensors = gguf_tensors(&spec);
    let (a, b) = tensors.split_at(tensors.len() / 2);
    let mut meta = gguf_meta("qwen2", &spec, false);
    meta.push(("split.no".into(), Meta::U32(0)));
    meta.push(("split.count".into(), Meta::U32(2)));
    let first = dir.path().join("qwen-00001-of-00002.gguf");
    write_gguf(&first, &meta, a);
    let second_meta = vec![
        ("split.no".to_string(), Meta::U32(1)),
        ("split.count".to_string(), Meta::U32(2)),
    ];
    let second = dir.path().join("qwen-00002-of-00002.gguf");
    write_gguf(&second, &second_meta, b);
    for arg in [first.as_path(), second.as_path(), dir.path()] {
        let loaded = load(arg).unwrap_or_else(|e| panic!("{}: {e}", arg.display()));
        assert_eq!(
            loaded.weights.as_ref().unwrap().parameters,
            spec.parameters()
        );
        assert_eq!(loaded.spec.num_layers, 24);
        assert!(loaded.spec.qkv_bias && loaded.spec.tied_embeddings);
    }
    fs::remove_file(&second).unwrap();
    let e = load(&first).unwrap_err().to_string();
    assert!(
        e.contains("split.count") && e.contains("qwen-00002-of-00002.gguf is missing"),
        "{e}"
    );
}

#[test]
fn hostile_gguf_files_are_errors_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let spec = catalog_spec("llama-3.2-1b");
    let p = dir.path().join("m.gguf");
    let (full, _) = write_gguf(&p, &gguf_meta("llama", &spec, true), &gguf_tensors(&spec));
    let expect = |bytes: &[u8], field: &str| {
        fs::write(&p, bytes).unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("m.gguf") && e.contains(field), "{e}");
    };
    // Truncated inside the token list, inside the tensor infos, before the data.
    expect(&full[..5000], "tokenizer.ggml.tokens: needs");
    expect(&full[..full.len() - 40], "tensor info #145: needs 18 bytes");
    expect(
        &full[..full.len() - 20],
        "tensor output_norm.weight: needs 8 bytes",
    );
    expect(&full, "data ends at byte");
    let mut v1 = full.clone();
    v1[4..8].copy_from_slice(&1u32.to_le_bytes());
    expect(&v1, "version: GGUF version 1");
    let mut huge = full.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    expect(&huge, "tensor_count");
    expect(b"GGU", "magic");
    // An architecture we do not model.
    let q = dir.path().join("q.gguf");
    write_gguf(
        &q,
        &[("general.architecture".into(), Meta::Str("rwkv6".into()))],
        &[],
    );
    let e = load(&q).unwrap_err();
    assert!(
        matches!(e, ModelError::Unsupported { .. }) && e.to_string().contains("rwkv6"),
        "{e}"
    );
}

#[test]
fn several_gguf_files_must_be_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = catalog_spec("llama-3.2-1b");
    for name in ["a-Q4_K_M.gguf", "a-Q8_0.gguf"] {
        write_gguf(
            &dir.path().join(name),
            &gguf_meta("llama", &spec, false),
            &gguf_tensors(&spec),
        );
    }
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("2 .gguf files") && e.contains("a-Q8_0.gguf"),
        "{e}"
    );
}

#[test]
fn config_parse_is_pure_and_names_the_given_path() {
    let text = fs::read_to_string(fixture_config("gemma-2-9b")).unwrap();
    let (spec, warnings) = hf_config::parse(&text, "anything/config.json").unwrap();
    assert_eq!(spec.name, "anything/config.json");
    assert!(warnings.is_empty());
    assert_eq!(spec.parameters(), 9_241_705_984);
}

#[test]
fn qwen3_5_moe_config_reads_its_nested_hybrid_text_model() {
    // Qwen/Qwen3.5-397B-A17B's published config.json (provenance in
    // SOURCES.md): the language model under text_config, Gated DeltaNet
    // layers with full attention every 4th, one MTP layer that plans do
    // not count, and a vision tower they record.
    let path = support::fixture("model-configs/qwen3.5-397b-a17b-config.json");
    let text = fs::read_to_string(&path).unwrap();
    let (spec, warnings) = hf_config::parse(&text, "qwen3.5/config.json").unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("text_config.mtp_num_hidden_layers 1"));
    // 27 layers of 1152 and a merger to the text width 4096.
    assert_eq!(spec.vision_params(), 456_010_480);
    assert_eq!(spec.architecture, "qwen3_5_moe_text");
    assert_eq!(
        (spec.num_layers, spec.hidden_size, spec.vocab_size),
        (60, 4096, 248_320)
    );
    assert_eq!(spec.torch_dtype.as_deref(), Some("bf16"));
    assert!(spec.attention_output_gate && spec.qk_norm && !spec.tied_embeddings);
    // 60 layers: 45 Gated DeltaNet, 15 full attention (3, 7, …, 59).
    assert_eq!(spec.linear_layers(), 45);
    assert_eq!(
        spec.attention_kind(3),
        ai_hwaccel::plan::AttentionKind::Global
    );
    assert_eq!(
        spec.attention_kind(4),
        ai_hwaccel::plan::AttentionKind::Linear
    );
    // The text model alone, as llama-bench prints it for GGUF conversions
    // of this model without the MTP layer: 396.35 B; "A17B" active.
    assert_eq!(spec.parameters(), 396_346_350_336);
    assert_eq!(spec.active_parameters(), 17_349_040_896);
    // KV: only the 15 full-attention layers, 2 KV heads of 256, K and V.
    assert_eq!(spec.kv_cache_bytes_per_token(2.0), 15 * 2 * 2 * 256 * 2);
    // State per sequence in each DeltaNet layer: the convolution window
    // (kernel 4 - 1) over q, k and v (2·16·128 + 64·128 channels) and
    // 64 value heads of 128 × 128.
    let l = spec.linear_attention.as_ref().unwrap();
    assert_eq!(
        l.state_elements(),
        3 * (2 * 16 * 128 + 64 * 128) + 64 * 128 * 128
    );
    let moe = spec.moe.as_ref().unwrap();
    assert_eq!(
        (
            moe.num_experts,
            moe.experts_per_token,
            moe.expert_intermediate_size
        ),
        (512, 10, 1024)
    );
    assert_eq!(moe.shared_expert_intermediate_size, Some(1024));
    assert!(moe.shared_expert_gate);

    // The multimodal checkpoint's encoder as SGLang reads it: `depth`
    // (transformers 5's `num_hidden_layers` for Qwen-VL) and the width.
    assert_eq!(
        spec.multimodal_encoder,
        Some(ai_hwaccel::plan::arch::MultimodalEncoder {
            layers: 27,
            hidden_size: 1152
        })
    );
    // The same text model as a flat Qwen3_5MoeForCausalLM config: the
    // same spec, without the vision tower or an encoder.
    let root: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut flat = root["text_config"].clone();
    flat["tie_word_embeddings"] = root["tie_word_embeddings"].clone();
    let (flat_spec, flat_warnings) =
        hf_config::parse(&flat.to_string(), "qwen3.5/config.json").unwrap();
    assert_eq!(flat_spec.multimodal_encoder, None);
    assert_eq!(flat_spec.vision, None);
    let mut spec = spec;
    spec.multimodal_encoder = None;
    spec.vision = None;
    assert_eq!(flat_spec, spec);
    assert_eq!(flat_warnings.len(), 1, "{flat_warnings:?}");

    // Without text_config the error names the field; with fields left
    // out, Qwen3_5MoeTextConfig's defaults fill them and a warning says so.
    let mut bare = root.clone();
    bare.as_object_mut().unwrap().remove("text_config");
    let e = hf_config::parse(&bare.to_string(), "q/config.json").unwrap_err();
    assert!(e.to_string().contains("text_config"), "{e}");
    let mut sparse = root.clone();
    let tc = sparse["text_config"].as_object_mut().unwrap();
    tc.remove("moe_intermediate_size");
    tc.remove("shared_expert_intermediate_size");
    let (s2, w2) = hf_config::parse(&sparse.to_string(), "q/config.json").unwrap();
    assert_eq!(s2.moe.as_ref().unwrap().expert_intermediate_size, 512);
    assert!(
        w2.iter().any(|w| w.contains(
            "text_config.moe_intermediate_size, shared_expert_intermediate_size absent: using Qwen3_5MoeTextConfig's defaults"
        )),
        "{w2:?}"
    );
    // A layer pattern other than full attention every 4th is refused.
    let mut odd = root;
    odd["text_config"]["layer_types"][5] = json!("full_attention");
    let e = hf_config::parse(&odd.to_string(), "q/config.json").unwrap_err();
    assert!(e.to_string().contains("layer_types[5]"), "{e}");
}

#[test]
fn gpt_oss_config_counts_sinks_biases_windows_and_mxfp4_scales() {
    // A verbatim copy of gpt-oss-20b's config.json without its
    // quantization_config (provenance in SOURCES.md): the BF16 layout.
    let path = support::fixture("model-configs/gpt-oss-20b-config.json");
    let text = fs::read_to_string(&path).unwrap();
    let (spec, warnings) = hf_config::parse(&text, "gpt-oss-20b/config.json").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // Hub safetensors total of a BF16 re-upload (ArliAI/gpt-oss-20b-Derestricted,
    // llmfit data/hf_models.json): q/k/v/o with biases, 64 sinks, router with
    // bias, 32 experts with gate_up/down biases, untied head.
    assert_eq!(spec.parameters(), 20_914_757_184);
    assert_eq!(spec.hub_parameter_total(), spec.parameters());
    // Active: 4 of 32 experts; minus the 579,133,440-parameter input
    // embedding this is the model card's "3.6B active".
    assert_eq!(spec.active_parameters(), 4_187_440_704);
    assert_eq!(
        spec.active_parameters() - spec.embedding_params(),
        3_608_307_264
    );
    let moe = spec.moe.as_ref().unwrap();
    assert!(moe.router_bias && !moe.mxfp4_experts);
    assert!(spec.attention_sinks && spec.qkv_bias && spec.attention_output_bias);
    // layer_types alternate sliding (window 128) and full, sliding first.
    let w = spec.sliding_window.as_ref().unwrap();
    assert_eq!((w.window, w.layers), (128, 12));
    assert_eq!(
        spec.attention_kind(0),
        ai_hwaccel::plan::AttentionKind::Sliding
    );
    assert_eq!(
        spec.attention_kind(1),
        ai_hwaccel::plan::AttentionKind::Global
    );
    // KV at 8192 tokens: 12 full layers hold 8192 tokens, 12 sliding ones
    // 128; 2 × 8 KV heads × 64 = 1024 elements per token and layer, 2 bytes.
    assert_eq!(
        spec.kv_cache_bytes(8192, 1, 2.0),
        12 * 1024 * (8192 + 128) * 2
    );
    // The published config declares MXFP4 experts (quantization_config of
    // https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json); the
    // Hub then counts one E8M0 scale per 32 expert weights as well:
    // openai/gpt-oss-20b's safetensors total is 21,511,953,984 (llmfit
    // data/hf_models.json).
    let published = text.replace(
        "  \"rms_norm_eps\": 1e-05,\n",
        "  \"quantization_config\": {\n    \"modules_to_not_convert\": [\n      \"model.layers.*.self_attn\",\n      \"model.layers.*.mlp.router\",\n      \"model.embed_tokens\",\n      \"lm_head\"\n    ],\n    \"quant_method\": \"mxfp4\"\n  },\n  \"rms_norm_eps\": 1e-05,\n",
    );
    assert_ne!(published, text);
    let (mx, warnings) = hf_config::parse(&published, "gpt-oss-20b/config.json").unwrap();
    assert!(mx.moe.as_ref().unwrap().mxfp4_experts);
    assert!(warnings.iter().any(|w| w.contains("mxfp4")), "{warnings:?}");
    assert_eq!(mx.parameters(), 20_914_757_184);
    assert_eq!(mx.mxfp4_scale_elements(), 597_196_800);
    assert_eq!(mx.hub_parameter_total(), 21_511_953_984);
    // gpt-oss-120b's config differs in 36 layers (18 × sliding, full) and
    // 128 experts (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json);
    // its Hub total is 120,412,337,472 (llmfit data/hf_models.json).
    let mut big: serde_json::Value = serde_json::from_str(&published).unwrap();
    big["num_hidden_layers"] = json!(36);
    big["num_local_experts"] = json!(128);
    big["layer_types"] = json!(["sliding_attention", "full_attention"].repeat(18));
    let (big, _) = hf_config::parse(&big.to_string(), "gpt-oss-120b/config.json").unwrap();
    assert_eq!(big.parameters(), 116_829_156_672);
    assert_eq!(big.hub_parameter_total(), 120_412_337_472);
}

#[test]
fn mxfp4_experts_are_planned_at_4_25_bits() {
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, plan_inference};
    let text =
        fs::read_to_string(support::fixture("model-configs/gpt-oss-20b-config.json")).unwrap();
    let (bf16, _) = hf_config::parse(&text, "gpt-oss-20b/config.json").unwrap();
    let mut mx = bf16.clone();
    mx.moe.as_mut().unwrap().mxfp4_experts = true;
    let devices = PlanDevice::from_device_string("1xh100-sxm").unwrap();
    let opts = InferenceOptions {
        quant: Some(Quant::Bf16),
        context: Some(4096),
        ..Default::default()
    };
    let weights = |spec| {
        let p = plan_inference(spec, &devices, &opts);
        assert!(p.feasible, "{:?}", p.rejected);
        p.plans[0].per_device[0].weights_bytes
    };
    // 24 layers × 32 experts × (gate/up 2880×5760 + down 2880×2880) matrix
    // weights go from 2 bytes to 4.25 bits (32 FP4 + one E8M0 per block);
    // biases, attention, router, embeddings stay 16-bit.
    let matrices: u64 = 24 * 32 * (2880 * 5760 + 2880 * 2880);
    let saved = matrices * 2 - matrices * 17 / 32;
    assert_eq!(weights(&bf16) - weights(&mx), saved);
    // Q4_0 (4.5 bits) holds the experts at MXFP4's 4.25; Q3_K (3.44 bits)
    // has fewer bits than MXFP4 and is not widened back.
    let q4_0 = InferenceOptions {
        quant: Some(Quant::Q4_0),
        runtime: ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        ..opts.clone()
    };
    let at = |spec, o: &InferenceOptions| {
        plan_inference(spec, &devices, o).plans[0].per_device[0].weights_bytes
    };
    assert!(at(&mx, &q4_0) < at(&bf16, &q4_0));
    let opts4 = InferenceOptions {
        quant: Some(Quant::Q3K),
        runtime: ai_hwaccel::plan::RuntimeKind::LlamaCpp,
        ..opts.clone()
    };
    let q4 = |spec| plan_inference(spec, &devices, &opts4).plans[0].per_device[0].weights_bytes;
    assert_eq!(q4(&bf16), q4(&mx));
}

#[test]
fn llama4_vision_config_counts_the_tower_and_odd_layouts_are_refused() {
    // aiconfigurator's copy keeps text_config only: the tower is named, not
    // counted.
    let text = fs::read_to_string(fixture_config("llama-4-maverick")).unwrap();
    let (spec, warnings) = hf_config::parse(&text, "maverick/config.json").unwrap();
    assert!(spec.vision.is_none());
    assert!(
        warnings.iter().any(|w| w.contains("vision_config")),
        "{warnings:?}"
    );
    // With the published vision_config the spec counts it: the Hub total of
    // meta-llama/Llama-4-Maverick-17B-128E-Instruct, as the catalog's
    // stored_vision does.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["vision_config"] = json!({
        "hidden_size": 1408, "image_size": 336, "intermediate_size": 5632,
        "model_type": "llama4_vision_model", "multi_modal_projector_bias": false,
        "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 34,
        "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096,
        "projector_output_dim": 4096, "vision_output_dim": 4096
    });
    let (full, warnings) = hf_config::parse(&v.to_string(), "maverick/config.json").unwrap();
    assert!(
        !warnings.iter().any(|w| w.contains("vision")),
        "{warnings:?}"
    );
    assert_eq!(full.vision_params(), 871_932_416);
    assert_eq!(full.hub_parameter_total(), 401_583_781_376);
    let catalog = catalog::find("llama-4-maverick").unwrap();
    assert_eq!(catalog.stored_vision.as_ref(), full.vision.as_ref());
    // MoE on other layers than every second one is not modelled.
    let mut odd = v.clone();
    odd["text_config"]["moe_layers"] = json!([0, 2, 4]);
    let e = hf_config::parse(&odd.to_string(), "m").unwrap_err();
    assert!(matches!(e, ModelError::Unsupported { .. }), "{e}");
    odd = v;
    odd["text_config"]["moe_layers"] = json!((0..48).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    assert!(hf_config::parse(&odd.to_string(), "m").is_ok());
}

#[test]
fn qwen3_5_vision_config_counts_the_tower_and_merger() {
    // Qwen/Qwen3.5-27B's published config.json (SOURCES.md): vision_config
    // with depth 27, width 1152, MLP 4304, 16-pixel patches over 2 frames,
    // 2304 learned positions and a 2 × 2 merger to the text width 5120.
    let text = fs::read_to_string(fixture_config("qwen3.5-27b")).unwrap();
    let (spec, warnings) = hf_config::parse(&text, "q/config.json").unwrap();
    assert!(
        !warnings.iter().any(|w| w.contains("vision")),
        "{warnings:?}"
    );
    let v = spec.vision.as_ref().unwrap();
    // One layer: qkv 1152·3456 + 3456, proj 1152² + 1152, fc1 1152·4304 +
    // 4304, fc2 4304·1152 + 1152, two LayerNorms 4·1152. A real mmproj of
    // this encoder (llama.cpp's converter: matrices bf16, vectors f32) steps
    // 30,508,352 bytes a block (JamePeng/llama-cpp-python issue 78's
    // clip_model_loader dump: v.blk.5.ffn_down at offset 691,757,248,
    // v.blk.9.ffn_down at 813,790,656, four blocks apart).
    let per_layer = v.layer_params() / 27;
    assert_eq!(per_layer, 15_239_504);
    let vectors = 3456 + 1152 + 4304 + 1152 + 4 * 1152;
    assert_eq!(2 * (per_layer - vectors) + 4 * vectors, 30_508_352);
    assert_eq!((813_790_656 - 691_757_248) / 4, 30_508_352);
    // Patch convolution 3·2·16²·1152 + 1152, positions 2304·1152, the
    // merger's LayerNorm 2·1152, fc1 4608² + 4608 and fc2 4608·5120 + 5120.
    let merger = (4608 * 4608 + 4608) + (4608 * 5120 + 5120);
    assert_eq!(
        spec.vision_params(),
        1_770_624 + 2_654_208 + 27 * 15_239_504 + 2304 + merger
    );
    assert_eq!(spec.vision_params(), 460_730_096);
    // The whole tower as llama.cpp's converter stores it in a BF16 mmproj
    // (matrices bf16; the two patch-convolution halves, the positions and
    // every vector f32): 931,126,208 bytes, 887.99 MiB, what llama-server's
    // CLIP loader printed for unsloth's Qwen3.6-27B mmproj-BF16.gguf (the
    // 27B's tower): `load_hparams: model size: 887.99 MiB` (a published
    // 2026-05 llama-server log of an RTX 5090, public code store index id
    // 56678392724; its repository is not named there).
    let matrices = 27 * (4 * 1152 * 1152 + 2 * 1152 * 4304) + 4608 * 4608 + 4608 * 5120;
    let f32s = spec.vision_params() - matrices;
    assert_eq!(
        f32s,
        1_769_472 + 2_654_208 + 27 * 14_672 + 2304 + 4608 + 5120 + 1152
    );
    let bytes = 2 * matrices + 4 * f32s;
    assert_eq!(bytes, 931_126_208);
    assert_eq!(format!("{:.2}", bytes as f64 / 1_048_576.0), "887.99");
    // TP splits the layers and the merger's matrices (vLLM and SGLang
    // qwen3_vl.py); the convolution, positions and merger norm stay whole.
    assert_eq!(v.tp_split_params(5120), 27 * 15_239_504 + merger);
    // The catalog entry carries the same tower.
    assert_eq!(
        catalog::find("qwen3.5-27b").unwrap().spec.vision.as_ref(),
        Some(v)
    );

    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
    // transformers' own spelling of the layer count is read too.
    let mut alias = j.clone();
    let depth = alias["vision_config"]
        .as_object_mut()
        .unwrap()
        .remove("depth")
        .unwrap();
    alias["vision_config"]["num_hidden_layers"] = depth;
    let (s2, _) = hf_config::parse(&alias.to_string(), "q").unwrap();
    assert_eq!(s2.vision, spec.vision);
    // A size left out: named, not counted.
    j["vision_config"]
        .as_object_mut()
        .unwrap()
        .remove("num_position_embeddings");
    let (s3, w3) = hf_config::parse(&j.to_string(), "q").unwrap();
    assert!(s3.vision.is_none());
    assert!(
        w3.iter()
            .any(|w| w.contains("vision_config lacks num_position_embeddings")),
        "{w3:?}"
    );
    // Qwen3-VL's deepstack mergers and a merger to another width are not
    // modelled: refused, naming the field.
    let mut deep: serde_json::Value = serde_json::from_str(&text).unwrap();
    deep["vision_config"]["deepstack_visual_indexes"] = json!([8, 16, 24]);
    let e = hf_config::parse(&deep.to_string(), "q").unwrap_err();
    assert!(e.to_string().contains("deepstack_visual_indexes"), "{e}");
    let mut wide: serde_json::Value = serde_json::from_str(&text).unwrap();
    wide["vision_config"]["out_hidden_size"] = json!(4096);
    let e = hf_config::parse(&wide.to_string(), "q").unwrap_err();
    assert!(e.to_string().contains("out_hidden_size 4096"), "{e}");
    // Hostile sizes are refused by validation, not overflowed.
    let mut huge: serde_json::Value = serde_json::from_str(&text).unwrap();
    huge["vision_config"]["spatial_merge_size"] = json!(1000);
    let e = hf_config::parse(&huge.to_string(), "q").unwrap_err();
    assert!(e.to_string().contains("spatial_merge_size"), "{e}");
    let mut huge: serde_json::Value = serde_json::from_str(&text).unwrap();
    huge["vision_config"]["hidden_size"] = json!(1u64 << 40);
    let e = hf_config::parse(&huge.to_string(), "q").unwrap_err();
    assert!(e.to_string().contains("vision.hidden_size"), "{e}");
}

/// A sentence-transformers directory (modules.json with a Pooling module, in
/// the format `SentenceTransformer.save` writes) whose config.json names the
/// causal-LM class plans as the catalog's Qwen3-Embedding does: an encoder,
/// no LM head, no KV cache; a broken modules.json is an error naming it.
#[test]
fn sentence_transformers_directories_plan_as_embedding_models() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture_config("qwen3-embedding-0.6b"),
        dir.path().join("config.json"),
    )
    .unwrap();
    let bare = load(dir.path()).unwrap();
    assert!(!bare.spec.encoder, "without modules.json: a chat model");
    std::fs::write(
        dir.path().join("modules.json"),
        r#"[
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
]"#,
    )
    .unwrap();
    let m = load(dir.path()).unwrap();
    assert!(m.spec.encoder);
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("sentence-transformers"))
    );
    let want = catalog_spec("qwen3-embedding-0.6b");
    assert_eq!(
        ModelSpec {
            name: want.name.clone(),
            ..m.spec.clone()
        },
        want
    );
    // A list without a pooling module changes nothing.
    std::fs::write(
        dir.path().join("modules.json"),
        r#"[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]"#,
    )
    .unwrap();
    assert!(!load(dir.path()).unwrap().spec.encoder);
    // Not a list: an error naming the file and the field.
    std::fs::write(dir.path().join("modules.json"), r#"{"type": "x"}"#).unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("modules.json") && e.contains("modules"), "{e}");
}

/// A ModelOpt NVFP4 export: Llama-3.3-70B-Instruct's published config.json
/// (the fixture, copied byte for byte) with the `quantization_config` block
/// ModelOpt writes into config.json (`quant_method: modelopt`,
/// `quant_algo: NVFP4`, `group_size: 16`, `ignore: ["lm_head"]`; the keys
/// vLLM's `ModelOptNvFp4Config` reads, vllm 0.33.0
/// `model_executor/layers/quantization/modelopt.py`). The model is planned
/// at nvfp4 where FP4 is native, at the bytes of the format by hand.
#[test]
fn modelopt_nvfp4_config_is_planned_at_nvfp4() {
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, options_for, plan_inference};
    let text = fs::read_to_string(fixture_config("llama-3.3-70b")).unwrap();
    let nvfp4 = text.replace(
        "  \"pretraining_tp\": 1,\n",
        "  \"pretraining_tp\": 1,\n  \"quantization_config\": {\n    \"group_size\": 16,\n    \"ignore\": [\"lm_head\"],\n    \"quant_algo\": \"NVFP4\",\n    \"quant_method\": \"modelopt\"\n  },\n",
    );
    assert_ne!(nvfp4, text);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("config.json");
    fs::write(&p, &nvfp4).unwrap();
    let m = load(&p).unwrap();
    assert_eq!(m.spec.torch_dtype.as_deref(), Some("nvfp4"));
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("modelopt 4-bit, NVFP4, group 16")),
        "{:?}",
        m.warnings
    );
    let opts = options_for(
        &m,
        &InferenceOptions {
            context: Some(4096),
            ..Default::default()
        },
    );
    let b200 = PlanDevice::from_device_string("1xb200").unwrap();
    let plan = plan_inference(&m.spec, &b200, &opts);
    assert_eq!(plan.suggested_quantization, Some(Quant::Nvfp4));
    // 80 layers of q, o (8192²), k, v (8192 × 1024) and the gated MLP
    // (3 × 8192 × 28672) at 9 bytes per 16 weights; the embedding and head
    // (128256 × 8192 each) and the norms (2 × 8192 per layer and the final
    // one) at 2 bytes.
    let matrices: u64 = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672);
    let sixteen: u64 = 2 * 128_256 * 8192 + 80 * 2 * 8192 + 8192;
    assert_eq!(
        plan.plans[0].per_device[0].weights_bytes,
        matrices / 16 * 9 + 2 * sixteen
    );
    assert_eq!(matrices / 16 * 9 + 2 * sixteen, 42_709_041_152);
    // Never a level with more bits than the checkpoint's: on a device
    // without FP4 units the suggestion is a 4-bit level too, not fp8.
    let h200 = PlanDevice::from_device_string("1xh200").unwrap();
    let on_hopper = plan_inference(&m.spec, &h200, &opts);
    assert_eq!(on_hopper.suggested_quantization, Some(Quant::Int4));
}

/// The level a checkpoint is stored at: gpt-oss's `quant_method: mxfp4`
/// covers only its routed experts (held at MXFP4 by the spec), so the
/// stored level is the 16-bit type of everything else; a GGUF file typed
/// `MOSTLY_MXFP4_MOE` is at mxfp4, a ModelOpt NVFP4 checkpoint at nvfp4.
#[test]
fn stored_mxfp4_and_nvfp4_levels() {
    use ai_hwaccel::plan::{InferenceOptions, Quant, StoredWeights, options_for};
    let text =
        fs::read_to_string(support::fixture("model-configs/gpt-oss-20b-config.json")).unwrap();
    let published = text.replace(
        "  \"rms_norm_eps\": 1e-05,\n",
        "  \"quantization_config\": {\n    \"quant_method\": \"mxfp4\"\n  },\n  \"rms_norm_eps\": 1e-05,\n",
    );
    let (spec, _) = hf_config::parse(&published, "gpt-oss-20b/config.json").unwrap();
    let stored = |quantization: &str, bytes: u64| StoredWeights {
        parameters: 0,
        bytes,
        bytes_by_dtype: vec![("U8".into(), bytes)],
        tensors: 1,
        quantization: Some(quantization.into()),
        matmul_bytes: Vec::new(),
    };
    let model = |spec: &ModelSpec, w: StoredWeights| LoadedModel {
        spec: spec.clone(),
        origin: ModelOrigin::Size {
            size: "20b".into(),
            shape_of: "gpt-oss-20b".into(),
        },
        weights: Some(w),
        warnings: Vec::new(),
    };
    let o = options_for(
        &model(&spec, stored("mxfp4", 13_000_000_000)),
        &InferenceOptions::default(),
    );
    assert_eq!(o.stored_weights, Some((Quant::Bf16, 13_000_000_000)));
    assert_eq!(o.quant, Some(Quant::Bf16));
    // Without MXFP4 experts in the spec the label is the level.
    let mut dense = spec.clone();
    dense.moe.as_mut().unwrap().mxfp4_experts = false;
    let o = options_for(
        &model(&dense, stored("MOSTLY_MXFP4_MOE", 1)),
        &InferenceOptions::default(),
    );
    assert_eq!(o.quant, Some(Quant::Mxfp4));
    let o = options_for(
        &model(&dense, stored("nvfp4", 1)),
        &InferenceOptions::default(),
    );
    assert_eq!(o.quant, Some(Quant::Nvfp4));
}

/// A ModelOpt NVFP4 checkpoint of Llama-3.1-8B as headers: every projection
/// stored as U8 `[N, K/2]` (two E2M1 values per byte) with an F8_E4M3
/// `weight_scale` `[N, K/16]`, an F32 `weight_scale_2` and `input_scale`;
/// embedding, head and norms BF16 (the tensor names and types vLLM's
/// `ModelOptNvFp4LinearMethod` loads). The parameters are the model's, the
/// level nvfp4, and the plan holds the stored bytes.
#[test]
fn modelopt_nvfp4_checkpoint_is_read_and_planned_exactly() {
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, options_for, plan_inference};
    let spec = catalog_spec("llama-3.1-8b");
    let mut tensors = Vec::new();
    let mut matrices = 0;
    for (name, shape) in hf_tensors(&spec) {
        let projection = name.ends_with("_proj.weight");
        if !projection {
            tensors.push((name, shape, "BF16", 2));
            continue;
        }
        let (n, k) = (shape[0], shape[1]);
        matrices += n * k;
        let stem = name.trim_end_matches(".weight").to_string();
        tensors.push((name, vec![n, k / 2], "U8", 1));
        tensors.push((
            format!("{stem}.weight_scale"),
            vec![n, k / 16],
            "F8_E4M3",
            1,
        ));
        tensors.push((format!("{stem}.weight_scale_2"), vec![], "F32", 4));
        tensors.push((format!("{stem}.input_scale"), vec![], "F32", 4));
    }
    assert_eq!(matrices, 6_979_321_856);
    let dir = tempfile::tempdir().unwrap();
    let config = fs::read_to_string(fixture_config("llama-3.1-8b")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&config).unwrap();
    config["quantization_config"] = json!({
        "quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "ignore": ["lm_head"]
    });
    fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    write_safetensors(&dir.path().join("model.safetensors"), &tensors);
    let m = load(dir.path()).unwrap();
    let w = m.weights.as_ref().unwrap();
    assert_eq!(w.parameters, spec.parameters());
    assert!(
        !m.warnings.iter().any(|w| w.contains("the tensors hold")),
        "{:?}",
        m.warnings
    );
    // 224 projections: 9 bytes per 16 weights and two 4-byte scales each;
    // 16-bit embedding, head and norms.
    let sixteen = 2 * (2 * 128_256 * 4096 + 32 * 2 * 4096 + 4096);
    assert_eq!(w.bytes, matrices / 16 * 9 + 224 * 8 + sixteen);
    assert_eq!(w.level(), Some(Quant::Nvfp4));
    let opts = options_for(&m, &InferenceOptions::default());
    assert_eq!(opts.quant, Some(Quant::Nvfp4));
    let p = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("1xb200").unwrap(),
        &opts,
    );
    assert_eq!(p.plans[0].per_device[0].weights_bytes, w.bytes);
}

/// ModelOpt exports whose config.json declares no quantization carry it in
/// `hf_quant_config.json` beside it (the layout of the one stored at
/// peaceh-nv/TensorRT-LLM@8d8be36b538750351b725de99a2606342f982b59:hf_quant_config.json:
/// `producer` modelopt 0.23.0, `quantization` with `quant_algo` "NVFP4",
/// `kv_cache_quant_algo` null, `group_size` 16, `exclude_modules`): the
/// model is planned at nvfp4 as if config.json had said it.
#[test]
fn hf_quant_config_beside_config_json() {
    use ai_hwaccel::plan::{InferenceOptions, PlanDevice, Quant, options_for, plan_inference};
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        fixture_config("llama-3.3-70b"),
        dir.path().join("config.json"),
    )
    .unwrap();
    let hf_quant = dir.path().join("hf_quant_config.json");
    fs::write(
        &hf_quant,
        r#"{
    "producer": {
        "name": "modelopt",
        "version": "0.23.0"
    },
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": null,
        "group_size": 16,
        "exclude_modules": [
            "lm_head"
        ]
    }
}
"#,
    )
    .unwrap();
    let m = load(dir.path()).unwrap();
    assert_eq!(m.spec.torch_dtype.as_deref(), Some("nvfp4"));
    assert!(
        m.warnings.iter().any(|w| w.contains(
            "hf_quant_config.json declares quantized weights (modelopt 4-bit, NVFP4, group 16)"
        )),
        "{:?}",
        m.warnings
    );
    let opts = options_for(
        &m,
        &InferenceOptions {
            context: Some(4096),
            ..Default::default()
        },
    );
    let p = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("1xb200").unwrap(),
        &opts,
    );
    assert_eq!(p.suggested_quantization, Some(Quant::Nvfp4));
    assert_eq!(p.plans[0].per_device[0].weights_bytes, 42_709_041_152);
    // The config.json given by name finds it too.
    let direct = load(&dir.path().join("config.json")).unwrap();
    assert_eq!(direct.spec.torch_dtype.as_deref(), Some("nvfp4"));
    // FP8 the same way; a malformed file is an error naming it.
    fs::write(&hf_quant, r#"{"quantization": {"quant_algo": "FP8"}}"#).unwrap();
    assert_eq!(
        load(dir.path()).unwrap().spec.torch_dtype.as_deref(),
        Some("fp8")
    );
    fs::write(&hf_quant, r#"{"quantization": ["NVFP4"]}"#).unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("hf_quant_config.json: quantization: expected an object"),
        "{e}"
    );
    // A quantization_config in config.json wins.
    let text = fs::read_to_string(fixture_config("llama-3.3-70b")).unwrap();
    fs::write(
        dir.path().join("config.json"),
        text.replace(
            "  \"pretraining_tp\": 1,\n",
            "  \"pretraining_tp\": 1,\n  \"quantization_config\": {\"quant_method\": \"fp8\"},\n",
        ),
    )
    .unwrap();
    assert_eq!(
        load(dir.path()).unwrap().spec.torch_dtype.as_deref(),
        Some("fp8")
    );
}
