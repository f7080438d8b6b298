//! The writer's side: the chain kept in step with appends, a checkpoint record on demand.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::chain::LineDigest;
use crate::format::Format;
use crate::key::SealKey;
use crate::record::{Checkpoint, Record};
use crate::state::Coverage;

/// The chain of a journal being written (see the crate doc).
///
/// [`Sealer::push`] costs one 64-byte hash (the line's own digest is taken before, outside any
/// lock: [`LineDigest::of`]); [`Sealer::checkpoint`] gives the record to append to the seal.
#[derive(Debug)]
pub struct Sealer {
    coverage: Coverage,
    /// Short digests of the lines since the last checkpoint.
    pending: Vec<u8>,
    /// The format the seal began in, which its records keep.
    format: Format,
    key: Option<SealKey>,
}

impl Sealer {
    /// A sealer for a new seal, in [`Format::CURRENT`] (write [`Sealer::begin_record`] first).
    pub fn begin(key: Option<SealKey>) -> Self {
        Self::resume(Coverage::empty(), Format::CURRENT, key)
    }

    /// A sealer going on from a seal read back, in the seal's `format`
    /// ([`crate::SealState::format`]).
    pub fn resume(coverage: Coverage, format: Format, key: Option<SealKey>) -> Self {
        Sealer {
            coverage,
            pending: Vec::new(),
            format,
            key,
        }
    }

    /// The first line of a new seal.
    pub fn begin_record(&self) -> Vec<u8> {
        Record::Begin {
            format: self.format.name().to_owned(),
        }
        .to_line()
    }

    /// Takes in one more line of `len` bytes whose digest is `digest`.
    pub fn push(&mut self, digest: &LineDigest, len: u64) {
        self.coverage.chain = self.coverage.chain.link(digest);
        self.coverage.sealed += 1;
        self.coverage.lines += 1;
        self.coverage.bytes += len;
        self.pending.extend_from_slice(&digest.short());
    }

    /// Whether lines were pushed since the last checkpoint.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// How far the chain reaches, checkpointed or not.
    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// The checkpoint record (a seal line) of the lines pushed since the last one, `None` when
    /// there are none. `adopted`: see [`Checkpoint::adopted`].
    pub fn checkpoint(&mut self, adopted: bool) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        let cp = Checkpoint {
            sealed: self.coverage.sealed,
            lines: (self.format == Format::V1).then_some(self.coverage.lines),
            bytes: self.coverage.bytes,
            chain: String::new(),
            digests: STANDARD.encode(&self.pending),
            adopted,
            key: None,
            sig: None,
        };
        self.pending.clear();
        let record = Record::checkpoint(cp, &self.coverage.chain, self.format, self.key.as_ref());
        Some(record.to_line())
    }

    /// A repair's record, signed with this sealer's key when it has one.
    pub fn sign(&self, mut record: Record) -> Vec<u8> {
        record.sign(self.format, self.key.as_ref());
        record.to_line()
    }
}
