//! Rewinds and truncations on an append-only journal: which events a rewind marker hides,
//! the events a client sees (as the Copilot runtime shows them after cutting its file), the
//! points a session can rewind to, and the marker a new rewind needs.
//!
//! The runtime's `session.history.truncate`/`rewind` remove an event and everything after it
//! from `events.jsonl`. turnstile appends a `session.snapshot_rewind` instead
//! ([`turnstile_journal::REWIND_MARKER`]) naming the first event removed and how many events
//! of the view it removes: the last `eventsRemoved` events before it that are still visible.

use std::collections::HashSet;
use std::path::Path;

use turnstile_journal::payload::{SnapshotRewind, UserMessage};
use turnstile_journal::{Event, JournalReader, REWIND_MARKER, ReadError, ReadMode, Uuid};

use crate::ReplayError;

/// Why a rewind or truncation cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    /// The event is not in the session's current view (never was, or a rewind removed it).
    #[error("Event {0} not found")]
    NotFound(String),
    /// A rewind target that is not a main-agent `user.message` of the current view.
    #[error("Rewind event '{0}' is not a current root user turn")]
    NotUserTurn(String),
    /// The cut would remove a compaction: the history it replaced is no longer in the fold.
    #[error(
        "event {0} comes before the compaction at event {1}; rewinding past a compaction is not supported"
    )]
    BeforeCompaction(String, String),
}

/// Ids of the events that rewind markers hide: the markers and the events each removed.
pub fn hidden_ids<'a>(events: impl IntoIterator<Item = &'a Event>) -> HashSet<Uuid> {
    let mut visible: Vec<Uuid> = Vec::new();
    let mut hidden = HashSet::new();
    for event in events {
        if event.event_type.as_str() != REWIND_MARKER {
            visible.push(event.id);
            continue;
        }
        hidden.insert(event.id);
        let removed = marker_removes(event);
        let keep = visible.len().saturating_sub(removed);
        hidden.extend(visible.drain(keep..));
    }
    hidden
}

/// [`hidden_ids`] of the journal at `path`; a journal without a marker (found by the exact
/// fast count) is not parsed. A torn last line is left out, as readers do.
pub fn hidden_in_file(path: &Path) -> Result<HashSet<Uuid>, ReplayError> {
    if crate::count_type(path, REWIND_MARKER)? == 0 {
        return Ok(HashSet::new());
    }
    let mut events = Vec::new();
    for record in JournalReader::open(path, ReadMode::Lenient)? {
        match record {
            Ok(record) => events.push(record.event),
            Err(ReadError::TornTail { .. }) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(hidden_ids(&events))
}

/// The events as a client of the runtime sees them: without what rewinds removed, without
/// the markers.
pub fn visible_events(events: Vec<Event>) -> Vec<Event> {
    let hidden = hidden_ids(&events);
    if hidden.is_empty() {
        return events;
    }
    events
        .into_iter()
        .filter(|e| !hidden.contains(&e.id))
        .collect()
}

/// How many events a marker removes (0 for a marker whose data does not read).
fn marker_removes(event: &Event) -> usize {
    event.payload::<SnapshotRewind>().map_or(0, |p| {
        usize::try_from(p.events_removed).unwrap_or(usize::MAX)
    })
}

/// A main-agent user turn a session can rewind to (the schema's `HistoryRewindPoint`, less
/// the file-change figures turnstile does not capture).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPoint {
    /// The `user.message` event.
    pub event_id: Uuid,
    /// What the user typed.
    pub user_message: String,
    /// When it was sent.
    pub timestamp: String,
    /// Injected by autopilot rather than typed.
    pub is_autopilot_continuation: bool,
}

/// The root user turns of `visible` events (see [`visible_events`]), in order.
pub fn rewind_points(visible: &[Event]) -> Vec<RewindPoint> {
    visible
        .iter()
        .filter(|e| is_root_user_turn(e))
        .filter_map(|e| {
            let p = e.payload::<UserMessage>().ok()?;
            Some(RewindPoint {
                event_id: e.id,
                user_message: p.content,
                timestamp: e.timestamp.to_string(),
                is_autopilot_continuation: p.is_autopilot_continuation == Some(true),
            })
        })
        .collect()
}

fn is_root_user_turn(event: &Event) -> bool {
    event.event_type.as_str() == "user.message" && event.agent_id.is_none()
}

/// What a cut asks for: any event (`session.history.truncate`) or a user turn (`rewind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutKind {
    /// Remove the event and everything after it, whatever its type.
    Truncate,
    /// The event must be a root `user.message`.
    UserTurn,
}

/// The marker that removes `target` and every later event of `visible`.
pub fn plan_cut(
    visible: &[Event],
    target: &str,
    kind: CutKind,
) -> Result<SnapshotRewind, RewindError> {
    let position = visible
        .iter()
        .position(|e| e.id.to_string() == target)
        .ok_or_else(|| match kind {
            CutKind::Truncate => RewindError::NotFound(target.to_owned()),
            CutKind::UserTurn => RewindError::NotUserTurn(target.to_owned()),
        })?;
    if kind == CutKind::UserTurn && !is_root_user_turn(&visible[position]) {
        return Err(RewindError::NotUserTurn(target.to_owned()));
    }
    if let Some(compaction) = visible[position..]
        .iter()
        .find(|e| e.event_type.as_str() == "session.compaction_complete" && e.agent_id.is_none())
    {
        return Err(RewindError::BeforeCompaction(
            target.to_owned(),
            compaction.id.to_string(),
        ));
    }
    Ok(SnapshotRewind {
        up_to_event_id: target.to_owned(),
        events_removed: (visible.len() - position) as u64,
    })
}
