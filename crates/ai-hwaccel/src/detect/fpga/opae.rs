//! OPAE's `fpgainfo fme`: one block per FPGA Management Engine (FME) of an
//! Intel FPGA card driven by OPAE (PAC A10, PAC N3000, PAC D5005, Silicom
//! N5010/N5011, the OFS cards N6000/N6001, F2000X-PL and development kits).
//!
//! What a block holds, in the order opae-sdk prints it (OFS/opae-sdk
//! @c52aef5a, 2025-05: `binaries/fpgainfo/fmeinfo.c` `print_fme_info`,
//! `fpgainfo.c` `fpgainfo_print_common`, `board.c` `fpgainfo_product_name`,
//! and the board plugins `libraries/libboard/board_*/board_*.c`
//! `print_board_info`, `fpga_boot_info`, `fpga_image_info`; earlier copies
//! under `tools/fpgainfo`, `tools/base/fpgainfo` and `tools/libboard`):
//! 1. the platform name on a line of its own (April 2022 on): the
//!    `platform` of the `opae.cfg` entry that matches the card's
//!    vendor/device/subsystem ids (`Intel FPGA Programmable Acceleration
//!    Card D5005`, `Intel Acceleration Development Platform N6001`, `Intel
//!    IPU Platform F2000X-PL`, …), else `Intel Acceleration Development
//!    Platform`. Generic names (that fallback, `Intel Open FPGA Stack
//!    Platform`, `Open FPGA Stack Platform`) name no board ([`GENERIC_PLATFORMS`]);
//! 2. the board plugin's BMC lines, spelled per plugin and release
//!    ([`BMC_LINES`]): `Board Management Controller, MAX10 NIOS FW version:
//!    …` / `…, MAX10 Build version: …` (N3000, D5005, N5010; without the
//!    colon in early-2019 releases), `Board Management Controller NIOS FW version: …`
//!    / `… Build version: …` (N6000/N6001, F2000X-PL, 2022 on), `Board
//!    Management Controller, microcontroller FW version: N` (PAC A10; no
//!    colon in 2018–2019, where an early PAC D5005 printed `2.0.12, RTL
//!    version 2.0.6`), `PCB version: …` (N3000, OPAE 1.3.2 on); then, on N6000-class
//!    boards, the BOM lines of the card's flash as `Key: Value` (`PBA: …`,
//!    `MMID: …`, `SN: …`), on N5013/N5014 `Board Serial : …`;
//! 3. the header `//****** FME ******//`;
//! 4. `Key<padding> : value` lines (padding to 24, 29 or 32 columns by
//!    release): `Interface` (`DFL`, `VFIO`, `UIO`, June 2023 on), `Object
//!    Id`, the PCI address as `PCIe s:b:d.f : 0000:3B:00.0` (June 2020 on,
//!    upper-case hex; a 2019 release printed lower case), `PCIe s:b:d:f :
//!    0000:D8:00:0` (2018–2020) or `Segment`/`Bus`/`Device`/`Function` lines
//!    (2018), `Vendor Id`, `Device Id`, `SubVendor Id`, `SubDevice Id`
//!    (April 2022 on; `Device Id` alone before), `Socket Id` (or `Numa
//!    Node` for discrete cards in 2019), `Ports Num`, `Bitstream Id` (hex
//!    `0x…`; OFS documentation shows it in decimal too), `Bitstream Version`
//!    (`5.0.1`; hex in 2018–2019) or `Bitstream Metadata` (2018), `Pr
//!    Interface Id` (left out when the bitstream has no PR feature, 2022
//!    on), `Boot Page` (`user`, `user1`, `factory`, `N/A`), and on
//!    N6000-class boards `Factory Image Info`, `User1 Image Info`, `User2
//!    Image Info` (F2000X-PL prints them user1, user2, factory).
//!
//! Keys are read by name, never by position; the value is what follows the
//! first ` : ` (values hold colons: `0000:B1:00.0`), or the first `:` for
//! the unpadded board lines. `N/A`, `None`, `Empty`, `unavailable…`, `Not
//! Supported` and empty values are unknown. Other lines (the plugins'
//! `**ERROR**` lines that share stderr, sensor or HSSI sections, prompts) are
//! skipped; a block without a PCI address still parses.
//!
//! JSON: the C `fpgainfo` (from July 2018, opae-sdk a00526a66, to today)
//! has no JSON output. Only the Python `fpgainfo` it replaced (2017 – July 2018,
//! `tools/base/fpgainfo/fpgainfo.py` at its end, `--json`) printed JSON,
//! whose keys were its sysfs node properties; no capture of it exists, so
//! JSON input is refused with a warning. That tool's text output (`Bus`,
//! `Device`, `Function` without a segment) gives no PCI address here.

use super::{INTEL_VENDOR_ID, dfl_role, ofs_board};
use crate::detect::formats::{MAX_WARNINGS_PER_OUTPUT, ParseOutput, cap_records, past_cap};
use crate::detect::pci_ids::{known_device, vendor};
use crate::model::{Device, Family, PciAddress, PciInfo, excerpt};

/// The tool and command, as warnings name them.
const TOOL: &str = "fpgainfo fme";

