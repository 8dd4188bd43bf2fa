//! The [`Client`]: reads (cache-backed when a cache runs) and writes of any kind.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::{
    Api,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::Value;
use tracing::{Instrument, debug};

use crate::trace::debug_span;

use super::cached_fields::WHOLE;
use super::identity::{Acting, Identity};
use super::{
    Cache, CachedFields, Error, ListOptions, RequestFailure, Resolved, Resolver, cache::Caches,
};
use crate::object::{Gvk, ObjectKey};

/// A client for objects of any kind, named by GVK at run time. Cheap to clone.
///
/// Reads are served from the shared cache of the kind when one is running and ready (see
/// [`Client::cache`]), otherwise from the API server; [`Client::api_reader`] always asks the
/// server. Every call resolves its GVK through the [`Resolver`].
///
/// ```no_run
/// use dynrec::client::{Client, ListOptions};
/// use dynrec::object::{Gvk, ObjectKey};
///
/// # async fn run() -> anyhow::Result<()> {
/// let client = Client::new(kube::Client::try_default().await?);
/// let config_map = Gvk::new("", "v1", "ConfigMap");
/// let cm = client.get(&config_map, &ObjectKey::namespaced("default", "settings")).await?;
/// let all = client.list(&config_map, &ListOptions::default()).await?;
/// println!("{:?} of {} ConfigMaps", cm.data["data"], all.len());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// Whom requests impersonate (see [`Client::acting_as`]); `None` for the client's own
    /// identity.
    acting: Option<Arc<Acting>>,
    /// The fields this client's readers read of some kinds (see [`Client::reading_only`]);
    /// of any other kind, whole objects.
    reads: Arc<BTreeMap<Gvk, CachedFields>>,
}

struct Inner {
    kube: kube::Client,
    resolver: Resolver,
    caches: Caches,
    namespaces: Vec<String>,
}

/// Reads that always go to the API server, bypassing caches.
#[derive(Clone)]
pub struct ApiReader {
    client: Client,
}

impl Client {
    /// A client over a `kube::Client` (real cluster or embedded server).
    pub fn new(kube: kube::Client) -> Self {
        Self::in_namespaces(kube, Vec::new())
    }

    /// A client whose caches of namespaced kinds hold only `namespaces` (every namespace
    /// when empty), as controller-runtime's cache with `DefaultNamespaces`: a controller
    /// over it sees, and reconciles, only objects there. Cluster-scoped kinds are cached whole.
    pub fn in_namespaces(kube: kube::Client, namespaces: Vec<String>) -> Self {
        let (resolver, caches) = Resolver::new(kube.clone(), namespaces.clone());
        Self {
            inner: Arc::new(Inner {
                kube,
                resolver,
                caches,
                namespaces,
            }),
            acting: None,
            reads: Arc::default(),
        }
    }

    /// The namespaces the caches of namespaced kinds hold; empty for every namespace.
    pub fn namespaces(&self) -> &[String] {
        &self.inner.namespaces
    }

    /// A client sharing this one's resolver and caches whose requests impersonate
    /// `identity` (the caller's own identity needs `impersonate` on it). The shared caches,
    /// which watch with this client's identity, serve its reads only of the kinds
    /// [`Client::allow_shared_cache`] allows; it reads every other kind from the API server.
    pub fn acting_as(&self, identity: Identity) -> Self {
        Self {
            inner: self.inner.clone(),
            acting: Some(Acting::new(&self.inner.kube, identity)),
            reads: self.reads.clone(),
        }
    }

    /// A client sharing this one's caches whose readers read objects of each kind in `reads`
    /// only through its fields (a projection: see [`CachedFields`] for the metadata always
    /// kept). The caches it starts or joins keep only those fields, unless another reader
    /// needs more; its reads are served by a cache only while the cache holds them all, else
    /// by the API server. Objects of other kinds it reads whole, as any client.
    ///
    /// Declare only what every reader through this client reads: a field left out is missing
    /// from the objects it reads from a cache.
    pub fn reading_only(&self, reads: impl IntoIterator<Item = (Gvk, CachedFields)>) -> Self {
        let mut declared = (*self.reads).clone();
        for (gvk, fields) in reads {
            match declared.get_mut(&gvk) {
                Some(known) => known.union(&fields),
                None => drop(declared.insert(gvk, fields)),
            }
        }
        Self {
            inner: self.inner.clone(),
            acting: self.acting.clone(),
            reads: Arc::new(declared),
        }
    }

