//! The OpenAI-compatible provider against the scripted server on 127.0.0.1.
//!
//! Timeouts here are failure guards or deliberately tiny configured limits; no test passes or
//! fails on how fast the machine is.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    OpenAiConfig, OpenAiProvider, RetryPolicy, Timeouts, ToolCall, ToolSchema,
};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

/// Failure guard: a test that takes this long is broken, not slow.
const GUARD: Duration = Duration::from_secs(30);

fn config(server: &ScriptedServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(server.url(), "gpt-test");
    config.retry = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_millis(100),
    };
    config.timeouts = Timeouts {
        request: Duration::from_secs(20),
        stall: Duration::from_secs(20),
        ..Timeouts::default()
    };
    config
}

fn provider(server: &ScriptedServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server)).unwrap()
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: vec![
            ChatMessage::System {
                content: "You are a test.".into(),
            },
            ChatMessage::user("How many text files are there?"),
        ],
        tools: vec![],
        stream,
        ..Default::default()
    }
}

async fn run(
    provider: &OpenAiProvider,
    request: &ChatRequest,
) -> (Result<ModelResponse, ModelError>, Vec<ModelEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(
        GUARD,
        provider.complete(request, tx, CancellationToken::new()),
    )
    .await
    .expect("the call ends within the guard");
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    (result, events)
}

fn text_deltas(events: &[ModelEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[ModelEvent]) -> Vec<(u32, u64, String, Option<u16>)> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retry {
                attempt,
                delay_ms,
                reason,
                status_code,
            } => Some((*attempt, *delay_ms, reason.clone(), *status_code)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streams_text_as_deltas() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("There are 3 text files.").with_usage(1001, 20)),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    let response = result.unwrap();
    assert_eq!(response.content, "There are 3 text files.");
    assert!(response.tool_calls.is_empty());
    let deltas = text_deltas(&events);
    assert_eq!(deltas, vec!["There", " are", " 3", " text", " files."]);
    assert_eq!(events.len(), deltas.len(), "only text deltas: {events:?}");
    let usage = response.usage.expect("usage from the include_usage chunk");
    assert_eq!((usage.input_tokens, usage.output_tokens), (1001, 20));
    assert_eq!(usage.cache_read_tokens, 0);
    assert_eq!(response.api_call_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(response.model, "gpt-test");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn streams_two_tool_calls_assembled_from_many_deltas() {
    let server = ScriptedServer::start(
        Script::new().respond(
            ScriptedResponse::tool_call("glob", json!({"pattern": "*.txt"}))
                .and_tool_call(
                    "view",
                    json!({"path": "/home/dev/project/alpha.txt", "view_range": [1, 20]}),
                )
                .with_raw_usage(json!({
                    "prompt_tokens": 50, "completion_tokens": 9,
                    "prompt_tokens_details": {"cached_tokens": 32},
                    "completion_tokens_details": {"reasoning_tokens": 4},
                })),
        ),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    let response = result.unwrap();
    assert_eq!(response.content, "");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "glob".into(),
                arguments: r#"{"pattern":"*.txt"}"#.into(),
            },
            ToolCall {
                id: "call_2".into(),
                name: "view".into(),
                arguments: r#"{"path":"/home/dev/project/alpha.txt","view_range":[1,20]}"#.into(),
            },
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    let usage = response.usage.unwrap();
    assert_eq!(usage.cache_read_tokens, 32);
    assert_eq!(usage.reasoning_tokens, 4);
    for call in &response.tool_calls {
        let deltas: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta {
                    id,
                    name,
                    arguments_delta,
                } if *id == call.id => {
                    assert_eq!(*name, call.name, "every delta names its tool");
                    Some(arguments_delta.as_str())
                }
                _ => None,
            })
            .collect();
        assert!(
            deltas.iter().filter(|d| !d.is_empty()).count() >= 2,
            "arguments of {} came in several deltas: {deltas:?}",
            call.id
        );
        assert_eq!(deltas.concat(), call.arguments);
    }
    assert!(text_deltas(&events).is_empty());
}

