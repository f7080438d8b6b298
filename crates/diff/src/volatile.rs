//! The fields that differ between any two runs of the same session, and nothing else: ids,
//! timestamps, durations, and what derives from the machine rather than the agent.
//!
//! The envelope's `id`, `timestamp` and `parentId` are never compared (the chain itself is the
//! audit's business). Inside `data`, by event type: the fields below. `turnstile replay
//! --check` (`turnstile-testing`) and `turnstile diff` leave out the same ones.

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
    // so a replay cannot reproduce them. The context's token estimate counts the system
    // prompt, which names the working directory; the files changed are named by their
    // absolute paths, under the replay's own working directory (their count of lines is
    // compared).
    (
        "session.shutdown",
        &[
            "/sessionStartTime",
            "/totalApiDurationMs",
            "/eventsFileSizeBytes",
            "/modelMetrics",
            "/agentMetrics",
            "/currentTokens",
            "/systemTokens",
            "/conversationTokens",
            "/toolDefinitionsTokens",
            "/codeChanges/filesModified",
        ],
    ),
    ("user.message", &["/messageId", "/interactionId"]),
    // turnstile's mark names its version: which build ran, as `copilotVersion` did.
    (
        "system.message",
        &["/interactionId", "/metadata/promptVersion"],
    ),
    ("assistant.turn_start", &["/interactionId"]),
    // Output tokens are the model server's count, as in `session.shutdown`.
    (
        "assistant.message",
        &[
            "/messageId",
            "/originatingMessageId",
            "/interactionId",
            "/outputTokens",
        ],
    ),
    ("tool.execution_complete", &["/interactionId"]),
    // A sub-agent's time and the model server's token counts (see `session.shutdown`).
    ("subagent.completed", &["/durationMs", "/totalTokens"]),
    ("subagent.failed", &["/durationMs", "/totalTokens"]),
    ("permission.requested", &["/requestId"]),
    ("permission.completed", &["/requestId"]),
    (
        "hook.start",
        &["/hookInvocationId", "/input/timestamp", "/input/sessionId"],
    ),
    ("hook.end", &["/hookInvocationId"]),
    ("external_tool.requested", &["/requestId", "/sessionId"]),
];

/// Text inside `data` that holds the time of sending, by event type: the JSON pointer of the
/// string and the tag whose content is blanked (the prompt the model reads starts with the
/// time it was sent; the rest of the text is the agent's and is compared).
pub const VOLATILE_TEXT: &[(&str, &str, &str)] =
    &[("user.message", "/transformedContent", "current_datetime")];

/// Removes the volatile fields of an event of type `event_type` from its `data`, and blanks
/// its volatile text.
pub fn strip_volatile(event_type: &str, data: &mut Value) {
    for (_, pointer, tag) in VOLATILE_TEXT.iter().filter(|(t, _, _)| *t == event_type) {
        if let Some(Value::String(text)) = data.pointer_mut(pointer) {
            *text = blank_tag(text, tag);
        }
    }
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

/// Whether a whole event is left out of the comparison: the warning about shells a killed
/// process left running (`warningType: "shells"`) says how far each command got when the kill
/// came, which depends on timing, not on what the agent did; the command line's record of
/// the model server (`session.info` of `infoType: "model"`) says where the answers came
/// from, which a replay changes by its nature.
pub fn is_volatile_event(event_type: &str, data: &Value) -> bool {
    let kind = |key: &str| data.get(key).and_then(Value::as_str);
    (event_type == "session.warning" && kind("warningType") == Some("shells"))
        || (event_type == "session.info" && kind("infoType") == Some("model"))
}

/// `text` with the content of every `<tag>...</tag>` removed.
pub fn blank_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let inner = start + open.len();
        let Some(len) = rest[inner..].find(&close) else {
            break;
        };
        out.push_str(&rest[..inner]);
        rest = &rest[inner + len..];
    }
    out.push_str(rest);
    out
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

    #[test]
    fn the_time_of_sending_is_blanked_and_the_prompt_kept() {
        let wrapped = |time: &str, prompt: &str| {
            json!({"content": prompt, "transformedContent":
                format!("<current_datetime>{time}</current_datetime>\n\n{prompt}")})
        };
        let (mut a, mut b) = (
            wrapped("2026-12-01T14:10:25.009+00:00", "Run it."),
            wrapped("2027-01-02T03:04:05.006+00:00", "Run it."),
        );
        strip_volatile("user.message", &mut a);
        strip_volatile("user.message", &mut b);
        assert_eq!(a, b);
        assert_eq!(
            a["transformedContent"],
            "<current_datetime></current_datetime>\n\nRun it."
        );
        let mut other = wrapped("2026-12-01T14:10:25.009+00:00", "Run something else.");
        strip_volatile("user.message", &mut other);
        assert_ne!(a, other, "the prompt itself is compared");
        assert!(is_volatile_event(
            "session.warning",
            &json!({"warningType": "shells"})
        ));
        assert!(!is_volatile_event(
            "session.warning",
            &json!({"warningType": "attachment"})
        ));
        assert!(is_volatile_event(
            "session.info",
            &json!({"infoType": "model", "message": "model server: provider replay, fixture f"})
        ));
        assert!(!is_volatile_event(
            "session.info",
            &json!({"infoType": "notification", "message": "hello"})
        ));
        // A tag left open is kept as it is.
        assert_eq!(
            blank_tag("<current_datetime>x", "current_datetime"),
            "<current_datetime>x"
        );
    }
}
