//! Answers to requests a session is waiting on: `session.tools.handlePendingToolCall` and
//! `session.permissions.handlePendingPermissionRequest`, and the list of the permission
//! requests still open (`session.permissions.pendingRequests`).

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_tools::{ToolFailure, ToolOutput};

use super::Ctx;
use super::open_session;
use crate::client_bridge::{Delivery, ToolAnswer, UnknownRequest};
use crate::rpc::{RpcError, kind_of};
use crate::sessions::OpenSession;
use turnstile_journal::{JournalReader, ReadMode};

/// `session.tools.handlePendingToolCall` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallParams {
    session_id: String,
    request_id: String,
    /// A string, or the schema's `ExternalToolTextResultForLlm` object.
    result: Option<Value>,
    error: Option<String>,
}

/// Delivers the client's result of a tool call.
pub(crate) fn tool_call(ctx: &Ctx<'_>, params: ToolCallParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let answer = tool_answer(params.result, params.error)?;
    let delivery = match session.bridge().answer_tool(&params.request_id, answer) {
        Ok(delivery) => delivery,
        Err(e) => return over_or_unknown(ctx, &session, &params.request_id, e),
    };
    Ok(json!({"success": delivery == Delivery::Taken}))
}

/// Turns `result`/`error` into the loop's tool outcome.
fn tool_answer(result: Option<Value>, error: Option<String>) -> Result<ToolAnswer, RpcError> {
    if let Some(message) = error {
        return Ok(ToolAnswer::Threw(message));
    }
    let result = match result {
        None | Some(Value::Null) => {
            return Err(RpcError::invalid_params(
                "invalid params: one of `result` or `error` is required",
            ));
        }
        Some(result) => result,
    };
    let object = match result {
        Value::String(text) => return Ok(ToolAnswer::Result(Ok(ToolOutput::text(text)))),
        Value::Object(object) => object,
        other => {
            return Err(RpcError::invalid_params(format!(
                "invalid params: result: expected a string or an object with textResultForLlm, got {}",
                kind_of(&other)
            )));
        }
    };
    let Some(text) = object.get("textResultForLlm").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params(
            "invalid params: result.textResultForLlm: missing or not a string",
        ));
    };
    let result_type = object
        .get("resultType")
        .and_then(Value::as_str)
        .unwrap_or("success");
    if result_type == "success" {
        let mut output = ToolOutput::text(text);
        output.detailed_content = object
            .get("sessionLog")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Ok(ToolAnswer::Result(Ok(output)));
    }
    // failure, rejected, denied, timeout: the model reads the text, as the runtime sends it;
    // `error` only when the text is empty.
    let message = Some(text)
        .filter(|t| !t.is_empty())
        .or_else(|| object.get("error").and_then(Value::as_str))
        .unwrap_or_default();
    Ok(ToolAnswer::Result(Err(ToolFailure::new(
        message,
        result_type,
    ))))
}

/// `session.permissions.handlePendingPermissionRequest` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionParams {
    session_id: String,
    request_id: String,
    result: Value,
}

/// Delivers the client's decision on a permission request.
pub(crate) fn permission(ctx: &Ctx<'_>, params: PermissionParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let result = permission_result(&params.result)?;
    if result["kind"] == "approved-for-location"
        && let Some(key) = result["locationKey"].as_str()
        && let Err(e) = super::permissions::persist_location_approval(ctx, key, &result["approval"])
    {
        // The request itself is approved either way; only later sessions miss the approval.
        tracing::warn!(session = %params.session_id, error = %e, "the location approval was not persisted");
    }
    let delivery = match session
        .bridge()
        .answer_permission(&params.request_id, result)
    {
        Ok(delivery) => delivery,
        Err(e) => return over_or_unknown(ctx, &session, &params.request_id, e),
    };
    Ok(json!({"success": delivery == Delivery::Taken}))
}

/// Maps the client's `PermissionDecision` to the `PermissionResult` recorded in
/// `permission.completed` (the loop approves exactly the `approved*` kinds).
fn permission_result(decision: &Value) -> Result<Value, RpcError> {
    let kind = decision
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RpcError::invalid_params("invalid params: result.kind: missing or not a string")
        })?;
    let approval = decision
        .get("approval")
        .filter(|a| is_session_approval(a))
        .cloned();
    let string = |key: &str| decision.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(match kind {
        "approve-once" | "approve-permanently" | "approved" => json!({"kind": "approved"}),
        "approve-for-session" | "approved-for-session" => match approval {
            Some(approval) => json!({"kind": "approved-for-session", "approval": approval}),
            None => json!({"kind": "approved"}),
        },
        "approve-for-location" | "approved-for-location" => match (approval, string("locationKey"))
        {
            (Some(approval), Some(key)) => {
                json!({"kind": "approved-for-location", "approval": approval, "locationKey": key})
            }
            _ => json!({"kind": "approved"}),
        },
        "reject" | "denied-interactively-by-user" => match string("feedback") {
            Some(feedback) => json!({"kind": "denied-interactively-by-user", "feedback": feedback}),
            None => json!({"kind": "denied-interactively-by-user"}),
        },
        "user-not-available" | "denied-no-approval-rule-and-could-not-request-from-user" => {
            json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"})
        }
        "cancelled" => match string("reason") {
            Some(reason) => json!({"kind": "cancelled", "reason": reason}),
            None => json!({"kind": "cancelled"}),
        },
        "denied-by-rules" => {
            let rules = decision.get("rules").filter(|r| r.is_array()).cloned();
            json!({"kind": "denied-by-rules", "rules": rules.unwrap_or_else(|| json!([]))})
        }
        "denied-by-content-exclusion-policy" => json!({
            "kind": kind,
            "path": string("path").unwrap_or_default(),
            "message": string("message").unwrap_or_default(),
        }),
        "denied-by-permission-request-hook" => match string("message") {
            Some(message) => json!({"kind": kind, "message": message}),
            None => json!({"kind": kind}),
        },
        other => {
            return Err(RpcError::invalid_params(format!(
                "invalid params: result.kind {other:?} is not a permission decision (approve-once, approve-for-session, approve-for-location, approve-permanently, reject, user-not-available, ...)"
            )));
        }
    })
}

