//! The HTTP front end of the embedded server under random requests (proptest, in-process):
//! random methods, paths, queries (label and field selectors), content types and bodies
//! (truncated JSON, invalid UTF-8, deep nesting, 3 MB). With no fault injected, every
//! answer is below 500 (but for etcd's size limit, which kube answers with 500), every refusal is a `metav1.Status` carrying its code, and the
//! server still answers afterwards.

use std::time::Duration;

use dynrec::apiserver::ApiServer;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::{Value, json};

const CASES: u32 = 1500;

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW",
];
const PREFIXES: &[&str] = &[
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/c1",
    "/api/v1/namespaces/default/configmaps/c1/status",
    "/api/v1/namespaces/default/pods/p1",
    "/api/v1/namespaces/default/pods/p1/eviction",
    "/api/v1/namespaces/nope/secrets",
    "/api/v1/namespaces",
    "/api/v1/nodes",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/example.com/v1/namespaces/default/widgets",
    "/apis",
    "/api",
    "/version",
    "/openapi/v3",
    "",
];
const QUERY_KEYS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "as",
];
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "application/yaml",
    "",
];

fn config_map_json() -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c1", "labels": {"a": "b"}}, "data": {"k": "v"}})
    .to_string()
}

/// A body: nothing, random bytes, a truncated or intact ConfigMap, invalid UTF-8, a JSON
/// patch, or deep nesting.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(any::<u8>(), 0..200),
        any::<prop::sample::Index>().prop_map(|i| {
            let full = config_map_json();
            full.as_bytes()[..i.index(full.len() + 1)].to_vec()
        }),
        Just(config_map_json().into_bytes()),
        Just(b"{\"data\": \"\xff\xfe\"}".to_vec()),
        Just(br#"[{"op": "replace", "path": "/data/k", "value": "w"}]"#.to_vec()),
        (1usize..3000)
            .prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        "[ -~]{0,80}".prop_map(String::into_bytes),
    ]
}

/// A path: a known prefix with random tail segments and characters.
fn path() -> impl Strategy<Value = String> {
    (
        prop::sample::select(PREFIXES),
        prop::collection::vec("[a-z0-9.%~:-]{0,8}", 0..3),
    )
        .prop_map(|(prefix, tail)| {
            let mut path = prefix.to_string();
            for segment in tail {
                path.push('/');
                path.push_str(&segment);
            }
            if path.is_empty() { "/".into() } else { path }
        })
}

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (prop::sample::select(QUERY_KEYS), "[a-z0-9=!,()<>. -]{0,12}"),
        0..3,
    )
    .prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={}", v.replace(' ', "%20")))
            .collect::<Vec<_>>()
            .join("&")
    })
}

type Request = (&'static str, String, String, &'static str, Vec<u8>);

fn request() -> impl Strategy<Value = Request> {
    (
        prop::sample::select(METHODS),
        path(),
        query(),
        prop::sample::select(CONTENT_TYPES),
        body(),
    )
}

/// Sends one request; checks the answer is a proper one.
async fn check(
    client: &kube::Client,
    (method, path, query, content_type, body): Request,
) -> Result<(), TestCaseError> {
    let uri = if query.is_empty() {
        path.clone()
    } else {
        format!("{path}?{query}")
    };
    let Ok(request) = http::Request::builder()
        .method(method)
        .uri(&uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body))
    else {
        return Ok(()); // not a request http can even express
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), client.send(request)).await;
    let response = answer
        .map_err(|_| TestCaseError::fail(format!("{method} {uri}: no answer within 10 s")))?
        .map_err(|e| TestCaseError::fail(format!("{method} {uri}: {e}")))?;
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map_err(|e| TestCaseError::fail(format!("{method} {uri}: body {e}")))?
        .to_bytes();
    // The one 5xx kube-apiserver gives for a client's request: etcd refusing an object
    // over its 1.5 MiB limit (kubernetes/kubernetes#112152).
    let etcd_limit = code == 500
        && bytes
            .windows(32)
            .any(|w| w == b"etcdserver: request is too large");
    prop_assert!(
        code < 500 || etcd_limit,
        "{method} {uri} ({content_type}): {code} {}",
        String::from_utf8_lossy(&bytes)
    );
    if code >= 400 && method != "HEAD" {
        let status: Value = serde_json::from_slice(&bytes).map_err(|_| {
            TestCaseError::fail(format!(
                "{method} {uri}: {code} is not JSON: {}",
                String::from_utf8_lossy(&bytes)
            ))
        })?;
        prop_assert_eq!(&status["kind"], "Status", "{} {}: {}", method, uri, status);
        prop_assert_eq!(
            status["code"].as_u64(),
            Some(u64::from(code)),
            "{} {}: {}",
            method,
            uri,
            status
        );
    }
    Ok(())
}

#[test]
fn random_requests_get_proper_answers_and_the_server_keeps_serving() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _inside = runtime.enter();
    let server = ApiServer::new();
    let client = server.client();
    let mut runner = TestRunner::new(RunnerConfig {
        cases: CASES,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    runner
        .run(&request(), |request| {
            runtime.block_on(check(&client, request))
        })
        .unwrap();
    // The big and the very deep bodies, once each (too slow to draw at random).
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(3_000_000)
    );
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for body in [
        big.into_bytes(),
        deep.into_bytes(),
        b"\xff\xfe\xfd".to_vec(),
    ] {
        for content_type in CONTENT_TYPES {
            let request = (
                "POST",
                PREFIXES[0].to_string(),
                String::new(),
                *content_type,
                body.clone(),
            );
            runtime.block_on(check(&client, request)).unwrap();
            let request = (
                "PATCH",
                PREFIXES[1].to_string(),
                "fieldManager=f".to_string(),
                *content_type,
                body.clone(),
            );
            runtime.block_on(check(&client, request)).unwrap();
        }
    }
    let namespaces = runtime.block_on(async {
        let request = http::Request::get("/api/v1/namespaces")
            .body(kube::client::Body::empty())
            .unwrap();
        client.send(request).await.unwrap().status().as_u16()
    });
    assert_eq!(namespaces, 200, "the server still answers");
    println!(
        "HTTP front end: {CASES} random requests, {} fixed large/deep/invalid ones",
        3 * CONTENT_TYPES.len() * 2
    );
}
