//! FPGA backend: real `xbutil examine` / `xbmgmt examine` host reports
//! (fixtures/xbutil-examine) and `fpgainfo fme` outputs (fixtures/fpgainfo-fme;
//! provenance in SOURCES.md), fake roots with XRT's Alveo ids (xclmgmt +
//! xocl functions), Intel DFL/OFS cards with their fpga_region/fpga_manager
//! class entries and a fake `fpgainfo` printing real captures, an SoC FPGA
//! manager, failing tools and corrupted outputs.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and tools and read fixtures"
)]

mod support;
use support::{FakePci, detect_fake, fixture, write_script};

use std::path::Path;

use ai_hwaccel::detect::{ParseOutput, format};
use ai_hwaccel::model::Family;
use ai_hwaccel::{BackendId, Registry};

const U30: &str = "xbutil-examine/video-sdk-v1.0-doc__xbutil-examine__4x-u30__xrt-2.10.43.txt";
const PR6423: &str =
    "xbutil-examine/xrt-pr6423__xbmgmt-examine__u280-and-u250-golden__xrt-2.13.0.txt";

fn parse(bytes: &[u8]) -> ParseOutput {
    (format("xbutil-examine").expect("format registered").parse)(bytes)
}

#[test]
fn u30_list_layout() {
    let out = parse(&std::fs::read(fixture(U30)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let ids: Vec<&str> = out.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "pci:0000:e3:00.1",
            "pci:0000:e2:00.1",
            "pci:0000:22:00.1",
            "pci:0000:21:00.1"
        ]
    );
    for d in &out.devices {
        assert_eq!(d.name, "Xilinx Alveo U30");
        assert_eq!((d.vendor.as_str(), d.family), ("xilinx", Family::Fpga));
        assert_eq!(d.extra["shell"], "xilinx_u30_gen3x4_base_1");
        assert_eq!(d.extra["xrt_version"], "2.10.43");
        assert_eq!(d.driver_version.as_deref(), Some("2.10.43"), "XOCL version");
        assert!(d.available);
        assert_eq!(d.memory_bytes, None);
    }
}

#[test]
fn table_layout_management_and_golden() {
    let out = parse(&std::fs::read(fixture(PR6423)).unwrap());
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.devices.len(), 2);
    let (u280, golden) = (&out.devices[0], &out.devices[1]);
    assert_eq!(u280.id, "pci:0000:65:00.0");
    assert_eq!(u280.name, "Xilinx Alveo U280");
    assert_eq!(u280.extra["shell"], "xilinx_u280_xdma_201920_3");
    assert_eq!(u280.extra["platform_uuid"], "0x5e278820");
    assert_eq!(u280.extra["xrt_device_id"], "mgmt(inst=25856)");
    assert_eq!(u280.extra["role"], "management");
    assert_eq!(
        u280.driver_version.as_deref(),
        Some("2.13.0"),
        "XCLMGMT version"
    );
    assert!(!u280.available, "applications use the user function");
    assert_eq!(golden.id, "pci:0000:17:00.0");
    assert_eq!(golden.name, "Xilinx Alveo U250");
    assert_eq!(golden.extra["role"], "golden");
    assert!(
        !golden.extra.contains_key("platform_uuid"),
        "n/a is unknown"
    );
    assert!(!golden.available);
    assert!(
        golden
            .unavailable_reason
            .as_deref()
            .unwrap()
            .contains("golden")
    );
}

#[test]
fn not_ready_note_and_garbage() {
    let text = "Devices present\n  [0000:d9:00.1] : xilinx_u50_gen3x16_nodma_base_1 \n  [0000:b1:00.1] :  NOTE: Device not ready for use\n  [zz:00.1] : x\n  [0000:01:00.1 : y\n";
    let out = parse(text.as_bytes());
    assert_eq!(out.devices.len(), 2);
    assert_eq!(out.devices[0].name, "Xilinx Alveo U50");
    assert!(out.devices[0].available);
    assert!(!out.devices[1].available);
    assert_eq!(
        out.devices[1].unavailable_reason.as_deref(),
        Some("xbutil: device not ready")
    );
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    let out = parse(b"Devices present\n  0 devices found\n");
    assert!(out.devices.is_empty() && !out.warnings.is_empty());
}

// ---- fake root + fake tool ------------------------------------------------

