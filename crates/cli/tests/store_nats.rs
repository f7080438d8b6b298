//! The binary on the JetStream store, against real `nats-server` processes started on free
//! loopback ports (each test its own server and directory): run, list, export and import,
//! events and audit from the store, a live watch, kill -9 of the writer and a resume from
//! another state directory, a zombie writer (SIGSTOP past its lease), and the stream leader of
//! and the SDK server on the store (a session created through one server, listed and resumed
//! through another host's server). The runs compared with file-store runs of the same script
//! (a 3-node cluster's leader killed, a writer killed and resumed) are in `store_vs_files.rs`.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

use common::store_env::{
    Env, KillOnDrop, Takeover, audit_clean, lines, ok, signal, view_alpha_then, with_gamma_prompt,
    zombie_takeover,
};
use common::wait_for_event;

/// `turnstile watch ID --json` on "another host", given time to subscribe.
fn watcher(env: &Env, store: &str, id: &str) -> KillOnDrop {
    let watch = KillOnDrop::spawn(
        env.cmd(store, "watcher", &["watch", id, "--json"])
            .stdout(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(300));
    watch
}

/// The event types a watcher printed until it ended.
fn watched_types(watch: KillOnDrop) -> Vec<String> {
    let watched = watch.wait_with_output();
    String::from_utf8_lossy(&watched.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect()
}

fn session_id_of(events: &[Value]) -> String {
    events[0]["data"]["sessionId"].as_str().unwrap().to_owned()
}

/// Milliseconds since the epoch, as the journal's timestamps count them.
fn now_millis() -> i64 {
    turnstile_journal::Timestamp::now().millis()
}

#[test]
fn run_list_export_import_events_audit_and_watch_on_the_store() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha."]));
    let id = uuid::Uuid::new_v4().to_string();
    // A watcher on "another host" started before the session exists.
    let watch = watcher(&env, &store, &id);
    let out = env
        .loop_cmd(
            &store,
            "a",
            &model,
            &["run", "--session-id", &id, "what is in alpha.txt?"],
        )
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "It says alpha.");
    let types = watched_types(watch);
    assert!(
        types.iter().any(|t| t == "session.idle"),
        "ephemeral idle seen live: {types:?}"
    );
    assert_eq!(types.last().map(String::as_str), Some("session.shutdown"));

    let exported = env.export(&store, &id);
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();
    assert_eq!(exported, copy, "the store holds the journal byte for byte");
    let report = audit_clean(&exported);
    assert_eq!(report.turns, 2);

    let listed: Value = serde_json::from_str(&ok(&env
        .cmd(&store, "b", &["sessions", "--json"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["size"], copy.len() as u64);
    // The status and the model, as the file store lists the writer's working copy.
    let mut local = Command::cargo_bin("turnstile").unwrap();
    local
        .arg("--state-dir")
        .arg(env.host("a"))
        .args(["sessions", "--json"])
        .env_remove("TURNSTILE_STORE");
    let from_copy: Value = serde_json::from_str(&ok(&local.output().unwrap())).unwrap();
    assert_eq!(from_copy[0]["id"], id.as_str());
    assert_eq!(listed[0]["status"], "clean", "{listed}");
    assert!(listed[0]["model"].is_string(), "{listed}");
    for key in ["status", "model"] {
        assert_eq!(listed[0][key], from_copy[0][key], "{key}");
    }
    let table = ok(&env.cmd(&store, "b", &["sessions"]).output().unwrap());
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.contains("  clean  ") && row.contains(listed[0]["model"].as_str().unwrap_or("?")),
        "{table}"
    );

    let events = ok(&env
        .cmd(&store, "b", &["events", &id, "--json"])
        .output()
        .unwrap());
    assert_eq!(events.lines().count(), lines(&copy).len());
    let audit = env
        .cmd(&store, "b", &["audit", &id, "--json"])
        .output()
        .unwrap();
    ok(&audit);

    // Out to a file store and back under the same id: refused only when the bytes differ.
    let file = env.dir.path().join("exported.jsonl");
    std::fs::write(&file, &exported).unwrap();
    let local = env.host("local");
    let mut import = Command::cargo_bin("turnstile").unwrap();
    import
        .arg("--state-dir")
        .arg(&local)
        .arg("import")
        .arg(&file)
        .env_remove("TURNSTILE_STORE");
    ok(&import.output().unwrap());
    assert_eq!(
        std::fs::read(local.join(&id).join("events.jsonl")).unwrap(),
        exported
    );
    ok(&env
        .cmd(&store, "b", &["import", file.to_str().unwrap()])
        .output()
        .unwrap());
    let mut changed = exported.clone();
    let cut = changed[..changed.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    changed.truncate(cut);
    std::fs::write(&file, &changed).unwrap();
    let refused = env
        .cmd(&store, "b", &["import", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("already exists with a different journal"),
        "{stderr}"
    );
    assert_eq!(env.export(&store, &id), exported, "nothing changed");

    // The same journal under another id, right after: stored whole (its event ids are the
    // first session's), listed and exported byte for byte.
    std::fs::write(&file, &exported).unwrap();
    let copy_id = "6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b";
    ok(&env
        .cmd(
            &store,
            "b",
            &["import", file.to_str().unwrap(), "--session-id", copy_id],
        )
        .output()
        .unwrap());
    assert_eq!(env.export(&store, copy_id), exported);
    let listed = ok(&env
        .cmd(&store, "b", &["sessions", "--json"])
        .output()
        .unwrap());
    assert!(listed.contains(copy_id), "{listed}");
}

/// `sessions --json` on the store from "another host".
fn stored_sessions(env: &Env, store: &str) -> Value {
    serde_json::from_str(&ok(&env
        .cmd(store, "lister", &["sessions", "--json"])
        .output()
        .unwrap()))
    .unwrap()
}

/// The status and model columns on the store: a session that shut down is `clean` with its
/// model; resumed on another host and held in a tool call, it is `in use` (its entry, from
/// the first run's detach, still says it shut down: the lease says it runs).
#[test]
fn sessions_on_the_store_show_the_status_and_model_and_in_use_while_a_writer_holds_it() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(
        Script::new()
            .text("first answer")
            .tool_call(
                "bash",
                json!({"command": "sleep 30", "description": "wait"}),
            )
            .text("never reached"),
    );
    let id = uuid::Uuid::new_v4().to_string();
    let out = env
        .loop_cmd(&store, "a", &model, &["run", "--session-id", &id, "hello"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "first answer");
    let listed = stored_sessions(&env, &store);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["status"], "clean", "{listed}");
    let model_name = listed[0]["model"].as_str().expect("a model").to_owned();
    assert!(!model_name.is_empty());

    let mut writer = KillOnDrop::spawn(
        env.loop_cmd(&store, "b", &model, &["resume", "--json", &id, "wait"])
            .stdout(Stdio::piped()),
    );
    wait_for_event(&mut writer, "tool.execution_start");
    let listed = stored_sessions(&env, &store);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["status"], "in use", "{listed}");
    assert_eq!(listed[0]["model"], model_name.as_str(), "{listed}");
    let table = ok(&env.cmd(&store, "lister", &["sessions"]).output().unwrap());
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.starts_with(&id) && row.contains("  in use  ") && row.contains(&model_name),
        "{table}"
    );
    signal(&writer, libc::SIGKILL);
    writer.wait().unwrap();
}

/// The bound is on when the resume started, measured from the kill: the timestamp of the
/// journal's `session.resume` event (written once the lease was taken, the working copy made
/// and the journal folded) less the moment of the kill, both on this machine's clock. The
/// whole command's time also counts the debug binary's start-up, the resumed turn and the
/// index writes at the end, which vary with the machine's load and say nothing of the wait.
/// The dead writer renewed its lease at most TTL/4 before the kill, so the entry expires at
/// most a TTL after it; the taker asks every 50 ms (`lease.rs`).
#[test]
fn kill_9_mid_tool_then_another_host_resumes_within_the_lease() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "sleep 30", "description": "wait"}),
            )
            .text("resumed fine"),
    );
    // `event` durability: each line is acknowledged by JetStream before it is shown, so the
    // tool start the kill waits for is in the store (under `turn`, acknowledgements are only
    // awaited at the turn's end and a kill may come before the publisher sent the line).
    let mut writer = KillOnDrop::spawn(
        env.loop_cmd(
            &store,
            "a",
            &model,
            &["run", "--json", "--durability", "event", "wait"],
        )
        .stdout(Stdio::piped()),
    );
    let seen = wait_for_event(&mut writer, "tool.execution_start");
    let id = session_id_of(&seen);
    let killed_at = now_millis();
    signal(&writer, libc::SIGKILL);
    writer.wait().unwrap();
    let started = Instant::now();
    let out = env
        .loop_cmd(&store, "b", &model, &["resume", &id, "go on"])
        .output()
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(ok(&out).trim(), "resumed fine");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 interrupted tool call(s) marked failed"),
        "{stderr}"
    );
    let exported = env.export(&store, &id);
    assert_eq!(
        exported,
        std::fs::read(env.host("b").join(&id).join("events.jsonl")).unwrap()
    );
    audit_clean(&exported);
    let resumed_at = lines(&exported)
        .iter()
        .find(|e| e["type"] == "session.resume")
        .and_then(|e| e["timestamp"].as_str())
        .map(|t| turnstile_journal::Timestamp::parse(t).unwrap().millis())
        .expect("a session.resume event");
    let resume_start = Duration::from_millis((resumed_at - killed_at).max(0) as u64);
    eprintln!("the resume started {resume_start:?} after the kill; the command took {waited:?}");
    let lease_ttl = Duration::from_secs(env.lease_ttl.parse().unwrap());
    assert!(
        resume_start <= lease_ttl + Duration::from_secs(1),
        "resumed {resume_start:?} after the kill"
    );
}

