//! Achieved fractions of peak in decode and prefill, fitted on published
//! measurements (issue 16 item 3).
//!
//! The planner's speed model is physical: decode reads the weights and the
//! KV cache once per step (bytes ÷ bandwidth), prefill runs the FLOPs of the
//! forward pass (FLOPs ÷ 16-bit matrix rate). What a runtime achieves of the
//! datasheet bandwidth and matrix rate depends on the device class, the
//! runtime's kernels and the weight format (dequantization), so those two
//! fractions are read from [`FITTED`], a table keyed by device class,
//! runtime and format width.
//!
//! # The model
//!
//! Per token on one device, with `x` the ideal time at the datasheet rate
//! (decode: bytes read ÷ bandwidth; prefill: FLOPs ÷ matrix rate) and `L`
//! the decoder layers it runs:
//!
//! ```text
//! t = x ÷ (efficiency × device factor) + L × layer_overhead + z × score_bytes
//! ```
//!
//! The efficiency is what the kernels achieve of the datasheet rate; the
//! per-layer overhead is the time that does not scale with bytes or FLOPs
//! (kernel launches and synchronisation, norms, RoPE, softmax and other
//! small operations llama.cpp runs per layer). It is why a 7B model on an
//! H100 decodes far below its bandwidth bound while a 70B one gets close.
//!
//! In prefill without fused attention (llama.cpp `-fa off`, llama-bench's
//! default, which every calibration row kept), each layer writes the
//! attention scores of every head over the context to memory and reads them
//! back (the `KQ` product, its scale, mask and softmax, then `KQ·V`:
//! `src/llama-graph.cpp` `build_attn_mha`). `z` is that count per prompt
//! token over bandwidth, `L × heads × mean context ÷ bandwidth`, the mean
//! context of a prompt token being half the prompt; `score_bytes` is fitted
//! ([`SCORE_BYTES`]). It is why prefill falls with the prompt length much
//! faster than its FLOPs grow (RTX 4070 Ti, Llama 3 8B Q4_K_M: 3936 tok/s at
//! pp512, 2020 at pp8192). With fused attention (FlashAttention, the
//! emitted llama.cpp commands' `-fa on`, and vLLM, SGLang and
//! TensorRT-LLM) the scores stay on chip and the term is not applied
//! ([`crate::plan::InferenceOptions::fused_attention`]).
//!
//! The device factor is the device's own: a spec entry with at least four
//! fit rows of its own in a quantity gets the factor on its class's
//! efficiency that best fits those rows ([`FITTED_DEVICES`]); the same
//! chip in another memory configuration takes it too (the 64 GB Ryzen AI
//! Max+ 395 the 128 GB one's: same bandwidth, units and rates), other
//! devices keep their class's efficiency. Chips of one class differ: the
//! M1 Max reaches about 45 % of its datasheet 400 GB/s in llama.cpp decode,
//! the M2 Ultra over 60 % of its 800 GB/s.
//!
//! # Build date
//!
//! llama.cpp's per-token time beyond the bytes has fallen build by build:
//! CUDA builds launch a batch-1 token's kernels as one CUDA graph since
//! spring 2024 (llama.cpp PR 6766, opened in April 2024: 143 to 164 tok/s
//! for llama-2-7b Q4_K_M on an H100 PCIe), and 2025's builds fuse many of
//! the small per-layer operations. On the same RTX 3090, llama 7B Q4_0
//! decoded at 121 tok/s in the Dec 2023 builds and 139.6 tok/s in Aug
//! 2025's (PR 14903's baseline),
//! and the fitted per-layer time of the 2023-2024 datacenter rows (0.15 ms)
//! was more than the whole 3.4 ms token a 2026 build took on an H200. So the
//! per-layer decode time of a build `age` years older than the newest build
//! its vendor's rows measure is `layer_overhead × exp(decay × age)`
//! ([`build_factor`], [`DECODE_BUILD_DECAY`]): every llama.cpp row is dated
//! (`tests/calibration/builds.csv`: the month its source states, or for a
//! PR's baseline the month the PR was opened), and the fit scales each row's
//! per-layer time by its age, so `layer_overhead` is the newest builds'.
//! One decay per vendor group (NVIDIA, AMD, Intel, Apple: each its own
//! backends, kernels and launch path), chosen from a grid by
//! least decode error with everything else refitted; a group whose rows'
//! builds span less than a year, or with fewer than three rows in the year
//! before its newest, gets none (Apple: its rows are of Sep 2023 to May
//! 2024 builds but one M3 Ultra row of Dec 2025). Plans are for the newest build unless
//! [`InferenceOptions::runtime_build`](crate::plan::InferenceOptions::runtime_build)
//! names an older one (`plan --runtime-build`; `check` uses the build a
//! llama-bench output prints); a later month than the data changes nothing
//! (no extrapolation). The other runtimes have no such term.
//!
//! The graphs are not launched everywhere: llama.cpp sets
//! `disable_due_to_gpu_arch` below compute capability 8.0 from their first
//! builds until PR 25749 (opened 2026-07-16) lowered the gate to Volta, and
//! Pascal runs without them still. A plan or calibration row on such a GPU
//! under CUDA takes the per-layer time of the last build before graphs,
//! April 2024 ([`without_cuda_graphs`], [`decode_build`]); the llama.cpp
//! scoreboards' Turing decode rows went from a median 23 % over to 6 %.
//!
//! Prefill has a step instead of a decay: from July 2024
//! ([`LLAMA_CUDA_MMQ_INT8`], PR 8075) llama.cpp's CUDA backend multiplies
//! quantized prompts on int8 tensor cores (MMQ) rather than dequantizing
//! them for FP16 cuBLAS, and the same RTX 4090 ran llama 7B Q4_0 pp512 at
//! 5531 tok/s in December 2023 builds and 11992 in 2025's. The fitted
//! prefill fractions are those of int8 MMQ on Ampere and later; a quantized
//! prompt of an older build, or on a GPU below compute capability 8.0 (V100
//! stays on cuBLAS; Turing's MMQ gained nothing), takes the fitted factor
//! [`PREFILL_MMQ_ERA`] on its time ([`without_int8_mmq`]), as does one
//! under Vulkan, whose shaders are not MMQ. The llama.cpp
//! scoreboards of 2025-2026 builds (`tests/calibration/scoreboard.csv`,
//! compared, never fitted) chose it: their prefill median went from 28.8 %
//! to 15.4 %.
//!
//! llama.cpp's Vulkan backend has a step of its own on AMD GPUs with
//! cooperative matrices (RDNA 3, 3.5, 4): PR 18749 tuned its matmul
//! parameters for them in January 2026 (+36 % to +76 % on a Radeon 8060S's
//! prompts), so a quantized prompt of an earlier build takes the fitted
//! factor [`PREFILL_VULKAN_AMD_ERA`] ([`vulkan_amd_untuned`]).
//!
//! On a data-center GPU the int8 MMQ prompt takes another reference: the
//! kernels reach about the same per SM and clock on every NVIDIA GPU from
//! Ampere on, while the datasheet tensor rate per SM of the A100 is twice
//! GA102's and the H100's four times, so such a prompt is planned on the
//! workstation cell at the GPU's SMs × clock × GA102's per-SM rate
//! ([`mmq_reference_ratio`]; on every GeForce and workstation part that is
//! the datasheet reference itself). The scoreboards' A30 went from 82-94 %
//! over to 16-25 % over with it, the L40 from 37-42 % under to within 3 %.
//!
//! Pascal GPUs with DP4A (compute capability 6.1 to 6.x) have no tensor
//! cores and a 16-bit rate of 1/64 of FP32: llama.cpp multiplies their
//! quantized prompts with its DP4A MMQ kernels, so such a prompt is referred
//! to the card's int8 DP4A rate ([`prompt_rate`], [`dp4a_mmq`]) at one
//! fraction per runtime fitted on its own rows ([`PREFILL_DP4A`]: the
//! Tesla P40's), with the pooled cell's per-layer time. So is a prompt of a
//! build with `GGML_CUDA_FORCE_MMQ` whose MMQ kernels had no int8
//! tensor-core path (Volta, or a build before July 2024:
//! [`InferenceOptions::cuda_force_mmq`](crate::plan::InferenceOptions::cuda_force_mmq)),
//! at four times the GPU's FP32 rate; the master columns of June 2024's
//! MMQ PRs were such builds, and the fraction is fitted on them and the
//! Pascal rows together.
//!
//! On AMD's CDNA GPUs llama.cpp's HIP backend ran quantized prompts on the
//! vector ALUs (DP4A MMQ) until February 2025 ([`LLAMA_HIP_CDNA_MATRIX`]),
//! and on the matrix cores after (rocBLAS, then MFMA MMQ); a build before
//! it is planned at AMD's per-lane vector FP32 rate (no packed FP32), an
//! eighth of the matrix FP16 one on CDNA 1 and 2 and a sixteenth on CDNA 3
//! ([`cdna_vector_ratio`]).
//!
//! # Mixture-of-experts prefill
//!
//! A micro-batch of prompt tokens spreads over the routed experts: each
//! expert multiplies only the few tokens routed to it (512 tokens × 4 of
//! 128 experts: 16 each on average, in llama.cpp's `mul_mat_id`), far from
//! the batch a dense GEMM runs at, so the routed experts' FLOPs run at a
//! lower fraction of the matrix rate than the rest. Their prefill time is
//! multiplied by a factor fitted per runtime ([`MOE_PREFILL`]) on the rows of
//! mixture-of-experts models, with each row's routed share of the prefill
//! FLOPs (`plan::inference::prefill_flops_per_token`); a runtime without
//! three such rows gets none. Without it, every MoE prompt row was over its
//! estimate (gpt-oss 20B/120B, Qwen3 30B-A3B: 41 % to 115 %). How far below
//! is the backend's `mul_mat_id` kernels' affair: at one llama.cpp factor
//! every CUDA MoE prompt was 26-82 % over and both ROCm ones 24-32 % under,
//! so a llama.cpp backend with three such fit rows of its own gets its own
//! factor ([`MOE_PREFILL_BACKEND`], fitted after the runtime's with it
//! held; the plan's backend is `InferenceOptions::backend`, else the
//! vendor's own, [`DeviceClass::own_backend`]); the others keep the
//! runtime's.
//!
//! Each llama.cpp micro-batch also reads every expert its tokens route to
//! once (`plan::inference`, `prompt_pass_weight_seconds`: `1 − (1 − k/E)^n`
//! of the experts for `n` tokens, at the decode fraction of the bandwidth,
//! over the micro-batch's tokens; `-ub`, [`InferenceOptions::ubatch`](crate::plan::InferenceOptions::ubatch)):
//! an expert's matrix is read whole for its few tokens, so the fewer tokens
//! an expert gets the more a token pays. With it the fitted factors came
//! closer together across CUDA, Vulkan and ROCm (`docs/accuracy.md`).
//! The serving engines batch several requests' prompts in one pass, whose
//! size a request's plan does not know; they take no such term yet.
//!
//! A served request also waits beyond its prompt's prefill before its
//! first token (scheduling, the first decode step, the stream's first
//! chunk): one constant per runtime, [`REQUEST_SECONDS`], is added to every
//! plan's time to first token ([`request_seconds`]). It is fitted together
//! with the pooled prefill cell on the single-request time-to-first-token
//! rows, whose time per prompt token holds 1/n of it for an n-token prompt
//! (fitted after the cells, it had gone into the per-layer prefill time, a
//! cost per prompt token, and put 4,194-token prompts five times over). A
//! request served with tensor parallelism waits a further
//! [`REQUEST_SECONDS_TP`], fitted last on the tensor-parallel rows (all at
//! TP 8: other degrees are an extrapolation) with everything else fixed.
//! Tensor parallelism also all-reduces every prompt token's activations,
//! twice per layer, at the group's link (`plan::inference`), as in decode.
//!
//! # How the table is made
//!
//! `scripts/fit-speed.py` regenerates [`FITTED`] and `docs/accuracy.md`
//! from `crates/ai-hwaccel/tests/calibration/speed.csv` (published
//! measurements at batch 1, one source URL per row, numbers as printed)
//! and `latency.csv` beside it (published single-request time per output
//! token and time to first token of vLLM and SGLang, which the script reads
//! as 1000 ÷ TPOT decode tokens/s and 1000 × prompt ÷ TTFT prefill
//! tokens/s).
//! For every row the planner is run with both efficiencies at 1 and no
//! overhead (`tests/accuracy.rs`, `ideal_rates_for_fit`), giving `x`. A
//! deterministic fifth of the rows ([`held_out`]: FNV-1a 64 of the CSV line,
//! remainder 0 mod 5) is kept out. For each device class and runtime, the
//! remaining rows give `1/efficiency` per format width and one
//! `layer_overhead` for the class by least squares on the relative error
//! (`Σ ((x·a_w + L·c) ÷ t_measured − 1)²`); an overhead that comes out
//! negative is set to zero and the widths refitted. The fit runs twice:
//! once with every format below 8 bits in one width ([`FormatWidth::Low`]),
//! once with the finer widths ([`FormatWidth::Bits4`], 4 to 8 bits, and
//! [`FormatWidth::Below4`], Q3_K and Q2_K, whose llama.cpp kernels reach
//! about half the bandwidth of the 4-bit ones), each with at least three rows
//! ([`FormatWidth::of`] sorts formats by [`Quant::bits_per_weight`]); both
//! levels' cells are kept. The same fits over every class pooled are the
//! fallback for a class without rows ([`DeviceClass::Any`]); a format takes
//! its class's cell at its finest width; without one, its class's coarser
//! cell scaled by the pooled finest-to-coarser ratio where those cells
//! exist; else the first fitted cell of the pooled finest width, its
//! class's coarser width, the pooled coarser width ([`fitted`]).
//! The pooled prefill fit also gives the bytes per
//! score, one per runtime (a property of its attention kernels; the device
//! enters through its bandwidth), which the class fits then hold fixed.
//! Last, each device with enough rows gets its factor, by least squares on
//! the same relative error with its class's cell fixed. No value is set by
//! hand.
//!
//! # Reference rates
//!
//! - Decode: the spec entry's memory bandwidth.
//! - Prefill: the 16-bit matrix rate the runtime's GEMMs run at. llama.cpp's
//!   CUDA backend multiplies 16-bit (and dequantized) weights with cuBLAS at
//!   `CUBLAS_COMPUTE_16F`, FP16 accumulation (ggml-cuda `ggml_cuda_op_mul_mat_cublas`,
//!   `ggml/src/ggml-cuda/ggml-cuda.cu`, llama.cpp b2000–b4000), which GeForce
//!   parts run at twice their FP32-accumulate rate (NVIDIA Ampere GA102 and
//!   Ada whitepapers; `docs/spec-database.md`, `tflops.fp16_acc32`), so a
//!   GeForce part's reference is `2 × fp16_acc32`. Apple GPUs run fp16 at the
//!   fp32 rate (Philip Turner, metal-benchmarks,
//!   <https://github.com/philipturner/metal-benchmarks>), so an Apple entry
//!   without an fp16 figure uses its fp32 one. llama.cpp's Vulkan backend
//!   runs an Intel GPU before Xe2 on its vector engines (no cooperative
//!   matrices there), and the published Xe2 (Arc B580, B570) Vulkan prompts
//!   run at the vector engines' rate too, so under
//!   `InferenceOptions::backend` Vulkan a discrete Intel part's reference is
//!   their 16-bit rate, twice its fp32 one ([`reference_tflops`]).
//!   Elsewhere it is the dense fp16 (or bf16) rate.
//!
//! Options override all of this: `InferenceOptions::calibrated_speed =
//! false` (CLI: `--decode-efficiency` / `--prefill-efficiency`) applies the
//! given fractions to every device.

use serde::{Deserialize, Serialize};

use super::devices::PlanDevice;
use super::quant::Quant;
use super::runtime::{GgmlBackend, RuntimeKind};
use crate::spec::Dtype;

/// Kinds of device whose runtimes achieve different fractions of peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceClass {
    /// Apple M-series GPUs (Metal).
    Apple,
    /// NVIDIA GeForce cards.
    NvidiaConsumer,
    /// NVIDIA workstation cards (RTX A / Ada / PRO, Quadro).
    NvidiaWorkstation,
    /// NVIDIA data-center GPUs (A100, H100, L40, …).
    NvidiaDatacenter,
    /// NVIDIA systems-on-chip with unified memory (Jetson, GB10).
    NvidiaSoc,
    /// AMD Radeon GPUs (consumer, workstation, integrated).
    Amd,
    /// AMD Instinct data-center GPUs (MI50 … MI355X): matrix units and HBM
    /// an order beyond the Radeons the "amd" rows measure, so they are a
    /// class of their own (as NVIDIA's data-center parts are), pooled
    /// ("any") until rows of their own are fitted.
    AmdDatacenter,
    /// Intel GPUs.
    Intel,
    /// A host CPU running the model itself (llama.cpp's CPU backend):
    /// never pooled with the GPUs. No cells yet: `tests/calibration/cpu.csv`
    /// is compared, not fitted (its runs differ in threads, NUMA layout and
    /// clocks, which the plan does not model), so the options'
    /// efficiencies apply, and efficiency 1 on a measured bandwidth.
    Cpu,
    /// Other accelerators: no fit applies (the corpus has none), the
    /// options' efficiencies do.
    Other,
    /// In [`FITTED`]: the fit pooled over every GPU class, the fallback for
    /// a GPU class without rows of its own.
    Any,
}

impl DeviceClass {
    /// The class of a planned device: `Cpu` for the host CPU, else from its
    /// spec entry (`Other` without one).
    pub fn of(d: &PlanDevice) -> DeviceClass {
        if d.host {
            return DeviceClass::Cpu;
        }
        let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
            return DeviceClass::Other;
        };
        if e.family != crate::model::Family::Gpu {
            return DeviceClass::Other;
        }
        match e.vendor.as_str() {
            "apple" => DeviceClass::Apple,
            "amd" if e.name.contains("Instinct") => DeviceClass::AmdDatacenter,
            "amd" => DeviceClass::Amd,
            "intel" => DeviceClass::Intel,
            "nvidia" if e.unified_memory => DeviceClass::NvidiaSoc,
            "nvidia" if e.name.contains("GeForce") => DeviceClass::NvidiaConsumer,
            "nvidia" if e.name.contains("RTX") || e.name.contains("Quadro") => {
                DeviceClass::NvidiaWorkstation
            }
            "nvidia" => DeviceClass::NvidiaDatacenter,
            _ => DeviceClass::Other,
        }
    }

    /// The ggml backend llama.cpp runs a device of this class with when
    /// none is chosen: its vendor's own (CUDA, HIP, Metal, SYCL;
    /// `InferenceOptions::backend` `None`); `None` for CPUs and other
    /// accelerators.
    pub fn own_backend(self) -> Option<GgmlBackend> {
        match self {
            DeviceClass::NvidiaConsumer
            | DeviceClass::NvidiaWorkstation
            | DeviceClass::NvidiaDatacenter
            | DeviceClass::NvidiaSoc => Some(GgmlBackend::Cuda),
            DeviceClass::Amd | DeviceClass::AmdDatacenter => Some(GgmlBackend::Hip),
            DeviceClass::Apple => Some(GgmlBackend::Metal),
            DeviceClass::Intel => Some(GgmlBackend::Sycl),
            DeviceClass::Cpu | DeviceClass::Other | DeviceClass::Any => None,
        }
    }

    /// Lowercase name as in `docs/accuracy.md`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceClass::Apple => "apple",
            DeviceClass::NvidiaConsumer => "nvidia-consumer",
            DeviceClass::NvidiaWorkstation => "nvidia-workstation",
            DeviceClass::NvidiaDatacenter => "nvidia-datacenter",
            DeviceClass::NvidiaSoc => "nvidia-soc",
            DeviceClass::Amd => "amd",
            DeviceClass::AmdDatacenter => "amd-datacenter",
            DeviceClass::Intel => "intel",
            DeviceClass::Cpu => "cpu",
            DeviceClass::Other => "other",
            DeviceClass::Any => "any",
        }
    }
}

/// Weight format width: what decides dequantization work per byte read.
///
/// Below 8 bits there are two levels: the finer widths ([`FormatWidth::Bits4`],
/// [`FormatWidth::Below4`]) that [`FormatWidth::of`] gives, and the coarser
/// [`FormatWidth::Low`] that covers both, fitted on all their rows and used
/// where a finer width has no cell of its own ([`FormatWidth::coarser`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FormatWidth {
    /// 16 bits or more per weight (F16, BF16, F32).
    Bits16,
    /// 8-bit formats (Q8_0, FP8, INT8).
    Bits8,
    /// Fewer than 8 bits, either finer width below.
    Low,
    /// 4 to fewer than 8 bits (Q6_K, Q5_K, Q4_K, Q4_0, IQ4_XS, GPTQ/AWQ
    /// int4, NF4).
    Bits4,
    /// Fewer than 4 bits (Q3_K, Q2_K), whose llama.cpp kernels unpack more
    /// per byte read.
    Below4,
}

impl FormatWidth {
    /// The finest width class of a weight format, by its bits per weight
    /// ([`Quant::bits_per_weight`], block scales included).
    pub fn of(q: Quant) -> FormatWidth {
        let b = q.bits_per_weight();
        if b >= 16.0 {
            FormatWidth::Bits16
        } else if b >= 8.0 {
            FormatWidth::Bits8
        } else if b >= 4.0 {
            FormatWidth::Bits4
        } else {
            FormatWidth::Below4
        }
    }

    /// The width that covers this one where it has no fitted cell
    /// ([`FormatWidth::Low`] for the widths below 8 bits), `None` for the
    /// coarsest.
    pub fn coarser(self) -> Option<FormatWidth> {
        match self {
            FormatWidth::Bits4 | FormatWidth::Below4 => Some(FormatWidth::Low),
            FormatWidth::Bits16 | FormatWidth::Bits8 | FormatWidth::Low => None,
        }
    }

    /// Name as in `docs/accuracy.md`.
    pub fn as_str(self) -> &'static str {
        match self {
            FormatWidth::Bits16 => "16-bit",
            FormatWidth::Bits8 => "8-bit",
            FormatWidth::Low => "<8-bit",
            FormatWidth::Bits4 => "4-7 bit",
            FormatWidth::Below4 => "<4-bit",
        }
    }
}

/// One fitted cell: achieved fractions for a class, runtime and width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpeedFit {
    /// Device class ([`DeviceClass::Any`]: pooled over every class).
    pub class: DeviceClass,
    /// Runtime the measurements ran.
    pub runtime: RuntimeKind,
    /// Format width.
    pub width: FormatWidth,
    /// Achieved fraction of datasheet bandwidth in decode (`None`: no row).
    pub decode: Option<f64>,
    /// Seconds per decoder layer per decode step beyond the bytes.
    pub decode_layer_s: Option<f64>,
    /// Achieved fraction of the reference matrix rate in prefill.
    pub prefill: Option<f64>,
    /// Seconds per decoder layer per prompt token beyond the FLOPs.
    pub prefill_layer_s: Option<f64>,
    /// Fit rows behind the decode and prefill values.
    pub rows: (u32, u32),
}

/// Where a fitted fraction a plan applies comes from: which cell of
/// [`FITTED`] (see [`fitted`] for the order cells are tried in) and
/// whether the device's own factor ([`FITTED_DEVICES`]) scaled it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FitBasis {
    /// The fraction applied, the device's factor included.
    pub efficiency: f64,
    /// The class whose cell gave it: the device's own, or `any` (pooled
    /// over every GPU class) where its class has no cell for this quantity.
    pub class: DeviceClass,
    /// The width of that cell.
    pub width: FormatWidth,
    /// Fit rows behind that cell.
    pub rows: u32,
    /// The class's coarser cell, scaled by the pooled ratio of the
    /// format's width to the coarser one.
    pub width_scaled: bool,
    /// Fit rows of the device's own factor, where one applied.
    pub device_rows: Option<u32>,
    /// Prefill only: the fitted factor the fraction was divided by for a
    /// quantized NVIDIA prompt that llama.cpp runs without int8 MMQ (a
    /// build before July 2024, a GPU below compute capability 8.0, or a
    /// backend other than CUDA; [`without_int8_mmq`], [`PREFILL_MMQ_ERA`]);
    /// `None` where none applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmq_era_factor: Option<f64>,
    /// Prefill only: the fitted factor the fraction was divided by for a
    /// quantized prompt that llama.cpp's Vulkan backend ran on an AMD GPU
    /// with cooperative matrices (RDNA 3, 3.5, 4) before its matmul
    /// parameters were tuned for them (a build before February 2026;
    /// [`vulkan_amd_untuned`], [`PREFILL_VULKAN_AMD_ERA`]); `None` where
    /// none applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vulkan_amd_era_factor: Option<f64>,
    /// Prefill only: for a quantized prompt llama.cpp runs with int8 MMQ on
    /// an NVIDIA data-center GPU, the ratio of the per-SM reference (the
    /// GPU's SMs × clock at GA102's per-SM tensor rate) to the datasheet's
    /// 16-bit rate; the fraction is the workstation cell's times this ratio
    /// ([`mmq_reference_ratio`]); `None` where it does not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmq_reference_ratio: Option<f64>,
    /// Prefill only: for a quantized prompt llama.cpp's HIP backend ran on
    /// an AMD CDNA GPU's vector ALUs (DP4A MMQ, builds before February
    /// 2025), the ratio of AMD's vector FP32 rate to its matrix FP16 rate
    /// the fraction was multiplied by ([`cdna_vector_ratio`]); `None` where
    /// it does not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_reference_ratio: Option<f64>,
    /// Prefill only: the prompt runs llama.cpp's DP4A MMQ kernels on a GPU
    /// without tensor cores ([`dp4a_mmq`]): the efficiency is the fitted
    /// [`PREFILL_DP4A`] fraction of the int8 DP4A rate ([`prompt_rate`]),
    /// `rows` its fit rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dp4a: bool,
    /// How far the planner's estimates of this quantity fell from the
    /// published measurements of the device's class under this runtime
    /// ([`accuracy`], [`ACCURACY`]); `None` where the calibration corpus
    /// has no such rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
    /// How far the estimates fell from published runs of this very device
    /// under this runtime that the fit does not take, because the device
    /// runs the runtime unlike its class's cell for a reason the planner
    /// has no term for (`latency.csv` rows marked `not fitted`;
    /// [`device_accuracy`], [`DEVICE_ACCURACY`]); `None` for other devices.
    /// Where set, the plan warns that its speed is not confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_accuracy: Option<Accuracy>,
    /// How far the estimates fell from every published run of this very
    /// device (its spec id, or another memory configuration of the same
    /// chip) under this runtime and, for llama.cpp, the plan's ggml backend
    /// (the vendor's own where none is chosen): fit and held-out runs
    /// alike, `held_out_rows` / `held_out_median` over those the fit never
    /// saw ([`device_runs`], [`DEVICE_RUNS`]). It says what the class's
    /// figures ([`Self::accuracy`]) do not: how this GPU itself fared (the
    /// RTX 2080 Ti's Vulkan prompts, for one, ran at half the planned
    /// rate). `None` where the corpus has no run of the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_runs: Option<Accuracy>,
}

