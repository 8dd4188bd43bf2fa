//! dynrec: a dynamic, schema-free reconciler engine for Kubernetes.
//!
//! Kinds are named by GroupVersionKind at run time and handled as `DynamicObject`s or
//! typed duck projections. This release ships:
//! - [`object`]: GVKs, object keys, field paths and status conventions on any object;
//! - [`client`]: a discovery-backed resolver, shared per-GVK caches, the [`client::Client`],
//!   the patch-only [`client::DuckClient`] and an event recorder;
//! - [`tracker`]: references to watched objects, with leases, and their observers;
//! - the embedded API server every layer is tested on (re-exported as [`apiserver`]).

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

pub use dynrec_apiserver as apiserver;
pub use dynrec_duck as duck;

/// The README's Rust examples, compiled (and run) as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
