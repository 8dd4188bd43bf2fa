//! Ducks found at run time: which kinds implement a duck type (by CRD label, by schema, by
//! a `DuckMapping`, or as a known built-in), and duck controllers started and stopped per
//! matching kind as kinds and mappings come and go.

mod controllers;
mod kind;
mod mapping;
mod mapping_status;
mod matching;
mod openapi;
mod shape;
mod survey;
mod table;

pub use controllers::{DuckControllers, DuckFactory, cluster_survey, install_mapping_crd};
pub use kind::DuckType;
pub use mapping::{DuckMapping, DuckMappingSpec, MappingError, mapping_crd, mapping_gvk};
pub use matching::{
    KindMatch, Reason, Verdict, match_builtins, match_crd, match_mapping, match_openapi,
    match_schema,
};
pub use shape::Miss;
pub use survey::{NearMiss, Survey};
pub use table::table;
