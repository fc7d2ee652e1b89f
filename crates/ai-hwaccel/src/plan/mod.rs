//! Planning how a model runs on devices: its architecture ([`arch`]), where
//! that comes from ([`catalog`], [`source`]: Hugging Face `config.json`,
//! safetensors and GGUF headers, a bare size), and inference memory,
//! quantization and sharding. Everything here is pure computation over a
//! [`ModelSpec`] and device facts, except [`source::load_model`], which reads
//! model files through [`crate::probe::files`].

pub mod arch;
pub mod catalog;
pub mod cost;
pub mod devices;
pub mod fit;
pub mod inference;
pub mod quant;
pub mod runtime;
pub mod shortcut;
pub mod source;
pub mod speed;
pub mod training;
pub mod training_emit;

pub use arch::{
    ArchError, AttentionKind, LayerInfo, LayerParams, Mla, MlpKind, ModelSpec, Moe, NormKind,
    Projection, SlidingWindow, UnquantizedLayer, UnquantizedParams, VisionKind, VisionTower,
};
pub use devices::PlanDevice;
pub use inference::{
    InferenceOptions, InferencePlan, Plan, plan_inference, plan_offload, plan_offload_gpus,
};
pub use quant::{KvDtype, Quant};
pub use runtime::RuntimeKind;
pub use shortcut::{
    DeviceRef, ModelRef, PlanError, load_model_ref, options_for, plan_inference_for,
    plan_training_for,
};
pub use source::{LoadedModel, ModelError, ModelOrigin, StoredWeights, load_model};
pub use training::{
    AttentionImpl, Method, Module, Objective, Offload, Optimizer, Precision, Recompute,
    TrainingError, TrainingOptions, TrainingPlan, plan_training,
};

/// Most devices a device string may name: [`crate::spec::MAX_DEVICES`].
pub use crate::spec::MAX_DEVICES;
