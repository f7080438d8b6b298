//! The index file: where it is, the records writers append, reading it back (the last
//! record of each id), and the compacted rewrite a listing makes.

use std::collections::{HashMap, HashSet};
use std::fs::{File, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::record::{IndexRecord, MAX_RECORD};

/// Name of the index file in the state root.
pub const INDEX_FILE: &str = "turnstile-index.jsonl";

/// Where the index of the sessions under `root` is: beside a Copilot home's `session-state/`
/// (`$COPILOT_HOME/turnstile-index.jsonl`), so that nothing but sessions is in that folder
/// for the tools that read it; inside any other state directory (`--state-dir`), which is
/// turnstile's alone.
pub fn index_path(root: &Path) -> PathBuf {
    match root.parent() {
        Some(home) if root.file_name().is_some_and(|n| n == "session-state") => {
            home.join(INDEX_FILE)
        }
        _ => root.join(INDEX_FILE),
    }
}

/// Moves an index an earlier version left in `session-state/` beside it (or removes it when
/// one is there already: the index is only an optimisation). One `lstat` when there is none.
pub(super) fn migrate(root: &Path) {
    let old = root.join(INDEX_FILE);
    let new = index_path(root);
    if old == new || std::fs::symlink_metadata(&old).is_err() {
        return;
    }
    let moved = if std::fs::symlink_metadata(&new).is_err() {
        std::fs::rename(&old, &new)
    } else {
        std::fs::remove_file(&old)
    };
    if let Err(e) = moved {
        tracing::debug!(old = %old.display(), error = %e, "the old session index was not moved");
    }
}

pub(super) fn open_index(root: &Path, write: bool) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    if write {
        options.append(true).create(true).mode(0o600);
    } else {
        options.read(true);
    }
    options
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC).bits() as i32)
        .open(index_path(root))
}

/// Appends one record; never waits (skipped while a rewrite holds the index, and on any error:
/// the next listing reads that journal instead).
pub fn append(root: &Path, record: &IndexRecord) {
    let Some(line) = record.line() else {
        return;
    };
    if let Err(e) = try_append(root, &line) {
        tracing::debug!(root = %root.display(), error = %e, "session index not updated");
    }
}

fn try_append(root: &Path, line: &[u8]) -> io::Result<()> {
    migrate(root);
    for _ in 0..2 {
        let mut file = open_index(root, true)?;
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(()),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        // A rewrite renamed a new file into place after we opened: append to that one.
        let current = std::fs::symlink_metadata(index_path(root))?;
        if current.ino() != file.metadata()?.ino() {
            continue;
        }
        // One write(2) of the whole record: O_APPEND keeps concurrent records whole.
        let n = file.write(line)?;
        if n != line.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "short write"));
        }
        return Ok(());
    }
    Ok(())
}

/// What was read from the index file.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    /// The last record of each id, in id order once [`Loaded::finish`] ran.
    pub(super) records: Vec<IndexRecord>,
    /// How many leading `records` are already in id order without duplicates.
    sorted: usize,
    pub(super) lines: u64,
    pub(super) bad: u64,
    pub(super) end: u64,
}

impl Loaded {
    fn push(&mut self, rec: IndexRecord) {
        if self.sorted == self.records.len()
            && self.records.last().is_none_or(|last| last.id < rec.id)
        {
            self.sorted += 1;
        }
        self.records.push(rec);
        // Bounded memory: superseded records are dropped as they pile up, so the records
        // held stay within twice the distinct ids of the index.
        if self.records.len() > 2 * self.sorted.max(1024) {
            self.finish();
        }
    }

    /// Orders the records by id and keeps only the last one of each (a rewrite writes them
    /// in id order, so a warm index is usually in order already and this costs one pass).
    fn finish(&mut self) {
        if self.sorted < self.records.len() {
            // Stable: of equal ids the file's order stays, and the last one is the newest.
            self.records.sort_by_key(|r| r.id);
            self.records.reverse();
            self.records.dedup_by_key(|r| r.id);
            self.records.reverse();
        }
        self.sorted = self.records.len();
    }
}