/// The planner's error on the published measurements of one device class
/// and runtime in one quantity (decode or prefill tokens/s): |estimate ÷
/// measured − 1| over the rows of `tests/calibration/speed.csv` (for
/// llama.cpp the goal rows of `docs/accuracy.md`: llama-bench runs, not
/// llama.cpp `main`'s first prompts) and, for the serving runtimes,
/// `latency.csv`'s single-request times read as rates (1000 / TPOT, prompt
/// / TTFT); regenerated with the fit by `scripts/fit-speed.py`. The rows
/// the constants were fitted on are in-sample; `held_out_*` are those the
/// fit never saw (a fifth of a fitted runtime's rows; every row of a
/// runtime planned with another's cells, SGLang and TensorRT-LLM), the
/// fairer guide to a device or build the corpus does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Accuracy {
    /// Published runs of the class compared (fit and held-out).
    pub rows: u32,
    /// Their median error (0.05: 5 %).
    pub median: f64,
    /// Their worst error.
    pub worst: f64,
    /// Of those, the runs the fit never saw.
    pub held_out_rows: u32,
    /// The held-out runs' median error; `None` under three such runs.
    pub held_out_median: Option<f64>,
}

/// What the planner applies for one device, runtime and format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Applied {
    /// Achieved fraction of bandwidth in decode.
    pub decode: Option<f64>,
    /// Seconds per layer per decode step.
    pub decode_layer_s: f64,
    /// Achieved fraction of the matrix rate in prefill.
    pub prefill: Option<f64>,
    /// Seconds per layer per prompt token.
    pub prefill_layer_s: f64,
    /// Bytes moved per attention score in prefill when the runtime
    /// materialises the scores (no fused attention); 0 when not fitted.
    pub score_bytes: f64,
    /// Factor on the prefill time of a mixture of experts' routed GEMMs
    /// ([`MOE_PREFILL_BACKEND`] for the backend, else [`MOE_PREFILL`]); 1
    /// when not fitted.
    pub moe_prefill: f64,
    /// The llama.cpp backend whose own fitted factor [`Applied::moe_prefill`]
    /// is ([`MOE_PREFILL_BACKEND`]); `None` where the runtime's applies.
    pub moe_prefill_backend: Option<GgmlBackend>,
    /// Where [`Applied::decode`] comes from (`None`: not fitted).
    pub decode_basis: Option<FitBasis>,
    /// Where [`Applied::prefill`] comes from (`None`: not fitted).
    pub prefill_basis: Option<FitBasis>,
}

impl Applied {
    /// Nothing fitted: the options' efficiencies apply, no overheads.
    pub const NONE: Applied = Applied {
        decode: None,
        decode_layer_s: 0.0,
        prefill: None,
        prefill_layer_s: 0.0,
        score_bytes: 0.0,
        moe_prefill: 1.0,
        moe_prefill_backend: None,
        decode_basis: None,
        prefill_basis: None,
    };

    /// Seconds per prompt token for the attention scores `layers` layers
    /// materialise: `heads` query heads (per tensor-parallel rank) each
    /// scoring `mean_context` earlier tokens, at [`Applied::score_bytes`]
    /// per score through memory of `bandwidth` bytes/s. Zero with fused
    /// attention (FlashAttention keeps the scores on chip), when nothing is
    /// fitted, or without a bandwidth.
    pub fn score_seconds(
        &self,
        fused_attention: bool,
        layers: f64,
        heads: f64,
        mean_context: f64,
        bandwidth: Option<u64>,
    ) -> f64 {
        match bandwidth {
            Some(bw) if !fused_attention && bw > 0 => {
                layers * heads * mean_context * self.score_bytes / bw as f64
            }
            _ => 0.0,
        }
    }
}

/// A device's own factor on its class's efficiencies, fitted on the rows
/// measured on that device (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceFit {
    /// Spec entry id.
    pub spec_id: &'static str,
    /// Runtime the measurements ran.
    pub runtime: RuntimeKind,
    /// Factor on the decode efficiency (`None`: too few rows).
    pub decode: Option<f64>,
    /// Factor on the prefill efficiency (`None`: too few rows).
    pub prefill: Option<f64>,
    /// Fit rows behind the decode and prefill factors.
    pub rows: (u32, u32),
}

// BEGIN FITTED (generated by scripts/fit-speed.py; do not edit by hand)
/// Fitted fractions (see the module documentation for how they are made).
pub const FITTED: &[SpeedFit] = &[
    SpeedFit {
        class: DeviceClass::Apple,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits16,
        decode: Some(0.8428),
        decode_layer_s: Some(1.801e-04),
        prefill: Some(0.7516),
        prefill_layer_s: Some(0.000e+00),
        rows: (21, 12),
    },
    SpeedFit {
        class: DeviceClass::Apple,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.7348),
        decode_layer_s: Some(1.801e-04),
        prefill: Some(0.6044),
        prefill_layer_s: Some(0.000e+00),
        rows: (36, 27),
    },
    SpeedFit {
        class: DeviceClass::Apple,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.7348),
        decode_layer_s: Some(1.801e-04),
        prefill: Some(0.6044),
        prefill_layer_s: Some(0.000e+00),
        rows: (36, 27),
    },
    SpeedFit {
        class: DeviceClass::NvidiaConsumer,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits16,
        decode: Some(0.9244),
        decode_layer_s: Some(5.248e-05),
        prefill: Some(0.6051),
        prefill_layer_s: Some(5.848e-07),
        rows: (16, 11),
    },
    SpeedFit {
        class: DeviceClass::NvidiaConsumer,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.9018),
        decode_layer_s: Some(5.248e-05),
        prefill: Some(0.6691),
        prefill_layer_s: Some(5.848e-07),
        rows: (49, 37),
    },
    SpeedFit {
        class: DeviceClass::NvidiaConsumer,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.8426),
        decode_layer_s: Some(4.180e-05),
        prefill: Some(0.6764),
        prefill_layer_s: Some(5.006e-07),
        rows: (42, 33),
    },
    SpeedFit {
        class: DeviceClass::NvidiaConsumer,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Below4,
        decode: Some(0.5219),
        decode_layer_s: Some(4.180e-05),
        prefill: Some(0.4817),
        prefill_layer_s: Some(5.006e-07),
        rows: (7, 4),
    },
    SpeedFit {
        class: DeviceClass::NvidiaConsumer,
        runtime: RuntimeKind::Vllm,
        width: FormatWidth::Bits16,
        decode: Some(1.035),
        decode_layer_s: Some(9.461e-05),
        prefill: Some(0.8985),
        prefill_layer_s: Some(0.000e+00),
        rows: (7, 7),
    },
    SpeedFit {
        class: DeviceClass::NvidiaWorkstation,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits16,
        decode: Some(0.8984),
        decode_layer_s: Some(4.499e-05),
        prefill: Some(0.5324),
        prefill_layer_s: Some(9.448e-07),
        rows: (27, 15),
    },
    SpeedFit {
        class: DeviceClass::NvidiaWorkstation,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.8854),
        decode_layer_s: Some(4.499e-05),
        prefill: Some(0.5617),
        prefill_layer_s: Some(9.448e-07),
        rows: (41, 26),
    },
    SpeedFit {
        class: DeviceClass::NvidiaWorkstation,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.8854),
        decode_layer_s: Some(4.499e-05),
        prefill: Some(0.5617),
        prefill_layer_s: Some(9.448e-07),
        rows: (41, 26),
    },
    SpeedFit {
        class: DeviceClass::NvidiaWorkstation,
        runtime: RuntimeKind::Vllm,
        width: FormatWidth::Bits16,
        decode: Some(1.013),
        decode_layer_s: Some(1.430e-04),
        prefill: Some(1.122),
        prefill_layer_s: Some(3.468e-06),
        rows: (7, 7),
    },
    SpeedFit {
        class: DeviceClass::NvidiaDatacenter,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits16,
        decode: Some(0.7951),
        decode_layer_s: Some(7.812e-05),
        prefill: Some(0.6421),
        prefill_layer_s: Some(1.735e-06),
        rows: (21, 9),
    },
    SpeedFit {
        class: DeviceClass::NvidiaDatacenter,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.8232),
        decode_layer_s: Some(7.812e-05),
        prefill: Some(0.5932),
        prefill_layer_s: Some(1.735e-06),
        rows: (43, 31),
    },
    SpeedFit {
        class: DeviceClass::NvidiaDatacenter,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.8232),
        decode_layer_s: Some(7.812e-05),
        prefill: Some(0.5932),
        prefill_layer_s: Some(1.735e-06),
        rows: (43, 31),
    },
    SpeedFit {
        class: DeviceClass::NvidiaDatacenter,
        runtime: RuntimeKind::Vllm,
        width: FormatWidth::Bits16,
        decode: Some(0.772),
        decode_layer_s: Some(8.190e-05),
        prefill: Some(0.6321),
        prefill_layer_s: Some(2.656e-07),
        rows: (16, 16),
    },
    SpeedFit {
        class: DeviceClass::Amd,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits8,
        decode: Some(0.9129),
        decode_layer_s: Some(5.196e-05),
        prefill: Some(0.2612),
        prefill_layer_s: Some(1.682e-07),
        rows: (6, 7),
    },
    SpeedFit {
        class: DeviceClass::Amd,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.827),
        decode_layer_s: Some(5.196e-05),
        prefill: Some(0.3189),
        prefill_layer_s: Some(1.682e-07),
        rows: (44, 44),
    },
    SpeedFit {
        class: DeviceClass::Amd,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.8336),
        decode_layer_s: Some(5.254e-05),
        prefill: Some(0.3297),
        prefill_layer_s: Some(4.300e-07),
        rows: (42, 40),
    },
    SpeedFit {
        class: DeviceClass::Amd,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Below4,
        decode: None,
        decode_layer_s: None,
        prefill: Some(0.2419),
        prefill_layer_s: Some(4.300e-07),
        rows: (0, 4),
    },
    SpeedFit {
        class: DeviceClass::AmdDatacenter,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: None,
        decode_layer_s: None,
        prefill: Some(0.8727),
        prefill_layer_s: Some(1.610e-05),
        rows: (0, 8),
    },
    SpeedFit {
        class: DeviceClass::AmdDatacenter,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: None,
        decode_layer_s: None,
        prefill: Some(0.8727),
        prefill_layer_s: Some(1.610e-05),
        rows: (0, 8),
    },
    SpeedFit {
        class: DeviceClass::Intel,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.7836),
        decode_layer_s: Some(4.660e-04),
        prefill: Some(0.2003),
        prefill_layer_s: Some(2.234e-06),
        rows: (7, 4),
    },
    SpeedFit {
        class: DeviceClass::Intel,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.7836),
        decode_layer_s: Some(4.660e-04),
        prefill: Some(0.2003),
        prefill_layer_s: Some(2.234e-06),
        rows: (7, 4),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits16,
        decode: Some(0.8397),
        decode_layer_s: Some(5.209e-05),
        prefill: Some(0.6879),
        prefill_layer_s: Some(1.102e-06),
        rows: (85, 47),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits8,
        decode: Some(0.9253),
        decode_layer_s: Some(5.209e-05),
        prefill: Some(0.4368),
        prefill_layer_s: Some(1.102e-06),
        rows: (8, 8),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Low,
        decode: Some(0.7961),
        decode_layer_s: Some(5.209e-05),
        prefill: Some(0.5622),
        prefill_layer_s: Some(1.102e-06),
        rows: (225, 180),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Bits4,
        decode: Some(0.7958),
        decode_layer_s: Some(5.147e-05),
        prefill: Some(0.5652),
        prefill_layer_s: Some(1.073e-06),
        rows: (216, 172),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::LlamaCpp,
        width: FormatWidth::Below4,
        decode: Some(0.6885),
        decode_layer_s: Some(5.147e-05),
        prefill: Some(0.4252),
        prefill_layer_s: Some(1.073e-06),
        rows: (9, 8),
    },
    SpeedFit {
        class: DeviceClass::Any,
        runtime: RuntimeKind::Vllm,
        width: FormatWidth::Bits16,
        decode: Some(0.872),
        decode_layer_s: Some(9.060e-05),
        prefill: Some(0.7439),
        prefill_layer_s: Some(4.806e-07),
        rows: (30, 30),
    },
];

/// Fitted bytes per attention score of each runtime's unfused attention.
pub const SCORE_BYTES: &[(RuntimeKind, f64)] =
    &[(RuntimeKind::LlamaCpp, 34.3), (RuntimeKind::Vllm, 0.0)];

/// Fitted seconds each request spends beyond its prompt's prefill before
/// its first token (scheduling, the first decode step, detokenization), per
/// runtime.
pub const REQUEST_SECONDS: &[(RuntimeKind, f64)] = &[(RuntimeKind::Vllm, 1.3663e-02)];

/// Fitted further seconds a request served with tensor parallelism waits
/// for its first token, per runtime (fitted on tensor-parallel TTFT rows).
pub const REQUEST_SECONDS_TP: &[(RuntimeKind, f64)] = &[(RuntimeKind::Vllm, 3.7514e-02)];

/// Seconds each further machine adds under a runtime's multi-machine split,
/// per decode step and per prompt token (derived from published pairs of
/// runs on one machine and on several).
pub const RPC_SECONDS: &[(RuntimeKind, f64, f64)] = &[];

/// Fitted fraction of the int8 DP4A rate a quantized prompt reaches on an
/// NVIDIA GPU without tensor cores but with DP4A ([`dp4a_mmq`]), per runtime,
/// with the fit rows behind it.
pub const PREFILL_DP4A: &[(RuntimeKind, f64, u32)] = &[(RuntimeKind::LlamaCpp, 0.299, 11)];

/// Fitted factor on the prefill time of a mixture of experts' routed GEMMs,
/// per runtime.
pub const MOE_PREFILL: &[(RuntimeKind, f64)] = &[(RuntimeKind::LlamaCpp, 2.1)];

/// Fitted factor on the prefill time of a mixture of experts' routed GEMMs,
/// per runtime and llama.cpp backend with enough rows of its own (else
/// [`MOE_PREFILL`]).
pub const MOE_PREFILL_BACKEND: &[(RuntimeKind, GgmlBackend, f64)] = &[
    (RuntimeKind::LlamaCpp, GgmlBackend::Cuda, 2.9),
    (RuntimeKind::LlamaCpp, GgmlBackend::Hip, 1.4),
    (RuntimeKind::LlamaCpp, GgmlBackend::Vulkan, 2.6),
];

/// Fitted fraction of memory bandwidth a decode step reaches reading the
/// KV cache, per runtime and attention kind (fused or not), on GPUs: the
/// attention kernels' own efficiency, which batches of sequences expose
/// (each reads its own cache every step). Fitted on published batched
/// decode runs (`tests/calibration/batched.csv`).
pub const KV_READ: &[(RuntimeKind, bool, f64)] = &[(RuntimeKind::LlamaCpp, true, 0.4294)];

/// Fitted seconds per decoder layer of a tensor-parallel decode step that a
/// runtime runs without CUDA graphs, each kernel and all-reduce launched
/// from the host (vLLM `--enforce-eager`, and every vLLM before PR 1926 of
/// December 2023), in place of its fitted per-layer time; per runtime, with
/// the fit rows behind it (speed.csv rows with the notes item `no CUDA
/// graphs`).
pub const EAGER_TP_LAYER_SECONDS: &[(RuntimeKind, f64, u32)] =
    &[(RuntimeKind::Vllm, 4.6947e-04, 8)];

/// Fitted fraction of memory bandwidth at which a decode step reads and
/// rewrites the linear-attention layers' recurrent state, per runtime, with
/// its fit rows (`inference::linear_state_seconds`).
pub const LINEAR_STATE: &[(RuntimeKind, f64, u32)] = &[(RuntimeKind::LlamaCpp, 0.095, 4)];

/// Fitted build-date term of the per-layer decode time: per runtime and
/// device class, the decay per year and the newest and oldest build months
/// of the class's device group (NVIDIA, AMD, Apple, Intel) in the fit rows.
pub const DECODE_BUILD_DECAY: &[(RuntimeKind, DeviceClass, f64, BuildMonth, BuildMonth)] = &[
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Amd,
        0.55,
        BuildMonth::ym(2026, 8),
        BuildMonth::ym(2024, 1),
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::AmdDatacenter,
        0.55,
        BuildMonth::ym(2026, 8),
        BuildMonth::ym(2024, 1),
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaConsumer,
        0.30,
        BuildMonth::ym(2026, 5),
        BuildMonth::ym(2023, 12),
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaWorkstation,
        0.30,
        BuildMonth::ym(2026, 5),
        BuildMonth::ym(2023, 12),
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaDatacenter,
        0.30,
        BuildMonth::ym(2026, 5),
        BuildMonth::ym(2023, 12),
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaSoc,
        0.30,
        BuildMonth::ym(2026, 5),
        BuildMonth::ym(2023, 12),
    ),
];

/// Fitted factor on the prefill time of a quantized prompt that llama.cpp's
/// CUDA backend ran before MMQ on int8 tensor cores was its default
/// ([`LLAMA_CUDA_MMQ_INT8`]), per runtime.
pub const PREFILL_MMQ_ERA: &[(RuntimeKind, f64)] = &[(RuntimeKind::LlamaCpp, 1.40)];

/// Fitted factor on the prefill time of a quantized prompt that llama.cpp's
/// Vulkan backend ran on an AMD GPU with cooperative matrices before
/// [`LLAMA_VULKAN_AMD_COOPMAT_TUNING`] ([`vulkan_amd_untuned`]), per runtime.
pub const PREFILL_VULKAN_AMD_ERA: &[(RuntimeKind, f64)] = &[(RuntimeKind::LlamaCpp, 1.80)];

/// Fitted factors of the devices with enough rows of their own.
#[allow(clippy::approx_constant)] // fitted values, not constants
pub const FITTED_DEVICES: &[DeviceFit] = &[
    DeviceFit {
        spec_id: "a100-80gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.7641),
        prefill: Some(1.02),
        rows: (11, 8),
    },
    DeviceFit {
        spec_id: "a100-80gb",
        runtime: RuntimeKind::Vllm,
        decode: Some(0.9692),
        prefill: Some(1.154),
        rows: (5, 5),
    },
    DeviceFit {
        spec_id: "a100-80gb-pcie",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.8697),
        prefill: Some(0.9899),
        rows: (15, 10),
    },
    DeviceFit {
        spec_id: "a40",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.059),
        prefill: Some(0.9925),
        rows: (8, 4),
    },
    DeviceFit {
        spec_id: "h100-pcie",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.02),
        prefill: Some(0.7219),
        rows: (17, 9),
    },
    DeviceFit {
        spec_id: "h100-sxm",
        runtime: RuntimeKind::Vllm,
        decode: Some(1.107),
        prefill: Some(1.024),
        rows: (4, 4),
    },
    DeviceFit {
        spec_id: "l40s",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.23),
        prefill: Some(0.8621),
        rows: (7, 5),
    },
    DeviceFit {
        spec_id: "m1-max-24core-32gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.7215),
        prefill: None,
        rows: (4, 0),
    },
    DeviceFit {
        spec_id: "m1-max-64gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.7065),
        prefill: Some(0.8345),
        rows: (11, 11),
    },
    DeviceFit {
        spec_id: "m2-ultra-192gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.013),
        prefill: Some(1.006),
        rows: (21, 14),
    },
    DeviceFit {
        spec_id: "m3-max-64gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.114),
        prefill: Some(1.132),
        rows: (14, 9),
    },
    DeviceFit {
        spec_id: "radeon-pro-w7900",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.8996),
        prefill: Some(1.004),
        rows: (9, 10),
    },
    DeviceFit {
        spec_id: "rtx-3070",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.046),
        prefill: Some(1.036),
        rows: (4, 4),
    },
    DeviceFit {
        spec_id: "rtx-3080",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.014),
        prefill: Some(1.107),
        rows: (4, 4),
    },
    DeviceFit {
        spec_id: "rtx-3090",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.9067),
        prefill: Some(1.101),
        rows: (21, 17),
    },
    DeviceFit {
        spec_id: "rtx-4000-ada",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.9991),
        prefill: Some(1.061),
        rows: (13, 7),
    },
    DeviceFit {
        spec_id: "rtx-4070",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.041),
        prefill: None,
        rows: (4, 0),
    },
    DeviceFit {
        spec_id: "rtx-4080",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.067),
        prefill: Some(1.164),
        rows: (11, 5),
    },
    DeviceFit {
        spec_id: "rtx-4090",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.9892),
        prefill: Some(1.063),
        rows: (13, 9),
    },
    DeviceFit {
        spec_id: "rtx-5000-ada",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.042),
        prefill: Some(0.9717),
        rows: (13, 8),
    },
    DeviceFit {
        spec_id: "rtx-5090",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.34),
        prefill: Some(0.9347),
        rows: (5, 4),
    },
    DeviceFit {
        spec_id: "rtx-6000-ada",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.9804),
        prefill: Some(0.7176),
        rows: (21, 12),
    },
    DeviceFit {
        spec_id: "rtx-a6000",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(0.9764),
        prefill: Some(1.113),
        rows: (18, 10),
    },
    DeviceFit {
        spec_id: "ryzen-ai-max-395-128gb",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.005),
        prefill: Some(0.9293),
        rows: (34, 31),
    },
    DeviceFit {
        spec_id: "tesla-p40",
        runtime: RuntimeKind::LlamaCpp,
        decode: Some(1.056),
        prefill: None,
        rows: (4, 0),
    },
];
// END FITTED

/// The fitted fraction of bandwidth reading the KV cache in decode
/// ([`KV_READ`]) for `runtime`'s attention (fused or not) on a device of
/// `class`; `None` where none is fitted (CPUs, other runtimes): the decode
/// efficiency applies. Unfused attention without a fraction of its own
/// takes the fused one: it reads the same cache and writes its scores
/// besides, so it is no faster (this project's H100 run with flash
/// attention off reached about 0.29, `docs/accuracy.md`).
pub fn kv_read(runtime: RuntimeKind, class: DeviceClass, fused: bool) -> Option<f64> {
    if matches!(class, DeviceClass::Other | DeviceClass::Cpu) {
        return None;
    }
    let runtime = fit_runtime(runtime);
    let find = |fused: bool| {
        KV_READ
            .iter()
            .find(|(r, f, _)| *r == runtime && *f == fused)
            .map(|(_, _, e)| *e)
    };
    find(fused).or_else(|| (!fused).then(|| find(true)).flatten())
}

/// The fitted fraction of memory bandwidth a decode step moves the
/// linear-attention state at ([`LINEAR_STATE`]), for the runtime whose
/// cells the plan takes ([`fit_runtime`]); `None` for CPUs and other
/// accelerators (fitted on GPU rows) and where none is fitted.
pub fn linear_state(runtime: RuntimeKind, class: DeviceClass) -> Option<f64> {
    if matches!(class, DeviceClass::Other | DeviceClass::Cpu) {
        return None;
    }
    let runtime = fit_runtime(runtime);
    LINEAR_STATE
        .iter()
        .find(|(r, ..)| *r == runtime)
        .map(|(_, e, _)| *e)
}

/// The cells tried for a device class and format, first match wins: at the
/// format's finest width the class's cell, then the pooled one
/// ([`DeviceClass::Any`]); then the same at the coarser width
/// ([`FormatWidth::coarser`]). The finest width comes first because what it
/// separates (how much a format's kernels unpack per byte) is the runtime's,
/// not the class's: a class without rows at that width knows nothing of it,
/// the pooled rows do, and the device factor keeps the device's own level.
/// [`DeviceClass::Other`] gets nothing pooled: nothing fitted on GPUs applies
/// to a CPU.
fn cells(class: DeviceClass, width: FormatWidth) -> Vec<(DeviceClass, FormatWidth)> {
    // The pooled cells are the GPUs': a CPU, another accelerator, or the
    // pool itself takes only its own.
    let classes: &[DeviceClass] = if matches!(
        class,
        DeviceClass::Other | DeviceClass::Any | DeviceClass::Cpu
    ) {
        &[class]
    } else {
        &[class, DeviceClass::Any]
    };
    // Last, a width no row of the runtime measures takes the 16-bit cells:
    // the runtime's per-layer time and bandwidth efficiency on 16-bit
    // weights, the nearest evidence (vLLM's rows are all 16-bit; its FP8
    // and FP4 plans, and SGLang's through it, would otherwise pay no
    // per-layer time at all).
    std::iter::once(width)
        .chain(width.coarser())
        .chain((width != FormatWidth::Bits16).then_some(FormatWidth::Bits16))
        .flat_map(|w| classes.iter().map(move |&c| (c, w)))
        .collect()
}

