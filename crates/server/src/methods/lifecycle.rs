//! Opening and closing sessions: `session.create`, `session.resume`, `session.detach`
//! (alias `session.destroy`) and `session.delete` (the listings are `listing.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_journal::layout::LayoutError;
use turnstile_journal::writer_lock::WriterLock;
use turnstile_journal::{
    Event, JournalReader, LockError, ReadMode, SessionSummary, Uuid, WriteError,
};
use turnstile_loop::SessionHandle;
use turnstile_loop::session::{LoopError, configured_processes};
use turnstile_mcp::{McpHost, McpServers, StartOptions};

use super::Ctx;
use super::open_params::{OpenParams, build, with_account, working_dir};
use super::session_id_params::SessionIdParams;
use super::{open_session, session_id};
use crate::client_bridge::ClientBridge;
use crate::handover;
use crate::remote_store::{AttachMode, RemoteSession, StoreError};
use crate::rpc::{RpcError, codes};
use crate::sessions::{OpenSession, SessionInfo, lifecycle_params, summarize};

/// How long a resume waits for the lock of a holder that died while asked to hand over.
const HOLDER_EXIT: Duration = Duration::from_secs(2);

/// How long a resume waits for the lock of a holder with no handover socket (not a server,
/// or a dying one whose socket closed before its lock).
const NO_LISTENER: Duration = Duration::from_millis(500);

/// `session.create`.
pub(crate) async fn create(ctx: &Ctx<'_>, params: OpenParams) -> Result<Value, RpcError> {
    let id = match params.session_id.as_deref() {
        Some(text) => session_id(text)?,
        None => Uuid::new_v4(),
    };
    if ctx.server.open_or_wait(id).await.is_some() {
        return Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!("session {id} already exists and is open"),
        ));
    }
    let servers = mcp_servers(ctx, &params)?;
    let params = with_account(ctx, params, "session.create").await?;
    let (mut parts, bridge, info) = build(ctx, id, &params)?;
    let root = ctx.server.config().state_root.clone();
    let remote = attach_remote(ctx, id, AttachMode::Create).await?;
    parts.config.journal_sink = remote.as_ref().and_then(|r| r.sink());
    // Under the store's lease: a create that loses the session id starts no server.
    parts.config.mcp = start_mcp(ctx, servers, &params, &parts.config.cwd).await;
    let provider = Arc::clone(&parts.provider);
    let (handle, events) = match SessionHandle::create_subscribed(&root, Some(id), parts) {
        Ok(opened) => opened,
        Err(e) => {
            give_up_remote(id, remote).await;
            return Err(loop_error(id, e));
        }
    };
    let session = register(
        ctx,
        vec![Arc::clone(ctx.peer)],
        handle,
        events,
        bridge,
        info,
        remote,
    )
    .await?;
    session.mcp().set_provider(provider);
    take_interaction(ctx, &session, &params, None, None);
    ctx.server
        .broadcast_lifecycle(&lifecycle_params("session.created", id, &session.info()));
    Ok(opened(&session))
}

