//! MCP tools in a session, end to end: the rmcp test server over streamable HTTP on
//! 127.0.0.1 (`crates/mcp/tests/support/server.rs`), the scripted model calling its tools.
//! Names, order, descriptions and parameters in the model request, result and failure texts,
//! the `mcp` permission request, allow/deny patterns by server and tool, the status events,
//! a hanging call that ends as a failure, and the journal's audit.

use crate::common;
use crate::server;

use std::sync::Arc;
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::{Event, Uuid};
use turnstile_loop::{Outcome, SendOptions, SessionHandle, SessionParts};
use turnstile_mcp::{McpHost, McpServers, StartOptions};
use turnstile_permissions::PermissionPolicy;
use turnstile_scripted_model::{Script, ScriptedResponse};
use turnstile_tools::ToolRegistry;

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

/// The `demo` server over HTTP (plus a server that cannot start, when `broken`).
async fn host(fx: &Fixture, broken: bool, timeout_ms: Option<u64>) -> Arc<McpHost> {
    let url = server::serve_http().await;
    let mut entry = json!({"type": "http", "url": url});
    if let Some(ms) = timeout_ms {
        entry["timeout"] = json!(ms);
    }
    let mut servers = json!({"demo": entry});
    if broken {
        servers["broken"] = json!({"command": "/nonexistent/mcp-server"});
    }
    let servers = McpServers::from_value(&servers, "test").unwrap();
    Arc::new(McpHost::start(&servers, &StartOptions::new(fx.work.path())).await)
}

fn parts(fx: &Fixture, host: &Arc<McpHost>, policy: PermissionPolicy) -> SessionParts {
    let mut parts = fx.base_parts(|c| {
        c.permissions = policy;
        c.mcp = Some(Arc::clone(host));
    });
    parts.tools = Arc::new(ToolRegistry::builtin(false));
    parts
}

fn names(servers: &[&str]) -> Vec<String> {
    servers.iter().map(|s| s.to_string()).collect()
}

async fn run(fx: &Fixture, parts: SessionParts) -> (Uuid, Vec<Arc<Event>>) {
    let (session, mut rx) = SessionHandle::create_subscribed(&fx.root, None, parts).unwrap();
    let outcome = session
        .send_and_wait("use the tools", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    session.shutdown().await.unwrap();
    let mut live = Vec::new();
    while let Ok(e) = rx.try_recv() {
        live.push(e);
    }
    (session.id(), live)
}

fn of_type(events: &[Arc<Event>], t: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == t)
        .map(|e| data(e))
        .collect()
}

