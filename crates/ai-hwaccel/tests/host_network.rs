//! Network and storage detection over fake roots laid out the way the kernel
//! lays out sysfs: PCI functions under `/sys/devices/pciDDDD:BB/<bridge>/<fn>`
//! holding `net/<if>` and `infiniband/<dev>`, with `/sys/class/net/<if>`,
//! `/sys/class/infiniband/<dev>`, `/sys/block/<disk>` and
//! `/sys/bus/pci/devices/<addr>` as relative links into that tree.
//!
//! The RDMA devices of the fake roots are written from real `ibstat`
//! captures (`fixtures/ibstat`, see SOURCES.md) in the kernel's sysfs
//! spelling (`4: ACTIVE`, `400 Gb/sec (4X NDR)`, `a088:c203:00e3:142a`), and
//! detection is checked against the capture field by field. Adding a capture
//! to `fixtures/ibstat` adds it to that check without new code.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and read fixtures"
)]

mod support;
use support::{damaged, detect_fake, fixture};

use std::collections::BTreeMap;
use std::path::Path;

use ai_hwaccel::detect::{
    IbstatCa, filesystem_of, model_cache_dir, model_cache_filesystem, parse_ibstat,
    parse_net_speed, parse_port_state, parse_rate,
};
use ai_hwaccel::model::{BlockDevice, NetworkInterface, RdmaDevice};
use ai_hwaccel::probe::{LiveProbe, ProbeOptions};
use ai_hwaccel::{BackendId, Registry};

const H100_ACTIVE: &str = "ibstat/gpud__ibstat__h100-all-active-0.txt";
const H100_ACTIVE_2: &str = "ibstat/gpud__ibstat__h100-all-active-2.txt";
const H100_DOWN: &str = "ibstat/gpud__ibstat__h100-some-down-0.txt";
const A100_ACTIVE: &str = "ibstat/gpud__ibstat__a100-all-active-0.txt";
const A100_IBPANIC: &str = "ibstat/gpud__ibstat__a100-ibpanic-exit255.txt";
const A100_IBSTATUS: &str = "ibstat/gpud__ibstatus__a100-all-active-0.txt";

const GBIT: u64 = 1_000_000_000;

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

// ---------------------------------------------------------------------------
// A fake root.

struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Self {
        let r = Root {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(r.path().join("bin")).unwrap();
        r
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A file at `rel` (root-relative), parents created.
    fn file(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.path().join(rel)).unwrap();
    }

    /// A link at `link` to `target` (both root-relative), spelled relative
    /// to the link's directory as the kernel spells its sysfs links
    /// (`sys/class/net/eth0` → `../../devices/pci0000:00/…/net/eth0`).
    fn link(&self, link: &str, target: &str) {
        let from: Vec<&str> = link.split('/').collect();
        let from = &from[..from.len() - 1];
        let to: Vec<&str> = target.split('/').collect();
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        let mut rel: Vec<&str> = vec![".."; from.len() - common];
        rel.extend(&to[common..]);
        let p = self.path().join(link);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(rel.join("/"), p).unwrap();
    }

    /// A PCI function `chain.last()` under host bridge `host` with the
    /// bridges before it, its driver and `numa_node`, and its
    /// `/sys/bus/pci/devices` link. Returns its root-relative directory.
    fn pci_function(&self, host: &str, chain: &[&str], driver: &str, numa: &str) -> String {
        let dir = format!("sys/devices/{host}/{}", chain.join("/"));
        self.file(&format!("{dir}/numa_node"), &format!("{numa}\n"));
        let drv = format!("sys/bus/pci/drivers/{driver}");
        self.mkdir(&drv);
        self.link(&format!("{dir}/driver"), &drv);
        let addr = chain.last().unwrap();
        self.link(&format!("sys/bus/pci/devices/{addr}"), &dir);
        dir
    }

    /// A network interface on PCI function `func`; `speed: None` makes the
    /// `speed` file unreadable (a directory), as the kernel's EINVAL is.
    fn netdev(
        &self,
        func: &str,
        name: &str,
        arp_type: u32,
        speed: Option<&str>,
        oper: &str,
        mtu: u32,
    ) {
        let dir = format!("{func}/net/{name}");
        self.file(&format!("{dir}/type"), &format!("{arp_type}\n"));
        match speed {
            Some(s) => self.file(&format!("{dir}/speed"), &format!("{s}\n")),
            None => self.mkdir(&format!("{dir}/speed")),
        }
        self.file(&format!("{dir}/operstate"), &format!("{oper}\n"));
        self.file(&format!("{dir}/mtu"), &format!("{mtu}\n"));
        self.link(&format!("{dir}/device"), func);
        self.link(&format!("sys/class/net/{name}"), &dir);
    }

    /// A virtual interface (no `device` link), as lo, docker0 and veth are.
    fn virtual_netdev(&self, name: &str, arp_type: u32) {
        let dir = format!("sys/devices/virtual/net/{name}");
        self.file(&format!("{dir}/type"), &format!("{arp_type}\n"));
        self.file(&format!("{dir}/operstate"), "unknown\n");
        self.file(&format!("{dir}/mtu"), "65536\n");
        self.link(&format!("sys/class/net/{name}"), &dir);
    }

    /// An RDMA device on PCI function `func` with device attributes `attrs`
    /// and ports 1.. given as (state, phys_state, rate, link_layer) file texts.
    fn ibdev(&self, func: &str, name: &str, attrs: &[(&str, &str)], ports: &[[&str; 4]]) {
        let dir = format!("{func}/infiniband/{name}");
        for (k, v) in attrs {
            self.file(&format!("{dir}/{k}"), &format!("{v}\n"));
        }
        for (i, p) in ports.iter().enumerate() {
            let pd = format!("{dir}/ports/{}", i + 1);
            for (f, v) in ["state", "phys_state", "rate", "link_layer"].iter().zip(p) {
                self.file(&format!("{pd}/{f}"), &format!("{v}\n"));
            }
        }
        self.link(&format!("{dir}/device"), func);
        self.link(&format!("sys/class/infiniband/{name}"), &dir);
    }

    /// A disk at root-relative `dir` (its kernel directory), linked from
    /// `/sys/block/<name>`.
    fn disk(&self, dir: &str, sectors: &str, rotational: &str, removable: &str) {
        let name = dir.rsplit('/').next().unwrap();
        self.file(&format!("{dir}/size"), &format!("{sectors}\n"));
        self.file(
            &format!("{dir}/queue/rotational"),
            &format!("{rotational}\n"),
        );
        self.file(&format!("{dir}/removable"), &format!("{removable}\n"));
        self.link(&format!("sys/block/{name}"), dir);
    }

    fn detect(&self, env: &[(&str, &str)]) -> Registry {
        detect_fake(
            self.path(),
            &self.path().join("bin"),
            env,
            &[BackendId::System],
        )
    }

    fn probe(&self, env: &[(&str, &str)]) -> LiveProbe {
        LiveProbe::new(ProbeOptions {
            root: self.path().to_path_buf(),
            no_exec: true,
            env: Some(
                env.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ProbeOptions::default()
        })
    }
}

// ---------------------------------------------------------------------------
// ibstat capture → kernel sysfs spelling. Written here, independently of the
// library, from drivers/infiniband/core/sysfs.c (state_show, phys_state_show,
// rate_show) and the IB spec's state numbers.

fn sysfs_state(ibstat: &str) -> String {
    let n = match ibstat {
        "Down" => 1,
        "Init" => 2,
        "Armed" => 3,
        "Active" => 4,
        other => panic!("no sysfs number for state {other}"),
    };
    format!("{n}: {}", ibstat.to_uppercase())
}

fn sysfs_phys_state(ibstat: &str) -> String {
    let n = match ibstat {
        "Sleep" => 1,
        "Polling" => 2,
        "Disabled" => 3,
        "LinkUp" => 5,
        "LinkErrorRecovery" => 6,
        other => panic!("no sysfs number for physical state {other}"),
    };
    format!("{n}: {ibstat}")
}

/// `rate_show`'s text for a rate (4X links, the speed name of that rate).
fn sysfs_rate(bits: u64) -> String {
    let gb = bits / GBIT;
    let speed = match gb {
        40 => "QDR",
        100 => "EDR",
        200 => "HDR",
        400 => "NDR",
        800 => "XDR",
        other => panic!("no 4X speed for {other} Gb/s"),
    };
    format!("{gb} Gb/sec (4X {speed})")
}

/// `0xa088c20300e3142a` (ibstat) → `a088:c203:00e3:142a` (sysfs `node_guid`).
fn sysfs_guid(ibstat: &str) -> String {
    let hex = ibstat.trim_start_matches("0x");
    assert_eq!(hex.len(), 16, "{ibstat}");
    (0..4)
        .map(|i| &hex[i * 4..i * 4 + 4])
        .collect::<Vec<_>>()
        .join(":")
}

/// Where a CA of a capture is placed on the fake machine.
struct Placed {
    address: String,
    host_bridge: String,
    root_port: String,
    numa: u32,
    netdev: String,
}

/// Write every CA of `cas` as a ConnectX PCI function of a two-socket host:
/// CA `i` gets its own host bridge `pci0000:{0f+16i}` and root port, the
/// first half NUMA node 0, the rest node 1; one netdev per CA (`ibp…` for
/// InfiniBand, `enp…np0` for Ethernet) whose `speed` is the port rate when
/// the port is Active and unreadable otherwise.
fn write_capture(root: &Root, cas: &[IbstatCa]) -> BTreeMap<String, Placed> {
    let mut placed = BTreeMap::new();
    for (i, ca) in cas.iter().enumerate() {
        let hb = 0x0f + 0x10 * i as u32;
        let bus = hb + 1;
        let host = format!("pci0000:{hb:02x}");
        let rp = format!("0000:{hb:02x}:01.0");
        let addr = format!("0000:{bus:02x}:00.0");
        let numa = u32::from(i >= cas.len() / 2);
        let func = root.pci_function(&host, &[&rp, &addr], "mlx5_core", &numa.to_string());

        let port = &ca.ports[0];
        let ib = port.link_layer.as_deref() == Some("InfiniBand");
        let active = port.state.as_deref() == Some("Active");
        let netdev = if ib {
            format!("ibp{bus}s0")
        } else {
            format!("enp{bus}s0np0")
        };
        let speed = port.rate_bits_per_s.map(|b| (b / 1_000_000).to_string());
        root.netdev(
            &func,
            &netdev,
            if ib { 32 } else { 1 },
            speed.as_deref().filter(|_| active),
            if active { "up" } else { "down" },
            if ib { 4092 } else { 9000 },
        );

        let mut attrs = vec![
            ("node_type", "1: CA".to_string()),
            ("hca_type", ca.ca_type.clone().unwrap()),
            ("fw_ver", ca.firmware_version.clone().unwrap()),
            ("node_guid", sysfs_guid(ca.node_guid.as_deref().unwrap())),
        ];
        if ca.ca_type.as_deref() == Some("MT4129") {
            attrs.push(("board_id", "MT_0000000838".to_string()));
        }
        let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let ports: Vec<[String; 4]> = ca
            .ports
            .iter()
            .map(|p| {
                [
                    sysfs_state(p.state.as_deref().unwrap()),
                    sysfs_phys_state(p.physical_state.as_deref().unwrap()),
                    sysfs_rate(p.rate_bits_per_s.unwrap()),
                    p.link_layer.clone().unwrap(),
                ]
            })
            .collect();
        let ports: Vec<[&str; 4]> = ports
            .iter()
            .map(|p| [p[0].as_str(), &p[1], &p[2], &p[3]])
            .collect();
        root.ibdev(&func, &ca.name, &attrs, &ports);
        placed.insert(
            ca.name.clone(),
            Placed {
                address: addr,
                host_bridge: host,
                root_port: rp,
                numa,
                netdev,
            },
        );
    }
    placed
}

fn rdma<'a>(r: &'a Registry, name: &str) -> &'a RdmaDevice {
    r.system
        .rdma
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no RDMA device {name}"))
}

