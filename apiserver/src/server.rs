//! The embedded API server: built once, reached in-process or over loopback HTTP.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::auth::{Authorization, TokenFileError, parse_token_file};
use crate::faults::{Fault, Faults};
use crate::http::{FrontConfig, Shared, router};
use crate::resources::ResourceKey;
use crate::store::{State, StorageError, Store, StoreConfig};
use crate::tls::TlsIdentity;

/// An in-memory Kubernetes API server. Cheap to clone: clones share one store.
#[derive(Clone)]
pub struct ApiServer {
    shared: Arc<Shared>,
}

/// Settings for an [`ApiServer`].
#[derive(Clone, Debug, Default)]
pub struct ApiServerBuilder {
    store: StoreConfig,
    front: FrontConfig,
    fault_seed: u64,
}

impl ApiServerBuilder {
    /// How many changes are kept for watches to resume from (older ones get 410 Gone).
    pub fn history_limit(mut self, changes: usize) -> Self {
        self.store.history_limit = changes.max(1);
        self
    }

    /// How many undelivered changes a watcher may hold before it is cut off.
    pub fn watch_buffer(mut self, changes: usize) -> Self {
        self.store.watch_buffer = changes.max(1);
        self
    }

    /// How often idle watches that allow bookmarks get one.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.front.bookmark_interval = interval;
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.front.token = Some(token.into());
        self
    }

    /// How requests are authorized (default: every request is allowed). With
    /// [`Authorization::Rbac`] and no [`token`](Self::token), a random administrator token
    /// is made, which [`ApiServer::client`] carries.
    pub fn authorization(mut self, mode: Authorization) -> Self {
        self.front.authorization = mode;
        self
    }

    /// Accepts the bearer tokens of a token file (kube-apiserver's `--token-auth-file`
    /// format: `token,user,uid[,"group1,group2"]` per line) as their users.
    pub fn token_file(mut self, text: &str) -> Result<Self, TokenFileError> {
        self.front.static_tokens.extend(parse_token_file(text)?);
        Ok(self)
    }

    /// The seed of the random source behind fault probabilities (default 0).
    pub fn fault_seed(mut self, seed: u64) -> Self {
        self.fault_seed = seed;
        self
    }

    /// Builds a server that keeps everything in memory.
    pub fn build(self) -> ApiServer {
        let state = State::new(self.store.clone());
        self.with_state(state)
    }

    /// Builds a server that keeps every object in `dir` (created when missing), starting
    /// from what is stored there; resourceVersions keep increasing across restarts.
    pub fn build_persistent(self, dir: &Path) -> Result<ApiServer, StorageError> {
        let state = State::open(self.store.clone(), dir)?;
        Ok(self.with_state(state))
    }

    fn with_state(mut self, state: State) -> ApiServer {
        if self.front.authorization == Authorization::Rbac && self.front.token.is_none() {
            let bytes: [u8; 16] = rand::random();
            self.front.token = Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
        }
        ApiServer {
            shared: Arc::new(Shared {
                state: Store::new(state),
                config: self.front,
                address: RwLock::new("127.0.0.1".into()),
                requests: Default::default(),
                faults: Faults::new(self.fault_seed),
                signer: crate::http::Signer::new(),
            }),
        }
    }
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ApiServer {
    /// A server with default settings, holding the default namespaces.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Settings for a new server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// The server as a tower `Service` (an axum `Router`).
    pub fn router(&self) -> axum::Router {
        router(self.shared.clone())
    }

    /// A `kube::Client` whose requests this server answers in-process, with no socket
    /// (it carries the server's token, if one is required).
    pub fn client(&self) -> kube::Client {
        self.client_with_token(self.shared.config.token.as_deref())
    }

    /// The administrator's bearer token, when the server requires one.
    pub fn admin_token(&self) -> Option<&str> {
        self.shared.config.token.as_deref()
    }

    /// An in-process `kube::Client` that sends `token` (e.g. a ServiceAccount's, from a
    /// TokenRequest), so its requests act as that token's user.
    pub fn client_with_token(&self, token: Option<&str>) -> kube::Client {
        let token = token.map(str::to_string);
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                if let Some(value) = token
                    .as_ref()
                    .and_then(|t| http::HeaderValue::from_str(&format!("Bearer {t}")).ok())
                {
                    request
                        .headers_mut()
                        .insert(http::header::AUTHORIZATION, value);
                }
                request
            })
            .service(self.router());
        kube::Client::new(service, "default")
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.state.read().resource_version()
    }

    /// Open watches per `group/plural` ("" group for core kinds).
    pub fn open_watches(&self) -> BTreeMap<String, usize> {
        self.shared
            .state
            .read()
            .open_watches()
            .into_iter()
            .map(|(key, n)| (format_key(&key), n))
            .collect()
    }

    /// How many requests with this verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`) the server has answered for a kind (`group` "" for core).
    pub fn request_count(&self, verb: &str, group: &str, plural: &str) -> u64 {
        let key = (verb.to_string(), group.to_string(), plural.to_string());
        self.shared.requests.lock().get(&key).copied().unwrap_or(0)
    }

    /// Stores fixture objects as given, bypassing admission (for test harnesses): a missing
    /// resourceVersion becomes "999", missing namespaces are created, and later writes get
    /// higher resourceVersions (the first is "1000"). Objects of kinds not served are refused.
    pub fn seed(
        &self,
        objects: impl IntoIterator<Item = serde_json::Value>,
    ) -> Result<(), crate::ApiError> {
        for object in objects {
            let api_version = object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (group, version) = api_version
                .rsplit_once('/')
                .unwrap_or(("", api_version.as_str()));
            let kind = object["kind"].as_str().unwrap_or_default().to_string();
            self.shared.state.transact(|state| {
                let info = state
                    .registry()
                    .in_group_version(group, version)
                    .into_iter()
                    .find(|info| info.kind == kind)
                    .ok_or_else(|| {
                        crate::ApiError::bad_request(format!(
                            "kind {api_version}/{kind} is not served"
                        ))
                    })?;
                state.seed(&info, object, 999)
            })?;
        }
        Ok(())
    }

    /// Injects a fault into matching requests; returns its id.
    pub fn add_fault(&self, fault: Fault) -> u64 {
        self.shared.faults.add(fault)
    }

    /// Removes an injected fault; whether it was still there.
    pub fn remove_fault(&self, id: u64) -> bool {
        self.shared.faults.remove(id)
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }

    /// Cuts off every open watch; clients resume from their last resourceVersion.
    pub fn close_all_watches(&self) {
        self.shared.state.write().close_all_watches();
    }

    /// Cuts off every open watch and ends every watch opened from now on, for a server that
    /// is stopping: a graceful shutdown waits for every open request, and clients resume a
    /// cut watch at once, so cutting them only once would leave the shutdown waiting on the
    /// resumed watches' timeouts.
    pub fn stop_watches(&self) {
        self.shared.state.write().stop_watches();
    }

    /// Records where the server is reached: for `/api` and in the `default/kubernetes`
    /// Endpoints and EndpointSlice.
    fn serving_at(&self, local: SocketAddr) {
        *self.shared.address.write() = local.to_string();
        let mut state = self.shared.state.write();
        state.set_api_endpoint(&local.ip().to_string(), local.port(), true);
        if let Err(err) = state.flush() {
            tracing::error!(%err, "cannot store the kubernetes Endpoints");
        }
    }

    /// Serves over HTTP on `address` until the returned handle is shut down or dropped.
    pub async fn serve(&self, address: SocketAddr) -> std::io::Result<Serving> {
        let listener = TcpListener::bind(address).await?;
        let local = listener.local_addr()?;
        self.serving_at(local);
        let (stop, stopped) = oneshot::channel::<()>();
        let app = self.router();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(err) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!(%err, "the API server stopped");
            }
        });
        Ok(Serving {
            address: local,
            scheme: "http",
            shared: self.shared.clone(),
            stop: Some(stop),
            task,
        })
    }

    /// Serves over HTTPS on `address` with `identity`, until the handle is shut down or dropped.
    pub async fn serve_tls(
        &self,
        address: SocketAddr,
        identity: &TlsIdentity,
    ) -> std::io::Result<Serving> {
        let listener = TcpListener::bind(address).await?;
        let local = listener.local_addr()?;
        self.serving_at(local);
        {
            let mut state = self.shared.state.write();
            state.set_root_ca(identity.certificate_pem());
            if let Err(err) = state.flush() {
                tracing::error!(%err, "cannot store the kube-root-ca.crt ConfigMaps");
            }
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(accept_tls(
            listener,
            identity.acceptor(),
            self.router(),
            stopped,
        ));
        Ok(Serving {
            address: local,
            scheme: "https",
            shared: self.shared.clone(),
            stop: Some(stop),
            task,
        })
    }
}

