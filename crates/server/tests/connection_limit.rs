//! The listener's bounds on real sockets: at most `max_connections` connections served (the
//! one beyond answered with `SERVER_BUSY` and closed), a connection that does not authenticate
//! closed after `connect_timeout`, and, in a child process with a low descriptor limit, accept
//! errors waited out with a rate-limited warning while an established client's calls go on.
//! Timeouts here are failure guards only.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use turnstile_journal::StateRoot;
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::framing::{Frame, FrameReader, write_frame};
use turnstile_server::rpc::codes;
use turnstile_server::{Server, ServerConfig};

use crate::common::{self, Client, GUARD, TestServer, create_params, is_idle, no_answers};

/// The next frame on a raw connection, parsed; `None` at the end of the stream.
async fn next_message(stream: &mut TcpStream) -> Option<Value> {
    let (read, _write) = stream.split();
    let mut frames = FrameReader::new(tokio::io::BufReader::new(read), 1 << 20);
    match tokio::time::timeout(GUARD, frames.next_frame())
        .await
        .expect("the server did not answer in time")
    {
        Ok(Some(Frame::Body(body))) => Some(serde_json::from_slice(&body).unwrap()),
        Ok(None) => None,
        other => panic!("unexpected frame: {other:?}"),
    }
}

/// Reads until the server closes the stream; true when it did (a reset counts as closed).
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(GUARD, stream.read(&mut buf))
        .await
        .expect("the server did not close the connection in time");
    !matches!(read, Ok(n) if n > 0)
}

/// Connects until the server serves the connection rather than refusing it (a freed slot
/// shows only once the server has seen the other end close).
async fn client_once_there_is_room(t: &TestServer) -> Client {
    let deadline = Instant::now() + GUARD;
    loop {
        let mut probe = TcpStream::connect(t.addr).await.unwrap();
        let connect = json!({"jsonrpc": "2.0", "id": 1, "method": "connect", "params": {"token": t.token.reveal()}});
        write_frame(&mut probe, connect.to_string().as_bytes())
            .await
            .unwrap();
        let answer = next_message(&mut probe).await.expect("an answer");
        if answer["result"]["ok"] == true {
            let mut client = Client::over(probe);
            // The probe's `connect` was request 1.
            client.ok("ping", json!({})).await;
            return client;
        }
        assert_eq!(answer["error"]["code"], codes::SERVER_BUSY, "{answer}");
        assert!(Instant::now() < deadline, "no slot was freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_refused_and_an_established_client_goes_on() {
    const LIMIT: usize = 20;
    let model = ScriptedServer::start(Script::new().text("still served").text("and again"))
        .await
        .unwrap();
    let t = TestServer::start(|c| {
        c.max_connections = LIMIT;
        c.connect_timeout = None;
    })
    .await;
    let mut established = t.client().await;
    let created = established
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();

    // Idle connections that never send a byte fill every other slot...
    let mut idle = Vec::new();
    for _ in 1..LIMIT {
        idle.push(TcpStream::connect(t.addr).await.unwrap());
    }
    // ...and every one beyond is answered with SERVER_BUSY, naming the limit, and closed.
    for _ in 0..3 * LIMIT {
        let mut refused = TcpStream::connect(t.addr).await.unwrap();
        let answer = next_message(&mut refused)
            .await
            .expect("a refused connection is answered");
        assert_eq!(answer["error"]["code"], codes::SERVER_BUSY, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{LIMIT} connections"))
                && message.contains("--max-connections"),
            "{message}"
        );
        assert!(closed_by_server(&mut refused).await);
    }

    // The established client's calls go on: a ping, and a turn of its session.
    established.ok("ping", json!({})).await;
    established
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    let events = established.events_until(no_answers, is_idle).await;
    assert!(
        events.iter().any(|e| e["type"] == "assistant.message"),
        "{events:?}"
    );

    // A slot freed by an idle connection going away serves a new client.
    drop(idle.pop());
    let mut late = client_once_there_is_room(&t).await;
    late.ok("ping", json!({})).await;
    t.stop().await;
}

#[tokio::test]
async fn a_connection_that_never_authenticates_is_closed_after_the_connect_timeout() {
    let t = TestServer::start(|c| c.connect_timeout = Some(Duration::from_millis(300))).await;
    let mut client = t.client().await;
    let mut silent = TcpStream::connect(t.addr).await.unwrap();
    let answer = next_message(&mut silent)
        .await
        .expect("the closing connection is told why");
    assert_eq!(answer["error"]["code"], codes::AUTHENTICATION_REQUIRED);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--connect-timeout"),
        "{answer}"
    );
    assert!(closed_by_server(&mut silent).await);
    // One that trickles a header is closed all the same: bytes are not progress.
    let mut trickle = TcpStream::connect(t.addr).await.unwrap();
    let started = Instant::now();
    let mut closed = false;
    for byte in b"Content-Length: 1000000\r\n".iter().cycle().take(200) {
        use tokio::io::AsyncWriteExt;
        if trickle.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() > GUARD {
            break;
        }
    }
    assert!(closed || closed_by_server(&mut trickle).await);
    // The authenticated client is never closed for being quiet.
    client.ok("ping", json!({})).await;
    t.stop().await;
}

const CHILD: &str = "TURNSTILE_CONNECTION_LIMIT_CHILD";

/// The server of the descriptor tests, run only as the child of the tests below (with the
/// descriptor limit they set): prints its port and token and serves until its stdin closes;
/// `TURNSTILE_CHILD_MAX_CONNECTIONS` overrides the limit computed from the descriptors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptor_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter("turnstile_server=warn")
        .try_init();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let mut config = ServerConfig::new(StateRoot::new(dir.path().join("state")));
    config.default_cwd = dir.path().join("work");
    config.connect_timeout = None;
    if let Some(n) = std::env::var("TURNSTILE_CHILD_MAX_CONNECTIONS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        config.max_connections = n;
    }
    let max = config.max_connections;
    common::serve_until_stdin_closes(Server::new(config), &format!(" MAX {max}")).await;
}

