//! The MCP client against real servers: the rmcp server of `support/server.rs` on stdio (this
//! binary re-run as the server) and over streamable HTTP on 127.0.0.1, and the reference
//! `@modelcontextprotocol/server-everything` from npm run with node (stdio, and streamable HTTP
//! held to 127.0.0.1 by `conformance/mcp/loopback.mjs`). Servers that fail to
//! start, hang or die mid-call end as errors naming what happened, and no server process
//! outlives its connection or the engine.
//!
//! Timeouts here are failure guards or the limits under test; nothing passes on wall-clock.

#[path = "support/server.rs"]
mod server;

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnstile_mcp::{McpConnection, McpError, McpServers, ServerConfig, StartOptions};

fn config(name: &str, entry: Value) -> ServerConfig {
    let mut map = serde_json::Map::new();
    map.insert(name.to_owned(), entry);
    McpServers::from_value(&Value::Object(map), "test")
        .expect("a valid entry")
        .servers
        .remove(0)
}

fn options() -> StartOptions {
    StartOptions::new(std::env::temp_dir())
}

/// Whether a process is gone (no such pid, or a zombie waiting for its parent).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits (a failure guard of 10 s) for `pid` to be gone.
async fn wait_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn call_text(c: &McpConnection, tool: &str, args: Value) -> Result<String, McpError> {
    c.call(tool, args, &CancellationToken::new())
        .await
        .map(|o| o.text)
}

async fn stdio_lists_calls_and_stops() {
    let c = McpConnection::start(&config("demo", server::stdio_entry()), &options())
        .await
        .expect("the stdio server starts");
    let listing = c.listing();
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["crash", "echo", "fail", "grow", "hang", "pid"],
        "sorted by name"
    );
    assert_eq!(c.transport(), "stdio");
    let echo = listing.tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.description, "Echoes the text back.");
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    assert_eq!(
        call_text(&c, "echo", json!({"text": "hi"})).await.unwrap(),
        "echo: hisecond block"
    );
    let failed = c
        .call("fail", json!({}), &CancellationToken::new())
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text, "it failed on purpose");
    let pid: u32 = call_text(&c, "pid", json!({}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(Some(pid), c.pid());
    c.stop().await;
    assert!(wait_gone(pid).await, "the server process {pid} was stopped");
    assert_eq!(
        call_text(&c, "echo", json!({"text": "x"})).await,
        Err(McpError::Closed)
    );
}

async fn a_dropped_connection_kills_its_server() {
    let c = McpConnection::start(&config("demo", server::stdio_entry()), &options())
        .await
        .unwrap();
    let pid = c.pid().unwrap();
    drop(c);
    assert!(
        wait_gone(pid).await,
        "the server process {pid} outlived its connection"
    );
}

async fn a_server_dying_mid_call_is_an_error_then_fails_at_once() {
    let c = McpConnection::start(&config("demo", server::stdio_entry()), &options())
        .await
        .unwrap();
    let err = call_text(&c, "crash", json!({})).await.unwrap_err();
    assert_eq!(err, McpError::Closed, "{err}");
    assert!(err.to_string().contains("closed before the tool responded"));
    assert!(c.is_closed());
    assert_eq!(
        call_text(&c, "echo", json!({"text": "x"})).await,
        Err(McpError::Closed)
    );
}

async fn a_hanging_call_times_out_and_an_abort_stops_waiting() {
    let mut entry = server::stdio_entry();
    entry["timeout"] = json!(400);
    let c = McpConnection::start(&config("demo", entry), &options())
        .await
        .unwrap();
    let err = call_text(&c, "hang", json!({})).await.unwrap_err();
    assert_eq!(err, McpError::CallTimeout(Duration::from_millis(400)));
    assert!(err.to_string().contains("400 ms"));
    // The server still answers other calls.
    assert_eq!(
        call_text(&c, "echo", json!({"text": "after"}))
            .await
            .unwrap(),
        "echo: aftersecond block"
    );
    let cancel = CancellationToken::new();
    let call = c.call("hang", json!({}), &cancel);
    cancel.cancel();
    assert!(matches!(call.await, Err(McpError::Request(_))));
    c.stop().await;
}

async fn a_missing_program_fails_to_start() {
    let err = McpConnection::start(
        &config("broken", json!({"command": "/nonexistent/mcp-server"})),
        &options(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
}

async fn a_server_that_never_answers_times_out_and_is_killed() {
    let marker = format!("turnstile-mcp-hang-{}", std::process::id());
    // `exec -a` names the process so it can be found afterwards.
    let entry = json!({
        "command": "bash",
        "args": ["-c", format!("exec -a {marker} sleep 1000")],
        "timeout": 300
    });
    let err = McpConnection::start(&config("hang", entry), &options())
        .await
        .unwrap_err();
    assert_eq!(err, McpError::StartTimeout(Duration::from_millis(300)));
    let left = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(&marker))
                    && !gone(*pid)
            })
            .count()
    };
    for _ in 0..200 {
        if left() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the hanging server process outlived its failed start");
}

