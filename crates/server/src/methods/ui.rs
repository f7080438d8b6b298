//! The session's user interface: `session.ui.elicitation` (a form for the user, filled in by
//! a client with an elicitation handler) and `session.ui.handlePendingElicitation` (that
//! client's answer).
//!
//! An elicitation is announced as `elicitation.requested` to every client of the session; the
//! first answer wins (`success: false` for later ones) and is announced as
//! `elicitation.completed`. A session answers elicitations only when a client declared a
//! handler (`requestElicitation`, reported as `capabilities.ui.elicitation`); otherwise the
//! call fails at once rather than wait for an answer nobody will give.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_journal::payload::{ElicitationCompleted, ElicitationRequested};

use super::Ctx;
use super::open_session;
use crate::client_bridge::Delivery;
use crate::rpc::{RpcError, codes, kind_of};

/// `session.ui.elicitation` params (the schema's `UIElicitationRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ElicitationParams {
    session_id: String,
    message: String,
    requested_schema: Value,
    /// "form" (the default) or "url".
    mode: Option<String>,
}

/// Asks the session's elicitation handler; answers with its `{action, content?}`.
pub(crate) async fn elicitation(
    ctx: &Ctx<'_>,
    params: ElicitationParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if !params.requested_schema.is_object() {
        return Err(RpcError::invalid_params(format!(
            "invalid params: requestedSchema: expected an object, got {}",
            kind_of(&params.requested_schema)
        )));
    }
    if !session.bridge().elicitation_peers().any() {
        return Err(RpcError::new(
            codes::SESSION_FAILED,
            format!(
                "session {} has no client that answers elicitations (create or resume it with requestElicitation)",
                session.id()
            ),
        ));
    }
    let request_id = Uuid::new_v4().to_string();
    let Some(answer) = session.bridge().expect_elicitation(&request_id) else {
        return Err(RpcError::new(
            codes::INTERNAL_ERROR,
            format!("elicitation {request_id} is already waiting"),
        ));
    };
    session.handle().announce(&ElicitationRequested {
        request_id: request_id.clone(),
        message: params.message,
        mode: Some(params.mode.unwrap_or_else(|| "form".into())),
        requested_schema: Some(params.requested_schema),
        ..Default::default()
    });
    let response = tokio::select! {
        response = answer => response.ok(),
        // A gone caller cannot take the answer: stop waiting for it.
        _ = ctx.peer.closed() => None,
    };
    session.bridge().forget_elicitation(&request_id);
    let Some(response) = response else {
        session.handle().announce(&ElicitationCompleted {
            request_id,
            action: Some("cancel".into()),
            content: None,
        });
        return Err(RpcError::new(
            codes::SESSION_FAILED,
            "the elicitation ended without an answer (its client or the session went away)",
        ));
    };
    session.handle().announce(&ElicitationCompleted {
        request_id,
        action: response["action"].as_str().map(str::to_owned),
        content: response.get("content").filter(|c| c.is_object()).cloned(),
    });
    Ok(response)
}

/// `session.ui.handlePendingElicitation` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingElicitationParams {
    session_id: String,
    request_id: String,
    /// The schema's `UIElicitationResponse`: `{action, content?}`.
    result: Value,
}

/// Delivers a client's answer to an elicitation: `{success}` (false when it was answered
/// already).
pub(crate) fn handle_pending(
    ctx: &Ctx<'_>,
    params: PendingElicitationParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    check_response(&params.result)?;
    match session
        .bridge()
        .answer_elicitation(&params.request_id, params.result)
    {
        Ok(delivery) => Ok(json!({"success": delivery == Delivery::Taken})),
        Err(e) => Err(RpcError::invalid_params(format!("invalid params: {e}"))),
    }
}

/// An answer is `{action: accept|decline|cancel, content?: object}`.
fn check_response(response: &Value) -> Result<(), RpcError> {
    let action = response.get("action").and_then(Value::as_str);
    if !matches!(action, Some("accept" | "decline" | "cancel")) {
        return Err(RpcError::invalid_params(
            "invalid params: result.action: expected one of accept, decline, cancel",
        ));
    }
    match response.get("content") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(RpcError::invalid_params(format!(
            "invalid params: result.content: expected an object, got {}",
            kind_of(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked() {
        assert!(check_response(&json!({"action": "accept", "content": {"a": 1}})).is_ok());
        assert!(check_response(&json!({"action": "decline"})).is_ok());
        assert!(check_response(&json!({"action": "maybe"})).is_err());
        assert!(check_response(&json!({"action": "accept", "content": [1]})).is_err());
        assert!(check_response(&json!({})).is_err());
    }
}
