//! Several named providers in one session (`providers`, `models`): a provider-qualified
//! `model` sends its turn to its own provider (its URL, key and headers) with the model's
//! `wireModel`, as the Copilot CLI routes them. Two scripted model servers on 127.0.0.1 stand
//! in for the two providers.

use crate::common;

use common::{GUARD, TestServer};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn a_qualified_model_goes_to_its_provider_as_its_wire_model() {
    let alpha = ScriptedServer::start(Script::new().text("from alpha").text("from alpha again"))
        .await
        .unwrap();
    let delta = ScriptedServer::start(Script::new().text("from delta"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let registry = |model: &str| {
        json!({
            "model": model,
            "providers": [
                {"name": "alpha", "type": "openai", "wireApi": "completions",
                 "baseUrl": alpha.url(), "apiKey": "alpha-secret", "headers": {"X-Provider": "alpha"}},
                {"name": "delta", "type": "openai", "wireApi": "completions",
                 "baseUrl": delta.url(), "apiKey": "delta-secret", "headers": {"X-Provider": "delta"}}
            ],
            "models": [
                {"id": "sonnet", "provider": "alpha", "wireModel": "byok-gpt-4o"},
                {"id": "haiku", "provider": "alpha", "wireModel": "byok-gpt-4o-mini"},
                {"id": "turbo", "provider": "delta", "wireModel": "byok-gpt-4-turbo"}
            ]
        })
    };
    for (selection, answer) in [
        ("alpha/haiku", "from alpha"),
        ("delta/turbo", "from delta"),
        ("alpha/sonnet", "from alpha again"),
    ] {
        let id = client.ok("session.create", registry(selection)).await["sessionId"].clone();
        let done = tokio::time::timeout(
            GUARD,
            client.ok(
                "session.sendAndWait",
                json!({"sessionId": id, "prompt": "5+5?"}),
            ),
        )
        .await
        .unwrap();
        assert_eq!(done["response"]["data"]["content"], answer, "{selection}");
    }
    let sent = |server: &ScriptedServer| -> Vec<(String, String, String)> {
        server
            .recorded()
            .into_iter()
            .filter(|r| r.method == "POST")
            .map(|r| {
                (
                    r.body["model"].as_str().unwrap_or_default().to_owned(),
                    r.header("x-provider").unwrap_or_default().to_owned(),
                    r.header("authorization").unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let alpha_secret = ("alpha".to_owned(), "Bearer alpha-secret".to_owned());
    assert_eq!(
        sent(&alpha),
        [
            (
                "byok-gpt-4o-mini".to_owned(),
                alpha_secret.0.clone(),
                alpha_secret.1.clone()
            ),
            (
                "byok-gpt-4o".to_owned(),
                alpha_secret.0.clone(),
                alpha_secret.1.clone()
            ),
        ]
    );
    assert_eq!(
        sent(&delta),
        [(
            "byok-gpt-4-turbo".to_owned(),
            "delta".to_owned(),
            "Bearer delta-secret".to_owned()
        )]
    );
    t.stop().await;
}

#[tokio::test]
async fn a_model_of_a_provider_not_configured_is_refused() {
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let error = client
        .err(
            "session.create",
            json!({"model": "alpha/sonnet", "providers": [],
                   "models": [{"id": "sonnet", "provider": "alpha"}]}),
        )
        .await;
    assert_eq!(error["code"], -32602, "{error}");
    t.stop().await;
}
