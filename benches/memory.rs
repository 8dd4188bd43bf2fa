//! Memory: live heap bytes per cached ConfigMap vs the object's JSON size, for dynrec's
//! shared cache (`Client::cache`, `DynamicObject`s) and, as the baseline, a typed
//! kube-runtime reflector `Store<ConfigMap>`, over 1,000, 10,000 and 100,000 objects, and
//! over 1,000 and 10,000 owned ones (each with a controller ownerReference, as a
//! controller's children have: dynrec's cache also indexes those by controller). Of the owned
//! ones, also dynrec's projected caches (`Client::reading_only`): metadata only, as a child
//! read only for ownership and existence, and the fields the widgets definition reads of its
//! ConfigMaps. A counting global allocator measures the live heap before the cache starts and
//! after it is ready (the server's objects are stored before the first reading). Prints its
//! figures; an argument (other than `--bench`) runs only the sizes whose row names hold it
//! (`cargo bench --bench memory -- owned`).

use std::time::Duration;

use dynrec::apiserver::ApiServer;
use dynrec::client::{CachedFields, Client, ListOptions};
use dynrec::object::Gvk;
use dynrec_test_support::counting::{Counting, live};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live heap bytes once background work has settled.
async fn settled_live() -> isize {
    tokio::time::sleep(Duration::from_millis(300)).await;
    live()
}

/// A server holding `n` ConfigMaps (labels, an annotation, three data keys), each
/// controlled by a Widget of its own when `owned` (as a controller's children are).
fn server(n: usize, owned: bool) -> ApiServer {
    let server = ApiServer::builder().history_limit(1 << 17).build();
    let config_maps = (0..n).map(|i| {
        let mut config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("config-{i}"), "namespace": format!("ns-{}", i / 100),
                "labels": {"app": "bench", "tier": "backend"},
                "annotations": {"example.com/owner": format!("team-{}", i % 7)}},
            "data": {"mode": "production", "level": "info", "endpoint": format!("https://svc-{i}.example.com:8443/api")}});
        if owned {
            config_map["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1",
                "kind": "Widget", "name": format!("widget-{i}"),
                "uid": format!("00000000-0000-4000-8000-{i:012}"),
                "controller": true, "blockOwnerDeletion": true}]);
        }
        config_map
    });
    server.seed(config_maps).expect("config maps seeded");
    server
}

/// Bytes the cache added, per object.
struct Measured {
    per_object: f64,
    json: f64,
}

/// dynrec's shared cache of ConfigMaps, keeping `fields` of them.
async fn dynrec_cache(server: &ApiServer, n: usize, fields: CachedFields) -> Measured {
    let gvk = Gvk::new("", "v1", "ConfigMap");
    let client = Client::new(server.client()).reading_only([(gvk.clone(), fields)]);
    client.resolve(&gvk).await.expect("ConfigMaps resolve");
    let before = settled_live().await;
    let cache = client.cache(&gvk).await.expect("a cache");
    assert!(cache.wait_until_ready().await);
    let after = settled_live().await;
    let objects = cache.list(&ListOptions::default());
    measured(
        before,
        after,
        n,
        objects.iter().map(|o| json_size(o.as_ref())),
    )
}

/// A typed kube-runtime reflector of ConfigMaps.
async fn typed_store(server: &ApiServer, n: usize) -> Measured {
    let api = Api::<ConfigMap>::all(server.client());
    let before = settled_live().await;
    let (store, writer) = reflector::store();
    let reflect = watcher(api, Default::default()).reflect(writer);
    let reflecting = tokio::spawn(reflect.for_each(|_| async {}));
    store.wait_until_ready().await.expect("listed");
    let after = settled_live().await;
    let objects = store.state();
    reflecting.abort();
    measured(
        before,
        after,
        n,
        objects.iter().map(|o| json_size(o.as_ref())),
    )
}

/// The heap the cache added per cached object. Besides the `n` seeded ConfigMaps, the
/// server keeps a `kube-root-ca.crt` in each namespace; both caches hold those too, so the
/// figure is per object cached.
fn measured(before: isize, after: isize, n: usize, sizes: impl Iterator<Item = usize>) -> Measured {
    let sizes: Vec<usize> = sizes.collect();
    assert!(
        sizes.len() >= n,
        "{} objects cached, {n} seeded",
        sizes.len()
    );
    let count = sizes.len() as f64;
    Measured {
        per_object: (after - before) as f64 / count,
        json: sizes.iter().sum::<usize>() as f64 / count,
    }
}

fn json_size(object: &impl serde::Serialize) -> usize {
    serde_json::to_vec(object)
        .map(|v| v.len())
        .unwrap_or_default()
}

/// What the widgets definition reads of its ConfigMaps: what its template writes (labels,
/// `data`), which its update manager compares.
fn widgets_definition_reads() -> CachedFields {
    CachedFields::metadata()
        .with("metadata.labels")
        .with("data")
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters the rows.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!("memory: live heap bytes per cached ConfigMap (ratio to its JSON size)");
    let sizes = [(1_000, false), (10_000, false), (100_000, false)];
    // Owned: dynrec's cache also indexes each by its controller (the typed Store does not).
    let owned = [(1_000, true), (10_000, true)];
    for (n, owned) in sizes.into_iter().chain(owned) {
        let objects = match owned {
            true => "owned objects",
            false => "objects",
        };
        if !format!("{n} {objects}").contains(&filter) {
            continue;
        }
        let server = server(n, owned);
        let whole = runtime.block_on(dynrec_cache(&server, n, CachedFields::Whole));
        let typed = runtime.block_on(typed_store(&server, n));
        let mut rows = vec![("dynrec cache", whole)];
        if owned {
            let metadata = dynrec_cache(&server, n, CachedFields::metadata());
            let read = dynrec_cache(&server, n, widgets_definition_reads());
            rows.push(("dynrec, metadata only", runtime.block_on(metadata)));
            rows.push(("dynrec, widgets' reads", runtime.block_on(read)));
        }
        for (name, measured) in &rows {
            println!(
                "  {n:>6} {objects:<13}, {name:<23}: {:>6.0} B/object, JSON {:>4.0} B, ratio {:.2}, {:.2}× typed",
                measured.per_object,
                measured.json,
                measured.per_object / measured.json,
                measured.per_object / typed.per_object
            );
        }
        println!(
            "  {n:>6} {objects:<13}, {:<23}: {:>6.0} B/object, JSON {:>4.0} B, ratio {:.2}",
            "typed Store<ConfigMap>",
            typed.per_object,
            typed.json,
            typed.per_object / typed.json
        );
    }
}
