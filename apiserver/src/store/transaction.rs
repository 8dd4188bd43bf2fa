//! The store behind its one lock: reads take the lock shared, and a write is a transaction
//! that is durable before it is answered. The HTTP front end and admission both go through it.

use std::ops::Deref;

use parking_lot::RwLock;

use super::State;
use crate::error::ApiResult;

/// The [`State`] behind one lock. It derefs to the lock, for reads (`store.read()`) and the
/// few writers that manage durability themselves.
pub struct Store(RwLock<State>);

impl Store {
    /// A store over `state`.
    pub fn new(state: State) -> Self {
        Self(RwLock::new(state))
    }

    /// Runs a write under the lock and makes it durable before it is answered; returns its
    /// value and the warnings it gathered.
    pub fn transact<T>(
        &self,
        operation: impl FnOnce(&mut State) -> ApiResult<T>,
    ) -> ApiResult<(T, Vec<String>)> {
        let mut state = self.0.write();
        state.check_writable()?;
        state.take_warnings();
        let result = operation(&mut state);
        state.flush()?;
        let warnings = state.take_warnings();
        result.map(|value| (value, warnings))
    }
}

impl Deref for Store {
    type Target = RwLock<State>;

    fn deref(&self) -> &RwLock<State> {
        &self.0
    }
}
