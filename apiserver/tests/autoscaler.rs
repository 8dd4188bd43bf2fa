//! The HorizontalPodAutoscaler controller the server runs as kube-controller-manager does,
//! with no metrics API: targets kept within [minReplicas, maxReplicas] through their scale
//! subresource, and the HPA's status and conditions in kube's words.

mod support;

use serde_json::{Value, json};
use support::*;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const HPAS: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn deployment(name: &str, replicas: i64) -> String {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
    .to_string()
}

fn hpa(name: &str, target: Value, min: i64, max: i64) -> String {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": target, "minReplicas": min, "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]}})
    .to_string()
}

fn deployment_ref(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": name})
}

async fn create(client: &kube::Client, uri: &str, body: &str) {
    let (code, created) = post_json(client, uri, body).await;
    assert_eq!(code, 201, "{created}");
}

async fn get(client: &kube::Client, uri: &str) -> Value {
    let (code, object) = get_json(client, uri).await;
    assert_eq!(code, 200, "{object}");
    object
}

/// An HPA's conditions as (type, status, reason).
fn conditions(hpa: &Value) -> Vec<(String, String, String)> {
    hpa["status"]["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let text = |field: &str| c[field].as_str().unwrap_or_default().to_string();
            (text("type"), text("status"), text("reason"))
        })
        .collect()
}

fn condition(kind: &str, status: &str, reason: &str) -> (String, String, String) {
    (kind.into(), status.into(), reason.into())
}

#[tokio::test]
async fn min_replicas_raise_a_deployment_and_the_status_says_so() {
    let (_server, client) = server();
    create(&client, DEPLOYMENTS, &deployment("web", 1)).await;
    create(&client, HPAS, &hpa("web", deployment_ref("web"), 2, 5)).await;

    let web = get(&client, &format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(web["metadata"]["generation"], 2);
    let managers: Vec<&Value> = web["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| &entry["manager"])
        .collect();
    assert!(
        managers.contains(&&json!("kube-controller-manager")),
        "{managers:?}"
    );

    let autoscaler = get(&client, &format!("{HPAS}/web")).await;
    let status = &autoscaler["status"];
    assert_eq!(status["observedGeneration"], 1, "{status}");
    assert_eq!(status["currentReplicas"], 2, "{status}");
    assert_eq!(status["desiredReplicas"], 2, "{status}");
    assert!(status["lastScaleTime"].is_string(), "{status}");
    assert_eq!(status["currentMetrics"], json!([{"type": ""}]));
    assert_eq!(
        conditions(&autoscaler),
        [
            condition("AbleToScale", "True", "SucceededGetScale"),
            condition("ScalingActive", "False", "FailedGetResourceMetric"),
        ]
    );
    assert_eq!(
        status["conditions"][1]["message"],
        "the HPA was unable to compute the replica count: failed to get cpu utilization: \
         unable to get metrics for resource cpu: unable to fetch metrics from resource metrics \
         API: the server could not find the requested resource (get pods.metrics.k8s.io)"
    );
}

#[tokio::test]
async fn max_replicas_lower_a_deployment_whenever_it_goes_above() {
    let (_server, client) = server();
    create(&client, DEPLOYMENTS, &deployment("web", 7)).await;
    create(&client, HPAS, &hpa("web", deployment_ref("web"), 1, 3)).await;
    let replicas = |object: Value| object["spec"]["replicas"].clone();
    let web = format!("{DEPLOYMENTS}/web");
    assert_eq!(replicas(get(&client, &web).await), 3);

    // Scaled up by hand, the Deployment comes back to the maximum.
    let (code, scale) = merge_patch(
        &client,
        &format!("{web}/scale"),
        r#"{"spec":{"replicas":9}}"#,
    )
    .await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(replicas(get(&client, &web).await), 3);

    // Within the new range, nothing changes without metrics.
    let (code, _) = merge_patch(
        &client,
        &format!("{HPAS}/web"),
        r#"{"spec":{"maxReplicas":6}}"#,
    )
    .await;
    assert_eq!(code, 200);
    let deployment = get(&client, &web).await;
    assert_eq!(replicas(deployment.clone()), 3);
    let autoscaler = get(&client, &format!("{HPAS}/web")).await;
    assert_eq!(autoscaler["status"]["observedGeneration"], 2);
    assert_eq!(autoscaler["status"]["currentReplicas"], 3);
}

#[tokio::test]
async fn a_deployment_at_zero_replicas_is_left_alone() {
    let (_server, client) = server();
    create(&client, DEPLOYMENTS, &deployment("idle", 0)).await;
    create(&client, HPAS, &hpa("idle", deployment_ref("idle"), 2, 5)).await;
    let idle = get(&client, &format!("{DEPLOYMENTS}/idle")).await;
    assert_eq!(idle["spec"]["replicas"], 0);
    assert_eq!(idle["metadata"]["generation"], 1);
    let autoscaler = get(&client, &format!("{HPAS}/idle")).await;
    assert_eq!(
        conditions(&autoscaler),
        [
            condition("AbleToScale", "True", "SucceededGetScale"),
            condition("ScalingActive", "False", "ScalingDisabled"),
        ]
    );
    assert_eq!(autoscaler["status"]["desiredReplicas"], 0);
    assert!(autoscaler["status"].get("lastScaleTime").is_none());
}

#[tokio::test]
async fn a_missing_target_is_a_condition_until_it_appears() {
    let (_server, client) = server();
    create(&client, HPAS, &hpa("web", deployment_ref("web"), 2, 5)).await;
    let autoscaler = get(&client, &format!("{HPAS}/web")).await;
    assert_eq!(
        conditions(&autoscaler),
        [condition("AbleToScale", "False", "FailedGetScale")]
    );
    assert_eq!(
        autoscaler["status"]["conditions"][0]["message"],
        "the HPA controller was unable to get the target's current scale: \
         deployments/scale.apps \"web\" not found"
    );
    assert_eq!(autoscaler["status"]["desiredReplicas"], 0);

    create(&client, DEPLOYMENTS, &deployment("web", 1)).await;
    let web = get(&client, &format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(web["spec"]["replicas"], 2);
    let autoscaler = get(&client, &format!("{HPAS}/web")).await;
    assert_eq!(
        conditions(&autoscaler)[0],
        condition("AbleToScale", "True", "SucceededGetScale")
    );

    // Deleted again, the target is missing again.
    let (code, _) = raw(
        &client,
        "DELETE",
        &format!("{DEPLOYMENTS}/web"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
    let autoscaler = get(&client, &format!("{HPAS}/web")).await;
    assert_eq!(
        conditions(&autoscaler)[0],
        condition("AbleToScale", "False", "FailedGetScale")
    );
}

#[tokio::test]
async fn a_target_of_an_unknown_kind_or_without_scale_cannot_be_scaled() {
    let (_server, client) = server();
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g"});
    create(&client, HPAS, &hpa("unknown", unknown, 1, 2)).await;
    let autoscaler = get(&client, &format!("{HPAS}/unknown")).await;
    assert_eq!(
        autoscaler["status"]["conditions"][0]["message"],
        "the HPA controller was unable to get the target's current scale: \
         no matches for kind \"Gadget\" in group \"example.com\""
    );
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "settings"});
    create(&client, HPAS, &hpa("config", config, 1, 2)).await;
    let autoscaler = get(&client, &format!("{HPAS}/config")).await;
    assert_eq!(
        autoscaler["status"]["conditions"][0]["message"],
        "the HPA controller was unable to get the target's current scale: \
         the server could not find the requested resource"
    );
}

#[tokio::test]
async fn custom_resources_scale_through_their_scale_subresource() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["subresources"] = json!({"scale": {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}});
    let (_server, client) = server_with_crd(crd).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 1}});
    create(&client, widgets, &widget.to_string()).await;
    let target = json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"});
    create(&client, HPAS, &hpa("w", target, 3, 4)).await;
    let widget = get(&client, &format!("{widgets}/w")).await;
    assert_eq!(widget["spec"]["replicas"], 3);
    // The Scale has no selector: kube cannot count the pods, and says so.
    let autoscaler = get(&client, &format!("{HPAS}/w")).await;
    assert_eq!(
        conditions(&autoscaler)[1],
        condition("ScalingActive", "False", "InvalidSelector")
    );
}

