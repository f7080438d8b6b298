//! The session index: kept warm by writers, rebuilt when deleted or corrupted, never trusted
//! for a journal that changed behind its back, and whole under concurrent writer processes.
//! Every listing is compared with the one read from the journals alone, and every ending it
//! gives (how the journal ends, its model) with the one read off the journal's ends.
//!
//! The concurrent writers are this same test binary, re-run with an environment variable
//! (the `child_writer` test does the work only then).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::value::RawValue;
use turnstile_journal::ending::{EndState, Ending};
use turnstile_journal::index::{INDEX_FILE, IndexRecord};
use turnstile_journal::{
    Durability, Event, EventType, JournalWriter, SessionSummary, StateRoot, Uuid, WriterOptions,
};

const CHILD_ENV: &str = "TURNSTILE_TEST_INDEX_CHILD";

fn event(kind: &str, data: String, parent: Option<Uuid>) -> Event {
    Event::with_raw_data(
        EventType::new(kind),
        RawValue::from_string(data).unwrap(),
        parent,
    )
}

/// A session like the loop writes: start, then `turns` prompts of a few events each; every
/// other one shut down (one in three of those after an error of its last prompt), every
/// fourth with a change of model.
fn write_session(root: &StateRoot, n: u64, turns: u64) -> Uuid {
    let id = Uuid::new_v4();
    let opts = WriterOptions {
        durability: Durability::Turn,
        ..Default::default()
    };
    let (w, _) = JournalWriter::create(root, id, opts).unwrap();
    let start = event(
        "session.start",
        format!(
            r#"{{"sessionId":"{id}","selectedModel":"model-a","context":{{"cwd":"/work/project-{n}"}}}}"#
        ),
        None,
    );
    w.append(&start).unwrap();
    if n.is_multiple_of(4) {
        let change = event(
            "session.model_change",
            r#"{"newModel":"model-b"}"#.into(),
            w.last_id(),
        );
        w.append(&change).unwrap();
    }
    for t in 0..turns {
        let prompt =
            serde_json::to_string(&format!("prompt {t} of session {n}: fix the «bug»\nplease"))
                .unwrap();
        let msg = event(
            "user.message",
            format!(r#"{{"content":{prompt}}}"#),
            w.last_id(),
        );
        w.append(&msg).unwrap();
        let ts = event(
            "assistant.turn_start",
            r#"{"turnId":"0"}"#.into(),
            w.last_id(),
        );
        w.append(&ts).unwrap();
        if n.is_multiple_of(3) && t + 1 == turns {
            let error = event(
                "session.error",
                r#"{"errorType":"model","message":"the model failed"}"#.into(),
                w.last_id(),
            );
            w.append(&error).unwrap();
        }
        let te = event(
            "assistant.turn_end",
            r#"{"turnId":"0"}"#.into(),
            w.last_id(),
        );
        w.append(&te).unwrap();
        w.turn_boundary().unwrap();
    }
    if n.is_multiple_of(2) {
        let shutdown = event(
            "session.shutdown",
            r#"{"shutdownType":"routine"}"#.into(),
            w.last_id(),
        );
        w.append(&shutdown).unwrap();
    }
    w.close().unwrap();
    id
}

/// The listing from the index, its endings checked against the journals' ends (so only
/// where no writer is appending).
fn indexed(root: &StateRoot) -> (Vec<SessionSummary>, turnstile_journal::index::ListingStats) {
    let listing = SessionSummary::list_indexed_with_endings(root).unwrap();
    assert_eq!(listing.endings.len(), listing.sessions.len());
    for (s, ending) in listing.sessions.iter().zip(&listing.endings) {
        let id = s.id.unwrap();
        assert_eq!(ending.as_ref(), Some(&ending_of(root, id)), "session {id}");
    }
    (listing.sessions, listing.stats)
}

/// How the journal of `id` ends, read off its ends.
fn ending_of(root: &StateRoot, id: Uuid) -> Ending {
    let file = fs::File::open(root.session(id).events).unwrap();
    let len = file.metadata().unwrap().len();
    Ending::read(&file, len).unwrap()
}

fn truth(root: &StateRoot) -> Vec<SessionSummary> {
    SessionSummary::list(root).unwrap()
}

fn index_lines(root: &Path) -> Vec<String> {
    fs::read_to_string(root.join(INDEX_FILE))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn writers_keep_the_index_warm_and_the_listing_is_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    // 30 turns make a journal longer than the 64-line head the listing reads.
    for n in 0..12 {
        write_session(&root, n, 1 + n % 3 + if n == 5 { 30 } else { 0 });
    }
    let (list, stats) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert_eq!(list.len(), 12);
    assert_eq!(stats.from_index, 12, "{stats:?}");
    assert_eq!(stats.read_from_journal, 0);
    // The writers' records carry the endings: no journal was read for them.
    assert_eq!(stats.endings_read, 0);
    let states: Vec<EndState> = (0..12)
        .map(|n| {
            let id = list
                .iter()
                .find(|s| s.cwd.as_deref() == Some(&*format!("/work/project-{n}")))
                .unwrap()
                .id
                .unwrap();
            ending_of(&root, id).state()
        })
        .collect();
    assert_eq!(
        states.iter().filter(|s| **s == EndState::Failed).count(),
        2,
        "{states:?}"
    );
    assert_eq!(states.iter().filter(|s| **s == EndState::Open).count(), 6);
    assert!(list.iter().all(|s| {
        s.first_prompt
            .as_deref()
            .is_some_and(|p| p.contains("«bug»"))
    }));
}

#[test]
fn a_deleted_index_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    for n in 0..8 {
        write_session(&root, n, 2);
    }
    fs::remove_file(tmp.path().join(INDEX_FILE)).unwrap();
    let (list, stats) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert_eq!((stats.read_from_journal, stats.rewritten), (8, true));
    let (again, stats) = indexed(&root);
    assert_eq!(again, list);
    assert_eq!((stats.from_index, stats.rewritten), (8, false));
    assert_eq!(
        index_lines(tmp.path()).len(),
        8,
        "compacted: one record per session"
    );
}

