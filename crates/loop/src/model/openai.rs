//! A provider for any OpenAI-compatible Chat Completions server.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::sse::SseParser;
use super::{
    BoxFuture, ChatMessage, ChatRequest, ContentPart, ModelError, ModelEvent, ModelProvider,
    ModelResponse, ToolCall, Usage,
};

/// Largest error or non-streamed body read from a server.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Longest server text quoted in an error message when it sent no `error.message`.
const MAX_QUOTE: usize = 500;

/// How long to wait for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From sending the request to the response head (connecting included).
    pub request: Duration,
    /// Longest silence between two pieces of a response body.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(120),
            stall: Duration::from_secs(60),
        }
    }
}

/// When and how often a call is sent again after a failure before any output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one, with jitter.
    pub base_delay: Duration,
    /// Longest computed delay.
    pub max_delay: Duration,
    /// Longest delay taken from a server's `Retry-After` (longer ones are cut to this).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based), honouring a server's `Retry-After`.
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        // Jitter: somewhere between half and all of the computed delay.
        let half = full / 2;
        half + half.mul_f64(random_unit())
    }
}

/// A number in `[0, 1)` from the std hasher's random keys (no extra dependency).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Where and how to reach an OpenAI-compatible server.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`;
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// Bearer token; none for local servers.
    pub api_key: Option<String>,
    /// Model used when a request names none.
    pub model: String,
    /// Request and stall timeouts.
    pub timeouts: Timeouts,
    /// Retries before any output.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiConfig {
    /// A configuration with no key and the default timeouts and retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// The key from `TURNSTILE_API_KEY`, else `OPENAI_API_KEY` (empty values count as unset).
    pub fn api_key_from_env() -> Option<String> {
        ["TURNSTILE_API_KEY", "OPENAI_API_KEY"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|v| !v.trim().is_empty())
    }
}

