//! The `fpga` backend: Xilinx/AMD Alveo cards (XRT: `xclmgmt` + `xocl`),
//! Intel FPGA cards of the DFL driver (`dfl-pci`), and the kernel's generic
//! FPGA classes (`/sys/class/fpga_region`, `/sys/class/fpga_manager`).
//!
//! An Alveo card shows two PCI functions: the management function (bound
//! to `xclmgmt`, function 0) and the user function applications open
//! (bound to `xocl`, function 1). Their ids are those of XRT's xocl/xclmgmt
//! tables (Xilinx/XRT @0d89b698 `src/runtime_src/core/pcie/driver/linux/
//! xocl/devices.h`); a card running its golden (factory) image shows only a
//! management function with a `d0xx` id. Both functions are listed, the
//! management one as not available, so a card counts once.
//!
//! When an Alveo function is present, one `xbutil examine` runs. Its host
//! report (the "Devices present" list: BDF, shell platform, platform or
//! logic UUID, device id `user(inst=N)`/`mgmt(inst=N)`, "Device Ready")
//! adds the shell, the XRT and xocl/xclmgmt driver versions and readiness.
//! Both layouts are read: the 2021 list (`[bdf] : shell`) and the table of
//! later releases, whose columns are found by header name.
//!
//! Intel cards: the PF/VF ids of Linux `drivers/fpga/dfl-pci.c` @031616c4,
//! and those added since (Linux 6.0 to 6.9, read in the patches as posted):
//! the PAC D5005's 0x0b2b/0x0b2c, Silicom Denmark's N5010/N5011, and the
//! generic OFS ids 0xbcce/0xbccf whose board is in the subsystem id
//! ([`ofs_board`]). When one of them is present, one `fpgainfo fme` (OPAE)
//! runs; each FME block it prints ([`opae`]) is joined to the PCI function
//! at its `PCIe s:b:d.f` address and adds the board name the tool prints,
//! the BMC firmware and build versions, the bitstream id and version, the
//! PR interface id, the boot page and flash image info, socket and ports.
//! `fpga_region` entries (ABI `sysfs-class-fpga-region`: `compat_id`) and
//! `fpga_manager` entries (ABI `sysfs-class-fpga-manager`: `name`, `state`)
//! are joined to the PCI function their sysfs path runs through; an FPGA
//! manager not on PCI (an SoC FPGA such as Zynq) is listed on its own.

use crate::model::{Device, Family, PciAddress};
use crate::probe::{ProbeExt, join};

use super::formats::ParseOutput;
use super::pci::{PciDevice, driver_unavailable_reason, pci_address_in_path};
use super::pci_ids::known_device;
use super::vulkan::run_tool;
use super::{BackendOutput, Context};

pub mod opae;

/// PCI vendor id of Xilinx (AMD).
pub const XILINX_VENDOR_ID: u16 = 0x10ee;
const INTEL_VENDOR_ID: u16 = 0x8086;
/// XRT's user-function driver.
pub const XOCL_DRIVER: &str = "xocl";
/// XRT's management-function driver.
pub const XCLMGMT_DRIVER: &str = "xclmgmt";
/// The Intel DFL PCI driver (`DRV_NAME` of `dfl-pci.c`).
pub const DFL_DRIVER: &str = "dfl-pci";
const FPGA_REGION_CLASS: &str = "/sys/class/fpga_region";
const FPGA_MANAGER_CLASS: &str = "/sys/class/fpga_manager";

/// What a PCI function of an FPGA card is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FpgaRole {
    /// Alveo management physical function (xclmgmt).
    Management,
    /// Alveo user physical function (xocl), the one applications open.
    User,
    /// Alveo running its golden (factory recovery) image.
    Golden,
    /// Intel DFL physical function.
    PhysicalFunction,
    /// Intel DFL virtual function.
    VirtualFunction,
}

impl FpgaRole {
    fn as_str(self) -> &'static str {
        match self {
            FpgaRole::Management => "management",
            FpgaRole::User => "user",
            FpgaRole::Golden => "golden",
            FpgaRole::PhysicalFunction => "pf",
            FpgaRole::VirtualFunction => "vf",
        }
    }
}

/// Role of an Alveo PCI device id (XRT `devices.h` tables; source in the module doc).
pub fn alveo_role(device_id: u16) -> Option<FpgaRole> {
    match device_id {
        0x5000 | 0x5004 | 0x500c | 0x5020 | 0x505c | 0x5050 | 0x513c | 0x5094 | 0x5048 => {
            Some(FpgaRole::Management)
        }
        0x5001 | 0x5005 | 0x500d | 0x5021 | 0x505d | 0x5051 | 0x513d | 0x5095 | 0x5049 => {
            Some(FpgaRole::User)
        }
        0xd000 | 0xd004 | 0xd00c | 0xd020 => Some(FpgaRole::Golden),
        _ => None,
    }
}

