//! `turnstile run` against the scripted model speaking each wire format: the provider chosen
//! by flags, by the Copilot CLI's `COPILOT_PROVIDER_*` variables, or by the settings file;
//! a tool call goes round and the answer is journaled; the requests are that API's. The real
//! binary on real files, the scripted model on loopback.

use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{RecordedRequest, Script, ScriptedServer, Wire};

/// Variables a developer's shell may set that would change what these runs do.
const CLEARED: &[&str] = &[
    "TURNSTILE_API_KEY",
    "OPENAI_API_KEY",
    "TURNSTILE_MODEL",
    "TURNSTILE_BASE_URL",
    "TURNSTILE_DURABILITY",
    "TURNSTILE_API_KEY_COMMAND",
    "COPILOT_MODEL",
    "COPILOT_ALLOW_ALL",
    "COPILOT_PROVIDER_BASE_URL",
    "COPILOT_PROVIDER_TYPE",
    "COPILOT_PROVIDER_API_KEY",
    "COPILOT_PROVIDER_BEARER_TOKEN",
    "COPILOT_PROVIDER_WIRE_API",
    "COPILOT_PROVIDER_WIRE_MODEL",
    "COPILOT_PROVIDER_AZURE_API_VERSION",
    "COPILOT_PROVIDER_HEADERS",
    "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
];

struct Run {
    out: Output,
    events: Vec<Value>,
    requests: Vec<RecordedRequest>,
}

