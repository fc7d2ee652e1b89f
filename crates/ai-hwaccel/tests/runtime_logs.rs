//! llama.cpp start-up logs read back (`plan::runtime::log`), on real logs
//! pasted in public threads (`tests/fixtures/runtime-logs`, provenance in
//! SOURCES.md) in the 2024 spelling; the 2025+ spelling is read from a real
//! llama-server run in `ai-hwaccel-cli/tests/llamacpp.rs`.
#![allow(clippy::disallowed_methods, reason = "tests read fixtures")]

use ai_hwaccel::plan::runtime::log::{LlamaCppLog, parse_llamacpp_log};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runtime-logs")
            .join(name),
    )
    .unwrap()
}

const MIB: f64 = 1_048_576.0;

fn mib(b: Option<u64>) -> f64 {
    b.unwrap() as f64 / MIB
}

#[test]
fn two_gpu_cuda_log_of_2024() {
    let l = parse_llamacpp_log(&fixture("llama.cpp-pr6122__2x-cuda-old-format.log"));
    let names: Vec<&str> = l.model_buffers.iter().map(|b| b.buffer.as_str()).collect();
    assert_eq!(
        names,
        ["CPU", "CUDA0", "CUDA1"],
        "ggml ctx size is not a buffer"
    );
    assert!(
        (mib(LlamaCppLog::total(&l.model_buffers)) - (1640.62 + 5434.38 + 13989.53)).abs() < 0.01
    );
    assert_eq!(l.offloaded_layers, Some((41, 41)));
    assert_eq!(
        (l.n_ctx, l.n_batch, l.n_ubatch),
        (Some(4096), Some(2048), Some(512))
    );
    assert_eq!(mib(LlamaCppLog::total(&l.kv_buffers)), 5120.0);
    assert_eq!(mib(l.kv_total_bytes), 5120.0);
    assert_eq!(
        (l.type_k.as_deref(), l.type_v.as_deref()),
        (Some("f16"), Some("f16"))
    );
    assert_eq!(l.output_buffers[0].buffer, "CUDA_Host");
    assert!((mib(Some(l.output_buffers[0].bytes)) - 1.95).abs() < 0.005);
    assert_eq!(
        l.compute_buffers.len(),
        1,
        "the excerpt ends mid-line after CUDA0"
    );
    assert!((mib(Some(l.compute_buffers[0].bytes)) - 672.01).abs() < 0.005);
}

#[test]
fn cpu_log_of_2024() {
    let l = parse_llamacpp_log(&fixture("llamafile-pr552__cpu-old-format.log"));
    assert!((mib(LlamaCppLog::total(&l.model_buffers)) - 1341.96).abs() < 0.005);
    assert_eq!(l.n_ctx, Some(512));
    assert_eq!(l.flash_attn.as_deref(), Some("0"));
    assert_eq!(mib(l.kv_total_bytes), 180.0);
    assert_eq!(l.kv_buffers[0].buffer, "CPU");
    assert_eq!(mib(LlamaCppLog::total(&l.compute_buffers)), 105.0);
    assert_eq!(
        l.hparams.get("max token length").map(String::as_str),
        None,
        "keys with spaces are skipped"
    );
    assert!(!l.is_empty());
}

/// 2025 logs that print no `n_ctx =` line: the cache's cells give it, from
/// `llama_kv_cache_unified: size = … ( 70016 cells, …)` (August 2025, a
/// start that then failed) and from `init: kv_size = 4096` (April 2025,
/// whose `init:` tag also carries the per-device KV buffer).
#[test]
fn context_from_the_cache_cells_of_2025_logs() {
    let l = parse_llamacpp_log(&fixture(
        "llamacpp-issue15009__strix-halo-vulkan-qwen3-30b-a3b-70k-oom.log",
    ));
    assert_eq!(l.n_ctx, Some(70_016));
    assert_eq!(mib(l.kv_total_bytes), 6564.0);
    let l = parse_llamacpp_log(&fixture(
        "llamacpp-issue12728__vulkan-init-spelling-mla-60layer-4k.log",
    ));
    assert_eq!(l.n_ctx, Some(4096));
    assert_eq!(mib(l.kv_total_bytes), 19_200.0);
    assert_eq!(l.kv_buffers.len(), 1, "{:?}", l.kv_buffers);
    assert_eq!(l.kv_buffers[0].buffer, "Vulkan0");
    // `ggml_vulkan_init:`-style tags are not the cache's `init:`.
    let l = parse_llamacpp_log("ggml_cuda_init: KV buffer size = 5.00 MiB\n");
    assert!(l.kv_buffers.is_empty());
}

#[test]
fn text_that_is_no_log_gives_nothing() {
    assert!(parse_llamacpp_log("hello\nsize = 5 MiB\n").is_empty());
    assert!(parse_llamacpp_log("llama_context: n_ctx = x\n").is_empty());
}

mod vllm {
    use super::fixture;
    use ai_hwaccel::plan::runtime::log::parse_vllm_log;

    const GIB: f64 = 1_073_741_824.0;
    fn gib(b: Option<u64>) -> f64 {
        b.unwrap() as f64 / GIB
    }

