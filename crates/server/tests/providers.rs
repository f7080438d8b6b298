//! Each provider `type`/`wireApi` of `session.create` against the scripted model speaking that
//! wire format: a tool call and its result go round, the answer comes back, and the requests
//! are that API's (path, credential header, body shape). Real sockets throughout: a JSON-RPC
//! client, the server, the scripted model.

use crate::common;

use common::{GUARD, TestServer};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer, Wire};

/// A glob call, then a text answer.
fn script(wire: Wire) -> Script {
    Script::new()
        .wire(wire)
        .tool_call("glob", json!({"pattern": "*.txt"}))
        .text("There is one text file.")
}

/// Creates a session with `provider`, sends a prompt, returns the final answer's text.
async fn run(provider: Value) -> (String, TestServer) {
    let t = TestServer::start(TestServer::allow_all).await;
    std::fs::write(t.work().join("a.txt"), "x").unwrap();
    let mut client = t.client().await;
    let created = client
        .ok(
            "session.create",
            json!({"model": "scripted-model", "provider": provider}),
        )
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(
        GUARD,
        client.ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "how many text files?"}),
        ),
    )
    .await
    .unwrap();
    let text = done["response"]["data"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (text, t)
}

#[tokio::test]
async fn anthropic_messages_with_a_tool_round_trip() {
    let model = ScriptedServer::start(script(Wire::Anthropic))
        .await
        .unwrap();
    let (text, t) = run(json!({
        "type": "anthropic", "baseUrl": format!("http://{}", model.addr()),
        "apiKey": "sk-ant-test", "maxOutputTokens": 2048,
    }))
    .await;
    assert_eq!(text, "There is one text file.");
    let posts: Vec<_> = model
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 2);
    for post in &posts {
        assert_eq!(post.path, "/v1/messages");
        assert_eq!(post.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(post.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(post.header("authorization"), None);
        assert_eq!(post.body["max_tokens"], 2048);
        assert!(post.body["system"].as_str().is_some_and(|s| !s.is_empty()));
        let roles: Vec<&str> = post.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
        assert!(post.body["tools"][0]["input_schema"].is_object());
    }
    let second = &posts[1].body["messages"];
    let call = &second[1]["content"][0];
    assert_eq!(call["type"], "tool_use");
    assert_eq!(call["input"], json!({"pattern": "*.txt"}));
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], call["id"]);
    assert!(result["content"].as_str().unwrap().contains("a.txt"));
    t.stop().await;
}

#[tokio::test]
async fn openai_responses_with_a_tool_round_trip() {
    let model = ScriptedServer::start(script(Wire::Responses))
        .await
        .unwrap();
    let (text, t) = run(json!({
        "type": "openai", "wireApi": "responses", "baseUrl": model.url(),
        "bearerToken": "bt-responses", "headers": {"X-Gateway": "g1"},
    }))
    .await;
    assert_eq!(text, "There is one text file.");
    let posts: Vec<_> = model
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 2);
    for post in &posts {
        assert_eq!(post.path, "/v1/responses");
        assert_eq!(post.header("authorization"), Some("Bearer bt-responses"));
        assert_eq!(post.header("x-gateway"), Some("g1"));
        assert_eq!(post.body["store"], false);
        assert_eq!(post.body["tools"][0]["type"], "function");
        assert!(post.body["tools"][0]["name"].is_string());
    }
    let input = posts[1].body["input"].as_array().unwrap();
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["name"], "glob");
    assert!(call.get("id").is_none(), "no item id: {call}");
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["call_id"], call["call_id"]);
    assert!(output["output"].as_str().unwrap().contains("a.txt"));
    t.stop().await;
}

#[tokio::test]
async fn azure_responses_use_the_azure_route_and_key() {
    let model = ScriptedServer::start(Script::new().wire(Wire::Responses).text("from azure"))
        .await
        .unwrap();
    let (text, t) = run(json!({
        "type": "azure", "wireApi": "responses", "baseUrl": format!("http://{}", model.addr()),
        "apiKey": "az-key", "azure": {"apiVersion": "2025-03-01-preview"},
    }))
    .await;
    assert_eq!(text, "from azure");
    let post = &model.recorded()[0];
    assert_eq!(post.path, "/openai/responses");
    assert_eq!(post.query, "api-version=2025-03-01-preview");
    assert_eq!(post.header("api-key"), Some("az-key"));
    t.stop().await;
}
