//! The `session.mcp.*` methods of a host the engine is not, through the SDK server over a real
//! socket: OAuth login looking up a real HTTP server's metadata, and the answers the Copilot
//! CLI gives over the wire for the GitHub server, external clients and pending requests; MCP
//! Apps over a real app server.

use crate::common;
use crate::server;

use common::{Client, mcp_session, server_everything};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turnstile_scripted_model::{Script, ScriptedServer};

/// `extra`'s fields with the session's id.
fn with_session(id: &str, extra: Value) -> Value {
    let mut params = json!({"sessionId": id});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    params
}

/// An HTTP server on 127.0.0.1 answering every request with `status` and `body`; its URL.
async fn answering(status: &'static str, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn oauth_login_looks_up_the_server_metadata_and_the_rest_answers_as_the_cli() {
    let plain = server::serve_http().await;
    let with_metadata = answering(
        "200 OK",
        r#"{"issuer":"http://127.0.0.1","authorization_endpoint":"http://127.0.0.1/authorize"}"#,
    )
    .await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let servers = json!({
        "demo": {"type": "http", "url": plain},
        "oauth": {"type": "http", "url": with_metadata},
        // Configured, not reachable: a local server all the same.
        "local": {"type": "stdio", "command": "/nonexistent/mcp-server", "args": []},
    });
    let (_t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let login = async |client: &mut Client, name: &str| {
        client
            .err(
                "session.mcp.oauth.login",
                json!({"sessionId": id, "serverName": name}),
            )
            .await["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let prefix = "Request session.mcp.oauth.login failed with message: ";
    assert_eq!(
        login(&mut client, "demo").await,
        format!("{prefix}Failed to discover authorization server metadata for {plain}")
    );
    assert_eq!(
        login(&mut client, "oauth").await,
        format!(
            "{prefix}turnstile does no MCP OAuth; give MCP server 'oauth' its token in the configuration's headers"
        )
    );
    assert_eq!(
        login(&mut client, "local").await,
        format!(
            "{prefix}MCP server 'local' is not a remote server — OAuth login is only supported for HTTP/SSE transports"
        )
    );
    assert_eq!(
        login(&mut client, "nosuch").await,
        format!("{prefix}MCP server 'nosuch' is not configured")
    );

    let s = |extra: Value| with_session(&id, extra);
    let changed = "session.mcp.oauth.authenticationStateChanged";
    assert_eq!(
        client.ok(changed, s(json!({"serverName": "demo"}))).await,
        Value::Null
    );
    assert_eq!(client.ok(changed, s(json!({}))).await, Value::Null);
    assert_eq!(
        client
            .err(changed, s(json!({"serverName": "nosuch"})))
            .await["message"],
        "Request session.mcp.oauth.authenticationStateChanged failed with message: MCP server nosuch did not recover after OAuth credentials changed"
    );
    let pending = json!({"requestId": "r1", "result": {"kind": "cancelled"}});
    for method in [
        "session.mcp.oauth.handlePendingRequest",
        "session.mcp.headers.handlePendingHeadersRefreshRequest",
    ] {
        assert_eq!(
            client.ok(method, s(pending.clone())).await,
            json!({"success": false})
        );
    }
    assert_eq!(
        client
            .ok("session.mcp.oauth.respond", s(json!({"requestId": "r1"})))
            .await,
        json!({"success": false})
    );
    let missing = client.err("session.mcp.oauth.respond", s(json!({}))).await;
    assert_eq!(missing["code"], -32602);
    assert!(
        missing["message"].as_str().unwrap().contains("requestId"),
        "{missing}"
    );

    // Methods the CLI does not serve either: its exact words, the reason in `data`.
    for method in [
        "session.mcp.moveLoadingToBackground",
        "session.mcp.oauth.probe",
    ] {
        let e = client.err(method, s(json!({"serverName": "demo"}))).await;
        assert_eq!(e["code"], -32601);
        assert_eq!(e["message"], format!("Unhandled method {method}"));
        assert!(e["data"]["reason"].as_str().is_some(), "{e}");
    }

    // The GitHub server and external clients, as the CLI answers over the wire.
    assert_eq!(
        client.ok("session.mcp.removeGitHub", s(json!({}))).await,
        json!({"removed": false})
    );
    let github = "session.mcp.configureGitHub";
    assert_eq!(
        client
            .ok(
                github,
                s(json!({"authInfo": {"type": "token", "token": "t"}}))
            )
            .await,
        json!({"changed": false})
    );
    for (info, why) in [
        (json!({}), "unexpected auth info type: {}"),
        (json!("x"), "unexpected auth info type: \"x\""),
        (json!(3), "unexpected auth info type: 3"),
        (
            Value::Null,
            "Cannot read properties of null (reading 'type')",
        ),
    ] {
        assert_eq!(
            client.err(github, s(json!({"authInfo": info}))).await["message"],
            format!("Request session.mcp.configureGitHub failed with message: {why}")
        );
    }
    for (method, effect) in [
        ("registerExternalClient", "mcp_register_external_client"),
        ("unregisterExternalClient", "mcp_unregister_external_client"),
    ] {
        let e = client
            .err(
                &format!("session.mcp.{method}"),
                s(json!({"serverName": "ext", "client": {}, "transport": {}, "config": {}})),
            )
            .await;
        assert_eq!(
            e["message"],
            format!(
                "Request session.mcp.{method} failed with message: Unsupported native session host effect '{effect}'"
            )
        );
    }

    // MCP Apps without the `mcp-apps` capability.
    assert_eq!(
        client
            .ok("session.mcp.apps.getHostContext", s(json!({})))
            .await,
        json!({"context": {}})
    );
    let context = json!({"theme": "dark", "locale": "en-US", "extra": 1});
    assert_eq!(
        client
            .ok(
                "session.mcp.apps.setHostContext",
                s(json!({"context": context}))
            )
            .await,
        Value::Null
    );
    assert_eq!(
        client
            .ok("session.mcp.apps.getHostContext", s(json!({})))
            .await,
        json!({"context": context})
    );
    let huge = json!({"context": {"x": "y".repeat(100 * 1024)}});
    assert_eq!(
        client.err("session.mcp.apps.setHostContext", s(huge)).await["code"],
        -32602
    );
    let diagnosed = client
        .ok(
            "session.mcp.apps.diagnose",
            s(json!({"serverName": "demo"})),
        )
        .await;
    assert_eq!(
        diagnosed["capability"],
        json!({"sessionHasMcpApps": false, "featureFlagEnabled": false, "advertised": false})
    );
    assert_eq!(diagnosed["server"]["connected"], true);
    assert_eq!(diagnosed["server"]["toolsWithUiMeta"], 0);
    assert!(diagnosed["server"]["toolCount"].as_u64().unwrap() > 0);
    for (method, params) in [
        (
            "listTools",
            json!({"serverName": "demo", "originServerName": "demo"}),
        ),
        (
            "callTool",
            json!({"serverName": "demo", "originServerName": "demo", "toolName": "echo"}),
        ),
        (
            "readResource",
            json!({"serverName": "demo", "uri": "ui://x"}),
        ),
    ] {
        let e = client
            .err(&format!("session.mcp.apps.{method}"), s(params))
            .await;
        assert_eq!(
            e["message"],
            format!(
                "Request session.mcp.apps.{method} failed with message: The \"mcp-apps\" capability is not available in this session"
            )
        );
    }
}

#[tokio::test]
async fn mcp_apps_reach_only_their_own_server_and_the_tools_apps_may_call() {
    if server_everything().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the MCP servers are not installed: .ci/run must run conformance/mcp/install.sh"
        );
        println!("SKIP: install the MCP servers with `bash conformance/mcp/install.sh`");
        return;
    }
    let apps = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/mcp/apps-server.mjs");
    let url = server::serve_http().await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let servers = json!({
        "apps": {"type": "stdio", "command": "node", "args": [apps], "tools": ["*"]},
        "demo": {"type": "http", "url": url},
    });
    let (_t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let s = |extra: Value| with_session(&id, extra);
    let prefix = |method: &str| format!("Request session.mcp.apps.{method} failed with message: ");
    let own = json!({"serverName": "apps", "originServerName": "apps"});

    // Without the capability: refused.
    let e = client
        .err("session.mcp.apps.listTools", s(own.clone()))
        .await;
    assert_eq!(
        e["message"],
        format!(
            "{}The \"mcp-apps\" capability is not available in this session",
            prefix("listTools")
        )
    );
    let answer = client
        .ok(
            "session.options.update",
            s(json!({"sessionCapabilities": ["mcp-apps"]})),
        )
        .await;
    assert_eq!(answer, json!({"success": true}));

    let diagnosed = client
        .ok(
            "session.mcp.apps.diagnose",
            s(json!({"serverName": "apps"})),
        )
        .await;
    assert_eq!(
        diagnosed,
        json!({
            "capability": {"sessionHasMcpApps": true, "featureFlagEnabled": false, "advertised": true},
            "server": {"connected": true, "toolCount": 4, "toolsWithUiMeta": 3, "sampleToolNames": ["refresh", "secret", "show"]},
        })
    );
    // The model-only tool is left out; the others as the server described them, by name.
    let listed = client
        .ok("session.mcp.apps.listTools", s(own.clone()))
        .await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plain", "refresh", "show"]);
    assert_eq!(
        listed["tools"][1]["_meta"],
        json!({"ui": {"resourceUri": "ui://apps/view.html", "visibility": ["app"]}})
    );
    let e = client
        .err(
            "session.mcp.apps.listTools",
            s(json!({"serverName": "apps", "originServerName": "demo"})),
        )
        .await;
    assert_eq!(
        e["message"],
        format!(
            "{}Cross-server MCP App tools/list is not allowed: app loaded from \"demo\" cannot list tools on \"apps\"",
            prefix("listTools")
        )
    );
    let e = client
        .err(
            "session.mcp.apps.listTools",
            s(json!({"serverName": "apps"})),
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("originServerName is required"),
        "{e}"
    );

    // A call: the server's result, and the ephemeral announcement.
    let mut call = own.clone();
    call["toolName"] = json!("refresh");
    call["arguments"] = json!({"a": 1});
    let result = client.ok("session.mcp.apps.callTool", s(call)).await;
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "apps ran refresh with {\"a\":1}"}]})
    );
    let announced = client
        .events_until(common::no_answers, |e| {
            e["type"] == "mcp_app.tool_call_complete"
        })
        .await;
    let event = announced.last().unwrap();
    assert_eq!(event["ephemeral"], true);
    assert_eq!(event["data"]["toolName"], "refresh");
    assert_eq!(event["data"]["success"], true);
    assert_eq!(
        event["data"]["toolMeta"]["ui"]["visibility"],
        json!(["app"])
    );
    for (tool, why) in [
        (
            "secret",
            "Tool secret on apps is not callable from MCP Apps",
        ),
        ("nosuch", "MCP tool not found on apps: nosuch"),
    ] {
        let mut call = own.clone();
        call["toolName"] = json!(tool);
        let e = client.err("session.mcp.apps.callTool", s(call)).await;
        assert_eq!(e["message"], format!("{}{why}", prefix("callTool")));
    }

    // The view's bundle; a server the session does not have.
    let read = client
        .ok(
            "session.mcp.apps.readResource",
            s(json!({"serverName": "apps", "uri": "ui://apps/view.html"})),
        )
        .await;
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        read["contents"][0]["text"],
        "<html><body>view</body></html>"
    );
    let e = client
        .err(
            "session.mcp.apps.readResource",
            s(json!({"serverName": "nosuch", "uri": "ui://x"})),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().starts_with(&format!(
            "{}MCP server not connected: nosuch (",
            prefix("readResource")
        )),
        "{e}"
    );

    // Taken away again.
    client
        .ok(
            "session.options.update",
            s(json!({"sessionCapabilities": []})),
        )
        .await;
    let e = client.err("session.mcp.apps.listTools", s(own)).await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("capability is not available"),
        "{e}"
    );
}
