//! The cloud instance from DMI (/sys/class/dmi/id), without network calls.
//! Placeholder until the readers land.

use crate::model::CloudInstance;
use crate::probe::Probe;

/// The cloud provider and instance type, when DMI names them.
pub(crate) fn detect_cloud(
    _probe: &dyn Probe,
    _warnings: &mut Vec<String>,
) -> Option<CloudInstance> {
    None
}
