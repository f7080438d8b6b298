//! Which MCP servers an SDK session of `turnstile --headless --stdio` starts: none from the
//! user's configuration files (as with the Copilot CLI), the servers of
//! `--additional-mcp-config` (text or `@FILE`) in every session, and its client's own
//! `mcpServers`. The real binary, real pipes, the rmcp test server over streamable HTTP on
//! 127.0.0.1.

use crate::server;

use crate::common;

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use common::rpc::StdioServer;

fn spawn(home: &std::path::Path, args: &[&str]) -> StdioServer {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
    cmd.args(["--headless", "--stdio"])
        .args(args)
        .env("COPILOT_HOME", home)
        .stderr(Stdio::null());
    StdioServer::spawn(cmd)
}

fn servers_of(server: &mut StdioServer, params: Value) -> Vec<String> {
    let created = server.ok("session.create", params);
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let listed = server.ok("session.mcp.list", json!({"sessionId": id}));
    listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["status"], "connected", "{s}");
            s["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn sessions_start_the_additional_servers_and_their_own_never_the_config_files() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(server::serve_http());
    let home = tempfile::tempdir().unwrap();
    let entry = json!({"type": "http", "url": url, "tools": ["*"]});
    std::fs::write(
        home.path().join("mcp-config.json"),
        json!({"mcpServers": {"fromfile": entry}}).to_string(),
    )
    .unwrap();
    let extra = home.path().join("extra.json");
    std::fs::write(&extra, json!({"mcpServers": {"atfile": entry}}).to_string()).unwrap();
    let inline = json!({"mcpServers": {"inline": entry}}).to_string();

    // Without the flag: only the client's servers.
    let mut plain = spawn(home.path(), &[]);
    assert!(servers_of(&mut plain, json!({})).is_empty());
    assert_eq!(
        servers_of(&mut plain, json!({"mcpServers": {"mine": entry}})),
        ["mine"]
    );
    plain.kill();

    let at_file = format!("@{}", extra.display());
    let mut with = spawn(
        home.path(),
        &[
            "--additional-mcp-config",
            &at_file,
            "--additional-mcp-config",
            &inline,
        ],
    );
    assert_eq!(servers_of(&mut with, json!({})), ["atfile", "inline"]);
    assert_eq!(
        servers_of(&mut with, json!({"mcpServers": {"mine": entry}})),
        ["atfile", "inline", "mine"]
    );
    with.kill();
}

#[test]
fn a_bad_additional_config_is_refused_at_start_naming_it() {
    let home = tempfile::tempdir().unwrap();
    for (value, expected) in [
        ("{not json", "--additional-mcp-config"),
        (
            "@/no/such/mcp.json",
            "--additional-mcp-config @/no/such/mcp.json: no such file",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_turnstile"))
            .args(["--headless", "--stdio", "--additional-mcp-config", value])
            .env("COPILOT_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{value}: {stderr}");
        assert!(stderr.contains(expected), "{value}: {stderr}");
    }
}
