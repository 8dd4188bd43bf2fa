//! The request stash: values shared by every reconciler of one request.

use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

/// A per-request map from string keys to values of any type.
#[derive(Clone, Default)]
pub struct Stash {
    values: Arc<Mutex<HashMap<String, Box<dyn Any + Send + Sync>>>>,
}

impl Stash {
    /// Stores a value, replacing what the key held.
    pub fn store<T: Any + Send + Sync>(&self, key: &str, value: T) {
        self.values.lock().insert(key.to_string(), Box::new(value));
    }

    /// A copy of the value under `key`, if it holds a `T`.
    pub fn retrieve<T: Any + Clone>(&self, key: &str) -> Option<T> {
        self.values.lock().get(key)?.downcast_ref::<T>().cloned()
    }

    /// Whether the key holds a value (of any type).
    pub fn has(&self, key: &str) -> bool {
        self.values.lock().contains_key(key)
    }

    /// Removes and returns the value under `key`, if it holds a `T`.
    pub fn clear<T: Any>(&self, key: &str) -> Option<T> {
        let value = self.values.lock().remove(key)?;
        value.downcast::<T>().ok().map(|boxed| *boxed)
    }

    /// The keys held, sorted (for test assertions and debugging).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.values.lock().keys().cloned().collect();
        keys.sort();
        keys
    }
}

/// Typed access to one stash key.
pub struct Stasher<T> {
    key: &'static str,
    kind: PhantomData<fn() -> T>,
}

impl<T: Any + Clone + Send + Sync> Stasher<T> {
    /// A stasher for `key`.
    pub const fn new(key: &'static str) -> Self {
        Self {
            key,
            kind: PhantomData,
        }
    }

    /// The key.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Stores a value.
    pub fn store(&self, stash: &Stash, value: T) {
        stash.store(self.key, value);
    }

    /// A copy of the stored value.
    pub fn retrieve(&self, stash: &Stash) -> Option<T> {
        stash.retrieve(self.key)
    }

    /// Removes and returns the stored value.
    pub fn clear(&self, stash: &Stash) -> Option<T> {
        stash.clear(self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNT: Stasher<u32> = Stasher::new("count");

    #[test]
    fn values_are_typed_and_shared_by_clones() {
        let stash = Stash::default();
        let shared = stash.clone();
        COUNT.store(&stash, 3);
        assert_eq!(COUNT.retrieve(&shared), Some(3));
        assert_eq!(
            shared.retrieve::<String>("count"),
            None,
            "another type is not returned"
        );
        assert_eq!(COUNT.clear(&stash), Some(3));
        assert!(!shared.has("count"));
    }
}
