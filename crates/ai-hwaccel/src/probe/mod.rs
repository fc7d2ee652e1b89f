//! The probe boundary: every read of the machine goes through [`Probe`].
//!
//! Three implementations exist: [`LiveProbe`] reads files under a root
//! directory (default `/`) and runs tools with a timeout and an output cap;
//! [`RecordingProbe`] wraps another probe and records everything it returns
//! into a snapshot; [`ReplayProbe`] answers from a snapshot without touching
//! the machine. Nothing else in the library calls `std::fs` or
//! `std::process` (clippy's `disallowed-methods` enforces it).

pub mod cache_file;
mod exec;
pub mod files;
mod live;
mod snapshot;

use std::time::Duration;

pub use live::{LiveProbe, ProbeOptions};
pub use snapshot::{RecordingProbe, ReplayProbe, SNAPSHOT_VERSION, SnapshotError};

/// Default time a tool may run before it is killed.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on captured stdout (and, separately, stderr) of one tool run.
pub const DEFAULT_OUTPUT_CAP: usize = 16 * 1024 * 1024;

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
        String::from_utf8_lossy(&self.stdout).into_owned()
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
    /// Bytes of a file.
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError>;
    /// Entry names of a directory, sorted.
    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError>;
    /// Target of a symbolic link, as stored in the link.
    fn read_link(&self, path: &str) -> Result<String, ProbeError>;
    /// Run `tool` (a bare name looked up on the search path) with `args`,
    /// without a shell, stdin closed, under the timeout and output cap.
    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError>;
    /// An environment variable of the probed process.
    fn env(&self, name: &str) -> Option<String>;
    /// Whether detection may load vendor libraries (NVML) into this process.
    /// Only true for the live machine at root `/` with tools allowed: a fake
    /// root or a replayed snapshot must never consult the real hardware.
    fn allows_native_libraries(&self) -> bool {
        false
    }
}

/// Convenience readers over any [`Probe`].
pub trait ProbeExt: Probe {
    /// A file as text, invalid UTF-8 replaced.
    fn read_text(&self, path: &str) -> Result<String, ProbeError> {
        self.read(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// A file's text trimmed; `None` when absent, empty or unreadable.
    fn read_trimmed(&self, path: &str) -> Option<String> {
        let t = self.read_text(path).ok()?;
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
