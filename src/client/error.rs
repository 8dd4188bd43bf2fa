use crate::object::{Gvk, GvkError, ObjectKey, ObjectKeyError, PathError};

/// A client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Discovery does not know the kind.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The object does not exist (in the API or, for a cache-backed read, in the cache).
    #[error("{gvk} {key} not found")]
    NotFound {
        /// The object's kind.
        gvk: Gvk,
        /// The object's key.
        key: ObjectKey,
    },
    /// The API server refused or failed the request.
    #[error(transparent)]
    Api(Box<RequestFailure>),
    /// A namespaced kind was addressed without a namespace.
    #[error("{gvk} is namespaced: {key} needs a namespace")]
    NamespaceRequired {
        /// The kind.
        gvk: Gvk,
        /// The key without a namespace.
        key: ObjectKey,
    },
    /// The object has no usable apiVersion/kind.
    #[error(transparent)]
    Gvk(#[from] GvkError),
    /// The object has no name.
    #[error(transparent)]
    Key(#[from] ObjectKeyError),
    /// A duck write needs the resourceVersion of the object as read.
    #[error("{gvk} {key} has no resourceVersion to guard the patch with")]
    MissingResourceVersion {
        /// The kind.
        gvk: Gvk,
        /// The object.
        key: ObjectKey,
    },
    /// An object could not be read as a duck.
    #[error(transparent)]
    Projection(Box<ProjectionFailure>),
    /// A field of an object could not be read or written.
    #[error(transparent)]
    Path(#[from] PathError),
    /// An object could not be turned into JSON.
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be read from JSON or written as JSON (what `?` on a serde_json
    /// call gives).
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A CustomResourceDefinition was applied but one of its kinds was not served in time.
    #[error(
        "CustomResourceDefinition {crd} was applied but {gvk} was not served within {}s: \
         the CRD's conditions (kubectl get crd {crd} -o yaml) say why it is not Established",
        waited.as_secs()
    )]
    CrdNotServed {
        /// The CRD's name.
        crd: String,
        /// The kind not served.
        gvk: Gvk,
        /// How long was waited.
        waited: std::time::Duration,
    },
}

impl Error {
    /// The HTTP status code of an API error, if this is one (404 for [`Error::NotFound`]).
    pub fn code(&self) -> Option<u16> {
        match self {
            Error::NotFound { .. } => Some(404),
            Error::Api(err) => match &err.source {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            _ => None,
        }
    }

    /// The API server's `Status` answer, if this is an API error with one.
    pub fn status(&self) -> Option<&kube::core::Status> {
        match self {
            Error::Api(err) => match &err.source {
                kube::Error::Api(status) => Some(status),
                _ => None,
            },
            _ => None,
        }
    }

    /// The message of an API error as the server wrote it (`configmaps "cm" already
    /// exists`), else the error itself: for conditions and events, without what was
    /// attempted.
    pub fn server_message(&self) -> String {
        match self {
            Error::Api(err) => match &err.source {
                kube::Error::Api(status) => status.message.clone(),
                other => other.to_string(),
            },
            other => other.to_string(),
        }
    }

    /// Whether the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Whether the write lost an optimistic-concurrency race (409 Conflict).
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409) && !self.is_already_exists()
    }

    /// Whether a create found the name taken.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::Api(err) if matches!(&err.source, kube::Error::Api(status) if status.reason == "AlreadyExists"))
    }
}

/// The API server refused or failed a request. It displays as what was attempted and the
/// server's answer: `create v1/ConfigMap: configmaps "cm" already exists (AlreadyExists)`,
/// never kube's `Debug` dump of the `Status`.
#[derive(Debug, thiserror::Error)]
#[error("{verb} {gvk}{}: {}", key.as_ref().map(|k| format!(" {k}")).unwrap_or_default(), self.message())]
pub struct RequestFailure {
    /// What was attempted: `get`, `create`, `patch`, ...
    pub verb: &'static str,
    /// The kind it was attempted on.
    pub gvk: Gvk,
    /// The object, for single-object calls.
    pub key: Option<ObjectKey>,
    /// The server's answer.
    #[source]
    pub source: kube::Error,
}

impl RequestFailure {
    /// The server's answer: its `Status` message and reason (`... already exists
    /// (AlreadyExists)`), or the transport error when there was no answer.
    pub fn message(&self) -> String {
        match &self.source {
            kube::Error::Api(status) if status.reason.is_empty() => status.message.clone(),
            kube::Error::Api(status) => format!("{} ({})", status.message, status.reason),
            other => other.to_string(),
        }
    }
}

impl From<RequestFailure> for Error {
    fn from(err: RequestFailure) -> Self {
        Error::Api(Box::new(err))
    }
}

/// An object could not be read as a duck.
#[derive(Debug, thiserror::Error)]
#[error("{gvk} {key}: {source}")]
pub struct ProjectionFailure {
    /// The object's kind.
    pub gvk: Gvk,
    /// The object.
    pub key: ObjectKey,
    /// What did not fit, and where.
    #[source]
    pub source: dynrec_duck::ProjectionError,
}

impl From<ProjectionFailure> for Error {
    fn from(err: ProjectionFailure) -> Self {
        Error::Projection(Box::new(err))
    }
}

/// A GVK could not be resolved to an API resource.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Discovery does not serve the kind.
    #[error("unknown kind {gvk}: {}", describe_available(&gvk.group, available))]
    UnknownKind {
        /// The kind asked for.
        gvk: Gvk,
        /// What discovery serves in the kind's group, as `version/Kind`.
        available: Vec<String>,
    },
    /// Discovery itself failed.
    #[error("discovery of group {group:?} failed: {source}")]
    Discovery {
        /// The group being discovered.
        group: String,
        /// The failure.
        #[source]
        source: kube::Error,
    },
}

fn describe_available(group: &str, available: &[String]) -> String {
    let group = if group.is_empty() { "core" } else { group };
    if available.is_empty() {
        format!("the API server serves no group {group:?}")
    } else {
        format!("group {group:?} serves {}", available.join(", "))
    }
}
