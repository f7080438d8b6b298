//! A session: an actor task that owns the journal writer and the folded state, runs one
//! message at a time through the agent loop, and publishes every event to subscribers.
//!
//! Sends made while a message is running are queued and run in order (the SDK clients send
//! and then wait; queueing keeps a second send from failing). `abort` cancels the running
//! message and every message queued behind it: a queued message that was aborted is recorded
//! as its `user.message` with no turn (no LLM call is recorded that was never made).

mod actor;
mod background;
mod compaction;
mod emitter;
mod ended_shells;
mod history;
mod hooks_glue;
mod log_entry;
mod lost_shells;
mod mcp_glue;
mod message;
mod open;
mod pending;
mod permission;
mod prompting;
mod recorded_history;
mod rewind;
mod streaming;
mod subagent;
mod summary;
mod tool_call;
mod totals;
mod turn;
mod usage;
mod window;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::PendingMessagesModified;
use turnstile_journal::payload::SnapshotRewind;
use turnstile_journal::{Durability, Event, StateRoot, Uuid};
use turnstile_replay::RewindError;

pub use compaction::{CompactOptions, CompactionReport, InfiniteSessions};
pub use history::{chat_messages, default_system_prompt, request_messages};
pub use log_entry::{LogEntry, LogLevel};
pub use summary::SUMMARY_INSTRUCTION;

use crate::autopilot::{AgentMode, DEFAULT_MAX_CONTINUES};
use crate::client::{ExternalTools, PermissionAsker};
use crate::hooks::HookRunner;
use crate::permissions::{LiveRules, PermissionPolicy};
use crate::prompt::{Attachment, SectionTransformer, SystemMessageConfig};
use crate::tools::ToolRegistry;
use crate::tools::processes::StoppedGroup;
use crate::tools::shells::LostShell;
use emitter::{Emitter, Subscribers};
use turnstile_providers::{ModelErrorKind, ModelProvider};

/// Everything a session needs besides its model and tools.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Working directory of the tools.
    pub cwd: PathBuf,
    /// Model name sent to the provider.
    pub model: String,
    /// When the journal is fsynced.
    pub durability: Durability,
    /// Default mode of a send.
    pub mode: AgentMode,
    /// Nudges before autopilot gives up.
    pub max_autopilot_continues: u32,
    /// Who may run what.
    pub permissions: PermissionPolicy,
    /// The rules a client changes while the session runs (shared with whoever changes them).
    pub live_permissions: Arc<LiveRules>,
    /// Let file tools reach outside `cwd`.
    pub allow_outside_cwd: bool,
    /// `view`, `glob` and `grep` ask a `read` permission for what they read inside `cwd`, as
    /// the Copilot CLI's SDK sessions do (the server sets it when the client answers
    /// permission requests; the terminal trusts the working directory).
    pub ask_reads_in_cwd: bool,
    /// Ask the provider for a streamed answer.
    pub streaming: bool,
    /// An exact system prompt (a replayed recording's); when set, `system_message` is unused.
    pub system_prompt: Option<String>,
    /// How the system prompt is built from the engine's sections (SDK `systemMessage`).
    pub system_message: SystemMessageConfig,
    /// Reasoning effort asked of the model, recorded in `session.start` (SDK `reasoningEffort`).
    pub reasoning_effort: Option<String>,
    /// Tools never offered to the model (SDK `defaultAgent.excludedTools`); a call to one
    /// anyway is answered as for a tool that does not exist.
    pub excluded_tools: Vec<String>,
    /// The model's context window in tokens; `None` looks the model up in
    /// [`crate::prompt::tokens::token_limit`].
    pub token_limit: Option<u64>,
    /// When the history is compacted (SDK `infiniteSessions`).
    pub infinite_sessions: InfiniteSessions,
    /// Leave the repository's instruction files out of the system prompt (SDK
    /// `skipCustomInstructions`).
    pub skip_custom_instructions: bool,
    /// A remote store every journal line also goes to, fenced and acknowledged before the
    /// line counts as durable (`turnstile_journal::sink`); `None` for the file store alone.
    pub journal_sink: Option<Arc<dyn turnstile_journal::JournalSink>>,
    /// The session's MCP servers, started before it; the session offers their tools after
    /// `SessionParts::tools` (and follows their changes), announces their status at the
    /// start and stops them with it.
    pub mcp: Option<Arc<turnstile_mcp::McpHost>>,
    /// The skills of the SDK's `skillDirectories` (listed in `session.skills_loaded` at the
    /// start); the `skill` tool in `SessionParts::tools` loads them.
    pub skills: Arc<crate::skills::SkillSet>,
    /// The skill files that could not be loaded, each recorded as a `session.warning`.
    pub skill_warnings: Vec<crate::skills::SkillWarning>,
}

