//! Running a fixture again: the recorded prompts through the real agent loop, the recorded
//! answers from the replay provider, the real tools in a working directory.
//!
//! Each process of the recording (see [`crate::plan`]) runs on its own tokio runtime on a
//! thread of its own. A process that the recording shows dying mid-work is stopped at the same
//! point by dropping its runtime: the session's task goes away without `session.shutdown`,
//! exactly as after a `kill -9`, and the next process resumes the session from its journal.
//! An abort is requested at the point the recording shows it. A prompt the recording holds
//! without its call ([`PlannedSend::unanswered`]) is sent, its call aborted as soon as its turn
//! starts and the turn truncated away, as the Copilot CLI's `session.history.truncate` did;
//! the comparison then reads the replay's journal as the runtime's file shows it (without the
//! rewind marker and what it removed). The journal is written with
//! durability `off`: what is written does not depend on it, and fsyncs would only slow tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;
use turnstile_journal::{Durability, Event, StateRoot, Uuid};
use turnstile_loop::hooks::{CommandHooks, HookRunner, HookTrust};
use turnstile_loop::{Outcome, SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{ModelProvider, ReplayProvider};
use turnstile_replay::CutKind;
use turnstile_tools::ToolRegistry;

use crate::error::FixtureError;
use crate::fixture::Fixture;
use crate::plan::{PlannedSend, Segment, SegmentEnd, Trigger};

/// Called with every event of the replayed session as it happens (ephemeral ones too).
pub type Observer<'a> = Box<dyn FnMut(&Event) + Send + 'a>;

/// A replay of a fixture, configured with the builder methods, then run or checked.
pub struct Replay<'a> {
    fixture: &'a Fixture,
    state_dir: Option<PathBuf>,
    session_id: Option<Uuid>,
    tools: Option<Arc<ToolRegistry>>,
    prompts: Option<usize>,
    observer: Option<Observer<'a>>,
}

/// A finished replay: where its journal is and how each prompt ended.
#[derive(Debug)]
pub struct ReplayRun {
    /// The replayed session's id.
    pub session_id: Uuid,
    /// Its journal.
    pub journal: PathBuf,
    /// The directory the tools worked in.
    pub workdir: PathBuf,
    /// How each prompt that ran to the end ended, in order (a prompt whose process the
    /// recording shows dying has none).
    pub outcomes: Vec<Outcome>,
    /// How many prompts were sent.
    pub prompts_sent: usize,
    _state: Option<TempDir>,
    _workdir: Option<TempDir>,
}

impl ReplayRun {
    /// Keeps the temporary state directory (if the replay used one) after the run is dropped,
    /// so the journal can be inspected; returns the journal's path.
    pub fn keep(&mut self) -> &Path {
        if let Some(state) = self._state.take() {
            let _ = state.keep();
        }
        &self.journal
    }
}

impl Fixture {
    /// A replay of this fixture, to configure and run.
    pub fn replay(&self) -> Replay<'_> {
        Replay::new(self)
    }
}

impl<'a> Replay<'a> {
    pub(crate) fn new(fixture: &'a Fixture) -> Self {
        Replay {
            fixture,
            state_dir: None,
            session_id: None,
            tools: None,
            prompts: None,
            observer: None,
        }
    }

    /// Writes the replayed session under this state directory [default: a temporary one,
    /// removed with the [`ReplayRun`]].
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Gives the replayed session this id [default: a fresh one].
    pub fn session_id(mut self, id: Uuid) -> Self {
        self.session_id = Some(id);
        self
    }

