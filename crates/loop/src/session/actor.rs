//! The actor task of a session: takes commands in order, runs each message to idle, and
//! closes the journal on shutdown.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    AssistantIdle, PendingMessagesModified, SessionBackgroundTasksChanged, SessionIdle,
    SessionSkillsLoaded, SessionWarning,
};

use super::command::Command;
use super::config::SessionParts;
use super::conversation::Conversation;
use super::emitter::{self, Emitter};
use super::error::LoopError;
use super::lock::lock;
use super::pending::PendingWork;
use super::retry_backoff::RetryBackoff;
use super::send::Outcome;
use super::shared::Shared;
use super::totals::{ProcessUsage, shutdown_payload};
use crate::autopilot::AgentMode;
use turnstile_permissions::UrlRules;
use turnstile_providers::ModelErrorKind;
use turnstile_tools::processes::ProcessTable;
use turnstile_tools::shells::{LostShell, Shells};
use turnstile_tools::sql::SessionDatabase;

/// Bytes of growth after which going idle refreshes the checkpoint.
const CHECKPOINT_EVERY_BYTES: u64 = 1 << 20;

/// The task that owns a session's journal writer and folded state.
pub(super) struct Actor {
    pub(super) id: Uuid,
    pub(super) emitter: Emitter,
    pub(super) parts: SessionParts,
    /// The process groups of running tool commands (`<session>/processes.json`).
    pub(super) processes: Arc<ProcessTable>,
    /// The session's shells: they outlive a message and are stopped when the session closes.
    pub(super) shells: Arc<Shells>,
    /// How the model server counts against the token estimate (its last report).
    pub(super) calibration: std::sync::Mutex<crate::prompt::tokens::Calibration>,
    /// When a compaction may be tried again after a failed summary call.
    pub(super) retry: std::sync::Mutex<RetryBackoff>,
    /// The bound on sub-agents working at once (`slots.rs`).
    pub(super) agent_slots: tokio::sync::Semaphore,
    /// How many times a turn's request was built and measured (shared with the handle).
    pub(super) measures: Arc<std::sync::atomic::AtomicU64>,
    /// The session's database (`sql`), opened on first use and closed with the session.
    pub(super) database: Arc<SessionDatabase>,
    /// The host rules of `--allow-url`/`--deny-url`, which `web_fetch` applies to every hop;
    /// the policy is fixed for the session, so they are built once.
    pub(super) urls: Arc<UrlRules>,
    /// The sandbox every tool process enters, built once from the rules (`sandbox.rs`).
    pub(super) sandbox: turnstile_tools::Sandboxing,
    /// The directories no tool writes (`sandbox.rs::engine_dirs`).
    pub(super) engine_dirs: Arc<Vec<std::path::PathBuf>>,
    /// Work a resume continues before taking any command.
    pending: Option<PendingWork>,
    checkpoint_at: std::sync::atomic::AtomicU64,
    /// The MCP servers a call found gone (each is warned about once).
    pub(super) mcp_gone: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Bytes of streamed answers received in this session (`assistant.streaming_delta`).
    pub(super) streamed_bytes: std::sync::atomic::AtomicU64,
    /// The tools the session was built with (`parts.tools`).
    pub(super) base_tools: Arc<turnstile_tools::ToolRegistry>,
    /// The tools offered now: `base_tools` plus the MCP servers' tools, rebuilt when they
    /// change (`mcp_glue`); a call takes the set as it was when it started.
    pub(super) tools_now: std::sync::Mutex<Arc<turnstile_tools::ToolRegistry>>,
    /// The MCP host's version `tools_now` was built at (`None`: not built yet).
    pub(super) mcp_version: std::sync::Mutex<Option<u64>>,
    /// What the session already warned about its MCP tools (each is said once).
    pub(super) mcp_warned: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The client tools offered at the previous prompt (`None` before the first), for the
    /// notice of the ones gone since (`tools_notice.rs`).
    pub(super) client_tools_told: std::sync::Mutex<Option<Vec<String>>>,
    /// This process's model calls, for the totals `session.shutdown` reports.
    pub(super) process_usage: std::sync::Mutex<ProcessUsage>,
    /// The agents `task` started (`session/background.rs`).
    pub(super) agents: Arc<turnstile_tools::agents::Agents>,
    /// Each agent's conversation between its rounds, by its `task` call id (`subagent.rs`).
    pub(super) conversations: std::sync::Mutex<std::collections::HashMap<String, Conversation>>,
    /// The files the session's turns changed, when it tracks them (shared with the handle).
    pub(super) file_snapshots: Option<Arc<crate::rewind_files::FileSnapshots>>,
}

