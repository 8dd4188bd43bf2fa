//! The names a controller needs, in one import: `use dynrec::prelude::*;`.
//!
//! A controller is a [`ResourceReconciler`] of one kind ([`Gvk`]) running a tree of
//! sub-reconcilers ([`ChildReconciler`], [`SyncReconciler`], [`Sequence`], anything that is a
//! [`SubReconciler`]) that change the resource through a [`Draft`], read the cluster through
//! the [`Context`] and fail with a [`ReconcileError`]; its conditions are a
//! [`ConditionSet`]. [`run_controllers`] connects (from [`RunArgs`]) and runs a [`Manager`]
//! with the controllers registered on it, each built from the [`Config`] it hands out.
//! Everything else is in the modules it comes from: the other reconcilers and the closure
//! shapes in [`reconcilers`](crate::reconcilers), objects and conditions in
//! [`object`](crate::object), the client in [`client`](crate::client).
//!
//! ```no_run
//! use dynrec::prelude::*;
//!
//! /// Every Widget's status echoes its greeting, and Ready says so.
//! fn widgets(config: &Config) -> ResourceReconciler {
//!     let echo = SyncReconciler::new(|_ctx: &Context, widget: &mut Draft| {
//!         let greeting = widget.data["spec"]["greeting"].clone();
//!         if widget.data["status"]["greeting"] != greeting {
//!             widget.data["status"]["greeting"] = greeting;
//!         }
//!         Ok(())
//!     });
//!     let widget = Gvk::new("example.com", "v1", "Widget");
//!     ResourceReconciler::new(widget, echo, config.clone()).conditions(ConditionSet::living(&[]))
//! }
//!
//! # async fn run() -> anyhow::Result<()> {
//! run_controllers(RunArgs::default(), "widgets", |manager: &mut Manager, config, _kube| {
//!     manager.register(widgets(config))
//! })
//! .await?;
//! # Ok(())
//! # }
//! ```

pub use kube::api::DynamicObject;

pub use crate::object::{ConditionSet, Gvk};
pub use crate::reconcilers::{
    ChildReconciler, Config, Context, Draft, ReconcileError, ResourceReconciler, Sequence,
    SubReconciler, SyncReconciler,
};
pub use crate::runtime::{Manager, RunArgs, run_controllers};