    /// Offers these tools [default: the built-ins, as `turnstile run` offers them].
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = Some(Arc::new(tools));
        self
    }

    /// Sends only the first `n` prompts, then shuts the session down.
    pub fn prompts(mut self, n: usize) -> Self {
        self.prompts = Some(n);
        self
    }

    /// Calls `observer` with every event of the replayed session as it happens.
    pub fn observe(mut self, observer: impl FnMut(&Event) + Send + 'a) -> Self {
        self.observer = Some(Box::new(observer));
        self
    }

    /// Runs in a temporary copy of the fixture's working-dir contents.
    pub fn run(self) -> Result<ReplayRun, FixtureError> {
        let dir = temp_workdir(self.fixture)?;
        let mut run = self.run_in(dir.path())?;
        run._workdir = Some(dir);
        Ok(run)
    }

    /// Runs with the tools working in `workdir`, as it is.
    pub fn run_in(mut self, workdir: &Path) -> Result<ReplayRun, FixtureError> {
        let workdir = workdir.canonicalize().map_err(FixtureError::io(workdir))?;
        let (state, root) = match &self.state_dir {
            Some(dir) => (None, StateRoot::new(dir)),
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix("turnstile-replay-state.")
                    .tempdir()
                    .map_err(FixtureError::io(std::env::temp_dir()))?;
                let root = StateRoot::new(tmp.path().join("session-state"));
                (Some(tmp), root)
            }
        };
        let id = self.session_id.unwrap_or_else(Uuid::new_v4);
        let tools = self.offered_tools();
        let mut observer = self.observer.take();
        let fixture = self.fixture;
        let prompts = self.prompts;
        let (outcomes, sent) = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    Driver::new(fixture, &workdir, &root, id, tools, prompts)?
                        .run(observer.as_mut())
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(FixtureError::Session(
                        "the replay thread panicked".to_owned(),
                    ))
                })
        })?;
        Ok(ReplayRun {
            session_id: id,
            journal: root.session(id).events,
            workdir,
            outcomes,
            prompts_sent: sent,
            _state: state,
            _workdir: None,
        })
    }

    /// The fixture replayed.
    pub(crate) fn fixture(&self) -> &'a Fixture {
        self.fixture
    }

    /// The tools offered: those given to [`Replay::tools`], else the built-ins.
    pub(crate) fn offered_tools(&self) -> Arc<ToolRegistry> {
        self.tools
            .clone()
            .unwrap_or_else(|| Arc::new(ToolRegistry::builtin(true)))
    }

    /// Offers these tools (already shared).
    pub(crate) fn tools_arc(mut self, tools: Arc<ToolRegistry>) -> Self {
        self.tools = Some(tools);
        self
    }
}

/// A temporary directory holding a copy of the fixture's working-dir contents.
pub(crate) fn temp_workdir(fixture: &Fixture) -> Result<TempDir, FixtureError> {
    let dir = tempfile::Builder::new()
        .prefix("turnstile-replay-work.")
        .tempdir()
        .map_err(FixtureError::io(std::env::temp_dir()))?;
    fixture.prepare_workdir(dir.path())?;
    Ok(dir)
}

/// Runs the plan's processes one after another.
struct Driver<'f> {
    fixture: &'f Fixture,
    workdir: PathBuf,
    root: StateRoot,
    id: Uuid,
    tools: Arc<ToolRegistry>,
    provider: Arc<ReplayProvider>,
    hooks: Arc<dyn HookRunner>,
    policy: PermissionPolicy,
    /// Prompts left to send (`None`: all).
    budget: Option<usize>,
    /// Persisted events of the replayed session by type.
    counts: HashMap<String, usize>,
    outcomes: Vec<Outcome>,
    sent: usize,
}

/// How a process of the replay ended.
enum Ended {
    /// Shut down, or cut where the recording was: go on with the next process.
    Continue,
    /// The prompt budget is spent: stop here.
    Stop,
}

