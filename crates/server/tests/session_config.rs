//! Session settings of `session.create` and `session.resume` that change what the model is
//! sent: `excludedBuiltinAgents`/`includedBuiltinAgents` (the `task` tool's agent types),
//! `clientName` (the `User-Agent` to the Copilot endpoint), `instructionDirectories` (extra
//! instruction files in the system prompt); and a client's second goodbye to a session it
//! holds twice. Real TCP, the real server and loop, the scripted model (which records what it
//! was asked).

use crate::common;

use common::{Client, TestServer, create, create_params, is_idle, no_answers};
use serde_json::{Value, json};
use turnstile_providers::OpenAiConfig;
use turnstile_scripted_model::{Script, ScriptedServer};

/// Sends `prompt` to `id` and waits for the session to be idle.
async fn send(client: &mut Client, id: &str, prompt: &str) {
    client
        .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
        .await;
    client.events_until(no_answers, is_idle).await;
}

/// The `task` tool of a request, if offered.
fn task_tool(request: &Value) -> Option<&Value> {
    request["tools"]
        .as_array()?
        .iter()
        .find(|t| t["function"]["name"] == "task")
}

fn agent_types(request: &Value) -> Vec<String> {
    task_tool(request).expect("task offered")["function"]["parameters"]["properties"]["agent_type"]
        ["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_built_in_agent_policy_shapes_the_task_tool_at_create_and_resume() {
    let model = ScriptedServer::start(
        Script::new()
            .text("1 + 1 = 2")
            .text("2")
            // The model asks for the excluded type anyway: refused as an unknown one.
            .tool_call(
                "task",
                json!({"name": "n", "prompt": "look", "agent_type": "explore", "description": "Look"}),
            )
            .text("done")
            .text("only research"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;

    let baseline = create(&mut client, &model.url(), json!({})).await;
    send(&mut client, &baseline, "What is 1+1?").await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"excludedBuiltinAgents": ["explore"]}),
    )
    .await;
    send(&mut client, &id, "What is 1+1?").await;
    send(&mut client, &id, "Explore it").await;

    let asked = model.requests();
    assert!(agent_types(&asked[0]).contains(&"explore".to_owned()));
    let excluded = agent_types(&asked[1]);
    assert_eq!(
        excluded,
        [
            "task",
            "general-purpose",
            "code-review",
            "research",
            "security-review"
        ]
    );
    assert!(
        !task_tool(&asked[1]).unwrap()["function"]["description"]
            .as_str()
            .unwrap()
            .contains("- explore:")
    );
    // The tool result the model got for the excluded type.
    let answer = asked[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("Unknown agent_type: explore. Valid types are: task, general-purpose"),
        "{answer}"
    );

    // On resume, the new client's policy holds: only the included type, less none.
    client
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": baseline, "includedBuiltinAgents": ["research"]}),
            ),
        )
        .await;
    send(&mut client, &baseline, "Again").await;
    let asked = model.requests();
    assert_eq!(agent_types(asked.last().unwrap()), ["research"]);
}

#[tokio::test]
async fn no_agent_type_left_means_no_task_tool() {
    let model = ScriptedServer::start(Script::new().text("ok"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"includedBuiltinAgents": ["explore"], "excludedBuiltinAgents": ["explore"]}),
    )
    .await;
    send(&mut client, &id, "hi").await;
    let asked = model.requests();
    assert!(task_tool(&asked[0]).is_none());
    assert!(asked[0]["tools"].as_array().unwrap().len() > 1);
}

