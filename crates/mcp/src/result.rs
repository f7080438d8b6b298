//! A `tools/call` result as the model reads it: the text blocks joined as the runtime joins
//! them (no separator), other blocks described in a line, the whole bounded.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The most text one result gives the model; the rest is cut with a note.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;

/// What a call came to.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The server marked the result as a failure (`isError`).
    pub is_error: bool,
    /// The text the model reads.
    pub text: String,
    /// The result's content blocks as the server sent them (bounded like `text`).
    pub contents: Vec<Value>,
}

impl CallOutcome {
    /// The outcome of a result.
    pub fn from_result(result: &CallToolResult) -> Self {
        let mut text = String::new();
        let mut contents = Vec::new();
        let mut kept = 0usize;
        for block in &result.content {
            let piece = describe(block);
            if kept < MAX_RESULT_BYTES
                && let Ok(value) = serde_json::to_value(block)
            {
                contents.push(value);
            }
            kept = kept.saturating_add(piece.len());
            text.push_str(&piece);
        }
        if result.content.is_empty()
            && let Some(structured) = &result.structured_content
        {
            text = structured.to_string();
        }
        CallOutcome {
            is_error: result.is_error.unwrap_or(false),
            text: clip(text),
            contents,
        }
    }
}

/// The text of one block: a text block's text, a description of anything else.
fn describe(block: &ContentBlock) -> String {
    if let Some(text) = block.as_text() {
        return text.text.clone();
    }
    let value = serde_json::to_value(block).unwrap_or(Value::Null);
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match value.get("type").and_then(Value::as_str) {
        Some(kind @ ("image" | "audio")) => {
            let mime = field(&value, "mimeType").unwrap_or_else(|| "unknown type".into());
            let size = value
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |d| d.len() / 4 * 3);
            format!("[{kind}: {mime}, about {size} bytes]")
        }
        Some("resource") => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            match field(&resource, "text") {
                Some(text) => text,
                None => format!(
                    "[resource: {}]",
                    field(&resource, "uri").unwrap_or_default()
                ),
            }
        }
        Some("resource_link") => format!(
            "[resource link: {}]",
            field(&value, "uri").unwrap_or_default()
        ),
        _ => value.to_string(),
    }
}

fn clip(mut text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let mut cut = MAX_RESULT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let total = text.len();
    text.truncate(cut);
    text.push_str(&format!(
        "\n[output truncated: {total} bytes, the first {cut} shown]"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blocks_are_joined_as_the_runtime_joins_them() {
        let outcome = CallOutcome::from_result(&result(serde_json::json!({
            "content": [{"type": "text", "text": "echo: hi"}, {"type": "text", "text": "second block"}]
        })));
        assert_eq!(outcome.text, "echo: hisecond block");
        assert!(!outcome.is_error);
        assert_eq!(outcome.contents.len(), 2);
    }

    #[test]
    fn other_blocks_are_described() {
        let outcome = CallOutcome::from_result(&result(serde_json::json!({
            "isError": true,
            "content": [
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"}
            ]
        })));
        assert!(outcome.is_error);
        assert_eq!(
            outcome.text,
            "[image: image/png, about 3 bytes]inside[resource: file:///b][resource link: file:///c]"
        );
    }

    #[test]
    fn structured_content_alone_is_its_json() {
        let outcome = CallOutcome::from_result(&result(serde_json::json!({
            "content": [], "structuredContent": {"n": 3}
        })));
        assert_eq!(outcome.text, r#"{"n":3}"#);
    }

    #[test]
    fn huge_results_are_cut_on_a_char_boundary() {
        let big = "é".repeat(MAX_RESULT_BYTES);
        let outcome = CallOutcome::from_result(&result(serde_json::json!({
            "content": [{"type": "text", "text": big}]
        })));
        assert!(outcome.text.len() < MAX_RESULT_BYTES + 100);
        assert!(outcome.text.ends_with("shown]"));
    }
}
