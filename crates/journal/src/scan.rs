//! Scanning a journal for damage: which lines are whole and valid, and whether what is wrong
//! is a torn tail (safe to cut) or damage in the middle (needs a human decision).
//!
//! Valid lines of an ephemeral type (written by another program: turnstile never writes one)
//! are recorded too. Those after the last persisted event are cut like a torn tail, since the
//! next event must chain to a persisted one; those in the middle stay (the event after each
//! names it as its parent) and are only reported.

use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::lines::{BoundedLines, max_line_bytes, oversized_message};
use crate::reader::{ReadMode, check_line};

/// At most this many bad lines are kept with their details; the rest are only counted.
pub const MAX_REPORTED: usize = 1000;

/// A complete (`\n`-terminated) line that is not a valid event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// Length including the `\n`.
    pub len: u64,
    /// What is wrong.
    pub message: String,
}

/// Bytes after the last `\n`: a line the writer never finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The line number it would have had.
    pub line: u64,
    /// Byte offset where it starts.
    pub offset: u64,
    /// Its length.
    pub len: u64,
    /// True when it is nothing but NUL bytes (zero-filled blocks after a power loss).
    pub all_nul: bool,
}

/// A valid line of an ephemeral type (`session.idle`, deltas...): it should not be on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EphemeralLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// Its event type.
    pub event_type: String,
}

/// The ephemeral lines after the last persisted event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailingEphemeral {
    /// Line number of the first of them.
    pub line: u64,
    /// Its byte offset (where the journal is cut).
    pub offset: u64,
    /// How many there are.
    pub count: u64,
    /// The first one's type.
    pub first_type: String,
}

/// The result of reading a whole journal once.
#[derive(Debug, Clone, Default)]
pub struct JournalScan {
    /// Size of the file in bytes.
    pub file_len: u64,
    /// Number of valid lines.
    pub good_lines: u64,
    /// Id of the last valid persisted event (the parent of the next one).
    pub last_id: Option<Uuid>,
    /// End offset of the last valid line.
    pub last_good_end: u64,
    /// The first [`MAX_REPORTED`] invalid complete lines.
    pub bad: Vec<BadLine>,
    /// How many invalid complete lines there are in all.
    pub bad_total: u64,
    /// The unterminated last line, if any.
    pub tail: Option<Tail>,
    /// End offset of the last complete line (good or bad).
    pub complete_end: u64,
    /// The first [`MAX_REPORTED`] valid lines of ephemeral types.
    pub ephemeral: Vec<EphemeralLine>,
    /// How many valid lines of ephemeral types there are in all.
    pub ephemeral_total: u64,
    /// The valid ephemeral lines after the last valid persisted one, if any.
    pub trailing_ephemeral: Option<TrailingEphemeral>,
}

/// What a scan means for opening and repairing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every line is whole and valid.
    Clean,
    /// Only the last line is broken, or the last lines are ephemeral events: cut everything
    /// from `cut_at`.
    TornTail {
        /// Where the cut starts (the journal is truncated here).
        cut_at: u64,
        /// Its line number.
        line: u64,
        /// Why it is cut.
        reason: String,
        /// Valid lines before `cut_at` (what the journal holds after the cut).
        kept_lines: u64,
    },
    /// A line before the last one is broken; the journal is not opened for append.
    Damaged {
        /// The first bad line.
        first: BadLine,
        /// How many bad lines there are in all (a torn tail not included).
        bad_total: u64,
    },
}

/// Why a scan could not run.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct ScanError {
    /// The journal.
    pub path: PathBuf,
    /// The OS error.
    pub source: io::Error,
}

