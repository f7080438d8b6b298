//! The JetStream store's journals compared with what the file store writes for the same
//! scripted sessions, line for line after ids and timestamps: a 3-node cluster's stream leader
//! SIGKILLed mid-session (a short run in `make test`, 200 turns in `make cluster-soak`), and a
//! writer SIGKILLed after its third turn and resumed on another host. Real `nats-server`
//! processes on free loopback ports.

use crate::common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_store_nats::local_server::LocalNats;

use common::store_env::{Env, KillOnDrop, audit_clean, file_cmd, file_loop_cmd, lines, ok, signal};

fn turns_script(turns: usize) -> Script {
    turns_script_from(turns, 0)
}

/// The answers of [`turns_script`] from answer `first` on: a view of alpha.txt for each turn
/// but the last (call ids fixed by the answer's place, so a run resumed with the rest of the
/// script names its calls as one uninterrupted run does), then the last text.
fn turns_script_from(turns: usize, first: usize) -> Script {
    let mut script = Script::new();
    for answer in first..turns.saturating_sub(1) {
        script = script.respond(ScriptedResponse::default().and_tool_call_with_id(
            format!("view_{answer}"),
            "view",
            json!({"path": "alpha.txt"}),
        ));
    }
    script.text("all turns done")
}

/// The journal of the one session in host `host`'s state directory.
fn only_journal(env: &Env, host: &str) -> PathBuf {
    let sessions: Vec<PathBuf> = std::fs::read_dir(env.host(host))
        .unwrap()
        .map(|e| e.unwrap().path().join("events.jsonl"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0].clone()
}

/// The comparable events (`turnstile_testing::comparable_events`) of journal bytes.
fn comparable(bytes: &[u8]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, bytes).unwrap();
    turnstile_testing::comparable_events(&path).unwrap()
}

/// Asserts that two journals are the same session event for event, after ids, timestamps,
/// durations and sizes, naming the first event where they part.
fn assert_same_session(what: &str, stored: &[Value], file: &[Value]) {
    if let Some(at) = (0..stored.len().min(file.len())).find(|&i| stored[i] != file[i]) {
        panic!(
            "{what}: event {at} differs\n  store: {}\n  files: {}",
            stored[at], file[at]
        );
    }
    assert_eq!(
        stored.len(),
        file.len(),
        "{what}: one journal goes on after the other ended"
    );
}

/// The bytes of a journal before its first `session.resume` line, and the rest.
fn split_at_resume(journal: &[u8]) -> (&[u8], &[u8]) {
    let mut at = 0;
    for line in journal.split_inclusive(|&b| b == b'\n') {
        let event: Value = serde_json::from_slice(line).unwrap();
        if event["type"] == "session.resume" {
            break;
        }
        at += line.len();
    }
    journal.split_at(at)
}

