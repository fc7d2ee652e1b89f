//! MoE expert offload as llama.cpp runs it (`--n-cpu-moe N`, the same as
//! `-ot "blk\.(0|…|N-1)\.ffn_(up|down|gate)_exps=CPU"`): every layer is
//! offloaded to the GPU (`-ngl` all) except the routed experts of the first
//! `N` layers, which stay in host memory; attention, shared experts,
//! routers, norms and the output layer are on the GPU, the token embedding
//! in host memory (llama.cpp keeps the input layer on the CPU,
//! `src/llama-model.cpp`: "there is very little benefit to offloading the
//! input layer, so always keep it on the CPU").
//!
//! # Speed
//!
//! - Decode (batches under 32 tokens): the CPU runs the routed experts of
//!   its layers from host memory — ggml's scheduler offloads an operation on
//!   host-resident weights to the GPU only when its batch is at least 32
//!   (`ggml_backend_cuda_device_offload_op`, `min_batch_size = 32`,
//!   `ggml/src/ggml-cuda/ggml-cuda.cu`). The layers run one after the other,
//!   so per step: `t = GPU bytes ÷ (GPU bandwidth × efficiency) + L × layer
//!   overhead + host expert bytes ÷ (host bandwidth × efficiency)`, where the
//!   bytes read are the weights the batch touches (expected routed experts,
//!   as everywhere in the planner) and the KV cache.
//! - Prefill (ubatches of [`N_UBATCH`] tokens): the same rule offloads the
//!   host experts' matrix products to the GPU, which copies those weights
//!   over PCIe once per ubatch (`--op-offload`, on by default). Per prompt
//!   token: FLOPs ÷ (GPU rate × efficiency) + L × layer overhead + host
//!   expert bytes ÷ one direction of PCIe ÷ ubatch. Unknown PCIe bandwidth
//!   makes the prefill speed unknown.
//!
//! The hidden state crossing PCIe at each CPU layer (`h` × 4 bytes per token
//! each way) is a few kilobytes per token and is not counted.

use serde::{Deserialize, Serialize};

use super::{
    DEFAULT_CONTEXT, DeviceMemory, InferenceOptions, KvDtype, Plan, PlanDevice, Replica, Sizer,
    StageLayout, candidate_levels, largest, replica_fits, runtime_memory,
};
use crate::plan::arch::ModelSpec;
use crate::plan::quant::Quant;
use crate::plan::runtime::RuntimeKind;
use crate::plan::runtime::llamacpp::N_UBATCH;
use crate::plan::speed::{self, Applied, DeviceClass};

/// The split of a MoE expert-offload plan ([`Plan::moe_offload`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MoeOffload {
    /// llama.cpp `--n-cpu-moe N`: the first N layers keep their routed
    /// experts (`blk.i.ffn_{gate,up,down}_exps`) in host memory.
    pub cpu_expert_layers: u32,
    /// How many of those layers have routed experts (a model's leading dense
    /// layers have none).
    pub cpu_moe_layers: u32,
    /// The host CPU's device id.
    pub host_device: String,
    /// The GPU's device id.
    pub gpu_device: String,
    /// Weights in host memory: the routed experts of the CPU layers and the
    /// token embedding.
    pub host_weights_bytes: u64,
    /// Weights on the GPU: everything else.
    pub gpu_weights_bytes: u64,
    /// Bytes one decode step reads from host memory (the routed experts the
    /// batch touches in the CPU layers).
    pub host_bytes_per_step: u64,
    /// Bytes one decode step reads from GPU memory (weights the batch
    /// touches and the KV cache).
    pub gpu_bytes_per_step: u64,
    /// Decode seconds per step spent on the CPU's experts (`None`: host
    /// bandwidth unknown).
    pub host_seconds_per_step: Option<f64>,
    /// Decode seconds per step on the GPU (`None`: its bandwidth unknown).
    pub gpu_seconds_per_step: Option<f64>,
    /// Prefill seconds per prompt token copying the host experts to the GPU
    /// (once per ubatch of [`N_UBATCH`] tokens over one direction of PCIe);
    /// `None` when the GPU's PCIe bandwidth is unknown.
    pub pcie_seconds_per_prompt_token: Option<f64>,
}

/// Memory of one side: (weights, KV, activations, reserve, capacity).
type Side = (u64, u64, u64, u64, u64);

