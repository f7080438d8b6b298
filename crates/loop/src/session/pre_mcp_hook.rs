//! The `preMcpToolCall` hook: before an MCP tool's call goes to its server, the hook sees the
//! server, the tool and the arguments and chooses the request's `_meta` (`metaToUse`: an
//! object is the `_meta`, `null` removes it, absent keeps it; the engine's requests carry
//! none of their own). Recorded as `hook.start`/`hook.end` like every hook run, the chosen
//! `_meta` redacted.

use serde_json::{Map, Value, json};
use turnstile_providers::ToolCall;

use super::LoopError;
use super::actor::Actor;

/// The hook type.
pub(super) const PRE_MCP_TOOL_CALL: &str = "preMcpToolCall";

impl Actor {
    /// The `_meta` the call of tool `tool` of MCP server `server` carries.
    pub(super) async fn pre_mcp_meta(
        &self,
        call: &ToolCall,
        server: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Option<Map<String, Value>>, LoopError> {
        let input = json!({
            "toolCallId": call.id,
            "serverName": server,
            "toolName": tool,
            "arguments": args,
        });
        // As the runtime records it: no parent tool call (that is for a sub-agent's hooks).
        let out = self
            .hook_recorded(PRE_MCP_TOOL_CALL, input, None, redacted)
            .await?;
        Ok(meta_to_use(out.as_ref()))
    }
}

/// The output as `hook.end` records it: a `metaToUse` object as `{"redacted": true}`, as the
/// Copilot CLI records it (the `_meta` may carry credentials).
fn redacted(out: &Value) -> Value {
    let mut out = out.clone();
    if let Some(meta) = out.get_mut("metaToUse").filter(|m| m.is_object()) {
        *meta = json!({"redacted": true});
    }
    out
}

/// The `_meta` a hook's output chooses: its `metaToUse` when that is an object, else none.
fn meta_to_use(out: Option<&Value>) -> Option<Map<String, Value>> {
    out.and_then(|o| o.get("metaToUse"))
        .and_then(Value::as_object)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_gets_the_meta_redacted() {
        let out = json!({"metaToUse": {"token": "secret"}, "other": 1});
        assert_eq!(
            redacted(&out),
            json!({"metaToUse": {"redacted": true}, "other": 1})
        );
        let removed = json!({"metaToUse": null});
        assert_eq!(redacted(&removed), removed);
    }

    #[test]
    fn an_object_is_the_meta_and_null_or_nothing_is_none() {
        let set = json!({"metaToUse": {"injected": "by-hook"}});
        assert_eq!(meta_to_use(Some(&set)).unwrap()["injected"], "by-hook");
        assert!(meta_to_use(Some(&json!({"metaToUse": null}))).is_none());
        assert!(meta_to_use(Some(&json!({}))).is_none());
        assert!(meta_to_use(None).is_none());
        assert!(meta_to_use(Some(&json!({"metaToUse": "text"}))).is_none());
    }
}
