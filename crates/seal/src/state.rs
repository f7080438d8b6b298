//! A seal read back: its records, and where they leave the chain and the journal.

use std::io::BufRead;

use crate::chain::{Chain, unhex32};
use crate::error::SealError;
use crate::format::Format;
use crate::record::Record;

/// Bytes of a seal a reader holds at most (its records are kept to be checked). A seal costs
/// about 11 bytes a journal line and some 184 bytes a turn (6.8 % of a generated journal of
/// 450-byte events and 6-event turns; 8 % in format 1), so this is a journal of several
/// gigabytes.
pub const MAX_SEAL_BYTES: u64 = 512 << 20;

/// How far the seal reaches: the chain after `sealed` lines, which are the first `lines` lines
/// (`bytes` bytes) of the journal file once the lines repairs removed are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Lines sealed since the genesis, removed ones included.
    pub sealed: u64,
    /// Lines of the journal file covered.
    pub lines: u64,
    /// Bytes of the journal file covered.
    pub bytes: u64,
    /// The chain after line `sealed`.
    pub chain: Chain,
}

impl Coverage {
    /// Nothing sealed yet.
    pub fn empty() -> Self {
        Coverage {
            sealed: 0,
            lines: 0,
            bytes: 0,
            chain: Chain::genesis(),
        }
    }
}

/// A seal read back (see the module doc).
#[derive(Debug, Clone)]
pub struct SealState {
    /// The format its begin record names.
    pub format: Format,
    /// Each record with its 1-based line in the seal.
    pub records: Vec<(u64, Record)>,
    /// Where the records leave the seal.
    pub coverage: Coverage,
    /// Positions (among sealed lines) of lines repairs removed, ascending.
    pub removed: Vec<u64>,
    /// Bytes of whole records; a last line without its `\n` (a write cut short) is not one.
    pub whole_bytes: u64,
    /// Bytes after the last whole record (a torn last record).
    pub torn_bytes: u64,
}

impl SealState {
    /// Reads a seal; at most [`MAX_SEAL_BYTES`].
    pub fn load(input: impl BufRead) -> Result<Self, SealError> {
        let io = |source| SealError::Io {
            what: "the seal",
            source,
        };
        let mut input = input.take(MAX_SEAL_BYTES + 1);
        let mut state = SealState {
            format: Format::CURRENT,
            records: Vec::new(),
            coverage: Coverage::empty(),
            removed: Vec::new(),
            whole_bytes: 0,
            torn_bytes: 0,
        };
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = input.read_until(b'\n', &mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            if state.whole_bytes + n as u64 > MAX_SEAL_BYTES {
                return Err(SealError::TooLarge {
                    max: MAX_SEAL_BYTES,
                });
            }
            if buf.last() != Some(&b'\n') {
                state.torn_bytes = n as u64;
                break;
            }
            line_no += 1;
            state.whole_bytes += n as u64;
            let record: Record = serde_json::from_slice(&buf).map_err(|e| SealError::Record {
                line: line_no,
                message: e.to_string(),
            })?;
            state.apply(line_no, record)?;
        }
        Ok(state)
    }

    /// Checks `record` against those before it and takes it in.
    fn apply(&mut self, line: u64, record: Record) -> Result<(), SealError> {
        let bad = |message: String| SealError::Record { line, message };
        match (&record, self.records.is_empty()) {
            (Record::Begin { format }, true) => match Format::named(format) {
                Some(known) => self.format = known,
                None => {
                    return Err(bad(format!(
                        "unknown seal format {format:?} (known: {}, {})",
                        Format::V1.name(),
                        Format::V2.name()
                    )));
                }
            },
            (_, true) => return Err(bad("the seal does not begin with a begin record".into())),
            (Record::Begin { .. }, false) => return Err(bad("a second begin record".into())),
            (Record::Checkpoint(cp), false) => {
                if cp.sealed <= self.coverage.sealed {
                    return Err(bad(format!(
                        "checkpoint at sealed line {} after one at {}",
                        cp.sealed, self.coverage.sealed
                    )));
                }
                let chain = self.format.chain_of(&cp.chain).ok_or_else(|| {
                    bad(format!(
                        "the chain value is not one of {}",
                        self.format.name()
                    ))
                })?;
                // Format 1 names the lines; later formats leave the count to the reader.
                let lines = match (self.format, cp.lines) {
                    (Format::V1, Some(lines)) => lines,
                    (Format::V1, None) => return Err(bad("a checkpoint without its lines".into())),
                    (_, None) => cp.sealed - self.removed.len() as u64,
                    (_, Some(_)) => {
                        return Err(bad(format!(
                            "a checkpoint of {} names its lines",
                            self.format.name()
                        )));
                    }
                };
                self.coverage = Coverage {
                    sealed: cp.sealed,
                    lines,
                    bytes: cp.bytes,
                    chain,
                };
            }
            (Record::Repair(r), false) => {
                for removed in &r.removed {
                    if removed.sealed == 0 || removed.sealed > self.coverage.sealed {
                        return Err(bad(format!(
                            "removes sealed line {} of {}",
                            removed.sealed, self.coverage.sealed
                        )));
                    }
                    if unhex32(&removed.sha256).is_none() {
                        return Err(bad("a removed line's sha256 is not 64 hex digits".into()));
                    }
                    match self.removed.binary_search(&removed.sealed) {
                        Ok(_) => {
                            return Err(bad(format!(
                                "sealed line {} removed twice",
                                removed.sealed
                            )));
                        }
                        Err(at) => self.removed.insert(at, removed.sealed),
                    }
                }
                self.coverage.lines = r.lines;
                self.coverage.bytes = r.bytes;
            }
        }
        self.records.push((line, record));
        Ok(())
    }

    /// The position among sealed lines of the journal file's 1-based line `line` (lines
    /// repairs removed are skipped).
    pub fn sealed_position(&self, line: u64) -> u64 {
        let mut position = line;
        for &r in &self.removed {
            if r <= position {
                position += 1;
            } else {
                break;
            }
        }
        position
    }
}
