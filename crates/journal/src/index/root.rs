//! The root's entries as a listing last read them, kept beside the index
//! (`turnstile-index.root`) with the root directory's identity at that moment, so that a
//! listing reads the root (a million `getdents64` entries, 0.3-0.5 s of kernel time) only
//! when the root changed since.
//!
//! Why it holds: a session directory is added, removed or replaced only by a change of the
//! root's own entries, which moves the root's mtime and ctime (a journal appended or created
//! inside a session directory does not, and each journal is checked on every listing
//! anyway). The identity taken is `(dev, ino, mtime, ctime)`, taken *before* the read, so a
//! change made during or after the read leaves the root with another identity. A change made
//! within the same timestamp tick as the root's last one would leave it equal: the entries
//! are recorded only when the root's times are [`SETTLED`] in the past when the identity is
//! taken.
//!
//! The file is written in place (never created anew but once) so that, when it lies inside
//! the root (`--state-dir`), writing it does not change the root it describes; a torn or
//! half-written file fails its checksum and the root is read. Layout (little-endian):
//! `MAGIC`, dev, ino, mtime ns, ctime ns, entry count (u64 each), then per entry the id's 16
//! bytes and 1 when it is a directory (0 otherwise), then the FNV-1a 64 of all before it.

use std::fs::{File, TryLockError};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use uuid::Uuid;

/// Name of the file beside the index.
pub(super) const ROOT_FILE: &str = "turnstile-index.root";

const MAGIC: &[u8; 8] = b"TSROOT1\n";
const HEADER: usize = MAGIC.len() + 5 * 8;
const ENTRY: usize = 17;

/// Most entries recorded (about 285 MB of file); a root with more is read every time.
pub(super) const MAX_ENTRIES: usize = 1 << 24;

/// The largest file read: [`MAX_ENTRIES`] entries, the header and the checksum.
const MAX_BYTES: u64 = (HEADER + MAX_ENTRIES * ENTRY + 8) as u64;

/// How long ago the root's mtime and ctime must be for its entries to be recorded: longer
/// than any file system's timestamp granularity (2 s on FAT, a clock tick on ext4).
pub(super) const SETTLED: Duration = Duration::from_secs(2);

/// The root directory's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RootId {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl RootId {
    /// The identity of the directory open as `fd`.
    pub(super) fn of(fd: &rustix::fd::OwnedFd) -> io::Result<Self> {
        let st = rustix::fs::fstat(fd)?;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Ok(RootId {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec as i64),
        })
    }

    /// Whether both times are at least [`SETTLED`] before `now` (a time in the future, a
    /// clock set back, is not settled).
    pub(super) fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let limit = i64::try_from(now.saturating_sub(SETTLED).as_nanos()).unwrap_or(i64::MAX);
        self.mtime_ns <= limit && self.ctime_ns <= limit
    }
}

/// Where the root file of the sessions under `root` is: beside the index.
pub(super) fn root_path(root: &Path) -> PathBuf {
    super::file::index_path(root).with_file_name(ROOT_FILE)
}

/// The entries recorded for `id`, in id order; `None` when there is no file, it was recorded
/// for another identity, or it is torn, damaged or too large.
pub(super) fn read(root: &Path, id: RootId) -> Option<Vec<(Uuid, bool)>> {
    let file = open(root, false).ok()?;
    let len = file.metadata().ok()?.len();
    if len < (HEADER + 8) as u64 || len > MAX_BYTES {
        return None;
    }
    // Read no further than the bound, should the file have grown since: a longer one fails
    // the checksum.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    decode(&bytes, id)
}

fn decode(bytes: &[u8], id: RootId) -> Option<Vec<(Uuid, bool)>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if fnv1a(body).to_le_bytes() != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let word = |i: usize| {
        let at = MAGIC.len() + 8 * i;
        body.get(at..at + 8)
            .and_then(|w| w.try_into().ok())
            .map(u64::from_le_bytes)
    };
    let recorded = RootId {
        dev: word(0)?,
        ino: word(1)?,
        mtime_ns: word(2)? as i64,
        ctime_ns: word(3)? as i64,
    };
    let count = usize::try_from(word(4)?).ok()?;
    if recorded != id || body.len() != HEADER + count.checked_mul(ENTRY)? {
        return None;
    }
    let mut entries = Vec::with_capacity(count);
    for entry in body[HEADER..].chunks_exact(ENTRY) {
        let uuid = Uuid::from_bytes(entry[..16].try_into().ok()?);
        let is_dir = match entry[16] {
            0 => false,
            1 => true,
            _ => return None,
        };
        entries.push((uuid, is_dir));
    }
    // Written in id order; anything else is not a file this code wrote.
    entries
        .windows(2)
        .all(|w| w[0].0 < w[1].0)
        .then_some(entries)
}

