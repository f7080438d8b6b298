//! [`LayoutError`]: what can be wrong with a session's place on disk. Its own file because the
//! layout (`layout.rs`) and the directory handle it creates sessions with (`session_dir.rs`)
//! both return it.

use std::io;
use std::path::{Path, PathBuf};

use uuid::Uuid;

/// Errors about the layout: bad ids, missing or misshapen session directories.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A session id that is not a UUID; refused before any path is built.
    #[error(
        "invalid session id {id:?}: session ids are UUIDs such as 4411488c-e7b6-4328-b266-cdf491e0f73c"
    )]
    InvalidId {
        /// The refused text.
        id: String,
    },
    /// No home directory to derive the default state root from.
    #[error("cannot find the state directory: set --state-dir, COPILOT_HOME or HOME")]
    NoHome,
    /// A session that should exist does not.
    #[error("session {id} not found in {}", root.display())]
    NotFound {
        /// The session id.
        id: Uuid,
        /// The state root searched.
        root: PathBuf,
    },
    /// A session that should be new already exists.
    #[error("session {id} already exists at {}", dir.display())]
    AlreadyExists {
        /// The session id.
        id: Uuid,
        /// Its directory.
        dir: PathBuf,
    },
    /// Something on disk has the wrong kind (a directory where the journal should be, ...).
    #[error("{}: {what}", path.display())]
    WrongKind {
        /// The offending path.
        path: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
    /// A session directory or a file in it is a symbolic link; it is never followed.
    #[error("{} is a symbolic link{}; turnstile never follows a link to or inside a session directory, so nothing was read or written through it: put the real file or directory in its place, or remove the link", path.display(), target.as_ref().map(|t| format!(" (to {})", t.display())).unwrap_or_default())]
    Link {
        /// The link.
        path: PathBuf,
        /// Where it points, when readable.
        target: Option<PathBuf>,
    },
    /// A session file that would be written in place has other hard links.
    #[error("{} has {links} hard links; turnstile does not write a session file that another path shares (the write would change that file too): break the link with `cp -p FILE FILE.new && mv FILE.new FILE`", path.display())]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// An I/O error on a named path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> LayoutError + '_ {
    move |source| LayoutError::Io {
        path: path.to_path_buf(),
        source,
    }
}
