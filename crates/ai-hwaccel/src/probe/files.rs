//! Reading user-named files (model configs, checkpoints) for the planner.
//!
//! Unlike [`super::Probe`], which reads the machine under a root, these read
//! the paths the user gave, and never more than asked: a multi-gigabyte
//! checkpoint is opened for its header only.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

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

/// The whole file as text, refusing files over `cap` bytes.
pub fn read_text_capped(path: &Path, cap: u64) -> io::Result<String> {
    let bytes = read_range(path, 0, cap.saturating_add(1))?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {cap} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Up to `len` bytes starting at `offset` (fewer at the end of the file).
pub fn read_range(path: &Path, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the planner's bounded file reader"
    )]
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut out = Vec::new();
    f.take(len).read_to_end(&mut out)?;
    Ok(out)
}

/// A buffered reader over the file, for parsers that stream a header and
/// bound what they read themselves.
pub fn open_reader(path: &Path) -> io::Result<BufReader<File>> {
    #[allow(
        clippy::disallowed_methods,
        reason = "the planner's bounded file reader"
    )]
    let f = File::open(path)?;
    Ok(BufReader::new(f))
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
    fn bounded_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_range(&p, 2, 3).unwrap(), b"234");
        assert_eq!(read_range(&p, 8, 100).unwrap(), b"89");
        assert_eq!(read_text_capped(&p, 10).unwrap(), "0123456789");
        assert!(read_text_capped(&p, 9).is_err());
        assert_eq!(path_kind(&p), Some(PathKind::File(10)));
        assert_eq!(path_kind(dir.path()), Some(PathKind::Dir));
        assert_eq!(path_kind(&dir.path().join("missing")), None);
        assert_eq!(list_dir(dir.path()).unwrap(), vec!["f".to_string()]);
    }
}
