//! The steps the SDK-flow tests share: a scripted model with a server and a client of it, a
//! session resumed, a client tool answered, a client leaving, the journal's lines of one type,
//! and the end of a test (detach, audit, stop).

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::ServerConfig;

use super::{Client, TestServer, audit_clean, create_params, eventually, no_answers, types};

/// A model serving `script`, a server (its config adjusted by `tweak`) and a client
/// connected to it.
pub async fn with_model(
    script: Script,
    tweak: impl FnOnce(&mut ServerConfig),
) -> (ScriptedServer, TestServer, Client) {
    let model = ScriptedServer::start(script)
        .await
        .expect("the scripted model starts");
    let t = TestServer::start(tweak).await;
    let client = t.client().await;
    (model, t, client)
}

/// Resumes session `id` against the model at `url` (`extra`: more `session.resume` params);
/// the result.
pub async fn resume(client: &mut Client, url: &str, id: &str, extra: Value) -> Value {
    let mut extra = extra;
    extra["sessionId"] = json!(id);
    client.ok("session.resume", create_params(url, extra)).await
}

/// Sends `prompt` to session `id` from `client` and reads its events until the session is
/// idle (server-to-client requests answered with `{}`); those events.
pub async fn send_until_idle(client: &mut Client, id: &str, prompt: &str) -> Vec<Value> {
    client
        .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
        .await;
    client.events_until(no_answers, super::is_idle).await
}

/// Answers the client tool call `request_id` of session `id` with `result`; the answer.
pub async fn answer_tool(
    client: &mut Client,
    id: &str,
    request_id: &Value,
    result: impl Into<Value>,
) -> Value {
    let result = result.into();
    client
        .ok(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": request_id, "result": result}),
        )
        .await
}

/// Reads events until one of type `ty`, answering server-to-client requests with `{}`; that
/// event.
pub async fn next_event(client: &mut Client, ty: &str) -> Value {
    let events = client.events_until(no_answers, |e| e["type"] == ty).await;
    events.into_iter().last().expect("the event")
}

/// Drops `client` and waits until the server has closed the session it was the last to have.
pub async fn leave(t: &TestServer, client: Client) {
    drop(client);
    let server = t.server.clone();
    eventually(|| server.open_sessions() == 0).await;
}

/// The lines (or events) of type `ty`, in order.
pub fn of_type<'a>(lines: &'a [Value], ty: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == ty).collect()
}

/// The contents of the `tool` messages of a model request, in order.
pub fn tool_contents(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].clone())
        .collect()
}

/// The journal of a suspended session: it ends with `session.shutdown`, and no line of the
/// types in `closing` closed what was left open.
pub fn assert_left_open(journal: &[Value], closing: &[&str]) {
    let kinds = types(journal);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("session.shutdown"),
        "{kinds:?}"
    );
    for closing in closing {
        assert!(
            !kinds.iter().any(|k| k == closing),
            "{closing} in {kinds:?}"
        );
    }
}

/// Detaches `client` from session `id`, asserts the journal's audit clean and stops the server.
pub async fn detach_audit_stop(t: TestServer, client: &mut Client, id: &str) {
    client.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(id));
    t.stop().await;
}