/// Role of an Intel DFL PCI device id (`dfl-pci.c`; source in the module
/// doc): the integrated and discrete PFs and VFs, the PAC N3000 and D5005,
/// and the generic OFS ids `PCIE_DEVICE_ID_INTEL_DFL` (0xbcce) and
/// `_DFL_VF` (0xbccf) that OFS cards share, told apart by subsystem id
/// ([`ofs_board`]).
pub fn dfl_role(device_id: u16) -> Option<FpgaRole> {
    match device_id {
        0xbcbd | 0xbcc0 | 0x09c4 | 0x0b30 | 0x0b2b | OFS_DEVICE_ID => {
            Some(FpgaRole::PhysicalFunction)
        }
        0xbcbf | 0xbcc1 | 0x09c5 | 0x0b2c | OFS_VF_DEVICE_ID => Some(FpgaRole::VirtualFunction),
        _ => None,
    }
}

/// The generic OFS PF and VF ids of `dfl-pci.c` (`PCIE_DEVICE_ID_INTEL_DFL`,
/// `PCIE_DEVICE_ID_INTEL_DFL_VF`).
const OFS_DEVICE_ID: u16 = 0xbcce;
const OFS_VF_DEVICE_ID: u16 = 0xbccf;

/// PCI vendor id of Silicom Denmark (`PCI_VENDOR_ID_SILICOM_DENMARK`),
/// whose FPGA SmartNICs N5010 (0x1000) and N5011 (0x1001) `dfl-pci.c`
/// drives.
pub const SILICOM_DENMARK_VENDOR_ID: u16 = 0x1c2c;

/// The board of an OFS function (Intel 0xbcce / 0xbccf) by its subsystem
/// id: `dfl-pci.c` binds subsystem vendor Intel with subdevice
/// `PCIE_SUBDEVICE_ID_INTEL_D5005` 0x138d, `_N6000` 0x1770, `_N6001` 0x1771
/// and `_C6100` 0x17d4 ("the numeric part of the FPGA card names in
/// hexadecimal", the D5005 patch's commit message). Names as OPAE's
/// `fpgainfo fme` prints the boards where a capture shows it (D5005, N6001,
/// F2000X-PL for 0x17d4), else the kernel's.
pub fn ofs_board(
    device_id: u16,
    sub_vendor: Option<u16>,
    sub_device: Option<u16>,
) -> Option<&'static str> {
    if !matches!(device_id, OFS_DEVICE_ID | OFS_VF_DEVICE_ID) || sub_vendor != Some(INTEL_VENDOR_ID)
    {
        return None;
    }
    Some(match sub_device? {
        0x138d => "Intel FPGA Programmable Acceleration Card D5005",
        0x1770 => "Intel FPGA card N6000 (OFS)",
        0x1771 => "Intel Acceleration Development Platform N6001",
        0x17d4 => "Intel IPU Platform F2000X-PL",
        _ => return None,
    })
}

/// Board of an XRT shell (platform) name: `xilinx_u250_gen3x16_xdma_shell_4_1`
/// → `Alveo U250`, `xilinx_vck5000_…` → `Versal VCK5000`.
pub fn board_of_shell(shell: &str) -> Option<String> {
    let token = shell.trim().strip_prefix("xilinx_")?.split('_').next()?;
    let lower = token.to_ascii_lowercase();
    let mut chars = lower.chars();
    let first = chars.next()?;
    let digits: String = chars.clone().take_while(char::is_ascii_digit).collect();
    if lower.starts_with("vck") {
        return Some(format!("Versal {}", lower.to_ascii_uppercase()));
    }
    ((first == 'u' || first == 'v') && !digits.is_empty() && lower.len() <= 8)
        .then(|| format!("Alveo {}", lower.to_ascii_uppercase()))
}

/// One device in the "Devices present" list of `xbutil examine`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XbutilDevice {
    /// PCI address.
    pub bdf: Option<PciAddress>,
    /// Shell platform name (`xilinx_u30_gen3x4_base_1`).
    pub shell: Option<String>,
    /// Platform or logic UUID, and which of the two the header said.
    pub uuid: Option<(String, String)>,
    /// `user(inst=128)` / `mgmt(inst=25856)`.
    pub device_id: Option<String>,
    /// "Device Ready" column, or `false` for a "NOTE: Device not ready" row.
    pub ready: Option<bool>,
    /// "Name" column: what `xrt-smi` (XRT 2.17+ on Ryzen AI) calls an NPU
    /// (`RyzenAI-npu4`, the amdxdna `vbnv`; `NPU Strix` from 2025).
    pub name: Option<String>,
}

impl XbutilDevice {
    /// The role the device id column names.
    pub fn role(&self) -> Option<FpgaRole> {
        let id = self.device_id.as_deref()?;
        if id.starts_with("mgmt") {
            Some(FpgaRole::Management)
        } else if id.starts_with("user") {
            Some(FpgaRole::User)
        } else {
            None
        }
    }
}