impl SessionConfig {
    /// Defaults for a session working in `cwd` with `model`.
    pub fn new(cwd: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        SessionConfig {
            cwd: cwd.into(),
            model: model.into(),
            durability: Durability::Turn,
            mode: AgentMode::Interactive,
            max_autopilot_continues: DEFAULT_MAX_CONTINUES,
            permissions: PermissionPolicy::default(),
            live_permissions: Arc::default(),
            allow_outside_cwd: false,
            ask_reads_in_cwd: false,
            streaming: true,
            system_prompt: None,
            system_message: SystemMessageConfig::default(),
            reasoning_effort: None,
            excluded_tools: Vec::new(),
            token_limit: None,
            infinite_sessions: InfiniteSessions::default(),
            skip_custom_instructions: false,
            journal_sink: None,
            mcp: None,
            skills: Arc::default(),
            skill_warnings: Vec::new(),
        }
    }
}

/// Options of one send.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// Mode for this message; `None` uses the session's.
    pub mode: Option<AgentMode>,
    /// Files, directories, selections, blobs and GitHub references attached to the message.
    pub attachments: Vec<Attachment>,
    /// Extra HTTP headers of every model call this message makes (`requestHeaders`).
    pub request_headers: Vec<(String, String)>,
}

/// How a message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The loop finished; `session.idle` was announced.
    Idle,
    /// The message was aborted; `session.idle {aborted: true}` was announced.
    Aborted,
    /// The model call (or the journal) failed; `session.error` was recorded.
    Failed {
        /// What failed: `errorType` of the `session.error`, or `journal` when the session's
        /// own journal did (nothing could be recorded then).
        error_type: ModelErrorKind,
        /// HTTP status, when there was one.
        status_code: Option<u16>,
        /// What went wrong.
        message: String,
    },
}

