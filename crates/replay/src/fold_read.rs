//! Reading a journal's lines into a [`Folder`]: large reads, no copy of a line that fits the
//! read buffer, and the audit's one-pass SIMD check for lines in the standard layout (the
//! journal reader's full parse only for the others).
//!
//! Validity is the journal reader's: a line the fast check does not accept goes through
//! [`check_line`], which accepts or names the damage, so the fold accepts exactly the lines it
//! accepted before (the audit's property tests prove the fast check agrees with it).
//!
//! On a large journal the work is split over two threads: one reads, cuts the bytes into runs
//! of complete lines, extends the CRC over them, checks the standard-layout lines' `data` and
//! reads the tool results (three quarters of a journal's bytes; their texts kept escaped, see
//! `fold/escaped.rs`), and frees the tool results' texts compactions dropped; the other folds
//! the runs in file order. A small journal is cut by the same [`LineReader`] on the calling
//! thread, which then deserializes a tool result only when the fold needs it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc;

use turnstile_journal::ReadError;
use turnstile_journal::reader::{ReadMode, check_line};

use crate::error::ReplayError;
use crate::fold::{Ahead, Folder, ToolRead, prepare_line};
use crate::fold_tool_fast::Member;

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
        line,
        max_line: turnstile_journal::max_line_bytes(),
        end,
        carry: Vec::new(),
        crc: crc.as_deref().copied(),
        finished: false,
        // Alone, the fold deserializes a result only when it needs it (not a sub-agent's).
        prepare: two.then_some(folder.tool_read),
        stack: Vec::new(),
        inner: Vec::new(),
        read_assistant: READ_ASSISTANT_AHEAD,
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
    let mut spare = Spare::default();
    loop {
        match reader.next(spare).map_err(|e| ReplayError::io(path, e))? {
            Next::Chunk(chunk) => spare = fold_chunk(path, folder, chunk, cursor)?,
            Next::End(torn) => return Ok((torn, reader.crc)),
            Next::Oversized(long) => return Err(long.error(path)),
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
        // Folded buffers go back to the reader: each is zeroed once, not once per run, and
        // the lists of a run are neither grown again nor freed on the other thread (a free
        // of another thread's allocation takes its malloc arena's lock, which the reader then
        // waits for: measured, about a tenth of the fold's time). With them go the tool
        // results' texts of the messages compactions dropped, freed there: they were allocated
        // there, and freeing them is most of what a compaction costs.
        let (recycle, recycled) = mpsc::channel::<(Spare, Vec<String>)>();
        folder.keep_dropped();
        let worker = scope.spawn(move || {
            let mut pool = Vec::new();
            // Bytes of the buffers handed out and not back yet.
            let mut out = 0usize;
            loop {
                while let Ok((spare, dropped)) = recycled.try_recv() {
                    out -= spare.bytes.len();
                    pool.push(spare);
                    drop(dropped);
                }
                // Runs of huge lines: wait until the folder is done with the earlier ones, so
                // memory follows the longest line, not the number of runs in flight.
                while out > MAX_BYTES_OUT {
                    let Ok((spare, dropped)) = recycled.recv() else {
                        return reader.crc;
                    };
                    out -= spare.bytes.len();
                    pool.push(spare);
                    drop(dropped);
                }
                let next = reader.next(pool.pop().unwrap_or_default());
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
                    let spare = fold_chunk(path, folder, chunk, cursor)?;
                    // The reader may have ended already; then all is simply freed here.
                    let _ = recycle.send((spare, folder.take_dropped()));
                }
                Next::End(torn) => break torn,
                Next::Oversized(long) => return Err(long.error(path)),
            }
        };
        let crc = match worker.join() {
            Ok(crc) => crc,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok((torn, crc))
    })
}

