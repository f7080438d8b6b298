//! The set-up of the tests on the JetStream store: a directory per test for its
//! `nats-server` and the hosts' state directories, the working directory holding
//! `alpha.txt`, scripted model servers, and the command line on either store.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_store_nats::local_server::LocalNats;

use super::rpc::StdioServer;

pub struct Env {
    /// The writers' lease TTL in seconds.
    pub lease_ttl: &'static str,
    pub rt: tokio::runtime::Runtime,
    pub dir: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("alpha.txt"), "alpha\n").unwrap();
        Env {
            lease_ttl: "2",
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap(),
            dir: tempfile::tempdir().unwrap(),
            work,
        }
    }

    pub fn nats(&self) -> LocalNats {
        self.nats_named("nats")
    }

    /// Another server, its data in directory `name`.
    pub fn nats_named(&self, name: &str) -> LocalNats {
        LocalNats::start(&self.dir.path().join(name)).unwrap()
    }

    pub fn model(&self, script: Script) -> ScriptedServer {
        self.rt.block_on(ScriptedServer::start(script)).unwrap()
    }

    /// The state directory of "host" `host`.
    pub fn host(&self, host: &str) -> PathBuf {
        self.dir.path().join(host)
    }

    /// `turnstile` on `store`, with host `host`'s state directory.
    pub fn cmd(&self, store: &str, host: &str, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("turnstile").unwrap();
        cmd.arg("--state-dir")
            .arg(self.host(host))
            .arg("--store")
            .arg(store)
            .arg("--store-lease-ttl")
            .arg(self.lease_ttl)
            .args(args)
            .env_remove("TURNSTILE_STORE")
            .env_remove("TURNSTILE_API_KEY")
            .env_remove("OPENAI_API_KEY");
        cmd
    }

    pub fn loop_cmd(
        &self,
        store: &str,
        host: &str,
        model: &ScriptedServer,
        args: &[&str],
    ) -> Command {
        let mut cmd = self.cmd(store, host, args);
        cmd.arg("--base-url")
            .arg(model.url())
            .arg("--cwd")
            .arg(self.work.path())
            .arg("--model")
            .arg("test-model")
            .arg("--allow-all-tools");
        cmd
    }

    pub fn export(&self, store: &str, id: &str) -> Vec<u8> {
        let out = self
            .cmd(store, "exporter", &["export", id])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

impl Env {
    /// `turnstile --headless --stdio` on `store` as host `host`, its default model `model`.
    pub fn sdk_server(&self, store: &str, host: &str, model: &ScriptedServer) -> StdioServer {
        let mut cmd = self.cmd(store, host, &["--headless", "--stdio"]);
        cmd.arg("--default-base-url")
            .arg(model.url())
            .arg("--allow-all-tools")
            .env("COPILOT_HOME", self.host(host))
            .env_remove("COPILOT_API_URL")
            .env_remove("TURNSTILE_BASE_URL")
            .stderr(Stdio::null());
        StdioServer::spawn(cmd)
    }
}

/// A model that views alpha.txt, then says `answers` in turn.
pub fn view_alpha_then(answers: &[&str]) -> Script {
    let mut script = Script::new().respond(ScriptedResponse::tool_call(
        "view",
        json!({"path": "alpha.txt"}),
    ));
    for answer in answers {
        script = script.text(*answer);
    }
    script
}

pub fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn lines(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// `turnstile` on the file store (no `--store`), host `host`'s state directory, with
/// `model`, as [`Env::loop_cmd`] runs it on the JetStream store.
pub fn file_loop_cmd(env: &Env, host: &str, model: &ScriptedServer, args: &[&str]) -> Command {
    let mut cmd = file_cmd(env, host, args);
    cmd.arg("--base-url")
        .arg(model.url())
        .arg("--cwd")
        .arg(env.work.path())
        .arg("--model")
        .arg("test-model")
        .arg("--allow-all-tools");
    cmd
}

/// `turnstile` on the file store, host `host`'s state directory.
pub fn file_cmd(env: &Env, host: &str, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.arg("--state-dir")
        .arg(env.host(host))
        .args(args)
        .env_remove("TURNSTILE_STORE")
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY");
    cmd
}

/// Audits a journal held as bytes and asserts it has no violation.
pub fn audit_clean(bytes: &[u8]) -> turnstile_replay::AuditReport {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let report = turnstile_replay::audit_file(&path).unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    report
}

/// A `turnstile` child that is killed and reaped when dropped before it was waited for: a
/// test that fails between the spawn and the wait (an assertion on another command, a
/// writer that stopped before the `session.shutdown` a `watch` waits for) leaves no process
/// behind it.
pub struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    /// Starts `cmd`.
    pub fn spawn(cmd: &mut Command) -> Self {
        KillOnDrop(Some(cmd.spawn().unwrap()))
    }

    /// Waits for the child to exit and collects its piped output.
    pub fn wait_with_output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().unwrap()
    }
}

impl DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // An exited child is only reaped; a waited one answers both at once.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `sig` to a child process.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) takes plain integers; the pid is our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// `entry` with its folded state asking about gamma.txt where it asked about alpha.txt: a
/// state the journal (which still says alpha.txt) cannot give, so a request that says
/// gamma.txt proves the state came from the store.
pub fn with_gamma_prompt(
    entry: &turnstile_store_nats::StoreCheckpoint,
) -> turnstile_store_nats::StoreCheckpoint {
    let text = serde_json::to_string(&entry.folded).unwrap();
    assert!(text.contains("what is in alpha.txt?"), "{text}");
    let mut changed = entry.clone();
    changed.folded = Some(
        serde_json::from_str(&text.replace("what is in alpha.txt?", "what is in gamma.txt?"))
            .unwrap(),
    );
    changed
}

/// A writer paused mid-tool past its lease, its session taken over by another host: the
/// zombie of the takeover tests.
pub struct Takeover {
    /// Host `a`'s `run --json`, stopped (SIGSTOP) in its `bash` nap; SIGCONT wakes it.
    pub zombie: KillOnDrop,
    pub id: String,
    /// Answers the zombie's turn, then the new holder's.
    pub model: ScriptedServer,
    /// When the zombie was stopped, in the journal's milliseconds.
    pub paused_at: i64,
}

/// Runs a session on host `a` of `store` whose model asks for a one-second `bash` nap,
/// stops the writer once the tool started, and has host `b` resume the session ("take
/// over") past the lease.
pub fn zombie_takeover(env: &Env, store: &str) -> Takeover {
    let model = env.model(
        Script::new()
            .tool_call("bash", json!({"command": "sleep 1", "description": "nap"}))
            .text("zombie answer")
            .text("new holder answer"),
    );
    let mut zombie = KillOnDrop::spawn(
        env.loop_cmd(store, "a", &model, &["run", "--json", "nap"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let seen = super::wait_for_event(&mut zombie, "tool.execution_start");
    let id = seen[0]["data"]["sessionId"].as_str().unwrap().to_owned();
    let paused_at = turnstile_journal::Timestamp::now().millis();
    signal(&zombie, libc::SIGSTOP);
    ok(&env
        .loop_cmd(store, "b", &model, &["resume", &id, "take over"])
        .output()
        .unwrap());
    Takeover {
        zombie,
        id,
        model,
        paused_at,
    }
}
