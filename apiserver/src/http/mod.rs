//! The REST front end: routes Kubernetes API requests to the store.

mod admit;
mod aggregated;
mod authorize;
mod body;
pub(crate) mod builtin;
mod call;
mod componentstatus;
mod deleted;
mod discovery;
mod list;
mod negotiate;
mod openapi;
mod protobuf;
mod query;
mod resource;
mod respond;
mod reviews;
mod route;
mod scale;
mod subresource;
mod table;
mod tokens;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State as AxumState;
use http::{Method, Request, Response};
use parking_lot::RwLock;

use crate::auth::User;
use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use route::Route;

pub use discovery::KUBERNETES_MINOR;
pub use tokens::Signer;

/// Settings of the front end.
#[derive(Clone, Debug)]
pub struct FrontConfig {
    /// How often an idle watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// A bearer token every request must carry, if set.
    pub token: Option<String>,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How requests are authorized.
    pub authorization: crate::auth::Authorization,
    /// Users of static bearer tokens (a token file), by token.
    pub static_tokens: BTreeMap<String, User>,
}

impl Default for FrontConfig {
    fn default() -> Self {
        FrontConfig {
            bookmark_interval: Duration::from_secs(10),
            token: None,
            max_body_bytes: 3 * 1024 * 1024,
            authorization: crate::auth::Authorization::default(),
            static_tokens: BTreeMap::new(),
        }
    }
}

/// What every request handler shares: the store and the settings.
pub struct Shared {
    /// The store, behind one lock.
    pub state: Store,
    /// Front-end settings.
    pub config: FrontConfig,
    /// The address clients reach the server at, for `/api`.
    pub address: RwLock<String>,
    /// Faults to inject.
    pub faults: crate::faults::Faults,
    /// Requests served, by (verb, group, plural).
    pub requests: parking_lot::Mutex<BTreeMap<(String, String, String), u64>>,
    /// Signs and checks ServiceAccount tokens.
    pub signer: tokens::Signer,
}

impl Shared {
    /// Counts one request on a kind.
    fn record(&self, verb: &str, group: &str, plural: &str) {
        *self
            .requests
            .lock()
            .entry((verb.to_string(), group.to_string(), plural.to_string()))
            .or_default() += 1;
    }
}

/// The tower service of the server: an axum router that answers every path.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

async fn handle(
    AxumState(shared): AxumState<Arc<Shared>>,
    request: Request<Body>,
) -> Response<Body> {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let response = match dispatch(&shared, request).await {
        Ok(response) => response,
        Err(error) => respond::error(&error),
    };
    tracing::debug!(%method, %path, status = response.status().as_u16(), "request");
    response
}

async fn dispatch(shared: &Arc<Shared>, mut request: Request<Body>) -> ApiResult<Response<Body>> {
    let caller = authenticate(shared, &request)?;
    let path = request.uri().path().to_string();
    let route = route::parse(&path).ok_or_else(|| ApiError::no_such_path(&path))?;
    let user = authorize::check(shared, caller, &request, &route)?;
    request.extensions_mut().insert(user);
    if request.method() != Method::GET && !matches!(route, Route::Resource(_)) {
        return Err(ApiError::method_not_allowed(format!(
            "{} is not supported on {path}",
            request.method()
        )));
    }
    let found = |doc: Option<serde_json::Value>| {
        doc.map(|d| respond::json(200, &d))
            .ok_or_else(|| ApiError::no_such_path(&path))
    };
    let accept = request.headers().get(http::header::ACCEPT);
    if let Some(version) = aggregated::requested(accept.and_then(|v| v.to_str().ok()))
        && matches!(route, Route::CoreVersions | Route::Groups)
    {
        let state = shared.state.read();
        return Ok(aggregated::respond(
            state.registry(),
            route == Route::CoreVersions,
            version,
        ));
    }
    match route {
        Route::Version => Ok(respond::json(200, &discovery::version())),
        Route::Health => Ok(respond::text(200, "ok")),
        Route::CoreVersions => Ok(respond::json(
            200,
            &discovery::core_versions(&shared.address.read()),
        )),
        Route::Groups => Ok(respond::json(
            200,
            &discovery::groups(shared.state.read().registry()),
        )),
        Route::Group(group) => found(discovery::group(shared.state.read().registry(), &group)),
        Route::ResourceList { group, version } => found(discovery::resource_list(
            shared.state.read().registry(),
            &group,
            &version,
        )),
        Route::OpenApiIndex => Ok(respond::json(200, &openapi::index(&shared.state.read()))),
        Route::OpenApi { group, version } => found(openapi::group_version(
            &shared.state.read(),
            &group,
            &version,
        )),
        Route::Resource(target) => resource::serve(shared, target, request).await,
    }
}

/// Who a request comes from: a ServiceAccount when it carries a token this server issued,
/// the user of a static token, else the administrator; with a server token set, any other
/// request is 401.
fn authenticate(shared: &Shared, request: &Request<Body>) -> ApiResult<User> {
    let given = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = given
        && let Ok((user, _)) = reviews::authenticate(shared, token)
    {
        return Ok(user);
    }
    if let Some(user) = given.and_then(|token| shared.config.static_tokens.get(token)) {
        return Ok(user.clone());
    }
    match &shared.config.token {
        Some(token) if given != Some(token.as_str()) => Err(ApiError::unauthorized()),
        _ => Ok(User::admin()),
    }
}