fn nic<'a>(r: &'a Registry, name: &str) -> &'a NetworkInterface {
    r.system
        .network
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no interface {name}"))
}

fn disk<'a>(r: &'a Registry, name: &str) -> &'a BlockDevice {
    r.system
        .storage
        .block_devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no block device {name}"))
}

/// Detection agrees with the capture, CA by CA and port by port, and with
/// where `write_capture` placed each CA.
fn cross_check(r: &Registry, cas: &[IbstatCa], placed: &BTreeMap<String, Placed>) {
    for ca in cas {
        let d = rdma(r, &ca.name);
        let p = &placed[&ca.name];
        assert_eq!(d.hca_type, ca.ca_type, "{}", ca.name);
        assert_eq!(d.firmware_version, ca.firmware_version, "{}", ca.name);
        let guid = d.node_guid.as_deref().unwrap().replace(':', "");
        assert_eq!(
            format!("0x{guid}"),
            ca.node_guid.clone().unwrap(),
            "{}",
            ca.name
        );
        assert_eq!(d.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(d.pci_address.unwrap().to_string(), p.address);
        let path = d.pci_path.as_ref().unwrap();
        assert_eq!(path.host_bridge, p.host_bridge);
        assert_eq!(path.bridges, vec![p.root_port.parse().unwrap()]);
        assert_eq!(d.numa_node, Some(p.numa), "{}", ca.name);
        assert_eq!(d.netdevs, vec![p.netdev.clone()]);
        assert_eq!(
            d.board_id.as_deref(),
            (ca.ca_type.as_deref() == Some("MT4129")).then_some("MT_0000000838")
        );
        assert_eq!(d.ports.len(), ca.ports.len(), "{}", ca.name);
        for (dp, cp) in d.ports.iter().zip(&ca.ports) {
            assert_eq!(dp.port, cp.port);
            // ibstat spells `Active`, sysfs `4: ACTIVE`.
            assert_eq!(
                dp.state.as_deref().map(str::to_lowercase),
                cp.state.as_deref().map(str::to_lowercase),
                "{} state",
                ca.name
            );
            assert_eq!(dp.physical_state, cp.physical_state, "{}", ca.name);
            assert_eq!(dp.rate_bits_per_s, cp.rate_bits_per_s, "{}", ca.name);
            assert_eq!(dp.link_layer, cp.link_layer, "{}", ca.name);
        }
        let expect_kind = match ca.ports[0].link_layer.as_deref() {
            Some("InfiniBand") => "infiniband",
            Some("Ethernet") => "roce",
            other => panic!("{other:?}"),
        };
        assert_eq!(d.kind, expect_kind, "{}", ca.name);

        let n = nic(r, &p.netdev);
        assert_eq!(n.rdma_device.as_deref(), Some(ca.name.as_str()));
        assert_eq!(n.pci_address, d.pci_address);
        assert_eq!(n.pci_path, d.pci_path);
        assert_eq!(n.numa_node, Some(p.numa));
        assert_eq!(n.driver.as_deref(), Some("mlx5_core"));
        let ib = expect_kind == "infiniband";
        assert_eq!(n.kind, if ib { "infiniband" } else { "ethernet" });
        assert_eq!(n.mtu, Some(if ib { 4092 } else { 9000 }));
        let active = ca.ports[0].state.as_deref() == Some("Active");
        assert_eq!(
            n.speed_bits_per_s,
            if active {
                ca.ports[0].rate_bits_per_s
            } else {
                None
            },
            "{}",
            n.name
        );
        assert_eq!(
            n.operstate.as_deref(),
            Some(if active { "up" } else { "down" })
        );
    }
}

/// Warnings about the files this test is about (a bare root also lacks
/// /proc/cpuinfo and friends, which other tests cover).
fn host_warnings(r: &Registry) -> Vec<String> {
    r.warnings
        .iter()
        .map(|w| w.message.clone())
        .filter(|m| {
            [
                "/sys/class/net",
                "/sys/class/infiniband",
                "/sys/block",
                "/sys/bus/pci",
                "/proc/self/mountinfo",
            ]
            .iter()
            .any(|p| m.starts_with(p))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The captures themselves.

#[test]
fn ibstat_captures_parse_to_their_values() {
    let h100 = parse_ibstat(&read(H100_ACTIVE));
    let names: Vec<&str> = h100.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5",
            "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"
        ]
    );
    let first = &h100[0];
    assert_eq!(first.ca_type.as_deref(), Some("MT4129"));
    assert_eq!(first.firmware_version.as_deref(), Some("28.39.1002"));
    assert_eq!(first.node_guid.as_deref(), Some("0xa088c20300e3142a"));
    assert_eq!(first.ports.len(), 1);
    let p = &first.ports[0];
    assert_eq!(p.port, 1);
    assert_eq!(p.state.as_deref(), Some("Active"));
    assert_eq!(p.physical_state.as_deref(), Some("LinkUp"));
    assert_eq!(p.rate_bits_per_s, Some(400 * GBIT));
    assert_eq!(p.link_layer.as_deref(), Some("Ethernet"));
    // 8 ConnectX-7 (MT4129) at 400 Gb/s and 4 ConnectX-6 Dx (MT4125) at 100 Gb/s.
    let cx7: Vec<&IbstatCa> = h100
        .iter()
        .filter(|c| c.ca_type.as_deref() == Some("MT4129"))
        .collect();
    assert_eq!(cx7.len(), 8);
    assert!(
        cx7.iter()
            .all(|c| c.ports[0].rate_bits_per_s == Some(400 * GBIT))
    );
    let cx6 = h100
        .iter()
        .filter(|c| c.ca_type.as_deref() == Some("MT4125"));
    assert!(
        cx6.clone()
            .all(|c| c.ports[0].rate_bits_per_s == Some(100 * GBIT)
                && c.firmware_version.as_deref() == Some("22.39.1002"))
    );
    assert_eq!(cx6.count(), 4);

    let down = parse_ibstat(&read(H100_DOWN));
    assert_eq!(down.len(), 12);
    let down_names: Vec<&str> = down
        .iter()
        .filter(|c| c.ports[0].state.as_deref() == Some("Down"))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(down_names, ["mlx5_2", "mlx5_7", "mlx5_8"]);
    let m2 = down.iter().find(|c| c.name == "mlx5_2").unwrap();
    assert_eq!(m2.ports[0].physical_state.as_deref(), Some("Disabled"));
    assert_eq!(m2.ports[0].rate_bits_per_s, Some(40 * GBIT));
    assert_eq!(m2.node_guid.as_deref(), Some("0x946dae0300c2b691"));
    let ib_count = down
        .iter()
        .filter(|c| c.ports[0].link_layer.as_deref() == Some("InfiniBand"))
        .count();
    assert_eq!(ib_count, 8);

    let a100 = parse_ibstat(&read(A100_ACTIVE));
    assert_eq!(a100.len(), 9);
    assert_eq!(a100[0].firmware_version.as_deref(), Some("22.35.2302"));
    assert_eq!(a100[0].ports[0].link_layer.as_deref(), Some("Ethernet"));
    assert!(
        a100[1..]
            .iter()
            .all(|c| c.ca_type.as_deref() == Some("MT4126")
                && c.firmware_version.as_deref() == Some("28.37.1014")
                && c.ports[0].link_layer.as_deref() == Some("InfiniBand")
                && c.ports[0].rate_bits_per_s == Some(200 * GBIT))
    );

    // ibstat died on mlx5_8 (`ibpanic:` after the last CA): the 8 it printed remain.
    let panic = parse_ibstat(&read(A100_IBPANIC));
    let names: Vec<&str> = panic.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"
        ]
    );
    assert!(panic.iter().all(|c| c.ca_type.as_deref() == Some("MT4124")
        && c.ports[0].link_layer.as_deref() == Some("InfiniBand")));

    let bond = parse_ibstat(&read(H100_ACTIVE_2));
    let b = bond.iter().find(|c| c.name == "mlx5_bond_0").unwrap();
    assert_eq!(b.ca_type.as_deref(), Some("MT41692"));
    assert_eq!(b.firmware_version.as_deref(), Some("32.38.3056"));
    assert_eq!(b.ports[0].rate_bits_per_s, Some(200 * GBIT));
}

