//! The fallback that keeps a request in the window when compaction made no room (its summary
//! call failed, or waits out an earlier failure, `retry_backoff.rs`): the oldest messages are
//! taken out of the model's view with a `session.truncation`, as the runtime's
//! `BasicTruncator` does when its summary calls fail. The fold applies it (the system prompt
//! and the first prompt or summary stay, and the tool results of a removed request go with
//! it), the next `user.message` puts the messages back, and a resume rebuilds the same
//! requests.

use serde_json::json;
use turnstile_replay::Message;

use super::LoopError;
use super::actor::Actor;
use super::compaction::Measured;
use crate::autopilot::AgentMode;

/// The runtime's truncation event.
const TRUNCATION: &str = "session.truncation";

/// Share of the window a truncated request is cut down to at most (the compaction
/// threshold when that is lower): room for the next turns before the next cut.
const TRUNCATE_TO_SHARE: f64 = 0.8;

impl Actor {
    /// `measured` as it is when it fits the window; else the oldest messages are truncated
    /// until it fits [`TRUNCATE_TO_SHARE`] of the window (or nothing more can go) and the
    /// request is built again.
    pub(super) async fn truncated_to_window(
        &self,
        mode: AgentMode,
        measured: Measured,
    ) -> Result<Measured, LoopError> {
        let info = self.calibrated(&measured);
        let limit = info.token_limit;
        if info.current_tokens <= limit {
            return Ok(measured);
        }
        let share = self
            .parts
            .config
            .infinite_sessions
            .threshold()
            .min(TRUNCATE_TO_SHARE);
        let target = (limit as f64 * share) as u64;
        let (removed, tokens_removed, length) = {
            let state = self.emitter.state();
            let conversation = &state.conversation;
            let sent = &measured.request.messages;
            let calibration = self.calibration_now();
            let measure = self.measure();
            let size = |i: usize| {
                sent.get(i)
                    .map_or(0, |m| calibration.scale(measure.message(m)))
            };
            let head = truncation_head(conversation);
            let mut end = head;
            let mut gone = 0u64;
            // Whole requests with their results; never the newest message (the one the
            // model answers).
            while info.current_tokens.saturating_sub(gone) > target && end + 1 < conversation.len()
            {
                gone += size(end);
                end += 1;
                while matches!(conversation.get(end), Some(Message::Tool { .. }))
                    && end + 1 < conversation.len()
                {
                    gone += size(end);
                    end += 1;
                }
            }
            ((end - head) as u64, gone, conversation.len() as u64)
        };
        if removed == 0 {
            return Ok(measured);
        }
        let messages_tokens = info
            .current_tokens
            .saturating_sub(info.tool_definitions_tokens.unwrap_or(0));
        let data = json!({
            "tokenLimit": limit,
            "preTruncationTokensInMessages": messages_tokens,
            "preTruncationMessagesLength": length,
            "postTruncationTokensInMessages": messages_tokens.saturating_sub(tokens_removed),
            "postTruncationMessagesLength": length - removed,
            "tokensRemovedDuringTruncation": tokens_removed,
            "messagesRemovedDuringTruncation": removed,
            "toolDefinitionsTokenCount": info.tool_definitions_tokens.unwrap_or(0),
            "messagesTokenCounts": null,
            "performedBy": "BasicTruncator",
        });
        let raw = serde_json::value::to_raw_value(&data).expect("a truncation's data serializes");
        self.emitter.emit_raw(TRUNCATION, raw)?;
        Ok(self.measured_request(mode).await)
    }
}

/// Where a truncation starts: after the system and developer messages and the first prompt
/// or summary (the fold keeps the same head).
fn truncation_head(conversation: &[Message]) -> usize {
    let first = conversation
        .iter()
        .position(|m| !matches!(m, Message::System { .. } | Message::Developer { .. }))
        .unwrap_or(conversation.len());
    first
        + usize::from(matches!(
            conversation.get(first),
            Some(Message::User { .. } | Message::Summary { .. })
        ))
}
