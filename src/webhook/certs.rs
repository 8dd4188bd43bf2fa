//! The webhook server's certificate: self-signed at start for local use, or read from
//! PEM files and read again when they change (as cert-manager rotates them).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The self-signed certificate could not be generated.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A certificate or key file could not be read or parsed.
    #[error("cannot read {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the key.
    #[error("cannot use the private key: {0}")]
    Key(#[from] rustls::Error),
}

/// Where the server's certificate comes from.
#[derive(Clone, Debug)]
pub enum CertSource {
    /// A certificate generated at start, valid for these names (DNS names or IP
    /// addresses) plus `localhost` and `127.0.0.1`.
    SelfSigned(Vec<String>),
    /// PEM files (certificate chain and private key), read again at the next TLS
    /// handshake after either file changes.
    Files {
        /// The certificate chain, e.g. `tls.crt`.
        cert: PathBuf,
        /// The private key, e.g. `tls.key`.
        key: PathBuf,
    },
    /// A self-signed certificate and its key, as PEM (one kept in a Secret, see
    /// [`service_certificate`](super::service_certificate)): clients trust the certificate
    /// itself.
    SelfSignedPem {
        /// The certificate.
        cert: String,
        /// The private key.
        key: String,
    },
}

impl CertSource {
    /// The resolver serving this source's certificate, and the PEM of the certificate
    /// clients must trust when it is self-signed (a webhook configuration's caBundle).
    pub(super) fn resolver(
        &self,
    ) -> Result<(Arc<dyn ResolvesServerCert>, Option<String>), CertError> {
        match self {
            CertSource::SelfSigned(names) => {
                let mut alt_names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
                alt_names.extend(
                    names
                        .iter()
                        .filter(|n| !alt_names.contains(n))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                let certified = rcgen::generate_simple_self_signed(alt_names)?;
                let key = PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
                let certified_key = CertifiedKey::new(
                    vec![certified.cert.der().clone()],
                    any_supported_type(&key)?,
                );
                let resolver = Fixed(Arc::new(certified_key));
                Ok((Arc::new(resolver), Some(certified.cert.pem())))
            }
            CertSource::Files { cert, key } => {
                let files = Files::load(cert.clone(), key.clone())?;
                Ok((Arc::new(files), None))
            }
            CertSource::SelfSignedPem { cert, key } => {
                let invalid = |what: &str, err: rustls::pki_types::pem::Error| CertError::File {
                    path: PathBuf::from(what),
                    reason: err.to_string(),
                };
                let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|err| invalid("the certificate", err))?;
                let private = PrivateKeyDer::from_pem_slice(key.as_bytes())
                    .map_err(|err| invalid("the private key", err))?;
                let certified = CertifiedKey::new(chain, any_supported_type(&private)?);
                Ok((Arc::new(Fixed(Arc::new(certified))), Some(cert.clone())))
            }
        }
    }
}

/// One certificate for every handshake.
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A certificate read from files, with the modification times it was read at.
struct Files {
    cert: PathBuf,
    key: PathBuf,
    loaded: Mutex<(Stamp, Arc<CertifiedKey>)>,
}

/// The modification times of the two files.
type Stamp = (Option<SystemTime>, Option<SystemTime>);

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Files")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish()
    }
}

impl Files {
    fn load(cert: PathBuf, key: PathBuf) -> Result<Self, CertError> {
        let stamp = stamp(&cert, &key);
        let certified = read(&cert, &key)?;
        Ok(Self {
            cert,
            key,
            loaded: Mutex::new((stamp, certified)),
        })
    }
}

impl ResolvesServerCert for Files {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = stamp(&self.cert, &self.key);
        let mut loaded = self.loaded.lock();
        if loaded.0 != now {
            // A rotation may be half-written: keep serving the old pair until both parse.
            match read(&self.cert, &self.key) {
                Ok(certified) => {
                    tracing::info!(cert = %self.cert.display(), "webhook certificate reloaded");
                    *loaded = (now, certified);
                }
                Err(err) => tracing::warn!(%err, "webhook certificate not reloaded"),
            }
        }
        Some(loaded.1.clone())
    }
}

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (modified(cert), modified(key))
}

/// Reads a PEM certificate chain and private key.
fn read(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, CertError> {
    let file_error = |path: &Path, reason: String| CertError::File {
        path: path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| file_error(cert, err.to_string()))?;
    if chain.is_empty() {
        return Err(file_error(cert, "no certificate in the file".into()));
    }
    let private =
        PrivateKeyDer::from_pem_file(key).map_err(|err| file_error(key, err.to_string()))?;
    Ok(Arc::new(CertifiedKey::new(
        chain,
        any_supported_type(&private)?,
    )))
}
