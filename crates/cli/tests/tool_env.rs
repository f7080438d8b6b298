//! Secrets stay out of tools: `turnstile run` with provider keys, tokens and secret-named
//! variables in its environment starts every process of a tool without them (a sync `bash`
//! call, an async shell, a detached shell, a hook command, an MCP stdio server), passes the
//! variables `TURNSTILE_TOOL_ENV_PASSTHROUGH` names, gives an MCP server what its
//! configuration's `env` names, and writes none of the secrets anywhere in the session.

use crate::common;

use std::path::Path;

use common::{Env, call, journal_values, tool_result};
use serde_json::json;
use turnstile_scripted_model::Script;

/// Every secret's value holds this, so one search finds any of them.
const MARK: &str = "s3cr3t";

/// The engine's environment: its own credentials, secrets by name, a passed one, a plain one.
fn engine_env() -> Vec<(&'static str, String)> {
    let secrets = [
        "TURNSTILE_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "COPILOT_GITHUB_TOKEN",
        "COPILOT_CONNECTION_TOKEN",
        "COPILOT_SDK_AUTH_TOKEN",
        "MY_SERVICE_PASSWORD",
        "DEPLOY_CREDENTIALS",
        "AZURE_DEVOPS_EXT_PAT",
        "aws_secret_access_key",
        "STRIPE_SECRET",
    ];
    let mut env: Vec<(&str, String)> = secrets
        .iter()
        .map(|name| (*name, format!("{MARK}-{name}")))
        .collect();
    // Sent to the model server as a header, so it must be a valid one.
    env.push((
        "COPILOT_PROVIDER_HEADERS",
        format!("X-Probe: {MARK}-header"),
    ));
    env.push(("PASSED_TOKEN", "passed-visible".into()));
    env.push(("TURNSTILE_TOOL_ENV_PASSTHROUGH", "PASSED_TOKEN".into()));
    env.push(("PLAIN_SETTING", "plain-visible".into()));
    env
}

/// Waits (boundedly; no assertion depends on the time) for `path` and reads it.
fn read_when_there(path: &Path) -> String {
    for _ in 0..1500 {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} was never written", path.display());
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            found.push((path, bytes));
        }
    }
    found
}

fn assert_filtered(what: &str, env: &str) {
    assert!(
        env.lines().any(|l| l == "PLAIN_SETTING=plain-visible"),
        "{what} ran with the engine's variables:\n{env}"
    );
    assert!(
        env.lines().any(|l| l == "PASSED_TOKEN=passed-visible"),
        "{what} got the passed-through variable:\n{env}"
    );
    assert!(!env.contains(MARK), "{what} saw a secret:\n{env}");
}

#[test]
fn no_tool_process_sees_the_engine_s_secrets() {
    let env = Env::new();
    let work = env.work.path();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.join(".github/hooks")).unwrap();
    std::fs::write(
        work.join(".github/hooks/env.json"),
        json!({"version": 1, "hooks": {"preToolUse": [
            {"type": "command", "bash": "env > hook.tmp && mv hook.tmp hook.env"}
        ]}})
        .to_string(),
    )
    .unwrap();
    let mcp_env = work.join("mcp.env");
    let mcp = json!({"mcpServers": {"envprobe": {
        "type": "stdio",
        "command": "bash",
        "args": ["-c", format!("env > {0}.tmp && mv {0}.tmp {0}; exit 3", mcp_env.display())],
        "env": {"GH_TOKEN": "${GH_TOKEN}", "GIVEN_IN_CONFIG": "given"},
        "tools": ["*"]
    }}});
    let mcp_config = work.join("mcp.json");
    std::fs::write(&mcp_config, mcp.to_string()).unwrap();

    let server = env.server(
        Script::new()
            .respond(call(
                "c1",
                "bash",
                json!({"command": "env", "description": "sync"}),
            ))
            .respond(call(
                "c2",
                "bash",
                json!({"command": "env > async.tmp && mv async.tmp async.env", "description": "async", "mode": "async", "shellId": "a1"}),
            ))
            .respond(call(
                "c3",
                "bash",
                json!({"command": "env > detached.tmp && mv detached.tmp detached.env", "description": "detached", "mode": "async", "detach": true, "shellId": "d1"}),
            ))
            .respond(call(
                "c4",
                "bash",
                json!({"command": "while [ ! -e async.env ] || [ ! -e detached.env ]; do sleep 0.05; done", "description": "wait"}),
            ))
            .text("Done."),
    );
    let mut cmd = env.cmd(
        &server,
        &[
            "run",
            "--allow-all-tools",
            "--trust-hooks",
            "--mcp-config",
            mcp_config.to_str().unwrap(),
            "show me the environment",
        ],
    );
    cmd.env("COPILOT_HOME", home.path());
    for (name, value) in engine_env() {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let last = server.requests().last().unwrap().clone();
    let sync = tool_result(&last, "c1");
    assert_filtered("a sync bash call", &sync);
    assert!(!sync.contains("TURNSTILE_SUPERVISOR"), "{sync}");
    for (what, file) in [
        ("an async shell", "async.env"),
        ("a detached shell", "detached.env"),
        ("a hook command", "hook.env"),
    ] {
        assert_filtered(what, &read_when_there(&work.join(file)));
    }
    // The server's configuration gives GH_TOKEN by name: that one, and only that one, reaches it.
    let server_env = read_when_there(&mcp_env);
    assert!(server_env.lines().any(|l| l == "GIVEN_IN_CONFIG=given"));
    assert_eq!(
        server_env
            .lines()
            .filter(|l| l.contains(MARK))
            .collect::<Vec<_>>(),
        [format!("GH_TOKEN={MARK}-GH_TOKEN")],
        "{server_env}"
    );
    assert_filtered(
        "an MCP stdio server",
        &server_env.replace(&format!("GH_TOKEN={MARK}-GH_TOKEN\n"), ""),
    );

    // Nothing of the session holds a secret: journal, side files, shell logs.
    let (_, events) = env.only_session();
    let journal = journal_values(&events);
    assert!(
        journal.iter().any(|e| e["type"] == "hook.end"),
        "the hook ran"
    );
    for (path, bytes) in files_under(env.state.path()) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(MARK), "{} holds a secret", path.display());
    }
}
