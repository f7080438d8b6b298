//! The server: accepts connections on 127.0.0.1 and answers from a [`Script`].

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::answer::Answer;
use crate::http::{self, LAST_CHUNK};
use crate::script::{DEFAULT_MODEL, Script, ScriptedResponse, Wire};
use crate::{anthropic, responses};

/// How to run a server beyond its script.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Appends every request body received, as one JSON line, to this file.
    pub record_requests: Option<PathBuf>,
}

/// A running scripted server; shuts down when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

struct Shared {
    script: Script,
    model: String,
    state: Mutex<State>,
    record: Option<Mutex<std::fs::File>>,
    tool_calls: AtomicU64,
    /// Woken at every model request, for the responses that wait for later requests.
    arrived: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// How many scripted responses have been handed out (including those past the end).
    next: usize,
    /// Which responses have been handed out (a `forSystem` one may go before earlier ones).
    served: Vec<bool>,
    /// Summary requests answered so far.
    summaries: usize,
    /// Every chat completion request body received, in order.
    requests: Vec<Value>,
    /// Every request received (any method and path), in order.
    recorded: Vec<RecordedRequest>,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The query string (after `?`), empty when none.
    pub query: String,
    /// Header names (lowercased) and values, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body: its JSON, a JSON string of its text when it is not JSON, `null` when empty.
    pub body: Value,
}

impl RecordedRequest {
    /// The value of a header (name in any case), the first when sent several times.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl ScriptedServer {
    /// Starts a server on a free port of 127.0.0.1 (needs a running tokio runtime).
    pub async fn start(script: Script) -> io::Result<Self> {
        Self::start_with(script, ServerOptions::default()).await
    }

    /// Starts a server with options (fixed port, request recording).
    pub async fn start_with(script: Script, options: ServerOptions) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let addr = listener.local_addr()?;
        let record = match &options.record_requests {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )),
            None => None,
        };
        let model = script
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        let shared = Arc::new(Shared {
            script,
            model,
            state: Mutex::new(State::default()),
            record,
            tool_calls: AtomicU64::new(0),
            arrived: tokio::sync::Notify::new(),
        });
        let (stop, stop_rx) = watch::channel(false);
        let accept_shared = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped(stop_rx.clone()) => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let shared = accept_shared.clone();
                            let stop_rx = stop_rx.clone();
                            tokio::spawn(async move {
                                tokio::select! {
                                    _ = serve(stream, &shared) => {}
                                    _ = stopped(stop_rx) => {}
                                }
                            });
                        }
                        // Out of file descriptors and the like: back off, keep serving.
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    },
                }
            }
        });
        Ok(ScriptedServer { addr, shared, stop })
    }

    /// The base URL clients use: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every chat completion request body received so far, in arrival order (a body that is
    /// not JSON is recorded as a JSON string of its text).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.state.lock().unwrap().requests.clone()
    }

    /// Every request received so far (chat completions, `/models`, unknown paths), in
    /// arrival order, with method, path and headers.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        self.shared.state.lock().unwrap().recorded.clone()
    }

    /// How many scripted responses have been handed out (including the one past the end).
    pub fn responses_served(&self) -> usize {
        self.shared.state.lock().unwrap().next
    }

    /// Stops accepting and closes every open connection (hanging ones included).
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Resolves once the server is told to stop (or its handle is gone).
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

async fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let request = match http::read_request(&mut stream).await {
        Ok(Some(request)) => request,
        Ok(None) => return,
        Err(e) => {
            let _ = write_error(&mut stream, 400, &format!("bad request: {e}"), &[]).await;
            return;
        }
    };
    {
        let body = if request.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&request.body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&request.body).into_owned())
            })
        };
        shared.state.lock().unwrap().recorded.push(RecordedRequest {
            method: request.method.clone(),
            path: request.path.clone(),
            query: request.query.clone(),
            headers: request.headers.clone(),
            body,
        });
    }
    let wire = Wire::of_path(&request.path);
    let models = matches!(request.path.as_str(), "/v1/models" | "/models");
    let _ = match (request.method.as_str(), wire, models) {
        ("POST", Some(wire), _) => match shared.script.wire {
            Some(only) if only != wire => {
                let msg = format!(
                    "this script serves the {} format only, not {} at {}",
                    only.as_str(),
                    wire.as_str(),
                    request.path
                );
                write_error(&mut stream, 404, &msg, &[]).await
            }
            _ => model_request(&mut stream, shared, &request.body, wire).await,
        },
        ("GET", _, true) => {
            let data = shared.script.models.clone().unwrap_or_else(|| {
                vec![json!({"id": shared.model, "object": "model", "created": 0, "owned_by": "turnstile"})]
            });
            let body = json!({"object": "list", "data": data});
            http::write_full(
                &mut stream,
                200,
                "application/json",
                &[],
                body.to_string().as_bytes(),
            )
            .await
        }
        (_, Some(_), _) | (_, _, true) => {
            write_error(&mut stream, 405, "method not allowed", &[]).await
        }
        _ => {
            let msg = format!("no such endpoint: {} {}", request.method, request.path);
            write_error(&mut stream, 404, &msg, &[]).await
        }
    };
}

async fn write_error(
    stream: &mut TcpStream,
    status: u16,
    message: &str,
    extra: &[(String, String)],
) -> io::Result<()> {
    let body = json!({"error": {"message": message, "type": "scripted_model_error", "code": null}});
    http::write_full(
        stream,
        status,
        "application/json",
        extra,
        body.to_string().as_bytes(),
    )
    .await
}

/// How long a response waits at most for the requests it is held behind (`afterRequests`);
/// then it is sent anyway, so a script that miscounted fails on its answers, not by a hang.
const HOLD_AT_MOST: Duration = Duration::from_secs(60);

impl Shared {
    /// Waits until `count` model requests have arrived, or [`HOLD_AT_MOST`].
    async fn wait_for_requests(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + HOLD_AT_MOST;
        loop {
            // Registered before the check, so an arrival in between is not missed.
            let arrived = self.arrived.notified();
            if self.state.lock().unwrap().next >= count {
                return;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return;
            }
        }
    }

    /// Records a request and hands out the index of the response it gets: in `summaries`
    /// for a summary request when the script has some, else in `responses`.
    fn take(&self, body: Value, summary: bool) -> usize {
        if let Some(file) = &self.record {
            let mut file = file.lock().unwrap();
            let _ = writeln!(file, "{body}");
        }
        let mut state = self.state.lock().unwrap();
        state.requests.push(body);
        if summary {
            let index = state.summaries;
            state.summaries += 1;
            return index;
        }
        state.next += 1;
        self.arrived.notify_waiters();
        let responses = &self.script.responses;
        if state.served.len() < responses.len() {
            state.served.resize(responses.len(), false);
        }
        // Only a script that routes by system prompt needs the request's.
        let routed = responses.iter().any(|r| r.for_system.is_some());
        let system = match state.requests.last() {
            Some(request) if routed => system_text(request),
            _ => String::new(),
        };
        // A response meant for this request's system prompt, else the next meant for none.
        let meant = |i: &usize| match &responses[*i].for_system {
            Some(prefix) => system.starts_with(prefix.as_str()),
            None => false,
        };
        let open = |i: &usize| !state.served[*i];
        let found = (0..responses.len()).filter(open).find(meant).or_else(|| {
            (0..responses.len())
                .filter(open)
                .find(|i| responses[*i].for_system.is_none())
        });
        match found {
            Some(index) => {
                state.served[index] = true;
                index
            }
            // Past the end: no response has this index; the error names the request's number.
            None => (state.next - 1).max(responses.len()),
        }
    }
}

