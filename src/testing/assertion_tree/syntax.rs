//! The syntax of an assertion tree's keys and string values, as kyverno-json reads them:
//! `~name.` (iterate), `-> name` (bind), `\escaped\`, and `(expression)` with an optional
//! `jp;` or `cel;` engine prefix.

/// A key or string value of an assertion tree, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Syntax<'a> {
    /// `~.` or `~name.`: the subtree is checked once per item (or map entry).
    pub foreach: Option<&'a str>,
    /// `-> name`: the projected value is bound to `$name`.
    pub binding: Option<&'a str>,
    /// The expression's engine (`jp`, `cel`, or `default`), when parenthesized.
    pub engine: Option<&'a str>,
    /// The field name, literal string or expression.
    pub statement: &'a str,
}

impl<'a> Syntax<'a> {
    /// Parses `text` in kyverno-json's order: foreach, binding, escape, then engine.
    pub fn parse(text: &'a str) -> Self {
        let mut rest = text;
        let mut foreach = None;
        if let Some(after) = rest.strip_prefix('~')
            && let Some(dot) = after.find('.')
            && after[..dot].chars().all(is_word)
        {
            foreach = Some(&after[..dot]);
            rest = &after[dot + 1..];
        }
        let mut binding = None;
        if let Some(arrow) = rest.rfind("->") {
            let name = rest[arrow + 2..].trim_start();
            if !name.is_empty() && name.chars().all(is_word) {
                binding = Some(name);
                rest = rest[..arrow].trim_end();
            }
        }
        let mut engine = None;
        if let Some(escaped) = rest
            .strip_prefix('\\')
            .and_then(|inner| inner.strip_suffix('\\'))
            .filter(|inner| !inner.is_empty())
        {
            rest = escaped;
        } else if let Some(inner) = rest
            .strip_prefix('(')
            .and_then(|inner| inner.strip_suffix(')'))
            .filter(|inner| !inner.is_empty())
        {
            rest = inner;
            engine = Some("default");
            if let Some(semi) = inner.find(';')
                && semi > 0
                && inner[..semi].chars().all(is_word)
                && semi + 1 < inner.len()
            {
                engine = Some(&inner[..semi]);
                rest = &inner[semi + 1..];
            }
        }
        Self {
            foreach: foreach.map(|name| name.trim()),
            binding,
            engine,
            statement: rest,
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::Syntax;

    fn parsed(text: &str) -> (Option<&str>, Option<&str>, Option<&str>, &str) {
        let syntax = Syntax::parse(text);
        (
            syntax.foreach,
            syntax.binding,
            syntax.engine,
            syntax.statement,
        )
    }

    #[test]
    fn reads_each_form_as_kyverno_json_does() {
        let table = [
            ("name", (None, None, None, "name")),
            (
                "(conditions[?type == 'Ready'])",
                (None, None, Some("default"), "conditions[?type == 'Ready']"),
            ),
            ("(jp;length(@))", (None, None, Some("jp"), "length(@)")),
            ("(cel;size(self))", (None, None, Some("cel"), "size(self)")),
            (
                "~.(containers)",
                (Some(""), None, Some("default"), "containers"),
            ),
            (
                "~c.(containers)",
                (Some("c"), None, Some("default"), "containers"),
            ),
            (
                "(spec.replicas) -> replicas",
                (None, Some("replicas"), Some("default"), "spec.replicas"),
            ),
            (
                "\\(not an expression)\\",
                (None, None, None, "(not an expression)"),
            ),
            ("()", (None, None, None, "()")),
            ("a.b", (None, None, None, "a.b")),
        ];
        for (text, want) in table {
            assert_eq!(parsed(text), want, "{text}");
        }
    }
}