/// A [`ModelProvider`] over HTTP(S) for any OpenAI-compatible Chat Completions server.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: String,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// A provider for this configuration; fails only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let endpoint = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.timeouts.request)
            .user_agent(concat!("turnstile/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&endpoint) {
            // A proxy from the environment must not get between us and a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| {
            ModelError::new(
                "config",
                format!("cannot build the HTTP client: {}", chain(&e)),
            )
        })?;
        Ok(OpenAiProvider {
            config,
            endpoint,
            client,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the OpenAI shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let model = self.model_of(request);
        let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
        let mut body = Map::new();
        body.insert("model".into(), model.into());
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert("stream".into(), request.stream.into());
        if request.stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    fn model_of<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.config.model
        } else {
            &request.model
        }
    }

    /// The call with its retries (cancellation is handled by the caller).
    async fn call(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<ModelResponse, ModelError> {
        let body = serde_json::to_vec(&self.request_body(request)).expect("JSON serializes");
        let model = self.model_of(request).to_string();
        let mut attempt = 0u32;
        loop {
            let started = Instant::now();
            let (error, retry_after) = match self.send(&body, request.stream).await {
                Ok(response) if response.status().is_success() => {
                    // Committed: from here on nothing is ever sent again.
                    return if request.stream {
                        self.read_stream(response, events, model, started).await
                    } else {
                        self.read_whole(response, model, started).await
                    };
                }
                Ok(response) => self.http_error(response).await,
                Err(error) => (error, None),
            };
            if !error.retryable || attempt >= self.config.retry.max_retries {
                return Err(error);
            }
            attempt += 1;
            let delay = self.config.retry.delay(attempt, retry_after);
            let _ = events.send(ModelEvent::Retry {
                attempt,
                delay_ms: delay.as_millis() as u64,
                reason: error.to_string(),
                status_code: error.status_code,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Sends the request and waits for the response head.
    async fn send(&self, body: &[u8], stream: bool) -> Result<reqwest::Response, ModelError> {
        let mut builder = self
            .client
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body.to_vec());
        if let Some(key) = &self.config.api_key {
            builder = builder.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        let limit = self.config.timeouts.request;
        match tokio::time::timeout(limit, builder.send()).await {
            Err(_) => Err(ModelError {
                error_type: "timeout".into(),
                status_code: None,
                message: format!(
                    "no response from {} within {} ms",
                    self.endpoint,
                    limit.as_millis()
                ),
                retryable: true,
            }),
            Ok(Err(e)) => Err(ModelError {
                error_type: if e.is_timeout() {
                    "timeout"
                } else {
                    "connection"
                }
                .into(),
                status_code: None,
                message: format!("cannot reach {}: {}", self.endpoint, chain(&e)),
                retryable: true,
            }),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// The error of a non-2xx answer, and the server's `Retry-After` when it sent one.
    async fn http_error(&self, response: reqwest::Response) -> (ModelError, Option<Duration>) {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = self.read_body(response).await.unwrap_or_default();
        let message = server_message(&body).unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&body);
            let text = text.trim();
            if text.is_empty() {
                format!(
                    "HTTP {} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )
                .trim_end()
                .to_string()
            } else {
                quote(text)
            }
        });
        let code = status.as_u16();
        let retryable = matches!(code, 408 | 409 | 429) || status.is_server_error();
        (
            ModelError {
                error_type: "http".into(),
                status_code: Some(code),
                message,
                retryable,
            },
            retry_after,
        )
    }

    /// Reads a whole body, each piece within the stall timeout.
    async fn read_body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, ModelError> {
        let mut body = Vec::new();
        loop {
            match self.next_chunk(&mut response).await? {
                None => return Ok(body),
                Some(bytes) => {
                    body.extend_from_slice(&bytes);
                    if body.len() > MAX_BODY {
                        return Err(ModelError::new(
                            "malformed_response",
                            format!("the response body is larger than {MAX_BODY} bytes"),
                        ));
                    }
                }
            }
        }
    }

    /// The next piece of a body; a stall or a cut connection is an error (never retried).
    async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<Option<Vec<u8>>, ModelError> {
        let limit = self.config.timeouts.stall;
        match tokio::time::timeout(limit, response.chunk()).await {
            Err(_) => Err(ModelError::new(
                "timeout",
                format!(
                    "the response stalled: nothing arrived for {} ms",
                    limit.as_millis()
                ),
            )),
            Ok(Err(e)) => Err(ModelError::new(
                "stream",
                format!("the connection broke during the response: {}", chain(&e)),
            )),
            Ok(Ok(chunk)) => Ok(chunk.map(|b| b.to_vec())),
        }
    }

    async fn read_whole(
        &self,
        response: reqwest::Response,
        model: String,
        started: Instant,
    ) -> Result<ModelResponse, ModelError> {
        let body = self.read_body(response).await?;
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            ModelError::new(
                "malformed_response",
                format!(
                    "the response is not JSON ({e}): {}",
                    quote(&String::from_utf8_lossy(&body))
                ),
            )
        })?;
        if let Some(message) = error_message(&value) {
            return Err(ModelError::new("http", message));
        }
        let choice = value
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| {
                ModelError::new(
                    "malformed_response",
                    format!("the response has no choices: {}", quote(&value.to_string())),
                )
            })?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        let content = text_of(message.get("content"));
        let mut tool_calls = Vec::new();
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for (i, call) in calls.iter().enumerate() {
                let function = call.get("function").unwrap_or(&Value::Null);
                tool_calls.push(ToolCall {
                    id: str_of(call.get("id"))
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("call_{i}")),
                    name: str_of(function.get("name")).unwrap_or_default(),
                    arguments: arguments_text(function.get("arguments")),
                });
            }
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        Ok(ModelResponse {
            content,
            tool_calls,
            usage: value.get("usage").and_then(|u| usage_of(u, duration_ms)),
            api_call_id: str_of(value.get("id")).filter(|s| !s.is_empty()),
            model: str_of(value.get("model"))
                .filter(|s| !s.is_empty())
                .unwrap_or(model),
            finish_reason: str_of(choice.get("finish_reason")),
        })
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        events: &UnboundedSender<ModelEvent>,
        model: String,
        started: Instant,
    ) -> Result<ModelResponse, ModelError> {
        let mut parser = SseParser::default();
        let mut state = StreamState::default();
        let bad_sse = |msg: String| ModelError::new("malformed_response", msg);
        while let Some(bytes) = self.next_chunk(&mut response).await? {
            for data in parser.push(&bytes).map_err(bad_sse)? {
                state.event(&data, events)?;
                if state.done {
                    return Ok(state.finish(model, started));
                }
            }
        }
        for data in parser.finish().map_err(bad_sse)? {
            state.event(&data, events)?;
        }
        if state.done || state.finish_reason.is_some() {
            Ok(state.finish(model, started))
        } else {
            Err(ModelError::new(
                "stream",
                "the stream ended before the answer was complete (no finish_reason, no [DONE])",
            ))
        }
    }
}

impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ModelError::cancelled()),
                result = self.call(request, &events) => result,
            }
        })
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// What a stream has said so far.
#[derive(Debug, Default)]
struct StreamState {
    content: String,
    calls: Vec<PartialCall>,
    usage: Option<Value>,
    api_call_id: Option<String>,
    model: Option<String>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamState {
    /// Handles the data of one SSE event.
    fn event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        match serde_json::from_str::<Value>(data) {
            Ok(chunk) => self.chunk(&chunk, events),
            // Some servers put several `data:` lines in one event: try them one by one.
            Err(_) if data.contains('\n') => {
                for line in data.lines().filter(|l| !l.trim().is_empty()) {
                    self.event(line, events)?;
                    if self.done {
                        break;
                    }
                }
                Ok(())
            }
            Err(e) => Err(ModelError::new(
                "malformed_response",
                format!(
                    "the stream sent a chunk that is not JSON ({e}): {}",
                    quote(data)
                ),
            )),
        }
    }

    fn chunk(
        &mut self,
        chunk: &Value,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(message) = error_message(chunk) {
            return Err(ModelError::new("stream", message));
        }
        if self.api_call_id.is_none() {
            self.api_call_id = str_of(chunk.get("id")).filter(|s| !s.is_empty());
        }
        if self.model.is_none() {
            self.model = str_of(chunk.get("model")).filter(|s| !s.is_empty());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        // Only the first choice (`n` is never asked for).
        let Some(choice) = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if let Some(reason) = str_of(choice.get("finish_reason")) {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        let text = text_of(delta.get("content"));
        if !text.is_empty() {
            self.content.push_str(&text);
            let _ = events.send(ModelEvent::TextDelta(text));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                self.tool_call_delta(position, call, events);
            }
        }
        Ok(())
    }

    fn tool_call_delta(
        &mut self,
        position: usize,
        call: &Value,
        events: &UnboundedSender<ModelEvent>,
    ) {
        let id = str_of(call.get("id")).filter(|s| !s.is_empty());
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = str_of(function.get("name")).filter(|s| !s.is_empty());
        let index = match call.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // No index: a new id starts a new call, anything else continues the last one.
            None => match (&id, self.calls.last()) {
                (Some(id), Some(last)) if last.id != *id => last.index + 1,
                (_, Some(last)) => last.index,
                (_, None) => position as u64,
            },
        };
        let slot = match self.calls.iter().position(|c| c.index == index) {
            Some(slot) => slot,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let partial = &mut self.calls[slot];
        if let Some(id) = id
            && partial.id.is_empty()
        {
            partial.id = id;
        }
        if let Some(name) = name
            && partial.name.is_empty()
        {
            partial.name = name;
        }
        let arguments_delta = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            // Some servers send the arguments as an object in one piece.
            Some(other) => other.to_string(),
        };
        partial.arguments.push_str(&arguments_delta);
        let _ = events.send(ModelEvent::ToolCallDelta {
            id: partial.id.clone(),
            name: partial.name.clone(),
            arguments_delta,
        });
    }

