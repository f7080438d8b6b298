//! The request for the next LLM call, built from the folded conversation.

use std::collections::BTreeMap;

use turnstile_replay::{BinaryAsset, Message};

use crate::model::{ChatMessage, ToolCall};
use crate::prompt::attachments::{Asset, model_content};

/// The conversation as chat messages, in order, with user messages' attachments rendered from
/// the recorded `assets`. Developer instructions go to the model as system messages; a
/// compaction summary as the user message the Copilot runtime sends in its place.
pub fn chat_messages(
    conversation: &[Message],
    assets: &BTreeMap<String, BinaryAsset>,
) -> Vec<ChatMessage> {
    conversation
        .iter()
        .map(|m| match m {
            Message::System { content } | Message::Developer { content } => ChatMessage::System {
                content: content.clone(),
            },
            // The runtime's words, as a user message in place of the history it replaced.
            Message::Summary { .. } => ChatMessage::user(m.summary_text().unwrap_or_default()),
            Message::User {
                content,
                attachments,
                ..
            } if attachments.is_empty() => ChatMessage::user(content.clone()),
            Message::User {
                content,
                attachments,
                ..
            } => {
                let (content, parts) = model_content(content, attachments, |id| {
                    assets.get(id).map(|a| Asset {
                        mime_type: &a.mime_type,
                        data: &a.data,
                    })
                });
                ChatMessage::User { content, parts }
            }
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

/// The engine's system prompt with no client changes, for a session whose context is not
/// known here (no working directory, tools or repository instructions); sessions build theirs
/// with [`crate::prompt::build_system_prompt`] from their real context.
pub fn default_system_prompt() -> String {
    crate::prompt::default_prompt(&crate::prompt::PromptContext {
        os: crate::prompt::os_name().to_owned(),
        engine_version: env!("CARGO_PKG_VERSION").to_owned(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compaction_summary_goes_as_the_runtimes_user_message() {
        let summary = Message::Summary {
            content: "<overview>read the parts</overview>".to_owned(),
            user_messages: vec!["Read every part".to_owned()],
        };
        let sent = chat_messages(std::slice::from_ref(&summary), &BTreeMap::new());
        let text = summary.summary_text().expect("a summary");
        assert!(text.starts_with("Some of the conversation history has been summarized"));
        assert!(text.contains("<user_message>\nRead every part\n</user_message>"));
        assert_eq!(sent, vec![ChatMessage::user(text)]);
    }
}
