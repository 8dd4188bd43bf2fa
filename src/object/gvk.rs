use std::{fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, GroupVersionKind, TypeMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A group, version and kind, e.g. `apps/v1/Deployment` or `v1/ConfigMap` (core group).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    /// The API group, empty for the core group.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

/// A version-less group and kind, e.g. `apps/Deployment`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupKind {
    /// The API group, empty for the core group.
    pub group: String,
    /// The kind.
    pub kind: String,
}

/// A GVK could not be read from a string or an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GvkError {
    /// The apiVersion is not `version` or `group/version`.
    #[error("invalid apiVersion {0:?}: expected \"version\" or \"group/version\"")]
    ApiVersion(String),
    /// The kind is empty.
    #[error("empty kind in {0:?}")]
    EmptyKind(String),
    /// The string is not `group/version/Kind` or `version/Kind`.
    #[error("invalid GVK {0:?}: expected \"group/version/Kind\" or \"version/Kind\"")]
    Format(String),
    /// The object has no apiVersion/kind.
    #[error("object {0:?} has no apiVersion and kind")]
    MissingTypeMeta(String),
}

impl Gvk {
    /// A GVK from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// A GVK from an apiVersion (`apps/v1`, `v1`) and a kind.
    pub fn from_api_version(api_version: &str, kind: &str) -> Result<Self, GvkError> {
        if kind.is_empty() {
            return Err(GvkError::EmptyKind(format!("{api_version}/{kind}")));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        let valid = |s: &str| !s.is_empty() && !s.contains('/');
        if !valid(version) || (api_version.contains('/') && !valid(group)) {
            return Err(GvkError::ApiVersion(api_version.to_string()));
        }
        Ok(Self::new(group, version, kind))
    }

    /// The GVK named by an object's apiVersion and kind.
    pub fn of(object: &DynamicObject) -> Result<Self, GvkError> {
        let types = object.types.as_ref().ok_or_else(|| {
            GvkError::MissingTypeMeta(object.metadata.name.clone().unwrap_or_default())
        })?;
        Self::from_api_version(&types.api_version, &types.kind)
    }

    /// The apiVersion: `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// A new object of this kind named `name`, with no namespace and an empty body; set
    /// them with kube's builders or the fields. Cheaper than writing the whole object in
    /// `json!` and reading it with [`from_json`](crate::object::from_json): no map is built
    /// for the type fields and metadata, and nothing is parsed.
    ///
    /// ```
    /// use dynrec::object::Gvk;
    /// use serde_json::json;
    /// let child = Gvk::new("", "v1", "ConfigMap")
    ///     .new_object("greeting")
    ///     .within("default")
    ///     .data(json!({"data": {"greeting": "hello"}}));
    /// assert_eq!(serde_json::to_value(&child)?, json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "greeting", "namespace": "default"},
    ///     "data": {"greeting": "hello"}}));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new_object(&self, name: impl Into<String>) -> DynamicObject {
        DynamicObject {
            types: Some(TypeMeta {
                api_version: self.api_version(),
                kind: self.kind.clone(),
            }),
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: Value::Object(Map::new()),
        }
    }

    /// The group and kind, without the version.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }
}

impl GroupKind {
    /// A group and kind from their parts.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            kind: kind.into(),
        }
    }
}

impl FromStr for Gvk {
    type Err = GvkError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (api_version, kind) = s
            .rsplit_once('/')
            .ok_or_else(|| GvkError::Format(s.to_string()))?;
        Self::from_api_version(api_version, kind)
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

impl From<GroupVersionKind> for Gvk {
    fn from(gvk: GroupVersionKind) -> Self {
        Self::new(gvk.group, gvk.version, gvk.kind)
    }
}

impl From<&Gvk> for GroupVersionKind {
    fn from(gvk: &Gvk) -> Self {
        GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_api_version_and_kind() {
        assert_eq!(
            Gvk::from_api_version("apps/v1", "Deployment").unwrap(),
            Gvk::new("apps", "v1", "Deployment")
        );
        assert_eq!(
            Gvk::from_api_version("v1", "ConfigMap").unwrap(),
            Gvk::new("", "v1", "ConfigMap")
        );
        assert!(Gvk::from_api_version("a/b/c", "X").is_err());
        assert!(Gvk::from_api_version("/v1", "X").is_err());
        assert!(Gvk::from_api_version("", "X").is_err());
        assert_eq!(
            Gvk::from_api_version("v1", ""),
            Err(GvkError::EmptyKind("v1/".into()))
        );
    }

    #[test]
    fn a_new_object_is_the_one_json_and_from_json_build() {
        use serde_json::json;
        let deployment = Gvk::new("apps", "v1", "Deployment").new_object("web");
        let from_json = crate::object::from_json(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}))
        .unwrap();
        assert_eq!(deployment, from_json);
        assert_eq!(
            Gvk::of(&deployment).unwrap().to_string(),
            "apps/v1/Deployment"
        );
    }

    #[test]
    fn parses_and_displays_strings() {
        for s in [
            "apps/v1/Deployment",
            "v1/ConfigMap",
            "example.com/v1alpha1/Widget",
        ] {
            assert_eq!(s.parse::<Gvk>().unwrap().to_string(), s);
        }
        assert_eq!("v1/ConfigMap".parse::<Gvk>().unwrap().group, "");
        assert!("ConfigMap".parse::<Gvk>().is_err());
        assert!("a/b/c/D".parse::<Gvk>().is_err());
    }

    #[test]
    fn group_kind_display() {
        assert_eq!(
            Gvk::new("apps", "v1", "Deployment")
                .group_kind()
                .to_string(),
            "Deployment.apps"
        );
        assert_eq!(Gvk::new("", "v1", "Pod").group_kind().to_string(), "Pod");
    }
}
