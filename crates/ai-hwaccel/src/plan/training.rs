//! Training plans: per-device memory (parameters, gradients, fp32 master
//! weights, optimizer states, activations, buffers) for full fine-tuning,
//! LoRA, QLoRA, DPO, PPO and distillation under data (ZeRO 0–3), tensor,
//! pipeline, sequence and expert parallelism with CPU offload and eager or
//! FlashAttention; a throughput estimate with the pipeline bubble; a fit
//! check and the first change that makes a plan fit.
//!
//! # Model states (per device)
//!
//! ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054 §3.1, §5, Figure 1):
//! mixed-precision Adam holds `2Ψ` 16-bit parameters, `2Ψ` 16-bit gradients
//! and `KΨ` optimizer states with `K = 12` (fp32 master weights, momentum,
//! variance, 4 bytes each). Here master weights ([`TrainingDeviceMemory::master_weights_bytes`])
//! and optimizer moments ([`TrainingDeviceMemory::optimizer_bytes`]) are
//! reported apart. ZeRO stage 1 divides master weights and moments by the
//! data-parallel degree `N_d`, stage 2 also gradients, stage 3 also
//! parameters ([`model_states`]). Tensor parallelism `t` and pipeline
//! parallelism `p` divide every model state by `t·p` first (Megatron-LM,
//! Shoeybi et al. 2019, arXiv:1909.08053; embeddings, norms and the
//! uneven last stage are spread evenly: an approximation of at most one
//! layer's share).
//!
//! Precision ([`Precision`]): `fp32` holds 4-byte parameters and gradients
//! and no master copy; `mixed` 2-byte parameters and gradients plus a 4-byte
//! master copy, fp32 moments; `bf16` (pure) 2-byte parameters, gradients and
//! moments, no master copy.
//!
//! Optimizers ([`Optimizer::state_bytes`]): AdamW two moments; 8-bit Adam
//! (Dettmers et al. 2021, arXiv:2110.02861 §2: block-wise quantization with
//! blocks of 2048 and one fp32 absolute maximum per block) one byte per
//! moment plus `4/2048` per moment; SGD none, SGD with momentum one; Lion
//! one moment (Chen et al. 2023, arXiv:2302.06675, Algorithm 2); Adafactor
//! (Shazeer & Stern 2018, arXiv:1804.04235 §3, with β₁ = 0 as in its
//! Algorithm 4) a factored second moment of `rows + cols` per weight matrix
//! and a full one for vectors, computed from the architecture's matrix
//! shapes ([`layer_matrices`]).
//!
//! # Methods
//!
//! - LoRA (Hu et al. 2021, arXiv:2106.09685 §4.1): each targeted `out × in`
//!   matrix gains `A: r × in` and `B: out × r`, `r·(in + out)` trainable
//!   parameters; the base is frozen at the parameter precision.
//! - QLoRA (Dettmers et al. 2023, arXiv:2305.14314 §3): the projection and
//!   expert matrices frozen in NF4 with double quantization
//!   ([`Quant::Nf4`]); embeddings, head, norms and routers 16-bit;
//!   adapters as LoRA.
//! - DPO (Rafailov et al. 2023, arXiv:2305.18290): a trained policy and a
//!   frozen reference copy (none under LoRA/QLoRA: the reference is the
//!   base with adapters disabled, as TRL's `DPOTrainer` does); chosen and
//!   rejected sequences run in one batch, doubling activations.
//! - PPO (Ouyang et al. 2022, arXiv:2203.02155): actor and critic trained,
//!   reward and reference models frozen; actor and critic are updated one
//!   after the other (DeepSpeed-Chat), so activations peak at the larger.
//! - Distillation (Hinton et al. 2015, arXiv:1503.02531): a frozen teacher
//!   (any model) plus the trained student; the teacher's fp32 logits are
//!   held with the student's.
//!
//! Frozen models are spread like parameters (divided by `t·p`, and by `N_d`
//! at ZeRO stage 3, as DeepSpeed partitions every parameter of its engines).
//!
//! # Expert parallelism (MoE)
//!
//! [`TrainingOptions::expert_parallel`] `e` places each MoE layer's routed
//! experts on `e` devices, `E/e` whole experts each (GShard, Lepikhin et al.
//! 2020, arXiv:2006.16668; DeepSpeed-MoE, Rajbhandari et al. 2022,
//! arXiv:2201.05596). As in Megatron-Core (`initialize_model_parallel`:
//! "data_parallel_size is not divisible by expert_model_parallel_size") the
//! expert-parallel groups are carved out of the data-parallel ranks: `e`
//! divides `N_d` and the number of routed experts, and the device count is
//! still `N_d·t·p`. Routed-expert parameters, gradients, master weights and
//! moments are divided by `e` (and by `t·p` like everything else); ZeRO
//! shards them over the `N_d/e` ranks that hold the same experts (the
//! expert-data-parallel group), so at ZeRO stage 3 they end at `1/(N_d·t·p)`
//! with or without expert parallelism. Attention, dense MLPs, shared experts,
//! routers, norms and embeddings are unaffected. Expert biases (none in the
//! catalog's MoE models) stay with the replicated part. Activations assume
//! balanced routing (each device's experts see `k/E` of every rank's tokens,
//! so the per-device expert activations equal the `k` experts counted
//! below); capacity factors, routing imbalance and all-to-all buffers are
//! not modelled.
//!
//! # Activations (Korthikanti et al. 2022, arXiv:2205.05198 §4)
//!
//! Per layer and micro-batch, 16-bit activations, `s` sequence, `b`
//! micro-batch, `h` hidden, `a` heads, `t` tensor parallelism, with eager
//! attention ([`AttentionImpl::Eager`]):
//!
//! - eq. (1), no parallelism: `s·b·h·(34 + 5·a·s/h)`;
//! - eq. (2), tensor parallel: `s·b·h·(10 + 24/t + 5·a·s/(h·t))`;
//! - eq. (4), with sequence parallelism: `s·b·h/t·(34 + 5·a·s/h)`;
//! - eq. (5) / §5, selective recomputation: `s·b·h·34/t` with sequence
//!   parallelism, `s·b·h·(10 + 24/t)` without;
//! - full recomputation: `2·s·b·h` (the layer input only, Table 2);
//!   `2·s·b·h/t` with sequence parallelism (the input is sharded along the
//!   sequence; the paper's table lists only the unsharded case).
//!
//! The `5·a·s²·b/t` term is the attention scores, softmax output, its
//! dropout mask and dropout output. FlashAttention ([`AttentionImpl::Flash`],
//! the default; Dao et al. 2022, arXiv:2205.14135 §3.1, Algorithm 1) never
//! materialises them: the forward pass keeps only the softmax statistics
//! and the backward pass recomputes the scores block by block (the dropout
//! mask from the saved RNG state). FlashAttention-2 (Dao 2023,
//! arXiv:2307.08691 §3.1.1) keeps one fp32 logsumexp per head and query
//! token, `4·a·s·b/t` bytes per layer, which replaces the `5·a·s²·b/t`
//! term; Q, K, V and the attention output it also needs are the ones
//! already counted in the `34`. Selective recomputation recomputes the
//! whole attention core, its statistics included, so it stores neither
//! term under either implementation (the two are not subtracted twice).
//! Flash is the default because it is what the common training stacks run
//! on GPUs that support it: PyTorch's `scaled_dot_product_attention`
//! "attempts to automatically select the most optimal implementation"
//! with the flash backend among those enabled by default (PyTorch
//! documentation); Hugging Face Transformers uses SDPA "by default for
//! torch>=2.1.1 when an implementation is available" (model
//! documentation); Megatron-LM's `--attention-backend` defaults to `auto`,
//! which picks flash or fused attention (`megatron/training/arguments.py`).
//! Sliding-window layers are counted at the full sequence under either.
//!
//! The paper's 34 is 10 (layer-norm inputs 4, attention and MLP inputs 2
//! each, two 1-byte dropout masks) plus 24 sharded by `t` (Q and K 4, V 2,
//! output-projection input 2, and 16 for a `4h` GeLU MLP's input and
//! output). [`activation_bytes_layer`] counts the sharded part from the
//! real shapes: `2·a·d` for Q and for the output-projection input, `2·n_kv·d`
//! each for K and V (GQA: the KV heads one rank holds), `4·i` for a plain
//! MLP (GeLU input and output) and `6·i` for a gated one (gate and up
//! outputs, the SwiGLU input, and its product, the down-projection input,
//! counted the way the paper counts GeLU); a MoE layer counts `k` routed
//! experts' and the shared experts' intermediates. For an MHA model with a
//! `4h` plain MLP this is exactly the paper's formula (tested). Dropout
//! masks are kept as the paper counts them although most current models
//! train without dropout (an over-estimate of `2·s·b·h` bytes per layer).
//!
//! Pipeline parallelism with the 1F1B schedule (Narayanan et al. 2021,
//! arXiv:2104.04473 §2.2.1): stage `i` (from 0) has at most `p − i`
//! micro-batches in flight, and never more than the `m` micro-batches of a
//! step, so the first stage stores `min(p, m) × (its layers)` layers' worth
//! (Korthikanti §4.2: `p` micro-batches, the whole model's worth). The last
//! stage also holds the logits in fp32 for the loss: `4·b·s·V/t` bytes.
//!
//! # Throughput
//!
//! Training FLOPs are `6 × active parameters` per token of a trained model
//! (forward 2, backward 4; Kaplan et al. 2020, arXiv:2001.08361 §2.1),
//! `8 ×` with full recomputation (one more forward), `2 ×` for a frozen
//! model's forward. The backward's 4 are 2 for the input gradients and 2 for
//! the weight gradients (Narayanan et al. 2021, arXiv:2104.04473 §5.1); under
//! LoRA/QLoRA the frozen base needs input gradients only (the adapters'
//! gradients flow through it), so the base costs `4 ×` (`6 ×` with full
//! recomputation) and the adapters `6 ×` their own parameters. QLoRA's
//! NF4 dequantization is not counted. Busy time per step = FLOPs ÷ (devices × dense peak for
//! the compute type × MFU, [`DEFAULT_MFU`]). With `p > 1` stages and `m`
//! micro-batches per step the pipeline idles a fraction
//! `(p − 1)/(m + p − 1)` of the step (GPipe, Huang et al. 2019,
//! arXiv:1811.06965; 1F1B has the same bubble, Narayanan et al. 2021
//! §2.2.1: bubble time `(p − 1)/m` of the ideal time), so the step takes
//! busy time × `(m + p − 1)/m` ([`pipeline_bubble_fraction`]).
//! Communication (data-parallel reductions, ZeRO gathers, expert
//! all-to-all) is in the MFU, not modelled; the interleaved schedule
//! (bubble `(p − 1)/(v·m)`, Narayanan §2.2.2) is not modelled.

