//! Server-sent events: bytes in (split anywhere), the `data` of complete events out.

use std::fmt;

/// Why a stream could not be read as SSE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line is not valid UTF-8.
    NotUtf8,
    /// A line (or the joined `data` of one event) went past the limit, in bytes.
    TooLong(usize),
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::NotUtf8 => f.write_str("the stream is not valid UTF-8"),
            SseError::TooLong(limit) => write!(
                f,
                "an SSE line or event of the stream is longer than the limit of {limit} bytes"
            ),
        }
    }
}

/// An incremental SSE parser that keeps only the `data` field of events.
///
/// Lines end with `\n`, `\r\n` or `\r`; `data:` takes an optional single space; comments
/// (`:` lines) and other fields are skipped; several `data` lines of one event are joined
/// with `\n`; a blank line ends an event.
///
/// Linear in its input: every byte is scanned for a line end once (the scan resumes where the
/// last one stopped), and memory is bounded by `max_line` (the partial line held, and the
/// `data` of the event being assembled).
#[derive(Debug)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end.
    scanned: usize,
    data: String,
    has_data: bool,
    max_line: usize,
    /// Bytes looked at in search of a line end, over the parser's life (proves linearity).
    examined: usize,
}

impl SseParser {
    /// A parser refusing lines and events longer than `max_line` bytes.
    pub(crate) fn new(max_line: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            scanned: 0,
            data: String::new(),
            has_data: false,
            max_line,
            examined: 0,
        }
    }

    /// Feeds bytes; returns the data of every event they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, SseError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let from = self.scanned.max(start);
            let found = memchr::memchr2(b'\n', b'\r', &self.buf[from..]);
            self.examined += found.map_or(self.buf.len() - from, |rel| rel + 1);
            let Some(rel) = found else {
                self.scanned = self.buf.len();
                break;
            };
            let end = from + rel;
            let next = if self.buf[end] == b'\r' {
                match self.buf.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    // A `\r` at the very end may be the first half of `\r\n`: wait for more.
                    None => {
                        self.scanned = end;
                        break;
                    }
                }
            } else {
                end + 1
            };
            if end - start > self.max_line {
                return Err(SseError::TooLong(self.max_line));
            }
            let line = std::str::from_utf8(&self.buf[start..end]).map_err(|_| SseError::NotUtf8)?;
            field(line, &mut self.data, &mut self.has_data, &mut out);
            if self.data.len() > self.max_line {
                return Err(SseError::TooLong(self.max_line));
            }
            start = next;
        }
        if self.buf.len() - start > self.max_line {
            return Err(SseError::TooLong(self.max_line));
        }
        // Only the partial last line stays; it arrived in this push, so moving it is linear.
        self.buf.drain(..start);
        self.scanned -= start.min(self.scanned);
        Ok(out)
    }

    /// Ends the input: a last line without terminator and an event without its blank line
    /// still count.
    pub(crate) fn finish(&mut self) -> Result<Vec<String>, SseError> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        let rest = rest.strip_suffix(b"\r").unwrap_or(&rest);
        if !rest.is_empty() {
            let line = std::str::from_utf8(rest).map_err(|_| SseError::NotUtf8)?;
            field(line, &mut self.data, &mut self.has_data, &mut out);
            if self.data.len() > self.max_line {
                return Err(SseError::TooLong(self.max_line));
            }
        }
        dispatch(&mut self.data, &mut self.has_data, &mut out);
        Ok(out)
    }
}

/// Handles one line: a `data` field grows the event, a blank line ends it.
fn field(line: &str, data: &mut String, has_data: &mut bool, out: &mut Vec<String>) {
    if line.is_empty() {
        dispatch(data, has_data, out);
        return;
    }
    if line.starts_with(':') {
        return;
    }
    let (name, value) = match line.split_once(':') {
        Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
        None => (line, ""),
    };
    if name == "data" {
        if *has_data {
            data.push('\n');
        }
        data.push_str(value);
        *has_data = true;
    }
}

