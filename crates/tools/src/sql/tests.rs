use std::time::Duration;

use serde_json::json;

use super::format::js_number;
use super::*;
use crate::Tool;
use crate::events::ToolEvent;

fn setup() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = in_session(dir.path());
    (dir, ctx)
}

/// A context whose session directory is `dir` (a fresh database handle, as after a resume).
fn in_session(dir: &std::path::Path) -> ToolContext {
    let mut ctx = ToolContext::new(dir);
    ctx.database = std::sync::Arc::new(SessionDatabase::new(Some(dir.to_path_buf())));
    ctx
}

async fn sql(ctx: &ToolContext, query: &str) -> Result<String, ToolFailure> {
    SqlTool
        .run(json!({"description": "Test query", "query": query}), ctx)
        .await
        .map(|o| o.content)
}

async fn ok(ctx: &ToolContext, query: &str) -> String {
    sql(ctx, query).await.unwrap()
}

#[tokio::test]
async fn the_runtime_tables_exist_from_the_start() {
    let (dir, ctx) = setup();
    let names = ok(
        &ctx,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    )
    .await;
    assert_eq!(
        names,
        "3 row(s) returned:\n\n| name |\n| --- |\n| inbox_entries |\n| todo_deps |\n| todos |"
    );
    // The runtime's own text of each table, as sqlite_master keeps it.
    let todos = ok(&ctx, "SELECT sql FROM sqlite_master WHERE name = 'todos'").await;
    assert!(
        todos.contains("| CREATE TABLE todos (\n        id TEXT PRIMARY KEY,\n"),
        "{todos}"
    );
    assert_eq!(
        ok(&ctx, "SELECT name FROM sqlite_master WHERE type = 'table'").await,
        "3 row(s) returned:\n\n| name |\n| --- |\n| inbox_entries |\n| todos |\n| todo_deps |"
    );
    assert!(dir.path().join(DATABASE_FILE).is_file());
    assert_eq!(
        ok(&ctx, "INSERT INTO todos (id, title) VALUES ('a', 'First')").await,
        "1 row(s) inserted. Last inserted row ID: 1."
    );
    assert_eq!(
        ok(&ctx, "SELECT id, title, status, description FROM todos").await,
        "1 row(s) returned:\n\n| id | title | status | description |\n| --- | --- | --- | --- |\n| a | First | pending | NULL |"
    );
    let bad = sql(&ctx, "UPDATE todos SET status = 'later'")
        .await
        .unwrap_err();
    assert_eq!(bad.code.as_deref(), Some("failure"));
    assert_eq!(
        bad.message,
        "Error: CHECK constraint failed: status IN ('pending', 'in_progress', 'done', 'blocked')"
    );
}

