//! Which statements write the todo tables: the session announces each one that ran with
//! `session.todos_changed`, the runtime's signal for clients to read the tables again.
//!
//! SQLite's authorizer is told every table a statement would write when it is prepared,
//! trigger bodies included, so a statement counts by what it writes, also when it matches no
//! row (`UPDATE todos … WHERE` nothing: the runtime announces it too); a statement that
//! fails announces nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

/// The tables whose writes are announced.
const TODO_TABLES: [&str; 2] = ["todos", "todo_deps"];

/// Watches the statements prepared on a connection for writes to the todo tables, until
/// dropped.
pub struct TodoWatch<'c> {
    conn: &'c Connection,
    writes: Arc<AtomicBool>,
}

impl<'c> TodoWatch<'c> {
    /// Starts watching `conn`.
    pub fn start(conn: &'c Connection) -> Self {
        let writes = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&writes);
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            if writes_todos(&ctx) {
                seen.store(true, Ordering::SeqCst);
            }
            Authorization::Allow
        }));
        TodoWatch { conn, writes }
    }

    /// Whether what was prepared since the last call writes a todo table (and forgets it).
    pub fn take(&self) -> bool {
        self.writes.swap(false, Ordering::SeqCst)
    }
}

impl Drop for TodoWatch<'_> {
    fn drop(&mut self) {
        self.conn
            .authorizer(None::<fn(AuthContext<'_>) -> Authorization>);
    }
}

fn writes_todos(ctx: &AuthContext<'_>) -> bool {
    // A temporary table of the same name is not the session's.
    if ctx.database_name == Some("temp") {
        return false;
    }
    let table = match ctx.action {
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
        | AuthAction::DropTable { table_name } => table_name,
        _ => return false,
    };
    TODO_TABLES.iter().any(|t| t.eq_ignore_ascii_case(table))
}
