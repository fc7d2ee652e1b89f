//! Snapshots: a record of every file, directory listing, link, tool run and
//! environment variable one detection read, and a probe that replays it.
//!
//! On disk a snapshot is a directory with `manifest.json` (paths, listings,
//! links, tool invocations, exit codes, environment, errors) and `blobs/`
//! (file contents and tool output, one file each, named by the manifest).
#![allow(
    clippy::disallowed_methods,
    reason = "snapshots are written and read here, at the probe boundary"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Probe, ProbeError, ToolOutput};

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

    /// Write the snapshot to `dir`, which must not exist or be empty. Also
    /// writes `extra` files (e.g. `registry.json`) beside the manifest.
    pub fn save(&self, dir: &Path, extra: &[(&str, &[u8])]) -> Result<(), SnapshotError> {
        let io = |path: &Path, e: std::io::Error| SnapshotError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        if let Ok(mut rd) = std::fs::read_dir(dir) {
            if rd.next().is_some() {
                return Err(SnapshotError::NotEmpty {
                    path: dir.to_path_buf(),
                });
            }
        }
        let blobs_dir = dir.join("blobs");
        std::fs::create_dir_all(&blobs_dir).map_err(|e| io(&blobs_dir, e))?;
        let rec = lock(&self.rec);
        for (i, b) in rec.blobs.iter().enumerate() {
            let p = blobs_dir.join(format!("b{i:06}"));
            std::fs::write(&p, b).map_err(|e| io(&p, e))?;
        }
        let mut manifest = rec.manifest.clone();
        manifest.snapshot_version = SNAPSHOT_VERSION;
        manifest.generator = concat!("ai-hwaccel ", env!("CARGO_PKG_VERSION")).to_string();
        let text = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
        let mp = dir.join("manifest.json");
        std::fs::write(&mp, text).map_err(|e| io(&mp, e))?;
        for (name, bytes) in extra {
            let p = dir.join(name);
            std::fs::write(&p, bytes).map_err(|e| io(&p, e))?;
        }
        Ok(())
    }
}

impl<P: Probe> Probe for RecordingProbe<P> {
    fn read(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        let r = self.inner.read(path);
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

    fn env(&self, name: &str) -> Option<String> {
        let v = self.inner.env(name);
        lock(&self.rec)
            .manifest
            .env
            .entry(name.to_string())
            .or_insert_with(|| v.clone());
        v
    }
}

/// Answers every probe call from a snapshot directory; never touches the machine.
/// Anything the snapshot did not record reads as not found.
pub struct ReplayProbe {
    manifest: Manifest,
    blobs: BTreeMap<String, Vec<u8>>,
}

/// Largest snapshot blob read back; bounds what a hostile snapshot can make us hold.
const MAX_BLOB_BYTES: u64 = 64 * 1024 * 1024;

impl ReplayProbe {
    /// Open the snapshot in `dir`.
    pub fn open(dir: &Path) -> Result<Self, SnapshotError> {
        let mp = dir.join("manifest.json");
        let text = std::fs::read_to_string(&mp).map_err(|e| SnapshotError::Io {
            path: mp.clone(),
            message: e.to_string(),
        })?;
        let bad = |field: String, message: String| SnapshotError::Manifest {
            path: mp.clone(),
            field,
            message,
        };
        let de = &mut serde_json::Deserializer::from_str(&text);
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
        let mut names: Vec<&String> = manifest
            .files
            .values()
            .filter_map(|o| match o {
                Outcome::Ok(b) => Some(b),
                Outcome::Error(_) => None,
            })
            .collect();
        for t in &manifest.tools {
            if let Outcome::Ok(run) = &t.result {
                names.push(&run.stdout);
                names.push(&run.stderr);
            }
        }
        let mut blobs = BTreeMap::new();
        for name in names {
            let valid = name.len() > 1
                && name.starts_with('b')
                && name[1..].bytes().all(|c| c.is_ascii_digit());
            if !valid {
                return Err(bad("blob".into(), format!("invalid blob name {name:?}")));
            }
            let p = dir.join("blobs").join(name);
            let f = std::fs::File::open(&p).map_err(|e| SnapshotError::Io {
                path: p.clone(),
                message: e.to_string(),
            })?;
            let mut buf = Vec::new();
            use std::io::Read;
            f.take(MAX_BLOB_BYTES)
                .read_to_end(&mut buf)
                .map_err(|e| SnapshotError::Io {
                    path: p.clone(),
                    message: e.to_string(),
                })?;
            blobs.insert(name.clone(), buf);
        }
        Ok(ReplayProbe { manifest, blobs })
    }

    fn blob(&self, name: &str) -> Vec<u8> {
        self.blobs.get(name).cloned().unwrap_or_default()
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
        match self.manifest.files.get(path) {
            Some(Outcome::Ok(b)) => Ok(self.blob(b)),
            Some(Outcome::Error(e)) => Err(e.to_error(path)),
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
                stdout: self.blob(&run.stdout),
                stderr: self.blob(&run.stderr),
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
}
