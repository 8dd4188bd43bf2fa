//! The crash of `--crash-points`: a reactor that lets the first `k` writes of a reconcile
//! reach the server and then fails every later request, as if the process had died right
//! after write `k`; it also logs the writes it let through.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use super::reactor::{Action, ApiStatus, Reactor};
use crate::object::Gvk;

/// The message of every request refused after the crash.
pub(super) const CRASHED: &str = "the process crashed here (dynrec test --crash-points)";

/// One write a reconcile sent to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// `create`, `update`, `patch`, `apply`, `delete` or `deletecollection`.
    pub verb: String,
    /// The written kind.
    pub gvk: Gvk,
    /// The namespace, if any.
    pub namespace: Option<String>,
    /// The name (empty for a delete-collection).
    pub name: String,
    /// The subresource (`status`), if any.
    pub subresource: Option<String>,
}

impl fmt::Display for Write {
    /// `apply v1/ConfigMap default/web-config`, `update example.com/v1/Widget default/w1 status`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.verb, self.gvk)?;
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name)?,
            None => f.write_str(&self.name)?,
        }
        match &self.subresource {
            Some(subresource) => write!(f, " {subresource}"),
            None => Ok(()),
        }
    }
}

/// Counts and logs the writes that reach it; from the crash on, fails every request.
#[derive(Clone, Default)]
pub(super) struct CrashHook(Arc<Mutex<HookState>>);

#[derive(Default)]
struct HookState {
    crash_after: Option<usize>,
    writes: Vec<Write>,
}

impl CrashHook {
    /// A hook that crashes the process right after write `k` (never when `None`).
    pub(super) fn crashing_after(k: Option<usize>) -> Self {
        Self(Arc::new(Mutex::new(HookState {
            crash_after: k,
            writes: Vec::new(),
        })))
    }

    /// The writes let through so far, in order.
    pub(super) fn writes(&self) -> Vec<Write> {
        self.0.lock().writes.clone()
    }

    /// The reactor that does it: put it after the reactors that fail requests on purpose,
    /// so that it counts only the writes they let through.
    pub(super) fn reactor(&self) -> Reactor {
        let state = self.0.clone();
        Reactor::new(move |action| {
            let mut state = state.lock();
            let crashed = state.crash_after.is_some_and(|k| state.writes.len() >= k);
            if crashed {
                return Some(ApiStatus::new(500, "InternalError", CRASHED));
            }
            if let Some(write) = write_of(action) {
                state.writes.push(write);
            }
            None
        })
    }
}

/// The write an action makes; `None` for a read.
fn write_of(action: &Action) -> Option<Write> {
    let verb = match action.verb.as_str() {
        "patch" if action.apply => "apply",
        verb @ ("create" | "update" | "patch" | "delete" | "deletecollection") => verb,
        _ => return None,
    };
    Some(Write {
        verb: verb.to_string(),
        gvk: Gvk::new(&action.group, &action.version, &action.kind),
        namespace: action.namespace.clone(),
        name: action.name.clone().unwrap_or_default(),
        subresource: action.subresource.clone(),
    })
}