/// The header that opens an FME block.
const FME_HEADER: &str = "//****** FME ******//";

/// Platform names that name no board: `board.c`'s fallback when no
/// `opae.cfg` entry matches, `opae.cfg`'s entry for any OFS card (`Intel
/// Open FPGA Stack Platform`), and the earlier spelling of it that the OFS
/// D5005 quick start shows (`Open FPGA Stack Platform`).
pub const GENERIC_PLATFORMS: &[&str] = &[
    "Intel Acceleration Development Platform",
    "Intel Open FPGA Stack Platform",
    "Open FPGA Stack Platform",
];

/// Which BMC fact a board line gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bmc {
    Firmware,
    Build,
}

/// The board plugins' BMC lines, by prefix (source in the module doc). The
/// value follows a `:` in the board plugins (2019 on), a space in the
/// earlier `bmcinfo.c` `print_bmc_info`.
const BMC_LINES: &[(&str, Bmc)] = &[
    (
        "Board Management Controller, MAX10 NIOS FW version",
        Bmc::Firmware,
    ),
    ("Board Management Controller NIOS FW version", Bmc::Firmware),
    (
        "Board Management Controller, microcontroller FW version",
        Bmc::Firmware,
    ),
    (
        "Board Management Controller, MAX10 Build version",
        Bmc::Build,
    ),
    ("Board Management Controller Build version", Bmc::Build),
];

/// What `fpgainfo` prints for the access interface (`fpgainfo_interface_to_str`).
const INTERFACES: &[&str] = &["DFL", "VFIO", "UIO", "Simulated DFL", "Simulated VFIO"];

/// Longest value kept; a longer one is not something fpgainfo prints.
const MAX_VALUE_CHARS: usize = 256;

/// One FME block of `fpgainfo fme`, with the board lines before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FmeBlock {
    /// The platform line (`Intel Acceleration Development Platform N6001`).
    pub platform: Option<String>,
    /// BMC firmware (NIOS / microcontroller) version.
    pub bmc_fw_version: Option<String>,
    /// BMC (MAX10) build version.
    pub bmc_build_version: Option<String>,
    /// The `RTL version` an OPAE 1.x PAC D5005 printed after its BMC firmware version.
    pub bmc_rtl_version: Option<String>,
    /// `PCB version` (N3000).
    pub pcb_version: Option<String>,
    /// Board serial: the BOM's `SN`, or `Board Serial` (N5013/N5014).
    pub serial: Option<String>,
    /// The BOM's `PBA` (printed board assembly number).
    pub pba: Option<String>,
    /// The BOM's `MMID`.
    pub mmid: Option<String>,
    /// OPAE's access interface: `DFL`, `VFIO`, `UIO`.
    pub interface: Option<String>,
    /// PCI address of the function holding the FME.
    pub address: Option<PciAddress>,
    /// `Vendor Id`.
    pub vendor_id: Option<u16>,
    /// `Device Id`.
    pub device_id: Option<u16>,
    /// `SubVendor Id`.
    pub subsystem_vendor_id: Option<u16>,
    /// `SubDevice Id`.
    pub subsystem_device_id: Option<u16>,
    /// `Socket Id`.
    pub socket_id: Option<u32>,
    /// `Numa Node` (2019 releases, discrete cards).
    pub numa_node: Option<u32>,
    /// `Ports Num`: the FME's ports (PR regions).
    pub ports_num: Option<u32>,
    /// `Bitstream Id` as printed (hex `0x…` or decimal).
    pub bitstream_id: Option<String>,
    /// `Bitstream Version` as printed (`5.0.1`, or hex in 2018–2019).
    pub bitstream_version: Option<String>,
    /// `Bitstream Metadata` (2018 releases).
    pub bitstream_metadata: Option<String>,
    /// `Pr Interface Id`: the partial-reconfiguration interface UUID.
    pub pr_interface_id: Option<String>,
    /// `Boot Page`: the flash image the FPGA booted (`user`, `user1`, `factory`).
    pub boot_page: Option<String>,
    /// `Factory Image Info`.
    pub factory_image_info: Option<String>,
    /// `User1 Image Info`.
    pub user1_image_info: Option<String>,
    /// `User2 Image Info`.
    pub user2_image_info: Option<String>,
}

impl FmeBlock {
    /// The facts that go to a device's `extra` map, by key.
    pub fn extra_facts(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        let mut put = |k: &'static str, s: &Option<String>| {
            if let Some(s) = s {
                v.push((k, s.clone()));
            }
        };
        put("opae_platform", &self.platform);
        put("bmc_fw_version", &self.bmc_fw_version);
        put("bmc_build_version", &self.bmc_build_version);
        put("bmc_rtl_version", &self.bmc_rtl_version);
        put("pcb_version", &self.pcb_version);
        put("board_pba", &self.pba);
        put("board_mmid", &self.mmid);
        put("opae_interface", &self.interface);
        put("bitstream_id", &self.bitstream_id);
        put("bitstream_version", &self.bitstream_version);
        put("bitstream_metadata", &self.bitstream_metadata);
        put("pr_interface_id", &self.pr_interface_id);
        put("boot_page", &self.boot_page);
        put("factory_image_info", &self.factory_image_info);
        put("user1_image_info", &self.user1_image_info);
        put("user2_image_info", &self.user2_image_info);
        put("socket_id", &self.socket_id.map(|n| n.to_string()));
        put("ports_num", &self.ports_num.map(|n| n.to_string()));
        v
    }

    /// The platform line when it names a board (not one of [`GENERIC_PLATFORMS`]).
    pub fn board_name(&self) -> Option<&str> {
        self.platform
            .as_deref()
            .filter(|p| !GENERIC_PLATFORMS.iter().any(|g| g.eq_ignore_ascii_case(p)))
    }

    /// Whether anything was read into the block.
    fn is_empty(&self) -> bool {
        *self == FmeBlock::default()
    }
}

