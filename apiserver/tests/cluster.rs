//! What every cluster has and how it stores built-in kinds: the standing objects, the
//! defaults kube-apiserver applies, and metadata.generation only where kube keeps it.

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

#[tokio::test]
async fn the_kubernetes_service_points_at_the_server() {
    let (_server, client) = server();
    let service = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("default/kubernetes exists");
    let spec = service.spec.expect("a spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    let port = &spec.ports.expect("ports")[0];
    assert_eq!((port.name.as_deref(), port.port), (Some("https"), 443));
    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("its Endpoints exist");
    let subset = &endpoints.subsets.expect("subsets")[0];
    assert_eq!(
        subset.addresses.as_ref().expect("addresses")[0].ip,
        "127.0.0.1"
    );
    assert_eq!(subset.ports.as_ref().expect("ports")[0].port, 6443);
    let slice = Api::<EndpointSlice>::namespaced(client, "default")
        .get("kubernetes")
        .await
        .expect("its EndpointSlice exists");
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        slice.endpoints.expect("endpoints")[0].addresses,
        vec!["127.0.0.1"]
    );
}

#[tokio::test]
async fn served_over_http_the_kubernetes_endpoints_name_the_listening_port() {
    let server = dynrec_apiserver::ApiServer::new();
    let serving = server
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .expect("the server listens");
    let endpoints = Api::<Endpoints>::namespaced(server.client(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let port = endpoints.subsets.unwrap()[0].ports.as_ref().unwrap()[0].port;
    assert_eq!(port, i32::from(serving.address().port()));
    serving.shutdown().await;
}

#[tokio::test]
async fn a_new_namespace_gets_a_default_service_account_and_the_root_ca() {
    let (_server, client) = server();
    create_namespace(&client, "team").await;
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), "team");
    assert!(accounts.get_opt("default").await.unwrap().is_some());
    let root_ca = Api::<ConfigMap>::namespaced(client.clone(), "team")
        .get("kube-root-ca.crt")
        .await
        .expect("kube-root-ca.crt exists");
    let pem = root_ca
        .data
        .unwrap_or_default()
        .remove("ca.crt")
        .unwrap_or_default();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let namespace = Api::<Namespace>::all(client).get("team").await.unwrap();
    assert_eq!(
        namespace.metadata.labels.unwrap_or_default()["kubernetes.io/metadata.name"],
        "team"
    );
}

#[tokio::test]
async fn default_cluster_roles_and_bindings_exist() {
    let (_server, client) = server();
    let roles = Api::<ClusterRole>::all(client.clone());
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        assert!(
            roles.get_opt(name).await.unwrap().is_some(),
            "{name} exists"
        );
    }
    let admin = Api::<ClusterRoleBinding>::all(client)
        .get("cluster-admin")
        .await
        .unwrap();
    assert_eq!(admin.role_ref.name, "cluster-admin");
    assert_eq!(admin.subjects.unwrap()[0].name, "system:masters");
}

