//! Topology scenarios: fake sysfs roots laid out like real servers (PCI
//! bridge chains, NUMA nodes, InfiniBand HCAs) with captured tool outputs,
//! checked for the link graph, interconnect domains and affinities, and for
//! the planner's tensor-parallel domains taken from that graph.
#![allow(clippy::disallowed_methods, reason = "tests build fake roots")]

mod support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use ai_hwaccel::detect::BackendId;
use ai_hwaccel::plan::PlanDevice;
use ai_hwaccel::topology::Topology;
use ai_hwaccel::{Registry, detect::sysfs::format_cpulist};
use support::{detect_fake, fixture, write_script};

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A PCI function at `host/chain…/addr` with its bridges, laid out as the
/// kernel does: the device directory under /sys/devices and a relative
/// symlink in /sys/bus/pci/devices for the function and for every bridge.
struct Func<'a> {
    host: &'a str,
    bridges: &'a [&'a str],
    addr: &'a str,
    vendor: &'a str,
    device: &'a str,
    class: &'a str,
    driver: Option<&'a str>,
    numa: i32,
    local_cpus: &'a str,
    speed: &'a str,
    width: u32,
}

impl Func<'_> {
    fn write(&self, root: &Path) -> PathBuf {
        std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
        let mut rel = PathBuf::from(self.host);
        for b in self.bridges {
            rel.push(b);
            let d = root.join("sys/devices").join(&rel);
            write(&d.join("vendor"), "0x8086\n");
            write(&d.join("device"), "0x352a\n");
            write(&d.join("class"), "0x060400\n");
            let link = root.join("sys/bus/pci/devices").join(b);
            if !link.exists() {
                symlink(format!("../../../devices/{}", rel.display()), link).unwrap();
            }
        }
        rel.push(self.addr);
        let d = root.join("sys/devices").join(&rel);
        for (f, v) in [
            ("vendor", format!("0x{}\n", self.vendor)),
            ("device", format!("0x{}\n", self.device)),
            ("class", format!("0x{}\n", self.class)),
            ("numa_node", format!("{}\n", self.numa)),
            ("local_cpulist", format!("{}\n", self.local_cpus)),
            ("current_link_speed", format!("{}\n", self.speed)),
            ("current_link_width", format!("{}\n", self.width)),
            ("max_link_speed", format!("{}\n", self.speed)),
            ("max_link_width", format!("{}\n", self.width)),
        ] {
            write(&d.join(f), &v);
        }
        if let Some(drv) = self.driver {
            std::fs::create_dir_all(root.join("sys/bus/pci/drivers").join(drv)).unwrap();
            symlink(
                format!("../../../../bus/pci/drivers/{drv}"),
                d.join("driver"),
            )
            .unwrap();
        }
        symlink(
            format!("../../../devices/{}", rel.display()),
            root.join("sys/bus/pci/devices").join(self.addr),
        )
        .unwrap();
        d
    }
}

/// An InfiniBand HCA function `dev` (e.g. mlx5_0) with one port and its
/// IPoIB interface, under the PCI function directory `fdir` (`rel` from
/// /sys/devices). Port values follow the real ConnectX-7 capture
/// tests/fixtures/ibstat/gpud__ibstat__h100-all-active-0.txt where used.
fn hca(root: &Path, fdir: &Path, rel: &str, addr: &str, dev: &str, netdev: &str, rate: &str) {
    let ib = fdir.join("infiniband").join(dev);
    write(&ib.join("hca_type"), "MT4129\n");
    write(&ib.join("fw_ver"), "28.39.1002\n");
    write(&ib.join("board_id"), "MT_0000000838\n");
    write(&ib.join("node_guid"), "a088:c203:0051:ab00\n");
    write(&ib.join("ports/1/state"), "4: ACTIVE\n");
    write(&ib.join("ports/1/phys_state"), "5: LinkUp\n");
    write(&ib.join("ports/1/rate"), &format!("{rate}\n"));
    write(&ib.join("ports/1/link_layer"), "InfiniBand\n");
    symlink(format!("../../../{addr}"), ib.join("device")).unwrap();
    std::fs::create_dir_all(root.join("sys/class/infiniband")).unwrap();
    symlink(
        format!("../../devices/{rel}/infiniband/{dev}"),
        root.join("sys/class/infiniband").join(dev),
    )
    .unwrap();
    let net = fdir.join("net").join(netdev);
    write(&net.join("type"), "32\n");
    write(&net.join("operstate"), "up\n");
    write(&net.join("mtu"), "4092\n");
    write(&net.join("speed"), "400000\n");
    symlink(format!("../../../{addr}"), net.join("device")).unwrap();
    std::fs::create_dir_all(root.join("sys/class/net")).unwrap();
    symlink(
        format!("../../devices/{rel}/net/{netdev}"),
        root.join("sys/class/net").join(netdev),
    )
    .unwrap();
}

