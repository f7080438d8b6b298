//! What a client may rely on at each durability on the JetStream store (`docs/stores.md`,
//! "What a client may rely on"), through the binary against a real `nats-server` on a free
//! loopback port: a session whose second tool is running when the server is SIGKILLed, its
//! writer SIGKILLed once it showed what it goes on to show, then the server restarted on its
//! data and the session read out. What the writer's own `--json` showed is set against what
//! the store holds, and the same host then resumes on its working copy.

use crate::common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_scripted_model::Script;

use common::store_env::{Env, KillOnDrop, audit_clean, lines, ok};

/// Long enough that the server is killed while the second tool runs, short enough that the
/// tool and the next model call end well inside the lease's usable 80 % (below).
const TOOL: &str = "sleep 2";
/// A lease that outlasts the tool and the turn after it with the server gone, so that a writer
/// that goes on does so because its durability does not wait, not because it has not yet
/// noticed its lease.
const LEASE_TTL: &str = "10";

/// A quick tool, a slow one, then an answer: three model calls, three turns.
fn script() -> Script {
    Script::new()
        .tool_call("bash", json!({"command": "true", "description": "first"}))
        .tool_call("bash", json!({"command": TOOL, "description": "second"}))
        .text("done")
}

/// A writer's `--json` events, read on a thread so the test can wait with a bound.
struct Shown {
    rx: Receiver<Value>,
    seen: Vec<Value>,
}

impl Shown {
    fn of(writer: &mut KillOnDrop) -> Self {
        let stdout = writer.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(event) = serde_json::from_str::<Value>(&line) else {
                    return;
                };
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        Shown {
            rx,
            seen: Vec::new(),
        }
    }

    /// Reads until the `n`th event of type `ty` (1-based); fails the test if the writer's
    /// output ends first (or nothing comes for a minute).
    fn until(&mut self, ty: &str, n: usize) {
        loop {
            if self.seen.iter().filter(|e| e["type"] == ty).count() >= n {
                return;
            }
            match self.rx.recv_timeout(Duration::from_secs(60)) {
                Ok(event) => self.seen.push(event),
                Err(e) => panic!("no {ty} #{n} ({e:?}); shown: {:?}", self.types()),
            }
        }
    }

