//! `turnstile --headless --stdio` started as the SDK clients start it, with `COPILOT_API_URL`
//! and `--auth-token-env`: `models.list` comes from the endpoint's `GET /models` with the token
//! as bearer; `--default-base-url` overrides `COPILOT_API_URL`. The real binary, real pipes.

mod common;

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
    let state = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_turnstile"));
    cmd.args(["--headless", "--stdio"])
        .args(args)
        .env("COPILOT_HOME", state.path())
        .env_remove("COPILOT_API_URL")
        .env_remove("TURNSTILE_BASE_URL")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("COPILOT_SDK_AUTH_TOKEN")
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
