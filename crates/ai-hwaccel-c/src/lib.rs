//! The C ABI of ai-hwaccel: JSON in, JSON out.
//!
//! Every function takes a request (a JSON object whose keys are the CLI's
//! long options with `_` for `-`; `NULL` or `""` means `{}`) and on success
//! stores in `*out` the JSON text the CLI prints with `--json` for the same
//! options (free it with [`ai_hwaccel_free`]). On failure `*out` is `NULL`,
//! the return value says what kind of failure it was, and
//! [`ai_hwaccel_last_error`] gives the message on the calling thread.
//!
//! Every function may be called from several threads at once: no global
//! state is shared; the last error is per thread. A panic never crosses the
//! boundary (it becomes [`AiHwaccelStatus::Internal`]).
//!
//! The header `include/ai_hwaccel.h` is generated from this file by
//! cbindgen (`tests/header.rs` fails when it is stale; `AI_HWACCEL_BLESS=1`
//! rewrites it).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use ai_hwaccel_json::ErrorKind;

/// What a call returned.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AiHwaccelStatus {
    /// Success: `*out` holds the result.
    Ok = 0,
    /// A runtime failure (the CLI's exit 1): a model that cannot be loaded,
    /// options that do not fit the model or the devices, a malformed file.
    Failed = 1,
    /// An invalid request (the CLI's exit 2): not a JSON object, an unknown
    /// option, a value of the wrong type or out of bounds, an unknown name;
    /// or a NULL `out`, or text that is not UTF-8.
    InvalidArgument = 2,
    /// A file or directory the request names does not exist.
    NotFound = 3,
    /// A bug: the library panicked. The message says where.
    Internal = 4,
}

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_error(message: &str) {
    // Interior NULs cannot occur in our messages; replace them if they do.
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

fn clear_error() {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
}

/// # Safety
/// `p` is NULL or a NUL-terminated string valid for reads.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, (AiHwaccelStatus, String)> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|e| {
        (
            AiHwaccelStatus::InvalidArgument,
            format!("{what} is not UTF-8: {e}"),
        )
    })
}

/// # Safety
/// As [`ai_hwaccel_call`].
unsafe fn call(
    command: *const c_char,
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    clear_error();
    if out.is_null() {
        set_error("out is NULL");
        return AiHwaccelStatus::InvalidArgument;
    }
    // SAFETY: checked non-NULL; the caller promises it is writable.
    unsafe { *out = std::ptr::null_mut() };
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's promise, forwarded.
        let command = unsafe { text(command, "command") }?;
        // SAFETY: as above.
        let request = unsafe { text(request, "request") }?;
        ai_hwaccel_json::call(command, request).map_err(|e| {
            let status = match e.kind {
                ErrorKind::Failed => AiHwaccelStatus::Failed,
                ErrorKind::InvalidArgument => AiHwaccelStatus::InvalidArgument,
                ErrorKind::NotFound => AiHwaccelStatus::NotFound,
            };
            (status, e.message)
        })
    }));
    match result {
        Ok(Ok(json)) => match CString::new(json) {
            Ok(c) => {
                // SAFETY: checked non-NULL above.
                unsafe { *out = c.into_raw() };
                AiHwaccelStatus::Ok
            }
            Err(_) => {
                set_error("the result held a NUL byte");
                AiHwaccelStatus::Internal
            }
        },
        Ok(Err((status, message))) => {
            set_error(&message);
            status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(&format!("internal error (a bug, please report): {what}"));
            AiHwaccelStatus::Internal
        }
    }
}

/// Run any command by name: `detect`, `topology`, `specs`, `model`,
/// `models`, `plan`, `fit` or `train`.
///
/// # Safety
/// `command` and `request` are NULL or NUL-terminated strings; `out` points
/// to writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_call(
    command: *const c_char,
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    // SAFETY: the caller's promise, forwarded.
    unsafe { call(command, request, out) }
}

/// Detect devices (`detect --json`): keys `root`, `no_exec`, `timeout`,
/// `tool_path`, `backends`, `full`, `from`, `cached`, `family`.
///
/// # Safety
/// As [`ai_hwaccel_call`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_detect(
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    // SAFETY: a static NUL-terminated name; the rest is the caller's promise.
    unsafe { call(c"detect".as_ptr(), request, out) }
}

/// Plan inference (`plan MODEL --json`; with `emit`, the launch object):
/// keys `model` (required), `devices`, `registry`, `quant`, `kv_dtype`,
/// `context`, `batch`, `prefill_chunk`, `memory_utilization`,
/// `decode_efficiency`, `prefill_efficiency`, `kv_read_efficiency`,
/// `max_num_seqs`, `max_num_batched_tokens` (vLLM's scheduler limits),
/// `mem_fraction_static` (SGLang's memory fraction),
/// `runtime_build`, `cuda_force_mmq`, `imatrix` (GGUF levels made with an importance matrix), `mixed_prefill` (SGLang `--enable-mixed-chunk`), `enforce_eager` (no CUDA graphs), `ubatch` (llama.cpp `-ub`), `backend` (llama.cpp's ggml backend), `max_plans`,
/// `objective`,
/// `runtime`, `measure`, `emit`, `plan`, `offload`, `cloud`, `provider`,
/// `price_file` (with `cloud`, the instances the model fits ranked by price).
///
/// # Safety
/// As [`ai_hwaccel_call`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_plan(
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    // SAFETY: as in ai_hwaccel_detect.
    unsafe { call(c"plan".as_ptr(), request, out) }
}

/// Plan training (`train MODEL --json`): keys `model` (required) and the
/// CLI's `train` options (`devices`, `method`, `zero`, `tp`, `seq`, …).
///
/// # Safety
/// As [`ai_hwaccel_call`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_train(
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    // SAFETY: as in ai_hwaccel_detect.
    unsafe { call(c"train".as_ptr(), request, out) }
}

/// Datasheet entries (`specs [QUERY] --json`): keys `query`, `cpu` (the
/// CPU table, `specs --cpu`).
///
/// # Safety
/// As [`ai_hwaccel_call`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_specs(
    request: *const c_char,
    out: *mut *mut c_char,
) -> AiHwaccelStatus {
    // SAFETY: as in ai_hwaccel_detect.
    unsafe { call(c"specs".as_ptr(), request, out) }
}

/// The message of the last failed call on this thread, or NULL when the
/// last call succeeded. Valid until the next call on this thread; do not
/// free it.
#[unsafe(no_mangle)]
pub extern "C" fn ai_hwaccel_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

/// Free a string a call stored in `*out`. NULL is ignored.
///
/// # Safety
/// `s` is NULL or a pointer a call of this library stored in `*out`, not
/// freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ai_hwaccel_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: it came from CString::into_raw in `call`, freed once.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// The library version (`"0.1.0"`), a static string.
#[unsafe(no_mangle)]
pub extern "C" fn ai_hwaccel_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"unknown",
        };
    VERSION.as_ptr()
}
