//! The one-writer-per-session lock: an exclusive OS lock on `writer.lock`, which also names
//! its holder so a refused writer can say who holds the session.
//!
//! The lock is an advisory `flock` taken with std's `File::try_lock`; the kernel drops it when
//! the holder's process dies, so a crashed writer never blocks the next one. The holder record
//! in the file is only for messages; the lock itself is the truth.
//!
//! The Copilot CLI does not take this lock; it leaves an `inuse.<pid>.lock` marker instead
//! ([`crate::inuse`]). Taking the lock therefore also checks for a live process's marker (and
//! refuses as if the flock were held), and leaves this process's own marker while it holds the
//! lock, so the CLI sees turnstile too.

use std::fs::{File, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::inuse;
use crate::layout::{LOCK_FILE, LayoutError};
use crate::session_dir::{Access, SessionDir};
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
    /// Another live writer holds the session (turnstile's flock, or the Copilot CLI's
    /// in-use marker of a live process).
    #[error("session {} is in use by another {} ({}); stop that process or wait for it to finish", dir.display(), if marker.is_some() { "process" } else { "writer" }, holder_text(holder.as_ref(), marker.as_deref()))]
    Held {
        /// The session directory.
        dir: PathBuf,
        /// What the lock file (or the marker) says about the holder, when readable.
        holder: Option<LockHolder>,
        /// The in-use marker of the holder, when that is what refused the lock.
        marker: Option<PathBuf>,
    },
    /// The session directory or the lock file is a link, or not what it should be.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The lock file could not be opened or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

fn holder_text(holder: Option<&LockHolder>, marker: Option<&Path>) -> String {
    let who = holder.map_or_else(|| "holder unknown".to_string(), ToString::to_string);
    match marker {
        Some(m) => format!("{who}, in-use marker {}", m.display()),
        None => who,
    }
}

/// A held writer lock; dropping it releases the lock and removes this process's marker.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
    dir: SessionDir,
    pid: u32,
}

impl WriterLock {
    /// Takes the exclusive lock at `path` (a session directory's `writer.lock`) without
    /// waiting, recording this process as holder.
    pub fn acquire(path: &Path) -> Result<Self, LockError> {
        let dir_path = path.parent().unwrap_or(Path::new("."));
        let dir_path = if dir_path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir_path
        };
        if path.file_name().and_then(|n| n.to_str()) != Some(LOCK_FILE) {
            return Err(LayoutError::WrongKind {
                path: path.to_path_buf(),
                what: "is not a session's writer.lock",
            }
            .into());
        }
        Self::acquire_in(SessionDir::open(dir_path)?)
    }

    /// Takes the lock of the session directory `dir` (see [`Self::acquire`]).
    pub fn acquire_in(dir: SessionDir) -> Result<Self, LockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = dir.open_file(LOCK_FILE, Access::CreateReadWrite)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let holder = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| serde_json::from_str(text.trim()).ok());
                return Err(LockError::Held {
                    dir: dir.path().to_path_buf(),
                    holder,
                    marker: None,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let pid = std::process::id();
        // Under the flock no turnstile process competes; a live marker is the Copilot CLI's
        // (or a process that kept one without the lock).
        if let Some(marker) = inuse::live_holder(&dir, pid)? {
            let _ = file.unlock();
            return Err(LockError::Held {
                dir: dir.path().to_path_buf(),
                holder: Some(LockHolder {
                    pid: marker.pid,
                    host: gethostname::gethostname().to_string_lossy().into_owned(),
                    started_at: marker
                        .since
                        .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
                        .map(|d| Timestamp::from_millis(d.as_millis() as i64).to_text())
                        .unwrap_or_else(|| "an unknown time".into()),
                }),
                marker: Some(marker.path),
            });
        }
        let record = serde_json::to_string(&LockHolder::current()).unwrap_or_default();
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(record.as_bytes())
            .and_then(|_| file.write_all(b"\n"))
            .map_err(io)?;
        inuse::write_own(&dir, pid)?;
        Ok(WriterLock {
            file,
            path,
            dir,
            pid,
        })
    }

    /// The session directory the lock is in.
    pub fn dir(&self) -> &SessionDir {
        &self.dir
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the holder recorded in a lock file, if any (for messages only).
    pub fn read_holder(path: &Path) -> Option<LockHolder> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut text = String::new();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .ok()
            .and_then(|_| serde_json::from_str(text.trim()).ok())
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // The marker goes first: once the flock is released another writer may write its own.
        if let Err(e) = inuse::remove_own(&self.dir, self.pid) {
            tracing::warn!(error = %e, "cannot remove the in-use marker");
        }
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
