//! Confined, bounded file access: every open resolves inside a base
//! directory, only regular files are opened as files, and reads are bounded.
//!
//! Two ways to confine a path to a base directory:
//! - [`Confine::InRoot`] resolves as chroot(2) would: an absolute link target
//!   starts again at the base, and `..` at the base stays there. This is how
//!   `--root` is read, so a fake root's `/proc/cpuinfo -> /proc/cpuinfo` is
//!   the fake root's own file, never the host's, while sysfs's relative links
//!   (`devices/X -> ../../../devices/pci0000:00/X`) keep working.
//! - [`Confine::Beneath`] refuses any path or link that leaves the base (model
//!   directories: a shard linked to `/etc/passwd` is an error).
//!
//! On Linux the kernel resolves with openat2(2) (`RESOLVE_IN_ROOT` /
//! `RESOLVE_BENEATH`, plus `RESOLVE_NO_MAGICLINKS`). Where openat2 is missing
//! (Linux before 5.6, other Unixes) or filtered (seccomp answers `ENOSYS` or
//! `EPERM`), a portable walk resolves one component at a time with
//! `fstatat`/`openat`/`readlinkat`, following at most [`MAX_LINKS`] links.
//!
//! A file is opened only after `fstat` says it is a regular file (opened
//! `O_NONBLOCK | O_NOCTTY`, so a FIFO or a terminal never blocks or attaches):
//! FIFOs, sockets and devices are refused without being opened for reading.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is the probe boundary for files"
)]

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Most symbolic links followed while resolving one path (Linux's own limit
/// is 40; beyond it the kernel answers `ELOOP`).
pub const MAX_LINKS: usize = 40;

/// Most entries returned for one directory listing. sysfs and procfs
/// directories detection lists hold tens to thousands; past this the listing
/// is refused rather than held in memory.
pub const MAX_DIR_ENTRIES: usize = 100_000;

/// How a path is kept inside its base directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confine {
    /// As chroot(2): absolute link targets are taken relative to the base and
    /// `..` never climbs above it.
    InRoot,
    /// Refuse (with [`OpenError::Escapes`]) any path or link leaving the base.
    Beneath,
}

/// Why a confined open or read failed.
#[derive(Debug)]
pub enum OpenError {
    /// An operating-system error (`NotFound` among them).
    Io(io::Error),
    /// The path is not a regular file; the text says what it is ("a FIFO").
    NotRegular(&'static str),
    /// The path resolves outside the base ([`Confine::Beneath`] only).
    Escapes,
    /// The file holds more than this many bytes.
    TooLarge(u64),
}

impl From<io::Error> for OpenError {
    fn from(e: io::Error) -> Self {
        OpenError::Io(e)
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::NotRegular(what) => write!(f, "{what}, not a regular file; not read"),
            OpenError::Escapes => write!(f, "resolves outside its directory; not read"),
            OpenError::TooLarge(limit) => write!(f, "larger than {limit} bytes; not read"),
        }
    }
}

fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| errno(libc::EINVAL))
}

/// What a `stat` mode is, for refusals.
fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFLNK => "a symbolic link",
        _ => "not a file",
    }
}

/// A directory where a file was asked for is an ordinary I/O error
/// (`EISDIR`, as read(2) answers): it can neither block nor stream.
fn is_a_directory() -> OpenError {
    OpenError::Io(errno(libc::EISDIR))
}

/// The refusal for a non-regular file of this mode.
fn not_regular(mode: libc::mode_t) -> OpenError {
    if mode & libc::S_IFMT == libc::S_IFDIR {
        is_a_directory()
    } else {
        OpenError::NotRegular(kind_of(mode))
    }
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: fstat writes one `struct stat` into the zeroed buffer we own;
    // fd is a descriptor this module opened and still holds.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) == 0 {
            Ok(st)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

fn fstatat_nofollow(dir: RawFd, name: &CString) -> io::Result<libc::stat> {
    // SAFETY: as fstat; `name` is a NUL-terminated string we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0 {
            Ok(st)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

fn openat(dir: RawFd, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: openat reads the NUL-terminated `name`; on success the returned
    // descriptor is new and owned by nobody else, so OwnedFd may close it.
    unsafe {
        let fd = libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC);
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(OwnedFd::from_raw_fd(fd))
        }
    }
}

