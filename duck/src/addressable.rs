use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Duck;

/// Any object that publishes an address at `status.address.url`.
///
/// ```
/// use dynrec_duck::{Addressable, Duck};
///
/// let object = serde_json::json!({
///     "kind": "Broker",
///     "status": {"address": {"url": "http://broker.default.svc"}}
/// });
/// let duck = Addressable::project(&object)?;
/// assert_eq!(duck.url(), Some("http://broker.default.svc"));
/// # Ok::<(), dynrec_duck::ProjectionError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Addressable {
    /// The object's status, as far as the duck knows it.
    #[serde(default)]
    pub status: AddressableStatus,
}

/// The address part of a status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AddressableStatus {
    /// Where the object can be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
}

/// A published address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// The address's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// An optional name distinguishing several addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Addressable {
    /// The published URL, if any.
    pub fn url(&self) -> Option<&str> {
        self.status.address.as_ref()?.url.as_deref()
    }
}

impl Duck for Addressable {
    const NAME: &'static str = "Addressable";
}
