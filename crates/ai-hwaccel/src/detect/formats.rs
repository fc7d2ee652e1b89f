//! Saved tool outputs that `ai-hwaccel parse FORMAT FILE` understands: one
//! entry per format, each a pure parser from bytes to devices and warnings.
//! Backends and the `parse` command share these parsers, so a parser is
//! tested once and used everywhere.

use crate::model::Device;

/// What parsing one saved output gives.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParseOutput {
    /// Devices, with the device fields of the detect JSON contract.
    pub devices: Vec<Device>,
    /// Problems met (unparsable fields, truncated input, …).
    pub warnings: Vec<String>,
}

/// Most devices one tool output may describe; past it a parser stops reading
/// devices and warns. The largest single nodes built have far fewer: 8–16
/// GPUs or accelerators per server (DGX/HGX H100 8, MI300X OAM 8, trn1.32xlarge
/// 16 Neuron devices, 72 GPUs in one GB200 NVL72 rack that no single host's
/// tool lists), and with MIG each GPU adds at most 7 instances (8 × 8 = 64
/// device rows). 1024 leaves an order of magnitude of headroom while bounding
/// the memory a forged output of repeated device headers can make us build
/// (each device costs a few KiB; 1 MiB of `GPU: 0` lines used to become
/// ~150,000 devices and 508 MiB).
pub const MAX_DEVICES_PER_OUTPUT: usize = 1024;

/// Whether a parser already holding `count` devices from `tool` must stop.
/// At the cap it records one warning naming the tool and the limit (call
/// it before adding each device; it warns only once, when `count` first
/// reaches the cap).
pub(crate) fn device_cap_reached(count: usize, tool: &str, warnings: &mut Vec<String>) -> bool {
    if count < MAX_DEVICES_PER_OUTPUT {
        return false;
    }
    if count == MAX_DEVICES_PER_OUTPUT {
        warnings.push(format!(
            "{tool}: more than {MAX_DEVICES_PER_OUTPUT} devices in one output; the rest are ignored"
        ));
    }
    true
}

/// Whether a parser holding `count` records has read past the cap and must
/// stop reading; [`cap_records`] then trims the one record too many and says
/// so. A parser that checks this at the top of its read loop holds at most
/// one record more than [`MAX_DEVICES_PER_OUTPUT`], whatever the input.
pub(crate) fn past_cap(count: usize) -> bool {
    count > MAX_DEVICES_PER_OUTPUT
}

/// Keep the first [`MAX_DEVICES_PER_OUTPUT`] records of `tool`, with one
/// warning when there were more.
pub(crate) fn cap_records<T>(records: &mut Vec<T>, tool: &str, warnings: &mut Vec<String>) {
    if records.len() > MAX_DEVICES_PER_OUTPUT {
        records.truncate(MAX_DEVICES_PER_OUTPUT);
        let _ = device_cap_reached(MAX_DEVICES_PER_OUTPUT, tool, warnings);
    }
}

/// Most warnings one tool output may add; past it they are replaced by one
/// line counting the rest. A forged output of a million bad rows otherwise
/// becomes a million warnings in the JSON (each parser bounds what one
/// warning quotes, not how many there are).
pub const MAX_WARNINGS_PER_OUTPUT: usize = 100;

/// Keep the first [`MAX_WARNINGS_PER_OUTPUT`] of `warnings` about `tool`'s
/// output, and one line saying how many more were dropped.
pub fn cap_warnings(warnings: &mut Vec<String>, tool: &str) {
    if warnings.len() > MAX_WARNINGS_PER_OUTPUT {
        let dropped = warnings.len() - MAX_WARNINGS_PER_OUTPUT;
        warnings.truncate(MAX_WARNINGS_PER_OUTPUT);
        warnings.push(format!("{tool}: {dropped} more warnings not shown"));
    }
}

impl ParseOutput {
    /// Drop devices past [`MAX_DEVICES_PER_OUTPUT`], with a warning.
    pub fn cap_devices(&mut self, tool: &str) {
        if self.devices.len() > MAX_DEVICES_PER_OUTPUT {
            self.devices.truncate(MAX_DEVICES_PER_OUTPUT);
            let _ = device_cap_reached(MAX_DEVICES_PER_OUTPUT, tool, &mut self.warnings);
        }
    }
}

/// One supported format.
pub struct Format {
    /// Name used on the command line (`nvidia-smi-xml`).
    pub name: &'static str,
    /// The command whose output this is.
    pub produced_by: &'static str,
    /// The parser. Never panics; an unusable input yields no devices and a warning.
    pub parse: fn(&[u8]) -> ParseOutput,
}

