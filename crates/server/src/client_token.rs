//! The SDK client's bearer-token callback as a [`TokenSource`]: a provider configured with
//! `hasBearerTokenProvider: true` gets its token by asking the connection that opened the
//! session, `providerToken.getToken {sessionId, providerName}` → `{token}`, before every
//! model call, as the Copilot CLI does (no caching: the client owns caching and refresh). The
//! provider of `provider` is named `default`, those of `providers` by their names.
//!
//! The token goes only into that call's `Authorization` header: the answer is not logged (the
//! peer logs no results), and a refusal's error names the provider, never a token.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use turnstile_providers::{BoxFuture, ModelError, ModelErrorKind, TokenSource};

use crate::peer::Peer;

/// The name the Copilot CLI gives the provider of `provider` (the single one).
pub(crate) const SINGLE_PROVIDER_NAME: &str = "default";

/// Longest wait for the client's token; past it the model call fails (a client that never
/// answers must not hold a turn until the model call's own deadline).
pub(crate) const CLIENT_TOKEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Asks the client for provider `provider_name`'s token of session `session_id`.
pub(crate) struct ClientToken {
    /// The connection that supplied the provider's configuration.
    pub peer: Arc<Peer>,
    /// The session the calls are for.
    pub session_id: String,
    /// The provider's name (`default` for `provider`).
    pub provider_name: String,
}

impl TokenSource for ClientToken {
    fn token(&self) -> BoxFuture<'_, Result<String, ModelError>> {
        Box::pin(async move {
            let failed = |why: String| {
                ModelError::new(
                    ModelErrorKind::Config,
                    format!(
                        "Cannot acquire a bearer token for provider \"{}\": {why}",
                        self.provider_name
                    ),
                )
            };
            let params = json!({
                "sessionId": self.session_id,
                "providerName": self.provider_name,
            });
            let answer = tokio::time::timeout(
                CLIENT_TOKEN_TIMEOUT,
                self.peer.call("providerToken.getToken", params),
            )
            .await
            .map_err(|_| {
                failed(format!(
                    "the SDK client did not answer within {} s",
                    CLIENT_TOKEN_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| failed(e.to_string()))?;
            answer
                .get("token")
                .and_then(|t| t.as_str())
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| failed("the SDK client's answer holds no token".into()))
        })
    }
}
