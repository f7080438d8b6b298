//! A listing from the index: every session of a root, from its record while the journal
//! has the identity the record names, from the journal otherwise; the index brought up to
//! date when anything was stale.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use uuid::Uuid;

use super::file::{Loaded, migrate, open_index, read_records, rewrite};
use super::journals::{session_dirs, stat_journals};
use super::record::{IndexRecord, JournalId};
use super::root::{self, RootId};
use crate::ending::Ending;
use crate::layout::{LayoutError, StateRoot};
use crate::summary::SessionSummary;

/// The index is rewritten when it holds more than this many lines per live session (+ slack).
const SUPERSEDED_FACTOR: u64 = 4;

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
    /// Whether the root directory was read (its entries were not recorded for the identity
    /// it has now; `index/root.rs`).
    pub root_read: bool,
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
    read.newest_first = super::order::newest_first(&read.loaded.records);
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
    /// The root's identity taken before its entries were read, and when: recorded with them
    /// afterwards when settled.
    seen: Option<(RootId, std::time::SystemTime)>,
    stats: ListingStats,
}

/// The root's identity now (`None` when it cannot be opened: it is then read, or found
/// missing, as before).
fn root_identity(root: &StateRoot) -> Option<RootId> {
    let fd = rustix::fs::open(
        root.dir(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    RootId::of(&fd).ok()
}

/// What a listing asks the time of: the system's clock, or a test's.
pub(super) type Clock = fn() -> std::time::SystemTime;

fn gather(root: &StateRoot, now: Clock) -> Result<Gathered, LayoutError> {
    // Two independent halves of the work, one per core: the directory listing and the
    // journals' lstat, and the index (read and ordered without waiting for the listing).
    let (dirs, journals, index, seen, root_read) = std::thread::scope(|s| {
        let index = s.spawn(|| read_index(root.dir()));
        // The identity before the entries: a change during the read leaves another one.
        let seen = root_identity(root).map(|id| (id, now()));
        let recorded = seen.and_then(|(id, _)| root::read(root.dir(), id));
        let root_read = recorded.is_none();
        let dirs = match recorded {
            Some(dirs) => Ok(dirs),
            None => session_dirs(root),
        };
        let journals = dirs.as_ref().map(|d| stat_journals(root, d)).ok();
        (
            dirs,
            journals,
            index.join().unwrap_or_default(),
            seen,
            root_read,
        )
    });
    let dirs = dirs?;
    let journals = journals.unwrap_or_default();
    let mut index = index;
    let records = &mut index.loaded.records;
    let mut current = vec![false; records.len()];
    let mut fresh = Vec::new();
    let mut listed = Vec::with_capacity(dirs.len());
    let mut stats = ListingStats {
        root_read,
        ..ListingStats::default()
    };
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
        seen: seen.filter(|_| root_read),
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
    /// Rewrites the index when anything was stale, missing, garbled or superseded, and
    /// records the root's entries when they were read.
    fn maintain(&mut self, root: &StateRoot) {
        self.maintain_index(root);
        self.record_root(root);
    }

    /// Records the entries read from the root for the identity taken before the read, when
    /// its times are settled and it still has that identity (a rewrite of an index inside
    /// the root changes it: the next listing records it then).
    fn record_root(&self, root: &StateRoot) {
        let Some((seen, at)) = self.seen else {
            return;
        };
        if !seen.settled(at) || root_identity(root) != Some(seen) {
            return;
        }
        if let Err(e) = root::write(root.dir(), seen, &self.dirs) {
            tracing::debug!(root = %root.dir().display(), error = %e, "the root's entries not recorded");
        }
    }

    fn maintain_index(&mut self, root: &StateRoot) {
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
    list_at(root, std::time::SystemTime::now)
}

/// [`list`] with the time taken from `now` (whether the root's times are settled).
pub(super) fn list_at(root: &StateRoot, now: Clock) -> Result<Listing, LayoutError> {
    let mut g = gather(root, now)?;
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
    let mut g = gather(root, std::time::SystemTime::now)?;
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
