//! Whether a journal is exactly what its writer wrote, and if not, where it parts from its seal.
//!
//! The seal's records are read whole (bounded by [`crate::MAX_SEAL_BYTES`]) and checked first:
//! a record that is not one, or a chain value its own lines do not give, is a seal edited; a
//! signature that does not check, or one by another key than the one asked for, makes the seal
//! worth nothing and is said before anything about the journal. Then the journal is read once,
//! line by line, never a line held: every line's digest is compared with the one its
//! checkpoint keeps, and the chain is recomputed, lines repairs removed taken from their
//! records, and compared at every checkpoint. The first line whose digest differs is
//! classified by reading the rest of the journal's digests: a line sealed elsewhere
//! (reordered), lines sealed before it missing, or a line no seal knows (edited).

use std::collections::HashMap;
use std::io::BufRead;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::chain::{Chain, LineDigest, SHORT_DIGEST, hex, unhex32};
use crate::error::SealError;
use crate::key::VerifyKey;
use crate::lines::LineHasher;
use crate::record::{Record, Repair, Signed};
use crate::state::SealState;

/// What a verification found (the first thing wrong, or that nothing is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Every line is the line sealed there, and there is no other.
    Intact,
    /// Every sealed line is intact; lines after them were never sealed (a writer still
    /// running, or one that stopped before its next checkpoint; the next writer adopts them).
    UnsealedTail {
        /// The first unsealed line (1-based).
        first_line: u64,
        /// How many (a last line without its `\n` counts).
        lines: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// Line `line` is not the line sealed there, nor any other sealed line.
    LineDiffers {
        /// 1-based line of the journal.
        line: u64,
        /// Its byte offset.
        offset: u64,
    },
    /// Lines sealed before line `line` are gone: it is the line sealed as line
    /// `first_missing + count`.
    LinesMissing {
        /// 1-based line of the journal.
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// The first missing line, numbered as when it was sealed.
        first_missing: u64,
        /// How many are missing there.
        count: u64,
    },
    /// Line `line` is the line sealed as line `sealed_as`: the lines are in another order.
    Reordered {
        /// 1-based line of the journal.
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// Where it was sealed (a line number of the journal as sealed).
        sealed_as: u64,
        /// Where the line sealed at `line` is now, if it is anywhere.
        now_at: Option<u64>,
    },
    /// A repair removed a sealed line that had been changed after it was sealed (what it
    /// removed is not what was sealed there).
    RemovedLineDiffers {
        /// The repair's 1-based line in the seal.
        seal_line: u64,
        /// The line's position among sealed lines.
        sealed: u64,
    },
    /// The journal ends before the sealed lines do.
    MissingTail {
        /// Whole lines in the journal.
        lines: u64,
        /// Lines the seal covers.
        sealed_lines: u64,
    },
    /// The seal is not what its writer wrote: a record that is not one, or a chain value the
    /// lines it covers do not give.
    SealEdited {
        /// 1-based line of the seal.
        seal_line: u64,
        /// What is wrong.
        message: String,
    },
    /// A signature that does not match its record and key.
    BadSignature {
        /// 1-based line of the seal.
        seal_line: u64,
    },
    /// A record not signed by the key asked for (unsigned, or by another key).
    WrongKey {
        /// 1-based line of the seal.
        seal_line: u64,
        /// The key that signed it (base64), if any.
        signer: Option<String>,
    },
}

/// A repair the seal records, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairSeen {
    /// Its line in the seal.
    pub seal_line: u64,
    /// The record.
    pub repair: Repair,
}

/// What [`verify`] read and found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The verdict.
    pub finding: Finding,
    /// Lines sealed, those repairs removed included.
    pub sealed: u64,
    /// Checkpoint records.
    pub checkpoints: u64,
    /// Ranges of sealed lines (first, last; numbered as sealed) adopted by a writer rather than
    /// sealed as they were written.
    pub adopted: Vec<(u64, u64)>,
    /// Repairs, in order.
    pub repairs: Vec<RepairSeen>,
    /// Keys that signed records (base64), in order of first use.
    pub signers: Vec<String>,
    /// Records not signed.
    pub unsigned: u64,
    /// The chain after the last sealed line, hex (give it to someone to pin the journal).
    pub chain: String,
    /// Bytes of a torn last seal record (a write cut short), not counted as a record.
    pub torn_seal_bytes: u64,
}

