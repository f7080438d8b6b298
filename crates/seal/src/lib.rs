//! Seals for append-only journals: proof that a journal is exactly what its writer wrote.
//!
//! A seal is a file of its own beside the journal, never a line inside it (readers of the
//! Copilot format reject unknown event types). It holds a hash chain over the journal's lines,
//! `chain_n = sha256(chain_{n-1} || sha256(line_n))` from a fixed genesis, checkpointed as the
//! writer goes: each [`Record::Checkpoint`] gives the chain after its last line and the first
//! 8 bytes of every line's digest since the previous checkpoint, so a verification can name
//! the first line that differs and not only say that something does. A checkpoint may be
//! signed with an ed25519 key the user holds ([`SealKey`]). A repair that removes lines from
//! a sealed journal records their full digests ([`Record::Repair`]): the chain still runs over
//! every line ever sealed, so the repaired journal verifies, with the repair shown.
//!
//! The crate knows no journal format and opens no file: the writer hands it lines
//! ([`Sealer`]), a verification hands it readers ([`verify`]).
//!
//! (The unit test `tests::a_sealed_journal_verifies_intact` runs these lines.)
//!
//! ```ignore
//! use turnstile_seal::{LineDigest, Sealer, verify, Finding};
//!
//! let journal = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
//! let mut sealer = Sealer::begin(None);
//! let mut seal = sealer.begin_record();
//! for line in journal.split_inclusive(|&b| b == b'\n') {
//!     sealer.push(&LineDigest::of(line), line.len() as u64);
//! }
//! seal.extend(sealer.checkpoint(false).unwrap());
//! let report = verify(&journal[..], &seal[..], None).unwrap();
//! assert_eq!(report.finding, Finding::Intact);
//! ```

mod chain;
mod error;
mod format;
mod key;
mod lines;
mod record;
mod sealer;
mod state;
mod verify;

pub use chain::{Chain, LineDigest, LineDigester, SHORT_DIGEST};
pub use error::SealError;
pub use format::Format;
pub use key::{SealKey, VerifyKey};
pub use lines::{HashedLine, LineHasher};
pub use record::{Checkpoint, Record, Removed, Repair, RepairAction};
pub use sealer::Sealer;
pub use state::{Coverage, MAX_SEAL_BYTES, SealState};
pub use verify::{Finding, RepairSeen, Report, verify};

#[cfg(test)]
mod tests {
    use super::{Finding, LineDigest, Sealer, verify};

    #[test]
    fn a_sealed_journal_verifies_intact() {
        let journal = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
        let mut sealer = Sealer::begin(None);
        let mut seal = sealer.begin_record();
        for line in journal.split_inclusive(|&b| b == b'\n') {
            sealer.push(&LineDigest::of(line), line.len() as u64);
        }
        seal.extend(sealer.checkpoint(false).unwrap());
        let report = verify(&journal[..], &seal[..], None).unwrap();
        assert_eq!(report.finding, Finding::Intact);
    }
}
