//! Durable storage: every committed object is written to an embedded transactional store
//! (redb), one transaction per API request, before the request is answered.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceKey;

/// Objects by `group/plural/namespace/name`, as JSON.
const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
/// Counters: the latest resourceVersion.
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const RESOURCE_VERSION: &str = "resourceVersion";

/// A failure of the durable store.
#[derive(Debug, thiserror::Error)]
#[error("durable storage failed: {0}")]
pub struct StorageError(String);

impl StorageError {
    /// An error with this message.
    pub fn from_message(message: impl Into<String>) -> Self {
        StorageError(message.into())
    }
}

impl<E: Into<redb::Error>> From<E> for StorageError {
    fn from(error: E) -> Self {
        StorageError(error.into().to_string())
    }
}

/// What was stored when the server last stopped.
pub struct Loaded {
    /// Every object with its kind.
    pub objects: Vec<(ResourceKey, Value)>,
    /// The latest resourceVersion handed out.
    pub resource_version: u64,
}

/// The durable store and the changes not yet written to it.
pub struct Persistence {
    db: Database,
    pending: Vec<(String, Option<Vec<u8>>)>,
}

fn storage_key(key: &ResourceKey, namespace: &str, name: &str) -> String {
    format!("{}/{}/{namespace}/{name}", key.group, key.plural)
}

fn parse_key(stored: &str) -> Option<ResourceKey> {
    let mut parts = stored.splitn(4, '/');
    let group = parts.next()?.to_string();
    let plural = parts.next()?.to_string();
    Some(ResourceKey { group, plural })
}

impl Persistence {
    /// Opens (or creates) the store in `dir` and reads what it holds.
    pub fn open(dir: &Path) -> Result<(Persistence, Loaded), StorageError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StorageError(format!("cannot create {}: {e}", dir.display())))?;
        let db = Database::create(dir.join("dynrec.redb"))?;
        let setup = db.begin_write()?;
        setup.open_table(OBJECTS)?;
        setup.open_table(COUNTERS)?;
        setup.commit()?;
        let read = db.begin_read()?;
        let mut objects = Vec::new();
        for entry in read.open_table(OBJECTS)?.iter()? {
            let (key, bytes) = entry?;
            let kind = parse_key(key.value())
                .ok_or_else(|| StorageError(format!("corrupt key {:?}", key.value())))?;
            let object = serde_json::from_slice(bytes.value())
                .map_err(|e| StorageError(format!("corrupt object at {:?}: {e}", key.value())))?;
            objects.push((kind, object));
        }
        let resource_version = read
            .open_table(COUNTERS)?
            .get(RESOURCE_VERSION)?
            .map_or(0, |v| v.value());
        let persistence = Persistence {
            db,
            pending: Vec::new(),
        };
        Ok((
            persistence,
            Loaded {
                objects,
                resource_version,
            },
        ))
    }

    /// Notes a stored or changed object, to be written by the next flush.
    pub fn record_put(&mut self, key: &ResourceKey, object: &Value) {
        let bytes = serde_json::to_vec(object).unwrap_or_default();
        let stored = storage_key(key, meta::namespace(object), meta::name(object));
        self.pending.push((stored, Some(bytes)));
    }

    /// Notes a removed object, to be deleted by the next flush.
    pub fn record_remove(&mut self, key: &ResourceKey, object: &Value) {
        let stored = storage_key(key, meta::namespace(object), meta::name(object));
        self.pending.push((stored, None));
    }

    /// Writes every noted change and the resourceVersion in one durable transaction.
    pub fn flush(&mut self, resource_version: u64) -> Result<(), StorageError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let transaction = self.db.begin_write()?;
        {
            let mut objects = transaction.open_table(OBJECTS)?;
            for (key, bytes) in self.pending.drain(..) {
                match bytes {
                    Some(bytes) => {
                        objects.insert(key.as_str(), bytes.as_slice())?;
                    }
                    None => {
                        objects.remove(key.as_str())?;
                    }
                }
            }
            transaction
                .open_table(COUNTERS)?
                .insert(RESOURCE_VERSION, resource_version)?;
        }
        transaction.commit()?;
        Ok(())
    }
}

/// Where committed changes go: nowhere for an in-memory store, else durable storage, which
/// refuses further writes once it has failed.
#[derive(Default)]
pub struct Storage {
    persistence: Option<Persistence>,
    failure: Option<String>,
}

impl Storage {
    /// Storage kept by `persistence`.
    pub fn durable(persistence: Persistence) -> Self {
        Storage {
            persistence: Some(persistence),
            failure: None,
        }
    }

    /// Notes a stored or changed object (a no-op in memory).
    pub fn record_put(&mut self, key: &ResourceKey, object: &Value) {
        if let Some(persistence) = self.persistence.as_mut() {
            persistence.record_put(key, object);
        }
    }

    /// Notes a removed object (a no-op in memory).
    pub fn record_remove(&mut self, key: &ResourceKey, object: &Value) {
        if let Some(persistence) = self.persistence.as_mut() {
            persistence.record_remove(key, object);
        }
    }

    /// Refuses writes once durable storage has failed.
    pub fn check_writable(&self) -> ApiResult<()> {
        match &self.failure {
            Some(failure) => Err(ApiError::storage_unavailable(failure)),
            None => Ok(()),
        }
    }

    /// Makes every change noted since the last flush durable, with the latest
    /// resourceVersion (a no-op in memory).
    pub fn flush(&mut self, resource_version: u64) -> ApiResult<()> {
        let Some(persistence) = self.persistence.as_mut() else {
            return Ok(());
        };
        if let Err(failure) = persistence.flush(resource_version) {
            tracing::error!(%failure, "durable storage failed; refusing further writes");
            self.failure = Some(failure.to_string());
            return Err(ApiError::internal(failure.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_flushed_is_loaded_again() {
        let dir = tempfile::tempdir().unwrap();
        let key = ResourceKey {
            group: "example.com".into(),
            plural: "widgets".into(),
        };
        let kept = json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"x": 1}});
        let gone = json!({"metadata": {"name": "b", "namespace": "ns"}});
        {
            let (mut store, loaded) = Persistence::open(dir.path()).unwrap();
            assert!(loaded.objects.is_empty());
            store.record_put(&key, &kept);
            store.record_put(&key, &gone);
            store.record_remove(&key, &gone);
            store.flush(42).unwrap();
            store.record_put(&key, &json!({"metadata": {"name": "unflushed"}}));
        }
        let (_, loaded) = Persistence::open(dir.path()).unwrap();
        assert_eq!(loaded.resource_version, 42);
        assert_eq!(loaded.objects, vec![(key, kept)]);
    }
}
