//! Location-scoped approvals persisted across sessions, in the file the Copilot CLI keeps
//! them in (`permissions-config.json` beside the state root, `{"locations": {KEY:
//! {"tool_approvals": [APPROVAL, ...]}}}`), so that both runtimes sharing a home see the
//! same approvals. Which location a working directory is (its git root, else the directory) is
//! the server's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::locate::home_of;

/// The file name, as the Copilot CLI writes it.
pub const FILE_NAME: &str = "permissions-config.json";

/// Larger files are refused rather than read into memory.
const MAX_BYTES: u64 = 4 << 20;

/// Approvals one location keeps at most.
const MAX_APPROVALS: usize = 4096;

/// Serializes this process's read-modify-write of the file.
static WRITES: Mutex<()> = Mutex::new(());

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not the store's JSON.
    #[error("{path} is not a location permissions file ({why}); fix or remove it")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A location holds too many approvals.
    #[error("location {0} already holds {max} approvals", max = MAX_APPROVALS)]
    Full(String),
}

/// The location approvals' file of one home.
#[derive(Debug, Clone)]
pub struct LocationStore {
    path: PathBuf,
}

impl LocationStore {
    /// The store of the home holding `state_dir` (the `session-state` directory).
    pub fn beside(state_dir: &Path) -> Self {
        LocationStore {
            path: home_of(state_dir).join(FILE_NAME),
        }
    }

    /// The approvals persisted for `key`, in the order they were added.
    pub fn approvals(&self, key: &str) -> Result<Vec<Value>, StoreError> {
        let doc = self.read()?;
        Ok(doc
            .get("locations")
            .and_then(|l| l.get(key))
            .and_then(|l| l.get("tool_approvals"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// Persists `approval` for `key` (an equal one already there is not repeated).
    pub fn add(&self, key: &str, approval: &Value) -> Result<(), StoreError> {
        let _guard = WRITES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut doc = self.read()?;
        let malformed = |why: &str| StoreError::Malformed {
            path: self.path.clone(),
            why: why.to_owned(),
        };
        let root = doc
            .as_object_mut()
            .ok_or_else(|| malformed("not an object"))?;
        let locations = root
            .entry("locations")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| malformed("`locations` is not an object"))?;
        let location = locations
            .entry(key)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| malformed("a location is not an object"))?;
        let approvals = location
            .entry("tool_approvals")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| malformed("`tool_approvals` is not an array"))?;
        if approvals.contains(approval) {
            return Ok(());
        }
        if approvals.len() >= MAX_APPROVALS {
            return Err(StoreError::Full(key.to_owned()));
        }
        approvals.push(approval.clone());
        self.write(&doc)
    }

    fn read(&self) -> Result<Value, StoreError> {
        let io = |source| StoreError::Io {
            path: self.path.clone(),
            source,
        };
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({})),
            Err(e) => return Err(io(e)),
        };
        if meta.len() > MAX_BYTES {
            return Err(StoreError::Malformed {
                path: self.path.clone(),
                why: format!("larger than {MAX_BYTES} bytes"),
            });
        }
        let text = std::fs::read_to_string(&self.path).map_err(io)?;
        if text.trim().is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_str(&text).map_err(|e| StoreError::Malformed {
            path: self.path.clone(),
            why: e.to_string(),
        })
    }

    /// Replaces the file whole ([`crate::atomic_write`]), so a reader never sees half a file.
    fn write(&self, doc: &Value) -> Result<(), StoreError> {
        let mut text = serde_json::to_string_pretty(doc).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        crate::atomic_write(&self.path, text.as_bytes()).map_err(|e| StoreError::Io {
            path: self.path.clone(),
            source: e.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_round_trip_in_the_runtime_format() {
        let home = tempfile::tempdir().unwrap();
        let store = LocationStore::beside(&home.path().join("session-state"));
        let a = json!({"kind": "commands", "commandIdentifiers": ["ls"]});
        store.add("/w/p", &a).unwrap();
        store.add("/w/p", &a).unwrap();
        store.add("/w/p", &json!({"kind": "write"})).unwrap();
        assert_eq!(
            store.approvals("/w/p").unwrap(),
            vec![a, json!({"kind": "write"})]
        );
        assert!(store.approvals("/w/other").unwrap().is_empty());
        let text = std::fs::read_to_string(home.path().join(FILE_NAME)).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            doc["locations"]["/w/p"]["tool_approvals"][1]["kind"],
            "write"
        );
    }

    #[test]
    fn a_malformed_file_is_named_and_left_alone() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(FILE_NAME);
        std::fs::write(&path, "{\"locations\": [1]}").unwrap();
        let store = LocationStore::beside(&home.path().join("session-state"));
        let e = store.add("/w/p", &json!({"kind": "read"})).unwrap_err();
        assert!(e.to_string().contains(FILE_NAME), "{e}");
        std::fs::write(&path, "not json").unwrap();
        assert!(matches!(
            store.approvals("/w/p"),
            Err(StoreError::Malformed { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
    }
}
