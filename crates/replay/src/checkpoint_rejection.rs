//! [`CheckpointRejection`]: why a checkpoint sidecar was not trusted (and the state was folded
//! from the whole journal instead).

use std::path::PathBuf;

use crate::checkpoint_version::CHECKPOINT_VERSION;

/// Why [`crate::Checkpoint::trusted`] refused a checkpoint. Each is a reason to fold the whole
/// journal, never an error of the session: the checkpoint is only an optimisation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointRejection {
    /// The session has no checkpoint yet.
    #[error("no checkpoint")]
    Missing,
    /// The sidecar (or the journal) exists but could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Unreadable {
        /// The file that failed.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// Written by a build with another format.
    #[error("checkpoint format version {found} (this build reads {CHECKPOINT_VERSION})")]
    OtherVersion {
        /// The version in the file.
        found: u32,
    },
    /// Not valid JSON, or not a checkpoint.
    #[error("checkpoint is not valid: {0}")]
    Invalid(String),
    /// Its own fields disagree (the state does not cover its offset, a wrong guard range).
    #[error("checkpoint is inconsistent ({0})")]
    Inconsistent(&'static str),
    /// `events.jsonl` is another file than the one checkpointed (copied, restored, salvaged).
    #[error("the journal was replaced since the checkpoint was written (another file)")]
    Replaced,
    /// The journal is shorter than the checkpoint's offset.
    #[error(
        "the journal ({size} bytes) is shorter than the checkpoint's offset ({offset}): it was truncated"
    )]
    Truncated {
        /// The journal's size now.
        size: u64,
        /// The checkpoint's offset.
        offset: u64,
    },
    /// The byte before the offset is not a newline.
    #[error("the checkpoint's offset {offset} is not at the end of a line")]
    NotAtLineEnd {
        /// The checkpoint's offset.
        offset: u64,
    },
    /// The CRC32C of the guarded bytes before the offset changed.
    #[error("the journal's bytes before the checkpoint's offset changed")]
    GuardChanged,
    /// The line before the offset is not an event.
    #[error("the line before the checkpoint's offset is not an event: {0}")]
    LastLineNotAnEvent(String),
    /// The line before the offset is another event than the one recorded.
    #[error("the line before the checkpoint's offset is not the event the checkpoint recorded")]
    LastIdChanged,
}
