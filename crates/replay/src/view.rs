//! The model's view at any LLM call: the conversation a journal's N-th main-agent call was
//! sent (or the next call will be), rebuilt from the journal alone.

use std::path::Path;

use turnstile_journal::{JournalReader, ReadMode};

use crate::error::ReplayError;
use crate::fold::Folder;
use crate::state::SessionState;

/// Events the runtime records between a turn's start and its model call (`turnstile-diff`
/// reads its requests by the same list).
pub const PRE_CALL: &[&str] = &[
    "session.truncation",
    "session.compaction_start",
    "session.compaction_complete",
    "session.usage_info",
    "session.info",
    "session.warning",
];

/// The state just before one main-agent LLM call.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnView {
    /// The call (1-based, main-agent `assistant.turn_start` in journal order); `None` for the
    /// call after the journal's end.
    pub turn: Option<u64>,
    /// Line of that call's `assistant.turn_start` (`None` for the next call).
    pub line: Option<u64>,
    /// Main-agent calls the whole journal records.
    pub turns: u64,
    /// The folded state before the call: `conversation` is what the model was sent.
    pub state: SessionState,
}

/// Why a view cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The journal could not be read.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The journal has fewer main-agent calls than asked for.
    #[error(
        "{path}: there is no LLM call {turn}: the journal records {turns} (ask for 1..={turns}, or for none to see the next request)"
    )]
    NoSuchTurn {
        /// The journal.
        path: String,
        /// The call asked for.
        turn: u64,
        /// The calls it has.
        turns: u64,
    },
}

/// The view before main-agent call `turn` (1-based) of the journal at `path`, or before the
/// next call when `turn` is `None`.
pub fn view_at(path: &Path, turn: Option<u64>) -> Result<TurnView, ViewError> {
    if turn == Some(0) {
        return Err(ViewError::NoSuchTurn {
            path: path.display().to_string(),
            turn: 0,
            turns: count_main_turns(path)?,
        });
    }
    let reader = JournalReader::open(path, ReadMode::Lenient).map_err(ReplayError::from)?;
    let mut folder = Folder::new();
    let mut seen = 0u64;
    let mut found: Option<(SessionState, u64)> = None;
    // Between the call's `assistant.turn_start` and its answer: a truncation there is of the
    // request the call sent (the runtime truncates right before sending).
    let mut before_call = false;
    for record in reader {
        let record = record.map_err(ReplayError::from)?;
        let event = &record.event;
        let kind = event.event_type.as_str();
        if kind == "assistant.turn_start" && event.agent_id.is_none() {
            seen += 1;
            if found.is_none() && Some(seen) == turn {
                found = Some((folder.state().clone(), record.line));
                before_call = true;
                folder.apply_record(&record);
                continue;
            }
        }
        before_call &= PRE_CALL.contains(&kind);
        folder.apply_record(&record);
        if before_call
            && kind == "session.truncation"
            && let Some((state, _)) = &mut found
        {
            *state = folder.state().clone();
        }
    }
    match (turn, found) {
        (None, _) => Ok(TurnView {
            turn: None,
            line: None,
            turns: seen,
            state: folder.into_state(),
        }),
        (Some(turn), Some((state, line))) => Ok(TurnView {
            turn: Some(turn),
            line: Some(line),
            turns: seen,
            state,
        }),
        (Some(turn), None) => Err(ViewError::NoSuchTurn {
            path: path.display().to_string(),
            turn,
            turns: seen,
        }),
    }
}

fn count_main_turns(path: &Path) -> Result<u64, ReplayError> {
    let mut turns = 0;
    for record in JournalReader::open(path, ReadMode::Lenient)? {
        let record = record?;
        if record.event.event_type.as_str() == "assistant.turn_start"
            && record.event.agent_id.is_none()
        {
            turns += 1;
        }
    }
    Ok(turns)
}
