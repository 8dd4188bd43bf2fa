//! Shared per-GVK caches: one watch per kind, reference counting, freshness.

mod client_common;

use std::time::Duration;

use futures::StreamExt;

use client_common::{config_map, eventually, object, start};
use dynrec::{
    client::{CacheEvent, CachedFields, Client, ListOptions},
    duck_types::KResource,
    object::{Gvk, ObjectKey},
};
use kube::{
    api::{DeleteParams, DynamicObject},
    core::Selector,
};
use serde_json::json;

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The names of listed objects, in list order.
/// The ConfigMap every namespace holds, as in any cluster.
const ROOT_CA: &str = "kube-root-ca.crt";

/// The names of objects, shared (from the cache) or owned (from the API server).
fn names<O: std::borrow::Borrow<DynamicObject>>(list: &[O]) -> Vec<String> {
    let names = list.iter().map(|o| o.borrow().metadata.name.clone());
    names.map(Option::unwrap_or_default).collect()
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
async fn cache_backed_get_sees_a_write_promptly() {
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
    // Bounded with headroom for a loaded machine; the watch delivers in milliseconds.
    let seen = eventually(
        Duration::from_secs(2),
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
    while let Some(event) = events.try_recv() {
        if let CacheEvent::Applied(o) = event {
            applied.extend(o.metadata.name.clone());
        }
    }
    // Every namespace also holds kube-root-ca.crt, as in any cluster.
    applied.retain(|name| name != ROOT_CA);
    applied.sort();
    assert_eq!(applied, ["a", "b"], "subscribers see the initial list");
}

/// ConfigMaps `owner` and `stranger` in `default`, and children of theirs in `default` and
/// `other`; returns the owner's UID.
async fn owner_and_children(client: &Client) -> String {
    let namespace = object(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "other"}}));
    client.create(&namespace).await.unwrap();
    let owner = client
        .create(&config_map("owner", json!({})))
        .await
        .unwrap();
    let stranger = client
        .create(&config_map("stranger", json!({})))
        .await
        .unwrap();
    let reference = |owner: &DynamicObject, controller: bool| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "controller": controller})
    };
    let children = [
        ("default", "mine-1", json!([reference(&owner, true)])),
        (
            "default",
            "mine-2",
            json!([reference(&stranger, false), reference(&owner, true)]),
        ),
        ("default", "only-owned", json!([reference(&owner, false)])),
        ("default", "theirs", json!([reference(&stranger, true)])),
        ("other", "mine-elsewhere", json!([reference(&owner, true)])),
    ];
    for (namespace, name, references) in children {
        let child = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": references}}));
        client.create(&child).await.unwrap();
    }
    owner.metadata.uid.unwrap()
}

#[tokio::test]
async fn controlled_by_lists_exactly_the_controllers_objects_from_cache_and_api() {
    let (server, client) = start();
    let uid = owner_and_children(&client).await;
    let cache = client.cache(&config_maps()).await.unwrap();
    assert!(cache.wait_until_ready().await);
    let lists_before = server.request_count("list", "", "configmaps");

    let in_default = ListOptions::default()
        .namespace("default")
        .controlled_by(&uid);
    let cached = client.list(&config_maps(), &in_default).await.unwrap();
    assert_eq!(names(&cached), ["mine-1", "mine-2"]);
    let everywhere = ListOptions::default().controlled_by(&uid);
    let cached = client.list(&config_maps(), &everywhere).await.unwrap();
    assert_eq!(names(&cached), ["mine-1", "mine-2", "mine-elsewhere"]);
    assert_eq!(
        server.request_count("list", "", "configmaps"),
        lists_before,
        "the cache serves these lists"
    );

    let from_api = client.api_reader().list(&config_maps(), &in_default).await;
    assert_eq!(names(&from_api.unwrap()), ["mine-1", "mine-2"]);
    let from_api = client.api_reader().list(&config_maps(), &everywhere).await;
    let mut from_api = names(&from_api.unwrap());
    from_api.sort();
    assert_eq!(from_api, ["mine-1", "mine-2", "mine-elsewhere"]);
}

#[tokio::test]
async fn list_controlled_lists_what_list_does_from_cache_and_api() {
    let (server, client) = start();
    let uid = owner_and_children(&client).await;
    let kind = config_maps();
    // No cache runs yet: the API server answers.
    let from_api = client.list_controlled(&kind, Some("default"), &uid).await;
    assert_eq!(names(&from_api.unwrap()), ["mine-1", "mine-2"]);

    let cache = client.cache(&kind).await.unwrap();
    assert!(cache.wait_until_ready().await);
    let lists_before = server.request_count("list", "", "configmaps");
    let in_default = client.list_controlled(&kind, Some("default"), &uid).await;
    assert_eq!(names(&in_default.unwrap()), ["mine-1", "mine-2"]);
    let everywhere = client.list_controlled(&kind, None, &uid).await;
    assert_eq!(
        names(&everywhere.unwrap()),
        ["mine-1", "mine-2", "mine-elsewhere"]
    );
    let elsewhere = cache.list_controlled(Some("other"), &uid);
    assert_eq!(names(&elsewhere), ["mine-elsewhere"]);
    assert_eq!(
        server.request_count("list", "", "configmaps"),
        lists_before,
        "the cache serves these lists"
    );
}

