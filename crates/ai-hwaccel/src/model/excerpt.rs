//! Short, printable excerpts of untrusted text for warnings: a warning quotes
//! at most a few dozen characters of the content it complains about, never a
//! whole file (a sysfs attribute linked to `/dev/zero` once put hundreds of
//! megabytes into one warning).

/// Characters a warning quotes from bad content by default.
pub const EXCERPT_CHARS: usize = 40;

/// At most `max_chars` characters of `text` (trimmed), Debug-quoted so that
/// control characters are escaped, with `…` and the total length appended
/// when it was cut: `excerpt("0xzz", 40)` is `"0xzz"` (with the quotes).
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let t = text.trim();
    let mut chars = t.char_indices();
    match chars.nth(max_chars) {
        None => format!("{t:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &t[..cut], t.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole_and_long_text_is_cut() {
        assert_eq!(excerpt(" 0xzz\n", 40), "\"0xzz\"");
        assert_eq!(excerpt("abcdef", 3), "\"abc\"… (6 bytes)");
        assert_eq!(excerpt("\0\0\0\0", 2), "\"\\0\\0\"… (4 bytes)");
        assert_eq!(excerpt("ééé", 2), "\"éé\"… (6 bytes)");
        let huge = "x".repeat(1 << 20);
        assert!(excerpt(&huge, EXCERPT_CHARS).len() < 80);
    }
}