/// `session.resume`: takes the journal's lock, closes what a crash or a disconnect left open
/// (interrupted tool calls, an open turn) and continues with the client's new settings.
///
/// A session already open in this server is opened in this connection too, as in the Copilot
/// CLI: every connection that has it open gets its events. When it is idle it is reopened
/// with the new client's settings (tools, hooks, provider), the other connections staying on
/// it; when it is running a message the connection joins it as it is, and `session.resume`
/// is recorded among the message's events (`sessionWasActive: true`).
pub(crate) async fn resume(ctx: &Ctx<'_>, params: OpenParams) -> Result<Value, RpcError> {
    let Some(text) = params.session_id.as_deref() else {
        return Err(RpcError::invalid_params(
            "invalid params: missing field `sessionId`",
        ));
    };
    let root = ctx.server.config().state_root.clone();
    // Ids are checked before any path is built from them.
    let Ok(id) = turnstile_journal::parse_session_id(text) else {
        return Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!("Session not found: {text}. Session ids are UUIDs."),
        ));
    };
    let params = with_account(ctx, params, "session.resume").await?;
    let mut clients = vec![Arc::clone(ctx.peer)];
    let answers_elicitations = params.request_elicitation == Some(true);
    let earlier = ctx.server.open_or_wait(id).await;
    if let Some(open) = &earlier {
        if open.handle().is_busy() {
            tracing::info!(session = %id, "joined a session running a message; its settings stay");
            open.attach(Arc::clone(ctx.peer));
            // Recorded among the message's events (`sessionWasActive: true`), which every
            // client of the session sees, the joining one included.
            open.handle()
                .join(params.continue_pending_work)
                .await
                .map_err(|e| loop_error(id, e))?;
            let peers = open.bridge().elicitation_peers();
            if let Some(notice) = peers.declare(ctx.peer.id(), answers_elicitations) {
                open.handle().announce(&notice);
            }
            let commands = params.commands.clone().unwrap_or_default();
            if let Some(notice) = open.commands().declare(ctx.peer.id(), commands) {
                open.handle().announce(&notice);
            }
            return Ok(opened(open));
        }
        clients.extend(
            open.clients()
                .into_iter()
                .filter(|p| p.id() != ctx.peer.id()),
        );
        ctx.server
            .close_session(open, "reopened by session.resume")
            .await;
    }
    // With a remote store, the working copy is made from the store under the writer's lease.
    let remote = attach_remote(ctx, id, AttachMode::Resume).await?;
    if !root.session(id).events.is_file() {
        give_up_remote(id, remote).await;
        return Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!(
                "Session not found: {id}. There is no such session in {}.",
                root.dir().display()
            ),
        ));
    }
    let servers = mcp_servers(ctx, &params)?;
    let cwd = working_dir(
        &ctx.server.config().default_cwd,
        params.working_directory.as_deref(),
    )?;
    let mcp = start_mcp(ctx, servers, &params, &cwd).await;
    let resumed = match resume_or_take_over(ctx, id, &params, remote.as_ref(), mcp.as_ref()).await {
        Ok(resumed) => resumed,
        Err(e) => {
            give_up_remote(id, remote).await;
            return Err(e);
        }
    };
    let Resumed {
        handle,
        report,
        events,
        bridge,
        mut info,
        provider,
    } = resumed;
    bridge.expect_continued(&report.continued_requests);
    // The model the session goes on with is its journal's, not the one the params named.
    info.model.clone_from(&report.model);
    if report.was_active {
        tracing::info!(
            session = %id,
            interrupted = report.closed_tool_calls.len(),
            "resumed a session that ended mid-work"
        );
    }
    if let Ok(summary) = SessionSummary::read(&root.session(id)) {
        info.start_time = summary.created.unwrap_or(info.start_time);
        info.summary = summary.first_prompt.as_deref().map(summarize);
    }
    let session = register(ctx, clients, handle, events, bridge, info, remote).await?;
    session.mcp().set_provider(provider);
    let selected = crate::custom_agents::selected_in_journal(&root.session(id).events);
    take_interaction(ctx, &session, &params, earlier.as_deref(), selected);
    if let Some(earlier) = &earlier {
        // The clients that stay keep their handlers; they are told when the session's
        // capability changed with the joining client.
        let staying: Vec<u64> = session.clients().iter().map(|p| p.id()).collect();
        let peers = session.bridge().elicitation_peers();
        peers.keep_from(earlier.bridge().elicitation_peers(), &staying);
        let before = earlier.bridge().elicitation_peers().any();
        if let Some(notice) = crate::elicitation_peers::changed(before, peers.any()) {
            session.handle().announce(&notice);
        }
    }
    Ok(opened(&session))
}

