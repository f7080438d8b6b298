//! A session open in the server: the loop's handle, the connections it is open in (every one
//! gets its events; it closes when the last one leaves), the bridge to the client that opened
//! it, and the forwarder that turns every event into `session.event` notifications.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use turnstile_journal::{Event, Uuid};
use turnstile_loop::{AgentMode, SessionHandle};

use crate::broadcast::Broadcaster;
use crate::client_bridge::ClientBridge;
use crate::peer::Peer;
use crate::permission_state::SessionPermissions;
use crate::remote_store::RemoteSession;

/// What the server tracks about an open session besides the loop's handle.
#[derive(Debug, Clone)]
pub(crate) struct SessionInfo {
    /// Mode of sends that name none (`session.mode.set`).
    pub mode: AgentMode,
    /// The model.
    pub model: String,
    /// The working directory it was opened in (canonical), as `session.metadata.snapshot`
    /// reports it.
    pub cwd: std::path::PathBuf,
    /// `startTime` of the session.
    pub start_time: String,
    /// Timestamp of the latest event.
    pub modified_time: String,
    /// The first prompt, for listings.
    pub summary: Option<String>,
    /// The name given with `session.name.set`.
    pub name: Option<String>,
    /// The reasoning effort asked for (`reasoningEffort`, else the server's `--effort`).
    pub reasoning_effort: Option<String>,
    /// What `session.permissions.*` changes (shared with the engine).
    pub permissions: Arc<SessionPermissions>,
    /// The session's GitHub account and model endpoint (`account.rs`).
    pub account: Arc<crate::account::SessionAccount>,
    /// The identity a client installed since it opened (`gitHubAuth.setCredentials`).
    pub installed_auth: Option<crate::account::InstalledAuth>,
}

/// How one message ended, for `session.sendAndWait`.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    /// Id of the `session.idle` that ended it.
    pub idle_id: String,
    /// It was aborted.
    pub aborted: bool,
    /// Its last top-level `assistant.message`, as sent to the client.
    pub response: Option<Value>,
    /// The `session.error` message, when the model call failed.
    pub error: Option<String>,
}

/// Messages being run and recently completed, as seen by the forwarder.
#[derive(Default)]
struct Completions {
    /// `messageId` of the message running now, with what it produced so far.
    current: Option<(String, Option<Value>, Option<String>)>,
    /// Recently completed messages nobody waited for yet (bounded).
    done: VecDeque<(String, Completion)>,
    /// Callers waiting for a message to complete.
    waiters: HashMap<String, oneshot::Sender<Completion>>,
}

/// How an open session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The running message is aborted: its open calls are recorded as interrupted.
    Close,
    /// The running message is left where it stands (its last client left while it waited on
    /// that client): its requests stay open in the journal for a resume to continue.
    Suspend,
}

/// Completed messages kept for a waiter that registers after the message ended.
const KEPT_COMPLETIONS: usize = 32;

/// An open session.
pub(crate) struct OpenSession {
    id: Uuid,
    clients: Clients,
    handle: SessionHandle,
    bridge: Arc<ClientBridge>,
    info: Mutex<SessionInfo>,
    last_activity: Mutex<Instant>,
    forwarder: Mutex<Option<JoinHandle<()>>>,
    closing: AtomicBool,
    closed: CancellationToken,
    completions: Mutex<Completions>,
    /// Counts the events forwarded, so a long-polling `session.eventLog.read` wakes up.
    appended: tokio::sync::watch::Sender<u64>,
    /// The live-only events forwarded last, with when: a long-polling read returns those
    /// announced after it arrived, even when its handler started after they went by.
    recent_live: Mutex<VecDeque<(Instant, Arc<Event>)>>,
    /// `session.eventLog.registerInterest` registrations: handle -> event type.
    interests: Mutex<HashMap<String, String>>,
    next_interest: std::sync::atomic::AtomicU64,
    /// Stops the handover listener (`handover.rs`) when the session closes.
    handover: CancellationToken,
    /// The remote store the session is attached to, detached when it closes.
    remote: Option<Arc<dyn RemoteSession>>,
    /// Host context, sampling executions and provider for `session.mcp.*`.
    mcp: crate::mcp_session_state::McpSessionState,
    /// The slash commands its clients registered, and the runs waiting for them.
    commands: crate::client_commands::ClientCommands,
    /// Its custom agents and the selected one.
    agents: crate::custom_agents::SessionAgents,
}

