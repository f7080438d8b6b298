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
