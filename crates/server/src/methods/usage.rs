//! `session.usage.getMetrics`: the session's usage so far, the same totals its
//! `session.shutdown` will record (the journal's fold plus this process's model calls,
//! `turnstile_loop::SessionMetrics`), in the runtime's `UsageGetMetricsResult` shape.

use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.usage.getMetrics`. turnstile bills nothing, so costs and AI units are 0 (as the
/// runtime writes them for a model it does not bill); user requests are the user messages.
pub(crate) async fn get_metrics(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let metrics = session
        .handle()
        .metrics(None)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let totals = metrics.totals;
    let code = &totals.code_changes;
    let mut result = json!({
        "totalPremiumRequestCost": 0,
        "totalUserRequests": metrics.user_messages,
        "totalNanoAiu": 0,
        "totalApiDurationMs": totals.total_api_duration_ms,
        "sessionStartTime": session.info().start_time,
        "codeChanges": {
            "linesAdded": code.lines_added,
            "linesRemoved": code.lines_removed,
            "filesModifiedCount": code.files_modified.len(),
            "filesModified": code.files_modified,
        },
        "modelMetrics": totals.model_metrics,
        "lastCallInputTokens": metrics.last_call.0,
        "lastCallOutputTokens": metrics.last_call.1,
    });
    if let Some(agents) = totals.agent_metrics {
        result["agentMetrics"] = Value::Object(agents);
    }
    if let Some(model) = totals.current_model {
        result["currentModel"] = json!(model);
    }
    Ok(result)
}
