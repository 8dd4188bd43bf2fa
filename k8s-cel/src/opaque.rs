//! A macro that makes a plain Rust type a CEL value of its own type (`url`, `ip`, ...).

/// Implements `Val` and `StaticVal` for `$ty` (which is `Clone + PartialEq + Debug`),
/// with the CEL type `$name`, held in the static `$cel`.
macro_rules! opaque_val {
    ($ty:ty, $cel:ident, $name:literal) => {
        /// The CEL type of this value.
        pub(crate) static $cel: cel::common::types::Type =
            cel::common::types::Type::new_unspecified_type($name);

        impl cel::common::value::Val for $ty {
            fn get_type(&self) -> &cel::common::types::Type {
                &$cel
            }
            fn cel_type() -> &'static cel::common::types::Type {
                &$cel
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$ty>().is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }

        impl cel::common::value::StaticVal for $ty {}
    };
}

pub(crate) use opaque_val;
