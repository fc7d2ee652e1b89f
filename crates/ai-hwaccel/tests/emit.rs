//! `plan --emit` (issue 17 item 1): launch commands whose values are the
//! plan's own — parallel sizes that multiply to the devices used, the
//! planned context and concurrency, the cache type, llama.cpp's layer split
//! from the per-device layers — and clear errors where a runtime cannot run
//! the plan as it stands. Every emitted flag is checked against the
//! runtime's pinned definitions in `tests/fixtures/runtimes/` (llama.cpp,
//! vLLM, SGLang, TensorRT-LLM), whose version `Launch::version` names.

use ai_hwaccel::plan::runtime::{RuntimeKind, emit};
use ai_hwaccel::plan::{
    InferenceOptions, KvDtype, ModelOrigin, PlanDevice, Quant, load_model, plan_inference,
};

fn value<'a>(argv: &'a [String], flag: &str) -> &'a str {
    let i = argv
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("{flag} missing from {argv:?}"));
    &argv[i + 1]
}

#[test]
fn vllm_command_carries_the_plans_sizes() {
    let m = load_model("llama-3.1-70b").unwrap();
    let p = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Vllm,
            context: Some(32768),
            batch: 4,
            ..Default::default()
        },
    );
    for (i, choice) in p.plans.iter().enumerate().take(3) {
        let l = emit(&p, i, &m.origin).unwrap();
        assert_eq!(l.runtime, RuntimeKind::Vllm);
        assert_vllm_accepts(&l);
        assert_eq!(&l.argv[..3], ["vllm", "serve", "meta-llama/Llama-3.1-70B"]);
        let tp: u32 = value(&l.argv, "--tensor-parallel-size").parse().unwrap();
        let pp: u32 = value(&l.argv, "--pipeline-parallel-size").parse().unwrap();
        let dp: u32 = l
            .argv
            .iter()
            .position(|a| a == "--data-parallel-size")
            .map_or(1, |k| l.argv[k + 1].parse().unwrap());
        assert_eq!(
            (tp, pp, dp),
            (
                choice.tensor_parallel,
                choice.pipeline_parallel,
                choice.data_parallel
            )
        );
        assert_eq!(tp * pp * dp, choice.devices_used);
        assert_eq!(value(&l.argv, "--max-model-len"), "32768");
        assert_eq!(
            value(&l.argv, "--max-num-seqs"),
            choice.max_batch.to_string()
        );
        assert_eq!(value(&l.argv, "--gpu-memory-utilization"), "0.9");
        assert_eq!(value(&l.argv, "--dtype"), "bfloat16");
        // The pinned release takes a CUDA-graph estimate off the KV cache
        // that the plan does not predict: the launch says so.
        assert!(
            l.notes
                .iter()
                .any(|n| n.contains("CUDA-graph memory estimate") && n.contains("vllm 0.33.0")),
            "{:?}",
            l.notes
        );
    }
    assert!(
        emit(&p, p.plans.len(), &m.origin)
            .unwrap_err()
            .contains("--plan takes")
    );
    // vLLM's scheduler limits, where the plan was made with them, are
    // passed as given, and they shrink the profiled workspace vLLM keeps.
    let limited = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Vllm,
            context: Some(32768),
            batch: 4,
            max_num_seqs: Some(16),
            max_num_batched_tokens: Some(4096),
            ..Default::default()
        },
    );
    let l = emit(&limited, 0, &m.origin).unwrap();
    assert_vllm_accepts(&l);
    assert_eq!(value(&l.argv, "--max-num-seqs"), "16");
    assert_eq!(value(&l.argv, "--max-num-batched-tokens"), "4096");
    let same = p
        .plans
        .iter()
        .find(|c| {
            (c.tensor_parallel, c.pipeline_parallel)
                == (
                    limited.plans[0].tensor_parallel,
                    limited.plans[0].pipeline_parallel,
                )
        })
        .unwrap();
    assert!(limited.plans[0].per_device[0].activation_bytes < same.per_device[0].activation_bytes);
    // vLLM's scheduler never runs more than max_num_seqs per replica: the
    // plan's concurrency is capped there, where the memory alone holds more.
    assert!(same.max_batch > 16, "{}", same.max_batch);
    for c in &limited.plans {
        assert!(c.max_batch <= 16, "{}", c.max_batch);
        assert_eq!(
            c.max_concurrent_sequences,
            c.max_batch * u64::from(c.data_parallel)
        );
    }
    let over = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Vllm,
            batch: 32,
            max_num_seqs: Some(16),
            ..Default::default()
        },
    );
    assert!(
        over.warnings
            .iter()
            .any(|w| w.contains("batch 32 is more than max_num_seqs 16")),
        "{:?}",
        over.warnings
    );
    assert!(
        !limited
            .warnings
            .iter()
            .any(|w| w.contains("scheduler limits"))
    );
    // Another runtime's rule does not read them, and says so.
    let sglang = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Sglang,
            max_num_seqs: Some(16),
            ..Default::default()
        },
    );
    assert!(
        sglang
            .warnings
            .iter()
            .any(|w| w.contains("vLLM's scheduler limits: the sglang rule does not read them")),
        "{:?}",
        sglang.warnings
    );
    // A GGUF level is not vLLM's; a bare size names no checkpoint.
    let q = plan_inference(
        &m.spec,
        &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Vllm,
            quant: Some(Quant::Q4K),
            ..Default::default()
        },
    );
    assert!(
        emit(&q, 0, &m.origin)
            .unwrap_err()
            .contains("--emit llama.cpp")
    );
    let bare = load_model("7b").unwrap();
    let b = plan_inference(
        &bare.spec,
        &PlanDevice::from_device_string("1xh100-sxm").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::Vllm,
            ..Default::default()
        },
    );
    assert!(emit(&b, 0, &bare.origin).unwrap_err().contains("bare size"));
}

#[test]
fn llama_cpp_command_splits_layers_as_the_plan_does() {
    let spec = load_model("llama-3.1-8b").unwrap().spec;
    let gguf = ModelOrigin::Gguf {
        path: "/models/Llama-3.1-8B-Q4_K_M.gguf".into(),
    };
    // Two 8 GiB cards: Q8_0 weights (8.5 GB) fit only split over both.
    let card = |id: &str| PlanDevice {
        id: id.into(),
        capacity_bytes: Some(8 << 30),
        ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
    };
    let p = plan_inference(
        &spec,
        &[card("gpu0"), card("gpu1")],
        &InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            quant: Some(Quant::Q8_0),
            kv_dtype: Some(KvDtype::Int8),
            context: Some(8192),
            batch: 2,
            max_plans: 100,
            ..Default::default()
        },
    );
    let (i, choice) = p
        .plans
        .iter()
        .enumerate()
        .find(|(_, c)| c.tensor_parallel == 1 && c.pipeline_parallel == 2)
        .expect("a two-stage plan");
    let l = emit(&p, i, &gguf).unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(l.argv[0], "llama-server");
    assert_eq!(value(&l.argv, "-m"), "/models/Llama-3.1-8B-Q4_K_M.gguf");
    assert_eq!(value(&l.argv, "-c"), "16384", "8192 tokens × 2 sequences");
    assert_eq!(value(&l.argv, "-np"), "2");
    assert_eq!(value(&l.argv, "-ctk"), "q8_0");
    assert_eq!(value(&l.argv, "-ctv"), "q8_0");
    assert_eq!(
        value(&l.argv, "-ngl"),
        "33",
        "32 layers and the output layer"
    );
    assert_eq!(value(&l.argv, "--split-mode"), "layer");
    let split: Vec<u32> = value(&l.argv, "--tensor-split")
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    // By layer count, the output layer counted on the last stage: llama.cpp
    // splits the 33 offloaded units (`-ngl`) by these cumulative fractions.
    let mut planned: Vec<u32> = choice
        .per_device
        .iter()
        .map(|d| d.layers.1 - d.layers.0)
        .collect();
    *planned.last_mut().unwrap() += 1;
    assert_eq!(split, planned);
    assert_eq!(split.iter().sum::<u32>(), 33);
    // What llama.cpp does with them (`src/llama-model.cpp`,
    // `get_layer_buft_list`: unit `il` goes to the first device whose
    // cumulative fraction exceeds `il / ngl`) is the planned stages.
    let total: u32 = split.iter().sum();
    let mut cumulative = Vec::new();
    let mut acc = 0.0f32;
    for x in &split {
        acc += *x as f32;
        cumulative.push(acc);
    }
    let cumulative: Vec<f32> = cumulative.iter().map(|c| c / total as f32).collect();
    let device_of = |il: u32| {
        cumulative
            .iter()
            .position(|&c| c > il as f32 / total as f32)
            .unwrap()
    };
    for (i, d) in choice.per_device.iter().enumerate() {
        for il in d.layers.0..d.layers.1 {
            assert_eq!(device_of(il), i, "layer {il}");
        }
    }
    assert_eq!(device_of(32), 1, "the output layer on the last stage");
    assert_eq!(value(&l.argv, "-fa"), "on");
    // Two cards of one machine: no RPC.
    assert!(!l.argv.iter().any(|a| a == "--rpc"));
    // Planned with unfused attention: the command turns flash attention
    // off, and the long-prompt prefill pays for the scores.
    let unfused = plan_inference(
        &spec,
        &[card("gpu0"), card("gpu1")],
        &InferenceOptions {
            fused_attention: false,
            ..p.options.clone()
        },
    );
    let u = emit(&unfused, i, &gguf).unwrap();
    assert_llama_cpp_accepts(&u);
    assert_eq!(value(&u.argv, "-fa"), "off");
    let (fused_pp, unfused_pp) = (
        choice.prefill_tokens_per_s.unwrap(),
        unfused.plans[i].prefill_tokens_per_s.unwrap(),
    );
    assert!(unfused_pp < fused_pp * 0.9, "{unfused_pp} vs {fused_pp}");
    // Decode reads the cache at the fused fraction where unfused attention
    // has none of its own (speed::kv_read): the same speed.
    assert_eq!(
        unfused.plans[i].decode_tokens_per_s,
        choice.decode_tokens_per_s
    );
    // Tensor parallelism is not how llama.cpp splits; FP8 caches it has none.
    if let Some((k, _)) = p
        .plans
        .iter()
        .enumerate()
        .find(|(_, c)| c.tensor_parallel > 1)
    {
        assert!(emit(&p, k, &gguf).unwrap_err().contains("by layers"));
    }
    let fp8 = plan_inference(
        &spec,
        &[card("gpu0"), card("gpu1")],
        &InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            quant: Some(Quant::Q8_0),
            kv_dtype: Some(KvDtype::Fp8),
            ..Default::default()
        },
    );
    assert!(emit(&fp8, 0, &gguf).unwrap_err().contains("FP8"));
    // On the host CPU: nothing offloaded, no GPU flags.
    let cpu = PlanDevice {
        host: true,
        cpu_features: vec!["avx2".into()],
        bandwidth_bytes_per_s: None,
        ..card("cpu")
    };
    let h = plan_inference(
        &spec,
        &[cpu],
        &InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            quant: Some(Quant::Q4K),
            ..Default::default()
        },
    );
    let l = emit(&h, 0, &gguf).unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "-ngl"), "0");
    assert!(!l.argv.iter().any(|a| a == "-fa" || a == "--tensor-split"));
    // A catalog model is not a GGUF file.
    let cat = load_model("llama-3.1-8b").unwrap().origin;
    assert!(emit(&p, i, &cat).unwrap_err().contains(".gguf"));
}