/// The class's coarser cell with its efficiency scaled by the pool's ratio
/// of `width` to the coarser width, for a GPU class without a cell of its
/// own at `width` (see [`fitted`]): `(efficiency, seconds per layer)`, or
/// `None` where any of the three cells lacks the quantity.
fn width_scaled<'a>(
    class: DeviceClass,
    width: FormatWidth,
    cell: &dyn Fn(DeviceClass, FormatWidth) -> Option<&'a SpeedFit>,
    get: fn(&SpeedFit) -> Option<f64>,
    layer: fn(&SpeedFit) -> Option<f64>,
) -> Option<(Option<f64>, f64, &'a SpeedFit)> {
    if matches!(
        class,
        DeviceClass::Other | DeviceClass::Any | DeviceClass::Cpu
    ) || cell(class, width).and_then(get).is_some()
    {
        return None;
    }
    let coarser = width.coarser()?;
    let own = cell(class, coarser)?;
    let e = get(own)?;
    let fine = cell(DeviceClass::Any, width).and_then(get)?;
    let pooled = cell(DeviceClass::Any, coarser).and_then(get)?;
    Some((Some(e * fine / pooled), layer(own).unwrap_or(0.0), own))
}

/// The [`FITTED`] cell of a class, runtime (as fitted, [`fit_runtime`]
/// already applied) and format width, if the fit made one.
fn fitted_cell(
    class: DeviceClass,
    runtime: RuntimeKind,
    width: FormatWidth,
) -> Option<&'static SpeedFit> {
    FITTED
        .iter()
        .find(|f| f.class == class && f.runtime == runtime && f.width == width)
}

/// The cell for a device, runtime and format: the first with a fitted value
/// of the class's cell at the format's finest width, the pooled one there,
/// the class's at the coarser width, the pooled one there, then the same at
/// 16 bits (none pooled for [`DeviceClass::Other`]), among the cells of
/// [`fit_runtime`]. Decode and prefill fall back separately; the overhead
/// comes with its efficiency.
///
/// One case comes before that order: a class without a cell at the finest
/// width but with one at the coarser width, where the pool has both, takes
/// its own coarser cell with the efficiency scaled by the pool's ratio of
/// the finest to the coarser width (`width_scaled`). The class's kernels
/// and the format's unpacking are taken as separate factors: a class's own
/// evidence for the first (the M2 Max's 2023 Metal Q3_K_S decode was 59 %
/// over its estimate on the pooled below-4-bit cell, which the 2025 RTX 5090
/// Q2_K rows dominate; 17 % on Apple's own cell so scaled) and the pool's for
/// the second.
pub fn fitted(class: DeviceClass, runtime: RuntimeKind, q: Quant) -> Applied {
    let runtime = fit_runtime(runtime);
    let width = FormatWidth::of(q);
    let cell = |c: DeviceClass, w: FormatWidth| fitted_cell(c, runtime, w);
    let tried: Vec<&SpeedFit> = cells(class, width)
        .into_iter()
        .filter_map(|(c, w)| cell(c, w))
        .collect();
    let first = |get: fn(&SpeedFit) -> Option<f64>,
                 layer: fn(&SpeedFit) -> Option<f64>,
                 rows: fn(&SpeedFit) -> u32| {
        let basis = |e: Option<f64>, f: &SpeedFit, scaled: bool| {
            e.map(|efficiency| FitBasis {
                efficiency,
                class: f.class,
                width: f.width,
                rows: rows(f),
                width_scaled: scaled,
                device_rows: None,
                mmq_era_factor: None,
                vulkan_amd_era_factor: None,
                mmq_reference_ratio: None,
                vector_reference_ratio: None,
                dp4a: false,
                accuracy: None,
                device_accuracy: None,
                device_runs: None,
            })
        };
        width_scaled(class, width, &cell, get, layer)
            .map(|(e, l, f)| (e, l, basis(e, f, true)))
            .or_else(|| {
                tried
                    .iter()
                    .find(|f| get(f).is_some())
                    .map(|f| (get(f), layer(f).unwrap_or(0.0), basis(get(f), f, false)))
            })
    };
    let dec = first(|f| f.decode, |f| f.decode_layer_s, |f| f.rows.0);
    let pre = first(|f| f.prefill, |f| f.prefill_layer_s, |f| f.rows.1);
    Applied {
        decode_basis: dec.and_then(|(.., b)| b),
        prefill_basis: pre.and_then(|(.., b)| b),
        decode: dec.and_then(|(e, ..)| e),
        decode_layer_s: dec.map_or(0.0, |(_, l, _)| l),
        prefill: pre.and_then(|(e, ..)| e),
        prefill_layer_s: pre.map_or(0.0, |(_, l, _)| l),
        // A property of the runtime's attention kernels, whatever the
        // weight format; fitted on GPUs only.
        score_bytes: if !matches!(class, DeviceClass::Other | DeviceClass::Cpu) {
            per_runtime(SCORE_BYTES, runtime)
        } else {
            0.0
        },
        // Fitted on GPU rows, like the bytes per score.
        moe_prefill: MOE_PREFILL
            .iter()
            .find(|(r, _)| *r == runtime)
            .filter(|_| !matches!(class, DeviceClass::Other | DeviceClass::Cpu))
            .map_or(1.0, |(_, m)| *m),
        moe_prefill_backend: None,
    }
}

/// The fitted factor on a mixture of experts' routed prefill GEMMs for a
/// runtime's backend on a device class ([`MOE_PREFILL_BACKEND`]): the
/// backend given, else the class's own ([`DeviceClass::own_backend`]);
/// `None` where that backend has no factor of its own (the runtime's,
/// [`MOE_PREFILL`], applies) and for CPUs and other accelerators.
pub fn moe_prefill_backend(
    runtime: RuntimeKind,
    class: DeviceClass,
    backend: Option<GgmlBackend>,
) -> Option<(GgmlBackend, f64)> {
    let own = class.own_backend()?;
    let b = backend.unwrap_or(own);
    let runtime = fit_runtime(runtime);
    MOE_PREFILL_BACKEND
        .iter()
        .find(|(r, k, _)| *r == runtime && *k == b)
        .map(|(_, k, m)| (*k, *m))
}

/// Seconds a request waits beyond its prompt's prefill before its first
/// token, fitted per runtime on the single-request TTFT rows
/// ([`REQUEST_SECONDS`]), plus, for a replica of tensor-parallel degree
/// `tp` above 1, the further wait fitted on the tensor-parallel rows
/// ([`REQUEST_SECONDS_TP`]): 0 without a fit or when the options turn the
/// calibrated speeds off.
pub fn request_seconds(opts: &super::InferenceOptions, tp: u32) -> f64 {
    if !opts.calibrated_speed {
        return 0.0;
    }
    let runtime = fit_runtime(opts.runtime);
    per_runtime(REQUEST_SECONDS, runtime)
        + if tp > 1 {
            per_runtime(REQUEST_SECONDS_TP, runtime)
        } else {
            0.0
        }
}

/// Seconds each machine beyond the first adds to a decode step and to a
/// prompt token when a runtime splits a model over machines ([`RPC_SECONDS`]:
/// llama.cpp's RPC backend, whose client sends each remote machine its
/// graph and inputs and reads its outputs back over the network); (0, 0)
/// without published pairs of runs to derive them from.
pub fn rpc_seconds(runtime: RuntimeKind) -> (f64, f64) {
    RPC_SECONDS
        .iter()
        .find(|(r, ..)| *r == runtime)
        .map_or((0.0, 0.0), |&(_, step, token)| (step, token))
}

/// The runtime whose fitted cells a runtime's plans use: its own where it
/// has any; SGLang and TensorRT-LLM, which have none, use vLLM's. All three
/// serve with a paged KV cache, continuous batching and CUDA-graph decode
/// steps, so at batch 1 a step pays the same kinds of per-layer costs
/// (kernel launches, all-reduces) beside its bytes; with the default
/// efficiencies and no per-layer time SGLang's published single-request
/// time per output token was 5 to 28 times the estimate at TP 8
/// (docs/accuracy.md, latency.csv lines: its rows are never fitted, so
/// they measure this choice).
pub fn fit_runtime(runtime: RuntimeKind) -> RuntimeKind {
    if FITTED.iter().any(|f| f.runtime == runtime) {
        return runtime;
    }
    match runtime {
        RuntimeKind::Sglang | RuntimeKind::Trtllm => RuntimeKind::Vllm,
        r => r,
    }
}

/// Whether a decode step's GEMMs take the longer of their weights' reads
/// and their FLOPs (the roofline: the two overlap) rather than the sum of
/// both, for a runtime at `batch` sequences per step. At one sequence the
/// FLOPs are a rounding error beside the weights on a GPU with a matrix
/// rate and the roofline stays; llama.cpp (and a runtime fitted as it, or
/// without fitted cells) keeps it at every batch. vLLM, SGLang and
/// TensorRT-LLM ([`fit_runtime`] `Vllm`) above one sequence take the sum:
/// their steps do not hide the batch's GEMM work under the weight stream.
///
/// Chosen on `tests/calibration/batch.csv` (TensorRT-LLM's and vLLM's
/// published offline throughputs at batches of 1 to 1,024), with the step's
/// GEMM time taken as `max(w, f) + (1 − θ) × min(w, f)` for an overlap θ of
/// 1, 0.75, 0.5, 0.25 and 0 (Nov 29 2026): the median and worst errors of
/// its 31 estimated rows were 15.5 / 186.0 %, 12.7 / 174.3 %, 13.2 /
/// 163.4 %, 13.7 / 153.4 % and 11.9 / 144.1 %, so no overlap is closest.
/// Compared, not chosen on: `serving.csv`'s vLLM rows, whose output
/// throughput went from 28.3 / 149.2 % to 15.1 / 141.0 % and served time
/// per output token from 17.9 / 82.4 % to 15.6 / 91.2 % (the worst, an
/// MI355X's MXFP4 Llama 3.3 70B at 64 clients, from 82 % to 91 % over),
/// and twelve batch rows added after the choice (vLLM PRs 3240 and 4002,
/// Mixtral 8x7B on two A100 and 8x22B on four and eight, batches 2 to 64):
/// median 14 %, worst 55 % (the roofline: 15 % and 59 %), closer on ten of
/// the twelve.
///
/// llama.cpp's own batched steps (`batched.csv`'s fit rows,
/// llama-batched-bench) came out no closer at any θ below 1 (median 12.1 %
/// at 1, 12.3 % to 12.5 % below it, applied above the eight sequences of its
/// mat-vec kernels, `MMVQ_MAX_BATCH_SIZE` in `ggml/src/ggml-cuda/mmvq.cuh`),
/// so it keeps the roofline.
pub fn decode_gemms_overlap(runtime: RuntimeKind, batch: u64) -> bool {
    batch <= 1 || fit_runtime(runtime) != RuntimeKind::Vllm
}

/// A runtime's value in a fitted per-runtime table; 0 when it has none.
fn per_runtime(table: &[(RuntimeKind, f64)], runtime: RuntimeKind) -> f64 {
    table
        .iter()
        .find(|(r, _)| *r == runtime)
        .map_or(0.0, |(_, v)| *v)
}

/// The month a runtime was built (`YYYY-MM`), for the build-date term of
/// the per-layer decode time ([`build_factor`]).
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
#[serde(try_from = "String", into = "String")]
#[schemars(with = "String")]
pub struct BuildMonth(u32);

impl BuildMonth {
    /// Year and month (1-12); months out of range wrap into the year, as
    /// only generated constants call it.
    pub const fn ym(year: u32, month: u32) -> BuildMonth {
        BuildMonth(year * 12 + month.saturating_sub(1))
    }

    /// `YYYY-MM` (year 2000 to 2999, month 01 to 12); `None` otherwise.
    pub fn parse(text: &str) -> Option<BuildMonth> {
        let (y, m) = text.trim().split_once('-')?;
        if y.len() != 4 || m.len() != 2 {
            return None;
        }
        let year: u32 = y.parse().ok()?;
        let month: u32 = m.parse().ok()?;
        ((2000..=2999).contains(&year) && (1..=12).contains(&month))
            .then(|| BuildMonth::ym(year, month))
    }

    /// Months since year 0.
    fn months(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for BuildMonth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.0 / 12, self.0 % 12 + 1)
    }
}

impl TryFrom<String> for BuildMonth {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        BuildMonth::parse(&s).ok_or_else(|| format!("build month {s:?}: expected YYYY-MM"))
    }
}

impl From<BuildMonth> for String {
    fn from(b: BuildMonth) -> String {
        b.to_string()
    }
}

/// The factor on a runtime's fitted per-layer decode time for a device
/// class and a build of `build`'s month: `exp(decay × years before the
/// newest build the runtime's rows measure on the class's device group)`
/// ([`DECODE_BUILD_DECAY`]); a month before the oldest build those rows
/// measure counts as that oldest (no extrapolation either way). 1 for that newest build, for a later one (no extrapolation past the data),
/// without a month (`None`: plan for current builds), and for runtimes and
/// classes without the term.
pub fn build_factor(runtime: RuntimeKind, class: DeviceClass, build: Option<BuildMonth>) -> f64 {
    let runtime = fit_runtime(runtime);
    match (
        build,
        DECODE_BUILD_DECAY
            .iter()
            .find(|(r, c, _, _, _)| *r == runtime && *c == class),
    ) {
        (Some(b), Some((_, _, decay, newest, oldest))) => {
            let b = b.max(*oldest);
            let years = f64::from(newest.months().saturating_sub(b.months())) / 12.0;
            (decay * years).exp()
        }
        _ => 1.0,
    }
}

/// The first llama.cpp build month whose CUDA backend launches a decode
/// step's kernels as one CUDA graph: PR 6766 ("Introduction of CUDA Graphs
/// to LLama.cpp", opened 2024-04-19; its merge month is not read here, so
/// builds from the month after it was opened count as having it; the
/// llama.cpp that llama-cpp-python 0.2.76 vendors has it, compiled in by
/// default: `GGML_CUDA_USE_GRAPHS` in its CMakeLists.txt and Makefile).
pub const LLAMA_CUDA_GRAPHS: BuildMonth = BuildMonth::ym(2024, 5);

/// The first llama.cpp build month whose CUDA backend uses CUDA graphs on
/// Volta and Turing (compute capability 7.x): PR 25749 ("Enable CUDA graphs
/// on Volta+Turing", opened 2026-07-16) moved the gate in
/// `ggml_cuda_graph_set_enabled` from `GGML_CUDA_CC_AMPERE` to
/// `GGML_CUDA_CC_VOLTA`. Its merge month is not read here, so builds from
/// the month after it was opened count as having it. Pascal and older stay
/// without (PR 27721, which would lift the gate for Pascal, was open in
/// August 2026: a GTX 1080's tg64 41.47 tok/s without graphs and 73.85
/// with).
pub const LLAMA_CUDA_GRAPHS_VOLTA: BuildMonth = BuildMonth::ym(2026, 8);

/// Whether llama.cpp's CUDA backend runs a plan's decode steps on a GPU
/// without CUDA graphs, one launch per operation: llama.cpp (or a runtime
/// fitted as it), a GPU (not the host), the CUDA backend (`backend` `None`
/// is the vendor's own: CUDA on NVIDIA), an NVIDIA spec entry, and a
/// compute capability below 8.0 at a build (`None`: the newest) before
/// [`LLAMA_CUDA_GRAPHS_VOLTA`], or below 7.0 at any build. From the
/// first builds with graphs (May 2024) to PR 25749 every llama.cpp
/// vendored in llama-cpp-python (0.2.76 to 0.3.16) sets
/// `disable_due_to_gpu_arch` for `cc < GGML_CUDA_CC_AMPERE`. Such a plan's
/// per-layer decode time is that of the last build before graphs
/// ([`decode_build`]).
pub fn without_cuda_graphs(
    d: &PlanDevice,
    runtime: RuntimeKind,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
) -> bool {
    if fit_runtime(runtime) != RuntimeKind::LlamaCpp
        || d.host
        || backend.is_some_and(|b| b != super::runtime::GgmlBackend::Cuda)
    {
        return false;
    }
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    if e.vendor != "nvidia" {
        return false;
    }
    match nvidia_cc(e) {
        Some(cc) if cc < (7, 0) => true,
        // No build month: the newest the runtime's rows measure on the
        // device's class (what the plan is for, `planned_build`).
        Some(cc) if cc < (8, 0) => build
            .or_else(|| newest_build(runtime, DeviceClass::of(d)))
            .is_none_or(|b| b < LLAMA_CUDA_GRAPHS_VOLTA),
        _ => false,
    }
}

/// The build month whose per-layer decode time a plan takes
/// ([`build_factor`]): `build` (`None`: the newest), except on a GPU that
/// runs without CUDA graphs ([`without_cuda_graphs`]), where it is at most
/// the month before [`LLAMA_CUDA_GRAPHS`]: the fitted per-layer time of
/// later builds is that of graph launches, which such a GPU never makes.
pub fn decode_build(
    d: &PlanDevice,
    runtime: RuntimeKind,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
) -> Option<BuildMonth> {
    if !without_cuda_graphs(d, runtime, backend, build) {
        return build;
    }
    let last = BuildMonth(LLAMA_CUDA_GRAPHS.months() - 1);
    Some(build.map_or(last, |b| b.min(last)))
}

/// The per-layer decode time of a plan whose runtime launches every kernel
/// of a decode step from the host instead of replaying a captured CUDA
/// graph ([`InferenceOptions::eager`](crate::plan::InferenceOptions::eager)),
/// where the planner has a term for it; `None` where the plan keeps its
/// fitted per-layer time:
///
/// - llama.cpp's CUDA backend on an NVIDIA GPU that would otherwise use
///   graphs (`GGML_CUDA_DISABLE_GRAPHS` set: `ggml-cuda/common.cuh` reads
///   only whether the variable exists): the per-layer time of the last
///   build before graphs, as [`without_cuda_graphs`] plans a GPU the
///   backend runs without them;
/// - vLLM and SGLang (`--enforce-eager`; SGLang's decode and prefill graph
///   backends `disabled`) over `tp` > 1 devices: the fitted
///   [`EAGER_TP_LAYER_SECONDS`]. No published single-device eager run is
///   among the calibration rows, so a one-device plan keeps the graphs'
///   time (its plan warns so). TensorRT-LLM's engines have no such switch
///   here.
pub fn eager_decode_layer_s(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    tp: u32,
) -> Option<f64> {
    match fit_runtime(runtime) {
        RuntimeKind::LlamaCpp => {
            let nvidia = d
                .spec_id
                .as_deref()
                .and_then(crate::spec::by_id)
                .is_some_and(|e| e.vendor == "nvidia");
            if d.host
                || !nvidia
                || backend.is_some_and(|b| b != super::runtime::GgmlBackend::Cuda)
                || without_cuda_graphs(d, runtime, backend, build)
            {
                return None;
            }
            let class = DeviceClass::of(d);
            let last = BuildMonth(LLAMA_CUDA_GRAPHS.months() - 1);
            let month = build.map_or(last, |b| b.min(last));
            Some(
                fitted(class, runtime, q).decode_layer_s
                    * build_factor(runtime, class, Some(month)),
            )
        }
        RuntimeKind::Vllm if runtime != RuntimeKind::Trtllm && tp > 1 => EAGER_TP_LAYER_SECONDS
            .iter()
            .find(|(r, _, _)| *r == RuntimeKind::Vllm)
            .map(|(_, s, _)| *s),
        _ => None,
    }
}

/// The first llama.cpp build month whose CUDA backend multiplies a prompt
/// of quantized weights on int8 tensor cores instead of dequantizing it for
/// FP16 cuBLAS: PR 8075 ("CUDA: use MMQ instead of cuBLAS by default",
/// opened 2024-06-23; issue 8350 of 2024-07-07 reports it merged) makes
/// `mul_mat_q` the default "unless there is no int8 tensor core MMQ
/// implementation available but FP16 tensor cores are (V100, RDNA3)", after
/// PRs 7676, 7860 and 7921 gave the legacy and k-quant types int8
/// tensor-core kernels from Turing (compute capability 7.5) on. The
/// i-quants followed in PR 8495 (opened 2024-07-15).
pub const LLAMA_CUDA_MMQ_INT8: BuildMonth = BuildMonth::ym(2024, 7);

/// A llama.cpp-family runtime multiplying weights stored below 16 bits
/// (a weight-only format) on a GPU: where its quantized-prompt kernels
/// ([`without_int8_mmq`], [`mmq_reference_ratio`], [`cdna_vector_ratio`])
/// decide the reference.
fn quantized_llama_cpp_gpu(d: &PlanDevice, runtime: RuntimeKind, q: Quant) -> bool {
    fit_runtime(runtime) == RuntimeKind::LlamaCpp
        && q.weight_only()
        && FormatWidth::of(q) != FormatWidth::Bits16
        && !d.host
}

