//! What every HTTP(S) provider shares, whatever its wire format: the configuration (`config`),
//! the credential of a call (`auth`), sending and reading within timeouts and size limits
//! (`transport`), the JSON shared by the formats (`wire`), and [`HttpCore`]'s retry loop.
//!
//! A provider (`openai`, `responses`, `anthropic`) owns an [`HttpCore`] and adds its URL, its
//! request body and the reading of its answer.

use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::{ModelError, ModelErrorKind, ModelEvent};

mod auth;
mod config;
mod transport;
pub(super) mod wire;

pub use config::{
    ApiFlavor, KeyCommand, OpenAiConfig, ResponseLimits, RetryPolicy, Timeouts, WireApi,
};
pub(super) use transport::BodyError;
use transport::{chain, is_loopback};

/// Longest server text quoted in an error message when it sent no `error.message`.
const MAX_QUOTE: usize = 500;

/// An HTTP client for one provider configuration.
#[derive(Debug, Clone)]
pub(super) struct HttpCore {
    /// The configuration.
    pub config: OpenAiConfig,
    /// The client (connection pool).
    pub client: reqwest::Client,
}

impl HttpCore {
    /// A client for `config` reaching `endpoint`; fails only when the HTTP client cannot be
    /// built.
    pub(super) fn new(config: OpenAiConfig, endpoint: &str) -> Result<Self, ModelError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.timeouts.request)
            .user_agent(concat!("turnstile/", env!("CARGO_PKG_VERSION")));
        if is_loopback(endpoint) {
            // A proxy from the environment must not get between us and a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| {
            ModelError::new(
                ModelErrorKind::Config,
                format!("cannot build the HTTP client: {}", chain(&e)),
            )
        })?;
        Ok(HttpCore { config, client })
    }

    /// POSTs `body` to `url` until a success status, retrying failures before any output
    /// (announced as [`ModelEvent::Retry`]); returns the response and when its attempt began.
    /// `extra` headers (the provider's own, then the call's) go after the credential.
    pub(super) async fn post(
        &self,
        url: &str,
        body: &[u8],
        stream: bool,
        extra: &[(String, String)],
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(reqwest::Response, Instant), ModelError> {
        // Once per call (a key command runs once, retries reuse its key).
        let headers = self.headers(stream, extra).await?;
        let mut attempt = 0u32;
        loop {
            let started = Instant::now();
            let (error, retry_after) = match self.send(url, &headers, body).await {
                // Committed: from here on nothing is ever sent again.
                Ok(response) if response.status().is_success() => return Ok((response, started)),
                Ok(response) => self.http_error(response).await,
                Err(error) => (error, None),
            };
            if !error.retryable || attempt >= self.config.retry.max_retries {
                return Err(error);
            }
            attempt += 1;
            let delay = self.config.retry.delay(attempt, retry_after);
            let _ = events.send(ModelEvent::Retry {
                attempt,
                delay_ms: delay.as_millis() as u64,
                reason: error.to_string(),
                status_code: error.status_code,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Reads a whole (non-streamed) body within `max_body_bytes`.
    pub(super) async fn read_whole_body(
        &self,
        response: reqwest::Response,
    ) -> Result<Vec<u8>, ModelError> {
        let limit = self.config.limits.max_body_bytes;
        self.read_body(response, limit).await.map_err(|e| match e {
            BodyError::TooLarge => ModelError::new(
                ModelErrorKind::TooLarge,
                format!(
                    "the model's response body is larger than the limit of {limit} bytes \
                     (max_body_bytes); the call was stopped there"
                ),
            ),
            BodyError::Model(e) => e,
        })
    }
}

/// The error of an SSE stream that could not be read.
pub(super) fn sse_error(e: super::sse::SseError) -> ModelError {
    match e {
        super::sse::SseError::TooLong(limit) => ModelError::new(
            ModelErrorKind::TooLarge,
            format!(
                "the model's stream sent a line longer than the limit of {limit} bytes \
                 (max_line_bytes); the call was stopped there"
            ),
        ),
        other => ModelError::new(ModelErrorKind::MalformedResponse, other.to_string()),
    }
}

/// `{base}/v1/{path}`, or `{base}/{path}` when the base already ends in `/v1` (Anthropic's
/// SDKs take the base without it; OpenAI-style bases carry it).
pub(super) fn v1_url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
    }
}

/// Percent-encodes what cannot stand in a URL path segment or query value.
pub(super) fn encode(text: &str) -> String {
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

/// Fails when an answer of `size` bytes (text and tool arguments) is past `limit`.
pub(super) fn check_answer_size(size: usize, limit: usize) -> Result<(), ModelError> {
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
pub(super) fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// The error of a body or event that is not the JSON the format expects.
pub(super) fn malformed(what: &str, error: &serde_json::Error, text: &str) -> ModelError {
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

    #[test]
    fn encoding_keeps_unreserved_characters() {
        assert_eq!(encode("gpt 4/x-1.5_~"), "gpt%204%2Fx-1.5_~");
    }
}