/// What one `xbutil examine` (or `xbmgmt examine`) host report held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XbutilReport {
    /// XRT `Version`.
    pub xrt_version: Option<String>,
    /// `XOCL` driver version.
    pub xocl_version: Option<String>,
    /// `XCLMGMT` driver version.
    pub xclmgmt_version: Option<String>,
    /// Devices in output order.
    pub devices: Vec<XbutilDevice>,
    /// Values that did not parse.
    pub warnings: Vec<String>,
}

/// Cells separated by runs of two or more spaces.
fn columns(s: &str) -> Vec<&str> {
    s.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

fn not_na(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && !v.eq_ignore_ascii_case("n/a") && !v.eq_ignore_ascii_case("unknown"))
        .then(|| v.to_string())
}

/// `2.10.43, 41f6…` → `2.10.43`.
fn version_before_comma(v: &str) -> Option<String> {
    not_na(v.split(',').next().unwrap_or(""))
}

#[derive(PartialEq)]
enum Section {
    Other,
    Xrt,
    Devices,
}

/// A row of the header-less list: `xilinx_u30_gen3x4_base_1` alone (XRT
/// 2.10), or followed by a bracketed UUID and the device id, as XRT 2.12
/// printed it: `xilinx_u200_gen3x16_xdma_base_1 [15FB8DA1-…] user(inst=129)`.
/// The list does not say which UUID it shows, so it is kept as `UUID`.
fn list_row(rest: &str, dev: &mut XbutilDevice) {
    let mut tokens = rest.split_whitespace();
    dev.shell = tokens.next().and_then(not_na);
    for tok in tokens {
        if let Some(u) = tok.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            dev.uuid = not_na(u).map(|u| ("UUID".to_string(), u));
        } else if (tok.starts_with("user(") || tok.starts_with("mgmt(")) && tok.ends_with(')') {
            dev.device_id = Some(tok.to_string());
        }
    }
}

/// Parse the host report of `xbutil examine` / `xbmgmt examine`. Never panics.
pub fn parse_xbutil_examine(text: &str) -> XbutilReport {
    let mut rep = XbutilReport::default();
    let mut section = Section::Other;
    let mut header: Option<Vec<String>> = None;
    for line in text.lines() {
        if crate::detect::formats::past_cap(rep.devices.len()) {
            break;
        }
        let t = line.trim();
        match t {
            "XRT" => {
                section = Section::Xrt;
                continue;
            }
            // `Devices present` (2021-2024), `Device(s) Present` (xrt-smi,
            // XRT 2.18+), `Devices` (XRT 2.7's `--new` preview).
            "Devices present" | "Device(s) Present" | "Devices" => {
                section = Section::Devices;
                header = None;
                continue;
            }
            "System Configuration" => {
                section = Section::Other;
                continue;
            }
            _ => {}
        }
        match section {
            Section::Other => {}
            Section::Xrt => {
                if let Some((k, v)) = t.split_once(':') {
                    match k.trim() {
                        "Version" => rep.xrt_version = not_na(v),
                        "XOCL" => rep.xocl_version = version_before_comma(v),
                        "XCLMGMT" => rep.xclmgmt_version = version_before_comma(v),
                        _ => {}
                    }
                }
            }
            Section::Devices => {
                // xrt-smi's table: `|BDF |Name |`, a `|----|` rule, then
                // `|[0000:c7:00.1]  |RyzenAI-npu4  |` rows.
                let piped = t.starts_with('|').then(|| {
                    t.trim_matches('|')
                        .split('|')
                        .map(str::trim)
                        .collect::<Vec<&str>>()
                });
                if let Some(cells) = &piped {
                    if cells.first() == Some(&"BDF") {
                        header = Some(cells[1..].iter().map(|c| c.to_string()).collect());
                        continue;
                    }
                    if cells.iter().all(|c| c.bytes().all(|b| b == b'-')) {
                        continue;
                    }
                }
                if t.starts_with("BDF") {
                    header = Some(
                        columns(t)
                            .into_iter()
                            .skip_while(|c| *c != ":")
                            .skip(1)
                            .map(str::to_string)
                            .collect(),
                    );
                    continue;
                }
                if !t.is_empty() && t.bytes().all(|b| b == b'-') {
                    if rep.devices.is_empty() {
                        continue; // the rule under the table header
                    }
                    section = Section::Other; // a per-device report follows
                    continue;
                }
                if t.starts_with('*') {
                    section = Section::Other;
                    continue;
                }
                let row = piped
                    .as_ref()
                    .map_or(t, |c| c.first().copied().unwrap_or(""));
                let Some(rest) = row.strip_prefix('[') else {
                    continue;
                };
                let Some((bdf, rest)) = rest.split_once(']') else {
                    rep.warnings.push(format!(
                        "xbutil examine: device row {t:?} has no closing ']'"
                    ));
                    continue;
                };
                let bdf_parsed = bdf.parse::<PciAddress>().ok();
                if bdf_parsed.is_none() {
                    rep.warnings
                        .push(format!("xbutil examine: {bdf:?} is not a PCI address"));
                    continue;
                }
                let rest = rest.trim().trim_start_matches(':').trim();
                let mut dev = XbutilDevice {
                    bdf: bdf_parsed,
                    ..Default::default()
                };
                if rest.starts_with("NOTE:") {
                    dev.ready = Some(false);
                    rep.devices.push(dev);
                    continue;
                }
                match &header {
                    Some(names) => {
                        let cells = match &piped {
                            Some(c) => c[1..].to_vec(),
                            None => columns(rest),
                        };
                        if cells.len() != names.len() {
                            rep.warnings.push(format!(
                                "xbutil examine: row [{bdf}] has {} columns, the header {}",
                                cells.len(),
                                names.len()
                            ));
                            dev.shell = cells.first().and_then(|c| not_na(c));
                        } else {
                            for (name, cell) in names.iter().zip(cells) {
                                let name = name.trim_end_matches('*').trim();
                                if name == "Shell" {
                                    dev.shell = not_na(cell);
                                } else if name == "Name" {
                                    dev.name = not_na(cell);
                                } else if name.contains("UUID") {
                                    dev.uuid = not_na(cell).map(|u| (name.to_string(), u));
                                } else if name == "Device ID" {
                                    dev.device_id = not_na(cell);
                                } else if name == "Device Ready" {
                                    dev.ready = match cell {
                                        "Yes" => Some(true),
                                        "No" => Some(false),
                                        _ => None,
                                    };
                                }
                            }
                        }
                    }
                    None => list_row(rest, &mut dev),
                }
                rep.devices.push(dev);
            }
        }
    }
    crate::detect::formats::cap_records(&mut rep.devices, "xbutil", &mut rep.warnings);
    rep
}

