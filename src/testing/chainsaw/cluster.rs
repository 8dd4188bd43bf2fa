//! The runner's view of the cluster: objects as JSON, placed in the test's namespace as
//! chainsaw places them (namespaced kinds without a namespace get the test's; cluster-scoped
//! ones lose any namespace), read by name or by labels.

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::Value;

use crate::client::{Client, Error, ListOptions};
use crate::object::{Gvk, ObjectKey, from_json};

/// An object's kind and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// Its kind.
    pub gvk: Gvk,
    /// Its namespace (cluster-scoped kinds: none) and name.
    pub key: ObjectKey,
}

impl std::fmt::Display for ObjectRef {
    /// `apps/v1/Deployment ns/name`, as chainsaw logs objects.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} {}",
            self.gvk.api_version(),
            self.gvk.kind,
            self.key
        )
    }
}

/// The cluster as one test sees it.
#[derive(Clone)]
pub(crate) struct TestCluster {
    pub client: Client,
    pub namespace: String,
}

impl TestCluster {
    /// The object's kind, with its namespace set or removed by the kind's scope.
    pub async fn place(&self, object: &mut Value) -> Result<Gvk, String> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let gvk = Gvk::from_api_version(api_version, kind).map_err(|e| e.to_string())?;
        let resolved = self.client.resolve(&gvk).await.map_err(|e| e.to_string())?;
        let metadata = object
            .as_object_mut()
            .ok_or("a resource must be a map")?
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        let metadata = metadata.as_object_mut().ok_or("metadata must be a map")?;
        match resolved.namespaced {
            true if metadata.get("namespace").is_none_or(Value::is_null) => {
                metadata.insert("namespace".into(), Value::from(self.namespace.clone()));
            }
            true => {}
            false => drop(metadata.remove("namespace")),
        }
        Ok(gvk)
    }

    /// The objects an assertion names: the one named, or those of its namespace (every
    /// namespace for cluster-scoped kinds) with its labels. A named object that does not
    /// exist is `Ok(empty)`.
    pub async fn read(&self, gvk: &Gvk, expected: &Value) -> Result<Vec<Value>, Error> {
        let metadata = &expected["metadata"];
        let namespace = metadata["namespace"].as_str().map(str::to_owned);
        if let Some(name) = metadata["name"].as_str() {
            let key = ObjectKey {
                namespace,
                name: name.to_owned(),
            };
            return match self.client.api_reader().get(gvk, &key).await {
                Ok(found) => Ok(vec![to_value(&found)]),
                Err(error) if error.is_not_found() => Ok(Vec::new()),
                Err(error) => Err(error),
            };
        }
        let mut options = ListOptions {
            namespace,
            ..ListOptions::default()
        };
        if let Some(labels) = metadata["labels"].as_object() {
            let selector = labels
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                .collect();
            options.selector = Some(selector);
        }
        let listed = self.client.api_reader().list(gvk, &options).await?;
        Ok(listed.iter().map(to_value).collect())
    }

    /// Creates the object.
    pub async fn create(&self, object: &Value) -> Result<Value, Error> {
        let created = self.client.create(&from_json(object.clone())?).await?;
        Ok(to_value(&created))
    }

    /// Replaces the object.
    pub async fn update(&self, object: &Value) -> Result<Value, Error> {
        let updated = self.client.update(&from_json(object.clone())?).await?;
        Ok(to_value(&updated))
    }

    /// Merge-patches the object with `patch`.
    pub async fn merge_patch(&self, target: &ObjectRef, patch: &Value) -> Result<Value, Error> {
        let patched = self
            .client
            .patch(
                &target.gvk,
                &target.key,
                &Patch::Merge(patch.clone()),
                &PatchParams::default(),
            )
            .await?;
        Ok(to_value(&patched))
    }

    /// Deletes the object in the background (chainsaw's propagation); gone already is fine.
    pub async fn delete(&self, target: &ObjectRef) -> Result<(), Error> {
        match self
            .client
            .delete(&target.gvk, &target.key, &DeleteParams::background())
            .await
        {
            Err(error) if !error.is_not_found() => Err(error),
            _ => Ok(()),
        }
    }

    /// Whether the object still exists.
    pub async fn exists(&self, target: &ObjectRef) -> Result<bool, Error> {
        match self.client.api_reader().get(&target.gvk, &target.key).await {
            Ok(_) => Ok(true),
            Err(error) if error.is_not_found() => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The kind and key of a placed object.
pub(crate) fn object_ref(gvk: &Gvk, object: &Value) -> Result<ObjectRef, String> {
    let name = object["metadata"]["name"]
        .as_str()
        .ok_or("the resource has no metadata.name")?;
    Ok(ObjectRef {
        gvk: gvk.clone(),
        key: ObjectKey {
            namespace: object["metadata"]["namespace"].as_str().map(str::to_owned),
            name: name.to_owned(),
        },
    })
}

fn to_value(object: &kube::api::DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}
