//! dynrec: a dynamic, schema-free reconciler engine for Kubernetes.
//!
//! Kinds are named by GroupVersionKind at run time and handled as `DynamicObject`s or
//! typed duck projections. This release ships the embedded API server (re-exported as
//! [`apiserver`]) that every later layer is tested on; the client layer, reconcilers and
//! runtime follow.

pub use dynrec_apiserver as apiserver;
