//! `turnstile verify` on sessions `run` recorded and sealed: intact, a line edited, the tail
//! cut, a torn tail repaired (visible), signed with a key the user holds and checked against
//! the wrong one; its exit codes and `--json`.

use std::fs;
use std::process::Output;

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

use crate::common::Env;

fn recorded(env: &Env, key: Option<&std::path::Path>) -> std::path::PathBuf {
    let server = env.server(
        Script::new()
            .respond(ScriptedResponse::tool_call(
                "glob",
                json!({"pattern": "*.txt"}),
            ))
            .text("Found alpha.txt."),
    );
    let mut cmd = env.cmd(&server, &["run", "--allow-all-tools", "what is here?"]);
    match key {
        Some(key) => cmd.env("TURNSTILE_SEAL_KEY", key),
        None => cmd.env_remove("TURNSTILE_SEAL_KEY"),
    };
    succeeded(&cmd.output().unwrap());
    env.only_session().1
}

/// `turnstile ARGS` without a seal key in the environment.
fn turnstile<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    std::process::Command::cargo_bin("turnstile")
        .unwrap()
        .args(args)
        .env_remove("TURNSTILE_SEAL_KEY")
        .output()
        .unwrap()
}

fn succeeded(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
}

fn verify(env: &Env, args: &[&str]) -> (i32, String) {
    let state = env.state.path().to_str().unwrap();
    let out = turnstile(&[&["--state-dir", state, "verify"], args].concat());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_recorded_session_verifies_and_each_change_is_named_with_its_exit_code() {
    let env = Env::new();
    let events = recorded(&env, None);
    let target = events.to_str().unwrap();
    let (code, text) = verify(&env, &[target]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("intact") && text.contains("unsigned"),
        "{text}"
    );

    let original = fs::read_to_string(&events).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    // A tool result rewritten.
    let at = lines
        .iter()
        .position(|l| l.contains("tool.execution_complete"))
        .unwrap();
    let mut edited = lines.clone();
    let changed = lines[at].replace("alpha.txt", "beta.txt");
    edited[at] = &changed;
    fs::write(&events, edited.join("\n") + "\n").unwrap();
    let (code, text) = verify(&env, &[target]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("line {} ", at + 1)), "{text}");

    // The tail cut at a line boundary.
    fs::write(&events, lines[..lines.len() - 2].join("\n") + "\n").unwrap();
    let (code, text) = verify(&env, &[target, "--json"]);
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "missing-tail");
    assert_eq!(report["finding"]["lines"], lines.len() as u64 - 2);

    // Lines added after the seal: intact so far, then unsealed.
    fs::write(&events, format!("{original}{}\n", lines[1])).unwrap();
    let (code, text) = verify(&env, &[target]);
    assert_eq!(code, 4, "{text}");

    // A torn tail, cut by `repair`: the journal verifies, the repair shown.
    fs::write(&events, format!("{original}{{\"type\":\"assistant.mess")).unwrap();
    succeeded(&turnstile(&["repair", target]));
    let (code, text) = verify(&env, &[target]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("repair at") && text.contains("torn tail cut"),
        "{text}"
    );

    // No seal at all.
    fs::remove_file(events.with_file_name("events.jsonl.seal")).unwrap();
    assert_eq!(verify(&env, &[target]).0, 5);
}

#[test]
fn a_seal_signed_with_the_users_key_checks_against_it_only() {
    let env = Env::new();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("seal.key");
    let other = keys.path().join("other.key");
    for k in [&key, &other] {
        succeeded(&turnstile(&[
            std::ffi::OsStr::new("seal-key"),
            k.as_os_str(),
        ]));
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let events = recorded(&env, Some(&key));
    let target = events.to_str().unwrap();
    let public = format!("{}.pub", key.display());
    let (code, text) = verify(&env, &[target, "--key", &public]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("signed by the key given"), "{text}");
    let (code, text) = verify(
        &env,
        &[target, "--key", &format!("{}.pub", other.display())],
    );
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("not by the key given"), "{text}");
    // A seal-key never replaces a key.
    let again = turnstile(&[std::ffi::OsStr::new("seal-key"), key.as_os_str()]);
    assert_eq!(again.status.code(), Some(2));
}