/// Whether someone may approve what no rule names: a client, or a `preToolUse` hook. The
/// sandbox's broad defaults apply then (docs/decisions.md).
pub(super) fn can_ask(parts: &SessionParts) -> bool {
    parts.permission_asker.is_some()
        || parts
            .hooks
            .as_ref()
            .is_some_and(|h| h.handles("preToolUse"))
}

impl Actor {
    pub(super) fn new(
        id: Uuid,
        emitter: Emitter,
        parts: SessionParts,
        pending: Option<PendingWork>,
        lost_shells: Vec<LostShell>,
    ) -> Self {
        let checkpoint_at = emitter.state().byte_size;
        let dir = emitter.writer().paths().dir.clone();
        let processes = Arc::new(ProcessTable::new(&dir));
        let database = Arc::new(SessionDatabase::new(Some(dir.clone())));
        let subscribers = emitter.subscribers();
        let announce: turnstile_tools::shells::ChangeHook = Arc::new(move || {
            emitter::publish_live(&subscribers, &SessionBackgroundTasksChanged {});
        });
        let shells = Arc::new(Shells::new(Some(dir)).with_change_hook(announce));
        shells.add_lost(lost_shells);
        let base_tools = Arc::clone(&parts.tools);
        let urls = Arc::new(parts.config.permissions.url_rules());
        let engine_dirs = Arc::new(super::sandbox::engine_dirs(
            emitter.writer().paths().dir.as_path(),
        ));
        let sandbox = super::sandbox::sandboxing(
            &parts.config,
            emitter.writer().paths().dir.as_path(),
            can_ask(&parts),
        );
        crate::prompt::tokens::Encoding::for_model(&parts.config.model).preload();
        Actor {
            id,
            emitter,
            agent_slots: super::slots::slots(parts.config.max_parallel_agents),
            parts,
            processes,
            shells,
            calibration: Default::default(),
            measures: Arc::default(),
            retry: Default::default(),
            database,
            urls,
            sandbox,
            engine_dirs,
            pending,
            checkpoint_at: checkpoint_at.into(),
            mcp_gone: std::sync::Mutex::default(),
            streamed_bytes: Default::default(),
            tools_now: std::sync::Mutex::new(Arc::clone(&base_tools)),
            base_tools,
            mcp_version: Default::default(),
            mcp_warned: Default::default(),
            client_tools_told: Default::default(),
            process_usage: Default::default(),
            agents: Arc::new(turnstile_tools::agents::Agents::owned_by(id.to_string())),
            conversations: Default::default(),
            file_snapshots: None,
        }
    }

    /// The tools offered now (MCP tools included), shared: a call keeps the set it started
    /// with even if a server's tools change meanwhile.
    pub(super) fn live_tools(&self) -> Arc<turnstile_tools::ToolRegistry> {
        Arc::clone(&lock(&self.tools_now))
    }

    /// How the model server counts against the estimate, as of its last report.
    pub(super) fn calibration_now(&self) -> crate::prompt::tokens::Calibration {
        *lock(&self.calibration)
    }