#[tokio::test]
async fn the_client_name_is_told_to_the_copilot_endpoint() {
    let model = ScriptedServer::start(Script::new().text("2").text("3"))
        .await
        .unwrap();
    let url = format!("http://{}", model.addr());
    let t = TestServer::start(move |config| {
        config.default_model = OpenAiConfig::copilot(url, "claude-sonnet-4.5", None);
    })
    .await;
    let mut client = t.client().await;
    let named = client
        .ok(
            "session.create",
            json!({"clientName": "ts-public-surface-client"}),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    send(&mut client, &named, "What is 1+1?").await;
    let plain = client.ok("session.create", json!({})).await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    send(&mut client, &plain, "What is 1+2?").await;

    let agents: Vec<String> = model
        .recorded()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| {
            r.headers
                .iter()
                .find(|(name, _)| name == "user-agent")
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(agents.len(), 2, "{agents:?}");
    assert!(
        agents[0].contains("(client/ts-public-surface-client; Copilot CLI protocol"),
        "{}",
        agents[0]
    );
    assert!(!agents[1].contains("client/"), "{}", agents[1]);
}

#[tokio::test]
async fn instruction_directories_join_the_prompt_at_create_and_resume() {
    let model = ScriptedServer::start(Script::new().text("2").text("2").text("2"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let project = t.work().join("project");
    let extra = t.work().join("extra");
    let rules = extra.join(".github/instructions");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(rules.join("ts")).unwrap();
    std::fs::write(
        rules.join("extra.instructions.md"),
        "Always include CREATE_SENTINEL.",
    )
    .unwrap();
    std::fs::write(
        rules.join("ts/style.instructions.md"),
        "---\napplyTo: \"**/*.ts\"\n---\nSCOPED_SENTINEL",
    )
    .unwrap();
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"workingDirectory": "project", "instructionDirectories": [extra]}),
    )
    .await;
    send(&mut client, &id, "What is 1+1?").await;
    let plain = create(
        &mut client,
        &model.url(),
        json!({"workingDirectory": "project"}),
    )
    .await;
    send(&mut client, &plain, "What is 1+1?").await;

    let system = |request: &Value| {
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let asked = model.requests();
    let first = system(&asked[0]);
    assert!(first.contains("Always include CREATE_SENTINEL."), "{first}");
    // A file for a pattern is listed with its path, not inlined.
    assert!(!first.contains("SCOPED_SENTINEL"));
    let listed = format!(
        "| **/*.ts | '{}' |  |",
        rules.join("ts/style.instructions.md").display()
    );
    assert!(first.contains(&listed), "{first}");
    assert!(!system(&asked[1]).contains("CREATE_SENTINEL"));

    // The session without them gets them on resume (a relative directory is the working
    // directory's), read when the prompt is built: a file written since is in.
    std::fs::write(rules.join("later.instructions.md"), "RESUME_SENTINEL too.").unwrap();
    client
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": plain, "workingDirectory": "project",
                       "instructionDirectories": ["../extra"]}),
            ),
        )
        .await;
    send(&mut client, &plain, "What is 1+1?").await;
    let last = system(model.requests().last().unwrap());
    assert!(
        last.contains("Always include CREATE_SENTINEL.") && last.contains("RESUME_SENTINEL too."),
        "{last}"
    );
}

#[tokio::test]
async fn a_second_goodbye_to_a_closed_session_succeeds() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    // The same client holds it twice (create, then resume), and says goodbye with each.
    client
        .ok(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    let bye = client.ok("session.destroy", json!({"sessionId": id})).await;
    assert_eq!(bye, json!({"success": true}));
    assert_eq!(t.server.open_sessions(), 0);
    let again = client.ok("session.destroy", json!({"sessionId": id})).await;
    assert_eq!(again, json!({"success": true}));
    // The journal stays, and the session can be resumed.
    assert!(t.journal(&id).is_file());
    client
        .ok(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    assert_eq!(t.server.open_sessions(), 1);
    // A session that never was is still unknown.
    client
        .err(
            "session.destroy",
            json!({"sessionId": "0b5e0a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b"}),
        )
        .await;
}

/// Whether a request carries a picture (an `image_url` part in a user message).
fn has_image(request: &Value) -> bool {
    request["messages"].as_array().unwrap().iter().any(|m| {
        m["role"] == "user"
            && m["content"]
                .as_array()
                .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
    })
}

#[tokio::test]
async fn vision_off_keeps_pictures_out_until_switched_on_and_back() {
    // 1x1 PNG.
    const PNG: [u8; 70] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64,
        0xf8, 0xcf, 0x50, 0x0f, 0x00, 0x03, 0x86, 0x01, 0x80, 0x5a, 0x34, 0x7d, 0x6b, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("view", json!({"path": "test.png"}))
            .text("cannot see it")
            .tool_call("view", json!({"path": "test.png"}))
            .text("a dot")
            .text("still there"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    std::fs::write(t.work().join("test.png"), PNG).unwrap();
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"modelCapabilities": {"supports": {"vision": false}}}),
    )
    .await;
    send(&mut client, &id, "Look at test.png").await;
    let switch = |vision: bool| {
        json!({"sessionId": id, "modelId": "scripted-model",
               "modelCapabilities": {"supports": {"vision": vision}}})
    };
    client.ok("session.model.switchTo", switch(true)).await;
    send(&mut client, &id, "Look again").await;
    client.ok("session.model.switchTo", switch(false)).await;
    send(&mut client, &id, "And now?").await;

    let asked = model.requests();
    assert_eq!(asked.len(), 5);
    // Vision off: the view result went to the model as text only.
    assert!(!has_image(&asked[1]));
    let result = asked[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["content"], "Viewed image file successfully.");
    // Vision on: both pictures, the first view's included, go with the requests.
    let pictures = |request: &Value| {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user" && m["content"].is_array())
            .count()
    };
    assert!(has_image(&asked[2]) && has_image(&asked[3]));
    assert_eq!(pictures(&asked[3]), 2);
    // Off again: none, though the journal keeps them.
    assert!(!has_image(&asked[4]));
}

