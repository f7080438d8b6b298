//! `session.gitHubAuth.getStatus`: the GitHub account a session acts as, as the Copilot CLI
//! reports it. A session opened with its own `gitHubToken` is that token's account, looked up
//! when it opened (`account.rs`); any other session is the server's token's account (the
//! token of `--auth-token-env`, else the Copilot endpoint's), looked up now; with no token at
//! all it is not authenticated.
//!
//! `session.gitHubAuth.setCredentials` installs a signed-in user's identity (`type: "user"`,
//! whose token the runtime keeps in its own secret store: the client sends none), which
//! `getStatus` reports from then on. The variants that carry a secret (a token, an HMAC key,
//! an API key) would swap the credential of the session's model calls, which turnstile fixes
//! when the session opens (`gitHubToken`, the provider): they are refused with that reason
//! rather than answered with a success that changes nothing. The identity is not journaled
//! (nor anything of the params): a resumed session reports the account it is opened with.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_providers::{ApiFlavor, CopilotUser, copilot_user};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::account::InstalledAuth;
use crate::rpc::{RpcError, kind_of};

/// The host the Copilot CLI names for an account of the public GitHub.
const GITHUB_HOST: &str = "https://github.com";

/// `session.gitHubAuth.getStatus`.
pub(crate) async fn status(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let info = session.info();
    if let Some(installed) = &info.installed_auth {
        let mut status = json!({
            "isAuthenticated": true,
            "authType": installed.auth_type,
            "host": installed.host,
            "login": installed.login,
            "statusMessage": installed.login,
        });
        if let Some(plan) = &installed.copilot_plan {
            status["copilotPlan"] = json!(plan);
        }
        return Ok(status);
    }
    let account = info.account;
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

/// `session.gitHubAuth.setCredentials` params. The credentials stay a JSON value: the
/// variants that carry secrets are never parsed into anything that could print them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetCredentialsParams {
    session_id: String,
    credentials: Option<Value>,
}

/// `session.gitHubAuth.setCredentials`: `{success: true}` without credentials (nothing
/// changes); `{success: true, copilotUserResolved}` once a user's identity is installed.
pub(crate) fn set_credentials(
    ctx: &Ctx<'_>,
    params: SetCredentialsParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let Some(credentials) = params.credentials else {
        return Ok(json!({"success": true}));
    };
    let installed = user_identity(&credentials)?;
    let resolved = installed.copilot_plan.is_some() || credentials.get("copilotUser").is_some();
    session.install_auth(installed);
    Ok(json!({"success": true, "copilotUserResolved": resolved}))
}

/// The identity of `type: "user"` credentials, or why they cannot be installed.
fn user_identity(credentials: &Value) -> Result<InstalledAuth, RpcError> {
    let text = |key: &str| credentials.get(key).and_then(Value::as_str);
    let Some(kind) = text("type") else {
        return Err(RpcError::invalid_params(format!(
            "credentials: expected an object with a type (got {})",
            kind_of(credentials)
        )));
    };
    if kind != "user" {
        return Err(RpcError::invalid_params(format!(
            "credentials of type {kind:?} cannot be installed on a turnstile session: its model \
             calls use the credential it was opened with (gitHubToken of session.create or \
             session.resume, or the server's provider); only a user's identity (type \"user\") \
             can be set"
        )));
    }
    let (Some(host), Some(login)) = (text("host"), text("login")) else {
        return Err(RpcError::invalid_params(
            "credentials of type \"user\" need a host and a login",
        ));
    };
    let copilot_plan = credentials
        .get("copilotUser")
        .and_then(|u| u.get("copilot_plan"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(InstalledAuth {
        auth_type: kind.to_owned(),
        host: host.to_owned(),
        login: login.to_owned(),
        copilot_plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_identity_is_read_and_secret_bearing_credentials_are_refused() {
        let user = json!({"type": "user", "host": "https://github.com", "login": "octo",
                          "copilotUser": {"login": "octo", "copilot_plan": "business"}});
        assert_eq!(
            user_identity(&user).unwrap(),
            InstalledAuth {
                auth_type: "user".into(),
                host: "https://github.com".into(),
                login: "octo".into(),
                copilot_plan: Some("business".into()),
            }
        );
        for refused in [
            json!({"type": "token", "host": "https://github.com", "token": "ghp_secret"}),
            json!({"type": "api-key", "host": "https://x.test", "apiKey": "sk-secret"}),
            json!({"type": "user", "host": "https://github.com"}),
            json!(null),
        ] {
            let error = user_identity(&refused).unwrap_err();
            assert!(!error.message.contains("secret"), "{}", error.message);
        }
    }
}
