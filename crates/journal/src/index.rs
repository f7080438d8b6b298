//! The session index: `<root>/turnstile-index.jsonl`, one JSON record per session update,
//! so that listing sessions (and finding the newest) does not read every journal.
//!
//! The index is only an optimisation; the journals are the truth. A record names the journal's
//! identity when it was taken (inode, size, mtime in ns); a listing uses it only while the
//! journal still has exactly that identity, and reads the journal otherwise. Sessions without
//! a record are found by listing the root, records of sessions that are gone are dropped, and
//! torn or garbled lines (a crash, a full disk) are skipped.
//!
//! Writers (`JournalWriter`, at open, after the fsync of a turn end, at close) append whole
//! records with one `O_APPEND` write each, under a shared `flock` of the index file, without
//! an fsync. A listing that found anything stale, missing or superseded rewrites the index
//! compacted (temporary file + rename) under the exclusive `flock`, taking in records
//! appended meanwhile, so no writer's record is lost and writers never wait.

use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::layout::{EVENTS_FILE, LayoutError, StateRoot, parse_session_id};
use crate::summary::SessionSummary;

/// Name of the index file in the state root.
pub const INDEX_FILE: &str = "turnstile-index.jsonl";
/// Longest record written or read; longer lines are skipped (a cwd near PATH_MAX is not indexed).
const MAX_RECORD: usize = 4096;
/// The index is rewritten when it holds more than this many lines per live session (+ slack).
const SUPERSEDED_FACTOR: u64 = 4;

/// Which version of a journal a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalId {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

impl JournalId {
    /// The identity of a journal from its metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        JournalId {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
        }
    }
}

/// One line of the index: a session's listing facts and the journal version they describe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndexRecord {
    /// The session id.
    pub id: Uuid,
    /// The journal version.
    pub journal: JournalId,
    /// Complete lines in the journal.
    pub events: u64,
    /// Timestamp of the first event.
    pub created: Option<String>,
    /// Timestamp of the last complete event.
    pub updated: Option<String>,
    /// Working directory from `session.start`.
    pub cwd: Option<String>,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
}

impl IndexRecord {
    /// The record of a summary read from (or kept in step with) the journal version `journal`.
    pub fn new(id: Uuid, journal: JournalId, s: &SessionSummary) -> Self {
        IndexRecord {
            id,
            journal,
            events: s.events,
            created: s.created.clone(),
            updated: s.updated.clone(),
            cwd: s.cwd.clone(),
            first_prompt: s.first_prompt.clone(),
        }
    }

    /// The summary this record stands for.
    pub fn into_summary(self) -> SessionSummary {
        SessionSummary {
            id: Some(self.id),
            cwd: self.cwd,
            created: self.created,
            updated: self.updated,
            events: self.events,
            size: self.journal.size,
            first_prompt: self.first_prompt,
        }
    }

    fn line(&self) -> Option<Vec<u8>> {
        let mut line = serde_json::to_vec(self).ok()?;
        line.push(b'\n');
        (line.len() <= MAX_RECORD).then_some(line)
    }
}

fn index_path(root: &Path) -> PathBuf {
    root.join(INDEX_FILE)
}

fn open_index(root: &Path, write: bool) -> io::Result<File> {
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
struct Loaded {
    records: HashMap<Uuid, IndexRecord>,
    lines: u64,
    bad: u64,
    end: u64,
}

/// Reads records from `input` (from byte `start`), keeping the last one of each id in `wanted`.
fn read_records(
    input: impl Read,
    start: u64,
    wanted: &HashMap<Uuid, usize>,
    into: &mut Loaded,
) -> io::Result<()> {
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
        let (take, complete) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        // Bounded memory: a line longer than any record is skipped, not buffered.
        if !overlong && line.len() + take <= MAX_RECORD + 1 {
            line.extend_from_slice(&buf[..take]);
        } else {
            overlong = true;
            line.clear();
        }
        reader.consume(take);
        line_bytes += take as u64;
        if !complete {
            continue;
        }
        offset += line_bytes;
        line_bytes = 0;
        into.lines += 1;
        match serde_json::from_slice::<IndexRecord>(&line) {
            Ok(rec) if !overlong => {
                if wanted.contains_key(&rec.id) {
                    into.records.insert(rec.id, rec);
                }
            }
            _ => into.bad += 1,
        }
        line.clear();
        overlong = false;
    }
    // A torn last record (no newline) is not counted as read: a rewrite looks at it again.
    into.end = offset;
    Ok(())
}

