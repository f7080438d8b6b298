//! Reading a journal in fixed-size chunks, on several threads, handing results over in order.
//!
//! Chunk `k` covers the bytes `[k*C, (k+1)*C)` and owns every line that *starts* there: it
//! skips the piece of line before its first `\n` (the previous chunk owns it) and reads past its
//! end to finish its last line. Workers take chunks round-robin (worker `w` does `w`, `w+T`, ...)
//! and hand each result over a bounded channel; the caller takes them in chunk order. So the
//! order-dependent checks run once, sequentially, over lines in file order (exact by
//! construction), while the expensive part (validating every byte) runs on every core, and
//! memory stays bounded: per worker one chunk buffer, `results_in_flight` results waiting and
//! one being built.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::error::ReplayError;
use crate::raw::utf8;

/// How a scan reads the file.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Worker threads; 0 means one per available core.
    pub threads: usize,
    /// Bytes per chunk.
    pub chunk_bytes: u64,
    /// Longest line held in memory; longer lines are parsed as a stream from the file.
    pub max_line_in_memory: usize,
    /// Most lines a worker hands over at once; a chunk of more (tiny or blank lines) goes in
    /// pieces, so memory does not depend on how lines are spread over the file.
    pub lines_per_piece: usize,
    /// Results a worker may have waiting for the ordered checks (at least 1). More lets
    /// workers run on while the thread doing the ordered checks is off the CPU, at the cost of
    /// a result's memory each.
    pub results_in_flight: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            threads: 0,
            chunk_bytes: 1 << 20,
            max_line_in_memory: 8 << 20,
            // Sixteen results of 1,024 lines: workers run on through a time slice without
            // the ordered checks' thread (a busy machine), and a worker's results hold no more
            // lines than three of 8,192 did.
            lines_per_piece: 1024,
            results_in_flight: 16,
        }
    }
}

impl ScanOptions {
    /// One thread, same chunking (the reference the parallel scan must equal).
    pub fn single_threaded() -> Self {
        ScanOptions {
            threads: 1,
            ..ScanOptions::default()
        }
    }

    fn worker_count(&self, chunks: u64) -> usize {
        let wanted = if self.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.threads
        };
        wanted.clamp(1, usize::try_from(chunks).unwrap_or(usize::MAX).max(1))
    }
}

/// Bytes read first when a line runs past its chunk (most lines end within it); each further
/// read doubles, up to [`EXTEND_MAX`].
const EXTEND_FIRST: u64 = 16 << 10;
/// Largest read when a line runs past its chunk.
const EXTEND_MAX: u64 = 1 << 20;

/// The file being scanned.
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) size: u64,
    chunk: u64,
    pub(crate) max_line: usize,
}

impl Source {
    /// Opens `path`; the size is taken now (bytes appended later are not scanned).
    pub(crate) fn open(path: &Path, options: &ScanOptions) -> Result<Self, ReplayError> {
        let file = File::open(path).map_err(|e| ReplayError::io(path, e))?;
        let meta = file.metadata().map_err(|e| ReplayError::io(path, e))?;
        if meta.is_dir() {
            return Err(ReplayError::io(
                path,
                io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, not an events.jsonl file",
                ),
            ));
        }
        Ok(Source {
            path: path.to_path_buf(),
            file,
            size: meta.len(),
            chunk: options.chunk_bytes.max(1),
            max_line: options.max_line_in_memory.max(1),
        })
    }

    fn chunks(&self) -> u64 {
        self.size.div_ceil(self.chunk)
    }
}

/// What a scan does with the lines of one chunk.
pub(crate) trait LineSink {
    /// A line runs past the bytes in memory (`prefix` is its start); true to have it read whole.
    fn wants_whole(&mut self, prefix: &[u8]) -> bool;
    /// A complete line without its `\n`; `terminated` is false for a last line without one.
    /// `utf8_valid` is true when the line is already known to be valid UTF-8.
    fn line(&mut self, offset: u64, line: &[u8], terminated: bool, utf8_valid: bool);
    /// A line longer than the in-memory limit, starting at `offset`.
    fn giant(&mut self, source: &Source, offset: u64) -> io::Result<()>;
    /// Empties the sink for another chunk, keeping its allocations.
    fn reset(&mut self);
    /// The sink holds as much as it should: hand it over before the chunk's next line, so a
    /// chunk of millions of tiny lines costs bounded memory. Never true for sinks that keep
    /// nothing per line.
    fn is_full(&self) -> bool {
        false
    }
}

/// Reads `[from, to)` of the file into `buf[at..]`; returns the new filled length. The buffer
/// only grows (zeroing happens once, not per chunk).
fn read_into(file: &File, from: u64, to: u64, buf: &mut Vec<u8>, at: usize) -> io::Result<usize> {
    let len = usize::try_from(to - from).map_err(io::Error::other)?;
    if buf.len() < at + len {
        buf.resize(at + len, 0);
    }
    file.read_exact_at(&mut buf[at..at + len], from)?;
    Ok(at + len)
}

