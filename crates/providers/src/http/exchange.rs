//! A model call's HTTP exchange made by someone other than this process's HTTP client: an
//! [`Exchange`] takes the request the provider built (method, URL, headers, body) and gives
//! back the response head and a body read piece by piece. The SDK client that answers a
//! session's model calls itself (`llmInference.*`, in the server crate) is one; with an
//! exchange in the configuration ([`OpenAiConfig::exchange`](super::OpenAiConfig)) every
//! HTTP provider sends through it instead of the network, and nothing above the transport
//! (the wire, retries, limits, timeouts, the loop) knows which it has.
//!
//! Cancellation is dropping: a call that is cancelled drops the future of [`Exchange::send`]
//! or the [`ResponseBody`], and an implementation tells its other side then (the client's
//! request is cancelled), so no request outlives the call that made it.

use std::fmt;
use std::sync::Arc;

use crate::{BoxFuture, CallOrigin, ModelError};

/// One request of a model call, as it would go over the network.
#[derive(Clone, PartialEq, Eq)]
pub struct ExchangeRequest {
    /// `POST` for a model call.
    pub method: &'static str,
    /// The absolute URL.
    pub url: String,
    /// The headers, lower-cased names, in the order they were set (credentials included:
    /// an implementation hands them only to whoever makes the request).
    pub headers: Vec<(String, String)>,
    /// The body (the wire's JSON).
    pub body: Vec<u8>,
    /// Who makes the call (the main agent, a sub-agent, a compaction's summary).
    pub origin: CallOrigin,
}

impl fmt::Debug for ExchangeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: names only.
        f.debug_struct("ExchangeRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("body_bytes", &self.body.len())
            .field("origin", &self.origin)
            .finish()
    }
}

/// The body of an exchanged response, read piece by piece.
pub trait ResponseBody: Send {
    /// The next piece; `None` at the end. A failure of the other side is an error.
    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Vec<u8>>, ModelError>>;
}

/// The response of an exchange: its head, then its body.
pub struct ExchangeResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers, lower-cased names.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Box<dyn ResponseBody>,
}

impl ExchangeResponse {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Who makes a model call's HTTP request when it is not this process's HTTP client.
pub trait Exchange: Send + Sync {
    /// Sends `request` and waits for the response head (a failure before it is an error,
    /// retried as a refused connection is).
    fn send(&self, request: ExchangeRequest)
    -> BoxFuture<'_, Result<ExchangeResponse, ModelError>>;
}

/// A shared [`Exchange`] in a configuration: equal only to itself, shown by `Debug` without
/// anything it holds.
#[derive(Clone)]
pub struct SharedExchange(pub Arc<dyn Exchange>);

impl PartialEq for SharedExchange {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedExchange {}

impl fmt::Debug for SharedExchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Exchange")
    }
}
