//! Who a request acts as (after impersonation) and whether it may: the request's
//! authorization attributes, checked under the server's authorization mode.

use axum::body::Body;
use http::Request;

use super::Shared;
use super::query::Query;
use super::resource::verb_of;
use super::route::Route;
use crate::auth::User;
use crate::auth::{self, Attributes, ResourceAttributes};
use crate::error::ApiResult;

/// The user `caller`'s request acts as, once it is allowed to; the 403 otherwise.
pub fn check(
    shared: &Shared,
    caller: User,
    request: &Request<Body>,
    route: &Route,
) -> ApiResult<User> {
    let mode = shared.config.authorization;
    let impersonates = ["Impersonate-User", "Impersonate-Group"]
        .iter()
        .any(|h| request.headers().contains_key(*h));
    if mode == auth::Authorization::AlwaysAllow && !impersonates {
        return Ok(caller);
    }
    let state = shared.state.read();
    let user = auth::impersonate(mode, &state, caller, request.headers())?;
    auth::authorize(mode, &state, &user, &attributes(request, route)?)?;
    Ok(user)
}

/// What a request asks to do, as kube's request-info resolver names it.
fn attributes(request: &Request<Body>, route: &Route) -> ApiResult<Attributes> {
    let Route::Resource(path) = route else {
        return Ok(Attributes {
            verb: request.method().as_str().to_lowercase(),
            resource: None,
            path: request.uri().path().to_string(),
        });
    };
    let query = Query::parse(request.uri().query());
    let verb = verb_of(request.method(), path.name.is_some(), &query)?;
    let name = path.name.clone().unwrap_or_default();
    // As kube: a request on a Namespace is in that namespace.
    let namespace = match (&path.namespace, path.group.as_str(), path.plural.as_str()) {
        (Some(ns), _, _) => ns.clone(),
        (None, "", "namespaces") => name.clone(),
        (None, _, _) => String::new(),
    };
    Ok(Attributes {
        verb: verb.to_string(),
        resource: Some(ResourceAttributes {
            group: path.group.clone(),
            resource: path.plural.clone(),
            subresource: path.subresource.clone().unwrap_or_default(),
            namespace,
            name,
        }),
        path: String::new(),
    })
}
