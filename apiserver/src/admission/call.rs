//! Posting an AdmissionReview to a webhook over HTTPS, trusting only its caBundle.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::hooks::Endpoint;
use super::trust::BundleVerifier;

/// Posts `review` to the endpoint and returns the review it answers, or why the call
/// failed, in the words kube-apiserver uses after `failed to call webhook: `.
pub(super) async fn call(
    endpoint: &Endpoint,
    review: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    let url = with_timeout(&endpoint.url, timeout);
    let failed = |reason: String| format!("Post {url:?}: {reason}");
    let posted = tokio::time::timeout(timeout, post(endpoint, &url, review)).await;
    let body = match posted {
        Err(_) => return Err(failed("context deadline exceeded".into())),
        Ok(result) => result.map_err(failed)?,
    };
    serde_json::from_slice(&body).map_err(|err| format!("received invalid webhook response: {err}"))
}

/// The URL with kube-apiserver's `timeout` query parameter.
fn with_timeout(url: &str, timeout: Duration) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}timeout={}s", timeout.as_secs())
}

/// One HTTPS POST on a new connection.
async fn post(endpoint: &Endpoint, url: &str, review: &Value) -> Result<Bytes, String> {
    let tls = tls_config(&endpoint.ca_bundle)?;
    let server_name = ServerName::try_from(endpoint.server_name.clone())
        .map_err(|err| format!("invalid host {:?}: {err}", endpoint.server_name))?;
    let tcp = tokio::net::TcpStream::connect(&endpoint.connect)
        .await
        .map_err(|err| format!("dial tcp {}: {err}", endpoint.connect))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(server_name, tcp)
        .await
        .map_err(|err| format!("tls: failed to verify certificate: {err}"))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|err| err.to_string())?;
    tokio::spawn(connection);
    let path = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| &url[i + 3 + j..]));
    let request = http::Request::post(path.unwrap_or("/"))
        .header(http::header::HOST, &endpoint.server_name)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(review.to_string())))
        .map_err(|err| err.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| err.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|err| err.to_string())?
        .to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(format!(
            "expected response code 200, got {}: {}",
            status.as_u16(),
            text.trim()
        ));
    }
    Ok(body)
}

/// A client configuration trusting exactly the certificates of `ca_bundle`, as Go does.
fn tls_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    let bundle = CertificateDer::pem_slice_iter(ca_bundle)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("invalid caBundle: {err}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = BundleVerifier::new(bundle, provider.clone())?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(config)
}
