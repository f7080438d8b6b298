//! Streaming journal reader: one record per line, with its line number and byte offset.

use std::fs::File;
use std::io::{self, BufRead, BufReader};

use crate::lines::BoundedLines;
use std::path::{Path, PathBuf};

use crate::event::Event;

/// How strictly a reader treats what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Unknown event types are fine (a newer runtime wrote them); only broken lines fail.
    #[default]
    Lenient,
    /// Also refuses unknown types, typed payloads that do not match the schema, and
    /// ephemeral types on disk.
    Strict,
}

/// One line of a journal.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length of the line in bytes, including its `\n`.
    pub len: u64,
    /// The parsed event.
    pub event: Event,
}

/// What went wrong reading a journal; every variant names the file and where.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The journal.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A line is not a valid event.
    #[error("{}:{line} (byte {offset}): {message}", path.display())]
    BadLine {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line.
        offset: u64,
        /// What is wrong with it.
        message: String,
    },
    /// A line longer than the limit (`TURNSTILE_MAX_LINE_BYTES`): skipped without being held.
    #[error("{}:{line} (byte {offset}): {}", path.display(), crate::lines::oversized_message(*len, *max))]
    Oversized {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line.
        offset: u64,
        /// Its length in bytes, the `\n` included.
        len: u64,
        /// The limit it is over.
        max: usize,
    },
    /// The last line has no terminating `\n`: the writer was cut off mid-line.
    #[error("{}:{line} (byte {offset}): last line is incomplete (no newline): a torn write; run `turnstile repair` to cut it", path.display())]
    TornTail {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line.
        offset: u64,
    },
}

impl ReadError {
    /// Line number the error is about, when it is about a line.
    pub fn line(&self) -> Option<u64> {
        match self {
            ReadError::Io { .. } => None,
            ReadError::BadLine { line, .. }
            | ReadError::TornTail { line, .. }
            | ReadError::Oversized { line, .. } => Some(*line),
        }
    }
}

/// Checks one line (without `\n`) the way the reader does; `Err` holds the reason.
pub fn check_line(bytes: &[u8], mode: ReadMode) -> Result<Event, String> {
    if bytes.contains(&0) {
        return Err("line contains NUL bytes (zero-filled blocks after a power loss?)".into());
    }
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let event = Event::from_line(bytes).map_err(|e| e.to_string())?;
    if mode == ReadMode::Strict {
        if !event.event_type.is_known() {
            return Err(format!("unknown event type `{}`", event.event_type));
        }
        if event.is_ephemeral() {
            return Err(format!(
                "ephemeral event type `{}` must not be on disk",
                event.event_type
            ));
        }
        crate::payload::typed(&event).map_err(|e| e.to_string())?;
    }
    Ok(event)
}

/// A raw line: `(line number, byte offset, bytes including the newline)`.
pub type RawLine<'a> = (u64, u64, &'a [u8]);

/// A streaming reader over a journal file: constant memory, one line buffer reused, no line
/// held beyond [`crate::max_line_bytes`] (a longer one is [`ReadError::Oversized`]).
pub struct JournalReader<R = BufReader<File>> {
    path: PathBuf,
    lines: BoundedLines<R>,
    mode: ReadMode,
    done: bool,
}

impl JournalReader {
    /// Opens a journal file for reading.
    pub fn open(path: impl AsRef<Path>, mode: ReadMode) -> Result<Self, ReadError> {
        let path = path.as_ref().to_path_buf();
        let file =
            crate::session_dir::open_read_nofollow(&path).map_err(|source| ReadError::Io {
                path: path.clone(),
                source,
            })?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(ReadError::Io {
                path,
                source: io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, not an events.jsonl file",
                ),
            });
        }
        Ok(Self::new(
            path,
            BufReader::with_capacity(1 << 16, file),
            mode,
        ))
    }
}

impl<R: BufRead> JournalReader<R> {
    /// A reader over any buffered input; `path` is used in error messages.
    pub fn new(path: impl Into<PathBuf>, input: R, mode: ReadMode) -> Self {
        JournalReader {
            path: path.into(),
            lines: BoundedLines::new(input, crate::lines::max_line_bytes()),
            mode,
            done: false,
        }
    }

    /// Holds lines of at most `max` bytes (instead of [`crate::max_line_bytes`]).
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.lines = self.lines.with_max(max);
        self
    }

    /// Starts numbering at a known position (when reading a tail after a checkpoint).
    pub fn starting_at(mut self, line: u64, offset: u64) -> Self {
        self.lines = self.lines.starting_at(line, offset);
        self
    }

    /// The path used in error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed so far (offset just past the last line returned).
    pub fn offset(&self) -> u64 {
        self.lines.offset()
    }

    /// Reads the next raw line (with its `\n`) into the internal buffer; `None` at end.
    /// Returns `(line, offset, bytes)` without parsing it; a line over the limit is
    /// [`ReadError::Oversized`] (reading goes on after it), an unterminated one
    /// [`ReadError::TornTail`].
    pub fn next_raw(&mut self) -> Option<Result<RawLine<'_>, ReadError>> {
        if self.done {
            return None;
        }
        match self.lines.next_line() {
            Err(source) => {
                self.done = true;
                Some(Err(ReadError::Io {
                    path: self.path.clone(),
                    source,
                }))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            // An unfinished last line is a torn tail whatever its size (a sparse file's hole).
            Ok(Some(info)) if info.oversized && !info.terminated => {
                self.done = true;
                Some(Err(ReadError::TornTail {
                    path: self.path.clone(),
                    line: info.line,
                    offset: info.offset,
                }))
            }
            Ok(Some(info)) if info.oversized => Some(Err(ReadError::Oversized {
                path: self.path.clone(),
                line: info.line,
                offset: info.offset,
                len: info.len,
                max: self.lines.max(),
            })),
            Ok(Some(info)) => Some(Ok((info.line, info.offset, self.lines.bytes()))),
        }
    }
}

