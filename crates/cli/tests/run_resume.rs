//! `turnstile run` and `turnstile resume` as a user runs them, against a scripted
//! OpenAI-compatible server on 127.0.0.1: streaming output, exit codes, SIGINT, kill -9 in the
//! middle of a tool and the resume that follows, two resumes of one session at once.

use crate::common;

use std::process::Stdio;

use common::{Env, audit_clean, wait_for_event};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

#[test]
fn run_streams_the_answer_and_records_a_clean_journal() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(
                ScriptedResponse::tool_call("glob", json!({"pattern": "*.txt"}))
                    .and_tool_call("view", json!({"path": "alpha.txt"})),
            )
            .text("Found alpha.txt."),
    );
    let out = env
        .cmd(&server, &["run", "--allow-all-tools", "what is here?"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Found alpha.txt."
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("→ glob") && stderr.contains("resume with: turnstile"),
        "{stderr}"
    );
    let (_, events) = env.only_session();
    let report = audit_clean(&events);
    assert_eq!(report.turns, 2);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn json_mode_prints_every_event_with_idle_last_and_prompt_from_stdin() {
    let env = Env::new();
    let server = env.server(Script::new().text("hi there"));
    let mut cmd = env.cmd(&server, &["run", "--json"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"say hi\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session.start"));
    let idle = types.iter().rposition(|t| *t == "session.idle").unwrap();
    // After the idle, the close: the stream ends with its shutdown, as the runtime's does
    // (nothing ephemeral after it).
    assert_eq!(types[idle + 1..], ["session.shutdown"], "{types:?}");
    for e in &events {
        let ephemeral = e.get("ephemeral") == Some(&Value::Bool(true));
        assert_eq!(
            ephemeral,
            turnstile_journal::EventType::new(e["type"].as_str().unwrap()).is_ephemeral(),
            "{e}"
        );
    }
    let user = events.iter().find(|e| e["type"] == "user.message").unwrap();
    assert_eq!(user["data"]["content"], "say hi");
}

#[test]
fn model_error_exits_1_with_the_servers_message() {
    let env = Env::new();
    let server = env.server(Script::new().respond(ScriptedResponse::error_message(
        400,
        "unknown model test-model",
    )));
    let out = env.cmd(&server, &["run", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HTTP 400") && stderr.contains("unknown model test-model"),
        "{stderr}"
    );
    let (_, events) = env.only_session();
    let report = audit_clean(&events);
    assert_eq!(report.errors, 1);
}

#[test]
fn sigint_aborts_the_running_tool_and_exits_130() {
    let env = Env::new();
    let server = env.server(Script::new().tool_call(
        "bash",
        json!({"command": "sleep 60", "description": "wait"}),
    ));
    let mut child = env
        .cmd(&server, &["run", "--json", "--allow-all-tools", "wait"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_event(&mut child, "tool.execution_start");
    // SAFETY: kill(2) takes plain integers; the pid is our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let (_, events) = env.only_session();
    let report = audit_clean(&events);
    assert_eq!(report.by_type.get("abort"), Some(&1));
    assert_eq!(report.tool_calls["bash"].failed, 1);
}

#[test]
fn kill_9_during_bash_then_resume_sends_a_result_for_the_interrupted_call() {
    let env = Env::new();
    let first = env.server(Script::new().respond(ScriptedResponse::tool_call(
        "bash",
        json!({"command": "sleep 60", "description": "long"}),
    )));
    let mut child = env
        .cmd(
            &first,
            &[
                "run",
                "--json",
                "--allow-all-tools",
                "--durability",
                "event",
                "do the long thing",
            ],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = wait_for_event(&mut child, "tool.execution_start");
    let call_id = seen.last().unwrap()["data"]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (id, events) = env.only_session();

    let second = env.server(Script::new().text("Resumed fine."));
    let out = env
        .cmd(&second, &["resume", &id[..8], "carry on"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 interrupted tool call(s) marked failed")
    );
    let request = &second.requests()[0];
    let messages = request["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id.as_str())
        .expect("a tool result for the interrupted call");
    assert!(
        result["content"].as_str().unwrap().contains("interrupted"),
        "{result}"
    );
    // The prompt as the model reads it: after the time it was sent.
    assert!(messages.iter().any(|m| {
        m["role"] == "user"
            && m["content"].as_str().is_some_and(|c| {
                c.starts_with("<current_datetime>") && c.contains("</current_datetime>\n\ncarry on")
            })
    }));
    let report = audit_clean(&events);
    assert_eq!(report.resumes, 1);
    assert_eq!(
        report.turns, 2,
        "the killed turn is counted once, the new one once"
    );
}

#[test]
fn two_resumes_of_one_session_at_once() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .text("first")
            .respond(ScriptedResponse::text("slow").hang()),
    );
    let out = env.cmd(&server, &["run", "one"]).output().unwrap();
    assert!(out.status.success());
    let (id, _) = env.only_session();
    let mut holder = env
        .cmd(&server, &["resume", &id, "--json", "two"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_event(&mut holder, "assistant.turn_start");
    let out = env
        .cmd(&server, &["resume", &id, "three"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in use by another writer")
            && stderr.contains(&format!("pid {}", holder.id())),
        "{stderr}"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
}
