//! Demo controllers: small, complete controllers built with dynrec, run by `dynrec run` and
//! the examples. Read them as worked examples of the library.

pub mod addressable;
pub mod podspecable;
pub mod singleton;
pub mod webhooks;
pub mod widgets;
