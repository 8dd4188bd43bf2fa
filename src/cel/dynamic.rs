//! Arguments and results of library functions that take any CEL value: converted to and
//! from [`cel::Value`], which the libraries match on.

use cel::common::value::{CowVal, Val};
use cel::{ExecutionError, Value};

/// An argument as a [`Value`].
pub(super) fn value_of(arg: &CowVal<'_, '_>) -> Result<Value, ExecutionError> {
    Value::try_from(arg.as_ref())
}

/// A result as an owned CEL value.
pub(super) fn owned<'b, 'v>(value: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Box::<dyn Val>::try_from(value).map(CowVal::Owned)
}
