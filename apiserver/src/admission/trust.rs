//! Which webhook server certificates are trusted: those Go's crypto/x509 accepts against
//! the `caBundle`, as kube-apiserver verifies them. webpki refuses a certificate with
//! `CA:TRUE` as a server's own certificate; Go does not look at a leaf's basic constraints,
//! so it accepts such a certificate when it is itself in the bundle (the self-signed one
//! `openssl req -x509` makes, which most tutorials use) or is signed by a certificate of the
//! bundle (`openssl req -x509 -CA ca.crt -CAkey ca.key`), still checking its validity period
//! and host name.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, SignatureVerificationAlgorithm, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// webpki's verification, plus Go's acceptance of a `CA:TRUE` server certificate that is in
/// the bundle or signed by one of its certificates.
#[derive(Debug)]
pub(super) struct BundleVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
    algorithms: &'static [&'static dyn SignatureVerificationAlgorithm],
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
        let algorithms = provider.signature_verification_algorithms.all;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|err| format!("invalid caBundle: {err}"))?;
        Ok(BundleVerifier {
            webpki,
            bundle,
            algorithms,
        })
    }

    /// Whether the bundle holds `certificate`, or a certificate whose key signed it.
    fn trusts(&self, certificate: &CertificateDer<'_>) -> bool {
        if self.bundle.iter().any(|trusted| trusted == certificate) {
            return true;
        }
        let Some(signed) = Signed::parse(certificate) else {
            return false;
        };
        let algorithms = || {
            self.algorithms
                .iter()
                .filter(|algorithm| algorithm.signature_alg_id().as_ref() == signed.algorithm)
        };
        self.bundle.iter().any(|issuer| {
            let Ok(issuer) = webpki::EndEntityCert::try_from(issuer) else {
                return false;
            };
            algorithms().any(|algorithm| {
                issuer
                    .verify_signature(*algorithm, signed.tbs, signed.signature)
                    .is_ok()
            })
        })
    }
}

/// A certificate as X.509 signs it (RFC 5280 4.1): the whole `tbsCertificate` element, the
/// contents of `signatureAlgorithm` (what webpki's algorithm identifiers hold) and the
/// signature.
struct Signed<'a> {
    tbs: &'a [u8],
    algorithm: &'a [u8],
    signature: &'a [u8],
}

impl<'a> Signed<'a> {
    const SEQUENCE: u8 = 0x30;
    const BIT_STRING: u8 = 0x03;

    fn parse(der: &'a [u8]) -> Option<Self> {
        let (certificate, _, _) = element(der, Self::SEQUENCE)?;
        let (_, tbs, rest) = element(certificate, Self::SEQUENCE)?;
        let (algorithm, _, rest) = element(rest, Self::SEQUENCE)?;
        let (bits, _, _) = element(rest, Self::BIT_STRING)?;
        // A signature is a whole number of bytes: no unused bits.
        let (0, signature) = bits.split_first()? else {
            return None;
        };
        Some(Signed {
            tbs,
            algorithm,
            signature,
        })
    }
}

/// The DER element with tag `tag` at the start of `input`: its contents, its whole encoding
/// and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8], &[u8])> {
    let (&found, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (bytes, rest) = rest.split_at(count);
        let length = bytes.iter().fold(0, |n, byte| n << 8 | usize::from(*byte));
        (length, rest)
    };
    if found != tag || rest.len() < length {
        return None;
    }
    let header = input.len() - rest.len();
    let (contents, after) = rest.split_at(length);
    Some((contents, &input[..header + length], after))
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
            Err(error) if is_ca_used_as_end_entity(&error) && self.trusts(end_entity) => {
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
