//! Requests on collections, objects and subresources.

use std::sync::Arc;

use axum::body::Body;
use http::{Method, Request, Response, header};
use serde_json::{Value, json};

use super::body::{patch_body, read_object, read_optional_body, read_optional_json, read_patch};
use super::call::Call;
use super::list::{self, Selectors};
use super::negotiate::{self, Representation};
use super::query::Query;
use super::route::ResourcePath;
use super::{Shared, admit, componentstatus, deleted, respond, reviews, subresource, table, watch};
use crate::auth::{Authorization, User};
use crate::error::{ApiError, ApiResult};
use crate::faults::{RequestFacts, Verdict};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::store::{DeleteOptions, DeleteOutcome, Propagation, Target};

/// Serves a request on a collection, object or subresource; a request at a deprecated
/// CRD version gets its deprecation `Warning`, whatever the answer.
pub async fn serve(
    shared: &Arc<Shared>,
    path: ResourcePath,
    request: Request<Body>,
) -> ApiResult<Response<Body>> {
    let info = shared
        .state
        .read()
        .registry()
        .get(&path.group, &path.version, &path.plural)
        .ok_or_else(|| ApiError::no_such_path(request.uri().path()))?;
    let Some(warning) = info.deprecation_warning.clone() else {
        return serve_kind(shared, path, info, request).await;
    };
    let response = serve_kind(shared, path, info, request)
        .await
        .unwrap_or_else(|error| respond::error(&error));
    Ok(respond::warn(response, &[warning]))
}

