//! `turnstile verify` on the JetStream store, against a real `nats-server` of the test's own
//! (its port and directory): a session run on the store and resumed on another host verifies
//! from what the store holds; stored lines edited, reordered or cut through the JetStream API
//! are named as on files; a signed seal is checked against the user's key; a zombie writer
//! (SIGSTOP past its lease) leaves no record in the seal; export to files and import back
//! carry the seal (a repair made on files with it), and the session verifies on either side.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};

use common::store_env::{Env, Takeover, file_cmd, ok, signal, view_alpha_then, zombie_takeover};

/// `turnstile verify ARGS` on `store` from a host that never ran the session: exit code and
/// everything printed.
fn verify(env: &Env, store: &str, args: &[&str]) -> (i32, String) {
    let out = env
        .cmd(store, "verifier", &[&["verify"], args].concat())
        .env_remove("TURNSTILE_SEAL_KEY")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Runs `prompt` on `store` as host `host`; the session id from the `--json` events.
fn run_session(env: &Env, store: &str, host: &str, key: Option<&std::path::Path>) -> String {
    let model = env.model(view_alpha_then(&["seen it", "seen again"]));
    let mut cmd = env.loop_cmd(store, host, &model, &["run", "--json", "look"]);
    match key {
        Some(key) => cmd.env("TURNSTILE_SEAL_KEY", key),
        None => cmd.env_remove("TURNSTILE_SEAL_KEY"),
    };
    let out = ok(&cmd.output().unwrap());
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    first["data"]["sessionId"].as_str().unwrap().to_owned()
}

/// Replaces the stored journal of `id` by `lines` through the JetStream API: the subject
/// purged and the lines published again (no fence, no message id: as someone with write
/// access to the stream would).
fn rewrite_stored(env: &Env, store: &str, id: &str, lines: &[&[u8]]) {
    env.rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(store).await.unwrap());
        let subject = format!("turnstile.journal.{id}");
        let stream = js.get_stream("TURNSTILE").await.unwrap();
        stream.purge().filter(subject.as_str()).await.unwrap();
        for line in lines {
            js.publish(subject.clone(), line.to_vec().into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
    });
}

/// The stored seal records of `id`.
fn stored_seal(env: &Env, store: &str, id: &str) -> Vec<Value> {
    env.rt.block_on(async {
        let config = turnstile_store_nats::NatsConfig::new(store);
        let nats = turnstile_store_nats::NatsStore::open(config).await.unwrap();
        let seal = nats.seal(id.parse().unwrap()).await.unwrap();
        seal.bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    })
}

fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

#[test]
fn a_session_on_the_store_verifies_and_each_stored_change_is_named() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let id = run_session(&env, &store, "a", None);
    let (code, text) = verify(&env, &store, &[&id]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("intact") && text.contains(&id), "{text}");
    // Resumed on another host, whose working copy gets the stored seal and continues it.
    let model = env.model(view_alpha_then(&["again"]));
    ok(&env
        .loop_cmd(&store, "b", &model, &["resume", &id, "more"])
        .env_remove("TURNSTILE_SEAL_KEY")
        .output()
        .unwrap());
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 0, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "intact", "{report}");
    assert_eq!(report["adopted"], json!([]), "nothing adopted: {report}");
    assert_eq!(report["journal"]["session"], id.as_str());
    let seal = stored_seal(&env, &store, &id);
    assert_eq!(seal[0]["kind"], "begin");
    assert_eq!(
        seal.iter().filter(|r| r["kind"] == "begin").count(),
        1,
        "one seal, continued by the second host"
    );

    let original = env.export(&store, &id);
    let lines = split_lines(&original);
    // A tool result rewritten in the store.
    let at = lines
        .iter()
        .position(|l| String::from_utf8_lossy(l).contains("tool.execution_complete"))
        .unwrap();
    let changed = String::from_utf8_lossy(lines[at]).replace("alpha", "gamma");
    let mut edited = lines.clone();
    edited[at] = changed.as_bytes();
    rewrite_stored(&env, &store, &id, &edited);
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "line-differs", "{report}");
    assert_eq!(report["finding"]["line"], at as u64 + 1, "{report}");

    // Two lines swapped.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    rewrite_stored(&env, &store, &id, &swapped);
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "reordered", "{report}");
    assert_eq!(report["finding"]["line"], 3, "{report}");

    // The tail cut.
    rewrite_stored(&env, &store, &id, &lines[..lines.len() - 2]);
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 1, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "missing-tail", "{report}");
    assert_eq!(report["finding"]["lines"], lines.len() as u64 - 2);

    // Put back whole: intact again, the store's bytes and nothing else decide.
    rewrite_stored(&env, &store, &id, &lines);
    assert_eq!(verify(&env, &store, &[&id]).0, 0);

    // A session the store keeps no seal of.
    env.rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(store.as_str()).await.unwrap());
        let seals = js.get_stream("TURNSTILE_seals").await.unwrap();
        seals
            .purge()
            .filter(format!("turnstile.seal.{id}"))
            .await
            .unwrap();
    });
    let (code, text) = verify(&env, &store, &[&id]);
    assert_eq!(code, 5, "{text}");
    assert!(text.contains("no seal in the store"), "{text}");
}

