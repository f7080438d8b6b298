//! LSP-style framing: every message is `Content-Length: N\r\n\r\n` followed by N bytes of JSON.
//!
//! The reader never trusts the peer: header lines are capped, a body larger than the limit is
//! skipped without being buffered, and bytes that are not a header (left over after a frame
//! whose `Content-Length` was too small, or plain garbage) are discarded until the next
//! `Content-Length:` so one bad frame costs one error, not the connection.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    /// A body the server-wide budget had no room for within its wait; its bytes were read
    /// and discarded.
    Busy {
        /// The declared length.
        declared: usize,
        /// The server-wide budget of bytes in frames being received.
        budget: usize,
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

/// Bodies up to this size skip the budget: control messages (`ping`, `session.abort`) never
/// wait behind large frames, and what they hold is bounded by the number of connections.
pub const BUDGET_FREE_BODY: usize = 64 * 1024;

/// Granularity of the budget's accounting.
const BUDGET_UNIT: usize = 1024;

/// A budget of body bytes being received, shared by every connection of a server: a large body
/// is read only once the budget has room for it, so many clients each half-way through a big
/// frame cannot hold more than the budget between them. A reader waiting for room does not
/// read its socket, so its client is held back by TCP itself.
#[derive(Clone, Debug)]
pub struct FrameBudget {
    permits: Arc<Semaphore>,
    bytes: usize,
    wait: Duration,
}

impl FrameBudget {
    /// A budget of `bytes`; a body waits at most `wait` for room before it is refused.
    pub fn new(bytes: usize, wait: Duration) -> Self {
        let units = bytes.div_ceil(BUDGET_UNIT).min(Semaphore::MAX_PERMITS);
        FrameBudget {
            permits: Arc::new(Semaphore::new(units)),
            bytes,
            wait,
        }
    }

    /// The budget in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes of the budget not in use now.
    pub fn available(&self) -> usize {
        self.permits.available_permits() * BUDGET_UNIT
    }

    /// Room for a body of `len` bytes, waiting up to the budget's wait; `None` when there was
    /// none in time (or `len` exceeds the whole budget).
    async fn reserve(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        let units = u32::try_from(len.div_ceil(BUDGET_UNIT)).ok()?;
        if units as usize > self.bytes.div_ceil(BUDGET_UNIT) {
            return None;
        }
        let acquire = Arc::clone(&self.permits).acquire_many_owned(units);
        tokio::time::timeout(self.wait, acquire).await.ok()?.ok()
    }
}

/// Reads frames from a buffered byte stream.
pub struct FrameReader<R> {
    input: R,
    max_body: usize,
    /// Bytes of garbage skipped since the last good frame (reported once, then reset).
    skipped: usize,
    budget: Option<FrameBudget>,
    /// Room held for the last body returned: released when the next frame is asked for,
    /// by when the caller is done with that body.
    held: Option<OwnedSemaphorePermit>,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader refusing bodies above `max_body` bytes.
    pub fn new(input: R, max_body: usize) -> Self {
        FrameReader {
            input,
            max_body,
            skipped: 0,
            budget: None,
            held: None,
        }
    }

    /// Refuses bodies above `max_body` bytes from the next frame on.
    pub fn set_max_body(&mut self, max_body: usize) {
        self.max_body = max_body;
    }

    /// Makes bodies above [`BUDGET_FREE_BODY`] bytes wait for room in `budget`.
    pub fn with_budget(mut self, budget: FrameBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The next frame; `Ok(None)` when the stream ends cleanly between frames.
    pub async fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        self.held = None;
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
            self.discard(declared).await?;
            return Ok(Some(Frame::Oversized {
                declared,
                limit: self.max_body,
            }));
        }
        if declared > BUDGET_FREE_BODY
            && let Some(budget) = &self.budget
        {
            match budget.reserve(declared).await {
                Some(permit) => self.held = Some(permit),
                None => {
                    let budget = budget.bytes();
                    self.discard(declared).await?;
                    return Ok(Some(Frame::Busy { declared, budget }));
                }
            }
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

    /// Reads and drops a body of `declared` bytes without buffering it.
    async fn discard(&mut self, declared: usize) -> Result<(), FrameError> {
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
        Ok(())
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
    async fn large_bodies_wait_for_the_budget_and_small_ones_do_not() {
        let budget = FrameBudget::new(200 * 1024, Duration::from_secs(60));
        let big = |n: usize| {
            let mut frame = format!("Content-Length: {n}\r\n\r\n").into_bytes();
            frame.resize(frame.len() + n, b' ');
            frame
        };
        // The first reader holds 150 KiB of the 200 KiB while its body is in use.
        let first_input = big(150 * 1024);
        let mut first = FrameReader::new(&first_input[..], 1 << 20).with_budget(budget.clone());
        assert!(matches!(first.next_frame().await, Ok(Some(Frame::Body(_)))));
        assert!(budget.available() <= 50 * 1024);
        // A small body passes anyway.
        let small_input = big(1000);
        let mut small = FrameReader::new(&small_input[..], 1 << 20).with_budget(budget.clone());
        assert!(matches!(small.next_frame().await, Ok(Some(Frame::Body(_)))));
        // A second large one waits until the first reader moves on.
        let second_input = big(100 * 1024);
        let mut second = FrameReader::new(&second_input[..], 1 << 20).with_budget(budget.clone());
        let waiting = second.next_frame();
        tokio::pin!(waiting);
        assert!(futures_poll_pending(&mut waiting).await);
        assert_eq!(first.next_frame().await.unwrap(), None);
        assert!(matches!(waiting.await, Ok(Some(Frame::Body(_)))));
    }

    #[tokio::test]
    async fn a_body_that_finds_no_room_in_time_is_refused_and_skipped() {
        let budget = FrameBudget::new(100 * 1024, Duration::from_millis(1));
        let _holder = budget.reserve(100 * 1024).await.unwrap();
        let mut input = format!("Content-Length: {}\r\n\r\n", 80 * 1024).into_bytes();
        input.resize(input.len() + 80 * 1024, b' ');
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let got = frames_with(&input, budget.clone()).await;
        assert_eq!(
            got[0],
            Ok(Some(Frame::Busy {
                declared: 80 * 1024,
                budget: 100 * 1024
            }))
        );
        assert_eq!(got[1], body("{}"));
        // More than the whole budget can never fit: refused at once.
        let whole = FrameBudget::new(100 * 1024, Duration::from_secs(3600));
        let mut input = format!("Content-Length: {}\r\n\r\n", 200 * 1024).into_bytes();
        input.resize(input.len() + 200 * 1024, b' ');
        let got = frames_with(&input, whole).await;
        assert!(matches!(got[0], Ok(Some(Frame::Busy { .. }))));
    }

    async fn frames_with(input: &[u8], budget: FrameBudget) -> Vec<Result<Option<Frame>, String>> {
        let mut reader = FrameReader::new(input, 1 << 20).with_budget(budget);
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

    /// Polls a future once; true when it is still pending.
    async fn futures_poll_pending<F: std::future::Future + Unpin>(f: &mut F) -> bool {
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::pin::Pin::new(&mut *f).poll(cx).is_pending())
        })
        .await
    }

    #[tokio::test]
    async fn writes_a_frame() {
        let mut out = Vec::new();
        write_frame(&mut out, b"{}").await.unwrap();
        assert_eq!(out, b"Content-Length: 2\r\n\r\n{}");
    }
}