#[tokio::test]
async fn delete_collection_controlled_by_deletes_only_the_controllers_objects() {
    let (_server, client) = start();
    let uid = owner_and_children(&client).await;
    let options = ListOptions::default()
        .namespace("default")
        .controlled_by(uid);
    client
        .delete_collection(&config_maps(), &options, &DeleteParams::default())
        .await
        .unwrap();
    let all = ListOptions::default();
    let mut left = names(
        &client
            .api_reader()
            .list(&config_maps(), &all)
            .await
            .unwrap(),
    );
    left.retain(|name| name != ROOT_CA);
    left.sort();
    assert_eq!(
        left,
        [
            "mine-elsewhere",
            "only-owned",
            "owner",
            "stranger",
            "theirs"
        ]
    );
}

/// A subscriber that reads nothing while thousands of changes arrive still gets each of them,
/// in the order the server made them: a bounded channel dropped them, and a subscriber that
/// lost some had to re-read the whole cache (at 100,000 objects, over and over while writes
/// went on).
#[tokio::test]
async fn a_subscriber_that_falls_behind_still_gets_every_change_in_order() {
    let (_server, client) = start();
    let cache = client.cache(&config_maps()).await.unwrap();
    assert!(cache.wait_until_ready().await);
    let mut events = cache.subscribe();
    let count = 1_500;
    let creates = (0..count).map(|i| {
        let client = client.clone();
        async move {
            let name = format!("burst-{i:04}");
            client.create(&config_map(&name, json!({}))).await.unwrap()
        }
    });
    let created: Vec<DynamicObject> = futures::stream::iter(creates)
        .buffer_unordered(16)
        .collect()
        .await;
    let mut seen = Vec::new();
    while seen.len() < count {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv()).await;
        match event
            .expect("every change arrives")
            .expect("the cache runs")
        {
            CacheEvent::Applied(o) => seen.push(o.metadata.resource_version.clone().unwrap()),
            other => panic!("only creates happened, got {other:?}"),
        }
    }
    let mut versions: Vec<String> = created
        .into_iter()
        .map(|o| o.metadata.resource_version.unwrap())
        .collect();
    versions.sort_by_key(|v| v.parse::<u64>().unwrap());
    assert_eq!(seen, versions, "every create, in resourceVersion order");
}

#[tokio::test]
async fn a_projected_cache_serves_only_the_readers_it_covers_until_a_wider_one_widens_it() {
    let (server, client) = start();
    client
        .create(&config_map("settings", json!({"app": "web"})))
        .await
        .unwrap();
    let metadata_only = client.reading_only([(config_maps(), CachedFields::metadata())]);
    let projected = metadata_only.cache(&config_maps()).await.unwrap();
    assert!(projected.wait_until_ready().await);
    let key = ObjectKey::namespaced("default", "settings");
    let cached = metadata_only.get(&config_maps(), &key).await.unwrap();
    assert_eq!(
        cached.data,
        json!({}),
        "the projected reader reads what it declared"
    );
    assert_eq!(cached.metadata.labels, None);
    assert!(cached.metadata.uid.is_some() && cached.metadata.creation_timestamp.is_some());

    // A reader that declared nothing is served whole objects by the API server...
    let gets = server.request_count("get", "", "configmaps");
    let whole = client.get(&config_maps(), &key).await.unwrap();
    assert_eq!(whole.data["data"]["key"], "value");
    assert_eq!(server.request_count("get", "", "configmaps"), gets + 1);

    // ...until it joins the cache, which widens to whole objects (listed again, one watch).
    let joined = client.cache(&config_maps()).await.unwrap();
    eventually(
        Duration::from_secs(5),
        "the cache to hold whole objects",
        || async { joined.holds(&CachedFields::Whole).then_some(()) },
    )
    .await;
    assert!(projected.fields().is_whole());
    let served = client.get(&config_maps(), &key).await.unwrap();
    assert_eq!(served.data["data"]["key"], "value");
    assert_eq!(server.request_count("get", "", "configmaps"), gets + 1);
    assert_eq!(server.request_count("list", "", "configmaps"), 2);
    eventually(Duration::from_secs(5), "one watch left open", || async {
        (server.open_watches().get("/configmaps") == Some(&1)).then_some(())
    })
    .await;
}
