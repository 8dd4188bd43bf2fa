//! Which webhook server certificates are trusted: those Go's crypto/x509 accepts against
//! the `caBundle`, as kube-apiserver verifies them. webpki refuses a certificate with
//! `CA:TRUE` as a server's own certificate; Go accepts a certificate that is itself in the
//! bundle (the self-signed one `openssl req -x509` makes, which most tutorials use), still
//! checking its validity period and host name.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// webpki's verification, plus Go's acceptance of a bundle certificate used as is.
#[derive(Debug)]
pub(super) struct BundleVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
}

impl BundleVerifier {
    /// A verifier trusting exactly `bundle`.
    pub(super) fn new(
        bundle: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in &bundle {
            roots
                .add(certificate.clone())
                .map_err(|err| format!("invalid caBundle: {err}"))?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|err| format!("invalid caBundle: {err}"))?;
        Ok(BundleVerifier { webpki, bundle })
    }
}

/// Whether webpki refused the certificate only because it is a CA. webpki checks the
/// validity period before that, so such a certificate is within it.
fn is_ca_used_as_end_entity(error: &Error) -> bool {
    match error {
        Error::InvalidCertificate(CertificateError::Other(other)) => {
            other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
        }
        _ => false,
    }
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verdict = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verdict {
            Err(error)
                if is_ca_used_as_end_entity(&error)
                    && self.bundle.iter().any(|trusted| trusted == end_entity) =>
            {
                let certificate = webpki::EndEntityCert::try_from(end_entity)
                    .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
                certificate
                    .verify_is_valid_for_subject_name(server_name)
                    .map_err(|_| Error::InvalidCertificate(CertificateError::NotValidForName))?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}
