//! Ducks found at run time: which kinds implement a duck type (by CRD label, by schema, or
//! as a known built-in), and duck controllers started and stopped per matching kind as
//! kinds come and go.

mod controllers;
mod kind;
mod matching;
mod shape;
mod table;

pub use controllers::{DuckControllers, DuckFactory, cluster_matches};
pub use kind::DuckType;
pub use matching::{KindMatch, Reason, Verdict, match_builtins, match_crd, match_schema};
pub use shape::Miss;
pub use table::table;
