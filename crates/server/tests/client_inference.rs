//! `llmInference.*`: a client that answers the sessions' model calls itself. The client here
//! speaks the frames over a real socket as the SDK's request handler does: it receives the
//! request (`httpRequestStart`, then the body in `httpRequestChunk`), and answers with
//! `httpResponseStart` and `httpResponseChunk` frames; no model server is reached.

use serde_json::{Value, json};

use crate::common::{Client, TestServer, create_params, journal_lines};

/// One request the server sent to the client: its start frame and its body.
struct Asked {
    start: Value,
    body: Value,
}

/// Reads until the server has sent a whole model request (start and body), answering every
/// request of the server with `{}`; events and other messages are kept in `seen`.
async fn next_request(client: &mut Client, seen: &mut Vec<Value>) -> Asked {
    let mut start: Option<Value> = None;
    loop {
        let msg = client
            .next()
            .await
            .expect("stream ended before a model request");
        let Some(method) = msg["method"].as_str() else {
            continue; // a response to one of the client's frames
        };
        if msg.get("id").is_some() {
            let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
            client.send_body(reply.to_string().as_bytes()).await;
        }
        match method {
            "llmInference.httpRequestStart" => start = Some(msg["params"].clone()),
            "llmInference.httpRequestChunk" => {
                let chunk = &msg["params"];
                let start = start.take().expect("a body before its request's start");
                assert_eq!(chunk["requestId"], start["requestId"]);
                assert_eq!(chunk["end"], true, "the body comes in one chunk: {chunk}");
                let body = serde_json::from_str(chunk["data"].as_str().unwrap()).unwrap();
                return Asked { start, body };
            }
            _ => seen.push(msg),
        }
    }
}

/// Reads until `done` matches an event, answering the server's requests with `{}`; every
/// message read is returned.
async fn until_event(client: &mut Client, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let msg = client.next().await.expect("stream ended before the event");
        if msg.get("id").is_some() && msg["method"].is_string() {
            let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
            client.send_body(reply.to_string().as_bytes()).await;
        }
        let stop = msg["method"] == "session.event" && done(&msg["params"]["event"]);
        seen.push(msg);
        if stop {
            return seen;
        }
    }
}

/// The response frames of a streamed Chat Completions answer saying `text`, sent as the SDK
/// sends a fetch body (base64 pieces).
async fn answer_text(client: &mut Client, request_id: &Value, text: &str) {
    client
        .start_request(
            "llmInference.httpResponseStart",
            json!({"requestId": request_id, "status": 200,
                   "headers": {"content-type": ["text/event-stream"]}}),
        )
        .await;
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let sse = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    );
    use base64::Engine as _;
    let (a, b) = sse.as_bytes().split_at(sse.len() / 2);
    for piece in [a, b] {
        let data = base64::engine::general_purpose::STANDARD.encode(piece);
        client
            .start_request(
                "llmInference.httpResponseChunk",
                json!({"requestId": request_id, "data": data, "binary": true, "end": false}),
            )
            .await;
    }
    client
        .start_request(
            "llmInference.httpResponseChunk",
            json!({"requestId": request_id, "data": "", "end": true}),
        )
        .await;
}

fn event_of<'a>(seen: &'a [Value], kind: &str) -> Option<&'a Value> {
    seen.iter()
        .filter(|m| m["method"] == "session.event")
        .map(|m| &m["params"]["event"])
        .find(|e| e["type"] == kind)
}

#[tokio::test]
async fn the_client_answers_a_byok_sessions_model_call() {
    let ts = TestServer::start(|_| {}).await;
    let mut client = ts.client().await;
    assert_eq!(
        client.ok("llmInference.setProvider", json!({})).await,
        json!({"success": true})
    );
    // Nothing listens at the provider's URL: only the client can answer.
    let params = create_params("https://byok.invalid/v1", json!({"streaming": true}));
    let created = client.ok("session.create", params).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "Say OK."}),
        )
        .await;

    let mut seen = Vec::new();
    let asked = next_request(&mut client, &mut seen).await;
    let start = &asked.start;
    assert_eq!(start["sessionId"], id.as_str());
    assert_eq!(
        start["agentId"],
        id.as_str(),
        "the main agent is the session"
    );
    assert_eq!(start["interactionType"], "conversation-agent");
    assert_eq!(start["method"], "POST");
    assert_eq!(start["transport"], "http");
    assert_eq!(start["url"], "https://byok.invalid/v1/chat/completions");
    assert_eq!(
        start["headers"]["authorization"],
        json!(["Bearer test-key"]),
        "the provider's credential goes to the client that makes the request"
    );
    assert_eq!(asked.body["model"], "scripted-model");
    assert_eq!(asked.body["stream"], true);

    answer_text(&mut client, &start["requestId"], "OK from the client.").await;
    let seen = until_event(&mut client, |e| e["type"] == "session.idle").await;
    let message = event_of(&seen, "assistant.message").expect("an assistant.message");
    assert_eq!(message["data"]["content"], "OK from the client.");
    assert!(event_of(&seen, "session.error").is_none());
    // The credential went to the client only: nothing of it is in the journal.
    let journal = std::fs::read_to_string(ts.journal(&id)).unwrap();
    assert!(!journal.contains("test-key"));
    ts.stop().await;
}

