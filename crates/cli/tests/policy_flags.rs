//! The permission flags as a user meets them: a pattern naming nothing is refused at start-up,
//! read tools can be denied, and a denial says which `--allow-tool` would allow the call.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

fn run(script: Script, flags: &[&str]) -> (std::process::Output, Vec<Value>, tempfile::TempDir) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("secret.txt"), "s3cret\n").unwrap();
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(state.path())
        .args(["run", "go"])
        .args(flags)
        .arg("--base-url")
        .arg(server.url())
        .arg("--cwd")
        .arg(work.path())
        .args(["--model", "test-model"])
        .env("COPILOT_HOME", home.path())
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let mut events = Vec::new();
    // The state root holds session directories (and the session index file).
    let session = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir());
    if let Some(dir) = session {
        let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        events = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    }
    (out, events, work)
}

fn tool_errors(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.execution_complete")
        .filter_map(|e| e["data"]["error"]["message"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn unknown_patterns_are_refused_at_start_up() {
    for bad in ["viwe", "url(a*b)", "shell("] {
        let (out, events, _) = run(Script::new().text("never"), &["--deny-tool", bad]);
        assert!(!out.status.success(), "{bad} accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(bad) && stderr.contains("valid tools: bash, read_bash"),
            "{stderr}"
        );
        assert!(events.is_empty());
    }
}

#[test]
fn read_tools_can_be_denied() {
    for deny in ["view", "read", "read(secret.txt)"] {
        let script = Script::new()
            .tool_call("view", json!({"path": "secret.txt"}))
            .text("done");
        let (out, events, _) = run(script, &["--allow-all-tools", "--deny-tool", deny]);
        assert!(out.status.success());
        let errors = tool_errors(&events);
        assert_eq!(
            errors,
            vec![format!("Permission denied by rule: {deny}")],
            "{deny}"
        );
        let text = serde_json::to_string(&events).unwrap();
        assert!(!text.contains("s3cret"), "{deny}: the file was read");
    }
}

#[test]
fn a_denial_names_the_pattern_that_allows_it() {
    let script = Script::new()
        .tool_call(
            "bash",
            json!({"command": "git status && touch f", "description": "d"}),
        )
        .text("done");
    let (out, events, work) = run(script, &["--allow-tool", "shell(git)"]);
    assert!(out.status.success());
    assert!(!work.path().join("f").exists());
    // The model reads the runtime's wording; the person running it is told the flag.
    assert_eq!(
        tool_errors(&events),
        vec!["Permission denied and could not request permission from user".to_owned()]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("(allow with --allow-tool 'shell(touch)')"),
        "stderr names the pattern: {stderr}"
    );
    // In words for the user, not as a log line.
    assert!(
        stderr.contains("not allowed: bash `git status && touch f`: no rule allows it")
            && !stderr.contains("WARN"),
        "{stderr}"
    );
}

#[test]
fn wrappers_do_not_hide_a_denied_program() {
    let script = Script::new()
        .tool_call(
            "bash",
            json!({"command": "env X=1 bash -c 'touch f'", "description": "d"}),
        )
        .text("done");
    let (out, events, work) = run(
        script,
        &["--allow-all-tools", "--deny-tool", "shell(touch)"],
    );
    assert!(out.status.success());
    assert!(!work.path().join("f").exists());
    assert_eq!(
        tool_errors(&events),
        vec!["Permission denied by rule: shell(touch)".to_owned()]
    );
}