    #[test]
    fn v0_memory_profiling_results() {
        let l = parse_vllm_log(&fixture("vllm-issue10517__rtx3090-llama3.1-8b-20k.log"));
        assert!(
            (gib(l.weights_bytes) - 14.9888).abs() < 1e-4,
            "GB means GiB in vLLM"
        );
        assert!((gib(l.kv_cache_bytes) - 3.81).abs() < 1e-3);
        assert!((gib(l.total_gpu_memory_bytes) - 23.58).abs() < 1e-3);
        assert_eq!(l.gpu_memory_utilization, Some(0.90));
        assert!((gib(l.non_torch_bytes) - 0.35).abs() < 1e-3);
        assert_eq!(l.gpu_blocks, Some(1952));
        assert_eq!(l.max_concurrency, Some((20_000, 1.56)));
        assert_eq!(l.engine.as_deref(), Some("v0"));

        let l = parse_vllm_log(&fixture(
            "vllm-issue10517__rtx3090-llama3.1-8b-29k-too-long.log",
        ));
        assert_eq!(l.gpu_blocks, Some(1478));
        assert_eq!(
            (l.max_model_len, l.max_tokens_in_kv_cache),
            (Some(29_000), Some(23_648))
        );
        // 1,478 blocks × 16 tokens = the error's 23,648.
        assert_eq!(l.gpu_blocks.unwrap() * 16, 23_648);
    }

    #[test]
    fn v0_worker_lines_and_v1_lines() {
        let l = parse_vllm_log(&fixture("vllm-pr14447__4x-24gb-v0-worker.log"));
        assert!((gib(l.weights_bytes) - 21.21).abs() < 1e-3);
        assert!((gib(l.kv_cache_bytes) - 1.57).abs() < 1e-3);
        assert!((gib(l.activation_peak_bytes) - 0.37).abs() < 1e-3);
        assert!((gib(l.non_torch_bytes) - 0.20).abs() < 1e-3);
        assert_eq!(l.gpu_memory_utilization, Some(0.99));
        assert!((gib(l.total_gpu_memory_bytes) - 23.58).abs() < 1e-3);

        let l = parse_vllm_log(&fixture("vllm-pr13596__v1-kv-cache-tokens.log"));
        assert_eq!(l.kv_cache_tokens, Some(2_042_016));
        assert_eq!(l.engine.as_deref(), Some("v1"));
        assert_eq!(l.max_concurrency, Some((2048, 997.08)));

        let l = parse_vllm_log(&fixture("vllm-pr12569__v1-70b-w8a8.log"));
        assert!((gib(l.weights_bytes) - 67.7229).abs() < 1e-4);
        assert_eq!(l.gpu_blocks, Some(1381));
        assert_eq!(l.max_concurrency, Some((2048, 10.79)));
        assert!(parse_vllm_log("hello").is_empty());
    }

    /// vLLM 0.10 (V1) states its options only in `non-default args: {…}`;
    /// V0 executors of 2025 count `# cuda blocks` / `# rocm blocks`.
    #[test]
    fn non_default_args_and_device_named_blocks() {
        use ai_hwaccel::plan::Quant;
        use ai_hwaccel::plan::runtime::log::serving_quant;
        let l = parse_vllm_log(&fixture(
            "dennislee22-vllm-benchmarking__vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log",
        ));
        assert_eq!(l.gpu_memory_utilization, Some(0.5));
        assert_eq!(l.tensor_parallel_size, Some(2));
        assert_eq!(l.pipeline_parallel_size, Some(1));
        assert!((gib(l.kv_cache_bytes) - 11.03).abs() < 1e-3);
        // The scheduler's line (`Chunked prefill is enabled with
        // max_num_batched_tokens=2048.`); the user set no max_num_seqs.
        assert_eq!(l.max_num_batched_tokens, Some(2048));
        assert_eq!(l.max_num_seqs, None);
        assert_eq!(
            serving_quant(l.dtype.as_deref(), l.quantization.as_deref()),
            Some(Quant::Bf16)
        );

        let l = parse_vllm_log(&fixture(
            "rldecisionagent-art-mcp-rl__rtx4090d-qwen2.5-0.5b-bnb4-v0.8.5-cuda-blocks.log",
        ));
        assert_eq!(l.gpu_blocks, Some(12_652));
        assert_eq!(l.quantization.as_deref(), Some("bitsandbytes"));
        // Unsloth's kwargs line: the checkpoint's skip list, in order.
        assert_eq!(
            l.skip_modules,
            [
                "lm_head",
                "multi_modal_projector",
                "merger",
                "modality_projection",
                "model.layers.0.self_attn",
                "model.layers.0.mlp",
                "model.layers.2.mlp",
                "model.layers.3.mlp",
                "model.layers.21.mlp",
                "model.layers.0.self_attn.q_proj",
            ]
        );
        assert_eq!(
            serving_quant(l.dtype.as_deref(), l.quantization.as_deref()),
            Some(Quant::Nf4)
        );

        let l = parse_vllm_log(&fixture(
            "serverlessllm-rocm-quickstart-2025-06__24gb-amd-opt-125m-rocm-blocks.log",
        ));
        assert_eq!(l.gpu_blocks, Some(37_011));
        // The swap space is no GPU's: `# CPU blocks: 7281` is not read.
        assert_ne!(l.gpu_blocks, Some(7_281));
        assert_eq!(
            serving_quant(Some("torch.float16"), Some("None")),
            Some(Quant::Fp16)
        );
        assert_eq!(serving_quant(None, Some("awq_marlin")), Some(Quant::Int4));
        assert_eq!(serving_quant(Some("float32"), None), None);
    }

