//! What the tests share: the repository's fixtures, journals edited line by line, generated
//! sessions.
#![allow(dead_code)]

pub mod session;

use std::path::{Path, PathBuf};

use serde_json::Value;
use turnstile_diff::{Options, Report, diff_files};

/// A path under the repository's `fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Every `events.jsonl` journal under `fixtures/` (the real runtime's included).
pub fn fixture_journals() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![fixture("")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().ends_with("events.jsonl") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// What to do with one line of a journal being edited.
pub enum Edit {
    Keep,
    Drop,
    /// The line, changed in place.
    Change(Value),
    /// The line, then another after it.
    Append(Value),
}

/// `journal`'s lines, edited by `edit` (given each line's 1-based number and event), written
/// as `dir/events.jsonl`.
pub fn edited(journal: &Path, dir: &Path, mut edit: impl FnMut(u64, &Value) -> Edit) -> PathBuf {
    let text = std::fs::read_to_string(journal).expect("the journal is readable");
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let event: Value = serde_json::from_str(line).expect("a JSON line");
        match edit(i as u64 + 1, &event) {
            Edit::Keep => out.push_str(line),
            Edit::Drop => continue,
            Edit::Change(v) => out.push_str(&v.to_string()),
            Edit::Append(v) => {
                out.push_str(line);
                out.push('\n');
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    std::fs::create_dir_all(dir).expect("a directory");
    let path = dir.join("events.jsonl");
    std::fs::write(&path, out).expect("the edited journal is written");
    path
}

/// The report of `a` against `b` with the profile chosen from them.
pub fn diff(a: &Path, b: &Path) -> Report {
    diff_files(a, b, &Options::default()).expect("both journals are readable")
}
