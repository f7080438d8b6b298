//! The handle to a running session: it starts the actor task and sends it commands.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::PendingMessagesModified;
use turnstile_journal::payload::SnapshotRewind;
use turnstile_journal::{Event, StateRoot, Uuid};

use super::actor::Actor;
use super::command::{Command, McpChange};
use super::compaction_options::{CompactOptions, CompactionReport};
use super::config::SessionParts;
use super::emitter::{self, Emitter, Subscribers};
use super::error::LoopError;
use super::lock::lock;
use super::log_entry::LogEntry;
use super::metrics::SessionMetrics;
use super::pending::PendingWork;
use super::resume_options::{ResumeOptions, ResumeReport};
use super::send::{Outcome, SendOptions};
use super::send_queue::{QueuedKind, SendQueue};
use super::shared::Shared;
use crate::autopilot::AgentMode;
use turnstile_tools::shells::LostShell;

/// A handle to a running session; cheap to clone.
#[derive(Clone)]
pub struct SessionHandle {
    pub(super) id: Uuid,
    pub(super) tx: mpsc::UnboundedSender<Command>,
    pub(super) shared: Arc<Shared>,
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

    pub(super) fn spawn(
        id: Uuid,
        emitter: Emitter,
        subscribers: Subscribers,
        parts: SessionParts,
        pending: Option<PendingWork>,
        lost_shells: Vec<LostShell>,
        hold_pending_work: bool,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let release = CancellationToken::new();
        let file_snapshots = open_file_snapshots(&emitter, &parts.config);
        if !hold_pending_work {
            release.cancel();
        }
        let shared = Arc::new(Shared {
            subscribers,
            running: Mutex::new(None),
            queue: SendQueue::default(),
            user_shells: Mutex::new(Vec::new()),
            mcp: parts.config.mcp.clone(),
            skills: Arc::clone(&parts.config.skills),
            release,
            measures: Arc::default(),
            suspended: emitter.suspension(),
            file_snapshots: file_snapshots.clone(),
        });
        let mut actor = Actor::new(id, emitter, parts, pending, lost_shells);
        actor.measures = Arc::clone(&shared.measures);
        actor.file_snapshots = file_snapshots;
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

    /// The session's skills: a client's toggle or reload shows in the next request.
    pub fn skills(&self) -> &Arc<turnstile_tools::skills::SkillSet> {
        &self.shared.skills
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
        let prompt = prompt.into();
        let prompt_text = prompt.clone();
        let (done, rx) = oneshot::channel();
        let cancel = CancellationToken::new();
        let waited = {
            let running = lock(&self.shared.running);
            let waits = running.is_some() || self.shared.queue.has_waiting();
            // Queued before the command is sent, so an abort from here on reaches it.
            let pushed = self.shared.queue.push(
                &message_id,
                QueuedKind::Message,
                prompt_text.clone(),
                options.mode,
                cancel.clone(),
            );
            debug_assert!(pushed.is_ok(), "messages are not bounded by the queue");
            waits
        };
        let sent = self.tx.send(Command::Send {
            prompt,
            options,
            message_id: message_id.clone(),
            cancel,
            waited,
            done,
        });
        if sent.is_err() {
            self.shared.queue.take(&message_id);
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

    /// Changes the options a client may change on an open session, after the messages sent
    /// before it.
    pub async fn set_options(&self, options: super::config::LiveOptions) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::SetOptions { options, done }, rx)
            .await
    }

    /// Moves the session to working directory `cwd` (absolute, an existing directory) after
    /// the messages sent before it: tools, the sandbox and the rules' paths work there from
    /// then on, and the change is recorded as `session.context_changed`
    /// (`session/working_directory.rs`).
    pub async fn set_working_directory(
        &self,
        cwd: impl Into<std::path::PathBuf>,
    ) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        let cwd = cwd.into();
        self.command(Command::SetWorkingDirectory { cwd, done }, rx)
            .await
    }