    /// vLLM 0.18 on measures its CUDA graphs before sizing the KV cache
    /// and (0.20 on, or opted in) takes the figure off it; the line that
    /// says so prints the utilization even where the user left the default.
    #[test]
    fn cudagraph_estimate_lines() {
        use ai_hwaccel::plan::runtime::vllm_subtracts_cudagraph_estimate as subtracts;
        let l = parse_vllm_log(&fixture(
            "vllm-gpustack-runner-pr251__tp2-0.27.1-cudagraph-estimate.log",
        ));
        assert!((gib(l.cudagraph_estimate_bytes) - 0.36).abs() < 1e-3);
        assert_eq!(l.cudagraph_estimate_subtracted, Some(true));
        assert_eq!(l.gpu_memory_utilization, Some(0.82));
        assert!((gib(l.kv_cache_bytes) - 6.87).abs() < 1e-3);
        assert!(subtracts(None, l.cudagraph_estimate_subtracted));

        // Only rank 1 printed its estimate in this excerpt: it is kept; the
        // utilization is vLLM 0.2x's default as the enabled line prints it.
        let l = parse_vllm_log(&fixture(
            "vllm-club3090-issue127__4x-rtx3090-tp4-cudagraph-estimate-rank1-only.log",
        ));
        assert!((gib(l.cudagraph_estimate_bytes) - 0.17).abs() < 1e-3);
        assert_eq!(l.gpu_memory_utilization, Some(0.92));
        assert!((gib(l.kv_cache_bytes) - 15.72).abs() < 1e-3);

        // The ranks differ (4.30, 4.38): rank 0's is the one the KV line
        // beside it was sized with, whichever rank prints first.
        let l = parse_vllm_log(&fixture(
            "vllm-pr37296__tp2-0.18-opt-in-cudagraph-estimate-ranks-differ.log",
        ));
        assert!((gib(l.cudagraph_estimate_bytes) - 4.38).abs() < 1e-3);
        assert_eq!(l.cudagraph_estimate_subtracted, Some(true));
        assert_eq!(l.gpu_memory_utilization, Some(0.9));

        // No such line: older logs say nothing, and a release before 0.20
        // did not take an estimate off unless asked.
        let l = parse_vllm_log(&fixture(
            "dennislee22-vllm-benchmarking__vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log",
        ));
        assert_eq!(l.version.as_deref(), Some("0.10.1.1"));
        assert_eq!(
            (l.cudagraph_estimate_bytes, l.cudagraph_estimate_subtracted),
            (None, None)
        );
        assert!(!subtracts(l.version.as_deref(), None));
    }

    /// The spellings vLLM's sources print (format strings of
    /// `vllm/v1/worker/gpu_worker.py` in the 0.18.0 and 0.21.0 sdists,
    /// `vllm/entrypoints/utils.py` `log_version_and_model` and
    /// `vllm/v1/engine/core.py` of 0.21.0), filled in.
    #[test]
    fn version_and_disabled_estimate_spellings() {
        use ai_hwaccel::plan::runtime::{
            parse_vllm_version, vllm_default_memory_utilization, vllm_subtracts_cudagraph_estimate,
        };
        let l = parse_vllm_log(
            "(APIServer pid=1) INFO 05-14 00:01:02 [utils.py:299] vLLM server version 0.21.0, serving model Qwen/Qwen3-8B\n\
             (Worker pid=9) WARNING 05-14 00:03:00 [gpu_worker.py:490] CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, CUDA graph memory is not accounted for during KV cache allocation, which may require lowering --gpu-memory-utilization to avoid OOM. Consider re-enabling it (the default as of v0.21.0) and increasing --gpu-memory-utilization from 0.9200 to 0.9421.\n\
             (Worker pid=9) INFO 05-14 00:03:00 [gpu_worker.py:460] Available KV cache memory: 6.90 GiB\n",
        );
        assert_eq!(l.version.as_deref(), Some("0.21.0"));
        assert_eq!(l.cudagraph_estimate_subtracted, Some(false));
        assert_eq!(l.gpu_memory_utilization, Some(0.92));
        assert!(!vllm_subtracts_cudagraph_estimate(
            l.version.as_deref(),
            l.cudagraph_estimate_subtracted
        ));
        let l = parse_vllm_log(
            "INFO 03-01 10:00:00 [gpu_worker.py:490] In v0.19, CUDA graph memory profiling will be enabled by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for CUDA graph memory during KV cache allocation. To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9120 to maintain the same effective KV cache size.\n\
             (EngineCore pid=5) INFO 03-01 09:59:00 [core.py:110] Initializing a V1 LLM engine (v0.18.0) with config: model='m'\n",
        );
        assert_eq!(l.version.as_deref(), Some("0.18.0"));
        assert_eq!(l.cudagraph_estimate_subtracted, Some(false));
        assert_eq!(l.gpu_memory_utilization, Some(0.9));
        // The 2026 logo line (colour codes removed as the reader does).
        let l = parse_vllm_log(
            " \x1b[93m▄▄\x1b[0m \x1b[94m▄█\x1b[0m \x1b[97;1m█     █     █ ▀▄▀ █\x1b[0m  version \x1b[97;1m0.33.0\x1b[0m\n",
        );
        assert_eq!(l.version.as_deref(), Some("0.33.0"));

        assert_eq!(parse_vllm_version("0.8.5.post1"), Some((0, 8, 5)));
        assert_eq!(
            parse_vllm_version("0.20.2rc1.dev9+g01d4d1ad3"),
            Some((0, 20, 2))
        );
        assert_eq!(parse_vllm_version("dev"), None);
        assert_eq!(vllm_default_memory_utilization("0.19.1"), Some(0.9));
        assert_eq!(vllm_default_memory_utilization("0.20.0"), Some(0.92));
        assert_eq!(vllm_default_memory_utilization("1.0"), Some(0.92));
        assert!(vllm_subtracts_cudagraph_estimate(Some("0.20.0"), None));
        assert!(!vllm_subtracts_cudagraph_estimate(Some("0.19.1"), None));
        assert!(vllm_subtracts_cudagraph_estimate(
            Some("0.18.0"),
            Some(true)
        ));
        assert!(!vllm_subtracts_cudagraph_estimate(None, None));
    }
}

