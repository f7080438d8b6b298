//! Measuring the lines of a journal as its bytes pass through, holding none of them: what a
//! byte-for-byte copy (`export`) needs to name a line the readers would not hold
//! ([`crate::max_line_bytes`]) without ever parsing or keeping a line.

use std::io::{self, Write};

/// At most this many long lines are kept with their place; the rest are only counted.
pub const MAX_LONG_LISTED: usize = 100;

/// A line longer than the meter's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of its first byte.
    pub offset: u64,
    /// Its length in bytes, the `\n` included.
    pub len: u64,
    /// Whether it ends with `\n` (false for an unfinished last line).
    pub terminated: bool,
}

/// What a [`LineMeter`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measured {
    /// Bytes written through.
    pub bytes: u64,
    /// Lines, an unfinished last one included.
    pub lines: u64,
    /// The first [`MAX_LONG_LISTED`] lines longer than the limit.
    pub long: Vec<LongLine>,
    /// How many lines are longer than the limit in all.
    pub long_total: u64,
}

/// A writer that passes every byte on to `inner` and measures the lines: their count, and
/// those longer than `max` bytes (the `\n` counted, as the readers count it).
pub struct LineMeter<W> {
    inner: W,
    max: u64,
    /// Offset where the current line started.
    line_start: u64,
    measured: Measured,
}

impl<W: Write> LineMeter<W> {
    /// A meter in front of `inner` for lines of at most `max` bytes.
    pub fn new(inner: W, max: usize) -> Self {
        LineMeter {
            inner,
            max: max as u64,
            line_start: 0,
            measured: Measured::default(),
        }
    }

    fn end_line(&mut self, end: u64, terminated: bool) {
        let len = end - self.line_start;
        self.measured.lines += 1;
        if len > self.max {
            self.measured.long_total += 1;
            if self.measured.long.len() < MAX_LONG_LISTED {
                self.measured.long.push(LongLine {
                    line: self.measured.lines,
                    offset: self.line_start,
                    len,
                    terminated,
                });
            }
        }
        self.line_start = end;
    }

    /// Flushes `inner` and gives what was measured (an unfinished last line counted) and
    /// `inner` back.
    pub fn finish(mut self) -> io::Result<(Measured, W)> {
        self.inner.flush()?;
        if self.measured.bytes > self.line_start {
            self.end_line(self.measured.bytes, false);
        }
        Ok((self.measured, self.inner))
    }
}

impl<W: Write> Write for LineMeter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let base = self.measured.bytes;
        for at in memchr::memchr_iter(b'\n', &buf[..n]) {
            self.end_line(base + at as u64 + 1, true);
        }
        self.measured.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_and_the_long_ones_named_across_writes() {
        let text = b"ab\ncdefgh\nij\nklmnopq";
        for piece in [1, 2, 5, text.len()] {
            let mut meter = LineMeter::new(Vec::new(), 4);
            for chunk in text.chunks(piece) {
                meter.write_all(chunk).unwrap();
            }
            let (measured, out) = meter.finish().unwrap();
            assert_eq!(out, text, "every byte passed on");
            assert_eq!((measured.bytes, measured.lines), (text.len() as u64, 4));
            assert_eq!(measured.long_total, 2);
            assert_eq!(
                measured.long,
                vec![
                    LongLine {
                        line: 2,
                        offset: 3,
                        len: 7,
                        terminated: true
                    },
                    LongLine {
                        line: 4,
                        offset: 13,
                        len: 7,
                        terminated: false
                    },
                ]
            );
        }
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_not_long() {
        let mut meter = LineMeter::new(io::sink(), 5);
        meter.write_all(b"abcd\nabcde\n").unwrap();
        let (measured, _) = meter.finish().unwrap();
        assert_eq!(measured.lines, 2);
        assert_eq!(
            measured.long.iter().map(|l| l.line).collect::<Vec<_>>(),
            [2]
        );
    }
}
