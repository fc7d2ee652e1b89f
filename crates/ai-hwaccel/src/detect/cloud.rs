//! The cloud instance from DMI (`/sys/class/dmi/id`), without network calls.
//!
//! Only the world-readable DMI files are read: `sys_vendor`, `product_name`,
//! `product_version`, `board_asset_tag`, `chassis_asset_tag`, `bios_vendor`,
//! `bios_version`, `chassis_vendor` (`product_uuid` and the serials are
//! root-only and skipped). Firmware placeholders ("To be filled by O.E.M.",
//! "Default string", …) are unknown ([`clean_dmi_value`]). The provider
//! comes from [`classify_cloud`], a pure function with one documented rule
//! per provider. No DMI directory (containers without `/sys/class/dmi`,
//! non-x86 boards without SMBIOS) means no cloud facts at all; DMI of an
//! unrecognised vendor is reported with `provider: None`.

use crate::model::CloudInstance;
use crate::probe::{Probe, ProbeExt, join};

/// Where the kernel publishes the SMBIOS strings.
const DMI_DIR: &str = "/sys/class/dmi/id";

/// The DMI strings the classifier reads, each cleaned by [`clean_dmi_value`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DmiFields {
    /// `sys_vendor` (SMBIOS system manufacturer).
    pub sys_vendor: Option<String>,
    /// `product_name` (system product name).
    pub product_name: Option<String>,
    /// `product_version`.
    pub product_version: Option<String>,
    /// `board_asset_tag`.
    pub board_asset_tag: Option<String>,
    /// `chassis_asset_tag`.
    pub chassis_asset_tag: Option<String>,
    /// `bios_vendor`.
    pub bios_vendor: Option<String>,
    /// `bios_version`.
    pub bios_version: Option<String>,
    /// `chassis_vendor`.
    pub chassis_vendor: Option<String>,
}

/// Values firmware writes when a field was never filled in, compared
/// case-insensitively: the placeholder table of netdata
/// `src/daemon/status-file-dmi.c` (`dmi_clean_field_placeholder`) plus
/// "Not Specified"/"Not Applicable"/"O.E.M.".
const PLACEHOLDERS: &[&str] = &[
    "$(DEFAULT_STRING)",
    "(null)",
    "0123456789",
    "Chassis Manufacture",
    "Chassis Manufacturer",
    "Chassis Version",
    "Default string",
    "N/A",
    "NA",
    "No Asset Tag",
    "No Enclosure",
    "None",
    "None Provided",
    "Not Applicable",
    "Not Specified",
    "O.E.M.",
    "OEM",
    "OEM Chassis Manufacturer",
    "OEM Default string000",
    "OEM_MB",
    "SKU",
    "SYSTEM_MANUFACTURER",
    "SmbiosType1_SystemManufacturer",
    "SmbiosType2_BoardManufacturer",
    "Standard",
    "System Product Name",
    "System UUID",
    "System Version",
    "System manufacturer",
    "TBD",
    "TBD by OEM",
    "To Be Filled By O.E.M.",
    "Type2 - Board Manufacturer",
    "Type2 - Board Vendor Name1",
    "Unknow",
    "Unknown",
    "XXXXX",
    "default",
    "empty",
    "unspecified",
    "x.x",
];

/// A DMI string trimmed (whitespace and NULs), or `None` when empty, a
/// firmware placeholder, or made only of symbols (`...`, `-`, `*`).
pub fn clean_dmi_value(s: &str) -> Option<String> {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if t.is_empty() || !t.chars().any(char::is_alphanumeric) {
        return None;
    }
    if PLACEHOLDERS.iter().any(|p| p.eq_ignore_ascii_case(t)) {
        return None;
    }
    Some(t.to_string())
}

/// An EC2 instance type (`p5.48xlarge`, `trn1n.32xlarge`, `m7g.metal`):
/// a family and a size joined by one dot, lowercase letters and digits
/// (and `-` in sizes such as `metal-48xl`).
fn looks_like_instance_type(s: &str) -> bool {
    let ok = |p: &str, extra: bool| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || (extra && c == '-'))
    };
    matches!(s.split_once('.'), Some((f, z)) if ok(f, false) && ok(z, true))
}

fn eq(v: &Option<String>, want: &str) -> bool {
    v.as_deref().is_some_and(|x| x == want)
}

fn starts(v: &Option<String>, prefix: &str) -> bool {
    v.as_deref().is_some_and(|x| x.starts_with(prefix))
}