const GIB: f64 = 1_073_741_824.0;

fn gib(b: Option<u64>) -> f64 {
    b.unwrap() as f64 / GIB
}

#[test]
fn sglang_log_of_early_2025_without_token_count_on_the_kv_line() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    let l = parse_sglang_log(&fixture(
        "sglang-docs-send-request-2025-01__h100-llama3.1-8b.log",
    ));
    assert_eq!(l.mem_fraction_static, Some(0.88));
    assert_eq!(l.tp_size, Some(1));
    assert_eq!(
        l.model_path.as_deref(),
        Some("meta-llama/Meta-Llama-3.1-8B-Instruct")
    );
    assert_eq!(l.kv_cache_dtype.as_deref(), Some("auto"));
    assert!((gib(l.avail_before_weights_bytes) - 78.81).abs() < 1e-9);
    assert!((gib(l.avail_after_weights_bytes) - 63.72).abs() < 1e-9);
    // No `mem usage=` in this release: the drop across the load.
    assert!((gib(l.weights_bytes) - (78.81 - 63.72)).abs() < 1e-6);
    assert!((gib(l.kv_cache_bytes) - 2.0 * 27.13).abs() < 1e-9);
    assert_eq!(
        l.kv_cache_tokens,
        Some(444_500),
        "from max_total_num_tokens"
    );
    assert_eq!(l.context_len, Some(131_072));
    assert_eq!(l.max_running_requests, Some(2049));
    // Llama-3.1-8B: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes = 131,072.
    let per_token = l.kv_bytes_per_token().unwrap();
    assert!((per_token / 131_072.0 - 1.0).abs() < 1e-3, "{per_token}");
}

#[test]
fn sglang_logs_of_2025_and_2026_with_token_counts_mamba_and_sliding_pools() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    let q = parse_sglang_log(&fixture("sglang-xinference-issue3481__qwen3-14b.log"));
    assert!((gib(q.weights_bytes) - 27.57).abs() < 1e-9, "mem usage=");
    assert_eq!(q.kv_cache_tokens, Some(91_749));
    assert!((gib(q.k_bytes) - 7.0).abs() < 1e-9 && (gib(q.v_bytes) - 7.0).abs() < 1e-9);
    // Qwen3-14B: 40 layers x 8 KV heads x 128 x 2 x 2 bytes = 163,840.
    let per_token = q.kv_bytes_per_token().unwrap();
    assert!((per_token / 163_840.0 - 1.0).abs() < 1e-3, "{per_token}");
    assert_eq!(
        q.mem_fraction_static, None,
        "no server arguments in the excerpt"
    );

    let h = parse_sglang_log(&fixture(
        "sglang-ktransformers-issue1870__qwen3.5-moe-tp2-hybrid.log",
    ));
    assert!(
        (gib(h.weights_bytes) - 3.76).abs() < 1e-9,
        "elapsed= spelling"
    );
    assert_eq!(h.kv_cache_dtype.as_deref(), Some("bfloat16"));
    assert!((gib(h.mamba_cache_bytes) - (0.13 + 7.29)).abs() < 1e-9);
    assert_eq!(h.kv_cache_tokens, Some(580_364));
    assert!((gib(h.kv_cache_bytes) - 8.30).abs() < 1e-9);
    assert_eq!(
        (h.context_len, h.max_running_requests),
        (Some(8192), Some(1))
    );
    assert_eq!(h.tp_size, Some(2), "ranks TP0 and TP1 in the tags");
    assert_eq!(q.tp_size, None, "no rank tags, no server arguments");

    let s = parse_sglang_log(&fixture("sglang-pr18039__mimo-v2-flash-swa-tp4.log"));
    assert_eq!(s.sliding_window_tokens, Some((375_360, 300_288)));
    assert_eq!(s.tp_size, Some(4));
    assert_eq!(s.kv_cache_tokens, Some(300_288));
    assert!((gib(s.k_bytes) - 8.38).abs() < 1e-9 && (gib(s.v_bytes) - 5.59).abs() < 1e-9);
}

/// SGLang 0.4.3 on 4 × L4 (QwQ-32B): the weights' dtype of `Load weight
/// end` (`dtype=auto` in the server arguments says nothing).
#[test]
fn sglang_log_names_the_weights_dtype() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    let l = parse_sglang_log(&fixture(
        "llms-in-clouds-sglang-doc__4xl4-qwq-32b-tp4-sglang-0.4.3.log",
    ));
    assert_eq!(l.dtype.as_deref(), Some("torch.bfloat16"));
    assert_eq!(l.quantization.as_deref(), Some("None"));
    assert_eq!(l.tp_size, Some(4));
    assert!((gib(l.weights_bytes) - 15.54).abs() < 1e-3);
    assert_eq!(l.mem_fraction_static, Some(0.85));
}

