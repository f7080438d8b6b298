//! LSP-style framing: every message is `Content-Length: N\r\n\r\n` followed by N bytes of JSON.
//!
//! The reader never trusts the peer: header lines are capped, a body larger than the limit is
//! skipped without being buffered, and bytes that are not a header (left over after a frame
//! whose `Content-Length` was too small, or plain garbage) are discarded until the next
//! `Content-Length:` so one bad frame costs one error, not the connection.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest body accepted by default (64 MiB): far above any SDK message, small enough that a
/// hostile length cannot exhaust memory.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;

/// Longest header line kept; longer lines are garbage by definition.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Most header lines in one frame before the header is refused.
const MAX_HEADER_LINES: usize = 32;

const CONTENT_LENGTH: &[u8] = b"content-length:";

/// One step of the reader.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete body.
    Body(Vec<u8>),
    /// A body longer than the limit; its bytes were read and discarded.
    Oversized {
        /// The declared length.
        declared: usize,
        /// The limit.
        limit: usize,
    },
    /// A header that cannot be used (no or bad `Content-Length`, too many lines); the reader has
    /// moved past it.
    BadHeader(String),
}

/// Why the reader stopped for good.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the stream in the middle of a frame.
    #[error("truncated frame: the stream ended after {got} of {expected} body bytes")]
    Truncated {
        /// Bytes the header announced.
        expected: usize,
        /// Bytes that arrived.
        got: usize,
    },
    /// The peer closed the stream in the middle of a header.
    #[error("truncated frame: the stream ended inside a frame header")]
    TruncatedHeader,
    /// Reading failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
}

/// Reads frames from a buffered byte stream.
pub struct FrameReader<R> {
    input: R,
    max_body: usize,
    /// Bytes of garbage skipped since the last good frame (reported once, then reset).
    skipped: usize,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader refusing bodies above `max_body` bytes.
    pub fn new(input: R, max_body: usize) -> Self {
        FrameReader {
            input,
            max_body,
            skipped: 0,
        }
    }

    /// The next frame; `Ok(None)` when the stream ends cleanly between frames.
    pub async fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let mut length: Option<Result<usize, String>> = None;
        let mut lines = 0usize;
        let mut in_header = false;
        loop {
            let Some(line) = self.read_line().await? else {
                if in_header {
                    return Err(FrameError::TruncatedHeader);
                }
                self.report_skipped();
                return Ok(None);
            };
            let line = trim_eol(&line);
            if !in_header {
                // Between frames: anything before a `Content-Length:` is garbage.
                match find_content_length(line) {
                    Some(at) => {
                        if at > 0 {
                            self.skipped += at;
                        }
                        self.report_skipped();
                        in_header = true;
                        length = Some(parse_length(&line[at + CONTENT_LENGTH.len()..]));
                        lines = 1;
                    }
                    None if looks_like_header(line) => {
                        // A header block that forgot its length: refused once it ends, so
                        // the client hears about it instead of waiting for an answer.
                        self.report_skipped();
                        in_header = true;
                        lines = 1;
                    }
                    None => {
                        if !line.is_empty() {
                            self.skipped += line.len();
                        }
                    }
                }
                continue;
            }
            if line.is_empty() {
                break;
            }
            lines += 1;
            if lines > MAX_HEADER_LINES {
                return Ok(Some(Frame::BadHeader(format!(
                    "frame header has more than {MAX_HEADER_LINES} lines"
                ))));
            }
            if let Some(at) = find_content_length(line) {
                if at == 0 {
                    length = Some(parse_length(&line[CONTENT_LENGTH.len()..]));
                } else {
                    // A new frame starts inside this header: the old one was garbage.
                    self.skipped += at;
                    length = Some(parse_length(&line[at + CONTENT_LENGTH.len()..]));
                    lines = 1;
                }
            }
            // Other headers (Content-Type) carry nothing we need.
        }
        let declared = match length {
            Some(Ok(n)) => n,
            Some(Err(reason)) => return Ok(Some(Frame::BadHeader(reason))),
            None => {
                return Ok(Some(Frame::BadHeader(
                    "frame header has no Content-Length".into(),
                )));
            }
        };
        if declared > self.max_body {
            let got = tokio::io::copy(
                &mut (&mut self.input).take(declared as u64),
                &mut tokio::io::sink(),
            )
            .await? as usize;
            if got < declared {
                return Err(FrameError::Truncated {
                    expected: declared,
                    got,
                });
            }
            return Ok(Some(Frame::Oversized {
                declared,
                limit: self.max_body,
            }));
        }
        let mut body = Vec::with_capacity(declared);
        let got = (&mut self.input)
            .take(declared as u64)
            .read_to_end(&mut body)
            .await?;
        if got < declared {
            return Err(FrameError::Truncated {
                expected: declared,
                got,
            });
        }
        Ok(Some(Frame::Body(body)))
    }

    /// One line up to and including `\n` (or the rest of the stream), at most
    /// [`MAX_HEADER_LINE`] bytes kept: a longer line is consumed and replaced by its tail, which
    /// is all that can matter (a `Content-Length:` starting a new frame).
    async fn read_line(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let mut line = Vec::new();
        let mut any = false;
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok(any.then_some(line));
            }
            any = true;
            let (chunk, done) = match memchr_newline(buf) {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            line.extend_from_slice(chunk);
            let used = chunk.len();
            self.input.consume(used);
            if line.len() > MAX_HEADER_LINE {
                let cut = line.len() - MAX_HEADER_LINE;
                self.skipped += cut;
                line.drain(..cut);
            }
            if done {
                return Ok(Some(line));
            }
        }
    }

    fn report_skipped(&mut self) {
        if self.skipped > 0 {
            tracing::warn!(
                bytes = self.skipped,
                "skipped bytes that were not a frame header"
            );
            self.skipped = 0;
        }
    }
}