/// llama.cpp's tensor parallelism (`--split-mode tensor`, the pinned
/// llama.cpp's docs/multi-gpu.md): offered where llama.cpp runs it — flash
/// attention on, a 16-bit KV cache, an architecture it implements — with
/// weights and KV split over the devices, never beside a pipeline; the
/// command names the mode and offloads every layer once.
/// Layers split over machines: two or three GB10s (each a computer of its
/// own) are reached over llama.cpp's RPC backend. llama-server runs on the
/// last stage's machine; the others run `ggml-rpc-server`, listed in
/// `--rpc` in stage order, since llama.cpp puts RPC devices at the front of
/// its device list (`src/llama.cpp`), so `--tensor-split` stays in stage
/// order. Boards of eight SXM GPUs are machines too.
#[test]
fn llama_cpp_layer_split_across_machines_uses_rpc() {
    let gguf = ModelOrigin::Gguf {
        path: "/models/Llama-3.1-70B-Q4_K_M.gguf".into(),
    };
    let spec = load_model("llama-3.1-70b").unwrap().spec;
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Q4K),
        max_plans: 100,
        ..Default::default()
    };
    for (set, machines) in [("2xgb10", 2), ("3xgb10", 3)] {
        let devs = PlanDevice::from_device_string(set).unwrap();
        assert_eq!(
            devs.iter().map(|d| d.machine).collect::<Vec<_>>(),
            (1..=machines).collect::<Vec<u32>>()
        );
        let p = plan_inference(&spec, &devs, &opts);
        let (i, choice) = p
            .plans
            .iter()
            .enumerate()
            .find(|(_, c)| c.pipeline_parallel == machines && c.data_parallel == 1)
            .unwrap_or_else(|| panic!("{set}: a plan over every machine"));
        let l = emit(&p, i, &gguf).unwrap();
        assert_llama_cpp_accepts(&l);
        let servers: Vec<String> = (1..machines).map(|k| format!("HOST{k}:50052")).collect();
        assert_eq!(value(&l.argv, "--rpc"), servers.join(","), "{set}");
        let mut planned: Vec<u32> = choice
            .per_device
            .iter()
            .map(|d| d.layers.1 - d.layers.0)
            .collect();
        *planned.last_mut().unwrap() += 1;
        let split: Vec<u32> = value(&l.argv, "--tensor-split")
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(split, planned, "{set}: stage order, RPC machines first");
        assert!(
            l.notes
                .iter()
                .any(|n| n.contains("ggml-rpc-server -H 0.0.0.0 -p 50052")
                    && n.contains(&format!("spans {machines} machines"))),
            "{:?}",
            l.notes
        );
    }
    // Two 8-GPU boards are two machines; PCIe cards and bridged pairs share one.
    let boards = PlanDevice::from_device_string("16xh100-sxm").unwrap();
    assert_eq!((boards[0].machine, boards[8].machine), (1, 2));
    for set in ["4xa100-80gb-pcie", "8xrtx-4090"] {
        let cards = PlanDevice::from_device_string(set).unwrap();
        assert!(cards.iter().all(|d| d.machine == 0), "{set}");
    }
}

#[test]
fn llama_cpp_tensor_split_plans_and_command() {
    let spec = load_model("llama-3.1-8b").unwrap().spec;
    let gguf = ModelOrigin::Gguf {
        path: "/models/Llama-3.1-8B-Q8_0.gguf".into(),
    };
    let devices = PlanDevice::from_device_string("2xrtx-4090").unwrap();
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Q8_0),
        kv_dtype: Some(KvDtype::Fp16),
        context: Some(8192),
        max_plans: 100,
        ..Default::default()
    };
    let p = plan_inference(&spec, &devices, &opts);
    let (k, tp2) = p
        .plans
        .iter()
        .enumerate()
        .find(|(_, c)| c.tensor_parallel == 2)
        .expect("a tensor-parallel plan");
    assert_eq!(tp2.pipeline_parallel, 1);
    assert!(
        !p.plans
            .iter()
            .any(|c| c.tensor_parallel > 1 && c.pipeline_parallel > 1)
    );
    let four = plan_inference(
        &spec,
        &PlanDevice::from_device_string("4xrtx-4090").unwrap(),
        &opts,
    );
    assert!(four.plans.iter().any(|c| c.tensor_parallel == 4));
    assert!(
        !four
            .plans
            .iter()
            .any(|c| c.tensor_parallel > 1 && c.pipeline_parallel > 1)
    );
    assert!(four.rejected.iter().any(|r| r.tensor_parallel == 2
        && r.pipeline_parallel == 2
        && r.reason.contains("either by layers or by tensors")));
    let one = p
        .plans
        .iter()
        .find(|c| c.tensor_parallel == 1 && c.pipeline_parallel == 2)
        .expect("a layer split");
    // Each device holds half the layers' weights and KV in either split,
    // but the tensor split reads its halves at once: it decodes faster
    // than the pipeline, whose stages take turns at batch 1.
    assert!(
        tp2.decode_tokens_per_s_per_sequence.unwrap()
            > one.decode_tokens_per_s_per_sequence.unwrap()
    );
    assert!(tp2.tp_comm_seconds_per_step.unwrap() > 0.0);
    for d in &tp2.per_device {
        assert_eq!(d.layers, (0, 32));
    }
    let l = emit(&p, k, &gguf).unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "--split-mode"), "tensor");
    assert_eq!(
        value(&l.argv, "-ngl"),
        "33",
        "every layer once, not once per device"
    );
    assert_eq!(value(&l.argv, "-fa"), "on");
    assert_eq!(value(&l.argv, "-ctk"), "f16");
    assert!(!l.argv.iter().any(|a| a == "--tensor-split"));
    assert!(l.notes.iter().any(|n| n.contains("experimental")));
    // Its conditions: no quantized KV cache, no unfused attention, an
    // architecture llama.cpp implements (not multi-head latent attention).
    let q8kv = plan_inference(
        &spec,
        &devices,
        &InferenceOptions {
            kv_dtype: Some(KvDtype::Int8),
            ..opts.clone()
        },
    );
    assert!(q8kv.plans.iter().all(|c| c.tensor_parallel == 1));
    assert!(
        q8kv.rejected
            .iter()
            .any(|r| r.tensor_parallel == 2 && r.reason.contains("quantized KV cache"))
    );
    let unfused = plan_inference(
        &spec,
        &devices,
        &InferenceOptions {
            fused_attention: false,
            ..opts.clone()
        },
    );
    assert!(unfused.plans.iter().all(|c| c.tensor_parallel == 1));
    assert!(
        unfused
            .rejected
            .iter()
            .any(|r| r.tensor_parallel == 2 && r.reason.contains("flash attention"))
    );
    let ds = load_model("deepseek-v3").unwrap().spec;
    let d = plan_inference(
        &ds,
        &PlanDevice::from_device_string("8xh200").unwrap(),
        &InferenceOptions {
            runtime: RuntimeKind::LlamaCpp,
            kv_dtype: Some(KvDtype::Fp16),
            quant: Some(Quant::Q4K),
            ..Default::default()
        },
    );
    assert!(d.plans.iter().all(|c| c.tensor_parallel == 1));
    assert!(
        d.rejected.iter().any(|r| {
            r.tensor_parallel == 2 && r.reason.contains("for architecture deepseek_v3")
        })
    );
}