#[tokio::test]
async fn mcp_tools_are_offered_called_and_recorded_as_the_runtime_does() {
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("demo-echo", json!({"text": "hi"}))
                .and_tool_call("demo-fail", json!({})),
        )
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |_| {}).await;
    let host = host(&fx, true, None).await;
    let policy = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    let (id, live) = run(&fx, parts(&fx, &host, policy)).await;

    // The request: built-ins first, then the server's tools sorted by name, as given.
    let requests = fx.server.recorded();
    let first = requests.iter().find(|r| r.method == "POST").unwrap();
    let tools: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let builtin = ToolRegistry::builtin(false).names().len();
    assert_eq!(
        &tools[builtin..],
        [
            "demo-echo",
            "demo-fail",
            "demo-grow",
            "demo-hang",
            "demo-pid"
        ]
    );
    let echo = &first.body["tools"][builtin]["function"];
    assert_eq!(echo["description"], "Echoes the text back.");
    assert_eq!(echo["parameters"]["required"], json!(["text"]));

    // The results the model read next.
    let second = requests
        .iter()
        .filter(|r| r.method == "POST")
        .nth(1)
        .unwrap();
    let tool_messages: Vec<&Value> = second.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_messages[0]["content"], "echo: hisecond block");
    assert_eq!(
        tool_messages[1]["content"],
        "MCP server 'demo': it failed on purpose"
    );

    // The journal: the MCP fields of the request and the start, the results.
    let journal = fx.journal(id);
    let message = journal
        .iter()
        .find(|e| e.event_type.as_str() == "assistant.message")
        .map(data)
        .unwrap();
    let request = &message["toolRequests"][0];
    assert_eq!(request["mcpServerName"], "demo");
    assert_eq!(request["mcpToolName"], "echo");
    assert_eq!(request["toolTitle"], "echo");
    let start = journal
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_start")
        .map(data)
        .unwrap();
    assert_eq!(start["toolName"], "demo-echo");
    assert_eq!(start["mcpServerName"], "demo");
    let completes: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(data)
        .collect();
    assert_eq!(completes[0]["success"], true);
    assert_eq!(completes[0]["result"]["content"], "echo: hisecond block");
    assert_eq!(completes[1]["success"], false);
    assert_eq!(completes[1]["error"]["code"], "failure");

    // The status events (ephemeral) and the warning for the server that did not start.
    let loaded = of_type(&live, "session.mcp_servers_loaded");
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0]["servers"][0]["name"], "demo");
    assert_eq!(loaded[0]["servers"][0]["status"], "connected");
    assert_eq!(loaded[0]["servers"][0]["transport"], "http");
    assert_eq!(loaded[0]["servers"][1]["status"], "failed");
    assert!(
        loaded[0]["servers"][1]["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server")
    );
    let warnings: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "session.warning")
        .map(data)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w["warningType"] == "mcp"
                && w["message"].as_str().unwrap().contains("'broken'")),
        "{warnings:?}"
    );
    assert!(
        !journal
            .iter()
            .any(|e| e.event_type.as_str().starts_with("session.mcp_")),
        "the status events are ephemeral"
    );
    fx.audit_clean(id);
}

#[tokio::test]
async fn patterns_allow_and_deny_by_server_and_tool() {
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("demo-echo", json!({"text": "a"}))
                .and_tool_call("demo-pid", json!({})),
        )
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |_| {}).await;
    let host = host(&fx, false, None).await;
    // Every tool of demo allowed, but not pid.
    let policy = PermissionPolicy::from_flags_with_mcp(
        false,
        &names(&["demo"]),
        &names(&["demo(pid)"]),
        &names(&["demo"]),
    )
    .unwrap();
    let (id, _) = run(&fx, parts(&fx, &host, policy)).await;
    let journal = fx.journal(id);
    let requested: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "permission.requested")
        .map(data)
        .collect();
    // The runtime's request shape, kind mcp.
    let echo_request = requested
        .iter()
        .find(|r| r["permissionRequest"]["toolName"] == "demo-echo")
        .unwrap();
    assert_eq!(
        echo_request["permissionRequest"],
        json!({"kind": "mcp", "serverName": "demo", "toolName": "demo-echo", "toolTitle": "echo",
               "args": {"text": "a"}, "readOnly": false, "toolCallId": echo_request["permissionRequest"]["toolCallId"]})
    );
    let completes: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(data)
        .collect();
    assert_eq!(completes[0]["success"], true, "{:?}", completes[0]);
    assert_eq!(completes[1]["success"], false);
    assert!(
        completes[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("demo(pid)")
    );
    fx.audit_clean(id);
}

#[tokio::test]
async fn a_hanging_mcp_call_ends_as_a_failure_not_a_stuck_session() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("demo-hang", json!({})))
        .respond(ScriptedResponse::text("gave up"));
    let fx = Fixture::start(script, |_| {}).await;
    let host = host(&fx, false, Some(500)).await;
    let policy = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    let (id, _) =
        tokio::time::timeout(Duration::from_secs(60), run(&fx, parts(&fx, &host, policy)))
            .await
            .expect("failure guard: the session finished");
    let journal = fx.journal(id);
    let complete = journal
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(data)
        .unwrap();
    assert_eq!(complete["success"], false);
    assert_eq!(complete["error"]["code"], "timeout");
    assert_eq!(
        complete["error"]["message"],
        "MCP server 'demo': the tool did not respond within 500 ms"
    );
    fx.audit_clean(id);
}