use serde::{Deserialize, Serialize};

use super::arch::ModelSpec;
use super::devices::PlanDevice;
use super::quant::Quant;
use crate::spec::Dtype;

/// FLOPs per parameter per token of a forward pass: one multiply and one
/// add per weight (Kaplan et al. 2020, arXiv:2001.08361 §2.1, `C_forward ≈ 2N`).
pub const FORWARD_FLOPS_PER_PARAM: f64 = 2.0;
/// Backward FLOPs per parameter per token for the gradient with respect to
/// a layer's input. The backward pass does twice the forward's FLOPs
/// "since we need to calculate the gradients with respect to both input and
/// weight tensors" (Narayanan et al. 2021, arXiv:2104.04473 §5.1): one
/// forward-sized product for each, 2N each.
pub const INPUT_GRAD_FLOPS_PER_PARAM: f64 = 2.0;
/// Backward FLOPs per parameter per token for the weight gradient (see
/// [`INPUT_GRAD_FLOPS_PER_PARAM`]); skipped for frozen weights.
pub const WEIGHT_GRAD_FLOPS_PER_PARAM: f64 = 2.0;
/// FLOPs per trained parameter per token: forward + both gradients, `6N`.
pub const TRAIN_FLOPS_PER_PARAM: f64 =
    FORWARD_FLOPS_PER_PARAM + INPUT_GRAD_FLOPS_PER_PARAM + WEIGHT_GRAD_FLOPS_PER_PARAM;

/// Model FLOPs utilization assumed for training: PaLM 540B trained at
/// 46.2% MFU (Chowdhery et al. 2022, arXiv:2204.02311 Table 3), without
/// pipeline parallelism (§4), so the figure holds no pipeline bubble; the
/// planner adds the bubble separately ([`pipeline_bubble_fraction`]).
/// Korthikanti et al. (arXiv:2205.05198 Table 5) report 54–56% for
/// Megatron-LM with selective recomputation.
pub const DEFAULT_MFU: f64 = 0.462;

/// Elements per gradient reduction bucket under ZeRO stages 1–3:
/// DeepSpeed's `reduce_bucket_size` default of `5e8` (DeepSpeed
/// configuration JSON documentation, ZeRO optimizations).
pub const ZERO_REDUCE_BUCKET_ELEMENTS: u64 = 500_000_000;

/// Fraction of the other components reserved for allocator fragmentation.
/// 0: no published figure holds across workloads (PyTorch's caching
/// allocator documentation gives none), so none is assumed; set it to
/// reserve some.
pub const DEFAULT_FRAGMENTATION_FRACTION: f64 = 0.0;

/// Bytes the framework itself takes on an NVIDIA GPU before any tensor
/// (CUDA context and PyTorch's loaded kernels): 1,343 MiB, measured by the
/// Hugging Face Transformers guide "Model training anatomy"
/// (`docs/source/en/model_memory_anatomy.md`): after `torch.ones((1, 1))
/// .to("cuda")` NVML reports "GPU memory occupied: 1343 MB" (computed as
/// `used // 1024**2`, so MiB) on a Tesla V100-SXM2 16 GB, driver 460.91.03,
/// CUDA 11.2, where it reported 0 before. CUDA ≥ 11.7 loads kernels lazily
/// and may take less; override it with what your stack measures. Applied by
/// default only to NVIDIA devices ([`default_framework_overhead`]): no
/// comparable measurement is cited for other vendors' runtimes.
pub const CUDA_FRAMEWORK_OVERHEAD_BYTES: u64 = 1343 * 1024 * 1024;

/// The framework overhead assumed for a device when the caller gives none:
/// [`CUDA_FRAMEWORK_OVERHEAD_BYTES`] for an NVIDIA device (by its spec
/// entry's vendor), `None` (unknown; nothing reserved, and the plan warns)
/// otherwise.
pub fn default_framework_overhead(device: &PlanDevice) -> Option<u64> {
    let entry = crate::spec::by_id(device.spec_id.as_deref()?)?;
    (entry.vendor == "nvidia").then_some(CUDA_FRAMEWORK_OVERHEAD_BYTES)
}

/// Fraction of a device's memory above which a plan that fits still warns:
/// what is left (10 %) is less than the run-to-run variation of allocator
/// peaks, so such a plan fits on paper and may not in practice.
pub const TIGHT_FIT_FRACTION: f64 = 0.9;

/// Block size of bitsandbytes' block-wise 8-bit optimizer states
/// (Dettmers et al. 2021, arXiv:2110.02861 §2.1).
pub const ADAM8BIT_BLOCK: u64 = 2048;

/// Numeric precision of training.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// fp32 parameters, gradients and states.
    Fp32,
    /// 16-bit parameters and gradients, fp32 master weights and states.
    Mixed,
    /// bf16 parameters, gradients and states, no master copy.
    Bf16,
}

impl Precision {
    /// Bytes of one parameter (and one gradient).
    pub fn param_bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            Precision::Mixed | Precision::Bf16 => 2,
        }
    }

    /// Bytes of the fp32 master copy per trainable parameter.
    pub fn master_bytes(self) -> u64 {
        match self {
            Precision::Mixed => 4,
            Precision::Fp32 | Precision::Bf16 => 0,
        }
    }

    /// Bytes of one full-precision optimizer moment.
    pub fn moment_bytes(self) -> f64 {
        match self {
            Precision::Bf16 => 2.0,
            Precision::Fp32 | Precision::Mixed => 4.0,
        }
    }

    /// The type matrix multiplies run in.
    pub fn compute_dtype(self) -> Dtype {
        match self {
            Precision::Fp32 => Dtype::Fp32,
            Precision::Mixed | Precision::Bf16 => Dtype::Bf16,
        }
    }
}

/// The optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    /// Adam with decoupled weight decay: two moments.
    Adamw,
    /// bitsandbytes 8-bit Adam: two block-quantized moments.
    Adamw8bit,
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one moment.
    SgdMomentum,
    /// Adafactor: a factored second moment.
    Adafactor,
    /// Lion: one moment.
    Lion,
}