/// What one `fpgainfo fme` output held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FmeReport {
    /// FME blocks in output order.
    pub blocks: Vec<FmeBlock>,
    /// Values that did not parse, and input that is no `fpgainfo fme` text.
    pub warnings: Vec<String>,
}

/// The 2018 layout's separate address lines, joined when the block ends.
#[derive(Default)]
struct SplitAddress {
    segment: Option<u32>,
    bus: Option<u32>,
    device: Option<u32>,
    function: Option<u32>,
}

impl SplitAddress {
    fn address(&self) -> Option<PciAddress> {
        Some(PciAddress {
            domain: self.segment?,
            bus: u8::try_from(self.bus?).ok()?,
            device: u8::try_from(self.device?).ok().filter(|d| *d <= 0x1f)?,
            function: u8::try_from(self.function?).ok().filter(|f| *f <= 7)?,
        })
    }
}

/// Warnings with a bound: past [`MAX_WARNINGS_PER_OUTPUT`] they are counted,
/// not kept, so a forged output of a million bad lines stays small.
#[derive(Default)]
struct Warnings {
    kept: Vec<String>,
    dropped: usize,
}

impl Warnings {
    /// Keep room for the count and for the device cap's own warning.
    fn push(&mut self, w: String) {
        if self.kept.len() + 2 < MAX_WARNINGS_PER_OUTPUT {
            self.kept.push(w);
        } else {
            self.dropped += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.kept
                .push(format!("{TOOL}: {} more problems not listed", self.dropped));
        }
        self.kept
    }
}

/// Whether fpgainfo printed that it does not know: nothing, `N/A`, `None`
/// (an erased image slot), `Empty`, `Not Supported`, `unavailable…`, `I/O Error`.
fn says_nothing(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    l.is_empty()
        || matches!(
            l.as_str(),
            "n/a" | "none" | "empty" | "not supported" | "i/o error"
        )
        || l.starts_with("unavailable")
}

/// A value as fpgainfo printed it, or `None` when it says nothing.
fn value(v: &str, key: &str, warnings: &mut Warnings) -> Option<String> {
    let v = v.trim();
    if says_nothing(v) {
        return None;
    }
    if v.chars().count() > MAX_VALUE_CHARS || v.chars().any(char::is_control) {
        warnings.push(format!(
            "{TOOL}: {key} value {} is not one fpgainfo prints",
            excerpt(v, 40)
        ));
        return None;
    }
    Some(v.to_string())
}

/// A hex value (`0x8086`, `0x00`) of at most `max`.
fn hex(v: &str, key: &str, max: u32, warnings: &mut Warnings) -> Option<u32> {
    let v = v.trim();
    if says_nothing(v) {
        return None;
    }
    let digits = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    let n = (!digits.is_empty() && digits.len() <= 8)
        .then(|| u32::from_str_radix(digits, 16).ok())
        .flatten()
        .filter(|n| *n <= max);
    if n.is_none() {
        warnings.push(format!(
            "{TOOL}: {key} {} is not a hex number up to {max:#x}",
            excerpt(v, 40)
        ));
    }
    n
}

/// A decimal value (`01`, `1`).
fn decimal(v: &str, key: &str, warnings: &mut Warnings) -> Option<u32> {
    let v = v.trim();
    if says_nothing(v) {
        return None;
    }
    let n = v.parse::<u32>().ok();
    if n.is_none() {
        warnings.push(format!("{TOOL}: {key} {} is not a number", excerpt(v, 40)));
    }
    n
}

/// The PCI address of `PCIe s:b:d.f : 0000:3B:00.0` or the 2018–2020
/// `PCIe s:b:d:f : 0000:D8:00:0` (function after a colon).
fn pci_address(v: &str, warnings: &mut Warnings) -> Option<PciAddress> {
    let v = v.trim();
    let dotted = if !v.contains('.') && v.matches(':').count() == 3 {
        v.rsplit_once(':').map(|(a, f)| format!("{a}.{f}"))
    } else {
        Some(v.to_string())
    };
    let parsed = dotted.and_then(|d| d.parse::<PciAddress>().ok());
    if parsed.is_none() {
        warnings.push(format!(
            "{TOOL}: PCIe s:b:d.f {} is not a PCI address",
            excerpt(v, 40)
        ));
    }
    parsed
}

/// Split `Key     : value` (or `Key: value`) at the first ` : `, else at the
/// first `:`. `PCIe s:b:d.f` holds colons in its key, so the padded form is
/// tried first.
fn key_value(t: &str) -> Option<(&str, &str)> {
    t.split_once(" : ")
        .or_else(|| t.split_once(':'))
        .map(|(k, v)| (k.trim(), v))
}

