//! dynrec-apiserver: an embedded, in-memory Kubernetes API server.
//!
//! It speaks the Kubernetes REST protocol (discovery, CRUD, status subresources, patches,
//! watches, finalizers, garbage collection, CRDs at run time) so that controllers and
//! `kubectl` can run against it with no cluster. Reach it in-process with
//! [`ApiServer::client`] or over HTTP with [`ApiServer::serve`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kube::Error> {
//! use kube::api::{Api, DynamicObject, ApiResource, PostParams};
//! use kube::core::GroupVersionKind;
//!
//! let server = dynrec_apiserver::ApiServer::new();
//! let client = server.client();
//! let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
//! let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
//! let cm = DynamicObject::new("settings", &ar).data(serde_json::json!({"data": {"a": "b"}}));
//! let created = api.create(&PostParams::default(), &cm).await?;
//! assert!(created.metadata.uid.is_some());
//! assert_eq!(created.metadata.generation, None); // as kube: ConfigMaps have no generation
//! # Ok(())
//! # }
//! ```

mod admission;
mod apply;
mod auth;
mod autoscaler;
mod binding_update;
mod catalog;
mod config_data;
mod core_validation;
mod error;
mod faults;
mod go_order;
mod hpa_validation;
mod http;
mod json_order;
mod k8s_cel;
mod kind_schemas;
mod meta;
mod meta_validation;
mod resources;
mod scale;
mod schema;
mod selector;
mod server;
mod store;
mod tls;
mod typecheck;
mod validation;
mod workload_updates;
mod workloads;

pub use auth::{Authorization, TokenFileError};
pub use error::{ApiError, Cause};
pub use faults::{Fault, FaultAction, FaultMatch};
pub use http::KUBERNETES_MINOR;
pub use server::{ApiServer, ApiServerBuilder, Serving, kubeconfig};
pub use store::StorageError;
pub use tls::{TlsError, TlsIdentity};
