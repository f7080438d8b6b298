//! `assistant.*` payloads: one model call (a turn), its answer, reasoning and usage.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::payload;

/// `assistant.turn_start`: one LLM call begins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantTurnStart {
    /// Turn number within the interaction, as a string ("0", "1", ...).
    pub turn_id: String,
    /// Model of the turn, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The interaction (one user message and its turns) this turn belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
}
payload!(AssistantTurnStart, "assistant.turn_start");

/// `assistant.message`: the model's complete answer of one call, text and tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Id of this message (deltas carry the same id).
    pub message_id: String,
    /// `messageId` of the user message that started the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub originating_message_id: Option<String>,
    /// Model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The answer's text; empty when the model only called tools.
    pub content: String,
    /// Tool calls the model made, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_requests: Option<Vec<ToolRequest>>,
    /// Anthropic's opaque extended-thinking data (session-bound, stripped on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_opaque: Option<String>,
    /// Readable reasoning text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_text: Option<String>,
    /// Non-canonical wire field the provider used for reasoning, so the dialect round-trips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_wire_field: Option<String>,
    /// OpenAI's encrypted reasoning (session-bound, stripped on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Generation phase of phased-output models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Position of this message among the chunks of one response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<u32>,
    /// Number of chunks the response was split into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_count: Option<u32>,
    /// Interaction the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Turn that produced the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Output tokens reported by the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// `x-github-request-id` of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// `x-request-id` the client minted for the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_request_id: Option<String>,
    /// `x-copilot-service-request-id` of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_request_id: Option<String>,
    /// `X-GitHub-Copilot-Request-TE` signal of the call; false when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rte: Option<bool>,
    /// Provider's completion id, shared by all chunks of one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_call_id: Option<String>,
    /// Provider-native server-side tool payload, kept verbatim for replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tools: Option<Value>,
    /// Provider-native reasoning blocks, kept verbatim for replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_blocks: Option<Value>,
    /// Parent tool call when a sub-agent wrote this (deprecated by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Citations of spans of `content` (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Value>,
    /// HydraFusion attribution (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Value>,
}
payload!(AssistantMessage, "assistant.message");

/// One tool call requested by the model in an [`AssistantMessage`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequest {
    /// The model's id of the call; the tool events of the call carry it.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as the model sent them (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub arguments: Option<Value>,
    /// `function` (the default when absent) or `custom` (grammar-based tools).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What this call does, in words; the runtime may write `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub intention_summary: Option<Option<String>>,
    /// Display title of the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_title: Option<String>,
    /// MCP server of the tool, for MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server_name: Option<String>,
    /// The tool's own name on its MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool_name: Option<String>,
    /// Hosted program that made the call, if not the model itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<ToolRequestCaller>,
}

/// The hosted program behind a [`ToolRequest`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestCaller {
    /// Kind of caller: `program`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Provider-assigned id of the caller.
    pub caller_id: String,
}

/// `assistant.message_delta` (ephemeral): a streamed piece of an answer's text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageDelta {
    /// The `assistant.message` this piece belongs to.
    pub message_id: String,
    /// Text to append.
    pub delta_content: String,
    /// Parent tool call when a sub-agent wrote this (deprecated by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}
payload!(AssistantMessageDelta, "assistant.message_delta");

/// `assistant.reasoning`: the complete thinking text of one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantReasoning {
    /// Id of this reasoning block.
    pub reasoning_id: String,
    /// The thinking text.
    pub content: String,
    /// `X-GitHub-Copilot-Request-TE` signal of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rte: Option<bool>,
}
payload!(AssistantReasoning, "assistant.reasoning");

/// `assistant.usage` (ephemeral): tokens, timing and cost of one model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantUsage {
    /// Model of the call.
    pub model: String,
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// New prompt-cache expiry (ISO 8601), when the call set or refreshed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_expires_at: Option<String>,
    /// Output tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Billing multiplier of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Number>,
    /// Duration of the call in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
    /// Time to first token in milliseconds (streaming only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<Number>,
    /// Time to first observable output (text, reasoning or tool call) in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_ttft_ms: Option<Number>,
    /// Mean inter-token latency in milliseconds (streaming only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter_token_latency_ms: Option<Number>,
    /// What started the call, e.g. `user`, `sub-agent`, `mcp-sampling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator: Option<String>,
    /// Call class, e.g. `conversation-agent`, `conversation-subagent`, `conversation-compaction`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_type: Option<String>,
    /// Whether a bring-your-own-key provider served the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_byok: Option<bool>,
    /// Whether Auto mode picked the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_auto: Option<bool>,
    /// Effective prompt-token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<u64>,
    /// Requested output-token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Accepted speculative prediction tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_prediction_tokens: Option<u64>,
    /// Rejected speculative prediction tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_prediction_tokens: Option<u64>,
    /// `http` or `websocket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Provider's completion id, e.g. `chatcmpl-...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_call_id: Option<String>,
    /// `x-github-request-id` of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_call_id: Option<String>,
    /// `x-copilot-service-request-id` of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_request_id: Option<String>,
    /// `X-GitHub-Copilot-Request-TE` signal of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rte: Option<bool>,
    /// `/chat/completions`, `/v1/messages`, `/responses` or `ws:/responses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// Parent tool call when a sub-agent made the call (deprecated by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Quota snapshots keyed by quota id (internal billing data, kept raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_snapshots: Option<Map<String, Value>>,
    /// CAPI `copilot_usage` of the response (kept raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot_usage: Option<Value>,
    /// Reasoning effort of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode: `none`, `concise` or `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Tools offered to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_tool_count: Option<u64>,
    /// Tokens taken by the tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_token_count: Option<u64>,
    /// How the prompt-cache frontier was found, e.g. `estimated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier_source: Option<String>,
    /// Prompt-cache lifetime in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl_seconds: Option<u64>,
    /// Whether the provider reported cache details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_details_reported: Option<bool>,
    /// Tool calls the model returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_tool_calls: Option<u64>,
    /// Tool calls per tool name (integers), in the order the runtime wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_counts: Option<Map<String, Value>>,
    /// Finish reason in OpenAI words: `stop`, `length`, `tool_calls`, `content_filter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Whether content filtering blocked or cut the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_filter_triggered: Option<bool>,
    /// HydraFusion attribution (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Value>,
}
payload!(AssistantUsage, "assistant.usage");

/// `assistant.turn_end`: the turn's model answer and tools are done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantTurnEnd {
    /// The turn that ended.
    pub turn_id: String,
    /// Model of the turn, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}
payload!(AssistantTurnEnd, "assistant.turn_end");

/// `assistant.turn_retry` (ephemeral): another inference attempt within the same turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantTurnRetry {
    /// The turn being retried.
    pub turn_id: String,
    /// Model of the retry, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why the attempt is retried, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
payload!(AssistantTurnRetry, "assistant.turn_retry");
