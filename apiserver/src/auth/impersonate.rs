//! Impersonation: `Impersonate-User` and `Impersonate-Group` make a request act as another
//! user (`kubectl --as`, `--as-group`), for callers allowed to `impersonate` that user and
//! those groups, as kube-apiserver's impersonation filter.

use http::HeaderMap;

use super::user::User;
use super::{Attributes, Authorization, ResourceAttributes, authorize};
use crate::error::{ApiError, ApiResult};
use crate::store::State;

/// The user a request acts as: the caller, or whom it impersonates when the caller may.
pub fn impersonate(
    mode: Authorization,
    state: &State,
    caller: User,
    headers: &HeaderMap,
) -> ApiResult<User> {
    let values = |name: &str| -> ApiResult<Vec<String>> {
        headers
            .get_all(name)
            .iter()
            .map(|v| {
                v.to_str()
                    .map(str::to_string)
                    .map_err(|_| ApiError::bad_request(format!("the {name} header is not text")))
            })
            .collect()
    };
    let users = values("Impersonate-User")?;
    let groups = values("Impersonate-Group")?;
    let Some(username) = users.first() else {
        if groups.is_empty() {
            return Ok(caller);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups without impersonating a user",
        ));
    };
    let allow = |resource: &str, namespace: &str, name: &str| {
        let attributes = Attributes {
            verb: "impersonate".into(),
            resource: Some(ResourceAttributes {
                group: String::new(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: namespace.into(),
                name: name.into(),
            }),
            path: String::new(),
        };
        authorize(mode, state, &caller, &attributes)
    };
    let account = username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    let mut user = match account {
        Some((namespace, name)) => {
            allow("serviceaccounts", namespace, name)?;
            let mut user = User::service_account(namespace, name, "");
            if !groups.is_empty() {
                user.groups.clear();
            }
            user
        }
        None => {
            allow("users", "", username)?;
            User {
                username: username.clone(),
                uid: String::new(),
                groups: Vec::new(),
            }
        }
    };
    for group in groups {
        allow("groups", "", &group)?;
        user.groups.push(group);
    }
    if !user.groups.iter().any(|g| g == "system:authenticated") {
        user.groups.push("system:authenticated".into());
    }
    Ok(user)
}
