//! Which observers (reconciled objects) watch which other objects, by name or label
//! selector, with leases that expire; see [`Tracker`].

mod reference;
mod tracking;

pub use reference::{InvalidReference, Reference};
pub use tracking::Tracker;
