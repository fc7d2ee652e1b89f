//! Storage: the host's block devices (`/sys/block`) and the filesystem that
//! holds the model cache (`/proc/self/mountinfo`). The mountinfo reader
//! ([`filesystem_of`]) and the block-device classifiers are pure functions;
//! [`detect_storage`] and [`model_cache_filesystem`] glue the probe to them.
//!
//! Kernel ABI: `Documentation/ABI/stable/sysfs-block` (`queue/rotational`,
//! `removable`, `size`; sizes count 512-byte sectors whatever the logical
//! block size, see `Documentation/block/stat.rst` and `SECTOR_SHIFT` in
//! `include/linux/blk_types.h`), `Documentation/ABI/testing/sysfs-bus-pci`
//! (`numa_node`), and proc(5) for `/proc/self/mountinfo`.

use crate::model::{BlockDevice, FilesystemInfo, PciAddress, PciPath, StorageInfo};
use crate::probe::{Probe, ProbeExt, join};

use super::net::read_numa;
use super::pci::pci_address_in_path;
use super::pci::read_parsed;

const BLOCK_DIR: &str = "/sys/block";
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// `/sys/block/<disk>/size` counts sectors of this many bytes, always.
const SECTOR_BYTES: u64 = 512;

/// Block devices left out, by name prefix, and why: none of them is a disk
/// that holds data of its own, and listing the stacked ones (dm, md) would
/// count the disks under them twice.
pub const SKIPPED_BLOCK_PREFIXES: &[(&str, &str)] = &[
    ("loop", "file-backed loop device (snaps, images)"),
    ("ram", "RAM disk"),
    ("zram", "compressed RAM swap"),
    (
        "dm-",
        "device-mapper volume stacked on other disks (LVM, crypt)",
    ),
    ("md", "software RAID stacked on other disks"),
    ("sr", "optical drive"),
    ("fd", "floppy drive"),
    (
        "nbd",
        "network block device, a client of another machine's disk",
    ),
];

/// Filesystem types whose data lives on another machine. `9p` and
/// `virtiofs` are not here: they share the VM host's directories (WSL2's
/// `/mnt/c`, QEMU shares) over a virtual transport, so they are local to
/// the machine, if slow.
pub const NETWORK_FS_TYPES: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "lustre",
    "gpfs",
    "beegfs",
    "ceph",
    "fuse.ceph-fuse",
    "glusterfs",
    "fuse.glusterfs",
    "fuse.sshfs",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "fuse.juicefs",
    "fuse.rclone",
    "wekafs",
    "afs",
    "orangefs",
];

/// Most symbolic links followed while resolving a path (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// Block devices and the model cache filesystem of the host.
pub(crate) fn detect_storage(probe: &dyn Probe, warnings: &mut Vec<String>) -> StorageInfo {
    StorageInfo {
        block_devices: detect_block_devices(probe, warnings),
        model_cache: cache_filesystem(probe, None, warnings),
    }
}

/// Whether a `/sys/block` entry is left out (see [`SKIPPED_BLOCK_PREFIXES`]).
pub fn is_skipped_block_device(name: &str) -> bool {
    SKIPPED_BLOCK_PREFIXES
        .iter()
        .any(|(p, _)| name.starts_with(p))
}

/// The kind of a block device, in this order: `nvme` (name `nvme*`, which
/// includes cloud block volumes exposed as NVMe, such as AWS EBS on Nitro:
/// `model` tells them apart); `virtual` (virtio `vd*`, Xen `xvd*`, the
/// `virtio_blk` driver, or a sysfs path through a `virtio*` device, such as
/// a virtio-scsi disk, or through Hyper-V's `VMBUS`, such as an Azure OS
/// disk; their `rotational` flag means nothing); then `queue/rotational`:
/// `hdd` (true), `ssd` (false); else `unknown`.
pub fn block_kind(
    name: &str,
    driver: Option<&str>,
    sysfs_path: Option<&str>,
    rotational: Option<bool>,
) -> &'static str {
    let through_virtio = sysfs_path.is_some_and(|p| {
        p.split('/')
            .any(|c| c.starts_with("virtio") || c.starts_with("VMBUS"))
    });
    if name.starts_with("nvme") {
        "nvme"
    } else if name.starts_with("vd")
        || name.starts_with("xvd")
        || driver == Some("virtio_blk")
        || through_virtio
    {
        "virtual"
    } else {
        match rotational {
            Some(true) => "hdd",
            Some(false) => "ssd",
            None => "unknown",
        }
    }
}

