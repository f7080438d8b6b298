//! The SDK client that answers the sessions' model calls itself (the clients'
//! `CopilotRequestHandler`): after `llmInference.setProvider`, each model call's HTTP request
//! goes to that client instead of the network, as the Copilot CLI sends it:
//!
//! - the server asks `llmInference.httpRequestStart {requestId, sessionId, agentId,
//!   parentAgentId?, interactionType, method, url, headers, transport: "http"}`, then
//!   `llmInference.httpRequestChunk {requestId, data, end: true}` with the body;
//! - the client answers with `llmInference.httpResponseStart {requestId, status, headers}` and
//!   `llmInference.httpResponseChunk {requestId, data, binary?, end?, error?}` frames, which
//!   [`Inference::deliver`] routes to the waiting call by its request id;
//! - a call that is dropped (the turn aborted) sends `httpRequestChunk {requestId, cancel:
//!   true}`, so the client's handler sees its signal fire;
//! - a client error (`error` in a chunk) fails the call with the runtime's text, `Failed native
//!   model HTTP request: <message>`, retried like a refused connection; a client that goes
//!   away fails it too: nothing waits for an answer that cannot come.
//!
//! One client at a time is the provider, as in the Copilot CLI; its slot is freed when its
//! connection closes. The request's headers carry the call's credential: they go only into
//! the frame to that client, and nothing here logs a frame or a header.
//!
//! Memory: each call's response frames wait in a channel of [`RESPONSE_FRAMES`] frames (each
//! within the frame limit); a full channel holds the client's next frame until the call
//! reads, and the answer's own limits (`max_body_bytes`, the SSE limits) bound the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use turnstile_providers::{
    BoxFuture, CallOrigin, Exchange, ExchangeRequest, ExchangeResponse, ModelError, ModelErrorKind,
    ResponseBody,
};

use crate::peer::Peer;

/// Response frames of one call held before the client's next one waits.
pub(crate) const RESPONSE_FRAMES: usize = 64;

/// What the Copilot CLI says when a second client asks to be the provider.
const TAKEN: &str = "Another client is already the LLM inference provider.";

/// One frame of a response, as the client sent it.
#[derive(Debug)]
enum Frame {
    /// `httpResponseStart`.
    Head {
        status: u16,
        headers: Vec<(String, String)>,
    },
    /// `httpResponseChunk` without an error.
    Chunk { data: Vec<u8>, end: bool },
    /// `httpResponseChunk` with an error: the response ends failed.
    Error(String),
}

/// A call waiting for its response: the connection it was sent to and where its frames go.
struct Waiting {
    connection: u64,
    frames: mpsc::Sender<Frame>,
}

/// The provider client and the calls waiting for it (one per server).
#[derive(Default)]
pub(crate) struct Inference {
    provider: Mutex<Option<Arc<Peer>>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `llmInference.httpResponseStart`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponseStart {
    request_id: String,
    status: u16,
    #[serde(default)]
    headers: HashMap<String, Vec<String>>,
}

/// `llmInference.httpResponseChunk`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponseChunk {
    request_id: String,
    #[serde(default)]
    data: String,
    #[serde(default)]
    binary: bool,
    #[serde(default)]
    end: bool,
    error: Option<ChunkError>,
}

/// `httpResponseChunk.error`.
#[derive(Debug, Deserialize)]
pub(crate) struct ChunkError {
    message: String,
}

/// Why a frame of the client was not taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// `binary` data that is not base64.
    #[error("httpResponseChunk.data is not base64 though binary is true")]
    NotBase64,
}

