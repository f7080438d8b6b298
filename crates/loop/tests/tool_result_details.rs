//! What a tool result carries besides the model's text, as the Copilot CLI sends it: the
//! detailed text every result has (its own, or the model's text), the `shell_exit` block of a
//! shell's end that goes to live subscribers only, and the background-work notices around a
//! shell.

use crate::common;

use std::sync::Arc;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::{SendOptions, SessionHandle};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

/// Runs one message whose model calls `tool` with `args` and then answers; returns the
/// fixture, the live events and the journal's events.
async fn one_call(tool: &str, args: Value) -> (Fixture, Vec<Arc<Event>>, Vec<Event>) {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(tool, args))
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |work| {
        std::fs::write(work.join("notes.txt"), "line one\nline two\n").unwrap();
    })
    .await;
    let parts = fx.base_parts(|c| c.streaming = false);
    let (session, mut rx) = SessionHandle::create_subscribed(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("Go", SendOptions::default())
        .await
        .unwrap();
    let id = session.id();
    session.shutdown().await.unwrap();
    let mut live = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        live.push(ev);
    }
    let journal = fx.journal(id);
    (fx, live, journal)
}

fn completion<'a>(events: impl IntoIterator<Item = &'a Event>) -> Value {
    let e = events
        .into_iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .expect("a tool.execution_complete");
    data(e)
}

#[tokio::test]
async fn a_shells_end_is_a_live_only_block_and_its_text_is_the_detailed_text() {
    let (fx, live, journal) = one_call(
        "bash",
        json!({"command": "echo hello; exit 3", "description": "Fail"}),
    )
    .await;
    let live_result = completion(live.iter().map(|e| &**e))["result"].clone();
    let text = "hello\n<shellId: 0 completed with exit code 3>";
    assert_eq!(live_result["content"], text);
    assert_eq!(live_result["detailedContent"], text);
    assert_eq!(
        live_result["contents"],
        json!([{
            "type": "shell_exit",
            "shellId": "0",
            "exitCode": 3,
            "outputTruncated": false,
            "cwd": fx.work.path().display().to_string(),
            "outputPreview": "hello\n",
        }])
    );
    // The journal keeps the texts and leaves the live-only block out, as the runtime's does.
    let recorded = completion(&journal)["result"].clone();
    assert_eq!(recorded, json!({"content": text, "detailedContent": text}));
    // Same event, the same id on both sides.
    let live_id = live
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .unwrap()
        .id;
    assert!(journal.iter().any(|e| e.id == live_id));

    // The shell's start and end, and the session letting its work go, are announced live.
    let types: Vec<&str> = live.iter().map(|e| e.event_type.as_str()).collect();
    let changes = types
        .iter()
        .filter(|t| **t == "session.background_tasks_changed")
        .count();
    assert!(changes >= 3, "start, end and shutdown: {types:?}");
    assert!(
        journal
            .iter()
            .all(|e| e.event_type.as_str() != "session.background_tasks_changed")
    );
    let start = types.iter().position(|t| *t == "session.start").unwrap();
    assert_eq!(types[start + 1], "session.managed_settings_resolved");
    let managed = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.managed_settings_resolved")
        .unwrap();
    assert_eq!(data(managed)["source"], "none");
    assert_eq!(data(managed)["managedKeys"], json!([]));
}

#[tokio::test]
async fn a_silent_command_has_no_preview() {
    let (_fx, live, _) = one_call("bash", json!({"command": "true", "description": "Quiet"})).await;
    let block = completion(live.iter().map(|e| &**e))["result"]["contents"][0].clone();
    assert_eq!(block["exitCode"], 0);
    assert!(block.get("outputPreview").is_none(), "{block}");
}

#[tokio::test]
async fn a_view_shows_the_lines_it_read_as_a_diff_of_the_file_with_itself() {
    let (fx, _, journal) = one_call("view", json!({"path": "notes.txt"})).await;
    let result = completion(&journal)["result"].clone();
    let path = fx.work.path().join("notes.txt").display().to_string();
    let p = path.trim_start_matches('/');
    assert_eq!(result["content"], "1. line one\n2. line two\n3. ");
    assert_eq!(
        result["detailedContent"],
        format!(
            "\ndiff --git a/{p} b/{p}\nindex 0000000..0000000 100644\n--- a/{p}\n+++ b/{p}\n@@ -1,3 +1,3 @@\n line one\n line two\n \n"
        )
    );
    assert!(result.get("contents").is_none());
}
