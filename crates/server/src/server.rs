//! The server: its settings, the sessions open in it (each owned by one connection), the
//! connected clients (for `session.lifecycle` broadcasts), the client that answers model calls
//! itself, and orderly shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;

use crate::broadcast::Broadcaster;
use crate::client_inference::Inference;
use crate::config::ServerConfig;
use crate::framing::FrameBudget;
use crate::peer::Peer;
use crate::sessions::{Ending, OpenSession};
use crate::signed_in::SignedIn;

/// A JSON-RPC server for the Copilot SDK clients; cheap to clone.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    config: ServerConfig,
    sessions: Mutex<HashMap<Uuid, Arc<OpenSession>>>,
    broadcaster: Broadcaster,
    frame_budget: FrameBudget,
    /// Sessions the server closed on its own (idle timeout), so a late call can say why.
    closed_by_server: Mutex<HashMap<Uuid, String>>,
    next_connection: AtomicU64,
    shutdown: CancellationToken,
    /// Held while sessions are being closed by a shutdown, so a second caller returns only
    /// once they are all closed.
    closing: tokio::sync::Mutex<()>,
    /// The client that answers model calls itself, and the calls waiting for it.
    inference: Arc<Inference>,
    /// The GitHub accounts signed in through `account.login`.
    signed_in: SignedIn,
    /// Whether the shutdown was asked for by a client (`runtime.shutdown`).
    stop_requested: std::sync::atomic::AtomicBool,
}