impl Optimizer {
    /// State bytes for a trainable tensor set (master weights excluded).
    pub fn state_bytes(self, t: &TensorSet, precision: Precision) -> f64 {
        let n = t.elements() as f64;
        let m = precision.moment_bytes();
        match self {
            Optimizer::Adamw => 2.0 * m * n,
            // One byte per moment plus one fp32 constant per block.
            Optimizer::Adamw8bit => 2.0 * (1.0 + 4.0 / ADAM8BIT_BLOCK as f64) * n,
            Optimizer::Sgd => 0.0,
            Optimizer::SgdMomentum | Optimizer::Lion => m * n,
            Optimizer::Adafactor => {
                let factored: u64 = t.matrices.iter().map(|x| (x.rows + x.cols) * x.count).sum();
                m * (factored + t.vectors) as f64
            }
        }
    }
}

/// How the weights are trained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Every parameter.
    Full,
    /// Low-rank adapters on a frozen base.
    Lora,
    /// Low-rank adapters on an NF4 base.
    Qlora,
}

/// What is trained and against what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Supervised (pre-)training or fine-tuning of one model.
    Sft,
    /// Direct preference optimization.
    Dpo,
    /// Proximal policy optimization (RLHF).
    Ppo,
    /// Knowledge distillation from a teacher.
    Distill,
}

/// Activation recomputation (Korthikanti et al. 2022).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Store every activation.
    None,
    /// Recompute the attention scores (§5).
    Selective,
    /// Recompute each layer from its input.
    Full,
}

/// How the attention core (scores, softmax, weighted sum) runs, which
/// decides what it stores for the backward pass (module documentation).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AttentionImpl {
    /// A fused FlashAttention-style kernel: one fp32 logsumexp per head and
    /// query token (Dao 2023, arXiv:2307.08691); the default of PyTorch
    /// SDPA, Hugging Face Transformers and Megatron-LM on GPUs that support
    /// it.
    #[default]
    Flash,
    /// Scores, softmax output and dropout materialised: Korthikanti et
    /// al.'s `5·a·s²·b` bytes per layer.
    Eager,
}

impl AttentionImpl {
    /// Bytes the attention core stores per layer for one micro-batch of
    /// `b` sequences of `s` tokens with `heads` query heads on the rank.
    /// Eager: scores and softmax output (2 bytes each), dropout mask (1)
    /// and dropout output (2) per head and query-key pair (Korthikanti et
    /// al. 2022, arXiv:2205.05198 §4.1, the `5·a·s²·b` of eq. 1).
    /// Flash: the fp32 logsumexp per head and query (FlashAttention-2,
    /// Dao 2023, arXiv:2307.08691 §3.1.1: "we only store the logsumexp").
    pub fn core_bytes(self, heads: f64, s: f64, b: f64) -> f64 {
        match self {
            AttentionImpl::Eager => 5.0 * heads * s * s * b,
            AttentionImpl::Flash => 4.0 * heads * s * b,
        }
    }
}

/// Fraction of a step a pipeline of `stages` stages idles with
/// `micro_batches` micro-batches per step: `(p − 1)/(m + p − 1)` (GPipe,
/// Huang et al. 2019, arXiv:1811.06965; the 1F1B schedule has the same,
/// Narayanan et al. 2021, arXiv:2104.04473 §2.2.1). 0 for one stage.
pub fn pipeline_bubble_fraction(stages: u32, micro_batches: u64) -> f64 {
    let p = f64::from(stages.max(1));
    let m = micro_batches.max(1) as f64;
    (p - 1.0) / (m + p - 1.0)
}

/// What moves to CPU memory (ZeRO-Offload, Ren et al. 2021,
/// arXiv:2101.06840; parameters: ZeRO-Infinity, arXiv:2104.07857).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    /// Nothing.
    None,
    /// Master weights and optimizer states.
    Optimizer,
    /// Parameters (needs ZeRO stage 3).
    Params,
    /// Both.
    Both,
}

impl Offload {
    fn optimizer(self) -> bool {
        matches!(self, Offload::Optimizer | Offload::Both)
    }
    fn params(self) -> bool {
        matches!(self, Offload::Params | Offload::Both)
    }
}

/// A projection a LoRA adapter can target (PEFT `target_modules` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Module {
    /// `q_proj` (MLA: `q_proj` or `q_a_proj` + `q_b_proj`).
    Q,
    /// `k_proj` (MLA: the joint `kv_a_proj_with_mqa` + `kv_b_proj`).
    K,
    /// `v_proj` (MLA: as `k`).
    V,
    /// `o_proj`.
    O,
    /// `gate_proj`.
    Gate,
    /// `up_proj` (`fc1` in a plain MLP).
    Up,
    /// `down_proj` (`fc2` in a plain MLP).
    Down,
    /// MoE router (never targeted).
    Router,
}

impl Module {
    /// Every targetable module.
    pub const ALL_LINEAR: [Module; 7] = [
        Module::Q,
        Module::K,
        Module::V,
        Module::O,
        Module::Gate,
        Module::Up,
        Module::Down,
    ];

    /// Parse a short or PEFT name (`q`, `q_proj`).
    pub fn parse(s: &str) -> Option<Module> {
        Some(
            match s.trim().to_ascii_lowercase().trim_end_matches("_proj") {
                "q" => Module::Q,
                "k" => Module::K,
                "v" => Module::V,
                "o" => Module::O,
                "gate" => Module::Gate,
                "up" | "fc1" => Module::Up,
                "down" | "fc2" => Module::Down,
                _ => return None,
            },
        )
    }
}

/// `count` weight matrices of `rows × cols` (output × input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Matrix {
    /// The projection.
    pub module: Module,
    /// Output features.
    pub rows: u64,
    /// Input features.
    pub cols: u64,
    /// How many (experts).
    pub count: u64,
    /// Whether these are routed experts.
    pub expert: bool,
}

/// Trainable tensors: matrices by shape, and other elements (vectors).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TensorSet {
    /// Matrices.
    pub matrices: Vec<Matrix>,
    /// Elements outside matrices (norms, biases).
    pub vectors: u64,
}

impl TensorSet {
    /// Every element.
    pub fn elements(&self) -> u64 {
        self.matrices
            .iter()
            .map(|m| m.rows * m.cols * m.count)
            .sum::<u64>()
            + self.vectors
    }

    /// Split into (everything else, routed-expert matrices): what expert
    /// parallelism leaves whole and what it divides. Vectors stay in the
    /// first part.
    pub fn split_experts(&self) -> (TensorSet, TensorSet) {
        let (expert, other): (Vec<Matrix>, Vec<Matrix>) =
            self.matrices.iter().partition(|m| m.expert);
        (
            TensorSet {
                matrices: other,
                vectors: self.vectors,
            },
            TensorSet {
                matrices: expert,
                vectors: 0,
            },
        )
    }
}

/// The weight matrices of layer `i` (the tensors of
/// [`ModelSpec::layer_params`] minus norms, biases and small vectors).
pub fn layer_matrices(spec: &ModelSpec, i: u32) -> Vec<Matrix> {
    let h = spec.hidden_size;
    let a = u64::from(spec.num_attention_heads);
    let kv = u64::from(spec.num_kv_heads);
    let d = spec.head_dim;
    let m = |module, rows, cols, count, expert| Matrix {
        module,
        rows,
        cols,
        count,
        expert,
    };
    let mut out = Vec::new();
    match &spec.mla {
        Some(x) => {
            let qk = x.qk_nope_head_dim + x.qk_rope_head_dim;
            match x.q_lora_rank {
                Some(r) => {
                    out.push(m(Module::Q, r, h, 1, false));
                    out.push(m(Module::Q, a * qk, r, 1, false));
                }
                None => out.push(m(Module::Q, a * qk, h, 1, false)),
            }
            // The joint K/V projections count as `K` (targeted by k or v).
            out.push(m(
                Module::K,
                x.kv_lora_rank + x.qk_rope_head_dim,
                h,
                1,
                false,
            ));
            out.push(m(
                Module::K,
                a * (x.qk_nope_head_dim + x.v_head_dim),
                x.kv_lora_rank,
                1,
                false,
            ));
            out.push(m(Module::O, h, a * x.v_head_dim, 1, false));
        }
        None => {
            out.push(m(Module::Q, a * d, h, 1, false));
            out.push(m(Module::K, kv * d, h, 1, false));
            out.push(m(Module::V, kv * d, h, 1, false));
            out.push(m(Module::O, h, a * d, 1, false));
        }
    }
    let mlp = |out: &mut Vec<Matrix>, inter: u64, count: u64, expert: bool| {
        if count == 0 {
            return;
        }
        if spec.mlp == super::arch::MlpKind::Gated {
            out.push(m(Module::Gate, inter, h, count, expert));
        }
        out.push(m(Module::Up, inter, h, count, expert));
        out.push(m(Module::Down, h, inter, count, expert));
    };
    match (&spec.moe, spec.is_moe_layer(i)) {
        (Some(x), true) => {
            mlp(
                &mut out,
                x.expert_intermediate_size,
                u64::from(x.num_experts),
                true,
            );
            let shared = x
                .shared_expert_intermediate_size
                .unwrap_or(x.expert_intermediate_size);
            mlp(&mut out, shared, u64::from(x.shared_experts), false);
            out.push(m(Module::Router, u64::from(x.num_experts), h, 1, false));
        }
        _ => mlp(&mut out, spec.intermediate_size, 1, false),
    }
    out
}

