//! The children a `ChildSetReconciler` listed for a request, stashed for the
//! `ChildReconciler` of each id so that the set lists its children once.

use std::sync::Arc;

use kube::api::DynamicObject;

use super::{Context, Stasher};
use crate::object::Gvk;

/// The children a child set listed for this request.
#[derive(Clone)]
struct KnownChildren {
    child_type: Gvk,
    children: Vec<Arc<DynamicObject>>,
}

const KNOWN_CHILDREN: Stasher<KnownChildren> = Stasher::new("dynrec.io/known-children");

/// Stashes the children of `child_type` a child set listed for this request.
pub(super) fn stash_known_children(
    ctx: &Context,
    child_type: Gvk,
    children: Vec<Arc<DynamicObject>>,
) {
    KNOWN_CHILDREN.store(
        ctx.stash(),
        KnownChildren {
            child_type,
            children,
        },
    );
}

/// Forgets the stashed children once the child set is done with the request.
pub(super) fn clear_known_children(ctx: &Context) {
    KNOWN_CHILDREN.clear(ctx.stash());
}

/// The children of `child_type` an enclosing child set listed for this request, if any.
pub(super) fn known_children(ctx: &Context, child_type: &Gvk) -> Option<Vec<Arc<DynamicObject>>> {
    KNOWN_CHILDREN
        .retrieve(ctx.stash())
        .filter(|known| known.child_type == *child_type)
        .map(|known| known.children)
}
