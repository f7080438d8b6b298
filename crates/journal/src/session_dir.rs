//! A session directory opened without following links: every file of a session is opened
//! relative to the directory's descriptor with `O_NOFOLLOW`, so neither a symlinked session
//! directory nor a symlink (or hard link) planted inside it can make turnstile write outside.
//!
//! The directory itself is opened with `O_DIRECTORY | O_NOFOLLOW`: its last component may not
//! be a link (the state root above it may be, that is the user's choice). Files written in
//! place (the journal, the lock) must also have exactly one link; side files are always new
//! (`O_CREAT | O_EXCL | O_NOFOLLOW`) and are removed again if writing them fails.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::layout_error::LayoutError;

/// How a file inside a session directory is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Read and write in place (refused when the file has other hard links).
    ReadWrite,
    /// Append only (refused when the file has other hard links).
    Append,
    /// Read and write, created (0600) when missing (refused when it has other hard links).
    CreateReadWrite,
}

/// An open session directory (see the module doc).
#[derive(Debug)]
pub struct SessionDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn nofollow_error(path: &Path, source: io::Error) -> LayoutError {
    // O_NOFOLLOW answers ELOOP for a symlink (ENOTDIR for a link to a file with O_DIRECTORY):
    // ask lstat which it was so the message can say "is a symbolic link".
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => LayoutError::Link {
            path: path.to_path_buf(),
            target: std::fs::read_link(path).ok(),
        },
        _ => LayoutError::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

impl SessionDir {
    /// Opens the session directory at `path`; refuses a symlink and anything not a directory.
    pub fn open(path: &Path) -> Result<Self, LayoutError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => Ok(SessionDir {
                fd,
                path: path.to_path_buf(),
            }),
            Err(e) if e == rustix::io::Errno::NOTDIR => match nofollow_error(path, e.into()) {
                link @ LayoutError::Link { .. } => Err(link),
                _ => Err(LayoutError::WrongKind {
                    path: path.to_path_buf(),
                    what: "is not a session directory",
                }),
            },
            Err(rustix::io::Errno::NOENT) => Err(LayoutError::WrongKind {
                path: path.to_path_buf(),
                what: "is not a session directory (it does not exist)",
            }),
            Err(e) => Err(nofollow_error(path, e.into())),
        }
    }

    /// The directory's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside the directory (for messages).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The directory's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens the regular file `name` without following a link.
    pub fn open_file(&self, name: &str, access: Access) -> Result<File, LayoutError> {
        let path = self.join(name);
        let flags = OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | match access {
                Access::Read => OFlags::RDONLY,
                Access::ReadWrite => OFlags::RDWR,
                Access::Append => OFlags::WRONLY | OFlags::APPEND,
                Access::CreateReadWrite => OFlags::RDWR | OFlags::CREATE,
            };
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600))
            .map_err(|e| nofollow_error(&path, e.into()))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| LayoutError::Io {
            path: path.clone(),
            source: e.into(),
        })?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(LayoutError::WrongKind {
                path,
                what: "is not a regular file",
            });
        }
        if access != Access::Read && stat.st_nlink > 1 {
            return Err(LayoutError::HardLinked {
                path,
                links: stat.st_nlink as u64,
            });
        }
        Ok(File::from(fd))
    }

    /// Creates the new file `name` (0600), never reusing or following an existing entry.
    pub fn create_new(&self, name: &str) -> Result<File, LayoutError> {
        self.create_new_with_mode(name, 0o600)
    }

    /// [`Self::create_new`] with another mode (before the umask), for a file another program
    /// writes with that mode (the Copilot CLI's in-use marker).
    pub fn create_new_with_mode(&self, name: &str, mode: u32) -> Result<File, LayoutError> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))
            .map(File::from)
            .map_err(|e| LayoutError::Io {
                path: self.join(name),
                source: e.into(),
            })
    }

    /// `lstat` of `name`: `None` when it does not exist.
    pub fn stat(&self, name: &str) -> Result<Option<rustix::fs::Stat>, LayoutError> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(LayoutError::Io {
                path: self.join(name),
                source: e.into(),
            }),
        }
    }

    /// Renames `from` to `to` inside the directory (replacing `to`, never following it).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), LayoutError> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(|e| LayoutError::Io {
            path: self.join(to),
            source: e.into(),
        })
    }

    /// Removes the entry `name` (a link is removed, never its target); missing is fine.
    pub fn remove(&self, name: &str) -> Result<(), LayoutError> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(LayoutError::Io {
                path: self.join(name),
                source: e.into(),
            }),
        }
    }

    /// fsyncs the directory so entries created, renamed or removed in it are durable.
    pub fn sync(&self) -> Result<(), LayoutError> {
        rustix::fs::fsync(&self.fd).map_err(|e| LayoutError::Io {
            path: self.path.clone(),
            source: e.into(),
        })
    }

    /// Names of the entries in the directory (`.` and `..` left out).
    pub fn entry_names(&self) -> Result<Vec<String>, LayoutError> {
        let io = |e: rustix::io::Errno| LayoutError::Io {
            path: self.path.clone(),
            source: e.into(),
        };
        // A fresh open file description: a dup would share (and exhaust) the read position.
        let fresh = rustix::fs::openat(
            &self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io)?;
        let mut dir = rustix::fs::Dir::new(fresh).map_err(io)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(io)?;
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }
}