/// Every parameter of a model as matrices and vectors (embedding and an
/// untied head as matrices).
pub fn model_tensors(spec: &ModelSpec) -> TensorSet {
    let mut t = TensorSet::default();
    for i in 0..spec.num_layers {
        let mats = layer_matrices(spec, i);
        let in_mats: u64 = mats.iter().map(|m| m.rows * m.cols * m.count).sum();
        t.vectors += spec.layer_params(i).total().saturating_sub(in_mats);
        t.matrices.extend(mats);
    }
    let emb = Matrix {
        module: Module::Router,
        rows: spec.vocab_size,
        cols: spec.hidden_size,
        count: 1,
        expert: false,
    };
    t.matrices.push(emb);
    if !spec.tied_embeddings {
        t.matrices.push(emb);
    }
    t.vectors += spec.other_params();
    t
}

/// LoRA adapters of rank `r` on `targets` (routed experts only when
/// `experts`): `A: r × in` and `B: out × r` per targeted matrix.
pub fn lora_tensors(spec: &ModelSpec, r: u64, targets: &[Module], experts: bool) -> TensorSet {
    let targeted = |m: &Matrix| {
        let hit = match m.module {
            // MLA's joint K/V projections: targeted by k or v.
            Module::K if spec.mla.is_some() => {
                targets.contains(&Module::K) || targets.contains(&Module::V)
            }
            Module::Router => false,
            x => targets.contains(&x),
        };
        hit && (experts || !m.expert)
    };
    let mut t = TensorSet::default();
    for i in 0..spec.num_layers {
        for m in layer_matrices(spec, i).iter().filter(|m| targeted(m)) {
            t.matrices.push(Matrix { rows: r, ..*m });
            t.matrices.push(Matrix { cols: r, ..*m });
        }
    }
    t
}

/// Bytes of the model states one data-parallel rank holds, before tensor
/// and pipeline parallelism.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelStates {
    /// Parameters.
    pub parameters: f64,
    /// Gradients.
    pub gradients: f64,
    /// fp32 master weights.
    pub master_weights: f64,
    /// Optimizer moments.
    pub optimizer: f64,
}

impl ModelStates {
    /// Sum.
    pub fn total(&self) -> f64 {
        self.parameters + self.gradients + self.master_weights + self.optimizer
    }
}

/// ZeRO's per-rank model states (arXiv:1910.02054 §5.1–5.3) for `psi`
/// trainable parameters of `param_bytes` each (gradients alike), master
/// weights of `master_bytes` and optimizer states of `optimizer_bytes`
/// in total, over `dp` ranks at `stage`: stage 1 divides master weights and
/// optimizer states by `dp`, stage 2 also gradients, stage 3 also
/// parameters. With `param_bytes = 2`, `master_bytes = 4` and
/// `optimizer_bytes = 8Ψ` this is Figure 1's `(2 + 2 + K)Ψ`, `2Ψ + 2Ψ + KΨ/N_d`,
/// `2Ψ + (2 + K)Ψ/N_d` and `(2 + 2 + K)Ψ/N_d`, `K = 12`.
pub fn model_states(
    psi: f64,
    param_bytes: f64,
    master_bytes: f64,
    optimizer_bytes: f64,
    stage: u8,
    dp: u32,
) -> ModelStates {
    let nd = f64::from(dp.max(1));
    let div = |from: u8| if stage >= from { nd } else { 1.0 };
    ModelStates {
        parameters: psi * param_bytes / div(3),
        gradients: psi * param_bytes / div(2),
        master_weights: psi * master_bytes / div(1),
        optimizer: optimizer_bytes / div(1),
    }
}

/// Shape of one micro-batch's activations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActivationShape {
    /// Sequence length `s`.
    pub seq: u64,
    /// Micro-batch `b`.
    pub micro_batch: u64,
    /// Tensor parallelism `t`.
    pub tensor_parallel: u32,
    /// Sequence parallelism.
    pub sequence_parallel: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Attention implementation.
    pub attention: AttentionImpl,
}

/// Activation bytes layer `i` stores for one micro-batch (Korthikanti et
/// al. 2022, arXiv:2205.05198 §4, eqs. (1)–(5); adapted to real shapes and
/// to FlashAttention as the module documentation says).
pub fn activation_bytes_layer(spec: &ModelSpec, i: u32, x: &ActivationShape) -> f64 {
    let s = x.seq as f64;
    let b = x.micro_batch as f64;
    let h = spec.hidden_size as f64;
    let t = f64::from(x.tensor_parallel.max(1));
    if x.recompute == Recompute::Full {
        // Table 2: the layer input only; with sequence parallelism the
        // stored input is the rank's sequence shard.
        let sp = if x.sequence_parallel { t } else { 1.0 };
        return 2.0 * s * b * h / sp;
    }
    let a = f64::from(spec.num_attention_heads);
    // Per-rank widths of the tensor-parallel regions (24h/t in the paper).
    let attn = match &spec.mla {
        Some(m) => {
            let qk = (m.qk_nope_head_dim + m.qk_rope_head_dim) as f64;
            let v = m.v_head_dim as f64;
            // Q and K per head at qk, V and the output-projection input at v.
            (2.0 * a * qk + 2.0 * a * qk + 2.0 * a * v + 2.0 * a * v) / t
        }
        None => {
            let d = spec.head_dim as f64;
            let kv_rank = f64::from(spec.kv_heads_per_rank(x.tensor_parallel)) * d;
            2.0 * a * d / t + 2.0 * kv_rank + 2.0 * kv_rank + 2.0 * a * d / t
        }
    };
    let per_inter = match spec.mlp {
        super::arch::MlpKind::Gated => 6.0,
        super::arch::MlpKind::Plain => 4.0,
    };
    let inter = match (&spec.moe, spec.is_moe_layer(i)) {
        (Some(m), true) => {
            f64::from(m.experts_per_token) * m.expert_intermediate_size as f64
                + f64::from(m.shared_experts)
                    * m.shared_expert_intermediate_size
                        .unwrap_or(m.expert_intermediate_size) as f64
        }
        _ => spec.intermediate_size as f64,
    };
    let sharded = attn + per_inter * inter / t;
    // MLA's compressed latent feeds kv_b_proj on every rank.
    let latent = spec
        .mla
        .as_ref()
        .map_or(0.0, |m| 2.0 * m.kv_lora_rank as f64);
    let unsharded = 10.0 * h + latent;
    let linear = if x.sequence_parallel {
        s * b * (unsharded / t + sharded)
    } else {
        s * b * (unsharded + sharded)
    };
    // The attention core over the rank's `a/t` heads: eager scores
    // (eq. 1's `5·a·s²·b/t`) or FlashAttention's logsumexp (`4·a·s·b/t`).
    // Selective recomputation reruns the whole core, statistics included.
    match x.recompute {
        Recompute::Selective => linear,
        _ => linear + x.attention.core_bytes(a / t, s, b),
    }
}