    /// The fields this client's readers read of objects of `gvk` (whole objects unless
    /// declared with [`Client::reading_only`]).
    pub fn reads(&self, gvk: &Gvk) -> &CachedFields {
        self.reads.get(gvk).unwrap_or(&WHOLE)
    }

    /// Whom this client's requests impersonate, if anyone.
    pub fn identity(&self) -> Option<&Identity> {
        self.acting.as_ref().map(|acting| &acting.identity)
    }

    /// Whether the shared cache of `gvk` may serve this client's reads: always for the
    /// client's own identity; for an impersonated one, after [`Client::allow_shared_cache`]
    /// said it may list and watch the kind cluster-wide.
    pub fn may_use_shared_cache(&self, gvk: &Gvk) -> bool {
        self.acting
            .as_ref()
            .is_none_or(|acting| acting.cacheable.read().contains(gvk))
    }

    /// Records whether the impersonated identity may list and watch `gvk` cluster-wide (as a
    /// SubjectAccessReview found): only then does the shared cache serve its reads.
    pub fn allow_shared_cache(&self, gvk: &Gvk, allowed: bool) {
        if let Some(acting) = &self.acting {
            let mut cacheable = acting.cacheable.write();
            match allowed {
                true => cacheable.insert(gvk.clone()),
                false => cacheable.remove(gvk),
            };
        }
    }

    /// Whether `other` is a clone of this client (sharing its caches and identity).
    pub fn is_same(&self, other: &Client) -> bool {
        let same_acting = match (&self.acting, &other.acting) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        Arc::ptr_eq(&self.inner, &other.inner) && same_acting
    }

    /// The underlying `kube::Client` (impersonating, for a client [`Client::acting_as`]
    /// someone).
    pub fn kube(&self) -> &kube::Client {
        self.acting
            .as_ref()
            .map_or(&self.inner.kube, |acting| &acting.kube)
    }

    /// The `kube::Client` of the identity this client was made with, never impersonating:
    /// what asks the API server about an impersonated identity (SubjectAccessReview).
    pub fn own_kube(&self) -> &kube::Client {
        &self.inner.kube
    }

    /// The GVK resolver.
    pub fn resolver(&self) -> &Resolver {
        &self.inner.resolver
    }

    /// The kind as the API server serves it.
    pub async fn resolve(&self, gvk: &Gvk) -> Result<Resolved, Error> {
        Ok(self.inner.resolver.resolve(gvk).await?)
    }

    /// Whether the kind has the subresource (e.g. `status`): from what discovery already
    /// knows, without copying the kind, else after resolving it.
    pub async fn has_subresource(&self, gvk: &Gvk, name: &str) -> Result<bool, Error> {
        match self.inner.resolver.known_subresource(gvk, name) {
            Some(has) => Ok(has),
            None => Ok(Box::pin(self.resolve(gvk)).await?.has_subresource(name)),
        }
    }

    /// A handle on the kind's shared cache, starting its watch unless one runs. The cache
    /// keeps at least the fields this client reads of the kind ([`Client::reads`]): a running
    /// cache that keeps less is widened, listing the kind again.
    ///
    /// The watch stops when the last handle is dropped, or when the kind is removed.
    pub async fn cache(&self, gvk: &Gvk) -> Result<Cache, Error> {
        let resolved = self.resolve(gvk).await?;
        Ok(self.inner.caches.acquire(&resolved, self.reads(gvk)))
    }

    /// How many objects the running cache of a kind holds; `None` when none runs.
    pub fn cached_object_count(&self, gvk: &Gvk) -> Option<usize> {
        self.inner.caches.running(gvk).map(|cache| cache.len())
    }

    /// The kinds whose shared cache runs, each with one open watch.
    pub fn watched_kinds(&self) -> Vec<Gvk> {
        self.inner.caches.kinds()
    }

    /// A reader that always asks the API server.
    pub fn api_reader(&self) -> ApiReader {
        ApiReader {
            client: self.clone(),
        }
    }

