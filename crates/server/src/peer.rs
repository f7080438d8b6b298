//! The sending half of a client connection, shared by its handlers and its sessions: queue
//! a frame, notify, call the client and wait for its answer.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::auth::ConnectionToken;
use crate::rpc::{self, RpcError};

/// Why a call to the client did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CallError {
    /// The connection is gone (or going): nobody will answer.
    #[error("the SDK client disconnected")]
    Closed,
    /// The client answered with an error.
    #[error("the SDK client answered with an error: {0}")]
    Rpc(RpcError),
    /// The connection has not authenticated: nothing is asked of it.
    #[error("the SDK client has not authenticated (connect with the connection token)")]
    Unauthenticated,
}

/// The sending half of a connection, shared by its handlers and its sessions.
pub(crate) struct Peer {
    id: u64,
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: std::sync::Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request: AtomicU64,
    /// Cancelled when the read side is over: calls to the client can no longer be answered.
    closed: CancellationToken,
    /// The token this connection must present in `connect` (TCP); `None` when it needs none.
    token: Option<Arc<ConnectionToken>>,
    authorized: AtomicBool,
}

impl Peer {
    /// A connection that must present `token` before anything but `connect` (or nothing,
    /// when `token` is `None`).
    pub(crate) fn new(
        id: u64,
        out: mpsc::UnboundedSender<Vec<u8>>,
        token: Option<Arc<ConnectionToken>>,
    ) -> Self {
        let authorized = token.is_none();
        Peer {
            id,
            out,
            pending: Default::default(),
            next_request: AtomicU64::new(1),
            closed: CancellationToken::new(),
            token,
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

    /// Sends a notification; a connection that has not authenticated gets none (nothing it
    /// may not ask for reaches it, `session.lifecycle` included).
    pub(crate) fn notify(&self, method: &str, params: &Value) {
        if !self.is_authorized() {
            tracing::debug!(connection = self.id, %method, "no notification to a connection that has not authenticated");
            return;
        }
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

    /// The token this connection must present in `connect`, if any.
    pub(crate) fn token(&self) -> Option<&ConnectionToken> {
        self.token.as_deref()
    }

    /// Records a successful `connect`.
    pub(crate) fn authorize(&self) {
        self.authorized.store(true, Ordering::Release);
    }

    /// Calls a method on the client and waits for its answer (or for the connection to end).
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        if !self.is_authorized() {
            return Err(CallError::Unauthenticated);
        }
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

    pub(crate) fn answer(&self, id: &Value, outcome: Result<Value, RpcError>) {
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

    pub(crate) fn close(&self) {
        self.closed.cancel();
        lock(&self.pending).clear();
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