/// Folds the complete lines of `bytes` (lengths in `lines`, `\n` included); returns the
/// chunk's buffer and lists for the next read.
fn fold_chunk(
    path: &Path,
    folder: &mut Folder,
    chunk: Chunk,
    cursor: &mut Cursor,
) -> Result<Spare, ReplayError> {
    let Chunk {
        bytes,
        mut lines,
        members,
    } = chunk;
    let mut start = 0;
    for prepared in lines.drain(..) {
        let len = prepared.len;
        let body = &bytes[start..start + len - 1];
        cursor.line += 1;
        let applied = match prepared.ahead {
            Some(Ahead::Scanned(scanned)) => {
                folder.apply_scanned_line(body, len as u64, scanned, &members)
            }
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
    Ok(Spare {
        bytes,
        lines,
        members,
    })
}

/// A folded chunk's buffer and lists, kept for the next read, which empties the lists and
/// reuses their room.
#[derive(Default)]
struct Spare {
    bytes: Vec<u8>,
    lines: Vec<Prepared>,
    members: Vec<Member>,
}

/// One line of a [`Chunk`].
struct Prepared {
    /// Bytes, `\n` included.
    len: usize,
    /// The line read ahead, on the reading thread.
    ahead: Option<Ahead>,
}

/// A run of complete lines: `bytes[..sum of lines' lengths]` (the rest of the buffer is spare
/// room, kept for the next read).
struct Chunk {
    bytes: Vec<u8>,
    lines: Vec<Prepared>,
    /// The members of the lines' `data` read ahead (see [`prepare_line`]).
    members: Vec<Member>,
}

/// What [`LineReader::next`] found.
enum Next {
    Chunk(Chunk),
    /// No more lines to fold; the offset of a torn tail, if the file ends in one.
    End(Option<u64>),
    /// The next line is complete and longer than the limit: the fold stops before it.
    Oversized(LongLine),
}

/// A complete line longer than the readers' limit, measured, not held.
struct LongLine {
    line: u64,
    offset: u64,
    len: u64,
    max: usize,
}

impl LongLine {
    fn error(&self, path: &Path) -> ReplayError {
        ReplayError::Oversized {
            path: path.to_path_buf(),
            line: self.line,
            offset: self.offset,
            len: self.len,
            max: self.max,
        }
    }
}

/// Cuts a journal into runs of complete lines that start before `end`.
struct LineReader {
    file: File,
    /// Offset of the first byte not handed out yet.
    at: u64,
    /// Lines handed out so far (the number of the line before `at`).
    line: u64,
    /// The longest line held ([`turnstile_journal::max_line_bytes`]).
    max_line: usize,
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
    /// Scratch space for the members of a tool result's `result`.
    inner: Vec<Member>,
    /// Deserialize `assistant.message` payloads here too ([`READ_ASSISTANT_AHEAD`]).
    read_assistant: bool,
}

impl LineReader {
    /// The next run of lines, read into `spare`'s buffer (any length; it grows for a line
    /// longer than itself, as the fold needs whole lines) and listed in its lists.
    fn next(&mut self, spare: Spare) -> io::Result<Next> {
        let Spare {
            bytes: mut buf,
            mut lines,
            mut members,
        } = spare;
        lines.clear();
        members.clear();
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
            // No `\n` in the buffer: it holds the start of one line, which the journal's
            // readers never hold beyond their limit (the scan at open calls it damage). The
            // rest of it is measured through the buffer's first piece, never held; an end of
            // file before its `\n` makes it a torn tail, left out like a short one.
            if filled > self.max_line {
                return self.measure_long(buf, filled);
            }
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
                ahead: self.prepare.and_then(|how| {
                    prepare_line(
                        &buf[start..start + len - 1],
                        how,
                        self.read_assistant,
                        &mut members,
                        &mut self.stack,
                        &mut self.inner,
                    )
                }),
            });
            start += len;
            self.line += 1;
        }
        self.carry.extend_from_slice(&buf[start..filled]);
        if let Some(crc) = self.crc.as_mut() {
            *crc = crc32c::crc32c_append(*crc, &buf[..start]);
        }
        self.at += start as u64;
        Ok(Next::Chunk(Chunk {
            bytes: buf,
            lines,
            members,
        }))
    }
}

impl LineReader {
    /// The line at `self.at`, whose first `filled` bytes (no `\n`) are in `buf`: reads on to
    /// its end through `buf`'s first [`READ_BYTES`] without keeping anything.
    fn measure_long(&mut self, mut buf: Vec<u8>, filled: usize) -> io::Result<Next> {
        let mut len = filled as u64;
        buf.truncate(READ_BYTES);
        buf.shrink_to_fit();
        self.finished = true;
        loop {
            let n = match self.file.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Ok(Next::End(Some(self.at)));
            }
            if let Some(at) = memchr::memchr(b'\n', &buf[..n]) {
                return Ok(Next::Oversized(LongLine {
                    line: self.line + 1,
                    offset: self.at,
                    len: len + at as u64 + 1,
                    max: self.max_line,
                }));
            }
            len += n as u64;
        }
    }
}

#[cfg(test)]
mod tests;