/// The `<session_limits_status>` messages of a request, in order.
fn limits_statuses(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("<session_limits_status>"))
        .map(str::to_owned)
        .collect()
}

/// The `sessionLimits` of the journal's `session.start` and `session.resume` lines.
fn recorded_limits(t: &TestServer, id: &str) -> Vec<(String, Value)> {
    common::journal_lines(&t.journal(id))
        .into_iter()
        .filter(|e| e["type"] == "session.start" || e["type"] == "session.resume")
        .map(|e| {
            let kind = e["type"].as_str().unwrap().to_owned();
            (kind, e["data"]["sessionLimits"].clone())
        })
        .collect()
}

#[tokio::test]
async fn session_limits_close_each_call_and_stay_on_resume() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("glob", json!({"pattern": "*"}))
            .text("ok")
            .text("again")
            .text("resumed")
            .text("plain")
            .text("limited now"),
    )
    .await
    .unwrap();
    let t = TestServer::start(TestServer::allow_all).await;
    let mut client = t.client().await;
    let limited = create(
        &mut client,
        &model.url(),
        json!({"sessionLimits": {"maxAiCredits": 30}}),
    )
    .await;
    send(&mut client, &limited, "Acknowledge the limits.").await;
    send(&mut client, &limited, "Again.").await;
    let status = "<session_limits_status>\nRemaining session limits: 30 AI credits. Later \
                  session_limits_status messages supersede earlier ones. Be frugal; avoid \
                  optional exploration and unnecessary tool calls.\n</session_limits_status>";
    let asked = model.requests();
    // Every main call ends with one status; none stays in the history of the next.
    for request in &asked[..3] {
        assert_eq!(limits_statuses(request), [status]);
        let last = request["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["content"], status);
    }

    // A resume naming no limits keeps the journal's; so does one naming others.
    client
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": limited, "sessionLimits": {"maxAiCredits": 100}}),
            ),
        )
        .await;
    send(&mut client, &limited, "Resumed.").await;
    assert_eq!(limits_statuses(&model.requests()[3]), [status]);
    assert_eq!(
        recorded_limits(&t, &limited),
        [
            ("session.start".into(), json!({"maxAiCredits": 30})),
            ("session.resume".into(), json!({"maxAiCredits": 30})),
        ]
    );

    // A session without limits takes the resume's.
    let plain = create(&mut client, &model.url(), json!({})).await;
    send(&mut client, &plain, "Plain.").await;
    assert!(limits_statuses(&model.requests()[4]).is_empty());
    client
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": plain, "sessionLimits": {"maxAiCredits": 2.5}}),
            ),
        )
        .await;
    send(&mut client, &plain, "Limited now.").await;
    let statuses = limits_statuses(&model.requests()[5]);
    assert_eq!(statuses.len(), 1);
    assert!(
        statuses[0].contains("Remaining session limits: 2.5 AI credits."),
        "{statuses:?}"
    );
    assert_eq!(
        recorded_limits(&t, &plain),
        [
            ("session.start".into(), Value::Null),
            ("session.resume".into(), json!({"maxAiCredits": 2.5})),
        ]
    );

    // A limit that is no positive number is refused.
    let refused = client
        .err(
            "session.create",
            create_params(&model.url(), json!({"sessionLimits": {"maxAiCredits": 0}})),
        )
        .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("Session limit must be a finite number of AI credits."),
        "{refused}"
    );
}

/// A PDF attachment of `session.send`.
fn pdf() -> Value {
    json!({
        "type": "blob",
        // "%PDF-1.4\n%%EOF\n"
        "data": "JVBERi0xLjQKJSVFT0YK",
        "displayName": "citation-source.pdf",
        "mimeType": "application/pdf",
    })
}

