//! Files the user names on the command line (a tool capture for `parse`, a
//! runtime log for `check`, a saved registry), read the way the library
//! reads model files: only a regular file is opened (a FIFO or a device is
//! an error, never a wait), through the handle that was checked, and never
//! more than a stated size. `-` is standard input, under the same bound.

use std::io::Read;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// The most a named input is read: tool captures and logs are kilobytes to
/// megabytes; a larger file is refused, not truncated.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The whole of `path` (or standard input for `-`), at most `cap` bytes:
/// a larger input is an error.
pub fn read_input(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let bytes = read_prefix(path, cap)?;
    if bytes.len() as u64 > cap {
        let name = if path.as_os_str() == "-" {
            "standard input".to_string()
        } else {
            path.display().to_string()
        };
        bail!("{name}: larger than {cap} bytes; not read");
    }
    Ok(bytes)
}

/// The first `cap` bytes of `path` (or standard input), and one more when
/// there are more: for logs whose start is what is read.
pub fn read_prefix(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .lock()
            .take(cap.saturating_add(1))
            .read_to_end(&mut b)
            .context("reading standard input")?;
        b
    } else {
        let f = ai_hwaccel::probe::files::Opened::open(path)
            .with_context(|| path.display().to_string())?;
        f.read_range(0, cap.saturating_add(1))
            .with_context(|| path.display().to_string())?
    };
    Ok(bytes)
}
