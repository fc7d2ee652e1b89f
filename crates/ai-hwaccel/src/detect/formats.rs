//! Saved tool outputs that `ai-hwaccel parse FORMAT FILE` understands: one
//! entry per format, each a pure parser from bytes to devices and warnings.
//! Backends and the `parse` command share these parsers, so a parser is
//! tested once and used everywhere.

use crate::model::Device;

/// What parsing one saved output gives.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParseOutput {
    /// Devices, with the device fields of the detect JSON contract.
    pub devices: Vec<Device>,
    /// Problems met (unparsable fields, truncated input, …).
    pub warnings: Vec<String>,
}

/// One supported format.
pub struct Format {
    /// Name used on the command line (`nvidia-smi-xml`).
    pub name: &'static str,
    /// The command whose output this is.
    pub produced_by: &'static str,
    /// The parser. Never panics; an unusable input yields no devices and a warning.
    pub parse: fn(&[u8]) -> ParseOutput,
}

/// Every format `parse` accepts. Backends add their formats here.
pub static FORMATS: &[Format] = &[];

/// The format named `name`.
pub fn format(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}
