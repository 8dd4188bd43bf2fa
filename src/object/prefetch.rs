//! Prefetch hints for walking cached JSON: a cached object's keys and strings are separate
//! allocations, each a cold load once the CPU's caches let go of the object; asking for them
//! together overlaps the loads instead of waiting for each in turn.

use serde_json::{Map, Value};

/// Asks the CPU to start loading the cache line at `ptr`. A hint: it never faults (a
/// dangling pointer, such as an empty string's, is fine) and does nothing off x86-64.
#[inline(always)]
fn prefetch(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// How many containers (objects and arrays) [`object`] walks at most: the first levels of
/// an object, where a reconcile reads, not a large pod template's every corner.
const WARMED_CONTAINERS: usize = 16;

/// How many entries of one container are prefetched at most (a ConfigMap of a thousand
/// keys is not read whole by a reconcile).
const WARMED_ENTRIES: usize = 16;

/// Starts loading the keys and string values of `map`'s first entries, before a scan
/// compares them.
#[inline]
pub(super) fn entries(map: &Map<String, Value>) {
    for (key, value) in map.iter().take(WARMED_ENTRIES) {
        prefetch(key.as_ptr());
        if let Value::String(text) = value {
            prefetch(text.as_ptr());
        }
    }
}

/// Starts loading what a reconcile is about to read of `object`: its metadata's strings
/// and the first containers of its data, breadth first. Each container's entries are
/// asked for as soon as the walk meets it, and their keys and strings together once it
/// reaches them, so the loads overlap instead of following one another.
pub(crate) fn object(object: &kube::api::DynamicObject) {
    let meta = &object.metadata;
    for text in [&meta.name, &meta.namespace, &meta.uid]
        .into_iter()
        .flatten()
    {
        prefetch(text.as_ptr());
    }
    if let Some(owners) = &meta.owner_references {
        prefetch(owners.as_ptr().cast());
    }
    let mut queue = Queue::new(&object.data);
    while let Some(value) = queue.pop() {
        match value {
            Value::Object(map) => {
                entries(map);
                map.values().for_each(|value| queue.push(value));
            }
            Value::Array(items) => items.iter().for_each(|item| queue.push(item)),
            _ => {}
        }
    }
}

/// The containers [`object`] is to walk, in the order it met them (no allocation).
struct Queue<'a> {
    containers: [&'a Value; WARMED_CONTAINERS],
    met: usize,
    walked: usize,
}

impl<'a> Queue<'a> {
    fn new(root: &'a Value) -> Self {
        let mut queue = Queue {
            containers: [&Value::Null; WARMED_CONTAINERS],
            met: 0,
            walked: 0,
        };
        queue.push(root);
        queue
    }

    /// Queues a container (prefetching its entries) while there is room; skips the rest.
    fn push(&mut self, value: &'a Value) {
        if self.met < WARMED_CONTAINERS && (value.is_object() || value.is_array()) {
            container(value);
            self.containers[self.met] = value;
            self.met += 1;
        }
    }

    fn pop(&mut self) -> Option<&'a Value> {
        let next = *self.containers[..self.met].get(self.walked)?;
        self.walked += 1;
        Some(next)
    }
}

/// Starts loading a container's first entries (an object's) or items (an array's): their
/// addresses are known without reading them.
fn container(value: &Value) {
    let at = |value: &Value| prefetch((value as *const Value).cast());
    match value {
        Value::Object(map) => map.values().take(WARMED_ENTRIES).for_each(at),
        Value::Array(items) => items.iter().take(WARMED_ENTRIES).for_each(at),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefetching reads nothing: any object, however deep, wide or odd, walks to the end
    /// and is left as it was.
    #[test]
    fn walks_any_object_and_changes_nothing() {
        let wide: Map<String, Value> = (0..100)
            .map(|i| (format!("k{i}"), Value::from(i)))
            .collect();
        let data = serde_json::json!({
            "spec": {"items": (0..40).map(|i| serde_json::json!({"n": i, "s": ""})).collect::<Vec<_>>()},
            "deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": []}}}}}}}}}},
            "wide": wide,
            "scalars": [1, "two", null, true, 2.5],
        });
        let mut object = crate::object::Gvk::new("", "v1", "ConfigMap").new_object("odd");
        object.data = data.clone();
        super::object(&object);
        entries(data.as_object().unwrap());
        assert_eq!(object.data, data);
    }
}