fn detect_block_devices(probe: &dyn Probe, warnings: &mut Vec<String>) -> Vec<BlockDevice> {
    let names = match probe.list_dir(BLOCK_DIR) {
        Ok(n) => n,
        Err(e) if e.is_absent() => return Vec::new(),
        Err(e) => {
            warnings.push(e.to_string());
            return Vec::new();
        }
    };
    let mut out: Vec<BlockDevice> = names
        .into_iter()
        .filter(|n| !is_skipped_block_device(n))
        .map(|n| read_block_device(probe, &n, warnings))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn read_flag(probe: &dyn Probe, path: &str, warnings: &mut Vec<String>) -> Option<bool> {
    read_parsed(probe, path, "0 or 1", warnings, |s| match s {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    })
}

fn read_block_device(probe: &dyn Probe, name: &str, warnings: &mut Vec<String>) -> BlockDevice {
    let dir = join(BLOCK_DIR, name);
    let link = probe.read_link(&dir).ok();
    let pci_address = block_pci_address(probe, &dir, link.as_deref());
    let rotational = read_flag(probe, &format!("{dir}/queue/rotational"), warnings);
    let driver = probe.link_name(&format!("{dir}/device/driver"));
    let kind = block_kind(name, driver.as_deref(), link.as_deref(), rotational);
    BlockDevice {
        name: name.to_string(),
        kind: kind.to_string(),
        size_bytes: read_parsed(
            probe,
            &join(&dir, "size"),
            "a sector count",
            warnings,
            |s| s.parse::<u64>().ok(),
        )
        .and_then(|sectors| sectors.checked_mul(SECTOR_BYTES)),
        model: probe.read_trimmed(&format!("{dir}/device/model")),
        rotational,
        removable: read_flag(probe, &join(&dir, "removable"), warnings),
        pci_address,
        numa_node: pci_address.and_then(|a| {
            read_numa(
                probe,
                &format!("/sys/bus/pci/devices/{a}/numa_node"),
                warnings,
            )
        }),
    }
}

/// The PCI controller of a disk: from the `/sys/block/<disk>` link target
/// (`../devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1`);
/// for an NVMe multipath head (`../devices/virtual/nvme-subsystem/…`), from
/// the first path under `multipath/`; else from the `device` link.
fn block_pci_address(probe: &dyn Probe, dir: &str, link: Option<&str>) -> Option<PciAddress> {
    let from = |t: &str| PciPath::from_sysfs(t).map(|(_, a)| a);
    link.and_then(from)
        .or_else(|| {
            let mp = join(dir, "multipath");
            probe
                .list_or_empty(&mp)
                .first()
                .and_then(|p| probe.read_link(&join(&mp, p)).ok())
                .and_then(|t| from(&t))
        })
        .or_else(|| {
            probe
                .read_link(&join(dir, "device"))
                .ok()
                .and_then(|t| pci_address_in_path(&t))
        })
}

/// The model cache directory the environment names, as huggingface_hub
/// resolves it: `HF_HUB_CACHE` (or its older name `HUGGINGFACE_HUB_CACHE`),
/// else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
/// `$HOME/.cache/huggingface/hub`. Empty variables count as unset; a
/// leading `~/` is expanded with `HOME`. `None` when none is set.
pub fn model_cache_dir(probe: &dyn Probe) -> Option<String> {
    let var = |n: &str| probe.env(n).filter(|v| !v.is_empty());
    let home = var("HOME");
    let expand = |p: String| match (p.strip_prefix("~/"), &home) {
        (Some(rest), Some(h)) => format!("{}/{rest}", h.trim_end_matches('/')),
        _ => p,
    };
    let dir = var("HF_HUB_CACHE")
        .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
        .map(&expand)
        .or_else(|| var("HF_HOME").map(|h| format!("{}/hub", expand(h))))
        .or_else(|| var("XDG_CACHE_HOME").map(|x| format!("{}/huggingface/hub", expand(x))))
        .or_else(|| {
            home.as_ref()
                .map(|h| format!("{}/.cache/huggingface/hub", h.trim_end_matches('/')))
        })?;
    Some(dir)
}

/// The filesystem holding the model cache: `path` when given (the CLI's
/// `--cache-dir`), else the directory the environment names (see
/// [`model_cache_dir`]). A relative path is taken from the probed process's
/// working directory (`/proc/self/cwd`, else `PWD`); symbolic links along the
/// path are followed through the probe, so a cache linked onto a network
/// mount is reported as that mount. The directory need not exist yet.
/// `None` when no directory is known or `/proc/self/mountinfo` cannot be read.
pub fn model_cache_filesystem(probe: &dyn Probe, path: Option<&str>) -> Option<FilesystemInfo> {
    cache_filesystem(probe, path, &mut Vec::new())
}

fn cache_filesystem(
    probe: &dyn Probe,
    path: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<FilesystemInfo> {
    let asked = match path {
        Some(p) => p.to_string(),
        None => model_cache_dir(probe)?,
    };
    let absolute = if asked.starts_with('/') {
        asked.clone()
    } else {
        let cwd = probe
            .read_link("/proc/self/cwd")
            .ok()
            .or_else(|| probe.env("PWD"))
            .filter(|c| c.starts_with('/'))?;
        format!("{}/{asked}", cwd.trim_end_matches('/'))
    };
    let resolved = resolve_symlinks(probe, &absolute);
    let mountinfo = match probe.read_text(MOUNTINFO) {
        Ok(t) => t,
        Err(e) if e.is_absent() => return None,
        Err(e) => {
            warnings.push(e.to_string());
            return None;
        }
    };
    let Some(mut fs) = filesystem_of(&mountinfo, &resolved) else {
        warnings.push(format!("{MOUNTINFO}: no mount holds {resolved:?}"));
        return None;
    };
    fs.path = asked;
    Some(fs)
}

/// `path` with `.`, `..` and empty components folded, following symbolic
/// links component by component through the probe (at most
/// [`MAX_SYMLINKS`]); components that do not exist are kept as written.
fn resolve_symlinks(probe: &dyn Probe, path: &str) -> String {
    let mut done: Vec<String> = Vec::new();
    let mut todo: Vec<String> = path
        .split('/')
        .rev()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                done.pop();
                continue;
            }
            _ => {}
        }
        let candidate = format!("/{}/{c}", done.join("/"));
        let candidate = candidate.replace("//", "/");
        match probe.read_link(&candidate) {
            Ok(target) if links < MAX_SYMLINKS && !target.is_empty() => {
                links += 1;
                if target.starts_with('/') {
                    done.clear();
                }
                todo.extend(
                    target
                        .split('/')
                        .rev()
                        .filter(|c| !c.is_empty())
                        .map(str::to_string),
                );
            }
            _ => done.push(c),
        }
    }
    format!("/{}", done.join("/"))
}

