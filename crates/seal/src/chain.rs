//! The hash chain: one digest per line, folded into a running chain value.

use sha2::{Digest, Sha256};

/// Bytes of a line's digest a checkpoint keeps to locate a difference (the chain proves it).
pub const SHORT_DIGEST: usize = 8;

/// The genesis: the chain value before the first line.
const GENESIS: &[u8] = b"turnstile-seal/1 genesis\n";

/// The sha256 of one line, its `\n` included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LineDigest(pub [u8; 32]);

impl LineDigest {
    /// The digest of `line` (its bytes as written, the `\n` included).
    pub fn of(line: &[u8]) -> Self {
        LineDigest(Sha256::digest(line).into())
    }

    /// The digest in lower-case hex, as a repair record keeps it.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The first [`SHORT_DIGEST`] bytes, which a checkpoint keeps for every line.
    pub fn short(&self) -> [u8; SHORT_DIGEST] {
        let mut s = [0; SHORT_DIGEST];
        s.copy_from_slice(&self.0[..SHORT_DIGEST]);
        s
    }
}

/// A line's digest taken piece by piece, for a line too long to hold.
#[derive(Debug, Clone, Default)]
pub struct LineDigester(Sha256);

impl LineDigester {
    /// Takes in the next piece of the line.
    pub fn update(&mut self, piece: &[u8]) {
        self.0.update(piece);
    }

    /// The line's digest.
    pub fn finish(self) -> LineDigest {
        LineDigest(self.0.finalize().into())
    }
}

/// The chain value after some number of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain(pub [u8; 32]);

impl Chain {
    /// The value before any line.
    pub fn genesis() -> Self {
        Chain(Sha256::digest(GENESIS).into())
    }

    /// The value after one more line: two 32-byte values hashed, whatever the line's size.
    pub fn link(&self, line: &LineDigest) -> Self {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(line.0);
        Chain(h.finalize().into())
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// The 32 bytes a 64-digit hex string spells, if it does.
pub(crate) fn unhex32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_upper_case_and_short() {
        let d = LineDigest::of(b"x\n");
        assert_eq!(unhex32(&hex(&d.0)), Some(d.0));
        assert_eq!(unhex32(&hex(&d.0).to_uppercase()), None);
        assert_eq!(unhex32("ab"), None);
    }

    #[test]
    fn the_chain_depends_on_order() {
        let (a, b) = (LineDigest::of(b"a\n"), LineDigest::of(b"b\n"));
        let g = Chain::genesis();
        assert_ne!(g.link(&a).link(&b), g.link(&b).link(&a));
    }
}