/// Two NUMA nodes with the CPU lists of the captures.
fn numa(root: &Path, nodes: &[&str]) {
    let all: Vec<String> = nodes.iter().map(|s| s.to_string()).collect();
    for (i, cpus) in nodes.iter().enumerate() {
        let d = root.join(format!("sys/devices/system/node/node{i}"));
        write(&d.join("cpulist"), &format!("{cpus}\n"));
        write(
            &d.join("meminfo"),
            &format!(
                "Node {i} MemTotal:       1056481088 kB\nNode {i} MemFree:        1000000000 kB\n"
            ),
        );
        write(
            &d.join("distance"),
            if i == 0 { "10 21\n" } else { "21 10\n" },
        );
    }
    write(
        &root.join("sys/devices/system/cpu/online"),
        &format!("{}\n", all.join(",")),
    );
}

/// `nvidia-smi -q -x` for the given GPUs, derived from the real A10G capture
/// (tests/fixtures/nvidia-smi-xml/telegraf__a10g.xml): its one `<gpu>` block
/// repeated with each GPU's bus id, minor number, UUID and the H100 SXM's
/// product name, PCI device id and memory substituted.
fn h100_xml(addrs: &[&str]) -> String {
    let real = std::fs::read_to_string(fixture("nvidia-smi-xml/telegraf__a10g.xml")).unwrap();
    let start = real.find("<gpu id=").unwrap();
    let end = real.find("</gpu>").unwrap() + "</gpu>".len();
    let (head, block, tail) = (&real[..start], &real[start..end], &real[end..]);
    let mut out = head.replace(
        "<attached_gpus>1</attached_gpus>",
        &format!("<attached_gpus>{}</attached_gpus>", addrs.len()),
    );
    for (i, a) in addrs.iter().enumerate() {
        let bus = &a[5..7];
        let upper = format!("00000000:{}:00.0", bus.to_ascii_uppercase());
        out += &block
            .replace("00000000:00:1E.0", &upper)
            .replace(
                "<pci_bus>00</pci_bus>",
                &format!("<pci_bus>{bus}</pci_bus>"),
            )
            .replace("<pci_device>1E</pci_device>", "<pci_device>00</pci_device>")
            .replace("NVIDIA A10G", "NVIDIA H100 80GB HBM3")
            .replace("000000DE", "233010DE")
            .replace(
                "9a9a6c50-2a47-2f51-a902-b82c3b127e94",
                &format!("00000000-0000-0000-0000-00000000000{i}"),
            )
            .replace(
                "<minor_number>0</minor_number>",
                &format!("<minor_number>{i}</minor_number>"),
            )
            .replace("<total>23028 MiB</total>", "<total>81559 MiB</total>");
        out += "\n";
    }
    out + tail
}

const H100_NODES: [&str; 2] = ["0-47,96-143", "48-95,144-191"];