#[test]
fn a_signed_seal_on_the_store_checks_against_the_users_key_only() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let keys = tempfile::tempdir().unwrap();
    let (key, other) = (keys.path().join("seal.key"), keys.path().join("other.key"));
    for k in [&key, &other] {
        ok(&file_cmd(&env, "keys", &["seal-key", k.to_str().unwrap()])
            .output()
            .unwrap());
    }
    let id = run_session(&env, &store, "a", Some(&key));
    let public = format!("{}.pub", key.display());
    let (code, text) = verify(&env, &store, &[&id, "--key", &public]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("signed by the key given"), "{text}");
    let wrong = format!("{}.pub", other.display());
    let (code, text) = verify(&env, &store, &[&id, "--key", &wrong, "--json"]);
    assert_eq!(code, 3, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(report["finding"]["kind"], "wrong-key", "{report}");
}

#[test]
fn export_to_files_and_import_back_keep_the_session_verifiable() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let id = run_session(&env, &store, "a", None);
    let out = env.dir.path().join("out.jsonl");
    ok(&env
        .cmd(
            &store,
            "a",
            &["export", &id, "--output", out.to_str().unwrap()],
        )
        .output()
        .unwrap());
    assert!(out.with_extension("jsonl.seal").exists());
    // Into a state directory: verified there as any local session.
    ok(&file_cmd(&env, "files", &["import", out.to_str().unwrap()])
        .output()
        .unwrap());
    let local = file_cmd(&env, "files", &["verify", &id]).output().unwrap();
    assert_eq!(
        local.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&local.stdout)
    );
    // A torn tail cut there by `repair`: the repair is recorded in the seal, and travels.
    let local_journal = env.host("files").join(&id).join("events.jsonl");
    let mut torn = std::fs::read(&local_journal).unwrap();
    torn.extend_from_slice(b"{\"type\":\"assistant.mess");
    std::fs::write(&local_journal, torn).unwrap();
    ok(&file_cmd(&env, "files", &["repair", &id]).output().unwrap());
    // From the state directory into a second store: verified there, the repair shown.
    let second = env.nats_named("second");
    let second_url = second.url();
    let again = env.dir.path().join("again.jsonl");
    ok(&file_cmd(
        &env,
        "files",
        &["export", &id, "--output", again.to_str().unwrap()],
    )
    .output()
    .unwrap());
    let exported_seal = std::fs::read(again.with_extension("jsonl.seal")).unwrap();
    assert!(
        exported_seal.starts_with(&std::fs::read(out.with_extension("jsonl.seal")).unwrap()),
        "the store's seal, then the repair's record"
    );
    ok(&env
        .cmd(&second_url, "b", &["import", again.to_str().unwrap()])
        .output()
        .unwrap());
    let (code, text) = verify(&env, &second_url, &[&id]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("intact") && text.contains("torn tail cut"),
        "{text}"
    );
}

/// The old writer, SIGSTOPped mid-tool past its lease while another host resumes the
/// session, then SIGCONTed: it stops without writing a line or a seal record, and the store's
/// seal verifies, its one begin record and the new holder's records only.
#[test]
fn a_zombie_writer_writes_nothing_to_the_seal_after_a_takeover() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let Takeover { zombie, id, .. } = zombie_takeover(&env, &store);
    let seal_after_takeover = stored_seal(&env, &store, &id);
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 0, "{text}");
    signal(&zombie, libc::SIGCONT);
    let out = zombie.wait_with_output();
    assert_eq!(out.status.code(), Some(2), "the zombie exits with an error");
    // Time for anything the zombie might have sent to arrive.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        stored_seal(&env, &store, &id),
        seal_after_takeover,
        "no seal record of the zombie's"
    );
    let (code, text) = verify(&env, &store, &[&id, "--json"]);
    assert_eq!(code, 0, "{text}");
    let report: Value = serde_json::from_str(text.trim()).unwrap();
    // The lines the zombie wrote before its pause, never checkpointed by it, were adopted by
    // the new holder.
    assert_ne!(report["adopted"], json!([]), "{report}");
}
