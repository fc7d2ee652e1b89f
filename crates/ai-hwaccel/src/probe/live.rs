//! The live probe: files under a root directory, tools from a search path.
//!
//! Every read, listing and link lookup resolves inside the root as chroot(2)
//! would ([`confine::Confine::InRoot`]); only regular files are read, each
//! with a bound; tool runs share one deadline when one is set.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is the probe boundary for files"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::confine::{self, Base, Confine, OpenError};
use super::{
    DEFAULT_OUTPUT_CAP, DEFAULT_READ_LIMIT, DEFAULT_TOOL_TIMEOUT, Probe, ProbeError, RefusalLog,
    ToolOutput, exec,
};

/// How a [`LiveProbe`] reaches the machine. `Default` is the live machine:
/// root `/`, tools from `PATH`, the process environment, 5 s timeout.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Directory that stands for `/` (a fake root in tests, `/host` in a container).
    pub root: PathBuf,
    /// Never run tools; only files are read.
    pub no_exec: bool,
    /// How long a tool may run before it is killed.
    pub timeout: Duration,
    /// Cap on captured stdout/stderr per run.
    pub output_cap: usize,
    /// Directories searched for tools. `None`: the absolute entries of `PATH`
    /// followed by [`VENDOR_TOOL_DIRS`] when the root is `/`, and no tools at
    /// all under any other root (so a fake root is never mixed with this
    /// machine's tools).
    pub tool_path: Option<Vec<PathBuf>>,
    /// Environment seen by detection. `None`: this process's environment.
    pub env: Option<BTreeMap<String, String>>,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            root: PathBuf::from("/"),
            no_exec: false,
            timeout: DEFAULT_TOOL_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            tool_path: None,
            env: None,
        }
    }
}

/// Directories searched after `PATH` on the live machine: where vendors put
/// tools that `PATH` often lacks. `/usr/lib/wsl/lib` holds the `nvidia-smi`
/// and `libnvidia-ml.so.1` that the Windows NVIDIA driver maps into WSL 2
/// (NVIDIA, "CUDA on WSL User Guide"; the directory is not on every
/// distribution's `PATH`). `/opt/hyhal/bin` holds `hy-smi`, installed with
/// the Hygon DCU driver, and `/opt/dtk/bin` the DTK's `rocm-smi`; neither is
/// on `PATH` outside the DTK's environment script (a benchmark script notes
/// that a non-interactive ssh `PATH` lacks `/opt/hyhal/bin` and looks for
/// `/opt/hyhal/bin/hy-smi` and `/opt/dtk/bin/rocm-smi` by path, code-search
/// file id 69139788802).
pub const VENDOR_TOOL_DIRS: &[&str] = &["/usr/lib/wsl/lib", "/opt/hyhal/bin", "/opt/dtk/bin"];

/// Reads the machine (or a directory tree standing for it).
#[derive(Clone, Debug)]
pub struct LiveProbe {
    opts: ProbeOptions,
    search: Vec<PathBuf>,
    /// The root, held open; `None` when it could not be opened (every read
    /// then retries and reports why).
    base: Option<Arc<Base>>,
    deadline: Option<Instant>,
    refusals: Arc<RefusalLog>,
}

impl LiveProbe {
    /// A probe with these options.
    pub fn new(opts: ProbeOptions) -> Self {
        let search = match &opts.tool_path {
            Some(dirs) => dirs.iter().filter(|d| d.is_absolute()).cloned().collect(),
            None if opts.root == Path::new("/") => {
                let path = match &opts.env {
                    Some(env) => env.get("PATH").cloned().unwrap_or_default(),
                    None => std::env::var("PATH").unwrap_or_default(),
                };
                let mut dirs = exec::search_path_from(&path);
                for d in VENDOR_TOOL_DIRS.iter().map(PathBuf::from) {
                    if !dirs.contains(&d) {
                        dirs.push(d);
                    }
                }
                dirs
            }
            None => Vec::new(),
        };
        let base = Base::open(&opts.root, Confine::InRoot).ok().map(Arc::new);
        LiveProbe {
            opts,
            search,
            base,
            deadline: None,
            refusals: Arc::default(),
        }
    }

    /// The same probe with one deadline shared by every tool run: a run
    /// starting after it fails at once with [`ProbeError::Timeout`], and a
    /// run never outlasts it. [`crate::detect()`] sets it to start + timeout,
    /// so that a whole detection ends within the timeout plus a small constant
    /// however many tools run one after another.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The options this probe was built with.
    pub fn options(&self) -> &ProbeOptions {
        &self.opts
    }

