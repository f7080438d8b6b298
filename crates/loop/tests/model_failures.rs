//! The model's failures through a session on a scripted OpenAI-compatible server on
//! 127.0.0.1: a 500 retried within the same call then a 400 ending the message, a stream
//! dropped after output began (never resent; the hooks told), a server that stalls, and a
//! stream that is not SSE. Each ends the message as a `session.error` and leaves a journal
//! the replay crate's audit passes.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, data, drain, types};
use serde_json::{Value, json};
use turnstile_loop::{Outcome, SendOptions, SessionHandle};
use turnstile_providers::{ModelErrorKind, OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedResponse};

async fn fixture(script: Script) -> Fixture {
    Fixture::start(script, |_| {}).await
}

#[tokio::test]
async fn retry_after_500_then_error_on_400() {
    let script = Script::new()
        .respond(ScriptedResponse::error_message(500, "overloaded"))
        .text("recovered")
        .respond(ScriptedResponse::error_message(
            400,
            "bad request: context too long",
        ));
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    assert_eq!(
        session
            .send_and_wait("one", SendOptions::default())
            .await
            .unwrap(),
        Outcome::Idle
    );
    let live = drain(&mut rx);
    assert_eq!(
        types(&live)
            .iter()
            .filter(|t| **t == "assistant.turn_retry")
            .count(),
        1
    );
    assert_eq!(
        types(&live)
            .iter()
            .filter(|t| **t == "assistant.turn_start")
            .count(),
        1,
        "a retry is the same LLM call"
    );

    let outcome = session
        .send_and_wait("two", SendOptions::default())
        .await
        .unwrap();
    match outcome {
        Outcome::Failed {
            status_code,
            message,
            ..
        } => {
            assert_eq!(status_code, Some(400));
            assert!(message.contains("context too long"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let live = drain(&mut rx);
    let t = types(&live);
    let err = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.error")
        .unwrap();
    assert_eq!(data(err)["statusCode"], 400);
    assert_eq!(t.last(), Some(&"session.idle"));
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn dropped_stream_is_an_error_without_a_resend_and_notifies_hooks() {
    let script = Script::new().respond(
        ScriptedResponse::text("this answer is cut off after two chunks").drop_after_chunks(2),
    );
    let fx = fixture(script).await;
    let hooks_dir = fx.work.path().join(".github/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    std::fs::write(
        hooks_dir.join("notify.json"),
        json!({"version": 1, "hooks": {
            "errorOccurred": [{"type": "command", "bash": "cat > error-hook.json"}],
            "sessionEnd": [{"type": "command", "bash": "cat > end-hook.json"}],
        }})
        .to_string(),
    )
    .unwrap();
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let outcome = session
        .send_and_wait("tell me", SendOptions::default())
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::Failed { error_type, .. } if *error_type == ModelErrorKind::Stream),
        "{outcome:?}"
    );
    assert_eq!(
        fx.server.requests().len(),
        1,
        "never resent after output began"
    );
    session.shutdown().await.unwrap();
    let error_input: Value = serde_json::from_str(
        &std::fs::read_to_string(fx.work.path().join("error-hook.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(error_input["error"]["name"], "stream");
    let end_input: Value = serde_json::from_str(
        &std::fs::read_to_string(fx.work.path().join("end-hook.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(end_input["sessionId"], session.id().to_string());
    let report = fx.audit_clean(session.id());
    assert_eq!(report.errors, 1);
}

#[tokio::test]
async fn a_hanging_server_hits_the_stall_timeout() {
    let script = Script::new().respond(
        ScriptedResponse::text("never finished")
            .drop_after_chunks(1)
            .hang(),
    );
    let fx = fixture(script).await;
    let mut parts = fx.hooked_parts(|_| {});
    let mut oc = OpenAiConfig::new(fx.server.url(), "test-model");
    oc.timeouts.stall = Duration::from_millis(300);
    // One attempt: a stream that gave nothing would be sent again (`model_bounds.rs` of the
    // providers covers that).
    oc.retry.max_retries = 0;
    parts.provider = Arc::new(OpenAiProvider::new(oc).unwrap());
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let outcome = session
        .send_and_wait("wait", SendOptions::default())
        .await
        .unwrap();
    match outcome {
        Outcome::Failed {
            error_type,
            message,
            ..
        } => assert!(
            error_type == ModelErrorKind::Timeout || message.contains("stall"),
            "{error_type}: {message}"
        ),
        other => panic!("{other:?}"),
    }
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn malformed_sse_is_a_session_error() {
    let fx = fixture(Script::new().respond(ScriptedResponse::text("garbled").malformed())).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    let outcome = session
        .send_and_wait("hello", SendOptions::default())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Failed { .. }), "{outcome:?}");
    let live = drain(&mut rx);
    let t = types(&live);
    assert_eq!(t.last(), Some(&"session.idle"));
    assert!(t.contains(&"session.error"));
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}
