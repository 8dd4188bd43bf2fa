//! Renaming the variables of KRO's `${...}` expressions to dynrec's: `schema` is the
//! instance (`self` in a definition), a collection's iterator is `each`, a resource's own
//! id in its `readyWhen` is `child`. Only identifiers are renamed, never a field after
//! `.`, nor text inside string literals.

use std::collections::BTreeMap;

use serde_json::Value;

/// Variable names and what they become.
pub type Renames = BTreeMap<String, String>;

/// `expression` (CEL, without `${}`) with its variables renamed.
pub fn rename(expression: &str, renames: &Renames) -> String {
    walk(expression, |word| renames.get(word).cloned()).0
}

/// A variable renamed in an expression: its name as written and where (in characters),
/// and what it became and where that is in the renamed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// The name as written.
    pub written: String,
    /// Its offset in the written expression.
    pub written_at: usize,
    /// What it became.
    pub renamed: String,
    /// Its offset in the renamed expression.
    pub renamed_at: usize,
}

/// `expression` (CEL, without `${}`) with its variables renamed, and each renaming.
pub fn rename_tracked(expression: &str, renames: &Renames) -> (String, Vec<Renamed>) {
    walk(expression, |word| renames.get(word).cloned())
}

/// The variables `expression` (CEL, without `${}`) reads, in order, each once.
pub fn variables(expression: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let _ = walk(expression, |word| {
        if !found.iter().any(|f| f == word) {
            found.push(word.to_owned());
        }
        None
    });
    found
}

/// `expression` with each variable (an identifier not after `.` nor in a string literal)
/// replaced by what `replace` gives for it, if anything, and each replacement.
fn walk(
    expression: &str,
    mut replace: impl FnMut(&str) -> Option<String>,
) -> (String, Vec<Renamed>) {
    let chars: Vec<char> = expression.chars().collect();
    let mut out = String::with_capacity(expression.len());
    let mut out_chars = 0;
    let mut renamed = Vec::new();
    let mut i = 0;
    let mut previous_significant = ' ';
    while i < chars.len() {
        let c = chars[i];
        if let Some(end) = string_literal_end(&chars, i) {
            out.extend(&chars[i..end]);
            out_chars += end - i;
            i = end;
            previous_significant = '"';
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match (previous_significant != '.')
                .then(|| replace(&word))
                .flatten()
            {
                Some(to) => {
                    out.push_str(&to);
                    let length = to.chars().count();
                    renamed.push(Renamed {
                        written: word,
                        written_at: start,
                        renamed: to,
                        renamed_at: out_chars,
                    });
                    out_chars += length;
                }
                None => {
                    out.push_str(&word);
                    out_chars += i - start;
                }
            }
            previous_significant = 'a';
            continue;
        }
        if !c.is_whitespace() {
            previous_significant = c;
        }
        out.push(c);
        out_chars += 1;
        i += 1;
    }
    (out, renamed)
}

/// Where the string literal starting at `i` ends (one past its closing quote), if one
/// starts there: `'..'`, `".."`, triple-quoted, with an `r`/`b` prefix or not.
fn string_literal_end(chars: &[char], i: usize) -> Option<usize> {
    let mut start = i;
    let mut raw = false;
    while start < chars.len() && matches!(chars[start], 'r' | 'R' | 'b' | 'B') && start - i < 2 {
        raw |= matches!(chars[start], 'r' | 'R');
        start += 1;
    }
    let quote = *chars.get(start)?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    // A prefix letter only counts when it does not end an identifier.
    if start > i && i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut j = start + if triple { 3 } else { 1 };
    while j < chars.len() {
        if chars[j] == '\\' && !raw {
            j += 2;
            continue;
        }
        if chars[j] == quote {
            if !triple {
                return Some(j + 1);
            }
            if chars.get(j + 1) == Some(&quote) && chars.get(j + 2) == Some(&quote) {
                return Some(j + 3);
            }
        }
        j += 1;
    }
    Some(chars.len())
}

/// The `${...}` expressions of a string, as (start, end) byte ranges of their inside.
pub fn expressions(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let plain: Vec<char> = chars.iter().map(|(_, c)| *c).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 1 < chars.len() {
        if plain[i] != '$' || plain[i + 1] != '{' {
            i += 1;
            continue;
        }
        let open = i + 2;
        let mut depth = 0;
        let mut j = open;
        let mut closed = None;
        while j < plain.len() {
            if let Some(end) = string_literal_end(&plain, j) {
                j = end;
                continue;
            }
            match plain[j] {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    closed = Some(j);
                    break;
                }
                '}' => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        let Some(close) = closed else { break };
        let byte = |k: usize| chars.get(k).map_or(text.len(), |(b, _)| *b);
        found.push((byte(open), byte(close)));
        i = close + 1;
    }
    found
}

/// `text` with the variables of each of its `${...}` renamed.
pub fn rename_in_text(text: &str, renames: &Renames) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in expressions(text) {
        out.push_str(&text[last..start]);
        out.push_str(&rename(&text[start..end], renames));
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// Every string of `value` (keys too) with its expressions' variables renamed.
pub fn rename_in_value(value: &Value, renames: &Renames) -> Value {
    match value {
        Value::String(text) => Value::String(rename_in_text(text, renames)),
        Value::Array(items) => items.iter().map(|v| rename_in_value(v, renames)).collect(),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (rename_in_text(k, renames), rename_in_value(v, renames)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The inside of a string that is exactly one `${...}`, if it is.
pub fn whole_expression(text: &str) -> Option<&str> {
    match expressions(text).as_slice() {
        [(start, end)] if *start == 2 && *end == text.len() - 1 => Some(&text[2..text.len() - 1]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renames(pairs: &[(&str, &str)]) -> Renames {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn only_variables_are_renamed() {
        let r = renames(&[("schema", "self"), ("worker", "each")]);
        assert_eq!(
            rename("schema.spec.schema + 'schema' + worker.name", &r),
            "self.spec.schema + 'schema' + each.name"
        );
        assert_eq!(
            rename(r#"has(schema.spec.x) ? "a \"schema\"" : schema . spec"#, &r),
            r#"has(self.spec.x) ? "a \"schema\"" : self . spec"#
        );
        assert_eq!(rename("myschema.x + schema_x", &r), "myschema.x + schema_x");
        assert_eq!(
            variables("schema.spec.x + 'worker' + worker.name + size(schema)"),
            ["schema", "worker", "size"]
        );
    }

    #[test]
    fn templates_rename_inside_each_expression() {
        let r = renames(&[("schema", "self")]);
        assert_eq!(
            rename_in_text("${schema.metadata.name}-${ {'a': schema.spec.x}['a'] }", &r),
            "${self.metadata.name}-${ {'a': self.spec.x}['a'] }"
        );
        assert_eq!(rename_in_text("schema ${schema.x}", &r), "schema ${self.x}");
        assert_eq!(whole_expression("${a.b}"), Some("a.b"));
        assert_eq!(whole_expression("x-${a.b}"), None);
        assert_eq!(whole_expression("${a}${b}"), None);
    }
}
