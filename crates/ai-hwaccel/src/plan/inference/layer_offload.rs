//! llama.cpp's partial offload over several GPUs (`-ngl N` with
//! `--split-mode layer --tensor-split`): the host CPU keeps the embedding
//! and the first layers, the GPUs the last `N` layers in order (the last GPU
//! also the output layer), each GPU as many layers as fit on it, filled from
//! the last GPU backwards. Decode runs the stages one after the other (the
//! pipeline of [`super::evaluate_replica_with`]).

use super::{
    InferenceOptions, KvDtype, Plan, PlanDevice, Replica, Sizer, StageLayout, candidate_levels,
    evaluate_replica_with, plan_offload, replica_fits, requested_context, runtime_memory,
    split_layers,
};
use crate::plan::arch::ModelSpec;
use crate::plan::runtime::RuntimeKind;

/// [`plan_offload`] over one or more GPUs: with one GPU, exactly
/// [`plan_offload`]; with several, a MoE model's expert offload over all of
/// them (every layer on the GPUs, split by layers, the routed experts of
/// the first layers in host memory: `plan::inference::moe_offload`) when it exists,
/// else the layer split above. The level is `opts.quant`, else
/// the highest-fidelity llama.cpp level that leaves at least one layer on a
/// GPU. `None` without a GPU, when the model fits the GPUs alone, or when no
/// level leaves a layer on them.
pub fn plan_offload_gpus(
    spec: &ModelSpec,
    gpus: &[PlanDevice],
    cpu: &PlanDevice,
    opts: &InferenceOptions,
) -> Option<Plan> {
    let spec = &*super::spec_for_options(spec, opts);
    match gpus {
        [] => None,
        [gpu] => plan_offload(spec, gpu, cpu, opts),
        _ => {
            let refs: Vec<&PlanDevice> = gpus.iter().collect();
            if spec.moe.is_some()
                && let Some(p) = super::moe_offload::plan(spec, &refs, cpu, opts)
            {
                return Some(p);
            }
            several(spec, gpus, cpu, opts)
        }
    }
}

fn several(
    spec: &ModelSpec,
    gpus: &[PlanDevice],
    cpu: &PlanDevice,
    opts: &InferenceOptions,
) -> Option<Plan> {
    let layers = spec.num_layers;
    if layers < 2 {
        return None;
    }
    let context = requested_context(spec, opts);
    let kv = opts.kv_dtype.unwrap_or(KvDtype::Fp16);
    let levels = match opts.quant {
        Some(q) => vec![q],
        None => candidate_levels(spec, true, RuntimeKind::LlamaCpp),
    };
    let k = gpus.len() as u32;
    let only_gpus = Replica {
        stages: gpus.iter().map(|g| vec![g]).collect(),
        expert_ranks: 1,
    };
    for quant in levels {
        // The GPUs alone hold it (llama.cpp's layer split): no offload.
        let s = Sizer::new(spec, quant, kv, 1, k, opts.batch, 1.0).for_options(opts);
        if let Some(layout) = split_layers(&s, &only_gpus, opts, context)
            && replica_fits(&s, &only_gpus, &layout, opts, context, opts.batch)
        {
            return None;
        }
        let stages = k + 1;
        let sizer = Sizer::new(spec, quant, kv, 1, stages, opts.batch, 1.0).for_options(opts);
        let stage_fits = |g: &PlanDevice, a: u32, b: u32, last: bool| {
            let cap = g.capacity_bytes.unwrap_or(0);
            let w = sizer.weights(a, b, false, last);
            let kvb = sizer.kv(a, b, context, opts.batch).ceil() as u64;
            // The host holds the first layers: no pipeline parallelism.
            let m = runtime_memory(
                &sizer,
                g,
                cap,
                (stages, false),
                last,
                w,
                opts,
                context,
                opts.batch,
            );
            (w.ceil() as u64)
                .saturating_add(kvb)
                .saturating_add(m.activation_bytes)
                .saturating_add(m.reserve_bytes)
                <= cap
        };
        // From the last GPU backwards, the most layers each holds; the CPU
        // keeps at least the first layer.
        let mut end = layers;
        let mut ranges = Vec::new();
        for (j, g) in gpus.iter().enumerate().rev() {
            let last = j + 1 == gpus.len();
            let mut a = end;
            while a > 1 && stage_fits(g, a - 1, end, last) {
                a -= 1;
            }
            ranges.push((j, a, end));
            end = a;
        }
        ranges.reverse();
        ranges.retain(|&(_, a, b)| b > a);
        if ranges.is_empty() {
            continue;
        }
        let mut stages_of: Vec<Vec<&PlanDevice>> = vec![vec![cpu]];
        let mut layout = vec![(0, end)];
        for &(j, a, b) in &ranges {
            stages_of.push(vec![&gpus[j]]);
            layout.push((a, b));
        }
        let replica = Replica {
            stages: stages_of,
            expert_ranks: 1,
        };
        let layout = StageLayout { layers: layout };
        let check = Sizer::new(
            spec,
            quant,
            kv,
            1,
            replica.stages.len() as u32,
            opts.batch,
            1.0,
        )
        .for_options(opts);
        if !replica_fits(&check, &replica, &layout, opts, context, opts.batch) {
            continue;
        }
        let ev = evaluate_replica_with(
            spec,
            &replica,
            quant,
            kv,
            opts,
            context,
            1.0,
            0,
            Some(layout),
        )
        .ok()?;
        return Some(super::offload_plan(
            ev,
            replica.stages.len() as u32,
            quant,
            kv,
            opts,
            context,
        ));
    }
    None
}
