//! How a get scales with the number of stored objects: one ConfigMap fetched through the
//! server's tower service (the in-process path), with 100 and with 100,000 objects stored.
//! The 100-object run is the baseline; the report is the ratio between the two.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dynrec_apiserver::ApiServer;
use http::Request;
use tower::ServiceExt;

fn request(method: &str, uri: &str, body: String) -> Request<axum::body::Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body))
        .expect("a valid request")
}

async fn seeded(objects: usize) -> ApiServer {
    let server = ApiServer::builder().history_limit(1_000).build();
    for i in 0..objects {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm{i}","labels":{{"app":"bench"}}}},"data":{{"key":"value-{i}"}}}}"#
        );
        let response = server
            .router()
            .oneshot(request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                body,
            ))
            .await
            .expect("infallible");
        assert_eq!(response.status(), 201);
    }
    server
}

fn get_scaling(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("get_one_configmap");
    for objects in [100usize, 100_000] {
        let server = runtime.block_on(seeded(objects));
        let uri = format!("/api/v1/namespaces/default/configmaps/cm{}", objects / 2);
        group.bench_function(format!("{objects}_objects_stored"), |b| {
            b.to_async(&runtime).iter(|| async {
                let response = server
                    .router()
                    .oneshot(request("GET", &uri, String::new()))
                    .await
                    .expect("infallible");
                let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .expect("a body");
                black_box(body)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, get_scaling);
criterion_main!(benches);
