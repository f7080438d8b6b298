//! What a broken or hostile client gets: a clear JSON-RPC error for every bad frame or call,
//! and a server that keeps serving (the same connection where the stream allows it, other
//! connections always). Everything goes over a real TCP socket.

use crate::common;

use common::{Client, TestServer, create_params, is_idle, no_answers, types};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

const PING: &[u8] =
    br#"{"jsonrpc":"2.0","id":99,"method":"ping","params":{"message":"still there"}}"#;

async fn assert_alive(client: &mut Client) {
    let result = client.ok("ping", json!({"message": "alive?"})).await;
    assert_eq!(result["message"], "pong: alive?");
    assert_eq!(result["protocolVersion"], 3);
}

fn code(error: &Value) -> i64 {
    error["code"].as_i64().expect("error code")
}

#[tokio::test]
async fn a_frame_with_a_short_content_length_gets_a_parse_error_and_the_connection_goes_on() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    // Declares 10 bytes of a longer body: the 10 bytes are not JSON, the rest is skipped.
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut raw = b"Content-Length: 10\r\n\r\n".to_vec();
    raw.extend_from_slice(body);
    client.send_raw(&raw).await;
    let error = client.next().await.unwrap();
    assert_eq!(error["id"], Value::Null);
    assert_eq!(code(&error["error"]), codes::PARSE_ERROR);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid JSON")
    );
    client.send_body(PING).await;
    let pong = client.next().await.unwrap();
    assert_eq!(pong["id"], 99, "{pong}");
    assert_eq!(pong["result"]["message"], "pong: still there");
    t.stop().await;
}

#[tokio::test]
async fn a_header_without_content_length_is_refused() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    client
        .send_raw(b"Content-Length: lots\r\n\r\nContent-Type: x\r\nContent-Length: abc\r\n\r\n")
        .await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::PARSE_ERROR);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Content-Length")
    );
    let second = client.next().await.unwrap();
    assert_eq!(code(&second["error"]), codes::PARSE_ERROR);
    assert_alive(&mut client).await;
    t.stop().await;
}

#[tokio::test]
async fn a_header_block_with_no_content_length_at_all_gets_a_parse_error() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut frame = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n".to_vec();
    frame.extend_from_slice(body);
    client.send_raw(&frame).await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::PARSE_ERROR, "{error}");
    assert_eq!(error["id"], Value::Null);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no Content-Length"),
        "{error}"
    );
    assert_alive(&mut client).await;
    t.stop().await;
}

#[tokio::test]
async fn request_ids_come_back_exactly_as_sent() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    for id in [
        "123456789012345678901234567890",
        "18446744073709551616",
        "-7",
        "1.0e3",
        r#""a\u00e9""#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{}}}}"#);
        client.send_body(body.as_bytes()).await;
        let answer = String::from_utf8(client.next_raw().await.unwrap()).unwrap();
        assert!(
            answer.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)),
            "{answer}"
        );
        // An error answer keeps the id too.
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"no.such.method"}}"#);
        client.send_body(body.as_bytes()).await;
        let answer = String::from_utf8(client.next_raw().await.unwrap()).unwrap();
        assert!(
            answer.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"#)),
            "{answer}"
        );
    }
    t.stop().await;
}

#[tokio::test]
async fn a_large_frame_with_no_room_in_the_budget_is_refused_and_the_client_goes_on() {
    let t = TestServer::start(|c| {
        c.max_frame_bytes = 200 * 1024;
        c.inflight_frame_bytes = 200 * 1024;
        c.frame_budget_wait = std::time::Duration::from_millis(50);
    })
    .await;
    // One client holds most of the budget, half-way through its frame.
    let mut holder = t.client().await;
    let mut partial = format!("Content-Length: {}\r\n\r\n", 150 * 1024).into_bytes();
    partial.resize(partial.len() + 100 * 1024, b' ');
    holder.send_raw(&partial).await;
    // Another one's large frame finds no room: refused with the reason, skipped.
    let mut other = t.client().await;
    let mut frame = format!("Content-Length: {}\r\n\r\n", 120 * 1024).into_bytes();
    frame.resize(frame.len() + 120 * 1024, b' ');
    // Once the holder's frame is being read, the budget is in use.
    let server = t.server.clone();
    common::eventually(|| server.frame_budget_available() < 120 * 1024).await;
    other.send_raw(&frame).await;
    let error = other.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::SERVER_BUSY, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("budget"),
        "{error}"
    );
    assert_alive(&mut other).await;
    drop(holder);
    t.stop().await;
}

