//! Which Intel GPUs `ZE_AFFINITY_MASK` and `ONEAPI_DEVICE_SELECTOR` hide
//! from this process. Pure: the backend passes the GPUs in Level Zero order
//! with their tile counts and the variables' values.
//!
//! Device numbering follows `ZE_FLAT_DEVICE_HIERARCHY` (oneAPI Level Zero
//! specification, Programming Guide, "Device hierarchy" and "Environment
//! Variables"; Intel, "Flattening GPU Tile Hierarchy", 2023): in `FLAT` mode
//! (the default since late 2023) and `COMBINED` mode every tile of a
//! multi-tile GPU is a root device, numbered across GPUs in order; in
//! `COMPOSITE` mode each GPU is one root device and its tiles are
//! sub-devices (`device.subdevice`). GPUs are taken in PCI address order
//! (the order `ZE_ENABLE_PCI_ID_DEVICE_ORDER=1` forces; the driver's default
//! order follows device discovery, normally the same); a GPU whose tile
//! count is unknown counts as one tile.
//!
//! - `ZE_AFFINITY_MASK`: a comma-separated list of root-device indexes,
//!   each optionally `.subdevice` (spec, "Affinity Mask"). A GPU is visible
//!   when one of its root devices is listed, alone or with a sub-device. An
//!   empty value masks nothing (the driver treats it as unset). Entries that
//!   are not `N` or `N.M` are skipped with a warning.
//! - `ONEAPI_DEVICE_SELECTOR` (DPC++ runtime, intel/llvm
//!   `sycl/doc/EnvironmentVariables.md`): `;`-separated terms
//!   `backend:device,device…`. Only selectors made of `level_zero:` or `*:`
//!   terms whose devices are `*`, `gpu`, `N`, `N.M` or `N.*` are
//!   interpreted; their indexes number the root devices the affinity mask
//!   left. Anything else (discard terms `!…`, other backends, `cpu`/`fpga`
//!   types) is not interpreted: every GPU stays visible and a warning says
//!   so.
//!
//! Hidden GPUs stay listed, unavailable, `hidden by <VAR>`.

/// `ZE_AFFINITY_MASK`.
pub const ZE_AFFINITY_MASK: &str = "ZE_AFFINITY_MASK";
/// `ONEAPI_DEVICE_SELECTOR`.
pub const ONEAPI_DEVICE_SELECTOR: &str = "ONEAPI_DEVICE_SELECTOR";
/// `ZE_FLAT_DEVICE_HIERARCHY`.
pub const ZE_FLAT_DEVICE_HIERARCHY: &str = "ZE_FLAT_DEVICE_HIERARCHY";

/// Most tiles counted per GPU (guards against absurd tile counts).
const MAX_TILES: u32 = 64;

/// How Level Zero numbers root devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// `FLAT` (default) or `COMBINED`: one root device per tile.
    Flat,
    /// `COMPOSITE`: one root device per GPU, tiles as sub-devices.
    Composite,
}

impl Hierarchy {
    /// The hierarchy a `ZE_FLAT_DEVICE_HIERARCHY` value selects; unset or
    /// unknown values mean the default, `FLAT`.
    pub fn from_env(v: Option<&str>) -> Hierarchy {
        match v.map(|v| v.trim().to_ascii_uppercase()).as_deref() {
            Some("COMPOSITE") => Hierarchy::Composite,
            _ => Hierarchy::Flat,
        }
    }
}

/// Parse a `ZE_AFFINITY_MASK` value: the root-device index of every valid
/// entry (`N` or `N.M`), and the entries that are not valid.
pub fn parse_affinity_mask(v: &str) -> (Vec<u32>, Vec<String>) {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for e in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (dev, sub) = match e.split_once('.') {
            Some((d, s)) => (d, Some(s)),
            None => (e, None),
        };
        match (dev.parse::<u32>(), sub.map(str::parse::<u32>)) {
            (Ok(d), None | Some(Ok(_))) => ok.push(d),
            _ => bad.push(e.to_string()),
        }
    }
    (ok, bad)
}

/// What an interpretable `ONEAPI_DEVICE_SELECTOR` selects among Level Zero
/// root devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every Level Zero GPU.
    All,
    /// The root devices with these indexes.
    Devices(Vec<u32>),
}