#[test]
fn sglang_and_trtllm_commands_carry_the_plans_sizes_and_fractions() {
    let m = load_model("llama-3.1-70b").unwrap();
    let devices = PlanDevice::from_device_string("8xh100-sxm").unwrap();
    let plan = |kind| {
        plan_inference(
            &m.spec,
            &devices,
            &InferenceOptions {
                runtime: kind,
                context: Some(8192),
                ..Default::default()
            },
        )
    };
    let p = plan(RuntimeKind::Sglang);
    let best = &p.plans[0];
    let l = emit(&p, 0, &m.origin).unwrap();
    assert_eq!(&l.argv[..3], ["python3", "-m", "sglang.launch_server"]);
    assert_eq!(
        value(&l.argv, "--tp-size"),
        best.tensor_parallel.to_string()
    );
    assert_eq!(value(&l.argv, "--context-length"), "8192");
    assert_eq!(
        value(&l.argv, "--max-running-requests"),
        best.max_batch.to_string()
    );
    // SGLang 0.5.23's own fraction on an H100 80GB (nvidia-smi: 81559
    // MiB): reserved = 512 + 1.5 × 8192 + TP × PP / 8 × 1024 + 2 × 256
    // (TP < 4) or 512 decode graphs + 8 × 58 prefill buckets (MiB).
    let (tp, pp) = (best.tensor_parallel, best.pipeline_parallel);
    let graphs = if tp < 4 { 256.0 } else { 512.0 };
    let prefill = if pp == 1 { 8.0 * 58.0 } else { 0.0 };
    let reserved =
        512.0 + 1.5 * 8192.0 + f64::from(tp * pp) / 8.0 * 1024.0 + 2.0 * graphs + prefill;
    let want = format!("{:.3}", (81559.0 - reserved) / 81559.0);
    assert_eq!(value(&l.argv, "--mem-fraction-static"), want);
    // A fraction given to the plan is the one passed.
    let given = plan_inference(
        &m.spec,
        &devices,
        &InferenceOptions {
            runtime: RuntimeKind::Sglang,
            context: Some(8192),
            mem_fraction_static: Some(0.9),
            ..Default::default()
        },
    );
    let lg = emit(&given, 0, &m.origin).unwrap();
    assert_eq!(value(&lg.argv, "--mem-fraction-static"), "0.900");
    assert!(given.plans[0].max_batch > best.max_batch);
    assert_sglang_accepts(&l);
    // Prompts mixed into the decode steps, as the plan's served TPOT
    // assumed: the command asks SGLang for it, and only then.
    assert!(!l.argv.iter().any(|a| a == "--enable-mixed-chunk"));
    let mixed = plan_inference(
        &m.spec,
        &devices,
        &InferenceOptions {
            runtime: RuntimeKind::Sglang,
            context: Some(8192),
            mixed_prefill: true,
            ..Default::default()
        },
    );
    let lm = emit(&mixed, 0, &m.origin).unwrap();
    assert!(
        lm.argv.iter().any(|a| a == "--enable-mixed-chunk"),
        "{:?}",
        lm.argv
    );
    assert!(
        lm.files[ai_hwaccel::plan::runtime::SGLANG_CONFIG_FILE]
            .contains("enable-mixed-chunk: true")
    );
    assert_sglang_accepts(&lm);
    // A multimodal checkpoint (Gemma 3: Gemma3ForConditionalGeneration,
    // a 27-layer SigLIP of width 1152): SGLang's default lowered by
    // adjust_mem_fraction_for_vlm, 0.830 × 0.95 × 0.9576 on one H100; the
    // plan's KV pool follows the fraction it emits.
    let g = load_model("gemma-3-27b").unwrap();
    let one = PlanDevice::from_device_string("1xh100-sxm").unwrap();
    let gp = |fraction| {
        plan_inference(
            &g.spec,
            &one,
            &InferenceOptions {
                runtime: RuntimeKind::Sglang,
                context: Some(8192),
                mem_fraction_static: fraction,
                ..Default::default()
            },
        )
    };
    let vlm = gp(None);
    assert!(vlm.multimodal_encoder.is_some());
    let lv = emit(&vlm, 0, &g.origin).unwrap();
    assert_eq!(value(&lv.argv, "--mem-fraction-static"), "0.755");
    let at = gp(Some(0.755));
    assert_eq!(
        vlm.plans[0].per_device[0].kv_cache_bytes,
        at.plans[0].per_device[0].kv_cache_bytes
    );
    assert!(gp(Some(0.830)).plans[0].max_batch > vlm.plans[0].max_batch);
    // FP8 weights and KV cache: values from SGLang's closed sets.
    let p8 = plan_inference(
        &m.spec,
        &devices,
        &InferenceOptions {
            runtime: RuntimeKind::Sglang,
            context: Some(8192),
            quant: Some(ai_hwaccel::plan::Quant::Fp8),
            kv_dtype: Some(ai_hwaccel::plan::KvDtype::Fp8),
            ..Default::default()
        },
    );
    let l8 = emit(&p8, 0, &m.origin).unwrap();
    assert_eq!(value(&l8.argv, "--kv-cache-dtype"), "fp8_e4m3");
    assert_sglang_accepts(&l8);

    let p = plan(RuntimeKind::Trtllm);
    let best = &p.plans[0];
    let l = emit(&p, 0, &m.origin).unwrap();
    assert_eq!(l.argv[0], "trtllm-serve");
    assert_eq!(
        value(&l.argv, "--tp_size"),
        best.tensor_parallel.to_string()
    );
    assert_eq!(
        value(&l.argv, "--pp_size"),
        best.pipeline_parallel.to_string()
    );
    assert_eq!(value(&l.argv, "--max_seq_len"), "8192");
    assert_eq!(
        value(&l.argv, "--max_batch_size"),
        best.max_batch.to_string()
    );
    assert_eq!(value(&l.argv, "--kv_cache_free_gpu_memory_fraction"), "0.9");
    assert_trtllm_accepts(&l);
    // TP 1 on one GPU and the TensorRT engine-free PyTorch default: the
    // same flags, all of trtllm-serve's.
    let one = PlanDevice::from_device_string("1xh100-sxm").unwrap();
    let m8 = load_model("llama-3.1-8b").unwrap();
    let p1 = plan_inference(
        &m8.spec,
        &one,
        &InferenceOptions {
            runtime: RuntimeKind::Trtllm,
            ..Default::default()
        },
    );
    let l1 = emit(&p1, 0, &m8.origin).unwrap();
    assert_eq!(value(&l1.argv, "--tp_size"), "1");
    assert_trtllm_accepts(&l1);
    assert!(l1.files["extra-llm-api-config.yml"].contains("dtype: auto"));
    // An FP8 KV cache goes into the LLM API file.
    let p8 = plan_inference(
        &m8.spec,
        &one,
        &InferenceOptions {
            runtime: RuntimeKind::Trtllm,
            kv_dtype: Some(KvDtype::Fp8),
            ..Default::default()
        },
    );
    let l8 = emit(&p8, 0, &m8.origin).unwrap();
    assert!(
        l8.files["extra-llm-api-config.yml"].contains("dtype: fp8"),
        "{:?}",
        l8.files
    );
    assert_trtllm_accepts(&l8);
}

/// Every flag of a TensorRT-LLM command is a `trtllm-serve` option of the
/// pinned source (`tests/fixtures/runtimes/trtllm.json`), and the LLM API
/// file it passes with `--config` holds only pinned keys and values.
#[allow(clippy::disallowed_methods, reason = "the test reads its fixture")]
fn assert_trtllm_accepts(l: &ai_hwaccel::plan::runtime::Launch) {
    let defs: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/runtimes/trtllm.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let file = value(&l.argv, "--config");
    let yaml = &l.files[file];
    let mut section = String::new();
    for line in yaml.lines() {
        if let Some(s) = line.strip_suffix(':') {
            section = s.to_string();
            assert!(defs["config_keys"].get(s).is_some(), "{s} not pinned");
            continue;
        }
        let (k, v) = line.trim().split_once(": ").unwrap();
        let keys = defs["config_keys"][&section].as_array().unwrap();
        assert!(keys.iter().any(|x| x == k), "{section}.{k} not pinned");
        if let Some(set) = defs["choices"].get(format!("{section}.{k}")) {
            assert!(
                set.as_array().unwrap().iter().any(|x| x == v),
                "{section}.{k}: {v}"
            );
        }
    }
    assert_accepted(
        l,
        2, // trtllm-serve MODEL
        "trtllm.json",
        ai_hwaccel::plan::runtime::TRTLLM_PINNED_DEFINITIONS,
        "a trtllm-serve option",
        &|defs, flag| defs["choices"].get(flag).cloned(),
    );
}

/// Every flag of a llama.cpp command exists in the pinned definitions, and
/// values with a closed set (`[on|off]`, `{none,layer,row}`, cache types)
/// are in it.
#[allow(clippy::disallowed_methods, reason = "the test reads its fixture")]
fn assert_llama_cpp_accepts(l: &ai_hwaccel::plan::runtime::Launch) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runtimes/llama.cpp.json");
    let defs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        l.version.as_deref(),
        Some(ai_hwaccel::plan::runtime::LLAMA_CPP_PINNED_DEFINITIONS)
    );
    assert!(
        ai_hwaccel::plan::runtime::LLAMA_CPP_PINNED_DEFINITIONS
            .contains(defs["version"].as_str().unwrap()),
        "the pinned version is the fixture's"
    );
    let options = defs["options"].as_array().unwrap();
    let kv: Vec<&str> = defs["kv_cache_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut args = l.argv[1..].iter().peekable();
    while let Some(a) = args.next() {
        if !a.starts_with('-') {
            continue;
        }
        let o = options
            .iter()
            .find(|o| {
                o["names"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n == a.as_str())
            })
            .unwrap_or_else(|| panic!("{a} is not a llama.cpp option"));
        let hint = o["value_hint"].as_str().unwrap_or("");
        let Some(v) = args.peek() else { continue };
        if ["-ctk", "-ctv"].contains(&a.as_str()) {
            assert!(kv.contains(&v.as_str()), "{a} {v}: not a cache type {kv:?}");
        } else if (hint.starts_with('[') || hint.starts_with('{')) && !hint.contains("...") {
            let set: Vec<&str> = hint
                .trim_matches(|c| c == '[' || c == ']' || c == '{' || c == '}')
                .split(['|', ','])
                .collect();
            assert!(set.contains(&v.as_str()), "{a} {v}: not in {hint}");
        }
    }
}

