//! The CPU spec table's matcher on real model names
//! (`tests/fixtures/cpu-model-names/names.tsv`: name, expected entry, source).

use ai_hwaccel::spec::cpu;

#[test]
fn real_model_names_match_their_entries() {
    let text = include_str!("fixtures/cpu-model-names/names.tsv");
    let mut rows = 0;
    let mut matched = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "three TAB-separated columns: {line:?}");
        let got = cpu::match_model_name(cols[0]).map(|c| c.id.as_str());
        let want = (cols[1] != "-").then_some(cols[1]);
        assert_eq!(got, want, "{:?} ({})", cols[0], cols[2]);
        rows += 1;
        matched += usize::from(want.is_some());
    }
    assert!(
        rows >= 15 && matched >= 10,
        "{rows} rows, {matched} matched"
    );
}

#[test]
fn every_entry_matches_its_own_name_and_a_kernel_spelling() {
    for c in cpu::all() {
        assert_eq!(cpu::match_model_name(&c.name).map(|e| &e.id), Some(&c.id));
        // The kernel's spellings: trademark marks and a core count suffix.
        let kernel = c
            .name
            .replacen("Intel ", "Intel(R) ", 1)
            .replacen("Xeon ", "Xeon(R) ", 1)
            .replacen("Core ", "Core(TM) ", 1);
        let kernel = format!("{kernel} {}-Core Processor", c.cores);
        assert_eq!(
            cpu::match_model_name(&kernel).map(|e| &e.id),
            Some(&c.id),
            "{kernel}"
        );
    }
}
