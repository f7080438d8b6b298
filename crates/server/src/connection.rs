//! One client connection: a reader that turns frames into calls, a writer task that owns the
//! output stream, and the [`Peer`] handle through which sessions notify and call the client.
//!
//! Requests are handled concurrently (each in its own task; a panic in one becomes an internal
//! error response). Everything written goes through one queue, so notifications of a session
//! keep their order. When the stream ends the connection tears down in an order that never
//! waits on the gone client: calls to the client fail first, running handlers finish, the
//! sessions this client opened are aborted and closed (journal durable, lock released), and
//! the writer flushes what is queued.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::dispatch;
use crate::framing::{Frame, FrameError, FrameReader, write_frame};
use crate::rpc::{self, Incoming, RpcError};
use crate::server::Server;

/// Why a call to the client did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CallError {
    /// The connection is gone (or going): nobody will answer.
    #[error("the SDK client disconnected")]
    Closed,
    /// The client answered with an error.
    #[error("the SDK client answered with an error: {0}")]
    Rpc(RpcError),
}

/// The sending half of a connection, shared by its handlers and its sessions.
pub(crate) struct Peer {
    id: u64,
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: std::sync::Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request: AtomicU64,
    /// Cancelled when the read side is over: calls to the client can no longer be answered.
    closed: CancellationToken,
    authorized: AtomicBool,
}

impl Peer {
    fn new(id: u64, out: mpsc::UnboundedSender<Vec<u8>>, authorized: bool) -> Self {
        Peer {
            id,
            out,
            pending: Default::default(),
            next_request: AtomicU64::new(1),
            closed: CancellationToken::new(),
            authorized: AtomicBool::new(authorized),
        }
    }

    /// The connection's id (unique in this server).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Queues a frame body; false when the writer is gone.
    pub(crate) fn send(&self, body: Vec<u8>) -> bool {
        self.out.send(body).is_ok()
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        self.send(rpc::notification(method, params));
    }

    /// True once the client can no longer answer.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves once the client can no longer answer (or be answered).
    pub(crate) async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// Whether the client passed `connect` (or needs not).
    pub(crate) fn is_authorized(&self) -> bool {
        self.authorized.load(Ordering::Acquire)
    }

    /// Records a successful `connect`.
    pub(crate) fn authorize(&self) {
        self.authorized.store(true, Ordering::Release);
    }

