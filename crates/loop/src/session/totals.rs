//! The session-wide figures `session.shutdown` reports, as the Copilot CLI keeps them: model
//! calls and tokens per model and per agent (`modelMetrics`, `agentMetrics`) and the time spent
//! in model calls, cumulative over every process that ran the session. Every LLM call counts as
//! a request, the main agent's, the sub-agents' and the compactions' summary calls, answered or
//! not, with usage from the server or without (tokens are added when it sends them): the
//! requests are the calls `turnstile audit` counts in the journal (`Counters::llm_calls`).
//! `assistant.usage` is ephemeral, so nothing on disk holds the tokens of earlier processes but
//! the last `session.shutdown`; its totals (folded into `Usage::at_shutdown`) plus this
//! process's calls are the new totals. A process killed before its shutdown leaves its calls in
//! the journal only: they are counted as requests (under the main agent and the model now
//! selected), their tokens are lost as in the CLI. `codeChanges` is kept the same way: the
//! lines and files the main agent's `create` and `edit` calls changed.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};
use turnstile_journal::Timestamp;
use turnstile_journal::payload::{CodeChanges, SessionShutdown, SessionUsageInfo};
use turnstile_replay::SessionState;
use turnstile_replay::state::{AgentUsage, CodeTotals, ModelUsage, TokenCounts};

use turnstile_providers::Usage;

/// The `agentMetrics` key of the main agent (its turns and the compactions' summary calls).
pub(super) const MAIN_AGENT: &str = "main";

/// Who made a call: a sub-agent (its id, type and label as its `subagent.started` gave them);
/// `None` where one is asked for: the main agent.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallAgent<'a> {
    pub(super) id: &'a str,
    pub(super) name: &'a str,
    pub(super) display_name: &'a str,
}

/// What this process's model calls add to the session's totals.
#[derive(Debug, Default)]
pub(super) struct ProcessUsage {
    by_model: BTreeMap<String, ModelUsage>,
    by_agent: BTreeMap<String, AgentUsage>,
    api_duration_ms: u64,
    /// LLM calls made by this process.
    calls: u64,
    code: CodeTotals,
    /// Input and output tokens of the main agent's last call that reported usage.
    last_main_call: (u64, u64),
}

impl ProcessUsage {
    /// Counts one LLM call of `agent` (`None`: the main agent) made with `model`: a request
    /// whether or not it was answered, and its tokens and duration when the server sent usage.
    pub(super) fn add_call(
        &mut self,
        agent: Option<CallAgent<'_>>,
        model: &str,
        usage: Option<&Usage>,
    ) {
        self.calls += 1;
        let key = agent.map_or(MAIN_AGENT, |a| a.id);
        let entry = self.by_agent.entry(key.to_owned()).or_default();
        if let Some(a) = agent {
            entry.agent_name = Some(a.name.to_owned());
            entry.agent_display_name = Some(a.display_name.to_owned());
        }
        for usage_of in [
            self.by_model.entry(model.to_owned()).or_default(),
            entry.models.entry(model.to_owned()).or_default(),
        ] {
            usage_of.requests += 1;
            if let Some(usage) = usage {
                let t = &mut usage_of.tokens;
                t.input += usage.input_tokens;
                t.output += usage.output_tokens;
                t.cache_read += usage.cache_read_tokens;
                t.cache_write += usage.cache_write_tokens;
                t.reasoning += usage.reasoning_tokens;
            }
        }
        if let Some(usage) = usage {
            entry.api_duration_ms += usage.duration_ms;
            self.api_duration_ms += usage.duration_ms;
            if agent.is_none() {
                self.last_main_call = (usage.input_tokens, usage.output_tokens);
            }
        }
    }

