//! The per-kind rules kube's `pkg/apis/core/validation` enforces beyond metadata, for the
//! core kinds whose mistakes users meet most: Secret types and immutable ConfigMaps and
//! Secrets ([`secret`]), and Services ([`service`]). Each returns kube's causes, with its
//! field paths and messages, for one `422 Invalid`.

mod secret;
mod service;

use serde_json::Value;

use crate::error::Cause;
use crate::resources::ResourceInfo;

/// The problems kube's validation of the kind finds in `object` (`old`: the stored object,
/// on an update); none for kinds without rules here.
pub fn causes(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    if info.custom || !info.group.is_empty() {
        return Vec::new();
    }
    match info.plural.as_str() {
        "secrets" => secret::causes(object, old),
        "configmaps" => secret::immutable_causes(object, old, false),
        "services" => service::causes(object, old),
        _ => Vec::new(),
    }
}
