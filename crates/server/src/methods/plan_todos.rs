//! `session.plan.readSqlTodos` and `session.plan.readSqlTodosWithDependencies`: the todo
//! tables of the session's `session.db` (the `sql` tool's database, where the runtime keeps
//! it), read back for a client after `session.todos_changed`. Nothing is changed, so nothing
//! is recorded; the database itself is the session's state a resume and a fork find.

use serde_json::{Map, Value, json};
use turnstile_tools::sql::{TodoRow, Todos, read_todos};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

fn todos(ctx: &Ctx<'_>, params: &SessionIdParams) -> Result<Todos, RpcError> {
    let session = open_session(ctx, params.id())?;
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    read_todos(&dir).map_err(|e| RpcError::new(codes::SESSION_FAILED, e.message))
}

/// A row as the runtime answers it: the columns it holds, camelCase, the empty ones left out.
fn row(todo: TodoRow) -> Value {
    let mut out = Map::new();
    for (name, value) in [
        ("id", todo.id),
        ("title", todo.title),
        ("description", todo.description),
        ("status", todo.status),
        ("createdAt", todo.created_at),
    ] {
        if let Some(value) = value {
            out.insert(name.into(), Value::String(value));
        }
    }
    Value::Object(out)
}

/// `session.plan.readSqlTodos`: `{rows}`.
pub(crate) fn read(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let todos = todos(ctx, &params)?;
    let rows: Vec<Value> = todos.rows.into_iter().map(row).collect();
    Ok(json!({ "rows": rows }))
}

/// `session.plan.readSqlTodosWithDependencies`: `{rows, dependencies: [{todoId, dependsOn}]}`.
pub(crate) fn read_with_dependencies(
    ctx: &Ctx<'_>,
    params: SessionIdParams,
) -> Result<Value, RpcError> {
    let todos = todos(ctx, &params)?;
    let rows: Vec<Value> = todos.rows.into_iter().map(row).collect();
    let dependencies: Vec<Value> = todos
        .dependencies
        .into_iter()
        .map(|d| json!({"todoId": d.todo_id, "dependsOn": d.depends_on}))
        .collect();
    Ok(json!({ "rows": rows, "dependencies": dependencies }))
}