/// Runs `turnstile run` with `args` and `env` against a server of `script`; `settings` is
/// written to `$COPILOT_HOME/settings.json` with `{URL}` replaced by the server's base.
fn run(script: Script, args: &[&str], env: &[(&str, &str)], settings: Option<&str>) -> Run {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let base = format!("http://{}", server.addr());
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "x").unwrap();
    if let Some(text) = settings {
        std::fs::write(
            home.path().join("settings.json"),
            text.replace("{URL}", &base),
        )
        .unwrap();
    }
    let args: Vec<String> = args.iter().map(|a| a.replace("{URL}", &base)).collect();
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.arg("--state-dir")
        .arg(state.path())
        .args(["run", "how many text files?", "--allow-all-tools", "--cwd"])
        .arg(work.path())
        .args(&args)
        .env("COPILOT_HOME", home.path());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    for (k, v) in env {
        cmd.env(k, v.replace("{URL}", &base));
    }
    let out = cmd.output().unwrap();
    let events = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .map(|dir| {
            std::fs::read_to_string(dir.join("events.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default();
    let requests = server
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    Run {
        out,
        events,
        requests,
    }
}

fn glob_then_text(wire: Wire) -> Script {
    Script::new()
        .wire(wire)
        .tool_call("glob", json!({"pattern": "*.txt"}))
        .text("One text file.")
}

impl Run {
    fn assert_answered(&self) {
        let stderr = String::from_utf8_lossy(&self.out.stderr);
        assert_eq!(self.out.status.code(), Some(0), "{stderr}");
        let messages: Vec<&Value> = self
            .events
            .iter()
            .filter(|e| e["type"] == "assistant.message")
            .collect();
        assert_eq!(messages.len(), 2, "{:?}", self.events);
        assert_eq!(messages[0]["data"]["toolRequests"][0]["name"], "glob");
        assert_eq!(messages[1]["data"]["content"], "One text file.");
        let result = self
            .events
            .iter()
            .find(|e| e["type"] == "tool.execution_complete")
            .unwrap();
        assert_eq!(result["data"]["success"], true, "{result}");
        assert_eq!(self.requests.len(), 2);
    }
}

#[test]
fn anthropic_by_flag_with_the_key_from_the_environment() {
    let r = run(
        glob_then_text(Wire::Anthropic),
        &[
            "--provider",
            "anthropic",
            "--base-url",
            "{URL}",
            "--model",
            "claude-x",
        ],
        &[("COPILOT_PROVIDER_API_KEY", "sk-ant-env")],
        None,
    );
    r.assert_answered();
    for post in &r.requests {
        assert_eq!(post.path, "/v1/messages");
        assert_eq!(post.header("x-api-key"), Some("sk-ant-env"));
        assert_eq!(post.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(post.body["model"], "claude-x");
        assert_eq!(post.body["max_tokens"], 8192);
        assert_eq!(post.body["stream"], true);
    }
    let second = &r.requests[1].body["messages"];
    assert_eq!(second[1]["content"][0]["type"], "tool_use");
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
}

#[test]
fn responses_by_the_copilot_cli_variables_and_a_key_command() {
    let r = run(
        glob_then_text(Wire::Responses),
        &["--no-stream", "--api-key-command", "printf sk-from-command"],
        &[
            ("COPILOT_PROVIDER_BASE_URL", "{URL}/v1"),
            ("COPILOT_PROVIDER_WIRE_API", "responses"),
            ("COPILOT_PROVIDER_HEADERS", "X-Tenant: t1\\nX-Route: r2"),
            ("COPILOT_MODEL", "gpt-5"),
        ],
        None,
    );
    r.assert_answered();
    for post in &r.requests {
        assert_eq!(post.path, "/v1/responses");
        assert_eq!(post.header("authorization"), Some("Bearer sk-from-command"));
        assert_eq!(post.header("x-tenant"), Some("t1"));
        assert_eq!(post.header("x-route"), Some("r2"));
        assert_eq!(post.body["model"], "gpt-5");
        assert_eq!(post.body["stream"], false);
    }
    let input = r.requests[1].body["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("{input:?}"));
    assert!(
        output["output"].as_str().unwrap().contains("a.txt"),
        "{output}"
    );
}

#[test]
fn azure_from_the_settings_file_flags_win_over_it() {
    let settings = r#"// comments are allowed, as the Copilot CLI writes them
{
  "model": "from-file",
  "provider": {"type": "azure", "baseUrl": "{URL}", "apiKey": "az-file",
               "azure": {"apiVersion": "2024-10-21"}}
}"#;
    let r = run(
        glob_then_text(Wire::Completions),
        &["--model", "gpt-4.1"],
        &[],
        Some(settings),
    );
    r.assert_answered();
    for post in &r.requests {
        assert_eq!(post.path, "/openai/deployments/gpt-4.1/chat/completions");
        assert_eq!(post.query, "api-version=2024-10-21");
        assert_eq!(post.header("api-key"), Some("az-file"));
    }
}

#[test]
fn a_failing_key_command_fails_the_run_and_sends_nothing() {
    let r = run(
        glob_then_text(Wire::Anthropic),
        &[
            "--provider",
            "anthropic",
            "--base-url",
            "{URL}",
            "--api-key-command",
            "echo vault sealed >&2; exit 7",
        ],
        &[],
        None,
    );
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    assert_eq!(r.out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("apiKeyCommand") && stderr.contains("vault sealed"),
        "{stderr}"
    );
    assert!(r.requests.is_empty());
}

#[test]
fn a_bad_settings_file_names_file_line_and_field() {
    let r = run(
        Script::new().text("never"),
        &["--base-url", "{URL}/v1"],
        &[],
        Some("{\n  \"model\": \"m\",\n  \"durability\": \"sometimes\"\n}"),
    );
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    assert_eq!(r.out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("settings.json:3:") && stderr.contains("`durability`"),
        "{stderr}"
    );
    assert!(r.requests.is_empty() && r.events.is_empty());
}

#[test]
fn config_prints_each_setting_and_its_source() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("settings.json"),
        r#"{"model": "file-model", "deniedTools": ["shell(rm)"], "trustedFolders": ["/"],
            "provider": {"type": "anthropic", "apiKey": "sk-secret-file"},
            "mcpServers": {"fs": {"command": "node", "args": ["fs.js"]}}}"#,
    )
    .unwrap();
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.args(["config", "--json", "--durability", "event"])
        .env("COPILOT_HOME", home.path());
    for name in CLEARED {
        cmd.env_remove(name);
    }
    cmd.env("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:9");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("sk-secret-file"),
        "a secret was printed: {text}"
    );
    let printed: Value = serde_json::from_str(&text).unwrap();
    let find = |name: &str| {
        printed["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {printed}"))
    };
    let file = format!("file {}", home.path().join("settings.json").display());
    assert_eq!(find("model")["value"], "file-model");
    assert_eq!(find("model")["source"], file.as_str());
    assert_eq!(find("provider.type")["value"], "anthropic");
    assert_eq!(
        find("provider.baseUrl")["source"],
        "env COPILOT_PROVIDER_BASE_URL"
    );
    assert_eq!(find("provider.apiKey")["value"], "(set)");
    assert_eq!(find("durability")["value"], "event");
    assert_eq!(find("durability")["source"], "flag --durability");
    assert_eq!(find("deniedTools")["value"], "shell(rm)");
    assert_eq!(find("mcpServers.fs")["value"], "command node");
    assert_eq!(find("trustedFolders")["value"], "/");
}
