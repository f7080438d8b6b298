//! A session's own GitHub account and model endpoint over real sockets: `gitHubToken` of
//! `session.create` looked up at a GitHub API on 127.0.0.1 (a refused token fails the create
//! with the Copilot CLI's words), `session.gitHubAuth.getStatus` per session, the token used as
//! the Copilot endpoint's credential and never journaled, and `session.provider.getEndpoint`
//! (refused unless the server allows it).

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{GUARD, TestServer, journal_lines};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use turnstile_providers::OpenAiConfig;
use turnstile_scripted_model::{Script, ScriptedServer};

/// A GitHub API on 127.0.0.1 answering `GET /copilot_internal/user` for the tokens it knows
/// (401 `Bad credentials` for others); records the `Authorization` headers it got.
pub(crate) struct GitHubApi {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<String>>>,
}

impl GitHubApi {
    pub(crate) async fn start(users: HashMap<&'static str, Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let users: HashMap<String, Value> =
            users.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap_or(0) == 1
                {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let auth = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_owned())
                    })
                    .unwrap_or_default();
                record.lock().unwrap().push(auth.clone());
                let user = head
                    .starts_with("GET /copilot_internal/user ")
                    .then(|| auth.strip_prefix("Bearer ").and_then(|t| users.get(t)))
                    .flatten();
                let (status, body) = match user {
                    Some(user) => ("200 OK", user.to_string()),
                    None => (
                        "401 Unauthorized",
                        r#"{"message":"Bad credentials"}"#.to_owned(),
                    ),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        GitHubApi { url, seen }
    }
}

fn users() -> HashMap<&'static str, Value> {
    HashMap::from([
        (
            "token-alice",
            json!({"login": "alice", "copilot_plan": "individual_pro"}),
        ),
        (
            "token-bob",
            json!({"login": "bob", "copilot_plan": "business"}),
        ),
    ])
}

/// A server whose default model is the Copilot endpoint at `model` (no token of its own) and
/// whose GitHub API is `api`.
async fn server(model: &ScriptedServer, api: &GitHubApi, allow_endpoint: bool) -> TestServer {
    let (model_url, api_url) = (format!("http://{}", model.addr()), api.url.clone());
    TestServer::start(move |config| {
        config.default_model = OpenAiConfig::copilot(model_url, "claude-sonnet-4.5", None);
        config.github_api_url = api_url;
        config.allow_get_provider_endpoint = allow_endpoint;
    })
    .await
}

#[tokio::test]
async fn each_session_is_its_own_tokens_account() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let api = GitHubApi::start(users()).await;
    let t = server(&model, &api, false).await;
    let mut client = t.client().await;

    let alice = client
        .ok("session.create", json!({"gitHubToken": "token-alice"}))
        .await["sessionId"]
        .clone();
    let bob = client
        .ok("session.create", json!({"gitHubToken": "token-bob"}))
        .await["sessionId"]
        .clone();
    let status = client
        .ok("session.gitHubAuth.getStatus", json!({"sessionId": alice}))
        .await;
    assert_eq!(
        status,
        json!({"isAuthenticated": true, "authType": "token", "host": "https://github.com",
               "login": "alice", "statusMessage": "https://github.com (via token)",
               "copilotPlan": "individual_pro"})
    );
    let status = client
        .ok("session.gitHubAuth.getStatus", json!({"sessionId": bob}))
        .await;
    assert_eq!(
        (&status["login"], &status["copilotPlan"]),
        (&json!("bob"), &json!("business"))
    );
    assert_eq!(
        *api.seen.lock().unwrap(),
        ["Bearer token-alice", "Bearer token-bob"]
    );

    // No token anywhere: not authenticated, and nothing asked of the API.
    let nobody = client.ok("session.create", json!({})).await["sessionId"].clone();
    let status = client
        .ok("session.gitHubAuth.getStatus", json!({"sessionId": nobody}))
        .await;
    assert_eq!(
        status,
        json!({"isAuthenticated": false, "statusMessage": "Not authenticated"})
    );
    assert_eq!(api.seen.lock().unwrap().len(), 2);
    t.stop().await;
}

