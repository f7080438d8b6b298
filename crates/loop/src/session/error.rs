//! The errors of the loop crate's sessions.

use turnstile_journal::Uuid;
use turnstile_replay::RewindError;

/// Errors of the loop crate.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The journal refused or failed.
    #[error(transparent)]
    Journal(#[from] turnstile_journal::WriteError),
    /// The journal could not be folded.
    #[error(transparent)]
    Replay(#[from] turnstile_replay::ReplayError),
    /// The session layout is wrong.
    #[error(transparent)]
    Layout(#[from] turnstile_journal::layout::LayoutError),
    /// The session's task has stopped (after shutdown or a fatal journal error).
    #[error("session {0} is closed")]
    Closed(Uuid),
    /// The journal could not be read back (for the pending work a resume continues).
    #[error(transparent)]
    Read(#[from] turnstile_journal::ReadError),
    /// A rewind or truncation that cannot be made (unknown event, not a user turn).
    #[error(transparent)]
    Rewind(#[from] RewindError),
}
