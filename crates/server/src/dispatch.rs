//! Routes a request to its method, after the connection-token check, and parses its params.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::methods::{Ctx, event_log, lifecycle, pending, server as server_methods, session};
use crate::peer::Peer;
use crate::rpc::{RpcError, codes, kind_of};
use crate::server::Server;

/// Handles one request.
pub(crate) async fn call(
    server: &Server,
    peer: &Arc<Peer>,
    method: &str,
    params: Value,
) -> Result<Value, RpcError> {
    if method != "connect" && !peer.is_authorized() {
        return Err(RpcError::new(
            codes::UNAUTHORIZED,
            "this server requires a connection token: call `connect` with the token first",
        ));
    }
    let ctx = Ctx { server, peer };
    match method {
        "connect" => server_methods::connect(&ctx, parse(params)?),
        "ping" => server_methods::ping(parse(params)?),
        "status.get" => Ok(server_methods::status()),
        "auth.getStatus" => Ok(server_methods::auth_status(&ctx)),
        "models.list" => server_methods::models(&ctx).await,
        "runtime.shutdown" => Ok(server_methods::shutdown(&ctx)),

        "session.create" => lifecycle::create(&ctx, parse(params)?).await,
        "session.resume" => lifecycle::resume(&ctx, parse(params)?).await,
        "session.detach" | "session.destroy" => lifecycle::detach(&ctx, parse(params)?).await,
        "session.delete" => lifecycle::delete(&ctx, parse(params)?).await,
        "session.list" => lifecycle::list(&ctx, parse(params)?),
        "session.getLastId" => lifecycle::last_id(&ctx),
        "session.getMetadata" => lifecycle::metadata(&ctx, parse(params)?),

        "session.send" => session::send(&ctx, parse(params)?),
        "session.sendAndWait" => session::send_and_wait(&ctx, parse(params)?).await,
        "session.abort" => session::abort(&ctx, parse(params)?),
        "session.getMessages" => session::messages(&ctx, parse(params)?),
        "session.mode.get" => session::mode_get(&ctx, parse(params)?),
        "session.mode.set" => session::mode_set(&ctx, parse(params)?),
        "session.model.getCurrent" => session::model_current(&ctx, parse(params)?),

        "session.eventLog.read" => event_log::read(&ctx, parse(params)?).await,
        "session.eventLog.tail" => event_log::tail(&ctx, parse(params)?),
        "session.eventLog.registerInterest" => event_log::register_interest(&ctx, parse(params)?),
        "session.eventLog.releaseInterest" => event_log::release_interest(&ctx, parse(params)?),

        "session.tools.handlePendingToolCall" => pending::tool_call(&ctx, parse(params)?),
        "session.permissions.handlePendingPermissionRequest" => {
            pending::permission(&ctx, parse(params)?)
        }

        _ => Err(RpcError::method_not_found(method)),
    }
}

/// Parses by-name params into `T`; absent params count as `{}`. Fields `T` does not know are
/// ignored (the SDKs send many options this engine has no use for); a field of the wrong type
/// is an error that names it.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Object(obj) => Value::Object(obj),
        other => {
            return Err(RpcError::invalid_params(format!(
                "params must be an object (by-name), got {}",
                kind_of(&other)
            )));
        }
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(format!("invalid params: {inner}"))
        } else {
            RpcError::invalid_params(format!("invalid params: {path}: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct P {
        session_id: String,
        count: Option<u32>,
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<P>(json!({"sessionId": 5})).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(
            e.message.contains("sessionId") && e.message.contains("integer"),
            "{e}"
        );
        let e = parse::<P>(json!({})).unwrap_err();
        assert!(e.message.contains("missing field `sessionId`"), "{e}");
        let e = parse::<P>(json!([1])).unwrap_err();
        assert!(e.message.contains("by-name"), "{e}");
        assert!(parse::<P>(json!({"sessionId": "x", "other": true})).is_ok());
    }
}
