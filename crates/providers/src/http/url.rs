//! Pieces of the URLs the providers call: the `/v1/` segment some bases carry and some do
//! not, and percent-encoding for a model or API version inside a URL.

/// `{base}/v1/{path}`, or `{base}/{path}` when the base already ends in `/v1` (Anthropic's
/// SDKs take the base without it; OpenAI-style bases carry it).
pub(crate) fn v1_url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
    }
}

/// Percent-encodes what cannot stand in a URL path segment or query value.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_keeps_unreserved_characters() {
        assert_eq!(encode("gpt 4/x-1.5_~"), "gpt%204%2Fx-1.5_~");
    }
}