/// The `document` blocks of an Anthropic request.
fn documents(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "document")
        .cloned()
        .collect()
}

#[tokio::test]
async fn citations_title_and_cite_the_documents_sent_to_anthropic() {
    let model = ScriptedServer::start(Script::new().text("cited").text("plain").text("resumed"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let anthropic = |extra: Value| {
        let mut params = json!({
            "model": "claude-sonnet-4.5",
            "provider": {"type": "anthropic", "baseUrl": model.url(), "apiKey": "k"},
        });
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let send_pdf = async |client: &mut Client, id: &str| {
        client
            .ok(
                "session.send",
                json!({"sessionId": id, "prompt": "Summarize it.", "attachments": [pdf()]}),
            )
            .await;
        client.events_until(no_answers, is_idle).await;
    };
    let cited = client
        .ok(
            "session.create",
            anthropic(json!({"enableCitations": true})),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    send_pdf(&mut client, &cited).await;
    let plain = client.ok("session.create", anthropic(json!({}))).await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    send_pdf(&mut client, &plain).await;

    let source =
        json!({"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQKJSVFT0YK"});
    let asked = model.requests();
    assert_eq!(
        documents(&asked[0]),
        [
            json!({"type": "document", "source": source, "title": "citation-source.pdf",
                "citations": {"enabled": true}})
        ]
    );
    assert_eq!(
        documents(&asked[1]),
        [json!({"type": "document", "source": source})]
    );

    // A resume that enables citations sends the session's document cited.
    client
        .ok(
            "session.resume",
            anthropic(json!({"sessionId": plain, "enableCitations": true})),
        )
        .await;
    send(&mut client, &plain, "And now?").await;
    let resumed = documents(&model.requests()[2]);
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["citations"], json!({"enabled": true}));
}

#[tokio::test]
async fn the_github_tool_config_goes_in_its_headers_and_stays_on_resume() {
    // The Copilot endpoint is the scripted model: it records the GitHub server's requests
    // (and answers none of them as MCP).
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let url = format!("http://{}", model.addr());
    let t = TestServer::start(move |config| {
        config.default_model = OpenAiConfig::copilot(url, "scripted-model", Some("gh".into()));
    })
    .await;
    let mut client = t.client().await;
    let github = |path: &'static str| {
        let recorded = model.recorded();
        recorded
            .into_iter()
            .filter(move |r| r.method == "POST" && r.path == path)
            .collect::<Vec<_>>()
    };
    let id = client
        .ok(
            "session.create",
            json!({
                "enableConfigDiscovery": true,
                "githubMcpToolConfig": {
                    "enableAllTools": true,
                    "additionalToolsets": ["actions"],
                    "additionalTools": ["get_me"],
                    "enableInsidersMode": true,
                    "disableFormDeferral": true,
                },
            }),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    common::eventually(|| !github("/mcp").is_empty()).await;
    let first = &github("/mcp")[0];
    assert_eq!(first.header("x-mcp-toolsets"), Some("all"));
    assert_eq!(first.header("x-mcp-insiders"), Some("true"));
    assert_eq!(first.header("x-mcp-host"), Some("copilot-cli"));
    assert_eq!(first.header("x-mcp-tools"), None);
    assert_eq!(first.header("authorization"), Some("Bearer gh"));
    let start = &common::journal_lines(&t.journal(&id))[0];
    assert_eq!(
        start["data"]["githubMcpToolConfig"]["enableAllTools"],
        json!(true)
    );

    // A resume that names no config keeps the one `session.start` recorded.
    let before = github("/mcp").len();
    client
        .ok(
            "session.resume",
            json!({"sessionId": id, "enableConfigDiscovery": true}),
        )
        .await;
    client
        .ok("session.mcp.list", json!({"sessionId": id}))
        .await;
    common::eventually(|| github("/mcp").len() > before).await;
    assert!(github("/mcp/readonly").is_empty());

    // A session without a config gets the read-only server and its default tools.
    let plain = client
        .ok("session.create", json!({"enableConfigDiscovery": true}))
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client
        .ok("session.mcp.list", json!({"sessionId": plain}))
        .await;
    common::eventually(|| !github("/mcp/readonly").is_empty()).await;
    let readonly = &github("/mcp/readonly")[0];
    assert!(
        readonly
            .header("x-mcp-tools")
            .is_some_and(|t| t.starts_with("get_file_contents,")),
        "{readonly:?}"
    );
    assert_eq!(readonly.header("x-mcp-toolsets"), None);
}