/// Every `--flag` of a command (after the program) is in a runtime's pinned
/// definitions (`tests/fixtures/runtimes/<fixture>`, whose version the
/// launch names), and values with a closed set (`values`) are in it.
#[allow(clippy::disallowed_methods, reason = "the test reads its fixture")]
fn assert_accepted(
    l: &ai_hwaccel::plan::runtime::Launch,
    program_words: usize,
    fixture: &str,
    pinned: &str,
    what: &str,
    values: &dyn Fn(&serde_json::Value, &str) -> Option<serde_json::Value>,
) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runtimes")
        .join(fixture);
    let defs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(l.version.as_deref(), Some(pinned));
    assert!(pinned.contains(defs["version"].as_str().unwrap()));
    let flags: Vec<&str> = defs["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let mut checked = 0;
    for (i, a) in l.argv.iter().enumerate().skip(program_words) {
        if !a.starts_with("--") {
            continue;
        }
        assert!(flags.contains(&a.as_str()), "{a} is not {what}");
        checked += 1;
        if let Some(set) = values(&defs, a) {
            let v = l.argv[i + 1].as_str();
            assert!(
                set.as_array().unwrap().iter().any(|c| c == v),
                "{a} {v} not in {set}"
            );
        }
    }
    assert!(checked > 0, "no flag checked in {:?}", l.argv);
}

/// Every flag of a vLLM command is an EngineArgs field of the pinned vLLM,
/// the KV cache type one of its CacheDType values and the quantization one
/// of its QuantizationMethods.
fn assert_vllm_accepts(l: &ai_hwaccel::plan::runtime::Launch) {
    assert_accepted(
        l,
        3, // vllm serve MODEL
        "vllm.json",
        ai_hwaccel::plan::runtime::VLLM_PINNED_DEFINITIONS,
        "a vLLM engine argument",
        &|defs, flag| match flag {
            "--kv-cache-dtype" => Some(defs["kv_cache_dtypes"].clone()),
            "--quantization" => Some(defs["quantization_methods"].clone()),
            _ => None,
        },
    );
    assert_config_file(l, 3, ai_hwaccel::plan::runtime::VLLM_CONFIG_FILE);
    // `--config` itself is the pinned parser's, not an EngineArgs field.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runtimes/vllm.json");
    #[allow(clippy::disallowed_methods, reason = "the test reads its fixture")]
    let text = std::fs::read_to_string(path).unwrap();
    let defs: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        defs["parser_flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "--config")
    );
}

/// Every flag of an SGLang command exists in the pinned definitions and
/// values with a closed set are in it.
fn assert_sglang_accepts(l: &ai_hwaccel::plan::runtime::Launch) {
    assert_accepted(
        l,
        3, // python3 -m sglang.launch_server
        "sglang.json",
        ai_hwaccel::plan::runtime::SGLANG_PINNED_DEFINITIONS,
        "an SGLang server argument",
        &|defs, flag| defs["choices"].get(flag).cloned(),
    );
    assert_config_file(l, 3, ai_hwaccel::plan::runtime::SGLANG_CONFIG_FILE);
}

/// The config file holds the same options as the command, one `key: value`
/// line per flag (a bare flag as `true`), as the runtime's `--config` turns
/// them back into `--key value`; vLLM's also names the positional model.
fn assert_config_file(l: &ai_hwaccel::plan::runtime::Launch, program_words: usize, name: &str) {
    let yaml = &l.files[name];
    let flags: Vec<&String> = l.argv[program_words..]
        .iter()
        .filter(|a| a.starts_with("--"))
        .collect();
    let mut lines = yaml.lines().collect::<Vec<_>>();
    if let Some(model) = lines.first().and_then(|f| f.strip_prefix("model: ")) {
        assert_eq!(serde_json::from_str::<String>(model).unwrap(), l.argv[2]);
        lines.remove(0);
    }
    assert_eq!(lines.len(), flags.len(), "{yaml}");
    for line in lines {
        let (key, v) = line.split_once(": ").unwrap();
        let flag = format!("--{key}");
        let i = l
            .argv
            .iter()
            .position(|a| *a == flag)
            .expect("a flag of the command");
        let next = l.argv.get(i + 1).filter(|n| !n.starts_with("--"));
        match (serde_json::from_str::<serde_json::Value>(v).unwrap(), next) {
            (serde_json::Value::Bool(true), None) => {}
            (serde_json::Value::String(v), Some(n)) => assert_eq!(&v, n, "{line}"),
            (n, Some(a)) if n.is_number() => {
                assert_eq!(n.as_f64().unwrap(), a.parse::<f64>().unwrap(), "{line}")
            }
            (v, n) => panic!("{line}: {v} against {n:?}"),
        }
    }
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains(&format!("--config {name}")))
    );
}

/// Partial offload as llama.cpp runs it: the host CPU holds the first
/// layers, the GPU the most last layers that fit; `-ngl` counts the GPU's
/// layers and the output layer; decode is the CPU's bytes at its bandwidth
/// then the GPU's.
#[test]
fn offload_puts_the_most_layers_that_fit_on_the_gpu() {
    use ai_hwaccel::plan::plan_offload;
    let spec = load_model("llama-3.1-8b").unwrap().spec;
    let gpu = PlanDevice {
        id: "gpu0".into(),
        capacity_bytes: Some(8 << 30),
        ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
    };
    let cpu = PlanDevice {
        id: "cpu".into(),
        name: "host".into(),
        spec_id: None,
        capacity_bytes: Some(32 << 30),
        bandwidth_bytes_per_s: Some(50_000_000_000),
        tflops: Default::default(),
        native_dtypes: None,
        link: None,
        link_bandwidth_bytes_per_s: None,
        domain: 9,
        pcie_bandwidth_bytes_per_s: None,
        host: true,
        cpu_features: vec!["avx2".into()],
        cpu_spec_id: None,
        bandwidth_basis: None,
        compute_basis: None,
        machine: 0,
        vulkan_matrix_cores: None,
    };
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Bf16),
        // The fixed 0.6 below, not the fitted table (plan::speed).
        calibrated_speed: false,
        ..Default::default()
    };
    let p = plan_offload(&spec, &gpu, &cpu, &opts).expect("an offload plan");
    let (c, g) = (&p.per_device[0], &p.per_device[1]);
    assert_eq!((c.device.as_str(), g.device.as_str()), ("cpu", "gpu0"));
    let n = g.layers.1 - g.layers.0;
    assert_eq!(g.layers.1, 32);
    assert!((1..32).contains(&n));
    assert!(g.total_bytes <= g.capacity_bytes && c.total_bytes <= c.capacity_bytes);
    // One more layer would not fit: a bf16 layer of Llama-3.1-8B is 436 MiB
    // of weights (218,112,000 parameters) plus its KV (this stage's KV over
    // its layers; every layer holds the same).
    let kv_per_layer = g.kv_cache_bytes / u64::from(n);
    assert!(
        g.total_bytes + 218_112_000 * 2 + kv_per_layer > g.capacity_bytes,
        "{} layers: not the most",
        n
    );
    // Decode: CPU bytes at 50 GB/s, then GPU bytes at the 4090's 1008 GB/s,
    // both × 0.6; the CPU's embedding (128,256 × 4,096 bf16) is looked up,
    // one row per token, not read whole.
    let embedding = 128_256u64 * 4096 * 2;
    let t = (c.weights_bytes - embedding + c.kv_cache_bytes) as f64 / (50e9 * 0.6)
        + (g.weights_bytes + g.kv_cache_bytes) as f64 / (1008e9 * 0.6);
    let want = 1.0 / t;
    let got = p.decode_tokens_per_s.unwrap();
    assert!((got - want).abs() / want < 0.03, "{got} vs {want}");
    // The launch command offloads exactly those layers.
    let devices = vec![cpu.clone(), gpu.clone()];
    let mut whole = plan_inference(&spec, &devices, &opts);
    whole.plans = vec![p.clone()];
    let l = emit(
        &whole,
        0,
        &ModelOrigin::Gguf {
            path: "m.gguf".into(),
        },
    )
    .unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "-ngl"), (n + 1).to_string());
    assert!(!l.argv.iter().any(|a| a == "--tensor-split"));
    // No offload when the model fits the GPU whole.
    let big = PlanDevice {
        capacity_bytes: Some(24 << 30),
        ..gpu
    };
    assert!(plan_offload(&spec, &big, &cpu, &opts).is_none());
}