#[tokio::test]
async fn each_kind_of_statement_has_its_answer() {
    let (_dir, ctx) = setup();
    assert_eq!(
        ok(&ctx, "CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB)").await,
        "Schema operation completed successfully."
    );
    assert_eq!(
        ok(
            &ctx,
            "INSERT INTO t VALUES (1, 'x', 1.5, NULL), (2, 'y|z', 2.0, x'0102ff')"
        )
        .await,
        "2 row(s) inserted. Last inserted row ID: 2."
    );
    assert_eq!(
        ok(&ctx, "SELECT * FROM t ORDER BY a").await,
        "2 row(s) returned:\n\n| a | b | c | d |\n| --- | --- | --- | --- |\n| 1 | x | 1.5 | NULL |\n| 2 | y|z | 2 | {\"0\":1,\"1\":2,\"2\":255} |"
    );
    assert_eq!(ok(&ctx, "UPDATE t SET b = 'w'").await, "2 row(s) updated.");
    assert_eq!(
        ok(&ctx, "DELETE FROM t WHERE a = 2").await,
        "1 row(s) deleted."
    );
    assert_eq!(
        ok(&ctx, "SELECT a FROM t WHERE a > 5").await,
        "Query returned 0 rows."
    );
    // Anything but SELECT and WITH is run, rows or not, and answered with the change count
    // the connection keeps (from the last change, as SQLite counts).
    assert_eq!(
        ok(&ctx, "WITH x AS (SELECT 1 AS a) SELECT a FROM x").await,
        "1 row(s) returned:\n\n| a |\n| --- |\n| 1 |"
    );
    assert_eq!(
        ok(&ctx, "PRAGMA table_info(t)").await,
        "Query executed successfully. Rows affected: 1."
    );
    assert_eq!(
        ok(&ctx, "INSERT INTO t (a) VALUES (7), (8) RETURNING a").await,
        "2 row(s) inserted. Last inserted row ID: 3."
    );
    assert_eq!(
        ok(&ctx, "-- a comment first\nselect 1").await,
        "Query executed successfully. Rows affected: 2."
    );
    assert_eq!(
        ok(&ctx, "DROP TABLE t").await,
        "Schema operation completed successfully."
    );
    let detailed = SqlTool
        .run(
            json!({"description": "d", "query": "SELECT 2 AS two"}),
            &ctx,
        )
        .await
        .unwrap()
        .detailed_content;
    assert_eq!(
        detailed.as_deref(),
        Some("SQL: SELECT 2 AS two\n\n1 row(s) returned:\n\n| two |\n| --- |\n| 2 |")
    );
}

#[tokio::test]
async fn several_statements_run_in_order() {
    let (_dir, ctx) = setup();
    let text = ok(
        &ctx,
        "CREATE TABLE u (x); INSERT INTO u VALUES ('a;b'); SELECT x FROM u",
    )
    .await;
    assert_eq!(
        text,
        "Executed 3 statement(s):\n\n1. CREATE\n   Schema operation completed successfully.\n\n2. INSERT\n   1 row(s) inserted. Last inserted row ID: 1.\n\n3. SELECT\n   1 row(s) returned:\n   \n   | x |\n   | --- |\n   | a;b |"
    );
    // The first failure ends the call; what ran before it stays.
    let err = sql(&ctx, "INSERT INTO u VALUES ('kept'); SELECT * FROM nope")
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "SQL Error after statement 2 (SELECT): Error: no such table: nope\n\nCompleted 1 statement(s) before failure:\n\n1. INSERT\n   1 row(s) inserted. Last inserted row ID: 2."
    );
    let err = sql(&ctx, "SELECT * FROM nope; SELECT 1").await.unwrap_err();
    assert_eq!(
        err.message,
        "SQL Error after statement 1 (SELECT): Error: no such table: nope"
    );
    assert!(
        ok(&ctx, "SELECT x FROM u WHERE x = 'kept'")
            .await
            .starts_with("1 row(s)")
    );
}

#[tokio::test]
async fn errors_in_the_runtime_wording() {
    let (_dir, ctx) = setup();
    let nope = sql(&ctx, "SELECT * FROM nope").await.unwrap_err();
    assert_eq!(nope.message, "Error: no such table: nope");
    assert_eq!(nope.code.as_deref(), Some("failure"));
    assert_eq!(
        sql(&ctx, "SELEC 1").await.unwrap_err().message,
        "Error: near \"SELEC\": syntax error"
    );
    for empty in ["", "   \n"] {
        assert_eq!(
            sql(&ctx, empty).await.unwrap_err().message,
            "Empty query provided"
        );
    }
    assert_eq!(
        sql(&ctx, " ; ").await.unwrap_err().message,
        "Error: statement has been finalized"
    );
    for (args, message) in [
        (json!({"description": "x"}), "\"query\": Required"),
        (json!({"query": "SELECT 1"}), "\"description\": Required"),
        (
            json!({"description": "x", "query": 5}),
            "\"query\": Expected string, received number",
        ),
    ] {
        let err = SqlTool.run(args, &ctx).await.unwrap_err();
        assert_eq!(err.message, message);
    }
    let outside = ToolContext::new(ctx.cwd.clone());
    let err = sql(&outside, "SELECT 1").await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("unavailable"));
}

