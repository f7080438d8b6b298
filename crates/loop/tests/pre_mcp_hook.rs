//! The `preMcpToolCall` hook end to end, with the scripted model, a command hook from the
//! working directory's `.github/hooks` and an rmcp server over streamable HTTP on 127.0.0.1
//! (`crates/mcp/tests/support/server.rs`, whose `echo` shows the request's `_meta`): the
//! hook's `metaToUse` is the `_meta` the server gets, `null` sends none, and the journal
//! records the hook's output with the `_meta` redacted.

use crate::common;
use crate::server;

use std::sync::Arc;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::{Outcome, SendOptions, SessionHandle};
use turnstile_mcp::{McpHost, McpServers, StartOptions};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

/// Runs one `demo-echo` call with a preMcpToolCall hook printing `output`; the journal.
async fn echo_with_hook(output: &str) -> Vec<Event> {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "demo-echo",
            json!({"text": "hi"}),
        ))
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |_| {}).await;
    let hooks = fx.work.path().join(".github/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = json!({"version": 1, "hooks": {"preMcpToolCall": [
        {"type": "command", "bash": format!("cat >/dev/null; printf '%s' '{output}'")}
    ]}});
    std::fs::write(hooks.join("meta.json"), hook.to_string()).unwrap();
    let url = server::serve_http().await;
    let servers =
        McpServers::from_value(&json!({"demo": {"type": "http", "url": url}}), "test").unwrap();
    let host = Arc::new(McpHost::start(&servers, &StartOptions::new(fx.work.path())).await);
    let parts = {
        let mut parts = fx.hooked_parts(|c| c.mcp = Some(Arc::clone(&host)));
        parts.tools = Arc::new(turnstile_tools::ToolRegistry::builtin(false));
        parts
    };
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let outcome = session
        .send_and_wait("echo it", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let id = session.id();
    session.shutdown().await.unwrap();
    fx.journal(id)
}

fn result(journal: &[Event]) -> String {
    let done = journal
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .expect("the call completed");
    data(done)["result"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn hook_events(journal: &[Event]) -> (Value, Value) {
    let of_type = |t: &str| {
        journal
            .iter()
            .find(|e| e.event_type.as_str() == t && data(e)["hookType"] == "preMcpToolCall")
            .map(data)
            .unwrap_or_else(|| panic!("no {t} of preMcpToolCall"))
    };
    (of_type("hook.start"), of_type("hook.end"))
}

#[tokio::test]
async fn the_hooks_meta_reaches_the_server_and_the_journal_has_it_redacted() {
    let journal = echo_with_hook(r#"{"metaToUse":{"injected":"by-hook","token":"s3cret"}}"#).await;
    let content = result(&journal);
    assert!(
        content.contains(r#"meta: {"injected":"by-hook","token":"s3cret"}"#),
        "{content}"
    );
    let (start, end) = hook_events(&journal);
    assert_eq!(start["input"]["serverName"], "demo");
    assert_eq!(start["input"]["toolName"], "echo");
    assert_eq!(start["input"]["arguments"], json!({"text": "hi"}));
    assert_eq!(end["output"], json!({"metaToUse": {"redacted": true}}));
    let on_disk: Vec<String> = journal.iter().map(|e| e.data.get().to_owned()).collect();
    assert!(
        !on_disk
            .iter()
            .any(|d| d.contains("s3cret") && d.contains("metaToUse")),
        "the hook's _meta is not in its hook.end"
    );
}

#[tokio::test]
async fn a_null_meta_sends_none() {
    let journal = echo_with_hook(r#"{"metaToUse":null}"#).await;
    let content = result(&journal);
    assert!(content.starts_with("echo: hi"), "{content}");
    assert!(!content.contains("meta:"), "{content}");
    let (_, end) = hook_events(&journal);
    assert_eq!(end["output"], json!({"metaToUse": null}));
}
