//! The request for the next LLM call, built from the folded conversation.

use turnstile_replay::Message;

use crate::model::{ChatMessage, ToolCall};

/// The conversation as chat messages, in order. Developer instructions and compaction
/// summaries go to the model as system messages, which is what they are to it.
pub fn chat_messages(conversation: &[Message]) -> Vec<ChatMessage> {
    conversation
        .iter()
        .map(|m| match m {
            Message::System { content }
            | Message::Developer { content }
            | Message::Summary { content } => ChatMessage::System {
                content: content.clone(),
            },
            Message::User { content, .. } => ChatMessage::User {
                content: content.clone(),
            },
            Message::Assistant {
                content,
                tool_requests,
                ..
            } => ChatMessage::Assistant {
                content: (!content.is_empty()).then(|| content.clone()),
                tool_calls: tool_requests
                    .iter()
                    .map(|t| ToolCall {
                        id: t.tool_call_id.clone(),
                        name: t.name.clone(),
                        arguments: match &t.arguments {
                            Some(serde_json::Value::String(raw)) => raw.clone(),
                            Some(v) => v.to_string(),
                            None => "{}".to_owned(),
                        },
                    })
                    .collect(),
            },
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => ChatMessage::Tool {
                tool_call_id: tool_call_id.clone(),
                content: content.clone(),
            },
        })
        .collect()
}

/// The engine's system prompt (recorded once per session as `system.message`).
pub fn default_system_prompt() -> String {
    "You are turnstile, a coding agent working in the user's project directory. Use the tools to \
     inspect and change files and to run commands; paths are relative to the working directory. \
     Call tools when you need information or must act; answer without tool calls when you are \
     done."
        .to_owned()
}
