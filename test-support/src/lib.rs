//! Helpers dynrec's own tests share ([`process`]), and the switch that builds dynrec with
//! its `testing` feature for them: dynrec dev-depends on this crate, which depends on dynrec
//! with `testing` enabled, and Cargo unifies the features of the package under test.

pub mod process;