/// Runs a session of `turns` turns on a 3-node R3 cluster and SIGKILLs the stream leader
/// once `kill_after` turns ended; the session goes on (publishes retried with the same ids)
/// or fails clearly and is resumed from another state directory.
///
/// The killed node is brought back before the session is read out, so the read may be served
/// by a replica that has not caught up yet (reads go up to the leader's last message,
/// `docs/stores.md`).
fn cluster_session_survives_leader_kill(turns: usize, kill_after: usize) {
    // Long enough to outlast a leader election.
    let env = Env {
        lease_ttl: "15",
        ..Env::new()
    };
    let mut nodes = LocalNats::cluster(3, &env.dir.path().join("cluster")).unwrap();
    let store: String = nodes
        .iter()
        .map(LocalNats::url)
        .collect::<Vec<_>>()
        .join(",");
    let model = env.model(turns_script(turns));
    let store_cmd = |host: &str, args: &[&str]| {
        let mut cmd = env.cmd(&store, host, args);
        cmd.arg("--store-replicas").arg("3");
        cmd
    };
    // The cluster elects its meta leader after start: create the stream once it can.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = store_cmd("probe", &["sessions"]).output().unwrap();
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (writer, stdout, stderr) = cluster_writer(&env, &store, &model);
    let mut reader = BufReader::new(stdout).lines();
    let mut id = String::new();
    let mut ended = 0;
    for line in reader.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "session.start" {
            id = v["data"]["sessionId"].as_str().unwrap().to_owned();
        }
        if v["type"] == "assistant.turn_end" {
            ended += 1;
            if ended == kill_after {
                break;
            }
        }
    }
    std::thread::spawn(move || for _ in reader {});
    let leader = env.rt.block_on(async {
        let mut config = turnstile_store_nats::NatsConfig::new(store.clone());
        config.replicas = 3;
        let s = turnstile_store_nats::NatsStore::open(config).await.unwrap();
        s.stream_leader().await.unwrap()
    });
    let leader = leader.expect("a clustered stream has a leader");
    let index: usize = leader.trim_start_matches("node").parse().unwrap();
    nodes[index].kill();
    let out = writer.wait_with_output();
    let resumed = !out.status.success();
    if resumed {
        let stderr = stderr.join().unwrap();
        eprintln!("the writer stopped: {stderr}");
        assert!(stderr.contains("error:"), "fails clearly: {stderr}");
        let mut resume = env.loop_cmd(&store, "b", &model, &["resume", &id]);
        resume.arg("--store-replicas").arg("3");
        ok(&resume.output().unwrap());
    }
    nodes[index].restart().unwrap();
    let exported = env.export(&store, &id);
    let answered_before_resume = resumed.then(|| Resumed {
        answered: answered_before_resume(&model, &exported),
        prompt: None,
    });
    let events = lines(&exported);
    let ids: HashSet<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "no duplicates");
    // Every line the writer had acknowledged (its working copy before the failure, less a
    // last line that may not have been stored) is in the store, in order.
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();
    let copy_lines: Vec<&[u8]> = copy.split_inclusive(|&b| b == b'\n').collect();
    let acknowledged: Vec<u8> = copy_lines[..copy_lines.len().saturating_sub(1)].concat();
    assert!(
        exported.starts_with(&acknowledged),
        "0 acknowledged events lost"
    );
    let report = audit_clean(&exported);
    assert!(report.turns >= turns as u64, "{} turns", report.turns);
    same_as_on_files(&env, &exported, turns, answered_before_resume);
}

/// `turnstile run --json` on host a of a 3-replica `store`, with its stdout and its stderr
/// drained as it comes (the text when the thread is joined): a full pipe would block the
/// writer's logging, and with it the thread that renews the lease (rounds of retry warnings
/// fill 64 KiB).
fn cluster_writer(
    env: &Env,
    store: &str,
    model: &ScriptedServer,
) -> (
    KillOnDrop,
    std::process::ChildStdout,
    std::thread::JoinHandle<String>,
) {
    let mut cmd = env.loop_cmd(
        store,
        "a",
        model,
        &["run", "--json", "--durability", "event", "go"],
    );
    cmd.arg("--store-replicas").arg("3");
    let mut writer = KillOnDrop::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let stdout = writer.stdout.take().unwrap();
    let mut stderr = writer.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    (writer, stdout, stderr)
}

/// The answers the model gave before the resume of `exported`, a session it served to the
/// end: all it gave, less one for each turn of the resume. Counted once the resume is done,
/// not when the writer stopped: a request the writer sent just before it was killed may be
/// taken by the server after the kill, and its answer is gone with the writer.
fn answered_before_resume(model: &ScriptedServer, exported: &[u8]) -> usize {
    let resume_turns = lines(split_at_resume(exported).1)
        .iter()
        .filter(|e| e["type"] == "assistant.turn_start")
        .count();
    model.responses_served() - resume_turns
}

/// How a session of [`turns_script`] was resumed after its writer stopped.
struct Resumed {
    /// Answers the model had given before the resume.
    answered: usize,
    /// The prompt `turnstile resume` was given, if any.
    prompt: Option<&'static str>,
}