async fn a_server_exiting_at_once_names_its_stderr() {
    let entry = json!({"command": "bash", "args": ["-c", "echo 'no config found' >&2; exit 4"]});
    let err = McpConnection::start(&config("bad", entry), &options())
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Initialize(_)), "{err}");
    assert!(err.to_string().contains("no config found"), "{err}");
}

async fn http_lists_and_calls() {
    let url = server::serve_http().await;
    let c = McpConnection::start(
        &config("web", json!({"type": "http", "url": url})),
        &options(),
    )
    .await
    .expect("the HTTP server connects");
    assert_eq!(c.transport(), "http");
    let listing = c.listing();
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "fail", "grow", "hang", "pid"]);
    assert_eq!(
        call_text(&c, "echo", json!({"text": "web"})).await.unwrap(),
        "echo: websecond block"
    );
    let failed = c
        .call("fail", json!({}), &CancellationToken::new())
        .await
        .unwrap();
    assert!(failed.is_error);
    c.stop().await;
}

async fn http_to_nothing_fails_to_start() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let entry = json!({"url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 5000});
    let err = McpConnection::start(&config("none", entry), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpError::Initialize(_) | McpError::StartTimeout(_)),
        "{err}"
    );
}

/// The reference server from npm, installed by `bash conformance/mcp/install.sh` into
/// target/mcp-servers (CI runs it).
fn server_everything() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    entry.is_file().then_some(entry)
}

async fn the_reference_server_everything_over_stdio() {
    let Some(entry) = server_everything() else {
        let node = std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok();
        if node && std::env::var_os("CI").is_some() {
            panic!(
                "server-everything is not installed: .ci/run must run conformance/mcp/install.sh"
            );
        }
        println!(
            "SKIP the_reference_server_everything_over_stdio: install it with `bash conformance/mcp/install.sh` (npm, pinned; offline afterwards)"
        );
        return;
    };
    let entry = json!({"command": "node", "args": [entry, "stdio"]});
    let c = McpConnection::start(&config("everything", entry), &options())
        .await
        .expect("server-everything starts");
    let listing = c.listing();
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert_eq!(
        call_text(&c, "echo", json!({"message": "from turnstile"}))
            .await
            .unwrap(),
        "Echo: from turnstile"
    );
    let sum = call_text(&c, "get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(sum.contains('5'), "{sum}");
    let pid = c.pid().unwrap();
    c.stop().await;
    assert!(wait_gone(pid).await);
}

/// Whether the only listener on `port` is bound to 127.0.0.1 (`/proc/net/tcp{,6}`).
fn listens_on_loopback_only(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    let mut listeners = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 3 && fields[3] == "0A" && fields[1].ends_with(&hex) {
                listeners.push(fields[1].to_owned());
            }
        }
    }
    !listeners.is_empty() && listeners.iter().all(|l| l == &format!("0100007F{hex}"))
}