impl<'f> Driver<'f> {
    fn new(
        fixture: &'f Fixture,
        workdir: &Path,
        root: &StateRoot,
        id: Uuid,
        tools: Arc<ToolRegistry>,
        prompts: Option<usize>,
    ) -> Result<Self, FixtureError> {
        let plan = fixture.plan();
        let events: Vec<Event> = fixture.lines().iter().map(|l| l.event.clone()).collect();
        let mut provider =
            ReplayProvider::from_events(events).map_err(|e| FixtureError::Unreplayable {
                path: fixture.journal_path().to_path_buf(),
                reason: e.message,
            })?;
        if let Some(recorded) = &plan.recorded_cwd {
            provider = provider.with_path_map(recorded.as_str(), workdir.display().to_string());
        }
        let manifest = fixture.manifest();
        let allow_all = manifest
            .allow_all_tools
            .unwrap_or(manifest.allow_tool.is_empty());
        let deny = manifest
            .deny_tool
            .clone()
            .unwrap_or_else(|| plan.denied_rules.clone());
        let policy = PermissionPolicy::from_flags(allow_all, &manifest.allow_tool, &deny)
            .map_err(|e| FixtureError::Setup(format!("{}: {e}", fixture.name())))?;
        // A fixture's hooks are part of the recording the test runs: trusted by its author.
        let (hooks, _) = CommandHooks::load(workdir, &HookTrust::everything())
            .map_err(|e| FixtureError::Setup(e.to_string()))?;
        Ok(Driver {
            fixture,
            workdir: workdir.to_path_buf(),
            root: root.clone(),
            id,
            tools,
            provider: Arc::new(provider),
            hooks: Arc::new(hooks),
            policy,
            budget: prompts,
            counts: HashMap::new(),
            outcomes: Vec::new(),
            sent: 0,
        })
    }

    /// The session as the recording's process `segment` ran it: its own recorded system
    /// prompt when it wrote one (else the recording's first).
    fn parts(&self, segment: &Segment) -> SessionParts {
        let plan = self.fixture.plan();
        let manifest = self.fixture.manifest();
        let mut config = SessionConfig::new(&self.workdir, plan.model.clone());
        config.durability = Durability::Off;
        config.max_autopilot_continues = plan.max_autopilot_continues;
        config.permissions = self.policy.clone();
        config.allow_outside_cwd = manifest.allow_outside_cwd;
        config.streaming = true;
        // A window the recording names is the one its compactions and truncations measured
        // against; the replay's own then come at the points the recording's did.
        config.token_limit = plan.token_limit;
        config.system_prompt = segment
            .system_prompt
            .clone()
            .or_else(|| plan.system_prompt.clone());
        SessionParts {
            config,
            provider: Arc::clone(&self.provider) as Arc<dyn ModelProvider>,
            tools: Arc::clone(&self.tools),
            hooks: Some(Arc::clone(&self.hooks)),
            external_tools: None,
            permission_asker: None,
            section_transformer: None,
        }
    }