    /// Input and output tokens of the main agent's last call in this process that reported
    /// usage (zeros before one).
    pub(super) fn last_main_call(&self) -> (u64, u64) {
        self.last_main_call
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

    /// The session's totals by model and by agent: the last shutdown's, plus this process's
    /// calls, plus the calls a killed process left in the journal after it (`model`: the
    /// model they are counted under).
    fn totals(
        &self,
        state: &SessionState,
        model: &str,
    ) -> (BTreeMap<String, ModelUsage>, BTreeMap<String, AgentUsage>) {
        let mut models = state.usage.at_shutdown.clone();
        for (model, usage) in &self.by_model {
            add_usage(models.entry(model.clone()).or_default(), usage);
        }
        let mut agents = state.usage.agents_at_shutdown.clone();
        for (agent, usage) in &self.by_agent {
            let sum = agents.entry(agent.clone()).or_default();
            sum.agent_name = sum.agent_name.take().or_else(|| usage.agent_name.clone());
            sum.agent_display_name = sum
                .agent_display_name
                .take()
                .or_else(|| usage.agent_display_name.clone());
            sum.api_duration_ms += usage.api_duration_ms;
            for (model, usage) in &usage.models {
                add_usage(sum.models.entry(model.clone()).or_default(), usage);
            }
        }
        let unreported = state
            .counts
            .llm_calls()
            .saturating_sub(state.usage.llm_calls_at_shutdown)
            .saturating_sub(self.calls);
        if unreported > 0 {
            models.entry(model.to_owned()).or_default().requests += unreported;
            let main = agents.entry(MAIN_AGENT.to_owned()).or_default();
            main.models.entry(model.to_owned()).or_default().requests += unreported;
        }
        (models, agents)
    }
}

fn add_usage(sum: &mut ModelUsage, more: &ModelUsage) {
    sum.requests += more.requests;
    add(&mut sum.tokens, &more.tokens);
}

/// One model's entry of `modelMetrics`, in the CLI's field order.
fn model_entry(u: &ModelUsage) -> Value {
    let t = u.tokens;
    json!({
        "requests": {"count": u.requests, "cost": 0},
        "usage": {
            "inputTokens": t.input,
            "outputTokens": t.output,
            "cacheReadTokens": t.cache_read,
            "cacheWriteTokens": t.cache_write,
            "reasoningTokens": t.reasoning,
        },
        "totalNanoAiu": 0,
    })
}

/// One agent's entry of `agentMetrics`, in the CLI's field order.
fn agent_entry(a: &AgentUsage) -> Value {
    let mut entry = Map::new();
    if let Some(name) = &a.agent_name {
        entry.insert("agentName".into(), json!(name));
    }
    if let Some(label) = &a.agent_display_name {
        entry.insert("agentDisplayName".into(), json!(label));
    }
    entry.insert("totalApiDurationMs".into(), json!(a.api_duration_ms));
    entry.insert("totalNanoAiu".into(), json!(0));
    let models: Map<String, Value> = a
        .models
        .iter()
        .map(|(m, u)| (m.clone(), model_entry(u)))
        .collect();
    entry.insert("modelMetrics".into(), Value::Object(models));
    Value::Object(entry)
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
    let (models, agents) = process.totals(state, model);
    let metrics: Map<String, Value> = models
        .iter()
        .map(|(model, u)| (model.clone(), model_entry(u)))
        .collect();
    // The main agent first, then the sub-agents by id.
    let mut agent_metrics = Map::new();
    let main = agents.iter().filter(|(agent, _)| *agent == MAIN_AGENT);
    for (agent, a) in main.chain(agents.iter().filter(|(agent, _)| *agent != MAIN_AGENT)) {
        agent_metrics.insert(agent.clone(), agent_entry(a));
    }
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
        agent_metrics: (!agent_metrics.is_empty()).then_some(agent_metrics),
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
        process.add_call(None, "m", Some(&usage(100, 2, 5)));
        process.add_call(None, "other", Some(&usage(50, 1, 7)));
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
        process.add_call(None, "m", Some(&usage(10, 1, 2)));
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

    #[test]
    fn every_call_is_a_request_and_each_agent_has_its_own() {
        let mut state = SessionState::default();
        // The journal holds 3 calls of an earlier shutdown and 2 of a killed process since,
        // then this process's 3.
        state.counts.turns = 8;
        state.usage.llm_calls_at_shutdown = 3;
        state.usage.at_shutdown.insert(
            "m".into(),
            ModelUsage {
                requests: 3,
                ..Default::default()
            },
        );
        let mut process = ProcessUsage::default();
        // No usage from the server: still a request.
        process.add_call(None, "m", None);
        let explore = CallAgent {
            id: "call_1",
            name: "explore",
            display_name: "Explore Agent",
        };
        process.add_call(Some(explore), "m", Some(&usage(40, 2, 3)));
        process.add_call(Some(explore), "m", None);
        let p = shutdown_payload(&state, &process, "m", &SessionUsageInfo::default());
        assert_eq!(p.model_metrics["m"]["requests"]["count"], 3 + 2 + 3);
        assert_eq!(p.model_metrics["m"]["usage"]["inputTokens"], 40);
        let agents = p.agent_metrics.expect("agentMetrics");
        let keys: Vec<&str> = agents.keys().map(String::as_str).collect();
        assert_eq!(keys, ["main", "call_1"]);
        // The killed process's 2 calls count under the main agent.
        assert_eq!(agents["main"]["modelMetrics"]["m"]["requests"]["count"], 3);
        assert_eq!(agents["call_1"]["agentName"], "explore");
        assert_eq!(agents["call_1"]["agentDisplayName"], "Explore Agent");
        assert_eq!(agents["call_1"]["totalApiDurationMs"], 3);
        assert_eq!(
            agents["call_1"]["modelMetrics"]["m"]["requests"]["count"],
            2
        );
    }

    #[test]
    fn the_last_call_is_the_main_agents_last_with_usage() {
        let mut process = ProcessUsage::default();
        assert_eq!(process.last_main_call(), (0, 0));
        process.add_call(None, "m", Some(&usage(100, 2, 5)));
        // Neither a sub-agent's call nor a call without usage replaces it.
        let explore = CallAgent {
            id: "call_1",
            name: "explore",
            display_name: "Explore Agent",
        };
        process.add_call(Some(explore), "m", Some(&usage(40, 9, 3)));
        process.add_call(None, "m", None);
        assert_eq!(process.last_main_call(), (100, 2));
        process.add_call(None, "other", Some(&usage(120, 7, 1)));
        assert_eq!(process.last_main_call(), (120, 7));
    }
}
