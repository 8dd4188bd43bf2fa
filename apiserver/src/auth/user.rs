//! Who a request comes from.

use serde_json::{Value, json};

/// Who a request comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    /// User name, e.g. `system:serviceaccount:default:builder`.
    pub username: String,
    /// The user's uid (a ServiceAccount's uid; empty for the administrator).
    pub uid: String,
    /// Groups the user belongs to.
    pub groups: Vec<String>,
}

impl User {
    /// The user every request without a ServiceAccount token is taken to come from: the
    /// cluster administrator, as kubeadm's admin kubeconfig names it, a member of
    /// `system:masters` (allowed everything).
    pub fn admin() -> Self {
        User {
            username: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec![
                "kubeadm:cluster-admins".into(),
                "system:masters".into(),
                "system:authenticated".into(),
            ],
        }
    }

    /// A ServiceAccount's user.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        User {
            username: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    /// `UserInfo` as TokenReview and SelfSubjectReview answer it.
    pub fn to_json(&self) -> Value {
        let mut info = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            info["uid"] = Value::from(self.uid.clone());
        }
        info
    }
}
