//! Bounded resources: a huge SSE event is read in linear time, and an answer past a limit
//! (an SSE line, the streamed answer, a non-streamed body) ends the call with a
//! `response_too_large` error naming the limit, without holding more than the limit.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ModelProvider, ModelResponse,
    OpenAiConfig, OpenAiProvider, ResponseLimits,
};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

/// Failure guard: a test that takes this long is broken, not slow.
const GUARD: Duration = Duration::from_secs(60);

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("go")],
        stream,
        ..Default::default()
    }
}

async fn ask(
    server: &ScriptedServer,
    limits: ResponseLimits,
    stream: bool,
) -> Result<ModelResponse, ModelError> {
    let mut config = OpenAiConfig::new(server.url(), "m");
    config.limits = limits;
    let provider = OpenAiProvider::new(config).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    tokio::time::timeout(
        GUARD,
        provider.complete(&request(stream), tx, CancellationToken::new()),
    )
    .await
    .expect("the call ends within the guard")
}

#[tokio::test]
async fn a_16_mb_event_is_read_whole() {
    // One word, so one SSE event of 16 MB (the scripted server streams word by word).
    let text = "x".repeat(16_000_000);
    let server = ScriptedServer::start(Script::new().text(text.clone()))
        .await
        .unwrap();
    let response = ask(&server, ResponseLimits::default(), true).await.unwrap();
    assert_eq!(response.content.len(), text.len());
    assert!(response.content == text);
}

#[tokio::test]
async fn an_endless_stream_stops_at_the_answer_limit() {
    let server = ScriptedServer::start(
        Script::new().respond(ScriptedResponse::text("0123456789abcdef".repeat(256)).endless()),
    )
    .await
    .unwrap();
    let limits = ResponseLimits {
        max_answer_bytes: 1 << 20,
        ..Default::default()
    };
    let error = ask(&server, limits, true).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert_eq!(error.error_type(), "response_too_large");
    assert!(error.message.contains("1048576 bytes"), "{error}");
    assert!(error.message.contains("max_answer_bytes"), "{error}");
    assert!(!error.retryable);
    // Sent once: a call cut at the limit is never sent again.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_sse_line_past_the_line_limit_is_refused() {
    let server = ScriptedServer::start(Script::new().text("y".repeat(300_000)))
        .await
        .unwrap();
    let limits = ResponseLimits {
        max_line_bytes: 100_000,
        ..Default::default()
    };
    let error = ask(&server, limits, true).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert!(error.message.contains("100000 bytes"), "{error}");
    assert!(error.message.contains("max_line_bytes"), "{error}");
}

#[tokio::test]
async fn an_endless_whole_body_stops_at_the_body_limit() {
    let server =
        ScriptedServer::start(Script::new().respond(ScriptedResponse::text("zzzzzzzz").endless()))
            .await
            .unwrap();
    let limits = ResponseLimits {
        max_body_bytes: 1 << 20,
        ..Default::default()
    };
    let error = ask(&server, limits, false).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert!(error.message.contains("1048576 bytes"), "{error}");
    assert!(error.message.contains("max_body_bytes"), "{error}");
}

#[tokio::test]
async fn a_whole_answer_past_the_answer_limit_is_refused() {
    let server = ScriptedServer::start(Script::new().text("w".repeat(200_000)))
        .await
        .unwrap();
    let limits = ResponseLimits {
        max_answer_bytes: 100_000,
        ..Default::default()
    };
    let error = ask(&server, limits, false).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert!(error.message.contains("max_answer_bytes"), "{error}");
    // Just under the limit is fine.
    let server = ScriptedServer::start(Script::new().text("w".repeat(99_000)))
        .await
        .unwrap();
    assert_eq!(
        ask(&server, limits, false).await.unwrap().content.len(),
        99_000
    );
}
