//! An answer with several `choices` is one message: every choice's text and tool calls, in
//! choice index order, streamed or not (against the scripted server on 127.0.0.1).

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelEvent, ModelProvider, ModelResponse, OpenAiConfig,
    OpenAiProvider, ToolCall,
};
use turnstile_scripted_model::{Script, ScriptedChoice, ScriptedResponse, ScriptedServer};

/// Failure guard: a test that takes this long is broken, not slow.
const GUARD: Duration = Duration::from_secs(30);

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("go")],
        stream,
        ..Default::default()
    }
}

async fn ask(server: &ScriptedServer, stream: bool) -> (ModelResponse, Vec<ModelEvent>) {
    let provider = OpenAiProvider::new(OpenAiConfig::new(server.url(), "m")).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let response = tokio::time::timeout(
        GUARD,
        provider.complete(&request(stream), tx, CancellationToken::new()),
    )
    .await
    .expect("within the guard")
    .expect("the call succeeds");
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (response, events)
}

fn three_choices() -> ScriptedResponse {
    ScriptedResponse::text("Let me look.")
        .and_tool_call_with_id("call_a", "glob", json!({"pattern": "*.txt"}))
        .and_choice(ScriptedChoice::text(" Also this.").and_tool_call_with_id(
            "call_b",
            "view",
            json!({"path": "a.txt"}),
        ))
        .and_choice(ScriptedChoice::default().and_tool_call_with_id(
            "call_c",
            "bash",
            json!({"command": "ls"}),
        ))
}

fn expected_calls() -> Vec<ToolCall> {
    vec![
        ToolCall {
            id: "call_a".into(),
            name: "glob".into(),
            arguments: r#"{"pattern":"*.txt"}"#.into(),
        },
        ToolCall {
            id: "call_b".into(),
            name: "view".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        },
        ToolCall {
            id: "call_c".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        },
    ]
}

#[tokio::test]
async fn every_choice_of_a_streamed_answer_is_kept_in_order() {
    let server = ScriptedServer::start(Script::new().respond(three_choices()))
        .await
        .unwrap();
    let (response, events) = ask(&server, true).await;
    assert_eq!(response.content, "Let me look. Also this.");
    assert_eq!(response.tool_calls, expected_calls());
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    // Deltas of every choice were reported as they came.
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me look. Also this.");
}

#[tokio::test]
async fn every_choice_of_a_whole_answer_is_kept_in_order() {
    let server = ScriptedServer::start(Script::new().respond(three_choices()))
        .await
        .unwrap();
    let (response, _) = ask(&server, false).await;
    assert_eq!(response.content, "Let me look. Also this.");
    assert_eq!(response.tool_calls, expected_calls());
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn calls_without_ids_in_later_choices_get_distinct_ids() {
    let answer = ScriptedResponse::text("a")
        .and_choice(ScriptedChoice::text("b"))
        .with_finish_reason("stop");
    let server = ScriptedServer::start(Script::new().respond(answer.clone()).respond(answer))
        .await
        .unwrap();
    for stream in [true, false] {
        let (response, _) = ask(&server, stream).await;
        assert_eq!(response.content, "ab", "stream: {stream}");
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    }
}
