//! dynrec: a dynamic, schema-free reconciler engine for Kubernetes.
//!
//! Kinds are named by GroupVersionKind at run time and handled as `DynamicObject`s or
//! typed duck projections. [`prelude`] imports what a controller needs. Start with [`reconcilers`] (a controller is a
//! [`reconcilers::ResourceReconciler`] composed of sub-reconcilers such as
//! [`reconcilers::ChildReconciler`]) and [`runtime`] (the [`runtime::Manager`] that runs
//! them); the README shows the smallest one and docs/rust.md the rest. The modules:
//! - [`reconcilers`]: the sub-reconcilers of reconciler.io (sync, child, child set,
//!   aggregate, cast, sequence, if/then, while, for-each, try/catch, with-finalizer, ...),
//!   the object managers that write children, conditions written as closures or CEL;
//! - [`runtime`]: the manager (watches from what the reconcilers declare, work queues,
//!   leader election, health and metrics) and `run_controllers`, which connects and runs;
//! - [`object`]: GVKs, object keys, field paths and status conventions on any object;
//! - [`client`]: a discovery-backed resolver, shared per-GVK caches, the [`client::Client`],
//!   the patch-only [`client::DuckClient`] and an event recorder;
//! - [`tracker`]: references to watched objects, with leases, and their observers;
//! - [`ducks`]: which kinds implement a duck type, and a controller per such kind;
//! - [`definitions`]: controllers described as data (YAML with CEL);
//! - [`webhook`]: admission webhooks built from reconcilers; [`rbac`]: the permissions a
//!   controller needs, as RBAC manifests;
//! - `testing`: the table-test harness; `apiserver`: the embedded API server every layer is
//!   tested on (see the features below).
//!
//! # Cargo features
//!
//! All are on by default; `default-features = false` leaves the reconcilers, client,
//! runtime, definitions and webhooks without the API server, clap or tracing-subscriber.
//! - `embedded`: the embedded API server (`dynrec::apiserver`), which [`runtime::connect`]
//!   starts when no cluster is configured; without it a cluster must be configured.
//! - `cli`: [`runtime::RunArgs`] derives `clap::Args`; the `dynrec` binary and the examples
//!   need it (the binary also needs `embedded` and `testing`).
//! - `testing`: the table-test harness (`dynrec::testing`); turns on `embedded`.

mod cel;
pub mod client;
pub mod definitions;
/// KRO's ResourceGraphDefinitions, a definition format of their own (see [`definitions::kro`]).
pub use definitions::kro;
pub mod ducks;
pub mod object;
pub mod prelude;
pub mod rbac;
pub mod reconcilers;
pub mod runtime;
#[cfg(feature = "testing")]
pub mod testing;
mod trace;
pub mod tracker;
pub mod webhook;

#[cfg(feature = "embedded")]
pub use dynrec_apiserver as apiserver;
/// The duck types (`PodSpecable`, `Addressable`, `KResource`, the [`Duck`](duck_types::Duck)
/// trait): typed, partial views of objects of any kind. [`ducks`] finds the kinds that
/// implement them.
pub use dynrec_duck as duck_types;
/// The time library of dynrec's APIs (`Timestamp` in test cases' `now`, conditions' times).
pub use jiff;

/// The README's Rust examples, compiled (and run) as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the pages in `docs/`, compiled (and run) as doctests.
#[cfg(doctest)]
pub mod docs_doctests {
    /// docs/rust.md.
    #[doc = include_str!("../docs/rust.md")]
    pub struct Rust;
    /// docs/ducks.md.
    #[doc = include_str!("../docs/ducks.md")]
    pub struct Ducks;
    /// docs/apiserver.md.
    #[doc = include_str!("../docs/apiserver.md")]
    pub struct ApiServer;
    /// docs/definitions.md.
    #[doc = include_str!("../docs/definitions.md")]
    pub struct Definitions;
    /// docs/test-cases.md.
    #[doc = include_str!("../docs/test-cases.md")]
    pub struct TestCases;
    /// docs/cluster.md.
    #[doc = include_str!("../docs/cluster.md")]
    pub struct Cluster;
    /// docs/webhooks.md.
    #[doc = include_str!("../docs/webhooks.md")]
    pub struct Webhooks;
    /// docs/design.md.
    #[doc = include_str!("../docs/design.md")]
    pub struct Design;
    /// docs/checking.md.
    #[doc = include_str!("../docs/checking.md")]
    pub struct Checking;
    /// docs/operating.md.
    #[doc = include_str!("../docs/operating.md")]
    pub struct Operating;
    /// docs/multi-tenancy.md.
    #[doc = include_str!("../docs/multi-tenancy.md")]
    pub struct MultiTenancy;
    /// docs/reconcilerdefinition-crd.md.
    #[doc = include_str!("../docs/reconcilerdefinition-crd.md")]
    pub struct ReconcilerDefinitionCrd;
    /// docs/coming-from-kro.md.
    #[doc = include_str!("../docs/coming-from-kro.md")]
    pub struct ComingFromKro;
    /// docs/chainsaw.md.
    #[doc = include_str!("../docs/chainsaw.md")]
    pub struct Chainsaw;
}
