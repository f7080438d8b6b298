//! Trusted folders (`session.permissions.folderTrust.*`), kept in `trusted-folders.json`
//! beside the state root as `{"trustedFolders": [PATH, ...]}`. A folder is trusted when it or
//! a folder above it is listed, as in the Copilot CLI.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

/// The file name.
pub(crate) const FILE_NAME: &str = "trusted-folders.json";

/// Folders kept at most.
const MAX_FOLDERS: usize = 4096;

/// Larger files are refused rather than read into memory.
const MAX_BYTES: u64 = 4 << 20;

static WRITES: Mutex<()> = Mutex::new(());

/// Why trust could not be read or recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrustError {
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

/// The trusted folders of one home.
#[derive(Debug, Clone)]
pub(crate) struct FolderTrust {
    path: PathBuf,
}

impl FolderTrust {
    /// The store of the home holding `state_dir`.
    pub(crate) fn beside(state_dir: &Path) -> Self {
        let home = state_dir.parent().unwrap_or(state_dir);
        FolderTrust {
            path: home.join(FILE_NAME),
        }
    }

    /// Whether `folder` (or a folder above it) is trusted; compared by path component, so
    /// trusting `/w/p` does not trust `/w/p-other`.
    pub(crate) fn is_trusted(&self, folder: &Path) -> Result<bool, TrustError> {
        let folder = canonical_or_lexical(folder);
        Ok(self
            .folders()?
            .iter()
            .any(|f| folder.starts_with(Path::new(f))))
    }

    /// Trusts `folder` (which must exist).
    pub(crate) fn add(&self, folder: &Path) -> Result<(), TrustError> {
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
        let tmp = self
            .path
            .with_file_name(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, body)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| self.store_error(e.to_string()))
    }

    fn folders(&self) -> Result<Vec<String>, TrustError> {
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

/// The folder as trust compares it: resolved through links when it exists.
fn canonical_or_lexical(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| crate::permission_state::lexical(folder))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_covers_subfolders_and_needs_the_folder() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let trust = FolderTrust::beside(&home.path().join("session-state"));
        assert!(!trust.is_trusted(&project).unwrap());
        trust.add(&project).unwrap();
        trust.add(&project.join("sub/..")).unwrap();
        assert!(trust.is_trusted(&project).unwrap());
        assert!(trust.is_trusted(&project.join("sub")).unwrap());
        assert!(trust.is_trusted(&project.join("not-yet")).unwrap());
        assert!(
            !trust
                .is_trusted(&home.path().join("project-other"))
                .unwrap()
        );
        assert!(!trust.is_trusted(&project.join("../elsewhere")).unwrap());
        assert!(!trust.is_trusted(home.path()).unwrap());
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
        let trust = FolderTrust::beside(&home.path().join("session-state"));
        let e = trust.is_trusted(home.path()).unwrap_err();
        assert!(e.to_string().contains(FILE_NAME), "{e}");
    }
}
