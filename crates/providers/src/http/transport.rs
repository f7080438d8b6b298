//! HTTP: [`HttpCore`], the client of one provider configuration: sending a request within the
//! request timeout (over the network, or through the configuration's [`Exchange`](super::exchange::Exchange)),
//! reading bodies within the stall timeout and size limits, and turning HTTP failures into
//! [`ModelError`]s. (Retries are `retry`'s, over these.)

use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::auth::credential;
use super::config::{ApiFlavor, OpenAiConfig};
use super::errors::quote;
use super::exchange::{ExchangeRequest, ExchangeResponse};
use super::wire::ErrorBody;
use crate::{CallOrigin, ModelError, ModelErrorKind};

/// Most of an error body read for its message (the rest is not needed to say what failed).
const MAX_ERROR_BODY: usize = 1024 * 1024;

/// The `anthropic-version` sent to the Messages API (the version its published examples use).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Why a body could not be read whole.
pub(crate) enum BodyError {
    /// It is larger than the limit.
    TooLarge,
    /// The transfer failed.
    Model(ModelError),
}

/// A response head with its body still to read: from the network or from the
/// configuration's exchange.
pub(crate) enum Response {
    /// This process's HTTP client made the request.
    Network(reqwest::Response),
    /// The configuration's exchange made it.
    Exchanged(ExchangeResponse),
}

impl Response {
    /// The HTTP status.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Response::Network(r) => r.status().as_u16(),
            Response::Exchanged(r) => r.status,
        }
    }

    /// Whether the status is a success (2xx).
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status())
    }

    /// The first value of header `name`, when it is text.
    fn header(&self, name: &str) -> Option<String> {
        match self {
            Response::Network(r) => r
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            Response::Exchanged(r) => r.header(name).map(str::to_owned),
        }
    }

    /// The announced body length, when there is one.
    fn content_length(&self) -> Option<u64> {
        match self {
            Response::Network(r) => r.content_length(),
            Response::Exchanged(r) => r.header("content-length")?.trim().parse().ok(),
        }
    }

    /// The next piece of the body; `None` at its end.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, ModelError> {
        match self {
            Response::Network(r) => r.chunk().await.map(|c| c.map(|b| b.to_vec())).map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Stream,
                    format!("the connection broke during the response: {}", chain(&e)),
                )
            }),
            Response::Exchanged(r) => r.body.chunk().await,
        }
    }
}

/// An HTTP client for one provider configuration.
#[derive(Debug, Clone)]
pub(crate) struct HttpCore {
    /// The configuration.
    pub config: OpenAiConfig,
    /// The client (connection pool).
    pub client: reqwest::Client,
}