/// `runtime::SGLANG_INIT_BYTES` is the mean of what the two real SGLang
/// start-up logs that print the free memory before their weights load
/// lost against the total CUDA reports for their GPU (H100 SXM, L4).
#[test]
fn sglang_init_bytes_is_what_the_logs_lost_before_loading() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    use ai_hwaccel::plan::runtime::{SGLANG_INIT_BYTES, cuda_visible_bytes};
    let lost: Vec<f64> = [
        (
            "sglang-docs-send-request-2025-01__h100-llama3.1-8b.log",
            "h100-sxm",
        ),
        (
            "llms-in-clouds-sglang-doc__4xl4-qwq-32b-tp4-sglang-0.4.3.log",
            "l4",
        ),
    ]
    .iter()
    .map(|(f, gpu)| {
        let before = parse_sglang_log(&fixture(f))
            .avail_before_weights_bytes
            .unwrap_or_else(|| panic!("{f}: no free memory before the weights"));
        let visible = cuda_visible_bytes(Some(gpu), u64::MAX);
        assert!(visible > before && visible - before < 1 << 30, "{f}");
        (visible - before) as f64
    })
    .collect();
    let mean = lost.iter().sum::<f64>() / lost.len() as f64;
    assert!(
        (mean - SGLANG_INIT_BYTES as f64).abs() < 4096.0,
        "mean {mean} vs {SGLANG_INIT_BYTES}"
    );
}

#[test]
fn sglang_parser_ignores_other_runtimes_logs_and_garbage() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    for f in [
        "vllm-issue10517__rtx3090-llama3.1-8b-20k.log",
        "llama.cpp-pr6122__2x-cuda-old-format.log",
    ] {
        assert!(parse_sglang_log(&fixture(f)).is_empty(), "{f}");
    }
    let bad = "[x TP0] KV Cache is allocated. #tokens: lots, K size: -1 GB, V size: NaN GB\n\
               [x TP0] Load weight end. type=X, avail mem=1e400 GB, mem usage=?? GB.\n";
    let l = parse_sglang_log(bad);
    assert_eq!(
        (l.kv_cache_tokens, l.kv_cache_bytes, l.weights_bytes),
        (None, None, None)
    );
}

#[test]
fn llama_bench_in_all_four_output_formats_reads_the_same_rows() {
    use ai_hwaccel::plan::runtime::bench::parse_llama_bench;
    let md = parse_llama_bench(&fixture("llama-bench-local__cpu-test-model.md"));
    let csv = parse_llama_bench(&fixture("llama-bench-local__cpu-test-model.csv"));
    let json = parse_llama_bench(&fixture("llama-bench-local__cpu-test-model.json"));
    let jsonl = parse_llama_bench(&fixture("llama-bench-local__cpu-test-model.jsonl"));
    assert_eq!(md.len(), 2);
    assert_eq!(
        md.iter().map(|r| r.test_name()).collect::<Vec<_>>(),
        ["pp64", "tg16"]
    );
    assert_eq!((md[0].tokens_per_s, md[0].stddev), (5956.17, Some(1446.60)));
    assert_eq!(md[0].model, "llama ?B F16");
    assert_eq!(md[0].backend.as_deref(), Some("CPU"));
    assert_eq!(md[0].params, Some(3_670_000), "3.67 M as printed");
    // The machine formats carry exact sizes and the full-precision mean.
    for rows in [&csv, &json, &jsonl] {
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].size_bytes, Some(7_349_248));
        assert_eq!(rows[0].params, Some(3_672_320));
        assert_eq!((rows[0].n_prompt, rows[0].n_gen), (64, 0));
        assert_eq!((rows[1].n_prompt, rows[1].n_gen), (0, 16));
        assert_eq!(rows[0].n_gpu_layers, Some(-1));
        // `-fa auto` (-1, llama-bench's default there), build number 0 (a
        // build outside llama.cpp's tree: unknown), run on 2026-11-24.
        assert_eq!(rows[0].flash_attn, Some(true));
        assert_eq!(rows[0].build_number, None);
        assert_eq!(
            rows[0].run_month,
            ai_hwaccel::plan::speed::BuildMonth::parse("2026-11")
        );
    }
    // `build: unknown (0)` under the table dates nothing.
    assert_eq!(md[0].build_number, None);
    // Each format is its own run: the same tests, their own speeds.
    assert_eq!(json[0].tokens_per_s, 1174.951621);
    assert_eq!(jsonl[0].tokens_per_s, 1599.095461);
    assert_eq!(csv[0].tokens_per_s, 1379.199912);
    assert_eq!(csv[1].stddev, Some(261.394557));
}