fn func(device: &'static str, class: &'static str, driver: &'static str) -> FakePci<'static> {
    FakePci {
        vendor: "10ee",
        device,
        class,
        driver: Some(driver),
        numa: Some(0),
        link: true,
    }
}

/// An Alveo U250: management function 5004 (xclmgmt) and user function
/// 5005 (xocl), XRT devices.h ids.
fn u250_root(root: &Path) {
    func("5004", "120000", "xclmgmt").write(root, "0000:3b:00.0");
    func("5005", "120000", "xocl").write(root, "0000:3b:00.1");
}

/// The table layout of later XRT releases for this card (derived: the
/// header and spacing of the PR 6423 capture, values of the fake root).
const U250_TABLE: &str = "XRT\n  Version              : 2.14.354\n  XOCL                 : 2.14.354, 43926231f7183688add2dccfd391b36a1f000bea\n  XCLMGMT              : 2.14.354, 43926231f7183688add2dccfd391b36a1f000bea\n\nDevices present\nBDF             :  Shell                               Logic UUID                            Device ID       Device Ready*\n-------------------------------------------------------------------------------------------------------------------------\n[0000:3b:00.1]  :  xilinx_u250_gen3x16_xdma_shell_4_1  2A1E9E61-9AB8-1A04-6DF6-6E9B7E5F1A56  user(inst=128)  Yes\n\n\n* Devices that are not ready will have reduced functionality when using XRT tools\n";

fn run(root: &Path, bin: &Path) -> Registry {
    detect_fake(root, bin, &[], &[BackendId::Fpga, BackendId::Pci])
}

#[test]
fn alveo_u250_management_and_user_functions() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    u250_root(root.path());
    let out = bin.path().join("out.txt");
    std::fs::write(&out, U250_TABLE).unwrap();
    write_script(
        bin.path(),
        "xbutil",
        &format!("[ \"$1\" = examine ] && cat '{}'\n", out.display()),
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 2, "{:?}", r.devices);
    let user = r.device("pci:0000:3b:00.1").unwrap();
    assert_eq!(user.name, "Xilinx Alveo U250");
    assert_eq!(user.family, Family::Fpga);
    assert!(user.available);
    assert_eq!(user.driver.as_deref(), Some("xocl"));
    assert_eq!(user.driver_version.as_deref(), Some("2.14.354"));
    assert_eq!(user.source, "xbutil+pci-sysfs");
    assert_eq!(user.extra["shell"], "xilinx_u250_gen3x16_xdma_shell_4_1");
    assert_eq!(
        user.extra["logic_uuid"],
        "2A1E9E61-9AB8-1A04-6DF6-6E9B7E5F1A56"
    );
    assert_eq!(user.extra["management_function"], "0000:3b:00.0");
    assert_eq!(user.numa_node, Some(0));
    let mgmt = r.device("pci:0000:3b:00.0").unwrap();
    assert_eq!(mgmt.driver.as_deref(), Some("xclmgmt"));
    assert!(!mgmt.available);
    assert!(
        mgmt.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("0000:3b:00.1")
    );
    assert_eq!(r.summary.accelerator_count, 1, "one card, counted once");
}

#[test]
fn failing_xbutil_is_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    u250_root(root.path());
    write_script(bin.path(), "xbutil", "echo 'ERROR: no XRT' >&2\nexit 1\n");
    let r = run(root.path(), bin.path());
    assert_eq!(r.devices.len(), 2);
    let user = r.device("pci:0000:3b:00.1").unwrap();
    assert!(user.available, "the PCI view still stands");
    assert_eq!(user.source, "pci-sysfs");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "fpga" && w.message.contains("exited with 1"))
    );
}

#[test]
fn user_function_bound_elsewhere() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    func("5021", "120000", "vfio-pci").write(root.path(), "0000:5e:00.1");
    let r = run(root.path(), bin.path());
    let d = r.device("pci:0000:5e:00.1").unwrap();
    assert_eq!(d.name, "Xilinx Alveo U50");
    assert!(!d.available);
    assert!(
        d.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("vfio-pci")
    );
}

/// `/sys/class/<class>/<name>` as the kernel makes it: a symlink into the
/// device tree below `target` (relative to `/sys/devices`), with files.
fn class_entry(root: &Path, class: &str, name: &str, target: &str, files: &[(&str, &str)]) {
    let dir = root.join("sys/devices").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, v) in files {
        std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
    }
    std::fs::create_dir_all(root.join("sys/class").join(class)).unwrap();
    std::os::unix::fs::symlink(
        format!("../../devices/{target}"),
        root.join("sys/class").join(class).join(name),
    )
    .unwrap();
}

