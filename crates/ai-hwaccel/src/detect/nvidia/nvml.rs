//! NVML (`libnvidia-ml.so.1`) loaded at run time with `libloading`: no
//! link-time dependency, so the binary starts on hosts without the NVIDIA
//! driver. A missing library fails [`query`]; a missing symbol fails only
//! the call that needs it (that fact stays unknown).
//!
//! All `unsafe` of the backend lives here. Function signatures and struct
//! layouts follow the NVML API reference (`nvml.h`, NVIDIA).

use std::ffi::{CStr, c_char, c_int, c_uint, c_ulonglong, c_void};

use libloading::Library;

use crate::model::PciAddress;

/// Library names tried in order: the loader's search, then the copy the
/// Windows driver maps into WSL 2 (`/usr/lib/wsl/lib`, not always in the
/// loader's path; NVIDIA "CUDA on WSL User Guide").
pub(crate) const DEFAULT_LIBRARIES: &[&str] = &[
    "libnvidia-ml.so.1",
    "libnvidia-ml.so",
    "/usr/lib/wsl/lib/libnvidia-ml.so.1",
];

/// `nvmlReturn_t`.
type Ret = c_int;
/// `nvmlDevice_t`: an opaque handle.
type Handle = *mut c_void;

const NVML_SUCCESS: Ret = 0;
/// `NVML_TEMPERATURE_GPU`.
const TEMPERATURE_GPU: c_uint = 0;
/// `NVML_MEMORY_ERROR_TYPE_UNCORRECTED`.
const MEMORY_ERROR_UNCORRECTED: c_uint = 1;
/// `NVML_VOLATILE_ECC`.
const VOLATILE_ECC: c_uint = 0;
/// `NVML_NVLINK_MAX_LINKS` of current headers.
const NVLINK_MAX_LINKS: c_uint = 18;
/// `NVML_NVLINK_DEVICE_TYPE_SWITCH`.
const NVLINK_DEVICE_TYPE_SWITCH: c_uint = 2;
/// Buffer sizes from nvml.h (v2 name/UUID sizes cover the older ones).
const NAME_BUFFER: usize = 96;
const UUID_BUFFER: usize = 96;
const SERIAL_BUFFER: usize = 30;
const VBIOS_BUFFER: usize = 32;
const DRIVER_VERSION_BUFFER: usize = 80;

/// `nvmlMemory_t` (v1), bytes.
#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_v2_t` (`nvmlDeviceGetMemoryInfo_v2`, r510 and later), bytes:
/// `reserved` is what the driver and firmware keep (nvidia-smi's "FB Memory
/// Usage / Reserved"), and `used` no longer counts it as v1's does.
#[repr(C)]
#[derive(Default)]
struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_v2`: `NVML_STRUCT_VERSION(Memory, 2)`, the struct's size
/// with the version in the top byte (nvml.h).
const MEMORY_V2: c_uint = std::mem::size_of::<MemoryV2>() as c_uint | (2 << 24);

/// `nvmlPciInfo_t` as filled by `nvmlDeviceGetPciInfo_v3` and
/// `nvmlDeviceGetNvLinkRemotePciInfo_v2`.
#[repr(C)]
#[derive(Default)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

impl PciInfo {
    fn address(&self) -> Option<PciAddress> {
        c_buf(&self.bus_id)
            .or_else(|| c_buf(&self.bus_id_legacy))?
            .parse()
            .ok()
    }
}

/// `nvmlDeviceAttributes_t` (MIG device attributes).
#[repr(C)]
#[derive(Default)]
struct Attributes {
    multiprocessor_count: c_uint,
    shared_copy_engine_count: c_uint,
    shared_decoder_count: c_uint,
    shared_encoder_count: c_uint,
    shared_jpeg_count: c_uint,
    shared_ofa_count: c_uint,
    gpu_instance_slice_count: c_uint,
    compute_instance_slice_count: c_uint,
    memory_size_mb: c_ulonglong,
}

/// `nvmlUtilization_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// `nvmlClockType_t` (nvml.h).
const CLOCK_GRAPHICS: c_uint = 0;
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;
/// `NVML_MEMORY_ERROR_TYPE_CORRECTED`.
const MEMORY_ERROR_CORRECTED: c_uint = 0;

/// Names of the bits of `nvmlClocksEventReasons` (nvml.h
/// `nvmlClocksEventReason*`, formerly `nvmlClocksThrottleReason*`), in
/// the spelling of nvidia-smi's "Clocks Event Reasons" section.
pub(crate) const CLOCK_EVENT_REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the bits set in a clock event reason mask; unknown bits
/// are named by their value (`bit_0x400`).
pub(crate) fn clock_event_reason_names(mask: u64) -> Vec<String> {
    let mut out: Vec<String> = CLOCK_EVENT_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known: u64 = CLOCK_EVENT_REASONS.iter().map(|(b, _)| b).sum();
    let mut rest = mask & !known;
    while rest != 0 {
        let bit = rest & rest.wrapping_neg();
        out.push(format!("bit_{bit:#x}"));
        rest &= !bit;
    }
    out
}