/// Opens a journal for reading without following a symlink in its last component; a link is
/// refused with an error that says so.
pub fn open_read_nofollow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32)
        .open(path)
        .map_err(|e| match nofollow_error(path, e) {
            LayoutError::Io { source, .. } => source,
            link => io::Error::new(
                io::ErrorKind::InvalidInput,
                link.to_string()
                    .strip_prefix(&format!("{} ", path.display()))
                    .map(str::to_owned)
                    .unwrap_or_else(|| link.to_string()),
            ),
        })
}

/// A side file being written: removed again unless [`SideFile::keep`] is called, so that a
/// failed write (a full disk) leaves no empty or partial file behind.
#[derive(Debug)]
pub struct SideFile<'a> {
    dir: &'a SessionDir,
    name: String,
    /// The open file.
    pub file: File,
    kept: bool,
}

impl<'a> SideFile<'a> {
    /// Creates a new side file `<base>-<UTC time>` (`.1`, `.2`... when taken); an existing entry
    /// of that name, a planted symlink included, is never opened.
    pub fn create(dir: &'a SessionDir, base: &str) -> Result<Self, LayoutError> {
        let stamp = crate::timestamp::Timestamp::now()
            .to_text()
            .replace([':', '-'], "");
        let stem = format!("{base}-{stamp}");
        for n in 0u32..10_000 {
            let name = if n == 0 {
                stem.clone()
            } else {
                format!("{stem}.{n}")
            };
            match dir.create_new(&name) {
                Ok(file) => {
                    return Ok(SideFile {
                        dir,
                        name,
                        file,
                        kept: false,
                    });
                }
                Err(LayoutError::Io { source, .. })
                    if source.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(LayoutError::Io {
            path: dir.join(&stem),
            source: io::Error::new(
                io::ErrorKind::AlreadyExists,
                "10 000 side files of this name already exist; remove old ones",
            ),
        })
    }

    /// The side file's name inside the session directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The side file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// Keeps the file (it was written and synced completely).
    pub fn keep(mut self) -> PathBuf {
        self.kept = true;
        self.path()
    }
}

impl Drop for SideFile<'_> {
    fn drop(&mut self) {
        if !self.kept
            && let Err(e) = self.dir.remove(&self.name)
        {
            tracing::warn!(file = %self.path().display(), error = %e, "cannot remove an unfinished side file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinked_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        symlink(&real, &link).unwrap();
        let err = SessionDir::open(&link).unwrap_err();
        assert!(matches!(err, LayoutError::Link { .. }), "{err:?}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        SessionDir::open(&real).unwrap();
    }

    #[test]
    fn symlinked_and_hard_linked_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"keep me\n").unwrap();
        let dir_path = tmp.path().join("s");
        std::fs::create_dir(&dir_path).unwrap();
        symlink(&outside, dir_path.join("events.jsonl")).unwrap();
        std::fs::hard_link(&outside, dir_path.join("writer.lock")).unwrap();
        let dir = SessionDir::open(&dir_path).unwrap();
        for access in [Access::Read, Access::Append, Access::ReadWrite] {
            let err = dir.open_file("events.jsonl", access).unwrap_err();
            assert!(matches!(err, LayoutError::Link { .. }), "{err:?}");
        }
        let err = dir
            .open_file("writer.lock", Access::CreateReadWrite)
            .unwrap_err();
        assert!(
            matches!(err, LayoutError::HardLinked { links: 2, .. }),
            "{err:?}"
        );
        dir.open_file("writer.lock", Access::Read)
            .expect("reading a hard-linked file is harmless");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me\n");
    }

    #[test]
    fn side_file_skips_planted_names_and_vanishes_unless_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SessionDir::open(tmp.path()).unwrap();
        let first = SideFile::create(&dir, "events.jsonl.torn").unwrap();
        let name = first.name().to_owned();
        drop(first);
        assert!(
            dir.stat(&name).unwrap().is_none(),
            "unkept side file removed"
        );
        let kept = SideFile::create(&dir, "events.jsonl.torn").unwrap().keep();
        assert!(kept.is_file());
    }
}
