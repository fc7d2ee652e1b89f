//! "Did you mean": the one matcher behind every suggestion for a name a user
//! types — devices, models, parser formats, backends, quantizations, device
//! families — so a typo is answered the same way everywhere.
//!
//! Names are compared on their lowercase letters and digits only (`Llama-3.1
//! 8B` and `llama318b` are the same key). A candidate is suggested by the
//! first rule it meets, and candidates are ranked by rule, then by distance:
//!
//! 1. **Same key** (`LLAMA_3.1_8B` for `llama-3.1-8b`).
//! 2. **Prefix**: one key starts with the other (`h100` → `h100-sxm`,
//!    `llama-3-8b-instruct` → `llama-3-8b`); the shorter has at least two
//!    characters.
//! 3. **Substring**: one key contains the other, the shorter having at least
//!    three characters (`4090` → `rtx-4090`).
//! 4. **Words**: every word of the query (split at anything but letters and
//!    digits) is a word of the candidate, a word of three or more characters
//!    also within one edit (`lama 3.1 8b` → `llama-3.1-8b`).
//! 5. **Edit distance**: the Levenshtein distance between the keys is at most
//!    a third of the query key's length, and at least 1 (`int3` → `int4`).
//!
//! ```
//! use ai_hwaccel::suggest::suggest;
//! let names = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b"];
//! assert_eq!(suggest("lama-3.1-8b", names)[0], "llama-3.1-8b");
//! assert!(suggest("nothing-like-it", names).is_empty());
//! ```

/// Most suggestions returned.
pub const MAX_SUGGESTIONS: usize = 5;

/// Lowercase letters and digits of `s`.
fn key(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Levenshtein distance (insertions, deletions, substitutions), on bytes:
/// keys are ASCII. O(|a|·|b|) time, O(|b|) memory.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Longest name compared: longer queries get no suggestion (bounded time).
const MAX_NAME: usize = 256;

/// How well `candidate` matches `query`: `(rule, distance)`, lower is
/// better, `None` when it is not suggested. The rules are the module's.
pub fn score(query: &str, candidate: &str) -> Option<(u8, usize)> {
    if query.len() > MAX_NAME || candidate.len() > MAX_NAME {
        return None;
    }
    let (q, c) = (key(query), key(candidate));
    if q.is_empty() || c.is_empty() {
        return None;
    }
    if q == c {
        return Some((1, 0));
    }
    let diff = q.len().abs_diff(c.len());
    let shorter = q.len().min(c.len());
    if shorter >= 2 && (c.starts_with(&q) || q.starts_with(&c)) {
        return Some((2, diff));
    }
    if shorter >= 3 && (c.contains(&q) || q.contains(&c)) {
        return Some((3, diff));
    }
    let (qw, cw) = (words(query), words(candidate));
    let mut total = 0;
    let all_words = qw.iter().all(|w| {
        cw.iter()
            .map(|x| (x, edit_distance(w, x)))
            .filter(|&(x, d)| d == 0 || (d == 1 && w.len() >= 3 && x.len() >= 3))
            .map(|(_, d)| d)
            .min()
            .map(|d| total += d)
            .is_some()
    });
    if all_words && !qw.is_empty() {
        return Some((4, total));
    }
    let d = edit_distance(&q, &c);
    (d <= (q.len() / 3).max(1)).then_some((5, d))
}

/// The candidates that `query` may have meant, best first, at most
/// [`MAX_SUGGESTIONS`].
pub fn suggest<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    suggest_keyed(query, candidates.into_iter().map(|c| (c, c)))
}

/// Like [`suggest`] over `(name, value)` pairs, returning values: several
/// names (an id and its aliases) may stand for one value, which is returned
/// once, at the rank of its best name.
pub fn suggest_keyed<'a, V: PartialEq + Copy>(
    query: &str,
    candidates: impl IntoIterator<Item = (&'a str, V)>,
) -> Vec<V> {
    let mut scored: Vec<((u8, usize), usize, V)> = Vec::new();
    for (i, (name, value)) in candidates.into_iter().enumerate() {
        let Some(s) = score(query, name) else {
            continue;
        };
        match scored.iter_mut().find(|(_, _, v)| *v == value) {
            Some(e) if s < e.0 => e.0 = s,
            Some(_) => {}
            None => scored.push((s, i, value)),
        }
    }
    scored.sort_by_key(|&(s, i, _)| (s, i));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, _, v)| v)
        .collect()
}

/// ` (did you mean a, b?)`, or empty when there is nothing to suggest: the
/// tail of an error message.
pub fn hint<S: AsRef<str>>(suggestions: &[S]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = suggestions.iter().map(AsRef::as_ref).collect();
    format!(" (did you mean {}?)", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("int3", "int4"), 1);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn rules_rank_closest_first() {
        let models = [
            "llama-3-8b",
            "llama-3.1-8b",
            "llama-3.1-70b",
            "qwen2.5-7b",
            "mistral-7b",
        ];
        // Words within one edit rank before the edit distance of the whole.
        assert_eq!(
            suggest("lama-3.1-8b", models),
            vec!["llama-3.1-8b", "llama-3-8b"]
        );
        assert_eq!(suggest("llama-3-8b-instruct", models), vec!["llama-3-8b"]);
        assert_eq!(suggest("MISTRAL_7B", models), vec!["mistral-7b"]);
        assert!(suggest("gpt-5", models).is_empty());
        assert!(suggest("", models).is_empty());
        let quants = ["fp32", "bf16", "fp16", "int8", "int4", "q4_k"];
        assert_eq!(suggest("int3", quants), vec!["int8", "int4"]);
        let devices = ["h100-sxm", "h100-pcie", "h100-nvl", "h200", "rtx-4090"];
        // Prefixes first, then one edit away.
        assert_eq!(
            suggest("h100", devices),
            vec!["h100-sxm", "h100-nvl", "h100-pcie", "h200"]
        );
        assert_eq!(suggest("4090", devices), vec!["rtx-4090"]);
    }

    #[test]
    fn keyed_returns_each_value_once_at_its_best_rank() {
        let c = [("llama3-8b", 1), ("llama-3-8b", 1), ("phi-4", 2)];
        assert_eq!(suggest_keyed("llama3-8", c), vec![1]);
        assert_eq!(hint(&["a", "b"]), " (did you mean a, b?)");
        assert_eq!(hint::<&str>(&[]), "");
    }

    #[test]
    fn long_input_is_not_compared() {
        let long = "x".repeat(100_000);
        assert!(suggest(&long, ["x"]).is_empty());
    }
}