/// Why NVML could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NvmlError {
    /// No library of the list could be loaded.
    #[error("cannot load {tried}: {message}")]
    Load {
        /// The names tried.
        tried: String,
        /// The loader's last message.
        message: String,
    },
    /// A required function is missing from the library.
    #[error("{library}: no symbol {symbol}")]
    Symbol {
        /// The library loaded.
        library: String,
        /// The function looked up.
        symbol: &'static str,
    },
    /// An NVML call returned an error code.
    #[error("{call} returned NVML error {code}")]
    Call {
        /// The function.
        call: &'static str,
        /// The `nvmlReturn_t`.
        code: i32,
    },
}

/// One MIG device as NVML reports it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct MigInfo {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub memory_total: Option<u64>,
    pub memory_free: Option<u64>,
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    pub multiprocessor_count: Option<u32>,
}

/// One active NVLink.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct NvLink {
    #[serde(with = "pci_text")]
    pub remote: Option<PciAddress>,
    pub remote_is_switch: bool,
}

/// One GPU as NVML reports it. Every field is `None` when the call failed
/// or the symbol is missing.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct GpuInfo {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub serial: Option<String>,
    #[serde(with = "pci_text")]
    pub pci_address: Option<PciAddress>,
    pub pci_device_id: Option<u32>,
    pub pci_subsystem_id: Option<u32>,
    pub memory_total: Option<u64>,
    pub memory_free: Option<u64>,
    pub memory_used: Option<u64>,
    /// Memory the driver reserves (`nvmlMemory_v2_t.reserved`); `None`
    /// where only the v1 call answers.
    pub memory_reserved: Option<u64>,
    pub compute_capability: Option<(i32, i32)>,
    pub vbios: Option<String>,
    pub architecture: Option<String>,
    pub minor_number: Option<u32>,
    pub pcie_gen_current: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_current: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub power_limit_mw: Option<u32>,
    pub temperature: Option<u32>,
    pub ecc_enabled: Option<bool>,
    pub ecc_uncorrected_volatile: Option<u64>,
    pub persistence_mode: Option<bool>,
    pub compute_mode: Option<String>,
    pub mig_mode: Option<bool>,
    pub migs: Vec<MigInfo>,
    pub nvlinks: Vec<NvLink>,
    /// Dynamic values, read for telemetry (`crate::telemetry`).
    pub dynamic: Dynamic,
}

/// The values NVML reports that change while a GPU runs. `None`: the call
/// failed or the symbol is missing (NVML returns NOT_SUPPORTED for, e.g.,
/// power on some boards and ECC on parts without it).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Dynamic {
    /// `nvmlDeviceGetUtilizationRates`: percent of the last sample period
    /// a kernel ran / device memory was read or written.
    pub utilization_gpu_percent: Option<u32>,
    pub utilization_memory_percent: Option<u32>,
    /// `nvmlDeviceGetPowerUsage`, milliwatts.
    pub power_usage_mw: Option<u32>,
    /// `nvmlDeviceGetTotalEnergyConsumption`, millijoules since the driver loaded.
    pub energy_mj: Option<u64>,
    /// `nvmlDeviceGetClockInfo` for NVML_CLOCK_GRAPHICS, _SM, _MEM, MHz.
    pub clock_graphics_mhz: Option<u32>,
    pub clock_sm_mhz: Option<u32>,
    pub clock_memory_mhz: Option<u32>,
    /// `nvmlDeviceGetTotalEccErrors(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC)`.
    pub ecc_corrected_volatile: Option<u64>,
    /// `nvmlDeviceGetCurrentClocksEventReasons` (driver 535+), else
    /// `nvmlDeviceGetCurrentClocksThrottleReasons`: a bit mask.
    pub clock_event_reasons: Option<u64>,
}

/// What one NVML session answered.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct Snapshot {
    pub driver_version: Option<String>,
    pub cuda_driver_version: Option<String>,
    pub gpus: Vec<GpuInfo>,
}

/// Most GPUs, MIG devices per GPU and active links per GPU a recorded NVML
/// answer is read with (`Snapshot::bounded`): a hostile snapshot cannot
/// make detection build more.
const MAX_RECORDED_GPUS: usize = 256;
const MAX_RECORDED_MIGS: usize = 64;

