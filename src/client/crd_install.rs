//! Installing a CustomResourceDefinition: apply it, then wait until its kinds are served.

use std::time::Duration;

use kube::api::DynamicObject;

use super::crd::declared_kinds;
use super::{Client, Error};

/// How long [`Client::install_crd`] waits for the kinds of a CRD to be served.
pub const CRD_SERVED_TIMEOUT: Duration = Duration::from_secs(30);

impl Client {
    /// Installs a CustomResourceDefinition: applies it server-side as `field_manager` (taking
    /// over conflicting fields, as `kubectl apply --server-side --force-conflicts` does), then
    /// waits until it is Established and every version it serves is served, at most
    /// [`CRD_SERVED_TIMEOUT`]. Returns the CRD as applied.
    ///
    /// ```no_run
    /// # async fn install(client: dynrec::client::Client) -> Result<(), dynrec::client::Error> {
    /// let crd = serde_json::from_value(serde_json::json!({
    ///     "apiVersion": "apiextensions.k8s.io/v1",
    ///     "kind": "CustomResourceDefinition",
    ///     "metadata": {"name": "widgets.example.com"},
    ///     "spec": {
    ///         "group": "example.com", "scope": "Namespaced",
    ///         "names": {"kind": "Widget", "plural": "widgets"},
    ///         "versions": [{"name": "v1", "served": true, "storage": true,
    ///             "schema": {"openAPIV3Schema": {"type": "object",
    ///                 "x-kubernetes-preserve-unknown-fields": true}}}]
    ///     }
    /// }))?;
    /// client.install_crd(&crd, "my-controller").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn install_crd(
        &self,
        crd: &DynamicObject,
        field_manager: &str,
    ) -> Result<DynamicObject, Error> {
        let applied = self.apply(crd, field_manager, true).await?;
        for kind in declared_kinds(&applied) {
            let served =
                tokio::time::timeout(CRD_SERVED_TIMEOUT, self.resolver().wait_for(&kind.gvk));
            match served.await {
                Ok(resolved) => resolved?,
                Err(_) => {
                    return Err(Error::CrdNotServed {
                        crd: applied.metadata.name.clone().unwrap_or_default(),
                        gvk: kind.gvk,
                        waited: CRD_SERVED_TIMEOUT,
                    });
                }
            };
        }
        Ok(applied)
    }
}
