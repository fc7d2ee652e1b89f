//! The detection cache: a hit while nothing changed, a miss naming the input
//! that changed (boot id, PCI functions, driver version, visibility
//! variable, options, age), hostile cache files ignored, and the in-process
//! handle sharing one `Arc`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests build fake roots and cache files"
)]

mod support;
use support::FakePci;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ai_hwaccel::{
    BackendSet, CacheOptions, CachedRegistry, DetectOptions, ProbeOptions, Registry, detect_cached,
};

struct Fake {
    root: tempfile::TempDir,
    bin: tempfile::TempDir,
    cache: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

const BOOT_A: &str = "3e880032-36e8-4e08-94c0-15a67cf87fb9\n";
const BOOT_B: &str = "9a1b2c3d-0000-4e08-94c0-15a67cf87fb9\n";

impl Fake {
    fn new() -> Self {
        let f = Fake {
            root: tempfile::tempdir().unwrap(),
            bin: tempfile::tempdir().unwrap(),
            cache: tempfile::tempdir().unwrap(),
            env: BTreeMap::new(),
        };
        f.write("proc/sys/kernel/random/boot_id", BOOT_A);
        f.write("sys/module/nvidia/version", "550.54.15\n");
        f.write(
            "proc/meminfo",
            "MemTotal:       16384000 kB\nMemAvailable:    8192000 kB\n",
        );
        f.gpu("0000:3b:00.0");
        f
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.root.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn gpu(&self, addr: &str) {
        FakePci {
            vendor: "10de",
            device: "2331",
            class: "030200",
            driver: Some("nvidia"),
            numa: None,
            link: false,
        }
        .write(self.root.path(), addr);
    }

    fn probe(&self) -> ProbeOptions {
        ProbeOptions {
            root: self.root.path().to_path_buf(),
            tool_path: Some(vec![self.bin.path().to_path_buf()]),
            env: Some(self.env.clone()),
            ..ProbeOptions::default()
        }
    }

    fn cache_opts(&self) -> CacheOptions {
        CacheOptions {
            dir: Some(self.cache_dir()),
            ..CacheOptions::default()
        }
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache.path().join("ai-hwaccel")
    }

    fn detect(&self) -> Registry {
        detect_cached(&self.probe(), &DetectOptions::default(), &self.cache_opts())
    }

    /// The one cache file written so far.
    fn cache_file(&self) -> PathBuf {
        let files: Vec<_> = std::fs::read_dir(self.cache_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }
}

fn hit(r: &Registry) -> bool {
    r.cache.as_ref().expect("cache info").hit
}

fn reason(r: &Registry) -> String {
    r.cache
        .as_ref()
        .and_then(|c| c.stale_reason.clone())
        .unwrap_or_default()
}

#[test]
fn miss_then_hit_with_the_same_devices_and_an_age() {
    let f = Fake::new();
    let first = f.detect();
    assert!(!hit(&first));
    assert_eq!(reason(&first), "no cached registry");
    assert!(first.device("pci:0000:3b:00.0").is_some());
    let second = f.detect();
    assert!(hit(&second), "{:?}", second.cache);
    let info = second.cache.clone().unwrap();
    assert!(info.age_seconds >= 0.0 && info.age_seconds < 600.0);
    assert_eq!(
        info.cached_at_unix_ms,
        first.cache.as_ref().unwrap().cached_at_unix_ms
    );
    assert!(
        info.dynamic_fields
            .iter()
            .any(|f| f == "devices[].memory_free_bytes")
    );
    let strip = |r: &Registry| Registry {
        cache: None,
        ..r.without_timings()
    };
    assert_eq!(strip(&first), strip(&second));
    // The JSON form carries the new object; the rest reads back unchanged.
    let v: serde_json::Value = serde_json::from_str(&second.to_json_pretty()).unwrap();
    assert_eq!(v["cache"]["hit"], true);
    assert_eq!(
        Registry::from_json(&second.to_json_pretty()).unwrap(),
        second
    );
}

/// Detect (miss), change one input with `change`, and expect the next call
/// to miss with `why`, then hit again.
fn invalidated_by(change: impl FnOnce(&mut Fake), why: &str) {
    let mut f = Fake::new();
    f.detect();
    assert!(hit(&f.detect()), "hit before the change");
    change(&mut f);
    let r = f.detect();
    assert!(!hit(&r), "{why}: still a hit");
    assert_eq!(reason(&r), why);
    assert!(hit(&f.detect()), "{why}: hit again after re-detecting");
}

#[test]
fn reboot_invalidates() {
    invalidated_by(
        |f| f.write("proc/sys/kernel/random/boot_id", BOOT_B),
        "boot id changed",
    );
}

#[test]
fn new_pci_function_invalidates() {
    invalidated_by(
        |f| f.gpu("0000:5e:00.0"),
        "PCI functions or bound drivers changed",
    );
}

#[test]
fn rebound_driver_invalidates() {
    invalidated_by(
        |f| {
            let link = f
                .root
                .path()
                .join("sys/devices/pci0000:00/0000:3b:00.0/driver");
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink("../../../../bus/pci/drivers/vfio-pci", link).unwrap();
        },
        "PCI functions or bound drivers changed",
    );
}

#[test]
fn driver_upgrade_invalidates() {
    invalidated_by(
        |f| f.write("sys/module/nvidia/version", "560.35.03\n"),
        "driver version changed",
    );
}

#[test]
fn visibility_variable_invalidates() {
    invalidated_by(
        |f| {
            f.env.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
        },
        "environment (visibility variables or PATH) changed",
    );
    invalidated_by(
        |f| {
            f.env.insert("ZE_AFFINITY_MASK".into(), "0.0".into());
        },
        "environment (visibility variables or PATH) changed",
    );
}

#[test]
fn options_have_their_own_file() {
    let f = Fake::new();
    f.detect();
    let only = DetectOptions {
        backends: BackendSet::parse("system,pci").unwrap(),
        ..Default::default()
    };
    let r = detect_cached(&f.probe(), &only, &f.cache_opts());
    assert!(
        !hit(&r),
        "another options set is not served the first one's registry"
    );
    assert!(hit(&detect_cached(&f.probe(), &only, &f.cache_opts())));
    assert!(hit(&f.detect()), "the first file is still there");
}

#[test]
fn max_age_and_refresh_re_detect() {
    let f = Fake::new();
    f.detect();
    let old = CacheOptions {
        max_age: Some(Duration::ZERO),
        ..f.cache_opts()
    };
    std::thread::sleep(Duration::from_millis(5));
    let r = detect_cached(&f.probe(), &DetectOptions::default(), &old);
    assert_eq!(reason(&r), "older than the maximum age");
    let refresh = CacheOptions {
        refresh: true,
        ..f.cache_opts()
    };
    let r = detect_cached(&f.probe(), &DetectOptions::default(), &refresh);
    assert_eq!(reason(&r), "refresh asked");
}

/// Replace the cache file with `bytes` and expect a miss that names the
/// file as invalid (or unreadable), then a good file again.
fn hostile(f: &Fake, path: &Path, bytes: &[u8], why: &str) {
    std::fs::remove_file(path).ok();
    std::fs::write(path, bytes).unwrap();
    let r = f.detect();
    assert!(!hit(&r), "{why}: trusted");
    assert!(reason(&r).contains(why), "{why}: {}", reason(&r));
    assert!(r.device("pci:0000:3b:00.0").is_some());
    assert!(hit(&f.detect()), "{why}: rewritten");
}

#[test]
fn hostile_cache_files_are_ignored() {
    let f = Fake::new();
    f.detect();
    let path = f.cache_file();
    let good = std::fs::read(&path).unwrap();
    hostile(&f, &path, b"", "not a valid cache");
    hostile(&f, &path, b"{\"format\":1", "not a valid cache");
    hostile(&f, &path, &good[..good.len() / 2], "not a valid cache");
    hostile(&f, &path, &[0xff; 4096], "not a valid cache");
    // A valid file whose fingerprint was forged for another machine: the
    // fingerprint is read again, never taken from the file.
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["fingerprint"]["boot_id"] = "forged".into();
    v["registry"]["devices"] = serde_json::json!([]);
    hostile(
        &f,
        &path,
        &serde_json::to_vec(&v).unwrap(),
        "boot id changed",
    );
    // A newer format or registry schema.
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["format"] = 99.into();
    hostile(&f, &path, &serde_json::to_vec(&v).unwrap(), "format 99");
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["registry"]["schema_version"] = 2.into();
    hostile(
        &f,
        &path,
        &serde_json::to_vec(&v).unwrap(),
        "another schema version",
    );
    // Too many environment names to re-read.
    let mut v: serde_json::Value = serde_json::from_slice(&good).unwrap();
    v["env_names"] = (0..1000).map(|i| format!("V{i}")).collect();
    hostile(
        &f,
        &path,
        &serde_json::to_vec(&v).unwrap(),
        "too many environment variables",
    );
    // Larger than the cap: refused before parsing.
    let big = vec![b' '; (ai_hwaccel::cache::MAX_CACHE_FILE_BYTES + 1) as usize];
    hostile(&f, &path, &big, "cap");
    // A symbolic link planted under the cache name is not followed.
    let secret = f.cache.path().join("secret.json");
    std::fs::write(&secret, &good).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&secret, &path).unwrap();
    let r = f.detect();
    assert!(!hit(&r));
    assert!(reason(&r).contains("unreadable"), "{}", reason(&r));
    assert!(
        std::fs::symlink_metadata(&path).unwrap().is_file(),
        "replaced by a regular file, not written through the link"
    );
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        good,
        "link target untouched"
    );
}

#[test]
fn cached_registry_shares_one_arc_until_something_changes() {
    let f = Fake::new();
    let c = CachedRegistry::new(f.probe(), DetectOptions::default(), f.cache_opts());
    let a = c.get();
    let b = c.get();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(c.cache_path().unwrap().is_file());
    f.write("proc/sys/kernel/random/boot_id", BOOT_B);
    let d = c.get();
    assert!(!Arc::ptr_eq(&a, &d));
    assert_eq!(reason(&d), "boot id changed");
    c.invalidate();
    assert!(!c.cache_path().unwrap().exists());
    let e = c.get();
    assert_eq!(reason(&e), "no cached registry");
}
