//! The spec database against the system's PCI ID Repository (`pci.ids`,
//! Debian package `pci.ids` at `/usr/share/misc/pci.ids`): every device id of
//! the accelerator vendors whose pci.ids name names a listed part maps to that
//! part. Skipped, with a message, when the file is absent.
//!
//! "Names a listed part" means: the spec database's own name resolution
//! ([`spec::by_name`], the one detection uses for tool-reported names)
//! resolves the pci.ids device name to exactly one entry. That resolution
//! compares whole names and aliases (letters and digits only), then model
//! words with vendor/brand words dropped where the name's qualifiers (form
//! factor, memory size, memory type) must agree with the entry, and tries the
//! bracketed marketing part of a pci.ids name (`GH100 [H100 SXM5 80GB]`) on
//! its own. A bracketed part listing several products (`[Instinct
//! MI250X/MI250]`, `[Radeon RX 6800/6800 XT / 6900 XT]`) is split at `/`,
//! alternatives that start with a digit taking the words before the first
//! alternative's number (`Radeon RX 6800 XT`); every alternative that resolves
//! must be among the entries listing the id (an id may be shared).
#![allow(
    clippy::disallowed_methods,
    reason = "the test reads the system pci.ids"
)]

use ai_hwaccel::spec;

const PCI_IDS: &[&str] = &["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"];

/// NVIDIA, AMD, Intel, Habana, Amazon (Annapurna), Google, Huawei, Qualcomm, Tenstorrent.
const VENDORS: &[u16] = &[
    0x10de, 0x1002, 0x8086, 0x1da3, 0x1d0f, 0x1ae0, 0x19e5, 0x17cb, 0x1e52,
];

/// pci.ids devices whose name resolves to an entry that the id must not map
/// to, each with the reason.
const EXCEPTIONS: &[(u16, u16, &str)] = &[
    (
        0x10de,
        0x24c9,
        "GeForce RTX 3060 Ti GDDR6X: same name, different memory (no capture read), so the \
         GDDR6 entry's bandwidth would be wrong for it",
    ),
    (
        0x10de,
        0x25ab,
        "GeForce RTX 3050 4GB Laptop GPU: NVIDIA's 2022 refresh, whose cores and clocks were not \
         read; its name matches the 4 GB rtx-3050-laptop entry, whose rates may not fit it",
    ),
    (
        0x10de,
        0x1ed0,
        "GeForce RTX 2080 Mobile (TU104BM): the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x10de,
        0x1f14,
        "GeForce RTX 2070 Mobile / Max-Q Refresh: the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x10de,
        0x1f50,
        "GeForce RTX 2070 Mobile / Max-Q (TU106BM): the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x10de,
        0x1f54,
        "GeForce RTX 2070 Mobile (TU106BM): the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x10de,
        0x1f51,
        "GeForce RTX 2060 Mobile (TU106BM): the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x10de,
        0x1f55,
        "GeForce RTX 2060 Mobile (TU106BM): the 2020 refresh of the RTX 20 laptop parts (TU10xB), whose clocks and memory data rate were not read; the 2019 entry of that name would give it the wrong bandwidth",
    ),
    (
        0x1002,
        0x73df,
        "shared by RX 6700, 6700 XT, 6750 XT, 6800M, 6850M XT, 6700M and the RX 6750 GRE \
         (not in the database), so no entry lists it; detection matches the name",
    ),
    (
        0x1002,
        0x731f,
        "shared by the RX 5600 OEM, 5600 XT, 5700 and 5700 XT (only the 5700 XT is in the \
         database): listing it would call every RX 5600 / 5700 a 5700 XT",
    ),
    (
        0x1002,
        0x743f,
        "shared by the RX 6400, RX 6500 XT (4 and 8 GB) and the RX 6500M laptop part (not in \
         the database), so no single entry may claim it",
    ),
    (
        0x1002,
        0x73ff,
        "shared by the RX 6600, RX 6600 XT, the RX 6600M / 6600S laptop parts and the RX 6750 \
         GRE 10GB (not in the database), so no entry lists it; detection matches the name",
    ),
    (
        0x1002,
        0xab20,
        "Vega 20 HDMI Audio [Radeon VII]: the card's HDMI audio function, not its GPU",
    ),
    (
        0x1002,
        0x7480,
        "shared by the RX 7600, 7600 XT, 7650 GRE (not in the database), PRO W7600 and the \
         RX 7700S / 7600S / 7600M XT laptop parts, so no entry lists it; detection matches the name",
    ),
    (
        0x10de,
        0x1db8,
        "V100 SXM3 32GB (DGX-2 part, 350-450 W): form-factor folding lets its name match \
         the SXM2 32GB entry, but it is a different board and not in the database",
    ),
];