impl Server {
    /// A server with these settings; serve it with [`crate::transport`].
    pub fn new(config: ServerConfig) -> Self {
        let frame_budget = FrameBudget::new(
            config.inflight_frame_bytes.max(config.max_frame_bytes),
            config.frame_budget_wait,
        );
        let server = Server {
            inner: Arc::new(Inner {
                config,
                sessions: Mutex::default(),
                broadcaster: Broadcaster::default(),
                frame_budget,
                closed_by_server: Mutex::default(),
                next_connection: AtomicU64::new(1),
                shutdown: CancellationToken::new(),
                closing: tokio::sync::Mutex::new(()),
                inference: Arc::default(),
                signed_in: SignedIn::default(),
                stop_requested: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        if let Some(timeout) = server.inner.config.session_idle_timeout {
            tokio::spawn(reap_idle(Arc::downgrade(&server.inner), timeout));
        }
        // Loaded while the client connects, so that the first session's first turn has it.
        turnstile_loop::prompt::tokens::Encoding::for_model(
            &server.inner.config.default_model.model,
        )
        .preload();
        server
    }

    /// The settings.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Cancelled when the server shuts down (`runtime.shutdown` or [`Server::shutdown`]).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// [`Self::shutdown`] asked for by a client (`runtime.shutdown`): as in the Copilot CLI,
    /// the process's own client (stdio) stays connected, every later request answered
    /// `SERVER_SHUTTING_DOWN`, until it closes the stream or stops the process.
    pub async fn shutdown_by_request(&self) {
        self.inner.stop_requested.store(true, Ordering::SeqCst);
        self.shutdown().await;
    }

    /// Whether the shutdown was asked for by a client (see [`Self::shutdown_by_request`]).
    pub fn stop_requested(&self) -> bool {
        self.inner.stop_requested.load(Ordering::SeqCst)
    }

    /// Stops serving: connections end, every open session is aborted if busy and closed
    /// (journal durable, `session.shutdown` recorded, lock released).
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let _closing = self.inner.closing.lock().await;
        let sessions: Vec<_> = lock(&self.inner.sessions).values().cloned().collect();
        for session in sessions {
            self.close_session(&session, "server shutdown").await;
        }
    }

    /// Closes an open session (see [`OpenSession::close`]) and then forgets it; concurrent
    /// callers all return once it is closed.
    pub(crate) async fn close_session(&self, session: &Arc<OpenSession>, why: &str) {
        self.end_session(session, why, Ending::Close).await;
    }

    /// [`Self::close_session`], ending the session as `ending` says.
    pub(crate) async fn end_session(&self, session: &Arc<OpenSession>, why: &str, ending: Ending) {
        session.end(why, ending).await;
        {
            let mut sessions = lock(&self.inner.sessions);
            if sessions
                .get(&session.id())
                .is_some_and(|s| Arc::ptr_eq(s, session))
            {
                sessions.remove(&session.id());
            }
        }
        // Only now may a waiter reopen it: it is out of the map and its lock is released.
        session.mark_closed();
    }

    /// How many sessions are open or still closing (for tests and logs).
    pub fn open_sessions(&self) -> usize {
        lock(&self.inner.sessions).len()
    }

    /// How many connections have session `id` open, 0 when it is not open (for tests and
    /// logs).
    pub fn session_connections(&self, id: Uuid) -> usize {
        self.session(id).map_or(0, |s| s.clients().len())
    }

    pub(crate) fn next_connection_id(&self) -> u64 {
        self.inner.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn add_peer(&self, peer: Arc<Peer>) {
        self.inner.broadcaster.add(peer);
    }

    /// Forgets a connection; the sessions it was the last to have open are closed, or
    /// suspended when they wait on a client's answer (a permission decision, a client tool's
    /// result): their requests stay open in the journal, so a client that resumes the session
    /// answers them (`continuePendingWork`), as with the Copilot CLI.
    pub(crate) async fn connection_closed(&self, peer: &Peer) {
        self.inner.broadcaster.remove(peer.id());
        self.inner.inference.connection_closed(peer);
        let open_in: Vec<_> = lock(&self.inner.sessions)
            .values()
            .filter(|s| s.is_open_in(peer.id()))
            .cloned()
            .collect();
        for session in open_in {
            if session.detach(peer.id()) == 0 {
                self.remember_closed(session.id(), "its last client disconnected");
                let ending = if session.bridge().awaits_client() {
                    Ending::Suspend
                } else {
                    Ending::Close
                };
                self.end_session(&session, "the client disconnected", ending)
                    .await;
            }
        }
    }

    /// The open session `id`, if any; a session being closed is waited for (its journal lock
    /// is released when this returns `None`).
    pub(crate) async fn open_or_wait(&self, id: Uuid) -> Option<Arc<OpenSession>> {
        loop {
            let session = lock(&self.inner.sessions).get(&id).cloned();
            match session {
                Some(s) if s.is_closing() => s.wait_closed().await,
                other => return other,
            }
        }
    }

    /// Notes why the server closed `id` on its own, for late calls about it.
    pub(crate) fn remember_closed(&self, id: Uuid, why: &str) {
        let mut closed = lock(&self.inner.closed_by_server);
        // Bounded: only the reason of recent closes is worth keeping.
        if closed.len() >= KEPT_CLOSE_REASONS {
            closed.clear();
        }
        closed.insert(id, why.to_owned());
    }

    /// The session `id` if open (closing or not), without waiting.
    pub(crate) fn session(&self, id: Uuid) -> Option<Arc<OpenSession>> {
        lock(&self.inner.sessions).get(&id).cloned()
    }

    /// Registers a freshly opened session; false (and nothing registered) when another one
    /// with this id got in first.
    pub(crate) fn insert_session(&self, session: Arc<OpenSession>) -> bool {
        let mut sessions = lock(&self.inner.sessions);
        if sessions.contains_key(&session.id()) {
            return false;
        }
        lock(&self.inner.closed_by_server).remove(&session.id());
        sessions.insert(session.id(), session);
        true
    }

    /// Why the server closed `id` on its own, if it did.
    pub(crate) fn closed_reason(&self, id: Uuid) -> Option<String> {
        lock(&self.inner.closed_by_server).get(&id).cloned()
    }

    /// Sends a `session.lifecycle` notification to every connected client.
    pub(crate) fn broadcast_lifecycle(&self, params: &Value) {
        self.inner.broadcaster.lifecycle(params);
    }

    /// Bytes of the frame budget not in use now (for tests and logs).
    pub fn frame_budget_available(&self) -> usize {
        self.inner.frame_budget.available()
    }

    /// The budget of frame bytes being received, shared by every connection.
    pub(crate) fn frame_budget(&self) -> &FrameBudget {
        &self.inner.frame_budget
    }

    /// The client that answers model calls itself (`llmInference.*`).
    pub(crate) fn inference(&self) -> &Arc<Inference> {
        &self.inner.inference
    }

    /// The GitHub accounts signed in through `account.login`.
    pub(crate) fn signed_in(&self) -> &SignedIn {
        &self.inner.signed_in
    }

    /// The handle that reaches every connected client.
    pub(crate) fn broadcaster(&self) -> &Broadcaster {
        &self.inner.broadcaster
    }
}

/// Close reasons kept for late calls.
const KEPT_CLOSE_REASONS: usize = 4096;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Closes sessions that stayed idle longer than `timeout` (`--session-idle-timeout`). A closed
/// session is durable on disk; its client gets a clear error and can resume it.
async fn reap_idle(inner: std::sync::Weak<Inner>, timeout: Duration) {
    let tick = (timeout / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.shutdown.is_cancelled() {
            return;
        }
        let expired: Vec<_> = lock(&inner.sessions)
            .values()
            .filter(|s| !s.is_closing() && s.idle_for() >= Some(timeout))
            .cloned()
            .collect();
        let server = Server { inner };
        for session in expired {
            server.remember_closed(
                session.id(),
                &format!(
                    "it was idle for more than {}s (--session-idle-timeout)",
                    timeout.as_secs()
                ),
            );
            tracing::info!(session = %session.id(), "closing a session idle for {}s", timeout.as_secs());
            server.close_session(&session, "idle timeout").await;
        }
    }
}
