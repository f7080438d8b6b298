//! A journal read whole, each event with its line number and its text as written.

use std::path::{Path, PathBuf};

use serde_json::Value;
use turnstile_journal::{BoundedLines, Event, JournalReader, ReadError, ReadMode, max_line_bytes};

use crate::error::FixtureError;

/// One event of a journal.
#[derive(Debug, Clone)]
pub struct JournalLine {
    /// 1-based line number.
    pub number: u64,
    /// The event.
    pub event: Event,
    /// The line as written (without its newline).
    pub text: String,
}

impl JournalLine {
    /// The event's type.
    pub fn event_type(&self) -> &str {
        self.event.event_type.as_str()
    }

    /// The event's `data` as a JSON value (`null` if it does not parse, which a reader never
    /// lets through).
    pub fn data(&self) -> Value {
        serde_json::from_str(self.event.data.get()).unwrap_or(Value::Null)
    }

    /// Whether the event belongs to the main agent (no `agentId`).
    pub fn is_top_level(&self) -> bool {
        self.event.agent_id.is_none()
    }
}

/// Every event of the journal at `path`, in order. Unknown event types are fine (another
/// engine wrote them); a damaged line is an error naming the file and line. A line longer
/// than the readers' limit is refused, with its number and size, before the file is read
/// whole: it is measured, never held.
pub fn read_journal(path: &Path) -> Result<Vec<JournalLine>, FixtureError> {
    refuse_long_lines(path)?;
    let bytes = std::fs::read(path).map_err(FixtureError::io(path))?;
    let reader = JournalReader::new(
        PathBuf::from(path),
        std::io::BufReader::new(bytes.as_slice()),
        ReadMode::Lenient,
    );
    let mut lines = Vec::new();
    for record in reader {
        let record = record?;
        let start = usize::try_from(record.offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(record.len).unwrap_or(0));
        let raw = bytes.get(start..end.min(bytes.len())).unwrap_or_default();
        let text = String::from_utf8_lossy(raw)
            .trim_end_matches(['\n', '\r'])
            .to_owned();
        lines.push(JournalLine {
            number: record.line,
            event: record.event,
            text,
        });
    }
    Ok(lines)
}

/// The first line of `path` longer than [`max_line_bytes`], as the reader's error (an
/// unfinished one is the torn tail the reader would find after reading it whole).
fn refuse_long_lines(path: &Path) -> Result<(), FixtureError> {
    let file = std::fs::File::open(path).map_err(FixtureError::io(path))?;
    let max = max_line_bytes();
    let mut lines = BoundedLines::new(std::io::BufReader::with_capacity(1 << 16, file), max);
    while let Some(info) = lines.next_line().map_err(FixtureError::io(path))? {
        if info.oversized && !info.terminated {
            return Err(ReadError::TornTail {
                path: path.to_path_buf(),
                line: info.line,
                offset: info.offset,
            }
            .into());
        }
        if info.oversized {
            return Err(ReadError::Oversized {
                path: path.to_path_buf(),
                line: info.line,
                offset: info.offset,
                len: info.len,
                max,
            }
            .into());
        }
    }
    Ok(())
}
