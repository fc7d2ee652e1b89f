//! Running one external tool: absolute path, no shell, stdin closed, its own
//! process group, a timeout after which the whole group is killed and reaped,
//! and a cap on captured output. Output is read with poll(2) under the same
//! deadline, so a descendant that escaped the group (a `setsid` daemon the
//! tool left holding stdout) cannot keep the caller waiting: after the tool
//! exits, reading goes on for [`EXIT_GRACE`] at most twice over.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is the probe boundary for processes"
)]

use std::os::fd::AsRawFd;
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

/// How long the readers keep reading after the tool exited: a grandchild
/// that inherited stdout (a daemon the tool started) may still hold the pipe.
/// After this the group is killed; after as long again reading stops, even
/// if a process that left the group (`setsid`) still holds the pipe.
const EXIT_GRACE: Duration = Duration::from_millis(100);

/// One captured pipe: non-blocking, read while `poll` says it is ready.
struct Pipe {
    fd: std::os::fd::OwnedFd,
    kept: Vec<u8>,
    truncated: bool,
    open: bool,
}

impl Pipe {
    fn new(fd: impl Into<std::os::fd::OwnedFd>) -> Pipe {
        let fd = fd.into();
        // SAFETY: fcntl on a descriptor we own; only the status flags change.
        unsafe {
            let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        Pipe {
            fd,
            kept: Vec::new(),
            truncated: false,
            open: true,
        }
    }

    /// Read what is there now, keeping at most `cap` bytes and dropping the
    /// rest (so the tool never blocks on a full pipe).
    fn drain(&mut self, cap: usize) {
        let mut buf = [0u8; 64 * 1024];
        while self.open {
            // SAFETY: read(2) writes at most buf.len() bytes into buf, which we own.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            if n > 0 {
                let n = n as usize;
                let room = cap.saturating_sub(self.kept.len());
                if n > room {
                    self.truncated = true;
                }
                self.kept.extend_from_slice(&buf[..n.min(room)]);
                continue;
            }
            if n == 0 {
                self.open = false;
                break;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => break,
                _ => {
                    self.open = false;
                    break;
                }
            }
        }
    }
}

/// Wait up to `wait` for any open pipe to become readable, then read them.
fn poll_pipes(pipes: &mut [&mut Pipe], wait: Duration, cap: usize) {
    let mut fds: Vec<libc::pollfd> = pipes
        .iter()
        .filter(|p| p.open)
        .map(|p| libc::pollfd {
            fd: p.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if fds.is_empty() {
        thread::sleep(wait);
        return;
    }
    let ms = wait.as_millis().clamp(0, 1000) as libc::c_int;
    // SAFETY: poll reads and writes exactly fds.len() pollfd entries we own.
    let _ = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    for p in pipes.iter_mut() {
        if p.open {
            p.drain(cap);
        }
    }
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

/// When a run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Until {
    /// When the tool exits (or the timeout passes).
    Exit,
    /// As soon as stdout holds a complete line: the group is killed then.
    /// For tools that stream reports without end (`neuron-monitor`).
    FirstLine,
}

/// Run `exe` with `args`. `name` is used in errors.
pub(crate) fn run(
    name: &str,
    exe: &Path,
    args: &[&str],
    timeout: Duration,
    cap: usize,
    until: Until,
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
    let mut out = child.stdout.take().map(Pipe::new);
    let mut err = child.stderr.take().map(Pipe::new);
    let start = Instant::now();
    let deadline = start + timeout;
    let mut pause = Duration::from_micros(200);
    // (exit status, when it was seen, whether the group was killed since)
    let mut exited: Option<(std::process::ExitStatus, Instant, bool)> = None;
    loop {
        let line_in =
            until == Until::FirstLine && out.as_ref().is_some_and(|p| p.kept.contains(&b'\n'));
        let mut pipes: Vec<&mut Pipe> = out.iter_mut().chain(err.iter_mut()).collect();
        let any_open = pipes.iter().any(|p| p.open);
        let now = Instant::now();
        match exited {
            None => match child.try_wait() {
                Ok(Some(st)) => {
                    exited = Some((st, now, false));
                    continue;
                }
                Ok(None) if line_in => {
                    // The first line is in: end the stream. Reading stops
                    // here; what the pipes still hold is not waited for.
                    kill_group(&mut child);
                    let status = child.wait().ok();
                    let (stdout, t1) = out.map(|p| (p.kept, p.truncated)).unwrap_or_default();
                    let (stderr, t2) = err.map(|p| (p.kept, p.truncated)).unwrap_or_default();
                    return Ok(ToolOutput {
                        status: status.and_then(|s| s.code()),
                        stdout,
                        stderr,
                        truncated: t1 || t2,
                    });
                }
                Ok(None) if now >= deadline => {
                    kill_group(&mut child);
                    let _ = child.wait();
                    // The pipes are dropped unread: a process that escaped
                    // the group may hold them, and we do not wait for it.
                    return Err(ProbeError::Timeout {
                        tool: name.to_string(),
                        timeout_ms: timeout.as_millis() as u64,
                    });
                }
                Ok(None) => {
                    let wait = pause.min(deadline.saturating_duration_since(now));
                    if any_open {
                        poll_pipes(&mut pipes, wait.max(Duration::from_millis(1)), cap);
                    } else {
                        thread::sleep(wait);
                    }
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
            },
            Some((_, at, killed)) => {
                if !any_open {
                    break;
                }
                let since = now.saturating_duration_since(at);
                if since >= EXIT_GRACE && !killed {
                    // The tool exited but something still holds its pipes:
                    // end the group (a daemon that left it with setsid
                    // survives; we stop reading below all the same).
                    // SAFETY: kill(2) on the group we created; no memory is touched.
                    unsafe {
                        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
                    }
                    if let Some(e) = exited.as_mut() {
                        e.2 = true;
                    }
                } else if since >= EXIT_GRACE * 2 || now >= deadline + EXIT_GRACE {
                    tracing::debug!(
                        tool = name,
                        "a process outside the tool's group holds its output; stopped reading"
                    );
                    break;
                }
                poll_pipes(&mut pipes, Duration::from_millis(10), cap);
            }
        }
    }
    let status = exited.map(|e| e.0).expect("loop ends after exit");
    let (stdout, t1) = out.map(|p| (p.kept, p.truncated)).unwrap_or_default();
    let (stderr, t2) = err.map(|p| (p.kept, p.truncated)).unwrap_or_default();
    Ok(ToolOutput {
        status: status.code(),
        stdout,
        stderr,
        truncated: t1 || t2,
    })
}