/// The provider and instance type DMI names, each rule with its source
/// (cloud-init `tools/ds-identify` and datasources, systemd `virt.c`):
///
/// | provider | rule | source |
/// | --- | --- | --- |
/// | `aws` | `sys_vendor` = `Amazon EC2` (Nitro); instance type = `product_name` (`p5.48xlarge`) | systemd `detect_vm_dmi_vendor` table and its `.metal` check of `product_name`; AWS "Identify EC2 Linux instances" |
/// | `aws` | `bios_version` or `product_version` contains `amazon` (Xen: `4.2.amazon`) | chef/ohai `ec2` plugin ("DMI data mentions amazon"); no instance type in DMI |
/// | `gcp` | `product_name` = `Google Compute Engine` or `Google`, or `sys_vendor` = `Google` | cloud-init `DataSourceGCE.platform_reports_gce`, ds-identify `dscheck_GCE` |
/// | `azure` | `chassis_asset_tag` = `7783-7084-3265-9085-8269-3286-77` | ds-identify `is_azure_chassis` |
/// | `oci` | `chassis_asset_tag` = `OracleCloud.com` | ds-identify `dscheck_Oracle` |
/// | `alibaba` | `product_name` starts with `Alibaba Cloud ECS`, or `sys_vendor` = `Alibaba Cloud` | ds-identify `dscheck_AliYun`; coroot-node-agent `cloudProviderByVendor` |
/// | `digitalocean` | `sys_vendor` = `DigitalOcean` | ds-identify `dscheck_DigitalOcean` |
/// | `hetzner` | `sys_vendor` = `Hetzner` | ds-identify `dscheck_Hetzner` |
/// | `ibm` | `chassis_vendor` starts with `IBM:Cloud Compute Server` (VPC) | coroot-node-agent `node/metadata` (`getCloudProvider`) |
/// | `huawei` | `chassis_asset_tag` = `HUAWEICLOUD` | ds-identify `dscheck_OpenStack` |
/// | `openstack` | `product_name` or `chassis_asset_tag` = `OpenStack Nova` / `OpenStack Compute`, or asset tag `OpenTelekomCloud` / `SAP CCloud VM` | ds-identify `dscheck_OpenStack` |
/// | `akamai` | `sys_vendor` = `Linode` or `Akamai` | ds-identify `dscheck_Akamai` |
/// | `vultr`, `upcloud`, `scaleway`, `nwcs`, `e24cloud` | `sys_vendor` equals the name (`Vultr`, `UpCloud`, `Scaleway`, `NWCS`, `e24cloud`) | ds-identify `dscheck_Vultr`, `dscheck_UpCloud`, `dscheck_Scaleway`, `dscheck_NWCS`, `ec2_identify_platform` |
/// | `outscale` | `sys_vendor` = `3DS Outscale` and `product_name` = `3DS Outscale VM` | ds-identify `ec2_identify_platform` |
/// | `zstack` | `chassis_asset_tag` ends with `.zstack.io` | ds-identify `ec2_identify_platform` |
/// | `exoscale`, `cloudstack`, `cloudsigma` | `product_name` starts with `Exoscale` / `CloudStack`, or is `CloudSigma` | ds-identify `dscheck_Exoscale`, `dscheck_CloudStack`, `dscheck_CloudSigma` |
///
/// Rules are tried in table order; the first match wins.
pub fn classify_cloud(d: &DmiFields) -> (Option<&'static str>, Option<String>) {
    const AZURE_CHASSIS: &str = "7783-7084-3265-9085-8269-3286-77";
    if eq(&d.sys_vendor, "Amazon EC2") {
        let t = d
            .product_name
            .clone()
            .filter(|p| looks_like_instance_type(p));
        return (Some("aws"), t);
    }
    let amazon_xen = |v: &Option<String>| {
        v.as_deref()
            .is_some_and(|x| x.to_ascii_lowercase().contains("amazon"))
    };
    let provider = if amazon_xen(&d.bios_version) || amazon_xen(&d.product_version) {
        Some("aws")
    } else if eq(&d.product_name, "Google Compute Engine")
        || eq(&d.product_name, "Google")
        || eq(&d.sys_vendor, "Google")
    {
        Some("gcp")
    } else if eq(&d.chassis_asset_tag, AZURE_CHASSIS) {
        Some("azure")
    } else if eq(&d.chassis_asset_tag, "OracleCloud.com") {
        Some("oci")
    } else if starts(&d.product_name, "Alibaba Cloud ECS") || eq(&d.sys_vendor, "Alibaba Cloud") {
        Some("alibaba")
    } else if eq(&d.sys_vendor, "DigitalOcean") {
        Some("digitalocean")
    } else if eq(&d.sys_vendor, "Hetzner") {
        Some("hetzner")
    } else if starts(&d.chassis_vendor, "IBM:Cloud Compute Server") {
        Some("ibm")
    } else if eq(&d.chassis_asset_tag, "HUAWEICLOUD") {
        Some("huawei")
    } else if ["OpenStack Nova", "OpenStack Compute"]
        .iter()
        .any(|n| eq(&d.product_name, n) || eq(&d.chassis_asset_tag, n))
        || eq(&d.chassis_asset_tag, "OpenTelekomCloud")
        || eq(&d.chassis_asset_tag, "SAP CCloud VM")
    {
        Some("openstack")
    } else if eq(&d.sys_vendor, "Linode") || eq(&d.sys_vendor, "Akamai") {
        Some("akamai")
    } else if eq(&d.sys_vendor, "Vultr") {
        Some("vultr")
    } else if eq(&d.sys_vendor, "UpCloud") {
        Some("upcloud")
    } else if eq(&d.sys_vendor, "Scaleway") {
        Some("scaleway")
    } else if eq(&d.sys_vendor, "NWCS") {
        Some("nwcs")
    } else if eq(&d.sys_vendor, "e24cloud") {
        Some("e24cloud")
    } else if eq(&d.sys_vendor, "3DS Outscale") && eq(&d.product_name, "3DS Outscale VM") {
        Some("outscale")
    } else if d
        .chassis_asset_tag
        .as_deref()
        .is_some_and(|t| t.ends_with(".zstack.io"))
    {
        Some("zstack")
    } else if starts(&d.product_name, "Exoscale") {
        Some("exoscale")
    } else if starts(&d.product_name, "CloudStack") {
        Some("cloudstack")
    } else if eq(&d.product_name, "CloudSigma") {
        Some("cloudsigma")
    } else {
        None
    };
    (provider, None)
}

