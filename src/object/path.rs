use std::fmt;

use kube::api::DynamicObject;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A field's location: a dotted path (`spec.template.spec.containers[0].image`,
/// `metadata.labels["app.kubernetes.io/name"]`) or a JSON pointer (`/spec/replicas`).
///
/// A segment addresses an object key or, on an array, an index; `-` appends on set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<String>,
}

/// A field path was invalid or led to a value of the wrong type.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path text could not be parsed.
    #[error("invalid field path {path:?}: {reason}")]
    Invalid {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value on the path has another JSON type than the one needed.
    #[error("field {path} is {found}, expected {expected}")]
    WrongType {
        /// The path up to the offending value.
        path: String,
        /// The JSON type needed there.
        expected: &'static str,
        /// The JSON type found there.
        found: &'static str,
    },
    /// An array index is past the end.
    #[error("field {path}: index {index} is out of range (length {len})")]
    OutOfRange {
        /// The path of the array.
        path: String,
        /// The index asked for.
        index: String,
        /// The array's length.
        len: usize,
    },
    /// The value could not be decoded as the requested type.
    #[error("field {path} cannot be read as {type_name}: {source}")]
    Decode {
        /// The path of the value.
        path: String,
        /// The Rust type asked for.
        type_name: &'static str,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// The path addresses `metadata`, `apiVersion` or `kind`, which a `DynamicObject` keeps typed.
    #[error("field {path} is typed on DynamicObject: use its metadata or types instead")]
    Typed {
        /// The path as given.
        path: String,
    },
}

impl FieldPath {
    /// Parses a dotted path or a JSON pointer.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let invalid = |reason| PathError::Invalid {
            path: text.to_string(),
            reason,
        };
        let segments = if let Some(pointer) = text.strip_prefix('/') {
            pointer
                .split('/')
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect()
        } else {
            parse_dotted(text.strip_prefix('.').unwrap_or(text)).map_err(invalid)?
        };
        if segments.is_empty() {
            return Err(invalid("empty path"));
        }
        Ok(Self {
            text: text.to_string(),
            segments,
        })
    }

    /// The path's segments (object keys or array indices).
    pub fn segments(&self) -> &[String] {
        &self.segments
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_dotted(text: &str) -> Result<Vec<String>, &'static str> {
    let mut segments = Vec::new();
    let mut chars = text.chars().peekable();
    let mut current = String::new();
    // Whether the last segment was closed by `]`, so a following `.` or `[` needs no key.
    let mut closed = false;
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if current.is_empty() && !closed {
                    return Err("empty segment");
                }
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
                closed = false;
                if chars.peek().is_none() {
                    return Err("trailing '.'");
                }
            }
            '[' => {
                if !current.is_empty() {
                    segments.push(std::mem::take(&mut current));
                }
                segments.push(parse_bracket(&mut chars)?);
                closed = true;
            }
            ']' => return Err("unbalanced ']'"),
            c => {
                if closed {
                    return Err("expected '.' or '[' after ']'");
                }
                current.push(c);
            }
        }
    }
    if !current.is_empty() {
        segments.push(current);
    }
    Ok(segments)
}

fn parse_bracket(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Result<String, &'static str> {
    let mut segment = String::new();
    match chars.peek().copied() {
        Some(quote @ ('"' | '\'')) => {
            chars.next();
            loop {
                match chars.next() {
                    Some(c) if c == quote => break,
                    Some(c) => segment.push(c),
                    None => return Err("unterminated quote"),
                }
            }
            if chars.next() != Some(']') {
                return Err("expected ']' after quoted key");
            }
        }
        _ => loop {
            match chars.next() {
                Some(']') => break,
                Some(c) if c.is_ascii_digit() || c == '-' => segment.push(c),
                Some(_) => return Err("brackets hold an index or a quoted key"),
                None => return Err("unterminated '['"),
            }
        },
    }
    if segment.is_empty() {
        return Err("empty brackets");
    }
    Ok(segment)
}

