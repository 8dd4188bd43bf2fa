//! The objects every cluster has: the default namespaces, the `default/kubernetes` Service
//! with its Endpoints and EndpointSlice, the default ClusterRoles and their bindings, a
//! `Local` APIService per built-in group/version, and in every namespace a `default`
//! ServiceAccount and the `kube-root-ca.crt` ConfigMap.

use serde_json::{Value, json};

use super::services::KUBERNETES_SERVICE_IP;
use super::state::State;
use super::write::{Target, WriteOptions};
use crate::meta;

/// The address the `kubernetes` Endpoints name when the server is reached in-process (no
/// socket): kube-apiserver's default secure port on loopback.
pub const IN_PROCESS_ADDRESS: (&str, u16) = ("127.0.0.1", 6443);

/// Labels and annotations of kube-apiserver's bootstrap RBAC objects.
fn bootstrap_metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn url_rule(urls: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": ["get"]})
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// The label that aggregates a role into `admin`, `edit` or `view`.
fn aggregate_to(role: &str) -> String {
    format!("rbac.authorization.k8s.io/aggregate-to-{role}")
}

/// A bootstrap ClusterRole: its name, the labels it carries beside kube's bootstrap
/// label, the roles it is aggregated from (by their `aggregate-to-` label) and its rules.
struct BootstrapRole {
    name: &'static str,
    aggregated_into: Option<&'static str>,
    aggregates: Option<&'static str>,
    rules: Vec<Value>,
}

impl BootstrapRole {
    fn plain(name: &'static str, rules: Vec<Value>) -> Self {
        BootstrapRole {
            name,
            aggregated_into: None,
            aggregates: None,
            rules,
        }
    }

    /// The ClusterRole object.
    fn object(&self) -> Value {
        let mut metadata = bootstrap_metadata(self.name);
        if let Some(into) = self.aggregated_into {
            metadata["labels"][aggregate_to(into)] = json!("true");
        }
        let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": metadata, "rules": self.rules});
        if let Some(from) = self.aggregates {
            role["aggregationRule"] = json!({"clusterRoleSelectors":
                [{"matchLabels": {aggregate_to(from): "true"}}]});
        }
        role
    }
}

/// The default ClusterRoles. As in kube, `admin`, `edit` and `view` are aggregated: their
/// rules come from the roles labelled `rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}`
/// (`system:aggregate-to-*`, and any a user adds), `view` aggregates into `edit` and `edit`
/// into `admin`.
fn cluster_roles() -> Vec<BootstrapRole> {
    let workload_groups = &[
        "",
        "apps",
        "batch",
        "autoscaling",
        "networking.k8s.io",
        "policy",
    ];
    let aggregated = |name, into, from| BootstrapRole {
        name,
        aggregated_into: into,
        aggregates: Some(from),
        rules: Vec::new(),
    };
    let aggregating = |name, into, rules| BootstrapRole {
        name,
        aggregated_into: Some(into),
        aggregates: None,
        rules,
    };
    vec![
        BootstrapRole::plain(
            "cluster-admin",
            vec![
                rule(&["*"], &["*"], &["*"]),
                json!({"nonResourceURLs": ["*"], "verbs": ["*"]}),
            ],
        ),
        aggregated("admin", None, "admin"),
        aggregated("edit", Some("admin"), "edit"),
        aggregated("view", Some("edit"), "view"),
        aggregating(
            "system:aggregate-to-admin",
            "admin",
            vec![
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    &[READ, WRITE].concat(),
                ),
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
            ],
        ),
        aggregating(
            "system:aggregate-to-edit",
            "edit",
            vec![rule(workload_groups, &["*"], WRITE)],
        ),
        aggregating(
            "system:aggregate-to-view",
            "view",
            vec![rule(workload_groups, &["*"], READ)],
        ),
        BootstrapRole::plain(
            "system:discovery",
            vec![url_rule(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ])],
        ),
        BootstrapRole::plain(
            "system:basic-user",
            vec![
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
            ],
        ),
        BootstrapRole::plain(
            "system:public-info-viewer",
            vec![url_rule(&[
                "/healthz",
                "/livez",
                "/readyz",
                "/version",
                "/version/",
            ])],
        ),
    ]
}

/// The default ClusterRoleBindings, as (name, role, subject groups).
const CLUSTER_ROLE_BINDINGS: &[(&str, &str, &[&str])] = &[
    ("cluster-admin", "cluster-admin", &["system:masters"]),
    (
        "system:discovery",
        "system:discovery",
        &["system:authenticated"],
    ),
    (
        "system:basic-user",
        "system:basic-user",
        &["system:authenticated"],
    ),
    (
        "system:public-info-viewer",
        "system:public-info-viewer",
        &["system:authenticated", "system:unauthenticated"],
    ),
];

impl State {
    /// Creates the namespaces every cluster has, when missing.
    pub(super) fn create_default_namespaces(&mut self) {
        let Some(info) = self.registry().get("", "v1", "namespaces") else {
            return;
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if self.namespace(ns).is_some() {
                continue;
            }
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if let Err(err) = self.create(&info, None, body, &WriteOptions::default()) {
                tracing::error!(%err, namespace = ns, "cannot create a default namespace");
            }
        }
    }

