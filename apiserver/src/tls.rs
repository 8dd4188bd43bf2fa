//! TLS for the HTTP server: a self-signed certificate made at start-up.
//!
//! kubectl (client-go) sends a bearer token only over https, so a server that requires a
//! token must serve TLS; the certificate goes into the kubeconfig as the cluster's CA.

use std::sync::Arc;

/// Why a TLS identity could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate could not be generated.
    #[error("cannot generate a self-signed certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate or settings.
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
}

/// A server certificate with its key, ready to serve TLS.
#[derive(Clone)]
pub struct TlsIdentity {
    certificate_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl TlsIdentity {
    /// A self-signed certificate valid for `names` (DNS names or IP addresses) plus
    /// `localhost` and `127.0.0.1`.
    pub fn self_signed(names: &[String]) -> Result<Self, TlsError> {
        let mut subject_alt_names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        for name in names {
            if !subject_alt_names.contains(name) {
                subject_alt_names.push(name.clone());
            }
        }
        let certified = rcgen::generate_simple_self_signed(subject_alt_names)?;
        let certificate_der = certified.cert.der().clone();
        let key_der =
            rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![certificate_der], key_der)?;
        Ok(TlsIdentity {
            certificate_pem: certified.cert.pem(),
            config: Arc::new(config),
        })
    }

    /// The certificate in PEM form, for a kubeconfig's `certificate-authority-data`.
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The acceptor that wraps incoming connections.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }
}

/// The PEM certificate every namespace's `kube-root-ca.crt` ConfigMap carries: one
/// self-signed certificate per process (empty if it cannot be made).
pub(crate) fn root_ca_pem() -> &'static str {
    static ROOT_CA: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        rcgen::generate_simple_self_signed(vec!["kubernetes".to_string()])
            .map(|certified| certified.cert.pem())
            .unwrap_or_default()
    });
    &ROOT_CA
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_identity_has_a_pem_certificate() {
        let identity = TlsIdentity::self_signed(&["example.internal".into()]).unwrap();
        assert!(
            identity
                .certificate_pem()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
    }
}