/// Feeds the lines that start in chunk `k` to `sink`; `buf` is reused between chunks. When the
/// sink is full, `flush(sink, offset)` hands its lines so far over (everything before
/// `offset`) and leaves it empty; it returns false when nobody takes them any more.
pub(crate) fn visit_chunk<S: LineSink>(
    source: &Source,
    k: u64,
    buf: &mut Vec<u8>,
    sink: &mut S,
    flush: &mut impl FnMut(&mut S, u64) -> bool,
) -> io::Result<()> {
    let lo = k * source.chunk;
    if lo >= source.size {
        return Ok(());
    }
    let hi = (lo + source.chunk).min(source.size);
    // One byte before the chunk tells whether a line starts right at `lo`.
    let from = lo.saturating_sub(1);
    let mut filled = read_into(&source.file, from, hi, buf, 0)?;
    let mut pos = if lo == 0 {
        0
    } else {
        match memchr::memchr(b'\n', &buf[..filled]) {
            Some(p) => p + 1,
            None => return Ok(()),
        }
    };
    // One UTF-8 check for all the chunk's lines: a valid buffer cut at `\n` (ASCII) gives valid
    // lines, so lines need their own check only when this fails (a damaged journal).
    let chunk_utf8 = utf8::is_valid(&buf[pos..filled]);
    while from + (pos as u64) < hi {
        let offset = from + pos as u64;
        if sink.is_full() && !flush(sink, offset) {
            return Ok(());
        }
        if let Some(rel) = memchr::memchr(b'\n', &buf[pos..filled]) {
            sink.line(offset, &buf[pos..pos + rel], true, chunk_utf8);
            pos += rel + 1;
            continue;
        }
        // The last line owned by this chunk runs past it (or is the file's unterminated end).
        if !sink.wants_whole(&buf[pos..filled]) {
            break;
        }
        buf.copy_within(pos..filled, 0);
        filled -= pos;
        let mut file_pos = offset + filled as u64;
        let mut step = EXTEND_FIRST;
        loop {
            if filled > source.max_line {
                sink.giant(source, offset)?;
                break;
            }
            if file_pos >= source.size {
                sink.line(offset, &buf[..filled], false, false);
                break;
            }
            let want = step.min(source.size - file_pos);
            step = (step * 2).min(EXTEND_MAX);
            let old = filled;
            filled = read_into(&source.file, file_pos, file_pos + want, buf, filled)?;
            file_pos += want;
            if let Some(rel) = memchr::memchr(b'\n', &buf[old..filled]) {
                sink.line(offset, &buf[..old + rel], true, false);
                break;
            }
        }
        break;
    }
    Ok(())
}

/// Runs the sinks `make_sink()` gives over every chunk on worker threads and hands each filled
/// sink to `consume(&mut sink, bytes_done)` in chunk order. Consumed sinks go back to their
/// worker to be reused, so buffers are allocated once per worker, not once per chunk. Stops at
/// the first error.
pub(crate) fn run<S, M, C>(
    source: &Source,
    options: &ScanOptions,
    make_sink: M,
    mut consume: C,
) -> Result<(), ReplayError>
where
    S: LineSink + Send,
    M: Fn() -> S + Sync,
    C: FnMut(&mut S, u64),
{
    let chunks = source.chunks();
    let workers = options.worker_count(chunks);
    let done = |k: u64| ((k + 1) * source.chunk).min(source.size);
    let io_error = |e: io::Error| ReplayError::io(&source.path, e);
    if workers <= 1 {
        let mut buf = Vec::new();
        let mut sink = make_sink();
        for k in 0..chunks {
            sink.reset();
            let mut flush = |sink: &mut S, offset: u64| {
                consume(sink, offset);
                sink.reset();
                true
            };
            visit_chunk(source, k, &mut buf, &mut sink, &mut flush).map_err(io_error)?;
            consume(&mut sink, done(k));
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(workers);
        let mut returns = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for w in 0..workers {
            // A chunk arrives as one or more pieces, the last marked `true`.
            let (tx, rx) =
                mpsc::sync_channel::<io::Result<(S, bool)>>(options.results_in_flight.max(1));
            let (back_tx, back_rx) = mpsc::channel::<S>();
            receivers.push(rx);
            returns.push(back_tx);
            let make_sink = &make_sink;
            handles.push(scope.spawn(move || {
                let mut buf = Vec::new();
                let mut k = w as u64;
                let fresh = || {
                    let mut sink = back_rx.try_recv().unwrap_or_else(|_| make_sink());
                    sink.reset();
                    sink
                };
                while k < chunks {
                    let mut sink = fresh();
                    let mut flush = |sink: &mut S, _offset: u64| {
                        let full = std::mem::replace(sink, fresh());
                        tx.send(Ok((full, false))).is_ok()
                    };
                    let result = visit_chunk(source, k, &mut buf, &mut sink, &mut flush)
                        .map(|()| (sink, true));
                    let failed = result.is_err();
                    // A closed channel means the consumer stopped: nothing more to do.
                    if tx.send(result).is_err() || failed {
                        return;
                    }
                    k += workers as u64;
                }
            }));
        }
        let mut outcome = Ok(());
        let mut k = 0;
        while k < chunks {
            let w = usize::try_from(k % workers as u64).unwrap_or(0);
            match receivers[w].recv() {
                Ok(Ok((mut sink, last))) => {
                    consume(&mut sink, done(k));
                    // The worker may have finished already; then the sink is simply dropped.
                    let _ = returns[w].send(sink);
                    if last {
                        k += 1;
                    }
                }
                Ok(Err(e)) => {
                    outcome = Err(io_error(e));
                    break;
                }
                Err(_) => {
                    outcome = Err(ReplayError::Worker {
                        path: source.path.clone(),
                        message: format!("worker {w} stopped before chunk {k}"),
                    });
                    break;
                }
            }
        }
        // Unblock workers waiting to send, then collect them (a panic becomes an error).
        drop(receivers);
        drop(returns);
        for handle in handles {
            if let Err(panic) = handle.join() {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "panic".to_owned());
                if outcome.is_ok() {
                    outcome = Err(ReplayError::Worker {
                        path: source.path.clone(),
                        message,
                    });
                }
            }
        }
        outcome
    })
}
