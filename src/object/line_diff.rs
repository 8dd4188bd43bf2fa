//! A readable line diff, colored when `COLOR_DIFF=true`.

/// A line diff of `expected` and `actual`: `-` lines are expected only, `+` lines actual
/// only, unchanged lines start with a space.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let color = std::env::var("COLOR_DIFF").is_ok_and(|v| v == "true");
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table, from the end.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let line = |sign: char, text: &str| match (color, sign) {
        (true, '-') => format!("\x1b[31m- {text}\x1b[0m\n"),
        (true, '+') => format!("\x1b[32m+ {text}\x1b[0m\n"),
        _ => format!("{sign} {text}\n"),
    };
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &line(' ', a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out += &line('-', a[i]);
            i += 1;
        } else {
            out += &line('+', b[j]);
            j += 1;
        }
    }
    out
}
