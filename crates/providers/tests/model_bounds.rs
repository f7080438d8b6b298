//! A hostile model server against the call's bounds, each a real TCP server in the test: a
//! stream of empty deltas, of SSE comments, of slow pieces, a response head sent one byte at a
//! time, and endless new tool-call indexes with empty arguments. Each call ends with a
//! `timeout` (the idle timeout, which only useful progress resets, or the overall deadline) or
//! a `response_too_large` (the tool-call cap, the answer bytes), well before the guard.
//!
//! The number of pieces a stress run sends is `TURNSTILE_STRESS_CALLS` (tool-call indexes;
//! `make stress` sets 1000 and more).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    OpenAiConfig, OpenAiProvider, ResponseLimits, Timeouts,
};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

/// Failure guard: a call still open after this long was not bounded.
const GUARD: Duration = Duration::from_secs(30);

/// What the hostile server sends after reading the request.
#[derive(Clone, Copy)]
enum Hostile {
    /// A 200 SSE head, then `data: {"choices":[{"index":0,"delta":{}}]}` every 50 ms.
    EmptyDeltas,
    /// A 200 SSE head, then `: keep-alive` comments every 50 ms.
    Comments,
    /// A 200 SSE head, then one word of text every 200 ms, for ever.
    SlowText,
    /// A response head one byte every 50 ms, never finished.
    TricklingHead,
    /// A 200 SSE head, then a new tool-call index with empty arguments, as fast as it goes.
    NewToolIndexes,
}

