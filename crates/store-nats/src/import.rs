//! The pieces of `import` into the JetStream store (`NatsStore::import_from`), in bounded
//! memory. The journal offered is first copied
//! into a scratch working copy by the file store, which checks it (whole valid lines, none
//! longer than the readers' limit, measured and never held) and which nothing else writes;
//! the lines are published from that copy one at a time with at most [`IN_FLIGHT_BYTES`]
//! unacknowledged; the subject is then read back against the copy, a stored line at a time;
//! the index entry and checkpoint come from the same copy.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use turnstile_journal::{BoundedLines, Event, JournalSink, StateRoot, Uuid, max_line_bytes};
use turnstile_store::journal_stream::{Compared, PIECE_BYTES, SameBytes};
use turnstile_store::{FileStore, JournalStore, StoreError};

use crate::sink::NatsSink;

/// Bytes of lines handed to the publisher and not yet acknowledged, at most (one longer line
/// still goes alone): the publisher's queue never holds more of the journal than this.
const IN_FLIGHT_BYTES: u64 = 8 << 20;

/// Why publishing the copy stopped.
pub(crate) enum PublishError {
    /// Reading the copy.
    Store(StoreError),
    /// The publisher.
    Sink(turnstile_journal::SinkError),
}

/// The journal `journal` gives, copied and checked by the file store into a scratch state
/// root (see the module doc): the directory (removed when dropped), the root, the copy's path
/// and its length.
pub(crate) async fn scratch_copy<R: Read + Seek + Send>(
    id: Uuid,
    journal: &mut R,
) -> Result<(tempfile::TempDir, StateRoot, PathBuf, u64), StoreError> {
    let scratch = tempfile::tempdir().map_err(|source| StoreError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let root = StateRoot::new(scratch.path());
    FileStore::new(root.clone())
        .import_from(id, journal)
        .await?;
    let copy = root.session(id).events;
    let len = std::fs::metadata(&copy)
        .map_err(|source| StoreError::Io {
            path: copy.clone(),
            source,
        })?
        .len();
    Ok((scratch, root, copy, len))
}

/// Hands the seal records `seal` (whole lines; a torn last one is left out) to the publisher
/// after the journal's lines.
pub(crate) fn publish_seal(sink: &NatsSink, seal: &[u8]) -> Result<(), PublishError> {
    for record in seal.split_inclusive(|&b| b == b'\n') {
        if record.ends_with(b"\n") {
            sink.seal(record).map_err(PublishError::Sink)?;
        }
    }
    Ok(())
}

/// A comparison of stored lines with the copy at `path` ([`SameBytes`]).
pub(crate) fn compare_with(path: &Path) -> Result<SameBytes<BufReader<File>>, StoreError> {
    open(path).map(SameBytes::new)
}

/// The verdict of [`compare_with`].
pub(crate) fn compared(
    same: SameBytes<BufReader<File>>,
    path: &Path,
) -> Result<Compared, StoreError> {
    same.finish().map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn open(path: &Path) -> Result<BufReader<File>, StoreError> {
    File::open(path)
        .map(|file| BufReader::with_capacity(PIECE_BYTES, file))
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Hands every line of the checked copy at `path` to `sink`, waiting for acknowledgements
/// whenever more than [`IN_FLIGHT_BYTES`] are out; returns the number of lines.
pub(crate) fn publish(sink: &NatsSink, path: &Path, id: Uuid) -> Result<u64, PublishError> {
    let io = |source| {
        PublishError::Store(StoreError::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut lines = BoundedLines::new(open(path).map_err(PublishError::Store)?, max_line_bytes());
    let mut seq = 0;
    let mut in_flight = VecDeque::new();
    let mut out = 0u64;
    while let Some(info) = lines.next_line().map_err(io)? {
        if info.oversized || !info.terminated {
            // The copy was checked whole; the limit is read once per process.
            return Err(PublishError::Store(StoreError::OversizedLine {
                origin: format!("the journal of {id}"),
                line: info.line,
                offset: info.offset,
                len: info.len,
                max: max_line_bytes() as u64,
            }));
        }
        seq += 1;
        let line = lines.bytes();
        let event_id = Event::from_line(line.trim_ascii_end())
            .map(|e| e.id)
            .unwrap_or_else(|_| Uuid::new_v4());
        sink.send(seq, event_id, line).map_err(PublishError::Sink)?;
        in_flight.push_back((seq, info.len));
        out += info.len;
        while out > IN_FLIGHT_BYTES && in_flight.len() > 1 {
            let Some((oldest, len)) = in_flight.pop_front() else {
                break;
            };
            sink.wait(oldest).map_err(PublishError::Sink)?;
            out -= len;
        }
    }
    Ok(seq)
}
