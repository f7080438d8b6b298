//! The conversation as the model sees it: system prompt, user and assistant messages, tool
//! results, and compaction summaries standing in for older history.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the model's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// The system prompt (`system.message` with role `system`); always first.
    System {
        /// The prompt text.
        content: String,
    },
    /// A developer instruction (`system.message` with role `developer`), in place.
    Developer {
        /// The instruction text.
        content: String,
    },
    /// A user message: the text sent to the model (`transformedContent` when recorded).
    #[serde(rename_all = "camelCase")]
    User {
        /// What the model receives.
        content: String,
        /// Injected by autopilot rather than typed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        autopilot_continuation: bool,
        /// `messageId`, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The attachments as `user.message` recorded them (rendered into the request).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Value>,
    },
    /// The model's answer: text and the tool calls it made.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// The answer's text (empty when it only called tools).
        content: String,
        /// The tool calls, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_requests: Vec<ToolCallRequest>,
        /// `messageId`, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The result of one tool call, placed right after the assistant message that made it.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool's name, when known.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
        /// What the model is told: the result's `content`, or the error message.
        content: String,
        /// Whether the tool succeeded.
        success: bool,
    },
    /// The summary a compaction left in place of the history it removed.
    Summary {
        /// The summary text.
        content: String,
    },
}

/// One tool call in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRequest {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as the model sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// Operations on a conversation kept as a `Vec<Message>`.
pub(crate) trait ConversationExt {
    /// Sets the system prompt (replacing an earlier one: the model sees the latest).
    fn set_system(&mut self, content: String);
    /// Adds a tool result after the assistant message that requested the call, behind the
    /// results already there, so the history stays valid even when a result arrives late.
    fn add_tool_result(&mut self, message: Message, tool_call_id: &str);
    /// Replaces the oldest `removed` messages (all when `None`) by a compaction summary.
    fn compact(&mut self, summary: String, removed: Option<u64>);
}

impl ConversationExt for Vec<Message> {
    fn set_system(&mut self, content: String) {
        match self.first_mut() {
            Some(Message::System { content: old }) => *old = content,
            _ => self.insert(0, Message::System { content }),
        }
    }

    fn add_tool_result(&mut self, message: Message, tool_call_id: &str) {
        // Usually the requesting message is the last assistant message: search from the end.
        let owner = self.iter().rposition(|m| match m {
            Message::Assistant { tool_requests, .. } => {
                tool_requests.iter().any(|r| r.tool_call_id == tool_call_id)
            }
            _ => false,
        });
        let Some(owner) = owner else {
            // No request recorded (user-initiated or runtime tools): the result goes last.
            self.push(message);
            return;
        };
        let mut at = owner + 1;
        while matches!(self.get(at), Some(Message::Tool { .. })) {
            at += 1;
        }
        self.insert(at, message);
    }

    fn compact(&mut self, summary: String, removed: Option<u64>) {
        let first = usize::from(matches!(self.first(), Some(Message::System { .. })));
        let available = self.len() - first;
        let count = removed.map_or(available, |n| {
            usize::try_from(n).unwrap_or(usize::MAX).min(available)
        });
        let mut end = first + count;
        // Never cut between an assistant message and its tool results.
        while matches!(self.get(end), Some(Message::Tool { .. })) {
            end += 1;
        }
        self.splice(
            first..end,
            std::iter::once(Message::Summary { content: summary }),
        );
    }
}