fn render(segments: &[&str]) -> String {
    let mut out = String::new();
    for segment in segments {
        if segment.parse::<usize>().is_ok() || *segment == "-" {
            out.push_str(&format!("[{segment}]"));
        } else if segment.contains(['.', '[', ']']) {
            out.push_str(&format!("[{segment:?}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

/// The JSON type name of a value, for error messages.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(path: &[&str], len: usize, expected: &'static str, found: &Value) -> PathError {
    PathError::WrongType {
        path: render(&path[..len]),
        expected,
        found: type_name(found),
    }
}

fn index(path: &[&str], at: usize, len: usize) -> Result<usize, PathError> {
    let segment = path[at];
    segment
        .parse::<usize>()
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| PathError::OutOfRange {
            path: render(&path[..at]),
            index: segment.to_string(),
            len,
        })
}

/// The segments of `path`, borrowed from the text when it is plain dotted keys (no `[`,
/// `]` or leading `/`, as `status.conditions`), which allocates no strings; else parsed.
fn with_segments<T>(
    path: &str,
    walk: impl FnOnce(&[&str]) -> Result<T, PathError>,
) -> Result<T, PathError> {
    if !path.starts_with('/') {
        let body = path.strip_prefix('.').unwrap_or(path);
        let mut inline = [""; INLINE_SEGMENTS];
        match split_plain(body, &mut inline) {
            Plain::Inline(count) => return walk(&inline[..count]),
            Plain::Long => return walk(&body.split('.').collect::<Vec<_>>()),
            Plain::Not => {}
        }
    }
    let parsed = FieldPath::parse(path)?;
    let segments: Vec<&str> = parsed.segments.iter().map(String::as_str).collect();
    walk(&segments)
}

/// Segments a plain path holds without allocating (`status.conditions` has two).
const INLINE_SEGMENTS: usize = 8;

/// What [`split_plain`] found.
enum Plain {
    /// A plain path of this many segments, now in the inline array.
    Inline(usize),
    /// A plain path of more segments than the inline array holds.
    Long,
    /// Not a plain path (brackets or an empty segment): parsed by [`FieldPath::parse`].
    Not,
}

/// Splits the body of a dotted path (no pointer, no brackets, no empty segment) at its dots
/// into `inline`, as [`FieldPath::parse`] would split it, in one pass over its bytes.
fn split_plain<'p>(body: &'p str, inline: &mut [&'p str; INLINE_SEGMENTS]) -> Plain {
    let (mut count, mut start) = (0, 0);
    for (i, byte) in body.bytes().enumerate() {
        match byte {
            b'[' | b']' => return Plain::Not,
            b'.' if i == start => return Plain::Not,
            b'.' => {
                if count < INLINE_SEGMENTS {
                    inline[count] = &body[start..i];
                }
                count += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    if start == body.len() {
        return Plain::Not;
    }
    match count < INLINE_SEGMENTS {
        true => {
            inline[count] = &body[start..];
            Plain::Inline(count + 1)
        }
        false => Plain::Long,
    }
}

fn lookup<'v>(root: &'v Value, path: &[&str]) -> Result<Option<&'v Value>, PathError> {
    let mut current = root;
    for (at, segment) in path.iter().enumerate() {
        current = match current {
            Value::Object(map) => match get(map, segment) {
                Some(v) => v,
                None => return Ok(None),
            },
            Value::Array(items) => match segment.parse::<usize>() {
                Ok(i) if i < items.len() => &items[i],
                Ok(_) => return Ok(None),
                Err(_) => return Err(wrong_type(path, at, "an object", current)),
            },
            Value::Null => return Ok(None),
            other => return Err(wrong_type(path, at, "an object or array", other)),
        };
    }
    Ok(Some(current))
}

/// Objects of up to this many entries are scanned rather than hashed into.
const SCANNED_ENTRIES: usize = 8;

/// The value under `key`. A small object (most of a Kubernetes object's) is scanned: its
/// entries are contiguous, where a hashed lookup first hashes the key (SipHash) and reads
/// the hash table, one more load that misses on an object the CPU's caches let go of.
fn get<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if map.len() > SCANNED_ENTRIES {
        return map.get(key);
    }
    super::prefetch::entries(map);
    map.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn insert(root: &mut Value, path: &[&str], value: Value) -> Result<(), PathError> {
    let (last, parents) = path.split_last().ok_or(PathError::Invalid {
        path: String::new(),
        reason: "empty path",
    })?;
    let mut current = root;
    for (at, segment) in parents.iter().enumerate() {
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        current = match current {
            Value::Object(map) => map
                .entry(*segment)
                .or_insert_with(|| Value::Object(Map::new())),
            Value::Array(items) => {
                let i = index(path, at, items.len())?;
                &mut items[i]
            }
            other => return Err(wrong_type(path, at, "an object or array", other)),
        };
    }
    let at = parents.len();
    if current.is_null() {
        *current = Value::Object(Map::new());
    }
    match current {
        Value::Object(map) => {
            map.insert(last.to_string(), value);
        }
        Value::Array(items) if *last == "-" => items.push(value),
        Value::Array(items) => {
            let i = index(path, at, items.len())?;
            items[i] = value;
        }
        other => return Err(wrong_type(path, at, "an object or array", other)),
    }
    Ok(())
}

fn take(root: &mut Value, path: &[&str]) -> Result<Option<Value>, PathError> {
    let Some((last, parents)) = path.split_last() else {
        return Ok(None);
    };
    let mut current = root;
    for (at, segment) in parents.iter().enumerate() {
        current = match current {
            Value::Object(map) => match map.get_mut(*segment) {
                Some(v) => v,
                None => return Ok(None),
            },
            Value::Array(items) => match segment.parse::<usize>() {
                Ok(i) if i < items.len() => &mut items[i],
                _ => return Ok(None),
            },
            Value::Null => return Ok(None),
            other => return Err(wrong_type(path, at, "an object or array", other)),
        };
    }
    Ok(match current {
        Value::Object(map) => map.remove(*last),
        Value::Array(items) => match last.parse::<usize>() {
            Ok(i) if i < items.len() => Some(items.remove(i)),
            _ => None,
        },
        _ => None,
    })
}

/// Reads and writes fields of a JSON document or a `DynamicObject` by [`FieldPath`].
///
/// Getters return `Ok(None)` for a missing field and an error naming the path when the
/// field (or a parent) has the wrong type.
///
/// ```
/// use dynrec::object::Fields;
/// let mut doc = serde_json::json!({"spec": {"replicas": 2}});
/// doc.set_field("spec.template.metadata.labels[\"app.kubernetes.io/name\"]", "web")?;
/// assert_eq!(doc.field_i64("spec.replicas")?, Some(2));
/// assert_eq!(doc.field_str("/spec/template/metadata/labels/app.kubernetes.io~1name")?, Some("web"));
/// let err = doc.field_str("spec.replicas").unwrap_err();
/// assert_eq!(err.to_string(), "field spec.replicas is a number, expected a string");
/// # Ok::<(), dynrec::object::PathError>(())
/// ```
pub trait Fields {
    /// The value at `path`, if present.
    fn field(&self, path: &str) -> Result<Option<&Value>, PathError>;

    /// Sets the value at `path`, creating missing parent objects.
    fn set_field(&mut self, path: &str, value: impl Into<Value>) -> Result<(), PathError>;

    /// Removes and returns the value at `path`, if present.
    fn remove_field(&mut self, path: &str) -> Result<Option<Value>, PathError>;

    /// The string at `path`.
    fn field_str(&self, path: &str) -> Result<Option<&str>, PathError> {
        typed(self.field(path)?, path, "a string", Value::as_str)
    }

    /// The integer at `path`.
    fn field_i64(&self, path: &str) -> Result<Option<i64>, PathError> {
        typed(self.field(path)?, path, "an integer", Value::as_i64)
    }

    /// The number at `path`.
    fn field_f64(&self, path: &str) -> Result<Option<f64>, PathError> {
        typed(self.field(path)?, path, "a number", Value::as_f64)
    }

    /// The boolean at `path`.
    fn field_bool(&self, path: &str) -> Result<Option<bool>, PathError> {
        typed(self.field(path)?, path, "a boolean", Value::as_bool)
    }

    /// The array at `path`.
    fn field_array(&self, path: &str) -> Result<Option<&Vec<Value>>, PathError> {
        typed(self.field(path)?, path, "an array", Value::as_array)
    }

    /// The object at `path`.
    fn field_object(&self, path: &str) -> Result<Option<&Map<String, Value>>, PathError> {
        typed(self.field(path)?, path, "an object", Value::as_object)
    }

    /// The value at `path`, decoded as `T`.
    fn field_as<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, PathError> {
        decoded(self.field(path)?, path)
    }
}

/// `value` decoded as `T` (`None` when absent or null); an error names `path`.
fn decoded<T: DeserializeOwned>(
    value: Option<&Value>,
    path: impl fmt::Display,
) -> Result<Option<T>, PathError> {
    value
        .filter(|v| !v.is_null())
        .map(|v| {
            T::deserialize(v).map_err(|source| PathError::Decode {
                path: path.to_string(),
                type_name: std::any::type_name::<T>(),
                source,
            })
        })
        .transpose()
}

fn typed<'v, T>(
    value: Option<&'v Value>,
    path: impl fmt::Display,
    expected: &'static str,
    read: impl Fn(&'v Value) -> Option<T>,
) -> Result<Option<T>, PathError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v).map(Some).ok_or_else(|| PathError::WrongType {
            path: path.to_string(),
            expected,
            found: type_name(v),
        }),
    }
}

impl Fields for Value {
    fn field(&self, path: &str) -> Result<Option<&Value>, PathError> {
        with_segments(path, |segments| lookup(self, segments))
    }

    fn set_field(&mut self, path: &str, value: impl Into<Value>) -> Result<(), PathError> {
        with_segments(path, |segments| insert(self, segments, value.into()))
    }

    fn remove_field(&mut self, path: &str) -> Result<Option<Value>, PathError> {
        with_segments(path, |segments| take(self, segments))
    }
}

/// Paths on a `DynamicObject` address its untyped body (`spec`, `status`, `data`, ...).
impl Fields for DynamicObject {
    fn field(&self, path: &str) -> Result<Option<&Value>, PathError> {
        with_body_segments(path, |segments| lookup(&self.data, segments))
    }

    fn set_field(&mut self, path: &str, value: impl Into<Value>) -> Result<(), PathError> {
        with_body_segments(path, |segments| {
            insert(&mut self.data, segments, value.into())
        })
    }

    fn remove_field(&mut self, path: &str) -> Result<Option<Value>, PathError> {
        with_body_segments(path, |segments| take(&mut self.data, segments))
    }
}

/// A plain path into a `DynamicObject`'s body, given as its segments: the paths dynrec reads
/// on every reconcile (`status.conditions`) are walked without being parsed each time. It
/// displays as the dotted path.
pub(super) struct SplitPath(&'static [&'static str]);

