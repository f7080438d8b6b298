//! `session.shutdown` reports the session's totals as the Copilot CLI does: model calls and
//! tokens per model and the time in model calls, cumulative over every process that ran the
//! session, and how full the context the next request would fill is.

use crate::common;

use common::Fixture;
use serde_json::Value;
use turnstile_loop::{SendOptions, SessionHandle};
use turnstile_scripted_model::{Script, ScriptedResponse};

/// The data of every `session.shutdown` of the session, in order.
fn shutdowns(fx: &Fixture, id: turnstile_journal::Uuid) -> Vec<Value> {
    fx.journal(id)
        .iter()
        .filter(|e| e.event_type.as_str() == "session.shutdown")
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect()
}

#[tokio::test]
async fn totals_add_up_over_a_resume_and_name_each_model() {
    let script = Script::new()
        .respond(ScriptedResponse::text("one").with_usage(1000, 10))
        .respond(ScriptedResponse::text("two").with_usage(1100, 20))
        .respond(ScriptedResponse::text("three").with_usage(1200, 30));
    let fx = Fixture::start(script, |_| {}).await;
    let session = SessionHandle::create(&fx.root, None, fx.base_parts(|_| {})).unwrap();
    let id = session.id();
    for prompt in ["a", "b"] {
        session
            .send_and_wait(prompt, SendOptions::default())
            .await
            .unwrap();
    }
    session.shutdown().await.unwrap();

    // The resume goes on with the journal's model whatever the parts name; the second
    // process's call goes to another model through a recorded switch.
    let (resumed, report) = SessionHandle::resume(
        &fx.root,
        id,
        fx.base_parts(|c| c.model = "other-model".into()),
    )
    .unwrap();
    assert_eq!(report.model, "test-model");
    resumed.switch_model("other-model", None).await.unwrap();
    resumed
        .send_and_wait("c", SendOptions::default())
        .await
        .unwrap();
    resumed.shutdown().await.unwrap();

    let all = shutdowns(&fx, id);
    assert_eq!(all.len(), 2);
    let first = &all[0]["modelMetrics"]["test-model"];
    assert_eq!(first["requests"]["count"], 2);
    assert_eq!(first["usage"]["inputTokens"], 2100);
    assert_eq!(first["usage"]["outputTokens"], 30);
    assert_eq!(first["totalNanoAiu"], 0);
    // The second process adds its own call under its own model and keeps the first's.
    let second = &all[1]["modelMetrics"];
    assert_eq!(second["test-model"], *first);
    assert_eq!(second["other-model"]["requests"]["count"], 1);
    assert_eq!(second["other-model"]["usage"]["inputTokens"], 1200);
    assert!(
        all[1]["totalApiDurationMs"].as_u64().unwrap()
            >= all[0]["totalApiDurationMs"].as_u64().unwrap()
    );
    for s in &all {
        assert_eq!(s["totalPremiumRequests"], 0);
        assert_eq!(s["totalNanoAiu"], 0);
        let current = s["currentTokens"].as_u64().unwrap();
        let parts: u64 = [
            "systemTokens",
            "conversationTokens",
            "toolDefinitionsTokens",
        ]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum();
        assert!(current > 0 && parts > 0, "{s}");
    }
    // The second context holds one more exchange than the first.
    assert!(
        all[1]["conversationTokens"].as_u64().unwrap()
            > all[0]["conversationTokens"].as_u64().unwrap()
    );
    fx.audit_clean(id);
}

#[tokio::test]
async fn every_call_is_a_request_answered_or_not_with_usage_or_without() {
    // No usage from the server, then a refused call, then one with usage.
    let script = Script::new()
        .respond(ScriptedResponse::text("one").with_raw_usage(Value::Null))
        .respond(ScriptedResponse::error_message(400, "refused"))
        .respond(ScriptedResponse::text("three").with_usage(1200, 30));
    let fx = Fixture::start(script, |_| {}).await;
    let session = SessionHandle::create(&fx.root, None, fx.base_parts(|_| {})).unwrap();
    let id = session.id();
    for prompt in ["a", "b", "c"] {
        // The refused call ends its message with an error; the session goes on.
        let _ = session.send_and_wait(prompt, SendOptions::default()).await;
    }
    session.shutdown().await.unwrap();

    let all = shutdowns(&fx, id);
    let metrics = &all[0]["modelMetrics"]["test-model"];
    let report = fx.audit_clean(id);
    assert_eq!(report.llm_calls, 3);
    assert_eq!(metrics["requests"]["count"], 3);
    assert_eq!(metrics["usage"]["inputTokens"], 1200);
    let main = &all[0]["agentMetrics"]["main"];
    assert_eq!(main["modelMetrics"]["test-model"], *metrics);
}
