//! `pluginDirectories` and `disabledMcpServers` of `session.create`/`resume` through the SDK
//! server, against real MCP servers (the rmcp test server over streamable HTTP on 127.0.0.1,
//! each MCP session it opens counted): a plugin's servers start at the session's first
//! message, not when it opens; a disabled one is listed as `disabled` and never started; a
//! cold resume with the plugins starts them when a client asks about its servers.

use crate::common;
use crate::server;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{TestServer, create, leave, resume, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

/// An HTTP MCP server whose MCP sessions are counted.
async fn counted_server() -> (String, Arc<AtomicUsize>) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let counted = sessions.clone();
    let url = server::serve_http_of(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        server::TestServer::default()
    })
    .await;
    (url, sessions)
}

/// A plugin directory named `demo-plugin` whose `.mcp.json` has `control` and `off`.
fn write_plugin(dir: &Path, control: &str, off: &str) {
    std::fs::create_dir_all(dir.join(".github/plugin")).unwrap();
    std::fs::write(
        dir.join(".github/plugin/plugin.json"),
        json!({"name": "demo-plugin", "version": "1.2.0"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {
            "control": {"type": "http", "url": control, "tools": ["*"]},
            "off": {"type": "http", "url": off, "tools": ["*"]}
        }})
        .to_string(),
    )
    .unwrap();
}

/// (name, status) of each server `session.mcp.list` answers, and the whole answer.
async fn statuses(client: &mut common::Client, id: &str) -> (Vec<(String, String)>, Value) {
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    let pairs = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (pairs, listed)
}

#[tokio::test]
async fn plugin_servers_start_at_first_use_and_disabled_ones_never() {
    let (control_url, control) = counted_server().await;
    let (off_url, off) = counted_server().await;
    let (model, t, mut client) = with_model(Script::new().text("one"), TestServer::allow_all).await;
    let plugin = t.work().join("plugins/demo");
    write_plugin(&plugin, &control_url, &off_url);
    let open = json!({"pluginDirectories": ["plugins/demo"], "disabledMcpServers": ["off"]});
    let id = create(&mut client, &model.url(), open.clone()).await;
    client
        .ok("session.metadata.snapshot", json!({"sessionId": id}))
        .await;
    assert_eq!(
        control.load(Ordering::SeqCst),
        0,
        "started before its first use"
    );

    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hello"}),
        )
        .await;
    assert_eq!(control.load(Ordering::SeqCst), 1);
    // The first request offers the plugin server's tools.
    let request = &model.requests()[0];
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"control-echo"), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("off-")), "{tools:?}");
    let (pairs, listed) = statuses(&mut client, &id).await;
    assert_eq!(
        pairs,
        [
            ("control".into(), "connected".into()),
            ("off".into(), "disabled".into())
        ]
    );
    let entry = &listed["servers"][0];
    assert_eq!(
        (
            &entry["source"],
            &entry["pluginName"],
            &entry["sourcePlugin"]
        ),
        (
            &json!("plugin"),
            &json!("demo-plugin"),
            &json!("demo-plugin")
        )
    );
    assert_eq!(listed["host"]["disabledServers"], json!(["off"]));
    leave(&t, client).await;

    // A cold resume: asking about the servers starts them; the disabled one stays down.
    let mut client = t.client().await;
    resume(&mut client, &model.url(), &id, open).await;
    assert_eq!(
        control.load(Ordering::SeqCst),
        1,
        "started by the resume itself"
    );
    let (pairs, _) = statuses(&mut client, &id).await;
    assert_eq!(
        pairs,
        [
            ("control".into(), "connected".into()),
            ("off".into(), "disabled".into())
        ]
    );
    assert_eq!(control.load(Ordering::SeqCst), 2);
    // A client may still turn the disabled one on.
    client
        .ok(
            "session.mcp.enable",
            json!({"sessionId": id, "serverName": "off"}),
        )
        .await;
    assert_eq!(off.load(Ordering::SeqCst), 1);
    leave(&t, client).await;
    assert_eq!(off.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_session_without_the_plugins_starts_none_of_them() {
    let (control_url, control) = counted_server().await;
    let (off_url, off) = counted_server().await;
    let (model, t, mut client) = with_model(Script::new().text("one"), TestServer::allow_all).await;
    write_plugin(&t.work().join("plugin"), &control_url, &off_url);
    // Every server of the plugin is enabled when none is named.
    let id = create(
        &mut client,
        &model.url(),
        json!({"pluginDirectories": ["plugin", "not-a-plugin"]}),
    )
    .await;
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hello"}),
        )
        .await;
    let (pairs, _) = statuses(&mut client, &id).await;
    assert_eq!(
        pairs,
        [
            ("control".into(), "connected".into()),
            ("off".into(), "connected".into())
        ]
    );
    assert_eq!(
        (control.load(Ordering::SeqCst), off.load(Ordering::SeqCst)),
        (1, 1)
    );
    // A session that does not name the plugin directory has none of its servers.
    let other = create(&mut client, &model.url(), json!({})).await;
    let (pairs, _) = statuses(&mut client, &other).await;
    assert!(pairs.is_empty(), "{pairs:?}");
    leave(&t, client).await;
}

#[tokio::test]
async fn the_builtin_github_server_starts_at_first_use_unless_disabled() {
    // The Copilot endpoint's `/mcp` is served by the rmcp test server (any path).
    let (url, github) = counted_server().await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let (model, t, mut client) = with_model(
        Script::new().text("one").text("two").text("three"),
        move |config| {
            config.default_model = turnstile_providers::OpenAiConfig::copilot(
                base,
                "scripted-model",
                Some("gh-token".into()),
            );
        },
    )
    .await;
    let discovery = json!({
        "enableConfigDiscovery": true,
        "githubMcpToolConfig": {"enableAllTools": true},
    });
    let mut disabled = discovery.clone();
    disabled["disabledMcpServers"] = json!(["github-mcp-server"]);
    let off = create(&mut client, &model.url(), disabled).await;
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": off, "prompt": "hello"}),
        )
        .await;
    let (pairs, listed) = statuses(&mut client, &off).await;
    assert_eq!(pairs, [("github-mcp-server".into(), "disabled".into())]);
    assert_eq!(listed["servers"][0]["source"], "builtin");
    assert_eq!(github.load(Ordering::SeqCst), 0);

    let on = create(&mut client, &model.url(), discovery).await;
    client
        .ok("session.metadata.snapshot", json!({"sessionId": on}))
        .await;
    assert_eq!(
        github.load(Ordering::SeqCst),
        0,
        "started before its first use"
    );
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": on, "prompt": "hello"}),
        )
        .await;
    assert_eq!(github.load(Ordering::SeqCst), 1);
    let (pairs, _) = statuses(&mut client, &on).await;
    assert_eq!(pairs, [("github-mcp-server".into(), "connected".into())]);

    // Without config discovery a session has no GitHub server.
    let plain = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": plain, "prompt": "hello"}),
        )
        .await;
    let (pairs, _) = statuses(&mut client, &plain).await;
    assert!(pairs.is_empty(), "{pairs:?}");
    assert_eq!(github.load(Ordering::SeqCst), 1);
    leave(&t, client).await;
}