/// Serves a request on a collection, object or subresource of the kind `info`.
async fn serve_kind(
    shared: &Arc<Shared>,
    path: ResourcePath,
    info: Arc<ResourceInfo>,
    request: Request<Body>,
) -> ApiResult<Response<Body>> {
    let (parts, body) = request.into_parts();
    if path.namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_such_path(parts.uri.path()));
    }
    let target = match path.subresource.as_deref() {
        None => Target::Main,
        Some("status") if info.status_subresource && path.name.is_some() => Target::Status,
        Some("scale") if info.scale.is_some() && path.name.is_some() => Target::Main,
        Some(sub) if path.name.is_some() && info.subresource(sub).is_some() => {
            subresource::part(&info, sub).map_or(Target::Main, Target::Part)
        }
        Some(_) => return Err(ApiError::no_such_path(parts.uri.path())),
    };
    let header = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let requester = parts.extensions.get::<User>().cloned();
    let call = Call {
        representation: negotiate::representation(header(header::ACCEPT).as_deref())?,
        content_type: header(header::CONTENT_TYPE),
        user_agent: header(header::USER_AGENT),
        query: Query::parse(parts.uri.query()),
        namespace: path.namespace.clone(),
        info,
        rbac_writer: requester
            .clone()
            .filter(|_| shared.config.authorization == Authorization::Rbac),
    };
    let limit = shared.config.max_body_bytes;
    let verb = verb_of(&parts.method, path.name.is_some(), &call.query)?;
    shared.record(verb, &call.info.group, &call.info.plural);
    let facts = RequestFacts {
        verb,
        group: &call.info.group,
        kind: &call.info.kind,
        plural: &call.info.plural,
        namespace: call.namespace.as_deref().unwrap_or_default(),
        name: path.name.as_deref().unwrap_or_default(),
        subresource: path.subresource.as_deref().unwrap_or_default(),
    };
    match shared.faults.verdict(&facts) {
        Verdict::Serve => {}
        Verdict::Stall(delay) => tokio::time::sleep(delay).await,
        Verdict::Fail(error) => return Err(error),
    }
    // Admission webhooks see who asks.
    let user = requester.unwrap_or_else(User::admin);
    if let (Some("scale"), Some(name)) = (path.subresource.as_deref(), &path.name) {
        return super::scale::serve(shared, &call, parts.method, name, body).await;
    }
    let allowed = match path.subresource.as_deref() {
        Some(sub) => call
            .info
            .subresource(sub)
            .is_none_or(|s| s.verbs.contains(&verb)),
        None => call.info.allows(verb),
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if let (Some(sub), Some(name)) = (path.subresource.as_deref(), path.name.as_deref())
        && sub != "status"
        && subresource::part(&call.info, sub).is_none()
    {
        let body = read_optional_body(&call, body, limit).await?;
        let namespace = call.object_namespace()?;
        let sub_call = subresource::SubCall {
            info: &call.info,
            namespace,
            name,
            sub,
            body,
        };
        return subresource::serve(shared, &parts.method, sub_call);
    }
    if call.info.is_virtual() && parts.method == Method::POST && path.name.is_none() {
        let user = parts
            .extensions
            .get::<User>()
            .cloned()
            .unwrap_or_else(User::admin);
        return reviews::create(
            shared,
            &call.info.plural,
            call.namespace.as_deref(),
            &call.info.api_version(),
            &call.info.kind,
            &user,
            read_object(&call, body, limit).await?,
        );
    }
    if call.info.is_component_statuses() && parts.method == Method::GET {
        return componentstatus::serve(&call, path.name.as_deref());
    }
    match (parts.method, path.name) {
        (Method::GET, None) if call.query.flag("watch")? => watch::serve(
            shared,
            &call.info,
            call.namespace.as_deref(),
            &call.query,
            call.representation,
        ),
        (Method::GET, None) => {
            let state = shared.state.read();
            let body = list::list(
                &state,
                &call.info,
                call.namespace.as_deref(),
                &call.query,
                call.representation,
            )?;
            Ok(respond::json(200, &body))
        }
        (Method::POST, None) => {
            let object = read_object(&call, body, limit).await?;
            let admitted = admit::create(shared, &call, &user, &object).await?;
            create(
                shared,
                &call,
                admitted.mutated.unwrap_or(object),
                admitted.warnings,
            )
        }
        (Method::DELETE, None) => {
            delete_collection(shared, &call, read_optional_json(body, limit).await?)
        }
        (Method::GET, Some(name)) => {
            let namespace = call.object_namespace()?;
            let state = shared.state.read();
            let object = state
                .get(&call.info.key(), namespace, &name)
                .ok_or_else(|| ApiError::not_found(&call.info, &name))?;
            if call.representation == Representation::Table {
                let columns = table::columns(state.printer_columns(&call.info).as_ref());
                let rv = meta::resource_version(&object);
                return Ok(respond::json(200, &table::table(&columns, &[&object], rv)));
            }
            Ok(call.respond(200, &object))
        }
        (Method::PUT, Some(name)) => {
            let object = read_object(&call, body, limit).await?;
            let namespace = call.object_namespace()?;
            let options = call.write_options()?;
            let admitted = match target {
                Target::Main => {
                    let change = admit::Change::Replace(&object);
                    admit::update(shared, &call, &user, &name, change).await?
                }
                _ => Default::default(),
            };
            let object = admitted.mutated.unwrap_or(object);
            let (stored, mut warnings) = shared.state.transact(|state| {
                state.update(&call.info, namespace, &name, object, target, &options)
            })?;
            warnings.extend(admitted.warnings);
            Ok(respond::warn(call.respond(200, &stored), &warnings))
        }
        (Method::PATCH, Some(name)) => {
            let patch = patch_body(&call, read_patch(&call, body, limit).await?)?;
            let namespace = call.object_namespace()?;
            let options = call.write_options()?;
            let admitted = match target {
                Target::Main => {
                    let change = admit::Change::Patch(&patch);
                    admit::update(shared, &call, &user, &name, change).await?
                }
                _ => Default::default(),
            };
            let ((object, created), mut warnings) =
                shared.state.transact(|state| match admitted.mutated {
                    Some(object) => state
                        .update(&call.info, namespace, &name, object, target, &options)
                        .map(|object| (object, false)),
                    None => state
                        .patch(&call.info, namespace, &name, &patch, target, &options)
                        .map(|patched| (patched.object, patched.created)),
                })?;
            warnings.extend(admitted.warnings);
            let code = if created { 201 } else { 200 };
            Ok(respond::warn(call.respond(code, &object), &warnings))
        }
        (Method::DELETE, Some(name)) if target == Target::Main => {
            let body = read_optional_json(body, limit).await?;
            let orphan_dependents = body.as_ref().and_then(|b| b["orphanDependents"].as_bool());
            let options = delete_options(&call.query, body)?;
            let namespace = call.object_namespace()?;
            admit::delete(shared, &call, &user, &name, options.dry_run).await?;
            let (outcome, _) = shared
                .state
                .transact(|state| state.delete(&call.info, namespace, &name, &options))?;
            let removed = matches!(outcome, DeleteOutcome::Removed(_));
            let code = deleted::code(removed, orphan_dependents);
            if removed && !deleted::returns_deleted_object(&call.info) {
                let status = deleted::success_status(&call.info, outcome.object());
                return Ok(respond::json(code, &status));
            }
            Ok(call.respond(code, outcome.object()))
        }
        (method, _) => Err(ApiError::method_not_allowed(format!(
            "{method} is not supported on {}",
            parts.uri.path()
        ))),
    }
}

