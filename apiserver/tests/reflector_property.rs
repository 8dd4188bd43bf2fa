//! A property test: random creates, updates, patches and deletes while a kube-runtime
//! reflector follows the watch (with watches cut now and then, and a short history that
//! forces re-lists); afterwards the reflector's store equals a fresh list.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use dynrec_apiserver::ApiServer;
use futures::StreamExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use support::*;

const OPERATIONS: usize = 1_000;
const NAMES: usize = 40;

/// name -> (resourceVersion, data)
type Snapshot = BTreeMap<String, (String, serde_json::Value)>;

fn snapshot<'a>(objects: impl Iterator<Item = &'a kube::api::DynamicObject>) -> Snapshot {
    objects
        .map(|o| {
            (
                o.metadata.name.clone().unwrap_or_default(),
                (
                    o.metadata.resource_version.clone().unwrap_or_default(),
                    o.data["data"].clone(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_reflector_converges_on_the_server_state_under_random_writes() {
    let seed: u64 = std::env::var("PROPTEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_d00d);
    println!("seed {seed} (set PROPTEST_SEED to replay)");
    let mut rng = StdRng::seed_from_u64(seed);
    let server = ApiServer::builder().history_limit(64).build();
    let client = server.client();
    let cms = configmaps(&client, "default");

    let writer = Writer::new(
        cms.resource_url()
            .rsplit('/')
            .next()
            .map(|_| configmap_resource())
            .unwrap(),
    );
    let store = writer.as_reader();
    let stream = reflector::reflector(
        writer,
        watcher(cms.clone(), watcher::Config::default()).default_backoff(),
    );
    let follower = tokio::spawn(stream.for_each(|_| async {}));

    let mut counts = BTreeMap::<&str, usize>::new();
    for step in 0..OPERATIONS {
        let name = format!("cm{}", rng.random_range(0..NAMES));
        let value = rng.random_range(0..1_000).to_string();
        let outcome = match rng.random_range(0..10) {
            0..=2 => (
                "create",
                cms.create(
                    &PostParams::default(),
                    &configmap(&name, json!({}), json!({"v": value})),
                )
                .await
                .map(|_| ()),
            ),
            3..=4 => {
                let result = match cms.get(&name).await {
                    Ok(mut current) => {
                        current.data["data"] = json!({"v": value, "step": step.to_string()});
                        cms.replace(&name, &PostParams::default(), &current)
                            .await
                            .map(|_| ())
                    }
                    Err(e) => Err(e),
                };
                ("update", result)
            }
            5..=6 => (
                "merge",
                cms.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"m": value}})),
                )
                .await
                .map(|_| ()),
            ),
            7 => {
                let ops: json_patch::Patch = serde_json::from_value(
                    json!([{"op": "add", "path": "/data", "value": {"j": value}}]),
                )
                .unwrap();
                (
                    "json",
                    cms.patch(&name, &PatchParams::default(), &Patch::<()>::Json(ops))
                        .await
                        .map(|_| ()),
                )
            }
            _ => (
                "delete",
                cms.delete(&name, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            ),
        };
        match outcome {
            (verb, Ok(())) => *counts.entry(verb).or_default() += 1,
            (_, Err(kube::Error::Api(status))) if status.code == 404 || status.code == 409 => {}
            (verb, Err(err)) => panic!("step {step}: {verb} {name} failed unexpectedly: {err}"),
        }
        if rng.random_range(0..100) == 0 {
            server.close_all_watches();
        }
    }
    println!("successful operations: {counts:?}");
    assert!(
        counts.values().sum::<usize>() > OPERATIONS / 2,
        "most operations succeed: {counts:?}"
    );

    let expected = snapshot(cms.list(&ListParams::default()).await.unwrap().items.iter());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state = store.state();
        let actual = snapshot(state.iter().map(|o| o.as_ref()));
        if actual == expected {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reflector did not converge:\nexpected {expected:?}\nactual   {actual:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    follower.abort();
}

fn configmap_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("", "v1", "ConfigMap"),
        "configmaps",
    )
}
