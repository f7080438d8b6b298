//! What can stop a fixture from loading or a replay from running (a divergence is not an error:
//! it is a result, see [`crate::Divergence`]).

use std::path::PathBuf;

/// A fixture that cannot be loaded, prepared or replayed.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The path is neither a fixture directory, a manifest nor a journal.
    #[error("{}: {reason}", path.display())]
    NotAFixture {
        /// What was given.
        path: PathBuf,
        /// Why it is not a fixture.
        reason: String,
    },
    /// The manifest (`fixture.json`) is not valid.
    #[error("{}: not a valid fixture manifest: {reason}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The recorded or the replayed journal could not be read.
    #[error(transparent)]
    Journal(#[from] turnstile_journal::ReadError),
    /// The recording and the replay could not be compared by `turnstile diff`.
    #[error(transparent)]
    Diff(#[from] turnstile_diff::DiffError),
    /// The recording cannot be replayed as it is (e.g. it has no prompt).
    #[error("{}: {reason}", path.display())]
    Unreplayable {
        /// The recorded journal.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A setting (permission pattern, hook file) the replay needs is invalid.
    #[error("{0}")]
    Setup(String),
    /// The agent loop refused or failed (journal lock, write error, ...).
    #[error("the replayed session failed: {0}")]
    Session(String),
}

impl FixtureError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| FixtureError::Io { path, source }
    }
}
