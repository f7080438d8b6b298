//! The session index: `turnstile-index.jsonl` beside a Copilot home's `session-state/` (in
//! any other state directory: inside it; [`index_path`]), one JSON record per session update,
//! so that listing sessions (and finding the newest) does not read every journal.
//!
//! The index is only an optimisation; the journals are the truth. A record names the journal's
//! identity when it was taken (inode, size, mtime in ns); a listing uses it only while the
//! journal still has exactly that identity, and reads the journal otherwise. A record also
//! carries how the journal ends and its model ([`Ending`]), so that `turnstile sessions`
//! reads no journal for a session whose record is current; a current record without one (an
//! older index) has it read from the journal's ends once and is rewritten with it. Sessions without
//! a record are found by listing the root, records of sessions that are gone are dropped, and
//! torn or garbled lines (a crash, a full disk) are skipped.
//!
//! Writers (`JournalWriter`, at open, after the fsync of a turn end, at close) append whole
//! records with one `O_APPEND` write each, under a shared `flock` of the index file, without
//! an fsync. A listing that found anything stale, missing or superseded rewrites the index
//! compacted (temporary file + rename) under the exclusive `flock`, taking in records
//! appended meanwhile, so no writer's record is lost and writers never wait.

use std::collections::{HashMap, HashSet};
use std::fs::{File, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ending::Ending;
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
    /// How the journal ends and its model; `None` when not known (the listing reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
}