/// The Kubernetes verb of a request, as RBAC and audit logs name it.
pub(super) fn verb_of(method: &Method, has_name: bool, query: &Query) -> ApiResult<&'static str> {
    Ok(match (method.as_str(), has_name) {
        ("GET", false) if query.flag("watch")? => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => "other",
    })
}

fn create(
    shared: &Arc<Shared>,
    call: &Call,
    object: Value,
    admission_warnings: Vec<String>,
) -> ApiResult<Response<Body>> {
    if call.info.namespaced && call.namespace.is_none() {
        return Err(ApiError::method_not_allowed(format!(
            "create of {} needs a namespace in the path",
            call.info.plural
        )));
    }
    let options = call.write_options()?;
    let (stored, mut warnings) = shared
        .state
        .transact(|state| state.create(&call.info, call.namespace.as_deref(), object, &options))?;
    warnings.extend(admission_warnings);
    Ok(respond::warn(call.respond(201, &stored), &warnings))
}

fn delete_collection(
    shared: &Arc<Shared>,
    call: &Call,
    body: Option<Value>,
) -> ApiResult<Response<Body>> {
    let options = delete_options(&call.query, body)?;
    let selectors = Selectors::from_query(&call.query, &call.info)?;
    let ((items, metadata), _) = shared.state.transact(|state| {
        let doomed: Vec<(String, String)> = state
            .objects()
            .list(&call.info.key(), call.namespace.as_deref(), None)
            .filter(|object| selectors.matches(object))
            .map(|o| (meta::namespace(&o).to_string(), meta::name(&o).to_string()))
            .collect();
        let mut items = Vec::with_capacity(doomed.len());
        for (namespace, name) in doomed {
            // An object another deletion in this loop already removed is simply skipped.
            if let Ok(outcome) = state.delete(&call.info, &namespace, &name, &options) {
                items.push(list::render(
                    outcome.object(),
                    &call.info,
                    call.representation,
                ));
            }
        }
        let metadata = json!({"resourceVersion": state.resource_version().to_string()});
        Ok((items, metadata))
    })?;
    Ok(respond::json(
        200,
        &list::list_body(&call.info, call.representation, metadata, items),
    ))
}

/// The delete options of a request, from its body (`DeleteOptions`) and query.
fn delete_options(query: &Query, body: Option<Value>) -> ApiResult<DeleteOptions> {
    let body = body.unwrap_or(Value::Null);
    let policy = body["propagationPolicy"]
        .as_str()
        .or_else(|| query.get("propagationPolicy"));
    let propagation = match policy {
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid propagationPolicy {other:?}: must be Background, Foreground or Orphan"
            )));
        }
        None => match body["orphanDependents"].as_bool() {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        },
    };
    let dry_run_in_body = body["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        propagation,
        precondition_uid: body["preconditions"]["uid"].as_str().map(str::to_string),
        precondition_rv: body["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string),
        dry_run: dry_run_in_body || query.dry_run()?,
    })
}
