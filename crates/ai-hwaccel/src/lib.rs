//! ai-hwaccel: what accelerators does this machine really have, and the
//! facts a planner needs about each.
//!
//! ```no_run
//! use ai_hwaccel::{detect, DetectOptions, ProbeOptions};
//! let registry = detect(&ProbeOptions::default(), &DetectOptions::default());
//! for d in registry.available_accelerators() {
//!     println!("{} {} {:?}", d.id, d.name, d.memory_bytes);
//! }
//! ```
//!
//! Layers (see ARCHITECTURE.md): [`model`] (data types, no I/O), [`probe`]
//! (the only code that touches the machine), [`detect`] (backends over a probe),
//! [`spec`] (datasheets), [`topology`] (the interconnect graph of a registry) and
//! [`plan`] (memory and sharding plans).

pub mod cache;
pub mod detect;
pub mod model;
pub mod plan;
pub mod probe;
pub mod spec;
pub mod topology;

pub use cache::{CacheOptions, CachedRegistry, detect_cached};
pub use detect::{BackendId, BackendSet, DetectOptions, detect, detect_with};
pub use model::{Device, Family, PciAddress, Registry, Requirement, SystemInfo};
pub use probe::{LiveProbe, Probe, ProbeOptions, RecordingProbe, ReplayProbe};