impl Inference {
    /// Makes `peer` the provider; false when another open connection already is.
    pub(crate) fn set_provider(&self, peer: &Arc<Peer>) -> Result<(), &'static str> {
        let mut slot = lock(&self.provider);
        match slot.as_ref() {
            Some(current) if current.id() != peer.id() && !current.is_closed() => Err(TAKEN),
            _ => {
                *slot = Some(Arc::clone(peer));
                Ok(())
            }
        }
    }

    /// The provider client, when one is set and connected.
    pub(crate) fn provider(&self) -> Option<Arc<Peer>> {
        lock(&self.provider)
            .as_ref()
            .filter(|p| !p.is_closed())
            .cloned()
    }

    /// Frees the slot when `peer` held it (its connection closed).
    pub(crate) fn connection_closed(&self, peer: &Peer) {
        let mut slot = lock(&self.provider);
        if slot.as_ref().is_some_and(|p| p.id() == peer.id()) {
            *slot = None;
        }
    }

    /// `llmInference.httpResponseStart` of connection `peer`: true when a call waits for it.
    pub(crate) async fn response_start(&self, peer: &Peer, params: ResponseStart) -> bool {
        let headers = params
            .headers
            .into_iter()
            .flat_map(|(name, values)| {
                let name = name.to_ascii_lowercase();
                values.into_iter().map(move |v| (name.clone(), v))
            })
            .collect();
        let frame = Frame::Head {
            status: params.status,
            headers,
        };
        self.deliver(peer, &params.request_id, frame).await
    }

    /// `llmInference.httpResponseChunk` of connection `peer`: true when a call waits for it.
    pub(crate) async fn response_chunk(
        &self,
        peer: &Peer,
        params: ResponseChunk,
    ) -> Result<bool, FrameError> {
        let frame = match params.error {
            Some(error) => Frame::Error(error.message),
            None => Frame::Chunk {
                data: if params.binary {
                    base64::engine::general_purpose::STANDARD
                        .decode(params.data.as_bytes())
                        .map_err(|_| FrameError::NotBase64)?
                } else {
                    params.data.into_bytes()
                },
                end: params.end,
            },
        };
        Ok(self.deliver(peer, &params.request_id, frame).await)
    }

    /// Hands `frame` to the call `request_id` sent to `peer`; false when there is none (an
    /// unknown id, another connection's, or a call that is over).
    async fn deliver(&self, peer: &Peer, request_id: &str, frame: Frame) -> bool {
        let frames = match lock(&self.waiting).get(request_id) {
            Some(w) if w.connection == peer.id() => w.frames.clone(),
            _ => return false,
        };
        frames.send(frame).await.is_ok()
    }

    /// Registers a call to `peer`; its frames arrive on the receiver.
    fn wait(self: &Arc<Self>, peer: &Arc<Peer>, request_id: &str) -> mpsc::Receiver<Frame> {
        let (tx, rx) = mpsc::channel(RESPONSE_FRAMES);
        lock(&self.waiting).insert(
            request_id.to_owned(),
            Waiting {
                connection: peer.id(),
                frames: tx,
            },
        );
        rx
    }
}

/// A session's model calls sent to the provider client: the provider of the HTTP providers'
/// configuration ([`turnstile_providers::OpenAiConfig::exchange`]).
pub(crate) struct ClientExchange {
    /// The server's provider slot and waiting calls.
    pub inference: Arc<Inference>,
    /// The session the calls are for.
    pub session_id: String,
}

/// A call in flight: unregistered when dropped, and the client told to cancel unless the
/// response ended.
struct InFlight {
    inference: Arc<Inference>,
    peer: Arc<Peer>,
    request_id: String,
    ended: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.inference.waiting).remove(&self.request_id);
        if self.ended || self.peer.is_closed() {
            return;
        }
        // Dropped before its end: the turn was cancelled (or the call failed); the client's
        // request must not go on.
        let params = json!({
            "requestId": self.request_id,
            "data": "",
            "end": true,
            "cancel": true,
            "cancelReason": "cancelled by the runtime",
        });
        let peer = Arc::clone(&self.peer);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.call("llmInference.httpRequestChunk", params).await;
            });
        }
    }
}

/// The runtime's text for a request the client failed.
fn failed(message: &str) -> ModelError {
    ModelError {
        kind: ModelErrorKind::Connection,
        status_code: None,
        message: format!("Failed native model HTTP request: {message}"),
        retryable: true,
    }
}

/// The agent fields of a call's start frame, as the Copilot CLI fills them.
fn agent_fields(params: &mut Map<String, Value>, session_id: &str, origin: &CallOrigin) {
    let (agent, parent, interaction) = match origin {
        CallOrigin::Main => (session_id, None, "conversation-agent"),
        CallOrigin::Agent(id) => (id.as_str(), Some(session_id), "conversation-subagent"),
        CallOrigin::Summary => (session_id, None, "conversation-compaction"),
    };
    params.insert("agentId".into(), agent.into());
    if let Some(parent) = parent {
        params.insert("parentAgentId".into(), parent.into());
    }
    params.insert("interactionType".into(), interaction.into());
}

