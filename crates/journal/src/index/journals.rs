//! The journals a listing checks: the session directories of a root and each journal's
//! identity (`lstat`).

use uuid::Uuid;

use super::record::JournalId;
use crate::layout::{EVENTS_FILE, LayoutError, StateRoot, parse_session_id};

/// The session directories of the root (real directories, by their UUID names), in id order.
pub(super) fn session_dirs(root: &StateRoot) -> Result<Vec<(Uuid, bool)>, LayoutError> {
    use rustix::fs::{FileType, OFlags, RawDir};
    let fd = match rustix::fs::open(
        root.dir(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(Vec::new()),
        Err(e) => return Err(crate::layout::io_err(root.dir())(e.into())),
    };
    // One large buffer: a million entries in a few hundred `getdents64`, no allocation per
    // entry (the names are parsed where they lie).
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 1 << 20];
    let mut entries = RawDir::new(&fd, &mut buf);
    let mut dirs = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(|e| crate::layout::io_err(root.dir())(e.into()))?;
        let Some(id) = std::str::from_utf8(entry.file_name().to_bytes())
            .ok()
            .and_then(|n| parse_session_id(n).ok())
        else {
            continue;
        };
        // d_type from getdents: no stat, and a symlink is not a directory; a file system
        // that does not fill it in (`DT_UNKNOWN`) has the entry looked at without following it.
        let is_dir = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(
                &fd,
                entry.file_name(),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory),
            kind => kind == FileType::Directory,
        };
        dirs.push((id, is_dir));
    }
    dirs.sort_unstable_by_key(|(id, _)| *id);
    Ok(dirs)
}

/// `lstat` of every session's journal, relative to the root's descriptor (short lookups),
/// spread over the machine's cores: it is most of a warm listing's time (a path lookup of
/// two names per session, about 2 us each at a million sessions). `None` for a session
/// without a regular journal (a link is logged and left out).
pub(super) fn stat_journals(root: &StateRoot, dirs: &[(Uuid, bool)]) -> Vec<Option<JournalId>> {
    let Ok(root_fd) = rustix::fs::open(
        root.dir(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return vec![None; dirs.len()];
    };
    let mut out = vec![None; dirs.len()];
    let workers = if dirs.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS))
    };
    let chunk = dirs.len().div_ceil(workers).max(1);
    std::thread::scope(|s| {
        let mut parts = dirs.chunks(chunk).zip(out.chunks_mut(chunk));
        let first = parts.next();
        for (dirs, out) in parts {
            let root_fd = &root_fd;
            s.spawn(move || stat_some(root, root_fd, dirs, out));
        }
        if let Some((dirs, out)) = first {
            stat_some(root, &root_fd, dirs, out);
        }
    });
    out
}

/// Below this many sessions the journals are checked on the calling thread alone.
const PARALLEL_FROM: usize = 1024;
/// Most threads checking journals.
const MAX_WORKERS: usize = 8;

fn stat_some(
    root: &StateRoot,
    root_fd: &rustix::fd::OwnedFd,
    dirs: &[(Uuid, bool)],
    out: &mut [Option<JournalId>],
) {
    use rustix::fs::{AtFlags, FileType};
    // `<uuid>/events.jsonl` and its NUL, built in place: no allocation per session.
    let mut rel = [0u8; 36 + 1 + EVENTS_FILE.len() + 1];
    rel[36] = b'/';
    rel[37..37 + EVENTS_FILE.len()].copy_from_slice(EVENTS_FILE.as_bytes());
    for ((id, is_dir), slot) in dirs.iter().zip(out) {
        id.hyphenated().encode_lower(&mut rel[..36]);
        let Ok(path) = std::ffi::CStr::from_bytes_with_nul(&rel) else {
            continue;
        };
        let Ok(stat) = rustix::fs::statat(root_fd, path, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let kind = FileType::from_raw_mode(stat.st_mode);
        if *is_dir && kind == FileType::RegularFile {
            *slot = Some(JournalId {
                ino: stat.st_ino,
                size: stat.st_size as u64,
                mtime_ns: stat
                    .st_mtime
                    .saturating_mul(1_000_000_000)
                    .saturating_add(stat.st_mtime_nsec as i64),
            });
        } else if kind == FileType::Symlink || !*is_dir {
            let rel = String::from_utf8_lossy(&rel[..rel.len() - 1]).into_owned();
            tracing::warn!(path = %root.dir().join(rel).display(), "not listed: a symbolic link in the session's path");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one `lstat` of each journal by its full path says.
    fn one_by_one(root: &StateRoot, dirs: &[(Uuid, bool)]) -> Vec<Option<JournalId>> {
        dirs.iter()
            .map(|(id, is_dir)| {
                let meta = std::fs::symlink_metadata(root.session(*id).events).ok()?;
                let dir = std::fs::symlink_metadata(root.session(*id).dir).ok()?;
                (*is_dir && dir.is_dir() && meta.is_file()).then(|| JournalId::of(&meta))
            })
            .collect()
    }

    #[test]
    fn journals_checked_on_several_threads_are_those_checked_one_by_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let count = PARALLEL_FROM * 2 + 3;
        let mut ids = Vec::new();
        for n in 0..count {
            let id = Uuid::from_u128(n as u128 * 0x9e37_79b9_7f4a_7c15);
            let paths = root.session(id);
            ids.push(id);
            match n % 5 {
                // A session directory without a journal, one whose journal is a link, a
                // link as the session directory, a plain file named by an id.
                1 => std::fs::create_dir(&paths.dir).unwrap(),
                2 => {
                    std::fs::create_dir(&paths.dir).unwrap();
                    std::os::unix::fs::symlink("/etc/hostname", &paths.events).unwrap();
                }
                3 if n < 50 => {
                    let real = tmp.path().join(format!("real-{n}"));
                    std::fs::create_dir(&real).unwrap();
                    std::fs::write(real.join(EVENTS_FILE), b"{}\n").unwrap();
                    std::os::unix::fs::symlink(&real, &paths.dir).unwrap();
                }
                4 if n < 50 => std::fs::write(&paths.dir, b"not a directory").unwrap(),
                _ => {
                    std::fs::create_dir(&paths.dir).unwrap();
                    std::fs::write(&paths.events, vec![b'x'; n % 17]).unwrap();
                }
            }
        }
        let dirs = session_dirs(&root).unwrap();
        assert!(dirs.windows(2).all(|w| w[0].0 < w[1].0), "in id order");
        assert_eq!(dirs.len(), count);
        let stats = stat_journals(&root, &dirs);
        assert_eq!(stats, one_by_one(&root, &dirs));
        let listed = stats.iter().filter(|s| s.is_some()).count();
        assert!(listed > count / 2, "{listed} of {count}");
    }
}
