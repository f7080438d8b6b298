//! The session-wide figures `session.shutdown` reports, as the Copilot CLI keeps them: model
//! calls and tokens per model and the time spent in model calls, cumulative over every process
//! that ran the session. `assistant.usage` is ephemeral, so nothing on disk holds the calls of
//! earlier processes but the last `session.shutdown`; its totals (folded into
//! `Usage::at_shutdown`) plus this process's calls are the new totals. A process killed before
//! its shutdown leaves nothing, so its calls are not counted, as in the CLI.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};
use turnstile_journal::Timestamp;
use turnstile_journal::payload::{SessionShutdown, SessionUsageInfo};
use turnstile_replay::SessionState;
use turnstile_replay::state::{ModelUsage, TokenCounts};

use crate::model::Usage;

/// What this process's model calls add to the session's totals.
#[derive(Debug, Default)]
pub(super) struct ProcessUsage {
    by_model: BTreeMap<String, ModelUsage>,
    api_duration_ms: u64,
}

impl ProcessUsage {
    /// Counts one model call answered by `model`.
    pub(super) fn add_call(&mut self, model: &str, usage: &Usage) {
        let entry = self.by_model.entry(model.to_owned()).or_default();
        entry.requests += 1;
        let t = &mut entry.tokens;
        t.input += usage.input_tokens;
        t.output += usage.output_tokens;
        t.cache_read += usage.cache_read_tokens;
        t.cache_write += usage.cache_write_tokens;
        t.reasoning += usage.reasoning_tokens;
        self.api_duration_ms += usage.duration_ms;
    }

    /// The session's totals: the last shutdown's, plus this process's calls.
    fn totals(&self, state: &SessionState) -> BTreeMap<String, ModelUsage> {
        let mut all = state.usage.at_shutdown.clone();
        for (model, usage) in &self.by_model {
            let sum = all.entry(model.clone()).or_default();
            sum.requests += usage.requests;
            add(&mut sum.tokens, &usage.tokens);
        }
        all
    }
}

fn add(sum: &mut TokenCounts, more: &TokenCounts) {
    sum.input += more.input;
    sum.output += more.output;
    sum.cache_read += more.cache_read;
    sum.cache_write += more.cache_write;
    sum.reasoning += more.reasoning;
}

/// The `session.shutdown` payload: the folded state's facts, the session's usage totals, and
/// `window`, the context the next request would fill (the CLI's `currentTokens` and its parts).
pub(super) fn shutdown_payload(
    state: &SessionState,
    process: &ProcessUsage,
    model: &str,
    window: &SessionUsageInfo,
) -> SessionShutdown {
    let metrics: Map<String, Value> = process
        .totals(state)
        .into_iter()
        .map(|(model, u)| {
            let t = u.tokens;
            let entry = json!({
                "requests": {"count": u.requests, "cost": 0},
                "usage": {
                    "inputTokens": t.input,
                    "outputTokens": t.output,
                    "cacheReadTokens": t.cache_read,
                    "cacheWriteTokens": t.cache_write,
                    "reasoningTokens": t.reasoning,
                },
                "totalNanoAiu": 0,
            });
            (model, entry)
        })
        .collect();
    let start = state
        .session
        .start_time
        .as_deref()
        .and_then(|t| Timestamp::parse(t).ok())
        .map_or(0, |t| t.millis().max(0) as u64);
    SessionShutdown {
        shutdown_type: "routine".into(),
        // turnstile bills nothing: the CLI writes 0 for a model it does not bill.
        total_premium_requests: Some(Number::from(0)),
        total_nano_aiu: Some(Number::from(0)),
        total_api_duration_ms: state.usage.api_duration_ms_at_shutdown + process.api_duration_ms,
        session_start_time: start,
        events_file_size_bytes: Some(state.byte_size),
        model_metrics: metrics,
        current_model: Some(model.to_owned()),
        current_tokens: Some(window.current_tokens),
        system_tokens: window.system_tokens,
        conversation_tokens: window.conversation_tokens,
        tool_definitions_tokens: window.tool_definitions_tokens,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, ms: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            duration_ms: ms,
            ..Default::default()
        }
    }

    #[test]
    fn totals_add_this_process_to_the_last_shutdown() {
        let mut state = SessionState::default();
        state.usage.at_shutdown.insert(
            "m".into(),
            ModelUsage {
                requests: 3,
                tokens: TokenCounts {
                    input: 300,
                    output: 6,
                    ..Default::default()
                },
            },
        );
        state.usage.api_duration_ms_at_shutdown = 25;
        let mut process = ProcessUsage::default();
        process.add_call("m", &usage(100, 2, 5));
        process.add_call("other", &usage(50, 1, 7));
        let window = SessionUsageInfo {
            current_tokens: 900,
            system_tokens: Some(500),
            conversation_tokens: Some(100),
            tool_definitions_tokens: Some(300),
            ..Default::default()
        };
        let p = shutdown_payload(&state, &process, "m", &window);
        assert_eq!(p.total_api_duration_ms, 37);
        assert_eq!(p.model_metrics["m"]["requests"]["count"], 4);
        assert_eq!(p.model_metrics["m"]["usage"]["inputTokens"], 400);
        assert_eq!(p.model_metrics["other"]["requests"]["count"], 1);
        assert_eq!(p.current_tokens, Some(900));
        assert_eq!(p.tool_definitions_tokens, Some(300));
        // The field order of one model's metrics is the CLI's.
        let keys: Vec<&str> = p.model_metrics["m"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["requests", "usage", "totalNanoAiu"]);
    }

    #[test]
    fn a_first_process_counts_only_its_own_calls() {
        let mut process = ProcessUsage::default();
        process.add_call("m", &usage(10, 1, 2));
        let p = shutdown_payload(
            &SessionState::default(),
            &process,
            "m",
            &SessionUsageInfo::default(),
        );
        assert_eq!(p.model_metrics.len(), 1);
        assert_eq!(p.model_metrics["m"]["requests"]["count"], 1);
        assert_eq!(p.total_api_duration_ms, 2);
    }
}
