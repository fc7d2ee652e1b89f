//! PCI addresses (`domain:bus:device.function`) as a type that parses every
//! spelling tools print and always prints the canonical lowercase form.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A PCI address. Displayed as lowercase `dddd:bb:dd.f` (e.g. `0000:3b:00.0`).
///
/// Parsing accepts what sysfs and vendor tools print: `0000:3B:00.0`,
/// `3b:00.0` (domain 0), and nvidia-smi's 8-digit domain `00000000:3B:00.0`.
/// Every component is hexadecimal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    /// PCI segment (domain); up to 32 bits in nvidia-smi's spelling.
    pub domain: u32,
    /// Bus number, 0..=255.
    pub bus: u8,
    /// Device (slot) number, 0..=31.
    pub device: u8,
    /// Function number, 0..=7.
    pub function: u8,
}

/// Why a string is not a PCI address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid PCI address {input:?}: {reason}")]
pub struct PciAddressError {
    /// The text that failed to parse.
    pub input: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

impl FromStr for PciAddress {
    type Err = PciAddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| PciAddressError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let (rest, function) = t
            .rsplit_once('.')
            .ok_or_else(|| err("missing '.function'"))?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, s] => (*d, *b, *s),
            [b, s] => ("0", *b, *s),
            _ => return Err(err("expected [domain:]bus:device.function")),
        };
        let hex = |v: &str, max: u32, what| -> Result<u32, PciAddressError> {
            if v.is_empty() || v.len() > 8 || !v.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err(what));
            }
            let n = u32::from_str_radix(v, 16).map_err(|_| err(what))?;
            if n > max { Err(err(what)) } else { Ok(n) }
        };
        Ok(PciAddress {
            domain: hex(domain, u32::MAX, "bad domain")?,
            bus: hex(bus, 0xff, "bad bus")? as u8,
            device: hex(device, 0x1f, "bad device")? as u8,
            function: hex(function, 0x7, "bad function")? as u8,
        })
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PciAddress {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for PciAddress {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PciAddress".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "PCI address, lowercase hex dddd:bb:dd.f",
            "pattern": "^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_spellings_as_hex() {
        let a: PciAddress = "0000:3B:00.0".parse().unwrap();
        assert_eq!((a.domain, a.bus, a.device, a.function), (0, 0x3b, 0, 0));
        assert_eq!(a.to_string(), "0000:3b:00.0");
        let b: PciAddress = "00000000:C1:1F.7".parse().unwrap();
        assert_eq!(b.to_string(), "0000:c1:1f.7");
        let c: PciAddress = "17:00.1".parse().unwrap();
        assert_eq!(c.bus, 0x17, "bus must be read as hex, not decimal");
        assert_eq!(c.to_string(), "0000:17:00.1");
        let d: PciAddress = "10001:02:00.0".parse().unwrap();
        assert_eq!(d.to_string(), "10001:02:00.0");
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "0000:3b:00",
            "zz:00.0",
            "0000:100:00.0",
            "0000:00:20.0",
            "0000:00:00.8",
            ":.",
            "0000:3b:00.0.1",
            "+1:00.0",
        ] {
            assert!(s.parse::<PciAddress>().is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn round_trips_through_json() {
        let a: PciAddress = "0000:af:1c.3".parse().unwrap();
        let j = serde_json::to_string(&a).unwrap();
        assert_eq!(j, "\"0000:af:1c.3\"");
        assert_eq!(serde_json::from_str::<PciAddress>(&j).unwrap(), a);
    }

    proptest::proptest! {
        #[test]
        fn display_parse_round_trip(domain in 0u32..=0xffff, bus: u8, device in 0u8..32, function in 0u8..8) {
            let a = PciAddress { domain, bus, device, function };
            proptest::prop_assert_eq!(a.to_string().parse::<PciAddress>().unwrap(), a);
            proptest::prop_assert_eq!(a.to_string().to_uppercase().parse::<PciAddress>().unwrap(), a);
        }

        #[test]
        fn never_panics(s in ".{0,40}") {
            let _ = s.parse::<PciAddress>();
        }
    }
}