/// MoE expert offload (llama.cpp `--n-cpu-moe N`): Qwen3-30B-A3B in bf16 on
/// a 24 GiB RTX 4090 and a host CPU with 100 GB/s. Every layer is on the
/// GPU except the routed experts of the first N layers; N is the fewest
/// that fit; decode reads the GPU's bytes at its bandwidth and the active
/// experts of the CPU layers at the host's, one after the other.
#[test]
fn moe_offload_keeps_the_first_layers_experts_in_host_memory() {
    use ai_hwaccel::plan::plan_offload;
    let spec = load_model("qwen3-30b-a3b").unwrap().spec;
    // PCIe 4.0 x16: 31.5 GB/s each way, 63 GB/s both directions.
    let gpu = PlanDevice {
        id: "gpu0".into(),
        pcie_bandwidth_bytes_per_s: Some(63_000_000_000),
        ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
    };
    let cpu = PlanDevice {
        id: "cpu".into(),
        name: "host".into(),
        spec_id: None,
        capacity_bytes: Some(96 << 30),
        bandwidth_bytes_per_s: Some(100_000_000_000),
        tflops: Default::default(),
        native_dtypes: None,
        link: None,
        link_bandwidth_bytes_per_s: None,
        domain: 9,
        pcie_bandwidth_bytes_per_s: None,
        host: true,
        cpu_features: vec!["avx2".into()],
        cpu_spec_id: None,
        bandwidth_basis: None,
        compute_basis: None,
        machine: 0,
        vulkan_matrix_cores: None,
    };
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Bf16),
        context: Some(4096),
        calibrated_speed: false,
        ..Default::default()
    };
    let p = plan_offload(&spec, &gpu, &cpu, &opts).expect("an expert-offload plan");
    let m = p.moe_offload.clone().expect("a MoE split");
    // Routed experts of one layer: 128 experts × 3 × 2,048 × 768 =
    // 603,979,776 parameters = 1,207,959,552 bytes in bf16; a token uses 8
    // of 128: 75,497,472 bytes read per layer per step.
    let layer_experts = 128u64 * 3 * 2048 * 768 * 2;
    assert_eq!(layer_experts, 1_207_959_552);
    let active = layer_experts * 8 / 128;
    // Everything but the routed experts, per layer: q 2,048 × 4,096, k and v
    // 2,048 × 512 each, o 4,096 × 2,048, q/k norms 128 each, router
    // 2,048 × 128, two RMSNorms of 2,048: 19,140,864 parameters.
    let per_layer = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128 + 2048 * 128 + 2 * 2048;
    assert_eq!(per_layer, 19_140_864u64);
    // Embedding and output: 151,936 × 2,048 each (untied); final norm 2,048.
    let embedding = 151_936u64 * 2048 * 2;
    let gpu_fixed = 48 * per_layer * 2 + embedding + 2048 * 2;
    assert_eq!(gpu_fixed, 2_459_856_896);
    let n = u64::from(m.cpu_expert_layers);
    // 31: llama.cpp fits within what CUDA reports, and the 4090's driver
    // keeps 346 MiB it never reports (CUDA_VISIBLE_TOTAL, from a real
    // `nvidia-smi -q`), besides the 1 GiB fit margin.
    assert_eq!((m.cpu_expert_layers, m.cpu_moe_layers), (31, 31));
    assert_eq!(m.host_weights_bytes, n * layer_experts + embedding);
    assert_eq!(m.gpu_weights_bytes, gpu_fixed + (48 - n) * layer_experts);
    let (c, g) = (&p.per_device[0], &p.per_device[1]);
    assert_eq!((c.device.as_str(), c.layers), ("cpu", (0, 31)));
    assert_eq!((g.device.as_str(), g.layers), ("gpu0", (0, 48)));
    assert_eq!(g.weights_bytes, m.gpu_weights_bytes);
    assert!(g.fits && c.fits);
    // The fewest: one more layer's experts would not fit the GPU.
    assert!(g.total_bytes + layer_experts > g.capacity_bytes);
    // KV on the GPU: 48 layers × 4,096 tokens × 2 × 4 heads × 128 × 2 bytes.
    assert_eq!(g.kv_cache_bytes, 48 * 4096 * 2 * 4 * 128 * 2);
    // Decode at 0.6 of each bandwidth, one after the other.
    assert_eq!(m.host_bytes_per_step, n * active);
    let gpu_read = gpu_fixed + (48 - n) * active + g.kv_cache_bytes;
    assert_eq!(m.gpu_bytes_per_step, gpu_read);
    let t = (n * active) as f64 / (100e9 * 0.6) + gpu_read as f64 / (1008e9 * 0.6);
    let got = p.decode_tokens_per_s.unwrap();
    assert!((got - 1.0 / t).abs() < 1e-9 * got, "{got} vs {}", 1.0 / t);
    assert!((got - 21.804).abs() < 0.001, "{got}");
    // Prefill: the host experts cross PCIe once per 512-token ubatch.
    let copy = (n * layer_experts) as f64 / 31.5e9 / 512.0;
    assert!((m.pcie_seconds_per_prompt_token.unwrap() - copy).abs() < 1e-12);
    assert!(p.prefill_tokens_per_s.unwrap() < 1.0 / copy);
    // The launch command: every layer and the output on the GPU, the
    // experts of the first 31 layers in host memory.
    let devices = vec![cpu.clone(), gpu.clone()];
    let mut whole = plan_inference(&spec, &devices, &opts);
    whole.plans = vec![p.clone()];
    let l = emit(
        &whole,
        0,
        &ModelOrigin::Gguf {
            path: "m.gguf".into(),
        },
    )
    .unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "-ngl"), "49");
    assert_eq!(value(&l.argv, "--n-cpu-moe"), "31");
    assert!(l.notes.iter().any(|n| n.contains("blk\\.(0|1|2|")));
    // A host too small for the 31 layers' experts (38.1 GB) gets no expert
    // split: the fewest N needs the most host memory of any N.
    let small_host = PlanDevice {
        capacity_bytes: Some(30 << 30),
        ..cpu.clone()
    };
    assert!(plan_offload(&spec, &gpu, &small_host, &opts).is_none_or(|p| p.moe_offload.is_none()));
    // Fits an 80 GB H100 whole at Q4_K: no offload.
    let h100 = PlanDevice::from_device_string("1xh100-sxm").unwrap()[0].clone();
    let q4 = InferenceOptions {
        quant: Some(Quant::Q4K),
        ..opts.clone()
    };
    assert!(plan_offload(&spec, &h100, &cpu, &q4).is_none());
    // A dense model gets the layer split, without a MoE section.
    let dense = load_model("llama-3.1-8b").unwrap().spec;
    let small = PlanDevice {
        capacity_bytes: Some(8 << 30),
        ..gpu.clone()
    };
    let d = plan_offload(&dense, &small, &cpu, &opts).unwrap();
    assert!(d.moe_offload.is_none());
}

/// Partial offload over two GPUs (`-ngl` with `--tensor-split`): Llama 3.1
/// 70B in bf16 on two 24 GiB RTX 4090s and the host CPU. The CPU keeps the
/// first layers; each GPU, filled from the last, holds as many layers as
/// fit (the last one also the output layer).
#[test]
fn offload_over_two_gpus_splits_the_last_layers_between_them() {
    use ai_hwaccel::plan::plan_offload_gpus;
    let spec = load_model("llama-3.1-70b").unwrap().spec;
    let card = |id: &str| PlanDevice {
        id: id.into(),
        ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
    };
    let gpus = [card("gpu0"), card("gpu1")];
    let cpu = PlanDevice {
        id: "cpu".into(),
        name: "host".into(),
        spec_id: None,
        capacity_bytes: Some(256 << 30),
        bandwidth_bytes_per_s: Some(100_000_000_000),
        tflops: Default::default(),
        native_dtypes: None,
        link: None,
        link_bandwidth_bytes_per_s: None,
        domain: 9,
        pcie_bandwidth_bytes_per_s: None,
        host: true,
        cpu_features: vec!["avx2".into()],
        cpu_spec_id: None,
        bandwidth_basis: None,
        compute_basis: None,
        machine: 0,
        vulkan_matrix_cores: None,
    };
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Bf16),
        context: Some(4096),
        calibrated_speed: false,
        ..Default::default()
    };
    let p = plan_offload_gpus(&spec, &gpus, &cpu, &opts).expect("a plan");
    let d = &p.per_device;
    let ids: Vec<&str> = d.iter().map(|x| x.device.as_str()).collect();
    assert_eq!(ids, ["cpu", "gpu0", "gpu1"]);
    assert_eq!(d[0].layers.0, 0);
    assert_eq!(
        (d[0].layers.1, d[1].layers.1),
        (d[1].layers.0, d[2].layers.0)
    );
    assert_eq!(d[2].layers.1, 80);
    assert!(d.iter().all(|x| x.fits));
    // One bf16 layer: q and o 8,192 × 8,192, k and v 8,192 × 1,024, the
    // MLP 3 × 8,192 × 28,672, two norms of 8,192 = 855,654,400 parameters,
    // 1,711,308,800 bytes; its KV at 4,096 tokens: 4,096 × 2 × 8 × 128 × 2
    // = 16,777,216 bytes. Neither GPU has room for one more.
    let layer = (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) * 2u64;
    assert_eq!(layer, 1_711_308_800);
    let kv = 4096u64 * 2 * 8 * 128 * 2;
    for g in &d[1..] {
        let n = u64::from(g.layers.1 - g.layers.0);
        assert_eq!(g.kv_cache_bytes, n * kv);
        assert!(g.total_bytes + layer + kv > g.capacity_bytes, "{g:?}");
    }
    // The last GPU also holds the output layer (128,256 × 8,192 bf16) and
    // the final norm.
    let n1 = u64::from(d[2].layers.1 - d[2].layers.0);
    assert_eq!(
        d[2].weights_bytes,
        n1 * layer + 128_256 * 8192 * 2 + 8192 * 2
    );
    // Decode: the three stages one after the other at 0.6 of their
    // bandwidths; the CPU reads one embedding row per token.
    let embedding = 128_256u64 * 8192 * 2;
    let t = (d[0].weights_bytes - embedding + d[0].kv_cache_bytes) as f64 / (100e9 * 0.6)
        + (d[1].weights_bytes + d[1].kv_cache_bytes) as f64 / (1008e9 * 0.6)
        + (d[2].weights_bytes + d[2].kv_cache_bytes) as f64 / (1008e9 * 0.6);
    let got = p.decode_tokens_per_s.unwrap();
    assert!((got - 1.0 / t).abs() / got < 1e-3, "{got} vs {}", 1.0 / t);
    // The launch: -ngl counts both GPUs' layers and the output layer,
    // --tensor-split their layers.
    let devices = vec![cpu.clone(), gpus[0].clone(), gpus[1].clone()];
    let mut whole = plan_inference(&spec, &devices, &opts);
    whole.plans = vec![p.clone()];
    let l = emit(
        &whole,
        0,
        &ModelOrigin::Gguf {
            path: "m.gguf".into(),
        },
    )
    .unwrap();
    assert_llama_cpp_accepts(&l);
    let on_gpus = (d[1].layers.1 - d[1].layers.0) + (d[2].layers.1 - d[2].layers.0);
    assert_eq!(value(&l.argv, "-ngl"), (on_gpus + 1).to_string());
    assert_eq!(
        value(&l.argv, "--tensor-split"),
        format!(
            "{},{}",
            d[1].layers.1 - d[1].layers.0,
            d[2].layers.1 - d[2].layers.0 + 1
        ),
        "the output layer counted on the last stage"
    );
    // One GPU: plan_offload's answer; none: nothing.
    assert_eq!(
        plan_offload_gpus(&spec, &gpus[..1], &cpu, &opts),
        ai_hwaccel::plan::plan_offload(&spec, &gpus[0], &cpu, &opts)
    );
    assert!(plan_offload_gpus(&spec, &[], &cpu, &opts).is_none());
    // Fits two 80 GB H100s at Q4_K: no offload.
    let h100 = PlanDevice::from_device_string("2xh100-sxm").unwrap();
    let q4 = InferenceOptions {
        quant: Some(Quant::Q4K),
        ..opts.clone()
    };
    assert!(plan_offload_gpus(&spec, &h100, &cpu, &q4).is_none());
    // With the numbers above: 13 layers on the first card, 12 and the
    // output layer on the second, 55 on the CPU (each card's 346 MiB of
    // driver reserve, which CUDA never reports, is outside llama.cpp's fit:
    // CUDA_VISIBLE_TOTAL, from a real `nvidia-smi -q` of a 4090).
    let split: Vec<(u32, u32)> = d.iter().map(|x| x.layers).collect();
    assert_eq!(split, [(0, 55), (55, 68), (68, 80)]);
}

