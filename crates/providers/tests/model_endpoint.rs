//! What goes on the wire for each kind of endpoint, checked on the scripted server's record of
//! every request: the Copilot endpoint (`COPILOT_API_URL`: path, GitHub token, identifying
//! headers, `reasoning_effort`, `GET /models`), BYOK credentials (bearer token over key, key
//! command), provider and per-call headers, and Azure deployment URLs.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_providers::{
    ApiFlavor, ChatMessage, ChatRequest, KeyCommand, ModelErrorKind, ModelProvider, OpenAiConfig,
    OpenAiProvider, list_models,
};
use turnstile_scripted_model::{RecordedRequest, Script, ScriptedServer};

/// Failure guard: a test that takes this long is broken, not slow.
const GUARD: Duration = Duration::from_secs(30);

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user("hi")],
        stream: true,
        reasoning_effort: Some("high".into()),
        headers: vec![
            ("X-Per-Send".into(), "abc".into()),
            ("X-Both".into(), "from-send".into()),
        ],
        ..Default::default()
    }
}

async fn ask(config: OpenAiConfig) -> Result<String, turnstile_providers::ModelError> {
    let provider = OpenAiProvider::new(config).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    tokio::time::timeout(
        GUARD,
        provider.complete(&request(), tx, CancellationToken::new()),
    )
    .await
    .expect("within the guard")
    .map(|r| r.content)
}

fn chat_request(server: &ScriptedServer) -> RecordedRequest {
    let mut chats: Vec<RecordedRequest> = server
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(chats.len(), 1, "{chats:?}");
    chats.remove(0)
}

fn base(server: &ScriptedServer) -> String {
    format!("http://{}", server.addr())
}

