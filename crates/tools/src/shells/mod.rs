//! The shells of a session: every `bash` call runs in one, named by a shellId (the model's
//! own, or the next number from 0), and stays listed after it ends so `read_bash`,
//! `stop_bash` and `list_bash` can find it.
//!
//! - A sync call that outlives its `initial_wait`, and every `mode: "async"` call, leaves its
//!   shell running; the session going idle does not stop it. [`Shells::stop_all`] (the session
//!   closing) stops the attached ones; detached ones are left to run.
//! - Output is kept as sync bash keeps it (first and last 32 KiB), so memory stays bounded
//!   whatever a background command prints; a detached shell writes to a log file instead,
//!   since it must outlive the engine that would read its pipe.
//! - Shells a dead engine left behind are known from `processes.json` on resume: they are
//!   listed as lost, and reading one says so.
//!
//! The texts the model sees follow the Copilot runtime (docs/tools.md).

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::bash::GroupGuard;
use super::bash::output::{CappedOutput, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, PartialStream};

mod ends;

pub use ends::EndedShell;

/// The shortest wait a sync call gets, in seconds (the runtime raises smaller `initial_wait`s).
pub const MIN_INITIAL_WAIT_SECS: f64 = 30.0;
/// The longest `initial_wait` and `read_bash` delay, in seconds.
pub const MAX_WAIT_SECS: f64 = 600.0;

/// How a shell was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellMode {
    /// A sync call (it may have gone on past its wait).
    Sync,
    /// `mode: "async"`.
    Async,
}

impl ShellMode {
    fn as_str(self) -> &'static str {
        match self {
            ShellMode::Sync => "sync",
            ShellMode::Async => "async",
        }
    }
}

/// Where a shell's command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellStatus {
    /// Still running.
    Running,
    /// Ended with this exit code (128 + signal when a signal ended it).
    Exited(i32),
    /// Stopped by `stop_bash` or the session closing.
    Stopped,
}

/// Called when a shell starts or ends (the session announces `session.background_tasks_changed`);
/// it must not block, and runs on whatever thread saw the change.
pub type ChangeHook = Arc<dyn Fn() + Send + Sync>;

/// What a new shell is.
#[derive(Debug, Clone)]
pub struct ShellSpec {
    /// The command line.
    pub command: String,
    /// The call's description.
    pub description: String,
    /// Sync or async.
    pub mode: ShellMode,
    /// Whether it outlives the session (`detach: true`); its output goes to `log`.
    pub log: Option<PathBuf>,
    /// The directory it runs in (the session's working directory).
    pub cwd: PathBuf,
}

struct ShellState {
    output: CappedOutput,
    partial: PartialStream,
    status: ShellStatus,
    /// A read (or the sync call) has reported the end: later reads show no output again.
    consumed: bool,
    /// Calls waiting for the command to end now (its sync call, `read_bash` with a delay).
    waiters: u32,
    /// It ended while no call waited for it, and the model has not been told
    /// ([`Shells::take_untold_ends`]).
    untold_end: bool,
    group: GroupGuard,
}

/// One shell: a running or ended command and what it printed.
pub struct Shell {
    id: String,
    spec: ShellSpec,
    pid: i32,
    started: Instant,
    commands: u32,
    state: Mutex<ShellState>,
    done: watch::Sender<bool>,
    on_change: Option<ChangeHook>,
}

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("id", &self.id)
            .field("command", &self.spec.command)
            .field("status", &self.status())
            .finish()
    }
}

impl Shell {
    /// The shell's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether it runs detached from the session.
    pub fn detached(&self) -> bool {
        self.spec.log.is_some()
    }

    /// Where its command is.
    pub fn status(&self) -> ShellStatus {
        self.lock().status
    }

