//! Errors of the replay crate; each names the file (and line, when there is one).

use std::io;
use std::path::PathBuf;

use turnstile_journal::ReadError;

/// What went wrong reading a journal or a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The journal could not be read, or a line in its middle is damaged.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The checkpoint sidecar could not be written.
    #[error("{}: cannot write the checkpoint: {message}", path.display())]
    CheckpointWrite {
        /// The checkpoint file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A worker thread of the audit panicked (a bug; the message says where).
    #[error("{}: audit worker failed: {message}", path.display())]
    Worker {
        /// The journal being audited.
        path: PathBuf,
        /// The panic message.
        message: String,
    },
}

impl ReplayError {
    /// An I/O error about `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        ReplayError::Io {
            path: path.into(),
            source,
        }
    }
}
