//! Model providers for turnstile: the [`ModelProvider`] trait an agent loop calls once per
//! turn, its request and answer types ([`ChatRequest`], [`ModelEvent`], [`ModelResponse`],
//! [`ModelError`]), and the providers: [`OpenAiProvider`] (any OpenAI-compatible Chat
//! Completions server, Azure OpenAI, the Copilot endpoint), [`ResponsesProvider`] (the OpenAI
//! Responses API), [`AnthropicProvider`] (Anthropic's Messages API), all one HTTP skeleton
//! (`http`) over their own wire, and [`ReplayProvider`] (answers from a recorded journal).
//!
//! This crate knows nothing of sessions, tools or prompts: it turns a conversation into one
//! model call and the answer back into plain values. It depends on `turnstile-journal` only
//! (for the events a replay reads).
//!
//! # Example
//!
//! A caller builds an [`OpenAiConfig`] with the server's base URL and model (and a key, a
//! flavor, limits as needed), gets a provider with [`http_provider`] (which picks the wire the
//! configuration names), and for each turn fills a [`ChatRequest`] with the conversation and
//! the tools on offer, then awaits [`ModelProvider::complete`] with a channel for
//! [`ModelEvent`]s (text and tool-call deltas, retries) and a cancellation token. The answer
//! is a [`ModelResponse`]: text, tool calls, usage; or a [`ModelError`] whose kind says what
//! went wrong.
//!
//! A provider never panics on a bad server: every failure is a [`ModelError`] carrying what
//! the loop needs for `session.error` (`errorType`, `statusCode`, `message`); retries before
//! any output are the provider's own business and are announced as [`ModelEvent::Retry`]
//! (for `assistant.turn_retry`).

use std::fmt;

mod anthropic;
mod copilot_user;
mod http;
mod openai;
mod reasoning;
mod replay;
mod responses;
mod sse;

pub use anthropic::AnthropicProvider;
pub use copilot_user::{
    CopilotUser, CopilotUserError, DEFAULT_GITHUB_API_URL, MAX_USER_BYTES, USER_LOOKUP_TIMEOUT,
    copilot_user, github_api_url_from_env,
};
pub use http::{
    ApiFlavor, EnvToken, Exchange, ExchangeRequest, ExchangeResponse, HttpProvider, KeyCommand,
    OpenAiConfig, ProviderEndpoint, ResponseBody, ResponseLimits, RetryPolicy, SharedExchange,
    SharedTokenSource, Timeouts, TokenSource, WireApi, provider_endpoint,
};
pub use openai::{
    ModelCapabilities, ModelInfo, ModelLimits, ModelPolicy, ModelSupports, OpenAiProvider,
    list_models,
};
pub use replay::ReplayProvider;
pub use responses::ResponsesProvider;

/// The HTTP provider of a configuration: Anthropic's Messages API for
/// [`ApiFlavor::Anthropic`], else the Responses API or Chat Completions by `wire_api`. (The
/// registry of wires: a new one is its module and one line here.)
pub fn http_provider(
    config: OpenAiConfig,
) -> Result<std::sync::Arc<dyn ModelProvider>, ModelError> {
    Ok(match (&config.flavor, config.wire_api) {
        (ApiFlavor::Anthropic, _) => std::sync::Arc::new(AnthropicProvider::new(config)?),
        (_, WireApi::Responses) => std::sync::Arc::new(ResponsesProvider::new(config)?),
        (_, WireApi::Completions) => std::sync::Arc::new(OpenAiProvider::new(config)?),
    })
}

/// A boxed, sendable future (the trait stays object-safe).
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// `call`, unless `cancel` fires first: the one body of every HTTP provider's
/// [`ModelProvider::complete`] (a cancelled call is dropped, which closes its connection).
pub(crate) fn cancellable<'a>(
    cancel: tokio_util::sync::CancellationToken,
    call: impl std::future::Future<Output = Result<ModelResponse, ModelError>> + Send + 'a,
) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
    Box::pin(async move {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ModelError::cancelled()),
            result = call => result,
        }
    })
}

/// One model call: the whole conversation so far and the tools on offer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatRequest {
    /// Model name sent to the server; empty means the provider's configured model.
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Ask for a streamed answer (deltas arrive as [`ModelEvent`]s).
    pub stream: bool,
    /// Reasoning effort (`low`, `medium`, `high`, ...; the session's `reasoningEffort`), sent
    /// as `reasoning_effort` to the Copilot endpoint (the Copilot CLI sends it to no other).
    pub reasoning_effort: Option<String>,
    /// Extra HTTP headers of this call (`session.send`'s `requestHeaders`); they override
    /// the provider's headers of the same name.
    pub headers: Vec<(String, String)>,
    /// The tools are offered for context only and the answer must be text (`tool_choice:
    /// "none"`), as the Copilot CLI's summary request asks.
    pub no_tool_calls: bool,
    /// Who makes the call. Nothing of it goes over the wire: it tells a provider that answers
    /// from a recording which of the recorded calls to answer from.
    pub origin: CallOrigin,
    /// Documents go with their title and `citations: {"enabled": true}` (the session's
    /// `enableCitations`; Anthropic's Messages API only).
    pub citations: bool,
}

