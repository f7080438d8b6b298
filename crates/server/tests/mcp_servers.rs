//! `mcpServers` in `session.create` through the SDK server: the session offers the rmcp test
//! server's tools (streamable HTTP on 127.0.0.1), calls them, and answers `session.mcp.list`
//! and `session.mcp.listTools`; a server that cannot start is listed as failed; a server
//! disabled, enabled and reloaded over `session.mcp.*`.

mod common;
#[path = "../../mcp/tests/support/server.rs"]
mod server;

use common::{Client, TestServer, create_params, is_idle, journal_lines, mcp_session, no_answers};
use serde_json::json;
use turnstile_loop::permissions::PermissionPolicy;
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn session_create_mcp_servers_are_offered_called_and_listed() {
    let url = server::serve_http().await;
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("demo-echo", json!({"text": "sdk"}))
            .text("done"),
    )
    .await
    .unwrap();
    let servers = json!({
        "demo": {"type": "http", "url": url, "tools": ["*"]},
        "broken": {"type": "stdio", "command": "/nonexistent/mcp-server", "args": []}
    });
    let (t, mut client, id) = mcp_session(&model.url(), servers, |c| {
        c.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    })
    .await;

    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(
        listed["servers"][0],
        json!({"name": "demo", "status": "connected", "transport": "http"})
    );
    assert_eq!(listed["servers"][1]["name"], "broken");
    assert_eq!(listed["servers"][1]["status"], "failed");
    assert!(
        listed["servers"][1]["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent")
    );
    let tools = client
        .ok(
            "session.mcp.listTools",
            json!({"sessionId": id, "serverName": "demo"}),
        )
        .await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "fail", "grow", "hang", "pid"]);
    assert_eq!(tools["tools"][0]["description"], "Echoes the text back.");
    let failed = client
        .err(
            "session.mcp.listTools",
            json!({"sessionId": id, "serverName": "broken"}),
        )
        .await;
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("not connected"),
        "{failed}"
    );
    let unknown = client
        .err(
            "session.mcp.listTools",
            json!({"sessionId": id, "serverName": "nope"}),
        )
        .await;
    assert!(
        unknown["message"].as_str().unwrap().contains("serverName"),
        "{unknown}"
    );

    client
        .ok("session.send", json!({"sessionId": id, "prompt": "echo"}))
        .await;
    client.events_until(no_answers, is_idle).await;
    let journal = journal_lines(&t.journal(&id));
    let done = journal
        .iter()
        .find(|e| e["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(done["data"]["success"], true, "{done}");
    assert_eq!(done["data"]["result"]["content"], "echo: sdksecond block");
    let start = journal
        .iter()
        .find(|e| e["type"] == "tool.execution_start")
        .unwrap();
    assert_eq!(start["data"]["mcpServerName"], "demo");
    t.stop().await;
}

#[tokio::test]
async fn a_bad_mcp_servers_param_names_the_field() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
    let params = create_params(
        &model.url(),
        json!({"mcpServers": {"files": {"type": "stdio", "args": ["x"]}}}),
    );
    let error = client.err("session.create", params).await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("mcpServers.files.command"),
        "{error}"
    );
    t.stop().await;
}

#[tokio::test]
async fn session_mcp_disable_enable_and_reload_answer_as_the_runtime_does() {
    let url = server::serve_http().await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let servers = json!({"demo": {"type": "http", "url": url}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let status = |listed: &serde_json::Value| listed["servers"][0]["status"].clone();
    let named = |name: &str| json!({"sessionId": id, "serverName": name});

    let answer = client.ok("session.mcp.disable", named("demo")).await;
    assert_eq!(answer, json!({}));
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(status(&listed), "disabled");
    let not_connected = client.err("session.mcp.listTools", named("demo")).await;
    assert!(
        not_connected["message"]
            .as_str()
            .unwrap()
            .contains("not connected"),
        "{not_connected}"
    );
    // Each change answers `{}`; the server then stands as the change left it.
    for (method, params) in [
        ("session.mcp.enable", named("demo")),
        ("session.mcp.reload", json!({"sessionId": id})),
    ] {
        assert_eq!(client.ok(method, params).await, json!({}), "{method}");
        let listed = client
            .ok("session.mcp.list", json!({"sessionId": id}))
            .await;
        assert_eq!(status(&listed), "connected", "after {method}");
    }
    // A name the session does not have is ignored, as the runtime ignores it.
    assert_eq!(
        client.ok("session.mcp.enable", named("nosuch")).await,
        json!({})
    );
    let empty = client.err("session.mcp.disable", named("")).await;
    assert!(
        empty["message"].as_str().unwrap().contains("serverName"),
        "{empty}"
    );
    let extra = client
        .err(
            "session.mcp.enable",
            json!({"sessionId": id, "serverName": "demo", "other": 1}),
        )
        .await;
    assert!(
        extra["message"].as_str().unwrap().contains("other"),
        "{extra}"
    );
    t.stop().await;
}