#[tokio::test]
async fn a_truncated_frame_is_reported_and_the_server_keeps_serving() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    client
        .send_raw(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\",")
        .await;
    client.close_write().await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::PARSE_ERROR);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("truncated") && message.contains("100"),
        "{message}"
    );
    assert_eq!(
        client.next().await,
        None,
        "the connection ends after a truncated frame"
    );
    let mut other = t.client().await;
    assert_alive(&mut other).await;
    t.stop().await;
}

#[tokio::test]
async fn invalid_json_a_batch_and_non_requests_get_errors() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;

    client
        .send_body(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::PARSE_ERROR);

    client
        .send_body(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#)
        .await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::INVALID_REQUEST);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );

    client.send_body(br#"{"id":3,"method":"ping"}"#).await;
    let error = client.next().await.unwrap();
    assert_eq!(
        (error["id"].clone(), code(&error["error"])),
        (json!(3), codes::INVALID_REQUEST)
    );

    client.send_body(br#""just a string""#).await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::INVALID_REQUEST);

    // A notification of an unknown method gets no answer at all (JSON-RPC 2.0).
    client
        .send_body(br#"{"jsonrpc":"2.0","method":"no.such.thing"}"#)
        .await;
    assert_alive(&mut client).await;
    t.stop().await;
}

#[tokio::test]
async fn an_oversized_frame_is_refused_with_the_limit_and_skipped() {
    let t = TestServer::start(|c| c.max_frame_bytes = 1024).await;
    let mut client = t.client().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"message":"{}"}}}}"#,
        "x".repeat(4096)
    );
    client.send_body(big.as_bytes()).await;
    let error = client.next().await.unwrap();
    assert_eq!(code(&error["error"]), codes::INVALID_REQUEST);
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1024") && message.contains(&big.len().to_string()),
        "{message}"
    );
    assert_alive(&mut client).await;
    t.stop().await;
}

#[tokio::test]
async fn unknown_methods_and_wrong_params_get_clear_errors() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;

    let error = client.err("session.teleport", json!({})).await;
    assert_eq!(code(&error), codes::METHOD_NOT_FOUND);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("session.teleport")
    );

    let error = client.err("ping", json!({"message": 42})).await;
    assert_eq!(code(&error), codes::INVALID_PARAMS);
    assert!(
        error["message"].as_str().unwrap().contains("message"),
        "{error}"
    );

    let error = client
        .err(
            "session.send",
            json!({"sessionId": "8b5f1d9e-4a44-4f53-9a3e-6f0f0c7d7a11", "prompt": ["not", "text"]}),
        )
        .await;
    assert_eq!(code(&error), codes::INVALID_PARAMS);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("prompt") && message.contains("sequence"),
        "{message}"
    );

    let error = client.err("session.send", json!({"prompt": "hi"})).await;
    assert_eq!(code(&error), codes::INVALID_PARAMS);
    assert!(error["message"].as_str().unwrap().contains("sessionId"));

    let error = client
        .err(
            "session.send",
            json!({"sessionId": "../../etc", "prompt": "hi"}),
        )
        .await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Session not found for sessionId: ../../etc."),
        "{error}"
    );

    let response = client.call("session.list", json!([1, 2])).await;
    assert_eq!(code(&response["error"]), codes::INVALID_PARAMS);

    let error = client
        .err(
            "session.create",
            json!({"provider": {"type": "vertex", "baseUrl": "http://127.0.0.1:9"}}),
        )
        .await;
    assert_eq!(code(&error), codes::INVALID_PARAMS);
    assert!(error["message"].as_str().unwrap().contains("vertex"));

    assert_alive(&mut client).await;
    t.stop().await;
}

#[tokio::test]
async fn a_send_to_an_unknown_session_is_an_error() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10";
    let error = client
        .err("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    assert!(error["message"].as_str().unwrap().contains(id));
    let error = client
        .err(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": "r", "result": "x"}),
        )
        .await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    let error = client.err("session.resume", json!({"sessionId": id})).await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    assert_alive(&mut client).await;
    t.stop().await;
}

