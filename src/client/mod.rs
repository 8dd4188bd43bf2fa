//! The client layer: GVK resolution, shared caches, the [`Client`], the patch-only
//! [`DuckClient`] and the [`EventRecorder`].

mod by_key;
mod cache;
mod cached_fields;
mod crd;
mod crd_install;
mod decoded;
mod duck;
mod dynamic;
mod error;
mod events;
mod identity;
mod list;
mod namespaced_watch;
mod projection;
mod resolved;
mod resolver;
mod store;
pub(crate) mod unseen;

pub use cache::{Cache, CacheEvent, CacheEvents, CacheStatus};
pub use cached_fields::CachedFields;
pub(crate) use crd::served_kinds;
pub use crd_install::CRD_SERVED_TIMEOUT;
pub use duck::{DuckClient, DuckEvent, DuckWatch, Ducked};
pub use dynamic::{ApiReader, Client};
pub use error::{Error, ProjectionFailure, RequestFailure, ResolveError};
pub use events::{EventRecorder, reasons};
pub use identity::Identity;
pub use kube::runtime::events::EventType;
pub use list::ListOptions;
pub use projection::Projection;
pub use resolved::Resolved;
pub use resolver::Resolver;
