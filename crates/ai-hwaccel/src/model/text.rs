//! Text decoding shared by every reader of untrusted bytes (tool outputs,
//! config.json, snapshot manifests, registries): a leading UTF-8 byte-order
//! mark is not content. Windows editors and some vendor tools write one; left
//! in place it glues itself to the first key or header name (`\u{feff}GPU: 0`
//! is not `GPU: 0`) and `serde_json` refuses it outright.
//!
//! Text saved by Windows PowerShell 5.1's `>` or `Out-File` is UTF-16
//! little-endian with a byte-order mark (`FF FE`), its default "Unicode"
//! encoding: `vulkaninfo > vulkaninfo.txt` there gives such a file (a real one
//! is among the vulkaninfo captures). Read as UTF-8 every other byte is a NUL
//! and no parser finds a key, so [`decode`] reads UTF-16 too: by its mark
//! (`FF FE`, `FE FF`), or, without one, where text begins as ASCII in
//! UTF-16 does (a zero byte in every pair).

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
/// mark removed; UTF-16 text ([`utf16_order`]) decoded as such, unpaired
/// surrogates and an odd last byte replaced by U+FFFD. What every
/// line-oriented tool-output parser starts from.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match utf16_order(bytes) {
        Some((little, skip)) => Cow::Owned(decode_utf16(&bytes[skip..], little, true).0),
        None => String::from_utf8_lossy(strip_bom_bytes(bytes)),
    }
}

/// `bytes` as UTF-8 bytes for a parser that takes bytes (`serde_json::
/// from_slice`): UTF-16 text ([`utf16_order`]) re-encoded, else `bytes`
/// without a leading UTF-8 byte-order mark.
pub fn utf8_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match utf16_order(bytes) {
        Some((little, skip)) => {
            Cow::Owned(decode_utf16(&bytes[skip..], little, true).0.into_bytes())
        }
        None => Cow::Borrowed(strip_bom_bytes(bytes)),
    }
}

/// As [`decode`], but text that is not valid UTF-8 or UTF-16 is an error
/// saying where it goes wrong (a registry or other file that must be read
/// exactly).
pub fn decode_strict(bytes: &[u8]) -> Result<Cow<'_, str>, String> {
    match utf16_order(bytes) {
        Some((little, skip)) => {
            let (text, bad) = decode_utf16(&bytes[skip..], little, false);
            match bad {
                Some(at) => Err(format!(
                    "not UTF-16 text: an invalid code unit at byte {}",
                    at + skip
                )),
                None => Ok(Cow::Owned(text)),
            }
        }
        None => std::str::from_utf8(strip_bom_bytes(bytes))
            .map(Cow::Borrowed)
            .map_err(|e| format!("not UTF-8 text: {e}")),
    }
}

/// Whether `bytes` is UTF-16 text, and in which byte order (`true`: little
/// endian), with the length of its byte-order mark: `FF FE` or `FE FF`; or,
/// without a mark, a start whose every pair of bytes has one zero byte, on
/// the same side each time, and one non-zero (ASCII text in UTF-16; UTF-8
/// text has no zero bytes). At least four pairs are looked at, at most 256.
pub fn utf16_order(bytes: &[u8]) -> Option<(bool, usize)> {
    match bytes {
        [0xFF, 0xFE, ..] => Some((true, 2)),
        [0xFE, 0xFF, ..] => Some((false, 2)),
        _ => {
            let pairs: Vec<&[u8]> = bytes.chunks_exact(2).take(256).collect();
            if pairs.len() < 4 {
                return None;
            }
            if pairs.iter().all(|p| p[0] != 0 && p[1] == 0) {
                Some((true, 0))
            } else if pairs.iter().all(|p| p[0] == 0 && p[1] != 0) {
                Some((false, 0))
            } else {
                None
            }
        }
    }
}

/// UTF-16 code units to text; with `lossy`, each invalid unit (and an odd
/// last byte) becomes U+FFFD, else decoding stops at the first and returns
/// its byte offset.
fn decode_utf16(bytes: &[u8], little: bool, lossy: bool) -> (String, Option<usize>) {
    let units = bytes.chunks_exact(2).map(|p| {
        if little {
            u16::from_le_bytes([p[0], p[1]])
        } else {
            u16::from_be_bytes([p[0], p[1]])
        }
    });
    let mut out = String::with_capacity(bytes.len() / 2);
    let mut at = 0usize;
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => {
                at += 2 * c.len_utf16();
                out.push(c);
            }
            Err(_) if lossy => {
                at += 2;
                out.push(char::REPLACEMENT_CHARACTER);
            }
            Err(_) => return (out, Some(at)),
        }
    }
    if bytes.len() % 2 == 1 {
        if !lossy {
            return (out, Some(bytes.len() - 1));
        }
        out.push(char::REPLACEMENT_CHARACTER);
    }
    (out, None)
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

    fn utf16(text: &str, little: bool) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| {
                if little {
                    u.to_le_bytes()
                } else {
                    u.to_be_bytes()
                }
            })
            .collect()
    }

    /// Windows PowerShell 5.1's `>` writes UTF-16LE with a mark; other
    /// tools write it without, or big-endian.
    #[test]
    fn utf16_text_is_read_by_its_mark_or_its_zero_bytes() {
        let text = "GPU0:\r\n\tdeviceName = Intel(R) Iris(R) Xe Graphics µ\r\n";
        for little in [true, false] {
            let mark: &[u8] = if little { b"\xFF\xFE" } else { b"\xFE\xFF" };
            let marked = [mark, &utf16(text, little)].concat();
            assert_eq!(decode(&marked), text);
            assert_eq!(decode_strict(&marked).unwrap(), text);
            // No mark: the zero bytes say it.
            assert_eq!(decode(&utf16(text, little)), text);
        }
        // An unpaired surrogate and an odd last byte: replaced, or an
        // error at their offset.
        let mut bad = b"\xFF\xFE".to_vec();
        bad.extend(utf16("ab", true));
        bad.extend([0x00, 0xD8]);
        bad.extend(utf16("c", true));
        assert_eq!(decode(&bad), "ab\u{fffd}c");
        assert_eq!(
            decode_strict(&bad).unwrap_err(),
            "not UTF-16 text: an invalid code unit at byte 6"
        );
        let mut odd = b"\xFF\xFE".to_vec();
        odd.extend(utf16("ab", true));
        odd.push(b'x');
        assert_eq!(decode(&odd), "ab\u{fffd}");
        assert!(decode_strict(&odd).is_err());
        // UTF-8 stays UTF-8: short text, text with a NUL, binary-looking
        // bytes, and invalid UTF-8 (lossy; strict names it).
        assert_eq!(decode(b"a\0b\0"), "a\0b\0");
        assert_eq!(decode(b"GPU0:\0\0\0\0\0\0"), "GPU0:\0\0\0\0\0\0");
        assert_eq!(decode(b"ab\xFFcd"), "ab\u{fffd}cd");
        assert!(
            decode_strict(b"ab\xFFcd")
                .unwrap_err()
                .starts_with("not UTF-8 text")
        );
        assert_eq!(decode_strict(b"\xEF\xBB\xBF{}").unwrap(), "{}");
    }
}