#[test]
fn intel_dfl_card_with_fpga_classes() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // PAC N3000 (dfl-pci.c): class 0x12 like an Intel NPU; the id decides.
    FakePci {
        vendor: "8086",
        device: "0b30",
        class: "120000",
        driver: Some("dfl-pci"),
        numa: Some(1),
        link: true,
    }
    .write(root.path(), "0000:5e:00.0");
    let fme = "pci0000:00/0000:5e:00.0/dfl-fme.0";
    class_entry(
        root.path(),
        "fpga_region",
        "region0",
        &format!("{fme}/dfl-fme-region.1/fpga_region/region0"),
        &[("compat_id", "f3c9941350814aadbced07eb84a6d0bb")],
    );
    class_entry(
        root.path(),
        "fpga_manager",
        "fpga0",
        &format!("{fme}/dfl-fme-mgr.0/fpga_manager/fpga0"),
        &[("name", "DFL FME FPGA Manager"), ("state", "operating")],
    );
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 1, "{:?}", r.devices);
    let d = &r.devices[0];
    assert_eq!(d.id, "pci:0000:5e:00.0");
    assert_eq!(d.name, "Intel FPGA PAC N3000");
    assert_eq!((d.vendor.as_str(), d.family), ("intel", Family::Fpga));
    assert!(d.available);
    assert_eq!(d.extra["role"], "pf");
    assert_eq!(
        d.extra["fpga_region_region0_compat_id"],
        "f3c9941350814aadbced07eb84a6d0bb"
    );
    assert_eq!(d.extra["fpga_manager"], "DFL FME FPGA Manager");
    assert_eq!(d.extra["fpga_manager_state"], "operating");
    assert_eq!(d.source, "pci-sysfs+fpga-class");
}

/// OFS cards share dfl-pci.c's generic ids (0xbcce PF, 0xbccf VF) and are
/// told apart by their subsystem id: an N6001 (subdevice 0x1771, as real
/// `fpgainfo fme` outputs in the OFS documentation pair them) whose PF is
/// bound to vfio-pci (so the dfl-pci driver does not name it) and whose VF
/// has no driver, and a D5005 on its own id 0x0b2b with no driver.
#[test]
fn ofs_cards_by_id_and_subsystem_without_the_dfl_driver() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    for (addr, device, driver, sub) in [
        ("0000:b1:00.0", "bcce", Some("vfio-pci"), Some("0x1771")),
        ("0000:b1:00.5", "bccf", None, Some("0x1771")),
        ("0000:d8:00.0", "0b2b", None, None),
    ] {
        let d = FakePci {
            vendor: "8086",
            device,
            class: "120000",
            driver,
            numa: Some(0),
            link: false,
        }
        .write(root.path(), addr);
        if let Some(sub) = sub {
            std::fs::write(d.join("subsystem_vendor"), "0x8086\n").unwrap();
            std::fs::write(d.join("subsystem_device"), format!("{sub}\n")).unwrap();
        }
    }
    let r = run(root.path(), bin.path());
    let by_id = |id: &str| {
        r.devices
            .iter()
            .find(|d| d.id == id)
            .unwrap_or_else(|| panic!("{id} in {:?}", r.devices))
    };
    let pf = by_id("pci:0000:b1:00.0");
    assert_eq!(pf.name, "Intel Acceleration Development Platform N6001");
    assert_eq!((pf.vendor.as_str(), pf.family), ("intel", Family::Fpga));
    assert_eq!(pf.extra["role"], "pf");
    assert!(!pf.available, "bound to vfio-pci: {pf:?}");
    let vf = by_id("pci:0000:b1:00.5");
    assert_eq!(
        vf.name,
        "Intel Acceleration Development Platform N6001 (VF)"
    );
    assert_eq!(vf.extra["role"], "vf");
    let d5005 = by_id("pci:0000:d8:00.0");
    assert_eq!(d5005.name, "Intel FPGA PAC D5005");
    assert_eq!(d5005.extra["role"], "pf");
    assert_eq!(
        r.devices
            .iter()
            .filter(|d| d.family == Family::Fpga)
            .count(),
        3,
        "{:?}",
        r.devices
    );
}

#[test]
fn soc_fpga_manager_off_pci() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    class_entry(
        root.path(),
        "fpga_manager",
        "fpga0",
        "platform/axi/f8007000.devcfg/fpga_manager/fpga0",
        &[("name", "Xilinx Zynq FPGA Manager"), ("state", "operating")],
    );
    let r = run(root.path(), bin.path());
    assert_eq!(r.devices.len(), 1);
    let d = &r.devices[0];
    assert_eq!(d.id, "fpga_manager:fpga0");
    assert_eq!(d.name, "Xilinx Zynq FPGA Manager");
    assert_eq!((d.vendor.as_str(), d.family), ("xilinx", Family::Fpga));
    assert_eq!(d.pci_address, None);
}

