//! Turning a request path into what it names.

/// What a request path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every group.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`: the resources of one group/version.
    ResourceList {
        /// API group ("" for core).
        group: String,
        /// API version.
        version: String,
    },
    /// A collection, an object or a subresource.
    Resource(ResourcePath),
    /// `/openapi/v3`: the index of OpenAPI documents.
    OpenApiIndex,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`.
    OpenApi {
        /// API group ("" for core).
        group: String,
        /// API version.
        version: String,
    },
}

/// The parts of a resource path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Object name, if any.
    pub name: Option<String>,
    /// Subresource, e.g. "status".
    pub subresource: Option<String>,
}

/// Parses a request path; `None` when it names nothing this server serves.
pub fn parse(path: &str) -> Option<Route> {
    let segments: Vec<&str> = path
        .trim_end_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segments.as_slice() {
        ["version"] => Some(Route::Version),
        ["healthz" | "livez" | "readyz", ..] => Some(Route::Health),
        ["api"] => Some(Route::CoreVersions),
        ["apis"] => Some(Route::Groups),
        ["apis", group] => Some(Route::Group(group.to_string())),
        ["api", version] => Some(Route::ResourceList {
            group: String::new(),
            version: version.to_string(),
        }),
        ["apis", group, version] => Some(Route::ResourceList {
            group: group.to_string(),
            version: version.to_string(),
        }),
        ["openapi", "v3"] => Some(Route::OpenApiIndex),
        ["openapi", "v3", "api", version] => Some(Route::OpenApi {
            group: String::new(),
            version: version.to_string(),
        }),
        ["openapi", "v3", "apis", group, version] => Some(Route::OpenApi {
            group: group.to_string(),
            version: version.to_string(),
        }),
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => None,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Option<Route> {
    let base = ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        ..ResourcePath::default()
    };
    let owned = |s: &&str| s.to_string();
    let path = match rest {
        // namespaces/{name}/status is the Namespace's own subresource.
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => ResourcePath {
            plural: "namespaces".into(),
            name: Some(name.to_string()),
            subresource: Some(sub.to_string()),
            ..base
        },
        ["namespaces", namespace, plural, tail @ ..] if tail.len() <= 2 => ResourcePath {
            plural: plural.to_string(),
            namespace: Some(namespace.to_string()),
            name: tail.first().map(owned),
            subresource: tail.get(1).map(owned),
            ..base
        },
        [plural, tail @ ..] if tail.len() <= 2 => ResourcePath {
            plural: plural.to_string(),
            name: tail.first().map(owned),
            subresource: tail.get(1).map(owned),
            ..base
        },
        _ => return None,
    };
    Some(Route::Resource(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse(path) {
            Some(Route::Resource(r)) => r,
            other => panic!("{path} parsed as {other:?}"),
        }
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(parse("/api"), Some(Route::CoreVersions));
        assert_eq!(parse("/apis/"), Some(Route::Groups));
        assert_eq!(parse("/apis/apps"), Some(Route::Group("apps".into())));
        assert_eq!(
            parse("/apis/apps/v1"),
            Some(Route::ResourceList {
                group: "apps".into(),
                version: "v1".into()
            })
        );
        assert_eq!(parse("/version"), Some(Route::Version));
        assert_eq!(parse("/nothing"), None);
        assert_eq!(parse("/openapi/v3"), Some(Route::OpenApiIndex));
        assert_eq!(
            parse("/openapi/v3/apis/example.com/v1"),
            Some(Route::OpenApi {
                group: "example.com".into(),
                version: "v1".into()
            })
        );
    }

    #[test]
    fn namespaced_and_cluster_paths() {
        let r = res("/api/v1/namespaces/demo/configmaps/cm1");
        assert_eq!(
            (r.plural.as_str(), r.namespace.as_deref(), r.name.as_deref()),
            ("configmaps", Some("demo"), Some("cm1"))
        );
        let r = res("/apis/example.com/v1/namespaces/demo/widgets/w1/status");
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let r = res("/api/v1/namespaces/demo");
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("demo"), None)
        );
        let r = res("/api/v1/namespaces/demo/status");
        assert_eq!(
            (r.name.as_deref(), r.subresource.as_deref()),
            (Some("demo"), Some("status"))
        );
        let r = res("/apis/apps/v1/deployments");
        assert_eq!((r.namespace, r.name), (None, None));
        assert_eq!(parse("/api/v1/namespaces/a/b/c/d/e"), None);
    }
}
