//! Webhooks as MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects
//! declare them, and which writes each one is called for.

use std::time::Duration;

use serde_json::Value;

use crate::meta;
use crate::resources::ResourceKey;
use crate::selector::LabelSelector;
use crate::store::State;

/// The group of the webhook configurations.
const GROUP: &str = "admissionregistration.k8s.io";

/// kube-apiserver's default and largest `timeoutSeconds`.
const DEFAULT_TIMEOUT: u64 = 10;
const MAX_TIMEOUT: u64 = 30;

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub(super) struct Hook {
    /// The webhook's name (`webhooks[].name`), as denials name it.
    pub(super) name: String,
    /// Where it is called, or why its `clientConfig` names no usable endpoint (a call
    /// failure, under its failurePolicy).
    pub(super) endpoint: Result<Endpoint, String>,
    rules: Vec<Value>,
    namespace_selector: String,
    object_selector: String,
    /// `failurePolicy: Fail` (the default); `Ignore` lets the write go on.
    pub(super) fail_closed: bool,
    /// `timeoutSeconds` (default 10, at most 30).
    pub(super) timeout: Duration,
    /// Whether `sideEffects` allows calling it for a dry run (None or NoneOnDryRun).
    pub(super) dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub(super) reinvoke: bool,
}

/// Where a webhook is reached.
#[derive(Clone, Debug)]
pub(super) struct Endpoint {
    /// The `https://` URL posted to.
    pub(super) url: String,
    /// The host name the server's certificate must name.
    pub(super) server_name: String,
    /// The address connected to (`host:port`).
    pub(super) connect: String,
    /// The PEM certificates to trust (`caBundle`).
    pub(super) ca_bundle: Vec<u8>,
}

/// What a write is, as rules and selectors see it.
pub(crate) struct Attributes<'a> {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub(crate) operation: &'static str,
    /// The kind's group.
    pub(crate) group: &'a str,
    /// The kind's version.
    pub(crate) version: &'a str,
    /// The kind's plural.
    pub(crate) plural: &'a str,
    /// Whether the kind is namespaced.
    pub(crate) namespaced: bool,
    /// The object's namespace ("" for cluster-scoped kinds).
    pub(crate) namespace: &'a str,
}

/// The webhooks of every configuration of one type (`mutating` or validating), in the
/// order kube-apiserver calls them: configurations by name, webhooks in their order.
pub(super) fn hooks(state: &State, mutating: bool) -> Vec<Hook> {
    let plural = match mutating {
        true => "mutatingwebhookconfigurations",
        false => "validatingwebhookconfigurations",
    };
    let key = ResourceKey {
        group: GROUP.into(),
        plural: plural.into(),
    };
    state
        .objects()
        .list(&key, None, None)
        .flat_map(|config| config["webhooks"].as_array().cloned().unwrap_or_default())
        .map(|webhook| hook(&webhook))
        .collect()
}

fn hook(webhook: &Value) -> Hook {
    let text = |field: &str| webhook[field].as_str().unwrap_or_default();
    let selector = |field: &str| crate::selector::format_label_selector(&webhook[field]);
    let timeout = webhook["timeoutSeconds"]
        .as_u64()
        .unwrap_or(DEFAULT_TIMEOUT);
    Hook {
        name: text("name").to_string(),
        endpoint: endpoint(&webhook["clientConfig"]),
        rules: webhook["rules"].as_array().cloned().unwrap_or_default(),
        namespace_selector: selector("namespaceSelector"),
        object_selector: selector("objectSelector"),
        fail_closed: text("failurePolicy") != "Ignore",
        timeout: Duration::from_secs(timeout.clamp(1, MAX_TIMEOUT)),
        dry_run_safe: matches!(text("sideEffects"), "None" | "NoneOnDryRun"),
        reinvoke: text("reinvocationPolicy") == "IfNeeded",
    }
}

/// The endpoint of a `clientConfig`: its `url`, or its `service` mapped to loopback:
/// `https://NAME.NAMESPACE.svc:PORT/PATH` is reached at `127.0.0.1:PORT` and its
/// certificate must name `NAME.NAMESPACE.svc` (there is no cluster network here).
fn endpoint(client: &Value) -> Result<Endpoint, String> {
    let ca_bundle = client["caBundle"]
        .as_str()
        .and_then(|b64| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(b64).ok()
        })
        .unwrap_or_default();
    if let Some(url) = client["url"].as_str() {
        let invalid =
            || format!("invalid clientConfig.url {url:?}: an https URL with a host is needed");
        let uri: http::Uri = url.parse().map_err(|_| invalid())?;
        if uri.scheme_str() != Some("https") {
            return Err(invalid());
        }
        let host = uri
            .host()
            .ok_or_else(invalid)?
            .trim_matches(['[', ']'])
            .to_string();
        let port = uri.port_u16().unwrap_or(443);
        return Ok(Endpoint {
            url: url.to_string(),
            connect: format!("{host}:{port}"),
            server_name: host,
            ca_bundle,
        });
    }
    let service = &client["service"];
    let (Some(name), Some(namespace)) = (service["name"].as_str(), service["namespace"].as_str())
    else {
        return Err(
            "invalid clientConfig: a url, or a service with a name and a namespace, is needed"
                .into(),
        );
    };
    let port = service["port"].as_u64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("/");
    let host = format!("{name}.{namespace}.svc");
    Ok(Endpoint {
        url: format!("https://{host}:{port}{path}"),
        connect: format!("127.0.0.1:{port}"),
        server_name: host,
        ca_bundle,
    })
}