#[test]
fn no_fpga_means_no_tool_run() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let marker = bin.path().join("ran");
    for tool in ["xbutil", "fpgainfo"] {
        write_script(
            bin.path(),
            tool,
            &format!("echo {tool} >> '{}'\n", marker.display()),
        );
    }
    let r = run(root.path(), bin.path());
    assert!(r.devices.is_empty());
    assert!(!marker.exists(), "no tool runs without an FPGA");
    // An Alveo alone runs xbutil, never fpgainfo.
    u250_root(root.path());
    let _ = run(root.path(), bin.path());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "xbutil\n");
}

// ---- OPAE fpgainfo fme ------------------------------------------------------

const FME_N6001: &str =
    "fpgainfo-fme/ofs-docs-n6001-fim-dev__fpgainfo-fme__n6001-bom-lines__bmc-3.15.2.txt";
const FME_D5005: &str =
    "fpgainfo-fme/lkml-dfl-pci-d5005-subdevice__fpgainfo-fme__d5005__ofs-2024.1-1.txt";
const FME_CAPTURES: [&str; 7] = [
    FME_N6001,
    FME_D5005,
    "fpgainfo-fme/opae-sdk-install-guide__fpgainfo-fme__pac-n3000__opae-2.0.txt",
    "fpgainfo-fme/ofs-docs-f2000x-quick-start__fpgainfo-fme__f2000x-pl__bmc-1.1.9.txt",
    "fpgainfo-fme/ofs-docs-ftile-jtag__fpgainfo-fme__n6001-name-bmc-read-errors.txt",
    "fpgainfo-fme/ofs-docs-agx5-quick-start__fpgainfo-fme__jtag-pci-dk-0001.txt",
    "fpgainfo-fme/ofs-docs-d5005-quick-start__fpgainfo-fme__d5005-open-fpga-stack-platform.txt",
];

/// An Intel DFL function under `root`, with its subsystem ids when given.
fn dfl_func(root: &Path, addr: &str, device: &'static str, sub: Option<&str>) {
    let d = FakePci {
        vendor: "8086",
        device,
        class: "120000",
        driver: Some("dfl-pci"),
        numa: Some(0),
        link: true,
    }
    .write(root, addr);
    if let Some(sub) = sub {
        std::fs::write(d.join("subsystem_vendor"), "0x8086\n").unwrap();
        std::fs::write(d.join("subsystem_device"), format!("{sub}\n")).unwrap();
    }
}

/// A fake `fpgainfo` that prints `text` for `fpgainfo fme`.
fn fake_fpgainfo(bin: &Path, text: &str) {
    let out = bin.join("fme.txt");
    std::fs::write(&out, text).unwrap();
    write_script(
        bin,
        "fpgainfo",
        &format!("[ \"$1\" = fme ] && cat '{}'\n", out.display()),
    );
}

/// Two OFS cards at the addresses of two real captures (an N6001 at
/// 98:00.0 with a VF at 98:00.1, a D5005 at d8:00.0); the fake tool prints
/// both captures one after the other, as `fpgainfo fme` prints one block
/// per card.
#[test]
fn fpgainfo_fme_blocks_join_their_pci_functions() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    dfl_func(root.path(), "0000:98:00.0", "bcce", Some("0x1771"));
    dfl_func(root.path(), "0000:98:00.1", "bccf", Some("0x1771"));
    dfl_func(root.path(), "0000:d8:00.0", "bcce", Some("0x138d"));
    let text = std::fs::read_to_string(fixture(FME_N6001)).unwrap()
        + &std::fs::read_to_string(fixture(FME_D5005)).unwrap();
    fake_fpgainfo(bin.path(), &text);
    let r = run(root.path(), bin.path());
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.devices.len(), 3, "{:?}", r.devices);

    let n6001 = r.device("pci:0000:98:00.0").unwrap();
    assert_eq!(n6001.name, "Intel Acceleration Development Platform N6001");
    assert_eq!(
        (n6001.vendor.as_str(), n6001.family),
        ("intel", Family::Fpga)
    );
    assert_eq!(n6001.source, "fpgainfo+pci-sysfs");
    assert!(n6001.available);
    assert_eq!(n6001.extra["role"], "pf");
    assert_eq!(n6001.extra["bmc_fw_version"], "3.15.2");
    assert_eq!(n6001.extra["bmc_build_version"], "3.15.2");
    assert_eq!(
        n6001.extra["pr_interface_id"],
        "e376f074-6a22-55b1-a162-f734ff17e253"
    );
    assert_eq!(n6001.extra["bitstream_id"], "360571656009101231");
    assert_eq!(n6001.extra["bitstream_version"], "5.0.1");
    assert_eq!(n6001.extra["boot_page"], "user1");
    assert_eq!(
        n6001.extra["user1_image_info"],
        "893e691edfccfd0aecb1c332ad69551b"
    );
    assert_eq!(n6001.extra["opae_interface"], "DFL");
    assert_eq!(n6001.extra["board_pba"], "B#FB2CG1@AGF14-A0P2");
    assert_eq!(n6001.serial.as_deref(), Some("Q171211700050"));
    assert_eq!(n6001.numa_node, Some(0), "the PCI view stays");

    // fpgainfo fme lists FMEs, which live on the PF: the VF gets nothing.
    let vf = r.device("pci:0000:98:00.1").unwrap();
    assert_eq!(vf.source, "pci-sysfs");
    assert!(!vf.extra.contains_key("bmc_fw_version"));
    assert_eq!(vf.serial, None);

    let d5005 = r.device("pci:0000:d8:00.0").unwrap();
    assert_eq!(
        d5005.name,
        "Intel FPGA Programmable Acceleration Card D5005"
    );
    assert_eq!(d5005.extra["bmc_fw_version"], "2.0.12");
    assert_eq!(d5005.extra["bmc_build_version"], "2.0.8");
    assert_eq!(
        d5005.extra["pr_interface_id"],
        "a195b6f7-cf23-5a2b-8ef9-1161e184ec4e"
    );
    assert_eq!(d5005.extra["bitstream_id"], "0x4010002183C88A9");
    assert_eq!(d5005.serial, None, "its capture has no BOM lines");
}