/// Errors of the loop crate.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The journal refused or failed.
    #[error(transparent)]
    Journal(#[from] turnstile_journal::WriteError),
    /// The journal could not be folded.
    #[error(transparent)]
    Replay(#[from] turnstile_replay::ReplayError),
    /// The session layout is wrong.
    #[error(transparent)]
    Layout(#[from] turnstile_journal::layout::LayoutError),
    /// The session's task has stopped (after shutdown or a fatal journal error).
    #[error("session {0} is closed")]
    Closed(Uuid),
    /// The journal could not be read back (for the pending work a resume continues).
    #[error(transparent)]
    Read(#[from] turnstile_journal::ReadError),
    /// A rewind or truncation that cannot be made (unknown event, not a user turn).
    #[error(transparent)]
    Rewind(#[from] RewindError),
}

/// How a resume treats work the previous engine left in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumeOptions {
    /// The open turn's calls that wait on a permission answer or a client tool result stay
    /// open: their requests are announced again (same `requestId`, same data) and the loop goes
    /// on once they are answered (`session.resume` records `continuePendingWork: true`).
    /// `false`: they are closed as interrupted.
    pub continue_pending_work: bool,
    /// The client named `continuePendingWork`: `session.resume` records the choice (`false`
    /// included), as the Copilot CLI does; unnamed, only a continued resume records it.
    pub continue_pending_work_named: bool,
    /// The continued work waits for [`SessionHandle::release_pending_work`] (or an abort)
    /// before its requests are announced again: a server registers the session first, so a
    /// client that answers at once finds it open.
    pub hold_pending_work: bool,
}

enum Command {
    Send {
        prompt: String,
        options: SendOptions,
        message_id: String,
        /// Cancelled by `abort`, whether the message is running or still queued.
        cancel: CancellationToken,
        /// It was sent while another message ran or waited (so it joined the pending queue).
        waited: bool,
        done: oneshot::Sender<Outcome>,
    },
    SetTitle {
        title: String,
        done: oneshot::Sender<Result<(), String>>,
    },
    SwitchModel {
        model: String,
        reasoning_effort: Option<String>,
        done: oneshot::Sender<Result<(), String>>,
    },
    SkipCustomInstructions {
        skip: bool,
        done: oneshot::Sender<Result<(), String>>,
    },
    SetMode {
        mode: AgentMode,
        done: oneshot::Sender<Result<(), String>>,
    },
    Log {
        entry: LogEntry,
        done: oneshot::Sender<Result<Uuid, String>>,
    },
    Compact {
        options: CompactOptions,
        done: oneshot::Sender<Result<CompactionReport, String>>,
    },
    Mcp {
        change: McpChange,
        done: oneshot::Sender<Result<bool, String>>,
    },
    Cut {
        target: String,
        kind: turnstile_replay::CutKind,
        done: oneshot::Sender<Result<Result<SnapshotRewind, RewindError>, String>>,
    },
    Shutdown {
        done: oneshot::Sender<Result<(), String>>,
    },
}

/// A client's change to a session's MCP servers (`session.mcp.enable|disable|reload`,
/// `startServer|stopServer|restartServer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpChange {
    /// Start the server if it is not running, from `config` when given (a new server is
    /// added), else from the configuration it has.
    Start {
        /// The server.
        name: String,
        /// Its configuration, when the client gives one.
        config: Option<Box<turnstile_mcp::ServerConfig>>,
    },
    /// Stop the server (its configuration is kept) and offer none of its tools.
    Stop(String),
    /// Stop the server if it runs and start it again, from `config` when given.
    Restart {
        /// The server.
        name: String,
        /// Its new configuration, when the client gives one.
        config: Option<Box<turnstile_mcp::ServerConfig>>,
    },
    /// Start the server again if it is disabled or failed.
    Enable(String),
    /// Stop the server and offer none of its tools.
    Disable(String),
    /// Restart every server that is not disabled.
    Reload,
}

struct Shared {
    subscribers: Subscribers,
    running: Mutex<Option<CancellationToken>>,
    /// Tokens of the messages sent and not yet started, by message id.
    queued: Mutex<Vec<(String, CancellationToken)>>,
    /// The session's MCP servers (`SessionConfig::mcp`).
    mcp: Option<Arc<turnstile_mcp::McpHost>>,
    /// Fired when held pending work may go on (`ResumeOptions::hold_pending_work`).
    release: CancellationToken,
    /// Turn requests built and measured (the actor's count).
    measures: Arc<std::sync::atomic::AtomicU64>,
}

/// A handle to a running session; cheap to clone.
#[derive(Clone)]
pub struct SessionHandle {
    id: Uuid,
    tx: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
}

/// What resuming did.
#[derive(Debug, Clone)]
pub struct ResumeReport {
    /// The journal's state before the resume plan.
    pub events_before: u64,
    /// Work was open when the journal ended.
    pub was_active: bool,
    /// Tool calls the plan marked interrupted.
    pub closed_tool_calls: Vec<String>,
    /// Turns the plan closed.
    pub closed_turns: Vec<String>,
    /// The checkpoint was used.
    pub used_checkpoint: bool,
    /// A torn tail was cut on open.
    pub torn_tail_cut: bool,
    /// Tool calls left open to be continued (`ResumeOptions::continue_pending_work`).
    pub continued_tool_calls: Vec<String>,
    /// Tool process groups the previous engine left running, killed by this resume.
    pub stopped_process_groups: Vec<StoppedGroup>,
}

/// The parts a session is built from.
pub struct SessionParts {
    /// The settings.
    pub config: SessionConfig,
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools.
    pub tools: Arc<ToolRegistry>,
    /// Hooks (command hooks, an SDK client's, or none).
    pub hooks: Option<Arc<dyn HookRunner>>,
    /// Tools an SDK client implements.
    pub external_tools: Option<Arc<dyn ExternalTools>>,
    /// A client that decides permissions the policy leaves open.
    pub permission_asker: Option<Arc<dyn PermissionAsker>>,
    /// A client that rewrites system prompt sections (`transform` actions).
    pub section_transformer: Option<Arc<dyn SectionTransformer>>,
}

impl SessionHandle {
    /// Creates a new session under `root` (a fresh id unless given) and starts it.
    pub fn create(
        root: &StateRoot,
        id: Option<Uuid>,
        parts: SessionParts,
    ) -> Result<Self, LoopError> {
        Self::create_inner(root, id, parts, Arc::default())
    }

    /// Like [`Self::create`], with a subscription that starts before `session.start`.
    pub fn create_subscribed(
        root: &StateRoot,
        id: Option<Uuid>,
        parts: SessionParts,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Arc<Event>>), LoopError> {
        let (subscribers, rx) = subscribed();
        Ok((Self::create_inner(root, id, parts, subscribers)?, rx))
    }

    /// Resumes an existing session: takes the writer lock (recovering a torn tail), folds the
    /// journal (from its checkpoint when valid), appends the resume plan, and starts it.
    pub fn resume(
        root: &StateRoot,
        id: Uuid,
        parts: SessionParts,
    ) -> Result<(Self, ResumeReport), LoopError> {
        Self::resume_inner(root, id, parts, Arc::default(), ResumeOptions::default())
    }

    /// Like [`Self::resume`], with options (e.g. continuing pending work) and a subscription
    /// that starts before the resume plan's events.
    pub fn resume_with(
        root: &StateRoot,
        id: Uuid,
        parts: SessionParts,
        options: ResumeOptions,
    ) -> Result<(Self, ResumeReport, mpsc::UnboundedReceiver<Arc<Event>>), LoopError> {
        let (subscribers, rx) = subscribed();
        let (handle, report) = Self::resume_inner(root, id, parts, subscribers, options)?;
        Ok((handle, report, rx))
    }

    /// Like [`Self::resume`], with a subscription that starts before the resume plan's events.
    pub fn resume_subscribed(
        root: &StateRoot,
        id: Uuid,
        parts: SessionParts,
    ) -> Result<(Self, ResumeReport, mpsc::UnboundedReceiver<Arc<Event>>), LoopError> {
        let (subscribers, rx) = subscribed();
        let (handle, report) =
            Self::resume_inner(root, id, parts, subscribers, ResumeOptions::default())?;
        Ok((handle, report, rx))
    }

    fn spawn(
        id: Uuid,
        emitter: Emitter,
        subscribers: Subscribers,
        parts: SessionParts,
        pending: Option<pending::PendingWork>,
        lost_shells: Vec<LostShell>,
        hold_pending_work: bool,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let release = CancellationToken::new();
        if !hold_pending_work {
            release.cancel();
        }
        let shared = Arc::new(Shared {
            subscribers,
            running: Mutex::new(None),
            queued: Mutex::new(Vec::new()),
            mcp: parts.config.mcp.clone(),
            release,
            measures: Arc::default(),
        });
        let mut actor = actor::Actor::new(id, emitter, parts, pending, lost_shells);
        actor.measures = Arc::clone(&shared.measures);
        tokio::spawn(actor.run(rx, Arc::clone(&shared)));
        SessionHandle { id, tx, shared }
    }

    /// The session id.
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// The session's MCP servers, if it has any.
    pub fn mcp(&self) -> Option<&Arc<turnstile_mcp::McpHost>> {
        self.shared.mcp.as_ref()
    }

    /// Announces an ephemeral event to the live subscribers (e.g. an MCP App's tool call made
    /// over RPC), chained after the last persisted event; never written to the journal.
    pub fn announce<P: turnstile_journal::payload::Payload>(&self, payload: &P) {
        emitter::publish_live(&self.shared.subscribers, payload);
    }

    /// Every event from now on, ephemeral ones too, in order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.shared.subscribers).senders.push(tx);
        rx
    }

    /// Queues a message; returns its `messageId` at once.
    pub fn send(
        &self,
        prompt: impl Into<String>,
        options: SendOptions,
    ) -> Result<(String, oneshot::Receiver<Outcome>), LoopError> {
        let message_id = Uuid::new_v4().to_string();
        let (done, rx) = oneshot::channel();
        let cancel = CancellationToken::new();
        let waited = {
            let running = lock(&self.shared.running);
            let mut queued = lock(&self.shared.queued);
            let waits = running.is_some() || !queued.is_empty();
            // Queued before the command is sent, so an abort from here on reaches it.
            queued.push((message_id.clone(), cancel.clone()));
            waits
        };
        let sent = self.tx.send(Command::Send {
            prompt: prompt.into(),
            options,
            message_id: message_id.clone(),
            cancel,
            waited,
            done,
        });
        if sent.is_err() {
            lock(&self.shared.queued).retain(|(id, _)| *id != message_id);
            return Err(LoopError::Closed(self.id));
        }
        if waited {
            // The actor is busy with another message: the queue's watchers learn it from here.
            emitter::publish_live(&self.shared.subscribers, &PendingMessagesModified {});
        }
        Ok((message_id, rx))
    }

    /// Sets the session's display title (announced as `session.title_changed`), after the
    /// messages sent before it.
    pub async fn set_name(&self, title: impl Into<String>) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        let title = title.into();
        self.command(Command::SetTitle { title, done }, rx).await
    }

    /// Switches the model (and reasoning effort) of the calls that follow, recorded as
    /// `session.model_change`; takes effect after the messages sent before it.
    pub async fn switch_model(
        &self,
        model: impl Into<String>,
        reasoning_effort: Option<String>,
    ) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        let model = model.into();
        let cmd = Command::SwitchModel {
            model,
            reasoning_effort,
            done,
        };
        self.command(cmd, rx).await
    }

    /// Sets the mode of the sends that name none (recorded as `session.mode_changed` when it
    /// changes), after the messages sent before it.
    pub async fn set_mode(&self, mode: AgentMode) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::SetMode { mode, done }, rx).await
    }

    /// Leaves the repository's instruction files out of (or back in) the system prompts built
    /// from now on, after the messages sent before it.
    pub async fn skip_custom_instructions(&self, skip: bool) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::SkipCustomInstructions { skip, done }, rx)
            .await
    }

    /// Enables, disables or reloads the session's MCP servers after the messages sent before
    /// it; the next model request offers the tools as they are then. `Ok(false)` when the
    /// change named no server of the session (or nothing changed), as the runtime ignores it.
    pub async fn change_mcp(&self, change: McpChange) -> Result<bool, LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::Mcp { change, done }, rx).await
    }

    /// Records a client log entry (`session.info`/`session.warning`/`session.error`) after
    /// the messages sent before it; returns the id of the event.
    pub async fn log(&self, entry: LogEntry) -> Result<Uuid, LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::Log { entry, done }, rx).await
    }

    /// Compacts the history now (SDK `session.history.compact`, `turnstile compact`), after
    /// the messages sent before it: one summary call to the model, recorded as
    /// `session.compaction_start`/`complete` with the options' `trigger`.
    pub async fn compact(&self, options: CompactOptions) -> Result<CompactionReport, LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::Compact { options, done }, rx).await
    }

    /// Removes `target` and every later event from the conversation (a `session.snapshot_rewind`
    /// marker appended after the messages sent before it, made durable): any event for
    /// [`turnstile_replay::CutKind::Truncate`], a main-agent user message for [`turnstile_replay::CutKind::UserTurn`].
    pub async fn cut(
        &self,
        target: impl Into<String>,
        kind: turnstile_replay::CutKind,
    ) -> Result<SnapshotRewind, LoopError> {
        let (done, rx) = oneshot::channel();
        let target = target.into();
        let cmd = Command::Cut { target, kind, done };
        Ok(self.command(cmd, rx).await??)
    }

    async fn command<T>(
        &self,
        cmd: Command,
        rx: oneshot::Receiver<Result<T, String>>,
    ) -> Result<T, LoopError> {
        self.tx.send(cmd).map_err(|_| LoopError::Closed(self.id))?;
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(LoopError::Journal(turnstile_journal::WriteError::Io {
                path: PathBuf::from(self.id.to_string()),
                source: std::io::Error::other(message),
            })),
            Err(_) => Err(LoopError::Closed(self.id)),
        }
    }

    /// Sends and waits until the session is idle again.
    pub async fn send_and_wait(
        &self,
        prompt: impl Into<String>,
        options: SendOptions,
    ) -> Result<Outcome, LoopError> {
        let (_, done) = self.send(prompt, options)?;
        done.await.map_err(|_| LoopError::Closed(self.id))
    }

    /// Aborts the running message, if any, and every message queued behind it.
    pub fn abort(&self) {
        // Held pending work goes on, to be closed as interrupted.
        self.shared.release.cancel();
        for (_, token) in lock(&self.shared.queued).iter() {
            token.cancel();
        }
        if let Some(token) = lock(&self.shared.running).as_ref() {
            token.cancel();
        }
    }

    /// Lets pending work held by [`ResumeOptions::hold_pending_work`] go on: its requests are
    /// announced again and wait for their answers.
    pub fn release_pending_work(&self) {
        self.shared.release.cancel();
    }

    /// How many times the session built and measured a turn's request: once per LLM call of
    /// a turn, once more after each compaction that succeeded, and once per compaction asked
    /// for (a figure for tests and diagnostics).
    pub fn requests_measured(&self) -> u64 {
        self.shared
            .measures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True while a message is running.
    pub fn is_busy(&self) -> bool {
        lock(&self.shared.running).is_some()
    }

    /// Finishes queued messages, records `session.shutdown`, makes the journal durable and
    /// releases the lock.
    pub async fn shutdown(&self) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.tx
            .send(Command::Shutdown { done })
            .map_err(|_| LoopError::Closed(self.id))?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(LoopError::Journal(turnstile_journal::WriteError::Io {
                path: PathBuf::from(self.id.to_string()),
                source: std::io::Error::other(message),
            })),
            Err(_) => Err(LoopError::Closed(self.id)),
        }
    }
}

fn subscribed() -> (Subscribers, mpsc::UnboundedReceiver<Arc<Event>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Mutex::new(emitter::Live::with(tx))), rx)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