/// A bare line that can be the platform name: printable, starting with a
/// letter, no colon, not a shell prompt or a documentation marker.
fn platform_line(t: &str) -> bool {
    !t.contains(':')
        && t.len() <= 128
        && t.starts_with(|c: char| c.is_ascii_alphabetic())
        && t.chars().all(|c| c == ' ' || c.is_ascii_graphic())
        && !t.contains("fpgainfo")
}

/// The `//****** NAME ******//` header of a section, if `t` is one.
fn section_header(t: &str) -> Option<&str> {
    let inner = t.strip_prefix("//")?.strip_suffix("//")?;
    let name = inner.trim_matches('*').trim();
    (inner.starts_with('*') && inner.ends_with('*')).then_some(name)
}

/// A board line before the FME header, read into `pre`. Returns whether
/// the line was one.
fn board_line(t: &str, pre: &mut FmeBlock, warnings: &mut Warnings) -> bool {
    for (prefix, what) in BMC_LINES {
        let Some(rest) = t.strip_prefix(prefix) else {
            continue;
        };
        let rest = rest.trim_start().strip_prefix(':').unwrap_or(rest);
        let (fw, rtl) = match rest.split_once(", RTL version") {
            Some((fw, rtl)) => (fw, Some(rtl)),
            None => (rest, None),
        };
        let v = value(fw, prefix, warnings);
        match what {
            Bmc::Firmware => {
                pre.bmc_fw_version = v;
                pre.bmc_rtl_version = rtl.and_then(|r| value(r, "RTL version", warnings));
            }
            Bmc::Build => pre.bmc_build_version = v,
        }
        return true;
    }
    let Some((k, v)) = t.split_once(':') else {
        return false;
    };
    match k.trim() {
        "PCB version" => pre.pcb_version = value(v, "PCB version", warnings),
        "PBA" => pre.pba = value(v, "PBA", warnings),
        "MMID" => pre.mmid = value(v, "MMID", warnings),
        "SN" => pre.serial = value(v, "SN", warnings),
        "Board Serial" => {
            // `FB4CGG2@S10D21-D20.0123 (board info)`: the serial is the first word.
            let v = v.trim();
            let serial = v.split(" (").next().unwrap_or(v);
            pre.serial = value(serial, "Board Serial", warnings);
        }
        _ => return false,
    }
    true
}

/// A `Key : value` line of an FME block, read into `b`.
fn block_line(t: &str, b: &mut FmeBlock, split: &mut SplitAddress, warnings: &mut Warnings) {
    let Some((k, v)) = key_value(t) else {
        return;
    };
    if k.starts_with("PCIe s:b:d") {
        b.address = pci_address(v, warnings);
        return;
    }
    let text = |warnings: &mut Warnings| value(v, k, warnings);
    match k {
        "Interface" => {
            let v = v.trim();
            // `fpgainfo fme -V` of 2019–2020 printed an N3000's network
            // configuration (`8x10G`) under the same key: not an interface.
            b.interface = INTERFACES.iter().find(|i| **i == v).map(|i| i.to_string());
        }
        "Segment" => split.segment = hex(v, k, 0xffff_ffff, warnings),
        "Bus" => split.bus = hex(v, k, 0xff, warnings),
        "Device" => split.device = hex(v, k, 0x1f, warnings),
        "Function" => split.function = hex(v, k, 0x7, warnings),
        "Vendor Id" => b.vendor_id = hex(v, k, 0xffff, warnings).map(|n| n as u16),
        "Device Id" => b.device_id = hex(v, k, 0xffff, warnings).map(|n| n as u16),
        "SubVendor Id" => {
            b.subsystem_vendor_id = hex(v, k, 0xffff, warnings).map(|n| n as u16);
        }
        "SubDevice Id" => {
            b.subsystem_device_id = hex(v, k, 0xffff, warnings).map(|n| n as u16);
        }
        "Socket Id" => b.socket_id = hex(v, k, 0xff, warnings),
        "Numa Node" => b.numa_node = decimal(v, k, warnings),
        "Ports Num" => b.ports_num = decimal(v, k, warnings),
        "Bitstream Id" => b.bitstream_id = text(warnings),
        "Bitstream Version" => b.bitstream_version = text(warnings),
        "Bitstream Metadata" => b.bitstream_metadata = text(warnings),
        "Pr Interface Id" => b.pr_interface_id = text(warnings),
        "Boot Page" => b.boot_page = text(warnings),
        "Factory Image Info" => b.factory_image_info = text(warnings),
        "User1 Image Info" => b.user1_image_info = text(warnings),
        "User2 Image Info" => b.user2_image_info = text(warnings),
        _ => {}
    }
}

