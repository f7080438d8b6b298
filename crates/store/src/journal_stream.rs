//! Moving a journal in bounded pieces: a copy through one buffer that tells a failed read
//! from a failed write, a reader that hashes what passes through it, and a writer that
//! compares what is written to it with another reader's bytes. `export` and `import` use
//! them so that no journal, and no line of one, is ever held whole.

use std::io::{self, Read, Write};

use sha2::{Digest, Sha256};

/// Bytes moved per read.
pub const PIECE_BYTES: usize = 1 << 16;

/// Which side of a [`copy`] failed.
#[derive(Debug)]
pub enum CopyError {
    /// Reading the source.
    Read(io::Error),
    /// Writing the destination.
    Write(io::Error),
}

/// Copies everything `from` gives to `to` through one [`PIECE_BYTES`] buffer; returns the
/// bytes copied.
pub fn copy(from: &mut impl Read, to: &mut impl Write) -> Result<u64, CopyError> {
    let mut buffer = vec![0u8; PIECE_BYTES];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        to.write_all(&buffer[..n]).map_err(CopyError::Write)?;
        total += n as u64;
    }
}

/// A reader that hashes (SHA-256) and counts the bytes read through it.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Hashing<R> {
    /// Hashes what is read from `inner`.
    pub fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// The bytes read and their hash.
    pub fn finish(self) -> (u64, [u8; 32]) {
        (self.bytes, self.hasher.finalize().into())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// What a [`SameBytes`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compared {
    /// The bytes written equal the other reader's, to its end.
    pub same: bool,
    /// Bytes written.
    pub bytes: u64,
    /// `\n` bytes written (the lines of a journal).
    pub lines: u64,
}

/// A writer that compares the bytes written to it with those of `other`, piece by piece,
/// holding one piece; it counts what was written to the end even after a difference.
pub struct SameBytes<R> {
    other: R,
    piece: Vec<u8>,
    same: bool,
    bytes: u64,
    lines: u64,
    failed: Option<io::Error>,
}

impl<R: Read> SameBytes<R> {
    /// Compares with `other`.
    pub fn new(other: R) -> Self {
        SameBytes {
            other,
            piece: Vec::new(),
            same: true,
            bytes: 0,
            lines: 0,
            failed: None,
        }
    }

    /// The verdict, once everything was written; an error reading `other`.
    pub fn finish(mut self) -> io::Result<Compared> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.same {
            let mut one = [0u8; 1];
            self.same = read_full(&mut self.other, &mut one)? == 0;
        }
        Ok(Compared {
            same: self.same,
            bytes: self.bytes,
            lines: self.lines,
        })
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

impl<R: Read> Write for SameBytes<R> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len() as u64;
        self.lines += memchr::memchr_iter(b'\n', buf).count() as u64;
        for part in buf.chunks(PIECE_BYTES) {
            if !self.same || self.failed.is_some() {
                break;
            }
            self.piece.resize(part.len(), 0);
            match read_full(&mut self.other, &mut self.piece) {
                Ok(n) => self.same = n == part.len() && self.piece[..] == *part,
                Err(e) => self.failed = Some(e),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(written: &[&[u8]], other: &[u8]) -> Compared {
        let mut same = SameBytes::new(other);
        for piece in written {
            same.write_all(piece).unwrap();
        }
        same.finish().unwrap()
    }

    #[test]
    fn equal_bytes_in_any_pieces_are_the_same() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8 + b'\n').collect();
        let (a, b) = big.split_at(70_001);
        let got = compare(&[a, b], &big);
        assert!(got.same);
        assert_eq!(got.bytes, big.len() as u64);
        assert_eq!(
            got.lines,
            big.iter().filter(|&&c| c == b'\n').count() as u64
        );
    }

    #[test]
    fn a_prefix_a_longer_input_or_a_changed_byte_differs_and_is_counted_whole() {
        assert!(
            !compare(&[b"ab\n"], b"ab\ncd\n").same,
            "the other is longer"
        );
        let got = compare(&[b"ab\n", b"cd\n"], b"ab\n");
        assert!(!got.same);
        assert_eq!((got.bytes, got.lines), (6, 2), "counted to the end");
        assert!(!compare(&[b"ab\n"], b"ax\n").same);
        assert!(compare(&[], b"").same);
    }

    #[test]
    fn a_copy_passes_every_byte_and_the_hash_is_sha256() {
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let mut hashing = Hashing::new(&data[..]);
        let mut out = Vec::new();
        assert_eq!(copy(&mut hashing, &mut out).unwrap(), data.len() as u64);
        assert_eq!(out, data);
        let (bytes, hash) = hashing.finish();
        assert_eq!(bytes, data.len() as u64);
        assert_eq!(hash, <[u8; 32]>::from(Sha256::digest(&data)));
    }
}
