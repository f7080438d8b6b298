//! One-line facts about a session for listings: id, cwd, created, updated, events, size,
//! first prompt. Cheap: counts lines with `memchr` and parses only the lines it needs.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::event::Event;
use crate::layout::{LayoutError, SessionPaths, io_err};

/// How many leading lines are searched for `session.start` and the first `user.message`.
pub(crate) const HEAD_LINES: usize = 64;

/// What a listing takes from the first [`HEAD_LINES`] lines of a journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeadFacts {
    /// Working directory from `session.start`.
    pub cwd: Option<String>,
    /// Timestamp of the first event.
    pub created: Option<String>,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
}

impl HeadFacts {
    /// Takes what it needs from one line (without its `\n`) of the head.
    pub fn absorb_line(&mut self, line: &[u8]) {
        if let Ok(ev) = Event::from_line(line.trim_ascii_end()) {
            self.absorb_event(&ev);
        }
    }

    /// Takes what it needs from one event of the head.
    pub fn absorb_event(&mut self, ev: &Event) {
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

    /// Reads the head of the journal in `file` (complete lines only, at most [`HEAD_LINES`]).
    pub fn read(file: &std::fs::File) -> std::io::Result<Self> {
        let mut facts = HeadFacts::default();
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        for _ in 0..HEAD_LINES {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 || !line.ends_with(b"\n") {
                break;
            }
            facts.absorb_line(&line);
        }
        Ok(facts)
    }
}

/// The timestamp of the complete line that ends at byte `end` of `file` (as `updated` shows
/// it), reading backwards only as far as that line's start.
pub(crate) fn last_line_timestamp(
    file: &std::fs::File,
    end: u64,
) -> std::io::Result<Option<String>> {
    if end == 0 {
        return Ok(None);
    }
    let mut file = file;
    let mut tail: Vec<u8> = Vec::new();
    let mut start = end;
    let mut chunk = 4096u64;
    loop {
        let from = start.saturating_sub(chunk);
        let mut buf = vec![0; (start - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut buf)?;
        buf.extend_from_slice(&tail);
        tail = buf;
        start = from;
        // The line is `tail[..len-1]` after the previous '\n' (or the file's start).
        let body = &tail[..tail.len() - 1];
        if let Some(nl) = memchr::memrchr(b'\n', body) {
            let line = &body[nl + 1..];
            return Ok(Event::from_line(line.trim_ascii_end())
                .ok()
                .map(|ev| ev.timestamp.to_text()));
        }
        if start == 0 {
            return Ok(Event::from_line(body.trim_ascii_end())
                .ok()
                .map(|ev| ev.timestamp.to_text()));
        }
        chunk = chunk.saturating_mul(2);
    }
}
/// Longest first prompt shown in a listing, in characters.
const PROMPT_CHARS: usize = 120;

/// A session as shown by `turnstile sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        let mut head = HeadFacts::default();
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
                head.absorb_line(&line);
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
        summary.cwd = head.cwd;
        summary.created = head.created;
        summary.first_prompt = head.first_prompt;
        Ok(summary)
    }

    /// Summaries of every session under a root, newest first, each read from its journal.
    pub fn list(root: &crate::layout::StateRoot) -> Result<Vec<Self>, LayoutError> {
        let mut all = Vec::new();
        for id in root.session_ids()? {
            all.push(Self::read(&root.session(id))?);
        }
        sort_newest_first(&mut all);
        Ok(all)
    }

    /// Orders summaries as every listing does: the most recently updated first.
    pub fn sort_newest_first(all: &mut Vec<Self>) {
        sort_newest_first(all);
    }
}

/// Newest first; sessions with the same `updated` stay in id order (the input's).
fn sort_newest_first(all: &mut Vec<SessionSummary>) {
    // Sorting positions instead of the summaries: moving 100 000 large structs around
    // costs more than the comparisons.
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| all[b].updated.cmp(&all[a].updated));
    let mut slots: Vec<Option<SessionSummary>> = all.drain(..).map(Some).collect();
    all.extend(order.into_iter().filter_map(|i| slots[i].take()));
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
    fn last_line_timestamp_reads_back_past_long_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("j");
        let long = "y".repeat(20_000);
        let text = format!(
            "{{\"type\":\"a\",\"data\":{{}},\"id\":\"4786b3be-b429-4ca6-a44b-d9323b7490b8\",\"timestamp\":\"2026-11-29T14:34:34.757Z\",\"parentId\":null}}\n{{\"type\":\"b\",\"data\":{{\"s\":\"{long}\"}},\"id\":\"2e6bfb39-70a8-4464-838b-fbc966681576\",\"timestamp\":\"2026-11-29T14:35:00.000Z\",\"parentId\":\"4786b3be-b429-4ca6-a44b-d9323b7490b8\"}}\n"
        );
        std::fs::write(&path, &text).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let first_end = text.find('\n').unwrap() as u64 + 1;
        assert_eq!(
            last_line_timestamp(&f, text.len() as u64)
                .unwrap()
                .as_deref(),
            Some("2026-11-29T14:35:00.000Z")
        );
        assert_eq!(
            last_line_timestamp(&f, first_end).unwrap().as_deref(),
            Some("2026-11-29T14:34:34.757Z")
        );
        assert_eq!(last_line_timestamp(&f, 0).unwrap(), None);
    }

    #[test]
    fn newest_first_is_a_stable_sort() {
        let at = |n: u128, updated: Option<&str>| SessionSummary {
            id: Some(Uuid::from_u128(n)),
            cwd: None,
            created: None,
            updated: updated.map(str::to_owned),
            events: 0,
            size: 0,
            first_prompt: None,
        };
        let input = vec![
            at(1, Some("b")),
            at(2, None),
            at(3, Some("c")),
            at(4, Some("b")),
            at(5, None),
        ];
        let mut expected = input.clone();
        expected.sort_by(|a, b| b.updated.cmp(&a.updated));
        let mut got = input;
        sort_newest_first(&mut got);
        assert_eq!(got, expected);
    }

    #[test]
    fn count_rest_counts_lines_past_the_head() {
        let text = "a\nb\nc\npartial";
        let (n, last) = count_rest(&mut text.as_bytes(), Path::new("x")).unwrap();
        assert_eq!((n, last.as_deref()), (3, Some(&b"c"[..])));
    }
}