#[tokio::test]
async fn the_copilot_endpoint_gets_what_the_copilot_cli_sends() {
    let server = ScriptedServer::start(Script::new().text("hello"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::copilot(base(&server), "gpt-5", Some("gho_token".into()));
    config.headers = vec![("X-Both".into(), "from-provider".into())];
    assert_eq!(ask(config).await.unwrap(), "hello");
    let sent = chat_request(&server);
    assert_eq!(sent.path, "/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer gho_token"));
    assert_eq!(
        sent.header("copilot-integration-id"),
        Some("copilot-developer-cli")
    );
    assert_eq!(sent.header("openai-intent"), Some("conversation-agent"));
    assert!(sent.header("x-interaction-id").is_some());
    assert_eq!(sent.header("x-per-send"), Some("abc"));
    // The call's own header beats the provider's.
    assert_eq!(sent.header("x-both"), Some("from-send"));
    assert_eq!(sent.body["reasoning_effort"], "high");
    assert_eq!(sent.body["model"], "gpt-5");
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn a_byok_provider_gets_no_reasoning_effort_and_its_bearer_token_wins() {
    let server = ScriptedServer::start(Script::new().text("ok"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(server.url(), "gpt-5");
    config.api_key = Some("sk-key".into());
    config.bearer_token = Some("bt-token".into());
    config.headers = vec![("X-Provider-H".into(), "p1".into())];
    ask(config).await.unwrap();
    let sent = chat_request(&server);
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer bt-token"));
    assert_eq!(sent.header("x-provider-h"), Some("p1"));
    assert_eq!(sent.header("x-per-send"), Some("abc"));
    assert_eq!(sent.header("copilot-integration-id"), None);
    assert!(sent.body.get("reasoning_effort").is_none(), "{}", sent.body);
}

#[tokio::test]
async fn a_key_command_supplies_the_key_of_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("runs");
    let server = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(server.url(), "m");
    config.api_key = Some("static-key".into());
    // Prints a different key each run: proves it runs per call, not once.
    config.api_key_command = Some(KeyCommand::new(format!(
        "echo x >> '{0}'; printf 'key-%s' \"$(wc -l < '{0}' | tr -d ' ')\"",
        counter.display()
    )));
    let provider = OpenAiProvider::new(config).unwrap();
    for _ in 0..2 {
        let (tx, _rx) = mpsc::unbounded_channel();
        provider
            .complete(&request(), tx, CancellationToken::new())
            .await
            .unwrap();
    }
    let keys: Vec<String> = server
        .recorded()
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(keys, ["Bearer key-1", "Bearer key-2"]);
}

#[tokio::test]
async fn a_failing_key_command_fails_the_call_before_anything_is_sent() {
    let server = ScriptedServer::start(Script::new().text("never"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(server.url(), "m");
    config.api_key_command = Some(KeyCommand::new("echo 'vault is sealed' >&2; exit 1"));
    let error = ask(config).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert!(error.message.contains("vault is sealed"), "{error}");
    assert!(server.recorded().is_empty());
}

#[tokio::test]
async fn a_header_that_http_cannot_carry_is_a_config_error() {
    let server = ScriptedServer::start(Script::new().text("never"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(server.url(), "m");
    config.headers = vec![("X-Bad".into(), "line\nbreak".into())];
    let error = ask(config).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert!(error.message.contains("X-Bad"), "{error}");
    assert!(server.recorded().is_empty());
}

#[tokio::test]
async fn azure_gets_its_deployment_url_and_api_key_header() {
    let server = ScriptedServer::start(Script::new().text("az").text("az"))
        .await
        .unwrap();
    let mut config = OpenAiConfig::new(base(&server), "gpt-4.1");
    config.flavor = ApiFlavor::Azure {
        api_version: Some("2024-10-21".into()),
    };
    config.api_key = Some("az-key".into());
    assert_eq!(ask(config.clone()).await.unwrap(), "az");
    config.flavor = ApiFlavor::Azure { api_version: None };
    assert_eq!(ask(config).await.unwrap(), "az");
    let sent = server.recorded();
    assert_eq!(
        (sent[0].path.as_str(), sent[0].query.as_str()),
        (
            "/openai/deployments/gpt-4.1/chat/completions",
            "api-version=2024-10-21"
        )
    );
    assert_eq!(sent[0].header("api-key"), Some("az-key"));
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(sent[1].path, "/openai/v1/chat/completions");
}

#[tokio::test]
async fn models_are_listed_from_the_copilot_endpoint() {
    let server = ScriptedServer::start(Script::new().with_models(vec![
        json!({"id": "gpt-5", "name": "GPT-5", "vendor": "v",
               "capabilities": {"limits": {"max_context_window_tokens": 400000}, "supports": {"vision": true, "reasoning_effort": ["low", "medium", "high"]}},
               "policy": {"state": "enabled", "terms": "t"}}),
        json!({"id": "claude-sonnet-4.5", "capabilities": {"limits": {"max_context_window_tokens": 200000}, "supports": {}}}),
        json!("not a model"),
        json!({"name": "no id"}),
    ]))
    .await
    .unwrap();
    let config = OpenAiConfig::copilot(base(&server), "gpt-5", Some("gho_t".into()));
    let models = tokio::time::timeout(GUARD, list_models(&config))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(&models).unwrap(),
        json!([
            {"id": "gpt-5", "name": "GPT-5",
             "capabilities": {"supports": {"vision": true, "reasoningEffort": true}, "limits": {"max_context_window_tokens": 400000}},
             "policy": {"state": "enabled", "terms": "t"},
             "supportedReasoningEfforts": ["low", "medium", "high"]},
            {"id": "claude-sonnet-4.5", "name": "claude-sonnet-4.5",
             "capabilities": {"supports": {"vision": false, "reasoningEffort": false}, "limits": {"max_context_window_tokens": 200000}}},
        ])
    );
    let sent = server.recorded();
    assert_eq!(
        (sent[0].method.as_str(), sent[0].path.as_str()),
        ("GET", "/models")
    );
    assert_eq!(sent[0].header("authorization"), Some("Bearer gho_t"));
    assert_eq!(
        sent[0].header("copilot-integration-id"),
        Some("copilot-developer-cli")
    );
}

#[tokio::test]
async fn a_failing_model_list_is_a_model_error() {
    let server = ScriptedServer::start(Script::new()).await.unwrap();
    // A path the server does not serve: 404 with its message.
    let config = OpenAiConfig::copilot(format!("{}/nowhere", base(&server)), "m", None);
    let error = list_models(&config).await.unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Http);
    assert_eq!(error.status_code, Some(404));
    assert!(error.message.contains("/nowhere/models"), "{error}");
}
