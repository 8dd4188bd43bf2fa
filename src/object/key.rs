use std::{fmt, str::FromStr};

use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};

/// An object's namespace (none for cluster-scoped objects) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

/// An object key could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectKeyError {
    /// The string is not `name` or `namespace/name`.
    #[error("invalid object key {0:?}: expected \"name\" or \"namespace/name\"")]
    Format(String),
    /// The object has neither a name nor a generateName.
    #[error("object has no name")]
    Unnamed,
}

impl ObjectKey {
    /// The key of a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of an object; its name must be set.
    pub fn of<K: Resource>(object: &K) -> Result<Self, ObjectKeyError> {
        let name = object.meta().name.clone().ok_or(ObjectKeyError::Unnamed)?;
        Ok(Self {
            namespace: object.namespace(),
            name,
        })
    }
}

impl FromStr for ObjectKey {
    type Err = ObjectKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || ObjectKeyError::Format(s.to_string());
        match s.split_once('/') {
            None if !s.is_empty() => Ok(Self::cluster(s)),
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Self::namespaced(ns, name))
            }
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_strings() {
        assert_eq!(
            "ns/a".parse::<ObjectKey>().unwrap(),
            ObjectKey::namespaced("ns", "a")
        );
        assert_eq!("a".parse::<ObjectKey>().unwrap(), ObjectKey::cluster("a"));
        assert_eq!(ObjectKey::namespaced("ns", "a").to_string(), "ns/a");
        for bad in ["", "/a", "ns/", "a/b/c"] {
            assert!(bad.parse::<ObjectKey>().is_err(), "{bad}");
        }
    }
}
