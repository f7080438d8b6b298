//! The `session.mcp.*` methods beyond the servers themselves, through the SDK server over a
//! real socket: sampling run on the session's scripted model and cancelled; `$NAME` env
//! references expanded when a server starts (a real process reports what it got); a reload
//! reading the home's `mcp-config.json` again; `reloadWithConfig` replacing the servers.
//! OAuth, the GitHub server, external clients and MCP Apps: `mcp_oauth_apps.rs`.

use crate::common;
use crate::server;

use std::time::Duration;

use common::{create, mcp_session, server_everything};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

fn sampling(id: &str, request_id: &str, messages: Value) -> Value {
    json!({
        "sessionId": id,
        "requestId": request_id,
        "serverName": "demo",
        "mcpRequestId": 7,
        "request": {"messages": messages, "systemPrompt": "You are a test server.", "maxTokens": 20},
    })
}

fn user(text: &str) -> Value {
    json!([{"role": "user", "content": {"type": "text", "text": text}}])
}

#[tokio::test]
async fn sampling_runs_on_the_session_model_and_is_cancelled_by_its_id() {
    let url = server::serve_http().await;
    let script = Script::new()
        .text("sampled answer")
        .respond(ScriptedResponse::text("never").hang());
    let model = ScriptedServer::start(script).await.unwrap();
    let servers = json!({"demo": {"type": "http", "url": url}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;

    let answer = client
        .ok(
            "session.mcp.executeSampling",
            sampling(&id, "s1", user("Say hello.")),
        )
        .await;
    assert_eq!(answer["action"], "success");
    assert_eq!(answer["result"]["role"], "assistant");
    assert_eq!(answer["result"]["stopReason"], "endTurn");
    assert_eq!(
        answer["result"]["content"],
        json!({"type": "text", "text": "sampled answer"})
    );
    let request = model.requests().last().cloned().expect("a model request");
    assert_eq!(
        request["messages"],
        json!([{"role": "system", "content": "You are a test server."}, {"role": "user", "content": "Say hello."}])
    );
    assert!(request.get("tools").is_none(), "no tools: {request}");

    // Not ending with a user message: the runtime's failure, no model call.
    let before = model.requests().len();
    let answer = client
        .ok(
            "session.mcp.executeSampling",
            sampling(&id, "s2", json!([])),
        )
        .await;
    assert_eq!(
        answer,
        json!({"action": "failure", "error": "Sampling request must end with a user message"})
    );
    assert_eq!(model.requests().len(), before);

    // A call the model never answers, cancelled from a second connection.
    let mut waiting = t.client().await;
    let params = sampling(&id, "s3", user("hang"));
    let running =
        tokio::spawn(async move { waiting.ok("session.mcp.executeSampling", params).await });
    let cancel = json!({"sessionId": id, "requestId": "s3"});
    let mut cancelled = false;
    for _ in 0..200 {
        let answer = client
            .ok("session.mcp.cancelSamplingExecution", cancel.clone())
            .await;
        if answer["cancelled"] == true {
            cancelled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(cancelled, "the execution was never found running");
    let answer = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the cancelled call ends")
        .expect("the task");
    assert_eq!(answer, json!({"action": "cancelled"}));
    // Cancelled once: nothing runs under that id any more.
    assert_eq!(
        client
            .ok("session.mcp.cancelSamplingExecution", cancel)
            .await,
        json!({"cancelled": false})
    );
}

#[tokio::test]
async fn env_references_are_the_engines_variables_when_a_server_starts() {
    let url = server::serve_http().await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let servers = json!({"demo": {"type": "http", "url": url}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let answer = client
        .ok(
            "session.mcp.setEnvValueMode",
            json!({"sessionId": id, "mode": "indirect"}),
        )
        .await;
    assert_eq!(answer, json!({"mode": "indirect"}));
    let bogus = client
        .err(
            "session.mcp.setEnvValueMode",
            json!({"sessionId": id, "mode": "bogus"}),
        )
        .await;
    assert_eq!(bogus["code"], -32602);
    assert!(
        bogus["message"].as_str().unwrap().contains("mode"),
        "{bogus}"
    );

    // The server is a shell that writes what it was given, then becomes server-everything.
    let Some(everything) = server_everything() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "server-everything is not installed: .ci/run must run conformance/mcp/install.sh"
        );
        println!("SKIP: install server-everything with `bash conformance/mcp/install.sh`");
        return;
    };
    let out = t.dir.path().join("env.txt");
    let script = format!(
        "printf '%s|%s|%s|%s' \"$A\" \"$B\" \"$C\" \"$D\" > '{}'; exec node '{}' stdio",
        out.display(),
        everything.display()
    );
    let entry = json!({
        "type": "stdio",
        "command": "sh",
        "args": ["-c", script],
        "env": {"A": "$PATH", "B": "pre-${PATH}-post", "C": "${NO_SUCH_VARIABLE_HERE}", "D": "PATH"},
        "tools": ["*"],
    });
    let started = client
        .ok(
            "session.mcp.startServer",
            json!({"sessionId": id, "serverName": "envs", "config": entry}),
        )
        .await;
    assert_eq!(started, json!({}));
    let path = std::env::var("PATH").unwrap();
    let seen = std::fs::read_to_string(&out).expect("the server wrote its env");
    assert_eq!(
        seen,
        format!("{path}|pre-{path}-post|${{NO_SUCH_VARIABLE_HERE}}|PATH")
    );
    let running = client
        .ok(
            "session.mcp.isServerRunning",
            json!({"sessionId": id, "serverName": "envs"}),
        )
        .await;
    assert_eq!(running, json!({"running": true}));
}

#[tokio::test]
async fn a_reload_reads_the_home_configuration_again_and_reload_with_config_replaces_it() {
    let first = server::serve_http().await;
    let second = server::serve_http().await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let servers = json!({"demo": {"type": "http", "url": first}});
    let (t, mut client, id) = mcp_session(&model.url(), servers, |_| {}).await;
    let names = |list: &Value| -> Vec<(String, String)> {
        list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().into(),
                    s["status"].as_str().unwrap().into(),
                )
            })
            .collect()
    };

    // Written after the session started: the reload reads it (the client's server stays).
    std::fs::write(
        t.dir.path().join("mcp-config.json"),
        json!({"mcpServers": {"fromfile": {"type": "http", "url": second}, "off": {"type": "http", "url": second}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        t.dir.path().join("settings.json"),
        json!({"disabledMcpServers": ["off"]}).to_string(),
    )
    .unwrap();
    assert_eq!(
        client
            .ok("session.mcp.reload", json!({"sessionId": id}))
            .await,
        json!({})
    );
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(
        names(&listed),
        [
            ("demo".into(), "connected".into()),
            ("fromfile".into(), "connected".into())
        ]
    );

    // A damaged file is refused in the CLI's words, and nothing changes.
    let file = t.dir.path().join("mcp-config.json");
    let good = std::fs::read(&file).unwrap();
    std::fs::write(&file, r#"{"servers": {}}"#).unwrap();
    let refused = client
        .err("session.mcp.reload", json!({"sessionId": id}))
        .await;
    assert_eq!(
        refused["message"],
        format!(
            "Request session.mcp.reload failed with message: Failed to read configuration from {}: Error: mcpServers: Required",
            file.display()
        )
    );
    std::fs::write(&file, good).unwrap();
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(listed["servers"].as_array().unwrap().len(), 2);

    // A session never given a server has nothing to reload, as the CLI answers.
    let bare = create(&mut client, &model.url(), json!({})).await;
    let refused = client
        .err("session.mcp.reload", json!({"sessionId": bare}))
        .await;
    assert_eq!(refused["code"], -32603);
    assert_eq!(
        refused["message"],
        "Request session.mcp.reload failed with message: MCP config reload not available"
    );

    // The servers replaced by the given ones; then by none.
    let answer = client
        .ok(
            "session.mcp.reloadWithConfig",
            json!({"sessionId": id, "config": {"mcpServers": {"x": {"type": "http", "url": first}}}}),
        )
        .await;
    assert_eq!(
        answer,
        json!({"filteredServers": [], "allowedServers": [{"name": "x"}]})
    );
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(names(&listed), [("x".into(), "connected".into())]);
    let bad = client
        .err(
            "session.mcp.reloadWithConfig",
            json!({"sessionId": id, "config": {"mcpServers": {"y": {"type": "stdio"}}}}),
        )
        .await;
    assert_eq!(bad["code"], -32602);
    assert!(
        bad["message"].as_str().unwrap().contains("mcpServers.y"),
        "{bad}"
    );
    let answer = client
        .ok(
            "session.mcp.reloadWithConfig",
            json!({"sessionId": id, "config": {}}),
        )
        .await;
    assert_eq!(answer, json!({"filteredServers": [], "allowedServers": []}));
    let listed = client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    assert_eq!(listed["servers"], json!([]));
}