#[tokio::test]
async fn a_client_error_fails_the_turn_with_the_runtimes_text() {
    let ts = TestServer::start(|config| config.default_model.retry.max_retries = 0).await;
    let mut client = ts.client().await;
    client.ok("llmInference.setProvider", json!({})).await;
    let created = client.ok("session.create", json!({})).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "Say OK."}),
        )
        .await;
    let mut seen = Vec::new();
    let asked = next_request(&mut client, &mut seen).await;
    assert_eq!(asked.start["sessionId"], id.as_str());
    let request_id = asked.start["requestId"].clone();
    // What the SDK's adapter sends when the handler throws: a failure head, then the error.
    client
        .start_request(
            "llmInference.httpResponseStart",
            json!({"requestId": request_id, "status": 502, "headers": {}}),
        )
        .await;
    client
        .start_request(
            "llmInference.httpResponseChunk",
            json!({"requestId": request_id, "data": "", "end": true,
                   "error": {"message": "synthetic-callback-transport-failure"}}),
        )
        .await;
    let seen = until_event(&mut client, |e| e["type"] == "session.idle").await;
    let error = event_of(&seen, "session.error").expect("the turn failed");
    let message = error["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("Failed native model HTTP request: synthetic-callback-transport-failure"),
        "{message}"
    );
    // The journal says so too, and the session takes the next prompt.
    let lines = journal_lines(&ts.journal(&id));
    assert!(lines.iter().any(|l| l["type"] == "session.error"));
    ts.stop().await;
}

#[tokio::test]
async fn aborting_the_turn_cancels_the_clients_request() {
    let ts = TestServer::start(|_| {}).await;
    let mut client = ts.client().await;
    client.ok("llmInference.setProvider", json!({})).await;
    let created = client.ok("session.create", json!({})).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "Say OK."}),
        )
        .await;
    let mut seen = Vec::new();
    let asked = next_request(&mut client, &mut seen).await;
    let request_id = asked.start["requestId"].clone();
    // The client never answers; the user aborts.
    client
        .start_request("session.abort", json!({"sessionId": id}))
        .await;
    let mut cancelled = false;
    let mut idle = false;
    while !(cancelled && idle) {
        let msg = client.next().await.expect("stream ended before the cancel");
        if msg.get("id").is_some() && msg["method"].is_string() {
            let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
            client.send_body(reply.to_string().as_bytes()).await;
        }
        if msg["method"] == "llmInference.httpRequestChunk" && msg["params"]["cancel"] == true {
            assert_eq!(msg["params"]["requestId"], request_id);
            cancelled = true;
        }
        if msg["method"] == "session.event" && msg["params"]["event"]["type"] == "session.idle" {
            idle = true;
        }
    }
    // A frame that comes after the call is over is not taken.
    let late = client
        .ok(
            "llmInference.httpResponseStart",
            json!({"requestId": request_id, "status": 200, "headers": {}}),
        )
        .await;
    assert_eq!(late, json!({"accepted": false}));
    ts.stop().await;
}

#[tokio::test]
async fn one_client_at_a_time_answers_model_calls() {
    let ts = TestServer::start(|_| {}).await;
    let mut first = ts.client().await;
    first.ok("llmInference.setProvider", json!({})).await;
    let mut second = ts.client().await;
    let refused = second.err("llmInference.setProvider", json!({})).await;
    assert_eq!(
        refused["message"],
        "Another client is already the LLM inference provider."
    );
    // Asking again is no harm to the provider itself.
    first.ok("llmInference.setProvider", json!({})).await;
    // A frame for a request nobody made is not taken, and an id of another connection's
    // call could not be answered by this one.
    let unknown = second
        .ok(
            "llmInference.httpResponseChunk",
            json!({"requestId": "no-such-request", "data": "x"}),
        )
        .await;
    assert_eq!(unknown, json!({"accepted": false}));
    // Once the provider's connection is gone, another client may take its place.
    drop(first);
    let mut taken = false;
    for _ in 0..200 {
        let response = second.call("llmInference.setProvider", json!({})).await;
        if response.get("error").is_none() {
            taken = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(taken, "the slot was freed when its connection closed");
    ts.stop().await;
}
