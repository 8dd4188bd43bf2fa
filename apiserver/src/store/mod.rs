//! The object store: every object, one global resourceVersion counter, the change history
//! that watches replay, and the watchers themselves. All writes happen under one lock, so
//! every operation is linearizable and changes are seen in resourceVersion order.
//!
//! `State` is composed of parts that own their data (`objects`, `watch`, `gc_queue`,
//! `kinds`, `persist`); the files that add its operations (writes, deletion, garbage
//! collection, the rules of particular kinds) orchestrate those parts.

mod aggregation;
mod autoscale_queue;
mod autoscaling;
mod body;
mod builtin_defaults;
mod cluster;
mod crd;
mod crd_defaults;
mod delete;
mod encoded;
mod events;
mod eviction;
mod gc;
mod gc_queue;
mod initial_status;
mod kind_rules;
mod kinds;
mod managed;
mod objects;
mod persist;
mod schemas;
mod server_fields;
mod service_allocations;
mod services;
mod startup;
mod state;
mod transaction;
mod watch;
mod write;

pub use body::{PatchBody, apply_patch};
pub use delete::{DeleteOptions, DeleteOutcome, Propagation};
pub use objects::ObjectKey;
pub use persist::StorageError;
pub use schemas::FieldValidation;
pub use state::State;
pub use transaction::Store;
pub use watch::{Change, ChangeKind, StoreConfig, Subscription, WatchStart};
pub use write::{EscalationCheck, Target, WriteOptions};