/// MoE expert offload over two GPUs: Qwen3-30B-A3B in bf16 on two 24 GiB
/// RTX 4090s. Every layer on the GPUs (split by layers), the routed experts
/// of the fewest first layers in host memory; `-ngl`, `--tensor-split` and
/// `--n-cpu-moe` together.
#[test]
fn moe_offload_over_two_gpus() {
    use ai_hwaccel::plan::plan_offload_gpus;
    let spec = load_model("qwen3-30b-a3b").unwrap().spec;
    let card = |id: &str| PlanDevice {
        id: id.into(),
        pcie_bandwidth_bytes_per_s: Some(63_000_000_000),
        ..PlanDevice::from_device_string("1xrtx-4090").unwrap()[0].clone()
    };
    let gpus = [card("gpu0"), card("gpu1")];
    let cpu = PlanDevice {
        id: "cpu".into(),
        name: "host".into(),
        spec_id: None,
        capacity_bytes: Some(96 << 30),
        bandwidth_bytes_per_s: Some(100_000_000_000),
        tflops: Default::default(),
        native_dtypes: None,
        link: None,
        link_bandwidth_bytes_per_s: None,
        domain: 9,
        pcie_bandwidth_bytes_per_s: None,
        host: true,
        cpu_features: vec!["avx2".into()],
        cpu_spec_id: None,
        bandwidth_basis: None,
        compute_basis: None,
        machine: 0,
        vulkan_matrix_cores: None,
    };
    let opts = InferenceOptions {
        runtime: RuntimeKind::LlamaCpp,
        quant: Some(Quant::Bf16),
        context: Some(4096),
        calibrated_speed: false,
        ..Default::default()
    };
    let p = plan_offload_gpus(&spec, &gpus, &cpu, &opts).expect("a plan");
    let m = p.moe_offload.clone().expect("a MoE split");
    let d = &p.per_device;
    let ids: Vec<&str> = d.iter().map(|x| x.device.as_str()).collect();
    assert_eq!(ids, ["cpu", "gpu0", "gpu1"]);
    assert_eq!((d[1].layers.0, d[1].layers.1), (0, d[2].layers.0));
    assert_eq!(d[2].layers.1, 48);
    assert!(d.iter().all(|x| x.fits));
    // As in the one-GPU test: 1,207,959,552 bytes of routed experts per
    // layer (75,497,472 read per step), 2,459,856,896 bytes of the rest.
    let (layer_experts, active, gpu_fixed) = (1_207_959_552u64, 75_497_472u64, 2_459_856_896u64);
    let embedding = 151_936u64 * 2048 * 2;
    let n = u64::from(m.cpu_expert_layers);
    assert_eq!(u64::from(d[0].layers.1), n);
    assert_eq!(m.host_weights_bytes, n * layer_experts + embedding);
    assert_eq!(m.gpu_weights_bytes, gpu_fixed + (48 - n) * layer_experts);
    // Fewer experts than on one card: 48 GiB of GPUs instead of 24.
    assert!(n < 30, "{n}");
    // Neither GPU has room for one more layer of experts (a layer's
    // experts cannot be split between them).
    for g in &d[1..] {
        let free = g.capacity_bytes - g.total_bytes;
        assert!(free < layer_experts, "{}: {free}", g.device);
    }
    // Decode: both GPUs at 0.6 × 1,008 GB/s, then the host at 0.6 × 100.
    let kv = 48u64 * 4096 * 2 * 4 * 128 * 2;
    let gpu_read = gpu_fixed + (48 - n) * active + kv;
    assert_eq!(m.gpu_bytes_per_step, gpu_read);
    let t = gpu_read as f64 / (1008e9 * 0.6) + (n * active) as f64 / (100e9 * 0.6);
    let got = p.decode_tokens_per_s.unwrap();
    assert!((got - 1.0 / t).abs() < 1e-9 * got, "{got} vs {}", 1.0 / t);
    // The launch.
    let devices = vec![cpu.clone(), gpus[0].clone(), gpus[1].clone()];
    let mut whole = plan_inference(&spec, &devices, &opts);
    whole.plans = vec![p.clone()];
    let l = emit(
        &whole,
        0,
        &ModelOrigin::Gguf {
            path: "m.gguf".into(),
        },
    )
    .unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "-ngl"), "49");
    assert_eq!(value(&l.argv, "--n-cpu-moe"), n.to_string());
    assert_eq!(
        value(&l.argv, "--tensor-split"),
        format!("{},{}", d[1].layers.1, 48 - d[2].layers.0 + 1)
    );
    // With these sizes (and each card's 346 MiB of driver reserve outside
    // the fit): the experts of 12 layers on the host, 30 layers on the
    // first card and 18 and the output layer on the second.
    let split: Vec<(u32, u32)> = d.iter().map(|x| x.layers).collect();
    assert_eq!(split, [(0, 12), (0, 30), (30, 48)]);
}

/// Under a time-per-output-token target the launch admits the concurrency
/// the plan found meeting it, not every sequence the memory holds: vLLM's
/// `--max-num-seqs`, SGLang's `--max-running-requests`, TensorRT-LLM's
/// `--max_batch_size`.
#[test]
fn latency_targets_cap_the_admitted_sequences() {
    let m = load_model("llama-3.1-70b").unwrap();
    for (runtime, flag) in [
        (RuntimeKind::Vllm, "--max-num-seqs"),
        (RuntimeKind::Sglang, "--max-running-requests"),
        (RuntimeKind::Trtllm, "--max_batch_size"),
    ] {
        let p = plan_inference(
            &m.spec,
            &PlanDevice::from_device_string("8xh100-sxm").unwrap(),
            &InferenceOptions {
                runtime,
                context: Some(8192),
                tpot_ms: Some(30.0),
                ..Default::default()
            },
        );
        let best = &p.plans[0];
        assert!(best.batch > 1 && best.batch < best.max_batch, "{best:?}");
        let l = emit(&p, 0, &m.origin).unwrap();
        assert_eq!(value(&l.argv, flag), best.batch.to_string(), "{runtime}");
    }
}

