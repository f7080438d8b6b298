//! `tools.list`: the built-in tools a session offers the model, with their descriptions and
//! argument schemas, as the registry builds them for a new session.

use serde_json::{Value, json};
use turnstile_tools::ToolRegistry;

use crate::rpc::RpcError;

/// `tools.list` `{model?}`: `{tools: [{name, description, parameters}]}`, the built-ins in
/// the order the model sees them (the interactive set: `task_complete` is autopilot's).
/// turnstile's built-ins are the same for every model, so `model` changes nothing; the
/// official client sends the params positionally, so any params are taken.
pub(crate) fn list(_params: Value) -> Result<Value, RpcError> {
    let tools: Vec<Value> = ToolRegistry::builtin(false)
        .specs()
        .into_iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            })
        })
        .collect();
    Ok(json!({"tools": tools}))
}