/// An 8x H100 SXM HGX server: each GPU and one ConnectX-7 HCA under their
/// own PCIe switch (upstream port + two downstream ports) on their own host
/// bridge, four per socket; `nvidia-smi` answers `-q -x` and the real 8-GPU
/// `topo -m` capture.
fn hgx_h100(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("root");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    numa(&root, &H100_NODES);
    let hosts = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"];
    let mut gpus = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let hb = u8::from_str_radix(h, 16).unwrap();
        let bus = |k: u8| format!("0000:{:02x}", hb + k);
        let rp = format!("{}:01.0", bus(0));
        let up = format!("{}:00.0", bus(1));
        let down_gpu = format!("{}:00.0", bus(2));
        let down_nic = format!("{}:01.0", bus(2));
        let gpu = format!("{}:00.0", bus(3));
        let nic = format!("{}:00.0", bus(4));
        let (node, cpus) = if i < 4 {
            (0, H100_NODES[0])
        } else {
            (1, H100_NODES[1])
        };
        let host = format!("pci0000:{h}");
        Func {
            host: &host,
            bridges: &[&rp, &up, &down_gpu],
            addr: &gpu,
            vendor: "10de",
            device: "2330",
            class: "030200",
            driver: Some("nvidia"),
            numa: node,
            local_cpus: cpus,
            speed: "32.0 GT/s PCIe",
            width: 16,
        }
        .write(&root);
        let fdir = Func {
            host: &host,
            bridges: &[&rp, &up, &down_nic],
            addr: &nic,
            vendor: "15b3",
            device: "1021",
            class: "020700",
            driver: Some("mlx5_core"),
            numa: node,
            local_cpus: cpus,
            speed: "32.0 GT/s PCIe",
            width: 16,
        }
        .write(&root);
        let rel = format!("{host}/{rp}/{up}/{down_nic}/{nic}");
        hca(
            &root,
            &fdir,
            &rel,
            &nic,
            &format!("mlx5_{i}"),
            &format!("ibp{i}"),
            "400 Gb/sec (4X NDR)",
        );
        gpus.push(gpu);
    }
    let addrs: Vec<&str> = gpus.iter().map(String::as_str).collect();
    write(&dir.join("smi.xml"), &h100_xml(&addrs));
    let topo = fixture("nvidia-smi-topo/thunderkittens-167__8x-h100-nv18.txt");
    write_script(
        &bin,
        "nvidia-smi",
        &format!(
            "case \"$1\" in -q) cat '{}' ;; topo) cat '{}' ;; *) exit 1 ;; esac",
            dir.join("smi.xml").display(),
            topo.display()
        ),
    );
    (root, bin)
}

fn hgx_detect(env: &[(&str, &str)]) -> (tempfile::TempDir, Registry) {
    let tmp = tempfile::tempdir().unwrap();
    let (root, bin) = hgx_h100(tmp.path());
    let reg = detect_fake(
        &root,
        &bin,
        env,
        &[BackendId::System, BackendId::Nvidia, BackendId::Pci],
    );
    (tmp, reg)
}

fn gpu_ids(reg: &Registry) -> Vec<String> {
    reg.available_accelerators().map(|d| d.id.clone()).collect()
}

#[test]
fn hgx_h100_nvlink_domain_numa_and_nic_affinity() {
    let (_tmp, reg) = hgx_detect(&[]);
    let t = Topology::from_registry(&reg);
    assert_eq!(t.devices.len(), 8, "{:?}", reg.warnings);
    let labels: Vec<&str> = t.devices.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"
        ]
    );
    // 28 pairs, every one NV18 from the capture, 450 GB/s one way from the
    // spec database (900 GB/s both directions over 18 links, all 18 used).
    assert_eq!(t.links.len(), 28);
    for l in &t.links {
        assert_eq!(
            (l.link_type.as_str(), l.count),
            ("nvlink", Some(18)),
            "{l:?}"
        );
        assert_eq!(l.bandwidth_bytes_per_s, Some(450_000_000_000));
        assert_eq!(l.bandwidth_source.as_deref(), Some("spec"));
        assert_eq!(l.cell(), "NV18");
    }
    assert_eq!(t.domains, vec![gpu_ids(&reg)]);
    assert_eq!(t.domain_types, ["nvlink"]);
    // Affinity: NUMA and local CPUs from sysfs agree with the capture's
    // CPU/NUMA affinity columns; each GPU's HCA shares its PCIe switch.
    for (i, a) in t.affinity.iter().enumerate() {
        let node = u32::from(i >= 4);
        assert_eq!(a.numa_node, Some(node));
        assert_eq!(format_cpulist(&a.cpus), H100_NODES[node as usize]);
        assert_eq!(a.cpus_source.as_deref(), Some("local_cpulist"));
        assert_eq!(a.nics, [format!("mlx5_{i}")], "{a:?}");
        let types: Vec<(&str, &str)> = a
            .nic_paths
            .iter()
            .map(|p| (p.nic.as_str(), p.path_type.as_str()))
            .collect();
        assert_eq!(types.len(), 8);
        assert_eq!(types[0], (format!("mlx5_{i}").as_str(), "pix"));
        // Three other HCAs on the same socket (other host bridges), four across.
        assert_eq!(types.iter().filter(|(_, t)| *t == "node").count(), 3);
        assert_eq!(types.iter().filter(|(_, t)| *t == "sys").count(), 4);
        let d = reg.device(&a.device).unwrap();
        assert_eq!(
            d.extra.get("cpu_affinity").map(String::as_str),
            Some(H100_NODES[node as usize])
        );
    }
    assert_eq!(t.nics.len(), 8);
    assert_eq!(t.nics[0].kind, "infiniband");
    assert_eq!(t.nics[0].rate_bits_per_s, Some(400_000_000_000));
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(t.numa_nodes[1].cpus.len(), 96);
    assert!(t.notes.is_empty(), "{:?}", t.notes);

    // The planner's tensor-parallel domain is the NVLink domain: all eight.
    let pd = PlanDevice::from_registry(&reg);
    assert_eq!(pd.len(), 8);
    assert!(pd.iter().all(|d| d.domain == pd[0].domain));
}