/// Whether llama.cpp runs a plan's quantized prompt at the rate of its
/// builds before int8 MMQ: llama.cpp, a weight-only format below 16 bits,
/// an NVIDIA GPU (its spec entry), and one of: a backend other than CUDA
/// (`backend`; `None` is CUDA, NVIDIA's own), a build (`Some`) before
/// [`LLAMA_CUDA_MMQ_INT8`], or a GPU of compute capability below 8.0; never
/// a prompt on the DP4A kernels ([`dp4a_mmq`]: Pascal, or a build with
/// `GGML_CUDA_FORCE_MMQ`, `force_mmq`, without int8 tensor-core MMQ). Such
/// a prompt takes the fitted [`PREFILL_MMQ_ERA`] factor on its time: the
/// fitted prefill fractions are those of int8 MMQ on Ampere and later.
///
/// Below 8.0: V100 and older stay on FP16 cuBLAS (PR 8075). Turing runs
/// MMQ on int8 tensor cores but measurably gained nothing from it. Why is
/// not established here; one difference is that Turing lacks the m16n8k32
/// int8 `mma` the kernels use from Ampere on (smaller m8n8k16 ones stand in:
/// ggml-cuda `mma.cuh`, PR 7860's review). Measured: an RTX 2080 Ti's llama
/// 13B Q4_K_M pp512 at 1493.64 tok/s on build 7474 (Dec 2025, speed.csv, a
/// held-out row), which the Ampere-era fractions would put 110 % over; the
/// scoreboards' Turing rows (RTX 2060 SUPER, 2070 SUPER, 2080 Ti, T4: 62 %
/// to 111 % over) showed it first.
///
/// Vulkan: its matrix shaders are not MMQ (FP16 cooperative matrices, or
/// int8 dot products), so an NVIDIA GPU under Vulkan takes the factor at
/// every build. The factor is chosen on the other rows (`scripts/fit-speed.py`:
/// the fit's twelve NVIDIA Vulkan prompt rows, on an RTX 5090, 3090, 4090
/// and 2080 Ti, half of them mixture-of-experts runs, fitted apart came out
/// at a factor of 1.8 and made the held-out figures worse; see
/// `docs/accuracy.md`); with it the scoreboards' Vulkan prompts on GeForce
/// RTX 30 and 40 cards are within 11 % under to 29 % over (17 % under to
/// 108 % over at the CUDA fractions, when first measured).
pub fn without_int8_mmq(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> bool {
    if !quantized_llama_cpp_gpu(d, runtime, q) || dp4a_mmq(d, runtime, q, backend, build, force_mmq)
    {
        return false;
    }
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    let cc = nvidia_cc(e);
    e.vendor == "nvidia"
        && (backend.is_some_and(|b| b != super::runtime::GgmlBackend::Cuda)
            || !cuda_mmq_type(q)
            || cc.is_some_and(|cc| cc < (8, 0) || build.is_some_and(|b| b < LLAMA_CUDA_MMQ_INT8)))
}

/// Whether llama.cpp's CUDA backend has MMQ kernels for weights stored at
/// `q` (`ggml_cuda_should_use_mmq`'s list of types: every GGUF type the
/// planner names but IQ1_M, whose prompts are dequantized for cuBLAS at
/// any build and whatever `GGML_CUDA_FORCE_MMQ` says; the i-quants gained
/// MMQ in PR 8495, opened 2024-07-15, a month after the other types'
/// int8 kernels, [`LLAMA_CUDA_MMQ_INT8`]). A prompt of a type without them
/// takes the fitted [`PREFILL_MMQ_ERA`] factor, as [`without_int8_mmq`]
/// says.
pub fn cuda_mmq_type(q: Quant) -> bool {
    q != Quant::Iq1M
}

/// What the quantized prompt of a plan runs on under llama.cpp's CUDA
/// backend where the planner distinguishes it: `"dp4a"` on the DP4A MMQ
/// kernels ([`dp4a_mmq`]), `"no-mmq"` dequantized for cuBLAS because its
/// type has no MMQ kernel ([`cuda_mmq_type`]) on an NVIDIA GPU, `""`
/// otherwise (`scripts/fit-speed.py` reads it from the accuracy test).
pub fn prompt_path(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> &'static str {
    if dp4a_mmq(d, runtime, q, backend, build, force_mmq) {
        "dp4a"
    } else if !cuda_mmq_type(q)
        && backend.is_none_or(|b| b == super::runtime::GgmlBackend::Cuda)
        && without_int8_mmq(d, runtime, q, backend, build, force_mmq)
    {
        "no-mmq"
    } else {
        ""
    }
}

/// The first llama.cpp build month whose Vulkan backend runs matrix
/// products on AMD GPUs with cooperative matrices (RDNA 3, 3.5 and 4) with
/// tile parameters tuned for them: PR 18749 ("Vulkan: Optimize Matmul
/// parameters for AMD GPUs with Coopmat support", opened 2026-01-11; its
/// merge date is not read here, so builds from the month after it was
/// opened count as having it). Its description measured, on a Radeon 8060S
/// (RADV, `matrix cores: KHR_coopmat`), llama 8B pp512 before and after:
/// Q4_0 644.84 → 875.24 tok/s, Q4_K_S 529.50 → 793.51, Q8_0 422.37 →
/// 742.46 (+36 % to +76 %), and improvements on an RX 9060 XT.
pub const LLAMA_VULKAN_AMD_COOPMAT_TUNING: BuildMonth = BuildMonth::ym(2026, 2);

/// Whether llama.cpp runs a plan's quantized prompt on the Vulkan matmul
/// parameters of its builds before [`LLAMA_VULKAN_AMD_COOPMAT_TUNING`]:
/// llama.cpp, a weight-only format below 16 bits, the Vulkan backend, an
/// AMD GPU with cooperative matrices (its spec entry's architecture gfx11
/// or gfx12: RDNA 3, 3.5, 4; WMMA, which RADV and AMD's drivers expose as
/// `VK_KHR_cooperative_matrix`), and a build (`Some`) before that month.
/// Such a prompt takes the fitted [`PREFILL_VULKAN_AMD_ERA`] factor on its
/// time: the AMD cells are fitted with it, so that rows of older builds
/// (Strix Halo's of July 2025 to January 2026, a W7900's of December 2024,
/// 51 % to 95 % over without it) stop pulling the fraction of current
/// builds down. Only quantized prompts were measured before and after, so
/// 16-bit ones take no factor.
pub fn vulkan_amd_untuned(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
) -> bool {
    if !quantized_llama_cpp_gpu(d, runtime, q)
        || backend != Some(super::runtime::GgmlBackend::Vulkan)
        || build.is_none_or(|b| b >= LLAMA_VULKAN_AMD_COOPMAT_TUNING)
    {
        return false;
    }
    d.spec_id
        .as_deref()
        .and_then(crate::spec::by_id)
        .is_some_and(|e| {
            e.vendor == "amd"
                && e.family == crate::model::Family::Gpu
                && e.architecture
                    .as_deref()
                    .is_some_and(|a| a.starts_with("gfx11") || a.starts_with("gfx12"))
        })
}

/// A window of llama.cpp builds whose prompt kernels for some devices and
/// formats ran well below what the planner's fitted fractions (those of
/// the builds before and after) give, named by the pull request that
/// ended it. The planner has no term for these: a plan for a build in the
/// window warns that its prefill is an upper bound
/// ([`slow_prompt_kernels`]). Months follow the other build steps: a PR's
/// change counts from the month after it was opened.
#[derive(Clone, Copy, Debug)]
pub struct SlowPromptKernels {
    /// The ggml backend whose kernels these are.
    pub backend: GgmlBackend,
    /// The spec entry's vendor the window applies to (`None`: every GPU).
    pub vendor: Option<&'static str>,
    /// The only weight format affected (`None`: every format).
    pub quant: Option<Quant>,
    /// Only mixture-of-experts models (their `mul_mat_id` prompts).
    pub moe_only: bool,
    /// The first build month with the slow kernels (`None`: every build
    /// before [`Self::until`] the backend ran such a prompt with).
    pub since: Option<BuildMonth>,
    /// The first build month without them.
    pub until: BuildMonth,
    /// What ran slowly and the source that says so.
    pub why: &'static str,
}

/// The windows [`slow_prompt_kernels`] knows. Each is read from the pull
/// request that ended it and a measurement of a build inside it:
///
/// - SYCL, Q4_0, Intel GPUs, builds of March to May 2025. PR 12035
///   ("\[SYCL\] Optimize mul_mat for Q4_0 on Intel GPU", opened 2025-02-23)
///   reordered Q4_0 weights for every matrix product, on by default (PR
///   12560 turned it off on 2025-03-25 and PR 13003 on again in April
///   2025; the window keeps all three months); PR 13536 ("sycl:
///   disable reorder for sycl mulmat", opened 2025-05-14): "The reorder
///   optimisation introduced a prompt processing performance regression
///   for Q4_0 models. This PR disables reorder for the sycl mulmat which is
///   the culprit". Measured inside it (speed.csv, PR 12972's table, build
///   bb1681fb (5376), May 2025): a Data Center GPU Max 1100 ran llama 7B
///   Q4_0 pp512 at 1751.95 tok/s and Q4_K_M at 3369.32 on the same build,
///   where the planner gave both 3753 (Nov 2026).
/// - Vulkan, mixture-of-experts prompts, every GPU, builds before
///   September 2025. PR 15427 ("vulkan: optimize mul_mat_id loading row
///   ids into shared memory", opened 2025-08-19: the row ids were loaded by
///   too few threads of the workgroup) and PR 15524 ("vulkan: apply
///   MUL_MAT_ID subgroup optimization to non-coopmat devices", opened
///   2025-08-23; its Radeon Pro VII ran Qwen3 30B-A3B Q2_K pp512 at 45.16
///   tok/s before and 342.07 after). Measured inside it (speed.csv, PR
///   15252's baseline, Aug 2025): an RTX 5090 ran Qwen3 30B-A3B Q4_K_M
///   pp512 at 3971.06 tok/s, where the planner gave 9225 (Nov 2026); the same GPU's
///   Q2_K ran at 6293.79 on the master of 2025-08-24 (PR 15546's baseline,
///   after PR 15427), 8 % under its estimate.
pub const SLOW_PROMPT_KERNELS: &[SlowPromptKernels] = &[
    SlowPromptKernels {
        backend: GgmlBackend::Sycl,
        vendor: Some("intel"),
        quant: Some(Quant::Q4_0),
        moe_only: false,
        since: Some(BuildMonth::ym(2025, 3)),
        until: BuildMonth::ym(2025, 6),
        why: "the SYCL backend's reordered Q4_0 weights slowed prompt processing until \
              llama.cpp PR 13536 (May 2025) took the reorder out of its matrix products",
    },
    SlowPromptKernels {
        backend: GgmlBackend::Vulkan,
        vendor: None,
        quant: None,
        moe_only: true,
        since: None,
        until: BuildMonth::ym(2025, 9),
        why: "the Vulkan backend's mixture-of-experts matrix products (mul_mat_id) ran far \
              slower before llama.cpp PRs 15427 and 15524 (August 2025) spread their row-id \
              loading over the whole workgroup",
    },
];

/// The window of [`SLOW_PROMPT_KERNELS`] a plan's prompt falls in:
/// llama.cpp (or a runtime fitted as it), a GPU with a spec entry, the
/// window's backend (`backend` `None` is the device's own,
/// [`DeviceClass::own_backend`]), vendor, format and model kind (`moe`),
/// and a named build (`Some`: a plan for the newest build has none) inside
/// the window.
pub fn slow_prompt_kernels(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    moe: bool,
    backend: Option<GgmlBackend>,
    build: Option<BuildMonth>,
) -> Option<&'static SlowPromptKernels> {
    let build = build?;
    if fit_runtime(runtime) != RuntimeKind::LlamaCpp || d.host {
        return None;
    }
    let e = d.spec_id.as_deref().and_then(crate::spec::by_id)?;
    let backend = backend.or_else(|| DeviceClass::of(d).own_backend())?;
    SLOW_PROMPT_KERNELS.iter().find(|w| {
        w.backend == backend
            && w.vendor.is_none_or(|v| v == e.vendor)
            && w.quant.is_none_or(|wq| wq == q)
            && (moe || !w.moe_only)
            && w.since.is_none_or(|s| s <= build)
            && build < w.until
    })
}

/// FP32 lanes per SM of an NVIDIA compute capability: the CUDA C++
/// Programming Guide's "Throughput of Native Arithmetic Instructions"
/// table (32-bit floating-point add, multiply, multiply-add: 64 results per
/// clock cycle per multiprocessor for 7.x and 8.0, 128 for 8.6, 8.7, 8.9,
/// 9.0 and later); `None` before 7.0.
fn fp32_lanes_per_sm(cc: (u32, u32)) -> Option<f64> {
    match cc {
        (7, _) | (8, 0) => Some(64.0),
        (m, _) if m >= 8 => Some(128.0),
        _ => None,
    }
}

