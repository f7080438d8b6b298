//! How full a request leaves the model's context window (for `session.usage_info`): a cheap
//! size estimate of the request's parts and the model's window from a table of known models.

use turnstile_journal::payload::SessionUsageInfo;

use crate::model::{ChatMessage, ChatRequest, ContentPart};

/// Context window assumed for a model the table does not know (what the Copilot CLI reports
/// for an unknown BYOK model).
pub const DEFAULT_TOKEN_LIMIT: u64 = 128_000;

/// Tokens an image is counted as (a detailed 1024x1024 image costs about this much).
pub const IMAGE_TOKENS: u64 = 765;

/// Known context windows by model-name prefix; the longest matching prefix wins.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-3.5-sonnet", 200_000),
    ("claude-3.7-sonnet", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.5-pro", 1_048_576),
];

/// The context window of `model`, in tokens.
pub fn token_limit(model: &str) -> u64 {
    let name = model.to_ascii_lowercase();
    WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(DEFAULT_TOKEN_LIMIT, |(_, n)| *n)
}

/// Tokens of a text: a quarter of its bytes, rounded up (close for English and code).
pub fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The usage of a request against a window of `token_limit` tokens; `is_initial` marks the
/// session's first report.
pub fn usage_info(request: &ChatRequest, token_limit: u64, is_initial: bool) -> SessionUsageInfo {
    let mut system = 0;
    let mut conversation = 0;
    for m in &request.messages {
        match m {
            ChatMessage::System { content } => system += estimate(content),
            ChatMessage::User { content, parts } => {
                conversation += estimate(content);
                for p in parts {
                    conversation += match p {
                        ContentPart::Text(t) => estimate(t),
                        ContentPart::ImageUrl(_) => IMAGE_TOKENS,
                    };
                }
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                conversation += content.as_deref().map_or(0, estimate);
                for c in tool_calls {
                    conversation += estimate(&c.name) + estimate(&c.arguments);
                }
            }
            ChatMessage::Tool { content, .. } => conversation += estimate(content),
        }
    }
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| estimate(&t.name) + estimate(&t.description) + estimate(&t.parameters.to_string()))
        .sum();
    SessionUsageInfo {
        token_limit,
        current_tokens: system + conversation + tools,
        messages_length: request.messages.len() as u64,
        system_tokens: Some(system),
        conversation_tokens: Some(conversation),
        tool_definitions_tokens: Some(tools),
        is_initial: Some(is_initial),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolSchema;

    #[test]
    fn windows_of_known_models_and_the_default() {
        assert_eq!(token_limit("gpt-4.1-mini"), 1_047_576);
        assert_eq!(token_limit("GPT-4o"), 128_000);
        assert_eq!(token_limit("claude-sonnet-4.5"), 200_000);
        assert_eq!(token_limit("scripted-model"), DEFAULT_TOKEN_LIMIT);
    }

    #[test]
    fn usage_adds_system_conversation_and_tools() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::System {
                    content: "x".repeat(400),
                },
                ChatMessage::User {
                    content: "y".repeat(41),
                    parts: vec![ContentPart::ImageUrl("data:image/png;base64,AAAA".into())],
                },
            ],
            tools: vec![ToolSchema {
                name: "bash".into(),
                description: "d".repeat(8),
                parameters: serde_json::json!({}),
            }],
            ..Default::default()
        };
        let info = usage_info(&request, 1000, true);
        assert_eq!(info.system_tokens, Some(100));
        assert_eq!(info.conversation_tokens, Some(11 + IMAGE_TOKENS));
        assert_eq!(info.tool_definitions_tokens, Some(1 + 2 + 1));
        assert_eq!(info.current_tokens, 100 + 11 + IMAGE_TOKENS + 4);
        assert_eq!(info.messages_length, 2);
        assert_eq!(info.token_limit, 1000);
        assert_eq!(info.is_initial, Some(true));
    }
}