/// Everything a training plan depends on. Defaults: full SFT, AdamW,
/// mixed precision, ZeRO 0, one device, micro-batch 1, sequence 2048,
/// FlashAttention, no expert parallelism, no recomputation or offload,
/// LoRA rank 16 on every linear projection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrainingOptions {
    /// How the weights are trained.
    pub method: Method,
    /// What is trained.
    pub objective: Objective,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Precision.
    pub precision: Precision,
    /// ZeRO stage 0–3 (FSDP `FULL_SHARD` = 3, `SHARD_GRAD_OP` = 2).
    pub zero_stage: u8,
    /// Data-parallel degree `N_d`; `None`: the devices left after `t·p`
    /// (1 without devices).
    pub data_parallel: Option<u32>,
    /// Tensor parallelism `t`.
    pub tensor_parallel: u32,
    /// Pipeline stages `p`.
    pub pipeline_parallel: u32,
    /// Sequence parallelism (with tensor parallelism).
    pub sequence_parallel: bool,
    /// Sequences per micro-batch `b`.
    pub micro_batch: u64,
    /// Tokens per sequence `s`.
    pub seq: u64,
    /// Micro-batches per step per data-parallel rank `m` (gradient
    /// accumulation steps); `None`: `p` (the fewest that keep every 1F1B
    /// stage busy in the steady state). Sets the pipeline bubble
    /// `(p − 1)/(m + p − 1)` and caps the micro-batches in flight.
    pub gradient_accumulation: Option<u64>,
    /// Expert-parallel degree `e` of MoE layers: divides the routed experts
    /// and the data-parallel degree (module documentation); 1: none.
    pub expert_parallel: u32,
    /// Recomputation.
    pub recompute: Recompute,
    /// Attention implementation (what the attention core stores).
    pub attention: AttentionImpl,
    /// CPU offload.
    pub offload: Offload,
    /// LoRA rank.
    pub lora_rank: u64,
    /// LoRA target projections.
    pub lora_targets: Vec<Module>,
    /// Whether LoRA also targets each routed expert.
    pub lora_experts: bool,
    /// Distillation teacher (default: the model itself).
    pub teacher: Option<ModelSpec>,
    /// PPO critic and reward architecture (default: the model itself).
    pub critic: Option<ModelSpec>,
    /// Model FLOPs utilization.
    pub mfu: f64,
    /// Fragmentation reserve as a fraction of the other components.
    pub fragmentation_fraction: f64,
    /// Framework bytes per device; `None`: each device's
    /// [`default_framework_overhead`].
    pub framework_overhead_bytes: Option<u64>,
}

impl Default for TrainingOptions {
    fn default() -> Self {
        TrainingOptions {
            method: Method::Full,
            objective: Objective::Sft,
            optimizer: Optimizer::Adamw,
            precision: Precision::Mixed,
            zero_stage: 0,
            data_parallel: None,
            tensor_parallel: 1,
            pipeline_parallel: 1,
            sequence_parallel: false,
            micro_batch: 1,
            seq: 2048,
            gradient_accumulation: None,
            expert_parallel: 1,
            recompute: Recompute::None,
            attention: AttentionImpl::Flash,
            offload: Offload::None,
            lora_rank: 16,
            lora_targets: Module::ALL_LINEAR.to_vec(),
            lora_experts: false,
            teacher: None,
            critic: None,
            mfu: DEFAULT_MFU,
            fragmentation_fraction: DEFAULT_FRAGMENTATION_FRACTION,
            framework_overhead_bytes: None,
        }
    }
}

/// A request that cannot be planned, naming the option at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
#[error("invalid training options: {option}: {reason}")]
pub struct TrainingError {
    /// The option (`tensor_parallel`).
    pub option: &'static str,
    /// Why.
    pub reason: String,
}

/// Longest sequence planned: 100 M tokens, ten times the longest context a
/// released model advertises (Llama 4 Scout, 10 M).
pub const MAX_SEQ: u64 = 100_000_000;

/// Most sequences per micro-batch, and most micro-batches per step. With
/// [`MAX_SEQ`] and [`crate::spec::MAX_DEVICES`] data-parallel ranks the
/// tokens per step can still pass 2^64, so that product is checked too.
pub const MAX_MICRO_BATCH: u64 = 65_536;

/// Largest LoRA rank: 65,536, past the hidden size of every catalog model.
pub const MAX_LORA_RANK: u64 = 65_536;

/// Largest framework overhead per device: 1 TiB, above the memory of any
/// accelerator in the spec database.
pub const MAX_FRAMEWORK_OVERHEAD_BYTES: u64 = 1 << 40;

fn err(option: &'static str, reason: impl Into<String>) -> TrainingError {
    TrainingError {
        option,
        reason: reason.into(),
    }
}

/// One model taking part in training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelRole {
    /// `policy`, `reference`, `critic`, `reward`, `teacher`, `student`.
    pub role: String,
    /// Model name.
    pub model: String,
    /// Its parameters.
    pub parameters: u64,
    /// Whether it is trained.
    pub trainable: bool,
    /// Parameters trained (adapters under LoRA).
    pub trainable_parameters: u64,
}

/// Memory of one kind of device in the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrainingDeviceMemory {
    /// `every rank`, `first stage` or `last stage`.
    pub role: String,
    /// Pipeline stage.
    pub stage: u32,
    /// Parameters (trainable and frozen) on the device.
    pub parameters_bytes: u64,
    /// Gradients.
    pub gradients_bytes: u64,
    /// Optimizer moments.
    pub optimizer_bytes: u64,
    /// fp32 master weights.
    pub master_weights_bytes: u64,
    /// Activations stored for the backward pass, and logits.
    pub activations_bytes: u64,
    /// Communication buckets, the gathered layer under ZeRO-3,
    /// fragmentation reserve and framework overhead.
    pub other_bytes: u64,
    /// Sum of the above.
    pub total_bytes: u64,
    /// Of parameters, gradients, optimizer moments and master weights
    /// above: those of routed experts (divided by the expert-parallel
    /// degree). 0 for a dense model.
    pub expert_states_bytes: u64,
    /// Bytes moved to CPU memory by offload (not in the total).
    pub offloaded_bytes: u64,
    /// Device memory (the smallest device used), when devices are given.
    pub capacity_bytes: Option<u64>,
    /// `total_bytes <= capacity_bytes`.
    pub fits: Option<bool>,
}

/// The first change that makes a plan fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Suggestion {
    /// What to change.
    pub change: String,
    /// The options with the change.
    pub options: TrainingOptions,
    /// Devices it needs.
    pub devices: u32,
    /// Largest per-device total with it.
    pub total_bytes: u64,
}

/// The planner's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrainingPlan {
    /// The trained model.
    pub model: String,
    /// Whether its architecture is approximate.
    pub approximate: bool,
    /// The models taking part.
    pub models: Vec<ModelRole>,
    /// Parameters trained over all models.
    pub trainable_parameters: u64,
    /// Data-parallel degree.
    pub data_parallel: u32,
    /// Devices used: `N_d · t · p`.
    pub devices_used: u32,
    /// Memory per device role.
    pub per_device: Vec<TrainingDeviceMemory>,
    /// Largest per-device total.
    pub total_bytes: u64,
    /// Smallest device memory, when devices are given.
    pub capacity_bytes: Option<u64>,
    /// Whether every device fits, when devices are given.
    pub fits: Option<bool>,
    /// Micro-batches per step per data-parallel rank `m`.
    pub micro_batches: u64,
    /// Fraction of a step the pipeline idles, `(p − 1)/(m + p − 1)`; 0
    /// without pipeline parallelism.
    pub pipeline_bubble_fraction: f64,
    /// Tokens per optimizer step over all ranks.
    pub tokens_per_step: u64,
    /// Training FLOPs per step.
    pub flops_per_step: f64,
    /// Seconds per step, the pipeline bubble included; `None` without
    /// devices or a known peak rate.
    pub step_seconds: Option<f64>,
    /// Tokens per second.
    pub tokens_per_s: Option<f64>,
    /// When it does not fit: the first change that does.
    pub suggestion: Option<Suggestion>,
    /// Things to know.
    pub warnings: Vec<String>,
    /// The options planned with.
    pub options: TrainingOptions,
}

/// One model's states before any division.
struct Held {
    trainable: TensorSet,
    frozen_bytes: f64,
    /// The part of `frozen_bytes` in routed experts.
    frozen_expert_bytes: f64,
    spec: ModelSpec,
    role: &'static str,
    active_params: u64,
}

/// Elements of a model's routed-expert matrices (what expert parallelism
/// divides).
pub fn routed_expert_elements(spec: &ModelSpec) -> u64 {
    (0..spec.num_layers)
        .flat_map(|i| layer_matrices(spec, i))
        .filter(|m| m.expert)
        .map(|m| m.rows * m.cols * m.count)
        .sum()
}

/// Bytes of a frozen copy of `spec`, and the part of them in routed
/// experts.
fn frozen_bytes(spec: &ModelSpec, method: Method, precision: Precision) -> (f64, f64) {
    let experts = routed_expert_elements(spec) as f64;
    match method {
        Method::Qlora => {
            let nf4 = Quant::Nf4.bits_per_weight() / 8.0;
            let quantizable: u64 = (0..spec.num_layers)
                .map(|i| spec.layer_params(i).quantizable())
                .sum();
            (
                quantizable as f64 * nf4 + (spec.parameters() - quantizable) as f64 * 2.0,
                experts * nf4,
            )
        }
        _ => {
            let pb = precision.param_bytes() as f64;
            (spec.parameters() as f64 * pb, experts * pb)
        }
    }
}

