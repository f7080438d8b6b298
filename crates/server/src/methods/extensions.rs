//! `session.plugins.list` and `session.extensions.*` as the Copilot CLI answers them for a
//! session without plugins or extensions, which every turnstile session is: empty lists, and
//! the CLI's `Extensions not available` for what would change an extension.

use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.plugins.list`: `{plugins: []}` (turnstile loads no plugins).
pub(crate) fn plugins(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({"plugins": []}))
}

/// `session.extensions.list`: `{extensions: []}` (turnstile runs no extensions).
pub(crate) fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({"extensions": []}))
}

/// `session.extensions.enable` / `disable` / `reload`: the CLI's refusal where no extension
/// controller runs. The params beyond `sessionId` (`id`) name nothing turnstile has.
pub(crate) fn unavailable(ctx: &Ctx<'_>, method: &str, params: Value) -> Result<Value, RpcError> {
    let id = params
        .get("sessionId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("invalid params: missing field `sessionId`"))?;
    open_session(ctx, id)?;
    Err(RpcError::internal(format!(
        "Request session.extensions.{method} failed with message: Extensions not available"
    )))
}
