//! ServiceAccount tokens (TokenRequest): JWTs signed with a per-server HMAC-SHA256 key,
//! read back by TokenReview and accepted as bearer tokens.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Value, json};

/// The issuer of every token, as kube-apiserver's default `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The audience a token gets when the request names none.
pub const DEFAULT_AUDIENCE: &str = ISSUER;

/// What a valid token says.
#[derive(Clone, Debug, PartialEq)]
pub struct Claims {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// The ServiceAccount's uid when the token was issued.
    pub uid: String,
    /// Audiences the token is for.
    pub audiences: Vec<String>,
}

/// Signs and checks tokens with one key per server.
pub struct Signer {
    key: hmac::Key,
}

impl Default for Signer {
    fn default() -> Self {
        Self::new()
    }
}

impl Signer {
    /// A signer with a fresh random key.
    pub fn new() -> Self {
        let secret: [u8; 32] = rand::random();
        Signer {
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
        }
    }

    /// A token for a ServiceAccount, valid from `now` (Unix seconds) for `seconds`.
    pub fn issue(&self, claims: &Claims, now: i64, seconds: i64) -> String {
        let header = json!({"alg": "HS256", "typ": "JWT"});
        let payload = json!({
            "aud": claims.audiences,
            "exp": now + seconds,
            "iat": now,
            "nbf": now,
            "iss": ISSUER,
            "sub": format!("system:serviceaccount:{}:{}", claims.namespace, claims.name),
            "kubernetes.io": {
                "namespace": claims.namespace,
                "serviceaccount": {"name": claims.name, "uid": claims.uid},
            },
        });
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(payload.to_string())
        );
        let signature = hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    /// The claims of a token this signer issued that has not expired at `now`.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, &'static str> {
        const INVALID: &str = "invalid bearer token";
        let (signed, signature) = token.rsplit_once('.').ok_or(INVALID)?;
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| INVALID)?;
        hmac::verify(&self.key, signed.as_bytes(), &signature).map_err(|_| INVALID)?;
        let (_, payload) = signed.split_once('.').ok_or(INVALID)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| INVALID)?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| INVALID)?;
        if payload["exp"].as_i64().is_none_or(|exp| exp <= now) {
            return Err("token has expired");
        }
        let account = &payload["kubernetes.io"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Ok(Claims {
            namespace: text(&account["namespace"]),
            name: text(&account["serviceaccount"]["name"]),
            uid: text(&account["serviceaccount"]["uid"]),
            audiences: payload["aud"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            namespace: "default".into(),
            name: "builder".into(),
            uid: "u1".into(),
            audiences: vec!["api".into()],
        }
    }

    #[test]
    fn a_token_verifies_until_it_expires_and_only_with_its_key() {
        let signer = Signer::new();
        let token = signer.issue(&claims(), 1000, 60);
        assert_eq!(signer.verify(&token, 1030), Ok(claims()));
        assert_eq!(signer.verify(&token, 1060), Err("token has expired"));
        assert!(Signer::new().verify(&token, 1030).is_err());
        assert!(signer.verify("not.a.token", 1030).is_err());
    }
}