/// Where llama.cpp multiplies a quantized prompt with its int8 MMQ kernels
/// on an NVIDIA data-center GPU (CUDA, a build from July 2024 on, compute
/// capability 8.0 or later: not [`without_int8_mmq`]), the factor from the
/// datasheet 16-bit rate to the rate those kernels are referred to: the
/// GPU's SMs × clock × 1024 FLOPs per SM per clock, GA102's dense FP16
/// tensor rate per SM (RTX 3090: 142 TFLOPS over 82 SMs at 1.695 GHz,
/// NVIDIA's Ampere GA102 whitepaper), computed as `4 × fp32 × 128 / lanes`
/// with the FP32 lanes per SM (64 for compute capability 7.x and 8.0, 128 for
/// 8.6 and later: the CUDA C++ Programming Guide's arithmetic throughput table).
///
/// The MMQ kernels issue the same `mma.sync` int8 instructions on every
/// GPU from Ampere on (`mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32`
/// in `ggml/src/ggml-cuda/mma.cuh`; no `wgmma` (Hopper) instruction
/// anywhere in `ggml-cuda`, read in the llama.cpp that llama-cpp-python
/// 0.2.79 to 0.3.16 vendor), and what they reach per SM and
/// clock is about the same on every such GPU, whatever its datasheet
/// tensor rate: llama 7B Q4_0 pp512 ran at 31-42 tokens/s per SM·GHz on
/// the A30, A40, RTX A4000-A6000, RTX 3090 Ti, 4080, 4090 D and 5090 of the
/// llama.cpp CUDA scoreboard (`tests/calibration/scoreboard.csv`), 31.8 on
/// its A100 80 GB, and 36-37 on the H100 and H200 lent to this project
/// (`tests/fixtures/lent-h100`, `lent-h200`), where the A100's datasheet
/// rate per SM is twice GA102's and the H100's four times. On GeForce and
/// workstation parts this reference equals the datasheet one (a test
/// checks every entry), so only data-center GPUs (A100, A30, L40, H100,
/// H200, B200) change: they take the workstation class's cell at it.
/// `None` where it does not apply.
pub fn mmq_reference_ratio(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> Option<f64> {
    if !quantized_llama_cpp_gpu(d, runtime, q)
        || DeviceClass::of(d) != DeviceClass::NvidiaDatacenter
        || without_int8_mmq(d, runtime, q, backend, build, force_mmq)
        || dp4a_mmq(d, runtime, q, backend, build, force_mmq)
    {
        return None;
    }
    // (A data-center NVIDIA GPU that does not run without int8 MMQ has
    // compute capability 8.0 or later.)
    let cc = nvidia_cc(d.spec_id.as_deref().and_then(crate::spec::by_id)?)?;
    let reference = 4.0 * d.tflops.fp32? * 128.0 / fp32_lanes_per_sm(cc)?;
    Some(reference / d.tflops_for(crate::spec::Dtype::Fp16)?)
}

/// The build month from which llama.cpp's HIP backend multiplies a
/// quantized prompt (micro-batches of 64 tokens and more) on an AMD CDNA
/// GPU's matrix cores: dequantized for rocBLAS/hipBLAS from PR 11601
/// ("HIP: add GGML_CUDA_CC_IS_* for amd familys", 2025-02-02, between
/// builds b4579 of 2025-01-28 and b4624 of 2025-02-03; ggml commit
/// d500f8d986d73f8f7695a6216fb4cb055a154e01), then with MFMA MMQ kernels
/// (PRs 14624 and 14949, July 2025). Before it, `ggml_cuda_should_use_mmq`
/// ended in `return cc < CC_RDNA3 || ne11 < MMQ_DP4A_MAX_BATCH_SIZE;` and a
/// CDNA GPU's compute capability (offset + 900 for the MI100, + 940 for
/// the MI300X) is below RDNA3's, so every prompt ran the DP4A MMQ kernels
/// on the vector ALUs (the llama.cpp vendored in llama-cpp-python 0.3.1,
/// October 2024). PR 10498 (November 2024) meant to send CDNA to rocBLAS
/// but compared against offset + 908, which no CDNA GPU matched until
/// PR 11244 (2025-01-27) parsed the gfx name (the MI100's gfx908 only:
/// an MI100 build of January's last five days is planned as the month's
/// others); PR 11601 covers every CDNA. Its author's words in PR 10498: "the mmq
/// kernels perform extreamly poorly on CDNA ... MMQ also dosent make use of
/// MFMA while rocblas can."
///
/// Which matrix path a type takes after it differs by CDNA generation
/// (`ggml_cuda_should_use_mmq` in `src/ggml-cuda/mmq.cu`, ggml-org/ggml
/// d99724f2, the sync of 2026-08-21): CDNA 3 runs every quantized type on
/// MFMA MMQ from PR 14624 (2025-07-26; "rocblas/tensile performs very
/// poorly on CDNA3"); CDNA 1 and 2 from PR 14949 (2025-07-30) run MFMA MMQ
/// only for micro-batches up to 128 tokens, for Q4_0/Q4_1/Q5_0/Q5_1 at any
/// size, and for Q4_K/Q5_K up to 256, so at the default micro-batch of 512
/// every K-, I- and 8-bit type stays on rocBLAS. The planner plans the
/// default build's path and fits it on default builds: a build with
/// `GGML_CUDA_FORCE_MMQ`, which sends every micro-batch to MMQ, is not
/// modelled on CDNA ([`forced_mmq_unmodelled`]).
pub const LLAMA_HIP_CDNA_MATRIX: BuildMonth = BuildMonth::ym(2025, 2);

/// The first llama.cpp build month whose HIP backend multiplies quantized
/// prompts on CDNA's matrix cores inside its MMQ kernels (MFMA MMQ): PR
/// 14624 ("HIP: Enable Matrix cores for MMQ Kernels, Enable stream-K for
/// CDNA 3", in ggml-org/ggml as ae9a8738 of 2025-07-26) made CDNA 3 take
/// MMQ at every micro-batch size, and PR 14949 ("HIP: enable mfma mmq on
/// gfx908 and gfx90a for select datatypes and shapes", ggml 12236b4a of
/// 2025-07-30) CDNA 1 and 2 for Q4_0, Q4_1, Q5_0 and Q5_1 at every size.
/// Builds of the month after count as having both (a July 2025 build may
/// predate them).
pub const LLAMA_HIP_MFMA_MMQ: BuildMonth = BuildMonth::ym(2025, 8);

/// The first llama.cpp build month that tells CDNA 4 (gfx950: MI350X,
/// MI355X) from CDNA 3: PR 21570 (ggml e1d5d480 of 2026-04-09) bounded
/// `GGML_CUDA_CC_IS_CDNA3` below gfx950, so from then on CDNA 4 takes the
/// CDNA 1 and 2 choice in `ggml_cuda_should_use_mmq` rather than CDNA 3's
/// MMQ at every size. Builds of the month after count as having it.
pub const LLAMA_HIP_CDNA4: BuildMonth = BuildMonth::ym(2026, 5);

/// Whether a plan's quantized prompt is of a llama.cpp build with
/// `GGML_CUDA_FORCE_MMQ` (`force_mmq`) on an AMD CDNA GPU under HIP where
/// that build runs a kernel path its default build does not, at the default
/// micro-batch of 512 tokens: the plan is then the default build's, as the
/// fitted fractions are (a warning says so). `ggml_cuda_should_use_mmq`
/// (`src/ggml-cuda/mmq.cu`; ggml-org/ggml at 2024-10 to 2026-07, the syncs
/// named on [`LLAMA_HIP_CDNA_MATRIX`], [`LLAMA_HIP_MFMA_MMQ`] and
/// [`LLAMA_HIP_CDNA4`]) returns `true` for every MMQ type under the option
/// before any AMD rule, whereas the default build takes:
///
/// - before [`LLAMA_HIP_CDNA_MATRIX`]: MMQ on every CDNA GPU (the same
///   path: `false` here);
/// - from it to [`LLAMA_HIP_MFMA_MMQ`]: rocBLAS from 64-token micro-batches
///   on, where the option runs DP4A MMQ on the vector ALUs;
/// - from [`LLAMA_HIP_MFMA_MMQ`] (and at a build of unknown month, planned
///   as the newest): MMQ at every size on CDNA 3 (and on CDNA 4 before
///   [`LLAMA_HIP_CDNA4`]); on CDNA 1 and 2 (and CDNA 4 from then) MMQ for
///   Q4_0, Q4_1, Q5_0 and Q5_1 only, rocBLAS at 512 for every other type.
///
/// Measured: the MI100's llama 8B IQ4_NL and IQ4_XS pp512 of PR 22051's
/// master (April 2026, JohannesGaessler's description) ran at 3158.92 and
/// 3176.73 tok/s, about twice the rocBLAS prompts of the same GPU in July
/// 2025 (PR 14949's master, llama 13B Q5_K_M at micro-batch 512: 850.12);
/// that PR changed only the MMQ and MMA kernels, yet printed speedups of
/// 1.16 and 1.06 at micro-batches 256 and 512 (IQ1_S), where a default
/// build runs rocBLAS, so both its columns forced MMQ. One such pair is too
/// few to fit MFMA MMQ apart from rocBLAS, so those rows are compared, not
/// fitted (`tests/accuracy.rs`).
pub fn forced_mmq_unmodelled(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> bool {
    if !force_mmq
        || !quantized_llama_cpp_gpu(d, runtime, q)
        || backend.is_some_and(|b| b != super::runtime::GgmlBackend::Hip)
        || build.is_some_and(|b| b < LLAMA_HIP_CDNA_MATRIX)
    {
        return false;
    }
    // The gfx architectures below are AMD's only.
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    let newest = build.is_none_or(|b| b >= LLAMA_HIP_MFMA_MMQ);
    let legacy = matches!(q, Quant::Q4_0 | Quant::Q4_1 | Quant::Q5_0 | Quant::Q5_1);
    match e.architecture.as_deref() {
        Some("gfx908" | "gfx90a") => !(newest && legacy),
        Some("gfx942") => !newest,
        Some("gfx950") => {
            if build.is_none_or(|b| b >= LLAMA_HIP_CDNA4) {
                !legacy
            } else {
                !newest
            }
        }
        _ => false,
    }
}

/// Where llama.cpp's HIP backend ran a quantized prompt on an AMD CDNA
/// GPU's vector ALUs (a build before [`LLAMA_HIP_CDNA_MATRIX`]: DP4A MMQ,
/// no MFMA), the factor from the datasheet 16-bit rate (the matrix cores')
/// to the rate of the units the kernels ran on: one FP32 multiply-add per
/// lane and clock (a DP4A instruction, native or emulated, is a per-lane
/// instruction; packed FP32 issues two FP32 FMAs per lane and no int8
/// dot), over the "Matrix FP16" FLOPS per clock per CU, from AMD's
/// microarchitecture pages (ROCm/legacy-rocm-build
/// 089d7513c55fc7b6edb2a75b83cb40ca883a0ec2,
/// `docs/conceptual/gpu-arch/mi100.md`, `mi250.md`, `mi300.md`): 128 over
/// 1024 for CDNA1 (gfx908) and CDNA2 (gfx90a: its table prints "Vector
/// FP32" 128 and "Packed FP32" 256 apart), 1/8; 128 over 2048 for CDNA3
/// (gfx942), 1/16: its table prints only "Vector FP32" 256, CDNA2's packed
/// figure, beside "Vector FP64" 128, the per-lane FMA rate (CDNA2 too runs
/// FP64 and FP32 FMAs at one per lane, 128 each). The MI300X's 163.4
/// TFLOPS "Vector FP32" is thus the packed rate; its per-lane rate is
/// 81.7. (The llama.cpp of those builds had no native int8 dot for gfx942
/// at all: `ggml_cuda_dp4a` in `ggml/src/ggml-cuda/common.cuh` calls
/// `__builtin_amdgcn_sdot4` for gfx906, gfx908, gfx90a and RDNA2 only, and
/// gfx942 took the generic four-multiply fallback.) `None` where it does not apply:
/// another runtime, 16-bit weights, a backend other than HIP (`None` is
/// the device's own: HIP on AMD), a build from [`LLAMA_HIP_CDNA_MATRIX`]
/// on or of unknown month (planned as the newest), or another GPU. GCN
/// (gfx906: MI50, Radeon VII) and RDNA 1/2 ran DP4A MMQ too, but their
/// datasheet 16-bit rate is already their vector units' (packed FP16).
pub fn cdna_vector_ratio(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
) -> Option<f64> {
    if !quantized_llama_cpp_gpu(d, runtime, q)
        || backend.is_some_and(|b| b != super::runtime::GgmlBackend::Hip)
        || build? >= LLAMA_HIP_CDNA_MATRIX
    {
        return None;
    }
    let e = d.spec_id.as_deref().and_then(crate::spec::by_id)?;
    if e.vendor != "amd" {
        return None;
    }
    let (vector, matrix) = match e.architecture.as_deref()? {
        "gfx908" | "gfx90a" => (128.0, 1024.0),
        "gfx942" => (128.0, 2048.0),
        _ => return None,
    };
    Some(vector / matrix)
}

/// Whether llama.cpp multiplies a plan's quantized prompt with its DP4A MMQ
/// kernels on an NVIDIA GPU that has DP4A but no tensor cores: llama.cpp
/// (or a runtime fitted as it), a weight-only format below 16 bits, the
/// CUDA backend (`backend` `None` is NVIDIA's own), and compute capability
/// 6.1 to 6.x (Pascal but the P100, whose 6.0 has no DP4A: ggml-cuda's
/// `MIN_CC_DP4A` is 610, and `ggml_cuda_should_use_mmq` takes MMQ on every
/// GPU without int8 tensor cores, as read in the llama.cpp that
/// llama-cpp-python 0.2.79 to 0.3.16 vendor). Such a prompt is referred to
/// the GPU's int8 DP4A rate ([`prompt_rate`]) at the fitted
/// [`PREFILL_DP4A`] fraction, not to a 16-bit rate it has none of (1/64
/// of FP32 on GP102/GP104).
///
/// A build with `GGML_CUDA_FORCE_MMQ` (`LLAMA_CUDA_FORCE_MMQ` before the
/// rename of June 2024; `force_mmq`, [`InferenceOptions::cuda_force_mmq`](crate::plan::InferenceOptions::cuda_force_mmq))
/// runs every quantized prompt on the MMQ kernels instead of dequantizing
/// it for FP16 cuBLAS. Where that build's MMQ has no int8 tensor-core path
/// those are the DP4A kernels too: on a GPU of compute capability 7.0 to
/// 7.4 (Volta: the int8 `mma` kernels start at Turing, 7.5), and on any
/// GPU in a build before [`LLAMA_CUDA_MMQ_INT8`] (the tensor-core MMQ
/// kernels came in June 2024, PRs 7676, 7860 and 7921, whose master
/// columns were such builds: `tests/calibration/speed.csv`'s header).
pub fn dp4a_mmq(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> bool {
    if !quantized_llama_cpp_gpu(d, runtime, q)
        || backend.is_some_and(|b| b != super::runtime::GgmlBackend::Cuda)
        || !cuda_mmq_type(q)
    {
        return false;
    }
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    let Some(cc) = nvidia_cc(e).filter(|_| e.vendor == "nvidia") else {
        return false;
    };
    ((6, 1)..(7, 0)).contains(&cc)
        || (force_mmq
            && cc >= (7, 0)
            && (cc < (7, 5) || build.is_some_and(|b| b < LLAMA_CUDA_MMQ_INT8)))
}

/// The matrix rate (TFLOPS or TOPS) a plan's prompt GEMMs of `q` weights
/// computed in `compute` are referred to on `d`: the int8 DP4A rate where
/// llama.cpp runs them with DP4A MMQ ([`dp4a_mmq`]): on a GPU without
/// tensor cores the entry's int8 rate, else four times its FP32 rate (one
/// DP4A is four 8-bit multiply-adds per lane where an FMA is one; the Tesla
/// P40 datasheet's 47 TOPS INT8 against 12 TFLOPS FP32, the P4's 22 against
/// 5.5); on a GPU with tensor cores (compute capability 7.0 on, whose
/// entry's int8 rate is the tensor cores') always four times its FP32 rate,
/// the same nominal reference (on GA10x and AD10x only half the FP32 lanes
/// also run integer instructions, NVIDIA's Ampere GA102 whitepaper; the
/// fitted fraction absorbs what the kernels reach of it); elsewhere
/// [`reference_tflops`].
pub fn prompt_rate(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    compute: Dtype,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> Option<f64> {
    if dp4a_mmq(d, runtime, q, backend, build, force_mmq) {
        let tensor_cores = d
            .spec_id
            .as_deref()
            .and_then(crate::spec::by_id)
            .and_then(nvidia_cc)
            .is_some_and(|cc| cc >= (7, 0));
        let dp4a = d.tflops.fp32.map(|r| 4.0 * r);
        return if tensor_cores {
            dp4a
        } else {
            d.tflops.int8.or(dp4a)
        };
    }
    reference_tflops(d, runtime, compute, backend)
}

/// An NVIDIA entry's compute capability (`architecture` "8.6"); `None`
/// for other vendors' entries.
pub fn nvidia_compute_capability(e: &crate::spec::SpecEntry) -> Option<(u32, u32)> {
    if e.vendor != "nvidia" {
        return None;
    }
    nvidia_cc(e)
}

/// An NVIDIA entry's compute capability (`architecture` "8.6").
fn nvidia_cc(e: &crate::spec::SpecEntry) -> Option<(u32, u32)> {
    let (major, minor) = e.architecture.as_deref()?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The newest build month a runtime's fitted rows measure on a device
/// class's group: the build its fitted per-layer decode time is of (`None`:
/// no build-date term).
pub fn newest_build(runtime: RuntimeKind, class: DeviceClass) -> Option<BuildMonth> {
    let runtime = fit_runtime(runtime);
    DECODE_BUILD_DECAY
        .iter()
        .find(|(r, c, _, _, _)| *r == runtime && *c == class)
        .map(|(_, _, _, b, _)| *b)
}

/// The build month a runtime's fitted per-layer decode time is planned for
/// on a device class: `build` kept within the oldest and newest builds the
/// runtime's rows measure on the class's group, [`newest_build`] without
/// one; `None` without a build-date term.
pub fn planned_build(
    runtime: RuntimeKind,
    class: DeviceClass,
    build: Option<BuildMonth>,
) -> Option<BuildMonth> {
    let runtime = fit_runtime(runtime);
    DECODE_BUILD_DECAY
        .iter()
        .find(|(r, c, _, _, _)| *r == runtime && *c == class)
        .map(|(_, _, _, newest, oldest)| build.map_or(*newest, |b| b.clamp(*oldest, *newest)))
}

/// What applies to one planned device: its class's cell ([`fitted`]) with
/// the device's own factors ([`FITTED_DEVICES`]) where its spec entry has
/// enough rows, and the per-layer decode time of a build of `build`'s month
/// ([`build_factor`]; `None`: the newest).
pub fn fitted_for(
    d: &PlanDevice,
    runtime: RuntimeKind,
    q: Quant,
    backend: Option<super::runtime::GgmlBackend>,
    build: Option<BuildMonth>,
    force_mmq: bool,
) -> Applied {
    let class = DeviceClass::of(d);
    let mut a = fitted(class, runtime, q);
    a.decode_layer_s *= build_factor(runtime, class, decode_build(d, runtime, backend, build));
    if let Some((b, m)) = moe_prefill_backend(runtime, class, backend) {
        a.moe_prefill = m;
        a.moe_prefill_backend = Some(b);
    }
    // A data-center GPU's int8 MMQ prompt: the workstation cell (fraction
    // and per-layer time) at the per-SM reference (mmq_reference_ratio).
    if let Some(ratio) = mmq_reference_ratio(d, runtime, q, backend, build, force_mmq) {
        let ws = fitted(DeviceClass::NvidiaWorkstation, runtime, q);
        a.prefill = ws.prefill.map(|e| e * ratio);
        a.prefill_layer_s = ws.prefill_layer_s;
        a.prefill_basis = ws.prefill_basis.map(|mut b| {
            b.efficiency *= ratio;
            b.mmq_reference_ratio = Some(ratio);
            b
        });
    }
    // A CDNA GPU's quantized prompt of a build that ran it on the vector
    // ALUs: its class's cell at the vector rate (cdna_vector_ratio).
    if let Some(ratio) = cdna_vector_ratio(d, runtime, q, backend, build) {
        a.prefill = a.prefill.map(|e| e * ratio);
        if let Some(b) = a.prefill_basis.as_mut() {
            b.efficiency *= ratio;
            b.vector_reference_ratio = Some(ratio);
        }
    }
    // A DP4A prompt: its runtime's fitted fraction of the DP4A rate, with
    // the pooled cell's per-layer time (no class's tensor cores run it).
    let dp4a = dp4a_mmq(d, runtime, q, backend, build, force_mmq);
    if dp4a {
        let pooled = fitted(DeviceClass::Any, runtime, q);
        let scale = dp4a_width_ratio(runtime, q);
        let fit = prefill_dp4a(runtime).map(|(f, n)| (f * scale, n));
        a.prefill = fit.map(|(f, _)| f);
        a.prefill_layer_s = pooled.prefill_layer_s;
        a.prefill_basis = fit.map(|(f, n)| FitBasis {
            efficiency: f,
            class: DeviceClass::Any,
            width: FormatWidth::of(q),
            rows: n,
            width_scaled: scale != 1.0,
            device_rows: None,
            mmq_era_factor: None,
            vulkan_amd_era_factor: None,
            mmq_reference_ratio: None,
            vector_reference_ratio: None,
            dp4a: true,
            accuracy: None,
            device_accuracy: None,
            device_runs: None,
        });
    }
    if vulkan_amd_untuned(d, runtime, q, backend, build)
        && let Some((_, f)) = PREFILL_VULKAN_AMD_ERA
            .iter()
            .find(|(r, _)| *r == fit_runtime(runtime))
    {
        a.prefill = a.prefill.map(|e| e / f);
        if let Some(b) = a.prefill_basis.as_mut() {
            b.efficiency /= f;
            b.vulkan_amd_era_factor = Some(*f);
        }
    }
    if without_int8_mmq(d, runtime, q, backend, build, force_mmq)
        && let Some((_, f)) = PREFILL_MMQ_ERA
            .iter()
            .find(|(r, _)| *r == fit_runtime(runtime))
    {
        a.prefill = a.prefill.map(|e| e / f);
        if let Some(b) = a.prefill_basis.as_mut() {
            b.efficiency /= f;
            b.mmq_era_factor = Some(*f);
        }
    }
    // A host CPU's fitted decode efficiency relates its speed to the CPU
    // table's theoretical bandwidth; a measured bandwidth (`plan
    // --measure`: streaming reads by every usable thread, what decoding
    // does to the weights) is already what it sustains, so only the
    // per-layer time applies to it.
    if d.host && d.bandwidth_basis.as_deref() == Some("measured") {
        a.decode = Some(1.0);
        a.decode_basis = None;
    }
    let own_id = d.spec_id.as_deref().or(d.cpu_spec_id.as_deref());
    for (basis, prefill) in [(&mut a.decode_basis, false), (&mut a.prefill_basis, true)] {
        if let Some(b) = basis.as_mut() {
            b.accuracy = accuracy(runtime, class, prefill);
            b.device_accuracy = own_id.and_then(|id| device_accuracy(runtime, id, prefill));
            b.device_runs = own_id.and_then(|id| device_runs(runtime, class, backend, id, prefill));
        }
    }
    if let Some(id) = own_id {
        let (fd, mut fp) = device_fits(id, fit_runtime(runtime));
        // A DP4A prompt's fraction is fitted without device factors (a
        // device's prefill factor is of its tensor-core prompts).
        if dp4a {
            fp = None;
        }
        a.decode = a.decode.map(|e| e * fd.map_or(1.0, |(k, _)| k));
        a.prefill = a.prefill.map(|e| e * fp.map_or(1.0, |(k, _)| k));
        for (basis, fit, e) in [
            (&mut a.decode_basis, fd, a.decode),
            (&mut a.prefill_basis, fp, a.prefill),
        ] {
            if let (Some(b), Some(e)) = (basis.as_mut(), e) {
                b.efficiency = e;
                b.device_rows = fit.map(|(_, n)| n);
            }
        }
    }
    a
}

/// The factor on the [`PREFILL_DP4A`] fraction for a prompt of `q`
/// weights: 1 for formats of 4 bits and more, whose rows the fraction is
/// fitted on; for a format below 4 bits (Q3_K, Q2_K) the pool's ratio of
/// its below-4-bit prefill cell to its 4-to-8-bit one, as a class without a
/// cell of its own at a width takes the pool's ratio (`width_scaled` in
/// [`fitted`]): the DP4A kernels and the format's unpacking taken as
/// separate factors. llama.cpp's MMQ tiles unpack a Q3_K block's low two
/// bits, its high-bit mask and its 6-bit scales before the int8 dot
/// products (`load_tiles_q3_K` in `ggml-cuda/mmq.cuh`), where a Q4_0 block
/// needs one nibble split; the Tesla P40's Q3_K_S prompt of January 2024
/// ran at 0.64 of its Q4_0 one on the same build (llama.cpp PR 4766's
/// table). 1 where either pooled cell is missing.
pub fn dp4a_width_ratio(runtime: RuntimeKind, q: Quant) -> f64 {
    if FormatWidth::of(q) != FormatWidth::Below4 {
        return 1.0;
    }
    let runtime = fit_runtime(runtime);
    let pooled = |w: FormatWidth| fitted_cell(DeviceClass::Any, runtime, w).and_then(|f| f.prefill);
    match (pooled(FormatWidth::Below4), pooled(FormatWidth::Bits4)) {
        (Some(fine), Some(four)) if four > 0.0 => fine / four,
        _ => 1.0,
    }
}

/// The fitted [`PREFILL_DP4A`] fraction of a runtime (the one its cells
/// come from, [`fit_runtime`]) and its fit rows; `None` where none is
/// fitted.
pub fn prefill_dp4a(runtime: RuntimeKind) -> Option<(f64, u32)> {
    PREFILL_DP4A
        .iter()
        .find(|(r, _, _)| *r == fit_runtime(runtime))
        .map(|&(_, f, n)| (f, n))
}

/// [`device_fits`] without the rows.
#[cfg(test)]
fn device_factors(id: &str, runtime: RuntimeKind) -> (Option<f64>, Option<f64>) {
    let (d, p) = device_fits(id, runtime);
    (d.map(|(k, _)| k), p.map(|(k, _)| k))
}

/// A device factor and the fit rows behind it.
type FactorFit = Option<(f64, u32)>;

/// The device factors (decode, prefill) for spec id `id` under a fitted
/// runtime, each with the fit rows behind it, quantity by quantity: the
/// id's own, else that of the same chip in another memory configuration
/// ([`crate::spec::same_chip`]: a factor fitted on a 128 GB Ryzen AI Max+
/// 395 holds for its 64 GB one) with the most fit rows.
/// `scripts/fit-speed.py` (`device_k`) applies the same rule and fits one
/// factor per chip.
fn device_fits(id: &str, runtime: RuntimeKind) -> (FactorFit, FactorFit) {
    let chip: Vec<&DeviceFit> = FITTED_DEVICES
        .iter()
        .filter(|f| {
            f.runtime == runtime && (f.spec_id == id || crate::spec::same_chip(f.spec_id, id))
        })
        .collect();
    let best = |get: fn(&DeviceFit) -> (Option<f64>, u32)| {
        chip.iter()
            .filter_map(|f| {
                let (k, n) = get(f);
                k.map(|k| (k, f.spec_id == id, n, f.spec_id))
            })
            // The id's own first, then most rows; ties to the first id in
            // order, so the pick does not depend on the list's order.
            .max_by(|x, y| x.1.cmp(&y.1).then(x.2.cmp(&y.2)).then(y.3.cmp(x.3)))
            .map(|(k, _, n, _)| (k, n))
    };
    (
        best(|f| (f.decode, f.rows.0)),
        best(|f| (f.prefill, f.rows.1)),
    )
}

/// The matrix rate (TFLOPS) the runtime's kernels run `compute` at on a
/// device (see "Reference rates" above); `None` when unknown.
///
/// A host CPU's reference is its FP32 vector FMA rate
/// ([`crate::spec::cpu::CpuSpec::peak_tflops`]): llama.cpp's CPU backend
/// multiplies on the vector units (ggml-cpu `ggml_vec_dot_*` and its
/// repacked GEMM kernels); its AMX path (`ggml/src/ggml-cpu/amx`, built with
/// `GGML_AMX_INT8`) covers a few weight types only, so the AMX rates a CPU
/// entry carries are reported, not used here.
///
/// NVFP4 (`compute` fp4) under llama.cpp on a GPU without FP4 units runs at
/// the 16-bit reference like its other block types: ggml-cuda's `mmq.cu`
/// takes the FP4 tensor-core path only where `blackwell_mma_available`.
///
/// llama.cpp's Vulkan backend (`backend` Vulkan) multiplies on an Intel
/// GPU's matrix engines (`VK_KHR_cooperative_matrix`) only on Xe2 and later
/// (and on integrated Xe parts under Intel's Windows driver): "older
/// hardware (ex. Arc A770) has performance regressions"
/// (`ggml/src/ggml-vulkan/ggml-vulkan.cpp`,
/// `ggml_vk_khr_cooperative_matrix_support`, the llama.cpp vendored in
/// llama-cpp-python 0.3.36). Without it the matrix shaders run on the
/// vector engines (FP16 `f16acc` pipelines, or int8 dot products for
/// quantized weights where the device has them, same file). As everywhere
/// here, the reference is the 16-bit rate of the units the kernels run on
/// (NVIDIA's int8 MMQ is referred to the tensor cores' FP16 rate too): on
/// Xe-HPG and Xe-HPC vector engines twice their FP32 rate (32 FP16 and 16
/// FP32 operations per vector engine and clock: Intel's Architecture Day
/// 2021, as the Arc entries' notes cite). So a discrete Intel GPU before
/// Xe2 under Vulkan has the reference `2 × fp32`. In the calibration rows
/// the A770's llama 7B Q4_0 prompt ran at 903.49 tok/s under Vulkan
/// (intel/ipex-llm issue 13309, Sep 2025) against 1711.58 under SYCL
/// (llama.cpp PR 13536's baseline, May 2025).
///
/// Xe2 is planned the same way, although the source allows it cooperative
/// matrices: its published Vulkan prompts run at the vector engines' rate,
/// not the XMX one (Arc B580, llama 7B Q4_0 pp512: 620.94 tok/s in the
/// Vulkan scoreboard, about 8.3 TFLOPS, against 2156.43 under SYCL, PR
/// 13885's baseline; gemma-2-2b Q4_K_M: 490.89 in PR 14001's baseline under
/// Intel's Windows driver), whether the driver exposed no cooperative
/// matrices or the shaders reach little of them. Its vector FP16 rate is
/// taken as twice FP32 as on Xe-HPG (no Xe2 figure of its own was read).
pub fn reference_tflops(
    d: &PlanDevice,
    runtime: RuntimeKind,
    compute: Dtype,
    backend: Option<super::runtime::GgmlBackend>,
) -> Option<f64> {
    if d.host {
        return d.tflops.fp32;
    }
    if runtime == RuntimeKind::LlamaCpp
        && backend == Some(super::runtime::GgmlBackend::Vulkan)
        && matches!(
            compute,
            Dtype::Fp16 | Dtype::Bf16 | Dtype::Fp4 | Dtype::Fp8 | Dtype::Int8
        )
    {
        if vulkan_without_matrix_engines(d) {
            return d.tflops.fp32.map(|r| 2.0 * r);
        }
        if vulkan_matrix_engines_unused(d) {
            return None;
        }
    }
    let compute = if compute == Dtype::Fp4
        && runtime == RuntimeKind::LlamaCpp
        && !d
            .native_dtypes
            .as_deref()
            .is_some_and(|n| n.contains(&Dtype::Fp4))
    {
        Dtype::Bf16
    } else {
        compute
    };
    let sixteen = matches!(compute, Dtype::Fp16 | Dtype::Bf16);
    match DeviceClass::of(d) {
        // A GeForce card without Tensor Cores (GTX 16: its 16-bit rate is
        // the vector units', twice FP32) has no reference the fitted cells,
        // all of tensor-core cards, describe: the scoreboard's GTX 1660
        // prompts ran at 45 % of such an estimate. Unknown, not guessed.
        DeviceClass::NvidiaConsumer
            if fit_runtime(runtime) == RuntimeKind::LlamaCpp
                && d.tflops.fp16_acc32.is_none()
                && d.tflops.int8.is_none() =>
        {
            None
        }
        DeviceClass::NvidiaConsumer if sixteen && runtime == RuntimeKind::LlamaCpp => d
            .tflops
            .fp16_acc32
            .map(|r| 2.0 * r)
            .or_else(|| d.tflops_for(compute)),
        DeviceClass::Apple if sixteen => d.tflops_for(compute).or(d.tflops.fp32),
        _ => d.tflops_for(compute),
    }
}

/// Whether llama.cpp's Vulkan backend is planned to run a device's matrix
/// products without its matrix engines (see [`reference_tflops`]): a
/// discrete Intel GPU (Xe-HPG, Xe-HPC, Xe2).
pub fn vulkan_without_matrix_engines(d: &PlanDevice) -> bool {
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    e.vendor == "intel"
        && e.family == crate::model::Family::Gpu
        && !e.unified_memory
        && e.architecture
            .as_deref()
            .is_some_and(|a| a.starts_with("Xe"))
}

/// Whether a W4A4 MXFP4 checkpoint ([`ModelSpec::activations_mxfp4`]: an
/// AMD Quark export quantizing activations to MXFP4 too) multiplies in FP4
/// on `d` under `runtime`, so its prompts run at the FP4 rate rather than
/// the 16-bit one other MXFP4 checkpoints (gpt-oss's weight-only experts)
/// compute at. vLLM's `QuarkW4A4MXFP4` runs AITER's FP4 GEMMs, the
/// activations quantized on the fly, only where the platform `supports_mx`,
/// which on ROCm is a `gfx95` architecture (MI350X, MI355X), and emulates
/// them elsewhere (quantize-dequantize, 16-bit GEMMs) (vllm 0.11.0
/// `quark/schemes/quark_w4a4_mxfp4.py`, `platforms/rocm.py`); SGLang
/// 0.5.23's scheme likewise uses AITER's FP4 GEMMs on gfx95
/// (`is_gfx95_supported`). Other runtimes: no.
///
/// [`ModelSpec::activations_mxfp4`]: super::arch::ModelSpec::activations_mxfp4
pub fn mxfp4_activations_run_fp4(
    spec: &super::arch::ModelSpec,
    d: &PlanDevice,
    runtime: RuntimeKind,
) -> bool {
    spec.activations_mxfp4
        && matches!(runtime, RuntimeKind::Vllm | RuntimeKind::Sglang)
        && d.spec_id
            .as_deref()
            .and_then(crate::spec::by_id)
            .is_some_and(|e| {
                e.vendor == "amd"
                    && e.architecture
                        .as_deref()
                        .is_some_and(|a| a.starts_with("gfx95"))
            })
}

/// Whether a detected device has matrix engines that llama.cpp's Vulkan
/// backend would leave unused: its Vulkan driver lists no cooperative
/// matrix llama.cpp takes ([`VulkanMatrixCores::None`], read by
/// `detect::vulkan`), so the matrix shaders run on the vector units. The
/// calibration corpus has no such runs on these parts, so the prompt rate
/// is unknown rather than guessed. Two published `matrix cores: none` runs
/// show how far the matrix-path estimate would be off (2026-11-30 fit,
/// pp512): an RTX 3090's llama 7B Q4_0 at 1979.04 tok/s (llama.cpp PR
/// 14903, run without coopmat) against 5212 planned, and an RX 9070 XT's
/// Llama 3.2 3B Q4_K_M at 2086.07 (geerlingguy/ai-benchmarks issue 25, a
/// RADV build without cooperative matrices) against 5177: 2.6× and 2.5×.
/// Two runs of two vendors are too few to fit the vector path on. Discrete Intel GPUs are
/// planned at their vector rate anyway ([`vulkan_without_matrix_engines`]);
/// parts without matrix engines (GTX 16, RDNA2 and older, Apple) have their
/// vector rate as their 16-bit rate already.
///
/// Matrix engines: NVIDIA compute capability 7.0 and later, save the
/// GeForce parts without Tensor Cores (no tensor FP16 or INT8 rate in the
/// spec database: GTX 16); AMD RDNA3 and later (gfx11, gfx12: WMMA) and
/// CDNA (gfx908, gfx90a, gfx94x, gfx95x).
///
/// [`VulkanMatrixCores::None`]: super::runtime::VulkanMatrixCores::None
pub fn vulkan_matrix_engines_unused(d: &PlanDevice) -> bool {
    if d.vulkan_matrix_cores != Some(super::runtime::VulkanMatrixCores::None)
        || vulkan_without_matrix_engines(d)
    {
        return false;
    }
    let Some(e) = d.spec_id.as_deref().and_then(crate::spec::by_id) else {
        return false;
    };
    match e.vendor.as_str() {
        "nvidia" => {
            nvidia_cc(e).is_some_and(|cc| cc >= (7, 0))
                && (DeviceClass::of(d) != DeviceClass::NvidiaConsumer
                    || d.tflops.fp16_acc32.is_some()
                    || d.tflops.int8.is_some())
        }
        "amd" => e.architecture.as_deref().is_some_and(|a| {
            ["gfx11", "gfx12", "gfx908", "gfx90a", "gfx94", "gfx95"]
                .iter()
                .any(|p| a.starts_with(p))
        }),
        _ => false,
    }
}

/// The planner's error on the published measurements of a device class
/// under a runtime ([`Accuracy`]), decode or `prefill`: the runtime's own
/// rows, never another's whose cells it borrows ([`fit_runtime`]); `None`
/// where the corpus has none.
pub fn accuracy(runtime: RuntimeKind, class: DeviceClass, prefill: bool) -> Option<Accuracy> {
    ACCURACY
        .iter()
        .find(|(r, c, p, _)| *r == runtime && *c == class && *p == prefill)
        .map(|(.., a)| *a)
}

/// The planner's error on a device's own published runs under a runtime
/// that the fit does not take ([`FitBasis::device_accuracy`]), decode or
/// `prefill`, by the device's spec id or another memory configuration of
/// the same chip (as device factors are found, [`crate::spec::same_chip`]);
/// `None` for a device without such runs.
pub fn device_accuracy(runtime: RuntimeKind, spec_id: &str, prefill: bool) -> Option<Accuracy> {
    DEVICE_ACCURACY
        .iter()
        .find(|(r, id, p, _)| {
            *r == runtime
                && *p == prefill
                && (*id == spec_id || crate::spec::same_chip(id, spec_id))
        })
        .map(|(.., a)| *a)
}

/// The median errors of a device's own published runs
/// ([`device_runs`]) above which a plan on it warns, decode and prefill:
/// the worst errors the calibration aims at over all its rows
/// (`docs/accuracy.md`: decode worst ≤ 40 %, prefill worst ≤ 60 %). A
/// device whose typical run is off by more than that runs unlike its
/// class's cell for a reason the planner has no term for.
pub const DEVICE_RUNS_WARN: (f64, f64) = (0.40, 0.60);

/// The planner's error on every published run of a device under a
/// runtime ([`FitBasis::device_runs`]), decode or `prefill`, by the
/// device's spec id or another memory configuration of the same chip
/// ([`crate::spec::same_chip`]); for llama.cpp on the ggml backend the plan
/// names, else its class's own ([`DeviceClass::own_backend`]: CUDA, HIP,
/// Metal, SYCL), as llama-bench's `backend` column prints it. `None` where
/// the calibration corpus has no such run.
pub fn device_runs(
    runtime: RuntimeKind,
    class: DeviceClass,
    backend: Option<GgmlBackend>,
    spec_id: &str,
    prefill: bool,
) -> Option<Accuracy> {
    let printed = if runtime == RuntimeKind::LlamaCpp {
        backend.or(class.own_backend())?.printed()
    } else {
        ""
    };
    let key = |(r, b, _, p, _): &&(RuntimeKind, &str, &str, bool, Accuracy)| {
        *r == runtime && *b == printed && *p == prefill
    };
    // The device's own id first, then another configuration of its chip.
    DEVICE_RUNS
        .iter()
        .filter(key)
        .find(|(_, _, id, ..)| *id == spec_id)
        .or_else(|| {
            DEVICE_RUNS
                .iter()
                .filter(key)
                .find(|(_, _, id, ..)| crate::spec::same_chip(id, spec_id))
        })
        .map(|(.., a)| *a)
}

/// The planner's served time per output token against a runtime's
/// published closed-loop serving benchmarks ([`SERVING_ACCURACY`]); `None`
/// for a runtime without such runs in the corpus. With the prefill passes
/// SGLang runs between decode steps switched off (`mixed_prefill`) the
/// plan is not the one those runs were compared with, and gets `None`.
pub fn serving_accuracy(opts: &super::InferenceOptions) -> Option<Accuracy> {
    serving_table(SERVING_ACCURACY, opts)
}

/// The planner's closed-loop mean time to first token against a runtime's
/// published closed-loop serving benchmarks ([`SERVING_TTFT_ACCURACY`]), as
/// [`serving_accuracy`] gives the served TPOT's.
pub fn serving_ttft_accuracy(opts: &super::InferenceOptions) -> Option<Accuracy> {
    serving_table(SERVING_TTFT_ACCURACY, opts)
}

fn serving_table(
    table: &[(RuntimeKind, Accuracy)],
    opts: &super::InferenceOptions,
) -> Option<Accuracy> {
    let runtime = opts.runtime;
    if opts.mixed_prefill && super::runtime::runtime(runtime).prompts_between_decode_steps() {
        return None;
    }
    table.iter().find(|(r, _)| *r == runtime).map(|(_, a)| *a)
}

// BEGIN ACCURACY (generated by scripts/fit-speed.py; do not edit by hand)
/// Per runtime, device class and quantity (`true`: prefill), the
/// planner's error on the class's published measurements ([`Accuracy`]).
pub const ACCURACY: &[(RuntimeKind, DeviceClass, bool, Accuracy)] = &[
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Amd,
        false,
        Accuracy {
            rows: 55,
            median: 0.065,
            worst: 0.254,
            held_out_rows: 5,
            held_out_median: Some(0.061),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Amd,
        true,
        Accuracy {
            rows: 56,
            median: 0.113,
            worst: 0.557,
            held_out_rows: 5,
            held_out_median: Some(0.122),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::AmdDatacenter,
        false,
        Accuracy {
            rows: 2,
            median: 0.088,
            worst: 0.169,
            held_out_rows: 0,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::AmdDatacenter,
        true,
        Accuracy {
            rows: 8,
            median: 0.171,
            worst: 0.448,
            held_out_rows: 0,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Apple,
        false,
        Accuracy {
            rows: 68,
            median: 0.079,
            worst: 0.296,
            held_out_rows: 11,
            held_out_median: Some(0.092),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Apple,
        true,
        Accuracy {
            rows: 46,
            median: 0.042,
            worst: 0.475,
            held_out_rows: 7,
            held_out_median: Some(0.085),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Intel,
        false,
        Accuracy {
            rows: 10,
            median: 0.151,
            worst: 0.353,
            held_out_rows: 3,
            held_out_median: Some(0.254),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::Intel,
        true,
        Accuracy {
            rows: 6,
            median: 0.09,
            worst: 0.451,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaConsumer,
        false,
        Accuracy {
            rows: 79,
            median: 0.048,
            worst: 0.349,
            held_out_rows: 12,
            held_out_median: Some(0.081),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaConsumer,
        true,
        Accuracy {
            rows: 61,
            median: 0.088,
            worst: 1.385,
            held_out_rows: 9,
            held_out_median: Some(0.111),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaDatacenter,
        false,
        Accuracy {
            rows: 84,
            median: 0.079,
            worst: 0.286,
            held_out_rows: 20,
            held_out_median: Some(0.085),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaDatacenter,
        true,
        Accuracy {
            rows: 61,
            median: 0.079,
            worst: 0.303,
            held_out_rows: 12,
            held_out_median: Some(0.067),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaSoc,
        false,
        Accuracy {
            rows: 5,
            median: 0.085,
            worst: 0.162,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaSoc,
        true,
        Accuracy {
            rows: 5,
            median: 0.119,
            worst: 0.496,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaWorkstation,
        false,
        Accuracy {
            rows: 77,
            median: 0.03,
            worst: 0.14,
            held_out_rows: 9,
            held_out_median: Some(0.01),
        },
    ),
    (
        RuntimeKind::LlamaCpp,
        DeviceClass::NvidiaWorkstation,
        true,
        Accuracy {
            rows: 44,
            median: 0.056,
            worst: 0.225,
            held_out_rows: 4,
            held_out_median: Some(0.028),
        },
    ),
    (
        RuntimeKind::Sglang,
        DeviceClass::AmdDatacenter,
        false,
        Accuracy {
            rows: 2,
            median: 0.171,
            worst: 0.298,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::Sglang,
        DeviceClass::AmdDatacenter,
        true,
        Accuracy {
            rows: 2,
            median: 0.102,
            worst: 0.181,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::Sglang,
        DeviceClass::NvidiaDatacenter,
        false,
        Accuracy {
            rows: 11,
            median: 0.317,
            worst: 0.403,
            held_out_rows: 11,
            held_out_median: Some(0.317),
        },
    ),
    (
        RuntimeKind::Sglang,
        DeviceClass::NvidiaDatacenter,
        true,
        Accuracy {
            rows: 11,
            median: 0.383,
            worst: 1.374,
            held_out_rows: 11,
            held_out_median: Some(0.383),
        },
    ),
    (
        RuntimeKind::Trtllm,
        DeviceClass::NvidiaDatacenter,
        false,
        Accuracy {
            rows: 6,
            median: 0.154,
            worst: 0.341,
            held_out_rows: 6,
            held_out_median: Some(0.154),
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaConsumer,
        false,
        Accuracy {
            rows: 13,
            median: 0.156,
            worst: 0.822,
            held_out_rows: 3,
            held_out_median: Some(0.152),
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaConsumer,
        true,
        Accuracy {
            rows: 11,
            median: 0.266,
            worst: 1.457,
            held_out_rows: 2,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaDatacenter,
        false,
        Accuracy {
            rows: 31,
            median: 0.101,
            worst: 1.315,
            held_out_rows: 5,
            held_out_median: Some(0.123),
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaDatacenter,
        true,
        Accuracy {
            rows: 23,
            median: 0.196,
            worst: 1.82,
            held_out_rows: 4,
            held_out_median: Some(0.361),
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaWorkstation,
        false,
        Accuracy {
            rows: 9,
            median: 0.088,
            worst: 0.187,
            held_out_rows: 0,
            held_out_median: None,
        },
    ),
    (
        RuntimeKind::Vllm,
        DeviceClass::NvidiaWorkstation,
        true,
        Accuracy {
            rows: 9,
            median: 0.201,
            worst: 0.827,
            held_out_rows: 0,
            held_out_median: None,
        },
    ),
];
/// Per runtime, device (spec id) and quantity, the planner's error on the
/// device's own published runs that the fit does not take
/// ([`FitBasis::device_accuracy`]); every one of them is held out.
pub const DEVICE_ACCURACY: &[(RuntimeKind, &str, bool, Accuracy)] = &[
    (
        RuntimeKind::Vllm,
        "h20-3e",
        false,
        Accuracy {
            rows: 5,
            median: 0.916,
            worst: 3.592,
            held_out_rows: 5,
            held_out_median: Some(0.916),
        },
    ),
    (
        RuntimeKind::Vllm,
        "h20-3e",
        true,
        Accuracy {
            rows: 5,
            median: 0.225,
            worst: 1.241,
            held_out_rows: 5,
            held_out_median: Some(0.225),
        },
    ),
    (
        RuntimeKind::Vllm,
        "v100s-pcie-32gb",
        false,
        Accuracy {
            rows: 5,
            median: 0.266,
            worst: 0.948,
            held_out_rows: 5,
            held_out_median: Some(0.266),
        },
    ),
    (
        RuntimeKind::Vllm,
        "v100s-pcie-32gb",
        true,
        Accuracy {
            rows: 5,
            median: 0.529,
            worst: 0.928,
            held_out_rows: 5,
            held_out_median: Some(0.529),
        },
    ),
];
/// Per runtime, the planner's served time per output token
/// (`Plan::served_tpot_ms`) against the published closed-loop serving
/// benchmarks of `tests/calibration/serving.csv`, compared, never fitted:
/// every run is held out.
pub const SERVING_ACCURACY: &[(RuntimeKind, Accuracy)] = &[
    (
        RuntimeKind::Sglang,
        Accuracy {
            rows: 36,
            median: 0.215,
            worst: 0.754,
            held_out_rows: 36,
            held_out_median: Some(0.215),
        },
    ),
    (
        RuntimeKind::Trtllm,
        Accuracy {
            rows: 3,
            median: 0.263,
            worst: 0.378,
            held_out_rows: 3,
            held_out_median: Some(0.263),
        },
    ),
    (
        RuntimeKind::Vllm,
        Accuracy {
            rows: 29,
            median: 0.156,
            worst: 0.609,
            held_out_rows: 29,
            held_out_median: Some(0.156),
        },
    ),
];
/// Per runtime, the planner's mean time to first token of a closed-loop
/// benchmark (`inference::closed_loop_ttft_ms`: the clients' first burst,
/// then `Plan::served_ttft_ms`) against the same runs' printed mean,
/// compared, never fitted: every run is held out.
pub const SERVING_TTFT_ACCURACY: &[(RuntimeKind, Accuracy)] = &[
    (
        RuntimeKind::Sglang,
        Accuracy {
            rows: 36,
            median: 0.355,
            worst: 3.481,
            held_out_rows: 36,
            held_out_median: Some(0.355),
        },
    ),
    (
        RuntimeKind::Trtllm,
        Accuracy {
            rows: 3,
            median: 0.25,
            worst: 0.473,
            held_out_rows: 3,
            held_out_median: Some(0.25),
        },
    ),
    (
        RuntimeKind::Vllm,
        Accuracy {
            rows: 29,
            median: 0.314,
            worst: 0.746,
            held_out_rows: 29,
            held_out_median: Some(0.314),
        },
    ),
];
/// Per runtime, ggml backend (llama.cpp's, as llama-bench prints it; empty
/// for the serving runtimes), device (spec id) and quantity, the planner's
/// error on every published run of the device ([`FitBasis::device_runs`]).
#[rustfmt::skip]
pub const DEVICE_RUNS: &[(RuntimeKind, &str, &str, bool, Accuracy)] = &[
    (RuntimeKind::LlamaCpp, "CUDA", "a100-80gb", false, Accuracy { rows: 12, median: 0.085, worst: 0.145, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "a100-80gb", true, Accuracy { rows: 8, median: 0.025, worst: 0.053, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "a100-80gb-pcie", false, Accuracy { rows: 21, median: 0.102, worst: 0.189, held_out_rows: 6, held_out_median: Some(0.101) }),
    (RuntimeKind::LlamaCpp, "CUDA", "a100-80gb-pcie", true, Accuracy { rows: 12, median: 0.05, worst: 0.099, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "a30", false, Accuracy { rows: 1, median: 0.286, worst: 0.286, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "a30", true, Accuracy { rows: 1, median: 0.104, worst: 0.104, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "a40", false, Accuracy { rows: 12, median: 0.041, worst: 0.108, held_out_rows: 4, held_out_median: Some(0.045) }),
    (RuntimeKind::LlamaCpp, "CUDA", "a40", true, Accuracy { rows: 8, median: 0.035, worst: 0.05, held_out_rows: 4, held_out_median: Some(0.026) }),
    (RuntimeKind::LlamaCpp, "CUDA", "gb10", false, Accuracy { rows: 5, median: 0.085, worst: 0.162, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "gb10", true, Accuracy { rows: 5, median: 0.119, worst: 0.496, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "h100-pcie", false, Accuracy { rows: 21, median: 0.072, worst: 0.178, held_out_rows: 4, held_out_median: Some(0.083) }),
    (RuntimeKind::LlamaCpp, "CUDA", "h100-pcie", true, Accuracy { rows: 12, median: 0.097, worst: 0.293, held_out_rows: 3, held_out_median: Some(0.291) }),
    (RuntimeKind::LlamaCpp, "CUDA", "l40s", false, Accuracy { rows: 12, median: 0.094, worst: 0.128, held_out_rows: 5, held_out_median: Some(0.093) }),
    (RuntimeKind::LlamaCpp, "CUDA", "l40s", true, Accuracy { rows: 8, median: 0.107, worst: 0.193, held_out_rows: 3, held_out_median: Some(0.1) }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-2080-ti", true, Accuracy { rows: 1, median: 0.368, worst: 0.368, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3070", false, Accuracy { rows: 4, median: 0.039, worst: 0.041, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3070", true, Accuracy { rows: 4, median: 0.022, worst: 0.039, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3080", false, Accuracy { rows: 4, median: 0.03, worst: 0.054, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3080", true, Accuracy { rows: 4, median: 0.013, worst: 0.022, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3090", false, Accuracy { rows: 18, median: 0.033, worst: 0.285, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3090", true, Accuracy { rows: 16, median: 0.106, worst: 0.456, held_out_rows: 3, held_out_median: Some(0.157) }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3090-ti", false, Accuracy { rows: 1, median: 0.092, worst: 0.092, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-3090-ti", true, Accuracy { rows: 1, median: 0.259, worst: 0.259, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4000-ada", false, Accuracy { rows: 14, median: 0.031, worst: 0.073, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4000-ada", true, Accuracy { rows: 8, median: 0.049, worst: 0.077, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4070-ti", false, Accuracy { rows: 4, median: 0.118, worst: 0.138, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4070-ti", true, Accuracy { rows: 4, median: 0.067, worst: 0.111, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4080", false, Accuracy { rows: 13, median: 0.016, worst: 0.06, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4080", true, Accuracy { rows: 7, median: 0.045, worst: 0.117, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4090", false, Accuracy { rows: 17, median: 0.077, worst: 0.349, held_out_rows: 4, held_out_median: Some(0.081) }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-4090", true, Accuracy { rows: 12, median: 0.077, worst: 0.231, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-5000-ada", false, Accuracy { rows: 16, median: 0.009, worst: 0.073, held_out_rows: 3, held_out_median: Some(0.008) }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-5000-ada", true, Accuracy { rows: 8, median: 0.061, worst: 0.108, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-5090", true, Accuracy { rows: 1, median: 0.15, worst: 0.15, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-6000-ada", false, Accuracy { rows: 21, median: 0.059, worst: 0.091, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-6000-ada", true, Accuracy { rows: 12, median: 0.102, worst: 0.218, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-a6000", false, Accuracy { rows: 21, median: 0.011, worst: 0.036, held_out_rows: 3, held_out_median: Some(0.01) }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-a6000", true, Accuracy { rows: 12, median: 0.032, worst: 0.075, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-pro-6000", false, Accuracy { rows: 5, median: 0.084, worst: 0.14, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "rtx-pro-6000", true, Accuracy { rows: 4, median: 0.157, worst: 0.225, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "tesla-p40", false, Accuracy { rows: 4, median: 0.024, worst: 0.056, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "tesla-p40", true, Accuracy { rows: 8, median: 0.116, worst: 0.303, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "v100-pcie-16gb", false, Accuracy { rows: 1, median: 0.095, worst: 0.095, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "v100-pcie-16gb", true, Accuracy { rows: 1, median: 0.108, worst: 0.108, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "CUDA", "v100-pcie-32gb", true, Accuracy { rows: 3, median: 0.094, worst: 0.196, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-7core-8gb", false, Accuracy { rows: 3, median: 0.028, worst: 0.206, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-7core-8gb", true, Accuracy { rows: 3, median: 0.04, worst: 0.157, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-max-24core-32gb", false, Accuracy { rows: 5, median: 0.131, worst: 0.199, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-max-64gb", false, Accuracy { rows: 12, median: 0.118, worst: 0.227, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-max-64gb", true, Accuracy { rows: 12, median: 0.079, worst: 0.154, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m1-ultra-128gb", true, Accuracy { rows: 1, median: 0.088, worst: 0.088, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m2-max-30core-64gb", false, Accuracy { rows: 2, median: 0.212, worst: 0.296, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m2-max-30core-64gb", true, Accuracy { rows: 1, median: 0.475, worst: 0.475, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m2-ultra-192gb", false, Accuracy { rows: 24, median: 0.051, worst: 0.225, held_out_rows: 3, held_out_median: Some(0.041) }),
    (RuntimeKind::LlamaCpp, "Metal", "m2-ultra-192gb", true, Accuracy { rows: 16, median: 0.03, worst: 0.143, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-16gb", false, Accuracy { rows: 3, median: 0.16, worst: 0.165, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-max-48gb", false, Accuracy { rows: 6, median: 0.042, worst: 0.09, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-max-64gb", false, Accuracy { rows: 12, median: 0.047, worst: 0.204, held_out_rows: 3, held_out_median: Some(0.056) }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-max-64gb", true, Accuracy { rows: 12, median: 0.03, worst: 0.144, held_out_rows: 3, held_out_median: Some(0.085) }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-ultra-512gb", false, Accuracy { rows: 1, median: 0.175, worst: 0.175, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Metal", "m3-ultra-512gb", true, Accuracy { rows: 1, median: 0.245, worst: 0.245, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "mi100", true, Accuracy { rows: 3, median: 0.19, worst: 0.22, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "mi300x", false, Accuracy { rows: 2, median: 0.088, worst: 0.169, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "mi300x", true, Accuracy { rows: 2, median: 0.093, worst: 0.121, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "mi50-16gb", true, Accuracy { rows: 3, median: 0.438, worst: 0.448, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "radeon-8060s", true, Accuracy { rows: 3, median: 0.211, worst: 0.266, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "radeon-ai-pro-r9700", false, Accuracy { rows: 1, median: 0.016, worst: 0.016, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "radeon-ai-pro-r9700", true, Accuracy { rows: 1, median: 0.012, worst: 0.012, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "radeon-pro-w7900", false, Accuracy { rows: 8, median: 0.088, worst: 0.112, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "radeon-pro-w7900", true, Accuracy { rows: 9, median: 0.011, worst: 0.186, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-5700-xt", false, Accuracy { rows: 1, median: 0.002, worst: 0.002, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-5700-xt", true, Accuracy { rows: 1, median: 0.495, worst: 0.495, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-6700-xt", false, Accuracy { rows: 1, median: 0.108, worst: 0.108, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-6700-xt", true, Accuracy { rows: 1, median: 0.414, worst: 0.414, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-6800", true, Accuracy { rows: 1, median: 0.011, worst: 0.011, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-7900-xt", false, Accuracy { rows: 1, median: 0.138, worst: 0.138, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-7900-xt", true, Accuracy { rows: 1, median: 0.24, worst: 0.24, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-7900-xtx", false, Accuracy { rows: 1, median: 0.254, worst: 0.254, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-7900-xtx", true, Accuracy { rows: 3, median: 0.191, worst: 0.198, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-9070-xt", false, Accuracy { rows: 1, median: 0.028, worst: 0.028, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "rx-9070-xt", true, Accuracy { rows: 1, median: 0.055, worst: 0.055, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "ryzen-ai-max-395-128gb", false, Accuracy { rows: 14, median: 0.08, worst: 0.248, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "ROCm", "ryzen-ai-max-395-128gb", true, Accuracy { rows: 8, median: 0.192, worst: 0.417, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "arc-a750", false, Accuracy { rows: 1, median: 0.283, worst: 0.283, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "arc-a750", true, Accuracy { rows: 1, median: 0.061, worst: 0.061, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "arc-a770", false, Accuracy { rows: 3, median: 0.092, worst: 0.135, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "arc-a770", true, Accuracy { rows: 1, median: 0.021, worst: 0.021, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "flex-170", false, Accuracy { rows: 1, median: 0.098, worst: 0.098, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "max-1100", false, Accuracy { rows: 3, median: 0.254, worst: 0.341, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "SYCL", "max-1100", true, Accuracy { rows: 2, median: 0.08, worst: 0.118, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "arc-a770", false, Accuracy { rows: 2, median: 0.26, worst: 0.353, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "arc-a770", true, Accuracy { rows: 2, median: 0.348, worst: 0.451, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "radeon-8060s", false, Accuracy { rows: 4, median: 0.067, worst: 0.108, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "radeon-8060s", true, Accuracy { rows: 5, median: 0.226, worst: 0.36, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "radeon-pro-w7900", false, Accuracy { rows: 1, median: 0.121, worst: 0.121, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "radeon-pro-w7900", true, Accuracy { rows: 1, median: 0.101, worst: 0.101, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-2080-ti", false, Accuracy { rows: 1, median: 0.042, worst: 0.042, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-2080-ti", true, Accuracy { rows: 2, median: 0.994, worst: 1.385, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-3060", false, Accuracy { rows: 1, median: 0.145, worst: 0.145, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-3060", true, Accuracy { rows: 1, median: 0.31, worst: 0.31, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-3090", false, Accuracy { rows: 5, median: 0.103, worst: 0.129, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-3090", true, Accuracy { rows: 4, median: 0.071, worst: 0.399, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-4070", false, Accuracy { rows: 4, median: 0.061, worst: 0.292, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-4090", false, Accuracy { rows: 1, median: 0.269, worst: 0.269, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-4090", true, Accuracy { rows: 1, median: 0.152, worst: 0.152, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-5090", false, Accuracy { rows: 6, median: 0.104, worst: 0.266, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rtx-5090", true, Accuracy { rows: 3, median: 0.014, worst: 0.401, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rx-5700-xt", false, Accuracy { rows: 1, median: 0.131, worst: 0.131, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rx-5700-xt", true, Accuracy { rows: 1, median: 0.018, worst: 0.018, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rx-9070-xt", false, Accuracy { rows: 1, median: 0.102, worst: 0.102, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "rx-9070-xt", true, Accuracy { rows: 1, median: 0.384, worst: 0.384, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::LlamaCpp, "Vulkan", "ryzen-ai-max-395-128gb", false, Accuracy { rows: 20, median: 0.057, worst: 0.11, held_out_rows: 4, held_out_median: Some(0.037) }),
    (RuntimeKind::LlamaCpp, "Vulkan", "ryzen-ai-max-395-128gb", true, Accuracy { rows: 19, median: 0.185, worst: 0.557, held_out_rows: 4, held_out_median: Some(0.158) }),
    (RuntimeKind::Sglang, "", "a100-40gb", false, Accuracy { rows: 3, median: 0.148, worst: 0.323, held_out_rows: 3, held_out_median: Some(0.148) }),
    (RuntimeKind::Sglang, "", "a100-40gb", true, Accuracy { rows: 3, median: 0.116, worst: 0.131, held_out_rows: 3, held_out_median: Some(0.116) }),
    (RuntimeKind::Sglang, "", "b200", false, Accuracy { rows: 8, median: 0.333, worst: 0.403, held_out_rows: 8, held_out_median: Some(0.333) }),
    (RuntimeKind::Sglang, "", "b200", true, Accuracy { rows: 8, median: 0.485, worst: 1.374, held_out_rows: 8, held_out_median: Some(0.485) }),
    (RuntimeKind::Sglang, "", "mi300x", false, Accuracy { rows: 2, median: 0.171, worst: 0.298, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::Sglang, "", "mi300x", true, Accuracy { rows: 2, median: 0.102, worst: 0.181, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::Trtllm, "", "h200", false, Accuracy { rows: 6, median: 0.154, worst: 0.341, held_out_rows: 6, held_out_median: Some(0.154) }),
    (RuntimeKind::Vllm, "", "a100-40gb", false, Accuracy { rows: 5, median: 0.059, worst: 0.271, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "a100-40gb", true, Accuracy { rows: 5, median: 0.064, worst: 0.144, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "a100-80gb", false, Accuracy { rows: 6, median: 0.219, worst: 1.047, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "a100-80gb", true, Accuracy { rows: 6, median: 0.224, worst: 0.967, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "a10g", false, Accuracy { rows: 8, median: 0.009, worst: 0.11, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "h100-sxm", false, Accuracy { rows: 4, median: 0.085, worst: 0.294, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "h100-sxm", true, Accuracy { rows: 4, median: 0.157, worst: 1.82, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "h200", false, Accuracy { rows: 5, median: 0.745, worst: 1.315, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "h200", true, Accuracy { rows: 5, median: 0.14, worst: 1.497, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "l4", false, Accuracy { rows: 2, median: 0.065, worst: 0.096, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "l4", true, Accuracy { rows: 2, median: 0.89, worst: 1.272, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-3090", false, Accuracy { rows: 2, median: 0.114, worst: 0.156, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-3090", true, Accuracy { rows: 2, median: 0.193, worst: 0.266, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4000-ada", false, Accuracy { rows: 1, median: 0.187, worst: 0.187, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4000-ada", true, Accuracy { rows: 1, median: 0.296, worst: 0.296, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4090", false, Accuracy { rows: 6, median: 0.228, worst: 0.388, held_out_rows: 2, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4090", true, Accuracy { rows: 4, median: 0.944, worst: 1.457, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4090-d", false, Accuracy { rows: 2, median: 0.144, worst: 0.279, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-4090-d", true, Accuracy { rows: 2, median: 0.171, worst: 0.261, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-5090", false, Accuracy { rows: 3, median: 0.083, worst: 0.822, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-5090", true, Accuracy { rows: 3, median: 0.214, worst: 0.589, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-6000-ada", false, Accuracy { rows: 3, median: 0.043, worst: 0.153, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-6000-ada", true, Accuracy { rows: 3, median: 0.292, worst: 0.827, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-a6000", false, Accuracy { rows: 5, median: 0.088, worst: 0.151, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "rtx-a6000", true, Accuracy { rows: 5, median: 0.112, worst: 0.617, held_out_rows: 0, held_out_median: None }),
    (RuntimeKind::Vllm, "", "t4", false, Accuracy { rows: 1, median: 0.21, worst: 0.21, held_out_rows: 1, held_out_median: None }),
    (RuntimeKind::Vllm, "", "t4", true, Accuracy { rows: 1, median: 1.246, worst: 1.246, held_out_rows: 1, held_out_median: None }),
];
// END ACCURACY

/// Whether a calibration row (its CSV line, exactly as in the file) is held
/// out of the fit: FNV-1a 64 of its bytes, remainder 0 mod 5.
pub fn held_out(line: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in line.trim_end().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % 5 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One device of a spec id, as a device string plans it.
    fn dev(id: &str) -> PlanDevice {
        PlanDevice::from_device_string(&format!("1x{id}"))
            .unwrap()
            .remove(0)
    }

    #[test]
    fn eager_layer_time_where_graphs_would_run() {
        use super::super::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let q = Quant::Q4K;
        // llama.cpp: an Ampere GPU's CUDA backend replays graphs, so eager
        // takes the pre-graph builds' per-layer time (a build term makes it
        // longer); Turing at the newest NVIDIA build, an AMD GPU, Vulkan
        // and the host have no graphs to turn off.
        let ampere = dev("rtx-3090");
        let cell = fitted(DeviceClass::of(&ampere), rt, q).decode_layer_s;
        let last = BuildMonth(LLAMA_CUDA_GRAPHS.months() - 1);
        let want = cell * build_factor(rt, DeviceClass::of(&ampere), Some(last));
        assert_eq!(
            eager_decode_layer_s(&ampere, rt, q, None, None, 1),
            Some(want)
        );
        assert!(want > cell);
        // A build older than graphs keeps its own month.
        let old = BuildMonth::ym(2023, 12);
        assert_eq!(
            eager_decode_layer_s(&ampere, rt, q, Some(B::Cuda), Some(old), 1),
            Some(cell * build_factor(rt, DeviceClass::of(&ampere), Some(old)))
        );
        assert_eq!(
            eager_decode_layer_s(&ampere, rt, q, Some(B::Vulkan), None, 1),
            None
        );
        assert_eq!(
            eager_decode_layer_s(&dev("rtx-2080-ti"), rt, q, None, None, 1),
            None
        );
        assert_eq!(
            eager_decode_layer_s(&dev("rx-7900-xtx"), rt, q, None, None, 1),
            None
        );
        // vLLM and SGLang: the fitted tensor-parallel time over 2+ devices
        // only; TensorRT-LLM none.
        let eager = EAGER_TP_LAYER_SECONDS
            .iter()
            .find(|(r, ..)| *r == RuntimeKind::Vllm)
            .map(|(_, s, _)| *s);
        assert!(eager.is_some_and(|s| s > 0.0));
        for r in [RuntimeKind::Vllm, RuntimeKind::Sglang] {
            assert_eq!(
                eager_decode_layer_s(&ampere, r, Quant::Bf16, None, None, 2),
                eager
            );
            assert_eq!(
                eager_decode_layer_s(&ampere, r, Quant::Bf16, None, None, 1),
                None
            );
        }
        assert_eq!(
            eager_decode_layer_s(&ampere, RuntimeKind::Trtllm, Quant::Bf16, None, None, 4),
            None
        );
    }

    #[test]
    fn widths_follow_bits() {
        assert_eq!(FormatWidth::of(Quant::Fp16), FormatWidth::Bits16);
        assert_eq!(FormatWidth::of(Quant::Q8_0), FormatWidth::Bits8);
        assert_eq!(FormatWidth::of(Quant::Q6K), FormatWidth::Bits4);
        assert_eq!(FormatWidth::of(Quant::Q4K), FormatWidth::Bits4);
        assert_eq!(FormatWidth::of(Quant::Iq4Xs), FormatWidth::Bits4);
        assert_eq!(FormatWidth::of(Quant::Int4), FormatWidth::Bits4);
        assert_eq!(FormatWidth::of(Quant::Q3KL), FormatWidth::Below4);
        assert_eq!(FormatWidth::of(Quant::Q2K), FormatWidth::Below4);
        assert_eq!(FormatWidth::Below4.coarser(), Some(FormatWidth::Low));
        assert_eq!(FormatWidth::Bits4.coarser(), Some(FormatWidth::Low));
        assert_eq!(FormatWidth::Bits16.coarser(), None);
    }

    #[test]
    fn finer_width_falls_back_to_own_coarser_scaled_then_pooled_then_coarser() {
        let rt = RuntimeKind::LlamaCpp;
        let cell = |c: DeviceClass, w: FormatWidth| fitted_cell(c, rt, w);
        let mut scaled = 0;
        for class in [
            DeviceClass::Apple,
            DeviceClass::NvidiaConsumer,
            DeviceClass::NvidiaWorkstation,
            DeviceClass::NvidiaDatacenter,
            DeviceClass::Amd,
        ] {
            for q in [Quant::Q2K, Quant::Q3KS, Quant::Q4_0, Quant::Q6K] {
                let w = FormatWidth::of(q);
                type Get = fn(&SpeedFit) -> Option<f64>;
                type Got = fn(&Applied) -> Option<f64>;
                let gets: [(Get, Got); 2] =
                    [(|f| f.decode, |a| a.decode), (|f| f.prefill, |a| a.prefill)];
                for (get, applied) in gets {
                    let own_coarser = cell(class, FormatWidth::Low).and_then(get);
                    let pooled_fine = cell(DeviceClass::Any, w).and_then(get);
                    let pooled_coarser = cell(DeviceClass::Any, FormatWidth::Low).and_then(get);
                    let want = match (
                        cell(class, w).and_then(get),
                        own_coarser,
                        pooled_fine,
                        pooled_coarser,
                    ) {
                        (None, Some(o), Some(f), Some(c)) if w != FormatWidth::Bits16 => {
                            scaled += 1;
                            Some(o * f / c)
                        }
                        _ => [
                            (class, w),
                            (DeviceClass::Any, w),
                            (class, FormatWidth::Low),
                            (DeviceClass::Any, FormatWidth::Low),
                            (class, FormatWidth::Bits16),
                            (DeviceClass::Any, FormatWidth::Bits16),
                        ]
                        .into_iter()
                        .filter_map(|(c, w)| cell(c, w))
                        .find_map(get),
                    };
                    assert_eq!(applied(&fitted(class, rt, q)), want, "{class:?} {q:?}");
                }
            }
        }
        // Apple has no row below 4 bits: its Q2_K/Q3_K decode is scaled.
        assert!(scaled > 0);
        let apple = fitted(DeviceClass::Apple, rt, Quant::Q3KS);
        let own = cell(DeviceClass::Apple, FormatWidth::Low).unwrap();
        assert_eq!(apple.decode_layer_s, own.decode_layer_s.unwrap());
        assert!(apple.decode.unwrap() < own.decode.unwrap());
        // A CPU gets nothing pooled from the GPU fits.
        assert_eq!(fitted(DeviceClass::Other, rt, Quant::Q2K).decode, None);
    }

    #[test]
    fn runtimes_without_cells_use_vllms_and_widths_without_cells_the_16_bit_ones() {
        // SGLang and TensorRT-LLM have no rows of their own in the fit.
        for rt in [RuntimeKind::Sglang, RuntimeKind::Trtllm] {
            assert!(!FITTED.iter().any(|f| f.runtime == rt), "{rt:?}");
            assert_eq!(fit_runtime(rt), RuntimeKind::Vllm);
            for q in [Quant::Bf16, Quant::Fp8] {
                assert_eq!(
                    fitted(DeviceClass::NvidiaDatacenter, rt, q),
                    fitted(DeviceClass::NvidiaDatacenter, RuntimeKind::Vllm, q)
                );
            }
        }
        assert_eq!(fit_runtime(RuntimeKind::LlamaCpp), RuntimeKind::LlamaCpp);
        // vLLM's rows are 16-bit: its FP8 plans take the 16-bit cell, per-layer
        // time included, rather than no fit at all.
        assert!(
            !FITTED
                .iter()
                .any(|f| f.runtime == RuntimeKind::Vllm && f.width == FormatWidth::Bits8)
        );
        let fp8 = fitted(DeviceClass::NvidiaDatacenter, RuntimeKind::Vllm, Quant::Fp8);
        let bf16 = fitted(
            DeviceClass::NvidiaDatacenter,
            RuntimeKind::Vllm,
            Quant::Bf16,
        );
        assert!(bf16.decode.is_some() && bf16.decode_layer_s > 0.0);
        assert_eq!(fp8, bf16);
        // A CPU still gets nothing.
        assert_eq!(
            fitted(DeviceClass::Other, RuntimeKind::Vllm, Quant::Bf16).decode,
            None
        );
    }

    #[test]
    fn backends_parse_as_llama_bench_prints_them() {
        use crate::plan::runtime::GgmlBackend as B;
        for (s, want) in [
            ("CUDA", Some(B::Cuda)),
            ("ROCm", Some(B::Hip)),
            ("hip", Some(B::Hip)),
            ("Metal,BLAS", Some(B::Metal)),
            ("RPC,Vulkan", Some(B::Vulkan)),
            ("SYCL", Some(B::Sycl)),
            ("vulkan", Some(B::Vulkan)),
            ("OpenCL", Some(B::Opencl)),
            ("CPU", None),
            ("BLAS", None),
            ("", None),
        ] {
            assert_eq!(B::parse(s), want, "{s}");
        }
        for b in [B::Cuda, B::Hip, B::Metal, B::Sycl, B::Vulkan, B::Opencl] {
            assert_eq!(B::parse(b.as_str()), Some(b));
            assert_eq!(
                serde_json::to_value(b).unwrap(),
                serde_json::Value::String(b.as_str().into())
            );
        }
    }

    #[test]
    fn vulkan_runs_discrete_intel_gpus_at_their_vector_engines_rate() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        for id in ["arc-a770", "arc-a380", "max-1100", "arc-b580", "arc-b570"] {
            let d = dev(id);
            let fp32 = d.tflops.fp32.unwrap();
            let xmx = d.tflops.fp16.unwrap();
            assert_eq!(
                reference_tflops(&d, rt, Dtype::Fp16, Some(B::Vulkan)),
                Some(2.0 * fp32),
                "{id}"
            );
            assert_eq!(
                reference_tflops(&d, rt, Dtype::Fp16, Some(B::Sycl)),
                Some(xmx),
                "{id}"
            );
            assert_eq!(
                reference_tflops(&d, rt, Dtype::Fp16, None),
                Some(xmx),
                "{id}"
            );
            // Another runtime has no ggml backend.
            assert_eq!(
                reference_tflops(&d, RuntimeKind::Vllm, Dtype::Fp16, Some(B::Vulkan)),
                Some(xmx)
            );
            assert!(
                2.0 * fp32 < xmx / 3.0,
                "{id}: the vector engines are far slower"
            );
        }
        // The A770: 32 Xe-cores x 16 vector engines x 32 FP16 ops x 2.1 GHz.
        let a770 = reference_tflops(&dev("arc-a770"), rt, Dtype::Fp16, Some(B::Vulkan)).unwrap();
        assert!((a770 - 34.4).abs() < 0.01, "{a770}");
        // Other vendors' GPUs keep their reference under Vulkan.
        for id in ["rtx-4090", "rx-7900-xtx", "h100-sxm"] {
            let d = dev(id);
            assert_eq!(
                reference_tflops(&d, rt, Dtype::Fp16, Some(B::Vulkan)),
                reference_tflops(&d, rt, Dtype::Fp16, None),
                "{id}"
            );
        }
    }

    #[test]
    fn geforce_cards_without_tensor_cores_have_no_llama_cpp_prompt_reference() {
        let d = dev("gtx-1660-super");
        assert!(d.tflops.fp16.is_some());
        assert_eq!(
            reference_tflops(&d, RuntimeKind::LlamaCpp, Dtype::Fp16, None),
            None
        );
        // A tensor-core GeForce keeps its reference.
        let rtx = dev("rtx-2060");
        assert!(reference_tflops(&rtx, RuntimeKind::LlamaCpp, Dtype::Fp16, None).is_some());
    }

    #[test]
    fn the_per_sm_mmq_reference_is_the_datasheet_one_off_the_data_center() {
        let rt = RuntimeKind::LlamaCpp;
        // On every GeForce and workstation entry from Turing on, 4 × FP32 ×
        // 128 / lanes (SMs × clock × 1024) is the reference the planner
        // already uses (2 × fp16_acc32 or fp16): the per-SM rate holds.
        let mut checked = 0;
        for e in crate::spec::all().iter().filter(|e| e.vendor == "nvidia") {
            let d = dev(&e.id);
            let class = DeviceClass::of(&d);
            if !matches!(
                class,
                DeviceClass::NvidiaConsumer | DeviceClass::NvidiaWorkstation
            ) {
                continue;
            }
            let (Some(cc), Some(fp32), Some(r)) = (
                nvidia_cc(e),
                d.tflops.fp32,
                reference_tflops(&d, rt, Dtype::Fp16, None),
            ) else {
                continue;
            };
            let Some(lanes) = fp32_lanes_per_sm(cc).filter(|_| cc >= (7, 5)) else {
                continue;
            };
            let per_sm = 4.0 * fp32 * 128.0 / lanes;
            assert!(
                (per_sm / r - 1.0).abs() < 0.015,
                "{}: {per_sm} vs {r}",
                e.id
            );
            checked += 1;
        }
        assert!(checked >= 50, "{checked}");
        // Data-center GPUs: GA100 per SM twice GA102's datasheet rate,
        // Hopper four times; the L40's datasheet 16-bit rate is its FP32-
        // accumulate one.
        let ratio = |id: &str, q: Quant| mmq_reference_ratio(&dev(id), rt, q, None, None, false);
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 0.02);
        assert!(
            near(ratio("a30", Quant::Q4_0), 0.5),
            "{:?}",
            ratio("a30", Quant::Q4_0)
        );
        assert!(near(ratio("a100-80gb", Quant::Q8_0), 0.5));
        assert!(near(ratio("h100-sxm", Quant::Q4K), 268.0 / 989.5));
        assert!(near(ratio("l40", Quant::Q4_0), 2.0));
        // Not: GeForce, 16-bit weights, old builds, Vulkan, V100 / T4,
        // other runtimes.
        assert_eq!(ratio("rtx-4090", Quant::Q4_0), None);
        assert_eq!(ratio("a100-80gb", Quant::Fp16), None);
        assert_eq!(ratio("v100-pcie-32gb", Quant::Q4_0), None);
        assert_eq!(ratio("t4", Quant::Q4_0), None);
        let a100 = dev("a100-80gb");
        let old = Some(BuildMonth::ym(2024, 5));
        assert_eq!(
            mmq_reference_ratio(&a100, rt, Quant::Q4_0, None, old, false),
            None
        );
        assert_eq!(
            mmq_reference_ratio(
                &a100,
                rt,
                Quant::Q4_0,
                Some(crate::plan::runtime::GgmlBackend::Vulkan),
                None,
                false
            ),
            None
        );
        assert_eq!(
            mmq_reference_ratio(&a100, RuntimeKind::Vllm, Quant::Q4_0, None, None, false),
            None
        );
        // The plan takes the workstation cell at that reference.
        let a = fitted_for(&a100, rt, Quant::Q4_0, None, None, false);
        let ws = fitted(DeviceClass::NvidiaWorkstation, rt, Quant::Q4_0);
        let k = device_factors("a100-80gb", rt).1.unwrap_or(1.0);
        assert!((a.prefill.unwrap() / (ws.prefill.unwrap() * 0.5 * k) - 1.0).abs() < 1e-9);
        assert_eq!(a.prefill_layer_s, ws.prefill_layer_s);
        let b = a.prefill_basis.unwrap();
        assert_eq!(b.class, DeviceClass::NvidiaWorkstation);
        assert_eq!(b.mmq_reference_ratio, Some(0.5));
    }

    #[test]
    fn forced_mmq_is_unmodelled_where_cdna_defaults_to_rocblas() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let f = |id: &str, q: Quant, build: Option<BuildMonth>| {
            forced_mmq_unmodelled(&dev(id), rt, q, None, build, true)
        };
        let april_2026 = Some(BuildMonth::ym(2026, 4));
        let march_2025 = Some(BuildMonth::ym(2025, 3));
        let oct_2024 = Some(BuildMonth::ym(2024, 10));
        // CDNA 1 and 2 at current builds: rocBLAS at micro-batch 512 for
        // K-, I- and 8-bit types (PR 22051's IQ4 rows), MMQ for the legacy
        // 4- and 5-bit types whatever the option.
        for id in ["mi100", "mi250x"] {
            for q in [Quant::Iq4Nl, Quant::Iq4Xs, Quant::Q8_0] {
                assert!(f(id, q, april_2026), "{id} {q}");
                assert!(f(id, q, None), "{id} {q}: planned as the newest");
            }
            for q in [Quant::Q4_0, Quant::Q4_1, Quant::Q5_0, Quant::Q5_1] {
                assert!(!f(id, q, april_2026), "{id} {q}");
                // Before the MFMA MMQ kernels the default took rocBLAS
                // for these too, the option DP4A MMQ.
                assert!(f(id, q, march_2025), "{id} {q}");
            }
        }
        // CDNA 3: MMQ at every size since July 2025, so the option changes
        // nothing then; between February and July 2025 it does.
        assert!(!f("mi300x", Quant::Iq4Nl, april_2026));
        assert!(!f("mi300x", Quant::Iq4Nl, None));
        assert!(f("mi300x", Quant::Iq4Nl, march_2025));
        // CDNA 4 was CDNA 3 to llama.cpp until April 2026, then takes CDNA
        // 1 and 2's choice.
        assert!(!f("mi355x", Quant::Iq4Nl, april_2026));
        assert!(f("mi355x", Quant::Iq4Nl, Some(LLAMA_HIP_CDNA4)));
        assert!(!f("mi355x", Quant::Q4_0, Some(LLAMA_HIP_CDNA4)));
        // Before February 2025 the default build ran MMQ on CDNA too.
        assert!(!f("mi100", Quant::Iq4Nl, oct_2024));
        // Not: without the option, 16-bit weights, Vulkan, another
        // runtime, GCN (MMQ by default), NVIDIA.
        let mi100 = dev("mi100");
        assert!(!forced_mmq_unmodelled(
            &mi100,
            rt,
            Quant::Iq4Nl,
            None,
            april_2026,
            false
        ));
        assert!(forced_mmq_unmodelled(
            &mi100,
            rt,
            Quant::Iq4Nl,
            Some(B::Hip),
            april_2026,
            true
        ));
        assert!(!forced_mmq_unmodelled(
            &mi100,
            rt,
            Quant::Iq4Nl,
            Some(B::Vulkan),
            april_2026,
            true
        ));
        assert!(!f("mi100", Quant::Fp16, april_2026));
        assert!(!forced_mmq_unmodelled(
            &mi100,
            RuntimeKind::Vllm,
            Quant::Iq4Nl,
            None,
            None,
            true
        ));
        assert!(!f("mi50-16gb", Quant::Iq4Nl, april_2026));
        assert!(!f("rtx-4090", Quant::Iq4Nl, april_2026));
    }

    #[test]
    fn cdna_prompts_of_builds_before_february_2025_take_the_vector_rate() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let before = Some(BuildMonth::ym(2024, 10));
        let from = Some(LLAMA_HIP_CDNA_MATRIX);
        // AMD's per-lane vector FP32 over matrix FP16 per CU and clock:
        // 1/8 on CDNA1 and CDNA2, 1/16 on CDNA3 (whose printed vector FP32
        // is the packed rate).
        for (id, ratio) in [("mi100", 0.125), ("mi250x", 0.125), ("mi300x", 0.0625)] {
            let r = cdna_vector_ratio(&dev(id), rt, Quant::Q4_0, None, before);
            assert_eq!(r, Some(ratio), "{id}");
            assert_eq!(
                cdna_vector_ratio(&dev(id), rt, Quant::Q4_0, Some(B::Hip), before),
                r
            );
        }
        let mi300x = dev("mi300x");
        // MI300X under the old build: 1307.4 / 16 = 81.7, half AMD's
        // (packed) vector FP32 of 163.4 and equal to its vector FP64.
        let vector = reference_tflops(&mi300x, rt, Dtype::Fp16, None).unwrap() * 0.0625;
        assert!((vector - 81.7).abs() < 0.1, "{vector}");
        // The MI100: 184.6 / 8 = 23.1, AMD's vector FP32.
        let mi100 = reference_tflops(&dev("mi100"), rt, Dtype::Fp16, None).unwrap() * 0.125;
        assert!((mi100 - 23.1).abs() < 0.1, "{mi100}");
        // Not: builds from February 2025 (rocBLAS, then MFMA MMQ), an
        // unknown build (planned as the newest), 16-bit weights (rocBLAS at
        // every build), Vulkan, another runtime, GCN and RDNA (their
        // datasheet 16-bit rate is already the vector units').
        assert_eq!(
            cdna_vector_ratio(&mi300x, rt, Quant::Q4_0, None, from),
            None
        );
        assert_eq!(
            cdna_vector_ratio(&mi300x, rt, Quant::Q4_0, None, None),
            None
        );
        assert_eq!(
            cdna_vector_ratio(&mi300x, rt, Quant::Fp16, None, before),
            None
        );
        assert_eq!(
            cdna_vector_ratio(&mi300x, rt, Quant::Q4_0, Some(B::Vulkan), before),
            None
        );
        assert_eq!(
            cdna_vector_ratio(&mi300x, RuntimeKind::Vllm, Quant::Q4_0, None, before),
            None
        );
        for id in ["mi50-16gb", "radeon-pro-w7900", "rx-6700-xt", "h100-sxm"] {
            assert_eq!(
                cdna_vector_ratio(&dev(id), rt, Quant::Q4_0, None, before),
                None,
                "{id}"
            );
        }
        // The plan's prefill fraction carries it.
        let old = fitted_for(&mi300x, rt, Quant::Q4_0, None, before, false);
        let new = fitted_for(&mi300x, rt, Quant::Q4_0, None, from, false);
        let (o, n) = (old.prefill.unwrap(), new.prefill.unwrap());
        assert!((o / n - 0.0625).abs() < 1e-9, "{o} {n}");
        assert_eq!(
            old.prefill_basis.unwrap().vector_reference_ratio,
            Some(0.0625)
        );
        assert_eq!(new.prefill_basis.unwrap().vector_reference_ratio, None);
    }

    #[test]
    fn moe_prefill_factor_follows_the_backend_then_the_runtime() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let table = |b: B| {
            MOE_PREFILL_BACKEND
                .iter()
                .find(|(r, k, _)| *r == rt && *k == b)
                .map(|(.., m)| *m)
        };
        let pooled = per_runtime(MOE_PREFILL, rt);
        let cuda = table(B::Cuda).expect("a fitted CUDA factor");
        let vulkan = table(B::Vulkan).expect("a fitted Vulkan factor");
        assert!(pooled > 1.0 && cuda != pooled && vulkan != pooled);
        // No backend given: the vendor's own.
        assert_eq!(DeviceClass::NvidiaSoc.own_backend(), Some(B::Cuda));
        assert_eq!(DeviceClass::Amd.own_backend(), Some(B::Hip));
        assert_eq!(DeviceClass::Apple.own_backend(), Some(B::Metal));
        assert_eq!(DeviceClass::Cpu.own_backend(), None);
        let gpu = dev("rtx-4090");
        let a = fitted_for(&gpu, rt, Quant::Q4K, None, None, false);
        assert_eq!(
            (a.moe_prefill, a.moe_prefill_backend),
            (cuda, Some(B::Cuda))
        );
        let a = fitted_for(&gpu, rt, Quant::Q4K, Some(B::Vulkan), None, false);
        assert_eq!(
            (a.moe_prefill, a.moe_prefill_backend),
            (vulkan, Some(B::Vulkan))
        );
        // An AMD GPU takes HIP's factor by default (fitted since Nov 2026,
        // with the Strix Halo ROCm rows), Vulkan's when asked.
        let amd = dev("rx-7900-xtx");
        let hip = table(B::Hip).expect("a fitted HIP factor");
        let a = fitted_for(&amd, rt, Quant::Q4K, None, None, false);
        assert_eq!((a.moe_prefill, a.moe_prefill_backend), (hip, Some(B::Hip)));
        let a = fitted_for(&amd, rt, Quant::Q4K, Some(B::Vulkan), None, false);
        assert_eq!(a.moe_prefill, vulkan);
        // A backend without a factor of its own keeps the runtime's.
        let apple = dev("m2-ultra-gpu");
        assert_eq!(
            table(B::Metal),
            None,
            "update: Metal now has its own factor"
        );
        let a = fitted_for(&apple, rt, Quant::Q4K, None, None, false);
        assert_eq!((a.moe_prefill, a.moe_prefill_backend), (pooled, None));
        // Other runtimes and accelerators without a backend: none of these.
        assert_eq!(
            moe_prefill_backend(RuntimeKind::Vllm, DeviceClass::NvidiaConsumer, None),
            None
        );
        assert_eq!(
            moe_prefill_backend(rt, DeviceClass::Other, Some(B::Cuda)),
            None
        );
    }

    #[test]
    fn vulkan_prompts_on_amd_coopmat_gpus_before_the_tuning_take_the_era_factor() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let before = Some(BuildMonth::ym(2026, 1));
        let from = Some(LLAMA_VULKAN_AMD_COOPMAT_TUNING);
        let vk = Some(B::Vulkan);
        // RDNA 3 (gfx1100), 3.5 (gfx1151) and 4 (gfx1201), quantized, Vulkan,
        // a build before February 2026.
        for id in [
            "radeon-pro-w7900",
            "radeon-8060s",
            "ryzen-ai-max-395-128gb",
            "rx-9070-xt",
        ] {
            assert!(
                vulkan_amd_untuned(&dev(id), rt, Quant::Q4K, vk, before),
                "{id}"
            );
            assert!(
                !vulkan_amd_untuned(&dev(id), rt, Quant::Q4K, vk, from),
                "{id}"
            );
            // The newest build (None) is tuned; another backend, a 16-bit
            // prompt and another runtime are not Vulkan's matmul of then.
            assert!(!vulkan_amd_untuned(&dev(id), rt, Quant::Q4K, vk, None));
            assert!(!vulkan_amd_untuned(
                &dev(id),
                rt,
                Quant::Q4K,
                Some(B::Hip),
                before
            ));
            assert!(!vulkan_amd_untuned(&dev(id), rt, Quant::Fp16, vk, before));
            assert!(!vulkan_amd_untuned(
                &dev(id),
                RuntimeKind::Vllm,
                Quant::Q4K,
                vk,
                before
            ));
        }
        // RDNA 2 and older, CDNA, NVIDIA: no cooperative-matrix matmul of
        // that PR's.
        for id in ["rx-6800-xt", "mi300x", "rtx-4090"] {
            assert!(
                !vulkan_amd_untuned(&dev(id), rt, Quant::Q4K, vk, before),
                "{id}"
            );
        }
        // The plan divides the fraction by the fitted factor and names it.
        let k = PREFILL_VULKAN_AMD_ERA
            .iter()
            .find(|(r, _)| *r == rt)
            .map(|(_, f)| *f)
            .expect("fitted");
        let d = dev("radeon-8060s");
        let then = fitted_for(&d, rt, Quant::Q4K, vk, before, false);
        let now = fitted_for(&d, rt, Quant::Q4K, vk, from, false);
        let (tb, nb) = (then.prefill_basis.unwrap(), now.prefill_basis.unwrap());
        assert_eq!(tb.vulkan_amd_era_factor, Some(k));
        assert_eq!(nb.vulkan_amd_era_factor, None);
        assert!((then.prefill.unwrap() * k - now.prefill.unwrap()).abs() < 1e-12);
        assert!((tb.efficiency * k - nb.efficiency).abs() < 1e-12);
    }

    #[test]
    fn prompts_without_int8_mmq_are_old_builds_pre_ampere_gpus_and_vulkan() {
        use crate::plan::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let before = Some(BuildMonth::ym(2024, 5));
        let from = Some(LLAMA_CUDA_MMQ_INT8);
        let ada = dev("rtx-4090");
        // Ampere and later under CUDA: int8 MMQ from July 2024.
        assert!(!without_int8_mmq(&ada, rt, Quant::Q4K, None, None, false));
        assert!(!without_int8_mmq(
            &ada,
            rt,
            Quant::Q4K,
            Some(B::Cuda),
            from,
            false
        ));
        assert!(without_int8_mmq(&ada, rt, Quant::Q4K, None, before, false));
        assert!(without_int8_mmq(
            &ada,
            rt,
            Quant::Q8_0,
            Some(B::Cuda),
            before,
            false
        ));
        // Vulkan's shaders are not MMQ, at any build.
        assert!(without_int8_mmq(
            &ada,
            rt,
            Quant::Q4_0,
            Some(B::Vulkan),
            None,
            false
        ));
        // 16-bit weights run cuBLAS in every era; other runtimes have no MMQ.
        assert!(!without_int8_mmq(
            &ada,
            rt,
            Quant::Fp16,
            None,
            before,
            false
        ));
        assert!(!without_int8_mmq(
            &ada,
            RuntimeKind::Vllm,
            Quant::Q4K,
            None,
            before,
            false
        ));
        // V100 (cuBLAS) and Turing (no gain) at every build.
        for id in ["v100-pcie-32gb", "rtx-2080-ti", "t4"] {
            assert!(
                without_int8_mmq(&dev(id), rt, Quant::Q4K, None, None, false),
                "{id}"
            );
        }
        // Not NVIDIA: no such term.
        for id in ["rx-7900-xtx", "mi300x", "m2-ultra-gpu", "arc-a770"] {
            assert!(
                !without_int8_mmq(&dev(id), rt, Quant::Q4K, None, before, false),
                "{id}"
            );
        }
        // The factor divides the fitted prefill fraction, and the basis says so.
        let k = PREFILL_MMQ_ERA
            .iter()
            .find(|(r, _)| *r == rt)
            .map(|(_, k)| *k)
            .expect("a fitted factor");
        assert!(k > 1.0);
        let now = fitted_for(&ada, rt, Quant::Q4K, None, None, false);
        let then = fitted_for(&ada, rt, Quant::Q4K, None, before, false);
        assert!((now.prefill.unwrap() / then.prefill.unwrap() / k - 1.0).abs() < 1e-9);
        assert_eq!(then.prefill_basis.unwrap().mmq_era_factor, Some(k));
        assert_eq!(now.prefill_basis.unwrap().mmq_era_factor, None);
        assert_eq!(then.decode, now.decode);
    }

    #[test]
    fn the_basis_names_the_cell_and_the_device_factor() {
        let rt = RuntimeKind::LlamaCpp;
        let q = Quant::Q4K;
        let width = FormatWidth::of(q);
        let cell = |c: DeviceClass, w: FormatWidth| fitted_cell(c, rt, w);
        for (class, any) in [
            (DeviceClass::NvidiaConsumer, DeviceClass::NvidiaConsumer),
            (DeviceClass::AmdDatacenter, DeviceClass::Any),
        ] {
            let a = fitted(class, rt, q);
            // Decode: the class's own cell where it has one, else the pool's.
            let want = cell(any, width).filter(|f| f.decode.is_some());
            let b = a.decode_basis.expect("a decode cell applies");
            if let Some(f) = want {
                assert_eq!((b.class, b.width, b.rows), (f.class, f.width, f.rows.0));
                assert_eq!(Some(b.efficiency), f.decode);
            }
            assert_eq!(Some(b.efficiency), a.decode);
            assert!(!b.width_scaled && b.device_rows.is_none());
            let p = a.prefill_basis.expect("a prefill cell applies");
            assert_eq!(Some(p.efficiency), a.prefill);
        }
        // A device with its own factor: the basis carries the scaled
        // fraction and the factor's rows.
        let d = &PlanDevice::from_device_string("1xrtx-4090").unwrap()[0];
        let f = FITTED_DEVICES
            .iter()
            .find(|f| f.spec_id == "rtx-4090" && f.runtime == rt)
            .unwrap();
        let a = fitted_for(d, rt, q, None, None, false);
        let b = a.decode_basis.unwrap();
        assert_eq!(b.device_rows, Some(f.rows.0));
        assert_eq!(Some(b.efficiency), a.decode);
        let class = fitted(DeviceClass::NvidiaConsumer, rt, q).decode.unwrap();
        assert!((b.efficiency - class * f.decode.unwrap()).abs() < 1e-12);
        // Nothing fitted, nothing named.
        let other = fitted(DeviceClass::Other, rt, q);
        assert!(other.decode_basis.is_none() && other.prefill_basis.is_none());
    }

    #[test]
    fn classes_from_spec_entries() {
        let c = |s: &str| DeviceClass::of(&PlanDevice::from_device_string(s).unwrap()[0]);
        assert_eq!(c("1xrtx-4090"), DeviceClass::NvidiaConsumer);
        assert_eq!(c("1xrtx-a6000"), DeviceClass::NvidiaWorkstation);
        assert_eq!(c("1xh100-pcie"), DeviceClass::NvidiaDatacenter);
        assert_eq!(c("1xmi300x"), DeviceClass::AmdDatacenter);
        assert_eq!(c("1xrx-7900-xtx"), DeviceClass::Amd);
        assert_eq!(c("1xm2-ultra-gpu"), DeviceClass::Apple);
        assert_eq!(c("1xgb10"), DeviceClass::NvidiaSoc);
    }

    #[test]
    fn geforce_reference_is_fp16_accumulate() {
        let d = &PlanDevice::from_device_string("1xrtx-4090").unwrap()[0];
        // Ada whitepaper: 165.2 TFLOPS with FP32 accumulate, 330.3 with FP16.
        assert!(
            (reference_tflops(d, RuntimeKind::LlamaCpp, Dtype::Fp16, None).unwrap() - 330.4).abs()
                < 0.01
        );
        // vLLM (PyTorch GEMMs) accumulates in FP32.
        assert_eq!(
            reference_tflops(d, RuntimeKind::Vllm, Dtype::Fp16, None),
            Some(165.2)
        );
    }

    #[test]
    fn device_factor_scales_its_class_cell() {
        for f in FITTED_DEVICES {
            // A format with cells for the factor's runtime (vLLM's fitted
            // rows are 16-bit only).
            let rt = f.runtime;
            let q = if rt == RuntimeKind::LlamaCpp {
                Quant::Q4K
            } else {
                Quant::Bf16
            };
            let d = &PlanDevice::from_device_string(&format!("1x{}", f.spec_id)).unwrap()[0];
            let class = fitted(DeviceClass::of(d), rt, q);
            let own = fitted_for(d, rt, q, None, None, false);
            if let (Some(c), Some(o), Some(k)) = (class.decode, own.decode, f.decode) {
                assert!((o - c * k).abs() < 1e-12, "{}", f.spec_id);
            }
            // A data-center GPU's int8 MMQ prompt: the workstation cell at
            // the per-SM reference, then the device's factor.
            let base = match mmq_reference_ratio(d, rt, q, None, None, false) {
                Some(r) => fitted(DeviceClass::NvidiaWorkstation, rt, q)
                    .prefill
                    .map(|e| e * r),
                None => class.prefill,
            };
            if let (Some(c), Some(o), Some(k)) = (base, own.prefill, f.prefill) {
                assert!((o - c * k).abs() < 1e-12, "{}", f.spec_id);
            }
            // (at the per-layer time of its build: a GPU llama.cpp runs
            // without CUDA graphs takes that of the builds before them)
            let build = decode_build(d, rt, None, None);
            assert_eq!(
                own.decode_layer_s,
                class.decode_layer_s * build_factor(rt, DeviceClass::of(d), build),
                "{}",
                f.spec_id
            );
        }
        // A device without rows of its own keeps its class's cell.
        let (q, rt) = (Quant::Q4K, RuntimeKind::LlamaCpp);
        let d = &PlanDevice::from_device_string("1xrtx-4060").unwrap()[0];
        assert!(FITTED_DEVICES.iter().all(|f| f.spec_id != "rtx-4060"));
        // (with its backend's mixture-of-experts factor, where fitted)
        let mut want = fitted(DeviceClass::NvidiaConsumer, rt, q);
        if let Some((b, m)) = moe_prefill_backend(rt, DeviceClass::NvidiaConsumer, None) {
            want.moe_prefill = m;
            want.moe_prefill_backend = Some(b);
        }
        // (and its class's error on the published runs, in each basis)
        for (basis, prefill) in [
            (&mut want.decode_basis, false),
            (&mut want.prefill_basis, true),
        ] {
            let b = basis.as_mut().expect("fitted");
            assert_eq!(b.accuracy, None);
            b.accuracy = accuracy(rt, DeviceClass::NvidiaConsumer, prefill);
            assert!(b.accuracy.is_some());
        }
        assert_eq!(fitted_for(d, rt, q, None, None, false), want);
    }

    #[test]
    fn another_memory_configuration_of_the_chip_takes_its_factor() {
        let rt = RuntimeKind::LlamaCpp;
        let own = |id: &str| {
            FITTED_DEVICES
                .iter()
                .find(|f| f.spec_id == id && f.runtime == rt)
                .copied()
        };
        // The factor fitted on the 128 GB Ryzen AI Max+ 395 holds for its
        // 64 GB configuration and the bare entry (32 GB): one chip.
        let k = own("ryzen-ai-max-395-128gb").expect("fitted on lhl's rows");
        assert!(own("ryzen-ai-max-395-64gb").is_none());
        for id in ["ryzen-ai-max-395-64gb", "radeon-8060s"] {
            assert_eq!(device_factors(id, rt), (k.decode, k.prefill), "{id}");
        }
        // The 32-core 32 GB M1 Max takes the 32-core 64 GB one's, never the
        // 24-core one's (another chip: fewer cores, a lower rate).
        let k64 = own("m1-max-64gb").unwrap();
        let k24 = own("m1-max-24core-32gb").unwrap();
        assert!(own("m1-max-32gb").is_none());
        assert_eq!(device_factors("m1-max-32gb", rt), (k64.decode, k64.prefill));
        assert_ne!(
            (k24.decode, k24.prefill),
            (k64.decode, k64.prefill),
            "the test needs the two factors to differ"
        );
        // The plan uses it.
        let q = Quant::Q4K;
        let d = &PlanDevice::from_device_string("1xryzen-ai-max-395-64gb").unwrap()[0];
        let class = fitted(DeviceClass::of(d), rt, q);
        let a = fitted_for(d, rt, q, None, None, false);
        assert!((a.prefill.unwrap() - class.prefill.unwrap() * k.prefill.unwrap()).abs() < 1e-12);
    }

    #[test]
    fn gpus_below_ampere_decode_at_the_per_layer_time_of_builds_before_cuda_graphs() {
        use super::super::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let last = BuildMonth::ym(2024, 4);
        let newest = newest_build(rt, DeviceClass::NvidiaConsumer).unwrap();
        assert!(
            newest > last,
            "the fit's newest build is before CUDA graphs"
        );
        let (pascal, turing, ampere) = (dev("gtx-1080-ti"), dev("rtx-2080-ti"), dev("rtx-3090"));
        // Pascal: without graphs at every build, the newest included.
        assert!(without_cuda_graphs(&pascal, rt, None, None));
        assert!(without_cuda_graphs(
            &pascal,
            rt,
            None,
            Some(BuildMonth::ym(2026, 10))
        ));
        assert_eq!(decode_build(&pascal, rt, None, None), Some(last));
        // An older build than that keeps its own month.
        let old = BuildMonth::ym(2023, 12);
        assert_eq!(decode_build(&pascal, rt, None, Some(old)), Some(old));
        // Turing: without them until PR 25749 (2026-08 here), with them after.
        assert!(without_cuda_graphs(
            &turing,
            rt,
            None,
            Some(BuildMonth::ym(2026, 7))
        ));
        assert!(!without_cuda_graphs(
            &turing,
            rt,
            None,
            Some(LLAMA_CUDA_GRAPHS_VOLTA)
        ));
        assert_eq!(
            decode_build(&turing, rt, None, Some(BuildMonth::ym(2025, 6))),
            Some(last)
        );
        // No build month: the newest the fit measures, which is before 2026-08.
        assert!(newest < LLAMA_CUDA_GRAPHS_VOLTA);
        assert!(without_cuda_graphs(&turing, rt, None, None));
        // Ampere and later, other backends, other runtimes, other vendors: never.
        assert!(!without_cuda_graphs(&ampere, rt, None, None));
        assert_eq!(decode_build(&ampere, rt, None, None), None);
        assert!(!without_cuda_graphs(&pascal, rt, Some(B::Vulkan), None));
        assert!(without_cuda_graphs(&pascal, rt, Some(B::Cuda), None));
        assert!(!without_cuda_graphs(&pascal, RuntimeKind::Vllm, None, None));
        assert!(!without_cuda_graphs(&dev("rx-7900-xtx"), rt, None, None));
        // The per-layer decode time it takes is that build's: the newest's
        // times the decay over the months between.
        let a = fitted_for(&turing, rt, Quant::Q4_0, None, None, false);
        let cell = fitted(DeviceClass::NvidiaConsumer, rt, Quant::Q4_0);
        let f = build_factor(rt, DeviceClass::NvidiaConsumer, Some(last));
        assert!(f > 1.0);
        assert!((a.decode_layer_s - cell.decode_layer_s * f).abs() < 1e-15);
        let a = fitted_for(&turing, rt, Quant::Q4_0, Some(B::Vulkan), None, false);
        assert_eq!(a.decode_layer_s, cell.decode_layer_s);
    }

    #[test]
    fn forced_mmq_runs_dp4a_where_the_build_has_no_tensor_core_mmq() {
        use super::super::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let (ampere, ada, v100) = (dev("rtx-3090"), dev("rtx-4090"), dev("v100-sxm2-32gb"));
        let june = BuildMonth::parse("2024-06");
        let july = BuildMonth::parse("2024-07");
        // Without the option: never on a GPU with tensor cores.
        assert!(!dp4a_mmq(&ampere, rt, Quant::Q6K, None, june, false));
        // With it: a build before the tensor-core MMQ kernels, any GPU with
        // DP4A; from July 2024 only Volta.
        assert!(dp4a_mmq(&ampere, rt, Quant::Q6K, None, june, true));
        assert!(dp4a_mmq(&ada, rt, Quant::Q4_0, Some(B::Cuda), june, true));
        assert!(!dp4a_mmq(&ampere, rt, Quant::Q6K, None, july, true));
        assert!(!dp4a_mmq(&ampere, rt, Quant::Q6K, None, None, true));
        assert!(dp4a_mmq(&v100, rt, Quant::Q4_0, None, None, true));
        assert!(!dp4a_mmq(&v100, rt, Quant::Q4_0, None, None, false));
        // Not for 16-bit weights, another backend or another runtime.
        assert!(!dp4a_mmq(&ampere, rt, Quant::Fp16, None, june, true));
        assert!(!dp4a_mmq(
            &ampere,
            rt,
            Quant::Q6K,
            Some(B::Vulkan),
            june,
            true
        ));
        assert!(!dp4a_mmq(
            &ampere,
            RuntimeKind::Vllm,
            Quant::Q6K,
            None,
            june,
            true
        ));
        // The rate is four times FP32, not the tensor cores' INT8 figure.
        let rate = prompt_rate(&ampere, rt, Quant::Q6K, Dtype::Fp16, None, june, true);
        assert_eq!(rate, ampere.tflops.fp32.map(|r| 4.0 * r));
        assert_ne!(rate, ampere.tflops.int8);
        // The plan takes the DP4A fraction, without the factor before int8
        // MMQ (the default build of that month has it).
        let forced = fitted_for(&ampere, rt, Quant::Q6K, None, june, true);
        let default = fitted_for(&ampere, rt, Quant::Q6K, None, june, false);
        assert!(forced.prefill_basis.unwrap().dp4a);
        assert!(forced.prefill_basis.unwrap().mmq_era_factor.is_none());
        // The fitted DP4A fraction itself: the RTX 3090's own prefill factor
        // (of its tensor-core prompts) does not scale it.
        let (f, _) = prefill_dp4a(rt).expect("a fitted DP4A fraction");
        assert!(device_factors("rtx-3090", rt).1.is_some());
        assert_eq!(forced.prefill, Some(f));
        assert_eq!(forced.prefill_basis.unwrap().device_rows, None);
        assert!(default.prefill_basis.unwrap().mmq_era_factor.is_some());
        assert!(!without_int8_mmq(&ampere, rt, Quant::Q6K, None, june, true));
        // A data-center GPU forced onto DP4A is not referred per SM.
        assert_eq!(
            mmq_reference_ratio(&v100, rt, Quant::Q4_0, None, None, true),
            None
        );
    }

    #[test]
    fn pascal_quantized_prompts_take_the_dp4a_rate_and_fraction() {
        use super::super::runtime::GgmlBackend as B;
        let rt = RuntimeKind::LlamaCpp;
        let (p40, gtx, p100) = (
            dev("tesla-p40"),
            dev("gtx-1080-ti"),
            dev("tesla-p100-pcie-16gb"),
        );
        assert!(dp4a_mmq(&p40, rt, Quant::Q4_0, None, None, false));
        assert!(dp4a_mmq(&gtx, rt, Quant::Q4K, Some(B::Cuda), None, false));
        // Not: 16-bit weights, another backend, another runtime, the P100
        // (6.0: no DP4A), Volta and later.
        assert!(!dp4a_mmq(&p40, rt, Quant::Fp16, None, None, false));
        assert!(!dp4a_mmq(
            &p40,
            rt,
            Quant::Q4_0,
            Some(B::Vulkan),
            None,
            false
        ));
        assert!(!dp4a_mmq(
            &p40,
            RuntimeKind::Vllm,
            Quant::Q4_0,
            None,
            None,
            false
        ));
        assert!(!dp4a_mmq(&p100, rt, Quant::Q4_0, None, None, false));
        assert!(!dp4a_mmq(
            &dev("rtx-2080-ti"),
            rt,
            Quant::Q4_0,
            None,
            None,
            false
        ));
        // The rate: the datasheet INT8 figure (P40: 47 TOPS), else 4 x FP32.
        assert_eq!(
            prompt_rate(&p40, rt, Quant::Q4_0, Dtype::Fp16, None, None, false),
            p40.tflops.int8
        );
        assert!(gtx.tflops.int8.is_none());
        let fp32 = gtx.tflops.fp32.unwrap();
        assert_eq!(
            prompt_rate(&gtx, rt, Quant::Q4_0, Dtype::Fp16, None, None, false),
            Some(4.0 * fp32)
        );
        // Elsewhere the reference rate: none for Pascal's 16-bit weights.
        assert_eq!(
            prompt_rate(&gtx, rt, Quant::Fp16, Dtype::Fp16, None, None, false),
            None
        );
        let ampere = dev("rtx-3090");
        assert_eq!(
            prompt_rate(&ampere, rt, Quant::Q4_0, Dtype::Fp16, None, None, false),
            reference_tflops(&ampere, rt, Dtype::Fp16, None)
        );
        // The fraction: the fitted one, with the pooled cell's per-layer
        // time, and no MMQ era factor on top.
        let (f, n) = prefill_dp4a(rt).expect("a fitted DP4A fraction");
        assert!(f > 0.0 && f < 1.0 && n >= 3, "{f} {n}");
        assert!(!without_int8_mmq(&p40, rt, Quant::Q4_0, None, None, false));
        let a = fitted_for(&p40, rt, Quant::Q4_0, None, None, false);
        assert_eq!(a.prefill, Some(f));
        assert_eq!(
            a.prefill_layer_s,
            fitted(DeviceClass::Any, rt, Quant::Q4_0).prefill_layer_s
        );
        let b = a.prefill_basis.unwrap();
        assert!(b.dp4a && b.mmq_era_factor.is_none() && b.rows == n);
        assert!(!b.width_scaled);
        // A format below 4 bits: the fraction times the pool's ratio of its
        // below-4-bit prefill cell to the 4-to-8-bit one.
        let pooled = |q| fitted(DeviceClass::Any, rt, q).prefill.unwrap();
        let ratio = pooled(Quant::Q3KS) / pooled(Quant::Q4_0);
        assert!(ratio > 0.5 && ratio < 0.95, "{ratio}");
        assert_eq!(dp4a_width_ratio(rt, Quant::Q3KS), ratio);
        assert_eq!(dp4a_width_ratio(rt, Quant::Q4_0), 1.0);
        assert_eq!(dp4a_width_ratio(rt, Quant::Q8_0), 1.0);
        let q3 = fitted_for(&p40, rt, Quant::Q3KS, None, None, false);
        assert!((q3.prefill.unwrap() - f * ratio).abs() < 1e-12);
        let b3 = q3.prefill_basis.unwrap();
        assert!(b3.dp4a && b3.width_scaled && b3.width == FormatWidth::Below4);
        assert!(
            !fitted_for(&ampere, rt, Quant::Q4_0, None, None, false)
                .prefill_basis
                .unwrap()
                .dp4a
        );
    }

    #[test]
    fn build_month_parses_and_prints() {
        let b = BuildMonth::parse("2024-05").unwrap();
        assert_eq!(b, BuildMonth::ym(2024, 5));
        assert_eq!(b.to_string(), "2024-05");
        assert!(BuildMonth::parse("2023-12").unwrap() < b);
        for bad in [
            "2024-13", "2024-00", "24-05", "2024-5", "1999-01", "2024/05", "", "x",
        ] {
            assert_eq!(BuildMonth::parse(bad), None, "{bad}");
        }
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(json, "\"2024-05\"");
        assert_eq!(serde_json::from_str::<BuildMonth>(&json).unwrap(), b);
        assert!(serde_json::from_str::<BuildMonth>("\"May 2024\"").is_err());
    }

    #[test]
    fn older_builds_pay_more_per_layer() {
        let rt = RuntimeKind::LlamaCpp;
        let class = DeviceClass::NvidiaDatacenter;
        let (_, _, decay, newest, oldest) = *DECODE_BUILD_DECAY
            .iter()
            .find(|(r, c, _, _, _)| *r == rt && *c == class)
            .unwrap();
        assert!(decay > 0.0, "the fit found no build-date effect on NVIDIA");
        assert_eq!(newest_build(rt, class), Some(newest));
        assert_eq!(build_factor(rt, class, None), 1.0);
        assert_eq!(build_factor(rt, class, Some(newest)), 1.0);
        // Past the newest build: no extrapolation.
        assert_eq!(build_factor(rt, class, Some(BuildMonth::ym(2999, 1))), 1.0);
        // Before the oldest fitted build: no extrapolation either.
        let age = f64::from(newest.months() - oldest.months()) / 12.0;
        assert!(
            (build_factor(rt, class, Some(BuildMonth::ym(2000, 1))) - (decay * age).exp()).abs()
                < 1e-9
        );
        let two_years = BuildMonth(newest.months() - 24);
        assert!(two_years >= oldest);
        assert_eq!(planned_build(rt, class, None), Some(newest));
        assert_eq!(planned_build(rt, class, Some(two_years)), Some(two_years));
        assert_eq!(
            planned_build(rt, class, Some(BuildMonth::ym(2000, 1))),
            Some(oldest)
        );
        assert_eq!(
            planned_build(rt, class, Some(BuildMonth::ym(2999, 1))),
            Some(newest)
        );
        assert_eq!(planned_build(rt, DeviceClass::Cpu, None), None);
        let f = build_factor(rt, class, Some(two_years));
        assert!((f - (2.0 * decay).exp()).abs() < 1e-12);
        // (16-bit weights: a quantized prompt's cell on a data-center GPU
        // changes with the build, `mmq_reference_ratio`.)
        let d = &PlanDevice::from_device_string("1xh100-pcie").unwrap()[0];
        let now = fitted_for(d, rt, Quant::Fp16, None, None, false);
        let then = fitted_for(d, rt, Quant::Fp16, None, Some(two_years), false);
        assert!((then.decode_layer_s - now.decode_layer_s * f).abs() < 1e-15);
        assert!(then.decode_layer_s > now.decode_layer_s);
        assert_eq!(then.decode, now.decode);
        assert_eq!(then.prefill_layer_s, now.prefill_layer_s);
        // A runtime or class without the term.
        assert_eq!(build_factor(RuntimeKind::Vllm, class, Some(two_years)), 1.0);
        assert_eq!(build_factor(rt, DeviceClass::Cpu, Some(two_years)), 1.0);
    }

    #[test]
    fn tensor_parallel_requests_wait_longer_and_uncalibrated_plans_not_at_all() {
        let vllm = crate::plan::InferenceOptions {
            runtime: RuntimeKind::Vllm,
            ..Default::default()
        };
        let one = request_seconds(&vllm, 1);
        assert_eq!(one, per_runtime(REQUEST_SECONDS, RuntimeKind::Vllm));
        assert!(one > 0.0);
        let tp = per_runtime(REQUEST_SECONDS_TP, RuntimeKind::Vllm);
        assert!(tp > 0.0);
        for degree in [2, 8] {
            assert_eq!(request_seconds(&vllm, degree), one + tp);
        }
        // SGLang has no cells of its own and takes vLLM's.
        let sglang = crate::plan::InferenceOptions {
            runtime: RuntimeKind::Sglang,
            ..vllm.clone()
        };
        assert_eq!(request_seconds(&sglang, 8), one + tp);
        let off = crate::plan::InferenceOptions {
            calibrated_speed: false,
            ..vllm
        };
        assert_eq!(request_seconds(&off, 8), 0.0);
    }

    #[test]
    fn scores_cost_only_unfused_attention() {
        let a = Applied {
            score_bytes: 10.0,
            ..Applied::NONE
        };
        // 32 layers × 32 heads × 4096 tokens × 10 B at 1e12 B/s.
        let t = a.score_seconds(false, 32.0, 32.0, 4096.0, Some(1_000_000_000_000));
        assert!((t - 32.0 * 32.0 * 4096.0 * 10.0 / 1e12).abs() < 1e-15);
        assert_eq!(a.score_seconds(true, 32.0, 32.0, 4096.0, Some(1)), 0.0);
        assert_eq!(a.score_seconds(false, 32.0, 32.0, 4096.0, None), 0.0);
        assert_eq!(
            Applied::NONE.score_seconds(false, 1.0, 1.0, 1.0, Some(1)),
            0.0
        );
    }

    #[test]
    fn held_out_is_a_fifth_and_stable() {
        let n = (0..1000).filter(|i| held_out(&format!("row {i}"))).count();
        assert!((150..250).contains(&n), "{n}");
        assert_eq!(held_out("a,b,c"), held_out("a,b,c\n"));
    }
}