/// Resumes the journal; when another process holds it, asks that process to hand it over.
async fn resume_or_take_over(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
    remote: Option<&Arc<dyn RemoteSession>>,
    mcp: Option<&Arc<McpHost>>,
) -> Result<Resumed, RpcError> {
    let root = &ctx.server.config().state_root;
    let sink = remote.and_then(|r| r.sink());
    match resume_from_disk(ctx, id, params, sink.clone(), mcp)? {
        Ok(opened) => Ok(opened),
        Err(e) if held_by_another_writer(&e) => {
            let wait = ctx.server.config().takeover_wait;
            match handover::ask(&root.session(id).dir, wait).await {
                Some(handover::Answer::Released) => {
                    resume_from_disk(ctx, id, params, sink, mcp)?.map_err(|e| loop_error(id, e))
                }
                Some(handover::Answer::Busy) => {
                    let mut error = loop_error(id, e);
                    error.message = format!(
                        "{}; it stayed busy for {}s, so it was not handed over: try again once it is idle",
                        error.message,
                        wait.as_secs_f32()
                    );
                    Err(error)
                }
                // The holder died while asked: its lock goes with its last open file, a
                // moment after the socket, so the open is tried again for a short while.
                Some(handover::Answer::Vanished) => {
                    reopen_when_released(ctx, id, params, sink, mcp, HOLDER_EXIT, e).await
                }
                // Nobody listens: the holder is not a server, or it is dying (its socket
                // closed first), so the open is tried again for a shorter while.
                None => reopen_when_released(ctx, id, params, sink, mcp, NO_LISTENER, e).await,
            }
        }
        Err(e) => Err(loop_error(id, e)),
    }
}

