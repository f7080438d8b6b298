//! Long-session journals of the real runtime through the real binary: a crash and resume, a
//! background compaction; `audit` counts them cleanly, `history` rebuilds what was sent.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime")
        .join(name)
}

fn turnstile() -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.env_remove("COPILOT_HOME");
    cmd
}

/// Runs `turnstile ARGS JOURNAL`, which must succeed, and parses what it prints as JSON.
fn json_output(args: &[&str], journal: &Path) -> Value {
    let out = turnstile().args(args).arg(journal).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn audit_is_clean_on_a_killed_and_resumed_runtime_journal() {
    let journal = fixture("k1-killed-resumed.events.jsonl");
    turnstile()
        .arg("audit")
        .arg(&journal)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("abandoned at resume")
                .and(predicate::str::contains("1 turns, 1 tool calls")),
        );
    let report = json_output(&["audit", "--json"], &journal);
    assert_eq!(report["violationCount"], 0);
    assert_eq!(report["turns"], 2);
    assert_eq!(report["abandoned"][1]["id"], "call_1");
}

#[test]
fn audit_counts_the_compaction_call() {
    let report = json_output(&["audit", "--json"], &fixture("p1-compacted.events.jsonl"));
    assert_eq!(report["turns"], 10);
    assert_eq!(report["compactionCalls"], 1);
}

/// Role, text and tool call ids of a message as `history --json` prints it.
fn shape_of_printed(m: &Value) -> (String, String, Vec<String>) {
    let role = m["role"].as_str().unwrap().to_owned();
    let ids = m["toolRequests"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|r| r["toolCallId"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let text = m["content"].as_str().unwrap_or("").to_owned();
    let role = if role == "summary" {
        "user".to_owned()
    } else {
        role
    };
    (role, text, ids)
}

/// The same of a recorded request's message.
fn shape_of_sent(m: &Value) -> (String, String, Vec<String>) {
    let ids = m["tool_calls"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (
        m["role"].as_str().unwrap().to_owned(),
        m["content"].as_str().unwrap_or("").to_owned(),
        ids,
    )
}

#[test]
fn history_prints_what_the_runtime_sent_at_a_call() {
    let journal = fixture("p1-compacted.events.jsonl");
    let requests: Value =
        serde_json::from_slice(&std::fs::read(fixture("p1-compacted.requests.json")).unwrap())
            .unwrap();
    for (at, request) in [("9", &requests[0]), ("10", &requests[1])] {
        let printed = json_output(&["history", "--json", "--at", at], &journal);
        let printed = printed.as_array().expect("a list of messages");
        let sent = request["messages"].as_array().unwrap();
        assert_eq!(printed.len(), sent.len(), "call {at}");
        for (p, s) in printed.iter().zip(sent) {
            let (role, text, ids) = shape_of_printed(p);
            let (sent_role, sent_text, sent_ids) = shape_of_sent(s);
            assert_eq!((&role, &ids), (&sent_role, &sent_ids), "call {at}");
            if p["role"] == "summary" {
                // The summary's own text is inside what was sent, in the runtime's words.
                assert!(sent_text.contains(&text), "call {at}: {sent_text}");
            } else {
                assert_eq!(text, sent_text, "call {at}");
            }
        }
    }
    turnstile()
        .args(["history", "--at", "10"])
        .arg(&journal)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("LLM call 10 of 10").and(predicate::str::contains(
                "Some of the conversation history has been summarized",
            )),
        );
    turnstile()
        .args(["history", "--at", "11"])
        .arg(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "there is no LLM call 11: the journal records 10",
        ));
}
