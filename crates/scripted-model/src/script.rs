//! Scripts: the answers the server gives, in order, as JSON or built in Rust.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Model name served when the script names none and the request names none.
pub const DEFAULT_MODEL: &str = "scripted-model";

/// A script: `{"model": "...", "wire": "...", "responses": [...]}`; one response per model
/// request, in the wire format of the path it came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    /// Model listed by `GET /v1/models` and answered when a request names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The responses, served in order, one per `POST .../chat/completions`.
    #[serde(default)]
    pub responses: Vec<ScriptedResponse>,
    /// Answers to summary requests (the request's last message mentions "summar", as a
    /// history compaction asks), served in order and over again from the first when used up;
    /// they do not take a place of `responses`. Empty: a summary request is answered from
    /// `responses` like any other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<ScriptedResponse>,
    /// The `data` entries of `GET /models` (e.g. Copilot-style entries with `capabilities`);
    /// one OpenAI-style entry for `model` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<Value>>,
    /// The one wire format served; every format (by its path) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<Wire>,
}

/// A wire format the server speaks, each at its own paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`, `/chat/completions`, Azure's
    /// `/openai/deployments/{model}/chat/completions` and `/openai/v1/chat/completions`.
    Completions,
    /// The OpenAI Responses API: `POST /v1/responses`, `/responses`, Azure's
    /// `/openai/responses` and `/openai/v1/responses`.
    Responses,
    /// Anthropic's Messages API: `POST /v1/messages`, `/messages`.
    Anthropic,
}

impl Wire {
    /// The format served at `path`, if any.
    pub fn of_path(path: &str) -> Option<Wire> {
        let azure_chat = path.starts_with("/openai/") && path.ends_with("/chat/completions");
        match path {
            "/v1/chat/completions" | "/chat/completions" => Some(Wire::Completions),
            _ if azure_chat => Some(Wire::Completions),
            "/v1/responses" | "/responses" | "/openai/responses" | "/openai/v1/responses" => {
                Some(Wire::Responses)
            }
            "/v1/messages" | "/messages" => Some(Wire::Anthropic),
            _ => None,
        }
    }

    /// The script's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Completions => "completions",
            Wire::Responses => "responses",
            Wire::Anthropic => "anthropic",
        }
    }
}

/// One scripted answer to one chat completion request.
///
/// Streaming or not follows the request's `stream` flag. Fields combine:
/// `delayMs` waits before the response head; `status` other than 200 answers with
/// `errorBody` (and `headers`, e.g. `Retry-After`); `hang` without `dropAfterChunks` keeps the
/// connection open and silent (no response head); `dropAfterChunks: N` closes the connection
/// after N SSE events (or, with `hang`, goes silent after them); `malformed` sends a line that
/// is not JSON (streaming) or a cut-off JSON body (non-streaming); `moreChoices` adds choices
/// (index 1, 2, ...) after the first; `endless` never ends the answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedResponse {
    /// The answer's text (streamed word by word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls, in order (streamed with their arguments split over several deltas).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// The `usage` object to report (OpenAI field names); computed from sizes when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// HTTP status; 200 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Body of a non-200 answer; a generic `{"error":{...}}` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_body: Option<Value>,
    /// Extra response headers, e.g. `{"Retry-After": "1"}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Served only to a request whose system prompt (its first message) starts with this
    /// text, before any earlier response; a request no such response is meant for takes the
    /// next response without one. Keeps a sub-agent's answers apart from the main agent's
    /// when their calls interleave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_system: Option<String>,
    /// Held until the server has received this many model requests in all (this one
    /// included; 60 s at most): orders an answer after another agent's next call without
    /// guessing a delay.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub after_requests: usize,
    /// Milliseconds to wait before sending the response head.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Milliseconds to wait between two SSE events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
    /// Close the connection (mid-body, without the end of the chunked body) after this many
    /// SSE events; non-streaming: after half the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_after_chunks: Option<usize>,
    /// Go silent and keep the connection open until the server shuts down.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hang: bool,
    /// Send something that is not valid JSON where a chunk or the body belongs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub malformed: bool,
    /// `finish_reason` to report; `tool_calls` when there are tool calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Choices after the first (`index` 1, 2, ...), as some servers send consecutive
    /// assistant messages; streamed after the first choice's chunks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_choices: Vec<ScriptedChoice>,
    /// Never end: after the content, repeat it (as more stream chunks, or as more of a
    /// chunked non-streamed body) until the client hangs up.
    #[serde(default, skip_serializing_if = "is_false")]
    pub endless: bool,
}

/// One more choice of an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedChoice {
    /// The choice's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Its tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Call id; `call_<n>` (n counts the server's tool calls from 1) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// Arguments: a JSON string is sent as raw text as is (even when it is not JSON), any other
    /// value is sent as its compact JSON text.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Why a script could not be loaded.
