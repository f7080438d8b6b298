//! Rebuilding sessions from their Copilot-format `events.jsonl` journals.
//!
//! This crate is pure: it reads journals (written by turnstile or by the Copilot runtime) and
//! never writes them; the only file it writes is the optional checkpoint sidecar.
//!
//! - [`fold()`] / [`Folder`]: events -> [`SessionState`] (metadata, the conversation as the model
//!   sees it next, counts, open turns, tool calls and requests, task completion, usage, last
//!   event id, size). Incremental, so the loop can keep a state live and a checkpoint can
//!   continue from a saved one.
//! - [`resume_plan()`]: for a journal that ends mid-work, the events to append so the history is
//!   valid again (`session.resume`, failed results for unfinished tool calls, turn ends).
//! - [`audit`]: exact counts and invariant checks over a journal, streaming with bounded memory
//!   on every core; faster than `grep -c` and never fooled by quoted JSON.
//! - [`checkpoint`]: the sidecar that makes loading cost the journal's tail, not its size.
//! - [`view_at`]: the conversation the model was sent at any LLM call of a journal.
//! - [`rewind`]: what rewind markers hide, the rewind points, the marker a new cut needs.

#![warn(missing_docs)]

pub mod audit;
pub mod checkpoint;
mod checkpoint_rejection;
mod checkpoint_version;
mod conversation;
mod error;
pub mod fold;
mod fold_assistant;
mod fold_lenient;
mod fold_read;
mod fold_tool;
mod fold_tool_fast;
mod fold_tool_lean;
mod fold_user_shell;
mod interrupted;
pub mod open_work;
mod raw;
pub mod resume_plan;
pub mod rewind;
pub mod state;
pub mod tracking;
pub mod view;

/// The generator of synthetic journals the tests share (it lives in the test tree).
#[cfg(test)]
#[path = "../tests/common/synth.rs"]
pub(crate) mod synth;

pub use audit::{
    AuditReport, ScanOptions, Violation, ViolationKind, audit_bytes, audit_file, audit_file_with,
    count_type,
};
pub use checkpoint::{
    CHECKPOINT_FILE, Checkpoint, CheckpointInfo, LoadReport, VerifyReport, adopt_checkpoint,
    verify_checkpoint, write_checkpoint,
};
pub use checkpoint_rejection::CheckpointRejection;
pub use conversation::{Hidden, Message, ToolCallRequest, ToolImage};
pub use error::ReplayError;
pub use fold::{FoldedJournal, Folder, fold, fold_file};
pub use open_work::{OpenToolCall, OpenTurn, OpenWork, PendingExternalTool, PendingPermission};
pub use resume_plan::{ResumePlan, resume_plan, resume_record};
pub use rewind::{
    CutKind, RewindError, RewindPoint, hidden_ids, hidden_in_file, plan_cut, rewind_points,
    visible_events,
};
pub use state::{BinaryAsset, SessionState};
pub use tracking::Counters;
pub use view::{TurnView, ViewError, view_at};