#[test]
fn a_corrupted_index_is_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    for n in 0..6 {
        write_session(&root, n, 1);
    }
    let path = tmp.path().join(INDEX_FILE);
    let text = fs::read(&path).unwrap();
    // A torn last record, then garbage and NUL fill after a power loss.
    let mut bad = text[..text.len() - 30].to_vec();
    bad.extend_from_slice(b"\n{\"id\":42}\ngarbage\n");
    bad.extend_from_slice(&[0; 300]);
    fs::write(&path, &bad).unwrap();
    let (list, stats) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert!(stats.rewritten, "{stats:?}");
    for line in index_lines(tmp.path()) {
        serde_json::from_str::<IndexRecord>(&line).expect("only whole records after a rewrite");
    }
    let (_, stats) = indexed(&root);
    assert_eq!(stats.from_index, 6);
}

#[test]
fn a_journal_changed_behind_the_index_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let ids: Vec<Uuid> = (0..4).map(|n| write_session(&root, n, 1)).collect();
    assert_eq!(indexed(&root).1.from_index, 4);
    // Another program (the Copilot CLI, an editor) appends an event, at once, same second.
    let events = root.session(ids[2]).events;
    let last = truth(&root)
        .into_iter()
        .find(|s| s.id == Some(ids[2]))
        .unwrap();
    let line = format!(
        r#"{{"type":"session.info","data":{{}},"id":"{}","timestamp":"2027-01-01T00:00:00.000Z","parentId":null}}"#,
        Uuid::new_v4()
    );
    fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
    let (list, stats) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert_eq!((stats.from_index, stats.read_from_journal), (3, 1));
    let changed = list.iter().find(|s| s.id == Some(ids[2])).unwrap();
    assert_eq!(changed.events, last.events + 1);
    assert_eq!(list[0].id, Some(ids[2]), "now the newest");
    // A session removed behind its back disappears; one added appears.
    fs::remove_dir_all(root.session(ids[0]).dir).unwrap();
    let extra = Uuid::new_v4();
    fs::create_dir(root.session(extra).dir).unwrap();
    fs::write(root.session(extra).events, format!("{line}\n")).unwrap();
    let (list, _) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert!(list.iter().any(|s| s.id == Some(extra)) && !list.iter().any(|s| s.id == Some(ids[0])));
}