    fn finish(mut self, model: String, started: Instant) -> ModelResponse {
        let duration_ms = started.elapsed().as_millis() as u64;
        self.calls.sort_by_key(|c| c.index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", c.index)
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        ModelResponse {
            content: self.content,
            tool_calls,
            usage: self.usage.as_ref().and_then(|u| usage_of(u, duration_ms)),
            api_call_id: self.api_call_id,
            model: self.model.unwrap_or(model),
            finish_reason: self.finish_reason,
        }
    }
}

/// One message in the OpenAI shape.
fn message_json(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content, parts } if parts.is_empty() => {
            json!({"role": "user", "content": content})
        }
        // With attachments the text goes first, then each part, as the Copilot CLI sends them.
        ChatMessage::User { content, parts } => {
            let mut items = vec![json!({"type": "text", "text": content})];
            items.extend(parts.iter().map(|p| match p {
                ContentPart::Text(text) => json!({"type": "text", "text": text}),
                ContentPart::ImageUrl(url) => {
                    json!({"type": "image_url", "image_url": {"url": url}})
                }
            }));
            json!({"role": "user", "content": items})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut m = Map::new();
            m.insert("role".into(), "assistant".into());
            let content = match content {
                Some(c) => Value::String(c.clone()),
                // `content` may be null only next to tool calls.
                None if !tool_calls.is_empty() => Value::Null,
                None => Value::String(String::new()),
            };
            m.insert("content".into(), content);
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = if c.arguments.trim().is_empty() {
                            "{}"
                        } else {
                            &c.arguments
                        };
                        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// Tokens from an OpenAI `usage` object (Anthropic-style cache fields understood too).
fn usage_of(usage: &Value, duration_ms: u64) -> Option<Usage> {
    if !usage.is_object() {
        return None;
    }
    let n = |path: &str| usage.pointer(path).and_then(Value::as_u64);
    Some(Usage {
        input_tokens: n("/prompt_tokens").or(n("/input_tokens")).unwrap_or(0),
        output_tokens: n("/completion_tokens").or(n("/output_tokens")).unwrap_or(0),
        cache_read_tokens: n("/prompt_tokens_details/cached_tokens")
            .or(n("/cache_read_input_tokens"))
            .unwrap_or(0),
        cache_write_tokens: n("/prompt_tokens_details/cache_write_tokens")
            .or(n("/prompt_tokens_details/cache_creation_tokens"))
            .or(n("/cache_creation_input_tokens"))
            .unwrap_or(0),
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens").unwrap_or(0),
        duration_ms,
    })
}

/// `error.message` (or `error` as a string, or a top-level `message` next to `error`).
fn error_message(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    match error {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => Some(
            o.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| quote(&error.to_string())),
        ),
        other => Some(quote(&other.to_string())),
    }
}

/// The server's message in an error body, if the body is JSON that has one.
fn server_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    error_message(&value)
        .or_else(|| str_of(value.get("message")).or_else(|| str_of(value.get("detail"))))
}

/// `Retry-After` (seconds) or `retry-after-ms`; HTTP dates are not honoured.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let secs = get("retry-after")?.parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

fn str_of(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_string)
}

/// Message text: a string, or the `text` of an array of content parts.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Tool-call arguments as raw text (servers that send an object get its JSON text).
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// At most [`MAX_QUOTE`] characters of server text.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// An error and its sources, joined with `: ` (reqwest's own message is terse).
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

fn is_loopback(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if let Some(inner) = host.strip_prefix('[') {
        inner.split(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_grow_with_jitter_and_honour_retry_after() {
        let policy = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            max_retry_after: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let d1 = policy.delay(1, None);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d2 = policy.delay(2, None);
            assert!(d2 >= Duration::from_millis(100) && d2 <= Duration::from_millis(200));
            let d5 = policy.delay(5, None);
            assert!(d5 >= Duration::from_millis(150) && d5 <= Duration::from_millis(300));
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2))),
            Duration::from_millis(1000)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(20))),
            Duration::from_millis(20)
        );
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn debug_output_hides_the_key() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key = Some("sk-secret".into());
        let provider = OpenAiProvider::new(config).unwrap();
        let shown = format!("{provider:?}");
        assert!(
            !shown.contains("sk-secret") && shown.contains("<redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8080/v1/chat/completions"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }

    #[test]
    fn usage_fields() {
        let u = usage_of(
            &json!({"prompt_tokens": 10, "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 3},
                    "completion_tokens_details": {"reasoning_tokens": 2}}),
            7,
        )
        .unwrap();
        assert_eq!(
            u,
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_read_tokens: 3,
                cache_write_tokens: 0,
                reasoning_tokens: 2,
                duration_ms: 7
            }
        );
        assert_eq!(usage_of(&Value::Null, 1), None);
    }

    #[test]
    fn quotes_are_cut_on_char_boundaries() {
        let long = "é".repeat(MAX_QUOTE + 10);
        let q = quote(&long);
        assert!(q.ends_with("..."));
        assert_eq!(q.chars().count(), MAX_QUOTE + 3);
    }
}
