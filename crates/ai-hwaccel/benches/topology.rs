#![allow(missing_docs, reason = "criterion macros")]
//! Topology benchmarks: building the link graph, domains and affinities of
//! an HGX-like node (8 GPUs on NVSwitch, 8 HCAs) and of a 64-accelerator
//! PCIe registry (2,016 pairs), both made in memory.

use ai_hwaccel::model::{
    Device, DeviceLink, Family, PciPath, RdmaDevice, RdmaPort, Registry, SystemInfo,
};
use ai_hwaccel::topology::Topology;
use criterion::{Criterion, criterion_group, criterion_main};

fn path(host: u8, chain: &[(u8, u8)]) -> PciPath {
    PciPath {
        host_bridge: format!("pci0000:{host:02x}"),
        bridges: chain
            .iter()
            .map(|(b, d)| format!("0000:{b:02x}:{d:02x}.0").parse().unwrap())
            .collect(),
    }
}

fn registry(n: usize, nvswitch: bool) -> Registry {
    let mut sys = SystemInfo::default();
    let mut devices = Vec::new();
    for i in 0..n {
        let host = (i % 8) as u8 * 0x10 + 0x10;
        let id = format!("pci:0000:{:02x}:00.{}", host + 3, i / 8);
        let mut d = Device::new(&id, "NVIDIA H100 80GB HBM3", "nvidia", Family::Gpu, "bench");
        d.pci_address = Some(id[4..].parse().unwrap());
        d.pci_path = Some(path(host, &[(host, 1), (host + 1, 0), (host + 2, 0)]));
        d.numa_node = Some(u32::from(i % 8 >= 4));
        d.index = Some(i as u32);
        if nvswitch {
            d.links = (0..4)
                .map(|s| DeviceLink {
                    peer: format!("pci:0000:0{s}:00.0"),
                    kind: "nvswitch".into(),
                    count: Some(if s < 2 { 5 } else { 4 }),
                    bandwidth_bytes_per_s: None,
                })
                .collect();
        }
        devices.push(d);
        if i < 8 {
            sys.rdma.push(RdmaDevice {
                name: format!("mlx5_{i}"),
                kind: "infiniband".into(),
                pci_path: Some(path(host, &[(host, 1), (host + 1, 0), (host + 2, 1)])),
                numa_node: Some(u32::from(i >= 4)),
                ports: vec![RdmaPort {
                    port: 1,
                    rate_bits_per_s: Some(400_000_000_000),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
    }
    Registry {
        devices,
        system: sys,
        ..Registry::default()
    }
}

fn topology(c: &mut Criterion) {
    let hgx = registry(8, true);
    c.bench_function("topology/8xh100-nvswitch-8hca", |b| {
        b.iter(|| Topology::from_registry(std::hint::black_box(&hgx)))
    });
    let big = registry(64, false);
    c.bench_function("topology/64-gpus-pcie", |b| {
        b.iter(|| Topology::from_registry(std::hint::black_box(&big)))
    });
}

criterion_group!(benches, topology);
criterion_main!(benches);
