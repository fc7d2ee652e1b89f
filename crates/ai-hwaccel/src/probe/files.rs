//! Reading user-named files (model configs, checkpoints) for the planner.
//!
//! Unlike [`super::Probe`], which reads the machine under a root, these read
//! the paths the user gave, and never more than asked: a multi-gigabyte
//! checkpoint is opened for its header only.
//!
//! Only regular files are opened (a FIFO or device named `config.json` is an
//! error, never a hang), and a file the loader finds by itself inside a model
//! directory (a shard, `config.json`, a GGUF split) must resolve inside that
//! directory: [`within`] refuses one that a link leads elsewhere. The one
//! exception is the Hugging Face hub cache, whose `snapshots/REV/` files are
//! links into the same repository's `blobs/`: there the repository folder
//! (the parent of `snapshots/`) is the boundary.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::confine::{self, Base, Confine, OpenError};

fn open_err(e: OpenError) -> io::Error {
    match e {
        OpenError::Io(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

/// A regular file, opened once and read through its handle: what was
/// checked when it was opened (inside the model directory, a regular file,
/// its size) is what is read, even if the path is replaced afterwards.
#[derive(Debug)]
pub struct Opened {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Opened {
    /// Open a path the user named (links followed: the user chose it).
    pub fn open(path: &Path) -> io::Result<Opened> {
        let file = confine::open_regular(path).map_err(open_err)?;
        Opened::new(path.to_path_buf(), file)
    }

    fn new(path: PathBuf, file: File) -> io::Result<Opened> {
        let len = file.metadata()?.len();
        Ok(Opened { path, file, len })
    }

    /// The path it was opened by (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Up to `len` bytes starting at `offset` (fewer at the end of the file).
    pub fn read_range(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset))?;
        let mut out = Vec::new();
        f.take(len).read_to_end(&mut out)?;
        Ok(out)
    }

    /// The whole file as text, refusing files over `cap` bytes.
    pub fn read_text_capped(&self, cap: u64) -> io::Result<String> {
        let bytes = self.read_range(0, cap.saturating_add(1))?;
        if bytes.len() as u64 > cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("larger than {cap} bytes"),
            ));
        }
        String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// A buffered reader from the start of the file, for parsers that
    /// stream a header and bound what they read themselves.
    pub fn reader(&self) -> io::Result<BufReader<&File>> {
        let mut f = &self.file;
        f.seek(SeekFrom::Start(0))?;
        Ok(BufReader::new(f))
    }
}

/// `dir/name`, opened only if it resolves (following any links) to a
/// regular file inside `dir` — or, for a Hugging Face hub cache snapshot
/// (`…/models--X/snapshots/REV/`, beside a `blobs/` folder), inside the
/// repository folder `models--X`. The check is the open itself (resolved
/// beneath the directory), so a link swapped in later cannot redirect the
/// reads. A path leading elsewhere is an `InvalidData` error saying so; a
/// missing one is `NotFound`.
pub fn within(dir: &Path, name: &str) -> io::Result<Opened> {
    let check = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let (base, rel) = match hub_repo(check) {
        Some((repo, rel)) => (repo, format!("{rel}/{name}")),
        None => (check.to_path_buf(), name.to_string()),
    };
    let base = Base::open(&base, Confine::Beneath)?;
    match base.open_file(&rel) {
        Ok(f) => Opened::new(dir.join(name), f),
        Err(OpenError::Escapes) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "resolves outside the model directory {}; not read",
                dir.display()
            ),
        )),
        Err(e) => Err(open_err(e)),
    }
}

/// For `…/REPO/snapshots/REV` with a `REPO/blobs` folder: (`REPO`, `snapshots/REV`).
fn hub_repo(dir: &Path) -> Option<(PathBuf, String)> {
    let rev = dir.file_name()?.to_str()?;
    let snapshots = dir.parent()?;
    if snapshots.file_name()? != "snapshots" {
        return None;
    }
    let repo = snapshots.parent()?;
    matches!(path_kind(&repo.join("blobs")), Some(PathKind::Dir))
        .then(|| (repo.to_path_buf(), format!("snapshots/{rev}")))
}

/// What is at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// A regular file of this many bytes.
    File(u64),
    /// A directory.
    Dir,
    /// Something else (socket, device, …).
    Other,
}

/// What is at `path` (following symlinks); `None` when nothing is.
pub fn path_kind(path: &Path) -> Option<PathKind> {
    let m = std::fs::metadata(path).ok()?;
    Some(if m.is_file() {
        PathKind::File(m.len())
    } else if m.is_dir() {
        PathKind::Dir
    } else {
        PathKind::Other
    })
}

/// Names of the entries of a directory, sorted.
pub fn list_dir(path: &Path) -> io::Result<Vec<String>> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the planner's bounded file reader"
    )]
    let rd = std::fs::read_dir(path)?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_and_only_inside_the_model_directory() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        std::fs::create_dir(&m).unwrap();
        std::fs::write(dir.path().join("outside.json"), "{}").unwrap();
        std::os::unix::fs::symlink("../outside.json", m.join("config.json")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", m.join("abs.json")).unwrap();
        std::fs::write(m.join("ok.json"), "{}").unwrap();
        let e = within(&m, "config.json").unwrap_err();
        assert!(e.to_string().contains("outside the model directory"), "{e}");
        assert!(within(&m, "abs.json").is_err());
        assert_eq!(within(&m, "ok.json").unwrap().path(), m.join("ok.json"));
        assert_eq!(
            within(&m, "missing").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // The hub cache: snapshots/REV/x -> ../../blobs/H is inside the repo.
        let repo = dir.path().join("models--o--n");
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots/abc")).unwrap();
        std::fs::write(repo.join("blobs/h1"), "{}").unwrap();
        std::os::unix::fs::symlink("../../blobs/h1", repo.join("snapshots/abc/config.json"))
            .unwrap();
        let snap = repo.join("snapshots/abc");
        assert_eq!(
            within(&snap, "config.json").unwrap().path(),
            snap.join("config.json")
        );
        // What was checked is what is read: a link swapped in after the
        // open leads nowhere.
        let opened = within(&m, "ok.json").unwrap();
        std::fs::remove_file(m.join("ok.json")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", m.join("ok.json")).unwrap();
        assert_eq!(opened.read_text_capped(100).unwrap(), "{}");
        // FIFOs are refused, not waited on.
        let fifo = m.join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Opened::open(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = within(&m, "fifo.json").unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn bounded_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let f = Opened::open(&p).unwrap();
        assert_eq!(f.len(), 10);
        assert_eq!(f.read_range(2, 3).unwrap(), b"234");
        assert_eq!(f.read_range(8, 100).unwrap(), b"89");
        assert_eq!(f.read_text_capped(10).unwrap(), "0123456789");
        assert!(f.read_text_capped(9).is_err());
        let mut text = String::new();
        f.reader().unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "0123456789");
        assert_eq!(path_kind(&p), Some(PathKind::File(10)));
        assert_eq!(path_kind(dir.path()), Some(PathKind::Dir));
        assert_eq!(path_kind(&dir.path().join("missing")), None);
        assert_eq!(list_dir(dir.path()).unwrap(), vec!["f".to_string()]);
    }
}
