//! Where sessions live: the state root, `<root>/<uuid>/events.jsonl`, and creating a session.

use std::fs::{self, DirBuilder, File};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use uuid::Uuid;

pub use crate::layout_error::LayoutError;
pub(crate) use crate::layout_error::io_err;
use crate::session_dir::SessionDir;

/// Name of the journal file inside a session directory.
pub const EVENTS_FILE: &str = "events.jsonl";
/// Name of the writer lock file inside a session directory.
pub const LOCK_FILE: &str = "writer.lock";

/// Parses a session id; only canonical UUIDs are accepted (no paths, no `..`).
pub fn parse_session_id(text: &str) -> Result<Uuid, LayoutError> {
    // Uuid::parse_str also accepts braces and urn: prefixes; a session id is the bare form only.
    let bare = text.len() == 36 || text.len() == 32;
    match Uuid::parse_str(text) {
        Ok(id) if bare => Ok(id),
        _ => Err(LayoutError::InvalidId {
            id: text.to_owned(),
        }),
    }
}

/// The directory holding one folder per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRoot {
    dir: PathBuf,
}

impl StateRoot {
    /// A state root at an explicit directory (`--state-dir`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateRoot { dir: dir.into() }
    }

    /// `explicit`, else `$COPILOT_HOME/session-state`, else `~/.copilot/session-state`.
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, LayoutError> {
        if let Some(dir) = explicit {
            return Ok(Self::new(dir));
        }
        if let Some(home) = std::env::var_os("COPILOT_HOME").filter(|v| !v.is_empty()) {
            return Ok(Self::new(PathBuf::from(home).join("session-state")));
        }
        let home = std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .ok_or(LayoutError::NoHome)?;
        Ok(Self::new(
            PathBuf::from(home).join(".copilot").join("session-state"),
        ))
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Paths of one session (nothing is created).
    pub fn session(&self, id: Uuid) -> SessionPaths {
        SessionPaths::new(self.dir.join(id.hyphenated().to_string()), Some(id))
    }

    /// The ids of all session directories under the root, sorted; other entries are ignored.
    pub fn session_ids(&self) -> Result<Vec<Uuid>, LayoutError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&self.dir)(e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(&self.dir))?;
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| parse_session_id(n).ok())
            else {
                continue;
            };
            // Neither a symlinked session directory nor a symlinked journal is a session.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let journal = entry.path().join(EVENTS_FILE);
            match fs::symlink_metadata(&journal) {
                Ok(meta) if is_dir && meta.is_file() => ids.push(id),
                Ok(meta) if meta.file_type().is_symlink() || !is_dir => {
                    tracing::warn!(path = %journal.display(), "not listed: a symbolic link in the session's path");
                }
                _ => {}
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Creates a new session directory and an empty journal (0700/0600), fsyncing the file,
    /// the session directory and the root so the session survives a power loss.
    pub fn create_session(&self, id: Uuid) -> Result<SessionPaths, LayoutError> {
        create_private_dir_all(&self.dir)?;
        let paths = self.session(id);
        match DirBuilder::new().mode(0o700).create(&paths.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(&paths.dir)(e)),
        }
        // Whatever was there already (a link, a file) is refused by opening it without
        // following links.
        let dir = SessionDir::open(&paths.dir)?;
        let file = match dir.create_new(EVENTS_FILE) {
            Ok(file) => file,
            Err(LayoutError::Io { source, .. })
                if source.kind() == io::ErrorKind::AlreadyExists =>
            {
                return Err(LayoutError::AlreadyExists { id, dir: paths.dir });
            }
            Err(e) => return Err(e),
        };
        file.sync_all().map_err(io_err(&paths.events))?;
        dir.sync()?;
        sync_dir(&self.dir)?;
        Ok(paths)
    }
}

/// Creates `dir` and missing parents with mode 0700.
pub(crate) fn create_private_dir_all(dir: &Path) -> Result<(), LayoutError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err(dir))?;
    if !dir.is_dir() {
        return Err(LayoutError::WrongKind {
            path: dir.to_path_buf(),
            what: "exists but is not a directory",
        });
    }
    Ok(())
}

/// fsyncs a directory so that entries created or renamed in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), LayoutError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// The files of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPaths {
    /// The session directory.
    pub dir: PathBuf,
    /// `events.jsonl`.
    pub events: PathBuf,
    /// The writer lock file.
    pub lock: PathBuf,
    /// The session id, when the directory is named by one.
    pub id: Option<Uuid>,
}

impl SessionPaths {
    /// Paths inside a session directory.
    pub fn new(dir: PathBuf, id: Option<Uuid>) -> Self {
        SessionPaths {
            events: dir.join(EVENTS_FILE),
            lock: dir.join(LOCK_FILE),
            dir,
            id,
        }
    }

    /// Paths for a session directory given by path; the id is read from its name if it is one.
    pub fn from_dir(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| parse_session_id(n).ok());
        Self::new(dir, id)
    }

    /// Checks that the journal exists and is a regular file, not a link, in a session
    /// directory that is not a link either.
    pub fn check_events_file(&self) -> Result<(), LayoutError> {
        let dir_meta = fs::symlink_metadata(&self.dir).map_err(io_err(&self.dir))?;
        if dir_meta.file_type().is_symlink() {
            return Err(LayoutError::Link {
                path: self.dir.clone(),
                target: fs::read_link(&self.dir).ok(),
            });
        }
        let meta = fs::symlink_metadata(&self.events).map_err(io_err(&self.events))?;
        if meta.file_type().is_symlink() {
            return Err(LayoutError::Link {
                path: self.events.clone(),
                target: fs::read_link(&self.events).ok(),
            });
        }
        if !meta.is_file() {
            return Err(LayoutError::WrongKind {
                path: self.events.clone(),
                what: "is not a regular file (expected the session's events.jsonl)",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ids_must_be_bare_uuids() {
        for bad in [
            "../../etc",
            "",
            "x",
            "{4411488c-e7b6-4328-b266-cdf491e0f73c}",
            "urn:uuid:4411488c-e7b6-4328-b266-cdf491e0f73c",
            "4411488c-e7b6-4328-b266-cdf491e0f73c/..",
        ] {
            let err = parse_session_id(bad).unwrap_err();
            assert!(
                err.to_string().contains("invalid session id"),
                "{bad}: {err}"
            );
        }
        assert!(parse_session_id("4411488c-e7b6-4328-b266-cdf491e0f73c").is_ok());
    }

    #[test]
    fn create_session_sets_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path().join("state"));
        let id = Uuid::new_v4();
        let paths = root.create_session(id).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(root.dir()), 0o700);
        assert_eq!(mode(&paths.dir), 0o700);
        assert_eq!(mode(&paths.events), 0o600);
        assert_eq!(root.session_ids().unwrap(), vec![id]);
        assert!(matches!(
            root.create_session(id),
            Err(LayoutError::AlreadyExists { .. })
        ));
    }

    #[test]
    fn events_path_that_is_a_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let id = Uuid::new_v4();
        let paths = root.session(id);
        fs::create_dir_all(&paths.events).unwrap();
        let err = paths.check_events_file().unwrap_err().to_string();
        assert!(err.contains("is not a regular file"), "{err}");
    }
}