fn trained(spec: &ModelSpec, role: &'static str, o: &TrainingOptions) -> Held {
    match o.method {
        Method::Full => Held {
            trainable: model_tensors(spec),
            frozen_bytes: 0.0,
            frozen_expert_bytes: 0.0,
            spec: spec.clone(),
            role,
            active_params: spec.active_parameters(),
        },
        Method::Lora | Method::Qlora => {
            let (frozen_bytes, frozen_expert_bytes) = frozen_bytes(spec, o.method, o.precision);
            Held {
                trainable: lora_tensors(spec, o.lora_rank, &o.lora_targets, o.lora_experts),
                frozen_bytes,
                frozen_expert_bytes,
                spec: spec.clone(),
                role,
                active_params: spec.active_parameters(),
            }
        }
    }
}

fn frozen(spec: &ModelSpec, role: &'static str, o: &TrainingOptions) -> Held {
    let method = if o.method == Method::Qlora {
        Method::Qlora
    } else {
        Method::Full
    };
    let (frozen_bytes, frozen_expert_bytes) = frozen_bytes(spec, method, o.precision);
    Held {
        trainable: TensorSet::default(),
        frozen_bytes,
        frozen_expert_bytes,
        spec: spec.clone(),
        role,
        active_params: spec.active_parameters(),
    }
}

fn check(
    spec: &ModelSpec,
    o: &TrainingOptions,
    devices: &[PlanDevice],
) -> Result<u32, TrainingError> {
    if o.zero_stage > 3 {
        return Err(err("zero_stage", format!("{} is not 0-3", o.zero_stage)));
    }
    spec.tensor_parallel_legal(o.tensor_parallel)
        .map_err(|e| err("tensor_parallel", e))?;
    if o.pipeline_parallel == 0 || o.pipeline_parallel > spec.num_layers {
        return Err(err(
            "pipeline_parallel",
            format!(
                "{} is outside 1..={} (layers)",
                o.pipeline_parallel, spec.num_layers
            ),
        ));
    }
    if o.micro_batch == 0 || o.seq == 0 {
        return Err(err(
            "micro_batch",
            "micro-batch and sequence must be positive",
        ));
    }
    if o.method != Method::Full && (o.lora_rank == 0 || o.lora_targets.is_empty()) {
        return Err(err("lora_rank", "LoRA needs a positive rank and a target"));
    }
    if o.offload.params() && o.zero_stage < 3 {
        return Err(err("offload", "parameter offload needs ZeRO stage 3"));
    }
    if !(o.mfu > 0.0 && o.mfu <= 1.0) {
        return Err(err("mfu", format!("{} is not in (0, 1]", o.mfu)));
    }
    if !(0.0..1.0).contains(&o.fragmentation_fraction) {
        return Err(err("fragmentation_fraction", "not in [0, 1)"));
    }
    // Bounds that keep every product below u64 (tokens per step, bytes per
    // device) and planning time small; each is far past any real run.
    let bounds: [(&'static str, u64, u64); 6] = [
        ("seq", o.seq, MAX_SEQ),
        ("micro_batch", o.micro_batch, MAX_MICRO_BATCH),
        (
            "gradient_accumulation",
            o.gradient_accumulation.unwrap_or(1),
            MAX_MICRO_BATCH,
        ),
        ("lora_rank", o.lora_rank, MAX_LORA_RANK),
        (
            "framework_overhead_bytes",
            o.framework_overhead_bytes.unwrap_or(0),
            MAX_FRAMEWORK_OVERHEAD_BYTES,
        ),
        (
            "data_parallel",
            u64::from(o.data_parallel.unwrap_or(1)),
            u64::from(crate::spec::MAX_DEVICES),
        ),
    ];
    for (option, value, max) in bounds {
        if value > max {
            return Err(err(option, format!("{value} is more than {max}")));
        }
    }
    for (option, value) in [
        ("tensor_parallel", o.tensor_parallel),
        ("pipeline_parallel", o.pipeline_parallel),
        ("expert_parallel", o.expert_parallel),
    ] {
        if value > crate::spec::MAX_DEVICES {
            return Err(err(
                option,
                format!("{value} is more than {}", crate::spec::MAX_DEVICES),
            ));
        }
    }
    if o.gradient_accumulation == Some(0) {
        return Err(err("gradient_accumulation", "0 micro-batches per step"));
    }
    let e = o.expert_parallel;
    if e == 0 {
        return Err(err("expert_parallel", "0"));
    }
    if e > 1 {
        if spec.moe.is_none() {
            return Err(err(
                "expert_parallel",
                format!("{e}: {} has no routed experts", spec.name),
            ));
        }
        // Every MoE model held is split the same way.
        let critic = (o.objective == Objective::Ppo)
            .then_some(o.critic.as_ref())
            .flatten();
        let teacher = (o.objective == Objective::Distill)
            .then_some(o.teacher.as_ref())
            .flatten();
        for m in [Some(spec), critic, teacher].into_iter().flatten() {
            if let Some(x) = &m.moe
                && x.num_experts % e != 0
            {
                return Err(err(
                    "expert_parallel",
                    format!(
                        "{e} does not divide the {} routed experts of {}",
                        x.num_experts, m.name
                    ),
                ));
            }
        }
    }
    let tp_pp = o.tensor_parallel * o.pipeline_parallel;
    let dp = match o.data_parallel {
        Some(0) => return Err(err("data_parallel", "0")),
        Some(d) => d,
        // The fewest ranks that hold the expert-parallel groups.
        None if devices.is_empty() => e,
        None => (devices.len() as u32 / tp_pp).max(1),
    };
    if dp % e != 0 {
        return Err(err(
            "expert_parallel",
            format!(
                "{e} does not divide the data-parallel degree {dp} \
                 (expert-parallel groups are made of data-parallel ranks)"
            ),
        ));
    }
    if !devices.is_empty() && u64::from(dp) * u64::from(tp_pp) > devices.len() as u64 {
        return Err(err(
            "data_parallel",
            format!(
                "{dp} × {} × {} needs {} devices, {} given",
                o.tensor_parallel,
                o.pipeline_parallel,
                u64::from(dp) * u64::from(tp_pp),
                devices.len()
            ),
        ));
    }
    let micro_batches = o
        .gradient_accumulation
        .unwrap_or(u64::from(o.pipeline_parallel));
    let tokens = [micro_batches, u64::from(dp), o.seq]
        .into_iter()
        .try_fold(o.micro_batch, u64::checked_mul);
    if tokens.is_none() {
        return Err(err(
            "micro_batch",
            "micro-batch × sequence × micro-batches × data-parallel ranks overflows 64 bits",
        ));
    }
    Ok(dp)
}

/// Plan training of `spec` on `devices` (empty: memory only, no fit check):
/// memory per device by component, whether it fits, tokens per second, and
/// when it does not fit the cheapest change that does. Errors name the
/// option that does not fit the model or the devices.
/// [`super::plan_training_for`] does the loading steps in one call.
///
/// ```
/// use ai_hwaccel::plan::{Method, PlanDevice, TrainingOptions, load_model, plan_training};
/// let model = load_model("llama-3.1-8b")?;
/// let devices = PlanDevice::from_device_string("1xh100-sxm")?;
/// let full = plan_training(&model.spec, &devices, &TrainingOptions::default())?;
/// assert_eq!(full.fits, Some(false)); // 16 bytes per parameter do not fit 80 GB
/// assert!(full.suggestion.is_some());
/// let lora = TrainingOptions { method: Method::Lora, ..TrainingOptions::default() };
/// assert_eq!(plan_training(&model.spec, &devices, &lora)?.fits, Some(true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan_training(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    o: &TrainingOptions,
) -> Result<TrainingPlan, TrainingError> {
    let mut plan = evaluate(spec, devices, o)?;
    if plan.fits == Some(false) {
        plan.suggestion = suggest(spec, devices, o);
    }
    Ok(plan)
}

