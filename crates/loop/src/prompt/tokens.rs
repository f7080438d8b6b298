//! How full a request leaves the model's context window (for `session.usage_info` and
//! compaction): the size of the request's parts in the model's encoding
//! ([`super::tokenizer`]), scaled by what the server last reported, and the model's window
//! from a table of known models.

use turnstile_journal::payload::SessionUsageInfo;

pub use super::tokenizer::{Encoding, TokenCounter};
use turnstile_providers::{ChatMessage, ChatRequest, ContentPart, ToolSchema};

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

/// Tokens every message of a chat request costs besides its fields (OpenAI's count of a
/// chat request: the message's start, separator and end).
pub const MESSAGE_TOKENS: u64 = 3;

/// Measures the parts of a request in one model's encoding, with cached counts.
#[derive(Debug, Clone, Copy)]
pub struct Measure<'a> {
    counter: &'a TokenCounter,
    encoding: Encoding,
    /// Counted with the vocabulary; else a quarter of the bytes ([`Measure::unless_loading`]).
    exact: bool,
}

impl Measure<'static> {
    /// Measures for `model` (see [`Encoding::for_model`]) with the process's shared counts.
    pub fn new(model: &str) -> Self {
        Measure::with(TokenCounter::shared(), model)
    }
}

impl<'a> Measure<'a> {
    /// Measures for `model` with the counts of `counter`.
    pub fn with(counter: &'a TokenCounter, model: &str) -> Self {
        Measure {
            counter,
            encoding: Encoding::for_model(model),
            exact: true,
        }
    }

    /// This measure, or, while the vocabulary is still loading and `request` cannot reach
    /// `tokens` whatever its count (a token is at least a byte), one that counts a quarter of
    /// the bytes instead of waiting: a process's first turns then never wait for the load,
    /// and no decision that compares the count with `tokens` can come out otherwise.
    pub fn unless_loading(self, request: &ChatRequest, tokens: u64) -> Measure<'a> {
        if self.encoding.ready() || upper_bound(request) >= tokens {
            return self;
        }
        Measure {
            exact: false,
            ..self
        }
    }

    /// [`Measure::unless_loading`], awaiting the vocabulary when the count has to be exact, so
    /// the count that follows never blocks the calling task (see [`Encoding::loaded`]).
    pub async fn unless_loading_awaited(self, request: &ChatRequest, tokens: u64) -> Measure<'a> {
        let measure = self.unless_loading(request, tokens);
        if measure.exact {
            measure.encoding.loaded().await;
        }
        measure
    }

    /// Whether the counts are the vocabulary's.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// The encoding measured in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens of a text.
    pub fn text(&self, text: &str) -> u64 {
        if self.exact {
            self.counter.count(self.encoding, text)
        } else {
            (text.len() as u64).div_ceil(4)
        }
    }

    /// Tokens of one message of a request: [`MESSAGE_TOKENS`], its role and its fields (the
    /// Copilot CLI's `conversationTokens` for a first prompt is exactly this).
    pub fn message(&self, message: &ChatMessage) -> u64 {
        message_with(message, |t| self.text(t))
    }

    /// What a set of tool definitions costs (a request's `tools`, or a part of them).
    pub fn tools(&self, tools: &[ToolSchema]) -> u64 {
        tools_with(tools, |t| self.text(t))
    }

    /// The usage of a request against a window of `token_limit` tokens; `is_initial` marks
    /// the session's first report.
    pub fn usage_info(
        &self,
        request: &ChatRequest,
        token_limit: u64,
        is_initial: bool,
    ) -> SessionUsageInfo {
        let mut system = 0;
        let mut conversation = 0;
        for m in &request.messages {
            match m {
                ChatMessage::System { .. } => system += self.message(m),
                _ => conversation += self.message(m),
            }
        }
        let tools = tools_with(&request.tools, |t| self.text(t));
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
}

/// What `message` costs when `text` counts each of its texts.
fn message_with(message: &ChatMessage, text: impl Fn(&str) -> u64) -> u64 {
    let fields = match message {
        ChatMessage::System { content } => text("system") + text(content),
        ChatMessage::User { content, parts } => {
            text("user")
                + text(content)
                + parts
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text(t) => text(t),
                        ContentPart::ImageUrl(_) => IMAGE_TOKENS,
                        // Counted by its bytes, as text of that length.
                        ContentPart::Document { data, .. } => text(data),
                    })
                    .sum::<u64>()
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            text("assistant")
                + content.as_deref().map_or(0, &text)
                + tool_calls
                    .iter()
                    .map(|c| text(&c.id) + text(&c.name) + text(&c.arguments))
                    .sum::<u64>()
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => text("tool") + text(tool_call_id) + text(content),
    };
    MESSAGE_TOKENS + fields
}