/// Reads records from `input` (from byte `start`), keeping the last one of each id.
pub(super) fn read_records(input: impl Read, start: u64, into: &mut Loaded) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::with_capacity(512);
    let mut offset = start;
    let mut line_bytes = 0u64;
    let mut overlong = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        // Whole lines inside the buffer are parsed where they lie; only a line cut by the
        // buffer's end is gathered in `line`.
        let mut pos = 0;
        while line.is_empty() && !overlong {
            let Some(i) = memchr::memchr(b'\n', &buf[pos..]) else {
                break;
            };
            let whole = &buf[pos..pos + i + 1];
            pos += i + 1;
            offset += whole.len() as u64;
            into.lines += 1;
            parse_line(whole, whole.len() <= MAX_RECORD + 1, into);
        }
        let rest = &buf[pos..];
        if rest.is_empty() {
            let n = buf.len();
            reader.consume(n);
            continue;
        }
        let (take, complete) = match memchr::memchr(b'\n', rest) {
            Some(i) => (i + 1, true),
            None => (rest.len(), false),
        };
        // Bounded memory: a line longer than any record is skipped, not buffered.
        if !overlong && line.len() + take <= MAX_RECORD + 1 {
            line.extend_from_slice(&rest[..take]);
        } else {
            overlong = true;
            line.clear();
        }
        reader.consume(pos + take);
        line_bytes += take as u64;
        if !complete {
            continue;
        }
        offset += line_bytes;
        line_bytes = 0;
        into.lines += 1;
        parse_line(&line, !overlong, into);
        line.clear();
        overlong = false;
    }
    into.finish();
    // A torn last record (no newline) is not counted as read: a rewrite looks at it again.
    into.end = offset;
    Ok(())
}

fn parse_line(line: &[u8], fits: bool, into: &mut Loaded) {
    match fits.then(|| super::parse::parse_line(line)).flatten() {
        Some(rec) => into.push(rec),
        None => into.bad += 1,
    }
}

/// Replaces the index by `records` plus whatever writers appended after byte `seen`, under
/// the exclusive lock; returns false when a writer holds the lock (try again next time).
pub(super) fn rewrite(
    root: &Path,
    mut records: HashMap<Uuid, IndexRecord>,
    wanted: &HashSet<Uuid>,
    seen: u64,
) -> io::Result<bool> {
    let lock = open_index(root, true)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(false),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    // Records appended since the listing read the file are newer than anything it knows.
    let mut reader = open_index(root, false)?;
    if reader.metadata()?.ino() != lock.metadata()?.ino() {
        return Ok(false);
    }
    reader.seek(SeekFrom::Start(seen))?;
    let mut late = Loaded::default();
    read_records(&mut reader, seen, &mut late)?;
    records.extend(
        late.records
            .into_iter()
            .filter(|r| wanted.contains(&r.id))
            .map(|r| (r.id, r)),
    );
    let mut ids: Vec<&Uuid> = records.keys().collect();
    ids.sort();
    // Not durable: a lost or torn index costs a slower listing, never a wrong one.
    turnstile_home::AtomicWrite::new(&index_path(root))
        .mode(0o600)
        .durable(false)
        .write(|out| {
            for id in ids {
                if let Some(line) = records[id].line() {
                    out.write_all(&line)?;
                }
            }
            Ok(())
        })?;
    // Dropping `lock` releases it; appenders then see the new inode and reopen.
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::record::tests::record;

    #[test]
    fn records_round_trip_and_garbage_is_counted_not_kept() {
        let (a, b) = (record(1), record(2));
        let mut text = a.line().unwrap();
        text.extend_from_slice(b"not json\n");
        text.extend_from_slice(&vec![b'x'; MAX_RECORD * 3]);
        text.push(b'\n');
        text.extend_from_slice(&b.line().unwrap());
        let torn = record(3).line().unwrap();
        text.extend_from_slice(&torn[..torn.len() / 2]);
        let mut loaded = Loaded::default();
        read_records(&text[..], 0, &mut loaded).unwrap();
        assert_eq!(loaded.records, vec![a, b]);
        assert_eq!((loaded.lines, loaded.bad), (4, 2));
        assert_eq!(loaded.end, (text.len() - torn.len() / 2) as u64);
    }

    #[test]
    fn the_last_record_of_an_id_wins_in_any_order_and_across_buffers() {
        // More records than one read buffer holds and than `Loaded` keeps before it drops
        // superseded ones: ids 0..3000 in reverse, then every third again with `events` 99.
        let mut text = Vec::new();
        for n in (0..3000u128).rev() {
            text.extend_from_slice(&record(n).line().unwrap());
        }
        for n in (0..3000u128).step_by(3) {
            let mut r = record(n);
            r.events = 99;
            text.extend_from_slice(&r.line().unwrap());
        }
        let mut loaded = Loaded::default();
        read_records(&text[..], 0, &mut loaded).unwrap();
        assert_eq!(loaded.records.len(), 3000);
        for (n, r) in loaded.records.iter().enumerate() {
            assert_eq!(r.id, Uuid::from_u128(n as u128));
            assert_eq!(r.events, if n % 3 == 0 { 99 } else { 4 }, "record {n}");
        }
        assert_eq!(
            (loaded.lines, loaded.bad, loaded.end),
            (4000, 0, text.len() as u64)
        );
    }
}