impl HttpCore {
    /// A client for `config` reaching `endpoint`; fails only when the HTTP client cannot be
    /// built.
    pub(crate) fn new(config: OpenAiConfig, endpoint: &str) -> Result<Self, ModelError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.timeouts.request)
            .user_agent(user_agent(&config));
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

    /// Reads a whole (non-streamed) body within `max_body_bytes`.
    pub(crate) async fn read_whole_body(&self, response: Response) -> Result<Vec<u8>, ModelError> {
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

    /// The headers of one call: content type and accept, the credential, the Copilot CLI's
    /// identifying headers for the Copilot endpoint (`anthropic-version` for Anthropic), the
    /// provider's headers, then the call's own (each later one replaces an earlier one of the same name).
    pub(crate) async fn headers(
        &self,
        stream: bool,
        extra: &[(String, String)],
    ) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static(if stream {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        if let Some((name, value)) = credential(&self.config).await? {
            headers.insert(name, value);
        }
        match self.config.flavor {
            ApiFlavor::Copilot => {
                for (name, value) in copilot_headers() {
                    // Fixed names and values that are valid headers (a UUID, ASCII texts).
                    if let (Ok(name), Ok(value)) = (
                        HeaderName::from_bytes(name.as_bytes()),
                        HeaderValue::from_str(&value),
                    ) {
                        headers.insert(name, value);
                    }
                }
            }
            // The Messages API refuses a request without its version (the provider's or the
            // call's headers may name another one).
            ApiFlavor::Anthropic => {
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
            ApiFlavor::OpenAi | ApiFlavor::Azure { .. } => {}
        }
        for (name, value) in self.config.headers.iter().chain(extra) {
            let bad = || {
                ModelError::new(
                    ModelErrorKind::Config,
                    format!(
                        "the request header {name:?} is not a valid HTTP header name and value"
                    ),
                )
            };
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
            let value = HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// Sends the request of a call made by `origin` and waits for the response head: through
    /// the configuration's exchange when it has one, else over the network.
    pub(crate) async fn send(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
        origin: &CallOrigin,
    ) -> Result<Response, ModelError> {
        let Some(exchange) = &self.config.exchange else {
            let builder = self
                .client
                .post(url)
                .headers(headers.clone())
                .body(body.to_vec());
            return self
                .response_head(url, builder)
                .await
                .map(Response::Network);
        };
        // What the HTTP client would add itself goes in too: the other side makes the request.
        let mut pairs = vec![("user-agent".to_owned(), user_agent(&self.config))];
        pairs.extend(headers.iter().filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        }));
        let request = ExchangeRequest {
            method: "POST",
            url: url.to_owned(),
            headers: pairs,
            body: body.to_vec(),
            origin: origin.clone(),
        };
        let limit = self.config.timeouts.request;
        match tokio::time::timeout(limit, exchange.0.send(request)).await {
            Err(_) => Err(no_response(url, limit)),
            Ok(answer) => answer.map(Response::Exchanged),
        }
    }

    /// Sends a built request and waits for the response head within the request timeout.
    pub(crate) async fn response_head(
        &self,
        url: &str,
        builder: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ModelError> {
        let limit = self.config.timeouts.request;
        match tokio::time::timeout(limit, builder.send()).await {
            Err(_) => Err(no_response(url, limit)),
            Ok(Err(e)) => Err(ModelError {
                kind: if e.is_timeout() {
                    ModelErrorKind::Timeout
                } else {
                    ModelErrorKind::Connection
                },
                status_code: None,
                message: format!("cannot reach {url}: {}", chain(&e)),
                retryable: true,
            }),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// The error of a non-2xx answer, and the server's `Retry-After` when it sent one.
    pub(crate) async fn http_error(&self, response: Response) -> (ModelError, Option<Duration>) {
        let code = response.status();
        let retry_after = retry_after(|name| response.header(name));
        let body = self
            .read_body(response, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let message = ErrorBody::message_of(&body).unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&body);
            let text = text.trim();
            if text.is_empty() {
                let reason = reqwest::StatusCode::from_u16(code)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                format!("HTTP {code} {reason}").trim_end().to_string()
            } else {
                quote(text)
            }
        });
        let retryable = matches!(code, 408 | 409 | 429) || (500..600).contains(&code);
        (
            ModelError {
                kind: ModelErrorKind::Http,
                status_code: Some(code),
                message,
                retryable,
            },
            retry_after,
        )
    }

    /// Reads a whole body of at most `limit` bytes, each piece within the stall timeout;
    /// stops reading as soon as the limit is passed.
    pub(crate) async fn read_body(
        &self,
        mut response: Response,
        limit: usize,
    ) -> Result<Vec<u8>, BodyError> {
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(BodyError::TooLarge);
        }
        let mut body = Vec::new();
        loop {
            match self.next_chunk(&mut response).await {
                Err(e) => return Err(BodyError::Model(e)),
                Ok(None) => return Ok(body),
                Ok(Some(bytes)) => {
                    if body.len() + bytes.len() > limit {
                        return Err(BodyError::TooLarge);
                    }
                    body.extend_from_slice(&bytes);
                }
            }
        }
    }

    /// The next piece of a whole body; a stall or a cut connection is an error (never
    /// retried).
    pub(crate) async fn next_chunk(
        &self,
        response: &mut Response,
    ) -> Result<Option<Vec<u8>>, ModelError> {
        let idle = self.config.timeouts.stall;
        self.next_chunk_within(response, idle, Instant::now()).await
    }

    /// The next piece of a body, failing once `idle` has passed since `progressed` (the last
    /// useful progress of the answer; bytes that made none do not move it). A timeout or a
    /// cut connection is an error (never retried: output may have begun).
    pub(crate) async fn next_chunk_within(
        &self,
        response: &mut Response,
        idle: Duration,
        progressed: Instant,
    ) -> Result<Option<Vec<u8>>, ModelError> {
        let left = idle.saturating_sub(progressed.elapsed());
        match tokio::time::timeout(left, response.chunk()).await {
            Err(_) => Err(ModelError::new(
                ModelErrorKind::Timeout,
                format!(
                    "the response stalled: no answer text, tool call or finish arrived for {} ms \
                     (--model-idle-timeout)",
                    idle.as_millis()
                ),
            )),
            Ok(answer) => answer,
        }
    }
}

/// The error of a request whose response head did not come within `limit`.
fn no_response(url: &str, limit: Duration) -> ModelError {
    ModelError {
        kind: ModelErrorKind::Timeout,
        status_code: None,
        message: format!("no response from {url} within {} ms", limit.as_millis()),
        retryable: true,
    }
}

/// What the Copilot CLI says about itself on every request to the Copilot endpoint (its
/// integration id, so that the endpoint treats the call as the CLI's), spelled as the CLI
/// spells them (`session.provider.getEndpoint` shows them so; on the wire case does not
/// matter). `X-Interaction-Id` is new for each call.
pub(super) fn copilot_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Openai-Intent", "conversation-agent".to_owned()),
        ("X-Initiator", "user".to_owned()),
        ("X-GitHub-Api-Version", "2026-07-01".to_owned()),
        ("Copilot-Integration-Id", "copilot-developer-cli".to_owned()),
        ("X-Interaction-Id", uuid::Uuid::new_v4().to_string()),
        (
            "Editor-Version",
            concat!("turnstile/", env!("CARGO_PKG_VERSION")).to_owned(),
        ),
    ]
}

