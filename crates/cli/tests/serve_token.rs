//! `turnstile --headless` on TCP, started as the SDK clients start it (no `--stdio`, no
//! `--port`): a client is served only after `connect` with the connection token, the one in
//! `COPILOT_CONNECTION_TOKEN` or, without it, one generated and printed after the port. A
//! local user without the token creates no session and runs no command: the session
//! directory and the files the commands would write are checked. The real binary, real
//! sockets.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

use common::rpc::{StdioServer, read_frame, write_frame};

/// The line the SDK clients look for, in the Copilot CLI's words.
const LISTENING: &str = "CLI server listening on port ";

/// The line after it when no token was given.
const GENERATED: &str =
    "No COPILOT_CONNECTION_TOKEN was set, so clients must connect with this generated token: ";

/// A server started as the SDK clients start one on TCP, in its own Copilot home.
struct Served {
    child: Child,
    stdout: BufReader<ChildStdout>,
    port: u16,
    home: tempfile::TempDir,
}

impl Served {
    /// Starts the server, `COPILOT_CONNECTION_TOKEN` set to `token` or unset, and reads the
    /// port line.
    fn start(token: Option<&str>) -> Self {
        let home = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
        cmd.args(["--headless", "--no-auto-update", "--no-auto-login"])
            .env("COPILOT_HOME", home.path())
            .env_remove("COPILOT_CONNECTION_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(token) = token {
            cmd.env("COPILOT_CONNECTION_TOKEN", token);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let line = read_line(&mut stdout);
        let port = line
            .strip_prefix(LISTENING)
            .unwrap_or_else(|| panic!("not the port line: {line:?}"))
            .parse()
            .unwrap();
        Served {
            child,
            stdout,
            port,
            home,
        }
    }

    /// The token printed after the port line.
    fn printed_token(&mut self) -> String {
        let line = read_line(&mut self.stdout);
        line.strip_prefix(GENERATED)
            .unwrap_or_else(|| panic!("not the token line: {line:?}"))
            .to_owned()
    }

    fn connect(&self) -> Conn {
        Conn::open(self.port)
    }

    /// The session directories.
    fn sessions(&self) -> Vec<String> {
        match std::fs::read_dir(self.home.path().join("session-state")) {
            Ok(entries) => entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Stops the server through `client` (`runtime.shutdown`) and returns what else it
    /// printed on stdout.
    fn stop(mut self, mut client: Conn) -> String {
        client.ok("runtime.shutdown", json!({}));
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        rest
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_line(from: &mut impl BufRead) -> String {
    let mut line = String::new();
    assert!(from.read_line(&mut line).unwrap() > 0, "stdout ended");
    line.trim_end().to_owned()
}

/// A JSON-RPC connection to the server.
struct Conn {
    stream: BufReader<TcpStream>,
    next_id: u64,
}

impl Conn {
    fn open(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Conn {
            stream: BufReader::new(stream),
            next_id: 1,
        }
    }

    /// The answer to `method` (notifications before it are dropped); `None` when the server
    /// closed the connection first.
    fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        write_frame(self.stream.get_mut(), &request);
        loop {
            let message = read_frame(&mut self.stream)?;
            if message["id"] == id && message.get("method").is_none() {
                return Some(message);
            }
        }
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params).expect("an answer");
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Asserts `method` is refused with the Copilot CLI's `code` and `message`.
    fn refused(&mut self, method: &str, params: Value, code: i64, message: &str) {
        let answer = self.call(method, params).expect("an answer");
        assert_eq!(answer["error"]["code"], code, "{method}: {answer}");
        assert_eq!(answer["error"]["message"], message, "{method}: {answer}");
    }

    /// Asserts the server closed the connection.
    fn assert_closed(&mut self) {
        assert!(
            read_frame(&mut self.stream).is_none(),
            "the connection is still open"
        );
    }

    /// Reads notifications until the session goes idle.
    fn wait_idle(&mut self) {
        while let Some(message) = read_frame(&mut self.stream) {
            if message["method"] == "session.event"
                && message["params"]["event"]["type"] == "session.idle"
            {
                return;
            }
        }
        panic!("the connection ended before the session went idle");
    }
}

/// The files a hostile `session.create` would have written, each with the environment of the
/// command that wrote it.
struct Markers {
    key: PathBuf,
    mcp: PathBuf,
    _dir: tempfile::TempDir,
}

impl Markers {
    /// Markers in a directory of their own: not the Copilot home, which an MCP server's
    /// sandbox keeps read-only.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Markers {
            key: dir.path().join("api-key-command-env"),
            mcp: dir.path().join("mcp-server-env"),
            _dir: dir,
        }
    }

    fn create_params(&self, model_url: &str) -> Value {
        json!({
            "model": "scripted-model",
            "provider": {
                "type": "openai",
                "baseUrl": model_url,
                "apiKeyCommand": format!("env > '{}'; echo key", self.key.display()),
            },
            "mcpServers": {
                "planted": {
                    "type": "stdio",
                    "command": "sh",
                    "args": ["-c", format!("env > '{}'", self.mcp.display())],
                    "tools": ["*"],
                },
            },
        })
    }

    fn none_written(&self) -> bool {
        !self.key.exists() && !self.mcp.exists()
    }

    /// Waits for both files (the MCP server starts with the session, the key command at the
    /// first model call) and returns their text.
    fn wait_written(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(self.key.exists() && self.mcp.exists()) {
            assert!(Instant::now() < deadline, "the commands did not run");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::read_to_string(&self.key).unwrap() + &std::fs::read_to_string(&self.mcp).unwrap()
    }
}

fn model_server() -> (tokio::runtime::Runtime, ScriptedServer) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = rt
        .block_on(ScriptedServer::start(Script::new().text("done")))
        .unwrap();
    (rt, model)
}

/// A local user without the token: refused at every step, the third refusal closing the
/// connection, and nothing created or run.
fn intrude(served: &Served, hostile: &Value, markers: &Markers) {
    let mut intruder = served.connect();
    intruder.refused(
        "session.create",
        hostile.clone(),
        -32001,
        "AUTHENTICATION_REQUIRED",
    );
    intruder.refused(
        "connect",
        json!({"token": uuid::Uuid::new_v4().to_string()}),
        -32002,
        "AUTHENTICATION_FAILED",
    );
    intruder.refused("session.list", json!({}), -32001, "AUTHENTICATION_REQUIRED");
    intruder.assert_closed();
    let mut intruder = served.connect();
    intruder.refused("connect", json!({}), -32002, "AUTHENTICATION_FAILED");
    assert!(served.sessions().is_empty(), "{:?}", served.sessions());
    assert!(
        markers.none_written(),
        "a command of the intruder's session ran"
    );
}

/// A client with the token creates the session the intruder could not, and its commands run:
/// what the intruder was refused was there to be had. Returns what they saw of the
/// environment.
fn create_and_send(
    served: &Served,
    hostile: Value,
    markers: &Markers,
    client: &mut Conn,
) -> String {
    let created = client.ok("session.create", hostile);
    let id = created["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(served.sessions(), std::slice::from_ref(&id));
    client.ok("session.send", json!({"sessionId": id, "prompt": "hi"}));
    client.wait_idle();
    markers.wait_written()
}

#[test]
fn without_a_token_one_is_generated_printed_and_required() {
    let (_rt, model) = model_server();
    let mut served = Served::start(None);
    let token = served.printed_token();
    assert_eq!(
        uuid::Uuid::parse_str(&token).unwrap().get_version_num(),
        4,
        "{token}"
    );
    let markers = Markers::new();
    let hostile = markers.create_params(&model.url());

    intrude(&served, &hostile, &markers);
    assert!(model.requests().is_empty());

    let mut client = served.connect();
    let connected = client.ok("connect", json!({"token": token}));
    assert_eq!(connected["protocolVersion"], 3);
    create_and_send(&served, hostile, &markers, &mut client);
    assert_eq!(served.stop(client), "");

    // Another start, another token.
    let mut again = Served::start(None);
    assert_ne!(again.printed_token(), token);
}

#[test]
fn a_given_token_is_the_one_required_and_no_command_inherits_it() {
    let (_rt, model) = model_server();
    let given = "given-connection-secret-7d1f";
    let served = Served::start(Some(given));
    let markers = Markers::new();
    let hostile = markers.create_params(&model.url());

    intrude(&served, &hostile, &markers);
    let mut client = served.connect();
    client.ok("connect", json!({"token": given}));
    let seen = create_and_send(&served, hostile, &markers, &mut client);
    assert!(
        seen.contains("PATH="),
        "the commands wrote their environment: {seen}"
    );
    assert!(
        !seen.contains(given) && !seen.contains("COPILOT_CONNECTION_TOKEN"),
        "a command inherited the token: {seen}"
    );
    // Nothing was printed after the port line: the given token is not shown.
    assert_eq!(served.stop(client), "");
}

#[test]
fn stdio_needs_no_token_even_with_one_in_the_environment() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
    cmd.args(["--headless", "--stdio"])
        .env("COPILOT_HOME", home.path())
        .env("COPILOT_CONNECTION_TOKEN", "unused-on-stdio")
        .stderr(Stdio::null());
    let mut server = StdioServer::spawn(cmd);
    server.ok("session.list", json!({}));
    let answer = server.call("connect", json!({"token": "unused-on-stdio"}));
    assert_eq!(answer["error"]["code"], -32003, "{answer}");
    assert_eq!(answer["error"]["message"], "AUTHENTICATION_NOT_CONFIGURED");
    server.ok("connect", json!({}));
    assert!(server.close().success());
}