/// The `user.message` contents among `events`.
fn prompts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "user.message")
        .map(|e| e["data"]["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_session_open_in_two_clients_sends_its_events_to_both_and_closes_with_the_last() {
    let model = ScriptedServer::start(Script::new().text("one").text("two").text("three"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut first = t.client().await;
    let created = first
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    first
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    first.events_until(no_answers, is_idle).await;
    first.ok("session.detach", json!({"sessionId": id})).await;
    assert_eq!(t.server.open_sessions(), 0);

    let mut a = t.client().await;
    let mut b = t.client().await;
    let resume = create_params(&model.url(), json!({"sessionId": id}));
    a.ok("session.resume", resume.clone()).await;
    b.ok("session.resume", resume).await;
    assert_eq!(t.server.open_sessions(), 1);

    // Either can send; both see every event of the message.
    b.ok("session.send", json!({"sessionId": id, "prompt": "from b"}))
        .await;
    let seen_by_b = b.events_until(no_answers, is_idle).await;
    let seen_by_a = a.events_until(no_answers, is_idle).await;
    assert_eq!(prompts(&seen_by_b), ["from b"]);
    assert_eq!(prompts(&seen_by_a), ["from b"]);
    assert_eq!(
        types(&seen_by_a).last().map(String::as_str),
        Some("session.idle")
    );

    // A connection that never opened it may act on it too, as with the Copilot CLI.
    let mut c = t.client().await;
    assert_eq!(
        c.ok("session.mode.get", json!({"sessionId": id})).await,
        "interactive"
    );

    // The first to leave does not close it for the other.
    drop(a);
    b.ok(
        "session.send",
        json!({"sessionId": id, "prompt": "after a left"}),
    )
    .await;
    let seen_by_b = b.events_until(no_answers, is_idle).await;
    assert_eq!(prompts(&seen_by_b), ["after a left"]);
    assert_eq!(t.server.open_sessions(), 1);

    // The last one leaving closes it; a late call hears the runtime's words and why.
    drop(b);
    let server = t.server.clone();
    common::eventually(|| server.open_sessions() == 0).await;
    let error = c
        .err("session.send", json!({"sessionId": id, "prompt": "late"}))
        .await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("Session not found for sessionId: {id}."))
            && message.contains("disconnected"),
        "{message}"
    );
    // One writer throughout: one session.start, and every resume closed what came before.
    let lines = common::journal_lines(&t.journal(&id));
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["type"] == "session.start")
            .count(),
        1
    );
    assert_eq!(lines.last().unwrap()["type"], "session.shutdown");
    assert_eq!(
        prompts(&lines),
        ["hi", "from b", "after a left"],
        "every prompt recorded once, in order"
    );
    t.stop().await;
}

#[tokio::test]
async fn deleting_a_session_open_in_another_client_closes_it_there_first() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut a = t.client().await;
    let mut b = t.client().await;
    let created = a
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let deleted = b.ok("session.delete", json!({"sessionId": id})).await;
    assert_eq!(deleted, json!({"success": true}));
    assert!(!t.journal(&id).exists());
    assert_eq!(t.server.open_sessions(), 0);
    // The client that had it open saw it end.
    let seen = a
        .events_until(no_answers, |e| e["type"] == "session.shutdown")
        .await;
    assert_eq!(
        types(&seen).last().map(String::as_str),
        Some("session.shutdown")
    );
    let error = a
        .err("session.send", json!({"sessionId": id, "prompt": "x"}))
        .await;
    assert_eq!(code(&error), codes::SESSION_NOT_FOUND);
    t.stop().await;
}

#[tokio::test]
async fn resume_and_metadata_of_ids_that_are_not_uuids_answer_not_found() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    for bad in ["../../etc", "..", "/tmp", "a/b", ""] {
        let meta = client
            .ok("session.getMetadata", json!({"sessionId": bad}))
            .await;
        assert_eq!(meta, json!({}), "{bad:?}");
        let deleted = client.ok("session.delete", json!({"sessionId": bad})).await;
        assert_eq!(deleted["success"], false);
        assert!(
            deleted["error"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Error: Session file not found for {bad} ")),
            "{deleted}"
        );
        let error = client
            .err("session.resume", json!({"sessionId": bad}))
            .await;
        assert_eq!(code(&error), codes::SESSION_NOT_FOUND, "{bad:?}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Session not found: {bad}.")),
            "{error}"
        );
    }
    let unknown = "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10";
    let error = client
        .err("session.resume", json!({"sessionId": unknown}))
        .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Session not found: {unknown}.")),
        "{error}"
    );
    // Nothing was created on the way.
    assert!(!t.dir.path().join("state").exists() || t.root().session_ids().unwrap().is_empty());
    t.stop().await;
}