/// The MoE expert-offload plan of `spec` on `gpu` and the host `cpu`: the
/// fewest leading layers whose routed experts must stay in host memory for
/// the rest to fit the GPU (most experts on the GPU is fastest: GPU
/// bandwidth is higher). The level is `opts.quant`, else the
/// highest-fidelity llama.cpp level for which such a split exists. `None`
/// for dense models, when the model fits the GPU whole, or when even every
/// expert in host memory does not fit.
pub(super) fn plan(
    spec: &ModelSpec,
    gpu: &PlanDevice,
    cpu: &PlanDevice,
    opts: &InferenceOptions,
) -> Option<Plan> {
    spec.moe.as_ref()?;
    let layers = spec.num_layers;
    let context = opts
        .context
        .unwrap_or_else(|| {
            spec.max_context
                .unwrap_or(DEFAULT_CONTEXT)
                .min(DEFAULT_CONTEXT)
        })
        .max(1);
    let kv = opts.kv_dtype.unwrap_or(KvDtype::Fp16);
    let levels = match opts.quant {
        Some(q) => vec![q],
        None => candidate_levels(spec, true, RuntimeKind::LlamaCpp),
    };
    let single = Replica {
        stages: vec![vec![gpu]],
    };
    let whole = StageLayout {
        layers: vec![(0, layers)],
    };
    for quant in levels {
        let one = Sizer::new(spec, quant, kv, 1, 1, opts.batch, 1.0);
        if replica_fits(&one, &single, &whole, opts, context, opts.batch) {
            return None;
        }
        // Two memory pools, so the head is counted apart from a tied
        // embedding (llama.cpp duplicates it onto the output device).
        let sizer = Sizer::new(spec, quant, kv, 1, 2, opts.batch, 1.0);
        let fits = |n: u32, context: u64, batch: u64| {
            let (g, c) = sides(&sizer, gpu, cpu, opts, n, context, batch);
            total(g) <= g.4 && total(c) <= c.4
        };
        let Some(n) = (1..=layers).find(|&n| fits(n, context, opts.batch)) else {
            continue;
        };
        return Some(evaluate(
            spec, &sizer, gpu, cpu, opts, quant, kv, n, context, &fits,
        ));
    }
    None
}

fn total(s: Side) -> u64 {
    s.0.saturating_add(s.1)
        .saturating_add(s.2)
        .saturating_add(s.3)
}

fn experts(sizer: &Sizer, n: u32) -> f64 {
    sizer.expert_prefix[n as usize]
}

/// GPU and host memory with the routed experts of the first `n` layers in
/// host memory.
fn sides(
    sizer: &Sizer,
    gpu: &PlanDevice,
    cpu: &PlanDevice,
    opts: &InferenceOptions,
    n: u32,
    context: u64,
    batch: u64,
) -> (Side, Side) {
    let layers = sizer.spec.num_layers;
    let wg = (sizer.weights(0, layers, false, true) - experts(sizer, n)).max(0.0);
    let wc = experts(sizer, n) + sizer.weights(0, 0, true, false);
    let capg = gpu.capacity_bytes.unwrap_or(0);
    let capc = cpu.capacity_bytes.unwrap_or(0);
    let mg = runtime_memory(sizer, gpu, capg, 2, true, wg, opts, context, batch);
    let mc = runtime_memory(sizer, cpu, capc, 2, false, wc, opts, context, batch);
    let kv = sizer.kv(0, layers, context, batch).ceil() as u64;
    (
        (
            wg.ceil() as u64,
            kv,
            mg.activation_bytes,
            mg.reserve_bytes,
            capg,
        ),
        (
            wc.ceil() as u64,
            0,
            mc.activation_bytes,
            mc.reserve_bytes,
            capc,
        ),
    )
}

