//! One-line facts about a session for listings: id, cwd, created, updated, events, size,
//! first prompt. Cheap: counts lines with `memchr` and parses only the lines it needs.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Serialize;
use uuid::Uuid;

use crate::event::Event;
use crate::layout::{LayoutError, SessionPaths, io_err};

/// How many leading lines are searched for `session.start` and the first `user.message`.
const HEAD_LINES: usize = 64;
/// Longest first prompt shown in a listing, in characters.
const PROMPT_CHARS: usize = 120;

/// A session as shown by `turnstile sessions`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id.
    pub id: Option<Uuid>,
    /// Working directory from `session.start`.
    pub cwd: Option<String>,
    /// Timestamp of the first event.
    pub created: Option<String>,
    /// Timestamp of the last complete event.
    pub updated: Option<String>,
    /// Number of complete lines.
    pub events: u64,
    /// Size of the journal in bytes.
    pub size: u64,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
}

impl SessionSummary {
    /// Reads the summary of one session.
    pub fn read(paths: &SessionPaths) -> Result<Self, LayoutError> {
        paths.check_events_file()?;
        let file =
            crate::session_dir::open_read_nofollow(&paths.events).map_err(io_err(&paths.events))?;
        let size = file.metadata().map_err(io_err(&paths.events))?.len();
        let mut summary = SessionSummary {
            id: paths.id,
            cwd: None,
            created: None,
            updated: None,
            events: 0,
            size,
            first_prompt: None,
        };
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut last_complete: Vec<u8> = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(io_err(&paths.events))?;
            if n == 0 || !line.ends_with(b"\n") {
                break;
            }
            summary.events += 1;
            if summary.events as usize <= HEAD_LINES {
                summary.absorb_head(&line);
            } else {
                // Past the head only the count and the last line matter: count the rest fast.
                std::mem::swap(&mut last_complete, &mut line);
                let (count, last) = count_rest(&mut reader, &paths.events)?;
                summary.events += count;
                if let Some(last) = last {
                    last_complete = last;
                }
                break;
            }
            last_complete.clone_from(&line);
        }
        if let Ok(ev) = Event::from_line(last_complete.trim_ascii_end()) {
            summary.updated = Some(ev.timestamp.to_text());
        }
        Ok(summary)
    }

    fn absorb_head(&mut self, line: &[u8]) {
        let Ok(ev) = Event::from_line(line.trim_ascii_end()) else {
            return;
        };
        if self.created.is_none() {
            self.created = Some(ev.timestamp.to_text());
        }
        let data = || serde_json::from_str::<serde_json::Value>(ev.data.get()).ok();
        match ev.event_type.as_str() {
            "session.start" if self.cwd.is_none() => {
                self.cwd = data().and_then(|d| d["context"]["cwd"].as_str().map(str::to_owned));
            }
            "user.message" if self.first_prompt.is_none() => {
                self.first_prompt = data().and_then(|d| d["content"].as_str().map(shorten));
            }
            _ => {}
        }
    }

    /// Summaries of every session under a root, newest first.
    pub fn list(root: &crate::layout::StateRoot) -> Result<Vec<Self>, LayoutError> {
        let mut all = Vec::new();
        for id in root.session_ids()? {
            all.push(Self::read(&root.session(id))?);
        }
        all.sort_by(|a, b| b.updated.cmp(&a.updated));
        Ok(all)
    }
}

/// Counts the remaining complete lines and returns the last one.
fn count_rest(
    reader: &mut impl BufRead,
    path: &Path,
) -> Result<(u64, Option<Vec<u8>>), LayoutError> {
    let mut count = 0u64;
    let mut current: Vec<u8> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    loop {
        let buf = reader.fill_buf().map_err(io_err(path))?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', buf) {
            count += 1;
            current.extend_from_slice(&buf[start..nl]);
            last = Some(std::mem::take(&mut current));
            start = nl + 1;
        }
        current.extend_from_slice(&buf[start..]);
        // Keep only the bytes of the line in progress (bounded by one line).
        reader.consume(len);
    }
    Ok((count, last))
}

fn shorten(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= PROMPT_CHARS {
        one_line
    } else {
        let cut: String = one_line.chars().take(PROMPT_CHARS - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_runtime_recording() {
        let tmp = tempfile::tempdir().unwrap();
        let id = Uuid::parse_str("4411488c-e7b6-4328-b266-cdf491e0f73c").unwrap();
        let root = crate::layout::StateRoot::new(tmp.path());
        let paths = root.session(id);
        std::fs::create_dir_all(&paths.dir).unwrap();
        let src = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/copilot-runtime/r1-resumed.events.jsonl"
        );
        std::fs::copy(src, &paths.events).unwrap();
        let s = SessionSummary::read(&paths).unwrap();
        assert_eq!(s.id, Some(id));
        assert_eq!(s.cwd.as_deref(), Some("/home/dev/project"));
        assert_eq!(s.events, 41);
        assert_eq!(s.created.as_deref(), Some("2026-11-29T14:34:34.757Z"));
        assert!(s.first_prompt.unwrap().starts_with("List the .txt files"));
        assert_eq!(SessionSummary::list(&root).unwrap().len(), 1);
    }

    #[test]
    fn count_rest_counts_lines_past_the_head() {
        let text = "a\nb\nc\npartial";
        let (n, last) = count_rest(&mut text.as_bytes(), Path::new("x")).unwrap();
        assert_eq!((n, last.as_deref()), (3, Some(&b"c"[..])));
    }
}
