//! Reasoning a model sent with an answer that called tools, remembered to go back with those
//! calls in later requests of the session (the Responses API's reasoning items with
//! `encrypted_content`, Anthropic's thinking blocks with their signatures). It is opaque and
//! bound to the session, so it lives in the provider's memory only, bounded; a resumed session
//! sends its earlier calls without it, which both APIs accept.

use std::collections::VecDeque;

use serde_json::Value;

use super::ModelResponse;

/// Most reasoning entries remembered (one per answer that called tools); older ones are
/// forgotten first.
const MAX_REMEMBERED: usize = 256;
/// Most bytes of reasoning remembered in all.
const MAX_REMEMBERED_BYTES: usize = 32 * 1024 * 1024;

/// Reasoning items by the id of the first call that followed them, oldest first.
#[derive(Debug, Default)]
pub struct ReasoningMemory {
    entries: VecDeque<(String, Vec<Value>, usize)>,
    bytes: usize,
}

impl ReasoningMemory {
    /// Remembers the reasoning items that led to the call `call_id`.
    pub(super) fn remember(&mut self, call_id: String, items: Vec<Value>) {
        let size: usize = items.iter().map(|v| v.to_string().len()).sum();
        if size > MAX_REMEMBERED_BYTES {
            return;
        }
        self.entries.push_back((call_id, items, size));
        self.bytes += size;
        while self.entries.len() > MAX_REMEMBERED || self.bytes > MAX_REMEMBERED_BYTES {
            match self.entries.pop_front() {
                Some((_, _, size)) => self.bytes -= size,
                None => break,
            }
        }
    }

    /// Remembers the reasoning that came with `answer`, under its first call (an answer without
    /// calls, or without reasoning, leaves nothing to send back).
    pub(super) fn remember_for(&mut self, answer: &ModelResponse, items: Vec<Value>) {
        if let (Some(first), false) = (answer.tool_calls.first(), items.is_empty()) {
            self.remember(first.id.clone(), items);
        }
    }

    /// The reasoning items that led to the call `call_id`.
    pub(super) fn before(&self, call_id: &str) -> Option<&[Value]> {
        self.entries
            .iter()
            .find(|(id, _, _)| id == call_id)
            .map(|(_, items, _)| items.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_memory_is_bounded() {
        let mut memory = ReasoningMemory::default();
        for i in 0..MAX_REMEMBERED + 5 {
            memory.remember(format!("call_{i}"), vec![json!({"type": "reasoning"})]);
        }
        assert_eq!(memory.entries.len(), MAX_REMEMBERED);
        assert!(memory.before("call_0").is_none());
        assert!(
            memory
                .before(&format!("call_{}", MAX_REMEMBERED + 4))
                .is_some()
        );
        let huge = vec![Value::String("x".repeat(MAX_REMEMBERED_BYTES))];
        memory.remember("big".into(), huge);
        assert!(memory.before("big").is_none());
    }
}