#[tokio::test]
async fn a_refused_token_fails_the_create_as_the_copilot_cli_does() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let api = GitHubApi::start(users()).await;
    let t = server(&model, &api, false).await;
    let mut client = t.client().await;
    let error = client
        .err(
            "session.create",
            json!({"gitHubToken": "invalid-token-12345"}),
        )
        .await;
    assert_eq!(
        error,
        json!({"code": -32603, "message": "Request session.create failed with message: Failed to fetch Copilot user info: 401 Unauthorized: {\"message\":\"Bad credentials\"}"})
    );
    // No session was made.
    let listed = client.ok("session.list", json!({})).await;
    assert_eq!(listed["sessions"], json!([]));
    t.stop().await;
}

#[tokio::test]
async fn the_session_token_reaches_the_copilot_endpoint_and_no_file() {
    let model = ScriptedServer::start(Script::new().text("hi alice"))
        .await
        .unwrap();
    let api = GitHubApi::start(users()).await;
    let t = server(&model, &api, false).await;
    let mut client = t.client().await;
    let id = client
        .ok("session.create", json!({"gitHubToken": "token-alice"}))
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = tokio::time::timeout(
        GUARD,
        client.ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "who am I?"}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(done["response"]["data"]["content"], "hi alice");
    client.ok("session.detach", json!({"sessionId": id})).await;
    let posts: Vec<_> = model
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].header("authorization"), Some("Bearer token-alice"));
    // The token is in no file the session wrote: its directory's and the state root's.
    let state = t.dir.path().join("state");
    let files: Vec<_> = [state.join(&id), state]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap().flatten())
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    assert!(
        files.iter().any(|f| f.ends_with("events.jsonl")),
        "{files:?}"
    );
    for file in files {
        let text = std::fs::read(&file).unwrap();
        assert!(
            !text
                .windows(b"token-alice".len())
                .any(|w| w == b"token-alice"),
            "{} holds the token",
            file.display()
        );
    }
    assert!(!journal_lines(&t.journal(&id)).is_empty());
    t.stop().await;
}

#[tokio::test]
async fn get_endpoint_answers_only_when_allowed() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let api = GitHubApi::start(users()).await;
    let t = server(&model, &api, false).await;
    let mut client = t.client().await;
    let id = client.ok("session.create", json!({})).await["sessionId"].clone();
    let error = client
        .err("session.provider.getEndpoint", json!({"sessionId": id}))
        .await;
    assert_eq!(
        error,
        json!({"code": -32603, "message": "Request session.provider.getEndpoint failed with message: To enable this API, set COPILOT_ALLOW_GET_PROVIDER_ENDPOINT=true"})
    );
    t.stop().await;

    let t = server(&model, &api, true).await;
    let mut client = t.client().await;
    let byok = client
        .ok(
            "session.create",
            json!({"provider": {"type": "openai", "wireApi": "completions",
                   "baseUrl": "https://api.example.test/v1", "apiKey": "byok-secret",
                   "headers": {"X-Custom-Header": "byok-yes"}}}),
        )
        .await["sessionId"]
        .clone();
    let endpoint = client
        .ok("session.provider.getEndpoint", json!({"sessionId": byok}))
        .await;
    assert_eq!(
        endpoint,
        json!({"type": "openai", "wireApi": "completions", "baseUrl": "https://api.example.test/v1",
               "apiKey": "byok-secret", "headers": {"X-Custom-Header": "byok-yes"},
               "transport": "http"})
    );
    let capi = client
        .ok("session.create", json!({"gitHubToken": "token-bob"}))
        .await["sessionId"]
        .clone();
    let endpoint = client
        .ok("session.provider.getEndpoint", json!({"sessionId": capi}))
        .await;
    assert_eq!(endpoint["apiKey"], "token-bob");
    assert_eq!(endpoint["headers"]["Authorization"], "Bearer token-bob");
    assert_eq!(endpoint["baseUrl"], format!("http://{}", model.addr()));
    assert!(endpoint.get("transport").is_none(), "{endpoint}");
    t.stop().await;
}