/// A child server with a soft descriptor limit of `nofile`.
struct Child {
    child: std::process::Child,
    port: u16,
    token: String,
    max: usize,
}

impl Child {
    fn start(nofile: u64, max_connections: Option<usize>) -> Child {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "connection_limit::descriptor_child_server",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(n) = max_connections {
            command.env("TURNSTILE_CHILD_MAX_CONNECTIONS", n.to_string());
        }
        // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent.
        unsafe {
            command.pre_exec(move || {
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit.rlim_cur = nofile.min(limit.rlim_max);
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        // The test harness may print the test's name on the same line first.
        let found = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                let at = line.find("PORT ")?;
                let words: Vec<_> = line[at..].split_whitespace().collect();
                Some((
                    words[1].parse().ok()?,
                    words[3].to_owned(),
                    words[5].parse().ok()?,
                ))
            });
        let Some((port, token, max)) = found else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child server printed no port");
        };
        Child {
            child,
            port,
            token,
            max,
        }
    }

    async fn client(&self) -> Client {
        let mut client = Client::connect(([127, 0, 0, 1], self.port).into()).await;
        client
            .ok("connect", json!({"token": self.token.as_str()}))
            .await;
        client
    }

    /// Peak resident memory of the child so far, in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Stops the child and returns what it logged.
    fn stop(mut self) -> String {
        drop(self.child.stdin.take());
        let mut log = String::new();
        let mut stderr = self.child.stderr.take().unwrap();
        let _ = stderr.read_to_string(&mut log);
        let _ = self.child.wait();
        log
    }
}

/// The flood: up to `count` connections, each kept open and silent, opened from a thread so
/// that the kernel's backlog (not this test's runtime) is what waits on a server that cannot
/// accept; it stops at the first connect left unanswered for a second (the backlog is full);
/// they close when the returned sender is dropped. Returns how many were made.
fn flood(port: u16, count: usize) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<usize>) {
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        for _ in 0..count {
            // Once the server's backlog is full too, a connect is never answered: stop there.
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                Ok(s) => held.push(s),
                Err(_) => break,
            }
        }
        let n = held.len();
        let _ = stop_rx.recv();
        n
    });
    (stop_tx, handle)
}