/// The XDNA architecture of an NPU `xrt-smi` names: `RyzenAI-npu1` (the
/// amdxdna `vbnv` of PCI 1022:1502, Phoenix/Hawk Point) is XDNA;
/// `RyzenAI-npu4`/`npu5`/`npu6` (1022:17f0 revisions 0x10, 0x11, 0x20:
/// Strix, Strix Halo, Krackan) XDNA 2 (`drivers/accel/amdxdna`, as
/// `super::npu::amd_npu_generation`); the 2025 names (`NPU Phoenix`, `NPU
/// Strix`, `NPU Krackan`, xdna-driver PR 402) likewise. `Some(None)` for an
/// NPU name of another generation, `None` for no NPU name.
fn xdna_of_name(name: &str) -> Option<Option<&'static str>> {
    let l = name.trim().to_ascii_lowercase();
    let generation = l
        .strip_prefix("ryzenai-")
        .filter(|g| g.starts_with("npu"))?;
    Some(match generation {
        "npu1" => Some("XDNA"),
        "npu4" | "npu5" | "npu6" => Some("XDNA 2"),
        _ => None,
    })
}

/// [`xdna_of_name`] for the 2025 spellings (`NPU Phoenix`, `NPU Strix Halo`).
fn xdna_of_new_name(name: &str) -> Option<Option<&'static str>> {
    let l = name.trim().to_ascii_lowercase();
    let chip = l.strip_prefix("npu ")?;
    Some(if chip.starts_with("phoenix") || chip.starts_with("hawk") {
        Some("XDNA")
    } else if chip.starts_with("strix") || chip.starts_with("krackan") {
        Some("XDNA 2")
    } else {
        None
    })
}

/// The device `xbutil` reports for one row (no PCI view).
fn xbutil_device(x: &XbutilDevice, rep: &XbutilReport) -> Device {
    if let Some(n) = x.name.as_deref()
        && let Some(arch) = xdna_of_name(n).or_else(|| xdna_of_new_name(n))
    {
        return xdna_device(x, n, arch, rep);
    }
    let board = x.shell.as_deref().and_then(board_of_shell);
    let name = board.map_or_else(|| "Xilinx FPGA".to_string(), |b| format!("Xilinx {b}"));
    let id = x
        .bdf
        .map_or_else(|| "xilinx:?".to_string(), |a| format!("pci:{a}"));
    let mut d = Device::new(id, name, "xilinx", Family::Fpga, "xbutil");
    d.pci_address = x.bdf;
    apply_xbutil(&mut d, x, rep);
    d
}

/// An AMD Ryzen AI NPU that `xrt-smi examine` lists: vendor AMD, family
/// NPU, named as the PCI table names the architecture's device.
fn xdna_device(x: &XbutilDevice, name: &str, arch: Option<&str>, rep: &XbutilReport) -> Device {
    let id = x
        .bdf
        .map_or_else(|| "amdxdna:?".to_string(), |a| format!("pci:{a}"));
    let device_id = match arch {
        Some("XDNA") => Some(0x1502),
        Some("XDNA 2") => Some(0x17f0),
        _ => None,
    };
    let full = device_id
        .and_then(|id| known_device(0x1022, id))
        .map_or_else(|| "AMD Ryzen AI NPU".to_string(), |k| k.name.to_string());
    let mut d = Device::new(id, full, "amd", Family::Npu, "xbutil");
    d.pci_address = x.bdf;
    d.architecture = arch.map(str::to_string);
    d.extra.insert("xrt_device_name".into(), name.to_string());
    if let Some(v) = &rep.xrt_version {
        d.extra.insert("xrt_version".into(), v.clone());
    }
    if x.ready == Some(false) {
        d.available = false;
        d.unavailable_reason = Some("xbutil: device not ready".to_string());
    }
    d
}

