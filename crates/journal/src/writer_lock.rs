//! The one-writer-per-session lock: an exclusive OS lock on `writer.lock`, which also names
//! its holder so a refused writer can say who holds the session.
//!
//! The lock is an advisory `flock` taken with std's `File::try_lock`; the kernel drops it when
//! the holder's process dies, so a crashed writer never blocks the next one. The holder record
//! in the file is only for messages; the lock itself is the truth.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::timestamp::Timestamp;

/// Who holds (or held) a session's writer lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockHolder {
    /// Process id of the holder.
    pub pid: u32,
    /// Host name of the holder.
    pub host: String,
    /// When the holder took the lock.
    pub started_at: String,
}

impl LockHolder {
    fn current() -> Self {
        LockHolder {
            pid: std::process::id(),
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            started_at: Timestamp::now().to_text(),
        }
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} on {} since {}",
            self.pid, self.host, self.started_at
        )
    }
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live writer holds the session.
    #[error("session {} is in use by another writer ({}); stop that process or wait for it to finish", dir.display(), holder.as_ref().map_or_else(|| "holder unknown".to_string(), ToString::to_string))]
    Held {
        /// The session directory.
        dir: PathBuf,
        /// What the lock file says about the holder, when readable.
        holder: Option<LockHolder>,
    },
    /// The lock file could not be opened or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// A held writer lock; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

impl WriterLock {
    /// Takes the exclusive lock at `path` without waiting, recording this process as holder.
    pub fn acquire(path: &Path) -> Result<Self, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let holder = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| serde_json::from_str(text.trim()).ok());
                return Err(LockError::Held {
                    dir: path.parent().unwrap_or(path).to_path_buf(),
                    holder,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let record = serde_json::to_string(&LockHolder::current()).unwrap_or_default();
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(record.as_bytes())
            .and_then(|_| file.write_all(b"\n"))
            .map_err(io)?;
        Ok(WriterLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the holder recorded in a lock file, if any (for messages only).
    pub fn read_holder(path: &Path) -> Option<LockHolder> {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(text.trim()).ok())
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the flock too; unlocking first makes it immediate
        // even if another handle to the same open file description is still alive.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_with_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("writer.lock");
        let first = WriterLock::acquire(&path).unwrap();
        let err = WriterLock::acquire(&path).unwrap_err();
        match &err {
            LockError::Held {
                holder: Some(h), ..
            } => assert_eq!(h.pid, std::process::id()),
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id()))
        );
        drop(first);
        WriterLock::acquire(&path).expect("released on drop");
    }
}
