//! The TCP listener serves a client only after `connect` with the connection token: another
//! local user who can reach 127.0.0.1 cannot create a session, so cannot make the server run
//! a provider's `apiKeyCommand` or a session's `mcpServers`. Real sockets; the effects checked
//! are the session directory and the files those commands would write. The answers are the
//! Copilot CLI's (`AUTHENTICATION_REQUIRED`, `AUTHENTICATION_FAILED`,
//! `AUTHENTICATION_NOT_CONFIGURED`).

use crate::common;

use std::path::{Path, PathBuf};

use common::{Client, TestServer, eventually, is_idle, no_answers};
use serde_json::{Value, json};
use turnstile_journal::StateRoot;
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::framing::{Frame, FrameReader, write_frame};
use turnstile_server::rpc::codes;
use turnstile_server::{Server, ServerConfig};

fn code(error: &Value) -> i64 {
    error["code"].as_i64().expect("error code")
}

/// Asserts an error answer is the Copilot CLI's `AUTHENTICATION_REQUIRED`.
fn assert_required(error: &Value) {
    assert_eq!(code(error), codes::AUTHENTICATION_REQUIRED, "{error}");
    assert_eq!(error["message"], "AUTHENTICATION_REQUIRED");
}

/// Asserts an error answer is the Copilot CLI's `AUTHENTICATION_FAILED`.
fn assert_failed(error: &Value) {
    assert_eq!(code(error), codes::AUTHENTICATION_FAILED, "{error}");
    assert_eq!(error["message"], "AUTHENTICATION_FAILED");
}

/// The files the commands of a hostile `session.create` would write.
struct Markers {
    key: PathBuf,
    mcp: PathBuf,
}

impl Markers {
    fn in_dir(dir: &Path) -> Self {
        Markers {
            key: dir.join("api-key-command-ran"),
            mcp: dir.join("mcp-server-ran"),
        }
    }

    /// `session.create` params whose provider's key command and MCP server each write a marker.
    fn create_params(&self, model_url: &str) -> Value {
        json!({
            "model": "scripted-model",
            "provider": {
                "type": "openai",
                "baseUrl": model_url,
                "apiKeyCommand": format!("touch '{}'; echo key", self.key.display()),
            },
            "mcpServers": {
                "planted": {
                    "type": "stdio",
                    "command": "sh",
                    "args": ["-c", format!("touch '{}'", self.mcp.display())],
                    "tools": ["*"],
                },
            },
        })
    }

    fn none_written(&self) -> bool {
        !self.key.exists() && !self.mcp.exists()
    }
}

