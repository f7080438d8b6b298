//! What always differs between two runs of a session, written the same way on both sides:
//! ids become `<id N>` (numbered by first appearance on their side, so two sessions that
//! refer to the same things in the same order compare equal), times and durations are left
//! out, and the paths that name the machine rather than the agent (the session's directory,
//! its working directory, temporary directories) become `<session-dir>`, `<cwd>` and `<tmp>`;
//! the session's own id becomes `<session>`.
//!
//! One [`Normaliser`] per journal: its ids are numbered in the order that journal's compared
//! values show them.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

/// Keys whose values are times or durations, wherever they are.
fn is_time_key(key: &str) -> bool {
    key == "timestamp"
        || key.ends_with("Time")
        || key.ends_with("Timestamp")
        || key == "durationMs"
        || key.ends_with("DurationMs")
}

/// Keys whose string values are ids, wherever they are (`toolCallId`, `messageId`, ...).
fn is_id_key(key: &str) -> bool {
    key.ends_with("Id") || key == "id"
}

/// Whether `text` is a UUID in its hyphenated form (an id whatever its key).
fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Rewrites one journal's compared values (see the module doc).
#[derive(Debug, Default)]
pub struct Normaliser {
    /// Text replaced wherever it occurs, longest first.
    paths: Vec<(String, &'static str)>,
    /// The session's id.
    session_id: Option<String>,
    /// The temporary directory whose `.tmpXXXXXX` children are `<tmp>`.
    temp: String,
    /// Every id seen, with its number.
    ids: HashMap<String, usize>,
}

impl Normaliser {
    /// A normaliser for the journal at `journal`: its directory is the session's directory
    /// when the file is a session directory's `events.jsonl`.
    pub fn new(journal: &Path) -> Self {
        let mut norm = Normaliser {
            temp: std::env::temp_dir()
                .to_string_lossy()
                .trim_end_matches('/')
                .to_owned(),
            ..Normaliser::default()
        };
        if journal.file_name().is_some_and(|n| n == "events.jsonl")
            && let Some(dir) = journal.parent().filter(|d| !d.as_os_str().is_empty())
        {
            norm.add_path(&dir.to_string_lossy(), "<session-dir>");
            if let Ok(real) = dir.canonicalize() {
                norm.add_path(&real.to_string_lossy(), "<session-dir>");
            }
        }
        norm
    }

    /// Learns what a `session.start` or `session.resume` says of the machine: the session's
    /// id and its working directory.
    pub fn learn(&mut self, event_type: &str, data: &Value) {
        if event_type != "session.start" && event_type != "session.resume" {
            return;
        }
        if let Some(id) = data.get("sessionId").and_then(Value::as_str) {
            self.session_id = Some(id.to_owned());
        }
        if let Some(cwd) = data.pointer("/context/cwd").and_then(Value::as_str) {
            self.add_path(cwd, "<cwd>");
        }
    }

    /// Names `path` `<cwd>` too.
    pub fn add_cwd(&mut self, path: &str) {
        self.add_path(path, "<cwd>");
    }

    fn add_path(&mut self, path: &str, name: &'static str) {
        let path = path.trim_end_matches('/');
        // `/` or an empty path would rewrite every text.
        if path.len() < 2 || self.paths.iter().any(|(p, _)| p == path) {
            return;
        }
        self.paths.push((path.to_owned(), name));
        self.paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }

    /// `value` normalised in place. Object keys are visited in sorted order, so ids are
    /// numbered alike whatever order each engine writes its keys in.
    pub fn value(&mut self, value: &mut Value) {
        match value {
            Value::Object(map) => self.object(map),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::String(text) => self.text(text, false),
            _ => {}
        }
    }

    fn object(&mut self, map: &mut Map<String, Value>) {
        map.retain(|key, _| !is_time_key(key));
        let mut keys: Vec<String> = map.keys().cloned().collect();
        keys.sort_unstable();
        for key in keys {
            let Some(v) = map.get_mut(&key) else { continue };
            match v {
                Value::String(text) => self.text(text, is_id_key(&key)),
                other => self.value(other),
            }
        }
    }

    fn text(&mut self, text: &mut String, id: bool) {
        if self.session_id.as_deref() == Some(text.as_str()) {
            *text = "<session>".to_owned();
            return;
        }
        if id || is_uuid(text) {
            let next = self.ids.len() + 1;
            let n = *self.ids.entry(std::mem::take(text)).or_insert(next);
            *text = format!("<id {n}>");
            return;
        }
        for (path, name) in &self.paths {
            if text.contains(path.as_str()) {
                *text = text.replace(path.as_str(), name);
            }
        }
        if let Some(session) = &self.session_id
            && text.contains(session.as_str())
        {
            *text = text.replace(session.as_str(), "<session>");
        }
        self.temp_dirs(text);
    }

    /// Replaces `<temp>/.tmpXXXXXX` (the names `mkdtemp` and Rust's `tempfile` give) by `<tmp>`.
    fn temp_dirs(&self, text: &mut String) {
        let prefix = format!("{}/.tmp", self.temp);
        if !text.contains(&prefix) {
            return;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(&prefix) {
            let tail = &rest[at + prefix.len()..];
            let name = tail
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            out.push_str(&rest[..at]);
            if name >= 6 {
                out.push_str("<tmp>");
                rest = &tail[name..];
            } else {
                out.push_str(&prefix);
                rest = tail;
            }
        }
        out.push_str(rest);
        *text = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_numbered_by_first_appearance_and_paths_named() {
        let mut norm = Normaliser::new(Path::new("/state/abc/events.jsonl"));
        norm.learn(
            "session.start",
            &json!({"sessionId": "s-1", "context": {"cwd": "/work/project"}}),
        );
        let tmp = std::env::temp_dir();
        let tmp = tmp.to_string_lossy();
        let tmp = tmp.trim_end_matches('/');
        let mut v = json!({
            "toolCallId": "call_9",
            "b": "4411488c-e7b6-4328-b266-cdf491e0f73c",
            "a": "call_9",
            "startTime": "2026-01-01",
            "durationMs": 5,
            "text": format!("cat /work/project/x in /state/abc for s-1, {tmp}/.tmpAb12Cd/y and {tmp}/.tmpx"),
            "sessionId": "s-1",
        });
        norm.value(&mut v);
        // Keys in sorted order: `b` is the first id seen, `toolCallId` the second.
        assert_eq!(
            v,
            json!({
                "toolCallId": "<id 2>",
                "b": "<id 1>",
                "a": "call_9",
                "text": format!("cat <cwd>/x in <session-dir> for <session>, <tmp>/y and {tmp}/.tmpx"),
                "sessionId": "<session>",
            })
        );
        let mut again = json!({"messageId": "call_9"});
        norm.value(&mut again);
        assert_eq!(
            again,
            json!({"messageId": "<id 2>"}),
            "the same id, the same number"
        );
    }

    #[test]
    fn key_order_does_not_change_the_numbers() {
        let (mut a, mut b) = (
            Normaliser::new(Path::new("a.jsonl")),
            Normaliser::new(Path::new("b.jsonl")),
        );
        let mut x = json!({"messageId": "m1", "toolCallId": "t1"});
        let mut y = json!({"toolCallId": "t9", "messageId": "m9"});
        a.value(&mut x);
        b.value(&mut y);
        assert_eq!(x, y);
    }
}