#[derive(Debug)]
pub struct ScriptError(pub String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

impl Script {
    /// An empty script (every request then gets the "no more responses" 500).
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        serde_json::from_str(text).map_err(|e| ScriptError(format!("bad script: {e}")))
    }

    /// Reads a script from a JSON file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("{}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| ScriptError(format!("{}: {e}", path.display())))
    }

    /// The script as pretty JSON (what [`Script::from_json`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a script serializes")
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Appends a response.
    pub fn respond(mut self, response: ScriptedResponse) -> Self {
        self.responses.push(response);
        self
    }

    /// Adds an answer to summary requests (see [`Script::summaries`]).
    pub fn summary(mut self, response: ScriptedResponse) -> Self {
        self.summaries.push(response);
        self
    }

    /// Appends a plain text answer.
    pub fn text(self, content: impl Into<String>) -> Self {
        self.respond(ScriptedResponse::text(content))
    }

    /// Appends an answer with one tool call.
    pub fn tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.respond(ScriptedResponse::tool_call(name, arguments))
    }

    /// Appends an error answer with this status and body.
    pub fn error(self, status: u16, body: Value) -> Self {
        self.respond(ScriptedResponse::error(status, body))
    }
}

impl ScriptedResponse {
    /// A plain text answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// An answer with one tool call and no text.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().and_tool_call(name, arguments)
    }

    /// An error answer: this status with this body.
    pub fn error(status: u16, body: Value) -> Self {
        Self {
            status: Some(status),
            error_body: Some(body),
            ..Self::default()
        }
    }

    /// An error answer with the OpenAI error shape `{"error":{"message":..,"type":..}}`.
    pub fn error_message(status: u16, message: impl Into<String>) -> Self {
        Self::error(
            status,
            serde_json::json!({"error": {"message": message.into(), "type": "scripted_error", "code": null}}),
        )
    }

    /// Adds a tool call.
    pub fn and_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: None,
            name: name.into(),
            arguments,
        });
        self
    }

    /// Adds a tool call with a fixed id.
    pub fn and_tool_call_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: Some(id.into()),
            name: name.into(),
            arguments,
        });
        self
    }

    /// This response only for a request whose system prompt starts with `prefix` (see
    /// [`ScriptedResponse::for_system`]).
    pub fn for_system(mut self, prefix: impl Into<String>) -> Self {
        self.for_system = Some(prefix.into());
        self
    }

    /// This response held until `count` model requests have arrived (see
    /// [`ScriptedResponse::after_requests`]).
    pub fn after_requests(mut self, count: usize) -> Self {
        self.after_requests = count;
        self
    }

    /// Sets the text.
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.content = Some(content.into());
        self
    }

    /// Reports this usage (`prompt_tokens`, `completion_tokens`, `total_tokens`).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some(serde_json::json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }));
        self
    }

    /// Reports this raw `usage` object.
    pub fn with_raw_usage(mut self, usage: Value) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Waits this long before the response head.
    pub fn with_delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    /// Waits this long between SSE events.
    pub fn with_chunk_delay_ms(mut self, ms: u64) -> Self {
        self.chunk_delay_ms = ms;
        self
    }

    /// Closes the connection after `n` SSE events.
    pub fn drop_after_chunks(mut self, n: usize) -> Self {
        self.drop_after_chunks = Some(n);
        self
    }

    /// Goes silent (after `dropAfterChunks` events when set, else before the response head).
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    /// Sends something that is not JSON.
    pub fn malformed(mut self) -> Self {
        self.malformed = true;
        self
    }

    /// Adds a choice (after the first and any added before).
    pub fn and_choice(mut self, choice: ScriptedChoice) -> Self {
        self.more_choices.push(choice);
        self
    }

    /// Never ends (see [`ScriptedResponse::endless`]).
    pub fn endless(mut self) -> Self {
        self.endless = true;
        self
    }

    /// Reports this finish reason.
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }
}

impl ScriptedChoice {
    /// A choice with this text.
    pub fn text(content: impl Into<String>) -> Self {
        ScriptedChoice {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// Adds a tool call with a fixed id.
    pub fn and_tool_call_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: Some(id.into()),
            name: name.into(),
            arguments,
        });
        self
    }
}

impl Script {
    /// Serves this wire format only.
    pub fn wire(mut self, wire: Wire) -> Self {
        self.wire = Some(wire);
        self
    }

    /// Serves these `data` entries on `GET /models`.
    pub fn with_models(mut self, models: Vec<Value>) -> Self {
        self.models = Some(models);
        self
    }
}

impl ScriptedToolCall {
    /// The arguments as the text sent on the wire.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}