/// With the limit set above what the descriptors allow, the server runs out of descriptors in
/// `accept`: it must pause and log a line a second at most, not spin, and its established
/// client's calls must go on and the server recover once the flood is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_errors_at_the_descriptor_limit_back_off_with_a_rate_limited_warning() {
    let flood_size: usize = std::env::var("TURNSTILE_FLOOD_CONNECTIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(150);
    let child = Child::start(64, Some(100_000));
    let mut established = child.client().await;
    let started = Instant::now();
    let (stop, flooding) = flood(child.port, flood_size);
    // Calls go on while the flood stands and accept keeps failing.
    for _ in 0..20 {
        established.ok("ping", json!({})).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(stop);
    let opened = flooding.join().unwrap();
    // The server takes what its 64 descriptors allow and the kernel's backlog queues more;
    // connects beyond that go unanswered. More than 64 made means accept ran out.
    assert!(
        opened > 64,
        "only {opened} of the flood's connections were made"
    );
    // Once the flood is gone, the backlog drains and a new client is served.
    let deadline = Instant::now() + GUARD;
    let mut late = loop {
        match tokio::time::timeout(Duration::from_secs(5), child.client()).await {
            Ok(client) => break client,
            Err(_) => assert!(Instant::now() < deadline, "the server did not recover"),
        }
    };
    late.ok("ping", json!({})).await;
    established.ok("ping", json!({})).await;
    let elapsed = started.elapsed().as_secs() + 1;
    let log = child.stop();
    let warnings = log.matches("accept failed").count() as u64;
    assert!(
        warnings >= 1,
        "the flood never ran the server out of descriptors:\n{log}"
    );
    assert!(
        warnings <= elapsed + 1,
        "{warnings} accept warnings in about {elapsed}s:\n{log}"
    );
    assert!(log.contains("failed_since_last_warning"), "{log}");
    println!(
        "FIGURES accept-errors flood={opened} nofile=64 accept_warnings={warnings} log_bytes={} wall_s={elapsed}",
        log.len()
    );
}

/// The default limit, computed from the descriptor limit, keeps a flood of `flood_size` idle
/// connections from taking the descriptors an established client's session needs.
/// `make stress` runs it with 1,000 connections and the usual limit of 1024 descriptors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_limit_keeps_descriptors_for_established_sessions_under_a_flood() {
    let flood_size: usize = std::env::var("TURNSTILE_FLOOD_CONNECTIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(150);
    let nofile: u64 = std::env::var("TURNSTILE_FLOOD_NOFILE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(128);
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let started = Instant::now();
    let child = Child::start(nofile, None);
    assert_eq!(
        child.max,
        turnstile_server::limits::connections_for_descriptors(nofile)
    );
    let mut established = child.client().await;
    let mut refused = 0;
    let mut held = Vec::new();
    for _ in 0..flood_size {
        let mut s = TcpStream::connect(("127.0.0.1", child.port)).await.unwrap();
        if held.len() + 1 < child.max {
            held.push(s);
            continue;
        }
        let answer = next_message(&mut s).await.expect("refused with an answer");
        assert_eq!(answer["error"]["code"], codes::SERVER_BUSY, "{answer}");
        refused += 1;
    }
    assert_eq!(refused, flood_size - (child.max - 1).min(flood_size));
    // The established client opens a session (a journal, a lock, a model connection) and
    // runs a turn with the flood standing.
    let created = established
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    established
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    let events = established.events_until(no_answers, is_idle).await;
    assert!(events.iter().any(|e| e["type"] == "assistant.message"));
    let peak = child.peak_rss_kib();
    let limit = child.max;
    drop(held);
    let log = child.stop();
    assert!(!log.contains("accept failed"), "{log}");
    println!(
        "FIGURES server flood={flood_size} nofile={nofile} limit={} refused={refused} peak_rss_kib={peak} wall_ms={}",
        limit,
        started.elapsed().as_millis()
    );
}
