//! Reading the todo tables back for a client (`session.plan.readSqlTodosWithDependencies`):
//! the rows of `todos` and the edges of `todo_deps` in the session's `session.db`, as the
//! runtime answers them.
//!
//! The database is opened read-only, through the same checks as the `sql` tool's (no link on
//! the way, plain files of one link), and never created: a session that never ran `sql` has
//! no todos. Each table is read on its own and a table that is missing or no longer has the
//! runtime's columns (the agent may alter it) reads as empty, so one broken table does not
//! hide the other, as in the runtime.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::BUSY_TIMEOUT;
use super::database::checked_path;
use crate::ToolFailure;

/// The most rows read from each table (a larger table is answered to this many, in order).
pub const MAX_TODO_ROWS: usize = 10_000;

/// One row of `todos`; a column the row leaves empty (or holds as a blob) is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TodoRow {
    /// `id`.
    pub id: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `status`.
    pub status: Option<String>,
    /// `created_at` as SQLite keeps it (`YYYY-MM-DD HH:MM:SS`, UTC).
    pub created_at: Option<String>,
}

/// One edge of `todo_deps`: `todo_id` waits for `depends_on`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoDependency {
    /// `todo_id`.
    pub todo_id: String,
    /// `depends_on`.
    pub depends_on: String,
}

/// The todo tables as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Todos {
    /// The rows, oldest first (insertion order breaks ties).
    pub rows: Vec<TodoRow>,
    /// The dependency edges, in insertion order.
    pub dependencies: Vec<TodoDependency>,
}

/// Reads the todo tables of the session whose directory is `dir`: empty when it has no
/// database; an error only when the database is there but may not be opened (a link, say).
pub fn read_todos(dir: &Path) -> Result<Todos, ToolFailure> {
    let path = checked_path(dir)?;
    if !path.is_file() {
        return Ok(Todos::default());
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&path, flags).map_err(|e| {
        ToolFailure::new(
            format!(
                "Could not open the session database {}: {e}",
                path.display()
            ),
            "unavailable",
        )
    })?;
    // A `sql` call writing at this moment is waited for, as the tool waits for another
    // process; past the timeout the table reads as empty.
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    Ok(Todos {
        rows: rows(&conn).unwrap_or_default(),
        dependencies: dependencies(&conn).unwrap_or_default(),
    })
}

fn rows(conn: &Connection) -> rusqlite::Result<Vec<TodoRow>> {
    let mut statement = conn.prepare(
        "SELECT id, title, description, status, created_at FROM todos \
         ORDER BY created_at, rowid LIMIT ?1",
    )?;
    let limit = i64::try_from(MAX_TODO_ROWS).unwrap_or(i64::MAX);
    let found = statement.query_map([limit], |row| {
        Ok(TodoRow {
            id: text(row.get_ref(0)?),
            title: text(row.get_ref(1)?),
            description: text(row.get_ref(2)?),
            status: text(row.get_ref(3)?),
            created_at: text(row.get_ref(4)?),
        })
    })?;
    found.collect()
}

fn dependencies(conn: &Connection) -> rusqlite::Result<Vec<TodoDependency>> {
    let mut statement =
        conn.prepare("SELECT todo_id, depends_on FROM todo_deps ORDER BY rowid LIMIT ?1")?;
    let limit = i64::try_from(MAX_TODO_ROWS).unwrap_or(i64::MAX);
    let found = statement.query_map([limit], |row| {
        Ok((text(row.get_ref(0)?), text(row.get_ref(1)?)))
    })?;
    let mut edges = Vec::new();
    for edge in found {
        // An edge with an empty end names nothing a client could draw.
        if let (Some(todo_id), Some(depends_on)) = edge? {
            edges.push(TodoDependency {
                todo_id,
                depends_on,
            });
        }
    }
    Ok(edges)
}

/// A column's value as text: SQLite's loose typing lets a number sit in a text column.
fn text(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Text(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(x) => Some(x.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &Path, sql: &str) {
        let conn = Connection::open(dir.join("session.db")).unwrap();
        conn.execute_batch(include_str!("schema.sql")).unwrap();
        conn.execute_batch(sql).unwrap();
    }

    #[test]
    fn no_database_is_no_todos_and_creates_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_todos(dir.path()).unwrap(), Todos::default());
        assert!(!dir.path().join("session.db").exists());
    }

    #[test]
    fn rows_in_creation_order_and_their_edges() {
        let dir = tempfile::tempdir().unwrap();
        database(
            dir.path(),
            "INSERT INTO todos (id, title, status, created_at) VALUES ('late', 'L', 'pending', '2026-01-02 00:00:00');
             INSERT INTO todos (id, title, status, created_at) VALUES ('beta', 'B', 'done', '2026-01-01 00:00:00');
             INSERT INTO todos (id, title, description, created_at) VALUES ('alpha', 'A', 'first', '2026-01-01 00:00:00');
             INSERT INTO todo_deps (todo_id, depends_on) VALUES ('beta', 'alpha');",
        );
        let todos = read_todos(dir.path()).unwrap();
        let ids: Vec<_> = todos.rows.iter().map(|r| r.id.clone().unwrap()).collect();
        // Same creation time: insertion order decides.
        assert_eq!(ids, ["beta", "alpha", "late"]);
        assert_eq!(todos.rows[1].description.as_deref(), Some("first"));
        assert_eq!(todos.rows[1].status.as_deref(), Some("pending"));
        assert_eq!(
            todos.dependencies,
            [TodoDependency {
                todo_id: "beta".into(),
                depends_on: "alpha".into()
            }]
        );
    }

    #[test]
    fn a_broken_table_reads_empty_without_hiding_the_other() {
        let dir = tempfile::tempdir().unwrap();
        database(
            dir.path(),
            "INSERT INTO todos (id, title) VALUES ('alpha', 'A');
             DROP TABLE todo_deps;",
        );
        let todos = read_todos(dir.path()).unwrap();
        assert_eq!(todos.rows.len(), 1);
        assert!(todos.dependencies.is_empty());
    }

    #[test]
    fn a_linked_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        database(elsewhere.path(), "");
        std::os::unix::fs::symlink(
            elsewhere.path().join("session.db"),
            dir.path().join("session.db"),
        )
        .unwrap();
        assert!(read_todos(dir.path()).is_err());
    }
}
