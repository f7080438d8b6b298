//! Checks on a journal offered to a store (an import, a working copy): whole valid lines,
//! read in bounded memory, and the hash of a prefix that a checkpoint vouches for.

use std::io::{BufReader, Read};

use sha2::{Digest, Sha256};
use turnstile_journal::{JournalScan, Verdict, max_line_bytes};

use crate::StoreError;
use crate::journal_stream::{Hashing, PIECE_BYTES};

/// What [`check_reader`] read: a journal of whole valid lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Its lines.
    pub lines: u64,
    /// Its bytes.
    pub bytes: u64,
    /// SHA-256 of those bytes (to see that a second read gives the same).
    pub sha256: [u8; 32],
}

/// Checks the journal `input` gives, as [`check`] does, holding at most one line of
/// [`max_line_bytes`]: a longer line is refused with its number and size
/// ([`StoreError::OversizedLine`]), measured but never held.
pub fn check_reader(origin: &str, input: impl Read) -> Result<Checked, StoreError> {
    let mut hashing = Hashing::new(input);
    let scan = JournalScan::of_reader(BufReader::with_capacity(PIECE_BYTES, &mut hashing), 0, 0)
        .map_err(|source| StoreError::Read {
            origin: origin.to_owned(),
            source,
        })?;
    let max = max_line_bytes() as u64;
    // The first bad line is the first thing wrong (a tail comes after every line).
    if let Some(first) = scan.bad.first()
        && first.len > max
    {
        return Err(StoreError::OversizedLine {
            origin: origin.to_owned(),
            line: first.line,
            offset: first.offset,
            len: first.len,
            max,
        });
    }
    let lines = verdict_lines(origin, &scan)?;
    let (bytes, sha256) = hashing.finish();
    Ok(Checked {
        lines,
        bytes,
        sha256,
    })
}

/// The number of lines of `bytes`, if it is whole valid journal lines (an empty journal is).
pub fn check(origin: &str, bytes: &[u8]) -> Result<u64, StoreError> {
    let scan = JournalScan::of_reader(bytes, 0, 0).map_err(|e| StoreError::BadJournal {
        origin: origin.to_owned(),
        line: 0,
        offset: 0,
        message: e.to_string(),
    })?;
    verdict_lines(origin, &scan)
}

/// The lines of a scanned journal if it is whole valid lines, else its first fault.
fn verdict_lines(origin: &str, scan: &JournalScan) -> Result<u64, StoreError> {
    match scan.verdict() {
        Verdict::Clean => Ok(scan.good_lines),
        Verdict::TornTail {
            cut_at,
            reason,
            line,
            ..
        } => Err(StoreError::BadJournal {
            origin: origin.to_owned(),
            line,
            offset: cut_at,
            message: reason,
        }),
        Verdict::Damaged { first, .. } => Err(StoreError::BadJournal {
            origin: origin.to_owned(),
            line: first.line,
            offset: first.offset,
            message: first.message,
        }),
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 of the first `len` bytes `reader` gives, lowercase hex, read through one 1 MiB
/// buffer (a journal is never held whole); `None` when it ends before `len` bytes.
pub fn sha256_hex_of_prefix(
    mut reader: impl std::io::Read,
    len: u64,
) -> std::io::Result<Option<String>> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = usize::try_from(left.min(buffer.len() as u64)).unwrap_or(buffer.len());
        let n = match reader.read(&mut buffer[..want]) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        left -= n as u64;
    }
    Ok(Some(hex(&hasher.finalize())))
}

fn hex(digest: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_prefix_hash_is_the_hash_of_the_prefix() {
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        for len in [0u64, 1, 1 << 20, (1 << 20) + 7, 3_000_000] {
            assert_eq!(
                sha256_hex_of_prefix(&bytes[..], len).unwrap(),
                Some(sha256_hex(&bytes[..len as usize]))
            );
        }
        assert_eq!(sha256_hex_of_prefix(&bytes[..], 3_000_001).unwrap(), None);
    }

    #[test]
    fn torn_and_damaged_journals_are_refused_with_their_line() {
        assert_eq!(check("x", b"").unwrap(), 0);
        let err = check("import.jsonl", b"{\"type\":")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("import.jsonl:1"), "{err}");
        let err = check("j", b"not json\nnot json either\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("j:1"), "{err}");
    }

    #[test]
    fn hash_is_hex_sha256() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