/// Live-only events kept for long-polling reads (`live_since`); older ones are dropped.
const KEPT_LIVE: usize = 256;

/// Interest registrations kept per session at most (a client that never releases cannot
/// grow the server without bound).
const MAX_INTERESTS: usize = 1024;

impl OpenSession {
    /// Wraps a started session and starts forwarding its events (`events` must be the
    /// subscription taken when the session was created or resumed, so nothing is missed).
    pub(crate) fn start(
        broadcaster: &Broadcaster,
        clients: Vec<Arc<Peer>>,
        handle: SessionHandle,
        events: mpsc::UnboundedReceiver<Arc<Event>>,
        bridge: Arc<ClientBridge>,
        info: SessionInfo,
        remote: Option<Arc<dyn RemoteSession>>,
    ) -> Arc<Self> {
        let clients = Clients::new(clients);
        let watched = clients.clone();
        bridge.follow_connections(move || watched.any_open());
        let session = Arc::new(OpenSession {
            id: handle.id(),
            clients,
            handle,
            bridge,
            info: Mutex::new(info),
            last_activity: Mutex::new(Instant::now()),
            forwarder: Mutex::new(None),
            closing: AtomicBool::new(false),
            closed: CancellationToken::new(),
            completions: Mutex::default(),
            appended: tokio::sync::watch::Sender::new(0),
            recent_live: Mutex::default(),
            interests: Mutex::default(),
            next_interest: std::sync::atomic::AtomicU64::new(1),
            handover: CancellationToken::new(),
            remote,
            mcp: Default::default(),
            commands: Default::default(),
            agents: Default::default(),
        });
        let forwarder = Forwarder::new(broadcaster, &session);
        // What opening already emitted (`session.start`, or `session.resume` and what it
        // closed) is queued now, so the client sees it before the answer to create/resume.
        let mut events = events;
        let mut opening = Vec::new();
        while let Ok(event) = events.try_recv() {
            forwarder.deliver(&event);
            opening.push(event);
        }
        let task = tokio::spawn(forwarder.run(opening, events));
        *lock(&session.forwarder) = Some(task);
        session
    }

    /// The session id.
    pub(crate) fn id(&self) -> Uuid {
        self.id
    }

    /// Whether connection `peer` has it open.
    pub(crate) fn is_open_in(&self, peer: u64) -> bool {
        self.clients.contains(peer)
    }

    /// Opens it in one more connection too (a second `session.resume`); its events go there
    /// from now on.
    pub(crate) fn attach(&self, peer: Arc<Peer>) {
        self.clients.add(peer);
    }

    /// Forgets connection `peer`; returns how many connections still have it open. The others
    /// are told when it was the last that answered elicitations.
    pub(crate) fn detach(&self, peer: u64) -> usize {
        let left = self.clients.remove(peer);
        if let Some(notice) = self.bridge.elicitation_peers().leave(peer) {
            self.handle.announce(&notice);
        }
        if let Some(notice) = self.commands.leave(peer) {
            self.handle.announce(&notice);
        }
        // Its tools are not offered from the next model request on.
        self.bridge.tools().leave(peer);
        left
    }

    /// The connections it is open in.
    pub(crate) fn clients(&self) -> Vec<Arc<Peer>> {
        self.clients.all()
    }

    /// The loop's handle.
    pub(crate) fn handle(&self) -> &SessionHandle {
        &self.handle
    }

    /// The live connection of the session's MCP server `name`, when it is running.
    pub(crate) fn mcp_connection(&self, name: &str) -> Option<Arc<turnstile_mcp::McpConnection>> {
        self.handle
            .mcp()
            .and_then(|host| host.server(name))
            .filter(|s| s.is_running())
            .and_then(|s| s.connection)
    }

    /// What the session keeps for `session.mcp.*` beyond its servers.
    pub(crate) fn mcp(&self) -> &crate::mcp_session_state::McpSessionState {
        &self.mcp
    }

    /// The slash commands its clients registered.
    pub(crate) fn commands(&self) -> &crate::client_commands::ClientCommands {
        &self.commands
    }

