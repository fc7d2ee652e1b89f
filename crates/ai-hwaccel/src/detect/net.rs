//! Network fabric: physical network interfaces (`/sys/class/net`) and RDMA
//! devices (`/sys/class/infiniband`: InfiniBand HCAs, RoCE NICs, AWS EFA,
//! iWARP RNICs), each joined to the PCI function it sits on. The pure parsers
//! for the sysfs value formats (`4: ACTIVE`, `400 Gb/sec (4X NDR)`, a speed in
//! Mb/s) and for the text of the `ibstat` tool live here too;
//! [`detect_network`] only glues the probe to them.
//!
//! Kernel ABI: `Documentation/ABI/testing/sysfs-class-net` (`type`, `speed`,
//! `operstate`, `mtu`, the `device` link) and
//! `Documentation/ABI/stable/sysfs-class-infiniband` (`node_type`,
//! `node_guid`, `fw_ver`, the per-driver `hca_type`/`board_id`, and
//! `ports/<N>/{state,phys_state,rate,link_layer}`).

use crate::model::{NetworkInterface, PciAddress, PciPath, RdmaDevice, RdmaPort};
use crate::probe::{Probe, ProbeExt, join};

use super::pci::{pci_address_in_path, read_parsed};
use super::sysfs::parse_numa_node;

const NET_DIR: &str = "/sys/class/net";
const IB_DIR: &str = "/sys/class/infiniband";

/// `ARPHRD_ETHER` in `include/uapi/linux/if_arp.h`.
const ARPHRD_ETHER: u32 = 1;
/// `ARPHRD_INFINIBAND` in `include/uapi/linux/if_arp.h`.
const ARPHRD_INFINIBAND: u32 = 32;

/// RDMA drivers that only speak iWARP, for when `node_type` cannot be read.
/// (`irdma` and `qedr` speak iWARP or RoCE per port and are told apart by
/// `node_type` alone.)
const IWARP_ONLY_DRIVERS: &[&str] = &["iw_cxgb4", "iw_cxgb3", "i40iw", "siw"];

/// Physical network interfaces and RDMA devices of the host, each sorted by
/// name. An absent `/sys/class/net` or `/sys/class/infiniband` is no
/// interface and no warning; a file holding garbage is `None` for that value
/// and a warning naming the file.
pub(crate) fn detect_network(
    probe: &dyn Probe,
    warnings: &mut Vec<String>,
) -> (Vec<NetworkInterface>, Vec<RdmaDevice>) {
    let mut nics: Vec<NetworkInterface> = list_class(probe, NET_DIR, warnings)
        .into_iter()
        // Physical interfaces have a `device` link; lo, bridges, veth, bonds,
        // tunnels and docker0 live under /sys/devices/virtual and have none.
        .filter(|name| probe.read_link(&format!("{NET_DIR}/{name}/device")).is_ok())
        .map(|name| read_interface(probe, &name, warnings))
        .collect();
    nics.sort_by(|a, b| a.name.cmp(&b.name));

    let mut rdma: Vec<RdmaDevice> = list_class(probe, IB_DIR, warnings)
        .into_iter()
        .map(|name| read_rdma_device(probe, &name, warnings))
        .collect();
    rdma.sort_by(|a, b| a.name.cmp(&b.name));
    (nics, rdma)
}

/// Entries of a `/sys/class/*` directory: absent is empty, unreadable is a warning.
fn list_class(probe: &dyn Probe, dir: &str, warnings: &mut Vec<String>) -> Vec<String> {
    match probe.list_dir(dir) {
        Ok(names) => names,
        Err(e) if e.is_absent() => Vec::new(),
        Err(e) => {
            warnings.push(e.to_string());
            Vec::new()
        }
    }
}

/// The PCI function behind a class entry. The entry (`/sys/class/net/eth0`)
/// is a link into `/sys/devices` whose target spells the bridge chain; when
/// it is not a link (a flat fake root, an old layout), the address alone is
/// read from the `device` link. Devices not on PCI (virtual, platform) give
/// `(None, None)`.
fn pci_location(probe: &dyn Probe, entry: &str) -> (Option<PciPath>, Option<PciAddress>) {
    if let Some((path, addr)) = probe
        .read_link(entry)
        .ok()
        .and_then(|t| PciPath::from_sysfs(&t))
    {
        return (Some(path), Some(addr));
    }
    let addr = probe
        .read_link(&join(entry, "device"))
        .ok()
        .and_then(|t| pci_address_in_path(&t));
    (None, addr)
}