/// Who makes a model call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CallOrigin {
    /// The main agent's turn.
    #[default]
    Main,
    /// A sub-agent's turn: its `task` call's id (the journal's `agentId`).
    Agent(String),
    /// The summary call of a compaction.
    Summary,
}

/// One thing a recording did to the main agent's history between two of its calls.
#[derive(Debug, Clone)]
pub enum HistoryStep {
    /// A compaction: one summary call (a [`CallOrigin::Summary`] request, answered the way
    /// the recorded one was).
    Compact {
        /// How many of the oldest non-system messages the recorded one replaced
        /// (`messagesRemoved`, else `preCompactionMessagesLength`, as the fold reads it);
        /// `None`: the loop's own choice (a failed one replaced nothing).
        replaced: Option<u64>,
    },
    /// A truncation: the recorded `session.truncation`'s `data`, written again (the fold takes
    /// its `messagesRemovedDuringTruncation` oldest messages out of the view).
    Truncate(Box<serde_json::value::RawValue>),
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatMessage {
    /// The engine's system prompt.
    System {
        /// The prompt text.
        content: String,
    },
    /// What the user (or the autopilot nudge) said.
    User {
        /// The message text.
        content: String,
        /// Parts after the text (attached images, text blobs); empty for plain text, which
        /// goes over the wire as a string, else as an array of parts with the text first.
        parts: Vec<ContentPart>,
    },
    /// An earlier answer of the model.
    Assistant {
        /// The answer's text; `None` when it only called tools.
        content: Option<String>,
        /// The tool calls it made.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool's output as text.
        content: String,
    },
}

impl ChatMessage {
    /// A plain-text user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: content.into(),
            parts: Vec::new(),
        }
    }
}

/// One content part of a user message after its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentPart {
    /// More text (an attachment's label or its contents).
    Text(String),
    /// An image, as a `data:` URL (OpenAI's `image_url` part).
    ImageUrl(String),
    /// A document (a PDF attachment), inline: a `document` block where the API reads one
    /// (Anthropic's Messages), left out elsewhere, where the attachment's name, the part
    /// before it, stands for it.
    Document {
        /// Its MIME type (`application/pdf`).
        media_type: String,
        /// Its bytes, base64.
        data: String,
        /// The attachment's name (the block's `title` when citations are on).
        title: String,
    },
}

/// One tool call made by the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The model's id of the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the raw JSON text the model sent (possibly not valid JSON).
    pub arguments: String,
}

impl ToolCall {
    /// The arguments as JSON: parsed when they are valid JSON, else the raw text as a JSON string.
    pub fn arguments_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(self.arguments.clone()))
    }
}

/// Something that happened during a call, reported as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// A piece of the answer's text (for `assistant.message_delta`).
    TextDelta(String),
    /// A piece of a tool call: its id and name (known from its first delta) and more arguments.
    ToolCallDelta {
        /// The call's id (empty if the server has not sent it yet).
        id: String,
        /// The tool's name (empty if the server has not sent it yet).
        name: String,
        /// Text to append to the call's arguments.
        arguments_delta: String,
    },
    /// The request failed before any output and is sent again after `delay_ms` (for
    /// `assistant.turn_retry`).
    Retry {
        /// Which retry this is: 1 for the first one.
        attempt: u32,
        /// How long the provider waits before sending again.
        delay_ms: u64,
        /// Why: the failure of the previous attempt, in words.
        reason: String,
        /// HTTP status of the failed attempt, when it got one.
        status_code: Option<u16>,
    },
}

/// The model's complete answer to one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelResponse {
    /// The answer's text; empty when the model only called tools.
    pub content: String,
    /// Tool calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens and timing, when the server reported usage.
    pub usage: Option<Usage>,
    /// The provider's completion id (`chatcmpl-...`), when known.
    pub api_call_id: Option<String>,
    /// The model that answered (as the server named it, else the requested one).
    pub model: String,
    /// Why the model stopped: `stop`, `tool_calls`, `length`, `content_filter`, ...
    pub finish_reason: Option<String>,
}

/// Tokens and timing of one call (for `assistant.usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub reasoning_tokens: u64,
    /// Milliseconds from sending the (successful) request to the end of the answer.
    pub duration_ms: u64,
    /// Microseconds from sending the request to the first streamed piece (streamed calls).
    pub time_to_first_token_us: Option<u64>,
    /// Mean microseconds between streamed pieces after the first (streamed calls).
    pub inter_token_latency_us: Option<u64>,
}

