//! An RGD's expressions in its own words. The translation renames KRO's variables
//! (`schema` is `self`, an iterator `each`, a resource in its own `readyWhen` `child`), so
//! the checker sees renamed text; a message about a translated expression is given back
//! as the RGD wrote it: the expression quoted as written, the names in the message (and
//! its suggested rewrite) the RGD's, the position and caret in the written text.

use std::sync::Arc;

use serde_json::Value;

use super::expressions::{Renamed, Renames, expressions, rename};
use super::model::{Resource, ResourceGraphDefinition};
use super::translate::Translated;
use crate::definitions::error::locate_path;
use crate::definitions::{DefinitionError, Expression, Step, Written};

/// One expression of an RGD: where, as written, as translated, and what was renamed.
#[derive(Clone, Debug)]
struct Spelling {
    /// The RGD path its messages are under (a resource's, or `spec.schema.status`).
    at: String,
    written: String,
    renamed: String,
    renames: Vec<Renamed>,
}

/// The expressions of an RGD whose translation renamed something (none for a definition
/// not translated from an RGD).
#[derive(Clone, Debug, Default)]
pub struct Spellings {
    of_rgd: bool,
    found: Vec<Arc<Spelling>>,
}

impl Spellings {
    /// The expressions of `rgd` paired with those of its translation.
    pub fn of(rgd: &ResourceGraphDefinition, translated: &Translated) -> Self {
        let mut spellings = Spellings {
            of_rgd: true,
            found: Vec::new(),
        };
        let steps = &translated.definition.spec.steps;
        let place = |path: String| locate_path(&path, &translated.origins);
        for (i, (resource, step)) in rgd.spec.resources.iter().zip(steps).enumerate() {
            let at = place(format!("spec.steps[{i}].{}", step.kind()));
            spellings.pair_resource(&at, resource, step);
        }
        if let Some(Step::Sync(sync)) = steps.last() {
            let at = place(format!("spec.steps[{}].sync.status", steps.len() - 1));
            spellings.pair_values(&at, &rgd.spec.schema.status, &sync.status);
        }
        if let (Some(kro), Some(written)) = (
            &translated.definition.spec.kro,
            rgd.spec.schema.status.get("conditions"),
        ) {
            let renamed = Value::from(kro.conditions.clone());
            spellings.pair_values("spec.schema.status.conditions", written, &renamed);
        }
        spellings
    }

    /// Pairs the expressions of `resource`, at `at`, with those of its step.
    fn pair_resource(&mut self, at: &str, resource: &Resource, step: &Step) {
        let (template, include_when, ready_when) = match step {
            Step::Child(child) => (&child.template, &child.include_when, &child.ready_when),
            Step::ChildSet(set) => {
                if let [dimension] = resource.for_each.as_slice()
                    && let Some(list) = dimension.values().next()
                {
                    self.pair_text(at, list, &set.for_each);
                }
                (&set.template, &set.include_when, &set.ready_when)
            }
            Step::Ref(reference) => {
                if let Some(external) = &resource.external_ref {
                    let metadata = &external.metadata;
                    for (written, renamed) in [
                        (&metadata.name, &reference.name),
                        (&metadata.namespace, &reference.namespace),
                    ] {
                        if let (Some(w), Some(r)) = (written, renamed) {
                            self.pair_text(at, w, r);
                        }
                    }
                    if let (Some(w), Some(r)) = (&metadata.selector, &reference.selector) {
                        for (key, written) in &w.match_labels {
                            if let Some(renamed) = r.match_labels.get(key) {
                                self.pair_text(at, written, renamed);
                            }
                        }
                    }
                }
                return;
            }
            _ => return,
        };
        if let Some(written) = &resource.template {
            self.pair_values(at, written, template);
        }
        for (w, r) in resource.include_when.iter().zip(include_when) {
            self.pair_text(at, w, r);
        }
        for (w, r) in resource.ready_when.iter().zip(ready_when) {
            self.pair_text(&format!("{at}.readyWhen"), w, r);
        }
    }