/// Interpret an `ONEAPI_DEVICE_SELECTOR` value, or `None` when it uses
/// anything beyond `level_zero:`/`*:` terms with `*`, `gpu`, `N`, `N.M`,
/// `N.*` devices (see the module doc).
pub fn parse_device_selector(v: &str) -> Option<Selection> {
    let mut devices = Vec::new();
    let mut any_term = false;
    for term in v.split(';').map(str::trim).filter(|t| !t.is_empty()) {
        any_term = true;
        let (backend, list) = term.split_once(':')?;
        let backend = backend.trim().to_ascii_lowercase();
        if backend != "level_zero" && backend != "*" {
            return None;
        }
        for d in list.split(',').map(str::trim) {
            let lower = d.to_ascii_lowercase();
            if lower == "*" || lower == "gpu" || lower == "*.*" {
                return Some(Selection::All);
            }
            let head = match d.split_once('.') {
                Some((h, s)) if s == "*" || s.parse::<u32>().is_ok() => h,
                Some(_) => return None,
                None => d,
            };
            devices.push(head.parse::<u32>().ok()?);
        }
    }
    any_term.then_some(Selection::Devices(devices))
}

/// Which GPUs the variables hide. `tiles[k]` is GPU `k`'s tile count
/// (GPUs in Level Zero order); the answer gives, per GPU, the variable that
/// hides it (`None` = visible), plus warnings.
pub fn intel_visibility(
    tiles: &[Option<u32>],
    hierarchy: Hierarchy,
    mask: Option<&str>,
    selector: Option<&str>,
) -> (Vec<Option<&'static str>>, Vec<String>) {
    let mut hidden: Vec<Option<&'static str>> = vec![None; tiles.len()];
    let mut warnings = Vec::new();
    // Root devices, each naming its GPU.
    let units: Vec<usize> = tiles
        .iter()
        .enumerate()
        .flat_map(|(k, t)| {
            let n = match hierarchy {
                Hierarchy::Flat => t.filter(|&t| t > 0).unwrap_or(1).min(MAX_TILES),
                Hierarchy::Composite => 1,
            };
            std::iter::repeat_n(k, n as usize)
        })
        .collect();
    let mut left: Vec<usize> = (0..units.len()).collect();

    let mut narrow = |left: &mut Vec<usize>, keep: &dyn Fn(usize) -> bool, var: &'static str| {
        let before: Vec<usize> = std::mem::take(left);
        for (pos, &u) in before.iter().enumerate() {
            if keep(pos) {
                left.push(u);
            }
        }
        for (k, h) in hidden.iter_mut().enumerate() {
            let had = before.iter().any(|&u| units[u] == k);
            let has = left.iter().any(|&u| units[u] == k);
            if had && !has && h.is_none() {
                *h = Some(var);
            }
        }
    };

    if let Some(v) = mask.map(str::trim).filter(|v| !v.is_empty()) {
        let (ok, bad) = parse_affinity_mask(v);
        if !bad.is_empty() {
            warnings.push(format!(
                "{ZE_AFFINITY_MASK}={v:?}: entries {bad:?} are not device[.subdevice] indexes; skipped"
            ));
        }
        if ok.is_empty() {
            warnings.push(format!(
                "{ZE_AFFINITY_MASK}={v:?}: no usable entry; not applied"
            ));
        } else {
            // Mask indexes number all root devices.
            let keep = |pos: usize| ok.contains(&(pos as u32));
            narrow(&mut left, &keep, ZE_AFFINITY_MASK);
        }
    }
    if let Some(v) = selector.map(str::trim).filter(|v| !v.is_empty()) {
        match parse_device_selector(v) {
            Some(Selection::All) => {}
            Some(Selection::Devices(list)) => {
                // Selector indexes number the root devices the mask left.
                let keep = |pos: usize| list.contains(&(pos as u32));
                narrow(&mut left, &keep, ONEAPI_DEVICE_SELECTOR);
            }
            None => warnings.push(format!(
                "{ONEAPI_DEVICE_SELECTOR}={v:?}: not interpreted (only level_zero:/*: index lists are); Intel GPUs left visible"
            )),
        }
    }
    (hidden, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Option<&str> = Some(ZE_AFFINITY_MASK);
    const S: Option<&str> = Some(ONEAPI_DEVICE_SELECTOR);

    #[test]
    fn mask_entries() {
        assert_eq!(parse_affinity_mask("0,1.1, 3"), (vec![0, 1, 3], vec![]));
        assert_eq!(
            parse_affinity_mask("0,x,1.y,2.1.1"),
            (vec![0], vec!["x".into(), "1.y".into(), "2.1.1".into()])
        );
        assert_eq!(parse_affinity_mask(""), (vec![], vec![]));
    }

    #[test]
    fn flat_mode_numbers_tiles_across_gpus() {
        // Two 2-tile GPUs: root devices 0,1 are GPU 0's tiles, 2,3 GPU 1's.
        let two = [Some(2), Some(2)];
        let f = Hierarchy::Flat;
        assert_eq!(intel_visibility(&two, f, Some("2"), None).0, [M, None]);
        assert_eq!(intel_visibility(&two, f, Some("1,2"), None).0, [None, None]);
        assert_eq!(intel_visibility(&two, f, Some("0"), None).0, [None, M]);
        // Unknown tile counts count as one tile.
        assert_eq!(
            intel_visibility(&[None, Some(2)], f, Some("1"), None).0,
            [M, None]
        );
        assert_eq!(intel_visibility(&two, f, Some(""), None).0, [None, None]);
    }

    #[test]
    fn composite_mode_numbers_gpus() {
        let two = [Some(2), Some(2)];
        let c = Hierarchy::Composite;
        assert_eq!(intel_visibility(&two, c, Some("0.1"), None).0, [None, M]);
        assert_eq!(intel_visibility(&two, c, Some("1"), None).0, [M, None]);
        assert_eq!(Hierarchy::from_env(Some("composite")), c);
        assert_eq!(Hierarchy::from_env(Some("COMBINED")), Hierarchy::Flat);
        assert_eq!(Hierarchy::from_env(None), Hierarchy::Flat);
    }

    #[test]
    fn selector_terms() {
        use Selection::*;
        assert_eq!(
            parse_device_selector("level_zero:1"),
            Some(Devices(vec![1]))
        );
        assert_eq!(
            parse_device_selector("level_zero:0,2.1"),
            Some(Devices(vec![0, 2]))
        );
        assert_eq!(parse_device_selector("*:1.*"), Some(Devices(vec![1])));
        assert_eq!(parse_device_selector("level_zero:gpu"), Some(All));
        assert_eq!(parse_device_selector("level_zero:*"), Some(All));
        assert_eq!(
            parse_device_selector("level_zero:0;level_zero:3"),
            Some(Devices(vec![0, 3]))
        );
        for v in [
            "opencl:gpu",
            "cuda:0",
            "!level_zero:0",
            "level_zero:cpu",
            "*:acc,gpu",
            "level_zero",
            "level_zero:0.x",
        ] {
            assert_eq!(parse_device_selector(v), None, "{v}");
        }
    }

    #[test]
    fn selector_numbers_what_the_mask_left() {
        let gpus = [Some(1), Some(1), Some(1), Some(1)];
        let f = Hierarchy::Flat;
        // The mask leaves GPUs 2 and 3 as root devices 0 and 1; the selector
        // then keeps root device 1, GPU 3.
        let (h, w) = intel_visibility(&gpus, f, Some("2,3"), Some("level_zero:1"));
        assert_eq!(h, [M, M, S, None]);
        assert!(w.is_empty());
        // Uninterpretable selector: warning, nothing more hidden.
        let (h, w) = intel_visibility(&gpus, f, None, Some("opencl:gpu"));
        assert_eq!(h, [None; 4]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains(ONEAPI_DEVICE_SELECTOR));
        // A mask with only bad entries is not applied.
        let (h, w) = intel_visibility(&gpus, f, Some("gpu0"), None);
        assert_eq!(h, [None; 4]);
        assert_eq!(w.len(), 2);
    }

    proptest::proptest! {
        #[test]
        fn any_values_never_panic(m in ".{0,40}", s in ".{0,40}", tiles in proptest::collection::vec(proptest::option::of(0u32..1000), 0..6), composite in proptest::bool::ANY) {
            let h = if composite { Hierarchy::Composite } else { Hierarchy::Flat };
            let (hid, _) = intel_visibility(&tiles, h, Some(&m), Some(&s));
            proptest::prop_assert_eq!(hid.len(), tiles.len());
        }
    }
}
