//! Loop benchmarks against a scripted server that answers instantly on 127.0.0.1:
//! - engine time per turn, excluding the model call (in-process sessions);
//! - process start to `session.idle` for a 3-turn session with two tool calls
//!   (`loop_bench --binary target/release/turnstile`);
//! - measuring a request against the window: loading a BPE vocabulary, counting text with it
//!   against the byte rule, and a 400 KB request measured the first time and again (cached).
//!
//! Each figure is a median over runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use turnstile_journal::{Durability, StateRoot};
use turnstile_loop::{SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{
    BoxFuture, ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse, OpenAiConfig,
    OpenAiProvider,
};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_tools::ToolRegistry;

const RUNS: usize = 30;

/// Wraps a provider and adds up the time spent inside model calls.
struct Timed {
    inner: OpenAiProvider,
    nanos: Arc<AtomicU64>,
}

impl ModelProvider for Timed {
    fn name(&self) -> &str {
        "timed"
    }
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let start = Instant::now();
            let r = self.inner.complete(request, events, cancel).await;
            self.nanos
                .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            r
        })
    }
}

fn script() -> Script {
    Script::new()
        .respond(ScriptedResponse::tool_call(
            "glob",
            json!({"pattern": "*.txt"}),
        ))
        .respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": "alpha.txt"}),
        ))
        .text("There is one file, alpha.txt.")
}

/// Token counting: the vocabulary's load, counting speed, and a request measured twice.
fn tokens_bench() {
    use turnstile_loop::prompt::tokens::{Encoding, Measure, TokenCounter};
    use turnstile_providers::ChatMessage;

    let start = Instant::now();
    Encoding::O200k.count("warm");
    let load_ms = start.elapsed().as_secs_f64() * 1000.0;
    // Text as a coding session sends it: this crate's own sources, 1 MB of them.
    let mut text = String::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in ignore::Walk::new(dir).flatten() {
        if entry.path().extension().is_some_and(|e| e == "rs") && text.len() < 1 << 20 {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    // The request below is cut at byte offsets.
    text.retain(|c| c.is_ascii());
    let mut rates = Vec::new();
    for encoding in [Encoding::O200k, Encoding::Cl100k] {
        encoding.count("warm");
        let mut times = Vec::new();
        let mut tokens = 0;
        for _ in 0..5 {
            let start = Instant::now();
            tokens = encoding.count(&text);
            times.push(start.elapsed().as_secs_f64());
        }
        let secs = median(times);
        rates.push(format!(
            "{{\"encoding\":\"{}\",\"tokens\":{tokens},\"mb_per_s\":{:.1}}}",
            encoding.name(),
            text.len() as f64 / secs / 1e6
        ));
    }
    println!(
        "{{\"bench\":\"token_count\",\"text_bytes\":{},\"o200k_load_ms\":{load_ms:.1},\"rates\":[{}]}}",
        text.len(),
        rates.join(",")
    );
    // A long conversation's request: 200 messages of 2 KB; then the next turn's, one longer.
    let messages: Vec<ChatMessage> = (0..200)
        .map(|i| ChatMessage::User {
            content: text[i * 2048..(i + 1) * 2048].to_owned(),
            parts: vec![],
        })
        .collect();
    let mut request = ChatRequest {
        messages,
        ..Default::default()
    };
    let counter = TokenCounter::default();
    let measure = Measure::with(&counter, "gpt-4.1");
    let start = Instant::now();
    measure.usage_info(&request, 128_000, false);
    let first_ms = start.elapsed().as_secs_f64() * 1000.0;
    request.messages.push(ChatMessage::User {
        content: "one more".into(),
        parts: vec![],
    });
    let start = Instant::now();
    measure.usage_info(&request, 128_000, false);
    let again_ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{{\"bench\":\"measure_request\",\"bytes\":{},\"first_ms\":{first_ms:.2},\"next_turn_ms\":{again_ms:.3}}}",
        200 * 2048
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let binary = args
        .iter()
        .position(|a| a == "--binary")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let work = tempfile::tempdir().expect("tmp");
    std::fs::write(work.path().join("alpha.txt"), "alpha\n").expect("write");
    let state = tempfile::tempdir().expect("tmp");
    let root = StateRoot::new(state.path());

    tokens_bench();

    for durability in [Durability::Off, Durability::Turn] {
        let mut per_turn = Vec::new();
        for _ in 0..RUNS {
            let server = ScriptedServer::start(script()).await.expect("server");
            let nanos = Arc::new(AtomicU64::new(0));
            let provider = Timed {
                inner: OpenAiProvider::new(OpenAiConfig::new(server.url(), "bench"))
                    .expect("provider"),
                nanos: Arc::clone(&nanos),
            };
            let mut config = SessionConfig::new(work.path(), "bench");
            config.durability = durability;
            config.permissions = PermissionPolicy::from_flags(true, &[], &[]).expect("policy");
            let parts = SessionParts {
                config,
                provider: Arc::new(provider),
                tools: Arc::new(ToolRegistry::builtin(false)),
                hooks: None,
                external_tools: None,
                permission_asker: None,
                section_transformer: None,
            };
            let session = SessionHandle::create(&root, None, parts).expect("create");
            let start = Instant::now();
            session
                .send_and_wait("bench", SendOptions::default())
                .await
                .expect("send");
            let total = start.elapsed();
            session.shutdown().await.expect("shutdown");
            let model = Duration::from_nanos(nanos.load(Ordering::Relaxed));
            per_turn.push((total - model).as_secs_f64() * 1000.0 / 3.0);
        }
        println!(
            "{{\"bench\":\"engine_ms_per_turn\",\"durability\":\"{durability:?}\",\"runs\":{RUNS},\"median_ms\":{:.3},\"min_ms\":{:.3}}}",
            median(per_turn.clone()),
            per_turn.iter().cloned().fold(f64::MAX, f64::min)
        );
    }

    if let Some(binary) = binary {
        let mut start_to_idle = Vec::new();
        for _ in 0..RUNS {
            let server = ScriptedServer::start(script()).await.expect("server");
            let start = Instant::now();
            let mut child = tokio::process::Command::new(&binary)
                .arg("--state-dir")
                .arg(state.path())
                .args([
                    "run",
                    "--json",
                    "--allow-all-tools",
                    "--model",
                    "bench",
                    "--base-url",
                ])
                .arg(server.url())
                .arg("--cwd")
                .arg(work.path())
                .arg("bench")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn turnstile");
            let stdout = child.stdout.take().expect("stdout");
            use tokio::io::AsyncBufReadExt;
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("{\"type\":\"session.idle\"") {
                    start_to_idle.push(start.elapsed().as_secs_f64() * 1000.0);
                }
            }
            child.wait().await.expect("wait");
        }
        println!(
            "{{\"bench\":\"process_start_to_idle_ms\",\"runs\":{},\"median_ms\":{:.1}}}",
            start_to_idle.len(),
            median(start_to_idle)
        );
    }
}