fn dispatch(data: &mut String, has_data: &mut bool, out: &mut Vec<String>) {
    if *has_data {
        out.push(std::mem::take(data));
        *has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parts: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for part in parts {
            out.extend(p.push(part).unwrap());
        }
        out.extend(p.finish().unwrap());
        out
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let text = b"data: {\"a\":1}\n\n: keep-alive\n\ndata:{\"b\":2}\r\n\r\nevent: x\nid: 3\ndata: [DONE]\n\n";
        let expected = vec!["{\"a\":1}", "{\"b\":2}", "[DONE]"];
        assert_eq!(all(&[text]), expected);
        for cut in 0..text.len() {
            assert_eq!(all(&[&text[..cut], &text[cut..]]), expected, "cut at {cut}");
            for cut2 in cut..text.len() {
                assert_eq!(
                    all(&[&text[..cut], &text[cut..cut2], &text[cut2..]]),
                    expected,
                    "cuts at {cut} and {cut2}"
                );
            }
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(all(&bytes), expected);
    }

    #[test]
    fn multi_line_data_and_cr_endings() {
        assert_eq!(all(&[b"data: a\ndata: b\n\n"]), vec!["a\nb"]);
        assert_eq!(all(&[b"data: a\r\rdata: b\r", b"\r"]), vec!["a", "b"]);
        assert_eq!(
            all(&[b"data: a\r", b"\ndata: b\r", b"\n\r\n"]),
            vec!["a\nb"]
        );
        assert_eq!(all(&[b"data: tail"]), vec!["tail"]);
        assert_eq!(all(&[b"data\n\n"]), vec![""]);
    }

    #[test]
    fn utf8_split_across_chunks_is_fine() {
        let text = "data: héllo\n\n".as_bytes();
        assert_eq!(all(&[&text[..8], &text[8..]]), vec!["héllo"]);
        let mut p = SseParser::new(100);
        assert_eq!(p.push(b"data: \xff\n"), Err(SseError::NotUtf8));
    }

    #[test]
    fn a_line_past_the_limit_is_refused_before_it_ends() {
        let mut p = SseParser::new(16);
        assert_eq!(p.push(b"data: 0123456789").unwrap(), Vec::<String>::new());
        // The line is not over, but it is already too long: no need to wait for its end.
        assert_eq!(p.push(b"abcdef"), Err(SseError::TooLong(16)));
        let mut p = SseParser::new(16);
        assert_eq!(
            p.push(b"data: 0123456789abcdef\n"),
            Err(SseError::TooLong(16))
        );
        // Many short data lines of one event add up to a too-large event.
        let mut p = SseParser::new(16);
        assert_eq!(
            p.push(b"data: 0123456\ndata: 0123456\ndata: 0123456\n"),
            Err(SseError::TooLong(16))
        );
        // Exactly at the limit is fine.
        let mut p = SseParser::new(16);
        assert_eq!(p.push(b"data: 0123456789\n\n").unwrap(), vec!["0123456789"]);
    }

    #[test]
    fn every_byte_is_examined_about_once_however_the_input_is_cut() {
        // One 1 MiB event arriving in 1 KiB pieces: rescanning the buffer on every piece
        // would look at ~512 MiB; resuming the scan looks at each byte once (a `\r` at the
        // end of a piece may be looked at twice).
        let line = format!("data: {}\n\n", "x".repeat(1 << 20));
        let mut p = SseParser::new(2 << 20);
        let mut out = Vec::new();
        for piece in line.as_bytes().chunks(1024) {
            out.extend(p.push(piece).unwrap());
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 1 << 20);
        assert!(
            p.examined <= line.len() + 2,
            "{} > {}",
            p.examined,
            line.len()
        );
        let crlf = "data: a\r\n\r\n".repeat(1000);
        let mut p = SseParser::new(100);
        for piece in crlf.as_bytes().chunks(7) {
            p.push(piece).unwrap();
        }
        assert!(p.examined <= 2 * crlf.len(), "{}", p.examined);
    }

    #[test]
    fn the_buffer_holds_only_the_partial_line() {
        let mut p = SseParser::new(1 << 20);
        for _ in 0..1000 {
            p.push(b"data: {}\n\ndata: part").unwrap();
            p.push(b"ial\n\n").unwrap();
        }
        assert!(p.buf.capacity() < 1024, "{}", p.buf.capacity());
    }
}
