//! Reading a journal line by line in bounded memory: a line longer than the limit is never
//! held whole. Its first bytes fill the buffer up to the limit, the rest is skipped with
//! `memchr` over the input's own buffer, and the caller learns its number, offset and size
//! (and may stream its bytes somewhere, as `repair --salvage` does). Every journal reader of
//! this crate (the reader, the scan, the salvage) reads through here, so a 1 GB line or a
//! 2 GB sparse file costs at most the limit plus the input's buffer.

use std::io::{self, BufRead};
use std::sync::OnceLock;

/// Longest journal line read into memory by default (256 MiB): above any line turnstile
/// writes from accepted input (the largest SDK frame, 64 MiB, even if JSON escaping doubles
/// it), so a valid journal never meets it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256 << 20;

/// The environment variable that sets the limit for every journal reader of the process.
pub const MAX_LINE_BYTES_ENV: &str = "TURNSTILE_MAX_LINE_BYTES";

/// The longest line readers hold: `TURNSTILE_MAX_LINE_BYTES` when set to a positive number of
/// bytes, else [`DEFAULT_MAX_LINE_BYTES`]. Read once per process.
pub fn max_line_bytes() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(MAX_LINE_BYTES_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_LINE_BYTES)
    })
}

/// Where one line is and what it is like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineInfo {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of its first byte.
    pub offset: u64,
    /// Its length in bytes, the `\n` included.
    pub len: u64,
    /// Whether it ends with `\n` (false for a last line the writer never finished).
    pub terminated: bool,
    /// Longer than the limit: only its first bytes are in [`BoundedLines::bytes`].
    pub oversized: bool,
    /// Nothing but NUL bytes (zero-filled blocks after a power loss, a sparse file's hole),
    /// its `\n` aside.
    pub all_nul: bool,
}

/// Lines of a buffered input, each at most `max` bytes in memory.
pub struct BoundedLines<R> {
    input: R,
    buf: Vec<u8>,
    max: usize,
    line: u64,
    offset: u64,
}

impl<R: BufRead> BoundedLines<R> {
    /// Lines of `input` with at most `max` bytes (at least 1) held.
    pub fn new(input: R, max: usize) -> Self {
        BoundedLines {
            input,
            buf: Vec::with_capacity(4096),
            max: max.max(1),
            line: 0,
            offset: 0,
        }
    }

    /// Holds at most `max` bytes (at least 1) of a line from now on.
    pub fn with_max(mut self, max: usize) -> Self {
        self.max = max.max(1);
        self
    }

    /// Starts numbering after line `line`, at byte `offset`.
    pub fn starting_at(mut self, line: u64, offset: u64) -> Self {
        self.line = line;
        self.offset = offset;
        self
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes consumed so far (the offset just past the last line returned).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The last line's bytes (its `\n` included when it has one); for an oversized line, its
    /// first `max` bytes only.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The next line; `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<LineInfo>> {
        self.next_line_spilling(&mut |_| Ok(()))
    }

    /// The next line, as [`BoundedLines::next_line`]; the bytes of an oversized line are also
    /// handed to `spill` piece by piece, in order, all of them (the held prefix first), so a
    /// caller can copy the line elsewhere without holding it.
    pub fn next_line_spilling(
        &mut self,
        spill: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<Option<LineInfo>> {
        self.buf.clear();
        let mut len = 0u64;
        let mut terminated = false;
        let mut oversized = false;
        let mut all_nul = true;
        loop {
            let available = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            let (take, found) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let piece = &available[..take];
            let body = if found { &piece[..take - 1] } else { piece };
            all_nul = all_nul && body.iter().all(|&b| b == 0);
            if !oversized && self.buf.len() + take > self.max {
                oversized = true;
                spill(&self.buf)?;
                let room = self.max - self.buf.len();
                self.buf.extend_from_slice(&piece[..room]);
                spill(piece)?;
            } else if oversized {
                spill(piece)?;
            } else {
                self.buf.extend_from_slice(piece);
            }
            len += take as u64;
            self.input.consume(take);
            if found {
                terminated = true;
                break;
            }
        }
        if len == 0 {
            return Ok(None);
        }
        self.line += 1;
        let offset = self.offset;
        self.offset += len;
        Ok(Some(LineInfo {
            line: self.line,
            offset,
            len,
            terminated,
            oversized,
            all_nul,
        }))
    }
}

/// The message every reader gives for an oversized line: its size and what to do.
pub fn oversized_message(len: u64, max: usize) -> String {
    format!(
        "line of {len} bytes is longer than the {max} bytes a journal line may take in memory ({MAX_LINE_BYTES_ENV}); it was skipped unread"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8], max: usize, buf_cap: usize) -> Vec<(LineInfo, Vec<u8>, Vec<u8>)> {
        let mut lines = BoundedLines::new(io::BufReader::with_capacity(buf_cap, text), max);
        let mut out = Vec::new();
        loop {
            let mut spilled = Vec::new();
            let next = lines
                .next_line_spilling(&mut |b| {
                    spilled.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
            let Some(info) = next else { break };
            out.push((info, lines.bytes().to_vec(), spilled));
        }
        out
    }

    #[test]
    fn lines_within_the_limit_come_whole_with_numbers_and_offsets() {
        for cap in [1, 3, 64] {
            let got = all(b"ab\ncde\nf", 16, cap);
            assert_eq!(got.len(), 3);
            assert_eq!(got[0].1, b"ab\n");
            assert_eq!((got[1].0.line, got[1].0.offset, got[1].0.len), (2, 3, 4));
            assert_eq!(got[2].1, b"f");
            assert!(!got[2].0.terminated && got[1].0.terminated);
            assert!(got.iter().all(|g| !g.0.oversized && g.2.is_empty()));
        }
    }

    #[test]
    fn an_oversized_line_is_measured_spilled_whole_and_held_only_to_the_limit() {
        let long = vec![b'x'; 10_000];
        let mut text = b"a\n".to_vec();
        text.extend_from_slice(&long);
        text.extend_from_slice(b"\nb\n");
        for cap in [7, 4096, 1 << 16] {
            let got = all(&text, 100, cap);
            assert_eq!(got.len(), 3);
            let (info, held, spilled) = &got[1];
            assert!(info.oversized && info.terminated && !info.all_nul);
            assert_eq!((info.line, info.offset, info.len), (2, 2, 10_001));
            assert_eq!(held.len(), 100);
            assert_eq!(spilled.len(), 10_001);
            assert_eq!(&spilled[..10_000], &long[..]);
            assert_eq!(got[2].1, b"b\n");
            assert_eq!(got[2].0.offset, 10_003);
        }
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_whole() {
        let got = all(b"abcd\n", 5, 2);
        assert!(!got[0].0.oversized);
        assert_eq!(got[0].1, b"abcd\n");
        assert!(all(b"abcde\n", 5, 2)[0].0.oversized);
    }

    #[test]
    fn nul_runs_are_recognised_even_when_oversized() {
        let got = all(&[0u8; 5000], 10, 512);
        assert_eq!(got.len(), 1);
        assert!(got[0].0.all_nul && got[0].0.oversized && !got[0].0.terminated);
        assert_eq!(got[0].0.len, 5000);
    }
}
