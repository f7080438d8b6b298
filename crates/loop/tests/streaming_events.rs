//! The live progress of streamed answers, end to end against the scripted OpenAI-compatible
//! server on 127.0.0.1: `assistant.streaming_delta` before every piece with the session's
//! running byte count, `assistant.message_start` before a message's first text,
//! `assistant.tool_call_delta` pieces that add up to the recorded arguments, and
//! `assistant.usage` before `assistant.message`; none of it on disk.

use crate::common;

use std::sync::Arc;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::{SendOptions, SessionHandle};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn data(event: &Event) -> Value {
    serde_json::from_str(event.data.get()).unwrap()
}

#[tokio::test]
async fn streamed_pieces_are_announced_with_the_sessions_running_byte_count() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": "notes.txt"}),
        ))
        .respond(ScriptedResponse::text("The notes hold two lines."))
        .respond(ScriptedResponse::text("Again: two lines."));
    let fx = Fixture::start(script, |work| {
        std::fs::write(work.join("notes.txt"), "one\ntwo\n").unwrap();
    })
    .await;
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, fx.base_parts(|c| c.streaming = true))
            .unwrap();
    for prompt in ["Read the notes", "Once more"] {
        session
            .send_and_wait(prompt, SendOptions::default())
            .await
            .unwrap();
    }
    let id = session.id();
    session.shutdown().await.unwrap();
    let mut live: Vec<Arc<Event>> = Vec::new();
    while let Ok(e) = rx.try_recv() {
        live.push(e);
    }
    let types: Vec<&str> = live.iter().map(|e| e.event_type.as_str()).collect();

    // Every piece that carries bytes follows a streaming_delta, and the count only grows,
    // across calls and prompts.
    let mut total = 0u64;
    let mut expected = 0u64;
    let mut named = std::collections::HashSet::new();
    for (i, e) in live.iter().enumerate() {
        match e.event_type.as_str() {
            "assistant.streaming_delta" => {
                let now = data(e)["totalResponseSizeBytes"].as_u64().unwrap();
                assert!(now > total, "the byte count grows: {total} then {now}");
                total = now;
            }
            "assistant.message_delta" => {
                expected += data(e)["deltaContent"].as_str().unwrap().len() as u64;
                let before = if types[i - 1] == "assistant.message_start" {
                    i - 2
                } else {
                    i - 1
                };
                assert_eq!(
                    types[before], "assistant.streaming_delta",
                    "at {i}: {types:?}"
                );
            }
            "assistant.tool_call_delta" => {
                let d = data(e);
                if named.insert(d["toolCallId"].as_str().unwrap().to_owned()) {
                    expected += d["toolName"].as_str().unwrap().len() as u64;
                }
                assert_eq!(d["toolType"], "function");
                expected += d["inputDelta"].as_str().unwrap().len() as u64;
                assert_eq!(
                    types[i - 1],
                    "assistant.streaming_delta",
                    "at {i}: {types:?}"
                );
            }
            _ => {}
        }
    }
    assert_eq!(
        total, expected,
        "the count is the text, each tool name once and the arguments"
    );

    // One message_start per text answer, before its first delta, naming the message.
    let starts: Vec<&Arc<Event>> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "assistant.message_start")
        .collect();
    assert_eq!(starts.len(), 2);
    let messages: Vec<Value> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "assistant.message")
        .map(|e| data(e))
        .collect();
    assert_eq!(data(starts[0])["messageId"], messages[1]["messageId"]);
    assert_eq!(data(starts[1])["messageId"], messages[2]["messageId"]);

    // The argument pieces add up to the recorded arguments.
    let arguments: String = live
        .iter()
        .filter(|e| e.event_type.as_str() == "assistant.tool_call_delta")
        .map(|e| data(e)["inputDelta"].as_str().unwrap().to_owned())
        .collect();
    let recorded = &messages[0]["toolRequests"][0];
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        recorded["arguments"]
    );

    // The call's usage comes before its message, with what the engine knows of the call.
    for (i, t) in types.iter().enumerate() {
        if *t == "assistant.message" {
            assert_eq!(types[i - 1], "assistant.usage", "at {i}: {types:?}");
        }
    }
    let usage = data(
        live.iter()
            .find(|e| e.event_type.as_str() == "assistant.usage")
            .unwrap(),
    );
    assert_eq!(usage["numToolCalls"], 1);
    assert_eq!(usage["toolCounts"], json!({"view": 1}));
    assert_eq!(usage["apiEndpoint"], "/chat/completions");
    assert!(usage["availableToolCount"].as_u64().unwrap() > 0);
    assert!(usage["timeToFirstTokenMs"].is_number());

    // None of it is on disk.
    let journal = fx.journal(id);
    assert!(journal.iter().all(|e| !matches!(
        e.event_type.as_str(),
        "assistant.streaming_delta"
            | "assistant.message_start"
            | "assistant.tool_call_delta"
            | "assistant.usage"
    )));
    fx.audit_clean(id);
}
