//! A session's MCP tools as its servers change, end to end with the scripted model and rmcp
//! servers over streamable HTTP on 127.0.0.1 (`crates/mcp/tests/support/server.rs`): a tool
//! list that changes mid-message (the next request offers the new tool, with the runtime's
//! ephemeral `mcp.tools.list_changed` and `session.tools_updated`); a server disabled and
//! enabled between messages; hostile servers whose names collide, run over 64 characters
//! or list 10 000 tools with megabyte descriptions (capped, warned about once).

use crate::common;
use crate::server;

use std::sync::Arc;

use common::{Fixture, data};
use serde_json::{Value, json};
use server::HostileServer;
use turnstile_journal::Event;
use turnstile_loop::{McpChange, Outcome, SendOptions, SessionHandle, SessionParts};
use turnstile_mcp::{McpHost, McpServers, StartOptions};
use turnstile_permissions::PermissionPolicy;
use turnstile_scripted_model::{Script, ScriptedResponse};
use turnstile_tools::ToolRegistry;

async fn host(fx: &Fixture, servers: Value) -> Arc<McpHost> {
    let servers = McpServers::from_value(&servers, "test").unwrap();
    Arc::new(McpHost::start(&servers, &StartOptions::new(fx.work.path())).await)
}

fn parts(fx: &Fixture, host: &Arc<McpHost>) -> SessionParts {
    let mut parts = fx.base_parts(|c| {
        c.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
        c.mcp = Some(Arc::clone(host));
    });
    parts.tools = Arc::new(ToolRegistry::builtin(false));
    parts
}

/// The tool names of each model request, in order.
fn offered(fx: &Fixture) -> Vec<Vec<String>> {
    fx.server
        .recorded()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| {
            r.body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

/// What the model read as each tool result, in order.
fn results(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(|e| {
            let d = data(e);
            let text = &d["result"]["content"];
            text.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| d["error"]["message"].to_string())
        })
        .collect()
}

#[tokio::test]
async fn a_changed_tool_list_is_offered_from_the_next_request() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("demo-grow", json!({})))
        .respond(ScriptedResponse::tool_call("demo-grown", json!({})))
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |_| {}).await;
    let url = server::serve_http().await;
    let host = host(&fx, json!({"demo": {"type": "http", "url": url}})).await;
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, parts(&fx, &host)).unwrap();
    let outcome = session
        .send_and_wait("grow", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let id = session.id();
    session.shutdown().await.unwrap();

    let requests = offered(&fx);
    assert!(!requests[0].iter().any(|n| n == "demo-grown"));
    assert!(
        requests[1].iter().any(|n| n == "demo-grown"),
        "{:?}",
        requests[1]
    );
    let journal = fx.journal(id);
    assert_eq!(results(&journal), ["grown", "the new tool ran"]);

    let mut live = Vec::new();
    while let Ok(e) = rx.try_recv() {
        live.push(e);
    }
    let types: Vec<&str> = live.iter().map(|e| e.event_type.as_str()).collect();
    let changed = types
        .iter()
        .position(|t| *t == "mcp.tools.list_changed")
        .expect("mcp.tools.list_changed");
    let second_turn = types
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == "assistant.turn_start")
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    assert!(
        changed < second_turn,
        "announced before the request that offers it"
    );
    assert_eq!(data(&live[changed])["serverName"], "demo");
    assert_eq!(types[changed + 1], "session.mcp_server_status_changed");
    assert_eq!(types[changed + 2], "session.tools_updated");
    assert!(live[changed].is_ephemeral() && live[changed + 2].is_ephemeral());
    // Ephemeral: none of it is on disk.
    assert!(
        !journal
            .iter()
            .any(|e| e.event_type.as_str() == "mcp.tools.list_changed")
    );
    fx.audit_clean(id);
}