/// Writes one frame and flushes it.
pub async fn write_frame<W: AsyncWrite + Unpin>(output: &mut W, body: &[u8]) -> io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    output.write_all(header.as_bytes()).await?;
    output.write_all(body).await?;
    output.flush().await
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether `line` has the shape of a header field (`Name: value`, the name a token): the
/// start of a header block, as opposed to stray bytes between frames.
fn looks_like_header(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    colon > 0
        && line[..colon]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Position of a case-insensitive `Content-Length:` in `line`.
fn find_content_length(line: &[u8]) -> Option<usize> {
    line.windows(CONTENT_LENGTH.len())
        .position(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

fn parse_length(value: &[u8]) -> Result<usize, String> {
    let text = String::from_utf8_lossy(value);
    let text = text.trim();
    text.parse::<usize>()
        .map_err(|_| format!("bad Content-Length {text:?}: expected a byte count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<Option<Frame>, String>> {
        let mut reader = FrameReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let next = reader.next_frame().await.map_err(|e| e.to_string());
            let stop = !matches!(next, Ok(Some(_)));
            out.push(next);
            if stop {
                return out;
            }
        }
    }

    fn body(s: &str) -> Result<Option<Frame>, String> {
        Ok(Some(Frame::Body(s.as_bytes().to_vec())))
    }

    #[tokio::test]
    async fn reads_frames_back_to_back() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length: 4\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1,2]";
        // The second frame's header starts right after the first body (no newline between).
        let got = frames(input, 100).await;
        assert_eq!(got[0], body("{}"));
        assert_eq!(got[1], body("[1,2"));
    }

    #[tokio::test]
    async fn short_length_leaves_garbage_that_is_skipped() {
        let input = b"Content-Length: 3\r\n\r\n{\"a\":1}\r\nContent-Length: 2\r\n\r\n{}";
        let got = frames(input, 100).await;
        assert_eq!(got[0], body("{\"a"));
        assert_eq!(got[1], body("{}"));
        assert_eq!(got[2], Ok(None));
    }

    #[tokio::test]
    async fn oversized_body_is_skipped_and_reading_goes_on() {
        let mut input = b"Content-Length: 10\r\n\r\n0123456789".to_vec();
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let got = frames(&input, 5).await;
        assert_eq!(
            got[0],
            Ok(Some(Frame::Oversized {
                declared: 10,
                limit: 5
            }))
        );
        assert_eq!(got[1], body("{}"));
    }

    #[tokio::test]
    async fn bad_headers_are_reported() {
        let got = frames(
            b"Content-Length: lots\r\n\r\nContent-Length: 2\r\n\r\n{}",
            100,
        )
        .await;
        assert!(matches!(&got[0], Ok(Some(Frame::BadHeader(r))) if r.contains("lots")));
        assert_eq!(got[1], body("{}"));
    }

    #[tokio::test]
    async fn a_header_block_without_a_length_is_reported() {
        let got = frames(
            b"Content-Type: application/json\r\n\r\n{}\r\nContent-Length: 2\r\n\r\n{}",
            100,
        )
        .await;
        assert!(
            matches!(&got[0], Ok(Some(Frame::BadHeader(r))) if r.contains("no Content-Length")),
            "{got:?}"
        );
        assert_eq!(got[1], body("{}"));
        // Stray text between frames is still skipped silently.
        let got = frames(b"hello there\r\nContent-Length: 2\r\n\r\n{}", 100).await;
        assert_eq!(got[0], body("{}"));
    }

    #[tokio::test]
    async fn truncation_is_an_error() {
        let got = frames(b"Content-Length: 10\r\n\r\n0123", 100).await;
        assert_eq!(
            got[0],
            Err("truncated frame: the stream ended after 4 of 10 body bytes".into())
        );
        let got = frames(b"Content-Length: 10\r\n", 100).await;
        assert!(got[0].as_ref().is_err_and(|e| e.contains("header")));
        let got = frames(b"   \r\n", 100).await;
        assert_eq!(got[0], Ok(None));
    }

    #[tokio::test]
    async fn huge_garbage_line_is_not_buffered() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let got = frames(&input, 100).await;
        assert_eq!(got[0], body("{}"));
    }

    #[tokio::test]
    async fn writes_a_frame() {
        let mut out = Vec::new();
        write_frame(&mut out, b"{}").await.unwrap();
        assert_eq!(out, b"Content-Length: 2\r\n\r\n{}");
    }
}
