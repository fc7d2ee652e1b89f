//! The environment the process runs in: container runtime, Kubernetes pod,
//! Slurm job and device-visibility variables. Placeholder until the readers land.

use crate::model::{CgroupLimits, EnvironmentInfo};
use crate::probe::Probe;

/// Container, Kubernetes, Slurm and visibility facts of this process.
pub(crate) fn detect_environment(
    _probe: &dyn Probe,
    _cgroup: Option<&CgroupLimits>,
    _warnings: &mut Vec<String>,
) -> EnvironmentInfo {
    EnvironmentInfo::default()
}
