//! Snapshots: a record of every file, directory listing, link, tool run and
//! environment variable one detection read, and a probe that replays it.
//!
//! On disk a snapshot is a directory with `manifest.json` (paths, listings,
//! links, tool invocations, exit codes, environment, errors) and `blobs/`
//! (file contents and tool output, one file each, named by the manifest).
//!
//! A snapshot is untrusted input: the manifest and every blob must be regular
//! files inside the snapshot directory (a symbolic link, FIFO or device is
//! refused, never followed or opened for reading), the manifest is bounded by
//! [`MAX_MANIFEST_BYTES`], each blob by [`MAX_BLOB_BYTES`] and all blobs
//! together by [`MAX_SNAPSHOT_BYTES`]; a blob named many times is read once.
//! Saving writes into a new directory and never over existing files.
#![allow(
    clippy::disallowed_methods,
    reason = "snapshots are written and read here, at the probe boundary"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::confine::{self, Base, Confine, OpenError};
use super::{DEFAULT_READ_LIMIT, Probe, ProbeError, RefusalLog, ToolOutput};

/// Version of the snapshot layout this build writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Errors saving or opening a snapshot. Each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Reading or writing a file of the snapshot failed.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error text.
        message: String,
    },
    /// The target directory exists and is not empty; nothing was written.
    #[error("{path}: exists and is not empty; refusing to overwrite it")]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// `manifest.json` is not a valid snapshot manifest.
    #[error("{path}: invalid manifest at {field}: {message}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// JSON path of the offending field.
        field: String,
        /// What was wrong.
        message: String,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ErrorRecord {
    NotFound,
    Io { message: String },
    ToolNotFound,
    ExecDisabled,
    Timeout { timeout_ms: u64 },
    Spawn { message: String },
    NotRegular { what: String },
    TooLarge { limit: u64 },
}

impl ErrorRecord {
    fn from_error(e: &ProbeError) -> Self {
        match e {
            ProbeError::NotFound { .. } => ErrorRecord::NotFound,
            ProbeError::Io { message, .. } => ErrorRecord::Io {
                message: message.clone(),
            },
            ProbeError::ToolNotFound { .. } => ErrorRecord::ToolNotFound,
            ProbeError::ExecDisabled { .. } => ErrorRecord::ExecDisabled,
            ProbeError::Timeout { timeout_ms, .. } => ErrorRecord::Timeout {
                timeout_ms: *timeout_ms,
            },
            ProbeError::Spawn { message, .. } => ErrorRecord::Spawn {
                message: message.clone(),
            },
            ProbeError::NotRegular { what, .. } => ErrorRecord::NotRegular { what: what.clone() },
            ProbeError::TooLarge { limit, .. } => ErrorRecord::TooLarge { limit: *limit },
        }
    }

