//! The defaults kube-apiserver gives a CustomResourceDefinition when it is written
//! (apiextensions `v1` `SetDefaults_CustomResourceDefinitionSpec` and
//! `SetDefaults_ServiceReference`): `names.singular`, `names.listKind`,
//! `conversion.strategy: None` and a conversion webhook service's port 443.
//! `status.storedVersions` is filled by the CRD's status (see `crd_status`).

use serde_json::{Value, json};

/// Sets the defaults kube-apiserver sets on a CRD's spec.
pub(super) fn apply(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    let kind = spec["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Some(names) = spec
        .get_mut("names")
        .and_then(Value::as_object_mut)
        .filter(|_| !kind.is_empty())
    {
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().is_empty();
        if empty(names.get("singular")) {
            names.insert("singular".into(), Value::from(kind.to_lowercase()));
        }
        if empty(names.get("listKind")) {
            names.insert("listKind".into(), Value::from(format!("{kind}List")));
        }
    }
    if !spec["conversion"].is_object() {
        spec["conversion"] = json!({"strategy": "None"});
    }
    let service = spec
        .pointer_mut("/conversion/webhook/clientConfig/service")
        .and_then(Value::as_object_mut);
    if let Some(service) = service.filter(|s| s.get("port").is_none_or(Value::is_null)) {
        service.insert("port".into(), Value::from(443));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_crd_gets_kubes_defaults_and_set_fields_are_kept() {
        let mut crd = json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"}}});
        apply(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["spec"].as_object().map(|s| s.len()), Some(2));
        let mut crd = json!({"spec": {"names": {"kind": "W", "singular": "s", "listKind": "L"},
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "x"}}}}}});
        apply(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "s");
        assert_eq!(crd["spec"]["names"]["listKind"], "L");
        assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
            443
        );
        // Odd input is left alone, never a panic.
        for mut odd in [
            json!(null),
            json!({"spec": 5}),
            json!({"spec": {"names": 3}}),
        ] {
            apply(&mut odd);
        }
    }
}
