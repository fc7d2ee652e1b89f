//! MoE expert offload as llama.cpp runs it (`--n-cpu-moe N`, the same as
//! `-ot "blk\.(0|…|N-1)\.ffn_(up|down|gate)_exps=CPU"`): every layer is
//! offloaded to the GPU (`-ngl` all; several GPUs split the layers in
//! order, `--tensor-split`) except the routed experts of the first `N`
//! layers, which stay in host memory; attention, shared experts,
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
//! - Prefill (ubatches of [`n_ubatch`] tokens): the same rule offloads the
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
    DeviceMemory, InferenceOptions, KvDtype, Plan, PlanDevice, Replica, Sizer, StageLayout,
    candidate_levels, largest, replica_fits, requested_context, runtime_memory, split_layers,
};
use crate::plan::arch::ModelSpec;
use crate::plan::quant::Quant;
use crate::plan::runtime::RuntimeKind;
use crate::plan::runtime::llamacpp::n_ubatch;
use crate::plan::speed::{self, Applied};

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
    /// The GPU's device id (with several GPUs, the first: the one prefill
    /// copies the host experts to).
    pub gpu_device: String,
    /// Weights in host memory: the routed experts of the CPU layers and the
    /// token embedding.
    pub host_weights_bytes: u64,
    /// Weights on the GPU(s): everything else (summed over the GPUs).
    pub gpu_weights_bytes: u64,
    /// Bytes one decode step reads from host memory (the routed experts the
    /// batch touches in the CPU layers).
    pub host_bytes_per_step: u64,
    /// Bytes one decode step reads from GPU memory (weights the batch
    /// touches and the KV cache; summed over the GPUs).
    pub gpu_bytes_per_step: u64,
    /// Decode seconds per step spent on the CPU's experts (`None`: host
    /// bandwidth unknown).
    pub host_seconds_per_step: Option<f64>,
    /// Decode seconds per step on the GPU(s), one after the other (`None`:
    /// a bandwidth unknown).
    pub gpu_seconds_per_step: Option<f64>,
    /// Prefill seconds per prompt token copying the host experts to the GPU
    /// (once per 512-token ubatch, llama.cpp's `-ub`, over one direction of PCIe);
    /// `None` when the GPU's PCIe bandwidth is unknown.
    pub pcie_seconds_per_prompt_token: Option<f64>,
}

/// Memory of one device: (weights, KV, activations, reserve, capacity).
type Side = (u64, u64, u64, u64, u64);

/// The MoE expert-offload plan of `spec` on `gpus` (one or more, split by
/// layers in order as `--tensor-split` does, each filled from the last with
/// as many layers as fit) and the host `cpu`: the fewest leading layers
/// whose routed experts must stay in host memory for every layer to fit on
/// the GPUs (most experts on the GPUs is fastest: their bandwidth is
/// higher). The level is `opts.quant`, else the highest-fidelity llama.cpp
/// level for which such a split exists. `None` for dense models, without a
/// GPU, when the model fits the GPUs alone, or when even every expert in
/// host memory does not leave the rest fitting.
pub(super) fn plan(
    spec: &ModelSpec,
    gpus: &[&PlanDevice],
    cpu: &PlanDevice,
    opts: &InferenceOptions,
) -> Option<Plan> {
    spec.moe.as_ref()?;
    if gpus.is_empty() {
        return None;
    }
    let layers = spec.num_layers;
    let context = requested_context(spec, opts);
    let kv = opts.kv_dtype.unwrap_or(KvDtype::Fp16);
    let levels = match opts.quant {
        Some(q) => vec![q],
        None => candidate_levels(spec, true, RuntimeKind::LlamaCpp),
    };
    let k = gpus.len() as u32;
    let only_gpus = Replica {
        stages: gpus.iter().map(|&g| vec![g]).collect(),
        expert_ranks: 1,
    };
    for quant in levels {
        // The GPUs alone hold it: no offload.
        let alone = Sizer::new(spec, quant, kv, 1, k, opts.batch, 1.0).for_options(opts);
        let layout = if k == 1 {
            Some(StageLayout {
                layers: vec![(0, layers)],
            })
        } else {
            split_layers(&alone, &only_gpus, opts, context)
        };
        if layout.is_some_and(|l| replica_fits(&alone, &only_gpus, &l, opts, context, opts.batch)) {
            return None;
        }
        // One memory pool more than the GPUs (the host), so the head is
        // counted apart from a tied embedding (llama.cpp duplicates it onto
        // the output device).
        let sizer = Sizer::new(spec, quant, kv, 1, k + 1, opts.batch, 1.0).for_options(opts);
        let split = Split {
            sizer: &sizer,
            gpus,
            cpu,
            opts,
        };
        // The GPUs' fit is monotonic in N (more experts in host memory frees
        // them): the fewest N by bisection. The host's need grows with N, so
        // if it cannot hold the fewest, no N works.
        let ok = |n: u32| split.assign(n, context, opts.batch).is_some();
        if !ok(layers) {
            continue;
        }
        let (mut lo, mut hi) = (1, layers);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if ok(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let ranges = split.assign(lo, context, opts.batch)?;
        let c = split.cpu_side(lo, context, opts.batch);
        if total(c) > c.4 {
            continue;
        }
        return Some(split.evaluate(spec, quant, kv, lo, &ranges, context));
    }
    None
}

fn total(s: Side) -> u64 {
    s.0.saturating_add(s.1)
        .saturating_add(s.2)
        .saturating_add(s.3)
}

/// One level's sizes on the GPUs and the host.
struct Split<'a> {
    sizer: &'a Sizer<'a>,
    gpus: &'a [&'a PlanDevice],
    cpu: &'a PlanDevice,
    opts: &'a InferenceOptions,
}

