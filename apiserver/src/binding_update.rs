//! A RoleBinding's or ClusterRoleBinding's `roleRef` is fixed at creation, as kube's
//! `ValidateRoleBindingUpdate` fixes it: an update that changes it is `422 Invalid`
//! (`roleRef: Invalid value: rbac.RoleRef{...}: cannot change roleRef`); to bind another
//! role, delete the binding and create it again.

use serde_json::Value;

use crate::error::Cause;
use crate::resources::ResourceInfo;

/// The cause refusing an update of a binding whose `roleRef` differs from `old`'s; none
/// for other kinds or an unchanged `roleRef`.
pub fn causes(info: &ResourceInfo, object: &Value, old: &Value) -> Vec<Cause> {
    let is_binding = info.group == "rbac.authorization.k8s.io"
        && matches!(info.plural.as_str(), "rolebindings" | "clusterrolebindings");
    if !is_binding || role_ref(object) == role_ref(old) {
        return Vec::new();
    }
    let (group, kind, name) = role_ref(object);
    // Go prints the struct with %#v.
    let value = format!("rbac.RoleRef{{APIGroup:{group:?}, Kind:{kind:?}, Name:{name:?}}}");
    vec![Cause {
        reason: "FieldValueInvalid",
        field: "roleRef".into(),
        message: format!("Invalid value: {value}: cannot change roleRef"),
    }]
}

/// The `apiGroup`, `kind` and `name` of `binding`'s `roleRef`.
fn role_ref(binding: &Value) -> (&str, &str, &str) {
    let field = |key: &str| binding["roleRef"][key].as_str().unwrap_or_default();
    (field("apiGroup"), field("kind"), field("name"))
}
