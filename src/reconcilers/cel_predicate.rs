//! CEL conditions as predicates: [`Predicate::cel`] compiles an expression once, when the
//! reconciler is built, and evaluates it with the CEL engine (`crate::cel`) at each request.

use serde::Serialize;

use super::Predicate;
use crate::cel::{CelError, Condition};

impl<R: Serialize + 'static> Predicate<R> {
    /// A condition written in CEL over `self` (the resource as JSON) and `now`, compiled here.
    ///
    /// An evaluation converts only the fields of `self` the expression reads; a
    /// `DynamicObject` is not even serialized beyond them. An expression that fails (a
    /// missing field read without `has()`) or does not yield a bool is false, and logged.
    pub fn cel(expression: &str) -> Result<Self, CelError> {
        let condition = Condition::compile(expression)?;
        Ok(Predicate::described(expression, move |ctx, resource| {
            condition
                .evaluate_resource(resource, ctx.now())
                .unwrap_or_else(|failure| {
                    tracing::warn!(
                        expression = %condition.expression(),
                        request = %ctx.request(),
                        error = %failure,
                        "CEL condition failed or is not a bool; treating it as false"
                    );
                    false
                })
        }))
    }
}
