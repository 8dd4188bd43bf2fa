//! Exists only so that `cargo test --workspace` builds dynrec with its `testing` feature:
//! dynrec dev-depends on this crate, which depends on dynrec with `testing` enabled, and
//! Cargo unifies the features of the package under test.
