//! The timeline builder's state, which the routing (`mod.rs`) and each step (`turns.rs`,
//! `calls.rs`, `facts.rs`) share: the [`Timeline`] itself, an open turn, where an event sits,
//! and the two helpers every step uses.

use std::collections::HashMap;

use super::caps::{MAX_NOTES, NOTE_CAP};
use super::header::SessionFacts;
use crate::items::{Clipped, Item, Lane, Mark, MarkKind, Note, Turn};

/// The builder: feed records in journal order, collect items.
#[derive(Debug, Default)]
pub struct Timeline {
    pub(super) facts: SessionFacts,
    pub(super) open: HashMap<Lane, OpenTurn>,
    pub(super) lanes: Vec<String>,
    pub(super) turns: u64,
    /// Permission requests waiting for their answer: request id -> (call id, summary).
    pub(super) asks: HashMap<String, (Option<String>, String)>,
    /// The process writing since the last start or resume has recorded its shutdown.
    pub(super) closed_cleanly: bool,
    pub(super) started: bool,
}

/// Where an event sits: its journal line, its agent's lane and its time.
pub(super) struct At {
    pub(super) line: u64,
    pub(super) lane: Lane,
    pub(super) ms: i64,
}

impl At {
    /// A mark at this event.
    pub(super) fn mark(&self, kind: MarkKind, text: &str) -> Item {
        Item::Mark(Mark {
            kind,
            line: self.line,
            lane: self.lane.clone(),
            text: Clipped::new(text, NOTE_CAP),
        })
    }
}

/// A turn being assembled.
#[derive(Debug)]
pub(super) struct OpenTurn {
    pub(super) turn: Turn,
    pub(super) start_ms: i64,
    pub(super) last_ms: i64,
    pub(super) first_tool_ms: Option<i64>,
    pub(super) last_tool_ms: Option<i64>,
    /// Start time of each call by position in `turn.calls`.
    pub(super) call_start_ms: Vec<i64>,
}

pub(super) fn push_note(notes: &mut Vec<Note>, note: Note) {
    if notes.len() < MAX_NOTES {
        notes.push(note);
    }
}

/// Milliseconds from `from` to `to`; a clock that went backwards counts as zero.
pub(super) fn span(from: i64, to: i64) -> u64 {
    u64::try_from(to.saturating_sub(from)).unwrap_or(0)
}