    fn run(
        mut self,
        mut observer: Option<&mut Observer<'_>>,
    ) -> Result<(Vec<Outcome>, usize), FixtureError> {
        let segments = self.fixture.plan().segments.clone();
        for segment in &segments {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| FixtureError::Session(format!("cannot start a runtime: {e}")))?;
            let (ended, session) = runtime.block_on(self.segment(segment, &mut observer))?;
            // A process cut short dies here, with whatever it was doing. Its handle goes after
            // the runtime: an idle session whose handle is dropped would shut down cleanly.
            drop(runtime);
            drop(session);
            if let Ended::Stop = ended {
                break;
            }
        }
        Ok((self.outcomes, self.sent))
    }

    async fn segment(
        &mut self,
        segment: &Segment,
        observer: &mut Option<&mut Observer<'_>>,
    ) -> Result<(Ended, Option<SessionHandle>), FixtureError> {
        let session_error =
            |e: turnstile_loop::session::LoopError| FixtureError::Session(e.to_string());
        let (handle, mut events) = if segment.resume {
            let (handle, _, events) =
                SessionHandle::resume_subscribed(&self.root, self.id, self.parts(segment))
                    .map_err(session_error)?;
            (handle, events)
        } else {
            SessionHandle::create_subscribed(&self.root, Some(self.id), self.parts(segment))
                .map_err(session_error)?
        };
        let cut = match &segment.end {
            SegmentEnd::Cut(trigger) => Some(trigger),
            SegmentEnd::Shutdown => None,
        };
        let mut out_of_budget = false;
        for send in &segment.sends {
            if self.budget == Some(0) {
                out_of_budget = true;
                break;
            }
            self.sent += 1;
            self.budget = self.budget.map(|b| b - 1);
            if self.send(&handle, send, &mut events, cut, observer).await? {
                let ended = if self.budget == Some(0) {
                    Ended::Stop
                } else {
                    Ended::Continue
                };
                return Ok((ended, Some(handle)));
            }
        }
        if self.budget == Some(0) {
            out_of_budget = true;
        }
        if cut.is_some() && !out_of_budget {
            // The recorded process died after its last prompt (or the journal was copied
            // while the session was open): no shutdown.
            while let Ok(event) = events.try_recv() {
                self.seen(&event, observer);
            }
            return Ok((Ended::Continue, Some(handle)));
        }
        handle.shutdown().await.map_err(session_error)?;
        while let Some(event) = events.recv().await {
            self.seen(&event, observer);
        }
        let ended = if out_of_budget {
            Ended::Stop
        } else {
            Ended::Continue
        };
        Ok((ended, None))
    }

    /// Sends one prompt and follows its events until it is idle; returns true when the
    /// recording's process died during it (the caller then drops the session).
    async fn send(
        &mut self,
        handle: &SessionHandle,
        send: &PlannedSend,
        events: &mut UnboundedReceiver<Arc<Event>>,
        cut_at: Option<&Trigger>,
        observer: &mut Option<&mut Observer<'_>>,
    ) -> Result<bool, FixtureError> {
        let options = SendOptions {
            mode: Some(send.mode),
            ..Default::default()
        };
        self.provider.leave_next_call_unanswered(send.unanswered);
        let (_, done) = handle
            .send(send.prompt.clone(), options)
            .map_err(|e| FixtureError::Session(e.to_string()))?;
        tokio::pin!(done);
        let mut aborted = false;
        // An unanswered prompt's turn, once it started: its id and the counts before it.
        let mut unanswered_turn: Option<(Uuid, HashMap<String, usize>)> = None;
        // The cut of the recording is only looked for once an unanswered turn is gone.
        let cut = if send.unanswered { None } else { cut_at };
        loop {
            tokio::select! {
                biased;
                event = events.recv() => {
                    let Some(event) = event else { break };
                    if send.unanswered
                        && unanswered_turn.is_none()
                        && event.agent_id.is_none()
                        && event.event_type.as_str() == "assistant.turn_start"
                    {
                        unanswered_turn = Some((event.id, self.counts.clone()));
                        handle.abort();
                        aborted = true;
                    }
                    self.seen(&event, observer);
                    if !aborted && send.abort.as_ref().is_some_and(|t| self.reached(t)) {
                        handle.abort();
                        aborted = true;
                    }
                    if cut.is_some_and(|t| self.reached(t)) {
                        return Ok(true);
                    }
                }
                outcome = &mut done => {
                    let outcome = outcome.map_err(|_| {
                        FixtureError::Session("the session stopped during a prompt".to_owned())
                    })?;
                    self.outcomes.push(outcome);
                    break;
                }
            }
        }
        self.provider.leave_next_call_unanswered(false);
        while let Ok(event) = events.try_recv() {
            self.seen(&event, observer);
            if cut.is_some_and(|t| self.reached(t)) {
                return Ok(true);
            }
        }
        if let Some((turn, counts)) = unanswered_turn {
            handle
                .cut(turn.to_string(), CutKind::Truncate)
                .await
                .map_err(|e| FixtureError::Session(format!("cannot truncate the turn: {e}")))?;
            while let Ok(event) = events.try_recv() {
                self.seen(&event, observer);
            }
            // What the marker removed is not in the journal as the runtime shows it.
            self.counts = counts;
        }
        Ok(cut_at.is_some_and(|t| self.reached(t)))
    }

    fn seen(&mut self, event: &Event, observer: &mut Option<&mut Observer<'_>>) {
        if !event.is_ephemeral() {
            *self
                .counts
                .entry(event.event_type.as_str().to_owned())
                .or_default() += 1;
        }
        if let Some(observe) = observer.as_mut() {
            observe(event);
        }
    }

    fn reached(&self, trigger: &Trigger) -> bool {
        self.counts
            .get(&trigger.event_type)
            .is_some_and(|n| *n >= trigger.occurrence)
    }
}
