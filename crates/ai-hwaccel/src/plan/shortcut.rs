//! One-call planning: a model (catalog name, path, size or bare parameter
//! count) on devices (a device string, a registry or a device list), for the
//! common case where the four steps — load the model, make the devices, set
//! the options from the model file, plan — need no tuning in between.
//!
//! ```
//! use ai_hwaccel::plan::{InferenceOptions, plan_inference_for};
//! let plan = plan_inference_for("llama-3.1-8b", "2xh100-sxm", &InferenceOptions::default())?;
//! assert!(plan.feasible);
//! println!("{} at {}: TP {}", plan.model, plan.quantization, plan.plans[0].tensor_parallel);
//! # Ok::<(), ai_hwaccel::plan::PlanError>(())
//! ```

use super::{
    InferenceOptions, InferencePlan, LoadedModel, ModelError, ModelOrigin, PlanDevice, Quant,
    StoredWeights, TrainingOptions, TrainingPlan, load_model, plan_inference, plan_training,
    source, training::TrainingError,
};
use crate::model::Registry;
use crate::spec::SpecError;

/// The model of a one-call plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRef<'a> {
    /// What [`load_model`] takes: a catalog name, a path or a size (`7b`).
    Name(&'a str),
    /// A bare parameter count: a generic dense architecture of that size
    /// (approximate; see [`source::generic_spec`]).
    Parameters(u64),
}

impl<'a> From<&'a str> for ModelRef<'a> {
    fn from(s: &'a str) -> Self {
        ModelRef::Name(s)
    }
}

impl<'a> From<&'a String> for ModelRef<'a> {
    fn from(s: &'a String) -> Self {
        ModelRef::Name(s)
    }
}

impl From<u64> for ModelRef<'_> {
    fn from(n: u64) -> Self {
        ModelRef::Parameters(n)
    }
}

/// The devices of a one-call plan.
#[derive(Clone, Copy, Debug)]
pub enum DeviceRef<'a> {
    /// A device string (`8xh100-sxm`, `2xa100-80gb,1xl4`):
    /// [`PlanDevice::from_device_string`].
    String(&'a str),
    /// The available accelerators of a registry: [`PlanDevice::from_registry`].
    Registry(&'a Registry),
    /// Devices already made.
    List(&'a [PlanDevice]),
}

impl<'a> From<&'a str> for DeviceRef<'a> {
    fn from(s: &'a str) -> Self {
        DeviceRef::String(s)
    }
}

impl<'a> From<&'a Registry> for DeviceRef<'a> {
    fn from(r: &'a Registry) -> Self {
        DeviceRef::Registry(r)
    }
}

impl<'a> From<&'a [PlanDevice]> for DeviceRef<'a> {
    fn from(d: &'a [PlanDevice]) -> Self {
        DeviceRef::List(d)
    }
}

impl<'a> From<&'a Vec<PlanDevice>> for DeviceRef<'a> {
    fn from(d: &'a Vec<PlanDevice>) -> Self {
        DeviceRef::List(d)
    }
}