impl ClientExchange {
    async fn exchange(&self, request: ExchangeRequest) -> Result<ExchangeResponse, ModelError> {
        let peer = self
            .inference
            .provider()
            .ok_or_else(|| failed("the SDK client that answers model calls disconnected"))?;
        let request_id = uuid::Uuid::new_v4().to_string();
        let mut frames = self.inference.wait(&peer, &request_id);
        let mut in_flight = InFlight {
            inference: Arc::clone(&self.inference),
            peer: Arc::clone(&peer),
            request_id: request_id.clone(),
            ended: false,
        };
        let mut headers: Map<String, Value> = Map::new();
        for (name, value) in &request.headers {
            let values = headers
                .entry(name.to_ascii_lowercase())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(values) = values {
                values.push(Value::String(value.clone()));
            }
        }
        let mut start = Map::new();
        start.insert("requestId".into(), request_id.clone().into());
        start.insert("sessionId".into(), self.session_id.clone().into());
        agent_fields(&mut start, &self.session_id, &request.origin);
        start.insert("method".into(), request.method.into());
        start.insert("url".into(), request.url.into());
        start.insert("headers".into(), Value::Object(headers));
        start.insert("transport".into(), "http".into());
        peer.call("llmInference.httpRequestStart", Value::Object(start))
            .await
            .map_err(|e| failed(&e.to_string()))?;
        let body = match String::from_utf8(request.body) {
            Ok(text) => json!({"requestId": request_id, "data": text, "end": true}),
            Err(bytes) => json!({
                "requestId": request_id,
                "data": base64::engine::general_purpose::STANDARD.encode(bytes.into_bytes()),
                "binary": true,
                "end": true,
            }),
        };
        peer.call("llmInference.httpRequestChunk", body)
            .await
            .map_err(|e| failed(&e.to_string()))?;
        let (status, headers) = match next(&peer, &mut frames).await? {
            Frame::Head { status, headers } => (status, headers),
            Frame::Error(message) => {
                in_flight.ended = true;
                return Err(failed(&message));
            }
            Frame::Chunk { .. } => {
                return Err(failed(
                    "the SDK client sent a body before its response head",
                ));
            }
        };
        // A handler that threw answers a failure status and then its error: the error is
        // what the call failed of, as the Copilot CLI reports it.
        let mut first = None;
        if !(200..300).contains(&status) {
            match next(&peer, &mut frames).await? {
                Frame::Error(message) => {
                    in_flight.ended = true;
                    return Err(failed(&message));
                }
                frame => first = Some(frame),
            }
        }
        Ok(ExchangeResponse {
            status,
            headers,
            body: Box::new(ClientBody {
                peer,
                frames,
                first,
                in_flight,
                done: false,
            }),
        })
    }
}

/// The next frame of a call, or the error of a client that went away.
async fn next(peer: &Peer, frames: &mut mpsc::Receiver<Frame>) -> Result<Frame, ModelError> {
    tokio::select! {
        frame = frames.recv() => frame.ok_or_else(|| failed("the call's response was dropped")),
        _ = peer.closed() => Err(failed("the SDK client that answers model calls disconnected")),
    }
}

impl Exchange for ClientExchange {
    fn send(
        &self,
        request: ExchangeRequest,
    ) -> BoxFuture<'_, Result<ExchangeResponse, ModelError>> {
        Box::pin(self.exchange(request))
    }
}

/// The body of a response the client sends.
struct ClientBody {
    peer: Arc<Peer>,
    frames: mpsc::Receiver<Frame>,
    /// A frame read ahead (after a failure status).
    first: Option<Frame>,
    in_flight: InFlight,
    done: bool,
}

impl ClientBody {
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>, ModelError> {
        loop {
            if self.done {
                return Ok(None);
            }
            let frame = match self.first.take() {
                Some(frame) => frame,
                None => next(&self.peer, &mut self.frames).await?,
            };
            match frame {
                Frame::Chunk { data, end } => {
                    if end {
                        self.done = true;
                        self.in_flight.ended = true;
                    }
                    if !data.is_empty() {
                        return Ok(Some(data));
                    }
                }
                Frame::Error(message) => {
                    self.done = true;
                    self.in_flight.ended = true;
                    return Err(ModelError {
                        retryable: false,
                        kind: ModelErrorKind::Stream,
                        ..failed(&message)
                    });
                }
                Frame::Head { .. } => {
                    return Err(failed("the SDK client sent a second response head"));
                }
            }
        }
    }
}

impl ResponseBody for ClientBody {
    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>> {
        Box::pin(self.next_piece())
    }
}
