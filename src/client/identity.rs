//! Acting as someone else: a [`Client`](super::Client) whose requests impersonate a
//! ServiceAccount (`Impersonate-User: system:serviceaccount:NS:NAME`, as `kubectl --as`),
//! sharing the caches and resolver of the client it came from. A shared cache (which watches
//! with the original identity) serves it only for the kinds it was found allowed to list
//! and watch cluster-wide; every other read asks the API server as the account.

use std::collections::HashSet;
use std::sync::Arc;

use http::{HeaderValue, Request};
use kube::client::Body;
use parking_lot::RwLock;

use crate::object::Gvk;

/// The header kube-apiserver reads the impersonated user from.
const IMPERSONATE_USER: &str = "Impersonate-User";
/// The headers of an impersonation the original client may already carry (`--as`).
const IMPERSONATE_HEADERS: [&str; 3] = [IMPERSONATE_USER, "Impersonate-Group", "Impersonate-Uid"];

/// A ServiceAccount a client acts as.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The account's namespace.
    pub namespace: String,
    /// The account's name.
    pub name: String,
}

impl Identity {
    /// The ServiceAccount `name` in `namespace`.
    pub fn service_account(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The user kube authenticates the account as: `system:serviceaccount:NS:NAME`.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// The groups of the account's tokens: `system:serviceaccounts`,
    /// `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{}", self.namespace),
            "system:authenticated".into(),
        ]
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.username())
    }
}

/// An identity with its impersonating `kube::Client` and the kinds shared caches may serve.
pub(super) struct Acting {
    pub(super) identity: Identity,
    pub(super) kube: kube::Client,
    /// Kinds the identity may list and watch cluster-wide (see
    /// [`Client::allow_shared_cache`](super::Client::allow_shared_cache)).
    pub(super) cacheable: RwLock<HashSet<Gvk>>,
}

impl Acting {
    pub(super) fn new(original: &kube::Client, identity: Identity) -> Arc<Self> {
        Arc::new(Self {
            kube: impersonating(original, &identity.username()),
            identity,
            cacheable: RwLock::default(),
        })
    }
}

/// A `kube::Client` sending every request of `original` as `user` (kube-apiserver adds a
/// ServiceAccount user's groups itself). A user that cannot be a header value fails every
/// request rather than send it as the original identity.
fn impersonating(original: &kube::Client, user: &str) -> kube::Client {
    let namespace = original.default_namespace().to_owned();
    let original = original.clone();
    let header = HeaderValue::from_str(user).map_err(|_| user.to_owned());
    let service = tower::service_fn(move |mut request: Request<Body>| {
        let original = original.clone();
        let header = header.clone();
        async move {
            let user = header.map_err(|user| {
                kube::Error::Service(
                    format!("cannot impersonate {user:?}: not a header value").into(),
                )
            })?;
            let headers = request.headers_mut();
            for name in IMPERSONATE_HEADERS {
                headers.remove(name);
            }
            headers.insert(IMPERSONATE_USER, user);
            original.send(request).await
        }
    });
    kube::Client::new(service, namespace)
}
