//! Watches: event order, resume, bookmarks, 410 Gone, selectors, time limits, slow
//! watchers, and kube-runtime's watcher against the server.

mod support;

use std::time::Duration;

use dynrec_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt};
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use support::*;

const DEADLINE: Duration = Duration::from_secs(5);

async fn next<S>(stream: &mut S) -> WatchEvent<DynamicObject>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin,
{
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("an event before the deadline")
        .expect("the stream is open")
        .expect("a well-formed event")
}

/// The next item a kube-runtime watcher stream yields, within the deadline.
async fn next_item<T, S>(objects: &mut S) -> T
where
    S: futures::Stream<Item = Result<T, watcher::Error>> + Unpin,
{
    tokio::time::timeout(DEADLINE, objects.try_next())
        .await
        .expect("an object before the deadline")
        .expect("a healthy watch")
        .expect("the stream is open")
}

fn describe(event: &WatchEvent<DynamicObject>) -> (String, String) {
    match event {
        WatchEvent::Added(o) => ("ADDED".into(), o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => (
            "MODIFIED".into(),
            o.metadata.name.clone().unwrap_or_default(),
        ),
        WatchEvent::Deleted(o) => (
            "DELETED".into(),
            o.metadata.name.clone().unwrap_or_default(),
        ),
        WatchEvent::Bookmark(b) => ("BOOKMARK".into(), b.metadata.resource_version.clone()),
        WatchEvent::Error(e) => ("ERROR".into(), e.code.to_string()),
    }
}

/// The resourceVersion a list of the API's kind is current at.
async fn list_rv(api: &Api<DynamicObject>) -> String {
    api.list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

/// A field selector that leaves out the `kube-root-ca.crt` ConfigMap every namespace holds.
const NOT_ROOT_CA: &str = "metadata.name!=kube-root-ca.crt";

#[tokio::test]
async fn watch_from_a_resource_version_replays_changes_in_order() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let start = list_rv(&cms).await;
    create_configmap(&cms, "a").await;
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    let mut versions = Vec::new();
    for _ in 0..3 {
        let event = next(&mut stream).await;
        if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &event {
            versions.push(
                o.metadata
                    .resource_version
                    .clone()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            );
        }
        seen.push(describe(&event).0);
    }
    assert_eq!(seen, vec!["ADDED", "MODIFIED", "DELETED"]);
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
}

#[tokio::test]
async fn live_changes_reach_an_open_watch() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    create_configmap(&cms, "live").await;
    assert_eq!(
        describe(&next(&mut stream).await),
        ("ADDED".into(), "live".into())
    );
}

#[tokio::test]
async fn watch_without_a_version_starts_with_the_current_objects() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "there").await;
    // Every namespace also holds the kube-root-ca.crt ConfigMap; leave it out.
    let mut stream = cms
        .watch(&WatchParams::default().fields(NOT_ROOT_CA), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(
        describe(&next(&mut stream).await),
        ("ADDED".into(), "there".into())
    );
}

#[tokio::test]
async fn an_expired_resource_version_gets_410_gone() {
    let server = ApiServer::builder().history_limit(2).build();
    let client = server.client();
    let cms = configmaps(&client, "default");
    for i in 0..5 {
        create_configmap(&cms, &format!("c{i}")).await;
    }
    let mut stream = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match next(&mut stream).await {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
        }
        other => panic!("expected 410 Gone, got {other:?}"),
    }
}

#[tokio::test]
async fn bookmarks_carry_the_current_resource_version() {
    let server = ApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .build();
    let client = server.client();
    let cms = configmaps(&client, "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            },
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    // A change to another kind moves the global resourceVersion; the bookmark reports it.
    namespaces(&client)
        .create(
            &PostParams::default(),
            &object(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}),
            ),
        )
        .await
        .unwrap();
    let expected = server.resource_version().to_string();
    // Bookmarks keep coming every 50 ms: the loop needs its own deadline to fail, not hang.
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "a bookmark at resourceVersion {expected} before the deadline"
        );
        if let WatchEvent::Bookmark(bookmark) = next(&mut stream).await
            && bookmark.metadata.resource_version == expected
        {
            break;
        }
    }
}

#[tokio::test]
async fn selectors_turn_relabelling_into_added_and_deleted() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create(&cms, &configmap("c", json!({"app": "web"}), json!({}))).await;
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().labels("app=web"), &rv)
        .await
        .unwrap()
        .boxed();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await
    .unwrap();
    create(&cms, &configmap("ignored", json!({"app": "db"}), json!({}))).await;
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&next(&mut stream).await),
        ("DELETED".into(), "c".into())
    );
    assert_eq!(
        describe(&next(&mut stream).await),
        ("ADDED".into(), "c".into())
    );
}