#[allow(clippy::too_many_arguments)]
fn evaluate(
    spec: &ModelSpec,
    sizer: &Sizer,
    gpu: &PlanDevice,
    cpu: &PlanDevice,
    opts: &InferenceOptions,
    quant: Quant,
    kv: KvDtype,
    n: u32,
    context: u64,
    fits: &dyn Fn(u32, u64, u64) -> bool,
) -> Plan {
    let layers = spec.num_layers;
    let (g, c) = sides(sizer, gpu, cpu, opts, n, context, opts.batch);
    let memory = |id: &str, range: (u32, u32), s: Side| DeviceMemory {
        device: id.to_string(),
        replica: 0,
        stage: 0,
        layers: range,
        weights_bytes: s.0,
        kv_cache_bytes: s.1,
        activation_bytes: s.2,
        overhead_bytes: s.3,
        total_bytes: total(s),
        capacity_bytes: s.4,
        fits: total(s) <= s.4,
    };
    // The host first: llama.cpp's emitter reads the host's stage first.
    let per_device = vec![memory(&cpu.id, (0, n), c), memory(&gpu.id, (0, layers), g)];

    let ctx_cap = spec.max_context.unwrap_or(1 << 24).max(context);
    let max_context = largest(ctx_cap, |x| fits(n, x, 1)).min(spec.max_context.unwrap_or(u64::MAX));
    let max_batch = largest(1 << 20, |b| fits(n, context, b));
    let kv_per_token = sizer.kv(0, layers, 1, 1);
    let kv_tokens = (kv_per_token > 0.0).then(|| {
        (g.4.saturating_sub(g.0)
            .saturating_sub(g.2)
            .saturating_sub(g.3) as f64
            / kv_per_token)
            .floor() as u64
    });

    let applied = |d: &PlanDevice| {
        if opts.calibrated_speed {
            speed::fitted(DeviceClass::of(d), opts.runtime, quant)
        } else {
            Applied {
                decode: None,
                decode_layer_s: 0.0,
                prefill: None,
                prefill_layer_s: 0.0,
            }
        }
    };
    let (fg, fc) = (applied(gpu), applied(cpu));
    let host_read = sizer.expert_read_prefix[n as usize];
    let gpu_read = (sizer.weights_read(0, layers, false, true) - host_read).max(0.0)
        + sizer.kv(0, layers, context, opts.batch);
    let gpu_s = gpu.bandwidth_bytes_per_s.map(|bw| {
        gpu_read / (bw as f64 * fg.decode.unwrap_or(opts.decode_efficiency))
            + f64::from(layers) * fg.decode_layer_s
    });
    let cpu_moe_layers = (0..n).filter(|&i| spec.is_moe_layer(i)).count() as u32;
    let host_s = cpu.bandwidth_bytes_per_s.map(|bw| {
        host_read / (bw as f64 * fc.decode.unwrap_or(opts.decode_efficiency))
            + f64::from(cpu_moe_layers) * fc.decode_layer_s
    });
    let step = gpu_s.zip(host_s).map(|(a, b)| a + b);
    let decode = step.filter(|&t| t > 0.0).map(|t| opts.batch as f64 / t);

    let half = if quant == Quant::Fp16 {
        crate::spec::Dtype::Fp16
    } else {
        crate::spec::Dtype::Bf16
    };
    let compute = quant.compute_dtype(half);
    // PCIe bandwidth is quoted with both directions added.
    let host_expert_bytes = experts(sizer, n);
    let pcie = gpu
        .pcie_bandwidth_bytes_per_s
        .map(|b| host_expert_bytes / (b as f64 / 2.0) / N_UBATCH as f64);
    let prefill = speed::reference_tflops(gpu, opts.runtime, compute)
        .zip(pcie)
        .map(|(rate, copy)| {
            sizer.flops_per_token(0, layers, context, true)
                / (rate * 1e12 * fg.prefill.unwrap_or(opts.prefill_efficiency))
                + f64::from(layers) * fg.prefill_layer_s
                + copy
        })
        .filter(|&t| t > 0.0)
        .map(|t| 1.0 / t);

    Plan {
        tensor_parallel: 1,
        pipeline_parallel: 1,
        data_parallel: 1,
        devices_used: 2,
        quantization: quant,
        kv_dtype: kv,
        per_device,
        max_context_tokens: max_context,
        max_batch,
        decode_tokens_per_s: decode,
        decode_tokens_per_s_per_sequence: decode.map(|d| d / opts.batch.max(1) as f64),
        max_concurrent_sequences: max_batch,
        tensor_parallel_link: None,
        prefill_tokens_per_s: prefill,
        tp_comm_seconds_per_step: None,
        pp_comm_bytes_per_step: 0,
        kv_cache_capacity_tokens: kv_tokens,
        moe_offload: Some(MoeOffload {
            cpu_expert_layers: n,
            cpu_moe_layers,
            host_device: cpu.id.clone(),
            gpu_device: gpu.id.clone(),
            host_weights_bytes: c.0,
            gpu_weights_bytes: g.0,
            host_bytes_per_step: host_read.ceil() as u64,
            gpu_bytes_per_step: gpu_read.ceil() as u64,
            host_seconds_per_step: host_s,
            gpu_seconds_per_step: gpu_s,
            pcie_seconds_per_prompt_token: pcie,
        }),
    }
}