#[test]
fn llama_bench_tables_from_public_threads() {
    use ai_hwaccel::plan::Quant;
    use ai_hwaccel::plan::runtime::bench::{parse_llama_bench, quant_of_model};
    // 2024: `pp 512` / `tg 128` and an extra `nkvo` column.
    let old = parse_llama_bench(&fixture(
        "llama-bench-pr4812__rtx3090ti-2024-old-test-names.md",
    ));
    assert_eq!(old.len(), 4);
    assert_eq!((old[0].n_prompt, old[1].n_gen), (512, 128));
    assert_eq!((old[1].tokens_per_s, old[1].stddev), (127.43, Some(0.18)));
    assert_eq!(
        old[0].size_bytes,
        Some((3.56f64 * 1_073_741_824.0).round() as u64)
    );
    assert_eq!(old[0].n_gpu_layers, Some(99));
    assert_eq!(quant_of_model(&old[0].model), Some(Quant::Q4_0));
    // The build line under the table dates every row; no `fa` column.
    assert!(old.iter().all(|r| r.build_number == Some(1786)));
    assert!(old.iter().all(|r| r.flash_attn.is_none()));
    // 2025: combined pp+tg tests, MiB sizes, K-quant names.
    let new = parse_llama_bench(&fixture(
        "llama-bench-geerlingguy-ai-benchmarks-issue43__rtx4090-vulkan.md",
    ));
    let names: Vec<String> = new.iter().map(|r| r.test_name()).collect();
    assert_eq!(names, ["pp512", "pp4096", "tg128", "pp4096+tg128"]);
    assert_eq!(new[2].tokens_per_s, 762.37);
    assert_eq!(new[0].params, Some(1_100_000_000));
    assert_eq!(quant_of_model(&new[0].model), Some(Quant::Q4K));
    assert_eq!(new[0].backend.as_deref(), Some("Vulkan"));
    // This paste prints the build line above the table.
    assert!(new.iter().all(|r| r.build_number == Some(7340)));
    // A table copied from GitHub's rendered view into an issue: no outer
    // pipes, `-- | --` under the header (llama.cpp issue 5480, M2 Air).
    let pasted = parse_llama_bench(&fixture(
        "llamacpp-issue5480__m2-air-metal-old-test-names-pasted-table.md",
    ));
    assert_eq!(pasted.len(), 6);
    assert_eq!((pasted[0].n_prompt, pasted[0].tokens_per_s), (128, 144.47));
    assert_eq!((pasted[5].n_gen, pasted[5].stddev), (512, Some(1.62)));
    assert_eq!(pasted[0].backend.as_deref(), Some("Metal"));
    // Other runtimes' logs hold no benchmark rows.
    for f in [
        "vllm-issue10517__rtx3090-llama3.1-8b-20k.log",
        "llama.cpp-pr6122__2x-cuda-old-format.log",
    ] {
        assert!(parse_llama_bench(&fixture(f)).is_empty(), "{f}");
    }
}

#[test]
fn tensorrt_llm_logs_of_2024_and_2025() {
    use ai_hwaccel::plan::runtime::log::parse_trtllm_log;
    let old = parse_trtllm_log(&fixture("trtllm-issue1400__a100-2024-bytes-and-tokens.log"));
    assert_eq!(old.kv_cache_bytes, Some(69_524_783_104));
    assert_eq!(old.kv_cache_tokens, Some(132_608));
    // 524,288 bytes a token: a Llama-2-7B-shaped fp16 cache (32 x 32 x 128 x 2 x 2).
    assert_eq!(old.kv_bytes_per_token(), Some(524_288.0));
    let new = parse_trtllm_log(&fixture(
        "trtllm-triton-tutorials-pr150__2025-allocated-gib.log",
    ));
    assert_eq!(
        new.kv_cache_bytes,
        Some((78.30 * 1_073_741_824.0f64).round() as u64)
    );
    assert_eq!(
        new.kv_cache_tokens,
        Some(3_731_744),
        "the (N) of the Allocated line"
    );
    assert_eq!(
        (new.tokens_per_block, new.primary_blocks),
        (Some(32), Some(116_617))
    );
    assert_eq!(116_617 * 32, 3_731_744, "blocks x tokens per block agree");
    // One window line: one pool, not a variable-window cache.
    assert_eq!(new.kv_windows.len(), 1);
    assert_eq!(
        (
            new.kv_windows[0].window_tokens,
            new.kv_windows[0].blocks_per_sequence,
            new.kv_windows[0].primary_blocks
        ),
        (2051, 65, 116_617)
    );
    assert!(!new.variable_windows());
    let tp = parse_trtllm_log(&fixture("trtllm-backend-issue396__tp4-engine-size.log"));
    assert_eq!(tp.engine_bytes, Some(3404 * 1_048_576));
    assert_eq!(tp.world_size, Some(4));
    assert!(tp.kv_cache_bytes.is_none());
    // Other runtimes' logs are not TensorRT-LLM's.
    for f in [
        "vllm-issue10517__rtx3090-llama3.1-8b-20k.log",
        "sglang-docs-send-request-2025-01__h100-llama3.1-8b.log",
    ] {
        assert!(parse_trtllm_log(&fixture(f)).is_empty(), "{f}");
    }
}

/// A real layer split over two llama.cpp RPC devices (this VM's run):
/// llama.cpp prints its buffers sorted by buffer name, here the second
/// device's first, while its `using device` lines give the device order.
#[test]
fn llamacpp_log_lists_its_devices_in_order() {
    use ai_hwaccel::plan::runtime::log::parse_llamacpp_log;
    let l = parse_llamacpp_log(&fixture(
        "llama-server-local__2x-rpc-layer-split-reversed-buffers.log",
    ));
    assert_eq!(
        l.devices,
        [
            ("RPC0".to_string(), "127.0.0.1:50888".to_string()),
            ("RPC1".to_string(), "127.0.0.1:50313".to_string()),
        ]
    );
    let names: Vec<&str> = l
        .model_buffers
        .iter()
        .map(|b| b.buffer.as_str())
        .filter(|b| b.starts_with("RPC"))
        .collect();
    assert_eq!(names, ["RPC0[127.0.0.1:50313]", "RPC0[127.0.0.1:50888]"]);
    // The second device holds the output layer: its weights are larger.
    assert_eq!(
        l.model_buffers
            .iter()
            .find(|b| b.buffer == "RPC0[127.0.0.1:50313]")
            .map(|b| b.bytes),
        Some((6.51f64 * 1_048_576.0).round() as u64)
    );
    assert_eq!(l.flash_attn.as_deref(), Some("enabled"));
}