#[test]
fn numbers_print_as_javascript_prints_them() {
    for (f, text) in [
        (1.5, "1.5"),
        (2.0, "2"),
        (-0.0, "0"),
        (10.0 / 3.0, "3.3333333333333335"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.25e22, "1.25e+22"),
        (0.000001, "0.000001"),
        (0.0000001, "1e-7"),
        (-2.5e-8, "-2.5e-8"),
        (123456.789, "123456.789"),
        (f64::INFINITY, "Infinity"),
    ] {
        assert_eq!(js_number(f), text, "{f:e}");
    }
}

#[tokio::test]
async fn the_database_outlives_the_call() {
    let (dir, ctx) = setup();
    ok(
        &ctx,
        "CREATE TABLE notes (n TEXT); INSERT INTO notes VALUES ('kept')",
    )
    .await;
    // A later call (another connection, as after a resume) reads what was committed.
    let again = in_session(dir.path());
    assert_eq!(
        ok(&again, "SELECT n FROM notes").await,
        "1 row(s) returned:\n\n| n |\n| --- |\n| kept |"
    );
}

#[tokio::test]
async fn rows_output_and_statements_are_capped() {
    let (_dir, ctx) = setup();
    let many = ok(
        &ctx,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) SELECT i FROM n",
    )
    .await;
    assert!(many.starts_with("5000 row(s) returned:"), "{}", &many[..40]);
    assert!(many.ends_with(&format!(
        "[... {} more rows not shown ...]",
        5000 - MAX_ROWS
    )));
    assert!(many.contains(&format!("| {MAX_ROWS} |")));
    assert!(!many.contains(&format!("| {} |", MAX_ROWS + 1)));

    let wide = ok(&ctx, "SELECT printf('%.*c', 1000000, 'x') AS big").await;
    assert!(wide.len() < MAX_OUTPUT_BYTES + 100, "{}", wide.len());
    assert!(wide.ends_with("bytes omitted ...]"));

    // Too many statements: refused before any runs.
    let statements = "INSERT INTO todos (id, title) VALUES (hex(randomblob(8)), 'x');"
        .repeat(MAX_STATEMENTS + 1);
    let err = sql(&ctx, &statements).await.unwrap_err();
    assert!(
        err.message
            .contains(&format!("at most {MAX_STATEMENTS} run")),
        "{err}"
    );
    assert_eq!(
        ok(&ctx, "SELECT count(*) AS n FROM todos").await,
        "1 row(s) returned:\n\n| n |\n| --- |\n| 0 |"
    );
    // A value past SQLite's length limit is refused rather than built.
    let err = sql(&ctx, "SELECT zeroblob(100000000)").await.unwrap_err();
    assert!(err.message.contains("too big"), "{err}");
}

#[tokio::test]
async fn an_endless_query_is_stopped() {
    let (_dir, ctx) = setup();
    let endless =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
    let timed = {
        let ctx = ctx.clone();
        tokio::task::spawn_blocking(move || run_call(endless, &ctx, Duration::from_millis(200)))
    };
    let err = timed.await.unwrap().unwrap_err();
    assert_eq!(err.code.as_deref(), Some("timeout"), "{err}");

    let cancel = ctx.cancel.clone();
    let running = {
        let ctx = ctx.clone();
        tokio::spawn(async move { sql(&ctx, endless).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.code.as_deref(), Some("cancelled"), "{err}");
}

#[tokio::test]
async fn a_link_in_place_of_the_database_is_refused() {
    let (dir, ctx) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim.db");
    std::fs::write(&victim, b"precious").unwrap();

    std::os::unix::fs::symlink(&victim, dir.path().join(DATABASE_FILE)).unwrap();
    let err = sql(&ctx, "CREATE TABLE x (a)").await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("unsafe_path"), "{err}");
    std::fs::remove_file(dir.path().join(DATABASE_FILE)).unwrap();

    std::fs::hard_link(&victim, dir.path().join(DATABASE_FILE)).unwrap();
    let err = sql(&ctx, "CREATE TABLE x (a)").await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("unsafe_path"), "{err}");
    std::fs::remove_file(dir.path().join(DATABASE_FILE)).unwrap();

    let journal = elsewhere.path().join("journal");
    std::os::unix::fs::symlink(&journal, dir.path().join("session.db-journal")).unwrap();
    let err = sql(&ctx, "CREATE TABLE x (a)").await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("unsafe_path"), "{err}");
    assert!(!journal.exists());
    std::fs::remove_file(dir.path().join("session.db-journal")).unwrap();

    // A session directory that is itself a link.
    let link = elsewhere.path().join("session-link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    let linked = in_session(&link);
    assert!(sql(&linked, "SELECT 1").await.is_err());

    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(
        ok(&ctx, "SELECT 1 AS one").await,
        "1 row(s) returned:\n\n| one |\n| --- |\n| 1 |"
    );
}

