//! The errors of an answer that is not what was asked for: not the expected JSON, past a size
//! limit, a broken event stream; with server text quoted within a bound. Every wire and the
//! transport report through these, so a failure reads the same whichever API gave it.

use crate::sse::SseError;
use crate::{ModelError, ModelErrorKind};

/// Longest server text quoted in an error message when it sent no `error.message`.
const MAX_QUOTE: usize = 500;

/// The error of an SSE stream that could not be read.
pub(crate) fn sse_error(e: SseError) -> ModelError {
    match e {
        SseError::TooLong(limit) => ModelError::new(
            ModelErrorKind::TooLarge,
            format!(
                "the model's stream sent a line longer than the limit of {limit} bytes \
                 (max_line_bytes); the call was stopped there"
            ),
        ),
        other => ModelError::new(ModelErrorKind::MalformedResponse, other.to_string()),
    }
}

/// Fails when an answer of `size` bytes (text and tool arguments) is past `limit`.
pub(crate) fn check_answer_size(size: usize, limit: usize) -> Result<(), ModelError> {
    if size > limit {
        return Err(ModelError::new(
            ModelErrorKind::TooLarge,
            format!(
                "the model's answer (text and tool call arguments) is larger than the limit of \
                 {limit} bytes (max_answer_bytes); the call was stopped there"
            ),
        ));
    }
    Ok(())
}

/// At most [`MAX_QUOTE`] characters of server text.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// The error of a body or event that is not the JSON the format expects.
pub(crate) fn malformed(what: &str, error: &serde_json::Error, text: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::MalformedResponse,
        format!("{what} is not the expected JSON ({error}): {}", quote(text)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_on_char_boundaries() {
        let long = "é".repeat(MAX_QUOTE + 10);
        let q = quote(&long);
        assert!(q.ends_with("..."));
        assert_eq!(q.chars().count(), MAX_QUOTE + 3);
    }
}
