//! Names close to a CEL macro's: `transfromMap(k, v, ...)` is a call to no function, and
//! its variables read as unknown bindings; the checker names the macro meant instead.

/// The macros that bind variables: the standard ones and cel-go's two-variable forms.
const MACROS: [&str; 10] = [
    "all",
    "exists",
    "existsOne",
    "exists_one",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "sortBy",
];

/// The macro `name` is a misspelling of (at most two edits away, and not itself a macro).
pub(crate) fn misspelt_macro(name: &str) -> Option<&'static str> {
    if MACROS.contains(&name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    MACROS
        .iter()
        .map(|m| (edits(&lower, &m.to_ascii_lowercase()), *m))
        .filter(|(distance, m)| *distance <= 2 && distance * 4 <= m.len())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, m)| m)
}

/// The edit distance between `a` and `b`, counting a swap of neighbours as one edit.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut table = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in table.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in table[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[i - 1][j] + 1)
                .min(table[i][j - 1] + 1)
                .min(table[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[i - 2][j - 2] + 1);
            }
            table[i][j] = best;
        }
    }
    table[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_name_the_macro_and_other_names_nothing() {
        assert_eq!(misspelt_macro("transfromMap"), Some("transformMap"));
        assert_eq!(misspelt_macro("transformlist"), Some("transformList"));
        assert_eq!(misspelt_macro("existOne"), Some("existsOne"));
        assert_eq!(misspelt_macro("transformMap"), None);
        assert_eq!(misspelt_macro("max"), None);
        assert_eq!(misspelt_macro("join"), None);
    }
}
