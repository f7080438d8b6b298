//! "Everything but these files" in Landlock's terms. Landlock only grants (a rule grants all
//! that is beneath a directory), so a deny is built from grants around it: for each directory
//! on the way from `/` to a denied file, a rule for every other entry. Symlinks are skipped
//! (what they point to is judged where it is) and so is every entry that is the same file as a
//! denied one (a hard link), so neither spelling reaches it.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::SandboxError;

/// A file's identity: device and inode.
type FileId = (u64, u64);

/// Opens `path` as an `O_PATH` descriptor without following a final symlink, with its status.
pub(crate) fn open_path(path: &Path, follow: bool) -> Result<(OwnedFd, libc::stat), SandboxError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::NulInPath(path.to_owned()))?;
    let flags = libc::O_PATH | libc::O_CLOEXEC | if follow { 0 } else { libc::O_NOFOLLOW };
    // SAFETY: `c` is NUL-terminated; O_PATH needs no mode.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(SandboxError::Path {
            path: path.to_owned(),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st`; an O_PATH descriptor may be fstat'ed.
    if unsafe { libc::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut st) } != 0 {
        return Err(SandboxError::Path {
            path: path.to_owned(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok((fd, st))
}

fn id_of(st: &libc::stat) -> FileId {
    (st.st_dev, st.st_ino)
}

fn is_symlink(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The descriptors (with their status) whose "beneath" rules cover every object under `/`
/// except the `denied` files and every other name of them in the directories walked: those
/// on the way to a denied file, and `also_walk` (the `PATH` directories, where a hard link of
/// a program would be found).
pub(crate) fn cover_all_but(
    denied: &[PathBuf],
    also_walk: &[PathBuf],
) -> Result<Vec<(OwnedFd, libc::stat)>, SandboxError> {
    let mut denied_paths: HashSet<PathBuf> = HashSet::new();
    let mut denied_ids: HashSet<FileId> = HashSet::new();
    for path in denied {
        // A denied program that is not installed denies nothing.
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        let (_, st) = open_path(&real, true)?;
        denied_ids.insert(id_of(&st));
        denied_paths.insert(real);
    }
    if denied_paths.is_empty() {
        return Ok(vec![open_path(Path::new("/"), true)?]);
    }
    // A walked directory gets no rule of its own (it would cover the denied file), nor does
    // any directory above it: each of their entries gets one instead.
    let mut ancestors: HashSet<PathBuf> = HashSet::new();
    for dir in also_walk
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
    {
        ancestors.insert(dir);
    }
    let starts: Vec<PathBuf> = denied_paths
        .iter()
        .chain(ancestors.iter())
        .cloned()
        .collect();
    for path in starts {
        let mut at = path.parent();
        while let Some(dir) = at {
            ancestors.insert(dir.to_owned());
            at = dir.parent();
        }
    }
    let mut grants = Vec::new();
    let mut walked: Vec<&PathBuf> = ancestors.iter().collect();
    walked.sort();
    for dir in walked {
        let entries = std::fs::read_dir(dir).map_err(|source| SandboxError::Path {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| SandboxError::Path {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            if ancestors.contains(&path) || denied_paths.contains(&path) {
                continue;
            }
            // An entry that vanished meanwhile needs no rule.
            let Ok((fd, st)) = open_path(&path, false) else {
                continue;
            };
            if is_symlink(&st) || denied_ids.contains(&id_of(&st)) {
                continue;
            }
            grants.push((fd, st));
        }
    }
    Ok(grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No grant reaches a denied file by any name: not the file, not a hard link of it in a
    /// walked directory, not a directory holding either.
    #[test]
    fn no_grant_covers_a_denied_file_or_its_links() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("other/deep")).unwrap();
        std::fs::write(root.join("bin/prog"), "x").unwrap();
        std::fs::write(root.join("bin/fine"), "y").unwrap();
        std::fs::hard_link(root.join("bin/prog"), root.join("other/deep/link")).unwrap();
        let grants = cover_all_but(&[root.join("bin/prog")], &[root.join("other/deep")]).unwrap();
        let ids: HashSet<FileId> = grants.iter().map(|(_, st)| id_of(st)).collect();
        let id = |p: &Path| {
            let (_, st) = open_path(p, false).unwrap();
            id_of(&st)
        };
        for covered in [
            "bin/prog",
            "other/deep/link",
            "bin",
            "other/deep",
            "other",
            "",
        ] {
            assert!(
                !ids.contains(&id(&root.join(covered))),
                "{covered} is granted"
            );
        }
        // What is beside them is granted.
        assert!(ids.contains(&id(&root.join("bin/fine"))));
        // Without the walked directory, its link would be covered by a grant above it.
        let grants = cover_all_but(&[root.join("bin/prog")], &[]).unwrap();
        let ids: HashSet<FileId> = grants.iter().map(|(_, st)| id_of(st)).collect();
        assert!(ids.contains(&id(&root.join("other"))));
    }
}
