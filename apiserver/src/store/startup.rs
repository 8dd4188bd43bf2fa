//! Starting the store: in memory, or from what durable storage kept, with the objects every
//! cluster has created when missing.

use std::path::Path;
use std::sync::Arc;

use super::encoded::Encoded;
use super::persist::{Persistence, Storage, StorageError};
use super::state::State;
use super::watch::StoreConfig;

impl State {
    /// An in-memory store with the built-in kinds and the default namespaces.
    pub fn new(config: StoreConfig) -> Self {
        let mut state = Self::empty(config, Storage::default());
        state.create_default_namespaces();
        state.create_cluster_objects();
        state
    }

    /// A store kept in `dir` (created when missing), holding what was stored there before.
    pub fn open(config: StoreConfig, dir: &Path) -> Result<Self, StorageError> {
        let (persistence, loaded) = Persistence::open(dir)?;
        let mut state = Self::empty(config, Storage::durable(persistence));
        state.objects.raise_rv(loaded.resource_version);
        state.watch.start_history_at(loaded.resource_version);
        for (key, object) in loaded.objects {
            state
                .objects
                .put(&key, &object, Encoded::new(&key, &object));
            state.after_load_of_kind(&key, &Arc::new(object));
        }
        state.create_default_namespaces();
        state.create_cluster_objects();
        if let Some(failure) = state.flush().err() {
            return Err(StorageError::from_message(failure.message));
        }
        Ok(state)
    }
}
