//! `session.agent.*`: the session's custom agents (the opening client's `customAgents`) and
//! the one selected for the turns that follow. A selection is recorded in the journal as the
//! Copilot CLI records it (`subagent.selected {agentName, agentDisplayName, tools}`, then
//! `subagent.deselected {}`), so a resume finds it again.

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::custom_agents::{DESELECTED, SELECTED};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// `session.agent.list` params (`includeBuiltInAgents` and `includePrompt` are accepted:
/// this engine has no built-in agents, and answers no prompt text).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListParams {
    session_id: String,
}

fn listed(session: &OpenSession) -> Value {
    let agents: Vec<Value> = session
        .agents()
        .available()
        .iter()
        .map(|a| a.info())
        .collect();
    json!({ "agents": agents })
}

/// `session.agent.list`: `{agents}`, in the order the client gave them.
pub(crate) fn list(ctx: &Ctx<'_>, params: ListParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    Ok(listed(&session))
}

/// `session.agent.reload`: the client's agents are all there is, so the list as it stands.
pub(crate) fn reload(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(listed(&session))
}

/// `session.agent.getCurrent`: `{agent}`, `null` for the default agent.
pub(crate) fn get_current(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let agent = session.agents().selected().map(|a| a.info());
    Ok(json!({ "agent": agent }))
}

/// `session.agent.select` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SelectParams {
    session_id: String,
    name: String,
}

async fn record(session: &OpenSession, event_type: &str, data: Value) -> Result<(), RpcError> {
    let data = serde_json::value::to_raw_value(&data)
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    session
        .handle()
        .record(event_type, data)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(())
}

/// `session.agent.select`: recorded as `subagent.selected`; `{agent}`. An unknown name is the
/// runtime's "Custom agent '<name>' not found".
pub(crate) async fn select(ctx: &Ctx<'_>, params: SelectParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let Some(agent) = session.agents().find(&params.name) else {
        return Err(RpcError::new(
            codes::INTERNAL_ERROR,
            format!("Custom agent '{}' not found", params.name),
        ));
    };
    record(&session, SELECTED, agent.selected_data()).await?;
    session.agents().select(Some(agent.name.clone()));
    Ok(json!({ "agent": agent.info() }))
}

/// `session.agent.deselect`: recorded as `subagent.deselected` (with none selected too, as in
/// the Copilot CLI); answers `{}`.
pub(crate) async fn deselect(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    record(&session, DESELECTED, json!({})).await?;
    session.agents().select(None);
    Ok(json!({}))
}
