//! Model-answer benchmarks against the scripted server on 127.0.0.1:
//! - one SSE event of 16 MB and of 64 MB (read time: linear in the size);
//! - an endless stream and an endless non-streamed body under the default limits (time to
//!   the `response_too_large` error, and how much the process's peak RSS grew).
//!
//! Each time is a median over runs; RSS is the growth of `VmHWM` (Linux) over the run.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelProvider, OpenAiConfig, OpenAiProvider, ResponseLimits,
};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

const RUNS: usize = 5;

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("go")],
        stream,
        ..Default::default()
    }
}

/// Peak resident set size so far, in bytes (0 where `/proc` has none).
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

async fn one_call(
    server: &ScriptedServer,
    limits: ResponseLimits,
    stream: bool,
) -> (Duration, String) {
    let mut config = OpenAiConfig::new(server.url(), "m");
    config.limits = limits;
    let provider = OpenAiProvider::new(config).expect("provider");
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Drain deltas as a session would (they are not kept).
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let started = Instant::now();
    let outcome = provider
        .complete(&request(stream), tx, CancellationToken::new())
        .await;
    let took = started.elapsed();
    let _ = drain.await;
    let what = match outcome {
        Ok(r) => format!("ok, {} bytes", r.content.len()),
        Err(e) => e.error_type().to_string(),
    };
    (took, what)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn event_of(bytes: usize) {
    let limits = ResponseLimits {
        max_line_bytes: bytes + 1024 * 1024,
        max_answer_bytes: bytes + 1024 * 1024,
        ..Default::default()
    };
    let mut times = Vec::new();
    let mut what = String::new();
    for _ in 0..RUNS {
        let server = ScriptedServer::start(Script::new().text("x".repeat(bytes)))
            .await
            .expect("server");
        let (took, w) = one_call(&server, limits, true).await;
        times.push(took);
        what = w;
    }
    println!(
        "one SSE event of {} MB: median {:.0} ms ({what})",
        bytes / 1_000_000,
        median(times).as_secs_f64() * 1000.0
    );
}

async fn endless(stream: bool) {
    let server = ScriptedServer::start(
        Script::new().respond(ScriptedResponse::text("0123456789abcdef".repeat(256)).endless()),
    )
    .await
    .expect("server");
    let before = peak_rss();
    let (took, what) = one_call(&server, ResponseLimits::default(), stream).await;
    let grew = peak_rss().saturating_sub(before);
    println!(
        "endless {} under the default limits: stopped after {:.0} ms ({what}), peak RSS grew {} MiB",
        if stream {
            "stream"
        } else {
            "non-streamed body"
        },
        took.as_secs_f64() * 1000.0,
        grew / (1024 * 1024)
    );
}

#[tokio::main]
async fn main() {
    // Endless first: the peak RSS is a high-water mark the big events would raise.
    endless(true).await;
    endless(false).await;
    event_of(16_000_000).await;
    event_of(64_000_000).await;
}
