//! What a reconciler tree declares at setup: the watches the runtime must open for it, and
//! through which config (cluster) each is opened.

use super::{Config, Permission, READ, ValidationError};
use crate::object::Gvk;

/// A setup step of a reconciler's own, e.g. declaring the kinds it tracks (reconciler.io's
/// `Setup` function); any such closure is one.
pub trait SetupStep: Fn(&mut Setup) -> Result<(), ValidationError> + Send + Sync + 'static {}

impl<F> SetupStep for F where
    F: Fn(&mut Setup) -> Result<(), ValidationError> + Send + Sync + 'static
{
}

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

/// A watch declared under `WithConfig`: opened through that config's client and mapped
/// through its tracker.
#[derive(Clone)]
pub struct ScopedWatch {
    /// What to watch.
    pub watch: Watch,
    /// The config the nested reconcilers use for it.
    pub config: Config,
}

/// Collects the watches of a reconciler tree.
///
/// Roots start it with their own config ([`Setup::for_config`]); `WithConfig` derives its
/// config from the current one and declares its nested reconcilers' watches through
/// [`Setup::scoped`], so a child on another cluster is watched on that cluster.
#[derive(Clone, Default)]
pub struct Setup {
    root_config: Option<Config>,
    scope: Option<Config>,
    watches: Vec<Watch>,
    scoped_watches: Vec<ScopedWatch>,
    /// Permissions declared with [`Setup::require`].
    pub(super) required: Vec<Permission>,
}

impl Setup {
    /// A setup for a tree whose root reconciles with `config`.
    pub fn for_config(config: Config) -> Self {
        Self {
            root_config: Some(config),
            ..Self::default()
        }
    }

    /// The config nested reconcilers would use here: the innermost `WithConfig`'s, else the
    /// root's (`None` for a setup made without one, as in unit tests).
    pub fn config(&self) -> Option<&Config> {
        self.scope.as_ref().or(self.root_config.as_ref())
    }

    /// Runs `declare` with `config` as the current config: the watches it declares are
    /// opened through `config`.
    pub fn scoped<T>(&mut self, config: Config, declare: impl FnOnce(&mut Self) -> T) -> T {
        let outer = self.scope.replace(config);
        let declared = declare(self);
        self.scope = outer;
        declared
    }

    /// Declares a watch (each is kept once per config).
    pub fn watch(&mut self, watch: Watch) {
        match &self.scope {
            None if !self.watches.contains(&watch) => self.watches.push(watch),
            None => {}
            Some(config) => {
                let known = self
                    .scoped_watches
                    .iter()
                    .any(|s| s.watch == watch && s.config.is_same(config));
                if !known {
                    self.scoped_watches.push(ScopedWatch {
                        watch,
                        config: config.clone(),
                    });
                }
            }
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

    /// The watches opened through the root's config, in declaration order.
    pub fn watches(&self) -> &[Watch] {
        &self.watches
    }

    /// The watches declared under `WithConfig`, in declaration order.
    pub fn scoped_watches(&self) -> &[ScopedWatch] {
        &self.scoped_watches
    }
}

impl Setup {
    /// Declares that the reconciler `by` needs `verbs` on `gvk` (its `subresource` when not
    /// empty).
    pub fn require(&mut self, by: &str, gvk: &Gvk, subresource: &str, verbs: &[&str]) {
        self.require_permission(Permission::new(gvk, subresource, verbs, by));
    }

    /// Declares a permission the tree needs (one limited to named objects, say).
    pub fn require_permission(&mut self, permission: Permission) {
        if !self.required.contains(&permission) {
            self.required.push(permission);
        }
    }

    /// The kind the tree reconciles, once its root declared it.
    pub fn resource_type(&self) -> Option<&Gvk> {
        self.watches().iter().find_map(|watch| match watch {
            Watch::For(gvk) => Some(gvk),
            _ => None,
        })
    }

    /// Everything the tree of `controller` needs: reads of every kind it watches (through
    /// the root's config) and what its reconcilers declared (each named "X in controller").
    pub fn permissions(&self, controller: &str) -> Vec<Permission> {
        let reads = self.watches().iter().map(|watch| {
            let (gvk, why) = match watch {
                Watch::For(gvk) => (gvk, "watches the kind it reconciles"),
                Watch::Owns(gvk) => (gvk, "watches the children it owns"),
                Watch::Tracked(gvk) => (gvk, "watches tracked objects"),
            };
            Permission::new(gvk, "", READ, format!("{controller} ({why})"))
        });
        let declared = self.required.iter().map(|p| match p.by == controller {
            true => p.clone(),
            false => Permission {
                by: format!("{} in {controller}", p.by),
                ..p.clone()
            },
        });
        let mut all: Vec<Permission> = reads.chain(declared).collect();
        all.sort();
        all.dedup();
        all
    }
}