impl<R: BufRead> Iterator for JournalReader<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mode = self.mode;
        let (line, offset, bytes) = match self.next_raw()? {
            Ok(raw) => raw,
            Err(e) => return Some(Err(e)),
        };
        let len = bytes.len() as u64;
        let Some(body) = bytes.strip_suffix(b"\n") else {
            self.done = true;
            return Some(Err(ReadError::TornTail {
                path: self.path.clone(),
                line,
                offset,
            }));
        };
        Some(match check_line(body, mode) {
            Ok(event) => Ok(Record {
                line,
                offset,
                len,
                event,
            }),
            Err(message) => Err(ReadError::BadLine {
                path: self.path.clone(),
                line,
                offset,
                message,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"type":"session.start","data":{"sessionId":"x"},"id":"4786b3be-b429-4ca6-a44b-d9323b7490b8","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}"#;
    const B: &str = r#"{"type":"some.future_type","data":{"k":1},"id":"2e6bfb39-70a8-4464-838b-fbc966681576","timestamp":"2026-11-29T14:34:34.841Z","parentId":"4786b3be-b429-4ca6-a44b-d9323b7490b8"}"#;

    fn read(text: &str, mode: ReadMode) -> Vec<Result<Record, ReadError>> {
        JournalReader::new("mem.jsonl", text.as_bytes(), mode).collect()
    }

    #[test]
    fn numbers_lines_and_offsets() {
        let text = format!("{A}\n{B}\n");
        let recs: Vec<_> = read(&text, ReadMode::Lenient)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].line, recs[0].offset, recs[0].len),
            (1, 0, A.len() as u64 + 1)
        );
        assert_eq!((recs[1].line, recs[1].offset), (2, A.len() as u64 + 1));
    }

    #[test]
    fn strict_refuses_unknown_types() {
        let text = format!("{A}\n{B}\n");
        let recs = read(&text, ReadMode::Strict);
        let err = recs[1].as_ref().unwrap_err().to_string();
        assert!(
            err.contains("mem.jsonl:2") && err.contains("unknown event type"),
            "{err}"
        );
    }

    #[test]
    fn strict_checks_typed_payloads() {
        let bad = r#"{"type":"assistant.turn_end","data":{"turnId":7},"id":"4786b3be-b429-4ca6-a44b-d9323b7490b8","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}"#;
        let text = format!("{bad}\n");
        assert!(read(&text, ReadMode::Lenient)[0].is_ok());
        let err = read(&text, ReadMode::Strict)[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(err.contains("assistant.turn_end"), "{err}");
    }

    #[test]
    fn crlf_is_accepted() {
        let text = format!("{A}\r\n{B}\r\n");
        assert!(read(&text, ReadMode::Lenient).iter().all(|r| r.is_ok()));
    }

    #[test]
    fn torn_tail_and_bad_line_name_the_line() {
        let text = format!("{A}\nnot json\n{}", &B[..20]);
        let recs = read(&text, ReadMode::Lenient);
        let bad = recs[1].as_ref().unwrap_err();
        assert_eq!(bad.line(), Some(2));
        assert!(
            bad.to_string()
                .starts_with(&format!("mem.jsonl:2 (byte {})", A.len() + 1))
        );
        assert!(matches!(recs[2], Err(ReadError::TornTail { line: 3, .. })));
    }

    #[test]
    fn an_oversized_line_is_named_with_its_size_and_reading_goes_on() {
        let big = format!("{{\"type\":\"x\",\"data\":\"{}\"}}", "y".repeat(5000));
        let text = format!("{A}\n{big}\n{B}\n{}", "z".repeat(3000));
        let recs: Vec<_> = JournalReader::new("mem.jsonl", text.as_bytes(), ReadMode::Lenient)
            .with_max_line_bytes(1024)
            .collect();
        assert_eq!(recs.len(), 4);
        assert!(recs[0].is_ok() && recs[2].is_ok());
        match &recs[1] {
            Err(ReadError::Oversized {
                line: 2,
                len,
                max: 1024,
                ..
            }) => {
                assert_eq!(*len, big.len() as u64 + 1);
            }
            other => panic!("{other:?}"),
        }
        let message = recs[1].as_ref().unwrap_err().to_string();
        assert!(
            message.contains("mem.jsonl:2")
                && message.contains(&format!("{} bytes", big.len() + 1)),
            "{message}"
        );
        assert!(matches!(recs[3], Err(ReadError::TornTail { line: 4, .. })));
    }
}
