//! `turnstile --headless --stdio` started as the SDK clients start it, with `COPILOT_API_URL`
//! and `--auth-token-env`: `models.list` comes from the endpoint's `GET /models` with the token
//! as bearer; `--default-base-url` overrides `COPILOT_API_URL`; without either, the settings
//! file's provider and model are the default of sessions created without one. The real binary,
//! real pipes.

use crate::common;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

use common::rpc::StdioServer;

struct Runtime(tokio::runtime::Runtime);

impl Runtime {
    fn new() -> Self {
        Runtime(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap(),
        )
    }

    fn server(&self, script: Script) -> ScriptedServer {
        self.0.block_on(ScriptedServer::start(script)).unwrap()
    }
}

/// A running server and its state directory (removed when dropped).
type Spawned = (StdioServer, tempfile::TempDir);

fn spawn(env: &[(&str, &str)], args: &[&str]) -> Spawned {
    spawn_with_settings(None, env, args)
}

/// As [`spawn`], with `settings` as `$COPILOT_HOME/config.json`.
fn spawn_with_settings(settings: Option<Value>, env: &[(&str, &str)], args: &[&str]) -> Spawned {
    let state = tempfile::tempdir().unwrap();
    if let Some(settings) = settings {
        std::fs::write(state.path().join("config.json"), settings.to_string()).unwrap();
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
    cmd.args(["--headless", "--stdio"])
        .args(args)
        .env("COPILOT_HOME", state.path())
        .env_remove("COPILOT_API_URL")
        .env_remove("TURNSTILE_BASE_URL")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("COPILOT_SDK_AUTH_TOKEN")
        .env_remove("TURNSTILE_MODEL")
        .env_remove("COPILOT_MODEL")
        .env_remove("COPILOT_PROVIDER_BASE_URL")
        .env_remove("COPILOT_PROVIDER_TYPE")
        .env_remove("COPILOT_PROVIDER_API_KEY")
        .env_remove("COPILOT_PROVIDER_WIRE_MODEL")
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    (StdioServer::spawn(cmd), state)
}

fn models() -> Vec<Value> {
    vec![
        json!({"id": "gpt-5", "name": "GPT-5", "capabilities": {"limits": {"max_context_window_tokens": 400000}, "supports": {}}}),
    ]
}

#[test]
fn copilot_api_url_and_the_auth_token_env_give_models_list() {
    let rt = Runtime::new();
    let model = rt.server(Script::new().with_models(models()));
    let base = format!("http://{}", model.addr());
    let (mut server, _state) = spawn(
        &[("COPILOT_API_URL", &base), ("MY_GH_TOKEN", "gho_from_env")],
        &["--auth-token-env", "MY_GH_TOKEN"],
    );
    let answer = server.call("models.list", json!({}));
    server.kill();
    assert_eq!(answer["result"]["models"][0]["id"], "gpt-5", "{answer}");
    assert_eq!(
        answer["result"]["models"][0]["capabilities"]["limits"]["max_context_window_tokens"],
        400000
    );
    let asked = model.recorded();
    assert_eq!(asked[0].path, "/models");
    assert_eq!(
        asked[0].header("authorization"),
        Some("Bearer gho_from_env")
    );
}

#[test]
fn without_auth_token_env_the_gh_token_is_used() {
    let rt = Runtime::new();
    let model = rt.server(Script::new().with_models(models()));
    let base = format!("http://{}", model.addr());
    let (mut server, _state) = spawn(&[("COPILOT_API_URL", &base), ("GH_TOKEN", "gho_gh")], &[]);
    let answer = server.call("models.list", json!({}));
    server.kill();
    assert_eq!(answer["result"]["models"][0]["id"], "gpt-5", "{answer}");
    assert_eq!(
        model.recorded()[0].header("authorization"),
        Some("Bearer gho_gh")
    );
}

#[test]
fn default_base_url_overrides_copilot_api_url() {
    let rt = Runtime::new();
    let model = rt.server(Script::new().with_models(models()));
    let base = format!("http://{}", model.addr());
    let (mut server, _state) = spawn(
        &[("COPILOT_API_URL", &base)],
        &[
            "--default-base-url",
            "http://127.0.0.1:9/v1",
            "--default-model",
            "local-m",
        ],
    );
    let answer = server.call("models.list", json!({}));
    server.kill();
    // The OpenAI-compatible default: its one model, nothing asked of the Copilot endpoint.
    assert_eq!(answer["result"]["models"][0]["id"], "local-m", "{answer}");
    assert!(model.recorded().is_empty());
}

/// Creates a session naming no model and no provider, sends one prompt and waits for idle.
fn one_prompt_with_the_defaults(server: &mut StdioServer) {
    let created = server.ok("session.create", json!({}));
    let id = created["sessionId"].as_str().unwrap().to_owned();
    server.ok("session.send", json!({"sessionId": id, "prompt": "hi"}));
    server.events_until(|e| e["type"] == "session.idle");
}

#[test]
fn the_settings_files_provider_and_model_are_the_default_of_sessions() {
    let rt = Runtime::new();
    let model = rt.server(Script::new().text("from anthropic"));
    let base = format!("http://{}", model.addr());
    let settings = json!({
        "model": "claude-from-settings",
        "provider": {"type": "anthropic", "baseUrl": base, "apiKey": "sk-ant-settings"},
    });
    let (mut server, _state) = spawn_with_settings(Some(settings), &[], &[]);
    one_prompt_with_the_defaults(&mut server);
    server.kill();
    let asked = model.recorded();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, "/v1/messages");
    assert_eq!(asked[0].header("x-api-key"), Some("sk-ant-settings"));
    assert_eq!(asked[0].body["model"], "claude-from-settings");
}

#[test]
fn the_default_model_flag_overrides_the_settings_model_and_copilot_api_url_the_provider() {
    let rt = Runtime::new();
    let model = rt.server(Script::new().text("from copilot"));
    let base = format!("http://{}", model.addr());
    let settings = json!({
        "model": "settings-model",
        "provider": {"type": "anthropic", "baseUrl": "http://127.0.0.1:9", "apiKey": "sk-unused"},
    });
    // The SDK's endpoint wins over the settings' provider; the settings' model still names it.
    let (mut server, _state) = spawn_with_settings(
        Some(settings.clone()),
        &[("COPILOT_API_URL", &base), ("GH_TOKEN", "gho_gh")],
        &[],
    );
    one_prompt_with_the_defaults(&mut server);
    server.kill();
    let asked = model.recorded();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, "/chat/completions");
    assert_eq!(asked[0].body["model"], "settings-model");
    assert_eq!(asked[0].header("authorization"), Some("Bearer gho_gh"));

    // A flag beats the settings file.
    let (mut server, _state) = spawn_with_settings(
        Some(settings),
        &[("COPILOT_API_URL", &base), ("GH_TOKEN", "gho_gh")],
        &["--model", "flag-model"],
    );
    one_prompt_with_the_defaults(&mut server);
    server.kill();
    assert_eq!(model.recorded()[1].body["model"], "flag-model");
}