    /// The ready cache of a kind, if one runs, the kind is still served (a cache stops soon
    /// after its kind goes; until then its kind is checked here, without a copy) and it holds
    /// the fields this client reads of the kind.
    fn ready_cache(&self, gvk: &Gvk) -> Option<Cache> {
        if !self.may_use_shared_cache(gvk) {
            return None;
        }
        let cache = self.inner.caches.ready(gvk)?;
        let serves = self.inner.resolver.serves(gvk) && cache.holds(self.reads(gvk));
        serves.then_some(cache)
    }

    /// One object, from the cache if one is ready, else from the API server.
    ///
    /// The object is shared with the cache, not copied: copy it (`(*object).clone()`) only
    /// to change it.
    pub async fn get(&self, gvk: &Gvk, key: &ObjectKey) -> Result<Arc<DynamicObject>, Error> {
        match self.ready_cache(gvk) {
            Some(cache) => cache.get(key).ok_or_else(|| Error::NotFound {
                gvk: gvk.clone(),
                key: key.clone(),
            }),
            // Boxed: a request's future is large, and a read from the cache (the common
            // case) should not carry it.
            None => Box::pin(self.api_reader().get(gvk, key))
                .await
                .map(Arc::new),
        }
    }

    /// The objects the options cover, from the cache if one is ready, else from the API server.
    ///
    /// From the cache, a list with `controlled_by` reads only that controller's objects and
    /// one with a namespace only that namespace's (see [`ListOptions`]); the objects are
    /// shared with the cache, not copied.
    pub async fn list(
        &self,
        gvk: &Gvk,
        options: &ListOptions,
    ) -> Result<Vec<Arc<DynamicObject>>, Error> {
        match self.ready_cache(gvk) {
            Some(cache) => Ok(cache.list(options)),
            None => {
                let listed = Box::pin(self.api_reader().list(gvk, options)).await?;
                Ok(listed.into_iter().map(Arc::new).collect())
            }
        }
    }

    /// The objects `uid` controls in `namespace` (in every namespace when `None`): what
    /// [`Client::list`] returns for these options, without copying them into `ListOptions`
    /// when a ready cache answers.
    pub async fn list_controlled(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        uid: &str,
    ) -> Result<Vec<Arc<DynamicObject>>, Error> {
        match self.ready_cache(gvk) {
            Some(cache) => Ok(cache.list_controlled(namespace, uid)),
            None => {
                let options = ListOptions {
                    namespace: namespace.map(str::to_owned),
                    controlled_by: Some(uid.to_owned()),
                    ..ListOptions::default()
                };
                Box::pin(self.list(gvk, &options)).await
            }
        }
    }

    /// Creates an object (its apiVersion/kind name the kind).
    pub async fn create(&self, object: &DynamicObject) -> Result<DynamicObject, Error> {
        let (resolved, key) = self.target(object).await?;
        let api = self.api(&resolved, key.namespace.as_deref());
        let span = debug_span!("create", gvk = %resolved.gvk, object = %key);
        let created = api
            .create(&PostParams::default(), object)
            .instrument(span)
            .await;
        let created = created.map_err(api_error("create", &resolved.gvk, None))?;
        self.note_written(&resolved.gvk, &created);
        Ok(created)
    }

    /// Replaces an object; its resourceVersion, if set, guards against lost updates.
    pub async fn update(&self, object: &DynamicObject) -> Result<DynamicObject, Error> {
        let (resolved, key) = self.target(object).await?;
        let api = self.object_api(&resolved, &key)?;
        let span = debug_span!("update", gvk = %resolved.gvk, object = %key);
        let updated = api
            .replace(&key.name, &PostParams::default(), object)
            .instrument(span)
            .await;
        let updated = updated.map_err(api_error("update", &resolved.gvk, Some(&key)))?;
        self.note_written(&resolved.gvk, &updated);
        Ok(updated)
    }

