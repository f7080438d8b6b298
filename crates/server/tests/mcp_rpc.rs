//! `session.mcp.startServer|stopServer|restartServer|isServerRunning` and
//! `session.mcp.resources.*` through the SDK server, against real servers: the rmcp test
//! server (streamable HTTP on 127.0.0.1) stopped, started and restarted while a session runs,
//! the model's requests following; and the reference `@modelcontextprotocol/server-everything`
//! on stdio with node: its resources listed and read, its process killed (the server is no
//! longer running, its resources not reachable) and restarted.

use crate::common;
use crate::server;

use common::{
    Client, children_running, is_idle, journal_lines, mcp_session, no_answers, server_everything,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .filter(|n| n.starts_with("demo-") || n.starts_with("extra-"))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Sends a prompt and returns the events seen until the session is idle (those of the
/// calls before it too).
async fn send(client: &mut Client, id: &str, prompt: &str) -> Vec<Value> {
    client
        .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
        .await;
    client.events_until(no_answers, is_idle).await
}

#[tokio::test]
async fn servers_are_stopped_started_and_restarted_while_the_session_runs() {
    let url = server::serve_http().await;
    let model = ScriptedServer::start(Script::new().text("one").text("two").text("three"))
        .await
        .unwrap();
    let servers = json!({"demo": {"type": "http", "url": url}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let named = |name: &str| json!({"sessionId": id, "serverName": name});
    let running = |answer: Value| answer["running"].as_bool().unwrap();

    assert!(running(
        client
            .ok("session.mcp.isServerRunning", named("demo"))
            .await
    ));
    assert!(!running(
        client
            .ok("session.mcp.isServerRunning", named("nosuch"))
            .await
    ));
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(listed["host"]["clients"], json!(["demo"]));

    // Stopped: not running, `not_configured` as the runtime says, no tools offered.
    assert_eq!(
        client.ok("session.mcp.stopServer", named("demo")).await,
        json!({})
    );
    assert!(!running(
        client
            .ok("session.mcp.isServerRunning", named("demo"))
            .await
    ));
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(listed["servers"][0]["status"], "not_configured");
    assert_eq!(listed["host"]["clients"], json!([]));
    // A second stop and a stop of an unknown name answer `{}` too.
    assert_eq!(
        client.ok("session.mcp.stopServer", named("demo")).await,
        json!({})
    );
    assert_eq!(
        client.ok("session.mcp.stopServer", named("nosuch")).await,
        json!({})
    );
    let mut events = send(&mut client, &id, "after the stop").await;

    // Started again by name; a start of a running server is left alone; an unknown name
    // without a config is the runtime's error.
    assert_eq!(
        client.ok("session.mcp.startServer", named("demo")).await,
        json!({})
    );
    assert!(running(
        client
            .ok("session.mcp.isServerRunning", named("demo"))
            .await
    ));
    assert_eq!(
        client.ok("session.mcp.startServer", named("demo")).await,
        json!({})
    );
    let unknown = client.err("session.mcp.startServer", named("nosuch")).await;
    assert_eq!(unknown["code"], -32603);
    assert_eq!(
        unknown["message"],
        "Request session.mcp.startServer failed with message: Cannot start MCP server \"nosuch\": no configuration is registered for it"
    );
    let unknown = client
        .err("session.mcp.restartServer", named("nosuch"))
        .await;
    assert_eq!(
        unknown["message"],
        "Request session.mcp.restartServer failed with message: Cannot restart MCP server \"nosuch\": no configuration is registered for it"
    );
    // A new server from a config; a bad config names its field.
    let extra =
        json!({"sessionId": id, "serverName": "extra", "config": {"type": "http", "url": url}});
    assert_eq!(client.ok("session.mcp.startServer", extra).await, json!({}));
    let bad = json!({"sessionId": id, "serverName": "bad", "config": {"type": "stdio"}});
    let bad = client.err("session.mcp.startServer", bad).await;
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("mcpServers.bad.command"),
        "{bad}"
    );
    assert_eq!(
        client.ok("session.mcp.restartServer", named("demo")).await,
        json!({})
    );
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    // Restarted last, as the runtime orders them.
    assert_eq!(listed["host"]["clients"], json!(["extra", "demo"]));
    events.extend(send(&mut client, &id, "after the starts").await);

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        tool_names(&requests[0]).is_empty(),
        "{:?}",
        tool_names(&requests[0])
    );
    let offered = tool_names(&requests[1]);
    assert!(offered.contains(&"demo-echo".to_owned()), "{offered:?}");
    assert!(offered.contains(&"extra-echo".to_owned()), "{offered:?}");

    let live = |kind: &str| events.iter().filter(|e| e["type"] == kind).count();
    // Announced before each request whose tools differ from the last one's.
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(live("session.tools_updated") >= 2, "{kinds:?}");
    let journal = journal_lines(&t.journal(&id));
    assert!(
        journal
            .iter()
            .all(|e| e["type"] != "session.mcp_server_status_changed")
    );
    let statuses: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "session.mcp_server_status_changed")
        .map(|e| {
            let d = &e["data"];
            format!(
                "{}:{}",
                d["serverName"].as_str().unwrap(),
                d["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "demo:connected",
            "demo:not_configured",
            "demo:pending",
            "demo:connected",
            "extra:pending",
            "extra:connected",
            "demo:not_configured",
            "demo:pending",
            "demo:connected",
        ]
    );
    t.stop().await;
}

#[tokio::test]
async fn server_everything_resources_are_listed_and_read_and_a_killed_server_restarts() {
    let Some(entry) = server_everything() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "server-everything is not installed: .ci/run must run conformance/mcp/install.sh"
        );
        println!("SKIP: install server-everything with `bash conformance/mcp/install.sh`");
        return;
    };
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    // A word of this test's own after the transport (the server reads only the first): other
    // tests of this process run server-everything at the same time, and the processes are
    // told apart by their command line.
    let needle = "killed-server-restarts";
    let servers = json!({"everything": {"command": "node", "args": [entry, "stdio", needle]}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let on = |extra: Value| {
        let mut p = json!({"sessionId": id, "serverName": "everything"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };

    let page = client.ok("session.mcp.resources.list", on(json!({}))).await;
    let resources = page["resources"].as_array().unwrap();
    assert!(!resources.is_empty(), "{page}");
    let architecture = resources
        .iter()
        .find(|r| r["name"] == "architecture.md")
        .unwrap_or_else(|| panic!("{page}"));
    assert_eq!(architecture["mimeType"], "text/markdown");
    assert!(
        page.as_object()
            .unwrap()
            .keys()
            .all(|k| k == "resources" || k == "nextCursor")
    );
    let templates = client
        .ok("session.mcp.resources.listTemplates", on(json!({})))
        .await;
    let uris: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&"demo://resource/dynamic/text/{resourceId}"),
        "{uris:?}"
    );
    let read = client
        .ok(
            "session.mcp.resources.read",
            on(json!({"uri": architecture["uri"]})),
        )
        .await;
    assert_eq!(read.as_object().unwrap().len(), 1, "{read}");
    assert_eq!(read["contents"][0]["uri"], architecture["uri"]);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Architecture")
    );
    let dynamic = client
        .ok(
            "session.mcp.resources.read",
            on(json!({"uri": "demo://resource/dynamic/text/7"})),
        )
        .await;
    assert!(dynamic["contents"][0]["text"].is_string(), "{dynamic}");
    let missing = client
        .err(
            "session.mcp.resources.read",
            on(json!({"uri": "demo://nosuch/1"})),
        )
        .await;
    assert_eq!(missing["code"], -32603);
    let text = missing["message"].as_str().unwrap();
    assert!(
        text.starts_with("Request session.mcp.resources.read failed with message: MCP resources/read failed for everything (demo://nosuch/1): ")
            && text.contains("not found"),
        "{text}"
    );
    let unknown = client
        .err(
            "session.mcp.resources.list",
            json!({"sessionId": id, "serverName": "nosuch"}),
        )
        .await;
    assert_eq!(
        unknown["message"],
        "Request session.mcp.resources.list failed with message: MCP server not connected: nosuch"
    );

    // The server dies: it is no longer running and its resources cannot be reached; a
    // restart brings a new process.
    let pids = children_running(needle);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let named = json!({"sessionId": id, "serverName": "everything"});
    // A guard against a wait without end, not a timing: the engine learns of the death
    // when the pipe closes.
    let mut gone = false;
    for _ in 0..3_000 {
        let answer = client
            .ok("session.mcp.isServerRunning", named.clone())
            .await;
        if answer["running"] == false {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(gone, "a killed server is not running");
    let unreachable = client
        .err("session.mcp.resources.list", on(json!({})))
        .await;
    assert!(
        unreachable["message"]
            .as_str()
            .unwrap()
            .contains("not connected"),
        "{unreachable}"
    );
    assert_eq!(
        client.ok("session.mcp.restartServer", named.clone()).await,
        json!({})
    );
    assert_eq!(
        client
            .ok("session.mcp.isServerRunning", named.clone())
            .await["running"],
        true
    );
    let again = children_running(needle);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_ne!(again[0], pids[0]);
    let page = client.ok("session.mcp.resources.list", on(json!({}))).await;
    assert!(!page["resources"].as_array().unwrap().is_empty());
    t.stop().await;
    assert!(
        children_running(needle).is_empty(),
        "the session's stop stops its server"
    );
}
