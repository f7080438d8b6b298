//! The `assistant.usage` of one model call, with the accounting fields the runtime fills in.
//!
//! Besides the server's token counts the runtime reports what the engine itself knows of the
//! call: its timing, the tools offered and called, and flags such as `rte` and
//! `contentFilterTriggered`. turnstile has no billing, so `cost` is 0 and `quotaSnapshots`
//! empty, as the runtime writes them for a model it does not bill.

use serde_json::{Map, Number, Value};
use turnstile_journal::payload::AssistantUsage;

use turnstile_providers::{ModelResponse, ToolCall, Usage};

/// What `assistant.usage` is made of.
pub(super) struct Call<'a> {
    /// The model's answer.
    pub response: &'a ModelResponse,
    /// The server's token counts and the call's timing.
    pub usage: &'a Usage,
    /// The model that answered.
    pub model: &'a str,
    /// The tool calls the answer asked for (ids already made unique).
    pub calls: &'a [ToolCall],
    /// How many tools the request offered.
    pub offered_tools: usize,
    /// Tokens of the tool definitions, as `session.usage_info` announced them.
    pub tool_tokens: Option<u64>,
    /// The provider's API path, when the runtime's spelling of it is known.
    pub api_endpoint: Option<&'a str>,
}

impl Call<'_> {
    /// The event, fields in the runtime's order.
    pub(super) fn event(&self) -> AssistantUsage {
        let usage = self.usage;
        let mut counts = Map::new();
        for call in self.calls {
            let n = counts.get(&call.name).and_then(Value::as_u64).unwrap_or(0);
            counts.insert(call.name.clone(), Value::from(n + 1));
        }
        AssistantUsage {
            model: self.model.to_owned(),
            input_tokens: Some(usage.input_tokens),
            output_tokens: Some(usage.output_tokens),
            cache_read_tokens: Some(usage.cache_read_tokens),
            cache_write_tokens: Some(usage.cache_write_tokens),
            reasoning_tokens: Some(usage.reasoning_tokens),
            cost: Some(Number::from(0)),
            duration: Some(usage.duration_ms),
            time_to_first_token_ms: usage.time_to_first_token_us.and_then(millis),
            inter_token_latency_ms: usage.inter_token_latency_us.and_then(millis),
            interaction_type: Some("conversation-agent".into()),
            api_call_id: self.response.api_call_id.clone(),
            rte: Some(false),
            api_endpoint: self.api_endpoint.map(str::to_owned),
            quota_snapshots: Some(Map::new()),
            available_tool_count: Some(self.offered_tools as u64),
            tool_token_count: self.tool_tokens,
            num_tool_calls: Some(self.calls.len() as u64),
            tool_counts: Some(counts),
            finish_reason: self.response.finish_reason.clone(),
            content_filter_triggered: Some(
                self.response.finish_reason.as_deref() == Some("content_filter"),
            ),
            ..Default::default()
        }
    }
}

/// Microseconds as fractional milliseconds, as the runtime writes its timings.
fn millis(micros: u64) -> Option<Number> {
    Number::from_f64(micros as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn counts_the_calls_per_tool_and_flags_a_filtered_answer() {
        let response = ModelResponse {
            finish_reason: Some("content_filter".into()),
            ..Default::default()
        };
        let usage = Usage {
            time_to_first_token_us: Some(8_665),
            ..Default::default()
        };
        let calls = [call("bash", "a"), call("view", "b"), call("bash", "c")];
        let event = Call {
            response: &response,
            usage: &usage,
            model: "m",
            calls: &calls,
            offered_tools: 16,
            tool_tokens: Some(5182),
            api_endpoint: Some("/chat/completions"),
        }
        .event();
        assert_eq!(event.num_tool_calls, Some(3));
        assert_eq!(
            serde_json::to_value(&event.tool_counts).unwrap(),
            serde_json::json!({"bash": 2, "view": 1})
        );
        assert_eq!(event.content_filter_triggered, Some(true));
        assert_eq!(event.time_to_first_token_ms, Number::from_f64(8.665));
        assert_eq!(event.inter_token_latency_ms, None);
        assert_eq!(event.available_tool_count, Some(16));
    }
}