fn encode(id: RootId, entries: &[(Uuid, bool)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + entries.len() * ENTRY + 8);
    out.extend_from_slice(MAGIC);
    for word in [
        id.dev,
        id.ino,
        id.mtime_ns as u64,
        id.ctime_ns as u64,
        entries.len() as u64,
    ] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (uuid, is_dir) in entries {
        out.extend_from_slice(uuid.as_bytes());
        out.push(u8::from(*is_dir));
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Records `entries` (id order) as the root's for identity `id`, in place; skipped while
/// another listing writes it.
pub(super) fn write(root: &Path, id: RootId, entries: &[(Uuid, bool)]) -> io::Result<()> {
    if entries.len() > MAX_ENTRIES {
        return Ok(());
    }
    let file = open(root, true)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(()),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    let bytes = encode(id, entries);
    // A reader meanwhile sees a mix of the two versions, which fails the checksum.
    file.write_all_at(&bytes, 0)?;
    file.set_len(bytes.len() as u64)
}

fn open(root: &Path, write: bool) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    if write {
        options.write(true).create(true).mode(0o600);
    } else {
        options.read(true);
    }
    options
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC).bits() as i32)
        .open(root_path(root))
}

/// FNV-1a, 64 bits: a torn or damaged file is told from a whole one (not a defence against
/// anyone who can write the file, who can write the index and the journals as well).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> RootId {
        RootId {
            dev: 1,
            ino: 2,
            mtime_ns: 3,
            ctime_ns: -4,
        }
    }

    fn entries() -> Vec<(Uuid, bool)> {
        (1..50u128)
            .map(|n| (Uuid::from_u128(n * 0x1_0000_0001), n % 7 != 0))
            .collect()
    }

    #[test]
    fn entries_round_trip_for_their_identity_only() {
        let bytes = encode(id(), &entries());
        assert_eq!(decode(&bytes, id()), Some(entries()));
        for other in [
            RootId { dev: 9, ..id() },
            RootId { ino: 9, ..id() },
            RootId {
                mtime_ns: 9,
                ..id()
            },
            RootId {
                ctime_ns: 9,
                ..id()
            },
        ] {
            assert_eq!(decode(&bytes, other), None);
        }
        assert_eq!(decode(&encode(id(), &[]), id()), Some(Vec::new()));
    }

    #[test]
    fn a_torn_or_damaged_file_is_not_read() {
        let bytes = encode(id(), &entries());
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert_eq!(decode(&damaged, id()), None, "byte {at}");
        }
        for len in 0..bytes.len() {
            assert_eq!(decode(&bytes[..len], id()), None, "{len} bytes");
        }
        // A longer version's tail left after a shorter one was written in place, had the
        // length not been set: not read either.
        let mut mixed = encode(id(), &entries()[..10]);
        mixed.extend_from_slice(&bytes[mixed.len()..]);
        assert_eq!(decode(&mixed, id()), None);
    }

    #[test]
    fn written_in_place_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), id(), &entries()).unwrap();
        assert_eq!(read(tmp.path(), id()), Some(entries()));
        let ino =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(root_path(tmp.path())).unwrap());
        write(tmp.path(), id(), &entries()[..3]).unwrap();
        assert_eq!(read(tmp.path(), id()), Some(entries()[..3].to_vec()));
        let again =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(root_path(tmp.path())).unwrap());
        assert_eq!(ino, again, "the same file, rewritten in place");
    }

    #[test]
    fn only_times_settled_in_the_past_count() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let at = |secs: i64| RootId {
            mtime_ns: secs * 1_000_000_000,
            ctime_ns: secs * 1_000_000_000,
            ..id()
        };
        assert!(at(998).settled(now));
        assert!(!at(999).settled(now));
        assert!(!at(2000).settled(now));
        assert!(
            !RootId {
                ctime_ns: 999_500_000_000,
                ..at(100)
            }
            .settled(now)
        );
    }

    // Listings of a real root: each damage of the entries' file has the root read instead,
    // and every listing equals the one read from the journals alone.

    use crate::SessionSummary;
    use crate::index::listing::{Clock, list_at};
    use crate::layout::StateRoot;
    use std::io::Write;

    /// A clock an hour ahead: the root's times are settled at once (no test waits for them).
    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(3600)
    }

    /// A clock at the epoch: the root's times are never settled.
    fn epoch() -> SystemTime {
        SystemTime::UNIX_EPOCH
    }

    fn line(kind: &str, data: &str, n: u64) -> String {
        format!(
            r#"{{"type":"{kind}","data":{data},"id":"{}","timestamp":"2026-12-07T10:{:02}:{:02}.000Z","parentId":null}}"#,
            Uuid::new_v4(),
            n / 60 % 60,
            n % 60
        ) + "\n"
    }

    /// A session started in `/work/<n>` with one prompt, shut down when `n` is even.
    fn session(root: &StateRoot, n: u64) -> Uuid {
        let id = Uuid::new_v4();
        let paths = root.session(id);
        std::fs::create_dir_all(&paths.dir).unwrap();
        let mut journal = line(
            "session.start",
            &format!(
                r#"{{"sessionId":"{id}","selectedModel":"m","context":{{"cwd":"/work/{n}"}}}}"#
            ),
            n,
        );
        journal += &line("user.message", &format!(r#"{{"content":"prompt {n}"}}"#), n);
        if n.is_multiple_of(2) {
            journal += &line("session.shutdown", r#"{"shutdownType":"routine"}"#, n);
        }
        std::fs::write(&paths.events, journal).unwrap();
        id
    }

    /// A root under a home (`session-state`, the index and the entries' file beside it)
    /// with `count` sessions.
    fn home(count: u64) -> (tempfile::TempDir, StateRoot, Vec<Uuid>) {
        let home = tempfile::tempdir().unwrap();
        let root = StateRoot::new(home.path().join("session-state"));
        let ids = (0..count).map(|n| session(&root, n)).collect();
        (home, root, ids)
    }

    /// Lists by `clock`, checks the listing against the journals', and says whether the root
    /// was read.
    fn root_read(root: &StateRoot, clock: Clock) -> bool {
        let listing = list_at(root, clock).unwrap();
        assert_eq!(listing.sessions, SessionSummary::list(root).unwrap());
        listing.stats.root_read
    }

    /// Lists until the root's entries are recorded and used; each listing equal to the
    /// journals'.
    fn record(root: &StateRoot) {
        for _ in 0..4 {
            if !root_read(root, later) {
                return;
            }
        }
        panic!("the root is read at every listing");
    }

    fn identity(root: &StateRoot) -> RootId {
        let fd = rustix::fs::open(
            root.dir(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        RootId::of(&fd).unwrap()
    }

    /// The root's entries as they are, all but the first: a file that, were it trusted,
    /// would leave a session out of the listing.
    fn missing_one(root: &StateRoot) -> Vec<(Uuid, bool)> {
        let mut ids = root.session_ids().unwrap();
        ids.sort();
        ids.into_iter().skip(1).map(|id| (id, true)).collect()
    }

    /// Damages the recorded entries' file by `damage` (given its bytes as this code wrote
    /// them for the root's identity, one session left out); the root is read instead, the
    /// listing is whole, and the next listing uses the entries recorded again.
    fn damaged(damage: impl FnOnce(&mut Vec<u8>)) {
        let (_home, root, _) = home(5);
        record(&root);
        let mut bytes = encode(identity(&root), &missing_one(&root));
        damage(&mut bytes);
        std::fs::write(root_path(root.dir()), &bytes).unwrap();
        assert!(root_read(&root, later), "the damaged file is not used");
        assert_eq!(list_at(&root, later).unwrap().sessions.len(), 5);
        assert!(!root_read(&root, later), "recorded again");
    }

    #[test]
    fn a_whole_file_for_the_roots_identity_is_trusted() {
        // The counterpart of the damage tests: undamaged, the same file is used as it is.
        let (_home, root, _) = home(5);
        record(&root);
        let partial = missing_one(&root);
        std::fs::write(root_path(root.dir()), encode(identity(&root), &partial)).unwrap();
        let listing = list_at(&root, later).unwrap();
        assert!(!listing.stats.root_read);
        assert_eq!(listing.sessions.len(), 4);
    }

    #[test]
    fn a_torn_file_has_the_root_read() {
        damaged(|b| b.truncate(b.len() / 2));
    }

    #[test]
    fn a_bad_checksum_has_the_root_read() {
        damaged(|b| {
            let last = b.len() - 1;
            b[last] ^= 0x40;
        });
    }

    #[test]
    fn a_file_of_another_root_identity_has_the_root_read() {
        let (_home, root, _) = home(5);
        record(&root);
        let mut other = identity(&root);
        other.ino ^= 1;
        write(root.dir(), other, &missing_one(&root)).unwrap();
        assert!(root_read(&root, later));
        assert!(!root_read(&root, later), "recorded again");
    }

    #[test]
    fn a_file_over_the_bound_has_the_root_read() {
        let (_home, root, _) = home(5);
        record(&root);
        // A valid file followed by a hole up to one byte over the bound (sparse: nothing is
        // written, and nothing is read).
        let path = root_path(root.dir());
        std::fs::write(&path, encode(identity(&root), &missing_one(&root))).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(MAX_BYTES + 1)
            .unwrap();
        assert!(root_read(&root, later));
        assert!(!root_read(&root, later), "recorded again");
    }

    #[test]
    fn a_wrong_magic_has_the_root_read() {
        damaged(|b| {
            // Another magic with a checksum that matches it: only the magic is wrong.
            b[..MAGIC.len()].copy_from_slice(b"TSROOT9\n");
            let body = b.len() - 8;
            let sum = fnv1a(&b[..body]);
            b[body..].copy_from_slice(&sum.to_le_bytes());
        });
    }

    #[test]
    fn an_empty_file_has_the_root_read() {
        damaged(Vec::clear);
    }

    #[test]
    fn a_session_directory_made_or_removed_after_a_recorded_listing_is_seen() {
        let (_home, root, ids) = home(4);
        record(&root);
        let made = session(&root, 9);
        let listing = list_at(&root, later).unwrap();
        assert!(listing.stats.root_read, "the root changed");
        assert!(listing.sessions.iter().any(|s| s.id == Some(made)));
        assert_eq!(listing.sessions, SessionSummary::list(&root).unwrap());
        assert!(!root_read(&root, later));
        std::fs::remove_dir_all(root.session(ids[1]).dir).unwrap();
        let listing = list_at(&root, later).unwrap();
        assert!(listing.stats.root_read, "the root changed");
        assert!(!listing.sessions.iter().any(|s| s.id == Some(ids[1])));
        assert_eq!(listing.sessions, SessionSummary::list(&root).unwrap());
        assert!(!root_read(&root, later));
    }

    #[test]
    fn an_append_or_a_new_journal_is_seen_without_the_root_read() {
        let (_home, root, ids) = home(4);
        // A session directory with no journal yet.
        let bare = Uuid::new_v4();
        std::fs::create_dir(root.session(bare).dir).unwrap();
        record(&root);
        let before = list_at(&root, later).unwrap();
        let was = before
            .sessions
            .iter()
            .find(|s| s.id == Some(ids[0]))
            .unwrap();
        let mut journal = std::fs::OpenOptions::new()
            .append(true)
            .open(root.session(ids[0]).events)
            .unwrap();
        journal
            .write_all(line("session.info", "{}", 3000).as_bytes())
            .unwrap();
        std::fs::copy(root.session(ids[1]).events, root.session(bare).events).unwrap();
        let after = list_at(&root, later).unwrap();
        assert!(!after.stats.root_read);
        assert_eq!(after.stats.read_from_journal, 2);
        assert_eq!(after.sessions, SessionSummary::list(&root).unwrap());
        let now = after
            .sessions
            .iter()
            .find(|s| s.id == Some(ids[0]))
            .unwrap();
        assert_eq!(now.events, was.events + 1);
        assert!(now.size > was.size);
        assert!(after.sessions.iter().any(|s| s.id == Some(bare)));
    }

    #[test]
    fn a_root_whose_times_are_not_settled_is_read_and_not_recorded() {
        let (_home, root, _) = home(3);
        assert!(root_read(&root, epoch));
        assert!(root_read(&root, epoch), "not recorded");
        assert!(!root_path(root.dir()).exists());
        record(&root);
    }

    #[test]
    fn a_state_dir_holding_its_index_and_the_file_has_its_root_skipped_too() {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        for n in 0..3 {
            session(&root, n);
        }
        assert_eq!(root_path(root.dir()).parent(), Some(tmp.path()));
        record(&root);
        let ino =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(root_path(root.dir())).unwrap());
        let made = session(&root, 7);
        let listing = list_at(&root, later).unwrap();
        assert!(listing.stats.root_read);
        assert!(listing.sessions.iter().any(|s| s.id == Some(made)));
        // Recorded again in place: the file writing itself does not change the root.
        record(&root);
        let again =
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(root_path(root.dir())).unwrap());
        assert_eq!(ino, again);
    }
}
