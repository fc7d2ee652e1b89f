//! Control-group limits (cgroup v1 and v2): memory limit and usage, CPU
//! quota, cpuset. The tightest limit on the path from the process's cgroup
//! to the root applies (a parent's limit binds its children).

use crate::model::CgroupLimits;
use crate::probe::{Probe, ProbeExt, join};

use super::sysfs::parse_cpulist;

/// Where each controller puts this process, from /proc/self/cgroup
/// (`ID:controllers:path`): `(controller list, path)` pairs. The v2 entry has
/// an empty controller list.
pub fn parse_cgroup_paths(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _id = it.next()?;
            let ctrl = it.next()?;
            let path = it.next()?.trim();
            path.starts_with('/')
                .then(|| (ctrl.to_string(), path.to_string()))
        })
        .collect()
}

/// cgroup v1 stores "no limit" as PAGE_COUNTER_MAX rounded to pages
/// (9223372036854771712 on 4 KiB pages); anything this large is unlimited.
const V1_UNLIMITED_FLOOR: u64 = 1 << 62;

/// `memory.max` (v2): `max` or bytes.
fn parse_v2_limit(s: &str) -> Option<u64> {
    let t = s.trim();
    if t == "max" { None } else { t.parse().ok() }
}

/// `cpu.max` (v2): `$MAX $PERIOD`, `max` meaning no limit. Returns CPUs.
pub(crate) fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    if quota == "max" || period <= 0.0 {
        return None;
    }
    let q: f64 = quota.parse().ok()?;
    (q > 0.0).then(|| q / period)
}

/// Ancestors of a cgroup path, leaf first: `/a/b` → `/a/b`, `/a`, `/`.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path.trim_end_matches('/').to_string();
    while !p.is_empty() {
        out.push(p.clone());
        match p.rfind('/') {
            Some(i) => p.truncate(i),
            None => break,
        }
    }
    out.push("/".to_string());
    out
}

/// The directories to read for one controller mounted at `mount`: the
/// process's cgroup and its ancestors. Inside a container without a cgroup
/// namespace the path is not under the mount; the mount itself is then the
/// container's cgroup.
fn dirs(probe: &dyn Probe, mount: &str, path: &str) -> Vec<String> {
    let all: Vec<String> = ancestors(path)
        .into_iter()
        .map(|p| {
            if p == "/" {
                mount.to_string()
            } else {
                format!("{mount}{p}")
            }
        })
        .collect();
    if probe.list_dir(&all[0]).is_ok() {
        all
    } else {
        vec![mount.to_string()]
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Read the limits of this process's cgroups. `None` when /proc/self/cgroup is absent.
pub(crate) fn detect_cgroup(probe: &dyn Probe, warnings: &mut Vec<String>) -> Option<CgroupLimits> {
    let text = probe.read_text("/proc/self/cgroup").ok()?;
    let paths = parse_cgroup_paths(&text);
    if paths.is_empty() {
        warnings.push("/proc/self/cgroup: no cgroup entries could be parsed".into());
        return None;
    }
    let v2 = probe.read("/sys/fs/cgroup/cgroup.controllers").is_ok();
    let find = |name: &str| {
        paths
            .iter()
            .find(|(c, _)| c.split(',').any(|x| x == name))
            .map(|(_, p)| p.as_str())
    };
    let mut lim = CgroupLimits::default();
    if v2 {
        let path = paths
            .iter()
            .find(|(c, _)| c.is_empty())
            .map_or("/", |(_, p)| p.as_str());
        lim.version = 2;
        lim.path = path.to_string();
        let ds = dirs(probe, "/sys/fs/cgroup", path);
        for d in &ds {
            if let Some(s) = probe.read_trimmed(&join(d, "memory.max")) {
                match (s.as_str(), parse_v2_limit(&s)) {
                    ("max", _) => {}
                    (_, Some(v)) => {
                        lim.memory_limit_bytes = min_opt(lim.memory_limit_bytes, Some(v))
                    }
                    (_, None) => warnings.push(format!("{d}/memory.max: cannot parse {s:?}")),
                }
            }
            if let Some(s) = probe.read_trimmed(&join(d, "cpu.max")) {
                if let Some(q) = parse_cpu_max(&s) {
                    lim.cpu_quota = Some(lim.cpu_quota.map_or(q, |x: f64| x.min(q)));
                }
            }
        }
        lim.memory_current_bytes = probe
            .read_trimmed(&join(&ds[0], "memory.current"))
            .and_then(|s| s.parse().ok());
        lim.cpuset_cpus = probe
            .read_trimmed(&join(&ds[0], "cpuset.cpus.effective"))
            .and_then(|s| parse_cpulist(&s));
    } else {
        lim.version = 1;
        let mem_path = find("memory");
        lim.path = mem_path.or(find("cpu")).unwrap_or("/").to_string();
        if let Some(p) = mem_path {
            let ds = dirs(probe, "/sys/fs/cgroup/memory", p);
            for d in &ds {
                if let Some(s) = probe.read_trimmed(&join(d, "memory.limit_in_bytes")) {
                    match s.parse::<u64>() {
                        Ok(v) if v >= V1_UNLIMITED_FLOOR => {}
                        Ok(v) => lim.memory_limit_bytes = min_opt(lim.memory_limit_bytes, Some(v)),
                        Err(_) => {
                            warnings.push(format!("{d}/memory.limit_in_bytes: cannot parse {s:?}"))
                        }
                    }
                }
            }
            lim.memory_current_bytes = probe
                .read_trimmed(&join(&ds[0], "memory.usage_in_bytes"))
                .and_then(|s| s.parse().ok());
        }
        if let Some(p) = find("cpu") {
            for d in dirs(probe, "/sys/fs/cgroup/cpu", p) {
                let quota = probe.read_trimmed(&join(&d, "cpu.cfs_quota_us"));
                let period = probe.read_trimmed(&join(&d, "cpu.cfs_period_us"));
                if let (Some(q), Some(per)) = (quota, period) {
                    if let Some(c) = parse_cpu_max(&format!("{q} {per}")).filter(|_| q != "-1") {
                        lim.cpu_quota = Some(lim.cpu_quota.map_or(c, |x: f64| x.min(c)));
                    }
                }
            }
        }
        if let Some(p) = find("cpuset") {
            let ds = dirs(probe, "/sys/fs/cgroup/cpuset", p);
            lim.cpuset_cpus = probe
                .read_trimmed(&join(&ds[0], "cpuset.effective_cpus"))
                .or_else(|| probe.read_trimmed(&join(&ds[0], "cpuset.cpus")))
                .and_then(|s| parse_cpulist(&s));
        }
    }
    Some(lim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_self_cgroup_v1_and_v2() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/a96\n1:cpu,cpuacct:/x\n0::/\n";
        let p = parse_cgroup_paths(v1);
        assert_eq!(p[1], ("memory".to_string(), "/process_api/a96".to_string()));
        assert_eq!(p[2].0, "cpu,cpuacct");
        assert_eq!(p[3], (String::new(), "/".to_string()));
        assert!(parse_cgroup_paths("garbage\n::\n").is_empty());
    }

    #[test]
    fn cpu_max_forms() {
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max("200000 100000"), Some(2.0));
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_cpu_max("x y"), None);
        assert_eq!(parse_cpu_max("-1 100000"), None);
        assert_eq!(parse_v2_limit("max"), None);
        assert_eq!(parse_v2_limit("4294967296\n"), Some(4 << 30));
    }

    #[test]
    fn ancestors_leaf_first() {
        assert_eq!(ancestors("/a/b"), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/"), ["/"]);
    }
}