#[tokio::test]
async fn a_disabled_server_offers_nothing_until_enabled_again() {
    let script = Script::new()
        .respond(ScriptedResponse::text("one"))
        .respond(ScriptedResponse::tool_call(
            "demo-echo",
            json!({"text": "x"}),
        ))
        .respond(ScriptedResponse::text("two"))
        .respond(ScriptedResponse::tool_call(
            "demo-echo",
            json!({"text": "y"}),
        ))
        .respond(ScriptedResponse::text("three"));
    let fx = Fixture::start(script, |_| {}).await;
    let url = server::serve_http().await;
    let host = host(&fx, json!({"demo": {"type": "http", "url": url}})).await;
    let session = SessionHandle::create(&fx.root, None, parts(&fx, &host)).unwrap();
    session
        .send_and_wait("first", SendOptions::default())
        .await
        .unwrap();
    assert!(
        session
            .change_mcp(McpChange::Disable("demo".into()))
            .await
            .unwrap()
    );
    assert!(
        !session
            .change_mcp(McpChange::Disable("demo".into()))
            .await
            .unwrap(),
        "already"
    );
    assert!(
        !session
            .change_mcp(McpChange::Enable("nosuch".into()))
            .await
            .unwrap()
    );
    assert_eq!(host.server("demo").unwrap().state.as_str(), "disabled");
    session
        .send_and_wait("second", SendOptions::default())
        .await
        .unwrap();
    assert!(
        session
            .change_mcp(McpChange::Enable("demo".into()))
            .await
            .unwrap()
    );
    session
        .send_and_wait("third", SendOptions::default())
        .await
        .unwrap();
    assert!(session.change_mcp(McpChange::Reload).await.unwrap());
    assert_eq!(host.server("demo").unwrap().state.as_str(), "connected");
    let id = session.id();
    session.shutdown().await.unwrap();

    let requests = offered(&fx);
    let has_echo = |r: &Vec<String>| r.iter().any(|n| n == "demo-echo");
    assert!(has_echo(&requests[0]));
    assert!(!has_echo(&requests[1]), "disabled: not offered");
    assert!(has_echo(&requests[3]), "enabled again");
    let journal = fx.journal(id);
    let texts = results(&journal);
    assert!(texts[0].contains("does not exist"), "{texts:?}");
    assert_eq!(texts[1], "echo: ysecond block");
}

#[tokio::test]
async fn hostile_servers_are_capped_and_their_collisions_named() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("h-b-c", json!({})))
        .respond(ScriptedResponse::text("done"));
    let fx = Fixture::start(script, |_| {}).await;
    let mut servers = serde_json::Map::new();
    for label in ["h", "h-b"] {
        let url = server::serve_http_of(move || HostileServer {
            label,
            ..Default::default()
        })
        .await;
        servers.insert(label.into(), json!({"type": "http", "url": url}));
    }
    let host = host(&fx, Value::Object(servers)).await;
    let mut parts = parts(&fx, &host);
    // A window the capped tools fit in, so the first request is the model call under test.
    parts.config.token_limit = Some(10_000_000);
    let (id, _) = fx.one_message(parts, "go").await;

    let request = &fx.server.recorded()[0];
    let body = serde_json::to_vec(&request.body).unwrap().len();
    // Two servers' budgets and the built-ins: far from what they listed (gigabytes).
    assert!(
        body < 2 * turnstile_mcp::MAX_SERVER_TOOL_BYTES + 200_000,
        "{body} bytes"
    );
    let names = &offered(&fx)[0];
    assert!(
        names.iter().all(|n| n.len() <= 64),
        "every name fits the model APIs"
    );
    let long = format!("h-{}", "l".repeat(62));
    assert!(names.contains(&long), "cut as the runtime cuts it");
    assert_eq!(
        names.iter().filter(|n| *n == "h-b-c").count(),
        1,
        "offered once"
    );
    // The later server's tool answers, as in the runtime.
    assert_eq!(results(&fx.journal(id)), ["h-b ran c"]);
    let warnings: Vec<String> = fx
        .journal(id)
        .iter()
        .filter(|e| e.event_type.as_str() == "session.warning")
        .map(|e| data(e)["message"].as_str().unwrap().to_owned())
        .collect();
    let all = warnings.join("\n");
    assert!(
        all.contains(
            "tool 'b-c' of MCP server 'h' and tool 'c' of MCP server 'h-b' are both named \"h-b-c\""
        ),
        "{all}"
    );
    assert!(all.contains("longer than 64 characters"), "{all}");
    assert!(
        all.contains("MCP server 'h-b': its tools would add more than"),
        "{all}"
    );
    let mut unique = warnings.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), warnings.len(), "each said once");
}