#[test]
fn fpgainfo_failing_or_malformed_is_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    dfl_func(root.path(), "0000:98:00.0", "bcce", Some("0x1771"));
    // opae-sdk main.c: no resources → `No FPGA resources found.`, EX_SOFTWARE.
    write_script(
        bin.path(),
        "fpgainfo",
        "echo 'No FPGA resources found.' >&2\nexit 70\n",
    );
    let r = run(root.path(), bin.path());
    let d = r.device("pci:0000:98:00.0").unwrap();
    assert_eq!(d.source, "pci-sysfs");
    assert_eq!(d.name, "Intel Acceleration Development Platform N6001");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "fpga" && w.message.contains("exited with 70")),
        "{:?}",
        r.warnings
    );
    // Output that is no fpgainfo fme report.
    fake_fpgainfo(bin.path(), "\u{1}\u{2} not an FME report\n");
    let r = run(root.path(), bin.path());
    assert_eq!(r.device("pci:0000:98:00.0").unwrap().source, "pci-sysfs");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.backend == "fpga" && w.message.starts_with("fpgainfo fme:")),
        "{:?}",
        r.warnings
    );
    // A block at an address the scan does not show is listed on its own.
    fake_fpgainfo(
        bin.path(),
        &std::fs::read_to_string(fixture(FME_D5005)).unwrap(),
    );
    let r = run(root.path(), bin.path());
    let d = r.device("pci:0000:d8:00.0").unwrap();
    assert_eq!((d.source.as_str(), d.family), ("fpgainfo", Family::Fpga));
    assert_eq!(d.extra["bmc_fw_version"], "2.0.12");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

fn parse_fme(bytes: &[u8]) -> ParseOutput {
    (format("fpgainfo-fme").expect("format registered").parse)(bytes)
}

#[test]
fn fpgainfo_fme_format_reads_every_capture() {
    for f in FME_CAPTURES {
        let out = parse_fme(&std::fs::read(fixture(f)).unwrap());
        assert!(out.warnings.is_empty(), "{f}: {:?}", out.warnings);
        assert_eq!(out.devices.len(), 1, "{f}");
        let d = &out.devices[0];
        assert_eq!(
            (d.vendor.as_str(), d.family),
            ("intel", Family::Fpga),
            "{f}"
        );
        assert!(d.extra.contains_key("pr_interface_id"), "{f}");
        assert!(d.pci_address.is_some(), "{f}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    #[test]
    fn truncated_or_corrupted_outputs_never_panic(cut in 0usize..2000, flip in 0usize..2000, byte in 0u8..=255) {
        for f in [U30, PR6423] {
            let b = support::damaged(std::fs::read(fixture(f)).unwrap(), cut, flip, byte);
            let _ = parse(&b);
        }
        for f in FME_CAPTURES {
            let b = support::damaged(std::fs::read(fixture(f)).unwrap(), cut, flip, byte);
            let _ = parse_fme(&b);
        }
    }
}
