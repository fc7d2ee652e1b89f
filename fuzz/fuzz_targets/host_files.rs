//! Fuzzes the readers of the host's kernel files, which a fake root
//! (`detect --root`) or a snapshot supplies: `/proc/cpuinfo`,
//! `/proc/meminfo`, `/proc/self/cgroup`, and macOS `sysctl` output.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = ai_hwaccel::detect::parse_cpuinfo(&text);
    let _ = ai_hwaccel::detect::parse_meminfo(&text);
    let _ = ai_hwaccel::detect::parse_cgroup_paths(&text);
    let _ = ai_hwaccel::detect::parse_macos_sysctl(&text, &mut Vec::new());
    let _ = ai_hwaccel::detect::parse_ibstat(&text);
});