/// What the tool definitions cost when `text` counts each of their texts.
fn tools_with(tools: &[ToolSchema], text: impl Fn(&str) -> u64) -> u64 {
    tools
        .iter()
        .map(|t| text(&t.name) + text(&t.description) + text(&t.parameters.to_string()))
        .sum()
}

/// The most tokens `request` can count in a byte-level vocabulary (a token is at least one
/// byte), with what [`Measure::message`] adds per message and the images' fixed count.
fn upper_bound(request: &ChatRequest) -> u64 {
    let bytes = |t: &str| t.len() as u64;
    let messages: u64 = request
        .messages
        .iter()
        .map(|m| message_with(m, bytes))
        .sum();
    messages + tools_with(&request.tools, bytes)
}

/// How the model server counts against the estimate: the prompt tokens it reported for the
/// last call over what [`Measure::usage_info`] estimated for that request. Even an exact
/// vocabulary misses the wire format's overhead (roles, message separators, the tools' schema
/// rendering), and the byte rule misses the real rate as well; scaling by the last report keeps
/// the size of the next request close to what the server will count.
///
/// A report is never trusted below what the request must contain: a count under
/// [`Calibration::MIN_REPORTED_PERCENT`] of the engine's own count of the request is taken
/// as that share, so the calibration only ever makes the measure larger. A server that
/// under-reports cannot shrink the measure and switch compaction off; a truthful one whose
/// vocabulary is denser only sees compaction come a little early.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calibration {
    estimated: u64,
    reported: u64,
}

impl Calibration {
    /// Least share, in percent of the estimate, a server's count is taken for.
    pub const MIN_REPORTED_PERCENT: u64 = 100;

