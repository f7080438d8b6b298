//! A server on 127.0.0.1 with a scratch state root, and a minimal JSON-RPC client speaking
//! the framing over a real socket. Timeouts here are failure guards only.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use turnstile_journal::StateRoot;
use turnstile_server::framing::{Frame, FrameReader, write_frame};
use turnstile_server::{ConnectionToken, Server, ServerConfig, TcpServer};

mod flow;
pub use flow::*;

/// Serves `server` on 127.0.0.1 as a test's child process: prints `PORT <port> TOKEN
/// <token>` and `extra` on one line for the parent, then serves until its stdin closes.
pub async fn serve_until_stdin_closes(server: Server, extra: &str) {
    let token = ConnectionToken::generate();
    let tcp = TcpServer::bind(server, 0, token.clone()).await.unwrap();
    println!(
        "PORT {} TOKEN {}{extra}",
        tcp.local_addr().port(),
        token.reveal()
    );
    tokio::spawn(tcp.run());
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    })
    .await
    .unwrap();
}

/// Long enough for a slow CI machine; reaching it means the test failed.
pub const GUARD: Duration = Duration::from_secs(60);

/// A running server.
pub struct TestServer {
    pub server: Server,
    pub addr: SocketAddr,
    /// The token its clients must present in `connect`.
    pub token: ConnectionToken,
    pub dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Starts a server; `tweak` adjusts the config.
    pub async fn start(tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("work")).expect("work dir");
        let mut config = ServerConfig::new(StateRoot::new(dir.path().join("state")));
        config.default_cwd = dir.path().join("work");
        tweak(&mut config);
        Self::serve(Server::new(config), dir).await
    }

    /// Lets every tool run unasked (`--allow-all-tools`), for tests about something else.
    pub fn allow_all(config: &mut ServerConfig) {
        config.permissions = turnstile_permissions::PermissionPolicy::from_flags(true, &[], &[])
            .expect("allow-all is a valid policy");
    }

    /// Another server (another "process" as far as sessions go: its own writer locks) on the
    /// same state root and working directory as `other`.
    pub async fn beside(other: &TestServer, tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = ServerConfig::new(other.root());
        config.default_cwd = other.work();
        tweak(&mut config);
        Self::serve(Server::new(config), dir).await
    }

    /// Serves `server` on a free port of 127.0.0.1 with a fresh token.
    async fn serve(server: Server, dir: tempfile::TempDir) -> Self {
        let token = ConnectionToken::generate();
        let tcp = TcpServer::bind(server.clone(), 0, token.clone())
            .await
            .expect("bind");
        let addr = tcp.local_addr();
        let task = tokio::spawn(async move {
            tcp.run().await.expect("serve");
        });
        TestServer {
            server,
            addr,
            token,
            dir,
            task,
        }
    }

    /// A client connected and authenticated (`connect` with the token), as an SDK client is
    /// once started.
    pub async fn client(&self) -> Client {
        let mut client = Client::connect(self.addr).await;
        client
            .ok("connect", json!({"token": self.token.reveal()}))
            .await;
        client
    }

    /// The working directory sessions get by default.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The state root.
    pub fn root(&self) -> StateRoot {
        StateRoot::new(self.dir.path().join("state"))
    }

    /// The journal of a session.
    pub fn journal(&self, id: &str) -> PathBuf {
        self.dir.path().join("state").join(id).join("events.jsonl")
    }

    /// Stops the server and waits until every session is closed.
    pub async fn stop(self) {
        self.server.shutdown().await;
        let _ = tokio::time::timeout(GUARD, self.task).await;
    }
}

/// A client over TCP.
pub struct Client {
    reader: FrameReader<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    next_id: u64,
    /// Messages read while waiting for something else.
    pub backlog: VecDeque<Value>,
    /// Other notifications (`session.lifecycle`) read while waiting for events.
    pub notes: Vec<Value>,
}

impl Client {
    /// Connects, without authenticating (see [`TestServer::client`]).
    pub async fn connect(addr: SocketAddr) -> Self {
        Self::over(TcpStream::connect(addr).await.expect("connect"))
    }

    /// A client over a connection already made.
    pub fn over(stream: TcpStream) -> Self {
        let (read, write) = stream.into_split();
        Client {
            reader: FrameReader::new(BufReader::new(read), 64 << 20),
            writer: write,
            next_id: 1,
            backlog: VecDeque::new(),
            notes: Vec::new(),
        }
    }

    /// Writes raw bytes.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    /// Writes one framed body.
    pub async fn send_body(&mut self, body: &[u8]) {
        write_frame(&mut self.writer, body)
            .await
            .expect("write frame");
    }

    /// Closes the writing half (the server sees the end of the stream).
    pub async fn close_write(&mut self) {
        let _ = self.writer.shutdown().await;
    }

