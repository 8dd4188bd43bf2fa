//! dynrec: a dynamic, schema-free reconciler engine for Kubernetes.
//!
//! Kinds are named by GroupVersionKind at run time and handled as `DynamicObject`s or
//! typed duck projections. This release ships:
//! - [`object`]: GVKs, object keys, field paths and status conventions on any object;
//! - [`client`]: a discovery-backed resolver, shared per-GVK caches, the [`client::Client`],
//!   the patch-only [`client::DuckClient`] and an event recorder;
//! - [`tracker`]: references to watched objects, with leases, and their observers;
//! - the embedded API server every layer is tested on (re-exported as `apiserver`).
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

pub mod client;
pub mod definitions;
pub mod ducks;
pub mod object;
pub mod rbac;
pub mod reconcilers;
pub mod runtime;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tracker;
pub mod webhook;

#[cfg(feature = "embedded")]
pub use dynrec_apiserver as apiserver;
pub use dynrec_duck as duck;

/// The README's Rust examples, compiled (and run) as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
