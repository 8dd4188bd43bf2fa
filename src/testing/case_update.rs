//! `dynrec test --update`: rewrites the `expect:` blocks of a case file with what the
//! reconciles did, editing only those blocks' lines. Everything else (comments, given
//! objects, flow-style lines, key order) stays byte for byte; inside a rewritten block, a
//! comment above a key that is still there stays above it.
//!
//! The edit follows the file's indentation, so it needs the block style the examples use:
//! `cases:` a block list of mappings, `steps:` likewise.

use std::ops::Range;

use super::recorded::Recorded;

/// Where an expectation is: a case's own `expect`, or that of one of its steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectAt {
    /// The case's index in `cases`.
    pub case: usize,
    /// The step's index in the case's `steps`, if a step's.
    pub step: Option<usize>,
}

/// `text` with each named `expect:` block replaced by its recorded expectation.
pub fn rewrite_expectations(
    text: &str,
    updates: &[(ExpectAt, &Recorded)],
) -> Result<String, String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Later blocks first, so that earlier line numbers stay valid.
    let mut edits = Vec::new();
    for (at, recorded) in updates {
        let item = item_of(&lines, *at)?;
        let indent = key_indent(&lines[item.start]);
        let replacement = expect_block(&lines, item.clone(), indent, recorded);
        let range = match key_line(&lines, item.clone(), indent, "expect") {
            Some(line) => line..block_end(&lines, line, indent),
            // Before the steps, whose expectations come after the case's own.
            None => {
                let at = match (at.step, key_line(&lines, item.clone(), indent, "steps")) {
                    (None, Some(steps)) => steps,
                    _ => trim_trailing(&lines, item.clone()),
                };
                at..at
            }
        };
        edits.push((range, replacement));
    }
    edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    for (range, replacement) in edits {
        lines.splice(range, replacement);
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The lines of the case's (or its step's) mapping.
fn item_of(lines: &[String], at: ExpectAt) -> Result<Range<usize>, String> {
    let cases = key_line(lines, 0..lines.len(), 0, "cases")
        .ok_or("--update needs a top-level `cases:` key in block style")?;
    let items = list_items(lines, cases, 0);
    let case = items
        .get(at.case)
        .cloned()
        .ok_or_else(|| format!("cases[{}] is not a block-style list item", at.case))?;
    let Some(step) = at.step else {
        return Ok(case);
    };
    let indent = key_indent(&lines[case.start]);
    let steps = key_line(lines, case.clone(), indent, "steps")
        .ok_or_else(|| format!("cases[{}].steps is not in block style", at.case))?;
    list_items(lines, steps, indent)
        .get(step)
        .cloned()
        .ok_or_else(|| {
            format!(
                "cases[{}].steps[{step}] is not a block-style list item",
                at.case
            )
        })
}

/// The items of the block list under the key on line `key` (indented `indent`).
fn list_items(lines: &[String], key: usize, indent: usize) -> Vec<Range<usize>> {
    let end = block_end(lines, key, indent);
    let mut starts = Vec::new();
    let mut dash = None;
    for (i, line) in lines.iter().enumerate().take(end).skip(key + 1) {
        let Some(column) = content_indent(line) else {
            continue;
        };
        let is_item = line[column..].starts_with("- ") || line[column..].trim_end() == "-";
        match dash {
            None if is_item => {
                dash = Some(column);
                starts.push(i);
            }
            Some(d) if is_item && column == d => starts.push(i),
            _ => {}
        }
    }
    let mut items = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let next = starts.get(n + 1).copied().unwrap_or(end);
        items.push(start..trim_trailing(lines, start..next));
    }
    items
}

/// The indentation of the keys of the mapping that starts on the list item line `line`.
fn key_indent(line: &str) -> usize {
    let column = content_indent(line).unwrap_or(0);
    let after = &line[column + 1..];
    column + 1 + (after.len() - after.trim_start().len())
}

/// The line in `range` holding `key:` at `indent` (on a list item's first line too).
fn key_line(lines: &[String], range: Range<usize>, indent: usize, key: &str) -> Option<usize> {
    range.into_iter().find(|&i| {
        let line = &lines[i];
        let Some(rest) = line.get(indent..) else {
            return false;
        };
        let prefix = &line[..indent];
        let prefix_ok = prefix.trim().is_empty() || prefix.trim_end().ends_with('-');
        prefix_ok
            && rest
                .strip_prefix(key)
                .is_some_and(|after| after.starts_with(':'))
    })
}

/// The end (exclusive) of the value of the key on line `start` at `indent`: the first
/// content line left of `indent`, or at it but not a list item (a list may sit at its key's
/// indentation), less the blank and comment lines before it.
fn block_end(lines: &[String], start: usize, indent: usize) -> usize {
    let ends = |line: &String| match content_indent(line) {
        Some(c) if c < indent => true,
        Some(c) if c == indent => !line[c..].starts_with('-'),
        _ => false,
    };
    let next = (start + 1..lines.len())
        .find(|&i| ends(&lines[i]))
        .unwrap_or(lines.len());
    trim_trailing(lines, start..next)
}

