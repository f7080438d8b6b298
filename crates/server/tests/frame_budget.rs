//! The server-wide budget of frame bytes being received, measured on a real server in a
//! child process: twenty TCP clients each half-way through a 60 MB frame must not make the
//! server hold twenty half frames. Timeouts are failure guards only. The clients authenticate
//! first: before that a connection's frames are small and hold none of the budget.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use turnstile_journal::StateRoot;
use turnstile_server::framing::{Frame, FrameReader, write_frame};
use turnstile_server::{Server, ServerConfig};

const CHILD: &str = "TURNSTILE_FRAME_BUDGET_CHILD";
const GUARD: Duration = Duration::from_secs(120);
const BUDGET: usize = 128 << 20;
const FRAME: usize = 60_000_000;
const HALF: usize = 30_000_000;
const CLIENTS: usize = 20;

/// The server of the measurement, run only as the child of the test below: prints its port
/// and token, serves until its stdin closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(StateRoot::new(dir.path().join("state")));
    config.inflight_frame_bytes = BUDGET;
    config.frame_budget_wait = GUARD * 10;
    common::serve_until_stdin_closes(Server::new(config), "").await;
}

/// Sends `connect` with `token` and waits for its answer.
async fn authenticate(stream: &mut TcpStream, token: &str) {
    let connect = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "connect", "params": {"token": token}});
    write_frame(&mut *stream, connect.to_string().as_bytes())
        .await
        .unwrap();
    let (read, _write) = stream.split();
    let mut frames = FrameReader::new(tokio::io::BufReader::new(read), 1 << 20);
    let Ok(Some(Frame::Body(body))) = frames.next_frame().await else {
        panic!("no answer to connect")
    };
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["result"]["ok"], true, "{answer}");
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn twenty_clients_half_way_through_big_frames_hold_no_more_than_the_budget() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "frame_budget::budget_child_server",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (port, token): (u16, String) = loop {
        let line = lines.next().expect("the child printed its port").unwrap();
        // The test harness may print the test's name on the same line first.
        if let Some(at) = line.find("PORT ") {
            let mut words = line[at + 5..].split_whitespace();
            let port = words.next().unwrap().parse().unwrap();
            assert_eq!(words.next(), Some("TOKEN"));
            break (port, words.next().unwrap().to_owned());
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (baseline, held, admitted_then, after_release) = runtime.block_on(async move {
        let baseline = rss(pid);
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<usize>();
        let mut closers = Vec::new();
        for i in 0..CLIENTS {
            let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();
            closers.push(close_tx);
            let done = done_tx.clone();
            let token = token.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                authenticate(&mut stream, &token).await;
                let header = format!("Content-Length: {FRAME}\r\n\r\n");
                stream.write_all(header.as_bytes()).await.unwrap();
                let chunk = vec![b' '; 1 << 20];
                let mut sent = 0;
                while sent < HALF {
                    let n = chunk.len().min(HALF - sent);
                    if stream.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    sent += n;
                }
                let _ = done.send(i);
                // Half-way through its frame, the client holds on until told to go.
                let _ = close_rx.await;
            });
        }
        let admitted_cap = BUDGET / FRAME;
        let mut admitted = Vec::new();
        while admitted.len() < admitted_cap {
            let i = tokio::time::timeout(GUARD, done_rx.recv())
                .await
                .expect("the admitted clients' writes did not end in time")
                .unwrap();
            admitted.push(i);
        }
        // The admitted half frames are in the server's memory once its RSS shows them.
        tokio::time::timeout(GUARD, async {
            while rss(pid) < baseline + admitted_cap * HALF * 3 / 4 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the server did not read the admitted frames in time");
        let held = rss(pid);
        let mut admitted_then = admitted.len();
        while done_rx.try_recv().is_ok() {
            admitted_then += 1;
        }
        // The admitted clients go away mid-frame: their room goes to the ones waiting.
        for i in &admitted {
            if let Some(close) = closers.get_mut(*i) {
                let _ = std::mem::replace(close, tokio::sync::oneshot::channel().0).send(());
            }
        }
        let mut after_release = 0;
        while after_release < admitted_cap {
            tokio::time::timeout(GUARD, done_rx.recv())
                .await
                .expect("the waiting clients did not get room in time")
                .unwrap();
            after_release += 1;
        }
        (baseline, held, admitted_then, after_release)
    });
    drop(child.stdin.take());
    let _ = child.wait();
    eprintln!(
        "frame budget: baseline RSS {} MB, with {CLIENTS} clients half-way through {} MB frames {} MB (budget {} MB)",
        baseline >> 20,
        FRAME >> 20,
        held >> 20,
        BUDGET >> 20
    );
    assert_eq!(
        admitted_then,
        BUDGET / FRAME,
        "only as many frames as fit in the budget were being read"
    );
    // Twenty half frames would be 600 MB; the budget allows two.
    assert!(
        held < baseline + BUDGET + (32 << 20),
        "the server held {} MB over its baseline",
        (held - baseline) >> 20
    );
    assert_eq!(after_release, BUDGET / FRAME);
}
