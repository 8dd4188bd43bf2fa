//! One request on a resource path, decoded: its kind, namespace, query and the
//! representation it wants back.

use std::sync::Arc;

use axum::body::Body;
use http::Response;
use serde_json::Value;

use super::list;
use super::negotiate::Representation;
use super::query::Query;
use super::respond;
use crate::auth::{User, confirm_no_escalation};
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceInfo;
use crate::store::{EscalationCheck, FieldValidation, WriteOptions};

/// One request on a resource path, decoded.
pub(super) struct Call {
    pub(super) info: Arc<ResourceInfo>,
    pub(super) namespace: Option<String>,
    pub(super) query: Query,
    pub(super) representation: Representation,
    pub(super) content_type: Option<String>,
    pub(super) user_agent: Option<String>,
    /// Under RBAC authorization, who writes (checked for escalation by the store).
    pub(super) rbac_writer: Option<User>,
}

impl Call {
    /// The namespace of an object request ("" for cluster-scoped kinds).
    pub(super) fn object_namespace(&self) -> ApiResult<&str> {
        match (&self.namespace, self.info.namespaced) {
            (_, false) => Ok(""),
            (Some(ns), true) => Ok(ns),
            (None, true) => Err(ApiError::bad_request(format!(
                "{} is namespaced: the path must name a namespace",
                self.info.plural
            ))),
        }
    }

    /// The options of a create, update or patch, from the query.
    pub(super) fn write_options(&self) -> ApiResult<WriteOptions> {
        Ok(WriteOptions {
            dry_run: self.query.dry_run()?,
            field_validation: FieldValidation::parse(self.query.get("fieldValidation"))?,
            field_manager: self.query.get("fieldManager").map(str::to_string),
            user_agent: self.user_agent.clone(),
            force: self.query.flag("force")?,
            escalation_check: self.rbac_writer.clone().map(escalation_check),
        })
    }

    /// A response carrying `object` in the representation the client asked for.
    pub(super) fn respond(&self, code: u16, object: &Value) -> Response<Body> {
        respond::json(code, &list::render(object, &self.info, self.representation))
    }
}

/// The store's check that `writer` does not escalate through an RBAC write.
fn escalation_check(writer: User) -> EscalationCheck {
    EscalationCheck(Arc::new(move |state, info, old, object| {
        confirm_no_escalation(state, &writer, info, old, object)
    }))
}
