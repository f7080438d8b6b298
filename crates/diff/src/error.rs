//! Why two journals could not be compared.

use std::path::PathBuf;

use turnstile_journal::ReadError;

/// A journal that cannot be read to its end: the comparison stops at the first such line.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// A line the journal reader refuses (not JSON, not an event, torn, longer than
    /// `TURNSTILE_MAX_LINE_BYTES`), or the file cannot be opened; it names the file and line.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// An event's `data` the reader let through but that is not a JSON value.
    #[error("{}:{line}: the event's data is not JSON: {source}", path.display())]
    Data {
        /// The journal.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// What the parser said.
        source: serde_json::Error,
    },
}

impl DiffError {
    /// The line the error is at, when it is one line's.
    pub fn line(&self) -> Option<u64> {
        match self {
            DiffError::Read(e) => e.line(),
            DiffError::Data { line, .. } => Some(*line),
        }
    }
}