/// `ibstatus` prints the sysfs port files verbatim: real kernel text for
/// the sysfs parsers.
#[test]
fn ibstatus_capture_is_real_sysfs_text() {
    let text = read(A100_IBSTATUS);
    let field = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim().to_string())
            .collect()
    };
    let states = field("state:");
    let phys = field("phys state:");
    let rates = field("rate:");
    assert_eq!(states.len(), 9);
    assert_eq!((phys.len(), rates.len()), (9, 9));
    for s in &states {
        assert_eq!(s, "4: ACTIVE");
        assert_eq!(parse_port_state(s), Some(Some("ACTIVE".to_string())));
    }
    for s in &phys {
        assert_eq!(parse_port_state(s), Some(Some("LinkUp".to_string())));
    }
    let mut parsed: Vec<(u64, &str)> = rates
        .iter()
        .map(|s| (parse_rate(s).unwrap() / GBIT, s.as_str()))
        .collect();
    parsed.sort_unstable();
    parsed.dedup();
    assert_eq!(
        parsed,
        [(40, "40 Gb/sec (4X QDR)"), (200, "200 Gb/sec (4X HDR)")]
    );
    assert_eq!(rates.iter().filter(|r| r.starts_with("200 ")).count(), 8);
}

// ---------------------------------------------------------------------------
// The two-socket H100 server.