/// Asserts that `exported`, a session of [`turns_script`] run on the JetStream store, is what
/// the file store writes for the same script: the whole journal when the writer went through,
/// else its part before the resume as the file run's beginning and its resume as a resume on
/// the file store of that same beginning, with the same prompt and the rest of the answers.
fn same_as_on_files(env: &Env, exported: &[u8], turns: usize, resumed: Option<Resumed>) {
    let model = env.model(turns_script(turns));
    ok(&file_loop_cmd(
        env,
        "files",
        &model,
        &["run", "--json", "--durability", "event", "go"],
    )
    .output()
    .unwrap());
    let on_files = comparable(&std::fs::read(only_journal(env, "files")).unwrap());
    let Some(Resumed { answered, prompt }) = resumed else {
        assert_same_session("the session", &comparable(exported), &on_files);
        return;
    };
    let (before, resumed) = split_at_resume(exported);
    let before_events = comparable(before);
    assert!(before_events.len() <= on_files.len());
    assert_same_session(
        "before the resume",
        &before_events,
        &on_files[..before_events.len()],
    );
    let prefix = env.dir.path().join("before-resume.jsonl");
    std::fs::write(&prefix, before).unwrap();
    let model = env.model(turns_script_from(turns, answered));
    ok(
        &file_cmd(env, "files-resumed", &["import", prefix.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    let journal = only_journal(env, "files-resumed");
    let id = journal
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let mut resume = vec!["resume", id.as_str()];
    resume.extend(prompt);
    ok(&file_loop_cmd(env, "files-resumed", &model, &resume)
        .output()
        .unwrap());
    let resumed_on_files = std::fs::read(&journal).unwrap();
    assert_same_session(
        "the resume",
        &comparable(resumed),
        &comparable(split_at_resume(&resumed_on_files).1),
    );
}

/// A writer SIGKILLed after its third turn and the session resumed with a prompt on another
/// host: the stored journal is, event for event, the file store's run of the same script up
/// to the kill and then the file store's resume of that same beginning, which takes the
/// model's answers where the killed writer left them.
#[test]
fn killed_and_resumed_on_the_store_is_what_the_file_store_writes() {
    let turns = 8;
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(turns_script(turns));
    let mut writer = KillOnDrop::spawn(
        env.loop_cmd(
            &store,
            "a",
            &model,
            &["run", "--json", "--durability", "event", "go"],
        )
        .stdout(Stdio::piped()),
    );
    let stdout = writer.stdout.take().unwrap();
    let mut id = String::new();
    let mut ended = 0;
    for line in BufReader::new(stdout).lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "session.start" {
            id = v["data"]["sessionId"].as_str().unwrap().to_owned();
        }
        if v["type"] == "assistant.turn_end" {
            ended += 1;
            if ended == 3 {
                break;
            }
        }
    }
    signal(&writer, libc::SIGKILL);
    writer.wait().unwrap();
    let out = env
        .loop_cmd(&store, "b", &model, &["resume", &id, "go on"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "all turns done");
    let exported = env.export(&store, &id);
    audit_clean(&exported);
    same_as_on_files(
        &env,
        &exported,
        turns,
        Some(Resumed {
            answered: answered_before_resume(&model, &exported),
            prompt: Some("go on"),
        }),
    );
}

#[test]
fn cluster_leader_killed_mid_session_short() {
    cluster_session_survives_leader_kill(12, 4);
}

/// The long version (`make cluster-soak`).
#[test]
#[ignore = "long: make cluster-soak"]
fn cluster_leader_killed_mid_session_soak() {
    cluster_session_survives_leader_kill(200, 80);
}

/// `kills` stream-leader kills in one session at the default lease, each node brought back
/// once the session went on: the writer never stops, no line is doubled or lost, the audit
/// is clean. Prints what each kill cost: the election as a client sees it (kill to a new
/// leader named) and the pause the session saw (kill to its next turn end).
fn leader_kills_at_the_default_lease(kills: usize) {
    assert_eq!(turnstile_store_nats::DEFAULT_LEASE_SECS, 20);
    let env = Env {
        lease_ttl: "20",
        ..Env::new()
    };
    let mut nodes = LocalNats::cluster(3, &env.dir.path().join("cluster")).unwrap();
    let store: String = nodes
        .iter()
        .map(LocalNats::url)
        .collect::<Vec<_>>()
        .join(",");
    // Slow enough answers that the session is still running when each node comes back.
    let turns = kills * 15 + 20;
    let mut script = Script::new();
    for answer in 0..turns - 1 {
        script = script.respond(
            ScriptedResponse::default()
                .and_tool_call_with_id(
                    format!("view_{answer}"),
                    "view",
                    json!({"path": "alpha.txt"}),
                )
                .with_delay_ms(400),
        );
    }
    let model = env.model(script.text("all turns done"));
    let opened = env.rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut config = turnstile_store_nats::NatsConfig::new(store.clone());
            config.replicas = 3;
            match turnstile_store_nats::NatsStore::open(config).await {
                Ok(s) => break s,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("waiting for the cluster: {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => panic!("the cluster never answered: {e}"),
            }
        }
    });
    let (mut writer, stdout, stderr) = cluster_writer(&env, &store, &model);
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Value)>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if tx.send((Instant::now(), v)).is_err() {
                break;
            }
        }
    });
    let mut id = String::new();
    let mut next_turn_end = |after: Option<Instant>| -> Option<Instant> {
        loop {
            let (at, v) = rx.recv_timeout(Duration::from_secs(120)).ok()?;
            if v["type"] == "session.start" {
                id = v["data"]["sessionId"].as_str().unwrap().to_owned();
            }
            if v["type"] == "assistant.turn_end" && after.is_none_or(|t| at > t) {
                return Some(at);
            }
        }
    };
    let mut figures = Vec::new();
    let mut back = None;
    for round in 0..kills {
        // A turn that ended after the last node came back: the session runs on a whole cluster.
        if next_turn_end(back).is_none() {
            break;
        }
        let leader = env
            .rt
            .block_on(opened.stream_leader())
            .ok()
            .flatten()
            .expect("a clustered stream has a leader");
        let index: usize = leader.trim_start_matches("node").parse().unwrap();
        let killed = Instant::now();
        nodes[index].kill();
        let election = env.rt.block_on(async {
            loop {
                // Each question bounded, so a request stuck on the dead node does not count.
                let asked =
                    tokio::time::timeout(Duration::from_millis(500), opened.stream_leader());
                if let Ok(Ok(Some(now))) = asked.await
                    && now != leader
                {
                    return killed.elapsed();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let Some(went_on) = next_turn_end(Some(killed)) else {
            let status = writer.wait().unwrap();
            let stderr = stderr.join().unwrap();
            let tail = tail(&stderr);
            panic!("round {round}: the session did not go on after the kill ({status}): {tail}");
        };
        let pause = went_on - killed;
        eprintln!(
            "round {round}: {leader} killed, election {:.2} s, session paused {:.2} s",
            election.as_secs_f64(),
            pause.as_secs_f64()
        );
        figures.push((election, pause));
        nodes[index].restart().unwrap();
        // One node at a time: the next kill waits until the node that came back caught up
        // in every group (killing a second node before leaves a group without a quorum).
        let caught_up = env.rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < deadline {
                let asked = tokio::time::timeout(Duration::from_secs(2), opened.replicas_current());
                if let Ok(Ok(true)) = asked.await {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            false
        });
        assert!(caught_up, "round {round}: {leader} never caught up");
        back = Some(Instant::now());
    }
    while next_turn_end(None).is_some() {}
    let status = writer.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "the writer stopped: {}", tail(&stderr));
    assert_eq!(figures.len(), kills, "every kill happened mid-session");
    let exported = env.export(&store, &id);
    let events = lines(&exported);
    let ids: HashSet<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "no duplicates");
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();
    assert_eq!(exported, copy, "every acknowledged line is stored");
    let report = audit_clean(&exported);
    assert!(report.turns >= turns as u64, "{} turns", report.turns);
    let max = |f: fn(&(Duration, Duration)) -> Duration| {
        figures
            .iter()
            .map(f)
            .max()
            .unwrap_or_default()
            .as_secs_f64()
    };
    eprintln!(
        "{kills} kills at the default lease: 0 writer stops; longest election {:.2} s, longest pause {:.2} s",
        max(|f| f.0),
        max(|f| f.1)
    );
}

/// The last 2000 bytes or so of `text`, cut at a character boundary.
fn tail(text: &str) -> &str {
    let from = text.len().saturating_sub(2000);
    let start = (from..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}

#[test]
fn cluster_leader_kills_at_the_default_lease_short() {
    leader_kills_at_the_default_lease(2);
}

/// The long version (`make cluster-soak`; `CLUSTER_LEADER_KILLS`, default 30).
#[test]
#[ignore = "long: make cluster-soak"]
fn cluster_leader_kills_at_the_default_lease_soak() {
    let kills = std::env::var("CLUSTER_LEADER_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    leader_kills_at_the_default_lease(kills);
}