impl Hook {
    /// Whether the webhook's rules cover the write (before its selectors are checked).
    pub(super) fn covers(&self, write: &Attributes) -> bool {
        self.rules.iter().any(|rule| rule_covers(rule, write))
    }

    /// Whether the selectors select the write.
    pub(super) fn selects(&self, state: &State, write: &Attributes, objects: &[&Value]) -> bool {
        selects(
            state,
            write,
            objects,
            &self.namespace_selector,
            &self.object_selector,
        )
    }
}

/// Whether a namespace selector (the namespace's labels, for namespaced kinds) and an
/// object selector (the object's or the old object's labels), in their string forms,
/// select the write.
pub(super) fn selects(
    state: &State,
    write: &Attributes,
    objects: &[&Value],
    namespace_selector: &str,
    object_selector: &str,
) -> bool {
    let Ok(namespaces) = LabelSelector::parse(namespace_selector) else {
        return false;
    };
    let Ok(labels) = LabelSelector::parse(object_selector) else {
        return false;
    };
    if write.namespaced {
        let key = ResourceKey {
            group: String::new(),
            plural: "namespaces".into(),
        };
        let namespace = state.get(&key, "", write.namespace);
        if !namespaces.matches(namespace.as_deref().and_then(meta::labels)) {
            return false;
        }
    }
    objects
        .iter()
        .any(|object| labels.matches(meta::labels(object)))
}

/// Whether one `rules[]` entry covers the write.
pub(super) fn rule_covers(rule: &Value, write: &Attributes) -> bool {
    let listed = |field: &str, value: &str| {
        rule[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|item| item == "*" || item == value)
    };
    let scope = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !write.namespaced,
        "Namespaced" => write.namespaced,
        _ => true,
    };
    scope
        && listed("operations", write.operation)
        && listed("apiGroups", write.group)
        && listed("apiVersions", write.version)
        && listed("resources", write.plural)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets(operation: &'static str, namespaced: bool) -> Attributes<'static> {
        Attributes {
            operation,
            group: "example.com",
            version: "v1",
            plural: "widgets",
            namespaced,
            namespace: if namespaced { "default" } else { "" },
        }
    }

    fn hook_with(webhook: Value) -> Hook {
        hook(&webhook)
    }

    #[test]
    fn rules_match_operations_groups_versions_resources_and_scope() {
        let hook = hook_with(
            json!({"name": "w", "clientConfig": {"url": "https://127.0.0.1:9443/w"},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                "apiVersions": ["*"], "resources": ["widgets"], "scope": "Namespaced"}]}),
        );
        assert!(hook.covers(&widgets("CREATE", true)));
        assert!(!hook.covers(&widgets("UPDATE", true)), "another operation");
        assert!(!hook.covers(&widgets("CREATE", false)), "another scope");
        let gadgets = Attributes {
            plural: "gadgets",
            ..widgets("CREATE", true)
        };
        assert!(!hook.covers(&gadgets), "another resource");
    }

    #[test]
    fn defaults_and_limits_follow_kube() {
        let hook = hook_with(
            json!({"name": "w", "clientConfig": {"url": "https://h:8443/p"},
            "timeoutSeconds": 90}),
        );
        assert!(hook.fail_closed, "failurePolicy defaults to Fail");
        assert_eq!(
            hook.timeout,
            Duration::from_secs(30),
            "timeoutSeconds is at most 30"
        );
        assert!(
            !hook.dry_run_safe,
            "no sideEffects means it is not safe for a dry run"
        );
        assert_eq!(
            (
                hook.endpoint.as_ref().unwrap().connect.as_str(),
                hook.endpoint.as_ref().unwrap().server_name.as_str()
            ),
            ("h:8443", "h")
        );
        let none = hook_with(json!({"name": "w", "clientConfig": {"url": "https://h/p"}}));
        assert_eq!(
            none.timeout,
            Duration::from_secs(10),
            "timeoutSeconds defaults to 10"
        );
        assert_eq!(none.endpoint.as_ref().unwrap().connect, "h:443");
    }

    #[test]
    fn a_service_is_reached_on_loopback_under_its_dns_name() {
        let hook = hook_with(json!({"name": "w", "clientConfig": {"service":
            {"namespace": "hooks", "name": "widgets", "port": 9443, "path": "/mutate"}}}));
        assert_eq!(
            hook.endpoint.as_ref().unwrap().url,
            "https://widgets.hooks.svc:9443/mutate"
        );
        assert_eq!(hook.endpoint.as_ref().unwrap().connect, "127.0.0.1:9443");
        assert_eq!(
            hook.endpoint.as_ref().unwrap().server_name,
            "widgets.hooks.svc"
        );
    }

    #[test]
    fn a_client_config_without_an_endpoint_says_what_is_missing() {
        let missing = hook(&json!({"name": "w"})).endpoint.unwrap_err();
        assert_eq!(
            missing,
            "invalid clientConfig: a url, or a service with a name and a namespace, is needed"
        );
        let plain = hook(&json!({"name": "w", "clientConfig": {"url": "http://h/p"}}));
        assert_eq!(
            plain.endpoint.unwrap_err(),
            "invalid clientConfig.url \"http://h/p\": an https URL with a host is needed"
        );
    }
}