#[tokio::test]
async fn a_pod_is_stored_as_a_cluster_stores_it() {
    let (_server, client) = server();
    let pods = Api::<Pod>::namespaced(client, "default");
    let pod: Pod = typed(json!({"metadata": {"name": "web"}, "spec": {"containers": [
        {"name": "latest", "image": "nginx"},
        {"name": "pinned", "image": "nginx:1.27", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
    ]}}));
    let created = create(&pods, &pod).await;
    assert_eq!(
        created.metadata.generation, None,
        "1.32 pods have no generation"
    );
    let status = created.status.expect("a status");
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(status.qos_class.as_deref(), Some("Burstable"));
    let spec = created.spec.expect("a spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(spec.enable_service_links, Some(true));
    assert_eq!(spec.priority, Some(0));
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    assert!(spec.security_context.is_some());
    let tolerations = spec.tolerations.unwrap_or_default();
    let keys: Vec<_> = tolerations
        .iter()
        .filter_map(|t| t.key.as_deref())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable"
        ]
    );
    assert_eq!(tolerations[0].toleration_seconds, Some(300));
    let policies: Vec<_> = spec
        .containers
        .iter()
        .map(|c| c.image_pull_policy.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(policies, ["Always", "IfNotPresent"]);
    assert_eq!(
        spec.containers[0].termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(
        spec.containers[0].termination_message_policy.as_deref(),
        Some("File")
    );
}

fn deployment(replicas: Option<i32>) -> Deployment {
    let mut spec = json!({"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}});
    if let Some(replicas) = replicas {
        spec["replicas"] = json!(replicas);
    }
    typed(json!({"metadata": {"name": "web"}, "spec": spec}))
}

#[tokio::test]
async fn a_deployment_gets_the_defaults_controllers_read_and_a_generation() {
    let (_server, client) = server();
    let deployments = Api::<Deployment>::namespaced(client, "default");
    let created = create(&deployments, &deployment(None)).await;
    assert_eq!(created.metadata.generation, Some(1));
    let spec = created.spec;
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let strategy = spec.strategy.expect("a strategy");
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let template = spec.template.spec.expect("a pod template spec");
    assert_eq!(template.restart_policy.as_deref(), Some("Always"));
    assert_eq!(template.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(template.termination_grace_period_seconds, Some(30));
    assert_eq!(
        template.scheduler_name.as_deref(),
        Some("default-scheduler")
    );
    assert_eq!(
        template.service_account_name, None,
        "admission defaults pods, not templates"
    );

    let scaled = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
    assert_eq!(scaled.spec.replicas, Some(0), "an explicit 0 stays 0");
}

#[tokio::test]
async fn a_service_gets_a_type_session_affinity_and_a_cluster_ip() {
    let (_server, client) = server();
    let services = Api::<Service>::namespaced(client, "default");
    let service: Service = typed(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}));
    let created = create(&services, &service).await;
    assert_eq!(created.metadata.generation, None);
    let spec = created.spec.expect("a spec");
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    let ip = spec.cluster_ip.expect("a cluster IP");
    let address: std::net::Ipv4Addr = ip.parse().expect("an IPv4 address");
    let service_cidr = u32::from(std::net::Ipv4Addr::new(10, 96, 0, 0));
    assert_eq!(
        u32::from(address) >> 20,
        service_cidr >> 20,
        "{ip} is in 10.96.0.0/12"
    );
    assert_ne!(ip, "10.96.0.1", "the kubernetes Service's address is taken");
    assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80))
    );
    // An update that leaves the cluster IP out keeps it.
    let mut changed: Service = typed(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web2"}, "ports": [{"port": 80}]}}));
    changed.metadata.resource_version = created.metadata.resource_version;
    let updated = services
        .replace("web", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.spec.unwrap().cluster_ip, Some(ip));
}

#[tokio::test]
async fn a_job_gets_completions_parallelism_and_a_backoff_limit() {
    let (_server, client) = server();
    let jobs = Api::<Job>::namespaced(client, "default");
    let job: Job = typed(
        json!({"metadata": {"name": "once"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    let created = create(&jobs, &job).await;
    let spec = created.spec.expect("a spec");
    assert_eq!(
        (spec.completions, spec.parallelism, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
    assert_eq!(
        spec.template.spec.unwrap().restart_policy.as_deref(),
        Some("Never")
    );
    assert_eq!(created.metadata.generation, Some(1));
}

#[tokio::test]
async fn probes_and_volume_modes_get_kube_s_defaults() {
    let (_server, client) = server();
    let pods = Api::<Pod>::namespaced(client, "default");
    let pod: Pod = typed(json!({"metadata": {"name": "probed"}, "spec": {
        "volumes": [{"name": "settings", "configMap": {"name": "settings"}}],
        "containers": [{"name": "c", "image": "nginx:1.27",
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}}}]}}));
    let created = create(&pods, &pod).await;
    let spec = created.spec.expect("a spec");
    let probe = spec.containers[0].readiness_probe.clone().expect("a probe");
    assert_eq!(
        (
            probe.timeout_seconds,
            probe.period_seconds,
            probe.success_threshold,
            probe.failure_threshold
        ),
        (Some(1), Some(10), Some(1), Some(3))
    );
    let volume = &spec.volumes.expect("volumes")[0];
    assert_eq!(
        volume.config_map.as_ref().and_then(|c| c.default_mode),
        Some(420)
    );
}

#[tokio::test]
async fn storage_classes_and_network_policies_get_kube_s_defaults() {
    let (_server, client) = server();
    let classes = cluster_api(
        &client,
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
    );
    let class = object(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "fast"}, "provisioner": "example.com/disk"}),
    );
    let created = create(&classes, &class).await;
    assert_eq!(created.data["reclaimPolicy"], "Delete");
    assert_eq!(created.data["volumeBindingMode"], "Immediate");
    let policies = api(
        &client,
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        "default",
    );
    let policy = object(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "deny"}, "spec": {"podSelector": {},
            "egress": [{"ports": [{"port": 53}]}]}}),
    );
    let created = create(&policies, &policy).await;
    assert_eq!(
        created.data["spec"]["policyTypes"],
        json!(["Ingress", "Egress"])
    );
    assert_eq!(
        created.data["spec"]["egress"][0]["ports"][0]["protocol"],
        "TCP"
    );
    assert_eq!(created.metadata.generation, Some(1));
}