#[tokio::test]
async fn a_watch_ends_after_its_timeout() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    let end = tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("the server ends the watch");
    assert!(end.is_none());
}

#[tokio::test]
async fn a_slow_watcher_is_cut_off_without_blocking_writers() {
    let server = ApiServer::builder().watch_buffer(4).build();
    let client = server.client();
    let cms = configmaps(&client, "default");
    let rv = list_rv(&cms).await;
    // Open a watch and never read it.
    let _stalled = cms.watch(&WatchParams::default(), &rv).await.unwrap();
    assert_eq!(server.open_watches().get("/configmaps"), Some(&1));
    let writes = async {
        for i in 0..200 {
            create_configmap(&cms, &format!("c{i}")).await;
        }
    };
    tokio::time::timeout(DEADLINE, writes)
        .await
        .expect("writers are never blocked by a watcher");
    assert_eq!(
        server.open_watches().get("/configmaps"),
        None,
        "the stalled watcher was cut off"
    );
}

#[tokio::test]
async fn deleting_a_crd_sends_deleted_events_for_its_objects() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let widgets = widgets(&client, "default");
    create(&widgets, &widget("w")).await;
    let rv = list_rv(&widgets).await;
    let mut stream = widgets
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    crds(&client)
        .delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        describe(&next(&mut stream).await),
        ("DELETED".into(), "w".into())
    );
    let end = tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("the watch ends with its kind");
    assert!(end.is_none());
}

#[tokio::test]
async fn kube_runtime_watcher_follows_the_server() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "before").await;
    let mut objects = watcher(cms.clone(), watcher::Config::default().fields(NOT_ROOT_CA))
        .applied_objects()
        .boxed();
    let first = next_item(&mut objects).await;
    assert_eq!(first.metadata.name.as_deref(), Some("before"));
    create_configmap(&cms, "after").await;
    let second = next_item(&mut objects).await;
    assert_eq!(second.metadata.name.as_deref(), Some("after"));
}

#[tokio::test]
async fn kube_runtime_streaming_list_watcher_works() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "before").await;
    let config = watcher::Config::default().streaming_lists();
    let mut events = watcher(cms.clone(), config).boxed();
    let mut init_done = false;
    let mut saw_before = false;
    while !init_done {
        match next_item(&mut events).await {
            watcher::Event::InitApply(o) => {
                saw_before |= o.metadata.name.as_deref() == Some("before")
            }
            watcher::Event::InitDone => init_done = true,
            _ => {}
        }
    }
    assert!(saw_before);
}

#[tokio::test]
async fn kube_runtime_watcher_recovers_when_watches_are_cut() {
    let server = ApiServer::new();
    let client = server.client();
    let cms = configmaps(&client, "default");
    let mut objects = watcher(cms.clone(), watcher::Config::default().fields(NOT_ROOT_CA))
        .applied_objects()
        .boxed();
    create_configmap(&cms, "one").await;
    let first = next_item(&mut objects).await;
    assert_eq!(first.metadata.name.as_deref(), Some("one"));
    server.close_all_watches();
    create_configmap(&cms, "two").await;
    let second = next_item(&mut objects).await;
    assert_eq!(second.metadata.name.as_deref(), Some("two"));
}

/// A stopping server cuts its watches, and a client that resumes at once (as kube-runtime's
/// watcher does after a cut) gets a watch that ends at once: a graceful shutdown waits for
/// every open request, and a resumed watch would otherwise hold it for its timeout.
#[tokio::test]
async fn a_watch_resumed_after_the_server_stops_its_watches_ends_at_once() {
    let server = ApiServer::new();
    let client = server.client();
    let cms = configmaps(&client, "default");
    let rv = list_rv(&cms).await;
    let mut open = cms
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .unwrap()
        .boxed();
    server.stop_watches();
    let cut = tokio::time::timeout(DEADLINE, open.next()).await;
    assert!(matches!(cut, Ok(None)), "the open watch is cut");
    let mut resumed = cms
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .unwrap()
        .boxed();
    let end = tokio::time::timeout(DEADLINE, resumed.next()).await;
    assert!(matches!(end, Ok(None)), "the resumed watch ends at once");
}

#[tokio::test]
async fn a_kube_runtime_watcher_of_a_custom_kind_holds_one_watch_open() {
    let (server, client) = server();
    install_widget_crd(&client).await;
    let widgets = kube::Api::<DynamicObject>::all_with(client.clone(), &widget_resource());
    let mut events = watcher(widgets, watcher::Config::default()).boxed();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    while let Ok(event) = tokio::time::timeout_at(deadline, events.try_next()).await {
        event.unwrap();
    }
    assert_eq!(server.request_count("watch", "example.com", "widgets"), 1);
}
