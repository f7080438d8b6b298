//! The `permission.requested` pair the Copilot CLI records: the `permissionRequest` (what the
//! call does, with its `toolCallId` right after `kind`) and the `promptRequest` (what a UI
//! shows, with the `toolCallId` last).

use serde_json::{Map, Value};

/// `request` with `toolCallId` placed right after `kind`, as the runtime orders it.
pub fn with_tool_call_id(request: &Value, tool_call_id: &str) -> Value {
    let Some(fields) = request.as_object() else {
        return request.clone();
    };
    let mut out = Map::new();
    if let Some(kind) = fields.get("kind") {
        out.insert("kind".into(), kind.clone());
    }
    out.insert("toolCallId".into(), Value::String(tool_call_id.to_owned()));
    for (key, value) in fields {
        if key != "kind" && key != "toolCallId" {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// The prompt a UI shows for `request`: a shell command becomes the `commands` prompt (its
/// command identifiers, which a session approval remembers); every other kind is shown as it
/// is asked. `toolCallId` comes last.
pub fn prompt_request(request: &Value) -> Option<Value> {
    let fields = request.as_object()?;
    let mut out = Map::new();
    if fields.get("kind").and_then(Value::as_str) == Some("shell") {
        out.insert("kind".into(), Value::String("commands".into()));
        for key in ["fullCommandText", "intention"] {
            if let Some(v) = fields.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        let identifiers: Vec<Value> = fields
            .get("commands")
            .and_then(Value::as_array)
            .map(|commands| {
                commands
                    .iter()
                    .filter_map(|c| c.get("identifier").cloned())
                    .collect()
            })
            .unwrap_or_default();
        out.insert("commandIdentifiers".into(), Value::Array(identifiers));
        if let Some(v) = fields.get("canOfferSessionApproval") {
            out.insert("canOfferSessionApproval".into(), v.clone());
        }
    } else {
        for (key, value) in fields {
            if key != "toolCallId" {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(id) = fields.get("toolCallId") {
        out.insert("toolCallId".into(), id.clone());
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_call_id_follows_the_kind_in_the_request() {
        let asked = with_tool_call_id(
            &json!({"kind": "read", "intention": "Read", "path": "/p"}),
            "call_1",
        );
        assert_eq!(keys(&asked), ["kind", "toolCallId", "intention", "path"]);
        assert_eq!(asked["toolCallId"], "call_1");
        // A request that already names a call is renamed, not doubled.
        let again = with_tool_call_id(&asked, "call_2");
        assert_eq!(keys(&again), ["kind", "toolCallId", "intention", "path"]);
        assert_eq!(again["toolCallId"], "call_2");
    }

    #[test]
    fn a_shell_request_is_prompted_as_its_commands() {
        let request = json!({
            "kind": "shell", "toolCallId": "call_1", "fullCommandText": "ls && echo hi",
            "intention": "List", "commands": [{"identifier": "ls", "readOnly": true},
            {"identifier": "echo", "readOnly": true}], "possiblePaths": [],
            "hasWriteFileRedirection": false, "canOfferSessionApproval": true,
        });
        let prompt = prompt_request(&request).unwrap();
        assert_eq!(
            prompt,
            json!({"kind": "commands", "fullCommandText": "ls && echo hi", "intention": "List",
                "commandIdentifiers": ["ls", "echo"], "canOfferSessionApproval": true,
                "toolCallId": "call_1"})
        );
        assert_eq!(keys(&prompt).last(), Some(&"toolCallId"));
    }

    #[test]
    fn other_kinds_are_prompted_as_asked_with_the_call_id_last() {
        let request = json!({"kind": "custom-tool", "toolCallId": "call_3", "toolName": "lookup",
            "toolDescription": "Looks up", "args": {"country": "France"}});
        let prompt = prompt_request(&request).unwrap();
        assert_eq!(
            keys(&prompt),
            ["kind", "toolName", "toolDescription", "args", "toolCallId"]
        );
        assert_eq!(prompt["args"], json!({"country": "France"}));
        assert_eq!(prompt_request(&json!("not an object")), None);
    }
}