    fn with_base<T>(
        &self,
        path: &str,
        f: impl FnOnce(&Base) -> Result<T, OpenError>,
    ) -> Result<T, ProbeError> {
        let r = match &self.base {
            Some(b) => f(b),
            None => Base::open(&self.opts.root, Confine::InRoot)
                .map_err(OpenError::Io)
                .and_then(|b| f(&b)),
        };
        r.map_err(|e| {
            let e = open_err(path, e);
            self.refusals.note(&e);
            e
        })
    }
}

pub(super) fn open_err(path: &str, e: OpenError) -> ProbeError {
    match e {
        OpenError::Io(e) => io_err(path, e),
        OpenError::NotRegular(what) => ProbeError::NotRegular {
            path: path.to_string(),
            what: what.to_string(),
        },
        OpenError::TooLarge(limit) => ProbeError::TooLarge {
            path: path.to_string(),
            limit,
        },
        OpenError::Escapes => ProbeError::Io {
            path: path.to_string(),
            message: e.to_string(),
        },
    }
}

fn io_err(path: &str, e: std::io::Error) -> ProbeError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ProbeError::NotFound {
            path: path.to_string(),
        }
    } else {
        ProbeError::Io {
            path: path.to_string(),
            message: e.to_string(),
        }
    }
}

impl Probe for LiveProbe {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.read_limited(path, DEFAULT_READ_LIMIT)
    }

    fn read_limited(&self, path: &str, limit: u64) -> Result<Vec<u8>, ProbeError> {
        self.with_base(path, |b| confine::read_limited(b.open_file(path)?, limit))
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError> {
        self.with_base(path, |b| b.list_dir(path))
    }

    fn read_link(&self, path: &str) -> Result<String, ProbeError> {
        self.with_base(path, |b| b.read_link(path))
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        self.run_until(tool, args, exec::Until::Exit)
    }

    fn run_first_line(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        self.run_until(tool, args, exec::Until::FirstLine)
    }

    fn env(&self, name: &str) -> Option<String> {
        match &self.opts.env {
            Some(env) => env.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    fn allows_native_libraries(&self) -> bool {
        self.opts.root == Path::new("/") && !self.opts.no_exec
    }

    fn refusals(&self) -> Vec<String> {
        self.refusals.messages()
    }
}

impl LiveProbe {
    /// Resolve `tool` and run it under the options' timeout (cut to what is
    /// left of the shared deadline) and output cap.
    fn run_until(
        &self,
        tool: &str,
        args: &[&str],
        until: exec::Until,
    ) -> Result<ToolOutput, ProbeError> {
        if self.opts.no_exec {
            return Err(ProbeError::ExecDisabled {
                tool: tool.to_string(),
            });
        }
        let exe = exec::resolve(tool, &self.search).ok_or_else(|| ProbeError::ToolNotFound {
            tool: tool.to_string(),
        })?;
        let mut timeout = self.opts.timeout;
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProbeError::Timeout {
                    tool: tool.to_string(),
                    timeout_ms: self.opts.timeout.as_millis() as u64,
                });
            }
            timeout = timeout.min(left);
        }
        tracing::debug!(tool, ?args, exe = %exe.display(), "running tool");
        exec::run(tool, &exe, args, timeout, self.opts.output_cap, until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_dirs_follow_path_on_the_live_root_only() {
        let env = |path: &str| Some(BTreeMap::from([("PATH".to_string(), path.to_string())]));
        let live = LiveProbe::new(ProbeOptions {
            env: env("/usr/bin:relative:/bin"),
            ..ProbeOptions::default()
        });
        let want: Vec<PathBuf> = [
            "/usr/bin",
            "/bin",
            "/usr/lib/wsl/lib",
            "/opt/hyhal/bin",
            "/opt/dtk/bin",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(live.search, want);
        // Already on PATH: not searched twice.
        let live = LiveProbe::new(ProbeOptions {
            env: env("/usr/lib/wsl/lib:/usr/bin"),
            ..ProbeOptions::default()
        });
        assert_eq!(live.search.len(), 4);
        let fake = LiveProbe::new(ProbeOptions {
            root: PathBuf::from("/tmp/fake-root"),
            env: env("/usr/bin"),
            ..ProbeOptions::default()
        });
        assert!(
            fake.search.is_empty(),
            "a fake root runs no tool of this machine"
        );
    }
}
