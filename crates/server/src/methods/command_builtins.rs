//! The built-in slash commands this engine runs (`session.commands.list`'s `builtin` kind,
//! run by `session.commands.invoke`): `/model`, which tells the current model, and `/compact`,
//! which compacts the history as `session.history.compact` does. The Copilot CLI has some
//! thirty more (for its terminal UI); only the ones that mean something to a headless engine
//! are listed, so every listed one runs.

use serde_json::{Value, json};
use turnstile_loop::CompactOptions;

use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// The built-in commands, as `session.commands.list` lists them (the Copilot CLI's entries).
pub(crate) fn listed() -> Vec<Value> {
    vec![
        json!({
            "name": "compact",
            "description": "Summarize conversation history to reduce context window usage. Optionally provide focus instructions.",
            "kind": "builtin",
            "input": {"hint": "focus instructions", "preserveMultilineInput": true},
            "allowDuringAgentExecution": false,
            "schedulable": false,
        }),
        json!({
            "name": "model",
            "aliases": ["models"],
            "description": "Show the current model",
            "kind": "builtin",
            "allowDuringAgentExecution": false,
            "schedulable": false,
        }),
    ]
}

/// Runs the built-in `name` with `input`; `None` when there is no such built-in. The answer
/// is the schema's `SlashCommandInvocationResult`.
pub(crate) async fn invoke(
    session: &OpenSession,
    name: &str,
    input: &str,
) -> Option<Result<Value, RpcError>> {
    match name {
        "model" | "models" => Some(Ok(json!({
            "kind": "text",
            "text": format!("Current model: {}", session.info().model),
        }))),
        "compact" => Some(compact(session, input).await),
        _ => None,
    }
}

/// `/compact [focus]`: an error with the runtime's reason when nothing was compacted.
async fn compact(session: &OpenSession, focus: &str) -> Result<Value, RpcError> {
    let options = CompactOptions {
        custom_instructions: Some(focus.trim().to_owned()).filter(|t| !t.is_empty()),
        trigger: "manual".to_owned(),
        token_limit: None,
    };
    let report = session
        .handle()
        .compact(options)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    if !report.success {
        let why = report
            .error
            .unwrap_or_else(|| "Nothing to compact.".to_owned());
        return Err(RpcError::new(codes::INTERNAL_ERROR, why));
    }
    Ok(json!({
        "kind": "completed",
        "message": format!(
            "Compacted {} messages ({} tokens).",
            report.messages_removed, report.tokens_removed
        ),
    }))
}