/// Checks `journal` against `seal`; with `key`, every record must be signed by it.
///
/// An unreadable input or an oversized seal is an error; everything else is a [`Finding`].
pub fn verify(
    journal: impl BufRead,
    seal: impl BufRead,
    key: Option<&VerifyKey>,
) -> Result<Report, SealError> {
    let mut report = Report {
        finding: Finding::Intact,
        sealed: 0,
        checkpoints: 0,
        adopted: Vec::new(),
        repairs: Vec::new(),
        signers: Vec::new(),
        unsigned: 0,
        chain: hex(&Chain::genesis().0),
        torn_seal_bytes: 0,
    };
    let state = match SealState::load(seal) {
        Ok(state) => state,
        Err(SealError::Record { line, message }) => {
            report.finding = Finding::SealEdited {
                seal_line: line,
                message,
            };
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    report.torn_seal_bytes = state.torn_bytes;
    report.sealed = state.coverage.sealed;
    report.chain = hex(&state.coverage.chain.0);
    let plan = match Plan::of(&state, key, &mut report) {
        Ok(plan) => plan,
        Err(finding) => {
            report.finding = finding;
            return Ok(report);
        }
    };
    report.finding = plan.walk(journal, &state).map_err(|source| SealError::Io {
        what: "the journal",
        source,
    })?;
    Ok(report)
}

/// The seal's records laid out for the walk over the journal.
struct Plan {
    /// Short digest of every sealed line, by position - 1.
    shorts: Vec<[u8; SHORT_DIGEST]>,
    /// Full digests of lines repairs removed, by position.
    removed: HashMap<u64, LineDigest>,
    /// (sealed, chain, seal line) of each checkpoint, in order.
    checkpoints: Vec<(u64, Chain, u64)>,
}

impl Plan {
    fn of(
        state: &SealState,
        key: Option<&VerifyKey>,
        report: &mut Report,
    ) -> Result<Self, Finding> {
        let wanted = key.map(VerifyKey::to_base64);
        let mut plan = Plan {
            shorts: Vec::new(),
            removed: HashMap::new(),
            checkpoints: Vec::new(),
        };
        for (seal_line, record) in &state.records {
            let seal_line = *seal_line;
            let edited = |message: String| Finding::SealEdited { seal_line, message };
            match record.signed(state.format) {
                Signed::Bad => return Err(Finding::BadSignature { seal_line }),
                Signed::No if matches!(record, Record::Begin { .. }) => {}
                Signed::No => {
                    report.unsigned += 1;
                    if wanted.is_some() {
                        return Err(Finding::WrongKey {
                            seal_line,
                            signer: None,
                        });
                    }
                }
                Signed::By(signer) => {
                    if wanted.as_ref().is_some_and(|w| *w != signer) {
                        return Err(Finding::WrongKey {
                            seal_line,
                            signer: Some(signer),
                        });
                    }
                    if !report.signers.contains(&signer) {
                        report.signers.push(signer);
                    }
                }
            }
            match record {
                Record::Begin { .. } => {}
                Record::Checkpoint(cp) => {
                    let first = plan.shorts.len() as u64 + 1;
                    let digests = STANDARD
                        .decode(&cp.digests)
                        .map_err(|e| edited(format!("digests are not base64: {e}")))?;
                    if digests.len() as u64 != (cp.sealed + 1 - first) * SHORT_DIGEST as u64 {
                        return Err(edited(format!(
                            "{} digest bytes for sealed lines {first} to {}",
                            digests.len(),
                            cp.sealed
                        )));
                    }
                    plan.shorts
                        .extend(digests.chunks_exact(SHORT_DIGEST).map(|c| {
                            let mut s = [0; SHORT_DIGEST];
                            s.copy_from_slice(c);
                            s
                        }));
                    // Parsed when the seal was loaded.
                    let chain = state.format.chain_of(&cp.chain).unwrap_or(Chain([0; 32]));
                    plan.checkpoints.push((cp.sealed, chain, seal_line));
                    report.checkpoints += 1;
                    if cp.adopted {
                        report.adopted.push((first, cp.sealed));
                    }
                }
                Record::Repair(repair) => {
                    report.repairs.push(RepairSeen {
                        seal_line,
                        repair: repair.clone(),
                    });
                    for r in &repair.removed {
                        let digest = LineDigest(unhex32(&r.sha256).unwrap_or_default());
                        if plan.shorts.get(r.sealed as usize - 1) != Some(&digest.short()) {
                            return Err(Finding::RemovedLineDiffers {
                                seal_line,
                                sealed: r.sealed,
                            });
                        }
                        plan.removed.insert(r.sealed, digest);
                    }
                }
            }
        }
        Ok(plan)
    }

    /// The journal's line number of sealed position `position` (not itself removed).
    fn journal_line(&self, state: &SealState, position: u64) -> u64 {
        position - state.removed.partition_point(|&r| r < position) as u64
    }

    fn walk(&self, journal: impl BufRead, state: &SealState) -> std::io::Result<Finding> {
        let mut lines = LineHasher::new(journal, 0);
        let mut chain = Chain::genesis();
        let mut next_cp = self.checkpoints.iter().peekable();
        // The first line whose digest is not the one sealed there. The walk goes on to the
        // next checkpoint: if the chain holds there, the digest kept in the seal was edited,
        // not the line (the chain is the proof, the digests only point).
        let mut differs: Option<Differs> = None;
        for position in 1..=self.shorts.len() as u64 {
            let digest = match self.removed.get(&position) {
                Some(d) => *d,
                None => {
                    let line = match lines.next_line()? {
                        Some(line) if line.terminated => line,
                        _ if differs.is_some() => break,
                        // A sealed line cut short is a line missing with all after it.
                        _ => {
                            return Ok(Finding::MissingTail {
                                lines: self.journal_line(state, position) - 1,
                                sealed_lines: state.coverage.lines,
                            });
                        }
                    };
                    match &mut differs {
                        None if line.digest.short() != self.shorts[position as usize - 1] => {
                            differs = Some(Differs {
                                position,
                                line: lines.lines(),
                                offset: line.offset,
                                digest: line.digest,
                                now_at: None,
                            });
                        }
                        Some(d)
                            if d.now_at.is_none()
                                && line.digest.short() == self.shorts[d.position as usize - 1] =>
                        {
                            d.now_at = Some(lines.lines());
                        }
                        _ => {}
                    }
                    line.digest
                }
            };
            chain = chain.link(&digest);
            while let Some((_, expected, seal_line)) = next_cp.next_if(|(s, _, _)| *s == position) {
                let holds = chain == *expected;
                match differs.take() {
                    None if holds => {}
                    None => {
                        return Ok(Finding::SealEdited {
                            seal_line: *seal_line,
                            message: format!(
                                "the chain after sealed line {position} is not the one its lines give"
                            ),
                        });
                    }
                    Some(d) if holds => {
                        return Ok(Finding::SealEdited {
                            seal_line: *seal_line,
                            message: format!(
                                "the digest kept for line {} is not the line's, yet the chain holds",
                                d.line
                            ),
                        });
                    }
                    Some(d) => return self.classify(state, d, lines),
                }
            }
        }
        if let Some(d) = differs {
            return self.classify(state, d, lines);
        }
        if lines.lines() != state.coverage.lines || lines.offset() != state.coverage.bytes {
            return Ok(Finding::SealEdited {
                seal_line: state.records.last().map_or(1, |(l, _)| *l),
                message: format!(
                    "the seal says its lines end at line {} (byte {}); they end at line {} (byte {})",
                    state.coverage.lines,
                    state.coverage.bytes,
                    lines.lines(),
                    lines.offset()
                ),
            });
        }
        let (first_line, start) = (lines.lines() + 1, lines.offset());
        let mut count = 0;
        while lines.next_line()?.is_some() {
            count += 1;
        }
        Ok(if count == 0 {
            Finding::Intact
        } else {
            Finding::UnsealedTail {
                first_line,
                lines: count,
                bytes: lines.offset() - start,
            }
        })
    }

    /// Names the first difference `d`: reads the rest of the journal's digests to tell a
    /// reordering and missing lines from an edit.
    fn classify(
        &self,
        state: &SealState,
        d: Differs,
        mut rest: LineHasher<impl BufRead>,
    ) -> std::io::Result<Finding> {
        let Differs {
            position,
            line,
            offset,
            digest,
            mut now_at,
        } = d;
        let mut sealed_at: HashMap<[u8; SHORT_DIGEST], u64> = HashMap::new();
        for (i, short) in self.shorts.iter().enumerate() {
            let p = i as u64 + 1;
            if !self.removed.contains_key(&p) {
                sealed_at.entry(*short).or_insert(p);
            }
        }
        let expected = self.shorts[position as usize - 1];
        while now_at.is_none()
            && let Some(l) = rest.next_line()?
        {
            if l.digest.short() == expected {
                now_at = Some(rest.lines());
            }
        }
        let Some(&q) = sealed_at.get(&digest.short()) else {
            return Ok(Finding::LineDiffers { line, offset });
        };
        Ok(if q > position && now_at.is_none() {
            let first_missing = self.journal_line(state, position);
            Finding::LinesMissing {
                line,
                offset,
                first_missing,
                count: self.journal_line(state, q) - first_missing,
            }
        } else {
            Finding::Reordered {
                line,
                offset,
                sealed_as: self.journal_line(state, q),
                now_at,
            }
        })
    }
}

/// The first line found not to be the one sealed there.
struct Differs {
    /// Its sealed position.
    position: u64,
    /// Its journal line.
    line: u64,
    offset: u64,
    digest: LineDigest,
    /// Where the line sealed at `position` turned up later, if it did.
    now_at: Option<u64>,
}