    fn to_error(&self, what: &str) -> ProbeError {
        let s = what.to_string();
        match self {
            ErrorRecord::NotFound => ProbeError::NotFound { path: s },
            ErrorRecord::Io { message } => ProbeError::Io {
                path: s,
                message: message.clone(),
            },
            ErrorRecord::ToolNotFound => ProbeError::ToolNotFound { tool: s },
            ErrorRecord::ExecDisabled => ProbeError::ExecDisabled { tool: s },
            ErrorRecord::Timeout { timeout_ms } => ProbeError::Timeout {
                tool: s,
                timeout_ms: *timeout_ms,
            },
            ErrorRecord::Spawn { message } => ProbeError::Spawn {
                tool: s,
                message: message.clone(),
            },
            ErrorRecord::NotRegular { what } => ProbeError::NotRegular {
                path: s,
                what: what.clone(),
            },
            ErrorRecord::TooLarge { limit } => ProbeError::TooLarge {
                path: s,
                limit: *limit,
            },
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Outcome<T> {
    Ok(T),
    Error(ErrorRecord),
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct ToolRun {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    truncated: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct ToolRecord {
    tool: String,
    args: Vec<String>,
    result: Outcome<ToolRun>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
struct Manifest {
    snapshot_version: u32,
    generator: String,
    /// path → blob name of its content
    files: BTreeMap<String, Outcome<String>>,
    dirs: BTreeMap<String, Outcome<Vec<String>>>,
    links: BTreeMap<String, Outcome<String>>,
    tools: Vec<ToolRecord>,
    env: BTreeMap<String, Option<String>>,
    /// Native library → blob of its serialized answer (`nvml`).
    native: BTreeMap<String, String>,
}

#[derive(Default)]
struct Recording {
    manifest: Manifest,
    blobs: Vec<Vec<u8>>,
}

impl Recording {
    fn blob(&mut self, bytes: &[u8]) -> String {
        self.blobs.push(bytes.to_vec());
        format!("b{:06}", self.blobs.len() - 1)
    }
}

/// Check that `dir` can take a new snapshot: it must be provably absent or an
/// empty directory. A directory that cannot be listed (mode 0300, say) is
/// refused, as is anything that is not a directory. [`RecordingProbe::save`]
/// checks again (and the final rename re-proves it atomically); callers use
/// this to refuse before spending time on detection.
pub fn check_snapshot_dir(dir: &Path) -> Result<(), SnapshotError> {
    let not_empty = || SnapshotError::NotEmpty {
        path: dir.to_path_buf(),
    };
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SnapshotError::Io {
            path: dir.to_path_buf(),
            message: e.to_string(),
        }),
        Ok(m) if !m.is_dir() => Err(not_empty()),
        Ok(_) => match std::fs::read_dir(dir) {
            Err(e) => Err(SnapshotError::Io {
                path: dir.to_path_buf(),
                message: format!(
                    "cannot list it to prove it is empty ({e}); refusing to write there"
                ),
            }),
            Ok(mut rd) => match rd.next() {
                Some(_) => Err(not_empty()),
                None => Ok(()),
            },
        },
    }
}

/// Wraps a probe and records every answer it gives, for [`RecordingProbe::save`].
pub struct RecordingProbe<P> {
    inner: P,
    rec: Mutex<Recording>,
}

fn lock(m: &Mutex<Recording>) -> std::sync::MutexGuard<'_, Recording> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<P: Probe> RecordingProbe<P> {
    /// Record what `inner` answers.
    pub fn new(inner: P) -> Self {
        RecordingProbe {
            inner,
            rec: Mutex::new(Recording::default()),
        }
    }

    /// Write the snapshot to `dir`, which must not exist or be an empty
    /// directory. Also writes `extra` files (e.g. `registry.json`) beside the
    /// manifest.
    ///
    /// Everything is written into a new sibling directory this call creates
    /// (`.NAME.partial-PID`), which is then renamed onto `dir`: rename(2)
    /// replaces only an absent name or an empty directory, so the kernel
    /// proves `dir` empty at the moment it is replaced — a directory that
    /// cannot be listed, or that gains a file meanwhile, is never overwritten.
    pub fn save(&self, dir: &Path, extra: &[(&str, &[u8])]) -> Result<(), SnapshotError> {
        let io = |path: &Path, e: std::io::Error| SnapshotError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        check_snapshot_dir(dir)?;
        let not_empty = || SnapshotError::NotEmpty {
            path: dir.to_path_buf(),
        };
        let name = dir
            .file_name()
            .ok_or_else(|| io(dir, std::io::Error::other("no directory name")))?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
        let tmp = parent.join(format!(
            ".{}.partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        std::fs::create_dir(&tmp).map_err(|e| io(&tmp, e))?;
        let r = self.write_into(&tmp, extra).and_then(|()| {
            std::fs::rename(&tmp, dir).map_err(|e| match e.raw_os_error() {
                Some(libc::ENOTEMPTY | libc::EEXIST | libc::ENOTDIR) => not_empty(),
                _ => io(dir, e),
            })
        });
        if r.is_err() {
            // Only the directory this call created, holding only what it wrote.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        r
    }

    fn write_into(&self, dir: &Path, extra: &[(&str, &[u8])]) -> Result<(), SnapshotError> {
        let io = |path: &Path, e: std::io::Error| SnapshotError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let write_new = |p: &Path, bytes: &[u8]| -> Result<(), SnapshotError> {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| io(p, e))
        };
        let blobs_dir = dir.join("blobs");
        std::fs::create_dir(&blobs_dir).map_err(|e| io(&blobs_dir, e))?;
        let rec = lock(&self.rec);
        for (i, b) in rec.blobs.iter().enumerate() {
            write_new(&blobs_dir.join(format!("b{i:06}")), b)?;
        }
        let mut manifest = rec.manifest.clone();
        manifest.snapshot_version = SNAPSHOT_VERSION;
        manifest.generator = concat!("ai-hwaccel ", env!("CARGO_PKG_VERSION")).to_string();
        let text = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
        write_new(&dir.join("manifest.json"), text.as_bytes())?;
        for (name, bytes) in extra {
            write_new(&dir.join(name), bytes)?;
        }
        Ok(())
    }
}

impl<P: Probe> RecordingProbe<P> {
    /// Keep one tool run in the manifest and hand it on.
    fn record_run(
        &self,
        tool: &str,
        args: &[&str],
        r: Result<ToolOutput, ProbeError>,
    ) -> Result<ToolOutput, ProbeError> {
        let mut rec = lock(&self.rec);
        let result = match &r {
            Ok(out) => Outcome::Ok(ToolRun {
                status: out.status,
                stdout: rec.blob(&out.stdout),
                stderr: rec.blob(&out.stderr),
                truncated: out.truncated,
            }),
            Err(e) => Outcome::Error(ErrorRecord::from_error(e)),
        };
        rec.manifest.tools.push(ToolRecord {
            tool: tool.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            result,
        });
        r
    }
}

impl<P: Probe> Probe for RecordingProbe<P> {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.read_limited(path, DEFAULT_READ_LIMIT)
    }

    fn read_limited(&self, path: &str, limit: u64) -> Result<Vec<u8>, ProbeError> {
        let r = self.inner.read_limited(path, limit);
        let mut rec = lock(&self.rec);
        if !rec.manifest.files.contains_key(path) {
            let o = match &r {
                Ok(b) => Outcome::Ok(rec.blob(b)),
                Err(e) => Outcome::Error(ErrorRecord::from_error(e)),
            };
            rec.manifest.files.insert(path.to_string(), o);
        }
        r
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError> {
        let r = self.inner.list_dir(path);
        let o = match &r {
            Ok(v) => Outcome::Ok(v.clone()),
            Err(e) => Outcome::Error(ErrorRecord::from_error(e)),
        };
        lock(&self.rec)
            .manifest
            .dirs
            .entry(path.to_string())
            .or_insert(o);
        r
    }

    fn read_link(&self, path: &str) -> Result<String, ProbeError> {
        let r = self.inner.read_link(path);
        let o = match &r {
            Ok(v) => Outcome::Ok(v.clone()),
            Err(e) => Outcome::Error(ErrorRecord::from_error(e)),
        };
        lock(&self.rec)
            .manifest
            .links
            .entry(path.to_string())
            .or_insert(o);
        r
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        let r = self.inner.run(tool, args);
        self.record_run(tool, args, r)
    }

    fn run_first_line(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        let r = self.inner.run_first_line(tool, args);
        self.record_run(tool, args, r)
    }

    fn env(&self, name: &str) -> Option<String> {
        let v = self.inner.env(name);
        lock(&self.rec)
            .manifest
            .env
            .entry(name.to_string())
            .or_insert_with(|| v.clone());
        v
    }

    fn allows_native_libraries(&self) -> bool {
        self.inner.allows_native_libraries()
    }

    fn record_native(&self, library: &str, answer: &dyn Fn() -> Vec<u8>) {
        self.inner.record_native(library, answer);
        let mut rec = lock(&self.rec);
        if !rec.manifest.native.contains_key(library) {
            let b = rec.blob(&answer());
            rec.manifest.native.insert(library.to_string(), b);
        }
    }

    fn native_answer(&self, library: &str) -> Option<Vec<u8>> {
        self.inner.native_answer(library)
    }

    fn refusals(&self) -> Vec<String> {
        self.inner.refusals()
    }
}

/// Answers every probe call from a snapshot directory; never touches the machine.
/// Anything the snapshot did not record reads as not found.
pub struct ReplayProbe {
    manifest: Manifest,
    /// Blob name → its bytes, or why the entry was refused.
    blobs: BTreeMap<String, Result<Arc<Vec<u8>>, String>>,
    refusals: RefusalLog,
}

/// Largest snapshot blob read back. A recorded file is at most
/// [`DEFAULT_READ_LIMIT`] and a tool output at most the output cap (16 MiB by
/// default); this leaves room for larger caps.
pub const MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;

/// Most bytes read from all blobs of one snapshot together; blobs past it are
/// refused (each with a warning). A recorded detection is typically well
/// under 10 MiB.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;

/// Largest `manifest.json` read (paths, listings and links of one detection:
/// typically under 1 MiB).
pub const MAX_MANIFEST_BYTES: u64 = 32 * 1024 * 1024;

impl ReplayProbe {
    /// Open the snapshot in `dir`.
    pub fn open(dir: &Path) -> Result<Self, SnapshotError> {
        let mp = dir.join("manifest.json");
        let io = |path: &Path, e: OpenError| SnapshotError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let base = Base::open(dir, Confine::Beneath).map_err(|e| io(&mp, OpenError::Io(e)))?;
        let bytes = base
            .open_entry("manifest.json")
            .and_then(|f| confine::read_limited(f, MAX_MANIFEST_BYTES))
            .map_err(|e| io(&mp, e))?;
        let text = String::from_utf8(bytes).map_err(|e| SnapshotError::Manifest {
            path: mp.clone(),
            field: "(file)".into(),
            message: format!("not UTF-8: {e}"),
        })?;
        let bad = |field: String, message: String| SnapshotError::Manifest {
            path: mp.clone(),
            field,
            message,
        };
        let de = &mut serde_json::Deserializer::from_str(crate::model::text::strip_bom(&text));
        let manifest: Manifest = serde_path_to_error::deserialize(de)
            .map_err(|e| bad(e.path().to_string(), e.inner().to_string()))?;
        if manifest.snapshot_version == 0 || manifest.snapshot_version > SNAPSHOT_VERSION {
            return Err(bad(
                "snapshot_version".into(),
                format!(
                    "version {} is not supported (this build reads {SNAPSHOT_VERSION})",
                    manifest.snapshot_version
                ),
            ));
        }
        let mut names: BTreeSet<&String> = manifest
            .files
            .values()
            .filter_map(|o| match o {
                Outcome::Ok(b) => Some(b),
                Outcome::Error(_) => None,
            })
            .collect();
        for t in &manifest.tools {
            if let Outcome::Ok(run) = &t.result {
                names.insert(&run.stdout);
                names.insert(&run.stderr);
            }
        }
        names.extend(manifest.native.values());
        let refusals = RefusalLog::default();
        let mut blobs = BTreeMap::new();
        let mut budget = MAX_SNAPSHOT_BYTES;
        // Each distinct blob is read once, however many entries name it.
        for name in names {
            let valid = name.len() > 1
                && name.starts_with('b')
                && name[1..].bytes().all(|c| c.is_ascii_digit());
            if !valid {
                return Err(bad("blob".into(), format!("invalid blob name {name:?}")));
            }
            let entry = format!("blobs/{name}");
            let p = dir.join(&entry);
            let r = base
                .open_entry(&entry)
                .and_then(|f| confine::read_limited(f, MAX_BLOB_BYTES.min(budget)));
            let loaded = match r {
                Ok(b) => {
                    budget -= b.len() as u64;
                    Ok(Arc::new(b))
                }
                Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(io(&p, OpenError::Io(e)));
                }
                Err(OpenError::TooLarge(_)) if budget < MAX_BLOB_BYTES => {
                    let why = format!(
                        "the snapshot's blobs exceed {MAX_SNAPSHOT_BYTES} bytes in all; not read"
                    );
                    refusals.note_message(format!("{}: {why}", p.display()));
                    Err(why)
                }
                Err(e) => {
                    refusals.note_message(format!("{}: {e}", p.display()));
                    Err(e.to_string())
                }
            };
            blobs.insert(name.clone(), loaded);
        }
        Ok(ReplayProbe {
            manifest,
            blobs,
            refusals,
        })
    }

    /// The bytes of blob `name`, recorded for `what` (a path or a tool).
    fn blob(&self, name: &str, what: &str) -> Result<Vec<u8>, ProbeError> {
        match self.blobs.get(name) {
            Some(Ok(b)) => Ok(b.as_ref().clone()),
            Some(Err(why)) => Err(ProbeError::Io {
                path: what.to_string(),
                message: format!("snapshot entry blobs/{name} refused: {why}"),
            }),
            None => Ok(Vec::new()),
        }
    }
}

fn not_recorded(path: &str) -> ProbeError {
    tracing::debug!(path, "not in snapshot");
    ProbeError::NotFound {
        path: path.to_string(),
    }
}

impl Probe for ReplayProbe {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.read_limited(path, DEFAULT_READ_LIMIT)
    }

    fn read_limited(&self, path: &str, limit: u64) -> Result<Vec<u8>, ProbeError> {
        match self.manifest.files.get(path) {
            Some(Outcome::Ok(b)) => {
                let bytes = self.blob(b, path)?;
                if bytes.len() as u64 > limit {
                    let e = ProbeError::TooLarge {
                        path: path.to_string(),
                        limit,
                    };
                    self.refusals.note(&e);
                    return Err(e);
                }
                Ok(bytes)
            }
            Some(Outcome::Error(e)) => {
                // A refusal recorded live is a refusal again on replay.
                let e = e.to_error(path);
                self.refusals.note(&e);
                Err(e)
            }
            None => Err(not_recorded(path)),
        }
    }

    fn list_dir(&self, path: &str) -> Result<Vec<String>, ProbeError> {
        match self.manifest.dirs.get(path) {
            Some(Outcome::Ok(v)) => Ok(v.clone()),
            Some(Outcome::Error(e)) => Err(e.to_error(path)),
            None => Err(not_recorded(path)),
        }
    }

    fn read_link(&self, path: &str) -> Result<String, ProbeError> {
        match self.manifest.links.get(path) {
            Some(Outcome::Ok(v)) => Ok(v.clone()),
            Some(Outcome::Error(e)) => Err(e.to_error(path)),
            None => Err(not_recorded(path)),
        }
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<ToolOutput, ProbeError> {
        let rec =
            self.manifest.tools.iter().find(|t| {
                t.tool == tool && t.args.iter().map(String::as_str).eq(args.iter().copied())
            });
        match rec.map(|r| &r.result) {
            Some(Outcome::Ok(run)) => Ok(ToolOutput {
                status: run.status,
                stdout: self.blob(&run.stdout, tool)?,
                stderr: self.blob(&run.stderr, tool)?,
                truncated: run.truncated,
            }),
            Some(Outcome::Error(e)) => Err(e.to_error(tool)),
            None => Err(ProbeError::ToolNotFound {
                tool: tool.to_string(),
            }),
        }
    }

    fn env(&self, name: &str) -> Option<String> {
        self.manifest.env.get(name).cloned().flatten()
    }

    fn native_answer(&self, library: &str) -> Option<Vec<u8>> {
        let name = self.manifest.native.get(library)?;
        self.blob(name, library).ok()
    }

    fn refusals(&self) -> Vec<String> {
        self.refusals.messages()
    }
}
