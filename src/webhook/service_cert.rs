//! The certificate of a webhook served behind a Service, shared by every replica: a
//! self-signed certificate for `NAME.NAMESPACE.svc` kept in the Secret `NAME-tls` (type
//! `kubernetes.io/tls`) of the Service's namespace. The first replica to start makes it;
//! the others, and later starts, read it. Delete the Secret and restart to replace it.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};

use super::CertSource;

/// Why the Service's certificate could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ServiceCertError {
    /// The Secret could not be read or created.
    #[error("the Secret {namespace}/{name}: {source}")]
    Secret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        source: Box<kube::Error>,
    },
    /// The Secret lacks `tls.crt` or `tls.key`, or they are not text.
    #[error("the Secret {namespace}/{name} has no PEM tls.crt and tls.key")]
    Incomplete {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The certificate could not be generated.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// The name of the Secret keeping the certificate of the Service `service`.
pub fn service_cert_secret(service: &str) -> String {
    format!("{service}-tls")
}

/// The certificate of the Service `namespace/service`, from its Secret, made (and stored)
/// when there is none.
pub async fn service_certificate(
    kube: &kube::Client,
    namespace: &str,
    service: &str,
) -> Result<CertSource, ServiceCertError> {
    let name = service_cert_secret(service);
    let secrets: Api<Secret> = Api::namespaced(kube.clone(), namespace);
    let api_error = |source: kube::Error| ServiceCertError::Secret {
        namespace: namespace.to_owned(),
        name: name.clone(),
        source: Box::new(source),
    };
    let stored = match secrets.get_opt(&name).await.map_err(api_error)? {
        Some(stored) => stored,
        None => {
            let made = new_secret(&name, namespace, service)?;
            match secrets.create(&PostParams::default(), &made).await {
                Ok(created) => created,
                // Another replica made it first: use that one.
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    secrets.get(&name).await.map_err(api_error)?
                }
                Err(err) => return Err(api_error(err)),
            }
        }
    };
    let field = |key: &str| {
        let data = stored.data.as_ref()?.get(key)?;
        String::from_utf8(data.0.clone()).ok()
    };
    match (field("tls.crt"), field("tls.key")) {
        (Some(cert), Some(key)) => Ok(CertSource::SelfSignedPem { cert, key }),
        _ => Err(ServiceCertError::Incomplete {
            namespace: namespace.to_owned(),
            name,
        }),
    }
}

/// A `kubernetes.io/tls` Secret holding a new self-signed certificate for the Service's
/// DNS names.
fn new_secret(name: &str, namespace: &str, service: &str) -> Result<Secret, rcgen::Error> {
    let host = format!("{service}.{namespace}.svc");
    let names = vec![host.clone(), format!("{host}.cluster.local")];
    let certified = rcgen::generate_simple_self_signed(names)?;
    let data = BTreeMap::from([
        (
            "tls.crt".to_owned(),
            ByteString(certified.cert.pem().into_bytes()),
        ),
        (
            "tls.key".to_owned(),
            ByteString(certified.signing_key.serialize_pem().into_bytes()),
        ),
    ]);
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Secret::default()
    })
}
