//! Options the SDK clients send, honoured end to end: `systemMessage`, `reasoningEffort`,
//! `tools[].skipPermission`, `defaultAgent.excludedTools` at create, `attachments` at send.
//! Real TCP, the real server and loop, the scripted model (which records what it was asked).

use crate::common;

use common::{TestServer, create_params, is_idle, journal_lines, no_answers};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn create_and_send_options_reach_the_loop() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("weather", json!({"city": "Paris"}))
            .text("sunny"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    std::fs::write(t.work().join("notes.txt"), "remember this\n").unwrap();
    let mut client = t.client().await;
    let created = client
        .ok(
            "session.create",
            create_params(
                &model.url(),
                json!({
                    "systemMessage": {"mode": "replace", "content": "You are a weather bot."},
                    "reasoningEffort": "high",
                    "requestPermission": true,
                    "defaultAgent": {"excludedTools": ["grep"]},
                    "tools": [{"name": "weather", "description": "Weather", "skipPermission": true}],
                }),
            ),
        )
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok(
            "session.send",
            json!({
                "sessionId": id,
                "prompt": "weather?",
                "attachments": [{"type": "file", "path": "notes.txt"}],
                "requestHeaders": {"x-trace": "1"},
            }),
        )
        .await;
    let events = client
        .events_until(no_answers, |e| e["type"] == "external_tool.requested")
        .await;
    // skipPermission: the client tool ran without a permission request.
    assert!(
        !events.iter().any(|e| e["type"] == "permission.requested"),
        "{events:?}"
    );
    let request = &events.last().unwrap()["data"];
    client
        .ok(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": request["requestId"], "result": "sunny"}),
        )
        .await;
    client.events_until(no_answers, is_idle).await;

    let asked = model.requests();
    let first = &asked[0];
    // systemMessage replace: the system prompt is the client's text.
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(first["messages"][0]["content"], "You are a weather bot.");
    // defaultAgent.excludedTools: grep is not offered; the client's tool is.
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"weather") && !offered.contains(&"grep"),
        "{offered:?}"
    );
    // The attachment is in the journal's user.message and in what the model read.
    let lines = journal_lines(&t.journal(&id));
    let user = lines.iter().find(|l| l["type"] == "user.message").unwrap();
    assert_eq!(
        user["data"]["attachments"][0]["displayName"], "notes.txt",
        "{user}"
    );
    assert!(
        first["messages"].to_string().contains("notes.txt"),
        "{}",
        first["messages"]
    );
    // reasoningEffort is recorded with the session.
    let start = lines.iter().find(|l| l["type"] == "session.start").unwrap();
    assert_eq!(start["data"]["reasoningEffort"], "high", "{start}");

    // A wrongly typed option is refused, naming it.
    let error = client
        .err(
            "session.send",
            json!({"sessionId": id, "prompt": "x", "requestHeaders": 5}),
        )
        .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("requestHeaders"),
        "{error}"
    );
    t.stop().await;
}
