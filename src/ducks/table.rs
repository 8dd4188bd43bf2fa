//! The matches as `dynrec ducks` prints them.

use super::KindMatch;

/// The matches as a table, in the style of `kubectl api-resources`.
pub fn table(matches: &[KindMatch]) -> String {
    let header = ["DUCK", "APIVERSION", "KIND", "WHY"].map(String::from);
    let rows: Vec<[String; 4]> = std::iter::once(header)
        .chain(matches.iter().map(|m| {
            let api_version = if m.gvk.group.is_empty() {
                m.gvk.version.clone()
            } else {
                format!("{}/{}", m.gvk.group, m.gvk.version)
            };
            [
                m.duck.clone(),
                api_version,
                m.gvk.kind.clone(),
                m.reason.to_string(),
            ]
        }))
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = (0..3)
                .map(|i| format!("{:width$}   ", row[i], width = widths[i]))
                .collect();
            format!("{}{}\n", cells.concat(), row[3])
        })
        .collect()
}
