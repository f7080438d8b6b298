//! `session.provider.getEndpoint`: how the session reaches its model (kind, wire, base URL,
//! the secret and the headers of a call), so a client can call the same model itself. It hands
//! out a credential, so, as in the Copilot CLI, it answers only when the server was started
//! with `COPILOT_ALLOW_GET_PROVIDER_ENDPOINT=true`, and refuses with the CLI's words otherwise.

use serde_json::{Map, Value, json};
use turnstile_providers::provider_endpoint;

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.provider.getEndpoint`.
pub(crate) async fn get(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let failed = |why: String| {
        RpcError::internal(format!(
            "Request session.provider.getEndpoint failed with message: {why}"
        ))
    };
    if !ctx.server.config().allow_get_provider_endpoint {
        return Err(failed(
            "To enable this API, set COPILOT_ALLOW_GET_PROVIDER_ENDPOINT=true".into(),
        ));
    }
    let session = open_session(ctx, params.id())?;
    let account = session.info().account;
    let endpoint = provider_endpoint(&account.endpoint)
        .await
        .map_err(|e| failed(e.message))?;
    let headers: Map<String, Value> = endpoint
        .headers
        .into_iter()
        .map(|(n, v)| (n, Value::String(v)))
        .collect();
    let mut answer = json!({
        "type": endpoint.kind,
        "baseUrl": endpoint.base_url,
        "headers": headers,
    });
    if let Some(wire_api) = endpoint.wire_api {
        answer["wireApi"] = json!(wire_api);
    }
    if let Some(key) = endpoint.api_key {
        answer["apiKey"] = json!(key);
    }
    // A client's own provider names its transport; the Copilot endpoint's answer has none.
    if !endpoint.copilot {
        answer["transport"] = json!("http");
    }
    Ok(answer)
}