    /// Replaces an object's status through the status subresource.
    pub async fn update_status(&self, object: &DynamicObject) -> Result<DynamicObject, Error> {
        let (resolved, key) = self.target(object).await?;
        let api = self.object_api(&resolved, &key)?;
        let span = debug_span!("update_status", gvk = %resolved.gvk, object = %key);
        let updated = api
            .replace_status(&key.name, &PostParams::default(), object)
            .instrument(span)
            .await;
        let updated = updated.map_err(api_error("update status", &resolved.gvk, Some(&key)))?;
        self.note_written(&resolved.gvk, &updated);
        Ok(updated)
    }

    /// Patches an object: merge, JSON or apply patch (apply needs a field manager).
    pub async fn patch(
        &self,
        gvk: &Gvk,
        key: &ObjectKey,
        patch: &Patch<Value>,
        params: &PatchParams,
    ) -> Result<DynamicObject, Error> {
        let resolved = self.resolve(gvk).await?;
        let api = self.object_api(&resolved, key)?;
        let span = debug_span!("patch", %gvk, object = %key, kind = patch_kind(patch));
        let patched = api.patch(&key.name, params, patch).instrument(span).await;
        let patched = patched.map_err(api_error("patch", gvk, Some(key)))?;
        self.note_written(gvk, &patched);
        Ok(patched)
    }

    /// Patches an object's status subresource.
    pub async fn patch_status(
        &self,
        gvk: &Gvk,
        key: &ObjectKey,
        patch: &Patch<Value>,
        params: &PatchParams,
    ) -> Result<DynamicObject, Error> {
        let resolved = self.resolve(gvk).await?;
        let api = self.object_api(&resolved, key)?;
        let span = debug_span!("patch_status", %gvk, object = %key, kind = patch_kind(patch));
        let patched = api
            .patch_status(&key.name, params, patch)
            .instrument(span)
            .await;
        let patched = patched.map_err(api_error("patch status", gvk, Some(key)))?;
        self.note_written(gvk, &patched);
        Ok(patched)
    }

    /// Server-side applies an object as `field_manager`, taking over conflicting fields if `force`.
    pub async fn apply(
        &self,
        object: &DynamicObject,
        field_manager: &str,
        force: bool,
    ) -> Result<DynamicObject, Error> {
        let gvk = Gvk::of(object)?;
        let key = ObjectKey::of(object)?;
        let body = serde_json::to_value(object).map_err(|source| Error::Serialize {
            what: "object to apply",
            source,
        })?;
        let mut params = PatchParams::apply(field_manager);
        params.force = force;
        self.patch(&gvk, &key, &Patch::Apply(body), &params).await
    }

    /// Deletes an object; returns it when the server still holds it (e.g. finalizers pending).
    pub async fn delete(
        &self,
        gvk: &Gvk,
        key: &ObjectKey,
        params: &DeleteParams,
    ) -> Result<Option<DynamicObject>, Error> {
        let resolved = self.resolve(gvk).await?;
        let api = self.object_api(&resolved, key)?;
        let span = debug_span!("delete", %gvk, object = %key);
        let deleted = api.delete(&key.name, params).instrument(span).await;
        Ok(deleted.map_err(api_error("delete", gvk, Some(key)))?.left())
    }

    /// Deletes every object the options cover. With `controlled_by`, which the API server
    /// cannot select by, it lists from the server and deletes the covered objects one by one
    /// (one already gone is fine).
    pub async fn delete_collection(
        &self,
        gvk: &Gvk,
        options: &ListOptions,
        params: &DeleteParams,
    ) -> Result<(), Error> {
        if options.controlled_by.is_some() {
            for object in self.api_reader().list(gvk, options).await? {
                let key = ObjectKey::of(&object)?;
                match self.delete(gvk, &key, params).await {
                    Err(err) if err.is_not_found() => {}
                    deleted => drop(deleted?),
                }
            }
            return Ok(());
        }
        let resolved = self.resolve(gvk).await?;
        let api = self.api(&resolved, options.namespace.as_deref());
        let span = debug_span!("delete_collection", %gvk, namespace = options.namespace.as_deref());
        let deleted = api
            .delete_collection(params, &options.list_params())
            .instrument(span)
            .await;
        deleted
            .map(drop)
            .map_err(api_error("delete collection", gvk, None))
    }