#[tokio::test]
async fn a_v1_hpa_scales_and_gets_a_v1_status() {
    let (_server, client) = server();
    create(&client, DEPLOYMENTS, &deployment("web", 1)).await;
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": deployment_ref("web"), "minReplicas": 2, "maxReplicas": 4,
            "targetCPUUtilizationPercentage": 70}});
    let v1_hpas = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    create(&client, v1_hpas, &v1.to_string()).await;
    let web = get(&client, &format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(web["spec"]["replicas"], 2);
    let autoscaler = get(&client, &format!("{v1_hpas}/web")).await;
    let status = &autoscaler["status"];
    assert_eq!(status["currentReplicas"], 2, "{status}");
    assert_eq!(status["desiredReplicas"], 2, "{status}");
    assert!(status.get("conditions").is_none(), "{status}");
}

#[tokio::test]
async fn crossed_or_missing_bounds_and_targets_are_refused_as_kube_refuses_them() {
    let (_server, client) = server();
    let (code, status) = post_json(&client, HPAS, &hpa("web", deployment_ref("web"), 5, 2)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "HorizontalPodAutoscaler.autoscaling \"web\" is invalid: spec.maxReplicas: Invalid \
         value: 2: must be greater than or equal to `minReplicas`"
    );
    let nameless = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
    let (code, status) = post_json(&client, HPAS, &hpa("web", nameless, 0, 2)).await;
    assert_eq!(code, 422, "{status}");
    let fields: Vec<&Value> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cause| &cause["field"])
        .collect();
    assert_eq!(
        fields,
        [
            &json!("spec.minReplicas"),
            &json!("spec.scaleTargetRef.name")
        ]
    );
}
