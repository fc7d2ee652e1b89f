//! Fuzzes the price-file reader of `plan --cloud --price-file FILE`, TOML
//! and CSV (a user's file: untrusted).
#![no_main]

use ai_hwaccel::plan::cost::{PriceFormat, parse_price_file};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for f in [PriceFormat::Toml, PriceFormat::Csv] {
            let _ = parse_price_file(text, f);
        }
    }
});
