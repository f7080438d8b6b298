//! `turnstile run` against a model that never stops answering: the call ends at
//! `--max-model-answer-bytes` with `session.error` `response_too_large`, the process exits 1,
//! and no journal line is larger than the limit; an answer with more calls than
//! `--max-tool-calls` ends the same way, and a stream that stops making progress ends at
//! `--model-idle-timeout` with `session.error` `timeout`. The real binary on real files.

use assert_cmd::Command;
use serde_json::Value;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

const LIMIT: usize = 200_000;

#[test]
fn an_endless_answer_ends_the_run_at_the_limit_and_the_journal_stays_small() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(ScriptedServer::start(Script::new().respond(
            ScriptedResponse::text("all work and no play ".repeat(100)).endless(),
        )))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(state.path())
        .args(["run", "--base-url", &server.url(), "--model", "m", "--cwd"])
        .arg(work.path())
        .args(["--max-model-answer-bytes", &LIMIT.to_string(), "hello"])
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("response_too_large"), "{stderr}");
    assert!(stderr.contains("max_answer_bytes"), "{stderr}");

    // The state root holds session directories (and the session index file).
    let session = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let journal = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    let mut errors = Vec::new();
    for line in journal.lines() {
        assert!(
            line.len() <= LIMIT,
            "a journal line of {} bytes",
            line.len()
        );
        let event: Value = serde_json::from_str(line).unwrap();
        if event["type"] == "session.error" {
            errors.push(event["data"]["errorType"].clone());
        }
    }
    assert_eq!(errors, ["response_too_large"]);
    // Nothing was sent again after the cut.
    assert_eq!(server.requests().len(), 1);
}

/// `turnstile run` against `response` with `flags`: its exit code, stderr and the
/// `errorType`s of the journal's `session.error`s.
fn run_against(response: ScriptedResponse, flags: &[&str]) -> (Option<i32>, String, Vec<Value>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(ScriptedServer::start(Script::new().respond(response)))
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
    let session = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let journal = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    let errors = journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["type"] == "session.error")
        .map(|e| e["data"]["errorType"].clone())
        .collect();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        errors,
    )
}

#[test]
fn an_answer_past_max_tool_calls_is_a_session_error() {
    let args = serde_json::json!({"command": "true"});
    let answer = ScriptedResponse::tool_call("bash", args.clone())
        .and_tool_call("bash", args.clone())
        .and_tool_call("bash", args);
    let (code, stderr, errors) = run_against(answer, &["--max-tool-calls", "2"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--max-tool-calls"), "{stderr}");
    assert_eq!(errors, ["response_too_large"]);
}

#[test]
fn a_stream_without_progress_ends_at_the_idle_timeout() {
    // One word, then the connection stays open with nothing more.
    let answer = ScriptedResponse::text("a b").drop_after_chunks(1).hang();
    let (code, stderr, errors) = run_against(answer, &["--model-idle-timeout", "1"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--model-idle-timeout"), "{stderr}");
    assert_eq!(errors, ["timeout"]);
}
