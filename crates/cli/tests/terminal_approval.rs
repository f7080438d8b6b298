//! Approval at a terminal through the real binary on a pseudo-terminal: a bash call no rule
//! allows is asked about on stderr and answered with a line on stdin. Once runs it, deny does
//! not, for the session approves the second identical call unasked; the journal records the
//! answers as it records an SDK client's. `resume` asks the same way.

use crate::common::terminal::AtTerminal;

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

/// Runs `turnstile run go` with stdin and stderr on a terminal, typing `answers` one per
/// prompt; returns the screen, the journal's events and the working directory.
fn run_at_terminal(script: Script, answers: &[&str]) -> (String, Vec<Value>, tempfile::TempDir) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut command = Command::cargo_bin("turnstile").unwrap();
    command
        .arg("--state-dir")
        .arg(state.path())
        .args(["run", "go", "--model", "test-model", "--base-url"])
        .arg(server.url())
        .arg("--cwd")
        .arg(work.path())
        .env("COPILOT_HOME", home.path())
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY");
    let mut terminal = AtTerminal::spawn(command);
    for (i, answer) in answers.iter().enumerate() {
        terminal.wait_for("\n> ", i + 1);
        terminal.type_line(answer);
    }
    let (status, screen) = terminal.finish();
    assert!(status.success(), "{screen}");
    (screen, journal(state.path()), work)
}

fn journal(state: &Path) -> Vec<Value> {
    let dir = std::fs::read_dir(state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a session directory");
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

fn touch(file: &str) -> Value {
    json!({"command": format!("touch {file}"), "description": "make a file"})
}

#[test]
fn once_runs_the_call() {
    let script = Script::new()
        .tool_call("bash", touch("once.txt"))
        .text("done");
    let (screen, events, work) = run_at_terminal(script, &["1"]);
    assert!(screen.contains("run `touch once.txt`"), "{screen}");
    // The question follows the call's line of the live view, not the other way round.
    let call = screen.find("→ bash").expect(&screen);
    let asked = screen.find("Allow the agent to").expect(&screen);
    assert!(call < asked, "{screen}");
    assert!(work.path().join("once.txt").exists(), "{screen}");
    let completed = of_type(&events, "permission.completed");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["data"]["result"], json!({"kind": "approved"}));
    assert_eq!(completed[0]["data"]["decisionSource"], "human_response");
    assert_eq!(of_type(&events, "permission.requested").len(), 1);
}

#[test]
fn deny_does_not_run_it() {
    let script = Script::new()
        .tool_call("bash", touch("denied.txt"))
        .text("done");
    // A line that names no choice asks again; Enter alone approves nothing.
    let (screen, events, work) = run_at_terminal(script, &["", "3 use ls instead"]);
    assert!(!work.path().join("denied.txt").exists(), "{screen}");
    let completed = of_type(&events, "permission.completed");
    assert_eq!(
        completed[0]["data"]["result"],
        json!({"kind": "denied-interactively-by-user", "feedback": "use ls instead"})
    );
    let failed = of_type(&events, "tool.execution_complete");
    assert_eq!(failed[0]["data"]["success"], false);
    assert!(
        failed[0]["data"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("use ls instead")),
        "the model reads the feedback: {failed:?}"
    );
}

#[test]
fn for_the_session_approves_the_next_identical_call_unasked() {
    let script = Script::new()
        .tool_call("bash", touch("session.txt"))
        .tool_call("bash", touch("session.txt"))
        .text("done");
    let (screen, events, work) = run_at_terminal(script, &["2"]);
    assert!(
        screen.contains("2. Yes, and allow `touch` for the rest of this session"),
        "{screen}"
    );
    assert_eq!(screen.matches("Allow the agent to").count(), 1, "{screen}");
    assert!(work.path().join("session.txt").exists());
    // One request, answered for the session; the second call is settled by the session rule
    // and, as in the Copilot CLI, records no request.
    assert_eq!(of_type(&events, "permission.requested").len(), 1);
    let completed = of_type(&events, "permission.completed");
    assert_eq!(
        completed[0]["data"]["result"],
        json!({"kind": "approved-for-session",
            "approval": {"kind": "commands", "commandIdentifiers": ["touch"]}})
    );
    let runs = of_type(&events, "tool.execution_complete");
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter().all(|r| r["data"]["success"] == true),
        "{runs:?}"
    );
}

#[test]
fn resume_asks_too() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::new()
        .text("hello")
        .tool_call("bash", touch("resumed.txt"))
        .text("done");
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let id = "6c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f";
    let turnstile = || {
        let mut command = Command::cargo_bin("turnstile").unwrap();
        command
            .arg("--state-dir")
            .arg(state.path())
            .env("COPILOT_HOME", home.path())
            .env_remove("TURNSTILE_API_KEY")
            .env_remove("OPENAI_API_KEY");
        command
    };
    let out = turnstile()
        .args([
            "run",
            "hi",
            "--model",
            "test-model",
            "--session-id",
            id,
            "--base-url",
        ])
        .arg(server.url())
        .arg("--cwd")
        .arg(work.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The session remembers its server and model; only the directory is named again.
    let mut command = turnstile();
    command
        .args(["resume", id, "make it"])
        .arg("--cwd")
        .arg(work.path());
    let mut terminal = AtTerminal::spawn(command);
    terminal.wait_for("\n> ", 1);
    terminal.type_line("y");
    let (status, screen) = terminal.finish();
    assert!(status.success(), "{screen}");
    assert!(screen.contains("run `touch resumed.txt`"), "{screen}");
    assert!(work.path().join("resumed.txt").exists(), "{screen}");
    let completed = of_type(&journal(state.path()), "permission.completed")
        .into_iter()
        .map(|e| e["data"]["result"].clone())
        .collect::<Vec<_>>();
    assert_eq!(completed, [json!({"kind": "approved"})]);
}
