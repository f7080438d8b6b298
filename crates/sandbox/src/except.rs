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

/// The descriptors whose "beneath" rules cover every object under `/` except the `denied`
/// files (real paths) and every other name of them in the directories walked.
pub(crate) fn cover_all_but(denied: &[PathBuf]) -> Result<Vec<OwnedFd>, SandboxError> {
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
    let mut ancestors: HashSet<PathBuf> = HashSet::new();
    for path in &denied_paths {
        let mut at = path.parent();
        while let Some(dir) = at {
            ancestors.insert(dir.to_owned());
            at = dir.parent();
        }
    }
    if ancestors.is_empty() {
        let (root, _) = open_path(Path::new("/"), true)?;
        return Ok(vec![root]);
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
            grants.push(fd);
        }
    }
    Ok(grants)
}

/// Every name in `dirs` that is the same file as one of `files` (hard links), with the files'
/// real paths: what a deny of a program must cover.
pub(crate) fn with_links(files: &[PathBuf], dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut ids = HashSet::new();
    let mut out = Vec::new();
    for file in files {
        if let Ok(real) = std::fs::canonicalize(file)
            && let Ok((_, st)) = open_path(&real, true)
        {
            ids.insert(id_of(&st));
            out.push(real);
        }
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if let Ok((_, st)) = open_path(&path, false)
                && !is_symlink(&st)
                && ids.contains(&id_of(&st))
                && let Ok(real) = std::fs::canonicalize(&path)
                && !out.contains(&real)
            {
                out.push(real);
            }
        }
    }
    out
}
