//! `session.gitHubAuth.getStatus`: the GitHub account a session acts as, as the Copilot CLI
//! reports it. A session opened with its own `gitHubToken` is that token's account, looked up
//! when it opened (`account.rs`); any other session is the server's token's account (the
//! token of `--auth-token-env`, else the Copilot endpoint's), looked up now; with no token at
//! all it is not authenticated.

use serde_json::{Value, json};
use turnstile_providers::{ApiFlavor, CopilotUser, copilot_user};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// The host the Copilot CLI names for an account of the public GitHub.
const GITHUB_HOST: &str = "https://github.com";

/// `session.gitHubAuth.getStatus`.
pub(crate) async fn status(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let account = session.info().account;
    if let Some(user) = &account.user {
        return Ok(authenticated(Some(user)));
    }
    let config = ctx.server.config();
    let server_token = config.auth_token.clone().or_else(|| {
        (config.default_model.flavor == ApiFlavor::Copilot)
            .then(|| config.default_model.api_key.clone())
            .flatten()
    });
    let Some(token) = server_token.filter(|t| !t.trim().is_empty()) else {
        return Ok(json!({"isAuthenticated": false, "statusMessage": "Not authenticated"}));
    };
    match copilot_user(&config.github_api_url, &token).await {
        Ok(user) => Ok(authenticated(Some(&user))),
        // The token is there but its account is not known: authenticated by token, as the
        // CLI reports a token it has not resolved.
        Err(e) => {
            tracing::debug!(error = %e, "the server's GitHub token's account was not found");
            Ok(authenticated(None))
        }
    }
}

fn authenticated(user: Option<&CopilotUser>) -> Value {
    let mut status = json!({
        "isAuthenticated": true,
        "authType": "token",
        "host": GITHUB_HOST,
        "statusMessage": format!("{GITHUB_HOST} (via token)"),
    });
    if let Some(user) = user {
        status["login"] = json!(user.login);
        if let Some(plan) = &user.copilot_plan {
            status["copilotPlan"] = json!(plan);
        }
    }
    status
}