/// SGLang 0.5.20+ prints its server arguments as a dict of the resolved
/// values (`server_args={'model_path': …}`, `engine.py`); a real 2026 log
/// of three DGX Sparks (GB10) at TP 3, with a nested `model_loader`-style
/// value, a `cuda_graph_config` dict and a second (draft) model load.
#[test]
fn sglang_log_of_late_2026_with_dict_server_args() {
    use ai_hwaccel::plan::runtime::log::parse_sglang_log;
    let l = parse_sglang_log(&fixture(
        "sglang-dgx-sparks-dsv41__3x-gb10-tp3-dict-args.log",
    ));
    assert_eq!(l.mem_fraction_static, Some(0.95));
    assert_eq!(l.tp_size, Some(3));
    assert_eq!(l.model_path.as_deref(), Some("/models/DeepSeek-V4.1-Flash"));
    assert_eq!(l.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
    assert_eq!(l.quantization.as_deref(), Some("None"));
    // The target model's load, not the draft's that follows.
    assert!((gib(l.avail_before_weights_bytes) - 111.47).abs() < 1e-9);
    assert!((gib(l.avail_after_weights_bytes) - 17.47).abs() < 1e-9);
    assert!((gib(l.weights_bytes) - 94.00).abs() < 1e-9);
    // DeepSeek-V4's own pool prints no `KV Cache is allocated` line: the
    // tokens come from the scheduler's line.
    assert_eq!(l.kv_cache_bytes, None);
    assert_eq!(l.kv_cache_tokens, Some(2_999_808));
    assert_eq!(l.context_len, Some(1_048_576));
    assert_eq!(l.max_running_requests, Some(4));
}

/// A llama-server of 2026 at its default verbosity (3) prints none of the
/// loader's or the context's lines (llama.cpp PR 23021): the log says so
/// and gives the slots and their context, nothing else.
#[test]
fn llama_server_at_default_verbosity_prints_slots_only() {
    use ai_hwaccel::plan::runtime::log::parse_llamacpp_log;
    let l = parse_llamacpp_log(&fixture(
        "llama-server-local__default-verbosity-2-slots.log",
    ));
    assert_eq!(l.verbosity, Some(3));
    assert_eq!(l.n_seq_max, Some(2));
    assert_eq!(l.n_ctx_slot, Some(512));
    assert!(l.model_buffers.is_empty() && l.kv_buffers.is_empty());
    assert_eq!(l.kv_total_bytes, None);
    assert!(!l.is_empty(), "still a llama.cpp log");
    // `common_params_print_info: verbosity = 3` is not a model parameter.
    assert!(l.hparams.is_empty(), "{:?}", l.hparams);
    // At -lv 4 the same build prints everything (the RPC run of the tests).
    let v4 = parse_llamacpp_log(&fixture(
        "llama-server-local__2x-rpc-layer-split-reversed-buffers.log",
    ));
    assert_eq!(v4.verbosity, Some(4));
    assert_eq!(v4.n_ctx_slot, Some(2048));
    assert!(!v4.model_buffers.is_empty());
    assert!(!v4.hparams.contains_key("verbosity"));
}

/// A real llama-server run of a sliding-window model (gemma2: two KV
/// caches): the logged KV cache is both caches' `size =` lines together,
/// the types and context the full-attention cache's, and flash attention
/// as `resolve_fused_ops` resolved it.
#[test]
fn llama_server_log_of_a_sliding_window_model() {
    use ai_hwaccel::plan::runtime::log::{LlamaCppLog, parse_llamacpp_log};
    let l = parse_llamacpp_log(&fixture("llama-server-local__gemma2-iswa-window256.log"));
    // (2048 + 768) cells × 2 layers × K and V × 2 heads × 64 × 2 bytes.
    assert_eq!(l.kv_total_bytes, Some((2048 + 768) * 2 * 2 * 2 * 64 * 2));
    assert_eq!(LlamaCppLog::total(&l.kv_buffers), l.kv_total_bytes);
    assert_eq!(l.n_ctx, Some(2048));
    assert_eq!(l.type_k.as_deref(), Some("f16"));
    assert_eq!(l.flash_attn.as_deref(), Some("enabled"));
    assert_eq!(l.verbosity, Some(4));
    assert_eq!(l.hparams.get("arch").map(String::as_str), Some("gemma2"));
}

/// A real memory breakdown table as a benchmark repository saved it (the
/// last lines of a llama-server log of early 2026: four 20 GB RTX 3080s and
/// the host, GLM-4.6 UD-TQ1_0 fitted with `--fit on`): every device's
/// figures, the host's, and the table counted as measured (each device's
/// free memory and llama.cpp's share fit within its total).
#[test]
fn memory_breakdown_table_of_four_gpus() {
    let l = parse_llamacpp_log(&fixture(
        "llama-server-benchmarks-glm46__4x-rtx3080-20gb-exit-memory-breakdown.log",
    ));
    assert!(!l.is_empty(), "the table alone is a llama.cpp log");
    let t = l.memory_breakdown.expect("the table");
    assert!(!t.projected);
    let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["CUDA0", "CUDA1", "CUDA2", "CUDA3", "Host"]);
    assert!(t.rows[..4].iter().all(|r| r.kind == "device"
        && r.description.as_deref() == Some("RTX 3080")
        && r.total_mib == Some(20181)));
    let c3 = &t.rows[3];
    assert_eq!(
        (
            c3.free_mib,
            c3.self_mib,
            c3.model_mib,
            c3.context_mib,
            c3.compute_mib,
            c3.unaccounted_mib
        ),
        (Some(1569), 18359, 15331, 2376, 652, Some(252))
    );
    let host = &t.rows[4];
    assert_eq!(host.kind, "host");
    assert_eq!(
        (
            host.self_mib,
            host.model_mib,
            host.context_mib,
            host.compute_mib
        ),
        (78362, 78278, 0, 84)
    );
    let model: u64 = t.rows.iter().map(|r| r.model_mib).sum();
    assert_eq!(model, 15686 + 16603 + 16608 + 15331 + 78278);
}

