//! A journal the real Copilot runtime wrote with sub-agents (`fixtures/copilot-runtime/
//! s1-subagents.events.jsonl`: an explore agent, a general-purpose agent, an unknown agent
//! type): the fold gives the main agent's conversation exactly as the runtime last sent it,
//! with none of the sub-agents' messages, and the audit finds nothing wrong.

use std::path::PathBuf;

use serde_json::Value;
use turnstile_replay::{Message, audit_file, fold_file};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime")
        .join(name)
}

#[test]
fn the_main_conversation_folds_without_the_sub_agents() {
    let folded = fold_file(&fixture("s1-subagents.events.jsonl")).unwrap();
    let requests: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(fixture("s1-subagents.requests.json")).unwrap(),
    )
    .unwrap();
    // The main agent's last request: everything before its final answer.
    let last = requests.last().unwrap()["messages"].as_array().unwrap();
    let conversation = &folded.state.conversation;
    assert_eq!(conversation.len(), last.len() + 1, "{conversation:#?}");
    for (message, sent) in conversation.iter().zip(last) {
        match message {
            Message::System { .. } => assert_eq!(sent["role"], "system"),
            Message::User { content, .. } => {
                assert_eq!(sent["role"], "user");
                assert_eq!(sent["content"], content.as_str());
            }
            Message::Assistant { tool_requests, .. } => {
                assert_eq!(sent["role"], "assistant");
                let ids: Vec<&str> = tool_requests
                    .iter()
                    .map(|t| t.tool_call_id.as_str())
                    .collect();
                let sent_ids: Vec<&str> = sent["tool_calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["id"].as_str().unwrap())
                    .collect();
                assert_eq!(ids, sent_ids);
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => {
                assert_eq!(sent["role"], "tool");
                assert_eq!(sent["tool_call_id"], tool_call_id.as_str());
                assert_eq!(sent["content"], content.as_str());
            }
            other => panic!("unexpected message {other:?}"),
        }
    }
    assert!(matches!(
        conversation.last(),
        Some(Message::Assistant { content, .. }) if content.starts_with("The sub-agents say")
    ));
}

#[test]
fn the_recorded_sub_agents_audit_clean() {
    let report = audit_file(&fixture("s1-subagents.events.jsonl")).unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    // The runtime records only the main agent's turns (its sub-agents' are live only): each
    // sub-agent call is counted by its message, so the audit counts the 8 requests it sent.
    assert_eq!(report.turns, 4);
    assert!(report.agent_turns.is_empty());
    let answers: Vec<(&str, u64)> = report
        .agent_answer_calls
        .iter()
        .map(|(a, n)| (a.as_str(), *n))
        .collect();
    assert_eq!(answers, [("call_1", 2), ("call_3", 2)]);
    assert_eq!(report.llm_calls, 8);
    let kinds: Vec<(&str, u64)> = report
        .llm_call_kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.count))
        .collect();
    assert_eq!(kinds, [("main-turns", 4), ("sub-agent-answers", 4)]);
    let table = report.render_table();
    assert!(table.contains("LLM calls                  8"), "{table}");
    assert!(table.contains("sub-agent-answers"), "{table}");
    assert_eq!(report.by_type.get("subagent.started"), Some(&2));
    assert_eq!(report.by_type.get("subagent.completed"), Some(&2));
}

/// A sub-agent's `session.model_change` (with its `agentId`: the runtime writes one when a
/// task names a model) changes the sub-agent's model, not the session's: a resume goes on with
/// the main agent's.
#[test]
fn a_sub_agents_model_change_leaves_the_sessions_model() {
    let text = std::fs::read_to_string(fixture("s1-subagents.events.jsonl")).unwrap();
    let session_model = fold_file(&fixture("s1-subagents.events.jsonl"))
        .unwrap()
        .state
        .session
        .model
        .clone();
    assert!(session_model.is_some());
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut change: Value = serde_json::from_str(&lines[1]).unwrap();
    change["type"] = "session.model_change".into();
    change["id"] = "5e55a0e1-0000-4000-8000-00000000abcd".into();
    change["data"] = serde_json::json!({"newModel": "child-model"});
    change["agentId"] = "call_child".into();
    lines.insert(2, change.to_string());
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("events.jsonl");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let folded = fold_file(&journal).unwrap();
    assert_eq!(folded.state.session.model, session_model);
}
