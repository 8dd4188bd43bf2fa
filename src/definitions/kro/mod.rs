//! KRO's ResourceGraphDefinitions (`kro.run/v1alpha1`), run unchanged: an RGD is read as
//! KRO defines it and compiled onto the same definition model and reconcilers as a
//! `ReconcilerDefinition` (never a second engine): its SimpleSchema becomes the instance
//! CRD KRO generates, its resources steps ordered by the expressions' dependencies, and
//! its instances get KRO's finalizer, labels and `status.state`.

mod collection;
mod conditions;
mod controller;
mod convert;
mod custom_conditions;
mod expressions;
mod instance;
mod model;
mod ownership;
mod simpleschema;
mod spelling;
mod translate;

pub use collection::{COLLECTION_INDEX_LABEL, COLLECTION_SIZE_LABEL, label_collection_item};
pub use conditions::{GRAPH_RESOLVED, INSTANCE_MANAGED, RESOURCES_READY};
pub use controller::{ResourceGraphDefinitions, rgd_crd, rgd_gvk};
pub use convert::convert;
pub use custom_conditions::{CustomConditions, Evaluation, stamp};
pub use instance::{ChildGroup, KroInstance};
pub use model::{
    ExternalRef, ExternalRefMetadata, GROUP, GraphSpec, InstanceSchema, KIND, LabelSelector,
    Resource, ResourceGraphDefinition, VERSION,
};
pub use ownership::children_of;
pub use simpleschema::spec_schema;
pub use spelling::Spellings;
pub use translate::{
    FINALIZER, INSTANCE_ID_LABEL, OWNED_LABEL, RGD_NAME_LABEL, Translated, locate, parse_rgd,
    plural, translate,
};