/// Parse the text of `fpgainfo fme`: one [`FmeBlock`] per
/// `//****** FME ******//` header, with the platform and board lines printed
/// before it. Never panics; binary or truncated input gives what it holds
/// and warnings.
pub fn parse_fpgainfo_fme(text: &str) -> FmeReport {
    let mut warnings = Warnings::default();
    let text = text.trim_start_matches('\u{feff}');
    if text.trim_start().starts_with(['{', '[']) {
        warnings.push(format!(
            "{TOOL}: JSON input; fpgainfo prints no JSON since its C rewrite (July 2018), \
             and the earlier Python tool's JSON is not read"
        ));
        return FmeReport {
            blocks: Vec::new(),
            warnings: warnings.finish(),
        };
    }
    let mut blocks: Vec<FmeBlock> = Vec::new();
    // Board lines seen since the last block line: they belong to the next block.
    let mut pre = FmeBlock::default();
    let mut cur: Option<(FmeBlock, SplitAddress)> = None;
    let close = |cur: &mut Option<(FmeBlock, SplitAddress)>, blocks: &mut Vec<FmeBlock>| {
        if let Some((mut b, split)) = cur.take() {
            if b.address.is_none() {
                b.address = split.address();
            }
            blocks.push(b);
        }
    };
    for line in text.lines() {
        if past_cap(blocks.len()) {
            break;
        }
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(name) = section_header(t) {
            close(&mut cur, &mut blocks);
            if name == "FME" || t == FME_HEADER {
                cur = Some((std::mem::take(&mut pre), SplitAddress::default()));
            } else {
                // Another command's section (`PORT`, `HSSI information`):
                // its board lines are not the next FME's.
                pre = FmeBlock::default();
            }
            continue;
        }
        if board_line(t, &mut pre, &mut warnings) {
            continue;
        }
        if platform_line(t) {
            // The first name after the previous block is the platform line.
            if pre.platform.is_none() {
                pre.platform = Some(t.to_string());
            }
            continue;
        }
        if let Some((b, split)) = cur.as_mut() {
            block_line(t, b, split, &mut warnings);
        }
    }
    close(&mut cur, &mut blocks);
    if !pre.is_empty() {
        warnings.push(format!(
            "{TOOL}: the output ends after board lines with no {FME_HEADER} block after them (truncated?)"
        ));
    }
    let mut kept = warnings.finish();
    cap_records(&mut blocks, TOOL, &mut kept);
    FmeReport {
        blocks,
        warnings: kept,
    }
}

/// The name of the board of a block: its platform line when it names one,
/// else the OFS board of its subsystem id, else the PCI table's name for
/// its ids (`Device Id` alone, before April 2022, is read as an Intel id
/// only when it is one of `dfl-pci.c`'s), else the generic platform line.
pub fn board_name(b: &FmeBlock) -> String {
    if let Some(n) = b.board_name() {
        return n.to_string();
    }
    let by_ids = b.device_id.and_then(|dev| {
        ofs_board(dev, b.subsystem_vendor_id, b.subsystem_device_id)
            .map(str::to_string)
            .or_else(|| {
                let vendor_id = b
                    .vendor_id
                    .or_else(|| dfl_role(dev).map(|_| INTEL_VENDOR_ID))?;
                known_device(vendor_id, dev).map(|k| k.name.to_string())
            })
    });
    by_ids
        .or_else(|| b.platform.clone())
        .unwrap_or_else(|| "Intel FPGA".to_string())
}

/// Add what a block says to a device (the PCI function it was joined to,
/// or one made from the block alone): the board name when the platform
/// line names one, serial, NUMA node, and the facts of
/// [`FmeBlock::extra_facts`] in `extra`.
pub fn apply_fme(d: &mut Device, b: &FmeBlock) {
    if let Some(n) = b.board_name() {
        d.name = n.to_string();
    }
    if d.serial.is_none() {
        d.serial.clone_from(&b.serial);
    }
    if d.numa_node.is_none() {
        d.numa_node = b.numa_node;
    }
    for (k, v) in b.extra_facts() {
        d.extra.insert(k.to_string(), v);
    }
}

/// The device one block describes, without a PCI view: id `pci:<address>`
/// (`fpgainfo:<n>` without one), vendor from `Vendor Id` (Intel, whose
/// FPGAs every OPAE board carries, when the line is absent).
pub fn fme_device(b: &FmeBlock, index: usize) -> Device {
    let id = b
        .address
        .map_or_else(|| format!("fpgainfo:{index}"), |a| format!("pci:{a}"));
    let vendor_key = match b.vendor_id {
        Some(v) => vendor(v).map_or_else(|| format!("{v:04x}"), |v| v.key.to_string()),
        None => "intel".to_string(),
    };
    let mut d = Device::new(id, board_name(b), vendor_key, Family::Fpga, "fpgainfo");
    d.pci_address = b.address;
    if let (Some(v), Some(dev)) = (b.vendor_id, b.device_id) {
        let hex4 = |n: u16| format!("{n:04x}");
        d.pci = Some(PciInfo {
            vendor_id: hex4(v),
            device_id: hex4(dev),
            subsystem_vendor_id: b.subsystem_vendor_id.map(hex4),
            subsystem_device_id: b.subsystem_device_id.map(hex4),
            ..PciInfo::default()
        });
    }
    apply_fme(&mut d, b);
    d
}

