//! The one way a file is replaced whole, so that a reader (or a crash) sees the old file or the
//! new one, never half of either, and a replacement that was reported done survives a power
//! loss. One durability rule for every such file:
//!
//! 1. a temporary file `.<name>.<pid>.<n>.tmp` is created in the target's directory with
//!    `O_EXCL` (never an existing file, never through a link), mode `0o666` less the umask
//!    unless the caller names one;
//! 2. it is filled, flushed and fsynced;
//! 3. it is renamed over the target (a link at the target is replaced, not followed);
//! 4. the directory is fsynced, so the rename itself is on disk.
//!
//! Any failure removes the temporary file and leaves the target as it was. A replacement made
//! with [`AtomicWrite::durable`]`(false)` skips steps 2's fsync and 4: still atomic, not
//! durable, for a file rewritten often whose loss costs nothing wrong.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary names tried before giving up (each taken one is left by another writer or a
/// crash).
const MAX_NAME_TRIES: u64 = 64;

/// Buffer between the filler and the temporary file.
const BUFFER_BYTES: usize = 1 << 16;

/// Tells this process's temporary files apart (two threads writing the same target).
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

/// Which step of a replacement failed; the target is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum AtomicWriteError {
    /// The temporary file could not be created.
    #[error("cannot create {}: {source}", tmp.display())]
    Create {
        /// The temporary file.
        tmp: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The content could not be written to the temporary file or made durable.
    #[error("cannot write {}: {source}", target.display())]
    Write {
        /// The file being replaced.
        target: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The temporary file could not be renamed over the target.
    #[error("cannot move {} to {}: {source}", tmp.display(), target.display())]
    Rename {
        /// The temporary file.
        tmp: PathBuf,
        /// The file being replaced.
        target: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The directory could not be fsynced after the rename (the new file is in place but may
    /// not survive a power loss).
    #[error("cannot sync the directory {}: {source}", dir.display())]
    SyncDir {
        /// The directory.
        dir: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

impl From<AtomicWriteError> for io::Error {
    fn from(e: AtomicWriteError) -> Self {
        let kind = match &e {
            AtomicWriteError::Create { source, .. }
            | AtomicWriteError::Write { source, .. }
            | AtomicWriteError::Rename { source, .. }
            | AtomicWriteError::SyncDir { source, .. } => source.kind(),
        };
        io::Error::new(kind, e)
    }
}

/// Replaces `path` with `bytes` by the rule above.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    AtomicWrite::new(path).write(|out| out.write_all(bytes))
}

/// One replacement of a file, for content written piece by piece or a mode of its own.
#[derive(Debug, Clone, Copy)]
pub struct AtomicWrite<'a> {
    target: &'a Path,
    mode: u32,
    durable: bool,
}

impl<'a> AtomicWrite<'a> {
    /// A replacement of `target` with mode `0o666` (less the umask).
    pub fn new(target: &'a Path) -> Self {
        AtomicWrite {
            target,
            mode: 0o666,
            durable: true,
        }
    }

    /// The new file's mode (less the umask), e.g. `0o600` for a file only its owner reads.
    pub fn mode(self, mode: u32) -> Self {
        AtomicWrite { mode, ..self }
    }

    /// Whether the replacement must survive a power loss (steps 2's fsync and 4; the default).
    /// `false` keeps it atomic (old file or new, never half) for a file whose loss costs
    /// nothing wrong, written often: a tool call's ended process group, a listing's index.
    pub fn durable(self, durable: bool) -> Self {
        AtomicWrite { durable, ..self }
    }

    /// Replaces the target with what `fill` writes. An error of `fill` is returned as it is;
    /// one of the replacement's own steps as an [`AtomicWriteError`] converted into `E`.
    pub fn write_with<T, E>(
        self,
        fill: impl FnOnce(&mut BufWriter<&File>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<AtomicWriteError>,
    {
        let dir = parent_dir(self.target);
        let (tmp, file) = self.create(dir)?;
        let filled = (|| -> Result<T, E> {
            let mut out = BufWriter::with_capacity(BUFFER_BYTES, &file);
            let value = fill(&mut out)?;
            let durable = self.durable;
            let flushed = out
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
                .and_then(|file| if durable { file.sync_all() } else { Ok(()) });
            flushed.map_err(|source| AtomicWriteError::Write {
                target: self.target.to_path_buf(),
                source,
            })?;
            std::fs::rename(&tmp, self.target).map_err(|source| AtomicWriteError::Rename {
                tmp: tmp.clone(),
                target: self.target.to_path_buf(),
                source,
            })?;
            Ok(value)
        })();
        drop(file);
        let value = match filled {
            Ok(value) => value,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if self.durable {
            sync_dir(dir).map_err(|source| AtomicWriteError::SyncDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        Ok(value)
    }

    /// Like [`write_with`](Self::write_with) for a filler whose errors are I/O errors.
    pub fn write(
        self,
        fill: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
    ) -> Result<(), AtomicWriteError> {
        self.write_with(|out| {
            fill(out).map_err(|source| AtomicWriteError::Write {
                target: self.target.to_path_buf(),
                source,
            })
        })
    }

    /// The temporary file, created `O_EXCL` under the first free name.
    fn create(&self, dir: &Path) -> Result<(PathBuf, File), AtomicWriteError> {
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = std::process::id();
        let mut tries = 0;
        loop {
            let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.{pid}.{n}.tmp"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(self.mode)
                .open(&tmp)
            {
                Ok(file) => return Ok((tmp, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < MAX_NAME_TRIES => {
                    tries += 1;
                }
                Err(source) => return Err(AtomicWriteError::Create { tmp, source }),
            }
        }
    }
}

/// The directory a target's temporary file goes in: its parent, `.` for a bare name.
fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes the directory's entries (a rename into it) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["f.json"]);
    }

    #[test]
    fn a_write_that_need_not_be_durable_still_replaces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        atomic_write(&path, b"one").unwrap();
        AtomicWrite::new(&path)
            .durable(false)
            .write(|out| out.write_all(b"two"))
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["f.json"]);
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        atomic_write(&path, b"old").unwrap();
        let e = AtomicWrite::new(&path)
            .write(|out| {
                out.write_all(b"half")?;
                Err(io::Error::other("disk full"))
            })
            .unwrap_err();
        assert!(matches!(e, AtomicWriteError::Write { .. }), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["f.json"]);
    }

    #[test]
    fn a_failed_rename_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inside"), "kept").unwrap();
        let e = atomic_write(&target, b"new").unwrap_err();
        assert!(matches!(e, AtomicWriteError::Rename { .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(target.join("inside")).unwrap(),
            "kept"
        );
        assert_eq!(names(dir.path()), ["taken"]);
    }

    #[test]
    fn a_missing_directory_is_named_by_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/f.json");
        let e = atomic_write(&path, b"x").unwrap_err();
        assert!(matches!(e, AtomicWriteError::Create { .. }));
        assert!(e.to_string().starts_with("cannot create"), "{e}");
        assert!(e.to_string().contains("no/such/dir"), "{e}");
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_taken_temporary_name_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let next = NEXT_TMP.load(Ordering::Relaxed);
        // Names another writer (or a crash) may hold; the write goes past them.
        for n in next..next + 4 {
            std::fs::write(
                dir.path()
                    .join(format!(".f.{}.{n}.tmp", std::process::id())),
                "",
            )
            .unwrap();
        }
        atomic_write(&path, b"x").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn the_mode_is_the_callers_and_the_filler_value_is_returned() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private");
        let n: Result<usize, AtomicWriteError> =
            AtomicWrite::new(&path).mode(0o600).write_with(|out| {
                out.write_all(b"abc")
                    .map_err(|source| AtomicWriteError::Write {
                        target: PathBuf::new(),
                        source,
                    })?;
                Ok(3)
            });
        assert_eq!(n.unwrap(), 3);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_bare_name_is_written_in_the_current_directory_and_synced_there() {
        // The directory fsync of a target without a parent goes to `.`.
        assert_eq!(parent_dir(Path::new("f.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/f.json")), Path::new("/a"));
        sync_dir(Path::new(".")).unwrap();
        let missing = tempfile::tempdir().unwrap().path().join("gone");
        assert!(sync_dir(&missing).is_err());
    }
}
