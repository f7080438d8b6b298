//! Anthropic's Messages API as serde types: the request body (system prompt as a field,
//! `tool_use`/`tool_result` blocks, `max_tokens`), the message answered and the stream's
//! events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::http::wire::{WireUsage, lenient};
use super::super::{ChatMessage, ContentPart, ToolSchema};

/// The body of `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    pub model: &'a str,
    pub max_tokens: u64,
    /// The system messages before the conversation, joined; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<RequestMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<RequestTool<'a>>,
    /// `{"type": "none"}` when the tools must not be called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<serde_json::Value>,
    pub stream: bool,
}

/// One message: `user` or `assistant`, with content blocks.
#[derive(Debug, Serialize)]
pub(crate) struct RequestMessage<'a> {
    pub role: &'static str,
    pub content: Vec<Block<'a>>,
}

/// A content block of a request.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Block<'a> {
    Typed(TypedBlock<'a>),
    /// A thinking block sent back as the model gave it (its signature included).
    Verbatim(&'a Value),
}

/// A content block tagged by `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum TypedBlock<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    Document {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        citations: Option<Citations>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// A document block's `citations`.
#[derive(Debug, Serialize)]
pub(crate) struct Citations {
    pub enabled: bool,
}

/// Where an image (or a document) comes from: inline base64 (a `data:` URL's parts) or a URL.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

impl<'a> ImageSource<'a> {
    /// The source of an image URL: `data:<type>;base64,<data>` inline, anything else by URL.
    fn of(url: &'a str) -> Self {
        url.strip_prefix("data:")
            .and_then(|rest| rest.split_once(','))
            .and_then(|(meta, data)| {
                meta.strip_suffix(";base64")
                    .map(|media_type| ImageSource::Base64 { media_type, data })
            })
            .unwrap_or(ImageSource::Url { url })
    }
}

/// A tool on offer.
#[derive(Debug, Serialize)]
pub(crate) struct RequestTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
}

impl<'a> From<&'a ToolSchema> for RequestTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        RequestTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.parameters,
        }
    }
}

/// The system field and the messages of a conversation. The API has one system prompt and
/// alternating roles: the system messages before the first other message make `system`; a
/// later one (developer instructions, a compaction summary) goes in as user text; tool results
/// are user blocks; consecutive blocks of one role make one message (tool results first, as
/// the API wants them right after the calls). `thinking_before(call_id)` gives the thinking
/// blocks that led to a call, sent back in front of it.
pub(crate) fn conversation<'a>(
    messages: &'a [ChatMessage],
    citations: bool,
    thinking_before: impl Fn(&str) -> Option<&'a [Value]>,
) -> (Option<String>, Vec<RequestMessage<'a>>) {
    let leading = messages
        .iter()
        .take_while(|m| matches!(m, ChatMessage::System { .. }))
        .count();
    let system: Vec<&str> = messages[..leading]
        .iter()
        .filter_map(|m| match m {
            ChatMessage::System { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let mut out: Vec<RequestMessage<'a>> = Vec::new();
    for message in &messages[leading..] {
        let (role, blocks) = blocks_of(message, citations, &thinking_before);
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(RequestMessage {
                role,
                content: blocks,
            }),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, out)
}

/// The role and content blocks of one message.
fn blocks_of<'a>(
    message: &'a ChatMessage,
    citations: bool,
    thinking_before: &impl Fn(&str) -> Option<&'a [Value]>,
) -> (&'static str, Vec<Block<'a>>) {
    let text = |text: &'a str| Block::Typed(TypedBlock::Text { text });
    match message {
        ChatMessage::System { content } => {
            ("user", non_empty(content).map(text).into_iter().collect())
        }
        ChatMessage::User { content, parts } => {
            let mut blocks: Vec<Block<'a>> = non_empty(content).map(text).into_iter().collect();
            blocks.extend(parts.iter().filter_map(|p| match p {
                ContentPart::Text(t) => non_empty(t).map(text),
                ContentPart::ImageUrl(url) => Some(Block::Typed(TypedBlock::Image {
                    source: ImageSource::of(url),
                })),
                // With citations the block is titled and cited, as the Copilot CLI sends it.
                ContentPart::Document {
                    media_type,
                    data,
                    title,
                } => Some(Block::Typed(TypedBlock::Document {
                    source: ImageSource::Base64 { media_type, data },
                    title: citations.then_some(title.as_str()),
                    citations: citations.then_some(Citations { enabled: true }),
                })),
            }));
            ("user", blocks)
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut blocks = Vec::new();
            if let Some(thinking) = tool_calls.first().and_then(|c| thinking_before(&c.id)) {
                blocks.extend(thinking.iter().map(Block::Verbatim));
            }
            blocks.extend(content.as_deref().and_then(non_empty).map(text));
            blocks.extend(tool_calls.iter().map(|c| {
                Block::Typed(TypedBlock::ToolUse {
                    id: &c.id,
                    name: &c.name,
                    // `input` must be an object; arguments that were not one ran as nothing.
                    input: serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::Object(Default::default())),
                })
            }));
            ("assistant", blocks)
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => (
            "user",
            vec![Block::Typed(TypedBlock::ToolResult {
                tool_use_id: tool_call_id,
                content,
            })],
        ),
    }
}

/// The API refuses empty text blocks.
fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

/// A message answered (whole, or as `message_start` gives its beginning).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerMessage {
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    /// The blocks, kept raw (thinking blocks go back verbatim).
    #[serde(default, deserialize_with = "lenient")]
    pub content: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "lenient")]
    pub stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    /// `{"type": "error", "error": {...}}` in place of a message.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One content block of an answer (others than these are skipped).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerBlock {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    #[serde(default)]
    pub input: Option<Value>,
}

