//! Set-up the loop's session tests share: a state root, a working directory and a scripted
//! model server, the session parts most tests start from, and the journal read back and
//! audited. Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use turnstile_journal::{Event, JournalReader, ReadMode, StateRoot, Uuid};
use turnstile_loop::hooks::{CommandHooks, HookRunner, HookTrust};
use turnstile_loop::{Outcome, SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_tools::ToolRegistry;

/// One test's session state, working directory and model server.
pub struct Fixture {
    _state: tempfile::TempDir,
    pub work: tempfile::TempDir,
    pub root: StateRoot,
    pub server: ScriptedServer,
}

impl Fixture {
    /// Starts the server on `script`; `files` fills the working directory.
    pub async fn start(script: Script, files: impl FnOnce(&Path)) -> Fixture {
        // Loaded first, so that every measure is the vocabulary's count: one made while it
        // loads may be a quarter of the bytes (`Measure::unless_loading`).
        turnstile_loop::prompt::tokens::Encoding::O200k.count("");
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        files(work.path());
        let root = StateRoot::new(state.path().join("session-state"));
        let server = ScriptedServer::start(script).await.unwrap();
        Fixture {
            _state: state,
            work,
            root,
            server,
        }
    }

    /// Every tool allowed, the built-ins without `task_complete`, nothing a client provides;
    /// `configure` adjusts the session's config.
    pub fn base_parts(&self, configure: impl FnOnce(&mut SessionConfig)) -> SessionParts {
        let mut oc = OpenAiConfig::new(self.server.url(), "test-model");
        oc.retry.base_delay = Duration::from_millis(5);
        let mut config = SessionConfig::new(self.work.path(), "test-model");
        config.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
        configure(&mut config);
        SessionParts {
            config,
            provider: Arc::new(OpenAiProvider::new(oc).unwrap()),
            tools: Arc::new(ToolRegistry::builtin(false)),
            hooks: None,
            external_tools: None,
            permission_asker: None,
            section_transformer: None,
        }
    }

    /// The base parts with `task_complete` offered and the hook files of the working
    /// directory (`.github/hooks`, trusted) run.
    pub fn hooked_parts(&self, configure: impl FnOnce(&mut SessionConfig)) -> SessionParts {
        let mut parts = self.base_parts(configure);
        let (hooks, _) = CommandHooks::load(self.work.path(), &HookTrust::everything()).unwrap();
        parts.tools = Arc::new(ToolRegistry::builtin(true));
        parts.hooks = Some(Arc::new(hooks) as Arc<dyn HookRunner>);
        parts
    }

    /// Creates a session of `parts`, sends it `prompt`, waits for the idle and shuts the
    /// session down: its id and the message's outcome.
    pub async fn one_message(&self, parts: SessionParts, prompt: &str) -> (Uuid, Outcome) {
        let session = SessionHandle::create(&self.root, None, parts).unwrap();
        let outcome = session
            .send_and_wait(prompt, SendOptions::default())
            .await
            .unwrap();
        let id = session.id();
        session.shutdown().await.unwrap();
        (id, outcome)
    }

    /// The session's journal, read strictly.
    pub fn journal(&self, id: Uuid) -> Vec<Event> {
        JournalReader::open(self.root.session(id).events, ReadMode::Strict)
            .unwrap()
            .map(|r| r.unwrap_or_else(|e| panic!("{e}")).event)
            .collect()
    }

    /// The session's audit, asserted free of violations.
    pub fn audit_clean(&self, id: Uuid) -> turnstile_replay::AuditReport {
        let report = turnstile_replay::audit_file(&self.root.session(id).events).unwrap();
        assert!(
            report.violations.is_empty(),
            "violations: {:#?}",
            report.violations
        );
        report
    }
}

/// The types of `events`, in order.
pub fn types(events: &[Arc<Event>]) -> Vec<&str> {
    events.iter().map(|e| e.event_type.as_str()).collect()
}

/// An event's `data` as JSON.
pub fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

/// The live events received so far.
pub fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev);
    }
    out
}