#[tokio::test]
async fn a_session_held_by_another_process_names_the_holder() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client.ok("session.detach", json!({"sessionId": id})).await;
    // A writer that is not a server (a `turnstile run`, say) holds it: nobody to ask for a
    // handover (the lock is per open file, so it conflicts within one process too).
    let lock = turnstile_journal::writer_lock::WriterLock::acquire(
        &t.root()
            .session(turnstile_journal::parse_session_id(&id).unwrap())
            .lock,
    )
    .unwrap();
    let error = client
        .err(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    assert_eq!(code(&error), codes::SESSION_IN_USE);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("in use by another writer") && message.contains("pid"),
        "{message}"
    );
    drop(lock);
    // Once it is free, the resume goes through.
    client
        .ok(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    t.stop().await;
}

#[tokio::test]
async fn stdio_style_serving_ends_with_the_stream_and_closes_sessions() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = turnstile_server::ServerConfig::new(turnstile_journal::StateRoot::new(
        dir.path().join("s"),
    ));
    config.default_cwd = dir.path().to_path_buf();
    let server = turnstile_server::Server::new(config);
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = {
        let server = server.clone();
        tokio::spawn(
            async move { turnstile_server::serve_io(&server, server_read, server_write).await },
        )
    };
    let (client_read, mut client_write) = tokio::io::split(client_end);
    let mut reader = turnstile_server::framing::FrameReader::new(
        tokio::io::BufReader::new(client_read),
        1 << 20,
    );
    let create = json!({"jsonrpc":"2.0","id":1,"method":"session.create","params": create_params(&model.url(), json!({}))});
    turnstile_server::framing::write_frame(&mut client_write, create.to_string().as_bytes())
        .await
        .unwrap();
    let id = loop {
        let frame = tokio::time::timeout(common::GUARD, reader.next_frame())
            .await
            .unwrap();
        let Ok(Some(turnstile_server::framing::Frame::Body(body))) = frame else {
            panic!("{frame:?}")
        };
        let msg: Value = serde_json::from_slice(&body).unwrap();
        if msg["id"] == 1 {
            break msg["result"]["sessionId"].as_str().unwrap().to_owned();
        }
    };
    assert_eq!(server.open_sessions(), 1);
    drop(client_write);
    drop(reader);
    tokio::time::timeout(common::GUARD, serving)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(server.open_sessions(), 0);
    let journal = dir.path().join("s").join(&id).join("events.jsonl");
    let lines = common::journal_lines(&journal);
    assert_eq!(lines.last().unwrap()["type"], "session.shutdown");
}

#[tokio::test]
async fn every_method_of_the_schema_answers_clearly() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/schema/api.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fn walk(node: &Value, out: &mut Vec<String>) {
        if let Some(method) = node.get("rpcMethod").and_then(Value::as_str) {
            out.push(method.to_owned());
            return;
        }
        if let Value::Object(map) = node {
            for v in map.values() {
                walk(v, out);
            }
        }
    }
    let mut methods = Vec::new();
    walk(&schema["server"], &mut methods);
    walk(&schema["session"], &mut methods);
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let mut unsupported = 0;
    for method in methods.iter().filter(|m| *m != "runtime.shutdown") {
        let answer = client
            .call(
                method,
                json!({"sessionId": "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10"}),
            )
            .await;
        if answer["error"]["code"] == codes::METHOD_NOT_FOUND {
            unsupported += 1;
            let message = answer["error"]["message"].as_str().unwrap();
            // A method the Copilot CLI does not serve either is answered in its exact words,
            // the reason in `data`.
            let as_the_cli = message == format!("Unhandled method {method}")
                && answer["error"]["data"]["reason"].as_str().is_some();
            // A gate the runtime keeps closed too (`agentRegistry.spawn`), in its words.
            let gate_closed = message == format!("{method} is not enabled on this server");
            assert!(
                as_the_cli
                    || gate_closed
                    || message.starts_with(&format!(
                        "Unhandled method {method}: not supported by turnstile ("
                    )),
                "{method}: {answer}"
            );
        }
    }
    // Some methods are still refused (so the messages above were looked at) and not all: the
    // count itself falls as methods are served.
    assert!(
        unsupported > 0 && unsupported < methods.len(),
        "{unsupported} of {}",
        methods.len()
    );
    assert_alive(&mut client).await;
    t.stop().await;
}
