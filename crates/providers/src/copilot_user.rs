//! Who a GitHub token belongs to, as the Copilot endpoint knows it: `GET
//! {github_api}/copilot_internal/user` with the token as bearer, the Copilot CLI's lookup for a
//! session's own token (`gitHubToken` of `session.create`). A token the API refuses is a
//! [`CopilotUserError::Refused`] with the status and the API's words, which the server gives
//! back as the CLI does (`Failed to fetch Copilot user info: 401 Unauthorized: ...`).
//!
//! The token goes only into the request's `Authorization` header (marked sensitive); it is in
//! no error and no `Debug` output.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;

/// Where the GitHub API is when the environment names none.
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";

/// Most of the user document (or an error body) read: it is a few hundred bytes.
pub const MAX_USER_BYTES: usize = 64 * 1024;

/// Longest wait for the whole answer.
pub const USER_LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// What the Copilot endpoint says of a token's account.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CopilotUser {
    /// The GitHub login.
    pub login: String,
    /// The Copilot plan (`individual_pro`, `business`, ...).
    #[serde(default)]
    pub copilot_plan: Option<String>,
    /// The quotas, by kind (`chat`, `premium_interactions`), as the endpoint gives them
    /// (`entitlement`, `percent_remaining`, `overage_count`, ...): read by `account.getQuota`.
    #[serde(default)]
    pub quota_snapshots: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Why a token's account could not be looked up.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CopilotUserError {
    /// The API answered with an error status (a bad token: 401).
    #[error("{status} {reason}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// Its reason phrase.
        reason: String,
        /// The API's answer, cut to [`MAX_USER_BYTES`].
        body: String,
    },
    /// No answer: the address, the connection or the time limit.
    #[error("the GitHub API at {url} could not be reached: {why}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What failed.
        why: String,
    },
    /// An answer that is not a user document.
    #[error("the GitHub API's answer is not a Copilot user: {0}")]
    Malformed(String),
}

/// The GitHub API the Copilot CLI talks to: `COPILOT_DEBUG_GITHUB_API_URL` when set (the SDK
/// test harness points it at its proxy), else [`DEFAULT_GITHUB_API_URL`].
pub fn github_api_url_from_env() -> String {
    std::env::var("COPILOT_DEBUG_GITHUB_API_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_GITHUB_API_URL.to_owned())
}

/// Looks up the account of `token` at `github_api`.
pub async fn copilot_user(github_api: &str, token: &str) -> Result<CopilotUser, CopilotUserError> {
    let url = format!("{}/copilot_internal/user", github_api.trim_end_matches('/'));
    let unreachable = |why: String| CopilotUserError::Unreachable {
        url: url.clone(),
        why,
    };
    let mut auth = HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
        CopilotUserError::Malformed("the token holds characters a header cannot carry".into())
    })?;
    auth.set_sensitive(true);
    let client = reqwest::Client::builder()
        .timeout(USER_LOOKUP_TIMEOUT)
        .user_agent(concat!("turnstile/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let mut response = client
        .get(&url)
        .header(AUTHORIZATION, auth)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| unreachable(e.without_url().to_string()))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreachable(e.without_url().to_string()))?
    {
        let room = MAX_USER_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_USER_BYTES {
            break;
        }
    }
    if !status.is_success() {
        return Err(CopilotUserError::Refused {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_owned(),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    serde_json::from_slice(&body).map_err(|e| CopilotUserError::Malformed(e.to_string()))
}
