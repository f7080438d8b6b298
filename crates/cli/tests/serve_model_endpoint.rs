//! `turnstile --headless --stdio` started as the SDK clients start it, with `COPILOT_API_URL`
//! and `--auth-token-env`: `models.list` comes from the endpoint's `GET /models` with the token
//! as bearer; `--default-base-url` overrides `COPILOT_API_URL`. The real binary, real pipes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

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

/// A running server, its stdout, and its state directory (removed when dropped).
type Spawned = (Child, BufReader<ChildStdout>, tempfile::TempDir);

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
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout, state)
}

fn call(child: &mut Child, out: &mut BufReader<ChildStdout>, method: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).to_string();
    let stdin = child.stdin.as_mut().unwrap();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    stdin.flush().unwrap();
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = Some(value.trim().parse::<usize>().unwrap());
            }
        }
        let mut frame = vec![0; length.expect("a Content-Length header")];
        out.read_exact(&mut frame).unwrap();
        let message: Value = serde_json::from_slice(&frame).unwrap();
        if message["id"] == 1 {
            return message;
        }
    }
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
    let (mut child, mut out, _state) = spawn(
        &[("COPILOT_API_URL", &base), ("MY_GH_TOKEN", "gho_from_env")],
        &["--auth-token-env", "MY_GH_TOKEN"],
    );
    let answer = call(&mut child, &mut out, "models.list");
    child.kill().unwrap();
    let _ = child.wait();
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
    let (mut child, mut out, _state) =
        spawn(&[("COPILOT_API_URL", &base), ("GH_TOKEN", "gho_gh")], &[]);
    let answer = call(&mut child, &mut out, "models.list");
    child.kill().unwrap();
    let _ = child.wait();
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
    let (mut child, mut out, _state) = spawn(
        &[("COPILOT_API_URL", &base)],
        &[
            "--default-base-url",
            "http://127.0.0.1:9/v1",
            "--default-model",
            "local-m",
        ],
    );
    let answer = call(&mut child, &mut out, "models.list");
    child.kill().unwrap();
    let _ = child.wait();
    // The OpenAI-compatible default: its one model, nothing asked of the Copilot endpoint.
    assert_eq!(answer["result"]["models"][0]["id"], "local-m", "{answer}");
    assert!(model.recorded().is_empty());
}
