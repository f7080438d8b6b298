//! The streamable HTTP transport of a remote server: its URL and headers, TLS through ring.

use std::collections::{BTreeMap, HashMap};

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::client::Client;
use crate::error::McpError;

/// Connects to `url`, sending `headers` with every request, and runs the handshake.
pub(crate) async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    client: Client,
) -> Result<RunningService<RoleClient, Client>, McpError> {
    // reqwest is built without a crypto provider of its own; the process's default is ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut custom = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let bad = |what: &str| McpError::Initialize(format!("header {name:?}: {what}"));
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|_| bad("not a valid header name"))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| bad("not a valid header value"))?;
        custom.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| McpError::Initialize(e.to_string()))
}