/// Add what an xbutil row says to a device.
fn apply_xbutil(d: &mut Device, x: &XbutilDevice, rep: &XbutilReport) {
    let golden = x
        .shell
        .as_deref()
        .is_some_and(|s| s.to_ascii_uppercase().contains("GOLDEN"));
    let role = if golden {
        Some(FpgaRole::Golden)
    } else {
        x.role()
    };
    if let Some(s) = &x.shell {
        d.extra.insert("shell".into(), s.clone());
    }
    if let Some((k, v)) = &x.uuid {
        d.extra
            .insert(k.to_ascii_lowercase().replace(' ', "_"), v.clone());
    }
    if let Some(v) = &x.device_id {
        d.extra.insert("xrt_device_id".into(), v.clone());
    }
    if let Some(v) = &rep.xrt_version {
        d.extra.insert("xrt_version".into(), v.clone());
    }
    if let Some(r) = role {
        d.extra.insert("role".into(), r.as_str().into());
    }
    if d.driver_version.is_none() {
        d.driver_version = match role {
            Some(FpgaRole::Management) => rep.xclmgmt_version.clone(),
            _ => rep.xocl_version.clone(),
        };
    }
    if d.available {
        let reason = match role {
            Some(FpgaRole::Golden) => Some(golden_reason()),
            Some(FpgaRole::Management) => Some(mgmt_reason(None)),
            _ if x.ready == Some(false) => Some("xbutil: device not ready".to_string()),
            _ => None,
        };
        if let Some(r) = reason {
            d.available = false;
            d.unavailable_reason = Some(r);
        }
    }
}

fn golden_reason() -> String {
    "runs the golden (factory) image: no shell platform is flashed".to_string()
}

fn mgmt_reason(user: Option<PciAddress>) -> String {
    match user {
        Some(u) => {
            format!("management function of the card; applications use its user function {u}")
        }
        None => "management function of the card; applications use its user function".to_string(),
    }
}

/// Parser for `ai-hwaccel parse xbutil-examine`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_xbutil_examine(&crate::model::text::decode(bytes));
    let devices: Vec<Device> = rep.devices.iter().map(|x| xbutil_device(x, &rep)).collect();
    let mut warnings = rep.warnings.clone();
    if devices.is_empty() {
        warnings.push("no device rows under \"Devices present\" / \"Device(s) Present\"".into());
    }
    ParseOutput { devices, warnings }
}

/// Role of a PCI function we treat as an FPGA card function, if any.
fn pci_role(p: &PciDevice) -> Option<FpgaRole> {
    let drv = p.driver.as_deref();
    match p.vendor_id {
        XILINX_VENDOR_ID => alveo_role(p.device_id).or(match drv {
            Some(XOCL_DRIVER) => Some(FpgaRole::User),
            Some(XCLMGMT_DRIVER) => Some(FpgaRole::Management),
            _ => None,
        }),
        SILICOM_DENMARK_VENDOR_ID if matches!(p.device_id, 0x1000 | 0x1001) => {
            Some(FpgaRole::PhysicalFunction)
        }
        INTEL_VENDOR_ID => dfl_role(p.device_id).or_else(|| {
            (drv == Some(DFL_DRIVER)).then_some(if p.address.function == 0 {
                FpgaRole::PhysicalFunction
            } else {
                FpgaRole::VirtualFunction
            })
        }),
        _ => None,
    }
}

/// An entry of the fpga_region / fpga_manager class: its name, the PCI
/// function its sysfs path runs through, and the facts it carries.
struct ClassEntry {
    name: String,
    address: Option<PciAddress>,
    facts: Vec<(String, String)>,
    manager_name: Option<String>,
}

fn class_entries(ctx: &Context, class: &str, region: bool) -> Vec<ClassEntry> {
    ctx.probe
        .list_or_empty(class)
        .into_iter()
        .map(|name| {
            let path = join(class, &name);
            let address = ctx
                .probe
                .read_link(&path)
                .ok()
                .and_then(|t| pci_address_in_path(&t))
                .or_else(|| {
                    ctx.probe
                        .read_link(&join(&path, "device"))
                        .ok()
                        .and_then(|t| pci_address_in_path(&t))
                });
            let r = |f: &str| {
                ctx.probe
                    .read_trimmed(&join(&path, f))
                    .map(|v| v.chars().take(128).collect::<String>())
            };
            let mut facts = Vec::new();
            let mut manager_name = None;
            if region {
                if let Some(c) = r("compat_id") {
                    facts.push((format!("fpga_region_{name}_compat_id"), c));
                }
            } else {
                manager_name = r("name");
                if let Some(n) = &manager_name {
                    facts.push(("fpga_manager".into(), n.clone()));
                }
                if let Some(s) = r("state") {
                    facts.push(("fpga_manager_state".into(), s));
                }
                if let Some(s) = r("status") {
                    facts.push(("fpga_manager_status".into(), s));
                }
            }
            ClassEntry {
                name,
                address,
                facts,
                manager_name,
            }
        })
        .collect()
}

