//! `turnstile run` against a model that never stops answering: the call ends at
//! `--max-model-answer-bytes` with `session.error` `response_too_large`, the process exits 1,
//! and no journal line is larger than the limit; an answer with more calls than
//! `--max-tool-calls` ends the same way, and a stream that stops making progress ends at
//! `--model-idle-timeout` with `session.error` `timeout`. The real binary on real files.

use assert_cmd::Command;
use serde_json::Value;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

const LIMIT: usize = 200_000;

/// What a `turnstile run` against one scripted answer left.
struct Ran {
    code: Option<i32>,
    stderr: String,
    /// The session's `events.jsonl`.
    journal: String,
    /// Requests the server received.
    requests: usize,
}

impl Ran {
    /// The `errorType`s of the journal's `session.error`s.
    fn errors(&self) -> Vec<Value> {
        self.journal
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|e| e["type"] == "session.error")
            .map(|e| e["data"]["errorType"].clone())
            .collect()
    }
}

/// `turnstile run ... FLAGS hello` against a server answering `responses` in turn.
fn run_against(responses: Vec<ScriptedResponse>, flags: &[&str]) -> Ran {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(ScriptedServer::start(
            responses.into_iter().fold(Script::new(), Script::respond),
        ))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(state.path())
        .args(["run", "--base-url", &server.url(), "--model", "m", "--cwd"])
        .arg(work.path())
        .args(flags)
        .arg("hello")
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    // The state root holds session directories (and the session index file).
    let session = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    Ran {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        journal: std::fs::read_to_string(session.join("events.jsonl")).unwrap(),
        requests: server.requests().len(),
    }
}

#[test]
fn an_endless_answer_ends_the_run_at_the_limit_and_the_journal_stays_small() {
    let answer = ScriptedResponse::text("all work and no play ".repeat(100)).endless();
    let limit = LIMIT.to_string();
    let ran = run_against(vec![answer], &["--max-model-answer-bytes", &limit]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("response_too_large"), "{}", ran.stderr);
    assert!(ran.stderr.contains("max_answer_bytes"), "{}", ran.stderr);
    for line in ran.journal.lines() {
        assert!(
            line.len() <= LIMIT,
            "a journal line of {} bytes",
            line.len()
        );
    }
    assert_eq!(ran.errors(), ["response_too_large"]);
    // Nothing was sent again after the cut.
    assert_eq!(ran.requests, 1);
}

#[test]
fn an_answer_past_max_tool_calls_is_a_session_error() {
    let args = serde_json::json!({"command": "true"});
    let answer = ScriptedResponse::tool_call("bash", args.clone())
        .and_tool_call("bash", args.clone())
        .and_tool_call("bash", args);
    let ran = run_against(vec![answer], &["--max-tool-calls", "2"]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("--max-tool-calls"), "{}", ran.stderr);
    assert_eq!(ran.errors(), ["response_too_large"]);
}

#[test]
fn a_stream_without_progress_ends_at_the_idle_timeout() {
    // The first chunk (the role, no text), then the connection stays open with nothing
    // more: no progress, so the call is sent again like a failure before output (three
    // retries by default), then ends with `timeout`.
    let answer = || ScriptedResponse::text("a b").drop_after_chunks(1).hang();
    let ran = run_against(
        (0..4).map(|_| answer()).collect(),
        &["--model-idle-timeout", "1"],
    );
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--model-idle-timeout"),
        "{}",
        ran.stderr
    );
    assert_eq!(ran.errors(), ["timeout"]);
    assert_eq!(ran.requests, 4);
}
