//! The server's default model reached at the Copilot endpoint (as `COPILOT_API_URL` sets
//! it): `models.list` answers from its `GET /models`, sessions without a provider call its
//! `/chat/completions` with the GitHub token; BYOK options (Azure, bearer token, headers)
//! reach the wire. Real sockets throughout: a JSON-RPC client, the server, the scripted model.

use crate::common;

use common::{GUARD, TestServer};
use serde_json::json;
use turnstile_providers::ApiFlavor;
use turnstile_scripted_model::{Script, ScriptedServer};

fn copilot(model: &ScriptedServer) -> impl FnOnce(&mut turnstile_server::ServerConfig) {
    let base = format!("http://{}", model.addr());
    move |config| {
        config.default_model.base_url = base;
        config.default_model.flavor = ApiFlavor::Copilot;
        config.default_model.api_key = Some("gho_sdk_token".into());
        config.default_model.model = "gpt-5".into();
    }
}

#[tokio::test]
async fn models_list_answers_from_the_copilot_endpoint() {
    let model = ScriptedServer::start(Script::new().with_models(vec![json!({
        "id": "gpt-5", "name": "GPT-5",
        "capabilities": {"limits": {"max_context_window_tokens": 400000}, "supports": {"reasoning_effort": ["low", "high"]}},
        "policy": {"state": "enabled"},
    })]))
    .await
    .unwrap();
    let t = TestServer::start(copilot(&model)).await;
    let mut client = t.client().await;
    let listed = tokio::time::timeout(GUARD, client.ok("models.list", json!({})))
        .await
        .unwrap();
    assert_eq!(
        listed,
        json!({"models": [{"id": "gpt-5", "name": "GPT-5",
            "capabilities": {"supports": {"vision": false, "reasoningEffort": true}, "limits": {"max_context_window_tokens": 400000}},
            "policy": {"state": "enabled"},
            "supportedReasoningEfforts": ["low", "high"]}]})
    );
    let asked = model.recorded();
    assert_eq!(asked[0].path, "/models");
    assert_eq!(
        asked[0].header("authorization"),
        Some("Bearer gho_sdk_token")
    );
    t.stop().await;
}

#[tokio::test]
async fn a_session_without_provider_calls_the_copilot_endpoint() {
    let model = ScriptedServer::start(Script::new().text("hello from copilot"))
        .await
        .unwrap();
    let t = TestServer::start(copilot(&model)).await;
    let mut client = t.client().await;
    let created = client.ok("session.create", json!({})).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(
        GUARD,
        client.ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hi"}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(done["response"]["data"]["content"], "hello from copilot");
    let chat = model
        .recorded()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(chat.path, "/chat/completions");
    assert_eq!(chat.header("authorization"), Some("Bearer gho_sdk_token"));
    assert_eq!(
        chat.header("copilot-integration-id"),
        Some("copilot-developer-cli")
    );
    assert_eq!(chat.body["model"], "gpt-5");
    t.stop().await;
}

#[tokio::test]
async fn a_models_list_failure_is_an_rpc_error_naming_the_endpoint() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let base = format!("http://{}/gone", model.addr());
    let t = TestServer::start(move |config| {
        config.default_model.base_url = base;
        config.default_model.flavor = ApiFlavor::Copilot;
    })
    .await;
    let mut client = t.client().await;
    let error = client.err("models.list", json!({})).await;
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("/gone"), "{error}");
    assert!(message.contains("404"), "{error}");
    t.stop().await;
}

#[tokio::test]
async fn byok_azure_bearer_and_headers_reach_the_wire() {
    let model = ScriptedServer::start(Script::new().text("from azure"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok(
            "session.create",
            json!({
                "model": "gpt-4.1",
                "provider": {"type": "azure", "baseUrl": format!("http://{}", model.addr()),
                             "bearerToken": "az-bearer", "apiKey": "az-key",
                             "azure": {"apiVersion": "2024-10-21"},
                             "headers": {"X-Tenant": "t1"}},
            }),
        )
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(
        GUARD,
        client.ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hi"}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(done["response"]["data"]["content"], "from azure");
    let chat = &model.recorded()[0];
    assert_eq!(chat.path, "/openai/deployments/gpt-4.1/chat/completions");
    assert_eq!(chat.query, "api-version=2024-10-21");
    assert_eq!(chat.header("authorization"), Some("Bearer az-bearer"));
    assert_eq!(chat.header("api-key"), None);
    assert_eq!(chat.header("x-tenant"), Some("t1"));
    t.stop().await;
}