#[tokio::test]
async fn no_other_database_can_be_attached_or_written() {
    let (_dir, ctx) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE secrets (s TEXT); INSERT INTO secrets VALUES ('x')")
            .unwrap();
    }
    let attach = format!("ATTACH '{}' AS o; SELECT * FROM o.secrets", other.display());
    let err = sql(&ctx, &attach).await.unwrap_err();
    assert!(err.message.contains("too many attached databases"), "{err}");
    let created = elsewhere.path().join("created.db");
    for query in [
        format!("ATTACH '{}' AS c; CREATE TABLE c.t (a)", created.display()),
        format!("VACUUM INTO '{}'", created.display()),
    ] {
        assert!(sql(&ctx, &query).await.is_err(), "{query}");
        assert!(
            !created.exists(),
            "{query} created a file outside the session"
        );
    }
}

#[tokio::test]
async fn each_statement_that_writes_the_todo_tables_is_announced() {
    let (_dir, mut ctx) = setup();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ctx.events = Some(tx);
    let mut announced = async |query: &str| {
        let _ = sql(&ctx, query).await;
        let mut n = 0;
        while let Ok(event) = rx.try_recv() {
            assert_eq!(event, ToolEvent::TodosChanged);
            n += 1;
        }
        n
    };
    // As the runtime counts them (conformance scenario `sql`): one per statement that ran
    // and writes `todos` or `todo_deps`, matching rows or not; reads and failures none.
    for (query, expected) in [
        ("SELECT * FROM todos", 0),
        ("CREATE TABLE other (x)", 0),
        ("INSERT INTO other VALUES (1)", 0),
        ("INSERT INTO todos (id, title) VALUES ('a', 'A')", 1),
        (
            "INSERT INTO todos (id, title) VALUES ('b', 'B'); INSERT INTO todo_deps VALUES ('b', 'a'); SELECT * FROM todos; UPDATE todos SET status = 'done'",
            3,
        ),
        ("UPDATE todos SET title = 'x' WHERE id = 'none'", 1),
        (
            "INSERT INTO todos (id, title, status) VALUES ('c', 'C', 'later')",
            0,
        ),
        (
            "INSERT INTO todos (id, title) VALUES ('d', 'D'); SELECT * FROM nope",
            1,
        ),
        (
            "INSERT INTO TODOS (id, title) VALUES ('e', 'E') RETURNING id",
            1,
        ),
        // A trigger's body writes the table: the statement that fires it does.
        (
            "CREATE TRIGGER t AFTER INSERT ON other BEGIN UPDATE todos SET title = 'T'; END",
            0,
        ),
        ("INSERT INTO other VALUES (2)", 1),
        (
            "CREATE TEMP TABLE todos (x); INSERT INTO temp.todos VALUES (1)",
            0,
        ),
        ("DELETE FROM todo_deps; DELETE FROM main.todos", 2),
    ] {
        assert_eq!(announced(query).await, expected, "{query}");
    }
}
