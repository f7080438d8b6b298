//! The parts of events without a typed payload in the journal crate that the fold reads, read
//! leniently because writers differ in the rest, and the usage sums of `session.shutdown`.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::state::{AgentUsage, ModelUsage, TokenCounts};

/// Adds `add` to `sum`.
pub(crate) fn add_tokens(sum: &mut TokenCounts, add: TokenCounts) {
    sum.input += add.input;
    sum.output += add.output;
    sum.cache_read += add.cache_read;
    sum.cache_write += add.cache_write;
    sum.reasoning += add.reasoning;
}

/// One model's entry of `session.shutdown`'s `modelMetrics`.
pub(crate) fn model_usage(v: &Value) -> ModelUsage {
    let n = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
    let usage = v.get("usage").cloned().unwrap_or(Value::Null);
    ModelUsage {
        requests: v.get("requests").map_or(0, |r| n(r, "count")),
        tokens: TokenCounts {
            input: n(&usage, "inputTokens"),
            output: n(&usage, "outputTokens"),
            cache_read: n(&usage, "cacheReadTokens"),
            cache_write: n(&usage, "cacheWriteTokens"),
            reasoning: n(&usage, "reasoningTokens"),
        },
    }
}

/// One agent's entry of `session.shutdown`'s `agentMetrics`.
pub(crate) fn agent_usage(v: &Value) -> AgentUsage {
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    AgentUsage {
        agent_name: text("agentName"),
        agent_display_name: text("agentDisplayName"),
        api_duration_ms: v
            .get("totalApiDurationMs")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        models: v
            .get("modelMetrics")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), model_usage(v))).collect())
            .unwrap_or_default(),
    }
}

/// `session.mode_changed` (no typed payload in the journal crate).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModeChanged {
    pub(crate) new_mode: Option<String>,
}

/// `session.model_change` (no typed payload in the journal crate).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelChange {
    pub(crate) new_model: Option<String>,
}

/// The part of `session.shutdown` the fold reads; lenient because writers differ in the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Shutdown {
    pub(crate) model_metrics: Option<Map<String, Value>>,
    /// Newer runtimes' per-agent figures (`main` and each sub-agent's id).
    pub(crate) agent_metrics: Option<Map<String, Value>>,
    pub(crate) total_api_duration_ms: Option<u64>,
    pub(crate) code_changes: Option<crate::state::CodeTotals>,
}

/// `session.compaction_complete` (no typed payload in the journal crate).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompactionComplete {
    pub(crate) success: Option<bool>,
    pub(crate) summary_content: Option<String>,
    pub(crate) messages_removed: Option<u64>,
    pub(crate) pre_compaction_messages_length: Option<u64>,
}

/// `session.truncation` (no typed payload in the journal crate).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Truncation {
    pub(crate) messages_removed_during_truncation: Option<u64>,
}