impl SplitPath {
    /// The path of these segments.
    pub(super) const fn new(segments: &'static [&'static str]) -> Self {
        Self(segments)
    }

    /// The array at this path in `object`'s body.
    pub(super) fn array<'v>(
        &self,
        object: &'v DynamicObject,
    ) -> Result<Option<&'v Vec<Value>>, PathError> {
        typed(
            lookup(&object.data, self.0)?,
            self,
            "an array",
            Value::as_array,
        )
    }

    /// The integer at this path in `object`'s body.
    pub(super) fn i64(&self, object: &DynamicObject) -> Result<Option<i64>, PathError> {
        typed(
            lookup(&object.data, self.0)?,
            self,
            "an integer",
            Value::as_i64,
        )
    }

    /// The value at this path in `object`'s body, decoded as `T`.
    pub(super) fn decode<T: DeserializeOwned>(
        &self,
        object: &DynamicObject,
    ) -> Result<Option<T>, PathError> {
        decoded(lookup(&object.data, self.0)?, self)
    }

    /// Sets the value at this path in `object`'s body, creating the objects on the way.
    pub(super) fn set(&self, object: &mut DynamicObject, value: Value) -> Result<(), PathError> {
        insert(&mut object.data, self.0, value)
    }

    /// Whether the path, written out and parsed again, has the same segments.
    #[cfg(test)]
    pub(super) fn is_split_as_parsed(&self) -> bool {
        FieldPath::parse(&self.to_string()).is_ok_and(|parsed| parsed.segments == self.0)
    }
}