/// Parser for `ai-hwaccel parse fpgainfo-fme`.
pub(crate) fn parse_format(bytes: &[u8]) -> ParseOutput {
    let rep = parse_fpgainfo_fme(&crate::model::text::decode(bytes));
    let devices: Vec<Device> = rep
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| fme_device(b, i))
        .collect();
    let mut warnings = rep.warnings;
    if devices.is_empty() {
        warnings.push(format!("{TOOL}: no {FME_HEADER} block"));
    }
    ParseOutput { devices, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capture of `tests/fixtures/fpgainfo-fme` (provenance in SOURCES.md).
    macro_rules! capture {
        ($f:literal) => {
            include_str!(concat!("../../../tests/fixtures/fpgainfo-fme/", $f))
        };
    }

    const N3000: &str = capture!("opae-sdk-install-guide__fpgainfo-fme__pac-n3000__opae-2.0.txt");
    const D5005_LKML: &str =
        capture!("lkml-dfl-pci-d5005-subdevice__fpgainfo-fme__d5005__ofs-2024.1-1.txt");
    const N6001_BOM: &str =
        capture!("ofs-docs-n6001-fim-dev__fpgainfo-fme__n6001-bom-lines__bmc-3.15.2.txt");
    const F2000X: &str =
        capture!("ofs-docs-f2000x-quick-start__fpgainfo-fme__f2000x-pl__bmc-1.1.9.txt");
    const N6001_ERRORS: &str =
        capture!("ofs-docs-ftile-jtag__fpgainfo-fme__n6001-name-bmc-read-errors.txt");
    const JTAG_DK: &str = capture!("ofs-docs-agx5-quick-start__fpgainfo-fme__jtag-pci-dk-0001.txt");
    const D5005_GENERIC: &str =
        capture!("ofs-docs-d5005-quick-start__fpgainfo-fme__d5005-open-fpga-stack-platform.txt");

    fn one(name: &str) -> FmeBlock {
        let rep = parse_fpgainfo_fme(name);
        assert!(rep.warnings.is_empty(), "{name}: {:?}", rep.warnings);
        assert_eq!(rep.blocks.len(), 1, "{name}");
        rep.blocks.into_iter().next().unwrap()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn pac_n3000_of_opae_2_0() {
        let b = one(N3000);
        assert_eq!(b.platform, None, "no platform line before April 2022");
        assert_eq!(b.bmc_fw_version, s("D.2.1.24"));
        assert_eq!(b.bmc_build_version, s("D.2.0.7"));
        assert_eq!(b.address, "0000:08:00.0".parse().ok());
        assert_eq!((b.vendor_id, b.device_id), (None, Some(0x0b30)));
        assert_eq!(b.socket_id, Some(0));
        assert_eq!(b.ports_num, Some(1));
        assert_eq!(b.bitstream_id, s("0x2300011001030F"));
        assert_eq!(b.bitstream_version, s("0.2.3"));
        assert_eq!(b.pr_interface_id, s("f3c99413-5081-4aad-bced-07eb84a6d0bb"));
        assert_eq!(b.boot_page, s("user"));
        assert_eq!(b.interface, None);
        // Named by dfl-pci.c's N3000 id: Device Id alone, an Intel id.
        assert_eq!(board_name(&b), "Intel FPGA PAC N3000");
    }

    #[test]
    fn d5005_of_ofs_2024_from_the_kernel_patch() {
        let b = one(D5005_LKML);
        assert_eq!(
            b.platform,
            s("Intel FPGA Programmable Acceleration Card D5005")
        );
        // The plugin prints `%s \n`: the trailing space is not the value's.
        assert_eq!(b.bmc_fw_version, s("2.0.12"));
        assert_eq!(b.bmc_build_version, s("2.0.8"));
        assert_eq!(b.interface, s("DFL"));
        assert_eq!(b.address, "0000:d8:00.0".parse().ok());
        assert_eq!(
            (
                b.vendor_id,
                b.device_id,
                b.subsystem_vendor_id,
                b.subsystem_device_id
            ),
            (Some(0x8086), Some(0xbcce), Some(0x8086), Some(0x138d))
        );
        assert_eq!(b.bitstream_id, s("0x4010002183C88A9"));
        assert_eq!(b.bitstream_version, s("4.0.1"));
        assert_eq!(b.pr_interface_id, s("a195b6f7-cf23-5a2b-8ef9-1161e184ec4e"));
        assert_eq!(b.boot_page, s("user"));
        assert_eq!(
            board_name(&b),
            "Intel FPGA Programmable Acceleration Card D5005"
        );
    }

    #[test]
    fn n6001_with_bom_lines_and_image_info() {
        let b = one(N6001_BOM);
        assert_eq!(
            b.platform,
            s("Intel Acceleration Development Platform N6001")
        );
        assert_eq!(b.bmc_fw_version, s("3.15.2"));
        assert_eq!(b.bmc_build_version, s("3.15.2"));
        assert_eq!(b.pba, s("B#FB2CG1@AGF14-A0P2"));
        assert_eq!(b.mmid, s("217000"));
        assert_eq!(b.serial, s("Q171211700050"));
        assert_eq!(b.address, "0000:98:00.0".parse().ok());
        assert_eq!(b.subsystem_device_id, Some(0x1771));
        assert_eq!(b.bitstream_id, s("360571656009101231"), "decimal, as shown");
        assert_eq!(b.boot_page, s("user1"));
        assert_eq!(b.factory_image_info, s("9035190d637c383453173deb5de25fdd"));
        assert_eq!(b.user1_image_info, s("893e691edfccfd0aecb1c332ad69551b"));
        assert_eq!(b.user2_image_info, s("8cd2ae8073e194525bcd682f50935fc7"));
    }

    #[test]
    fn f2000x_prints_its_image_info_in_another_order_and_none() {
        let b = one(F2000X);
        assert_eq!(b.platform, s("Intel IPU Platform F2000X-PL"));
        assert_eq!(b.bmc_fw_version, s("1.1.9"));
        assert_eq!(b.address, "0000:15:00.0".parse().ok());
        assert_eq!(b.subsystem_device_id, Some(0x17d4));
        assert_eq!(b.bitstream_id, s("0x50103023DFBFC8E"));
        assert_eq!(b.pr_interface_id, s("bf74e494-ad12-5509-98ab-4105d27979f3"));
        assert_eq!(b.user1_image_info, s("98ab4105d27979f3bf74e494ad125509"));
        assert_eq!((b.user2_image_info, b.factory_image_info), (None, None));
    }

    #[test]
    fn bmc_read_errors_on_stderr_leave_the_versions_unknown() {
        let b = one(N6001_ERRORS);
        assert_eq!(
            b.platform,
            s("Intel Acceleration Development Platform N6001")
        );
        assert_eq!((b.bmc_fw_version, b.bmc_build_version), (None, None));
        assert_eq!(b.address, "0000:b1:00.0".parse().ok());
        assert_eq!(b.boot_page, None, "N/A");
        assert_eq!(b.pr_interface_id, s("b541eb7c-3c7e-5678-a660-a54f71594b34"));
    }

    #[test]
    fn generic_platform_names_fall_back_to_the_ids() {
        let b = one(D5005_GENERIC);
        assert_eq!(b.platform, s("Open FPGA Stack Platform"));
        assert_eq!(b.board_name(), None);
        assert_eq!(
            board_name(&b),
            "Intel FPGA Programmable Acceleration Card D5005",
            "OFS id 0xbcce, subdevice 0x138d"
        );
        let b = one(JTAG_DK);
        assert_eq!(b.platform, s("Intel Acceleration JTAG PCI Development Kit"));
        assert_eq!(b.subsystem_device_id, Some(0x0001));
        assert_eq!(
            (&b.bmc_fw_version, &b.bmc_build_version),
            (&None, &None),
            "no BMC lines"
        );
        assert_eq!(
            board_name(&b),
            "Intel Acceleration JTAG PCI Development Kit"
        );
    }

    #[test]
    fn older_spellings_from_the_source() {
        // Lines as the 2018–2019 C fpgainfo printed them (tools/base/fpgainfo
        // @060e74fa `bmcinfo.c` `print_bmc_info` and `fpgainfo.c`; 2018's
        // `fpgainfo-c` Bus/Device/Function lines): values of the fake card.
        let t = "Board Management Controller, MAX10 NIOS FW version D.1.0.12\n\
                 Board Management Controller, MAX10 Build version D.1.0.9\n\
                 PCB version: C\n\
                 //****** FME ******//\n\
                 Object Id                     : 0xEF00000\n\
                 PCIe s:b:d:f                  : 0000:5E:00:0\n\
                 Device Id                     : 0x0b30\n\
                 Numa Node                     : 1\n\
                 Ports Num                     : 01\n\
                 Bitstream Id                  : 0x123000200000185\n\
                 Bitstream Version             : 0x55A500030201\n\
                 Pr Interface Id               : 69528db6-eb31-577a-8c36-68f9faa081f6\n\
                 Board Management Controller, microcontroller FW version 2.0.12, RTL version 2.0.6\n\
                 //****** FME ******//\n\
                 Object Id                : 0xEC00000\n\
                 Segment                  : 0x0000\n\
                 Bus                      : 0x89\n\
                 Device                   : 0x00\n\
                 Function                 : 0x00\n\
                 Bitstream Metadata       : 0x55A500030201\n";
        let rep = parse_fpgainfo_fme(t);
        assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
        let [a, b] = rep.blocks.as_slice() else {
            panic!("{:?}", rep.blocks)
        };
        assert_eq!(a.bmc_fw_version, s("D.1.0.12"));
        assert_eq!(a.bmc_build_version, s("D.1.0.9"));
        assert_eq!(a.pcb_version, s("C"));
        assert_eq!(a.address, "0000:5e:00.0".parse().ok());
        assert_eq!(a.numa_node, Some(1));
        assert_eq!(a.bitstream_version, s("0x55A500030201"));
        assert_eq!(b.bmc_fw_version, s("2.0.12"));
        assert_eq!(b.bmc_rtl_version, s("2.0.6"));
        assert_eq!(b.address, "0000:89:00.0".parse().ok());
        assert_eq!(b.bitstream_metadata, s("0x55A500030201"));
        // The Python tool's Bus/Device/Function without a segment: no address.
        let rep = parse_fpgainfo_fme(
            "//****** FME ******//\nBus : 0x5E\nDevice : 0x00\nFunction : 0x00\n",
        );
        assert_eq!(rep.blocks[0].address, None);
    }

    #[test]
    fn two_cards_and_a_port_section() {
        let t = N6001_BOM.to_string()
            + D5005_LKML
            + "//****** PORT ******//\nPCIe s:b:d.f : 0000:99:00.0\n";
        let rep = parse_fpgainfo_fme(&t);
        assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
        assert_eq!(rep.blocks.len(), 2);
        assert_eq!(rep.blocks[0].bmc_fw_version, s("3.15.2"));
        assert_eq!(rep.blocks[0].serial, s("Q171211700050"));
        assert_eq!(rep.blocks[1].bmc_fw_version, s("2.0.12"));
        assert_eq!(
            rep.blocks[1].serial, None,
            "board lines belong to their own block"
        );
        assert_eq!(rep.blocks[1].address, "0000:d8:00.0".parse().ok());
    }

    #[test]
    fn truncated_copies_give_what_they_hold() {
        let full = N6001_BOM;
        // Cut inside the block: the block stands with the lines before the cut.
        let cut = &full[..full.find("Bitstream Id").unwrap()];
        let rep = parse_fpgainfo_fme(cut);
        assert_eq!(rep.blocks.len(), 1);
        let b = &rep.blocks[0];
        assert_eq!(b.address, "0000:98:00.0".parse().ok());
        assert_eq!(b.bmc_fw_version, s("3.15.2"));
        assert_eq!(
            (b.bitstream_id.as_ref(), b.pr_interface_id.as_ref()),
            (None, None)
        );
        // Cut before the header: no block, and a warning naming the tool.
        let cut = &full[..full.find("//***").unwrap()];
        let rep = parse_fpgainfo_fme(cut);
        assert!(rep.blocks.is_empty());
        assert!(
            rep.warnings[0].starts_with("fpgainfo fme:"),
            "{:?}",
            rep.warnings
        );
        // Cut in the middle of the address value.
        let cut = &full[..full.find("98:00.0").unwrap() + 2];
        let rep = parse_fpgainfo_fme(cut);
        assert_eq!(rep.blocks[0].address, None);
        assert!(
            rep.warnings.iter().any(|w| w.contains("not a PCI address")),
            "{:?}",
            rep.warnings
        );
    }

    #[test]
    fn garbage_json_and_huge_input() {
        for t in ["", "\u{0}\u{1}\u{ff}garbage\n::::\n : : \n", "Bus : zz\n"] {
            let rep = parse_fpgainfo_fme(t);
            assert!(rep.blocks.is_empty(), "{t:?}");
        }
        let bytes: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
        let rep = parse_fpgainfo_fme(&String::from_utf8_lossy(&bytes));
        assert!(rep.warnings.len() <= MAX_WARNINGS_PER_OUTPUT);
        let rep = parse_fpgainfo_fme("{\"fme\": []}");
        assert!(rep.blocks.is_empty());
        assert!(rep.warnings[0].contains("JSON"), "{:?}", rep.warnings);
        // A million bad addresses: bounded warnings; 5,000 headers: capped blocks.
        let bad = "//****** FME ******//\nPCIe s:b:d.f : zz\n".repeat(5_000);
        let rep = parse_fpgainfo_fme(&bad);
        assert_eq!(rep.blocks.len(), crate::detect::MAX_DEVICES_PER_OUTPUT);
        assert!(
            rep.warnings.len() <= MAX_WARNINGS_PER_OUTPUT,
            "{}",
            rep.warnings.len()
        );
        assert!(
            rep.warnings.iter().any(|w| w.contains("more than")),
            "{:?}",
            rep.warnings.last()
        );
    }

    #[test]
    fn devices_for_parse() {
        let out = parse_format(N6001_BOM.as_bytes());
        let d = &out.devices[0];
        assert_eq!(d.id, "pci:0000:98:00.0");
        assert_eq!(d.name, "Intel Acceleration Development Platform N6001");
        assert_eq!((d.vendor.as_str(), d.family), ("intel", Family::Fpga));
        assert_eq!(d.serial.as_deref(), Some("Q171211700050"));
        assert_eq!(d.extra["bmc_fw_version"], "3.15.2");
        assert_eq!(
            d.extra["pr_interface_id"],
            "e376f074-6a22-55b1-a162-f734ff17e253"
        );
        assert_eq!(d.extra["opae_interface"], "DFL");
        assert_eq!(d.extra["ports_num"], "1");
        assert_eq!(d.extra["socket_id"], "0");
        let pci = d.pci.as_ref().unwrap();
        assert_eq!(
            (
                pci.vendor_id.as_str(),
                pci.device_id.as_str(),
                pci.subsystem_device_id.as_deref()
            ),
            ("8086", "bcce", Some("1771"))
        );
        // No Vendor Id line (2020): vendor intel, no PCI identity invented.
        let out = parse_format(N3000.as_bytes());
        assert_eq!(out.devices[0].vendor, "intel");
        assert_eq!(out.devices[0].pci, None);
        // A block without an address keeps a tool id.
        let out = parse_format(b"//****** FME ******//\nBitstream Id : 0x1\n");
        assert_eq!(out.devices[0].id, "fpgainfo:0");
        assert_eq!(out.devices[0].pci_address, None);
    }
}
