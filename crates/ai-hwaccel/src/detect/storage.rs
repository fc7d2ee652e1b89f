//! Storage: block devices (/sys/block) and the model cache's filesystem.
//! Placeholder until the readers land.

use crate::model::StorageInfo;
use crate::probe::Probe;

/// Block devices and the model cache filesystem of the host.
pub(crate) fn detect_storage(_probe: &dyn Probe, _warnings: &mut Vec<String>) -> StorageInfo {
    StorageInfo::default()
}