/// How a listing went (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListingStats {
    /// Sessions taken from the index.
    pub from_index: u64,
    /// Sessions read from their journals (no record, or the journal changed).
    pub read_from_journal: u64,
    /// Whether the index was rewritten.
    pub rewritten: bool,
}

/// The session directories of the root (real directories, by their UUID names), in id order.
fn session_dirs(root: &StateRoot) -> Result<Vec<(Uuid, bool)>, LayoutError> {
    let entries = match std::fs::read_dir(root.dir()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::layout::io_err(root.dir())(e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(crate::layout::io_err(root.dir()))?;
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| parse_session_id(n).ok())
        else {
            continue;
        };
        // d_type from readdir: no stat, and a symlink is not a directory.
        dirs.push((id, entry.file_type().is_ok_and(|t| t.is_dir())));
    }
    dirs.sort_unstable_by_key(|(id, _)| *id);
    Ok(dirs)
}

/// `lstat` of every session's journal, relative to the root's descriptor (short lookups);
/// `None` for a session without a regular journal (a link is logged and left out).
fn stat_journals(root: &StateRoot, dirs: &[(Uuid, bool)]) -> Vec<Option<JournalId>> {
    use rustix::fs::{AtFlags, FileType};
    let Ok(root_fd) = rustix::fs::open(
        root.dir(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return vec![None; dirs.len()];
    };
    let mut rel = String::with_capacity(64);
    dirs.iter()
        .map(|(id, is_dir)| {
            rel.clear();
            rel.push_str(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
            rel.push('/');
            rel.push_str(EVENTS_FILE);
            let stat = rustix::fs::statat(&root_fd, rel.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
            let kind = FileType::from_raw_mode(stat.st_mode);
            if *is_dir && kind == FileType::RegularFile {
                return Some(JournalId {
                    ino: stat.st_ino as u64,
                    size: stat.st_size as u64,
                    mtime_ns: (stat.st_mtime as i64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(stat.st_mtime_nsec as i64),
                });
            }
            if kind == FileType::Symlink || !*is_dir {
                tracing::warn!(path = %root.dir().join(&rel).display(), "not listed: a symbolic link in the session's path");
            }
            None
        })
        .collect()
}

/// The summaries of every session of `root` (in id order), from the index where it is current.
pub(crate) fn list(root: &StateRoot) -> Result<(Vec<SessionSummary>, ListingStats), LayoutError> {
    let dirs = session_dirs(root)?;
    let wanted: HashMap<Uuid, usize> = dirs
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    // Two independent halves of the work, one per core: the journals' lstat and the index.
    let (journals, loaded) = std::thread::scope(|s| {
        let index = s.spawn(|| {
            let mut loaded = Loaded::default();
            let exists = match open_index(root.dir(), false) {
                Ok(file) => {
                    if let Err(e) = read_records(file, 0, &wanted, &mut loaded) {
                        tracing::debug!(error = %e, "session index unreadable; reading the journals");
                        loaded = Loaded::default();
                    }
                    true
                }
                Err(_) => false,
            };
            (loaded, exists)
        });
        let journals = stat_journals(root, &dirs);
        (journals, index.join().unwrap_or_default())
    });
    let (mut loaded, index_exists) = loaded;
    let mut stats = ListingStats::default();
    let mut summaries = Vec::with_capacity(dirs.len());
    let mut ids = Vec::with_capacity(dirs.len());
    let mut fresh = 0u64;
    for ((id, _), journal) in dirs.iter().zip(&journals) {
        let Some(journal) = journal else {
            continue;
        };
        match loaded.records.remove(id) {
            Some(rec) if rec.journal == *journal => {
                stats.from_index += 1;
                summaries.push(rec.into_summary());
            }
            _ => {
                stats.read_from_journal += 1;
                fresh += 1;
                // Paired below with the identity seen before reading: if the journal grew
                // meanwhile, the next listing sees a mismatch and reads it again.
                summaries.push(SessionSummary::read(&root.session(*id))?);
            }
        }
        ids.push((*id, *journal));
    }
    let superseded = loaded.lines > SUPERSEDED_FACTOR * ids.len() as u64 + 64;
    if fresh > 0 || loaded.bad > 0 || superseded || (!index_exists && !ids.is_empty()) {
        let current: HashMap<Uuid, IndexRecord> = ids
            .iter()
            .zip(&summaries)
            .map(|((id, journal), s)| (*id, IndexRecord::new(*id, *journal, s)))
            .collect();
        match rewrite(root.dir(), current, &wanted, loaded.end) {
            Ok(done) => stats.rewritten = done,
            Err(e) => {
                tracing::debug!(root = %root.dir().display(), error = %e, "session index not rewritten")
            }
        }
    }
    Ok((summaries, stats))
}

/// Replaces the index by `records` plus whatever writers appended after byte `seen`, under
/// the exclusive lock; returns false when a writer holds the lock (try again next time).
fn rewrite(
    root: &Path,
    mut records: HashMap<Uuid, IndexRecord>,
    wanted: &HashMap<Uuid, usize>,
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
    read_records(&mut reader, seen, wanted, &mut late)?;
    records.extend(late.records);
    let mut ids: Vec<&Uuid> = records.keys().collect();
    ids.sort();
    let tmp_name = format!(".{INDEX_FILE}.tmp-{}", std::process::id());
    let tmp = root.join(&tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let result = (|| -> io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)?;
        let mut out = io::BufWriter::with_capacity(1 << 16, file);
        for id in ids {
            if let Some(line) = records[id].line() {
                out.write_all(&line)?;
            }
        }
        out.flush()?;
        // No fsync: a lost or torn index costs a slower listing, never a wrong one.
        std::fs::rename(&tmp, index_path(root))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    // Dropping `lock` releases it; appenders then see the new inode and reopen.
    result.map(|()| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u128) -> IndexRecord {
        IndexRecord {
            id: Uuid::from_u128(n),
            journal: JournalId {
                ino: 1,
                size: 2,
                mtime_ns: 3,
            },
            events: 4,
            created: Some("2026-11-29T14:34:34.757Z".into()),
            updated: None,
            cwd: Some("/home/dev".into()),
            first_prompt: Some("hello \"quoted\" \u{2028}".into()),
        }
    }

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
        let wanted: HashMap<Uuid, usize> = [(a.id, 0), (b.id, 1), (Uuid::from_u128(3), 2)]
            .into_iter()
            .collect();
        let mut loaded = Loaded::default();
        read_records(&text[..], 0, &wanted, &mut loaded).unwrap();
        assert_eq!(loaded.records.len(), 2);
        assert_eq!(loaded.records[&a.id], a);
        assert_eq!(loaded.records[&b.id], b);
        assert_eq!((loaded.lines, loaded.bad), (4, 2));
        assert_eq!(loaded.end, (text.len() - torn.len() / 2) as u64);
    }

    #[test]
    fn oversized_records_are_not_written() {
        let mut r = record(1);
        r.cwd = Some("d".repeat(MAX_RECORD));
        assert!(r.line().is_none());
    }
}