/// Accepts TLS connections and serves each with `app`, until `stopped` fires.
async fn accept_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(%err, "accept failed");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        connections.spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(tls) => tls,
                Err(err) => {
                    tracing::debug!(%err, %peer, "TLS handshake failed");
                    return;
                }
            };
            let io = hyper_util::rt::TokioIo::new(tls);
            if let Err(err) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(%err, %peer, "connection ended with an error");
            }
        });
    }
    connections.abort_all();
}

fn format_key(key: &ResourceKey) -> String {
    format!("{}/{}", key.group, key.plural)
}

/// A server listening on a socket.
pub struct Serving {
    address: SocketAddr,
    scheme: &'static str,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Serving {
    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its base URL, e.g. `http://127.0.0.1:41234` (or `https://...` when serving TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.address)
    }

    /// Stops accepting connections and waits for the server task to end. The server's watches
    /// are cut off, and a watch a client resumes meanwhile ends at once (see
    /// [`ApiServer::stop_watches`]), so an open `kubectl get -w` cannot hold the shutdown.
    pub async fn shutdown(mut self) {
        self.shared.state.write().stop_watches();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Waits until the server task ends (it ends only on shutdown or error).
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if self.stop.is_some() {
            self.task.abort();
        }
    }
}

/// A kubeconfig (JSON, which kubectl reads as YAML) for a server at `url`, with the
/// bearer token and the server certificate (for https) when given.
pub fn kubeconfig(url: &str, token: Option<&str>, certificate_pem: Option<&str>) -> String {
    use base64::Engine;
    let user = match token {
        Some(token) => json!({"token": token}),
        None => json!({}),
    };
    let mut cluster = json!({"server": url});
    if let Some(pem) = certificate_pem {
        cluster["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dynrec", "cluster": cluster}],
        "users": [{"name": "dynrec", "user": user}],
        "contexts": [{"name": "dynrec", "context": {"cluster": "dynrec", "user": "dynrec", "namespace": "default"}}],
        "current-context": "dynrec",
        "preferences": {},
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}
