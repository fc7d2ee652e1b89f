//! The probe boundary: every read of the machine goes through [`Probe`].
//!
//! Three implementations exist: [`LiveProbe`] reads files under a root
//! directory (default `/`) and runs tools with a timeout and an output cap;
//! [`RecordingProbe`] wraps another probe and records everything it returns
//! into a snapshot; [`ReplayProbe`] answers from a snapshot without touching
//! the machine. Nothing else in the library calls `std::fs` or
//! `std::process` (clippy's `disallowed-methods` enforces it).
//!
//! What a probe promises about hostile input (fake roots, snapshots, tools)
//! is written down in `docs/threat-model.md`: reads stay inside the root
//! ([`confine`]), only regular files are read and every read is bounded
//! ([`DEFAULT_READ_LIMIT`], [`ATTRIBUTE_READ_LIMIT`]), and every tool run
//! ends by its deadline.

pub mod cache_file;
pub mod confine;
mod exec;
pub mod files;
pub mod kmsg;
mod live;
mod snapshot;
pub mod uevent;

use std::time::Duration;

pub use live::{LiveProbe, ProbeOptions, VENDOR_TOOL_DIRS};
pub use snapshot::{
    MAX_BLOB_BYTES, MAX_MANIFEST_BYTES, MAX_SNAPSHOT_BYTES, RecordingProbe, ReplayProbe,
    SNAPSHOT_VERSION, SnapshotError, check_snapshot_dir,
};

/// Default time a tool may run before it is killed.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on captured stdout (and, separately, stderr) of one tool run.
pub const DEFAULT_OUTPUT_CAP: usize = 16 * 1024 * 1024;

/// Largest file [`Probe::read`] returns. The largest files detection reads
/// are `/proc/cpuinfo` (about 3 KiB per logical CPU on x86: 3 MiB for 1,024
/// CPUs), `/proc/self/mountinfo` and the `pci.ids` database (1.4 MiB in
/// 2024); a bigger file is refused with [`ProbeError::TooLarge`].
pub const DEFAULT_READ_LIMIT: u64 = 8 * 1024 * 1024;

/// Largest sysfs/procfs attribute read by [`ProbeExt::read_trimmed`]: the
/// kernel serves a text attribute from one page (4 KiB; 64 KiB on arm64
/// kernels with 64 KiB pages).
pub const ATTRIBUTE_READ_LIMIT: u64 = 64 * 1024;

/// What one tool run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// Exit code; `None` when the process was ended by a signal.
    pub status: Option<i32>,
    /// Captured standard output (at most the output cap).
    pub stdout: Vec<u8>,
    /// Captured standard error (at most the output cap).
    pub stderr: Vec<u8>,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
}

impl ToolOutput {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        crate::model::text::decode(&self.stdout).into_owned()
    }

    /// First line of stderr, for warnings.
    pub fn stderr_line(&self) -> String {
        String::from_utf8_lossy(&self.stderr)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .chars()
            .take(200)
            .collect()
    }
}

/// Why a probe call failed. Each variant names the path or tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The file, directory or link does not exist (or the snapshot did not record it).
    #[error("{path}: not found")]
    NotFound {
        /// The path asked for.
        path: String,
    },
    /// The path is not a regular file (a FIFO, socket or device): refused
    /// without reading, so it can neither block nor stream without end.
    #[error("{path}: {what}, not a regular file; not read")]
    NotRegular {
        /// The path asked for.
        path: String,
        /// What it is ("a FIFO", "a character device", …).
        what: String,
    },
    /// The file is larger than the bound for what is read there.
    #[error("{path}: larger than {limit} bytes; not read")]
    TooLarge {
        /// The path asked for.
        path: String,
        /// The bound in bytes.
        limit: u64,
    },
    /// Any other I/O failure reading a path.
    #[error("{path}: {message}")]
    Io {
        /// The path asked for.
        path: String,
        /// The OS error text.
        message: String,
    },
    /// The tool is not on the search path.
    #[error("{tool}: not found on PATH")]
    ToolNotFound {
        /// Tool name.
        tool: String,
    },
    /// Running tools is forbidden (`--no-exec`).
    #[error("{tool}: not run (running tools is disabled)")]
    ExecDisabled {
        /// Tool name.
        tool: String,
    },
    /// The tool ran past the timeout and was killed.
    #[error("{tool}: killed after {timeout_ms} ms timeout")]
    Timeout {
        /// Tool name.
        tool: String,
        /// The timeout in milliseconds.
        timeout_ms: u64,
    },
    /// The tool could not be started.
    #[error("{tool}: cannot run: {message}")]
    Spawn {
        /// Tool name.
        tool: String,
        /// The OS error text.
        message: String,
    },
}

impl ProbeError {
    /// Whether this only says the thing is absent (no file, no tool): callers
    /// normally treat that as "not present" rather than as a warning.
    pub fn is_absent(&self) -> bool {
        matches!(
            self,
            ProbeError::NotFound { .. }
                | ProbeError::ToolNotFound { .. }
                | ProbeError::ExecDisabled { .. }
        )
    }
}

