//! Reading a journal's lines into a [`Folder`]: large reads, no copy of a line that fits the
//! read buffer, and the audit's one-pass SIMD check for lines in the standard layout (the
//! journal reader's full parse only for the others).
//!
//! Validity is the journal reader's: a line the fast check does not accept goes through
//! [`check_line`], which accepts or names the damage, so the fold accepts exactly the lines it
//! accepted before (the audit's property tests prove the fast check agrees with it).
//!
//! On a large journal the work is split over two threads: one reads, cuts the bytes into runs
//! of complete lines, extends the CRC over them and deserializes the tool results (three
//! quarters of a journal's bytes, and the most expensive part of the fold); the other folds
//! the runs in file order. A small journal is cut by the same [`LineReader`] on the calling
//! thread, which then deserializes a tool result only when the fold needs it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc;

use turnstile_journal::ReadError;
use turnstile_journal::reader::{ReadMode, check_line};

use crate::conversation::Message;
use crate::error::ReplayError;
use crate::fold::{Ahead, Folder, ToolRead, prepare_line};

/// Bytes asked of the kernel per read.
const READ_BYTES: usize = 1 << 20;
/// Below this many bytes to fold, one thread does it all: starting a thread and handing
/// buffers over would cost more than it saves (a checkpoint's tail is usually a few lines).
const PARALLEL_FROM: u64 = 4 << 20;
/// Runs of lines in flight between the reading thread and the folding one; with the one being
/// filled and the one being folded, at most this plus two buffers exist. Eight absorbs the
/// scheduler's pauses of either thread on a busy machine better than two (measured: see
/// `docs/performance.md`), for about 10 MiB more at peak.
const IN_FLIGHT: usize = 8;
/// Buffer bytes out with the folding thread at most (a run of one longer line still goes).
const MAX_BYTES_OUT: usize = 16 << 20;
/// Lines per run at most: a file of millions of tiny lines keeps its bookkeeping small.
const MAX_LINES: usize = 8192;

/// Whether the reading thread also deserializes `assistant.message` payloads (the tool
/// requests' arguments as `Value`s): it balances the two threads' work.
const READ_ASSISTANT_AHEAD: bool = false;

/// How [`fold_tail_with`] spreads the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Only the tests force one way or the other.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Threads {
    /// Two threads when there is enough to fold, else one.
    Auto,
    /// Always one thread.
    One,
    /// Always two threads.
    Two,
}

/// Folds the lines of `file` from byte `offset` (line number `line` before it) that start
/// before byte `end` into `folder`, extending `crc` (CRC32C) over every complete line; returns
/// the offset of a torn tail (a last line without `\n`, left out).
pub(crate) fn fold_tail(
    path: &Path,
    file: File,
    folder: &mut Folder,
    line: u64,
    offset: u64,
    end: u64,
    crc: Option<&mut u32>,
) -> Result<Option<u64>, ReplayError> {
    fold_tail_with(path, file, folder, line, offset, end, crc, Threads::Auto)
}

/// [`fold_tail`] with the choice of threads made by the caller (tests hold both to the same
/// result).
#[allow(clippy::too_many_arguments)]
pub(crate) fn fold_tail_with(
    path: &Path,
    mut file: File,
    folder: &mut Folder,
    line: u64,
    offset: u64,
    end: u64,
    crc: Option<&mut u32>,
    threads: Threads,
) -> Result<Option<u64>, ReplayError> {
    let io_error = |e: io::Error| ReplayError::io(path, e);
    let size = file.metadata().map_err(io_error)?.len();
    file.seek(SeekFrom::Start(offset)).map_err(io_error)?;
    let to_fold = size.min(end).saturating_sub(offset);
    let two = match threads {
        // On one core the hand-over is pure overhead.
        Threads::Auto => {
            to_fold >= PARALLEL_FROM
                && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        }
        Threads::One => false,
        Threads::Two => true,
    };
    let reader = LineReader {
        file,
        at: offset,
        end,
        carry: Vec::new(),
        crc: crc.as_deref().copied(),
        finished: false,
        // Alone, the fold deserializes a result only when it needs it (not a sub-agent's).
        prepare: two.then_some(folder.tool_read),
        stack: Vec::new(),
    };
    let mut cursor = Cursor { line, at: offset };
    let folded = if two {
        fold_two_threads(path, reader, folder, &mut cursor)
    } else {
        fold_one_thread(path, reader, folder, &mut cursor)
    };
    // Whatever stopped the fold, the state it leaves is whole.
    folder.resolve_escaped();
    folder.free_dropped();
    let (torn, crc_after) = folded?;
    if let (Some(crc), Some(after)) = (crc, crc_after) {
        *crc = after;
    }
    Ok(torn)
}

