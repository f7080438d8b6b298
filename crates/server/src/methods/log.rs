//! `session.log`: a client's message recorded in the session's timeline, as the Copilot CLI
//! records it (`session.info`, `session.warning` or `session.error`).

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_loop::{LogEntry, LogLevel};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.log` params (the schema's `LogRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogParams {
    session_id: String,
    message: String,
    level: Option<String>,
    #[serde(rename = "type")]
    category: Option<String>,
    ephemeral: Option<bool>,
    url: Option<String>,
    tip: Option<String>,
}

/// `session.log`: records the entry after the messages sent before it; answers `{eventId}`.
pub(crate) async fn log(ctx: &Ctx<'_>, params: LogParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let level = match params.level.as_deref() {
        None => LogLevel::Info,
        Some(name) => LogLevel::parse(name).ok_or_else(|| {
            RpcError::invalid_params(format!("level {name:?} is not one of info, warning, error"))
        })?,
    };
    let mut entry = LogEntry::new(level, params.message);
    if let Some(category) = params.category.filter(|c| !c.is_empty()) {
        entry.category = category;
    }
    entry.url = params.url;
    entry.tip = params.tip;
    // Live only, as in the Copilot CLI: the subscribers see it marked ephemeral; the journal
    // and every replay never have it.
    entry.ephemeral = params.ephemeral == Some(true);
    let id = session
        .handle()
        .log(entry)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(json!({"eventId": id.to_string()}))
}