#[test]
fn restricted_container_sees_two_gpus_and_domains_shrink() {
    let (_tmp, reg) = hgx_detect(&[("CUDA_VISIBLE_DEVICES", "2,3")]);
    let t = Topology::from_registry(&reg);
    // All eight are listed; only the visible two are available and form the domain.
    assert_eq!(t.devices.len(), 8);
    assert_eq!(t.devices.iter().filter(|d| d.available).count(), 2);
    let visible = gpu_ids(&reg);
    assert_eq!(visible.len(), 2);
    assert_eq!(t.domains, vec![visible.clone()]);
    for d in reg
        .devices
        .iter()
        .filter(|d| d.is_accelerator() && !d.available)
    {
        assert_eq!(
            d.unavailable_reason.as_deref(),
            Some("hidden by CUDA_VISIBLE_DEVICES"),
            "{}",
            d.id
        );
    }
    let pd = PlanDevice::from_registry(&reg);
    assert_eq!(pd.iter().map(|d| d.id.clone()).collect::<Vec<_>>(), visible);
    assert_eq!(pd[0].domain, pd[1].domain);
}

/// A 2-socket PCIe server: per socket a root port with a PCIe switch holding
/// two GPUs and an HDR InfiniBand HCA, and a second root port with a switch
/// holding two more GPUs. No vendor tool answers: relations come from sysfs.
fn pcie_server(root: &Path) {
    numa(root, &["0-31,64-95", "32-63,96-127"]);
    for (s, host) in ["00", "80"].iter().enumerate() {
        let hb = u8::from_str_radix(host, 16).unwrap();
        let b = |k: u8, dev: u8| format!("0000:{:02x}:{dev:02x}.0", hb + k);
        let hostname = format!("pci0000:{host}");
        let cpus = if s == 0 { "0-31,64-95" } else { "32-63,96-127" };
        let gpu = |bridges: &[&str], addr: &str| {
            Func {
                host: &hostname,
                bridges,
                addr,
                vendor: "10de",
                device: "26b9",
                class: "030200",
                driver: Some("nvidia"),
                numa: s as i32,
                local_cpus: cpus,
                speed: "16.0 GT/s PCIe",
                width: 16,
            }
            .write(root)
        };
        let (rp1, up1) = (b(0, 1), b(1, 0));
        gpu(&[&rp1, &up1, &b(2, 0)], &b(3, 0));
        gpu(&[&rp1, &up1, &b(2, 1)], &b(4, 0));
        let nic = b(5, 0);
        let fdir = Func {
            host: &hostname,
            bridges: &[&rp1, &up1, &b(2, 2)],
            addr: &nic,
            vendor: "15b3",
            device: "101b",
            class: "020700",
            driver: Some("mlx5_core"),
            numa: s as i32,
            local_cpus: cpus,
            speed: "16.0 GT/s PCIe",
            width: 16,
        }
        .write(root);
        let rel = format!("{hostname}/{rp1}/{up1}/{}/{nic}", b(2, 2));
        hca(
            root,
            &fdir,
            &rel,
            &nic,
            &format!("mlx5_{s}"),
            &format!("ibp{s}"),
            "200 Gb/sec (4X HDR)",
        );
        let (rp2, up2) = (b(0, 2), b(8, 0));
        gpu(&[&rp2, &up2, &b(9, 0)], &b(10, 0));
        gpu(&[&rp2, &up2, &b(9, 1)], &b(11, 0));
    }
}

