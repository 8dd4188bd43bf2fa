//! Conditions that choose what a reconciler does (IfThen, While, SkipResource, OurChild,
//! ReadyToClearFinalizer): a Rust closure, or a CEL expression compiled when the reconciler
//! is built.

use std::fmt;
use std::sync::Arc;

use super::Context;
use super::steps::Check;

/// A condition over the request context and a resource of type `R`.
pub struct Predicate<R> {
    test: Arc<dyn Check<R>>,
    description: String,
}

impl<R> Clone for Predicate<R> {
    fn clone(&self) -> Self {
        Self {
            test: self.test.clone(),
            description: self.description.clone(),
        }
    }
}

impl<R> Predicate<R> {
    /// A condition written as a Rust closure.
    pub fn new(test: impl Check<R>) -> Self {
        Self {
            test: Arc::new(test),
            description: "closure".into(),
        }
    }

    /// A condition with a description for logs (e.g. the CEL source).
    pub fn described(description: impl Into<String>, test: impl Check<R>) -> Self {
        Self {
            test: Arc::new(test),
            description: description.into(),
        }
    }

    /// Evaluates the condition.
    pub fn test(&self, ctx: &Context, resource: &R) -> bool {
        (self.test)(ctx, resource)
    }

    /// What the condition is, for logs.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl<R> fmt::Debug for Predicate<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Predicate({})", self.description)
    }
}
