//! A settings file as a whole JSON object, for the code that edits it: `settings.json`
//! (`user.settings.set`, `mcp.config.enable`/`disable`) and `config.json` (the stored logins).
//! Read with its comments blanked, bounded; written as the Copilot CLI writes it: two-space
//! JSON and a newline (its comments are not kept, as the CLI keeps none), keys in their order
//! (new keys last), owner-only (`0600`), replaced whole by [`crate::AtomicWrite`]; a symbolic
//! link is followed to its file, so a linked dotfile stays a link.
//!
//! Every read-modify-write of one of these files in this process holds [`edit_lock`], so two
//! edits of different keys never lose one another.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Map, Value};

use super::{MAX_FILE_BYTES, SettingsError};
use crate::jsonc::strip_comments;

/// The two lines the Copilot CLI writes above `config.json`'s object.
pub const CONFIG_HEADER: &str =
    "// User settings belong in settings.json.\n// This file is managed automatically.\n";

/// Serializes this process's read-modify-write of the settings files.
static EDITS: Mutex<()> = Mutex::new(());

/// Held across one read-modify-write of a settings file.
pub fn edit_lock() -> MutexGuard<'static, ()> {
    EDITS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a settings file's object could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// Unreadable or too large (the file's error).
    #[error(transparent)]
    File(#[from] SettingsError),
    /// Not JSON, or JSON that is not an object.
    #[error("{}: {why}; fix or remove it", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// The parser's words, or `not a JSON object`.
        why: String,
    },
    /// The new file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

impl DocumentError {
    /// The error's words without the file's path (for messages that name it their own way).
    pub fn why(&self) -> String {
        match self {
            DocumentError::NotAnObject { why, .. } => format!("{why}; fix or remove it"),
            DocumentError::Write { source, .. } => source.to_string(),
            DocumentError::File(e) => e.to_string(),
        }
    }
}

/// The file's object; `None` when the file does not exist, an empty object when it holds
/// only blanks and comments.
pub fn read_object(path: &Path) -> Result<Option<Map<String, Value>>, DocumentError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let stripped = strip_comments(&text);
    if stripped.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_str(&stripped) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err(DocumentError::NotAnObject {
            path: path.to_path_buf(),
            why: "not a JSON object".into(),
        }),
        Err(e) => Err(DocumentError::NotAnObject {
            path: path.to_path_buf(),
            why: e.to_string(),
        }),
    }
}

/// The file's text, `None` when it does not exist; a file over the settings cap is refused.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, SettingsError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(SettingsError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|source| SettingsError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// Replaces the file with `object`, `header` (comment lines) above it.
pub fn write_object(
    path: &Path,
    object: &Map<String, Value>,
    header: &str,
) -> Result<(), DocumentError> {
    let failed = |source: std::io::Error| DocumentError::Write {
        path: path.to_path_buf(),
        source,
    };
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path).map_err(failed)?,
        _ => path.to_path_buf(),
    };
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let body = serde_json::to_string_pretty(object).map_err(|e| failed(e.into()))?;
    let text = format!("{header}{body}\n");
    crate::AtomicWrite::new(&target)
        .mode(0o600)
        .write(|out| std::io::Write::write_all(out, text.as_bytes()))
        .map_err(|e| failed(std::io::Error::other(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn written_as_the_cli_writes_keys_in_order_comments_dropped() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("settings.json");
        std::fs::write(&path, "// mine\n{\"b\": 1, /* x */ \"a\": [true]}\n").unwrap();
        let mut object = read_object(&path).unwrap().unwrap();
        object.insert("c".into(), json!("z"));
        write_object(&path, &object, "").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"b\": 1,\n  \"a\": [\n    true\n  ],\n  \"c\": \"z\"\n}\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn absent_empty_and_damaged_files() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.json");
        assert!(read_object(&path).unwrap().is_none());
        std::fs::write(&path, CONFIG_HEADER).unwrap();
        assert!(read_object(&path).unwrap().unwrap().is_empty());
        for damaged in ["{ bad", "[1]"] {
            std::fs::write(&path, damaged).unwrap();
            let e = read_object(&path).unwrap_err();
            assert!(matches!(e, DocumentError::NotAnObject { .. }), "{e}");
        }
    }
}