/// The capture's CAs plus: a Broadcom RoCE NIC, an AWS EFA device, an Intel
/// NIC whose link is down (`speed` is `-1`), one whose `speed` is garbage,
/// virtual interfaces, and a disk of every kind.
fn h100_server() -> (Root, Vec<IbstatCa>, BTreeMap<String, Placed>) {
    let root = Root::new();
    let cas = parse_ibstat(&read(H100_ACTIVE));
    let placed = write_capture(&root, &cas);

    let bnxt = root.pci_function(
        "pci0000:d5",
        &["0000:d5:01.0", "0000:d6:00.0"],
        "bnxt_en",
        "1",
    );
    root.netdev(&bnxt, "ens7f0np0", 1, Some("100000"), "up", 9000);
    root.ibdev(
        &bnxt,
        "bnxt_re0",
        &[("node_type", "1: CA"), ("fw_ver", "223.0.161.0")],
        &[["4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Ethernet"]],
    );
    let efa = root.pci_function("pci0000:c5", &["0000:c5:01.0", "0000:c6:00.0"], "efa", "1");
    root.ibdev(
        &efa,
        "rdmap198s0",
        &[("node_type", "1: CA")],
        &[["4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Unknown"]],
    );
    let igb0 = root.pci_function("pci0000:00", &["0000:00:1c.0", "0000:04:00.0"], "igb", "0");
    root.netdev(&igb0, "eno1", 1, Some("-1"), "down", 1500);
    let igb1 = root.pci_function("pci0000:00", &["0000:00:1c.0", "0000:04:00.1"], "igb", "0");
    root.netdev(&igb1, "eno2", 1, Some("fast"), "up", 1500);
    root.virtual_netdev("lo", 772);
    root.virtual_netdev("docker0", 1);
    root.virtual_netdev("veth1a2b3c", 1);

    // NVMe on socket 0, directly under its root port.
    let nvme0 = root.pci_function("pci0000:00", &["0000:00:1d.0", "0000:3d:00.0"], "nvme", "0");
    root.file(
        &format!("{nvme0}/nvme/nvme0/model"),
        "SAMSUNG MZQL23T8HCLS-00A07              \n",
    );
    let ns0 = format!("{nvme0}/nvme/nvme0/nvme0n1");
    root.disk(&ns0, "7501476528", "0", "0");
    root.link(&format!("{ns0}/device"), &format!("{nvme0}/nvme/nvme0"));
    // NVMe on socket 1 behind native multipath: /sys/block/nvme1n1 is the
    // subsystem's head; the PCI controller is found through multipath/.
    let nvme1 = root.pci_function("pci0000:80", &["0000:80:01.0", "0000:81:00.0"], "nvme", "1");
    let subsys = "sys/devices/virtual/nvme-subsystem/nvme-subsys1";
    root.file(&format!("{subsys}/model"), "KIOXIA KCD8XPUG7T68\n");
    let head = format!("{subsys}/nvme1n1");
    root.disk(&head, "15002931888", "0", "0");
    root.link(&format!("{head}/device"), subsys);
    let path = format!("{nvme1}/nvme/nvme1/nvme1c1n1");
    root.mkdir(&path);
    root.link(&format!("{head}/multipath/nvme1c1n1"), &path);
    // SATA SSD and HDD behind the AHCI controller.
    let ahci = root.pci_function("pci0000:00", &["0000:00:17.0"], "ahci", "0");
    let sda_dev = format!("{ahci}/ata1/host0/target0:0:0/0:0:0:0");
    root.file(&format!("{sda_dev}/model"), "SAMSUNG MZ7L3480\n");
    root.disk(&format!("{sda_dev}/block/sda"), "937703088", "0", "0");
    root.link(&format!("{sda_dev}/block/sda/device"), &sda_dev);
    let sdb_dev = format!("{ahci}/ata2/host1/target1:0:0/1:0:0:0");
    root.file(&format!("{sdb_dev}/model"), "ST8000NM000A-2KE1\n");
    root.disk(&format!("{sdb_dev}/block/sdb"), "15628053168", "1", "0");
    root.link(&format!("{sdb_dev}/block/sdb/device"), &sdb_dev);
    // A USB stick whose rotational file is garbage.
    let xhci = root.pci_function("pci0000:00", &["0000:00:14.0"], "xhci_hcd", "0");
    let usb = format!("{xhci}/usb1/1-1/1-1:1.0/host6/target6:0:0/6:0:0:0");
    root.disk(&format!("{usb}/block/sdz"), "60063744", "maybe", "1");
    // A virtio disk: rotational is 1 but it is a virtual disk; no NUMA (-1).
    let vpci = root.pci_function("pci0000:00", &["0000:00:05.0"], "virtio-pci", "-1");
    let virtio = format!("{vpci}/virtio2");
    root.mkdir("sys/bus/virtio/drivers/virtio_blk");
    root.link(
        &format!("{virtio}/driver"),
        "sys/bus/virtio/drivers/virtio_blk",
    );
    root.disk(&format!("{virtio}/block/vda"), "209715200", "1", "0");
    root.link(&format!("{virtio}/block/vda/device"), &virtio);
    // Devices left out.
    for name in ["loop0", "dm-0", "md0", "sr0", "zram0", "ram0"] {
        root.disk(
            &format!("sys/devices/virtual/block/{name}"),
            "1024",
            "0",
            "0",
        );
    }

    root.file(
        "proc/self/mountinfo",
        "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
         30 22 259:5 / /data rw,relatime shared:20 - xfs /dev/nvme1n1 rw,attr2\n\
         31 22 0:52 / /data2 rw,relatime shared:21 master:3 - nfs4 10.0.0.5:/export/models rw,vers=4.2\n\
         32 30 0:53 / /data/hf\\040cache rw,relatime - lustre 10.1.0.1@o2ib:/scratch rw,flock\n",
    );
    (root, cas, placed)
}

#[test]
fn h100_server_network_agrees_with_ibstat_capture() {
    let (root, cas, placed) = h100_server();
    let r = root.detect(&[]);
    cross_check(&r, &cas, &placed);

    // This capture's ConnectX-7s run Ethernet link layers: RoCE, not InfiniBand.
    let cx7: Vec<&RdmaDevice> = r
        .system
        .rdma
        .iter()
        .filter(|d| d.hca_type.as_deref() == Some("MT4129"))
        .collect();
    assert_eq!(cx7.len(), 8);
    assert!(cx7.iter().all(|d| d.kind == "roce"));
    let numa: Vec<Option<u32>> = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_9"]
        .iter()
        .map(|n| rdma(&r, n).numa_node)
        .collect();
    // Capture order places the first six CAs on socket 0.
    assert_eq!(numa, [Some(0), Some(0), Some(1), Some(1)]);
    let m0 = rdma(&r, "mlx5_0");
    assert_eq!(m0.node_guid.as_deref(), Some("a088:c203:00e3:142a"));
    assert_eq!(m0.ports[0].rate.as_deref(), Some("400 Gb/sec (4X NDR)"));
    assert_eq!(m0.ports[0].state.as_deref(), Some("ACTIVE"));
    assert_eq!(m0.pci_address.unwrap().to_string(), "0000:10:00.0");

    let bnxt = rdma(&r, "bnxt_re0");
    assert_eq!(bnxt.kind, "roce");
    assert_eq!(bnxt.driver.as_deref(), Some("bnxt_en"));
    assert_eq!(bnxt.netdevs, ["ens7f0np0"]);
    assert_eq!(bnxt.firmware_version.as_deref(), Some("223.0.161.0"));
    assert_eq!(bnxt.hca_type, None, "absent file is None");
    assert_eq!(bnxt.ports[0].rate_bits_per_s, Some(100 * GBIT));
    let ens7 = nic(&r, "ens7f0np0");
    assert_eq!(ens7.rdma_device.as_deref(), Some("bnxt_re0"));
    assert_eq!(ens7.speed_bits_per_s, Some(100 * GBIT));
    assert_eq!(ens7.numa_node, Some(1));

    let efa = rdma(&r, "rdmap198s0");
    assert_eq!(
        efa.kind, "efa",
        "the efa driver makes it EFA whatever its name"
    );
    assert_eq!(
        efa.ports[0].link_layer, None,
        "`Unknown` link layer is None"
    );
    assert_eq!(efa.ports[0].rate_bits_per_s, Some(100 * GBIT));
    assert!(efa.netdevs.is_empty());
    assert_eq!(efa.pci_address.unwrap().to_string(), "0000:c6:00.0");

    let eno1 = nic(&r, "eno1");
    assert_eq!(eno1.speed_bits_per_s, None, "-1 is unknown");
    assert_eq!(eno1.operstate.as_deref(), Some("down"));
    assert_eq!(eno1.kind, "ethernet");
    assert_eq!(eno1.mtu, Some(1500));
    assert_eq!(eno1.rdma_device, None);
    assert_eq!(eno1.driver.as_deref(), Some("igb"));
    let path = eno1.pci_path.as_ref().unwrap();
    assert_eq!(path.host_bridge, "pci0000:00");
    assert_eq!(path.bridges, vec!["0000:00:1c.0".parse().unwrap()]);
    assert_eq!(nic(&r, "eno2").speed_bits_per_s, None);

    let names: Vec<&str> = r.system.network.iter().map(|n| n.name.as_str()).collect();
    for virt in ["lo", "docker0", "veth1a2b3c"] {
        assert!(!names.contains(&virt), "{virt} has no device link");
    }
    assert_eq!(
        names.len(),
        12 + 3,
        "12 capture netdevs, ens7f0np0, eno1, eno2"
    );
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    let rdma_names: Vec<&str> = r.system.rdma.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(rdma_names.len(), 14);
    assert!(rdma_names.windows(2).all(|w| w[0] < w[1]));

    let mut w = host_warnings(&r);
    w.sort();
    assert_eq!(
        w,
        [
            "/sys/block/sdz/queue/rotational: not 0 or 1: \"maybe\"",
            "/sys/class/net/eno2/speed: not a speed in Mb/s: \"fast\"",
        ],
        "garbage warns, absent and unreadable files (down links) do not"
    );
}

