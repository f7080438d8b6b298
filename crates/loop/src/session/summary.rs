//! The summary call of a compaction: the request that asks the model to summarize the older
//! history, and the call itself (whose deltas are not the assistant's).

use std::sync::Arc;

use std::collections::BTreeMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use turnstile_replay::{BinaryAsset, Message};

use super::actor::Actor;
use super::history::{chat_messages, results_in_request_order};
use turnstile_providers::{CallOrigin, ChatMessage, ChatRequest, ModelError, ModelResponse};

/// The instruction that ends a summary request. Its first two sentences are the ones the
/// Copilot CLI's summary request begins with: the official SDK suite's model proxy, and any
/// tool that reads requests the way it does, tells a compaction's call from a turn by them
/// (docs/decisions.md, "The summary request").
pub const SUMMARY_INSTRUCTION: &str = "Please create a detailed summary of the conversation so far. \
The history is being compacted, and the work must go on from this summary alone. \
Keep the user's goals and instructions, what was done (files read or changed, commands run and what they showed), \
the decisions taken and why, and what remains to do. Answer with the summary only, inside <overview>...</overview>.";

/// The summary call's headers: the message's own, marked as the agent's call (as the turns
/// after the first are) unless the message names an initiator.
fn summary_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut all = headers.to_vec();
    if !all
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("x-initiator"))
    {
        all.push(("x-initiator".into(), "agent".into()));
    }
    all
}

/// The summary request for the messages `first..end` of `conversation`, after the system
/// messages of the turn's `request`, with the turn's tools (as the runtime offers them).
pub(super) fn summary_request(
    request: &ChatRequest,
    conversation: &[Message],
    assets: &BTreeMap<String, BinaryAsset>,
    (first, end): (usize, usize),
    custom_instructions: Option<&str>,
    headers: &[(String, String)],
) -> ChatRequest {
    let mut messages: Vec<ChatMessage> = request.messages[..first].to_vec();
    messages.extend(results_in_request_order(chat_messages(
        &conversation[first..end],
        assets,
    )));
    let mut instruction = SUMMARY_INSTRUCTION.to_owned();
    if let Some(focus) = custom_instructions {
        instruction.push_str("\n\nFocus the summary on: ");
        instruction.push_str(focus);
    }
    messages.push(ChatMessage::user(instruction));
    ChatRequest {
        model: request.model.clone(),
        messages,
        tools: request.tools.clone(),
        stream: false,
        reasoning_effort: request.reasoning_effort.clone(),
        headers: summary_headers(headers),
        // The runtime offers the tools (the history holds calls of them) but forbids a call.
        no_tool_calls: true,
        origin: CallOrigin::Summary,
        citations: request.citations,
    }
}

impl Actor {
    /// The summary call: its deltas and retry notices are not the assistant's and go nowhere.
    pub(super) async fn summary_call(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let provider = Arc::clone(&self.parts.provider);
        let call = provider.complete(request, tx, cancel.child_token());
        tokio::pin!(call);
        loop {
            tokio::select! {
                biased;
                Some(_) = rx.recv() => {}
                result = &mut call => return result,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_call_is_the_agents_unless_the_message_says_otherwise() {
        assert_eq!(
            summary_headers(&[]),
            [("x-initiator".to_owned(), "agent".to_owned())]
        );
        let own = [("X-Initiator".to_owned(), "user".to_owned())];
        assert_eq!(summary_headers(&own), own);
    }
}