/// Expert parallelism: a MoE layout spreads whole experts over its TP ranks
/// (the plan's `expert_parallel` = TP), the runtimes get their flags
/// (vLLM `--enable-expert-parallel`, SGLang `--ep-size`, TensorRT-LLM
/// `--ep_size`), per-device bytes are those of the sliced layout, and a TP
/// degree that does not divide the routed experts is rejected.
#[test]
fn expert_parallel_layouts_and_flags() {
    let m = load_model("qwen3-30b-a3b").unwrap();
    let devs = PlanDevice::from_device_string("4xh100-sxm").unwrap();
    let base = InferenceOptions {
        quant: Some(Quant::Bf16),
        max_plans: 20,
        ..Default::default()
    };
    let sliced = plan_inference(&m.spec, &devs, &base);
    for (runtime, check) in [
        (RuntimeKind::Vllm, "vllm"),
        (RuntimeKind::Sglang, "sglang"),
        (RuntimeKind::Trtllm, "trtllm"),
    ] {
        let opts = InferenceOptions {
            runtime,
            expert_parallel: true,
            ..base.clone()
        };
        let p = plan_inference(&m.spec, &devs, &opts);
        let i = p
            .plans
            .iter()
            .position(|x| x.tensor_parallel == 4 && x.data_parallel == 1)
            .expect("a TP4 plan");
        let x = &p.plans[i];
        assert_eq!(x.expert_parallel, 4);
        let l = emit(&p, i, &m.origin).unwrap();
        match check {
            "vllm" => {
                assert!(l.argv.contains(&"--enable-expert-parallel".to_string()));
                assert_vllm_accepts(&l);
            }
            "sglang" => {
                assert_eq!(value(&l.argv, "--ep-size"), "4");
                assert_sglang_accepts(&l);
            }
            _ => {
                assert_eq!(value(&l.argv, "--ep_size"), "4");
                assert_trtllm_accepts(&l);
            }
        }
        if runtime == RuntimeKind::Vllm {
            // Same bytes per device as slicing every expert.
            let same = sliced
                .plans
                .iter()
                .find(|y| y.tensor_parallel == 4 && y.data_parallel == 1)
                .unwrap();
            assert_eq!(
                x.per_device[0].weights_bytes,
                same.per_device[0].weights_bytes
            );
        }
    }
    // Without the option the flags say no expert parallelism.
    assert!(sliced.plans.iter().all(|x| x.expert_parallel == 1));
    // Six routed experts: TP 4 cannot hold whole experts evenly.
    let mut six = load_model("mixtral-8x7b").unwrap().spec;
    six.moe.as_mut().unwrap().num_experts = 6;
    let p = plan_inference(
        &six,
        &devs,
        &InferenceOptions {
            expert_parallel: true,
            ..base
        },
    );
    assert!(p.plans.iter().all(|x| x.tensor_parallel != 4));
    assert!(
        p.rejected
            .iter()
            .any(|r| r.tensor_parallel == 4 && r.reason.contains("6 routed experts")),
        "{:?}",
        p.rejected
    );
}

/// vLLM shards a MoE model's experts over every TP × DP rank (its fused-MoE
/// layers flatten TP across DP; `FusedMoEParallelConfig.make`, vLLM 0.33.0):
/// Mixtral-8x7B bf16 at TP 2 × DP 4 holds 1/8 of the experts per GPU, where
/// the generic rule (replicas independent) holds 1/2; with
/// `--expert-parallel` the EP degree is 8 and the command says so.
#[test]
fn vllm_shards_experts_over_every_data_parallel_rank() {
    let m = load_model("mixtral-8x7b").unwrap();
    let devs = PlanDevice::from_device_string("8xh100-sxm").unwrap();
    let opts = |runtime, expert_parallel| InferenceOptions {
        quant: Some(Quant::Bf16),
        max_plans: 50,
        runtime,
        expert_parallel,
        ..Default::default()
    };
    let tp2dp4 = |p: &ai_hwaccel::plan::InferencePlan| {
        p.plans
            .iter()
            .position(|x| {
                x.tensor_parallel == 2 && x.pipeline_parallel == 1 && x.data_parallel == 4
            })
            .expect("a TP2 DP4 plan")
    };
    let generic = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Generic, false));
    let vllm = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Vllm, false));
    let (g, v) = (&generic.plans[tp2dp4(&generic)], &vllm.plans[tp2dp4(&vllm)]);
    // 32 layers × 8 experts × 3 × 4096 × 14336 parameters × 2 bytes.
    let experts: u64 = 32 * 8 * 3 * 4096 * 14336 * 2;
    assert_eq!(
        g.per_device[0].weights_bytes - v.per_device[0].weights_bytes,
        experts / 2 - experts / 8
    );
    assert!(
        v.per_device
            .iter()
            .all(|d| d.weights_bytes == v.per_device[0].weights_bytes)
    );
    assert_eq!(v.expert_parallel, 1, "sliced, not expert-parallel");
    // Whole experts over the 8 ranks.
    let ep = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Vllm, true));
    let i = tp2dp4(&ep);
    assert_eq!(ep.plans[i].expert_parallel, 8);
    assert_eq!(
        ep.plans[i].per_device[0].weights_bytes,
        v.per_device[0].weights_bytes
    );
    let l = emit(&ep, i, &m.origin).unwrap();
    assert!(l.argv.contains(&"--enable-expert-parallel".to_string()));
    assert_eq!(value(&l.argv, "--data-parallel-size"), "4");
    assert_eq!(value(&l.argv, "--tensor-parallel-size"), "2");
    assert_vllm_accepts(&l);
    // SGLang keeps its experts within the TP group.
    let sg = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Sglang, true));
    assert_eq!(sg.plans[tp2dp4(&sg)].expert_parallel, 2);
}

/// NVFP4 and MXFP4 plans: the runtimes read these formats from the
/// checkpoint's quantization_config. The pinned vLLM and SGLang methods
/// include `modelopt_fp4` and `mxfp4`, but each names one exporter's
/// checkpoints (ModelOpt's, OpenAI's) while others store the same formats
/// under other `quant_method`s (`compressed-tensors`, `quark`), and vLLM
/// refuses a `--quantization` that differs from the checkpoint's
/// (vllm-0.33.0 `config/model.py`: "does not match"): no flag is emitted,
/// a note says to serve a checkpoint stored at the level, and every flag
/// that is emitted is the pinned runtime's. FP8 is emitted (`fp8` is the
/// method of FP8 checkpoints and the online quantization of 16-bit ones)
/// and is a pinned value of both.
#[test]
fn fp4_plans_serve_the_checkpoints_format() {
    let m = load_model("llama-3.1-8b").unwrap();
    let h100 = PlanDevice::from_device_string("1xh100-sxm").unwrap();
    for kind in [RuntimeKind::Vllm, RuntimeKind::Sglang] {
        let p = plan_inference(
            &m.spec,
            &h100,
            &InferenceOptions {
                runtime: kind,
                quant: Some(Quant::Fp8),
                context: Some(8192),
                ..Default::default()
            },
        );
        let l = emit(&p, 0, &m.origin).unwrap();
        assert_eq!(value(&l.argv, "--quantization"), "fp8");
        if kind == RuntimeKind::Vllm {
            assert_vllm_accepts(&l);
        } else {
            assert_sglang_accepts(&l);
        }
    }
    for (q, devices) in [(Quant::Nvfp4, "1xb200"), (Quant::Mxfp4, "1xh100-sxm")] {
        let devices = PlanDevice::from_device_string(devices).unwrap();
        for kind in [RuntimeKind::Vllm, RuntimeKind::Sglang, RuntimeKind::Trtllm] {
            let p = plan_inference(
                &m.spec,
                &devices,
                &InferenceOptions {
                    runtime: kind,
                    quant: Some(q),
                    context: Some(8192),
                    ..Default::default()
                },
            );
            assert_eq!(p.quantization, q);
            let l = emit(&p, 0, &m.origin).unwrap();
            assert!(
                !l.argv.iter().any(|a| a == "--quantization"),
                "{:?}",
                l.argv
            );
            assert!(!l.argv.iter().any(|a| a == "--dtype"), "{:?}", l.argv);
            assert!(
                l.notes
                    .iter()
                    .any(|n| n.starts_with(&format!("{q}: ")) && n.contains("checkpoint")),
                "{:?}",
                l.notes
            );
            match kind {
                RuntimeKind::Vllm => assert_vllm_accepts(&l),
                RuntimeKind::Sglang => assert_sglang_accepts(&l),
                _ => assert_trtllm_accepts(&l),
            }
        }
    }
}

/// vLLM loads bitsandbytes checkpoints only up to 0.27.1: the pinned
/// release has no `bitsandbytes` quantization method, so a plan asked for
/// at NF4 warns and no vLLM command is emitted for it; SGLang, which still
/// loads bitsandbytes, gets one (that NF4 is never suggested for vLLM is
/// `quant.rs`'s `candidate_levels` test).
#[test]
fn nf4_is_not_served_by_the_pinned_vllm() {
    let opts = |runtime, quant| InferenceOptions {
        runtime,
        quant,
        context: Some(4096),
        ..Default::default()
    };
    let m = load_model("qwen2.5-7b").unwrap();
    let devs = PlanDevice::from_device_string("1xrtx-4090").unwrap();
    let p = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Vllm, Some(Quant::Nf4)));
    assert_eq!(p.quantization, Quant::Nf4);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("vLLM loads only up to 0.27.1")),
        "{:?}",
        p.warnings
    );
    let e = emit(&p, 0, &m.origin).unwrap_err();
    assert!(e.contains("0.28.0 removed it"), "{e}");
    let p = plan_inference(&m.spec, &devs, &opts(RuntimeKind::Sglang, Some(Quant::Nf4)));
    assert!(!p.warnings.iter().any(|w| w.contains("bitsandbytes")));
    assert_sglang_accepts(&emit(&p, 0, &m.origin).unwrap());
}

