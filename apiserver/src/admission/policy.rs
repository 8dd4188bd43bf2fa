//! ValidatingAdmissionPolicy: CEL `validations` of the policies a
//! ValidatingAdmissionPolicyBinding binds, checked on the object about to be written.

use serde_json::{Value, json};

use super::hooks::{Attributes, rule_covers, selects};
use crate::error::ApiError;
use crate::k8s_cel;
use crate::resources::ResourceKey;
use crate::store::State;

/// The variables a validation may read (`params`, `namespaceObject`, `variables` and
/// `authorizer` are not provided).
const VARIABLES: &[&str] = &["object", "oldObject", "request"];

/// One binding of a policy that covers a write.
pub(super) struct Bound {
    policy_name: String,
    binding_name: String,
    validations: Vec<Value>,
    fail_closed: bool,
    deny: bool,
    warn: bool,
}

/// Whether any policy is bound at all (most servers have none).
pub(super) fn any(state: &State) -> bool {
    let bindings = ResourceKey {
        group: "admissionregistration.k8s.io".into(),
        plural: "validatingadmissionpolicybindings".into(),
    };
    state.objects().list(&bindings, None, None).next().is_some()
}

/// The bound policies whose match constraints cover the write of `objects`.
pub(super) fn covering(state: &State, write: &Attributes, objects: &[&Value]) -> Vec<Bound> {
    let key = |plural: &str| ResourceKey {
        group: "admissionregistration.k8s.io".into(),
        plural: plural.into(),
    };
    let policies = key("validatingadmissionpolicies");
    let bindings = key("validatingadmissionpolicybindings");
    state
        .objects()
        .list(&bindings, None, None)
        .filter_map(|binding| {
            let policy_name = binding["spec"]["policyName"].as_str()?;
            let policy = state.get(&policies, "", policy_name)?;
            let spec = &policy["spec"];
            let constraints = &spec["matchConstraints"];
            let rules = constraints["resourceRules"].as_array()?;
            let selector =
                |field: &str| crate::selector::format_label_selector(&constraints[field]);
            let matched = rules.iter().any(|rule| rule_covers(rule, write))
                && selects(
                    state,
                    write,
                    objects,
                    &selector("namespaceSelector"),
                    &selector("objectSelector"),
                );
            let actions = crate::meta::string_list(&binding["spec"]["validationActions"]);
            matched.then(|| Bound {
                policy_name: policy_name.to_string(),
                binding_name: crate::meta::name(&binding).to_string(),
                validations: spec["validations"].as_array().cloned().unwrap_or_default(),
                fail_closed: spec["failurePolicy"].as_str() != Some("Ignore"),
                deny: actions.iter().any(|a| a == "Deny"),
                warn: actions.iter().any(|a| a == "Warn"),
            })
        })
        .collect()
}

impl Bound {
    /// Checks every validation; a failed one denies (or warns, by the binding's actions).
    pub(super) fn check(
        &self,
        write: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let request = json!({
            "operation": write.operation,
            "namespace": write.namespace,
            "resource": {"group": write.group, "version": write.version, "resource": write.plural},
        });
        for validation in &self.validations {
            let expression = validation["expression"].as_str().unwrap_or_default();
            let failure = match evaluate(expression, object, old, &request) {
                Ok(true) => continue,
                Ok(false) => match validation["message"].as_str() {
                    Some(message) => message.to_string(),
                    None => format!("failed expression: {expression}"),
                },
                Err(err) if self.fail_closed => {
                    format!("expression '{expression}' resulted in error: {err}")
                }
                Err(_) => continue,
            };
            let message = format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {failure}",
                self.policy_name, self.binding_name
            );
            if self.warn {
                warnings.push(message.clone());
            }
            if self.deny {
                let reason = validation["reason"].as_str().unwrap_or("Invalid");
                let code = match reason {
                    "Unauthorized" => 401,
                    "Forbidden" => 403,
                    "RequestEntityTooLarge" => 413,
                    _ => 422,
                };
                return Err(ApiError {
                    code,
                    reason: reason.to_string().into(),
                    message,
                    details: None,
                });
            }
        }
        Ok(())
    }
}

/// Evaluates one validation; `Err` says why it could not be.
fn evaluate(
    expression: &str,
    object: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
) -> Result<bool, String> {
    let compiled = k8s_cel::compile(expression, VARIABLES).map_err(|err| err.to_string())?;
    let null = Value::Null;
    let env = k8s_cel::env()?;
    let mut ctx = cel::Context::with_env(env);
    ctx.add_variable_as_val("object", k8s_cel::to_val(object.unwrap_or(&null)));
    ctx.add_variable_as_val("oldObject", k8s_cel::to_val(old.unwrap_or(&null)));
    ctx.add_variable_as_val("request", k8s_cel::to_val(request));
    match compiled.program.execute(&ctx) {
        Ok(cel::Value::Bool(result)) => Ok(result),
        Ok(other) => Err(format!("expected a bool, got {other:?}")),
        Err(err) => Err(err.to_string()),
    }
}
