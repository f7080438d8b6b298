//! `user.settings.get`, `set` and `reload`: the user settings of the Copilot home
//! (`settings.json`, overlaid with the legacy `config.json`), as the Copilot CLI lists and
//! writes them (`turnstile_home::settings::user`). The files are read at every `get`, so
//! `reload` (the CLI drops its cache of them) has nothing to drop. A refusal is an internal
//! error (-32603) with the CLI's message, `Request user.settings.set failed with message: WHY`.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::locate::home_of;
use turnstile_home::settings::user::UserSettings;

use super::Ctx;
use crate::rpc::RpcError;

/// `user.settings.set` params: any JSON, so that a `settings` that is not an object is
/// refused in the CLI's words rather than as malformed params.
#[derive(Debug, Deserialize)]
pub(crate) struct SetParams {
    #[serde(default)]
    settings: Value,
}

/// The settings files of the server's Copilot home.
pub(crate) fn files(ctx: &Ctx<'_>) -> UserSettings {
    UserSettings::in_home(home_of(ctx.server.config().state_root.dir()))
}

fn refused(why: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!(
        "Request user.settings.set failed with message: {why}"
    ))
}

/// `user.settings.get`: `{settings: {KEY: {value, default, isDefault}}}`.
pub(crate) fn get(ctx: &Ctx<'_>) -> Value {
    json!({ "settings": files(ctx).list() })
}

/// `user.settings.set`: `{shadowedKeys}`.
pub(crate) fn set(ctx: &Ctx<'_>, params: SetParams) -> Result<Value, RpcError> {
    let Value::Object(changes) = params.settings else {
        return Err(refused(
            "user.settings.set: `settings` must be an object keyed by setting name",
        ));
    };
    let shadowed = files(ctx).set(&changes).map_err(refused)?;
    Ok(json!({ "shadowedKeys": shadowed }))
}

/// `user.settings.reload`: `null`.
pub(crate) fn reload() -> Value {
    Value::Null
}