    /// The next message from the server; `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        self.read().await
    }

    /// The next frame body from the server, unparsed.
    pub async fn next_raw(&mut self) -> Option<Vec<u8>> {
        let frame = tokio::time::timeout(GUARD, self.reader.next_frame())
            .await
            .expect("the server did not answer in time");
        match frame {
            Ok(Some(Frame::Body(body))) => Some(body),
            Ok(None) => None,
            other => panic!("unexpected frame from the server: {other:?}"),
        }
    }

    async fn read(&mut self) -> Option<Value> {
        let frame = tokio::time::timeout(GUARD, self.reader.next_frame())
            .await
            .expect("the server did not answer in time");
        match frame {
            Ok(Some(Frame::Body(body))) => {
                Some(serde_json::from_slice(&body).expect("the server sent JSON"))
            }
            Ok(None) => None,
            other => panic!("unexpected frame from the server: {other:?}"),
        }
    }

    /// Sends a request; returns its id.
    pub async fn start_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_body(body.to_string().as_bytes()).await;
        id
    }

    /// Sends a request and returns the whole response message; other messages are kept in
    /// the backlog.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params).await;
        self.response(id).await
    }

    /// Waits for the response to request `id`.
    pub async fn response(&mut self, id: u64) -> Value {
        let mut kept = VecDeque::new();
        let found = loop {
            let msg = match self.backlog.pop_front() {
                Some(m) => m,
                None => self.read().await.expect("stream ended before the response"),
            };
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                break msg;
            }
            kept.push_back(msg);
        };
        kept.extend(self.backlog.drain(..));
        self.backlog = kept;
        found
    }

    /// Whether the response to request `id` has been read already (kept in the backlog).
    pub fn has_response(&self, id: u64) -> bool {
        self.backlog
            .iter()
            .any(|m| m.get("method").is_none() && m["id"] == json!(id))
    }

    /// Calls and expects success; returns `result`.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// Calls and expects an error; returns `error`.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params).await;
        assert!(
            response.get("error").is_some(),
            "{method} should fail: {response}"
        );
        response["error"].clone()
    }

    /// Every notification other than `session.event` seen so far.
    pub fn notifications(&self) -> Vec<&Value> {
        self.notes
            .iter()
            .chain(self.backlog.iter())
            .filter(|m| m.get("id").is_none())
            .collect()
    }

    /// Reads until a `session.event` whose event matches, answering server-to-client requests
    /// with `answer`; returns every event seen up to and including the match.
    pub async fn events_until(
        &mut self,
        mut answer: impl FnMut(&str, &Value) -> Value,
        mut done: impl FnMut(&Value) -> bool,
    ) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let msg = self
                .next()
                .await
                .expect("stream ended while waiting for events");
            match msg["method"].as_str() {
                Some("session.event") => {
                    let event = msg["params"]["event"].clone();
                    let stop = done(&event);
                    events.push(event);
                    if stop {
                        return events;
                    }
                }
                Some(method) if msg.get("id").is_some() => {
                    let result = answer(method, &msg["params"]);
                    let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
                    self.send_body(reply.to_string().as_bytes()).await;
                }
                _ => self.notes.push(msg),
            }
        }
    }
}

/// `session.create` params with a BYOK provider at `url`.
pub fn create_params(url: &str, extra: Value) -> Value {
    let mut params = json!({
        "model": "scripted-model",
        "provider": {"type": "openai", "baseUrl": url, "apiKey": "test-key"},
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    params
}

/// Creates a session against the model at `url` (`extra`: more `session.create` params); its id.
pub async fn create(client: &mut Client, url: &str, extra: Value) -> String {
    let created = client.ok("session.create", create_params(url, extra)).await;
    created["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Creates a session as [`create`] does and sends it `prompt`; its id.
pub async fn create_and_send(client: &mut Client, url: &str, extra: Value, prompt: &str) -> String {
    let id = create(client, url, extra).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
        .await;
    id
}

/// A server (its config adjusted by `tweak`), a client connected to it and the id of a
/// session created against the model at `url` with `servers` as its `mcpServers`.
pub async fn mcp_session(
    url: &str,
    servers: Value,
    tweak: impl FnOnce(&mut ServerConfig),
) -> (TestServer, Client, String) {
    let t = TestServer::start(tweak).await;
    let mut client = t.client().await;
    let id = create(&mut client, url, json!({"mcpServers": servers})).await;
    (t, client, id)
}

/// Reads events until the next `permission.requested`, answering other server-to-client
/// requests with `{}`: that event, or `None` when the session went idle first.
pub async fn next_permission_request(client: &mut Client) -> Option<Value> {
    let events = client
        .events_until(no_answers, |e| {
            e["type"] == "permission.requested" || is_idle(e)
        })
        .await;
    events.into_iter().last().filter(|e| !is_idle(e))
}

/// Answers the open permission request `request_id` of session `id` with `result`.
pub async fn answer_permission(client: &mut Client, id: &str, request_id: &Value, result: Value) {
    client
        .ok(
            "session.permissions.handlePendingPermissionRequest",
            json!({"sessionId": id, "requestId": request_id, "result": result}),
        )
        .await;
}

/// The audit of the journal at `path` finds no violation.
pub fn audit_clean(path: &Path) {
    let report = turnstile_replay::audit_file(path).expect("audit");
    assert!(
        report.is_clean(),
        "audit violations: {:?}",
        report.violations
    );
}

/// Waits until `check` holds (polling; the guard fails the test).
pub async fn eventually(mut check: impl FnMut() -> bool) {
    tokio::time::timeout(GUARD, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the condition never came true");
}

/// The event types of a list of events.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The lines of a journal as JSON.
pub fn journal_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("journal")
        .lines()
        .map(|l| serde_json::from_str(l).expect("journal line is JSON"))
        .collect()
}

/// True for `session.idle`.
pub fn is_idle(event: &Value) -> bool {
    event["type"] == "session.idle"
}

/// Answers nothing special: server-to-client requests get `{}`.
pub fn no_answers(_: &str, _: &Value) -> Value {
    json!({})
}

/// The reference `server-everything`'s entry point, when `conformance/mcp/install.sh` installed it.
pub fn server_everything() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    entry.is_file().then_some(entry)
}

/// The processes of this test process's children whose command line names `needle`.
pub fn children_running(needle: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The fourth field of stat, after the parenthesised name, is the parent.
        let parent = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().nth(1));
        if parent == Some(me.as_str()) && String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}
