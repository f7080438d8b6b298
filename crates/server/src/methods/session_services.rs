//! Session services a client starts or tunes after opening a session, each answered with what
//! holds for a turnstile session: `session.tools.initializeAndValidate` (its tools were built
//! and checked when it opened), `session.lsp.initialize` (it has no language servers to
//! start), `session.telemetry.setFeatureOverrides` (it sends no telemetry for overrides to
//! change). None changes anything, so none records anything.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.tools.initializeAndValidate`: `{}` as the runtime answers; the session's tools
/// (built-ins, MCP servers' tools, the client's) were registered and their names checked when
/// the session opened, and an MCP server's change is taken at the next turn.
pub(crate) fn initialize_and_validate(
    ctx: &Ctx<'_>,
    params: SessionIdParams,
) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({}))
}

/// `session.lsp.initialize` params: where the client would have language servers start.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LspParams {
    session_id: String,
}

/// `session.lsp.initialize`: `null`, as the runtime answers when no language server is
/// configured; turnstile configures none.
pub(crate) fn lsp_initialize(ctx: &Ctx<'_>, params: LspParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(Value::Null)
}

/// `session.telemetry.setFeatureOverrides` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FeatureOverridesParams {
    session_id: String,
    /// Feature names to values (strings, as the schema has them).
    features: Map<String, Value>,
}

/// `session.telemetry.setFeatureOverrides`: `null`; turnstile sends no telemetry, so the
/// feature names it would attach have nothing to go on.
pub(crate) fn set_feature_overrides(
    ctx: &Ctx<'_>,
    params: FeatureOverridesParams,
) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    if let Some((name, _)) = params.features.iter().find(|(_, v)| !v.is_string()) {
        return Err(RpcError::invalid_params(format!(
            "features.{name}: expected a string"
        )));
    }
    Ok(Value::Null)
}