/// Opens the session again once its lock is free, looking at the lock (not opening the
/// session) every 50 ms for at most `wait`; a lock still held then is refused with the first
/// error, `held`.
async fn reopen_when_released(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
    sink: Option<Arc<dyn turnstile_journal::JournalSink>>,
    mcp: Option<&Arc<McpHost>>,
    wait: Duration,
    held: LoopError,
) -> Result<Resumed, RpcError> {
    let lock = ctx
        .server
        .config()
        .state_root
        .session(id)
        .dir
        .join(turnstile_journal::layout::LOCK_FILE);
    let deadline = tokio::time::Instant::now() + wait;
    while lock_held(&lock) {
        if tokio::time::Instant::now() >= deadline {
            return Err(loop_error(id, held));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    match resume_from_disk(ctx, id, params, sink, mcp)? {
        Ok(opened) => Ok(opened),
        // Taken again in between (a third process): refused as the first time.
        Err(again) if held_by_another_writer(&again) => Err(loop_error(id, held)),
        Err(again) => Err(loop_error(id, again)),
    }
}

/// Whether another open file holds the writer lock at `path` (a look, released at once; a
/// lock file that cannot be opened is left to the open to report).
fn lock_held(path: &Path) -> bool {
    match std::fs::File::open(path) {
        Ok(file) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

/// The session attached to the server's remote store, if it has one (`--store`).
pub(crate) async fn attach_remote(
    ctx: &Ctx<'_>,
    id: Uuid,
    mode: AttachMode,
) -> Result<Option<Arc<dyn RemoteSession>>, RpcError> {
    let Some(store) = ctx.server.config().remote_store.clone() else {
        return Ok(None);
    };
    let root = &ctx.server.config().state_root;
    match store.attach(id, root, mode).await {
        Ok(attached) => Ok(Some(attached)),
        Err(StoreError::NotFound { .. }) => Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!(
                "Session not found: {id}. There is no such session in {}.",
                store.describe()
            ),
        )),
        Err(e) => Err(RpcError::new(
            codes::SESSION_FAILED,
            format!("cannot open session {id} in {}: {e}", store.describe()),
        )),
    }
}

/// Gives the store's lease up after opening failed.
pub(crate) async fn give_up_remote(id: Uuid, remote: Option<Arc<dyn RemoteSession>>) {
    if let Some(remote) = remote
        && let Err(e) = remote.detach().await
    {
        tracing::warn!(session = %id, error = %e, "the store's lease was not given up");
    }
}

/// A session resumed from its journal, with what the server keeps beside it.
struct Resumed {
    handle: SessionHandle,
    report: turnstile_loop::ResumeReport,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<turnstile_journal::Event>>,
    bridge: Arc<ClientBridge>,
    info: SessionInfo,
    provider: Arc<dyn turnstile_providers::ModelProvider>,
}

/// Builds the parts from the params (a bad param is the outer error) and resumes the journal
/// (the inner error is the loop's, to tell a held lock from other failures).
fn resume_from_disk(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
    sink: Option<Arc<dyn turnstile_journal::JournalSink>>,
    mcp: Option<&Arc<McpHost>>,
) -> Result<Result<Resumed, LoopError>, RpcError> {
    let (mut parts, bridge, info) = build(ctx, id, params)?;
    parts.config.journal_sink = sink;
    parts.config.mcp = mcp.cloned();
    let root = &ctx.server.config().state_root;
    let provider = Arc::clone(&parts.provider);
    let options = turnstile_loop::ResumeOptions {
        continue_pending_work: params.continue_pending_work == Some(true),
        continue_pending_work_named: params.continue_pending_work.is_some(),
        // Released once the session is registered (`register`), so the client can answer the
        // requests announced again.
        hold_pending_work: true,
    };
    Ok(
        SessionHandle::resume_with(root, id, parts, options).map(|(handle, report, events)| {
            Resumed {
                handle,
                report,
                events,
                bridge,
                info,
                provider,
            }
        }),
    )
}

/// Whether opening failed because another process holds the writer lock.
fn held_by_another_writer(e: &LoopError) -> bool {
    matches!(e, LoopError::Journal(WriteError::Locked(_)))
}

/// The opening client's custom agents (with the selection the journal holds) and slash
/// commands; a session reopened by a joining client keeps the commands of the clients that
/// stay, and every client is told when the commands changed (`commands.changed`).
fn take_interaction(
    ctx: &Ctx<'_>,
    session: &OpenSession,
    params: &OpenParams,
    earlier: Option<&OpenSession>,
    selected: Option<String>,
) {
    let agents = params.custom_agents.clone().unwrap_or_default();
    session.agents().configure(agents, selected);
    let before = earlier.map(|e| e.commands().all()).unwrap_or_default();
    let commands = session.commands();
    commands.declare(ctx.peer.id(), params.commands.clone().unwrap_or_default());
    if let Some(earlier) = earlier {
        let staying: Vec<u64> = session.clients().iter().map(|p| p.id()).collect();
        commands.keep_from(earlier.commands(), &staying);
        // The model is offered the tools of every client that has the session open.
        session
            .bridge()
            .tools()
            .keep_from(earlier.bridge().tools(), &staying);
    }
    if let Some(notice) = commands.changed_since(&before) {
        session.handle().announce(&notice);
    }
}

/// The answer to create/resume: the session and what its clients can do for it
/// (`capabilities.ui.elicitation`: a client answers elicitations).
fn opened(session: &OpenSession) -> Value {
    json!({
        "sessionId": session.id().to_string(),
        "capabilities": {"ui": {"elicitation": session.bridge().elicitation_peers().any()}},
    })
}

/// Starts forwarding to `clients` and registers the session; a caller that left meanwhile is
/// dropped from it (and the session closed when nobody else has it open).
async fn register(
    ctx: &Ctx<'_>,
    clients: Vec<Arc<crate::peer::Peer>>,
    handle: SessionHandle,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<turnstile_journal::Event>>,
    bridge: Arc<ClientBridge>,
    info: SessionInfo,
    remote: Option<Arc<dyn RemoteSession>>,
) -> Result<Arc<OpenSession>, RpcError> {
    let id = handle.id();
    let events = crate::watchers::watched(ctx.server.config().watchers.as_ref(), id, events);
    let session = OpenSession::start(
        ctx.server.broadcaster(),
        clients,
        handle,
        events,
        bridge,
        info,
        remote,
    );
    if !ctx.server.insert_session(Arc::clone(&session)) {
        session.close("opened twice").await;
        session.mark_closed();
        return Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!("session {id} was opened by another request at the same time"),
        ));
    }
    session.handle().release_pending_work();
    // A connection that left while we were opening is gone from the server already.
    for peer in session.clients() {
        if peer.is_closed() {
            session.detach(peer.id());
        }
    }
    if session.clients().is_empty() {
        ctx.server
            .remember_closed(id, "its last client disconnected");
        ctx.server
            .close_session(&session, "the client disconnected")
            .await;
    }
    if ctx.peer.is_closed() {
        return Err(RpcError::new(
            codes::SESSION_FAILED,
            "the client disconnected",
        ));
    }
    handover::listen(
        ctx.server.clone(),
        Arc::downgrade(&session),
        ctx.server.config().state_root.session(id).dir,
        session.handover_token(),
    );
    Ok(session)
}

/// The session's MCP servers: the server's configured ones with the params' `mcpServers` on
/// top.
fn mcp_servers(ctx: &Ctx<'_>, params: &OpenParams) -> Result<McpServers, RpcError> {
    let mut servers = ctx.server.config().mcp_servers.clone();
    if let Some(value) = &params.mcp_servers {
        let asked = McpServers::from_value(value, "params")
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
        servers = servers.overlay(asked);
    }
    Ok(servers)
}