fn evaluate(
    spec: &ModelSpec,
    devices: &[PlanDevice],
    o: &TrainingOptions,
) -> Result<TrainingPlan, TrainingError> {
    let dp = check(spec, o, devices)?;
    let mut warnings = Vec::new();
    if spec.approximate {
        warnings.push("the architecture is approximate (a bare size)".to_string());
    }
    if let Some(max) = spec.max_context
        && o.seq > max
    {
        warnings.push(format!(
            "sequence length {} exceeds the model's maximum of {max} tokens",
            o.seq
        ));
    }
    let critic = o.critic.as_ref().unwrap_or(spec);
    let teacher = o.teacher.as_ref().unwrap_or(spec);
    let lora = o.method != Method::Full;
    let mut held = vec![trained(spec, "policy", o)];
    match o.objective {
        Objective::Sft => {}
        Objective::Dpo => {
            if !lora {
                held.push(frozen(spec, "reference", o));
            }
        }
        Objective::Ppo => {
            held.push(trained(critic, "critic", o));
            held.push(frozen(critic, "reward", o));
            if !lora {
                held.push(frozen(spec, "reference", o));
            }
        }
        Objective::Distill => {
            held[0].role = "student";
            held.push(frozen(teacher, "teacher", o));
        }
    }
    let t = o.tensor_parallel;
    let p = o.pipeline_parallel;
    let tp_pp = f64::from(t) * f64::from(p);
    let pb = o.precision.param_bytes() as f64;
    let mut states = ModelStates::default();
    // The routed-expert part of `states`.
    let mut experts = ModelStates::default();
    let mut trainable_total = 0u64;
    // Trainable elements one rank reduces (before ZeRO).
    let mut trainable_rank = 0.0f64;
    let mut largest_layer = 0.0f64;
    for m in &held {
        // Expert parallelism applies to MoE models (checked to divide).
        let e = if m.spec.moe.is_some() {
            o.expert_parallel
        } else {
            1
        };
        let ef = f64::from(e);
        let n = m.trainable.elements() as f64;
        trainable_total += m.trainable.elements();
        let (rest, expert) = m.trainable.split_experts();
        // ZeRO shards the rest over all `N_d` ranks and the routed experts
        // over the `N_d/e` ranks holding the same experts.
        let states_of = |set: &TensorSet, ranks: u32| {
            model_states(
                set.elements() as f64,
                pb,
                o.precision.master_bytes() as f64,
                o.optimizer.state_bytes(set, o.precision),
                o.zero_stage,
                ranks,
            )
        };
        let zero3 = |ranks: u32| {
            if o.zero_stage >= 3 {
                f64::from(ranks)
            } else {
                1.0
            }
        };
        let sr = states_of(&rest, dp);
        let se = states_of(&expert, dp / e);
        // Frozen parameters are sharded like trainable ones.
        let frozen_rest = (m.frozen_bytes - m.frozen_expert_bytes) / zero3(dp);
        let frozen_expert = m.frozen_expert_bytes / ef / zero3(dp / e);
        let me = ModelStates {
            parameters: (se.parameters / ef + frozen_expert) / tp_pp,
            gradients: se.gradients / ef / tp_pp,
            master_weights: se.master_weights / ef / tp_pp,
            optimizer: se.optimizer / ef / tp_pp,
        };
        states.parameters += (sr.parameters + frozen_rest) / tp_pp + me.parameters;
        states.gradients += sr.gradients / tp_pp + me.gradients;
        states.master_weights += sr.master_weights / tp_pp + me.master_weights;
        states.optimizer += sr.optimizer / tp_pp + me.optimizer;
        experts.parameters += me.parameters;
        experts.gradients += me.gradients;
        experts.master_weights += me.master_weights;
        experts.optimizer += me.optimizer;
        trainable_rank += (rest.elements() as f64 + expert.elements() as f64 / ef) / tp_pp;
        // ZeRO-3 gathers a layer's parameters over the ranks sharing them:
        // the rest over `N_d`, the rank's `1/e` of the experts over `N_d/e`.
        let gathered = |ranks: u32| if ranks > 1 { 1.0 } else { 0.0 };
        let layer = (0..m.spec.num_layers)
            .map(|i| {
                let lp = m.spec.layer_params(i);
                (lp.total() - lp.experts) as f64 * gathered(dp)
                    + lp.experts as f64 / ef * gathered(dp / e)
            })
            .fold(0.0, f64::max);
        // The gathered layer at the model's average bytes per parameter.
        let bytes_per = (m.frozen_bytes + n * pb) / m.spec.parameters().max(1) as f64;
        largest_layer = largest_layer.max(layer * bytes_per / f64::from(t));
    }
    let mut offloaded = 0.0;
    if o.offload.optimizer() {
        offloaded += states.master_weights + states.optimizer;
        states.master_weights = 0.0;
        states.optimizer = 0.0;
        experts.master_weights = 0.0;
        experts.optimizer = 0.0;
    }
    if o.offload.params() {
        offloaded += states.parameters;
        states.parameters = 0.0;
        experts.parameters = 0.0;
    }
    let micro_batches = o.gradient_accumulation.unwrap_or(u64::from(p)).max(1);

    // Activations per stage.
    let shape = ActivationShape {
        seq: o.seq,
        micro_batch: o.micro_batch,
        tensor_parallel: t,
        sequence_parallel: o.sequence_parallel,
        recompute: o.recompute,
        attention: o.attention,
    };
    let stage_acts = |m: &ModelSpec, stage: u32| -> f64 {
        let per = m.num_layers.div_ceil(p);
        let a = (stage * per).min(m.num_layers);
        let b = ((stage + 1) * per).min(m.num_layers);
        (a..b).map(|i| activation_bytes_layer(m, i, &shape)).sum()
    };
    let logits =
        |m: &ModelSpec| 4.0 * (o.micro_batch * o.seq) as f64 * m.vocab_size as f64 / f64::from(t);
    let sequences = if o.objective == Objective::Dpo {
        2.0
    } else {
        1.0
    };
    let acts_of = |stage: u32| -> f64 {
        // 1F1B: stage i holds at most p − i micro-batches, and at most the
        // m of a step (Narayanan et al. 2021 §2.2.1).
        let in_flight = u64::from(p - stage).min(micro_batches) as f64;
        let last = stage + 1 == p;
        let trained_acts =
            |m: &ModelSpec| stage_acts(m, stage) * in_flight + if last { logits(m) } else { 0.0 };
        let mut a = trained_acts(spec);
        match o.objective {
            Objective::Ppo => a = a.max(trained_acts(critic)),
            Objective::Distill if last => a += logits(teacher),
            _ => {}
        }
        a * sequences
    };

    // Buffers. ZeRO 0 (PyTorch DDP): its all-reduce buckets copy every
    // gradient unless `gradient_as_bucket_view=True` ("the saved memory
    // size will be equal to the total gradients size", DDP documentation);
    // the default is False. ZeRO 1–3: one reduce bucket. ZeRO 3: the
    // gathered parameters of the largest layer.
    let mut buffers = 0.0;
    if dp > 1 && trainable_total > 0 {
        buffers += if o.zero_stage == 0 {
            trainable_rank * pb
        } else {
            (ZERO_REDUCE_BUCKET_ELEMENTS as f64).min(trainable_rank) * pb
        };
    }
    if o.zero_stage >= 3 && dp > 1 {
        buffers += largest_layer;
    }

    let capacity = if devices.is_empty() {
        None
    } else {
        devices
            .iter()
            .map(|d| d.capacity_bytes)
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().min())
    };
    if !devices.is_empty() && capacity.is_none() {
        warnings.push("a device's memory size is unknown: no fit check".into());
    }
    let overhead = match o.framework_overhead_bytes {
        Some(b) => b,
        None => {
            let defaults: Vec<(&PlanDevice, Option<u64>)> = devices
                .iter()
                .map(|d| (d, default_framework_overhead(d)))
                .collect();
            if let Some((d, _)) = defaults.iter().find(|(_, b)| b.is_none()) {
                warnings.push(format!(
                    "no measured framework overhead (context, kernels) for {}: none reserved; \
                     set it to what your framework measures",
                    d.name
                ));
            }
            defaults.iter().filter_map(|(_, b)| *b).max().unwrap_or(0)
        }
    };
    let stages: Vec<(u32, &str)> = if p == 1 {
        vec![(0, "every rank")]
    } else {
        vec![(0, "first stage"), (p - 1, "last stage")]
    };
    let per_device: Vec<TrainingDeviceMemory> = stages
        .iter()
        .map(|&(stage, role)| {
            let acts = acts_of(stage);
            let base = states.total() + acts + buffers;
            let other = buffers + base * o.fragmentation_fraction + overhead as f64;
            let r = |x: f64| x.ceil() as u64;
            let parts = [
                r(states.parameters),
                r(states.gradients),
                r(states.optimizer),
                r(states.master_weights),
                r(acts),
                r(other),
            ];
            // Saturating: absurd inputs give `u64::MAX` ("does not fit"), not a wrap.
            let total = parts.iter().fold(0u64, |a, &b| a.saturating_add(b));
            TrainingDeviceMemory {
                role: role.to_string(),
                stage,
                parameters_bytes: parts[0],
                gradients_bytes: parts[1],
                optimizer_bytes: parts[2],
                master_weights_bytes: parts[3],
                activations_bytes: parts[4],
                other_bytes: parts[5],
                total_bytes: total,
                expert_states_bytes: r(experts.total()),
                offloaded_bytes: r(offloaded),
                capacity_bytes: capacity,
                fits: capacity.map(|c| total <= c),
            }
        })
        .collect();
    let total_bytes = per_device.iter().map(|d| d.total_bytes).max().unwrap_or(0);
    for d in &per_device {
        if let Some(c) = d.capacity_bytes.filter(|_| d.fits == Some(true)) {
            let used = d.total_bytes as f64 / c as f64;
            if used > TIGHT_FIT_FRACTION {
                warnings.push(format!(
                    "{} uses {:.0}% of a device's memory (over {:.0}%): allocator peaks may \
                     not fit",
                    d.role,
                    used * 100.0,
                    TIGHT_FIT_FRACTION * 100.0
                ));
            }
        }
    }

    // Throughput.
    let tokens_per_step = o.micro_batch * o.seq * micro_batches * u64::from(dp);
    let bubble = pipeline_bubble_fraction(p, micro_batches);
    if p > 1 && micro_batches < u64::from(p) {
        warnings.push(format!(
            "{micro_batches} micro-batches per step keep a {p}-stage pipeline idle {:.0}% \
             of the step; at least {p} fill it",
            bubble * 100.0
        ));
    }
    let recompute = if o.recompute == Recompute::Full {
        FORWARD_FLOPS_PER_PARAM
    } else {
        0.0
    };
    let flops_per_token: f64 = held
        .iter()
        .map(|m| {
            let trained = m.role == "policy" || m.role == "student" || m.role == "critic";
            if !trained {
                return m.active_params as f64 * FORWARD_FLOPS_PER_PARAM;
            }
            // Under LoRA/QLoRA the base weights are frozen: the backward pass
            // computes input gradients (2N) but no weight gradients, so the
            // base costs 4N (module documentation); the adapters cost 6 per
            // parameter like any trained weight.
            let base_backward = if m.frozen_bytes > 0.0 {
                INPUT_GRAD_FLOPS_PER_PARAM
            } else {
                INPUT_GRAD_FLOPS_PER_PARAM + WEIGHT_GRAD_FLOPS_PER_PARAM
            };
            let adapters = if m.frozen_bytes > 0.0 {
                m.trainable.elements() as f64 * TRAIN_FLOPS_PER_PARAM
            } else {
                0.0
            };
            m.active_params as f64 * (FORWARD_FLOPS_PER_PARAM + base_backward + recompute)
                + adapters
        })
        .sum::<f64>()
        * sequences;
    let flops_per_step = flops_per_token * tokens_per_step as f64;
    let used = dp * t * p;
    let rate = devices
        .iter()
        .take(used as usize)
        .map(|d| d.tflops_for(o.precision.compute_dtype()))
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().min_by(f64::total_cmp))
        .filter(|_| !devices.is_empty());
    // Busy time stretched by the bubble: busy = (1 − bubble) × step.
    let step_seconds =
        rate.map(|r| flops_per_step / (f64::from(used) * r * 1e12 * o.mfu) / (1.0 - bubble));
    let models = held
        .iter()
        .map(|m| ModelRole {
            role: m.role.to_string(),
            model: m.spec.name.clone(),
            parameters: m.spec.parameters(),
            trainable: m.trainable.elements() > 0,
            trainable_parameters: m.trainable.elements(),
        })
        .collect();
    let fits = capacity.map(|_| per_device.iter().all(|d| d.fits == Some(true)));
    Ok(TrainingPlan {
        model: spec.name.clone(),
        approximate: spec.approximate,
        models,
        trainable_parameters: trainable_total,
        data_parallel: dp,
        devices_used: used,
        per_device,
        total_bytes,
        capacity_bytes: capacity,
        fits,
        micro_batches,
        pipeline_bubble_fraction: bubble,
        tokens_per_step,
        flops_per_step,
        step_seconds,
        tokens_per_s: step_seconds
            .filter(|&s| s > 0.0)
            .map(|s| tokens_per_step as f64 / s),
        suggestion: None,
        warnings,
        options: o.clone(),
    })
}

