//! The result texts of `sql`, as the runtime writes them: row counts and markdown tables,
//! values printed the way JavaScript prints them (the runtime's numbers are JS numbers).

use rusqlite::types::ValueRef;

use crate::ToolFailure;

/// The answer to a blank query.
pub(super) const EMPTY_QUERY: &str = "Empty query provided";
/// The answer to a query of separators only (`;`), in the runtime's words.
pub(super) const NOTHING_TO_RUN: &str = "Error: statement has been finalized";

/// What one statement did.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// A statement that returns rows (`SELECT`, `PRAGMA x`, `... RETURNING`).
    Rows {
        /// Its first keyword, upper case.
        verb: String,
        /// The column names.
        columns: Vec<String>,
        /// The rows kept, each cell already printed.
        rows: Vec<Vec<String>>,
        /// How many rows there were in all.
        total: usize,
    },
    /// Any other statement.
    Done {
        /// The connection's count of rows the last `INSERT`, `UPDATE` or `DELETE` changed.
        changed: u64,
        /// The connection's last inserted rowid.
        last_row_id: i64,
        /// Its first keyword, upper case.
        verb: String,
    },
}

impl Outcome {
    /// The statement's first word.
    pub(super) fn verb(&self) -> &str {
        match self {
            Outcome::Rows { verb, .. } | Outcome::Done { verb, .. } => verb,
        }
    }

    /// The answer for this statement alone.
    pub(super) fn text(&self) -> String {
        match self {
            Outcome::Rows { total: 0, .. } => "Query returned 0 rows.".to_owned(),
            Outcome::Rows {
                columns,
                rows,
                total,
                ..
            } => {
                let mut out = format!("{total} row(s) returned:\n\n");
                out.push_str(&table(columns, rows));
                if *total > rows.len() {
                    out.push_str(&format!(
                        "\n[... {} more rows not shown ...]",
                        total - rows.len()
                    ));
                }
                out
            }
            Outcome::Done {
                changed,
                last_row_id,
                verb,
            } => match verb.as_str() {
                "INSERT" => {
                    format!("{changed} row(s) inserted. Last inserted row ID: {last_row_id}.")
                }
                "UPDATE" => format!("{changed} row(s) updated."),
                "DELETE" => format!("{changed} row(s) deleted."),
                "CREATE" | "DROP" | "ALTER" => {
                    "Schema operation completed successfully.".to_owned()
                }
                _ => format!("Query executed successfully. Rows affected: {changed}."),
            },
        }
    }
}

/// The answer for several statements: each numbered with its keyword, its text indented.
pub(super) fn several(outcomes: &[Outcome]) -> String {
    format!(
        "Executed {} statement(s):\n\n{}",
        outcomes.len(),
        entries(outcomes)
    )
}

/// The answer when statement `done.len() + 1` of several failed with `e`.
pub(super) fn several_failed(done: &[Outcome], verb: &str, e: &rusqlite::Error) -> String {
    let mut out = format!(
        "SQL Error after statement {} ({verb}): {}",
        done.len() + 1,
        error_text(e)
    );
    if !done.is_empty() {
        out.push_str(&format!(
            "\n\nCompleted {} statement(s) before failure:\n\n{}",
            done.len(),
            entries(done)
        ));
    }
    out
}

/// `1. VERB` and the statement's answer indented by three spaces (every line), one entry
/// after another with an empty line between.
fn entries(outcomes: &[Outcome]) -> String {
    outcomes
        .iter()
        .enumerate()
        .map(|(i, outcome)| {
            let text: Vec<String> = outcome
                .text()
                .split('\n')
                .map(|l| format!("   {l}"))
                .collect();
            format!("{}. {}\n{}", i + 1, outcome.verb(), text.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A markdown table of the rows.
fn table(columns: &[String], rows: &[Vec<String>]) -> String {
    let mut lines = Vec::with_capacity(rows.len() + 2);
    lines.push(format!("| {} |", columns.join(" | ")));
    lines.push(format!("| {} |", vec!["---"; columns.len()].join(" | ")));
    for row in rows {
        lines.push(format!("| {} |", row.join(" | ")));
    }
    lines.join("\n")
}

/// One value as the runtime prints it; text longer than `cap` bytes is cut.
pub(super) fn cell(value: ValueRef<'_>, cap: usize) -> String {
    match value {
        ValueRef::Null => "NULL".to_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => js_number(f),
        ValueRef::Text(bytes) => {
            let end = bytes.len().min(cap);
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        }
        ValueRef::Blob(bytes) => {
            // JSON.stringify of a byte array: an object keyed by index.
            let mut out = String::from("{");
            for (i, b) in bytes.iter().enumerate() {
                if out.len() > cap {
                    break;
                }
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&format!("\"{i}\":{b}"));
            }
            out.push('}');
            out
        }
    }
}

/// A float as JavaScript's `String(number)` prints it: the shortest digits that read back
/// the same, in plain notation from 1e-7 to 1e21 and in exponent notation outside.
pub(super) fn js_number(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if f == 0.0 {
        return "0".to_owned(); // -0 prints as 0 too
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e-7", "5e0".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    let k = digits.len() as i32;
    let n = exp + 1; // the decimal point sits after n digits
    let body = if (1..=21).contains(&n) && k <= n {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if (1..=21).contains(&n) {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if (-5..=0).contains(&n) {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

/// The statement's first word, upper case: what the runtime calls its type.
pub(super) fn verb(sql: &str) -> String {
    sql.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

/// An SQLite error as the runtime shows it: `Error: ` and SQLite's message.
pub(super) fn error_text(e: &rusqlite::Error) -> String {
    let message = match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    format!("Error: {message}")
}

/// A failed call as the runtime reports it (code "failure").
pub(super) fn failure(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message, "failure")
}

/// A JSON value's type as the runtime's argument check names it.
pub(super) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), the cut marked.
pub(super) fn cap(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... {} bytes omitted ...]",
        &text[..end],
        text.len() - end
    )
}
