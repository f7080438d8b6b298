//! Capturing a command's output: the first and last bytes kept (memory bounded whatever the
//! command prints), and chunks streamed as text as they arrive.

use std::collections::VecDeque;

/// Bytes of output kept from the start of the output.
pub const OUTPUT_HEAD_BYTES: usize = 32 * 1024;
/// Bytes of output kept from the end of the output.
pub const OUTPUT_TAIL_BYTES: usize = 32 * 1024;
/// Bytes streamed to `ctx.partial` at most; past that the UI has seen enough
/// and the events would only bloat the stream.
const PARTIAL_LIMIT_BYTES: usize = 1024 * 1024;

/// Keeps the first `head_cap` and the last `tail_cap` bytes of a stream and
/// counts what falls between.
pub(crate) struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl CappedOutput {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        CappedOutput {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        if self.tail.len() > self.tail_cap {
            let excess = self.tail.len() - self.tail_cap;
            self.tail.drain(..excess);
        }
    }

    fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// Whether bytes were left out between the head and the tail.
    pub(crate) fn truncated(&self) -> bool {
        self.omitted() > 0
    }

    pub(crate) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.omitted() == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // The cut may land inside a UTF-8 sequence; drop the orphaned
        // continuation bytes rather than show replacement characters.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        format!(
            "{}\n[... {} bytes omitted ...]\n{}",
            String::from_utf8_lossy(&self.head),
            self.omitted() + skip as u64,
            String::from_utf8_lossy(&tail[skip..])
        )
    }
}

/// Sends output chunks to the partial-result channel as text, holding back a
/// UTF-8 sequence split across reads until it is complete.
pub(crate) struct PartialStream {
    sender: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    carry: Vec<u8>,
    sent: usize,
}

impl PartialStream {
    pub(crate) fn new(sender: Option<tokio::sync::mpsc::UnboundedSender<String>>) -> Self {
        PartialStream {
            sender,
            carry: Vec::new(),
            sent: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.sender.is_none() || self.sent >= PARTIAL_LIMIT_BYTES {
            return;
        }
        self.carry.extend_from_slice(bytes);
        let keep = incomplete_suffix_len(&self.carry);
        let ready: Vec<u8> = self.carry.drain(..self.carry.len() - keep).collect();
        self.emit(&ready);
    }

    pub(crate) fn finish(&mut self) {
        let rest = std::mem::take(&mut self.carry);
        self.emit(&rest);
    }

    fn emit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.sent += bytes.len();
        if let Some(sender) = &self.sender
            && sender
                .send(String::from_utf8_lossy(bytes).into_owned())
                .is_err()
        {
            // Nobody listens any more; stop converting.
            self.sender = None;
        }
    }
}

/// How many bytes at the end of `bytes` start a UTF-8 sequence that is not complete yet.
fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_keeps_head_and_tail() {
        let mut c = CappedOutput::new(4, 4);
        c.push(b"0123");
        c.push(b"456789");
        assert_eq!(c.render(), "0123\n[... 2 bytes omitted ...]\n6789");
        let mut small = CappedOutput::new(4, 4);
        small.push(b"abcdef");
        assert_eq!(small.render(), "abcdef");
    }

    #[test]
    fn utf8_split_is_held_back() {
        let bytes = "é€".as_bytes(); // 2 + 3 bytes
        assert_eq!(incomplete_suffix_len(&bytes[..1]), 1);
        assert_eq!(incomplete_suffix_len(&bytes[..2]), 0);
        assert_eq!(incomplete_suffix_len(&bytes[..4]), 2);
        assert_eq!(incomplete_suffix_len(bytes), 0);
        assert_eq!(incomplete_suffix_len(b"abc"), 0);
    }
}
