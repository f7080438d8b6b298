//! Auditing a journal: exact counts and invariant checks, streaming, on every core.
//!
//! [`audit_file`] validates every line (UTF-8 and JSON syntax, the envelope), counts events by
//! their top-level type, turns, tool calls by name and outcome, errors, resumes and task
//! completions, and checks the invariants (turn pairing, unique turn ids per interaction, the
//! `parentId` chain, tool start/complete pairing, no ephemeral event on disk). [`count_type`]
//! answers one question, how many events of one type, faster still. Both read the file in chunks
//! on worker threads with bounded memory; see `docs/replay.md` for the design and figures.

mod count;
mod invariants;
mod line;
mod report;
mod scan;
mod stream;

use std::io;
use std::path::Path;

pub use count::{count_type, count_type_with};
pub use report::{
    AuditReport, LlmCallKind, MAX_VIOLATIONS, OpenRequestRef, OpenToolRef, OpenTurnRef,
    OpenWorkReport, Violation, ViolationKind,
};
pub use scan::ScanOptions;

use crate::error::ReplayError;
use crate::raw::fields::Store;
use crate::raw::types::Scratch;
use invariants::Auditor;
use line::Outcome;
use scan::{LineSink, Source};

/// Called with `(bytes done, bytes total)` as the scan advances.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Audits the journal at `path` with default options (all cores).
pub fn audit_file(path: &Path) -> Result<AuditReport, ReplayError> {
    audit_file_with(path, &ScanOptions::default(), &mut |_, _| {})
}

/// Audits the journal at `path`, reporting progress.
pub fn audit_file_with(
    path: &Path,
    options: &ScanOptions,
    progress: Progress<'_>,
) -> Result<AuditReport, ReplayError> {
    let source = Source::open(path, options)?;
    let mut auditor = Auditor::new(path.display().to_string(), source.size);
    let piece = options.lines_per_piece.max(1);
    scan::run(
        &source,
        options,
        || AuditSink::new(piece),
        |sink: &mut AuditSink, done| {
            for line in &sink.lines {
                auditor.line(line, &sink.store);
            }
            progress(done, source.size);
        },
    )?;
    Ok(auditor.finish())
}

/// Audits journal bytes held in memory (tests, small files), on one thread.
pub fn audit_bytes(name: &str, bytes: &[u8]) -> AuditReport {
    let mut auditor = Auditor::new(name.to_owned(), bytes.len() as u64);
    let mut store = Store::default();
    let mut scratch = Scratch::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        store.clear();
        let outcome = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let outcome = line::parse_line(&rest[..i], false, &mut store, &mut scratch);
                rest = &rest[i + 1..];
                outcome
            }
            None => {
                rest = &[];
                Outcome::Torn
            }
        };
        auditor.line(&outcome, &store);
    }
    auditor.finish()
}

/// Collects the outcomes of one chunk's lines (at most `piece` at once, see
/// [`ScanOptions::lines_per_piece`]).
struct AuditSink {
    lines: Vec<Outcome>,
    store: Store,
    scratch: Scratch,
    piece: usize,
}

impl AuditSink {
    fn new(piece: usize) -> Self {
        AuditSink {
            lines: Vec::new(),
            store: Store::default(),
            scratch: Scratch::default(),
            piece,
        }
    }
}

impl LineSink for AuditSink {
    fn wants_whole(&mut self, _prefix: &[u8]) -> bool {
        true
    }

    fn line(&mut self, _offset: u64, line: &[u8], terminated: bool, utf8_valid: bool) {
        let outcome = if terminated {
            line::parse_line(line, utf8_valid, &mut self.store, &mut self.scratch)
        } else {
            Outcome::Torn
        };
        self.lines.push(outcome);
    }

    fn giant(&mut self, source: &Source, offset: u64) -> io::Result<()> {
        let outcome = stream::parse_giant_line(source, offset, &mut self.store)?;
        self.lines.push(outcome);
        Ok(())
    }

    fn reset(&mut self) {
        self.lines.clear();
        self.store.clear();
    }

    fn is_full(&self) -> bool {
        self.lines.len() >= self.piece
    }
}
