//! `resume` goes back to the model and the model server the session used, read off its
//! journal; flags that name others win, and the change is recorded in the journal. Real
//! scripted servers on 127.0.0.1, the real binary, a real state directory.

use crate::common;

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use common::{Env, audit_clean, journal_values};
use serde_json::Value;
use turnstile_scripted_model::{Script, ScriptedServer};

/// `turnstile resume ARGS` on `env`'s directories with no model flag and no model setting
/// anywhere: no settings file, and the model variables set to a server that does not exist,
/// which the session's record must win over.
fn bare_resume(env: &Env, home: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.arg("--state-dir")
        .arg(env.state.path())
        .arg("resume")
        .args(args)
        .arg("--cwd")
        .arg(env.work.path())
        .env("COPILOT_HOME", home)
        .env("TURNSTILE_BASE_URL", "http://127.0.0.1:9/v1")
        .env("TURNSTILE_MODEL", "env-model")
        .env_remove("COPILOT_MODEL")
        .env_remove("COPILOT_PROVIDER_BASE_URL")
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY");
    cmd
}

fn ok(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?}\n{stdout}\n{stderr}");
    (stdout, stderr)
}

fn models(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

#[test]
fn resume_uses_the_recorded_server_and_model_and_records_what_flags_change() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let first = env.server(Script::new().text("one").text("two").text("three"));
    let (_, stderr) = ok(&mut env.cmd(&first, &["run", "hello"]));
    let (id, journal) = env.only_session();
    // The hint names what `resume` needs besides the id: the state directory and --cwd.
    let hint = stderr
        .lines()
        .find_map(|l| l.strip_prefix("resume with: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(
        hint,
        format!(
            "turnstile --state-dir {} resume {id} --cwd {}",
            env.state.path().display(),
            env.work.path().display()
        )
    );
    let events = journal_values(&journal);
    let info = of_type(&events, "session.info");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0]["data"]["infoType"], "model");
    assert_eq!(info[0]["data"]["url"], first.url());
    let text = info[0].to_string();
    assert!(!text.to_lowercase().contains("key"), "{text}");

    // No flag: the same server and model, though the environment names others.
    let (answer, _) = ok(&mut bare_resume(&env, home.path(), &[&id[..8], "again"]));
    assert_eq!(answer.trim(), "two");
    assert_eq!(models(&first), ["test-model", "test-model"]);
    let events = journal_values(&journal);
    assert!(of_type(&events, "session.model_change").is_empty());
    assert_eq!(of_type(&events, "session.info").len(), 1, "nothing changed");

    // Another server by flag: the model stays the session's; the new server is recorded.
    let second = env.server(Script::new().text("four").text("five").text("six"));
    let url = second.url();
    ok(&mut bare_resume(
        &env,
        home.path(),
        &[&id, "--base-url", &url, "more"],
    ));
    assert_eq!(models(&second), ["test-model"]);
    let events = journal_values(&journal);
    let info = of_type(&events, "session.info");
    assert_eq!(info.len(), 2);
    assert_eq!(info[1]["data"]["url"], url);
    assert!(of_type(&events, "session.model_change").is_empty());

    // Another model by flag: a model change, then the next resume keeps the new one and the
    // second server, the last ones recorded.
    ok(&mut bare_resume(
        &env,
        home.path(),
        &[&id, "--model", "other-model", "switch"],
    ));
    ok(&mut bare_resume(&env, home.path(), &[&id, "and again"]));
    assert_eq!(
        models(&second),
        ["test-model", "other-model", "other-model"]
    );
    let events = journal_values(&journal);
    let changes = of_type(&events, "session.model_change");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["data"]["previousModel"], "test-model");
    assert_eq!(changes[0]["data"]["newModel"], "other-model");
    assert_eq!(
        models(&first).len(),
        2,
        "the first server is not asked again"
    );
    audit_clean(&journal);
}
