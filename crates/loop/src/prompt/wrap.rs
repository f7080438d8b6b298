//! How a user message's text is wrapped before the model reads it, as the Copilot CLI wraps
//! it: the time of sending first (`<current_datetime>`), then the prompt, then a
//! `<system_reminder>` with what the offered tools need the model to know (the tables of the
//! `sql` tool). The result is recorded as the `user.message` `transformedContent`, so a
//! resume or a replay sends the same text without knowing when or with which tools it was.

use turnstile_journal::Timestamp;

/// The name of the tool whose tables the reminder lists.
pub const SQL_TOOL: &str = "sql";
/// The reminder line of the `sql` tool's tables at a session's first prompt.
pub const SQL_TABLES: &str = "<sql_tables>Available tables: todos, todo_deps</sql_tables>";
/// The same from the session's second prompt on: the runtime lists its `inbox_entries` table
/// once a first message has run (a resumed session's prompts included).
pub const SQL_TABLES_LATER: &str =
    "<sql_tables>Available tables: todos, todo_deps, inbox_entries</sql_tables>";

/// `prompt` as the model reads it, sent at `now` with the tools named `offered`; `first` when
/// it is the session's first prompt.
pub fn wrap_prompt<'a>(
    prompt: &str,
    now: &Timestamp,
    offered: impl IntoIterator<Item = &'a str>,
    first: bool,
) -> String {
    let mut out = format!(
        "<current_datetime>{}</current_datetime>\n\n{prompt}",
        current_datetime(now)
    );
    let reminders: Vec<&str> = offered
        .into_iter()
        .any(|name| name == SQL_TOOL)
        .then_some(if first { SQL_TABLES } else { SQL_TABLES_LATER })
        .into_iter()
        .collect();
    if !reminders.is_empty() {
        out.push_str("\n\n<system_reminder>\n");
        out.push_str(&reminders.join("\n"));
        out.push_str("\n</system_reminder>");
    }
    out
}

/// `now` as the Copilot CLI spells it in `<current_datetime>`: milliseconds and a numeric
/// offset (always UTC here, so the text does not depend on the machine's zone).
fn current_datetime(now: &Timestamp) -> String {
    let text = Timestamp::from_millis(now.millis()).to_text();
    match text.strip_suffix('Z') {
        Some(base) => format!("{base}+00:00"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_follows_the_time_of_sending() {
        let now = Timestamp::parse("2026-12-01T13:45:21.246Z").unwrap();
        assert_eq!(
            wrap_prompt("Attachment 1", &now, ["bash", "view"], true),
            "<current_datetime>2026-12-01T13:45:21.246+00:00</current_datetime>\n\nAttachment 1"
        );
    }

    #[test]
    fn the_sql_tables_are_reminded_only_when_sql_is_offered() {
        let now = Timestamp::from_millis(0);
        let with = wrap_prompt("Hi", &now, ["bash", "sql"], true);
        assert_eq!(
            with,
            "<current_datetime>1970-01-01T00:00:00.000+00:00</current_datetime>\n\nHi\n\n\
             <system_reminder>\n<sql_tables>Available tables: todos, todo_deps</sql_tables>\n\
             </system_reminder>"
        );
        // A tool whose name only contains "sql" is another tool.
        assert!(!wrap_prompt("Hi", &now, ["sqlite", "mysql"], true).contains("sql_tables"));
        assert!(wrap_prompt("Again", &now, ["sql"], false).contains(
            "<sql_tables>Available tables: todos, todo_deps, inbox_entries</sql_tables>"
        ));
    }
}