#[test]
fn a_zombie_writer_fails_its_next_append_and_writes_nothing_after_losing_the_lease() {
    zombie_round("2");
}

/// The long version (`make cluster-soak`; `ZOMBIE_ROUNDS`, default 20): the same takeover
/// again and again, each round on its own server, at the default 20 s lease
/// (`ZOMBIE_LEASE_TTL` sets another). Prints, per round and in all, the time from the pause
/// to the new holder's `session.resume`.
#[test]
#[ignore = "long: make cluster-soak"]
fn zombie_writers_soak() {
    let rounds = std::env::var("ZOMBIE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let ttl: &'static str = match std::env::var("ZOMBIE_LEASE_TTL") {
        Ok(ttl) => Box::leak(ttl.into_boxed_str()),
        Err(_) => "20",
    };
    let mut resumes = Vec::new();
    for round in 0..rounds {
        let resumed = zombie_round(ttl);
        eprintln!(
            "zombie round {round}: lease {ttl} s, resumed on host b {:.2} s after the pause",
            resumed.as_secs_f64()
        );
        resumes.push(resumed.as_secs_f64());
    }
    let mean = resumes.iter().sum::<f64>() / resumes.len().max(1) as f64;
    let (min, max) = resumes
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    eprintln!(
        "{rounds} takeovers at a {ttl} s lease: 0 lines, 0 model requests and 0 watched events \
         of the old writer; resume {min:.2}-{max:.2} s after the pause (mean {mean:.2} s)"
    );
}

