//! The replay provider answers from recorded journals of the real runtime.

use std::path::PathBuf;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Event;
use turnstile_journal::payload::{AssistantMessage, AssistantTurnStart, ToolRequest};
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    ReplayProvider, ToolCall,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime")
        .join(name)
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: "gpt-4.1".into(),
        messages: vec![ChatMessage::user("How many text files are there?")],
        tools: vec![],
        stream,
        ..Default::default()
    }
}

async fn call(
    provider: &ReplayProvider,
    stream: bool,
) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider
        .complete(&request(stream), tx, CancellationToken::new())
        .await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

#[tokio::test]
async fn replays_the_c1_recording_then_runs_out() {
    let provider = ReplayProvider::from_journal(fixture("c1-new-session.events.jsonl")).unwrap();
    assert_eq!(provider.name(), "replay");
    assert_eq!(provider.remaining(), 3);

    let (first, events) = call(&provider, false).await;
    assert!(events.is_empty());
    assert_eq!(
        first.unwrap(),
        ModelResponse {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_5a1ca89365644d54".into(),
                name: "glob".into(),
                arguments: r#"{"pattern":"*.txt"}"#.into(),
            }],
            usage: None,
            api_call_id: Some("chatcmpl-012be11c9cd3".into()),
            model: "gpt-4.1".into(),
            finish_reason: Some("tool_calls".into()),
        }
    );

    let (second, _) = call(&provider, false).await;
    let second = second.unwrap();
    assert_eq!(
        second.tool_calls,
        vec![ToolCall {
            id: "call_91d3856688f844de".into(),
            name: "view".into(),
            arguments: r#"{"path":"/home/dev/project/alpha.txt"}"#.into(),
        }]
    );
    assert_eq!(second.content, "");
    assert_eq!(second.api_call_id.as_deref(), Some("chatcmpl-31d7a7ac6603"));

    let (third, events) = call(&provider, true).await;
    let third = third.unwrap();
    let text = "There are 3 text files (alpha.txt, beta.txt, gamma.txt); alpha.txt mentions apples and TODO items.";
    assert_eq!(third.content, text);
    assert!(third.tool_calls.is_empty());
    assert_eq!(third.finish_reason.as_deref(), Some("stop"));
    assert_eq!(third.usage, None);
    assert_eq!(events, vec![ModelEvent::TextDelta(text.into())]);
    assert_eq!(provider.remaining(), 0);

    let (fourth, _) = call(&provider, true).await;
    assert_eq!(
        fourth.unwrap_err(),
        ModelError {
            kind: ModelErrorKind::Fixture,
            status_code: None,
            message: "the recording has no more assistant messages (3 were recorded)".into(),
            retryable: false,
        }
    );
}

#[tokio::test]
async fn streaming_replay_sends_tool_call_deltas() {
    let provider = ReplayProvider::from_journal(fixture("c1-new-session.events.jsonl")).unwrap();
    let (first, events) = call(&provider, true).await;
    let first = first.unwrap();
    assert_eq!(
        events,
        vec![ModelEvent::ToolCallDelta {
            id: first.tool_calls[0].id.clone(),
            name: "glob".into(),
            arguments_delta: first.tool_calls[0].arguments.clone(),
        }]
    );
}

#[test]
fn the_other_recordings_load() {
    let r1 = ReplayProvider::from_journal(fixture("r1-resumed.events.jsonl")).unwrap();
    assert_eq!(
        r1.answers().len(),
        6,
        "c1's 3 answers and 3 after the resume"
    );
    let a2 = ReplayProvider::from_journal(fixture("a2-autopilot.events.jsonl")).unwrap();
    let last = a2.answers().last().unwrap();
    assert_eq!(last.tool_calls.len(), 1);
    assert_eq!(last.tool_calls[0].name, "task_complete");
}

#[tokio::test]
async fn from_events_uses_the_turn_model_and_joins_chunks() {
    let turn = Event::new(
        &AssistantTurnStart {
            turn_id: "0".into(),
            model: Some("claude-x".into()),
            interaction_id: None,
        },
        None,
    );
    let chunk = |index: u32, content: &str, tools: Option<Vec<ToolRequest>>| {
        Event::new(
            &AssistantMessage {
                message_id: format!("m{index}"),
                content: content.into(),
                tool_requests: tools,
                chunk_index: Some(index),
                chunk_count: Some(2),
                api_call_id: Some("chatcmpl-same".into()),
                ..AssistantMessage::default()
            },
            None,
        )
    };
    let bash = ToolRequest {
        tool_call_id: "toolu_1".into(),
        name: "bash".into(),
        arguments: Some(json!({"command": "ls"})),
        ..ToolRequest::default()
    };
    let provider = ReplayProvider::from_events(vec![
        turn,
        chunk(0, "Part one. ", None),
        chunk(1, "Part two.", Some(vec![bash])),
    ])
    .unwrap();
    assert_eq!(provider.answers().len(), 1);
    let (answer, _) = call(&provider, false).await;
    let answer = answer.unwrap();
    assert_eq!(answer.content, "Part one. Part two.");
    assert_eq!(answer.model, "claude-x");
    assert_eq!(answer.tool_calls[0].id, "toolu_1");
    assert_eq!(answer.tool_calls[0].arguments, r#"{"command":"ls"}"#);
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn a_missing_recording_is_a_fixture_error() {
    let error = ReplayProvider::from_journal(fixture("no-such.events.jsonl")).unwrap_err();
    assert_eq!(error.error_type(), "fixture");
    assert!(error.message.contains("no-such.events.jsonl"), "{error}");
}

#[test]
fn an_empty_recording_answers_nothing() {
    let provider = ReplayProvider::from_events(vec![]).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (result, _) = rt.block_on(call(&provider, false));
    assert_eq!(
        result.unwrap_err().message,
        "the recording has no more assistant messages (0 were recorded)"
    );
}
