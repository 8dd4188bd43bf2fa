//! Tracker semantics (reconciler.io spec 10.3): name and selector matching, namespaces,
//! leases, and the config helpers that track before reading.

mod client_common;

use std::{collections::BTreeMap, time::Duration};

use client_common::{config_map, object, start};
use dynrec::{
    client::ListOptions,
    object::{GroupKind, Gvk, ObjectKey},
    tracker::{Reference, Tracker},
};
use kube::core::{Expression, Selector};
use serde_json::json;

const LEASE: Duration = Duration::from_secs(60);

fn secret() -> GroupKind {
    GroupKind::new("", "Secret")
}

fn observer(name: &str) -> ObjectKey {
    ObjectKey::namespaced("default", name)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn app_selector() -> Selector {
    [("app", "web")].into_iter().collect()
}

/// One case: tracks recorded, then the object looked up, and the observers expected.
struct Case {
    name: &'static str,
    tracks: Vec<(Reference, ObjectKey)>,
    group_kind: GroupKind,
    namespace: Option<&'static str>,
    object: &'static str,
    labels: BTreeMap<String, String>,
    expected: Vec<ObjectKey>,
}

fn named(namespace: &str, name: &str) -> Reference {
    Reference::named(&secret(), &ObjectKey::namespaced(namespace, name))
}

fn case(name: &'static str, tracks: Vec<(Reference, ObjectKey)>, expected: Vec<ObjectKey>) -> Case {
    Case {
        name,
        tracks,
        group_kind: secret(),
        namespace: Some("default"),
        object: "creds",
        labels: labels(&[("app", "web")]),
        expected,
    }
}

#[test]
fn observers_match_by_name_selector_and_namespace() {
    let selected =
        |ns: Option<&str>, selector: Selector| Reference::selected(&secret(), ns, selector);
    let cases = vec![
        case("empty tracker", vec![], vec![]),
        case(
            "name match",
            vec![(named("default", "creds"), observer("a"))],
            vec![observer("a")],
        ),
        case(
            "multiple observers of one name",
            vec![
                (named("default", "creds"), observer("a")),
                (named("default", "creds"), observer("b")),
            ],
            vec![observer("a"), observer("b")],
        ),
        case(
            "other name",
            vec![(named("default", "other"), observer("a"))],
            vec![],
        ),
        case(
            "other namespace",
            vec![(named("other", "creds"), observer("a"))],
            vec![],
        ),
        case(
            "other group",
            vec![(
                Reference::named(
                    &GroupKind::new("example.com", "Secret"),
                    &ObjectKey::namespaced("default", "creds"),
                ),
                observer("a"),
            )],
            vec![],
        ),
        case(
            "other kind",
            vec![(
                Reference::named(
                    &GroupKind::new("", "ConfigMap"),
                    &ObjectKey::namespaced("default", "creds"),
                ),
                observer("a"),
            )],
            vec![],
        ),
        case(
            "selector in every namespace",
            vec![(selected(None, app_selector()), observer("a"))],
            vec![observer("a")],
        ),
        case(
            "selector and namespace",
            vec![(selected(Some("default"), app_selector()), observer("a"))],
            vec![observer("a")],
        ),
        case(
            "selector in the wrong namespace",
            vec![(selected(Some("other"), app_selector()), observer("a"))],
            vec![],
        ),
        case(
            "selector missing a label",
            vec![(
                selected(None, [("app", "web"), ("tier", "db")].into_iter().collect()),
                observer("a"),
            )],
            vec![],
        ),
        case(
            "everything selector",
            vec![(selected(None, Selector::default()), observer("a"))],
            vec![observer("a")],
        ),
        case(
            "set-based selector",
            vec![(
                selected(
                    None,
                    Expression::In("app".into(), ["api".into(), "web".into()].into()).into(),
                ),
                observer("a"),
            )],
            vec![observer("a")],
        ),
        case(
            "multiple observers by selector",
            vec![
                (selected(None, app_selector()), observer("a")),
                (selected(Some("default"), app_selector()), observer("b")),
            ],
            vec![observer("a"), observer("b")],
        ),
        case(
            "name and selector together, deduplicated",
            vec![
                (named("default", "creds"), observer("a")),
                (selected(None, app_selector()), observer("a")),
            ],
            vec![observer("a")],
        ),
        Case {
            namespace: None,
            ..case(
                "cluster-scoped object vs namespaced selector",
                vec![(selected(Some("default"), app_selector()), observer("a"))],
                vec![],
            )
        },
        Case {
            namespace: None,
            object: "node-1",
            group_kind: GroupKind::new("", "Node"),
            ..case(
                "cluster-scoped object by name",
                vec![(
                    Reference::named(&GroupKind::new("", "Node"), &ObjectKey::cluster("node-1")),
                    observer("a"),
                )],
                vec![observer("a")],
            )
        },
    ];
    for case in cases {
        let tracker = Tracker::new(LEASE);
        for (reference, observer) in &case.tracks {
            tracker.track_reference(reference, observer).unwrap();
        }
        let found =
            tracker.observers_of(&case.group_kind, case.namespace, case.object, &case.labels);
        assert_eq!(found, case.expected, "case {:?}", case.name);
    }
}

#[test]
fn invalid_references_are_refused() {
    let tracker = Tracker::new(LEASE);
    let err = tracker
        .track_reference(
            &Reference::named(&GroupKind::new("", "bad-kind"), &ObjectKey::cluster("x")),
            &observer("a"),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid Reference:\nkind \"bad-kind\" must be a C identifier"
    );
}

#[tokio::test(start_paused = true)]
async fn leases_expire_and_renew() {
    let tracker = Tracker::for_resync(Duration::from_secs(30));
    assert_eq!(
        tracker.lease(),
        LEASE,
        "the default lease is twice the resync period"
    );
    let by_selector = Reference::selected(&secret(), None, app_selector());
    tracker
        .track_reference(&named("default", "creds"), &observer("by-name"))
        .unwrap();
    tracker
        .track_reference(&by_selector, &observer("by-selector"))
        .unwrap();
    let lookup = || {
        tracker.observers_of(
            &secret(),
            Some("default"),
            "creds",
            &labels(&[("app", "web")]),
        )
    };
    assert_eq!(lookup(), [observer("by-name"), observer("by-selector")]);

    tokio::time::advance(Duration::from_secs(45)).await;
    tracker
        .track_reference(&by_selector, &observer("by-selector"))
        .unwrap();
    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(
        lookup(),
        [observer("by-selector")],
        "the name lease expired, the renewed selector lease did not"
    );

    tokio::time::advance(Duration::from_secs(45)).await;
    assert!(lookup().is_empty(), "the selector lease expired too");
}

#[tokio::test]
async fn track_and_get_tracks_even_when_the_object_is_missing() {
    let (_server, client) = start();
    let tracker = Tracker::new(LEASE);
    let gvk = Gvk::new("", "v1", "ConfigMap");
    let key = ObjectKey::namespaced("default", "later");
    let err = tracker
        .track_and_get(&client, &observer("app"), &gvk, &key)
        .await
        .unwrap_err();
    assert!(err.is_not_found());

    let created = client
        .create(&config_map("later", json!({})))
        .await
        .unwrap();
    assert_eq!(tracker.observers(&created).unwrap(), [observer("app")]);
    let found = tracker
        .track_and_get(&client, &observer("app"), &gvk, &key)
        .await
        .unwrap();
    assert_eq!(found.metadata.uid, created.metadata.uid);
}

#[tokio::test]
async fn track_and_list_tracks_the_selector_and_namespace() {
    let (_server, client) = start();
    let tracker = Tracker::new(LEASE);
    let gvk = Gvk::new("", "v1", "ConfigMap");
    client
        .create(&config_map("web-config", json!({"app": "web"})))
        .await
        .unwrap();
    let options = ListOptions::default()
        .namespace("default")
        .selector(app_selector());
    let listed = tracker
        .track_and_list(&client, &observer("app"), &gvk, &options)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    let matching = object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "new", "namespace": "default", "labels": {"app": "web"}}
    }));
    assert_eq!(tracker.observers(&matching).unwrap(), [observer("app")]);
    let mut elsewhere = matching.clone();
    elsewhere.metadata.namespace = Some("other".into());
    assert!(tracker.observers(&elsewhere).unwrap().is_empty());

    let missing_kind = Gvk::new("", "v1", "Widget");
    let err = tracker
        .track_and_list(
            &client,
            &observer("app"),
            &missing_kind,
            &ListOptions::default(),
        )
        .await;
    assert!(err.is_err());
    let widget = object(json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}}));
    assert_eq!(
        tracker.observers(&widget).unwrap(),
        [observer("app")],
        "a failed list still tracks"
    );
}
