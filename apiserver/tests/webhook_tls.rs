//! Webhook server certificates made with the `openssl` command line as tutorials make them
//! (`openssl req -x509`: self-signed, `CA:TRUE`, used as the server's own certificate and
//! listed in `caBundle`) are trusted as kube-apiserver (Go's crypto/x509) trusts them; a
//! certificate for another name, or one the bundle does not hold, is still refused.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use support::*;

/// `openssl req -x509` with a P-256 key, for `subject_alt_name`; returns (cert, key) PEM.
fn openssl_self_signed(dir: &Path, stem: &str, subject_alt_name: &str) -> (String, String) {
    openssl_req_x509(dir, stem, subject_alt_name, None)
}

/// `openssl req -x509` with a P-256 key for `subject_alt_name`, signed by the certificate
/// and key `issuer` names (`-CA`, `-CAkey`, files made by an earlier call) or self-signed;
/// returns (cert, key) PEM. Either way it is a `CA:TRUE` certificate, as openssl makes it.
fn openssl_req_x509(
    dir: &Path,
    stem: &str,
    subject_alt_name: &str,
    issuer: Option<&str>,
) -> (String, String) {
    let cert = dir.join(format!("{stem}.crt"));
    let key = dir.join(format!("{stem}.key"));
    let mut command = Command::new("openssl");
    command
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", &format!("/CN={stem}")])
        .args(["-addext", &format!("subjectAltName={subject_alt_name}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert);
    if let Some(issuer) = issuer {
        command
            .arg("-CA")
            .arg(dir.join(format!("{issuer}.crt")))
            .arg("-CAkey")
            .arg(dir.join(format!("{issuer}.key")));
    }
    let output = command
        .output()
        .expect("the openssl command line runs (it is needed for this test)");
    assert!(output.status.success(), "openssl: {output:?}");
    let read = |path: &Path| std::fs::read_to_string(path).unwrap();
    let (cert, key) = (read(&cert), read(&key));
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text"])
        .stdin(std::fs::File::open(dir.join(format!("{stem}.crt"))).unwrap())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("CA:TRUE"),
        "openssl req -x509 makes a CA certificate, as the issue describes"
    );
    if let Some(issuer) = issuer {
        assert!(text.contains(&format!("Issuer: CN = {issuer}")), "{text}");
    }
    (cert, key)
}

/// An HTTPS webhook on a free loopback port that denies every request with a message;
/// returns its URL.
async fn deny_all_webhook(cert_pem: &str, key_pem: &str) -> String {
    let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(deny);
                let io = hyper_util::rt::TokioIo::new(tls);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    format!("https://127.0.0.1:{port}/validate")
}

async fn deny(
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, hyper::Error> {
    let body = request.into_body().collect().await?.to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": false,
            "status": {"code": 403, "message": "denied by the openssl webhook"}}});
    Ok(http::Response::new(Full::new(Bytes::from(
        answer.to_string(),
    ))))
}

/// Registers a validating webhook on ConfigMap creation, trusting `ca_pem`, then creates
/// a ConfigMap; returns the refusal's message.
async fn refusal_through(client: &kube::Client, name: &str, url: &str, ca_pem: &str) -> String {
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name},
        "webhooks": [{"name": format!("{name}.example.com"),
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"test": name}},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    let uri = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let (code, body) = post_json(client, uri, &configuration.to_string()).await;
    assert_eq!(code, 201, "{body}");
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"test": name}}});
    let uri = "/api/v1/namespaces/default/configmaps";
    let (code, body) = post_json(client, uri, &config_map.to_string()).await;
    assert_ne!(code, 201, "the webhook refuses every ConfigMap: {body}");
    body["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openssl_self_signed_ca_certificate_is_trusted_as_go_trusts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_self_signed(dir.path(), "webhook", "IP:127.0.0.1,DNS:localhost");
    let url = deny_all_webhook(&cert, &key).await;
    let (_server, client) = server();
    let message = refusal_through(&client, "tutorial", &url, &cert).await;
    assert_eq!(
        message,
        "admission webhook \"tutorial.example.com\" denied the request: denied by the openssl webhook"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_for_another_name_or_not_in_the_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_self_signed(dir.path(), "elsewhere", "DNS:elsewhere.example.com");
    let url = deny_all_webhook(&cert, &key).await;
    let (_server, client) = server();
    let message = refusal_through(&client, "wrong-name", &url, &cert).await;
    assert!(
        message.contains("failed to call webhook")
            && message.contains("tls: failed to verify certificate"),
        "{message}"
    );
    assert!(message.contains("NotValidForName"), "{message}");

    let (good_cert, good_key) = openssl_self_signed(dir.path(), "server", "IP:127.0.0.1");
    let (other_ca, _) = openssl_self_signed(dir.path(), "other", "IP:127.0.0.1");
    let url = deny_all_webhook(&good_cert, &good_key).await;
    let message = refusal_through(&client, "untrusted", &url, &other_ca).await;
    assert!(
        message.contains("tls: failed to verify certificate"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_certificate_issued_by_a_bundle_certificate_is_trusted_as_go_trusts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, _) = openssl_self_signed(dir.path(), "tutorial-ca", "DNS:tutorial-ca");
    let (cert, key) = openssl_req_x509(dir.path(), "issued", "IP:127.0.0.1", Some("tutorial-ca"));
    let url = deny_all_webhook(&cert, &key).await;
    let (_server, client) = server();
    let message = refusal_through(&client, "issued", &url, &ca).await;
    assert_eq!(
        message,
        "admission webhook \"issued.example.com\" denied the request: denied by the openssl webhook"
    );

    // Signed by a CA the bundle does not hold: refused, whatever else the bundle holds.
    let (_, _) = openssl_self_signed(dir.path(), "stranger-ca", "DNS:stranger-ca");
    let (cert, key) = openssl_req_x509(dir.path(), "stranger", "IP:127.0.0.1", Some("stranger-ca"));
    let url = deny_all_webhook(&cert, &key).await;
    let message = refusal_through(&client, "stranger", &url, &ca).await;
    assert!(
        message.contains("tls: failed to verify certificate"),
        "{message}"
    );

    // Issued by the bundle's CA for another name: refused.
    let (cert, key) = openssl_req_x509(
        dir.path(),
        "misnamed",
        "DNS:elsewhere.example.com",
        Some("tutorial-ca"),
    );
    let url = deny_all_webhook(&cert, &key).await;
    let message = refusal_through(&client, "misnamed", &url, &ca).await;
    assert!(message.contains("NotValidForName"), "{message}");
}