    pub(super) async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Command>,
        shared: Arc<Shared>,
    ) {
        // A resumed session starts with its `session.resume` already appended.
        let source = if self.emitter.state().counts.resumes > 0 {
            "resume"
        } else {
            "new"
        };
        self.hook_notify("sessionStart", json!({"source": source}))
            .await;
        if let Err(e) = self.announce_skills().and_then(|()| self.announce_mcp()) {
            tracing::error!(session = %self.id, error = %e, "journal failure; the session stops");
            return;
        }
        if let Some(work) = self.pending.take() {
            // Sends wait behind the pending work (they queue on the channel meanwhile); an
            // abort reaches it like a running message.
            let cancel = tokio_util::sync::CancellationToken::new();
            *lock(&shared.running) = Some(cancel.clone());
            // Running before it is released, so an abort in between reaches it.
            shared.release.cancelled().await;
            let continued = self.continue_pending(work, &cancel).await;
            *lock(&shared.running) = None;
            if let Err(e) = continued {
                tracing::error!(session = %self.id, error = %e, "journal failure; the session stops");
                return;
            }
        }
        let mut shutdown_reply = None;
        // The runtime announces the (empty) send queue at the engine's first message, not
        // when the session opens: a client subscribing after create still sees it.
        let mut queue_announced = false;
        // Commands that came while a message ran, in order (`while_running`).
        let mut deferred = std::collections::VecDeque::new();
        loop {
            let cmd = match deferred.pop_front() {
                Some(cmd) => cmd,
                None => match rx.recv().await {
                    Some(cmd) => cmd,
                    None => break,
                },
            };
            match cmd {
                Command::Send {
                    prompt,
                    options,
                    message_id,
                    cancel,
                    waited,
                    done,
                } => {
                    {
                        // Moved from queued to running under the running lock, so an abort
                        // sees the message in one place or the other.
                        let mut running = lock(&shared.running);
                        shared.queue.take(&message_id);
                        *running = Some(cancel.clone());
                    }
                    // A message that waited leaves the pending queue.
                    let announce = waited || !queue_announced;
                    queue_announced = true;
                    if announce && let Err(e) = self.emitter.emit(&PendingMessagesModified {}) {
                        tracing::warn!(session = %self.id, error = %e, "could not announce the queue");
                    }
                    let message = self.message(prompt, options, message_id, waited, &cancel);
                    let outcome = match self.while_running(message, &mut rx, &mut deferred).await {
                        Ok(outcome) => outcome,
                        Err(e) => {
                            tracing::error!(session = %self.id, error = %e, "journal failure; the session stops");
                            *lock(&shared.running) = None;
                            let _ = done.send(Outcome::Failed {
                                error_type: ModelErrorKind::Other("journal".into()),
                                status_code: None,
                                message: e.to_string(),
                            });
                            return;
                        }
                    };
                    *lock(&shared.running) = None;
                    let _ = done.send(outcome);
                }
                Command::Enqueued {
                    request_id,
                    command,
                    hosted,
                    cancel,
                } => {
                    queue_announced = true;
                    let ran = self
                        .queued_command(
                            &shared,
                            &request_id,
                            command,
                            hosted,
                            &cancel,
                            &mut rx,
                            &mut deferred,
                        )
                        .await;
                    if let Err(e) = ran {
                        tracing::error!(session = %self.id, error = %e, "journal failure; the session stops");
                        return;
                    }
                }
                Command::SetTitle { title, done } => {
                    let _ = done.send(self.set_title(title));
                }
                Command::SwitchModel {
                    model,
                    reasoning_effort,
                    done,
                } => {
                    let result = self.switch_model(model, reasoning_effort);
                    let _ = done.send(result);
                }
                Command::SkipCustomInstructions { skip, done } => {
                    self.parts.config.skip_custom_instructions = skip;
                    let _ = done.send(Ok(()));
                }
                Command::SetVision { vision, done } => {
                    self.parts.config.vision = vision;
                    let _ = done.send(Ok(()));
                }
                Command::SetMode { mode, done } => {
                    let _ = done.send(self.set_mode(mode));
                }
                Command::SetOptions { options, done } => {
                    let config = &mut self.parts.config;
                    config.streaming = options.streaming.unwrap_or(config.streaming);
                    config.ask_user_disabled = options
                        .ask_user_disabled
                        .unwrap_or(config.ask_user_disabled);
                    let _ = done.send(Ok(()));
                }
                Command::SetWorkingDirectory { cwd, done } => {
                    let _ = done.send(self.set_working_directory(cwd));
                }
                Command::Log { entry, done } => {
                    let event = entry.event(self.emitter.writer().last_id());
                    let result = self.emitter.emit_event(event).map(|e| e.id);
                    let _ = done.send(result);
                }
                Command::Record {
                    event_type,
                    data,
                    done,
                } => {
                    let result = self.emitter.emit_raw(&event_type, data).map(|e| e.id);
                    let _ = done.send(result);
                }
                Command::Compact { options, done } => {
                    let cancel = tokio_util::sync::CancellationToken::new();
                    let mode = self.parts.config.mode;
                    let result = self.compact(&options, &[], mode, &cancel).await;
                    let _ = done.send(result);
                }
                Command::Mcp { change, done } => {
                    let _ = done.send(self.change_mcp(change).await);
                }
                Command::Cut { target, kind, done } => {
                    let result = self.cut(&target, kind).await;
                    let _ = done.send(result);
                }
                Command::Shutdown { done } => {
                    shutdown_reply = Some(done);
                    break;
                }
                Command::Metrics { model, done } => {
                    let _ = done.send(Ok(self.metrics(model.as_deref())));
                }
                Command::UserShell {
                    command,
                    tool_call_id,
                    cancel,
                    done,
                } => {
                    // Joins and figures are answered while it runs, as during a message.
                    let run = self.user_shell(command, tool_call_id, cancel);
                    let result = self.while_running(run, &mut rx, &mut deferred).await;
                    let _ = done.send(result);
                }
                Command::Join {
                    continue_pending_work,
                    done,
                } => {
                    // The message it was meant to join ended meanwhile.
                    let _ = done.send(self.join(continue_pending_work));
                }
            }
        }
        let result = self.shutdown().await;
        if let Some(done) = shutdown_reply {
            let _ = done.send(result);
        }
    }

    /// Runs `message` to its end, taking the commands that come meanwhile: a client's join
    /// and a question for the figures are answered at once (`join.rs`, `metrics.rs`), every
    /// other command waits in `deferred`, in order, as it would have waited on the channel.
    pub(super) async fn while_running<T>(
        &self,
        message: impl std::future::Future<Output = T>,
        rx: &mut mpsc::UnboundedReceiver<Command>,
        deferred: &mut std::collections::VecDeque<Command>,
    ) -> T {
        tokio::pin!(message);
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                out = &mut message => return out,
                cmd = rx.recv(), if open => match cmd {
                    Some(Command::Join { continue_pending_work, done }) => {
                        let _ = done.send(self.join(continue_pending_work));
                    }
                    Some(Command::Metrics { model, done }) => {
                        let _ = done.send(Ok(self.metrics(model.as_deref())));
                    }
                    Some(other) => deferred.push_back(other),
                    None => open = false,
                },
            }
        }
    }

    /// The session's skills (`session.skills_loaded`, when it has any) and a warning for each
    /// skill file that could not be loaded.
    fn announce_skills(&self) -> Result<(), LoopError> {
        let config = &self.parts.config;
        if !config.skills.is_empty() {
            self.emitter.emit(&SessionSkillsLoaded {
                skills: config.skills.summaries(),
            })?;
        }
        for warning in &config.skill_warnings {
            self.emitter.emit(&SessionWarning {
                warning_type: "skills".into(),
                message: warning.to_string(),
                ..Default::default()
            })?;
        }
        Ok(())
    }

    async fn shutdown(self) -> Result<(), LoopError> {
        // A suspended message is over (the actor took this command after it): the close is
        // recorded.
        self.emitter.end_suspension();
        self.hook_notify("sessionEnd", json!({"reason": "complete"}))
            .await;
        // A shell may run past idle; not past the session (detached ones are meant to).
        for shell in self.shells.stop_all() {
            self.emitter.emit(&SessionWarning {
                warning_type: "shells".into(),
                message: format!(
                    "stopped shell {} (its command was still running when the session closed)",
                    shell.id()
                ),
                ..Default::default()
            })?;
        }
        if let Some(host) = &self.parts.config.mcp {
            host.stop_all().await;
        }
        // The state's lock is taken once at a time: building the request takes it too.
        let mode = AgentMode::parse(&self.emitter.state().session.mode).unwrap_or_default();
        let request = self.request(mode);
        // No decision rests on these figures: a short process does not wait for the
        // vocabulary to close (`Measure::unless_loading`).
        let estimate = self
            .measure()
            .unless_loading(&request, u64::MAX)
            .usage_info(&request, self.token_limit(), false);
        let window = self.calibration_now().apply(&estimate);
        let payload = shutdown_payload(
            &self.emitter.state(),
            &lock(&self.process_usage),
            &self.parts.config.model,
            &window,
        );
        self.emitter.emit(&payload)?;
        // The session's shells and agents are let go with it, as the runtime announces.
        self.emitter.emit(&SessionBackgroundTasksChanged {})?;
        self.emitter.boundary().await?;
        let dir = self.emitter.writer().paths().dir.clone();
        self.emitter.into_writer().close()?;
        // The checkpoint is an optimisation: failing to write it loses nothing.
        if let Err(e) = turnstile_replay::write_checkpoint(&dir) {
            tracing::warn!(session = %self.id, error = %e, "could not write the checkpoint");
        }
        Ok(())
    }

    /// Durability, then `session.idle` (always last, ephemeral), then maybe a checkpoint.
    pub(super) async fn idle(&self, mode: AgentMode, aborted: bool) -> Result<(), LoopError> {
        self.emitter.boundary().await?;
        // The agent loop stopped; the session-level idle follows (the Copilot CLI's pair).
        self.emitter.emit(&AssistantIdle {
            aborted: aborted.then_some(true),
        })?;
        self.emitter.emit(&SessionIdle {
            aborted: aborted.then_some(true),
            // `mode: "autopilot"` on an idle marks a continuation boundary (the agent keeps
            // working); the SDK clients' sendAndWait ignores such idles. This idle ends the
            // message, so an autopilot run reports no mode here.
            mode: (mode != AgentMode::Autopilot).then(|| mode.as_str().into()),
        })?;
        let size = self.emitter.writer().byte_len();
        let at = self
            .checkpoint_at
            .load(std::sync::atomic::Ordering::Relaxed);
        if size - at >= CHECKPOINT_EVERY_BYTES {
            // Runs after idle is announced: never on the path a client waits for.
            match turnstile_replay::write_checkpoint(&self.emitter.writer().paths().dir) {
                Ok(info) => self
                    .checkpoint_at
                    .store(info.offset, std::sync::atomic::Ordering::Relaxed),
                Err(e) => {
                    tracing::warn!(session = %self.id, error = %e, "could not write the checkpoint")
                }
            }
        }
        Ok(())
    }
}
