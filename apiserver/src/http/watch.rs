//! Watches: a stream of newline-delimited watch events, resumable by resourceVersion,
//! with bookmarks, selectors and a time limit.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::list::{self, Selectors};
use super::negotiate::Representation;
use super::query::Query;
use super::{Shared, respond, table};
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::store::{Change, ChangeKind, Subscription, WatchStart};

/// A watch lasts at most this long when the client gives no `timeoutSeconds`.
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What one watcher wants to see.
struct Filter {
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    selectors: Selectors,
    representation: Representation,
    /// The table columns, when the client asked for tables.
    columns: Vec<table::Column>,
}

impl Filter {
    fn matches(&self, object: &Value) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| meta::namespace(object) == ns)
            && self.selectors.matches(object)
    }

    /// The event this watcher sees for a change, if any. A modification that moves an
    /// object into or out of the selection is seen as ADDED or DELETED.
    fn event(&self, change: &Change) -> Option<Bytes> {
        let object = change.object();
        let now = self.matches(&object);
        let kind = match change.kind {
            ChangeKind::Added if now => "ADDED",
            ChangeKind::Deleted if now => "DELETED",
            ChangeKind::Modified => {
                let before = change.previous().is_some_and(|p| self.matches(&p));
                match (before, now) {
                    (true, true) => "MODIFIED",
                    (false, true) => "ADDED",
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
            _ => return None,
        };
        let object = match self.representation {
            Representation::Table => {
                let rv = meta::resource_version(&object);
                table::table(&self.columns, &[&object], rv)
            }
            other => list::render(&object, &self.info, other),
        };
        Some(line(&json!({"type": kind, "object": object})))
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let (api_version, kind) = match self.representation {
            Representation::Full => (self.info.api_version(), self.info.kind.clone()),
            Representation::Table => ("meta.k8s.io/v1".into(), "Table".into()),
            Representation::Metadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()),
        };
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            &json!({"type": "BOOKMARK", "object": {"apiVersion": api_version, "kind": kind, "metadata": metadata}}),
        )
    }
}

fn line(event: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&respond::ordered(event)).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// How the watch was asked for.
struct WatchParams {
    start: WatchStart,
    bookmarks: bool,
    initial_events_end: bool,
    timeout: Duration,
}

fn params(query: &Query) -> ApiResult<WatchParams> {
    let send_initial = query.flag("sendInitialEvents")?;
    let start = match query.get("resourceVersion") {
        _ if send_initial => WatchStart::Snapshot,
        None | Some("0") => WatchStart::Snapshot,
        Some(rv) => WatchStart::After(rv.parse().map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: must be a number"))
        })?),
    };
    let timeout = query
        .number("timeoutSeconds")?
        .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
    Ok(WatchParams {
        start,
        bookmarks: query.flag("allowWatchBookmarks")?,
        initial_events_end: send_initial,
        timeout,
    })
}

/// Starts a watch and answers with its stream.
pub fn serve(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    query: &Query,
    representation: Representation,
) -> ApiResult<Response<Body>> {
    let params = params(query)?;
    let filter = Filter {
        info: info.clone(),
        namespace: namespace.map(str::to_string),
        selectors: Selectors::from_query(query, info)?,
        representation,
        columns: match representation {
            Representation::Table => {
                table::columns(shared.state.read().printer_columns(info).as_ref())
            }
            _ => Vec::new(),
        },
    };
    let subscription = shared.state.write().subscribe(&info.key(), params.start);
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    match subscription {
        Ok(subscription) => {
            tokio::spawn(run(shared.clone(), filter, params, subscription, sender));
        }
        Err(error) => {
            // kube-apiserver answers an expired resourceVersion with an ERROR event.
            let event = line(&json!({"type": "ERROR", "object": error.to_status()}));
            let _ = sender.try_send(Ok(event));
        }
    }
    let body = Body::from_stream(ReceiverStream::new(receiver));
    Ok(respond::with_type(200, "application/json", body))
}

/// Feeds one watch until it times out, the client goes away, or the store cuts it off.
async fn run(
    shared: Arc<Shared>,
    filter: Filter,
    params: WatchParams,
    subscription: Subscription,
    out: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let Subscription {
        initial,
        initial_rv,
        mut live,
    } = subscription;
    for change in &initial {
        if let Some(event) = filter.event(change)
            && out.send(Ok(event)).await.is_err()
        {
            return;
        }
    }
    if params.initial_events_end
        && out
            .send(Ok(filter.bookmark(initial_rv, true)))
            .await
            .is_err()
    {
        return;
    }
    let deadline = tokio::time::sleep(params.timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(shared.config.bookmark_interval);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = out.closed() => return,
            change = live.recv() => {
                let Some(change) = change else { return };
                if let Some(event) = filter.event(&change)
                    && out.send(Ok(event)).await.is_err()
                {
                    return;
                }
            }
            _ = ticker.tick(), if params.bookmarks => {
                // Every change up to `current` is already queued for this watcher: drain the
                // queue, then the bookmark is truthful.
                let current = shared.state.read().resource_version();
                loop {
                    match live.try_recv() {
                        Ok(change) => {
                            if let Some(event) = filter.event(&change)
                                && out.send(Ok(event)).await.is_err()
                            {
                                return;
                            }
                        }
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        // Cut off: changes were lost, so no bookmark; the client resumes.
                        Err(mpsc::error::TryRecvError::Disconnected) => return,
                    }
                }
                if out.send(Ok(filter.bookmark(current, false))).await.is_err() {
                    return;
                }
            }
        }
    }
}
