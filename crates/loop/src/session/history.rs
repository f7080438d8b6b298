//! The request for the next LLM call, built from the folded conversation.

use std::collections::BTreeMap;

use turnstile_replay::{BinaryAsset, Message, SessionState, ToolImage};

use crate::prompt::attachments::{Asset, model_content};
use turnstile_providers::{ChatMessage, ContentPart, ToolCall};

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

/// The messages of the next request of a session in `state`: its conversation as chat
/// messages, each assistant message's tool results in the order of its calls.
pub fn request_messages(state: &SessionState) -> Vec<ChatMessage> {
    let messages = results_in_request_order(chat_messages(&state.conversation, &state.assets));
    with_tool_images(messages, &state.conversation)
}

/// [`request_messages`] for a model that reads no pictures: the tool results' pictures are
/// left out (their text results stay).
pub fn request_messages_without_images(state: &SessionState) -> Vec<ChatMessage> {
    results_in_request_order(chat_messages(&state.conversation, &state.assets))
}

/// Puts the pictures tool results gave (`view` of an image) in a user message right after
/// the results of their assistant message, as the Copilot CLI sends them: each picture's
/// description, then the picture, in the order of the results.
pub(super) fn with_tool_images(
    mut messages: Vec<ChatMessage>,
    conversation: &[Message],
) -> Vec<ChatMessage> {
    let images: BTreeMap<&str, &[ToolImage]> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                images,
                ..
            } if !images.is_empty() => Some((tool_call_id.as_str(), images.as_slice())),
            _ => None,
        })
        .collect();
    if images.is_empty() {
        return messages;
    }
    let mut i = 0;
    while i < messages.len() {
        if !matches!(messages[i], ChatMessage::Tool { .. }) {
            i += 1;
            continue;
        }
        let mut end = i;
        let mut pictures: Vec<&ToolImage> = Vec::new();
        while let Some(ChatMessage::Tool { tool_call_id, .. }) = messages.get(end) {
            pictures.extend(
                images
                    .get(tool_call_id.as_str())
                    .into_iter()
                    .flat_map(|i| i.iter()),
            );
            end += 1;
        }
        if let Some((first, rest)) = pictures.split_first() {
            let mut parts = vec![image_part(first)];
            for picture in rest {
                parts.push(ContentPart::Text(picture.description.clone()));
                parts.push(image_part(picture));
            }
            messages.insert(
                end,
                ChatMessage::User {
                    content: first.description.clone(),
                    parts,
                },
            );
            end += 1;
        }
        i = end;
    }
    messages
}

fn image_part(image: &ToolImage) -> ContentPart {
    ContentPart::ImageUrl(format!("data:{};base64,{}", image.mime_type, image.data))
}

/// Puts the tool results that follow each assistant message in the order of its tool calls.
/// Calls run concurrently and are recorded as they complete; the model gets them as asked.
pub(super) fn results_in_request_order(mut messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut i = 0;
    while i < messages.len() {
        let order: Vec<String> = match &messages[i] {
            ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                tool_calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let start = i + 1;
        let mut end = start;
        while matches!(messages.get(end), Some(ChatMessage::Tool { .. })) {
            end += 1;
        }
        messages[start..end].sort_by_key(|m| match m {
            ChatMessage::Tool { tool_call_id, .. } => order
                .iter()
                .position(|id| id == tool_call_id)
                .unwrap_or(usize::MAX),
            _ => usize::MAX,
        });
        i = end.max(start);
    }
    messages
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

    #[test]
    fn a_results_pictures_follow_the_results_as_a_user_message() {
        let image = |n: &str| ToolImage {
            data: format!("DATA{n}"),
            mime_type: "image/png".into(),
            description: format!("Image file at path /w/{n}.png"),
        };
        let tool = |id: &str, images: Vec<ToolImage>| Message::Tool {
            tool_call_id: id.into(),
            name: "view".into(),
            content: "Viewed image file successfully.".into(),
            success: true,
            images,
        };
        let conversation = vec![
            Message::Assistant {
                content: String::new(),
                tool_requests: Vec::new(),
                message_id: None,
            },
            tool("a", vec![image("1")]),
            tool("b", Vec::new()),
            tool("c", vec![image("2")]),
        ];
        let sent = with_tool_images(
            chat_messages(&conversation, &BTreeMap::new()),
            &conversation,
        );
        assert_eq!(sent.len(), 5, "{sent:?}");
        assert!(matches!(&sent[3], ChatMessage::Tool { tool_call_id, .. } if tool_call_id == "c"));
        assert_eq!(
            sent[4],
            ChatMessage::User {
                content: "Image file at path /w/1.png".into(),
                parts: vec![
                    ContentPart::ImageUrl("data:image/png;base64,DATA1".into()),
                    ContentPart::Text("Image file at path /w/2.png".into()),
                    ContentPart::ImageUrl("data:image/png;base64,DATA2".into()),
                ],
            }
        );
        // Without pictures nothing changes.
        let plain = vec![tool("b", Vec::new())];
        assert_eq!(
            with_tool_images(chat_messages(&plain, &BTreeMap::new()), &plain).len(),
            1
        );
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn tool_results_follow_the_order_of_the_calls() {
        let tool = |id: &str| ChatMessage::Tool {
            tool_call_id: id.into(),
            content: id.into(),
        };
        let assistant = ChatMessage::Assistant {
            content: None,
            tool_calls: vec![call("a"), call("b"), call("c")],
        };
        let user = ChatMessage::user("u");
        let messages = vec![
            user.clone(),
            assistant.clone(),
            tool("c"),
            tool("a"),
            tool("b"),
            user.clone(),
        ];
        assert_eq!(
            results_in_request_order(messages),
            vec![
                user.clone(),
                assistant,
                tool("a"),
                tool("b"),
                tool("c"),
                user
            ]
        );
    }
}
