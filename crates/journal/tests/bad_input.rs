//! Bad input gets a clear error and changes nothing on disk.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use turnstile_journal::{
    JournalReader, JournalWriter, ReadMode, SessionPaths, StateRoot, Uuid, WriterOptions,
    parse_session_id,
};

fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        out.push(entry.strip_prefix(dir).unwrap().display().to_string());
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(walk(&p));
        }
        all.push(p);
    }
    all
}

#[test]
fn non_uuid_ids_are_refused_before_any_path_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in [
        "../../etc",
        "..",
        "a/b",
        "",
        "not-a-uuid",
        "4411488c-e7b6-4328-b266-cdf491e0f73c/../x",
    ] {
        let err = parse_session_id(bad).unwrap_err().to_string();
        assert!(
            err.contains("invalid session id") && err.contains("UUID"),
            "{bad}: {err}"
        );
    }
    assert!(tree(tmp.path()).is_empty());
}

#[test]
fn a_directory_where_the_journal_should_be() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let id = Uuid::new_v4();
    let paths = root.session(id);
    fs::create_dir_all(paths.events.clone()).unwrap();
    let before = tree(tmp.path());
    let err = JournalWriter::open(&paths, WriterOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("events.jsonl") && err.contains("not a regular file"),
        "{err}"
    );
    let err = JournalReader::open(&paths.events, ReadMode::Lenient)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("events.jsonl") && err.contains("directory"),
        "{err}"
    );
    let mut after = tree(tmp.path());
    after.retain(|p| !p.ends_with("writer.lock"));
    assert_eq!(after, before);
}

#[test]
fn an_unreadable_file() {
    if unsafe_is_root() {
        // root reads everything; the permission check cannot be observed.
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("events.jsonl");
    fs::write(&path, "{}\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let err = JournalReader::open(&path, ReadMode::Lenient)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("events.jsonl") && err.contains("ermission"),
        "{err}"
    );
}

fn unsafe_is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn an_empty_journal_opens_clean_and_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let id = Uuid::new_v4();
    let paths = root.create_session(id).unwrap();
    let (writer, rec) = JournalWriter::open(&paths, WriterOptions::default()).unwrap();
    assert_eq!(
        (rec.events, rec.bytes, rec.last_id, rec.torn_tail.is_some()),
        (0, 0, None, false)
    );
    drop(writer);
    assert_eq!(fs::read(&paths.events).unwrap().len(), 0);
    assert_eq!(
        JournalReader::open(&paths.events, ReadMode::Lenient)
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_missing_session_is_not_created_by_opening() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = SessionPaths::from_dir(tmp.path().join(Uuid::new_v4().to_string()));
    let err = JournalWriter::open(&paths, WriterOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a session directory"), "{err}");
    assert!(tree(tmp.path()).is_empty());
}

#[test]
fn mid_file_damage_refuses_append_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let paths = root.create_session(Uuid::new_v4()).unwrap();
    let good = r#"{"type":"session.info","data":{},"id":"4786b3be-b429-4ca6-a44b-d9323b7490b8","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}"#;
    let text = format!("{good}\n{{broken\n{good}\n");
    fs::write(&paths.events, &text).unwrap();
    let err = JournalWriter::open(&paths, WriterOptions::default())
        .unwrap_err()
        .to_string();
    let at = format!(":2 (byte {})", good.len() + 1);
    assert!(err.contains(&at) && err.contains("--salvage"), "{err}");
    assert_eq!(fs::read_to_string(&paths.events).unwrap(), text);
}