#[test]
fn an_index_without_endings_has_them_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    for n in 0..6 {
        write_session(&root, n, 2);
    }
    assert_eq!(indexed(&root).1.from_index, 6);
    // The records an earlier version wrote: the same without the ending.
    let path = tmp.path().join(INDEX_FILE);
    let mut older = String::new();
    for line in index_lines(tmp.path()) {
        let mut record: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(record["ending"].is_object(), "{line}");
        record.as_object_mut().unwrap().remove("ending");
        older.push_str(&format!("{record}\n"));
    }
    fs::write(&path, older).unwrap();
    let (list, stats) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert_eq!(
        (stats.from_index, stats.endings_read, stats.rewritten),
        (6, 6, true)
    );
    let (_, stats) = indexed(&root);
    assert_eq!((stats.from_index, stats.endings_read), (6, 0));
}

#[test]
fn a_session_resumed_and_killed_after_its_last_record_is_open_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let id = write_session(&root, 2, 1);
    let (_, stats) = indexed(&root);
    assert_eq!(stats.from_index, 1);
    assert_eq!(ending_of(&root, id).state(), EndState::Clean);
    // A resume writes its first lines and dies before its writer adds a record.
    append_event(
        &root,
        id,
        "session.resume",
        r#"{"selectedModel":"model-c"}"#,
        "2100-01-01T00:00:00.000Z",
    );
    let listing = SessionSummary::list_indexed_with_endings(&root).unwrap();
    assert_eq!(listing.stats.read_from_journal, 1);
    let ending = listing.endings[0].clone().unwrap();
    assert_eq!(
        (ending.state(), ending.model.as_deref()),
        (EndState::Open, Some("model-c"))
    );
    // The rewritten record says so too.
    let (_, stats) = indexed(&root);
    assert_eq!((stats.from_index, stats.read_from_journal), (1, 0));
}

fn newest(root: &StateRoot) -> Option<Uuid> {
    let (id, _) = SessionSummary::newest_indexed(root).unwrap();
    assert_eq!(
        id,
        truth(root).first().and_then(|s| s.id),
        "newest is what the journals say"
    );
    id
}

/// Appends a `session.info` event stamped `timestamp` to a session's journal, as another
/// program would, without touching the index.
fn append_behind_the_index(root: &StateRoot, id: Uuid, timestamp: &str) {
    append_event(root, id, "session.info", "{}", timestamp);
}

/// Appends an event of `kind` with `data` to a session's journal without touching the index.
fn append_event(root: &StateRoot, id: Uuid, kind: &str, data: &str, timestamp: &str) {
    let line = format!(
        r#"{{"type":"{kind}","data":{data},"id":"{}","timestamp":"{timestamp}","parentId":null}}"#,
        Uuid::new_v4()
    );
    fs::OpenOptions::new()
        .append(true)
        .open(root.session(id).events)
        .unwrap()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
}

