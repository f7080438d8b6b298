//! `--count TYPE`: how many events of one type, exactly, as fast as the disk allows.
//!
//! A line in the standard layout that starts `{"type":"X"` with a plain name `X` is an event of
//! type `X` or not an event at all (a second `type` key makes it invalid), so when `X` is not
//! the type asked for, the line cannot count and is skipped without reading further. Lines that
//! do start with the asked type, and lines in any other layout, are fully validated and parsed:
//! only valid events count. So the work per line is a prefix compare except where the answer
//! is at stake, and the count is exact.

use std::io;
use std::path::Path;

use super::line::{self, Outcome};
use super::scan::{self, LineSink, ScanOptions, Source};
use super::stream;
use crate::error::ReplayError;
use crate::raw::envelope::head_type;
use crate::raw::fields::Store;
use crate::raw::types::{Scratch, type_name};

/// Counts the valid events of type `event_type` in the journal at `path` (all cores).
pub fn count_type(path: &Path, event_type: &str) -> Result<u64, ReplayError> {
    count_type_with(path, event_type, &ScanOptions::default(), &mut |_, _| {})
}

/// [`count_type`] with options and progress.
pub fn count_type_with(
    path: &Path,
    event_type: &str,
    options: &ScanOptions,
    progress: super::Progress<'_>,
) -> Result<u64, ReplayError> {
    let source = Source::open(path, options)?;
    let mut total = 0;
    scan::run(
        &source,
        options,
        || CountSink::new(event_type),
        |sink: &mut CountSink<'_>, done| {
            total += sink.count;
            progress(done, source.size);
        },
    )?;
    Ok(total)
}

struct CountSink<'t> {
    target: &'t str,
    count: u64,
    store: Store,
    scratch: Scratch,
}

impl<'t> CountSink<'t> {
    fn new(target: &'t str) -> Self {
        CountSink {
            target,
            count: 0,
            store: Store::default(),
            scratch: Scratch::default(),
        }
    }

    fn count_outcome(&mut self, outcome: &Outcome) {
        if let Outcome::Event(facts) = outcome
            && type_name(facts.type_ref, &self.store) == self.target
        {
            self.count += 1;
        }
        self.store.clear();
    }

    /// False when the line certainly is not an event of the target type.
    fn may_match(&self, start: &[u8]) -> bool {
        // An empty line is never an event (and journals damaged by zero-filled or blank blocks
        // hold millions of them).
        if start.is_empty() {
            return false;
        }
        match head_type(start) {
            Some(name) => name == self.target.as_bytes(),
            None => true,
        }
    }
}

impl LineSink for CountSink<'_> {
    fn wants_whole(&mut self, prefix: &[u8]) -> bool {
        self.may_match(prefix)
    }

    fn line(&mut self, _offset: u64, line: &[u8], terminated: bool, utf8_valid: bool) {
        if !terminated || !self.may_match(line) {
            return;
        }
        let outcome = line::parse_line(line, utf8_valid, &mut self.store, &mut self.scratch);
        self.count_outcome(&outcome);
    }

    fn giant(&mut self, source: &Source, offset: u64) -> io::Result<()> {
        let outcome = stream::parse_giant_line(source, offset, &mut self.store)?;
        self.count_outcome(&outcome);
        Ok(())
    }

    fn reset(&mut self) {
        self.count = 0;
        self.store.clear();
    }
}