    fn lock(&self) -> MutexGuard<'_, ShellState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds output the command wrote (and streams it to the attached partial channel).
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut state = self.lock();
        state.output.push(bytes);
        state.partial.push(bytes);
    }

    /// Streams output to `sender` from now on (`None`: stop streaming).
    pub(crate) fn stream_to(&self, sender: Option<tokio::sync::mpsc::UnboundedSender<String>>) {
        let mut state = self.lock();
        state.partial.finish();
        state.partial = PartialStream::new(sender);
    }

    /// The leader was reaped: its group id may be reused, so the group is never signalled
    /// again.
    pub(crate) fn reaped(&self) {
        self.lock().group.disarm();
    }

    /// Records the end of the command, once its output is read.
    pub(crate) fn finish(&self, code: i32) {
        {
            let mut state = self.lock();
            state.group.disarm();
            state.partial.finish();
            if state.status == ShellStatus::Running {
                state.status = ShellStatus::Exited(code);
                // As the runtime: an end no call waited for is announced at the next turn
                // (a detached command's is not: it no longer belongs to the session).
                state.untold_end = state.waiters == 0 && !self.detached();
            }
        }
        self.done.send_replace(true);
        self.changed();
    }

    /// Tells the session's hook that this shell started or ended.
    fn changed(&self) {
        if let Some(hook) = &self.on_change {
            hook();
        }
    }

    /// Kills the command's process group; true if it was running.
    pub fn stop(&self) -> bool {
        let mut state = self.lock();
        if state.status != ShellStatus::Running {
            return false;
        }
        state.group.kill();
        state.status = ShellStatus::Stopped;
        drop(state);
        self.changed();
        true
    }

    /// Waits until the command ends or `wait` passes; true if it ended. An end seen by a
    /// waiting call is the call's to tell, not a notification's.
    pub async fn wait(&self, wait: Duration) -> bool {
        let mut done = self.done.subscribe();
        self.lock().waiters += 1;
        let _waiting = Waiting(self);
        tokio::time::timeout(wait, done.wait_for(|d| *d))
            .await
            .is_ok()
    }

    /// What the command printed so far, as the model reads it.
    fn output(&self, state: &ShellState) -> String {
        match &self.spec.log {
            Some(log) => read_log(log),
            None => state.output.render(),
        }
    }

    /// The result text of a sync call or a read: the output, then the status line.
    pub fn report(&self, waited_secs: f64) -> String {
        self.report_parts(waited_secs).0
    }

    /// The result of a sync call or a read: [`Shell::report`]'s text and, once an attached
    /// command has ended, the runtime's live-only `shell_exit` block (exit code, whether the
    /// output was cut, where it ran, and what it printed since the last read, when anything).
    pub fn result(&self, waited_secs: f64) -> super::ToolOutput {
        let (content, exit) = self.report_parts(waited_secs);
        super::ToolOutput {
            content,
            live_contents: exit.map(|block| vec![block]),
            ..Default::default()
        }
    }

    fn report_parts(&self, waited_secs: f64) -> (String, Option<serde_json::Value>) {
        let mut state = self.lock();
        let id = &self.id;
        let output = if state.consumed {
            String::new()
        } else {
            self.output(&state)
        };
        let done = match state.status {
            ShellStatus::Running => None,
            ShellStatus::Exited(code) => Some(code),
            ShellStatus::Stopped => Some(137),
        };
        if done.is_some() {
            state.consumed = true;
        }
        if self.detached() {
            let text = match done {
                Some(code) => format!(
                    "Output:\n{}<detached command with shellId: {id} completed with exit code {code}>",
                    with_newline(output)
                ),
                None => format!(
                    "Output:\n{}<command with shellId: {id} is still running in detached background after {}s.>",
                    with_newline(output),
                    self.started.elapsed().as_secs()
                ),
            };
            return (text, None);
        }
        let exit = done.map(|code| {
            let mut block = serde_json::json!({
                "type": "shell_exit",
                "shellId": id,
                "exitCode": code,
                "outputTruncated": state.output.truncated(),
                "cwd": self.spec.cwd.display().to_string(),
            });
            if !output.is_empty() {
                block["outputPreview"] = output.clone().into();
            }
            block
        });
        let text = match done {
            Some(code) => format!(
                "{}<shellId: {id} completed with exit code {code}>",
                with_newline(output)
            ),
            None => format!(
                "{}<command with shellId: {id} is still running after {waited_secs} seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>",
                with_newline(output)
            ),
        };
        (text, exit)
    }

    fn list_entry(&self) -> String {
        let state = self.lock();
        let status = match state.status {
            ShellStatus::Running => "running".to_owned(),
            ShellStatus::Exited(code) => format!("completed (exit code: {code})"),
            ShellStatus::Stopped => "stopped".to_owned(),
        };
        let unread = !state.consumed && !self.output(&state).is_empty();
        format!(
            "  shellId: {}, pid: {}, mode: {}, status: {status}, elapsed: {}s, commands: {}, unread output: {}\n    current command: {}",
            self.id,
            self.pid,
            self.spec.mode.as_str(),
            self.started.elapsed().as_secs(),
            self.commands,
            if unread { "yes" } else { "no" },
            self.spec.command
        )
    }
}

/// The output text followed by a line break (an empty output is one empty line).
fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The head and tail of a detached shell's log, read in bounded memory.
fn read_log(path: &std::path::Path) -> String {
    let mut capped = CappedOutput::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES);
    if let Ok(mut file) = std::fs::File::open(path) {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = file.read(&mut buf) {
            if n == 0 {
                break;
            }
            capped.push(&buf[..n]);
        }
    }
    capped.render()
}

/// A call waiting in [`Shell::wait`]; counted until it stops waiting, however it stops (an
/// end seen while a call waits is that call's to tell, see `ends.rs`).
struct Waiting<'a>(&'a Shell);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.waiters = state.waiters.saturating_sub(1);
    }
}

/// A shell a dead engine left behind (its processes were stopped on resume).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostShell {
    /// Its id.
    pub id: String,
    /// Its command line, when recorded.
    pub command: String,
    /// Nothing has told the model yet: its tool call had returned before the crash, so no
    /// interrupted result says it is gone.
    pub untold: bool,
}

#[derive(Default)]
struct Table {
    shells: Vec<Arc<Shell>>,
    lost: Vec<LostShell>,
}

