//! What a client reads of an open session and the few session and server services it starts,
//! over real TCP against the real server and a scripted model: `session.metadata.*` (the
//! snapshot, `isProcessing`, the context measured, a git context recorded in the journal),
//! `session.usage.getMetrics` (the same totals `session.shutdown` records), and the methods
//! answered with what holds for turnstile (`tools.list`, `sessions.open`, the refusals in
//! the runtime's words).

use crate::common;

use common::{TestServer, create, journal_lines, leave, of_type, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

#[tokio::test]
async fn usage_and_context_figures_follow_the_session_and_match_its_shutdown() {
    let script = Script::new().respond(ScriptedResponse::text("2+2 = 4").with_usage(120, 7));
    let (model, t, mut client) = with_model(script, |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let session = json!({"sessionId": id});

    let snapshot = client
        .ok("session.metadata.snapshot", session.clone())
        .await;
    assert_eq!(snapshot["sessionId"], id.as_str());
    assert_eq!(snapshot["currentMode"], "interactive");
    assert_eq!(snapshot["selectedModel"], "scripted-model");
    assert_eq!(
        (
            snapshot["isRemote"].clone(),
            snapshot["alreadyInUse"].clone()
        ),
        (json!(false), json!(false))
    );
    let work = t.work().canonicalize().unwrap();
    assert_eq!(
        snapshot["workingDirectory"],
        work.to_string_lossy().as_ref()
    );
    let dir = t.dir.path().join("state").join(&id);
    assert_eq!(snapshot["workspacePath"], dir.to_string_lossy().as_ref());
    assert_eq!(snapshot["workspace"]["id"], id.as_str());
    assert_eq!(
        client
            .ok("session.metadata.isProcessing", session.clone())
            .await,
        json!({"processing": false})
    );

    let before = client.ok("session.usage.getMetrics", session.clone()).await;
    assert_eq!(before["modelMetrics"], json!({}));
    assert_eq!(before["totalUserRequests"], 0);
    assert_eq!(before["sessionStartTime"], snapshot["startTime"]);

    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "What is 2+2?"}),
        )
        .await;
    let after = client.ok("session.usage.getMetrics", session.clone()).await;
    let scripted = &after["modelMetrics"]["scripted-model"];
    assert_eq!(scripted["requests"]["count"], 1);
    assert_eq!(scripted["usage"]["inputTokens"], 120);
    assert_eq!(scripted["usage"]["outputTokens"], 7);
    assert_eq!(
        (
            after["lastCallInputTokens"].clone(),
            after["lastCallOutputTokens"].clone()
        ),
        (json!(120), json!(7))
    );
    assert_eq!(after["totalUserRequests"], 1);

    let info = client
        .ok(
            "session.metadata.contextInfo",
            json!({"sessionId": id, "promptTokenLimit": 128_000, "outputTokenLimit": 4_096}),
        )
        .await["contextInfo"]
        .clone();
    let part = |key: &str| {
        info[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {info}"))
    };
    assert!(
        part("systemTokens") > 0 && part("conversationTokens") > 0,
        "{info}"
    );
    assert_eq!(
        part("totalTokens"),
        part("systemTokens") + part("conversationTokens") + part("toolDefinitionsTokens")
    );
    // No MCP server: none of the tool definitions are MCP tools'.
    assert_eq!(part("mcpToolsTokens"), 0);
    assert_eq!(info["modelName"], "scripted-model");
    // The session's thresholds (compaction at 80%, the buffer's edge at 95%) on the limits asked.
    assert_eq!(part("compactionThreshold"), 102_400);
    assert_eq!(part("limit"), 132_096);
    assert_eq!(part("bufferTokens"), 4_096 + 6_400);

    let recomputed = client
        .ok(
            "session.metadata.recomputeContextTokens",
            json!({"sessionId": id, "modelId": "scripted-model"}),
        )
        .await;
    assert_eq!(recomputed["systemTokenCount"], info["systemTokens"]);
    assert_eq!(recomputed["messagesTokenCount"], info["conversationTokens"]);
    assert_eq!(
        recomputed["totalTokens"].as_u64(),
        Some(part("systemTokens") + part("conversationTokens"))
    );

    // The figures are the ones the session records when it closes.
    leave(&t, client).await;
    let lines = journal_lines(&t.journal(&id));
    let shutdown = of_type(&lines, "session.shutdown");
    let recorded = &shutdown.last().expect("a session.shutdown")["data"];
    assert_eq!(recorded["modelMetrics"], after["modelMetrics"]);
    assert_eq!(
        recorded["codeChanges"]["linesAdded"],
        after["codeChanges"]["linesAdded"]
    );
}