#[test]
fn h100_server_storage() {
    let (root, _, _) = h100_server();
    let r = root.detect(&[("HF_HOME", "/data/hf cache"), ("HOME", "/root")]);
    let names: Vec<&str> = r
        .system
        .storage
        .block_devices
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["nvme0n1", "nvme1n1", "sda", "sdb", "sdz", "vda"]);

    let n0 = disk(&r, "nvme0n1");
    assert_eq!(n0.kind, "nvme");
    assert_eq!(n0.size_bytes, Some(7_501_476_528 * 512));
    assert_eq!(n0.model.as_deref(), Some("SAMSUNG MZQL23T8HCLS-00A07"));
    assert_eq!(n0.rotational, Some(false));
    assert_eq!(n0.removable, Some(false));
    assert_eq!(n0.pci_address.unwrap().to_string(), "0000:3d:00.0");
    assert_eq!(n0.numa_node, Some(0));

    let n1 = disk(&r, "nvme1n1");
    assert_eq!(n1.kind, "nvme");
    assert_eq!(n1.model.as_deref(), Some("KIOXIA KCD8XPUG7T68"));
    assert_eq!(
        n1.pci_address.unwrap().to_string(),
        "0000:81:00.0",
        "found through multipath/"
    );
    assert_eq!(n1.numa_node, Some(1));

    let sda = disk(&r, "sda");
    assert_eq!((sda.kind.as_str(), sda.rotational), ("ssd", Some(false)));
    assert_eq!(sda.model.as_deref(), Some("SAMSUNG MZ7L3480"));
    assert_eq!(sda.pci_address.unwrap().to_string(), "0000:00:17.0");
    assert_eq!(sda.size_bytes, Some(937_703_088 * 512));
    let sdb = disk(&r, "sdb");
    assert_eq!((sdb.kind.as_str(), sdb.rotational), ("hdd", Some(true)));
    assert_eq!(sdb.size_bytes, Some(15_628_053_168 * 512));

    let sdz = disk(&r, "sdz");
    assert_eq!((sdz.kind.as_str(), sdz.rotational), ("unknown", None));
    assert_eq!(sdz.removable, Some(true));
    assert_eq!(sdz.model, None);
    assert_eq!(sdz.pci_address.unwrap().to_string(), "0000:00:14.0");

    let vda = disk(&r, "vda");
    assert_eq!(
        vda.kind, "virtual",
        "rotational=1 does not make a virtio disk an HDD"
    );
    assert_eq!(vda.rotational, Some(true));
    assert_eq!(vda.pci_address.unwrap().to_string(), "0000:00:05.0");
    assert_eq!(vda.numa_node, None, "numa_node -1");
    assert_eq!(vda.size_bytes, Some(100 << 30));

    let fs = r.system.storage.model_cache.as_ref().unwrap();
    assert_eq!(fs.path, "/data/hf cache/hub");
    assert_eq!(fs.mount_point, "/data/hf cache");
    assert_eq!(fs.fs_type, "lustre");
    assert_eq!(fs.source, "10.1.0.1@o2ib:/scratch");
    assert!(fs.network);
}

/// Every ibstat capture, written as sysfs, detects as the capture says.
#[test]
fn every_ibstat_capture_round_trips_through_sysfs() {
    let dir = fixture("ibstat");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("gpud__ibstat__") {
            continue;
        }
        let cas = parse_ibstat(&std::fs::read_to_string(&path).unwrap());
        assert!(cas.len() >= 8, "{name}: {} CAs", cas.len());
        let root = Root::new();
        let placed = write_capture(&root, &cas);
        let r = root.detect(&[]);
        cross_check(&r, &cas, &placed);
        assert_eq!(
            r.system.rdma.len(),
            cas.len(),
            "{name}: one RDMA device per CA"
        );
        assert_eq!(
            r.system.network.len(),
            cas.len(),
            "{name}: one netdev per CA"
        );
        assert_eq!(host_warnings(&r), Vec::<String>::new(), "{name}");
        seen += 1;
    }
    assert_eq!(seen, 5);
}