    /// Takes what the writer shows for `quiet` (it is blocked, or it ended).
    fn for_a_while(&mut self, quiet: Duration) {
        let until = Instant::now() + quiet;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(event) => self.seen.push(event),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn types(&self) -> Vec<&str> {
        self.seen
            .iter()
            .filter_map(|e| e["type"].as_str())
            .collect()
    }

    fn session_id(&self) -> String {
        self.seen[0]["data"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The ids of the shown events of type `ty`, in order.
    fn ids_of(&self, ty: &str) -> Vec<String> {
        self.seen
            .iter()
            .filter(|e| e["type"] == ty)
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn ids(journal: &[u8]) -> Vec<String> {
    lines(journal)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The journal's lines up to and including the first of type `ty` (the whole journal when
/// there is none).
fn ids_through(journal: &[u8], ty: &str) -> Vec<String> {
    let events = lines(journal);
    let end = events
        .iter()
        .position(|e| e["type"] == ty)
        .map_or(events.len(), |i| i + 1);
    events[..end]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// What one run left: the events the writer showed, its working copy and the store's export.
struct Stopped {
    env: Env,
    shown: Shown,
    id: String,
    copy: Vec<u8>,
    stored: Vec<u8>,
    model: turnstile_scripted_model::ScriptedServer,
    nats: turnstile_store_nats::local_server::LocalNats,
}

/// Runs the script at `durability`; SIGKILLs the server while the second tool runs, lets the
/// writer show whatever it goes on to show (`shown_after_kill` reads it), SIGKILLs the writer,
/// restarts the server on its data and reads the session out.
fn run_killed(durability: &str, shown_after_kill: impl FnOnce(&mut Shown)) -> Stopped {
    let mut env = Env::new();
    env.lease_ttl = LEASE_TTL;
    let mut nats = env.nats();
    let store = nats.url();
    let model = env.model(script());
    let mut writer = KillOnDrop::spawn(
        env.loop_cmd(
            &store,
            "a",
            &model,
            &["run", "--json", "--durability", durability, "go"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null()),
    );
    let mut shown = Shown::of(&mut writer);
    shown.until("tool.execution_start", 2);
    nats.kill();
    shown_after_kill(&mut shown);
    drop(writer);
    nats.restart().unwrap();
    let id = shown.session_id();
    let stored = env.export(&store, &id);
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();
    assert!(
        copy.starts_with(&stored),
        "the store holds a prefix of what the writer wrote, in its order"
    );
    Stopped {
        env,
        shown,
        id,
        copy,
        stored,
        model,
        nats,
    }
}

/// `event`: the engine goes on only after each line is acknowledged, so every persisted event
/// the writer showed is stored, even when it is SIGKILLed; the line in flight may be in its
/// working copy and not in the store.
#[test]
fn at_event_every_persisted_event_the_writer_showed_is_stored() {
    let run = run_killed("event", |shown| {
        // The tool ends two seconds later; its completion waits for an acknowledgement that
        // cannot come. A writer that did not wait would show it (and the turn end) meanwhile.
        shown.for_a_while(Duration::from_secs(4));
    });
    let stored: HashSet<String> = ids(&run.stored).into_iter().collect();
    let written: HashSet<String> = ids(&run.copy).into_iter().collect();
    for event in &run.shown.seen {
        let id = event["id"].as_str().unwrap();
        if written.contains(id) {
            assert!(stored.contains(id), "shown but not stored: {event}");
        }
    }
    assert_eq!(
        run.shown.ids_of("tool.execution_complete").len(),
        1,
        "the second tool's completion was not shown: {:?}",
        run.shown.types()
    );
    assert!(
        run.copy.len() > run.stored.len(),
        "the line in flight is in the working copy, not in the store"
    );
}

/// `turn`: within a turn the engine does not wait (the writer shows the second tool's
/// completion and the turn's end with the server gone); at a turn end it goes on only once
/// every line is acknowledged (nothing of the third turn is shown), so every turn it went
/// past is stored, and what it showed of the turn in flight may not be. The same host's
/// resume drops the unstored lines from its working copy before it goes on.
#[test]
fn at_turn_every_turn_the_writer_went_past_is_stored() {
    let run = run_killed("turn", |shown| {
        shown.until("assistant.turn_end", 2);
        shown.for_a_while(Duration::from_secs(2));
    });
    assert_eq!(
        run.shown.ids_of("assistant.turn_start").len(),
        2,
        "the third turn waits for the second's acknowledgements: {:?}",
        run.shown.types()
    );
    let stored: HashSet<String> = ids(&run.stored).into_iter().collect();
    for id in ids_through(&run.copy, "assistant.turn_end") {
        assert!(
            stored.contains(&id),
            "a line of the first turn is not stored"
        );
    }
    let unstored: Vec<String> = run
        .shown
        .ids_of("tool.execution_complete")
        .into_iter()
        .chain(run.shown.ids_of("assistant.turn_end"))
        .filter(|id| !stored.contains(id))
        .collect();
    assert!(
        unstored.len() >= 2,
        "the second tool's completion and turn end were shown, not stored"
    );

    // The same host resumes on its working copy, which holds those lines: they are gone
    // before the session goes on.
    let store = run.nats.url();
    let out = run
        .env
        .loop_cmd(&store, "a", &run.model, &["resume", &run.id, "go on"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "done");
    let after = run.env.export(&store, &run.id);
    assert!(
        after.starts_with(&run.stored),
        "the resume continued the store"
    );
    assert_eq!(
        after,
        std::fs::read(run.env.host("a").join(&run.id).join("events.jsonl")).unwrap(),
        "the working copy is the store's journal"
    );
    let resumed: HashSet<String> = ids(&after).into_iter().collect();
    for id in &unstored {
        assert!(
            !resumed.contains(id),
            "a line the store never held came back"
        );
    }
    audit_clean(&after);
}

/// `off`: nothing is waited for before the session closes: the writer answers its third
/// turn and goes idle with the server gone; what the store holds is a prefix of its journal
/// (the acknowledged lines), and what it showed since the kill is not in it.
#[test]
fn at_off_the_writer_waits_for_nothing_before_it_closes() {
    let run = run_killed("off", |shown| {
        shown.until("session.idle", 1);
    });
    assert!(
        run.shown
            .seen
            .iter()
            .any(|e| e["type"] == "assistant.message" && e["data"]["content"] == "done"),
        "the third turn was answered: {:?}",
        run.shown.types()
    );
    let stored: HashSet<String> = ids(&run.stored).into_iter().collect();
    let answer = run.shown.ids_of("assistant.turn_end");
    assert!(
        !stored.contains(answer.last().unwrap()),
        "the last turn end was shown, not stored"
    );
}

/// A session that closes (exit 0) is stored whole at every durability: the close waits for
/// every acknowledgement.
#[test]
fn a_closed_session_is_stored_whole_at_every_durability() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    for durability in ["event", "turn", "off"] {
        let model = env.model(script());
        let out = env
            .loop_cmd(
                &store,
                durability,
                &model,
                &["run", "--json", "--durability", durability, "go"],
            )
            .output()
            .unwrap();
        let shown = ok(&out);
        let first: Value = serde_json::from_str(shown.lines().next().unwrap()).unwrap();
        let id = first["data"]["sessionId"].as_str().unwrap();
        let copy = std::fs::read(env.host(durability).join(id).join("events.jsonl")).unwrap();
        assert_eq!(env.export(&store, id), copy, "{durability}");
        assert_eq!(
            lines(&copy).last().unwrap()["type"],
            "session.shutdown",
            "{durability}"
        );
    }
}