    /// Takes the server's report for a request estimated at `estimated` tokens, raised to
    /// [`Calibration::MIN_REPORTED_PERCENT`] of the estimate when it is below.
    pub fn observe(&mut self, estimated: u64, reported: u64) {
        if estimated > 0 && reported > 0 {
            let floor = estimated
                .saturating_mul(Self::MIN_REPORTED_PERCENT)
                .div_ceil(100);
            *self = Calibration {
                estimated,
                reported: reported.max(floor),
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

    #[test]
    fn windows_of_known_models_and_the_default() {
        assert_eq!(token_limit("gpt-4.1-mini"), 1_047_576);
        assert_eq!(token_limit("GPT-4o"), 128_000);
        assert_eq!(token_limit("claude-sonnet-4.5"), 200_000);
        assert_eq!(token_limit("scripted-model"), DEFAULT_TOKEN_LIMIT);
    }

    #[test]
    fn usage_adds_system_conversation_and_tools() {
        let system = "x".repeat(400);
        let request = ChatRequest {
            messages: vec![
                ChatMessage::System {
                    content: system.clone(),
                },
                ChatMessage::User {
                    content: "hello world".into(),
                    parts: vec![ContentPart::ImageUrl("data:image/png;base64,AAAA".into())],
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![turnstile_providers::ToolCall {
                        id: "call_1".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "call_1".into(),
                    content: "a.txt".into(),
                },
            ],
            tools: vec![ToolSchema {
                name: "bash".into(),
                description: "Runs a command.".into(),
                parameters: serde_json::json!({}),
            }],
            ..Default::default()
        };
        let info = Measure::new("gpt-4.1").usage_info(&request, 1000, true);
        let n = |t: &str| Encoding::O200k.count(t);
        let system_tokens = MESSAGE_TOKENS + n("system") + n(&system);
        let user = MESSAGE_TOKENS + n("user") + n("hello world") + IMAGE_TOKENS;
        let call =
            MESSAGE_TOKENS + n("assistant") + n("call_1") + n("bash") + n(r#"{"command":"ls"}"#);
        let result = MESSAGE_TOKENS + n("tool") + n("call_1") + n("a.txt");
        let tools = n("bash") + n("Runs a command.") + n("{}");
        assert_eq!(info.system_tokens, Some(system_tokens));
        assert_eq!(info.conversation_tokens, Some(user + call + result));
        assert_eq!(info.tool_definitions_tokens, Some(tools));
        assert_eq!(
            info.current_tokens,
            system_tokens + user + call + result + tools
        );
        assert_eq!(info.messages_length, 4);
        assert_eq!(info.token_limit, 1000);
        assert_eq!(info.is_initial, Some(true));
    }

    #[test]
    fn a_first_prompt_counts_as_the_copilot_cli_counts_it() {
        // The first prompt of the real runtime's `w1-rewound` recording, as its request sent
        // it; its live `session.usage_info` said `conversationTokens: 60` (model
        // `scripted-model`, which it does not know).
        let prompt = "<current_datetime>2026-12-01T17:04:51.469+00:00</current_datetime>\n\n\
                      Create notes.txt\n\n<system_reminder>\n<sql_tables>Available tables: \
                      todos, todo_deps</sql_tables>\n</system_reminder>";
        let request = ChatRequest {
            messages: vec![ChatMessage::user(prompt)],
            ..Default::default()
        };
        let info = Measure::new("scripted-model").usage_info(&request, 128_000, true);
        assert_eq!(info.conversation_tokens, Some(60));
        // GPT-4 has the older vocabulary.
        let counter = TokenCounter::default();
        let gpt4 = Measure::with(&counter, "gpt-4");
        assert_eq!(gpt4.encoding(), Encoding::Cl100k);
        assert_eq!(gpt4.message(&request.messages[0]), 59);
    }

    #[test]
    fn a_measure_that_does_not_wait_counts_bytes_and_says_so() {
        let request = ChatRequest {
            messages: vec![ChatMessage::user("hello world, in a few more tokens")],
            ..Default::default()
        };
        let exact = Measure::new("gpt-4.1");
        assert!(exact.is_exact());
        let bound = upper_bound(&request);
        // Whatever the vocabulary's state, a bound the request reaches keeps the count exact.
        assert!(exact.unless_loading(&request, bound).is_exact());
        assert!(exact.unless_loading(&request, 0).is_exact());
        Encoding::O200k.count("");
        assert!(Encoding::O200k.ready());
        assert!(
            exact.unless_loading(&request, u64::MAX).is_exact(),
            "loaded: no reason not to count"
        );
        let quick = Measure {
            exact: false,
            ..exact
        };
        let info = quick.usage_info(&request, 1000, false);
        let bytes = |t: &str| (t.len() as u64).div_ceil(4);
        assert_eq!(
            info.conversation_tokens,
            Some(MESSAGE_TOKENS + bytes("user") + bytes("hello world, in a few more tokens"))
        );
        assert!(!quick.is_exact());
    }

    proptest::proptest! {
        /// The bound a measure that does not wait trusts is never below the exact count.
        #[test]
        fn the_byte_bound_is_never_below_the_count(
            texts in proptest::collection::vec("(?s).{0,300}", 1..6),
            calls in proptest::collection::vec(("[a-z_]{1,12}", "(?s).{0,80}"), 0..3),
        ) {
            let mut messages = vec![ChatMessage::System { content: texts[0].clone() }];
            messages.extend(texts[1..].iter().map(|t| ChatMessage::user(t.clone())));
            messages.push(ChatMessage::Assistant {
                content: None,
                tool_calls: calls
                    .iter()
                    .map(|(name, args)| turnstile_providers::ToolCall {
                        id: "call_1".into(),
                        name: name.clone(),
                        arguments: args.clone(),
                    })
                    .collect(),
            });
            messages.push(ChatMessage::Tool { tool_call_id: "call_1".into(), content: texts[texts.len() - 1].clone() });
            let request = ChatRequest { messages, ..Default::default() };
            let counter = TokenCounter::default();
            for model in ["gpt-4.1", "gpt-4"] {
                let info = Measure::with(&counter, model).usage_info(&request, 1000, false);
                proptest::prop_assert!(info.current_tokens <= upper_bound(&request));
            }
        }
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

    #[test]
    fn a_report_under_the_estimate_counts_as_the_estimate() {
        let mut c = Calibration::default();
        c.observe(40_000, 100);
        assert_eq!(c.scale(40_000), 40_000, "clamped to the estimate, not 100");
        assert_eq!(c.scale(1000), 1000);
        c.observe(1000, 1200);
        assert_eq!(c.scale(1000), 1200, "above the floor: trusted");
    }
}