fn readlinkat(dir: RawFd, name: &CString) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: readlinkat writes at most buf.len() bytes into buf, which we own.
    let n = unsafe {
        libc::readlinkat(
            dir,
            name.as_ptr(),
            buf.as_mut_ptr().cast::<libc::c_char>(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= buf.len() {
        return Err(errno(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(buf)
}

/// Flags for directories walked through (search permission is enough on Linux).
#[cfg(target_os = "linux")]
const WALK_DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
#[cfg(not(target_os = "linux"))]
const WALK_DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

/// Flags a regular file is read with.
const FILE_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;

/// A base directory, held open, that paths are resolved inside.
#[derive(Debug)]
pub struct Base {
    fd: OwnedFd,
    mode: Confine,
    /// The base is the real `/` and [`Confine::InRoot`]: plain resolution
    /// means the same thing, so the fallback needs no walk.
    slash: bool,
}

impl Base {
    /// Open `dir` (following links in `dir` itself: the caller named it).
    pub fn open(dir: &Path, mode: Confine) -> io::Result<Base> {
        let c = cstr(dir.as_os_str().as_bytes())?;
        let fd = openat(libc::AT_FDCWD, &c, WALK_DIR_FLAGS & !libc::O_NOFOLLOW)?;
        let slash = mode == Confine::InRoot && dir == Path::new("/");
        Ok(Base { fd, mode, slash })
    }

    /// Open a regular file at `path` (relative to the base; a leading `/`
    /// means the base) for reading.
    pub fn open_file(&self, path: &str) -> Result<File, OpenError> {
        let rel = relative(path);
        #[cfg(target_os = "linux")]
        if let Some(r) = openat2::open_file(self, &rel) {
            return r;
        }
        if self.slash {
            let c = cstr(format!("/{rel}").as_bytes())?;
            let st = stat_follow(&c)?;
            return open_checked(libc::AT_FDCWD, &c, &st, 0);
        }
        match self.walk(&rel, Want::File)? {
            Walked::File(f) => Ok(f),
            Walked::Dir(_) => Err(is_a_directory()),
        }
    }

    /// Open the directory at `path` for listing.
    pub fn open_dir(&self, path: &str) -> Result<OwnedFd, OpenError> {
        let rel = relative(path);
        #[cfg(target_os = "linux")]
        if let Some(r) = openat2::open(
            self,
            &rel,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK,
        ) {
            return r;
        }
        if self.slash {
            let c = cstr(format!("/{rel}").as_bytes())?;
            return Ok(openat(
                libc::AT_FDCWD,
                &c,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK,
            )?);
        }
        match self.walk(&rel, Want::Dir)? {
            Walked::Dir(d) => Ok(openat(
                d.as_raw_fd(),
                &cstr(b".")?,
                libc::O_RDONLY | libc::O_DIRECTORY,
            )?),
            Walked::File(_) => Err(OpenError::Io(errno(libc::ENOTDIR))),
        }
    }

    /// Open the regular file at `path` without following a link in its last
    /// component: a symbolic link there is refused like a FIFO or a device
    /// (snapshot entries must be plain files inside the snapshot).
    pub fn open_entry(&self, path: &str) -> Result<File, OpenError> {
        let rel = relative(path);
        let (parent, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (p.to_string(), n),
            None => (String::new(), rel.as_str()),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(is_a_directory());
        }
        let dir = self.open_dir(&parent)?;
        let name = cstr(name.as_bytes())?;
        let st = fstatat_nofollow(dir.as_raw_fd(), &name)?;
        open_checked(dir.as_raw_fd(), &name, &st, libc::O_NOFOLLOW)
    }

    /// Entry names of the directory at `path`, sorted.
    pub fn list_dir(&self, path: &str) -> Result<Vec<String>, OpenError> {
        let fd = self.open_dir(path)?;
        let mut names = read_dir_fd(fd)?;
        names.sort();
        Ok(names)
    }

    /// The target of the symbolic link at `path`, as stored in the link. The
    /// directories leading to it are resolved inside the base; the link itself
    /// is not followed.
    pub fn read_link(&self, path: &str) -> Result<String, OpenError> {
        let rel = relative(path);
        let (parent, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (p.to_string(), n),
            None => (String::new(), rel.as_str()),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(OpenError::Io(errno(libc::EINVAL)));
        }
        let dir = self.open_dir(&parent)?;
        let target = readlinkat(dir.as_raw_fd(), &cstr(name.as_bytes())?)?;
        Ok(String::from_utf8_lossy(&target).into_owned())
    }

    /// Resolve `rel` one component at a time (the portable fallback).
    fn walk(&self, rel: &str, want: Want) -> Result<Walked, OpenError> {
        let mut pending: VecDeque<Vec<u8>> = components(rel.as_bytes());
        let mut stack: Vec<OwnedFd> = Vec::new();
        let mut links = 0usize;
        while let Some(c) = pending.pop_front() {
            let cur = stack.last().map_or(self.fd.as_raw_fd(), |f| f.as_raw_fd());
            if c == b".." {
                if stack.pop().is_none() && self.mode == Confine::Beneath {
                    return Err(OpenError::Escapes);
                }
                continue;
            }
            let name = cstr(&c)?;
            let st = fstatat_nofollow(cur, &name)?;
            let last = pending.is_empty();
            match st.st_mode & libc::S_IFMT {
                libc::S_IFLNK => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(OpenError::Io(errno(libc::ELOOP)));
                    }
                    let target = readlinkat(cur, &name)?;
                    if target.first() == Some(&b'/') {
                        if self.mode == Confine::Beneath {
                            return Err(OpenError::Escapes);
                        }
                        stack.clear();
                    }
                    for t in components(&target).into_iter().rev() {
                        pending.push_front(t);
                    }
                }
                libc::S_IFDIR => {
                    if last && want == Want::File {
                        return Err(is_a_directory());
                    }
                    stack.push(openat(cur, &name, WALK_DIR_FLAGS)?);
                }
                mode => {
                    if !last {
                        return Err(OpenError::Io(errno(libc::ENOTDIR)));
                    }
                    if want == Want::Dir {
                        return Err(OpenError::Io(errno(libc::ENOTDIR)));
                    }
                    if mode != libc::S_IFREG {
                        return Err(not_regular(st.st_mode));
                    }
                    return Ok(Walked::File(open_checked(
                        cur,
                        &name,
                        &st,
                        libc::O_NOFOLLOW,
                    )?));
                }
            }
        }
        match stack.pop() {
            Some(d) => Ok(Walked::Dir(d)),
            None => Ok(Walked::Dir(openat(
                self.fd.as_raw_fd(),
                &cstr(b".")?,
                WALK_DIR_FLAGS,
            )?)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    File,
    Dir,
}

enum Walked {
    File(File),
    Dir(OwnedFd),
}

/// `path` without leading slashes; `""` for the base itself.
fn relative(path: &str) -> String {
    path.trim_start_matches('/').to_string()
}

/// The non-empty, non-`.` components of a path.
fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    path.split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .map(<[u8]>::to_vec)
        .collect()
}

fn stat_follow(path: &CString) -> io::Result<libc::stat> {
    // SAFETY: as fstat; `path` is a NUL-terminated string we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(path.as_ptr(), &mut st) == 0 {
            Ok(st)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Open `name` under `dir` for reading after `st` (its `stat`) said it is a
/// regular file, and check that what was opened is that same regular file.
fn open_checked(
    dir: RawFd,
    name: &CString,
    st: &libc::stat,
    extra_flags: libc::c_int,
) -> Result<File, OpenError> {
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular(st.st_mode));
    }
    let fd = openat(dir, name, FILE_FLAGS | extra_flags)?;
    verify_regular(fd, Some(st))
}

/// The opened descriptor as a `File`, if it is a regular file (and, given
/// `expect`, the same inode as the one checked before opening).
fn verify_regular(fd: OwnedFd, expect: Option<&libc::stat>) -> Result<File, OpenError> {
    let now = fstat(fd.as_raw_fd())?;
    if now.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular(now.st_mode));
    }
    if let Some(e) = expect {
        if (e.st_dev, e.st_ino) != (now.st_dev, now.st_ino) {
            return Err(OpenError::Io(io::Error::other(
                "replaced while being opened",
            )));
        }
    }
    Ok(File::from(fd))
}

/// Open the regular file at `path` (resolved normally, following links: the
/// caller named it) for reading; anything else is refused without opening it
/// for reading.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let c = cstr(path.as_os_str().as_bytes())?;
    let st = stat_follow(&c)?;
    open_checked(libc::AT_FDCWD, &c, &st, 0)
}

/// Read `f` to its end, refusing more than `limit` bytes. procfs files report
/// size 0, so the size is never trusted: the read stops at `limit + 1`.
pub fn read_limited(f: File, limit: u64) -> Result<Vec<u8>, OpenError> {
    let mut buf = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(OpenError::TooLarge(limit));
    }
    Ok(buf)
}