/// Vendor key of an FPGA manager from its driver's name (`Xilinx Zynq FPGA
/// Manager` → `xilinx`); `unknown` when the name does not say.
pub fn vendor_of_manager(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase();
    if ["xilinx", "zynq", "versal"].iter().any(|w| n.contains(w)) {
        "xilinx"
    } else if ["altera", "socfpga", "stratix", "agilex", "intel", "dfl"]
        .iter()
        .any(|w| n.contains(w))
    {
        "intel"
    } else if n.contains("lattice") {
        "lattice"
    } else if n.contains("microchip") || n.contains("polarfire") {
        "microchip"
    } else {
        "unknown"
    }
}

/// The `fpga` backend.
pub(crate) fn detect(ctx: &Context) -> BackendOutput {
    let mut out = BackendOutput::default();
    let scan = ctx.pci();
    let cards: Vec<(&PciDevice, FpgaRole)> = scan
        .devices
        .iter()
        .filter_map(|p| pci_role(p).map(|r| (p, r)))
        .collect();
    let mut entries = class_entries(ctx, FPGA_REGION_CLASS, true);
    entries.extend(class_entries(ctx, FPGA_MANAGER_CLASS, false));
    let rep = if cards.iter().any(|(p, _)| p.vendor_id == XILINX_VENDOR_ID) {
        let mut rep = run_tool(ctx, "xbutil", &["examine"], &mut out.warnings)
            .map(|t| parse_xbutil_examine(&t))
            .unwrap_or_default();
        out.warnings.append(&mut rep.warnings);
        rep
    } else {
        XbutilReport::default()
    };
    let fme = if cards
        .iter()
        .any(|(_, r)| matches!(r, FpgaRole::PhysicalFunction | FpgaRole::VirtualFunction))
    {
        run_fpgainfo_fme(ctx, &mut out.warnings)
    } else {
        opae::FmeReport::default()
    };
    // The PCI functions, then addresses only a class entry, xbutil or
    // fpgainfo names, each once.
    let mut addresses: Vec<PciAddress> = cards.iter().map(|(p, _)| p.address).collect();
    let named = entries
        .iter()
        .map(|e| e.address)
        .chain(rep.devices.iter().map(|x| x.bdf))
        .chain(fme.blocks.iter().map(|b| b.address))
        .flatten();
    for a in named {
        if !addresses.contains(&a) {
            addresses.push(a);
        }
    }
    for addr in addresses {
        let p = scan.by_address(addr);
        let role = cards
            .iter()
            .find(|(c, _)| c.address == addr)
            .map(|(_, r)| *r);
        let x = rep.devices.iter().find(|x| x.bdf == Some(addr));
        let f = fme.blocks.iter().find(|b| b.address == Some(addr));
        let mut d = match (p, x, f) {
            (None, Some(x), _) => xbutil_device(x, &rep),
            (None, None, Some(f)) => opae::fme_device(f, 0),
            _ => pci_fpga_device(addr, p, role, &cards),
        };
        if let (Some(_), Some(x)) = (p, x) {
            d.source = "xbutil+pci-sysfs".into();
            apply_xbutil(&mut d, x, &rep);
        }
        if let (Some(_), Some(f)) = (p, f) {
            d.source = format!("fpgainfo+{}", d.source);
            opae::apply_fme(&mut d, f);
        }
        for e in entries.iter().filter(|e| e.address == Some(addr)) {
            for (k, v) in &e.facts {
                d.extra.entry(k.clone()).or_insert_with(|| v.clone());
            }
            if !d.source.contains("fpga-class") {
                d.source.push_str("+fpga-class");
            }
        }
        out.devices.push(d);
    }
    // FPGA managers not on PCI (SoC FPGAs) are devices of their own.
    for e in entries
        .iter()
        .filter(|e| e.address.is_none() && e.manager_name.is_some())
    {
        let mname = e.manager_name.clone().unwrap_or_default();
        let mut d = Device::new(
            format!("fpga_manager:{}", e.name),
            mname.clone(),
            vendor_of_manager(&mname),
            Family::Fpga,
            "fpga-class",
        );
        for (k, v) in &e.facts {
            d.extra.insert(k.clone(), v.clone());
        }
        out.devices.push(d);
    }
    out
}