/// A `numa_node` file: `-1` (no affinity) is `None` silently, garbage warns.
pub(crate) fn read_numa(probe: &dyn Probe, path: &str, warnings: &mut Vec<String>) -> Option<u32> {
    let text = probe.read_trimmed(path)?;
    if text.parse::<i64>().is_ok_and(|n| n < 0) {
        return None;
    }
    let v = parse_numa_node(&text);
    if v.is_none() {
        let shown: String = text.chars().take(40).collect();
        warnings.push(format!("{path}: not a NUMA node: {shown:?}"));
    }
    v
}

fn read_interface(probe: &dyn Probe, name: &str, warnings: &mut Vec<String>) -> NetworkInterface {
    let dir = join(NET_DIR, name);
    let (pci_path, pci_address) = pci_location(probe, &dir);
    let kind = read_parsed(probe, &join(&dir, "type"), "an ARP type", warnings, |s| {
        s.parse::<u32>().ok()
    })
    .map_or_else(|| "unknown".to_string(), interface_kind);
    NetworkInterface {
        name: name.to_string(),
        kind,
        driver: probe.link_name(&format!("{dir}/device/driver")),
        pci_address,
        pci_path,
        numa_node: read_numa(probe, &format!("{dir}/device/numa_node"), warnings),
        speed_bits_per_s: read_parsed(
            probe,
            &join(&dir, "speed"),
            "a speed in Mb/s",
            warnings,
            parse_net_speed,
        )
        .flatten(),
        operstate: probe.read_trimmed(&join(&dir, "operstate")),
        mtu: read_parsed(probe, &join(&dir, "mtu"), "an MTU", warnings, |s| {
            s.parse::<u32>().ok()
        }),
        rdma_device: probe
            .list_or_empty(&format!("{dir}/device/infiniband"))
            .into_iter()
            .next(),
    }
}

fn read_rdma_device(probe: &dyn Probe, name: &str, warnings: &mut Vec<String>) -> RdmaDevice {
    let dir = join(IB_DIR, name);
    let (pci_path, pci_address) = pci_location(probe, &dir);
    let driver = probe.link_name(&format!("{dir}/device/driver"));
    let node_type = read_parsed(
        probe,
        &join(&dir, "node_type"),
        "a node type",
        warnings,
        parse_port_state,
    )
    .flatten();

    let ports_dir = join(&dir, "ports");
    let mut numbers: Vec<u32> = Vec::new();
    for p in probe.list_or_empty(&ports_dir) {
        match p.parse::<u32>() {
            Ok(n) => numbers.push(n),
            Err(_) => warnings.push(format!("{ports_dir}/{p}: not a port number; skipped")),
        }
    }
    numbers.sort_unstable();
    let ports: Vec<RdmaPort> = numbers
        .into_iter()
        .map(|n| read_port(probe, &join(&ports_dir, &n.to_string()), n, warnings))
        .collect();

    let layers: Vec<Option<&str>> = ports.iter().map(|p| p.link_layer.as_deref()).collect();
    let kind = rdma_kind(name, driver.as_deref(), node_type.as_deref(), &layers);
    RdmaDevice {
        name: name.to_string(),
        kind: kind.to_string(),
        driver,
        pci_address,
        pci_path,
        numa_node: read_numa(probe, &format!("{dir}/device/numa_node"), warnings),
        hca_type: probe.read_trimmed(&join(&dir, "hca_type")),
        board_id: probe.read_trimmed(&join(&dir, "board_id")),
        firmware_version: probe.read_trimmed(&join(&dir, "fw_ver")),
        node_guid: probe.read_trimmed(&join(&dir, "node_guid")),
        netdevs: probe.list_or_empty(&format!("{dir}/device/net")),
        ports,
    }
}

