//! A turn from its `assistant.turn_start` to its `assistant.turn_end`: model time, tool time,
//! the answer and its tokens.

use turnstile_journal::payload::{AssistantMessage, AssistantTurnStart};

use super::caps::TEXT_CAP;
use super::state::{At, OpenTurn, Timeline, span};
use crate::items::{Clipped, Item, MarkKind, Turn};

impl Timeline {
    /// A turn start hands out the lane's previous turn, unended, if it is still open.
    pub(super) fn on_turn_start(
        &mut self,
        start: &AssistantTurnStart,
        at: At,
        out: &mut Vec<Item>,
    ) {
        if let Some(previous) = self.open.remove(&at.lane) {
            out.push(Item::Turn(close(previous, None)));
        }
        self.turns += 1;
        self.open.insert(
            at.lane.clone(),
            OpenTurn {
                turn: Turn {
                    ordinal: self.turns,
                    turn_id: start.turn_id.clone(),
                    lane: at.lane,
                    line: at.line,
                    ..Turn::default()
                },
                start_ms: at.ms,
                last_ms: at.ms,
                first_tool_ms: None,
                last_tool_ms: None,
                call_start_ms: Vec::new(),
            },
        );
    }

    pub(super) fn on_message(&mut self, msg: &AssistantMessage, at: &At, out: &mut Vec<Item>) {
        let Some(open) = self.open.get_mut(&at.lane) else {
            out.push(at.mark(
                MarkKind::Info,
                &format!("assistant message outside a turn: {}", msg.content),
            ));
            return;
        };
        if open.turn.answer.shown.is_empty() && open.turn.model_ms == 0 {
            open.turn.model_ms = span(open.start_ms, at.ms);
        }
        if !msg.content.is_empty() {
            open.turn.answer = Clipped::new(&msg.content, TEXT_CAP);
        }
        if let Some(tokens) = msg.output_tokens {
            *open.turn.output_tokens.get_or_insert(0) += tokens;
        }
    }

    pub(super) fn on_turn_end(&mut self, at: &At, out: &mut Vec<Item>) {
        match self.open.remove(&at.lane) {
            Some(open) => out.push(Item::Turn(close(open, Some(at.ms)))),
            None => out.push(at.mark(
                MarkKind::Unreadable,
                "assistant.turn_end without a turn start",
            )),
        }
    }
}

/// The finished turn; `end_ms` is its `assistant.turn_end`'s time, `None` when it has none.
pub(super) fn close(open: OpenTurn, end_ms: Option<i64>) -> Turn {
    let mut turn = open.turn;
    turn.ended = end_ms.is_some();
    turn.total_ms = span(open.start_ms, end_ms.unwrap_or(open.last_ms));
    if let (Some(first), Some(last)) = (open.first_tool_ms, open.last_tool_ms) {
        turn.tool_ms = span(first, last);
    }
    turn
}