#[tokio::test]
async fn a_namespace_held_by_a_spec_finalizer_goes_once_finalize_removes_it() {
    let (_server, client) = server();
    create_namespace(&client, "held").await;
    let namespaces = Api::<Namespace>::all(client.clone());
    let mut namespace = namespaces.get("held").await.unwrap();
    let finalizers = vec!["kubernetes".to_string(), "example.com/cleanup".to_string()];
    namespace.spec = Some(typed(json!({"finalizers": finalizers})));
    let finalized: Namespace = namespaces
        .replace_subresource("finalize", "held", &PostParams::default(), &namespace)
        .await
        .unwrap();
    assert_eq!(
        finalized.spec.and_then(|s| s.finalizers),
        Some(finalizers),
        "finalize changes spec.finalizers"
    );
    namespaces
        .delete("held", &Default::default())
        .await
        .unwrap();
    let terminating = namespaces.get("held").await.unwrap();
    assert_eq!(
        terminating.status.clone().and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    assert_eq!(
        terminating.spec.clone().and_then(|s| s.finalizers),
        Some(vec!["example.com/cleanup".to_string()]),
        "the server's own finalizer is done; the other holds the namespace"
    );
    let mut released = terminating;
    released.spec = Some(typed(json!({"finalizers": []})));
    namespaces
        .replace_subresource::<Namespace>("finalize", "held", &PostParams::default(), &released)
        .await
        .unwrap();
    assert!(namespaces.get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn served_over_https_the_root_ca_config_maps_carry_the_serving_certificate() {
    let server = dynrec_apiserver::ApiServer::new();
    let identity = dynrec_apiserver::TlsIdentity::self_signed(&[]).unwrap();
    let serving = server
        .serve_tls("127.0.0.1:0".parse().unwrap(), &identity)
        .await
        .expect("the server listens");
    let client = server.client();
    create_namespace(&client, "later").await;
    for namespace in ["default", "later"] {
        let root_ca = Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .get("kube-root-ca.crt")
            .await
            .unwrap();
        assert_eq!(
            root_ca
                .data
                .unwrap_or_default()
                .get("ca.crt")
                .map(String::as_str),
            Some(identity.certificate_pem()),
            "{namespace}"
        );
    }
    serving.shutdown().await;
}

#[tokio::test]
async fn every_built_in_group_version_has_an_available_local_api_service() {
    let (_server, client) = server();
    let services = cluster_api(
        &client,
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
    );
    for name in [
        "v1.",
        "v1.apps",
        "v2.autoscaling",
        "v1.rbac.authorization.k8s.io",
    ] {
        let service = services
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let condition = &service.data["status"]["conditions"][0];
        assert_eq!(
            (
                condition["type"].as_str(),
                condition["status"].as_str(),
                condition["reason"].as_str()
            ),
            (Some("Available"), Some("True"), Some("Local")),
            "{name}"
        );
    }
}