/// Every format `parse` accepts. Backends add their formats here.
pub static FORMATS: &[Format] = &[
    Format {
        name: "amd-smi-json",
        produced_by: "amd-smi static|list|topology|metric --json",
        parse: super::amd::amd_smi::parse_json_format,
    },
    Format {
        name: "amd-smi-text",
        produced_by: "amd-smi static / amd-smi list (default text output)",
        parse: super::amd::amd_smi::parse_text_format,
    },
    Format {
        name: "rocm-smi-json",
        produced_by: "rocm-smi --showproductname --showmeminfo vram --showbus --showdriverversion --json (any flag set); also Hygon's hy-smi --json and DTK's rocm-smi",
        parse: super::amd::rocm_smi::parse_format,
    },
    Format {
        name: "rocminfo",
        produced_by: "rocminfo (ROCm's HSA agent report; also Hygon DTK's fork)",
        parse: super::amd::rocminfo::parse,
    },
    Format {
        name: "xpu-smi-json",
        produced_by: "xpu-smi discovery -j (or discovery -d N -j)",
        parse: super::intel::xpu_smi::parse_format,
    },
    Format {
        name: "xpu-smi-text",
        produced_by: "xpu-smi discovery (or discovery -d N): the Device ID | Device Information table",
        parse: super::intel::xpu_smi::parse_text_format,
    },
    Format {
        name: "nvidia-smi-xml",
        produced_by: "nvidia-smi -q -x",
        parse: super::nvidia::smi_xml::parse,
    },
    Format {
        name: "nvidia-smi-csv",
        produced_by: "nvidia-smi --query-gpu=FIELDS --format=csv (with the header line)",
        parse: super::nvidia::smi_csv::parse,
    },
    Format {
        name: "nvidia-smi-topo",
        produced_by: "nvidia-smi topo -m (devices are bare `gpu<N>` entries with links and NUMA affinity)",
        parse: super::nvidia::smi_topo::parse,
    },
    Format {
        name: "nvidia-smi-q",
        produced_by: "nvidia-smi -q (the plain-text full report; also --query)",
        parse: super::nvidia::smi_q::parse,
    },
    Format {
        name: "nvidia-smi-nvlink",
        produced_by: "nvidia-smi nvlink -s (per-link speeds; also --status)",
        parse: super::nvidia::smi_nvlink::parse,
    },
    Format {
        name: "vulkaninfo-summary",
        produced_by: "vulkaninfo --summary (the same parser as `vulkaninfo`)",
        parse: super::vulkan::parse_format,
    },
    Format {
        name: "vulkaninfo",
        produced_by: "vulkaninfo --summary (or the full `vulkaninfo` text report)",
        parse: super::vulkan::parse_format,
    },
    Format {
        name: "clinfo",
        produced_by: "clinfo --raw, clinfo (its default report), or the AMD APP SDK clinfo",
        parse: super::opencl::parse_format,
    },
    Format {
        name: "hl-smi",
        produced_by: "hl-smi (default table)",
        parse: super::gaudi::parse_format_table,
    },
    Format {
        name: "hl-smi-csv",
        produced_by: "hl-smi -Q index,module_id,bus_id,name,memory.total,memory.used,memory.free,driver_version,serial,uuid -f csv",
        parse: super::gaudi::parse_format_csv,
    },
    Format {
        name: "neuron-ls",
        produced_by: "neuron-ls (table; --topology/--wide/--show-all-procs too)",
        parse: super::neuron::parse_format_table,
    },
    Format {
        name: "neuron-ls-json",
        produced_by: "neuron-ls --json-output",
        parse: super::neuron::parse_format_json,
    },
    Format {
        name: "neuron-monitor",
        produced_by: "neuron-monitor (one JSON report; the first line of its stream)",
        parse: super::neuron::monitor::parse_format,
    },
    Format {
        name: "tpu-info",
        produced_by: "tpu-info (plain, --metric or --process views)",
        parse: super::tpu::parse_format,
    },
    Format {
        name: "npu-smi",
        produced_by: "npu-smi info (the default table)",
        parse: super::ascend::parse_format,
    },
    Format {
        name: "qaic-util",
        produced_by: "qaic-util -q (Qualcomm Cloud AI Platform SDK query)",
        parse: super::qaic::parse_format,
    },
    Format {
        name: "system-profiler-json",
        produced_by: "system_profiler SPDisplaysDataType -json (macOS)",
        parse: super::apple::parse_format,
    },
    Format {
        name: "xbutil-examine",
        produced_by: "xbutil examine (or xbmgmt examine): the host report with \"Devices present\"",
        parse: super::fpga::parse_format,
    },
    Format {
        name: "fpgainfo-fme",
        produced_by: "fpgainfo fme (OPAE): one block per FPGA Management Engine of an Intel FPGA card",
        parse: super::fpga::opae::parse_format,
    },
];

impl Format {
    /// Parse `bytes` as this format: the parser, then the shared
    /// device cap. (A leading byte-order mark is dropped by every parser.)
    pub fn run(&self, bytes: &[u8]) -> ParseOutput {
        let mut out = (self.parse)(bytes);
        out.cap_devices(self.name);
        cap_warnings(&mut out.warnings, self.name);
        out
    }
}

/// The format named `name`.
pub fn format(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}