/// Characters of a client's name the `User-Agent` carries at most (docs/security.md).
pub const MAX_CLIENT_NAME_CHARS: usize = 128;

/// The `User-Agent` of every request: turnstile and its version, and to the Copilot endpoint
/// the integration it speaks as and the SDK client's name (`client/<name>`), as the Copilot
/// CLI tells them there (to a client's own provider it tells neither). The name is the
/// client's text: only printable ASCII of it is kept, at most [`MAX_CLIENT_NAME_CHARS`], so
/// the header is always valid.
pub(super) fn user_agent(config: &OpenAiConfig) -> String {
    let version = concat!("turnstile/", env!("CARGO_PKG_VERSION"));
    if config.flavor != ApiFlavor::Copilot {
        return version.to_owned();
    }
    let client: String = config
        .client_name
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(MAX_CLIENT_NAME_CHARS)
        .collect();
    match client.trim() {
        "" => format!("{version} (Copilot CLI protocol; copilot-developer-cli)"),
        client => {
            format!("{version} (client/{client}; Copilot CLI protocol; copilot-developer-cli)")
        }
    }
}

/// `Retry-After` (seconds) or `retry-after-ms` of the headers `header` reads; HTTP dates are
/// not honoured.
fn retry_after(header: impl Fn(&str) -> Option<String>) -> Option<Duration> {
    let get = |name: &str| header(name).map(|v| v.trim().to_owned());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let secs = get("retry-after")?.parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// An error and its sources, joined with `: ` (reqwest's own message is terse).
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

/// Whether the URL's host is a loopback address (no proxy may get in between).
fn is_loopback(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if let Some(inner) = host.strip_prefix('[') {
        inner.split(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_after_of(h: &HeaderMap) -> Option<Duration> {
        retry_after(|name| h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned))
    }

    #[test]
    fn the_user_agent_tells_the_client_name_to_the_copilot_endpoint() {
        let version = concat!("turnstile/", env!("CARGO_PKG_VERSION"));
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.client_name = Some("ts-public-surface-client".into());
        // A client's own provider is told neither, as the Copilot CLI tells it neither.
        assert_eq!(user_agent(&config), version);
        config.flavor = ApiFlavor::Copilot;
        assert_eq!(
            user_agent(&config),
            format!(
                "{version} (client/ts-public-surface-client; Copilot CLI protocol; copilot-developer-cli)"
            )
        );
        config.client_name = None;
        assert_eq!(
            user_agent(&config),
            format!("{version} (Copilot CLI protocol; copilot-developer-cli)")
        );
        // A name that could break the header is cut to printable ASCII and bounded.
        config.client_name = Some(format!("a\r\nX-Evil: 1\u{e9}{}", "b".repeat(500)));
        let agent = user_agent(&config);
        assert!(HeaderValue::from_str(&agent).is_ok(), "{agent}");
        assert!(!agent.contains('\n') && agent.contains("client/aX-Evil: 1b"));
        assert!(agent.len() < 100 + MAX_CLIENT_NAME_CHARS, "{agent}");
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after_of(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after_of(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after_of(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after_of(&h), None);
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8080/v1/chat/completions"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