impl IndexRecord {
    /// The record of a summary and an ending read from (or kept in step with) the journal
    /// version `journal`.
    pub fn new(id: Uuid, journal: JournalId, s: &SessionSummary, ending: Option<Ending>) -> Self {
        IndexRecord {
            id,
            journal,
            events: s.events,
            created: s.created.clone(),
            updated: s.updated.clone(),
            cwd: s.cwd.clone(),
            first_prompt: s.first_prompt.clone(),
            ending,
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
fn migrate(root: &Path) {
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
struct Loaded {
    /// The last record of each id, in id order once [`Loaded::finish`] ran.
    records: Vec<IndexRecord>,
    /// How many leading `records` are already in id order without duplicates.
    sorted: usize,
    lines: u64,
    bad: u64,
    end: u64,
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
fn read_records(input: impl Read, start: u64, into: &mut Loaded) -> io::Result<()> {
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
    match serde_json::from_slice::<IndexRecord>(line) {
        Ok(rec) if fits => into.push(rec),
        _ => into.bad += 1,
    }
}

/// How a listing went (for tests and benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListingStats {
    /// Sessions taken from the index.
    pub from_index: u64,
    /// Sessions read from their journals (no record, or the journal changed).
    pub read_from_journal: u64,
    /// Sessions whose current record had no [`Ending`], read from the journal's ends.
    pub endings_read: u64,
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

/// The index read on its own thread: its records (id order), whether the file exists, and
/// the positions of the records newest first (by `updated`, ties in id order), computed
/// there while the journals are being checked, so that a listing whose records are all
/// current needs no sort of its own.
#[derive(Debug, Default)]
struct IndexRead {
    loaded: Loaded,
    exists: bool,
    newest_first: Vec<u32>,
}

fn read_index(root: &Path) -> IndexRead {
    migrate(root);
    let mut read = IndexRead::default();
    match open_index(root, false) {
        Ok(file) => {
            read.exists = true;
            if let Err(e) = read_records(file, 0, &mut read.loaded) {
                tracing::debug!(error = %e, "session index unreadable; reading the journals");
                read.loaded = Loaded::default();
            }
        }
        Err(_) => return read,
    }
    let recs = &read.loaded.records;
    let mut order: Vec<u32> = (0..recs.len() as u32).collect();
    // Stable, over records in id order: equal `updated` stay in id order, as in every listing.
    order.sort_by(|&a, &b| recs[b as usize].updated.cmp(&recs[a as usize].updated));
    read.newest_first = order;
    read
}

/// Every session of a root as the index and the journals' identities say: which records are
/// current, which sessions had to be read from their journals.
struct Gathered {
    index: IndexRead,
    /// Per record: whether its journal still has the identity it names (and it is listed).
    current: Vec<bool>,
    /// Sessions read from their journals, with the identity seen before reading, in id order.
    fresh: Vec<(JournalId, SessionSummary, Option<Ending>)>,
    /// Every listed session and its journal's identity, in id order.
    listed: Vec<(Uuid, JournalId)>,
    dirs: Vec<(Uuid, bool)>,
    stats: ListingStats,
}

fn gather(root: &StateRoot) -> Result<Gathered, LayoutError> {
    // Two independent halves of the work, one per core: the directory listing and the
    // journals' lstat, and the index (read and ordered without waiting for the listing).
    let (dirs, journals, index) = std::thread::scope(|s| {
        let index = s.spawn(|| read_index(root.dir()));
        let dirs = session_dirs(root);
        let journals = dirs.as_ref().map(|d| stat_journals(root, d)).ok();
        (dirs, journals, index.join().unwrap_or_default())
    });
    let dirs = dirs?;
    let journals = journals.unwrap_or_default();
    let mut index = index;
    let records = &mut index.loaded.records;
    let mut current = vec![false; records.len()];
    let mut fresh = Vec::new();
    let mut listed = Vec::with_capacity(dirs.len());
    let mut stats = ListingStats::default();
    // Both sides are in id order: one merge pass pairs each journal with its record.
    let mut next = 0;
    for ((id, _), journal) in dirs.iter().zip(&journals) {
        let Some(journal) = journal else {
            continue;
        };
        while next < records.len() && records[next].id < *id {
            next += 1;
        }
        if next < records.len() && records[next].id == *id && records[next].journal == *journal {
            current[next] = true;
            stats.from_index += 1;
            if records[next].ending.is_none() {
                // Read after the identity was taken: if the journal grew meanwhile, the next
                // listing sees a mismatch and reads it whole.
                records[next].ending = read_ending(&root.session(*id), journal.size);
                stats.endings_read += 1;
            }
        } else {
            stats.read_from_journal += 1;
            // Paired with the identity seen before reading: if the journal grew meanwhile,
            // the next listing sees a mismatch and reads it again.
            let paths = root.session(*id);
            let summary = SessionSummary::read(&paths)?;
            let ending = read_ending(&paths, summary.size);
            fresh.push((*journal, summary, ending));
        }
        listed.push((*id, *journal));
    }
    Ok(Gathered {
        index,
        current,
        fresh,
        listed,
        dirs,
        stats,
    })
}

/// The [`Ending`] of a session's journal taken as `len` bytes long; `None` when it cannot be
/// read (the listing shows its status as unknown and the next one tries again).
fn read_ending(paths: &crate::layout::SessionPaths, len: u64) -> Option<Ending> {
    let file = crate::session_dir::open_read_nofollow(&paths.events).ok()?;
    Ending::read(&file, len).ok()
}

impl Gathered {
    /// Rewrites the index when anything was stale, missing, garbled or superseded.
    fn maintain(&mut self, root: &StateRoot) {
        let loaded = &self.index.loaded;
        let superseded = loaded.lines > SUPERSEDED_FACTOR * self.listed.len() as u64 + 64;
        let needed = !self.fresh.is_empty()
            || self.stats.endings_read > 0
            || loaded.bad > 0
            || superseded
            || (!self.index.exists && !self.listed.is_empty());
        if !needed {
            return;
        }
        let mut current: HashMap<Uuid, IndexRecord> = HashMap::with_capacity(self.listed.len());
        for (rec, _) in loaded
            .records
            .iter()
            .zip(&self.current)
            .filter(|(_, c)| **c)
        {
            current.insert(rec.id, rec.clone());
        }
        for (journal, s, ending) in &self.fresh {
            if let Some(id) = s.id {
                current.insert(id, IndexRecord::new(id, *journal, s, ending.clone()));
            }
        }
        let wanted: HashSet<Uuid> = self.dirs.iter().map(|(id, _)| *id).collect();
        match rewrite(root.dir(), current, &wanted, loaded.end) {
            Ok(done) => self.stats.rewritten = done,
            Err(e) => {
                tracing::debug!(root = %root.dir().display(), error = %e, "session index not rewritten")
            }
        }
    }
}

// The indexed listings are `SessionSummary` methods for their callers, defined here because
// the index is built on summaries (`summary.rs` knows nothing of the index).
impl SessionSummary {
    /// The same list as [`Self::list`], taken from the session index where its records still
    /// match the journals (see [`crate::index`]); the index is brought up to date.
    pub fn list_indexed(root: &StateRoot) -> Result<(Vec<Self>, ListingStats), LayoutError> {
        let listing = list(root)?;
        Ok((listing.sessions, listing.stats))
    }

    /// [`Self::list_indexed`] with each session's [`Ending`] (from its record, or read from
    /// the journal's ends when the record had none or the journal changed).
    pub fn list_indexed_with_endings(root: &StateRoot) -> Result<Listing, LayoutError> {
        list(root)
    }

    /// The id of the session [`Self::list_indexed`] would show first (the most recently
    /// updated), without building the listing; `None` when the root has no session.
    pub fn newest_indexed(root: &StateRoot) -> Result<(Option<Uuid>, ListingStats), LayoutError> {
        newest(root)
    }
}

/// The summaries of every session of `root`, newest first (ties in id order), from the
/// index where it is current.
pub(crate) fn list(root: &StateRoot) -> Result<Listing, LayoutError> {
    let mut g = gather(root)?;
    g.maintain(root);
    let Gathered {
        index,
        current,
        fresh,
        stats,
        ..
    } = g;
    let mut records = index.loaded.records;
    let listed = stats.from_index as usize + fresh.len();
    let mut summaries = Vec::with_capacity(listed);
    let mut endings = Vec::with_capacity(listed);
    // The index thread's order, kept to the current records; the sessions read from their
    // journals (rare: a changed journal, a lost record) are merged in by the same order
    // (stable: ties stay in id order, as `SessionSummary::sort_newest_first` leaves them).
    let mut fresh: Vec<(SessionSummary, Option<Ending>)> =
        fresh.into_iter().map(|(_, s, e)| (s, e)).collect();
    fresh.sort_by(|a, b| b.0.updated.cmp(&a.0.updated));
    let mut fresh = fresh.into_iter().peekable();
    for i in index.newest_first {
        let i = i as usize;
        if !current[i] {
            continue;
        }
        // Each position comes once in the order: the strings are moved out, not copied.
        let rec = &mut records[i];
        while let Some((f, e)) = fresh.next_if(|(f, _)| newer(f, rec)) {
            summaries.push(f);
            endings.push(e);
        }
        endings.push(rec.ending.take());
        summaries.push(SessionSummary {
            id: Some(rec.id),
            cwd: rec.cwd.take(),
            created: rec.created.take(),
            updated: rec.updated.take(),
            events: rec.events,
            size: rec.journal.size,
            first_prompt: rec.first_prompt.take(),
        });
    }
    for (f, e) in fresh {
        summaries.push(f);
        endings.push(e);
    }
    Ok(Listing {
        sessions: summaries,
        endings,
        stats,
    })
}

/// A listing from the index: the sessions newest first, and beside each (same position) how
/// its journal ends (`None` when it could not be read).
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions, newest first (ties in id order).
    pub sessions: Vec<SessionSummary>,
    /// Each session's ending, at its position in `sessions`.
    pub endings: Vec<Option<Ending>>,
    /// How the listing went.
    pub stats: ListingStats,
}

/// Whether `s` (read from its journal) is listed before `rec`: newer, or as new with a
/// smaller id.
fn newer(s: &SessionSummary, rec: &IndexRecord) -> bool {
    match s.updated.cmp(&rec.updated) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => s.id.is_some_and(|id| id < rec.id),
    }
}

/// The id of the session a listing would show first (the most recently updated), without
/// building the listing: the first current record of the index thread's order, or a
/// session read from its journal when that one is newer. The index is maintained as by
/// [`list`].
pub(crate) fn newest(root: &StateRoot) -> Result<(Option<Uuid>, ListingStats), LayoutError> {
    let mut g = gather(root)?;
    g.maintain(root);
    let records = &g.index.loaded.records;
    let best_record = g
        .index
        .newest_first
        .iter()
        .map(|&i| i as usize)
        .find(|&i| g.current[i])
        .map(|i| &records[i]);
    // Of the sessions read from their journals, the one listed first (id order breaks ties).
    let mut best_fresh: Option<&SessionSummary> = None;
    for (_, s, _) in &g.fresh {
        if best_fresh.is_none_or(|b| s.updated > b.updated) {
            best_fresh = Some(s);
        }
    }
    let id = match (best_fresh, best_record) {
        (Some(f), Some(r)) if newer(f, r) => f.id,
        (_, Some(r)) => Some(r.id),
        (Some(f), None) => f.id,
        (None, None) => None,
    };
    Ok((id, g.stats))
}

/// Replaces the index by `records` plus whatever writers appended after byte `seen`, under
/// the exclusive lock; returns false when a writer holds the lock (try again next time).
fn rewrite(
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
            ending: n.is_multiple_of(2).then(|| Ending {
                shut_down: true,
                error_since_prompt: false,
                model: Some("gpt-5".into()),
            }),
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

    #[test]
    fn oversized_records_are_not_written() {
        let mut r = record(1);
        r.cwd = Some("d".repeat(MAX_RECORD));
        assert!(r.line().is_none());
    }
}