/// The spec database's vendor key of each PCI vendor checked.
const VENDOR_KEYS: &[(u16, &[&str])] = &[
    (0x10de, &["nvidia"]),
    (0x1002, &["amd"]),
    (0x8086, &["intel"]),
    (0x1da3, &["habana", "intel"]),
    (0x1d0f, &["aws"]),
    (0x1ae0, &["google"]),
    (0x19e5, &["huawei"]),
    (0x17cb, &["qualcomm"]),
    (0x1e52, &["tenstorrent"]),
];

/// `(vendor, device, name)` for every device line of the wanted vendors.
fn devices(text: &str) -> Vec<(u16, u16, String)> {
    let mut out = Vec::new();
    let mut vendor: Option<u16> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with("C ") {
            break; // the device classes section follows the vendors
        }
        if !line.starts_with('\t') {
            vendor = u16::from_str_radix(line.get(..4).unwrap_or(""), 16)
                .ok()
                .filter(|v| VENDORS.contains(v));
            continue;
        }
        let (Some(v), Some(rest)) = (vendor, line.strip_prefix('\t')) else {
            continue;
        };
        if rest.starts_with('\t') {
            continue; // subsystem line
        }
        if let (Some(id), Some(name)) = (rest.get(..4), rest.get(4..)) {
            if let Ok(d) = u16::from_str_radix(id, 16) {
                out.push((v, d, name.trim().to_string()));
            }
        }
    }
    out
}

/// The product names a pci.ids device name offers: the whole name, and each
/// `/`-separated alternative of its bracketed part.
fn names_of(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    let Some(inner) = name
        .split_once('[')
        .and_then(|(_, r)| r.split_once(']'))
        .map(|(i, _)| i)
    else {
        return out;
    };
    let alts: Vec<&str> = inner
        .split('/')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if alts.len() < 2 {
        return out;
    }
    // Words of the first alternative before its first word containing a digit.
    let prefix: Vec<&str> = alts[0]
        .split_whitespace()
        .take_while(|w| !w.chars().any(|c| c.is_ascii_digit()))
        .collect();
    for (i, a) in alts.iter().enumerate() {
        if i > 0 && a.starts_with(|c: char| c.is_ascii_digit()) && !prefix.is_empty() {
            out.push(format!("{} {a}", prefix.join(" ")));
        } else {
            out.push((*a).to_string());
        }
    }
    out
}

#[test]
fn pci_ids_names_split_into_products() {
    assert_eq!(
        names_of("Aldebaran/MI200 [Instinct MI250X/MI250]")[1..],
        ["Instinct MI250X", "MI250"]
    );
    assert_eq!(
        names_of("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]")[1..],
        ["Radeon RX 6800", "Radeon RX 6800 XT", "Radeon RX 6900 XT"]
    );
    assert_eq!(
        names_of("GH100 [H100 SXM5 80GB]"),
        ["GH100 [H100 SXM5 80GB]"]
    );
}

#[test]
fn every_pci_id_of_a_listed_part_maps_to_it() {
    let Some((path, text)) = PCI_IDS
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().map(|t| (*p, t)))
    else {
        eprintln!("SKIPPED: no pci.ids at {PCI_IDS:?} (Debian: apt-get install pci.ids)");
        return;
    };
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("#\tVersion:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    let devs = devices(&text);
    assert!(
        devs.len() > 1000,
        "{path}: only {} devices read",
        devs.len()
    );
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut exceptions_used: Vec<(u16, u16)> = Vec::new();
    for (v, d, name) in &devs {
        let mut named: Vec<&str> = names_of(name)
            .iter()
            .filter_map(|n| spec::by_name(n))
            // A name only names a part of the same vendor (`Tesla M4` is not Apple's M4).
            .filter(|e| {
                VENDOR_KEYS
                    .iter()
                    .any(|(pv, keys)| pv == v && keys.contains(&e.vendor.as_str()))
            })
            .map(|e| e.id.as_str())
            .collect();
        named.sort_unstable();
        named.dedup();
        if named.is_empty() {
            continue;
        }
        checked += 1;
        let listed: Vec<&str> = spec::by_pci_id_all(*v, *d)
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        let missing: Vec<&&str> = named.iter().filter(|id| !listed.contains(id)).collect();
        if missing.is_empty() {
            continue;
        }
        if EXCEPTIONS.iter().any(|&(ev, ed, _)| (ev, ed) == (*v, *d)) {
            exceptions_used.push((*v, *d));
            continue;
        }
        for id in missing {
            failures.push(format!(
                "{v:04x}:{d:04x} {name:?} names {id} but the id lists {listed:?}"
            ));
        }
    }
    eprintln!("{path} (version {version}): {checked} device ids name a listed part");
    assert!(
        checked >= 50,
        "only {checked} pci.ids names resolved: matching broke"
    );
    for (v, d, why) in EXCEPTIONS {
        assert!(!why.is_empty());
        if !exceptions_used.contains(&(*v, *d)) {
            failures.push(format!(
                "exception {v:04x}:{d:04x} is no longer needed ({version})"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