/// The text of a request's first message (the system prompt: Chat Completions' first
/// message, the Responses API's `instructions`, the Messages API's `system`); empty if none.
fn system_text(request: &Value) -> String {
    let first = request
        .pointer("/messages/0/content")
        .or_else(|| request.get("instructions"))
        .or_else(|| request.get("system"))
        .or_else(|| request.pointer("/input/0/content"));
    match first {
        Some(Value::String(s)) => s.clone(),
        // Content as parts: their texts in order.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Whether a model request asks for a summary: its last message (`messages` or the Responses
/// API's `input`) mentions "summar" in any case.
fn asks_for_summary(request: &Value) -> bool {
    let last = ["messages", "input"]
        .iter()
        .find_map(|k| request.get(*k).and_then(Value::as_array))
        .and_then(|m| m.last());
    last.is_some_and(|m| m.to_string().to_ascii_lowercase().contains("summar"))
}

async fn model_request(
    stream: &mut TcpStream,
    shared: &Shared,
    body: &[u8],
    wire: Wire,
) -> io::Result<()> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let recorded = parsed
        .clone()
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(body).into_owned()));
    let summary = !shared.script.summaries.is_empty() && asks_for_summary(&recorded);
    let index = shared.take(recorded, summary);
    let Some(request) = parsed.filter(Value::is_object) else {
        return write_error(stream, 400, "the request body is not a JSON object", &[]).await;
    };
    let scripted = if summary {
        let all = &shared.script.summaries;
        all.get(index % all.len())
    } else {
        shared.script.responses.get(index)
    };
    let Some(response) = scripted else {
        let n = shared.script.responses.len();
        let msg = format!(
            "the script has no more responses ({n} were scripted, this is request {})",
            index + 1
        );
        return write_error(stream, 500, &msg, &[]).await;
    };
    let streaming = request.get("stream").and_then(Value::as_bool) == Some(true);
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or(&shared.model)
        .to_string();

    if response.after_requests > 0 {
        shared.wait_for_requests(response.after_requests).await;
    }
    if response.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(response.delay_ms)).await;
    }
    if response.hang && response.drop_after_chunks.is_none() {
        // Silent until the server shuts down (the caller's select ends this task).
        std::future::pending::<()>().await;
    }
    let extra: Vec<(String, String)> = response
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let status = response.status.unwrap_or(200);
    if status != 200 {
        let body = response.error_body.clone().unwrap_or_else(|| {
            let message = format!("scripted error (HTTP {status})");
            match wire {
                Wire::Anthropic => {
                    json!({"type": "error", "error": {"type": "api_error", "message": message}})
                }
                Wire::Completions | Wire::Responses => {
                    json!({"error": {"message": message, "type": "scripted_error", "code": null}})
                }
            }
        });
        return http::write_full(
            stream,
            status,
            "application/json",
            &extra,
            body.to_string().as_bytes(),
        )
        .await;
    }

    let answer = Answer::new(&shared.tool_calls, response, index, model, body.len());
    if !streaming {
        let whole = match wire {
            Wire::Completions => answer.whole(),
            Wire::Responses => responses::whole(&answer),
            Wire::Anthropic => anthropic::whole(&answer),
        };
        return send_whole(stream, response, &answer, whole, &extra).await;
    }
    let data = |events: Vec<String>| -> Vec<String> {
        events
            .into_iter()
            .map(|e| format!("data: {e}\n\n"))
            .collect()
    };
    let (body, end, endless) = match wire {
        Wire::Completions => (
            data(answer.body_events(response.malformed)),
            data(answer.end_events(include_usage)),
            data(vec![answer.chunk(
                0,
                json!({"content": answer.endless_piece()}),
                None,
            )]),
        ),
        Wire::Responses => responses::stream_frames(&answer, response.malformed),
        Wire::Anthropic => anthropic::stream_frames(&answer, response.malformed),
    };
    let frames = Frames { body, end, endless };
    send_stream(stream, response, frames, &extra).await
}

