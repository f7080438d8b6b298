//! `turnstile --headless --stdio` with the Copilot CLI's flags, as the SDK clients start it
//! (their own flags plus the user's `cliArgs`): each is accepted with its meaning, an unknown
//! one exits non-zero naming it. Real process, real pipes, a scripted model on 127.0.0.1.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};

use common::rpc::StdioServer;

/// A runtime on stdio as the clients start it, with these flags.
fn start_runtime(home: &Path, work: &Path, flags: &[&str]) -> StdioServer {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.args([
        "--headless",
        "--no-auto-update",
        "--stdio",
        "--no-auto-login",
    ])
    .args(flags)
    .env("COPILOT_HOME", home)
    .env_remove("TURNSTILE_API_KEY")
    .env_remove("OPENAI_API_KEY")
    .current_dir(work)
    .stderr(Stdio::piped());
    StdioServer::spawn(cmd)
}

#[test]
fn every_flag_the_clients_pass_is_accepted() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let logs = home.path().join("logs-here");
    let add_dir = extra.path().to_str().unwrap().to_owned();
    let log_dir = logs.to_str().unwrap().to_owned();
    let sets: Vec<Vec<&str>> = vec![
        vec!["--log-level", "info", "--auth-token-env", "NO_SUCH_VAR_SET"],
        vec!["--session-idle-timeout", "30", "--remote"],
        vec!["--yolo"],
        vec!["--allow-all"],
        vec!["--allow-all-tools", "--allow-all-paths", "--allow-all-urls"],
        vec!["--no-color"],
        vec!["--log-dir", &log_dir],
        vec!["--model", "some-model", "--effort", "high"],
        vec!["--reasoning-effort", "low", "--mode", "autopilot"],
        vec!["--add-dir", &add_dir, "--add-dir", &add_dir],
        vec!["--available-tools", "view,grep", "--excluded-tools", "bash"],
        vec![
            "--available-tools",
            "view",
            "grep",
            "--excluded-tools",
            "bash",
            "glob",
        ],
        vec!["--max-autopilot-continues", "3"],
    ];
    for flags in sets {
        let mut runtime = start_runtime(home.path(), work.path(), &flags);
        let pong = runtime.call("ping", json!({"message": "x"}));
        assert_eq!(pong["result"]["message"], "pong: x", "{flags:?}: {pong}");
        let (status, stderr) = runtime.stop();
        assert!(status.success(), "{flags:?}: {status}: {stderr}");
    }
    // --log-dir: the logs are in a file there, as the Copilot CLI names its own.
    let files: Vec<_> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with("process-") && files[0].ends_with(".log"),
        "{files:?}"
    );
}

#[test]
fn an_unknown_flag_exits_non_zero_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("turnstile")
        .unwrap()
        .args(["--headless", "--stdio", "--no-such-flag"])
        .env("COPILOT_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    // A flag with a value it cannot take names both.
    let output = Command::cargo_bin("turnstile")
        .unwrap()
        .args(["--headless", "--stdio", "--effort", "extreme"])
        .env("COPILOT_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("extreme") && stderr.contains("--effort"),
        "{stderr}"
    );
    let output = Command::cargo_bin("turnstile")
        .unwrap()
        .args(["--headless", "--stdio", "--mode", "shell"])
        .env("COPILOT_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("shell") && stderr.contains("--mode"),
        "{stderr}"
    );
}

#[test]
fn mode_plan_is_the_mode_of_new_sessions() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut runtime = start_runtime(home.path(), work.path(), &["--mode", "plan"]);
    let created = runtime.call(
        "session.create",
        json!({"model": "m", "provider": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1"}}),
    );
    let id = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let mode = runtime.call("session.mode.get", json!({"sessionId": id}));
    assert_eq!(mode["result"], "plan", "{mode}");
    let (status, stderr) = runtime.stop();
    assert!(status.success(), "{status}: {stderr}");
}

/// A session on the scripted model whose only answer is a bash call writing a file, then text.
fn bash_then_text(file: &str) -> Script {
    Script::new()
        .tool_call("bash", json!({"command": format!("echo done > {file}")}))
        .text("written")
}

#[test]
fn yolo_allows_tools_without_asking_and_config_dir_holds_the_sessions() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let model = rt
        .block_on(ScriptedServer::start(bash_then_text("yolo.txt")))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let config_dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let config_dir_arg = config_dir.path().to_str().unwrap().to_owned();
    let mut runtime = start_runtime(
        home.path(),
        work.path(),
        &["--yolo", "--config-dir", &config_dir_arg],
    );
    let created = runtime.call(
        "session.create",
        json!({
            "provider": {"type": "openai", "baseUrl": model.url(), "apiKey": "k"},
            "model": "m",
            "workingDirectory": work.path(),
        }),
    );
    let id = created["result"]["sessionId"].as_str().unwrap().to_owned();
    runtime.call(
        "session.send",
        json!({"sessionId": id, "prompt": "write it"}),
    );
    let events = runtime.events_until(|e| e["type"] == "session.idle");
    let bash = events
        .iter()
        .find(|e| e["type"] == "tool.execution_complete")
        .expect("the bash call completed");
    assert_eq!(bash["data"]["success"], true, "{bash}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("yolo.txt")).unwrap(),
        "done\n"
    );
    let (status, stderr) = runtime.stop();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("--config-dir is deprecated"), "{stderr}");
    assert!(
        config_dir
            .path()
            .join("session-state")
            .join(&id)
            .join("events.jsonl")
            .is_file()
    );
    assert!(!home.path().join("session-state").join(&id).exists());
}

#[test]
fn without_yolo_the_same_bash_call_is_denied() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let model = rt
        .block_on(ScriptedServer::start(bash_then_text("no.txt")))
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut runtime = start_runtime(home.path(), work.path(), &[]);
    let created = runtime.call(
        "session.create",
        json!({
            "provider": {"type": "openai", "baseUrl": model.url(), "apiKey": "k"},
            "model": "m",
            "workingDirectory": work.path(),
        }),
    );
    let id = created["result"]["sessionId"].as_str().unwrap().to_owned();
    runtime.call(
        "session.send",
        json!({"sessionId": id, "prompt": "write it"}),
    );
    let events = runtime.events_until(|e| e["type"] == "session.idle");
    let bash = events
        .iter()
        .find(|e| e["type"] == "tool.execution_complete")
        .expect("the bash call completed");
    assert_eq!(bash["data"]["success"], false, "{bash}");
    assert!(!work.path().join("no.txt").exists());
    let (status, _) = runtime.stop();
    assert!(status.success());
}
