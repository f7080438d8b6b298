//! Why a writer could not open or append: each variant names the journal and what to do.

use std::io;
use std::path::PathBuf;

use uuid::Uuid;

use crate::layout::LayoutError;
use crate::repair::RepairError;
use crate::scan::ScanError;
use crate::sink::SinkError;
use crate::writer_lock::LockError;

/// Why a writer could not open or append.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The session is locked by another writer.
    #[error(transparent)]
    Locked(#[from] LockError),
    /// Paths or ids are wrong.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The journal could not be scanned.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// Cutting a torn tail failed.
    #[error(transparent)]
    Repair(#[from] RepairError),
    /// A line in the middle of the journal is bad; appending is refused.
    #[error("{}:{line} (byte {offset}): {message}; the journal is damaged before its last line, so nothing will be appended; inspect it with `turnstile fsck` and repair it with `turnstile repair --salvage`", path.display())]
    Damaged {
        /// The journal.
        path: PathBuf,
        /// The first bad line.
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// What is wrong with it.
        message: String,
    },
    /// An ephemeral event was handed to the journal.
    #[error("event type {0} is ephemeral and is never written to disk")]
    Ephemeral(String),
    /// The event does not continue the chain of `parentId`s.
    #[error("event {id} has parentId {parent:?} but the journal's last event is {last:?}")]
    BrokenChain {
        /// The refused event.
        id: Uuid,
        /// Its parent.
        parent: Option<Uuid>,
        /// What it should have been.
        last: Option<Uuid>,
    },
    /// A write or fsync failed earlier; this writer accepts nothing more.
    #[error("{}: the journal writer is poisoned by an earlier failure ({reason}); reopen the session to recover", path.display())]
    Poisoned {
        /// The journal.
        path: PathBuf,
        /// The first failure.
        reason: String,
    },
    /// The journal's replica (a remote store) refused or failed; the writer is poisoned.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// The seal key named by `TURNSTILE_SEAL_KEY` cannot be used.
    #[error(transparent)]
    SealKey(#[from] crate::seal_file::SealKeyError),
    /// An I/O error.
    #[error("{}: {source}", path.display())]
    Io {
        /// The journal.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}