#[test]
fn h100_with_down_ports_detects_infiniband_and_down_links() {
    let root = Root::new();
    let cas = parse_ibstat(&read(H100_DOWN));
    let placed = write_capture(&root, &cas);
    let r = root.detect(&[]);
    cross_check(&r, &cas, &placed);
    let ib: Vec<&str> = r
        .system
        .rdma
        .iter()
        .filter(|d| d.kind == "infiniband")
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        ib,
        [
            "mlx5_0", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9"
        ]
    );
    for name in ["mlx5_2", "mlx5_7", "mlx5_8"] {
        let d = rdma(&r, name);
        assert_eq!(d.kind, "roce");
        assert_eq!(d.ports[0].state.as_deref(), Some("DOWN"));
        assert_eq!(d.ports[0].physical_state.as_deref(), Some("Disabled"));
        assert_eq!(d.ports[0].rate_bits_per_s, Some(40 * GBIT));
        let n = nic(&r, &d.netdevs[0]);
        assert_eq!(n.operstate.as_deref(), Some("down"));
        assert_eq!(
            n.speed_bits_per_s, None,
            "speed of a down link is unreadable"
        );
    }
    let ipoib = nic(&r, &rdma(&r, "mlx5_0").netdevs[0]);
    assert_eq!(ipoib.kind, "infiniband");
    assert_eq!(ipoib.speed_bits_per_s, Some(400 * GBIT));
    assert_eq!(host_warnings(&r), Vec::<String>::new());
}

#[test]
fn a_root_without_network_or_disks_is_empty_and_quiet() {
    let root = Root::new();
    let r = root.detect(&[]);
    assert!(r.system.network.is_empty());
    assert!(r.system.rdma.is_empty());
    assert!(r.system.storage.block_devices.is_empty());
    assert_eq!(
        r.system.storage.model_cache, None,
        "no HOME, no HF_* variables"
    );
    assert_eq!(host_warnings(&r), Vec::<String>::new());
}

// ---------------------------------------------------------------------------
// The model cache filesystem.

const MOUNTINFO: &str = "\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
30 22 259:5 / /data rw,relatime shared:20 - xfs /dev/nvme1n1 rw,attr2\n\
31 22 0:52 / /data2 rw,relatime shared:21 master:3 - nfs4 10.0.0.5:/export/models rw,vers=4.2\n\
32 30 0:53 / /data/hf\\040cache rw,relatime - lustre 10.1.0.1@o2ib:/scratch rw,flock\n\
33 22 0:54 / /mnt/win rw,noatime - 9p drvfs rw,aname=drvfs\n\
34 22 0:55 / /srv rw - cifs //files/share rw\n\
35 22 259:6 / /srv rw shared:9 - ext4 /dev/sdb1 rw\n\
this line is damaged\n\
36 22 0:56 / /broken rw no-separator-here\n";

#[test]
fn mountinfo_longest_component_prefix_wins() {
    let fs = |p: &str| filesystem_of(MOUNTINFO, p).unwrap();
    let got = fs("/data/hf cache/hub");
    assert_eq!(
        (got.mount_point.as_str(), got.fs_type.as_str(), got.network),
        ("/data/hf cache", "lustre", true),
        "the escaped space is decoded and the nested mount wins"
    );
    assert_eq!(got.source, "10.1.0.1@o2ib:/scratch");
    assert_eq!(got.path, "/data/hf cache/hub");
    assert_eq!(fs("/data/models").fs_type, "xfs");
    assert_eq!(fs("/data").mount_point, "/data");
    let d2 = fs("/data2/hub");
    assert_eq!(
        (d2.mount_point.as_str(), d2.fs_type.as_str()),
        ("/data2", "nfs4"),
        "/data is not a prefix of /data2"
    );
    assert_eq!(d2.source, "10.0.0.5:/export/models");
    assert!(d2.network);
    let root = fs("/datax/y");
    assert_eq!(
        (root.mount_point.as_str(), root.fs_type.as_str()),
        ("/", "ext4")
    );
    assert!(!root.network);
    assert_eq!(
        fs("/data/./x/../hf cache//hub/").mount_point,
        "/data/hf cache",
        "the path is folded lexically"
    );
    let win = fs("/mnt/win/models");
    assert_eq!(
        (win.fs_type.as_str(), win.network),
        ("9p", false),
        "9p is a host share"
    );
    let srv = fs("/srv/m");
    assert_eq!(
        (srv.fs_type.as_str(), srv.network),
        ("ext4", false),
        "the later mount on the same point is on top"
    );
    assert_eq!(
        fs("/broken/x").mount_point,
        "/",
        "a damaged line is skipped"
    );
    assert_eq!(filesystem_of(MOUNTINFO, "relative/path"), None);
    assert_eq!(filesystem_of("", "/x"), None);
}

