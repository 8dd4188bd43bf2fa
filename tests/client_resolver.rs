//! The resolver against the embedded server: built-ins, CRDs coming and going.

mod client_common;

use std::time::Duration;

use client_common::{crd_gvk, eventually, start};
use dynrec::testing::crd;
use dynrec::{
    client::{Error, ResolveError},
    object::{Gvk, ObjectKey},
};
use kube::api::DeleteParams;

#[tokio::test]
async fn resolves_built_in_kinds() {
    let (_server, client) = start();
    let deployment = client
        .resolve(&"apps/v1/Deployment".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(deployment.resource.plural, "deployments");
    assert!(deployment.namespaced);
    assert!(deployment.has_subresource("status"));
    let namespace = client
        .resolve(&"v1/Namespace".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(namespace.resource.plural, "namespaces");
    assert!(!namespace.namespaced);
    let config_map = client
        .resolve(&Gvk::new("", "v1", "ConfigMap"))
        .await
        .unwrap();
    assert_eq!(config_map.resource.api_version, "v1");
}

#[tokio::test]
async fn unknown_kind_names_the_gvk_and_what_the_group_serves() {
    let (_server, client) = start();
    let err = client
        .resolve(&"apps/v1/Deploymnet".parse().unwrap())
        .await
        .unwrap_err();
    let Error::Resolve(ResolveError::UnknownKind { gvk, available }) = &err else {
        panic!("expected an unknown kind, got {err}");
    };
    assert_eq!(gvk.kind, "Deploymnet");
    assert!(
        available.contains(&"v1/Deployment".to_string()),
        "{available:?}"
    );
    assert!(
        err.to_string()
            .starts_with("unknown kind apps/v1/Deploymnet: group \"apps\" serves "),
        "{err}"
    );

    let err = client
        .resolve(&"nope.example.com/v1/Thing".parse().unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown kind nope.example.com/v1/Thing: the API server serves no group \"nope.example.com\""
    );
}

#[tokio::test]
async fn crd_created_after_start_resolves_and_deleting_it_stops_its_cache() {
    let (server, client) = start();
    let gvk = crd_gvk("stable.example.com", "Widget");
    assert!(client.resolve(&gvk).await.is_err());

    let waiter = {
        let client = client.clone();
        let gvk = gvk.clone();
        tokio::spawn(async move { client.resolver().wait_for(&gvk).await })
    };
    client
        .create(&crd("stable.example.com", "Widget", "widgets"))
        .await
        .unwrap();
    let resolved = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the kind resolves once the CRD is established")
        .unwrap()
        .unwrap();
    assert_eq!(resolved.resource.plural, "widgets");
    assert!(resolved.has_subresource("status"));

    let cache = client.cache(&gvk).await.unwrap();
    assert!(cache.wait_until_ready().await);
    assert_eq!(
        server.open_watches().get("stable.example.com/widgets"),
        Some(&1)
    );

    let crd_gvk = Gvk::new("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    client
        .delete(
            &crd_gvk,
            &ObjectKey::cluster("widgets.stable.example.com"),
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "the kind to be unknown", || async {
        client.resolver().known(&gvk).is_none().then_some(())
    })
    .await;
    assert!(matches!(
        client.resolve(&gvk).await,
        Err(Error::Resolve(ResolveError::UnknownKind { .. }))
    ));
    assert!(!cache.wait_until_ready().await, "the cache stopped");
    assert_eq!(client.cached_object_count(&gvk), None);
    eventually(
        Duration::from_secs(5),
        "the widget watch to close",
        || async {
            (server
                .open_watches()
                .get("stable.example.com/widgets")
                .copied()
                .unwrap_or(0)
                == 0)
                .then_some(())
        },
    )
    .await;
}