/// `path` with `.`, `..`, repeated and trailing slashes folded, lexically.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Decode the octal escapes proc(5) uses in mountinfo fields (`\040` space,
/// `\011` tab, `\012` newline, `\134` backslash).
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One mount of `/proc/self/mountinfo`: (mount point, fs type, source).
/// proc(5): `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER_OPTIONS`.
fn parse_mountinfo_line(line: &str) -> Option<(String, String, String)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
    let mount_point = unescape(fields.get(4)?);
    let fs_type = fields.get(sep + 1).filter(|t| !t.is_empty())?;
    let source = fields.get(sep + 2).map(|s| unescape(s)).unwrap_or_default();
    mount_point
        .starts_with('/')
        .then(|| (mount_point, fs_type.to_string(), source))
}

/// The filesystem holding `path` (absolute; folded lexically, links are not
/// followed) according to a `/proc/self/mountinfo` text: the mount whose
/// mount point is the longest whole-component prefix of the path (`/data`
/// holds `/data/x`, not `/data2/x`); of mounts on the same point, the last
/// listed (it is mounted over the others). Lines that do not parse are
/// skipped. `None` for a relative path or when no mount holds it.
pub fn filesystem_of(mountinfo: &str, path: &str) -> Option<FilesystemInfo> {
    if !path.starts_with('/') {
        return None;
    }
    let path = normalize(path);
    let holds = |mp: &str| {
        mp == "/" || path == mp || path.strip_prefix(mp).is_some_and(|r| r.starts_with('/'))
    };
    let mut best: Option<(String, String, String)> = None;
    for line in mountinfo.lines() {
        let Some((mp, fs_type, source)) = parse_mountinfo_line(line) else {
            continue;
        };
        let mp = normalize(&mp);
        if holds(&mp) && best.as_ref().is_none_or(|(b, _, _)| mp.len() >= b.len()) {
            best = Some((mp, fs_type, source));
        }
    }
    best.map(|(mount_point, fs_type, source)| FilesystemInfo {
        network: NETWORK_FS_TYPES.contains(&fs_type.as_str()),
        path,
        mount_point,
        fs_type,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(block_kind("nvme0n1", None, None, Some(false)), "nvme");
        assert_eq!(block_kind("vda", None, None, Some(true)), "virtual");
        assert_eq!(block_kind("xvda", None, None, None), "virtual");
        assert_eq!(
            block_kind(
                "sda",
                Some("sd"),
                Some(
                    "../devices/pci0000:00/0000:00:04.0/virtio1/host0/target0:0:0/0:0:0:0/block/sda"
                ),
                Some(true)
            ),
            "virtual"
        );
        assert_eq!(
            block_kind(
                "sda",
                Some("sd"),
                Some(
                    "../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/f8b3781a-1e82-4818-a1c3-63d806ec15bb/host0/target0:0:0/0:0:0:0/block/sda"
                ),
                Some(true)
            ),
            "virtual"
        );
        assert_eq!(block_kind("sda", None, None, Some(true)), "hdd");
        assert_eq!(block_kind("sdb", None, None, Some(false)), "ssd");
        assert_eq!(block_kind("mmcblk0", None, None, None), "unknown");
        assert!(is_skipped_block_device("loop7"));
        assert!(is_skipped_block_device("dm-0"));
        assert!(is_skipped_block_device("md127"));
        assert!(!is_skipped_block_device("mmcblk0"));
        assert!(!is_skipped_block_device("sda"));
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape(r"/data/hf\040cache"), "/data/hf cache");
        assert_eq!(unescape(r"a\134b"), r"a\b");
        assert_eq!(unescape(r"x\04"), r"x\04");
        assert_eq!(unescape(r"x\777"), r"x\777");
    }

    #[test]
    fn normalizes() {
        assert_eq!(normalize("/a//b/./c/../d/"), "/a/b/d");
        assert_eq!(normalize("/.."), "/");
    }
}