#[tokio::test]
async fn a_context_change_is_journaled_only_for_the_sessions_own_directory() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let elsewhere = t.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let context = |cwd: &std::path::Path, branch: &str| {
        json!({"sessionId": id, "context": {
            "cwd": cwd.to_string_lossy(), "gitRoot": cwd.to_string_lossy(), "branch": branch,
            "repository": "owner/name", "repositoryHost": "github.com", "hostType": "github",
            "headCommit": "1111111111111111111111111111111111111111",
        }})
    };
    // Another directory than the session's: answered, nothing recorded.
    let ignored = client
        .ok(
            "session.metadata.recordContextChange",
            context(&elsewhere, "ignored"),
        )
        .await;
    assert_eq!(ignored, json!({}));
    let recorded = client
        .ok(
            "session.metadata.recordContextChange",
            context(&t.work(), "main"),
        )
        .await;
    assert_eq!(recorded, json!({}));
    // A field the schema does not have is refused by name.
    let mut bad = context(&t.work(), "main");
    bad["context"]["colour"] = json!("red");
    let error = client
        .err("session.metadata.recordContextChange", bad)
        .await;
    assert!(
        error["message"].as_str().unwrap().contains("colour"),
        "{error}"
    );

    leave(&t, client).await;
    let lines = journal_lines(&t.journal(&id));
    let changes: Vec<&Value> = of_type(&lines, "session.context_changed")
        .into_iter()
        .map(|l| &l["data"])
        .collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["branch"], "main");
    assert_eq!(changes[0]["cwd"], t.work().to_string_lossy().as_ref());
    assert_eq!(changes[0]["hostType"], "github");
}

#[tokio::test]
async fn session_services_answer_what_holds_and_check_their_params() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let session = json!({"sessionId": id});
    assert_eq!(
        client
            .ok("session.tools.initializeAndValidate", session.clone())
            .await,
        json!({})
    );
    let lsp = json!({"sessionId": id, "workingDirectory": t.work(), "force": true});
    assert_eq!(client.ok("session.lsp.initialize", lsp).await, Value::Null);
    let features = json!({"sessionId": id, "features": {"flag": "on"}});
    assert_eq!(
        client
            .ok("session.telemetry.setFeatureOverrides", features)
            .await,
        Value::Null
    );
    let not_text = json!({"sessionId": id, "features": {"flag": 1}});
    let error = client
        .err("session.telemetry.setFeatureOverrides", not_text)
        .await;
    assert!(
        error["message"].as_str().unwrap().contains("flag"),
        "{error}"
    );
    // A session that is not open is not found, as for every session method.
    let unknown = json!({"sessionId": "00000000-0000-4000-8000-000000000000"});
    let error = client
        .err("session.tools.initializeAndValidate", unknown)
        .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Session not found"),
        "{error}"
    );
}

#[tokio::test]
async fn server_methods_answer_in_the_runtimes_words() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;

    // The official client sends tools.list's params positionally.
    let tools = client.ok("tools.list", json!([null])).await["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"bash") && names.contains(&"view"),
        "{names:?}"
    );
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["description"].is_string() && t["parameters"].is_object())
    );

    let spawn = client
        .err("agentRegistry.spawn", json!({"cwd": t.work()}))
        .await;
    assert_eq!(spawn["code"], -32601);
    assert_eq!(
        spawn["message"],
        "agentRegistry.spawn is not enabled on this server"
    );
    let connect = client
        .err("sessions.connect", json!({"sessionId": "remote-x"}))
        .await;
    assert!(
        connect["message"]
            .as_str()
            .unwrap()
            .contains("No remote session found for 'remote-x'"),
        "{connect}"
    );
    let attach = client
        .err(
            "session.extensions.sendAttachmentsToMessage",
            json!({"sessionId": "x", "attachments": []}),
        )
        .await;
    assert_eq!(
        attach["data"]["code"],
        "extension_context_requires_extension_caller"
    );

    // Nothing on disk: nothing to resume.
    assert_eq!(
        client
            .ok("sessions.open", json!({"kind": "resumeLast"}))
            .await,
        json!({"status": "not_found"})
    );
    let other = client.err("sessions.open", json!({"kind": "create"})).await;
    assert_eq!(other["code"], -32602);
}

#[tokio::test]
async fn sessions_open_names_the_last_session_instead_of_claiming_none() {
    let script = Script::new().text("done");
    let (model, t, mut client) = with_model(script, |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hi"}),
        )
        .await;
    let found = client
        .err("sessions.open", json!({"kind": "resumeLast"}))
        .await;
    assert!(found["message"].as_str().unwrap().contains(&id), "{found}");
    // In another directory there is none.
    let elsewhere = json!({"kind": "resumeLast", "context": {"cwd": "/nowhere"}});
    assert_eq!(
        client.ok("sessions.open", elsewhere).await,
        json!({"status": "not_found"})
    );
    leave(&t, client).await;
}
