//! A provider whose bearer token the SDK client supplies (`hasBearerTokenProvider`), through
//! the real binary on stdio: the server asks the client (`providerToken.getToken`) before
//! every model call, the call carries exactly the token it got (never the static key the
//! callback takes precedence over), and no token reaches the journal, any file of the session
//! or the server's log at its most verbose.

use crate::common;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

use common::rpc::StdioServer;

#[tokio::test(flavor = "multi_thread")]
async fn the_clients_token_is_asked_for_every_call_and_kept_nowhere() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("glob", json!({"pattern": "*.txt"}))
            .text("one file"),
    )
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "x").unwrap();
    let log_dir = home.path().join("logs");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
    cmd.args([
        "--headless",
        "--stdio",
        "--allow-all-tools",
        "--log-level",
        "all",
    ])
    .arg("--log-dir")
    .arg(&log_dir)
    .current_dir(work.path())
    .env("COPILOT_HOME", home.path())
    .env("TURNSTILE_LOG", "trace")
    .stderr(Stdio::piped());
    let url = model.url();
    let (answers, id) = tokio::task::spawn_blocking(move || {
        let mut server = StdioServer::spawn(cmd);
        let created = server.ok(
            "session.create",
            json!({"model": "scripted-model", "provider": {
                "type": "openai", "baseUrl": url, "apiKey": "static-key-never-sent",
                "hasBearerTokenProvider": true}}),
        );
        let id = created["sessionId"].as_str().unwrap().to_owned();
        server.ok(
            "session.send",
            json!({"sessionId": id, "prompt": "how many?"}),
        );
        let mut asked: Vec<Value> = Vec::new();
        server.events_answering(
            |method, params| {
                assert_eq!(method, "providerToken.getToken");
                asked.push(params.clone());
                json!({"token": format!("rotating-secret-{}", asked.len())})
            },
            |event| event["type"] == "session.idle",
        );
        let (status, stderr) = server.stop();
        assert!(status.success(), "{stderr}");
        assert!(!stderr.contains("rotating-secret"), "{stderr}");
        (asked, id)
    })
    .await
    .unwrap();
    // Asked once per model call, for the session's single provider, named as the Copilot CLI
    // names it.
    assert_eq!(
        answers,
        [
            json!({"sessionId": id, "providerName": "default"}),
            json!({"sessionId": id, "providerName": "default"}),
        ]
    );
    let sent: Vec<Option<String>> = model
        .recorded()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        sent,
        [
            Some("Bearer rotating-secret-1".to_owned()),
            Some("Bearer rotating-secret-2".to_owned()),
        ]
    );
    // No token, nor the static key, in any file the server wrote: journal, index, logs.
    let files = walk(home.path());
    assert!(
        files.iter().any(|f| f.ends_with("events.jsonl")),
        "{files:?}"
    );
    assert!(files.iter().any(|f| f.starts_with(&log_dir)), "{files:?}");
    for file in files {
        let text = std::fs::read(&file).unwrap();
        for secret in [&b"rotating-secret"[..], b"static-key-never-sent"] {
            assert!(
                !text.windows(secret.len()).any(|w| w == secret),
                "{} holds {}",
                file.display(),
                String::from_utf8_lossy(secret)
            );
        }
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