async fn the_reference_server_everything_over_http_on_loopback() {
    use tokio::io::AsyncBufReadExt;
    let Some(entry) = server_everything() else {
        println!("SKIP the_reference_server_everything_over_http_on_loopback: not installed");
        return;
    };
    let preload = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/mcp/loopback.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg("--import")
        .arg(&preload)
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(port) = line.strip_prefix("loopback port ") {
                return port.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("server-everything says its port (a failure guard of 30 s)");
    assert!(
        listens_on_loopback_only(port),
        "listening on 127.0.0.1 only"
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let c = McpConnection::start(&config("everything", json!({"url": url})), &options())
        .await
        .expect("server-everything over streamable HTTP");
    assert_eq!(c.transport(), "http");
    assert!(c.listing().tools.iter().any(|t| t.name == "echo"));
    assert_eq!(
        call_text(&c, "echo", json!({"message": "over http"}))
            .await
            .unwrap(),
        "Echo: over http"
    );
    c.stop().await;
    let _ = child.kill().await;
}

/// The child of `the_engine_dying_takes_its_servers_along`: starts a server, prints its pid,
/// then waits to be killed.
async fn engine_child() {
    let c = McpConnection::start(&config("demo", server::stdio_entry()), &options())
        .await
        .unwrap();
    println!("{}", c.pid().unwrap());
    std::future::pending::<()>().await;
}

async fn the_engine_dying_takes_its_servers_along() {
    use std::io::BufRead;
    let mut engine = std::process::Command::new(std::env::current_exe().unwrap())
        .env(ENGINE_VAR, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(engine.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: u32 = line
        .trim()
        .parse()
        .expect("the engine printed its server's pid");
    assert!(!gone(pid));
    engine.kill().unwrap();
    engine.wait().unwrap();
    assert!(
        wait_gone(pid).await,
        "the server {pid} outlived the SIGKILLed engine"
    );
}

const ENGINE_VAR: &str = "TURNSTILE_TEST_MCP_ENGINE";

type Test = fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        [$((stringify!($name), (|| Box::pin($name()) as _) as Test)),*]
    };
}

fn main() {
    server::serve_stdio_if_asked();
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    };
    if std::env::var_os(ENGINE_VAR).is_some() {
        runtime().block_on(engine_child());
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = all_tests();
    // The list `cargo nextest` asks for (`--list --format terse`, and again with `--ignored`):
    // one `name: test` line per test, none ignored; it then runs each alone with `--exact`.
    if args.iter().any(|a| a == "--list") {
        if !args.iter().any(|a| a == "--ignored") {
            for (name, _) in &all {
                println!("{name}: test");
            }
        }
        return;
    }
    let exact = args.iter().any(|a| a == "--exact");
    let filter: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in all {
        let chosen = |f: &&String| {
            if exact {
                name == f.as_str()
            } else {
                name.contains(f.as_str())
            }
        };
        if !filter.is_empty() && !filter.iter().any(chosen) {
            continue;
        }
        let rt = runtime();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(test())));
        drop(rt);
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok");
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(101);
    }
}

/// Every test of this binary, in the order a plain run takes them.
fn all_tests() -> Vec<(&'static str, Test)> {
    tests![
        stdio_lists_calls_and_stops,
        a_dropped_connection_kills_its_server,
        a_server_dying_mid_call_is_an_error_then_fails_at_once,
        a_hanging_call_times_out_and_an_abort_stops_waiting,
        a_missing_program_fails_to_start,
        a_server_that_never_answers_times_out_and_is_killed,
        a_server_exiting_at_once_names_its_stderr,
        http_lists_and_calls,
        http_to_nothing_fails_to_start,
        the_reference_server_everything_over_stdio,
        the_reference_server_everything_over_http_on_loopback,
        the_engine_dying_takes_its_servers_along,
    ]
    .into()
}
