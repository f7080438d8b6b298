//! Trusted folders (`session.permissions.folderTrust.*`), kept in `trusted-folders.json` in
//! the home as `{"trustedFolders": [PATH, ...]}`: the file, read and extended. A folder is
//! trusted when it or a folder above it is listed, as in the Copilot CLI; how a folder asked
//! about is resolved first (through links, else lexically) is the caller's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::locate::home_of;

/// The file name.
pub const FILE_NAME: &str = "trusted-folders.json";

/// Folders kept at most.
const MAX_FOLDERS: usize = 4096;

/// Larger files are refused rather than read into memory.
const MAX_BYTES: u64 = 4 << 20;

/// Serializes this process's read-modify-write of the file.
static WRITES: Mutex<()> = Mutex::new(());

/// Why trust could not be read or recorded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The folder does not exist (only an existing folder can be trusted).
    #[error("Failed to add trusted folder: {0}")]
    Folder(std::io::Error),
    /// The store could not be read or written.
    #[error("{path}: {why}; fix or remove it")]
    Store {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// The trusted folders' file of one home.
#[derive(Debug, Clone)]
pub struct TrustedFolders {
    path: PathBuf,
}

impl TrustedFolders {
    /// The file of the home holding `state_dir`.
    pub fn beside(state_dir: &Path) -> Self {
        TrustedFolders {
            path: home_of(state_dir).join(FILE_NAME),
        }
    }

    /// Whether `folder`, taken as given, is a listed folder or inside one; compared by path
    /// component, so trusting `/w/p` does not trust `/w/p-other`.
    pub fn covers(&self, folder: &Path) -> Result<bool, TrustError> {
        Ok(self
            .folders()?
            .iter()
            .any(|f| folder.starts_with(Path::new(f))))
    }

    /// Trusts `folder` (which must exist), listed by its canonical path, once.
    pub fn add(&self, folder: &Path) -> Result<(), TrustError> {
        let folder = folder.canonicalize().map_err(TrustError::Folder)?;
        let _guard = WRITES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut folders = self.folders()?;
        let text = folder.to_string_lossy().into_owned();
        if folders.contains(&text) {
            return Ok(());
        }
        if folders.len() >= MAX_FOLDERS {
            return Err(self.store_error(format!("it already lists {MAX_FOLDERS} folders")));
        }
        folders.push(text);
        let mut body =
            serde_json::to_string_pretty(&json!({ "trustedFolders": folders })).unwrap_or_default();
        body.push('\n');
        crate::atomic_write(&self.path, body.as_bytes())
            .map_err(|e| self.store_error(e.to_string()))
    }

    /// The listed folders, none without a file.
    pub fn folders(&self) -> Result<Vec<String>, TrustError> {
        match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > MAX_BYTES => {
                return Err(self.store_error(format!("larger than {MAX_BYTES} bytes")));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.store_error(e.to_string())),
        }
        let text =
            std::fs::read_to_string(&self.path).map_err(|e| self.store_error(e.to_string()))?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| self.store_error(e.to_string()))?;
        let Some(list) = doc.get("trustedFolders").and_then(Value::as_array) else {
            return Err(self.store_error("no `trustedFolders` array".into()));
        };
        Ok(list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect())
    }

    fn store_error(&self, why: String) -> TrustError {
        TrustError::Store {
            path: self.path.clone(),
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_listed_once_by_its_canonical_path_and_must_exist() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let trust = TrustedFolders::beside(&home.path().join("session-state"));
        assert!(trust.folders().unwrap().is_empty());
        trust.add(&project).unwrap();
        trust.add(&project.join("sub/..")).unwrap();
        let canonical = project.canonicalize().unwrap();
        assert_eq!(
            trust.folders().unwrap(),
            vec![canonical.to_string_lossy().into_owned()]
        );
        assert!(trust.covers(&canonical.join("sub")).unwrap());
        assert!(
            !trust
                .covers(&canonical.with_file_name("project-other"))
                .unwrap()
        );
        let e = trust.add(&home.path().join("missing")).unwrap_err();
        assert!(
            e.to_string().starts_with("Failed to add trusted folder"),
            "{e}"
        );
        let text = std::fs::read_to_string(home.path().join(FILE_NAME)).unwrap();
        assert_eq!(text.matches("project").count(), 1, "{text}");
    }

    #[test]
    fn a_broken_store_is_named() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(FILE_NAME), "[]").unwrap();
        let trust = TrustedFolders::beside(&home.path().join("session-state"));
        let e = trust.covers(home.path()).unwrap_err();
        assert!(e.to_string().contains(FILE_NAME), "{e}");
    }
}