/// `InferenceOptions::eager` (`plan --enforce-eager`): each runtime's
/// command runs without CUDA graphs — vLLM `--enforce-eager`, SGLang's decode
/// and prefill graph backends `disabled`, llama.cpp under
/// `GGML_CUDA_DISABLE_GRAPHS` — and the plan is that of such a server: a
/// tensor-parallel vLLM decode step takes the eager per-layer time, a
/// one-device one keeps the graphs' (and says so), SGLang reserves nothing
/// for graphs, llama.cpp on an Ampere GPU takes its pre-graph builds'
/// per-layer time.
#[test]
fn eager_plans_launch_without_cuda_graphs() {
    let decode = |p: &ai_hwaccel::plan::InferencePlan, tp: u32| {
        p.plans
            .iter()
            .find(|c| c.tensor_parallel == tp && c.pipeline_parallel == 1 && c.data_parallel == 1)
            .and_then(|c| c.decode_tokens_per_s_per_sequence)
            .unwrap()
    };
    // vLLM, Llama 3.1 8B over two RTX 4090s and on one.
    let m = load_model("llama-3.1-8b").unwrap();
    let devices = PlanDevice::from_device_string("2xrtx-4090").unwrap();
    let vllm_on = |devices: &[PlanDevice], eager: bool| {
        plan_inference(
            &m.spec,
            devices,
            &InferenceOptions {
                runtime: RuntimeKind::Vllm,
                context: Some(4096),
                max_plans: 16,
                eager,
                ..Default::default()
            },
        )
    };
    let (graphs, eager) = (vllm_on(&devices, false), vllm_on(&devices, true));
    let per_layer = ai_hwaccel::plan::speed::EAGER_TP_LAYER_SECONDS
        .iter()
        .find(|(r, ..)| *r == RuntimeKind::Vllm)
        .map(|(_, s, _)| *s)
        .unwrap();
    // The step grows by the layers × (eager − graphs) per-layer time.
    let graph_layer = ai_hwaccel::plan::speed::fitted_for(
        &devices[0],
        RuntimeKind::Vllm,
        Quant::Bf16,
        None,
        None,
        false,
    )
    .decode_layer_s;
    let grown = 1.0 / decode(&eager, 2) - 1.0 / decode(&graphs, 2);
    let want = f64::from(m.spec.num_layers) * (per_layer - graph_layer);
    assert!((grown - want).abs() < 1e-9, "{grown} vs {want}");
    let single = PlanDevice::from_device_string("1xrtx-4090").unwrap();
    assert_eq!(
        decode(&vllm_on(&single, true), 1),
        decode(&vllm_on(&single, false), 1)
    );
    assert!(
        eager
            .warnings
            .iter()
            .any(|w| w.contains("eager") && w.contains("one-device")),
        "{:?}",
        eager.warnings
    );
    assert!(!graphs.warnings.iter().any(|w| w.contains("eager")));
    let i = eager
        .plans
        .iter()
        .position(|c| c.tensor_parallel == 2)
        .unwrap();
    let l = emit(&eager, i, &m.origin).unwrap();
    assert_vllm_accepts(&l);
    assert!(l.argv.iter().any(|a| a == "--enforce-eager"));
    assert!(l.notes.iter().any(|n| n.contains("captures no graph")));
    assert!(
        !l.notes
            .iter()
            .any(|n| n.contains("CUDA-graph memory estimate"))
    );
    let j = graphs
        .plans
        .iter()
        .position(|c| c.tensor_parallel == 2)
        .unwrap();
    let lg = emit(&graphs, j, &m.origin).unwrap();
    assert!(!lg.argv.iter().any(|a| a == "--enforce-eager"));

    // SGLang, Llama 3.1 70B on 8 H100 SXM: without graphs the reserve has
    // no decode graphs' 2 MiB per batch and no prefill buckets, so the
    // default fraction and the requests it admits are larger.
    let big = load_model("llama-3.1-70b").unwrap();
    let h100 = PlanDevice::from_device_string("8xh100-sxm").unwrap();
    let sglang = |eager: bool| {
        plan_inference(
            &big.spec,
            &h100,
            &InferenceOptions {
                runtime: RuntimeKind::Sglang,
                context: Some(8192),
                eager,
                ..Default::default()
            },
        )
    };
    let (sg, se) = (sglang(false), sglang(true));
    let le = emit(&se, 0, &big.origin).unwrap();
    assert_sglang_accepts(&le);
    assert_eq!(value(&le.argv, "--cuda-graph-backend-decode"), "disabled");
    assert_eq!(value(&le.argv, "--cuda-graph-backend-prefill"), "disabled");
    let (tp, pp) = (se.plans[0].tensor_parallel, se.plans[0].pipeline_parallel);
    let reserved = (512.0 + 1.5 * 8192.0 + f64::from(tp * pp) / 8.0 * 1024.0).max(10240.0);
    assert_eq!(
        value(&le.argv, "--mem-fraction-static"),
        format!("{:.3}", (81559.0 - reserved) / 81559.0)
    );
    let lgr = emit(&sg, 0, &big.origin).unwrap();
    assert!(
        !lgr.argv
            .iter()
            .any(|a| a.starts_with("--cuda-graph-backend"))
    );
    assert!(
        value(&le.argv, "--mem-fraction-static")
            .parse::<f64>()
            .unwrap()
            > value(&lgr.argv, "--mem-fraction-static")
                .parse::<f64>()
                .unwrap()
    );
    assert!(se.plans[0].max_batch >= sg.plans[0].max_batch);

    // llama.cpp on one RTX 4090: the variable is set, and the step holds
    // the per-layer time of the builds before CUDA graphs (longer).
    let gguf = ModelOrigin::Gguf {
        path: "/models/Llama-3.1-8B-Q4_K_M.gguf".into(),
    };
    let llama = |devices: &str, eager: bool| {
        plan_inference(
            &m.spec,
            &PlanDevice::from_device_string(devices).unwrap(),
            &InferenceOptions {
                runtime: RuntimeKind::LlamaCpp,
                quant: Some(Quant::Q4K),
                context: Some(4096),
                eager,
                ..Default::default()
            },
        )
    };
    let (lc, le2) = (llama("1xrtx-4090", false), llama("1xrtx-4090", true));
    assert!(decode(&le2, 1) < decode(&lc, 1));
    let l = emit(&le2, 0, &gguf).unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(
        l.env.get("GGML_CUDA_DISABLE_GRAPHS").map(String::as_str),
        Some("1")
    );
    assert!(emit(&lc, 0, &gguf).unwrap().env.is_empty());
    // On an AMD GPU llama.cpp has no graphs to turn off: the plan says so
    // and keeps its time.
    let (ag, ae) = (llama("1xrx-7900-xtx", false), llama("1xrx-7900-xtx", true));
    assert_eq!(decode(&ag, 1), decode(&ae, 1));
    assert!(
        ae.warnings
            .iter()
            .any(|w| w.contains("already run without"))
    );
}

/// `InferenceOptions::ubatch` (`plan --ubatch`, llama.cpp's `-ub`): the
/// command passes it and the compute buffer llama.cpp reserves for one
/// micro-batch grows with it (`llamacpp::compute_buffer_bytes`); other
/// runtimes' plans ignore it.
#[test]
fn llama_cpp_micro_batch_is_planned_and_passed() {
    let m = load_model("llama-3.1-8b").unwrap();
    let gguf = ModelOrigin::Gguf {
        path: "/models/Llama-3.1-8B-Q4_K_M.gguf".into(),
    };
    let devices = PlanDevice::from_device_string("1xrtx-4090").unwrap();
    let plan = |runtime: RuntimeKind, ubatch: Option<u64>| {
        plan_inference(
            &m.spec,
            &devices,
            &InferenceOptions {
                runtime,
                quant: Some(Quant::Q4K),
                context: Some(8192),
                ubatch,
                ..Default::default()
            },
        )
    };
    let (default, big) = (
        plan(RuntimeKind::LlamaCpp, None),
        plan(RuntimeKind::LlamaCpp, Some(2048)),
    );
    assert_eq!(value(&emit(&default, 0, &gguf).unwrap().argv, "-ub"), "512");
    let l = emit(&big, 0, &gguf).unwrap();
    assert_llama_cpp_accepts(&l);
    assert_eq!(value(&l.argv, "-ub"), "2048");
    let act = |p: &ai_hwaccel::plan::InferencePlan| p.plans[0].per_device[0].activation_bytes;
    assert!(act(&big) > act(&default), "{} {}", act(&big), act(&default));
    // llama.cpp caps the micro-batch at n_batch (2048).
    let capped = plan(RuntimeKind::LlamaCpp, Some(4096));
    assert_eq!(value(&emit(&capped, 0, &gguf).unwrap().argv, "-ub"), "2048");
    assert_eq!(act(&capped), act(&big));
    let v = |u| plan(RuntimeKind::Vllm, u).plans[0].per_device[0].activation_bytes;
    assert_eq!(v(None), v(Some(2048)));
}

/// llama.cpp reads every expert its micro-batch routes to once per
/// micro-batch (`inference::prompt_pass_weight_seconds`): a mixture of
/// experts' prompt runs faster with a larger `-ub` (more tokens per expert
/// share each read), a dense model's is unchanged, and the serving engines
/// (several requests per pass) take no such term.
#[test]
fn moe_prompts_read_their_experts_once_per_micro_batch() {
    let prefill = |model: &str, runtime: RuntimeKind, ubatch: Option<u64>| {
        let m = load_model(model).unwrap();
        plan_inference(
            &m.spec,
            &PlanDevice::from_device_string("1xrtx-pro-6000").unwrap(),
            &InferenceOptions {
                runtime,
                quant: Some(if runtime == RuntimeKind::LlamaCpp {
                    Quant::Q4K
                } else {
                    Quant::Bf16
                }),
                context: Some(4096),
                input_len: Some(2048),
                ubatch,
                ..Default::default()
            },
        )
        .plans[0]
            .prefill_tokens_per_s
            .unwrap()
    };
    let moe = |u| prefill("qwen3-30b-a3b", RuntimeKind::LlamaCpp, u);
    // 2048 tokens × 8 experts a token over 128 experts: 128 tokens per
    // expert in one micro-batch of 2048, 32 in each of four of 512.
    assert!(
        moe(Some(2048)) > 1.05 * moe(None),
        "{} {}",
        moe(Some(2048)),
        moe(None)
    );
    let dense = |u| prefill("llama-3.1-8b", RuntimeKind::LlamaCpp, u);
    assert_eq!(dense(Some(2048)), dense(None));
    let vllm = |u| prefill("qwen3-30b-a3b", RuntimeKind::Vllm, u);
    assert_eq!(vllm(Some(2048)), vllm(None));
}