/// The session directories under the server's state root.
fn sessions(t: &TestServer) -> Vec<String> {
    match std::fs::read_dir(t.dir.path().join("state")) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Asserts the server closes the connection with nothing more to say (the guard of `Client`
/// fails the test if it keeps it open).
async fn assert_closed(client: &mut Client) {
    if let Some(message) = client.next().await {
        panic!("the connection should be closed, got {message}");
    }
}

#[tokio::test]
async fn without_the_token_no_session_is_created_and_nothing_runs() {
    let model = ScriptedServer::start(Script::new().text("done"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let markers = Markers::in_dir(t.dir.path());
    let hostile = markers.create_params(&model.url());

    // Straight to session.create, then a guessed token, then a send: refused, and the third
    // refusal closes the connection.
    let mut intruder = Client::connect(t.addr).await;
    assert_required(&intruder.err("session.create", hostile.clone()).await);
    assert_failed(
        &intruder
            .err(
                "connect",
                json!({"token": "00000000-0000-0000-0000-000000000000"}),
            )
            .await,
    );
    let id = intruder
        .start_request(
            "session.send",
            json!({"sessionId": "00000000-0000-4000-8000-000000000000", "prompt": "hi"}),
        )
        .await;
    assert_required(&intruder.response(id).await["error"]);
    assert_closed(&mut intruder).await;

    // A token that is not a string, an empty one, none: each a failed attempt.
    let mut intruder = Client::connect(t.addr).await;
    assert_failed(&intruder.err("connect", json!({"token": 42})).await);
    assert_failed(&intruder.err("connect", json!({"token": ""})).await);
    assert_failed(&intruder.err("connect", json!({})).await);
    assert_closed(&mut intruder).await;

    assert!(
        sessions(&t).is_empty(),
        "a session directory appeared: {:?}",
        sessions(&t)
    );
    assert!(markers.none_written(), "a hostile command ran");
    assert!(model.requests().is_empty(), "the model was called");

    // The same request with the token does all of it: the markers above could have appeared.
    let mut client = t.client().await;
    let created = client.ok("session.create", hostile).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(sessions(&t), std::slice::from_ref(&id));
    eventually(|| markers.mcp.exists()).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    client.events_until(no_answers, is_idle).await;
    assert!(markers.key.exists(), "the key command did not run");
    t.stop().await;
}

#[tokio::test]
async fn before_connect_no_method_is_served_not_even_named() {
    let t = TestServer::start(|_| {}).await;
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schema/api.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    fn walk(node: &Value, out: &mut Vec<String>) {
        if let Some(method) = node.get("rpcMethod").and_then(Value::as_str) {
            out.push(method.to_owned());
        } else if let Value::Object(map) = node {
            map.values().for_each(|v| walk(v, out));
        }
    }
    let mut methods = Vec::new();
    walk(&schema["server"], &mut methods);
    walk(&schema["session"], &mut methods);
    methods.retain(|m| m != "connect");
    assert!(methods.len() > 200, "the schema was read");
    methods.push("no.such.method".into());
    // Two a connection: the third refusal would close it.
    for pair in methods.chunks(2) {
        let mut intruder = Client::connect(t.addr).await;
        for method in pair {
            let error = intruder
                .err(
                    method,
                    json!({"sessionId": "00000000-0000-4000-8000-000000000000"}),
                )
                .await;
            assert_required(&error);
        }
    }
    assert!(sessions(&t).is_empty());
    t.stop().await;
}

#[tokio::test]
async fn attempts_sent_together_are_counted_one_by_one_and_the_rest_never_read() {
    let t = TestServer::start(|_| {}).await;
    let mut intruder = Client::connect(t.addr).await;
    // Many guesses in one write, the right token last: only three are answered, so the
    // right one is never compared and the connection never authenticates.
    let mut raw = Vec::new();
    for i in 0..50 {
        let guess = json!({"jsonrpc": "2.0", "id": i, "method": "connect", "params": {"token": format!("guess-{i}")}});
        raw.extend(framed(&guess));
    }
    let right = json!({"jsonrpc": "2.0", "id": 50, "method": "connect", "params": {"token": t.token.reveal()}});
    raw.extend(framed(&right));
    intruder.send_raw(&raw).await;
    for i in 0..3 {
        let answer = intruder.next().await.expect("an answer");
        assert_eq!(answer["id"], i);
        assert_failed(&answer["error"]);
    }
    assert_closed(&mut intruder).await;
    t.stop().await;
}

fn framed(body: &Value) -> Vec<u8> {
    let text = body.to_string();
    format!("Content-Length: {}\r\n\r\n{text}", text.len()).into_bytes()
}

#[tokio::test]
async fn a_wrong_token_leaves_the_connection_where_it_was() {
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
    assert_failed(&client.err("connect", json!({"token": "wrong"})).await);
    assert_required(&client.err("ping", json!({})).await);
    let ok = client
        .ok("connect", json!({"token": t.token.reveal()}))
        .await;
    assert_eq!(
        (ok["ok"].clone(), ok["protocolVersion"].clone()),
        (json!(true), json!(3))
    );
    // Authenticated: a later wrong token is refused, as the Copilot CLI refuses it, and undoes
    // nothing; refusals no longer count.
    for _ in 0..5 {
        assert_failed(&client.err("connect", json!({"token": "wrong"})).await);
    }
    let pong = client.ok("ping", json!({"message": "still"})).await;
    assert_eq!(pong["message"], "pong: still");
    t.stop().await;
}

#[tokio::test]
async fn before_connect_frames_are_small_and_after_it_they_are_not() {
    let t = TestServer::start(|_| {}).await;
    let big = json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"message": "x".repeat(1 << 20)}});
    let mut client = Client::connect(t.addr).await;
    client.send_body(big.to_string().as_bytes()).await;
    let refused = client.next().await.expect("an answer");
    assert_eq!(code(&refused["error"]), codes::INVALID_REQUEST, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit of 65536 bytes"),
        "{refused}"
    );
    // The whole budget is free: the refused frame was skipped, never held.
    assert_eq!(
        t.server.frame_budget_available(),
        turnstile_server::DEFAULT_INFLIGHT_FRAME_BYTES
    );
    client
        .ok("connect", json!({"token": t.token.reveal()}))
        .await;
    client.send_body(big.to_string().as_bytes()).await;
    let answer = client.response(7).await;
    assert_eq!(
        answer["result"]["message"].as_str().map(str::len),
        Some("pong: ".len() + (1 << 20))
    );
    t.stop().await;
}

#[tokio::test]
async fn a_connection_that_has_not_authenticated_hears_of_no_session() {
    let model = ScriptedServer::start(Script::new().text("done"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut listener = Client::connect(t.addr).await;
    let mut client = t.client().await;
    common::create(&mut client, &model.url(), json!({})).await;
    // Anything queued for the listener before now comes before the answer to its connect.
    let id = listener
        .start_request("connect", json!({"token": t.token.reveal()}))
        .await;
    let first = listener.next().await.expect("an answer");
    assert_eq!(first["id"], id, "heard before authenticating: {first}");
    assert_eq!(first["result"]["ok"], true);
    // Once authenticated it hears of the next one.
    common::create(&mut client, &model.url(), json!({})).await;
    let heard = listener.next().await.expect("a notification");
    assert_eq!(heard["method"], "session.lifecycle", "{heard}");
    assert_eq!(heard["params"]["type"], "session.created");
    t.stop().await;
}

/// A client of [`turnstile_server::serve_io`] over an in-memory pipe, as on stdio.
struct PipeClient {
    reader: FrameReader<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl PipeClient {
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        write_frame(&mut self.writer, body.to_string().as_bytes())
            .await
            .unwrap();
        let frame = tokio::time::timeout(common::GUARD, self.reader.next_frame())
            .await
            .unwrap();
        let Ok(Some(Frame::Body(body))) = frame else {
            panic!("{frame:?}")
        };
        serde_json::from_slice(&body).unwrap()
    }
}

#[tokio::test]
async fn stdio_needs_no_token_and_refuses_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(StateRoot::new(dir.path().join("s")));
    config.default_cwd = dir.path().to_path_buf();
    let server = Server::new(config);
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = {
        let server = server.clone();
        tokio::spawn(
            async move { turnstile_server::serve_io(&server, server_read, server_write).await },
        )
    };
    let (client_read, writer) = tokio::io::split(client_end);
    let mut client = PipeClient {
        reader: FrameReader::new(tokio::io::BufReader::new(client_read), 1 << 20),
        writer,
    };
    let pong = client.call(1, "ping", json!({})).await;
    assert_eq!(pong["result"]["message"], "pong");
    let refused = client
        .call(2, "connect", json!({"token": "anything"}))
        .await;
    assert_eq!(
        code(&refused["error"]),
        codes::AUTHENTICATION_NOT_CONFIGURED
    );
    assert_eq!(refused["error"]["message"], "AUTHENTICATION_NOT_CONFIGURED");
    let ok = client.call(3, "connect", json!({})).await;
    assert_eq!(ok["result"]["ok"], true);
    drop(client);
    tokio::time::timeout(common::GUARD, serving)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn after_runtime_shutdown_the_stdio_client_is_answered_shutting_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(StateRoot::new(dir.path().join("s")));
    config.default_cwd = dir.path().to_path_buf();
    let server = Server::new(config);
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = {
        let server = server.clone();
        tokio::spawn(
            async move { turnstile_server::serve_io(&server, server_read, server_write).await },
        )
    };
    let (client_read, writer) = tokio::io::split(client_end);
    let mut client = PipeClient {
        reader: FrameReader::new(tokio::io::BufReader::new(client_read), 1 << 20),
        writer,
    };
    let stopped = client.call(1, "runtime.shutdown", json!({})).await;
    assert_eq!(stopped["result"], Value::Null, "{stopped}");
    let token = server.shutdown_token();
    common::eventually(|| token.is_cancelled()).await;
    // The Copilot CLI's answer, for as long as the client stays connected.
    for id in 2..4 {
        let refused = client.call(id, "ping", json!({})).await;
        assert_eq!(code(&refused["error"]), codes::SERVER_SHUTTING_DOWN);
        assert_eq!(refused["error"]["message"], "SERVER_SHUTTING_DOWN");
    }
    drop(client);
    tokio::time::timeout(common::GUARD, serving)
        .await
        .unwrap()
        .unwrap();
}