fn read_port(probe: &dyn Probe, dir: &str, port: u32, warnings: &mut Vec<String>) -> RdmaPort {
    let rate_path = join(dir, "rate");
    let rate = probe.read_trimmed(&rate_path);
    let rate_bits_per_s = rate.as_deref().and_then(|r| {
        let v = parse_rate(r);
        if v.is_none() {
            let shown: String = r.chars().take(40).collect();
            warnings.push(format!("{rate_path}: not a rate in Gb/sec: {shown:?}"));
        }
        v
    });
    RdmaPort {
        port,
        state: read_parsed(
            probe,
            &join(dir, "state"),
            "a port state",
            warnings,
            parse_port_state,
        )
        .flatten(),
        physical_state: read_parsed(
            probe,
            &join(dir, "phys_state"),
            "a physical state",
            warnings,
            parse_port_state,
        )
        .flatten(),
        rate_bits_per_s,
        rate,
        // The kernel writes `InfiniBand`, `Ethernet`, or `Unknown` (EFA,
        // drivers without a link layer); `Unknown` is `None`.
        link_layer: probe
            .read_trimmed(&join(dir, "link_layer"))
            .filter(|l| l != "Unknown"),
    }
}

/// The interface kind for a `type` value (an `ARPHRD_*` constant from
/// `include/uapi/linux/if_arp.h`): `ethernet` (1), `infiniband` (32), else
/// `arp<N>`.
pub fn interface_kind(arp_type: u32) -> String {
    match arp_type {
        ARPHRD_ETHER => "ethernet".to_string(),
        ARPHRD_INFINIBAND => "infiniband".to_string(),
        n => format!("arp{n}"),
    }
}

/// Parse a `/sys/class/net/<if>/speed` file (Mb/s) into bits per second.
///
/// `Some(Some(bps))` for a speed; `Some(None)` for the kernel's "unknown"
/// (`-1` is `SPEED_UNKNOWN`; older kernels printed it unsigned as
/// `4294967295`, and 0 or 65535 come from drivers that never set it);
/// `None` when the text is not a number at all.
pub fn parse_net_speed(s: &str) -> Option<Option<u64>> {
    let t = s.trim();
    if let Ok(n) = t.parse::<i64>() {
        return Some(match n {
            n if n <= 0 => None,
            65_535 | 4_294_967_295 => None,
            n => (n as u64).checked_mul(1_000_000),
        });
    }
    None
}

/// Parse a numbered state as sysfs writes it (`4: ACTIVE`, `5: LinkUp`,
/// `3: Phy Test`; also `node_type`'s `1: CA` and `4: RNIC`) into its name.
///
/// `Some(Some(name))` for a name; `Some(None)` for the kernel's own unknown
/// (`UNKNOWN` for an out-of-range state, `<unknown>` for a physical state);
/// `None` when the text is not `<number>: <name>`.
pub fn parse_port_state(s: &str) -> Option<Option<String>> {
    let (num, name) = s.trim().split_once(':')?;
    let num = num.trim();
    let name = name.trim();
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return None;
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | '<' | '>' | '-'))
    {
        return None;
    }
    Some(match name {
        "UNKNOWN" | "<unknown>" => None,
        n => Some(n.to_string()),
    })
}

/// Parse a port `rate` file into bits per second: the leading number is in
/// Gb/sec and may have decimals (`400 Gb/sec (4X NDR)` → 400e9,
/// `2.5 Gb/sec (1X SDR)` → 2.5e9, `10 Gb/sec (4X)` from older kernels).
/// The kernel's `rate_show` writes `%d%s Gb/sec (%dX%s)`. `None` when the
/// number or the `Gb/sec` unit is missing.
pub fn parse_rate(s: &str) -> Option<u64> {
    let mut words = s.split_whitespace();
    let num = words.next()?;
    if words.next() != Some("Gb/sec") {
        return None;
    }
    gbits_to_bits(num)
}

/// A decimal number of Gb (`400`, `2.5`) in bits, computed exactly.
fn gbits_to_bits(num: &str) -> Option<u64> {
    const GIGA: u64 = 1_000_000_000;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > 9 {
        return None;
    }
    if num.ends_with('.') {
        return None;
    }
    let whole = int.parse::<u64>().ok()?.checked_mul(GIGA)?;
    let part = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    whole.checked_add(part)
}