/// One event of a stream.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamEvent {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<AnswerMessage>,
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default)]
    pub content_block: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub delta: Option<Delta>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// The `delta` of `content_block_delta` (by its `type`) or of `message_delta`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub partial_json: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub thinking: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub signature: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub stop_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;
    use serde_json::json;

    #[test]
    fn a_conversation_becomes_system_and_alternating_messages() {
        let thinking = [json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})];
        let messages = vec![
            ChatMessage::System {
                content: "You are terse.".into(),
            },
            ChatMessage::System {
                content: "Repo rules.".into(),
            },
            ChatMessage::User {
                content: "look".into(),
                parts: vec![ContentPart::ImageUrl("data:image/png;base64,AAAA".into())],
            },
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "glob".into(),
                        arguments: r#"{"pattern":"*"}"#.into(),
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "view".into(),
                        arguments: "not json".into(),
                    },
                ],
            },
            ChatMessage::Tool {
                tool_call_id: "toolu_1".into(),
                content: "a.txt".into(),
            },
            ChatMessage::Tool {
                tool_call_id: "toolu_2".into(),
                content: "".into(),
            },
            ChatMessage::System {
                content: "Summary so far.".into(),
            },
        ];
        let (system, out) = conversation(&messages, false, |id| {
            (id == "toolu_1").then_some(&thinking[..])
        });
        assert_eq!(system.as_deref(), Some("You are terse.\n\nRepo rules."));
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "tool_use", "id": "toolu_1", "name": "glob", "input": {"pattern": "*"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "view", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": ""},
                    {"type": "text", "text": "Summary so far."},
                ]},
            ])
        );
    }

    #[test]
    fn image_sources() {
        assert!(matches!(
            ImageSource::of("https://example.invalid/a.png"),
            ImageSource::Url { .. }
        ));
        assert!(matches!(
            ImageSource::of("data:image/gif;base64,R0lG"),
            ImageSource::Base64 {
                media_type: "image/gif",
                data: "R0lG"
            }
        ));
    }

    #[test]
    fn documents_are_titled_and_cited_with_citations_on() {
        let messages = vec![ChatMessage::User {
            content: "summarize".into(),
            parts: vec![
                ContentPart::Text("a.pdf".into()),
                ContentPart::Document {
                    media_type: "application/pdf".into(),
                    data: "JVBE".into(),
                    title: "a.pdf".into(),
                },
            ],
        }];
        let block = |citations: bool| {
            let (_, out) = conversation(&messages, citations, |_| None);
            serde_json::to_value(&out[0].content[2]).unwrap()
        };
        let source = json!({"type": "base64", "media_type": "application/pdf", "data": "JVBE"});
        assert_eq!(
            block(true),
            json!({"type": "document", "source": source, "title": "a.pdf", "citations": {"enabled": true}})
        );
        assert_eq!(block(false), json!({"type": "document", "source": source}));
    }
}