/// Access to one machine (live, a fake root, or a recorded snapshot).
///
/// Paths are absolute as seen on the probed machine (`/proc/meminfo`); the
/// implementation maps them under its root.
pub trait Probe: Send + Sync {
    /// Bytes of a file, at most [`DEFAULT_READ_LIMIT`].
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError>;
    /// Bytes of a file of at most `limit` bytes; a bigger one is
    /// [`ProbeError::TooLarge`]. The default reads through [`Probe::read`]
    /// and checks afterwards; probes that read files override it so that no
    /// more than `limit + 1` bytes are ever read.
    fn read_limited(&self, path: &str, limit: u64) -> Result<Vec<u8>, ProbeError> {
        let b = self.read(path)?;
        if b.len() as u64 > limit {
            return Err(ProbeError::TooLarge {
                path: path.to_string(),
                limit,
            });
        }
        Ok(b)
    }
    /// Entry names of a directory, sorted.
    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError>;
    /// Target of a symbolic link, as stored in the link.
    fn read_link(&self, path: &str) -> Result<String, ProbeError>;
    /// Run `tool` (a bare name looked up on the search path) with `args`,
    /// without a shell, stdin closed, under the timeout and output cap.
    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError>;
    /// Run a tool that streams reports without end (`neuron-monitor`) as
    /// [`Probe::run`] does, but stop it once stdout holds a complete line:
    /// its process group is killed then, so `status` is `None` and stdout
    /// holds that line (and whatever followed it in the same read). A
    /// recorded snapshot answers from its record of the same tool and
    /// arguments; the default is [`Probe::run`].
    fn run_first_line(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        self.run(tool, args)
    }
    /// An environment variable of the probed process.
    fn env(&self, name: &str) -> Option<String>;
    /// Whether detection may load vendor libraries (NVML) into this process.
    /// Only true for the live machine at root `/` with tools allowed: a fake
    /// root or a replayed snapshot must never consult the real hardware.
    fn allows_native_libraries(&self) -> bool {
        false
    }
    /// Keep what a native library (NVML) answered, serialized by `answer`,
    /// under `library`: a recording probe writes it into the snapshot, since
    /// a replay cannot call the library. Other probes ignore it and never
    /// call `answer` (no serialization on a plain detection).
    fn record_native(&self, _library: &str, _answer: &dyn Fn() -> Vec<u8>) {}
    /// What a native library answered when the snapshot was recorded
    /// (`None` on a live machine and in a snapshot without one).
    fn native_answer(&self, _library: &str) -> Option<Vec<u8>> {
        None
    }
    /// Reads this probe refused so far because of what was at the path (not
    /// a regular file, too large, …), one message each naming the path.
    /// Detection adds them to the registry's warnings, since the callers of
    /// a read often treat any failure as "absent".
    fn refusals(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Most refusals a probe keeps (each path once); further ones are counted.
pub const MAX_REFUSALS: usize = 100;

/// A deduplicated, bounded log of refused reads, shared by the probes.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    inner: std::sync::Mutex<(std::collections::BTreeSet<String>, usize)>,
}

impl RefusalLog {
    /// Note `e` if it is a refusal (not for absent files or plain I/O errors).
    pub(crate) fn note(&self, e: &ProbeError) {
        if !matches!(
            e,
            ProbeError::NotRegular { .. } | ProbeError::TooLarge { .. }
        ) {
            return;
        }
        self.note_message(e.to_string());
    }

    /// Note a refusal described by `msg` (which names the path).
    pub(crate) fn note_message(&self, msg: String) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.len() < MAX_REFUSALS {
            g.0.insert(msg);
        } else if !g.0.contains(&msg) {
            g.1 += 1;
        }
    }

    pub(crate) fn messages(&self) -> Vec<String> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<String> = g.0.iter().cloned().collect();
        if g.1 > 0 {
            v.push(format!("{} more reads refused", g.1));
        }
        v
    }
}

/// Convenience readers over any [`Probe`].
pub trait ProbeExt: Probe {
    /// A file as text, invalid UTF-8 replaced, a leading byte-order mark
    /// dropped.
    fn read_text(&self, path: &str) -> Result<String, ProbeError> {
        self.read(path)
            .map(|b| crate::model::text::decode(&b).into_owned())
    }

    /// A file's text trimmed; `None` when absent, empty, unreadable or over
    /// [`ATTRIBUTE_READ_LIMIT`] (for one-value sysfs/procfs attributes).
    fn read_trimmed(&self, path: &str) -> Option<String> {
        let b = self.read_limited(path, ATTRIBUTE_READ_LIMIT).ok()?;
        let t = crate::model::text::decode(&b);
        let t = t.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        (!t.is_empty()).then(|| t.to_string())
    }

    /// Entry names of a directory; empty when absent or unreadable.
    fn list_or_empty(&self, path: &str) -> Vec<String> {
        self.list_dir(path).unwrap_or_default()
    }

    /// Last component of a symlink's target (e.g. a bound driver's name).
    fn link_name(&self, path: &str) -> Option<String> {
        let t = self.read_link(path).ok()?;
        t.rsplit('/').find(|s| !s.is_empty()).map(str::to_string)
    }
}

impl<P: Probe + ?Sized> ProbeExt for P {}

/// Join a directory and a name into a probe path.
pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}