    /// Its custom agents and the selected one.
    pub(crate) fn agents(&self) -> &crate::custom_agents::SessionAgents {
        &self.agents
    }

    /// The bridge to the owning client.
    pub(crate) fn bridge(&self) -> &ClientBridge {
        &self.bridge
    }

    /// Cancelled when the session closes: the handover listener stops with it.
    pub(crate) fn handover_token(&self) -> CancellationToken {
        self.handover.clone()
    }

    /// Changes whenever an event of the session was forwarded.
    pub(crate) fn appended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.appended.subscribe()
    }

    /// The live-only events forwarded at or after `since`, oldest first (at most
    /// [`KEPT_LIVE`] are kept).
    pub(crate) fn live_since(&self, since: Instant) -> Vec<Arc<Event>> {
        lock(&self.recent_live)
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, event)| Arc::clone(event))
            .collect()
    }

    /// Registers interest in an event type; returns a fresh handle.
    pub(crate) fn register_interest(&self, event_type: &str) -> String {
        let n = self.next_interest.fetch_add(1, Ordering::Relaxed);
        let handle = format!("interest-{n}");
        let mut interests = lock(&self.interests);
        if interests.len() >= MAX_INTERESTS {
            // The oldest registration goes (handles are numbered in order).
            if let Some(oldest) = interests
                .keys()
                .min_by_key(|h| h[9..].parse::<u64>().unwrap_or(0))
                .cloned()
            {
                interests.remove(&oldest);
            }
        }
        interests.insert(handle.clone(), event_type.to_owned());
        handle
    }

    /// True while some client's registration names `event_type`.
    pub(crate) fn has_interest(&self, event_type: &str) -> bool {
        lock(&self.interests).values().any(|t| t == event_type)
    }

    /// Releases a registration; unknown handles are fine.
    pub(crate) fn release_interest(&self, handle: &str) {
        lock(&self.interests).remove(handle);
    }

    /// A copy of the tracked info.
    pub(crate) fn info(&self) -> SessionInfo {
        lock(&self.info).clone()
    }

    /// Names the session.
    pub(crate) fn set_name(&self, name: String) {
        lock(&self.info).name = Some(name);
    }

    /// Notes the model (and reasoning effort) the session switched to.
    pub(crate) fn set_model(&self, model: String, reasoning_effort: Option<String>) {
        let mut info = lock(&self.info);
        info.model = model;
        info.reasoning_effort = reasoning_effort;
    }

    /// Installs the identity `gitHubAuth.getStatus` reports.
    pub(crate) fn install_auth(&self, auth: crate::account::InstalledAuth) {
        lock(&self.info).installed_auth = Some(auth);
    }

    /// Notes the working directory the session moved to.
    pub(crate) fn set_cwd(&self, cwd: std::path::PathBuf) {
        lock(&self.info).cwd = cwd;
    }

    /// Changes the default mode of sends.
    pub(crate) fn set_mode(&self, mode: AgentMode) {
        lock(&self.info).mode = mode;
    }

    /// Notes activity (a call about the session, or one of its events).
    pub(crate) fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
    }

    /// How long the session has been idle; `None` while it runs a message.
    pub(crate) fn idle_for(&self) -> Option<Duration> {
        if self.handle.is_busy() {
            return None;
        }
        Some(lock(&self.last_activity).elapsed())
    }

    /// Resolves when the message `message_id` has completed (its `session.idle` was sent to
    /// the client); fails when the session closes first.
    pub(crate) fn completion(&self, message_id: &str) -> oneshot::Receiver<Completion> {
        let (tx, rx) = oneshot::channel();
        let mut completions = lock(&self.completions);
        match completions.done.iter().position(|(id, _)| id == message_id) {
            Some(i) => {
                if let Some((_, done)) = completions.done.remove(i) {
                    let _ = tx.send(done);
                }
            }
            None => {
                completions.waiters.insert(message_id.to_owned(), tx);
            }
        }
        rx
    }

    /// Tracks which message runs and how it ends, from its events.
    fn track(&self, kind: &str, event: &Event) {
        if !matches!(
            kind,
            "user.message" | "assistant.message" | "session.error" | "session.idle"
        ) || event.agent_id.is_some()
        {
            return;
        }
        let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
        let mut completions = lock(&self.completions);
        match kind {
            "user.message" if data["isAutopilotContinuation"] != true => {
                if let Some(id) = data["messageId"].as_str() {
                    completions.current = Some((id.to_owned(), None, None));
                }
            }
            "assistant.message" => {
                if let Some((_, response, _)) = completions.current.as_mut() {
                    *response = Some(event.to_live_value());
                }
            }
            "session.error" => {
                if let Some((_, _, error)) = completions.current.as_mut() {
                    *error = Some(
                        data["message"]
                            .as_str()
                            .unwrap_or("the model call failed")
                            .to_owned(),
                    );
                }
            }
            "session.idle" => {
                if let Some((id, response, error)) = completions.current.take() {
                    let done = Completion {
                        idle_id: event.id.to_string(),
                        aborted: data["aborted"] == true,
                        response,
                        error,
                    };
                    match completions.waiters.remove(&id) {
                        Some(waiter) => {
                            let _ = waiter.send(done);
                        }
                        None => {
                            if completions.done.len() == KEPT_COMPLETIONS {
                                completions.done.pop_front();
                            }
                            completions.done.push_back((id, done));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// True once closing has begun.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Waits until [`Self::mark_closed`].
    pub(crate) async fn wait_closed(&self) {
        self.closed.cancelled().await;
    }

    /// Announces that the session is closed and forgotten (see `Server::close_session`).
    pub(crate) fn mark_closed(&self) {
        self.closed.cancel();
    }

    /// Closes the session: aborts a running message (its open tool calls are recorded as
    /// interrupted), records `session.shutdown`, makes the journal durable, releases the lock,
    /// and waits until every event was handed to the client's queue. A second caller waits
    /// for the first.
    pub(crate) async fn close(&self, why: &str) {
        self.end(why, Ending::Close).await;
    }

    /// Closes the session as [`Self::close`] does, or, with [`Ending::Suspend`], leaving its
    /// running message's open requests open in the journal (`SessionHandle::suspend`).
    pub(crate) async fn end(&self, why: &str, ending: Ending) {
        if self.closing.swap(true, Ordering::AcqRel) {
            self.wait_closed().await;
            return;
        }
        self.handover.cancel();
        if self.handle.is_busy() {
            tracing::info!(session = %self.id, why, ?ending, "stopping the running message");
        }
        let stopped = match ending {
            Ending::Close => {
                // A message queued behind the running one is aborted by the forwarder when it
                // starts.
                self.handle.abort();
                self.bridge.interrupt_hooks();
                self.handle.shutdown().await
            }
            Ending::Suspend => {
                // A hook call it waits on ends with it, unrecorded like the rest.
                let suspended = self.handle.suspend();
                self.bridge.interrupt_hooks();
                suspended.await
            }
        };
        if let Err(e) = stopped {
            tracing::warn!(session = %self.id, error = %e, "the session did not close cleanly");
        }
        let task = lock(&self.forwarder).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.bridge.close();
        if let Some(remote) = &self.remote
            && let Err(e) = remote.detach().await
        {
            tracing::warn!(session = %self.id, error = %e, "the session's store was not brought up to date");
        }
        // Whoever still waits for a message of this session learns that it is gone.
        lock(&self.completions).waiters.clear();
        tracing::info!(session = %self.id, why, "session closed");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends every event of the session to its client, in order, as `session.event`; registers
/// pending requests with the bridge before the client can see them; keeps the listing info
/// current and announces `session.updated` when the session goes idle or records a change
/// while idle.
struct Forwarder {
    broadcaster: Broadcaster,
    session: std::sync::Weak<OpenSession>,
    clients: Clients,
    bridge: Arc<ClientBridge>,
    id: Uuid,
    prefix: String,
    remote: Option<Arc<dyn RemoteSession>>,
}

impl Forwarder {
    fn new(broadcaster: &Broadcaster, session: &Arc<OpenSession>) -> Self {
        let id = session.id;
        Forwarder {
            broadcaster: broadcaster.clone(),
            session: Arc::downgrade(session),
            clients: session.clients.clone(),
            bridge: Arc::clone(&session.bridge),
            remote: session.remote.clone(),
            id,
            prefix: format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"session.event\",\"params\":{{\"sessionId\":\"{id}\",\"event\":"
            ),
        }
    }

    /// Forwards until the session's event stream ends; `opening` (delivered already, in
    /// `start`) goes to the store's live feed first.
    async fn run(self, opening: Vec<Arc<Event>>, mut events: mpsc::UnboundedReceiver<Arc<Event>>) {
        if let Some(remote) = &self.remote {
            for event in &opening {
                remote.publish_live(event).await;
            }
        }
        while let Some(event) = events.recv().await {
            self.deliver(&event);
            if let Some(remote) = &self.remote {
                remote.publish_live(&event).await;
            }
        }
    }

    fn deliver(&self, event: &Arc<Event>) {
        self.bridge.observe(event);
        let mut body = Vec::with_capacity(self.prefix.len() + event.data.get().len() + 200);
        body.extend_from_slice(self.prefix.as_bytes());
        event.write_live(&mut body);
        body.extend_from_slice(b"}}");
        self.clients.send(body);
        let Some(session) = self.session.upgrade() else {
            return;
        };
        session.touch();
        if event.is_live_only() {
            let mut recent = lock(&session.recent_live);
            if recent.len() == KEPT_LIVE {
                recent.pop_front();
            }
            recent.push_back((Instant::now(), Arc::clone(event)));
        }
        session.appended.send_modify(|n| *n += 1);
        let kind = event.event_type.as_str();
        session.track(kind, event);
        if kind == "user.message" && session.is_closing() {
            session.handle.abort();
        }
        let lifecycle = {
            let mut info = lock(&session.info);
            info.modified_time = event.timestamp.to_text();
            if kind == "user.message" && info.summary.is_none() {
                let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
                info.summary = data["content"].as_str().map(summarize);
            }
            // The runtime also announces a change recorded while no message runs (a mode or
            // model set by the client); one that a message makes is announced at its idle.
            let recorded_while_idle = !event.is_live_only()
                && !matches!(
                    kind,
                    "session.start" | "session.resume" | "session.shutdown"
                )
                && !session.handle.is_busy();
            (kind == "session.idle" || recorded_while_idle)
                .then(|| lifecycle_params("session.updated", self.id, &info))
        };
        if let Some(params) = lifecycle {
            self.broadcaster.lifecycle(&params);
        }
    }
}

/// The connections a session is open in, shared by the session and its forwarder.
#[derive(Clone)]
struct Clients(Arc<Mutex<Vec<Arc<Peer>>>>);

impl Clients {
    fn new(peers: Vec<Arc<Peer>>) -> Self {
        Clients(Arc::new(Mutex::new(peers)))
    }

    fn contains(&self, peer: u64) -> bool {
        lock(&self.0).iter().any(|p| p.id() == peer)
    }

    fn add(&self, peer: Arc<Peer>) {
        let mut peers = lock(&self.0);
        if !peers.iter().any(|p| p.id() == peer.id()) {
            peers.push(peer);
        }
    }

    fn remove(&self, peer: u64) -> usize {
        let mut peers = lock(&self.0);
        peers.retain(|p| p.id() != peer);
        peers.len()
    }

    fn all(&self) -> Vec<Arc<Peer>> {
        lock(&self.0).clone()
    }

    /// Whether one of the connections is still open.
    fn any_open(&self) -> bool {
        lock(&self.0).iter().any(|p| !p.is_closed())
    }

    /// Queues one frame body on every connection (the last one gets the original).
    fn send(&self, body: Vec<u8>) {
        let peers = self.all();
        if let Some((last, rest)) = peers.split_last() {
            for peer in rest {
                peer.send(body.clone());
            }
            last.send(body);
        }
    }
}

/// `session.lifecycle` params with metadata.
pub(crate) fn lifecycle_params(kind: &str, id: Uuid, info: &SessionInfo) -> Value {
    let mut metadata = json!({
        "startTime": info.start_time,
        "modifiedTime": info.modified_time,
    });
    if let Some(summary) = &info.summary {
        metadata["summary"] = json!(summary);
    }
    json!({"type": kind, "sessionId": id.to_string(), "metadata": metadata})
}

/// A listing summary: the first line of the first prompt, at most 80 characters.
pub(crate) fn summarize(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or("").trim();
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}
