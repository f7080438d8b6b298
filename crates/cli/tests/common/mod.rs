//! The set-up the `run`/`resume` tests share: a state directory, a working directory holding
//! `alpha.txt`, a runtime for scripted model servers on 127.0.0.1, and the command line.
#![allow(dead_code)]

pub mod repo;
pub mod rpc;
pub mod store_env;
pub mod terminal;
pub mod watched;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;
use turnstile_loop::{SessionConfig, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_tools::ToolRegistry;

/// One test's directories and server runtime.
pub struct Env {
    pub rt: tokio::runtime::Runtime,
    pub state: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Env {
    /// `turnstile --headless --stdio --yolo` on this test's home and working directory, as an
    /// SDK client starts it, with no model key from the caller's environment.
    pub fn stdio_command(&self) -> Command {
        let mut cmd = Command::cargo_bin("turnstile").unwrap();
        cmd.args(["--headless", "--stdio", "--yolo"])
            .env("COPILOT_HOME", self.state.path())
            .env_remove("TURNSTILE_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .current_dir(self.work.path());
        cmd
    }

    /// Fresh directories; the working directory holds `alpha.txt`.
    pub fn new() -> Self {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("alpha.txt"), "alpha\n").unwrap();
        Env {
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap(),
            state: tempfile::tempdir().unwrap(),
            work,
        }
    }

    /// A scripted model server on `script`.
    pub fn server(&self, script: Script) -> ScriptedServer {
        self.rt.block_on(ScriptedServer::start(script)).unwrap()
    }

    /// `turnstile ARGS` on these directories and `server`.
    pub fn cmd(&self, server: &ScriptedServer, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("turnstile").unwrap();
        cmd.arg("--state-dir").arg(self.state.path()).args(args);
        cmd.arg("--base-url")
            .arg(server.url())
            .arg("--cwd")
            .arg(self.work.path())
            .arg("--model")
            .arg("test-model");
        cmd.env_remove("TURNSTILE_API_KEY")
            .env_remove("OPENAI_API_KEY");
        cmd
    }

    /// `turnstile ARGS` run to its end, asserted successful (its stderr shown otherwise).
    pub fn run_ok(&self, server: &ScriptedServer, args: &[&str]) -> std::process::Output {
        let out = self.cmd(server, args).output().unwrap();
        assert!(
            out.status.success(),
            "turnstile {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The one session of the state directory: its id and journal.
    pub fn only_session(&self) -> (String, PathBuf) {
        // The state root holds session directories (and the session index file).
        let entries: Vec<_> = std::fs::read_dir(self.state.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        let id = entries[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        (id, entries[0].join("events.jsonl"))
    }
}

/// The audit of a journal, asserted free of violations.
pub fn audit_clean(path: &Path) -> turnstile_replay::AuditReport {
    let report = turnstile_replay::audit_file(path).unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    report
}

/// A journal's events as JSON, in file order.
pub fn journal_values(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A model answer calling tool `name` with `args` under the call id `id`.
pub fn call(id: &str, name: &str, args: Value) -> ScriptedResponse {
    ScriptedResponse::default().and_tool_call_with_id(id, name, args)
}

/// The text the model read as the result of call `id` in `request`.
pub fn tool_result(request: &Value, id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {request}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Session parts on `server` with a short system prompt, only the `view` tool and a window of
/// `window` tokens, so a small window holds real history.
pub fn view_only_parts(
    server: &ScriptedServer,
    work: &Path,
    prompt: &str,
    window: u64,
) -> SessionParts {
    let mut oc = OpenAiConfig::new(server.url(), "test-model");
    oc.retry.base_delay = std::time::Duration::from_millis(5);
    let mut config = SessionConfig::new(work, "test-model");
    config.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    config.system_prompt = Some(prompt.into());
    config.token_limit = Some(window);
    let mut tools = ToolRegistry::builtin(false);
    let names: Vec<String> = tools.names().into_iter().map(str::to_owned).collect();
    for name in names.iter().filter(|n| *n != "view") {
        tools.unregister(name);
    }
    SessionParts {
        config,
        provider: std::sync::Arc::new(OpenAiProvider::new(oc).unwrap()),
        tools: std::sync::Arc::new(tools),
        hooks: None,
        external_tools: None,
        permission_asker: None,
        section_transformer: None,
    }
}

/// Reads `--json` lines from a child until one has type `ty`; the rest drains in the
/// background, so the child never blocks on a full pipe.
pub fn wait_for_event(child: &mut Child, ty: &str) -> Vec<Value> {
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let found = v["type"] == ty;
        seen.push(v);
        if found {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    seen
}
