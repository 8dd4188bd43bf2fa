//! Helpers dynrec's own tests share ([`process`], [`api`], [`eventually`], a [`counting`]
//! allocator), and the switch
//! that builds dynrec with its `testing` feature for them: dynrec dev-depends on this crate,
//! which depends on dynrec with `testing` enabled, and Cargo unifies the features of the
//! package under test.

pub mod counting;
pub mod process;

use std::future::Future;
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;

/// How long [`eventually`] waits.
pub const EVENTUALLY: Duration = Duration::from_secs(20);

/// The `kind`s of `group` (version v1, plural `plural`) in namespace `default`.
pub fn api(client: &kube::Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
    Api::namespaced_with(client.clone(), "default", &ar)
}

/// The Widgets (`example.com/v1`) in namespace `default`.
pub fn widgets_api(client: &kube::Client) -> Api<DynamicObject> {
    api(client, "example.com", "Widget", "widgets")
}

/// The ConfigMaps in namespace `default`.
pub fn configmaps_api(client: &kube::Client) -> Api<DynamicObject> {
    api(client, "", "ConfigMap", "configmaps")
}

/// Polls `check` until it holds, failing the test after [`EVENTUALLY`].
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + EVENTUALLY;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