#[test]
fn two_socket_pcie_server_with_infiniband() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    pcie_server(&root);
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let reg = detect_fake(
        &root,
        &bin,
        &[],
        &[BackendId::System, BackendId::Nvidia, BackendId::Pci],
    );
    let t = Topology::from_registry(&reg);
    assert_eq!(t.devices.len(), 8, "{:?}", reg.warnings);
    let id = |i: usize| t.devices[i].id.as_str();
    let ty = |a: usize, b: usize| t.link(id(a), id(b)).unwrap().link_type.clone();
    assert_eq!(ty(0, 1), "pix", "same switch");
    assert_eq!(ty(0, 2), "phb", "other root port, same host bridge");
    assert_eq!(ty(2, 3), "pix");
    assert_eq!(ty(0, 4), "sys", "across sockets");
    assert_eq!(ty(5, 7), "phb");
    for l in &t.links {
        assert_eq!(l.source, "pci-path");
        // Gen4 x16 both ends: 16 GT/s × 16 × 128/130 / 8.
        assert_eq!(l.bandwidth_bytes_per_s, Some(31_507_692_308));
        assert_eq!(l.bandwidth_source.as_deref(), Some("pcie-link"));
    }
    // No direct links: one PCIe domain per socket.
    assert_eq!(t.domain_types, ["pcie", "pcie"]);
    assert_eq!(
        t.domains[0],
        (0..4).map(|i| id(i).to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        t.domains[1],
        (4..8).map(|i| id(i).to_string()).collect::<Vec<_>>()
    );
    // GPUs 0/1 share the HCA's switch; 2/3 reach it through the host bridge.
    assert_eq!(t.affinity[0].nics, ["mlx5_0"]);
    assert_eq!(t.affinity[1].nics, ["mlx5_0"]);
    assert!(t.affinity[2].nics.is_empty());
    assert_eq!(t.affinity[2].nic_paths[0].path_type, "phb");
    assert_eq!(t.affinity[4].nics, ["mlx5_1"]);
    assert_eq!(format_cpulist(&t.affinity[6].cpus), "32-63,96-127");
    let ib = &reg.system.rdma;
    assert_eq!(ib.len(), 2);
    assert_eq!(ib[0].kind, "infiniband");
    assert_eq!(ib[0].ports[0].rate_bits_per_s, Some(200_000_000_000));
    assert_eq!(ib[0].ports[0].state.as_deref(), Some("ACTIVE"));
    // The planner groups by socket.
    let pd = PlanDevice::from_registry(&reg);
    assert_eq!(pd.len(), 8);
    assert_eq!(pd[0].domain, pd[3].domain);
    assert_ne!(pd[3].domain, pd[4].domain);
}

#[test]
fn tool_matrices_parse_both_tab_and_space_pastes() {
    use ai_hwaccel::detect::format;
    let parse = |name: &str| {
        let bytes = std::fs::read(fixture(&format!("nvidia-smi-topo/{name}"))).unwrap();
        (format("nvidia-smi-topo").unwrap().parse)(&bytes)
    };
    let h100 = parse("thunderkittens-167__8x-h100-nv18.txt");
    assert!(h100.warnings.is_empty(), "{:?}", h100.warnings);
    assert_eq!(h100.devices.len(), 8);
    for d in &h100.devices {
        assert_eq!(d.links.len(), 7);
        assert!(
            d.links
                .iter()
                .all(|l| l.kind == "nvlink" && l.count == Some(18))
        );
    }
    assert_eq!(h100.devices[5].numa_node, Some(1));
    assert_eq!(h100.devices[5].extra["cpu_affinity"], "48-95,144-191");

    // 7x B300 (one fewer than the board's 8), NV18 between every pair.
    let b300 = parse("xe9780-perf-test__topo-m__7x-b300-sxm6-ac-nv18__610.57.04.txt");
    assert!(b300.warnings.is_empty(), "{:?}", b300.warnings);
    assert_eq!(b300.devices.len(), 7);
    for d in &b300.devices {
        assert_eq!(d.links.len(), 6);
        assert!(
            d.links
                .iter()
                .all(|l| l.kind == "nvlink" && l.count == Some(18))
        );
    }
    assert_eq!(
        (b300.devices[2].numa_node, b300.devices[3].numa_node),
        (Some(0), Some(1))
    );
    assert_eq!(b300.devices[3].extra["cpu_affinity"], "1,3,5,7,9,11");

    let pcie = parse("go-gpuallocator-17__8x-rtx-4090-pcie.txt");
    assert_eq!(pcie.devices.len(), 8);
    for d in &pcie.devices {
        // NIC columns are not GPU peers.
        assert_eq!(d.links.len(), 7);
        assert!(d.links.iter().all(|l| l.kind == "sys"));
    }
    assert_eq!(pcie.devices[3].numa_node, Some(0));
    assert_eq!(pcie.devices[4].extra["cpu_affinity"], "56-111,168-223");
    // A registry made of the parsed devices gives the same graph.
    let reg = Registry {
        devices: pcie.devices,
        ..Registry::default()
    };
    let t = Topology::from_registry(&reg);
    assert_eq!(t.links.len(), 28);
    assert!(
        t.links
            .iter()
            .all(|l| l.link_type == "sys" && l.source == "tool")
    );
    assert_eq!(t.domain_types, ["pcie", "pcie"], "split by NUMA node");
}