/// Names in an open directory (without `.` and `..`), at most [`MAX_DIR_ENTRIES`].
fn read_dir_fd(fd: OwnedFd) -> Result<Vec<String>, OpenError> {
    use std::os::fd::IntoRawFd;
    let raw = fd.into_raw_fd();
    // SAFETY: fdopendir takes ownership of `raw` (a directory descriptor we
    // opened); on failure we still own it and close it.
    let dir = unsafe { libc::fdopendir(raw) };
    if dir.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(OpenError::Io(e));
    }
    let mut names = Vec::new();
    let result = loop {
        // SAFETY: `dir` is a valid DIR* owned by this function; readdir's
        // entry stays valid until the next readdir/closedir on it, and we
        // copy the name out before either.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break Ok(());
        }
        // SAFETY: d_name is a NUL-terminated array inside the entry.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        let b = name.to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        if names.len() >= MAX_DIR_ENTRIES {
            break Err(OpenError::Io(io::Error::other(format!(
                "more than {MAX_DIR_ENTRIES} entries; not listed"
            ))));
        }
        names.push(String::from_utf8_lossy(b).into_owned());
    };
    // SAFETY: `dir` came from fdopendir above and is closed exactly once.
    unsafe { libc::closedir(dir) };
    result.map(|()| names)
}

