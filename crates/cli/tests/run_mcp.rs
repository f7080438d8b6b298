//! `turnstile run` with MCP servers, as a user runs it: `--mcp-config FILE` naming the rmcp
//! test server over streamable HTTP on 127.0.0.1 and the reference `server-everything` over
//! stdio, patterns by server and tool, configuration errors naming file and field, and
//! `turnstile resume --mcp-config FILE` offering the servers' tools again.

use crate::server;

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

struct Ran {
    out: std::process::Output,
    events: Vec<Value>,
}

fn run(rt: &tokio::runtime::Runtime, script: Script, mcp: &Value, flags: &[&str]) -> Ran {
    run_with_home(rt, script, mcp, flags, &[])
}

/// As [`run`], with files written into the Copilot home first.
fn run_with_home(
    rt: &tokio::runtime::Runtime,
    script: Script,
    mcp: &Value,
    flags: &[&str],
    home_files: &[(&str, String)],
) -> Ran {
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for (name, text) in home_files {
        std::fs::write(home.path().join(name), text).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("mcp.json");
    std::fs::write(&config, mcp.to_string()).unwrap();
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(state.path())
        .args(["run", "go"])
        .arg("--mcp-config")
        .arg(&config)
        .args(flags)
        .arg("--base-url")
        .arg(server.url())
        .arg("--cwd")
        .arg(work.path())
        .args(["--model", "test-model"])
        .env("COPILOT_HOME", home.path())
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let events = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .map(|dir| {
            std::fs::read_to_string(dir.join("events.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default();
    Ran { out, events }
}

fn completes(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.execution_complete")
        .map(|e| &e["data"])
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_http_server_from_mcp_config_with_patterns_by_server_and_tool() {
    let rt = runtime();
    let url = rt.block_on(server::serve_http());
    let mcp = json!({"mcpServers": {"demo": {"type": "http", "url": url}}});
    let script = Script::new()
        .tool_call("demo-echo", json!({"text": "hi"}))
        .tool_call("demo-pid", json!({}))
        .text("done");
    let ran = run(
        &rt,
        script,
        &mcp,
        &["--allow-tool", "demo", "--deny-tool", "demo(pid)"],
    );
    assert!(
        ran.out.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.out.stderr)
    );
    let done = completes(&ran.events);
    assert_eq!(done[0]["success"], true);
    assert_eq!(done[0]["result"]["content"], "echo: hisecond block");
    assert_eq!(done[1]["success"], false);
    assert!(
        done[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("demo(pid)")
    );
}

#[test]
fn without_a_rule_the_denial_names_the_pattern_that_allows_it() {
    let rt = runtime();
    let url = rt.block_on(server::serve_http());
    let mcp = json!({"mcpServers": {"demo": {"url": url}}});
    let script = Script::new()
        .tool_call("demo-echo", json!({"text": "hi"}))
        .text("done");
    let ran = run(&rt, script, &mcp, &[]);
    let stderr = String::from_utf8_lossy(&ran.out.stderr);
    assert!(stderr.contains("--allow-tool 'demo(echo)'"), "{stderr}");
    assert_eq!(completes(&ran.events)[0]["success"], false);
}

#[test]
fn configuration_errors_name_the_file_and_field() {
    let rt = runtime();
    let mcp = json!({"mcpServers": {"files": {"type": "stdio", "args": ["x"]}}});
    let ran = run(&rt, Script::new().text("never"), &mcp, &[]);
    assert!(!ran.out.status.success());
    let stderr = String::from_utf8_lossy(&ran.out.stderr);
    assert!(
        stderr.contains("mcp.json") && stderr.contains("mcpServers.files.command"),
        "{stderr}"
    );
    assert!(ran.events.is_empty());
    // A pattern naming a server that is not configured is a typo, refused at start-up.
    let mcp = json!({"mcpServers": {"demo": {"url": "http://127.0.0.1:9/mcp"}}});
    let ran = run(
        &rt,
        Script::new().text("never"),
        &mcp,
        &["--allow-tool", "dmeo(echo)"],
    );
    assert!(!ran.out.status.success());
    assert!(String::from_utf8_lossy(&ran.out.stderr).contains("dmeo"));
}

#[test]
fn a_server_that_cannot_start_is_a_warning_and_the_session_goes_on() {
    let rt = runtime();
    let mcp = json!({"mcpServers": {"broken": {"command": "/nonexistent/mcp-server"}}});
    let ran = run(&rt, Script::new().text("answered anyway"), &mcp, &[]);
    assert!(
        ran.out.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.out.stderr)
    );
    let stderr = String::from_utf8_lossy(&ran.out.stderr);
    assert!(
        stderr.contains("MCP server 'broken' is not available"),
        "{stderr}"
    );
    assert!(ran.events.iter().any(|e| e["type"] == "session.warning"
        && e["data"]["message"].as_str().unwrap().contains("'broken'")));
}

#[test]
fn servers_disabled_in_the_settings_are_not_started_unless_given_by_flag() {
    let rt = runtime();
    let user = json!({"mcpServers": {
        "kept": {"command": "/nonexistent/kept-server"},
        "off": {"command": "/nonexistent/off-server"},
    }});
    let flagged = json!({"mcpServers": {"flagged": {"command": "/nonexistent/flagged-server"}}});
    let ran = run_with_home(
        &rt,
        Script::new().text("answered"),
        &flagged,
        &[],
        &[
            ("mcp-config.json", user.to_string()),
            (
                "settings.json",
                "{\n  // written by mcp.config.disable\n  \"disabledMcpServers\": [\"off\", \"flagged\"]\n}\n".into(),
            ),
        ],
    );
    let stderr = String::from_utf8_lossy(&ran.out.stderr);
    assert!(ran.out.status.success(), "{stderr}");
    // A server is tried (and reported unavailable) only when it is not disabled, or when
    // `--mcp-config` names it.
    assert!(
        stderr.contains("MCP server 'kept' is not available"),
        "{stderr}"
    );
    assert!(
        stderr.contains("MCP server 'flagged' is not available"),
        "{stderr}"
    );
    assert!(!stderr.contains("'off'"), "{stderr}");
}

#[test]
fn resume_with_mcp_config_offers_the_servers_tools_again() {
    let rt = runtime();
    let url = rt.block_on(server::serve_http());
    let model = rt
        .block_on(ScriptedServer::start(
            Script::new()
                .tool_call("demo-echo", json!({"text": "before"}))
                .text("one")
                .tool_call("demo-echo", json!({"text": "after"}))
                .text("two"),
        ))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"demo": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let turnstile = |args: &[&str]| {
        Command::cargo_bin("turnstile")
            .unwrap()
            .arg("--state-dir")
            .arg(state.path())
            .args(args)
            .arg("--mcp-config")
            .arg(&config)
            .args(["--allow-tool", "demo"])
            .arg("--base-url")
            .arg(model.url())
            .arg("--cwd")
            .arg(work.path())
            .args(["--model", "test-model"])
            .env("COPILOT_HOME", home.path())
            .env_remove("TURNSTILE_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    };
    let ran = turnstile(&["run", "first"]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let session = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("the session's directory");
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let resumed = turnstile(&["resume", &id, "second"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    // The resuming process connected the server again: its tool is offered and runs.
    let offered: Vec<&str> = requests[2]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"demo-echo"), "{offered:?}");
    let events: Vec<Value> = std::fs::read_to_string(session.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["type"] == "session.resume"));
    let done = completes(&events);
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[1]["success"], true, "{}", done[1]);
    assert_eq!(done[1]["result"]["content"], "echo: aftersecond block");
}

#[test]
fn the_reference_server_everything_over_stdio() {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.is_file() {
        let node = Command::new("node").arg("--version").output().is_ok();
        assert!(
            !(node && std::env::var_os("CI").is_some()),
            "server-everything is not installed: .ci/run must run conformance/mcp/install.sh"
        );
        println!("SKIP: install server-everything with `bash conformance/mcp/install.sh`");
        return;
    }
    let rt = runtime();
    let mcp = json!({"mcpServers": {"everything": {"command": "node", "args": [entry, "stdio"]}}});
    let script = Script::new()
        .tool_call("everything-echo", json!({"message": "from turnstile"}))
        .text("done");
    let ran = run(&rt, script, &mcp, &["--allow-tool", "everything"]);
    assert!(
        ran.out.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.out.stderr)
    );
    let done = completes(&ran.events);
    assert_eq!(done[0]["success"], true, "{:?}", done[0]);
    assert_eq!(done[0]["result"]["content"], "Echo: from turnstile");
}
