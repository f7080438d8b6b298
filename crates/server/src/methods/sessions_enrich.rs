//! `sessions.enrichMetadata`: a client's session entries with what the server knows beside
//! them, as the Copilot CLI fills them in: the client that opened each (`clientName`, from
//! its `workspace.yaml`) and `isDetached` (turnstile detaches no session from its parent).

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::workspace;
use turnstile_journal::parse_session_id;

use super::Ctx;
use crate::rpc::RpcError;

/// The most entries one call fills in (each reads a `workspace.yaml`).
const MAX_ENRICHED: usize = 1024;

/// `sessions.enrichMetadata` params.
#[derive(Debug, Deserialize)]
pub(crate) struct EnrichParams {
    sessions: Vec<Value>,
}

/// `sessions.enrichMetadata`: `{sessions}`, each entry as given with `clientName` (when its
/// `workspace.yaml` names one) and `isDetached: false` added.
pub(crate) fn enrich(ctx: &Ctx<'_>, params: EnrichParams) -> Result<Value, RpcError> {
    if params.sessions.len() > MAX_ENRICHED {
        return Err(RpcError::invalid_params(format!(
            "sessions: at most {MAX_ENRICHED} at a time"
        )));
    }
    let root = &ctx.server.config().state_root;
    let mut out = Vec::with_capacity(params.sessions.len());
    for mut entry in params.sessions {
        let Some(fields) = entry.as_object_mut() else {
            return Err(RpcError::invalid_params(
                "sessions: each entry must be an object",
            ));
        };
        let id = fields
            .get("sessionId")
            .and_then(Value::as_str)
            .and_then(|text| parse_session_id(text).ok());
        if let Some(id) = id
            && let Ok(Some(entries)) = workspace::read_entries(&root.session(id).dir)
            && let Some((_, client)) = entries.into_iter().find(|(key, _)| key == "client_name")
        {
            fields.insert("clientName".into(), json!(client));
        }
        fields.insert("isDetached".into(), json!(false));
        out.push(entry);
    }
    Ok(json!({"sessions": out}))
}
