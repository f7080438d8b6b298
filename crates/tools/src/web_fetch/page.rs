//! The answer to a fetch: the page's text (markdown unless raw), the part from `start_index`
//! of at most `max_length` characters, and a note when more follows.

use super::fetch::Fetched;
use super::markdown;

/// The text the model reads for `fetched`.
pub fn answer(fetched: &Fetched, raw: bool, start_index: usize, max_length: usize) -> String {
    let mut body = String::from_utf8_lossy(&fetched.body).into_owned();
    if fetched.cut {
        // The page goes on past what was read; say so where it stops.
        body.push_str(&format!(
            "\n\n[... the page is longer than {} bytes; the rest was not read ...]",
            fetched.body.len()
        ));
    }
    let html = markdown::is_html(fetched.content_type.as_deref(), &body);
    // What the runtime says before content it did not simplify.
    let (lead, text) = if raw {
        ("Here is the raw content:\n".to_owned(), body)
    } else if html {
        (String::new(), markdown::to_markdown(&body))
    } else {
        let kind = fetched
            .content_type
            .as_deref()
            .and_then(|ct| ct.split(';').next())
            .map(str::trim)
            .filter(|ct| !ct.is_empty())
            .unwrap_or("unknown");
        (
            format!(
                "Content type {kind} cannot be simplified to markdown. Here is the raw content:\n"
            ),
            body,
        )
    };
    let total = text.chars().count();
    let part: String = text.chars().skip(start_index).take(max_length).collect();
    let end = start_index + part.chars().count();
    let redirected = fetched
        .redirected_from
        .as_ref()
        .map(|from| format!(" (redirected from {from})"))
        .unwrap_or_default();
    let mut out = format!("{lead}Contents of {}{redirected}:\n", fetched.url);
    if start_index >= total && total > 0 {
        out.push_str("<error>No more content available.</error>");
        return out;
    }
    out.push_str(&part);
    if end < total {
        out.push_str(&format!(
            "\n\n<note>Content truncated. Call the fetch tool with a start_index of {end} to get more content.</note>"
        ));
    }
    out
}
