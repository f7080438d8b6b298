//! Recorded sessions as tests.
//!
//! A recorded `events.jsonl` is a deterministic test of an agent: this crate runs the
//! recording's prompts again through the real agent loop, with the replay provider answering
//! each LLM call with the recorded answer and the real tools working in a directory, and
//! compares the new journal with the recording. What must differ between two runs (ids,
//! timestamps, durations, the working directory's path) is ignored; every other difference is
//! a [`Divergence`], with the line of each journal, the field, and the turn it belongs to.
//!
//! A fixture is a directory with the journal and the files it ran against:
//!
//! ```text
//! fixtures/multi-turn/
//!   events.jsonl     the recording
//!   workdir/         the working directory's contents when it was recorded
//!   fixture.json     optional: settings the journal does not record (permissions, ...)
//! ```
//!
//! In a test suite (the same steps run as `tests/fixtures.rs`'s
//! `a_recorded_multi_turn_session_replays_exactly` and
//! `changing_a_file_the_recording_read_names_the_tool_result_that_differs`):
//!
//! ```ignore
//! use turnstile_testing::{DivergenceKind, Fixture};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
//! // Replays in a temporary copy of workdir/ and compares with the recording.
//! let fixture = Fixture::load(repo.join("fixtures/multi-turn"))?;
//! let report = fixture.check()?;
//! assert!(report.passed(), "{report}");
//!
//! // Change a file the recording read: the check says where the agent's run differs.
//! let work = tempfile::tempdir()?;
//! fixture.prepare_workdir(work.path())?;
//! std::fs::write(work.path().join("inventory.csv"), "item,count\napples,0\n")?;
//! let report = fixture.check_in(work.path())?;
//! let first = report.first().expect("a divergence");
//! assert_eq!(first.kind, DivergenceKind::Field);
//! assert_eq!(first.event_type, "tool.execution_complete");
//! assert_eq!(first.field.as_deref(), Some("data.result.content"));
//! # Ok(()) }
//! ```
//!
//! The comparison rules are documented in `docs/fixtures.md`; `turnstile replay --check` is
//! the same check on the command line.

mod behaviour;
mod check;
mod comparable;
mod diff;
mod divergence;
mod error;
mod fixture;
mod history_fit;
mod journal;
mod manifest;
mod plan;
mod replay_check;
mod runner;
mod sent;
mod turns;
mod workdir;

pub use check::{CheckReport, MAX_DIVERGENCES, check_run};
pub use comparable::comparable_events;
pub use divergence::{Divergence, DivergenceKind, LineRef};
pub use error::FixtureError;
pub use fixture::{Fixture, discover};
pub use journal::{JournalLine, read_journal};
pub use manifest::{Manifest, Profile};
pub use runner::{Observer, Replay, ReplayRun};
pub use sent::{SentCheck, Shape, check_sent, shape_of_message, shape_of_wire};
pub use turns::TurnRef;
pub use turnstile_diff::volatile::{VOLATILE_FIELDS, VOLATILE_TEXT};
pub use workdir::copy_tree;
