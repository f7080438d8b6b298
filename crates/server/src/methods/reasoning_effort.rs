//! `session.model.setReasoningEffort`: the reasoning effort of the calls that follow, the
//! model kept. Recorded as `session.model_change` with the same model and the new effort, the
//! journal's one record of an effort, so a resume and a fork continue with it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.model.setReasoningEffort` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetEffortParams {
    session_id: String,
    reasoning_effort: String,
}

/// `session.model.setReasoningEffort`: `{reasoningEffort}` as set.
pub(crate) async fn set(ctx: &Ctx<'_>, params: SetEffortParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let effort = params.reasoning_effort.trim();
    if effort.is_empty() {
        return Err(RpcError::invalid_params(
            "reasoningEffort must not be empty",
        ));
    }
    let model = session.info().model;
    session
        .handle()
        .switch_model(model.clone(), Some(effort.to_owned()))
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    session.set_model(model, Some(effort.to_owned()));
    Ok(json!({"reasoningEffort": effort}))
}
