//! `include/ai_hwaccel.h` is what cbindgen generates from `src/lib.rs` now;
//! run with `AI_HWACCEL_BLESS=1` to rewrite it.

#![allow(
    clippy::disallowed_methods,
    reason = "a test reading and writing the crate's own header, not machine probing"
)]

#[test]
fn header_is_current() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/ai_hwaccel.h");
    if std::env::var_os("AI_HWACCEL_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: regenerate it with `AI_HWACCEL_BLESS=1 cargo test -p ai-hwaccel-c --test header`",
        path.display()
    );
}