/// The last line folded and the offset after it (for naming a bad line).
struct Cursor {
    line: u64,
    at: u64,
}

fn fold_one_thread(
    path: &Path,
    mut reader: LineReader,
    folder: &mut Folder,
    cursor: &mut Cursor,
) -> Result<(Option<u64>, Option<u32>), ReplayError> {
    let mut buf = vec![0u8; READ_BYTES];
    loop {
        match reader.next(buf).map_err(|e| ReplayError::io(path, e))? {
            Next::Chunk(chunk) => {
                fold_chunk(path, folder, &chunk.bytes, chunk.lines, cursor)?;
                buf = chunk.bytes;
            }
            Next::End(torn) => return Ok((torn, reader.crc)),
        }
    }
}

fn fold_two_threads(
    path: &Path,
    mut reader: LineReader,
    folder: &mut Folder,
    cursor: &mut Cursor,
) -> Result<(Option<u64>, Option<u32>), ReplayError> {
    std::thread::scope(|scope| {
        let (chunks, received) = mpsc::sync_channel::<io::Result<Next>>(IN_FLIGHT);
        // Folded buffers go back to the reader: each is zeroed once, not once per run. With
        // them go the messages compactions dropped, freed there: the texts were allocated
        // there, and freeing them is most of what a compaction costs.
        let (recycle, recycled) = mpsc::channel::<(Vec<u8>, Vec<Vec<Message>>)>();
        folder.keep_dropped();
        let worker = scope.spawn(move || {
            let mut pool = Vec::new();
            // Bytes of the buffers handed out and not back yet.
            let mut out = 0usize;
            loop {
                while let Ok((buf, dropped)) = recycled.try_recv() {
                    out -= buf.len();
                    pool.push(buf);
                    drop(dropped);
                }
                // Runs of huge lines: wait until the folder is done with the earlier ones, so
                // memory follows the longest line, not the number of runs in flight.
                while out > MAX_BYTES_OUT {
                    let Ok((buf, dropped)) = recycled.recv() else {
                        return reader.crc;
                    };
                    out -= buf.len();
                    pool.push(buf);
                    drop(dropped);
                }
                let buf = pool.pop().unwrap_or_else(|| vec![0u8; READ_BYTES]);
                let next = reader.next(buf);
                if let Ok(Next::Chunk(chunk)) = &next {
                    out += chunk.bytes.len();
                }
                let last = !matches!(next, Ok(Next::Chunk(_)));
                // A send fails when the folder stopped at a bad line: nothing more to do.
                if chunks.send(next).is_err() || last {
                    return reader.crc;
                }
            }
        });
        let torn = loop {
            let Ok(next) = received.recv() else {
                // The reader ended without its last message: it panicked; pass that on.
                if let Err(panic) = worker.join() {
                    std::panic::resume_unwind(panic);
                }
                let gone = io::Error::other("the journal's reading thread stopped early");
                return Err(ReplayError::io(path, gone));
            };
            match next.map_err(|e| ReplayError::io(path, e))? {
                Next::Chunk(chunk) => {
                    fold_chunk(path, folder, &chunk.bytes, chunk.lines, cursor)?;
                    // The reader may have ended already; then all is simply freed here.
                    let _ = recycle.send((chunk.bytes, folder.take_dropped()));
                }
                Next::End(torn) => break torn,
            }
        };
        let crc = match worker.join() {
            Ok(crc) => crc,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok((torn, crc))
    })
}

/// Folds the complete lines of `bytes` (lengths in `lines`, `\n` included).
fn fold_chunk(
    path: &Path,
    folder: &mut Folder,
    bytes: &[u8],
    lines: Vec<Prepared>,
    cursor: &mut Cursor,
) -> Result<(), ReplayError> {
    let mut start = 0;
    for prepared in lines {
        let len = prepared.len;
        let body = &bytes[start..start + len - 1];
        cursor.line += 1;
        let applied = match prepared.tool.map(|tool| *tool) {
            Some(Ahead::Scanned(scanned)) => folder.apply_scanned_line(body, len as u64, scanned),
            Some(Ahead::Read(read)) => {
                folder.set_prepared(Some(read));
                folder.apply_standard_line(body, len as u64)
            }
            None => folder.apply_standard_line(body, len as u64),
        };
        if !applied {
            // The full parse below reads its own payload.
            folder.set_prepared(None);
            let event =
                check_line(body, ReadMode::Lenient).map_err(|message| ReadError::BadLine {
                    path: path.to_path_buf(),
                    line: cursor.line,
                    offset: cursor.at,
                    message,
                })?;
            folder.apply_persisted(&event, len as u64);
        }
        folder.set_prepared(None);
        start += len;
        cursor.at += len as u64;
    }
    Ok(())
}

/// One line of a [`Chunk`].
struct Prepared {
    /// Bytes, `\n` included.
    len: usize,
    /// A tool result read ahead (boxed: most lines have none, and a run of tiny lines must
    /// stay small).
    tool: Option<Box<Ahead>>,
}

/// A run of complete lines: `bytes[..sum of lines' lengths]` (the rest of the buffer is spare
/// room, kept for the next read).
struct Chunk {
    bytes: Vec<u8>,
    lines: Vec<Prepared>,
}

/// What [`LineReader::next`] found.
enum Next {
    Chunk(Chunk),
    /// No more lines to fold; the offset of a torn tail, if the file ends in one.
    End(Option<u64>),
}

/// Cuts a journal into runs of complete lines that start before `end`.
struct LineReader {
    file: File,
    /// Offset of the first byte not handed out yet.
    at: u64,
    end: u64,
    /// The start of a line read past the end of the last run.
    carry: Vec<u8>,
    crc: Option<u32>,
    /// A line starting at or after `end` was reached.
    finished: bool,
    /// Deserialize tool results here, this way (for a fold on another thread).
    prepare: Option<ToolRead>,
    /// Scratch space of the JSON check.
    stack: Vec<u8>,
}

impl LineReader {
    /// The next run of lines, read into `buf` (any length; it grows for a line longer than
    /// itself, as the fold needs whole lines).
    fn next(&mut self, mut buf: Vec<u8>) -> io::Result<Next> {
        if self.finished || self.at >= self.end {
            return Ok(Next::End(None));
        }
        // A buffer grown for one long line is not kept for all the short ones after it.
        if buf.len() < READ_BYTES || (buf.len() > 4 * READ_BYTES && self.carry.len() < READ_BYTES) {
            buf = vec![0u8; READ_BYTES];
        }
        let carried = self.carry.len();
        if buf.len() < carried + READ_BYTES / 2 {
            buf.resize(carried + READ_BYTES, 0);
        }
        buf[..carried].copy_from_slice(&self.carry);
        self.carry.clear();
        let mut filled = carried;
        // `buf[..scanned]` holds no `\n`.
        let mut scanned = 0;
        let cut = loop {
            if let Some(last) = memchr::memrchr(b'\n', &buf[scanned..filled]) {
                break scanned + last + 1;
            }
            scanned = filled;
            if buf.len() - filled < READ_BYTES / 2 {
                buf.resize(buf.len() * 2, 0);
            }
            let n = loop {
                match self.file.read(&mut buf[filled..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                self.finished = true;
                return Ok(Next::End((filled > 0).then_some(self.at)));
            }
            filled += n;
        };
        // The lines, up to the first that starts at or after `end`, at most `MAX_LINES`.
        let mut lines = Vec::new();
        let mut start = 0;
        while start < cut && lines.len() < MAX_LINES {
            if self.at + start as u64 >= self.end {
                self.finished = true;
                break;
            }
            // `buf[cut - 1]` is a newline, so there is one.
            let len = memchr::memchr(b'\n', &buf[start..cut]).map_or(cut - start, |i| i + 1);
            lines.push(Prepared {
                len,
                tool: self
                    .prepare
                    .and_then(|how| {
                        prepare_line(
                            &buf[start..start + len - 1],
                            how,
                            READ_ASSISTANT_AHEAD,
                            &mut self.stack,
                        )
                    })
                    .map(Box::new),
            });
            start += len;
        }
        self.carry.extend_from_slice(&buf[start..filled]);
        if let Some(crc) = self.crc.as_mut() {
            *crc = crc32c::crc32c_append(*crc, &buf[..start]);
        }
        self.at += start as u64;
        Ok(Next::Chunk(Chunk { bytes: buf, lines }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{SynthConfig, session_bytes};
    use proptest::prelude::*;
    use turnstile_journal::{JournalReader, ReadError};

    /// What a fold of a file gives: the state, the torn tail, the CRC.
    type Outcome = (crate::SessionState, Option<u64>, u32);

    fn fold_with(path: &Path, end: u64, threads: Threads) -> Result<Outcome, ReplayError> {
        fold_how(path, end, threads, ToolRead::Lean)
    }

    /// [`fold_with`], reading tool results `how`.
    fn fold_how(
        path: &Path,
        end: u64,
        threads: Threads,
        how: ToolRead,
    ) -> Result<Outcome, ReplayError> {
        let mut folder = Folder::new();
        folder.tool_read = how;
        let mut crc = 0u32;
        let file = File::open(path).unwrap();
        let torn = fold_tail_with(path, file, &mut folder, 0, 0, end, Some(&mut crc), threads)?;
        Ok((folder.into_state(), torn, crc))
    }

    /// The journal reader's records folded one by one, up to the first line starting at or
    /// after `end`, and the CRC of those lines.
    fn reference(path: &Path, end: u64) -> Outcome {
        let mut folder = Folder::new();
        let reader = JournalReader::new(
            path,
            io::BufReader::new(File::open(path).unwrap()),
            ReadMode::Lenient,
        );
        let mut torn = None;
        for record in reader {
            match record {
                Ok(record) if folder.state().byte_size < end => folder.apply_record(&record),
                Ok(_) => break,
                Err(ReadError::TornTail { offset, .. }) => {
                    torn = (offset < end).then_some(offset);
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let bytes = std::fs::read(path).unwrap();
        let size = folder.state().byte_size as usize;
        (folder.into_state(), torn, crc32c::crc32c(&bytes[..size]))
    }

    /// A session of `mb` MiB with every `every`-th tool result breaking its schema (a string
    /// for `success`), every `every`-th line in another key order (the full parse), and
    /// optionally a huge line longer than a read buffer.
    fn journal(seed: u64, mb: u64, every: usize, huge: bool, torn: bool) -> Vec<u8> {
        let config = SynthConfig {
            seed,
            target_bytes: mb << 20,
            huge_output_bytes: huge.then_some(READ_BYTES * 3 / 2),
            ..SynthConfig::default()
        };
        let (bytes, _) = session_bytes(&config);
        let mut out = Vec::with_capacity(bytes.len() + 64);
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let tool = line.starts_with(br#"{"type":"tool.execution_complete""#);
            if i % every == 0 && tool {
                let text = String::from_utf8(line.to_vec()).unwrap();
                out.extend_from_slice(
                    text.replacen(r#""success":"#, r#""success":"0","x":"#, 1)
                        .as_bytes(),
                );
            } else if i % every == 1 {
                let value: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_slice(line).unwrap();
                let reversed: serde_json::Map<String, serde_json::Value> =
                    value.into_iter().rev().collect();
                out.extend_from_slice(&serde_json::to_vec(&reversed).unwrap());
            } else {
                out.extend_from_slice(line);
            }
            out.push(b'\n');
        }
        if torn {
            out.extend_from_slice(br#"{"type":"user.message","data":{"con"#);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10))]
        /// Two threads fold exactly what one thread folds, and both what the journal reader's
        /// records fold to: same state (warnings for broken tool results included), same torn
        /// tail, same CRC, wherever the fold is asked to stop.
        #[test]
        fn two_threads_fold_what_one_thread_and_the_reader_fold(
            seed in 0u64..1000,
            every in 3usize..40,
            huge in any::<bool>(),
            torn in any::<bool>(),
            stop in prop::option::of(0.0f64..1.0),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("events.jsonl");
            let bytes = journal(seed, 3, every, huge, torn);
            std::fs::write(&path, &bytes).unwrap();
            let end = stop.map_or(u64::MAX, |f| (bytes.len() as f64 * f) as u64);
            let one = fold_with(&path, end, Threads::One).unwrap();
            let two = fold_with(&path, end, Threads::Two).unwrap();
            let want = reference(&path, end);
            // A broken result whose whole line lies before the stop is reported.
            let marker: &[u8] = br#""success":"0","x":"#;
            let broken_before_end = bytes.windows(marker.len()).enumerate().any(|(at, w)| {
                w == marker
                    && bytes[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .is_some_and(|nl| ((at + nl) as u64) < end)
            });
            prop_assert!(one.0.malformed_events > 0 || !broken_before_end);
            prop_assert_eq!(&two, &one);
            prop_assert_eq!(&one, &want);
        }
    }

    /// A session whose tool results are edited, one in `every`, in the ways the fast reading
    /// of tool results leaves to serde (surrogate escapes, repeated and mistyped fields, an
    /// escaped key, numbers out of range, deep values) and in ways it takes (surrogate pairs,
    /// unknown keys).
    fn odd_journal(seed: u64, every: usize) -> Vec<u8> {
        let (bytes, _) = session_bytes(&SynthConfig {
            seed,
            target_bytes: 5 << 20,
            ..SynthConfig::default()
        });
        let deep = format!(
            r#""fusion":{}1{},"success":"#,
            "[".repeat(127),
            "]".repeat(127)
        );
        let edits: [(&str, &str); 10] = [
            (
                r#""content":""#,
                r#""detailedContent":"\ud800","content":""#,
            ),
            (r#""success":"#, r#""model":5,"success":"#),
            (
                r#""toolCallId":"#,
                r#""toolTelemetry":{"n":1e400},"toolCallId":"#,
            ),
            (r#""content":""#, r#""content":"\udc00"#),
            (r#""result":"#, r#""resul\u0074":"#),
            (r#""content":""#, r#""content":"\ud83d\ude80 \u00e9\/"#),
            (r#""success":"#, &deep),
            (r#""success":"#, r#""x":"\ud800","y":[1e999],"success":"#),
            (
                r#""content":""#,
                r#""contents":[{"t":"\ud800"}],"content":""#,
            ),
            (
                r#""success":"#,
                r#""shellExecution":{"exitCode":-1},"sandboxed":null,"success":"#,
            ),
        ];
        let mut out = Vec::with_capacity(bytes.len() + (1 << 16));
        let mut n = 0;
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let text = std::str::from_utf8(line).unwrap();
            if text.starts_with(r#"{"type":"tool.execution_complete""#) {
                n += 1;
                if n % every == 0 {
                    let (from, to) = edits[(n / every) % edits.len()];
                    out.extend_from_slice(text.replacen(from, to, 1).as_bytes());
                    out.push(b'\n');
                    continue;
                }
            }
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]
        /// The fast and lean reading of tool results folds exactly what the journal's payload
        /// type folds, on one thread and on two: same state (warnings word for word), same
        /// checkpoint (its bytes' CRC), same prefix CRC.
        #[test]
        fn lean_tool_results_fold_what_the_payload_type_folds(
            seed in 0u64..1000,
            every in 1usize..6,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("events.jsonl");
            let bytes = odd_journal(seed, every);
            std::fs::write(&path, &bytes).unwrap();
            let checkpoint_crc = |o: &Outcome| crc32c::crc32c(&serde_json::to_vec(&o.0).unwrap());
            let old = fold_how(&path, u64::MAX, Threads::One, ToolRead::Full).unwrap();
            prop_assert!(old.0.malformed_events > 0);
            for threads in [Threads::One, Threads::Two] {
                for how in [ToolRead::Lean, ToolRead::Full] {
                    let got = fold_how(&path, u64::MAX, threads, how).unwrap();
                    prop_assert_eq!(&got, &old, "{:?} {:?}", threads, how);
                    prop_assert_eq!(checkpoint_crc(&got), checkpoint_crc(&old));
                }
            }
            prop_assert_eq!(&reference(&path, u64::MAX), &old);
        }
    }

    /// A session with a rewind marker or a truncation after one tool result in `every`,
    /// dropping and moving results whose text the reading thread kept escaped.
    fn cut_journal(seed: u64, every: usize) -> Vec<u8> {
        let (bytes, _) = session_bytes(&SynthConfig {
            seed,
            target_bytes: 5 << 20,
            ..SynthConfig::default()
        });
        let mut out = Vec::with_capacity(bytes.len() + (1 << 16));
        let mut n = 0usize;
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            out.extend_from_slice(line);
            out.push(b'\n');
            if !line.starts_with(br#"{"type":"tool.execution_complete""#) {
                continue;
            }
            n += 1;
            if !n.is_multiple_of(every) {
                continue;
            }
            let mut event: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(line).unwrap();
            let (kind, data) = if (n / every).is_multiple_of(3) {
                (
                    "session.truncation",
                    serde_json::json!({"messagesRemovedDuringTruncation": n % 7}),
                )
            } else {
                (
                    turnstile_journal::REWIND_MARKER,
                    serde_json::json!({"upToEventId": "x", "eventsRemoved": n % 9}),
                )
            };
            event.insert("type".into(), kind.into());
            event.insert("data".into(), data);
            out.extend_from_slice(&serde_json::to_vec(&event).unwrap());
            out.push(b'\n');
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]
        /// Results kept escaped that rewinds drop and truncations move (and bring back) are
        /// unescaped where they end up: the same state and checkpoint as reading each in full.
        #[test]
        fn escaped_results_survive_rewinds_and_truncations(
            seed in 0u64..1000,
            every in 1usize..8,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("events.jsonl");
            let bytes = cut_journal(seed, every);
            std::fs::write(&path, &bytes).unwrap();
            let checkpoint_crc = |o: &Outcome| crc32c::crc32c(&serde_json::to_vec(&o.0).unwrap());
            let old = fold_how(&path, u64::MAX, Threads::One, ToolRead::Full).unwrap();
            prop_assert!(old.0.rewinds > 0 && old.0.truncations > 0);
            let got = fold_how(&path, u64::MAX, Threads::Two, ToolRead::Lean).unwrap();
            prop_assert_eq!(&got, &old);
            prop_assert_eq!(checkpoint_crc(&got), checkpoint_crc(&old));
            prop_assert_eq!(&reference(&path, u64::MAX), &old);
        }
    }

    /// A file of more tiny lines than a run holds: the runs end at the cap, not at a buffer.
    #[test]
    fn more_lines_than_a_run_holds() {
        let (bytes, _) = session_bytes(&SynthConfig {
            target_bytes: 64 << 10,
            ..SynthConfig::default()
        });
        let shortest = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .min_by_key(|l| l.len())
            .unwrap();
        let mut many = bytes.clone();
        for _ in 0..3 * MAX_LINES {
            many.extend_from_slice(shortest);
            many.push(b'\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, &many).unwrap();
        let one = fold_with(&path, u64::MAX, Threads::One).unwrap();
        let two = fold_with(&path, u64::MAX, Threads::Two).unwrap();
        assert_eq!(two, one);
        assert_eq!(one, reference(&path, u64::MAX));
        assert_eq!(one.0.byte_size, many.len() as u64);
    }

    /// Huge lines one after another (each longer than the bytes allowed out at once): folded
    /// one at a time, same result.
    #[test]
    fn huge_lines_in_a_row() {
        let (bytes, _) = session_bytes(&SynthConfig {
            target_bytes: 64 << 10,
            ..SynthConfig::default()
        });
        let line = bytes
            .split(|&b| b == b'\n')
            .map(|l| String::from_utf8(l.to_vec()).unwrap())
            .find(|l| {
                l.starts_with(r#"{"type":"tool.execution_complete""#)
                    && l.contains(r#""content":""#)
            })
            .unwrap();
        let text = line;
        let huge = text.replacen(
            r#""content":""#,
            &format!(r#""content":"{}"#, "x".repeat(MAX_BYTES_OUT + 1)),
            1,
        );
        assert!(huge.len() > MAX_BYTES_OUT);
        let mut many = bytes.clone();
        for _ in 0..3 {
            many.extend_from_slice(huge.as_bytes());
            many.push(b'\n');
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, &many).unwrap();
        let one = fold_with(&path, u64::MAX, Threads::One).unwrap();
        let two = fold_with(&path, u64::MAX, Threads::Two).unwrap();
        assert_eq!(two, one);
        assert_eq!(one.0.byte_size, many.len() as u64);
    }

    /// A damaged line far into a large file is named the same way by both (line and offset),
    /// and the reading thread stops when the fold does.
    #[test]
    fn a_bad_line_is_named_alike() {
        let mut bytes = journal(7, 3, 1000, false, false);
        let cut = bytes.len() * 2 / 3;
        let at = cut + memchr::memchr(b'\n', &bytes[cut..]).unwrap() + 1;
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        bytes.splice(at..at, b"{not json\n".iter().copied());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        for threads in [Threads::One, Threads::Two] {
            match fold_with(&path, u64::MAX, threads) {
                Err(ReplayError::Read(ReadError::BadLine {
                    line: l, offset, ..
                })) => {
                    assert_eq!((l, offset), (line, at as u64), "{threads:?}");
                }
                other => panic!("{threads:?}: {:?}", other.map(|o| o.0.event_count)),
            }
        }
    }
}