impl Split<'_> {
    /// Routed-expert bytes of layers `[a, b)` that are in host memory when
    /// the first `n` layers' experts are (stored, or read per step).
    fn host_experts(&self, a: u32, b: u32, n: u32, read: bool) -> f64 {
        let p = if read {
            &self.sizer.expert_read_prefix
        } else {
            &self.sizer.expert_prefix
        };
        p[b.min(n) as usize] - p[a.min(n) as usize]
    }

    fn stages(&self) -> u32 {
        self.gpus.len() as u32 + 1
    }

    /// GPU `j` holding layers `[a, b)` (the last GPU also the output layer)
    /// without the host experts.
    fn gpu_side(&self, j: usize, a: u32, b: u32, n: u32, context: u64, batch: u64) -> Side {
        let g = self.gpus[j];
        let last = j + 1 == self.gpus.len();
        let w =
            (self.sizer.weights(a, b, false, last) - self.host_experts(a, b, n, false)).max(0.0);
        let cap = g.capacity_bytes.unwrap_or(0);
        let m = runtime_memory(
            self.sizer,
            g,
            cap,
            // Host-kept experts (tensor overrides): no pipeline parallelism.
            (self.stages(), false),
            last,
            w,
            self.opts,
            context,
            batch,
        );
        let kv = self.sizer.kv(a, b, context, batch).ceil() as u64;
        (
            w.ceil() as u64,
            kv,
            m.activation_bytes,
            m.reserve_bytes,
            cap,
        )
    }

    /// The host: the first `n` layers' routed experts and the embedding.
    fn cpu_side(&self, n: u32, context: u64, batch: u64) -> Side {
        let w = self.host_experts(0, n, n, false) + self.sizer.weights(0, 0, true, false);
        let cap = self.cpu.capacity_bytes.unwrap_or(0);
        let m = runtime_memory(
            self.sizer,
            self.cpu,
            cap,
            // Host-kept experts (tensor overrides): no pipeline parallelism.
            (self.stages(), false),
            false,
            w,
            self.opts,
            context,
            batch,
        );
        (w.ceil() as u64, 0, m.activation_bytes, m.reserve_bytes, cap)
    }

    /// Layers per GPU with the first `n` layers' experts in host memory:
    /// from the last GPU backwards, the most layers each holds; `None` when
    /// they do not cover every layer (the host is checked apart).
    fn assign(&self, n: u32, context: u64, batch: u64) -> Option<Vec<(u32, u32)>> {
        let mut end = self.sizer.spec.num_layers;
        let mut ranges = vec![(0, 0); self.gpus.len()];
        for j in (0..self.gpus.len()).rev() {
            let fits = |a: u32| {
                let s = self.gpu_side(j, a, end, n, context, batch);
                total(s) <= s.4
            };
            // Largest count that fits, by bisection over the first layer.
            if !fits(end) {
                return None;
            }
            let (mut lo, mut hi) = (0, end);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            ranges[j] = (lo, end);
            end = lo;
        }
        (end == 0).then_some(ranges)
    }

    fn fits(&self, n: u32, ranges: &[(u32, u32)], context: u64, batch: u64) -> bool {
        let c = self.cpu_side(n, context, batch);
        total(c) <= c.4
            && ranges.iter().enumerate().all(|(j, &(a, b))| {
                let s = self.gpu_side(j, a, b, n, context, batch);
                total(s) <= s.4
            })
    }

    fn evaluate(
        &self,
        spec: &ModelSpec,
        quant: Quant,
        kv: KvDtype,
        n: u32,
        ranges: &[(u32, u32)],
        context: u64,
    ) -> Plan {
        let (sizer, opts, cpu) = (self.sizer, self.opts, self.cpu);
        let batch = opts.batch;
        let memory = |id: &str, stage: u32, range: (u32, u32), s: Side| DeviceMemory {
            device: id.to_string(),
            replica: 0,
            stage,
            layers: range,
            weights_bytes: s.0,
            kv_cache_bytes: s.1,
            activation_bytes: s.2,
            overhead_bytes: s.3,
            total_bytes: total(s),
            capacity_bytes: s.4,
            fits: total(s) <= s.4,
        };
        let c = self.cpu_side(n, context, batch);
        // The host first: llama.cpp's emitter reads the host's stage first.
        let mut per_device = vec![memory(&cpu.id, 0, (0, n), c)];
        let used: Vec<(usize, (u32, u32))> = ranges
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, (a, b))| b > a)
            .collect();
        for (stage, &(j, (a, b))) in used.iter().enumerate() {
            let s = self.gpu_side(j, a, b, n, context, batch);
            per_device.push(memory(&self.gpus[j].id, stage as u32, (a, b), s));
        }

        let ctx_cap = spec.max_context.unwrap_or(1 << 24).max(context);
        let max_context = largest(ctx_cap, |x| self.fits(n, ranges, x, 1))
            .min(spec.max_context.unwrap_or(u64::MAX));
        let max_batch = largest(1 << 20, |b| self.fits(n, ranges, context, b));
        // KV cells: the tightest GPU decides.
        let kv_tokens = used
            .iter()
            .filter_map(|&(j, (a, b))| {
                let per_token = sizer.kv(a, b, 1, 1);
                (per_token > 0.0).then(|| {
                    let s = self.gpu_side(j, a, b, n, context, batch);
                    (s.4.saturating_sub(s.0)
                        .saturating_sub(s.2)
                        .saturating_sub(s.3) as f64
                        / per_token)
                        .floor() as u64
                })
            })
            .min();

        let applied = |d: &PlanDevice| {
            if opts.calibrated_speed {
                super::fitted_under(d, opts, quant)
            } else {
                Applied::NONE
            }
        };
        let half = if quant == Quant::Fp16 {
            crate::spec::Dtype::Fp16
        } else {
            crate::spec::Dtype::Bf16
        };
        let compute = quant.compute_dtype(half);
        // Decode and prefill on the GPUs, stage after stage.
        let mut gpu_read = 0.0;
        let mut gpu_s = Some(0.0);
        let mut prefill_s = Some(0.0);
        for &(j, (a, b)) in &used {
            let g = self.gpus[j];
            let last = j + 1 == self.gpus.len();
            let f = applied(g);
            let read = (sizer.weights_read(a, b, false, last) - self.host_experts(a, b, n, true))
                .max(0.0)
                + sizer.kv(a, b, context, batch);
            gpu_read += read;
            let l = f64::from(b - a);
            gpu_s = gpu_s.zip(g.bandwidth_bytes_per_s).map(|(t, bw)| {
                t + read / (bw as f64 * f.decode.unwrap_or(opts.decode_efficiency))
                    + l * f.decode_layer_s
            });
            // Half the prompt is the mean context a prompt token attends to.
            let mean_context = opts.input_len.unwrap_or(context) / 2;
            let scores = f.score_seconds(
                opts.fused_attention,
                l,
                f64::from(spec.num_attention_heads),
                mean_context as f64,
                g.bandwidth_bytes_per_s,
            );
            prefill_s = prefill_s
                .zip(super::prompt_rate_under(g, opts, quant, compute))
                .map(|(t, rate)| {
                    t + (sizer.flops_per_token(a, b, mean_context, last)
                        + (f.moe_prefill - 1.0) * sizer.routed_flops_per_token(a, b))
                        / (rate * 1e12 * f.prefill.unwrap_or(opts.prefill_efficiency))
                        + l * f.prefill_layer_s
                        + scores
                });
        }
        let fc = applied(cpu);
        let host_read = self.host_experts(0, n, n, true);
        let cpu_moe_layers = (0..n).filter(|&i| spec.is_moe_layer(i)).count() as u32;
        let host_s = cpu.bandwidth_bytes_per_s.map(|bw| {
            host_read / (bw as f64 * fc.decode.unwrap_or(opts.decode_efficiency))
                + f64::from(cpu_moe_layers) * fc.decode_layer_s
        });
        let step = gpu_s.zip(host_s).map(|(a, b)| a + b);
        let decode = step.filter(|&t| t > 0.0).map(|t| batch as f64 / t);
        // Prefill copies the host experts to the first GPU (the scheduler's
        // first backend that takes the operation) once per ubatch; PCIe
        // bandwidth is quoted with both directions added.
        let first = self.gpus[used.first().map_or(0, |u| u.0)];
        let host_expert_bytes = self.host_experts(0, n, n, false);
        let pcie = first
            .pcie_bandwidth_bytes_per_s
            .map(|b| host_expert_bytes / (b as f64 / 2.0) / n_ubatch(opts) as f64);
        let prefill = prefill_s
            .zip(pcie)
            .map(|(t, copy)| t + copy)
            .filter(|&t| t > 0.0)
            .map(|t| 1.0 / t);
        let gpu_weights: u64 = per_device[1..].iter().map(|d| d.weights_bytes).sum();
        let devices_used = per_device.len() as u32;
        let per_sequence = decode.map(|d| d / batch.max(1) as f64);
        let lat = super::latencies(
            prefill,
            per_sequence,
            opts.input_len.unwrap_or(context),
            opts.output_len,
            speed::request_seconds(opts, 1),
            batch,
            super::prompts_in_own_passes(opts),
        );

        Plan {
            tensor_parallel: 1,
            pipeline_parallel: used.len() as u32,
            data_parallel: 1,
            devices_used,
            quantization: quant,
            kv_dtype: kv,
            per_device,
            max_context_tokens: max_context,
            max_batch,
            decode_tokens_per_s: decode,
            decode_tokens_per_s_per_sequence: per_sequence,
            max_concurrent_sequences: max_batch,
            tensor_parallel_link: None,
            prefill_tokens_per_s: prefill,
            tp_comm_seconds_per_step: None,
            pp_comm_bytes_per_step: 0,
            kv_cache_capacity_tokens: kv_tokens,
            kv_cache_blocks: None,
            // The host CPU is a device of this plan (its first entry).
            host_weights_bytes: 0,
            moe_offload: Some(MoeOffload {
                cpu_expert_layers: n,
                cpu_moe_layers,
                host_device: cpu.id.clone(),
                gpu_device: first.id.clone(),
                host_weights_bytes: c.0,
                gpu_weights_bytes: gpu_weights,
                host_bytes_per_step: host_read.ceil() as u64,
                gpu_bytes_per_step: gpu_read.ceil() as u64,
                host_seconds_per_step: host_s,
                gpu_seconds_per_step: gpu_s,
                pcie_seconds_per_prompt_token: pcie,
            }),
            batch,
            ttft_ms: lat.ttft_ms,
            tpot_ms: lat.tpot_ms,
            request_latency_ms: lat.request_latency_ms,
            served_tpot_ms: lat.served_tpot_ms,
            served_ttft_ms: lat.served_ttft_ms,
            expert_parallel: 1,
        }
    }
}
