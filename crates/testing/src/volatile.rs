//! The fields that differ between any two runs of the same session, and nothing else: ids,
//! timestamps, durations, and what derives from the machine rather than the agent.
//!
//! The envelope's `id`, `timestamp` and `parentId` are never compared (the chain itself is the
//! audit's business). Inside `data`, by event type:

use serde_json::Value;

/// JSON pointers into `data` that are not compared, by event type.
pub const VOLATILE_FIELDS: &[(&str, &[&str])] = &[
    // The engine's version is which build ran, not what the agent did.
    (
        "session.start",
        &["/sessionId", "/startTime", "/copilotVersion"],
    ),
    // Sizes in bytes follow the length of the working directory's path.
    ("session.resume", &["/resumeTime", "/eventsFileSizeBytes"]),
    // Token counts and API time come from the model server; per-call usage is never on disk,
    // so a replay cannot reproduce them.
    (
        "session.shutdown",
        &[
            "/sessionStartTime",
            "/totalApiDurationMs",
            "/eventsFileSizeBytes",
            "/modelMetrics",
        ],
    ),
    ("user.message", &["/messageId", "/interactionId"]),
    ("system.message", &["/interactionId"]),
    ("assistant.turn_start", &["/interactionId"]),
    (
        "assistant.message",
        &["/messageId", "/originatingMessageId", "/interactionId"],
    ),
    ("tool.execution_complete", &["/interactionId"]),
    ("permission.requested", &["/requestId"]),
    ("permission.completed", &["/requestId"]),
    (
        "hook.start",
        &["/hookInvocationId", "/input/timestamp", "/input/sessionId"],
    ),
    ("hook.end", &["/hookInvocationId"]),
    ("external_tool.requested", &["/requestId", "/sessionId"]),
];

/// Removes the volatile fields of an event of type `event_type` from its `data`.
pub fn strip_volatile(event_type: &str, data: &mut Value) {
    let Some((_, pointers)) = VOLATILE_FIELDS.iter().find(|(t, _)| *t == event_type) else {
        return;
    };
    for pointer in pointers.iter() {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let parent = if parent.is_empty() {
            Some(&mut *data)
        } else {
            data.pointer_mut(parent)
        };
        if let Some(Value::Object(map)) = parent {
            map.shift_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removes_listed_fields_only() {
        let mut data = json!({"hookInvocationId": "x", "hookType": "preToolUse",
            "input": {"timestamp": 1, "sessionId": "s", "toolName": "bash", "cwd": "/w"}});
        strip_volatile("hook.start", &mut data);
        assert_eq!(
            data,
            json!({"hookType": "preToolUse", "input": {"toolName": "bash", "cwd": "/w"}})
        );
        let mut other = json!({"messageId": "kept: not a listed type"});
        strip_volatile("session.task_complete", &mut other);
        assert_eq!(other["messageId"], "kept: not a listed type");
    }
}