impl JournalScan {
    /// Reads the journal at `path` once, validating every line (lenient: unknown types are fine).
    pub fn of_file(path: &Path) -> Result<Self, ScanError> {
        let err = |source| ScanError {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::session_dir::open_read_nofollow(path).map_err(err)?;
        Self::of_reader(BufReader::with_capacity(1 << 16, file), 0, 0).map_err(err)
    }

    /// Scans `input`, numbering lines after `first_line` and offsets from `first_offset`.
    pub fn of_reader(input: impl BufRead, first_line: u64, first_offset: u64) -> io::Result<Self> {
        Self::of_reader_bounded(input, first_line, first_offset, max_line_bytes())
    }

    /// [`JournalScan::of_reader`] holding lines of at most `max` bytes: a longer complete line
    /// is a bad line (its size in the message), a longer unfinished one a tail, neither held.
    pub fn of_reader_bounded(
        input: impl BufRead,
        first_line: u64,
        first_offset: u64,
        max: usize,
    ) -> io::Result<Self> {
        let mut scan = JournalScan {
            file_len: first_offset,
            last_good_end: first_offset,
            complete_end: first_offset,
            ..Default::default()
        };
        let mut lines = BoundedLines::new(input, max).starting_at(first_line, first_offset);
        while let Some(info) = lines.next_line()? {
            let (line, offset, n) = (info.line, info.offset, info.len);
            scan.file_len = offset + n;
            if !info.terminated {
                scan.tail = Some(Tail {
                    line,
                    offset,
                    len: n,
                    all_nul: info.all_nul,
                });
                break;
            }
            let buf = lines.bytes();
            let checked = if info.oversized {
                Err(oversized_message(n, lines.max()))
            } else {
                check_line(&buf[..buf.len() - 1], ReadMode::Lenient)
            };
            scan.complete_end = scan.file_len;
            match checked {
                Ok(event) if event.is_ephemeral() => {
                    scan.good_lines += 1;
                    scan.last_good_end = scan.file_len;
                    scan.ephemeral_total += 1;
                    if scan.ephemeral.len() < MAX_REPORTED {
                        scan.ephemeral.push(EphemeralLine {
                            line,
                            offset,
                            event_type: event.event_type.to_string(),
                        });
                    }
                    match &mut scan.trailing_ephemeral {
                        Some(run) => run.count += 1,
                        None => {
                            scan.trailing_ephemeral = Some(TrailingEphemeral {
                                line,
                                offset,
                                count: 1,
                                first_type: event.event_type.to_string(),
                            });
                        }
                    }
                }
                Ok(event) => {
                    scan.good_lines += 1;
                    scan.last_id = Some(event.id);
                    scan.last_good_end = scan.file_len;
                    scan.trailing_ephemeral = None;
                }
                Err(message) => {
                    scan.bad_total += 1;
                    if scan.bad.len() < MAX_REPORTED {
                        scan.bad.push(BadLine {
                            line,
                            offset,
                            len: n,
                            message,
                        });
                    }
                }
            }
        }
        Ok(scan)
    }

    /// Classifies the damage, if any.
    pub fn verdict(&self) -> Verdict {
        let verdict = self.damage_verdict();
        // Ephemeral events after the last persisted one go with the tail: nothing chains to
        // them, and the next event must chain to a persisted one.
        let Some(run) = &self.trailing_ephemeral else {
            return verdict;
        };
        let what = format!(
            "{} ephemeral event(s) after the last persisted one (first: {} at line {}), written by another program",
            run.count, run.first_type, run.line
        );
        match verdict {
            Verdict::Clean => Verdict::TornTail {
                cut_at: run.offset,
                line: run.line,
                reason: what,
                kept_lines: self.good_lines - run.count,
            },
            Verdict::TornTail { reason, .. } => Verdict::TornTail {
                cut_at: run.offset,
                line: run.line,
                reason: format!("{what}, then {reason}"),
                kept_lines: self.good_lines - run.count,
            },
            damaged @ Verdict::Damaged { .. } => damaged,
        }
    }

    fn damage_verdict(&self) -> Verdict {
        let last_bad_is_last_line = self.bad_total == 1
            && self
                .bad
                .first()
                .is_some_and(|b| b.offset + b.len == self.complete_end);
        match (self.bad_total, &self.tail) {
            (0, None) => Verdict::Clean,
            (0, Some(tail)) => Verdict::TornTail {
                cut_at: tail.offset,
                line: tail.line,
                kept_lines: self.good_lines,
                reason: if tail.all_nul {
                    format!(
                        "{} trailing NUL bytes (zero-filled blocks after a power loss)",
                        tail.len
                    )
                } else {
                    format!("last line is incomplete ({} bytes, no newline)", tail.len)
                },
            },
            // A bad last line is a torn write only if nothing but zero fill follows it; a bad
            // line followed by a partial one is two failures, which one crash cannot produce.
            (1, tail) if last_bad_is_last_line && tail.as_ref().is_none_or(|t| t.all_nul) => {
                let bad = &self.bad[0];
                Verdict::TornTail {
                    cut_at: bad.offset,
                    line: bad.line,
                    reason: format!("last line is unparsable: {}", bad.message),
                    kept_lines: self.good_lines,
                }
            }
            _ => Verdict::Damaged {
                first: self.bad[0].clone(),
                bad_total: self.bad_total,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32) -> String {
        format!(
            r#"{{"type":"session.info","data":{{"n":{n}}},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}}"#,
            Uuid::from_u128(u128::from(n) + 1)
        )
    }

    fn scan(text: &[u8]) -> JournalScan {
        JournalScan::of_reader(text, 0, 0).unwrap()
    }

    #[test]
    fn clean_and_empty() {
        assert_eq!(scan(b"").verdict(), Verdict::Clean);
        let text = format!("{}\n{}\n", line(1), line(2));
        let s = scan(text.as_bytes());
        assert_eq!(s.verdict(), Verdict::Clean);
        assert_eq!(s.good_lines, 2);
        assert_eq!(s.last_id, Some(Uuid::from_u128(3)));
    }

    #[test]
    fn partial_last_line_is_torn() {
        let good = format!("{}\n", line(1));
        let text = format!("{good}{}", &line(2)[..30]);
        match scan(text.as_bytes()).verdict() {
            Verdict::TornTail { cut_at, line, .. } => {
                assert_eq!((cut_at, line), (good.len() as u64, 2));
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn trailing_nuls_are_torn() {
        let mut text = format!("{}\n", line(1)).into_bytes();
        text.extend_from_slice(&[0; 4096]);
        let v = scan(&text).verdict();
        assert!(
            matches!(&v, Verdict::TornTail { reason, .. } if reason.contains("NUL")),
            "{v:?}"
        );
    }

    #[test]
    fn unparsable_last_line_is_torn() {
        let text = format!("{}\n{{\"type\":\"x\",\"da\n", line(1));
        assert!(matches!(
            scan(text.as_bytes()).verdict(),
            Verdict::TornTail { line: 2, .. }
        ));
    }

    #[test]
    fn bad_line_in_the_middle_is_damage() {
        let text = format!("{}\ngarbage\n{}\n", line(1), line(2));
        match scan(text.as_bytes()).verdict() {
            Verdict::Damaged { first, bad_total } => {
                assert_eq!(
                    (first.line, first.offset, bad_total),
                    (2, line(1).len() as u64 + 1, 1)
                );
            }
            v => panic!("{v:?}"),
        }
    }

    fn idle(n: u32, parent: u32) -> String {
        format!(
            r#"{{"type":"session.idle","data":{{}},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":"{}"}}"#,
            Uuid::from_u128(u128::from(n) + 1),
            Uuid::from_u128(u128::from(parent) + 1)
        )
    }

    #[test]
    fn trailing_ephemeral_events_are_cut_like_a_torn_tail() {
        let good = format!("{}\n{}\n", line(1), line(2));
        let text = format!("{good}{}\n{}\n", idle(3, 2), idle(4, 3));
        let s = scan(text.as_bytes());
        assert_eq!(
            s.last_id,
            Some(Uuid::from_u128(3)),
            "the last persisted event"
        );
        match s.verdict() {
            Verdict::TornTail {
                cut_at,
                line,
                reason,
                kept_lines,
            } => {
                assert_eq!((cut_at, line, kept_lines), (good.len() as u64, 3, 2));
                assert!(reason.contains("session.idle at line 3"), "{reason}");
            }
            v => panic!("{v:?}"),
        }
        // With a torn write after them, the cut still starts at the first ephemeral line.
        let torn = format!("{text}{}", &line(5)[..20]);
        assert!(matches!(
            scan(torn.as_bytes()).verdict(),
            Verdict::TornTail { cut_at, kept_lines: 2, .. } if cut_at == good.len() as u64
        ));
    }

    #[test]
    fn ephemeral_events_in_the_middle_are_reported_not_cut() {
        let text = format!("{}\n{}\n{}\n", line(1), idle(2, 1), line(3));
        let s = scan(text.as_bytes());
        assert_eq!(s.verdict(), Verdict::Clean);
        assert_eq!(s.ephemeral_total, 1);
        assert_eq!(
            (s.ephemeral[0].line, s.ephemeral[0].event_type.as_str()),
            (2, "session.idle")
        );
        assert!(s.trailing_ephemeral.is_none());
    }

    #[test]
    fn bad_last_line_plus_partial_tail_is_damage() {
        // Two broken lines at the end: more than a single torn write, so not cut silently.
        let text = format!("{}\ngarbage\n{{\"partial", line(1));
        assert!(matches!(
            scan(text.as_bytes()).verdict(),
            Verdict::Damaged { .. }
        ));
    }
}
