//! Damaged and hostile journals: a clean error naming the file and the line, never a panic,
//! never a line held whole past the readers' limit.

use std::io::{Seek, SeekFrom, Write};

use turnstile_diff::{DiffError, Options, diff_files};
use turnstile_journal::{DEFAULT_MAX_LINE_BYTES, ReadError};

use crate::common::fixture;

fn lines_of_fixture() -> Vec<String> {
    std::fs::read_to_string(fixture("multi-turn/events.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn error(bytes: &[u8]) -> (DiffError, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("events.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let good = fixture("multi-turn/events.jsonl");
    // On either side.
    let e = diff_files(&good, &path, &Options::default()).expect_err("a damaged journal");
    let e2 = diff_files(&path, &good, &Options::default()).expect_err("a damaged journal");
    assert_eq!(e.to_string(), e2.to_string());
    (e, path, tmp)
}

#[test]
fn a_torn_tail_names_its_line() {
    let lines = lines_of_fixture();
    let mut text = lines.join("\n");
    text.truncate(text.len() - 40);
    let (e, path, _tmp) = error(text.as_bytes());
    assert!(
        matches!(e, DiffError::Read(ReadError::TornTail { .. })),
        "{e}"
    );
    assert_eq!(e.line(), Some(lines.len() as u64));
    let shown = e.to_string();
    assert!(
        shown.contains(&format!("{}:{}", path.display(), lines.len())),
        "{shown}"
    );
}

#[test]
fn a_garbage_line_names_the_file_and_line() {
    let mut lines = lines_of_fixture();
    lines.insert(4, "this is no JSON {".into());
    let (e, path, _tmp) = error((lines.join("\n") + "\n").as_bytes());
    assert!(
        matches!(e, DiffError::Read(ReadError::BadLine { line: 5, .. })),
        "{e}"
    );
    assert!(
        e.to_string().starts_with(&format!("{}:5", path.display())),
        "{e}"
    );
    // Binary garbage, and JSON that is no event.
    for bad in ["\u{0}\u{0}\u{0}", "[1, 2, 3]", "{\"type\": 5}"] {
        let mut lines = lines_of_fixture();
        lines.insert(2, bad.into());
        let (e, _, _tmp) = error((lines.join("\n") + "\n").as_bytes());
        assert_eq!(e.line(), Some(3), "{bad:?}: {e}");
    }
}

#[test]
fn a_missing_file_names_it() {
    let good = fixture("multi-turn/events.jsonl");
    let missing = std::path::Path::new("/nonexistent/events.jsonl");
    let e = diff_files(&good, missing, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/events.jsonl"), "{e}");
}

#[test]
fn a_line_over_the_limit_is_refused_unread() {
    // A sparse file: a line of the readers' limit and one byte more, costing no disk.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("events.jsonl");
    let mut lines = lines_of_fixture();
    lines.truncate(3);
    let head = lines.join("\n") + "\n{\"type\":\"session.info\",\"data\":{\"message\":\"";
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(head.as_bytes()).unwrap();
    let end = head.len() as u64 + DEFAULT_MAX_LINE_BYTES as u64 + 1;
    file.seek(SeekFrom::Start(end)).unwrap();
    file.write_all(b"\"}}\n").unwrap();
    drop(file);
    let good = fixture("multi-turn/events.jsonl");
    let e = diff_files(&good, &path, &Options::default()).unwrap_err();
    assert!(
        matches!(e, DiffError::Read(ReadError::Oversized { line: 4, .. })),
        "{e}"
    );
}
