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
    /// A complete line longer than a journal line may take in memory: the fold stops before
    /// it, having measured it without holding it.
    #[error(
        "{}:{line} (byte {offset}): a line of {len} bytes, over the {max} bytes a journal line may take in memory ({}); the fold stops here and nothing was changed — see it with `turnstile fsck`, move it aside with `turnstile repair --salvage`, or set the limit above {len}",
        path.display(),
        turnstile_journal::lines::MAX_LINE_BYTES_ENV
    )]
    Oversized {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line.
        offset: u64,
        /// Its length in bytes, the `\n` included.
        len: u64,
        /// The limit it is over.
        max: usize,
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
