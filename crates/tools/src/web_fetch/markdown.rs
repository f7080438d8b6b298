//! HTML to markdown with `htmd` (a CommonMark converter on html5ever): scripts, styles and
//! other non-content elements are dropped, as the runtime's simplified markdown drops them.

/// Elements whose content is not part of the page's text.
const SKIPPED: [&str; 7] = [
    "script", "style", "noscript", "template", "head", "svg", "iframe",
];

/// `html` as markdown, after the page's title as the runtime puts it; a page the converter
/// cannot handle comes back as it is.
pub fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let body = match converter.convert(html) {
        Ok(markdown) => markdown.trim().to_owned(),
        Err(_) => return html.to_owned(),
    };
    match title(html) {
        Some(title) => format!("{title}\n\n{body}"),
        None => body,
    }
}

/// The text of the page's `<title>`, if it has one.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let text = html
        .get(start..end)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then_some(text)
}

/// Whether a body is HTML: by its content type, else by how it starts.
pub fn is_html(content_type: Option<&str>, body: &str) -> bool {
    match content_type {
        Some(ct) => {
            let ct = ct.to_ascii_lowercase();
            ct.contains("text/html") || ct.contains("application/xhtml")
        }
        None => {
            let head: String = body.trim_start().chars().take(15).collect();
            let head = head.to_ascii_lowercase();
            head.starts_with("<!doctype html") || head.starts_with("<html")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown() {
        let md = to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>Some <b>bold</b> and <a href=\"/x\">a link</a>.</p><script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>",
        );
        assert!(md.starts_with("T\n\n# Title"), "{md}");
        assert!(md.contains("Some **bold** and [a link](/x)."), "{md}");
        assert!(!md.contains("alert"), "{md}");
        assert!(!md.contains("p{}"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
    }

    #[test]
    fn html_is_told_by_type_or_start() {
        assert!(is_html(Some("text/html; charset=utf-8"), ""));
        assert!(!is_html(Some("application/json"), "<html>"));
        assert!(is_html(None, "  <!DOCTYPE html><p>x"));
        assert!(!is_html(None, "plain"));
    }
}