#[cfg(target_os = "linux")]
mod openat2 {
    //! openat2(2): the kernel resolves the whole path inside the base.

    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{Base, Confine, OpenError, cstr, fstat, verify_regular};

    /// Set once openat2 answered ENOSYS or EPERM: use the walk from then on.
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

    /// `None` when openat2 cannot be used here (the caller falls back).
    pub(super) fn open(
        base: &Base,
        rel: &str,
        flags: libc::c_int,
    ) -> Option<Result<OwnedFd, OpenError>> {
        if UNAVAILABLE.load(Ordering::Relaxed) {
            return None;
        }
        let path = if rel.is_empty() { "." } else { rel };
        let c = match cstr(path.as_bytes()) {
            Ok(c) => c,
            Err(e) => return Some(Err(e.into())),
        };
        let resolve = match base.mode {
            Confine::InRoot if base.slash => 0,
            Confine::InRoot => libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
            Confine::Beneath => libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
        };
        let mut how: libc::open_how = unsafe_zeroed_how();
        how.flags = (flags | libc::O_CLOEXEC) as u64;
        how.resolve = resolve;
        // RESOLVE_IN_ROOT may answer EAGAIN when a rename raced the lookup.
        for _ in 0..8 {
            // SAFETY: openat2 reads `how` (size passed alongside) and the
            // NUL-terminated path; a non-negative result is a new descriptor
            // that nobody else owns.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    base.fd.as_raw_fd(),
                    c.as_ptr(),
                    &how as *const libc::open_how,
                    std::mem::size_of::<libc::open_how>(),
                )
            };
            if fd >= 0 {
                // SAFETY: see above; the descriptor is ours alone.
                return Some(Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => continue,
                Some(libc::ENOSYS | libc::EPERM | libc::E2BIG) => {
                    UNAVAILABLE.store(true, Ordering::Relaxed);
                    return None;
                }
                Some(libc::EXDEV) if base.mode == Confine::Beneath => {
                    return Some(Err(OpenError::Escapes));
                }
                _ => return Some(Err(e.into())),
            }
        }
        Some(Err(std::io::Error::from_raw_os_error(libc::EAGAIN).into()))
    }

    fn unsafe_zeroed_how() -> libc::open_how {
        // SAFETY: open_how is three u64 fields; all-zero is its documented
        // "no flags, no mode, no resolve restrictions" value.
        unsafe { std::mem::zeroed() }
    }

    /// Resolve with O_PATH, check the type with fstat, then open for reading
    /// and check it is still the same regular file.
    pub(super) fn open_file(base: &Base, rel: &str) -> Option<Result<std::fs::File, OpenError>> {
        let probe = match open(base, rel, libc::O_PATH)? {
            Ok(fd) => fd,
            Err(e) => return Some(Err(e)),
        };
        let st = match fstat(probe.as_raw_fd()) {
            Ok(st) => st,
            Err(e) => return Some(Err(e.into())),
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Some(Err(super::not_regular(st.st_mode)));
        }
        let fd = match open(base, rel, super::FILE_FLAGS)? {
            Ok(fd) => fd,
            Err(e) => return Some(Err(e)),
        };
        Some(verify_regular(fd, Some(&st)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("sys/devices/pci0000:00/0000:3b:00.0")).unwrap();
        std::fs::create_dir_all(r.join("sys/bus/pci/devices")).unwrap();
        std::fs::create_dir_all(r.join("etc")).unwrap();
        std::fs::write(
            r.join("sys/devices/pci0000:00/0000:3b:00.0/vendor"),
            "0x10de\n",
        )
        .unwrap();
        std::fs::write(r.join("etc/hostname"), "inside\n").unwrap();
        symlink(
            "../../../devices/pci0000:00/0000:3b:00.0",
            r.join("sys/bus/pci/devices/0000:3b:00.0"),
        )
        .unwrap();
        symlink("/etc/hostname", r.join("abs")).unwrap();
        symlink("../../../../../../../../etc/hostname", r.join("sys/rel")).unwrap();
        symlink("loop", r.join("loop")).unwrap();
        d
    }

    fn check(base: &Base) {
        let read = |p: &str| {
            base.open_file(p)
                .and_then(|f| read_limited(f, 100))
                .map(|b| String::from_utf8(b).unwrap())
        };
        assert_eq!(
            read("/sys/bus/pci/devices/0000:3b:00.0/vendor").unwrap(),
            "0x10de\n"
        );
        assert_eq!(read("/abs").unwrap(), "inside\n");
        assert_eq!(read("/sys/rel").unwrap(), "inside\n");
        assert_eq!(read("/../../etc/hostname").unwrap(), "inside\n");
        assert!(
            matches!(read("/loop"), Err(OpenError::Io(e)) if e.raw_os_error() == Some(libc::ELOOP))
        );
        assert!(
            matches!(read("/sys"), Err(OpenError::Io(e)) if e.raw_os_error() == Some(libc::EISDIR))
        );
        assert!(
            matches!(read("/missing"), Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound)
        );
        assert_eq!(
            base.list_dir("/sys/bus/pci/devices/0000:3b:00.0").unwrap(),
            vec!["vendor".to_string()]
        );
        assert_eq!(
            base.read_link("/sys/bus/pci/devices/0000:3b:00.0").unwrap(),
            "../../../devices/pci0000:00/0000:3b:00.0"
        );
    }

    #[test]
    fn in_root_resolves_like_chroot_with_openat2_and_with_the_walk() {
        let d = tree();
        let base = Base::open(d.path(), Confine::InRoot).unwrap();
        check(&base);
        // The portable walk alone gives the same answers.
        for p in [
            "/abs",
            "/sys/rel",
            "/sys/bus/pci/devices/0000:3b:00.0/vendor",
        ] {
            let Walked::File(f) = base.walk(&relative(p), Want::File).ok().unwrap() else {
                panic!("{p}: not a file")
            };
            let s = String::from_utf8(read_limited(f, 100).unwrap()).unwrap();
            assert!(s == "inside\n" || s == "0x10de\n", "{p}: {s}");
        }
        assert!(matches!(
            base.walk("loop", Want::File),
            Err(OpenError::Io(e)) if e.raw_os_error() == Some(libc::ELOOP)
        ));
    }

    #[test]
    fn beneath_refuses_escapes() {
        let d = tree();
        let base = Base::open(&d.path().join("sys"), Confine::Beneath).unwrap();
        assert!(matches!(base.open_file("rel"), Err(OpenError::Escapes)));
        assert!(matches!(
            base.walk("rel", Want::File),
            Err(OpenError::Escapes)
        ));
        let top = Base::open(d.path(), Confine::Beneath).unwrap();
        assert!(matches!(top.open_file("abs"), Err(OpenError::Escapes)));
        assert!(matches!(
            top.walk("abs", Want::File),
            Err(OpenError::Escapes)
        ));
        assert!(
            top.open_file("sys/bus/pci/devices/0000:3b:00.0/vendor")
                .is_ok()
        );
    }

    #[test]
    fn only_regular_files_and_bounded_reads() {
        let d = tree();
        let fifo = cstr(d.path().join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        symlink("/dev/zero", d.path().join("zero")).unwrap();
        let base = Base::open(d.path(), Confine::InRoot).unwrap();
        assert!(matches!(
            base.open_file("/fifo"),
            Err(OpenError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            base.walk("fifo", Want::File),
            Err(OpenError::NotRegular("a FIFO"))
        ));
        // /dev/zero inside the root does not exist.
        assert!(matches!(base.open_file("/zero"), Err(OpenError::Io(_))));
        let slash = Base::open(Path::new("/"), Confine::InRoot).unwrap();
        assert!(matches!(
            slash.open_file("/dev/zero"),
            Err(OpenError::NotRegular("a character device"))
        ));
        let f = base.open_file("/etc/hostname").unwrap();
        assert!(matches!(read_limited(f, 3), Err(OpenError::TooLarge(3))));
    }
}