#[test]
fn model_cache_directory_from_the_environment() {
    let root = Root::new();
    let dir = |env: &[(&str, &str)]| model_cache_dir(&root.probe(env));
    assert_eq!(
        dir(&[
            ("HF_HUB_CACHE", "/a/hub"),
            ("HF_HOME", "/b"),
            ("XDG_CACHE_HOME", "/c"),
            ("HOME", "/d")
        ])
        .as_deref(),
        Some("/a/hub")
    );
    assert_eq!(
        dir(&[("HF_HOME", "/b"), ("XDG_CACHE_HOME", "/c"), ("HOME", "/d")]).as_deref(),
        Some("/b/hub")
    );
    assert_eq!(
        dir(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/d")]).as_deref(),
        Some("/c/huggingface/hub")
    );
    assert_eq!(
        dir(&[("HOME", "/d")]).as_deref(),
        Some("/d/.cache/huggingface/hub")
    );
    assert_eq!(
        dir(&[("HF_HUB_CACHE", ""), ("HOME", "/d")]).as_deref(),
        Some("/d/.cache/huggingface/hub"),
        "an empty variable is unset"
    );
    assert_eq!(
        dir(&[("HF_HOME", "~/hf"), ("HOME", "/d")]).as_deref(),
        Some("/d/hf/hub")
    );
    assert_eq!(dir(&[]), None);
}

#[test]
fn model_cache_filesystem_follows_links_and_prefers_the_given_path() {
    let root = Root::new();
    root.file("proc/self/mountinfo", MOUNTINFO);
    // ~/.cache/huggingface is a link onto the NFS mount, as clusters do it.
    root.mkdir("data2/hf");
    root.mkdir("home/u/.cache");
    std::os::unix::fs::symlink("/data2/hf", root.path().join("home/u/.cache/huggingface")).unwrap();

    let p = root.probe(&[("HOME", "/home/u")]);
    let fs = model_cache_filesystem(&p, None).unwrap();
    assert_eq!(
        fs.path, "/home/u/.cache/huggingface/hub",
        "the path as asked"
    );
    assert_eq!(
        (fs.mount_point.as_str(), fs.fs_type.as_str()),
        ("/data2", "nfs4")
    );
    assert!(fs.network);

    let given = model_cache_filesystem(&p, Some("/data/models")).unwrap();
    assert_eq!(
        (given.path.as_str(), given.fs_type.as_str()),
        ("/data/models", "xfs")
    );

    let p = root.probe(&[("HOME", "/home/u"), ("PWD", "/data/hf cache")]);
    let rel = model_cache_filesystem(&p, Some("hub")).unwrap();
    assert_eq!(rel.fs_type, "lustre", "relative to the working directory");

    assert_eq!(model_cache_filesystem(&root.probe(&[]), None), None);
    let bare = Root::new();
    assert_eq!(
        model_cache_filesystem(&bare.probe(&[("HOME", "/root")]), None),
        None,
        "no mountinfo"
    );
}

// ---------------------------------------------------------------------------
// Robustness of every pure parser on damaged real text.

/// The value of the first token of `s` as Gb, in bits, computed apart from the library.
fn leading_gbits(s: &str) -> Option<f64> {
    s.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .map(|g| g * 1e9)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    #[test]
    fn ibstat_damaged_names_only_what_is_there(cut in 0usize..8_000, flip in 0usize..8_000, byte in proptest::num::u8::ANY, which in 0usize..5) {
        let files = [H100_ACTIVE, H100_DOWN, A100_ACTIVE, A100_IBPANIC, H100_ACTIVE_2];
        let bytes = std::fs::read(fixture(files[which])).unwrap();
        let text = String::from_utf8_lossy(&damaged(bytes, cut, flip, byte)).into_owned();
        let cas = parse_ibstat(&text);
        for ca in &cas {
            let header = format!("CA '{}'", ca.name);
            proptest::prop_assert!(text.contains(&header));
            for p in &ca.ports {
                let port_header = format!("Port {}:", p.port);
                proptest::prop_assert!(text.contains(&port_header));
            }
        }
        proptest::prop_assert!(cas.len() <= text.matches("CA '").count());
    }

    #[test]
    fn rate_damaged_is_the_leading_number_or_none(cut in 0usize..24, flip in 0usize..24, byte in proptest::num::u8::ANY) {
        let text = read(A100_IBSTATUS);
        let rate = text.lines().find_map(|l| l.trim().strip_prefix("rate:")).unwrap().trim().to_string();
        let s = String::from_utf8_lossy(&damaged(rate.into_bytes(), cut, flip, byte)).into_owned();
        if let Some(v) = parse_rate(&s) {
            let expect = leading_gbits(&s).unwrap();
            proptest::prop_assert!((v as f64 - expect).abs() < 1.0, "{s:?}: {v}");
            proptest::prop_assert!(s.contains("Gb/sec"));
        }
    }

    #[test]
    fn port_state_damaged_keeps_the_name_it_read(cut in 0usize..12, flip in 0usize..12, byte in proptest::num::u8::ANY) {
        let text = read(A100_IBSTATUS);
        let state = text.lines().find_map(|l| l.trim().strip_prefix("state:")).unwrap().trim().to_string();
        let s = String::from_utf8_lossy(&damaged(state.into_bytes(), cut, flip, byte)).into_owned();
        if let Some(Some(name)) = parse_port_state(&s) {
            let (num, rest) = s.split_once(':').unwrap();
            proptest::prop_assert!(num.trim().bytes().all(|b| b.is_ascii_digit()));
            proptest::prop_assert_eq!(rest.trim(), name.as_str());
        }
    }

    #[test]
    fn net_speed_damaged_is_megabits_or_none(cut in 0usize..8, flip in 0usize..8, byte in proptest::num::u8::ANY) {
        let s = String::from_utf8_lossy(&damaged(b"100000\n".to_vec(), cut, flip, byte)).into_owned();
        match parse_net_speed(&s) {
            Some(Some(bps)) => {
                let mbps: u64 = s.trim().parse().unwrap();
                proptest::prop_assert_eq!(bps, mbps * 1_000_000);
            }
            Some(None) => proptest::prop_assert!(s.trim().parse::<i64>().is_ok()),
            None => proptest::prop_assert!(s.trim().parse::<i64>().is_err()),
        }
    }

    #[test]
    fn mountinfo_damaged_still_answers_with_a_holding_mount(cut in 0usize..700, flip in 0usize..700, byte in proptest::num::u8::ANY) {
        let text = String::from_utf8_lossy(&damaged(MOUNTINFO.as_bytes().to_vec(), cut, flip, byte)).into_owned();
        let path = "/data/hf cache/hub";
        if let Some(fs) = filesystem_of(&text, path) {
            let mp = fs.mount_point.as_str();
            proptest::prop_assert!(
                mp == "/" || path == mp || path.strip_prefix(mp).is_some_and(|r| r.starts_with('/')),
                "{mp:?} does not hold {path:?}"
            );
            proptest::prop_assert_eq!(fs.path.as_str(), path);
            proptest::prop_assert!(!fs.fs_type.is_empty());
        }
    }
}
