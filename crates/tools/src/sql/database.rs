//! Opening the session database: `session.db` in the session directory, never through a
//! link, with the runtime's tables.
//!
//! The session directory is opened as [`SessionDir`] does (its last component may not be a
//! link) and its real path taken; `session.db` and SQLite's own side files next to it
//! (`-journal`, `-wal`, `-shm`) must each be absent or a regular file with one link, and SQLite
//! opens the database with `SQLITE_OPEN_NOFOLLOW`, which refuses a path with a link in it. So
//! neither a planted symlink nor a hard link to a file elsewhere makes a query write outside
//! the session.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};
use turnstile_journal::session_dir::SessionDir;

use super::BUSY_TIMEOUT;
use crate::ToolFailure;

/// The database's file name inside the session directory (the runtime's name).
pub const DATABASE_FILE: &str = "session.db";

/// The files SQLite keeps beside the database.
const SIDE_SUFFIXES: [&str; 4] = ["", "-journal", "-wal", "-shm"];

/// The longest string or blob a statement may build; bounds what one value can take.
const MAX_VALUE_BYTES: i32 = 16 * 1024 * 1024;

/// The runtime's tables, created when missing (their text is what `sqlite_master` shows).
const SCHEMA: &str = include_str!("schema.sql");

/// A session's database: opened on the first `sql` call and kept open for the session, as
/// the runtime keeps its own (so what SQLite counts per connection, such as the rows the last
/// change touched, carries from one call to the next as there).
pub struct SessionDatabase {
    dir: Option<PathBuf>,
    conn: Mutex<Option<Connection>>,
}

impl SessionDatabase {
    /// The database of the session whose directory is `dir` (`None`: a context without a
    /// session, where `sql` fails).
    pub fn new(dir: Option<PathBuf>) -> Self {
        SessionDatabase {
            dir,
            conn: Mutex::new(None),
        }
    }

    /// Runs `work` on the open connection (opened first if need be); calls take turns.
    pub(super) fn with<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, ToolFailure>,
    ) -> Result<T, ToolFailure> {
        let dir = self.dir.as_deref().ok_or_else(|| {
            ToolFailure::new(
                "This session has no directory to keep a database in.",
                "unavailable",
            )
        })?;
        let mut conn = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if conn.is_none() {
            *conn = Some(open(dir)?);
        }
        match conn.as_ref() {
            Some(conn) => work(conn),
            None => Err(ToolFailure::new(
                "The session database is not open.",
                "internal",
            )),
        }
    }
}

impl Default for SessionDatabase {
    fn default() -> Self {
        Self::new(None)
    }
}

impl std::fmt::Debug for SessionDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionDatabase")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The real path of `session.db` in the session directory `dir`, once the directory is no
/// link and the database and its side files are each absent or a plain file of one link.
pub(super) fn checked_path(dir: &Path) -> Result<PathBuf, ToolFailure> {
    let unavailable = |what: String| ToolFailure::new(what, "unavailable");
    let session = SessionDir::open(dir).map_err(|e| unavailable(format!("{e}")))?;
    for suffix in SIDE_SUFFIXES {
        let name = format!("{DATABASE_FILE}{suffix}");
        let stat = session
            .stat(&name)
            .map_err(|e| unavailable(format!("{e}")))?;
        if let Some(stat) = stat {
            let regular = (stat.st_mode & libc::S_IFMT) == libc::S_IFREG;
            if !regular || stat.st_nlink > 1 {
                return Err(ToolFailure::new(
                    format!(
                        "The session database file {} is not a plain file of this session (a link or another kind of file); remove it to start a new database.",
                        session.join(&name).display()
                    ),
                    "unsafe_path",
                ));
            }
        }
    }
    let real =
        std::fs::canonicalize(dir).map_err(|e| unavailable(format!("{}: {e}", dir.display())))?;
    Ok(real.join(DATABASE_FILE))
}

/// Opens (creating when missing) the database of the session whose directory is `dir`.
fn open(dir: &Path) -> Result<Connection, ToolFailure> {
    let unavailable = |what: String| ToolFailure::new(what, "unavailable");
    let path = checked_path(dir)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&path, flags).map_err(|e| {
        unavailable(format!(
            "Could not open the session database {}: {e}",
            path.display()
        ))
    })?;
    let setup = |e: rusqlite::Error| {
        unavailable(format!(
            "Could not prepare the session database {}: {e}",
            path.display()
        ))
    };
    conn.busy_timeout(BUSY_TIMEOUT).map_err(setup)?;
    conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        MAX_VALUE_BYTES,
    )
    .map_err(setup)?;
    // No other database may be attached: `ATTACH` (and `VACUUM INTO`, which attaches its
    // target) would read or create SQLite files anywhere, past the read and write permissions
    // the file tools ask for. The session's database is the only one the tool reaches.
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0)
        .map_err(setup)?;
    conn.execute_batch(SCHEMA).map_err(setup)?;
    Ok(conn)
}