/// Run `fpgainfo fme` once and parse it. An absent tool says nothing and a
/// failing run is `run_tool`'s warning; an output with no FME block, or a
/// block with no PCI address to join, is a warning naming the tool.
fn run_fpgainfo_fme(ctx: &Context, warnings: &mut Vec<String>) -> opae::FmeReport {
    let Some(text) = run_tool(ctx, "fpgainfo", &["fme"], warnings) else {
        return opae::FmeReport::default();
    };
    let mut fme = opae::parse_fpgainfo_fme(&text);
    warnings.append(&mut fme.warnings);
    if fme.blocks.is_empty() && !text.trim().is_empty() {
        warnings.push(format!(
            "fpgainfo fme: no FME block in its output {}",
            crate::model::excerpt(&text, 60)
        ));
    }
    let unjoined = fme.blocks.iter().filter(|b| b.address.is_none()).count();
    if unjoined > 0 {
        warnings.push(format!(
            "fpgainfo fme: {unjoined} FME block(s) without a PCIe address, joined to no PCI function"
        ));
    }
    fme
}

/// The device for one FPGA PCI function (or an address only a class entry named).
fn pci_fpga_device(
    addr: PciAddress,
    p: Option<&PciDevice>,
    role: Option<FpgaRole>,
    cards: &[(&PciDevice, FpgaRole)],
) -> Device {
    let vendor_id = p.map(|p| p.vendor_id);
    let name = p
        .and_then(|p| {
            let vf = role == Some(FpgaRole::VirtualFunction);
            ofs_board(p.device_id, p.subsystem_vendor_id, p.subsystem_device_id).map(|b| {
                if vf {
                    format!("{b} (VF)")
                } else {
                    b.to_string()
                }
            })
        })
        .or_else(|| {
            p.and_then(|p| known_device(p.vendor_id, p.device_id))
                .map(|k| k.name.to_string())
        })
        .or_else(|| p.map(|p| format!("FPGA {:04x}:{:04x}", p.vendor_id, p.device_id)))
        .unwrap_or_else(|| "FPGA".to_string());
    let vendor = match vendor_id {
        Some(XILINX_VENDOR_ID) => "xilinx".to_string(),
        Some(v) => super::pci_ids::vendor(v).map_or_else(|| format!("{v:04x}"), |v| v.key.into()),
        None => "unknown".to_string(),
    };
    let mut d = Device::new(
        format!("pci:{addr}"),
        name,
        vendor,
        Family::Fpga,
        "pci-sysfs",
    );
    d.pci_address = Some(addr);
    if let Some(r) = role {
        d.extra.insert("role".into(), r.as_str().into());
    }
    let Some(p) = p else {
        return d;
    };
    d.numa_node = p.numa_node;
    d.pci = Some(p.info());
    d.driver.clone_from(&p.driver);
    // The other function of the same Alveo card (same bus and device number).
    let sibling = |want: FpgaRole| {
        cards
            .iter()
            .find(|(c, r)| {
                *r == want
                    && c.address.domain == addr.domain
                    && c.address.bus == addr.bus
                    && c.address.device == addr.device
            })
            .map(|(c, _)| c.address)
    };
    let reason = match role {
        Some(FpgaRole::Management) => {
            let user = sibling(FpgaRole::User);
            if let Some(u) = user {
                d.extra.insert("user_function".into(), u.to_string());
            }
            Some(mgmt_reason(user))
        }
        Some(FpgaRole::Golden) => Some(golden_reason()),
        Some(FpgaRole::User) => {
            if let Some(m) = sibling(FpgaRole::Management) {
                d.extra.insert("management_function".into(), m.to_string());
            }
            driver_unavailable_reason(p.driver.as_deref(), &[XOCL_DRIVER])
        }
        Some(FpgaRole::PhysicalFunction) | Some(FpgaRole::VirtualFunction) => {
            driver_unavailable_reason(p.driver.as_deref(), &[DFL_DRIVER])
        }
        None => driver_unavailable_reason(p.driver.as_deref(), &[]),
    };
    if let Some(r) = reason {
        d.available = false;
        d.unavailable_reason = Some(r);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_from_shells() {
        assert_eq!(
            board_of_shell("xilinx_u250_gen3x16_xdma_shell_4_1").as_deref(),
            Some("Alveo U250")
        );
        assert_eq!(
            board_of_shell("xilinx_u55c_gen3x16_xdma_base_3").as_deref(),
            Some("Alveo U55C")
        );
        assert_eq!(
            board_of_shell("xilinx_vck5000_gen4x8_qdma_base_2").as_deref(),
            Some("Versal VCK5000")
        );
        assert_eq!(
            board_of_shell("xilinx_u250_GOLDEN_5").as_deref(),
            Some("Alveo U250")
        );
        assert_eq!(board_of_shell("my_custom_shell"), None);
        assert_eq!(board_of_shell("xilinx_"), None);
    }

    #[test]
    fn roles_from_ids() {
        assert_eq!(alveo_role(0x5004), Some(FpgaRole::Management));
        assert_eq!(alveo_role(0x5005), Some(FpgaRole::User));
        assert_eq!(alveo_role(0xd004), Some(FpgaRole::Golden));
        assert_eq!(alveo_role(0x1234), None);
        assert_eq!(dfl_role(0x0b30), Some(FpgaRole::PhysicalFunction));
        assert_eq!(dfl_role(0x09c5), Some(FpgaRole::VirtualFunction));
        // The D5005's own ids and the generic OFS ones (dfl-pci.c).
        assert_eq!(dfl_role(0x0b2b), Some(FpgaRole::PhysicalFunction));
        assert_eq!(dfl_role(0x0b2c), Some(FpgaRole::VirtualFunction));
        assert_eq!(dfl_role(0xbcce), Some(FpgaRole::PhysicalFunction));
        assert_eq!(dfl_role(0xbccf), Some(FpgaRole::VirtualFunction));
        assert_eq!(dfl_role(0xbccd), None);
        // OFS boards by subsystem id, as real `fpgainfo fme` outputs pair
        // them (OFS docs: N6001 SubDevice 0x1771, F2000X-PL 0x17D4; the
        // kernel's D5005 patch: 0x138D).
        let intel = Some(0x8086);
        assert_eq!(
            ofs_board(0xbcce, intel, Some(0x1771)),
            Some("Intel Acceleration Development Platform N6001")
        );
        assert_eq!(
            ofs_board(0xbccf, intel, Some(0x17d4)),
            Some("Intel IPU Platform F2000X-PL")
        );
        assert_eq!(
            ofs_board(0xbcce, intel, Some(0x138d)),
            Some("Intel FPGA Programmable Acceleration Card D5005")
        );
        // Another subsystem vendor, an unknown subdevice, another device id.
        assert_eq!(ofs_board(0xbcce, Some(0x1c2c), Some(0x1771)), None);
        assert_eq!(ofs_board(0xbcce, intel, Some(0x0001)), None);
        assert_eq!(ofs_board(0xbcce, intel, None), None);
        assert_eq!(ofs_board(0x0b30, intel, Some(0x1771)), None);
        for (v, id) in [
            (0x8086u16, 0xbcceu16),
            (0x8086, 0xbccf),
            (0x8086, 0x0b2b),
            (0x8086, 0x0b2c),
            (0x1c2c, 0x1000),
            (0x1c2c, 0x1001),
        ] {
            assert_eq!(
                known_device(v, id).unwrap().family,
                Family::Fpga,
                "{v:04x}:{id:04x}"
            );
        }
        for id in [0x5000u16, 0x5001, 0xd020, 0x5095] {
            assert_eq!(
                known_device(XILINX_VENDOR_ID, id).unwrap().family,
                Family::Fpga
            );
        }
    }

    #[test]
    fn manager_vendors() {
        assert_eq!(vendor_of_manager("Xilinx Zynq FPGA Manager"), "xilinx");
        assert_eq!(vendor_of_manager("Altera SOCFPGA FPGA Manager"), "intel");
        assert_eq!(vendor_of_manager("fpga0"), "unknown");
    }

    #[test]
    fn table_rows_with_wrong_width_warn() {
        let t = "Devices present\nBDF  :  Shell  Logic UUID  Device ID  Device Ready*\n[0000:04:00.1]  :  xilinx_u55c_gen3x16_xdma_base_3  user(inst=128)\n";
        let rep = parse_xbutil_examine(t);
        assert_eq!(rep.devices.len(), 1);
        assert_eq!(
            rep.devices[0].shell.as_deref(),
            Some("xilinx_u55c_gen3x16_xdma_base_3")
        );
        assert_eq!(rep.warnings.len(), 1);
    }

    #[test]
    fn list_rows_with_a_uuid_and_device_id() {
        // The row of XRT 2.12.0 in Xilinx/XRT pull 5750 (the capture
        // xrt-pr5750__xbutil-examine__u200-list-with-uuid-and-inst__xrt-2.12.0.txt):
        // the shell is the first word, not the whole rest of the line.
        let t = "Devices present\n  [0000:17:00.1] : xilinx_u200_gen3x16_xdma_base_1 [15FB8DA1-F552-A9F9-23DE-6DC54AA8968F] user(inst=129) \n";
        let rep = parse_xbutil_examine(t);
        assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
        let d = &rep.devices[0];
        assert_eq!(d.bdf, "0000:17:00.1".parse().ok());
        assert_eq!(d.shell.as_deref(), Some("xilinx_u200_gen3x16_xdma_base_1"));
        assert_eq!(
            d.uuid,
            Some((
                "UUID".to_string(),
                "15FB8DA1-F552-A9F9-23DE-6DC54AA8968F".to_string()
            ))
        );
        assert_eq!(d.device_id.as_deref(), Some("user(inst=129)"));
        assert_eq!(d.role(), Some(FpgaRole::User));
        // The XRT 2.10 row (video-sdk capture): a shell and a trailing space.
        let rep =
            parse_xbutil_examine("Devices present\n  [0000:e3:00.1] : xilinx_u30_gen3x4_base_1 \n");
        let d = &rep.devices[0];
        assert_eq!(d.shell.as_deref(), Some("xilinx_u30_gen3x4_base_1"));
        assert_eq!((d.uuid.as_ref(), d.device_id.as_ref()), (None, None));
    }
}
