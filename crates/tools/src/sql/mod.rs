//! `sql`: queries on the session's own SQLite database, as the runtime offers it.
//!
//! - The database is `session.db` in the session directory ([`SessionDatabase`]), created
//!   with the runtime's tables on first use and kept open for the session; it is part of the
//!   session's state, so a resume finds what was committed (each statement commits on its own
//!   unless the query opens a transaction).
//! - A query may hold several statements (`split`); they run in order and the first failure
//!   ends the call, what ran before it staying, as in the runtime.
//! - A statement starting with `SELECT` or `WITH` answers with its rows; any other is run
//!   and answered with what it changed (the runtime's split, by the first word).
//! - Bounded: at most [`MAX_STATEMENTS`] statements a call, [`MAX_ROWS`] rows shown a
//!   statement, [`MAX_OUTPUT_BYTES`] of result text, [`TIME_CAP`] for the whole call (then the
//!   query is interrupted), a busy timeout when another process holds the database, and
//!   SQLite's length limit on one value.
//! - Result texts follow the runtime (`format`); each statement that writes the todo tables
//!   is announced to the session (`todos`, `session.todos_changed`); a client reads the
//!   tables back through `todo_read`.

mod database;
mod format;
mod split;
mod todo_read;
mod todos;
mod watchdog;

use std::time::Duration;

use rusqlite::Connection;
use serde_json::{Value, json};

use super::events::ToolEvent;
use super::{BlockingTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};
pub use database::{DATABASE_FILE, SessionDatabase};
use format::Outcome;
pub use todo_read::{MAX_TODO_ROWS, TodoDependency, TodoRow, Todos, read_todos};

/// The `sql` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqlTool;

/// Statements one call may hold; a longer query is refused before any runs.
pub const MAX_STATEMENTS: usize = 100;
/// Rows of one statement kept for the answer; the rest are counted, not shown.
pub const MAX_ROWS: usize = 1000;
/// Bytes of result text at most; past that the text is cut and the cut marked.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// How long one call may run before it is interrupted.
pub const TIME_CAP: Duration = Duration::from_secs(30);
/// How long a statement waits for a lock another connection holds.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The checked arguments of a call.
#[derive(Debug)]
pub struct SqlArgs {
    query: String,
}

impl BlockingTool for SqlTool {
    const NAME: &'static str = "sql";
    type Args = SqlArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: Self::NAME.into(),
            description: "Runs SQL on this session's SQLite database (kept with the session). \
                It has the tables `todos` (id, title, description, status: pending, in_progress, \
                done or blocked), `todo_deps` (todo_id, depends_on) and `inbox_entries`; create \
                more as needed. Several statements separated by `;` run in order."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "What the query does, in 2 to 5 words."},
                    "query": {"type": "string", "description": "The SQL to run (one or more statements)."}
                },
                "required": ["description", "query"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, _ctx: &ToolContext) -> Result<SqlArgs, ToolFailure> {
        required_string(args, "description")?;
        Ok(SqlArgs {
            query: required_string(args, "query")?.to_owned(),
        })
    }

    fn work(a: SqlArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        run_call(&a.query, ctx, TIME_CAP)
    }

    fn summary(args: &Value, _ctx: &ToolContext) -> Option<String> {
        args.get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// A required string argument, refused in the runtime's words (`"query": Required`).
fn required_string<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolFailure> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        None => Err(format::failure(format!("\"{name}\": Required"))),
        Some(other) => Err(format::failure(format!(
            "\"{name}\": Expected string, received {}",
            format::json_type(other)
        ))),
    }
}