/// The shells of one session.
pub struct Shells {
    table: Mutex<Table>,
    next_number: AtomicU64,
    min_wait: Duration,
    logs: Option<PathBuf>,
    on_change: Option<ChangeHook>,
}

impl std::fmt::Debug for Shells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shells")
            .field("shells", &self.lock().shells)
            .finish()
    }
}

impl Default for Shells {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Shells {
    /// An empty set; detached shells write their logs under `logs` (the temporary directory
    /// when `None`).
    pub fn new(logs: Option<PathBuf>) -> Self {
        Shells {
            table: Mutex::new(Table::default()),
            next_number: AtomicU64::new(0),
            min_wait: Duration::from_secs_f64(MIN_INITIAL_WAIT_SECS),
            logs,
            on_change: None,
        }
    }

    /// The same, calling `hook` whenever one of its shells starts or ends.
    pub fn with_change_hook(mut self, hook: ChangeHook) -> Self {
        self.on_change = Some(hook);
        self
    }

    /// The same with another shortest sync wait (tests need one shorter than the runtime's).
    pub fn with_min_wait(mut self, min_wait: Duration) -> Self {
        self.min_wait = min_wait;
        self
    }

    /// Remembers shells a dead engine left (listed as lost; reading one says so).
    pub fn add_lost(&self, lost: impl IntoIterator<Item = LostShell>) {
        self.lock().lost.extend(lost);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shortest wait of a sync call.
    pub fn min_wait(&self) -> Duration {
        self.min_wait
    }

    /// The id of a new shell: `wanted` if given, else the next free number.
    pub fn new_id(&self, wanted: Option<&str>) -> String {
        if let Some(id) = wanted {
            return id.to_owned();
        }
        loop {
            let n = self.next_number.fetch_add(1, Ordering::Relaxed).to_string();
            if self.get(&n).is_none() {
                return n;
            }
        }
    }

    /// Where a detached shell `id` writes its output.
    pub fn log_path(&self, id: &str) -> PathBuf {
        let dir = self.logs.clone().unwrap_or_else(std::env::temp_dir);
        let safe: String = id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        dir.join(format!("shell-{safe}-{}.log", std::process::id()))
    }

    /// Adds a started shell. A shell with the same id is replaced (the runtime reuses the id
    /// and counts the commands run under it); a running one is stopped first.
    pub(crate) fn insert(
        &self,
        id: String,
        spec: ShellSpec,
        pid: i32,
        group: GroupGuard,
    ) -> Arc<Shell> {
        let mut table = self.lock();
        let mut commands = 1;
        if let Some(index) = table.shells.iter().position(|s| s.id == id) {
            let old = table.shells.remove(index);
            old.stop();
            commands += old.commands;
        }
        table.lost.retain(|l| l.id != id);
        let (done, _) = watch::channel(false);
        let shell = Arc::new(Shell {
            id,
            spec,
            pid,
            started: Instant::now(),
            commands,
            state: Mutex::new(ShellState {
                output: CappedOutput::new(OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES),
                partial: PartialStream::new(None),
                status: ShellStatus::Running,
                consumed: false,
                waiters: 0,
                untold_end: false,
                group,
            }),
            done,
            on_change: self.on_change.clone(),
        });
        table.shells.push(Arc::clone(&shell));
        drop(table);
        shell.changed();
        shell
    }

    /// The shell called `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Shell>> {
        self.lock().shells.iter().find(|s| s.id == id).cloned()
    }

    /// The lost shells the model was not told of yet, marked told.
    pub fn take_untold_lost(&self) -> Vec<LostShell> {
        let mut table = self.lock();
        let mut untold = Vec::new();
        for shell in table.lost.iter_mut().filter(|l| l.untold) {
            shell.untold = false;
            untold.push(shell.clone());
        }
        untold
    }

    /// The lost shell called `id`.
    pub fn lost(&self, id: &str) -> Option<LostShell> {
        self.lock().lost.iter().find(|l| l.id == id).cloned()
    }

    /// Stops shell `id` (if running) and forgets it; the runtime answers the same either way.
    pub fn stop(&self, id: &str) -> Option<Arc<Shell>> {
        let mut table = self.lock();
        table.lost.retain(|l| l.id != id);
        let index = table.shells.iter().position(|s| s.id == id)?;
        let shell = table.shells.remove(index);
        shell.stop();
        Some(shell)
    }

    /// Stops every attached shell still running (the session closes); returns them.
    pub fn stop_all(&self) -> Vec<Arc<Shell>> {
        let table = self.lock();
        table
            .shells
            .iter()
            .filter(|s| !s.detached() && s.stop())
            .cloned()
            .collect()
    }

    /// The `list_bash` text.
    pub fn list(&self) -> String {
        let table = self.lock();
        if table.shells.is_empty() && table.lost.is_empty() {
            return "<no active shell sessions>".to_owned();
        }
        let mut out = String::from("Active shell sessions:");
        for shell in &table.shells {
            out.push('\n');
            out.push_str(&shell.list_entry());
        }
        for lost in &table.lost {
            out.push_str(&format!(
                "\n  shellId: {}, status: lost (the engine running it stopped; its processes are gone)\n    current command: {}",
                lost.id, lost.command
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