/// A variable-window (VSWA) TensorRT-LLM cache. No published log of one was
/// found, so the lines are the 2026 `kvCacheManager.cpp` format strings
/// (`BlockManager`: one `Max KV cache blocks per sequence: %d [window
/// size=%d], tokens per block=%d, primary blocks=%d, secondary blocks=%d,
/// max sequence length=%d` per window; `allocatePools`: `[MemUsageChange]
/// Allocated %0.2f GiB for max tokens in paged KV cache (%d).` with the
/// primary blocks summed over the windows), filled with a Gemma-3-like
/// 1024-token window beside full attention, after the PyTorch backend's
/// estimation cache and profiling line and before a draft model's cache.
#[test]
fn tensorrt_llm_variable_window_cache_sums_its_pools() {
    use ai_hwaccel::plan::runtime::log::parse_trtllm_log;
    let log = "\
[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 32 [window size=1024], tokens per block=32, primary blocks=40, secondary blocks=0, max sequence length=8192
[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32, primary blocks=300, secondary blocks=0, max sequence length=8192
[TensorRT-LLM][INFO] Number of tokens per block: 32.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.50 GiB for max tokens in paged KV cache (10880).
[11/20/2026-10:00:00] [TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 60.00 GiB, available KV cache memory when calculating max tokens: 10.00 GiB, fraction is set 0.8999999761581421, kv size is 32768. device total memory 79.19 GiB, , tmp kv_mem 0.50 GiB
[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 32 [window size=1024], tokens per block=32, primary blocks=2048, secondary blocks=0, max sequence length=8192
[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32, primary blocks=6144, secondary blocks=0, max sequence length=8192
[TensorRT-LLM][INFO] Number of tokens per block: 32.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 9.80 GiB for max tokens in paged KV cache (262144).
[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 256 [window size=8192], tokens per block=32, primary blocks=512, secondary blocks=0, max sequence length=8192
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.40 GiB for max tokens in paged KV cache (16384).
";
    let l = parse_trtllm_log(log);
    // The real cache's two pools, not the estimation cache's nor the draft's.
    assert!(l.variable_windows());
    let pools: Vec<_> = l
        .kv_windows
        .iter()
        .map(|w| (w.window_tokens, w.blocks_per_sequence, w.primary_blocks))
        .collect();
    assert_eq!(pools, [(1024, 32, 2048), (8192, 256, 6144)]);
    // Their blocks summed, as the allocation line's token count sums them.
    assert_eq!(l.primary_blocks, Some(8192));
    assert_eq!(l.kv_cache_tokens, Some(262_144));
    assert_eq!(l.primary_blocks.unwrap() * 32, 262_144);
    assert_eq!(
        l.kv_cache_bytes,
        Some((9.80 * 1_073_741_824.0f64).round() as u64)
    );
    assert_eq!(l.logged_kv_bytes_per_token, Some(32_768));
    // Without the allocation line the tokens come from the summed blocks.
    let cut: String = log.lines().take(8).map(|x| format!("{x}\n")).collect();
    let c = parse_trtllm_log(&cut);
    assert_eq!(c.kv_cache_tokens, Some(8192 * 32));
}

/// A multimodal projector (`--mmproj`) loaded beside the model: its CLIP
/// loader's weights and compute buffers are the encoder's, kept apart from
/// the text model's. A real Sep 2025 run (yzma's README: Qwen2.5-VL-3B's
/// mmproj on an RTX 4070 Laptop GPU), then the same lines after a text
/// model's own buffers, and the 2023-24 loader's `MB` spelling (Ollama issue
/// 2706's llava log: `clip_model_load: model size:     595.49 MB`).
#[test]
fn llamacpp_log_keeps_a_projectors_buffers_apart() {
    use ai_hwaccel::plan::runtime::log::parse_llamacpp_log;
    let clip = fixture("yzma-readme__qwen2.5-vl-3b-mmproj-clip-2025-09.log");
    let l = parse_llamacpp_log(&clip);
    assert_eq!(
        l.encoder_model_bytes,
        Some((805.59f64 * 1_048_576.0).round() as u64)
    );
    let enc: Vec<_> = l
        .encoder_compute_buffers
        .iter()
        .map(|b| (b.buffer.as_str(), b.bytes))
        .collect();
    assert_eq!(
        enc,
        [
            ("CUDA0", (3.60f64 * 1_048_576.0).round() as u64),
            ("CPU", (0.16f64 * 1_048_576.0).round() as u64)
        ]
    );
    // None of it is the text model's.
    assert!(l.compute_buffers.is_empty() && l.model_buffers.is_empty());
    // After the text model's buffers, its CUDA0 compute buffer stays its
    // own, however large the projector's.
    let text = "load_tensors:        CUDA0 model buffer size =  3000.00 MiB
sched_reserve:      CUDA0 compute buffer size =   100.00 MiB
alloc_compute_meta:      CUDA0 compute buffer size =   248.10 MiB
reserve_compute_meta:      CUDA0 compute buffer size =   300.00 MiB
";
    let l = parse_llamacpp_log(text);
    assert_eq!(l.compute_buffers.len(), 1);
    assert_eq!(l.compute_buffers[0].bytes, 100 << 20);
    assert_eq!(l.encoder_compute_buffers[0].bytes, 300 << 20);
    let old = parse_llamacpp_log("clip_model_load: model size:     595.49 MB\n");
    assert_eq!(
        old.encoder_model_bytes,
        Some((595.49f64 * 1_048_576.0).round() as u64)
    );
}