/// Whether `approval` has the schema's `UserToolSessionApproval` shape (a known kind).
fn is_session_approval(approval: &Value) -> bool {
    matches!(
        approval.get("kind").and_then(Value::as_str),
        Some(
            "commands"
                | "read"
                | "write"
                | "mcp"
                | "memory"
                | "custom-tool"
                | "extension-management"
                | "factory"
                | "extension-permission-access"
                | "extension-env-access"
        )
    )
}

/// The answer to a request this engine never announced: `{success: false}` when the
/// session's journal records it (an earlier engine announced it and the resume closed it as
/// interrupted, as the runtime answers for such an orphan), else `-32602`.
fn over_or_unknown(
    ctx: &Ctx<'_>,
    session: &OpenSession,
    request_id: &str,
    e: UnknownRequest,
) -> Result<Value, RpcError> {
    let events = ctx.server.config().state_root.session(session.id()).events;
    if recorded_request(&events, request_id) {
        Ok(json!({"success": false}))
    } else {
        Err(unknown(e))
    }
}

/// Whether the journal at `events` records a client tool call or a permission request with
/// this `requestId` (read line by line; a line that cannot be read is skipped).
fn recorded_request(events: &std::path::Path, request_id: &str) -> bool {
    let Ok(reader) = JournalReader::open(events, ReadMode::Lenient) else {
        return false;
    };
    reader.filter_map(Result::ok).any(|record| {
        let kind = record.event.event_type.as_str();
        (kind == "external_tool.requested" || kind == "permission.requested")
            && serde_json::from_str::<Value>(record.event.data.get())
                .is_ok_and(|data| data["requestId"] == request_id)
    })
}

fn unknown(e: UnknownRequest) -> RpcError {
    RpcError::invalid_params(format!(
        "{e} (answer only requests announced by session.event)"
    ))
}

/// `session.permissions.pendingRequests`: `{items: [{requestId, request}]}`, the permission
/// requests announced and not completed yet, in request order (`request` is the event's
/// `promptRequest`, else its `permissionRequest`), so a client attaching late can show them.
pub(crate) fn pending_permissions(
    ctx: &Ctx<'_>,
    params: super::session_id_params::SessionIdParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let items: Vec<Value> = session
        .bridge()
        .pending_prompts()
        .into_iter()
        .map(|(id, request)| json!({"requestId": id, "request": request}))
        .collect();
    Ok(json!({"items": items}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results() {
        let result = |r, e| match tool_answer(r, e).unwrap() {
            ToolAnswer::Result(result) => result,
            ToolAnswer::Threw(message) => panic!("not a result: threw {message}"),
        };
        assert_eq!(result(Some(json!("hi")), None), Ok(ToolOutput::text("hi")));
        assert_eq!(
            result(
                Some(json!({"textResultForLlm": "t", "resultType": "success"})),
                None
            ),
            Ok(ToolOutput::text("t"))
        );
        let failed = result(
            Some(json!({"textResultForLlm": "t", "resultType": "failure", "error": "bad"})),
            None,
        )
        .unwrap_err();
        assert_eq!(
            (failed.message.as_str(), failed.code.as_deref()),
            ("t", Some("failure"))
        );
        let untold = result(
            Some(json!({"textResultForLlm": "", "resultType": "failure", "error": "bad"})),
            None,
        )
        .unwrap_err();
        assert_eq!(untold.message, "bad");
        // A handler that threw: its message is kept from the model (the bridge words it).
        assert_eq!(
            tool_answer(None, Some("boom".into())).unwrap(),
            ToolAnswer::Threw("boom".into())
        );
        assert!(tool_answer(None, None).is_err());
        assert!(tool_answer(Some(json!(5)), None).is_err());
        assert!(tool_answer(Some(json!({"resultType": "success"})), None).is_err());
    }

    #[test]
    fn permission_decisions_map_to_results() {
        let map = |v: Value| permission_result(&v).unwrap();
        assert_eq!(
            map(json!({"kind": "approve-once"})),
            json!({"kind": "approved"})
        );
        assert_eq!(
            map(json!({"kind": "approve-for-session", "approval": {"kind": "write"}})),
            json!({"kind": "approved-for-session", "approval": {"kind": "write"}})
        );
        assert_eq!(
            map(json!({"kind": "reject", "feedback": "no"})),
            json!({"kind": "denied-interactively-by-user", "feedback": "no"})
        );
        assert_eq!(
            map(json!({"kind": "user-not-available"})),
            json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"})
        );
        assert!(permission_result(&json!({"kind": "maybe"})).is_err());
        assert!(permission_result(&json!({})).is_err());
    }
}