/// The first change that fits, tried cumulatively in order: FlashAttention
/// (when eager), higher ZeRO stages, selective then full recomputation, optimizer offload, doubling
/// the data-parallel degree (more devices of the first kind, up to 64×),
/// then LoRA and QLoRA on the given devices.
fn suggest(spec: &ModelSpec, devices: &[PlanDevice], o: &TrainingOptions) -> Option<Suggestion> {
    let fits = |c: &TrainingOptions, devs: &[PlanDevice]| {
        evaluate(spec, devs, c)
            .ok()
            .filter(|p| p.fits == Some(true))
            .map(|p| (p.devices_used, p.total_bytes))
    };
    let found = |change: String, c: TrainingOptions, (devices, total_bytes)| {
        Some(Suggestion {
            change,
            options: c,
            devices,
            total_bytes,
        })
    };
    let mut c = o.clone();
    let mut changes: Vec<String> = Vec::new();
    let dp = check(spec, o, devices).ok()?;
    if c.attention == AttentionImpl::Eager {
        c.attention = AttentionImpl::Flash;
        changes.push("FlashAttention".into());
        if let Some(r) = fits(&c, devices) {
            return found(changes.join(" + "), c, r);
        }
    }
    // ZeRO shards nothing over one data-parallel rank.
    let first_stage = if dp > 1 { o.zero_stage + 1 } else { 4 };
    for stage in first_stage..=3 {
        c.zero_stage = stage;
        changes.retain(|x| !x.starts_with("ZeRO"));
        changes.push(format!("ZeRO stage {stage}"));
        if let Some(r) = fits(&c, devices) {
            return found(changes.join(" + "), c, r);
        }
    }
    for (level, name) in [
        (Recompute::Selective, "selective recomputation"),
        (Recompute::Full, "full recomputation"),
    ] {
        if c.recompute == Recompute::None
            || (level == Recompute::Full && c.recompute != Recompute::Full)
        {
            c.recompute = level;
            changes.retain(|x| !x.ends_with("recomputation"));
            changes.push(name.into());
            if let Some(r) = fits(&c, devices) {
                return found(changes.join(" + "), c, r);
            }
        }
    }
    if !c.offload.optimizer() {
        c.offload = if c.offload.params() {
            Offload::Both
        } else {
            Offload::Optimizer
        };
        changes.push("optimizer offload to CPU".into());
        if let Some(r) = fits(&c, devices) {
            return found(changes.join(" + "), c, r);
        }
    }
    let before_devices = c.clone();
    if let Some(first) = devices.first() {
        let tp_pp = c.tensor_parallel * c.pipeline_parallel;
        let mut dp = dp;
        for _ in 0..6 {
            dp *= 2;
            let n = dp * tp_pp;
            let more: Vec<PlanDevice> = (0..n)
                .map(|k| PlanDevice {
                    id: format!("{}#{k}", first.spec_id.as_deref().unwrap_or(&first.id)),
                    domain: k / 8,
                    ..first.clone()
                })
                .collect();
            let mut d = c.clone();
            d.data_parallel = Some(dp);
            let mut ch = changes.clone();
            if d.zero_stage < 3 {
                // More ranks only help when states are sharded over them.
                d.zero_stage = 3;
                ch.retain(|x| !x.starts_with("ZeRO"));
                ch.push("ZeRO stage 3".into());
            }
            if let Some(r) = fits(&d, &more) {
                ch.push(format!("{n} × {} (data parallel {dp})", first.name));
                return found(ch.join(" + "), d, r);
            }
        }
    }
    for (method, name) in [(Method::Lora, "LoRA"), (Method::Qlora, "QLoRA")] {
        if o.method == Method::Full || (method == Method::Qlora && o.method == Method::Lora) {
            let mut d = before_devices.clone();
            d.method = method;
            let mut ch = changes.clone();
            ch.push(format!("{name} rank {}", d.lora_rank));
            if let Some(r) = fits(&d, devices) {
                return found(ch.join(" + "), d, r);
            }
        }
    }
    None
}