/// The cloud provider and instance type, when DMI names them. `None` when
/// `/sys/class/dmi/id` does not exist.
pub(crate) fn detect_cloud(probe: &dyn Probe, warnings: &mut Vec<String>) -> Option<CloudInstance> {
    if let Err(e) = probe.list_dir(DMI_DIR) {
        if !e.is_absent() {
            warnings.push(e.to_string());
        }
        return None;
    }
    let read = |name: &str| {
        probe
            .read_text(&join(DMI_DIR, name))
            .ok()
            .and_then(|t| clean_dmi_value(&t))
    };
    let d = DmiFields {
        sys_vendor: read("sys_vendor"),
        product_name: read("product_name"),
        product_version: read("product_version"),
        board_asset_tag: read("board_asset_tag"),
        chassis_asset_tag: read("chassis_asset_tag"),
        bios_vendor: read("bios_vendor"),
        bios_version: read("bios_version"),
        chassis_vendor: read("chassis_vendor"),
    };
    let (provider, instance_type) = classify_cloud(&d);
    Some(CloudInstance {
        provider: provider.map(str::to_string),
        instance_type,
        sys_vendor: d.sys_vendor,
        product_name: d.product_name,
        board_asset_tag: d.board_asset_tag,
        chassis_asset_tag: d.chassis_asset_tag,
        bios_vendor: d.bios_vendor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dmi(pairs: &[(&str, &str)]) -> DmiFields {
        let mut d = DmiFields::default();
        for (k, v) in pairs {
            let v = clean_dmi_value(v);
            match *k {
                "sys_vendor" => d.sys_vendor = v,
                "product_name" => d.product_name = v,
                "product_version" => d.product_version = v,
                "board_asset_tag" => d.board_asset_tag = v,
                "chassis_asset_tag" => d.chassis_asset_tag = v,
                "bios_vendor" => d.bios_vendor = v,
                "bios_version" => d.bios_version = v,
                "chassis_vendor" => d.chassis_vendor = v,
                _ => panic!("{k}"),
            }
        }
        d
    }

    #[test]
    fn placeholders_are_unknown() {
        for p in [
            "To be filled by O.E.M.",
            "To Be Filled By O.E.M.\n",
            "Default string",
            "Not Specified",
            "NOT SPECIFIED",
            " ... ",
            "",
            "\0\0",
            "None",
        ] {
            assert_eq!(clean_dmi_value(p), None, "{p:?}");
        }
        assert_eq!(
            clean_dmi_value("Supermicro\n").as_deref(),
            Some("Supermicro")
        );
    }

    /// DMI fields, expected provider, expected instance type.
    type Case = (
        &'static [(&'static str, &'static str)],
        Option<&'static str>,
        Option<&'static str>,
    );

    #[test]
    fn provider_rules() {
        let cases: &[Case] = &[
            // Nitro: the instance type is the product name (gist verdimrc
            // "Probe ec2 instances without instance metadata": trn1.32xlarge).
            (
                &[
                    ("sys_vendor", "Amazon EC2"),
                    ("product_name", "p5.48xlarge"),
                ],
                Some("aws"),
                Some("p5.48xlarge"),
            ),
            (
                &[
                    ("sys_vendor", "Amazon EC2"),
                    ("product_name", "m7g.metal-48xl"),
                ],
                Some("aws"),
                Some("m7g.metal-48xl"),
            ),
            (
                &[
                    ("sys_vendor", "Amazon EC2"),
                    ("product_name", "Not Specified"),
                ],
                Some("aws"),
                None,
            ),
            // Xen-era EC2 (sys_vendor Xen, bios_version 4.2.amazon).
            (
                &[
                    ("sys_vendor", "Xen"),
                    ("product_name", "HVM domU"),
                    ("bios_version", "4.2.amazon"),
                ],
                Some("aws"),
                None,
            ),
            (
                &[("sys_vendor", "Xen"), ("product_name", "HVM domU")],
                None,
                None,
            ),
            (
                &[
                    ("sys_vendor", "Google"),
                    ("product_name", "Google Compute Engine"),
                ],
                Some("gcp"),
                None,
            ),
            (&[("product_name", "Google")], Some("gcp"), None),
            (
                &[
                    ("sys_vendor", "Microsoft Corporation"),
                    ("product_name", "Virtual Machine"),
                    ("chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77"),
                ],
                Some("azure"),
                None,
            ),
            // Hyper-V on premises: same vendor, no Azure asset tag.
            (
                &[
                    ("sys_vendor", "Microsoft Corporation"),
                    ("product_name", "Virtual Machine"),
                ],
                None,
                None,
            ),
            (
                &[
                    ("sys_vendor", "QEMU"),
                    ("chassis_asset_tag", "OracleCloud.com"),
                ],
                Some("oci"),
                None,
            ),
            (
                &[
                    ("sys_vendor", "Alibaba Cloud"),
                    ("product_name", "Alibaba Cloud ECS"),
                ],
                Some("alibaba"),
                None,
            ),
            (
                &[("sys_vendor", "DigitalOcean"), ("product_name", "Droplet")],
                Some("digitalocean"),
                None,
            ),
            (
                &[("sys_vendor", "Hetzner"), ("product_name", "vServer")],
                Some("hetzner"),
                None,
            ),
            (
                &[
                    ("sys_vendor", "QEMU"),
                    ("chassis_vendor", "IBM:Cloud Compute Server 1.0:Nitro"),
                ],
                Some("ibm"),
                None,
            ),
            (
                &[
                    ("sys_vendor", "OpenStack Foundation"),
                    ("product_name", "OpenStack Nova"),
                ],
                Some("openstack"),
                None,
            ),
            (
                &[("chassis_asset_tag", "HUAWEICLOUD")],
                Some("huawei"),
                None,
            ),
            (&[("sys_vendor", "Linode")], Some("akamai"), None),
            (&[("sys_vendor", "Scaleway")], Some("scaleway"), None),
            (
                &[
                    ("sys_vendor", "3DS Outscale"),
                    ("product_name", "3DS Outscale VM"),
                ],
                Some("outscale"),
                None,
            ),
            (
                &[("chassis_asset_tag", "abc.zstack.io")],
                Some("zstack"),
                None,
            ),
            (
                &[("product_name", "CloudStack KVM Hypervisor")],
                Some("cloudstack"),
                None,
            ),
            // Bare metal and placeholders.
            (
                &[
                    ("sys_vendor", "Supermicro"),
                    ("product_name", "SYS-821GE-TNHR"),
                    ("chassis_asset_tag", "To be filled by O.E.M."),
                ],
                None,
                None,
            ),
            (&[], None, None),
        ];
        for (pairs, provider, itype) in cases {
            let (p, t) = classify_cloud(&dmi(pairs));
            assert_eq!((p, t.as_deref()), (*provider, *itype), "{pairs:?}");
        }
    }

    #[test]
    fn instance_type_shape() {
        assert!(looks_like_instance_type("p5.48xlarge"));
        assert!(looks_like_instance_type("trn1n.32xlarge"));
        assert!(!looks_like_instance_type("HVM domU"));
        assert!(!looks_like_instance_type("p5"));
        assert!(!looks_like_instance_type("P5.48XLARGE"));
        assert!(!looks_like_instance_type(".x"));
    }

    proptest::proptest! {
        #[test]
        fn classifier_never_panics(a in ".{0,40}", b in ".{0,40}", c in ".{0,40}") {
            let d = dmi(&[("sys_vendor", &a), ("product_name", &b), ("chassis_asset_tag", &c), ("bios_version", &a), ("chassis_vendor", &c)]);
            let _ = classify_cloud(&d);
        }
    }
}
