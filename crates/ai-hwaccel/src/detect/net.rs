//! Network fabric: physical interfaces (/sys/class/net) and RDMA devices
//! (/sys/class/infiniband: InfiniBand, RoCE, EFA). Placeholder until the
//! readers land.

use crate::model::{NetworkInterface, RdmaDevice};
use crate::probe::Probe;

/// Physical network interfaces and RDMA devices of the host.
pub(crate) fn detect_network(
    _probe: &dyn Probe,
    _warnings: &mut Vec<String>,
) -> (Vec<NetworkInterface>, Vec<RdmaDevice>) {
    (Vec::new(), Vec::new())
}