/// The SSE frames of a streamed answer, each complete with its blank line.
struct Frames {
    /// Everything before the end of the answer.
    body: Vec<String>,
    /// What ends it.
    end: Vec<String>,
    /// Repeated after `body` by an endless answer.
    endless: Vec<String>,
}

async fn send_whole(
    stream: &mut TcpStream,
    response: &ScriptedResponse,
    answer: &Answer,
    whole: Value,
    extra: &[(String, String)],
) -> io::Result<()> {
    let body = if response.malformed {
        format!(
            "{{\"id\": \"{}\", \"choices\": [ this is not JSON",
            answer.id
        )
    } else {
        whole.to_string()
    };
    if response.endless {
        return send_endless_body(stream, answer, extra).await;
    }
    if response.drop_after_chunks.is_none() {
        return http::write_full(stream, 200, "application/json", extra, body.as_bytes()).await;
    }
    // Cut the body in half, then close (or go silent).
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("Content-Length".to_string(), body.len().to_string()),
    ];
    headers.extend(extra.iter().cloned());
    let mut bytes = http::head(200, &headers);
    bytes.extend_from_slice(&body.as_bytes()[..body.len() / 2]);
    stream.write_all(&bytes).await?;
    stream.flush().await?;
    if response.hang {
        std::future::pending::<()>().await;
    }
    Ok(())
}

async fn send_stream(
    stream: &mut TcpStream,
    response: &ScriptedResponse,
    frames: Frames,
    extra: &[(String, String)],
) -> io::Result<()> {
    let mut headers = vec![
        ("Content-Type".to_string(), "text/event-stream".to_string()),
        ("Cache-Control".to_string(), "no-cache".to_string()),
        ("Transfer-Encoding".to_string(), "chunked".to_string()),
    ];
    headers.extend(extra.iter().cloned());
    stream.write_all(&http::head(200, &headers)).await?;
    stream.flush().await?;
    let Frames {
        body: mut events,
        end,
        endless,
    } = frames;
    if response.endless {
        for event in &events {
            stream.write_all(&http::chunk(event.as_bytes())).await?;
        }
        let frame = http::chunk(endless.concat().as_bytes());
        // Until the client hangs up (the write fails) or the server shuts down.
        loop {
            stream.write_all(&frame).await?;
        }
    }
    events.extend(end);
    for (sent, event) in events.iter().enumerate() {
        if response.drop_after_chunks == Some(sent) {
            if response.hang {
                std::future::pending::<()>().await;
            }
            // Close without the end of the chunked body: the client sees a cut connection.
            return Ok(());
        }
        if sent > 0 && response.chunk_delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(response.chunk_delay_ms)).await;
        }
        stream.write_all(&http::chunk(event.as_bytes())).await?;
        stream.flush().await?;
    }
    stream.write_all(LAST_CHUNK).await?;
    stream.flush().await?;
    stream.shutdown().await
}

/// A non-streamed body that never ends: the start of a `chat.completion` whose content
/// grows until the client hangs up.
async fn send_endless_body(
    stream: &mut TcpStream,
    answer: &Answer,
    extra: &[(String, String)],
) -> io::Result<()> {
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("Transfer-Encoding".to_string(), "chunked".to_string()),
    ];
    headers.extend(extra.iter().cloned());
    stream.write_all(&http::head(200, &headers)).await?;
    let start = format!(
        "{{\"id\":\"{}\",\"object\":\"chat.completion\",\"model\":{},\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"",
        answer.id,
        Value::String(answer.model.clone())
    );
    stream.write_all(&http::chunk(start.as_bytes())).await?;
    let text = Value::String(answer.endless_piece().repeat(64)).to_string();
    let frame = http::chunk(text.trim_matches('"').as_bytes());
    loop {
        stream.write_all(&frame).await?;
    }
}
