//! The patch-only duck client.

use std::{
    marker::PhantomData,
    ops::{Deref, DerefMut},
    pin::Pin,
    task::{Context, Poll},
};

use dynrec_duck::Duck;
use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::Value;
use tracing::debug;

use super::{
    Cache, CacheEvent, CacheEvents, Client, Error, ListOptions, Projection, ProjectionFailure,
};
use crate::object::{Gvk, ObjectKey, merge_patch};

/// Reads objects of any kind as duck `T` and writes them back only by patch.
///
/// There is no `create` or `update`: a duck does not know the whole object, so it could
/// only write a partial one. Patches are JSON merge patches from the object as read to the
/// object as changed, guarded by the resourceVersion it was read at.
///
/// ```no_run
/// # async fn demo(client: dynrec::client::Client) -> Result<(), dynrec::client::Error> {
/// use dynrec::{duck_types::PodSpecable, object::{Gvk, ObjectKey}};
/// let ducks = client.duck::<PodSpecable>();
/// let gvk: Gvk = "apps/v1/Deployment".parse()?;
/// let mut web = ducks.get(&gvk, &ObjectKey::namespaced("default", "web")).await?;
/// web.spec.template.metadata.get_or_insert_default().labels.get_or_insert_default()
///     .insert("team".into(), "blue".into());
/// ducks.patch(&web).await?;
/// # Ok(()) }
/// ```
///
/// Creating (or updating) through a duck client does not compile: there is no such method
/// (`tests/duck_client_compile.rs` compiles these and checks rustc names the method):
///
/// ```ignore
/// # async fn demo(client: dynrec::client::Client) -> Result<(), dynrec::client::Error> {
/// use dynrec::{duck_types::PodSpecable, object::{Gvk, ObjectKey}};
/// let ducks = client.duck::<PodSpecable>();
/// let gvk: Gvk = "apps/v1/Deployment".parse()?;
/// let web = ducks.get(&gvk, &ObjectKey::namespaced("default", "web")).await?;
/// ducks.create(&web).await?;
/// # Ok(()) }
/// ```
///
/// ```ignore
/// # async fn demo(client: dynrec::client::Client) -> Result<(), dynrec::client::Error> {
/// use dynrec::{duck_types::PodSpecable, object::{Gvk, ObjectKey}};
/// let ducks = client.duck::<PodSpecable>();
/// let gvk: Gvk = "apps/v1/Deployment".parse()?;
/// let web = ducks.get(&gvk, &ObjectKey::namespaced("default", "web")).await?;
/// ducks.update(&web).await?;
/// # Ok(()) }
/// ```
pub struct DuckClient<T> {
    client: Client,
    projection: Projection,
    duck: PhantomData<fn() -> T>,
}

impl<T> Clone for DuckClient<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            projection: self.projection.clone(),
            duck: PhantomData,
        }
    }
}

/// An object read as duck `T`, with its kind, its metadata and what it looked like when read.
#[derive(Clone, Debug)]
pub struct Ducked<T> {
    /// The object's kind.
    pub gvk: Gvk,
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// The part of the object the duck knows.
    pub duck: T,
    /// The object's JSON (metadata and duck) as read, the base of patches.
    original: Value,
    /// Where the kind keeps the duck's fields.
    projection: Projection,
}

impl<T: Duck> Ducked<T> {
    /// Reads an object as duck `T`.
    pub fn project(gvk: &Gvk, object: &DynamicObject) -> Result<Self, Error> {
        Self::project_through(gvk, object, &Projection::default())
    }

    /// Reads an object as duck `T` through a projection (the duck's fields where the kind
    /// keeps them); a field of the wrong type is named by the kind's path.
    pub fn project_through(
        gvk: &Gvk,
        object: &DynamicObject,
        projection: &Projection,
    ) -> Result<Self, Error> {
        let key = ObjectKey::of(object)?;
        let duck = T::project(&projection.to_duck(&object.data)).map_err(|mut source| {
            source.path = projection.to_kind_path(&source.path);
            ProjectionFailure {
                gvk: gvk.clone(),
                key,
                source,
            }
        })?;
        let mut ducked = Self {
            gvk: gvk.clone(),
            metadata: object.metadata.clone(),
            duck,
            original: Value::Null,
            projection: projection.clone(),
        };
        ducked.original = ducked.to_json()?;
        Ok(ducked)
    }

    /// The object's key.
    pub fn key(&self) -> Result<ObjectKey, Error> {
        Ok(ObjectKey {
            namespace: self.metadata.namespace.clone(),
            name: self
                .metadata
                .name
                .clone()
                .ok_or(crate::object::ObjectKeyError::Unnamed)?,
        })
    }

    /// The JSON merge patch from the object as read to the object as it is now, at the
    /// paths where the kind keeps the duck's fields.
    pub fn merge_patch(&self) -> Result<Value, Error> {
        let patch = merge_patch(&self.original, &self.to_json()?);
        Ok(self.projection.to_kind_patch(patch))
    }