    /// Pairs the strings of `written` with those at the same places in `renamed` (fields
    /// the translation added, such as KRO's labels, have nothing written).
    fn pair_values(&mut self, at: &str, written: &Value, renamed: &Value) {
        match (written, renamed) {
            (Value::String(w), Value::String(r)) => self.pair_text(at, w, r),
            (Value::Array(w), Value::Array(r)) => {
                for (w, r) in w.iter().zip(r) {
                    self.pair_values(at, w, r);
                }
            }
            (Value::Object(w), Value::Object(r)) => {
                for (key, w) in w {
                    if let Some(r) = r.get(key) {
                        self.pair_values(at, w, r);
                    }
                }
            }
            _ => {}
        }
    }

    /// Pairs the `${...}` of a written string with those of its renamed form, in order.
    fn pair_text(&mut self, at: &str, written: &str, renamed: &str) {
        let (w, r) = (expressions(written), expressions(renamed));
        if w.len() != r.len() {
            return;
        }
        for ((ws, we), (rs, re)) in w.into_iter().zip(r) {
            let (written, renamed) = (written[ws..we].trim(), renamed[rs..re].trim());
            if written == renamed {
                continue;
            }
            if let Some(renames) = renamings(written, renamed) {
                self.found.push(Arc::new(Spelling {
                    at: at.to_owned(),
                    written: written.to_owned(),
                    renamed: renamed.to_owned(),
                    renames,
                }));
            }
        }
    }

    /// `error` (its path already the RGD's) in the RGD's words.
    pub fn respell(&self, mut error: DefinitionError) -> DefinitionError {
        if error.expression.is_none() {
            quoted_first(&mut error);
        }
        let mut names: Vec<&Renamed> = Vec::new();
        if let Some(expression) = &error.expression
            && let Some(spelling) = self.find(&error.path, expression)
        {
            error.expression = Some(spelling.written.as_str().into());
            if let Some(position) = error.position.take() {
                let (line, column) = spelling.written_position(position.line, position.column);
                error = error.at_position(line, column);
            }
            names.extend(&spelling.renames);
        }
        let instance = instance();
        if self.of_rgd && error.expression.is_some() {
            names.push(&instance);
        }
        for spelling in self.under(&error.path) {
            let quoted = format!("${{{}}}", spelling.renamed);
            if error.message.contains(&quoted) {
                error.message = error
                    .message
                    .replace(&quoted, &format!("${{{}}}", spelling.written));
                names.extend(&spelling.renames);
            }
        }
        error.message = written_names(&error.message, &names);
        error
    }

    /// Gives each of `expressions` the translation renamed the text it was written as, so
    /// that every message while reconciling quotes it, and names its variables, as written.
    pub fn spell<'a>(&self, expressions: impl IntoIterator<Item = &'a mut Expression>) {
        for expression in expressions {
            if let Some(spelling) = self.find(expression.path(), expression.source()) {
                expression.written_as(spelling.clone());
            }
        }
    }

    /// The spellings whose place `path` is at or under, the most specific first.
    fn under(&self, path: &str) -> Vec<&Arc<Spelling>> {
        let mut found: Vec<&Arc<Spelling>> = self
            .found
            .iter()
            .filter(|s| {
                path.strip_prefix(s.at.as_str()).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')
                })
            })
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.at.len()));
        found
    }

    fn find(&self, path: &str, renamed: &str) -> Option<&Arc<Spelling>> {
        self.under(path).into_iter().find(|s| s.renamed == renamed)
    }
}

impl Spelling {
    /// The 1-based line and column in the written text of those in the renamed text.
    fn written_position(&self, line: usize, column: usize) -> (usize, usize) {
        let offset = offset_of(&self.renamed, line, column);
        let mut shift: isize = 0;
        let mut written = None;
        for r in &self.renames {
            let length = r.renamed.chars().count();
            if r.renamed_at + length <= offset {
                shift += r.written.chars().count() as isize - length as isize;
            } else if r.renamed_at <= offset {
                written = Some(r.written_at);
                break;
            }
        }
        let written = written.unwrap_or_else(|| offset.saturating_add_signed(shift));
        position_of(&self.written, written)
    }
}

impl Written for Spelling {
    fn text(&self) -> &str {
        &self.written
    }

    fn respell(&self, message: &str) -> String {
        let instance = instance();
        let mut names: Vec<&Renamed> = self.renames.iter().collect();
        names.push(&instance);
        written_names(message, &names)
    }
}

/// KRO's `schema`, the instance, which dynrec reads as `self`. `self` is never a name an
/// RGD gives (it is reserved): in a message about an RGD it is always `schema`.
fn instance() -> Renamed {
    Renamed {
        written: "schema".into(),
        written_at: 0,
        renamed: "self".into(),
        renamed_at: 0,
    }
}