    /// While a reconcile's writes are recorded (see [`super::unseen`]), tells the kind's
    /// ready cache to expect the object as written.
    fn note_written(&self, gvk: &Gvk, written: &DynamicObject) {
        if !super::unseen::recording() {
            return;
        }
        if let Some(cache) = self.inner.caches.running(gvk).filter(Cache::is_ready) {
            cache.expect_written(written);
        }
    }

    /// The kind and key an object names.
    async fn target(&self, object: &DynamicObject) -> Result<(Resolved, ObjectKey), Error> {
        let resolved = self.resolve(&Gvk::of(object)?).await?;
        let name = object.metadata.name.clone();
        let name = name.or_else(|| object.metadata.generate_name.clone());
        let key = ObjectKey {
            namespace: object.metadata.namespace.clone(),
            name: name.ok_or(crate::object::ObjectKeyError::Unnamed)?,
        };
        if resolved.namespaced && key.namespace.is_none() {
            return Err(Error::NamespaceRequired {
                gvk: resolved.gvk,
                key,
            });
        }
        Ok((resolved, key))
    }

    /// The API of a kind, in a namespace (namespaced kinds) or cluster-wide.
    fn api(&self, resolved: &Resolved, namespace: Option<&str>) -> Api<DynamicObject> {
        let kube = self.kube().clone();
        match namespace {
            Some(ns) if resolved.namespaced => Api::namespaced_with(kube, ns, &resolved.resource),
            _ => Api::all_with(kube, &resolved.resource),
        }
    }

    /// The API for one object: namespaced kinds need the key's namespace.
    fn object_api(
        &self,
        resolved: &Resolved,
        key: &ObjectKey,
    ) -> Result<Api<DynamicObject>, Error> {
        if resolved.namespaced && key.namespace.is_none() {
            return Err(Error::NamespaceRequired {
                gvk: resolved.gvk.clone(),
                key: key.clone(),
            });
        }
        Ok(self.api(resolved, key.namespace.as_deref()))
    }
}

impl ApiReader {
    /// One object, from the API server.
    pub async fn get(&self, gvk: &Gvk, key: &ObjectKey) -> Result<DynamicObject, Error> {
        let resolved = self.client.resolve(gvk).await?;
        let api = self.client.object_api(&resolved, key)?;
        let span = debug_span!("get", %gvk, object = %key);
        let found = api.get(&key.name).instrument(span).await;
        found.map_err(api_error("get", gvk, Some(key)))
    }

    /// The objects the options cover, from the API server (`controlled_by` is applied to
    /// what the server returns).
    pub async fn list(
        &self,
        gvk: &Gvk,
        options: &ListOptions,
    ) -> Result<Vec<DynamicObject>, Error> {
        let resolved = self.client.resolve(gvk).await?;
        let api = self.client.api(&resolved, options.namespace.as_deref());
        let span = debug_span!("list", %gvk, namespace = options.namespace.as_deref());
        let list = api.list(&options.list_params()).instrument(span).await;
        let list = list.map_err(api_error("list", gvk, None))?;
        debug!(%gvk, count = list.items.len(), "listed");
        let types = kube::api::TypeMeta {
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
        };
        Ok(list
            .items
            .into_iter()
            .filter(|item| options.controller_matches(item))
            .map(|mut item| {
                item.types.get_or_insert_with(|| types.clone());
                item
            })
            .collect())
    }
}

fn patch_kind(patch: &Patch<Value>) -> &'static str {
    match patch {
        Patch::Apply(_) => "apply",
        Patch::Json(_) => "json",
        Patch::Merge(_) => "merge",
        Patch::Strategic(_) => "strategic",
        _ => "other",
    }
}

/// Maps a kube error to ours; a 404 on a named object is [`Error::NotFound`].
fn api_error<'a>(
    verb: &'static str,
    gvk: &'a Gvk,
    key: Option<&'a ObjectKey>,
) -> impl FnOnce(kube::Error) -> Error + 'a {
    move |source| match (&source, key) {
        (kube::Error::Api(status), Some(key)) if status.code == 404 => Error::NotFound {
            gvk: gvk.clone(),
            key: key.clone(),
        },
        _ => RequestFailure {
            verb,
            gvk: gvk.clone(),
            key: key.cloned(),
            source,
        }
        .into(),
    }
}
