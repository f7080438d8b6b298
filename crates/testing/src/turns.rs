//! Where an event sits in the conversation: which prompt, which LLM call, which turn.

use std::fmt;

use serde::Serialize;

use crate::journal::JournalLine;

/// The place of one event in its session, for a person reading a divergence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnRef {
    /// 1-based index of the user prompt the event belongs to (autopilot nudges belong to the
    /// prompt they continue); 0 before the first prompt.
    pub prompt: usize,
    /// 1-based index of the LLM call (top-level `assistant.turn_start`) the event belongs to or
    /// follows; 0 before the first.
    pub llm_call: usize,
    /// `turnId` of that call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The event is inside that call's turn (between its start and end).
    pub in_turn: bool,
}

impl fmt::Display for TurnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prompt == 0 && self.llm_call == 0 {
            return f.write_str("before the first prompt");
        }
        let turn = self
            .turn_id
            .as_deref()
            .map(|t| format!(" (turn {t})"))
            .unwrap_or_default();
        match (self.llm_call, self.in_turn) {
            (0, _) => write!(f, "prompt {}, before the first LLM call", self.prompt),
            (call, true) => write!(f, "prompt {}, LLM call {call}{turn}", self.prompt),
            (call, false) => write!(f, "prompt {}, after LLM call {call}{turn}", self.prompt),
        }
    }
}

/// The [`TurnRef`] of every line, in order.
pub fn turn_refs(lines: &[JournalLine]) -> Vec<TurnRef> {
    let mut at = TurnRef::default();
    let mut refs = Vec::with_capacity(lines.len());
    for line in lines {
        if line.is_top_level() {
            match line.event_type() {
                "user.message" if line.data()["isAutopilotContinuation"] != true => {
                    at.prompt += 1;
                    at.in_turn = false;
                }
                "assistant.turn_start" => {
                    at.llm_call += 1;
                    at.turn_id = line.data()["turnId"].as_str().map(str::to_owned);
                    at.in_turn = true;
                }
                _ => {}
            }
        }
        refs.push(at.clone());
        if line.is_top_level() && line.event_type() == "assistant.turn_end" {
            at.in_turn = false;
        }
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_naturally() {
        let mut r = TurnRef::default();
        assert_eq!(r.to_string(), "before the first prompt");
        r.prompt = 2;
        assert_eq!(r.to_string(), "prompt 2, before the first LLM call");
        r.llm_call = 5;
        r.turn_id = Some("1".into());
        r.in_turn = true;
        assert_eq!(r.to_string(), "prompt 2, LLM call 5 (turn 1)");
        r.in_turn = false;
        assert_eq!(r.to_string(), "prompt 2, after LLM call 5 (turn 1)");
    }
}
