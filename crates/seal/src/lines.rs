//! Lines of a journal hashed as they stream past, none held in memory.

use std::io::{self, BufRead};

use sha2::{Digest, Sha256};

use crate::chain::LineDigest;

/// One hashed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashedLine {
    /// Its digest (the `\n` included).
    pub digest: LineDigest,
    /// Its byte offset in the journal.
    pub offset: u64,
    /// Its length, the `\n` included.
    pub len: u64,
    /// Whether it ends with `\n` (false for a last line never finished).
    pub terminated: bool,
}

/// Hashes the lines of a buffered reader one by one; a line of any length costs one buffer.
#[derive(Debug)]
pub struct LineHasher<R> {
    input: R,
    offset: u64,
    line: u64,
}

impl<R: BufRead> LineHasher<R> {
    /// Lines of `input`, which starts at byte `offset` of the journal.
    pub fn new(input: R, offset: u64) -> Self {
        LineHasher {
            input,
            offset,
            line: 0,
        }
    }

    /// Lines returned so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// The offset just past the last line returned.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<HashedLine>> {
        let mut hasher = Sha256::new();
        let start = self.offset;
        let mut len = 0u64;
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if len == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.finish(hasher, start, len, false)));
            }
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    hasher.update(&buf[..=i]);
                    len += i as u64 + 1;
                    self.input.consume(i + 1);
                    return Ok(Some(self.finish(hasher, start, len, true)));
                }
                None => {
                    let n = buf.len();
                    hasher.update(buf);
                    len += n as u64;
                    self.input.consume(n);
                }
            }
        }
    }

    fn finish(&mut self, hasher: Sha256, offset: u64, len: u64, terminated: bool) -> HashedLine {
        self.offset += len;
        self.line += 1;
        HashedLine {
            digest: LineDigest(hasher.finalize().into()),
            offset,
            len,
            terminated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_buffer_edges_hash_as_whole_lines() {
        let text = format!("{}\nb\n{}", "a".repeat(100), "c".repeat(7));
        let mut h = LineHasher::new(io::BufReader::with_capacity(8, text.as_bytes()), 0);
        let first = h.next_line().unwrap().unwrap();
        assert_eq!(
            first.digest,
            LineDigest::of(format!("{}\n", "a".repeat(100)).as_bytes())
        );
        assert_eq!((first.offset, first.len, first.terminated), (0, 101, true));
        let second = h.next_line().unwrap().unwrap();
        assert_eq!(
            (second.offset, second.digest),
            (101, LineDigest::of(b"b\n"))
        );
        let last = h.next_line().unwrap().unwrap();
        assert!(!last.terminated);
        assert_eq!(h.next_line().unwrap(), None);
        assert_eq!((h.lines(), h.offset()), (3, text.len() as u64));
    }
}