/// Starts the session's MCP servers; its plugins' servers wait for its first use and the
/// disabled ones are listed only (`session_mcp.rs`). A server that fails to start does not
/// fail the call: the session announces it and offers the others' tools. A session without
/// servers has a host too, so that a client can start one on it (`session.mcp.startServer`
/// with a `config`). A stdio server's process runs in the session's sandbox for configured
/// processes (`configured_processes`): the rules' file effects hold for it.
async fn start_mcp(
    ctx: &Ctx<'_>,
    servers: McpServers,
    params: &OpenParams,
    cwd: &Path,
) -> Option<Arc<McpHost>> {
    let split = crate::session_mcp::split(
        servers,
        github_server(ctx, params),
        params.plugin_directories.as_deref().unwrap_or_default(),
        params.disabled_mcp_servers.as_deref().unwrap_or_default(),
        cwd,
    );
    let config = ctx.server.config();
    let mut options = StartOptions::new(cwd);
    options.sandbox = configured_processes(
        &config.permissions,
        cwd,
        config.state_root.dir(),
        config.sandbox,
    );
    let host = McpHost::start(&split.now, &options).await;
    host.defer(split.later, &split.disabled);
    Some(Arc::new(host))
}

/// The built-in GitHub MCP server of a session with `enableConfigDiscovery`: at the server's
/// Copilot endpoint, with the session's `gitHubToken` (else the server's token); none when the
/// server's default model is not the Copilot endpoint or there is no token. Its tool config is
/// the params' (`githubMcpToolConfig`), else, on a resume, the one `session.start` recorded.
fn github_server(ctx: &Ctx<'_>, params: &OpenParams) -> Option<turnstile_mcp::ServerConfig> {
    if params.enable_config_discovery != Some(true) {
        return None;
    }
    let copilot = &ctx.server.config().default_model;
    if copilot.flavor != turnstile_providers::ApiFlavor::Copilot {
        return None;
    }
    let token = params
        .git_hub_token
        .as_deref()
        .or(copilot.api_key.as_deref())?;
    let config = params
        .github_mcp_tool_config
        .clone()
        .or_else(|| recorded_github_config(ctx, params))
        .unwrap_or_default();
    crate::session_mcp::github_server(&copilot.base_url, token, &config)
}

/// A `session.start` line is small; a first line longer than this is not read.
const MAX_START_LINE: u64 = 1 << 20;

/// The `githubMcpToolConfig` the session's `session.start` recorded (its first line), when the
/// params name an existing session.
fn recorded_github_config(
    ctx: &Ctx<'_>,
    params: &OpenParams,
) -> Option<turnstile_journal::payload::GitHubMcpToolConfig> {
    use std::io::{BufRead, Read};
    let id = turnstile_journal::parse_session_id(params.session_id.as_deref()?).ok()?;
    let events = ctx.server.config().state_root.session(id).events;
    let file = std::fs::File::open(events).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file.take(MAX_START_LINE))
        .read_line(&mut first)
        .ok()?;
    let event: turnstile_journal::Event = serde_json::from_str(&first).ok()?;
    let start: turnstile_journal::payload::SessionStart = event.payload().ok()?;
    start.github_mcp_tool_config
}

/// Maps a loop error at open time to a JSON-RPC error.
fn loop_error(id: Uuid, e: LoopError) -> RpcError {
    let code = match &e {
        LoopError::Layout(LayoutError::NotFound { .. })
        | LoopError::Journal(WriteError::Layout(LayoutError::NotFound { .. })) => {
            codes::SESSION_NOT_FOUND
        }
        LoopError::Layout(LayoutError::AlreadyExists { .. })
        | LoopError::Journal(WriteError::Layout(LayoutError::AlreadyExists { .. }))
        | LoopError::Journal(WriteError::Locked(_)) => codes::SESSION_IN_USE,
        _ => codes::SESSION_FAILED,
    };
    RpcError::new(code, format!("session {id}: {e}"))
}