impl fmt::Display for SplitPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self.0))
    }
}

/// [`with_segments`] for a path into a `DynamicObject`'s untyped body.
fn with_body_segments<T>(
    path: &str,
    walk: impl FnOnce(&[&str]) -> Result<T, PathError>,
) -> Result<T, PathError> {
    with_segments(path, |segments| match segments[0] {
        "metadata" | "apiVersion" | "kind" => Err(PathError::Typed {
            path: path.to_string(),
        }),
        _ => walk(segments),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_objects_are_scanned_and_large_ones_hashed_with_the_same_answers() {
        for size in [1, SCANNED_ENTRIES, SCANNED_ENTRIES + 1, 3 * SCANNED_ENTRIES] {
            let entries = (0..size).map(|i| (format!("key{i}"), json!(i)));
            let doc = json!({ "spec": Map::from_iter(entries) });
            for i in 0..size {
                let path = format!("spec.key{i}");
                assert_eq!(doc.field_i64(&path).unwrap(), Some(i as i64), "{path}");
            }
            assert_eq!(doc.field("spec.key").unwrap(), None, "size {size}");
            assert_eq!(doc.field("spec.absent").unwrap(), None, "size {size}");
        }
    }

    #[test]
    fn a_plain_path_deeper_than_the_inline_segments_is_walked_too() {
        let keys: Vec<String> = (0..INLINE_SEGMENTS + 2).map(|i| format!("k{i}")).collect();
        let path = keys.join(".");
        let mut doc = Value::Null;
        doc.set_field(&path, 7).unwrap();
        assert_eq!(
            doc.pointer(&format!("/{}", keys.join("/"))),
            Some(&json!(7))
        );
        assert_eq!(doc.field(&path).unwrap(), Some(&json!(7)));
        let short = keys[..INLINE_SEGMENTS].join(".");
        assert!(doc.field(&short).unwrap().is_some_and(Value::is_object));
    }

    #[test]
    fn paths_split_in_one_pass_as_they_parse() {
        let eight = (0..INLINE_SEGMENTS)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>();
        let (eight, nine) = (eight.join("."), format!("{}.k8", eight.join(".")));
        let paths = [
            "",
            ".",
            "a",
            ".a",
            "a.",
            "a..b",
            "..a",
            "status.conditions",
            ".spec.x-y/z",
            "a[0]",
            "a.b]",
            "a['b.c']",
            "/a/b",
            "a/b",
            &eight,
            &nine,
        ];
        for path in paths {
            let split = with_segments(path, |segments| {
                Ok(segments.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            });
            let parsed = FieldPath::parse(path).map(|parsed| parsed.segments);
            match (split, parsed) {
                (Ok(split), Ok(parsed)) => assert_eq!(split, parsed, "{path:?}"),
                (Err(split), Err(parsed)) => {
                    assert_eq!(split.to_string(), parsed.to_string(), "{path:?}")
                }
                (split, parsed) => panic!("{path:?}: split {split:?}, parsed {parsed:?}"),
            }
        }
    }

    #[test]
    fn parses_dotted_bracketed_and_pointer_paths() {
        let seg = |p: &str| FieldPath::parse(p).unwrap().segments;
        assert_eq!(seg("spec.a[0].b"), ["spec", "a", "0", "b"]);
        assert_eq!(seg(".spec"), ["spec"]);
        assert_eq!(seg("m.labels[\"a.b/c\"]"), ["m", "labels", "a.b/c"]);
        assert_eq!(seg("m['x'][2]"), ["m", "x", "2"]);
        assert_eq!(seg("/a~1b/c~0d/0"), ["a/b", "c~d", "0"]);
        for bad in [
            "", "a..b", "a.", "a[x]", "a[1", "a]", "a[\"x", "a[]", "a[0]b",
        ] {
            assert!(FieldPath::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn get_set_remove() {
        let mut doc = json!({"spec": {"items": [{"n": 1}]}});
        assert_eq!(doc.field_i64("spec.items[0].n").unwrap(), Some(1));
        assert_eq!(doc.field("spec.items[5]").unwrap(), None);
        assert_eq!(doc.field("spec.missing.deeper").unwrap(), None);
        doc.set_field("spec.items[0].n", 2).unwrap();
        doc.set_field("spec.items.-", json!({"n": 3})).unwrap();
        doc.set_field("status.ready", true).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"items": [{"n": 2}, {"n": 3}]}, "status": {"ready": true}})
        );
        assert_eq!(
            doc.remove_field("spec.items[0]").unwrap(),
            Some(json!({"n": 2}))
        );
        assert_eq!(doc.remove_field("spec.nothing.here").unwrap(), None);
        assert_eq!(
            doc.field_array("spec.items").unwrap().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn errors_name_the_path_and_types() {
        let mut doc = json!({"spec": {"replicas": "3", "items": [1]}});
        let err = doc.field_i64("spec.replicas").unwrap_err();
        assert_eq!(
            err.to_string(),
            "field spec.replicas is a string, expected an integer"
        );
        let err = doc.field("spec.replicas.x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "field spec.replicas is a string, expected an object or array"
        );
        let err = doc.set_field("spec.items[3]", 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "field spec.items: index 3 is out of range (length 1)"
        );
        let err = doc.field_as::<Vec<String>>("spec.items").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("field spec.items cannot be read as"),
            "{err}"
        );
    }

    #[test]
    fn dynamic_object_paths_skip_typed_fields() {
        let mut obj: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}))
                .unwrap();
        assert_eq!(obj.field_str("data.k").unwrap(), Some("v"));
        obj.set_field("data.other", "w").unwrap();
        assert_eq!(obj.data["data"]["other"], "w");
        assert!(matches!(
            obj.field("metadata.name"),
            Err(PathError::Typed { .. })
        ));
    }
}
