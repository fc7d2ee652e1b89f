//! Text decoding shared by every reader of untrusted bytes (tool outputs,
//! config.json, snapshot manifests, registries): a leading UTF-8 byte-order
//! mark is not content. Windows editors and some vendor tools write one; left
//! in place it glues itself to the first key or header name (`\u{feff}GPU: 0`
//! is not `GPU: 0`) and `serde_json` refuses it outright.

use std::borrow::Cow;

/// The UTF-8 encoding of U+FEFF.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading UTF-8 byte-order mark.
pub fn strip_bom_bytes(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes)
}

/// `text` without a leading byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// `bytes` as text: invalid UTF-8 replaced by U+FFFD, a leading byte-order
/// mark removed. What every line-oriented tool-output parser starts from.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(strip_bom_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_dropped_once_and_only_at_the_start() {
        assert_eq!(decode(b"\xEF\xBB\xBFGPU: 0"), "GPU: 0");
        assert_eq!(decode(b"GPU: 0"), "GPU: 0");
        // Only one mark is a BOM; a second one is content.
        assert_eq!(decode(b"\xEF\xBB\xBF\xEF\xBB\xBFx"), "\u{feff}x");
        assert_eq!(strip_bom("a\u{feff}"), "a\u{feff}");
        assert_eq!(strip_bom_bytes(b"\xEF\xBB"), b"\xEF\xBB");
    }
}