/// `session.detach` (`destroy`): this connection no longer has the session
/// open; once no connection has it, it is closed (a running message is aborted). The journal
/// stays and the session can be resumed.
///
/// A session the server closed on its own (another process took it over, it idled out) is
/// detached already: the client's goodbye succeeds, as in the Copilot CLI, where both
/// processes keep it open. So does the goodbye of a session already closed, whose journal is
/// in the state root (a client holding two handles of one session, say those of a create and
/// a resume, says goodbye with each, as the Copilot CLI allows).
pub(crate) async fn detach(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = match open_session(ctx, params.id()) {
        Ok(session) => session,
        Err(e) => {
            let closed_here = turnstile_journal::parse_session_id(params.id())
                .ok()
                .is_some_and(|id| {
                    ctx.server.closed_reason(id).is_some()
                        || ctx.server.config().state_root.session(id).events.is_file()
                });
            return if closed_here {
                Ok(json!({"success": true}))
            } else {
                Err(e)
            };
        }
    };
    let peer = ctx.peer.id();
    if session.is_open_in(peer) {
        if session.clients().len() == 1 {
            // The last client sees the session close (`session.shutdown`), as with the
            // Copilot CLI, so it stays attached until the close is done.
            ctx.server
                .close_session(&session, "detached by the client")
                .await;
            session.detach(peer);
        } else if session.detach(peer) == 0 {
            ctx.server
                .close_session(&session, "detached by the client")
                .await;
        }
    }
    Ok(json!({"success": true}))
}

/// `session.delete`: removes a session from disk. A session open in this server is closed
/// first, for every connection that has it open (as the Copilot CLI does); one held by
/// another process is refused with the holder named.
pub(crate) async fn delete(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    // The runtime's answer for an unknown session; a non-UUID is one, and builds no path.
    let not_found = |text: &str| {
        failure(format!(
            "Error: Session file not found for {text} (no such session in {})",
            ctx.server.config().state_root.dir().display()
        ))
    };
    let Ok(id) = turnstile_journal::parse_session_id(params.id()) else {
        return Ok(not_found(params.id()));
    };
    // A stored journal is the record other hosts resume and audit from: it is never deleted
    // through one server (decisions.md).
    if let Some(store) = &ctx.server.config().remote_store {
        return Ok(failure(format!(
            "session {id} is kept in {}; a stored session is not deleted through the SDK server (export it with `turnstile export` first, then remove it from the stream with the store's own tools)",
            store.describe()
        )));
    }
    if let Some(open) = ctx.server.open_or_wait(id).await {
        ctx.server.remember_closed(id, "it was deleted");
        ctx.server.close_session(&open, "deleted").await;
    }
    let paths = ctx.server.config().state_root.session(id);
    if !paths.dir.is_dir() {
        return Ok(not_found(&id.to_string()));
    }
    // Hold the writer lock while deleting: a process writing the journal keeps it.
    let lock = match WriterLock::acquire(&paths.lock) {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => return Ok(failure(e.to_string())),
        Err(e) => return Ok(failure(format!("cannot lock session {id}: {e}"))),
    };
    let removed = std::fs::remove_dir_all(&paths.dir);
    drop(lock);
    if let Err(e) = removed {
        return Ok(failure(format!(
            "cannot delete {}: {e}",
            paths.dir.display()
        )));
    }
    ctx.server
        .broadcast_lifecycle(&json!({"type": "session.deleted", "sessionId": id.to_string()}));
    Ok(json!({"success": true}))
}

fn failure(error: String) -> Value {
    json!({"success": false, "error": error})
}

/// Reads the persisted events of a session (a torn last line, being written right now, is
/// left out). Events a rewind removed, and its marker, are left out too: the runtime cuts them
/// from its file.
pub(crate) fn persisted_events(path: &Path) -> Result<Vec<Value>, RpcError> {
    let reader = JournalReader::open(path, ReadMode::Lenient)
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let mut events = Vec::new();
    for record in reader {
        match record {
            Ok(record) => events.push(record.event),
            Err(turnstile_journal::ReadError::TornTail { .. }) => break,
            Err(e) => return Err(RpcError::new(codes::SESSION_FAILED, e.to_string())),
        }
    }
    Ok(turnstile_replay::visible_events(events)
        .iter()
        .map(Event::to_live_value)
        .collect())
}
