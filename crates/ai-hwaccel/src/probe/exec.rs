//! Running one external tool: absolute path, no shell, stdin closed, its own
//! process group, a timeout after which the whole group is killed and reaped,
//! and a cap on captured output.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is the probe boundary for processes"
)]

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{ProbeError, ToolOutput};

/// Find `tool` in `dirs` (absolute directories only). A name with a `/` is refused.
pub(crate) fn resolve(tool: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    if tool.is_empty() || tool.contains('/') {
        return None;
    }
    dirs.iter().filter(|d| d.is_absolute()).find_map(|d| {
        let p = d.join(tool);
        let meta = std::fs::metadata(&p).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(p)
    })
}

/// Absolute directories of a `PATH`-style string; relative entries (and the
/// empty entry, meaning the current directory) are dropped.
pub(crate) fn search_path_from(path_var: &str) -> Vec<PathBuf> {
    std::env::split_paths(path_var)
        .filter(|p| p.is_absolute())
        .collect()
}

/// Read all of `r`, keeping at most `cap` bytes and draining the rest so the
/// child never blocks on a full pipe. Returns the bytes and whether any were dropped.
fn drain_capped(mut r: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (kept, truncated)
}

fn kill_group(child: &mut Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) with a negative pid signals the process group we created
    // for this child (process_group(0) below); it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let _ = child.kill();
}

/// Run `exe` with `args`. `name` is used in errors.
pub(crate) fn run(
    name: &str,
    exe: &Path,
    args: &[&str],
    timeout: Duration,
    cap: usize,
) -> Result<ToolOutput, ProbeError> {
    let spawn = || {
        Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("LC_ALL", "C")
            .process_group(0)
            .spawn()
    };
    // ETXTBSY: the executable is open for writing somewhere — typically a
    // file descriptor that another thread's fork inherited for the instant
    // before its exec closed it, or a package upgrade replacing the tool.
    // It clears by itself, so retry briefly (at most ~100 ms) before failing.
    let mut attempt = 0;
    let mut child = loop {
        match spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt < 10 => {
                attempt += 1;
                thread::sleep(Duration::from_millis(10));
            }
            r => {
                break r.map_err(|e| ProbeError::Spawn {
                    tool: name.to_string(),
                    message: e.to_string(),
                })?;
            }
        }
    };
    let out = child
        .stdout
        .take()
        .map(|s| thread::spawn(move || drain_capped(s, cap)));
    let err = child
        .stderr
        .take()
        .map(|s| thread::spawn(move || drain_capped(s, cap)));

    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() >= timeout => break None,
            Ok(None) => {
                thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                kill_group(&mut child);
                let _ = child.wait();
                return Err(ProbeError::Spawn {
                    tool: name.to_string(),
                    message: e.to_string(),
                });
            }
        }
    };
    let Some(status) = status else {
        kill_group(&mut child);
        let _ = child.wait();
        // Reader threads end once every holder of the pipes is dead; the
        // group kill above ends grandchildren too, so we do not wait on them.
        return Err(ProbeError::Timeout {
            tool: name.to_string(),
            timeout_ms: timeout.as_millis() as u64,
        });
    };
    // The tool exited. A grandchild it left behind may still hold the pipes:
    // give the readers a short grace, then kill the group so they see EOF.
    let grace = Instant::now();
    let done = |h: &Option<thread::JoinHandle<(Vec<u8>, bool)>>| {
        h.as_ref().is_none_or(|h| h.is_finished())
    };
    while !(done(&out) && done(&err)) {
        if grace.elapsed() > Duration::from_millis(100) {
            // SAFETY: as in kill_group; the group still has members (they hold the pipes).
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    let (stdout, t1) = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let (stderr, t2) = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(ToolOutput {
        status: status.code(),
        stdout,
        stderr,
        truncated: t1 || t2,
    })
}
