//! `account.login`, `getCurrentAuth`, `getAllUsers` and `logout`: GitHub accounts signed in to
//! the server, as the Copilot CLI signs them in without a system keychain.
//!
//! `login` checks the token with the Copilot endpoint (`GET /copilot_internal/user`, the
//! lookup a session's own token gets), records the login in the home's `config.json`
//! (`turnstile_home::logins`) and makes the account current; the token is written there only
//! when the user settings ask for plaintext storage (`storeTokenPlaintext`), which is then
//! `storedInVault: true`; otherwise it is kept nowhere (`crate::signed_in`).
//! `getAllUsers` lists the accounts a client could switch to with a stored token; like the CLI
//! without a keychain it lists none. `logout` forgets the account in memory and in the file.
//! `getQuota` reads the quotas the Copilot endpoint gave for a token: the one given, else the
//! current account's (as given when it signed in, not fetched again, as in the CLI).

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::locate::home_of;
use turnstile_home::logins::StoredLogins;
use turnstile_providers::copilot_user;

use super::{Ctx, user_settings};
use crate::rpc::RpcError;
use crate::signed_in::Account;

/// `account.login` params.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginParams {
    host: String,
    #[serde(default)]
    login: Option<String>,
    token: String,
}

/// `account.logout` params: the account's `authInfo` (of which `host` and `login` are read),
/// or a `selectionId` (none is ever handed out).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogoutParams {
    #[serde(default)]
    auth_info: Option<Who>,
    #[serde(default)]
    selection_id: Option<String>,
}

/// Whose account: the fields of an `authInfo` that name it.
#[derive(Debug, Deserialize)]
pub(crate) struct Who {
    host: String,
    #[serde(default)]
    login: Option<String>,
}

/// `account.getQuota` params.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QuotaParams {
    #[serde(default)]
    git_hub_token: Option<String>,
    #[serde(default)]
    selection_id: Option<String>,
}

fn failed(method: &str, why: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!("Request {method} failed with message: {why}"))
}

fn stored_logins(ctx: &Ctx<'_>) -> StoredLogins {
    StoredLogins::in_home(home_of(ctx.server.config().state_root.dir()))
}

/// `account.login`: `{storedInVault}`.
pub(crate) async fn login(ctx: &Ctx<'_>, params: LoginParams) -> Result<Value, RpcError> {
    let github_api = ctx.server.config().github_api_url.clone();
    let user = copilot_user(&github_api, &params.token)
        .await
        .map_err(|e| {
            failed(
                "account.login",
                format!("Failed to fetch Copilot user info: {e}"),
            )
        })?;
    let login = params
        .login
        .filter(|l| !l.trim().is_empty())
        .unwrap_or_else(|| user.login.clone());
    let plaintext = user_settings::files(ctx).value("storeTokenPlaintext") == Some(json!(true));
    stored_logins(ctx)
        .record(
            &params.host,
            &login,
            plaintext.then_some(params.token.as_str()),
        )
        .map_err(|e| failed("account.login", e))?;
    ctx.server.signed_in().sign_in(Account {
        host: params.host,
        login,
        user,
    });
    Ok(json!({ "storedInVault": plaintext }))
}

/// `account.getCurrentAuth`: `{authInfo}` of the current account, `{}` without one.
pub(crate) fn current(ctx: &Ctx<'_>) -> Value {
    let Some(account) = ctx.server.signed_in().current() else {
        return json!({});
    };
    let mut copilot_user = json!({ "login": account.user.login });
    if let Some(plan) = &account.user.copilot_plan {
        copilot_user["copilot_plan"] = json!(plan);
    }
    json!({
        "authInfo": {
            "type": "user",
            "host": account.host,
            "login": account.login,
            "copilotUser": copilot_user,
        }
    })
}

/// `account.getQuota`: `{quotaSnapshots: {KIND: snapshot}}`.
pub(crate) async fn quota(ctx: &Ctx<'_>, params: QuotaParams) -> Result<Value, RpcError> {
    if let Some(id) = params.selection_id {
        return Err(failed(
            "account.getQuota",
            format!("no account has the selection id {id:?}: account.getAllUsers lists none"),
        ));
    }
    let user = match params.git_hub_token.filter(|t| !t.trim().is_empty()) {
        Some(token) => {
            let github_api = ctx.server.config().github_api_url.clone();
            copilot_user(&github_api, &token).await.map_err(|e| {
                failed(
                    "account.getQuota",
                    format!("Failed to fetch Copilot user info: {e}"),
                )
            })?
        }
        None => match ctx.server.signed_in().current() {
            Some(account) => account.user,
            None => {
                return Err(failed(
                    "account.getQuota",
                    "Not authenticated. Please authenticate first.",
                ));
            }
        },
    };
    let snapshots: serde_json::Map<String, Value> = user
        .quota_snapshots
        .unwrap_or_default()
        .iter()
        .filter(|(_, raw)| raw.is_object())
        .map(|(kind, raw)| (kind.clone(), snapshot(raw)))
        .collect();
    Ok(json!({ "quotaSnapshots": snapshots }))
}

/// One quota as the CLI reports it: the endpoint's `entitlement`, `percent_remaining`,
/// `overage_count`, `overage_permitted`, `unlimited` and `timestamp_utc` renamed, and the
/// requests used worked out from the entitlement and the share remaining.
fn snapshot(raw: &Value) -> Value {
    let unlimited = raw["unlimited"].as_bool().unwrap_or(false);
    let entitlement = raw["entitlement"]
        .as_f64()
        .unwrap_or(if unlimited { -1.0 } else { 0.0 });
    let remaining =
        raw["percent_remaining"]
            .as_f64()
            .unwrap_or(if unlimited { 100.0 } else { 0.0 });
    let used = (entitlement * (1.0 - remaining / 100.0)).max(0.0).round();
    let overage_permitted = raw["overage_permitted"].as_bool().unwrap_or(false);
    let mut out = json!({
        "isUnlimitedEntitlement": unlimited,
        "entitlementRequests": number(entitlement),
        "usedRequests": number(used),
        "usageAllowedWithExhaustedQuota": overage_permitted,
        "overage": number(raw["overage_count"].as_f64().unwrap_or(0.0)),
        "overageAllowedWithExhaustedQuota": overage_permitted,
        "remainingPercentage": number(remaining),
    });
    if let Some(reset) = raw["timestamp_utc"].as_str() {
        out["resetDate"] = json!(reset);
    }
    out
}

/// A whole number as an integer (`100`, not `100.0`), as JavaScript writes it.
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

/// `account.getAllUsers`: `[]` (no keychain holds a token to switch to).
pub(crate) fn all_users() -> Value {
    json!([])
}

/// `account.logout`: `{hasMoreUsers}`.
pub(crate) fn logout(ctx: &Ctx<'_>, params: LogoutParams) -> Result<Value, RpcError> {
    let Some(who) = params.auth_info else {
        let id = params.selection_id.unwrap_or_default();
        return Err(failed(
            "account.logout",
            format!("no account has the selection id {id:?}: account.getAllUsers lists none"),
        ));
    };
    let Some(login) = who.login else {
        // An account without a login (a token's, an API key's) was never signed in here.
        return Ok(json!({ "hasMoreUsers": false }));
    };
    stored_logins(ctx)
        .forget(&who.host, &login)
        .map_err(|e| failed("account.logout", e))?;
    let more = ctx.server.signed_in().sign_out(&who.host, &login);
    Ok(json!({ "hasMoreUsers": more }))
}
