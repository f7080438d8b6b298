//! Whose a session is and how it reaches its model, for `session.gitHubAuth.getStatus` and
//! `session.provider.getEndpoint`: the GitHub account of the session's own token
//! (`gitHubToken` of `session.create`/`session.resume`), looked up when the session opens as
//! the Copilot CLI does, and the provider configuration its model calls use.
//!
//! A session token the GitHub API refuses fails the open with the CLI's words (`Failed to
//! fetch Copilot user info: 401 Unauthorized: ...`); one it accepts also becomes the session's
//! credential at the Copilot endpoint. The token itself is kept only in the provider
//! configuration, whose `Debug` hides it, and is never journaled: `session.start` records no
//! open params.

use turnstile_providers::{ApiFlavor, CopilotUser, CopilotUserError, OpenAiConfig, copilot_user};

use crate::rpc::RpcError;

/// A session's account and endpoint.
#[derive(Debug, Clone)]
pub(crate) struct SessionAccount {
    /// The account of the session's own GitHub token; `None` without one.
    pub user: Option<CopilotUser>,
    /// What the session's model calls are made with (its credential included).
    pub endpoint: OpenAiConfig,
}

/// An identity a client installed with `session.gitHubAuth.setCredentials`, as
/// `getStatus` reports it from then on. Only its public part is kept: the variants that carry
/// a secret are refused (`methods/github_auth.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstalledAuth {
    /// `user`.
    pub auth_type: String,
    /// The GitHub host (`https://github.com`).
    pub host: String,
    /// The account's login.
    pub login: String,
    /// The Copilot plan of the `copilotUser` given, when one was.
    pub copilot_plan: Option<String>,
}

/// The account of `token`, looked up at `github_api`; `None` without a token. A refusal is the
/// open's error, as in the Copilot CLI.
pub(crate) async fn look_up(
    github_api: &str,
    token: Option<&str>,
    method: &str,
) -> Result<Option<CopilotUser>, RpcError> {
    let Some(token) = token.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    copilot_user(github_api, token)
        .await
        .map(Some)
        .map_err(|e: CopilotUserError| {
            RpcError::internal(format!(
                "Request {method} failed with message: Failed to fetch Copilot user info: {e}"
            ))
        })
}

/// The default model's configuration with the session's own token as its credential, when
/// it is the Copilot endpoint (a session token is a GitHub token; other endpoints keep
/// their keys).
pub(crate) fn with_session_token(mut config: OpenAiConfig, token: Option<&str>) -> OpenAiConfig {
    if config.flavor == ApiFlavor::Copilot
        && let Some(token) = token.filter(|t| !t.trim().is_empty())
    {
        config.api_key = Some(token.trim().to_owned());
    }
    config
}
