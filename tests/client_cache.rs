//! Shared per-GVK caches: one watch per kind, reference counting, freshness.

mod client_common;

use std::time::Duration;

use client_common::{config_map, eventually, start};
use dynrec::{
    client::{CacheEvent, ListOptions},
    duck::KResource,
    object::{Gvk, ObjectKey},
};
use kube::core::Selector;
use serde_json::json;

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

#[tokio::test]
async fn readers_of_one_kind_share_one_watch_until_the_last_goes() {
    let (server, client) = start();
    let first = client.cache(&config_maps()).await.unwrap();
    let second = client.clone().cache(&config_maps()).await.unwrap();
    let duck_watch = client
        .duck::<KResource>()
        .watch(&config_maps())
        .await
        .unwrap();
    assert!(first.wait_until_ready().await && second.wait_until_ready().await);
    assert_eq!(server.request_count("watch", "", "configmaps"), 1);
    assert_eq!(server.open_watches().get("/configmaps"), Some(&1));

    drop(first);
    drop(duck_watch);
    assert!(second.is_ready(), "a remaining user keeps the cache");
    drop(second);
    assert_eq!(client.cached_object_count(&config_maps()), None);
    eventually(Duration::from_secs(2), "the watch to close", || async {
        (server
            .open_watches()
            .get("/configmaps")
            .copied()
            .unwrap_or(0)
            == 0)
            .then_some(())
    })
    .await;

    let again = client.cache(&config_maps()).await.unwrap();
    assert!(again.wait_until_ready().await);
    assert_eq!(
        server.request_count("watch", "", "configmaps"),
        2,
        "a new user starts a new watch"
    );
}

#[tokio::test]
async fn cache_backed_get_sees_a_write_within_100ms() {
    let (server, client) = start();
    let cache = client.cache(&config_maps()).await.unwrap();
    assert!(cache.wait_until_ready().await);
    let gets_before = server.request_count("get", "", "configmaps");

    let key = ObjectKey::namespaced("default", "fresh");
    assert!(
        client
            .get(&config_maps(), &key)
            .await
            .unwrap_err()
            .is_not_found()
    );
    client
        .create(&config_map("fresh", json!({"app": "web"})))
        .await
        .unwrap();
    let seen = eventually(
        Duration::from_millis(100),
        "the cache to see the create",
        || async { client.get(&config_maps(), &key).await.ok() },
    )
    .await;
    assert_eq!(seen.data["data"]["key"], "value");
    assert!(
        seen.metadata.managed_fields.is_none(),
        "managedFields are stripped"
    );
    assert_eq!(
        seen.types.as_ref().map(|t| t.kind.as_str()),
        Some("ConfigMap")
    );
    assert_eq!(
        server.request_count("get", "", "configmaps"),
        gets_before,
        "reads come from the cache"
    );
    assert_eq!(
        client.cached_object_count(&config_maps()),
        Some(cache.len())
    );

    let from_api = client.api_reader().get(&config_maps(), &key).await.unwrap();
    assert_eq!(from_api.metadata.uid, seen.metadata.uid);
    assert_eq!(
        server.request_count("get", "", "configmaps"),
        gets_before + 1
    );
}

#[tokio::test]
async fn cache_backed_list_filters_by_namespace_and_selector() {
    let (_server, client) = start();
    client
        .create(&config_map("a", json!({"tier": "front"})))
        .await
        .unwrap();
    client
        .create(&config_map("b", json!({"tier": "back"})))
        .await
        .unwrap();
    let cache = client.cache(&config_maps()).await.unwrap();
    let mut events = cache.subscribe();
    assert!(cache.wait_until_ready().await);

    let front: Selector = [("tier", "front")].into_iter().collect();
    let options = ListOptions::default().namespace("default").selector(front);
    let cached = client.list(&config_maps(), &options).await.unwrap();
    let from_api = client
        .api_reader()
        .list(&config_maps(), &options)
        .await
        .unwrap();
    let names = |list: &[kube::api::DynamicObject]| {
        list.iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&cached), ["a"]);
    assert_eq!(names(&from_api), ["a"]);
    assert!(
        client
            .list(&config_maps(), &ListOptions::default().namespace("other"))
            .await
            .unwrap()
            .is_empty()
    );

    let mut applied = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let CacheEvent::Applied(o) = event {
            applied.extend(o.metadata.name.clone());
        }
    }
    applied.sort();
    assert_eq!(applied, ["a", "b"], "subscribers see the initial list");
}