    /// Where the kind keeps the duck's fields.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    fn to_json(&self) -> Result<Value, Error> {
        let serialize = |source| Error::Serialize {
            what: T::NAME,
            source,
        };
        let mut json = serde_json::to_value(&self.duck).map_err(serialize)?;
        let metadata = serde_json::to_value(&self.metadata).map_err(serialize)?;
        if let Value::Object(map) = &mut json {
            map.insert("metadata".into(), metadata);
        }
        Ok(json)
    }
}

impl<T> Deref for Ducked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.duck
    }
}

impl<T> DerefMut for Ducked<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.duck
    }
}

/// A change to an object, read as duck `T`.
#[derive(Clone, Debug)]
pub enum DuckEvent<T> {
    /// The object was added or changed (also sent for every object on a relist).
    Applied(Ducked<T>),
    /// The object was deleted.
    Deleted(Ducked<T>),
}

impl Client {
    /// A patch-only client for duck type `T`.
    pub fn duck<T: Duck>(&self) -> DuckClient<T> {
        DuckClient::new(self.clone())
    }
}

impl<T: Duck> DuckClient<T> {
    /// A duck client over `client`.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            projection: Projection::default(),
            duck: PhantomData,
        }
    }

    /// This client reading and writing the duck's fields where `projection` says the kind
    /// keeps them (e.g. a `DuckMapping`'s path).
    pub fn through(mut self, projection: Projection) -> Self {
        self.projection = projection;
        self
    }

    /// One object as the duck (from the cache if one runs for the kind).
    pub async fn get(&self, gvk: &Gvk, key: &ObjectKey) -> Result<Ducked<T>, Error> {
        let object = self.client.get(gvk, key).await?;
        Ducked::project_through(gvk, &object, &self.projection)
    }

    /// The objects the options cover, as the duck.
    pub async fn list(&self, gvk: &Gvk, options: &ListOptions) -> Result<Vec<Ducked<T>>, Error> {
        let objects = self.client.list(gvk, options).await?;
        objects
            .iter()
            .map(|o| Ducked::project_through(gvk, o, &self.projection))
            .collect()
    }

    /// Changes to objects of a kind, as the duck, through the kind's shared cache.
    pub async fn watch(&self, gvk: &Gvk) -> Result<DuckWatch<T>, Error> {
        let cache = self.client.cache(gvk).await?;
        let events = cache.subscribe();
        Ok(DuckWatch {
            cache,
            events,
            projection: self.projection.clone(),
            duck: PhantomData,
        })
    }

    /// Writes the duck's changes as a JSON merge patch guarded by the resourceVersion read,
    /// at the paths where the kind keeps the duck's fields (the object's projection).
    ///
    /// Nothing is sent when nothing changed. A stale resourceVersion is a conflict
    /// ([`Error::is_conflict`]).
    pub async fn patch(&self, ducked: &Ducked<T>) -> Result<Ducked<T>, Error> {
        let key = ducked.key()?;
        let mut patch = ducked.merge_patch()?;
        if patch.as_object().is_some_and(|p| p.is_empty()) {
            debug!(gvk = %ducked.gvk, object = %key, duck = T::NAME, "duck unchanged; not patching");
            return Ok(ducked.clone());
        }
        let resource_version = ducked.original["metadata"]["resourceVersion"].clone();
        if !resource_version.is_string() {
            return Err(Error::MissingResourceVersion {
                gvk: ducked.gvk.clone(),
                key,
            });
        }
        patch["metadata"]["resourceVersion"] = resource_version;
        let params = PatchParams::default();
        let patched = self
            .client
            .patch(&ducked.gvk, &key, &Patch::Merge(patch), &params)
            .await?;
        Ducked::project_through(&ducked.gvk, &patched, &ducked.projection)
    }

    /// Deletes an object.
    pub async fn delete(
        &self,
        gvk: &Gvk,
        key: &ObjectKey,
        params: &DeleteParams,
    ) -> Result<(), Error> {
        self.client.delete(gvk, key, params).await.map(drop)
    }
}

/// A stream of [`DuckEvent`]s; holds the kind's shared cache open while it lives.
pub struct DuckWatch<T> {
    cache: Cache,
    events: CacheEvents,
    projection: Projection,
    duck: PhantomData<fn() -> T>,
}

impl<T: Duck> Stream for DuckWatch<T> {
    type Item = Result<DuckEvent<T>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let gvk = self.cache.gvk().clone();
            let event = match self.events.poll_next_unpin(cx) {
                Poll::Ready(Some(event)) => event,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            };
            let item = match event {
                CacheEvent::Applied(o) => {
                    Ducked::project_through(&gvk, &o, &self.projection).map(DuckEvent::Applied)
                }
                CacheEvent::Deleted(o) => {
                    Ducked::project_through(&gvk, &o, &self.projection).map(DuckEvent::Deleted)
                }
                CacheEvent::Resynced => continue,
            };
            return Poll::Ready(Some(item));
        }
    }
}
