//! A persistent server reopened on its directory serves what it stored before.

mod support;

use dynrec_apiserver::ApiServer;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use support::*;

#[tokio::test]
async fn a_reopened_server_serves_its_objects_and_custom_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let before_restart = {
        let server = ApiServer::builder().build_persistent(dir.path()).unwrap();
        let client = server.client();
        install_widget_crd(&client).await;
        let widgets = widgets(&client, "default");
        let held = object(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "held", "finalizers": ["example.com/x"]}, "spec": {"size": 2}}));
        create(&widgets, &held).await;
        widgets
            .delete("held", &DeleteParams::default())
            .await
            .unwrap();
        configmaps(&client, "default")
            .create(
                &PostParams::default(),
                &configmap("cm", json!({}), json!({"k": "v"})),
            )
            .await
            .unwrap();
        let second = ApiServer::builder()
            .build_persistent(dir.path())
            .err()
            .expect("one server per directory");
        assert!(second.to_string().contains("already open"), "{second}");
        server.resource_version()
    };

    // The client's background task lets go of the first server shortly after it is dropped.
    let server = reopen(dir.path()).await;
    assert_eq!(server.resource_version(), before_restart);
    let client = server.client();
    let widgets = widgets(&client, "default");
    let held = widgets.get("held").await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "a terminating object is still terminating"
    );
    assert_eq!(held.data["spec"]["size"], 2);
    assert_eq!(
        configmaps(&client, "default").get("cm").await.unwrap().data["data"]["k"],
        "v"
    );
    let namespaces: Vec<_> = namespaces(&client)
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(
        namespaces.len(),
        4,
        "the default namespaces are not created twice"
    );
}

async fn reopen(dir: &std::path::Path) -> ApiServer {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match ApiServer::builder().build_persistent(dir) {
            Ok(server) => return server,
            Err(err)
                if tokio::time::Instant::now() < deadline
                    && err.to_string().contains("already open") =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            Err(err) => panic!("cannot reopen: {err}"),
        }
    }
}

#[tokio::test]
async fn a_directory_that_is_not_a_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dynrec.redb"), b"not a database").unwrap();
    let err = ApiServer::builder()
        .build_persistent(dir.path())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("durable storage failed"), "{err}");
}