/// What kind of failure a [`ModelError`] is; [`ModelErrorKind::as_str`] is its spelling in
/// `session.error` (`errorType`) and in journals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelErrorKind {
    /// The server answered with an error status (or an error object in place of an answer).
    Http,
    /// The server could not be reached.
    Connection,
    /// No answer within the request timeout, or the answer stalled.
    Timeout,
    /// The answer broke off (cut connection, error in the stream, no end).
    Stream,
    /// The answer is not what the protocol says (not JSON, no choices, bad SSE).
    MalformedResponse,
    /// The answer went past a configured size limit (line, answer or body).
    TooLarge,
    /// A replay fixture does not hold the answer.
    Fixture,
    /// The caller cancelled the call.
    Cancelled,
    /// The provider is misconfigured (bad URL, a key command that failed, ...).
    Config,
    /// Any other spelling, as recorded in a journal (kept verbatim for replay); `journal` in
    /// the loop's `Outcome::Failed` when a session's journal failed.
    Other(String),
}

impl ModelErrorKind {
    /// The wire and journal spelling: `http`, `connection`, `timeout`, `stream`,
    /// `malformed_response`, `response_too_large`, `fixture`, `cancelled`, `config`, or the
    /// recorded text of [`ModelErrorKind::Other`].
    pub fn as_str(&self) -> &str {
        match self {
            ModelErrorKind::Http => "http",
            ModelErrorKind::Connection => "connection",
            ModelErrorKind::Timeout => "timeout",
            ModelErrorKind::Stream => "stream",
            ModelErrorKind::MalformedResponse => "malformed_response",
            ModelErrorKind::TooLarge => "response_too_large",
            ModelErrorKind::Fixture => "fixture",
            ModelErrorKind::Cancelled => "cancelled",
            ModelErrorKind::Config => "config",
            ModelErrorKind::Other(s) => s,
        }
    }

    /// The kind of a spelling (the inverse of [`ModelErrorKind::as_str`]).
    pub fn from_wire(text: &str) -> Self {
        match text {
            "http" => ModelErrorKind::Http,
            "connection" => ModelErrorKind::Connection,
            "timeout" => ModelErrorKind::Timeout,
            "stream" => ModelErrorKind::Stream,
            "malformed_response" => ModelErrorKind::MalformedResponse,
            "response_too_large" => ModelErrorKind::TooLarge,
            "fixture" => ModelErrorKind::Fixture,
            "cancelled" => ModelErrorKind::Cancelled,
            "config" => ModelErrorKind::Config,
            other => ModelErrorKind::Other(other.to_string()),
        }
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model call (for `session.error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// What kind of failure.
    pub kind: ModelErrorKind,
    /// HTTP status, when the server answered with one.
    pub status_code: Option<u16>,
    /// The server's own message when it sent one, else a description.
    pub message: String,
    /// Sending the same request again is safe and might succeed (false once output began).
    pub retryable: bool,
}

impl ModelError {
    /// An error of this kind with this message, no status, not retryable.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            status_code: None,
            message: message.into(),
            retryable: false,
        }
    }

    /// The call was cancelled by the caller.
    pub fn cancelled() -> Self {
        Self::new(ModelErrorKind::Cancelled, "the model call was cancelled")
    }

    /// The `errorType` of `session.error`: the kind's spelling.
    pub fn error_type(&self) -> &str {
        self.kind.as_str()
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status_code {
            Some(code) => write!(f, "{} error (HTTP {code}): {}", self.kind, self.message),
            None => write!(f, "{} error: {}", self.kind, self.message),
        }
    }
}

impl std::error::Error for ModelError {}

/// A model: answers one call at a time.
pub trait ModelProvider: Send + Sync {
    /// Short name of the provider (`openai`, `replay`, ...).
    fn name(&self) -> &str;

    /// The API path the calls go to, as `assistant.usage` names it (`/chat/completions`);
    /// `None` where the runtime's spelling for the API is not known.
    fn api_endpoint(&self) -> Option<&str> {
        None
    }

    /// For a provider that answers from a recording: what the recording did to the main
    /// agent's history before its call for `request` (the turn's request as the history stands),
    /// in order, so the loop does the same there instead of measuring the request against the
    /// window. `None` (every live model): the loop measures.
    fn recorded_history(&self, _request: &ChatRequest) -> Option<Vec<HistoryStep>> {
        None
    }

    /// Exactly one model call (retries before any output are part of this call). `events`
    /// receives streaming deltas and retry notices as they happen.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: tokio::sync::mpsc::UnboundedSender<ModelEvent>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_keep_their_spelling() {
        for kind in [
            ModelErrorKind::Http,
            ModelErrorKind::Connection,
            ModelErrorKind::Timeout,
            ModelErrorKind::Stream,
            ModelErrorKind::MalformedResponse,
            ModelErrorKind::TooLarge,
            ModelErrorKind::Fixture,
            ModelErrorKind::Cancelled,
            ModelErrorKind::Config,
            ModelErrorKind::Other("rate_limit".into()),
        ] {
            assert_eq!(ModelErrorKind::from_wire(kind.as_str()), kind);
        }
        assert_eq!(ModelError::cancelled().error_type(), "cancelled");
        assert_eq!(
            ModelError::new(ModelErrorKind::Other("quota".into()), "x").to_string(),
            "quota error: x"
        );
    }
}
