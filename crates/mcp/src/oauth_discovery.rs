//! Whether a remote server names an OAuth authorization server, looked up as the Copilot CLI
//! 1.0.81-0 looks it up before a login: the protected-resource metadata (RFC 9728) at the
//! server's well-known addresses, then the authorization server's metadata (RFC 8414, OpenID
//! discovery) at its issuer's (or, without one, the server's). turnstile does no OAuth itself;
//! the answer lets `session.mcp.oauth.login` refuse in the CLI's words when nothing is found.
//! Each answer read is capped at [`MAX_METADATA_BYTES`]; each request at the given limit.

use std::time::Duration;

use serde_json::Value;

/// The most bytes of one metadata document read.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;

/// The addresses of a resource's protected-resource metadata, in the order the CLI asks them.
fn resource_candidates(url: &reqwest::Url) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    if !path.is_empty() {
        out.push(format!(
            "{origin}{path}/.well-known/oauth-protected-resource"
        ));
    }
    out
}

/// The addresses of an issuer's authorization-server metadata, in the order the CLI asks them.
fn issuer_candidates(issuer: &reqwest::Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!(
            "{origin}/.well-known/oauth-authorization-server{path}"
        ));
        out.push(format!("{origin}/.well-known/openid-configuration{path}"));
        out.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    out.push(format!("{origin}/.well-known/oauth-authorization-server"));
    out.push(format!("{origin}/.well-known/openid-configuration"));
    out
}

/// One metadata document: a JSON object answered with a success status, else `None`.
async fn fetch(client: &reqwest::Client, url: &str) -> Option<serde_json::Map<String, Value>> {
    let mut response = client.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_METADATA_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    match serde_json::from_slice(&body).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Whether authorization-server metadata is found for the remote server at `url`; each
/// request waits at most `limit`. An address that is not a URL has none.
pub async fn authorization_metadata_found(url: &str, limit: Duration) -> bool {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(resource) = reqwest::Url::parse(url) else {
        return false;
    };
    let Ok(client) = reqwest::Client::builder()
        .timeout(limit)
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
    else {
        return false;
    };
    let mut issuer = resource.clone();
    for candidate in resource_candidates(&resource) {
        if let Some(doc) = fetch(&client, &candidate).await {
            let named = doc
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .and_then(|s| reqwest::Url::parse(s).ok());
            if let Some(named) = named {
                issuer = named;
            }
            break;
        }
    }
    for candidate in issuer_candidates(&issuer) {
        if let Some(doc) = fetch(&client, &candidate).await
            && (doc.contains_key("authorization_endpoint") || doc.contains_key("issuer"))
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_addresses_are_asked_in_the_runtime_order() {
        let url = reqwest::Url::parse("http://127.0.0.1:9/auth/mcp").expect("a URL");
        assert_eq!(
            resource_candidates(&url),
            [
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/auth/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource",
                "http://127.0.0.1:9/auth/mcp/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            issuer_candidates(&url),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server/auth/mcp",
                "http://127.0.0.1:9/.well-known/openid-configuration/auth/mcp",
                "http://127.0.0.1:9/auth/mcp/.well-known/openid-configuration",
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration",
            ]
        );
        let root = reqwest::Url::parse("https://example.com/").expect("a URL");
        assert_eq!(
            resource_candidates(&root),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
    }
}
