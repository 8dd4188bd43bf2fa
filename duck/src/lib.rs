//! Duck types for dynrec: typed projections (PodSpecable, Addressable, KResource, ...)
//! that read and patch only the part of an object they know.
//!
//! The duck types themselves arrive with the client layer; this crate fixes their home.
