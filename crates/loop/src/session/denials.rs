//! The answers a refused tool call gets and the texts the model reads then (the runtime's
//! wording), and the deny rules that refuse a call before anyone is asked.

use serde_json::{Value, json};

use turnstile_permissions::{PermissionPolicy, Unasked};
use turnstile_tools::{PermissionAsk, PermissionKind, ToolFailure, ToolSpec};

/// `error.code` of a result the client marked `rejected`: the runtime ends the loop after the
/// turn instead of calling the model again.
pub(super) const REJECTED_CODE: &str = "rejected";

/// A call the permission decision refused (code "denied": the model reads why and goes on).
pub(super) fn denied(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message, "denied")
}

/// The runtime's answer to a permission the user rejected: with feedback the model reads it
/// and goes on (code "denied"); a bare rejection ends the message after the turn, as a client
/// tool's `rejected` result does.
pub(super) fn rejected_by_user(feedback: Option<&str>) -> ToolFailure {
    const REJECTED: &str = "The user rejected this tool call.";
    match feedback {
        Some(feedback) => denied(format!("{REJECTED} User feedback: {feedback}")),
        None => ToolFailure::new(REJECTED, REJECTED_CODE),
    }
}

/// The runtime's permission request for a client tool (`kind: "custom-tool"`).
pub(super) fn custom_tool_ask(spec: &ToolSpec, args: &Value) -> PermissionAsk {
    PermissionAsk {
        kind: PermissionKind::Other("custom-tool".into()),
        request: json!({
            "kind": "custom-tool",
            "toolName": spec.name,
            "toolDescription": spec.description,
            "args": args,
        }),
        intention: format!("Run the client tool {}", spec.name),
        subject: spec.name.clone(),
        shell: None,
    }
}

/// The text the model sees when a client's deny rules refuse a call (the runtime's wording).
pub(super) fn denied_by_live_rules(rules: &[String]) -> String {
    let rules: Vec<String> = rules.iter().map(|r| format!("`{r}`")).collect();
    format!(
        "Permission to run this tool was denied due to the following rules: {}",
        rules.join(", ")
    )
}

/// The text the model sees when deny rules refuse a call.
pub(super) fn denied_by_rules(rules: &[String]) -> String {
    format!("Permission denied by rule: {}", rules.join(", "))
}

/// The deny rules refusing a call before anyone is asked: the policy's on the permission
/// request, and for a read (asked or not) on the tool and the paths it reads, so that
/// `read(secret/**)` refuses a search of a directory above `secret` whether or not the
/// session asks for reads.
pub(super) fn denied_without_asking(
    policy: &PermissionPolicy,
    tool: &str,
    ask: Option<&PermissionAsk>,
    args: &Value,
    cwd: &std::path::Path,
) -> Vec<String> {
    match ask {
        Some(ask) if ask.kind != PermissionKind::Read => policy.denied_by(tool, ask, cwd),
        _ => {
            let paths: Vec<std::path::PathBuf> = match args.get("path") {
                Some(Value::String(p)) => vec![p.into()],
                Some(Value::Array(list)) => list
                    .iter()
                    .filter_map(Value::as_str)
                    .map(Into::into)
                    .collect(),
                _ => Vec::new(),
            };
            let mut denied = policy.denied_unasked(tool, Unasked::Builtin(&paths), cwd);
            for rule in ask
                .map(|a| policy.denied_by(tool, a, cwd))
                .unwrap_or_default()
            {
                if !denied.contains(&rule) {
                    denied.push(rule);
                }
            }
            denied
        }
    }
}