#[tokio::test]
async fn answers_without_streaming() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::text("Let me look.")
                    .and_tool_call("glob", json!({"pattern": "*.txt"}))
                    .with_usage(12, 3),
            )
            .text("Done."),
    )
    .await
    .unwrap();
    let provider = provider(&server);
    let (result, events) = run(&provider, &request(false)).await;
    let response = result.unwrap();
    assert!(events.is_empty(), "no deltas without streaming: {events:?}");
    assert_eq!(response.content, "Let me look.");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].id, "call_1");
    assert_eq!(response.tool_calls[0].arguments, r#"{"pattern":"*.txt"}"#);
    assert_eq!(response.usage.unwrap().input_tokens, 12);
    assert_eq!(response.api_call_id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    let body = &server.requests()[0];
    // Not streaming is the API's default: the field is left out, as the Copilot CLI does.
    assert!(body.get("stream").is_none(), "{body}");
    assert!(body.get("stream_options").is_none());

    let (second, _) = run(&provider, &request(false)).await;
    let second = second.unwrap();
    assert_eq!(second.content, "Done.");
    assert_eq!(second.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn a_500_is_retried_once_then_succeeds() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::error_message(
                500,
                "the model is overloaded",
            ))
            .text("ok"),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    assert_eq!(result.unwrap().content, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{events:?}");
    let (attempt, delay_ms, reason, status) = &retries[0];
    assert_eq!(*attempt, 1);
    assert!(
        *delay_ms <= 40,
        "backoff within the configured bound: {delay_ms}"
    );
    assert!(reason.contains("the model is overloaded"), "{reason}");
    assert_eq!(*status, Some(500));
    assert!(
        matches!(events[0], ModelEvent::Retry { .. }),
        "the retry comes before any delta"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the request was sent twice");
    assert_eq!(requests[0], requests[1]);
}

#[tokio::test]
async fn a_429_waits_as_retry_after_says_up_to_the_cap() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::error_message(429, "slow down").with_header("Retry-After", "5"),
            )
            .respond(
                ScriptedResponse::error_message(429, "slow down")
                    .with_header("retry-after-ms", "30"),
            )
            .text("ok"),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    assert_eq!(result.unwrap().content, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 2, "{events:?}");
    // Retry-After: 5 s, cut to the configured 100 ms cap.
    assert_eq!(
        (retries[0].0, retries[0].1, retries[0].3),
        (1, 100, Some(429))
    );
    // retry-after-ms: 30 ms, taken as is.
    assert_eq!(
        (retries[1].0, retries[1].1, retries[1].3),
        (2, 30, Some(429))
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_400_is_an_error_with_the_server_message_and_is_not_retried() {
    let server = ScriptedServer::start(
        Script::new()
            .error(
                400,
                json!({"error": {"message": "Invalid schema for function 'glob'", "type": "invalid_request_error", "code": null}}),
            )
            .text("never sent"),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    let error = result.unwrap_err();
    assert_eq!(
        error,
        ModelError {
            kind: ModelErrorKind::Http,
            status_code: Some(400),
            message: "Invalid schema for function 'glob'".into(),
            retryable: false,
        }
    );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::error_message(503, "down"))
            .respond(ScriptedResponse::error_message(503, "down"))
            .respond(ScriptedResponse::error_message(503, "down"))
            .respond(ScriptedResponse::error_message(503, "still down"))
            .text("too late"),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(false)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "http");
    assert_eq!(error.status_code, Some(503));
    assert_eq!(error.message, "still down");
    assert!(error.retryable);
    let attempts: Vec<u32> = retries(&events).iter().map(|r| r.0).collect();
    assert_eq!(attempts, vec![1, 2, 3]);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn malformed_sse_is_an_error() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("hello there").malformed())
            .text("never sent"),
    )
    .await
    .unwrap();
    let (result, _) = run(&provider(&server), &request(true)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "malformed_response", "{error}");
    assert!(error.message.contains("not JSON"), "{error}");
    assert!(!error.retryable);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_malformed_whole_body_is_an_error() {
    let server =
        ScriptedServer::start(Script::new().respond(ScriptedResponse::text("x").malformed()))
            .await
            .unwrap();
    let (result, _) = run(&provider(&server), &request(false)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "malformed_response", "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn bad_tool_call_json_is_kept_raw_not_an_error() {
    let server = ScriptedServer::start(Script::new().respond(ScriptedResponse::tool_call(
        "bash",
        Value::String(r#"{"command": "ls"#.into()),
    )))
    .await
    .unwrap();
    let (result, _) = run(&provider(&server), &request(true)).await;
    let response = result.unwrap();
    assert_eq!(response.tool_calls[0].arguments, r#"{"command": "ls"#);
    assert_eq!(
        response.tool_calls[0].arguments_value(),
        Value::String(r#"{"command": "ls"#.into())
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_an_error_and_never_resent() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("one two three four five").drop_after_chunks(3))
            .text("must never be used"),
    )
    .await
    .unwrap();
    let (result, events) = run(&provider(&server), &request(true)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "stream", "{error}");
    assert!(!error.retryable);
    assert_eq!(
        text_deltas(&events),
        vec!["one", " two"],
        "output had begun"
    );
    assert!(retries(&events).is_empty());
    assert_eq!(server.requests().len(), 1, "exactly one request: no resend");
}

#[tokio::test]
async fn a_stream_that_stalls_hits_the_stall_timeout() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::text("a b c d")
                    .drop_after_chunks(2)
                    .hang(),
            )
            .text("must never be used"),
    )
    .await
    .unwrap();
    let mut config = config(&server);
    config.timeouts.stall = Duration::from_millis(200);
    let provider = OpenAiProvider::new(config).unwrap();
    let (result, events) = run(&provider, &request(true)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "timeout", "{error}");
    assert!(error.message.contains("stalled"), "{error}");
    assert!(!error.retryable);
    assert_eq!(text_deltas(&events), vec!["a"]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_request_timeout_and_is_retried() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("never").hang())
            .text("ok"),
    )
    .await
    .unwrap();
    let mut config = config(&server);
    config.timeouts.request = Duration::from_millis(200);
    let provider = OpenAiProvider::new(config.clone()).unwrap();
    let (result, events) = run(&provider, &request(true)).await;
    assert_eq!(result.unwrap().content, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert!(retries[0].2.contains("timeout"), "{}", retries[0].2);
    assert_eq!(retries[0].3, None);

    // Without retries the timeout is the answer.
    let server = ScriptedServer::start(Script::new().respond(ScriptedResponse::text("x").hang()))
        .await
        .unwrap();
    let mut config = self::config(&server);
    config.timeouts.request = Duration::from_millis(200);
    config.retry.max_retries = 0;
    let (result, _) = run(&OpenAiProvider::new(config).unwrap(), &request(false)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "timeout", "{error}");
    assert!(error.retryable);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // A port that was free a moment ago and has no listener now.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "gpt-test");
    config.retry.max_retries = 2;
    config.retry.base_delay = Duration::from_millis(5);
    let provider = OpenAiProvider::new(config).unwrap();
    let (result, events) = run(&provider, &request(true)).await;
    let error = result.unwrap_err();
    assert_eq!(error.error_type(), "connection", "{error}");
    assert_eq!(error.status_code, None);
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn cancelling_mid_stream_returns_promptly() {
    let server = ScriptedServer::start(
        Script::new().respond(
            ScriptedResponse::text("a b c d")
                .drop_after_chunks(2)
                .hang(),
        ),
    )
    .await
    .unwrap();
    // Limits far beyond the guard: only cancellation can end this call in time.
    let mut config = config(&server);
    config.timeouts.stall = Duration::from_secs(600);
    let provider = OpenAiProvider::new(config).unwrap();
    let request = request(true);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let call = provider.complete(&request, tx, cancel.clone());
    let watcher = async {
        let first = rx.recv().await;
        assert_eq!(first, Some(ModelEvent::TextDelta("a".into())));
        let cancelled_at = Instant::now();
        cancel.cancel();
        cancelled_at
    };
    let (result, cancelled_at) = tokio::time::timeout(GUARD, async { tokio::join!(call, watcher) })
        .await
        .expect("a cancelled call returns");
    assert!(cancelled_at.elapsed() < GUARD);
    let error = result.unwrap_err();
    assert_eq!(error, ModelError::cancelled());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancelling_before_the_call_sends_nothing() {
    let server = ScriptedServer::start(Script::new().text("x"))
        .await
        .unwrap();
    let provider = provider(&server);
    let (tx, _rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = provider.complete(&request(true), tx, cancel).await;
    assert_eq!(result.unwrap_err().error_type(), "cancelled");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_request_body_has_the_openai_shape() {
    let server = ScriptedServer::start(Script::new().text("fine"))
        .await
        .unwrap();
    let request = ChatRequest {
        model: "gpt-4.1".into(),
        messages: vec![
            ChatMessage::System {
                content: "system prompt".into(),
            },
            ChatMessage::user("list the text files"),
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall {
                        id: "call_a".into(),
                        name: "glob".into(),
                        arguments: r#"{"pattern":"*.txt"}"#.into(),
                    },
                    ToolCall {
                        id: "call_b".into(),
                        name: "bash".into(),
                        arguments: r#"{"command": "ls"#.into(),
                    },
                ],
            },
            ChatMessage::Tool {
                tool_call_id: "call_a".into(),
                content: "alpha.txt\nbeta.txt".into(),
            },
            ChatMessage::Tool {
                tool_call_id: "call_b".into(),
                content: "bad arguments".into(),
            },
            ChatMessage::Assistant {
                content: Some("There are 2.".into()),
                tool_calls: vec![],
            },
            ChatMessage::user("thanks"),
        ],
        tools: vec![ToolSchema {
            name: "glob".into(),
            description: "Find files by pattern".into(),
            parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}),
        }],
        stream: true,
        ..Default::default()
    };
    let (result, _) = run(&provider(&server), &request).await;
    let response = result.unwrap();
    assert_eq!(response.model, "gpt-4.1");
    let body = server.requests().remove(0);
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": "system prompt"},
                {"role": "user", "content": "list the text files"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*.txt\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls"}},
                ]},
                {"role": "tool", "tool_call_id": "call_a", "content": "alpha.txt\nbeta.txt"},
                {"role": "tool", "tool_call_id": "call_b", "content": "bad arguments"},
                {"role": "assistant", "content": "There are 2."},
                {"role": "user", "content": "thanks"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "glob",
                "description": "Find files by pattern",
                "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    // No tools: no `tools` key (some servers reject an empty list); the configured model.
    let server = ScriptedServer::start(Script::new().text("fine"))
        .await
        .unwrap();
    let (result, _) = run(&self::provider(&server), &self::request(false)).await;
    assert_eq!(result.unwrap().model, "gpt-test");
    let body = server.requests().remove(0);
    assert!(body.get("tools").is_none());
    assert_eq!(body["model"], "gpt-test");
}

#[tokio::test]
async fn the_provider_is_usable_as_a_trait_object() {
    let server = ScriptedServer::start(Script::new().text("dyn"))
        .await
        .unwrap();
    let provider: std::sync::Arc<dyn ModelProvider> = std::sync::Arc::new(provider(&server));
    assert_eq!(provider.name(), "openai");
    let request = request(true);
    let (tx, _rx) = mpsc::unbounded_channel();
    let handle = {
        let provider = provider.clone();
        tokio::spawn(async move {
            provider
                .complete(&request, tx, CancellationToken::new())
                .await
        })
    };
    let response = tokio::time::timeout(GUARD, handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.content, "dyn");
}
