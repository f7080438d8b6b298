//! The first divergence between two sessions.
//!
//! `turnstile diff A B` and `turnstile replay --check` ask the same question of two
//! Copilot-format journals (turnstile's or the Copilot CLI's): where do these sessions part?
//! This crate walks both journals at once, a line at a time, and compares them turn by turn
//! (a turn is one LLM call: the conversation it sent, the answer) and tool call by tool call
//! (name, arguments, result), stopping at the first difference that matters. What always
//! differs between two runs is normalised first ([`normalise`]): ids, timestamps, durations,
//! the session's id and directory, its working directory and temporary directories.
//!
//! Two journals of one runtime are compared event by event ([`Profile::Strict`]); a Copilot
//! CLI journal and a turnstile one by what the model saw and did ([`Profile::Behaviour`]).
//!
//! ```ignore
//! // The same lines run as `tests/fixtures.rs`'s `a_changed_tool_result_is_named`.
//! let report = turnstile_diff::diff_files(a, b, &turnstile_diff::Options::default())?;
//! let first = report.divergence.expect("the sessions differ");
//! assert_eq!(first.kind, turnstile_diff::DivergenceKind::ToolResult);
//! assert_eq!(first.field.as_deref(), Some("data.result.content"));
//! ```
//!
//! Memory does not follow the journals' length but for the two folded conversations (what
//! `turnstile resume` holds of a session) and the ids seen; lines are read one at a time,
//! each bounded by `TURNSTILE_MAX_LINE_BYTES` (`docs/security.md`).

pub mod behaviour;
mod compare;
mod error;
mod first_difference;
mod neutral;
pub mod normalise;
mod profile;
mod report;
mod side;
pub mod volatile;

pub use compare::{Options, diff_files};
pub use error::DiffError;
pub use first_difference::{LeafDiff, first_difference};
pub use neutral::neutral_result;
pub use profile::{Profile, RUNTIME_SCAN_LINES, Runtime};
pub use report::{
    At, Compared, Divergence, DivergenceKind, Journal, Report, SHOWN_CHARS, describe, excerpt,
};
pub use side::{Place, StepKind};