    /// Calls a method on the client and waits for its answer (or for the connection to end).
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        if self.is_closed() {
            return Err(CallError::Closed);
        }
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if !self.send(rpc::request(id, method, &params)) {
            lock(&self.pending).remove(&id);
            return Err(CallError::Closed);
        }
        tokio::select! {
            answer = rx => match answer {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(CallError::Rpc(e)),
                Err(_) => Err(CallError::Closed),
            },
            _ = self.closed.cancelled() => {
                lock(&self.pending).remove(&id);
                Err(CallError::Closed)
            }
        }
    }

    fn answer(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let waiter = id.as_u64().and_then(|id| lock(&self.pending).remove(&id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => {
                tracing::warn!(connection = self.id, %id, "response to no pending request; ignored")
            }
        }
    }

    fn close(&self) {
        self.closed.cancel();
        lock(&self.pending).clear();
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves one client until its stream ends, the server shuts down or writing fails.
pub(crate) async fn serve<R, W>(server: Server, input: R, output: W, needs_token: bool)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let authorized = !needs_token || server.config().connection_token.is_none();
    let peer = Arc::new(Peer::new(server.next_connection_id(), out_tx, authorized));
    let finish = CancellationToken::new();
    let writer = tokio::spawn(write_loop(
        out_rx,
        output,
        Arc::clone(&peer),
        finish.clone(),
    ));
    server.add_peer(Arc::clone(&peer));
    tracing::info!(connection = peer.id(), "client connected");

    let mut frames = FrameReader::new(BufReader::new(input), server.config().max_frame_bytes);
    let mut handlers = JoinSet::new();
    let shutdown = server.shutdown_token();
    loop {
        let frame = tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = peer.closed.cancelled() => break,
            frame = frames.next_frame() => frame,
        };
        match frame {
            Ok(None) => {
                tracing::info!(connection = peer.id(), "client closed the stream");
                break;
            }
            Ok(Some(Frame::Body(body))) => incoming(&server, &peer, &body, &mut handlers),
            Ok(Some(Frame::Oversized { declared, limit })) => {
                tracing::warn!(
                    connection = peer.id(),
                    declared,
                    limit,
                    "oversized frame refused"
                );
                peer.send(rpc::error_response(
                    &Value::Null,
                    &RpcError::invalid_request(format!(
                        "frame of {declared} bytes exceeds the limit of {limit} bytes; it was skipped"
                    )),
                ));
            }
            Ok(Some(Frame::BadHeader(reason))) => {
                tracing::warn!(connection = peer.id(), %reason, "bad frame header");
                peer.send(rpc::error_response(&Value::Null, &RpcError::parse(reason)));
            }
            Err(e @ (FrameError::Truncated { .. } | FrameError::TruncatedHeader)) => {
                tracing::warn!(connection = peer.id(), error = %e, "client stream ended mid-frame");
                peer.send(rpc::error_response(
                    &Value::Null,
                    &RpcError::parse(e.to_string()),
                ));
                break;
            }
            Err(FrameError::Io(e)) => {
                tracing::warn!(connection = peer.id(), error = %e, "reading from the client failed");
                break;
            }
        }
        // Reap finished handlers so the set does not grow with the connection's lifetime.
        while handlers.try_join_next().is_some() {}
    }

    // Teardown: nothing may wait on the client from here on.
    peer.close();
    while handlers.join_next().await.is_some() {}
    server.connection_closed(&peer).await;
    finish.cancel();
    let _ = writer.await;
    tracing::info!(connection = peer.id(), "connection closed");
}

/// Routes one frame body.
fn incoming(server: &Server, peer: &Arc<Peer>, body: &[u8], handlers: &mut JoinSet<()>) {
    match rpc::parse_incoming(body) {
        Err(rejected) => {
            tracing::warn!(connection = peer.id(), error = %rejected.error, "unusable message");
            peer.send(rpc::error_response(&rejected.id, &rejected.error));
        }
        Ok(Incoming::Response { id, outcome }) => peer.answer(&id, outcome),
        Ok(Incoming::Notification { method, .. }) => {
            // No client notification means anything to this server; there is nobody to tell.
            tracing::debug!(connection = peer.id(), %method, "client notification ignored");
        }
        Ok(Incoming::Request { id, method, params }) => {
            let server = server.clone();
            let peer = Arc::clone(peer);
            handlers.spawn(async move {
                let call = {
                    let (server, peer, method) = (server.clone(), Arc::clone(&peer), method.clone());
                    tokio::spawn(async move { dispatch::call(&server, &peer, &method, params).await })
                };
                let body = match call.await {
                    Ok(Ok(result)) => rpc::response(&id, &result),
                    Ok(Err(error)) => {
                        tracing::debug!(connection = peer.id(), %method, %error, "request failed");
                        rpc::error_response(&id, &error)
                    }
                    Err(join) => {
                        tracing::error!(connection = peer.id(), %method, error = %join, "handler crashed");
                        rpc::error_response(
                            &id,
                            &RpcError::internal(format!("internal error while handling {method}")),
                        )
                    }
                };
                peer.send(body);
            });
        }
    }
}

/// Writes queued bodies until told to finish, then flushes what is left.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
    peer: Arc<Peer>,
    finish: CancellationToken,
) {
    loop {
        let body = tokio::select! {
            biased;
            body = rx.recv() => body,
            _ = finish.cancelled() => {
                rx.close();
                rx.recv().await
            }
        };
        let Some(body) = body else { break };
        if let Err(e) = write_frame(&mut output, &body).await {
            tracing::warn!(connection = peer.id(), error = %e, "writing to the client failed");
            peer.close();
            return;
        }
    }
    use tokio::io::AsyncWriteExt;
    let _ = output.shutdown().await;
}