/// `range.end` moved up past trailing blank and comment lines (never above `range.start + 1`).
fn trim_trailing(lines: &[String], range: Range<usize>) -> usize {
    let mut end = range.end;
    while end > range.start + 1 && content_indent(&lines[end - 1]).is_none() {
        end -= 1;
    }
    end
}

/// The column of a line's content; `None` for blank and comment lines.
fn content_indent(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    (!trimmed.is_empty() && !trimmed.starts_with('#')).then(|| line.len() - trimmed.len())
}

/// The new `expect:` lines at `indent`, keeping each comment that sat above a key that the
/// new block still has.
fn expect_block(
    lines: &[String],
    item: Range<usize>,
    indent: usize,
    recorded: &Recorded,
) -> Vec<String> {
    let pad = " ".repeat(indent);
    let comments = old_comments(lines, item.clone(), indent);
    let yaml = serde_saphyr::to_string(recorded).unwrap_or_default();
    if yaml.trim().is_empty() || yaml.trim() == "{}" {
        return match exact_line(lines, item, indent) {
            Some(exact) => vec![format!("{pad}expect:"), exact],
            None => vec![format!("{pad}expect: {{}}")],
        };
    }
    let mut block = vec![format!("{pad}expect:")];
    block.extend(exact_line(lines, item, indent));
    for line in yaml.lines() {
        let top_key = !line.starts_with([' ', '-']) && line.contains(':');
        if top_key {
            let key = line.split(':').next().unwrap_or_default();
            if let Some((_, above)) = comments.iter().find(|(k, _)| k == key) {
                block.extend(above.iter().cloned());
            }
        }
        block.push(format!("{pad}  {line}"));
    }
    block
}

/// The old `expect:` block's `exact:` line, kept: it says how the block is compared.
fn exact_line(lines: &[String], item: Range<usize>, indent: usize) -> Option<String> {
    let start = key_line(lines, item, indent, "expect")?;
    let end = block_end(lines, start, indent);
    key_line(lines, start + 1..end, indent + 2, "exact").map(|i| lines[i].clone())
}

/// The comment lines directly above each key of the old `expect:` block, by key.
fn old_comments(lines: &[String], item: Range<usize>, indent: usize) -> Vec<(String, Vec<String>)> {
    let Some(start) = key_line(lines, item, indent, "expect") else {
        return Vec::new();
    };
    let end = block_end(lines, start, indent);
    let mut found = Vec::new();
    let mut pending = Vec::new();
    for line in &lines[start + 1..end] {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') {
            pending.push(line.clone());
        } else if content_indent(line).is_some_and(|c| c == indent + 2) && !trimmed.starts_with('-')
        {
            let key = trimmed.split(':').next().unwrap_or_default().to_string();
            found.push((key, std::mem::take(&mut pending)));
        } else if !trimmed.is_empty() {
            pending.clear();
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "\
# the widgets' cases
definition: widgets
cases:
- name: one   # first
  given: [{kind: Widget}]
  expect:
    exact: true
    # the ConfigMap
    creates:
    - {kind: ConfigMap, data: {a: b}}
    # no error
    error: false

- name: two
  given: []
  steps:
  - name: edit
    patch: []
    expect: {error: true}
  - name: no expectation
    delete: []
";

    fn recorded() -> Recorded {
        Recorded {
            creates: vec![json!({"kind": "ConfigMap", "data": {"a": "c"}})],
            ..Default::default()
        }
    }

    #[test]
    fn only_the_expect_blocks_change_and_comments_above_kept_keys_stay() {
        let recorded = recorded();
        let updates = [
            (
                ExpectAt {
                    case: 0,
                    step: None,
                },
                &recorded,
            ),
            (
                ExpectAt {
                    case: 1,
                    step: Some(0),
                },
                &Recorded::default(),
            ),
            (
                ExpectAt {
                    case: 1,
                    step: Some(1),
                },
                &recorded,
            ),
        ];
        let out = rewrite_expectations(FILE, &updates).unwrap();
        assert_eq!(
            out,
            "\
# the widgets' cases
definition: widgets
cases:
- name: one   # first
  given: [{kind: Widget}]
  expect:
    exact: true
    # the ConfigMap
    creates:
    - kind: ConfigMap
      data:
        a: c

- name: two
  given: []
  steps:
  - name: edit
    patch: []
    expect: {}
  - name: no expectation
    delete: []
    expect:
      creates:
      - kind: ConfigMap
        data:
          a: c
"
        );
    }

    #[test]
    fn a_case_without_expect_gets_one_and_a_flow_file_is_refused() {
        let text = "cases:\n- name: x\n  given: []\n";
        let recorded = recorded();
        let out = rewrite_expectations(
            text,
            &[(
                ExpectAt {
                    case: 0,
                    step: None,
                },
                &recorded,
            )],
        )
        .unwrap();
        assert!(out.ends_with("  given: []\n  expect:\n    creates:\n    - kind: ConfigMap\n      data:\n        a: c\n"), "{out}");
        let flow = "{cases: [{name: x}]}\n";
        let err = rewrite_expectations(
            flow,
            &[(
                ExpectAt {
                    case: 0,
                    step: None,
                },
                &recorded,
            )],
        )
        .unwrap_err();
        assert!(err.contains("block style"), "{err}");
    }
}