#[test]
fn the_newest_session_is_found_even_when_records_are_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    assert_eq!(newest(&root), None);
    let ids: Vec<Uuid> = (0..5).map(|n| write_session(&root, n, 1)).collect();
    let first = newest(&root).unwrap();
    assert_eq!(Some(first), indexed(&root).0[0].id);
    // The newest record goes stale and its session is no longer the newest: its journal got
    // an event stamped long ago (an import), so another session is newest now.
    append_behind_the_index(&root, first, "2000-01-01T00:00:00.000Z");
    let second = newest(&root).unwrap();
    assert_ne!(second, first);
    // An old session's record goes stale with its journal now the newest of all.
    let old = *ids.iter().find(|id| ![first, second].contains(id)).unwrap();
    append_behind_the_index(&root, old, "2100-01-01T00:00:00.000Z");
    assert_eq!(newest(&root), Some(old));
    // Two sessions read from their journals, the newer one with the greater id; then a tie
    // between a record and a journal is broken by the smaller id, as the listing orders.
    let (mut a, mut b) = (ids[0], ids[1]);
    if a > b {
        std::mem::swap(&mut a, &mut b);
    }
    append_behind_the_index(&root, a, "2200-01-01T00:00:00.000Z");
    append_behind_the_index(&root, b, "2200-01-01T00:00:01.000Z");
    assert_eq!(newest(&root), Some(b));
    let (list, stats) = indexed(&root);
    assert_eq!((stats.from_index, stats.read_from_journal), (5, 0));
    assert_eq!(list, truth(&root));
    append_behind_the_index(&root, a, "2200-01-01T00:00:01.000Z");
    assert_eq!(newest(&root), Some(a));
    let (list, _) = indexed(&root);
    assert_eq!(list, truth(&root));
    assert_eq!(list[0].id, Some(a));
    assert_eq!(list[1].id, Some(b));
}

#[test]
fn child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let root = StateRoot::new(dir);
    for n in 0..15 {
        write_session(&root, n, 1 + n % 4);
    }
}

#[test]
fn concurrent_writer_processes_and_listings_keep_the_index_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "session_index::child_writer", "--nocapture"])
                .env(CHILD_ENV, tmp.path())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // Listings (which rewrite the index) while the writers append to it.
    let mut listings = 0;
    let mut running = children;
    while !running.is_empty() {
        // Not `indexed`: the journals grow while the listing reads them.
        let (list, _) = SessionSummary::list_indexed(&root).unwrap();
        assert!(list.len() <= 60);
        listings += 1;
        running.retain_mut(|c| match c.try_wait().unwrap() {
            Some(status) => {
                assert!(status.success(), "a writer process failed: {status}");
                false
            }
            None => true,
        });
    }
    assert!(listings > 0);
    let (list, _) = indexed(&root);
    assert_eq!(list.len(), 60);
    assert_eq!(list, truth(&root));
    for line in index_lines(tmp.path()) {
        serde_json::from_str::<IndexRecord>(&line).expect("no interleaved or torn record");
    }
    let (again, stats) = indexed(&root);
    assert_eq!(again, list);
    assert_eq!(stats.from_index, 60, "{stats:?}");
}

#[test]
fn a_copilot_homes_index_lies_beside_session_state_and_an_old_one_is_moved_there() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("session-state");
    let root = StateRoot::new(&state);
    let first = write_session(&root, 1, 1);
    let beside = home.path().join(INDEX_FILE);
    assert!(
        beside.is_file(),
        "the writer's record beside session-state/"
    );
    assert!(!state.join(INDEX_FILE).exists());
    // Nothing in session-state/ but session directories.
    for entry in fs::read_dir(&state).unwrap() {
        let entry = entry.unwrap();
        assert!(
            entry.file_type().unwrap().is_dir(),
            "{:?}",
            entry.file_name()
        );
    }

    // An index an earlier version left inside session-state/ is moved out on the next open.
    fs::rename(&beside, state.join(INDEX_FILE)).unwrap();
    let (listed, _) = indexed(&root);
    assert_eq!(listed, truth(&root));
    assert!(!state.join(INDEX_FILE).exists(), "moved out");
    assert!(beside.is_file());
    // When both are there, the one inside goes.
    fs::write(state.join(INDEX_FILE), "garbage\n").unwrap();
    let second = write_session(&root, 2, 1);
    assert!(!state.join(INDEX_FILE).exists());
    let ids: Vec<Uuid> = indexed(&root).0.iter().filter_map(|s| s.id).collect();
    assert!(ids.contains(&first) && ids.contains(&second), "{ids:?}");
    assert_eq!(indexed(&root).0, truth(&root));
}
