//! Methods about the server itself: handshake, liveness, status, auth, models, shutdown.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::Timestamp;

use super::Ctx;
use super::{PROTOCOL_VERSION, VERSION};
use crate::auth;
use crate::rpc::RpcError;

/// `connect` params (the schema's `ConnectRequest`; the other fields, `supportedTaskKinds`,
/// `clientInfo`, tell nothing this server uses).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectParams {
    /// Any JSON: a token that is not a string is a wrong token, as for the Copilot CLI, not
    /// a malformed request.
    token: Option<Value>,
}

/// `connect`: checks the connection token and reports the protocol version. A connection
/// that needs one (TCP) is authenticated by the right token and refused for any other or
/// none; once authenticated, a later wrong `connect` is refused without undoing it. A
/// connection that needs none (stdio) refuses a token (the Copilot CLI's answers, all three).
pub(crate) fn connect(ctx: &Ctx<'_>, params: ConnectParams) -> Result<Value, RpcError> {
    let given = params.token.filter(|t| !t.is_null());
    match ctx.peer.token() {
        None if given.is_some() => return Err(auth::not_configured()),
        None => {}
        Some(expected) => {
            let presented = given.as_ref().and_then(Value::as_str);
            if !presented.is_some_and(|t| expected.matches(t)) {
                return Err(auth::failed());
            }
            ctx.peer.authorize();
        }
    }
    Ok(json!({
        "ok": true,
        "protocolVersion": PROTOCOL_VERSION,
        "version": VERSION,
    }))
}

/// `ping` params.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PingParams {
    message: Option<String>,
}

/// `ping`: echoes the message.
pub(crate) fn ping(params: PingParams) -> Result<Value, RpcError> {
    let message = match params.message {
        Some(m) => format!("pong: {m}"),
        None => "pong".to_owned(),
    };
    Ok(json!({
        "message": message,
        "timestamp": Timestamp::now().to_text(),
        "protocolVersion": PROTOCOL_VERSION,
    }))
}

/// `status.get`.
pub(crate) fn status() -> Value {
    json!({"version": VERSION, "protocolVersion": PROTOCOL_VERSION})
}

/// `auth.getStatus`: turnstile does not log in to GitHub; it reports the token handed over
/// with `--auth-token-env`, else whether the default model has a key.
pub(crate) fn auth_status(ctx: &Ctx<'_>) -> Value {
    let config = ctx.server.config();
    if config.auth_token.is_some() {
        json!({
            "isAuthenticated": true,
            "authType": "token",
            "statusMessage": "a token was provided with --auth-token-env; turnstile does not use GitHub authentication, models are reached through their providers",
        })
    } else if config.default_model.api_key.is_some() {
        json!({
            "isAuthenticated": true,
            "authType": "api-key",
            "statusMessage": "the default model provider has an API key",
        })
    } else {
        json!({
            "isAuthenticated": false,
            "statusMessage": "turnstile does not log in to GitHub; pass a provider (baseUrl, apiKey) in session.create or configure the server's default model",
        })
    }
}

/// `models.list`: the Copilot endpoint's `GET /models` when the default model is reached
/// there, else the server's default model (sessions may bring their own provider).
pub(crate) async fn models(ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    let defaults = &ctx.server.config().default_model;
    if let Some(listed) = crate::provider::list_default_models(defaults).await {
        return listed
            .map(|models| json!({ "models": models }))
            .map_err(|e| {
                RpcError::internal(format!(
                    "cannot list the models of {}: {e}",
                    defaults.base_url
                ))
            });
    }
    let model = &defaults.model;
    Ok(json!({
        "models": [{
            "id": model,
            "name": model,
            "capabilities": {
                "supports": {"vision": false, "reasoningEffort": false},
                "limits": {"max_context_window_tokens": 0},
            },
        }]
    }))
}

/// `runtime.shutdown`: answers, then closes every session and stops serving.
pub(crate) fn shutdown(ctx: &Ctx<'_>) -> Value {
    let server = ctx.server.clone();
    // The answer is queued before the connection's teardown flushes its writer: the
    // connection waits for this handler before it finishes.
    tokio::spawn(async move { server.shutdown_by_request().await });
    Value::Null
}