#[test]
fn mi300x_node_is_one_xgmi_domain() {
    // Generated by tests/fixtures/roots/make-mi300x-spx.sh from the real
    // MI300X KFD capture's link values (see the script's header).
    let root = fixture("roots/mi300x-spx-8gpu");
    let reg = detect_fake(
        &root,
        &root.join("bin"),
        &[],
        &[BackendId::Amd, BackendId::Pci],
    );
    let t = Topology::from_registry(&reg);
    assert_eq!(t.devices.len(), 8);
    assert_eq!(t.links.len(), 28);
    for l in &t.links {
        assert_eq!(l.link_type, "xgmi", "{l:?}");
        // KFD io_link max_bandwidth 50000 MB/s, reported, not from the spec.
        assert_eq!(l.bandwidth_bytes_per_s, Some(50_000_000_000));
        assert_eq!(l.bandwidth_source.as_deref(), Some("reported"));
        assert_eq!(l.cell(), "XGMI");
    }
    assert_eq!(t.domain_types, ["xgmi"]);
    assert_eq!(t.domains[0].len(), 8);
    let numa: Vec<Option<u32>> = t.affinity.iter().map(|a| a.numa_node).collect();
    assert_eq!(numa, [0, 0, 0, 0, 1, 1, 1, 1].map(Some));
    let pd = PlanDevice::from_registry(&reg);
    assert!(pd.iter().all(|d| d.domain == pd[0].domain));
}

#[test]
fn links_without_bandwidth_take_the_datasheet_per_link_figure() {
    // amd-smi/rocm-smi report xGMI peers without bandwidth: one MI300X link
    // is 896 GB/s over 7 links, halved for one direction (64 GB/s).
    let root = fixture("roots/mi300x-spx-8gpu");
    let mut reg = detect_fake(
        &root,
        &root.join("bin"),
        &[],
        &[BackendId::Amd, BackendId::Pci],
    );
    for d in &mut reg.devices {
        for l in &mut d.links {
            l.bandwidth_bytes_per_s = None;
        }
    }
    let t = Topology::from_registry(&reg);
    assert!(
        t.links
            .iter()
            .all(|l| l.bandwidth_bytes_per_s == Some(64_000_000_000)
                && l.bandwidth_source.as_deref() == Some("spec"))
    );
    // Unknown devices (no spec) keep unknown bandwidth.
    for d in &mut reg.devices {
        d.spec = None;
    }
    let t = Topology::from_registry(&reg);
    assert!(t.links.iter().all(|l| l.bandwidth_bytes_per_s.is_none()));
}

#[test]
fn cuda_indices_count_the_gpus_the_runtime_left_visible() {
    // The container runtime gave GPUs 4-7; CUDA_VISIBLE_DEVICES=1,2 inside
    // it means the second and third of those: GPUs 5 and 6.
    let (_tmp, reg) = hgx_detect(&[
        ("NVIDIA_VISIBLE_DEVICES", "4,5,6,7"),
        ("CUDA_VISIBLE_DEVICES", "1,2"),
    ]);
    let t = Topology::from_registry(&reg);
    let avail: Vec<&str> = t
        .devices
        .iter()
        .filter(|d| d.available)
        .map(|d| d.label.as_str())
        .collect();
    assert_eq!(avail, ["GPU5", "GPU6"]);
    let why = |i: usize| {
        reg.device(&t.devices[i].id)
            .unwrap()
            .unavailable_reason
            .clone()
    };
    assert_eq!(why(0).as_deref(), Some("hidden by NVIDIA_VISIBLE_DEVICES"));
    assert_eq!(why(4).as_deref(), Some("hidden by CUDA_VISIBLE_DEVICES"));
    assert_eq!(why(7).as_deref(), Some("hidden by CUDA_VISIBLE_DEVICES"));
    assert_eq!(t.domains.len(), 1);
    assert_eq!(t.domains[0].len(), 2);
    assert_eq!(
        reg.system.environment.visibility.len(),
        2,
        "{:?}",
        reg.system.environment
    );
}