/// What an RDMA device is, in this order:
///
/// 1. `efa`: bound to the `efa` driver, or named `efa*` (AWS Elastic Fabric Adapter);
/// 2. `iwarp`: `node_type` is `RNIC` (iWARP ports of `irdma`, `qedr`,
///    `iw_cxgb4`, `siw`), or, when `node_type` is unreadable, an
///    iWARP-only driver (`iw_cxgb4`, `iw_cxgb3`, `i40iw`, `siw`) — iWARP
///    ports report an `Ethernet` link layer, so they must be told apart
///    before RoCE;
/// 3. `roce`: every port's link layer is `Ethernet`;
/// 4. `infiniband`: every port's link layer is `InfiniBand`;
/// 5. `unknown`: no ports, a port with no link layer, or a mix.
pub fn rdma_kind(
    name: &str,
    driver: Option<&str>,
    node_type: Option<&str>,
    link_layers: &[Option<&str>],
) -> &'static str {
    if driver == Some("efa") || name.starts_with("efa") {
        return "efa";
    }
    let iwarp = match node_type {
        Some(t) => t == "RNIC",
        None => driver.is_some_and(|d| IWARP_ONLY_DRIVERS.contains(&d)),
    };
    if iwarp {
        return "iwarp";
    }
    let all = |want: &str| !link_layers.is_empty() && link_layers.iter().all(|l| *l == Some(want));
    if all("Ethernet") {
        "roce"
    } else if all("InfiniBand") {
        "infiniband"
    } else {
        "unknown"
    }
}

/// One port in `ibstat` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IbstatPort {
    /// Port number (`Port 1:`).
    pub port: u32,
    /// `State:` as ibstat spells it (`Active`, `Down`, `Init`, `Armed`).
    pub state: Option<String>,
    /// `Physical state:` (`LinkUp`, `Disabled`, `Polling`).
    pub physical_state: Option<String>,
    /// `Rate:` (ibstat prints Gb/s as a bare number) in bits per second.
    pub rate_bits_per_s: Option<u64>,
    /// `Link layer:` (`InfiniBand`, `Ethernet`).
    pub link_layer: Option<String>,
}

/// One channel adapter (`CA 'mlx5_0'`) in `ibstat` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IbstatCa {
    /// The RDMA device name, as in `/sys/class/infiniband`.
    pub name: String,
    /// `CA type:` (`MT4129`), the same text as sysfs `hca_type`.
    pub ca_type: Option<String>,
    /// `Firmware version:`, the same text as sysfs `fw_ver`.
    pub firmware_version: Option<String>,
    /// `Node GUID:` as ibstat prints it (`0xa088c20300e3142a`; sysfs
    /// `node_guid` spells the same value `a088:c203:00e3:142a`).
    pub node_guid: Option<String>,
    /// Ports in output order.
    pub ports: Vec<IbstatPort>,
}

