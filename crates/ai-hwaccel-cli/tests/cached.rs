//! `detect --cached` end to end: the first run detects and stores, the
//! second is served from `$XDG_CACHE_HOME/ai-hwaccel`; `--full` and
//! `--backends` are accepted together only one at a time.
#![allow(clippy::disallowed_methods, reason = "tests run the binary")]

use std::process::Command;

fn run(xdg: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ai-hwaccel"))
        .args(args)
        .env("XDG_CACHE_HOME", xdg)
        .output()
        .unwrap()
}

#[test]
fn cached_detect_stores_then_hits() {
    let xdg = tempfile::tempdir().unwrap();
    let json = |o: std::process::Output| -> serde_json::Value {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let args = ["detect", "--json", "--cached", "--no-exec"];
    let first = json(run(xdg.path(), &args));
    assert_eq!(first["cache"]["hit"], false);
    assert_eq!(first["cache"]["stale_reason"], "no cached registry");
    let second = json(run(xdg.path(), &args));
    assert_eq!(second["cache"]["hit"], true);
    assert_eq!(first["devices"], second["devices"]);
    assert!(xdg.path().join("ai-hwaccel").is_dir());
    // Without --cached nothing says "cache".
    let plain = json(run(xdg.path(), &["detect", "--json", "--no-exec"]));
    assert!(plain.get("cache").is_none());
    // --full conflicts with --backends.
    let o = run(xdg.path(), &["detect", "--full", "--backends", "system"]);
    assert_eq!(o.status.code(), Some(2));
}