impl Snapshot {
    /// The answer as a snapshot records it (`Probe::record_native`).
    pub(crate) fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A recorded answer read back, cut to what NVML could report (its
    /// GPUs, MIG devices and links bounded); `Err` names what is wrong.
    pub(crate) fn from_recorded(bytes: &[u8]) -> Result<Snapshot, String> {
        let de = &mut serde_json::Deserializer::from_slice(bytes);
        let mut s: Snapshot = serde_path_to_error::deserialize(de)
            .map_err(|e| format!("field {}: {}", e.path(), e.inner()))?;
        s.gpus.truncate(MAX_RECORDED_GPUS);
        for g in &mut s.gpus {
            g.migs.truncate(MAX_RECORDED_MIGS);
            g.nvlinks.truncate(NVLINK_MAX_LINKS as usize);
        }
        Ok(s)
    }
}

/// `Option<PciAddress>` as its text (`0000:3b:00.0`) in a recorded answer.
mod pci_text {
    use crate::model::PciAddress;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        a: &Option<PciAddress>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match a {
            Some(a) => s.serialize_some(&a.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PciAddress>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| t.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Text of a NUL-terminated C buffer; `None` when empty.
fn c_buf(buf: &[c_char]) -> Option<String> {
    // c_char is i8 or u8 by platform; reinterpret the bytes.
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    let s = CStr::from_bytes_until_nul(&bytes)
        .ok()?
        .to_str()
        .ok()?
        .trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The loaded library.
struct Nvml {
    lib: Library,
    name: String,
}

/// Look up `name` (NUL-terminated) as a value of function-pointer type `F`.
///
/// # Safety
/// `F` must be the exact C signature of the NVML function `name`.
unsafe fn sym<F: Copy>(lib: &Library, name: &[u8]) -> Option<F> {
    // SAFETY: the caller guarantees `F` matches the symbol's C signature;
    // the returned pointer is only used while `lib` is alive (it is owned
    // by `Nvml`, which outlives every call made through it).
    unsafe { lib.get::<F>(name).ok().map(|s| *s) }
}

macro_rules! nvml_fn {
    (fn($($arg:ty),*)) => {
        unsafe extern "C" fn($($arg),*) -> Ret
    };
}

impl Nvml {
    fn load(paths: &[&str]) -> Result<Nvml, NvmlError> {
        let mut last = String::from("no library name given");
        for p in paths {
            // SAFETY: loading runs the library's initialisers. NVML's are
            // safe to run in any process; for other names (tests) it is a
            // system library such as libc that is already loaded.
            match unsafe { Library::new(p) } {
                Ok(lib) => {
                    return Ok(Nvml {
                        lib,
                        name: (*p).to_string(),
                    });
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(NvmlError::Load {
            tried: paths.join(", "),
            message: last,
        })
    }

    fn missing(&self, symbol: &'static str) -> NvmlError {
        NvmlError::Symbol {
            library: self.name.clone(),
            symbol,
        }
    }

    /// Initialise NVML (`nvmlInit_v2`, else the original `nvmlInit`).
    fn init(&self) -> Result<(), NvmlError> {
        // SAFETY: nvmlInit_v2 / nvmlInit take no arguments and return nvmlReturn_t.
        let f: nvml_fn!(fn()) = unsafe { sym(&self.lib, b"nvmlInit_v2\0") }
            .or_else(|| unsafe { sym(&self.lib, b"nvmlInit\0") })
            .ok_or_else(|| self.missing("nvmlInit_v2"))?;
        // SAFETY: a plain call with no arguments; NVML is thread-safe and reference counted.
        let r = unsafe { f() };
        check("nvmlInit_v2", r)
    }

    fn shutdown(&self) {
        // SAFETY: nvmlShutdown takes no arguments and returns nvmlReturn_t;
        // it balances the successful init above.
        if let Some(f) = unsafe { sym::<nvml_fn!(fn())>(&self.lib, b"nvmlShutdown\0") } {
            // SAFETY: see above.
            let _ = unsafe { f() };
        }
    }

    /// Call `name(arg.., &mut out)` for a getter with one output value.
    fn get_u32(&self, name: &[u8], dev: Handle) -> Option<u32> {
        // SAFETY: every getter called through here has the signature
        // nvmlReturn_t f(nvmlDevice_t, unsigned int*).
        let f: nvml_fn!(fn(Handle, *mut c_uint)) = unsafe { sym(&self.lib, name)? };
        let mut v: c_uint = 0;
        // SAFETY: `dev` is a handle NVML gave us; `v` is a valid out pointer.
        ok(unsafe { f(dev, &mut v) }).then_some(v)
    }

    /// A string getter `f(nvmlDevice_t, char*, unsigned int length)`.
    fn get_string(&self, name: &[u8], dev: Handle, len: usize) -> Option<String> {
        // SAFETY: the string getters have the signature
        // nvmlReturn_t f(nvmlDevice_t, char*, unsigned int).
        let f: nvml_fn!(fn(Handle, *mut c_char, c_uint)) = unsafe { sym(&self.lib, name)? };
        let mut buf = vec![0 as c_char; len];
        // SAFETY: `buf` holds `len` bytes and NVML writes at most `len` (NUL included).
        let r = unsafe { f(dev, buf.as_mut_ptr(), len as c_uint) };
        if ok(r) { c_buf(&buf) } else { None }
    }

    fn system_string(&self, name: &[u8], len: usize) -> Option<String> {
        // SAFETY: nvmlSystemGetDriverVersion(char*, unsigned int).
        let f: nvml_fn!(fn(*mut c_char, c_uint)) = unsafe { sym(&self.lib, name)? };
        let mut buf = vec![0 as c_char; len];
        // SAFETY: `buf` holds `len` bytes.
        let r = unsafe { f(buf.as_mut_ptr(), len as c_uint) };
        if ok(r) { c_buf(&buf) } else { None }
    }

    fn cuda_driver_version(&self) -> Option<String> {
        // SAFETY: nvmlSystemGetCudaDriverVersion_v2(int*).
        let f: nvml_fn!(fn(*mut c_int)) = unsafe {
            sym(&self.lib, b"nvmlSystemGetCudaDriverVersion_v2\0")
                .or_else(|| sym(&self.lib, b"nvmlSystemGetCudaDriverVersion\0"))?
        };
        let mut v: c_int = 0;
        // SAFETY: valid out pointer.
        if !ok(unsafe { f(&mut v) }) || v <= 0 {
            return None;
        }
        // Encoded as 1000 * major + 10 * minor (nvml.h, NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR).
        Some(format!("{}.{}", v / 1000, (v % 1000) / 10))
    }

    fn device_count(&self) -> Result<u32, NvmlError> {
        // SAFETY: nvmlDeviceGetCount_v2(unsigned int*).
        let f: nvml_fn!(fn(*mut c_uint)) = unsafe {
            sym(&self.lib, b"nvmlDeviceGetCount_v2\0")
                .or_else(|| sym(&self.lib, b"nvmlDeviceGetCount\0"))
        }
        .ok_or_else(|| self.missing("nvmlDeviceGetCount_v2"))?;
        let mut n: c_uint = 0;
        // SAFETY: valid out pointer.
        check("nvmlDeviceGetCount_v2", unsafe { f(&mut n) })?;
        Ok(n)
    }

    fn handle(&self, index: u32) -> Result<Handle, NvmlError> {
        // SAFETY: nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*).
        let f: nvml_fn!(fn(c_uint, *mut Handle)) = unsafe {
            sym(&self.lib, b"nvmlDeviceGetHandleByIndex_v2\0")
                .or_else(|| sym(&self.lib, b"nvmlDeviceGetHandleByIndex\0"))
        }
        .ok_or_else(|| self.missing("nvmlDeviceGetHandleByIndex_v2"))?;
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        check("nvmlDeviceGetHandleByIndex_v2", unsafe { f(index, &mut h) })?;
        Ok(h)
    }

    fn memory(&self, dev: Handle) -> Option<Memory> {
        // SAFETY: nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*), v1 struct.
        let f: nvml_fn!(fn(Handle, *mut Memory)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetMemoryInfo\0")? };
        let mut m = Memory::default();
        // SAFETY: `m` is a valid nvmlMemory_t.
        ok(unsafe { f(dev, &mut m) }).then_some(m)
    }

    /// `nvmlDeviceGetMemoryInfo_v2`: `None` where the library lacks it
    /// (before r510) or refuses the version.
    fn memory_v2(&self, dev: Handle) -> Option<MemoryV2> {
        // SAFETY: nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t*).
        let f: nvml_fn!(fn(Handle, *mut MemoryV2)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetMemoryInfo_v2\0")? };
        let mut m = MemoryV2 {
            version: MEMORY_V2,
            ..MemoryV2::default()
        };
        // SAFETY: `m` is a valid nvmlMemory_v2_t with its version set.
        ok(unsafe { f(dev, &mut m) }).then_some(m)
    }

    fn pci(&self, dev: Handle) -> Option<PciInfo> {
        // SAFETY: nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t*).
        let f: nvml_fn!(fn(Handle, *mut PciInfo)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetPciInfo_v3\0")? };
        let mut p = PciInfo::default();
        // SAFETY: `p` is a valid nvmlPciInfo_t.
        ok(unsafe { f(dev, &mut p) }).then_some(p)
    }

    fn compute_capability(&self, dev: Handle) -> Option<(i32, i32)> {
        // SAFETY: nvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int*, int*).
        let f: nvml_fn!(fn(Handle, *mut c_int, *mut c_int)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetCudaComputeCapability\0")? };
        let (mut a, mut b) = (0, 0);
        // SAFETY: valid out pointers.
        ok(unsafe { f(dev, &mut a, &mut b) }).then_some((a, b))
    }

    /// A getter with two `unsigned int` outputs (ECC mode, MIG mode: current, pending).
    fn get_pair(&self, name: &[u8], dev: Handle) -> Option<(u32, u32)> {
        // SAFETY: nvmlDeviceGetEccMode / nvmlDeviceGetMigMode take
        // (nvmlDevice_t, unsigned int* current, unsigned int* pending)
        // (nvmlEnableState_t is an int-sized enum).
        let f: nvml_fn!(fn(Handle, *mut c_uint, *mut c_uint)) = unsafe { sym(&self.lib, name)? };
        let (mut a, mut b) = (0, 0);
        // SAFETY: valid out pointers.
        ok(unsafe { f(dev, &mut a, &mut b) }).then_some((a, b))
    }

    fn temperature(&self, dev: Handle) -> Option<u32> {
        // SAFETY: nvmlDeviceGetTemperature(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*).
        let f: nvml_fn!(fn(Handle, c_uint, *mut c_uint)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetTemperature\0")? };
        let mut t = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, TEMPERATURE_GPU, &mut t) }).then_some(t)
    }

    fn ecc_uncorrected(&self, dev: Handle) -> Option<u64> {
        // SAFETY: nvmlDeviceGetTotalEccErrors(nvmlDevice_t, nvmlMemoryErrorType_t,
        // nvmlEccCounterType_t, unsigned long long*).
        let f: nvml_fn!(fn(Handle, c_uint, c_uint, *mut c_ulonglong)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetTotalEccErrors\0")? };
        let mut n: c_ulonglong = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC, &mut n) }).then_some(n)
    }

    fn ecc_corrected(&self, dev: Handle) -> Option<u64> {
        // SAFETY: as in `ecc_uncorrected`.
        let f: nvml_fn!(fn(Handle, c_uint, c_uint, *mut c_ulonglong)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetTotalEccErrors\0")? };
        let mut n: c_ulonglong = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, MEMORY_ERROR_CORRECTED, VOLATILE_ECC, &mut n) }).then_some(n)
    }

    fn get_u64(&self, names: &[&[u8]], dev: Handle) -> Option<u64> {
        names.iter().find_map(|name| {
            // SAFETY: every getter called through here has the signature
            // nvmlReturn_t f(nvmlDevice_t, unsigned long long*).
            let f: nvml_fn!(fn(Handle, *mut c_ulonglong)) = unsafe { sym(&self.lib, name)? };
            let mut v: c_ulonglong = 0;
            // SAFETY: valid out pointer.
            ok(unsafe { f(dev, &mut v) }).then_some(v)
        })
    }

    fn clock(&self, dev: Handle, kind: c_uint) -> Option<u32> {
        // SAFETY: nvmlDeviceGetClockInfo(nvmlDevice_t, nvmlClockType_t, unsigned int*).
        let f: nvml_fn!(fn(Handle, c_uint, *mut c_uint)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetClockInfo\0")? };
        let mut v = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, kind, &mut v) }).then_some(v)
    }

    fn utilization(&self, dev: Handle) -> Option<Utilization> {
        // SAFETY: nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t*).
        let f: nvml_fn!(fn(Handle, *mut Utilization)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetUtilizationRates\0")? };
        let mut u = Utilization::default();
        // SAFETY: valid out pointer to a struct of nvml.h's layout.
        ok(unsafe { f(dev, &mut u) }).then_some(u)
    }

    fn dynamic(&self, dev: Handle, ecc_enabled: Option<bool>) -> Dynamic {
        let u = self.utilization(dev);
        Dynamic {
            utilization_gpu_percent: u.map(|u| u.gpu).filter(|p| *p <= 100),
            utilization_memory_percent: u.map(|u| u.memory).filter(|p| *p <= 100),
            power_usage_mw: self.get_u32(b"nvmlDeviceGetPowerUsage\0", dev),
            energy_mj: self.get_u64(&[b"nvmlDeviceGetTotalEnergyConsumption\0"], dev),
            clock_graphics_mhz: self.clock(dev, CLOCK_GRAPHICS),
            clock_sm_mhz: self.clock(dev, CLOCK_SM),
            clock_memory_mhz: self.clock(dev, CLOCK_MEM),
            ecc_corrected_volatile: if ecc_enabled == Some(true) {
                self.ecc_corrected(dev)
            } else {
                None
            },
            clock_event_reasons: self.get_u64(
                &[
                    b"nvmlDeviceGetCurrentClocksEventReasons\0",
                    b"nvmlDeviceGetCurrentClocksThrottleReasons\0",
                ],
                dev,
            ),
        }
    }

    fn mig_handle(&self, dev: Handle, index: u32) -> Option<Handle> {
        // SAFETY: nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t, unsigned int, nvmlDevice_t*).
        let f: nvml_fn!(fn(Handle, c_uint, *mut Handle)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetMigDeviceHandleByIndex\0")? };
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        (ok(unsafe { f(dev, index, &mut h) }) && !h.is_null()).then_some(h)
    }

    fn attributes(&self, dev: Handle) -> Option<Attributes> {
        // SAFETY: nvmlDeviceGetAttributes_v2(nvmlDevice_t, nvmlDeviceAttributes_t*).
        let f: nvml_fn!(fn(Handle, *mut Attributes)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetAttributes_v2\0")? };
        let mut a = Attributes::default();
        // SAFETY: `a` is a valid nvmlDeviceAttributes_t.
        ok(unsafe { f(dev, &mut a) }).then_some(a)
    }

    fn nvlink_state(&self, dev: Handle, link: u32) -> Option<bool> {
        // SAFETY: nvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned int, nvmlEnableState_t*).
        let f: nvml_fn!(fn(Handle, c_uint, *mut c_uint)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetNvLinkState\0")? };
        let mut s = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, link, &mut s) }).then_some(s == 1)
    }

    fn nvlink_remote(&self, dev: Handle, link: u32) -> Option<PciInfo> {
        // SAFETY: nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t, unsigned int, nvmlPciInfo_t*).
        let f: nvml_fn!(fn(Handle, c_uint, *mut PciInfo)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetNvLinkRemotePciInfo_v2\0")? };
        let mut p = PciInfo::default();
        // SAFETY: `p` is a valid nvmlPciInfo_t.
        ok(unsafe { f(dev, link, &mut p) }).then_some(p)
    }

    fn nvlink_remote_type(&self, dev: Handle, link: u32) -> Option<u32> {
        // SAFETY: nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t, unsigned int,
        // nvmlIntNvLinkDeviceType_t*), an int-sized enum.
        let f: nvml_fn!(fn(Handle, c_uint, *mut c_uint)) =
            unsafe { sym(&self.lib, b"nvmlDeviceGetNvLinkRemoteDeviceType\0")? };
        let mut t = 0;
        // SAFETY: valid out pointer.
        ok(unsafe { f(dev, link, &mut t) }).then_some(t)
    }

    fn gpu(&self, dev: Handle) -> GpuInfo {
        let mut g = GpuInfo {
            index: self.get_u32(b"nvmlDeviceGetIndex\0", dev),
            name: self.get_string(b"nvmlDeviceGetName\0", dev, NAME_BUFFER),
            uuid: self.get_string(b"nvmlDeviceGetUUID\0", dev, UUID_BUFFER),
            serial: self.get_string(b"nvmlDeviceGetSerial\0", dev, SERIAL_BUFFER),
            vbios: self.get_string(b"nvmlDeviceGetVbiosVersion\0", dev, VBIOS_BUFFER),
            architecture: self
                .get_u32(b"nvmlDeviceGetArchitecture\0", dev)
                .and_then(architecture_name)
                .map(str::to_string),
            minor_number: self.get_u32(b"nvmlDeviceGetMinorNumber\0", dev),
            compute_capability: self.compute_capability(dev),
            pcie_gen_current: self.get_u32(b"nvmlDeviceGetCurrPcieLinkGeneration\0", dev),
            pcie_gen_max: self.get_u32(b"nvmlDeviceGetMaxPcieLinkGeneration\0", dev),
            pcie_width_current: self.get_u32(b"nvmlDeviceGetCurrPcieLinkWidth\0", dev),
            pcie_width_max: self.get_u32(b"nvmlDeviceGetMaxPcieLinkWidth\0", dev),
            power_limit_mw: self.get_u32(b"nvmlDeviceGetEnforcedPowerLimit\0", dev),
            temperature: self.temperature(dev),
            ecc_enabled: self
                .get_pair(b"nvmlDeviceGetEccMode\0", dev)
                .map(|(c, _)| c == 1),
            persistence_mode: self
                .get_u32(b"nvmlDeviceGetPersistenceMode\0", dev)
                .map(|v| v == 1),
            compute_mode: self
                .get_u32(b"nvmlDeviceGetComputeMode\0", dev)
                .and_then(compute_mode_name)
                .map(str::to_string),
            mig_mode: self
                .get_pair(b"nvmlDeviceGetMigMode\0", dev)
                .map(|(c, _)| c == 1),
            ..Default::default()
        };
        if g.ecc_enabled == Some(true) {
            g.ecc_uncorrected_volatile = self.ecc_uncorrected(dev);
        }
        g.dynamic = self.dynamic(dev, g.ecc_enabled);
        if let Some(p) = self.pci(dev) {
            g.pci_address = p.address();
            g.pci_device_id = Some(p.pci_device_id);
            g.pci_subsystem_id = Some(p.pci_sub_system_id);
        }
        if let Some(m) = self.memory_v2(dev).filter(|m| m.total > 0) {
            g.memory_total = Some(m.total);
            g.memory_free = Some(m.free);
            g.memory_used = Some(m.used);
            g.memory_reserved = Some(m.reserved);
        } else if let Some(m) = self.memory(dev) {
            g.memory_total = Some(m.total);
            g.memory_free = Some(m.free);
            g.memory_used = Some(m.used);
        }
        if g.mig_mode == Some(true) {
            let max = self
                .get_u32(b"nvmlDeviceGetMaxMigDeviceCount\0", dev)
                .unwrap_or(0);
            for i in 0..max.min(64) {
                let Some(h) = self.mig_handle(dev, i) else {
                    continue;
                };
                let mem = self.memory(h);
                g.migs.push(MigInfo {
                    index: Some(i),
                    name: self.get_string(b"nvmlDeviceGetName\0", h, NAME_BUFFER),
                    uuid: self.get_string(b"nvmlDeviceGetUUID\0", h, UUID_BUFFER),
                    memory_total: mem.as_ref().map(|m| m.total),
                    memory_free: mem.as_ref().map(|m| m.free),
                    gpu_instance_id: self.get_u32(b"nvmlDeviceGetGpuInstanceId\0", h),
                    compute_instance_id: self.get_u32(b"nvmlDeviceGetComputeInstanceId\0", h),
                    multiprocessor_count: self.attributes(h).map(|a| a.multiprocessor_count),
                });
            }
        }
        for link in 0..NVLINK_MAX_LINKS {
            match self.nvlink_state(dev, link) {
                Some(true) => g.nvlinks.push(NvLink {
                    remote: self.nvlink_remote(dev, link).and_then(|p| p.address()),
                    remote_is_switch: self.nvlink_remote_type(dev, link)
                        == Some(NVLINK_DEVICE_TYPE_SWITCH),
                }),
                Some(false) => {}
                // Not supported, or past the last link of this GPU.
                None => break,
            }
        }
        g
    }
}

fn ok(r: Ret) -> bool {
    r == NVML_SUCCESS
}

fn check(call: &'static str, r: Ret) -> Result<(), NvmlError> {
    if ok(r) {
        Ok(())
    } else {
        Err(NvmlError::Call { call, code: r })
    }
}

/// `nvmlDeviceArchitecture_t` values (nvml.h `NVML_DEVICE_ARCH_*`).
fn architecture_name(v: u32) -> Option<&'static str> {
    Some(match v {
        2 => "Kepler",
        3 => "Maxwell",
        4 => "Pascal",
        5 => "Volta",
        6 => "Turing",
        7 => "Ampere",
        8 => "Ada Lovelace",
        9 => "Hopper",
        10 => "Blackwell",
        _ => return None,
    })
}

/// `nvmlComputeMode_t` in nvidia-smi's spelling.
fn compute_mode_name(v: u32) -> Option<&'static str> {
    Some(match v {
        0 => "Default",
        1 => "Exclusive_Thread",
        2 => "Prohibited",
        3 => "Exclusive_Process",
        _ => return None,
    })
}

/// Load NVML from the first loadable name in `libraries`, read every GPU,
/// and shut NVML down. Fails when no library loads, a required symbol
/// (init, count, handle) is missing, or initialisation fails.
pub(crate) fn query(libraries: &[&str]) -> Result<Snapshot, NvmlError> {
    let nvml = Nvml::load(libraries)?;
    nvml.init()?;
    let result = (|| {
        let count = nvml.device_count()?;
        let mut s = Snapshot {
            driver_version: nvml
                .system_string(b"nvmlSystemGetDriverVersion\0", DRIVER_VERSION_BUFFER),
            cuda_driver_version: nvml.cuda_driver_version(),
            gpus: Vec::new(),
        };
        for i in 0..count.min(1024) {
            match nvml.handle(i) {
                Ok(h) => {
                    let mut g = nvml.gpu(h);
                    g.index = g.index.or(Some(i));
                    s.gpus.push(g);
                }
                Err(e) => tracing::debug!(index = i, error = %e, "NVML: no handle"),
            }
        }
        Ok(s)
    })();
    nvml.shutdown();
    result
}

/// `nvmlEventType*` bits (nvml.h).
const EVENT_SINGLE_BIT_ECC: c_ulonglong = 0x1;
const EVENT_DOUBLE_BIT_ECC: c_ulonglong = 0x2;
const EVENT_XID: c_ulonglong = 0x8;
/// `NVML_ERROR_TIMEOUT`: the wait found no event.
const NVML_ERROR_TIMEOUT: Ret = 10;
/// `NVML_ERROR_NOT_SUPPORTED`.
const NVML_ERROR_NOT_SUPPORTED: Ret = 3;
/// `gpuInstanceId`/`computeInstanceId` of an event not attributable to a
/// MIG instance.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

/// `nvmlEventData_t` as `nvmlEventSetWait_v2` fills it; the original
/// `nvmlEventSetWait` fills only the first three fields, so the instance
/// ids start as "none".
#[repr(C)]
struct EventData {
    device: Handle,
    event_type: c_ulonglong,
    event_data: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// One event NVML reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlEvent {
    /// `nvidia_xid`, `nvidia_ecc_double_bit` or `nvidia_ecc_single_bit`.
    pub kind: &'static str,
    /// The GPU's PCI address, when NVML gives it.
    pub pci_address: Option<PciAddress>,
    /// The GPU's UUID, when NVML gives it.
    pub uuid: Option<String>,
    /// The Xid (999: an Xid NVML does not know), for Xid events.
    pub xid: Option<u64>,
    /// The MIG GPU and compute instance an Xid is attributed to.
    pub gpu_instance_id: Option<u32>,
    /// See `gpu_instance_id`.
    pub compute_instance_id: Option<u32>,
}

/// An NVML event set with the GPUs' Xid and ECC events registered, kept
/// open (NVML initialised) while the value lives.
pub struct EventWatcher {
    nvml: Nvml,
    set: Handle,
    /// GPUs registered for Xid events.
    pub xid_gpus: usize,
    /// GPUs NVML enumerates.
    pub gpus: usize,
}

impl EventWatcher {
    /// Load NVML, create an event set and register every GPU's Xid and ECC
    /// events among those it supports. Fails when NVML does not load or
    /// initialise, the event API is missing, or no GPU takes any of them.
    pub fn open(libraries: &[&str]) -> Result<EventWatcher, NvmlError> {
        let nvml = Nvml::load(libraries)?;
        nvml.init()?;
        let mut set: Handle = std::ptr::null_mut();
        // SAFETY: nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set).
        let create: Option<nvml_fn!(fn(*mut Handle))> =
            unsafe { sym(&nvml.lib, b"nvmlEventSetCreate\0") };
        let Some(create) = create else {
            nvml.shutdown();
            return Err(nvml.missing("nvmlEventSetCreate"));
        };
        // SAFETY: `set` is a valid out-pointer.
        if let Err(e) = check("nvmlEventSetCreate", unsafe { create(&mut set) }) {
            nvml.shutdown();
            return Err(e);
        }
        let mut w = EventWatcher {
            nvml,
            set,
            xid_gpus: 0,
            gpus: 0,
        };
        // SAFETY: nvmlDeviceGetSupportedEventTypes(nvmlDevice_t, unsigned long long *).
        let supported: Option<nvml_fn!(fn(Handle, *mut c_ulonglong))> =
            unsafe { sym(&w.nvml.lib, b"nvmlDeviceGetSupportedEventTypes\0") };
        // SAFETY: nvmlDeviceRegisterEvents(nvmlDevice_t, unsigned long long, nvmlEventSet_t).
        let register: Option<nvml_fn!(fn(Handle, c_ulonglong, Handle))> =
            unsafe { sym(&w.nvml.lib, b"nvmlDeviceRegisterEvents\0") };
        let Some(register) = register else {
            return Err(w.nvml.missing("nvmlDeviceRegisterEvents"));
        };
        let wanted = EVENT_XID | EVENT_DOUBLE_BIT_ECC | EVENT_SINGLE_BIT_ECC;
        let count = w.nvml.device_count()?;
        let mut any = false;
        for i in 0..count.min(1024) {
            let Ok(dev) = w.nvml.handle(i) else { continue };
            w.gpus += 1;
            let mut types: c_ulonglong = 0;
            let mask = match supported {
                // SAFETY: a handle from NVML and a valid out-pointer.
                Some(f) if ok(unsafe { f(dev, &mut types) }) => types & wanted,
                // Without the query, ask for Xid events only (every
                // supported GPU has them).
                _ => EVENT_XID,
            };
            // SAFETY: a handle from NVML, a mask it reported, our live set.
            if mask != 0 && ok(unsafe { register(dev, mask, w.set) }) {
                any = true;
                if mask & EVENT_XID != 0 {
                    w.xid_gpus += 1;
                }
            }
        }
        if !any {
            return Err(NvmlError::Call {
                call: "nvmlDeviceRegisterEvents",
                code: NVML_ERROR_NOT_SUPPORTED,
            });
        }
        Ok(w)
    }

    /// The events NVML has queued, without waiting: at most `max` waits,
    /// so a library that never reports "no event" cannot stall the caller.
    pub fn poll(&mut self, max: usize) -> Vec<NvmlEvent> {
        // SAFETY: nvmlEventSetWait_v2 / nvmlEventSetWait(nvmlEventSet_t,
        // nvmlEventData_t *, unsigned int timeoutms).
        let wait: Option<nvml_fn!(fn(Handle, *mut EventData, c_uint))> =
            unsafe { sym(&self.nvml.lib, b"nvmlEventSetWait_v2\0") }
                .or_else(|| unsafe { sym(&self.nvml.lib, b"nvmlEventSetWait\0") });
        let Some(wait) = wait else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for _ in 0..max {
            let mut d = EventData {
                device: std::ptr::null_mut(),
                event_type: 0,
                event_data: 0,
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
            };
            // SAFETY: our live set and a valid, large enough out-struct;
            // timeout 0 returns at once.
            let r = unsafe { wait(self.set, &mut d, 0) };
            if r == NVML_ERROR_TIMEOUT || !ok(r) {
                break;
            }
            let kind = if d.event_type & EVENT_XID != 0 {
                "nvidia_xid"
            } else if d.event_type & EVENT_DOUBLE_BIT_ECC != 0 {
                "nvidia_ecc_double_bit"
            } else if d.event_type & EVENT_SINGLE_BIT_ECC != 0 {
                "nvidia_ecc_single_bit"
            } else {
                continue;
            };
            let (pci_address, uuid) = if d.device.is_null() {
                (None, None)
            } else {
                (
                    self.nvml.pci(d.device).and_then(|p| p.address()),
                    self.nvml
                        .get_string(b"nvmlDeviceGetUUID\0", d.device, UUID_BUFFER),
                )
            };
            let instance = |v: c_uint| (kind == "nvidia_xid" && v != NO_INSTANCE).then_some(v);
            out.push(NvmlEvent {
                kind,
                pci_address,
                uuid,
                xid: (kind == "nvidia_xid").then_some(d.event_data),
                gpu_instance_id: instance(d.gpu_instance_id),
                compute_instance_id: instance(d.compute_instance_id),
            });
        }
        out
    }
}

impl Drop for EventWatcher {
    fn drop(&mut self) {
        // SAFETY: nvmlEventSetFree(nvmlEventSet_t) on the set we created.
        if let Some(f) =
            unsafe { sym::<nvml_fn!(fn(Handle))>(&self.nvml.lib, b"nvmlEventSetFree\0") }
        {
            // SAFETY: see above; the set is not used again.
            let _ = unsafe { f(self.set) };
        }
        self.nvml.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_fails_cleanly() {
        let e = query(&["libnvidia-ml-does-not-exist.so.1"]).unwrap_err();
        assert!(matches!(e, NvmlError::Load { .. }), "{e}");
        assert!(e.to_string().contains("libnvidia-ml-does-not-exist.so.1"));
        assert!(matches!(query(&[]), Err(NvmlError::Load { .. })));
    }

    #[test]
    fn library_without_nvml_symbols_fails_cleanly() {
        let e = query(&["libc.so.6"]).unwrap_err();
        assert!(
            matches!(
                e,
                NvmlError::Symbol {
                    symbol: "nvmlInit_v2",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn struct_layouts_match_nvml_h() {
        assert_eq!(std::mem::size_of::<EventData>(), 8 + 8 + 8 + 4 + 4);
        assert_eq!(std::mem::size_of::<PciInfo>(), 16 + 5 * 4 + 32);
        assert_eq!(std::mem::size_of::<Memory>(), 24);
        assert_eq!(std::mem::size_of::<MemoryV2>(), 40);
        assert_eq!(MEMORY_V2, 0x0200_0028, "nvmlMemory_v2 of nvml.h");
        assert_eq!(std::mem::size_of::<Attributes>(), 8 * 4 + 8);
    }

    #[test]
    fn clock_event_reasons_name_every_bit() {
        assert!(clock_event_reason_names(0).is_empty());
        assert_eq!(clock_event_reason_names(0x1), ["gpu_idle"]);
        assert_eq!(
            clock_event_reason_names(0x4 | 0x40 | 0x400),
            ["sw_power_cap", "hw_thermal_slowdown", "bit_0x400"]
        );
        assert_eq!(std::mem::size_of::<Utilization>(), 8);
    }

    #[test]
    fn c_buffers() {
        let mut b = [0 as c_char; 8];
        for (i, c) in b"0:1.0".iter().enumerate() {
            b[i] = *c as c_char;
        }
        assert_eq!(c_buf(&b).as_deref(), Some("0:1.0"));
        assert_eq!(c_buf(&[0 as c_char; 4]), None);
        assert_eq!(c_buf(&[b'x' as c_char; 4]), None, "no NUL: not trusted");
    }
}