/// One paused-writer takeover: the old writer, SIGSTOPped mid-tool past its lease of
/// `lease_ttl` seconds while another host resumes the session, then SIGCONTed, exits 2 having
/// written nothing, asked the model nothing and shown `watch` nothing the store does not hold.
/// Returns the time from the pause to the new holder's `session.resume` (its timestamp in
/// the journal).
fn zombie_round(lease_ttl: &'static str) -> Duration {
    let mut env = Env::new();
    env.lease_ttl = lease_ttl;
    let nats = env.nats();
    let store = nats.url();
    let Takeover {
        zombie,
        id,
        model,
        paused_at,
    } = zombie_takeover(&env, &store);
    let after_takeover = env.export(&store, &id);
    let requests_before = model.requests().len();
    // A watcher on another host, following past the new holder's shutdown: it must show
    // nothing the zombie says once it runs again.
    let follower = KillOnDrop::spawn(
        env.cmd(&store, "watcher", &["watch", &id, "--json", "--follow"])
            .stdout(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(300));
    signal(&zombie, libc::SIGCONT);
    let out = zombie.wait_with_output();
    assert_eq!(out.status.code(), Some(2), "the zombie exits with an error");
    assert_eq!(
        model.requests().len(),
        requests_before,
        "the zombie asked the model nothing after losing the lease"
    );
    // Time for anything the zombie sent to arrive, then the watcher is stopped.
    std::thread::sleep(Duration::from_millis(500));
    signal(&follower, libc::SIGINT);
    let watched = follower.wait_with_output();
    let stored: std::collections::HashSet<String> = lines(&after_takeover)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    for shown in String::from_utf8_lossy(&watched.stdout).lines() {
        let shown: Value = serde_json::from_str(shown).unwrap();
        assert!(
            stored.contains(shown["id"].as_str().unwrap()),
            "watch showed an event the store does not hold: {shown}"
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Which check stops it first depends on which of its tasks runs first after SIGCONT:
    // the lease renewal (it finds another holder) or the next append (the store refuses a
    // write after another writer's). Both stop it without writing; the export below is what
    // must hold.
    assert!(
        (stderr.contains("lease") && stderr.contains("nothing more is written"))
            || stderr.contains("another writer appended to the session"),
        "{stderr}"
    );
    let exported = env.export(&store, &id);
    assert_eq!(
        exported, after_takeover,
        "nothing the zombie wrote after losing the lease"
    );
    let events = lines(&exported);
    assert_eq!(events.last().unwrap()["type"], "session.shutdown");
    audit_clean(&exported);
    let resumed_at = events
        .iter()
        .find(|e| e["type"] == "session.resume")
        .and_then(|e| e["timestamp"].as_str())
        .map(|t| turnstile_journal::Timestamp::parse(t).unwrap().millis())
        .expect("a session.resume event");
    Duration::from_millis((resumed_at - paused_at).max(0) as u64)
}

#[test]
fn the_sdk_server_keeps_sessions_in_the_store_and_another_host_resumes_them() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha.", "Still alpha."]));
    let cwd = env.work.path().to_str().unwrap().to_owned();

    // Host a: create and run one message through the SDK server, then close it.
    let mut a = env.sdk_server(&store, "a", &model);
    let created = a.ok("session.create", json!({"workingDirectory": cwd}));
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let answer = a.ok(
        "session.sendAndWait",
        json!({"sessionId": id, "prompt": "what is in alpha.txt?"}),
    );
    assert_eq!(
        answer["response"]["data"]["content"], "It says alpha.",
        "{answer}"
    );
    a.ok("session.destroy", json!({"sessionId": id}));
    assert!(a.close().success());
    let first = env.export(&store, &id);
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();
    assert_eq!(
        first, copy,
        "the store holds host a's journal byte for byte"
    );
    assert_eq!(audit_clean(&first).turns, 2);
    // The server's close recorded the folded state with the checkpoint, for host b's resume.
    let stored = env
        .rt
        .block_on(turnstile_store_nats::NatsStore::open(
            turnstile_store_nats::NatsConfig::new(store.clone()),
        ))
        .unwrap();
    let session = id.parse().unwrap();
    let entry = env
        .rt
        .block_on(stored.checkpoint(session))
        .unwrap()
        .expect("a checkpoint entry");
    assert_eq!(entry.bytes, first.len() as u64);
    assert!(entry.folded.is_some(), "the entry holds the folded state");
    // Host b's server must start from that state, not from a fold of the journal: one where
    // the prompt asks about gamma.txt (the journal says alpha.txt) shows in its request.
    assert!(
        env.rt
            .block_on(stored.put_checkpoint(session, &with_gamma_prompt(&entry)))
            .unwrap()
    );

    // Host b has never seen the session: it lists it from the store and resumes it there,
    // while a watcher on a third host follows it live.
    let watch = watcher(&env, &store, &id);
    let mut b = env.sdk_server(&store, "b", &model);
    let listed = b.ok("session.list", json!({}));
    assert_eq!(listed["sessions"][0]["sessionId"], id.as_str(), "{listed}");
    assert_eq!(
        b.ok("session.getLastId", json!({}))["sessionId"],
        id.as_str()
    );
    assert_eq!(
        b.ok("session.getMetadata", json!({"sessionId": id}))["session"]["sessionId"],
        id.as_str()
    );
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        b.ok("session.getMetadata", json!({"sessionId": unknown})),
        json!({}),
        "an id the index does not know"
    );
    b.ok(
        "session.resume",
        json!({"sessionId": id, "workingDirectory": cwd}),
    );
    let again = b.ok(
        "session.sendAndWait",
        json!({"sessionId": id, "prompt": "and now?"}),
    );
    assert_eq!(
        again["response"]["data"]["content"], "Still alpha.",
        "{again}"
    );
    let request = model.recorded().last().unwrap().body.to_string();
    assert!(
        request.contains("what is in gamma.txt?") && !request.contains("what is in alpha.txt?"),
        "host b's server resumed from the stored folded state: {request}"
    );
    let deleted = b.ok("session.delete", json!({"sessionId": id}));
    assert_eq!(
        deleted["success"], false,
        "a stored session is kept: {deleted}"
    );
    b.ok("session.destroy", json!({"sessionId": id}));
    assert!(b.close().success());

    let second = env.export(&store, &id);
    assert!(
        second.starts_with(&first),
        "host b continued host a's journal"
    );
    let report = audit_clean(&second);
    assert_eq!(report.turns, 3);
    let types: Vec<String> = lines(&second)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types.iter().filter(|t| *t == "session.resume").count(), 1);
    assert_eq!(types.last().map(String::as_str), Some("session.shutdown"));

    let watched = watched_types(watch);
    assert!(
        watched.iter().any(|t| t == "session.idle"),
        "the ephemeral idle reached the watcher: {watched:?}"
    );
}