/// Parse the text output of `ibstat` (rdma-core's infiniband-diags) into
/// channel adapters. Keys are matched by name, not by indentation (tabs and
/// spaces both occur in captures); unknown keys and stray lines (an
/// `ibpanic:` message after a failed CA) are ignored; a truncated output
/// yields what was complete enough to name.
pub fn parse_ibstat(text: &str) -> Vec<IbstatCa> {
    let mut cas: Vec<IbstatCa> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("CA '") {
            if let Some(name) = rest.strip_suffix('\'').filter(|n| !n.is_empty()) {
                cas.push(IbstatCa {
                    name: name.to_string(),
                    ..IbstatCa::default()
                });
            }
            continue;
        }
        let Some(ca) = cas.last_mut() else { continue };
        if let Some(n) = t
            .strip_prefix("Port ")
            .and_then(|r| r.strip_suffix(':'))
            .and_then(|n| n.parse::<u32>().ok())
        {
            ca.ports.push(IbstatPort {
                port: n,
                ..IbstatPort::default()
            });
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let text = (!value.is_empty()).then(|| value.to_string());
        match key.trim() {
            "CA type" => ca.ca_type = text,
            "Firmware version" => ca.firmware_version = text,
            "Node GUID" => ca.node_guid = text,
            k => {
                let Some(port) = ca.ports.last_mut() else {
                    continue;
                };
                match k {
                    "State" => port.state = text,
                    "Physical state" => port.physical_state = text,
                    "Rate" => port.rate_bits_per_s = gbits_to_bits(value),
                    "Link layer" => port.link_layer = text,
                    _ => {}
                }
            }
        }
    }
    cas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds() {
        assert_eq!(parse_net_speed("100000\n"), Some(Some(100_000_000_000)));
        assert_eq!(parse_net_speed("25000"), Some(Some(25_000_000_000)));
        assert_eq!(parse_net_speed("-1"), Some(None));
        assert_eq!(parse_net_speed("4294967295"), Some(None));
        assert_eq!(parse_net_speed("0"), Some(None));
        assert_eq!(parse_net_speed("fast"), None);
        assert_eq!(parse_net_speed(""), None);
    }

    #[test]
    fn states() {
        assert_eq!(parse_port_state("4: ACTIVE\n"), Some(Some("ACTIVE".into())));
        assert_eq!(parse_port_state("5: LinkUp"), Some(Some("LinkUp".into())));
        assert_eq!(
            parse_port_state("7: Phy Test"),
            Some(Some("Phy Test".into()))
        );
        assert_eq!(parse_port_state("4: RNIC"), Some(Some("RNIC".into())));
        assert_eq!(parse_port_state("9: UNKNOWN"), Some(None));
        assert_eq!(parse_port_state("0: <unknown>"), Some(None));
        assert_eq!(parse_port_state("ACTIVE"), None);
        assert_eq!(parse_port_state("x: ACTIVE"), None);
        assert_eq!(parse_port_state("4:"), None);
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("400 Gb/sec (4X NDR)"), Some(400_000_000_000));
        assert_eq!(parse_rate("100 Gb/sec (2X HDR)\n"), Some(100_000_000_000));
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)"), Some(2_500_000_000));
        assert_eq!(parse_rate("10 Gb/sec (4X)"), Some(10_000_000_000));
        assert_eq!(parse_rate("400"), None);
        assert_eq!(parse_rate("2. Gb/sec"), None);
        assert_eq!(parse_rate(".5 Gb/sec"), None);
        assert_eq!(parse_rate("400 Mb/sec"), None);
        assert_eq!(parse_rate("99999999999999 Gb/sec"), None);
    }

    #[test]
    fn kinds() {
        assert_eq!(interface_kind(1), "ethernet");
        assert_eq!(interface_kind(32), "infiniband");
        assert_eq!(interface_kind(772), "arp772");
        let eth = [Some("Ethernet")];
        let ib = [Some("InfiniBand")];
        assert_eq!(
            rdma_kind("rdmap16s27", Some("efa"), Some("CA"), &[None]),
            "efa"
        );
        assert_eq!(rdma_kind("efa_0", None, None, &[]), "efa");
        assert_eq!(
            rdma_kind("irdma0", Some("irdma"), Some("RNIC"), &eth),
            "iwarp"
        );
        assert_eq!(rdma_kind("irdma1", Some("irdma"), Some("CA"), &eth), "roce");
        assert_eq!(rdma_kind("siw0", Some("siw"), None, &eth), "iwarp");
        assert_eq!(
            rdma_kind("mlx5_0", Some("mlx5_core"), Some("CA"), &ib),
            "infiniband"
        );
        assert_eq!(
            rdma_kind(
                "mlx5_0",
                None,
                None,
                &[Some("Ethernet"), Some("InfiniBand")]
            ),
            "unknown"
        );
        assert_eq!(rdma_kind("mlx5_0", None, None, &[]), "unknown");
    }

    #[test]
    fn ibstat_keys_by_name() {
        let text = "CA 'mlx5_0'\n  CA type: MT4129\n  Node GUID: 0x1\n  Port 1:\n    State: Down\n    Rate: 2.5\n    Link layer: InfiniBand\nibpanic: boom\n";
        let cas = parse_ibstat(text);
        assert_eq!(cas.len(), 1);
        assert_eq!(cas[0].ca_type.as_deref(), Some("MT4129"));
        assert_eq!(cas[0].ports[0].state.as_deref(), Some("Down"));
        assert_eq!(cas[0].ports[0].rate_bits_per_s, Some(2_500_000_000));
        assert_eq!(parse_ibstat("State: Active\n"), vec![]);
    }
}
