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

/// Estimated tokens of one message of a request.
pub fn message_tokens(message: &ChatMessage) -> u64 {
    match message {
        ChatMessage::System { content } => estimate(content),
        ChatMessage::User { content, parts } => {
            estimate(content)
                + parts
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text(t) => estimate(t),
                        ContentPart::ImageUrl(_) => IMAGE_TOKENS,
                    })
                    .sum::<u64>()
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            content.as_deref().map_or(0, estimate)
                + tool_calls
                    .iter()
                    .map(|c| estimate(&c.name) + estimate(&c.arguments))
                    .sum::<u64>()
        }
        ChatMessage::Tool { content, .. } => estimate(content),
    }
}

/// The estimated usage of a request against a window of `token_limit` tokens; `is_initial`
/// marks the session's first report.
pub fn usage_info(request: &ChatRequest, token_limit: u64, is_initial: bool) -> SessionUsageInfo {
    let mut system = 0;
    let mut conversation = 0;
    for m in &request.messages {
        match m {
            ChatMessage::System { .. } => system += message_tokens(m),
            _ => conversation += message_tokens(m),
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

/// How the model server counts against the estimate: the prompt tokens it reported for the
/// last call over what [`usage_info`] estimated for that request. The byte heuristic misses
/// the wire format's overhead and the tokenizer's real rate; scaling by the last report keeps
/// the size of the next request close to what the server will count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calibration {
    estimated: u64,
    reported: u64,
}

impl Calibration {
    /// Takes the server's report for a request estimated at `estimated` tokens.
    pub fn observe(&mut self, estimated: u64, reported: u64) {
        if estimated > 0 && reported > 0 {
            *self = Calibration {
                estimated,
                reported,
            };
        }
    }

    /// `tokens` (an estimate) as the server would count them; unchanged before any report.
    pub fn scale(&self, tokens: u64) -> u64 {
        if self.estimated == 0 {
            return tokens;
        }
        let scaled = u128::from(tokens) * u128::from(self.reported) / u128::from(self.estimated);
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }

    /// A usage report with every figure scaled (see [`Calibration::scale`]).
    pub fn apply(&self, info: &SessionUsageInfo) -> SessionUsageInfo {
        let part = |v: Option<u64>| v.map(|t| self.scale(t));
        let (system, conversation, tools) = (
            part(info.system_tokens),
            part(info.conversation_tokens),
            part(info.tool_definitions_tokens),
        );
        SessionUsageInfo {
            current_tokens: match (system, conversation, tools) {
                (Some(s), Some(c), Some(t)) => s + c + t,
                _ => self.scale(info.current_tokens),
            },
            system_tokens: system,
            conversation_tokens: conversation,
            tool_definitions_tokens: tools,
            ..info.clone()
        }
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

    #[test]
    fn calibration_scales_by_the_last_report_and_keeps_the_sum() {
        let mut c = Calibration::default();
        assert_eq!(c.scale(1000), 1000, "no report yet: the estimate");
        c.observe(1000, 1250);
        assert_eq!(c.scale(800), 1000);
        c.observe(0, 10);
        assert_eq!(c.scale(800), 1000, "an empty estimate teaches nothing");
        let info = SessionUsageInfo {
            token_limit: 9000,
            current_tokens: 700,
            messages_length: 3,
            system_tokens: Some(100),
            conversation_tokens: Some(400),
            tool_definitions_tokens: Some(200),
            is_initial: Some(false),
        };
        let scaled = c.apply(&info);
        assert_eq!(scaled.system_tokens, Some(125));
        assert_eq!(scaled.conversation_tokens, Some(500));
        assert_eq!(scaled.tool_definitions_tokens, Some(250));
        assert_eq!(scaled.current_tokens, 875);
        assert_eq!((scaled.token_limit, scaled.messages_length), (9000, 3));
    }
}
