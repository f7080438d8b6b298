//! A configuration's endpoint as a client reads it back (the SDK's
//! `session.provider.getEndpoint`): kind, wire, base URL, the secret a call would carry and
//! the headers it would send, so a client can reach the same model itself.
//!
//! The secret is asked for now, as for a call (a key command runs), and the Copilot
//! endpoint's headers are the ones [`HttpCore`](super::transport::HttpCore) sends, from the
//! same functions, so what is shown cannot differ from what is sent. As the Copilot CLI does, a
//! client's own provider shows only its configured headers, the Copilot endpoint every header
//! of a call, `Authorization` included.

use std::fmt;

use super::auth::secret;
use super::config::{ApiFlavor, OpenAiConfig};
use super::transport::{copilot_headers, user_agent};
use crate::ModelError;

/// What a client is told of an endpoint. `Debug` hides the key and the header values.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderEndpoint {
    /// The SDK's provider `type`: `openai` (the Copilot endpoint too), `azure` or `anthropic`.
    pub kind: &'static str,
    /// `completions` or `responses`; `None` for Anthropic, which has one wire.
    pub wire_api: Option<&'static str>,
    /// The base URL as configured.
    pub base_url: String,
    /// The bearer token, else the key (a key command's output, run for this answer).
    pub api_key: Option<String>,
    /// The headers a call sends, spelled as the Copilot CLI spells them.
    pub headers: Vec<(String, String)>,
    /// Whether it is the Copilot endpoint (reached with the GitHub token), not a client's own
    /// provider.
    pub copilot: bool,
}

impl fmt::Debug for ProviderEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderEndpoint")
            .field("kind", &self.kind)
            .field("wire_api", &self.wire_api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("copilot", &self.copilot)
            .finish()
    }
}

/// The endpoint of `config`; fails only when its key command fails.
pub async fn provider_endpoint(config: &OpenAiConfig) -> Result<ProviderEndpoint, ModelError> {
    let api_key = secret(config).await?.map(|s| s.into_text());
    let (kind, wire_api) = match config.flavor {
        ApiFlavor::Anthropic => ("anthropic", None),
        ApiFlavor::Azure { .. } => ("azure", Some(config.wire_api.as_str())),
        ApiFlavor::OpenAi | ApiFlavor::Copilot => ("openai", Some(config.wire_api.as_str())),
    };
    let copilot = config.flavor == ApiFlavor::Copilot;
    let mut headers: Vec<(String, String)> = Vec::new();
    if copilot {
        headers.push(("Content-Type".into(), "application/json".into()));
        headers.push(("Accept".into(), "application/json".into()));
        headers.extend(
            copilot_headers()
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v)),
        );
        headers.push(("User-Agent".into(), user_agent(config)));
        if let Some(key) = &api_key {
            headers.push(("Authorization".into(), format!("Bearer {key}")));
        }
    }
    // The provider's own headers come last and replace one of the same name, as on the wire.
    for (name, value) in &config.headers {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    Ok(ProviderEndpoint {
        kind,
        wire_api,
        base_url: config.base_url.clone(),
        api_key,
        headers,
        copilot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyCommand;

    #[tokio::test]
    async fn a_clients_provider_shows_its_own_headers_and_secret() {
        let mut config = OpenAiConfig::new("https://api.example.test/v1", "m");
        config.api_key = Some("byok-secret".into());
        config.headers = vec![("X-Custom-Header".into(), "byok-yes".into())];
        let e = provider_endpoint(&config).await.unwrap();
        assert_eq!(
            (e.kind, e.wire_api, e.api_key.as_deref(), e.copilot),
            ("openai", Some("completions"), Some("byok-secret"), false)
        );
        assert_eq!(
            e.headers,
            [("X-Custom-Header".to_owned(), "byok-yes".to_owned())]
        );
        assert!(!format!("{e:?}").contains("byok-secret"));

        config.flavor = ApiFlavor::Anthropic;
        config.bearer_token = Some("bt".into());
        let e = provider_endpoint(&config).await.unwrap();
        assert_eq!(
            (e.kind, e.wire_api, e.api_key.as_deref()),
            ("anthropic", None, Some("bt"))
        );
    }

    #[tokio::test]
    async fn a_key_command_is_asked_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("n");
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key_command = Some(KeyCommand::new(format!(
            "echo x >> {0}; echo key-$(wc -l < {0})",
            counter.display()
        )));
        let first = provider_endpoint(&config).await.unwrap().api_key;
        let second = provider_endpoint(&config).await.unwrap().api_key;
        assert_eq!(first.as_deref(), Some("key-1"));
        assert_eq!(second.as_deref(), Some("key-2"));
    }

    #[tokio::test]
    async fn the_copilot_endpoint_shows_every_header_of_a_call() {
        let config = OpenAiConfig::copilot("http://127.0.0.1:1", "m", Some("gh-token".into()));
        let e = provider_endpoint(&config).await.unwrap();
        let header = |name: &str| {
            e.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("Authorization"), Some("Bearer gh-token"));
        assert_eq!(
            header("Copilot-Integration-Id"),
            Some("copilot-developer-cli")
        );
        assert!(header("User-Agent").unwrap().contains("Copilot"));
        assert!(uuid::Uuid::parse_str(header("X-Interaction-Id").unwrap()).is_ok());
        assert_eq!(e.api_key.as_deref(), Some("gh-token"));
    }
}
