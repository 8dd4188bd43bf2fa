//! `StubObjectManager`: a simple object manager for tests (no events, finalizers or tracks).

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, DynamicObject};
use serde_json::Value;

use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{Context, Draft, ObjectManager, ReconcileError};

/// Deletes, creates, or copies the desired content onto the actual object and updates it
/// when that changed something (reconciler.io's `testing.StubObjectManager`).
#[derive(Clone, Debug, Default)]
pub struct StubObjectManager;

#[async_trait]
impl ObjectManager for StubObjectManager {
    fn name(&self) -> &str {
        "StubObjectManager"
    }

    async fn manage(
        &self,
        ctx: &Context,
        _resource: &mut Draft,
        actual: Option<&Arc<DynamicObject>>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError> {
        let client = &ctx.config().client;
        match (actual, desired) {
            (None, None) => Ok(None),
            (Some(actual), None) => {
                if actual.metadata.deletion_timestamp.is_none() {
                    let gvk = Gvk::of(actual).map_err(crate::client::Error::from)?;
                    let key = ObjectKey::of(actual.as_ref()).map_err(crate::client::Error::from)?;
                    client.delete(&gvk, &key, &DeleteParams::default()).await?;
                }
                Ok(None)
            }
            (None, Some(desired)) => Ok(Some(Arc::new(client.create(desired).await?))),
            (Some(actual), Some(desired)) => {
                let mut current = DynamicObject::clone(actual);
                if let (Value::Object(to), Value::Object(from)) = (&mut current.data, &desired.data)
                {
                    to.retain(|key, _| key == "status" || from.contains_key(key));
                    for (key, value) in from.iter().filter(|(key, _)| *key != "status") {
                        to.insert(key.clone(), value.clone());
                    }
                }
                current.metadata.labels = desired.metadata.labels.clone();
                current.metadata.annotations = desired.metadata.annotations.clone();
                if current == **actual {
                    return Ok(Some(actual.clone()));
                }
                Ok(Some(Arc::new(client.update(&current).await?)))
            }
        }
    }
}