/// Why a one-call plan failed: the step that failed and its error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The model could not be loaded.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The device string is invalid.
    #[error(transparent)]
    Devices(#[from] SpecError),
    /// The training options do not fit the model or the devices.
    #[error(transparent)]
    Training(#[from] TrainingError),
}

/// Resolve a [`ModelRef`] (warnings in the result, as [`load_model`] gives).
pub fn load_model_ref(model: ModelRef<'_>) -> Result<LoadedModel, ModelError> {
    match model {
        ModelRef::Name(s) => load_model(s),
        ModelRef::Parameters(n) => {
            let size = format!("{}m", n / 1_000_000);
            if !(source::MIN_SIZE_PARAMETERS..=source::MAX_SIZE_PARAMETERS).contains(&n) {
                return Err(ModelError::SizeOutOfRange {
                    name: n.to_string(),
                    parameters: n as f64,
                });
            }
            let (spec, shape_of) = source::generic_spec(&size, n);
            let warning = format!(
                "{n} parameters is a bare size: using a generic dense architecture of {shape_of}'s shape; results are approximate"
            );
            Ok(LoadedModel {
                spec,
                origin: ModelOrigin::Size { size, shape_of },
                weights: None,
                warnings: vec![warning],
            })
        }
    }
}

/// The devices a [`DeviceRef`] stands for.
pub fn plan_devices(devices: DeviceRef<'_>) -> Result<Vec<PlanDevice>, SpecError> {
    Ok(match devices {
        DeviceRef::String(s) => PlanDevice::from_device_string(s)?,
        DeviceRef::Registry(r) => PlanDevice::from_registry(r),
        DeviceRef::List(d) => d.to_vec(),
    })
}

impl StoredWeights {
    /// The level the weights are stored at: the file's own quantization name
    /// (GGUF file type, `quantization_config`), else its dominant tensor type.
    pub fn level(&self) -> Option<Quant> {
        if let Some(q) = self.quantization.as_deref() {
            let q = q
                .trim_start_matches("MOSTLY_")
                .trim_start_matches("mostly_");
            if let Some(level) = Quant::parse(q) {
                return Some(level);
            }
        }
        let (dtype, _) = self.bytes_by_dtype.iter().max_by_key(|(_, b)| *b)?;
        Quant::parse(dtype).or(match dtype.to_ascii_uppercase().as_str() {
            "F8_E4M3" | "F8_E5M2" => Some(Quant::Fp8),
            "I8" => Some(Quant::Int8),
            _ => None,
        })
    }
}

/// `opts` with what a model file says filled in: its stored weights (and,
/// when `opts.quant` is unset, their level) and the GGUF levels for a GGUF
/// file. Options already set are kept.
pub fn options_for(model: &LoadedModel, opts: &InferenceOptions) -> InferenceOptions {
    let mut o = opts.clone();
    o.gguf_levels |= matches!(model.origin, ModelOrigin::Gguf { .. });
    if o.gguf_matmul_bytes.is_empty()
        && let Some(w) = &model.weights
    {
        o.gguf_matmul_bytes.clone_from(&w.matmul_bytes);
    }
    if o.stored_weights.is_none()
        && let Some(w) = &model.weights
        && let Some(mut level) = w.level()
    {
        // gpt-oss: `quant_method: mxfp4` covers only the routed experts,
        // which the spec holds at MXFP4 ([`super::arch::Moe::mxfp4_experts`]);
        // every other tensor is stored at the model's 16-bit type.
        if level == Quant::Mxfp4 && model.spec.moe.as_ref().is_some_and(|m| m.mxfp4_experts) {
            level = match model.spec.torch_dtype.as_deref().and_then(Quant::parse) {
                Some(q @ (Quant::Fp16 | Quant::Fp32)) => q,
                _ => Quant::Bf16,
            };
        }
        o.stored_weights = Some((level, w.bytes));
        o.quant = o.quant.or(Some(level));
    }
    o
}

/// Plan inference of `model` on `devices` in one call: [`load_model`] (or a
/// generic architecture for a bare parameter count), the devices,
/// [`options_for`] and [`plan_inference`]. The model's loading warnings are
/// added to the plan's.
///
/// ```
/// use ai_hwaccel::plan::{InferenceOptions, plan_inference_for};
/// // A bare parameter count on a device string.
/// let p = plan_inference_for(70_000_000_000u64, "8xh100-sxm", &InferenceOptions::default())?;
/// assert!(p.approximate && p.feasible);
/// // A typo is an error with a suggestion.
/// let e = plan_inference_for("lama-3.1-8b", "1xh100-sxm", &InferenceOptions::default());
/// assert!(e.unwrap_err().to_string().contains("did you mean llama-3.1-8b"));
/// # Ok::<(), ai_hwaccel::plan::PlanError>(())
/// ```
pub fn plan_inference_for<'a>(
    model: impl Into<ModelRef<'a>>,
    devices: impl Into<DeviceRef<'a>>,
    opts: &InferenceOptions,
) -> Result<InferencePlan, PlanError> {
    let m = load_model_ref(model.into())?;
    let devices = plan_devices(devices.into())?;
    let mut p = plan_inference(&m.spec, &devices, &options_for(&m, opts));
    p.warnings.splice(0..0, m.warnings);
    Ok(p)
}

/// Plan training of `model` on `devices` in one call: [`load_model`] (or a
/// generic architecture for a bare parameter count), the devices and
/// [`plan_training`]. The model's loading warnings are added to the plan's.
///
/// ```
/// use ai_hwaccel::plan::{TrainingOptions, plan_training_for};
/// use ai_hwaccel::plan::training::Method;
/// let opts = TrainingOptions { method: Method::Qlora, ..TrainingOptions::default() };
/// let p = plan_training_for("llama-3.1-8b", "1xrtx-4090", &opts)?;
/// assert_eq!(p.fits, Some(true));
/// # Ok::<(), ai_hwaccel::plan::PlanError>(())
/// ```
pub fn plan_training_for<'a>(
    model: impl Into<ModelRef<'a>>,
    devices: impl Into<DeviceRef<'a>>,
    opts: &TrainingOptions,
) -> Result<TrainingPlan, PlanError> {
    let m = load_model_ref(model.into())?;
    let devices = plan_devices(devices.into())?;
    let mut p = plan_training(&m.spec, &devices, opts)?;
    p.warnings.splice(0..0, m.warnings);
    Ok(p)
}
