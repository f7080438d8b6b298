//! The session-wide figures `session.shutdown` reports, as the Copilot CLI keeps them: model
//! calls and tokens per model and the time spent in model calls, cumulative over every process
//! that ran the session. `assistant.usage` is ephemeral, so nothing on disk holds the calls of
//! earlier processes but the last `session.shutdown`; its totals (folded into
//! `Usage::at_shutdown`) plus this process's calls are the new totals. A process killed before
//! its shutdown leaves nothing, so its calls are not counted, as in the CLI. `codeChanges` is
//! kept the same way: the lines and files the main agent's `create` and `edit` calls changed.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};
use turnstile_journal::Timestamp;
use turnstile_journal::payload::{CodeChanges, SessionShutdown, SessionUsageInfo};
use turnstile_replay::SessionState;
use turnstile_replay::state::{CodeTotals, ModelUsage, TokenCounts};

use turnstile_providers::Usage;

/// What this process's model calls add to the session's totals.
#[derive(Debug, Default)]
pub(super) struct ProcessUsage {
    by_model: BTreeMap<String, ModelUsage>,
    api_duration_ms: u64,
    code: CodeTotals,
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

    /// Counts what a successful `create` or `edit` call changed (`args` as the model sent
    /// them; `cwd` resolves a relative path). Lines are counted as the texts' lines: a
    /// created file's, and an edit's replaced and replacing text.
    pub(super) fn add_file_change(&mut self, tool: &str, args: &Value, cwd: &std::path::Path) {
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
        let (added, removed) = match tool {
            "create" => (lines(text("file_text")), 0),
            "edit" => (lines(text("new_str")), lines(text("old_str"))),
            _ => return,
        };
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return;
        };
        let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let path = turnstile_tools::paths::normalize(&cwd.join(path));
        self.code.add(&path.display().to_string(), added, removed);
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

/// Lines of a text, a last line without a newline included.
fn lines(text: &str) -> u64 {
    text.lines().count() as u64
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
    let mut code = state.usage.code_changes_at_shutdown.clone();
    for path in &process.code.files_modified {
        code.add(path, 0, 0);
    }
    code.lines_added += process.code.lines_added;
    code.lines_removed += process.code.lines_removed;
    SessionShutdown {
        shutdown_type: "routine".into(),
        code_changes: CodeChanges {
            lines_added: code.lines_added,
            lines_removed: code.lines_removed,
            files_modified: code.files_modified,
        },
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
    fn file_changes_add_to_the_last_shutdown() {
        let mut state = SessionState::default();
        state.usage.code_changes_at_shutdown.add("/p/a.txt", 2, 0);
        let mut process = ProcessUsage::default();
        let cwd = std::path::Path::new("/p");
        process.add_file_change(
            "create",
            &serde_json::json!({"path": "b.txt", "file_text": "x\ny\nz"}),
            cwd,
        );
        process.add_file_change(
            "edit",
            &serde_json::json!({"path": "/p/a.txt", "old_str": "one", "new_str": "two\nlines\n"}),
            cwd,
        );
        process.add_file_change("view", &serde_json::json!({"path": "c.txt"}), cwd);
        let p = shutdown_payload(&state, &process, "m", &SessionUsageInfo::default());
        assert_eq!(p.code_changes.lines_added, 2 + 3 + 2);
        assert_eq!(p.code_changes.lines_removed, 1);
        assert_eq!(p.code_changes.files_modified, ["/p/a.txt", "/p/b.txt"]);
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
