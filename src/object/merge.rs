use serde_json::{Map, Value};

/// The RFC 7386 JSON merge patch that turns `from` into `to`.
///
/// Removed keys become `null`; arrays and scalars that differ are replaced whole. The result
/// is an empty object when nothing changed.
pub fn merge_patch(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(from), Value::Object(to)) => {
            let mut patch = Map::new();
            for (key, old) in from {
                match to.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new) if new != old => {
                        let nested = match (old, new) {
                            (Value::Object(_), Value::Object(_)) => merge_patch(old, new),
                            _ => new.clone(),
                        };
                        patch.insert(key.clone(), nested);
                    }
                    Some(_) => {}
                }
            }
            for (key, new) in to {
                if !from.contains_key(key) {
                    patch.insert(key.clone(), new.clone());
                }
            }
            Value::Object(patch)
        }
        _ => to.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diffs_objects_recursively() {
        let from = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
        let to = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1, 2, 3], "new": "x"});
        let patch = merge_patch(&from, &to);
        assert_eq!(
            patch,
            json!({"b": {"d": 4}, "e": [1, 2, 3], "gone": null, "new": "x"})
        );
        let mut applied = from.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, to);
    }

    #[test]
    fn no_change_is_an_empty_object() {
        let v = json!({"a": {"b": [1]}});
        assert_eq!(merge_patch(&v, &v), json!({}));
    }
}