    /// Sends the model the pictures tool results gave (or leaves them out of) the requests
    /// made from now on, after the messages sent before it (SDK `modelCapabilities`).
    pub async fn set_vision(&self, vision: bool) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::SetVision { vision, done }, rx).await
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

    /// Records an event a client's request describes (`session.plan_changed` for a plan the
    /// client wrote, say) after the messages sent before it; returns its id. `data` is the
    /// event's data as the schema has it; the type must be one the journal persists.
    pub async fn record(
        &self,
        event_type: &str,
        data: Box<serde_json::value::RawValue>,
    ) -> Result<Uuid, LoopError> {
        let (done, rx) = oneshot::channel();
        let event_type = event_type.to_owned();
        self.command(
            Command::Record {
                event_type,
                data,
                done,
            },
            rx,
        )
        .await
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
        self.command(cmd, rx).await
    }

    /// The session's figures now: its usage totals and the request the next turn would send,
    /// measured with `model`'s tokenizer when given (`metrics.rs`). Recorded nowhere; answered
    /// while a message runs too.
    pub async fn metrics(&self, model: Option<String>) -> Result<SessionMetrics, LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(Command::Metrics { model, done }, rx).await
    }

    /// Sends `cmd` and waits for its answer: the actor's value or [`LoopError`] as it is; a
    /// task that is gone, or stops before it answers, is [`LoopError::Closed`].
    pub(super) async fn command<T>(
        &self,
        cmd: Command,
        rx: oneshot::Receiver<Result<T, LoopError>>,
    ) -> Result<T, LoopError> {
        self.tx.send(cmd).map_err(|_| LoopError::Closed(self.id))?;
        rx.await.map_err(|_| LoopError::Closed(self.id))?
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
        self.shared.queue.cancel_all();
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

    /// True while a message is running (or a queued command is held for its host).
    pub fn is_busy(&self) -> bool {
        lock(&self.shared.running).is_some()
    }

    /// The files the session's turns changed, when it tracks them.
    pub fn file_snapshots(&self) -> Option<&Arc<crate::rewind_files::FileSnapshots>> {
        self.shared.file_snapshots.as_ref()
    }

    /// Cancels the user's commands, finishes queued messages, records `session.shutdown`,
    /// makes the journal durable and releases the lock.
    pub async fn shutdown(&self) -> Result<(), LoopError> {
        // The user's commands end with the session, rather than the close waiting for them.
        self.cancel_user_shells();
        let (done, rx) = oneshot::channel();
        self.command(Command::Shutdown { done }, rx).await
    }

    /// Records `session.resume` for a client that joins the session while it runs a message
    /// (`sessionWasActive: true`; `continuePendingWork` as the client named it), without
    /// waiting for the message; when it is idle, the journal is resumed instead.
    pub async fn join(&self, continue_pending_work: Option<bool>) -> Result<(), LoopError> {
        let (done, rx) = oneshot::channel();
        self.command(
            Command::Join {
                continue_pending_work,
                done,
            },
            rx,
        )
        .await
    }

    /// Closes the session leaving its running message where it stands, as a crash would but
    /// cleanly: from now on nothing of that message (nor of one queued behind it) is recorded,
    /// so its calls waiting on a client keep their open requests in the journal and its turn
    /// stays open; then `session.shutdown` is recorded, the journal made durable and the lock
    /// released. A later resume continues the requests (`continue_pending_work`) or closes
    /// them as interrupted. Nothing is held in memory meanwhile: the journal is the state.
    /// The message is stopped when this is called; the future waits for the close.
    pub fn suspend(&self) -> impl std::future::Future<Output = Result<(), LoopError>> + '_ {
        self.shared
            .suspended
            .store(true, std::sync::atomic::Ordering::Release);
        self.abort();
        self.shutdown()
    }
}

pub(super) fn subscribed() -> (Subscribers, mpsc::UnboundedReceiver<Arc<Event>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Mutex::new(emitter::Live::with(tx))), rx)
}

/// The session's file snapshots: tracked when its config asks and it has no turn yet, or when
/// it tracked before (`rewind_files::FileSnapshots::open`). A store that cannot be opened
/// leaves the session untracked, said in the log.
fn open_file_snapshots(
    emitter: &super::emitter::Emitter,
    config: &super::config::SessionConfig,
) -> Option<Arc<crate::rewind_files::FileSnapshots>> {
    let fresh = emitter.state().counts.user_messages == 0;
    let dir = emitter.writer().paths().dir.clone();
    match crate::rewind_files::FileSnapshots::open(
        &dir,
        &config.cwd,
        config.file_change_tracking,
        fresh,
    ) {
        Ok(store) => store.map(Arc::new),
        Err(e) => {
            tracing::warn!(error = %e, "rewind: file change tracking is off for this session");
            None
        }
    }
}
