//! Fault injection as a client sees it.

mod support;

use std::time::{Duration, Instant};

use dynrec_apiserver::{ApiServer, Fault, FaultMatch};
use kube::api::PostParams;
use serde_json::json;
use support::*;

fn update_configmaps() -> FaultMatch {
    FaultMatch {
        verb: Some("update".into()),
        kind: Some("ConfigMap".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn an_injected_500_is_seen_once_then_the_call_succeeds() {
    let (server, client) = server();
    let cms = configmaps(&client, "default");
    let created = create_configmap(&cms, "a").await;
    server.add_fault(Fault::fail(update_configmaps(), 500, "InternalError").times(1));
    let status = status_of(cms.replace("a", &PostParams::default(), &created).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    let mut changed = created.clone();
    changed.data["data"] = json!({"k": "v"});
    cms.replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    // Other verbs were never affected.
    assert_eq!(cms.get("a").await.unwrap().data["data"]["k"], "v");
}

#[tokio::test]
async fn an_injected_stall_runs_into_the_clients_timeout() {
    let server = ApiServer::new();
    let serving = server.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut config = kube::Config::new(serving.url().parse().unwrap());
    config.read_timeout = Some(Duration::from_millis(300));
    let client = kube::Client::try_from(config).unwrap();
    let cms = configmaps(&client, "default");
    server.add_fault(
        Fault::stall(
            FaultMatch {
                verb: Some("get".into()),
                ..Default::default()
            },
            Duration::from_secs(3),
        )
        .times(1),
    );
    let started = Instant::now();
    let result = cms.get_opt("a").await;
    assert!(result.is_err(), "the client gives up: {result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "it gave up at its own timeout: {:?}",
        started.elapsed()
    );
    assert!(
        cms.get_opt("a").await.unwrap().is_none(),
        "the next call is served"
    );
    serving.shutdown().await;
}

#[tokio::test]
async fn a_fault_can_be_removed() {
    let (server, client) = server();
    let cms = configmaps(&client, "default");
    let id = server.add_fault(Fault::fail(
        FaultMatch::default(),
        503,
        "ServiceUnavailable",
    ));
    assert_eq!(status_of(cms.get("a").await).code, 503);
    assert!(server.remove_fault(id));
    assert_eq!(status_of(cms.get("a").await).code, 404);
}
