//! What a reconciler tree declares at setup: the watches the runtime must open for it.

use crate::object::Gvk;

/// A watch a reconciler needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Watch {
    /// The reconciled kind itself.
    For(Gvk),
    /// Children of this kind, mapped to the owner through controller ownerReferences.
    Owns(Gvk),
    /// Objects of this kind, mapped to their observers through the tracker.
    Tracked(Gvk),
}

/// Collects the watches of a reconciler tree.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    watches: Vec<Watch>,
}

impl Setup {
    /// Declares a watch (each is kept once).
    pub fn watch(&mut self, watch: Watch) {
        if !self.watches.contains(&watch) {
            self.watches.push(watch);
        }
    }

    /// Declares that children of `gvk` are owned by the reconciled resource.
    pub fn owns(&mut self, gvk: Gvk) {
        self.watch(Watch::Owns(gvk));
    }

    /// Declares that objects of `gvk` are tracked.
    pub fn watch_tracked(&mut self, gvk: Gvk) {
        self.watch(Watch::Tracked(gvk));
    }

    /// The declared watches, in declaration order.
    pub fn watches(&self) -> &[Watch] {
        &self.watches
    }
}