/// The character offset of a 1-based line and column in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let before: usize = text
        .split('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.chars().count() + 1)
        .sum();
    before + column.saturating_sub(1)
}

/// The 1-based line and column of a character offset of `text`.
fn position_of(text: &str, offset: usize) -> (usize, usize) {
    let before: String = text.chars().take(offset).collect();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// An error whose message begins by quoting its expression (`${...}: ...`), as the
/// parser's do, with the expression taken out as [`DefinitionError::expression`].
fn quoted_first(error: &mut DefinitionError) {
    let Some(&(start, end)) = expressions(&error.message).first() else {
        return;
    };
    if start != 2 || !error.message[end..].starts_with("}: ") {
        return;
    }
    let expression = error.message[start..end].trim().into();
    error.message = error.message[end + 3..].to_owned();
    error.expression = Some(expression);
}

/// What each renamed variable of `written` became in `renamed`, when `renamed` is `written`
/// with variables renamed (`worker` may become `each.worker`); `None` when it is not.
fn renamings(written: &str, renamed: &str) -> Option<Vec<Renamed>> {
    let (w, r) = (identifiers(written), identifiers(renamed));
    if w.len() != r.len() {
        return None;
    }
    let renamed_chars: Vec<char> = renamed.chars().collect();
    let written_chars: Vec<char> = written.chars().collect();
    let follows = |chars: &[char], at: usize, text: &str| {
        let tail: String = chars.iter().skip(at).take(text.chars().count()).collect();
        tail == text
    };
    let mut renames = Vec::new();
    for (w, r) in w.into_iter().zip(r) {
        if w.renamed == r.renamed {
            continue;
        }
        let dotted = format!(".{}", w.renamed);
        let end_r = r.renamed_at + r.renamed.chars().count();
        let end_w = w.renamed_at + w.renamed.chars().count();
        let to = match follows(&renamed_chars, end_r, &dotted)
            && !follows(&written_chars, end_w, &dotted)
        {
            true => format!("{}{dotted}", r.renamed),
            false => r.renamed,
        };
        renames.push(Renamed {
            written: w.renamed,
            written_at: w.renamed_at,
            renamed: to,
            renamed_at: r.renamed_at,
        });
    }
    (rebuild(written, &renames) == renamed).then_some(renames)
}

/// Each identifier of `expression` a variable may be (as a renaming to itself).
fn identifiers(expression: &str) -> Vec<Renamed> {
    let all: super::expressions::Renames = super::expressions::variables(expression)
        .into_iter()
        .map(|v| (v.clone(), v))
        .collect();
    super::expressions::rename_tracked(expression, &all).1
}

/// `written` with `renames` applied.
fn rebuild(written: &str, renames: &[Renamed]) -> String {
    let chars: Vec<char> = written.chars().collect();
    let mut out = String::with_capacity(written.len());
    let mut at = 0;
    for r in renames {
        out.extend(&chars[at..r.written_at]);
        out.push_str(&r.renamed);
        at = r.written_at + r.written.chars().count();
    }
    out.extend(&chars[at.min(chars.len())..]);
    out
}

/// `message` with the CEL it names (outside the `${...}` it quotes) in the written names:
/// each renamed variable read where a variable is read (not after `.`, not in a string).
fn written_names(message: &str, names: &[&Renamed]) -> String {
    if names.is_empty() {
        return message.to_owned();
    }
    let mut by_length: Vec<&Renamed> = names.to_vec();
    by_length.sort_by_key(|r| std::cmp::Reverse(r.renamed.len()));
    by_length.dedup_by(|a, b| a.renamed == b.renamed);
    let mut out = String::with_capacity(message.len());
    let mut last = 0;
    let quotes = expressions(message);
    let mut pieces: Vec<(usize, usize, bool)> = Vec::new();
    for (start, end) in quotes {
        pieces.push((last, start, true));
        pieces.push((start, end, false));
        last = end;
    }
    pieces.push((last, message.len(), true));
    // A quoted expression is the RGD's already, or one the message suggests (`${base64.encode(
    // hash.md5(each))}`): its variables are renamed back. No RGD expression reads a variable
    // named as the translation names them (they are reserved).
    let back: Renames = by_length
        .iter()
        .map(|r| (r.renamed.clone(), r.written.clone()))
        .collect();
    for (start, end, prose) in pieces {
        let text = &message[start..end];
        if !prose {
            out.push_str(&rename(text, &back));
            continue;
        }
        let chars: Vec<char> = text.chars().collect();
        let mut at = 0;
        for word in identifiers(text) {
            let found = by_length.iter().find(|r| {
                let length = r.renamed.chars().count();
                let tail: String = chars.iter().skip(word.renamed_at).take(length).collect();
                let next = chars.get(word.renamed_at + length);
                tail == r.renamed && !next.is_some_and(|c| c.is_alphanumeric() || *c == '_')
            });
            if let Some(r) = found {
                out.extend(&chars[at..word.renamed_at]);
                out.push_str(&r.written);
                at = word.renamed_at + r.renamed.chars().count();
            }
        }
        out.extend(&chars[at.min(chars.len())..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamings_are_found_by_comparing_the_texts() {
        let renames = renamings(
            "worker.name + schema.spec.x",
            "each.worker.name + self.spec.x",
        )
        .expect("a renaming");
        let pairs: Vec<(&str, &str, usize, usize)> = renames
            .iter()
            .map(|r| {
                (
                    r.written.as_str(),
                    r.renamed.as_str(),
                    r.written_at,
                    r.renamed_at,
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [("worker", "each.worker", 0, 0), ("schema", "self", 14, 19)]
        );
        assert!(renamings("schema.spec.x", "self.spec.y").is_none());
    }

    #[test]
    fn positions_after_a_renamed_word_are_moved_back() {
        let spelling = Spelling {
            at: String::new(),
            written: "schema.spec.a +\n  schema.spec.b".into(),
            renamed: "self.spec.a +\n  self.spec.b".into(),
            renames: renamings(
                "schema.spec.a +\n  schema.spec.b",
                "self.spec.a +\n  self.spec.b",
            )
            .unwrap(),
        };
        assert_eq!(spelling.written_position(1, 5), (1, 7));
        assert_eq!(spelling.written_position(1, 2), (1, 1));
        assert_eq!(spelling.written_position(2, 7), (2, 9));
        assert_eq!(spelling.written_position(1, 13), (1, 15));
    }

    #[test]
    fn an_expression_is_quoted_and_named_as_written_in_its_evaluation_errors() {
        let (written, renamed) = (
            "worker.size + schema.spec.n",
            "each.worker.size + self.spec.n",
        );
        let spellings = Spellings {
            of_rgd: true,
            found: vec![Arc::new(Spelling {
                at: "spec.resources[1] (id workers)".into(),
                written: written.into(),
                renamed: renamed.into(),
                renames: renamings(written, renamed).unwrap(),
            })],
        };
        let message = "self.spec.n is not each.worker.size";
        let compile = |path: &str| Expression::compile(renamed, path).unwrap();
        // Elsewhere (another resource, a native definition), it is quoted as compiled.
        let mut elsewhere = compile("spec.resources[0] (id config).data.size");
        spellings.spell([&mut elsewhere]);
        assert_eq!(elsewhere.to_string(), format!("${{{renamed}}}"));
        assert_eq!(
            elsewhere.error(message).to_string(),
            format!("spec.resources[0] (id config).data.size: ${{{renamed}}}: {message}")
        );
        let mut spelled = compile("spec.resources[1] (id workers).template.data.size");
        spellings.spell([&mut spelled]);
        assert_eq!(spelled.source(), renamed);
        assert_eq!(spelled.to_string(), format!("${{{written}}}"));
        assert_eq!(
            spelled.error(message).to_string(),
            format!(
                "spec.resources[1] (id workers).template.data.size: ${{{written}}}: schema.spec.n is not worker.size"
            )
        );
    }

    #[test]
    fn names_in_a_message_are_the_written_ones_outside_quotes() {
        let renames = renamings("worker.a + schema.b", "each.worker.a + self.b").unwrap();
        let names: Vec<&Renamed> = renames.iter().collect();
        assert_eq!(
            written_names(
                "${x}: self.b may be absent (the schema has no default): read it as self.?b, or guard it with has(self.b); each.worker.a and 'self'",
                &names
            ),
            "${x}: schema.b may be absent (the schema has no default): read it as schema.?b, or guard it with has(schema.b); worker.a and 'self'"
        );
    }
}
