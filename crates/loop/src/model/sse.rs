//! Server-sent events: bytes in (split anywhere), the `data` of complete events out.

/// An incremental SSE parser that keeps only the `data` field of events.
///
/// Lines end with `\n`, `\r\n` or `\r`; `data:` takes an optional single space; comments
/// (`:` lines) and other fields are skipped; several `data` lines of one event are joined
/// with `\n`; a blank line ends an event.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(rel) = self.buf[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + rel;
            let next = if self.buf[end] == b'\r' {
                match self.buf.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    // A `\r` at the very end may be the first half of `\r\n`: wait.
                    None => break,
                }
            } else {
                end + 1
            };
            let line = std::str::from_utf8(&self.buf[start..end])
                .map_err(|_| "the stream is not valid UTF-8".to_string())?
                .to_string();
            self.line(&line, &mut out);
            start = next;
        }
        self.buf.drain(..start);
        Ok(out)
    }

    /// Ends the input: a last line without terminator and an event without its blank line
    /// still count.
    pub(crate) fn finish(&mut self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        let rest = rest.strip_suffix(b"\r").unwrap_or(&rest);
        if !rest.is_empty() {
            let line = std::str::from_utf8(rest)
                .map_err(|_| "the stream is not valid UTF-8".to_string())?
                .to_string();
            self.line(&line, &mut out);
        }
        self.dispatch(&mut out);
        Ok(out)
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }

    fn dispatch(&mut self, out: &mut Vec<String>) {
        if self.has_data {
            out.push(std::mem::take(&mut self.data));
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parts: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::default();
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
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(all(&bytes), expected);
    }

    #[test]
    fn multi_line_data_and_cr_endings() {
        assert_eq!(all(&[b"data: a\ndata: b\n\n"]), vec!["a\nb"]);
        assert_eq!(all(&[b"data: a\r\rdata: b\r", b"\r"]), vec!["a", "b"]);
        assert_eq!(all(&[b"data: tail"]), vec!["tail"]);
        assert_eq!(all(&[b"data\n\n"]), vec![""]);
    }

    #[test]
    fn utf8_split_across_chunks_is_fine() {
        let text = "data: héllo\n\n".as_bytes();
        assert_eq!(all(&[&text[..8], &text[8..]]), vec!["héllo"]);
        let mut p = SseParser::default();
        assert!(p.push(b"data: \xff\n").is_err());
    }
}