    /// Creates whatever of a cluster's standing objects is missing.
    pub(super) fn create_cluster_objects(&mut self) {
        for role in cluster_roles() {
            self.ensure(
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                role.object(),
            );
        }
        for (name, role, groups) in CLUSTER_ROLE_BINDINGS {
            let subjects: Vec<Value> = groups
                .iter()
                .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
                .collect();
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding", "metadata": bootstrap_metadata(name),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": subjects});
            self.ensure(
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "",
                binding,
            );
        }
        self.create_local_api_services();
        let service = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": IN_PROCESS_ADDRESS.1}]}});
        self.ensure("", "services", "default", service);
        self.set_api_endpoint(IN_PROCESS_ADDRESS.0, IN_PROCESS_ADDRESS.1, false);
    }

    /// One `Local` APIService per built-in group/version (`v1.`, `v1.apps`, ...), Available,
    /// as kube-aggregator registers them at start-up.
    fn create_local_api_services(&mut self) {
        let mut group_versions: Vec<(&str, &str)> = crate::catalog::BUILTIN_KINDS
            .iter()
            .map(|k| (k.group, k.version))
            .collect();
        group_versions.sort();
        group_versions.dedup();
        let Some(info) = self
            .registry()
            .get("apiregistration.k8s.io", "v1", "apiservices")
        else {
            return;
        };
        for (group, version) in group_versions {
            let name = format!("{version}.{group}");
            if self.get(&info.key(), "", &name).is_some() {
                continue;
            }
            let service = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name,
                    "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
                "spec": {"group": group, "version": version,
                    "groupPriorityMinimum": 1000, "versionPriority": 15}});
            let options = WriteOptions::default();
            let created = match self.create(&info, None, service, &options) {
                Ok(created) => created,
                Err(err) => {
                    tracing::error!(%err, name, "cannot create a local APIService");
                    continue;
                }
            };
            let mut available = (*created).clone();
            available["status"] = json!({"conditions": [{"type": "Available", "status": "True",
                "lastTransitionTime": meta::now_rfc3339(), "reason": "Local",
                "message": "Local APIServices are always available"}]});
            if let Err(err) = self.replace(&info, &created, available, Target::Status, &options) {
                tracing::error!(%err, name, "cannot mark a local APIService available");
            }
        }
    }

    /// Points the `kubernetes` Endpoints and EndpointSlice at `ip:port`; with `replace`,
    /// over what they named before.
    pub fn set_api_endpoint(&mut self, ip: &str, port: u16, replace: bool) {
        let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]});
        let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]});
        for (group, plural, object) in [
            ("", "endpoints", endpoints),
            ("discovery.k8s.io", "endpointslices", slice),
        ] {
            if replace {
                self.put(group, plural, "default", object);
            } else {
                self.ensure(group, plural, "default", object);
            }
        }
    }

    /// A new namespace gets its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap
    /// (kube-controller-manager's serviceaccount and root-ca-cert-publisher controllers).
    pub(super) fn populate_namespace(&mut self, namespace: &Value) {
        if meta::is_deleting(namespace) {
            return;
        }
        let ns = meta::name(namespace).to_string();
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}});
        self.ensure("", "serviceaccounts", &ns, account);
        let root_ca = self.root_ca_config_map(&ns);
        self.ensure("", "configmaps", &ns, root_ca);
    }

    /// Makes every namespace's `kube-root-ca.crt` carry the certificate the server serves with.
    pub fn set_root_ca(&mut self, certificate_pem: &str) {
        self.root_ca = Some(certificate_pem.to_string());
        let namespaces: Vec<String> = self
            .objects
            .list(&crate::resources::namespace_resource_key(), None, None)
            .filter(|ns| !meta::is_deleting(ns))
            .map(|ns| meta::name(&ns).to_string())
            .collect();
        for ns in namespaces {
            let root_ca = self.root_ca_config_map(&ns);
            self.put("", "configmaps", &ns, root_ca);
        }
    }

    /// The `kube-root-ca.crt` ConfigMap of a namespace.
    fn root_ca_config_map(&self, namespace: &str) -> Value {
        let pem = self
            .root_ca
            .as_deref()
            .unwrap_or_else(|| crate::tls::root_ca_pem());
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": namespace,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
            "data": {"ca.crt": pem}})
    }

    /// Creates an object of a built-in kind unless one of that name exists.
    fn ensure(&mut self, group: &str, plural: &str, namespace: &str, object: Value) {
        let Some(info) = self.registry().get(group, "v1", plural) else {
            return;
        };
        if self
            .get(&info.key(), namespace, meta::name(&object))
            .is_some()
        {
            return;
        }
        let url_namespace = info.namespaced.then_some(namespace);
        if let Err(err) = self.create(&info, url_namespace, object, &WriteOptions::default()) {
            tracing::error!(%err, plural, namespace, "cannot create a standing object");
        }
    }

    /// Creates or replaces an object of a built-in kind.
    fn put(&mut self, group: &str, plural: &str, namespace: &str, object: Value) {
        let Some(info) = self.registry().get(group, "v1", plural) else {
            return;
        };
        let name = meta::name(&object).to_string();
        let result = match self.get(&info.key(), namespace, &name) {
            Some(old) => self
                .replace(&info, &old, object, Target::Main, &WriteOptions::default())
                .map(drop),
            None => self
                .create(&info, Some(namespace), object, &WriteOptions::default())
                .map(drop),
        };
        if let Err(err) = result {
            tracing::error!(%err, plural, namespace, "cannot write a standing object");
        }
    }
}