/// One call: runs `query` on the session's database, interrupted after `cap`.
fn run_call(query: &str, ctx: &ToolContext, cap: Duration) -> Result<ToolOutput, ToolFailure> {
    if query.trim().is_empty() {
        return Err(format::failure(format::EMPTY_QUERY));
    }
    let statements = split::statements(query);
    if statements.len() > MAX_STATEMENTS {
        return Err(format::failure(format!(
            "The query has {} statements; at most {MAX_STATEMENTS} run in one call. Split it into several calls.",
            statements.len()
        )));
    }
    ctx.database.with(|conn| {
        let watch = watchdog::Watchdog::start(conn, ctx, cap);
        let todos = todos::TodoWatch::start(conn);
        let result = run_statements(conn, &statements, &mut |ran| {
            if todos.take() && ran {
                ctx.notify(ToolEvent::TodosChanged);
            }
        });
        drop(todos);
        if ctx.cancel.is_cancelled() {
            return Err(ToolFailure::cancelled());
        }
        if result.is_err() && watch.timed_out() {
            return Err(ToolFailure::new(
                format!(
                    "The query ran longer than {} ms and was stopped.",
                    cap.as_millis()
                ),
                "timeout",
            ));
        }
        let content = format::cap(result?, MAX_OUTPUT_BYTES);
        Ok(ToolOutput {
            detailed_content: Some(format!("SQL: {query}\n\n{content}")),
            content,
            ..Default::default()
        })
    })
}

/// Runs the statements in order; the first failure is the call's answer. `after` is told
/// after each statement whether it ran.
fn run_statements(
    conn: &Connection,
    statements: &[&str],
    after: &mut dyn FnMut(bool),
) -> Result<String, ToolFailure> {
    let Some(first) = statements.first() else {
        // Only separators: the runtime's answer for a query it found nothing to run in.
        return Err(format::failure(format::NOTHING_TO_RUN));
    };
    let mut run = |sql: &str| {
        let outcome = run_statement(conn, sql);
        after(outcome.is_ok());
        outcome
    };
    if statements.len() == 1 {
        return run(first)
            .map(|o| o.text())
            .map_err(|e| format::failure(format::error_text(&e)));
    }
    let mut done = Vec::with_capacity(statements.len());
    for sql in statements {
        match run(sql) {
            Ok(outcome) => done.push(outcome),
            Err(e) => {
                return Err(format::failure(format::several_failed(
                    &done,
                    &format::verb(sql),
                    &e,
                )));
            }
        }
    }
    Ok(format::several(&done))
}

/// Runs one statement: `SELECT`/`WITH` are read (the first [`MAX_ROWS`] rows kept), anything
/// else is stepped to its end and its effect counted.
fn run_statement(conn: &Connection, sql: &str) -> Result<Outcome, rusqlite::Error> {
    let verb = format::verb(sql);
    let mut stmt = conn.prepare(sql)?;
    if matches!(verb.as_str(), "SELECT" | "WITH") {
        let columns: Vec<String> = stmt
            .column_names()
            .iter()
            .map(|c| (*c).to_owned())
            .collect();
        let width = columns.len();
        let mut rows = stmt.raw_query();
        let mut kept = Vec::new();
        let mut total = 0usize;
        let mut bytes = 0usize;
        while let Some(row) = rows.next()? {
            total += 1;
            // Past the caps rows are only counted: the text would be cut anyway.
            if kept.len() < MAX_ROWS && bytes <= MAX_OUTPUT_BYTES {
                let mut cells = Vec::with_capacity(width);
                for i in 0..width {
                    let cell = format::cell(row.get_ref(i)?, MAX_OUTPUT_BYTES);
                    bytes += cell.len() + 3;
                    cells.push(cell);
                }
                kept.push(cells);
            }
        }
        return Ok(Outcome::Rows {
            verb,
            columns,
            rows: kept,
            total,
        });
    }
    // Stepped rather than executed: `INSERT ... RETURNING` and `PRAGMA` yield rows too.
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    drop(rows);
    Ok(Outcome::Done {
        changed: conn.changes(),
        last_row_id: conn.last_insert_rowid(),
        verb,
    })
}

#[cfg(test)]
mod tests;