/// A local server that answers every connection with `hostile` until the client leaves.
async fn hostile_server(hostile: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                // The request: read until its head ends (the body is small and ignored).
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = serve(&mut socket, hostile).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

async fn serve(socket: &mut tokio::net::TcpStream, hostile: Hostile) -> std::io::Result<()> {
    const HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if let Hostile::TricklingHead = hostile {
        let head = b"HTTP/1.1 200 OK\r\n";
        for byte in head {
            socket.write_all(&[*byte]).await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        loop {
            for byte in b"x-pad: a\r\n" {
                socket.write_all(&[*byte]).await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    socket.write_all(HEAD).await?;
    let mut n = 0u64;
    loop {
        let piece = match hostile {
            Hostile::EmptyDeltas => {
                "data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n".to_string()
            }
            Hostile::Comments => ": keep-alive\n\n".to_string(),
            Hostile::SlowText => format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{n} \"}}}}]}}\n\n"
            ),
            Hostile::NewToolIndexes => format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{n},\"function\":{{\"arguments\":\"\"}}}}]}}}}]}}\n\n"
            ),
            Hostile::TricklingHead => unreachable!("answered above"),
        };
        socket.write_all(piece.as_bytes()).await?;
        n += 1;
        match hostile {
            Hostile::NewToolIndexes => tokio::task::yield_now().await,
            Hostile::SlowText => tokio::time::sleep(Duration::from_millis(200)).await,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("go")],
        stream: true,
        ..Default::default()
    }
}

/// One call to `url` with the idle timeout and deadline given (no retries: each test looks
/// at one attempt), and how long it took.
async fn call(
    url: &str,
    idle: Duration,
    deadline: Duration,
    limits: ResponseLimits,
) -> (Result<ModelResponse, ModelError>, Duration) {
    let mut config = OpenAiConfig::new(url, "m");
    config.timeouts = Timeouts {
        request: Duration::from_secs(60),
        stall: idle,
        deadline,
    };
    config.retry.max_retries = 0;
    config.limits = limits;
    let provider = OpenAiProvider::new(config).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let started = Instant::now();
    let result = tokio::time::timeout(
        GUARD,
        provider.complete(&request(), tx, CancellationToken::new()),
    )
    .await
    .expect("the call ends by its own bounds, within the guard");
    (result, started.elapsed())
}

#[tokio::test]
async fn empty_deltas_do_not_reset_the_idle_timeout() {
    let url = hostile_server(Hostile::EmptyDeltas).await;
    let (result, took) = call(&url, Duration::from_secs(1), GUARD * 2, Default::default()).await;
    let error = result.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert_eq!(error.error_type(), "timeout");
    assert!(error.message.contains("--model-idle-timeout"), "{error}");
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn a_stream_that_gave_nothing_is_sent_again_within_the_retries() {
    let url = hostile_server(Hostile::EmptyDeltas).await;
    let mut config = OpenAiConfig::new(url, "m");
    config.timeouts.stall = Duration::from_secs(1);
    config.retry.max_retries = 1;
    config.retry.base_delay = Duration::from_millis(5);
    let provider = OpenAiProvider::new(config).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(
        GUARD,
        provider.complete(&request(), tx, CancellationToken::new()),
    )
    .await
    .expect("the call ends within the guard");
    let error = result.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    let mut retries = 0;
    while let Ok(event) = rx.try_recv() {
        if let ModelEvent::Retry { reason, .. } = event {
            assert!(reason.contains("--model-idle-timeout"), "{reason}");
            retries += 1;
        }
    }
    assert_eq!(retries, 1, "sent once more, then the error");
}

#[tokio::test]
async fn sse_comments_do_not_reset_the_idle_timeout() {
    let url = hostile_server(Hostile::Comments).await;
    let (result, took) = call(&url, Duration::from_secs(1), GUARD * 2, Default::default()).await;
    let error = result.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert!(error.message.contains("--model-idle-timeout"), "{error}");
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn slow_text_and_a_trickled_head_end_at_the_deadline() {
    // Slow text is progress (a piece every 200 ms, under the 1 s idle timeout), and header
    // bytes are not an answer: only the overall deadline ends either call.
    for hostile in [Hostile::SlowText, Hostile::TricklingHead] {
        let url = hostile_server(hostile).await;
        let (result, took) = call(
            &url,
            Duration::from_secs(1),
            Duration::from_secs(2),
            Default::default(),
        )
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
        assert!(error.message.contains("--model-timeout"), "{error}");
        assert!(took >= Duration::from_secs(2), "{took:?}");
    }
}

/// Tool-call indexes a run sends past the cap.
fn stress_calls() -> usize {
    std::env::var("TURNSTILE_STRESS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[tokio::test]
async fn endless_new_tool_indexes_stop_at_the_tool_call_cap() {
    let url = hostile_server(Hostile::NewToolIndexes).await;
    let cap = stress_calls();
    let limits = ResponseLimits {
        max_tool_calls: cap,
        ..Default::default()
    };
    let (result, _) = call(&url, Duration::from_secs(5), GUARD * 2, limits).await;
    let error = result.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert_eq!(error.error_type(), "response_too_large");
    assert!(
        error
            .message
            .contains(&format!("more than {cap} tool calls")),
        "{error}"
    );
    assert!(!error.retryable);
}

#[tokio::test]
async fn endless_new_tool_indexes_count_against_the_answer_bytes() {
    let url = hostile_server(Hostile::NewToolIndexes).await;
    // The cap on calls is out of reach: the bytes each empty call costs end the answer.
    let limits = ResponseLimits {
        max_tool_calls: usize::MAX,
        max_answer_bytes: 64 * 1024,
        ..Default::default()
    };
    let (result, _) = call(&url, Duration::from_secs(5), GUARD * 2, limits).await;
    let error = result.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::TooLarge, "{error}");
    assert!(error.message.contains("max_answer_bytes"), "{error}");
}

#[tokio::test]
async fn a_whole_answer_with_too_many_calls_is_refused_and_one_at_the_cap_is_read() {
    let answer = |n: usize| {
        let mut response =
            ScriptedResponse::tool_call("bash", serde_json::json!({"command": "true"}));
        for _ in 1..n {
            response = response.and_tool_call("bash", serde_json::json!({"command": "true"}));
        }
        response
    };
    for (calls, refused) in [(4, true), (3, false)] {
        for stream in [false, true] {
            // The script answers once: a fresh server for each call.
            let server = ScriptedServer::start(Script::new().respond(answer(calls)))
                .await
                .unwrap();
            let mut config = OpenAiConfig::new(server.url(), "m");
            config.limits.max_tool_calls = 3;
            let provider = OpenAiProvider::new(config).unwrap();
            let (tx, _rx) = mpsc::unbounded_channel();
            let request = ChatRequest {
                stream,
                ..request()
            };
            let result = provider
                .complete(&request, tx, CancellationToken::new())
                .await;
            match result {
                Err(e) if refused => assert_eq!(e.kind, ModelErrorKind::TooLarge, "{e}"),
                Ok(answer) if !refused => assert_eq!(answer.tool_calls.len(), calls),
                other => panic!("{calls} calls, stream {stream}: {other:?}"),
            }
        }
    }
}
